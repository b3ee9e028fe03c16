"""Instrumented shared libraries, run in a library host process and typed from the sources' debug info.

A :class:`Library` is a proxy: each call sends its arguments to the host process
(:mod:`cbuild.run.hosts`), which runs the C function and sends back the result, the
contents of the writable buffers it was given, and (on request) the counters.
"""

from __future__ import annotations

import ctypes
import enum
import itertools
import math
import re
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from elftools.common.exceptions import ELFError

from cbuild.build.builder import Artifact
from cbuild.build.demangle import demangle, unqualified
from cbuild.build.places import symbols
from cbuild.errors import (
    CBuildError,
    LibraryCrashed,
    ReadOnlyArgumentWarning,
    SignatureError,
    UnknownFunction,
    did_you_mean,
)
from cbuild.models.costs import BlockCounts, split_results, warn_if_interleaved
from cbuild.models.profile import clock_metrics, clock_numbers, read_profile, with_machine_regions
from cbuild.riscv.executor import Execution, ExecutorError, slot_results, slot_runtimes, slot_unavailable
from cbuild.riscv.guest import Arg, CutoffReached, Guest, Unreplayable, fits, word_bits
from cbuild.riscv.translated import checking_translation, translation_of
from cbuild.run.ctypes_map import TypeMap, UnsupportedType, without_qualifiers
from cbuild.run.hosts import HostProcess, default_pool
from cbuild.run.program import COUNTS_UNKNOWN, CountsDisagree, check_total, read_raw_counts
from cbuild.run.stops import CodeStopped, check_timeout, clock_limits, machine_stop, read_stop, requested

_ids = itertools.count(1)
_BYREF = type(ctypes.byref(ctypes.c_int()))
#: ctypes types whose value the test process would dereference: never filled in by the library's process.
_DEREFERENCING = (ctypes.c_char_p, ctypes.c_wchar_p, ctypes._Pointer)
#: ctypes objects, whose own memory a ctypes pointer may point into.
_CDATA = (ctypes.Array, ctypes.Structure, ctypes.Union, ctypes._SimpleCData, ctypes._Pointer)
#: What a pointer parameter takes instead of an address.
_INSTEAD = (
    "pass the buffer itself (bytes, bytearray, a ctypes array or structure), a pointer a function of the "
    "library returned, or None for NULL"
)
Wire = tuple[Any, ...]


def _describe(value: object) -> str:
    """A value as a message names it: its type and what it holds, without a repr that names only
    its type and address (``<c_double_Array_2 object at 0x...>``)."""
    if isinstance(value, ctypes.Array):
        return f"a ctypes array of {len(value)} {value._type_.__name__}"
    if isinstance(value, ctypes._Pointer):
        return f"a ctypes pointer to {value._type_.__name__}"
    if isinstance(value, _BYREF):
        return f"byref() of {_describe(value._obj)}"  # type: ignore[attr-defined]
    if isinstance(value, ctypes._SimpleCData):
        return repr(value)  # c_double(1.0)
    text = repr(value)
    if text.startswith("<") and " at 0x" in text:
        return type(value).__name__
    return f"{type(value).__name__} {text[:40] + '...' if len(text) > 40 else text}"


def _defining_unit(binary: Path, name: str) -> str | None:
    """The source file of ``binary`` whose debug information has a function ``name``, if any."""
    try:
        return symbols(binary, binary.stat().st_mtime_ns).defining_unit(name)
    except (OSError, ELFError):
        return None


class Pointer:
    """An address in the library's process, as a function returned it.

    Pass it back to later calls of the same library. Its memory lives in the library's
    process: read it with :meth:`read` or :meth:`string` (``bytes(p)`` for a ``char *``),
    not with ``ctypes.string_at``.
    """

    __slots__ = ("_host", "address", "c_type")

    def __init__(self, host: HostProcess, address: int, c_type: str) -> None:
        self._host = host
        self.address = address
        #: The C type the function declared, e.g. ``const char *``.
        self.c_type = c_type

    def read(self, size: int) -> bytes:
        """``size`` bytes at this address."""
        __tracebackhide__ = True
        data: bytes = self._host.request("read", self.address, size, what=f"reading {size} bytes at {self!r}")
        return data

    def string(self) -> bytes:
        """The NUL-terminated string at this address."""
        __tracebackhide__ = True
        data: bytes = self._host.request("string", self.address, what=f"reading the string at {self!r}")
        return data

    def __bytes__(self) -> bytes:
        return self.string()

    def __add__(self, offset: int) -> Pointer:
        return Pointer(self._host, self.address + offset, self.c_type)

    def __sub__(self, offset: int) -> Pointer:
        return Pointer(self._host, self.address - offset, self.c_type)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Pointer) and other._host is self._host and other.address == self.address

    def __hash__(self) -> int:
        return hash(self.address)

    def __repr__(self) -> str:
        return f"<{self.c_type} 0x{self.address:x} in the library's process>"

    @property
    def _as_parameter_(self) -> Any:
        raise TypeError(
            f"{self!r} points into the library's process; pass it to the library's own functions, "
            f"or read its memory with .read(size) / .string()"
        )


def _byref_offset(value: Any) -> int:
    """The offset ``ctypes.byref(obj, offset)`` was given: its address (which only its repr shows)
    less the object's."""
    shown = re.search(r"\(0x([0-9a-f]+)\)", repr(value))
    return int(shown.group(1), 16) - ctypes.addressof(value._obj) if shown else 0


