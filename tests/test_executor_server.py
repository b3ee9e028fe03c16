"""RISC-V runs go to executor servers kept between runs: the same results as a fresh process, and a
server that crashes or overruns its time ends alone, without taking later runs with it."""

from __future__ import annotations

from pathlib import Path

import pytest

from cbuild import Builder, Cost, run_program
from cbuild.models import default_registry
from cbuild.models.base import CostModel, Metric
from cbuild.models.costs import BlockCounts
from cbuild.riscv.executor import (
    ExecRuntime,
    ExecutorError,
    _Server,
    guest_place,
    read_image,
    run_isolated,
    slot_runtimes,
)
from cbuild.riscv.translated import RISCV_ENGINE

PROGRAM_C = r"""
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 10, s = 0;
    if (n < 0) for (;;) s++;              /* never ends */
    for (long i = 0; i < n; i++) s += i * i % 7;
    printf("%ld\n", s);
    return 0;
}
"""

#: A model whose C code aborts the executor's process at the 50th block.
ABORT_SOURCE = """
#include <stdlib.h>
static uint64_t ab_blocks;
static inline void model_block(const rvx_block *b) { (void)b; if (++ab_blocks == 50) abort(); }
static inline void model_access(uint64_t a, uint32_t s, uint32_t st, uint32_t i) {
    (void)a; (void)s; (void)st; (void)i;
}
static void model_reset(void) { ab_blocks = 0; }
static void model_finish(uint64_t *out) { out[0] = ab_blocks; }
static inline uint64_t model_now(void) { return ab_blocks; }
"""


class AbortingModel(CostModel):
    name = "aborting"
    metrics = (Metric("aborting_blocks", "blocks", "max_aborting_blocks"),)

    def executes(self) -> str | None:
        return "riscv32"

    def exec_runtime(self) -> ExecRuntime:
        return ExecRuntime(ABORT_SOURCE, results=1)

    def evaluate(self, counts: BlockCounts) -> list[Cost]:
        return [Cost("aborting_blocks", counts.results_of(self.name)[0])]


def _line_of(source: str, marker: str) -> int:
    """The line of ``source`` (as written to its file) that holds ``marker``."""
    (line,) = [n for n, text in enumerate(source.splitlines(), 1) if marker in text]
    return line


def _zk(run) -> tuple[int, ...]:  # type: ignore[no-untyped-def]
    assert run.counts is not None
    return run.counts.results_of("zkvm")


def test_a_kept_server_gives_the_results_of_a_fresh_process(builder: Builder, shared_source) -> None:  # type: ignore[no-untyped-def]
    artifact = builder.build([shared_source("squares.c", PROGRAM_C)], models=[default_registry().create("zkvm")])
    fresh = {}
    for n in (10, 5000):
        _Server.close_all()
        fresh[n] = _zk(run_program(artifact, [n]))  # the first run of a new server
    # One server, after other runs (with other inputs), gives the same counts again.
    for n in (10, 5000, 10, 5000):
        assert _zk(run_program(artifact, [n])) == fresh[n]
    assert fresh[10] != fresh[5000]


def test_a_run_past_its_timeout_ends_its_server_only(builder: Builder, shared_source) -> None:  # type: ignore[no-untyped-def]
    artifact = builder.build([shared_source("squares.c", PROGRAM_C)], models=[default_registry().create("zkvm")])
    doc = artifact.machines()["riscv32"]
    runtimes = slot_runtimes(doc["slots"])
    library, elf = Path(doc["executor"]), Path(doc["elf"])
    expected = run_isolated(library, elf, runtimes, ["squares", "100"])
    # Where the guest program was (its function and source line), not where the executor's Python code was.
    line = _line_of(PROGRAM_C, "never ends")
    where = rf"the program was in main \(squares\.c:{line}\) at pc 0x[0-9a-f]+$"
    with pytest.raises(ExecutorError, match=rf"took longer than 0\.5 s; {where}"):
        run_isolated(library, elf, runtimes, ["squares", "-1"], timeout=0.5)
    again = run_isolated(library, elf, runtimes, ["squares", "100"], timeout=30)
    assert again.results == expected.results
    assert again.stdout == expected.stdout == b"197\n"


