"""The pytest plugin end to end, through real pytest sessions (pytester)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_counted_libc import QUADRATIC_C

WORK_C = """\
#include <stddef.h>
/* Sums 0..n-1; `extra` adds a second pass, to play a regression. */
long work(long n) {
    volatile long s = 0;
    for (long i = 0; i < n; i++) s += i;
    return s;
}
long helper(long n) { return work(n) + 1; }
"""

#: Same results, more work per iteration.
SLOWER_WORK_C = WORK_C.replace("s += i;", "{ s += i; s ^= 0; }")

TESTS = """\
import pytest

@pytest.fixture
def lib(cbuild):
    return cbuild.library("work.c")

@pytest.mark.budget(max_instr=100_000)
def test_work(lib):
    assert lib.work(100) == 4950

@pytest.mark.budget(max_instr=100_000)
def test_helper(lib):
    assert lib.helper(10) == 46

def test_unbudgeted(lib):
    assert lib.work(5) == 10
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".c", work=WORK_C)
    pytester.makepyfile(test_budget=TESTS)
    pytester.makepyprojecttoml("[tool.instrbudget]\nopt_level = '1'\n")
    return pytester


def results(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict]:  # type: ignore[type-arg]
    out = pytester.path / "results.json"
    result = pytester.runpytest("-p", "no:cacheprovider", f"--instrbudget-json={out}", *args)
    return result, json.loads(out.read_text()) if out.exists() else {}


def baseline_path(pytester: pytest.Pytester) -> Path:
    return pytester.path / ".instrbudget" / "baseline.json"


def value(doc: dict, test: str) -> int:  # type: ignore[type-arg]
    return int(doc["tests"][f"test_budget.py::{test}"]["metrics"]["ir_instructions"]["value"])


def test_plugin_summary_table_and_new_entries(project: pytest.Pytester) -> None:
    result, doc = results(project)
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        [
            "*instrbudget*",
            "test * ir_instructions  status",
            f"test_budget.py::test_helper * {value(doc, 'test_helper'):,}  new",
            f"test_budget.py::test_unbudgeted * {value(doc, 'test_unbudgeted'):,}  new",
            f"test_budget.py::test_work * {value(doc, 'test_work'):,}  new",
            # Said at the end too: a CI job whose checkout lacks the file compared nothing.
            "instrbudget: no baseline yet (.instrbudget/baseline.json): this run compared nothing with one; "
            "record it with pytest --instrbudget-update and commit it",
        ]
    )
    assert not baseline_path(project).exists()  # nothing written without --instrbudget-update
    assert doc["version"] == 2
    assert doc["models"] == ["ir-count"]
    work = doc["tests"]["test_budget.py::test_work"]
    assert work["budgeted"] is True
    assert work["metrics"]["ir_instructions"]["functions"]["work"] == value(doc, "test_work")
    assert doc["tests"]["test_budget.py::test_unbudgeted"]["budgeted"] is False


def test_plugin_header_names_models_and_toolchain(project: pytest.Pytester) -> None:
    result = project.runpytest()
    result.stdout.fnmatch_lines(
        [
            "instrbudget: models ir-count",
            "instrbudget: clang 22.*, llvm 22.*, *-linux-*, engine v4",
            "instrbudget: baseline .instrbudget/baseline.json (none yet)",
        ]
    )


def test_plugin_counts_are_identical_across_runs(project: pytest.Pytester) -> None:
    _, first = results(project)
    _, second = results(project)
    assert first["tests"] == second["tests"]


def test_plugin_loop_cost_scales_with_trip_count(pytester: pytest.Pytester) -> None:
    pytester.makefile(".c", work=WORK_C)
    pytester.makepyfile(
        test_budget="""
import pytest

@pytest.mark.parametrize("n", [8, 16, 24])
def test_n(cbuild, n):
    cbuild.library("work.c", opt_level=0).work(n)
"""
    )
    _, doc = results(pytester)
    v = [doc["tests"][f"test_budget.py::test_n[{n}]"]["metrics"]["ir_instructions"]["value"] for n in (8, 16, 24)]
    assert v[2] - v[1] == v[1] - v[0] > 0


def test_plugin_over_limit_fails_with_costliest_functions(pytester: pytest.Pytester) -> None:
    pytester.makefile(".c", work=WORK_C)
    pytester.makepyfile(
        test_budget="""
import pytest

@pytest.mark.budget(max_instr=50)
def test_tight(cbuild):
    cbuild.library("work.c").work(1000)
"""
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*_ test_tight _*",
            "instrbudget: ir_instructions * > max_instr=50",
            "*ir_instructions: * exceeds max_instr=50 by *",
            "*costliest functions:",
            "*work*",
        ]
    )
    assert "Traceback" not in result.stdout.str()


def test_plugin_over_limit_in_the_baseline_still_says_where_the_cost_is(pytester: pytest.Pytester) -> None:
    """A test over its limit at the cost its baseline holds did not grow: its failure shows where
    the cost is, as before it was in the baseline; where that is library code (strlen in a loop's
    condition), the project's own costliest lines too, the loop's condition among them (the
    example in docs/attribution.md)."""
    pytester.makefile(".c", quadratic=QUADRATIC_C)
    pytester.makepyfile(
        test_budget="""
import pytest

@pytest.mark.budget(max_instr=5000)
def test_upper(cbuild):
    assert cbuild.program("quadratic.c", opt_level=0).run([400]).returncode == 0
"""
    )
    expected = [
        "instrbudget: ir_instructions * > max_instr=5,000",
        "*ir_instructions: * exceeds max_instr=5,000 by *",
        "*costliest functions:",
        "*strlen ?libc?*",
        "*hottest lines of strlen ?libc?:",
        # Exact, from the block counts: the loop's condition, once more than the loop's 400 rounds.
        "  calls of it from the project's own code:",
        "    quadratic.c:8  40[12] calls  main",  # 402 for 401 rounds, below
        "*hottest lines of the project's own code:",
        "*quadratic.c:9 *main",
        "*quadratic.c:8 *main",  # the loop's condition, which calls strlen
    ]
    first = pytester.runpytest()
    first.assert_outcomes(failed=1)
    first.stdout.fnmatch_lines(expected)
    pytester.runpytest("--instrbudget-update").assert_outcomes(failed=1)
    assert "test_budget.py::test_upper" in json.loads(baseline_path(pytester).read_text())["tests"]
    again = pytester.runpytest()
    again.assert_outcomes(failed=1)
    again.stdout.fnmatch_lines(expected)
    # Grown, but within the tolerance: still over its limit for the cost it had.
    test_file = pytester.path / "test_budget.py"
    test_file.write_text(test_file.read_text().replace("max_instr=5000", "max_instr=5000, tolerance=5"))
    test_file.write_text(test_file.read_text().replace("run([400])", "run([401])"))
    grown = pytester.runpytest()
    grown.assert_outcomes(failed=1)
    grown.stdout.fnmatch_lines(expected)
    assert "grew most" not in grown.stdout.str()


def test_plugin_baseline_workflow_regression_then_update(project: pytest.Pytester) -> None:
    result, before = results(project, "--instrbudget-update")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*baseline * written: 3 added, 0 changed, 0 pruned"])
    saved = baseline_path(project).read_text()
    doc = json.loads(saved)
    assert sorted(doc["tests"]) == [
        "test_budget.py::test_helper",
        "test_budget.py::test_unbudgeted",
        "test_budget.py::test_work",
    ]
    assert doc["fingerprint"]["clang"].startswith("22.")
    assert saved == json.dumps(doc, indent=2, sort_keys=True) + "\n"

    result, again = results(project)
    result.assert_outcomes(passed=3)
    assert {t["status"] for t in again["tests"].values()} == {"ok"}

    # More work in `work`: the budgeted tests regress and name the function.
    (project.path / "work.c").write_text(SLOWER_WORK_C)
    result, after = results(project)
    result.assert_outcomes(failed=2, passed=1)
    result.stdout.fnmatch_lines(
        [
            "instrbudget: ir_instructions +*% on the baseline",
            "*ir_instructions: * -> * (+*%; tolerance 0%) against the baseline",
            "*functions whose cost grew most:",
            "*work  +*",
            "*accept it with: pytest --instrbudget-update",
        ]
    )
    assert after["tests"]["test_budget.py::test_unbudgeted"]["status"] == "regressed"
    assert baseline_path(project).read_text() == saved  # never written without the flag

    # Another baseline and model set: the command that accepts the cost names both.
    second = ["--instrbudget-baseline=other baseline.json", "--instrbudget-model=ir-count"]
    (project.path / "other baseline.json").write_text(saved)
    result, _ = results(project, *second)
    result.stdout.fnmatch_lines(
        [
            "*accept it with: pytest --instrbudget-update '--instrbudget-baseline=other baseline.json' "
            "--instrbudget-model=ir-count"
        ]
    )
    assert (project.path / "other baseline.json").read_text() == saved

    result, accepted = results(project, "--instrbudget-update")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*baseline * written: 0 added, 3 changed, 0 pruned"])
    # Its rows say the growth was accepted, not "ok" beside +30%.
    assert {t["status"] for t in accepted["tests"].values()} == {"accepted"}
    result.stdout.fnmatch_lines(["test_budget.py::test_work * +*% * accepted"])
    result, final = results(project)
    result.assert_outcomes(passed=3)
    assert value(final, "test_work") > value(before, "test_work")


def test_plugin_improvement_passes_with_hint(project: pytest.Pytester) -> None:
    (project.path / "work.c").write_text(SLOWER_WORK_C)
    results(project, "--instrbudget-update")
    (project.path / "work.c").write_text(WORK_C)
    result, doc = results(project)
    result.assert_outcomes(passed=3)
    assert doc["tests"]["test_budget.py::test_work"]["status"] == "improved"
    result.stdout.fnmatch_lines(["*improved on the baseline; record it with pytest --instrbudget-update: test_budget*"])
    # With another baseline, the hint names it, as a failure's "accept it with" does.
    results(project, "--instrbudget-baseline=other.json", "--instrbudget-update")
    (project.path / "work.c").write_text(SLOWER_WORK_C)
    results(project, "--instrbudget-baseline=other.json", "--instrbudget-update")
    (project.path / "work.c").write_text(WORK_C)
    result, _ = results(project, "--instrbudget-baseline=other.json")
    result.stdout.fnmatch_lines(
        ["*improved on the baseline; record it with pytest --instrbudget-update --instrbudget-baseline=other.json: *"]
    )


