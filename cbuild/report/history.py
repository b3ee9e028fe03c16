"""The history of a baseline file, read from git: one series of values per test and metric.

``python -m cbuild history`` reads every committed version of the baseline (``git log --follow
--first-parent`` of the file, oldest first: the current branch's own line, where a merged branch
shows as its merge commit; the contents through one ``git cat-file --batch``), without checking
anything out. Each version is a point of the series of every (test, metric) it holds.

* A version that is not a snapshot is skipped and reported (:attr:`History.unreadable`).
  Commits that delete the file are counted in ``commits_seen`` and otherwise ignored.
* When the fingerprint (toolchain, cost models) differs from the previous version's, every
  series starts a new segment there: values on either side of it are never compared.
* A test renamed in a commit (its node id gone, exactly one new node id with the same metric
  totals, or failing that with the same name after the last ``::``) continues its series
  under the new name; a test that disappears ends its series ("removed in"), which goes on if
  a test of that name comes back ("removed in X, back in Y").

:meth:`History.to_json` gives this document (the HTML report draws its charts from it)::

    {
      "baseline": "example_project/.instrbudget/baseline.json",   # as given (or as found)
      "path": "example_project/.instrbudget/baseline.json",       # in the repository, newest name
      "shallow": false,              # a shallow clone: older commits are missing
      "commits_seen": 10,            # commits that changed the file (readable or not)
      "unreadable": [{"hash": "…", "short": "ab12cd3", "date": "2026-11-23T09:58:43+00:00",
                      "subject": "…", "reason": "is not valid JSON (line 1, column 1: …)"}],
      "commits": [                   # readable versions, oldest first
        {"hash": "…", "short": "2153e9e", "date": "…", "subject": "…", "fingerprint": {"clang": "22.1.8"}}
      ],
      "fingerprint_changes": [{"commit": "0d97faf", "keys": ["models"]}],
      "series": [                    # sorted by test, metric
        {
          "test": "tests/test_a.py::test_x",   # newest name
          "metric": "ir_instructions",
          "current": true,                     # in the newest version
          "segments": [                        # split where the fingerprint changed
            {"fingerprint": {…}, "changed": [], "points": [{"commit": "2153e9e", "value": 1234}]},
            {"fingerprint": {…}, "changed": ["models"], "points": [{"commit": "0d97faf", "value": 1301}]}
          ],
          "renamed_from": [{"test": "tests/test_old.py::test_x", "commit": "cc8aa90"}],
          "removed_in": null,                  # short hash of the commit that dropped it, else null
          "absent": [{"removed_in": "edc0b40", "back_in": "c683148"}]  # gone and back under its name
        }
      ]
    }

``changed`` lists the fingerprint keys that differ from the previous segment's (empty for the first).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from cbuild.errors import CBuildError
from cbuild.report import texttable
from cbuild.report.order import display_order
from cbuild.report.snapshot import DEFAULT_PATH, Snapshot, SnapshotError, decode, differing_keys
from cbuild.report.sparkline import BREAK, sparkline
from cbuild.report.texttable import ELLIPSIS


@dataclass(frozen=True)
class Commit:
    """A commit that changed the baseline file."""

    hash: str
    short: str
    #: Author date, ISO 8601 with the author's offset.
    date: str
    subject: str

    def to_json(self) -> dict[str, str]:
        return {"hash": self.hash, "short": self.short, "date": self.date, "subject": self.subject}


@dataclass(frozen=True)
class Version:
    """The baseline as one commit left it."""

    commit: Commit
    snapshot: Snapshot


@dataclass(frozen=True)
class Unreadable:
    """A committed version that is not a snapshot, and why."""

    commit: Commit
    reason: str


@dataclass(frozen=True)
class FingerprintChange:
    """A version whose fingerprint differs from the previous readable version's."""

    commit: Commit
    keys: tuple[str, ...]


@dataclass(frozen=True)
class Point:
    """One value: ``version`` indexes :attr:`History.versions`, ``commit`` is its short hash."""

    version: int
    commit: str
    value: int


@dataclass
class Segment:
    """Points of a series measured with one fingerprint."""

    fingerprint: dict[str, str]
    points: list[Point] = field(default_factory=list)
    #: Fingerprint keys that differ from the previous segment's (empty for the first segment).
    changed: tuple[str, ...] = ()


@dataclass(frozen=True)
class Rename:
    """The series' test was called ``old`` before commit ``commit`` (short hash)."""

    old: str
    commit: str


