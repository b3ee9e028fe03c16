"""One pytest session's budgets: settings, builder, baseline, and the results collected."""

from __future__ import annotations

import itertools
import math
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cbuild.build import cpu, eviction
from cbuild.build.builder import Builder, model_build_flags
from cbuild.build.demangle import readable, readable_names
from cbuild.config import ConfigError, Settings, table_below
from cbuild.errors import CBuildError, describe_os_error
from cbuild.models import CostModel, ModelError, ModelRegistry
from cbuild.models.costs import Cost, Unavailability, library_line, line_label
from cbuild.report import texttable, update
from cbuild.report.outputs import keep_damaged, locked
from cbuild.report.snapshot import differing_keys
from cbuild.report.update import LIBRARIES, MODEL_KEY
from pytest_instrbudget.baseline import Baseline, BaselineError
from pytest_instrbudget.marker import Budget, stop_keyword
from pytest_instrbudget.results import (
    ACCEPTED,
    ERROR,
    IMPROVED,
    NEW,
    NOT_COMPARABLE,
    OK,
    OVER_LIMIT,
    REGRESSED,
    UNAVAILABLE,
    MetricResult,
    TestResult,
)

__all__ = ["LIBRARIES", "MODEL_KEY", "BudgetSession", "Outcome", "RunOptions"]


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
    #: ``--instrbudget-baseline`` as given (None: the configured baseline).
    baseline: str | None = None

    def update_command(self) -> str:
        """The command that accepts this run's costs into the same baseline, with the same models."""
        words = ["pytest", "--instrbudget-update"]
        if self.baseline is not None:
            words.append(f"--instrbudget-baseline={self.baseline}")
        words += [f"--instrbudget-model={name}" for name in self.models]
        return shlex.join(words)

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
    #: Where the whole baseline was rewritten for another toolchain or other models: what differs,
    #: and the models whose costs it dropped (:func:`cbuild.report.update.rewrite_note`).
    rewrite_note: str | None = None
    refused: str | None = None
    #: Files the session could not write (baseline, reports), each naming the path and the reason.
    errors: list[str] = field(default_factory=list)
    #: Where the baseline that could not be read was kept before it was rewritten from this run.
    kept_damaged: Path | None = None
    #: The reports written to files (not streams): what each is, and its path.
    reports: list[tuple[str, Path]] = field(default_factory=list)


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
        #: Every model in use, configured once from ``[tool.instrbudget.<name>]``: the session's and the tests'.
        self._instances: dict[str, CostModel] = {}
        self.models: list[CostModel] = self.choose(names)
        # Every model's table is checked now, those of models no test may choose included: a wrong
        # key there would otherwise go unnoticed until a test chose the model.
        for name in settings.model_params:
            self.model(name)
        #: Every marker keyword of every registered model (its limits, and the cut-off on its clock)
        #: -> the model's name.
        self.all_keywords = registry.keywords() | {
            stop_keyword(registry.model_class(name).metrics[0].keyword): name for name in registry.names
        }
        #: Metric name -> the registered model reporting it.
        self.metric_models = {m.name: name for name in registry.names for m in registry.model_class(name).metrics}
        #: The order of metrics in the summary table: the session's models' first, then the other
        #: registered models' (a test may choose them), whichever tests ran.
        self.metric_order = list(
            dict.fromkeys([*(m.name for model in self.models for m in model.metrics), *self.metric_models])
        )
        self.baseline = baseline
        self.builder = builder
        self._fingerprint: dict[str, str] | None = None
        #: Said in the summary, e.g. that a damaged baseline is being rewritten.
        self.baseline_note: str | None = None
        #: What to say if a test of the run uses the plugin (config.unread_table), or None.
        self.unread_table: str | None = None
        self._unread_below: dict[Path, str | None] = {}
        self.results: dict[str, TestResult] = {}
        #: What pytest said of each test that builds or has a budget (measured or not): its outcome
        #: (``passed``, ``xfailed``, ``skipped``, ...) and the reason of a skip or xfail.
        self.outcomes: dict[str, tuple[str, str]] = {}
        self.collected: set[str] = set()
        #: Collected tests left out of the run (``-k``, ``-m``, a shard of a split suite).
        self.deselected: set[str] = set()
        #: Files named with a node id on the command line (``file.py::test``): partly collected.
        self.partial_files: set[str] = set()
        #: Files that could not be written during the session (profiles), said at the end.
        self.output_errors: list[str] = []
        #: The build cache's hits and builds per kind in the xdist workers (this process's are the cache's).
        self.cache_hits: dict[str, int] = {}
        self.cache_builds: dict[str, int] = {}
        #: What keeping the cache within ``cache_max_size`` did, said at the end.
        self.cache_note: str | None = None

    def model(self, name: str) -> CostModel:
        """The session's instance of a registered model, configured from ``[tool.instrbudget.<name>]``."""
        if name not in self._instances:
            params = self.settings.model_params.get(name, {})
            try:
                self._instances[name] = self.registry.create(name, params, root=self.settings.root)
            except ModelError as exc:
                if name not in self.settings.model_params:
                    raise
                # A bad parameter of its table: said of the file, as the other keys' errors are.
                raise ModelError(f"{self.settings.root / 'pyproject.toml'}: {exc}") from None
        return self._instances[name]

    def choose(self, names: Sequence[str]) -> list[CostModel]:
        """The models named (a test's ``models=``); an unknown name raises ModelError listing the known ones."""
        return [self.model(name) for name in names]

    def test_models(self, budget: Budget | None) -> list[CostModel]:
        """A test's models: its marker's ``models=``, else the session's."""
        return self.choose(budget.models) if budget is not None and budget.models else self.models

    @property
    def fingerprint(self) -> dict[str, str]:
        """What decides the numbers besides sources and flags: the toolchain, the session's models with their
        parameters, and each model tests chose beyond them (``models.NAME``) that this session measured."""
        fingerprint = self._session_fingerprint()
        if fingerprint:
            used = {m.model for r in self.results.values() for m in r.metrics} - {m.name for m in self.models}
            for name in sorted(used & set(self.registry.names)):
                fingerprint[MODEL_KEY + name] = self.model_description(name)
        return fingerprint

    def _session_fingerprint(self) -> dict[str, str]:
        """The toolchain, the canonical CPU and the session's models: what every entry depends on
        (fixed for the session: made once, a copy returned)."""
        if self.builder is None:
            return {}
        if self._fingerprint is None:
            models = "; ".join(_describe(model) for model in self.models)
            self._fingerprint = {**self.builder.toolchain.fingerprint, "models": models}
            self._fingerprint["libraries"] = LIBRARIES[self.settings.build.count_libraries]
            self._fingerprint["assertions"] = "on" if self.settings.build.assertions else "off (NDEBUG)"
            if cpu.applies(self._fingerprint["target"]):
                self._fingerprint["cpu"] = self.settings.build.cpu
            flags = model_build_flags(self.models)
            if flags:  # the native build, and so every metric, depends on them
                self._fingerprint["model_flags"] = " ".join(flags)
        return dict(self._fingerprint)

    @property
    def comparable(self) -> bool:
        """False when the baseline was made with another toolchain or other build settings; its
        costs otherwise compare metric by metric (:meth:`metric_comparable`)."""
        if self.builder is None or not self.baseline.exists:
            return True
        return update.builds_match(self.baseline.fingerprint, self._session_fingerprint())

    def fingerprint_differences(self) -> tuple[str, ...]:
        """The keys that make the baseline not :attr:`comparable`."""
        differs = differing_keys(self._recorded(self.baseline.fingerprint), self._session_fingerprint())
        return tuple(key for key in differs if key != "models")

    def metric_comparable(self, metric: str) -> bool:
        """Whether the baseline's entries of ``metric`` compare with this session's: the baseline is
        :attr:`comparable`, and the metric's model has the parameters the baseline recorded for it,
        whichever models the session or the baseline's session had beside it."""
        if not self.comparable:
            return False
        name = self.metric_models.get(metric)
        if name is None or not self.baseline.exists:
            return True
        recorded = update.recorded_models(self.baseline.fingerprint).get(name)
        return recorded is None or recorded == self.model_description(name)

    def model_description(self, name: str) -> str:
        """``zkvm version=2 po2=20 ...``: the session's model ``name`` as a baseline records it."""
        return _describe(self.model(name))

    def changed_models(self) -> dict[str, tuple[str, str]]:
        """Models of the baseline's entries whose parameters changed since it was written: name ->
        (the baseline's description, this session's)."""
        if not self.comparable or not self.baseline.exists:
            return {}
        out = {}
        for name, recorded in sorted(update.recorded_models(self.baseline.fingerprint).items()):
            if name in self.registry.names:
                try:
                    if recorded != (now := self.model_description(name)):
                        out[name] = (recorded, now)
                except CBuildError:
                    continue
        return out

    def _recorded(self, recorded: Mapping[str, str]) -> dict[str, str]:
        """A baseline's session fingerprint with the fields older baselines lack filled in as they were."""
        return update.recorded(recorded, self._session_fingerprint())

    def check_cutoff(self, nodeid: str, budget: Budget | None) -> None:
        """The config's ``cutoff`` stops a budgeted test's code at a count of its headline metric:
        an error (ConfigError) where the headline's model keeps no clock for that."""
        models = self.test_models(budget) if budget is not None and self.settings.cutoff is not None else []
        if models and not models[0].can_stop_code():
            headline = models[0].metrics[0].name
            raise ConfigError(
                f"{nodeid}: cutoff = {self.settings.cutoff:g} in [tool.instrbudget] stops code at a count of the "
                f"test's headline metric, {headline}, but the {models[0].name} model keeps no clock that is looked at "
                "before each block; put a model that does first in `models` (ir-count, pipeline, zkvm) or leave "
                "cutoff out"
            )

    def cutoffs(self, nodeid: str, budget: Budget | None) -> tuple[dict[str, int], dict[str, str]]:
        """Where a test's code stops (metric -> count) and how each was given: the marker's ``stop_at``
        keywords, else the config's ``cutoff`` times the headline limit, else times its baseline."""
        if budget is None:
            return {}, {}
        stops, labels = dict(budget.stops), dict(budget.stop_labels)
        factor = self.settings.cutoff
        models = self.test_models(budget)
        if factor is None or not models:
            return stops, labels
        headline = models[0].metrics[0]
        if headline.name in stops:
            return stops, labels
        limit = budget.limits.get(headline.name)
        old = self.baseline.tests.get(nodeid, {}).get(headline.name) if self.metric_comparable(headline.name) else None
        base, what = (limit, headline.keyword) if limit is not None else (old.total if old else None, "its baseline")
        if base:
            stops[headline.name] = math.ceil(base * factor)
            labels[headline.name] = f"cutoff = {factor:g}x {what}"
        return stops, labels

    def unread_settings(self, directory: Path) -> str | None:
        """What to say if a test in ``directory`` uses the plugin while the project's settings and
        baseline are left out: above the rootdir (:func:`~cbuild.config.unread_table`) or below it,
        between it and the test (:func:`~cbuild.config.table_below`); else None."""
        if self.unread_table is not None:
            return self.unread_table
        if directory not in self._unread_below:
            self._unread_below[directory] = table_below(self.settings.root, directory)
        return self._unread_below[directory]

    def evaluate(
        self,
        nodeid: str,
        budget: Budget | None,
        costs: dict[str, Cost],
        *,
        models: Sequence[CostModel] | None = None,
        unavailable: Mapping[str, Unavailability] | None = None,
        completed: bool = True,
        region_problems: list[str] | None = None,
        stopped: str | None = None,
    ) -> TestResult:
        """Compare a test's costs with its limits and baseline; record and return the result.

        ``models`` are the test's (default: the session's). A metric in ``unavailable`` has no
        value: it is reported with the reason, and its limit and baseline are not checked. The
        ``stopped`` metric's cut-off stopped the test's code: it is over its limit, whatever count
        it stopped at (before the block that would have passed it).
        """
        models = self.models if models is None else models
        tolerance = (
            budget.tolerance
            if budget is not None and budget.tolerance is not None
            else self.run.tolerance
            if self.run.tolerance is not None
            else self.settings.tolerance
        )
        entry = self.baseline.tests.get(nodeid, {}) if self.comparable else {}
        keywords = {m.name: m.keyword for model in models for m in model.metrics}
        # A cut-off without a limit is one where the metric's total is the clock it watches: code
        # that finished past it (after the last check) fails too, named as the marker gave it.
        implied = (
            {
                n: v
                for n, v in budget.stops.items()
                if n not in budget.limits and any(m.clock_is_total and m.metrics[0].name == n for m in models)
            }
            if budget is not None
            else {}
        )
        keywords.update({n: stop_keyword(keywords[n]) for n in implied})
        metrics: list[MetricResult] = []
        failures: list[str] = []
        failed_models: set[str] = set()
        said: list[str] = []  # the headline's short phrases: limits passed, metrics not measured
        grew: list[str] = []  # and metrics that grew past their baseline's tolerance
        missing = dict(unavailable or {})
        # In the order of the test's models' metrics; an unavailable one where its value would be.
        order = [m.name for model in models for m in model.metrics if m.name in costs or m.name in missing]
        order += [name for name in [*costs, *missing] if name not in order]
        for name in order:
            limit = budget.limits.get(name, implied.get(name)) if budget is not None else None
            old = entry.get(name)
            region_limits = {
                path: per[name] for path, per in (budget.regions if budget is not None else {}).items() if name in per
            }
            why = missing.get(name)
            if why is not None:
                stop = budget.stops.get(name) if budget is not None and name not in implied else None
                unchecked = MetricResult(
                    metric=name,
                    keyword=keywords.get(name, ""),
                    value=0,
                    limit=limit,
                    baseline=old.total if old is not None else None,
                    tolerance=tolerance,
                    status=UNAVAILABLE,
                    region_limits=region_limits,
                    model=why.model,
                    unavailable=why.reason,
                    unavailable_where=_relative(why.where, self.settings.root) if why.where else None,
                    unavailable_function=why.function,
                    stop=stop,
                )
                metrics.append(unchecked)
                if why.failed:
                    if why.model not in failed_models:  # said once for all of the model's metrics
                        failed_models.add(why.model)
                        failures.append(f"  {why.reason}")
                        said.append(f"cost model {why.model!r} failed")
                elif (limit is not None or region_limits or stop is not None) and self._unavailable_policy(
                    budget
                ) == "fail":
                    failures.append(_unchecked_text(unchecked))
                    said.append(f"{name} not measured")
                continue
            cost = costs[name]
            if old is not None and not self.metric_comparable(name):
                status, old = NOT_COMPARABLE, None
            elif not self.comparable:
                status = NOT_COMPARABLE
            elif old is None:
                status = NEW
            elif cost.total > old.total * (1 + tolerance / 100.0):
                status = ACCEPTED if self.run.update else REGRESSED
            elif cost.total < old.total:
                status = IMPROVED
            else:
                status = OK
            if not completed and status != REGRESSED:
                status = ERROR  # partial counts: "new" or "improved" would say what was not measured
            if (limit is not None and cost.total > limit) or name == stopped:
                status = OVER_LIMIT
            if any(cost.regions.get(path, 0) > n or path not in cost.regions for path, n in region_limits.items()):
                status = OVER_LIMIT
            ranked = cost.top_lines(None)  # every line, costliest first: sorted once
            failing = budget is not None and status in (OVER_LIMIT, REGRESSED)
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
                lines=[[f, _relative(where, self.settings.root), v] for f, where, v in ranked[:50]],
                # Only a failure message shows them: no work for the tests that pass.
                project_lines=_project_rows(ranked, self.settings.root) if failing else [],
                inclusive=dict(cost.inclusive),
                calls=dict(cost.calls),
                stacks=dict(cost.stacks) if self.run.html_path is not None else {},
                model=self.metric_models.get(name, ""),
                outside_calls=dict(cost.outside_calls),
            )
            metrics.append(metric_result)
            if failing:
                failures.append(_failure_text(metric_result, self.settings.root, cost))
                over = _headline(metric_result)
                if over:
                    said += over
                elif status == REGRESSED:
                    grew.append(f"{metric_result.metric} {_change(metric_result)}")
                else:  # over its cut-off, which it did not stop at (a library's call ended past it)
                    said.append(f"{name} past its cut-off")
        failure = None
        if failures:
            # What failed, in a line for pytest's short summary (which names the test before it) and
            # a CI log's width: the first metric that grew, the others in the lines below.
            if grew:
                others = len(grew) - 1
                said.append(
                    f"{grew[0]} on the baseline"
                    + (f" (and {others} other metric{'s' * (others > 1)})" if others else "")
                )
            failure = f"instrbudget: {'; '.join(said)}\n" + "\n".join(failures)
            if any(m.status == REGRESSED for m in metrics):
                failure += f"\n  if the new cost is intended, accept it with: {self.run.update_command()}"
        result = TestResult(nodeid, budget is not None, metrics, failure, completed, list(region_problems or []))
        self.results[nodeid] = result
        return result

    def _unavailable_policy(self, budget: Budget | None) -> str:
        if budget is not None and budget.unavailable is not None:
            return budget.unavailable
        return self.settings.unavailable

    def finish(self, *, interrupted: bool = False) -> Outcome:
        """Apply ``--instrbudget-update``/``--instrbudget-prune`` to the baseline, once; not in a
        run the user ``interrupted`` (Ctrl-C): it is written at the end of a run, not part-way."""
        outcome = Outcome()
        base = self.baseline
        outcome.stale = self._stale(base)
        if not (self.run.update or self.run.prune) or self.builder is None or self.run.disable:
            return outcome
        if interrupted:
            outcome.refused = "the run was interrupted; run it again to update the baseline"
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
                        # Damaged: rewritten from this run, as at the start said.
                        return self._apply(Baseline(base.path), outcome, damaged=True)
                return self._apply(base, outcome)
        except OSError as exc:
            outcome.written = False
            outcome.errors.append(f"cannot write the baseline {base.path}: {describe_os_error(exc)}")
            return outcome

    def _apply(self, base: Baseline, outcome: Outcome, *, damaged: bool = False) -> Outcome:
        """Write this session's updates and prunes into ``base`` (read under the lock); a
        ``damaged`` file (unreadable) is kept beside it first, so that a partial run loses no
        other test's entry."""
        outcome.stale = self._stale(base)
        done = update.apply(
            base.path,
            base.snapshot() if base.exists else None,
            {
                n: update.Measured(r.completed, r.costs(), tuple(m.metric for m in r.unavailable))
                for n, r in self.results.items()
            },
            session=self._session_fingerprint(),
            update=self.run.update,
            prune=self.run.prune,
            stale_entries=outcome.stale,
            metric_models=self.metric_models,
            session_models={m.name for m in self.models},
            describe=self.model_description,
        )
        outcome.added, outcome.changed, outcome.pruned = done.added, done.changed, done.pruned
        outcome.not_written = done.not_written
        outcome.rewrite_note = update.rewrite_note(done)
        if done.refused is not None:
            outcome.refused = done.refused
            return outcome
        if done.write:
            kept = keep_damaged(base.path) if damaged else None
            Baseline(base.path, done.fingerprint, done.tests, exists=True).save()
            outcome.written, outcome.kept_damaged = True, kept
        return outcome

    def keep_cache(self) -> None:
        """Record the session's cache hits and builds, and keep the cache within its size."""
        if self.builder is None:
            return
        cache = self.builder.cache
        hits, builds = dict(self.cache_hits), dict(self.cache_builds)
        for table, mine in ((hits, cache.hits), (builds, cache.builds)):
            for kind, n in mine.items():
                table[kind] = table.get(kind, 0) + n
        if hits or builds:  # a session that built nothing (no test used cbuild) leaves the record alone
            eviction.record_session(cache.root, hits, builds)
        limit = self.settings.cache_max_size
        try:
            pruned = eviction.prune(cache.root, limit)
        except OSError as exc:  # an entry that cannot be removed: the session's results stand
            why = describe_os_error(exc)
            self.cache_note = f"build cache {cache.root} could not be kept within cache_max_size: {why}"
            return
        if pruned.removed:
            self.cache_note = (
                f"build cache {cache.root} was over its cache_max_size of {eviction.format_size(limit)} "
                f"({eviction.format_size(pruned.size_before)}): removed {pruned.removed} least recently used "
                f"entries ({eviction.format_size(pruned.freed)})"
            )
        elif pruned.in_use and pruned.size_after > limit:
            self.cache_note = (
                f"build cache {cache.root} is over its cache_max_size of {eviction.format_size(limit)} "
                f"({eviction.format_size(pruned.size_after)}), all of it used in the last "
                f"{eviction.GRACE / 60:.0f} minutes; raise cache_max_size"
            )

    def _stale(self, base: Baseline) -> list[str]:
        """Entries of ``base`` whose test no longer exists."""
        return update.stale(
            base.tests,
            collected=self.collected,
            measured=self.results,
            partial=self.partial_files,
            root=self.settings.root,
        )