@pytest.mark.parametrize(
    ("marker", "cli", "config", "fails"),
    [
        ("", None, None, True),  # default 0%
        ("", None, "tolerance = 50", False),
        ("", "--instrbudget-tolerance=50%", "tolerance = 0", False),
        (", tolerance=0", "--instrbudget-tolerance=50", None, True),  # marker beats CLI
        (", tolerance='50%'", None, None, False),
    ],
)
def test_plugin_tolerance_precedence(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    marker: str,
    cli: str | None,
    config: str | None,
    fails: bool,
) -> None:
    pytester.makefile(".c", work=WORK_C)
    pytester.makepyfile(
        test_budget=f"""
import os
import pytest

@pytest.mark.budget(max_instr=10**9{marker})
def test_work(cbuild):
    cbuild.library("work.c", opt_level=0).work(int(os.environ.get("N", "100")))
"""
    )
    pytester.makepyprojecttoml("[tool.instrbudget]\n" + (config or ""))
    pytester.runpytest("--instrbudget-update").assert_outcomes(passed=1)
    monkeypatch.setenv("N", "120")  # about 20% more work
    result = pytester.runpytest(*([cli] if cli else []))
    result.assert_outcomes(**({"failed": 1} if fails else {"passed": 1}))


def test_plugin_stale_entries_reported_then_pruned(project: pytest.Pytester) -> None:
    results(project, "--instrbudget-update")
    project.makepyfile(test_budget=TESTS.replace("def test_helper", "def _gone"))
    result, _ = results(project)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "*1 baseline entry for tests that no longer exist (remove with --instrbudget-prune):",
            "*test_budget.py::test_helper",
        ]
    )
    assert "test_budget.py::test_helper" in baseline_path(project).read_text()
    result, _ = results(project, "--instrbudget-prune")
    result.stdout.fnmatch_lines(["*written: 0 added, 0 changed, 1 pruned"])
    assert "test_helper" not in baseline_path(project).read_text()


def test_plugin_partial_run_does_not_report_other_files_as_stale(project: pytest.Pytester) -> None:
    project.makepyfile(test_other="def test_other(cbuild):\n    cbuild.library('work.c').work(3)\n")
    results(project, "--instrbudget-update")
    result, _ = results(project, "test_other.py")
    assert "no longer exist" not in result.stdout.str()


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_plugin_last_failed_run_prunes_nothing_else(project: pytest.Pytester, workers: list[str]) -> None:
    """``--lf`` collects a failing file's failed tests alone, without deselecting the rest: they
    still exist, so their entries stay (they were pruned and listed as gone)."""
    assert project.runpytest("--instrbudget-update").ret == pytest.ExitCode.OK
    before = json.loads(baseline_path(project).read_text())["tests"]
    assert len(before) == 3
    project.makepyfile(test_budget=TESTS.replace("== 46", "== 47"))
    project.runpytest().assert_outcomes(passed=2, failed=1)  # the cache records the failure
    result = project.runpytest("--lf", "--instrbudget-update", "--instrbudget-prune", *workers)
    result.assert_outcomes(failed=1)
    assert "no longer exist" not in result.stdout.str()
    assert "pruned" not in result.stdout.str()
    assert json.loads(baseline_path(project).read_text())["tests"].keys() == before.keys()


def test_plugin_one_test_by_node_id_through_a_symlinked_checkout_prunes_nothing_else(
    pytester: pytest.Pytester,
) -> None:
    """``pytest link/test_budget.py::test_work --instrbudget-prune``, ``link`` a symlink to the
    checkout: the file's other tests are not gone (it was collected in part), so their entries stay."""
    real = pytester.mkdir("checkout")
    (real / "work.c").write_text(WORK_C)
    (real / "test_budget.py").write_text(TESTS)
    (real / "pyproject.toml").write_text("[tool.instrbudget]\nopt_level = '1'\n")
    (pytester.path / "link").symlink_to(real)
    assert pytester.runpytest("-p", "no:cacheprovider", "link", "--instrbudget-update").ret == pytest.ExitCode.OK
    baseline = real / ".instrbudget" / "baseline.json"
    before = json.loads(baseline.read_text())["tests"]
    assert len(before) == 3
    result = pytester.runpytest("-p", "no:cacheprovider", "link/test_budget.py::test_work", "--instrbudget-prune")
    result.assert_outcomes(passed=1)
    assert "no longer exist" not in result.stdout.str()
    assert "pruned" not in result.stdout.str()
    assert json.loads(baseline.read_text())["tests"] == before


def test_plugin_corrupt_baseline_is_a_usage_error_and_kept(project: pytest.Pytester) -> None:
    path = baseline_path(project)
    path.parent.mkdir(parents=True)
    path.write_text('{"version": 1, "tests": {,}}')
    result = project.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*instrbudget: baseline {path} is not valid JSON (line 1, column 26*"])
    assert path.read_text() == '{"version": 1, "tests": {,}}'


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '{\n<<<<<<< HEAD\n  "version": 2\n=======\n  "version": 1\n>>>>>>> main\n}\n',
            "has merge conflict markers (line 2)",
        ),
        ("", "is empty"),
        ("\n  \n", "is empty"),
        (
            '{"version": 2, "collected": [], "metric_models": {}, "tests": {}}',
            "does not have the expected layout (it is a run's --instrbudget-json document, not a baseline)",
        ),
    ],
)
def test_plugin_baseline_with_conflict_markers_or_empty_says_so(
    project: pytest.Pytester, text: str, message: str
) -> None:
    path = baseline_path(project)
    path.parent.mkdir(parents=True)
    path.write_text(text)
    result = project.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*instrbudget: baseline {path} {message}*"])
    assert path.read_text() == text


def test_plugin_hand_edited_baseline_with_wrong_types_names_the_file(project: pytest.Pytester) -> None:
    results(project, "--instrbudget-update")
    path = baseline_path(project)
    doc = json.loads(path.read_text())
    doc["tests"]["test_budget.py::test_work"]["ir_instructions"]["total"] = "lots"
    path.write_text(json.dumps(doc))
    result = project.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"*baseline {path} does not have the expected layout*total 'lots' is not a non-negative integer*"]
    )


