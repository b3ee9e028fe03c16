"""Readable C++ function names for reports (baselines keep the stable mangled symbol)."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
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


@functools.cache
def demangle(symbol: str) -> str:
    """``_Z1fi`` -> ``f(int)``; C names and unknown forms come back unchanged."""
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
