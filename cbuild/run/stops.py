"""Where a cut-off stopped code: the runtime's stop record, read and turned into functions and lines.

A cut-off build (``BuildOptions(cutoff=True)``) checks the running total at every
function entry and loop head; given a limit, code that would pass it stops before
the block that would, and the runtime writes a stop record (format in
``runtime/instrbudget_rt.c``) and ends its process. The stopped block comes from the
block table; its callers from return addresses, looked up in the binary's symbol
table and line tables (pyelftools).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from elftools.common.exceptions import ELFError

from cbuild.build.blocks import BlockTable
from cbuild.build.builder import Artifact
from cbuild.build.demangle import demangle
from cbuild.build.places import Frame, symbols
from cbuild.errors import CBuildError, ExecutionError
from cbuild.models.base import CostModel
from cbuild.models.costs import split_results
from cbuild.models.profile import IR_METRIC, clock_metrics, clock_numbers, unstoppable_clocks
from cbuild.riscv.executor import guest_frame, slot_results


def check_timeout(timeout: object) -> None:
    """A run's ``timeout``: None (no limit) or a positive, finite number of seconds; anything else
    is an error before the code runs."""
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not math.isfinite(timeout) or timeout <= 0
    ):
        raise CBuildError(f"timeout must be a positive number of seconds, got {timeout!r}")


#: Exit status of a process the runtime stopped at a limit.
STOP_STATUS = 86
_MAGIC = "instrbudget-stop 1"


@dataclass(frozen=True)
class Stop:
    """Code stopped before passing a limit: the count it had reached, where, and its callers."""

    #: The limited metric: ``ir_instructions`` or a cost model's clock metric.
    metric: str
    #: Exactly what had run when it stopped (before the block that would have passed the limit).
    count: int
    limit: int
    where: Frame
    #: Callers in the measured binary, innermost first (the walk ends at the first frame outside it).
    callers: tuple[Frame, ...]
    #: Cost models' dynamic results at the stop, by model (a model can say more, such as a segment).
    results: Mapping[str, tuple[int, ...]] = field(default_factory=dict, hash=False)
    #: Frames the runtime walked above the stopped one, when more than it recorded (deep recursion).
    depth: int | None = None

    def stack(self, *, limit: int = 6) -> str:
        """``f (a.c:3), called from g (a.c:9) ...``: repeated frames (recursion) folded."""
        runs: list[tuple[Frame, int]] = []
        for frame in (self.where, *self.callers):
            if runs and runs[-1][0] == frame:
                runs[-1] = (frame, runs[-1][1] + 1)
            else:
                runs.append((frame, 1))
        parts = [f"{frame}" + (f" x {n:,}" if n > 1 else "") for frame, n in runs[:limit]]
        if len(runs) > limit:
            parts.append(f"... ({len(runs) - limit} more)")
        text = ", called from ".join(parts)
        return text + (f" ({self.depth:,} calls deep)" if self.depth is not None else "")

    def describe(self, unit: str | None = None, label: str | None = None, notes: Sequence[str] = ()) -> str:
        """One line: what ran, against which limit (``label`` says how it was set), and where it stopped."""
        what = unit or ("IR instructions" if self.metric == IR_METRIC else self.metric)
        if unit and self.metric != IR_METRIC:
            what = f"{unit} ({self.metric})"
        given = f"{self.limit:,}" + (f", {label}" if label else "")
        extra = "".join(f"; {note}" for note in notes)
        return f"stopped after {self.count:,} {what} (cut-off {given}) in {self.stack()}{extra}"


class CodeStopped(ExecutionError):
    """Measured code reached its cut-off and was stopped; :attr:`stop` says where."""

    def __init__(self, what: str, stop: Stop, stdout: bytes = b"", stderr: bytes = b"") -> None:
        super().__init__(f"{what}: {stop.describe()}")
        self.what = what
        self.stop = stop
        #: What a program wrote before it stopped.
        self.stdout = stdout
        self.stderr = stderr


def requested(max_instr: int | None, limits: Mapping[str, int] | None) -> dict[str, int]:
    """Limits by metric from the ``max_instr`` and ``limits`` arguments of a run or a library."""
    wanted = dict(limits or {})
    if max_instr is not None:
        wanted[IR_METRIC] = max_instr
    return wanted


def needs_cutoff_build(limits: Iterable[str], models: Iterable[CostModel]) -> bool:
    """Whether code given cut-offs on the metrics ``limits`` must be a cut-off build
    (``BuildOptions(cutoff=True)``): a limit on the IR total or on a clock the native build keeps
    needs its checks; one on the clock of a model that executes a RISC-V build is checked by that
    run alone, so a build for it needs none (and shares its native and RISC-V builds with runs
    without cut-offs)."""
    executed = {model.metrics[0].name for model in models if model.executes() is not None}
    return any(metric not in executed for metric in limits)


def checked_limits(artifact: Artifact, limits: Mapping[str, int]) -> dict[str, int]:
    """The ``limits`` a run of ``artifact`` checks: those on the clocks of its executing models (the
    RISC-V runs check them) and, in a cut-off build, those on the IR total and its other models'
    clocks. A limit on a metric the build does not measure is left to the builds that do, as a
    library call leaves it (``models=`` may give a build some of a test's models)."""
    if not limits:
        return {}
    known = set(machine_clocks(artifact))
    if artifact.cutoff:
        known.update(clock_numbers(artifact.models()))
    return {metric: value for metric, value in limits.items() if metric in known}


def machine_clocks(artifact: Artifact) -> dict[str, tuple[str, int | None]]:
    """Metric -> (RISC-V target, runtime index) of each executing model's clock: the RISC-V run
    checks a cut-off on it. The index is None where that target's build is unavailable."""
    out: dict[str, tuple[str, int | None]] = {}
    if not artifact.instrumented:
        return out
    for target, doc in artifact.machines().items():
        for index, metric in enumerate(doc.get("clocks", [])):
            out[metric] = (target, None if "unavailable" in doc else index)
    return out


def clock_limits(artifact: Artifact, limits: Mapping[str, int]) -> tuple[dict[int, int], dict[str, dict[int, int]]]:
    """Limits by metric (``ir_instructions`` or a model clock's metric) as the native runtime's
    clock numbers, and per RISC-V target as cut-offs by runtime index on its executing models'
    clocks. A limit on a model whose RISC-V build is unavailable is dropped (it has no value)."""
    native: dict[int, int] = {}
    machine: dict[str, dict[int, int]] = {}
    if not limits:
        return native, machine
    models = artifact.models()
    clocks = clock_numbers(models)
    executed = machine_clocks(artifact)
    unstoppable = unstoppable_clocks(models)
    for metric, value in limits.items():
        if metric in unstoppable and metric not in executed:
            raise CBuildError(
                f"{artifact.name}: no limit can be set on {metric!r}: the {unstoppable[metric]} model's clock is read "
                "at region markers only, not before each block (its dynamic phase asks for no block events)"
            )
        if metric not in clocks and metric not in executed:
            raise CBuildError(
                f"{artifact.name}: no limit can be set on {metric!r}; metrics with a cut-off here: "
                f"{', '.join(sorted({*clocks, *executed}))}"
            )
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**63:
            raise CBuildError(f"the limit on {metric} must be a non-negative integer below 2**63, got {value!r}")
        if metric in executed:
            target, index = executed[metric]
            if index is not None:
                machine.setdefault(target, {})[index] = value
        else:
            native[clocks[metric]] = value
    if native and not artifact.cutoff:
        raise CBuildError(
            f"{artifact.name} was built without cut-off checks; build it with BuildOptions(cutoff=True) "
            f"to give its runs a limit on {', '.join(m for m in limits if m not in executed)}"
        )
    return native, machine


def machine_clock_usage(artifact: Artifact, machine: Mapping[str, Any]) -> dict[str, int]:
    """What the RISC-V runs in ``machine`` (target -> :class:`~cbuild.riscv.executor.Execution`, as
    :attr:`cbuild.models.costs.BlockCounts.machine` holds them) used of each executing model's
    clock, by metric: what they count against a cut-off (a padded total, such as zk_cycles, is more)."""
    out: dict[str, int] = {}
    for target, doc in artifact.machines().items():
        run = machine.get(target)
        if run is None or "unavailable" in doc:
            continue
        for metric, clock in zip(doc.get("clocks", []), run.clocks, strict=False):
            out[metric] = out.get(metric, 0) + clock
    return out


def machine_stop(
    doc: Mapping[str, Any], stopped: tuple[int, int, int], limits: Mapping[int, int], results: Sequence[int]
) -> Stop:
    """Where a RISC-V run (``doc``: the artifact's description of that build) stopped at a cut-off on
    an executing model's clock: ``stopped`` is :attr:`cbuild.riscv.executor.Execution.stopped`,
    ``limits`` the run's cut-offs by runtime index, ``results`` the run's results then."""
    model, clock, pc = stopped
    return Stop(
        doc["clocks"][model],
        clock,
        limits[model],
        guest_frame(Path(doc["elf"]), pc),
        (),
        results=slot_results(doc["slots"], results),
    )


def _field(fields: dict[str, list[str]], name: str, where: Path) -> list[str]:
    if name not in fields:
        raise ExecutionError(f"{where}: the stop record has no {name!r} field")
    return fields[name]


def read_stop(path: Path, *, binary: Path, table: BlockTable, models: Mapping[str, Any]) -> Stop:
    """The stop record at ``path``, written by ``binary`` (whose table and model metadata are given)."""
    text = path.read_text(errors="replace")
    lines = text.splitlines()
    if not lines or lines[0] != _MAGIC:
        raise ExecutionError(f"{path} is not an instrbudget stop record")
    fields = {line.split(" ", 1)[0]: line.split()[1:] for line in lines[1:] if line}
    try:
        clock = int(_field(fields, "clock", path)[0])
        block = int(_field(fields, "block", path)[0])
        count = int(_field(fields, "count", path)[0])
        limit = int(_field(fields, "limit", path)[0])
        base = int(_field(fields, "base", path)[0], 16)
        results = [int(x) for x in _field(fields, "results", path)]
        frames = [int(x, 16) for x in _field(fields, "frames", path)]
        depth = int(_field(fields, "depth", path)[0])
    except (ValueError, IndexError):
        raise ExecutionError(f"{path}: malformed stop record:\n{text[:500]}") from None
    if not 0 <= block < len(table.blocks):
        raise ExecutionError(f"{path}: block {block} is not in the table of {binary.name}")
    metrics = clock_metrics(dict(models))
    if not 0 <= clock < len(metrics) or not metrics[clock]:
        raise ExecutionError(f"{path}: clock {clock} is not one of {binary.name}'s")
    _, per_model = split_results(models, results)
    b = table.blocks[block]
    where = Frame(demangle(b.function), b.file, b.line)
    callers = _callers(binary, table, base, frames)
    deep = depth if depth > len(frames) and len(callers) >= len(frames) - 2 else None
    return Stop(metrics[clock], count, limit, where, callers, per_model, deep)


def _callers(binary: Path, table: BlockTable, base: int, frames: Sequence[int]) -> tuple[Frame, ...]:
    """The frames of ``frames`` (return addresses) up to the first outside the measured code."""
    if not frames:
        return ()
    try:
        binary_symbols = symbols(binary, binary.stat().st_mtime_ns)
    except (OSError, ELFError):
        return ()
    measured = set(table.functions)
    out = []
    hooks = True  # the first frames are the runtime's and the models' hooks, then the stopped function
    for address in frames:
        at = address - base + binary_symbols.link_base - 1  # inside the call instruction
        name = binary_symbols.function(at)
        if hooks:
            if name is not None and name in measured:
                hooks = False  # the stopped function itself: its place is the stopped block's
            elif name is None:
                break
            continue
        if name is None or name not in measured:
            break
        file, line = binary_symbols.place(at) or ("", 0)
        out.append(Frame(demangle(name), file, line))
    return tuple(out)
