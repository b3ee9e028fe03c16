"""Decode RISC-V machine code (RV32/RV64 IMAFD, 32-bit words, no C) into :class:`~cbuild.riscv.isa.Instruction`.

Each word becomes the :class:`Instruction` that :func:`cbuild.riscv.isa.parse_line` reads from LLVM's
*no-alias* disassembly of it (``llvm-objdump -d -M no-aliases``, LLVM 14 spelling): ``addi a0, a1, 0``
rather than ``mv``, ``jalr zero, 0(ra)`` rather than ``ret``, rounding modes always printed
(``fadd.s fa0, fa0, fa1, dyn``), CSRs by LLVM's names or else in decimal, and branch and ``jal``
targets as absolute hex addresses (``beq a0, a1, 0x10abc``) computed from the word's address.

Covered: RV32I/RV64I with Zicsr and Zifencei, ``fence.tso``, the privileged ``uret``/``sret``/``mret``/
``dret``/``wfi``/``sfence.vma``, M, A (``lr``/``sc``/``amo*`` with ``.aq``/``.rl``/``.aqrl``), F and D.

A word LLVM would print as ``<unknown>`` (an undefined or reserved encoding, an RV64-only instruction
on RV32, a compressed half-word) raises :class:`DecodeError`: such a word is data or a toolchain
mismatch, and costing it as an instruction would hide the problem; callers who want to carry on
catch the error. One difference from LLVM 14, on purpose: RV32 ``slli``/``srli``/``srai`` with
shamt[5] set are reserved encodings (Spike traps on them) and raise, where LLVM 14 prints them.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from functools import lru_cache
from typing import NamedTuple

from cbuild.errors import CBuildError
from cbuild.riscv.isa import REGISTERS, Instruction, instruction

__all__ = ["DecodeError", "decode", "decode_block", "is_control_transfer", "memory_accesses"]

_X: tuple[str, ...] = ("zero", *REGISTERS[:31])
_F: tuple[str, ...] = REGISTERS[31:]
_RM = ("rne", "rtz", "rdn", "rup", "rmm", "", "", "dyn")  # "" : reserved, not an instruction


class DecodeError(CBuildError):
    """A word is not an instruction this decoder (and LLVM 14 with +m,+a,+f,+d) knows."""

    def __init__(self, word: int | None, address: int | None, reason: str = "unknown or illegal instruction") -> None:
        self.word = word
        self.address = address
        what = "code" if word is None else f"word 0x{word:08x}"
        where = "" if address is None else f" at 0x{address:x}"
        super().__init__(f"cannot decode {what}{where}: {reason}")


# --------------------------------------------------------------------------------------------------------------
# Control and status registers, as LLVM 14 names them ("*": RV32 only; RV64 prints the number).
# --------------------------------------------------------------------------------------------------------------

_CSR_SPEC = """
0:ustatus 1:fflags 2:frm 3:fcsr 4:uie 5:utvec 8:vstart 9:vxsat a:vxrm f:vcsr 15:seed 40:uscratch 41:uepc
42:ucause 43:utval 44:uip 100:sstatus 102:sedeleg 103:sideleg 104:sie 105:stvec 106:scounteren 10a:senvcfg
10c:sstateen0 10d:sstateen1 10e:sstateen2 10f:sstateen3 140:sscratch 141:sepc 142:scause 143:stval 144:sip
14d:stimecmp 15d:stimecmph* 180:satp 200:vsstatus 204:vsie 205:vstvec 240:vsscratch 241:vsepc 242:vscause
243:vstval 244:vsip 24d:vstimecmp 25d:vstimecmph* 280:vsatp 300:mstatus 301:misa 302:medeleg 303:mideleg
304:mie 305:mtvec 306:mcounteren 30a:menvcfg 30c:mstateen0 30d:mstateen1 30e:mstateen2 30f:mstateen3
310:mstatush* 31a:menvcfgh* 31c:mstateen0h* 31d:mstateen1h* 31e:mstateen2h* 31f:mstateen3h* 320:mcountinhibit
340:mscratch 341:mepc 342:mcause 343:mtval 344:mip 34a:mtinst 34b:mtval2 5a8:scontext 600:hstatus 602:hedeleg
603:hideleg 604:hie 605:htimedelta 606:hcounteren 607:hgeie 60a:henvcfg 60c:hstateen0 60d:hstateen1
60e:hstateen2 60f:hstateen3 615:htimedeltah* 61a:henvcfgh* 61c:hstateen0h* 61d:hstateen1h* 61e:hstateen2h*
61f:hstateen3h* 643:htval 644:hip 645:hvip 64a:htinst 680:hgatp 6a8:hcontext 747:mseccfg 757:mseccfgh*
7a0:tselect 7a1:tdata1 7a2:tdata2 7a3:tdata3 7a8:mcontext 7b0:dcsr 7b1:dpc 7b2:dscratch0 7b3:dscratch1
b00:mcycle b02:minstret b80:mcycleh* b82:minstreth* c00:cycle c01:time c02:instret c20:vl c21:vtype c22:vlenb
c80:cycleh* c81:timeh* c82:instreth* da0:scountovf e12:hgeip f11:mvendorid f12:marchid f13:mimpid f14:mhartid
f15:mconfigptr
"""


def _csr_names(xlen: int) -> dict[int, str]:
    names: dict[int, str] = {}
    for item in _CSR_SPEC.split():
        number, name = item.split(":")
        if not name.endswith("*"):
            names[int(number, 16)] = name
        elif xlen == 32:
            names[int(number, 16)] = name[:-1]
    for base, stem, rv32_only in (
        (0x323, "mhpmevent{}", False),
        (0x723, "mhpmevent{}h", True),
        (0xB03, "mhpmcounter{}", False),
        (0xB83, "mhpmcounter{}h", True),
        (0xC03, "hpmcounter{}", False),
        (0xC83, "hpmcounter{}h", True),
    ):
        if xlen == 32 or not rv32_only:
            names.update({base + i - 3: stem.format(i) for i in range(3, 32)})
    names.update({0x3A0 + i: f"pmpcfg{i}" for i in range(16) if xlen == 32 or i % 2 == 0})
    names.update({0x3B0 + i: f"pmpaddr{i}" for i in range(64)})
    return names


_CSRS = {xlen: _csr_names(xlen) for xlen in (32, 64)}

# --------------------------------------------------------------------------------------------------------------
# Operand forms: each renders a word's operands as LLVM prints them (None: a reserved field value).
# --------------------------------------------------------------------------------------------------------------

_Form = Callable[[int, int, int], "list[str] | None"]


def _imm_i(w: int) -> int:
    return (w >> 20) - ((w >> 19) & 0x1000)


def _imm_s(w: int) -> int:
    return _imm_i((w & 0xFE000000) | ((w & 0xF80) << 13))


def _rd(w: int) -> int:
    return (w >> 7) & 31


def _rs1(w: int) -> int:
    return (w >> 15) & 31


def _rs2(w: int) -> int:
    return (w >> 20) & 31


def _target(offset: int, pc: int, xlen: int) -> str:
    return hex((pc + offset) & ((1 << xlen) - 1))


def branch_offset(w: int) -> int:
    """A conditional branch's target, from its own address."""
    offset = ((w >> 19) & 0x1000) | ((w << 4) & 0x800) | ((w >> 20) & 0x7E0) | ((w >> 7) & 0x1E)
    return offset - ((offset & 0x1000) << 1)


