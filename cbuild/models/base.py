"""The cost-model interface: what every model, built-in or third-party, implements.

A model has

* a **static phase**, :meth:`CostModel.analyse`, run once per build on the
  program's IR (and, if it asks, its RISC-V code); its JSON result is cached with
  the build;
* an optional **dynamic phase**, :meth:`CostModel.runtime`: C code linked into the
  program that sees every executed block and/or memory access in execution order,
  for effects that are not additive (pipeline state, paging). Additive models have
  none and cost nothing at run time beyond the block counters;
* :meth:`CostModel.evaluate`, which turns block counts (and the dynamic phase's
  results) into one :class:`~cbuild.models.costs.Cost` per metric.

A model of a RISC-V machine instead names the target it :meth:`~CostModel.executes`: the
build is then also made for that target and executed in the RISC-V executor
(:mod:`cbuild.riscv.executor`), where the model's :meth:`~CostModel.exec_runtime` C code sees every
executed machine block and memory access; :meth:`~CostModel.evaluate` reads its results and
the executed blocks from :attr:`BlockCounts.machine <cbuild.models.costs.BlockCounts.machine>`.
"""

from __future__ import annotations

import functools
import sys
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from cbuild.build.blocks import BlockTable
from cbuild.build.cache import file_digest
from cbuild.errors import CBuildError, did_you_mean
from cbuild.models.costs import BlockCounts, Cost, weighted_cost
from cbuild.models.profile import IR_METRIC
from cbuild.riscv.executor import ExecRuntime
from cbuild.riscv.lowering import TWINS, LoweredProgram, lower_program

#: Run-time events a dynamic phase can ask for.
BLOCKS = "blocks"
MEMORY = "memory"
EVENTS = (BLOCKS, MEMORY)


class ModelError(CBuildError):
    """A cost model is unknown, misconfigured or failed."""


def model_failed(model: CostModel, method: str, exc: Exception) -> ModelError:
    """A model's ``method`` raised ``exc``: the error that names the model, the exception and the
    line of the model's own code it was raised from (the deepest in the model's modules, where
    the exception came from a library it called; else where it was raised)."""
    frames = traceback.extract_tb(exc.__traceback__)
    own = {str(path) for path in model.sources().values()}
    mine = [frame for frame in frames if str(Path(frame.filename).resolve()) in own]
    frame = mine[-1] if mine else frames[-1] if frames else None
    at = f" (at {frame.filename}:{frame.lineno})" if frame is not None else ""
    return ModelError(f"cost model {model.name!r} failed in {method}: {type(exc).__name__}: {exc}{at}")


def _canonical(value: Any) -> Any:
    """A parameter's value with its tables' keys in order: a TOML table written in another order is
    the same configuration."""
    if isinstance(value, Mapping):
        return {k: _canonical(value[k]) for k in sorted(value)}
    if isinstance(value, (list, tuple)):
        return type(value)(_canonical(v) for v in value)
    return value


def checked_block_costs(model: str, table: BlockTable, costs: object) -> list[int]:
    """An additive model's :meth:`CostModel.block_costs`, checked: a non-negative integer per block."""
    try:
        if isinstance(costs, (str, bytes)):  # a sequence of characters, not of costs
            raise TypeError
        values: list[int] = list(costs)  # type: ignore[call-overload]
    except TypeError:
        raise ModelError(
            f"cost model {model!r}: block_costs returned {costs!r}; expected a sequence of non-negative integers, "
            "one per block"
        ) from None
    if len(values) != len(table):
        raise ModelError(f"cost model {model!r}: block_costs returned {len(values)} costs for {len(table)} blocks")
    for index, value in enumerate(values):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            block = table.blocks[index]
            raise ModelError(
                f"cost model {model!r}: block_costs returned {value!r} for block {index} (in {block.function}); "
                "expected a non-negative integer per block"
            )
    return values


