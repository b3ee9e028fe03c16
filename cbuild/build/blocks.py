"""The block table: every basic block of a module with its size, function and source line.

The table is read from LLVM's textual IR as llvmlite prints it (one instruction
per line, blocks introduced by labels); a region marker of instrbudget.h ends a block
for counting inside its IR block, so that the code before and after it is counted apart.
``codegen.check_table`` compares it with llvmlite's own view of a module, and the tests
run that check on real modules.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from cbuild.errors import InstrumentError

# An instruction starts on a line indented by exactly two spaces; continuation
# lines (switch cases, landingpad clauses) and debug records are indented more.
_INSTR = re.compile(r"^  [%a-z]")
_LABEL = re.compile(r'^(?:[-a-zA-Z$._0-9]+|"(?:[^"\\]|\\.)*"):')
_DEFINE_NAME = re.compile(r'@((?:[-a-zA-Z$._0-9]+)|"(?:[^"\\]|\\.)*")\(')
_DBG_REF = re.compile(r"!dbg !(\d+)")
_METADATA = re.compile(r"^!(\d+) = (?:distinct )?(!\w+)\((.*)\)\s*$")
_FIELD = re.compile(r'(\w+): ("(?:[^"\\]|\\.)*"|[^,]+)')
#: Intrinsics that are bookkeeping for the optimiser, not work: calls to them are never counted.
UNCOUNTED_INTRINSIC = re.compile(r"^llvm\.(?:dbg|lifetime|assume|experimental\.noalias\.scope\.decl|pseudoprobe)\b")
_INTRINSIC_CALLEE = re.compile(r"\bcall\b[^@]*@(llvm\.[\w.]+)\(")
#: A region marker of instrbudget.h: an empty inline-assembly statement, never counted.
REGION_MARKER = re.compile(r'\bcall void asm sideeffect "# instrbudget-region (start|next|stop)", "[^"]*"\((.*)\)')


#: The ``terminator`` of a block that ends at a region marker (inside an IR block).
REGION_MARK = "region-marker"


def region_marker(line: str) -> re.Match[str] | None:
    """The region marker on an IR line (kind, operands), if any; cheap for the other lines."""
    return REGION_MARKER.search(line) if "instrbudget-region" in line else None


_LEADING = re.compile(r"^  (?:%[-\w.$\"]+ = )?(phi|landingpad)\b")
_OPCODE = re.compile(r"^  (?:%[-\w.$\"]+ = )?(?:tail |musttail |notail )?([a-z_]+)")
_LABEL_REF = re.compile(r'label (%(?:[-a-zA-Z$._0-9]+|"(?:[^"\\]|\\.)*"))')
_UNNAMED_PARAM = re.compile(r" %(\d+)(?=[,)])")
_CALL = re.compile(r"^  (?:%[-\w.$\"]+ = )?(?:tail |musttail |notail )?(?:call|invoke|callbr) ")
#: The callee of a call line (group 1, possibly quoted).
#: Declared functions that are not the host's library work: the engine's runtime, and errno's address.
_NOT_OUTSIDE = ("__instrbudget_", "__errno_location")
CALLEE = re.compile(r"\b(?:call|invoke|callbr) [^@]*@((?:[-a-zA-Z$._0-9]+)|\"(?:[^\"\\]|\\.)*\")\(")
#: An attribute group definition: its number and its attributes.
ATTRIBUTE_GROUP = re.compile(r"^attributes #(\d+) = \{(.*)\}$")
#: A reference to an attribute group (``#3``).
GROUP_REF = re.compile(r" #(\d+)\b")
#: Together these promise that a call comes back through its return: no exit, longjmp or throw.
_RETURNS = frozenset({"willreturn", "nounwind"})


def defined_name(line: str) -> str | None:
    """The function a ``define`` or ``declare`` line introduces."""
    m = CALLEE.search(line.replace("define ", "call ", 1).replace("declare ", "call ", 1))
    return _unquote(m.group(1)) if m else None


def _returning_functions(lines: list[str]) -> tuple[set[str], dict[str, set[str]]]:
    """Attribute groups that promise a normal return, and each function's attributes."""
    groups = {}
    for line in lines:
        m = ATTRIBUTE_GROUP.match(line)
        if m:
            groups[m.group(1)] = set(m.group(2).split())
    returning = {g for g, attrs in groups.items() if attrs >= _RETURNS}
    functions: dict[str, set[str]] = {}
    for line in lines:
        if line.startswith(("define ", "declare ")):
            name = defined_name(line)
            if name is not None:
                functions[name] = set(GROUP_REF.findall(line[line.rfind(")") :]))
    return returning, functions


