"""Counting code inserted into LLVM IR text: counters, and a running total of instructions.

Counters go where :mod:`cbuild.build.placement` puts them: on control-flow edges outside a
spanning tree (``edges``, the default), or one per block at its start, after its PHI
nodes and landing pad (``blocks``). Each counter increment also adds to the running
total the number of instructions it stands for. None of this code is counted itself.

The running total lives in a per-function accumulator that is added to the
thread's total before every call and every exit from the function: the total
is exact whenever code outside the function can look at it, and a counter costs one
register addition for it instead of a memory update.

Each thread counts into an array of its own (its counters, then its running total): a
function loads the thread's array from the initial-exec thread-local pointer
``__instrbudget_thread_base`` once, at entry, after the entry block's allocas, and asks
the runtime for one while it is null. The thread that loads the program or library
gets ``__instrbudget_counters`` itself, whose last element is ``__instrbudget_total``
(runtime/instrbudget_rt.c). Naked functions, which may not use registers or make calls
of their own, count into that array directly.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from cbuild.build.blocks import (
    ATTRIBUTE_GROUP,
    CALLEE,
    GROUP_REF,
    BlockTable,
    ParsedModule,
    defined_name,
    parse_module,
    region_marker,
)
from cbuild.build.checks import CheckPoint, check_points
from cbuild.build.placement import END, START, Placement, place, place_per_block
from cbuild.errors import InstrumentError

COUNTERS = "__instrbudget_counters"
TOTAL = "__instrbudget_total"
NCOUNTERS = "__instrbudget_ncounters"
#: The thread's counter array (initial-exec thread-local), and the runtime call that gives it one.
THREAD_BASE = "__instrbudget_thread_base"
THREAD_INIT = "__instrbudget_thread_init"
PLACEMENTS = ("edges", "blocks")
BUILD_ID = "__instrbudget_build_id"
#: Prefix of the per-block hooks: ``__instrbudget_block_17`` runs before block 17. One function
#: per block lets the models' code be specialised for each block (tables folded to constants).
BLOCK_HOOK = "__instrbudget_block_"
ACCESS_HOOK = "__instrbudget_access"
REGION_HOOK = "__instrbudget_region"
ENTER_HOOK = "__instrbudget_enter"
LEAVE_HOOK = "__instrbudget_leave"
FUNCTIONS = "__instrbudget_nfunctions"
#: Compares the running total with the cut-off limit (defined with the models' hooks, inlined).
CHECK_HOOK = "__instrbudget_check"
_FRAME_POINTER = re.compile(r'\s*"frame-pointer"="[^"]*"')
_FRAME = "%__ib.frame"
#: Region marker kinds, as the runtime numbers them.
REGION_KINDS = {"start": 0, "next": 1, "stop": 2}
#: Run-time events the instrumenter can report to cost models' dynamic phases.
EVENTS = ("blocks", "memory")
# The hooks touch only the runtime's own state: the optimiser may keep the program's
# values in registers across them, so the program's code stays as it was.
_HOOK_ATTRS = "nounwind willreturn memory(inaccessiblemem: readwrite)"
_MEMORY_OP = re.compile(r"^  (?:%[-\w.$\"]+ = )?(load|store|atomicrmw|cmpxchg) (.*)$")
_MEM_INTRINSIC = re.compile(
    r"^  (?:tail |notail )?call void @llvm\.(memcpy|memmove|memset)(?:\.inline)?\.[\w.]+\((.*)\)"
)
_SCALAR_BYTES = {
    "i1": 1,
    "i8": 1,
    "i16": 2,
    "i32": 4,
    "i64": 8,
    "i128": 16,
    "ptr": 8,
    "half": 2,
    "float": 4,
    "double": 8,
}
_VECTOR = re.compile(r"^<(\d+) x (\w+)>$")
_POINTER_ATTRS = re.compile(
    r"^(?:(?:noundef|nonnull|noalias|nocapture|readonly|writeonly|readnone|immarg|returned|"
    r"dereferenceable(?:_or_null)?\(\d+\)|align \d+|captures\([^)]*\))\s+)*"
)
_NAMED_VALUE = re.compile(r'^[%@](?:[-\w.$]+|"(?:[^"\\]|\\.)*")')
_ORDERING = re.compile(r"\s+(?:syncscope\([^)]*\)\s*)?(?:unordered|monotonic|acquire|release|acq_rel|seq_cst)$")
_BYTE_GEP = re.compile(
    r"^  (%[-\w.$\"]+) = getelementptr (?:inbounds |nuw |nusw )*i8, ptr (%[-\w.$\"]+), i(?:64|32) (-?\d+)(?:,|$)"
)
_PREFIX = "%__ib."
_ACC = "%__ib.acc"
_BASE = "%__ib.base"
_TOTAL = "%__ib.total"
_GO = "%__ib.go"
_ALLOCA = re.compile(r'^  %[-\w.$"]+ = alloca ')
_LOCAL_DEFINE = re.compile(r"^define (?:internal|private) ")
_GLOBAL_REF = re.compile(r'@([-a-zA-Z$._0-9]+|"(?:[^"\\]|\\.)*")')
_FLUSH_POINT = re.compile(
    r"^  (?:%[-\w.$\"]+ = )?(?:tail |musttail |notail )?(?:call|invoke|callbr) |^  (?:ret|resume|unreachable)\b"
)
_INTRINSIC_CALL = re.compile(r"^  (?:%[-\w.$\"]+ = )?(?:tail |musttail |notail )?call [^@]*@llvm\.")
_RETURNS_TWICE_NAMES = ("setjmp", "_setjmp", "sigsetjmp", "__sigsetjmp", "savectx", "vfork", "getcontext")
# Claims that stop being true once a function updates the counters: left in place,
# they let the optimiser keep the running total in a register across a call.
_STALE_CLAIM = re.compile(r"\s*\b(?:memory\([^)]*\)|speculatable|readnone|readonly|writeonly)(?=\s|$)")


@dataclass(frozen=True)
class Instrumented:
    """IR text with counters, and the table that gives each counter its meaning."""

    text: str
    table: BlockTable


def _tls_model(lines: list[str]) -> str:
    """The thread-local model of the counter base: initial-exec (one load from the thread pointer),
    unless the binary has thread-locals of its own, which could then overflow the static TLS a
    dlopen'd library gets (zig's UBSan runtime, linked into -O0 builds, has a 256 KiB one)."""
    for line in lines:
        if line.startswith("define "):
            break
        if line.startswith("@") and " thread_local" in line and " external " not in line:
            return ""
    return "" if any("@__ubsan_handle_" in line for line in lines) else "(initialexec)"


def _globals(n: int, build_id: str, events: frozenset[str], nblocks: int, cutoff: bool, tls: str) -> list[str]:
    data = build_id.encode()
    words = max(n, 1) + 1  # the counters, then the running total
    out = [
        f"@{COUNTERS} = hidden global [{words} x i64] zeroinitializer, align 64",
        f"@{TOTAL} = hidden alias i64, getelementptr inbounds ([{words} x i64], ptr @{COUNTERS}, i64 0, i64 {n})",
        f"@{THREAD_BASE} = hidden thread_local{tls} global ptr null, align 8",
        f"declare hidden ptr @{THREAD_INIT}() cold nounwind",
        f"@{NCOUNTERS} = hidden constant i64 {n}, align 8",
        f'@{BUILD_ID} = hidden constant [{len(data) + 1} x i8] c"{data.decode()}\\00", align 1',
    ]
    if "blocks" in events:
        out.extend(f"declare hidden void @{BLOCK_HOOK}{i}() {_HOOK_ATTRS}" for i in range(nblocks))
    if "memory" in events:
        out.append(f"declare hidden void @{ACCESS_HOOK}(ptr, i64, i32) {_HOOK_ATTRS}")
    out.append(f"declare hidden void @{REGION_HOOK}(i32, ptr, ptr, i32) nounwind willreturn")
    if cutoff:
        out.append(f"declare hidden void @{CHECK_HOOK}(i64, i64, i64, i32) nounwind")
    return out


def _check_code(point: CheckPoint, size: int, local: bool, total: str) -> list[str]:
    """Compare the thread's running total (corrected by the block's offset) with the limit before the block runs."""
    v = f"{_PREFIX}k{point.block}"
    code = [f"  {v}.t = load i64, ptr {total}, align 8"]
    now = f"{v}.t"
    if local:
        code += [f"  {v}.a = load i64, ptr {_ACC}, align 8", f"  {v}.s = add i64 {v}.t, {v}.a"]
        now = f"{v}.s"
    code.append(f"  call void @{CHECK_HOOK}(i64 {now}, i64 {-point.offset}, i64 {size}, i32 {point.block})")
    return code


def _with_frame_pointers(lines: list[str]) -> list[str]:
    """Defined functions keep frame pointers, so that a stop can name the callers of the stopped code."""
    groups: set[str] = set()
    for line in lines:
        if line.startswith("define "):
            groups.update(GROUP_REF.findall(line[line.rfind(")") :]))
    out = []
    for line in lines:
        m = ATTRIBUTE_GROUP.match(line)
        if m and m.group(1) in groups:
            body = _FRAME_POINTER.sub("", m.group(2)).strip()
            line = f'attributes #{m.group(1)} = {{ {body} "frame-pointer"="all" }}'
        out.append(line)
    return out


def _call_declarations(functions: int, declare_frameaddress: bool) -> list[str]:
    out = [
        f"@{FUNCTIONS} = hidden constant i64 {functions}, align 8",
        f"declare hidden void @{ENTER_HOOK}(i32, ptr) nounwind willreturn",
        f"declare hidden void @{LEAVE_HOOK}(i32, ptr) nounwind willreturn",
    ]
    if declare_frameaddress:  # the program may use __builtin_frame_address itself
        out.append("declare ptr @llvm.frameaddress.p0(i32 immarg)")
    return out


def _region_call(line: str) -> str | None:
    """The runtime call that replaces a region marker (instrbudget.h) once the counts are fixed."""
    m = region_marker(line)
    if m is None:
        return None
    ops = split_operands(m.group(2))
    if len(ops) != 3:
        raise InstrumentError(f"malformed instrbudget region marker: {line.strip()[:200]}")
    name, file = _pointer(ops[0]), _pointer(ops[1])
    if name is None or file is None or not ops[2].startswith("i32 "):
        raise InstrumentError(f"malformed instrbudget region marker: {line.strip()[:200]}")
    return f"  call void @{REGION_HOOK}(i32 {REGION_KINDS[m.group(1)]}, ptr {name}, ptr {file}, {ops[2]})"


def split_operands(text: str) -> list[str]:
    """Split an IR operand list at commas outside brackets and quotes."""
    out, depth, start, quoted = [], 0, 0, False
    for i, ch in enumerate(text):
        if ch == '"':
            quoted = not quoted
        elif quoted:
            continue
        elif ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(text[start:i].strip())
            start = i + 1
    out.append(text[start:].strip())
    return out


def _bytes_of(ir_type: str) -> int:
    """Size of a loaded or stored type (aggregates count as 8 bytes: the page is what matters)."""
    if ir_type in _SCALAR_BYTES:
        return _SCALAR_BYTES[ir_type]
    m = _VECTOR.match(ir_type)
    if m and m.group(2) in _SCALAR_BYTES:
        return int(m.group(1)) * _SCALAR_BYTES[m.group(2)]
    return 8


def _pointer(operand: str) -> str | None:
    """The value of a ``ptr X`` operand (attributes such as ``noundef align 4`` and atomic orderings
    dropped); None for other address spaces."""
    if not operand.startswith("ptr "):
        return None
    value = _POINTER_ATTRS.sub("", operand[4:]).strip()
    named = _NAMED_VALUE.match(value)
    if named is not None:  # %p or @g, possibly followed by an ordering (load atomic ... seq_cst)
        return named.group(0)
    value = _ORDERING.sub("", value).strip()
    return value or None


def _accesses(line: str) -> list[tuple[str, str, int]]:
    """The memory a line loads or stores: (pointer, size, is_store) for each access."""
    hooks: list[tuple[str, str, int]] = []
    m = _MEMORY_OP.match(line)
    if m is not None:
        op, rest = m.group(1), m.group(2)
        for word in ("atomic ", "volatile "):
            rest = rest.removeprefix(word)
        ops = split_operands(rest.split(", !", 1)[0])
        if op == "load" and len(ops) >= 2:
            ptr = _pointer(ops[1])
            if ptr is not None:
                hooks.append((ptr, str(_bytes_of(ops[0])), 0))
        elif op == "store" and len(ops) >= 2:
            ptr = _pointer(ops[1])
            if ptr is not None:
                hooks.append((ptr, str(_bytes_of(ops[0].rsplit(" ", 1)[0])), 1))
        elif op in ("atomicrmw", "cmpxchg"):
            rest = rest.removeprefix("weak ")
            first = split_operands(rest.split(" ", 1)[1] if op == "atomicrmw" else rest)[0]
            ptr = _pointer(first)
            if ptr is not None:
                hooks.append((ptr, "8", 1))
    else:
        m = _MEM_INTRINSIC.match(line)
        if m is not None:
            ops = split_operands(m.group(2))
            size = ops[2].split(" ")[-1] if len(ops) > 2 and ops[2].startswith("i64 ") else None
            dst = _pointer(ops[0])
            if size is not None and dst is not None:
                if m.group(1) != "memset":
                    src = _pointer(ops[1])
                    if src is not None:
                        hooks.append((src, size, 0))
                hooks.append((dst, size, 1))
    return hooks


def _byte_offsets(lines: list[str], start: int, end: int) -> dict[str, tuple[str, int]]:
    """Pointers of a function defined as a constant byte offset from another: name -> (base, offset)."""
    out: dict[str, tuple[str, int]] = {}
    for line in lines[start:end]:
        m = _BYTE_GEP.match(line)
        if m is not None:
            base, offset = m.group(2), int(m.group(3))
            if base in out:  # a chain of offsets: resolve to the first base
                base, more = out[base]
                offset += more
            out[m.group(1)] = (base, offset)
    return out


_Groups = dict[tuple[str, int], list[tuple[int, int, int]]]  # (base, is_store) -> [(line, offset, size)]


def _report(groups: _Groups, plan: dict[int, list[str]], names: Iterator[int]) -> None:
    """Hook calls for grouped accesses: one range per group spanning at most 1 KiB, else one per access."""
    for (base, kind), items in groups.items():
        lo = min(off for _, off, _ in items)
        hi = max(off + size for _, off, size in items)
        if hi - lo <= 1024:
            items = [(max(line for line, _, _ in items), lo, hi - lo)]
        for line, off, size in items:
            name = f"%__ib.m{next(names)}"
            plan.setdefault(line, []).extend(
                [
                    f"  {name} = getelementptr i8, ptr {base}, i64 {off}",
                    f"  call void @{ACCESS_HOOK}(ptr {name}, i64 {size}, i32 {kind})",
                ]
            )
    groups.clear()


def _access_plan(parsed: ParsedModule) -> dict[int, list[str]]:
    """Hook calls reporting memory accesses, by the line they go before.

    Within a stretch of a block without calls (a segment of a cost model can only
    end where a block starts, so nothing else can happen in between), accesses of
    one kind through the same base pointer at constant offsets spanning at most 1 KiB
    touch exactly the pages of the range from the first to the last byte: they are
    reported as that one range, before the last of them.
    """
    lines = parsed.lines
    plan: dict[int, list[str]] = {}
    functions: dict[str, tuple[int, int]] = {}
    for b in parsed.blocks:
        lo, hi = functions.get(b.function, (b.first_line, b.term_end))
        functions[b.function] = (min(lo, b.first_line), max(hi, b.term_end))
    offsets = {f: _byte_offsets(lines, lo, hi) for f, (lo, hi) in functions.items()}
    names = itertools.count()
    for block in parsed.blocks:
        known = offsets[block.function]
        groups: _Groups = {}
        for index in range(block.first_line, block.term_end):
            line = lines[index]
            found = _accesses(line)
            if not found and _FLUSH_POINT.match(line) and not _INTRINSIC_CALL.match(line):
                _report(groups, plan, names)  # a call: the callee may start a new segment
                continue
            for ptr, size, kind in found:
                if not size.isdigit():  # a run-time length (memcpy of n bytes): on its own
                    plan.setdefault(index, []).append(f"  call void @{ACCESS_HOOK}(ptr {ptr}, i64 {size}, i32 {kind})")
                    continue
                base, off = known.get(ptr, (ptr, 0))
                groups.setdefault((base, kind), []).append((index, off, int(size)))
        _report(groups, plan, names)
    return plan


def _counting_code(counter: int, weight: int, local: bool, base: str, total: str) -> list[str]:
    """One increment of ``counter`` in the array at ``base``, and ``weight`` instructions into the running total.

    With ``local`` the weight goes into the function's accumulator (a stack slot the
    optimiser keeps in a register), which is added to the thread's ``total`` before every
    call and every exit from the function, where anyone could read the total.
    """
    v = f"{_PREFIX}{counter}"
    code = [
        f"  {v}.p = getelementptr inbounds i64, ptr {base}, i64 {counter}",
        f"  {v}.c = load i64, ptr {v}.p, align 8",
        f"  {v}.c1 = add i64 {v}.c, 1",
        f"  store i64 {v}.c1, ptr {v}.p, align 8",
    ]
    if weight:
        total = _ACC if local else total
        code += [
            f"  {v}.t = load i64, ptr {total}, align 8",
            f"  {v}.t1 = add i64 {v}.t, {weight}",
            f"  store i64 {v}.t1, ptr {total}, align 8",
        ]
    return code


def _retarget(line: str, old: str, new: str) -> str:
    """Replace branch target ``label old`` with ``label new`` in a terminator line."""
    token, out, start = f"label {old}", [], 0
    while (at := line.find(token, start)) >= 0:
        end = at + len(token)
        whole = end == len(line) or line[end] in " ,]\t"
        out.append(line[start:at] + (f"label {new}" if whole else token))
        start = end
    out.append(line[start:])
    return "".join(out)


def _phi_incoming(line: str, old: str, new: str) -> str:
    """In a PHI line, the first entry from ``old`` comes from ``new``; later entries from ``old`` go.

    A switch with several cases to one block lists that predecessor once per case;
    the new block branches once, so it must be listed once.
    """
    head, sep, rest = line.partition("[")
    entries: list[str] = []
    depth, start = 0, 0
    body = sep + rest
    tail = ""
    for i, ch in enumerate(body):
        if ch == "[":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth == 0:
                entries.append(body[start : i + 1])
                if "[" not in body[i + 1 :]:
                    tail = body[i + 1 :]
                    break
    out: list[str] = []
    replaced = False
    for entry in entries:
        value, _, label = entry[1:-1].strip().rpartition(", ")
        if label == old:
            if replaced:
                continue
            entry = f"[ {value}, {new} ]"
            replaced = True
        out.append(entry)
    return head + ", ".join(out) + tail


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
            stale.update(GROUP_REF.findall(line))
        elif _FLUSH_POINT.match(line) and not _INTRINSIC_CALL.match(line) and not line.startswith("  ret"):
            stale.update(GROUP_REF.findall(line[line.rfind(")") :]))
    out = []
    for line in lines:
        m = ATTRIBUTE_GROUP.match(line)
        if m and m.group(1) in stale:
            body = _STALE_CLAIM.sub("", m.group(2))
            line = f"attributes #{m.group(1)} = {{{body}}}"
        out.append(line)
    return out


def _setjmp_functions(lines: list[str]) -> set[str]:
    """Functions that call a function returning twice (setjmp and kin): their total stays in memory.

    A value kept in a register is not restored when such a call returns the second time.
    """
    twice_groups = {m.group(1) for m in map(ATTRIBUTE_GROUP.match, lines) if m and "returns_twice" in m.group(2)}
    twice_names = set(_RETURNS_TWICE_NAMES)
    for line in lines:
        if line.startswith("declare ") and set(GROUP_REF.findall(line)) & twice_groups:
            name = defined_name(line)
            if name is not None:
                twice_names.add(name)
    out: set[str] = set()
    function = None
    for line in lines:
        if line.startswith("define "):
            function = defined_name(line)
        elif line == "}":
            function = None
        elif function is not None and line.startswith("  ") and ("call " in line or "invoke " in line):
            m = CALLEE.search(line)
            calls_twice = m is not None and m.group(1).strip('"') in twice_names
            if calls_twice or set(GROUP_REF.findall(line[line.rfind(")") :])) & twice_groups:
                out.add(function)
    return out


def _flush_code(tag: int, total: str) -> list[str]:
    """Add the function's accumulator to the thread's total and clear it."""
    v = f"{_PREFIX}f{tag}"
    return [
        f"  {v}.a = load i64, ptr {_ACC}, align 8",
        f"  {v}.t = load i64, ptr {total}, align 8",
        f"  {v}.t1 = add i64 {v}.t, {v}.a",
        f"  store i64 {v}.t1, ptr {total}, align 8",
        f"  store i64 0, ptr {_ACC}, align 8",
    ]


def _naked_functions(lines: list[str]) -> set[str]:
    """Functions without prologue or epilogue (``naked``): no registers or calls of the instrumenter's."""
    naked_groups = {m.group(1) for m in map(ATTRIBUTE_GROUP.match, lines) if m and re.search(r"\bnaked\b", m.group(2))}
    out: set[str] = set()
    for line in lines:
        if line.startswith("define "):
            attrs = line[line.rfind(")") :]
            if re.search(r"\bnaked\b", attrs) or set(GROUP_REF.findall(attrs)) & naked_groups:
                name = defined_name(line)
                if name is not None:
                    out.add(name)
    return out