def jal_offset(w: int) -> int:
    """``jal``'s target, from its own address."""
    offset = ((w >> 11) & 0x100000) | (w & 0xFF000) | ((w >> 9) & 0x800) | ((w >> 20) & 0x7FE)
    return offset - ((offset & 0x100000) << 1)


def _branch(w: int, pc: int, xlen: int) -> list[str]:
    return [_X[_rs1(w)], _X[_rs2(w)], _target(branch_offset(w), pc, xlen)]


def _jal(w: int, pc: int, xlen: int) -> list[str]:
    return [_X[_rd(w)], _target(jal_offset(w), pc, xlen)]


_FENCE_SETS = tuple("".join(c for i, c in enumerate("iorw") if bits & 8 >> i) or "unknown" for bits in range(16))


def _with_rm(operands: list[str], w: int) -> list[str] | None:
    rm = _RM[(w >> 12) & 7]
    return [*operands, rm] if rm else None


_FORMS: dict[str, _Form] = {
    "": lambda w, pc, xlen: [],
    "rrr": lambda w, pc, xlen: [_X[_rd(w)], _X[_rs1(w)], _X[_rs2(w)]],
    "rri": lambda w, pc, xlen: [_X[_rd(w)], _X[_rs1(w)], str(_imm_i(w))],
    "shift": lambda w, pc, xlen: [_X[_rd(w)], _X[_rs1(w)], str((w >> 20) & 63)],
    "load": lambda w, pc, xlen: [_X[_rd(w)], f"{_imm_i(w)}({_X[_rs1(w)]})"],
    "store": lambda w, pc, xlen: [_X[_rs2(w)], f"{_imm_s(w)}({_X[_rs1(w)]})"],
    "upper": lambda w, pc, xlen: [_X[_rd(w)], str(w >> 12)],
    "branch": _branch,
    "jal": _jal,
    "fence": lambda w, pc, xlen: [_FENCE_SETS[(w >> 24) & 15], _FENCE_SETS[(w >> 20) & 15]],
    "csr": lambda w, pc, xlen: [_X[_rd(w)], _CSRS[xlen].get(w >> 20, str(w >> 20)), _X[_rs1(w)]],
    "csri": lambda w, pc, xlen: [_X[_rd(w)], _CSRS[xlen].get(w >> 20, str(w >> 20)), str(_rs1(w))],
    "rr": lambda w, pc, xlen: [_X[_rs1(w)], _X[_rs2(w)]],
    "lr": lambda w, pc, xlen: [_X[_rd(w)], f"({_X[_rs1(w)]})"],
    "amo": lambda w, pc, xlen: [_X[_rd(w)], _X[_rs2(w)], f"({_X[_rs1(w)]})"],
    "fload": lambda w, pc, xlen: [_F[_rd(w)], f"{_imm_i(w)}({_X[_rs1(w)]})"],
    "fstore": lambda w, pc, xlen: [_F[_rs2(w)], f"{_imm_s(w)}({_X[_rs1(w)]})"],
    "fff": lambda w, pc, xlen: [_F[_rd(w)], _F[_rs1(w)], _F[_rs2(w)]],
    "fffR": lambda w, pc, xlen: _with_rm([_F[_rd(w)], _F[_rs1(w)], _F[_rs2(w)]], w),
    "ffffR": lambda w, pc, xlen: _with_rm([_F[_rd(w)], _F[_rs1(w)], _F[_rs2(w)], _F[w >> 27]], w),
    "ff": lambda w, pc, xlen: [_F[_rd(w)], _F[_rs1(w)]],
    "ffR": lambda w, pc, xlen: _with_rm([_F[_rd(w)], _F[_rs1(w)]], w),
    "xf": lambda w, pc, xlen: [_X[_rd(w)], _F[_rs1(w)]],
    "xfR": lambda w, pc, xlen: _with_rm([_X[_rd(w)], _F[_rs1(w)]], w),
    "xff": lambda w, pc, xlen: [_X[_rd(w)], _F[_rs1(w)], _F[_rs2(w)]],
    "fx": lambda w, pc, xlen: [_F[_rd(w)], _X[_rs1(w)]],
    "fxR": lambda w, pc, xlen: _with_rm([_F[_rd(w)], _X[_rs1(w)]], w),
}