def _may_not_return(line: str, returning: set[str], functions: dict[str, set[str]]) -> bool:
    """Whether a call line may leave its caller other than by returning (exit, longjmp, throw)."""
    if region_marker(line):
        return False
    site = set(GROUP_REF.findall(line[line.rfind(")") :]))
    if site & returning:
        return False
    m = CALLEE.search(line)
    return not (m and functions.get(_unquote(m.group(1)), set()) & returning)


@dataclass(frozen=True)
class Block:
    """One basic block of a defined function."""

    function: str
    #: Number of counted IR instructions (debug records and bookkeeping calls excluded).
    size: int
    #: Source file of the block's first located instruction, or of its function.
    file: str
    #: First source line of the block (0 when the IR carries no line information).
    line: int
    #: Counted instructions per source line: (file, line, instructions); they add up to ``size``.
    lines: tuple[tuple[str, int, int], ...] = ()
    #: Calls of functions outside the build (the host's libraries), whose work is not counted:
    #: (function, call sites in this block).
    outside: tuple[tuple[str, int], ...] = ()
    #: Direct calls of functions the build defines (its own, the counted libraries'):
    #: (callee, file, line of the call, call sites there in this block).
    calls_to: tuple[tuple[str, str, int, int], ...] = ()


@dataclass
class BlockTable:
    """All blocks of an artifact, and how their counts follow from the counters."""

    blocks: list[Block] = field(default_factory=list)
    #: Per block: (counter, coefficient) pairs whose sum is the block's count.
    #: None means one counter per block, in block order.
    derive: list[list[tuple[int, int]]] | None = None
    #: Number of counters the artifact keeps.
    counters: int = -1

    def __post_init__(self) -> None:
        if self.counters < 0:
            self.counters = len(self.blocks)

    def __len__(self) -> int:
        return len(self.blocks)

    def block_counts(self, raw: Sequence[int]) -> tuple[int, ...]:
        """Block execution counts from the counters' values."""
        if len(raw) != self.counters:
            raise ValueError(f"{len(raw)} counters for a table expecting {self.counters}")
        if self.derive is None:
            return tuple(raw)
        return tuple(sum(raw[c] * k for c, k in terms) for terms in self.derive)

    @property
    def functions(self) -> list[str]:
        """Defined functions in table order (the numbers the runtime's call events use)."""
        return list(dict.fromkeys(b.function for b in self.blocks))

    @property
    def sizes(self) -> list[int]:
        """Per-block instruction counts, in counter order."""
        return [b.size for b in self.blocks]

    def to_json(self) -> dict[str, Any]:
        """A compact document: functions and files are interned."""
        functions: dict[str, int] = {}
        files: dict[str, int] = {}
        outside: dict[str, int] = {}
        rows = []
        lines = []
        calls = []
        direct = []
        for b in self.blocks:
            fi = functions.setdefault(b.function, len(functions))
            si = files.setdefault(b.file, len(files))
            rows.append([fi, b.size, si, b.line])
            lines.append([x for f, n, c in b.lines for x in (files.setdefault(f, len(files)), n, c)])
            calls.append([x for f, n in b.outside for x in (outside.setdefault(f, len(outside)), n)])
            direct.append(
                [
                    x
                    for callee, file, line, n in b.calls_to
                    for x in (functions.setdefault(callee, len(functions)), files.setdefault(file, len(files)), line, n)
                ]
            )
        doc: dict[str, Any] = {"functions": list(functions), "files": list(files), "blocks": rows, "lines": lines}
        if outside:
            doc["outside"] = list(outside)
            doc["outside_calls"] = calls
        if any(direct):
            doc["calls_to"] = direct
        doc["counters"] = self.counters
        if self.derive is not None:
            doc["derive"] = [[x for pair in terms for x in pair] for terms in self.derive]
        return doc

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> BlockTable:
        """Inverse of :meth:`to_json`."""
        functions, files = doc["functions"], doc["files"]
        per_line = doc.get("lines") or [[] for _ in doc["blocks"]]
        outside = doc.get("outside", [])
        per_call = doc.get("outside_calls") or [[] for _ in doc["blocks"]]
        per_callee = doc.get("calls_to") or [[] for _ in doc["blocks"]]
        blocks = [
            Block(
                functions[f],
                size,
                files[s],
                line,
                tuple((files[flat[i]], flat[i + 1], flat[i + 2]) for i in range(0, len(flat), 3)),
                tuple((outside[calls[i]], calls[i + 1]) for i in range(0, len(calls), 2)),
                tuple((functions[to[i]], files[to[i + 1]], to[i + 2], to[i + 3]) for i in range(0, len(to), 4)),
            )
            for (f, size, s, line), flat, calls, to in zip(doc["blocks"], per_line, per_call, per_callee, strict=True)
        ]
        derive = None
        if "derive" in doc:
            derive = [list(zip(flat[::2], flat[1::2], strict=True)) for flat in doc["derive"]]
        return cls(blocks, derive, doc.get("counters", len(blocks)))