def checked_costs(model: CostModel, costs: object, *, unavailable: bool = False) -> list[Cost]:
    """What :meth:`CostModel.evaluate` returned, checked: a cost per metric of the model, each a
    non-negative integer overall and per function; none at all where the model could not measure
    the artifact (``unavailable``)."""
    names = [m.name for m in model.metrics]
    if not isinstance(costs, (list, tuple)) or not all(isinstance(c, Cost) for c in costs):
        raise ModelError(
            f"cost model {model.name!r}: evaluate returned {costs!r}; expected a list of Cost, one per metric"
        )
    given = [cost.metric for cost in costs]
    if not (unavailable and not given) and sorted(given) != sorted(names):
        raise ModelError(
            f"cost model {model.name!r}: evaluate returned costs of {', '.join(given) or 'no metric'}; "
            f"expected one of each of its metrics ({', '.join(names)})"
        )
    for cost in costs:
        for what, value in [("total", cost.total), *((f"cost of {f}", v) for f, v in cost.functions.items())]:
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ModelError(
                    f"cost model {model.name!r}: evaluate returned a {what} of {value!r} for {cost.metric}; "
                    "expected a non-negative integer"
                )
    return list(costs)


#: The budget marker's own keywords, which no metric's may be (``stop_at_<name>`` is each clock's cut-off).
MARKER_KEYWORDS = frozenset({"models", "regions", "stop_at", "timeout", "tolerance", "unavailable"})
#: Names the reports use beside the metrics' own, which no metric may take.
REPORT_COLUMNS = frozenset({"test", "status"})


@dataclass(frozen=True)
class Metric:
    """A number a model reports, and the marker keyword that limits it."""

    name: str
    unit: str
    keyword: str


@dataclass(frozen=True)
class Param:
    """One configuration key of a model (``[tool.instrbudget.<model>] key = value``).

    ``check`` turns the raw TOML value into the value the model uses, or raises
    ValueError with a message saying what is accepted.
    """

    default: Any
    help: str
    check: Callable[[Any], Any] | None = None


