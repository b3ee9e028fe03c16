"""Named regions (instrbudget.h): zero perturbation, nesting, recursion, budgets, unbalanced markers."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cbuild import Builder, BuildOptions, Library, run_program
from cbuild.build.compile import INCLUDE_DIR
from cbuild.models import default_registry
from cbuild.models.zkvm import RESULTS
from cbuild.report.attribution import attributed

DATA = Path(__file__).parent / "data"


def models():  # type: ignore[no-untyped-def]
    """The models with clocks in the instrumented native build (regions in the executed RISC-V
    builds: tests/test_rv_regions.py)."""
    registry = default_registry()
    return [
        registry.create("ir-count"),
        registry.create("pipeline", {"execute": False}),
        registry.create("zkvm", {"execute": False}),
    ]


def measure(builder: Builder, options: BuildOptions, n: int):  # type: ignore[no-untyped-def]
    active = models()
    artifact = builder.build([DATA / "regions.c"], options=options, models=active)
    run = run_program(artifact, [n])
    assert run.counts is not None
    return run.counts, attributed(active, [run.counts])


def test_markers_add_nothing_to_any_metric(builder: Builder) -> None:
    marked, with_markers = measure(builder, BuildOptions(), 1000)
    plain, without = measure(builder, BuildOptions(defines=("INSTRBUDGET_NO_REGIONS",)), 1000)
    assert marked.profile is not None
    assert plain.profile is None
    # Paging cycles include Merkle node costs, which depend on where the program's data lies; the
    # marker names are string constants that move it by a few bytes. The pages themselves do not change.
    paging = {"zk_paging_cycles", "zk_cycles"}
    assert {m: c.total for m, c in with_markers.items() if m not in paging} == {
        m: c.total for m, c in without.items() if m not in paging
    }
    assert with_markers["ir_instructions"].functions == without["ir_instructions"].functions
    zk = ("page_ins", "page_outs")
    assert [marked.results_of("zkvm")[RESULTS.index(k)] for k in zk] == [
        plain.results_of("zkvm")[RESULTS.index(k)] for k in zk
    ]


def test_region_costs_nest_and_scale(builder: Builder) -> None:
    counts, costs = measure(builder, BuildOptions(), 1000)
    _, bigger = measure(builder, BuildOptions(), 2000)
    regions = costs["ir_instructions"].regions
    assert set(regions) == {
        "setup",
        "work",
        "work/inner",
        "work/recurse",
        "work/recurse/recurse",
        "work/recurse/recurse/recurse",
        "work/recurse/recurse/recurse/recurse",
    }
    assert regions["work"] > regions["work/inner"] + regions["work/recurse"]
    assert regions["work/recurse"] > regions["work/recurse/recurse"]
    # fill() and fold() cost the same per element for any n: the regions grow linearly.
    grown = bigger["ir_instructions"].regions
    most = measure(builder, BuildOptions(), 3000)[1]["ir_instructions"].regions
    assert most["setup"] - grown["setup"] == grown["setup"] - regions["setup"] == 1000 * 10
    assert grown["work/inner"] > regions["work/inner"]
    assert grown["work/recurse"] == regions["work/recurse"]  # independent of n
    # Every model with a clock gets regions in its own unit.
    assert set(costs["pipeline_cycles"].regions) == set(regions)
    assert set(costs["zk_cycles"].regions) == set(regions)
    assert counts.profile is not None
    assert counts.profile.regions["work/recurse"][0] == 1


STRAIGHT_C = """\
#include <instrbudget.h>
int f(volatile int *p) {
    INSTRBUDGET_REGION_START("sum");
    int s = p[0] + p[1] + p[2] + p[3] + p[4] + p[5] + p[6] + p[7] + p[8] + p[9];
    INSTRBUDGET_REGION_NEXT("scale");
    s = s * p[0] + p[1];
    INSTRBUDGET_REGION_STOP();
    return s;
}
"""


def test_regions_in_straight_line_code_count_the_code_between_their_markers(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    """Markers in one basic block: each region counts the instructions between its markers (the
    running total is exact at a marker). Both regions read 0, and a budget on them passed, when the
    block's count landed after the last marker."""
    import ctypes

    lib = Library(builder.build([write("straight.c", STRAIGHT_C)], kind="library"))
    since = lib.snapshot()
    assert lib.f((ctypes.c_int * 10)(*range(10))) == 1
    counts = lib.counts(since)
    assert counts.profile is not None
    regions = counts.profile.values("ir_instructions")
    by_line: dict[int, int] = {}
    for block, n in zip(counts.table.blocks, counts.counts, strict=True):
        for _, line, size in block.lines:
            by_line[line] = by_line.get(line, 0) + n * size
    # The code of line 4 is in "sum", that of line 6 in "scale"; their costs are the lines'.
    assert regions == {"sum": by_line[4], "scale": by_line[6]}
    assert regions["sum"] >= 20
    assert regions["scale"] >= 4


