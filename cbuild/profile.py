"""Regions an execution passed through (instrbudget.h), as the runtime writes them."""

from __future__ import annotations

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
        return f"{self.line} regions nested deeper than 64 were not measured"


@dataclass(frozen=True)
class Profile:
    """Per region path ("parse", "parse/tokens"): how often it ran and its cost by metric."""

    #: Region path -> (times run, {metric: inclusive cost}).
    regions: dict[str, tuple[int, dict[str, int]]] = field(default_factory=dict)
    problems: tuple[RegionProblem, ...] = ()

    def values(self, metric: str) -> dict[str, int]:
        """Region path -> cost in one metric (empty when no clock measured that metric)."""
        return {path: costs[metric] for path, (_, costs) in self.regions.items() if metric in costs}


def parse_profile(text: str, metrics: list[str], *, where: str) -> Profile:
    """Read the runtime's profile text; ``metrics`` names its clocks in order."""
    lines = text.splitlines()
    if not lines or not lines[0].startswith(_MAGIC):
        raise ExecutionError(f"{where} is not an instrbudget profile")
    names: dict[str, tuple[str, str]] = {}  # id -> (parent id, name)
    raw: dict[str, tuple[int, list[int]]] = {}
    problems = []
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
    except ValueError as exc:
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
    return Profile(regions, tuple(problems))


def read_profile(path: Path, metrics: list[str]) -> Profile | None:
    """The profile the runtime wrote beside a counts file, or None if it wrote none."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    return parse_profile(text, metrics, where=str(path))


def clock_metrics(models: dict[str, object]) -> list[str]:
    """Metric of each clock, from an artifact's model metadata: the IR total first."""
    clocks = ["ir_instructions"]
    for doc in models.values():
        if isinstance(doc, dict) and "clock" in doc:
            index, metric = doc["clock"]
            clocks.extend([""] * (index + 1 - len(clocks)))
            clocks[index] = metric
    return clocks
