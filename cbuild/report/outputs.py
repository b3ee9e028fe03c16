"""Writing the files a user points the plugin at: where they point, never beside it.

A regular file is replaced atomically (readers see the old content or the new, never a
mix), and a symlink's target is the file replaced, so a shared baseline stays shared.
Anything else (``/dev/stdout``, a FIFO, a character device, a path under ``/proc``) is
written to directly, without truncating it: replacing it would put a file where the
user's pipe or log was. ``append`` adds to what is there (``$GITHUB_STEP_SUMMARY``
collects every step's summary). :func:`locked` serialises writers of one baseline.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import os
import stat
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TextIO

from cbuild.build.cache import atomic_write

#: Where a process's own descriptors are: a path through it (``/dev/stdout`` is a link to
#: ``/proc/self/fd/1``, ``/dev/fd`` one to ``/proc/self/fd``) names a stream, whatever it resolves
#: to (a ``/dev/stdout`` redirected to a log file resolves to that file, which must not be replaced).
_DESCRIPTORS = "/proc/"
#: Symbolic links followed at most, as the kernel does.
_MAX_LINKS = 40


def write_output(path: Path, data: bytes, *, append: bool = False, mode: int | None = None) -> None:
    """Write ``data`` where ``path`` points (see the module); ``mode`` for a new regular file
    (default: an existing file keeps its permissions, a new one gets 0o644)."""
    if is_stream(path):
        own = _own_stream(path)
        if own is not None:
            # The process's own stdout or stderr: through its descriptor, after what is
            # buffered, so that the data lands after the output before it and is not
            # overwritten by what follows (a second descriptor would have its own offset).
            own.flush()
            _write_all(own.fileno(), data)
        else:
            _write_in_place(path, data)
        return
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    if append:
        _write_in_place(target, data, create=True)
        return
    if mode is None:
        try:
            mode = stat.S_IMODE(target.stat().st_mode)
        except FileNotFoundError:
            mode = 0o644
    atomic_write(target, data, mode=mode)


def is_stream(path: Path) -> bool:
    """Whether ``path`` is written to in place: one of the process's descriptors (``/dev/stdout``,
    ``/dev/fd/1``), or a FIFO, socket or device; a regular file is replaced, wherever it lies
    (``/dev/shm`` included)."""
    hop = Path(os.path.abspath(path))
    for _ in range(_MAX_LINKS):
        if os.path.realpath(hop.parent).startswith(_DESCRIPTORS) or str(hop).startswith(_DESCRIPTORS):
            return True
        if not hop.is_symlink():
            break
        hop = Path(os.path.normpath(hop.parent / os.readlink(hop)))
    try:
        st = os.stat(path)  # follows symlinks
    except OSError:
        return False
    return not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode)


def _own_stream(path: Path) -> TextIO | None:
    """``sys.stdout`` or ``sys.stderr`` when ``path`` is the file, pipe or terminal it writes to."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    for stream in (sys.stdout, sys.stderr):
        try:
            own = os.fstat(stream.fileno())
        except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
            continue
        if (own.st_dev, own.st_ino) == (st.st_dev, st.st_ino):
            return stream
    return None


def _write_in_place(path: Path, data: bytes, *, create: bool = False) -> None:
    flags = os.O_WRONLY | os.O_APPEND | (os.O_CREAT if create else 0)
    if create:
        path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, flags, 0o644)
    try:
        _write_all(fd, data)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold the lock of the baseline at ``path`` (other sessions updating it wait).

    The lock is on the directory of the file written (a symlink's target), since the
    file itself is replaced on every write; it is released when the process ends,
    however it ends.
    """
    path = Path(os.path.realpath(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def keep_damaged(path: Path) -> Path:
    """Copy the baseline ``path``, which could not be read, beside it (``<name>.damaged``, or
    ``.damaged.2`` and on where that exists) before it is rewritten; returns the copy."""
    data = path.read_bytes()
    for n in range(1, 1000):
        kept = path.with_name(f"{path.name}.damaged" + (f".{n}" if n > 1 else ""))
        try:
            with kept.open("xb") as out:
                out.write(data)
        except FileExistsError:
            continue
        return kept
    raise OSError(f"{path}: 999 damaged copies are kept beside it already; remove them")


def first_shared(paths: Iterable[tuple[str, Path | None]]) -> tuple[str, str, Path] | None:
    """Of ``paths`` (what each is, its path), the first two that are one file, through links and
    ``..``: (what the earlier is, what the later is, the later's path); None if each is a file of
    its own. Streams (``/dev/stdout``) take any number."""
    seen: dict[str, str] = {}
    for what, path in paths:
        if path is None or is_stream(path):
            continue
        key = os.path.realpath(path)
        if key in seen:
            return seen[key], what, path
        seen[key] = what
    return None
