"""Keeping the build cache within a size: what it holds, and least-recently-used eviction.

An entry is the files of one key in one kind (``ir/ab/abcd….ll``, its ``.seal``, its
``.lock``). Every process touches an entry's seal when it first uses it (and again after
:data:`TOUCH_EVERY` seconds), so the newest modification time among an entry's files is when
it was last used. :func:`prune` removes the least recently used entries until the cache is
at most ``fraction`` of its limit, and never one that another process is building (its lock
is held) or that was used in the last :data:`GRACE` seconds (a running session may be about
to read it). ``python -m cbuild cache info|prune|clear`` and the plugin's ``cache_max_size``
use it; the end of each pytest session records its hits and builds (:func:`record_session`).
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from cbuild.build.cache import LAYOUT, TOUCH_EVERY, atomic_write
from cbuild.build.zig_caches import tree_size
from cbuild.errors import CBuildError

try:
    import fcntl
except ImportError:  # pragma: no cover - no eviction locks without fcntl
    fcntl = None  # type: ignore[assignment]

#: The default ``cache_max_size``.
DEFAULT_MAX_SIZE = 5 * 1024**3
#: Entries used this recently are never removed (ten times how often users touch them).
GRACE = 10 * TOUCH_EVERY
#: Where the last pytest session's hits and builds are kept, under the layout directory.
SESSION_FILE = "last-session.json"

_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "m": 1000**2, "mb": 1000**2, "g": 1000**3, "gb": 1000**3}
_UNITS |= {"kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4, "tb": 1000**4}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")


def parse_size(value: object, *, where: str) -> int:
    """Bytes from ``5368709120``, ``"5GiB"``, ``"500 MB"``; an error names ``where`` and the forms."""
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    m = _SIZE.match(value) if isinstance(value, str) else None
    unit = m.group(2).lower() if m else ""
    if m is None or unit not in _UNITS or float(m.group(1)) <= 0:
        zero = (isinstance(value, int) and not isinstance(value, bool)) or (m is not None and unit in _UNITS)
        raise CBuildError(
            f'{where}: expected a size{" above 0" if zero else ""} such as "5GiB", "500MB" or a number of bytes, '
            f"got {value!r}" + (" (python -m cbuild cache clear empties the cache)" if zero else "")
        )
    size = int(float(m.group(1)) * _UNITS[unit])
    if size <= 0:  # "0.5" bytes
        raise CBuildError(
            f'{where}: expected a size above 0 such as "5GiB", "500MB" or a number of bytes, got {value!r} '
            "(python -m cbuild cache clear empties the cache)"
        )
    return size


def format_size(n: int) -> str:
    """``1.5 GiB``, ``230 MiB``, ``12 KiB``, ``900 B``."""
    for unit, size in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= size:
            value = n / size
            return f"{value:.1f} {unit}" if value < 10 else f"{value:.0f} {unit}"
    return f"{n} B"


@dataclass
class Entry:
    """The files of one key."""

    kind: str
    key: str
    files: list[Path] = field(default_factory=list)
    size: int = 0
    #: Newest modification time of its files: when it was last used.
    used: float = 0.0


def entries(root: Path) -> list[Entry]:
    """Every entry under the cache ``root``."""
    found: dict[tuple[str, str], Entry] = {}
    layout = root / LAYOUT
    for kind_dir in sorted(p for p in _listdir(layout) if p.is_dir()):
        for shard in _listdir(kind_dir):
            for path in _listdir(shard):
                key = path.name.split(".", 1)[0]
                try:
                    st = path.lstat()
                except FileNotFoundError:
                    continue
                entry = found.setdefault((kind_dir.name, key), Entry(kind_dir.name, key))
                entry.files.append(path)
                entry.size += st.st_size
                if not path.name.endswith(".lock"):  # written when building starts, not when used
                    entry.used = max(entry.used, st.st_mtime)
    return list(found.values())


def _listdir(directory: Path) -> list[Path]:
    try:
        return list(directory.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return []


@dataclass
class Pruned:
    """What :func:`prune` did."""

    removed: int = 0
    freed: int = 0
    #: Entries that would have gone but were used within the grace period.
    recent: int = 0
    #: Entries that would have gone but another process is building (their lock is held).
    building: int = 0
    size_before: int = 0
    size_after: int = 0

    @property
    def in_use(self) -> int:
        """Entries kept because a session may be using them."""
        return self.recent + self.building

    def kept(self) -> str:
        """Why entries that would have gone were kept (``""`` when none were)."""
        parts = []
        if self.recent:
            parts.append(f"{self.recent} used in the last {GRACE / 60:.0f} minutes")
        if self.building:
            parts.append(f"{self.building} being built")
        return f"kept {' and '.join(parts)}" if parts else ""


def prune(root: Path, max_size: int, *, fraction: float = 0.8, grace: float = GRACE) -> Pruned:
    """Remove least recently used entries until the cache is at most ``fraction * max_size``
    (nothing is removed while it is within ``max_size``)."""
    found = entries(root)
    total = sum(e.size for e in found)
    out = Pruned(size_before=total, size_after=total)
    if total <= max_size:
        return out
    target = int(max_size * fraction)
    now = time.time()
    for entry in sorted(found, key=lambda e: (e.used, e.kind, e.key)):
        if total <= target:
            break
        if now - entry.used < grace:
            out.recent += 1
            continue
        with _unless_locked(root, entry) as free:
            if not free:
                out.building += 1
                continue
            _remove(entry)
        total -= entry.size
        out.removed += 1
        out.freed += entry.size
    out.size_after = total
    return out


def clear(root: Path) -> Pruned:
    """Remove every entry nobody is building (used ones too: a session running now rebuilds what it needs)."""
    found = entries(root)
    out = Pruned(size_before=sum(e.size for e in found))
    for entry in found:
        with _unless_locked(root, entry) as free:
            if not free:
                out.building += 1
                continue
            _remove(entry)
        out.removed += 1
        out.freed += entry.size
    out.size_after = out.size_before - out.freed
    with contextlib.suppress(OSError):
        (root / LAYOUT / SESSION_FILE).unlink()
    return out


@contextlib.contextmanager
def _unless_locked(root: Path, entry: Entry) -> Iterator[bool]:
    """Hold the entry's build lock if nobody else does (True), else yield False."""
    lock = root / LAYOUT / entry.kind / entry.key[:2] / f"{entry.key}.lock"
    if fcntl is None or not lock.exists():
        yield True
        return
    try:
        fh = open(lock, "rb")  # noqa: SIM115 - closed below
    except OSError:
        yield True
        return
    with fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _remove(entry: Entry) -> None:
    """The seal first, so that no reader takes the rest for whole; the lock file last."""
    order = sorted(entry.files, key=lambda p: (not p.name.endswith(".seal"), p.name.endswith(".lock"), p.name))
    for path in order:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


