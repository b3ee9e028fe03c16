"""The ``ir-count`` model: executed LLVM IR instructions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cbuild.build.blocks import BlockTable
from cbuild.models.base import CostModel, Metric


class IrCountModel(CostModel):
    """The sum over executed blocks of the block's size: exact, additive, no run-time state."""

    name = "ir-count"
    metrics = (Metric("ir_instructions", "IR instructions", "max_instr"),)

    def block_costs(self, table: BlockTable, analysis: Mapping[str, Any]) -> Sequence[int]:
        return table.sizes
