"""Readable C++ function names for reports (baselines keep the stable mangled symbol)."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from cbuild.errors import CBuildError

if TYPE_CHECKING:
    from cbuild.build.cache import Cache
    from cbuild.build.toolchain import Toolchain


@functools.cache
def _cxa_demangle() -> Any | None:
    """The host C++ library's demangler."""
    for name in ("stdc++", "c++abi", "c++"):
        path = ctypes.util.find_library(name)
        if path is None:
            continue
        try:
            return _typed(getattr(ctypes.CDLL(path), "__cxa_demangle"))
        except (OSError, AttributeError):
            continue
    return None


def _typed(fn: Any) -> Any:
    fn.restype = ctypes.c_void_p
    fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
    return fn


#: What libc++abi's demangler needs of the C++ runtime, built without one.
_RUNTIME_SHIM = """\
#include <stdlib.h>
void _ZdlPvm(void *p, unsigned long size) { (void)size; free(p); } /* operator delete(void *, size_t) */
void _ZSt9terminatev(void) { abort(); } /* std::terminate() */
"""

#: Where :func:`_toolchain_demangler` builds, once a Builder has said so (else the default cache).
_builds: list[tuple[Toolchain, Cache]] = []


def build_with(toolchain: Toolchain, cache: Cache) -> None:
    """Build the toolchain's demangler, if it is ever needed, with ``toolchain`` into ``cache``."""
    if not _builds:
        _builds.append((toolchain, cache))


@functools.cache
def _toolchain_demangler() -> Any | None:
    """The demangler of the libc++abi the ziglang wheel ships, as new as the clang that mangled the
    names (the host's may not read them: GCC 12's cannot read C++20's constrained templates,
    ``_Z5twiceITkNSt3__18integralEiET_S1_``); built once per toolchain (a few seconds), or None."""
    from cbuild.build.cache import Cache, default_cache_dir
    from cbuild.build.compile import compile_own
    from cbuild.build.toolchain import find_toolchain, zig_lib

    try:
        toolchain, cache = _builds[0] if _builds else (find_toolchain(), Cache(default_cache_dir()))
        abi = zig_lib() / "libcxxabi"
        if not toolchain.is_zig or not (abi / "src" / "cxa_demangle.cpp").is_file():
            return None
        flags = ["-c", "-fPIC", "-O2", "-fno-exceptions", "-fno-rtti", "-D_LIBCPP_BUILDING_LIBRARY"]
        flags += ["-D_LIBCPP_HAS_NO_VENDOR_AVAILABILITY_ANNOTATIONS", f"-I{abi / 'include'}", f"-I{abi / 'src'}"]
        code = f'#include "{abi / "src" / "cxa_demangle.cpp"}"\n'
        what = "the toolchain's C++ demangler"
        obj = compile_own(toolchain, cache, code, what=what, stem="demangle", flags=flags, suffix=".o", cxx=True)
        flags = ["-shared", "-fPIC", "-O2", str(obj)]
        library = compile_own(toolchain, cache, _RUNTIME_SHIM, what=what, stem="demangle", flags=flags, suffix=".so")
        return _typed(getattr(ctypes.CDLL(str(library)), "__cxa_demangle"))
    except (CBuildError, OSError, AttributeError):  # the host's demangler stays the only one
        return None


def _demangled(fn: Any, symbol: str) -> str | None:
    status = ctypes.c_int()
    address = fn(symbol.encode(), None, None, ctypes.byref(status))
    if status.value != 0 or not address:
        return None
    try:
        return ctypes.string_at(address).decode(errors="replace")
    finally:
        ctypes.CDLL(None).free(ctypes.c_void_p(address))


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
    # The host's first, whose forms (``{lambda()#1}``) the reports are written for; the toolchain's
    # for the names it cannot read.
    host = _cxa_demangle()
    name = _demangled(host, symbol) if host is not None else None
    if name is None:
        own = _toolchain_demangler()
        name = _demangled(own, symbol) if own is not None else None
    return name or symbol


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
#: Brackets that are not groups: operators' own characters, and the anonymous namespace.
_NOT_A_GROUP = re.compile(r"operator(?:<=>|<<=|>>=|<<|>>|<=|>=|->\*|->|<|>|\(\))|\(anonymous namespace\)")
#: What may follow a function's parameter list.
_QUALIFIERS = re.compile(r"(?:\s*(?:const|volatile|&&|&|noexcept))*")
_TRAILING_QUALIFIERS = re.compile(_QUALIFIERS.pattern + "$")