def test_plugin_other_toolchain_baseline_is_not_comparable(project: pytest.Pytester) -> None:
    results(project, "--instrbudget-update")
    path = baseline_path(project)
    doc = json.loads(path.read_text())
    doc["fingerprint"]["clang"] = "21.1.0"
    for entry in doc["tests"].values():
        entry["ir_instructions"]["total"] = 1  # would be a huge regression if compared
    path.write_text(json.dumps(doc))
    result, out = results(project)
    result.assert_outcomes(passed=3)
    assert {t["status"] for t in out["tests"].values()} == {"not comparable"}
    result.stdout.fnmatch_lines(
        [
            "*made with another toolchain or other build settings (differs in: clang); costs are not*",
            # The budgeted tests' comparisons did not happen: the run fails (it exited 0, found by an
            # audit of the CI docs: a runner with another clang went green with no baseline check).
            "*2 budgeted test(s) were not compared with the baseline, so the run fails:",
            "instrbudget:   test_budget.py::test_helper",
            "instrbudget:   test_budget.py::test_work",
        ]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    summary = project.path / "summary.md"  # a CI job page says so too
    project.runpytest("-p", "no:cacheprovider", f"--instrbudget-markdown={summary}")
    assert (
        "> 2 budgeted test(s) were not compared with the baseline, so the run fails: "
        "`test_budget.py::test_helper`, `test_budget.py::test_work`"
    ) in summary.read_text()
    # The unbudgeted test alone never fails on cost; an update rewrites the baseline and passes.
    assert project.runpytest("-p", "no:cacheprovider", "-k", "unbudgeted").ret == pytest.ExitCode.OK
    assert project.runpytest("-p", "no:cacheprovider", "--instrbudget-update").ret == pytest.ExitCode.OK
    assert project.runpytest("-p", "no:cacheprovider").ret == pytest.ExitCode.OK


def test_plugin_a_model_added_to_the_session_leaves_the_other_models_costs_checked(
    project: pytest.Pytester,
) -> None:
    """A model added to the session (here heap) changes the baseline's recorded models, not
    ir-count's parameters: ir_instructions still compares, and a regression fails, where the whole
    baseline read "not comparable" and the run passed."""
    results(project, "--instrbudget-update")
    project.makefile(".c", work=SLOWER_WORK_C)
    result, doc = results(project, "--instrbudget-model=ir-count", "--instrbudget-model=heap")
    result.assert_outcomes(passed=1, failed=2)
    work = doc["tests"]["test_budget.py::test_work"]["metrics"]
    assert work["ir_instructions"]["status"] == "regressed"
    assert {m["status"] for name, m in work.items() if name != "ir_instructions"} == {"new"}
    assert "not comparable" not in result.stdout.str()


def test_plugin_prune_alone_under_another_configuration_removes_only_tests_that_are_gone(
    project: pytest.Pytester,
) -> None:
    """--instrbudget-prune without --instrbudget-update in a session whose models differ from the
    baseline's wrote an empty baseline: every entry was dropped as "not measured" and nothing was
    added back. It removes the entries of tests that no longer exist, and keeps the rest and the
    configuration they were measured with."""
    results(project, "--instrbudget-update")
    path = baseline_path(project)
    before = json.loads(path.read_text())
    project.makepyfile(test_budget=TESTS.replace("def test_helper(lib)", "def helper_gone(lib)"))
    result = project.runpytest(
        "-p", "no:cacheprovider", "--instrbudget-model=ir-count", "--instrbudget-model=heap", "--instrbudget-prune"
    )
    result.assert_outcomes(passed=2)
    after = json.loads(path.read_text())
    assert after["fingerprint"] == before["fingerprint"]
    assert set(after["tests"]) == set(before["tests"]) - {"test_budget.py::test_helper"}
    for nodeid, entry in after["tests"].items():
        assert entry == before["tests"][nodeid]
    result.stdout.fnmatch_lines(["*instrbudget: baseline*1 pruned*"])


def test_plugin_update_of_part_of_the_suite_with_other_models_names_what_differs(project: pytest.Pytester) -> None:
    """A one-off model on part of the suite cannot rewrite the baseline's fingerprint under the
    tests it did not run: the refusal names what differs, not the whole fingerprint, and where
    such a run keeps its costs."""
    results(project, "--instrbudget-update")
    path = baseline_path(project)
    before = path.read_text()
    result = project.runpytest(
        "-p", "no:cacheprovider", "-k", "test_unbudgeted", "--instrbudget-model=heap", "--instrbudget-update"
    )
    result.stdout.fnmatch_lines(
        [
            "*baseline not written: baseline * was made with another toolchain or other models"
            " (models: ir-count version=1 in the baseline, heap * now) and 2 of its entries were not measured*"
            "keeps a baseline of its own with --instrbudget-baseline=PATH*"
            "add --instrbudget-prune to drop the 2 entries not measured (tests that still exist then have no entry:*",
        ]
    )
    assert "clang" not in result.stdout.str().split("baseline not written")[1].split("\n")[0]
    assert path.read_text() == before
    # The update asked for did not happen: the run fails, as `cbuild baseline update` does.
    assert result.ret == pytest.ExitCode.TESTS_FAILED


@pytest.mark.parametrize("option", ["--instrbudget-update", "--instrbudget-prune"])
def test_plugin_disable_with_update_or_prune_is_a_usage_error(project: pytest.Pytester, option: str) -> None:
    # --instrbudget-disable measures nothing: the run left the baseline as it was, said nothing
    # and exited 0.
    result = project.runpytest("-p", "no:cacheprovider", "--instrbudget-disable", option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"*instrbudget: --instrbudget-disable measures nothing, so {option} would leave the baseline as it is*"]
    )


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (
            "opt_levle = 2",
            "has an unknown key 'opt_levle' (did you mean opt_level?); accepted keys: assertions, baseline, cache_dir, "
            "cache_max_size, cflags, "
            "clang, count_libraries, cpu, cutoff, cxxflags, defines",
        ),
        ("cache_max_size = 'huge'", 'cache_max_size: expected a size such as "5GiB", "500MB" or a number of bytes'),
        ("opt_level = 5", "opt_level: expected one of 0, 1, 2, 3, s, z, got 5"),
        ("cflags = '-Wall'", "cflags: expected a list of strings, got '-Wall'"),
        ("cflags = ['-Wall', '-O3']", "cflags has '-O3': set the optimisation level with opt_level '3' instead;*"),
        ("tolerance = 'lots'", "tolerance: expected a percentage such as 5 or \"5%\", got 'lots'"),
        ("models = ['wallclock']", "models: unknown cost model 'wallclock'; known models: heap, ir-count"),
        ("models = ['pipline']", "models: unknown cost model 'pipline' (did you mean pipeline?); known models: heap"),
        ("timeout = -1", "timeout: expected a positive number of seconds, got -1"),
        ("timeout = nan", "timeout: expected a positive number of seconds, got nan"),
        ("cpu = ['x86-64-v3']", "cpu: expected one of x86-64, x86-64-v2, x86-64-v3, x86-64-v4, got [[]'x86-64-v3']"),
        ("cpu = { level = 3 }", "cpu: expected one of x86-64, *, got {'level': 3}"),
        (
            "zkvm = 5",
            "zkvm: the parameters of cost model 'zkvm' are a table of their own, [[]tool.instrbudget.zkvm], got 5",
        ),
        ("defines = 'NDEBUG'", "defines: expected a list of NAME or NAME=VALUE strings, or a table such as*"),
    ],
)
def test_plugin_bad_config_is_a_usage_error_naming_the_key(pytester: pytest.Pytester, table: str, message: str) -> None:
    pytester.makepyprojecttoml(f"[tool.instrbudget]\n{table}\n")
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*[[]tool.instrbudget] {message}*"])


def test_config_paths_starting_with_a_tilde_are_in_the_home_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cbuild.config import settings_from_table

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    table = {"cache_dir": "~/caches/instrbudget", "baseline": "perf/baseline.json"}
    settings = settings_from_table(table, tmp_path / "project", known_models=["ir-count"])
    assert settings.cache_dir == tmp_path / "home" / "caches" / "instrbudget"
    assert settings.baseline == tmp_path / "project" / "perf" / "baseline.json"


def test_plugin_an_xfail_test_over_its_budget_fails(pytester: pytest.Pytester) -> None:
    """xfail expects the test's own failure: a body that passed and then went over its budget was
    reported xfailed, the run green (a strict xfail whose body passes fails the run as XPASS).
    A body that fails as expected stays xfailed, whatever its cost, and so does a known overrun
    marked ``xfail(raises=pytest.fail.Exception)``."""
    pytester.makefile(".c", work=WORK_C)
    pytester.makepyfile(
        test_x="""
import pytest

@pytest.mark.xfail(strict=True, reason="a known bug elsewhere")
@pytest.mark.budget(max_instr=5)
def test_over(cbuild):
    assert cbuild.library("work.c").work(100) == 4950

@pytest.mark.xfail(reason="a known bug elsewhere")
@pytest.mark.budget(max_instr=5)
def test_fails_as_expected(cbuild):
    assert cbuild.library("work.c").work(100) == 0

@pytest.mark.xfail(raises=pytest.fail.Exception, reason="a known overrun")
@pytest.mark.budget(max_instr=5)
def test_known_overrun(cbuild):
    assert cbuild.library("work.c").work(100) == 4950
"""
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1, xfailed=2)
    result.stdout.fnmatch_lines(["FAILED test_x.py::test_over - Failed: instrbudget: ir_instructions *"])


def test_plugin_an_interrupted_update_writes_nothing(project: pytest.Pytester) -> None:
    """Ctrl-C part-way through `--instrbudget-update`: the tests finished so far were written (a
    regression among them accepted) although the user stopped the run; now nothing is, and the
    summary says so."""
    assert project.runpytest("-p", "no:cacheprovider", "--instrbudget-update").ret == pytest.ExitCode.OK
    baseline = project.path / ".instrbudget" / "baseline.json"
    before = baseline.read_bytes()
    (project.path / "work.c").write_text(SLOWER_WORK_C)
    project.makepyfile(
        test_budget=TESTS.replace("def test_unbudgeted(lib):", "def test_unbudgeted(lib):\n    raise KeyboardInterrupt")
    )
    result = project.runpytest_subprocess("-p", "no:cacheprovider", "--instrbudget-update")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        ["instrbudget: baseline not written: the run was interrupted; run it again to update the baseline"]
    )
    assert baseline.read_bytes() == before


def test_plugin_settings_in_a_configuration_file_given_with_c_are_a_usage_error(pytester: pytest.Pytester) -> None:
    """`pytest -c other.toml` whose [tool.instrbudget] names another baseline: the table was not
    read, and an update wrote the project's committed baseline instead, without a word."""
    pytester.makepyprojecttoml("[tool.instrbudget]\n")
    (pytester.path / "other.toml").write_text("[tool.pytest.ini_options]\n[tool.instrbudget]\nbaseline = 'b.json'\n")
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest("-c", "other.toml", "--instrbudget-update", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"*instrbudget: [[]tool.instrbudget] is in {pytester.path / 'other.toml'} (pytest's configuration "
            f"file), but the settings are read from the pyproject.toml of the rootdir {pytester.path}*move it to "
            f"{pytester.path / 'pyproject.toml'}"
        ]
    )
    assert not (pytester.path / ".instrbudget").exists()
    # A configuration file without the table is pytest's business alone.
    (pytester.path / "other.toml").write_text("[tool.pytest.ini_options]\n")
    assert pytester.runpytest("-c", "other.toml", "-p", "no:cacheprovider").ret == pytest.ExitCode.OK


