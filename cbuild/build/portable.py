"""Paths in cache keys, written so that they do not depend on where things lie.

A project copied to another directory, a CI runner with another workspace or a venv
elsewhere builds the same things: the cache keys name files under the project's directory
(``BuildOptions.root``) as ``<project>/src/a.c`` and the engine's headers as
``<engine>/instrbudget.h``, and the build's debug information names project files
relative to it (``-ffile-prefix-map``), so a cached build is right wherever it is used.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

PROJECT = "<project>"
ENGINE = "<engine>"


class PathMap:
    """Absolute directories and the tokens that stand for them in keys (longest first)."""

    def __init__(self, root: Path | None, engine: Path | None = None) -> None:
        places: dict[str, str] = {}
        for directory, token in ((root, PROJECT), (engine, ENGINE)):
            if directory is not None:
                places[str(directory)] = token
                places[str(directory.resolve())] = token
        self.places = sorted(places.items(), key=lambda kv: -len(kv[0]))
        self._tokens = {token: Path(directory) for directory, token in reversed(self.places)}
        # A directory ends where a path, a flag's value (``-ffile-prefix-map=D=.``) or a list does.
        alternatives = "|".join(f"{re.escape(d)}(?=[/=:]|$)" for d, _ in self.places)
        self._pattern = re.compile(alternatives) if self.places else None
        self._lookup = dict(self.places)

    def text(self, arg: str) -> str:
        """``arg`` with each directory replaced by its token."""
        if self._pattern is None:
            return arg
        return self._pattern.sub(lambda m: self._lookup[m.group(0)], arg)

    def real(self, text: str) -> str:
        """``text`` (a :meth:`text` result, such as clang's diagnostics) with each token replaced
        by its directory here."""
        for token, directory in self._tokens.items():
            text = text.replace(token, str(directory))
        return text

    def args(self, args: Sequence[str]) -> list[str]:
        return [self.text(a) for a in args]

    def path(self, text: str) -> Path:
        """The file a :meth:`text` result names here."""
        token, sep, rest = text.partition("/")
        base = self._tokens.get(token)
        return base / rest if base is not None and sep else Path(text)
