"""Cut-offs on the clocks of models that execute a RISC-V build (``execute = true``).

The executor stops the run at the first block that would start with a model's clock past its
cut-off (rv_executor.c). It looks at the clocks only where they could have passed it (each model
bounds its clock's growth per instruction, ``model_clock_step``): these tests hold that against
the model without the bound, which looks before every block. The session runs with
INSTRBUDGET_CHECK_TRANSLATION set (tests/conftest.py), so every stopped program run here also
stops in the same place, with the same counts, in unicorn and in translated code.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from pathlib import Path

import pytest

from cbuild import Builder
from cbuild.build.options import BuildOptions
from cbuild.errors import CBuildError, ProgramCrashed
from cbuild.models.pipeline import PipelineModel
from cbuild.models.zkvm import ZkvmModel
from cbuild.riscv.executor import ExecRuntime
from cbuild.run.library import Library
from cbuild.run.program import run_program
from cbuild.run.stops import CodeStopped, Stop, needs_cutoff_build

#: Stores and loads spread over 1 MiB: paging as well as instructions moves the zk clock.
SPREAD_C = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
static char buf[1 << 20];
__attribute__((noinline)) uint32_t work(long n) {
    uint32_t h = 0;
    for (long i = 0; n < 0 || i < n; i++) {
        buf[(i * 4099) % sizeof buf] = (char)i;
        h = h * 31 + (unsigned char)buf[(i * 131) % sizeof buf];
    }
    return h;
}
#ifndef LIBRARY
int main(int argc, char **argv) {
    printf("%u\n", (unsigned)work(argc > 1 ? atol(argv[1]) : 1000));
    return 0;
}
#endif
"""


#: The most the zk clock grows over one instruction (zkvm_exec.c's model_clock_step, default costs):
#: the instruction, and a page-in of its code page and a page-in and page-out of two data pages.
STEP = 1 + 5 * (322 + 22 * 13)


class _EveryBlockZkvm(ZkvmModel):
    """The zkvm model without its bound on the clock's growth: a cut-off looks before every block."""

    def key_params(self) -> tuple[tuple[str, str], ...]:
        return (*super().key_params(), ("zkvm.clock_step", "none"))

    def exec_runtime(self) -> ExecRuntime:
        runtime = super().exec_runtime()
        source = runtime.source.replace("#define RVX_CLOCK_STEP\n", "")
        source = source.replace("static uint64_t model_clock_step(void)", "static inline uint64_t zk_no_step(void)")
        assert "RVX_CLOCK_STEP" not in source, "the zkvm runtime's clock step moved"
        assert "zk_no_step" in source, "the zkvm runtime's clock step moved"
        return dataclasses.replace(runtime, source=source)


def _zkvm(model: type[ZkvmModel] = ZkvmModel, po2: int = 16) -> ZkvmModel:
    return model({"execute": True, "po2": po2})


def _stop(artifact: object, args: list[object], metric: str, limit: int, data: bytes = b"") -> Stop:
    with pytest.raises(CodeStopped) as stopped:
        run_program(artifact, args, input=data, limits={metric: limit})  # type: ignore[arg-type]
    return stopped.value.stop


def test_only_limits_on_clocks_the_native_build_keeps_need_a_cutoff_build() -> None:
    executing, estimating = _zkvm(), ZkvmModel({"execute": False})
    assert not needs_cutoff_build([], [executing])
    assert not needs_cutoff_build(["zk_cycles"], [executing])
    assert needs_cutoff_build(["zk_cycles"], [estimating])
    assert needs_cutoff_build(["ir_instructions"], [executing])
    assert needs_cutoff_build(["ir_instructions", "zk_cycles"], [executing])


@pytest.fixture(scope="module")
def spread(shared_source) -> Path:  # type: ignore[no-untyped-def]
    return shared_source("spread.c", SPREAD_C)


@pytest.mark.parametrize("limit", [500, 20_000, 65_000, 123_457, 400_000])
def test_a_zk_cutoff_stops_where_looking_before_every_block_stops(builder: Builder, spread: Path, limit: int) -> None:
    """At po2 16 the larger limits fall in the second to seventh segment; the stop (clock, place
    and every zk result at it) is the same whether the executor skips looking while the clock
    cannot have passed or looks before every block."""
    fast = builder.build([spread], models=[_zkvm()])
    every = builder.build([spread], models=[_zkvm(_EveryBlockZkvm)])
    stop = _stop(fast, ["100000"], "zk_cycles", limit)
    assert stop == _stop(every, ["100000"], "zk_cycles", limit)
    assert stop.metric == "zk_cycles"
    assert stop.limit == limit
    # Past the limit by less than one instruction can add (its clock step), and at a block's start.
    assert limit < stop.count <= limit + STEP
    if limit > 10_000:  # smaller ones stop in the C library's start-up
        assert stop.where.function == "work"
        assert stop.where.file.endswith("spread.c")
    user, paging = stop.results["zkvm"][1:3]
    assert user + paging == stop.count
    # The first block that starts past the limit: one below the count stops there too, the count
    # itself only later.
    assert _stop(fast, ["100000"], "zk_cycles", stop.count - 1) == dataclasses.replace(stop, limit=stop.count - 1)
    assert _stop(fast, ["100000"], "zk_cycles", stop.count).count > stop.count


