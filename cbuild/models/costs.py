"""Executed block counts and what they cost."""

from __future__ import annotations

import functools
import itertools
import os
import re
import sysconfig
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from cbuild.build.blocks import BlockTable
from cbuild.build.demangle import LIBC_PREFIX
from cbuild.build.toolchain import zig_lib
from cbuild.models.profile import Profile

if TYPE_CHECKING:
    from cbuild.riscv.executor import Execution


@dataclass(frozen=True)
class BlockCounts:
    """How often each block of one artifact ran."""

    table: BlockTable
    counts: tuple[int, ...]
    #: Model name -> its static phase's document for this artifact.
    analyses: Mapping[str, Any] = field(default_factory=dict)
    #: Model name -> the numbers its dynamic phase reported for this execution.
    results: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    #: Regions the execution passed through (instrbudget.h), if any.
    profile: Profile | None = None
    #: RISC-V target -> what its build executed in the executor (models that execute a target).
    machine: Mapping[str, Execution] = field(default_factory=dict)
    #: Model name -> why it could not measure this artifact (its target cannot build the code).
    unavailable: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.counts) != len(self.table):
            raise ValueError(f"{len(self.counts)} counters for a table of {len(self.table)} blocks")

    def analysis(self, model: str) -> Mapping[str, Any]:
        """A model's static document (empty if the artifact was built without it)."""
        doc: Mapping[str, Any] = self.analyses.get(model, {})
        return doc

    def machine_run(self, target: str) -> Execution:
        """What the build for ``target`` executed; an error if it was not executed."""
        try:
            return self.machine[target]
        except KeyError:
            raise ValueError(f"this measurement has no execution of the {target} build") from None

    def results_of(self, model: str) -> tuple[int, ...]:
        """A model's dynamic results; an error if the artifact was built without the model."""
        try:
            return self.results[model]
        except KeyError:
            raise ValueError(
                f"this artifact was built without the dynamic phase of cost model {model!r}; "
                "build it with the model active"
            ) from None


#: ``REASON (FILE:LINE[:COLUMN])``: a target's compiler error ends with where it points.
_WHERE = re.compile(r"^(?P<reason>.*) \((?P<file>[^()]+?):(?P<line>\d+)(?::\d+)?\)$", re.DOTALL)


@dataclass(frozen=True)
class Unavailability:
    """Why a model could not measure an artifact, and the code the reason points at."""

    model: str
    reason: str
    #: ``file:line`` in a source file, when the reason names one.
    where: str | None = None
    #: The function around ``where`` in the artifact's block table (a symbol), when found.
    function: str | None = None
    #: The model itself failed (it raised, or returned something else than costs): a test fails.
    failed: bool = False


def unavailability(counts: BlockCounts, model: str) -> Unavailability | None:
    """Why ``model`` could not measure ``counts`` (None: it could), with the file, line and
    function of the code its reason points at, where it names one."""
    text = counts.unavailable.get(model)
    if text is None:
        return None
    found = _WHERE.match(text)
    if found is None or found.group("file").startswith("<"):  # ``<inline asm>``: not a source file
        return Unavailability(model, text)
    file, line = found.group("file"), int(found.group("line"))
    return Unavailability(model, found.group("reason"), f"{file}:{line}", enclosing_function(counts.table, file, line))


def enclosing_function(table: BlockTable, file: str, line: int) -> str | None:
    """The function of ``table`` whose code in ``file`` spans ``line``: one with code on that line
    if any, else the one whose lines enclose it most narrowly (None: no function does)."""
    wanted = os.path.normpath(file)

    def same(path: str) -> bool:
        """One file, named absolutely on one side and relative to the project on the other."""
        path = os.path.normpath(path)
        if path == wanted:
            return True
        if not os.path.isabs(wanted) and path.endswith(os.sep + wanted):
            return True
        return not os.path.isabs(path) and wanted.endswith(os.sep + path)

    spans: dict[str, tuple[int, int]] = {}
    on_line: set[str] = set()
    for block in table.blocks:
        for path, n, _ in block.lines:
            if n and same(path):
                low, high = spans.get(block.function, (n, n))
                spans[block.function] = (min(low, n), max(high, n))
                if n == line:
                    on_line.add(block.function)
    candidates = [(high - low, name) for name, (low, high) in spans.items() if low <= line <= high]
    if on_line:
        candidates = [(spans[name][1] - spans[name][0], name) for name in on_line]
    return min(candidates)[1] if candidates else None


K = TypeVar("K")


