"""A damaged build cache is found, reported once and rebuilt; a build waiting on a lock says for whom."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cbuild import Builder, CBuildError, run_program
from cbuild.build import cache as cache_mod
from cbuild.build import watch
from cbuild.run.hosts import HostPool, guard_library
from cbuild.run.library import Library

LIB_C = "int work(int n) {\n    int s = 0;\n    for (int i = 0; i < n; i++) s += i;\n    return s;\n}\n"
PROG_C = '#include <stdio.h>\nint main(void) { puts("hello"); return 3; }\n'


def _damage(how: str, path: Path) -> None:
    size = path.stat().st_size
    if how == "truncated":
        path.write_bytes(path.read_bytes()[: size // 2])
    elif how == "zero-filled":
        path.write_bytes(bytes(size))
    elif how == "empty":
        path.write_bytes(b"")
    else:  # "deleted"
        path.unlink()


@pytest.fixture(autouse=True)
def quiet_slow_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests check what the cache says: a build that a loaded machine makes slower than
    :data:`cbuild.build.watch.SLOW` would add the build watch's lines (tests/test_build_watch.py)."""
    monkeypatch.setattr(watch, "SLOW", float("inf"))


@pytest.fixture(scope="session")
def runtime_parts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run-time parts (the cache's ``rt`` entries: the runtime, the canonical CPU's tables, the
    models' results, the counted C library's modules) of a program's build, made once per session
    in a cache of their own (one for the xdist workers together). A private cache starts with a
    copy, as after an earlier build in it: each test builds its own sources, not these again (4 s
    each)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        cache_dir = tmp_path_factory.getbasetemp().parent / "runtime-parts-cache"
    else:
        cache_dir = tmp_path_factory.mktemp("runtime-parts-cache")
    source = tmp_path_factory.mktemp("runtime-parts") / "prog.c"
    source.write_text(PROG_C)
    Builder(cache_dir=cache_dir, progress=lambda message: None).build([source])
    return cache_dir / cache_mod.LAYOUT / "rt"


def private_cache(runtime_parts: Path, cache_dir: Path) -> Path:
    """``cache_dir``, a new cache holding a copy of the run-time parts alone."""
    shutil.copytree(runtime_parts, cache_dir / cache_mod.LAYOUT / "rt")
    return cache_dir


@pytest.fixture
def fresh(tmp_path: Path, runtime_parts: Path) -> Callable[[], tuple[Builder, list[str]]]:
    """A new builder on one private cache each call (no memory of earlier checks), and its messages.
    The cache starts with the run-time parts (``runtime_parts``) and none of the test's builds."""
    cache_dir = private_cache(runtime_parts, tmp_path / "cache")

    def make() -> tuple[Builder, list[str]]:
        messages: list[str] = []
        return Builder(cache_dir=cache_dir, progress=messages.append), messages

    return make


def _entry(builder: Builder, kind: str, suffix: str) -> Path:
    (found,) = (builder.cache.root / cache_mod.LAYOUT / kind).rglob(f"*{suffix}")
    return found


@pytest.mark.parametrize("how", ["truncated", "zero-filled", "empty"])
def test_a_damaged_library_is_rebuilt_and_reported_once(fresh, write, how: str) -> None:  # type: ignore[no-untyped-def]
    src = write("lib.c", LIB_C)
    builder, _ = fresh()
    artifact = builder.build([src], kind="library")
    good = artifact.path.read_bytes()
    _damage(how, artifact.path)
    builder, messages = fresh()
    again = builder.build([src], kind="library")
    assert again.path == artifact.path
    assert again.path.read_bytes() == good
    assert len(messages) == 1
    assert messages[0].startswith("the cache entry for lib.c was damaged (")
    assert messages[0].endswith("); rebuilding it")
    hosts = HostPool(lambda: guard_library(builder.toolchain, builder.cache))
    try:
        assert Library(again, host=hosts.take(), timeout=30).work(10) == 45
    finally:
        hosts.close()
    builder, messages = fresh()
    builder.build([src], kind="library")
    assert messages == []  # once: the rebuilt entry is whole


@pytest.mark.parametrize("how", ["truncated", "zero-filled", "deleted"])
def test_a_damaged_program_is_rebuilt(fresh, write, how: str) -> None:  # type: ignore[no-untyped-def]
    src = write("prog.c", PROG_C)
    builder, _ = fresh()
    artifact = builder.build([src])
    _damage(how, artifact.path)
    builder, messages = fresh()
    result = run_program(builder.build([src]), timeout=30)
    assert (result.returncode, result.stdout) == (3, b"hello\n")
    assert [m.split(" (")[0] for m in messages] == ["the cache entry for prog.c was damaged"]


