"""Compilation databases (``compile_commands.json`` of CMake, Meson, Bear): each source's own flags.

Each entry's flags are sorted three ways:

* kept: defines (``-D``/``-U``), include directories and files (``-I``, ``-isystem``,
  ``-iquote``, ``-idirafter``, ``-include``, ``-imacros``; made absolute), the language
  standard (``-std=``, ``-ansi``), ``-pthread`` and the ``-f`` flags that change what the
  code means (``-fwrapv``, ``-fno-strict-aliasing``, ``-fno-exceptions``, ...);
* replaced by the pipeline's own, silently: the compiler, the source, ``-c``, ``-o``,
  dependency files (``-M*``), debug info (``-g*``), ``-fPIC``/``-fPIE`` (the pipeline's code
  is position-independent) and diagnostics (``-W*``, ``-w``, ``-pedantic``,
  ``-fdiagnostics-*``): none changes what is counted;
* dropped and said once per database (:class:`BuildDescriptionWarning`): optimisation
  levels (the build's ``opt_level`` decides), target flags (``-march``, ``-m64``, ...;
  the pipeline picks the target) and every other flag, which the pipeline does not honour.

A large database's index (each entry's file and where its text lies in the file) is kept in
the build cache, keyed by the database's path, size, modification time and content hash: it
is parsed once per content, by one process, and then read in a fraction of the time.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import io
import json
import os
import re
import shlex
import stat
import sys
import warnings
from array import array
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, Protocol

from cbuild.build.cache import Cache, Notify, atomic_write, default_cache_dir, digest
from cbuild.build.progress import stderr_progress
from cbuild.build.sources import Source, is_pattern, matches, pattern_parts, split_exclusions, without
from cbuild.errors import BuildDescriptionError, BuildDescriptionWarning, CBuildError, describe_os_error

#: Options whose value is the next argument.
_SEPARATE = frozenset(
    {"-o", "-MF", "-MT", "-MQ", "-target", "-arch", "-x", "-Xclang", "-Xpreprocessor", "-Xassembler", "-Xlinker",
     "-isysroot", "--sysroot", "-include-pch", "--param", "-imultilib", "-iprefix", "-iwithprefix",
     "-iwithprefixbefore", "-gcc-toolchain", "-I", "-D", "-U", "-isystem", "-iquote", "-idirafter", "-include",
     "-imacros", "-L", "-l", "-MJ"}
)  # fmt: skip
_DIRECTORY_OPTIONS = ("-I", "-isystem", "-iquote", "-idirafter")
_FILE_OPTIONS = ("-include", "-imacros")
_KEPT_F = frozenset(
    f"-f{no}{name}"
    for no in ("", "no-")
    for name in (
        "wrapv", "strict-aliasing", "strict-overflow", "signed-char", "unsigned-char", "common", "short-enums",
        "short-wchar", "exceptions", "cxx-exceptions", "rtti", "builtin", "freestanding", "math-errno", "fast-math",
        "finite-math-only", "delete-null-pointer-checks", "ms-extensions", "gnu89-inline", "char8_t",
        "threadsafe-statics", "sized-deallocation", "aligned-new", "operator-names", "gnu-keywords",
        "dollars-in-identifiers", "trapping-math", "unsafe-math-optimizations", "associative-math",
        "reciprocal-math", "signed-zeros", "elide-constructors", "access-control", "asm", "gnu-inline-asm",
        "trigraphs", "permissive",
    )
)  # fmt: skip
_KEPT_F_PREFIXES = (
    "-fno-builtin-", "-ffp-contract=", "-fmacro-prefix-map=", "-ffile-prefix-map=", "-fconstexpr-depth=",
    "-fconstexpr-steps=", "-ftemplate-depth=", "-fbracket-depth=", "-finput-charset=", "-fexec-charset=",
)  # fmt: skip
_REPLACED = frozenset({"-c", "-S", "-w", "-pipe", "-pedantic", "-pedantic-errors", "--", "-v"})
_REPLACED_PREFIXES = (
    "-M", "-g", "-fdiagnostics", "-fcolor-diagnostics", "-fno-color-diagnostics", "-fmessage-length", "-fPIC", "-fpic",
    "-fPIE", "-fpie",
)  # fmt: skip
_TARGET_PREFIXES = ("-m", "--target=", "-target", "-arch", "--sysroot", "-isysroot", "-stdlib=", "-nostdinc", "-B")

OPTIMISATION = "optimisation levels (the build's opt_level decides)"
TARGET = "target flags (the pipeline picks the target)"
OTHER = "flags the pipeline does not honour"


@dataclass(frozen=True)
class Entry:
    """One compile command of a database."""

    source: Source
    #: The object file it names (its ``output``, else its ``-o``), or "".
    output: str
    #: CMake and Meson targets its object belongs to (``CMakeFiles/<target>.dir``, ``<target>.p``).
    targets: tuple[str, ...]

    def belongs_to(self, target: str) -> bool:
        """Whether ``target`` names this entry's target, or is a glob matching its object file."""
        return target in self.targets or (bool(self.output) and fnmatchcase(self.output, target))

    @property
    def label(self) -> str:
        """How messages name this entry: its object file (relative to its directory), else its directory."""
        if not self.output:
            return f"the command in {self.source.cwd}"
        output = Path(self.output)
        cwd = self.source.cwd
        return str(output.relative_to(cwd)) if cwd is not None and output.is_relative_to(cwd) else self.output


