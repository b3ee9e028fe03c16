"""CPython extension modules built through the instrumenting pipeline, imported in a library host.

An :class:`Extension` is the module as the test sees it: attribute access, calls and
the usual operators travel to the host process (:mod:`cbuild.run.hosts`), which runs them on
the real module and sends the result back. Plain data (numbers, strings, bytes, and
lists, tuples, dicts and sets of them) comes back as a copy; anything else (the
module's functions, its objects such as hashers, other modules) as a
:class:`RemoteObject` that forwards in turn. Only the module's own C code is counted:
CPython runs uninstrumented, so a call into the C API costs the module its call
instructions, and inline functions from CPython's headers (``Py_INCREF``,
``PyTuple_GET_ITEM``) are part of the module's code and count. The module's
initialisation (``PyInit_<name>``) runs when it is imported and is not counted.
"""

from __future__ import annotations

import array
import builtins
import contextlib
import io
import keyword
import pickle
import re
import sys
import sysconfig
import types
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from cbuild.build.builder import Artifact
from cbuild.build.options import BuildOptions
from cbuild.errors import CBuildError
from cbuild.run.host_server import BINARY_OPERATORS, SCALARS
from cbuild.run.hosts import HostProcess
from cbuild.run.library import Library

_LIMITED_API = re.compile(r"3\.(\d{1,2})")


class ExtensionError(CBuildError):
    """An exception of a type the extension module defines, raised in the library host.

    Raised as a subclass of the exception's nearest built-in base as well (a
    ``demo.Error`` deriving from ``ValueError`` is caught by ``except ValueError``), and
    of the class the module's attribute gives the test (``except demo.Error`` and
    ``pytest.raises(demo.Error)`` catch it). ``KeyboardInterrupt`` and ``SystemExit``
    raised by the module's code arrive as ones of these too, deriving from
    ``Exception`` only: they end neither the library's process nor the test session.
    """

    #: ``module.QualName`` of the exception raised in the host.
    type_name = ""
    #: The class's handle in the library's process, once the test has seen the class itself.
    _handle: int | None = None
    _host: HostProcess | None = None


def extension_options(options: BuildOptions, *, limited_api: str | None = None) -> BuildOptions:
    """``options`` plus what an extension module of the running Python needs.

    Python's include directories (from :mod:`sysconfig`), ``Py_LIMITED_API`` for
    ``limited_api="3.N"`` (the stable ABI of Python 3.N and later), and a link that
    leaves the C API's symbols to the interpreter that loads the module.
    """
    paths = sysconfig.get_paths()
    includes = tuple(dict.fromkeys(Path(paths[key]) for key in ("include", "platinclude")))
    defines: tuple[str, ...] = ()
    if limited_api is not None:
        match = _LIMITED_API.fullmatch(limited_api) if isinstance(limited_api, str) else None
        if match is None:
            raise CBuildError(f"limited_api: expected a Python version such as '3.8', got {limited_api!r}")
        minor = int(match.group(1))
        if not 2 <= minor <= sys.version_info.minor:
            raise CBuildError(
                f"limited_api: {limited_api!r} is not a stable ABI this Python "
                f"({sys.version_info.major}.{sys.version_info.minor}) can load (3.2 up to its own version)"
            )
        defines = (f"Py_LIMITED_API=0x03{minor:02X}0000",)
    return replace(
        options,
        include_dirs=options.include_dirs + tuple(p for p in includes if p not in options.include_dirs),
        defines=options.defines + defines,
        ldflags=(*options.ldflags, "-Wl,-z,undefs"),
    )


def _module_name(name: str) -> str:
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        raise CBuildError(f"extension name {name!r} is not a Python identifier (its PyInit_<name> names it)")
    return name


