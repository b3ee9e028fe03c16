"""cbuild.riscv.decode against LLVM: each word decodes to what ``parse_line`` reads from ``llvm-objdump -M no-aliases``.

The references are real tools: C compiled for riscv32/riscv64 by the project's clang (``ziglang``), random
words assembled by ``llvm-mc``, both disassembled by ``llvm-objdump`` 14 (the spelling the decoder follows).
"""

from __future__ import annotations

import random
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile

from cbuild.riscv.decode import DecodeError, decode, decode_block, is_control_transfer, memory_accesses
from cbuild.riscv.isa import Instruction, parse_line
from tests.sdists import sdist

OBJDUMP = shutil.which("llvm-objdump-14")
LLVM_MC = shutil.which("llvm-mc-14")
needs_llvm14 = pytest.mark.skipif(
    OBJDUMP is None or LLVM_MC is None, reason="needs llvm-objdump-14 and llvm-mc-14 (the reference disassembler)"
)
MATTR = "--mattr=+m,+a,+f,+d"
_LINE = re.compile(r"^\s*([0-9a-f]+):\s+((?:[0-9a-f]{2} ){4})\s*(.*?)\s*$")
_SECTION = re.compile(r"^Disassembly of section (\S+):$")
_SYMBOL_SUFFIX = re.compile(r"\s+<[^<>]*>$")  # "beq a0, a1, 0x20 <f+0x20>": the symbolic form of the target

# ----------------------------------------------------------------------------------------------------------------
# The reference: llvm-objdump's text, read by parse_line.
# ----------------------------------------------------------------------------------------------------------------


def objdump(obj: Path, *options: str) -> dict[str, list[tuple[int, int, str]]]:
    """Per executable section: (address, word, no-alias text without the symbolic target) of each instruction."""
    assert OBJDUMP is not None
    out = subprocess.run(
        [OBJDUMP, "-d", "-M", "no-aliases", MATTR, *options, str(obj)], capture_output=True, text=True, check=True
    ).stdout
    sections: dict[str, list[tuple[int, int, str]]] = {}
    current: list[tuple[int, int, str]] = []
    for line in out.splitlines():
        if (s := _SECTION.match(line)) is not None:
            current = sections.setdefault(s.group(1), [])
        elif (m := _LINE.match(line)) is not None:
            word = int.from_bytes(bytes.fromhex(m.group(2)), "little")
            current.append((int(m.group(1), 16), word, _SYMBOL_SUFFIX.sub("", m.group(3))))
    return sections


def reference(text: str) -> Instruction | None:
    """What parse_line makes of objdump's text (None: objdump printed ``<unknown>``)."""
    if text == "<unknown>":
        return None
    instr = parse_line(text)
    assert instr is not None, text
    return instr


def llvm14_reads_reserved(word: int, xlen: int) -> bool:
    """LLVM 14 disassembles RV32 ``slli``/``srli``/``srai`` with shamt[5] set; the ISA reserves them (Spike traps),
    and the decoder rejects them: the one known difference."""
    return xlen == 32 and word & 0x707F in (0x1013, 0x5013) and bool(word & 1 << 25)


def check_against(listing: list[tuple[int, int, str]], xlen: int) -> int:
    """Decode every word of an objdump listing and compare; returns how many words were compared."""
    mismatches = []
    for address, word, text in listing:
        expected = reference(text)
        try:
            got: Instruction | None = decode(word, address, xlen=xlen)
        except DecodeError:
            got = None
        if got is None and llvm14_reads_reserved(word, xlen):
            continue
        if got != expected:
            mismatches.append(f"0x{address:x}: {word:08x}  llvm: {text!r}  decoder: {got}")
    assert not mismatches, f"{len(mismatches)} of {len(listing)} differ:\n" + "\n".join(mismatches[:40])
    return len(listing)


def text_sections(obj: Path) -> dict[str, bytes]:
    """The bytes of each executable section of an object file."""
    with obj.open("rb") as f:
        elf = ELFFile(f)
        return {s.name: s.data() for s in elf.iter_sections() if s["sh_flags"] & SH_FLAGS.SHF_EXECINSTR}


# ----------------------------------------------------------------------------------------------------------------
# Real C, compiled by the project's clang.
# ----------------------------------------------------------------------------------------------------------------

