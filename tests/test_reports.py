"""The summary table, JSON names and the markdown summary, on results made here and in real sessions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cbuild.report.order import display_order
from pytest_instrbudget import report
from pytest_instrbudget.results import ERROR, IMPROVED, NEW, OK, OVER_LIMIT, REGRESSED, MetricResult
from pytest_instrbudget.results import TestResult as Result


def metric(name: str, value: int, baseline: int | None, status: str = OK, **extra: object) -> MetricResult:
    return MetricResult(name, "", value, None, baseline, 0.0, status, **extra)  # type: ignore[arg-type]


def result(nodeid: str, *metrics: MetricResult, failure: str | None = None) -> Result:
    return Result(nodeid, True, list(metrics), failure)


RESULTS = [
    result(
        "tests/test_parse.py::test_parse_a_very_long_parametrized_name[input-of-considerable-length-0]",
        metric("ir_instructions", 120_500, 100_000, REGRESSED),
        metric("zk_cycles", 262_144, 262_144),
        failure="over budget",
    ),
    result("tests/test_parse.py::test_small", metric("ir_instructions", 91, 91), metric("zk_cycles", 8192, 8192)),
    result(
        "tests/test_new.py::test_fresh",
        metric("ir_instructions", 5_000, None, NEW),
        metric("zk_cycles", 8192, None, NEW),
    ),
    result(
        "tests/test_sort.py::test_sort",
        metric("ir_instructions", 900, 1_000, IMPROVED),
        metric("zk_cycles", 8192, 8192),
    ),
]


def test_table_wide_terminal_one_row_per_changed_test() -> None:
    assert report.table_lines(RESULTS, width=200) == [
        "test                                                                                           "
        "ir_instructions   change  zk_cycles  status",
        "---------------------------------------------------------------------------------------------  "
        "---------------  -------  ---------  ---------",
        "tests/test_new.py::test_fresh                                                                  "
        "          5,000               8,192  new",
        "tests/test_parse.py::test_parse_a_very_long_parametrized_name[input-of-considerable-length-0]  "
        "        120,500  +20.50%    262,144  regressed",
        "tests/test_sort.py::test_sort                                                                  "
        "            900  -10.00%      8,192  improved",
        "1 unchanged test(s) not listed (-v or --instrbudget-table=all lists them)",
    ]


def test_table_narrow_terminal_puts_long_names_on_their_own_line() -> None:
    lines = report.table_lines(RESULTS, width=80)
    assert lines == [
        "test                              ir_instructions   change  zk_cycles  status",
        "--------------------------------  ---------------  -------  ---------  ---------",
        "tests/test_new.py::test_fresh               5,000               8,192  new",
        "tests/test_parse.py::test_parse_a_very_long_parametrized_name[input-of-considerable-length-0]",
        "                                          120,500  +20.50%    262,144  regressed",
        "tests/test_sort.py::test_sort                 900  -10.00%      8,192  improved",
        "1 unchanged test(s) not listed (-v or --instrbudget-table=all lists them)",
    ]


def test_table_too_narrow_for_a_column_per_metric_lists_them_under_each_name() -> None:
    lines = report.table_lines(RESULTS, width=60, show_all=True)
    assert lines[:6] == [
        "tests/test_new.py::test_fresh: new",
        "    ir_instructions    5,000",
        "    zk_cycles          8,192",
        "tests/test_parse.py::test_parse_a_very_long_parametrized_name[input-of-considerable-length-0]: regressed",
        "    ir_instructions  120,500  +20.50%",
        "    zk_cycles        262,144",
    ]
    assert len(lines) == 4 * 3
    assert all(len(line) <= 60 for line in lines if not line.startswith("tests/test_parse"))


def test_table_all_rows_with_show_all_and_nothing_hidden() -> None:
    lines = report.table_lines(RESULTS, width=200, show_all=True)
    assert len(lines) == 2 + 4
    assert any(line.startswith("tests/test_parse.py::test_small ") and line.endswith("  ok") for line in lines)


def test_json_names_are_demangled_and_keep_their_symbols() -> None:
    m = metric(
        "ir_instructions",
        10,
        None,
        functions={"_ZN2ns5parseEPKc": 7, "main": 3},
        inclusive={"_ZN2ns5parseEPKc": 7, "main": 10},
        calls={"_ZN2ns5parseEPKc": 2},
        lines=[["_ZN2ns5parseEPKc", "p.cc:3", 7]],
    )
    doc = m.to_json()
    assert doc["functions"] == {"main": 3, "ns::parse(char const*)": 7}
    assert doc["inclusive"] == {"main": 10, "ns::parse(char const*)": 7}
    assert doc["calls"] == {"ns::parse(char const*)": 2}
    assert doc["symbols"] == {"ns::parse(char const*)": "_ZN2ns5parseEPKc"}
    assert doc["lines"] == [["ns::parse(char const*)", "p.cc:3", 7]]


CXX = """\
namespace geo {
struct Point { long x, y; };
long dist2(const Point &a, const Point &b) { long dx = a.x - b.x, dy = a.y - b.y; return dx * dx + dy * dy; }
}
extern "C" long far_points(long n) {
    long total = 0;
    for (long i = 0; i < n; i++) total += geo::dist2(geo::Point{i, 0}, geo::Point{0, i});
    return total;
}
"""

CXX_TEST = """\
import pytest

