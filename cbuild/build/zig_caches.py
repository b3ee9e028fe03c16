"""zig's caches of the ziglang installations that built here: each installation gets one of its
own (``~/.cache/zig/instrbudget-<digest of its path>``, :func:`cbuild.build.toolchain.own_zig_cache`),
which records the installation it belongs to and when it was last used, so that those of
installations since removed (a deleted virtual environment, a Python release CI no longer
installs) can be found and removed; not before a week unused, since a home directory shared by
machines may hold caches of installations another machine has."""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from cbuild.build.cache import atomic_write

#: The file in an installation's zig cache that names the installation (its zig's directory).
MARKER = "instrbudget-installation"
#: How those caches are named within zig's default cache directory.
PREFIX = "instrbudget-"
#: Unused this long (seconds), a cache whose installation this machine does not have is gone.
UNUSED = 7 * 24 * 3600


def record(cache: str, installation: Path) -> None:
    """Name ``installation`` in its zig cache ``cache``, and that it is used now (a cache that
    cannot be written is zig's to complain about)."""
    marker = Path(cache) / MARKER
    text = f"{installation}\n"
    with contextlib.suppress(OSError):
        if marker.is_file() and marker.read_text() == text:
            os.utime(marker)
            return
        atomic_write(marker, text.encode())


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
                used = (path / MARKER).stat().st_mtime
            except OSError:
                continue
            if installation and not Path(installation).exists() and time.time() - used > UNUSED:
                out.append(Gone(path, installation, tree_size(path)))
    return out


def remove(caches: list[Gone]) -> list[Gone]:
    """Remove ``caches``; those removed."""
    for cache in caches:
        shutil.rmtree(cache.path, ignore_errors=True)
    return [cache for cache in caches if not cache.path.exists()]


def tree_size(top: Path) -> int:
    """The bytes of the files under ``top``."""
    total = 0
    for directory, _, files in os.walk(top):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(directory, name)).st_size
    return total