GENERAL_C = r"""
#include <stdint.h>
#include <string.h>

struct big { int a[13]; char tag; double d; };
struct small { short x, y; char c; };

int sum_shifted(const int *p, int n) { int s = 0; for (int i = 0; i < n; i++) s += p[i] >> 3; return s; }
unsigned usum(const unsigned *p, int n) { unsigned s = 0; for (int i = 0; i < n; i++) s += p[i] >> 5; return s; }
long long mul64(long long a, long long b) { return a * b + (a >> 7) - (b << 9); }
unsigned long long divmod64(unsigned long long a, unsigned long long b) { return a / b + a % b; }
int64_t sdiv64(int64_t a, int64_t b) { return a / b; }
int divs(int a, int b) { return a / b + a % b + (int)((unsigned)a / (unsigned)b) + (int)((unsigned)a % (unsigned)b); }
int mulhi(int a, int b) { return (int)(((int64_t)a * b) >> 32) + (int)(((uint64_t)(unsigned)a * (unsigned)b) >> 32); }
int mulhsu(int a, unsigned b) { return (int)(((int64_t)a * (uint64_t)b) >> 32); }
long wide(long a, long b) { return (a * b) / (b | 1) + (a % 1000003) - (long)((unsigned long)a >> 3); }
unsigned umod(unsigned a, unsigned b) { return a % b; }
int sra32(long a) { return (int)a >> 5; }
int narrow(int a, int b) { return (a << (b & 31)) ^ (a >> (b & 31)) ^ (int)((unsigned)a >> (b & 31)); }
void copy_big(struct big *d, const struct big *s) { *d = *s; }
struct small pass_small(struct small s) { s.x += s.y; s.c ^= 1; return s; }
void fill(char *p, int n) { memset(p, 7, n); }
int cmp(unsigned a, unsigned b, int c, int d) { return (a < b) + (c < d) * 2 + (c == d) * 4 + (a >= b) * 8; }
const char *name(int k) {
    switch (k) {
    case 0: return "zero"; case 1: return "one"; case 2: return "two"; case 3: return "three";
    case 4: return "four"; case 5: return "five"; case 6: return "six"; case 7: return "seven";
    default: return "many";
    }
}
int dispatch(int op, int a, int b) {
    switch (op) {
    case 10: return a + b; case 11: return a - b; case 12: return a * b; case 13: return a / (b | 1);
    case 14: return a & b; case 15: return a | b; case 16: return a ^ b; case 17: return a << (b & 7);
    case 18: return a >> (b & 7); case 19: return a % (b | 1);
    }
    return -1;
}
uint32_t crc32(const uint8_t *p, int n) {
    uint32_t c = 0xffffffffu;
    while (n--) { c ^= *p++; for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xedb88320u & -(c & 1)); }
    return ~c;
}
int bytes(const signed char *s, const unsigned short *u, const short *h) { return s[3] + u[5] + h[-2] + s[-1000]; }
void stores(char *c, short *s, int *i, long long *l) { c[1] = 1; s[2] = -2; i[3] = 0x12345; l[4] = -0x123456789LL; }
int big_constant(void) { return 0x12345678; }
long long big_constant64(void) { return 0x123456789abcdefLL; }
static int counter;
int *bump(void) { counter++; return &counter; }
int recurse(int n) { return n <= 1 ? 1 : n * recurse(n - 1); }
"""

FLOAT_C = r"""
#include <math.h>
#include <stdint.h>
float fops(float a, float b, float c) { return a * b + c - a / b; }
double dops(double a, double b, double c) { return __builtin_fma(a, b, c) - __builtin_fma(-a, b, c) + a / c; }
float ffma(float a, float b, float c) { return __builtin_fmaf(a, b, -c) + __builtin_fmaf(-a, b, -c); }
double dsqrt(double x) { return __builtin_sqrt(x) + __builtin_fabs(x) + __builtin_copysign(x, -1.0); }
float fsqrtf(float x) { return __builtin_sqrtf(x) + __builtin_fabsf(x) + __builtin_copysignf(x, -1.0f); }
int dcmp(double a, double b) { return (a < b) + 2 * (a <= b) + 4 * (a == b) + 8 * __builtin_isnan(a); }
int dclass(double a) { return __builtin_isnormal(a) + 2 * __builtin_isfinite(a) + 4 * __builtin_issubnormal(a); }
int fcmp(float a, float b) { return (a < b) + 2 * (a <= b) + 4 * (a == b) + 8 * __builtin_isinf(a); }
int d2i(double a) { return (int)a; }
unsigned d2u(double a) { return (unsigned)a; }
long long d2l(double a) { return (long long)a; }
int f2i(float a) { return (int)a; }
unsigned f2u(float a) { return (unsigned)a; }
double i2d(int a, unsigned b) { return (double)a + (double)b; }
float i2f(int a, unsigned b) { return (float)a + (float)b; }
double l2d(long long a, unsigned long long b) { return (double)a + (double)b; }
float l2f(long long a, unsigned long long b) { return (float)a + (float)b; }
double f2d(float a) { return a; }
float d2f(double a) { return (float)a; }
double dminmax(double a, double b) { return __builtin_fmin(a, b) * __builtin_fmax(a, b); }
float fminmax(float a, float b) { return __builtin_fminf(a, b) * __builtin_fmaxf(a, b); }
uint32_t fbits(float a) { union { float f; uint32_t u; } x = {a}; return x.u; }
float bitsf(uint32_t a) { union { float f; uint32_t u; } x; x.u = a; return x.f; }
uint64_t dbits(double a) { union { double f; uint64_t u; } x = {a}; return x.u; }
double bitsd(uint64_t a) { union { double f; uint64_t u; } x; x.u = a; return x.f; }
double dot(const double *a, const float *b, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}
void scale(float *a, int n, float k) { for (int i = 0; i < n; i++) a[i] = a[i] * k - 1.5f; }
long lround_(double x) { return __builtin_lround(x); }
long lrint_(double x) { return __builtin_lrint(x); }
double floor_(double x) { return __builtin_floor(x); }
"""

