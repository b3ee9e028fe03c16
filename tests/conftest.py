"""Shared fixtures: one build cache for the whole test session, and a builder on it."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cbuild import Builder
from cbuild.build.eviction import prune
from cbuild.build.toolchain import ZIG_CACHE_VARIABLE, own_zig_cache, zig_binary
from cbuild.riscv.translated import CHECK_TRANSLATION

pytest_plugins = ["pytester"]


#: Where the sessions' shared build cache lives: ``INSTRBUDGET_TEST_CACHE`` (``fresh``: a new one in
#: the session's temporary directory, as on a new machine).
TEST_CACHE = os.environ.get("INSTRBUDGET_TEST_CACHE", str(Path.home() / ".cache" / "instrbudget-tests" / "session"))
#: The shared cache is pruned to this at the end of a session.
TEST_CACHE_MAX = 4 << 30
#: The checkout under test: the Python processes the tests start import its packages.
CHECKOUT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session", autouse=True)
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Every build in this test session (pytester runs included) shares one cache, also across
    xdist workers and from one session to the next (the cache is safe to share between
    processes: that is what it is for; its keys are contents, so a change to the engine or to
    a source is a new entry), so the counted libraries and third-party sources are built once,
    not once per worker or per run. ``INSTRBUDGET_TEST_CACHE=fresh`` starts from nothing."""
    if TEST_CACHE != "fresh":
        cache = Path(TEST_CACHE)
    elif os.environ.get("PYTEST_XDIST_WORKER"):
        cache = tmp_path_factory.getbasetemp().parent / "instrbudget-cache"  # the session's, beside the workers'
    else:
        cache = tmp_path_factory.mktemp("instrbudget-cache")
    cache.mkdir(parents=True, exist_ok=True)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("INSTRBUDGET_CACHE_DIR", str(cache))
        # pytester points HOME at a fresh directory; keep zig's own cache (libc, libc++) in one place,
        # the one a session of this installation's outside the tests uses.
        mp.setenv(ZIG_CACHE_VARIABLE, own_zig_cache(zig_binary()) or str(Path.home() / ".cache" / "zig"))
        # Every run of a RISC-V build runs translated and in unicorn, and fails if they differ
        # (INSTRBUDGET_CHECK_TRANSLATION=0 leaves the check out).
        mp.setenv(CHECK_TRANSLATION, os.environ.get(CHECK_TRANSLATION, "1"))
        # Sessions run in a subprocess and the command line start in a directory of their own, where
        # cbuild and pytest_instrbudget are those the editable install points at: another checkout
        # (with someone's unfinished changes, and builds missing from the cache) when this one is a clone.
        mp.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(CHECKOUT), os.environ.get("PYTHONPATH")])))
        if os.environ.get("PYTHONDONTWRITEBYTECODE") and not os.environ.get("PYTHONPYCACHEPREFIX"):
            # Where bytecode is not written, each session run in a subprocess would compile again
            # the hundred modules pytest rewrites (its plugins', cbuild's): about a second each. They
            # keep it for this session instead, in one place outside the source trees.
            base = tmp_path_factory.getbasetemp()
            session = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
            mp.delenv("PYTHONDONTWRITEBYTECODE")
            mp.setenv("PYTHONPYCACHEPREFIX", str(session / "pycache"))
        yield cache


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The controller (not an xdist worker) keeps the persistent shared cache within its bound."""
    if TEST_CACHE != "fresh" and not os.environ.get("PYTEST_XDIST_WORKER") and Path(TEST_CACHE).is_dir():
        prune(Path(TEST_CACHE), TEST_CACHE_MAX)


@pytest.fixture(scope="session")
def builder(shared_cache: Path) -> Builder:
    """A builder on the shared cache, with progress messages silenced."""
    return Builder(cache_dir=shared_cache, progress=lambda message: None)


@pytest.fixture(scope="session")
def shared_source(shared_cache: Path) -> Callable[[str, str], Path]:
    """Write a source file where its name and text put it and return its path:
    ``shared_source("a.c", "int x;")``. The key of a build without a project root holds its
    sources' absolute paths, and ``tmp_path`` is new in every test of every session: the shared
    cache finds the build of a file from ``write`` again in no other test, that of a file from
    here in every session and in every test building the same thing. For a source built as it
    is, with no files beside it, which the test does not change."""
    root = shared_cache.with_name(shared_cache.name + "-sources")

    def _source(name: str, text: str) -> Path:
        path = root / hashlib.sha256(f"{name}\0{text}".encode()).hexdigest()[:20] / name
        if not (path.is_file() and path.read_text() == text):
            path.parent.mkdir(parents=True, exist_ok=True)
            part = path.with_name(f".{name}.{os.getpid()}")
            part.write_text(text)
            os.replace(part, path)  # whole, for a session writing it at the same time
        return path

    return _source


@pytest.fixture
def write(tmp_path: Path):  # type: ignore[no-untyped-def]
    """Write a file under tmp_path and return its path: ``write("a.c", "int x;")``."""

    def _write(name: str, text: str) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    return _write
