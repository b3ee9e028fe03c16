"""Programs see one canonical x86-64 CPU, whatever the host: CPUID, XGETBV, __builtin_cpu_supports, target_clones."""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from cbuild import BlockCounts, Builder, BuildOptions, CBuildError, ExecutionError, Library, run_program
from cbuild.build.cpu import CPU_LEVELS, DEFAULT_CPU
from cbuild.errors import InstrumentError

pytestmark = pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="x86-64 only")

#: The ways libraries ask: <cpuid.h>, a plain asm with all four outputs, asm statements that read
#: back only some registers (as zstd's do), XGETBV as asm and as the intrinsic, the compiler-rt
#: builtins, and function multiversioning.
PROBE_C = r"""
#include <cpuid.h>
#include <immintrin.h>
#include <stdio.h>

static void plain_cpuid(unsigned leaf, unsigned sub, unsigned r[4]) {
    __asm__ __volatile__("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "0"(leaf), "2"(sub));
}
static unsigned max_leaf(void) { unsigned n; __asm__("cpuid" : "=a"(n) : "a"(0) : "ebx", "ecx", "edx"); return n; }
/* 64-bit operands: the instruction reads the low halves and zero-extends what it writes. */
static void wide_cpuid(unsigned long long leaf, unsigned long long r[4]) {
    __asm__ volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(leaf), "c"(0ull));
}
static unsigned long long wide_max_leaf(void) {
    unsigned long long a; __asm__("cpuid" : "=a"(a) : "a"(0) : "ebx", "ecx", "edx"); return a;
}
static unsigned leaf7_ebx(void) {
    unsigned a, b, c;
    __asm__("cpuid" : "=a"(a), "=b"(b), "=c"(c) : "a"(7), "c"(0) : "edx");
    return b;
}
__attribute__((target("xsave"))) static unsigned long long xcr0_intrinsic(void) { return _xgetbv(0); }
__attribute__((target("avx512f"))) const char *kernel(void) { return "avx512f"; }
__attribute__((target("avx2"))) const char *kernel(void) { return "avx2"; }
__attribute__((target("sse4.2"))) const char *kernel(void) { return "sse4.2"; }
__attribute__((target("default"))) const char *kernel(void) { return "default"; }
__attribute__((target_clones("avx2", "default"))) int cloned(int x) { return x + 1; }

int main(void) {
    unsigned a, b, c, d, r[4];
    __cpuid_count(7, 0, a, b, c, d);
    printf("cpuid.h leaf7 ebx %08x\n", b);
    __get_cpuid(1, &a, &b, &c, &d);
    printf("cpuid.h leaf1 ecx %08x edx %08x\n", c, d);
    plain_cpuid(0, 0, r);
    printf("vendor %.4s%.4s%.4s max %u\n", (char *)&r[1], (char *)&r[3], (char *)&r[2], max_leaf());
    printf("asm leaf7 ebx %08x\n", leaf7_ebx());
    unsigned long long w[4];
    wide_cpuid(1, w);
    printf("wide leaf1 ecx %016llx edx %016llx max %llu\n", w[2], w[3], wide_max_leaf());
    plain_cpuid(0x80000001, 0, r);
    printf("leaf 80000001 ecx %08x\n", r[2]);
    unsigned lo, hi;
    __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    printf("xcr0 %x %llx\n", lo, (unsigned long long)(c >> 27 & 1 ? xcr0_intrinsic() : lo));
    __builtin_cpu_init();
    printf("builtin sse4.2=%d avx2=%d bmi2=%d avx512f=%d v2=%d v3=%d v4=%d\n", !!__builtin_cpu_supports("sse4.2"),
           !!__builtin_cpu_supports("avx2"), !!__builtin_cpu_supports("bmi2"), !!__builtin_cpu_supports("avx512f"),
           !!__builtin_cpu_supports("x86-64-v2"), !!__builtin_cpu_supports("x86-64-v3"),
           !!__builtin_cpu_supports("x86-64-v4"));
    printf("kernel %s %d\n", kernel(), cloned(1));
    return 0;
}
"""

