"""Deterministic cut-off: code that would pass its limit stops at the same count and place every run."""

from __future__ import annotations

import json
import re
import textwrap

import pytest

from cbuild import Builder
from cbuild.build.options import BuildOptions
from cbuild.errors import CBuildError
from cbuild.run.library import Library
from cbuild.run.program import run_program
from cbuild.run.stops import CodeStopped, Stop

CUTOFF = BuildOptions(cutoff=True)

PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static volatile unsigned long sink;
__attribute__((noinline)) static void slow(unsigned long n) {
    for (unsigned long i = 0; i < n; i++) sink += i;
}
__attribute__((noinline)) int deeper(int n, const char *p) {
    char buf[64];
    memcpy(buf, p, sizeof buf);
    buf[n & 63] ^= (char)n;
    return deeper(n + 1, buf) + buf[(n * 7) & 63];
}
int main(int argc, char **argv) {
    const char *what = argv[1];
    unsigned long n = argc > 2 ? strtoul(argv[2], 0, 10) : 0;
    if (strcmp(what, "forever") == 0) for (;;) sink++;
    if (strcmp(what, "loop") == 0) for (unsigned long i = 0; i < n; i++) sink += i;
    if (strcmp(what, "slow") == 0) for (unsigned long i = 0; i < n; i++) slow(1000);
    if (strcmp(what, "recurse") == 0) { static const char zero[64]; return deeper(0, zero); }
    printf("done %lu\n", n);
    return 0;
}
"""


@pytest.fixture(scope="module")
def programs(tmp_path_factory: pytest.TempPathFactory, builder: Builder) -> tuple[object, object]:
    src = tmp_path_factory.mktemp("cutoff") / "stops.c"
    src.write_text(PROGRAM)
    return (
        builder.build([src], options=CUTOFF, kind="program", models=[]),
        builder.build([src], options=BuildOptions(), kind="program", models=[]),
    )


def _total(counts: object) -> int:
    return sum(c * s for c, s in zip(counts.counts, counts.table.sizes, strict=True))  # type: ignore[attr-defined]


def _stop(artifact: object, *args: object, limit: int) -> Stop:
    with pytest.raises(CodeStopped) as info:
        run_program(artifact, args, max_instr=limit)  # type: ignore[arg-type]
    return info.value.stop


@pytest.mark.parametrize(
    ("args", "where", "caller"),
    [
        (("forever",), "main", None),
        (("loop", 10**9), "main", None),
        (("slow", 10**9), "slow", "main"),
        (("recurse",), "deeper", "deeper"),
    ],
)
def test_a_stop_is_the_same_on_every_run(programs, args, where, caller) -> None:  # type: ignore[no-untyped-def]
    cutoff, _ = programs
    stops = {_stop(cutoff, *args, limit=100_000) for _ in range(5)}
    assert len(stops) == 1
    (stop,) = stops
    assert stop.where.function == where
    assert stop.where.file.endswith("stops.c")
    assert stop.where.line > 0
    assert stop.callers[:1] == () if caller is None else stop.callers[0].function == caller
    assert stop.limit == 100_000
    # Checks sit at loop heads: at most one pass through a loop body (here under 20
    # instructions) separates the stop from the limit.
    assert 100_000 - 20 <= stop.count <= 100_000 + 20


def test_recursion_is_stopped_before_the_stack_runs_out(programs) -> None:  # type: ignore[no-untyped-def]
    cutoff, _ = programs
    stop = _stop(cutoff, "recurse", limit=200_000)
    assert stop.depth is not None
    assert stop.depth > 256  # deeper than the frames the runtime records
    assert "calls deep" in stop.stack()
    assert re.search(r"deeper \(stops\.c:\d+\) x \d+", stop.stack())


def test_the_count_at_a_stop_is_exact(programs) -> None:  # type: ignore[no-untyped-def]
    """Code that finishes at exactly its cut-off passes; with less, it stops in the loop, where a longer run does.

    Past the last check (here the code after the loop) nothing stops the code: with a cut-off
    one instruction short it finishes, and its count shows it passed the cut-off."""
    cutoff, ordinary = programs
    # a + b*n (the loop is unrolled by the optimiser); as many digits each, so parsing n costs the same
    totals = [_total(run_program(ordinary, ["loop", n]).counts) for n in (4000, 6000, 8000)]
    assert totals[2] - totals[1] == totals[1] - totals[0]
    exact = totals[0]
    finished = run_program(cutoff, ["loop", 4000], max_instr=exact)
    assert _total(finished.counts) == exact
    assert finished.stdout == b"done 4000\n"
    assert _total(run_program(cutoff, ["loop", 4000], max_instr=exact - 1).counts) == exact
    # The counted printf after the loop costs about 1,100: 2,000 short stops in the loop.
    below = _stop(cutoff, "loop", 4000, limit=exact - 2000)
    longer = _stop(cutoff, "loop", 10**6, limit=exact)
    assert below.where == longer.where
    assert exact - 2030 < below.count <= exact - 2000
    assert exact - 30 < longer.count <= exact + 30


def test_a_cutoff_build_counts_what_an_ordinary_build_counts(programs) -> None:  # type: ignore[no-untyped-def]
    cutoff, ordinary = programs
    for args in (["slow", 50], ["loop", 12345]):
        plain = run_program(ordinary, args).counts
        checked = run_program(cutoff, args).counts
        limited = run_program(cutoff, args, max_instr=10**12).counts
        assert plain is not None
        assert checked is not None
        assert limited is not None
        assert plain.counts == checked.counts == limited.counts


def test_a_stop_comes_within_milliseconds(programs) -> None:  # type: ignore[no-untyped-def]
    """An endless loop with a cut-off of 10^6 instructions ends at once, not at the timeout."""
    cutoff, _ = programs
    stop = _stop(cutoff, "forever", limit=10**6)
    assert stop.count <= 10**6


def test_limits_need_a_cutoff_build_and_a_known_metric(programs) -> None:  # type: ignore[no-untyped-def]
    cutoff, ordinary = programs
    with pytest.raises(CBuildError, match=r"built without cut-off checks; build it with BuildOptions\(cutoff=True\)"):
        run_program(ordinary, ["loop", 1], max_instr=10)
    with pytest.raises(CBuildError, match=r"no limit can be set on 'zk_cycles'; metrics with a cut-off here: ir_"):
        run_program(cutoff, ["loop", 1], limits={"zk_cycles": 10})
    with pytest.raises(CBuildError, match="must be a non-negative integer"):
        run_program(cutoff, ["loop", 1], max_instr=-5)


def test_a_library_call_stops_and_names_its_callers(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    src = write(
        "lib.c",
        textwrap.dedent(
            """
            #include <stdint.h>
            __attribute__((noinline)) static uint64_t step(uint64_t x) { return x * 6364136223846793005u + 1; }
            __attribute__((noinline)) static uint64_t inner(uint64_t x) { for (;;) x = step(x) ^ (x >> 7); return x; }
            uint64_t spin(uint64_t n) { uint64_t x = 1; for (uint64_t i = 0; i < n; i++) x = step(x); return x; }
            uint64_t forever(void) { return inner(3) + 1; }
            """
        ),
    )
    artifact = builder.build([src], options=CUTOFF, kind="library", models=[])
    seen = set()
    for _ in range(3):
        with Library(artifact, max_instr=50_000) as lib:
            first = lib.spin(1000)
            with pytest.raises(CodeStopped) as info:
                lib.forever()
            seen.add((first, info.value.stop))
    assert len(seen) == 1
    (first, stop), *_ = seen
    assert stop.where.function in ("inner", "step")
    assert "forever" in [f.function for f in stop.callers]
    with Library(artifact, max_instr=10**9) as lib:
        assert lib.spin(1000) == first  # limits that are not reached change nothing


# ---- In pytest sessions ----------------------------------------------------------------------

SESSION_C = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) static uint64_t step(uint64_t x) { return x * 6364136223846793005u + 1442695040888963407u; }
__attribute__((noinline)) static uint64_t parse_value(const char *s, int i);
__attribute__((noinline)) static uint64_t parse_object(const char *s, int i) { return parse_value(s, i + 1) + 1; }
__attribute__((noinline)) static uint64_t parse_value(const char *s, int i) {
    uint64_t x = 1;
    if (s[i] == '{') return parse_object(s, i) * 3;
    for (;;) x = step(x);
    return x;
}
uint64_t spin(uint64_t n) { uint64_t x = 1; for (uint64_t i = 0; i < n; i++) x = step(x); return x; }
uint64_t parse(const char *s) { return parse_value(s, 0); }
#ifdef PROGRAM
int main(int argc, char **argv) { printf("%llu\n", (unsigned long long)spin(strtoull(argv[1], 0, 10))); return 0; }
#endif
"""

