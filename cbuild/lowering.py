"""RISC-V code for each IR block of a program, for models that cost machine instructions.

The program's linked module (the same IR whose blocks the host build counts) is
given fresh debug locations: every instruction of block N is placed on line N + 1
of an imaginary file. LLVM's RISC-V back end compiles the module at the build's
optimisation level, and the ``.loc`` directives of its assembly attribute every
machine instruction to the IR block it came from, wherever the scheduler moved
it. Debug locations never change the generated code, so the code attributed is
the code a plain build would run. A function's prologue is placed on the line of
its entry block; instructions without a location belong to the block before them.

Limits (docs/cost-models.md): instructions of a block the back end duplicated
count once per copy; a ``select`` that RV32IM lowers to a short branch counts
both of its arms; inline assembly written for the host costs nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from llvmlite import binding as llvm

from cbuild.blocks import ATTRIBUTE_GROUP, defined_name, parse_module
from cbuild.codegen import initialise
from cbuild.errors import CBuildError
from cbuild.riscv import Instruction, parse_line

#: Target triple, CPU and features of each RISC-V flavour the models use.
TARGETS = {
    "riscv32": ("riscv32-unknown-elf", "generic-rv32", "+m"),
    "riscv64": ("riscv64-unknown-elf", "generic-rv64", "+m"),
}
#: Where code is placed in the modelled address space (a typical RISC-V ELF text start).
TEXT_BASE = 0x10000
_LOC = re.compile(r"^\s*\.loc\s+\d+\s+(\d+)")
_FUNCTION = re.compile(r"^\s*\.type\s+(\S+),\s*@function")
_DBG = re.compile(r",? !(?:dbg|llvm\.loop) !\d+")
_METADATA_ID = re.compile(r"^!(\d+) = ")
_HOST_ATTRIBUTES = re.compile(r'\s*"(?:target-cpu|target-features|tune-cpu)"="[^"]*"')
_INLINE_ASM = re.compile(r"^  (?:(%[-\w.$\"]+) = )?(?:tail |notail )?call (.*?)\basm\b")
_CALL_ATTRS = re.compile(r"^(?:(?:noundef|zeroext|signext|inreg|noalias|nonnull|range\([^)]*\)|\w+cc)\s+)*")


class LoweringError(CBuildError):
    """The program's IR cannot be compiled for the modelled RISC-V machine."""


@dataclass(frozen=True)
class LoweredBlock:
    """The machine code of one IR block."""

    instructions: tuple[Instruction, ...]
    #: Address of the block's first instruction in the modelled text segment.
    address: int = 0

    @property
    def words(self) -> int:
        """Machine instructions once assembled (pseudo-instructions expanded)."""
        return sum(i.words for i in self.instructions)


def _retarget(lines: list[str], target: str, datalayout: str) -> list[str]:
    """Make host IR compilable for RISC-V: triple, data layout, host-only attributes, inline asm."""
    triple = TARGETS[target][0]
    out = []
    function = ""
    for line in lines:
        if line.startswith("target triple"):
            line = f'target triple = "{triple}"'
        elif line.startswith("target datalayout"):
            line = f'target datalayout = "{datalayout}"'
        elif line.startswith("define "):
            function = line
        elif ATTRIBUTE_GROUP.match(line):
            line = _HOST_ATTRIBUTES.sub("", line)
        elif "callbr " in line and " asm " in line:
            raise LoweringError(f"asm goto cannot be compiled for {target}; in: {function[:160]}")
        elif "@llvm.x86." in line:
            raise LoweringError(f"x86 intrinsics cannot be compiled for {target}; in: {function[:160]}")
        else:
            m = _INLINE_ASM.match(line)
            if m is not None:
                # Host inline assembly has no RISC-V meaning: it costs nothing on the model.
                result, rest = m.group(1), _CALL_ATTRS.sub("", m.group(2)).strip()
                if result is None:
                    continue
                line = f"  {result} = freeze {rest} poison"
        out.append(line)
    return out


