"""RISC-V assembly: instructions with the registers they read and write.

The pipeline and zkvm models cost a program by its RISC-V code. This module reads
assembly (written by a user, or printed by LLVM's RISC-V back end, see
:mod:`cbuild.riscv.lowering`) into :class:`Instruction` values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cbuild.errors import CBuildError

_INT_ABI = (
    "zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1", "a0", "a1", "a2", "a3", "a4", "a5",
    "a6", "a7", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "t3", "t4", "t5", "t6",
)  # fmt: skip
_FP_ABI = (
    "ft0", "ft1", "ft2", "ft3", "ft4", "ft5", "ft6", "ft7", "fs0", "fs1", "fa0", "fa1", "fa2", "fa3", "fa4", "fa5",
    "fa6", "fa7", "fs2", "fs3", "fs4", "fs5", "fs6", "fs7", "fs8", "fs9", "fs10", "fs11", "ft8", "ft9", "ft10", "ft11",
)  # fmt: skip
#: Every register that is a resource of a pipeline (``zero`` is not: it is always ready).
REGISTERS: tuple[str, ...] = (*_INT_ABI[1:], *_FP_ABI)
_CANONICAL = {
    **{name: name for name in (*_INT_ABI, *_FP_ABI)},
    **{f"x{i}": name for i, name in enumerate(_INT_ABI)},
    **{f"f{i}": name for i, name in enumerate(_FP_ABI)},
    "fp": "s0",
}
_STORES = frozenset({"sb", "sh", "sw", "sd", "fsw", "fsd"})
_BRANCHES = frozenset(
    {"beq", "bne", "blt", "bge", "bltu", "bgeu", "beqz", "bnez", "blez", "bgez", "bltz", "bgtz", "bgt", "ble", "bgtu"}
    | {"bleu"}
)
_MEMORY = re.compile(r"^(.*)\((\w+)\)$")
_LABEL = re.compile(r"^[\w.$]+:")
_SMALL_IMMEDIATE = range(-2048, 2048)


class AssemblyError(CBuildError):
    """A line of assembly could not be read."""


@dataclass(frozen=True)
class Instruction:
    """One assembly instruction and the registers it writes and reads."""

    mnemonic: str
    dsts: tuple[str, ...]
    srcs: tuple[str, ...]
    operands: tuple[str, ...] = ()
    #: 1-based line in the text it was read from.
    line: int = 0

    @property
    def words(self) -> int:
        """Machine instructions this stands for once assembled (pseudo-instructions expand).

        ``call``/``tail`` and ``la``/``lla`` are an ``auipc`` plus one more; ``li`` of a
        constant that does not fit 12 bits is ``lui`` plus ``addi`` (two), or more for
        a 64-bit constant (counted as four).
        """
        if self.mnemonic in ("call", "tail", "la", "lla"):
            return 2
        if self.mnemonic == "li" and len(self.operands) == 2:
            try:
                value = int(self.operands[1], 0)
            except ValueError:
                return 2
            if value in _SMALL_IMMEDIATE or (value & 0xFFF == 0 and -(2**31) <= value < 2**31):
                return 1
            return 2 if -(2**31) <= value < 2**32 else 4
        return 1


def split_operands(text: str) -> list[str]:
    """Split an operand list at commas outside parentheses."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(text[start:i].strip())
            start = i + 1
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return out


def _register(operand: str) -> str | None:
    return _CANONICAL.get(operand.strip().lower())


def _registers_of(operands: list[str]) -> list[str]:
    """Register operands in order; a memory operand ``off(rs)`` contributes ``rs``."""
    regs = []
    for op in operands:
        m = _MEMORY.match(op)
        name = _register(m.group(2)) if m else _register(op)
        if name is not None:
            regs.append(name)
    return regs


def instruction(mnemonic: str, operands: list[str], *, line: int = 0) -> Instruction:
    """Decide which registers an instruction writes and reads (rules in docs/pipeline-model.md)."""
    mnemonic = mnemonic.lower()
    regs = _registers_of(operands)
    dsts: list[str]
    srcs: list[str]
    if mnemonic in _STORES or mnemonic in _BRANCHES:
        dsts, srcs = [], regs
    elif mnemonic in ("j", "tail"):
        dsts, srcs = [], []
    elif mnemonic in ("jr", "ret"):
        dsts, srcs = [], regs if mnemonic == "jr" else ["ra"]
    elif mnemonic == "call":
        dsts, srcs = ["ra"], []
    elif mnemonic in ("jal", "jalr") and len(operands) == 1:
        dsts, srcs = ["ra"], regs
    else:
        dsts, srcs = regs[:1], regs[1:]
    return Instruction(
        mnemonic,
        tuple(r for r in dsts if r != "zero"),
        tuple(r for r in srcs if r != "zero"),
        tuple(operands),
        line,
    )


