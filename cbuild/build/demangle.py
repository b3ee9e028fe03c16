"""Readable C++ function names for reports (baselines keep the stable mangled symbol)."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import re
from collections.abc import Mapping
from typing import Any


@functools.cache
def _cxa_demangle() -> Any | None:
    for name in ("stdc++", "c++abi", "c++"):
        path = ctypes.util.find_library(name)
        if path is None:
            continue
        try:
            fn = getattr(ctypes.CDLL(path), "__cxa_demangle")
        except (OSError, AttributeError):
            continue
        fn.restype = ctypes.c_void_p
        fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
        return fn
    return None


#: Functions of the counted C library (cbuild.build.libc) carry this prefix in builds.
LIBC_PREFIX = "__instrbudget_libc_"
#: Reports show them as ``strlen [libc]``.
LIBC_MARK = " [libc]"


@functools.cache
def demangle(symbol: str) -> str:
    """``_Z1fi`` -> ``f(int)``, ``__instrbudget_libc_strlen`` -> ``strlen [libc]``; other C names
    and unknown forms come back unchanged."""
    if symbol.startswith(LIBC_PREFIX):
        return symbol[len(LIBC_PREFIX) :] + LIBC_MARK
    if symbol.endswith(")") and " (" in symbol:  # a static function named apart by its file: ``f (a.c)``
        base, unit = symbol.split(" (", 1)
        return f"{demangle(base)} ({unit}"
    if not symbol.startswith("_Z"):
        return symbol
    fn = _cxa_demangle()
    if fn is None:
        return symbol
    status = ctypes.c_int()
    address = fn(symbol.encode(), None, None, ctypes.byref(status))
    if status.value != 0 or not address:
        return symbol
    try:
        return ctypes.string_at(address).decode(errors="replace")
    finally:
        ctypes.CDLL(None).free(ctypes.c_void_p(address))


def demangled_keys(*tables: Mapping[str, int]) -> tuple[list[dict[str, int]], dict[str, str]]:
    """Tables keyed by symbol, re-keyed by demangled name, and the symbol of each name that differs.

    All tables get the same key for a symbol. Two symbols that demangle alike (rare: internal
    functions renamed by the linker) keep apart: the second is keyed ``name [symbol]``.
    """
    names: dict[str, str] = {}  # symbol -> key
    taken: set[str] = set()
    for symbol in sorted({s for table in tables for s in table}):
        key = demangle(symbol)
        if key in taken:
            key = f"{key} [{symbol}]"
        names[symbol] = key
        taken.add(key)
    symbols = {key: symbol for symbol, key in names.items() if key != symbol}
    return [{names[s]: v for s, v in sorted(table.items(), key=lambda kv: names[kv[0]])} for table in tables], symbols


#: Longest function name a failure message or report row shows whole; longer C++ names are shortened.
READABLE = 60

_ABI_TAG = re.compile(r"\[abi:[^\]]*\]")
_OPERATOR = re.compile(r"operator(?:<=>|<<=|>>=|<<|>>|<=|>=|->\*|->|<|>|\(\))")


def readable(symbol: str, limit: int = READABLE) -> str:
    """:func:`demangle`'s name, short enough to read in a log. Longer than ``limit``, it loses libc++'s
    inline namespace (``std::__1::`` -> ``std::``) and ABI tags, then its template arguments
    (``<…>``), then its parameters (``(…)``), as far as it takes; what names the function (its
    scopes and name) stays. Shorter names come back unchanged."""
    name = demangle(symbol)
    if len(name) <= limit:
        return name
    name = _ABI_TAG.sub("", name.replace("std::__1::", "std::"))
    if len(name) > limit:
        name = _collapse(name, "<", ">")
    if len(name) > limit:
        name = _collapse(name, "(", ")", last_only=True)
    return name


def _collapse(name: str, opening: str, closing: str, *, last_only: bool = False) -> str:
    """``name`` with each outermost ``opening``…``closing`` group (only the last one with
    ``last_only``: the parameters) shown as ``opening…closing``; operators' own characters kept."""
    spans: list[tuple[int, int]] = []
    depth, start, i = 0, 0, 0
    while i < len(name):
        match = _OPERATOR.match(name, i) if depth == 0 else None
        if match:
            i = match.end()
            continue
        char = name[i]
        if char == opening:
            if depth == 0:
                start = i
            depth += 1
        elif char == closing and depth > 0:
            depth -= 1
            if depth == 0 and i > start + 1:
                spans.append((start, i))
        i += 1
    if last_only:
        spans = spans[-1:]
    for start, end in reversed(spans):
        name = f"{name[: start + 1]}…{name[end:]}"
    return name
