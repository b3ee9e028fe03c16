"""Counting code inserted into LLVM IR text: one counter per block and a running total.

Each block, when entered, adds one to its own counter and its size to the running
total. The code goes after the block's PHI nodes and landing pad, so a block that
ends in a call that never returns is still counted. None of it is counted itself.

The running total lives in a per-function accumulator that is added to the
global total before every call and every exit from the function: the global total
is exact whenever code outside the function can look at it, and a block costs one
register addition for it instead of a memory update.
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
_ACC = "%__ib.acc"
_FLUSH_POINT = re.compile(
    r"^  (?:%[-\w.$\"]+ = )?(?:tail |musttail |notail )?(?:call|invoke|callbr) |^  (?:ret|resume|unreachable)\b"
)
_INTRINSIC_CALL = re.compile(r"^  (?:%[-\w.$\"]+ = )?(?:tail |musttail |notail )?call [^@]*@llvm\.")
_RETURNS_TWICE_NAMES = ("setjmp", "_setjmp", "sigsetjmp", "__sigsetjmp", "savectx", "vfork", "getcontext")
_CALLEE = re.compile(r"\b(?:call|invoke) [^@]*@((?:[-a-zA-Z$._0-9]+)|\"(?:[^\"\\]|\\.)*\")\(")
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


def _counting_code(index: int, n: int, size: int, local: bool) -> list[str]:
    """Count one entry of block ``index``: its counter, and its size into the running total.

    With ``local`` the size goes into the function's accumulator (a stack slot the
    optimiser keeps in a register), which is added to the global total before every
    call and every exit from the function, where anyone could read the total.
    """
    slot = f"getelementptr inbounds ([{n} x i64], ptr @{COUNTERS}, i64 0, i64 {index})"
    v = f"{_PREFIX}{index}"
    total = _ACC if local else f"@{TOTAL}"
    return [
        f"  {v}.c = load i64, ptr {slot}, align 8",
        f"  {v}.c1 = add i64 {v}.c, 1",
        f"  store i64 {v}.c1, ptr {slot}, align 8",
        f"  {v}.t = load i64, ptr {total}, align 8",
        f"  {v}.t1 = add i64 {v}.t, {size}",
        f"  store i64 {v}.t1, ptr {total}, align 8",
    ]


def _drop_stale_claims(lines: list[str]) -> list[str]:
    """Remove memory-effect claims from the attribute groups of instrumented code.

    That is the groups of defined functions and of every call site except calls to
    intrinsics: a call may reach instrumented code directly, through an alias or a
    pointer. Groups used only by declarations (library functions, which are not
    instrumented) keep their claims.
    """
    stale: set[str] = set()
    for line in lines:
        if line.startswith("define "):
            stale.update(_GROUP_REF.findall(line))
        elif _FLUSH_POINT.match(line) and not _INTRINSIC_CALL.match(line) and not line.startswith("  ret"):
            stale.update(_GROUP_REF.findall(line[line.rfind(")") :]))
    out = []
    for line in lines:
        m = _ATTR_GROUP.match(line)
        if m and m.group(1) in stale:
            body = _STALE_CLAIM.sub("", m.group(2))
            line = f"attributes #{m.group(1)} = {{{body}}}"
        out.append(line)
    return out


def _setjmp_functions(lines: list[str]) -> set[str]:
    """Functions that call a function returning twice (setjmp and kin): their total stays in memory.

    A value kept in a register is not restored when such a call returns the second time.
    """
    twice_groups = {m.group(1) for m in map(_ATTR_GROUP.match, lines) if m and "returns_twice" in m.group(2)}
    twice_names = set(_RETURNS_TWICE_NAMES)
    for line in lines:
        if line.startswith("declare ") and set(_GROUP_REF.findall(line)) & twice_groups:
            m = _CALLEE.search(line.replace("declare ", "call ", 1))
            if m:
                twice_names.add(m.group(1).strip('"'))
    out: set[str] = set()
    function = None
    for line in lines:
        if line.startswith("define "):
            m = _CALLEE.search(line.replace("define ", "call ", 1))
            function = m.group(1).strip('"') if m else None
        elif line == "}":
            function = None
        elif function is not None and line.startswith("  ") and ("call " in line or "invoke " in line):
            m = _CALLEE.search(line)
            calls_twice = m is not None and m.group(1).strip('"') in twice_names
            if calls_twice or set(_GROUP_REF.findall(line[line.rfind(")") :])) & twice_groups:
                out.add(function)
    return out


def _flush_code(tag: int) -> list[str]:
    """Add the function's accumulator to the global total and clear it."""
    v = f"{_PREFIX}f{tag}"
    return [
        f"  {v}.a = load i64, ptr {_ACC}, align 8",
        f"  {v}.t = load i64, ptr @{TOTAL}, align 8",
        f"  {v}.t1 = add i64 {v}.t, {v}.a",
        f"  store i64 {v}.t1, ptr @{TOTAL}, align 8",
        f"  store i64 0, ptr {_ACC}, align 8",
    ]


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
    in_memory = _setjmp_functions(lines)
    out: list[str] = []
    inserts = {b.insert_at: i for i, b in enumerate(parsed.blocks)} if counting else {}
    entries: set[int] = set()
    for i, b in enumerate(parsed.blocks):
        if i == 0 or parsed.blocks[i - 1].function != b.function:
            entries.add(i)
    first_define = next((i for i, line in enumerate(lines) if line.startswith(("define ", "declare "))), len(lines))
    local = False  # the current function keeps its running total in a local until a call or exit
    flushes = 0
    previous = ""
    for index, line in enumerate(lines):
        if index == first_define:
            out.extend(_globals(n, build_id))
            out.append("")
        block = inserts.get(index)
        if block is not None:
            b = parsed.blocks[block]
            if block in entries:
                local = b.function not in in_memory
                if local:
                    out.append(f"  {_ACC} = alloca i64, align 8")
                    out.append(f"  store i64 0, ptr {_ACC}, align 8")
            out.extend(_counting_code(block, max(n, 1), b.size, local))
        # A musttail call must stay right before its ret: flush before the call only.
        after_musttail = line.startswith("  ret") and "musttail call" in previous
        if local and _FLUSH_POINT.match(line) and not _INTRINSIC_CALL.match(line) and not after_musttail:
            out.extend(_flush_code(flushes))
            flushes += 1
        if line == "}":
            local = False
        if line.startswith("  ") and not line.startswith("    "):
            previous = line
        out.append(line)
    if first_define == len(lines):
        out.extend(_globals(n, build_id))
    return Instrumented("\n".join(out), parsed.table())
