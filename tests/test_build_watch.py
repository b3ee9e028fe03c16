"""A long build says what it is doing and how far it is; a quick one says nothing."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from cbuild.build import watch as watch_module
from cbuild.build.builder import Builder
from cbuild.build.options import BuildOptions
from cbuild.build.progress import progress_lines, stderr_progress
from cbuild.build.watch import BuildWatch


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(watch_module.time, "monotonic", fake)
    return fake


def test_a_quick_build_says_nothing(clock: Clock) -> None:
    said: list[str] = []
    watch = BuildWatch(said.append, "lib.c")
    watch.step("compiling", 0, 1)
    clock.now += 1.0
    watch.step("instrumenting")
    clock.now += 1.0
    watch.done()
    assert said == []


def test_a_long_build_names_its_steps_at_most_every_ten_seconds_and_its_total(clock: Clock) -> None:
    said: list[str] = []
    watch = BuildWatch(said.append, "cmark.c and 34 more")
    watch.step("compiling", 0, 35)
    for done in range(1, 35):
        clock.now += 1.0
        watch.step("compiling", done, 35)
    clock.now += 2.0
    watch.step("instrumenting")
    clock.now += 20.0
    watch.step("building for riscv32")
    clock.now += 5.0
    watch.done()
    assert said == [
        "building cmark.c and 34 more: compiling 3 of 35 (3 s so far)",
        "building cmark.c and 34 more: compiling 13 of 35 (13 s so far)",
        "building cmark.c and 34 more: compiling 23 of 35 (23 s so far)",
        "building cmark.c and 34 more: compiling 33 of 35 (33 s so far)",
        "building cmark.c and 34 more: building for riscv32 (56 s so far)",
        "built cmark.c and 34 more in 61.0 s: compiling 36.0 s, instrumenting 20.0 s, building for riscv32 5.0 s",
    ]


def test_a_build_that_waited_for_another_process_says_how_long(clock: Clock) -> None:
    """Under xdist, a worker that waits for another to build the same entries says the wait
    apart from the step it fell in, instead of calling 30 s of waiting 'compiling'."""
    said: list[str] = []
    watch = BuildWatch(said.append, "strops.c")
    watch.step("compiling", 0, 1)
    clock.now += 30.4
    watch.done(waited=29.9)
    assert said[-1] == "built strops.c in 30.4 s: compiling 30.4 s; 29.9 s of it waiting for another process"


def test_work_beside_the_steps_is_timed_apart_and_named_after_them(clock: Clock) -> None:
    """The RISC-V builds run in a thread of their own while the native build's steps go on: their
    time is not a step's, and the steps' times still add up to the total."""
    said: list[str] = []
    watch = BuildWatch(said.append, "yyjson.c")
    watch.step("linking the IR")
    with watch.beside("building for riscv32"):
        clock.now += 6.0
        watch.step("generating code")
        clock.now += 9.0
    watch.step("linking")
    clock.now += 1.0
    watch.done()
    assert said[-1] == (
        "built yyjson.c in 16.0 s: linking the IR 6.0 s, generating code 9.0 s, linking 1.0 s; "
        "beside them: building for riscv32 15.0 s"
    )


def test_a_build_with_call_tracking_says_so(
    shared_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A report that tracks calls rebuilds what a plain run built: its progress says why."""
    monkeypatch.setattr(watch_module, "SLOW", 0.0)  # every build speaks
    source = tmp_path / "tracked.c"
    source.write_text(f"int tracked(void) {{ return {secrets.randbits(31)}; }}\n")  # a build of its own
    said: list[str] = []
    builder = Builder(cache_dir=shared_cache, progress=said.append)
    builder.build([source], options=BuildOptions(calls=True), kind="library")
    builder.build([source], options=BuildOptions(), kind="library")
    built = [line for line in said if line.startswith("built ")]
    assert [line.split(" in ")[0] for line in built] == ["built tracked.c (with call tracking)", "built tracked.c"]


def test_the_first_link_into_a_cache_says_zig_prepares_its_c_library(shared_cache: Path, tmp_path: Path) -> None:
    """On a new machine zig builds its C runtime at the first link, half a minute without a word
    (the build's own progress lines come every 10 s at most): said once per cache."""
    for marker in shared_cache.glob("libc-ready-*"):  # as a cache that never linked with this toolchain
        marker.unlink()
    said: list[str] = []
    builder = Builder(cache_dir=shared_cache, progress=said.append)
    for name in ("first", "second"):
        source = tmp_path / f"{name}.c"
        source.write_text(f"int {name}(void) {{ return {secrets.randbits(31)}; }}\n")  # a build of its own
        builder.build([source], kind="library")
    notices = [line for line in said if "zig prepares its C library" in line]
    assert notices == [
        "first build with this cache: zig prepares its C library for this machine unless its own cache has it "
        "(about 30 s on a new machine, once)"
    ]


def test_progress_messages_fit_the_log_width_and_keep_paths_whole() -> None:
    """A build's progress message, wrapped: at most the width, later lines indented, a path longer
    than a line kept whole on a line of its own."""
    message = (
        "built cb.c in 15.8 s: linking the IR 7.2 s, the models' analyses 0.1 s, linking 3.3 s, "
        "waiting for the RISC-V build 5.1 s; beside them: building for riscv32 15.7 s"
    )
    lines = progress_lines(message, 80)
    assert lines == [
        "instrbudget: built cb.c in 15.8 s: linking the IR 7.2 s, the models' analyses",
        "  0.1 s, linking 3.3 s, waiting for the RISC-V build 5.1 s; beside them:",
        "  building for riscv32 15.7 s",
    ]
    path = "/very/long-path/" + "x" * 90 + "/prog.c"
    assert progress_lines(f"rebuilding {path}: its source changed", 80) == [
        "instrbudget: rebuilding",
        f"  {path}:",
        "  its source changed",
    ]
    assert progress_lines("done", 80) == ["instrbudget: done"]


def test_progress_on_stderr_takes_its_width_from_columns_or_stderr(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The width of stderr's terminal, not stdout's (``cbuild run --json > doc.json``); $COLUMNS
    first, 80 where stderr is no terminal (a CI log)."""
    message = "built prog.c in 1.2 s: linking the IR 0.4 s, generating code 0.5 s, linking 0.3 s"
    monkeypatch.setenv("COLUMNS", "50")
    stderr_progress(message)
    assert all(len(line) <= 50 for line in capsys.readouterr().err.splitlines())
    monkeypatch.delenv("COLUMNS")
    stderr_progress(message)  # captured: no terminal
    assert capsys.readouterr().err.splitlines() == progress_lines(message, 80)