SESSION_TESTS = """
import pytest

@pytest.mark.budget(max_instr=10_000, stop_at="10x")
def test_parser_loops(cbuild):
    lib = cbuild.library("lib.c")
    assert lib.spin(10) > 0
    lib.parse(b"{{x")

@pytest.mark.budget(max_instr=20_000, stop_at=20_000)
def test_within(cbuild):
    lib = cbuild.library("lib.c")
    lib.spin(100)

@pytest.mark.budget(stop_at=30_000)
def test_library_and_program_share_the_cutoff(cbuild):
    lib = cbuild.library("lib.c")
    prog = cbuild.program("lib.c", defines=["PROGRAM"])
    lib.spin(1000)
    assert prog.run(["100"]).returncode == 0
    prog.run(["100000000"])

@pytest.mark.budget(max_instr=10_000)
def test_config_factor(cbuild):
    cbuild.library("lib.c").spin(10**9)

@pytest.mark.budget(max_zkcycles=10_000, stop_at_zkcycles="3x")
def test_zk(cbuild):
    cbuild.library("lib.c").spin(10**9)
"""


def _stop_lines(result: pytest.RunResult) -> dict[str, str]:
    out = {}
    for line in result.outlines:
        m = re.match(r"^(test_cut\.py:\d+): (.*stopped after.*)$", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


@pytest.mark.parametrize("budget", ['max_instr=10_000, stop_at="3x"', "stop_at=30_000"])
def test_a_test_stopped_at_its_cutoff_has_a_row_with_the_count_at_the_stop(
    pytester: pytest.Pytester, budget: str
) -> None:
    """A stopped program run writes no counts, and a stopped library process loses what it counted:
    the test's row (and JSON entry) holds the whole test's count at the stop, earlier library calls
    included, as over its limit and partial (also where the cut-off is the limit, and the code
    stopped just before it)."""
    pytester.makefile(".c", lib=SESSION_C)
    pytester.makepyfile(
        test_cut=f"""
import pytest

@pytest.mark.budget({budget})
def test_program(cbuild):
    cbuild.library("lib.c").spin(1000)
    cbuild.program("lib.c", defines=["PROGRAM"]).run(["100000000"])

@pytest.mark.budget({budget})
def test_library(cbuild):
    lib = cbuild.library("lib.c")
    lib.spin(1000)
    lib.spin(100000)
"""
    )
    out = pytester.path / "out.json"
    result = pytester.runpytest("-p", "no:cacheprovider", f"--instrbudget-json={out}")
    result.assert_outcomes(failed=2)
    for name in ("test_program", "test_library"):
        result.stdout.fnmatch_lines([f"test_cut.py::{name} * over limit (partial)"])
        metric = json.loads(out.read_text())["tests"][f"test_cut.py::{name}"]["metrics"]["ir_instructions"]
        assert metric["status"] == "over limit"
        assert 29_900 <= metric["value"] <= 30_030, name  # the whole test's, not the last run's or call's alone


@pytest.mark.slow
def test_stops_in_sessions_are_identical_serial_and_under_xdist(pytester: pytest.Pytester) -> None:
    pytester.makefile(".c", lib=SESSION_C)
    pytester.makepyfile(test_cut=SESSION_TESTS)
    # Cut-offs on zk cycles need the estimate from IR (an executed build cannot stop the native code).
    toml = '[tool.instrbudget]\nmodels = ["ir-count", "zkvm"]\ncutoff = 5\n[tool.instrbudget.zkvm]\nexecute = false\n'
    pytester.makefile(".toml", pyproject=toml)
    runs = [pytester.runpytest_subprocess(*extra) for extra in ([], [], ["-n", "2"])]
    for result in runs:
        result.assert_outcomes(passed=1, failed=4)
    stops = [_stop_lines(result) for result in runs]
    assert stops[0] == stops[1] == stops[2]
    text = "\n".join(stops[0].values())
    assert re.search(
        r"parse\(\): stopped after [\d,]+ IR instructions \(cut-off 100,000, 10x max_instr\) in parse_value "
        r"\(lib\.c:10\), called from parse_object \(lib\.c:6\), called from parse_value \(lib\.c:9\), "
        r"called from parse_object \(lib\.c:6\), called from parse_value \(lib\.c:9\), called from parse \(lib\.c:14\)",
        text,
    ), text
    assert re.search(
        # Within one pass through the loop body of the limit (docs/cutoff.md).
        r"lib\.c \(100000000\): stopped after (?:29,9\d\d|30,0[0-2]\d) IR instructions "
        r"\(cut-off 30,000, stop_at=30,000\)",
        text,
    ), text
    assert re.search(
        r"spin\(\): stopped after 4\d,\d\d\d IR instructions \(cut-off 50,000, cutoff = 5x max_instr\) in ", text
    )
    assert re.search(
        r"stopped after [\d,]+ cycles \(zk_cycles\) \(cut-off 30,000, 3x max_zkcycles\) in spin \(lib\.c:13\); "
        r"zkVM segment 1 \(po2 20\)",
        text,
    ), text


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        ('max_instr=100, stop_at="ax"', r'a factor must be a number of at least 1 followed by x, such as "10x"'),
        ('stop_at="10x"', r"'10x' is a factor of max_instr, which this test does not set"),
        ("max_instr=100, stop_at=50", r"50 is below max_instr=100; code within its budget would be stopped"),
        ("stop_at=1.5", r'expected a number of instructions or a factor such as "10x", got 1.5'),
        ("stop_at_cycles=5", r"budget\(stop_at_cycles=\.\.\.\) belongs to the cost model 'pipeline', which is not"),
        ("stop_at_bogus=5", r"unknown keyword 'stop_at_bogus'.*accepted: .*stop_at,"),
    ],
)
def test_bad_cutoffs_are_usage_errors(pytester: pytest.Pytester, marker: str, message: str) -> None:
    pytester.makepyfile(f"import pytest\n\n@pytest.mark.budget({marker})\ndef test_x(cbuild):\n    pass\n")
    result = pytester.runpytest_subprocess()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.re_match_lines([f".*{message}.*"])


