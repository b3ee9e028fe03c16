"""The ``budget`` marker: limits per metric and a tolerance, read from a test item."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pytest

from cbuild.models import CostModel
from pytest_instrbudget.config import ConfigError, parse_percent

MARKER = "budget"
MARKER_HELP = (
    "budget(max_instr=N, tolerance=PCT, regions={NAME: N}, timeout=SECONDS): fail when the test's instrumented "
    "C/C++ code executes more than N IR instructions (or a region more than its N), or more than its baseline "
    "plus PCT percent; library calls and program runs may take SECONDS each"
)


@dataclass(frozen=True)
class Budget:
    """Limits for one test: metric name -> maximum, plus an optional tolerance."""

    limits: dict[str, int] = field(default_factory=dict)
    tolerance: float | None = None
    #: Region path -> metric name -> maximum.
    regions: dict[str, dict[str, int]] = field(default_factory=dict)
    #: Seconds a program run or a library call of this test may take (overrides the config).
    timeout: float | None = None

    @classmethod
    def from_item(cls, item: pytest.Item, models: list[CostModel], all_keywords: dict[str, str]) -> Budget | None:
        """The item's budget, or None when it has no marker.

        ``all_keywords`` maps every keyword of every registered model to its model's
        name, so that a keyword of an inactive model gets a precise error.
        """
        marks = list(item.iter_markers(MARKER))
        if not marks:
            return None
        active = {m.keyword: m.name for model in models for m in model.metrics}
        limits: dict[str, int] = {}
        tolerance: float | None = None
        timeout: float | None = None
        regions: dict[str, dict[str, int]] = {}
        headline = models[0].metrics[0].name if models else "ir_instructions"
        # The closest marker wins for each keyword (function over class over module).
        for mark in reversed(marks):
            if mark.args:
                raise ConfigError(f"{item.nodeid}: @pytest.mark.budget takes keyword arguments only")
            for key, value in mark.kwargs.items():
                if key == "tolerance":
                    tolerance = parse_percent(value, where=f"{item.nodeid}: budget(tolerance=...)")
                elif key == "timeout":
                    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
                        raise ConfigError(
                            f"{item.nodeid}: budget(timeout=...) must be a positive number of seconds, got {value!r}"
                        )
                    timeout = float(value)
                elif key == "regions":
                    regions.update(_region_limits(item.nodeid, value, active, headline))
                elif key in active:
                    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                        raise ConfigError(
                            f"{item.nodeid}: budget({key}=...) must be a non-negative integer, got {value!r}"
                        )
                    limits[active[key]] = value
                elif key in all_keywords:
                    raise ConfigError(
                        f"{item.nodeid}: budget({key}=...) belongs to the cost model "
                        f"{all_keywords[key]!r}, which is not active; add it to `models` in "
                        f"[tool.instrbudget] or pass --instrbudget-model={all_keywords[key]}"
                    )
                else:
                    accepted = ", ".join(sorted([*active, "regions", "timeout", "tolerance"]))
                    raise ConfigError(
                        f"{item.nodeid}: unknown keyword {key!r} in @pytest.mark.budget; accepted: {accepted}"
                    )
        return cls(limits, tolerance, regions, timeout)


def _limit(nodeid: str, where: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"{nodeid}: budget({where}) must be a non-negative integer, got {value!r}")
    return value


def _region_limits(nodeid: str, value: object, active: dict[str, str], headline: str) -> dict[str, dict[str, int]]:
    """``regions={"parse": 2000}`` limits the headline metric; ``{"parse": {"max_cycles": 900}}`` any."""
    if not isinstance(value, dict) or not all(isinstance(k, str) and k for k in value):
        raise ConfigError(f'{nodeid}: budget(regions=...) must map region names to limits, e.g. {{"parse": 2000}}')
    out: dict[str, dict[str, int]] = {}
    for name, limit in value.items():
        if isinstance(limit, dict):
            per: dict[str, int] = {}
            for keyword, n in limit.items():
                if keyword not in active:
                    accepted = ", ".join(sorted(active))
                    raise ConfigError(
                        f"{nodeid}: budget(regions={{{name!r}: {{{keyword!r}: ...}}}}): unknown keyword; "
                        f"accepted: {accepted}"
                    )
                per[active[keyword]] = _limit(nodeid, f"regions[{name!r}][{keyword!r}]", n)
            out[name] = per
        else:
            out[name] = {headline: _limit(nodeid, f"regions[{name!r}]", limit)}
    return out