def test_plugin_settings_above_the_rootdir_are_a_usage_error(pytester: pytest.Pytester) -> None:
    # [tool.instrbudget] in the repository's pyproject.toml, and a pytest.ini beside the tests that
    # makes their directory pytest's rootdir: the settings, the include directories and the
    # committed baseline would all be left out, every test "new" and the run green.
    pytester.makepyprojecttoml("[tool.instrbudget]\nbaseline = 'perf/baseline.json'\n")
    tests = pytester.mkdir("qa")
    (tests / "pytest.ini").write_text("[pytest]\n")
    (tests / "test_x.py").write_text("def test_x():\n    pass\n")
    for args in (["qa"], ["--rootdir=qa", "qa/test_x.py"]):
        result = pytester.runpytest(*args)
        assert result.ret == pytest.ExitCode.USAGE_ERROR, args
        result.stderr.fnmatch_lines(
            [
                f"*instrbudget: [[]tool.instrbudget] is in {pytester.path / 'pyproject.toml'}, but the project's "
                f"directory is {tests} (pytest's rootdir)*run pytest with --rootdir={pytester.path}, or move the "
                "configuration file that makes*the rootdir (pytest.ini, tox.ini, setup.cfg)"
            ]
        )
    # (The configured baseline does not exist yet: only an update may start it.)
    assert pytester.runpytest(f"--rootdir={pytester.path}", "qa", "--instrbudget-update").ret == pytest.ExitCode.OK
    # A package with a pyproject.toml of its own (a monorepo's) is a project of its own; and a
    # pyproject.toml above that cannot be read is nobody's concern here.
    (tests / "pytest.ini").unlink()
    (tests / "pyproject.toml").write_text("[tool.pytest.ini_options]\n")
    assert pytester.runpytest("qa").ret == pytest.ExitCode.OK
    # But where one of its tests has a budget, or builds C code, the table above would be left out
    # as silently (found by an audit: every test "new", the run green): an error, unless the
    # package's own pyproject.toml has a table.
    (tests / "test_budget.py").write_text("import pytest\n@pytest.mark.budget(max_instr=10)\ndef test_b():\n    pass\n")
    (tests / "test_builds.py").write_text("def test_c(cbuild):\n    pass\n")
    (tests / "test_asks.py").write_text("def test_d(request):\n    request.getfixturevalue('cbuild')\n")
    # Each such test fails saying so (a usage error would be lost under pytest-xdist, whose workers collect).
    for args in ([], ["-p", "xdist", "-n", "2"]):
        result = pytester.runpytest("qa", *args)
        result.assert_outcomes(passed=1, failed=1, errors=2)  # set-up fails those that name the fixture
        result.stdout.fnmatch_lines(
            [
                f"*instrbudget: [[]tool.instrbudget] is in {pytester.path / 'pyproject.toml'}, but pytest's rootdir "
                f"is {tests}, whose pyproject.toml has no [[]tool.instrbudget]: *report every test new. Run pytest "
                f"with --rootdir={pytester.path}, or, if qa is a project of its own, give {tests / 'pyproject.toml'} "
                "a [[]tool.instrbudget] table (an empty one takes the defaults)"
            ]
        )
    assert pytester.runpytest("qa", "-k", "test_x").ret == pytest.ExitCode.OK  # the others deselected
    (tests / "pyproject.toml").write_text("[tool.pytest.ini_options]\n[tool.instrbudget]\n")
    assert pytester.runpytest("qa/test_builds.py").ret == pytest.ExitCode.OK
    for name in ("test_budget.py", "test_builds.py", "test_asks.py", "pyproject.toml"):
        (tests / name).unlink()
    (tests / "pytest.ini").write_text("[pytest]\n")
    (pytester.path / "pyproject.toml").write_text("[tool.instrbudget\n")
    assert pytester.runpytest("qa").ret == pytest.ExitCode.OK


def test_plugin_settings_below_the_rootdir_fail_the_tests_beneath_them(pytester: pytest.Pytester) -> None:
    """A repository's pytest.ini makes its top the rootdir, and a sub-project's pyproject.toml holds
    [tool.instrbudget] and names its committed baseline (an audit): the run read neither, every
    test "new", the run green. Each test beneath that file that builds or has a budget fails."""
    pytester.makeini("[pytest]\n")
    sub = pytester.mkdir("sub")
    (sub / "pyproject.toml").write_text("[tool.instrbudget]\nopt_level = '1'\n")
    tests = sub / "tests"
    tests.mkdir()
    (tests / "test_sub.py").write_text(
        "import pytest\n"
        "@pytest.mark.budget(max_instr=10)\ndef test_b():\n    pass\n"
        "def test_c(cbuild):\n    pass\n"
        "def test_plain():\n    pass\n"
    )
    (pytester.path / "test_top.py").write_text("def test_top(cbuild):\n    pass\n")
    for args in ([], ["-p", "xdist", "-n", "2"]):
        result = pytester.runpytest("-p", "no:cacheprovider", *args)
        result.assert_outcomes(passed=2, errors=2)  # set-up fails them; the top's test is the rootdir project's
        result.stdout.fnmatch_lines(
            [
                f"*instrbudget: [[]tool.instrbudget] is in {sub / 'pyproject.toml'}, below pytest's rootdir "
                f"{pytester.path}, whose settings and baseline this run reads instead: *Run pytest with "
                f"--rootdir={sub}, or move the table into {pytester.path}'s configuration"
            ]
        )
    result = pytester.runpytest("-p", "no:cacheprovider", f"--rootdir={sub}", str(tests))
    result.assert_outcomes(passed=2, failed=1)  # test_b measured nothing: its limit fails it, as it should


@pytest.mark.parametrize("name", ["instrbudgets", "pytest-instrbudget", "pytest_instrbudget"])
def test_plugin_misspelt_table_name_is_a_usage_error(pytester: pytest.Pytester, name: str) -> None:
    # The distribution's own name, as some plugins name their tables, was read by nobody.
    pytester.makepyprojecttoml(f"[tool.{name}]\ntolerance = 5\n")
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"*pyproject.toml: [[]tool.{name}] is not read by pytest-instrbudget (did you mean [[]tool.instrbudget]?)"],
    )


def test_plugin_unknown_marker_keyword_lists_accepted(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_x="import pytest\n\n@pytest.mark.budget(max_instrs=10)\ndef test_x():\n    pass\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*test_x.py::test_x: unknown keyword 'max_instrs' in @pytest.mark.budget (did you mean max_instr?); "
            "accepted: max_instr, models, regions, stop_at, timeout, tolerance, unavailable"
        ]
    )


def test_plugin_a_misspelt_budget_marker_is_an_error_not_a_test_without_limits(pytester: pytest.Pytester) -> None:
    """``@pytest.mark.budgte(max_instr=10)`` is only a warning to pytest, and its test ran without
    the limit; a registered marker of the project with a name like it (``budgets``) is left alone."""
    pytester.makeini("[pytest]\nmarkers =\n    budgets: a marker of the project's own\n")
    pytester.makepyfile(
        test_x="import pytest\n\n@pytest.mark.budgte(max_instr=10)\ndef test_x():\n    pass\n\n"
        "@pytest.mark.budgets\ndef test_y():\n    pass\n"
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*test_x.py::test_x: @pytest.mark.budgte is not a marker pytest knows (did you mean "
            "@pytest.mark.budget?): the test would run without its limits"
        ]
    )
    assert "budgets" not in result.stderr.str()
    pytester.makepyfile(test_x="import pytest\n\n@pytest.mark.budgets\ndef test_y():\n    pass\n")
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
    # The plugin's name as the marker's, or another name with a budget's limits, ran without them too.
    for mark in ("instrbudget(max_instr=100)", "perf_budget(tolerance=5)", "limit(max_instr=100)", "cap(stop_at=9)"):
        pytester.makepyfile(test_x=f"import pytest\n\n@pytest.mark.{mark}\ndef test_x():\n    pass\n")
        result = pytester.runpytest("-p", "no:cacheprovider")
        assert result.ret == pytest.ExitCode.USAGE_ERROR, mark
        name = mark.split("(")[0]
        result.stderr.fnmatch_lines([f"*test_x.py::test_x: @pytest.mark.{name} is not a marker pytest knows*"])
    # Other plugins' markers are pytest's business, keywords like a budget's included.
    for mark in ("slow(reason='x')", "flaky(max_runs=3)", "retry(max_attempts=2)", "time_budget(seconds=5)"):
        pytester.makepyfile(test_x=f"import pytest\n\n@pytest.mark.{mark}\ndef test_x():\n    pass\n")
        pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_plugin_json_to_stdout_starts_on_a_line_of_its_own(project: pytest.Pytester) -> None:
    """``--instrbudget-json=/dev/stdout -q``: the document began on the progress line
    (``...  [100%]{``), so the output could not be cut at a line into JSON."""
    result = project.runpytest_subprocess("-p", "no:cacheprovider", "-q", "--instrbudget-json=/dev/stdout")
    lines = result.stdout.lines
    start = lines.index("{")
    assert lines[start - 1].rstrip().endswith("[100%]")
    end = start + lines[start:].index("}")
    assert json.loads("\n".join(lines[start : end + 1]))["models"] == ["ir-count"]


def test_plugin_two_markers_on_one_test_with_different_limits_are_a_usage_error(pytester: pytest.Pytester) -> None:
    # The closest marker wins over the module's; two on one test are equally close, and whichever
    # won, the limit written on the other would not be checked.
    pytester.makepyfile(
        test_x="""
import pytest

pytestmark = pytest.mark.budget(max_instr=10**9, tolerance=5)

@pytest.mark.budget(max_instr=100)
@pytest.mark.budget(max_instr=10**9)
def test_two(): pass

@pytest.mark.budget(max_instr=100, models=["ir-count"])
@pytest.mark.budget(max_instr=100, timeout=5, models=("ir-count",))
def test_agreeing(): pass

@pytest.mark.budget(max_instr=100)
class Base:
    pass

@pytest.mark.budget(max_instr=200)
class TestChild(Base):  # overrides its base's limit
    def test_inherited(self): pass
"""
    )
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*test_x.py::test_two: two @pytest.mark.budget markers on test_two give max_instr=1000000000 and "
            "max_instr=100; keep one"
        ]
    )
    pytester.path.joinpath("test_x.py").write_text(
        pytester.path.joinpath("test_x.py").read_text().replace("@pytest.mark.budget(max_instr=10**9)\n", "")
    )
    assert pytester.runpytest("--co", "-q").ret == pytest.ExitCode.OK
    assert "test_agreeing" not in result.stderr.str()
    assert "TestChild" not in result.stderr.str()


def test_plugin_build_progress_from_xdist_workers_starts_its_own_line(pytester: pytest.Pytester) -> None:
    """A worker's progress goes to the stderr pytest was started from, where the tests'
    progress letters are on the current line: it starts a line of its own in a log that
    has both streams (a CI log)."""
    pytester.makeconftest("import cbuild.build.watch\n\ncbuild.build.watch.SLOW = 0.0  # every build speaks\n")
    pytester.makefile(".c", late=f"int late(void) {{ return {pytester.path.name!r}[0]; }}\n".replace("'", '"'))
    pytester.makepyfile(
        test_x="""
import time

def test_early():
    pass

def test_late(cbuild):
    time.sleep(2)  # after the other worker's test has put its letter on the line
    assert cbuild.library("late.c").late() > 0
"""
    )
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "xdist", "-n", "2", "-p", "no:cacheprovider"],
        cwd=pytester.path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout
    said = [line for line in run.stdout.splitlines() if "instrbudget: build" in line]
    assert said, run.stdout
    assert all(line.startswith(("instrbudget: building late.c", "instrbudget: built late.c")) for line in said), said