def _ctypes_object(value: Any) -> Any:
    """The ctypes object a pointer argument refers to, or None."""
    if isinstance(value, _BYREF):
        return value._obj  # type: ignore[attr-defined]
    if isinstance(value, ctypes._Pointer):
        if not value:
            return None
        # ``contents`` is a new object over the same memory: what is stored through it (a char *'s
        # string) would live only as long as that object. The object the pointer keeps alive is
        # the caller's own.
        kept = getattr(value, "_objects", None)
        target = kept.get("1") if isinstance(kept, dict) else None
        if target is not None and ctypes.addressof(target) == ctypes.addressof(value.contents):
            return target
        return value.contents
    if isinstance(value, (ctypes.Array, ctypes.Structure, ctypes.Union, ctypes._SimpleCData)):
        return value
    return None


def _raw_address(value: Any) -> int | None:
    """The address a ctypes pointer carries when it refers to no memory of a ctypes object it keeps
    alive (``cast(address, POINTER(...))``): an address of the test's process, whose pointee would be
    copied from there. None for NULL and for the pointers ``ctypes.pointer(obj)``, ``POINTER(T)(obj)``
    and ``cast(obj, ...)`` make."""
    if not isinstance(value, ctypes._Pointer) or not value:
        return None
    address = ctypes.cast(value, ctypes.c_void_p).value
    assert address is not None
    # What the pointer keeps, and what the objects it was read from keep (``ptrs[1]`` of an array of
    # pointers, a structure's field: the pointee is in the array's or structure's keep).
    pending: list[Any] = []
    holder: Any = value
    while holder is not None:
        pending.append(getattr(holder, "_objects", None))
        holder = getattr(holder, "_b_base_", None)
    while pending:
        kept = pending.pop()
        if isinstance(kept, dict):
            pending += kept.values()
        elif isinstance(kept, _CDATA):
            start = ctypes.addressof(kept)
            if start <= address < start + max(ctypes.sizeof(kept), 1):
                return None
    return address


def _check_shareable(fn: str, index: int, cls: Any) -> None:
    """Reject ctypes types whose contents the library could turn into pointers the test dereferences."""
    if isinstance(cls, type) and issubclass(cls, ctypes.Array):
        _check_shareable(fn, index, cls._type_)
    elif isinstance(cls, type) and issubclass(cls, (ctypes.Structure, ctypes.Union)):
        for field in cls._fields_:
            if isinstance(field[1], type) and issubclass(field[1], _DEREFERENCING):
                raise SignatureError(
                    f"{fn}() argument {index}: {cls.__name__}.{field[0]} is a {field[1].__name__}, which "
                    f"would point into the library's process; declare it c_void_p"
                )
            _check_shareable(fn, index, field[1])