#: What each level answers (CPUID bits from the Intel SDM; the psABI's levels).
EXPECTED = {
    "x86-64": {"leaf7": 0, "leaf1_ecx": 0, "ext_ecx": 0, "xcr0": 3, "builtin": "0 0 0 0 0 0 0", "kernel": "default"},
    "x86-64-v2": {
        "leaf7": 0,
        "leaf1_ecx": 0x00982201,
        "ext_ecx": 1,
        "xcr0": 3,
        "builtin": "1 0 0 0 1 0 0",
        "kernel": "sse4.2",
    },
    "x86-64-v3": {
        "leaf7": 0x128,
        "leaf1_ecx": 0x3CD83201,
        "ext_ecx": 0x21,
        "xcr0": 7,
        "builtin": "1 1 1 0 1 1 0",
        "kernel": "avx2",
    },
}


def _host_has(flag: str) -> bool:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return bool(re.search(rf"^flags\s*:.*\b{flag}\b", text, re.MULTILINE))


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cpu") / "probe.c"
    path.write_text(PROBE_C)
    return path


@pytest.mark.parametrize("cpu", list(EXPECTED))
def test_every_way_of_asking_gets_the_canonical_answer(builder: Builder, probe: Path, cpu: str) -> None:
    if cpu == "x86-64-v3" and not _host_has("avx2"):
        pytest.skip("the host lacks AVX2: an x86-64-v3 build stops at start-up (tested below)")
    result = run_program(builder.build([probe], options=BuildOptions(cpu=cpu)), timeout=60)
    assert result.returncode == 0, result.stderr
    out = result.stdout.decode()
    want = EXPECTED[cpu]
    assert f"cpuid.h leaf7 ebx {want['leaf7']:08x}" in out
    assert f"asm leaf7 ebx {want['leaf7']:08x}" in out
    assert f"cpuid.h leaf1 ecx {want['leaf1_ecx']:08x} edx 07888111" in out
    assert "vendor GenuineIntel max 13" in out
    assert f"wide leaf1 ecx {want['leaf1_ecx']:016x} edx 0000000007888111 max 13" in out
    assert f"leaf 80000001 ecx {want['ext_ecx']:08x}" in out
    assert f"xcr0 {want['xcr0']:x} {want['xcr0']:x}" in out
    flags = [int(v) for v in re.findall(r"=(\d)", out.split("builtin ")[1].splitlines()[0])]
    assert " ".join(map(str, flags)) == want["builtin"]
    assert f"kernel {want['kernel']} 2" in out  # function multiversioning resolves for the level


def test_avx512_is_what_the_canonical_cpu_has_not_what_the_host_has(builder: Builder, probe: Path) -> None:
    """The default level says "no AVX-512" on an AVX-512 host too; the count is the same on both."""
    runs = [run_program(builder.build([probe]), timeout=60) for _ in range(2)]
    out = runs[0].stdout.decode()
    assert "cpuid.h leaf7 ebx 00000000" in out  # no AVX512F (bit 16), no AVX2 (bit 5) at x86-64-v2
    assert "avx512f=0" in out
    assert runs[0].counts is not None
    assert runs[1].counts is not None
    assert runs[0].counts.counts == runs[1].counts.counts
    assert DEFAULT_CPU == "x86-64-v2"


def test_builtin_cpu_supports_bits_match_clangs_numbering(builder: Builder, tmp_path: Path) -> None:
    """Every feature name the levels cover, as clang encodes it, reads what the level has."""
    levels = {
        "x86-64": ["cmov", "mmx", "sse", "sse2", "x86-64"],
        "x86-64-v2": ["popcnt", "sse3", "ssse3", "sse4.1", "sse4.2", "cx16", "sahf", "x86-64-v2"],
        "x86-64-v3": ["avx", "avx2", "bmi", "bmi2", "fma", "f16c", "lzcnt", "movbe", "xsave", "x86-64-v3"],
        "x86-64-v4": ["avx512f", "avx512bw", "avx512dq", "avx512cd", "avx512vl", "x86-64-v4"],
    }
    names = [n for group in levels.values() for n in group]
    src = tmp_path / "supports.c"
    body = "".join(f'    printf("%d", !!__builtin_cpu_supports("{n}"));\n' for n in names)
    src.write_text(f"#include <stdio.h>\nint main(void) {{\n    __builtin_cpu_init();\n{body}    return 0;\n}}\n")
    for cpu in ("x86-64", "x86-64-v2"):
        upto = list(CPU_LEVELS).index(cpu)
        expected = "".join("1" if list(levels).index(level) <= upto else "0" for level, g in levels.items() for _ in g)
        result = run_program(builder.build([src], options=BuildOptions(cpu=cpu)), timeout=60)
        assert result.stdout.decode() == expected, cpu


