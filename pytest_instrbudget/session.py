"""One pytest session's budgets: settings, builder, baseline, and the results collected."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from cbuild import cpu
from cbuild.build import Builder
from cbuild.costs import Cost, line_label
from cbuild.demangle import demangle
from cbuild.errors import describe_os_error
from cbuild.models import CostModel, ModelRegistry
from pytest_instrbudget.baseline import Baseline, BaselineError, locked
from pytest_instrbudget.config import Settings
from pytest_instrbudget.marker import Budget
from pytest_instrbudget.results import (
    ERROR,
    IMPROVED,
    NEW,
    NOT_COMPARABLE,
    OK,
    OVER_LIMIT,
    REGRESSED,
    MetricResult,
    TestResult,
)


@dataclass(frozen=True)
class RunOptions:
    """Command-line switches of the plugin."""

    update: bool = False
    prune: bool = False
    disable: bool = False
    tolerance: float | None = None
    json_path: Path | None = None
    models: tuple[str, ...] = ()
    #: Breakdowns to print per test: "functions", "lines", "regions".
    reports: tuple[str, ...] = ()
    markdown_path: Path | None = None
    profile_dir: Path | None = None
    html_path: Path | None = None
    #: The summary table's rows: "changed" (failed, changed or new tests) or "all".
    table: str = "changed"

    @property
    def wants_calls(self) -> bool:
        """Builds must report calls: for profiles and the HTML report's flame graphs, and for
        inclusive costs in the functions report."""
        return self.profile_dir is not None or self.html_path is not None or "functions" in self.reports


@dataclass
class Outcome:
    """What the end of the session did with the baseline, for the summary."""

    written: bool = False
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    pruned: list[str] = field(default_factory=list)
    #: Tests whose body failed: their partial cost is not written to the baseline.
    not_written: list[str] = field(default_factory=list)
    refused: str | None = None
    #: Files the session could not write (baseline, reports), each naming the path and the reason.
    errors: list[str] = field(default_factory=list)


class BudgetSession:
    """Holds what every test needs and what the end of the session writes."""

    def __init__(
        self,
        settings: Settings,
        run: RunOptions,
        registry: ModelRegistry,
        baseline: Baseline,
        builder: Builder | None,
    ) -> None:
        self.settings = settings
        self.run = run
        self.registry = registry
        names = run.models or settings.models
        self.models: list[CostModel] = [
            registry.create(name, settings.model_params.get(name, {}), root=settings.root) for name in names
        ]
        self.all_keywords = registry.keywords()
        self.baseline = baseline
        self.builder = builder
        #: Said in the summary, e.g. that a damaged baseline is being rewritten.
        self.baseline_note: str | None = None
        self.results: dict[str, TestResult] = {}
        self.collected: set[str] = set()
        #: Files named with a node id on the command line (``file.py::test``): partly collected.
        self.partial_files: set[str] = set()
        #: Files that could not be written during the session (profiles), said at the end.
        self.output_errors: list[str] = []

    @property
    def fingerprint(self) -> dict[str, str]:
        """What decides the numbers besides sources and flags: the toolchain, and the models with their parameters."""
        if self.builder is None:
            return {}
        models = "; ".join(
            " ".join([model.name, *(f"{k.split('.', 1)[1]}={v}" for k, v in model.key_params())])
            for model in self.models
        )
        fingerprint = {**self.builder.toolchain.fingerprint, "models": models}
        if cpu.applies(fingerprint["target"]):
            fingerprint["cpu"] = self.settings.build.cpu
        return fingerprint

    @property
    def comparable(self) -> bool:
        """False when the baseline was made with another toolchain or other models."""
        if self.builder is None or not self.baseline.exists:
            return True
        return self._matches(self.baseline.fingerprint)

    def _matches(self, recorded: dict[str, str]) -> bool:
        """Whether a baseline's fingerprint is this session's (older baselines lack some fields)."""
        current = self.fingerprint
        old = dict(recorded)
        # Baselines from before cost models were configurable measured ir-count alone.
        old.setdefault("models", "ir-count version=1")
        # Baselines from before the canonical CPU: counts of code that asks no CPU questions.
        if "cpu" in current:
            old.setdefault("cpu", cpu.DEFAULT_CPU)
        return old == current

    def cutoffs(self, nodeid: str, budget: Budget | None) -> tuple[dict[str, int], dict[str, str]]:
        """Where a test's code stops (metric -> count) and how each was given: the marker's ``stop_at``
        keywords, else the config's ``cutoff`` times the headline limit, else times its baseline."""
        if budget is None:
            return {}, {}
        stops, labels = dict(budget.stops), dict(budget.stop_labels)
        factor = self.settings.cutoff
        if factor is None or not self.models:
            return stops, labels
        headline = self.models[0].metrics[0]
        if headline.name in stops:
            return stops, labels
        limit = budget.limits.get(headline.name)
        old = self.baseline.tests.get(nodeid, {}).get(headline.name) if self.comparable else None
        base, what = (limit, headline.keyword) if limit is not None else (old.total if old else None, "its baseline")
        if base:
            stops[headline.name] = math.ceil(base * factor)
            labels[headline.name] = f"cutoff = {factor:g}x {what}"
        return stops, labels

    def evaluate(
        self,
        nodeid: str,
        budget: Budget | None,
        costs: dict[str, Cost],
        *,
        completed: bool = True,
        region_problems: list[str] | None = None,
    ) -> TestResult:
        """Compare a test's costs with its limits and baseline; record and return the result."""
        tolerance = (
            budget.tolerance
            if budget is not None and budget.tolerance is not None
            else self.run.tolerance
            if self.run.tolerance is not None
            else self.settings.tolerance
        )
        entry = self.baseline.tests.get(nodeid, {}) if self.comparable else {}
        keywords = {m.name: m.keyword for model in self.models for m in model.metrics}
        metrics: list[MetricResult] = []
        failures: list[str] = []
        for name, cost in costs.items():
            # A cut-off without a limit is one: code that finished past it (after the last check) fails too.
            limit = budget.limits.get(name, budget.stops.get(name)) if budget is not None else None
            old = entry.get(name)
            if not self.comparable:
                status = NOT_COMPARABLE
            elif old is None:
                status = NEW
            elif cost.total > old.total * (1 + tolerance / 100.0) and not self.run.update:
                status = REGRESSED
            elif cost.total < old.total:
                status = IMPROVED
            else:
                status = OK
            if not completed and status != REGRESSED:
                status = ERROR  # partial counts: "new" or "improved" would say what was not measured
            if limit is not None and cost.total > limit:
                status = OVER_LIMIT
            region_limits = {
                path: per[name] for path, per in (budget.regions if budget is not None else {}).items() if name in per
            }
            if any(cost.regions.get(path, 0) > n or path not in cost.regions for path, n in region_limits.items()):
                status = OVER_LIMIT
            metric_result = MetricResult(
                metric=name,
                keyword=keywords.get(name, ""),
                value=cost.total,
                limit=limit,
                baseline=old.total if old is not None else None,
                tolerance=tolerance,
                status=status,
                functions=dict(cost.functions),
                baseline_functions=dict(old.functions) if old is not None else {},
                regions=dict(cost.regions),
                baseline_regions=dict(old.regions) if old is not None else {},
                region_limits=region_limits,
                lines=[[f, _relative(where, self.settings.root), v] for f, where, v in cost.top_lines(50)],
                inclusive=dict(cost.inclusive),
                calls=dict(cost.calls),
                stacks=dict(cost.stacks) if self.run.html_path is not None else {},
            )
            metrics.append(metric_result)
            if budget is not None and status in (OVER_LIMIT, REGRESSED):
                failures.append(_failure_text(metric_result))
        failure = None
        if failures:
            failure = f"instrbudget: {nodeid} is over budget\n" + "\n".join(failures)
            if any(m.status == REGRESSED for m in metrics):
                failure += "\n  if the new cost is intended, accept it with: pytest --instrbudget-update"
        result = TestResult(nodeid, budget is not None, metrics, failure, completed, list(region_problems or []))
        self.results[nodeid] = result
        return result

    def finish(self) -> Outcome:
        """Apply ``--instrbudget-update``/``--instrbudget-prune`` to the baseline, once."""
        outcome = Outcome()
        base = self.baseline
        outcome.stale = sorted(n for n in base.tests if self._is_stale(n))
        if not (self.run.update or self.run.prune) or self.builder is None or self.run.disable:
            return outcome
        try:
            with locked(base.path):
                # Under the lock, apply this session's changes to the file as it is now:
                # another session may have written it since this one started.
                if base.path.exists():
                    try:
                        base = Baseline.load(base.path)
                    except BaselineError as exc:
                        if not self.run.update:
                            outcome.refused = str(exc)
                            return outcome
                        base = Baseline(base.path)  # damaged: rewritten from this run, as at the start
                return self._apply(base, outcome)
        except OSError as exc:
            outcome.written = False
            outcome.errors.append(f"cannot write the baseline {base.path}: {describe_os_error(exc)}")
            return outcome

    def _apply(self, base: Baseline, outcome: Outcome) -> Outcome:
        """Write this session's updates and prunes into ``base`` (read under the lock)."""
        outcome.stale = sorted(n for n in base.tests if self._is_stale(n))
        fingerprint = self.fingerprint
        tests = dict(base.tests)
        if base.exists and not self._matches(base.fingerprint):
            missing = sorted(set(tests) - set(self.results))
            if missing and not self.run.prune:
                outcome.refused = (
                    f"baseline {base.path} was made with another toolchain or other models "
                    f"({_fp(base.fingerprint)}) and "
                    f"{len(missing)} of its entries were not measured in this run; run the whole suite, or "
                    f"add --instrbudget-prune to drop them"
                )
                return outcome
            tests = {}
        if self.run.update:
            for nodeid, result in sorted(self.results.items()):
                if not result.completed:
                    outcome.not_written.append(nodeid)
                    continue
                new = result.costs()
                if nodeid not in tests:
                    outcome.added.append(nodeid)
                elif tests[nodeid] != new:
                    outcome.changed.append(nodeid)
                tests[nodeid] = new
        if self.run.prune:
            for nodeid in outcome.stale:
                tests.pop(nodeid, None)
                outcome.pruned.append(nodeid)
        changed = tests != base.tests or fingerprint != base.fingerprint
        if (base.exists and changed) or (not base.exists and tests):
            Baseline(base.path, dict(fingerprint), dict(sorted(tests.items())), exists=True).save()
            outcome.written = True
        return outcome

    def _is_stale(self, nodeid: str) -> bool:
        """An entry whose test no longer exists: its file is gone, or was collected without it."""
        if nodeid in self.collected or nodeid in self.results:
            return False
        file_part = nodeid.split("::", 1)[0]
        if not (self.settings.root / file_part).exists():
            return True
        if file_part in self.partial_files:
            return False
        collected_files = {n.split("::", 1)[0] for n in self.collected}
        return file_part in collected_files


