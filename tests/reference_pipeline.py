"""A cycle-by-cycle reference simulator for the ``pipeline`` cost model (docs/pipeline-model.md).

This is the oracle the max-plus model (``cbuild.riscv.maxplus``, ``cbuild.riscv.machine``) is checked against,
so it shares no code with it: it reads the machine TOML itself and takes instructions as plain
``(mnemonic, dsts, srcs)`` tuples with ABI register names (no assembly parsing).

Instead of computing issue times with ``max`` it runs a clock: starting from the cycle of the
previous issue it tries every cycle in turn and issues the next instruction in the first cycle in
which all of the rules of the document hold:

* the issue slot is free (``cycle >= issue``);
* every source register is ready (``cycle >= ready[r]``; ``zero`` is always ready);
* every unit the instruction uses is free when it starts using it (``cycle + at >= free[u]``);
* with ``in_order_writeback``, an instruction with a destination other than ``zero`` writes back
  no earlier than the last write-back (``cycle + latency >= wb``).

Issuing at ``t`` then sets ``issue = t + 1``, ``free[u] = t + at + cycles``, ``ready[d] = t +
latency`` and (with in-order write-back and a destination) ``wb = t + latency``. The finishing
cycle is the largest of ``issue``, ``wb``, every unit's free time and every register's ready time
(all start at 0, or at the given initial state).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

MACHINES_DIR = Path(__file__).resolve().parent.parent / "cbuild" / "riscv" / "machines"

# One instruction: (mnemonic, destination registers, source registers), ABI register names.
RefInstr = tuple[str, Sequence[str], Sequence[str]]


@dataclass(frozen=True)
class UnitUse:
    """An instruction keeps ``unit`` busy for ``cycles`` cycles from ``at`` cycles after issue."""

    unit: str
    at: int
    cycles: int


@dataclass(frozen=True)
class RefClass:
    """A scheduling class: the units it uses and the latency of its result."""

    name: str
    latency: int
    units: tuple[UnitUse, ...]
    mnemonics: tuple[str, ...]


@dataclass(frozen=True)
class RefMachine:
    """A machine description as the reference reads it."""

    name: str
    in_order_writeback: bool
    units: tuple[str, ...]
    classes: dict[str, RefClass]
    default_class: str | None

    def class_of(self, mnemonic: str) -> RefClass:
        """The class of ``mnemonic``: the class that lists it, else the default class."""
        for cls in self.classes.values():
            if mnemonic in cls.mnemonics:
                return cls
        if self.default_class is None:
            raise KeyError(f"{self.name}: no class for {mnemonic!r} and no default class")
        return self.classes[self.default_class]

    def mnemonics(self) -> list[str]:
        """Every mnemonic some class lists, in file order."""
        return [m for cls in self.classes.values() for m in cls.mnemonics]


def _unit_use(unit: str, spec: Any) -> UnitUse:
    if isinstance(spec, int):
        return UnitUse(unit, 0, spec)
    return UnitUse(unit, int(spec.get("at", 0)), int(spec["cycles"]))


def parse_reference_machine(text: str) -> RefMachine:
    """Read a machine description from TOML text (no validation beyond what the reference needs)."""
    doc = tomllib.loads(text)
    head = doc["machine"]
    units = tuple(head["units"])
    classes: dict[str, RefClass] = {}
    for name, body in doc.get("classes", {}).items():
        uses = tuple(_unit_use(unit, spec) for unit, spec in body["units"].items())
        for use in uses:
            assert use.unit in units, f"class {name}: unknown unit {use.unit}"
        classes[name] = RefClass(name, int(body["latency"]), uses, tuple(body.get("mnemonics", ())))
    default = head.get("default_class")
    assert default is None or default in classes
    return RefMachine(
        name=head["name"],
        in_order_writeback=bool(head.get("in_order_writeback", False)),
        units=units,
        classes=classes,
        default_class=default,
    )


def load_reference_machine(name_or_path: str | Path) -> RefMachine:
    """A shipped machine by name (``"inorder5"``, ``"rocket"``) or a TOML file by path."""
    path = name_or_path if isinstance(name_or_path, Path) else MACHINES_DIR / f"{name_or_path}.toml"
    return parse_reference_machine(path.read_text())


@dataclass(frozen=True)
class Result:
    """The outcome of a simulation."""

    finish: int
    # (issue cycle, completion cycle = issue + latency) of every instruction, in program order
    timeline: list[tuple[int, int]]

    @property
    def issues(self) -> list[int]:
        return [issue for issue, _ in self.timeline]


class Simulator:
    """The machine state, advanced one instruction at a time by a clock that ticks one cycle at a time.

    ``initial`` optionally gives start times by resource name: ``"issue"``, ``"wb"``, unit names and
    register names; anything not given starts at 0.
    """

    def __init__(self, machine: RefMachine, initial: Mapping[str, int] | None = None) -> None:
        initial = dict(initial or {})
        self.machine = machine
        self.clock = 0
        self.issue = initial.pop("issue", 0)
        self.wb = initial.pop("wb", 0)
        self.free = {unit: initial.pop(unit, 0) for unit in machine.units}
        self.ready: dict[str, int] = {reg: t for reg, t in initial.items() if reg != "zero"}
        self.timeline: list[tuple[int, int]] = []

    def _can_issue(self, cls: RefClass, dsts: Sequence[str], srcs: Sequence[str], cycle: int) -> bool:
        if cycle < self.issue:
            return False
        for reg in srcs:
            if reg != "zero" and cycle < self.ready.get(reg, 0):
                return False
        for use in cls.units:
            if cycle + use.at < self.free[use.unit]:
                return False
        return not (self.machine.in_order_writeback and dsts and cycle + cls.latency < self.wb)

    def execute(self, instr: RefInstr) -> tuple[int, int]:
        """Issue one instruction at the first cycle it can; returns (issue cycle, completion cycle)."""
        mnemonic, dsts_all, srcs = instr
        cls = self.machine.class_of(mnemonic)
        dsts = [reg for reg in dsts_all if reg != "zero"]
        limit = self.clock + 10_000
        while not self._can_issue(cls, dsts, srcs, self.clock):
            self.clock += 1
            assert self.clock < limit, "the simulator does not make progress"
        t = self.clock
        self.issue = t + 1
        for use in cls.units:
            self.free[use.unit] = t + use.at + use.cycles
        for reg in dsts:
            self.ready[reg] = t + cls.latency
        if self.machine.in_order_writeback and dsts:
            self.wb = t + cls.latency
        self.timeline.append((t, t + cls.latency))
        return t, t + cls.latency

    def run(self, instrs: Iterable[RefInstr]) -> None:
        for instr in instrs:
            self.execute(instr)

    def state(self) -> dict[str, int]:
        """Every resource's release time by name (registers only once written or given)."""
        return {"issue": self.issue, "wb": self.wb, **self.free, **self.ready}

    def finish(self) -> int:
        """The finishing cycle: the largest release time of any resource."""
        return max(self.state().values())


def simulate(machine: RefMachine, instrs: Iterable[RefInstr]) -> Result:
    """Run one straight-line block from the zero state."""
    return simulate_trace(machine, [instrs])


def simulate_trace(
    machine: RefMachine, blocks: Iterable[Iterable[RefInstr]], initial: Mapping[str, int] | None = None
) -> Result:
    """Run blocks one after another, the state (and clock) carried from each block to the next."""
    sim = Simulator(machine, initial)
    for block in blocks:
        sim.run(block)
    return Result(sim.finish(), list(sim.timeline))