def test_a_damaged_sidecar_is_rebuilt(fresh, write) -> None:  # type: ignore[no-untyped-def]
    src = write("prog.c", PROG_C)
    builder, _ = fresh()
    artifact = builder.build([src])
    expected = run_program(artifact, timeout=30).counts
    artifact.table_path.write_text('{"table": [1, 2')
    builder, messages = fresh()
    rebuilt = builder.build([src])
    assert "blocks.json" in messages[0]
    assert run_program(rebuilt, timeout=30).counts == expected


@pytest.mark.slow
def test_a_build_killed_before_its_seal_is_rebuilt(fresh, write) -> None:  # type: ignore[no-untyped-def]
    src = write("prog.c", PROG_C)
    builder, _ = fresh()
    binary = builder.build([src]).path
    _entry(builder, "bin", ".seal").unlink()
    builder, messages = fresh()
    builder.build([src])
    assert messages == [
        f"the cache entry for prog.c was damaged ({binary.name} has no seal: its build did not finish); rebuilding it"
    ]


def test_truncated_ir_is_recompiled_not_blamed_on_the_source(fresh, write) -> None:  # type: ignore[no-untyped-def]
    src = write("lib.c", LIB_C)
    builder, _ = fresh()
    builder.build([src], kind="library")
    ir = _entry(builder, "ir", ".ll")
    size = ir.stat().st_size
    _damage("truncated", ir)
    # A different build of the same translation unit reads the cached IR.
    for entry in (builder.cache.root / cache_mod.LAYOUT / "bin").rglob("*"):
        if entry.is_file():
            entry.unlink()
    builder, messages = fresh()
    artifact = builder.build([src], kind="library")
    assert artifact.path.exists()
    assert messages == [
        f"the cache entry for the IR of lib.c was damaged ({ir.name} has {size // 2} bytes, not {size}); rebuilding it"
    ]


def test_empty_runtime_objects_are_rebuilt_not_linked(fresh, write) -> None:  # type: ignore[no-untyped-def]
    src = write("prog.c", PROG_C)
    builder, _ = fresh()
    builder.build([src])
    # The runtime, the canonical CPU's tables, the models' results.
    objects = sorted((builder.cache.root / cache_mod.LAYOUT / "rt").rglob("*.o"))
    sizes = {o.name: o.stat().st_size for o in objects}
    for obj in objects:
        _damage("empty", obj)
    for entry in (builder.cache.root / cache_mod.LAYOUT / "bin").rglob("*"):
        if entry.is_file():
            entry.unlink()
    builder, messages = fresh()
    result = run_program(builder.build([src]), timeout=30)
    assert result.returncode == 3
    pattern = re.compile(
        r"the cache entry for the instrbudget (\S+) was damaged \((\S+) has 0 bytes, not (\d+)\); rebuilding it"
    )
    found = [pattern.fullmatch(m) for m in messages]
    assert all(found), messages
    assert {m.group(1) for m in found if m} >= {"runtime", "models"}
    assert {m.group(2): int(m.group(3)) for m in found if m} == sizes


HOLD_LOCK = """\
import fcntl, os, sys, time
fh = open(sys.argv[1], "a+b")
fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
fh.truncate(0); fh.write(f"{os.getpid()}\\n".encode()); fh.flush()
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
"""


@pytest.mark.slow
@pytest.mark.parametrize("worker", [None, "gw7", "execnet"])
def test_a_build_waiting_for_a_lock_names_the_process_holding_it(
    fresh,
    write,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
    worker: str | None,
) -> None:
    """By its command line, or for a pytest-xdist worker (whose command line is execnet's
    bootstrap) by the worker's name."""
    monkeypatch.setattr(cache_mod, "LOCK_NOTICE_AFTER", 0.3)
    src = write("lib.c", LIB_C)
    builder, messages = fresh()
    builder.build([src], kind="library")
    seal = _entry(builder, "bin", ".seal")
    seal.unlink()  # the next build must take the lock
    lock = seal.with_suffix(".lock")
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_XDIST_WORKER"}
    if worker == "gw7":
        env["PYTEST_XDIST_WORKER"] = worker
    if worker == "execnet":  # as xdist starts a worker: it is named only later, in its own environment
        bootstrap = "import sys;exec(eval(sys.stdin.readline()))"
        holder = subprocess.Popen(
            [sys.executable, "-u", "-c", bootstrap], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
        )
        assert holder.stdin is not None
        holder.stdin.write(repr(f"import sys; sys.argv[1:] = [{str(lock)!r}, '1.5']\n" + HOLD_LOCK) + "\n")
        holder.stdin.flush()
    else:
        holder = subprocess.Popen(
            [sys.executable, "-c", HOLD_LOCK, str(lock), "1.5"], stdout=subprocess.PIPE, text=True, env=env
        )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "locked\n"
        started = time.monotonic()
        builder, messages = fresh()
        builder.build([src], kind="library")
        assert time.monotonic() - started >= 1.0  # it did wait for the holder
        assert builder.cache.waited(started) >= 1.0  # and the cache says so (a slow build's total names it)
    finally:
        holder.kill()
        holder.wait()
    assert messages[0].startswith(f"waiting for process {holder.pid} (")
    assert messages[0].endswith(") to finish building lib.c")
    if worker is None:
        assert sys.executable.split("/")[-1] in messages[0]
    elif worker == "gw7":
        assert messages[0] == f"waiting for process {holder.pid} (pytest-xdist worker gw7) to finish building lib.c"
    else:
        assert messages[0] == f"waiting for process {holder.pid} (a pytest-xdist worker) to finish building lib.c"