def _merged(a: Mapping[K, int], b: Mapping[K, int]) -> dict[K, int]:
    out = dict(a)
    for key, value in b.items():
        out[key] = out.get(key, 0) + value
    return out


@dataclass(frozen=True)
class Cost:
    """One metric's value for a measurement, with its breakdowns."""

    metric: str
    total: int
    #: Function name -> exclusive cost (the cost of the function's own blocks).
    functions: dict[str, int] = field(default_factory=dict)
    #: Region path ("parse", "parse/tokens") -> inclusive cost between its markers.
    regions: dict[str, int] = field(default_factory=dict)
    #: Function name -> {"file:line": cost} (models whose cost is per instruction).
    lines: dict[str, dict[str, int]] = field(default_factory=dict)
    #: In builds made for profiles: function -> inclusive cost, function -> calls, and
    #: call path ("main;parse;next_token", outermost first) -> exclusive cost.
    inclusive: dict[str, int] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)
    stacks: dict[str, int] = field(default_factory=dict)
    #: Calls of functions outside the build (the host's libraries: printf, write), whose own
    #: work is not in the cost: function -> calls (the instruction count's only).
    outside_calls: dict[str, int] = field(default_factory=dict)
    #: Calls of the build's own functions by where they were made (the instruction count's only):
    #: callee -> {(calling function, "file:line"): calls}.
    call_sites: dict[str, dict[tuple[str, str], int]] = field(default_factory=dict)

    def __add__(self, other: Cost) -> Cost:
        if other.metric != self.metric:
            raise ValueError(f"cannot add {other.metric} to {self.metric}")
        lines = {f: dict(v) for f, v in self.lines.items()}
        for function, per_line in other.lines.items():
            lines[function] = _merged(lines.get(function, {}), per_line)
        sites = {f: dict(v) for f, v in self.call_sites.items()}
        for callee, per_site in other.call_sites.items():
            sites[callee] = _merged(sites.get(callee, {}), per_site)
        return Cost(
            self.metric,
            self.total + other.total,
            _merged(self.functions, other.functions),
            _merged(self.regions, other.regions),
            lines,
            _merged(self.inclusive, other.inclusive),
            _merged(self.calls, other.calls),
            _merged(self.stacks, other.stacks),
            _merged(self.outside_calls, other.outside_calls),
            sites,
        )

    def top_lines(self, n: int | None = 5, function: str | None = None) -> list[tuple[str, str, int]]:
        """The ``n`` costliest source lines (None: all), of one function or of all: (function,
        "file:line", cost)."""
        rows = [
            (f, where, value)
            for f, per_line in self.lines.items()
            if function is None or f == function
            for where, value in per_line.items()
        ]
        return sorted(rows, key=lambda r: (-r[2], r[0], r[1]))[:n]

    def top_functions(self, n: int = 5) -> list[tuple[str, int]]:
        """The ``n`` costliest functions, ties broken by name."""
        return sorted(self.functions.items(), key=lambda kv: (-kv[1], kv[0]))[:n]


def line_label(where: str) -> str:
    """``file:line`` for people: line 0 (code the compiler made up, with no source line) says so, and
    so does code built without line tables (the counted C++ library's own sources). A header of
    the ziglang wheel is named by its library (``libc++/__algorithm/sort.h:600``), not by where
    the wheel is installed."""
    file, _, line = where.rpartition(":")
    file = _toolchain_header(file)
    if line != "0":
        return f"{file}:{line}" if file else where
    return f"{file} (no source line)" if file else "(no source line)"


#: The ziglang wheel's header directories (under its ``lib``) and the names reports give them.
_WHEEL_HEADERS = (("libcxx", "include", "libc++"), ("libcxxabi", "include", "libc++abi"))


def _toolchain_header(file: str) -> str:
    """``libc++/__algorithm/sort.h`` for ``.../site-packages/ziglang/lib/libcxx/include/__algorithm/sort.h``;
    ``zig/libc/include/...`` for the wheel's other headers; any other file as it is."""
    parts = Path(file).parts
    for i, (a, b) in enumerate(itertools.pairwise(parts)):
        if a == "ziglang" and b == "lib":
            rest = parts[i + 2 :]
            for folder, include, name in _WHEEL_HEADERS:
                if rest[:2] == (folder, include) and len(rest) > 2:
                    return "/".join((name, *rest[2:]))
            return "/".join(("zig", *rest))
    return file