READ_C = r"""
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>
static unsigned char in[1 << 18];
int main(void) {
    uint32_t h = 0;
    ssize_t got = read(0, in, sizeof in); /* one system call writes 256 pages of guest memory */
    for (ssize_t i = 0; i < got; i += 64) h = h * 31 + in[i];
    printf("%u\\n", (unsigned)h);
    return 0;
}
"""


def test_a_system_call_that_pages_in_memory_is_looked_at_after(builder: Builder, shared_source) -> None:  # type: ignore[no-untyped-def]
    """A read into 256 KiB of guest memory pages it in within one instruction (the ecall): more
    than the clock step bounds. The executor looks at the clocks after every system call, so the
    run stops at the first block after the read, as it does looking before every block."""
    source = shared_source("read.c", READ_C)
    data = bytes(range(256)) * 1024
    fast = builder.build([source], models=[_zkvm()])
    every = builder.build([source], models=[_zkvm(_EveryBlockZkvm)])
    full = run_program(fast, [], input=data)
    assert full.counts is not None
    used = full.counts.machine["riscv32"].clocks[0]
    # The highest cut-off the clock passes within the read (the stop is more than a clock step past
    # it), where looking again only when the clock step allows would look too late.
    limit = max(
        limit
        for limit in range(10_000, used, 10_000)
        if _stop(every, [], "zk_cycles", limit, data).count > limit + STEP
    )
    stops = [_stop(artifact, [], "zk_cycles", limit, data) for artifact in (fast, every)]
    assert stops[0] == stops[1]
    assert stops[0].count > limit + STEP  # the clock passed the cut-off within the system call


def test_a_program_within_its_machine_cutoff_runs_to_the_end(builder: Builder, spread: Path) -> None:
    artifact = builder.build([spread], models=[_zkvm()])
    full = run_program(artifact, ["1000"])
    assert full.counts is not None
    run = full.counts.machine["riscv32"]
    used = run.clocks[0]
    assert used == sum(full.counts.results["zkvm"][1:3])  # user + paging
    within = run_program(artifact, ["1000"], limits={"zk_cycles": used})
    assert within.stdout == full.stdout
    assert within.counts is not None
    assert within.counts.results == full.counts.results
    assert used // 2 < _stop(artifact, ["1000"], "zk_cycles", used // 2).count <= used


def test_a_pipeline_cutoff_stops_at_the_first_block_past_it(builder: Builder, spread: Path) -> None:
    """The pipeline model has no bound on its clock's growth (a block's stall can be long): the
    executor looks before every block."""
    artifact = builder.build([spread], models=[PipelineModel({"execute": True, "machine": "inorder5"})])
    stop = _stop(artifact, ["100000"], "pipeline_cycles", 50_000)
    assert 50_000 < stop.count < 50_100
    assert stop.where.function == "work"
    again = _stop(artifact, ["100000"], "pipeline_cycles", stop.count - 1)
    assert again == dataclasses.replace(stop, limit=stop.count - 1)


def test_a_program_that_never_ends_stops_at_its_machine_cutoff(builder: Builder, spread: Path) -> None:
    """The RISC-V run stops at the cut-off and ends the native run, which would never end."""
    artifact = builder.build([spread], models=[_zkvm()])
    started = time.monotonic()
    with pytest.raises(CodeStopped) as stopped:
        run_program(artifact, ["-1"], limits={"zk_cycles": 2_000_000}, timeout=120)
    assert time.monotonic() - started < 60
    stop = stopped.value.stop
    assert stop.count > 2_000_000
    assert stop.where.function == "work"
    assert "stopped after" in str(stopped.value)
    assert "zk_cycles" in str(stopped.value)


def test_library_calls_together_stop_at_their_machine_cutoff(builder: Builder, spread: Path) -> None:
    """The replay of library calls counts the calls' growth of the clock from the library's load:
    three small calls run, the fourth stops; its stop counts the calls before it."""
    artifact = builder.build([spread], kind="library", options=BuildOptions(defines=("LIBRARY",)), models=[_zkvm()])
    with Library(artifact) as free:
        for n in (100, 100, 100):
            free.work(n)
        grew = free.counts().machine["riscv32"].clocks[0]
    assert grew > 0
    with Library(artifact, limits={"zk_cycles": grew + 1000}) as lib:
        for n in (100, 100, 100):
            lib.work(n)
        with pytest.raises(CodeStopped) as stopped:
            lib.work(100_000)
    stop = stopped.value.stop
    assert stop.limit == grew + 1000
    assert grew + 1000 < stop.count <= grew + 1000 + STEP
    assert stop.where.function == "work"


def test_a_limit_on_a_metric_without_a_clock_names_those_with_one(builder: Builder, spread: Path) -> None:
    artifact = builder.build([spread], models=[_zkvm()])
    with pytest.raises(CBuildError, match=r"no limit can be set on 'zk_user_cycles'; .*: ir_instructions, zk_cycles"):
        run_program(artifact, ["10"], limits={"zk_user_cycles": 10})
    with pytest.raises(CBuildError, match=r"built without cut-off checks.* on ir_instructions"):
        run_program(artifact, ["10"], max_instr=10)