# --------------------------------------------------------------------------------------------------------------
# The encoding table.
# --------------------------------------------------------------------------------------------------------------

# One line per instruction: mnemonic, operand form, fixed fields (hex), and "rv32"/"rv64" if only there.
# "{s}" expands to the .s (fmt=0) and .d (fmt=1) instructions, "{o}" to the four aq/rl orderings.
_SPEC = """
lui upper op=37
auipc upper op=17
jal jal op=6f
jalr load op=67 f3=0
beq branch op=63 f3=0
bne branch op=63 f3=1
blt branch op=63 f3=4
bge branch op=63 f3=5
bltu branch op=63 f3=6
bgeu branch op=63 f3=7
lb load op=03 f3=0
lh load op=03 f3=1
lw load op=03 f3=2
ld load op=03 f3=3 rv64
lbu load op=03 f3=4
lhu load op=03 f3=5
lwu load op=03 f3=6 rv64
sb store op=23 f3=0
sh store op=23 f3=1
sw store op=23 f3=2
sd store op=23 f3=3 rv64
addi rri op=13 f3=0
slti rri op=13 f3=2
sltiu rri op=13 f3=3
xori rri op=13 f3=4
ori rri op=13 f3=6
andi rri op=13 f3=7
slli shift op=13 f3=1 f7=00 rv32
srli shift op=13 f3=5 f7=00 rv32
srai shift op=13 f3=5 f7=20 rv32
slli shift op=13 f3=1 f6=00 rv64
srli shift op=13 f3=5 f6=00 rv64
srai shift op=13 f3=5 f6=10 rv64
add rrr op=33 f3=0 f7=00
sub rrr op=33 f3=0 f7=20
sll rrr op=33 f3=1 f7=00
slt rrr op=33 f3=2 f7=00
sltu rrr op=33 f3=3 f7=00
xor rrr op=33 f3=4 f7=00
srl rrr op=33 f3=5 f7=00
sra rrr op=33 f3=5 f7=20
or rrr op=33 f3=6 f7=00
and rrr op=33 f3=7 f7=00
addiw rri op=1b f3=0 rv64
slliw shift op=1b f3=1 f7=00 rv64
srliw shift op=1b f3=5 f7=00 rv64
sraiw shift op=1b f3=5 f7=20 rv64
addw rrr op=3b f3=0 f7=00 rv64
subw rrr op=3b f3=0 f7=20 rv64
sllw rrr op=3b f3=1 f7=00 rv64
srlw rrr op=3b f3=5 f7=00 rv64
sraw rrr op=3b f3=5 f7=20 rv64
fence fence op=0f f3=0 rd=0 rs1=0 fm=0
fence.tso - word=8330000f
fence.i - word=0000100f
ecall - word=00000073
ebreak - word=00100073
uret - word=00200073
sret - word=10200073
mret - word=30200073
dret - word=7b200073
wfi - word=10500073
unimp - word=c0001073
sfence.vma rr op=73 f3=0 rd=0 f7=09
csrrw csr op=73 f3=1
csrrs csr op=73 f3=2
csrrc csr op=73 f3=3
csrrwi csri op=73 f3=5
csrrsi csri op=73 f3=6
csrrci csri op=73 f3=7
mul rrr op=33 f3=0 f7=01
mulh rrr op=33 f3=1 f7=01
mulhsu rrr op=33 f3=2 f7=01
mulhu rrr op=33 f3=3 f7=01
div rrr op=33 f3=4 f7=01
divu rrr op=33 f3=5 f7=01
rem rrr op=33 f3=6 f7=01
remu rrr op=33 f3=7 f7=01
mulw rrr op=3b f3=0 f7=01 rv64
divw rrr op=3b f3=4 f7=01 rv64
divuw rrr op=3b f3=5 f7=01 rv64
remw rrr op=3b f3=6 f7=01 rv64
remuw rrr op=3b f3=7 f7=01 rv64
lr.w{o} lr op=2f f3=2 f5=02 rs2=0
sc.w{o} amo op=2f f3=2 f5=03
amoswap.w{o} amo op=2f f3=2 f5=01
amoadd.w{o} amo op=2f f3=2 f5=00
amoxor.w{o} amo op=2f f3=2 f5=04
amoand.w{o} amo op=2f f3=2 f5=0c
amoor.w{o} amo op=2f f3=2 f5=08
amomin.w{o} amo op=2f f3=2 f5=10
amomax.w{o} amo op=2f f3=2 f5=14
amominu.w{o} amo op=2f f3=2 f5=18
amomaxu.w{o} amo op=2f f3=2 f5=1c
lr.d{o} lr op=2f f3=3 f5=02 rs2=0 rv64
sc.d{o} amo op=2f f3=3 f5=03 rv64
amoswap.d{o} amo op=2f f3=3 f5=01 rv64
amoadd.d{o} amo op=2f f3=3 f5=00 rv64
amoxor.d{o} amo op=2f f3=3 f5=04 rv64
amoand.d{o} amo op=2f f3=3 f5=0c rv64
amoor.d{o} amo op=2f f3=3 f5=08 rv64
amomin.d{o} amo op=2f f3=3 f5=10 rv64
amomax.d{o} amo op=2f f3=3 f5=14 rv64
amominu.d{o} amo op=2f f3=3 f5=18 rv64
amomaxu.d{o} amo op=2f f3=3 f5=1c rv64
flw fload op=07 f3=2
fld fload op=07 f3=3
fsw fstore op=27 f3=2
fsd fstore op=27 f3=3
fmadd.{s} ffffR op=43
fmsub.{s} ffffR op=47
fnmsub.{s} ffffR op=4b
fnmadd.{s} ffffR op=4f
fadd.{s} fffR op=53 f5=00
fsub.{s} fffR op=53 f5=01
fmul.{s} fffR op=53 f5=02
fdiv.{s} fffR op=53 f5=03
fsqrt.{s} ffR op=53 f5=0b rs2=0
fsgnj.{s} fff op=53 f5=04 f3=0
fsgnjn.{s} fff op=53 f5=04 f3=1
fsgnjx.{s} fff op=53 f5=04 f3=2
fmin.{s} fff op=53 f5=05 f3=0
fmax.{s} fff op=53 f5=05 f3=1
fle.{s} xff op=53 f5=14 f3=0
flt.{s} xff op=53 f5=14 f3=1
feq.{s} xff op=53 f5=14 f3=2
fclass.{s} xf op=53 f5=1c f3=1 rs2=0
fcvt.w.{s} xfR op=53 f5=18 rs2=0
fcvt.wu.{s} xfR op=53 f5=18 rs2=1
fcvt.l.{s} xfR op=53 f5=18 rs2=2 rv64
fcvt.lu.{s} xfR op=53 f5=18 rs2=3 rv64
fcvt.s.w fxR op=53 f7=68 rs2=0
fcvt.s.wu fxR op=53 f7=68 rs2=1
fcvt.s.l fxR op=53 f7=68 rs2=2 rv64
fcvt.s.lu fxR op=53 f7=68 rs2=3 rv64
fcvt.d.w fx op=53 f7=69 rs2=0 f3=0
fcvt.d.wu fx op=53 f7=69 rs2=1 f3=0
fcvt.d.l fxR op=53 f7=69 rs2=2 rv64
fcvt.d.lu fxR op=53 f7=69 rs2=3 rv64
fcvt.s.d ffR op=53 f7=20 rs2=1
fcvt.d.s ff op=53 f7=21 rs2=0 f3=0
fmv.x.w xf op=53 f7=70 rs2=0 f3=0
fmv.w.x fx op=53 f7=78 rs2=0 f3=0
fmv.x.d xf op=53 f7=71 rs2=0 f3=0 rv64
fmv.d.x fx op=53 f7=79 rs2=0 f3=0 rv64
"""
_FIELDS = {"op": (0, 7), "rd": (7, 5), "f3": (12, 3), "rs1": (15, 5), "rs2": (20, 5), "fmt": (25, 2)}
_FIELDS |= {"f7": (25, 7), "f6": (26, 6), "f5": (27, 5), "fm": (28, 4), "word": (0, 32)}
_ORDERINGS = ("", ".rl", ".aq", ".aqrl")  # by the aq (bit 26) and rl (bit 25) bits