def _called_directly(lines: list[str]) -> set[str]:
    """Functions of the module's own (internal or private) that nothing but direct calls from the
    module's code name: when one runs, its caller has found the thread's counters already."""
    local = {name for line in lines if _LOCAL_DEFINE.match(line) and (name := defined_name(line)) is not None}
    refs: Counter[str] = Counter()
    calls: Counter[str] = Counter()
    for line in lines if local else ():
        if "@" not in line:
            continue
        names = [m.group(1).strip('"') for m in _GLOBAL_REF.finditer(line)]
        if line.startswith("define "):
            names = names[1:]  # the function's own name
        refs.update(name for name in names if name in local)
        if line.startswith("  ") and (m := CALLEE.search(line)) is not None:
            calls[m.group(1).strip('"')] += 1
    return {name for name in local if refs[name] == calls[name]}


def _thread_base(entry_label: str | None, total_at: int) -> list[str]:
    """The thread's counter array at function entry, asking the runtime for one the first time
    (``entry_label``: that block's label; None: a function only the module's own code calls).

    Asking ends the entry block: what followed goes on in block ``__ib.go``.
    """
    if entry_label is None:
        return [
            f"  {_BASE} = load ptr, ptr @{THREAD_BASE}, align 8",
            f"  {_TOTAL} = getelementptr inbounds i64, ptr {_BASE}, i64 {total_at}",
        ]
    return [
        f"  {_PREFIX}tb = load ptr, ptr @{THREAD_BASE}, align 8",
        f"  {_PREFIX}tz = icmp eq ptr {_PREFIX}tb, null",
        f"  br i1 {_PREFIX}tz, label %__ib.ti, label {_GO}",
        "",
        "__ib.ti:",
        f"  {_PREFIX}tn = call ptr @{THREAD_INIT}()",
        f"  br label {_GO}",
        "",
        f"{_GO[1:]}:",
        f"  {_BASE} = phi ptr [ {_PREFIX}tb, {entry_label} ], [ {_PREFIX}tn, %__ib.ti ]",
        f"  {_TOTAL} = getelementptr inbounds i64, ptr {_BASE}, i64 {total_at}",
    ]