# -- what the cache holds --------------------------------------------------------------------


@dataclass
class Summary:
    """``cache info``: entries and bytes per kind and per toolchain, and the last session's hits and builds."""

    root: Path
    kinds: dict[str, tuple[int, int]]
    last_session: dict[str, object] | None
    zig_cache: Path | None
    zig_size: int
    toolchains: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: False where ``root`` does not exist (nothing built there yet, or a misspelt path).
    exists: bool = True


def toolchain_of(entry: Entry) -> str:
    """The toolchain an entry was built with, as its seal (or compile manifest) records it ("" if it does not)."""
    for path in entry.files:
        if path.name.endswith(".seal") or (entry.kind == "tu" and path.name.endswith(".json")):
            with contextlib.suppress(OSError, ValueError, AttributeError):
                label = json.loads(path.read_bytes()).get("toolchain")
                if isinstance(label, str) and label:
                    return label
    return ""


#: What each kind of entry holds, for ``cache info`` (short: its lines fit 80 columns).
KINDS = {
    "tu": "compile manifests (headers, digests)",
    "ir": "compiled LLVM IR",
    "rt": "the runtime, counted libc and libc++",
    "bin": "instrumented programs and libraries",
    "rvobj": "RISC-V objects of the models' builds",
    "rvbin": "RISC-V executables of the models' builds",
}