class Function:
    """A C function of a library, called in the library's process with checked arguments."""

    def __init__(self, library: Library, name: str, signature: dict[str, Any]) -> None:
        self.name = name
        self.signature = signature
        self._library = library
        types = library._type_map
        self._converters: list[Callable[[Any], Wire]] = []
        self._unsupported = ""
        for i, param in enumerate(signature["params"], start=1):
            desc = types.desc(param["type"])
            try:
                self._converters.append(self._converter(i, desc, param["type"]))
            except UnsupportedType as exc:
                self._unsupported = f"argument {i} ({desc['name']}): {exc}"
                break
        self._ret = types.desc(signature["ret"])
        if not self._unsupported:
            try:
                self._ret_type = types.ctype(signature["ret"])
            except UnsupportedType as exc:
                self._unsupported = f"its result ({self._ret['name']}): {exc}"

    def _param_type(self, n: int) -> str:
        """The C type of parameter ``n`` (from 0)."""
        return str(self._library._type_map.desc(self.signature["params"][n]["type"])["name"])

    @property
    def c_declaration(self) -> str:
        """The function as C declares it."""
        return str(self.signature.get("c") or self.name)

    def _converter(self, index: int, desc: dict[str, Any], tid: str) -> Callable[[Any], Wire]:
        fn, kind, ctype_name = self.name, desc["kind"], desc["name"]
        where = f"{fn}() argument {index} ({ctype_name})"
        if kind == "unsupported" or kind == "opaque":
            raise UnsupportedType(desc.get("why") or "it has no ctypes equivalent")
        if kind in ("int", "enum", "bool"):
            bits = 8 * desc["size"]
            signed = desc.get("signed", True) and kind != "bool"
            low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
            if kind == "bool":
                low, high = 0, 1

            def integer(value: Any) -> Wire:
                if isinstance(value, ctypes._SimpleCData) and isinstance(value.value, int):
                    value = value.value
                if not isinstance(value, int):
                    raise SignatureError(f"{where}: expected int, got {_describe(value)}")
                if not low <= value <= high:
                    raise SignatureError(f"{where}: {value} is out of range [{low}, {high}]")
                return ("v", int(value))

            return integer
        if kind == "float":

            def floating(value: Any) -> Wire:
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    raise SignatureError(f"{where}: expected float, got {_describe(value)}")
                return ("v", float(value))

            return floating
        if kind in ("struct", "union"):
            cls = self._library._type_map.ctype(tid)
            size = ctypes.sizeof(cls)

            fields = [name for name, *_ in cls._fields_]

            def record(value: Any) -> Wire:
                if isinstance(value, (dict, tuple)):
                    _check_fields(where, ctype_name, kind, fields, value)
                    try:
                        value = cls(**value) if isinstance(value, dict) else cls(*value)
                    except (TypeError, AttributeError, ValueError) as exc:
                        raise SignatureError(f"{where}: {ctype_name}: {exc}") from None
                if not isinstance(value, (ctypes.Structure, ctypes.Union)) or ctypes.sizeof(value) != size:
                    raise SignatureError(
                        f"{where}: expected {ctype_name} (lib.c_type({cls.__name__!r}), a dict or tuple of its "
                        f"fields), got {_describe(value)}"
                    )
                _check_shareable(fn, index, type(value))
                return ("s", bytes(value))

            return record
        if kind == "pointer":
            to = self._library._type_map.desc(desc.get("to"))
            const = str(to.get("name", "")).startswith("const ")
            sized = to.get("kind") in ("int", "enum", "float", "pointer", "struct", "union")
            item = (to["name"], int(to["size"])) if sized and isinstance(to.get("size"), int) else None
            return self._pointer_converter(index, where, const, item)
        raise UnsupportedType(f"kind {kind}")

    def _pointer_converter(
        self, index: int, where: str, const: bool, item: tuple[str, int] | None
    ) -> Callable[[Any], Wire]:
        """``item``: the pointee's name and size, where it has one: a typed array (``array``,
        a ctypes array, a memoryview with a format) must hold items of that size (bytes and
        byte buffers are raw memory of any type), and any memory must hold at least one of them
        (but for empty memory: a count of 0). An int or ``c_void_p`` is an
        address in the library's process (a handle it gave back); a ctypes pointer to a raw address,
        whose pointee would be copied from the test's process, is refused."""
        host = self._library.host
        back = not const
        # Read-only memory (bytes) for a pointer the function may write through: the library's process
        # says whether it did (None), for a warning that what it wrote is lost.
        read_only = False if const else None

        def check_items(value: Any, size: int) -> None:
            # A pointer to bytes (char, uint8_t) reads memory of any type, as bytes do.
            if item is not None and item[1] != 1 and size not in (1, item[1]):
                raise SignatureError(
                    f"{where}: {_describe(value)} holds {size}-byte items, and the function reads "
                    f"{item[0]} ({item[1]} bytes each)"
                )

        def check_size(value: Any, nbytes: int) -> None:
            # A pointer to a struct (or an int) the function reads or writes whole: memory shorter than
            # one would be read or written past in the library's process. Empty memory is a count of 0.
            if item is None or item[1] <= 1 or nbytes >= item[1] or nbytes == 0:
                return
            raise SignatureError(
                f"{where}: {_describe(value)} is {nbytes} byte{'s' if nbytes != 1 else ''}, smaller than the "
                f"{without_qualifiers(item[0])} it points to ({item[1]} bytes); pass at least {item[1]} bytes"
            )

        def pointer(value: Any) -> Wire:
            if value is None:
                return ("v", None)
            if isinstance(value, Pointer):
                if value._host is not host:
                    raise SignatureError(f"{where}: {value!r} belongs to another library process")
                return ("v", value.address)
            if isinstance(value, int) and not isinstance(value, bool):
                return ("v", value)  # an address in the library's process (a handle it gave), 0 for NULL
            if isinstance(value, ctypes.c_void_p):
                return ("v", value.value)
            address = _raw_address(value)
            if address is not None:  # its pointee would be copied from this process's memory at the address
                raise SignatureError(
                    f"{where}: got {_describe(value)} at 0x{address:x}, which points into no ctypes object it "
                    f"keeps: an address of this process means nothing in the library's process; {_INSTEAD}"
                )
            if isinstance(value, ctypes.c_char_p):
                if value.value is None:
                    return ("v", None)
                check_size(value, len(value.value))
                return ("m", None, value.value + b"\0", read_only)
            if isinstance(value, bytes):
                check_size(value, len(value))
                return ("m", None, value + b"\0", read_only)  # C strings find their NUL, as with ctypes
            if isinstance(value, str):
                raise SignatureError(f"{where}: got str {value[:40]!r}; pass bytes, e.g. text.encode()")
            if isinstance(value, _BYREF) and (offset := _byref_offset(value)):
                # The object's memory would be passed from its start, where the function reads from the offset.
                raise SignatureError(
                    f"{where}: byref() with an offset ({offset} bytes) is not taken; pass the memory from there "
                    f"as a ctypes object of its own, e.g. (ctypes.c_int * n).from_buffer(array, {offset})"
                )
            obj = _ctypes_object(value)
            if obj is not None:
                if isinstance(obj, ctypes.c_char_p):  # char ** out-parameter: the string comes back as bytes
                    return ("cp", obj.value)
                if isinstance(obj, ctypes.Array) and obj._type_ is ctypes.c_char_p:
                    return ("strings", list(obj))
                if isinstance(obj, _DEREFERENCING):
                    raise SignatureError(
                        f"{where}: a {type(obj).__name__} the library fills in would point into the library's "
                        f"process; pass a ctypes.c_void_p and read memory through the library's functions"
                    )
                if isinstance(obj, ctypes.Array):
                    element: Any = obj._type_
                    while issubclass(element, ctypes.Array):  # rows of a 2-D array: their items
                        element = element._type_
                    check_items(value, ctypes.sizeof(element))
                if isinstance(obj, (ctypes.Array, ctypes.Structure, ctypes.Union)):
                    check_size(value, ctypes.sizeof(obj))
                elif isinstance(obj, ctypes._SimpleCData) and item is not None and ctypes.sizeof(obj) != item[1] != 1:
                    # One item, of the pointee's size: pointer(c_double(x)) for an int16_t *, byref(c_bool())
                    # for an int * (a call would read or write past it).
                    raise SignatureError(
                        f"{where}: {_describe(value)} is an item of {ctypes.sizeof(obj)} byte"
                        f"{'s' if ctypes.sizeof(obj) != 1 else ''}, and the function "
                        f"reads {item[0]} ({item[1]} bytes)"
                    )
                _check_shareable(self.name, index, type(obj))
                return ("m", ctypes.addressof(obj), memoryview(obj).cast("B"), back)
            try:
                view = memoryview(value)
            except TypeError:
                raise SignatureError(
                    f"{where}: expected bytes, a writable buffer, a ctypes object, array, pointer or byref(), "
                    f"a pointer a function returned, or None; got {_describe(value)}"
                ) from None
            check_items(value, view.itemsize)
            check_size(value, view.nbytes)
            if view.readonly:
                return ("m", None, view.tobytes() + b"\0", read_only)
            if not view.c_contiguous:
                raise SignatureError(f"{where}: {_describe(value)} is not contiguous memory")
            buffer = (ctypes.c_char * view.nbytes).from_buffer(view)
            return ("m", ctypes.addressof(buffer), view.cast("B"), back)  # marshal copies it once, into the mailbox

        return pointer

    def __call__(self, *args: Any, **named: Any) -> Any:
        __tracebackhide__ = True
        if named:
            raise SignatureError(
                f"{self.name}() takes its arguments by position, as C does: {self.c_declaration}; "
                f"got {', '.join(f'{k}=' for k in named)}"
            )
        if self._unsupported:
            raise SignatureError(f"{self.c_declaration}: cannot be called from Python: {self._unsupported}")
        if self.signature["vararg"]:
            raise SignatureError(f"{self.c_declaration} is variadic; wrap it in a C function with fixed arguments")
        params = self.signature["params"]
        if len(args) != len(params):
            noun = "argument" if len(params) == 1 else "arguments"
            raise SignatureError(f"{self.name}() takes {len(params)} {noun}, {len(args)} given: {self.c_declaration}")
        wires = [convert(a) for convert, a in zip(self._converters, args, strict=True)]
        blobs: list[Any] = []
        for i, wire in enumerate(wires):
            if wire[0] == "m":  # the memory travels beside the message, copied once
                wires[i] = ("m", wire[1], len(blobs), wire[3])
                blobs.append(wire[2])
        library = self._library
        host = library.host
        # A process already dead before this call: the error says it ended in an earlier call, whose
        # counts were judged then.
        alive = host.alive
        # The replay needs the buffers as they were before the call (the call writes into them).
        inputs = [bytes(b) for b in blobs] if library._guests else blobs
        try:
            result, written, left = host.request(
                "call", library.id, self.name, wires, what=f"{self.name}()", timeout=library.timeout, blobs=blobs
            )
        except LibraryCrashed as crashed:
            if host.stop_file.exists():  # the call reached its cut-off
                stop = read_stop(
                    host.stop_file, binary=library.artifact.path, table=library.table, models=library._models
                )
                host.stop_file.unlink()
                raise CodeStopped(f"{self.name}()", stop) from None
            if alive and library._counts_unknown():  # as a program's crash says (before the quoted stderr)
                message = str(crashed).removesuffix(crashed.echoed)
                crashed.args = (f"{message}{COUNTS_UNKNOWN}{crashed.echoed}", *crashed.args[1:])
            raise
        lost: list[str] = []  # warned of once the buffers are back (a warning may be an error)
        for n, blob, text in written:
            target = args[n]
            if blob is None:  # it wrote into read-only memory: a copy, now gone
                lost.append(
                    f"{self.name}() wrote into argument {n + 1} ({self._param_type(n)}), given as "
                    f"{_describe(target)}, which is read-only: what it wrote is lost; pass a bytearray "
                    "(or a ctypes buffer) to read it after the call"
                )
                continue
            obj = _ctypes_object(target)
            if isinstance(obj, ctypes.c_char_p):  # the library pointed it elsewhere: a copy of the string
                obj.value = text
                continue
            if obj is None:
                view = memoryview(target)
                obj = (ctypes.c_char * view.nbytes).from_buffer(view)
            host.reply_blob_into(blob, ctypes.addressof(obj))
        value = self._result(result)
        if library._guests or library._stopped:  # a build that stopped marks its models unavailable
            library._replay(self, args, wires, inputs, result, left)
        for message in lost:
            warnings.warn(ReadOnlyArgumentWarning(message), stacklevel=2)
        return value

    def _result(self, wire: Wire) -> Any:
        tag, value = wire
        ret = self._ret
        if tag == "p":
            return None if value is None else Pointer(self._library.host, value, ret["name"])
        if tag == "s":
            return self._ret_type.from_buffer_copy(value)
        if ret["kind"] == "enum":
            members = self._library._enum_type(self.signature["ret"])
            try:
                return members(value)
            except ValueError:
                return value
        if ret["kind"] == "bool":
            return bool(value)
        return value

    def __repr__(self) -> str:
        return f"<C function {self.c_declaration}>"


