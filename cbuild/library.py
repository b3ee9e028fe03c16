"""Instrumented shared libraries loaded in-process, their functions typed from the IR."""

from __future__ import annotations

import ctypes
import itertools
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cbuild.build import Artifact
from cbuild.costs import BlockCounts
from cbuild.errors import CBuildError, SignatureError
from cbuild.execute import split_results
from cbuild.profile import clock_metrics, read_profile

_INTS: dict[tuple[str, str], type[Any]] = {
    ("i1", ""): ctypes.c_bool,
    ("i1", "z"): ctypes.c_bool,
    ("i8", ""): ctypes.c_int8,
    ("i8", "s"): ctypes.c_int8,
    ("i8", "z"): ctypes.c_uint8,
    ("i16", ""): ctypes.c_int16,
    ("i16", "s"): ctypes.c_int16,
    ("i16", "z"): ctypes.c_uint16,
    ("i32", ""): ctypes.c_int32,
    ("i32", "s"): ctypes.c_int32,
    ("i32", "z"): ctypes.c_uint32,
    ("i64", ""): ctypes.c_int64,
    ("i64", "s"): ctypes.c_int64,
    ("i64", "z"): ctypes.c_uint64,
}
_FLOATS: dict[str, type[Any]] = {"float": ctypes.c_float, "double": ctypes.c_double}
_instances = itertools.count()
_BYREF = type(ctypes.byref(ctypes.c_int()))


def _describe(value: object) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:40] + '...' if len(text) > 40 else text}"


def _int_converter(fn: str, index: int, ir_type: str) -> Callable[[Any], Any]:
    bits = 1 if ir_type == "i1" else int(ir_type[1:])
    low, high = -(1 << (bits - 1)), (1 << bits) - 1

    def convert(value: Any) -> Any:
        if isinstance(value, ctypes._SimpleCData) and not isinstance(value, (ctypes.c_float, ctypes.c_double)):
            value = value.value
        if not isinstance(value, int):
            raise SignatureError(f"{fn}() argument {index} ({ir_type}): expected int, got {_describe(value)}")
        if ir_type != "i1" and not low <= value <= high:
            raise SignatureError(f"{fn}() argument {index} ({ir_type}): {value} does not fit in {bits} bits")
        return value  # ctypes stores an unsigned value as its bit pattern

    return convert