#: Kinds a toolchain builds (``cache info`` counts them per toolchain).
BUILT = frozenset(KINDS)


def summary(root: Path, zig_cache: Path | None = None) -> Summary:
    kinds: dict[str, tuple[int, int]] = {}
    toolchains: dict[str, tuple[int, int]] = {}
    for entry in entries(root):
        for table, name in ((kinds, entry.kind), (toolchains, toolchain_of(entry))):
            if table is toolchains and entry.kind not in BUILT:
                continue  # an index of a compilation database: nothing a toolchain made
            count, size = table.get(name, (0, 0))
            table[name] = (count + 1, size + entry.size)
    last: dict[str, object] | None = None
    with contextlib.suppress(OSError, ValueError):
        doc = json.loads((root / LAYOUT / SESSION_FILE).read_text())
        last = doc if isinstance(doc, dict) else None
    zig_size = tree_size(zig_cache) if zig_cache is not None else 0
    return Summary(
        root, dict(sorted(kinds.items())), last, zig_cache, zig_size, dict(sorted(toolchains.items())), root.exists()
    )


def record_session(root: Path, hits: Mapping[str, int], builds: Mapping[str, int]) -> None:
    """Keep a session's cache hits and builds per kind for ``cache info``."""
    doc = {
        "finished": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime()),
        "hits": dict(sorted(hits.items())),
        "builds": dict(sorted(builds.items())),
    }
    with contextlib.suppress(OSError):
        atomic_write(root / LAYOUT / SESSION_FILE, json.dumps(doc, sort_keys=True).encode())


def render_summary(info: Summary) -> list[str]:
    """``cache info``'s lines."""
    total = sum(size for _, size in info.kinds.values())
    entries_total = sum(n for n, _ in info.kinds.values())
    if not info.exists:  # a misspelt path would read as an empty cache
        lines = [f"build cache {info.root}: no such directory (nothing was built there yet)"]
        return lines + _zig_line(info)
    lines = [f"build cache {info.root}: {format_size(total)} in {_entries(entries_total)}"]
    width = max((len(k) for k in info.kinds), default=4)
    for kind, (count, size) in info.kinds.items():
        lines.append(
            f"  {kind:<{width}}  {count:>7} {noun(count):<7}  {format_size(size):>9}  {KINDS.get(kind, '')}".rstrip()
        )
    for toolchain, (count, size) in info.toolchains.items():
        made = f"built with {toolchain}" if toolchain else "no toolchain recorded (older or unfinished builds)"
        lines.append(f"  {made}: {_entries(count)}, {format_size(size)}")
    last = info.last_session
    if last is not None:
        hits, builds = last.get("hits", {}), last.get("builds", {})
        if isinstance(hits, dict) and isinstance(builds, dict):
            n_hits, n_builds = sum(hits.values()), sum(builds.values())
            rate = f"{100.0 * n_hits / (n_hits + n_builds):.0f}%" if n_hits + n_builds else "-"
            lines.append(
                f"last pytest session ({last.get('finished', '?')}): {n_hits} {'hit' if n_hits == 1 else 'hits'}, "
                f"{n_builds} {'build' if n_builds == 1 else 'builds'}, hit rate {rate}"
            )
    else:
        lines.append("last pytest session: none recorded")
    return lines + _zig_line(info)


def _zig_line(info: Summary) -> list[str]:
    if info.zig_cache is None:
        return []
    return [f"zig's own cache {info.zig_cache}: {format_size(info.zig_size)} (zig's; not limited by cache_max_size)"]


def noun(count: int) -> str:
    """``entry`` or ``entries``, as ``count`` asks."""
    return "entry" if count == 1 else "entries"


def _entries(count: int) -> str:
    """``1 entry``, ``3 entries``."""
    return f"{count} {noun(count)}"