class Library:
    """A shared library loaded in a library host process; its exported functions are attributes.

    ``host`` is the process to load it into (several libraries of one test share one);
    without it the library gets a process of its own, ended by :meth:`close`.
    ``timeout`` limits each call, in seconds. ``max_instr`` (IR instructions) and ``limits``
    (metric -> limit, for the IR total and the cost models' clocks) stop library code before its
    calls together pass them, raising :class:`~cbuild.run.stops.CodeStopped` (a process of its own
    is needed, and a cut-off build except for the clocks of models that execute a RISC-V build:
    the replay of a call there stops at the first block that would start past the limit).
    """

    def __init__(
        self,
        artifact: Artifact,
        *,
        host: HostProcess | None = None,
        timeout: float | None = 60.0,
        max_instr: int | None = None,
        limits: dict[str, int] | None = None,
    ) -> None:
        if not isinstance(artifact, Artifact):  # a file's path: its counters' table is in the build's Artifact
            raise CBuildError(
                f"Library takes the Artifact Builder.build(..., kind='library') returns, not {artifact!r}"
            )
        if artifact.kind != "library":
            raise CBuildError(f"{artifact.path} is a {artifact.kind}, not a library")
        check_timeout(timeout)
        wanted = requested(max_instr, limits)
        clock_limits(artifact, wanted)  # checked before a process is taken
        if wanted and host is not None:
            raise CBuildError("a library sharing a process cannot set its own cut-off; the process's owner sets it")
        self.artifact = artifact
        self._wanted = wanted
        self.table = artifact.table()
        self.timeout = timeout
        doc = artifact.metadata()["signatures"]
        self._signatures: dict[str, dict[str, Any]] = doc["functions"]
        self._type_map = TypeMap(doc["types"])
        self._own_host = host is None
        self.host = host if host is not None else default_pool().take()
        self.id = next(_ids)
        self._models = artifact.models()
        self._functions: dict[str, Function] = {}
        self._enums: dict[str, type[enum.IntEnum]] = {}
        clocks = clock_numbers(self._models) if artifact.cutoff else {}
        #: Where the library's runtime writes its counters if a call ends the host's process.
        self._counts_file = self.host.scratch / f"counts-{self.id}"
        # Its constructors run as it loads (C++ globals' initialisers), within the calls' time limit; the
        # counters after them come back with the load: counted from there, as an extension module's
        # initialisation is not counted either.
        self.host.loading = artifact.path
        try:
            loaded_as, loaded = self.host.request(
                "load",
                self.id,
                str(artifact.path),
                doc["types"],
                self._signatures,
                clocks,
                str(self.host.stop_file),
                str(self._counts_file),
                what=f"loading the library built from {artifact.name} (its constructors)",
                timeout=timeout,
            )
        finally:
            self.host.loading = None
        self.host.loaded[str(loaded_as)] = artifact.path
        self._loaded = self._raw(loaded)
        if wanted:
            self.host.request("limits", wanted, what="setting the cut-off")
        #: RISC-V target -> (its build in a worker, the models' result slots), and models that cannot measure.
        self._guests: dict[str, tuple[Guest, list[Any]]] = {}
        self._unavailable: dict[str, str] = {}
        self._handles: dict[str, dict[int, int]] = {}
        #: RISC-V target -> the metric of each of its models' clocks, for regions.
        self._clocks: dict[str, list[str]] = {}
        #: RISC-V targets whose guest has cut-offs set (cleared when no cut-off is in force).
        self._cut: set[str] = set()
        #: RISC-V target -> what its build ran until a call stopped at a cut-off (its guest is gone).
        self._stopped: dict[str, tuple[Execution, list[Any]]] = {}
        for target, machine in artifact.machines().items():
            if "unavailable" in machine:
                self._unavailable.update(dict.fromkeys(machine["models"], machine["unavailable"]))
                continue
            try:
                guest = Guest(
                    Path(machine["executor"]),
                    Path(machine["elf"]),
                    slot_runtimes(machine["slots"]),
                    translation=translation_of(machine),
                    check=checking_translation(),
                )
            except BaseException:
                self.close()
                raise
            self._guests[target] = (guest, machine["slots"])
            self._clocks[target] = machine.get("clocks", [])
            self._handles[target] = {}

    @property
    def function_names(self) -> list[str]:
        """Exported functions callable from Python."""
        return sorted(self._signatures)

    def c_type(self, name: str) -> Any:
        """A struct, union (a ctypes class with the C field names) or enum (an ``IntEnum``) by its C name,
        also where the functions reach it only through a qualified type (``const vec2 *``)."""
        kinds = ("enum", "struct", "union")
        found = [
            (without_qualifiers(desc["name"]) != desc["name"], tid, desc)
            for tid, desc in self._type_map.descs.items()
            if desc["kind"] in kinds and name in (desc.get("tag"), desc["name"], without_qualifiers(desc["name"]))
        ]
        if not found:
            what = f"no struct, union or enum {name!r}"
            raise CBuildError(f"{self.artifact.name} declares {what} in its functions' types")
        _, tid, desc = min(found, key=lambda match: match[0])  # the unqualified type first
        if desc["kind"] == "enum":
            return self._enum_type(tid)
        try:
            return self._type_map.ctype(tid)
        except UnsupportedType as exc:
            raise CBuildError(f"{desc['name']}: {exc}") from None

    def _enum_type(self, tid: str) -> type[enum.IntEnum]:
        """The enum of type id ``tid`` as an ``IntEnum``."""
        if tid not in self._enums:
            desc = self._type_map.desc(tid)
            name = desc.get("tag") or without_qualifiers(desc["name"]).removeprefix("enum ") or "anonymous_enum"
            members: type[enum.IntEnum] = enum.IntEnum(name, desc["values"])  # type: ignore[misc]
            self._enums[tid] = members
        return self._enums[tid]

    def _raw(self, data: bytes) -> tuple[int, ...]:
        return tuple(memoryview(data).cast("Q"))[: self.table.counters]

    def snapshot(self) -> tuple[int, ...]:
        """The counters as they are now; the cost models' dynamic phases and regions start afresh."""
        for guest, _ in self._guests.values():
            guest.reset()
        for target, (_, slots) in self._stopped.items():
            why = f"the {target} build stopped at a cut-off earlier and no longer runs"
            self._unavailable.update(dict.fromkeys((name for name, *_ in slots), why))
        self._stopped = {}
        return self._raw(self.host.request("snapshot", self.id, what=f"reading the counters of {self.artifact.name}"))

    def counts(self, since: tuple[int, ...] | None = None) -> BlockCounts:
        """Block counts since load (its constructors' work not included), or since a :meth:`snapshot`
        (dynamic results likewise)."""
        path = self.host.scratch / f"profile-{self.id}"
        try:
            counters, results, rc, threads = self.host.request(
                "counts", self.id, str(path), what=f"reading the counters of {self.artifact.name}"
            )
            if rc != 0:
                raise CBuildError(f"{self.artifact.name}: the runtime could not write its region profile")
            profile = read_profile(path, clock_metrics(self._models), self.table.functions)
        finally:
            path.unlink(missing_ok=True)
        raw = _since(self._raw(counters), self._loaded if since is None else since)
        analyses, dynamic = split_results(self._models, memoryview(results).cast("Q").tolist())
        if profile is not None and not (profile.regions or profile.problems or profile.functions):
            profile = None
        unavailable = dict(self._unavailable)
        machine = {}
        measured = [(target, guest.measure(), slots) for target, (guest, slots) in self._guests.items()]
        for target, run, slots in measured + [(target, run, slots) for target, (run, slots) in self._stopped.items()]:
            machine[target] = run
            dynamic.update(slot_results(slots, run.results))
            unavailable.update(slot_unavailable(slots, run, target))
            profile = with_machine_regions(profile, run.regions, self._clocks[target])
        counts = BlockCounts(self.table, self.table.block_counts(raw), analyses, dynamic, profile, machine, unavailable)
        warn_if_interleaved(self.artifact.name, threads, counts)
        return counts

    def _written_counts(self) -> tuple[tuple[int, ...], list[int]] | None:
        """The counters and model results the library's runtime wrote as a call ended its process,
        or None where it wrote nothing readable. Raises :class:`CountsDisagree` where the counters
        and its running total disagree (:func:`check_total`, as for a program's crash)."""
        if self.host.alive or not self._counts_file.exists():
            return None
        try:
            counters, results, total, _ = read_raw_counts(
                self._counts_file, build_id=self.artifact.key, table=self.table
            )
        except (CBuildError, OSError, ValueError):
            return None
        raw = tuple(counters)
        check_total(self.artifact.name, self.table, self.table.block_counts(raw), total)
        return raw, results.tolist()

    def _counts_unknown(self) -> bool:
        """True where a call ended the library's process and the counters its runtime wrote then
        cannot be used: it crashed in counted code between two calls (where the counters are not
        exact), or while another thread was counting; :meth:`crashed_counts` is then None."""
        try:
            self._written_counts()
        except CountsDisagree:
            return True
        return False

    def crashed_counts(self, since: tuple[int, ...] | None = None) -> BlockCounts | None:
        """What the library counted (since ``since``, a :meth:`snapshot`) until a call ended its
        process: its runtime writes its counters on a fatal signal (the host's guard has it) and
        when library code calls ``exit``. None where it wrote nothing readable, or where they
        cannot be used (:meth:`_counts_unknown`). The RISC-V builds' replays, which lack the call
        that ended it, are unavailable, and so are regions."""
        try:
            written = self._written_counts()
        except CountsDisagree:
            return None
        if written is None:
            return None
        counters, results = written
        raw = _since(counters, self._loaded if since is None else since)
        analyses, dynamic = split_results(self._models, results)
        why = f"{self.host.ended}: its {{}} build's replay of the calls lacks that one"
        unavailable = dict(self._unavailable)
        for target, (_, slots) in [*self._guests.items(), *self._stopped.items()]:
            unavailable.update((name, why.format(target)) for name, *_ in slots)
        return BlockCounts(self.table, self.table.block_counts(raw), analyses, dynamic, None, {}, unavailable)

    def function(self, name: str) -> Function:
        """The exported function ``name`` (also reachable as an attribute)."""
        try:
            return self._functions[name]
        except KeyError:
            pass
        if name not in self._signatures:
            raise UnknownFunction(self._unknown(name))
        fn = Function(self, name, self._signatures[name])
        self._functions[name] = fn
        return fn

    def _unknown(self, name: str) -> str:
        """Why ``name`` cannot be called: close matches, or the C++ functions of that name (their
        symbols are mangled: ``_Z9plain_cppi`` for ``plain_cpp(int)``)."""
        names = self.function_names
        parts = [f"the library built from {self.artifact.name} exports no function {name!r}"]
        cxx = [symbol for symbol in names if symbol.startswith("_Z") and unqualified(symbol) == name]
        if cxx:
            shown = ", ".join(f"{demangle(symbol)} as {symbol}" for symbol in cxx[:3])
            parts.append(
                f'it has the C++ function {shown}: declare it extern "C" to call it by its name, or '
                f"call it by its symbol, lib.function({cxx[0]!r})(...)"
            )
            return "; ".join(parts)
        unit = _defining_unit(self.artifact.path, name)
        if unit is not None and Path(unit).name in {Path(source).name for source in self.artifact.sources}:
            parts[0] += (
                f": {Path(unit).name} defines it, but not as a function the library exports (static or inline "
                "functions are not); remove static, or test it through an exported function that calls it"
            )
            return "; ".join(parts)
        parts[0] += did_you_mean(name, names)
        if len(names) <= 12:
            parts.append(f"it has: {', '.join(names) or 'none'}")
        else:
            parts.append(f"it exports {len(names)} functions (Library.function_names lists them)")
        return "; ".join(parts)

    def __getattr__(self, name: str) -> Function:
        if name.startswith("_") and not name.startswith("_Z"):  # a C++ symbol is a function's name too
            raise AttributeError(name)
        return self.function(name)

    def _replay(
        self,
        fn: Function,
        args: Sequence[Any],
        wires: list[Any],
        blobs: list[Any],
        native: Any,
        left: dict[str, int] | None,
    ) -> None:
        """Make the call again in each RISC-V build and warn where it differs from the native call.
        ``left``: the cut-off in force (metric -> what remains), on which the calls' growth of the
        executing models' clocks counts (a call that passes it stops, :class:`CodeStopped`, once
        every build has replayed the call; a build that stopped replays no later call of the
        measurement, and its models' results are then unavailable)."""
        for target, (_, slots) in self._stopped.items():
            why = (
                f"{fn.name}() of {self.artifact.name} was not replayed in the {target} build: it stopped at "
                "a cut-off in an earlier call of this measurement"
            )
            self._unavailable.update(dict.fromkeys((name for name, *_ in slots), why))
        stopped: CodeStopped | None = None
        for target, (guest, slots) in list(self._guests.items()):
            xlen = 32 if target == "riscv32" else 64
            clocks = self._clocks[target]
            rooms = {i: max(left[m], 0) for i, m in enumerate(clocks) if left is not None and m in left}
            try:
                guest_args, ret, narrowed = _guest_call(fn, args, wires, blobs, xlen, self._handles[target])
                if rooms or target in self._cut:
                    (value, written, failure), grew = guest.call_within(
                        fn.name, guest_args, ret, rooms, timeout=self.timeout
                    )
                    self._cut.discard(target)
                    if rooms:
                        self._cut.add(target)
                        self.host.request("spend", {clocks[i]: n for i, n in grew.items()}, what="the cut-off")
                else:
                    value, written, failure = guest.call(fn.name, guest_args, ret, timeout=self.timeout)
            except CutoffReached as reached:
                guest.close()
                del self._guests[target]
                run = reached.run
                self._stopped[target] = (run, slots)
                assert run.stopped is not None
                model, clock, pc = run.stopped
                used = clock - reached.before
                self.host.request("spend", {clocks[model]: used}, what="the cut-off")
                if stopped is None:  # raised once every build has replayed the call
                    # Counted as the library's own cut-off counts (from its load), else for this call.
                    earlier = self._wanted.get(clocks[model], rooms[model]) - rooms[model]
                    limits = {model: earlier + rooms[model]}
                    stop = machine_stop(
                        self.artifact.machines()[target], (model, earlier + used, pc), limits, run.results
                    )
                    stopped = CodeStopped(f"{fn.name}()", stop, run.stdout, run.stderr)
                continue
            except ExecutorError as exc:  # arguments it cannot carry, or the worker ended
                guest.close()
                del self._guests[target]
                self._unavailable.update(
                    dict.fromkeys(
                        (name for name, *_ in slots),
                        f"{fn.c_declaration}: cannot be replayed in the {target} build: {exc}",
                    )
                )
                continue
            problem = (
                failure
                or narrowed
                or _difference(fn, native, value, ret, args, guest_args, written, self._handles[target])
            )
            if problem:
                warnings.warn(
                    f"{fn.name}(): {problem} in the {target} build; its costs measure a different execution",
                    RuntimeWarning,
                    stacklevel=3,
                )
        if stopped is not None:
            raise stopped

    def close(self) -> None:
        """End the library's process if this library started it, and its RISC-V builds' workers."""
        for guest, _ in self._guests.values():
            guest.close()
        self._guests = {}
        if self._own_host:
            self.host.close()

    def __enter__(self) -> Library:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _since(raw: tuple[int, ...], since: tuple[int, ...] | None) -> tuple[int, ...]:
    """Counters ``raw`` less a snapshot ``since`` (None: counted from the library's load)."""
    return raw if since is None else tuple(a - b for a, b in zip(raw, since, strict=True))