def test_a_guest_place_names_its_function_and_line(builder: Builder, shared_source) -> None:  # type: ignore[no-untyped-def]
    artifact = builder.build([shared_source("squares.c", PROGRAM_C)], models=[default_registry().create("zkvm")])
    elf = Path(artifact.machines()["riscv32"]["elf"])
    image = read_image(elf)
    (main,) = [start for start, _, name in image.functions if name == "main"]
    assert guest_place(elf, main) == f"main (squares.c:{_line_of(PROGRAM_C, 'int main')}) at pc {main:#x}"
    nowhere = max(start + size for start, size, _ in image.functions) + 0x1000
    assert guest_place(elf, nowhere) == f"(no symbol) (pc {nowhere:#x})"


def test_a_server_killed_while_idle_is_replaced(builder: Builder, shared_source) -> None:  # type: ignore[no-untyped-def]
    artifact = builder.build([shared_source("squares.c", PROGRAM_C)], models=[default_registry().create("zkvm")])
    expected = _zk(run_program(artifact, [100]))
    assert _Server._idle
    for server in _Server._idle:
        server.proc.kill()
        server.proc.wait()
    assert _zk(run_program(artifact, [100])) == expected


def test_a_crashing_executor_fails_its_run_and_not_the_next(builder: Builder, shared_source) -> None:  # type: ignore[no-untyped-def]
    source = shared_source("squares.c", PROGRAM_C)
    crashing = builder.build([source], models=[AbortingModel()])
    with pytest.raises(ExecutorError, match=r"the RISC-V executor failed on .*\(exit -6\)"):
        run_program(crashing, [100])
    healthy = builder.build([source], models=[default_registry().create("zkvm")])
    run = run_program(healthy, [100])
    assert run.stdout == b"197\n"
    assert _zk(run)[1] > 0


def test_runs_at_the_same_time_get_servers_of_their_own(builder: Builder, shared_source) -> None:  # type: ignore[no-untyped-def]
    from concurrent.futures import ThreadPoolExecutor

    artifact = builder.build([shared_source("squares.c", PROGRAM_C)], models=[default_registry().create("zkvm")])
    expected = {n: _zk(run_program(artifact, [n])) for n in (100, 3000)}
    _Server.close_all()
    with ThreadPoolExecutor(max_workers=4) as pool:
        found = list(pool.map(lambda n: (n, _zk(run_program(artifact, [n]))), [100, 3000] * 4))
    assert all(counts == expected[n] for n, counts in found)
    assert len(_Server._idle) >= 2  # busy servers were not shared: more than one was started


def test_an_elf_read_again_is_parsed_again_only_once_it_changed(
    builder: Builder, shared_source, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """A server keeps the images it parsed (a small program's run costs less than parsing its ELF's
    symbols); a file replaced at the same path is read anew."""
    first = builder.build([shared_source("squares.c", PROGRAM_C)], models=[default_registry().create("zkvm")])
    other = builder.build(
        [shared_source("loop.c", PROGRAM_C + "/* another build */\n")], models=[default_registry().create("zkvm")]
    )
    elf = tmp_path / "guest.elf"
    elf.write_bytes(Path(first.machines()["riscv32"]["elf"]).read_bytes())
    image = read_image(elf)
    assert read_image(elf) is image
    replacement = tmp_path / "replacement.elf"
    replacement.write_bytes(Path(other.machines()["riscv32"]["elf"]).read_bytes() + b"\0" * 16)
    replacement.replace(elf)
    again = read_image(elf)
    assert again is not image
    assert again == read_image(Path(other.machines()["riscv32"]["elf"]))


SLOW_IN_RISCV_C = r"""
#include <stdlib.h>
int main(int argc, char **argv) {
    volatile unsigned s = 0;
    long n = atol(argv[1]);
    for (long i = 0; i < n; i++) s += (unsigned)i;  /* the loop */
    return s == 7;
}
"""


def test_a_riscv_run_past_the_timeout_names_the_program(
    builder: Builder, write, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """The message named the cached ELF by its hash (``f6e4c69f...elf``), not the user's program."""
    monkeypatch.setenv(RISCV_ENGINE, "unicorn")  # slower than the native run, whatever ran before
    artifact = builder.build([write("slow.c", SLOW_IN_RISCV_C)], models=[default_registry().create("zkvm")])
    line = _line_of(SLOW_IN_RISCV_C, "the loop")
    with pytest.raises(
        ExecutorError,
        match=rf"^the RISC-V run of slow\.c took longer than 2 s; the program was in main \(slow\.c:{line}\)",
    ):
        run_program(artifact, [100_000_000], timeout=2)