class _Pickler(pickle.Pickler):
    """Arguments for the host: remote objects travel as their handles, other values as copies.

    Only values of built-in and standard-library types can be copied: the host does not
    import the test's modules.
    """

    def __init__(self, file: io.BytesIO, host: HostProcess) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self._host = host

    def persistent_id(self, obj: Any) -> Any:
        if isinstance(obj, RemoteObject):
            if obj._module._library.host is not self._host:
                raise TypeError(f"{obj._label} lives in another library process")
            return obj._handle
        if isinstance(obj, type) and issubclass(obj, ExtensionError):
            if obj._handle is None or obj._host is not self._host:
                raise TypeError(f"{obj.type_name} of the test process stands for no class of this library process")
            return obj._handle
        if isinstance(obj, (type, types.FunctionType)):  # pickled by name: the host must be able to import it
            name = f"{obj.__module__}.{obj.__qualname__}"
            if str(obj.__module__).partition(".")[0] not in ("builtins", *sys.stdlib_module_names):
                if isinstance(obj, type):
                    raise TypeError(f"{name} is the test's own class, which the library's process cannot import")
                raise TypeError(
                    f"{name} is the test's own function: code in the library's process cannot call back into "
                    "the test's (only built-in and standard-library functions travel, by name)"
                )
            if "<" in obj.__qualname__:  # a lambda or a function defined in a function
                raise TypeError(f"{name} has no name the library's process can import it by")
            return None
        module = type(obj).__module__.partition(".")[0]
        if module != "builtins" and module not in sys.stdlib_module_names:
            raise TypeError(
                f"a {type(obj).__module__}.{type(obj).__qualname__} cannot be copied to the library's process "
                "(only values of built-in and standard-library types, and the module's own objects)"
            )
        return None


class _Unpickler(pickle.Unpickler):
    """Results from the host: handles become remote objects of this module."""

    def __init__(self, data: bytes, module: Extension) -> None:
        super().__init__(io.BytesIO(data))
        self._module = module

    def persistent_load(self, pid: Any) -> Any:
        if pid[0] == "exception type":  # an exception class of the module's: one the test can catch
            _, handle, names, base_name = pid
            return self._module._exception_type(tuple(names), base_name, handle)
        handle, label = pid
        return RemoteObject(self._module, handle, label)


def _exception(module: Extension, raised: tuple[Any, ...]) -> BaseException:
    kind, *rest = raised
    if kind == "value":  # a built-in exception, as it was raised
        exc: BaseException = _Unpickler(rest[0], module).load()
        return exc
    names, base_name, message = rest
    cls = module._exception_type(tuple(names), base_name)
    error: BaseException = cls(f"{names[0]}: {message}" if message else names[0])
    return error


def _writable(value: Any) -> bool:
    """A buffer the module may write into: bytearray, array.array, a writable memoryview."""
    if isinstance(value, memoryview):
        return not value.readonly
    return isinstance(value, (bytearray, array.array))


def _sendable(value: Any) -> Any:
    """A memoryview travels as the bytes (or, writable, the bytearray) it shows."""
    if isinstance(value, memoryview):
        return bytes(value) if value.readonly else bytearray(value)
    return value


def _write_back(what: str, key: int | str, buffer: Any, contents: bytes) -> None:
    """Put what the module left in argument ``key`` (its bytes) into the test's ``buffer``."""
    if isinstance(buffer, bytearray):
        buffer[:] = contents  # the module may have resized it
        return
    view = memoryview(buffer).cast("B")
    if len(view) != len(contents):
        where = f"argument {key + 1}" if isinstance(key, int) else f"argument {key}="
        raise CBuildError(f"{what}: {where} changed size in the library's process; it cannot here")
    view[:] = contents


#: Items the host sends per request while a test iterates over one of the module's objects.
ITER_BATCH = 1000
#: Special names of the remote object itself that a test may read: ``ext.__version__``.
_FORWARDED_SPECIAL = frozenset({"__name__", "__qualname__", "__version__", "__all__", "__file__", "__path__"})