def _relative(where: str, root: Path) -> str:
    """``/project/src/a.c:12`` -> ``src/a.c:12`` for files under the project."""
    path, _, line = where.rpartition(":")
    try:
        return f"{Path(path).relative_to(root)}:{line}"
    except ValueError:
        return where


def _fp(fingerprint: dict[str, str]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(fingerprint.items()))


def _failure_text(m: MetricResult) -> str:
    lines = []
    if m.status == OVER_LIMIT and m.limit is not None and m.value > m.limit:
        over = m.value - m.limit
        pct = f" (+{100.0 * over / m.limit:.2f}%)" if m.limit else ""
        lines.append(f"  {m.metric}: {m.value} exceeds {m.keyword}={m.limit} by {over}{pct}")
    for path, limit in sorted(m.region_limits.items()):
        if not m.regions:
            lines.append(
                f"  region {path!r}: {m.metric} has no region costs (regions are measured in the metrics of "
                "ir-count and of models with a run-time clock, or the test passed no region marker)"
            )
        elif path not in m.regions:
            lines.append(
                f"  region {path!r} has a budget but the test never ran it (regions run: "
                f"{', '.join(sorted(m.regions)) or 'none'})"
            )
        elif m.regions[path] > limit:
            lines.append(f"  region {path!r}: {m.metric} {m.regions[path]} exceeds its budget {limit}")
    if m.baseline is not None and m.value > m.baseline * (1 + m.tolerance / 100.0):
        change = f"{m.change:+.2f}%" if m.change is not None else "new cost"
        lines.append(
            f"  {m.metric}: {m.baseline} -> {m.value} ({change}; tolerance {m.tolerance:g}%) against the baseline"
        )
    if m.baseline is None:
        top = sorted(m.functions.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
        if top:
            lines.append("  costliest functions:")
            names = {name: demangle(name) for name, _ in top}
            width = max(len(shown) for shown in names.values())
            lines.extend(f"    {names[name]:<{width}}  {value}" for name, value in top)
        lines.extend(_hot_lines(m, top[0][0] if top else None))
        return "\n".join(lines)
    deltas = m.function_deltas()
    if deltas:
        lines.append("  functions whose cost grew most:")
        width = max(len(demangle(name)) for name, _, _ in deltas)
        for name, old, new in deltas:
            lines.append(f"    {demangle(name):<{width}}  {new - old:+d}  ({old} -> {new})")
    changed = m.region_deltas()
    if changed:
        lines.append("  regions whose cost changed most:")
        width = max(len(name) for name, _, _ in changed)
        lines.extend(f"    {name:<{width}}  {new - old:+d}  ({old} -> {new})" for name, old, new in changed)
    lines.extend(_hot_lines(m, deltas[0][0] if deltas else None))
    return "\n".join(lines)


def _hot_lines(m: MetricResult, function: str | None, n: int = 5) -> list[str]:
    """The costliest source lines of one function (this run)."""
    rows = [(where, value) for f, where, value in m.lines if f == function][:n]
    if function is None or not rows:
        return []
    labels = [(line_label(where), value) for where, value in rows]
    width = max(len(label) for label, _ in labels)
    return [f"  hottest lines of {demangle(function)}:", *(f"    {label:<{width}}  {value}" for label, value in labels)]