ATOMIC_C = r"""
#include <stdint.h>
int add_relaxed(int *p, int v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
int add_acquire(int *p, int v) { return __atomic_fetch_add(p, v, __ATOMIC_ACQUIRE); }
int add_release(int *p, int v) { return __atomic_fetch_add(p, v, __ATOMIC_RELEASE); }
int add_acq_rel(int *p, int v) { return __atomic_fetch_add(p, v, __ATOMIC_ACQ_REL); }
int add_seq_cst(int *p, int v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
int ops32(int *p, int v) {
    return __atomic_fetch_and(p, v, 5) + __atomic_fetch_or(p, v, 2) + __atomic_fetch_xor(p, v, 3)
         + __atomic_exchange_n(p, v, 4) + __atomic_fetch_sub(p, v, 0);
}
int minmax32(int *p, unsigned *u, int v) {
    return __atomic_fetch_min(p, v, 5) + __atomic_fetch_max(p, v, 2)
         + (int)__atomic_fetch_min(u, (unsigned)v, 3) + (int)__atomic_fetch_max(u, (unsigned)v, 0);
}
int cas32(int *p, int e, int d) { return __atomic_compare_exchange_n(p, &e, d, 0, 5, 5) ? e : -e; }
int cas32_weak(int *p, int e, int d) { return __atomic_compare_exchange_n(p, &e, d, 1, 2, 2) ? e : -e; }
int load_store32(int *p, int v) {
    __atomic_store_n(p, v, 3); __atomic_store_n(p, v, 5);
    return __atomic_load_n(p, 2) + __atomic_load_n(p, 5);
}
void fences(void) {
    __atomic_thread_fence(2); __atomic_thread_fence(3); __atomic_thread_fence(4); __atomic_thread_fence(5);
}
short add16(short *p, short v) { return __atomic_fetch_add(p, v, 5); }
char xchg8(char *p, char v) { return __atomic_exchange_n(p, v, 2); }
#if __riscv_xlen == 64
long ops64(long *p, long v) {
    return __atomic_fetch_add(p, v, 0) + __atomic_fetch_and(p, v, 2) + __atomic_fetch_or(p, v, 3)
         + __atomic_fetch_xor(p, v, 4) + __atomic_exchange_n(p, v, 5) + __atomic_fetch_min(p, v, 5)
         + __atomic_fetch_max(p, v, 0) + (long)__atomic_fetch_min((unsigned long *)p, (unsigned long)v, 2)
         + (long)__atomic_fetch_max((unsigned long *)p, (unsigned long)v, 3);
}
long cas64(long *p, long e, long d) { return __atomic_compare_exchange_n(p, &e, d, 0, 5, 5) ? e : -e; }
#endif
"""

SYSTEM_C = r"""
unsigned long counters(void) {
    unsigned long c, t, i, f;
    __asm__ volatile("csrrs %0, cycle, zero" : "=r"(c));
    __asm__ volatile("csrrs %0, time, zero" : "=r"(t));
    __asm__ volatile("csrrs %0, instret, zero" : "=r"(i));
    __asm__ volatile("csrrs %0, fcsr, zero" : "=r"(f));
    __asm__ volatile("csrrw zero, fflags, %0" :: "r"(f));
    __asm__ volatile("csrrsi zero, frm, 3");
    __asm__ volatile("csrrci %0, 0x7c0, 31" : "=r"(f));
    __asm__ volatile("csrrc %0, mstatus, %1" : "=r"(f) : "r"(c));
    return c + t + i + f;
}
long syscall3(long n, long a, long b, long c) {
    register long a7 __asm__("a7") = n, a0 __asm__("a0") = a, a1 __asm__("a1") = b, a2 __asm__("a2") = c;
    __asm__ volatile("ecall" : "+r"(a0) : "r"(a7), "r"(a1), "r"(a2) : "memory");
    return a0;
}
void barriers(void) {
    __asm__ volatile("fence.i");
    __asm__ volatile("fence r, rw");
    __asm__ volatile("fence w, o");
    __asm__ volatile("fence io, iorw");
    __asm__ volatile("fence.tso");
    __asm__ volatile("ebreak");
    __asm__ volatile("wfi");
    __asm__ volatile("unimp");
}
"""