def test_bad_config_cutoff_names_the_key(pytester: pytest.Pytester) -> None:
    pytester.makefile(".toml", pyproject="[tool.instrbudget]\ncutoff = 0.5\n")
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest_subprocess()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.re_match_lines(
        [r".*\[tool.instrbudget\] cutoff: expected a factor of at least 1 \(such as 10\), got 0.5"]
    )


def test_config_cutoff_uses_the_baseline_when_no_limit_is_set(pytester: pytest.Pytester) -> None:
    pytester.makefile(".c", lib=SESSION_C)
    pytester.makefile(".toml", pyproject="[tool.instrbudget]\ncutoff = 2\n")
    pytester.makepyfile(
        test_cut="""
import os, pytest

@pytest.mark.budget(tolerance=0)
def test_grows(cbuild):
    cbuild.library("lib.c").spin(int(os.environ.get("N", "1000")))
"""
    )
    pytester.runpytest_subprocess("--instrbudget-update").assert_outcomes(passed=1)
    assert pytester.runpytest_subprocess().ret == 0
    import os

    os.environ["N"] = "1000000"
    try:
        result = pytester.runpytest_subprocess()
    finally:
        del os.environ["N"]
    result.assert_outcomes(failed=1)
    result.stdout.re_match_lines(
        [r".*spin\(\): stopped after [\d,]+ IR instructions \(cut-off [\d,]+, cutoff = 2x its baseline\) in .*"]
    )


