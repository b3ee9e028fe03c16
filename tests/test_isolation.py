"""Library code that crashes, exits or hangs fails its own test only (real pytest sessions)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

CRASH_C = r"""
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

long work(long n) {
    volatile long s = 0;
    for (long i = 0; i < n; i++) s += i;
    return s;
}

static void say(const char *what) { fprintf(stderr, "about to %s\n", what); }

int segv(int *p) { say("segfault"); return *p + 1; }
void do_abort(void) { say("abort"); abort(); }
void do_exit(int status) { say("exit"); exit(status); }
void do__exit(int status) { _exit(status); }
void spin(void) { for (volatile int forever = 1; forever;) { } }
int divide(int a, int b) { return a / b; }
void trap(void) { __builtin_trap(); }
void bus(void) { raise(SIGBUS); }
long recurse(long n) {
    volatile char frame[512];
    frame[n % 512] = (char)n;
    return recurse(n + 1) + frame[0];
}
void ran_off(void) { say("run off the end"); __builtin_unreachable(); }
"""

#: (test name, the call, what the failure must say)
CASES = [
    (
        "segv",
        "lib.segv(None)",
        r"segv\(\) crashed: killed by SIGSEGV in segv \(crash\.c:14\) at address 0x0;.*about to segfault",
    ),
    ("abort", "lib.do_abort()", r"do_abort\(\) crashed: killed by SIGABRT.*about to abort"),
    ("exit0", "lib.do_exit(0)", r"do_exit\(\) called exit\(0\).*about to exit"),
    ("exit3", "lib.do_exit(3)", r"do_exit\(\) called exit\(3\)"),
    ("underscore_exit", "lib.do__exit(5)", r"do__exit\(\) called _exit\(5\)"),
    ("hang", "lib.spin()", r"spin\(\) ran past its 1 s timeout"),
    ("recursion", "lib.recurse(0)", r"recurse\(\) crashed: killed by SIGSEGV \(stack overflow\)"),
    ("fpe", "lib.divide(1, 0)", r"divide\(\) crashed: killed by SIGFPE in divide \(crash\.c:19\);"),
    ("ill", "lib.trap()", r"trap\(\) crashed: killed by SIGILL in trap \(crash\.c:20\);"),
    (
        "ran_off",
        "lib.ran_off()",
        r"ran_off\(\) crashed: killed by SIG(TRAP|ILL) past the end of ran_off \(crash\.c:27\): its code ran off",
    ),
    ("bus", "lib.bus()", r"bus\(\) crashed: killed by SIGBUS"),
]


def _session_tests() -> str:
    lines = [
        "import pytest",
        "",
        "@pytest.fixture",
        "def lib(cbuild):",
        "    return cbuild.library('crash.c')",
        "",
        "@pytest.mark.budget(max_instr=100_000)",
        "def test_00_before(lib):",
        "    assert lib.work(10) == 45",
    ]
    for n, (name, call, _) in enumerate(CASES, start=1):
        lines += [
            "",
            "@pytest.mark.budget(max_instr=100_000, timeout=1)",
            f"def test_{n:02}_{name}(lib):",
            "    assert lib.work(3) == 3",
            f"    {call}",
            "",
            "@pytest.mark.budget(max_instr=100_000)",
            f"def test_{n:02}_{name}_after(lib):",
            f"    assert lib.work({n}) == {n * (n - 1) // 2}",
        ]
    return "\n".join(lines) + "\n"


@pytest.fixture
def crashing(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".c", crash=CRASH_C)
    pytester.makepyfile(test_crash=_session_tests())
    pytester.makepyprojecttoml("[tool.instrbudget]\nopt_level = '1'\n")
    return pytester


def _baseline(pytester: pytest.Pytester) -> dict[str, object]:
    doc = json.loads((pytester.path / ".instrbudget" / "baseline.json").read_text())
    return {key.split("::")[-1]: value for key, value in doc["tests"].items()}


@pytest.mark.parametrize(
    "workers", [pytest.param([], id="serial"), pytest.param(["-n", "2"], id="xdist", marks=pytest.mark.slow)]
)
def test_crashes_fail_only_their_own_test(crashing: pytest.Pytester, workers: list[str]) -> None:
    result = crashing.runpytest_subprocess("-p", "no:cacheprovider", "--instrbudget-update", "-rf", *workers)
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed") == len(CASES), result.stdout.str()
    assert outcomes.get("passed") == len(CASES) + 1
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    text = re.sub(r"\s+", " ", result.stdout.str())
    assert "short test summary info" in text
    for n, (name, _, message) in enumerate(CASES, start=1):
        failure = re.search(rf"_+ test_{n:02}_{name} _+(.*?)(?:_{{5,}} test_|= short test summary)", text)
        assert failure, f"no failure section for test_{n:02}_{name}"
        assert re.search(message, failure.group(1)), failure.group(1)[-2000:]
        # What the library wrote to stderr is in pytest's own section, not quoted again.
        assert "--- stderr (last lines) ---" not in failure.group(1), failure.group(1)[-2000:]
    assert text.count("about to segfault") == 1
    measured = _baseline(crashing)
    # Every test that ran to the end is measured; the crashed ones are not.
    after = {f"test_{n:02}_{name}_after" for n, (name, _, _) in enumerate(CASES, 1)}
    assert set(measured) == {"test_00_before"} | after


@pytest.mark.parametrize(
    "shown",
    [
        pytest.param(["-s"], id="not-captured"),
        pytest.param(["--show-capture=stdout"], id="not-shown"),
        pytest.param(["--junitxml=out.xml"], id="junit-without-stderr"),
    ],
)
def test_a_crash_quotes_the_librarys_stderr_where_a_report_would_not_show_it(
    crashing: pytest.Pytester, shown: list[str]
) -> None:
    result = crashing.runpytest_subprocess("-p", "no:cacheprovider", "-k", "segv", *shown)
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(
        ["*segv() crashed: killed by SIGSEGV in segv (crash.c:14)*", "--- stderr (last lines) ---"]
    )


@pytest.mark.slow
def test_crashed_xdist_worker_keeps_results_of_finished_tests(pytester: pytest.Pytester) -> None:
    pytester.makefile(".c", crash=CRASH_C)
    pytester.makepyfile(
        test_worker="""