@dataclass
class ParsedBlock:
    """A block's position in the IR text and its control flow, as the instrumenter needs them."""

    function: str
    #: Index of the line before which counting code goes (after PHIs and EH pads).
    insert_at: int
    size: int
    dbg: int | None
    #: How branches name this block (``%3``, ``%for.body``); the entry block's implicit number.
    label: str = ""
    #: How PHI nodes name the IR block this one is part of as a predecessor: ``label``, except in a
    #: block a region marker began (its ``label`` made up), which is its IR block's.
    ir_label: str = ""
    #: First and one-past-last line of the terminator (continuation lines included).
    term_start: int = 0
    term_end: int = 0
    #: Opcode of the terminator (``br``, ``switch``, ``ret``, ``invoke``, ...).
    terminator: str = ""
    #: Labels the terminator branches to, in order, without repeats.
    successors: list[str] = field(default_factory=list)
    #: Successors that cannot be given a block of their own (unwind, indirectbr, callbr).
    fixed_successors: list[str] = field(default_factory=list)
    #: Lines of PHI nodes.
    phis: list[int] = field(default_factory=list)
    #: Contains a call that may not come back (anything but an intrinsic).
    calls: bool = False
    #: Ends in a ``musttail`` call, which nothing may separate from its ``ret``.
    musttail: bool = False
    #: Index of the block's first instruction line.
    first_line: int = 0
    #: Debug location (metadata id, or None) of each counted instruction.
    located: list[int | None] = field(default_factory=list)
    #: Functions outside the module it calls -> call sites.
    outside: dict[str, int] = field(default_factory=dict)
    #: Functions of the module it calls directly, and where (the call's debug location) -> sites.
    calls_to: dict[tuple[str, int | None], int] = field(default_factory=dict)


@dataclass
class ParsedModule:
    """IR text split into lines, with its blocks located."""

    lines: list[str]
    blocks: list[ParsedBlock]
    #: Function name -> (file, line) from its DISubprogram.
    subprograms: dict[str, tuple[str, int]]
    #: DILocation metadata id -> (file, line).
    locations: dict[int, tuple[str, int]]
    #: DILocation metadata id -> the location it was inlined at (``inlinedAt``), where it has one.
    inlined_at: dict[int, int] = field(default_factory=dict)

    def table(self) -> BlockTable:
        """The block table in counter order."""
        out = []
        for b in self.blocks:
            file, line = self.subprograms.get(b.function, ("", 0))
            if b.dbg is not None and b.dbg in self.locations:
                file, line = self.locations[b.dbg]
            per_line: dict[tuple[str, int], int] = {}
            for dbg in b.located:
                # An instruction without a location belongs to the block's first line.
                where = self.locations.get(dbg, (file, line)) if dbg is not None else (file, line)
                per_line[where] = per_line.get(where, 0) + 1
            lines = tuple((f, n, c) for (f, n), c in per_line.items())
            calls: dict[tuple[str, str, int], int] = {}
            own_file = self.subprograms.get(b.function, ("", 0))[0]
            for (callee, dbg), sites in b.calls_to.items():
                f, n = self._call_line(dbg, own_file, (file, line)) if dbg is not None else (file, line)
                calls[(callee, f, n)] = calls.get((callee, f, n), 0) + sites
            calls_to = tuple((callee, f, n, c) for (callee, f, n), c in sorted(calls.items()))
            out.append(Block(b.function, b.size, file, line, lines, tuple(sorted(b.outside.items())), calls_to))
        return BlockTable(out)

    def _call_line(self, dbg: int, own_file: str, block: tuple[str, int]) -> tuple[str, int]:
        """Where a call is in its caller's own source: of the locations it was inlined through
        (a ``std::sort`` call inlined from libc++'s headers into the caller), the innermost in the
        caller's file; the call's own location where none is (or the caller has no file), and the
        ``block``'s where the call has none the module describes."""
        at: int | None = dbg if own_file else None
        for _ in range(_MAX_INLINED):
            if at is None:
                break
            where = self.locations.get(at)
            if where is not None and where[0] == own_file and where[1]:
                return where
            at = self.inlined_at.get(at)
        return self.locations.get(dbg, block)


