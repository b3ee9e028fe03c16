"""Cost models chosen per test (marker ``models=``) and per build (``cbuild.library(..., models=)``),
and metrics of a model that cannot build a test's code, shown as unavailable: real pytest sessions."""

from __future__ import annotations

import ctypes
import dataclasses
import json
import textwrap
from typing import Any

import pytest

from cbuild import Builder, IrCountModel, Library
from cbuild.models import default_registry
from cbuild.report.update import changed_parameters
from pytest_instrbudget import report
from pytest_instrbudget.results import OK, UNAVAILABLE, MetricResult
from pytest_instrbudget.results import TestResult as Result

WORK_C = """\
long work(long n) {
    volatile long s = 0;
    for (long i = 0; i < n; i++) s += i;
    return s;
}
"""

#: x86 inline assembly: builds for the host, not for riscv32 (an x86 register constraint).
TICKS_C = """\
long spin(long n) {
    volatile long s = 0;
    for (long i = 0; i < n; i++) s += i;
    return s;
}

unsigned long long ticks(void) {
    unsigned lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return ((unsigned long long)hi << 32) | lo;
}
"""
#: The line of the assembly statement in TICKS_C.
TICKS_LINE = 9

ZK_METRICS = {"zk_cycles", "zk_user_cycles", "zk_paging_cycles", "zk_segments"}
ZKVM_TABLE = "[tool.instrbudget.zkvm]\nexecute = true\n"


def project(pytester: pytest.Pytester, tests: str, *, models: str = '["ir-count"]', zkvm: str = ZKVM_TABLE) -> None:
    pytester.makefile(".c", work=WORK_C, ticks=TICKS_C)
    pytester.makepyfile(test_choice=textwrap.dedent(tests))
    pytester.makepyprojecttoml(f'[tool.instrbudget]\nopt_level = "1"\nmodels = {models}\n{zkvm}')


def run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    out = pytester.path / "results.json"
    out.unlink(missing_ok=True)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--instrbudget-json={out}", *args)
    return result, json.loads(out.read_text()) if out.exists() else {}


def metrics(doc: dict[str, Any], test: str) -> dict[str, Any]:
    found: dict[str, Any] = doc["tests"][f"test_choice.py::{test}"]["metrics"]
    return found


def baseline(pytester: pytest.Pytester) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((pytester.path / ".instrbudget" / "baseline.json").read_text())
    return doc


def test_model_choice_marker_narrows_the_session_models(pytester: pytest.Pytester) -> None:
    project(
        pytester,
        """
        import pytest

        @pytest.mark.budget(models=["ir-count"], max_instr=1000)
        def test_ir_only(cbuild):
            assert cbuild.library("work.c").work(10) == 45

        def test_session_models(cbuild):
            assert cbuild.library("work.c").work(10) == 45
        """,
        models='["ir-count", "zkvm"]',
    )
    result, doc = run(pytester)
    result.assert_outcomes(passed=2)
    assert set(metrics(doc, "test_ir_only")) == {"ir_instructions"}
    session = metrics(doc, "test_session_models")
    assert set(session) == {"ir_instructions", *ZK_METRICS}
    assert session["zk_user_cycles"]["value"] > 0
    assert doc["tests"]["test_choice.py::test_ir_only"]["unavailable"] == {}


