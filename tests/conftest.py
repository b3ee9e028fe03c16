"""Shared fixtures: one build cache for the whole test session, and a builder on it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from cbuild import Builder

pytest_plugins = ["pytester"]


@pytest.fixture(scope="session", autouse=True)
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Every build in this test session (pytester runs included) shares one cache, also across
    xdist workers (the cache is safe to share between processes: that is what it is for), so the
    counted libraries and third-party sources are built once per session, not once per worker."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        cache = tmp_path_factory.getbasetemp().parent / "instrbudget-cache"  # the session's, beside the workers'
        cache.mkdir(exist_ok=True)
    else:
        cache = tmp_path_factory.mktemp("instrbudget-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("INSTRBUDGET_CACHE_DIR", str(cache))
        # pytester points HOME at a fresh directory; keep zig's own cache (libc, libc++) in one place.
        mp.setenv("ZIG_GLOBAL_CACHE_DIR", os.environ.get("ZIG_GLOBAL_CACHE_DIR", str(Path.home() / ".cache" / "zig")))
        yield cache


@pytest.fixture(scope="session")
def builder(shared_cache: Path) -> Builder:
    """A builder on the shared cache, with progress messages silenced."""
    return Builder(cache_dir=shared_cache, progress=lambda message: None)


@pytest.fixture
def write(tmp_path: Path):  # type: ignore[no-untyped-def]
    """Write a file under tmp_path and return its path: ``write("a.c", "int x;")``."""

    def _write(name: str, text: str) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    return _write