def located_ir(text: str) -> str:
    """The module with every instruction of block N on line N + 1 (debug locations replaced)."""
    parsed = parse_module(text)
    lines = parsed.lines
    base = 1 + max((int(m.group(1)) for line in lines if (m := _METADATA_ID.match(line))), default=0)
    cu, file, subroutine = base, base + 1, base + 2
    next_id = base + 3
    nodes = [
        f'!{cu} = distinct !DICompileUnit(language: DW_LANG_C11, file: !{file}, producer: "instrbudget", '
        "isOptimized: true, runtimeVersion: 0, emissionKind: LineTablesOnly)",
        f'!{file} = !DIFile(filename: "blocks", directory: "/")',
        f"!{subroutine} = !DISubroutineType(types: !{{}})",
    ]
    line_block: dict[int, int] = {}
    subprogram: dict[str, int] = {}
    for number, block in enumerate(parsed.blocks):
        if block.function not in subprogram:
            subprogram[block.function] = next_id
            nodes.append(
                f'!{next_id} = distinct !DISubprogram(name: "f{next_id}", scope: !{file}, file: !{file}, '
                f"line: {number + 1}, type: !{subroutine}, scopeLine: {number + 1}, "
                f"spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !{cu})"
            )
            next_id += 1
        nodes.append(f"!{next_id} = !DILocation(line: {number + 1}, scope: !{subprogram[block.function]})")
        for index in range(block.first_line, block.term_end):
            line_block[index] = next_id
        next_id += 1
    out = []
    cu_listed = False
    for index, line in enumerate(lines):
        if line.startswith("    #dbg_"):
            continue  # debug records refer to the locations being replaced
        if line.startswith("define "):
            name = defined_name(line)
            line = _DBG.sub("", line)
            if name in subprogram:
                line = f"{line[: line.rfind('{')].rstrip()} !dbg !{subprogram[name]} {{"
        elif index in line_block and line.startswith("  ") and not line.startswith("   "):
            # Loop metadata holds locations in the old scopes: it goes too (code generation ignores it).
            line = f"{_DBG.sub('', line)}, !dbg !{line_block[index]}"
        elif line.startswith("!llvm.dbg.cu = !{"):
            line = f"{line[:-1]}, !{cu}}}" if line != "!llvm.dbg.cu = !{}" else f"!llvm.dbg.cu = !{{!{cu}}}"
            cu_listed = True
        elif line.startswith("module asm "):
            continue  # host assembly
        out.append(line)
    if not cu_listed:
        out.append(f"!llvm.dbg.cu = !{{!{cu}}}")
    if '!"Debug Info Version"' not in text:
        flag = next_id
        nodes.append(f'!{flag} = !{{i32 2, !"Debug Info Version", i32 3}}')
        flags = [i for i, line in enumerate(out) if line.startswith("!llvm.module.flags = !{")]
        if flags:
            line = out[flags[0]]
            out[flags[0]] = f"{line[:-1]}, !{flag}}}" if line.endswith("!{}") is False else f"{line[:-2]}!{flag}}}"
        else:
            out.append(f"!llvm.module.flags = !{{!{flag}}}")
    return "\n".join([*out, *nodes, ""])


def compile_riscv(text: str, *, target: str, opt_level: int) -> str:
    """RISC-V assembly of IR text (markers included)."""
    if target not in TARGETS:
        raise LoweringError(f"unknown RISC-V target {target!r}; expected one of {', '.join(TARGETS)}")
    if "x86_fp80" in text:
        raise LoweringError(f"long double (x86_fp80) has no {target} equivalent; the program cannot be modelled")
    initialise()
    triple, cpu, features = TARGETS[target]
    tm = llvm.Target.from_triple(triple).create_target_machine(
        cpu=cpu, features=features, opt=opt_level, reloc="static", codemodel="small"
    )
    lines = _retarget(text.split("\n"), target, str(tm.target_data))
    try:
        module = llvm.parse_assembly("\n".join(lines))
        module.verify()
    except RuntimeError as exc:
        raise LoweringError(f"LLVM rejected the program's IR for {target}: {exc}") from exc
    return str(tm.emit_assembly(module))


def attribute(assembly: str, nblocks: int) -> list[LoweredBlock]:
    """Split assembly by its line directives: the machine code of each of ``nblocks`` IR blocks.

    Instructions at line 0 (no location: hoisted constants, shrink-wrapped prologues,
    register copies) belong to the next located instruction's block in the same
    function, or to the last block before them at the end of a function.
    """
    code: list[list[Instruction]] = [[] for _ in range(nblocks)]
    address = [-1] * nblocks
    pc = TEXT_BASE
    current = -1  # block of the last located instruction; -1 before a line directive
    unlocated: list[tuple[Instruction, int]] = []

    def place(block: int, instr: Instruction, at: int) -> None:
        code[block].append(instr)
        if address[block] < 0 or at < address[block]:
            address[block] = at

    def flush(block: int) -> None:
        for instr, at in unlocated:
            place(block, instr, at)
        unlocated.clear()

    for number, line in enumerate(assembly.splitlines(), start=1):
        m = _LOC.match(line)
        if m is not None:
            located = int(m.group(1))
            if located > nblocks:
                raise LoweringError(f"assembly line {number} names block {located - 1}, the program has {nblocks}")
            current = located - 1
            if current >= 0:
                flush(current)
            continue
        if _FUNCTION.match(line) or line.startswith(".Lfunc_end"):
            if unlocated:
                if current < 0:
                    raise LoweringError(f"assembly before line {number} has no block location")
                flush(current)
            current = -1
            continue
        instr = parse_line(line, number)
        if instr is None:
            continue
        if current < 0:
            unlocated.append((instr, pc))
        else:
            place(current, instr, pc)
        pc += 4 * instr.words
    if unlocated:
        if current < 0:
            raise LoweringError("assembly ends with instructions that have no block location")
        flush(current)
    return [LoweredBlock(tuple(c), max(a, 0)) for c, a in zip(code, address, strict=True)]


def lower_blocks(text: str, *, target: str, opt_level: int) -> list[LoweredBlock]:
    """The RISC-V code of every block of ``text`` (linked module IR), in block-table order."""
    nblocks = len(parse_module(text).blocks)
    assembly = compile_riscv(located_ir(text), target=target, opt_level=opt_level)
    return attribute(assembly, nblocks)


def total_words(blocks: Sequence[LoweredBlock]) -> int:
    """Machine instructions in all blocks (for reports and tests)."""
    return sum(b.words for b in blocks)
