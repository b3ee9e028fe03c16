"""Executed block counts and what they cost."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cbuild.blocks import BlockTable


@dataclass(frozen=True)
class BlockCounts:
    """How often each block of one artifact ran."""

    table: BlockTable
    counts: tuple[int, ...]
    #: Model name -> its static phase's document for this artifact.
    analyses: Mapping[str, Any] = field(default_factory=dict)
    #: Model name -> the numbers its dynamic phase reported for this execution.
    results: Mapping[str, tuple[int, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.counts) != len(self.table):
            raise ValueError(f"{len(self.counts)} counters for a table of {len(self.table)} blocks")

    def analysis(self, model: str) -> Mapping[str, Any]:
        """A model's static document (empty if the artifact was built without it)."""
        doc: Mapping[str, Any] = self.analyses.get(model, {})
        return doc

    def results_of(self, model: str) -> tuple[int, ...]:
        """A model's dynamic results; an error if the artifact was built without the model."""
        try:
            return self.results[model]
        except KeyError:
            raise ValueError(
                f"this artifact was built without the dynamic phase of cost model {model!r}; "
                "build it with the model active"
            ) from None


@dataclass(frozen=True)
class Cost:
    """One metric's value for a measurement, with its per-function breakdown."""

    metric: str
    total: int
    #: Function name -> exclusive cost (the cost of the function's own blocks).
    functions: dict[str, int] = field(default_factory=dict)

    def __add__(self, other: Cost) -> Cost:
        if other.metric != self.metric:
            raise ValueError(f"cannot add {other.metric} to {self.metric}")
        functions = dict(self.functions)
        for name, value in other.functions.items():
            functions[name] = functions.get(name, 0) + value
        return Cost(self.metric, self.total + other.total, functions)

    def top_functions(self, n: int = 5) -> list[tuple[str, int]]:
        """The ``n`` costliest functions, ties broken by name."""
        return sorted(self.functions.items(), key=lambda kv: (-kv[1], kv[0]))[:n]


def weighted_cost(metric: str, counts: BlockCounts, block_costs: Sequence[int]) -> Cost:
    """Sum of count x per-block cost, overall and per function."""
    functions: dict[str, int] = {}
    total = 0
    for block, count, cost in zip(counts.table.blocks, counts.counts, block_costs, strict=True):
        if count and cost:
            value = count * cost
            total += value
            functions[block.function] = functions.get(block.function, 0) + value
    return Cost(metric, total, functions)
