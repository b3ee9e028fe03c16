"""Cost models: how an execution turns into metrics (interface, registry, built-in models)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cbuild.models.base import BLOCKS, MEMORY, BuildView, CostModel, Metric, ModelError, Param, Runtime, integer
    from cbuild.models.ir_count import IrCountModel
    from cbuild.models.registry import ModelRegistry, default_registry

#: Public name -> the module that defines it, imported on first use (PEP 562), so that a
#: process needing one part (the RISC-V executor's child, a library worker) loads only that.
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


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


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
