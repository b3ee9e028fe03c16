"""The baseline snapshot's document: per test and metric, a total with per-function and per-region costs.

The plugin reads and writes it (``pytest_instrbudget.baseline``); ``python -m cbuild history``
reads its past versions out of git. Layout (sorted keys, two-space indent, one trailing newline)::

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
from typing import Any, TypeGuard

from cbuild.models.costs import Cost

VERSION = 1
#: Where a project keeps its baseline unless ``[tool.instrbudget] baseline`` says otherwise.
DEFAULT_PATH = Path(".instrbudget/baseline.json")


class SnapshotError(ValueError):
    """The document is not a snapshot; the message says why and where (without naming the file)."""


@dataclass
class Snapshot:
    """Decoded snapshot: the fingerprint it was made with, and test -> metric -> Cost."""

    fingerprint: dict[str, str] = field(default_factory=dict)
    tests: dict[str, dict[str, Cost]] = field(default_factory=dict)

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

    def dumps(self) -> str:
        """The file's text."""
        return json.dumps(self.to_doc(), indent=2, sort_keys=True) + "\n"


def differing_keys(old: dict[str, str], new: dict[str, str]) -> tuple[str, ...]:
    """The fingerprint keys whose values differ between two snapshots (sorted)."""
    return tuple(sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k)))


def _no_constant(name: str) -> Any:
    """JSON has no NaN or Infinity; Python's reader would accept them."""
    raise ValueError(f"{name} is not a number JSON allows")


def is_count(value: object) -> TypeGuard[int]:
    """Whether ``value`` is a cost a snapshot can hold: a non-negative integer."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def decode(data: bytes) -> Snapshot:
    """Parse a snapshot file's bytes; :class:`SnapshotError` says what is wrong."""
    try:
        doc = json.loads(data.decode("utf-8"), parse_constant=_no_constant)
    except ValueError as exc:  # bad JSON, bytes that are not UTF-8, NaN or Infinity
        conflict = conflict_marker(data)
        if conflict is not None:
            raise SnapshotError(
                f"has merge conflict markers (line {conflict}): resolve the conflict, or rewrite it with "
                "--instrbudget-update"
            ) from None
        if isinstance(exc, json.JSONDecodeError):
            if not exc.doc.strip():
                raise SnapshotError("is empty") from None
            why = f"line {exc.lineno}, column {exc.colno}: {exc.msg}"
        elif isinstance(exc, UnicodeDecodeError):
            why = f"byte {exc.start} is not UTF-8 text"
        else:
            why = str(exc)
        raise SnapshotError(f"is not valid JSON ({why})") from None
    try:
        return _from_doc(doc)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        why = str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
        raise SnapshotError(f"does not have the expected layout ({why})") from None


def conflict_marker(data: bytes) -> int | None:
    """The line of the first merge conflict marker git leaves in a file (``<<<<<<< ours``), if any."""
    for number, line in enumerate(data.splitlines(), 1):
        if line.startswith((b"<<<<<<< ", b">>>>>>> ")) or line.rstrip() in (b"<<<<<<<", b">>>>>>>"):
            return number
    return None


def _from_doc(doc: Any) -> Snapshot:
    if not isinstance(doc, dict):
        raise ValueError("top level is not an object")
    if "collected" in doc and "metric_models" in doc:
        raise ValueError("it is a run's --instrbudget-json document, not a baseline")
    if doc.get("version") != VERSION:
        raise ValueError(f"version {doc.get('version')!r}, expected {VERSION}")
    for key in ("fingerprint", "tests"):
        if not isinstance(doc.get(key), dict):
            raise ValueError(f"{key!r} is {'missing' if key not in doc else 'not an object'}")
    fingerprint = {str(k): str(v) for k, v in doc["fingerprint"].items()}
    tests: dict[str, dict[str, Cost]] = {}
    for nodeid, metrics in doc["tests"].items():
        if not isinstance(metrics, dict):
            raise ValueError(f"{nodeid}: its entry is not an object of metrics")
        entry: dict[str, Cost] = {}
        for metric, value in metrics.items():
            if not isinstance(value, dict) or "total" not in value:
                raise ValueError(f"{nodeid} {metric}: no total")
            total = value["total"]
            functions = value.get("functions", {})
            regions = value.get("regions", {})
            if not is_count(total):
                raise ValueError(f"{nodeid} {metric}: total {total!r} is not a non-negative integer")
            for kind, costs in (("function", functions), ("region", regions)):
                if not isinstance(costs, dict):
                    raise ValueError(f"{nodeid} {metric}: its {kind}s are not an object")
                bad = next((f"{k} = {v!r}" for k, v in costs.items() if not is_count(v)), None)
                if bad is not None:
                    raise ValueError(f"{nodeid} {metric}: {kind} cost {bad} is not a non-negative integer")
            entry[metric] = Cost(metric, total, dict(functions), dict(regions))
        tests[nodeid] = entry
    return Snapshot(fingerprint, tests)
