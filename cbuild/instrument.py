"""Counting code inserted into LLVM IR text: one counter per block and a running total.

Each block, when entered, adds one to its own counter and its size to the running
total. The code goes after the block's PHI nodes and landing pad, so a block that
ends in a call that never returns is still counted. None of it is counted itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cbuild.blocks import BlockTable, ParsedModule, parse_module
from cbuild.errors import InstrumentError

COUNTERS = "__instrbudget_counters"
TOTAL = "__instrbudget_total"
NBLOCKS = "__instrbudget_nblocks"
BUILD_ID = "__instrbudget_build_id"
_PREFIX = "%__ib."
_ATTR_GROUP = re.compile(r"^attributes #(\d+) = \{(.*)\}$")
_GROUP_REF = re.compile(r" #(\d+)\b")
# Claims that stop being true once a function updates the counters: left in place,
# they let the optimiser keep the running total in a register across a call.
_STALE_CLAIM = re.compile(r"\s*\b(?:memory\([^)]*\)|speculatable|readnone|readonly|writeonly)(?=\s|$)")


@dataclass(frozen=True)
class Instrumented:
    """IR text with counters, and the table that gives each counter its meaning."""

    text: str
    table: BlockTable


def _globals(n: int, build_id: str) -> list[str]:
    data = build_id.encode()
    return [
        f"@{COUNTERS} = hidden global [{max(n, 1)} x i64] zeroinitializer, align 64",
        f"@{TOTAL} = hidden global i64 0, align 64",
        f"@{NBLOCKS} = hidden constant i64 {n}, align 8",
        f'@{BUILD_ID} = hidden constant [{len(data) + 1} x i8] c"{data.decode()}\\00", align 1',
    ]


def _counting_code(index: int, n: int, size: int) -> list[str]:
    slot = f"getelementptr inbounds ([{n} x i64], ptr @{COUNTERS}, i64 0, i64 {index})"
    v = f"{_PREFIX}{index}"
    return [
        f"  {v}.c = load i64, ptr {slot}, align 8",
        f"  {v}.c1 = add i64 {v}.c, 1",
        f"  store i64 {v}.c1, ptr {slot}, align 8",
        f"  {v}.t = load i64, ptr @{TOTAL}, align 8",
        f"  {v}.t1 = add i64 {v}.t, {size}",
        f"  store i64 {v}.t1, ptr @{TOTAL}, align 8",
    ]


def _drop_stale_claims(lines: list[str]) -> list[str]:
    """Remove memory-effect claims from attribute groups of defined functions and call sites.

    Groups referenced only by ``declare`` lines (library functions, which are not
    instrumented) keep their claims.
    """
    declared_only: set[str] = set()
    used_elsewhere: set[str] = set()
    for line in lines:
        if line.startswith("declare "):
            declared_only.update(_GROUP_REF.findall(line))
        elif line.startswith(("define ", "  ")):
            used_elsewhere.update(_GROUP_REF.findall(line))
    keep = declared_only - used_elsewhere
    out = []
    for line in lines:
        m = _ATTR_GROUP.match(line)
        if m and m.group(1) not in keep:
            body = _STALE_CLAIM.sub("", m.group(2))
            line = f"attributes #{m.group(1)} = {{{body}}}"
        out.append(line)
    return out


def instrument(text: str, *, build_id: str, counting: bool = True) -> Instrumented:
    """Add counting code to ``text`` (LLVM's printing of a whole program's module).

    With ``counting=False`` only the globals are added, so that the runtime links
    and reports zero; the block table is still returned.
    """
    if _PREFIX in text:
        raise InstrumentError("the module already contains instrbudget counters (instrumented twice?)")
    if not build_id.isalnum():
        raise InstrumentError(f"build id must be alphanumeric: {build_id!r}")
    parsed: ParsedModule = parse_module(text)
    n = len(parsed.blocks)
    lines = _drop_stale_claims(parsed.lines) if counting else parsed.lines
    out: list[str] = []
    inserts = {b.insert_at: i for i, b in enumerate(parsed.blocks)} if counting else {}
    first_define = next((i for i, line in enumerate(lines) if line.startswith(("define ", "declare "))), len(lines))
    for index, line in enumerate(lines):
        if index == first_define:
            out.extend(_globals(n, build_id))
            out.append("")
        block = inserts.get(index)
        if block is not None:
            out.extend(_counting_code(block, max(n, 1), parsed.blocks[block].size))
        out.append(line)
    if first_define == len(lines):
        out.extend(_globals(n, build_id))
    return Instrumented("\n".join(out), parsed.table())
