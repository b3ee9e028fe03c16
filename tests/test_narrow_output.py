"""Output read in an 80-column CI log: names of real projects (cmark-gfm, brotli) at 60, 80 and 200
columns. Test names, file names and line numbers are never cut."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cbuild.build.demangle import demangle, readable
from cbuild.report.diff import Change
from cbuild.report.diff import render_text as diff_text
from cbuild.report.texttable import ELLIPSIS
from pytest_instrbudget import report
from pytest_instrbudget.results import OK, REGRESSED, MetricResult
from pytest_instrbudget.results import TestResult as Result

CMARK = "tests/third_party/test_cmark_gfm_library.py::test_cmark_renders_the_big_commonmark_document_to_html"
BROTLI = "tests/third_party/test_brotli_library.py::test_brotli_round_trip[quality-11-lgwin-24-large-text]"
SMALL = "tests/test_sort.py::test_sort"
SRC = "vendor/cmarkgfm-2025.10.22/third_party/cmark/src/"
ENC = "vendor/brotli-1.1.0/c/enc/"


INTROSORT = (
    "std::__1::__introsort<std::__1::_ClassicAlgPolicy, std::__1::__less<int, int>&, int*, false>(int*, "
    "int*, std::__1::__less<int, int>&, std::__1::iterator_traits<int*>::difference_type, bool)"
)


def metric(name: str, value: int, baseline: int, **extra: object) -> MetricResult:
    status = REGRESSED if value > baseline else OK
    return MetricResult(name, "", value, None, baseline, 0.0, status, **extra)  # type: ignore[arg-type]


RESULTS = [
    Result(
        CMARK,
        True,
        [
            metric(
                "ir_instructions",
                61_916_003,
                61_000_000,
                lines=[
                    ["houdini_escape_html0", SRC + "houdini_html_e.c:41", 9_100_000],
                    ["cmark_parse_inlines", SRC + "inlines.c:1288", 7_000_000],
                    ["S_render_node", SRC + "html.c:203", 10_000],
                ],
                functions={"houdini_escape_html0": 9_200_000, "handle_pointy_brace (src/inlines.c)": 50_000},
            ),
            metric("zk_cycles", 80_740_352, 80_740_352),
            metric("pipeline_cycles", 66_014_201, 65_000_000),
        ],
        failure="over budget",
    ),
    Result(
        BROTLI,
        True,
        [
            metric(
                "ir_instructions",
                9_369_746,
                9_369_746,
                lines=[
                    ["BrotliCompressFragmentTwoPassImpl", ENC + "compress_fragment_two_pass.c:312", 4_000_000],
                    ["BrotliCreateBackwardReferences", ENC + "backward_references_inc.h:87", 3_000_000],
                ],
                functions={INTROSORT: 3_000},
            ),
            metric("zk_cycles", 12_582_912, 12_000_000),
            metric("pipeline_cycles", 10_001_000, 10_001_000),
        ],
    ),
    Result(SMALL, True, [metric("ir_instructions", 900, 800), metric("zk_cycles", 8192, 8192)]),
]


def whole_names(lines: list[str], names: tuple[str, ...] = (CMARK, BROTLI, SMALL)) -> None:
    """Every test name, file name and line number appears whole; nothing is elided."""
    text = "\n".join(lines)
    assert ELLIPSIS not in text
    for name in names:
        assert name in text


def fits(lines: list[str], width: int) -> None:
    """Lines longer than ``width`` are only a name on its own (never cut, so the log wraps it)."""
    for line in lines:
        if len(line) > width:
            assert "  " not in line.strip(), line


def test_summary_table_at_200_columns_one_row_per_test() -> None:
    lines = report.table_lines(RESULTS, width=200, show_all=True)
    assert lines[0].split() == [
        "test",
        "ir_instructions",
        "change",
        "zk_cycles",
        "change",
        "pipeline_cycles",
        "change",
        "status",
    ]
    assert [line.split()[0] for line in lines[2:]] == [SMALL, BROTLI, CMARK]
    whole_names(lines)
    fits(lines, 200)


def test_summary_table_at_80_columns_lists_metrics_under_each_name() -> None:
    lines = report.table_lines(RESULTS, width=80, show_all=True)
    assert lines == [
        f"{SMALL}: regressed",
        "    ir_instructions         900  +12.50%",
        "    zk_cycles             8,192",
        f"{BROTLI}: regressed",
        "    ir_instructions   9,369,746",
        "    zk_cycles        12,582,912   +4.86%",
        "    pipeline_cycles  10,001,000",
        f"{CMARK}: regressed",
        "    ir_instructions  61,916,003   +1.50%",
        "    zk_cycles        80,740,352",
        "    pipeline_cycles  66,014,201   +1.56%",
    ]
    whole_names(lines)


def test_summary_table_at_80_columns_with_one_metric_wraps_long_names() -> None:
    one = [Result(r.nodeid, True, r.metrics[:1], r.failure) for r in RESULTS]
    lines = report.table_lines(one, width=80, show_all=True)
    assert lines == [
        "test                                         ir_instructions   change  status",
        "-------------------------------------------  ---------------  -------  ---------",
        "tests/test_sort.py::test_sort                            900  +12.50%  regressed",
        BROTLI,
        "                                                   9,369,746           ok",
        CMARK,
        "                                                  61,916,003   +1.50%  regressed",
    ]
    whole_names(lines)
    fits(lines, 80)


@pytest.mark.parametrize("width", [60, 80, 200])
def test_line_breakdown_keeps_files_and_line_numbers(width: int) -> None:
    lines = report.breakdown_lines(RESULTS, "lines", width=width)
    whole_names(lines, (CMARK, BROTLI))
    fits(lines, width)
    text = "\n".join(lines)
    for where in ("houdini_html_e.c:41", "inlines.c:1288", "html.c:203", "compress_fragment_two_pass.c:312"):
        assert re.search(rf"(^|[ /]){re.escape(where)} \(", text, re.M), where
    if width == 200:
        assert f"    {SRC}houdini_html_e.c:41 (houdini_escape_html0)  9,100,000   14.7%" in lines
    else:  # the directory they share is named once
        assert lines[lines.index("  ir_instructions  (total 61,916,003)") + 1] == f"    in {SRC}"
        assert lines[lines.index("  ir_instructions  (total 9,369,746)") + 1] == f"    in {ENC}"


def test_line_breakdown_at_60_columns_snapshot() -> None:
    lines = report.breakdown_lines(RESULTS[1:2], "lines", width=60)
    assert lines == [
        BROTLI,
        "  ir_instructions  (total 9,369,746)",
        f"    in {ENC}",
        "    compress_fragment_two_pass.c:312 (BrotliCompressFragmentTwoPassImpl)",
        "                                           4,000,000   42.7%",
        "    backward_references_inc.h:87 (BrotliCreateBackwardReferences)",
        "                                           3,000,000   32.0%",
    ]


@pytest.mark.parametrize("width", [60, 80, 200])
def test_function_breakdown_keeps_names(width: int) -> None:
    # Test names whole; functions named as failure messages name them (a C++ name's template
    # arguments and parameters shortened to <…> and (…) as far as it takes), never cut by the table.
    lines = report.breakdown_lines(RESULTS, "functions", width=width)
    text = "\n".join(lines)
    for name in (CMARK, BROTLI, "handle_pointy_brace (src/inlines.c)"):
        assert name in text
    assert any(line.strip().startswith(readable(INTROSORT)) for line in lines)
    assert readable(INTROSORT) == "std::__introsort<…>(…)"
    fits(lines, width)


def test_diff_at_80_columns_names_each_test_once() -> None:
    found = [
        Change(CMARK, "ir_instructions", 61_000_000, 61_916_003, [("houdini_escape_html0", 8_284_000, 9_200_000)], []),
        Change(CMARK, "pipeline_cycles", 65_000_000, 66_014_201, [], []),
        Change(SMALL, "ir_instructions", 800, 900, [], []),
    ]
    assert diff_text(found, 80).splitlines() == [
        CMARK,
        "  ir_instructions: 61,000,000 -> 61,916,003 +1.50%",
        "    houdini_escape_html0  +916,000  (8,284,000 -> 9,200,000)",
        "  pipeline_cycles: 65,000,000 -> 66,014,201 +1.56%",
        "tests/test_sort.py::test_sort  ir_instructions: 800 -> 900 +12.50%",
    ]
    assert diff_text(found, 200).splitlines()[0] == f"{CMARK}  ir_instructions: 61,000,000 -> 61,916,003 +1.50%"
    # A test whose first metric fits beside its name and second does not: named once, above both.
    short = "tests/test_a.py::test_a_name_that_leaves_room_for_one_metric_________"
    mixed = [Change(short, "zk_segments", 6, 8, [], []), Change(short, "zk_paging_cycles", 271_683, 292_641, [], [])]
    assert (
        len(f"{short}  zk_segments: 6 -> 8 +33.33%")
        <= 100
        < len(f"{short}  zk_paging_cycles: 271,683 -> 292,641 +7.71%")
    )
    assert diff_text(mixed, 100).splitlines() == [
        short,
        "  zk_segments: 6 -> 8 +33.33%",
        "  zk_paging_cycles: 271,683 -> 292,641 +7.71%",
    ]


LAMBDA = (
    "_ZZNSt3__112__hash_tableINS_17__hash_value_typeINS_12basic_stringIcNS_11char_traitsIcEENS_9allocatorIcEEEEiEE"
    "NS_22__unordered_map_hasherIS7_NS_4pairIKS7_iEENS_4hashIS7_EENS_8equal_toIS7_EEEENS_21__unordered_map_equalIS7_"
    "SC_SG_SE_EENS5_ISC_EEE16__emplace_uniqueB9nie220108IJRKNS_21piecewise_construct_tENS_5tupleIJRSB_EEENSQ_IJEEEEEE"
    "NSA_INS_15__hash_iteratorIPNS_11__hash_nodeIS8_PvEEEEbEEDpOT_ENKUlSR_SP_OSS_OST_E_clESR_SP_S14_S15_"
)


def test_line_breakdown_names_a_cxx_function_as_failure_messages_do() -> None:
    """A line of a libc++ lambda names its function in the short form failure messages and diffs
    use (``std::__hash_table<…>::…``), not in its demangled 400 characters."""
    lines = report.breakdown_lines(
        [Result(SMALL, True, [metric("ir_instructions", 900, 800, lines=[[LAMBDA, "src/map.cc:12", 600]])])],
        "lines",
    )
    assert len(demangle(LAMBDA)) > 300
    assert f"    src/map.cc:12 ({readable(LAMBDA)})  600   66.7%" in lines


def _introsort(comparator: str) -> str:
    """libc++'s std::__introsort instantiated for a lambda of f (``$_0``, ``$_1``)."""
    return (
        f"_ZNSt3__111__introsortINS_17_ClassicAlgPolicyERZ1fRNS_6vectorIiNS_9allocatorIiEEEEE3{comparator}PiLb0EEEv"
        "T1_SA_T0_NS_15iterator_traitsISA_E15difference_typeEb"
    )