@pytest.mark.skipif(_host_has("avx512f"), reason="the host has AVX-512: an x86-64-v4 build runs")
def test_a_level_the_host_cannot_run_stops_at_start_up_naming_the_feature(builder: Builder, probe: Path) -> None:
    with pytest.raises(ExecutionError) as info:
        run_program(builder.build([probe], options=BuildOptions(cpu="x86-64-v4")), timeout=60)
    assert "this machine's CPU lacks AVX512F, which the canonical CPU x86-64-v4 has" in str(info.value)


def test_an_unknown_level_names_the_accepted_ones() -> None:
    with pytest.raises(CBuildError, match="unknown cpu 'haswell'; accepted: x86-64, x86-64-v2, x86-64-v3, x86-64-v4"):
        BuildOptions(cpu="haswell")


def test_a_cpuid_statement_the_rewrite_cannot_answer_is_named(builder: Builder, tmp_path: Path) -> None:
    src = tmp_path / "odd.c"
    src.write_text(
        "unsigned long long odd(void) {\n"
        '    unsigned a; __asm__("cpuid" : "=r"(a) : "a"(0) : "ebx", "ecx", "edx"); return a;\n'
        "}\nint main(void) { return (int)odd(); }\n"
    )
    with pytest.raises(CBuildError, match=r"odd: inline assembly with `cpuid` in a form the canonical CPU cannot"):
        builder.build([src])


def test_the_cpu_is_in_the_baseline_fingerprint_and_config(pytester: pytest.Pytester) -> None:
    pytester.makefile(".c", prog='int main(void) { return __builtin_cpu_supports("avx2") ? 7 : 3; }\n')
    pytester.makepyfile(test_prog="def test_run(cbuild):\n    assert cbuild.program('prog.c').run().returncode == 3\n")
    pytester.makepyprojecttoml("[tool.instrbudget]\ncpu = 'x86-64'\n")
    pytester.runpytest("-p", "no:cacheprovider", "--instrbudget-update").assert_outcomes(passed=1)
    baseline = (pytester.path / ".instrbudget" / "baseline.json").read_text()
    assert '"cpu": "x86-64"' in baseline
    pytester.makepyprojecttoml("[tool.instrbudget]\ncpu = 'x86-64-v9'\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*[[]tool.instrbudget] cpu: expected one of x86-64, x86-64-v2, x86-64-v3, x86-64-v4*"])


@pytest.mark.skipif(shutil.which("qemu-x86_64") is None, reason="needs qemu-user (apt-get install qemu-user)")
@pytest.mark.parametrize("other_cpu", ["Nehalem", "Haswell"])
def test_the_same_counts_on_another_cpu_under_qemu(
    builder: Builder, probe: Path, tmp_path: Path, other_cpu: str
) -> None:
    """An independent check: the same binary on an emulated CPU with other features counts the same."""
    artifact = builder.build([probe])
    outputs = []
    for runner in ([], ["qemu-x86_64", "-cpu", other_cpu]):
        counts = tmp_path / f"counts-{len(runner)}.bin"
        env = {"PATH": os.environ.get("PATH", ""), "INSTRBUDGET_COUNTS": str(counts)}
        proc = subprocess.run([*runner, str(artifact.path)], env=env, capture_output=True, check=False)
        assert proc.returncode == 0, proc.stderr
        outputs.append((proc.stdout, counts.read_bytes()))
    assert outputs[0] == outputs[1]


@pytest.mark.skipif(shutil.which("qemu-x86_64") is None, reason="needs qemu-user (apt-get install qemu-user)")
def test_a_host_below_the_level_stops_under_qemu(builder: Builder, probe: Path) -> None:
    artifact = builder.build([probe])  # x86-64-v2
    proc = subprocess.run(["qemu-x86_64", "-cpu", "core2duo", str(artifact.path)], capture_output=True, check=False)
    assert proc.returncode == 125
    assert b"this machine's CPU lacks SSE4.1, which the canonical CPU x86-64-v2 has" in proc.stderr


