"""Summaries say what happened: no praise for failed tests, errors shown as errors, labelled lines."""

from __future__ import annotations

import textwrap

import pytest

from pytest_instrbudget import report
from pytest_instrbudget import results as outcomes
from tests.test_plugin import WORK_C, results

#: One run records n=100; the next does less work (n=50) in every test.
TESTS = """\
import pytest

N = {n}

def test_fails_after_measuring(cbuild):
    assert cbuild.library("work.c").work(N) >= 0
    assert N == 100, "the test's own check fails"

@pytest.mark.budget(max_instr={limit})
def test_over_limit_while_another_metric_fell(cbuild):
    cbuild.library("work.c").work(N)

def test_passes(cbuild):
    cbuild.library("work.c").work(N)
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".c", work=WORK_C)
    pytester.makepyprojecttoml("[tool.instrbudget]\nopt_level = '1'\nmodels = ['ir-count', 'pipeline']\n")
    return pytester


def test_a_failed_test_is_never_listed_as_improved(project: pytest.Pytester) -> None:
    project.makepyfile(test_budget=TESTS.format(n=100, limit=10**6))
    _, doc = results(project, "--instrbudget-update")
    assert len(doc["tests"]) == 3
    project.makepyfile(test_budget=TESTS.format(n=50, limit=100))
    result, doc = results(project)
    result.assert_outcomes(passed=1, failed=2)
    tests = doc["tests"]
    assert tests["test_budget.py::test_passes"]["status"] == "improved"
    # Measured, then the test's own assertion failed: partial, compared with nothing.
    assert tests["test_budget.py::test_fails_after_measuring"]["status"] == "error"
    over = tests["test_budget.py::test_over_limit_while_another_metric_fell"]
    assert over["metrics"]["ir_instructions"]["status"] == "over limit"
    assert over["metrics"]["pipeline_cycles"]["status"] == "improved"
    # --instrbudget-update would write the over-limit test's costs too: the hint says so.
    result.stdout.fnmatch_lines(
        [
            "instrbudget: 1 test(s) improved on the baseline: test_budget.py::test_passes; pytest --instrbudget-update "
            "would "
            "also record the costs of the 1 test(s) instrbudget failed here: run it on the improved tests alone"
        ]
    )


def test_a_test_that_errored_before_measuring_shows_as_error(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_budget=textwrap.dedent(
            """
            def test_raises_before_calling(cbuild):
                cbuild.library("work.c")
                raise RuntimeError("before any call")
            """
        )
    )
    result, doc = results(project)
    result.assert_outcomes(failed=1)
    entry = doc["tests"]["test_budget.py::test_raises_before_calling"]
    assert entry["status"] == "error"
    assert {m["status"] for m in entry["metrics"].values()} == {"error"}
    result.stdout.re_match_lines([r"test_budget.py::test_raises_before_calling$", r"( +-){2} +error$"])  # no values
    assert " new" not in result.stdout.str()


def test_line_zero_is_labelled_in_line_breakdowns() -> None:
    metric = outcomes.MetricResult(
        "ir_instructions",
        "max_instr",
        100,
        None,
        None,
        0.0,
        "new",
        lines=[["LZ4_compress", "lz4.c:0", 60], ["LZ4_compress", "lz4.c:712", 40]],
    )
    lines = report.breakdown_lines([outcomes.TestResult("t.py::test", False, [metric])], "lines")
    assert any(line.strip().startswith("lz4.c (no source line) (LZ4_compress)") for line in lines)
    assert any(line.strip().startswith("lz4.c:712 (LZ4_compress)") for line in lines)
    assert not any("lz4.c:0" in line for line in lines)


def test_disabled_runs_cost_nothing_rather_than_raise(pytester: pytest.Pytester) -> None:
    pytester.makefile(".c", prog="int main(void) { return 0; }\n")
    pytester.makepyfile(
        test_prog=textwrap.dedent(
            """
            import pytest

            def test_run(cbuild):
                run = cbuild.program("prog.c").run()
                assert run.cost() == 0
                assert run.costs == {}
            """
        )
    )
    pytester.runpytest("-p", "no:cacheprovider", "--instrbudget-disable").assert_outcomes(passed=1)


def test_an_unknown_metric_names_the_measured_ones(pytester: pytest.Pytester) -> None:
    pytester.makefile(".c", prog="int main(void) { return 0; }\n")
    pytester.makepyfile(
        test_prog=textwrap.dedent(
            """
            import pytest

            def test_run(cbuild):
                with pytest.raises(LookupError, match="no metric 'cycles'; the active models measure: ir_instructions"):
                    cbuild.program("prog.c").run().cost("cycles")
            """
        )
    )
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


CXX_LIB = """\
#include <vector>
extern "C" int work(int n) { std::vector<int> v(n, 1); int s = 0; for (int x : v) s += x; return s; }
"""


@pytest.mark.slow
def test_the_first_cxx_build_notice_reaches_the_terminal_under_xdist(pytester: pytest.Pytester) -> None:
    pytester.makefile(".cpp", lib=CXX_LIB)
    pytester.makepyfile(
        test_lib="import pytest\n\n@pytest.mark.parametrize('n', [1, 2])\n"
        "def test_work(cbuild, n):\n    assert cbuild.library('lib.cpp').work(n) == n\n"
    )
    # A cache of its own: the notice is said for the first C++ build into a cache.
    pytester.makepyprojecttoml(f"[tool.instrbudget]\ncache_dir = '{pytester.path / 'cache'}'\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2")
    result.assert_outcomes(passed=2)
    output = result.stdout.str() + result.stderr.str()
    assert "instrbudget: first C++ build with this cache: zig compiles libc++ and libc++abi" in output