def parse_line(text: str, number: int = 0) -> Instruction | None:
    """The instruction on one line, or None for labels, directives, comments and blank lines."""
    code = text.split("#", 1)[0].strip()
    while (m := _LABEL.match(code)) is not None:
        code = code[m.end() :].strip()
    if not code or code.startswith("."):
        return None
    mnemonic, _, rest = code.partition(" ")
    if "\t" in mnemonic:
        mnemonic, _, more = mnemonic.partition("\t")
        rest = f"{more} {rest}"
    return instruction(mnemonic, split_operands(rest.strip()), line=number)


#: Mnemonics whose operands are all registers (three), those with two registers and an immediate,
#: loads and stores (a register and ``offset(base)``) and branches (two registers, or one, and a
#: target): what :func:`check_operands` holds a hand-written line to.
_REGISTER_OPS = frozenset((
    "add", "sub", "and", "or", "xor", "sll", "srl", "sra", "slt", "sltu", "mul", "mulh", "mulhsu", "mulhu",
    "div", "divu", "rem", "remu", "addw", "subw", "sllw", "srlw", "sraw", "mulw", "divw", "divuw", "remw", "remuw",
))  # fmt: skip
_IMMEDIATE_OPS = frozenset((
    "addi", "andi", "ori", "xori", "slli", "srli", "srai", "slti", "sltiu", "addiw", "slliw", "srliw", "sraiw",
))  # fmt: skip
_LOADS = frozenset(("lb", "lh", "lw", "ld", "lbu", "lhu", "lwu", "flw", "fld"))
_TWO_REGISTER_BRANCHES = frozenset(("beq", "bne", "blt", "bge", "bltu", "bgeu", "bgt", "ble", "bgtu", "bleu"))
_ONE_REGISTER_BRANCHES = frozenset(("beqz", "bnez", "blez", "bgez", "bltz", "bgtz"))
#: What reads as a register number but may not be one (``x32``, ``f40``).
_NUMBERED = re.compile(r"^[xf]\d+$")


def _kind(operand: str) -> str:
    """``register``, ``memory`` (``offset(register)``) or ``other`` (an immediate or a label)."""
    if _register(operand) is not None:
        return "register"
    inner = _MEMORY.match(operand)
    return "memory" if inner is not None and _register(inner.group(2)) is not None else "other"


def check_operands(instr: Instruction) -> None:
    """Raise :class:`AssemblyError` where a hand-written line would be timed on other registers
    than it names: operands not separated by commas, a register number out of range, or an
    instruction of a common format with the wrong number or kind of operands. (LLVM's own
    assembly, which :mod:`cbuild.riscv.lowering` reads, needs no such check.)"""
    where = f"line {instr.line}: {instr.mnemonic} {', '.join(instr.operands)}".rstrip()
    for operand in instr.operands:
        inner = _MEMORY.match(operand)
        if len((inner.group(1) if inner else operand).split()) > 1:
            raise AssemblyError(f"{where}: operands are separated by commas ({operand!r})")
        token = inner.group(2) if inner else operand
        if _NUMBERED.match(token.lower()) and _register(token) is None:
            raise AssemblyError(f"{where}: {token} is not a register")
    expected = {
        **dict.fromkeys(_REGISTER_OPS, ("register",) * 3),
        **dict.fromkeys(_IMMEDIATE_OPS, ("register", "register", "other")),
        **dict.fromkeys(_LOADS | _STORES, ("register", "memory")),
        **dict.fromkeys(_TWO_REGISTER_BRANCHES, ("register", "register", "other")),
        **dict.fromkeys(_ONE_REGISTER_BRANCHES, ("register", "other")),
    }.get(instr.mnemonic)
    if expected is not None and tuple(map(_kind, instr.operands)) != expected:
        names = {"register": "a register", "memory": "offset(register)", "other": "an immediate or label"}
        raise AssemblyError(f"{where}: {instr.mnemonic} takes {', '.join(names[k] for k in expected)}")


def parse_assembly(text: str) -> list[Instruction]:
    """All instructions of an assembly text, in order."""
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        instr = parse_line(line, number)
        if instr is not None:
            out.append(instr)
    return out
