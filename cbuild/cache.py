"""A content-addressed build cache that several processes can share.

Entries are written to a temporary file in the same directory and renamed into
place, so a reader sees a whole entry or none. A per-key lock file keeps two
processes (pytest-xdist workers, two pytest runs) from building the same thing
at once; the second waits and then finds the first one's result.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

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


class Cache:
    """Entries under ``root/<kind>/<key[:2]>/<key><suffix>``."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def path(self, kind: str, key: str, suffix: str = "") -> Path:
        """Where the entry lives (it may not exist yet)."""
        return self.root / kind / key[:2] / f"{key}{suffix}"

    @contextlib.contextmanager
    def lock(self, kind: str, key: str) -> Iterator[None]:
        """Hold an exclusive lock on one key while it is being built."""
        lock_path = self.path(kind, key, ".lock")
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        if fcntl is None:  # pragma: no cover
            yield
            return
        with open(lock_path, "a+b") as fh:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