class _Entry(NamedTuple):
    mnemonic: str
    form: str
    mask: int
    match: int
    xlens: tuple[int, ...]
    accesses: int  # data memory accesses
    control: bool  # ends a basic block


def _entry(mnemonic: str, form: str, xlens: tuple[int, ...], fields: dict[str, int]) -> _Entry:
    mask = match = 0
    for name, value in fields.items():
        shift, width = _FIELDS[name]
        mask |= ((1 << width) - 1) << shift
        match |= value << shift
    opcode = match & 0x7F
    accesses = 1 if opcode in (0x03, 0x07, 0x23, 0x27) else 0
    if opcode == 0x2F:
        accesses = 1 if mnemonic.startswith(("lr.", "sc.")) else 2
    return _Entry(mnemonic, "" if form == "-" else form, mask, match, xlens, accesses, opcode in (0x63, 0x67, 0x6F))


def _table() -> list[_Entry]:
    """The entries of :data:`_SPEC`, expanded."""
    entries = []
    for line in _SPEC.strip().splitlines():
        mnemonic, form, *rest = line.split()
        xlens = (int(rest.pop()[2:]),) if rest[-1].startswith("rv") else (32, 64)
        fields = {name: int(value, 16) for name, value in (item.split("=") for item in rest)}
        if "{s}" in mnemonic:
            for fmt, s in enumerate("sd"):
                entries.append(_entry(mnemonic.format(s=s), form, xlens, {**fields, "fmt": fmt}))
        elif "{o}" in mnemonic:
            for aqrl, order in enumerate(_ORDERINGS):
                f7 = fields["f5"] << 2 | aqrl
                entries.append(_entry(mnemonic.format(o=order), form, xlens, {**fields, "f7": f7}))
        else:
            entries.append(_entry(mnemonic, form, xlens, fields))
    return entries


