"""Regions (instrbudget.h) in the RISC-V builds the executing models measure."""

from __future__ import annotations

from pathlib import Path

import pytest

from cbuild import Builder, BuildOptions, Library, run_program
from cbuild.models import CostModel, default_registry
from cbuild.riscv.executor import read_image

REGIONS_C = """
#include <stdio.h>
#include <stdlib.h>
#include <instrbudget.h>
__attribute__((noinline)) long work(int n) {
    long s = 0;
    for (int i = 0; i < n; i++) s += (long)i * 7 / (i % 5 + 1);
    return s;
}
int main(int argc, char **argv) {
    int n = atoi(argv[1]);
    long t = 0;
    INSTRBUDGET_REGION_START("all");
    for (int k = 0; k < 3; k++) {
        INSTRBUDGET_REGION_START("work");
        t += work(n);
        INSTRBUDGET_REGION_STOP();
    }
    INSTRBUDGET_REGION_NEXT("print");
    printf("%ld\\n", t);
    INSTRBUDGET_REGION_STOP();
    return 0;
}
"""


def executing_models() -> list[CostModel]:
    registry = default_registry()
    return [registry.create("zkvm", {"execute": True}), registry.create("pipeline", {"execute": True})]


def test_markers_are_listed_in_the_riscv_build(builder: Builder, shared_source) -> None:  # type: ignore[no-untyped-def]
    artifact = builder.build([shared_source("r.c", REGIONS_C)], models=executing_models())
    markers = read_image(Path(artifact.machines()["riscv32"]["elf"])).markers
    kinds = [(kind, name) for _, kind, name in markers]
    assert kinds.count((0, "work")) >= 1
    assert (0, "all") in kinds
    assert (1, "print") in kinds
    assert all(name == "" for kind, name in kinds if kind == 2)


def test_regions_carry_the_models_clocks(builder: Builder, shared_source) -> None:  # type: ignore[no-untyped-def]
    models = executing_models()
    artifact = builder.build([shared_source("r.c", REGIONS_C)], options=BuildOptions(opt_level="2"), models=models)

    def regions(n: int) -> dict[str, tuple[int, dict[str, int]]]:
        run = run_program(artifact, [str(n)])
        assert run.counts is not None
        assert run.counts.profile is not None
        return run.counts.profile.regions

    r1, r2, r3 = regions(100), regions(200), regions(300)
    for metric in ("zk_cycles", "pipeline_cycles", "ir_instructions"):
        assert r1["all/work"][0] == 3
        assert r1["all"][0] == 1
        assert r1["print"][0] == 1
        # Three calls of a loop of n iterations: the region grows by the same amount per 100 iterations.
        assert (
            r3["all/work"][1][metric] - r2["all/work"][1][metric]
            == r2["all/work"][1][metric] - r1["all/work"][1][metric]
            > 0
        )
        # The enclosing region costs at least its nested one.
        assert r2["all"][1][metric] >= r2["all/work"][1][metric]
    assert regions(200) == r2  # deterministic


def test_markers_add_nothing_to_the_executed_costs(builder: Builder, shared_source) -> None:  # type: ignore[no-untyped-def]
    models = executing_models()
    source = shared_source("r.c", REGIONS_C)
    totals = []
    for flags in ((), ("-DINSTRBUDGET_NO_REGIONS",)):
        artifact = builder.build([source], options=BuildOptions(opt_level="2", cflags=flags), models=models)
        run = run_program(artifact, ["150"])
        assert run.counts is not None
        costs = {c.metric: c.total for model in models for c in model.evaluate(run.counts)}
        totals.append((costs, run.counts.machine_run("riscv32").instructions))
    (with_markers, n1), (without, n2) = totals
    assert n1 == n2
    # Each marker is a word of code the models skip; it moves the code after it, so only which
    # 1 KiB pages the code spans (zk paging) can differ.
    paging = "zk_paging_cycles", "zk_cycles"
    assert {k: v for k, v in with_markers.items() if k not in paging} == {
        k: v for k, v in without.items() if k not in paging
    }


def test_regions_inside_library_calls(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    source = write(
        "lib.c",
        "#include <instrbudget.h>\n"
        'long twice(long n) { long s = 0; INSTRBUDGET_REGION_START("loop");'
        " for (long i = 0; i < n; i++) s += i ^ (s >> 3); INSTRBUDGET_REGION_STOP(); return s; }",
    )
    models = executing_models()
    with Library(builder.build([source], kind="library", models=models)) as lib:
        since = lib.snapshot()
        lib.twice(100)
        lib.twice(100)
        counts = lib.counts(since)
    assert counts.profile is not None
    count, costs = counts.profile.regions["loop"]
    assert count == 2
    (pipeline,) = models[1].evaluate(counts)
    # The region holds the loop; outside it only the call's entry and return.
    assert 0 < costs["pipeline_cycles"] <= pipeline.total
    assert pipeline.total - costs["pipeline_cycles"] < 40


@pytest.mark.parametrize("target", ["riscv64"])
def test_markers_in_a_64_bit_build(builder: Builder, shared_source, target: str) -> None:  # type: ignore[no-untyped-def]
    model = default_registry().create("pipeline", {"execute": True, "machine": "rocket"})
    artifact = builder.build([shared_source("r.c", REGIONS_C)], options=BuildOptions(opt_level="2"), models=[model])
    assert {name for _, _, name in read_image(Path(artifact.machines()[target]["elf"])).markers} >= {"all", "work"}
    run = run_program(artifact, ["100"])
    assert run.counts is not None
    assert run.counts.profile is not None
    assert run.counts.profile.regions["all/work"][1]["pipeline_cycles"] > 0


FILE_C = """
#include <stdio.h>
#include <instrbudget.h>
static const char *name = __FILE__; /* data before the table: its length moves the table */
static unsigned char table[3000];
int main(void) {
    INSTRBUDGET_REGION_START("fill");
    for (int i = 0; i < 3000; i++) table[i] = (unsigned char)(i + (name[0] != 0));
    INSTRBUDGET_REGION_STOP();
    printf("%d\\n", table[2999]);
    return 0;
}
"""


def test_executed_costs_do_not_depend_on_where_the_project_lies(builder: Builder, tmp_path: Path) -> None:
    """File names are data of the executed build: a checkout elsewhere must not move it."""
    results = []
    for where in ("a", "a-much-longer-directory-name-than-the-first/with/more/levels"):
        source = tmp_path / where / "src" / "prog.c"
        source.parent.mkdir(parents=True)
        source.write_text(FILE_C)
        artifact = builder.build([source], options=BuildOptions(opt_level="2"), models=executing_models())
        run = run_program(artifact)
        assert run.counts is not None
        results.append(run.counts.results)
    assert results[0] == results[1]
