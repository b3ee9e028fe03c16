"""Threads: each thread counts into its own counters, so threaded work counts the same on every run."""

from __future__ import annotations

import json
import subprocess
import warnings
from pathlib import Path

import pytest

from cbuild import Builder, BuildOptions, IrCountModel, Library, run_program
from cbuild.models import default_registry
from cbuild.run.program import RunResult

MODEL = IrCountModel()

#: The fixed work each thread does, in programs and libraries alike.
WORKER_C = r"""
__attribute__((noinline)) long work(long n) {
    long s = 7;
    for (long i = 0; i < n; i++) s = s * 31 + (i ^ (s >> 7));
    return s & 0xffffff;
}

struct job { long n, out; };

__attribute__((noinline)) static void *worker(void *arg) {
    struct job *j = arg;
    j->out = work(j->n);
    return NULL;
}
"""

#: Every thread runs the same fixed work; the threads are joined before main prints their sum.
THREADS_C = (
    r"""
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

"""
    + WORKER_C
    + r"""
static pthread_barrier_t started;

static void *endless(void *arg) {
    (void)arg;
    pthread_barrier_wait(&started);
    for (;;) pause(); /* blocked in a call when the process exits */
    return NULL;
}

/* argv: iterations, threads (0: main calls the worker once itself), then optional modes:
 * "detach": one more thread, detached and still running at exit;
 * "fork": after the join, fork a child that runs one worker itself. */
int main(int argc, char **argv) {
    long n = atol(argv[1]), sum = 0;
    int threads = atoi(argv[2]);
    struct job jobs[16];
    pthread_t ids[16];
    if (threads == 0) {
        jobs[0].n = n;
        worker(&jobs[0]);
        printf("%ld\n", jobs[0].out);
        return 0;
    }
    for (int i = 0; i < threads; i++) {
        jobs[i].n = n;
        if (pthread_create(&ids[i], NULL, worker, &jobs[i]) != 0) return 2;
    }
    for (int i = 0; i < threads; i++) {
        pthread_join(ids[i], NULL);
        sum += jobs[i].out;
    }
    for (int a = 3; a < argc; a++) {
        if (argv[a][0] == 'd') {
            pthread_t other;
            pthread_barrier_init(&started, NULL, 2);
            if (pthread_create(&other, NULL, endless, NULL) != 0) return 3;
            pthread_detach(other);
            pthread_barrier_wait(&started);
        } else if (argv[a][0] == 'f') {
            pid_t pid = fork();
            if (pid == 0) {
                jobs[0].n = n;
                worker(&jobs[0]);
                return jobs[0].out == sum / threads ? 0 : 4;
            }
            int status = 0;
            waitpid(pid, &status, 0);
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 5;
        }
    }
    printf("%ld\n", sum);
    return 0;
}
"""
)

ITERATIONS = 300_000


def _functions(run: RunResult) -> dict[str, int]:
    assert run.counts is not None
    return dict(MODEL.evaluate(run.counts)[0].functions)


@pytest.fixture(scope="module")
def threaded(builder: Builder, tmp_path_factory: pytest.TempPathFactory) -> object:
    source = tmp_path_factory.mktemp("threads") / "threads.c"
    source.write_text(THREADS_C)
    return builder.build([source], options=BuildOptions(opt_level="1"))


def test_threads_count_the_same_every_run_and_add_up(threaded: object) -> None:
    """4 threads x the same work: 4 x one worker's count, plus main's part; ten runs, one answer."""
    alone = _functions(run_program(threaded, [ITERATIONS, 0]))  # type: ignore[arg-type]
    runs = [run_program(threaded, [ITERATIONS, 4]) for _ in range(10)]  # type: ignore[arg-type]
    assert {run.stdout for run in runs} == {runs[0].stdout}
    counted = [_functions(run) for run in runs]
    assert all(c == counted[0] for c in counted), counted
    got = counted[0]
    assert alone["work"] > 3 * ITERATIONS
    assert got["work"] == 4 * alone["work"]
    assert got["worker"] == 4 * alone["worker"]
    assert {name for name in got if not name.startswith("__instrbudget_libc_")} == {"main", "worker", "work"}
    assert runs[0].threads == 5  # main and four workers ran instrumented code
    # main's own part grows by the same amount per thread it starts and joins.
    mains = [_functions(run_program(threaded, [ITERATIONS, k]))["main"] for k in (1, 2, 3)]  # type: ignore[arg-type]
    assert got["main"] - mains[2] == mains[2] - mains[1] == mains[1] - mains[0] > 0