def test_a_new_instantiation_that_grew_is_told_apart_from_the_baselines() -> None:
    """A second std::sort with another comparator adds an instantiation of std::__introsort next to
    the one the baseline has: "grew most" names it so that it does not read as that one, cost 0
    before (both read ``void std::__introsort<…>(…)`` when shortened apart)."""
    from pytest_instrbudget.session import _failure_text

    old, new = _introsort("$_0"), _introsort("$_1")
    m = metric(
        "ir_instructions",
        300_000,
        150_000,
        functions={old: 145_000, new: 145_255, "f": 10_000},
        baseline_functions={old: 145_000, "f": 5_000},
    )
    text = _failure_text(m, Path("/project"))
    grown = text.split("functions whose cost grew most:\n")[1].splitlines()[:4]
    assert grown[0] == (
        "    void std::__introsort<…>(int*, int*, f(std::vector<…>&)::$_1&, "
        "std::iterator_traits<…>::difference_type, bool)"
    )
    assert grown[1].strip() == "+145,255  (0 -> 145,255)"
    assert grown[2].startswith("    f  +5,000  (5,000 -> 10,000)")


SENTRY = "_ZNSt3__113basic_ostreamIcNS_11char_traitsIcEEE6sentryC1ERS3_"


def test_functions_report_and_outside_calls_name_cxx_functions_as_failure_messages_do() -> None:
    """The functions report named a libc++ lambda in its demangled 400 characters (2,600 for a real
    unordered_map), and a failure's 'calls outside the count' ran on in one line of full names."""
    from pytest_instrbudget.session import _failure_text

    m = metric(
        "ir_instructions",
        900,
        800,
        functions={LAMBDA: 600, "main": 300},
        outside_calls={SENTRY: 40, "_ZNSt3__18ios_base4initEPv": 3, "puts": 2, "clock": 1},
    )
    lines = report.breakdown_lines([Result(SMALL, True, [m])], "functions", width=80)
    assert readable(LAMBDA) == "std::__hash_table<…>::__emplace_unique<…>(…)::{lambda(…)#1}::operator()(…) const"
    assert f"    {readable(LAMBDA)}" in lines
    fits(lines, 80)
    text = _failure_text(m, Path("/project"))
    outside = text.split("calls outside the count")[1]
    assert "std::basic_ostream<…>::sentry::sentry(…) x40, std::__1::ios_base::init(void*) x3" in " ".join(
        outside.split()
    )
    fits(text.splitlines(), 80)


