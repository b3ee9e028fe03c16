"""Cost models: how an execution turns into metrics (interface, registry, built-in models)."""

from __future__ import annotations

from cbuild.models.base import BLOCKS, MEMORY, BuildView, CostModel, Metric, ModelError, Param, Runtime, integer
from cbuild.models.ir_count import IrCountModel
from cbuild.models.registry import ModelRegistry, default_registry

__all__ = [
    "BLOCKS",
    "MEMORY",
    "BuildView",
    "CostModel",
    "IrCountModel",
    "Metric",
    "ModelError",
    "ModelRegistry",
    "Param",
    "Runtime",
    "default_registry",
    "integer",
]