def test_plugin_every_invalid_marker_is_said_in_one_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_x="""
import pytest

@pytest.mark.budget(max_instrs=10)
def test_a():
    pass

@pytest.mark.budget(max_instr=10)
def test_fine():
    pass

@pytest.mark.budget(timeout=0)
def test_b():
    pass

@pytest.mark.budget(regions={"parse": {"max_instrs": 20}})
def test_c():
    pass
"""
    )
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*instrbudget: 3 tests have budget markers that are not valid:",
            "  test_x.py::test_a: unknown keyword 'max_instrs' in @pytest.mark.budget (did you mean max_instr?); *",
            "  test_x.py::test_b: budget(timeout=...) must be a positive number of seconds, got 0",
            "  test_x.py::test_c: budget(regions={'parse': {'max_instrs': ...}}): unknown keyword (did you mean "
            "max_instr?); accepted: max_instr",
        ]
    )
    # Under pytest-xdist the workers collect, and a worker's usage error was an INTERNALERROR without
    # its message: each such test fails with it instead.
    result = pytester.runpytest_subprocess("-p", "xdist", "-n", "2", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=3, failed=1)  # test_fine fails as measuring nothing, as it does alone
    result.stdout.fnmatch_lines(
        ["*instrbudget: test_x.py::test_b: budget(timeout=...) must be a positive number of seconds, got 0*"]
    )
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


def test_plugin_a_region_without_a_limit_is_a_usage_error(pytester: pytest.Pytester) -> None:
    """``regions={"parse": {}}`` checked nothing and read as a region with a budget."""
    pytester.makepyfile(test_x='import pytest\n\n@pytest.mark.budget(regions={"parse": {}})\ndef test_x():\n    pass\n')
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*instrbudget: test_x.py::test_x: budget(regions={'parse': {}}) sets no limit: give one, as *"]
    )


@pytest.mark.parametrize("value", ["float('nan')", "0", "'5'", "True"])
def test_plugin_marker_timeout_must_be_positive_seconds(pytester: pytest.Pytester, value: str) -> None:
    pytester.makepyfile(test_x=f"import pytest\n\n@pytest.mark.budget(timeout={value})\ndef test_x():\n    pass\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*test_x.py::test_x: budget(timeout=...) must be a positive number of seconds, got *"])


def test_plugin_marker_registered_for_strict_markers(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_x="import pytest\n\n@pytest.mark.budget(timeout=60)\ndef test_x():\n    pass\n")
    pytester.runpytest("--strict-markers").assert_outcomes(passed=1)


def test_plugin_compile_error_shows_diagnostic_without_traceback(pytester: pytest.Pytester) -> None:
    pytester.makefile(".c", bad="int f(void) {\n  return nope;\n}\n")
    pytester.makepyfile(test_x="def test_x(cbuild):\n    cbuild.library('bad.c')\n")
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*bad.c:2:10: error: use of undeclared identifier 'nope'*"])
    assert "Traceback" not in result.stdout.str()
    assert "def test_x" not in result.stdout.str()


def test_plugin_program_crash_fails_the_test_with_signal(pytester: pytest.Pytester) -> None:
    pytester.makefile(".c", crash="#include <stdlib.h>\nint main(void) { abort(); }\n")
    pytester.makepyfile(test_x="def test_x(cbuild):\n    cbuild.program('crash.c').run()\n")
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*ProgramCrashed: program crash.c was killed by SIGABRT*"])


def test_plugin_program_timeout_is_each_runs_default(pytester: pytest.Pytester) -> None:
    # program(timeout=...) limits its runs as library(timeout=...) limits calls; a run's own
    # timeout= still wins, and the marker's applies where neither gives one.
    pytester.makefile(".c", spin="int main(void) { for (volatile int i = 0;; i++) {} }\n")
    pytester.makepyfile(
        test_x="""
import pytest
from cbuild.errors import ProgramTimeout

@pytest.mark.budget(timeout=30)
def test_own(cbuild):
    prog = cbuild.program('spin.c', opt_level=0, timeout=0.5)
    with pytest.raises(ProgramTimeout, match="ran past its 0.5 s timeout"):
        prog.run()
    with pytest.raises(ProgramTimeout, match="ran past its 0.25 s timeout"):
        prog.run(timeout=0.25)

@pytest.mark.budget(timeout=0.75)
def test_marker(cbuild):
    with pytest.raises(ProgramTimeout, match="ran past its 0.75 s timeout"):
        cbuild.program('spin.c', opt_level=0).run()
"""
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


CRASH_AFTER_WORK_C = """\
#include <stdlib.h>
__attribute__((noinline)) static void trap(void) { __builtin_debugtrap(); }
int main(void) {
    volatile int s = 0;
    for (int i = 0; i < 1000; i++) s += i;
    abort();
}
"""


@pytest.mark.parametrize(("end", "signal"), [("abort()", "SIGABRT"), ("trap()", "SIGTRAP")])
def test_plugin_program_crash_keeps_what_the_program_counted_until_then(
    pytester: pytest.Pytester, end: str, signal: str
) -> None:
    """The program's runtime writes its counters when a fatal signal ends it: the test errs, and
    its row shows that partial cost over the limit, as for a test that raised after a run."""
    pytester.makefile(".c", crash=CRASH_AFTER_WORK_C.replace("abort()", end))
    pytester.makepyfile(
        test_x="import pytest\n\n@pytest.mark.budget(max_instr=100)\n"
        "def test_x(cbuild):\n    cbuild.program('crash.c', opt_level='0').run()\n"
    )
    result = pytester.runpytest("--instrbudget-json=out.json")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*ProgramCrashed: program crash.c was killed by {signal}*"])
    doc = json.loads((pytester.path / "out.json").read_text())
    entry = doc["tests"]["test_x.py::test_x"]
    cost = entry["metrics"]["ir_instructions"]["value"]
    assert cost > 1000 * 4  # the loop's 1,000 iterations, counted before abort()
    result.stdout.fnmatch_lines([f"test_x.py::test_x *{cost:,}*over limit (partial)*"])


CRASHING_LIBRARY_C = """\
#include <signal.h>
#include <stdlib.h>
int work(int n) {
    volatile int s = 0;
    for (int i = 0; i < n; i++) s += i;
    return s;
}
int work_then_crash(int n, int how) {
    work(n);
    if (how == 0) abort();
    if (how == 1) raise(SIGSEGV);  /* in a call: the running total is exact there (a crash between
                                       calls leaves the counts unknown, tests/test_isolation.py) */
    if (how == 2) raise(SIGTERM);
    exit(3);
}
"""


@pytest.mark.parametrize("how", ["SIGABRT", "SIGSEGV", "SIGTERM", "exit(3)"])
def test_plugin_library_crash_keeps_what_the_library_counted_until_then(pytester: pytest.Pytester, how: str) -> None:
    """A call that ends the library's process: its runtime writes its counters (the host's guard
    has every loaded library's do so on a fatal signal, its own exit handler on exit()), and the
    test's row shows what the library counted until then, calls before the fatal one included, as
    a partial cost. Another library loaded first: the guard, not the first library's runtime,
    handles the signal."""
    pytester.makefile(".c", crashing=CRASHING_LIBRARY_C, other="int next(int n) { return n + 1; }\n")
    code = ["SIGABRT", "SIGSEGV", "SIGTERM", "exit(3)"].index(how)
    pytester.makepyfile(
        test_x="import pytest\n\n@pytest.mark.budget(max_instr=100)\n"
        "def test_x(cbuild):\n    cbuild.library('other.c').next(1)\n"
        "    lib = cbuild.library('crashing.c', opt_level='0')\n"
        f"    lib.work(500)\n    lib.work_then_crash(1000, {code})\n"
    )
    result = pytester.runpytest("--instrbudget-json=out.json")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*LibraryCrashed: work_then_crash() *{how}*"])
    doc = json.loads((pytester.path / "out.json").read_text())
    cost = doc["tests"]["test_x.py::test_x"]["metrics"]["ir_instructions"]["value"]
    assert cost > 1500 * 4  # both calls' 1,500 iterations, counted before the process ended
    result.stdout.fnmatch_lines([f"test_x.py::test_x *{cost:,}*over limit (partial)*"])


CRASH_ON_REQUEST_C = """\
#include <stdlib.h>
int main(int argc, char **argv) {
    volatile int s = 0;
    for (int i = 0; i < 1000; i++) s += i;
    if (argc > 1) abort();
    return 0;
}
"""


def test_plugin_a_crash_the_test_expects_adds_nothing_to_its_cost(pytester: pytest.Pytester) -> None:
    """A test that catches a program's crash as expected behaviour completes: its cost is that of
    its other runs, compared and kept as usual, without the crashed run's partial counts."""
    pytester.makefile(".c", crash=CRASH_ON_REQUEST_C)
    pytester.makepyfile(
        test_x="import pytest\nfrom cbuild import ProgramCrashed\n\n"
        "def test_x(cbuild):\n    prog = cbuild.program('crash.c', opt_level='0')\n"
        "    run = prog.run()\n    with pytest.raises(ProgramCrashed):\n        prog.run(['crash'])\n"
        "    print('COST', run.cost())\n"
    )
    result = pytester.runpytest("-s", "--instrbudget-json=out.json")
    result.assert_outcomes(passed=1)
    alone = int(result.stdout.str().split("COST ", 1)[1].split()[0])
    doc = json.loads((pytester.path / "out.json").read_text())
    assert doc["tests"]["test_x.py::test_x"]["metrics"]["ir_instructions"]["value"] == alone


def test_plugin_program_runs_are_measured(pytester: pytest.Pytester) -> None:
    pytester.makefile(".c", echo="#include <stdio.h>\nint main(int c, char **v) { puts(v[1]); return 0; }\n")
    pytester.makepyfile(
        test_x="""
import pytest

@pytest.mark.budget(max_instr=1000)
def test_echo(cbuild):
    prog = cbuild.program("echo.c")
    run = prog.run(["hi"])
    assert run.text == "hi\\n"
    assert run.cost() > 0
"""
    )
    result, doc = results(pytester)
    result.assert_outcomes(passed=1)
    assert doc["tests"]["test_x.py::test_echo"]["metrics"]["ir_instructions"]["functions"]["main"] > 0


def test_plugin_fixture_setup_is_not_measured(pytester: pytest.Pytester) -> None:
    pytester.makefile(".c", work=WORK_C)
    pytester.makepyfile(
        test_x="""
import pytest

@pytest.fixture
def warm(cbuild):
    lib = cbuild.library("work.c", opt_level=0)
    lib.work(100000)  # setup work: not part of the test's cost
    return lib

def test_small(warm):
    warm.work(1)

def test_small_alone(cbuild):
    cbuild.library("work.c", opt_level=0).work(1)
"""
    )
    _, doc = results(pytester)
    metrics = {n: t["metrics"]["ir_instructions"]["value"] for n, t in doc["tests"].items()}
    assert metrics["test_x.py::test_small"] == metrics["test_x.py::test_small_alone"]


def test_plugin_disable_builds_plain_and_measures_nothing(project: pytest.Pytester) -> None:
    summary, page = project.path / "summary.md", project.path / "report.html"
    result, doc = results(
        project, "--instrbudget-disable", f"--instrbudget-markdown={summary}", f"--instrbudget-html={page}"
    )
    result.assert_outcomes(passed=3)
    assert doc["tests"] == {}
    # The reports say so too (a CI job's summary read "0 test(s) measured ... No cost changed"), and
    # cbuild merge refuses the JSON (tests/test_shards.py).
    assert doc["disabled"] is True
    said = (
        "measuring disabled (--instrbudget-disable): 3 test(s) that build C code or have a budget were not "
        "measured, their budgets not checked"
    )
    assert summary.read_text() == f"## instrbudget\n\n{said}.\n"
    assert f"instrbudget report: {said}" in page.read_text()
    assert results(project)[1]["disabled"] is False
    assert "test_budget.py::test_work" not in result.stdout.str().split("short test summary")[0].split("passed")[-1]
    # Set in addopts, it passed a CI job with a word only in the header: the end says it too.
    for workers in ([], ["-n", "2"]):
        result = project.runpytest("-p", "no:cacheprovider", "--instrbudget-disable", *workers)
        result.stdout.fnmatch_lines(
            [
                "instrbudget: measuring disabled (--instrbudget-disable): 3 test(s) that build C code or have a "
                "budget were not measured, their budgets not checked"
            ]
        )


@pytest.mark.slow
def test_plugin_xdist_counts_equal_serial_counts(project: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    out_serial = project.path / "serial.json"
    out_xdist = project.path / "xdist.json"
    project.runpytest_subprocess(f"--instrbudget-json={out_serial}").assert_outcomes(passed=3)
    result = project.runpytest_subprocess("-n", "2", f"--instrbudget-json={out_xdist}", "--instrbudget-update")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["test_budget.py::test_work * new", "*written: 3 added*"])
    serial = json.loads(out_serial.read_text())["tests"]
    parallel = json.loads(out_xdist.read_text())["tests"]
    assert {n: t["metrics"] for n, t in serial.items()} == {n: t["metrics"] for n, t in parallel.items()}
    assert len(json.loads(baseline_path(project).read_text())["tests"]) == 3


def test_plugin_model_option_selects_and_rejects_unknown(project: pytest.Pytester) -> None:
    result = project.runpytest("--instrbudget-model=ir-count")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["instrbudget: models ir-count"])
    result = project.runpytest("--instrbudget-model=wallclock")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*instrbudget: unknown cost model 'wallclock'; known models: heap, ir-count, pipeline, zkvm (a model of "
            "another package is known once that package is installed in this environment)"
        ]
    )


