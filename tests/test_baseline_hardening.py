"""Baselines and outputs under hostile conditions: bad values, damaged files, concurrent updates, unwritable paths."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_instrbudget.profiles import file_stem
from tests.test_plugin import WORK_C, baseline_path, results

#: Tests that take a while in Python, so that two sessions overlap for real.
SLOW_TESTS = """\
import time
import pytest

@pytest.mark.parametrize("n", range(4))
def test_{prefix}(cbuild, n):
    time.sleep(0.3)
    assert cbuild.library("work.c").work(10 + n) >= 0
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".c", work=WORK_C)
    pytester.makepyfile(test_budget="def test_work(cbuild):\n    assert cbuild.library('work.c').work(100) == 4950\n")
    pytester.makepyprojecttoml("[tool.instrbudget]\nopt_level = '1'\n")
    return pytester


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "'nan'", "'inf%'", "true"])
def test_config_tolerance_must_be_finite(pytester: pytest.Pytester, value: str) -> None:
    pytester.makepyprojecttoml(f"[tool.instrbudget]\ntolerance = {value}\n")
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*[[]tool.instrbudget] tolerance: expected a*percentage such as 5 or*got *"])


@pytest.mark.parametrize("value", ["nan", "inf", "NaN%", "-1"])
def test_command_line_tolerance_must_be_finite(pytester: pytest.Pytester, value: str) -> None:
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest(f"--instrbudget-tolerance={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--instrbudget-tolerance: expected a*percentage such as 5 or*"])


@pytest.mark.parametrize("value", ["'nan'", "float('nan')", "float('inf')", "True"])
def test_marker_tolerance_must_be_finite(pytester: pytest.Pytester, value: str) -> None:
    pytester.makepyfile(test_x=f"import pytest\n\n@pytest.mark.budget(tolerance={value})\ndef test_x():\n    pass\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*test_x.py::test_x: budget(tolerance=...): expected a*percentage*"])


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("-9440", "total -9440 is not a non-negative integer"),
        ("NaN", "NaN is not a number JSON allows"),
        ("Infinity", "Infinity is not a number JSON allows"),
        ("true", "total True is not a non-negative integer"),
        ("1.5", "total 1.5 is not a non-negative integer"),
    ],
)
def test_baseline_values_that_make_no_sense_name_the_file(project: pytest.Pytester, value: str, message: str) -> None:
    results(project, "--instrbudget-update")
    path = baseline_path(project)
    text = path.read_text()
    total = json.loads(text)["tests"]["test_budget.py::test_work"]["ir_instructions"]["total"]
    path.write_text(text.replace(f'"total": {total}', f'"total": {value}'))
    result = project.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*instrbudget: baseline {path} *{message}*"])


def test_baseline_negative_function_cost_names_the_function(project: pytest.Pytester) -> None:
    results(project, "--instrbudget-update")
    path = baseline_path(project)
    doc = json.loads(path.read_text())
    doc["tests"]["test_budget.py::test_work"]["ir_instructions"]["functions"]["work"] = -3
    path.write_text(json.dumps(doc))
    result = project.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*function cost work = -3 is not a non-negative integer*"])


def test_baseline_of_random_bytes_is_a_usage_error(project: pytest.Pytester) -> None:
    path = baseline_path(project)
    path.parent.mkdir(parents=True)
    damaged = bytes(range(256)) * 4
    path.write_bytes(damaged)
    result = project.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*instrbudget: baseline {path} is not valid JSON (byte * is not UTF-8 text)*"])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    assert path.read_bytes() == damaged