@pytest.mark.budget(max_instr=100_000)
def test_far(cbuild):
    lib = cbuild.library("geo.cc", opt_level="0")
    assert lib.far_points(10) == 570
"""


def test_session_json_and_table_with_cxx_names(pytester: pytest.Pytester) -> None:
    pytester.makefile(".cc", geo=CXX)
    pytester.makepyfile(test_geo=CXX_TEST)
    out = pytester.runpytest("-p", "no:cacheprovider", "--instrbudget-json=out.json", "-v")
    out.assert_outcomes(passed=1)
    doc = json.loads((pytester.path / "out.json").read_text())
    m = doc["tests"]["test_geo.py::test_far"]["metrics"]["ir_instructions"]
    name = "geo::dist2(geo::Point const&, geo::Point const&)"
    assert name in m["functions"]
    assert m["symbols"][name] == "_ZN3geo5dist2ERKNS_5PointES2_"
    assert all(not f.startswith("_Z") for f in m["functions"])
    table = out.stdout.str().split("= instrbudget =", 1)[1]
    row = next(line for line in table.splitlines() if line.startswith("test_geo.py::test_far "))
    assert row.endswith(" new")


def regressed(i: int, n_functions: int = 40) -> Result:
    functions = {f"_ZN6module8functionILi{k}EEEvv": 1_000 * (k + 1) + i for k in range(n_functions)}
    old = {f: v - 10 * (k % 7) for k, (f, v) in enumerate(functions.items())}
    lines = [[f, f"src/module_{i}.cc:{k + 1}", 500 - k] for k, f in enumerate(functions)]
    m = metric("ir_instructions", sum(functions.values()), sum(old.values()), REGRESSED)
    m = MetricResult(
        **{**m.__dict__, "functions": functions, "baseline_functions": old, "lines": lines, "limit": 10}  # type: ignore[arg-type]
    )
    return result(f"tests/test_suite_{i // 100}.py::test_case_with_a_long_descriptive_name[{i}]", m, failure="x" * 400)


def test_markdown_regression_lists_grown_functions_and_lines() -> None:
    text = report.markdown_text([regressed(1, n_functions=8), RESULTS[1]])
    assert text.startswith("## instrbudget\n\n2 test(s) measured, 1 over budget, 0 improved, 1 unchanged.\n")
    assert "| test | ir_instructions | status |" in text
    assert "Functions that grew (ir_instructions):" in text
    assert "| `void module::function<6>()` | 6,941 | 7,001 | +60 |" in text
    assert "| src/module_1.cc:1 | `void module::function<0>()` | 500 |" in text
    assert "test_small" not in text  # unchanged


def test_markdown_of_1000_regressions_stays_under_githubs_limit() -> None:
    results = [regressed(i) for i in range(1000)]
    text = report.markdown_text(results)
    assert len(text.encode()) <= 1024 * 1024
    assert text.count("\n| `tests/test_suite_") == 1000  # every test has its table row
    shown = text.count("<details>")
    assert 0 < shown < 1000
    assert text.rstrip().endswith("--instrbudget-json or --instrbudget-html has everything.*")
    assert f"*{1000 - shown} more item(s) not shown" in text
    assert text.count("<details>") == text.count("</details>")  # nothing cut mid-way


def test_functions_report_of_a_metric_measured_per_call_only_shows_no_exclusive_zeros() -> None:
    """The heap model's allocations come per call path and inclusive per function, with no
    exclusive costs: the report says ``-`` there, not 0 for every function."""
    allocations = metric(
        "allocations", 75, None, NEW, inclusive={"words": 75, "__instrbudget_libc_strdup": 50}, calls={"words": 1}
    )
    instructions = metric("ir_instructions", 900, None, NEW, functions={"words": 700}, inclusive={"words": 900})
    lines = report.breakdown_lines([result("t.py::test_words", instructions, allocations)], "functions", width=80)
    rows = [line.split() for line in lines]
    assert ["words", "700", "900", "-"] in rows
    assert ["words", "-", "75", "1"] in rows
    assert ["strdup", "[libc]", "-", "50", "-"] in rows


def test_outputs_put_numbers_in_test_ids_in_numeric_order() -> None:
    from pytest_instrbudget.report import display_order

    ids = ["t.py::test_copy[100000]", "t.py::test_copy[1000]", "t.py::test_b", "t.py::test_copy[10000]", "t.py::test_a"]
    assert sorted(ids, key=display_order) == [
        "t.py::test_a",
        "t.py::test_b",
        "t.py::test_copy[1000]",
        "t.py::test_copy[10000]",
        "t.py::test_copy[100000]",
    ]
    assert sorted(["t.py::x[a-10]", "t.py::x[a-9]", "t.py::x[b-1]"], key=display_order) == [
        "t.py::x[a-9]",
        "t.py::x[a-10]",
        "t.py::x[b-1]",
    ]


STRINGS_CC = """\
#include <string>
extern "C" unsigned long grow(int n) {
    std::string s;
    for (int i = 0; i < n; i++) s += "abc";
    return s.size();
}
"""

STRINGS_TEST = """\
import pytest