@dataclass
class Series:
    """One metric of one test over the commits that hold it (consecutive versions)."""

    test: str
    metric: str
    segments: list[Segment] = field(default_factory=list)
    renamed_from: list[Rename] = field(default_factory=list)
    #: Short hash of the first version without it; None while it is in the newest version.
    removed_in: str | None = None
    #: Times it was gone and came back under the same name: (the commit that dropped it, the one
    #: that brought it back), short hashes.
    absent: list[tuple[str, str]] = field(default_factory=list)

    @property
    def points(self) -> list[Point]:
        return [p for s in self.segments for p in s.points]

    @property
    def names(self) -> list[str]:
        """The test's name and every earlier one."""
        return [self.test, *(r.old for r in self.renamed_from)]

    @property
    def current(self) -> bool:
        return self.removed_in is None

    @property
    def changed(self) -> bool:
        """Its value moved, its model changed, or it was renamed or removed."""
        points = self.points
        return (
            any(p.value != points[0].value for p in points)
            or len(self.segments) > 1
            or bool(self.renamed_from)
            or bool(self.absent)
            or not self.current
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "test": self.test,
            "metric": self.metric,
            "current": self.current,
            "segments": [
                {
                    "fingerprint": dict(s.fingerprint),
                    "changed": list(s.changed),
                    "points": [{"commit": p.commit, "value": p.value} for p in s.points],
                }
                for s in self.segments
            ],
            "renamed_from": [{"test": r.old, "commit": r.commit} for r in self.renamed_from],
            "removed_in": self.removed_in,
            "absent": [{"removed_in": gone, "back_in": back} for gone, back in self.absent],
        }


@dataclass
class History:
    """Everything ``python -m cbuild history`` shows; :meth:`to_json` documents the shape."""

    baseline: str
    path: str
    shallow: bool
    commits_seen: int
    versions: list[Version]
    unreadable: list[Unreadable]
    fingerprint_changes: list[FingerprintChange]
    series: list[Series]

    def select(self, keyword: str | None = None, metric: str | None = None) -> History:
        """The series whose test (or an earlier name of it) matches the ``-k`` expression, of ``metric``."""
        match = keyword_matcher(keyword or "")
        chosen = [s for s in self.series if (metric is None or s.metric == metric) and match(s.names)]
        return replace(self, series=chosen)

    @property
    def metrics(self) -> list[str]:
        return sorted({s.metric for s in self.series})

    def to_json(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline,
            "path": self.path,
            "shallow": self.shallow,
            "commits_seen": self.commits_seen,
            "unreadable": [{**u.commit.to_json(), "reason": u.reason} for u in self.unreadable],
            "commits": [{**v.commit.to_json(), "fingerprint": dict(v.snapshot.fingerprint)} for v in self.versions],
            "fingerprint_changes": [{"commit": c.commit.short, "keys": list(c.keys)} for c in self.fingerprint_changes],
            "series": [s.to_json() for s in self.series],
        }


# -- which baseline -------------------------------------------------------------------------


def default_baseline(start: Path | None = None) -> Path:
    """The ``[tool.instrbudget] baseline`` of the nearest pyproject.toml with that table (relative to
    it), else ``.instrbudget/baseline.json`` next to the nearest pyproject.toml, else in ``start``."""
    start = Path.cwd() if start is None else start
    nearest: Path | None = None
    for directory in (start, *start.parents):
        path = directory / "pyproject.toml"
        if not path.is_file():
            continue
        try:
            doc = tomllib.loads(path.read_text())
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise CBuildError(f"cannot read {path} to find the baseline: {exc}") from None
        nearest = nearest or directory
        table = doc.get("tool", {}).get("instrbudget")
        if isinstance(table, dict):
            value = table.get("baseline", str(DEFAULT_PATH))
            if not isinstance(value, str) or not value:
                raise CBuildError(f"{path}: [tool.instrbudget] baseline: expected a path string, got {value!r}")
            return directory / Path(value).expanduser()  # as [tool.instrbudget] reads it
    return (nearest or start) / DEFAULT_PATH


def configured_baseline(start: Path) -> Path | None:
    """:func:`default_baseline`, or None where a pyproject.toml on the way cannot be read (it names
    no baseline anyone can rely on)."""
    try:
        return default_baseline(start)
    except CBuildError:
        return None


# -- reading git ----------------------------------------------------------------------------