RV32 = ("-target", "riscv32-linux-musl", "-mno-relax")
RV64 = ("-target", "riscv64-linux-musl", "-mno-relax")
BUILDS = {
    # The project's own RV32IM(+Zalrsc) flags (rv32emu.RV32_FLAGS), then richer variants.
    "rv32im": (32, (*RV32, "-mcpu=generic_rv32+m+zalrsc", "-O2", "-fomit-frame-pointer")),
    "rv32imafd": (32, (*RV32, "-mcpu=generic_rv32+m+a+f+d", "-O2")),
    "rv32imafd-Os": (32, (*RV32, "-mcpu=generic_rv32+m+a+f+d", "-Os")),
    "rv64imafd": (64, (*RV64, "-mcpu=generic_rv64+m+a+f+d", "-O2")),
    "rv64imafd-O1": (64, (*RV64, "-mcpu=generic_rv64+m+a+f+d", "-O1")),
    "rv64im": (64, (*RV64, "-mcpu=generic_rv64+m", "-O2")),
}
SOURCES = {"general": GENERAL_C, "float": FLOAT_C, "atomic": ATOMIC_C, "system": SYSTEM_C}


def compile_c(source: Path, out: Path, flags: tuple[str, ...], *extra: str) -> Path:
    cmd = [sys.executable, "-m", "ziglang", "cc", *flags, *extra, "-c", str(source), "-o", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    return out


# Every source with every set of flags, but atomics only where there is A or Zalrsc.
PAIRS = [(name, build) for name in SOURCES for build in BUILDS if (name, build) != ("atomic", "rv64im")]


@pytest.fixture(scope="module")
def objects(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], tuple[int, Path]]:
    """Object files of :data:`PAIRS`."""
    tmp = tmp_path_factory.mktemp("rvdecode")
    built = {}
    for name, build in PAIRS:
        source = tmp / f"{name}.c"
        source.write_text(SOURCES[name])
        xlen, flags = BUILDS[build]
        built[name, build] = (xlen, compile_c(source, tmp / f"{name}-{build}.o", flags))
    return built


@needs_llvm14
@pytest.mark.parametrize(("name", "build"), PAIRS)
def test_compiled_c_matches_objdump(objects: dict[tuple[str, str], tuple[int, Path]], name: str, build: str) -> None:
    xlen, obj = objects[name, build]
    listings = objdump(obj)
    sections = text_sections(obj)
    assert set(listings) == set(sections)
    for section, listing in listings.items():
        assert all(text != "<unknown>" for _, _, text in listing), f"LLVM 14 cannot read {section} of {obj.name}"
        check_against(listing, xlen)
        # decode_block reads the section's bytes directly: the same instructions, in order.
        assert len(sections[section]) == 4 * len(listing)
        assert decode_block(sections[section], 0, xlen=xlen) == [decode(w, a, xlen=xlen) for a, w, _ in listing]


_LOADS_STORES = re.compile(r"^(?:l[bhwd]u?|s[bhwd]|fl[wd]|fs[wd])$")


@needs_llvm14
def test_classification_on_compiled_code(objects: dict[tuple[str, str], tuple[int, Path]]) -> None:
    seen: set[str] = set()
    for _, obj in objects.values():
        for listing in objdump(obj).values():
            for _, word, text in listing:
                mnemonic = text.split()[0]
                seen.add(mnemonic)
                accesses = 0
                if _LOADS_STORES.match(mnemonic) or mnemonic.startswith(("lr.", "sc.")):
                    accesses = 1
                elif mnemonic.startswith("amo"):
                    accesses = 2
                assert memory_accesses(word) == accesses, text
                assert is_control_transfer(word) == (mnemonic in _CONTROL), text
    # The compiled code does exercise what the classification is about.
    assert {"lw", "sw", "ld", "sd", "lbu", "sh", "flw", "fsd", "lr.w.aqrl", "beq", "jal", "jalr"} <= seen
    assert any(m.startswith("amoadd.w") for m in seen)
    assert any(m.startswith("amoadd.d") for m in seen)