def test_plugin_bad_tolerance_option_is_a_usage_error(project: pytest.Pytester) -> None:
    result = project.runpytest("--instrbudget-tolerance=five")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--instrbudget-tolerance: expected a percentage such as 5 or \"5%\", got 'five'"])


def test_plugin_node_id_run_keeps_other_entries_of_the_file(project: pytest.Pytester) -> None:
    results(project, "--instrbudget-update")
    result, _ = results(project, "test_budget.py::test_work", "--instrbudget-prune")
    result.assert_outcomes(passed=1)
    assert "no longer exist" not in result.stdout.str()
    assert len(json.loads(baseline_path(project).read_text())["tests"]) == 3


def test_plugin_failing_test_cost_is_shown_but_not_written(pytester: pytest.Pytester) -> None:
    pytester.makefile(".c", work=WORK_C)
    pytester.makepyfile(
        test_budget="""
def test_broken(cbuild):
    cbuild.library("work.c").work(10)
    assert False, "ordinary failure"
"""
    )
    result, doc = results(pytester, "--instrbudget-update")
    result.assert_outcomes(failed=1)
    assert doc["tests"]["test_budget.py::test_broken"]["metrics"]["ir_instructions"]["value"] > 0
    result.stdout.fnmatch_lines(["*1 failing test(s) not written to the baseline: test_budget.py::test_broken"])
    assert not baseline_path(pytester).exists()


def test_plugin_update_rewrites_a_damaged_baseline(project: pytest.Pytester) -> None:
    path = baseline_path(project)
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    result, _ = results(project, "--instrbudget-update")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*is not valid JSON (line 1, column 2*--instrbudget-update rewrites it from this run"])
    assert len(json.loads(path.read_text())["tests"]) == 3
    kept = path.with_name("baseline.json.damaged")
    assert kept.read_text() == "{not json"  # nothing is lost: the unreadable file is kept
    result.stdout.fnmatch_lines([f"*its earlier entries are in the unreadable file, kept as {kept}"])


def test_plugin_update_of_a_damaged_baseline_from_a_partial_run_keeps_the_damaged_file(
    project: pytest.Pytester,
) -> None:
    """A baseline with conflict markers, rewritten by a run of one test (-k): the other tests'
    entries are only in the damaged file, which is kept beside it (again on a second such run)."""
    results(project, "--instrbudget-update")
    path = baseline_path(project)
    good = path.read_text()
    damaged = "<<<<<<< HEAD\n" + good + "=======\n" + good + ">>>>>>> branch\n"
    for n, kept in enumerate(["baseline.json.damaged", "baseline.json.damaged.2"]):
        path.write_text(damaged)
        result, _ = results(project, "--instrbudget-update", "-k", "test_work")
        result.assert_outcomes(passed=1, deselected=2)
        assert list(json.loads(path.read_text())["tests"]) == ["test_budget.py::test_work"]
        assert path.with_name(kept).read_text() == damaged, n
        result.stdout.fnmatch_lines(
            [
                "*has merge conflict markers (line 1)*; --instrbudget-update rewrites it from this run",
                "*baseline*written: 1 added*",
                f"*kept as {path.with_name(kept)}",
            ]
        )


@pytest.mark.slow
def test_plugin_address_dependent_program_counts_equal_under_xdist(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    pytester.makefile(
        ".c",
        addr="""
#include <stdint.h>
#include <stdio.h>
int main(void) {
    int local;
    uintptr_t a = (uintptr_t)&local;
    unsigned bits = 0;
    while (a) { a &= a - 1; bits++; }
    printf("%u\\n", bits);
    return 0;
}
""",
    )
    pytester.makepyfile(
        test_addr="""
import pytest

@pytest.mark.parametrize("i", range(4))
def test_addr(cbuild, i):
    cbuild.program("addr.c").run()
"""
    )
    serial = pytester.path / "serial.json"
    parallel = pytester.path / "parallel.json"
    pytester.runpytest_subprocess(f"--instrbudget-json={serial}").assert_outcomes(passed=4)
    pytester.runpytest_subprocess("-n", "2", f"--instrbudget-json={parallel}").assert_outcomes(passed=4)
    values = {json.dumps(t["metrics"]) for p in (serial, parallel) for t in json.loads(p.read_text())["tests"].values()}
    assert len(values) == 1


def test_plugin_second_baseline_file_from_the_command_line(project: pytest.Pytester) -> None:
    """--instrbudget-baseline selects the file compared with and updated; the default stays as it was."""
    result, _ = results(project, "--instrbudget-update")
    result.assert_outcomes(passed=3)
    default = baseline_path(project).read_text()

    (project.path / "work.c").write_text(SLOWER_WORK_C)
    second = project.path / "configs" / "slow.json"
    result, _ = results(project, "--instrbudget-update", "--instrbudget-baseline=configs/slow.json")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines([f"*baseline {second} written: 3 added, 0 changed, 0 pruned"])
    assert baseline_path(project).read_text() == default

    # Each file judges against its own numbers: the slower code matches the second one only.
    result, doc = results(project, "--instrbudget-baseline=configs/slow.json")
    result.assert_outcomes(passed=3)
    assert {t["status"] for t in doc["tests"].values()} == {"ok"}
    result, _ = results(project)
    result.assert_outcomes(failed=2, passed=1)

    # A damaged second file is named as such.
    second.write_text("{")
    result, _ = results(project, "--instrbudget-baseline=configs/slow.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{second}*"])
    result, _ = results(project, "--instrbudget-baseline=")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--instrbudget-baseline: expected a file path, got an empty one*"])
    # A misspelt file compared nothing: every test "new", the run green. Only an update creates one.
    result, _ = results(project, "--instrbudget-baseline=configs/slwo.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"*--instrbudget-baseline=configs/slwo.json: no such file ({project.path / 'configs' / 'slwo.json'}); "
            "--instrbudget-update records one there"
        ]
    )
    # From a subdirectory (the option in addopts), a path that names the rootdir's file says so,
    # where "--instrbudget-update records one there" led to a second baseline under the subdirectory.
    (project.path / "sub").mkdir()
    for update in ([], ["--instrbudget-update"]):  # an update wrote a second baseline under sub/
        command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--instrbudget-baseline=configs/slow.json"]
        result = subprocess.run(
            [*command, *update, ".."],
            cwd=project.path / "sub",
            capture_output=True,
            text=True,
            check=False,
        )
        assert result.returncode == pytest.ExitCode.USAGE_ERROR
        assert (
            f"--instrbudget-baseline=configs/slow.json: no such file ({project.path / 'sub' / 'configs' / 'slow.json'}"
            f"), but there is {project.path / 'configs' / 'slow.json'}: the path is taken from the directory pytest "
            "was started in" in " ".join(result.stderr.split())
        )
        assert not (project.path / "sub" / "configs").exists()
    # So did a misspelt path in [tool.instrbudget] (the default path, not yet written, is a first run).
    pyproject = project.path / "pyproject.toml"
    table = pyproject.read_text()
    pyproject.write_text(table.replace("[tool.instrbudget]\n", "[tool.instrbudget]\nbaseline = 'configs/slwo.json'\n"))
    assert "slwo" in pyproject.read_text()
    result, _ = results(project)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"*[[]tool.instrbudget[]] baseline = 'configs/slwo.json': no such file "
            f"({project.path / 'configs' / 'slwo.json'}); --instrbudget-update records one there"
        ]
    )
    result, _ = results(project, "--instrbudget-update")
    result.assert_outcomes(passed=3)
    assert (project.path / "configs" / "slwo.json").is_file()


