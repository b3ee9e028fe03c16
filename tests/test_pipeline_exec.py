"""The pipeline model with ``execute = true``: the executed machine code of the RISC-V build, costed
block by block in the executor, against the same rules applied in Python to a trace recorded by a
separate emulator (rv32emu: Python hooks, no code of the executor's)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from cbuild import Builder, BuildOptions, Library, run_program
from cbuild.models import default_registry
from cbuild.models.pipeline import PipelineModel
from cbuild.riscv.decode import decode
from cbuild.riscv.executor import ExecRuntime, read_image
from cbuild.riscv.machine import Machine, load_machine
from cbuild.riscv.maxplus import Matrix
from tests.test_dynamic_models import LOOP_C

ROOT = Path(__file__).parent.parent
MACHINES = ROOT / "cbuild" / "riscv" / "machines"

SORT_C = """
#include <stdio.h>
#include <stdlib.h>
static int values[300];
static void sort(int *a, int n) {            /* insertion sort: data-dependent branches */
    for (int i = 1; i < n; i++) {
        int v = a[i], j = i - 1;
        while (j >= 0 && a[j] > v) { a[j + 1] = a[j]; j--; }
        a[j + 1] = v;
    }
}
int main(int argc, char **argv) {
    unsigned seed = argc > 1 ? (unsigned)atoi(argv[1]) : 7u;
    for (int i = 0; i < 300; i++) { seed = seed * 1103515245u + 12345u; values[i] = (int)(seed >> 16) % 1000; }
    sort(values, 300);
    long s = 0;
    for (int i = 0; i < 300; i++) s += (long)values[i] * i / (i % 7 + 1);
    printf("%d %d %ld\\n", values[0], values[299], s);
    return 0;
}
"""


@pytest.fixture(scope="module")
def rv32emu():  # type: ignore[no-untyped-def]
    pytest.importorskip("unicorn", reason="the RISC-V models need unicorn")
    import rv32emu

    return rv32emu


@pytest.fixture
def rocket32(tmp_path: Path) -> Path:
    """The rocket machine for riscv32 (llvm-mca's rocket-rv32), with its branch predictor and penalty."""
    text = (MACHINES / "rocket.toml").read_text().replace('target = "riscv64"', 'target = "riscv32"')
    path = tmp_path / "rocket32.toml"
    path.write_text(text.replace('name = "rocket"', 'name = "rocket32"'))
    return path


def replay_trace(machine: Machine, elf: Path, trace: list[tuple[int, int]]) -> int:
    """The finishing cycle of ``trace`` on ``machine``: each block's matrix (plain max-plus product,
    no memo, no clamping) and the penalty of each transfer between blocks."""
    image = read_image(elf)
    code = {}
    for segment in image.segments:
        for offset in range(0, len(segment.data) - 3, 4):
            code[segment.vaddr + offset] = int.from_bytes(segment.data[offset : offset + 4], "little")
    blocks: dict[tuple[int, int], tuple[Matrix, int, int]] = {}
    state: list[float] = machine.initial_state()
    previous: tuple[int, int] | None = None
    for pc, n in trace:
        if (pc, n) not in blocks:
            instrs = [decode(code[pc + 4 * i], pc + 4 * i, xlen=32) for i in range(n)]
            last, address = instrs[-1], pc + 4 * (n - 1)
            target = int(last.operands[-1], 16) if last.operands and last.operands[-1].startswith("0x") else -1
            blocks[pc, n] = (
                machine.block_matrix(instrs),
                machine.transfer_penalty(last, address, target, True),
                machine.transfer_penalty(last, address, target, False),
            )
        if previous is not None:
            _, taken, fallen = blocks[previous]
            state[0] += fallen if pc == previous[0] + 4 * previous[1] else taken
        state = blocks[pc, n][0].apply(state)
        previous = (pc, n)
    return machine.finish(state)


@pytest.mark.parametrize("machine_name", ["inorder5", "rocket32"])
def test_pipeline_cycles_equal_the_trace_replayed_in_python(
    builder: Builder,
    rv32emu,
    shared_source,
    rocket32: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    machine_name: str,  # type: ignore[no-untyped-def]
) -> None:
    name = str(rocket32) if machine_name == "rocket32" else machine_name
    model = PipelineModel({"machine": name, "execute": True})
    artifact = builder.build([shared_source("sort.c", SORT_C)], options=BuildOptions(opt_level="2"), models=[model])
    run = run_program(artifact, ["11"])
    assert run.counts is not None
    (cycles,) = model.evaluate(run.counts)
    elf = tmp_path / "sort"  # the program's argv[0] on both sides: musl's start-up reads it
    elf.write_bytes(Path(artifact.machines()["riscv32"]["elf"]).read_bytes())
    monkeypatch.chdir(tmp_path)
    emulated = rv32emu.emulate(Path("sort"), ["11"], record_blocks=True)
    assert emulated.stdout == run.stdout
    expected = replay_trace(load_machine(name), elf, emulated.block_trace)
    assert cycles.total == expected
    # More cycles than instructions; the predictor's penalty shows on rocket32 (mispredicted branches).
    assert cycles.total > emulated.instructions
    if machine_name == "rocket32":
        no_penalty = load_machine(name)
        no_penalty.mispredict_penalty = 0
        assert expected > replay_trace(no_penalty, elf, emulated.block_trace)


def test_pipeline_cycles_of_a_loop_grow_linearly(builder: Builder, shared_source) -> None:  # type: ignore[no-untyped-def]
    model = default_registry().create("pipeline", {"execute": True, "machine": "rocket"})
    artifact = builder.build([shared_source("loop.c", LOOP_C)], options=BuildOptions(opt_level="2"), models=[model])

    def cycles(n: int) -> int:
        run = run_program(artifact, [str(n)])
        assert run.counts is not None
        return model.evaluate(run.counts)[0].total

    c1, c2, c3 = cycles(1000), cycles(2000), cycles(3000)
    assert c2 - c1 == c3 - c2 > 34 * 1000  # a 34-cycle divide per iteration, the same every time
    assert cycles(2000) == c2  # deterministic


def test_pipeline_library_calls_run_in_the_target_build(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    source = write(
        "lib.c",
        "unsigned fold(const unsigned char *p, int n) { unsigned h = 5; for (int i = 0; i < n; i++) h = h * 33 + p[i];"
        " return h; }",
    )
    model = default_registry().create("pipeline", {"execute": True})
    with Library(builder.build([source], kind="library", models=[model])) as lib:
        data = bytes(range(200))

        def cycles(n: int) -> tuple[int, int]:
            since = lib.snapshot()
            result = lib.fold(data, n)
            return result, model.evaluate(lib.counts(since))[0].total

        (first, one), (_, two), (again, three) = cycles(100), cycles(200), cycles(100)
        _, four = cycles(300)
        since = lib.snapshot()
        lib.fold(data, 100)
        lib.fold(data, 100)
        both = model.evaluate(lib.counts(since))[0].total
    assert first == again
    assert one == three  # the machine starts idle for each call
    assert both == 2 * one  # calls' cycles add up
    assert four - two == two - one > 100  # a loop of n iterations: the same cycles per iteration


class _ForgetfulPipeline(PipelineModel):
    """The pipeline model keeping at most three interned states: it forgets them all every few blocks."""

    def key_params(self) -> tuple[tuple[str, str], ...]:
        return (*super().key_params(), ("pipeline.max_states", "3"))

    def exec_runtime(self) -> ExecRuntime:
        runtime = super().exec_runtime()
        return dataclasses.replace(runtime, source="#define PL_MAX_STATES 3u\n" + runtime.source)


@pytest.mark.parametrize("machine_name", ["inorder5", "rocket32"])
def test_pipeline_cycles_do_not_depend_on_the_states_the_model_remembers(
    builder: Builder,
    shared_source,
    rocket32: Path,
    machine_name: str,  # type: ignore[no-untyped-def]
) -> None:
    """The executor keeps relative pipeline states by number and each block's last steps between
    them; a model that forgets every state again and again (numbers never reused, so no step a
    block remembers from before can match) costs the same, in both engines."""
    name = str(rocket32) if machine_name == "rocket32" else machine_name
    totals = []
    for model in (
        PipelineModel({"machine": name, "execute": True}),
        _ForgetfulPipeline({"machine": name, "execute": True}),
    ):
        artifact = builder.build([shared_source("sort.c", SORT_C)], options=BuildOptions(opt_level="2"), models=[model])
        run = run_program(artifact, ["11"])
        assert run.counts is not None
        (cycles,) = model.evaluate(run.counts)
        totals.append(cycles.total)
    assert totals[0] == totals[1] > 0