@pytest.mark.slow
def test_concurrent_updates_of_different_subsets_both_land(pytester: pytest.Pytester) -> None:
    pytester.makefile(".c", work=WORK_C)
    pytester.makepyfile(test_a=SLOW_TESTS.format(prefix="a"), test_b=SLOW_TESTS.format(prefix="b"))
    pytester.makepyprojecttoml("[tool.instrbudget]\nopt_level = '1'\n")
    # Warm the build cache, so that both sessions spend their time in the overlapping tests.
    assert pytester.runpytest_subprocess("-p", "no:cacheprovider", "test_a.py::test_a[0]").ret == 0
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--instrbudget-update"]
    sessions = [
        subprocess.Popen([*command, name], cwd=pytester.path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        for name in ("test_a.py", "test_b.py")
    ]
    outputs = [s.communicate(timeout=300)[0].decode() for s in sessions]
    assert [s.returncode for s in sessions] == [0, 0], outputs
    tests = json.loads(baseline_path(pytester).read_text())["tests"]
    assert sorted(tests) == sorted(f"test_{x}.py::test_{x}[{n}]" for x in "ab" for n in range(4))


def test_update_keeps_a_read_only_baseline_read_only(project: pytest.Pytester) -> None:
    results(project, "--instrbudget-update")
    path = baseline_path(project)
    doc = json.loads(path.read_text())
    doc["tests"]["test_budget.py::test_work"]["ir_instructions"]["total"] += 1
    path.write_text(json.dumps(doc))
    path.chmod(0o444)
    result, _ = results(project, "--instrbudget-update")
    result.stdout.fnmatch_lines(["*baseline * written: 0 added, 1 changed, 0 pruned"])
    assert stat.S_IMODE(path.stat().st_mode) == 0o444


def _blocked(pytester: pytest.Pytester) -> Path:
    """A directory path that cannot be created, whoever runs the tests: its parent is a file."""
    (pytester.path / "blocker").write_text("a file, not a directory\n")
    return pytester.path / "blocker" / "out"


def test_unwritable_outputs_are_errors_naming_the_path(project: pytest.Pytester) -> None:
    blocked = _blocked(project)
    project.makepyprojecttoml(f"[tool.instrbudget]\nopt_level = '1'\nbaseline = '{blocked / 'baseline.json'}'\n")
    result = project.runpytest(
        "--instrbudget-update",
        f"--instrbudget-json={blocked / 'r.json'}",
        f"--instrbudget-markdown={blocked / 'r.md'}",
        f"--instrbudget-html={blocked / 'r.html'}",
        f"--instrbudget-profile-dir={blocked}",
    )
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = result.stdout.str()
    assert "Traceback" not in out
    assert "INTERNALERROR" not in out
    result.stdout.fnmatch_lines(
        [
            "test_budget.py::test_work * new",  # the table is still printed
            f"instrbudget: error: cannot write the profile of test_budget.py::test_work to {blocked}*",
            f"instrbudget: error: cannot write the baseline {blocked / 'baseline.json'}: *",
            f"instrbudget: error: cannot write the JSON report {blocked / 'r.json'}: *",
            f"instrbudget: error: cannot write the HTML report {blocked / 'r.html'}: "
            f"{blocked.parent} is not a directory",
            f"instrbudget: error: cannot write the markdown summary {blocked / 'r.md'}: *",
        ]
    )


def test_unwritable_output_of_a_disabled_run_says_why_the_run_failed(project: pytest.Pytester) -> None:
    # --instrbudget-disable prints no table, but the exit status a report it could not write
    # gives must come with its reason.
    blocked = _blocked(project)
    result = project.runpytest("--instrbudget-disable", f"--instrbudget-json={blocked / 'r.json'}")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([f"instrbudget: error: cannot write the JSON report {blocked / 'r.json'}: *"])


@pytest.mark.skipif(os.geteuid() == 0, reason="permissions do not stop root")
def test_read_only_baseline_directory_is_an_error(project: pytest.Pytester) -> None:
    path = baseline_path(project)
    path.parent.mkdir()
    path.parent.chmod(0o555)
    try:
        result = project.runpytest("--instrbudget-update")
    finally:
        path.parent.chmod(0o755)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([f"instrbudget: error: cannot write the baseline {path}: Permission denied"])


@pytest.mark.slow
def test_unwritable_profile_dir_under_xdist_is_reported_by_the_controller(project: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    blocked = _blocked(project)
    result = project.runpytest("-n", "2", f"--instrbudget-profile-dir={blocked}")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [f"instrbudget: error: cannot write the profile of test_budget.py::test_work to {blocked}*"]
    )


def test_profile_file_names_are_unique_and_short() -> None:
    ids = ["t.py::a/b", "t.py::a_b", "t.py::a[b]", "t.py::a_b_", "x" * 300, "x" * 301]
    stems = [file_stem(i) for i in ids]
    assert len(set(stems)) == len(stems)
    assert all(len(s) <= 140 for s in stems)
    assert file_stem("test_p.py::test_calls") == "test_p.py__test_calls"  # simple ids stay readable


def test_profiles_of_colliding_and_long_ids_are_all_written(pytester: pytest.Pytester) -> None:
    pytester.makefile(".c", work=WORK_C)
    long_name = "test_" + "x" * 290
    pytester.makepyfile(
        test_ids=f"""
import pytest

@pytest.mark.parametrize("p", ["a/b", "a_b"])
def test_p(cbuild, p):
    cbuild.library("work.c").helper(3)

def {long_name}(cbuild):
    cbuild.library("work.c").helper(4)
"""
    )
    out = pytester.path / "profiles"
    result = pytester.runpytest("-p", "no:cacheprovider", f"--instrbudget-profile-dir={out}")
    result.assert_outcomes(passed=3)
    assert len(list(out.glob("*.speedscope.json"))) == 3
    assert "error:" not in result.stdout.str()


def test_two_sessions_wait_for_the_baseline_lock(project: pytest.Pytester) -> None:
    """A session holding the lock makes the other wait, then the other merges into what it wrote."""
    from cbuild.report.outputs import locked

    results(project, "--instrbudget-update")
    path = baseline_path(project)
    before = json.loads(path.read_text())
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from cbuild.report.outputs import locked\n"
            f"with locked(__import__('pathlib').Path({str(path)!r})):\n    print('held', flush=True); time.sleep(1.5)",
        ],
        stdout=subprocess.PIPE,
    )
    assert holder.stdout is not None
    assert holder.stdout.readline() == b"held\n"
    started = time.monotonic()
    doc = dict(before)
    doc["tests"] = {**before["tests"], "gone.py::test_x": before["tests"]["test_budget.py::test_work"]}
    with locked(path):  # what the other session sees once it has the lock
        assert time.monotonic() - started > 1.0
        path.write_text(json.dumps(doc))
    holder.wait()
    project.makepyfile(test_more="def test_more(cbuild):\n    cbuild.library('work.c').work(7)\n")
    results(project, "--instrbudget-update", "test_more.py")
    tests = json.loads(path.read_text())["tests"]
    assert {"gone.py::test_x", "test_budget.py::test_work", "test_more.py::test_more"} <= set(tests)