def test_an_unwritable_cache_is_named(write, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    blocker = write("file", "")
    builder = Builder(cache_dir=blocker / "cache", progress=lambda message: None)
    with pytest.raises(CBuildError) as info:
        builder.build([write("prog.c", PROG_C)])
    message = str(info.value)
    assert message.startswith(f"the build cache {blocker / 'cache'} cannot be written (")
    assert message.endswith("set INSTRBUDGET_CACHE_DIR to a writable directory")


def test_a_cache_damaged_under_pytest_is_reported_and_the_tests_pass(
    pytester: pytest.Pytester, tmp_path: Path, runtime_parts: Path
) -> None:
    pytester.makefile(".c", lib=LIB_C)
    pytester.makepyfile(test_lib="def test_work(cbuild):\n    assert cbuild.library('lib.c').work(10) == 45\n")
    cache_dir = private_cache(runtime_parts, tmp_path / "private-cache")
    pytester.makepyprojecttoml(f"[tool.instrbudget]\ncache_dir = '{cache_dir}'\n")
    pytester.runpytest().assert_outcomes(passed=1)
    (library,) = (cache_dir / cache_mod.LAYOUT / "bin").rglob("*.so")
    _damage("zero-filled", library)
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    said = result.stdout.str().replace("\n  ", " ")  # a progress message wrapped to the log's width
    assert re.search(r"^instrbudget: the cache entry for lib\.c was damaged \(.*\); rebuilding it$", said, re.M), said
    assert "Exec format error" not in result.stdout.str()


@pytest.fixture
def full_cache(tmp_path: Path) -> Iterator[Path]:
    """A cache directory on a 512 KiB tmpfs: it fills up during the first build."""
    where = tmp_path / "small"
    where.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small tmpfs needs root")
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(where)], capture_output=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=False)


def test_a_full_cache_is_a_message_naming_it(full_cache: Path, write) -> None:  # type: ignore[no-untyped-def]
    builder = Builder(cache_dir=full_cache, progress=lambda message: None)
    with pytest.raises(CBuildError) as info:
        builder.build([write("p.c", "int main(void) { return 0; }\n")])
    message = str(info.value)
    assert message.startswith(f"the build cache {full_cache} cannot be written: its file system is full (")
    assert message.endswith("free space there, or set INSTRBUDGET_CACHE_DIR to another directory")
    # Nothing half-written is taken for an entry: every file left has its seal.
    for seal in full_cache.rglob("*.seal"):
        assert json.loads(seal.read_text())["files"]


def test_a_full_cache_fails_tests_with_the_message(full_cache: Path, pytester: pytest.Pytester) -> None:
    pytester.makefile(".c", work="int work(int n) { return n; }\n")
    pytester.makepyfile(test_w="def test_w(cbuild):\n    assert cbuild.library('work.c').work(3) == 3\n")
    pytester.makepyprojecttoml(f"[tool.instrbudget]\ncache_dir = '{full_cache}'\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret != 0
    out = result.stdout.str()
    assert "Traceback" not in out
    assert "OSError" not in out
    assert f"the build cache {full_cache} cannot be written: its file system is full" in out


@pytest.mark.slow
def test_waits_in_parallel_threads_count_once(tmp_path: Path) -> None:
    """Two compile threads waiting for the same second of another process's build: a slow
    build's total says one second of waiting, not two."""
    cache = cache_mod.Cache(tmp_path / "cache")
    locks = [cache.path("obj", key, ".lock") for key in ("a" * 32, "b" * 32)]
    holders = []
    for lock in locks:
        lock.parent.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-c", HOLD_LOCK, str(lock), "1.0"]
        holders.append(subprocess.Popen(command, stdout=subprocess.PIPE, text=True))
    try:
        for holder in holders:
            assert holder.stdout is not None
            assert holder.stdout.readline() == "locked\n"
        started = time.monotonic()

        def take(key: str) -> None:
            with cache.lock("obj", key):
                pass

        threads = [threading.Thread(target=take, args=(key,)) for key in ("a" * 32, "b" * 32)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.monotonic() - started
    finally:
        for holder in holders:
            holder.kill()
            holder.wait()
    waited = cache.waited(started)
    assert 0.5 <= waited <= elapsed  # both threads waited about the same second: it counts once
    assert cache.waited(time.monotonic()) == 0.0  # nothing after the waits