@pytest.mark.budget(max_instr=100)
def test_a_string_that_grows_past_its_budget(cbuild):
    assert cbuild.library("strings.cc").grow(1000) == 3000
"""


def test_a_cxx_failure_message_names_libcxx_functions_readably_in_80_columns(pytester: pytest.Pytester) -> None:
    """libc++'s demangled names run to hundreds of characters (``std::__1::basic_string<char,
    std::__1::char_traits<char>, ...>``); a failure message shows them without the inline
    namespace and template arguments, so that its lines fit a CI log."""
    pytester.makefile(".cc", strings=STRINGS_CC)
    pytester.makepyfile(test_strings=STRINGS_TEST)
    out = pytester.runpytest("-p", "no:cacheprovider")
    out.assert_outcomes(failed=1)
    text = out.stdout.str()
    message = text[text.index("instrbudget: ir_instructions") :].splitlines()
    block = "\n".join(message[: next(i for i, line in enumerate(message[1:], 1) if not line.startswith("  "))])
    assert "costliest functions:" in block
    assert "std::basic_string<…>" in block
    assert "std::__1::" not in block
    assert max(len(line) for line in block.splitlines()) <= 80, block


def test_readable_names_keep_what_names_the_function() -> None:
    from cbuild.build.demangle import _cxa_demangle, readable

    assert readable("mk_sort_ints") == "mk_sort_ints"
    assert readable("__instrbudget_libc_memmove") == "memmove [libc]"
    if _cxa_demangle() is None:
        pytest.skip("no C++ runtime with __cxa_demangle on this machine")
    assert readable("_Z5parseRKi") == "parse(int const&)"  # short: unchanged
    append = "_ZNSt3__112basic_stringIcNS_11char_traitsIcEENS_9allocatorIcEEE6appendEPKc"
    assert readable(append) == "std::basic_string<…>::append(char const*)"
    assert readable(append, limit=200).startswith("std::__1::basic_string<char, std::__1::char_traits<char>")
    static = "_ZN3foo3barINSt3__16vectorIiNS1_9allocatorIiEEEEEEvT_ (a_source_file_with_a_long_name.cpp)"
    assert readable(static) == "void foo::bar<…>(…) (a_source_file_with_a_long_name.cpp)"  # the file stays
    anonymous = "_ZN12_GLOBAL__N_19long_nameINSt3__16vectorIiNS1_9allocatorIiEEEEEEvv"
    assert readable(anonymous, limit=30) == "void (anonymous namespace)::long_name<…>()"


def test_readable_names_of_one_table_stay_apart() -> None:
    """Two instantiations that shorten alike keep what tells them apart; identical names are
    told apart by their symbols."""
    from cbuild.build.demangle import _cxa_demangle, readable_names

    if _cxa_demangle() is None:
        pytest.skip("no C++ runtime with __cxa_demangle on this machine")
    ints, longs = "_ZNSt3__16__sortIRNS_6__lessIiiEEPiEEvT0_S5_T_", "_ZNSt3__16__sortIRNS_6__lessIllEEPlEEvT0_S5_T_"
    assert readable_names([ints, "main"], limit=30) == {ints: "void std::__sort<…>(…)", "main": "main"}
    assert readable_names([ints, longs], limit=30) == {
        ints: "void std::__sort<…>(int*, int*, std::__less<…>&)",
        longs: "void std::__sort<…>(long*, long*, std::__less<…>&)",
    }
    assert readable_names(["f (a.c)", "f (b.c)"]) == {"f (a.c)": "f (a.c)", "f (b.c)": "f (b.c)"}


def test_table_columns_follow_the_sessions_model_order_whichever_tests_ran() -> None:
    """A test that chose only the zkvm model sorts first; the columns still follow the
    session's order, as they do when it is not selected."""
    only_zk = result("tests/test_a.py::test_zk", metric("zk_cycles", 8192, None, NEW))
    both = result(
        "tests/test_b.py::test_both", metric("ir_instructions", 90, None, NEW), metric("zk_cycles", 8192, None, NEW)
    )
    order = ["ir_instructions", "pipeline_cycles", "zk_cycles"]
    for shown in ([only_zk, both], [both]):
        assert report.table_lines(shown, width=120, order=order)[0].split() == [
            "test",
            "ir_instructions",
            "zk_cycles",
            "status",
        ]


