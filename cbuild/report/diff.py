"""Differences between two runs: baselines or ``--instrbudget-json`` documents.

``python -m cbuild diff OLD.json NEW.json`` prints the tests whose costs changed, with
the functions and regions that changed most; ``--markdown`` renders the same as a
markdown table for a CI job summary.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cbuild.build.demangle import readable_names
from cbuild.errors import CBuildError
from cbuild.report import update
from cbuild.report.markdown import table_code
from cbuild.report.order import display_order
from cbuild.report.snapshot import conflict_marker, differing_keys, is_count


@dataclass(frozen=True)
class Entry:
    """One metric of one test in a run."""

    total: int
    functions: dict[str, int] = field(default_factory=dict)
    regions: dict[str, int] = field(default_factory=dict)


Run = dict[str, dict[str, Entry]]  # test -> metric -> entry


def load_run(path: Path, incomplete: list[str] | None = None, unavailable: dict[str, list[str]] | None = None) -> Run:
    """Read a baseline or a results document (both have ``tests``). A results document's tests whose
    body did not complete (partial counts, or none: a timeout, a crash) are left out, as a baseline
    leaves them out, and listed in ``incomplete``; its metrics a model could not measure have no
    entry, and ``unavailable`` gets metric -> the tests where it was not measured."""
    try:
        data = path.read_bytes()
        doc = json.loads(data.decode("utf-8"))
    except OSError as exc:
        raise CBuildError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise CBuildError(f"{path} is not valid JSON: byte {exc.start} is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        if (line := conflict_marker(data)) is not None:
            raise CBuildError(f"{path} has merge conflict markers (line {line}): resolve the conflict first") from None
        raise CBuildError(f"{path} is not valid JSON: {exc}") from None
    tests = doc.get("tests") if isinstance(doc, dict) else None
    if not isinstance(tests, dict):
        raise CBuildError(f"{path} is neither an instrbudget baseline nor a --instrbudget-json document")
    run: Run = {}
    try:
        for test, body in tests.items():
            if body.get("completed") is False:
                if incomplete is not None:
                    incomplete.append(test)
                continue
            metrics: dict[str, Any] = body.get("metrics", body)
            if unavailable is not None and "metrics" in body:
                for metric in body.get("unavailable") or {}:
                    unavailable.setdefault(metric, []).append(test)
            run[test] = {
                metric: Entry(
                    _cost(value["value"] if "value" in value else value["total"], test, metric),
                    _by_symbol(value.get("functions", {}), value.get("symbols", {}), f"{test} {metric}"),
                    {name: _cost(v, test, metric) for name, v in dict(value.get("regions", {})).items()},
                )
                for metric, value in metrics.items()
            }
    except KeyError as exc:
        raise CBuildError(f"{path}: unexpected entry (no {exc})") from None
    except (TypeError, ValueError, AttributeError) as exc:
        raise CBuildError(f"{path}: unexpected entry ({exc})") from None
    return run


def _cost(value: object, test: str, what: str) -> int:
    """A cost as a baseline holds it (a non-negative integer), else an error naming where: a total
    of ``"100"``, ``100.7`` or ``true`` compared equal to 100 and 1."""
    if not is_count(value):
        raise ValueError(f"{test} {what}: {value!r} is not a non-negative integer")
    return value


def incomparable(old: Path, new: Path, metric_models: Mapping[str, str]) -> tuple[tuple[str, ...], dict[str, str]]:
    """Why two runs' costs do not compare: the toolchain and build settings that differ (fingerprint
    keys), and each metric whose model was configured otherwise -> how (``po2: 20 in OLD, 18 in NEW``).
    ``metric_models`` maps metrics to their models where the documents do not say (a baseline)."""
    facts = [_facts(path) for path in (old, new)]
    (old_fp, old_metrics), (new_fp, new_metrics) = facts
    if not old_fp or not new_fp:  # a document without a fingerprint says nothing either way
        return (), {}
    builds = tuple(
        key
        for key in differing_keys(update.recorded(old_fp, new_fp), update.recorded(new_fp, new_fp))
        if key != "models"
    )
    before, after = update.recorded_models(old_fp), update.recorded_models(new_fp)
    owner = {**metric_models, **old_metrics, **new_metrics}
    out = {}
    for metric, model in sorted(owner.items()):
        if model in before and model in after and before[model] != after[model]:
            out[metric] = update.changed_parameters(before[model], after[model], was=f"in {old}", now=f"in {new}")
    return builds, out


def _facts(path: Path) -> tuple[dict[str, str], dict[str, str]]:
    """A document's fingerprint and its metrics' models (a results document names them)."""
    doc = json.loads(path.read_bytes().decode("utf-8"))
    fingerprint, metric_models = doc.get("fingerprint"), doc.get("metric_models")
    return (
        fingerprint if isinstance(fingerprint, dict) else {},
        metric_models if isinstance(metric_models, dict) else {},
    )


def _by_symbol(functions: dict[str, int], symbols: dict[str, str], where: str) -> dict[str, int]:
    """A metric's function costs keyed by symbol, as a baseline keys them: a results document
    keys them by readable name and gives the symbol of each name that differs (``strlen [libc]``,
    a C++ signature), so that a baseline and a results document compare function by function."""
    return {symbols.get(name, name): _cost(cost, where, f"function {name}") for name, cost in functions.items()}


@dataclass(frozen=True)
class Change:
    """A metric of a test whose total differs, or that exists in one run only."""

    test: str
    metric: str
    old: int | None
    new: int | None
    functions: list[tuple[str, int, int]]
    regions: list[tuple[str, int, int]]

    @property
    def percent(self) -> float | None:
        if self.old in (None, 0) or self.new is None:
            return None
        return 100.0 * (self.new - self.old) / self.old


def deltas(old: dict[str, int], new: dict[str, int], n: int, *, grown_only: bool = False) -> list[tuple[str, int, int]]:
    """The ``n`` keys whose value changed (or grew) most: (key, old, new); a missing key counts as 0."""
    rows = [(k, old.get(k, 0), new.get(k, 0)) for k in set(old) | set(new)]
    rows = [r for r in rows if (r[2] > r[1] if grown_only else r[2] != r[1])]
    return sorted(rows, key=lambda r: (-abs(r[2] - r[1]), r[0]))[:n]


def only_in(a: Run, b: Run) -> list[str]:
    """Tests of ``a`` that ``b`` does not have."""
    return sorted(set(a) - set(b), key=display_order)


def compared(old: Run, new: Run) -> int:
    """How many tests both runs measured with a metric in common."""
    return sum(1 for test in set(old) & set(new) if set(old[test]) & set(new[test]))


def changes(old: Run, new: Run, *, top: int = 5, order: Sequence[str] = ()) -> list[Change]:
    """Every changed metric of the tests both runs measured, by test and metric (in ``order``, the
    models' own, as the plugin's reports show them; others by name after them)."""
    rank = {metric: i for i, metric in enumerate(order)}
    out = []
    for test in sorted(set(old) & set(new), key=display_order):
        a, b = old.get(test, {}), new.get(test, {})
        for metric in sorted(set(a) | set(b), key=lambda name: (rank.get(name, len(rank)), name)):
            x, y = a.get(metric), b.get(metric)
            if x is not None and y is not None and x.total == y.total and x.regions == y.regions:
                continue
            # Functions and regions moved only where both runs measured the metric: against a run
            # without it, every function would read as falling to 0 or rising from it.
            out.append(
                Change(
                    test,
                    metric,
                    x.total if x else None,
                    y.total if y else None,
                    deltas(x.functions, y.functions, top) if x is not None and y is not None else [],
                    deltas(x.regions, y.regions, top) if x is not None and y is not None else [],
                )
            )
    return out


def _num(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _pct(change: Change) -> str:
    p = change.percent
    return "" if p is None else f"{p:+.2f}%"


def render_text(found: list[Change], width: int | None = None) -> str:
    """Plain text for a terminal: a line per changed metric, then the functions and regions
    that moved most. Names are never cut: within ``width`` a test's name goes on a line of its
    own, once above all its metrics, where one of them does not fit beside it, and so does a
    function name too long to share its line."""
    if not found:
        return "no differences\n"
    lines: list[str] = []
    heads = [f"{c.metric}: {_num(c.old)} -> {_num(c.new)} {_pct(c)}".rstrip() for c in found]
    # Each metric's line starts with its test's name (a line per metric, for grep) where every
    # one of the test's lines fits; else the name stands once on a line of its own above them all.
    apart = {
        c.test for c, head in zip(found, heads, strict=True)
        if width is not None and len(c.test) + 2 + len(head) > width
    }  # fmt: skip
    named = None
    for c, head in zip(found, heads, strict=True):
        if c.test not in apart:
            lines.append(f"{c.test}  {head}")
        else:
            if c.test != named:
                lines.append(c.test)
            lines.append(f"  {head}")
        named = c.test
        shown = readable_names(name for name, _, _ in c.functions)
        moved = [(shown[name], a, b) for name, a, b in c.functions]
        moved += [(f"region {name}", a, b) for name, a, b in c.regions]
        for name, a, b in moved:
            figures = f"{b - a:+,}  ({a:,} -> {b:,})"
            if width is None or 4 + len(name) + 2 + len(figures) <= width:
                lines.append(f"    {name}  {figures}")
            else:
                lines += [f"    {name}", f"      {figures}"]
    return "\n".join(lines) + "\n"


def render_markdown(found: list[Change]) -> str:
    """A markdown table and the largest function changes, for a CI job summary."""
    if not found:
        return "No cost changed.\n"
    lines = ["| test | metric | old | new | change | functions that changed most |", "|---|---|---:|---:|---:|---|"]
    for c in found:
        shown = readable_names(n for n, _, _ in c.functions[:3])
        moved = ", ".join(f"{table_code(shown[n])} {b - a:+,}" for n, a, b in c.functions[:3])
        lines.append(f"| {table_code(c.test)} | {c.metric} | {_num(c.old)} | {_num(c.new)} | {_pct(c)} | {moved} |")
    return "\n".join(lines) + "\n"
