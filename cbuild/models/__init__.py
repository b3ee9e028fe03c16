"""Cost models: how an execution turns into metrics (interface, registry, built-in models)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cbuild.lazy import lazy_exports

if TYPE_CHECKING:
    from cbuild.models.base import BLOCKS, MEMORY, BuildView, CostModel, Metric, ModelError, Param, Runtime, integer
    from cbuild.models.ir_count import IrCountModel
    from cbuild.models.registry import ModelRegistry, default_registry

#: Public name -> the module that defines it, imported on first use (cbuild.lazy).
_EXPORTS = {
    "BLOCKS": "cbuild.models.base",
    "MEMORY": "cbuild.models.base",
    "BuildView": "cbuild.models.base",
    "CostModel": "cbuild.models.base",
    "Metric": "cbuild.models.base",
    "ModelError": "cbuild.models.base",
    "Param": "cbuild.models.base",
    "Runtime": "cbuild.models.base",
    "integer": "cbuild.models.base",
    "IrCountModel": "cbuild.models.ir_count",
    "ModelRegistry": "cbuild.models.registry",
    "default_registry": "cbuild.models.registry",
}


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

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
