"""The ``budget`` marker: limits per metric and a tolerance, read from a test item."""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import dataclass, field

import pytest

from cbuild.config import ConfigError, parse_percent, unavailable_policy
from cbuild.errors import did_you_mean
from cbuild.models import CostModel, ModelError

MARKER = "budget"
MARKER_HELP = (
    "budget(max_instr=N, tolerance=PCT, regions={NAME: N}, timeout=SECONDS, stop_at=M, models=[NAME, ...], "
    'unavailable="fail"|"skip"): fail '
    "when the test's instrumented C/C++ code executes more than N IR instructions (or a region more than its N), or "
    "more than its baseline plus PCT percent; library calls and program runs may take SECONDS each; code that would "
    'pass M instructions (or "10x" max_instr) is stopped there; models= chooses the test\'s cost models; '
    'a limit on a metric its model could not measure fails the test unless unavailable="skip"'
)
#: The cut-off keyword of the IR instruction total; a model's clock metric ``max_K`` has ``stop_at_K``.
STOP_AT = "stop_at"
#: The keyword choosing a test's cost models.
MODELS = "models"
#: The keyword saying what a limit on a metric that could not be measured does.
UNAVAILABLE = "unavailable"
#: Model names -> the session's instances of them (an unknown name raises ModelError naming the known ones).
ChooseModels = Callable[[Sequence[str]], list[CostModel]]


def registered_markers(config: pytest.Config) -> frozenset[str]:
    """The names of the markers registered with pytest (``markers`` lines, the plugins' own)."""
    return frozenset(m.group() for line in config.getini("markers") if (m := re.match(r"\w+", line)))


def misspelt_marker(item: pytest.Item, registered: frozenset[str], keywords: Container[str]) -> str | None:
    """An error for a marker of ``item`` that is not ``registered`` and reads like ``budget``
    (``@pytest.mark.budgte``, ``@pytest.mark.instrbudget(max_instr=100)``) or sets one of a budget's
    limits (``keywords``: ``@pytest.mark.limit(max_instr=100)``): pytest would only warn, and the
    test would run without its limits."""
    for mark in item.iter_markers():
        if mark.name != MARKER and mark.name not in registered and budget_like(mark, keywords):
            return (
                f"{item.nodeid}: @pytest.mark.{mark.name} is not a marker pytest knows (did you mean "
                "@pytest.mark.budget?): the test would run without its limits"
            )
    return None


#: The budget marker's own keywords, beside the models' limits and cut-offs.
OWN_KEYWORDS = frozenset({MODELS, UNAVAILABLE, "regions", "timeout", "tolerance"})


def budget_like(mark: pytest.Mark, keywords: Container[str]) -> bool:
    """Whether ``mark`` is the budget marker, a misspelling of it, one with a budget's name and
    keywords (``perf_budget(tolerance=5)``), or one that sets a model's limit or cut-off
    (``keywords``, such as ``max_instr``): not a marker of another plugin's (``flaky(max_runs=3)``)."""
    if mark.name == MARKER or any(k in keywords for k in mark.kwargs):
        return True
    if "budget" in mark.name.lower() and any(k in OWN_KEYWORDS for k in mark.kwargs):
        return True
    return bool(difflib.get_close_matches(mark.name, [MARKER], 1, 0.75))


def stop_keyword(metric_keyword: str) -> str:
    """``max_instr`` -> ``stop_at``; ``max_zkcycles`` -> ``stop_at_zkcycles``."""
    return STOP_AT if metric_keyword == "max_instr" else f"{STOP_AT}_{metric_keyword.removeprefix('max_')}"