def _entry_split(lines: list[str], start: int) -> int:
    """Where the entry block starting at line ``start`` may be split: after its allocas (and their
    debug records), which must stay in the entry block to be static."""
    at = start
    while at < len(lines) and (_ALLOCA.match(lines[at]) or lines[at].startswith("    ")):
        at += 1
    while at > start and lines[at - 1].startswith("    "):  # records belong to the instruction after them
        at -= 1
    return at


def instrument(
    text: str,
    *,
    build_id: str,
    counting: bool = True,
    placement: str = "edges",
    events: frozenset[str] = frozenset(),
    calls: bool = False,
    cutoff: bool = False,
) -> Instrumented:
    """Add counting code to ``text`` (LLVM's printing of a whole program's module).

    With ``counting=False`` only the globals are added, so that the runtime links
    and reports zero; the block table is still returned. ``events`` adds calls for
    cost models' dynamic phases: ``blocks`` reports each block before it runs (its
    number in the table), ``memory`` each load, store and memory intrinsic.
    ``calls`` reports every function entry and return (with the frame address, so
    that frames left by longjmp or an exception are recognised) for inclusive
    costs and call-path profiles; functions are numbered in table order.
    ``cutoff`` adds a check of the running total against the run's limit at every
    function entry and loop head (:mod:`cbuild.build.checks`); the counts are the same.
    """
    unknown = set(events) - set(EVENTS)
    if unknown:
        raise InstrumentError(f"unknown instrumentation events {sorted(unknown)}; known: {', '.join(EVENTS)}")
    if _PREFIX in text:
        raise InstrumentError("the module already contains instrbudget counters (instrumented twice?)")
    if not build_id.isalnum():
        raise InstrumentError(f"build id must be alphanumeric: {build_id!r}")
    if placement not in PLACEMENTS:
        raise InstrumentError(f"counter placement {placement!r} is not one of {', '.join(PLACEMENTS)}")
    parsed: ParsedModule = parse_module(text)
    blocks = parsed.blocks
    plan = place(blocks) if placement == "edges" else place_per_block(blocks)
    table = parsed.table()
    table.derive = plan.derive if placement == "edges" else None
    table.counters = len(plan.sites)
    if not counting:
        table, plan = BlockTable(table.blocks, None, 0), Placement()
        events = frozenset()
    block_events: dict[int, list[int]] = {}
    if "blocks" in events:
        for number, block in enumerate(blocks):
            block_events.setdefault(block.insert_at, []).append(number)
    accesses = _access_plan(parsed) if "memory" in events else {}
    n = len(plan.sites)
    lines = _drop_stale_claims(parsed.lines) if counting else parsed.lines
    cutoff = cutoff and counting
    checks: dict[int, CheckPoint] = {}
    if cutoff:
        lines = _with_frame_pointers(lines)
        checks = {blocks[p.block].insert_at: p for p in check_points(blocks, plan)}
    in_memory = _setjmp_functions(lines)
    naked = _naked_functions(lines)
    starts: dict[int, list[int]] = {}
    ends: dict[int, list[int]] = {}
    splits: dict[str, list[tuple[int, int, int]]] = {}  # function -> (counter, src, dst)
    retarget: dict[int, list[tuple[str, str]]] = {}  # line -> (old label, new label)
    phi_fix: dict[int, list[tuple[str, str]]] = {}
    split_edges: set[tuple[int, int]] = set()
    for counter, site in enumerate(plan.sites):
        src = blocks[site.block]
        if site.kind == START:
            starts.setdefault(src.insert_at, []).append(counter)
        elif site.kind == END:
            ends.setdefault(src.term_start, []).append(counter)
        else:
            dst = blocks[site.target]
            new = f"%__ib.e{counter}"
            split_edges.add((site.block, site.target))
            splits.setdefault(src.function, []).append((counter, site.block, site.target))
            for i in range(src.term_start, src.term_end):
                retarget.setdefault(i, []).append((dst.label, new))
            for i in dst.phis:
                phi_fix.setdefault(i, []).append((src.ir_label, new))
    firsts = [i for i, blk in enumerate(blocks) if i == 0 or blocks[i - 1].function != blk.function]
    # Where each function's entry code goes. Every function but a naked one finds its thread's
    # counters at entry; one that code from outside may call first in a thread checks that it
    # has them after the entry block's allocas: what went at the entry block's start goes
    # there, and successors' PHIs name the block that now ends the entry block's code.
    entry_at: dict[int, str] = {}  # line -> function
    preludes: dict[int, str | None] = {}  # line -> the entry block's label (None: no check)
    phi_rename: dict[int, str] = {}  # PHI line -> the entry block's label, now __ib.go
    trusted = _called_directly(lines) if counting else set()
    tls = _tls_model(lines)
    for i in firsts:
        entry = blocks[i]
        if not counting or entry.function in naked or entry.function in trusted:
            entry_at[entry.insert_at] = entry.function
            if counting and entry.function not in naked:
                preludes[entry.insert_at] = None
            continue
        at = _entry_split(lines, entry.insert_at)
        entry_at[at] = entry.function
        preludes[at] = entry.label
        if at != entry.insert_at:
            for code in (starts, block_events):
                if entry.insert_at in code:
                    code[at] = code.pop(entry.insert_at)
            if entry.insert_at in checks:
                checks[at] = checks.pop(entry.insert_at)
        # The entry block's terminator is in its last part where region markers divide it.
        last = i
        while (
            last + 1 < len(blocks)
            and blocks[last + 1].ir_label == entry.label
            and blocks[last + 1].function == entry.function
        ):
            last += 1
        labels = set(blocks[last].successors) | set(blocks[last].fixed_successors)
        for j in range(i + 1, len(blocks)):
            if blocks[j].function != entry.function:
                break
            if blocks[j].label in labels and (last, j) not in split_edges:
                phi_rename.update(dict.fromkeys(blocks[j].phis, entry.label))
    calls = calls and counting
    function_ids = {blocks[i].function: number for number, i in enumerate(firsts)}
    defined = iter(blocks[i].function for i in firsts)  # functions in the order their definitions appear
    first_define = next((i for i, line in enumerate(lines) if line.startswith(("define ", "declare "))), len(lines))
    out: list[str] = []
    local = False  # the current function keeps its running total in a local until a call or exit
    base, total = f"@{COUNTERS}", f"@{TOTAL}"  # the current function's counter array and running total
    function = ""
    flushes = 0
    previous = ""
    for index, line in enumerate(lines):
        if index == first_define:
            out.extend(_globals(n, build_id, events, len(blocks), cutoff, tls))
            if calls:
                out.extend(_call_declarations(len(firsts), "@llvm.frameaddress.p0(" not in text))
            out.append("")
        if line.startswith("define "):
            function = next(defined, "")
        if index in preludes:
            local = function not in in_memory
            if local:
                out.append(f"  {_ACC} = alloca i64, align 8")
                out.append(f"  store i64 0, ptr {_ACC}, align 8")
            out.extend(_thread_base(preludes[index], n))
            base, total = _BASE, _TOTAL
        if calls and index in entry_at and function not in naked:  # naked: no frame to report
            # Before the entry block's own counting: its cost belongs to this function.
            out.append(f"  {_FRAME} = call ptr @llvm.frameaddress.p0(i32 0)")
            out.append(f"  call void @{ENTER_HOOK}(i32 {function_ids[function]}, ptr {_FRAME})")
        for counter in starts.get(index, ()):
            out.extend(_counting_code(counter, plan.weights[counter], local, base, total))
        if index in checks:
            point = checks[index]
            out.extend(_check_code(point, blocks[point.block].size, local, total))
        for number in block_events.get(index, ()):
            out.append(f"  call void @{BLOCK_HOOK}{number}()")
        for counter in ends.get(index, ()):
            out.extend(_counting_code(counter, plan.weights[counter], local, base, total))
        out.extend(accesses.get(index, ()))
        # A musttail call must stay right before its ret: flush before the call only.
        after_musttail = line.startswith("  ret") and "musttail call" in previous
        if local and _FLUSH_POINT.match(line) and not _INTRINSIC_CALL.match(line) and not after_musttail:
            out.extend(_flush_code(flushes, total))
            flushes += 1
        leaving = (line.startswith("  ret") and not after_musttail) or "musttail call" in line
        if calls and leaving and function in function_ids and function not in naked:
            out.append(f"  call void @{LEAVE_HOOK}(i32 {function_ids[function]}, ptr {_FRAME})")
        for old, new in retarget.get(index, ()):
            line = _retarget(line, old, new)
        for old, new in phi_fix.get(index, ()):
            line = _phi_incoming(line, old, new)
        if index in phi_rename:
            line = line.replace(f", {phi_rename[index]} ]", f", {_GO} ]")
        if counting and (region := _region_call(line)) is not None:
            line = region
        if line == "}":
            for counter, _src, target in splits.get(function, ()):
                out.append("")
                out.append(f"__ib.e{counter}:")
                out.extend(_counting_code(counter, plan.weights[counter], local, base, total))
                out.append(f"  br label {blocks[target].label}")
            local = False
            base, total = f"@{COUNTERS}", f"@{TOTAL}"
        if line.startswith("  ") and not line.startswith("    "):
            previous = line
        out.append(line)
    if first_define == len(lines):
        out.extend(_globals(n, build_id, events, len(blocks), cutoff, tls))
    return Instrumented("\n".join(out), table)
