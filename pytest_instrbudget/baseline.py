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

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cbuild.cache import atomic_write
from cbuild.costs import Cost

VERSION = 1


class BaselineError(Exception):
    """The baseline file cannot be used; the message names the file."""


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
            doc = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise BaselineError(
                f"baseline {path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
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
                if not all(isinstance(v, int) for v in regions.values()):
                    raise ValueError(f"{nodeid} {metric}: region costs must be integers")
                if not isinstance(total, int) or isinstance(total, bool):
                    raise ValueError(f"{nodeid} {metric}: total {total!r} is not an integer")
                if not all(isinstance(v, int) for v in functions.values()):
                    raise ValueError(f"{nodeid} {metric}: function costs must be integers")
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
        """Write atomically: readers see the old file or the new one, never a mix."""
        text = json.dumps(self.to_doc(), indent=2, sort_keys=True) + "\n"
        atomic_write(self.path, text.encode())