MACHINE_TESTS = """
import pytest

@pytest.mark.budget(max_zkcycles=10_000, stop_at_zkcycles="3x")
def test_library(cbuild):
    lib = cbuild.library("lib.c")
    lib.spin(100)
    lib.spin(10**6)

@pytest.mark.budget(max_zkcycles=10_000, stop_at_zkcycles="3x")
def test_program_after_program(cbuild):
    prog = cbuild.program("lib.c", defines=["PROGRAM"])
    assert not prog.artifact.cutoff  # the RISC-V run checks a cut-off on zk cycles alone
    assert prog.run(["100"]).returncode == 0
    prog.run(["100000"])

@pytest.mark.budget(stop_at_zkcycles=50_000, timeout=60)
def test_program_never_ends(cbuild):
    cbuild.program("lib.c", defines=["PROGRAM"]).run(["100000000000000"])

@pytest.mark.budget(stop_at_zkcycles=10**9)
def test_within(cbuild):
    cbuild.library("lib.c").spin(1000)
"""


@pytest.mark.slow
def test_cutoffs_on_an_executing_models_clock_stop_the_riscv_build(pytester: pytest.Pytester) -> None:
    """With ``execute = true`` the RISC-V run stops at the zk cut-off: a library call's replay, and a
    program's run (which ends its native run too, here one that would run for hours); a test's
    calls and runs share the cut-off, counted on the clock (user plus paging), serial and under
    xdist alike."""
    pytester.makefile(".c", lib=SESSION_C)
    pytester.makepyfile(test_cut=MACHINE_TESTS)
    pytester.makefile(".toml", pyproject='[tool.instrbudget]\nmodels = ["ir-count", "zkvm"]\n')
    runs = [pytester.runpytest_subprocess(*extra) for extra in ([], ["-n", "2"])]
    for result in runs:
        result.assert_outcomes(passed=1, failed=3)
    stops = [_stop_lines(result) for result in runs]
    assert stops[0] == stops[1]
    assert len(stops[0]) == 3
    text = "\n".join(stops[0].values())
    within = r"3[0-3],\d\d\d"  # past the cut-off by less than one instruction's clock step (3,041)
    segment = r"; zkVM segment 1 \(po2 20\)"
    loop = r"(?:main \(lib\.c:1[3-7]\)|spin \(lib\.c:13\)|step \(lib\.c:4\))"  # wherever the clock passes it
    assert re.search(
        rf"spin\(\): stopped after {within} cycles \(zk_cycles\) \(cut-off 30,000, 3x max_zkcycles\) in spin "
        rf"\(lib\.c:13\){segment}",
        text,
    ), text
    assert re.search(
        rf"lib\.c \(100000\): stopped after {within} cycles \(zk_cycles\) \(cut-off 30,000, 3x max_zkcycles\) "
        rf"in {loop}{segment}",
        text,
    ), text
    assert re.search(
        r"lib\.c \(100000000000000\): stopped after 5[0-3],\d\d\d cycles \(zk_cycles\) "
        rf"\(cut-off 50,000, stop_at_zkcycles=50,000\) in {loop}{segment}",
        text,
    ), text


