"""A library's RISC-V build runs in a worker process; the next guest's worker is started ahead,
so that its interpreter's start is not the next test's, and it takes the environment of the
guest that takes it, not the one it started in."""

from __future__ import annotations

import pytest

from cbuild import Builder, Library
from cbuild.build.builder import Artifact
from cbuild.models import default_registry
from cbuild.riscv import guest
from cbuild.riscv.executor import ExecutorError
from cbuild.riscv.translated import TRANSLATE_AT

SQUARES_C = "long squares(long n) { long s = 0; for (long i = 0; i < n; i++) s += i * i; return s; }\n"


def _built(builder: Builder, write) -> Artifact:  # type: ignore[no-untyped-def]
    return builder.build([write("squares.c", SQUARES_C)], kind="library", models=[default_registry().create("zkvm")])


def _measured(library: Library) -> tuple[int, dict[str, int], tuple[int, ...]]:
    since = library.snapshot()
    assert library.squares(1000) == 332833500
    counts = library.counts(since)
    assert "zkvm" not in counts.unavailable
    run = counts.machine_run("riscv32")
    return run.instructions, run.functions, counts.results_of("zkvm")


def test_a_guest_takes_the_worker_started_ahead(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    artifact = _built(builder, write)
    guest.close_spare()
    with Library(artifact) as first, Library(artifact) as second:  # two guests at once: two workers
        ((one, _),) = first._guests.values()
        ((other, _),) = second._guests.values()
        assert one.proc.pid != other.proc.pid
        ahead = guest._spare
        assert ahead is not None
        assert ahead.poll() is None
        assert other.proc.pid != ahead.pid
        assert first.squares(10) == second.squares(10) == 285
    with Library(artifact) as third, Library(artifact) as fourth:  # one given back, then the one ahead
        pids = {g.proc.pid for library in (third, fourth) for g, _ in library._guests.values()}
        assert ahead.pid in pids
    guest.close_spare()
    assert guest._spare is None
    assert guest._idle is None
    assert ahead.poll() is not None


def test_a_worker_given_back_measures_as_a_new_one(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    artifact = _built(builder, write)
    guest.close_spare()
    with Library(artifact) as first:
        ((one, _),) = first._guests.values()
        fresh = _measured(first)
    assert guest._idle is not None
    assert guest._idle.pid == one.proc.pid
    for _ in range(2):
        with Library(artifact) as again:
            ((taken, _),) = again._guests.values()
            assert taken.proc.pid == one.proc.pid
            assert _measured(again) == fresh
    # A worker that refused a request is not given back, nor one that died.
    with Library(artifact) as refused:
        ((bad, _),) = refused._guests.values()
        with pytest.raises(ExecutorError):
            bad.call("no_such_function", [], ("long", 64, False))
        assert bad.proc.poll() is None
    assert guest._idle is None
    assert bad.proc.poll() is not None
    with Library(artifact) as failing:
        ((bad, _),) = failing._guests.values()
        bad.proc.kill()
        bad.proc.wait()
        with pytest.raises(ExecutorError):
            bad.call("squares", [], ("long", 64, False))
    assert guest._idle is None


def test_a_worker_taken_takes_the_environment_of_its_guest(builder: Builder, write, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    artifact = builder.build(
        [write("squares.c", SQUARES_C)], kind="library", models=[default_registry().create("zkvm")]
    )
    with Library(artifact) as first:  # records the code it reached; its worker is given back, one started ahead
        since = first.snapshot()
        assert first.squares(1000) == 332833500
        assert "zkvm" not in first.counts(since).unavailable
    assert guest._spare is not None
    # Both workers started before this; it is read in the worker when it loads a build whose reached
    # code is recorded.
    monkeypatch.setenv(TRANSLATE_AT, "many")
    with pytest.raises(ExecutorError, match=f"{TRANSLATE_AT} must be a number of instructions, not 'many'"):
        Library(artifact)