def cutoff_value(where: str, value: object, limit: int | None, limit_keyword: str) -> int:
    """An absolute cut-off, or a factor of the metric's limit (``"10x"``)."""
    if isinstance(value, str) and value.endswith("x"):
        try:
            factor = float(value[:-1])
        except ValueError:
            factor = math.nan
        if not math.isfinite(factor) or factor < 1:
            raise ConfigError(
                f'{where}: a factor must be a number of at least 1 followed by x, such as "10x"; got {value!r}'
            )
        if limit is None:
            raise ConfigError(f"{where}: {value!r} is a factor of {limit_keyword}, which this test does not set")
        return math.ceil(limit * factor)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0 or value >= 2**63:
        raise ConfigError(f'{where}: expected a number of instructions or a factor such as "10x", got {value!r}')
    if limit is not None and value < limit:
        raise ConfigError(f"{where}: {value} is below {limit_keyword}={limit}; code within its budget would be stopped")
    return value


@dataclass(frozen=True)
class Budget:
    """Limits for one test: metric name -> maximum, plus an optional tolerance."""

    limits: dict[str, int] = field(default_factory=dict)
    tolerance: float | None = None
    #: Region path -> metric name -> maximum.
    regions: dict[str, dict[str, int]] = field(default_factory=dict)
    #: Seconds a program run or a library call of this test may take (overrides the config).
    timeout: float | None = None
    #: Metric name -> cut-off: the measured code stops before it would pass it.
    stops: dict[str, int] = field(default_factory=dict)
    #: Metric name -> how the cut-off was given (``stop_at=100000``, ``10x max_instr``), for messages.
    stop_labels: dict[str, str] = field(default_factory=dict)
    #: The test's cost models (``models=``); empty: the session's.
    models: tuple[str, ...] = ()
    #: ``unavailable=``: what a limit on a metric that could not be measured does (None: the config's).
    unavailable: str | None = None

    @classmethod
    def from_item(
        cls,
        item: pytest.Item,
        models: list[CostModel],
        all_keywords: dict[str, str],
        *,
        choose: ChooseModels,
    ) -> Budget | None:
        """The item's budget, or None when it has no marker.

        ``models`` are the session's; a marker's ``models=`` replaces them for this test,
        through ``choose``. ``all_keywords`` maps every keyword of every registered model (limits
        and cut-offs) to its model's name, so that a keyword of a model the test does not use gets
        a precise error.
        """
        marks = list(item.iter_markers(MARKER))
        if not marks:
            return None
        _check_one_value_per_test(item, [mark for mark in item.own_markers if mark.name == MARKER])
        # The closest marker's models= wins, as for every keyword; limits are checked against them.
        chosen = next((mark.kwargs[MODELS] for mark in marks if MODELS in mark.kwargs), None)
        names: tuple[str, ...] = ()
        if chosen is not None:
            names = model_names(chosen, f"{item.nodeid}: budget")
            try:
                models = choose(names)
            except ModelError as exc:
                raise ConfigError(f"{item.nodeid}: budget(models=...): {exc}") from None
        active = {m.keyword: m.name for model in models for m in model.metrics}
        limits: dict[str, int] = {}
        tolerance: float | None = None
        timeout: float | None = None
        unavailable: str | None = None
        regions: dict[str, dict[str, int]] = {}
        stops_given: dict[str, object] = {}
        cutoffs = {stop_keyword(m.keyword): (model, m) for model in models for m in model.metrics[:1]}
        headline = models[0].metrics[0].name if models else "ir_instructions"
        # The closest marker wins for each keyword (function over class over module).
        for mark in reversed(marks):
            if mark.args:
                raise ConfigError(f"{item.nodeid}: @pytest.mark.budget takes keyword arguments only")
            for key, value in mark.kwargs.items():
                if key == MODELS:
                    continue
                if key == "tolerance":
                    tolerance = parse_percent(value, where=f"{item.nodeid}: budget(tolerance=...)")
                elif key == "timeout":
                    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
                        raise ConfigError(
                            f"{item.nodeid}: budget(timeout=...) must be a positive number of seconds, got {value!r}"
                        )
                    timeout = float(value)
                elif key == UNAVAILABLE:
                    unavailable = unavailable_policy(value, f"{item.nodeid}: budget(unavailable=...)")
                elif key == "regions":
                    regions.update(_region_limits(item.nodeid, value, active, headline, all_keywords, models, chosen))
                elif key in cutoffs:
                    if not cutoffs[key][0].can_stop_code():
                        raise ConfigError(_no_clock(f"{item.nodeid}: budget({key}=...)", cutoffs[key][0]))
                    stops_given[key] = value
                elif key in active:
                    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                        raise ConfigError(
                            f"{item.nodeid}: budget({key}=...) must be a non-negative integer, got {value!r}"
                        )
                    limits[active[key]] = value
                elif key in all_keywords:
                    raise _inactive(f"{item.nodeid}: budget({key}=...)", all_keywords[key], models, chosen=chosen)
                else:
                    accepted = sorted(
                        [
                            *active,
                            *(key for key, (model, _) in cutoffs.items() if model.can_stop_code()),
                            *(MODELS, UNAVAILABLE, "regions", "timeout", "tolerance"),
                        ]
                    )
                    raise ConfigError(
                        f"{item.nodeid}: unknown keyword {key!r} in @pytest.mark.budget"
                        f"{did_you_mean(key, accepted)}; accepted: {', '.join(accepted)}"
                    )
        stops: dict[str, int] = {}
        labels: dict[str, str] = {}
        for key, value in stops_given.items():
            metric = cutoffs[key][1]
            where = f"{item.nodeid}: budget({key}=...)"
            stops[metric.name] = cutoff_value(where, value, limits.get(metric.name), metric.keyword)
            labels[metric.name] = f"{value} {metric.keyword}" if isinstance(value, str) else f"{key}={value:,}"
        return cls(limits, tolerance, regions, timeout, stops, labels, names, unavailable)