def readable(symbol: str, limit: int = READABLE) -> str:
    """:func:`demangle`'s name, short enough to read in a log. Longer than ``limit``, it loses libc++'s
    inline namespace (``std::__1::`` -> ``std::``) and ABI tags, then its template arguments
    (``<…>``), then its parameters (``(…)``), then those of the functions it lies in (a lambda's),
    as far as it takes; what names the function (its
    scopes and name, and the file of a static function) stays. Shorter names come back unchanged.
    Different functions may read alike: :func:`readable_names` keeps a table's rows apart."""
    return readable_names([symbol], limit)[symbol]


def readable_names(symbols: Iterable[str], limit: int = READABLE) -> dict[str, str]:
    """:func:`readable` names of a table's ``symbols``, shortened only as far as they stay
    distinct (``std::__sort<…>(…)`` of two element types keeps its template arguments); names
    alike even in full are told apart by their symbol, ``name [symbol]``."""
    levels = {symbol: _levels(symbol) for symbol in dict.fromkeys(symbols)}
    chosen = {
        symbol: next((i for i, name in enumerate(names) if len(name) <= limit), len(names) - 1)
        for symbol, names in levels.items()
    }
    while True:
        holders: dict[str, list[str]] = {}
        for symbol, level in chosen.items():
            holders.setdefault(levels[symbol][level], []).append(symbol)
        lowered = False
        for alike in holders.values():
            if len(alike) > 1:
                for symbol in alike:
                    if chosen[symbol] > 0:
                        chosen[symbol] -= 1
                        lowered = True
        if not lowered:
            break
    names = {symbol: levels[symbol][level] for symbol, level in chosen.items()}
    seen: dict[str, int] = {}
    for name in names.values():
        seen[name] = seen.get(name, 0) + 1
    return {symbol: f"{name} [{symbol}]" if seen[name] > 1 else name for symbol, name in names.items()}


def _levels(symbol: str) -> list[str]:
    """The full demangled name, then each shortening :func:`readable` may apply, in order."""
    if symbol.endswith(")") and " (" in symbol:  # ``f (a.c)``: the file stays whole
        base, unit = symbol.split(" (", 1)
        return [f"{name} ({unit}" for name in _levels(base)]
    name = demangle(symbol)
    levels = [name]
    stripped = _ABI_TAG.sub("", name.replace("std::__1::", "std::"))
    brief = _collapse(_collapse(stripped, "<", ">"), "(", ")", params=True)
    for shorter in (
        stripped,
        _collapse(stripped, "<", ">"),
        brief,
        _collapse(brief, "(", ")"),  # the parameters of the scopes too: a lambda's in its function
    ):
        if shorter != levels[-1]:
            levels.append(shorter)
    return levels


def _collapse(name: str, opening: str, closing: str, *, params: bool = False) -> str:
    """``name`` with each outermost ``opening``…``closing`` group shown as ``opening…closing``
    (with ``params``, only a last group that only qualifiers follow: the parameters)."""
    spans: list[tuple[int, int]] = []
    depth, start, i = 0, 0, 0
    while i < len(name):
        match = _NOT_A_GROUP.match(name, i) if depth == 0 else None
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
    if params:
        spans = [span for span in spans[-1:] if _QUALIFIERS.fullmatch(name, span[1] + 1)]
    for start, end in reversed(spans):
        name = f"{name[: start + 1]}…{name[end:]}"
    return name


def unqualified(symbol: str) -> str:
    """A C++ function's own name, without scopes, template arguments, parameters or result type:
    ``plain_cpp`` for ``_Z9plain_cppi`` and ``ns::in_ns<std::pair<int, int>>(int)`` alike; C
    names come back unchanged."""
    name = _collapse(_collapse(demangle(symbol), "<", ">"), "(", ")", params=True)
    name = _TRAILING_QUALIFIERS.sub("", name)
    head = name[: name.rfind("(")] if name.endswith(")") else name
    head = re.sub(r"<…>$", "", head.rstrip())
    own = head.rsplit("::", 1)[-1]
    return own if own.startswith("operator") else own.rsplit(" ", 1)[-1]
