"""One run split across CI jobs: merging the shards' ``--instrbudget-json`` documents, and
writing the merged results into the baseline.

``python -m cbuild merge shard-*.json -o all.json`` checks that the documents belong to one
run (the same toolchain, models and baseline, the same commit and collected tests), reports tests that
ran in two shards or in none, and writes one document as a single run of the whole suite
would have. ``python -m cbuild baseline update all.json`` then writes the baseline with the
rules of ``--instrbudget-update`` (:mod:`cbuild.report.update`); ``--prune`` only from a
merged run that covered every collected test.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cbuild.errors import CBuildError, describe_os_error
from cbuild.models.costs import Cost
from cbuild.report import update
from cbuild.report.history import configured_baseline
from cbuild.report.order import display_order
from cbuild.report.outputs import keep_damaged, locked, write_output
from cbuild.report.snapshot import DEFAULT_PATH, Snapshot, SnapshotError, decode

#: The document keys a shard must have for merging (written by the plugin since shards are supported).
_SHARD_KEYS = ("fingerprint", "models", "baseline", "root", "collected", "selected", "metric_models", "tests")


@dataclass
class Merged:
    """The merged document and what the shards did not cover exactly once."""

    doc: dict[str, Any]
    #: Test -> the documents that ran it, for tests run by more than one.
    twice: dict[str, list[str]] = field(default_factory=dict)
    #: Collected tests no shard ran.
    missing: list[str] = field(default_factory=list)


def load(path: Path) -> dict[str, Any]:
    """A shard's ``--instrbudget-json`` document; an error names the file and what is wrong."""
    try:
        doc = json.loads(path.read_bytes())
    except OSError as exc:
        raise CBuildError(f"cannot read {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise CBuildError(f"{path} is not valid JSON: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("tests"), dict) or "version" not in doc:
        raise CBuildError(f"{path} is not a --instrbudget-json document")
    lacking = [key for key in _SHARD_KEYS if key not in doc]
    if "models" not in doc and "metric_models" not in doc and "fingerprint" in doc:  # a baseline's keys
        raise CBuildError(
            f"{path} is a baseline, not a --instrbudget-json document (the file pytest --instrbudget-json=FILE writes)"
        )
    if lacking:
        raise CBuildError(
            f"{path} lacks {', '.join(lacking)}: it was written by an older pytest-instrbudget; "
            "run the shards again with this version"
        )
    if doc.get("disabled"):  # its selected tests would read as run, and its budgets as checked
        raise CBuildError(
            f"{path} is of a run with --instrbudget-disable: it measured nothing and checked no budget; "
            "run the shard again without it"
        )
    return doc