import os
import pytest

@pytest.mark.budget(max_instr=100_000)
@pytest.mark.parametrize("n", range(6))
def test_work(cbuild, n):
    assert cbuild.library("crash.c").work(n) == n * (n - 1) // 2

def test_z_kills_its_worker():
    os._exit(1)
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "--instrbudget-update")
    result.assert_outcomes(passed=6, failed=1)
    result.stdout.fnmatch_lines(["*worker 'gw*' crashed while running*test_z_kills_its_worker*"])
    assert set(_baseline(pytester)) == {f"test_work[{n}]" for n in range(6)}


POINTER_TABLE_C = r"""
#include <stdint.h>
#include <stdlib.h>

/* A hash table keyed by the addresses of the nodes it holds: its work depends on where malloc put them. */
struct node { struct node *next; long value; };
static struct node *slots[61];

long fill_and_probe(int n) {
    struct node *all[256];
    long probes = 0;
    for (int i = 0; i < n; i++) {
        all[i] = malloc(24 + (size_t)(i % 7) * 8);
        all[i]->value = i;
        size_t h = ((uintptr_t)all[i] >> 4) % 61;
        all[i]->next = slots[h];
        slots[h] = all[i];
    }
    for (int i = 0; i < n; i++) {
        size_t h = ((uintptr_t)all[i] >> 4) % 61;
        for (struct node *p = slots[h]; p != all[i]; p = p->next) probes++;
    }
    return probes;
}
"""