def _describe(model: CostModel) -> str:
    """``zkvm version=2 po2=20 ...``: a model and the parameters that change its numbers."""
    return " ".join([model.name, *(f"{k.split('.', 1)[1]}={v}" for k, v in model.key_params())])


def _relative(where: str, root: Path) -> str:
    """``/project/src/a.c:12`` -> ``src/a.c:12`` for files under the project."""
    path, _, line = where.rpartition(":")
    try:
        return f"{Path(path).relative_to(root)}:{line}"
    except ValueError:
        return where


def _unchecked_text(m: MetricResult) -> str:
    """Why a limit of ``m`` (an unavailable metric) was not checked, and the ways out."""
    limits = [f"{m.keyword}={m.limit:,}"] if m.limit is not None else []
    limits += [f"{stop_keyword(m.keyword)}={m.stop:,}"] if m.stop is not None else []
    limits += [f"regions[{path!r}]={n:,}" for path, n in sorted(m.region_limits.items())]
    where = f" (at {m.unavailable_where})" if m.unavailable_where else ""
    return (
        f"  {', '.join(limits)} not checked: the {m.model} model could not measure this test:\n"
        f"    {m.unavailable}{where}\n"
        "  make the code build for it or drop the limit; to accept unchecked limits:\n"
        '    budget(unavailable="skip"), or unavailable = "skip" in [tool.instrbudget]'
    )