@pytest.mark.parametrize(
    "workers", [pytest.param([], id="serial"), pytest.param(["-n", "2"], id="xdist", marks=pytest.mark.slow)]
)
def test_plugin_junit_xml_carries_metrics_limits_and_status(project: pytest.Pytester, workers: list[str]) -> None:
    """GitLab, Jenkins and Azure DevOps show a test's JUnit properties: the metric, its limit, the
    baseline and the status, for each measured test (and under xdist, from the workers)."""
    import xml.etree.ElementTree as ET

    junit = project.path / "junit.xml"
    result, doc = results(project, f"--junitxml={junit}", *workers)
    result.assert_outcomes(passed=3)
    cases = {case.get("name"): case for case in ET.parse(junit).getroot().iter("testcase")}
    properties = {name: {p.get("name"): p.get("value") for p in case.iter("property")} for name, case in cases.items()}
    assert properties["test_work"] == {
        "instrbudget.ir_instructions": str(value(doc, "test_work")),
        "instrbudget.ir_instructions.limit": "100000",
        "instrbudget.ir_instructions.status": "new",
    }
    assert properties["test_unbudgeted"]["instrbudget.ir_instructions"] == str(value(doc, "test_unbudgeted"))
    assert "instrbudget.ir_instructions.limit" not in properties["test_unbudgeted"]


EXPECTED_TESTS = """\
import pytest

@pytest.fixture
def lib(cbuild):
    return cbuild.library("work.c")

@pytest.mark.xfail(reason="work rejects negative counts")
def test_expected_to_fail(lib):
    lib.work(10)
    assert lib.work(-1) > 0

def test_skips_part_way(lib):
    lib.work(10)
    pytest.skip("no input")

@pytest.mark.skip(reason="needs the big input")
@pytest.mark.budget(max_instr=10)
def test_never_runs(lib):
    lib.work(10)

def test_plain_python():
    assert True
"""


@pytest.mark.parametrize(
    "workers", [pytest.param([], id="serial"), pytest.param(["-n", "2"], id="xdist", marks=pytest.mark.slow)]
)
def test_plugin_outcomes_of_expected_failures_and_skips(pytester: pytest.Pytester, workers: list[str]) -> None:
    """An xfail test that raised, and one that skipped itself part-way, are shown as such (with
    partial counts), not as errors; the JSON carries pytest's outcome, also from xdist workers."""
    pytester.makefile(".c", work=WORK_C)
    pytester.makepyfile(test_expected=EXPECTED_TESTS)
    result, doc = results(pytester, "--instrbudget-update", *workers)
    result.assert_outcomes(passed=1, xfailed=1, skipped=2)
    tests = doc["tests"]
    assert {n.split("::")[1]: (t["status"], t["outcome"], t["completed"]) for n, t in tests.items()} == {
        "test_expected_to_fail": ("error", "xfailed", False),
        "test_skips_part_way": ("error", "skipped", False),
    }
    result.stdout.re_match_lines([r"test_expected\.py::test_expected_to_fail +\d+ +xfailed \(partial\)"])
    result.stdout.re_match_lines([r"test_expected\.py::test_skips_part_way +\d+ +skipped \(partial\)"])
    assert "error" not in result.stdout.str().split("instrbudget ====")[-1]
    assert not (pytester.path / ".instrbudget" / "baseline.json").exists()  # partial counts are never written