_CONTROL = {"beq", "bne", "blt", "bge", "bltu", "bgeu", "jal", "jalr"}


@needs_llvm14
def test_compiled_code_covers_the_extensions(objects: dict[tuple[str, str], tuple[int, Path]]) -> None:
    """The C above reaches every part of the decoder it is meant to check (guards against silent drift)."""
    seen: set[str] = set()
    for _, obj in objects.values():
        for listing in objdump(obj).values():
            seen.update(text.split()[0] for _, _, text in listing)
    expected = {
        "lui", "auipc", "addi", "slli", "srli", "srai", "andi", "ori", "xori", "sltiu", "add", "sub", "sltu",
        "mul", "mulh", "mulhu", "div", "divu", "rem", "remu", "addiw", "addw", "subw", "mulw", "divw", "sraiw",
        "ld", "sd", "fence", "fence.i", "fence.tso", "ecall", "ebreak", "csrrs", "csrrw", "csrrsi", "csrrci",
        "fmadd.d", "fadd.s", "fmul.d", "fdiv.s", "fsqrt.d", "feq.d", "flt.s", "fcvt.w.d", "fcvt.d.w", "fcvt.l.d",
        "fcvt.s.d", "fcvt.d.s", "fmv.x.w", "fmv.d.x", "fsgnj.d", "fsgnjx.s", "fmin.d", "fclass.d", "lr.w", "sc.w",
    }  # fmt: skip
    assert expected - seen == set()


@needs_llvm14
@pytest.mark.parametrize("xlen", [32, 64])
def test_brotli_decoder_matches_objdump(tmp_path: Path, xlen: int) -> None:
    root = sdist("brotli", "1.2.1") / "c"
    flags = BUILDS["rv32imafd" if xlen == 32 else "rv64imafd"][1]
    total = 0
    for source in ("dec/decode.c", "enc/encode.c", "enc/backward_references.c"):
        obj = compile_c(root / source, tmp_path / f"{Path(source).stem}.o", flags, f"-I{root / 'include'}")
        for listing in objdump(obj).values():
            total += check_against(listing, xlen)
    assert total > 10_000


# ----------------------------------------------------------------------------------------------------------------
# Random words, assembled with llvm-mc and disassembled by llvm-objdump: legal, reserved and illegal encodings.
# ----------------------------------------------------------------------------------------------------------------

# Major opcodes and the values of funct3/funct7 that mean something somewhere (plus random ones).
_OPCODES = (
    0x03, 0x07, 0x0F, 0x13, 0x17, 0x1B, 0x23, 0x27, 0x2F, 0x33, 0x37, 0x3B, 0x43, 0x47, 0x4B, 0x4F, 0x53,
    0x63, 0x67, 0x6F, 0x73,
)  # fmt: skip
_F7 = (
    0x00, 0x01, 0x20, 0x21, 0x04, 0x05, 0x08, 0x09, 0x0C, 0x0D, 0x10, 0x11, 0x14, 0x15, 0x2C, 0x2D, 0x50, 0x51,
    0x60, 0x61, 0x68, 0x69, 0x70, 0x71, 0x78, 0x79, 0x18, 0x30, 0x3D, 0x08 | 2, 0x0C | 3, 0x40 | 1, 0x70 | 2,
)  # fmt: skip


def random_words(rng: random.Random, count: int) -> list[int]:
    """Words spread over every major opcode: legal instructions of each kind and their near misses."""
    words = []
    for _ in range(count):
        kind = rng.random()
        if kind < 0.15:  # anything with the 32-bit length bits
            word = rng.getrandbits(32) | 3
        else:
            word = rng.getrandbits(32) & ~0x7F | rng.choice(_OPCODES)
            if kind < 0.75:
                word = word & 0x01FFFFFF | rng.choice(_F7) << 25
            if rng.random() < 0.3:  # small register numbers and fields, as in real code
                word &= ~rng.choice((0x1F << 7, 0x1F << 15, 0x1F << 20, 0xFFF << 20, 0xF << 28))
            if rng.random() < 0.1:
                word &= 0x000FFFFF | rng.choice((0x0, 0x3 << 20, 0x1 << 20, 0x10 << 20))
        words.append(word)
    words += [0x00000073, 0x00100073, 0x00200073, 0x10200073, 0x30200073, 0x7B200073, 0x10500073, 0xC0001073]
    words += [0x8330000F, 0x0000100F, 0x0000000F, 0x12000073, 0x22000073, 0x62000073, 0x10000073, 0x00300073]
    words += [0x9330000F, 0x8330008F, 0x0010100F, 0x0000500F, 0x10100073, 0x00000873]
    return words