def _git(args: Sequence[str], cwd: Path, what: str, stdin: bytes | None = None) -> bytes:
    """Run git; its failure is a :class:`CBuildError` about ``what`` (the baseline's path)."""
    command = ["git", "--no-pager", "--literal-pathspecs", "-c", "log.showSignature=false", *args]
    try:
        proc = subprocess.run(command, cwd=cwd, input=stdin, capture_output=True, check=False)
    except FileNotFoundError:
        raise CBuildError(f"git is not installed; it is needed to read the history of {what}") from None
    except OSError as exc:
        raise CBuildError(f"cannot run git to read the history of {what}: {exc.strerror}") from None
    if proc.returncode != 0:
        message = proc.stderr.decode(errors="replace").strip().splitlines()
        detail = message[-1].removeprefix("fatal: ") if message else f"exit status {proc.returncode}"
        raise CBuildError(f"cannot read the history of {what}: git {args[0]} failed ({detail})")
    return proc.stdout


def _locate(path: Path, what: str) -> tuple[Path, str, bool]:
    """The repository's top directory, the file's path in it, and whether the clone is shallow."""
    absolute = Path(os.path.abspath(path))
    directory, rest = absolute.parent, [absolute.name]
    while not directory.is_dir() and directory != directory.parent:
        directory, rest = directory.parent, [directory.name, *rest]
    try:
        out = _git(["rev-parse", "--is-shallow-repository", "--show-toplevel", "--show-prefix"], directory, what)
    except CBuildError as exc:
        if "not a git repository" in str(exc):
            raise CBuildError(f"{what} is not in a git repository, so it has no history to show") from None
        raise
    lines = os.fsdecode(out).split("\n")
    if len(lines) < 3 or not lines[1]:
        raise CBuildError(f"{what} is not in a git work tree, so it has no history to show")
    return Path(lines[1]), lines[2] + "/".join(rest), lines[0] == "true"


_HASH = re.compile(r"[0-9a-f]{40,64}\Z")


def _log(top: Path, path: str, what: str) -> list[tuple[Commit, str | None]]:
    """Commits that changed the file, newest first, each with the file's path there (None: deleted)."""
    out = _git(
        [
            "log",
            "--follow",
            "--first-parent",
            "--name-status",
            "-z",
            "--no-color",
            "--format=%H%x00%h%x00%aI%x00%s",
            "--",
            path,
        ],
        top,
        what,
    )
    tokens = [os.fsdecode(t) for t in out.split(b"\0")]
    entries: list[tuple[Commit, str | None]] = []
    at, current = 0, path
    while at + 3 < len(tokens) and _HASH.match(tokens[at].lstrip("\n")):
        commit = Commit(tokens[at].lstrip("\n"), tokens[at + 1], tokens[at + 2], tokens[at + 3])
        at += 4
        here: str | None = current
        if at < len(tokens) and tokens[at].startswith("\n"):  # a merge may have no diff line
            status = tokens[at].strip()
            names = tokens[at + 1 : at + (3 if status[:1] in "RC" else 2)]
            at += 1 + len(names)
            here = None if status == "D" else names[-1]
            if status[:1] == "R":
                current = names[0]  # older commits have the file under its old name
        entries.append((commit, here))
    return entries


def _contents(top: Path, specs: Sequence[str], what: str) -> list[bytes | str]:
    """Each ``<commit>:<path>``'s bytes, or why it has none: all through one ``git cat-file --batch``."""
    if not specs:
        return []
    out = _git(["cat-file", "--batch"], top, what, stdin="".join(f"{s}\n" for s in specs).encode())
    found: list[bytes | str] = []
    at = 0
    for _ in specs:
        end = out.index(b"\n", at)
        header = os.fsdecode(out[at:end])
        at = end + 1
        if header.endswith((" missing", " ambiguous")):
            found.append("is not at that commit")
            continue
        _, kind, size = header.rsplit(" ", 2)
        body = out[at : at + int(size)]
        at += int(size) + 1
        found.append(body if kind == "blob" else f"is a {kind}, not a file, at that commit")
    return found


