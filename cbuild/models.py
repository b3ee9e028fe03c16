"""Cost models: how executed blocks turn into a metric.

A model has a static phase (a cost per basic block, computed from the block
table once per build) and turns counts into :class:`~cbuild.costs.Cost` values.
The built-in ``ir-count`` model is registered exactly as a third party's would be.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from cbuild.blocks import BlockTable
from cbuild.costs import BlockCounts, Cost, weighted_cost
from cbuild.errors import CBuildError


@dataclass(frozen=True)
class Metric:
    """A number a model reports, and the marker keyword that limits it."""

    name: str
    unit: str
    keyword: str


class CostModel(ABC):
    """One way of costing an execution."""

    #: Name used in ``models = [...]`` and on the command line.
    name: str
    #: The metrics this model reports; the first is its headline metric.
    metrics: tuple[Metric, ...]

    def __init__(self, params: Mapping[str, Any] | None = None) -> None:
        self.params = dict(params or {})

    def key_params(self) -> tuple[tuple[str, str], ...]:
        """Parameters that change the result; part of build keys and baselines."""
        return tuple(sorted((f"{self.name}.{k}", repr(v)) for k, v in self.params.items()))

    @abstractmethod
    def block_costs(self, table: BlockTable) -> list[int]:
        """Static phase: a cost per block, in counter order."""

    def evaluate(self, counts: BlockCounts) -> list[Cost]:
        """Costs of an execution, one per metric (additive models need not override this)."""
        costs = self.block_costs(counts.table)
        return [weighted_cost(self.metrics[0].name, counts, costs)]


class IrCountModel(CostModel):
    """Executed LLVM IR instructions: the sum over executed blocks of the block's size."""

    name = "ir-count"
    metrics = (Metric("ir_instructions", "IR instructions", "max_instr"),)

    def block_costs(self, table: BlockTable) -> list[int]:
        return table.sizes


ModelFactory = Callable[[Mapping[str, Any]], CostModel]


class ModelRegistry:
    """Known cost models by name."""

    def __init__(self) -> None:
        self._factories: dict[str, ModelFactory] = {}

    def register(self, name: str, factory: ModelFactory) -> None:
        """Add a model; names are unique."""
        if name in self._factories:
            raise CBuildError(f"cost model {name!r} is registered twice")
        self._factories[name] = factory

    @property
    def names(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self._factories)

    def create(self, name: str, params: Mapping[str, Any] | None = None) -> CostModel:
        """Instantiate a model; an unknown name lists the known ones."""
        try:
            factory = self._factories[name]
        except KeyError:
            raise CBuildError(f"unknown cost model {name!r}; known models: {', '.join(self.names)}") from None
        return factory(params or {})


def default_registry() -> ModelRegistry:
    """A registry holding the built-in models."""
    registry = ModelRegistry()
    registry.register(IrCountModel.name, IrCountModel)
    return registry
