"""CPython extension modules built through the instrumenting pipeline, imported in a library host.

An :class:`Extension` is the module as the test sees it: attribute access, calls and
the usual operators travel to the host process (:mod:`cbuild.hosts`), which runs them on
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

import builtins
import io
import keyword
import pickle
import re
import sys
import sysconfig
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from cbuild.build import Artifact
from cbuild.errors import CBuildError
from cbuild.hosts import HostProcess
from cbuild.library import Library
from cbuild.options import BuildOptions

_SCALARS = frozenset((type(None), bool, int, float, str, bytes))
_LIMITED_API = re.compile(r"3\.(\d{1,2})")


class ExtensionError(CBuildError):
    """An exception of a type the extension module defines, raised in the library host.

    Raised as a subclass of the exception's nearest built-in base as well (a
    ``mmh3.error`` deriving from ``ValueError`` is caught by ``except ValueError``).
    """

    #: ``module.QualName`` of the exception raised in the host.
    type_name = ""


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
        defines = (f"Py_LIMITED_API=0x03{int(match.group(1)):02X}0000",)
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
        handle, label = pid
        return RemoteObject(self._module, handle, label)


def _exception(module: Extension, raised: tuple[Any, ...]) -> BaseException:
    kind, *rest = raised
    if kind == "value":  # a built-in exception, as it was raised
        exc: BaseException = _Unpickler(rest[0], module).load()
        return exc
    type_name, base_name, message = rest
    base = getattr(builtins, base_name, Exception)
    if not (isinstance(base, type) and issubclass(base, Exception)):
        base = Exception
    cls = type(type_name.rpartition(".")[2], (ExtensionError, base), {"type_name": type_name})
    error: BaseException = cls(f"{type_name}: {message}")
    return error


class RemoteObject:
    """An object that lives in the library host (a function, a module, an object the module made).

    Attribute access, calls, ``len()``, indexing, iteration, ``repr()``, comparisons and
    arithmetic are carried out there.
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
        if name.startswith("__") and name.endswith("__"):
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
        """Iterates over a copy: the host makes a list of the object's items first."""
        items: list[Any] = self._do("list")
        return iter(items)

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


class Extension(RemoteObject):
    """A CPython extension module built from ``artifact``, imported in a library host as ``name``.

    Use it as the module: ``ext.hash128(b"data", 42)``; ``with`` ends the process it
    started. ``host``, ``timeout``, ``max_instr`` and ``limits`` are as for
    :class:`~cbuild.library.Library`, whose counting it uses (``_library``; ``_origin``
    holds the counters after the import). The engine's own attributes start with an
    underscore, so that the module's names stay free.
    """

    __slots__ = ("_functions", "_library", "_name", "_origin")

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

    def _remote(self, handle: int, label: str, op: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        __tracebackhide__ = True
        if op == "call":
            what = f"{label}()"
        elif op in ("getattr", "setattr"):
            what = f"{label}.{args[0]}"
        else:
            what = f"{op}({label})"
        if not kwargs and all(type(a) in _SCALARS for a in args):  # the common case, without a Python pickler
            payload = pickle.dumps((args, kwargs), protocol=pickle.HIGHEST_PROTOCOL)
        else:
            buffer = io.BytesIO()
            try:
                _Pickler(buffer, self._library.host).dump((args, kwargs))
            except (pickle.PicklingError, TypeError, AttributeError) as exc:
                raise CBuildError(f"{what}: an argument cannot be sent to the library's process: {exc}") from None
            payload = buffer.getvalue()
        library = self._library
        request = ("py", library.id, handle, op, payload)
        ok, data = library.host.request(*request, what=what, timeout=library.timeout)
        if not ok:
            raise _exception(self, data).with_traceback(None)
        return _Unpickler(data, self).load()

    def __enter__(self) -> Extension:
        return self

    def __exit__(self, *exc: object) -> None:
        self._library.close()