def test_model_choice_marker_adds_a_model_and_the_baseline_describes_it(pytester: pytest.Pytester) -> None:
    tests = """
        import pytest

        @pytest.mark.budget(models=["ir-count", "zkvm"], max_zkcycles=2**24)
        def test_zk(cbuild):
            assert cbuild.library("work.c").work(10) == 45

        def test_plain(cbuild):
            assert cbuild.library("work.c").work(10) == 45
        """
    project(pytester, tests)
    result, doc = run(pytester, "--instrbudget-update")
    result.assert_outcomes(passed=2)
    assert set(metrics(doc, "test_zk")) == {"ir_instructions", *ZK_METRICS}
    assert metrics(doc, "test_zk")["zk_user_cycles"]["value"] > 0
    assert set(metrics(doc, "test_plain")) == {"ir_instructions"}
    # The session's models are ir-count's alone; the model the test chose is described beside them.
    fingerprint = baseline(pytester)["fingerprint"]
    assert fingerprint["models"] == "ir-count version=1"
    assert fingerprint["models.zkvm"].startswith("zkvm version=")
    assert set(baseline(pytester)["tests"]["test_choice.py::test_zk"]) == {"ir_instructions", *ZK_METRICS}

    result, doc = run(pytester)
    result.assert_outcomes(passed=2)
    assert {m["status"] for t in doc["tests"].values() for m in t["metrics"].values()} == {"ok"}
    assert "not comparable" not in result.stdout.str()

    # Other zkvm parameters: the zkvm entries no longer compare, the rest of the baseline does.
    pytester.makepyprojecttoml(f'[tool.instrbudget]\nopt_level = "1"\n{ZKVM_TABLE}po2 = 18\n')
    result, doc = run(pytester)
    result.assert_outcomes(passed=2)
    assert metrics(doc, "test_zk")["zk_cycles"]["status"] == "not comparable"
    assert metrics(doc, "test_zk")["ir_instructions"]["status"] == "ok"
    assert metrics(doc, "test_plain")["ir_instructions"]["status"] == "ok"
    result.stdout.fnmatch_lines(
        ["*holds zkvm costs made with other zkvm parameters (po2: 20 in the baseline, 18 now); they are not*"]
    )
    assert "made with another toolchain or other models" not in result.stdout.str()


def test_model_choice_a_bad_table_of_a_model_only_tests_choose_is_a_usage_error(pytester: pytest.Pytester) -> None:
    tests = """
        import pytest

        @pytest.mark.budget(models=["ir-count", "zkvm"])
        def test_zk(cbuild):
            assert cbuild.library("work.c").work(10) == 45

        def test_plain(cbuild):
            assert cbuild.library("work.c").work(10) == 45
        """
    project(pytester, tests)
    result, _ = run(pytester, "--instrbudget-update")
    result.assert_outcomes(passed=2)
    before = (pytester.path / ".instrbudget" / "baseline.json").read_bytes()
    # zkvm's table is now invalid: although only a test chooses zkvm, the session does not start
    # (the table is checked with the others), and the baseline is left as it was.
    pytester.makepyprojecttoml(f'[tool.instrbudget]\nopt_level = "1"\n{ZKVM_TABLE}po2 = "x"\n')
    for selected in ([], ["-k", "test_plain"]):
        result, _ = run(pytester, "--instrbudget-update", *selected)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(["*instrbudget: */pyproject.toml: [[]tool.instrbudget.zkvm[]] po2*"])
    assert (pytester.path / ".instrbudget" / "baseline.json").read_bytes() == before  # nothing lost


