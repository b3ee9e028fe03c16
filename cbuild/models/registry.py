"""Finding cost models: the built-in ones and those of installed packages, through one hook."""

from __future__ import annotations

import re
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any

import pluggy

from cbuild import hookspecs
from cbuild.errors import did_you_mean
from cbuild.models import builtin
from cbuild.models.base import MARKER_KEYWORDS, REPORT_COLUMNS, CostModel, Metric, ModelError


class ModelRegistry:
    """Known cost models by name, collected from ``instrbudget_cost_models`` implementations."""

    def __init__(self, *, entry_points: bool = True, plugins: tuple[ModuleType | object, ...] = ()) -> None:
        self.manager = pluggy.PluginManager(hookspecs.PROJECT)
        self.manager.add_hookspecs(hookspecs)
        self.manager.register(builtin, name="builtin")
        for plugin in plugins:
            self.manager.register(plugin)
        if entry_points:
            self._load_entry_points()
        try:
            self.manager.check_pending()
        except pluggy.PluginValidationError as exc:  # a misspelt hook would be left out without a word
            raise ModelError(f"cost-model plugin {self.manager.get_name(exc.plugin)!r}: {exc}") from None
        self._classes: dict[str, type[CostModel]] = {}
        self._origin: dict[str, str] = {}
        for impl in self.manager.hook.instrbudget_cost_models.get_hookimpls():
            try:
                provided = impl.function() or ()
            except Exception as exc:
                raise ModelError(f"plugin {impl.plugin_name!r} failed to list its cost models: {exc!r}") from exc
            for cls in provided:  # type: ignore[attr-defined]
                self._add(cls, impl.plugin_name)

    def _load_entry_points(self) -> None:
        """Register each installed package's ``instrbudget`` entry point, naming the package of one
        that does not import, and both packages where two use one name (pluggy keeps the first)."""
        owners: dict[str, str] = {}
        for entry in sorted(metadata.entry_points(group=hookspecs.PROJECT), key=lambda e: (e.name, e.value)):
            dist = entry.dist
            package = f"{dist.name} {dist.version}" if dist is not None else "an unknown package"
            if entry.name in owners:
                if owners[entry.name] == package:
                    continue  # one package seen twice on the path
                raise ModelError(
                    f"cost-model plugins of {owners[entry.name]} and {package} are both named {entry.name!r} "
                    f"(entry point group {hookspecs.PROJECT!r}): one would be left out; uninstall one or rename it"
                )
            owners[entry.name] = package
            try:
                plugin = entry.load()
            except Exception as exc:  # an installed package's entry point that does not import
                raise ModelError(
                    f"cost-model plugin {entry.name!r} ({entry.value}, of {package}) failed to load: {exc!r}; "
                    "fix or uninstall that package"
                ) from exc
            if self.manager.get_plugin(entry.name) is plugin:
                continue  # registered already (the built-in models)
            if self.manager.has_plugin(entry.name):
                raise ModelError(
                    f"cost-model plugin {entry.name!r} of {package} takes the name of one of this project's own; "
                    "rename its entry point"
                )
            self.manager.register(plugin, name=entry.name)

    def _add(self, cls: type[CostModel], origin: str) -> None:
        if not (isinstance(cls, type) and issubclass(cls, CostModel)):
            raise ModelError(f"plugin {origin!r} returned {cls!r}, which is not a CostModel subclass")
        name = getattr(cls, "name", None)
        if not isinstance(name, str) or not name:
            raise ModelError(f"cost model {cls.__qualname__} of plugin {origin!r} has no name")
        if not _MODEL_NAME.fullmatch(name):  # the baseline's fingerprint describes models by name
            raise ModelError(
                f"cost model {name!r} of plugin {origin!r}: a model's name is letters, digits, '_', '-' and '.' "
                "(as in models = [...] and [tool.instrbudget.<name>])"
            )
        if not getattr(cls, "metrics", None):
            raise ModelError(f"cost model {name!r} of plugin {origin!r} declares no metrics")
        for metric in cls.metrics:
            problem = _metric_problem(metric)
            if problem:
                raise ModelError(f"cost model {name!r} of plugin {origin!r}: {problem}")
        if name in self._classes and self._classes[name] is not cls:
            raise ModelError(f"cost model {name!r} is provided by both {self._origin[name]!r} and {origin!r}")
        for other, known in self._classes.items():
            if other == name:
                continue
            clash = (
                {m.name for m in known.metrics} & {m.name for m in cls.metrics}
                or {m.keyword for m in known.metrics} & {m.keyword for m in cls.metrics}
                # the cut-off keywords the marker derives (max_zkcycles and zkcycles: stop_at_zkcycles)
                or {_stop_part(m.keyword) for m in known.metrics} & {_stop_part(m.keyword) for m in cls.metrics}
            )
            if clash:
                raise ModelError(
                    f"cost model {name!r} of plugin {origin!r} reuses {sorted(clash)[0]!r} of model {other!r}; "
                    "metric names and marker keywords must be unique"
                )
        if cls.evaluate is CostModel.evaluate:  # additive: the base class's evaluate sums block_costs
            if cls.block_costs is CostModel.block_costs:
                raise ModelError(
                    f"cost model {name!r} of plugin {origin!r} implements neither block_costs nor evaluate"
                )
            if len(cls.metrics) > 1:
                raise ModelError(
                    f"cost model {name!r} of plugin {origin!r} declares {len(cls.metrics)} metrics and block_costs "
                    "only, which gives the first; implement evaluate to give each"
                )
        self._classes[name] = cls
        self._origin[name] = origin

    def register(self, cls: type[CostModel], *, origin: str = "direct") -> None:
        """Add a model class without a plugin (tests, scripts)."""
        self._add(cls, origin)

    @property
    def names(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self._classes)

    def model_class(self, name: str) -> type[CostModel]:
        """The class of a registered model; an unknown name lists the known ones."""
        try:
            return self._classes[name]
        except KeyError:
            raise ModelError(
                f"unknown cost model {name!r}{did_you_mean(name, self.names)}; known models: {', '.join(self.names)}"
                " (a model of another package is known once that package is installed in this environment)"
            ) from None

    def origin(self, name: str) -> str:
        """The plugin that provided a model (``builtin`` for the built-in ones)."""
        self.model_class(name)
        return self._origin[name]

    def keywords(self) -> dict[str, str]:
        """Every marker keyword of every registered model -> the model's name."""
        return {m.keyword: name for name, cls in self._classes.items() for m in cls.metrics}

    def create(self, name: str, params: Mapping[str, Any] | None = None, *, root: Path | None = None) -> CostModel:
        """Instantiate a model with its ``[tool.instrbudget.<name>]`` parameters."""
        return self.model_class(name)(params or {}, root=root)


