"""What one test's instrumented code executes during its call phase."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from cbuild.build.builder import Artifact
from cbuild.models import CostModel, ModelError
from cbuild.models.costs import BlockCounts, Cost, Unavailability, unavailability
from cbuild.report.attribution import attributed
from cbuild.run.hosts import HostProcess
from cbuild.run.library import Library
from cbuild.run.stops import Stop, checked_limits


@dataclass(frozen=True)
class Measurement:
    """A test's (or a run's) costs per metric, and the metrics its models could not measure."""

    costs: dict[str, Cost]
    #: Metric -> why its model could not measure the code (one reason per model).
    unavailable: dict[str, Unavailability]


def measure(models: Sequence[CostModel], counts: Sequence[BlockCounts]) -> Measurement:
    """Every model's costs summed over several artifacts' counts, with regions and source lines.

    Each artifact counts for the models it was built with. A model that could not measure one
    of the artifacts (its target cannot build the code) has its metrics unavailable, with the
    reason, rather than a partial sum; so has a model none of the artifacts was built with, and
    one that failed (``failed``: the test fails whatever its limits).
    """
    costs: dict[str, Cost] = {}
    unavailable: dict[str, Unavailability] = {}
    for c in counts:
        built = [model for model in models if model.name in c.analyses]
        measuring = [model for model in built if model.name not in c.unavailable]
        for model in measuring:
            try:
                measured = attributed([model], [c])
            except ModelError as exc:  # the model failed: its metrics have no value, and the test fails
                for m in model.metrics:
                    unavailable[m.name] = Unavailability(model.name, str(exc), failed=True)
                continue
            for metric, cost in measured.items():
                costs[metric] = costs[metric] + cost if metric in costs else cost
        for model in built:
            if model.metrics[0].name in unavailable:  # one reason per model: the first found
                continue
            why = unavailability(c, model.name)
            if why is not None:
                for m in model.metrics:
                    unavailable.setdefault(m.name, why)
    for model in models:
        if counts and not any(model.name in c.analyses for c in counts):
            why = Unavailability(
                model.name,
                f"no build of this test was made with the {model.name} model "
                "(models= of cbuild.library, program or extension left it out)",
            )
            for m in model.metrics:
                unavailable.setdefault(m.name, why)
        for m in model.metrics:
            costs.setdefault(m.name, Cost(m.name, 0))
    for metric in unavailable:
        costs.pop(metric, None)
    return Measurement(costs, unavailable)


class Meter:
    """Collects block counts of libraries and programs while a test's call phase runs.

    Libraries loaded before the call (in fixtures) are snapshotted when the call
    starts; libraries loaded during the call count from their load. Program runs
    count when they happen during the call.
    """

    def __init__(self) -> None:
        self.active = False
        #: A build of the test's was loaded or run during the call: the test has a result (a row).
        self.used = False
        #: Code of those builds ran during the call (decided when it stops): something was measured.
        self.ran = False
        #: The cbuild fixture was set up for the test (before its call, or by
        #: ``request.getfixturevalue`` during it).
        self.fixture = False
        self._libraries: list[tuple[Library, tuple[int, ...] | None]] = []
        self._runs: list[BlockCounts] = []
        #: Crashed program runs' partial counts: part of the measurement only if the test raised.
        self._crashed: list[BlockCounts] = []
        #: Program runs a timeout or the cut-off ended: why, as ``name: reason``.
        self._ended: list[str] = []
        #: Metric -> cut-off for the whole call phase (library calls and program runs together).
        self.limits: dict[str, int] = {}
        #: Metric -> how its cut-off was given, for messages.
        self.limit_labels: dict[str, str] = {}
        self._remaining: dict[str, int] | None = None
        self._host: HostProcess | None = None
        #: The builds whose code ran for the test (libraries and programs), to tell which cut-offs
        #: any of them could check.
        self._artifacts: dict[str, Artifact] = {}

    def set_limits(self, limits: dict[str, int], labels: dict[str, str]) -> None:
        """The test's cut-offs (metric -> count for the whole call phase, and how each was given),
        as the fixture finds them; in force at once where the call has begun (a fixture set up by
        ``request.getfixturevalue``)."""
        self.limits, self.limit_labels = limits, labels
        if self.active:
            self._remaining = dict(limits) if limits else None
            self._push()

    def attach_host(self, host: HostProcess) -> None:
        """The test's library process: it keeps the remaining cut-off while library code runs."""
        self._host = host
        self._push()

    def _push(self) -> None:
        if self.active and self._remaining is not None and self._host is not None and self._host.alive:
            self._host.request("limits", self._remaining, what="setting the cut-off")

    def program_limits(self) -> dict[str, int]:
        """What a program run may still execute, per limited metric (empty: no cut-off)."""
        if not self.active or self._remaining is None:
            return {}
        if self._host is not None and self._host.alive:
            self._remaining = dict(self._host.request("remaining", what="reading the cut-off"))
        return {metric: max(left, 0) for metric, left in self._remaining.items()}

    def program_ran(self, costs: dict[str, int]) -> None:
        """A program run executed ``costs`` (metric -> total): less remains."""
        if self.active and self._remaining is not None:
            self._remaining = {m: left - costs.get(m, 0) for m, left in self._remaining.items()}
            self._push()

    def whole_stop(self, stop: Stop) -> Stop:
        """``stop`` (of a run or call given what the test had left of its cut-off) as the whole
        test's: its count and limit those of the test's cut-off."""
        if stop.metric not in self.limits:
            return stop
        whole = self.limits[stop.metric]
        return replace(stop, count=whole - (stop.limit - stop.count), limit=whole)

    def add_library(self, library: Library, since: tuple[int, ...] | None = None) -> None:
        """Register a library loaded for this test; it counts from ``since`` (a snapshot), else from its load."""
        if library.artifact.instrumented:
            self._libraries.append((library, since))
            self.used = self.used or self.active
            self.add_artifact(library.artifact)

    def add_artifact(self, artifact: Artifact) -> None:
        """A build whose code runs for this test (a library's, or a program's as it starts)."""
        self._artifacts[artifact.key] = artifact

    def unchecked_limits(self) -> list[str]:
        """The metrics with a cut-off that none of the test's builds could check: no build keeps a
        clock of them (a model whose dynamic phase keeps none, or one past the runtime's clocks)."""
        if not self.limits:
            return []
        checked = {m for a in self._artifacts.values() for m in checked_limits(a, dict.fromkeys(self.limits, 0))}
        return [metric for metric in self.limits if metric not in checked]

    def add_run(self, counts: BlockCounts | None) -> None:
        """Register a finished program run."""
        if counts is not None and self.active:
            self._runs.append(counts)
            self.used = True

    def add_crashed(self, counts: BlockCounts | None) -> None:
        """Register what a crashed program run counted until it crashed: it shows in the partial
        cost of a test that fails with the crash, and counts for nothing in one that catches it
        (as expected behaviour) and completes."""
        if counts is not None and self.active:
            self._crashed.append(counts)

    def add_ended(self, name: str, reason: str) -> None:
        """Register a program run of ``name`` that ``reason`` ended before it finished (a timeout, the
        cut-off): what it would have counted is unknown, so a test that catches it and completes has
        incomplete counts, as one whose library process a call ended."""
        if self.active:
            self._ended.append(f"{name}: {reason}")

    def start(self) -> None:
        """The call phase begins: snapshot what is loaded already."""
        self._libraries = [(lib, lib.snapshot()) for lib, _ in self._libraries]
        self.active = True
        self._remaining = dict(self.limits) if self.limits else None
        self._push()
        self.used = self.used or bool(self._libraries)

    def stop(self, completed: bool = True) -> tuple[list[BlockCounts], list[str]]:
        """The call phase ended (``completed``: without raising): counts executed during it, per
        artifact, and why the measurement is incomplete (a library whose process a call ended:
        what it counted until then is among the counts where its runtime wrote it; a program run
        a timeout or the cut-off ended)."""
        if self._remaining is not None and self._host is not None and self._host.alive:
            self._host.request("limits", {}, what="clearing the cut-off")
        self.active = False
        out, lost = [], []
        for lib, since in self._libraries:
            if lib.host.alive:
                out.append(lib.counts(since))
                continue
            # What it counted until a call ended its process, where its runtime could say: the
            # measurement is still incomplete (the test's later calls never ran).
            partial = lib.crashed_counts(since)
            if partial is not None:
                out.append(partial)
            lost.append(f"{lib.artifact.name}: {lib.host.ended}")
        lost += self._ended
        # A program ran, a library's code ran during the call (a library only built or loaded, or
        # called before it, ran nothing), or a library's process ended in a call.
        self.ran = bool(self._runs) or bool(lost) or any(any(c.counts) for c in out)
        if completed:
            return out + self._runs, lost
        self.used = self.used or bool(self._crashed)
        self.ran = self.ran or bool(self._crashed)
        return out + self._runs + self._crashed, lost