def checkout_commit(root: Path) -> str | None:
    """The git commit checked out in ``root``, recorded in a run's document so that shards of other
    code are not merged; None outside a git checkout, or where git is missing or refuses."""
    try:
        proc = subprocess.run(
            ["git", "rev-parse", "--verify", "--quiet", "HEAD"], cwd=root, capture_output=True, check=False, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    commit = proc.stdout.decode(errors="replace").strip()
    return commit if proc.returncode == 0 and commit else None


def _baseline_in_project(doc: dict[str, Any]) -> str:
    """The baseline's path relative to the project's directory (shards may run in other checkouts)."""
    return os.path.relpath(str(doc["baseline"]), str(doc["root"]))


def merge(documents: Sequence[tuple[Path, dict[str, Any]]]) -> Merged:
    """The documents of one run's shards as one document; different runs are refused, naming the file."""
    if not documents:
        raise CBuildError("no documents to merge")
    first_path, first = documents[0]
    session = update.session_part(first["fingerprint"])
    chosen: dict[str, str] = {}  # models.NAME -> description
    ran: dict[str, list[str]] = {}
    merged_tests: dict[str, Any] = {}
    selected: set[str] = set()
    for path, doc in documents:
        differs = sorted(
            key
            for key in set(session) | set(update.session_part(doc["fingerprint"]))
            if session.get(key) != doc["fingerprint"].get(key)
        )
        if differs:
            raise CBuildError(
                f"{path} was measured with another toolchain or other models than {first_path} "
                f"(differs in: {', '.join(differs)}); shards of one run share them"
            )
        if doc["models"] != first["models"]:
            raise CBuildError(f"{path} measured the models {doc['models']}, {first_path} {first['models']}")
        if doc.get("commit") != first.get("commit"):
            raise CBuildError(
                f"{path} was measured at commit {doc.get('commit') or '(none recorded)'}, {first_path} at "
                f"{first.get('commit') or '(none recorded)'}: shards of one run measure the same code"
            )
        if _baseline_in_project(doc) != _baseline_in_project(first):
            raise CBuildError(
                f"{path} compares with the baseline {_baseline_in_project(doc)}, {first_path} with "
                f"{_baseline_in_project(first)}"
            )
        if set(doc["collected"]) != set(first["collected"]):
            only = sorted(set(doc["collected"]) ^ set(first["collected"]))
            raise CBuildError(
                f"{path} and {first_path} collected different tests ({len(only)} differ, e.g. {', '.join(only[:3])}): "
                "shards of one run collect the same suite"
            )
        for key, value in doc["fingerprint"].items():
            if key.startswith(update.MODEL_KEY) and chosen.setdefault(key, value) != value:
                raise CBuildError(f"{path} measured {key} with other parameters ({value}) than another shard")
        selected.update(doc["selected"])
        for nodeid in doc["selected"]:
            ran.setdefault(nodeid, []).append(str(path))
        for nodeid, result in doc["tests"].items():
            merged_tests.setdefault(nodeid, result)
    doc = {
        **first,
        "fingerprint": {**session, **dict(sorted(chosen.items()))},
        "selected": sorted(selected),
        "partial_files": sorted({f for _, d in documents for f in d.get("partial_files", [])}),
        "metric_models": dict(sorted({k: v for _, d in documents for k, v in d["metric_models"].items()}.items())),
        "tests": dict(sorted(merged_tests.items())),
    }
    twice = {n: paths for n, paths in sorted(ran.items(), key=lambda kv: display_order(kv[0])) if len(paths) > 1}
    missing = sorted(set(first["collected"]) - selected, key=display_order)
    return Merged(doc, twice, missing)


def missing(doc: dict[str, Any]) -> list[str]:
    """Collected tests the (merged) run did not run."""
    return sorted(set(doc["collected"]) - set(doc["selected"]), key=display_order)


def measured(doc: dict[str, Any]) -> dict[str, update.Measured]:
    """The document's tests as the baseline sees them (function names back to their symbols)."""
    out = {}
    for nodeid, result in doc["tests"].items():
        costs = {}
        for metric, m in result["metrics"].items():
            symbols = m.get("symbols", {})
            functions = {symbols.get(name, name): value for name, value in m["functions"].items()}
            costs[metric] = Cost(metric, m["value"], functions, dict(m.get("regions", {})))
        out[nodeid] = update.Measured(result.get("completed", True), costs, tuple(result.get("unavailable", {})))
    return out


@dataclass
class Written:
    """What :func:`update_baseline` did."""

    path: Path
    result: update.Update
    stale: list[str]
    #: Said of the baseline as it was: a damaged one is rewritten from the run, as --instrbudget-update does.
    note: str | None = None


def update_baseline(doc: dict[str, Any], root: Path, *, path: Path | None = None, prune: bool = False) -> Written:
    """Write a (merged) run's results into the baseline of the checkout in ``root`` (its root
    directory; the shards may have run in other checkouts), as ``--instrbudget-update`` would at
    the end of that run; ``path`` overrides the baseline the document names."""
    left = missing(doc)
    if prune and left:
        raise CBuildError(
            f"--prune needs a run that covered every collected test; {len(left)} did not run "
            f"(e.g. {', '.join(left[:3])}): merge every shard of the run"
        )
    if path is None:
        inside = _baseline_in_project(doc)
        escapes = inside == os.pardir or inside.startswith(os.pardir + os.sep)
        # Outside the project: this checkout's only where its own configuration puts it there.
        own = configured_baseline(root) or root / DEFAULT_PATH
        if escapes and os.path.normpath(root / inside) != os.path.normpath(own):
            raise CBuildError(
                f"the run's baseline {doc['baseline']} is outside its project {doc['root']}, so it has no place in "
                "this checkout: give the baseline to update with --baseline PATH"
            )
        path = root / inside
    try:
        return _write(doc, root, path, prune)
    except OSError as exc:
        raise CBuildError(f"cannot write the baseline {path}: {describe_os_error(exc)}") from None


def _write(doc: dict[str, Any], root: Path, path: Path, prune: bool) -> Written:
    fingerprint: dict[str, str] = doc["fingerprint"]
    session = update.session_part(fingerprint)
    note = None
    with locked(path):
        base: Snapshot | None = None
        if path.exists():
            try:
                base = decode(path.read_bytes())
            except OSError as exc:
                raise CBuildError(f"baseline {path} cannot be read: {exc.strerror}") from None
            except SnapshotError as exc:
                base = None  # damaged: rewritten from this run, as --instrbudget-update does
                note = f"baseline {path} {exc}; it is rewritten from this run"
        recorded = base.fingerprint if base is not None else {}

        def describe(name: str) -> str:
            key = update.MODEL_KEY + name
            if key in fingerprint:
                return fingerprint[key]
            if key in recorded:  # not measured in this run: its parameters as the baseline has them
                return recorded[key]
            raise CBuildError(f"the run does not describe the cost model {name}")

        results = measured(doc)
        stale = update.stale(
            base.tests if base is not None else {},
            collected=set(doc["collected"]),
            measured=set(results),
            partial=set(doc.get("partial_files", [])),
            root=root,
        )
        result = update.apply(
            path,
            base,
            results,
            session=session,
            update=True,
            prune=prune,
            stale_entries=stale,
            metric_models=doc["metric_models"],
            session_models=set(doc["models"]),
            describe=describe,
        )
        if result.refused is None and result.write:
            if note is not None:  # the damaged file kept first: a shard's run has some tests only
                note += f"; the damaged file is kept as {keep_damaged(path)}"
            write_output(path, Snapshot(result.fingerprint, result.tests).dumps().encode())
    return Written(path, result, stale, note)
