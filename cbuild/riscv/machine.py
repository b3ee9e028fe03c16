"""Machine descriptions for the pipeline model, and the max-plus matrix of each instruction.

A machine is a TOML file (format and timing rules: docs/pipeline-model.md). The
state of a machine is one release time per resource: ``issue``, ``wb``, each unit
and each register. An instruction's matrix maps the state before it to the state
after it; a block's matrix is the product of its instructions' matrices in
reverse order.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cbuild.errors import CBuildError
from cbuild.riscv.isa import REGISTERS, Instruction
from cbuild.riscv.maxplus import NULL, Matrix, Row

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

MACHINES_DIR = Path(__file__).parent / "machines"
TARGETS = ("riscv32", "riscv64")
ISSUE, WRITEBACK = 0, 1
#: Penalties are less than this many cycles (the executor keeps a penalty in 20 bits of a key).
MAX_PENALTY = 1 << 20
#: Branch predictors a machine may name (docs/pipeline-model.md, "Control transfers").
PREDICTORS = ("none", "btfn")
#: Conditional branches: they either jump to their target or fall through.
CONDITIONAL_BRANCHES = frozenset(
    {"beq", "bne", "blt", "bge", "bltu", "bgeu", "beqz", "bnez", "blez", "bgez", "bltz", "bgtz", "bgt", "ble", "bgtu"}
    | {"bleu"}
)
#: Unconditional transfers: jumps, calls and returns.
JUMPS = frozenset({"j", "jal", "jr", "jalr", "ret", "call", "tail"})
#: Memory-ordering suffixes of atomics (``amoadd.w.aqrl``): they take the class of the bare mnemonic.
_ORDERING = re.compile(r"\.(aq|rl|aqrl)$")


class MachineError(CBuildError):
    """A machine description is malformed; the message names the file, line and field."""


@dataclass(frozen=True)
class UnitUse:
    """A unit an instruction class occupies: from ``at`` cycles after issue, for ``cycles`` cycles."""

    unit: int
    at: int
    cycles: int


@dataclass(frozen=True)
class InstructionClass:
    """Instructions that use the same units with the same result latency."""

    name: str
    units: tuple[UnitUse, ...]
    latency: int


def builtin_machines() -> list[str]:
    """Names of the machine descriptions shipped with the plugin."""
    return sorted(p.stem for p in MACHINES_DIR.glob("*.toml"))


def _line_of(text: str, *patterns: str) -> int:
    """The first line matching each pattern in turn (a table header, then a key inside it)."""
    lines = text.splitlines()
    start = 0
    for pattern in patterns:
        rx = re.compile(pattern)
        for i in range(start, len(lines)):
            if rx.search(lines[i]):
                start = i
                break
    return start + 1


class Machine:
    """A single-issue in-order machine read from a description."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._matrices: dict[tuple[str, tuple[str, ...], tuple[str, ...]], Matrix] = {}
        try:
            self.text = path.read_text()
        except OSError as exc:
            raise MachineError(f"cannot read machine description {path}: {exc.strerror}") from None
        try:
            doc = tomllib.loads(self.text)
        except tomllib.TOMLDecodeError as exc:
            line = getattr(exc, "lineno", None) or _line_from_message(str(exc))
            raise MachineError(f"{path.name}:{line}: not valid TOML: {exc}") from None
        self._read(doc)

    def _fail(self, field: str, message: str, *patterns: str) -> MachineError:
        return MachineError(f"{self.path.name}:{_line_of(self.text, *patterns)}: {field}: {message}")

    def _read(self, doc: Mapping[str, Any]) -> None:
        known_top = {"machine", "classes"}
        for key in doc:
            if key not in known_top:
                raise self._fail(key, "unknown table; expected [machine] and [classes.NAME]", rf"^\[?{re.escape(key)}")
        head = doc.get("machine")
        if not isinstance(head, dict):
            raise self._fail("machine", "missing [machine] table", r"^\[machine\]")
        m = r"^\[machine\]"
        allowed = {
            *("name", "description", "target", "in_order_writeback", "units", "default_class", "issue_width"),
            *("taken_branch_penalty", "mispredict_penalty", "predictor"),
        }
        for key in head:
            if key not in allowed:
                raise self._fail(f"machine.{key}", f"unknown key; accepted: {', '.join(sorted(allowed))}", m, key)
        self.name = str(head.get("name", self.path.stem))
        self.description = str(head.get("description", ""))
        self.target = head.get("target", "riscv32")
        if self.target not in TARGETS:
            raise self._fail(
                "machine.target", f"expected one of {', '.join(TARGETS)}, got {self.target!r}", m, "target"
            )
        if head.get("issue_width", 1) != 1:
            raise self._fail("machine.issue_width", "only single-issue machines (1) are supported", m, "issue_width")
        writeback = head.get("in_order_writeback", True)
        if not isinstance(writeback, bool) and writeback != "all":
            expected = f'expected true, false or "all", got {writeback!r}'
            raise self._fail("machine.in_order_writeback", expected, m, "in_order_writeback")
        #: Instructions with a destination register complete in program order.
        self.in_order_writeback: bool = writeback is not False
        #: Every instruction does, stores and branches too (``in_order_writeback = "all"``).
        self.writeback_all: bool = writeback == "all"
        self.taken_branch_penalty = self._penalty(head, "taken_branch_penalty")
        self.mispredict_penalty = self._penalty(head, "mispredict_penalty")
        predictor = head.get("predictor", "none")
        if predictor not in PREDICTORS:
            raise self._fail(
                "machine.predictor", f"expected one of {', '.join(PREDICTORS)}, got {predictor!r}", m, "predictor"
            )
        self.predictor: str = predictor
        units = head.get("units")
        if not isinstance(units, list) or not units or not all(isinstance(u, str) and u for u in units):
            raise self._fail("machine.units", "expected a non-empty list of unit names", m, r"^\s*units")
        if len(set(units)) != len(units):
            raise self._fail("machine.units", "unit names must be unique", m, r"^\s*units")
        taken = sorted(set(units) & {"issue", "wb", *REGISTERS, "zero"})
        if taken:
            raise self._fail(
                "machine.units", f"{taken[0]!r} names a register or issue/wb; choose another unit name", m, r"^\s*units"
            )
        self.units: list[str] = list(units)
        self.resources: list[str] = ["issue", "wb", *self.units, *REGISTERS]
        self._index = {name: i for i, name in enumerate(self.resources)}
        classes = doc.get("classes")
        if not isinstance(classes, dict) or not classes:
            raise self._fail("classes", "missing [classes.NAME] tables", r"^\[classes")
        self.classes: dict[str, InstructionClass] = {}
        self._class_of: dict[str, InstructionClass] = {}
        for name, body in classes.items():
            self._read_class(name, body)
        default = head.get("default_class")
        if default is not None and default not in self.classes:
            raise self._fail(
                "machine.default_class", f"no class {default!r}; classes: {', '.join(self.classes)}", m, "default_class"
            )
        self.default_class = self.classes[default] if default is not None else None

    def _penalty(self, head: Mapping[str, Any], key: str) -> int:
        value = head.get(key, 0)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < MAX_PENALTY:
            expected = f"expected an integer from 0 to {MAX_PENALTY - 1}"
            raise self._fail(f"machine.{key}", f"{expected}, got {value!r}", r"^\[machine\]", key)
        return value

    def _read_class(self, name: str, body: object) -> None:
        where = rf"^\[classes\.{re.escape(name)}\]"
        field = f"classes.{name}"
        if not isinstance(body, dict):
            raise self._fail(field, "expected a table", where)
        for key in body:
            if key not in ("units", "latency", "mnemonics"):
                raise self._fail(f"{field}.{key}", "unknown key; accepted: latency, mnemonics, units", where, key)
        units = body.get("units")
        if not isinstance(units, dict):
            raise self._fail(f"{field}.units", "missing; expected a table such as { alu = 1 }", where, r"units|\[")
        uses = []
        for unit, spec in units.items():
            if unit not in self.units:
                raise self._fail(
                    f"{field}.units", f"unknown unit {unit!r}; units: {', '.join(self.units)}", where, "units"
                )
            if isinstance(spec, dict):
                extra = set(spec) - {"at", "cycles"}
                if extra:
                    raise self._fail(f"{field}.units.{unit}", f"unknown key {sorted(extra)[0]!r}", where, "units")
                at, cycles = spec.get("at", 0), spec.get("cycles")
            else:
                at, cycles = 0, spec
            for label, value in (("at", at), ("cycles", cycles)):
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    raise self._fail(
                        f"{field}.units.{unit}", f"{label} must be a non-negative integer, got {value!r}", where, unit
                    )
            assert isinstance(at, int)
            assert isinstance(cycles, int)
            uses.append(UnitUse(self._index[unit], at, cycles))
        latency = body.get("latency")
        if isinstance(latency, bool) or not isinstance(latency, int) or latency < 0:
            raise self._fail(f"{field}.latency", f"expected a non-negative integer, got {latency!r}", where, "latency")
        mnemonics = body.get("mnemonics", [])
        if not isinstance(mnemonics, list) or not all(isinstance(x, str) for x in mnemonics):
            raise self._fail(f"{field}.mnemonics", "expected a list of strings", where, "mnemonics")
        cls = InstructionClass(name, tuple(uses), latency)
        self.classes[name] = cls
        for mnemonic in (m.lower() for m in mnemonics):
            if mnemonic in self._class_of:
                raise self._fail(
                    f"{field}.mnemonics",
                    f"{mnemonic!r} is already in class {self._class_of[mnemonic].name!r}",
                    where,
                    re.escape(f'"{mnemonic}"'),
                )
            self._class_of[mnemonic] = cls

    def named_class(self, instr: Instruction) -> InstructionClass | None:
        """The class whose mnemonics list the instruction's, or None (it takes ``default_class``)."""
        return self._class_of.get(instr.mnemonic) or self._class_of.get(_ORDERING.sub("", instr.mnemonic))

    def class_of(self, instr: Instruction) -> InstructionClass:
        """The class an instruction belongs to."""
        cls = self.named_class(instr) or self.default_class
        if cls is None:
            where = f"line {instr.line}: " if instr.line else ""
            raise MachineError(
                f"{where}machine {self.name!r} has no class for {instr.mnemonic!r}; "
                f"add it to a class's mnemonics or set default_class in {self.path.name}"
            )
        return cls

    def _writes_back(self, instr: Instruction) -> bool:
        """Whether the in-order write-back rule holds ``instr`` back (and ``wb`` follows it)."""
        return self.in_order_writeback and (self.writeback_all or bool(instr.dsts))

    def _issue_row(self, instr: Instruction, cls: InstructionClass) -> Row:
        """The issue time as a max-plus row over the state before the instruction."""
        row: Row = {ISSUE: 0}
        terms: list[tuple[int, float]] = [(self._index[r], 0) for r in instr.srcs]
        terms += [(use.unit, -use.at) for use in cls.units]
        if self._writes_back(instr):
            terms.append((WRITEBACK, -cls.latency))
        for j, v in terms:
            if v > row.get(j, NULL):
                row[j] = v
        return row

    def instruction_matrix(self, instr: Instruction) -> Matrix:
        """E(instr): the state after the instruction as a max-plus product with the state before."""
        key = (instr.mnemonic, instr.dsts, instr.srcs)
        cached = self._matrices.get(key)
        if cached is None:
            cached = self._matrices[key] = self._instruction_matrix(instr)
        return cached

    def _instruction_matrix(self, instr: Instruction) -> Matrix:
        cls = self.class_of(instr)
        issue = self._issue_row(instr, cls)

        def shifted(delta: int) -> Row:
            return {j: v + delta for j, v in issue.items()}

        rows: dict[int, Row] = {ISSUE: shifted(1)}
        for use in cls.units:
            rows[use.unit] = shifted(use.at + use.cycles)
        for d in instr.dsts:
            rows[self._index[d]] = shifted(cls.latency)
        if self._writes_back(instr):
            rows[WRITEBACK] = shifted(cls.latency)
        return Matrix(len(self.resources), rows)

    def block_matrix(self, instrs: Iterable[Instruction]) -> Matrix:
        """E(I1 ... In) = E(In) x ... x E(I1): the whole block in one matrix."""
        out = Matrix.identity(len(self.resources))
        for instr in instrs:
            out = self.instruction_matrix(instr) @ out
        return out

    def block_matrices(self, blocks: Iterable[Sequence[Instruction]]) -> list[Matrix]:
        """Matrices of many blocks; blocks with the same instructions share one computation."""
        seen: dict[tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...], Matrix] = {}
        out = []
        for instrs in blocks:
            key = tuple((i.mnemonic, i.dsts, i.srcs) for i in instrs)
            if key not in seen:
                seen[key] = self.block_matrix(instrs)
            out.append(seen[key])
        return out

    def transfer_penalty(self, last: Instruction, address: int, target: int, taken: bool) -> int:
        """Cycles a control transfer adds after a block whose last instruction is ``last`` (at ``address``).

        ``target`` is the address the transfer goes to when taken (for a conditional branch that
        falls through, still its branch target: a static predictor needs its direction); ``taken``
        is False when execution falls through to the next instruction. A conditional branch costs
        ``mispredict_penalty`` when the predictor guessed its outcome wrong, else
        ``taken_branch_penalty`` if taken; a jump, call or return costs ``taken_branch_penalty``
        if taken; any other instruction costs nothing. Rules: docs/pipeline-model.md.
        """
        if last.mnemonic in CONDITIONAL_BRANCHES:
            # "btfn": backward taken (loops), forward not taken; "none": fetch runs on sequentially.
            predicted = self.predictor == "btfn" and target <= address
            if self.predictor != "none" and predicted != taken:
                return self.mispredict_penalty
            return self.taken_branch_penalty if taken else 0
        if last.mnemonic in JUMPS and taken:
            return self.taken_branch_penalty
        return 0

    def initial_state(self) -> list[int]:
        """Every resource released at cycle 0."""
        return [0] * len(self.resources)

    @staticmethod
    def finish(state: Sequence[float]) -> int:
        """The finishing cycle: the last release time of any resource."""
        return int(max(state))

    def estimate(self, instrs: Sequence[Instruction]) -> int:
        """Cycles of a straight-line block from an idle machine."""
        return self.finish(self.block_matrix(instrs).apply(self.initial_state()))

    def timeline(self, instrs: Sequence[Instruction]) -> list[tuple[int, int]]:
        """(issue cycle, completion cycle) of each instruction, from an idle machine."""
        state: list[float] = list(self.initial_state())
        out = []
        for instr in instrs:
            cls = self.class_of(instr)
            issue = max(v + state[j] for j, v in self._issue_row(instr, cls).items())
            out.append((int(issue), int(issue) + cls.latency))
            state = self.instruction_matrix(instr).apply(state)
        return out


def _line_from_message(message: str) -> int:
    m = re.search(r"line (\d+)", message)
    return int(m.group(1)) if m else 1


def load_machine(name_or_path: str | Path, *, root: Path | None = None) -> Machine:
    """A shipped machine by name (``inorder5``, ``rocket``) or a description file.

    A relative path is taken relative to ``root`` (the project directory).
    """
    if isinstance(name_or_path, str) and name_or_path in builtin_machines():
        return Machine(MACHINES_DIR / f"{name_or_path}.toml")
    path = Path(name_or_path)
    if root is not None and not path.is_absolute():
        path = root / path
    if path.suffix == ".toml" and not path.is_file():
        raise MachineError(f"machine description {str(name_or_path)!r} not found: no file {path}")
    if path.suffix != ".toml":
        raise MachineError(
            f"unknown machine {str(name_or_path)!r}: expected one of {', '.join(builtin_machines())} "
            "or the path of a .toml machine description"
        )
    return Machine(path)
