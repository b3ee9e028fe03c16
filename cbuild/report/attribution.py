"""Costs of an execution with their attributions: per function, per region, per source line."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from cbuild.models.base import CostModel, evaluated
from cbuild.models.costs import BlockCounts, Cost, call_sites, line_costs, outside_calls

#: The metric whose cost is known per IR instruction, hence per source line.
LINE_METRIC = "ir_instructions"


def attributed(models: Sequence[CostModel], counts: Sequence[BlockCounts]) -> dict[str, Cost]:
    """Every model's costs, summed over several artifacts' counts, with regions and source lines.

    Regions come from the clock the runtime keeps for a metric (the IR instruction
    total, and the models with a dynamic phase); source lines for IR instructions.
    """
    out: dict[str, Cost] = {}
    for c in counts:
        for model in models:
            for cost in evaluated(model, c):
                if c.profile is not None:
                    cost = dataclasses.replace(
                        cost,
                        regions=c.profile.values(cost.metric),
                        inclusive=c.profile.inclusive(cost.metric),
                        calls=c.profile.calls() if c.profile.functions else {},
                        stacks={";".join(path): v for path, v in c.profile.stacks(cost.metric).items()},
                    )
                if cost.metric == LINE_METRIC:
                    cost = dataclasses.replace(
                        cost, lines=line_costs(c), outside_calls=outside_calls(c), call_sites=call_sites(c)
                    )
                out[cost.metric] = out[cost.metric] + cost if cost.metric in out else cost
    for model in models:
        for metric in model.metrics:
            out.setdefault(metric.name, Cost(metric.name, 0))
    return out