def test_calls_outside_the_count_wrap_between_calls_not_inside_one() -> None:
    """A name and its count stay on one line: the failure message had ``fflush`` at the end of one
    line and ``x1`` alone at the start of the next."""
    from pytest_instrbudget.session import _failure_text

    calls = {"fwrite": 10, "fread": 7, "ferror": 2, "fflush": 1, "fclose": 1, "fopen": 1}
    m = metric("ir_instructions", 900, 800, functions={"main": 900}, outside_calls=calls)
    for text in (
        _failure_text(m, Path("/project")).splitlines(),
        report.breakdown_lines([Result(SMALL, True, [m])], "functions", width=80),
    ):
        lines = text[next(i for i, line in enumerate(text) if "calls outside" in line) :]
        fits(lines, 80)
        joined = " ".join(line.strip() for line in lines)
        assert "fwrite x10, fread x7, ferror x2, fclose x1, fflush x1, fopen x1" in joined
        assert not any(line.strip().startswith("x") for line in text)
        assert "\u00a0" not in "\n".join(text)


def test_a_failures_long_source_lines_name_their_directory_once() -> None:
    """A project whose sources lie deep had every line of the failure's tables on three lines, each
    repeating the same directory; the directory is named once under the heading instead."""
    from pytest_instrbudget.session import _failure_text

    deep = "src/some/deeply/nested/component/implementation/"
    unit = deep + "very_long_translation_unit_name.cpp"
    m = metric(
        "ir_instructions",
        900,
        800,
        functions={"checksum": 900},
        lines=[["checksum", f"{unit}:{n}", 100 * n] for n in (13, 9, 4)],
    )
    text = _failure_text(m, Path("/project")).splitlines()
    at = text.index("  hottest lines of checksum:")
    assert text[at + 1 : at + 5] == [
        f"    in {deep}",
        "    very_long_translation_unit_name.cpp:13  1,300",
        "    very_long_translation_unit_name.cpp:9   900",
        "    very_long_translation_unit_name.cpp:4   400",
    ]
    fits(text, 80)