def _layout_problem(types: TypeMap, desc: dict[str, Any], xlen: int) -> str:
    """Why a value of type ``desc`` does not have the same bytes in the RISC-V build ("" if it does)."""
    kind = desc["kind"]
    if kind == "pointer":
        return f"a pointer ({desc['name']}) to the library's memory"
    if kind in ("int", "enum") and word_bits(desc, xlen) != 8 * desc["size"]:
        return f"a {desc['name']}, {word_bits(desc, xlen) // 8} bytes in the riscv{xlen} build"
    if kind == "float" and desc["size"] > 8:
        return f"a {desc['name']}, another format on RISC-V"
    if kind == "array":
        return _layout_problem(types, types.desc(desc["of"]), xlen)
    if kind in ("struct", "union"):
        for field in desc["fields"]:
            problem = _layout_problem(types, types.desc(field["type"]), xlen)
            if problem:
                return f"{desc['name']}.{field['name'] or '(anonymous)'} is {problem}"
    return ""


def _guest_call(
    fn: Function, args: Sequence[Any], wires: list[Any], blobs: list[Any], xlen: int, handles: dict[int, int]
) -> tuple[list[Arg], tuple[str, int, bool], str]:
    """The call's arguments and result type as the RISC-V build gets them (``blobs``: the buffers'
    contents before the native call), and what makes the guest's call differ ("" if nothing): an
    array element the target's width cannot hold."""
    types = fn._library._type_map
    out: list[Arg] = []
    narrowed = ""  # the first array element the target's width cannot hold
    for n, (param, wire) in enumerate(zip(fn.signature["params"], wires, strict=True), start=1):
        desc = types.desc(param["type"])
        tag = wire[0]
        if desc["kind"] in ("int", "enum", "bool") and tag == "v":
            signed = desc.get("signed", True) and desc["kind"] != "bool"
            out.append(Arg("int", wire[1], bits=word_bits(desc, xlen), signed=bool(signed)))
        elif desc["kind"] == "float" and tag == "v":
            out.append(Arg("float", wire[1], bits=8 * desc["size"]))
        elif desc["kind"] == "pointer" and tag == "v":
            if wire[1] is None:
                out.append(Arg("null"))
            elif wire[1] in handles:
                out.append(Arg("handle", handles[wire[1]]))
            else:
                raise Unreplayable(f"an address ({wire[1]:#x}) that no function of the library returned")
        elif desc["kind"] == "pointer" and tag == "m":
            pointee = types.desc(desc.get("to"))
            problem = _layout_problem(types, pointee, xlen) if pointee["kind"] in ("struct", "union") else ""
            if problem:
                raise Unreplayable(f"argument {n} points to a {pointee['name']}: {problem}")
            data = bytes(blobs[wire[2]])
            size = int(pointee.get("size", 0))
            if pointee["kind"] in ("int", "enum") and word_bits(pointee, xlen) != 8 * size and len(data) % size == 0:
                # An array of size_t or long: each element at the target's width (bits beyond it dropped).
                element = (size, word_bits(pointee, xlen) // 8, bool(pointee.get("signed", True)))
                out.append(Arg("buffer", _resized(data, element[0], element[1]), back=bool(wire[3]), element=element))
                for i in range(0, len(data), size):
                    value = int.from_bytes(data[i : i + size], "little")
                    if not narrowed and not fits(value, 8 * element[1]):
                        where = f"argument {n}[{i // size}] ({value})"
                        narrowed = f"{where} does not fit the build's {8 * element[1]}-bit element"
            else:
                out.append(Arg("buffer", data, back=bool(wire[3])))
        elif desc["kind"] == "pointer" and tag == "cp":
            out.append(Arg("cell", wire[1]))
        elif desc["kind"] in ("struct", "union") and tag == "s":
            problem = _layout_problem(types, desc, xlen)
            if problem:
                raise Unreplayable(f"argument {n}: {problem}")
            out.append(Arg("struct", bytes(wire[1])))
        else:
            raise Unreplayable(f"a {desc['name']} argument passed as {tag!r}")
    ret = types.desc(fn.signature["ret"])
    if ret["kind"] in ("int", "enum", "bool"):
        signed = ret.get("signed", True) and ret["kind"] != "bool"
        result = ("int", word_bits(ret, xlen), bool(signed))
    elif ret["kind"] == "float":
        result = ("float", 8 * ret["size"], True)
    elif ret["kind"] == "pointer":
        result = ("pointer", xlen, False)
    elif ret["kind"] == "void":
        result = ("void", 0, False)
    elif ret["kind"] in ("struct", "union") and not _layout_problem(types, ret, xlen):
        result = ("struct", int(ret["size"]), False)
    else:
        problem = _layout_problem(types, ret, xlen) if ret["kind"] in ("struct", "union") else ""
        raise Unreplayable(f"its result ({ret['name']}{': ' + problem if problem else ''})")
    return out, result, narrowed


def _same_integer(native: int, guest: int, width: int) -> bool:
    """Whether a ``width``-bit result of the RISC-V build is the native result: the same bits, and
    the native value one that fits them (``(size_t)-1`` is the same on riscv32, ``1L << 40`` is not)."""
    return not (native ^ guest) & ((1 << width) - 1) and fits(native, width)


def _difference(
    fn: Function,
    native: Wire,
    value: Any,
    ret: tuple[str, int, bool],
    args: Sequence[Any],
    guest_args: Sequence[Arg],
    written: list[bytes | None],
    handles: dict[int, int],
) -> str:
    """How the RISC-V build's call differs from the native one ("" when it does not)."""
    kind = ret[0]
    native_value = native[1]
    if kind == "pointer":
        if (native_value is None) != (value == 0):
            null = "NULL" if value == 0 else "not NULL"
            return f"the result is {null} (natively {'NULL' if native_value is None else 'not NULL'})"
        if native_value is not None:
            handles[native_value] = value
    elif kind == "int":
        value, width = value  # the guest's result and its width in the build (an i32 for a Py_ssize_t)
        if not _same_integer(int(native_value), int(value), min(ret[1], width)):
            return f"the result is {value} (natively {native_value})"
    elif kind == "struct":
        if bytes(native_value) != value:
            return f"the result is {value.hex()} (natively {bytes(native_value).hex()})"
    elif kind == "float":
        same = native_value == value or (math.isnan(native_value) and math.isnan(value))
        if not same and not (ret[1] == 32 and ctypes.c_float(native_value).value == value):
            return f"the result is {value!r} (natively {native_value!r})"
    returned = iter(written)
    for n, arg in enumerate(guest_args):
        if arg.kind == "cell":
            text = next(returned)
            native_text = getattr(_ctypes_object(args[n]), "value", None)  # the call pointed it there
            if text != native_text:
                return f"argument {n + 1} points to {_shown(text)} (natively {_shown(native_text)})"
        elif arg.kind == "buffer" and arg.back:
            theirs = next(returned)
            obj = _ctypes_object(args[n])
            try:
                here = bytes(memoryview(args[n] if obj is None else obj).cast("B"))
            except TypeError:
                continue
            assert theirs is not None
            if arg.element is not None:
                host, target, signed = arg.element
                theirs = _resized(theirs, target, host, signed=signed)
            if here[: len(theirs)] != theirs[: len(here)]:
                return f"argument {n + 1} is written differently"
    return ""


def _resized(data: bytes, size: int, new_size: int, *, signed: bool = False) -> bytes:
    """Little-endian integers of ``size`` bytes as ``new_size`` bytes each (cut, or extended)."""
    values = (int.from_bytes(data[i : i + size], "little", signed=signed) for i in range(0, len(data), size))
    mask = (1 << (8 * new_size)) - 1
    return b"".join((v & mask).to_bytes(new_size, "little") for v in values)


def _shown(text: bytes | None) -> str:
    return "NULL" if text is None else repr(text[:40] + (b"..." if len(text) > 40 else b""))


def _check_fields(
    where: str, ctype_name: str, kind: str, fields: Sequence[str], value: dict[Any, Any] | tuple[Any, ...]
) -> None:
    """A struct given as a dict names each of its fields once and nothing else, and as a tuple gives
    every field in order (ctypes would drop an unknown key and zero what is left out); a union's
    dict names members it has."""
    if isinstance(value, tuple):
        if kind == "struct" and len(value) != len(fields):
            raise SignatureError(
                f"{where}: {ctype_name} has {len(fields)} field(s) ({', '.join(fields)}), got a tuple of {len(value)}"
            )
        return
    unknown = [key for key in value if key not in fields]
    if unknown:
        raise SignatureError(
            f"{where}: {ctype_name} has no field {unknown[0]!r}{did_you_mean(str(unknown[0]), fields)}; "
            f"its fields: {', '.join(fields)}"
        )
    missing = [name for name in fields if name not in value]
    if kind == "struct" and missing:
        raise SignatureError(f"{where}: {ctype_name}: no value for {', '.join(missing)} (give every field)")