def _regressed(m: MetricResult) -> bool:
    return m.baseline is not None and m.value > m.baseline * (1 + m.tolerance / 100.0)


def _change(m: MetricResult) -> str:
    """``+1.86%`` against the baseline, or ``new cost`` from a baseline of 0."""
    return f"{m.change:+.2f}%" if m.change is not None else "new cost"


def _headline(m: MetricResult) -> list[str]:
    """Short phrases for the limits ``m`` passed (its own, its regions')."""
    out = []
    if m.limit is not None and m.value > m.limit:
        out.append(f"{m.metric} {m.value:,} > {m.keyword}={m.limit:,}")
    for path, limit in sorted(m.region_limits.items()):
        if path not in m.regions:
            out.append(f"region {path!r} never ran")
        elif m.regions[path] > limit:
            out.append(f"region {path!r} {m.metric} {m.regions[path]:,} > {limit:,}")
    return out


def _failure_text(m: MetricResult, root: Path, cost: Cost | None = None) -> str:
    lines = []
    if m.status == OVER_LIMIT and m.limit is not None and m.value > m.limit:
        over = m.value - m.limit
        pct = f" (+{100.0 * over / m.limit:.2f}%)" if m.limit else ""
        lines.append(f"  {m.metric}: {m.value:,} exceeds {m.keyword}={m.limit:,} by {over:,}{pct}")
    for path, limit in sorted(m.region_limits.items()):
        if not m.regions:  # the marker's check let through only metrics that measure regions
            lines.append(
                f"  region {path!r} has a budget but the test never ran it: it ran no region (no "
                "INSTRBUDGET_REGION_START of instrbudget.h in the code it ran, or unbalanced markers)"
            )
        elif path not in m.regions:
            lines.append(
                f"  region {path!r} has a budget but the test never ran it (regions run: "
                f"{', '.join(sorted(m.regions)) or 'none'})"
            )
        elif m.regions[path] > limit:
            lines.append(f"  region {path!r}: {m.metric} {m.regions[path]:,} exceeds its budget {limit:,}")
    regressed = _regressed(m)
    if regressed:
        lines.append(
            f"  {m.metric}: {m.baseline:,} -> {m.value:,} ({_change(m)}; tolerance {m.tolerance:g}%) "
            "against the baseline"
        )
    # A regression is explained by the functions that grew; a cost over its limit that did not grow
    # past the tolerance (no baseline, or a baseline that already held it) by where the cost is.
    deltas = m.function_deltas() if regressed else []
    if deltas:
        lines.append("  functions whose cost grew most:")
        # Told apart from every function of either run: a new instantiation of a template the
        # baseline has (0 -> n) must not read as that one.
        shown = readable_names([*(name for name, _, _ in deltas), *m.functions, *m.baseline_functions])
        lines += _rows([(shown[name], f"{new - old:+,d}  ({old:,} -> {new:,})") for name, old, new in deltas])
    changed = m.region_deltas() if m.baseline is not None else []
    if changed:
        lines.append("  regions whose cost changed most:")
        lines += _rows([(name, f"{new - old:+,d}  ({old:,} -> {new:,})") for name, old, new in changed])
    shown_function: str | None
    if deltas:
        shown_function = deltas[0][0]
    else:
        top = sorted(m.functions.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
        if top:
            lines.append("  costliest functions:")
            names = readable_names(name for name, _ in top)
            lines += _rows([(names[name], f"{value:,}") for name, value in top])
        shown_function = top[0][0] if top else None
    lines.extend(_hot_lines(m, shown_function))
    lines.extend(_project_calls(m, shown_function, root, cost.call_sites, cost.lines) if cost else [])
    lines.extend(_project_lines(m, shown_function, root))
    if (outside := m.outside_line()) is not None:
        lines += texttable.wrap(outside, LOG_WIDTH, indent="  ", subsequent="    ")
    return "\n".join(lines)


#: The width failure messages' running text is wrapped to: a CI log's.
LOG_WIDTH = 80

#: A failure message's names (functions, regions, source lines) longer than this go on a line of
#: their own, their numbers under the others' on the next: one long C++ name would otherwise push
#: every row's numbers past the width of a CI log.
NAME_COLUMN = 48


def _rows(rows: Sequence[tuple[str, str] | tuple[str, str, str]]) -> list[str]:
    """``name  numbers  [function]`` lines, the numbers aligned after the longest name that fits
    :data:`NAME_COLUMN`; a row's trailing function name that would take it past :data:`LOG_WIDTH`
    goes on the next line, under the numbers."""
    width = max((len(row[0]) for row in rows if len(row[0]) <= NAME_COLUMN), default=0)
    out: list[str] = []
    for name, numbers, *trailing in rows:
        if len(name) > width:
            out.append(f"    {name}")
            name = ""
        line = f"    {name:<{width}}  {numbers}"
        for function in trailing:
            if len(line) + 2 + len(function) <= LOG_WIDTH:
                line += f"  {function}"
            else:
                out.append(line)
                line = f"    {'':<{width}}  {function}"
        out.append(line)
    return out


def _line_rows(heading: str, rows: Sequence[tuple[str, str] | tuple[str, str, str]]) -> list[str]:
    """``heading`` and :func:`_rows` of source lines; where one is longer than :data:`NAME_COLUMN`,
    the directory they all lie in is named once, under the heading, and left out of each."""
    folder, labels = texttable.fold_directory([row[0] for row in rows], NAME_COLUMN)
    if not folder:
        return [heading, *_rows(rows)]
    return [heading, f"    in {folder}", *_rows([(label, *row[1:]) for label, row in zip(labels, rows, strict=True)])]


def _hot_lines(m: MetricResult, function: str | None, n: int = 5) -> list[str]:
    """The costliest source lines of one function (this run)."""
    rows = [(where, value) for f, where, value in m.lines if f == function][:n]
    if function is None or not rows:
        return []
    return _line_rows(f"  hottest lines of {readable(function)}:", [(line_label(w), f"{v:,}") for w, v in rows])


def _library_function(m: MetricResult, function: str, root: Path) -> bool:
    """Whether every costly line of ``function`` a failure shows is library code (the counted C or
    C++ library, a header of the toolchain), which the user does not change."""
    rows = [where for f, where, _ in m.lines if f == function]
    return bool(rows) and all(library_line(function, where, root) for where in rows)


def _project_calls(
    m: MetricResult,
    function: str | None,
    root: Path,
    call_sites: Mapping[str, Mapping[tuple[str, str], int]],
    lines: Mapping[str, Mapping[str, int]],
    n: int = 5,
) -> list[str]:
    """Where the function whose lines a failure shows is library code, the project's own functions'
    lines that call it, or call the library functions that do (a ``strlen`` in a loop's condition),
    with the calls each made: exact, from the block counts. A function is the project's where one
    of its executed ``lines`` is (a call inlined from a header into it, or merged onto no line,
    is still its call); direct calls come first."""
    if function is None or not _library_function(m, function, root):
        return []
    owners: dict[str, bool] = {}

    def own(caller: str) -> bool:
        if caller not in owners:
            owners[caller] = any(not library_line(caller, where, root) for where in lines.get(caller, {}))
        return owners[caller]

    found: dict[tuple[str, str, str], int] = {}  # (caller, "file:line", callee) -> calls
    reached, frontier = {function}, [function]
    while frontier:
        callee = frontier.pop()
        for (caller, where), calls in call_sites.get(callee, {}).items():
            if own(caller):
                found[(caller, where, callee)] = found.get((caller, where, callee), 0) + calls
            elif caller not in reached:  # library code calling it: who calls that
                reached.add(caller)
                frontier.append(caller)
    if not found:
        return []
    ranked = sorted(found.items(), key=lambda kv: (kv[0][2] != function, -kv[1], kv[0][1], kv[0][0]))[:n]
    names = readable_names([*(caller for (caller, _, _), _ in ranked), *(callee for (_, _, callee), _ in ranked)])
    digits = max(len(f"{calls:,}") for _, calls in ranked)
    shown = []
    for (caller, where, callee), calls in ranked:
        what = f"{calls:>{digits},} call{'' if calls == 1 else 's'}"
        if callee != function:
            what += f" of {names[callee]}"
        shown.append((line_label(_relative(where, root)), what, names[caller]))
    return _line_rows("  calls of it from the project's own code:", shown)


def _project_rows(ranked: Sequence[tuple[str, str, int]], root: Path, n: int = 5) -> list[list[object]]:
    """The ``n`` costliest lines of the project's own code among ``ranked`` (every line, costliest
    first): [function, "file:line", cost]."""
    own = (row for row in ranked if not library_line(row[0], row[1], root))
    return [[f, _relative(where, root), v] for f, where, v in itertools.islice(own, n)]


def _project_lines(m: MetricResult, function: str | None, root: Path) -> list[str]:
    """Where the function whose lines a failure shows is library code (the counted C or C++
    library, a header of the toolchain), the costliest lines of the project's own code, which a
    user can change: the lines that call it are often among them."""
    if function is None or not _library_function(m, function, root):
        return []
    if not m.project_lines:
        return []
    shown = [(line_label(where), f, value) for f, where, value in m.project_lines]
    names = readable_names(f for _, f, _ in shown)
    digits = max(len(f"{value:,}") for _, _, value in shown)
    rows = [(label, f"{value:>{digits},}", names[f]) for label, f, value in shown]
    return _line_rows("  hottest lines of the project's own code:", rows)