def _index(xlen: int) -> dict[int, list[tuple[int, dict[int, _Entry]]]]:
    """Per major opcode: (mask, {match: entry}) pairs, most specific mask first."""
    groups: dict[int, dict[int, dict[int, _Entry]]] = {}
    for entry in _table():
        if xlen in entry.xlens:
            by_match = groups.setdefault(entry.match & 0x7F, {}).setdefault(entry.mask, {})
            assert entry.match not in by_match, entry
            by_match[entry.match] = entry
    return {op: sorted(masks.items(), key=lambda m: -m[0].bit_count()) for op, masks in groups.items()}


_TABLES = {xlen: _index(xlen) for xlen in (32, 64)}


def _lookup(word: int, xlen: int) -> _Entry | None:
    for mask, entries in _TABLES[xlen].get(word & 0x7F, ()):
        entry = entries.get(word & mask)
        if entry is not None:
            return entry
    return None


# --------------------------------------------------------------------------------------------------------------
# The API.
# --------------------------------------------------------------------------------------------------------------


@lru_cache(maxsize=1 << 16)
def _decode_static(word: int, xlen: int) -> Instruction | None:
    """The instruction of a word whose operands do not depend on its address (None: unknown)."""
    entry = _lookup(word, xlen)
    if entry is None:
        return None
    operands = _FORMS[entry.form](word, 0, xlen)
    return None if operands is None else instruction(entry.mnemonic, operands)