def read_history(baseline: str | os.PathLike[str]) -> History:
    """Every committed version of ``baseline`` and the series they make.

    Raises :class:`CBuildError` when git is missing, the file is not in a git repository or
    was never committed.
    """
    what = os.fspath(baseline)
    top, path, shallow = _locate(Path(what), what)
    entries = _log(top, path, what)
    if not entries:
        missing = "" if Path(what).exists() else " (and there is no such file)"
        raise CBuildError(f"{what} has no history in git: the file was never committed{missing}")
    entries.reverse()
    kept = [(c, p) for c, p in entries if p is not None]
    contents = _contents(top, [f"{c.hash}:{p}" for c, p in kept], what)
    versions: list[Version] = []
    unreadable: list[Unreadable] = []
    for (commit, _), data in zip(kept, contents, strict=True):
        if isinstance(data, str):
            unreadable.append(Unreadable(commit, data))
            continue
        try:
            versions.append(Version(commit, decode(data)))
        except SnapshotError as exc:
            unreadable.append(Unreadable(commit, str(exc)))
    series, changes = build_series(versions)
    newest = entries[-1][1] or path
    return History(what, newest, shallow, len(entries), versions, unreadable, changes, series)


# -- series ---------------------------------------------------------------------------------


def _totals(snapshot: Snapshot, test: str) -> tuple[tuple[str, int], ...] | None:
    metrics = snapshot.tests[test]
    return tuple(sorted((m, c.total) for m, c in metrics.items())) or None


def _function_name(test: str) -> str | None:
    return test.rsplit("::", 1)[1] if "::" in test else None


def _renames(gone: list[str], new: list[str], old: Snapshot, now: Snapshot) -> list[tuple[str, str]]:
    """(old name, new name) pairs: matched by identical totals, then by the name after the last ``::``;
    a match counts only when its key is unique among both the gone and the new node ids."""
    pairs: list[tuple[str, str]] = []
    gone_left, new_left = list(gone), list(new)
    keys: list[tuple[Callable[[str], object], Callable[[str], object]]] = [
        (lambda t: _totals(old, t), lambda t: _totals(now, t)),
        (_function_name, _function_name),
    ]
    for old_key, new_key in keys:
        by_gone: dict[object, list[str]] = {}
        by_new: dict[object, list[str]] = {}
        for t in gone_left:
            if (k := old_key(t)) is not None:
                by_gone.setdefault(k, []).append(t)
        for t in new_left:
            if (k := new_key(t)) is not None:
                by_new.setdefault(k, []).append(t)
        for k, olds in by_gone.items():
            news = by_new.get(k, [])
            if len(olds) == 1 and len(news) == 1:
                pairs.append((olds[0], news[0]))
                gone_left.remove(olds[0])
                new_left.remove(news[0])
    return pairs


def build_series(versions: Sequence[Version]) -> tuple[list[Series], list[FingerprintChange]]:
    """The series of every (test, metric) over ``versions`` (oldest first), and where the fingerprint changed."""
    active: dict[str, dict[str, Series]] = {}
    ended: list[Series] = []
    changes: list[FingerprintChange] = []
    previous: Snapshot | None = None
    for index, version in enumerate(versions):
        snap, short = version.snapshot, version.commit.short
        if previous is not None and snap.fingerprint != previous.fingerprint:
            changes.append(FingerprintChange(version.commit, differing_keys(previous.fingerprint, snap.fingerprint)))
        if previous is not None:
            gone = [t for t in active if t not in snap.tests]
            new = [t for t in snap.tests if t not in active]
            for old_name, new_name in _renames(gone, new, previous, snap):
                track = active.pop(old_name)
                active[new_name] = track
                for s in track.values():
                    s.test = new_name
                    s.renamed_from.append(Rename(old_name, short))
        for test in [t for t in active if t not in snap.tests]:
            for s in active.pop(test).values():
                s.removed_in = short
                ended.append(s)
        for test, metrics in snap.tests.items():
            track = active.setdefault(test, {})
            for metric in [m for m in track if m not in metrics]:
                s = track.pop(metric)
                s.removed_in = short
                ended.append(s)
            for metric, cost in metrics.items():
                s = track.get(metric) or track.setdefault(metric, _resumed(ended, test, metric, short, snap))
                last = s.segments[-1]
                if last.fingerprint != snap.fingerprint:
                    changed = differing_keys(last.fingerprint, snap.fingerprint)
                    s.segments.append(Segment(dict(snap.fingerprint), changed=changed))
                s.segments[-1].points.append(Point(index, short, cost.total))
        previous = snap
    series = ended + [s for track in active.values() for s in track.values()]
    series.sort(key=lambda s: (display_order(s.test), s.metric, s.points[0].version))
    return series, changes