def objdump_words(words: list[int], xlen: int, tmp_path: Path, address: int = 0) -> list[tuple[int, int, str]]:
    """The words assembled as data into ``.text`` (placed at ``address``) and disassembled."""
    assert LLVM_MC is not None
    source = tmp_path / f"words{xlen}.s"
    source.write_text(".text\n" + "".join(f".word 0x{w:08x}\n" for w in words))
    obj = tmp_path / f"words{xlen}.o"
    subprocess.run([LLVM_MC, f"-triple=riscv{xlen}", "-filetype=obj", str(source), "-o", str(obj)], check=True)
    (listing,) = objdump(obj, f"--adjust-vma=0x{address:x}").values()
    assert [w for _, w, _ in listing] == words
    return listing


@needs_llvm14
@pytest.mark.parametrize("xlen", [32, 64])
def test_random_words_match_objdump(tmp_path: Path, xlen: int) -> None:
    listing = objdump_words(random_words(random.Random(xlen), 40_000), xlen, tmp_path)
    check_against(listing, xlen)
    known = sum(text != "<unknown>" for _, _, text in listing)
    assert 10_000 < known < len(listing) - 5_000  # both legal and illegal words were tried


@needs_llvm14
@pytest.mark.parametrize("xlen", [32, 64])
def test_every_csr_matches_objdump(tmp_path: Path, xlen: int) -> None:
    words = [0x73 | f3 << 12 | 10 << 7 | 11 << 15 | csr << 20 for csr in range(4096) for f3 in (2, 5)]
    check_against(objdump_words(words, xlen, tmp_path), xlen)


@needs_llvm14
@pytest.mark.parametrize("xlen", [32, 64])
def test_every_template_field_matches_objdump(tmp_path: Path, xlen: int) -> None:
    """Each (opcode, funct3, funct7) combination, with fixed operands: every opcode space walked."""
    words = [
        op | 10 << 7 | f3 << 12 | 11 << 15 | rs2 << 20 | f7 << 25
        for op in _OPCODES
        for f3 in range(8)
        for f7 in range(128)
        for rs2 in (0, 1, 2, 3, 12)
    ]
    check_against(objdump_words(words, xlen, tmp_path), xlen)


# ----------------------------------------------------------------------------------------------------------------
# Hand-encoded words: the edge cases, spelled out.
# ----------------------------------------------------------------------------------------------------------------


def r_type(op: int, f3: int, f7: int, rd: int, rs1: int, rs2: int) -> int:
    return op | rd << 7 | f3 << 12 | rs1 << 15 | rs2 << 20 | f7 << 25


def i_type(op: int, f3: int, rd: int, rs1: int, imm: int) -> int:
    return op | rd << 7 | f3 << 12 | rs1 << 15 | (imm & 0xFFF) << 20


def b_type(f3: int, rs1: int, rs2: int, offset: int) -> int:
    o = offset & 0x1FFF
    return (
        0x63
        | (o >> 11 & 1) << 7
        | (o >> 1 & 0xF) << 8
        | f3 << 12
        | rs1 << 15
        | rs2 << 20
        | (o >> 5 & 0x3F) << 25
        | (o >> 12) << 31
    )


def j_type(rd: int, offset: int) -> int:
    o = offset & 0x1FFFFF
    return 0x6F | rd << 7 | (o >> 12 & 0xFF) << 12 | (o >> 11 & 1) << 20 | (o >> 1 & 0x3FF) << 21 | (o >> 20) << 31


def text_of(instr: Instruction) -> str:
    return f"{instr.mnemonic} {', '.join(instr.operands)}".strip()