#: The most ``inlinedAt`` links followed from a location (a guard against a malformed module's cycle).
_MAX_INLINED = 256


def _unquote(name: str) -> str:
    if name.startswith('"'):
        return name[1:-1]
    return name


def _parse_metadata(lines: list[str]) -> tuple[dict[int, tuple[str, int]], dict[int, int], dict[int, str]]:
    """DILocation id -> (file, line), DILocation id -> the DILocation id it was inlined at, and
    DISubprogram id -> "file\\0line"."""
    nodes: dict[int, tuple[str, dict[str, str]]] = {}
    for line in lines:
        if not line.startswith("!"):
            continue
        m = _METADATA.match(line)
        if m is None:
            continue
        kind = m.group(2)
        if kind not in ("!DILocation", "!DISubprogram", "!DIFile", "!DILexicalBlock", "!DILexicalBlockFile"):
            continue
        fields = {k: v.strip() for k, v in _FIELD.findall(m.group(3))}
        nodes[int(m.group(1))] = (kind, fields)

    def ref(value: str | None) -> int | None:
        if value and value.startswith("!") and value[1:].isdigit():
            return int(value[1:])
        return None

    def file_of(node_id: int | None, depth: int = 0) -> str:
        if node_id is None or node_id not in nodes or depth > 64:
            return ""
        kind, fields = nodes[node_id]
        if kind == "!DIFile":
            name = fields.get("filename", '""')[1:-1]
            directory = fields.get("directory", '""')[1:-1]
            if name.startswith("/") or directory in ("", "."):
                return name.removeprefix("./")  # a project file, named relative to the project
            return os.path.normpath(f"{directory}/{name}")
        if "file" in fields:
            return file_of(ref(fields["file"]), depth + 1)
        return file_of(ref(fields.get("scope")), depth + 1)

    locations: dict[int, tuple[str, int]] = {}
    inlined_at: dict[int, int] = {}
    subprogram_sites: dict[int, str] = {}
    for node_id, (kind, fields) in nodes.items():
        if kind == "!DILocation":
            locations[node_id] = (file_of(ref(fields.get("scope"))), int(fields.get("line", "0")))
            outer = ref(fields.get("inlinedAt"))
            if outer is not None:
                inlined_at[node_id] = outer
        elif kind == "!DISubprogram":
            subprogram_sites[node_id] = f"{file_of(node_id)}\0{fields.get('line', '0')}"
    return locations, inlined_at, subprogram_sites


def _dbg_ref(lines: Sequence[str], index: int) -> re.Match[str] | None:
    """The ``!dbg`` of the instruction at ``lines[index]``, also where LLVM printed it on the
    instruction's continuation line (an ``invoke``'s ``to label %a unwind label %b, !dbg !7``)."""
    m = _DBG_REF.search(lines[index])
    if m is None and index + 1 < len(lines) and lines[index + 1].startswith("   "):
        m = _DBG_REF.search(lines[index + 1])
    return m