def test_markdown_keeps_test_ids_whole_in_tables_and_summaries() -> None:
    """A parameter with ``|``, a backtick or HTML in it: the row stays one row (GitHub splits cells
    at every unescaped ``|``, in code spans too), the code span holds the backtick, and the
    failure's summary shows the id as text."""
    ids = ["t.py::test_ids[a|b]", "t.py::test_ids[x`y]", "t.py::test_ids[<b>bold</b>]"]
    text = report.markdown_text(
        [result(n, metric("ir_instructions", 964, 804, REGRESSED), failure="over budget") for n in ids]
    )
    assert "| `t.py::test_ids[a\\|b]` | 964 (+19.90%) | regressed |" in text
    assert "| ``t.py::test_ids[x`y]`` | 964 (+19.90%) | regressed |" in text
    assert "<summary>t.py::test_ids[&lt;b&gt;bold&lt;/b&gt;]</summary>" in text


def test_markdown_headline_counts_every_test_and_says_why_costs_do_not_compare() -> None:
    unbudgeted = Result("t.py::test_free", False, [metric("ir_instructions", 110, 100, REGRESSED)], None)
    text = report.markdown_text(
        [regressed(1, n_functions=2), unbudgeted, RESULTS[1], RESULTS[2]],
        notes=["baseline b.json was made with another toolchain or other models (differs in: assertions)"],
    )
    assert text.startswith(
        "## instrbudget\n\n4 test(s) measured, 1 over budget, 0 improved, 1 new, 1 regressed (no budget), "
        "1 unchanged.\n\n> baseline b.json was made with another toolchain or other models (differs in: assertions)\n"
    )


def test_outputs_put_negative_parameters_in_numeric_order() -> None:
    ids = ["t.py::x[2997]", "t.py::x[-3]", "t.py::x[2]", "t.py::x[1-10]", "t.py::x[1--3]", "t.py::x[1-2]"]
    assert sorted(ids, key=display_order) == [
        "t.py::x[-3]",
        "t.py::x[1--3]",
        "t.py::x[1-2]",
        "t.py::x[1-10]",
        "t.py::x[2]",
        "t.py::x[2997]",
    ]