@pytest.mark.parametrize(
    ("word", "address", "xlen", "text"),
    [
        (i_type(0x13, 0, 10, 11, 0), 0, 32, "addi a0, a1, 0"),
        (i_type(0x13, 0, 10, 11, -1), 0, 32, "addi a0, a1, -1"),
        (i_type(0x13, 0, 10, 11, -2048), 0, 32, "addi a0, a1, -2048"),
        (i_type(0x13, 0, 10, 11, 2047), 0, 32, "addi a0, a1, 2047"),
        (i_type(0x03, 2, 10, 2, 8), 0, 32, "lw a0, 8(sp)"),
        (i_type(0x03, 4, 10, 2, -8), 0, 32, "lbu a0, -8(sp)"),
        (r_type(0x23, 3, 0x7F, 24, 8, 1), 0, 64, "sd ra, -8(s0)"),
        (i_type(0x67, 0, 0, 1, 0), 0, 32, "jalr zero, 0(ra)"),
        (i_type(0x67, 0, 1, 6, -4), 0, 32, "jalr ra, -4(t1)"),
        (0xFFFFF537, 0, 32, "lui a0, 1048575"),
        (0x00001517, 0, 32, "auipc a0, 1"),
        (b_type(1, 10, 11, -4), 0x1000, 32, "bne a0, a1, 0xffc"),
        (b_type(0, 10, 0, -4096), 0x1000, 32, "beq a0, zero, 0x0"),
        (b_type(4, 10, 11, 4094), 0x1000, 32, "blt a0, a1, 0x1ffe"),
        (b_type(7, 10, 11, -8), 0x4, 32, "bgeu a0, a1, 0xfffffffc"),
        (b_type(7, 10, 11, -8), 0x4, 64, "bgeu a0, a1, 0xfffffffffffffffc"),
        (j_type(1, -2048), 0x10000, 32, "jal ra, 0xf800"),
        (j_type(0, (1 << 20) - 2), 0x10000, 32, "jal zero, 0x10fffe"),
        (j_type(0, -(1 << 20)), 0x100000, 32, "jal zero, 0x0"),
        (i_type(0x13, 1, 10, 10, 31), 0, 32, "slli a0, a0, 31"),
        (i_type(0x13, 1, 10, 10, 63), 0, 64, "slli a0, a0, 63"),
        (i_type(0x13, 5, 10, 10, 63), 0, 64, "srli a0, a0, 63"),
        (i_type(0x13, 5, 10, 10, 0x400 | 63), 0, 64, "srai a0, a0, 63"),
        (i_type(0x13, 5, 10, 10, 0x400 | 3), 0, 32, "srai a0, a0, 3"),
        (i_type(0x1B, 5, 10, 10, 0x400 | 31), 0, 64, "sraiw a0, a0, 31"),
        (i_type(0x1B, 0, 10, 10, -1), 0, 64, "addiw a0, a0, -1"),
        (0x0FF0000F, 0, 32, "fence iorw, iorw"),
        (0x0230000F, 0, 32, "fence r, rw"),
        (0x0C10000F, 0, 32, "fence io, w"),
        (0x0000000F, 0, 32, "fence unknown, unknown"),
        (0x8330000F, 0, 32, "fence.tso"),
        (0x0000100F, 0, 32, "fence.i"),
        (0x00000073, 0, 32, "ecall"),
        (0x00100073, 0, 32, "ebreak"),
        (0xC0001073, 0, 32, "unimp"),
        (0xC0002573, 0, 32, "csrrs a0, cycle, zero"),
        (0xC8002573, 0, 32, "csrrs a0, cycleh, zero"),
        (0xC8002573, 0, 64, "csrrs a0, 3200, zero"),
        (0x7C0FD573, 0, 32, "csrrwi a0, 1984, 31"),
        (0x1605A52F, 0, 32, "lr.w.aqrl a0, (a1)"),
        (0x1AC5A52F, 0, 32, "sc.w.rl a0, a2, (a1)"),
        (0x04C5B52F, 0, 64, "amoadd.d.aq a0, a2, (a1)"),
        (0xE0C5A52F, 0, 32, "amomaxu.w a0, a2, (a1)"),
        (r_type(0x33, 2, 1, 10, 11, 12), 0, 32, "mulhsu a0, a1, a2"),
        (r_type(0x3B, 7, 1, 10, 11, 12), 0, 64, "remuw a0, a1, a2"),
        (r_type(0x53, 7, 0x01, 10, 11, 12), 0, 32, "fadd.d fa0, fa1, fa2, dyn"),
        (r_type(0x53, 1, 0x61, 10, 11, 0), 0, 32, "fcvt.w.d a0, fa1, rtz"),
        (r_type(0x53, 0, 0x69, 10, 11, 0), 0, 32, "fcvt.d.w fa0, a1"),
        (0x68C5F543, 0, 32, "fmadd.s fa0, fa1, fa2, fa3, dyn"),
    ],
)
def test_hand_encoded(tmp_path: Path, word: int, address: int, xlen: int, text: str) -> None:
    instr = decode(word, address, xlen=xlen)
    assert text_of(instr) == text
    assert instr == parse_line(text)
    if OBJDUMP is not None and LLVM_MC is not None:  # the expected text is LLVM's own
        ((at, _, llvm_text),) = objdump_words([word], xlen, tmp_path, address)
        assert (at, " ".join(llvm_text.split())) == (address, text)


