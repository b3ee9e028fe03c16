"""A content-addressed build cache that several processes can share.

Files are written to a temporary file in the same directory and renamed into
place, so a reader never sees half a file. An entry (one or more files under one
key) is complete when its *seal* is there: a small JSON file, written last, with
the size and sha256 of each file. An entry whose files do not match their seal
(truncated, zero-filled, deleted) or that has files but no seal (its builder was
killed half-way) is damaged: it is reported once, removed and built again.

A per-key lock file keeps two processes (pytest-xdist workers, two pytest runs)
from building the same thing at once; the second waits and then finds the first
one's result. The holder writes its pid into the lock file, so that a build kept
waiting for a few seconds can say which process it waits for.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO

from cbuild.errors import CBuildError, describe_os_error

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows has no fcntl; builds still work, unlocked
    fcntl = None  # type: ignore[assignment]


def default_cache_dir() -> Path:
    """``$INSTRBUDGET_CACHE_DIR``, else ``$XDG_CACHE_HOME/instrbudget``, else ``~/.cache/instrbudget``."""
    explicit = os.environ.get("INSTRBUDGET_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "instrbudget"


def digest(*parts: str | bytes) -> str:
    """A stable hex key of several parts (length-prefixed, so parts cannot run together)."""
    h = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()[:32]


def file_digest(path: Path) -> str:
    """sha256 of a file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def atomic_write(path: Path, data: bytes, *, mode: int = 0o644) -> None:
    """Write ``data`` to ``path`` so that no reader ever sees a partial file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


#: Layout version of the entries below the cache root (entries without seals are older).
LAYOUT = "v2"
#: Seconds a build waits for another process's lock before saying which process it waits for.
LOCK_NOTICE_AFTER = 3.0
#: Seconds a wait's span is kept for Cache.waited: far longer than any one build.
WAITS_KEPT = 3600.0
#: How often a process marks an entry it keeps using (:meth:`Cache.touch`), in seconds.
TOUCH_EVERY = 60.0
Notify = Callable[[str], None]


def _ignore(message: str) -> None:
    pass


#: Why a cache cannot be written, and what to do, by errno.
_CAUSES = {
    errno.ENOSPC: ("its file system is full", "free space there, or set INSTRBUDGET_CACHE_DIR to another directory"),
    errno.EDQUOT: ("the disk quota is exceeded", "free space there, or set INSTRBUDGET_CACHE_DIR to another directory"),
    errno.EROFS: ("its file system is read-only", "set INSTRBUDGET_CACHE_DIR to a writable directory"),
    errno.EMFILE: (
        "this process has too many open files",
        "raise the limit (ulimit -n), or run fewer builds at once; INSTRBUDGET_CACHE_DIR cannot help",
    ),
    errno.ENFILE: ("the system has too many open files", "close some, or run fewer builds at once"),
}


def _unwritable(root: Path, exc: OSError, where: Path) -> CBuildError:
    cause, advice = _CAUSES.get(exc.errno or 0, ("", "set INSTRBUDGET_CACHE_DIR to a writable directory"))
    detail = f"{exc.filename or where}: {exc.strerror or exc}"
    return CBuildError(f"the build cache {root} cannot be written{': ' + cause if cause else ''} ({detail}); {advice}")


def is_cache_failure(exc: OSError, root: Path) -> bool:
    """Whether ``exc`` says the cache at ``root`` cannot take more (space, quota, read-only, files)."""
    if exc.errno not in _CAUSES:
        return False
    name = exc.filename if isinstance(exc.filename, str) else None
    return name is None or os.path.abspath(name).startswith(os.path.abspath(root))


#: The command line execnet starts a pytest-xdist worker with (``python -u -c <this>``).
_EXECNET_BOOTSTRAP = "import sys;exec(eval(sys.stdin.readline()))"


def _holder(fh: IO[bytes]) -> str:
    """Who holds a lock: the pid its holder wrote, with the command line where /proc has it."""
    fh.seek(0)
    text = fh.read(32).decode(errors="replace").strip()
    if not text.isdigit():
        return "another process"
    try:
        argv = Path(f"/proc/{text}/cmdline").read_bytes().split(b"\0")
        command = " ".join(a.decode(errors="replace") for a in argv if a)
    except OSError:
        return f"process {text}"
    try:  # a pytest-xdist worker's command line is execnet's bootstrap: its name says more
        environ = Path(f"/proc/{text}/environ").read_bytes().split(b"\0")
    except OSError:
        environ = []
    for variable in environ:
        if variable.startswith(b"PYTEST_XDIST_WORKER="):
            return f"process {text} (pytest-xdist worker {variable.split(b'=', 1)[1].decode(errors='replace')})"
    if _EXECNET_BOOTSTRAP in command:  # xdist names its workers after they start, past /proc's environ
        return f"process {text} (a pytest-xdist worker)"
    if len(command) > 100:
        command = command[:97] + "..."
    return f"process {text} ({command})"


def _signature(stats: Sequence[os.stat_result]) -> tuple[tuple[int, int, int], ...]:
    """Size, modification time and inode of an entry's seal and files: what changes when a file is
    rewritten. The seal's time is left out: it is touched when the entry is used (:meth:`Cache.touch`)."""
    seal, *files = stats
    return ((seal.st_size, 0, seal.st_ino), *((st.st_size, st.st_mtime_ns, st.st_ino) for st in files))


