"""Block data of executing models: kept beside the RISC-V build for later runs, and a block a model
cannot describe makes that model unavailable (with the reason and the function) instead of failing."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from cbuild import Builder, Cost, run_program
from cbuild.build.builder import Artifact
from cbuild.errors import CBuildError
from cbuild.models import default_registry
from cbuild.models.base import CostModel, Metric
from cbuild.models.costs import BlockCounts
from cbuild.riscv import executor
from cbuild.riscv.executor import KEEP_MACHINES, ExecRuntime
from cbuild.riscv.translated import CHECK_TRANSLATION
from cbuild.run import program

#: ``addi zero, zero, 1234``: a no-op word that only ``odd`` holds.
ODD_WORD = 0x4D200013

PROGRAM_C = r"""
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) static int odd(int x) {
#if defined(__riscv)
    __asm__ volatile(".word 0x4d200013");
#endif
    return x * 3 + 1;
}
__attribute__((noinline)) static int even(int x) { return x / 2; }
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 27, steps = 0;
    while (n != 1) { n = (n & 1) ? odd(n) : even(n); steps++; }
    printf("%d\n", steps);
    return 0;
}
"""

COUNT_SOURCE = """
static uint64_t bd_blocks;
static inline void model_block(const rvx_block *b) { bd_blocks += b->data[RVX_MODEL] != NULL; }
static inline void model_access(uint64_t a, uint32_t s, uint32_t st, uint32_t i) {
    (void)a; (void)s; (void)st; (void)i;
}
static void model_reset(void) { bd_blocks = 0; }
static void model_finish(uint64_t *out) { out[0] = bd_blocks; }
static inline uint64_t model_now(void) { return bd_blocks; }
"""


class LoggingProducer:
    """Block data = the block's length; logs each computation to a file; rejects a block holding
    ``reject`` as a model that cannot decode a word would."""

    def __init__(self, log: Path, reject: int | None) -> None:
        self.log = str(log)
        self.reject = reject

    def __call__(self, words: Sequence[int], pc: int) -> list[int]:
        with open(self.log, "a") as fh:
            fh.write(f"{pc:x}\n")
        if self.reject is not None and self.reject in words:
            raise CBuildError(
                f"cannot describe word 0x{self.reject:08x} at 0x{pc + 4 * list(words).index(self.reject):x}"
            )
        return [len(words)]


class BlockDataModel(CostModel):
    """A third-party executing model with host-computed block data (what the pipeline model does)."""

    name = "block_data_probe"
    metrics = (Metric("probe_blocks", "blocks", "max_probe_blocks"),)
    producer: LoggingProducer

    def executes(self) -> str | None:
        return "riscv32"

    def exec_runtime(self) -> ExecRuntime:
        return ExecRuntime(COUNT_SOURCE, results=1, block_data=self.producer)

    def evaluate(self, counts: BlockCounts) -> list[Cost]:
        if self.name in counts.unavailable:
            return []
        (blocks,) = counts.results_of(self.name)
        return [Cost("probe_blocks", blocks)]


def _probe(log: Path, reject: int | None) -> BlockDataModel:
    model = BlockDataModel()
    model.producer = LoggingProducer(log, reject)
    return model


def _built_without_kept_data(builder: Builder, write, model: CostModel) -> tuple[Artifact, Path]:  # type: ignore[no-untyped-def]
    """The program built for ``model``, and its riscv32 ELF with no block data kept beside it yet."""
    artifact = builder.build([write("collatz.c", PROGRAM_C)], models=[model])
    elf = Path(artifact.machines()["riscv32"]["elf"])
    for old in elf.parent.glob(f"{elf.name}.blocks-*"):
        old.unlink()
    return artifact, elf


def _computed(log: Path) -> int:
    return len(log.read_text().split()) if log.exists() else 0


def test_a_block_the_model_cannot_describe_makes_it_unavailable(builder: Builder, write, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    probe = _probe(tmp_path / "log", ODD_WORD)
    zkvm = default_registry().create("zkvm")
    artifact = builder.build([write("collatz.c", PROGRAM_C)], models=[probe, zkvm])
    run = run_program(artifact, [27])
    assert run.stdout == b"111\n"
    assert run.counts is not None
    reason = run.counts.unavailable[probe.name]
    assert f"cannot describe word 0x{ODD_WORD:08x}" in reason
    assert "(in odd)" in reason
    assert "riscv32" in reason
    assert probe.evaluate(run.counts) == []
    # The other model of the same executed build still measures.
    assert "zkvm" not in run.counts.unavailable
    assert {c.metric for c in zkvm.evaluate(run.counts)} >= {"zk_cycles", "zk_user_cycles"}


def test_block_data_is_kept_beside_the_build_and_survives_damage(builder: Builder, write, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    log = tmp_path / "log"
    probe = _probe(log, None)
    artifact, elf = _built_without_kept_data(builder, write, probe)

    first = run_program(artifact, [27])
    assert first.counts is not None
    (blocks,) = first.counts.results_of(probe.name)
    computed = _computed(log)
    assert computed > 10  # libc's start-up, printf and the program's own blocks
    (kept,) = elf.parent.glob(f"{elf.name}.blocks-*")

    # A later run of the same build (a new machine) reads the data instead of computing it.
    second = run_program(artifact, [27])
    assert second.counts is not None
    assert second.counts.results_of(probe.name) == (blocks,)
    assert _computed(log) == computed

    # A different input runs more blocks: only those are computed, and added to the file.
    third = run_program(artifact, [97])
    assert third.counts is not None
    assert third.stdout == b"118\n"
    added = _computed(log) - computed
    assert 0 <= added < computed
    size = kept.stat().st_size

    # A damaged file (one flipped byte) is not trusted: the data is computed again, results unchanged.
    raw = bytearray(kept.read_bytes())
    raw[len(raw) // 2] ^= 0x40
    kept.write_bytes(bytes(raw))
    before = _computed(log)
    damaged = run_program(artifact, [27])
    assert damaged.counts is not None
    assert damaged.counts.results_of(probe.name) == (blocks,)
    assert _computed(log) > before
    assert kept.stat().st_size > 0
    rewritten = _computed(log)
    run_program(artifact, [27])
    assert _computed(log) == rewritten  # the rewritten file is whole again
    assert kept.stat().st_size >= size


def test_block_data_that_cannot_be_written_only_costs_time(
    builder: Builder, write, tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv(CHECK_TRANSLATION, "0")  # both engines in each run: the counts below are per run
    monkeypatch.setenv(KEEP_MACHINES, "0")  # a new machine every run, given only what the file holds
    log = tmp_path / "log"
    probe = _probe(log, None)
    artifact, elf = _built_without_kept_data(builder, write, probe)
    executor.close_servers()  # a server reads the setting when it starts
    try:
        first = run_program(artifact, [27])
        (kept,) = elf.parent.glob(f"{elf.name}.blocks-*")
        kept.unlink()
        kept.mkdir()  # neither readable as a file nor replaceable (as a read-only directory, also for root)
        try:
            once = _computed(log)
            second = run_program(artifact, [27])
            third = run_program(artifact, [27])
            assert _computed(log) == 3 * once  # computed in every run, without an error
        finally:
            kept.rmdir()
    finally:
        executor.close_servers()  # later tests get servers that keep machines
    assert first.counts is not None
    assert second.counts is not None
    assert third.counts is not None
    assert (
        first.counts.results_of(probe.name)
        == second.counts.results_of(probe.name)
        == third.counts.results_of(probe.name)
    )


def test_pipeline_cycles_equal_with_and_without_kept_block_data(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    pipeline = default_registry().create("pipeline")
    artifact, elf = _built_without_kept_data(builder, write, pipeline)
    cold = run_program(artifact, [27])
    assert list(elf.parent.glob(f"{elf.name}.blocks-*"))
    warm = run_program(artifact, [27])
    assert cold.counts is not None
    assert warm.counts is not None
    cycles = cold.counts.results_of("pipeline")
    assert cycles == warm.counts.results_of("pipeline")
    assert cycles[0] > 0


def test_a_later_run_is_given_the_kept_data_before_it_starts(
    builder: Builder, write, tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """Kept blocks reach the machine before the run (no block callback, a Python call per block);
    an entry whose words differ from the block's is not taken."""
    monkeypatch.setenv(CHECK_TRANSLATION, "0")

    def in_process(library, elf, runtimes, argv=(), *, timeout=None, name=None, **options):  # type: ignore[no-untyped-def]
        return executor.run_program(library, elf, runtimes, argv, **options)

    monkeypatch.setattr(program, "run_isolated", in_process)
    monkeypatch.setenv(KEEP_MACHINES, "0")  # a new machine every run, given only what the file holds
    called: list[int] = []
    callback = executor.Executor._block_data

    def counted(self, model, block, pc, n, words):  # type: ignore[no-untyped-def]
        called.append(pc)
        callback(self, model, block, pc, n, words)

    monkeypatch.setattr(executor.Executor, "_block_data", counted)
    probe = _probe(tmp_path / "log", None)
    artifact, elf = _built_without_kept_data(builder, write, probe)
    first = run_program(artifact, [27])
    assert first.counts is not None
    assert len(called) > 10
    called.clear()

    second = run_program(artifact, [27])
    assert second.counts is not None
    assert called == []
    assert second.counts.results_of(probe.name) == first.counts.results_of(probe.name)

    # The same addresses with other words (a file an earlier ELF at this path left): all computed.
    (kept,) = elf.parent.glob(f"{elf.name}.blocks-*")
    file = executor.BlockDataFile(elf, kept.name.rsplit("-", 1)[1])
    blocks = len(file.data)
    file.data = {(pc, (*words[:-1], words[-1] ^ 1)): [999] for (pc, words) in file.data}
    file.added = 1
    file.save()
    third = run_program(artifact, [27])
    assert third.counts is not None
    assert len(called) == blocks
    assert third.counts.results_of(probe.name) == first.counts.results_of(probe.name)


class WideProducer(LoggingProducer):
    """Block data past 32 bits, which the executor holds as 32-bit two's complement."""

    def __call__(self, words: Sequence[int], pc: int) -> list[int]:
        super().__call__(words, pc)
        return [2**32 - 1, -(2**31) - 1]


def test_block_data_past_32_bits_is_kept_as_the_executor_holds_it(builder: Builder, write, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    probe = BlockDataModel()
    probe.producer = WideProducer(tmp_path / "log", None)
    artifact, elf = _built_without_kept_data(builder, write, probe)
    first = run_program(artifact, [27])
    (kept,) = elf.parent.glob(f"{elf.name}.blocks-*")
    assert {tuple(v) for v in executor.BlockDataFile(elf, kept.name.rsplit("-", 1)[1]).data.values()} == {
        (-1, 2**31 - 1)
    }
    second = run_program(artifact, [27])  # given the kept data before it starts
    assert first.counts is not None
    assert second.counts is not None
    assert second.counts.results_of(probe.name) == first.counts.results_of(probe.name)