@pytest.mark.parametrize(
    ("word", "xlen"),
    [
        (i_type(0x13, 1, 10, 10, 32), 32),  # slli with shamt[5] on RV32
        (i_type(0x13, 5, 10, 10, 0x400 | 32), 32),  # srai likewise
        (i_type(0x1B, 1, 10, 10, 32), 64),  # slliw with shamt[5]
        (i_type(0x13, 5, 10, 10, 0x200), 64),  # srli with a funct6 bit that is neither srli nor srai
        (i_type(0x03, 3, 10, 2, 0), 32),  # ld on RV32
        (r_type(0x3B, 0, 0, 10, 11, 12), 32),  # addw on RV32
        (r_type(0x2F, 3, 0x00, 10, 11, 12), 32),  # amoadd.d on RV32
        (r_type(0x2F, 2, 0x08, 10, 11, 12), 32),  # lr.w with rs2 != 0
        (r_type(0x33, 0, 0x02, 10, 11, 12), 32),  # funct7 of nothing
        (r_type(0x53, 5, 0x00, 10, 11, 12), 32),  # fadd.s with the reserved rounding mode 5
        (r_type(0x53, 1, 0x69, 10, 11, 0), 32),  # fcvt.d.w with a rounding mode (LLVM 14 takes only 0)
        (0x1000000F, 32),  # fence with fm = 1
        (0x0000000B, 32),  # custom-0
        (0xFFFFFFFF, 64),
    ],
)
def test_illegal_words_raise(tmp_path: Path, word: int, xlen: int) -> None:
    with pytest.raises(DecodeError, match=rf"0x{word:08x} at 0x1234"):
        decode(word, 0x1234, xlen=xlen)
    if OBJDUMP is not None and LLVM_MC is not None:
        ((_, _, llvm_text),) = objdump_words([word], xlen, tmp_path)
        assert (llvm_text == "<unknown>") != llvm14_reads_reserved(word, xlen)


def test_compressed_and_partial_code_raise() -> None:
    with pytest.raises(DecodeError, match="compressed"):
        decode(0x00004501, 0x10, xlen=32)  # c.li a0, 0 (with a zero half-word after it)
    with pytest.raises(DecodeError, match="cannot decode code at 0x0: code of 6 bytes"):
        decode_block(b"\x13\x00\x00\x00\x13\x00", 0)
    with pytest.raises(ValueError, match="xlen"):
        decode(0x13, 0, xlen=128)


def test_decode_block_addresses() -> None:
    code = struct.pack("<3I", 0x00000013, b_type(0, 0, 0, -4), j_type(1, 8))
    instrs = decode_block(code, 0x2000)
    assert [text_of(i) for i in instrs] == ["addi zero, zero, 0", "beq zero, zero, 0x2000", "jal ra, 0x2010"]
    with pytest.raises(DecodeError, match=r"0x0000000b at 0x2008"):
        decode_block(code[:8] + struct.pack("<I", 0xB), 0x2000)


def test_classification() -> None:
    assert memory_accesses(i_type(0x03, 2, 10, 2, 8)) == 1  # lw
    assert memory_accesses(r_type(0x23, 3, 0, 0, 2, 1)) == 1  # sd
    assert memory_accesses(i_type(0x07, 3, 10, 2, 8)) == 1  # fld
    assert memory_accesses(0x1605A52F) == 1  # lr.w.aqrl
    assert memory_accesses(0x1AC5A52F) == 1  # sc.w.rl
    assert memory_accesses(0x04C5B52F) == 2  # amoadd.d.aq
    assert memory_accesses(0x0FF0000F) == 0  # fence
    assert memory_accesses(0x00000013) == 0
    assert is_control_transfer(b_type(0, 1, 2, 8))
    assert is_control_transfer(j_type(0, 8))
    assert is_control_transfer(i_type(0x67, 0, 0, 1, 0))
    assert not is_control_transfer(0x00000073)  # ecall ends no block here: it returns to the next instruction
    assert not is_control_transfer(0x00001517)  # auipc
    with pytest.raises(DecodeError, match="0x0000000b"):
        is_control_transfer(0xB)
    with pytest.raises(DecodeError, match="0x00005053"):
        memory_accesses(r_type(0x53, 5, 0, 0, 0, 0))  # fadd.s with the reserved rounding mode 5


def test_decoded_registers_follow_parse_line() -> None:
    """The Instruction carries parse_line's register rules (x0 dropped; stores and branches write nothing)."""
    assert decode(i_type(0x13, 0, 10, 0, 5), 0) == Instruction("addi", ("a0",), (), ("a0", "zero", "5"))
    assert decode(r_type(0x23, 2, 0, 0, 2, 1), 0).dsts == ()
    assert decode(r_type(0x23, 2, 0, 0, 2, 1), 0).srcs == ("ra", "sp")
    assert decode(0x68C5F543, 0).srcs == ("fa1", "fa2", "fa3")