class Cache:
    """Entries under ``root/v2/<kind>/<key[:2]>/<key><suffix>``.

    ``notify`` receives the one-line messages the cache has for the user: a damaged
    entry that is being rebuilt, a build waiting for another process's lock.
    """

    def __init__(self, root: Path, *, notify: Notify | None = None, label: str = "") -> None:
        self.root = Path(root)
        #: The toolchain the entries are built with, recorded in their seals (``cache info`` counts by it).
        self.label = label
        self.notify: Notify = notify or _ignore
        #: Seal path -> (size, mtime, inode) of the seal and each file when last found whole.
        self._verified: dict[Path, tuple[tuple[int, int, int], ...]] = {}
        self._writable = False
        #: Seal path -> when this process last marked the entry used (its seal's modification time).
        self._touched: dict[Path, float] = {}
        #: Per kind: entries found whole, entries built (this process).
        self.hits: dict[str, int] = {}
        self.builds: dict[str, int] = {}
        #: (start, end) of each wait for another process's lock (time.monotonic()), in any thread.
        self._waits: list[tuple[float, float]] = []
        self._waited_lock = threading.Lock()

    def waited(self, since: float) -> float:
        """Seconds since ``since`` in which some thread of this process was waiting for another
        process's lock: parallel waits count once."""
        end = time.monotonic()
        with self._waited_lock:
            spans = sorted((max(a, since), min(b, end)) for a, b in self._waits if b > since and a < end)
        total, reach = 0.0, since
        for a, b in spans:
            if b > reach:
                total += b - max(a, reach)
                reach = b
        return total

    def count(self, kind: str, *, hit: bool) -> None:
        """Record a use of an entry of ``kind``: found (``hit``) or built."""
        table = self.hits if hit else self.builds
        table[kind] = table.get(kind, 0) + 1

    def touch(self, path: Path) -> None:
        """Mark the entry whose seal (or only file) is ``path`` as used now, once a minute at most:
        least recently used entries are the first to go when the cache is over its size."""
        now = time.time()
        if now - self._touched.get(path, 0.0) < TOUCH_EVERY:
            return
        self._touched[path] = now
        with contextlib.suppress(OSError):  # a read-only cache is still used, just not ordered
            os.utime(path)

    def path(self, kind: str, key: str, suffix: str = "") -> Path:
        """Where a file of the entry lives (it may not exist yet)."""
        return self.root / LAYOUT / kind / key[:2] / f"{key}{suffix}"

    def ensure_writable(self) -> None:
        """Raise :class:`CBuildError` naming the cache and ``INSTRBUDGET_CACHE_DIR`` if it cannot be written."""
        if self._writable:
            return
        where = self.root / LAYOUT
        try:
            where.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryFile(dir=where):
                pass
        except OSError as exc:
            raise _unwritable(self.root, exc, where) from None
        self._writable = True

    def entry(
        self, kind: str, key: str, suffixes: Sequence[str], build: Callable[[list[Path]], None], *, name: str
    ) -> list[Path]:
        """The files of an entry, built under the key's lock by ``build(paths)`` unless it is whole.

        ``build`` writes each path (with :func:`atomic_write`); the seal follows. ``name``
        says what the entry is for in messages (``lib.c``).
        """
        paths = [self.path(kind, key, suffix) for suffix in suffixes]
        if self.problem(kind, key, paths) is None:
            self.count(kind, hit=True)
            return paths
        with self.lock(kind, key, name=name):
            if self.check(kind, key, paths, name=name):
                self.count(kind, hit=True)
                return paths
            try:
                build(paths)
                self.seal(kind, key, paths)
                self.count(kind, hit=False)
            except OSError as exc:
                if not is_cache_failure(exc, self.root):
                    raise
                # What was written is never used (it has no seal); take it away if the file system lets us.
                with contextlib.suppress(OSError):
                    self.discard(kind, key, paths)
                raise _unwritable(self.root, exc, paths[0]) from None
        return paths

    def check(self, kind: str, key: str, paths: Sequence[Path], *, name: str) -> bool:
        """True when the entry is whole; a damaged one is reported, removed, and False returned.

        Call it under the key's lock, or for entries nobody writes in place (a builder
        that is still writing would otherwise look like damage).
        """
        problem = self.problem(kind, key, paths)
        if problem is None:
            return True
        if problem:
            self.notify(f"the cache entry for {name} was damaged ({problem}); rebuilding it")
            self.discard(kind, key, paths)
        return False

    def problem(self, kind: str, key: str, paths: Sequence[Path]) -> str | None:
        """``None`` when the entry is whole, ``""`` when none of it exists, else what is wrong."""
        seal_path = self.path(kind, key, ".seal")
        try:
            stats = (seal_path.stat(), *(p.stat() for p in paths))
        except FileNotFoundError:
            if not seal_path.exists():
                present = [p for p in paths if p.exists()]
                return f"{present[0].name} has no seal: its build did not finish" if present else ""
            return "a file of it is missing"
        except OSError as exc:
            return f"cannot read it: {describe_os_error(exc)}"
        signature = _signature(stats)
        if self._verified.get(seal_path) == signature:
            self.touch(seal_path)
            return None
        try:
            sealed = json.loads(seal_path.read_bytes())["files"]
            if not isinstance(sealed, dict):
                raise ValueError
        except (OSError, ValueError, KeyError, TypeError):
            return "its seal is unreadable"
        if set(sealed) != {p.name for p in paths}:
            return "its seal lists other files"
        for path, st in zip(paths, stats[1:], strict=True):
            expected = sealed[path.name]
            if not isinstance(expected, dict):
                return "its seal is unreadable"
            if expected.get("size") != st.st_size:
                return f"{path.name} has {st.st_size} bytes, not {expected.get('size')}"
            try:
                if file_digest(path) != expected.get("sha256"):
                    return f"{path.name} does not match its digest"
            except OSError as exc:
                return f"cannot read {path.name}: {describe_os_error(exc)}"
        self._verified[seal_path] = signature
        self.touch(seal_path)
        return None

    def seal(self, kind: str, key: str, paths: Sequence[Path]) -> None:
        """Record the size and digest of each file: the entry is complete from now on.

        This process knows the files are whole: it does not read them again on use.
        """
        files = {p.name: {"size": p.stat().st_size, "sha256": file_digest(p)} for p in paths}
        seal_path = self.path(kind, key, ".seal")
        seal = {"files": files, **({"toolchain": self.label} if self.label else {})}
        atomic_write(seal_path, json.dumps(seal, sort_keys=True).encode())
        self._verified[seal_path] = _signature([seal_path.stat(), *(p.stat() for p in paths)])

    def discard(self, kind: str, key: str, paths: Sequence[Path]) -> None:
        """Remove an entry: its seal first, so that no one takes the rest for whole."""
        self._verified.pop(self.path(kind, key, ".seal"), None)
        for path in (self.path(kind, key, ".seal"), *paths):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

    @contextlib.contextmanager
    def lock(self, kind: str, key: str, *, name: str = "") -> Iterator[None]:
        """Hold an exclusive lock on one key while it is being built."""
        lock_path = self.path(kind, key, ".lock")
        try:
            lock_path.parent.mkdir(parents=True, exist_ok=True)
            fh = open(lock_path, "a+b")  # noqa: SIM115 - closed below, after the lock is released
        except OSError as exc:
            raise _unwritable(self.root, exc, lock_path) from None
        with fh:
            if fcntl is None:  # pragma: no cover
                yield
                return
            self._acquire(fh, name or f"{kind}/{key}")
            try:
                fh.truncate(0)
                fh.write(f"{os.getpid()}\n".encode())
                fh.flush()
                yield
            finally:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)

    def _acquire(self, fh: IO[bytes], what: str) -> None:
        """Take the lock, saying once which process holds it when that takes a while."""
        started = time.monotonic()
        notice_at = started + LOCK_NOTICE_AFTER
        noticed = blocked = False
        delay = 0.002
        while True:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                blocked = True
            else:
                if blocked:
                    now = time.monotonic()
                    with self._waited_lock:  # a build asks about its own span: older ones can go
                        self._waits = [span for span in self._waits if span[1] > now - WAITS_KEPT]
                        self._waits.append((started, now))
                return
            if not noticed and time.monotonic() >= notice_at:
                self.notify(f"waiting for {_holder(fh)} to finish building {what}")
                noticed = True
            time.sleep(delay)
            delay = min(delay * 2, 0.1)
