"""The models stage: what a run observed in, metrics out.

The interface (:mod:`.base`), the registry that finds models through entry points
(:mod:`.registry`), the built-in models registered like any third party's
(:mod:`.builtin`: :mod:`.ir_count`, :mod:`.zkvm`, :mod:`.pipeline`), the counts and
costs they work on (:mod:`.costs`, :mod:`.profile`) and the C code of their dynamic
phases linked into builds (:mod:`.dynamic`).

Imports :mod:`cbuild.build` and :mod:`cbuild.riscv`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cbuild.lazy import lazy_exports

if TYPE_CHECKING:
    from cbuild.models.base import BLOCKS, MEMORY, BuildView, CostModel, Metric, ModelError, Param, Runtime, integer
    from cbuild.models.costs import BlockCounts, Cost
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
    "BlockCounts": "cbuild.models.costs",
    "Cost": "cbuild.models.costs",
    "IrCountModel": "cbuild.models.ir_count",
    "ModelRegistry": "cbuild.models.registry",
    "default_registry": "cbuild.models.registry",
}


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

__all__ = [
    "BLOCKS",
    "MEMORY",
    "BlockCounts",
    "BuildView",
    "Cost",
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
