"""The example project end to end: its committed baseline holds, a slower edit fails, an update accepts it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parent.parent / "example_project"


@pytest.fixture
def example(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    copy = pytester.path / "example"
    shutil.copytree(EXAMPLE, copy, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    monkeypatch.chdir(copy)
    return copy


def test_example_project_regression_names_function_and_update_accepts(pytester: pytest.Pytester, example: Path) -> None:
    baseline = example / ".instrbudget" / "baseline.json"
    committed = baseline.read_text()
    result = pytester.runpytest("-p", "no:cacheprovider", "tests/test_sort.py")
    result.assert_outcomes(passed=8)
    # The section starts right under its heading, as pytest's own sections do (no blank line).
    result.stdout.fnmatch_lines(
        ["*= instrbudget =*", "8 unchanged test(s) not listed (-v or --instrbudget-table=all lists them)"],
        consecutive=True,
    )

    sort_c = example / "src" / "sort.c"
    slower = sort_c.read_text().replace(
        "        int32_t v = a[i];\n", "        int32_t v = a[i];\n        { volatile int32_t spin = v; (void)spin; }\n"
    )
    assert slower != sort_c.read_text()
    sort_c.write_text(slower)
    result = pytester.runpytest("-p", "no:cacheprovider", "tests/test_sort.py")
    result.assert_outcomes(failed=8)
    result.stdout.fnmatch_lines(
        [
            "*_ test_sort_random_1000 _*",
            "instrbudget: ir_instructions +1.86% on the baseline (and 2 other metrics)",
            "  ir_instructions: 133,882 -> 136,374 (+1.86%; tolerance 0%) against the baseline",
            "  functions whose cost grew most:",
            "    mk_sort_ints  +2,492  (39,976 -> 42,468)",  # insertion_sort is inlined into it
            "  hottest lines of mk_sort_ints:",
            "    src/sort.c:34  26,531",  # the inner loop of the insertion sort
        ]
    )
    assert baseline.read_text() == committed

    result = pytester.runpytest("-p", "no:cacheprovider", "tests/test_sort.py", "--instrbudget-update")
    result.assert_outcomes(passed=8)
    result.stdout.fnmatch_lines(["*baseline * written: 0 added, 8 changed, 0 pruned"])
    result = pytester.runpytest("-p", "no:cacheprovider", "tests/test_sort.py")
    result.assert_outcomes(passed=8)
    updated = json.loads(baseline.read_text())["tests"]
    assert set(updated) == set(json.loads(committed)["tests"])  # other entries kept


@pytest.mark.slow
def test_example_project_counts_equal_under_xdist(pytester: pytest.Pytester, example: Path) -> None:
    pytest.importorskip("xdist")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "--instrbudget-json=out.json")
    result.assert_outcomes(passed=64)
    doc = json.loads((example / "out.json").read_text())
    assert {t["status"] for t in doc["tests"].values()} == {"ok"}  # identical to the committed baseline


def test_example_profiles_follow_the_speedscope_schema(pytester: pytest.Pytester, example: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema", reason="validating against speedscope's schema needs jsonschema")
    schema = json.loads((Path(__file__).parent / "data" / "speedscope-file-format-schema.json").read_text())
    out = example / "profiles"
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "tests/test_sort.py", "-k", "random_1000", f"--instrbudget-profile-dir={out}"
    )
    result.assert_outcomes(passed=1)
    (document,) = out.glob("*.speedscope.json")
    doc = json.loads(document.read_text())
    jsonschema.validate(doc, schema)
    metrics = [p["name"].rsplit("(", 1)[1].rstrip(")") for p in doc["profiles"]]
    # Call paths are the native build's: the executed RISC-V builds' models have no clock there.
    assert metrics == ["ir_instructions"]
    frames = {f["name"] for f in doc["shared"]["frames"]}
    assert {"mk_sort_ints", "introsort_loop", "mk_fill_random"} <= frames
    # The profile's weights add up to the test's cost (the same as in the baseline).
    assert sum(doc["profiles"][0]["weights"]) == 133882