def decode(word: int, address: int, *, xlen: int = 32) -> Instruction:
    """The instruction encoded by ``word`` (a 32-bit little-endian-read word) at ``address``.

    Raises :class:`DecodeError` for a word LLVM would not disassemble (see the module docstring).
    """
    if xlen not in _TABLES:
        raise ValueError(f"xlen must be 32 or 64, not {xlen}")
    if not 0 <= word <= 0xFFFFFFFF or word & 3 != 3:
        reason = "not a 32-bit instruction (compressed instructions are not supported)"
        raise DecodeError(word & 0xFFFFFFFF, address, reason)
    op = word & 0x7F
    if op == 0x63 or op == 0x6F:
        entry = _lookup(word, xlen)
        if entry is not None:
            return instruction(entry.mnemonic, _FORMS[entry.form](word, address, xlen) or [])
    else:
        found = _decode_static(word, xlen)
        if found is not None:
            return found
    raise DecodeError(word, address, f"unknown or illegal RV{xlen} instruction")


def decode_block(code: bytes, address: int, *, xlen: int = 32) -> list[Instruction]:
    """Every instruction of ``code`` (little-endian 32-bit words; ``len(code) % 4 == 0``) placed at ``address``."""
    if len(code) % 4:
        raise DecodeError(None, address, f"code of {len(code)} bytes is not a whole number of 32-bit words")
    words = struct.unpack(f"<{len(code) // 4}I", code)
    return [decode(w, address + 4 * i, xlen=xlen) for i, w in enumerate(words)]


def _classify(word: int) -> _Entry:
    entry = _lookup(word, 64)  # every RV32 instruction is an RV64 one of the same class
    if entry is None or _FORMS[entry.form](word, 0, 64) is None:
        raise DecodeError(word, None)
    return entry


def memory_accesses(word: int) -> int:
    """Data memory accesses the instruction makes: loads and stores 1, ``lr``/``sc`` 1, AMOs 2, others 0."""
    return _classify(word).accesses


def is_control_transfer(word: int) -> bool:
    """Whether the instruction is a branch, ``jal`` or ``jalr`` (the instructions that end a basic block)."""
    return _classify(word).control