def parse_module(text: str) -> ParsedModule:
    """Locate every block of every defined function in ``text``.

    ``text`` must be LLVM's own printing of a module (``str(module)`` in llvmlite),
    whose layout is regular: instructions on lines indented by two spaces.
    """
    lines = text.split("\n")
    locations, inlined_at, subprogram_sites = _parse_metadata(lines)
    returning, callee_attrs = _returning_functions(lines)
    declared = {name for line in lines if line.startswith("declare ") and (name := defined_name(line)) is not None}
    subprograms: dict[str, tuple[str, int]] = {}
    blocks: list[ParsedBlock] = []
    function: str | None = None
    current: ParsedBlock | None = None
    in_leading = True
    pending_label = ""
    pending_ir = ""  # the IR block a block begun at a region marker is part of
    entry_label = ""

    def close(block: ParsedBlock | None, end: int) -> None:
        if block is None:
            return
        while end > block.term_start + 1 and not lines[end - 1].strip():
            end -= 1
        block.term_end = end
        text = "\n".join(lines[block.term_start : end])
        labels = list(dict.fromkeys(_LABEL_REF.findall(text)))
        op = block.terminator
        if op in ("indirectbr", "callbr"):
            block.fixed_successors = labels
        elif op == "invoke":
            unwind = text.rsplit("unwind label ", 1)[-1].split()[0] if "unwind label " in text else ""
            block.successors = [lbl for lbl in labels if lbl != unwind]
            block.fixed_successors = [unwind] if unwind else []
        else:
            block.successors = labels

    for index, line in enumerate(lines):
        if function is None:
            if line.startswith("define "):
                m = _DEFINE_NAME.search(line)
                if m is None:
                    raise InstrumentError(f"cannot read the function name in: {line[:200]}")
                function = _unquote(m.group(1))
                # An unnamed entry block takes the number after the unnamed parameters.
                params = line[m.end() : line.rfind(")") + 1]
                entry_label = f"%{len(_UNNAMED_PARAM.findall(params))}"
                dbg = _DBG_REF.search(line[line.rfind(")") :])
                if dbg and int(dbg.group(1)) in subprogram_sites:
                    file, _, lineno = subprogram_sites[int(dbg.group(1))].partition("\0")
                    subprograms[function] = (file, int(lineno))
                current = None
            continue
        if line == "}":
            close(current, index)
            function = None
            current = None
            continue
        if _INSTR.match(line):
            if current is None:
                label = pending_label or entry_label
                current = ParsedBlock(
                    function, index, 0, None, label=label, ir_label=pending_ir or label, first_line=index
                )
                pending_ir = ""
                blocks.append(current)
                in_leading = True
                pending_label = ""
            current.term_start = index
            op = _OPCODE.match(line)
            current.terminator = op.group(1) if op else ""
            if current.terminator == "phi":
                current.phis.append(index)
            if _CALL.match(line) and not _INTRINSIC_CALLEE.search(line):
                current.calls = current.calls or _may_not_return(line, returning, callee_attrs)
                current.musttail = "musttail call" in line
                callee = CALLEE.search(line)
                name = _unquote(callee.group(1)) if callee else ""
                if name in declared and not name.startswith(_NOT_OUTSIDE):
                    current.outside[name] = current.outside.get(name, 0) + 1
                elif name and name not in declared:  # defined here: its callers are told apart
                    at = _dbg_ref(lines, index)
                    key = (name, int(at.group(1)) if at else None)
                    current.calls_to[key] = current.calls_to.get(key, 0) + 1
            if in_leading and not _LEADING.match(line):
                current.insert_at = index
                in_leading = False
            call = _INTRINSIC_CALLEE.search(line)
            counted = call is None or UNCOUNTED_INTRINSIC.match(call.group(1)) is None
            if counted and not region_marker(line):
                current.size += 1
                m = _dbg_ref(lines, index)
                current.located.append(int(m.group(1)) if m else None)
                if current.dbg is None and m:
                    current.dbg = int(m.group(1))
            elif counted:
                # A region marker ends a block for counting (the IR block goes on): what ran before it
                # and what runs after are counted apart, and the marker, like a call, may be where the
                # running total is read, so that it is exact there (placement's abnormal edge).
                current.calls = True
                current.terminator = REGION_MARK
                current.term_end = index + 1
                pending_label, pending_ir = f"%__ib.r{index}", current.ir_label
                current.successors = [pending_label]
                current = None
            continue
        if _LABEL.match(line):
            close(current, index)
            current = None
            pending_label = "%" + line[: line.index(":", 1 if line.startswith('"') else 0)]
            if pending_label.startswith('%"'):
                pending_label = "%" + line[: line.index('":') + 1]
    return ParsedModule(lines, blocks, subprograms, locations, inlined_at)
