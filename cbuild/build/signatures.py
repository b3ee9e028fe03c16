"""C signatures of a module's exported functions, read from its DWARF debug metadata (clang ``-g``).

The document :func:`read_signatures` returns is what :mod:`cbuild.run.ctypes_map` and
:mod:`cbuild.run.library` consume: a table of type descriptions by type id, and per exported
symbol its return type, parameters (with their names) and its C spelling. Typedefs and
qualifiers keep their own spelling (``const uint8_t``) but describe the type underneath.
Functions without debug information fall back to their IR types (``signext``/``zeroext``
telling signed from unsigned), where a structure passed by value cannot be described.

Only metadata nodes reached from the exported functions are parsed, each once.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Iterator
from typing import Any, TypeGuard

__all__ = ["read_signatures"]

#: A metadata node definition (``!N = [distinct] ...``): its number and its body.
_NODE_LINE = re.compile(r"^!(\d+) = (?:distinct )?(.+)$", re.M)
_NODE_ID = re.compile(r"!(\d+) = ")
#: A parameter's variable as LLVM prints it (other layouts go through the full parser).
_ARG_FAST = re.compile(r'!DILocalVariable\(name: "((?:[^"\\]|\\.)*)", arg: (\d+), scope: !(\d+)[,)]')
#: Bytes of metadata between two lines of the sparse node index.
_SAMPLE_STRIDE = 4096
_DEFINED_NAME = re.compile(r'@("(?:[^"\\]|\\.)*"|[-\w$.]+)\(')
_DBG = re.compile(r"!dbg !(\d+)")

# Scanner pieces for metadata bodies.
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
_ESCAPE = re.compile(r"\\([0-9A-Fa-f]{2})")
_INT = re.compile(r"-?\d+")
_WORD = re.compile(r"[A-Za-z_$.][\w$.]*")
_KEY = re.compile(r"\s*(\w+):\s*")
_FLAG_OR = re.compile(r"\s*\|\s*")
_SPACE = re.compile(r"\s*")
# Fast paths: nodes whose values are all plain (strings, !N, numbers, words), tuples of !N and null.
_PLAIN = r'(?:"(?:[^"\\]|\\.)*"|!\d+|[^,"(){}!]*)'
_FAST_FIELD = re.compile(rf"(\w+): ({_PLAIN})(?:, |$)")
_FAST_NODE = re.compile(rf"!(\w+)\(((?:\w+: {_PLAIN}(?:, (?=\w)|(?=\)$)))*)\)")
_FAST_TUPLE = re.compile(r"!\{((?:(?:!\d+|null)(?:, (?=[!n])|(?=\}$)))*)\}")

#: Linkages whose definitions the shared object does not export as they are.
_LOCAL_LINKAGES = frozenset(
    {"private", "internal", "available_externally", "linkonce", "linkonce_odr", "appending", "extern_weak", "common"}
)
_QUALIFIERS = {
    "DW_TAG_const_type": "const",
    "DW_TAG_volatile_type": "volatile",
    "DW_TAG_restrict_type": "restrict",
    "DW_TAG_atomic_type": "_Atomic",
    "DW_TAG_immutable_type": "const",
    "DW_TAG_LLVM_ptrauth_type": "",
}
_POINTERS = {"DW_TAG_pointer_type": "*", "DW_TAG_reference_type": "&", "DW_TAG_rvalue_reference_type": "&&"}
_SIGNED = frozenset({"DW_ATE_signed", "DW_ATE_signed_char"})
_UNSIGNED = frozenset({"DW_ATE_unsigned", "DW_ATE_unsigned_char", "DW_ATE_UTF"})
_BY_VALUE_WHY = (
    "passes a struct by value; build with debug info (-g) so that its C type is known, or pass it by pointer"
)


class Ref(int):
    """A reference to metadata node ``!N`` (an int, told apart from integer values)."""


class Node:
    """A parsed metadata node: ``kind`` (``DIBasicType``..., ``""`` for a tuple), fields, tuple items.

    Fields of the plain form (the usual one) are converted from their text when first read.
    """

    __slots__ = ("_raw", "_values", "items", "kind")

    def __init__(
        self,
        kind: str,
        fields: dict[str, Any] | None = None,
        items: list[Any] | None = None,
        raw: dict[str, str] | None = None,
    ) -> None:
        self.kind = kind
        self._values = fields or {}
        self._raw = raw
        self.items = items or []

    def get(self, key: str, default: Any = None) -> Any:
        """The value of field ``key``."""
        values = self._values
        if key in values:
            return values[key]
        raw = self._raw
        if raw is not None and key in raw:
            value = values[key] = _simple(raw[key])
            return value
        return default

    def has(self, key: str) -> bool:
        """Whether the node has field ``key``."""
        return key in self._values or (self._raw is not None and key in self._raw)

    def flags(self, key: str = "flags") -> frozenset[str]:
        """The words of a flags field (``DIFlagA | DIFlagB``)."""
        value = self.get(key)
        return frozenset(_FLAG_OR.split(value)) if isinstance(value, str) else frozenset()


class MetadataError(ValueError):
    """A metadata body this parser cannot read."""


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    raw = _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text)
    return raw.encode("latin-1", errors="replace").decode("utf-8", errors="replace")


def _skip(s: str, i: int) -> int:
    return _SPACE.match(s, i).end()  # type: ignore[union-attr]


def _value(s: str, i: int) -> tuple[Any, int]:
    """One metadata value of body ``s`` at ``i``, and the position after it."""
    i = _skip(s, i)
    if i >= len(s):
        raise MetadataError("value expected")
    c = s[i]
    if c == '"':
        m = _STRING.match(s, i)
        if m is None:
            raise MetadataError("unterminated string")
        return _unescape(m.group(1)), m.end()
    if c == "!":
        nxt = s[i + 1 : i + 2]
        if nxt.isdigit():
            m = _INT.match(s, i + 1)
            assert m is not None
            return Ref(int(m.group())), m.end()
        if nxt == '"':
            return _value(s, i + 1)
        if nxt == "{":
            items, i = _sequence(s, i + 2, "}")
            return Node("", items=items), i
        m = _WORD.match(s, i + 1)
        if m is None or s[m.end() : m.end() + 1] != "(":
            raise MetadataError(f"cannot read {s[i : i + 20]!r}")
        fields, i = _fields(s, m.end() + 1)
        return Node(m.group(), fields), i
    if c == "-" or c.isdigit():
        m = _INT.match(s, i)
        if m is None:
            raise MetadataError(f"cannot read {s[i : i + 20]!r}")
        return int(m.group()), m.end()
    m = _WORD.match(s, i)
    if m is not None:
        word, j = m.group(), m.end()
        if word == "null":
            return None, j
        k = _skip(s, j)
        if s.startswith("|", k):  # flags: A | B | C
            words = [word]
            while s.startswith("|", k):
                m = _WORD.match(s, _skip(s, k + 1))
                if m is None:
                    raise MetadataError(f"flag expected in {s[k : k + 20]!r}")
                words.append(m.group())
                k = _skip(s, m.end())
            return " | ".join(words), k
        if k > j and k < len(s) and s[k] not in ",)}":  # a typed constant: i64 0, ptr @g
            return _value(s, k)
        return word, j
    if c == "@" or c == "%":  # a global or local name
        m = _STRING.match(s, i + 1) if s[i + 1 : i + 2] == '"' else _WORD.match(s, i + 1)
        if m is None:
            raise MetadataError(f"cannot read {s[i : i + 20]!r}")
        return s[i : m.end()], m.end()
    raise MetadataError(f"cannot read {s[i : i + 20]!r}")


def _sequence(s: str, i: int, close: str) -> tuple[list[Any], int]:
    items: list[Any] = []
    i = _skip(s, i)
    if s.startswith(close, i):
        return items, i + 1
    while True:
        value, i = _value(s, i)
        items.append(value)
        i = _skip(s, i)
        if s.startswith(",", i):
            i += 1
        elif s.startswith(close, i):
            return items, i + 1
        else:
            raise MetadataError(f"',' or {close!r} expected at {s[i : i + 20]!r}")


def _fields(s: str, i: int) -> tuple[dict[str, Any], int]:
    fields: dict[str, Any] = {}
    i = _skip(s, i)
    if s.startswith(")", i):
        return fields, i + 1
    while True:
        m = _KEY.match(s, i)
        if m is None:
            raise MetadataError(f"field name expected at {s[i : i + 20]!r}")
        fields[m.group(1)], i = _value(s, m.end())
        i = _skip(s, i)
        if s.startswith(",", i):
            i += 1
        elif s.startswith(")", i):
            return fields, i + 1
        else:
            raise MetadataError(f"',' or ')' expected at {s[i : i + 20]!r}")


def _simple(raw: str) -> Any:
    """A value the fast path matched: a string, ``!N``, a number, ``null``, a typed number or words."""
    c = raw[:1]
    if c == '"':
        return _unescape(raw[1:-1])
    if c == "!":
        return Ref(int(raw[1:]))
    if c == "-" or c.isdigit():
        return int(raw)
    if raw == "null":
        return None
    if " " in raw and "|" not in raw:  # i64 0
        last = raw.rsplit(" ", 1)[1]
        return int(last) if last.lstrip("-").isdigit() else last
    return raw


def parse_node(body: str) -> Node | None:
    """A node from the text after ``!N = [distinct]``; None when it is not one this parser reads."""
    m = _FAST_NODE.fullmatch(body)
    if m is not None:
        return Node(m.group(1), raw=dict(_FAST_FIELD.findall(m.group(2))))
    m = _FAST_TUPLE.fullmatch(body)
    if m is not None:
        return Node("", items=[_simple(v) for v in m.group(1).split(", ")] if m.group(1) else [])
    try:
        value, _ = _value(body, 0)
    except (MetadataError, IndexError):
        return None
    return value if isinstance(value, Node) else None


def _parameter(text: str, start: int, end: int) -> tuple[int, int, str] | None:
    """Scope, position and name of the parameter variable at ``text[start:end]``, if it is one."""
    m = _ARG_FAST.match(text, start, end)
    if m is not None:
        return int(m.group(3)), int(m.group(2)), _unescape(m.group(1))
    var = parse_node(text[start:end]) if "arg: " in text[start:end] else None
    if var is None:
        return None
    scope, arg, name = var.get("scope"), var.get("arg"), var.get("name")
    if isinstance(scope, Ref) and isinstance(arg, int) and isinstance(name, str):
        return int(scope), arg, name
    return None


def _outside_quotes(s: str, start: int = 0, depth: int = 0) -> Iterator[tuple[int, str, int]]:
    """Each character of ``s`` from ``start`` outside double-quoted strings, with the
    bracket depth once it is read (``depth`` before the first)."""
    quoted = False
    for i in range(start, len(s)):
        c = s[i]
        if quoted:
            if c == '"' and s[i - 1] != "\\":
                quoted = False
            continue
        if c == '"':
            quoted = True
            continue
        if c in "([{<":
            depth += 1
        elif c in ")]}>":
            depth -= 1
        yield i, c, depth


def split_top(s: str, sep: str) -> list[str]:
    """``s`` split at ``sep`` outside brackets and quotes, parts stripped, empty ones dropped."""
    parts, start = [], 0
    for i, c, depth in _outside_quotes(s):
        if c == sep and depth == 0:
            parts.append(s[start:i].strip())
            start = i + 1
    parts.append(s[start:].strip())
    return [p for p in parts if p]


def _number(value: Any) -> TypeGuard[int]:
    """Whether a field value is an integer (not a node reference)."""
    return isinstance(value, int) and not isinstance(value, Ref)


def _join(base: str, declarator: str) -> str:
    return f"{base} {declarator}" if declarator else base


class _Reader:
    """Metadata of one module, parsed on demand, and the type descriptions built from it.

    LLVM prints the numbered metadata last, one node a line, in increasing order: a sparse
    index (one line every few kilobytes) narrows a node's search to a short stretch of text.
    Should the order not hold, every node line is indexed instead.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self._start = _first_node_line(text)
        self._sample_ids: list[int] = []
        self._sample_at: list[int] = []
        self._all: dict[int, str] | None = None
        self._nodes: dict[int, Node | None] = {}
        self.types: dict[str, dict[str, Any]] = {}
        self._aligns: dict[str, int] = {}
        self._names: dict[tuple[int, bool], str] = {}
        self.cxx = False
        self.params: dict[tuple[int, int], str] = {}
        self._pending: list[Any] = []
        self._draining = False
        if self._start < 0:
            return
        pos, end = self._start, len(text)
        while pos < end:
            m = _NODE_ID.match(text, pos)
            if m is None or (self._sample_ids and int(m.group(1)) <= self._sample_ids[-1]):
                self._all = self._index_all()
                break
            self._sample_ids.append(int(m.group(1)))
            self._sample_at.append(pos)
            pos = text.find("\n", pos + _SAMPLE_STRIDE) + 1
            if pos == 0 or text.startswith("\n", pos) or pos >= end:
                break

    def _index_all(self) -> dict[int, str]:
        return {int(k): body for k, body in _NODE_LINE.findall(self.text, self._start)}

    def read_parameter_names(self, scopes: set[int]) -> None:
        """Names of the parameters (``DILocalVariable`` with an ``arg``) of subprograms ``scopes``."""
        text, pos = self.text, max(self._start, 0)
        while True:
            pos = text.find("!DILocalVariable(", pos)
            if pos < 0:
                return
            end = text.find("\n", pos)
            end = len(text) if end < 0 else end
            found = _parameter(text, pos, end)
            if found is not None and found[0] in scopes:
                self.params.setdefault((found[0], found[1]), found[2])
            pos = end

    def _body(self, n: int) -> str | None:
        """The text of node ``!n`` after ``!n = [distinct]``."""
        if self._all is not None:
            return self._all.get(n)
        k = bisect.bisect_right(self._sample_ids, n) - 1
        if k < 0:
            self._all = self._index_all()
            return self._all.get(n)
        text = self.text
        if self._sample_ids[k] == n:
            start = self._sample_at[k]
        else:
            stop = self._sample_at[k + 1] if k + 1 < len(self._sample_at) else len(text)
            found = text.find(f"\n!{n} = ", self._sample_at[k], stop)
            if found < 0:
                self._all = self._index_all()  # out of order after all, or not there
                return self._all.get(n)
            start = found + 1
        end = text.find("\n", start)
        m = _NODE_LINE.match(text, start, len(text) if end < 0 else end)
        return m.group(2) if m is not None else None

    def node(self, ref: Any) -> Node | None:
        """Node ``!ref`` (None for null, a missing node or one that cannot be read)."""
        if isinstance(ref, Node):
            return ref
        if not isinstance(ref, Ref):
            return None
        n = int(ref)
        if n not in self._nodes:
            body = self._body(n)
            self._nodes[n] = parse_node(body) if body is not None else None
        return self._nodes[n]

    def items(self, ref: Any) -> list[Any]:
        """The items of tuple ``ref`` (empty if it is none)."""
        node = self.node(ref)
        return node.items if node is not None and node.kind == "" else []

    # -- C spelling -------------------------------------------------------------------

    def strip(self, ref: Any) -> Any:
        """``ref`` with typedefs and qualifiers removed (None for void)."""
        for _ in range(64):
            node = self.node(ref)
            if node is None or node.kind != "DIDerivedType":
                return ref
            tag = node.get("tag")
            if tag != "DW_TAG_typedef" and tag not in _QUALIFIERS:
                return ref
            ref = node.get("baseType")
        return ref

    def qualified(self, node: Node) -> str:
        """A typedef's, record's or enum's name, with its C++ namespaces and classes."""
        name = str(node.get("name") or "")
        if not self.cxx:
            return name
        scope = self.node(node.get("scope"))
        for _ in range(32):
            if scope is None or scope.kind not in ("DINamespace", "DICompositeType"):
                break
            if scope.kind == "DICompositeType" or not scope.has("exportSymbols"):  # std::__1 is inline
                name = f"{scope.get('name') or '(anonymous namespace)'}::{name}"
            scope = self.node(scope.get("scope"))
        return name

    def spell(self, ref: Any, declarator: str = "", depth: int = 0) -> str:
        """C spelling of type ``ref`` around ``declarator`` (``int (*f)(int)``)."""
        if not declarator and isinstance(ref, Ref) and (int(ref), self.cxx) in self._names:
            return self._names[int(ref), self.cxx]
        node = self.node(ref)
        text = self._spell(node, declarator, depth) if depth < 64 else _join("...", declarator)
        if not declarator and isinstance(ref, Ref):
            self._names[int(ref), self.cxx] = text
        return text

    def _spell(self, node: Node | None, declarator: str, depth: int) -> str:
        if node is None:
            return _join("void", declarator)
        kind = node.kind
        if kind == "DIBasicType":
            return _join(str(node.get("name") or "?"), declarator)
        if kind == "DISubroutineType":
            types = self.items(node.get("types"))
            ret, params = (types[0], types[1:]) if types else (None, [])
            spelled = [self.spell(p, "", depth + 1) if p is not None else "..." for p in params]
            return self.spell(ret, f"{declarator}({', '.join(spelled) or 'void'})", depth + 1)
        tag = node.get("tag")
        base = node.get("baseType")
        if kind == "DIDerivedType":
            if tag == "DW_TAG_typedef":
                return _join(self.qualified(node), declarator)
            if tag in _POINTERS:
                inner = _POINTERS[tag] + declarator
                target = self.node(base)
                if target is not None and (
                    target.kind == "DISubroutineType" or target.get("tag") == "DW_TAG_array_type"
                ):
                    inner = f"({inner})"
                return self.spell(base, inner, depth + 1)
            if tag in _QUALIFIERS:
                word = _QUALIFIERS[tag]
                target = self.node(base)
                if target is not None and target.get("tag") in _POINTERS:
                    return self.spell(base, _join(word, declarator), depth + 1)  # char *const p
                return _join(word, self.spell(base, declarator, depth + 1)) if word else self.spell(base, declarator)
            if tag == "DW_TAG_ptr_to_member_type":
                owner = self.node(node.get("extraData"))
                prefix = self.qualified(owner) if owner is not None else "?"
                return self.spell(base, f"{prefix}::*{declarator}", depth + 1)
            return _join(str(node.get("name") or tag or "?"), declarator)
        if kind == "DICompositeType":
            if tag == "DW_TAG_array_type":
                dims = "".join("[]" if c is None else f"[{c}]" for c in self._dims(node))
                return self.spell(base, f"{declarator}{dims}", depth + 1)
            word = {"DW_TAG_enumeration_type": "enum", "DW_TAG_union_type": "union"}.get(tag, "struct")
            name = self.qualified(node)
            if not name:
                return _join(f"{word} <anonymous>", declarator)
            return _join(name if self.cxx else f"{word} {name}", declarator)
        return _join(str(node.get("name") or kind), declarator)

    def _dims(self, node: Node) -> list[int | None]:
        """Element counts of an array type, outermost first (None: unknown, e.g. a flexible member)."""
        dims: list[int | None] = []
        for sub in self.items(node.get("elements")):
            sub_node = self.node(sub)
            count = sub_node.get("count") if sub_node is not None else None
            if _number(count):
                dims.append(count if count >= 0 else None)
            elif sub_node is not None and _number(sub_node.get("upperBound")):
                lower = sub_node.get("lowerBound", 0)
                dims.append(sub_node.get("upperBound") - (lower if _number(lower) else 0) + 1)
            else:
                dims.append(None)
        return dims

    # -- descriptions -----------------------------------------------------------------

    def resolve(self, ref: Any) -> str | None:
        """The type id of ``ref`` (None for void), describing it and every type it reaches once.

        What a pointer points to is described afterwards, from a work list: long chains of
        records that point to one another do not deepen the recursion.
        """
        tid = self._describe_now(ref)
        if not self._draining:
            self._draining = True
            try:
                while self._pending:
                    self._describe_now(self._pending.pop())
            finally:
                self._draining = False
        return tid

    def _type_id(self, ref: Any) -> str:
        return f"!{int(ref)}" if isinstance(ref, Ref) else f"!inline{id(ref)}"

    def _describe_now(self, ref: Any) -> str | None:
        if ref is None:
            return None
        tid = self._type_id(ref)
        if tid not in self.types:
            self.types[tid] = desc = {}  # placeholder until it is described
            desc.update(self._describe(ref, tid))
        return tid

    def _describe(self, ref: Any, tid: str) -> dict[str, Any]:
        name = self.spell(ref)
        core_ref = self.strip(ref)
        core = self.node(core_ref)
        if core_ref is None:
            self._aligns[tid] = 1
            return {"kind": "void", "name": name}
        if core is None:
            return self._unsupported(tid, name, "its debug information is missing")
        kind, tag = core.kind, core.get("tag")
        size = core.get("size", 0) // 8 if isinstance(core.get("size"), int) else 0
        if kind == "DIBasicType" and tag in (None, "DW_TAG_base_type"):
            encoding = core.get("encoding")
            self._aligns[tid] = min(size, 16) or 1
            if encoding == "DW_ATE_boolean":
                return {"kind": "bool", "name": name, "size": size}
            if encoding in _SIGNED or encoding in _UNSIGNED:
                return {"kind": "int", "name": name, "size": size, "signed": encoding in _SIGNED}
            if encoding == "DW_ATE_float":
                return {"kind": "float", "name": name, "size": size}
            what = "complex numbers" if encoding == "DW_ATE_complex_float" else f"{encoding} values"
            return self._unsupported(tid, name, f"{what} have no ctypes equivalent")
        if kind == "DIDerivedType" and tag in _POINTERS:
            base = core.get("baseType")
            target = self.node(self.strip(base))
            to = None if base is None else self._type_id(base)
            if to is not None and to not in self.types:
                self._pending.append(base)
            self._aligns[tid] = size or 8
            is_char = (
                target is not None
                and target.kind == "DIBasicType"
                and target.get("size") == 8
                and (target.get("encoding") in _SIGNED or target.get("encoding") in _UNSIGNED)
            )
            is_function = target is not None and target.kind == "DISubroutineType"
            return {"kind": "pointer", "name": name, "to": to, "char": is_char, "function": is_function}
        if kind == "DICompositeType":
            if tag == "DW_TAG_enumeration_type":
                return self._enum(core, tid, name, size)
            if tag == "DW_TAG_array_type":
                return self._array(core, tid, name)
            if tag in ("DW_TAG_structure_type", "DW_TAG_class_type", "DW_TAG_union_type"):
                return self._record(core, tid, name, size)
        if kind == "DISubroutineType":
            return self._unsupported(tid, name, "it is a function type")
        if tag == "DW_TAG_ptr_to_member_type":
            return self._unsupported(tid, name, "C++ member pointers have no ctypes equivalent")
        return self._unsupported(tid, name, f"{tag or kind} has no ctypes equivalent", size)

    def _unsupported(self, tid: str, name: str, why: str, size: int = 0) -> dict[str, Any]:
        self._aligns[tid] = min(size, 16) or 1
        return {"kind": "unsupported", "name": name, "why": why}

    def _enum(self, core: Node, tid: str, name: str, size: int) -> dict[str, Any]:
        values: dict[str, int] = {}
        for item in self.items(core.get("elements")):
            e = self.node(item)
            if e is not None and isinstance(e.get("name"), str) and isinstance(e.get("value"), int):
                values[e.get("name")] = e.get("value")
        base = self.node(self.strip(core.get("baseType")))
        if base is not None and base.kind == "DIBasicType":
            signed = base.get("encoding") in _SIGNED
        else:
            signed = any(v < 0 for v in values.values()) or not values
        self._aligns[tid] = min(size, 16) or 1
        tag_name = core.get("name") or None
        return {"kind": "enum", "name": name, "tag": tag_name, "size": size, "signed": signed, "values": values}

    def _array(self, core: Node, tid: str, name: str) -> dict[str, Any]:
        if "DIFlagVector" in core.flags():
            return self._unsupported(tid, name, "vector types have no ctypes equivalent", core.get("size", 0) // 8)
        dims = self._dims(core)
        if not dims:
            return self._unsupported(tid, name, "an array of unknown shape")
        if any(d is None for d in dims[1:]) or any(isinstance(d, int) and d < 0 for d in dims):
            return self._unsupported(tid, name, "an array of variable length")
        element = self._describe_now(core.get("baseType"))
        element_align = self._aligns.get(element, 1) if element is not None else 1
        of = element
        # int a[2][3]: an array of 2 arrays of 3; the inner ones get ids of their own.
        for level in range(len(dims) - 1, 0, -1):
            inner = f"{tid}[{level}]"
            suffix = "".join(f"[{d}]" for d in dims[level:])
            base_name = self.spell(core.get("baseType"))
            self.types[inner] = {"kind": "array", "name": _join(base_name, suffix), "of": of, "count": dims[level]}
            self._aligns[inner] = element_align
            of = inner
        self._aligns[tid] = element_align
        return {"kind": "array", "name": name, "of": of, "count": dims[0] or 0}

    def _record(self, core: Node, tid: str, name: str, size: int) -> dict[str, Any]:
        flags = core.flags()
        kind = "union" if core.get("tag") == "DW_TAG_union_type" else "struct"
        tag_name = core.get("name") or None
        if "DIFlagFwdDecl" in flags or not (core.has("elements") or core.has("size")):
            self._aligns[tid] = 1
            return {"kind": "opaque", "name": name}
        if "DIFlagTypePassByReference" in flags:
            return self._unsupported(tid, name, "a C++ class that is not trivially copyable", size)
        fields: list[dict[str, Any]] = []
        natural = 1
        packed = False
        for item in self.items(core.get("elements")):
            member = self.node(item)
            if member is None or member.kind != "DIDerivedType":
                continue  # methods, template parameters, nested types
            member_tag = member.get("tag")
            member_flags = member.flags()
            if member_tag not in ("DW_TAG_member", "DW_TAG_inheritance") or "DIFlagStaticMember" in member_flags:
                continue
            if "DIFlagVirtual" in member_flags:
                return self._unsupported(tid, name, "a C++ class with a virtual base", size)
            field_type = self._describe_now(member.get("baseType"))
            if field_type is None:
                continue
            offset_bits = member.get("offset", 0)
            align = self._aligns.get(field_type, 1)
            if isinstance(member.get("align"), int) and member.get("align"):
                align = max(align, member.get("align") // 8)
            natural = max(natural, align)
            field: dict[str, Any] = {"name": member.get("name", "") if member_tag == "DW_TAG_member" else ""}
            field["type"] = field_type
            if "DIFlagBitField" in member_flags:
                unit_bits = 8 * max(self._size_of(member.get("baseType")), 1)
                field["offset"] = offset_bits // unit_bits * unit_bits // 8
                field["bit_size"] = member.get("size", 0)
                field["bit_offset"] = offset_bits % unit_bits
            else:
                field["offset"] = offset_bits // 8
                packed = packed or field["offset"] % align != 0
            fields.append(field)
        explicit = core.get("align")
        if isinstance(explicit, int) and explicit:
            natural = explicit // 8
        elif packed or (size and size % natural):
            natural = 1
        self._aligns[tid] = natural
        return {"kind": kind, "name": name, "tag": tag_name, "size": size, "align": natural, "fields": fields}

    def _size_of(self, ref: Any) -> int:
        node = self.node(self.strip(ref))
        size = node.get("size") if node is not None else None
        return size // 8 if isinstance(size, int) else 0


def _ir_type(types: dict[str, dict[str, Any]], ir: str, attrs: list[str]) -> tuple[str | None, str]:
    """Type id and C spelling of an IR parameter or return type (registered in ``types``)."""
    desc: dict[str, Any]
    in_memory = any(a.startswith(("byval", "sret", "inalloca", "preallocated")) for a in attrs)
    if in_memory or ir.startswith(("{", "[", "%")):
        tid, desc = "ir:by-value", {"kind": "unsupported", "name": "struct", "why": _BY_VALUE_WHY}
    elif ir == "void":
        return None, "void"
    elif ir == "ptr" or ir.startswith("ptr "):
        tid, desc = "ir:ptr", {"kind": "pointer", "name": "void *", "to": None, "char": False, "function": False}
    elif ir == "i1":
        tid, desc = "ir:bool", {"kind": "bool", "name": "_Bool", "size": 1}
    elif re.fullmatch(r"i(8|16|32|64|128)", ir):
        bits = int(ir[1:])
        signed = "zeroext" not in attrs
        prefix = "" if signed else "u"
        tid = f"ir:{prefix}{ir}"
        desc = {"kind": "int", "name": f"{prefix}int{bits}_t", "size": bits // 8, "signed": signed}
    elif ir in ("half", "bfloat", "float", "double", "x86_fp80", "fp128", "ppc_fp128"):
        size = {"half": 2, "bfloat": 2, "float": 4, "double": 8}.get(ir, 16)
        name = {"float": "float", "double": "double"}.get(ir, "long double" if size == 16 else ir)
        tid, desc = f"ir:{ir}", {"kind": "float", "name": name, "size": size}
    else:
        tid, desc = f"ir:{ir}", {"kind": "unsupported", "name": ir, "why": f"the IR type {ir} has no C equivalent"}
    types.setdefault(tid, desc)
    return tid, str(desc["name"])


def _from_ir(types: dict[str, dict[str, Any]], name: str, head: list[str], params: list[str]) -> dict[str, Any]:
    """A signature from the IR types of a ``define`` line (no debug information)."""
    ret_type = head[-1] if head else "void"
    if ret_type.startswith("addrspace(") and len(head) > 1:
        ret_type = head[-2]
    ret, ret_c = _ir_type(types, ret_type, head[:-1])
    out_params, spelled, vararg = [], [], False
    for k, param in enumerate(params, start=1):
        if param == "...":
            vararg = True
            continue
        words = split_top(param, " ")
        attrs = words[1:]
        param_name = attrs[-1][1:].strip('"') if attrs and attrs[-1].startswith("%") else ""
        if not param_name or param_name.isdigit():
            param_name = f"arg{k}"
        tid, c = _ir_type(types, words[0], attrs)
        out_params.append({"name": param_name, "type": tid})
        spelled.append(f"{c}{'' if c.endswith('*') else ' '}{param_name}")
    if vararg:
        spelled.append("...")
    c_decl = f"{ret_c}{'' if ret_c.endswith('*') else ' '}{name}({', '.join(spelled) or 'void'})"
    return {"ret": ret, "params": out_params, "vararg": vararg, "c": c_decl}


def _from_dwarf(reader: _Reader, symbol: str, sp_id: int) -> dict[str, Any] | None:
    """A signature from a function's DISubprogram ``!sp_id``, or None when it has no usable type."""
    sp = reader.node(Ref(sp_id))
    if sp is None or sp.kind != "DISubprogram":
        return None
    subroutine = reader.node(sp.get("type"))
    types = reader.items(subroutine.get("types")) if subroutine is not None else []
    if not types:  # line tables only, or synthesised debug information
        return None
    unit = reader.node(sp.get("unit"))
    language = str(unit.get("language", "")) if unit is not None else ""
    reader.cxx = "plus_plus" in language
    ret_ref, param_refs = types[0], types[1:]
    vararg = bool(param_refs) and param_refs[-1] is None
    if vararg:
        param_refs = param_refs[:-1]
    params, spelled = [], []
    for k, ref in enumerate(param_refs, start=1):
        name = reader.params.get((sp_id, k)) or f"arg{k}"
        params.append({"name": name, "type": reader.resolve(ref)})
        spelled.append(reader.spell(ref, name))
    if vararg:
        spelled.append("...")
    prototyped = "DIFlagPrototyped" in sp.flags()
    arguments = ", ".join(spelled) or ("void" if prototyped or reader.cxx else "")
    c_decl = reader.spell(ret_ref, f"{sp.get('name') or symbol}({arguments})")
    if symbol.startswith("_Z"):
        from cbuild.build.demangle import demangle

        demangled = demangle(symbol)
        if demangled != symbol:
            c_decl = demangled
    return {"ret": reader.resolve(ret_ref), "params": params, "vararg": vararg, "c": c_decl}


#: ``@name = [linkage, visibility, ...] alias TYPE, ptr @target``.
_ALIAS = re.compile(
    r'^@("(?:[^"\\]|\\.)*"|[\w.$-]+) = ((?:[a-z_]+ )*)alias [^,]+, ptr @("(?:[^"\\]|\\.)*"|[\w.$-]+)\s*$', re.MULTILINE
)
#: Words of an alias that keep it inside the module.
_NOT_EXPORTED = {"private", "internal", "hidden"}


def read_signatures(ir_text: str, exported: Iterable[str] | None = None) -> dict[str, Any]:
    """Signatures of the externally visible functions defined in textual IR ``ir_text``.

    Returns ``{"types": {id: description}, "functions": {symbol: {"ret", "params",
    "vararg", "c"}}}``; ``exported`` limits it to those symbols. The return and parameter
    types are type ids (None for void); a description has a ``kind`` and a ``name``
    (see :mod:`cbuild.run.ctypes_map`).
    """
    wanted = set(exported) if exported is not None else None
    found: list[tuple[str, list[str], str, int | None]] = []
    for symbol, head, params, line, close in exported_defines(ir_text):
        if symbol.startswith("__instrbudget") or (wanted is not None and symbol not in wanted):
            continue
        dbg = _DBG.search(line, close)
        found.append((symbol, head, params, int(dbg.group(1)) if dbg else None))
    reader = _Reader(ir_text)
    reader.read_parameter_names({sp for *_, sp in found if sp is not None})
    functions: dict[str, Any] = {}
    for symbol, head, params, sp_id in found:
        signature = _from_dwarf(reader, symbol, sp_id) if sp_id is not None else None
        if signature is None:
            signature = _from_ir(reader.types, symbol, head, split_top(params, ","))
        functions[symbol] = signature
    # An alias of a function is called as it (a library's multiversioned function, resolved when it
    # was built to the version for its CPU: ``@f = alias ..., ptr @f.sse4.2.1``).
    for m in _ALIAS.finditer(ir_text):
        if _NOT_EXPORTED.intersection(m.group(2).split()):
            continue
        name, target = (_unescape(g[1:-1]) if g.startswith('"') else g for g in (m.group(1), m.group(3)))
        if target in functions and name not in functions and (wanted is None or name in wanted):
            functions[name] = functions[target]
    return {"types": reader.types, "functions": functions}


def exported_defines(ir_text: str) -> Iterator[tuple[str, list[str], str, str, int]]:
    """Each externally visible function defined in textual IR: its symbol, the words of its
    ``define`` line before the name (linkage, attributes, result type), its parameter list's
    text, the line, and where the parameter list closes in it."""
    for line in _define_lines(ir_text):
        name_match = _DEFINED_NAME.search(line)
        if name_match is None:
            continue
        head = split_top(line[len("define ") : name_match.start()], " ")
        if _LOCAL_LINKAGES.intersection(head) or "hidden" in head:
            continue
        symbol = name_match.group(1)
        symbol = _unescape(symbol[1:-1]) if symbol.startswith('"') else symbol
        close = _closing_paren(line, name_match.end())
        yield symbol, head, line[name_match.end() : close], line, close


def _define_lines(text: str) -> Iterable[str]:
    """The ``define`` lines of a module (found by a plain search: cheap on large modules)."""
    pos = 0 if text.startswith("define ") else text.find("\ndefine ") + 1
    if pos == 0 and not text.startswith("define "):
        return
    while True:
        end = text.find("\n", pos)
        end = len(text) if end < 0 else end
        yield text[pos:end]
        pos = text.find("\ndefine ", end) + 1
        if pos == 0:
            return


def _first_node_line(text: str) -> int:
    """Where the first numbered metadata line (``!0 = ...``) starts, or -1."""
    pos = text.find("\n!")
    while pos >= 0:
        if text[pos + 2 : pos + 3].isdigit():
            return pos + 1
        pos = text.find("\n!", pos + 2)
    return -1


def _closing_paren(line: str, start: int) -> int:
    """Index of the ``)`` closing the parameter list that opens before ``start``."""
    for i, _, depth in _outside_quotes(line, start, depth=1):
        if depth == 0:
            return i
    return len(line)