def test_library_regions_start_afresh_per_measurement(builder: Builder, write, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    source = write(
        "lib.c",
        "#include <instrbudget.h>\n"
        "int twice(int x) {\n"
        '    INSTRBUDGET_REGION_START("double");\n'
        "    x *= 2;\n"
        "    INSTRBUDGET_REGION_STOP();\n"
        "    return x;\n"
        "}\n",
    )
    lib = Library(builder.build([source], kind="library"))
    since = lib.snapshot()
    assert lib.twice(3) == 6
    lib.twice(4)
    counts = lib.counts(since)
    assert counts.profile is not None
    assert counts.profile.regions["double"][0] == 2
    since = lib.snapshot()
    lib.twice(5)
    assert lib.counts(since).profile.regions["double"][0] == 1  # type: ignore[union-attr]


def test_header_builds_without_the_plugin(tmp_path: Path) -> None:
    out = tmp_path / "regions.s"
    cmd = [
        sys.executable,
        "-m",
        "ziglang",
        "cc",
        "-O2",
        "-S",
        f"-I{INCLUDE_DIR}",
        str(DATA / "regions.c"),
        "-o",
        str(out),
    ]
    subprocess.run(cmd, check=True, capture_output=True)
    assert "instrbudget-region" not in out.read_text()  # the macros are no-ops


REGIONS_TEST = textwrap.dedent(
    """
    import pytest

    @pytest.mark.budget(regions={"setup": 10})
    def test_setup_too_costly(cbuild):
        cbuild.program("regions.c").run(["100"])

    @pytest.mark.budget(regions={"setpu": 10_000_000})
    def test_misspelt_region(cbuild):
        cbuild.program("regions.c").run(["100"])

    @pytest.mark.budget(regions={"work": {"max_instr": 10_000_000}})
    def test_fine(cbuild):
        cbuild.program("regions.c").run(["100"])

    def test_unbalanced(cbuild):
        cbuild.program("unbalanced.c").run()

    @pytest.mark.budget(regions={"parse": 100})
    def test_no_markers(cbuild):
        cbuild.program("plain.c").run()
    """
)


def test_plugin_region_budgets_and_unbalanced_markers(pytester: pytest.Pytester) -> None:
    pytester.makefile(".c", regions=(DATA / "regions.c").read_text())
    pytester.makefile(
        ".c",
        unbalanced="#include <instrbudget.h>\nint main(void) {\n"
        '    INSTRBUDGET_REGION_START("open");\n    INSTRBUDGET_REGION_STOP();\n'
        "    INSTRBUDGET_REGION_STOP();\n"
        '    INSTRBUDGET_REGION_START("left open");\n    return 0;\n}\n',
    )
    pytester.makefile(".c", plain="int main(void) { return 0; }\n")
    pytester.makepyfile(test_marked=REGIONS_TEST)
    result = pytester.runpytest("-p", "no:cacheprovider", "--instrbudget-report=regions")
    result.assert_outcomes(passed=2, failed=3)
    result.stdout.fnmatch_lines(
        [
            "*region 'setup': ir_instructions * exceeds its budget 10",
            "*region 'setpu' has a budget but the test never ran it (regions run: setup, work, work/inner*",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*region 'parse' has a budget but the test never ran it: it ran no region (no "
            "INSTRBUDGET_REGION_START of instrbudget.h in the code it ran, or unbalanced markers)"
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*2 unbalanced region marker(s); their regions were not measured:",
            "*test_marked.py::test_unbalanced: *unbalanced.c:5: region stop without a started region",
            "*test_marked.py::test_unbalanced: *unbalanced.c:6: region 'left open' was started here and never stopped",
        ]
    )
    result.stdout.fnmatch_lines(["*instrbudget regions*", "test_marked.py::test_fine", "  ir_instructions  (total *"])


def test_plugin_region_budgets_combine_region_by_region_across_markers(pytester: pytest.Pytester) -> None:
    # A module's region budget stays when a test budgets another region; a region both name
    # takes the closest marker's limit (docs/configuration.md).
    pytester.makefile(".c", regions=(DATA / "regions.c").read_text())
    pytester.makepyfile(
        test_combined=textwrap.dedent(
            """
            import pytest

            pytestmark = pytest.mark.budget(regions={"setup": 10})

            @pytest.mark.budget(regions={"work": 10_000_000})
            def test_both(cbuild):
                cbuild.program("regions.c").run(["100"])

            @pytest.mark.budget(regions={"setup": 10_000_000})
            def test_closest(cbuild):
                cbuild.program("regions.c").run(["100"])
            """
        )
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*test_both*", "*region 'setup': ir_instructions * exceeds its budget 10*"])
    assert "FAILED test_combined.py::test_closest" not in result.stdout.str()