def default_registry() -> ModelRegistry:
    """The built-in models and those of installed packages."""
    return ModelRegistry()


#: What a cost model's name may hold.
_MODEL_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


def _stop_part(keyword: str) -> str:
    """What a limit keyword's cut-off keyword is made of: ``max_zkcycles`` and ``zkcycles`` both give
    ``stop_at_zkcycles`` (``pytest_instrbudget.marker.stop_keyword``)."""
    return keyword.removeprefix("max_")


def _metric_problem(metric: Metric) -> str:
    """What is wrong with a metric's name or marker keyword for the reports and the budget marker."""
    name, keyword = getattr(metric, "name", None), getattr(metric, "keyword", None)
    if not isinstance(name, str) or not name or name != name.strip() or any(c.isspace() for c in name):
        return f"metric name {name!r} must be a non-empty name without spaces"
    if name in REPORT_COLUMNS:
        return f"metric name {name!r} is a column of the reports ({', '.join(sorted(REPORT_COLUMNS))})"
    if not isinstance(keyword, str) or not keyword.isidentifier():
        return f"metric {name!r}: marker keyword {keyword!r} must be a Python identifier (max_...)"
    if keyword in MARKER_KEYWORDS or keyword.startswith("stop_at"):
        return (
            f"metric {name!r}: marker keyword {keyword!r} is one of the budget marker's own "
            f"({', '.join(sorted(MARKER_KEYWORDS))}, stop_at_<name>); name it max_<something>"
        )
    return ""