def test_model_choice_errors_name_the_model_and_the_choices(pytester: pytest.Pytester) -> None:
    pytester.makefile(".c", work=WORK_C)
    pytester.makepyprojecttoml('[tool.instrbudget]\nopt_level = "1"\n')
    cases = {
        '@pytest.mark.budget(models=["ir-count", "wallclock"])': (
            "*test_a: budget(models=...): unknown cost model 'wallclock'; known models: heap, ir-count, pipeline, zkvm*"
        ),
        '@pytest.mark.budget(models=["ir-count"], max_zkcycles=10)': (
            "*test_a: budget(max_zkcycles=...) belongs to the cost model 'zkvm', which is not among this "
            "test's models (ir-count); add 'zkvm' to budget(models=[[]...])*"
        ),
        "@pytest.mark.budget(max_cycles=10)": (
            "*test_a: budget(max_cycles=...) belongs to the cost model 'pipeline', which is not active; add it to "
            "`models`*--instrbudget-model=pipeline, or choose it for this test with budget(models=[[]...]) "
            "(this test's models: ir-count)*"
        ),
        "@pytest.mark.budget(stop_at_zkcycles=10)": (
            "*test_a: budget(stop_at_zkcycles=...) belongs to the cost model 'zkvm', which is not active; add it "
            "to `models`*--instrbudget-model=zkvm, or choose it for this test with budget(models=[[]...]) "
            "(this test's models: ir-count)*"
        ),
        '@pytest.mark.budget(models=["ir-count", "zkvm"], regions={"r": {"stop_at_zkcycles": 1}})': (
            "*test_a: budget(regions={'r': {'stop_at_zkcycles': ...}}): unknown keyword (did you mean max_zkcycles "
            "or max_zkuser_cycles?); accepted: max_instr, max_zkcycles, *"
        ),
        "@pytest.mark.budget(models=[])": "*test_a: budget(models=[[]]) chooses no cost model; name at least one*",
    }
    for marker, message in cases.items():
        pytester.makepyfile(test_choice=f"import pytest\n\n{marker}\ndef test_a():\n    pass\n")
        result = pytester.runpytest("-p", "no:cacheprovider")
        assert result.ret == pytest.ExitCode.USAGE_ERROR, marker
        result.stderr.fnmatch_lines([message])
        # A test that -k leaves out does not stop the others; the marker is checked where its test runs.
        pytester.makepyfile(
            test_choice=f"import pytest\n\n{marker}\ndef test_a():\n    pass\n\ndef test_b():\n    pass\n"
        )
        pytester.runpytest("-p", "no:cacheprovider", "-k", "test_b").assert_outcomes(passed=1, deselected=1)

    # A build's models are some of its test's.
    pytester.makepyfile(
        test_choice="""
        def test_unknown(cbuild):
            cbuild.library("work.c", models=["wallclock"])

        def test_not_the_tests(cbuild):
            cbuild.program("work.c", models=["zkvm"])
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*test_choice.py:2: ModelError: models=: unknown cost model 'wallclock'; known models: heap, "
            "ir-count, pipeline, zkvm (a model of another package is known once that package is installed in this "
            "environment)",
            "*test_choice.py:5: ModelError: models=: the cost model 'zkvm' is not among this test's models "
            "(ir-count)*choose it for the test with @pytest.mark.budget(models=[[]...])",
        ],
        consecutive=False,
    )


def test_model_choice_per_build(pytester: pytest.Pytester) -> None:
    project(
        pytester,
        """
        import pytest

        ZK = ["ir-count", "zkvm"]

        @pytest.mark.budget(models=ZK)
        def test_one(cbuild):
            assert cbuild.library("work.c").work(10) == 45

        @pytest.mark.budget(models=ZK)
        def test_two_builds(cbuild):
            measured = cbuild.library("work.c")
            helper = cbuild.library("work.c", models=["ir-count"])
            assert measured.artifact.key != helper.artifact.key  # the models are part of the build's key
            assert "zkvm" in measured.artifact.models() and "zkvm" not in helper.artifact.models()
            assert measured.work(10) == helper.work(10) == 45

        @pytest.mark.budget(models=ZK)
        def test_no_zk_build(cbuild):
            assert cbuild.library("work.c", models=["ir-count"]).work(10) == 45
        """,
    )
    result, doc = run(pytester)
    result.assert_outcomes(passed=3)
    one, two = metrics(doc, "test_one"), metrics(doc, "test_two_builds")
    # Both builds count IR instructions; only the first counts for zkvm.
    assert two["ir_instructions"]["value"] > one["ir_instructions"]["value"]
    assert two["ir_instructions"]["functions"]["work"] == two["ir_instructions"]["value"]
    assert {name: two[name]["value"] for name in ZK_METRICS} == {name: one[name]["value"] for name in ZK_METRICS}
    # No build of the test has zkvm: its metrics are unavailable, not zero.
    unavailable = doc["tests"]["test_choice.py::test_no_zk_build"]["unavailable"]
    assert set(unavailable) == ZK_METRICS
    assert unavailable["zk_cycles"]["reason"].startswith("no build of this test was made with the zkvm model")


TICKS_TESTS = """
    import pytest

    @pytest.mark.budget(max_instr=10_000, max_zkcycles=LIMIT)
    def test_ticks(cbuild):
        assert cbuild.library("ticks.c").spin(10) == 45

    @pytest.mark.budget(max_instr=5)
    def test_ticks_over(cbuild):
        assert cbuild.library("ticks.c").spin(10) == 45

    def test_work(cbuild):
        assert cbuild.library("work.c").work(10) == 45
    """


@pytest.mark.slow
def test_model_choice_unavailable_metrics_are_shown_not_checked_and_kept(pytester: pytest.Pytester) -> None:
    project(pytester, TICKS_TESTS.replace("LIMIT", "2**24"), models='["ir-count", "zkvm"]')
    # First without the assembly: the zkvm entries of test_ticks go into the baseline.
    source = pytester.path / "ticks.c"
    source.write_text(TICKS_C.replace('__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));', "lo = hi = 1;"))
    run(pytester, "--instrbudget-update", "-k", "not over")[0].assert_outcomes(passed=2, deselected=1)
    kept = baseline(pytester)["tests"]["test_choice.py::test_ticks"]
    assert set(kept) == {"ir_instructions", *ZK_METRICS}

    # With the assembly, and more work per iteration; a zkvm limit the code could not meet.
    source.write_text(TICKS_C.replace("i < n; i++) s += i;", "i < n; i++) { s += i; s ^= 0; }", 1))
    pytester.makepyfile(test_choice=textwrap.dedent(TICKS_TESTS.replace("LIMIT", "10")))
    # A limit that could not be checked fails the test, saying why and the ways out.
    result, _ = run(pytester)
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*_ test_ticks _*",
            "instrbudget: zk_cycles not measured; ir_instructions +26.32% on the baseline",
            "  max_zkcycles=10 not checked: the zkvm model could not measure this test:",
            f"    cannot be built for riscv32: invalid output constraint '=a' in asm (at ticks.c:{TICKS_LINE})",
            "  make the code build for it or drop the limit; to accept unchecked limits:",
            '    budget(unavailable="skip"), or unavailable = "skip" in [tool.instrbudget]',
        ],
        consecutive=False,
    )
    # A project that accepts it: the limit is reported not checked and the test passes on ir-count.
    pytester.makepyprojecttoml(
        f'[tool.instrbudget]\nopt_level = "1"\nmodels = ["ir-count", "zkvm"]\nunavailable = "skip"\n{ZKVM_TABLE}'
    )
    result, doc = run(pytester, "--instrbudget-update", f"--instrbudget-markdown={pytester.path / 'summary.md'}")
    # Passes on ir-count, with its max_zkcycles=10 not checked; the other fails on ir-count alone.
    result.assert_outcomes(passed=2, failed=1)
    out = result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*_ test_ticks_over _*",
            "instrbudget: ir_instructions * > max_instr=5",
            "*ir_instructions: * exceeds max_instr=5 by *",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*::test_ticks: accepted (zkvm unavailable)",  # grew since the baseline, in an update
            "instrbudget: zkvm metrics unavailable in 2 test(s): not measured, their limits not checked and "
            "their baseline entries kept:",
            "instrbudget:   test_choice.py::test_ticks: cannot be built for riscv32: "
            "invalid output constraint '=a' in asm",
            f"instrbudget:     at ticks.c:{TICKS_LINE}, in ticks",
            "instrbudget:     not checked: max_zkcycles=10",
            "instrbudget:   test_choice.py::test_ticks_over: cannot be built for riscv32: *",
        ],
        consecutive=False,
    )
    assert "zk_cycles: 0" not in out
    ticks = doc["tests"]["test_choice.py::test_ticks"]
    assert set(ticks["metrics"]) == {"ir_instructions"}
    assert ticks["unavailable"]["zk_cycles"] == {
        "model": "zkvm",
        "reason": "cannot be built for riscv32: invalid output constraint '=a' in asm",
        "where": f"ticks.c:{TICKS_LINE}",
        "function": "ticks",
        "limit": 10,
        "stop": None,
        "baseline": kept["zk_cycles"]["total"],
    }
    assert set(metrics(doc, "test_work")) == {"ir_instructions", *ZK_METRICS}
    # The update wrote the new IR count and kept the zkvm entries it could not measure.
    entry = baseline(pytester)["tests"]["test_choice.py::test_ticks"]
    assert entry["ir_instructions"]["total"] == ticks["metrics"]["ir_instructions"]["value"]
    assert entry["ir_instructions"] != kept["ir_instructions"]
    assert {name: entry[name] for name in ZK_METRICS} == {name: kept[name] for name in ZK_METRICS}
    summary = (pytester.path / "summary.md").read_text()
    assert "| unavailable |" in summary
    assert f"at ticks.c:{TICKS_LINE}, in ticks" in summary

    # pytest-xdist: the same results.
    _, serial = run(pytester)
    result, parallel = run(pytester, "-n", "2")
    result.assert_outcomes(passed=2, failed=1)
    assert parallel["tests"] == serial["tests"]
    result.stdout.fnmatch_lines([f"instrbudget:     at ticks.c:{TICKS_LINE}, in ticks"])


def test_model_choice_unavailable_limit_skipped_per_test_and_bad_policy(pytester: pytest.Pytester) -> None:
    tests = TICKS_TESTS.replace("LIMIT", "10").replace("max_zkcycles=10)", 'max_zkcycles=10, unavailable="skip")')
    project(pytester, tests, models='["ir-count", "zkvm"]')
    result, doc = run(pytester, "-k", "test_ticks and not over")
    result.assert_outcomes(passed=1, deselected=2)
    assert doc["tests"]["test_choice.py::test_ticks"]["unavailable"]["zk_cycles"]["limit"] == 10
    pytester.makepyfile(test_choice=textwrap.dedent(tests.replace('unavailable="skip"', 'unavailable="ignore"')))
    result, _ = run(pytester, "-k", "test_ticks and not over")
    result.stderr.fnmatch_lines(['*test_ticks: budget(unavailable=...): expected "fail" or "skip", got \'ignore\''])
    assert result.ret != 0


def test_model_choice_unavailable_cut_off_fails_as_not_checked(pytester: pytest.Pytester) -> None:
    """A cut-off on a metric the model could not measure (``stop_at_zkcycles`` alone, no limit) was
    not checked: the test fails saying so, as for a limit, where it passed without a word; with
    ``unavailable="skip"`` it passes and the summary lists it."""
    tests = """
    import pytest

    @pytest.mark.budget(stop_at_zkcycles=100)
    def test_ticks(cbuild):
        assert cbuild.library("ticks.c").spin(10) == 45
    """
    project(pytester, tests, models='["ir-count", "zkvm"]')
    result, doc = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "instrbudget: zk_cycles not measured*",
            "  stop_at_zkcycles=100 not checked: the zkvm model could not measure this test:",
            "    cannot be built for riscv32: invalid output constraint '=a' in asm*",
        ],
        consecutive=True,
    )
    test = doc["tests"]["test_choice.py::test_ticks"]
    assert test["unavailable"]["zk_cycles"]["stop"] == 100
    assert test["status"] == "not measured"  # not "ok": it failed
    result.stdout.fnmatch_lines(["*test_choice.py::test_ticks*not measured (zkvm unavailable)*"])
    pytester.makepyfile(test_choice=textwrap.dedent(tests.replace("=100)", '=100, unavailable="skip")')))
    result, _ = run(pytester)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["instrbudget:     not checked: stop_at_zkcycles=100"])


def test_model_choice_a_model_left_out_says_its_baseline_entries_were_not_compared(pytester: pytest.Pytester) -> None:
    """A baseline with zkvm entries, and a run that leaves zkvm out (``--instrbudget-model``, or a
    test's ``models=``): green, as asked, but saying which budgeted tests' entries went uncompared,
    where it read as a run that compared them."""
    tests = """
    import pytest

    @pytest.mark.budget(tolerance=5)
    def test_one(cbuild):
        assert cbuild.library("work.c").work(10) == 45

    @pytest.mark.budget(tolerance=5, models=["ir-count"])
    def test_ir_only(cbuild):
        assert cbuild.library("work.c").work(10) == 45
    """
    project(pytester, tests, models='["ir-count", "zkvm"]')
    pytester.makepyfile(test_choice=textwrap.dedent(tests.replace(', models=["ir-count"]', "")))
    assert run(pytester, "--instrbudget-update")[0].ret == 0
    pytester.makepyfile(test_choice=textwrap.dedent(tests))
    result, _ = run(pytester, "--instrbudget-model=ir-count")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "instrbudget: zkvm left out of this run: 2 budgeted test(s) not compared on it:",
            "instrbudget:   test_choice.py::test_ir_only",
            "instrbudget:   test_choice.py::test_one",
        ]
    )
    result, _ = run(pytester)  # the session's models again: test_ir_only alone leaves zkvm out
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "instrbudget: zkvm left out of this run: 1 budgeted test(s) not compared on it:",
            "instrbudget:   test_choice.py::test_ir_only",
        ]
    )


LIBRARY_WITH_MAIN_C = """\
int work(int n) { int s = 0; for (int i = 0; i < n; i++) s += i; return s; }
int main(void) { return work(10) != 45; }
"""


def test_model_choice_library_defining_main_builds_for_riscv(pytester: pytest.Pytester) -> None:
    """The RISC-V library build's own entry does not collide with the library's main: the
    zkvm limit is measured (and here exceeded), not reported unavailable."""
    pytester.makefile(".c", lib=LIBRARY_WITH_MAIN_C)
    pytester.makepyfile(
        test_choice="""
        import pytest

        @pytest.mark.budget(max_zkcycles=1)
        def test_lib(cbuild):
            assert cbuild.library("lib.c", keep_main=True).work(10) == 45
        """
    )
    pytester.makepyprojecttoml(f'[tool.instrbudget]\nopt_level = "1"\nmodels = ["ir-count", "zkvm"]\n{ZKVM_TABLE}')
    result, doc = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*_ test_lib _*", "instrbudget: zk_cycles * > max_zkcycles=1", "*zk_cycles: * exceeds max_zkcycles=1 *"]
    )
    assert not doc["tests"]["test_choice.py::test_lib"]["unavailable"]


def test_model_choice_unavailable_program_run(pytester: pytest.Pytester) -> None:
    pytester.makefile(".c", main=TICKS_C + "\nint main(void) { return (int)(spin(10) != 45); }\n")
    pytester.makepyfile(
        test_choice="""
        import pytest

        @pytest.mark.budget(models=["zkvm", "ir-count"])
        def test_run(cbuild):
            run = cbuild.program("main.c").run()
            assert run.returncode == 0 and run.cost() > 0
            with pytest.raises(LookupError, match="this run's zk_cycles is unavailable: cannot be built for riscv32"):
                run.cost("zk_cycles")

        @pytest.mark.budget(models=["zkvm"])
        def test_zkvm_alone(cbuild):  # no metric measured: still unavailable, not 0
            run = cbuild.program("main.c").run()
            with pytest.raises(LookupError, match="this run's zk_cycles is unavailable: cannot be built for riscv32"):
                run.cost("zk_cycles")
        """
    )
    pytester.makepyprojecttoml(f'[tool.instrbudget]\nopt_level = "1"\n{ZKVM_TABLE}')
    result, doc = run(pytester)
    result.assert_outcomes(passed=2)
    test = doc["tests"]["test_choice.py::test_run"]
    assert set(test["metrics"]) == {"ir_instructions"}
    assert set(test["unavailable"]) == ZK_METRICS
    assert test["unavailable"]["zk_segments"]["where"] == f"main.c:{TICKS_LINE}"


def test_model_choice_reports_show_unavailable_metrics() -> None:
    measured = MetricResult("ir_instructions", "max_instr", 91, None, 91, 0.0, OK, model="ir-count")
    missing = MetricResult(
        "zk_cycles",
        "max_zkcycles",
        0,
        10,
        500,
        0.0,
        UNAVAILABLE,
        model="zkvm",
        unavailable="cannot be built for riscv32: invalid output constraint '=a' in asm",
        unavailable_where="src/a.cc:3",
        unavailable_function="_Z5ticksv",
        region_limits={"parse": 50},
    )
    result = Result("t.py::test_a", True, [measured, missing])
    assert missing.change is None
    assert set(result.costs()) == {"ir_instructions"}  # nothing to write for it
    assert report.table_lines([result], width=120) == [
        "test          ir_instructions    zk_cycles  status",
        "------------  ---------------  -----------  ---------------------",
        "t.py::test_a               91  unavailable  ok (zkvm unavailable)",
    ]
    assert report.unavailable_lines([result]) == [
        "zkvm metrics unavailable in 1 test(s): not measured, their limits not checked and their baseline "
        "entries kept:",
        "  t.py::test_a: cannot be built for riscv32: invalid output constraint '=a' in asm",
        "    at src/a.cc:3, in ticks()",
        "    not checked: max_zkcycles=10, zk_cycles of region 'parse'",
    ]
    doc = result.to_json()
    assert set(doc["metrics"]) == {"ir_instructions"}
    assert doc["unavailable"]["zk_cycles"]["function"] == "ticks()"
    page = report.html_page([result], {}, "baseline.json")
    payload = page.split('id="instrbudget-data">', 1)[1].split("</script>", 1)[0]
    (test,) = json.loads(payload)["tests"]
    assert test["status"] == "ok (zkvm unavailable)"
    assert set(test["metrics"]) == {"ir_instructions"}
    assert test["unavailable"]["zk_cycles"]["where"] == "src/a.cc:3"
    assert "| `t.py::test_a` | 91 | unavailable | ok (zkvm unavailable) |" in report.markdown_text([result])
    # Across an xdist worker's wire.
    assert Result.from_wire(json.loads(json.dumps(result.to_wire()))) == result
    # The same test failed on its unchecked limit (the "fail" policy): not measured, not "ok", and
    # not counted over budget in the markdown headline.
    failed = dataclasses.replace(result, failure="  max_zkcycles=10 not checked: ...")
    assert failed.status == "not measured"
    assert report.table_lines([failed], width=120)[2].endswith("not measured (zkvm unavailable)")
    text = report.markdown_text([failed])
    assert "1 test(s) measured, 0 over budget, 0 improved, 1 not measured (zkvm unavailable), 0 unchanged." in text


#: Assembly the riscv32 assembler rejects (an x86 mnemonic with no constraints): clang accepts it
#: until code generation, whose error alone would point at ``<inline asm>:1:2``.
PAUSE_C = """\
long spin(long n) {
    volatile long s = 0;
    for (long i = 0; i < n; i++) s += i;
    return s;
}

void relax(void) {
    __asm__ volatile("mfence");
}
"""


def test_model_choice_unavailable_inline_assembly_names_its_source_line(builder, write) -> None:  # type: ignore[no-untyped-def]
    from cbuild.models import default_registry

    source = write("relax.c", PAUSE_C)
    artifact = builder.build([source], models=[default_registry().create("zkvm")], kind="library")
    reason = artifact.machines()["riscv32"]["unavailable"]
    assert "unrecognized instruction mnemonic" in reason
    assert "relax.c:8" in reason
    assert "<inline asm>" not in reason


VECTOR_C = """\
void scale(float *out, const float *in, float k, int n) {
    for (int i = 0; i < n; i++) out[i] = in[i] * k + 1.0f;
}
"""


def test_model_choice_ir_instructions_do_not_depend_on_the_other_models(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    """A vectorisable loop counts the same IR instructions with or without the models that execute
    a RISC-V build (their build takes its own flags); an estimate from IR (execute = false) needs
    scalar IR, and says so in the docs."""
    source = write("scale.c", VECTOR_C)
    registry = default_registry()
    counts = {}
    for label, models in (
        ("alone", [IrCountModel()]),
        ("with zkvm and pipeline", [IrCountModel(), registry.create("zkvm"), registry.create("pipeline")]),
    ):
        with Library(builder.build([source], kind="library", models=models)) as lib:
            data = (ctypes.c_float * 1000)(*range(1000))
            out = (ctypes.c_float * 1000)()
            before = lib.snapshot()
            lib.scale(out, data, 2.0, 1000)
            (cost,) = IrCountModel().evaluate(lib.counts(before))
            counts[label] = cost.total
            assert out[999] == 1999.0
    assert counts["alone"] == counts["with zkvm and pipeline"]
    assert counts["alone"] < 5 * 1000  # vectorised: fewer instructions than elements x 5


def test_model_choice_changed_parameters_say_what_changed() -> None:
    old = "zkvm version=2 po2=20 page_cycles=322"
    assert changed_parameters(old, "zkvm version=2 po2=18 page_cycles=322") == "po2: 20 in the baseline, 18 now"
    assert changed_parameters(old, "zkvm version=3 po2=20") == (
        "page_cycles: 322 in the baseline, (none) now; version: 2 in the baseline, 3 now"
    )
    assert changed_parameters("heap", "heap x") == "heap in the baseline, heap x now"
    # Values are Python literals, spaces and all.
    assert changed_parameters("m version=1 flags=['-O1', '-g']", "m version=1 flags=['-O2', '-g']") == (
        "flags: ['-O1', '-g'] in the baseline, ['-O2', '-g'] now"
    )