def _check_one_value_per_test(item: pytest.Item, own: list[pytest.Mark]) -> None:
    """Two markers on one test (``own``, its own) that give one keyword different values are an
    error: the closest marker wins over a class's or module's, but between two on the test neither
    is closer, and the limit written on the other would not be checked. (A class's markers include
    its bases', which a subclass's may override.)"""
    given: dict[str, object] = {}
    for mark in own:
        for key, value in mark.kwargs.items():
            value = list(value) if isinstance(value, tuple) else value
            first = given.setdefault(key, value)
            if first is not value and first != value:
                raise ConfigError(
                    f"{item.nodeid}: two @pytest.mark.budget markers on {item.name} give {key}={first!r} and "
                    f"{key}={value!r}; keep one"
                )


def model_names(value: object, call: str, error: Callable[[str], Exception] = ConfigError) -> tuple[str, ...]:
    """``models=["ir-count", "zkvm"]`` (or one name): a non-empty list of distinct names; errors
    (``error``) name the ``call`` that was given it (``"<nodeid>: budget"``, ``"cbuild.library"``)."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) and v for v in value):
        raise error(f"{call}(models=...) must be a list of cost model names, got {value!r}")
    if not value:
        raise error(f"{call}(models=[]) chooses no cost model; name at least one")
    if len(set(value)) != len(value):
        raise error(f"{call}(models=...) lists a cost model twice: {list(value)}")
    return tuple(value)


def _no_clock(where: str, model: CostModel) -> str:
    """Why a cut-off on ``model``'s metric cannot be: it keeps no clock while code runs, or one
    that nothing looks at before each block."""
    metric = model.metrics[0]
    why = (
        f"the {model.name} model's clock is read at region markers only, not before each block (its dynamic phase "
        "asks for no block events)"
        if model.keeps_clock()
        else f"the {model.name} model keeps no clock while code runs"
    )
    return (
        f"{where}: {why}, so nothing can stop code at a count of {metric.name} (cut-offs stop at the IR "
        "instruction total or at the clock of a model with a run-time phase that sees every block); limit it with "
        f"{metric.keyword}, or stop the code with stop_at on the IR total"
    )


def _limit(nodeid: str, where: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"{nodeid}: budget({where}) must be a non-negative integer, got {value!r}")
    return value


def _inactive(where: str, model_name: str, models: Sequence[CostModel], *, chosen: object) -> ConfigError:
    """A keyword of a model the test does not run: which model, and how to turn it on."""
    mine = ", ".join(model.name for model in models) or "none"
    if chosen is not None:
        return ConfigError(
            f"{where} belongs to the cost model {model_name!r}, which is not among this test's models ({mine}); "
            f"add {model_name!r} to budget(models=[...])"
        )
    return ConfigError(
        f"{where} belongs to the cost model {model_name!r}, which is not active; add it to `models` in "
        f"[tool.instrbudget], pass --instrbudget-model={model_name}, or choose it for this test "
        f"with budget(models=[...]) (this test's models: {mine})"
    )


def _region_limits(
    nodeid: str,
    value: object,
    active: dict[str, str],
    headline: str,
    all_keywords: Mapping[str, str],
    models: Sequence[CostModel],
    chosen: object,
) -> dict[str, dict[str, int]]:
    """``regions={"parse": 2000}`` limits the headline metric; ``{"parse": {"max_cycles": 900}}`` any."""
    if not isinstance(value, dict) or not all(isinstance(k, str) and k for k in value):
        raise ConfigError(f'{nodeid}: budget(regions=...) must map region names to limits, e.g. {{"parse": 2000}}')
    out: dict[str, dict[str, int]] = {}
    for name, limit in value.items():
        if isinstance(limit, dict):
            if not limit:  # it would check nothing, and read as a region limited
                raise ConfigError(
                    f"{nodeid}: budget(regions={{{name!r}: {{}}}}) sets no limit: give one, as "
                    f'{{{name!r}: {{"max_instr": 2000}}}} or {{{name!r}: 2000}}'
                )
            per: dict[str, int] = {}
            for keyword, n in limit.items():
                where = f"{nodeid}: budget(regions={{{name!r}: {{{keyword!r}: ...}}}})"
                if keyword not in active and all_keywords.get(keyword) not in (None, *(m.name for m in models)):
                    raise _inactive(where, all_keywords[keyword], models, chosen=chosen)
                if keyword not in active:
                    accepted = sorted(active)
                    raise ConfigError(
                        f"{where}: unknown keyword{did_you_mean(keyword, accepted)}; accepted: {', '.join(accepted)}"
                    )
                _check_regions_measured(where, active[keyword], models)
                per[active[keyword]] = _limit(nodeid, f"regions[{name!r}][{keyword!r}]", n)
            out[name] = per
        else:
            _check_regions_measured(f"{nodeid}: budget(regions={{{name!r}: ...}})", headline, models)
            out[name] = {headline: _limit(nodeid, f"regions[{name!r}]", limit)}
    return out


def _check_regions_measured(where: str, metric: str, models: Sequence[CostModel]) -> None:
    """Regions are measured in the metrics of models that keep a clock while code runs: a region
    limit on another's metric could never be checked."""
    for model in models:
        if model.keeps_clock() and metric != model.metrics[0].name and any(m.name == metric for m in model.metrics):
            raise ConfigError(
                f"{where}: regions are measured in the {model.name} model's clock, {model.metrics[0].name}, "
                f"not in {metric}; limit the region's {model.metrics[0].name} ({model.metrics[0].keyword}) or the "
                "test's total"
            )
        if any(m.name == metric for m in model.metrics) and not model.keeps_clock():
            raise ConfigError(
                f"{where}: the {model.name} model keeps no clock while code runs, so regions have no {metric} "
                "(regions are measured in the IR instruction total and in the clocks of models with a run-time "
                "phase); limit the test's total instead"
            )