def _float_converter(fn: str, index: int, ir_type: str) -> Callable[[Any], Any]:
    def convert(value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise SignatureError(f"{fn}() argument {index} ({ir_type}): expected float, got {_describe(value)}")
        return float(value)

    return convert


def _pointer_converter(fn: str, index: int) -> Callable[[Any], Any]:
    def convert(value: Any) -> Any:
        if value is None or isinstance(value, (ctypes.Array, ctypes._Pointer, ctypes.c_void_p, ctypes.c_char_p)):
            return value
        if isinstance(value, _BYREF):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return value  # an address, as pointer results are returned
        if isinstance(value, ctypes._SimpleCData | ctypes.Structure | ctypes.Union):
            return ctypes.byref(value)
        if isinstance(value, bytes):
            return ctypes.c_char_p(value)
        if isinstance(value, str):
            raise SignatureError(
                f"{fn}() argument {index} (ptr): got str {value[:40]!r}; pass bytes, e.g. text.encode()"
            )
        try:
            view = memoryview(value)
        except TypeError:
            raise SignatureError(
                f"{fn}() argument {index} (ptr): expected bytes, a writable buffer, a ctypes array, "
                f"pointer or byref(), an address (int), or None; got {_describe(value)}"
            ) from None
        if view.readonly:
            return ctypes.c_char_p(view.tobytes())
        return (ctypes.c_char * view.nbytes).from_buffer(value)

    return convert


class Function:
    """A C function of a library, called with checked arguments."""

    def __init__(self, name: str, raw: Any, signature: dict[str, Any]) -> None:
        self.name = name
        self.signature = signature
        self._raw = raw
        params = signature["params"]
        self._converters: list[Callable[[Any], Any]] = []
        argtypes: list[Any] = []
        for i, p in enumerate(params, start=1):
            t, ext = p["type"], p["ext"]
            if p["flags"]:
                self._unsupported = f"argument {i} is a struct passed by value"
                break
            if (t, ext) in _INTS:
                argtypes.append(_INTS[(t, ext)])
                self._converters.append(_int_converter(name, i, t))
            elif t in _FLOATS:
                argtypes.append(_FLOATS[t])
                self._converters.append(_float_converter(name, i, t))
            elif t == "ptr":
                argtypes.append(ctypes.c_void_p)
                self._converters.append(_pointer_converter(name, i))
            else:
                self._unsupported = f"argument {i} has IR type {t}"
                break
        else:
            self._unsupported = ""
        ret, ret_ext = signature["ret"], signature["ret_ext"]
        if ret == "void":
            raw.restype = None
        elif (ret, ret_ext) in _INTS:
            raw.restype = _INTS[(ret, ret_ext)]
        elif ret in _FLOATS:
            raw.restype = _FLOATS[ret]
        elif ret == "ptr":
            raw.restype = ctypes.c_void_p
        elif not self._unsupported:
            self._unsupported = f"its return type is IR {ret}"
        if not self._unsupported:
            raw.argtypes = argtypes

    def __call__(self, *args: Any) -> Any:
        if self._unsupported:
            raise SignatureError(
                f"{self.name}() cannot be called through ctypes: {self._unsupported}; "
                f"wrap it in a C function taking integers, floats and pointers"
            )
        params = self.signature["params"]
        if self.signature["vararg"]:
            raise SignatureError(f"{self.name}() is variadic; wrap it in a C function with fixed arguments")
        if len(args) != len(params):
            raise SignatureError(f"{self.name}() takes {len(params)} arguments, {len(args)} given")
        return self._raw(*(convert(a) for convert, a in zip(self._converters, args, strict=True)))

    def __repr__(self) -> str:
        params = ", ".join(p["type"] for p in self.signature["params"])
        return f"<C function {self.signature['ret']} {self.name}({params})>"


class Library:
    """A loaded instrumented (or plain) shared library."""

    def __init__(self, artifact: Artifact, *, copy_dir: Path | None = None) -> None:
        if artifact.kind != "library":
            raise CBuildError(f"{artifact.path} is a {artifact.kind}, not a library")
        self.artifact = artifact
        self.table = artifact.table()
        self._signatures: dict[str, dict[str, Any]] = artifact.metadata()["signatures"]
        path = artifact.path
        if copy_dir is not None:
            # A fresh copy gives each load its own static state and zeroed counters
            # (the dynamic loader would otherwise hand back the already-loaded image).
            copy_dir.mkdir(parents=True, exist_ok=True)
            path = copy_dir / f"{artifact.path.stem}-{os.getpid()}-{next(_instances)}.so"
            shutil.copyfile(artifact.path, path)
        self.path = path
        self._dll = ctypes.CDLL(str(path), mode=getattr(os, "RTLD_LOCAL", 0) | getattr(os, "RTLD_NOW", 2))
        get = self._dll.instrbudget_counters
        get.restype = ctypes.c_void_p
        address = get()
        n = self.table.counters
        self._counters = (ctypes.c_uint64 * max(n, 1)).from_address(address)
        self._n = n
        self._models = artifact.models()
        results = self._dll.instrbudget_results
        results.restype = ctypes.c_void_p
        nresults = self._dll.instrbudget_nresults
        nresults.restype = ctypes.c_uint64
        self._nresults = int(nresults())
        self._results = (ctypes.c_uint64 * max(self._nresults, 1)).from_address(results())
        self._dll.instrbudget_models_reset.argtypes = [ctypes.c_uint32]
        self._dll.instrbudget_models_reset(1)
        self._dll.instrbudget_profile_write.argtypes = [ctypes.c_char_p]
        self._dll.instrbudget_profile_write.restype = ctypes.c_int
        self._functions: dict[str, Function] = {}

    @property
    def function_names(self) -> list[str]:
        """Exported functions callable from Python."""
        return sorted(self._signatures)

    def _raw(self) -> tuple[int, ...]:
        return tuple(memoryview(self._counters).cast("B").cast("Q")[: self._n])

    def snapshot(self) -> tuple[int, ...]:
        """The counters as they are now; the cost models' dynamic phases and regions start afresh."""
        self._dll.instrbudget_models_reset(1)
        self._dll.instrbudget_profile_reset()
        return self._raw()

    def counts(self, since: tuple[int, ...] | None = None) -> BlockCounts:
        """Block counts since load, or since a :meth:`snapshot` (dynamic results likewise)."""
        raw = self._raw()
        if since is not None:
            raw = tuple(a - b for a, b in zip(raw, since, strict=True))
        self._dll.instrbudget_models_finish()
        analyses, results = split_results(self._models, list(self._results)[: self._nresults])
        with tempfile.TemporaryDirectory(prefix="instrbudget-profile-") as tmp:
            path = Path(tmp) / "profile"
            if self._dll.instrbudget_profile_write(str(path).encode()) != 0:
                raise CBuildError(f"{self.artifact.name}: the runtime could not write its region profile")
            profile = read_profile(path, clock_metrics(self._models), self.table.functions)
        if profile is not None and not (profile.regions or profile.problems or profile.functions):
            profile = None
        return BlockCounts(self.table, self.table.block_counts(raw), analyses, results, profile)

    def __getattr__(self, name: str) -> Function:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._functions[name]
        except KeyError:
            pass
        if name not in self._signatures:
            raise AttributeError(
                f"{self.artifact.path.name} exports no function {name!r}; it has: "
                f"{', '.join(self.function_names) or 'none'}"
            )
        fn = Function(name, getattr(self._dll, name), self._signatures[name])
        self._functions[name] = fn
        return fn