def test_plugin_a_baseline_only_budget_whose_test_stopped_measuring_fails(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``budget(tolerance=5)`` asks for the baseline check alone: a test that measured a cost once and
    now runs none of its code (a refactor dropped the call) fails, where it read as improved by
    100%; one the baseline holds nothing for, and a test without a budget, pass as before."""
    pytester.makefile(".c", work=WORK_C)
    pytester.makepyfile(
        test_x="import os, pytest\n"
        "CALL = os.environ.get('CALL') == '1'\n"
        "@pytest.mark.budget(tolerance=5)\n"
        "def test_checked(cbuild):\n"
        "    lib = cbuild.library('work.c')\n"
        "    if CALL:\n"
        "        lib.work(10)\n"
        "@pytest.mark.budget(tolerance=5)\n"
        "def test_checked_without_the_fixture():\n"
        "    pass\n"
        "def test_unbudgeted(cbuild):\n"
        "    lib = cbuild.library('work.c')\n"
        "    if CALL:\n"
        "        lib.work(10)\n"
    )
    pytester.makepyprojecttoml("[tool.instrbudget]\nopt_level = '1'\n")
    monkeypatch.setenv("CALL", "1")
    assert pytester.runpytest("-p", "no:cacheprovider", "--instrbudget-update").ret == pytest.ExitCode.OK
    baseline = pytester.path / ".instrbudget" / "baseline.json"
    held = json.loads(baseline.read_text())["tests"]["test_x.py::test_checked"]["ir_instructions"]["total"]
    assert held > 0
    monkeypatch.setenv("CALL", "0")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*_ test_checked _*",
            "instrbudget: nothing measured: the test ran no measured code (no library call or program run "
            "through the cbuild fixture while it ran), so its comparison with the baseline, which holds "
            f"ir_instructions {held:,} for it, did not happen (a test that no longer runs C code on purpose needs "
            "no @pytest.mark.budget)",
        ]
    )
    # Listed as improved: the test without a budget alone (it never fails on cost).
    result.stdout.fnmatch_lines(["*improved on the baseline; record it with * test_x.py::test_unbudgeted"])
    saved = baseline.read_text()
    pytester.runpytest("-p", "no:cacheprovider", "--instrbudget-update").assert_outcomes(passed=2, failed=1)
    assert (
        json.loads(baseline.read_text())["tests"]["test_x.py::test_checked"]
        == json.loads(saved)["tests"]["test_x.py::test_checked"]
    )  # no entry of a cost of nothing replaces it


UNMEASURED_TESTS = """
import pytest

@pytest.mark.budget(max_instr=10)
def test_without_the_fixture():
    assert True

@pytest.mark.budget(max_instr=10, regions={"scan": 5})
def test_with_the_fixture_unused(cbuild):
    assert True

@pytest.mark.budget(max_instr=10)
def test_builds_a_library_it_never_calls(cbuild):
    cbuild.library("work.c")

@pytest.fixture
def called(cbuild):
    lib = cbuild.library("work.c")
    lib.work(10)
    return lib

@pytest.mark.budget(max_instr=10)
def test_whose_fixture_made_the_only_call(called):
    assert called is not None

@pytest.mark.budget(timeout=30)
def test_without_limits(cbuild):
    assert True

@pytest.mark.budget(max_instr=10)
def test_that_fails_on_its_own():
    assert False, "its own failure"
"""


def test_plugin_a_budget_whose_test_measured_nothing_fails(pytester: pytest.Pytester) -> None:
    """Limits on a test that ran no measured code were never checked: the test fails saying so
    (a budget without limits, and a test that failed on its own, are left as they are). A library
    built and never called, or called only by a fixture before the test, measured nothing: not a
    pass at a cost of 0."""
    pytester.makefile(".c", work=WORK_C)
    pytester.makepyfile(test_x=UNMEASURED_TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=5)
    unmeasured = (
        "instrbudget: nothing measured: the test ran no measured code (no library call or program run "
        "through the cbuild fixture while it ran), so the limits @pytest.mark.budget sets on ir_instructions were "
        "not checked"
    )
    result.stdout.fnmatch_lines(
        [
            "*_ test_without_the_fixture _*",
            "instrbudget: nothing measured: the test does not use the cbuild fixture, so the limits "
            "@pytest.mark.budget sets on ir_instructions were not checked",
            "*_ test_with_the_fixture_unused _*",
            unmeasured,
            "*_ test_builds_a_library_it_never_calls _*",
            unmeasured,
            "*_ test_whose_fixture_made_the_only_call _*",
            unmeasured,
            "*AssertionError: its own failure*",
        ],
        consecutive=False,
    )
    # An update writes no entry of a cost of nothing for them (found by an audit: a zero entry, from
    # which the test's first real call would be a regression).
    result = pytester.runpytest("-p", "no:cacheprovider", "--instrbudget-update")
    result.assert_outcomes(passed=1, failed=5)
    assert not (pytester.path / ".instrbudget" / "baseline.json").exists()  # no test had a cost to write
    result.stdout.fnmatch_lines(["*failing test(s) not written to the baseline:*test_builds_a_library_it_never_calls*"])


DYNAMIC_FIXTURE_TESTS = """
import pytest

def test_named(cbuild):
    cbuild.library("work.c").work(100)

def test_asked(request):
    request.getfixturevalue("cbuild").library("work.c").work(100)

@pytest.mark.budget(max_instr=10)
def test_asked_over(request):
    request.getfixturevalue("cbuild").library("work.c").work(100)

@pytest.mark.budget(stop_at=50)
def test_asked_stops(request):
    request.getfixturevalue("cbuild").library("work.c").work(10**9)
"""


def test_plugin_measures_a_test_that_asks_for_the_fixture_while_it_runs(pytester: pytest.Pytester) -> None:
    """``request.getfixturevalue("cbuild")`` in the test's body measures as naming the fixture does:
    the same count, its limits checked and its cut-off in force (not "does not use the cbuild
    fixture", nor an unmeasured pass)."""
    pytester.makefile(".c", work=WORK_C)
    pytester.makepyfile(test_dyn=DYNAMIC_FIXTURE_TESTS)
    result, doc = results(pytester)
    result.assert_outcomes(passed=2, failed=2)
    tests = doc["tests"]
    named = tests["test_dyn.py::test_named"]["metrics"]["ir_instructions"]["value"]
    assert named > 100
    assert tests["test_dyn.py::test_asked"]["metrics"]["ir_instructions"]["value"] == named
    assert tests["test_dyn.py::test_asked_over"]["metrics"]["ir_instructions"]["value"] == named
    result.stdout.fnmatch_lines(["*_ test_asked_over _*", f"instrbudget: ir_instructions {named:,} > max_instr=10"])
    result.stdout.fnmatch_lines(
        ["*_ test_asked_stops _*", "test_dyn.py:15: work(): stopped after * IR instructions (cut-off 50, stop_at=50)*"]
    )
    assert "does not use the cbuild fixture" not in result.stdout.str()


def test_plugin_the_fixture_carries_the_packages_errors_a_test_catches(pytester: pytest.Pytester) -> None:
    """In a test's body the fixture hides the ``cbuild`` package: the errors and types the docs
    name as ``cbuild.UnknownFunction`` and the like are the fixture's attributes too."""
    pytester.makefile(".c", work=WORK_C)
    pytester.makepyfile(
        test_names="""
import pytest
import cbuild as package

def test_names(cbuild):
    lib = cbuild.library("work.c")
    with pytest.raises(cbuild.UnknownFunction, match="wrok"):
        lib.wrok(1)
    with pytest.raises(cbuild.SignatureError):
        lib.work("x")
    assert issubclass(cbuild.errors.CompilerWarning, Warning)
    for name in ("Pointer", "ExtensionError", "ProgramCrashed", "LibraryCrashed", "CBuildError"):
        assert getattr(cbuild, name) is getattr(package, name)
"""
    )
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_plugin_a_runs_relative_cwd_is_the_test_files(pytester: pytest.Pytester) -> None:
    """``prog.run(cwd="data")`` is ``data`` beside the test file, as the sources are, whatever
    directory pytest runs from (here the project's root, above the test's directory)."""
    (pytester.path / "tests" / "data").mkdir(parents=True)
    (pytester.path / "tests" / "data" / "input.txt").write_text("beside the test\n")
    (pytester.path / "tests" / "cat.c").write_text(
        '#include <stdio.h>\nint main(void) { char b[64]; FILE *f = fopen("input.txt", "r");\n'
        "  if (!f) return 3; fputs(fgets(b, sizeof b, f), stdout); return 0; }\n"
    )
    (pytester.path / "tests" / "test_cwd.py").write_text(
        "def test_cwd(cbuild):\n"
        '    run = cbuild.program("cat.c").run(cwd="data")\n'
        '    assert (run.returncode, run.text) == (0, "beside the test\\n")\n'
    )
    pytester.runpytest("-p", "no:cacheprovider", "tests").assert_outcomes(passed=1)


def test_plugin_build_progress_lines_keep_the_file_name_before_its_tests_letters(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A slow build's lines, written while a test file's progress line is open, are followed by the
    file's name again, so that no test's letter stands on a line of its own."""
    from cbuild.build import watch

    monkeypatch.setattr(watch, "SLOW", 0.0)  # every build says what it did
    result = project.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)
    lines = result.stdout.lines
    built = [i for i, line in enumerate(lines) if line.startswith("instrbudget: built work.c in ")]
    assert built, lines
    ends = [next(j for j in range(i + 1, len(lines)) if not lines[j].startswith("  ")) for i in built]
    for j in ends:  # each test's letter follows the name of its file, after the message's last line
        assert re.fullmatch(r"test_budget\.py \.( +\[ *\d+%\])?", lines[j]), lines
    assert lines[ends[-1]].endswith("[100%]"), lines
    assert not any(re.fullmatch(r"\.+.*", line) for line in lines), lines


def test_plugin_progress_messages_wrap_to_the_terminal_width(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long progress message (a build's phases) in a CI log 60 columns wide: wrapped, later lines
    indented, not one line of 140 columns."""
    from pytest_instrbudget.plugin import _progress

    monkeypatch.setenv("COLUMNS", "60")
    config = pytester.parseconfigure("-p", "no:cacheprovider")
    try:
        _progress(config)("built cb.c in 15.8 s: linking the IR 7.2 s, the models' analyses 0.1 s, linking 3.3 s")
    finally:
        config._ensure_unconfigure()
    assert capsys.readouterr().out.splitlines()[-2:] == [
        "instrbudget: built cb.c in 15.8 s: linking the IR 7.2 s, the",
        "  models' analyses 0.1 s, linking 3.3 s",
    ]


def test_plugin_failure_puts_a_long_function_name_on_a_line_of_its_own(pytester: pytest.Pytester) -> None:
    """One long name (a C++ template's, here a C one of 76 characters) does not pad every row of a
    failure's function list past the width of a CI log: it goes on a line of its own, its cost on
    the next, under the other rows' costs."""
    long_name = "accumulate_the_running_sum_of_every_element_" + "x" * 32  # 76 characters: a row of 80
    pytester.makefile(
        ".c",
        work=f"""
__attribute__((noinline)) int {long_name}(const int *a, int n) {{
    int s = 0;
    for (int i = 0; i < n; i++) s += a[i] * 3;
    return s;
}}
__attribute__((noinline)) int twice(int x) {{ return 2 * x; }}
int work(const int *a, int n) {{
    int s = 0;
    for (int i = 0; i < n; i++) s += twice(a[i]);
    return s + {long_name}(a, n);
}}
""",
    )
    pytester.makepyfile(
        test_budget="""
import array
import pytest

@pytest.mark.budget(max_instr=10)
def test_work(cbuild):
    cbuild.library("work.c", opt_level="1").work(array.array("i", range(50)), 50)
"""
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["  costliest functions:", "    work   4??", f"    {long_name}", "           1??", "    twice  1??"]
    )
    rows = result.stdout.lines[result.stdout.lines.index("  costliest functions:") + 1 :][:4]
    assert all(len(row) <= 80 for row in rows), rows


def test_plugin_a_riscv_run_that_differs_warns_at_the_tests_line(pytester: pytest.Pytester) -> None:
    """The warning that a model's RISC-V run printed something else (long is 4 bytes there) names
    the test's line that ran the program, not the plugin's own."""
    pytester.makefile(".c", width='#include <stdio.h>\nint main(void) { printf("%zu\\n", sizeof(long)); }\n')
    pytester.makepyprojecttoml('[tool.instrbudget]\nmodels = ["ir-count", "zkvm"]\n')
    pytester.makepyfile(
        test_width="""
def test_width(cbuild):
    program = cbuild.program("width.c")
    assert program.run().stdout == b"8\\n"
"""
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(
        [
            "*test_width.py:3: RuntimeWarning: width.c: the riscv32 build's output differs from the native build's"
            " at byte 0 (b'4\\n' against b'8\\n')*"
        ]
    )


def test_plugin_a_program_kept_past_its_test_is_refused_not_measured_for_nobody(pytester: pytest.Pytester) -> None:
    """A program cached in a module-level dict by one test and run by the next: its runs went to the
    first test's ended measurement, and the second passed its budget without them."""
    pytester.makefile(
        ".c", prog="int main(void) { volatile long s = 0; for (long i = 0; i < 100000; i++) s += i; return 0; }\n"
    )
    pytester.makepyfile(
        test_kept="""
import pytest

KEPT = {}

def test_first(cbuild):
    KEPT["prog"] = cbuild.program("prog.c")
    KEPT["lib"] = cbuild.library("lib.c")

@pytest.mark.budget(max_instr=100)
def test_second(cbuild):
    KEPT["prog"].run()

def test_third(cbuild):
    KEPT["lib"].one()
"""
    )
    pytester.makefile(".c", lib="int one(void) { return 1; }\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*CBuildError: this program (prog.c) was made by the cbuild fixture of a test that has ended*",
            "*LibraryCrashed: one(): the library was closed (the test that loaded it ended, or it was closed); "
            "a library serves the test that loaded it*",
        ],
        consecutive=False,
    )


def test_plugin_budget_markers_a_conftest_adds_are_read(pytester: pytest.Pytester) -> None:
    """A marker added by a conftest's pytest_collection_modifyitems (after the plugin read the
    markers) was left out, the test passing without its limit; one a fixture adds while the test
    is set up, after its build was set up, fails the test instead of going unchecked."""
    pytester.makefile(
        ".c", prog="int main(void) { volatile long s = 0; for (long i = 0; i < 1000; i++) s += i; return 0; }\n"
    )
    pytester.makeconftest(
        """
import pytest

def pytest_collection_modifyitems(items):
    for item in items:
        if "collected" in item.name:
            item.add_marker(pytest.mark.budget(max_instr=100))

@pytest.fixture
def late(request):
    request.node.add_marker(pytest.mark.budget(max_instr=100))

@pytest.fixture
def expected_failure(request):
    request.applymarker(pytest.mark.xfail(reason="known", strict=True))
"""
    )
    pytester.makepyfile(
        test_marks="""
def test_collected(cbuild):
    cbuild.program("prog.c").run()

def test_fixture(late, cbuild):
    cbuild.program("prog.c").run()

def test_other_markers_are_pytests_business(expected_failure, cbuild):
    cbuild.program("prog.c").run()
    assert False
"""
    )
    for workers in ([], ["-n", "2"]):
        result = pytester.runpytest("-p", "no:cacheprovider", *workers)
        result.assert_outcomes(failed=2, xfailed=1)
        for line in (  # in either order: under xdist, as the workers finish
            "*ir_instructions: * exceeds max_instr=100*",
            "*instrbudget: a marker was added to the test while it was set up (by a fixture)*",
        ):
            result.stdout.fnmatch_lines([line])
