"""zig's caches of the ziglang installations that built here: each installation gets one of its
own (``~/.cache/zig/instrbudget-<digest of its path>``, :func:`cbuild.build.toolchain.own_zig_cache`),
which records the installation it belongs to, so that those of installations since removed (a
deleted virtual environment, a Python release CI no longer installs) can be found and removed."""

from __future__ import annotations

import contextlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

#: The file in an installation's zig cache that names the installation (its zig's directory).
MARKER = "instrbudget-installation"
#: How those caches are named within zig's default cache directory.
PREFIX = "instrbudget-"


def record(cache: str, installation: Path) -> None:
    """Name ``installation`` in its zig cache ``cache`` (once; a cache that cannot be written is
    zig's to complain about)."""
    marker = Path(cache) / MARKER
    text = f"{installation}\n"
    with contextlib.suppress(OSError):
        if marker.is_file() and marker.read_text() == text:
            return
        marker.parent.mkdir(parents=True, exist_ok=True)
        scratch = marker.with_name(f".{MARKER}.{os.getpid()}")
        scratch.write_text(text)
        scratch.replace(marker)


@dataclass(frozen=True)
class Gone:
    """The zig cache of an installation that no longer exists."""

    path: Path
    installation: str
    size: int


def gone(own: Path) -> list[Gone]:
    """The caches beside ``own`` (this installation's) whose installation no longer exists; those
    that name none (made before caches named it) are left alone, and so is all of it where ``own``
    names none (a cache directory the user chose: its neighbours are theirs)."""
    out: list[Gone] = []
    if not (own / MARKER).is_file():
        return out
    with contextlib.suppress(OSError):
        for path in sorted(own.parent.iterdir()):
            if path == own or not path.name.startswith(PREFIX) or not path.is_dir():
                continue
            try:
                installation = (path / MARKER).read_text().strip()
            except OSError:
                continue
            if installation and not Path(installation).exists():
                out.append(Gone(path, installation, tree_size(path)))
    return out


def remove(caches: list[Gone]) -> int:
    """Remove ``caches``; the bytes freed."""
    freed = 0
    for cache in caches:
        shutil.rmtree(cache.path, ignore_errors=True)
        if not cache.path.exists():
            freed += cache.size
    return freed


def tree_size(top: Path) -> int:
    """The bytes of the files under ``top``."""
    total = 0
    for directory, _, files in os.walk(top):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(directory, name)).st_size
    return total
