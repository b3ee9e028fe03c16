"""The block table: every basic block of a module with its size, function and source line.

The table is read from LLVM's textual IR as llvmlite prints it (one instruction
per line, blocks introduced by labels); ``codegen.check_table`` compares it with
llvmlite's own view of a module, and the tests run that check on real modules.
"""

from __future__ import annotations

import re
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
_LEADING = re.compile(r"^  (?:%[-\w.$\"]+ = )?(phi|landingpad)\b")


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


@dataclass
class BlockTable:
    """All blocks of an artifact, indexed as its counters are."""

    blocks: list[Block] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.blocks)

    @property
    def sizes(self) -> list[int]:
        """Per-block instruction counts, in counter order."""
        return [b.size for b in self.blocks]

    def to_json(self) -> dict[str, Any]:
        """A compact document: functions and files are interned."""
        functions: dict[str, int] = {}
        files: dict[str, int] = {}
        rows = []
        for b in self.blocks:
            fi = functions.setdefault(b.function, len(functions))
            si = files.setdefault(b.file, len(files))
            rows.append([fi, b.size, si, b.line])
        return {"functions": list(functions), "files": list(files), "blocks": rows}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> BlockTable:
        """Inverse of :meth:`to_json`."""
        functions, files = doc["functions"], doc["files"]
        return cls([Block(functions[f], size, files[s], line) for f, size, s, line in doc["blocks"]])


@dataclass
class ParsedBlock:
    """A block's position in the IR text, as the instrumenter needs it."""

    function: str
    #: Index of the line before which counting code goes (after PHIs and EH pads).
    insert_at: int
    size: int
    dbg: int | None


@dataclass
class ParsedModule:
    """IR text split into lines, with its blocks located."""

    lines: list[str]
    blocks: list[ParsedBlock]
    #: Function name -> (file, line) from its DISubprogram.
    subprograms: dict[str, tuple[str, int]]
    #: DILocation metadata id -> (file, line).
    locations: dict[int, tuple[str, int]]

    def table(self) -> BlockTable:
        """The block table in counter order."""
        out = []
        for b in self.blocks:
            file, line = self.subprograms.get(b.function, ("", 0))
            if b.dbg is not None and b.dbg in self.locations:
                file, line = self.locations[b.dbg]
            out.append(Block(b.function, b.size, file, line))
        return BlockTable(out)


def _unquote(name: str) -> str:
    if name.startswith('"'):
        return name[1:-1]
    return name


def _parse_metadata(lines: list[str]) -> tuple[dict[int, tuple[str, int]], dict[int, str]]:
    """DILocation id -> (file, line), and DISubprogram id -> "file\\0line"."""
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
            if name.startswith("/") or not directory:
                return name
            return f"{directory}/{name}"
        if "file" in fields:
            return file_of(ref(fields["file"]), depth + 1)
        return file_of(ref(fields.get("scope")), depth + 1)

    locations: dict[int, tuple[str, int]] = {}
    subprogram_sites: dict[int, str] = {}
    for node_id, (kind, fields) in nodes.items():
        if kind == "!DILocation":
            locations[node_id] = (file_of(ref(fields.get("scope"))), int(fields.get("line", "0")))
        elif kind == "!DISubprogram":
            subprogram_sites[node_id] = f"{file_of(node_id)}\0{fields.get('line', '0')}"
    return locations, subprogram_sites


def parse_module(text: str) -> ParsedModule:
    """Locate every block of every defined function in ``text``.

    ``text`` must be LLVM's own printing of a module (``str(module)`` in llvmlite),
    whose layout is regular: instructions on lines indented by two spaces.
    """
    lines = text.split("\n")
    locations, subprogram_sites = _parse_metadata(lines)
    subprograms: dict[str, tuple[str, int]] = {}
    blocks: list[ParsedBlock] = []
    function: str | None = None
    current: ParsedBlock | None = None
    in_leading = True
    for index, line in enumerate(lines):
        if function is None:
            if line.startswith("define "):
                m = _DEFINE_NAME.search(line)
                if m is None:
                    raise InstrumentError(f"cannot read the function name in: {line[:200]}")
                function = _unquote(m.group(1))
                dbg = _DBG_REF.search(line[line.rfind(")") :])
                if dbg and int(dbg.group(1)) in subprogram_sites:
                    file, _, lineno = subprogram_sites[int(dbg.group(1))].partition("\0")
                    subprograms[function] = (file, int(lineno))
                current = None
            continue
        if line == "}":
            function = None
            current = None
            continue
        if _INSTR.match(line):
            if current is None:
                current = ParsedBlock(function, index, 0, None)
                blocks.append(current)
                in_leading = True
            if in_leading and not _LEADING.match(line):
                current.insert_at = index
                in_leading = False
            call = _INTRINSIC_CALLEE.search(line)
            if call is None or UNCOUNTED_INTRINSIC.match(call.group(1)) is None:
                current.size += 1
                if current.dbg is None:
                    m = _DBG_REF.search(line)
                    if m:
                        current.dbg = int(m.group(1))
            continue
        if _LABEL.match(line):
            current = None
    return ParsedModule(lines, blocks, subprograms, locations)