def _resumed(ended: list[Series], test: str, metric: str, short: str, snap: Snapshot) -> Series:
    """The series of a (test, metric) that appears in commit ``short``: the one that ended when the
    test was removed, if it had been (taken out of ``ended``, its gap noted), else a new one."""
    for i in range(len(ended) - 1, -1, -1):
        s = ended[i]
        if s.test == test and s.metric == metric and s.removed_in is not None:
            del ended[i]
            s.absent.append((s.removed_in, short))
            s.removed_in = None
            return s
    return Series(test, metric, [Segment(dict(snap.fingerprint))])


# -- -k expressions -------------------------------------------------------------------------

_TOKEN = re.compile(r"\s*(\(|\)|[^\s()]+)")
_Test = Callable[[list[str]], bool]


def keyword_matcher(expression: str) -> Callable[[Iterable[str]], bool]:
    """pytest-like ``-k``: case-insensitive substrings of the names, combined with ``not``, ``and``,
    ``or`` and parentheses; an empty expression matches everything."""
    tokens: list[str] = _TOKEN.findall(expression)
    if not tokens:
        return lambda names: True
    at = 0

    def fail(why: str) -> CBuildError:
        return CBuildError(f"-k {expression!r}: {why}")

    def peek() -> str | None:
        return tokens[at] if at < len(tokens) else None

    def take() -> str:
        nonlocal at
        at += 1
        return tokens[at - 1]

    def either() -> _Test:
        parts = [both()]
        while peek() == "or":
            take()
            parts.append(both())
        return parts[0] if len(parts) == 1 else lambda names: any(p(names) for p in parts)

    def both() -> _Test:
        parts = [negated()]
        while peek() == "and":
            take()
            parts.append(negated())
        return parts[0] if len(parts) == 1 else lambda names: all(p(names) for p in parts)

    def negated() -> _Test:
        token = peek()
        if token is None:
            raise fail("expected a name at the end")
        take()
        if token == "not":
            inner = negated()
            return lambda names: not inner(names)
        if token == "(":
            inner = either()
            if peek() != ")":
                raise fail("a '(' is not closed")
            take()
            return inner
        if token in (")", "and", "or"):
            raise fail(f"unexpected {token!r}")
        needle = token.lower()
        return lambda names: any(needle in n for n in names)

    test = either()
    if at != len(tokens):
        raise fail(f"unexpected {tokens[at]!r}")
    return lambda names: test([n.lower() for n in names])


# -- terminal -------------------------------------------------------------------------------

_HEADER = ("test", "metric", "history", "first", "last", "change", "n", "note")
_RIGHT = {3, 4, 5, 6}
_SPARK_MAX = 40
_SPARK_MIN = 4
#: The width test names keep before notes move under their rows.
_NAME_ROOM = 24


def _axis(history: History) -> list[tuple[str, int]]:
    """The sparkline's columns: ("v", version index) per version, ("|", index) before a fingerprint change."""
    changed = {c.commit.hash for c in history.fingerprint_changes}
    columns: list[tuple[str, int]] = []
    for i, v in enumerate(history.versions):
        if i and v.commit.hash in changed:
            columns.append(("|", i))
        columns.append(("v", i))
    used = [p.version for s in history.series for p in s.points]
    if used:  # leave out versions before the first selected point
        first = min(used)
        columns = [c for c in columns if c[1] > first or (c[1] == first and c[0] == "v")]
    return columns


def _cells(series: Series, columns: Sequence[tuple[str, int]]) -> list[int | str | None]:
    values = {p.version: p.value for p in series.points}
    lo, hi = min(values), max(values)
    return [(BREAK if lo < i <= hi else None) if kind == "|" else values.get(i) for kind, i in columns]


def _change(series: Series) -> str:
    """Percent change from the first value to the last (a nonzero change never shows as 0.00%);
    ┊-marked when it spans a model change."""
    mark = BREAK if len(series.segments) > 1 else ""
    points = series.points
    first, last = points[0].value, points[-1].value
    if len(points) < 2 or (first == 0 and last != 0):
        return mark + "—"
    if first == last:
        return mark + "0.00%"
    percent = 100.0 * (last - first) / first
    return mark + (f"{percent:+.2f}%" if abs(percent) >= 0.005 else f"{'+' if percent > 0 else '-'}<0.01%")


def _note(series: Series) -> str:
    notes = [f"renamed from {r.old} in {r.commit}" for r in series.renamed_from]
    changes = [s.points[0].commit for s in series.segments[1:]]
    if changes:
        notes.append(f"model change {changes[0]}" if len(changes) == 1 else f"{len(changes)} model changes")
    notes += [f"removed in {gone}, back in {back}" for gone, back in series.absent]
    if series.removed_in:
        notes.append(f"removed in {series.removed_in}")
    return "; ".join(notes)