def test_detached_thread_still_running_at_exit_is_no_problem(threaded: object) -> None:
    plain = _functions(run_program(threaded, [1000, 2]))  # type: ignore[arg-type]
    runs = [run_program(threaded, [1000, 2, "detach"]) for _ in range(3)]  # type: ignore[arg-type]
    assert {run.threads for run in runs} == {4}
    assert {run.returncode for run in runs} == {0}
    # The detached thread is counted as far as it got (the barrier, perhaps its loop's first pass);
    # everything else is as without it, and main's part the same in every run.
    counted = [_functions(run) for run in runs]
    assert all(c["endless"] > 0 for c in counted)
    assert len({c["main"] for c in counted}) == 1
    for got in counted:
        assert {k: v for k, v in got.items() if k not in ("endless", "main")} == {
            k: v for k, v in plain.items() if k != "main"
        }


def test_fork_after_threads_counts_the_child_from_zero(threaded: object) -> None:
    alone = _functions(run_program(threaded, [1000, 0]))  # type: ignore[arg-type]
    joined = _functions(run_program(threaded, [1000, 3]))  # type: ignore[arg-type]
    forked = run_program(threaded, [1000, 3, "fork"])  # type: ignore[arg-type]
    assert forked.returncode == 0
    assert forked.processes == 2
    got = _functions(forked)
    # The child ran one worker more, in its only thread; the parent's threads are not counted twice.
    assert got["work"] == joined["work"] + alone["work"] == 4 * alone["work"]
    assert got["worker"] == joined["worker"] + alone["worker"]


LIBRARY_C = (
    r"""
#include <pthread.h>

"""
    + WORKER_C
    + r"""
long run_threads(int threads, long n) {
    struct job jobs[16];
    pthread_t ids[16];
    long sum = 0;
    for (int i = 0; i < threads; i++) {
        jobs[i].n = n;
        if (pthread_create(&ids[i], 0, worker, &jobs[i]) != 0) return -1;
    }
    for (int i = 0; i < threads; i++) {
        pthread_join(ids[i], 0);
        sum += jobs[i].out;
    }
    return sum;
}

long run_alone(long n) {
    struct job job = {n, 0};
    worker(&job);
    return job.out;
}
"""
)

#: Long enough for the threads to run at the same time.
LIBRARY_ITERATIONS = 3_000_000

LIBRARY_TESTS = f"""
import pytest

@pytest.mark.parametrize("round", range(3))
def test_threads(cbuild, round):
    lib = cbuild.library("threads.c")
    assert lib.run_threads(4, {LIBRARY_ITERATIONS}) == 4 * lib.run_alone({LIBRARY_ITERATIONS})

def test_alone(cbuild):
    lib = cbuild.library("threads.c")
    assert lib.run_alone({LIBRARY_ITERATIONS}) != 0
"""


def _session(pytester: pytest.Pytester, out: Path) -> dict[str, dict[str, int]]:
    """Per test: the IR instructions of each function, and the total under ``""``."""
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", f"--instrbudget-json={out}")
    result.assert_outcomes(passed=4)
    tests = json.loads(out.read_text())["tests"]
    metrics = {name.split("::")[-1]: t["metrics"]["ir_instructions"] for name, t in tests.items()}
    return {name: {**m["functions"], "": m["value"]} for name, m in metrics.items()}


@pytest.mark.slow
def test_library_starting_threads_counts_the_same_in_every_session(pytester: pytest.Pytester) -> None:
    """Library calls that start and join threads, measured through the fixture in xdist sessions."""
    pytest.importorskip("xdist")
    pytester.makefile(".c", threads=LIBRARY_C)
    pytester.makepyfile(test_lib=LIBRARY_TESTS)
    pytester.makepyprojecttoml("[tool.instrbudget]\nopt_level = '1'\n")
    sessions = [_session(pytester, pytester.path / f"run{k}.json") for k in range(2)]
    assert sessions[0] == sessions[1]
    counts = sessions[0]
    assert counts["test_threads[0]"] == counts["test_threads[1]"] == counts["test_threads[2]"]
    threaded, alone = counts["test_threads[0]"], counts["test_alone"]
    # Four threads and the lone call: five times the lone call's work, and run_threads' own part.
    assert alone["work"] > 3 * LIBRARY_ITERATIONS
    assert threaded["work"] == 5 * alone["work"]
    assert threaded["worker"] == 5 * alone["worker"]
    assert threaded["run_alone"] == alone["run_alone"]
    assert threaded[""] == sum(threaded.values()) - threaded[""]


