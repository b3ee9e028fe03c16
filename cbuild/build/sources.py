"""Source files of a build: one translation unit with settings of its own, and glob patterns."""

from __future__ import annotations

import functools
import glob
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path

from cbuild.errors import BuildDescriptionError

_MAGIC = frozenset("*?[")


@dataclass(frozen=True)
class Source:
    """One translation unit and the compiler settings of its own, on top of the build's ``BuildOptions``.

    ``flags`` come before the build's own on clang's command line: a define or ``-std=``
    given to the whole build wins, and the source's include directories are searched first.
    """

    path: Path
    #: Defines, include directories, ``-std=`` and the like of this source alone (absolute paths).
    flags: tuple[str, ...] = field(default=())
    #: Directory clang runs in; None: the current one.
    cwd: Path | None = None

    def __post_init__(self) -> None:
        # As a user writes them: a str path, a list of flags (a tuple is part of cache keys).
        object.__setattr__(self, "path", Path(self.path))
        if isinstance(self.flags, str):
            raise BuildDescriptionError(f"Source({self.path}): flags is a list of flags, not the string {self.flags!r}")
        object.__setattr__(self, "flags", tuple(self.flags))
        if self.cwd is not None:
            object.__setattr__(self, "cwd", Path(self.cwd))

    @classmethod
    def of(cls, source: Source | Path | str) -> Source:
        """``source`` itself, or a path as a source with no settings of its own."""
        return source if isinstance(source, Source) else cls(Path(source))


def is_pattern(text: str) -> bool:
    """True when ``text`` holds glob characters (``*``, ``?``, ``[``)."""
    return not _MAGIC.isdisjoint(text)


def split_exclusions(sources: Sequence[str | Path]) -> tuple[list[str | Path], list[str]]:
    """``sources`` without their exclusions (entries ``!pattern``), and the exclusions' patterns."""
    kept: list[str | Path] = []
    exclusions: list[str] = []
    for source in sources:
        if isinstance(source, str) and source.startswith("!"):
            if not source[1:]:
                raise BuildDescriptionError("an exclusion '!' names no file or pattern")
            exclusions.append(source[1:])
        else:
            kept.append(source)
    return kept, exclusions


def without(paths: Sequence[Path], exclusions: Sequence[str], base: Path) -> list[Path]:
    """``paths`` without those an exclusion (a path or glob relative to ``base``) matches.

    An exclusion that matches none of them is an error naming it (a misspelt one would exclude
    nothing, silently), and so is one that leaves nothing to build."""
    kept = list(paths)
    for pattern in exclusions:
        parts = pattern_parts(pattern, base)
        left = [p for p in kept if not matches(p.resolve(), parts)]
        if len(left) == len(kept):
            names = ", ".join(os.path.relpath(p, base) for p in kept[:6]) + (", ..." if len(kept) > 6 else "")
            raise BuildDescriptionError(f"the exclusion !{pattern} (in {base}) matches none of the sources ({names})")
        kept = left
    if paths and not kept:
        raise BuildDescriptionError(f"the exclusions {', '.join('!' + e for e in exclusions)} leave no source to build")
    return kept


def expand(sources: Sequence[str | Path], base: Path) -> list[Path]:
    """``sources`` relative to ``base``, each glob pattern replaced by the files it matches (sorted;
    ``**`` spans directories), then without the files of its exclusions (``!pattern`` entries,
    :func:`without`); a pattern matching no file is an error naming it and ``base``."""
    sources, exclusions = split_exclusions(sources)
    paths: list[Path] = []
    from_patterns: set[Path] = set()
    for source in sources:
        path = base / source
        if not is_pattern(str(source)) or path.exists():
            paths.append(path)
            continue
        rooted = str(source) if Path(source).is_absolute() else os.path.join(glob.escape(str(base)), str(source))
        found = sorted(Path(p) for p in glob.glob(rooted, recursive=True) if os.path.isfile(p))
        if not found:
            raise BuildDescriptionError(f"no file matches the pattern {source} (in {base})")
        # A file two patterns match is built once, also when they reach it through a symbolic link.
        for p in found:
            if p.resolve() not in from_patterns:
                from_patterns.add(p.resolve())
                paths.append(p)
    return without(paths, exclusions, base)


def pattern_parts(pattern: str | Path, base: Path) -> tuple[str, ...]:
    """The components of ``pattern`` made absolute against ``base``, its literal leading
    directories resolved (symbolic links followed) so that it compares with resolved paths."""
    parts = (base / pattern).parts
    literal = 0
    while literal < len(parts) - 1 and not is_pattern(parts[literal]):
        literal += 1
    return (*Path(*parts[:literal]).resolve().parts, *parts[literal:])


def matches(path: Path, pattern: tuple[str, ...]) -> bool:
    """Whether absolute ``path`` matches the components of a pattern (``*``, ``?``, ``[...]`` within
    one component, ``**`` any number of them)."""
    parts = path.parts

    @functools.cache
    def match(i: int, j: int) -> bool:
        if j == len(pattern):
            return i == len(parts)
        if pattern[j] == "**":
            return match(i, j + 1) or (i < len(parts) and match(i + 1, j))
        return i < len(parts) and fnmatchcase(parts[i], pattern[j]) and match(i + 1, j + 1)

    return match(0, 0)
