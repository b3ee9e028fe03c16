"""A process keeps the unicorn machine of a program's run for the program's later runs
(``executor.KeptMachines``): each later run starts from the state the machine was sealed in after
loading, and reports exactly what a run on a new machine reports."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from cbuild import Builder, Cost
from cbuild.models import default_registry
from cbuild.models.base import CostModel, Metric
from cbuild.models.costs import BlockCounts
from cbuild.riscv import executor
from cbuild.riscv.executor import (
    KEEP_MACHINES,
    ExecRuntime,
    Execution,
    ExecutorError,
    KeptMachines,
    _restartable,
    compare_executions,
    slot_runtimes,
)

#: Changes its data, bss, heap, stack and output (and reads what its heap held before), reads
#: standard input, exits with the code it is given; a third argument asks it to overwrite its own
#: code ("patch"), map memory of its own ("mmap"), read where "mmap" mapped ("peek": a fault on a
#: new machine), or write a control and status register ("csr").
PROGRAM_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/mman.h>
#include <instrbudget.h>
static int table[1024];
static int seeded[4] = {1, 2, 3, 4};
__attribute__((noinline)) int spare(int x) { return x * 7 + 1; }
__attribute__((noinline)) static long deep(int n) {
    volatile char frame[4096];
    long before = 0;
    for (int i = 0; i < 4096; i++) before += (long)frame[i] * (i + 1);  /* what is on the stack */
    for (int i = 0; i < 4096; i++) frame[i] = (char)(n + i);
    return before;
}
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 10, code = argc > 2 ? atoi(argv[2]) : 0;
    char buf[256];
    size_t got = fread(buf, 1, sizeof buf, stdin);
    long sum = deep(n);
    for (size_t i = 0; i < got; i++) sum += buf[i];
    INSTRBUDGET_REGION_START("fill");
    for (int i = 0; i < n; i++) { table[i % 1024] += i; seeded[i % 4] += table[i % 1024]; }
    INSTRBUDGET_REGION_STOP();
    char *small = malloc((size_t)n * 16 + 1), *big = malloc((size_t)n * 4096 + 1);
    for (int i = 0; i < n * 16; i++) sum += (long)small[i] * (i + 1);  /* what the heap held */
    memset(small, 'a', (size_t)n * 16);
    memset(big, 'b', (size_t)n * 4096);
    for (int i = 0; i < n; i++) sum += small[i] + big[i * 4095] + table[i % 1024] + seeded[i % 4];
    const char *mode = argc > 3 ? argv[3] : "";
    static volatile int *mapped;
    if (!strcmp(mode, "patch")) *(volatile unsigned *)(void *)&spare = 0x00000013u;
    if (!strcmp(mode, "mmap")) {
        mapped = mmap(0, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        mapped[5] = n;
        printf("mapped at %p\n", (void *)mapped);
    }
    if (!strcmp(mode, "peek")) sum += *(volatile int *)(uintptr_t)strtoul(argv[4], 0, 16);
#if defined(__riscv)
    if (!strcmp(mode, "csr")) __asm__ volatile(".word 0x34001073"); /* csrw mscratch, zero */
#endif
    printf("%d %ld %zu %d\n", n, sum, got, spare(n));
    fprintf(stderr, "seeded %d\n", seeded[0]);
    return code;
}
"""


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory, shared_cache: Path) -> dict[str, Any]:
    source = tmp_path_factory.mktemp("kept") / "kept.c"
    source.write_text(PROGRAM_C)
    registry = default_registry()
    models = [registry.create("zkvm", {"execute": True}), registry.create("pipeline", {"execute": True})]
    artifact = Builder(cache_dir=shared_cache).build([source], models=models)
    doc: dict[str, Any] = artifact.machines()["riscv32"]
    return doc


@pytest.fixture(autouse=True)
def no_kept_machines() -> Iterator[None]:
    executor.KEPT.close_all()
    yield
    executor.KEPT.close_all()