def integer(low: int, high: int | None = None) -> Callable[[Any], int]:
    """A ``check`` for an integer in ``[low, high]``."""

    def check(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
            bounds = f"from {low} to {high}" if high is not None else f"of at least {low}"
            raise ValueError(f"expected an integer {bounds}, got {value!r}")
        return value

    return check


def boolean(value: Any) -> bool:
    """A ``check`` for true or false."""
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {value!r}")
    return value


@dataclass(frozen=True)
class Runtime:
    """The dynamic phase: C code linked into instrumented programs and libraries.

    ``source`` defines four static functions, five with ``clock`` (``static inline`` lets each block's hook
    be specialised for its constant block number), called in execution order:
    ``model_block(uint32_t block)`` before each block runs (if the model's
    :attr:`CostModel.events` has ``blocks``), ``model_access(uintptr_t address,
    uint64_t size, uint32_t is_store)`` before the memory loads and stores touch (with
    ``memory``: accesses of one kind through one base pointer within 1 KiB, between calls, come
    as one range; docs/cost-models.md), ``model_reset(uint32_t in_process)`` when a program starts
    (``in_process`` 0) or a measurement of an in-process library starts (1),
    and ``model_finish(uint64_t *out)``, which writes ``results`` numbers that
    :meth:`CostModel.evaluate` reads. Every model's source goes into one
    translation unit: prefix other static names with the model's.
    """

    source: str
    results: int
    #: Compile ``model_block`` once per block with the block number a constant (tables fold
    #: into the code: fastest at run time). False: one shared copy, called with the number
    #: (for large tables, whose per-block copies would take long to compile).
    specialise: bool = True
    #: The source also defines ``uint64_t model_now(void)``: the cost so far in the model's
    #: headline unit, read at region markers to give regions the model's metric.
    clock: bool = False


class BuildView:
    """What the static phase sees of one build."""

    def __init__(self, table: BlockTable, ir: str, *, opt_level: int, twin: Callable[[str], str] | None = None) -> None:
        self.table = table
        #: The program's linked module as LLVM prints it, before instrumentation.
        self.ir = ir
        #: The optimisation level code is generated at (0-3).
        self.opt_level = opt_level
        self._twin = twin
        self._lowered: dict[str, LoweredProgram] = {}

    def riscv(self, target: str) -> LoweredProgram:
        """The RISC-V code of each block, in table order (lowered once per target and build)."""
        if target not in self._lowered:
            triple = TWINS.get(target)
            twin_ir = self._twin(triple) if triple is not None and self._twin is not None else None
            self._lowered[target] = lower_program(self.ir, twin_ir, target=target, opt_level=self.opt_level)
        return self._lowered[target]


@functools.cache
def _sources(cls: type) -> dict[str, Path]:
    """:meth:`CostModel.sources` of a model class (its modules are imported once per process)."""
    engine = Path(__file__).resolve().parent.parent
    modules: dict[str, Path] = {}
    for base in cls.__mro__:
        if base is CostModel or not issubclass(base, CostModel):
            continue
        where = getattr(sys.modules.get(base.__module__), "__file__", None)
        if where is not None and not Path(where).resolve().is_relative_to(engine):
            modules[base.__module__] = Path(where).resolve()
    return modules


@functools.cache
def _code_key(cls: type) -> tuple[str, ...]:
    """:meth:`CostModel.code_key` of a model class: digested once per process, as the code that
    runs is what was imported (builds of every test compute their keys)."""
    return tuple(f"{name}:{_source_digest(path)}" for name, path in _sources(cls).items())


def _source_digest(path: Path) -> str:
    """A model module's digest ("unreadable" when it is gone: it has been replaced since it was imported)."""
    try:
        return file_digest(path)
    except OSError:
        return "unreadable"


class CostModel:
    """One way of costing an execution. Subclass it and register the class through the
    ``instrbudget_cost_models`` hook (:mod:`cbuild.hookspecs`)."""

    #: Name used in ``models = [...]``, ``--instrbudget-model`` and ``[tool.instrbudget.<name>]``.
    name: ClassVar[str]
    #: The metrics this model reports; the first is its headline metric.
    metrics: ClassVar[tuple[Metric, ...]]
    #: The configuration schema: key -> :class:`Param`.
    params: ClassVar[Mapping[str, Param]] = {}
    #: Change it when the model's results change for the same inputs: part of build keys.
    version: ClassVar[str] = "1"
    #: Run-time events the dynamic phase needs reported: ``blocks``, ``memory``.
    events: ClassVar[frozenset[str]] = frozenset()
    #: clang flags the measured build needs (for C and C++), e.g. to compile as for the modelled machine.
    compile_flags: ClassVar[tuple[str, ...]] = ()
    #: Whether the headline metric's total is the last value of the clock a cut-off on it watches,
    #: so that a cut-off given without a limit also fails a test whose code finished past it (after
    #: the last check). False where the total adds to the clock (zkvm's padding, pipeline's last
    #: instruction's latency): such a cut-off fails a test only where it stopped its code.
    clock_is_total: ClassVar[bool] = True

    def __init__(self, params: Mapping[str, Any] | None = None, *, root: Path | None = None) -> None:
        #: The project directory, for parameters that name files.
        self.root = root
        given = dict(params or {})
        unknown = sorted(set(given) - set(self.params))
        if unknown:
            accepted = ", ".join(sorted(self.params)) or "none"
            raise ModelError(
                f"[tool.instrbudget.{self.name}] has an unknown key {unknown[0]!r}"
                f"{did_you_mean(unknown[0], self.params)}; accepted: {accepted}"
            )
        self.config: dict[str, Any] = {}
        table = f"[tool.instrbudget.{self.name}]"
        for key, param in self.params.items():
            value = given.get(key, param.default)
            if param.check is not None:  # the model's default too: a model may ship one its check refuses
                whose = "" if key in given else " (the model's default)"
                try:
                    value = param.check(value)
                except ValueError as exc:
                    raise ModelError(f"{table} {key}{whose}: {exc}") from None
                except Exception as exc:  # a check with a bug of its own: said, not an internal error
                    raise ModelError(
                        f"{table} {key}{whose}: the model's check of {value!r} raised {type(exc).__name__}: {exc}"
                    ) from None
            self.config[key] = value
        try:
            self.configure()
        except ModelError as exc:
            text = str(exc)
            raise ModelError(text if text.startswith(table) else f"{table} {text}") from None
        except Exception as exc:
            raise ModelError(f"{table}: the model's configure() raised {type(exc).__name__}: {exc}") from None

    def configure(self) -> None:
        """Check parameters together and prepare (after :attr:`config` is set)."""

    def key_params(self) -> tuple[tuple[str, str], ...]:
        """What changes the model's results: part of build keys and the baseline fingerprint."""
        parts = [(f"{self.name}.version", self.version)]
        parts += [(f"{self.name}.{k}", repr(_canonical(v))) for k, v in sorted(self.config.items())]
        return tuple(parts)

    def code_key(self) -> tuple[str, ...]:
        """The source of the modules that define the model's class and its bases, outside this
        engine (whose code is in every build key): part of build keys, so that a build's cached
        :meth:`analyse` document is never one an earlier version of the model's code wrote. Code the
        model calls in other modules is not covered: change :attr:`version` when it changes results."""
        cls: type = type(self)  # the cache's key: a class is hashable, whatever its instances are
        return _code_key(cls)

    def sources(self) -> dict[str, Path]:
        """The modules (name -> file) that define the model's class and the model classes it
        derives from, outside this engine (mixins and the standard library are not the model's)."""
        cls: type = type(self)
        return _sources(cls)

    def keeps_clock(self) -> bool:
        """Whether the headline metric is known while code runs, so that regions have it: it is the
        IR instruction total, or a clock the model keeps (a model that executes a target, or one
        with a dynamic phase whose :class:`Runtime` sets ``clock``). An additive model keeps none."""
        return (
            self.metrics[0].name == IR_METRIC
            or self.executes() is not None
            or type(self).runtime is not CostModel.runtime
        )

    def can_stop_code(self) -> bool:
        """Whether a cut-off on the headline metric can stop code: a clock kept while code runs
        (:meth:`keeps_clock`) that is also looked at as it runs, before each block (a dynamic
        phase's clock is, where the model asks for ``blocks`` events)."""
        if self.metrics[0].name == IR_METRIC or self.executes() is not None:
            return True
        return self.keeps_clock() and BLOCKS in self.events

    def executes(self) -> str | None:
        """The RISC-V target (``riscv32``, ``riscv64``) whose build the model measures in the
        executor, or None: the model measures the host build."""
        return None

    def exec_runtime(self) -> ExecRuntime:
        """The model's C code in the RISC-V executor (for a model that :meth:`executes` a target)."""
        raise NotImplementedError(f"cost model {self.name!r} executes a target but has no exec_runtime")

    def analyse(self, build: BuildView) -> dict[str, Any]:
        """Static phase: per-block facts, as a JSON document cached with the build."""
        return {}

    def runtime(self, analysis: Mapping[str, Any]) -> Runtime | None:
        """Dynamic phase: C code for instrumented binaries, or None for an additive model."""
        return None

    def block_costs(self, table: BlockTable, analysis: Mapping[str, Any]) -> Sequence[int]:
        """An additive model's cost per block, in table order."""
        raise NotImplementedError(f"cost model {self.name!r} implements neither block_costs nor evaluate")

    def describe_stop(self, results: Sequence[int]) -> str:
        """What the model can add about where code stopped at a cut-off, from its dynamic results
        at that point (empty: nothing); for instance the segment it was in."""
        return ""

    def evaluate(self, counts: BlockCounts) -> list[Cost]:
        """Costs of an execution, one per metric (additive models need only :meth:`block_costs`)."""
        costs = self.block_costs(counts.table, counts.analysis(self.name))
        return [weighted_cost(self.metrics[0].name, counts, checked_block_costs(self.name, counts.table, costs))]


def evaluated(model: CostModel, counts: BlockCounts) -> list[Cost]:
    """``model``'s costs of ``counts``, checked; a model that raised or returned something else
    than costs raises a ModelError that says so."""
    # An additive model's bug is in its block_costs (the base class's evaluate calls it).
    method = "evaluate" if type(model).evaluate is not CostModel.evaluate else "block_costs"
    try:
        costs = model.evaluate(counts)
    except CBuildError:
        raise
    except Exception as exc:  # the model's own bug: said with the model's name and line
        raise model_failed(model, method, exc) from exc
    return checked_costs(model, costs, unavailable=model.name in counts.unavailable)
