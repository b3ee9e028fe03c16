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


def test_a_guest_takes_the_worker_started_ahead(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    artifact = builder.build(
        [write("squares.c", SQUARES_C)], kind="library", models=[default_registry().create("zkvm")]
    )
    guest.close_spare()
    with Library(artifact) as first:
        assert first.squares(10) == 285
        ahead = guest._spare
        assert ahead is not None
        assert ahead.poll() is None
    with Library(artifact) as second:
        ((taken, _),) = second._guests.values()
        assert taken.proc.pid == ahead.pid
        assert second.squares(10) == 285
    guest.close_spare()
    assert guest._spare is None
    assert ahead.poll() is not None


def test_a_worker_started_ahead_takes_the_environment_of_its_guest(builder: Builder, write, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    artifact = builder.build(
        [write("squares.c", SQUARES_C)], kind="library", models=[default_registry().create("zkvm")]
    )
    with Library(artifact) as first:  # records the code it reached; a worker is started ahead
        since = first.snapshot()
        assert first.squares(1000) == 332833500
        assert "zkvm" not in first.counts(since).unavailable
    assert guest._spare is not None
    # Read in the worker when it loads a build whose reached code is recorded.
    monkeypatch.setenv(TRANSLATE_AT, "many")
    with pytest.raises(ExecutorError, match=f"{TRANSLATE_AT} must be a number of instructions, not 'many'"):
        Library(artifact)