@pytest.mark.slow
def test_address_dependent_library_counts_identically_across_sessions(pytester: pytest.Pytester) -> None:
    pytester.makefile(".c", table=POINTER_TABLE_C)
    pytester.makepyfile(
        test_table="""
import pytest

@pytest.mark.budget(max_instr=10_000_000)
def test_probe(cbuild):
    assert cbuild.library("table.c").fill_and_probe(200) >= 0
"""
    )
    totals = []
    for run in range(3):
        out = Path(pytester.path, f"run{run}.json")
        pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--instrbudget-json={out}").assert_outcomes(passed=1)
        (test,) = json.loads(out.read_text())["tests"].values()
        totals.append(test["metrics"])
    assert totals[0] == totals[1] == totals[2]


def test_a_budgeted_test_that_catches_its_librarys_death_fails(pytester: pytest.Pytester) -> None:
    """A timeout, a crash or a cut-off the test caught left the counts incomplete (status error), and
    the test passed: its budget was never checked. A test without a budget may catch them."""
    pytester.makefile(
        ".c",
        dies="""
#include <stdint.h>
#include <unistd.h>
volatile int64_t sink;
int64_t spin(void) { for (;;) sink++; }
int64_t work(int64_t n) { int64_t s = 0; for (int64_t i = 0; i < n; i++) { s += i; sink = s; } return s; }
int die(int64_t n) { work(n); _exit(3); }
""",
    )
    pytester.makepyfile(
        test_dies="""
import pytest

@pytest.mark.budget(max_instr=10_000_000, timeout=2)
def test_timeout(cbuild):
    with pytest.raises(cbuild.LibraryTimeout):
        cbuild.library("dies.c").spin()

@pytest.mark.budget(max_instr=10_000_000)
def test_exit(cbuild):
    with pytest.raises(cbuild.LibraryCrashed):
        cbuild.library("dies.c").die(10)

@pytest.mark.budget(max_instr=1_000, stop_at="10x")
def test_stop_swallowed(cbuild):
    try:
        cbuild.library("dies.c").work(1_000_000)
    except Exception:
        pass

def test_unbudgeted(cbuild):
    with pytest.raises(cbuild.LibraryCrashed):
        cbuild.library("dies.c").die(10)

@pytest.mark.budget(max_instr=10_000_000)
def test_program_timeout(cbuild):
    with pytest.raises(cbuild.ProgramTimeout):
        cbuild.program("loops.c").run(["0"], timeout=1)

@pytest.mark.budget(max_instr=1_000, stop_at="2x")
def test_program_stop_swallowed(cbuild):
    with pytest.raises(Exception):
        cbuild.program("loops.c").run(["100000"])
"""
    )
    pytester.makefile(
        ".c",
        loops="""
#include <stdlib.h>
volatile long sink;
int main(int argc, char **argv) {
    long n = atol(argv[1]);
    for (long i = 0; n == 0 || i < n; i++) sink += i; /* 0: for ever */
    return 0;
}
""",
    )
    pytester.makepyprojecttoml("[tool.instrbudget]\ntimeout = 2\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=5, passed=1)
    result.stdout.fnmatch_lines(
        [
            "*instrbudget: the test passed, but its counts are incomplete (dies.c: spin() ran past its 2 s timeout)*"
            "@pytest.mark.budget was not checked*",
            "*instrbudget: the test passed, but its counts are incomplete (dies.c: die() called _exit(3))*",
            "*instrbudget: the test passed, but its counts are incomplete (dies.c: work() was stopped at its cut-off)*",
            "*instrbudget: the test passed, but its counts are incomplete (loops.c: a program run timed out)*",
            "*instrbudget: the test passed, but its counts are incomplete (loops.c: a program run stopped at the "
            "cut-off)*",
        ],
        consecutive=False,
    )


MID_LOOP_C = r"""
#include <stdlib.h>

/* The numbers of a comma-separated list, added; the read at position bad_at goes to address
   0x1000 instead (an int taken as a pointer): a crash in the middle of the loop. */
int sum_csv(const char *s, long bad_at) {
    int total = 0, cur = 0;
    for (long i = 0;; i++) {
        const char *p = i == bad_at ? (const char *)0x1000 : s + i;
        if (!*p) break;
        if (*p == ',') { total += cur; cur = 0; }
        else cur = cur * 10 + (*p - '0');
    }
    return total + cur;
}

/* The same walk, then abort(): a crash inside a call, where the counters are exact. */
int sum_then_abort(const char *s) {
    sum_csv(s, -1);
    abort();
}
"""

#: A conftest that has the ir-count model note each total it is given (and its least block count).
RECORDING_CONFTEST = """
import os
from cbuild.models import IrCountModel
from cbuild.models.base import CostModel

def evaluate(self, counts):
    costs = CostModel.evaluate(self, counts)
    test = os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0]
    with open("seen.txt", "a") as out:
        out.write(f"{test} {costs[0].total} {min(counts.counts, default=0)}\\n")
    return costs

IrCountModel.evaluate = evaluate
"""


def test_a_crash_mid_loop_leaves_counts_unknown_not_wrong(pytester: pytest.Pytester) -> None:
    """A call that crashes in counted code between two calls, after much work, leaves counters
    that disagree with the library's running total (the counters are exact only at calls and
    returns; the counts solved from them are wrong, negative ones included): the row shows `-`
    with status error and the message says why, with a budget or without, and the ir-count model
    is never given them. A crash inside a call the code made (abort()) keeps its counts."""
    pytester.makefile(".c", tok=MID_LOOP_C)
    pytester.makeconftest(RECORDING_CONFTEST)
    pytester.makepyfile(
        test_tok="""
import pytest

CSV = b"12,34," * 50

def test_mid_loop(cbuild):
    lib = cbuild.library("tok.c")
    assert lib.sum_csv(CSV, -1) == 2300
    lib.sum_csv(CSV, 200)

@pytest.mark.budget(max_instr=1000)
def test_mid_loop_budget(cbuild):
    lib = cbuild.library("tok.c")
    assert lib.sum_csv(CSV, -1) == 2300
    lib.sum_csv(CSV, 200)

@pytest.mark.budget(max_instr=1000)
def test_in_a_call(cbuild):
    cbuild.library("tok.c").sum_then_abort(CSV)
"""
    )
    pytester.makepyprojecttoml("[tool.instrbudget]\nopt_level = '2'\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--instrbudget-json=out.json")
    result.assert_outcomes(failed=3)
    unknown = (
        "; its counts are unknown: the counters and the running total disagree (it crashed between two calls, "
        "where they are not exact, or while another thread was counting)"
    )
    text = re.sub(r"\s+", " ", result.stdout.str())
    for name in ("test_mid_loop", "test_mid_loop_budget"):
        assert (
            f"LibraryCrashed: sum_csv() crashed: killed by SIGSEGV in sum_csv (tok.c:9) at address 0x1000; "
            f"the library's process ended{unknown}" in text
        ), text[-3000:]
        assert re.search(rf"test_tok\.py::{name} +- +error ", text), text[-3000:]
    assert f"sum_then_abort() crashed: killed by SIGABRT; the library's process ended{unknown}" not in text
    assert "cost model 'ir-count'" not in text, text[-3000:]
    assert "not checked" not in text, text[-3000:]
    tests = json.loads((pytester.path / "out.json").read_text())["tests"]
    for name in ("test_mid_loop", "test_mid_loop_budget"):
        assert tests[f"test_tok.py::{name}"]["metrics"]["ir_instructions"]["value"] == 0
    kept = tests["test_tok.py::test_in_a_call"]["metrics"]["ir_instructions"]["value"]
    assert kept > 300 * 5  # the walk over 300 bytes, counted before abort()
    result.stdout.fnmatch_lines([f"test_tok.py::test_in_a_call *{kept:,}*over limit (partial)*"])
    seen = [line.split() for line in (pytester.path / "seen.txt").read_text().splitlines()]
    assert all(int(total) >= 0 and int(least) >= 0 for _, total, least in seen), seen
    # The crashed calls' counts reach no model; the call that crashed inside abort() keeps its own.
    assert {test.split("::")[-1] for test, total, _ in seen if int(total)} == {"test_in_a_call"}, seen
    assert [int(total) for test, total, _ in seen if test.endswith("::test_in_a_call") and int(total)] == [kept]