#: Where the system's headers are: their lines are library code wherever a build includes them.
_SYSTEM_HEADERS = (Path("/usr/include"), Path("/usr/local/include"), Path("/usr/lib"))


def library_line(function: str, where: str, root: Path) -> bool:
    """Whether a costly ``file:line`` of ``function`` is library code, which a user does not
    change: the counted C library's, code without a source line (the counted C++ library is built
    without line tables), or a header of the toolchain (the ziglang wheel's libc and libc++) or
    of the system. A relative file is one under ``root``, the build's directory."""
    file, _, line = where.rpartition(":")
    if function.startswith(LIBC_PREFIX) or line in ("", "0") or not file:
        return True
    return _library_file(file, root)


@functools.cache
def _library_file(file: str, root: Path) -> bool:
    parts = Path(file).parts
    if any(a == "ziglang" and b == "lib" for a, b in itertools.pairwise(parts)):
        return True  # the wheel's headers, as a cached build made in another environment names them
    path = (root / file).resolve()
    return any(path.is_relative_to(directory) for directory in _library_headers())


@functools.cache
def _library_headers() -> tuple[Path, ...]:
    """The toolchain's headers, Python's (a C extension's ``Py_INCREF``) and the system's."""
    python = {Path(sysconfig.get_paths()[key]).resolve() for key in ("include", "platinclude")}
    try:
        toolchain = [zig_lib()]
    except ImportError:  # a user's clang, without the wheel
        toolchain = []
    return (*toolchain, *sorted(python), *_SYSTEM_HEADERS)


def line_costs(counts: BlockCounts) -> dict[str, dict[str, int]]:
    """Executed IR instructions per function and source line (from the blocks' debug locations)."""
    out: dict[str, dict[str, int]] = {}
    for block, count in zip(counts.table.blocks, counts.counts, strict=True):
        if not count:
            continue
        per_line = out.setdefault(block.function, {})
        for file, line, n in block.lines:
            where = f"{file}:{line}"
            per_line[where] = per_line.get(where, 0) + n * count
    return out


def outside_calls(counts: BlockCounts) -> dict[str, int]:
    """Calls of functions outside the build (uncounted library work): function -> calls."""
    out: dict[str, int] = {}
    for block, count in zip(counts.table.blocks, counts.counts, strict=True):
        if count:
            for name, sites in block.outside:
                out[name] = out.get(name, 0) + sites * count
    return out


def call_sites(counts: BlockCounts) -> dict[str, dict[tuple[str, str], int]]:
    """Executed calls of the build's own functions: callee -> {(caller, "file:line"): calls}."""
    out: dict[str, dict[tuple[str, str], int]] = {}
    for block, count in zip(counts.table.blocks, counts.counts, strict=True):
        if count:
            for callee, file, line, sites in block.calls_to:
                per_site = out.setdefault(callee, {})
                key = (block.function, f"{file}:{line}")
                per_site[key] = per_site.get(key, 0) + sites * count
    return out


def weighted_cost(metric: str, counts: BlockCounts, block_costs: Sequence[int]) -> Cost:
    """Sum of count x per-block cost, overall and per function."""
    functions: dict[str, int] = {}
    total = 0
    for block, count, cost in zip(counts.table.blocks, counts.counts, block_costs, strict=True):
        if count and cost:
            value = count * cost
            total += value
            functions[block.function] = functions.get(block.function, 0) + value
    return Cost(metric, total, functions)


def split_results(models: Mapping[str, Any], raw: Sequence[int]) -> tuple[dict[str, Any], dict[str, tuple[int, ...]]]:
    """Each model's static document and its slice of the dynamic phases' results."""
    analyses = {name: doc.get("analysis", {}) for name, doc in models.items()}
    results = {}
    for name, doc in models.items():
        if "results" in doc:
            offset, count = doc["results"]
            results[name] = tuple(raw[offset : offset + count])
    return analyses, results


def warn_if_interleaved(name: str, threads: int, counts: BlockCounts, *, stacklevel: int = 2) -> None:
    """Warn when more than one thread ran instrumented code and ``counts`` hold results that depend
    on how the threads interleaved: the cost models' dynamic phases and call paths."""
    shared = sorted(counts.results)
    if counts.profile is not None and counts.profile.functions:
        shared.append("call paths")
    if threads > 1 and shared:
        warnings.warn(
            f"{name}: {threads} threads ran instrumented code; {', '.join(shared)} "
            f"depend on how the threads interleaved (IR instruction counts do not)",
            RuntimeWarning,
            stacklevel=stacklevel + 1,
        )
