"""Programs that fork: every process's work is counted; leftover children end with the program."""

from __future__ import annotations

import time

import pytest

from cbuild import Builder, BuildOptions, ExecutionError, IrCountModel, ProgramTimeout, run_program

MODEL = IrCountModel()

FORKING_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) long work(long n) {
    volatile long s = 0;
    for (long i = 0; i < n; i++) s += i;
    return s;
}

/* argv: parent iterations, child iterations, children, how children end (r: return, x: _exit, e: exit) */
int main(int argc, char **argv) {
    long parent = atol(argv[1]), child = atol(argv[2]);
    int children = atoi(argv[3]);
    char how = argv[4][0];
    for (int k = 0; k < children; k++) {
        pid_t pid = fork();
        if (pid == 0) {
            work(child);
            if (how == 'x') _exit(0);
            if (how == 'e') exit(0);
            return 0;
        }
        waitpid(pid, NULL, 0);
    }
    printf("%ld\n", work(parent) % 7); /* one digit whatever the count: printf's work is counted */
    return 0;
}
"""


def _total(run: object) -> int:
    counts = run.counts  # type: ignore[attr-defined]
    assert counts is not None
    return int(MODEL.evaluate(counts)[0].total)


@pytest.mark.parametrize("how", ["r", "x", "e"])
def test_forked_children_are_counted_per_loop_iteration(builder: Builder, write, how: str) -> None:  # type: ignore[no-untyped-def]
    artifact = builder.build([write("fork.c", FORKING_C)], options=BuildOptions(opt_level="1"))
    base = run_program(artifact, [10, 10, 0, how])
    assert base.processes == 1
    one = run_program(artifact, [10, 10, 1, how])
    assert one.processes == 2
    more_child = run_program(artifact, [10, 110, 1, how])
    more_parent = run_program(artifact, [110, 10, 1, how])
    two = run_program(artifact, [10, 10, 2, how])
    assert two.processes == 3
    hundred_iterations = _total(more_parent) - _total(one)
    assert hundred_iterations > 0
    # A child's extra iterations cost what the parent's do: the child's work is in the sum.
    assert _total(more_child) - _total(one) == hundred_iterations
    # Each further child adds the same amount.
    assert _total(two) - _total(one) == _total(one) - _total(base)
    assert _total(one) == _total(run_program(artifact, [10, 10, 1, how]))


def test_program_exiting_while_its_child_holds_stdout_is_not_a_timeout(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    source = write(
        "leave.c",
        "#include <stdio.h>\n#include <unistd.h>\n"
        'int main(void) { if (fork() == 0) { sleep(60); return 0; } puts("parent done"); return 0; }\n',
    )
    artifact = builder.build([source])
    started = time.monotonic()
    run = run_program(artifact, [], timeout=20)
    assert time.monotonic() - started < 10
    assert run.returncode == 0
    assert run.stdout == b"parent done\n"
    assert run.processes == 1  # the child never finished: killed with the program's process group


def test_forked_child_that_outlives_the_timeout_is_killed(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    source = write(
        "hang.c",
        "#include <unistd.h>\nint main(void) { fork(); for (;;) pause(); }\n",
    )
    with pytest.raises(ProgramTimeout, match="ran past its 1 s timeout"):
        run_program(builder.build([source]), [], timeout=1)


EXEC_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* argv[1]: c: a child execs a shell command (as system() does), p: the program's own process execs */
int main(int argc, char **argv) {
    volatile long s = 0;
    for (long i = 0; i < 100; i++) s += i;
    if (argv[1][0] == 'p') execl("/bin/sh", "sh", "-c", "echo replaced", (char *)0);
    pid_t pid = fork();
    if (pid == 0) { execl("/bin/sh", "sh", "-c", "echo from the child", (char *)0); _exit(127); }
    waitpid(pid, NULL, 0);
    return 0;
}
"""


def test_a_process_that_execs_another_program(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    """A child that replaces itself with another program (``exec``, as ``system`` does) adds nothing
    of its own and the run goes on; the program's own process doing so leaves no counts, and the
    run fails saying why (fixture.md), not with the count of nothing."""
    artifact = builder.build([write("exec.c", EXEC_C)], options=BuildOptions(opt_level="1"))
    run = run_program(artifact, ["c"])
    assert run.stdout == b"from the child\n"
    assert run.processes == 1
    assert _total(run) > 100
    with pytest.raises(ExecutionError, match=r"replaced itself with another program \(exec\)"):
        run_program(artifact, ["p"])