#: What a library asks, through the builtins and function multiversioning; its own functions
#: report the answers, and a program built from the same file prints them.
ASKING_C = r"""
int supports_sse42(void) { __builtin_cpu_init(); return __builtin_cpu_supports("sse4.2") ? 1 : 0; }
int supports_avx2(void) { __builtin_cpu_init(); return __builtin_cpu_supports("avx2") ? 1 : 0; }
int supports_avx512f(void) { __builtin_cpu_init(); return __builtin_cpu_supports("avx512f") ? 1 : 0; }
int is_intel(void) { __builtin_cpu_init(); return __builtin_cpu_is("intel") ? 1 : 0; }
int is_amd(void) { __builtin_cpu_init(); return __builtin_cpu_is("amd") ? 1 : 0; }
int is_haswell(void) { __builtin_cpu_init(); return __builtin_cpu_is("haswell") ? 1 : 0; }
__attribute__((target_clones("avx2", "sse4.2", "default"))) int clone_of(int x) { return 100 + x; }
int which_clone(void) { return clone_of(1); }
__attribute__((target("avx2"))) int kernel(void) { return 3; }
__attribute__((target("sse4.2"))) int kernel(void) { return 2; }
__attribute__((target("default"))) int kernel(void) { return 1; }
int which_kernel(void) { return kernel(); }
"""
ASKING_MAIN_C = r"""
#include <stdio.h>
int supports_sse42(void), supports_avx2(void), supports_avx512f(void), is_intel(void), is_amd(void),
    is_haswell(void), which_clone(void), which_kernel(void);
int main(void) {
    printf("%d %d %d %d %d %d %d %d\n", supports_sse42(), supports_avx2(), supports_avx512f(), is_intel(), is_amd(),
           is_haswell(), which_clone(), which_kernel());
    return 0;
}
"""
ASKED = ("supports_sse42", "supports_avx2", "supports_avx512f", "is_intel", "is_amd", "is_haswell")
#: The answers (ASKED, then the clone's result and the multiversioned kernel that ran), and the
#: clone of ``clone_of`` that ran, by level.
ANSWERS = {
    "x86-64": ((0, 0, 0, 1, 0, 0, 101, 1), "clone_of.default.2"),
    "x86-64-v2": ((1, 0, 0, 1, 0, 0, 101, 2), "clone_of.sse4.2.1"),
    "x86-64-v3": ((1, 1, 0, 1, 0, 0, 101, 3), "clone_of.avx2.0"),
}


def _clones_run(counts: BlockCounts) -> set[str]:
    """The clones of ``clone_of`` whose code ran (a program's count has its resolver too, run as it starts)."""
    ran = {b.function for b, n in zip(counts.table.blocks, counts.counts, strict=True) if n}
    return {f for f in ran if f.startswith("clone_of.") and f != "clone_of.resolver"}


