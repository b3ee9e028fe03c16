"""Hooks through which packages add cost models (pluggy, project name ``instrbudget``).

A package provides models by implementing :func:`instrbudget_cost_models` in a
module and naming that module in its ``instrbudget`` entry-point group::

    # chipco_models.py
    from cbuild.build.blocks import parse_module
    from cbuild.hookspecs import hookimpl
    from cbuild.models import CostModel, Metric


    class LoadCount(CostModel):
        \"\"\"Executed loads: an additive model.\"\"\"

        name = "loads"
        metrics = (Metric("loads", "loads", "max_loads"),)

        def analyse(self, build):
            parsed = parse_module(build.ir)
            lines = parsed.lines
            loads = [sum(" = load " in line for line in lines[b.first_line : b.term_end]) for b in parsed.blocks]
            return {"loads": loads}

        def block_costs(self, table, analysis):
            return analysis["loads"]


    @hookimpl
    def instrbudget_cost_models():
        return [LoadCount]

    # pyproject.toml of the package
    [project.entry-points.instrbudget]
    chipco = "chipco_models"

The built-in models (``ir-count``, ``pipeline``, ``zkvm``, ``heap``) implement the same hook, in
:mod:`cbuild.models.builtin`, registered directly rather than through an entry point. docs/cost-models.md
has the example in full.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from cbuild.models.base import CostModel

PROJECT = "instrbudget"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def instrbudget_cost_models() -> Sequence[type[CostModel]]:  # type: ignore[empty-body]
    """Return the :class:`~cbuild.models.CostModel` subclasses this plugin provides."""