def test_a_cutoff_on_the_second_targets_clock_stops_a_program_that_never_ends(builder: Builder, spread: Path) -> None:
    """zkvm runs the riscv32 build and the pipeline (rocket) the riscv64 one; the cut-off is on the
    pipeline's clock only. The build with the cut-off runs first, so the program stops there."""
    models = [_zkvm(), PipelineModel({"execute": True, "machine": "rocket"})]
    artifact = builder.build([spread], models=models)
    assert sorted(artifact.machines()) == ["riscv32", "riscv64"]
    started = time.monotonic()
    with pytest.raises(CodeStopped) as stopped:
        run_program(artifact, ["-1"], limits={"pipeline_cycles": 200_000}, timeout=120)
    assert time.monotonic() - started < 60
    assert stopped.value.stop.metric == "pipeline_cycles"
    assert stopped.value.stop.where.function == "work"


CRASH_C = r"""
#include <stdlib.h>
int main(int argc, char **argv) {
    volatile int *p = (int *)(argc > 5 ? 0 : 16);
    long n = argc > 1 ? atol(argv[1]) : 0;
    volatile long s = 0; /* a loop the compiler keeps */
    for (long i = 0; i < n; i++) s += i;
    return (int)s + *p; /* a null-page read: the native run dies of SIGSEGV */
}
"""


def _open_files() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="counts open files through /proc")
def test_a_program_that_crashes_after_its_machine_cutoff_reports_the_stop_and_leaks_no_file(
    builder: Builder, shared_source
) -> None:  # type: ignore[no-untyped-def]
    """The native run dies after the point where the RISC-V run stops: the stop is what the run
    reports, every time; the pipe that watches the RISC-V runs is closed on every way out."""
    artifact = builder.build([shared_source("crash.c", CRASH_C)], models=[_zkvm()])

    def runs() -> None:
        with pytest.raises(CodeStopped) as stopped:
            run_program(artifact, ["1000000"], limits={"zk_cycles": 100_000})
        assert stopped.value.stop.where.function == "main"
        with pytest.raises(ProgramCrashed):  # within its cut-off: the crash itself
            run_program(artifact, ["10"], limits={"zk_cycles": 10**9})

    runs()  # the executor's servers start, and stay for later runs
    before = _open_files()
    for _ in range(3):
        runs()
    assert _open_files() == before


def test_calls_after_a_library_stop_leave_the_model_unavailable(builder: Builder, spread: Path) -> None:
    """A test that catches the stop and goes on calling: the RISC-V build no longer runs, so its
    model's results for the measurement are unavailable, saying why, not silently stale."""
    artifact = builder.build([spread], kind="library", options=BuildOptions(defines=("LIBRARY",)), models=[_zkvm()])
    with Library(artifact, limits={"zk_cycles": 50_000}) as lib:
        with pytest.raises(CodeStopped):
            lib.work(100_000)
        lib.work(10)
        counts = lib.counts()
    assert "was not replayed in the riscv32 build: it stopped at a cut-off" in counts.unavailable["zkvm"]


SMALL_MAIN_C = """
#include <stdlib.h>
int main(int argc, char **argv) { volatile int s = 0; for (int i = 0; i < atoi(argv[1]); i++) s += i; return 0; }
"""


def test_a_zk_cutoff_without_a_limit_fails_only_code_it_stopped(pytester: pytest.Pytester) -> None:
    """``stop_at_zkcycles`` watches user + paging cycles (7,572 for this program), where zk_cycles is
    padded to a power of two per segment (16,384): a program the cut-off did not stop passes, not
    "zk_cycles: 16,384 exceeds stop_at_zkcycles=10,000"; one it stopped fails saying where."""
    pytester.makefile(".c", small=SMALL_MAIN_C)
    pytester.makepyprojecttoml('[tool.instrbudget]\nmodels = ["ir-count", "zkvm"]\n')
    pytester.makepyfile(
        test_cut="""
import pytest

@pytest.mark.budget(stop_at_zkcycles=10_000)
def test_within(cbuild):
    assert cbuild.program("small.c").run(["10"]).returncode == 0

@pytest.mark.budget(stop_at_zkcycles=5_000)
def test_stopped(cbuild):
    cbuild.program("small.c").run(["10"])
"""
    )
    out = pytester.path / "r.json"
    result = pytester.runpytest("-p", "no:cacheprovider", f"--instrbudget-json={out}")
    result.assert_outcomes(passed=1, failed=1)
    within = json.loads(out.read_text())["tests"]["test_cut.py::test_within"]["metrics"]
    assert within["zk_cycles"]["value"] == 16_384
    assert within["zk_user_cycles"]["value"] + within["zk_paging_cycles"]["value"] < 10_000
    result.stdout.fnmatch_lines(
        ["*_ test_stopped _*", "*stopped after * cycles (zk_cycles) (cut-off 5,000, stop_at_zkcycles=5,000) in *"]
    )