def test_threaded_work_is_measured_by_the_estimate_from_ir_not_the_riscv_build(  # type: ignore[no-untyped-def]
    builder: Builder, shared_source
) -> None:
    """Why zkvm keeps ``execute = false``: the RISC-V executor runs one thread, so the riscv32 build's
    ``pthread_create`` fails and it measures another execution (said in a warning), where the
    estimate from the native build's IR measures the threads' work: 4 threads cost 4 times one
    thread's worker, within main's part."""
    source = shared_source("t.c", THREADS_C)
    n, registry = 20_000, default_registry()
    executed = registry.create("zkvm", {"execute": True})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = run_program(builder.build([source], models=[executed]), [n, 4])
    said = [str(w.message) for w in caught]
    assert any("riscv32 build's exit status 2 differs from the native build's 0" in m for m in said), said
    assert run.counts is not None
    assert "zkvm" not in run.counts.unavailable  # measured: an execution that did no work
    cost = {c.metric: c for c in executed.evaluate(run.counts)}["zk_user_cycles"]
    assert "work" not in cost.functions
    assert cost.total < n
    estimate = registry.create("zkvm", {"execute": False})
    artifact = builder.build([source], models=[estimate])
    user = {}
    for threads in (0, 4):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # several threads: paging depends on them
            counts = run_program(artifact, [n, threads]).counts
        assert counts is not None
        user[threads] = {c.metric: c for c in estimate.evaluate(counts)}["zk_user_cycles"].functions
    assert user[0]["work"] > 3 * n
    assert user[4]["work"] == 4 * user[0]["work"]


def test_plain_build_of_a_threaded_program_runs(builder: Builder, shared_source) -> None:  # type: ignore[no-untyped-def]
    """The uninstrumented pipeline (no counters) links the same runtime: threads run there too."""
    artifact = builder.build([shared_source("t.c", THREADS_C)], options=BuildOptions(instrument=False))
    out = subprocess.run([str(artifact.path), "1000", "4"], capture_output=True, check=True)
    assert out.stdout.strip()


ENTRY_CASES_C = r"""
#include <setjmp.h>
#include <stdio.h>

__attribute__((naked)) int seven(void) { __asm__("movl $7, %eax\n ret"); }

static jmp_buf jb;

__attribute__((noinline)) static void jump(int n) {
    if (n > 3) longjmp(jb, n);
    jump(n + 1);
}

int main(void) {
    volatile int tries = 0;
    if (setjmp(jb) == 0) {
        tries++;
        jump(0);
    }
    printf("%d %d\n", seven(), tries);
    return 0;
}
"""


@pytest.mark.parametrize(
    "options",
    [BuildOptions(opt_level="0"), BuildOptions(cutoff=True), BuildOptions(calls=True, cflags=("-fPIC",))],
    ids=["O0", "cutoff", "calls-fPIC"],
)
def test_entry_code_keeps_naked_and_setjmp_functions_working(  # type: ignore[no-untyped-def]
    builder: Builder, shared_source, options: BuildOptions
) -> None:
    """A naked function counts into the module's array directly (2 IR instructions: the asm, unreachable)."""
    run = run_program(builder.build([shared_source("entry.c", ENTRY_CASES_C)], options=options))
    assert run.stdout == b"7 1\n"
    got = _functions(run)
    assert got["seven"] == 2
    assert got["jump"] > 0


def test_library_threads_warn_when_a_model_depends_on_their_interleaving(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    """A library's threads: the IR count stays exact; a dynamic model's results are said to depend on the
    interleaving, as for programs."""
    source = write("threads.c", LIBRARY_C)
    zkvm = default_registry().create("zkvm", {"execute": False})  # its dynamic phase in the native build
    with Library(builder.build([source], kind="library", models=[zkvm])) as lib:
        before = lib.snapshot()
        lib.run_alone(1000)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            lib.counts(before)  # one thread so far: nothing to say
        lib.run_threads(4, 1000)
        with pytest.warns(RuntimeWarning, match=r"threads\.c: 5 threads ran instrumented code; zkvm depend on"):
            lib.counts(before)
    with Library(builder.build([source], kind="library")) as lib, warnings.catch_warnings():
        warnings.simplefilter("error")  # ir-count alone: exact, no warning
        lib.run_threads(4, 1000)
        lib.counts()