@pytest.fixture
def seals(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per machine made for keeping."""
    made: list[int] = []
    seal = executor.Executor.seal

    def counted(self: executor.Executor) -> None:
        made.append(1)
        seal(self)

    monkeypatch.setattr(executor.Executor, "seal", counted)
    return made


def run(doc: Mapping[str, Any], *argv: str, stdin: bytes = b"", **kw: Any) -> Execution:
    return executor.run_program(
        Path(doc["executor"]), Path(doc["elf"]), slot_runtimes(doc["slots"]), ["kept", *argv], stdin=stdin, **kw
    )


def fresh(doc: Mapping[str, Any], *argv: str, stdin: bytes = b"", **kw: Any) -> Execution:
    """The run on a new machine."""
    executor.KEPT.close_all()
    try:
        return run(doc, *argv, stdin=stdin, **kw)
    finally:
        executor.KEPT.close_all()


def assert_same(kept: Execution, new: Execution) -> None:
    assert compare_executions(new, kept) == []
    assert kept == new  # every field, the blocks' order included


CASES = [
    (("12", "0"), b"some input"),
    (("34", "0"), b""),
    (("12", "0"), b"some input"),
    (("900", "3"), b"x" * 300),
    (("12", "0"), b"other input"),
]


def test_later_runs_take_the_kept_machine_and_report_what_a_new_machine_reports(
    machine: dict[str, Any], seals: list[int]
) -> None:
    kept = [run(machine, *argv, stdin=stdin) for argv, stdin in CASES]
    assert len(seals) == 1  # one machine made, four restarts
    assert kept[3].exit_code == 3
    assert kept[3].regions["fill"][0] == 1
    assert kept[1].stdout != kept[0].stdout
    assert kept[0].stdout.endswith(b" 85\n")  # spare(12) = 12 * 7 + 1: the code as built
    # What one run leaves in data, bss, the heap and on the stack, a later one does not see.
    assert kept[2] == kept[0]
    for (argv, stdin), result in zip(CASES, kept, strict=True):
        assert_same(result, fresh(machine, *argv, stdin=stdin))


def test_a_run_that_does_not_exit_gives_its_machine_up(machine: dict[str, Any], seals: list[int]) -> None:
    run(machine, "12", "0")
    limited = run(machine, "12", "0", limit=1000)
    assert limited.error == "more instructions than the limit"
    assert len(seals) == 1  # the limited run took the kept machine
    next_run = run(machine, "34", "0")
    assert len(seals) == 2  # and did not give it back
    assert_same(limited, fresh(machine, "12", "0", limit=1000))
    assert_same(next_run, fresh(machine, "34", "0"))


def test_a_cut_off_on_one_run_is_not_left_on_the_kept_machine(machine: dict[str, Any], seals: list[int]) -> None:
    clock = fresh(machine, "12", "0").clocks[0]
    seals.clear()
    wide = run(machine, "12", "0", cutoffs={0: clock + 1})  # exits before its cut-off: kept
    assert wide.stopped is None
    after = run(machine, "34", "0")  # passes that clock
    assert after.clocks[0] > clock + 1
    assert after.stopped is None
    assert len(seals) == 1  # the machine was kept, its cut-off not
    assert_same(after, fresh(machine, "34", "0"))
    stopped = run(machine, "12", "0", cutoffs={0: 1000})
    assert stopped.stopped is not None
    seals.clear()
    next_run = run(machine, "12", "0")
    assert len(seals) == 1  # the stopped run's machine was given up
    assert_same(stopped, fresh(machine, "12", "0", cutoffs={0: 1000}))
    assert_same(next_run, fresh(machine, "12", "0"))


def test_a_run_that_changed_its_code_gets_a_new_machine_for_the_next(machine: dict[str, Any], seals: list[int]) -> None:
    patched = run(machine, "12", "0", "patch")
    assert patched.exit_code == 0
    assert patched.error == ""
    assert not patched.stdout.endswith(b" 85\n")  # spare's first instruction is gone
    seals.clear()
    again = run(machine, "12", "0")
    assert again.stdout.endswith(b" 85\n")
    assert len(seals) == 1  # the changed machine could not restart
    assert_same(again, fresh(machine, "12", "0"))


def test_a_translation_or_block_data_only_this_process_names_keeps_no_machine(machine: dict[str, Any]) -> None:
    runtimes = slot_runtimes(machine["slots"])
    library, elf = Path(machine["executor"]), Path(machine["elf"])
    assert KeptMachines.key(library, elf, runtimes) is not None
    assert KeptMachines.key(object(), elf, runtimes) is None
    unnamed = [executor.ExecRuntime("", results=1, block_data=lambda words, pc: [len(words)])]
    assert KeptMachines.key(library, elf, unnamed) is None


class _Machine:
    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True


def test_the_least_recently_used_machine_goes_first() -> None:
    kept = KeptMachines()
    machines = [_Machine() for _ in range(4)]
    kept.give((0,), machines[0], 2)  # type: ignore[arg-type]
    kept.give((1,), machines[1], 2)  # type: ignore[arg-type]
    assert kept.take((0,)) is machines[0]
    kept.give((0,), machines[0], 2)  # type: ignore[arg-type]  # used last
    kept.give((2,), machines[2], 2)  # type: ignore[arg-type]
    assert [m.closed for m in machines[:3]] == [False, True, False]
    kept.give((2,), machines[3], 2)  # type: ignore[arg-type]  # the same program's: replaces it
    assert machines[2].closed
    kept.close_all()
    assert all(m.closed for m in machines)


def test_runs_in_an_executor_server_match_a_new_machine(machine: dict[str, Any]) -> None:
    """Through run_isolated, as the plugin runs programs: the same runs as on new machines."""
    args = (Path(machine["executor"]), Path(machine["elf"]), slot_runtimes(machine["slots"]))
    first = executor.run_isolated(*args, ["kept", "12", "0"], stdin=b"in")
    second = executor.run_isolated(*args, ["kept", "34", "0"])
    third = executor.run_isolated(*args, ["kept", "12", "0"], stdin=b"in")
    assert third == first
    assert_same(second, fresh(machine, "34", "0"))
    assert first.exit_code == 0


def test_the_number_kept_comes_from_the_environment(
    machine: dict[str, Any], monkeypatch: pytest.MonkeyPatch, seals: list[int]
) -> None:
    monkeypatch.setenv(KEEP_MACHINES, "0")
    run(machine, "12", "0")
    assert executor.KEPT.size() == 0
    assert not seals  # no machine made for keeping
    assert not executor.KEPT._machines
    monkeypatch.setenv(KEEP_MACHINES, "many")
    with pytest.raises(ExecutorError, match=f"{KEEP_MACHINES} must be a number of machines, not 'many'"):
        run(machine, "12", "0")


#: A third-party model that counts the blocks whose scratch it finds zero (new to it).
NEW_BLOCKS_SOURCE = """
static uint64_t nb_new;
static inline void model_block(const rvx_block *b) {
    uint64_t *s = RVX_SCRATCH(b);
    if (s[0] == 0) { nb_new++; s[0] = 1; }
}
static inline void model_access(uint64_t a, uint32_t s, uint32_t st, uint32_t i) {
    (void)a; (void)s; (void)st; (void)i;
}
static void model_reset(void) { nb_new = 0; }
static void model_finish(uint64_t *out) { out[0] = nb_new; }
static inline uint64_t model_now(void) { return nb_new; }
"""


class NewBlocks(CostModel):
    name = "new_blocks"
    metrics = (Metric("new_blocks", "blocks", "max_new_blocks"),)

    def executes(self) -> str | None:
        return "riscv32"

    def exec_runtime(self) -> ExecRuntime:
        return ExecRuntime(NEW_BLOCKS_SOURCE, results=1)

    def evaluate(self, counts: BlockCounts) -> list[Cost]:
        (blocks,) = counts.results_of(self.name)
        return [Cost("new_blocks", blocks)]


def test_a_models_scratch_is_zero_in_every_block_of_a_later_run(builder: Builder, write, seals: list[int]) -> None:  # type: ignore[no-untyped-def]
    artifact = builder.build([write("kept.c", PROGRAM_C)], models=[NewBlocks()])
    doc = artifact.machines()["riscv32"]
    first, second = run(doc, "12", "0"), run(doc, "12", "0")
    assert len(seals) == 1
    assert first.results == second.results == [sum(1 for _, n, _ in first.blocks if n)]  # models see no empty block


def test_memory_a_run_mapped_is_gone_in_the_next(machine: dict[str, Any], seals: list[int]) -> None:
    mapping = run(machine, "12", "0", "mmap")
    address = mapping.stdout.split(b"mapped at ")[1].split()[0].decode()
    peek = run(machine, "12", "0", "peek", address)
    assert len(seals) == 1  # the peek ran on the kept machine
    assert "UNMAPPED" in peek.error
    assert_same(peek, fresh(machine, "12", "0", "peek", address))
    assert_same(mapping, fresh(machine, "12", "0", "mmap"))


def test_a_run_that_wrote_a_status_register_gets_a_new_machine(machine: dict[str, Any], seals: list[int]) -> None:
    first = run(machine, "12", "0", "csr")
    assert first.exit_code == 0
    run(machine, "12", "0")
    assert len(seals) == 2


def test_a_kept_machine_holds_nothing_of_its_run(machine: dict[str, Any]) -> None:
    run(machine, "12", "0", stdin=b"input")
    (kept,) = executor.KEPT._machines.values()
    assert kept.output(0) == b""
    assert kept.output(1) == b""
    assert kept.blocks()
    assert all(count == 0 for _, _, count in kept.blocks())


@pytest.mark.parametrize("outcome", ["refuses", "raises"])
def test_a_machine_whose_restart_fails_is_closed(
    machine: dict[str, Any], monkeypatch: pytest.MonkeyPatch, outcome: str
) -> None:
    made: list[executor.Executor] = []
    seal = executor.Executor.seal

    def kept(self: executor.Executor) -> None:
        made.append(self)
        seal(self)

    def restart(self: executor.Executor) -> bool:
        if outcome == "raises":
            raise ExecutorError("restart failed")
        return False

    monkeypatch.setattr(executor.Executor, "seal", kept)
    monkeypatch.setattr(executor.Executor, "restart", restart)
    if outcome == "raises":
        with pytest.raises(ExecutorError, match="restart failed"):
            run(machine, "12", "0")
    else:
        assert run(machine, "12", "0").exit_code == 0
    assert made[0].handle is None
    assert not executor.KEPT._machines


def _word(opcode: int, rest: int = 0) -> bytes:
    return (rest << 7 | opcode).to_bytes(4, "little")


def test_restartable_blocks_have_no_floating_point_or_system_instructions() -> None:
    addi, ecall, ebreak = _word(0x13), (0x73).to_bytes(4, "little"), (0x0010_0073).to_bytes(4, "little")
    code = [(0x1000, addi * 4 + ecall + ebreak)]
    assert _restartable(code, 0x1000, 6)
    for word in (_word(0x53), _word(0x07, 0x2 << 5), _word(0x27), _word(0x43), (0x3400_1073).to_bytes(4, "little")):
        assert not _restartable([(0x1000, addi + word)], 0x1000, 2)
    assert not _restartable(code, 0x1010, 4)  # past the end of the code
    assert not _restartable(code, 0x2000, 1)  # outside it