class _Items(Protocol):
    """A database's entries as JSON values: a list, or :class:`_Stored`."""

    def __len__(self) -> int: ...

    def __getitem__(self, n: int, /) -> Any: ...


class CompilationDatabase:
    """The compile commands of one ``compile_commands.json``.

    Reading it checks each entry's shape and indexes the entries by their file; an
    entry's command is parsed (split, response files read, flags sorted) when a
    selection needs it, so that picking two sources of a 200,000-entry database parses two.
    """

    def __init__(self, path: Path, items: _Items, keys: list[str]) -> None:
        self.path = path
        self._items = items
        #: Each entry's ``directory/file``, normalised (not resolved) -> its first entry's number, in
        #: the order of the entries (the last one's until corrected below: built in C, in 0.05 s for
        #: 200,000 entries); and all the entries' numbers for the files of several entries.
        self._first: dict[str, int] = dict(zip(keys, range(len(keys)), strict=True))
        self._more: dict[str, list[int]] = {}
        if len(self._first) < len(keys):
            several = {key for key, count in Counter(keys).items() if count > 1}
            for n, key in enumerate(keys):
                if key in several:
                    self._more.setdefault(key, []).append(n)
            self._first.update((key, numbers[0]) for key, numbers in self._more.items())
        self._parsed: dict[int, tuple[Entry, list[tuple[str, str]]]] = {}
        self._said: set[str] = set()

    def _parse(self, n: int) -> Entry:
        if n not in self._parsed:
            self._parsed[n] = _entry(self._items[n], self.path, n)
        return self._parsed[n][0]

    @property
    def entries(self) -> tuple[Entry, ...]:
        """Every entry, parsed."""
        return tuple(self._parse(n) for n in range(len(self._items)))

    @property
    def dropped(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """(why, flags) for the flags the database's entries leave out, each flag once, in order."""
        return self._dropped(range(len(self._items)))

    def _dropped(self, numbers: Iterable[int]) -> tuple[tuple[str, tuple[str, ...]], ...]:
        found: dict[str, dict[str, None]] = {}
        for n in numbers:
            self._parse(n)
            for why, flag in self._parsed[n][1]:
                found.setdefault(why, {})[flag] = None
        return tuple((why, tuple(found[why])) for why in (OPTIMISATION, TARGET, OTHER) if why in found)

    def dropped_message(self, dropped: tuple[tuple[str, tuple[str, ...]], ...] | None = None) -> str:
        """The warning saying which flags were left out ("" when none); by default the whole database's."""
        dropped = self.dropped if dropped is None else dropped
        if not dropped:
            return ""
        parts = "; ".join(f"{why}: {' '.join(flags)}" for why, flags in dropped)
        return f"{self.path}: flags of this compilation database were left out: {parts}"

    def select(
        self,
        patterns: Sequence[str | Path] = (),
        *,
        base: Path | str | None = None,
        targets: Sequence[str] = (),
        stacklevel: int = 2,
    ) -> list[Source]:
        """The sources named by ``patterns`` (paths or globs relative to ``base``; none: every
        source, sorted; ``!pattern`` entries leave out what they match; ``base`` None: the current
        directory), of the given ``targets`` only when some are named. The flags their
        entries leave out are said once per database (a :class:`BuildDescriptionWarning`;
        ``stacklevel`` means what it would for ``warnings.warn`` called by the caller)."""
        if not self._items:
            raise BuildDescriptionError(f"the compilation database {self.path} lists no compile commands")
        base = Path(base) if base is not None else Path.cwd()
        patterns, exclusions = split_exclusions(patterns)
        numbers = range(len(self._items)) if targets or not patterns else self._candidates(patterns, base)
        entries = [(n, self._parse(n)) for n in numbers]
        if targets:
            known = sorted({t for _, e in entries for t in e.targets})
            for target in targets:
                if not any(e.belongs_to(target) for _, e in entries):
                    raise BuildDescriptionError(
                        f"no compile command of {self.path} belongs to the target {target!r} "
                        f"(its targets: {', '.join(known) or 'none named'}; a target may also be "
                        "a glob matched against the object files)"
                    )
            entries = [(n, e) for n, e in entries if any(e.belongs_to(t) for t in targets)]
        by_file: dict[Path, list[tuple[int, Entry]]] = {}
        for n, entry in entries:
            by_file.setdefault(entry.source.path, []).append((n, entry))
        among = f"{self.path}" + (f" (targets {', '.join(targets)})" if targets else "")
        chosen: list[Path] = []
        for pattern in patterns:
            if is_pattern(str(pattern)) and (base / pattern).resolve() not in by_file:  # "[" in a file's name
                parts = pattern_parts(pattern, base)
                hits = sorted(f for f in by_file if matches(f, parts))
                if not hits:
                    raise BuildDescriptionError(f"the pattern {pattern} (in {base}) matches no source of {among}")
            else:
                wanted = (base / pattern).resolve()
                if wanted not in by_file:
                    files = list(by_file) if targets else [Path(key) for key in self._first]
                    raise BuildDescriptionError(f"{wanted} is not a source of {among}{_close(wanted, files, base)}")
                hits = [wanted]
            chosen += [f for f in hits if f not in chosen]
        picked = without(chosen if patterns else sorted(by_file), exclusions, base)
        sources = [self._one(f, [e for _, e in by_file[f]]) for f in picked]
        message = self.dropped_message(self._dropped(n for f in picked for n, _ in by_file[f]))
        if message and message not in self._said:
            self._said.add(message)
            warnings.warn(message, BuildDescriptionWarning, stacklevel=stacklevel + 1)
        return sources

    def _candidates(self, patterns: Sequence[str | Path], base: Path) -> list[int]:
        """The entries whose file a pattern may name, found in the index without parsing any;
        every entry where the index cannot tell (a pattern that names nothing in it, which
        may be a path through a symbolic link: the error then lists close matches)."""
        found: set[int] = set()
        for pattern in patterns:
            literal = base / pattern
            numbers = self._numbers(str(literal.resolve())) + self._numbers(os.path.normpath(literal))
            if is_pattern(str(pattern)):
                resolved, plain = pattern_parts(pattern, base), Path(os.path.normpath(literal)).parts
                # Only the keys under either form of the pattern's literal leading directories.
                prefixes = tuple(_literal_prefix(parts) for parts in (resolved, plain))
                hits = [
                    key
                    for key in self._first
                    if key.startswith(prefixes) and (matches(Path(key), resolved) or matches(Path(key), plain))
                ]
                numbers = numbers + [n for key in hits for n in self._numbers(key)]
            if not numbers:
                return list(range(len(self._items)))
            found.update(numbers)
        return sorted(found)

    def _numbers(self, key: str) -> list[int]:
        """The numbers of the entries of one ``directory/file`` key (none: [])."""
        first = self._first.get(key)
        return [] if first is None else self._more.get(key, [first])

    def _one(self, file: Path, entries: list[Entry]) -> Source:
        distinct = list({e.source.flags: e for e in entries}.values())
        if len(distinct) == 1:
            return distinct[0].source
        shared = set.intersection(*(set(e.source.flags) for e in distinct))
        ways = "; ".join(
            f"{e.label} ({shlex.join(f for f in e.source.flags if f not in shared) or 'no flags of its own'})"
            for e in distinct
        )
        names = sorted({t for e in distinct for t in e.targets})
        pick = f"targets=[{names[0]!r}] (its targets: {', '.join(names)})" if names else "targets=[<object file glob>]"
        raise BuildDescriptionError(
            f"{self.path} compiles {file} {len(distinct)} ways, with different flags: {ways}; choose one with {pick}"
        )


def _literal_prefix(parts: tuple[str, ...]) -> str:
    """The directories before a pattern's first glob component, ending with a separator."""
    literal = 0
    while literal < len(parts) - 1 and not is_pattern(parts[literal]):
        literal += 1
    return os.path.join(*parts[:literal], "") if literal else ""


def _close(wanted: Path, files: Iterable[Path], base: Path) -> str:
    """The close matches of a path missing from the database, as "; close matches: a, b" (or "")."""
    names = {os.path.relpath(f, base): f for f in files}
    close = difflib.get_close_matches(os.path.relpath(wanted, base), list(names), n=5, cutoff=0.75)
    close += [n for n, f in names.items() if f.name == wanted.name and n not in close]
    return f"; close matches: {', '.join(close[:5])}" if close else ""


_loaded: dict[Path, tuple[tuple[int, int], CompilationDatabase]] = {}

#: Databases of this many bytes or more keep their index in the build cache (a smaller one is
#: parsed in less time than the cache takes to consult).
CACHE_BYTES = 1 << 20
#: Parsing a database of this many bytes or more is said (a progress line) while it happens.
PROGRESS_BYTES = 50 << 20
#: The layout of an index in the cache (part of its key).
_INDEX_LAYOUT = "compiledb-index-1"
_INDEX_FILES = (".spans", ".keys")


def load(path: Path | str, *, cache: Cache | None = None, progress: Notify | None = None) -> CompilationDatabase:
    """Read the database at ``path`` (once per content per process), as :func:`read` does."""
    path = Path(path).resolve()
    try:
        st = path.stat()
    except FileNotFoundError:
        raise BuildDescriptionError(
            f"the compilation database {path} does not exist; generate it with CMake "
            "(cmake -DCMAKE_EXPORT_COMPILE_COMMANDS=ON), Meson (it writes one into the build directory) "
            "or Bear (bear -- make)"
        ) from None
    except OSError as exc:
        raise _unreadable(path, exc) from exc
    stamp = (st.st_mtime_ns, st.st_size)
    cached = _loaded.get(path)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    db = read(path, cache=cache, progress=progress)
    _loaded[path] = (stamp, db)
    return db


def read(path: Path, *, cache: Cache | None = None, progress: Notify | None = None) -> CompilationDatabase:
    """Read the database at ``path``: each entry's shape is checked and its file indexed here, its
    command when a selection needs it; every problem is an error naming the file and the entry.

    The index of a database of :data:`CACHE_BYTES` or more is kept in ``cache`` (default: the one
    in :func:`~cbuild.build.cache.default_cache_dir`; without it when it cannot be used), so that
    one process parses each content. ``progress`` (default: the cache's ``notify`` when a cache is
    given, else standard error) hears when a database of :data:`PROGRESS_BYTES` or more is parsed.
    """
    say = progress or (cache.notify if cache is not None else stderr_progress)
    try:
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            if stat.S_ISREG(st.st_mode) and st.st_size >= CACHE_BYTES:
                db = _through_cache(path, fh, st, cache or Cache(default_cache_dir(), notify=say), say)
                if db is not None:
                    return db
                fh.seek(0)
            text = _text(path, fh.read(), say)
    except OSError as exc:
        raise _unreadable(path, exc) from exc
    items, keys, _ = _parse(path, text)
    return CompilationDatabase(path.absolute(), items, keys)


def _unreadable(path: Path, exc: OSError) -> BuildDescriptionError:
    return BuildDescriptionError(f"cannot read the compilation database {path}: {describe_os_error(exc)}")


def _stamp(st: os.stat_result) -> tuple[int, int, int]:
    """What changes when a file is rewritten: its size, modification time and inode."""
    return st.st_size, st.st_mtime_ns, st.st_ino


class _Unkept(Exception):
    """A database parsed in place of its cached index, whose index is not to be kept (it changed meanwhile)."""

    def __init__(self, db: CompilationDatabase) -> None:
        super().__init__()
        self.db = db


def _through_cache(
    path: Path, fh: io.BufferedReader, st: os.stat_result, cache: Cache, say: Notify
) -> CompilationDatabase | None:
    """The database open as ``fh``, its index read from ``cache``, else parsed and kept there
    (under the cache's lock: other processes wait for it); None when the cache cannot be used."""
    content = hashlib.sha256()
    buffer = bytearray(1 << 20)
    view = memoryview(buffer)
    while size := fh.readinto(buffer):
        content.update(view[:size])
    if _stamp(os.fstat(fh.fileno())) != _stamp(st):
        return None  # being rewritten: parse what is there, keep nothing
    absolute = path.absolute()
    # The keys of the entries are made from this path; the content hash tells an edit that keeps
    # the size and modification time (hashing 200 MB takes 0.2 s: the warm read's largest part).
    key = digest(_INDEX_LAYOUT, sys.byteorder, str(absolute), str(st.st_size), str(st.st_mtime_ns), content.hexdigest())
    built: list[CompilationDatabase] = []

    def build(paths: list[Path]) -> None:
        try:
            fh.seek(0)
            data = fh.read()
        except OSError as exc:
            raise _unreadable(path, exc) from exc
        unchanged = hashlib.sha256(data).hexdigest() == content.hexdigest()
        text = _text(path, data, say)
        del data  # 200 MB less at the peak, while the entries are parsed
        items, keys, spans = _parse(path, text, spans=True)
        if spans is None or not unchanged:
            raise _Unkept(CompilationDatabase(absolute, items, keys))
        # Its entries are read from the file as the index says, as in other processes: the parsed
        # ones (several times the file's size in memory) are not kept.
        built.append(CompilationDatabase(absolute, _Stored(absolute, spans, _stamp(st)), keys))
        atomic_write(paths[0], spans.tobytes())
        atomic_write(paths[1], "\0".join(keys).encode("utf-8", "surrogatepass"))

    paths = [cache.path("compiledb", key, suffix) for suffix in _INDEX_FILES]
    for _ in range(2):
        try:
            cache.entry("compiledb", key, _INDEX_FILES, build, name=f"the index of {absolute}")
            stored = built[0] if built else _stored(paths, absolute, st)
        except _Unkept as exc:
            return exc.db
        except BuildDescriptionError:
            raise
        except (OSError, CBuildError):  # the cache cannot be written or read: do without it
            if built:
                with contextlib.suppress(OSError):
                    cache.discard("compiledb", key, paths)
            return built[0] if built else None
        if stored is not None:
            return stored
        with contextlib.suppress(OSError):
            cache.discard("compiledb", key, paths)  # whole, but not an index of this database: built again
    return None


def _stored(paths: list[Path], absolute: Path, st: os.stat_result) -> CompilationDatabase | None:
    """The database whose index the cache holds at ``paths``; None when they are not one."""
    spans = array("q")
    try:
        spans.frombytes(paths[0].read_bytes())
        keys = paths[1].read_bytes().decode("utf-8", "surrogatepass").split("\0") if spans else []
    except ValueError:
        return None
    if len(spans) != 2 * len(keys) or (spans and (spans[0] < 0 or spans[-1] > st.st_size)):  # ascending as built
        return None
    return CompilationDatabase(absolute, _Stored(absolute, spans, _stamp(st)), keys)


class _Stored:
    """The entries of a database whose index was cached: each decoded from the file when asked for."""

    def __init__(self, path: Path, spans: array[int], stamp: tuple[int, int, int]) -> None:
        self._path = path
        self._spans = spans
        self._stamp = stamp

    def __len__(self) -> int:
        return len(self._spans) // 2

    def __getitem__(self, n: int, /) -> Any:
        if not 0 <= n < len(self):
            raise IndexError(n)
        start, end = self._spans[2 * n], self._spans[2 * n + 1]
        try:
            with open(self._path, "rb") as fh:
                if _stamp(os.fstat(fh.fileno())) != self._stamp:
                    raise BuildDescriptionError(
                        f"the compilation database {self._path} changed while it was in use; read it again"
                    )
                fh.seek(start)
                data = fh.read(end - start)
        except OSError as exc:
            raise _unreadable(self._path, exc) from exc
        return json.loads(data.decode("utf-8"))


def _text(path: Path, data: bytes, say: Notify) -> str:
    """The database ``data`` read from ``path`` as text; a large one is said to be read."""
    if len(data) >= PROGRESS_BYTES:
        say(f"reading the compilation database {path.absolute()} ({len(data) / 1e6:,.0f} MB)...")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BuildDescriptionError(f"cannot read the compilation database {path}: not UTF-8 ({exc.reason})") from exc


def _parse(path: Path, text: str, *, spans: bool = False) -> tuple[list[Any], list[str], array[int] | None]:
    """The entries of the database ``text`` read from ``path`` and each one's key; with ``spans``,
    also where each entry begins and ends in its UTF-8 bytes (None when that cannot be told)."""
    scanned = _scan(text) if spans else None
    if scanned is not None:
        doc, where = scanned
    else:
        where = None
        try:
            doc = json.loads(text)
        except ValueError as exc:
            raise BuildDescriptionError(f"{path} is not a compilation database: it is not JSON ({exc})") from None
    if not isinstance(doc, list):
        raise BuildDescriptionError(
            f"{path} is not a compilation database: expected a JSON list of compile commands, "
            f"found a JSON {type(doc).__name__ if not isinstance(doc, dict) else 'object'}"
        )
    absolute = path.absolute()
    parent = str(absolute.parent)
    keys = []
    for n, item in enumerate(doc):
        key = _quick_key(item, parent)
        keys.append(key if key is not None else _check(item, absolute, n)[1])
    return doc, keys, None if where is None else _byte_spans(text, where)


#: JSON whitespace; what opens a list; what follows a value of one (the next one, or the list's end).
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_OPEN = re.compile(r"[ \t\n\r]*\[[ \t\n\r]*")
_NEXT = re.compile(r"[ \t\n\r]*([,\]])[ \t\n\r]*")


def _scan(text: str) -> tuple[list[Any], list[int]] | None:
    """The values of the JSON list ``text`` and where each begins and ends (in characters), as
    ``json.loads`` reads them; None when ``text`` is not a JSON list (``json.loads`` says why)."""
    decode = json.JSONDecoder().raw_decode
    opened = _OPEN.match(text)
    if opened is None:
        return None
    at = opened.end()
    items: list[Any] = []
    where: list[int] = []
    if text.startswith("]", at):
        return (items, where) if _WHITESPACE.fullmatch(text, at + 1) else None
    while True:
        try:
            item, end = decode(text, at)
        except (ValueError, RecursionError):
            return None
        items.append(item)
        where += (at, end)
        after = _NEXT.match(text, end)
        if after is None:
            return None
        at = after.end()
        if after.group(1) == "]":
            return (items, where) if at == len(text) else None


def _byte_spans(text: str, where: list[int]) -> array[int]:
    """Character offsets into ``text`` as offsets into its UTF-8 bytes (``where`` ascending)."""
    if text.isascii():
        return array("q", where)
    spans = array("q")
    char = byte = 0
    for at in where:
        byte += len(text[char:at].encode("utf-8"))
        char = at
        spans.append(byte)
    return spans


def _quick_key(item: Any, parent: str) -> str | None:
    """An entry's ``directory/file`` normalised, when its shape is plainly right (else None:
    :func:`_check` looks closer and names what is wrong). The common case, made fast: a large
    database has hundreds of thousands of entries."""
    if type(item) is not dict:
        return None
    directory, file = item.get("directory"), item.get("file")
    if type(directory) is not str or type(file) is not str or "\0" in directory or "\0" in file:
        return None
    if type(item.get("arguments")) is not list and type(item.get("command")) is not str:
        return None
    return os.path.normpath(os.path.join(parent, directory, file))


def _check(item: Any, db: Path, n: int) -> tuple[str, str]:
    """How messages name entry ``n`` (``item``), and its file as ``directory/file`` normalised;
    an entry of the wrong shape is an error naming it."""
    where = f"{db}, entry {n}"
    if not isinstance(item, dict):
        raise BuildDescriptionError(f"{where}: expected an object with directory, file and arguments or command")
    for key in ("directory", "file"):
        if not isinstance(item.get(key), str):
            raise BuildDescriptionError(f"{where}: has no {key!r} string")
    where = f"{db}, entry {n} ({item['file']})"
    if "\0" in item["directory"] + item["file"]:
        raise BuildDescriptionError(f"{where}: its directory or file name holds a NUL character")
    if not isinstance(item.get("arguments"), list) and not isinstance(item.get("command"), str):
        raise BuildDescriptionError(f"{where}: has neither an 'arguments' list of strings nor a 'command' string")
    return where, os.path.normpath(os.path.join(db.parent, item["directory"], item["file"]))


def _entry(item: Any, db: Path, n: int) -> tuple[Entry, list[tuple[str, str]]]:
    where, _ = _check(item, db, n)
    directory = db.parent / item["directory"]
    if isinstance(item.get("arguments"), list) and all(isinstance(a, str) for a in item["arguments"]):
        args: list[str] = item["arguments"]
    elif not isinstance(item.get("command"), str):
        raise BuildDescriptionError(f"{where}: has neither an 'arguments' list of strings nor a 'command' string")
    else:
        try:
            args = shlex.split(item["command"])
        except ValueError as exc:
            raise BuildDescriptionError(f"{where}: its command cannot be split into arguments ({exc})") from None
    file = (directory / item["file"]).resolve()
    args = _expand_response_files(args, directory, where)
    flags, output, left_out = _sort_flags(args[1:], directory, file)
    output = item["output"] if isinstance(item.get("output"), str) else output
    targets = tuple(
        part.removesuffix(".dir") if part.endswith(".dir") else part.removesuffix(".p")
        for part in Path(output).parts[:-1]
        if part.endswith((".dir", ".p"))
    )
    return Entry(Source(file, tuple(flags), directory.resolve()), output, targets), left_out


#: How deep response files may name response files, as compilers allow (GCC's and clang's
#: drivers refuse deeper nesting too); and how many arguments one entry may expand to.
RESPONSE_DEPTH = 8
RESPONSE_ARGUMENTS = 100_000


def _expand_response_files(
    args: list[str], directory: Path, where: str, chain: tuple[Path, ...] = (), total: list[int] | None = None
) -> list[str]:
    """``@file`` arguments replaced by the arguments the file holds; a file that names itself
    (directly or through others), nesting deeper than :data:`RESPONSE_DEPTH` or more than
    :data:`RESPONSE_ARGUMENTS` arguments in all is an error naming the files."""
    total = [0] if total is None else total
    out: list[str] = []
    for arg in args:
        if not arg.startswith("@") or len(arg) == 1:
            out.append(arg)
            continue
        path = directory / arg[1:]
        here = Path(os.path.normpath(path))
        if here in chain:
            cycle = " -> ".join(str(p) for p in (*chain[chain.index(here) :], here))
            raise BuildDescriptionError(f"{where}: its response files name each other in a cycle: {cycle}")
        if len(chain) >= RESPONSE_DEPTH:
            raise BuildDescriptionError(
                f"{where}: its response files are nested more than {RESPONSE_DEPTH} deep: "
                f"{' -> '.join(str(p) for p in (*chain, here))}"
            )
        try:
            text = path.read_text(encoding="utf-8")
            parts = shlex.split(text)
        except (OSError, ValueError) as exc:
            why = describe_os_error(exc) if isinstance(exc, OSError) else exc
            if isinstance(exc, UnicodeDecodeError):
                why = f"not UTF-8 ({exc.reason})"
            raise BuildDescriptionError(f"{where}: its response file {path} cannot be read: {why}") from None
        total[0] += len(parts)
        if total[0] > RESPONSE_ARGUMENTS:
            raise BuildDescriptionError(
                f"{where}: its response files expand to more than {RESPONSE_ARGUMENTS:,} arguments (at {path})"
            )
        out += _expand_response_files(parts, directory, where, (*chain, here), total)
    return out


def _sort_flags(args: list[str], directory: Path, file: Path) -> tuple[list[str], str, list[tuple[str, str]]]:
    """The flags kept (paths made absolute), the ``-o`` output, and (why, flag) for each one dropped."""
    kept: list[str] = []
    output = ""
    dropped: list[tuple[str, str]] = []

    def absolute(value: str) -> str:
        return os.path.normpath(os.path.join(directory, value))

    i = 0
    while i < len(args):
        arg = args[i]
        value = args[i + 1] if arg in _SEPARATE and i + 1 < len(args) else None
        i += 2 if value is not None else 1
        whole = shlex.join([arg] if value is None else [arg, value])  # as the message shows it
        if arg == "-o":
            output = value or ""
        elif not arg.startswith("-"):
            if (directory / arg).resolve() != file:
                dropped.append((OTHER, shlex.quote(arg)))  # another input file
        elif arg in ("-D", "-U") and value is not None:
            kept.append(arg + value)
        elif arg.startswith(("-D", "-U")) and len(arg) > 2:
            kept.append(arg)
        elif arg in _DIRECTORY_OPTIONS and value is not None:
            kept.append(arg + absolute(value))
        elif arg.startswith(_DIRECTORY_OPTIONS):
            option = next(o for o in sorted(_DIRECTORY_OPTIONS, key=len, reverse=True) if arg.startswith(o))
            kept.append(option + absolute(arg[len(option) :]))
        elif arg in _FILE_OPTIONS and value is not None:
            kept += [arg, absolute(value)]
        elif arg.startswith(("-std=", "--std=")) or arg in ("-ansi", "-pthread"):
            kept.append(arg.removeprefix("-") if arg.startswith("--") else arg)
        elif arg in _KEPT_F or arg.startswith(_KEPT_F_PREFIXES):
            kept.append(arg)
        elif arg in _REPLACED or arg.startswith(_REPLACED_PREFIXES):
            pass
        elif arg.startswith("-W") and not arg.startswith(("-Wl,", "-Wa,", "-Wp,")):
            pass  # warnings: clang's own diagnostics, not counted
        elif arg.startswith("-O"):
            dropped.append((OPTIMISATION, whole))
        elif arg.startswith(_TARGET_PREFIXES):
            dropped.append((TARGET, whole))
        else:
            dropped.append((OTHER, whole))
    return kept, output, dropped