def test_html_report_rows_are_tests_that_build_or_have_a_budget(pytester: pytest.Pytester) -> None:
    # A plain Python test (no cbuild fixture, no marker) has no row: every collected test holds a
    # budget entry (None without a marker), which once counted as having one.
    pytester.makefile(".c", one="int one(void) { return 1; }\n")
    pytester.makepyfile(
        test_mixed="""
import pytest

def test_plain_python():
    assert 1 + 1 == 2

@pytest.mark.budget(max_instr=1000)
def test_budget_only():  # fails: a limit on what it never measures
    pass

def test_builds(cbuild):
    assert cbuild.library("one.c").one() == 1
"""
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "--instrbudget-html=report.html")
    result.assert_outcomes(passed=2, failed=1)
    text = (pytester.path / "report.html").read_text()
    assert "test_mixed.py::test_builds" in text
    assert "test_mixed.py::test_budget_only" in text
    assert "test_plain_python" not in text


def test_stale_entries_are_listed_in_the_order_of_the_other_outputs(tmp_path: Path) -> None:
    from cbuild.report.update import stale

    entries = ["gone.py::test_copy[10000]", "gone.py::test_copy[1000]", "gone.py::test_copy[100]"]
    found = stale(entries, collected=set(), measured=set(), partial=set(), root=tmp_path)
    assert found == ["gone.py::test_copy[100]", "gone.py::test_copy[1000]", "gone.py::test_copy[10000]"]


def test_a_rewrite_of_the_baseline_accounts_for_every_entry_it_leaves_out(tmp_path: Path) -> None:
    """A rewrite for another toolchain starts from nothing: an entry of a test that failed, or did
    not run, was left out without a word ("0 added, 0 changed, 1 pruned" of a file that went from 4
    entries to 1); and a stale entry the file had is counted as pruned."""
    from cbuild.models.costs import Cost
    from cbuild.report.snapshot import Snapshot
    from cbuild.report.update import Measured, apply, rewrite_note

    def entry(total: int) -> dict[str, Cost]:
        return {"ir_instructions": Cost("ir_instructions", total)}

    base = Snapshot({"clang": "21", "models": "ir-count version=1"}, {f"t.py::{n}": entry(1) for n in "abcd"})
    done = apply(
        tmp_path / "b.json",
        base,
        {"t.py::a": Measured(True, entry(10)), "t.py::b": Measured(False, entry(5))},
        session={"clang": "22", "models": "ir-count version=1"},
        update=True,
        prune=True,
        stale_entries=["t.py::d", "t.py::gone"],
        metric_models={"ir_instructions": "ir-count"},
        session_models={"ir-count"},
        describe=lambda name: name,
    )
    assert (done.added, done.changed, done.pruned, list(done.tests)) == ([], ["t.py::a"], ["t.py::d"], ["t.py::a"])
    assert done.dropped == ["t.py::b", "t.py::c"]
    note = rewrite_note(done)
    assert note is not None
    assert note.endswith("; 2 entries of tests this run did not measure in full are no longer in it: t.py::b, t.py::c")


def test_reports_show_a_stopped_runs_other_metrics_without_a_value() -> None:
    """A program run stopped at a cut-off on zk_cycles counted nothing for its other metrics
    (status error, 0): every report shows them as ``-``, as the terminal's table does, not 0."""
    stopped = result(
        "t.py::test_stop",
        metric("ir_instructions", 0, 500, ERROR),  # its baseline: no change of -100% either
        metric("zk_cycles", 1_211, None, OVER_LIMIT),
        failure="stopped",
    )
    assert report.table_lines([stopped], width=100)[2].split()[1:3] == ["-", "1,211"]
    row = next(line for line in report.markdown_text([stopped]).splitlines() if "`t.py::test_stop`" in line)
    assert row.split(" | ")[1:3] == ["-", "1,211"]
    page = report.html_page([stopped], {}, "baseline.json")
    payload = json.loads(page.split('id="instrbudget-data">', 1)[1].split("</script>", 1)[0])
    (test,) = payload["tests"]
    assert test["metrics"]["ir_instructions"]["value"] is None
    assert test["metrics"]["ir_instructions"]["change"] is None
    assert test["metrics"]["zk_cycles"]["value"] == 1_211
