"""Per-test results: each metric's value against its limit and baseline, and the verdict."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from cbuild.build.demangle import demangle, demangled_keys, readable_names
from cbuild.models.costs import Cost
from cbuild.report import texttable
from cbuild.report.diff import deltas

OK = "ok"
NEW = "new"
IMPROVED = "improved"
REGRESSED = "regressed"
#: Grew past its tolerance in a run with ``--instrbudget-update``, which records the new cost.
ACCEPTED = "accepted"
OVER_LIMIT = "over limit"
NOT_COMPARABLE = "not comparable"
#: The test raised, or a library's process died: its counts are partial, compared with nothing.
ERROR = "error"
#: The metric's model could not measure the test's code (its target cannot build it): no value,
#: and neither its limit nor its baseline is checked.
UNAVAILABLE = "unavailable"
#: A test's status (not a metric's): it failed because a limit or cut-off of it is on a metric its
#: model could not measure (``unavailable = "fail"``, the default), or because a model failed.
NOT_MEASURED = "not measured"


@dataclass(frozen=True)
class MetricResult:
    """One metric of one test."""

    metric: str
    keyword: str
    value: int
    limit: int | None
    baseline: int | None
    tolerance: float
    status: str
    functions: dict[str, int] = field(default_factory=dict)
    baseline_functions: dict[str, int] = field(default_factory=dict)
    #: Region path -> inclusive cost; the baseline's; the budget's limits.
    regions: dict[str, int] = field(default_factory=dict)
    baseline_regions: dict[str, int] = field(default_factory=dict)
    region_limits: dict[str, int] = field(default_factory=dict)
    #: The costliest source lines: [function, "file:line", cost], most first.
    lines: list[list[Any]] = field(default_factory=list)
    #: The costliest lines of the project's own code (not library code: ``library_line``), for
    #: failure messages: the lines above may be all the library's.
    project_lines: list[list[Any]] = field(default_factory=list)
    #: In builds made for profiles: inclusive cost and calls per function.
    inclusive: dict[str, int] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)
    #: Call paths ("main;parse;next") -> exclusive cost, kept for the HTML report's flame graphs.
    stacks: dict[str, int] = field(default_factory=dict)
    #: Calls of functions outside the build (the host's libraries), whose work the value leaves out.
    outside_calls: dict[str, int] = field(default_factory=dict)
    #: The cost model the metric belongs to.
    model: str = ""
    #: With status ``unavailable``: why, the ``file:line`` the reason points at, and its function (a symbol).
    unavailable: str | None = None
    unavailable_where: str | None = None
    unavailable_function: str | None = None
    #: With status ``unavailable``: the test's cut-off on the metric (``stop_at_zkcycles``), not checked either.
    stop: int | None = None

    @property
    def no_value(self) -> bool:
        """Measured, but without a value: a stopped or crashed run's other metrics counted nothing
        (status ``error``, 0), shown as ``-``."""
        return self.status == ERROR and not self.value

    @property
    def change(self) -> float | None:
        """Percent change against the baseline (None without one, from a zero baseline, unavailable,
        or without a value)."""
        if self.baseline is None or self.baseline == 0 or self.status == UNAVAILABLE or self.no_value:
            return None
        return 100.0 * (self.value - self.baseline) / self.baseline

    def function_deltas(self, n: int = 5) -> list[tuple[str, int, int]]:
        """Functions whose cost grew most: (name, old, new)."""
        return deltas(self.baseline_functions, self.functions, n, grown_only=True)

    def region_deltas(self, n: int = 5) -> list[tuple[str, int, int]]:
        """Regions whose cost changed most: (path, old, new)."""
        return deltas(self.baseline_regions, self.regions, n)

    def unavailable_json(self) -> dict[str, Any]:
        """Why the metric is unavailable, for the reports (status ``unavailable`` only)."""
        function = self.unavailable_function
        return {
            "model": self.model,
            "reason": self.unavailable,
            "where": self.unavailable_where,
            "function": demangle(function) if function else None,
            "limit": self.limit,
            "stop": self.stop,
            "baseline": self.baseline,
        }

    def to_json(self) -> dict[str, Any]:
        (functions, inclusive, calls), symbols = demangled_keys(self.functions, self.inclusive, self.calls)
        return {
            "value": self.value,
            "limit": self.limit,
            "baseline": self.baseline,
            # Unrounded: a reader's own rounding to two places then agrees with the terminal's.
            "change_percent": self.change,
            "tolerance_percent": self.tolerance,
            "status": self.status,
            "functions": functions,
            "symbols": symbols,
            "regions": dict(sorted(self.regions.items())),
            "region_limits": dict(sorted(self.region_limits.items())),
            "lines": [[demangle(f), where, value] for f, where, value in self.lines],
            "inclusive": inclusive,
            "calls": calls,
            "outside_calls": {demangle(f): n for f, n in sorted(self.outside_calls.items())},
        }

    def outside_line(self, top: int = 6) -> str | None:
        """``calls outside the count: printf x1,000, write x3`` (the most called first), or None;
        a name and its count are kept on one line where the text is wrapped (:func:`texttable.wrap`)."""
        if not self.outside_calls:
            return None
        ranked = sorted(self.outside_calls.items(), key=lambda kv: (-kv[1], kv[0]))
        names = readable_names(f for f, _ in ranked[:top])
        shown = ", ".join(f"{names[f]}{texttable.KEEP}x{n:,}" for f, n in ranked[:top])
        more = f", and {len(ranked) - top} more" if len(ranked) > top else ""
        return f"calls outside the count (not counted): {shown}{more}"


@dataclass(frozen=True)
class TestResult:
    """Everything measured for one test."""

    nodeid: str
    budgeted: bool
    metrics: list[MetricResult]
    #: Set when the test failed on cost.
    failure: str | None = None
    #: False when the test body raised: its cost is shown but never written to the baseline.
    completed: bool = True
    #: Unbalanced region markers met during the test ("file:line: ...").
    region_problems: list[str] = field(default_factory=list)

    @property
    def measured(self) -> list[MetricResult]:
        """The metrics that have a value (not ``unavailable``)."""
        return [m for m in self.metrics if m.status != UNAVAILABLE]

    @property
    def uncompared(self) -> bool:
        """Whether the test has a budget and a metric the baseline could not be compared on."""
        return self.budgeted and any(m.status == NOT_COMPARABLE for m in self.metrics)

    @property
    def unavailable(self) -> list[MetricResult]:
        """The metrics whose model could not measure the test's code."""
        return [m for m in self.metrics if m.status == UNAVAILABLE]

    @property
    def status(self) -> str:
        """The worst metric status; :data:`NOT_MEASURED` before those a failing test's metrics give
        where an unavailable metric failed it (unavailable metrics have no status of their own to give)."""
        statuses = {m.status for m in self.metrics}
        if self.failure is not None and self.unavailable and not statuses & {OVER_LIMIT, REGRESSED, ERROR}:
            return NOT_MEASURED
        order = [OVER_LIMIT, REGRESSED, ERROR, NOT_COMPARABLE, ACCEPTED, NEW, IMPROVED, OK]
        return next((s for s in order if s in statuses), OK)

    @property
    def improved(self) -> bool:
        """A metric fell below the baseline and the test passed: worth recording with ``--instrbudget-update``."""
        return self.completed and self.failure is None and any(m.status == IMPROVED for m in self.metrics)

    def costs(self) -> dict[str, Cost]:
        """The measured values as costs, for the baseline (unavailable metrics have none)."""
        return {m.metric: Cost(m.metric, m.value, dict(m.functions), dict(m.regions)) for m in self.measured}

    def to_json(self) -> dict[str, Any]:
        return {
            "nodeid": self.nodeid,
            "budgeted": self.budgeted,
            "status": self.status,
            "failure": self.failure,
            "completed": self.completed,
            "metrics": {m.metric: m.to_json() for m in self.measured},
            "unavailable": {m.metric: m.unavailable_json() for m in self.unavailable},
            "region_problems": self.region_problems,
        }

    def to_wire(self) -> dict[str, Any]:
        """Everything, for sending from an xdist worker to the controller."""
        return dataclasses.asdict(self)

    @classmethod
    def from_wire(cls, doc: dict[str, Any]) -> TestResult:
        """Inverse of :meth:`to_wire`."""
        metrics = [MetricResult(**m) for m in doc["metrics"]]
        return cls(doc["nodeid"], doc["budgeted"], metrics, doc["failure"], doc["completed"], doc["region_problems"])
