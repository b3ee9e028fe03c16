"""ctypes types for the C type descriptions of a build's signatures (:mod:`cbuild.build.signatures`).

Standard library only: the library host process loads this file by path.
A description is a dict with a ``kind`` (void, int, bool, float, pointer, enum,
struct, union, array, opaque, unsupported) and a ``name`` (its C spelling).
Pointers map to ``c_void_p`` everywhere, including inside structures: the address
belongs to the library's process and is never dereferenced by the test process.
"""

from __future__ import annotations

import ctypes

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs the host milliseconds

if TYPE_CHECKING:
    from typing import Any

_SIGNED = {1: ctypes.c_int8, 2: ctypes.c_int16, 4: ctypes.c_int32, 8: ctypes.c_int64}
_UNSIGNED = {1: ctypes.c_uint8, 2: ctypes.c_uint16, 4: ctypes.c_uint32, 8: ctypes.c_uint64}
_FLOATS = {4: ctypes.c_float, 8: ctypes.c_double}


class UnsupportedType(Exception):
    """A C type that cannot cross the process boundary; the message says why."""


class TypeMap:
    """Builds (once each) the ctypes type of every described C type of one library."""

    def __init__(self, types: dict[str, dict[str, Any]]) -> None:
        self.descs = types
        self._built: dict[str, Any] = {}

    def desc(self, tid: str | None) -> dict[str, Any]:
        """The description of type id ``tid`` (``None`` is void)."""
        if tid is None:
            return {"kind": "void", "name": "void"}
        return self.descs[tid]

    def ctype(self, tid: str | None) -> Any:
        """The ctypes type of ``tid``: None for void; raises :class:`UnsupportedType`."""
        if tid is None:
            return None
        if tid not in self._built:
            self._built[tid] = self._make(tid, self.descs[tid])
        return self._built[tid]

    def _make(self, tid: str, d: dict[str, Any]) -> Any:
        kind = d["kind"]
        if kind == "void":
            return None
        if kind in ("int", "enum"):
            table = _SIGNED if d.get("signed", True) else _UNSIGNED
            if d["size"] not in table:
                raise UnsupportedType(f"{d['name']} is a {8 * d['size']}-bit integer")
            return table[d["size"]]
        if kind == "bool":
            return ctypes.c_bool
        if kind == "float":
            if d["size"] not in _FLOATS:
                raise UnsupportedType(f"{d['name']} is a {8 * d['size']}-bit float")
            return _FLOATS[d["size"]]
        if kind == "pointer":
            return ctypes.c_void_p
        if kind == "array":
            return self.ctype(d["of"]) * d["count"]
        if kind in ("struct", "union"):
            return self._record(tid, d)
        if kind == "opaque":
            raise UnsupportedType(f"{d['name']} is an incomplete type")
        raise UnsupportedType(d.get("why") or f"{d['name']} has no ctypes equivalent")

    def _record(self, tid: str, d: dict[str, Any]) -> Any:
        base = ctypes.Structure if d["kind"] == "struct" else ctypes.Union
        fields: list[tuple[Any, ...]] = []
        for n, f in enumerate(d["fields"]):
            name = f["name"] or f"_anonymous{n}"
            field_type = self.ctype(f["type"])
            if "bit_size" in f:
                fields.append((name, field_type, f["bit_size"]))
            else:
                fields.append((name, field_type))
        cls_name = _identifier(d.get("tag") or d["name"]) or f"anonymous_{tid}"
        cls = type(cls_name, (base,), {"_fields_": fields, "__module__": "cbuild.run.ctypes_map"})
        if ctypes.sizeof(cls) != d["size"]:
            raise UnsupportedType(f"{d['name']}: its layout ({d['size']} bytes) has no exact ctypes equivalent")
        for f in d["fields"]:
            if f["name"] and "bit_size" not in f and getattr(cls, f["name"]).offset != f["offset"]:
                raise UnsupportedType(f"{d['name']}: field {f['name']} is not where ctypes would place it")
        return cls


#: Qualifiers a type reached through a pointer to it carries in its name (``const vec2``).
_QUALIFIERS = frozenset(("const", "volatile", "restrict", "_Atomic"))


def without_qualifiers(name: str) -> str:
    """A struct, union or enum type's name without the qualifiers it starts with (where the type's
    spelling puts them): ``const vec2`` is ``vec2``, ``Foo<const char *>`` stays as it is."""
    words = name.split(" ")
    while len(words) > 1 and words[0] in _QUALIFIERS:
        del words[0]
    return " ".join(words)


def _identifier(name: str) -> str:
    name = without_qualifiers(name)
    for prefix in ("struct ", "union "):
        if name.startswith(prefix):
            name = name[len(prefix) :]
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name)
