"""The built-in cost models, registered through the same hook a third party uses."""

from __future__ import annotations

from collections.abc import Sequence

from cbuild.hookspecs import hookimpl
from cbuild.models.base import CostModel
from cbuild.models.heap import HeapModel
from cbuild.models.ir_count import IrCountModel
from cbuild.models.pipeline import PipelineModel
from cbuild.models.zkvm import ZkvmModel


@hookimpl
def instrbudget_cost_models() -> Sequence[type[CostModel]]:
    """``ir-count``, ``heap``, ``pipeline`` and ``zkvm``."""
    return [IrCountModel, HeapModel, PipelineModel, ZkvmModel]
