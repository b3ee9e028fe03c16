"""Regions an execution passed through (instrbudget.h), as the runtime writes them."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cbuild.errors import ExecutionError

_MAGIC = "instrbudget-profile 1 "


@dataclass(frozen=True)
class RegionProblem:
    """An unbalanced marker: a region never stopped (``open``), or a stop without a start (``unopened``)."""

    kind: str
    file: str
    line: int
    name: str = ""

    def __str__(self) -> str:
        if self.kind == "open":
            return f"{self.file}:{self.line}: region {self.name!r} was started here and never stopped"
        if self.kind == "unopened":
            return f"{self.file}:{self.line}: region stop without a started region"
        return f"{self.line} region(s) past the runtime's limits (64 deep, 512 distinct) were not measured"


@dataclass(frozen=True)
class Profile:
    """Regions, and (in builds made for profiles) functions and call paths of one execution."""

    #: Region path ("parse", "parse/tokens") -> (times run, {metric: inclusive cost}).
    regions: dict[str, tuple[int, dict[str, int]]] = field(default_factory=dict)
    problems: tuple[RegionProblem, ...] = ()
    #: Function -> (calls, {metric: inclusive cost}).
    functions: dict[str, tuple[int, dict[str, int]]] = field(default_factory=dict)
    #: Call path (outermost first) -> {metric: exclusive cost}.
    paths: dict[tuple[str, ...], dict[str, int]] = field(default_factory=dict)

    def values(self, metric: str) -> dict[str, int]:
        """Region path -> cost in one metric (empty when no clock measured that metric)."""
        return {path: costs[metric] for path, (_, costs) in self.regions.items() if metric in costs}

    def inclusive(self, metric: str) -> dict[str, int]:
        """Function -> inclusive cost in one metric."""
        return {name: costs[metric] for name, (_, costs) in self.functions.items() if metric in costs}

    def calls(self) -> dict[str, int]:
        """Function -> number of calls."""
        return {name: calls for name, (calls, _) in self.functions.items()}

    def stacks(self, metric: str) -> dict[tuple[str, ...], int]:
        """Call path -> exclusive cost in one metric (paths that cost nothing left out)."""
        return {path: costs[metric] for path, costs in self.paths.items() if costs.get(metric)}


def with_machine_regions(
    profile: Profile | None, measured: Mapping[str, tuple[int, Sequence[int]]], clocks: Sequence[str]
) -> Profile | None:
    """``profile`` with the regions a RISC-V execution measured (:attr:`cbuild.riscv.executor.Execution.regions`),
    each model's clock under its metric name (``clocks``, in runtime order)."""
    if not measured:
        return profile
    base = profile or Profile()
    regions = dict(base.regions)
    for path, (count, values) in measured.items():
        known_count, costs = regions.get(path, (count, {}))
        regions[path] = (known_count, {**costs, **dict(zip(clocks, values, strict=False))})
    return dataclasses.replace(base, regions=regions)


def parse_profile(text: str, metrics: list[str], *, where: str, functions: list[str] | None = None) -> Profile:
    """Read the runtime's profile text; ``metrics`` names its clocks in order, ``functions``
    the functions by number (table order)."""
    functions = functions or []
    lines = text.splitlines()
    if not lines or not lines[0].startswith(_MAGIC):
        raise ExecutionError(f"{where} is not an instrbudget profile")
    names: dict[str, tuple[str, str]] = {}  # id -> (parent id, name)
    raw: dict[str, tuple[int, list[int]]] = {}
    problems = []
    calls: dict[str, tuple[int, dict[str, int]]] = {}
    path_nodes: dict[str, tuple[str, str, list[int]]] = {}  # id -> (parent id, function, self costs)

    def name_of(fid: str) -> str:
        index = int(fid)
        return functions[index] if index < len(functions) else f"function#{index}"

    try:
        for line in lines[1:]:
            kind, *fields = line.split("\t")
            if kind == "region":
                node, parent, count, values, name = fields
                names[node] = (parent, name)
                raw[node] = (int(count), [int(v) for v in values.split(",")])
            elif kind == "open":
                problems.append(RegionProblem("open", fields[0], int(fields[1]), fields[2]))
            elif kind == "unopened":
                problems.append(RegionProblem("unopened", fields[0], int(fields[1])))
            elif kind == "lost":
                problems.append(RegionProblem("lost", "", int(fields[0])))
            elif kind == "func":
                fid, count, values = fields
                calls[name_of(fid)] = (
                    int(count),
                    dict(zip(metrics, (int(v) for v in values.split(",")), strict=False)),
                )
            elif kind == "path":
                node, parent, fid, values = fields
                path_nodes[node] = (parent, name_of(fid), [int(v) for v in values.split(",")])
    except (ValueError, IndexError) as exc:
        raise ExecutionError(f"{where}: malformed profile line ({exc})") from None

    def path(node: str) -> str:
        parts = []
        while node in names:
            node, name = names[node]
            parts.append(name)
        return "/".join(reversed(parts))

    regions = {
        path(node): (count, dict(zip(metrics, values, strict=False))) for node, (count, values) in raw.items() if count
    }
    stacks: dict[tuple[str, ...], dict[str, int]] = {}
    for node, (_, _, self_costs) in path_nodes.items():
        frames = []
        cursor = node
        while cursor in path_nodes:
            parent, function, _ = path_nodes[cursor]
            frames.append(function)
            cursor = parent
        stacks[tuple(reversed(frames))] = dict(zip(metrics, self_costs, strict=False))
    return Profile(regions, tuple(problems), calls, stacks)


def read_profile(path: Path, metrics: list[str], functions: list[str] | None = None) -> Profile | None:
    """The profile the runtime wrote beside a counts file, or None if it wrote none."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    return parse_profile(text, metrics, where=str(path), functions=functions)


#: The metric of clock 0, the running total of IR instructions every instrumented build keeps.
IR_METRIC = "ir_instructions"


def clock_metrics(models: dict[str, object]) -> list[str]:
    """Metric of each clock, from an artifact's model metadata: the IR total first."""
    clocks = [IR_METRIC]
    for doc in models.values():
        if isinstance(doc, dict) and "clock" in doc:
            index, metric = doc["clock"]
            clocks.extend([""] * (index + 1 - len(clocks)))
            clocks[index] = metric
    return clocks


def unstoppable_clocks(models: dict[str, object]) -> dict[str, str]:
    """Metric -> model, for the clocks a build keeps that nothing looks at before each block (the
    model's dynamic phase asks for no block events): a cut-off cannot stop code at them."""
    return {
        doc["clock"][1]: name
        for name, doc in models.items()
        if isinstance(doc, dict) and "clock" in doc and not doc.get("stops")
    }


def clock_numbers(models: dict[str, object]) -> dict[str, int]:
    """Metric -> the runtime's clock number, from an artifact's model metadata."""
    return {metric: n for n, metric in enumerate(clock_metrics(models)) if metric}
