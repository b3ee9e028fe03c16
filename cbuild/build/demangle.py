"""Readable C++ function names for reports (baselines keep the stable mangled symbol)."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
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