@pytest.fixture(scope="module")
def asking(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("asking")
    (folder / "asking.c").write_text(ASKING_C)
    (folder / "main.c").write_text(ASKING_MAIN_C)
    return folder / "asking.c", folder / "main.c"


@pytest.mark.parametrize("cpu", list(ANSWERS))
def test_a_library_gets_the_programs_canonical_answers(builder: Builder, asking: tuple[Path, Path], cpu: str) -> None:
    """__builtin_cpu_supports, __builtin_cpu_is and multiversioning in a shared library: it links
    (the runtime's tables are its own), loads (its ifuncs are resolved at build time) and answers
    as the program built for the level does."""
    if cpu == "x86-64-v3" and not _host_has("avx2"):
        pytest.skip("the host lacks AVX2: an x86-64-v3 build stops at start-up")
    source, main = asking
    options = BuildOptions(cpu=cpu)
    answers, clone = ANSWERS[cpu]
    program = run_program(builder.build([source, main], options=options), timeout=60)
    assert program.returncode == 0, program.stderr
    assert tuple(map(int, program.stdout.decode().split())) == answers
    assert program.counts is not None
    assert _clones_run(program.counts) == {clone}
    artifact = builder.build([source], kind="library", options=options)
    counts = []
    for _ in range(2):
        with Library(artifact) as library:
            since = library.snapshot()
            got = (*(library.function(name)() for name in ASKED), library.which_clone(), library.which_kernel())
            assert got == answers
            counted = library.counts(since)
            assert _clones_run(counted) == {clone}
            counts.append(counted.counts)
            # Called by its own name too: the version the level picks.
            since = library.snapshot()
            assert library.clone_of(1) == 101
            assert _clones_run(library.counts(since)) == {clone}
    assert counts[0] == counts[1]


def test_the_build_time_resolution_reads_the_runtimes_tables(builder: Builder, tmp_path: Path) -> None:
    """A library's ifuncs are resolved from cpu.py's copy of canonical_cpu.c's tables: the two agree."""
    from cbuild.build import cpu as cpu_mod

    src = tmp_path / "tables.c"
    src.write_text(
        "#include <stdio.h>\n"
        + "".join(
            f"extern const unsigned __instrbudget_cpu_model_{n}[4], __instrbudget_cpu_features2_{n}[3];\n"
            for n in CPU_LEVELS.values()
        )
        + "int main(void) {\n"
        + "".join(
            f'    printf("%u %u %u %u %u %u %u\\n", __instrbudget_cpu_model_{n}[0], __instrbudget_cpu_model_{n}[1], '
            f"__instrbudget_cpu_model_{n}[2], __instrbudget_cpu_model_{n}[3], __instrbudget_cpu_features2_{n}[0], "
            f"__instrbudget_cpu_features2_{n}[1], __instrbudget_cpu_features2_{n}[2]);\n"
            for n in CPU_LEVELS.values()
        )
        + "    return 0;\n}\n"
    )
    result = run_program(builder.build([src]), timeout=60)
    assert result.returncode == 0, result.stderr
    rows = [tuple(map(int, line.split())) for line in result.stdout.decode().splitlines()]
    want = [
        (
            *(cpu_mod._table_word(n, f"@__instrbudget_cpu_model_{n}", w) for w in range(4)),
            *(cpu_mod._table_word(n, f"@__instrbudget_cpu_features2_{n}", w) for w in range(3)),
        )
        for n in CPU_LEVELS.values()
    ]
    assert rows == want


ARCH_C = r"""
__attribute__((target_clones("arch=x86-64", "default"))) int g(int x) { return x + 10; }
__attribute__((target("arch=haswell"))) int f(int x) { return x * 5; }
__attribute__((target("arch=nehalem"))) int f(int x) { return x * 4; }
__attribute__((target("sse4.2,popcnt"))) int f(int x) { return x * 3; }
__attribute__((target("default"))) int f(int x) { return x; }
int which_g(void) { return g(1); }
int which_f(void) { return f(1); }
"""
ARCH_MAIN_C = r"""
#include <stdio.h>
int which_g(void), which_f(void);
int main(void) { printf("%d %d\n", which_g(), which_f()); return 0; }
"""


@pytest.mark.parametrize("opt_level", ["0", "2"])
@pytest.mark.parametrize("cpu", ["x86-64", "x86-64-v2"])
def test_a_librarys_versions_by_architecture_are_the_programs(
    builder: Builder, tmp_path: Path, cpu: str, opt_level: str
) -> None:
    """Versions chosen by arch= (feature bit 31 of a word, a negative literal; a switch over the CPU's
    type at -O2) resolve in a library as the program's resolver does at start-up: a sign error picked
    the default clone where the program ran the arch=x86-64 one."""
    (tmp_path / "arch.c").write_text(ARCH_C)
    (tmp_path / "main.c").write_text(ARCH_MAIN_C)
    options = BuildOptions(cpu=cpu, opt_level=opt_level)
    program = run_program(builder.build([tmp_path / "arch.c", tmp_path / "main.c"], options=options), timeout=60)
    assert program.returncode == 0, program.stderr
    answers = tuple(map(int, program.stdout.decode().split()))
    assert answers[0] == 11  # arch=x86-64: every level has it
    with Library(builder.build([tmp_path / "arch.c"], kind="library", options=options)) as library:
        assert (library.which_g(), library.which_f()) == answers


def test_a_librarys_own_resolver_is_a_build_error_naming_it(builder: Builder, tmp_path: Path) -> None:
    """An ifunc whose resolver asks more than the canonical tables would run, instrumented, while the
    loader relocates the library, before its runtime can: it crashed the library's process at load."""
    (tmp_path / "own.c").write_text(
        "static int add_avx2(int x) { return x + 2; }\n"
        "static int add_plain(int x) { return x + 1; }\n"
        "int fast_mode = 1;\n"
        "static int (*resolve_add(void))(int) { return fast_mode ? add_avx2 : add_plain; }\n"
        'int add(int) __attribute__((ifunc("resolve_add")));\n'
        "int which(void) { return add(1); }\n"
    )
    with pytest.raises(InstrumentError) as refused:
        builder.build([tmp_path / "own.c"], kind="library", options=BuildOptions(opt_level="0"))
    assert str(refused.value).startswith(
        "the multiversioned function @add of a shared library picks its version in @resolve_add, which asks more "
        "than the canonical CPU's tables"
    )