def _footer(history: History) -> list[str]:
    lines: list[str] = []
    n = history.commits_seen
    seen = f"{n} commit{'s' if n != 1 else ''} changed {history.baseline}"
    if history.versions:
        first, last = history.versions[0].commit, history.versions[-1].commit
        lines.append(f"{seen} ({first.short} {first.date[:10]} .. {last.short} {last.date[:10]})")
    else:
        lines.append(f"{seen}; none of its versions could be read")
    if history.fingerprint_changes:
        shown = ", ".join(f"{c.commit.short} ({' '.join(c.keys)})" for c in history.fingerprint_changes)
        lines.append(
            f"{BREAK} model changes (fingerprint keys that differ; a {BREAK}-marked change spans one): {shown}"
        )
    if history.shallow:
        lines.append(
            f"shallow clone: {n} commit{'s' if n != 1 else ''} of the "
            "baseline's history seen; `git fetch --unshallow` for all"
        )
    if history.unreadable:
        bad = len(history.unreadable)
        reasons = "; ".join(f"{u.commit.short}: {u.reason}" for u in history.unreadable)
        lines.append(f"{bad} version{'s' if bad != 1 else ''} could not be read: {reasons}")
    return lines


def render_text(history: History, width: int, *, empty: str = "no series to show", show_all: bool = False) -> str:
    """The table of ``history``'s changed series (``show_all``: then the unchanged ones), a line
    counting those left out, then commits seen, model changes, shallow clone and unreadable
    versions, wrapped to ``width``; ``empty`` replaces the table when there is no series.

    Test and metric names, values and changes are never cut: to fit ``width`` notes move onto a
    line under their row, sparklines keep their newest points, and a test name longer than its
    column goes on a line of its own.
    """
    width = max(width, 8)
    lines: list[str] = []
    columns = _axis(history)
    changed = [s for s in history.series if s.changed]
    series = changed + [s for s in history.series if not s.changed] if show_all else changed
    left_out = len(history.series) - len(series)
    if series:
        rows = [
            [s.test, s.metric, "", f"{s.points[0].value:,}", f"{s.points[-1].value:,}", _change(s), str(len(s.points))]
            for s in series
        ]
        notes = [_note(s) for s in series]
        header = list(_HEADER[:-1])
        longest = max(len(r[0]) for r in rows)
        spark = min(len(columns), _SPARK_MAX)
        # Rows' sparkline cells are empty for now: the columns' width but for names and sparklines.
        fixed = texttable.width_without(header, rows, 0) - len(_HEADER[2])

        def room(spark: int, note: int | None = None) -> int:
            """What names keep with sparklines of ``spark`` points and a note column ``note`` wide."""
            return width - fixed - max(len(_HEADER[2]), spark) - (note + 2 if note else 0)

        below: list[str] = notes
        note = max(len(_HEADER[-1]), *map(len, notes)) if any(notes) else 0
        if note and room(spark, note) >= min(longest, _NAME_ROOM):
            header.append(_HEADER[-1])
            rows = [[*r, n] for r, n in zip(rows, notes, strict=True)]
            below = []
        else:
            note = 0
        if room(spark) < longest:
            # Sparklines shorten (to 8 points) to keep every name on its row; if that is not
            # enough, names go on lines of their own and sparklines get what is left.
            inline = max(width - fixed - (note + 2 if note else 0) - longest, 8)
            spark = min(spark, inline) if room(min(spark, inline)) >= longest else max(room(0) - 4, _SPARK_MIN)
            spark = min(max(spark, len(_HEADER[2])), len(columns), _SPARK_MAX)  # the header's width is free
        for row, s in zip(rows, series, strict=True):
            cells = _cells(s, columns)
            row[2] = sparkline(cells) if len(cells) <= spark else ELLIPSIS + sparkline(cells[len(cells) - spark + 1 :])
        lines += texttable.render(header, rows, right=_RIGHT, width=width, rule=False, below=below)
    elif not left_out:
        lines.extend(textwrap.wrap(empty, width, break_on_hyphens=False))
    if left_out:
        what = "every series is unchanged" if not series else f"{left_out} unchanged series not listed"
        lines.extend(textwrap.wrap(f"{what} (--all lists them)", width, break_on_hyphens=False))
    lines.append("")
    for text in _footer(history):
        lines.extend(textwrap.wrap(text, width, break_on_hyphens=False) or [""])
    return "\n".join(lines) + "\n"