class RemoteObject:
    """An object that lives in the library host (a function, a module, an object the module made).

    Attribute access, calls, ``len()``, indexing, iteration, ``in``, ``repr()``, comparisons,
    the binary operators (``+ - * @ / // % ** << >> & | ^`` and ``divmod()``, with the object
    on either side and in place), ``- + ~ abs()``, ``int() float() complex() bool() round()``
    and use as an index are carried out there: what the object's type does not support raises
    the ``TypeError`` Python gives for it. ``isinstance()`` with the module's classes is not
    available.
    """

    __slots__ = ("_handle", "_label", "_module")

    def __init__(self, module: Extension, handle: int, label: str) -> None:
        object.__setattr__(self, "_module", module)
        object.__setattr__(self, "_handle", handle)
        #: What the object is, for messages: ``mmh3.hash128``, ``mmh3.mmh3_x64_128 object``.
        object.__setattr__(self, "_label", label)

    def _do(self, op: str, *args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        return self._module._remote(self._handle, self._label, op, args, kwargs)

    def __getattr__(self, name: str) -> Any:
        # Other special names are Python's protocols (pickling, copying) probing this proxy.
        if name.startswith("__") and name.endswith("__") and name not in _FORWARDED_SPECIAL:
            raise AttributeError(name)
        return self._do("getattr", name)

    def __setattr__(self, name: str, value: Any) -> None:
        self._do("setattr", name, value)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        return self._do("call", *args, **kwargs)

    def __repr__(self) -> str:
        text: str = self._do("repr")
        return text

    def __str__(self) -> str:
        text: str = self._do("str")
        return text

    def __len__(self) -> int:
        n: int = self._do("len")
        return n

    def __iter__(self) -> Iterator[Any]:
        """Iterates in batches of :data:`ITER_BATCH` items made in the host: an endless iterator
        keeps memory bounded, each batch is one request under the call's timeout, and a loop
        that stops early lets the host forget the iteration."""
        key: int = self._do("iter_start")
        done = False
        try:
            while True:
                batch: list[Any] = self._do("iter_take", key, ITER_BATCH)
                yield from batch
                if len(batch) < ITER_BATCH:
                    done = True
                    return
        finally:
            if not done:
                with contextlib.suppress(CBuildError):
                    self._do("iter_end", key)

    def __getitem__(self, key: Any) -> Any:
        return self._do("getitem", key)

    def __setitem__(self, key: Any, value: Any) -> None:
        self._do("setitem", key, value)

    def __contains__(self, item: Any) -> bool:
        return bool(self._do("contains", item))

    def __bool__(self) -> bool:
        return bool(self._do("bool"))

    def __eq__(self, other: object) -> bool:
        return bool(self._do("eq", other))

    def __ne__(self, other: object) -> bool:
        return bool(self._do("ne", other))

    def __hash__(self) -> int:
        value: int = self._do("hash")
        return value

    def __dir__(self) -> list[str]:
        names: list[str] = self._do("dir")
        return names

    def __lt__(self, other: Any) -> Any:
        return self._do("lt", other)

    def __le__(self, other: Any) -> Any:
        return self._do("le", other)

    def __gt__(self, other: Any) -> Any:
        return self._do("gt", other)

    def __ge__(self, other: Any) -> Any:
        return self._do("ge", other)

    def __neg__(self) -> Any:
        return self._do("neg")

    def __pos__(self) -> Any:
        return self._do("pos")

    def __invert__(self) -> Any:
        return self._do("invert")

    def __abs__(self) -> Any:
        return self._do("abs")

    def __index__(self) -> int:
        value: int = self._do("index")
        return value

    def __complex__(self) -> complex:
        value: complex = self._do("complex")
        return value

    def __round__(self, ndigits: int | None = None) -> Any:
        return self._do("round") if ndigits is None else self._do("round", ndigits)

    def __int__(self) -> int:
        value: int = self._do("int")
        return value

    def __float__(self) -> float:
        value: float = self._do("float")
        return value


def _operator(name: str) -> Callable[[RemoteObject, Any], Any]:
    def method(self: RemoteObject, other: Any) -> Any:
        __tracebackhide__ = True
        return self._do(name, other)

    method.__name__ = f"__{name}__"
    return method


for _name in BINARY_OPERATORS:
    # ``a & b`` (``and``), ``1 & a`` (``rand``), ``a &= b`` (``iand``; no in-place divmod).
    for _form in (_name, f"r{_name}", *((f"i{_name}",) if _name != "divmod" else ())):
        setattr(RemoteObject, f"__{_form}__", _operator(_form))


class Extension(RemoteObject):
    """A CPython extension module built from ``artifact``, imported in a library host as ``name``.

    Use it as the module: ``ext.hash128(b"data", 42)``; ``with`` ends the process it
    started. ``host``, ``timeout``, ``max_instr`` and ``limits`` are as for
    :class:`~cbuild.run.library.Library`, whose counting it uses (``_library``; ``_origin``
    holds the counters after the import). The engine's own attributes start with an
    underscore, so that the module's names stay free.
    """

    __slots__ = ("_errors", "_functions", "_library", "_name", "_origin")

    def __init__(
        self,
        artifact: Artifact,
        name: str,
        *,
        host: HostProcess | None = None,
        timeout: float | None = 60.0,
        max_instr: int | None = None,
        limits: dict[str, int] | None = None,
    ) -> None:
        object.__setattr__(self, "_name", _module_name(name))
        library = Library(artifact, host=host, timeout=timeout, max_instr=max_instr, limits=limits)
        object.__setattr__(self, "_library", library)
        #: The module's attributes that live in the host (functions, types), fetched once.
        object.__setattr__(self, "_functions", {})
        #: The test's classes for the module's exception types, by ``module.QualName``.
        object.__setattr__(self, "_errors", {})
        try:
            handle, label = library.host.request(
                "import", library.id, name, what=f"importing {name} from {artifact.name}", timeout=timeout
            )
        except BaseException:
            library.close()
            raise
        RemoteObject.__init__(self, self, handle, label)
        object.__setattr__(self, "_origin", library.snapshot())

    def __getattr__(self, name: str) -> Any:
        try:
            return self._functions[name]
        except KeyError:
            pass
        value = super().__getattr__(name)
        if isinstance(value, RemoteObject):  # data attributes are fetched anew: the module may change them
            self._functions[name] = value
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        self._functions.pop(name, None)
        super().__setattr__(name, value)

    def _exception_type(
        self, names: tuple[str, ...], base_name: str, handle: int | None = None
    ) -> type[ExtensionError]:
        """The test's class for the exception type ``names[0]`` of the library's process (its
        non-built-in classes, most derived first), deriving from the built-in ``base_name``."""
        cls: type[ExtensionError] | None = self._errors.get(names[0])
        if cls is None:
            if len(names) > 1:
                bases: tuple[type, ...] = (self._exception_type(names[1:], base_name),)
            else:
                base = getattr(builtins, base_name, Exception)
                if not (isinstance(base, type) and issubclass(base, Exception)):
                    base = Exception  # KeyboardInterrupt, SystemExit: not to end the test session
                bases = (ExtensionError, base)
            cls = type(names[0].rpartition(".")[2], bases, {"type_name": names[0], "_handle": None})
            if "." in names[0]:
                cls.__module__ = names[0].rpartition(".")[0]
            self._errors[names[0]] = cls
        if handle is not None:
            cls._handle, cls._host = handle, self._library.host
        return cls

    def _remote(self, handle: int, label: str, op: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        __tracebackhide__ = True
        if op == "call":
            what = f"{label}()"
        elif op in ("getattr", "setattr"):
            what = f"{label}.{args[0]}"
        else:
            what = f"{op}({label})"
        writable: dict[int | str, Any] = {}
        if not kwargs and all(type(a) in SCALARS for a in args):  # the common case, without a Python pickler
            payload = pickle.dumps((args, kwargs), protocol=pickle.HIGHEST_PROTOCOL)
        else:
            # Writable buffers passed as arguments get back what the module wrote into them.
            named: list[tuple[int | str, Any]] = [*enumerate(args), *kwargs.items()]
            writable = {k: v for k, v in named if _writable(v)}
            args = tuple(map(_sendable, args))
            kwargs = {k: _sendable(v) for k, v in kwargs.items()}
            buffer = io.BytesIO()
            try:
                _Pickler(buffer, self._library.host).dump((args, kwargs))
            except (pickle.PicklingError, TypeError, AttributeError, ValueError, RecursionError) as exc:
                raise CBuildError(f"{what}: an argument cannot be sent to the library's process: {exc}") from None
            payload = buffer.getvalue()
        library = self._library
        request = ("py", library.id, handle, op, payload, list(writable))
        ok, data, written = library.host.request(*request, what=what, timeout=library.timeout)
        for key, contents in zip(writable, written, strict=True):
            _write_back(what, key, writable[key], contents)
        if not ok:
            raise _exception(self, data).with_traceback(None)
        return _Unpickler(data, self).load()

    def __enter__(self) -> Extension:
        return self

    def __exit__(self, *exc: object) -> None:
        self._library.close()