NARROW_TESTS = """
import pytest

@pytest.mark.budget(stop_at=10**9, stop_at_zkcycles=10**12, unavailable="skip")
def test_builds_measuring_part_of_the_test(cbuild):
    prog = cbuild.program("lib.c", defines=["PROGRAM"], models=["ir-count"])
    lib = cbuild.library("lib.c", models=["ir-count"])
    assert prog.artifact.cutoff and lib.artifact.cutoff
    assert prog.run(["100"]).returncode == 0
    lib.spin(100)

@pytest.mark.budget(stop_at=30_000, stop_at_zkcycles=10**12)
def test_the_cutoff_its_build_measures_still_stops(cbuild):
    cbuild.program("lib.c", defines=["PROGRAM"], models=["ir-count"]).run(["100000000"])
"""


def test_a_build_measuring_some_of_the_tests_models_checks_the_cutoffs_it_can(pytester: pytest.Pytester) -> None:
    """A build with ``models=`` that leave out a model the test cuts off on checks the other cut-offs:
    program runs as library calls do. The left-out model's limit is not checked, which the test's
    report says (here accepted with ``unavailable="skip"``)."""
    pytester.makefile(".c", lib=SESSION_C)
    pytester.makepyfile(test_cut=NARROW_TESTS)
    toml = '[tool.instrbudget]\nmodels = ["ir-count", "zkvm"]\n[tool.instrbudget.zkvm]\nexecute = false\n'
    pytester.makefile(".toml", pyproject=toml)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.re_match_lines(
        [
            r".*lib\.c \(100000000\): stopped after [\d,]+ IR instructions \(cut-off 30,000",
            r".*test_builds_measuring_part_of_the_test: no build of this test was made with the zkvm model",
        ]
    )
    assert "no limit can be set" not in result.stdout.str()
