"""The committed baseline: per test and metric, the last accepted total and per-function costs.

File layout (sorted keys, two-space indent, one trailing newline)::

    {
      "fingerprint": {"clang": "22.1.8", "llvm": "22.1.0", "pipeline": "1", "target": "x86_64-linux-gnu"},
      "tests": {
        "tests/test_sort.py::test_sort_1000": {
          "ir_instructions": {"functions": {"mk_sort_ints": 118000}, "total": 119872}
        }
      },
      "version": 1
    }
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cbuild.cache import atomic_write
from cbuild.costs import Cost

VERSION = 1


class BaselineError(Exception):
    """The baseline file cannot be used; the message names the file."""


def _no_constant(name: str) -> Any:
    """JSON has no NaN or Infinity; Python's reader would accept them."""
    raise ValueError(f"{name} is not a number JSON allows")


def _count(value: object) -> bool:
    """Whether ``value`` is a cost a baseline can hold: a non-negative integer."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


@dataclass
class Baseline:
    """Baseline entries: test node id -> metric -> Cost."""

    path: Path
    fingerprint: dict[str, str] = field(default_factory=dict)
    tests: dict[str, dict[str, Cost]] = field(default_factory=dict)
    exists: bool = False

    @classmethod
    def load(cls, path: Path) -> Baseline:
        """Read ``path``; a missing file is an empty baseline, a damaged one an error."""
        if not path.exists():
            return cls(path)
        try:
            doc = json.loads(path.read_bytes().decode("utf-8"), parse_constant=_no_constant)
        except ValueError as exc:  # bad JSON, bytes that are not UTF-8, NaN or Infinity
            if isinstance(exc, json.JSONDecodeError):
                why = f"line {exc.lineno}, column {exc.colno}: {exc.msg}"
            elif isinstance(exc, UnicodeDecodeError):
                why = f"byte {exc.start} is not UTF-8 text"
            else:
                why = str(exc)
            raise BaselineError(
                f"baseline {path} is not valid JSON ({why}); "
                f"fix it, restore it from version control, or rewrite it with --instrbudget-update"
            ) from None
        except OSError as exc:
            raise BaselineError(f"baseline {path} cannot be read: {exc}") from None
        try:
            return cls._from_doc(path, doc)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise BaselineError(
                f"baseline {path} does not have the expected layout ({type(exc).__name__}: {exc}); "
                f"fix it, restore it from version control, or rewrite it with --instrbudget-update"
            ) from None

    @classmethod
    def _from_doc(cls, path: Path, doc: Any) -> Baseline:
        if not isinstance(doc, dict):
            raise TypeError("top level is not an object")
        if doc.get("version") != VERSION:
            raise ValueError(f"version {doc.get('version')!r}, expected {VERSION}")
        fingerprint = {str(k): str(v) for k, v in doc["fingerprint"].items()}
        tests: dict[str, dict[str, Cost]] = {}
        for nodeid, metrics in doc["tests"].items():
            entry: dict[str, Cost] = {}
            for metric, value in metrics.items():
                total = value["total"]
                functions = value.get("functions", {})
                regions = value.get("regions", {})
                if not _count(total):
                    raise ValueError(f"{nodeid} {metric}: total {total!r} is not a non-negative integer")
                for kind, costs in (("function", functions), ("region", regions)):
                    bad = next((f"{k} = {v!r}" for k, v in costs.items() if not _count(v)), None)
                    if bad is not None:
                        raise ValueError(f"{nodeid} {metric}: {kind} cost {bad} is not a non-negative integer")
                entry[metric] = Cost(metric, total, dict(functions), dict(regions))
            tests[nodeid] = entry
        return cls(path, fingerprint, tests, exists=True)

    def to_doc(self) -> dict[str, Any]:
        """The JSON document, ready to dump with sorted keys."""
        return {
            "version": VERSION,
            "fingerprint": dict(self.fingerprint),
            "tests": {
                nodeid: {
                    metric: {
                        "total": cost.total,
                        "functions": dict(cost.functions),
                        **({"regions": dict(cost.regions)} if cost.regions else {}),
                    }
                    for metric, cost in metrics.items()
                }
                for nodeid, metrics in self.tests.items()
            },
        }

    def save(self) -> None:
        """Write atomically: readers see the old file or the new one, never a mix.

        A file that exists keeps its permissions (a read-only baseline stays read-only).
        """
        text = json.dumps(self.to_doc(), indent=2, sort_keys=True) + "\n"
        try:
            mode = stat.S_IMODE(self.path.stat().st_mode)
        except FileNotFoundError:
            mode = 0o644
        atomic_write(self.path, text.encode(), mode=mode)


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold the lock of the baseline at ``path`` (other sessions updating it wait).

    The lock is on the baseline's directory, since the file itself is replaced on
    every write; it is released when the process ends, however it ends.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
