"""C signatures of exported functions, read from clang's DWARF metadata (cbuild.build.signatures)."""

from __future__ import annotations

import ctypes
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from cbuild import Builder, BuildOptions, IrCountModel, run_program
from cbuild.build import codegen
from cbuild.build.compile import compile_command, compile_unit
from cbuild.build.demangle import demangle
from cbuild.build.signatures import parse_node, read_signatures
from cbuild.run.ctypes_map import TypeMap, UnsupportedType

EXAMPLE = Path(__file__).parent.parent / "example_project"
DATA = Path(__file__).parent / "data"

TYPES_C = r"""
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

uint8_t u8(uint8_t x) { return x; }
uint16_t u16(uint16_t x) { return x; }
uint32_t u32(uint32_t x) { return x; }
uint64_t u64(uint64_t x) { return x; }
int8_t i8(int8_t x) { return x; }
int16_t i16(int16_t x) { return x; }
int32_t i32(int32_t x) { return x; }
int64_t i64(int64_t x) { return x; }
bool flip(bool b) { return !b; }
char first(char c, signed char s, unsigned char u) { return (char)(c + s + u); }
double scale(float f, double d, long double ld) { return f * d * (double)ld; }

enum color { RED, GREEN = 5, BLUE = -2 };
typedef enum { SMALL = 1, LARGE = 1000 } size_class;
enum color next_color(enum color c, size_class s) { return (enum color)(c + (int)s); }

typedef struct { uint64_t low64; uint64_t high64; } XXH128_hash_t;
XXH128_hash_t mix(uint64_t a, uint64_t b) { XXH128_hash_t h = { a ^ b, a + b }; return h; }

struct point { int32_t x; double y; };
struct point shifted(struct point p, int32_t dx) { p.x += dx; return p; }

union number { int64_t i; double d; unsigned char bytes[8]; };
int64_t as_int(union number n) { return n.i; }

struct flags { unsigned ready : 1; unsigned mode : 3; int level : 4; uint16_t count; };
unsigned flag_mode(struct flags f) { return f.mode; }
struct perm { unsigned r : 1, w : 1, x : 1; unsigned rest : 29; };
unsigned writable(struct perm p) { return p.w; }

struct record { char name[16]; int32_t grid[2][3]; const char *label; struct record *next; };
size_t record_size(const struct record *r) { return sizeof *r + (r->next != 0); }

const char *version(void) { return "v1"; }
char *const *names(char *const *list) { return list; }
void *memory(const void *p, volatile int *v) { *v = 1; return (void *)p; }

int apply(int (*fn)(int, const char *), int x) { return fn(x, "x"); }
typedef uint32_t (*hash_fn)(const uint8_t *data, size_t len);
uint32_t run_hash(hash_fn h, const uint8_t *data, size_t len) { return h(data, len); }

int sum(int n, ...) {
    va_list ap;
    va_start(ap, n);
    int s = 0;
    for (int i = 0; i < n; i++) s += va_arg(ap, int);
    va_end(ap);
    return s;
}
void nothing(void) {}

struct handle;
struct handle *handle_open(const char *path);
int handle_close(struct handle *h) { return h != 0; }

static int helper(int x) { return x * 2; }
int use_helper(int x) { return helper(x); }
__attribute__((visibility("hidden"))) int hidden_fn(int x) { return x; }
__attribute__((weak)) int weak_fn(int x) { return x + 1; }
int __instrbudget_private(int x) { return x; }
"""

CXX = r"""
#include <cstddef>
#include <cstdint>
namespace geo {
struct point { int32_t x, y; };
enum class dir : uint8_t { north, south = 200 };
point mid(const point &a, point b, dir d, std::size_t n) { return a; }
}
int add(int a, int b) { return a + b; }
double add(double a, double b) { return a + b; }
struct Shape { virtual ~Shape(); int sides; int count() const; };
Shape::~Shape() {}
int Shape::count() const { return sides; }
extern "C" int plain(const char *s) { return s[0]; }
inline int inl(int x) { return x; }
int use_inl() { return inl(3); }
"""

Doc = dict[str, Any]


def linked_ir(builder: Builder, sources: Sequence[Path], options: BuildOptions | None = None) -> str:
    """The sources compiled as a build compiles them, linked by llvmlite (what a build reads)."""
    options = options or BuildOptions()
    units = [compile_unit(builder.toolchain, builder.cache, path, options) for path in sources]
    return str(codegen.link([codegen.parse(u.ir_path.read_text(), name=str(u.source)) for u in units]))


class Sigs:
    """A signatures document with helpers to follow its type ids."""

    def __init__(self, doc: Doc) -> None:
        self.doc = doc
        self.types: dict[str, Doc] = doc["types"]
        self.functions: dict[str, Doc] = doc["functions"]

    def type(self, tid: str | None) -> Doc:
        return {"kind": "void", "name": "void"} if tid is None else self.types[tid]

    def ret(self, fn: str) -> Doc:
        return self.type(self.functions[fn]["ret"])

    def param(self, fn: str, index: int) -> Doc:
        return self.type(self.functions[fn]["params"][index]["type"])

    def names(self, fn: str) -> list[str]:
        return [p["name"] for p in self.functions[fn]["params"]]

    def field(self, record: Doc, name: str) -> tuple[Doc, Doc]:
        (f,) = [f for f in record["fields"] if f["name"] == name]
        return f, self.type(f["type"])


@pytest.fixture(scope="module")
def c_sigs(builder: Builder, tmp_path_factory: pytest.TempPathFactory) -> Sigs:
    source = tmp_path_factory.mktemp("sig") / "types.c"
    source.write_text(TYPES_C)
    return Sigs(read_signatures(linked_ir(builder, [source])))


def test_compile_command_asks_for_full_debug_info(builder: Builder) -> None:
    cmd = compile_command(builder.toolchain, Path("x.c"), BuildOptions(), Path("x.ll"))
    assert "-g" in cmd
    assert "-gline-tables-only" not in cmd


@pytest.mark.parametrize(
    ("fn", "name", "size", "signed"),
    [
        ("u8", "uint8_t", 1, False),
        ("u16", "uint16_t", 2, False),
        ("u32", "uint32_t", 4, False),
        ("u64", "uint64_t", 8, False),
        ("i8", "int8_t", 1, True),
        ("i16", "int16_t", 2, True),
        ("i32", "int32_t", 4, True),
        ("i64", "int64_t", 8, True),
    ],
)
def test_fixed_width_integers(c_sigs: Sigs, fn: str, name: str, size: int, signed: bool) -> None:
    expected = {"kind": "int", "name": name, "size": size, "signed": signed}
    assert c_sigs.ret(fn) == expected
    assert c_sigs.param(fn, 0) == expected
    assert c_sigs.names(fn) == ["x"]
    assert c_sigs.functions[fn]["c"] == f"{name} {fn}({name} x)"
    assert c_sigs.functions[fn]["vararg"] is False


def test_bool_char_and_floats(c_sigs: Sigs) -> None:
    assert c_sigs.ret("flip") == {"kind": "bool", "name": "_Bool", "size": 1}
    assert c_sigs.ret("first") == {"kind": "int", "name": "char", "size": 1, "signed": True}
    assert [c_sigs.param("first", i)["name"] for i in range(3)] == ["char", "signed char", "unsigned char"]
    assert [c_sigs.param("first", i)["signed"] for i in range(3)] == [True, True, False]
    assert [c_sigs.param("scale", i) for i in range(3)] == [
        {"kind": "float", "name": "float", "size": 4},
        {"kind": "float", "name": "double", "size": 8},
        {"kind": "float", "name": "long double", "size": 16},
    ]
    with pytest.raises(UnsupportedType, match="128-bit float"):
        TypeMap(c_sigs.types).ctype(c_sigs.functions["scale"]["params"][2]["type"])


def test_enums_keep_their_values_and_tag(c_sigs: Sigs) -> None:
    color = c_sigs.ret("next_color")
    assert color == {
        "kind": "enum",
        "name": "enum color",
        "tag": "color",
        "size": 4,
        "signed": True,
        "values": {"RED": 0, "GREEN": 5, "BLUE": -2},
    }
    size_class = c_sigs.param("next_color", 1)
    assert size_class["name"] == "size_class"
    assert size_class["tag"] is None
    assert size_class["values"] == {"SMALL": 1, "LARGE": 1000}
    assert size_class["signed"] is False  # no negative value: clang makes it unsigned int
    assert c_sigs.functions["next_color"]["c"] == "enum color next_color(enum color c, size_class s)"


def test_struct_of_two_uint64_returned_by_value(c_sigs: Sigs, builder: Builder, tmp_path: Path) -> None:
    ret = c_sigs.ret("mix")
    assert ret["kind"] == "struct"
    assert ret["name"] == "XXH128_hash_t"
    assert ret["tag"] is None
    assert (ret["size"], ret["align"]) == (16, 8)
    assert [(f["name"], f["offset"], c_sigs.type(f["type"])["name"]) for f in ret["fields"]] == [
        ("low64", 0, "uint64_t"),
        ("high64", 8, "uint64_t"),
    ]
    assert c_sigs.functions["mix"]["c"] == "XXH128_hash_t mix(uint64_t a, uint64_t b)"
    cls = TypeMap(c_sigs.types).ctype(c_sigs.functions["mix"]["ret"])
    assert ctypes.sizeof(cls) == 16
    assert cls.high64.offset == 8


def test_the_ir_alone_does_not_show_the_struct(builder: Builder, tmp_path: Path) -> None:
    source = tmp_path / "types.c"
    source.write_text(TYPES_C)
    ir = linked_ir(builder, [source])
    assert re.search(r"^define .*\{ i64, i64 \} @mix\(", ir, re.M)


def test_struct_and_union_passed_by_value(c_sigs: Sigs) -> None:
    point = c_sigs.param("shifted", 0)
    assert (point["kind"], point["name"], point["tag"], point["size"], point["align"]) == (
        "struct",
        "struct point",
        "point",
        16,
        8,
    )
    assert [(f["name"], f["offset"]) for f in point["fields"]] == [("x", 0), ("y", 8)]
    assert c_sigs.ret("shifted")["name"] == "struct point"
    number = c_sigs.param("as_int", 0)
    assert (number["kind"], number["name"], number["size"]) == ("union", "union number", 8)
    assert [(f["name"], f["offset"]) for f in number["fields"]] == [("i", 0), ("d", 0), ("bytes", 0)]
    _, array = c_sigs.field(number, "bytes")
    assert (array["kind"], array["name"], array["count"]) == ("array", "unsigned char [8]", 8)
    types = TypeMap(c_sigs.types)
    assert ctypes.sizeof(types.ctype(c_sigs.functions["shifted"]["params"][0]["type"])) == 16
    assert ctypes.sizeof(types.ctype(c_sigs.functions["as_int"]["params"][0]["type"])) == 8


def test_bitfields(c_sigs: Sigs) -> None:
    flags = c_sigs.param("flag_mode", 0)
    assert flags["size"] == 4
    assert [(f["name"], f["offset"], f.get("bit_offset"), f.get("bit_size")) for f in flags["fields"]] == [
        ("ready", 0, 0, 1),
        ("mode", 0, 1, 3),
        ("level", 0, 4, 4),
        ("count", 2, None, None),
    ]
    assert c_sigs.type(flags["fields"][2]["type"])["signed"] is True
    perm = c_sigs.param("writable", 0)
    cls = TypeMap(c_sigs.types).ctype(c_sigs.functions["writable"]["params"][0]["type"])
    assert ctypes.sizeof(cls) == perm["size"] == 4
    value = cls(r=1, w=0, x=1, rest=5)
    assert int.from_bytes(bytes(value), "little") == 1 | 4 | 5 << 3


def test_arrays_pointers_and_self_reference(c_sigs: Sigs) -> None:
    pointer = c_sigs.param("record_size", 0)
    assert pointer["kind"] == "pointer"
    assert pointer["name"] == "const struct record *"
    assert pointer["char"] is False
    assert pointer["function"] is False
    record = c_sigs.type(pointer["to"])
    assert record["name"] == "const struct record"
    assert record["kind"] == "struct"
    assert record["tag"] == "record"
    field, name = c_sigs.field(record, "name")
    assert (name["kind"], name["name"], name["count"], field["offset"]) == ("array", "char [16]", 16, 0)
    field, grid = c_sigs.field(record, "grid")
    assert (grid["name"], grid["count"], field["offset"]) == ("int32_t [2][3]", 2, 16)
    row = c_sigs.type(grid["of"])
    assert (row["kind"], row["name"], row["count"]) == ("array", "int32_t [3]", 3)
    assert c_sigs.type(row["of"])["name"] == "int32_t"
    field, label = c_sigs.field(record, "label")
    assert (label["name"], label["char"], field["offset"]) == ("const char *", True, 40)
    _, nxt = c_sigs.field(record, "next")
    assert nxt["name"] == "struct record *"
    assert c_sigs.type(nxt["to"])["fields"] == record["fields"]  # the cycle ends in a finished description
    cls = TypeMap(c_sigs.types).ctype(pointer["to"])
    assert ctypes.sizeof(cls) == record["size"] == 56


def test_char_pointers_and_qualifiers(c_sigs: Sigs) -> None:
    version = c_sigs.ret("version")
    assert version == {"kind": "pointer", "name": "const char *", "to": version["to"], "char": True, "function": False}
    assert c_sigs.type(version["to"]) == {"kind": "int", "name": "const char", "size": 1, "signed": True}
    assert c_sigs.functions["version"]["c"] == "const char *version(void)"
    names = c_sigs.param("names", 0)
    assert names["name"] == "char *const *"
    inner = c_sigs.type(names["to"])
    assert (inner["kind"], inner["name"], inner["char"]) == ("pointer", "char *const", True)
    assert c_sigs.type(inner["to"])["name"] == "char"  # the chars are writable; the pointer is not
    assert c_sigs.functions["names"]["c"] == "char *const *names(char *const *list)"
    const_void = c_sigs.param("memory", 0)
    assert const_void["name"] == "const void *"
    assert c_sigs.type(const_void["to"]) == {"kind": "void", "name": "const void"}
    assert c_sigs.ret("memory") == {"kind": "pointer", "name": "void *", "to": None, "char": False, "function": False}
    assert c_sigs.type(c_sigs.param("memory", 1)["to"])["name"] == "volatile int"
    buffer = c_sigs.param("run_hash", 1)
    assert buffer["name"] == "const uint8_t *"
    assert buffer["char"] is True
    assert c_sigs.type(buffer["to"]) == {"kind": "int", "name": "const uint8_t", "size": 1, "signed": False}


def test_function_pointers(c_sigs: Sigs) -> None:
    fn = c_sigs.param("apply", 0)
    assert (fn["kind"], fn["name"], fn["function"], fn["char"]) == (
        "pointer",
        "int (*)(int, const char *)",
        True,
        False,
    )
    assert c_sigs.functions["apply"]["c"] == "int apply(int (*fn)(int, const char *), int x)"
    typedefd = c_sigs.param("run_hash", 0)
    assert (typedefd["kind"], typedefd["name"], typedefd["function"]) == ("pointer", "hash_fn", True)
    assert c_sigs.type(typedefd["to"])["name"] == "uint32_t (const uint8_t *, size_t)"


def test_variadic_and_void(c_sigs: Sigs) -> None:
    assert c_sigs.functions["sum"]["vararg"] is True
    assert c_sigs.names("sum") == ["n"]
    assert c_sigs.functions["sum"]["c"] == "int sum(int n, ...)"
    assert c_sigs.functions["nothing"] == {"ret": None, "params": [], "vararg": False, "c": "void nothing(void)"}


def test_opaque_struct_pointer(c_sigs: Sigs) -> None:
    handle = c_sigs.param("handle_close", 0)
    assert handle["name"] == "struct handle *"
    assert c_sigs.type(handle["to"]) == {"kind": "opaque", "name": "struct handle"}
    assert "handle_open" not in c_sigs.functions  # declared, not defined


def test_only_exported_definitions(c_sigs: Sigs) -> None:
    assert "helper" not in c_sigs.functions
    assert "hidden_fn" not in c_sigs.functions
    assert "__instrbudget_private" not in c_sigs.functions
    assert "use_helper" in c_sigs.functions
    assert "weak_fn" in c_sigs.functions  # a weak definition is still exported


def test_exported_restricts(builder: Builder, tmp_path: Path) -> None:
    source = tmp_path / "types.c"
    source.write_text(TYPES_C)
    doc = read_signatures(linked_ir(builder, [source]), exported=["mix", "version", "no_such"])
    assert sorted(doc["functions"]) == ["mix", "version"]
    # Only the types those functions reach are described.
    assert {t["name"] for t in doc["types"].values()} == {"XXH128_hash_t", "uint64_t", "const char *", "const char"}


def test_cxx(builder: Builder, tmp_path: Path) -> None:
    source = tmp_path / "shapes.cpp"
    source.write_text(CXX)
    sigs = Sigs(read_signatures(linked_ir(builder, [source])))
    assert "_Z3inli" not in sigs.functions  # inline: linkonce_odr
    assert {"_Z3addii", "_Z3adddd", "_ZNK5Shape5countEv", "plain", "_Z7use_inlv"} <= set(sigs.functions)
    mid = next(s for s in sigs.functions if s.startswith("_ZN3geo3mid"))
    if demangle("_Z3addii") != "_Z3addii":
        assert sigs.functions["_Z3addii"]["c"] == "add(int, int)"
        assert sigs.functions["_Z3adddd"]["c"] == "add(double, double)"
        assert sigs.functions[mid]["c"] == "geo::mid(geo::point const&, geo::point, geo::dir, unsigned long)"
    assert sigs.param("_Z3adddd", 0) == {"kind": "float", "name": "double", "size": 8}
    assert sigs.names(mid) == ["a", "b", "d", "n"]
    ref = sigs.param(mid, 0)
    assert (ref["kind"], ref["name"]) == ("pointer", "const geo::point &")
    point = sigs.type(ref["to"])
    assert (point["kind"], point["name"], point["tag"], point["size"]) == ("struct", "const geo::point", "point", 8)
    assert sigs.param(mid, 1)["name"] == "geo::point"
    assert sigs.ret(mid)["name"] == "geo::point"
    direction = sigs.param(mid, 2)
    assert (direction["kind"], direction["name"], direction["size"], direction["signed"]) == (
        "enum",
        "geo::dir",
        1,
        False,
    )
    assert direction["values"] == {"north": 0, "south": 200}
    assert sigs.param(mid, 3)["name"] == "std::size_t"
    this = sigs.param("_ZNK5Shape5countEv", 0)
    assert sigs.names("_ZNK5Shape5countEv") == ["this"]
    assert this["name"] == "const Shape *"
    shape = sigs.type(this["to"])
    assert shape["kind"] == "unsupported"
    assert "trivially copyable" in shape["why"]
    assert sigs.functions["plain"]["c"] == "int plain(const char *s)"


def test_unused_parameters_keep_their_names_at_O2(builder: Builder, tmp_path: Path) -> None:
    source = tmp_path / "unused.c"
    source.write_text(
        "int ignore(int used, int unused, const char *also_unused) { return used; }\n"
        "int none(int a, int b) { return 7; }\n"
    )
    ir = linked_ir(builder, [source], BuildOptions(opt_level="2"))
    sigs = Sigs(read_signatures(ir))
    assert sigs.names("ignore") == ["used", "unused", "also_unused"]
    assert sigs.names("none") == ["a", "b"]
    # Without the variables (optimised away), the positions name them.
    stripped = "\n".join(line for line in ir.split("\n") if "!DILocalVariable(" not in line)
    sigs = Sigs(read_signatures(stripped))
    assert sigs.names("ignore") == ["arg1", "arg2", "arg3"]
    assert sigs.functions["ignore"]["c"] == "int ignore(int arg1, int arg2, const char *arg3)"


@pytest.mark.parametrize("flag", ["-g0", "-gline-tables-only"])
def test_without_debug_types_the_ir_types_are_used(builder: Builder, tmp_path: Path, flag: str) -> None:
    source = tmp_path / "types.c"
    source.write_text(TYPES_C)
    ir = linked_ir(builder, [source], BuildOptions(cflags=(flag,)))
    sigs = Sigs(read_signatures(ir))
    assert sigs.ret("u8") == {"kind": "int", "name": "uint8_t", "size": 1, "signed": False}  # zeroext
    assert sigs.ret("i8") == {"kind": "int", "name": "int8_t", "size": 1, "signed": True}  # signext
    assert sigs.ret("u64") == {"kind": "int", "name": "int64_t", "size": 8, "signed": True}  # no attribute
    assert sigs.ret("flip") == {"kind": "bool", "name": "_Bool", "size": 1}
    assert sigs.param("scale", 1) == {"kind": "float", "name": "double", "size": 8}
    assert sigs.param("scale", 2)["size"] == 16  # long double
    assert sigs.ret("version") == {"kind": "pointer", "name": "void *", "to": None, "char": False, "function": False}
    mix = sigs.ret("mix")
    assert mix["kind"] == "unsupported"
    assert "-g" in mix["why"]
    assert sigs.param("flag_mode", 0)["kind"] == "int"  # a small struct travels as an integer: not detectable
    assert sigs.functions["sum"]["vararg"] is True
    assert sigs.functions["nothing"] == {"ret": None, "params": [], "vararg": False, "c": "void nothing(void)"}
    assert sigs.functions["i32"]["c"] == "int32_t i32(int32_t arg1)"
    assert "helper" not in sigs.functions
    assert "hidden_fn" not in sigs.functions


def test_record_passed_in_memory_without_debug_types(builder: Builder, tmp_path: Path) -> None:
    source = tmp_path / "big.c"
    source.write_text(
        "struct big { long a, b, c; };\n"
        "long first(struct big b) { return b.a; }\n"
        "struct big make(long a) { struct big b = { a, a, a }; return b; }\n"
    )
    sigs = Sigs(read_signatures(linked_ir(builder, [source], BuildOptions(opt_level="0", cflags=("-g0",)))))
    assert sigs.param("first", 0)["kind"] == "unsupported"  # byval
    assert sigs.param("make", 0)["kind"] == "unsupported"  # sret
    sigs = Sigs(read_signatures(linked_ir(builder, [source], BuildOptions(opt_level="0"))))
    assert sigs.param("first", 0)["name"] == "struct big"
    assert sigs.ret("make")["size"] == 24
    assert sigs.names("make") == ["a"]


def test_example_project_signatures(builder: Builder) -> None:
    sources = sorted((EXAMPLE / "src").glob("*.c"))
    options = BuildOptions(include_dirs=(EXAMPLE / "include",))
    sigs = Sigs(read_signatures(linked_ir(builder, sources, options)))
    header = (EXAMPLE / "include" / "minikit.h").read_text()
    declared = set(re.findall(r"\b(mk_\w+)\(", header))
    assert declared <= set(sigs.functions)
    assert sigs.functions["mk_map_get"]["c"] == "int mk_map_get(const mk_map *m, const char *key, int64_t *out)"
    handle = sigs.type(sigs.param("mk_map_get", 0)["to"])  # opaque in the header, defined in hashmap.c
    assert (handle["kind"], handle["name"]) == ("struct", "const mk_map")
    assert sigs.type(sigs.param("mk_map_get", 2)["to"])["name"] == "int64_t"  # written back
    assert sigs.functions["mk_ring_write"]["c"] == "size_t mk_ring_write(mk_ring *r, const uint8_t *data, size_t n)"
    for fn in sigs.functions.values():
        assert all(not p["type"].startswith("ir:") for p in fn["params"])


HAND_WRITTEN_IR = r"""
define i32 @"f.q"(i32 noundef %0, ptr noundef %p) !dbg !3 {
  ret i32 %0
}

define internal i32 @g(i32 %x) !dbg !3 {
  ret i32 %x
}

define hidden i32 @h(i32 %x) {
  ret i32 %x
}

define zeroext i16 @plain_ir(i8 signext %a, i64 %count, ptr sret({ i64, i64, i64 }) %out, double %d, ...) {
  ret i16 0
}

!llvm.dbg.cu = !{!0}

!5 = !{!6, !6, !7}
!3 = distinct !DISubprogram(name: "f.q", type: !4, unit: !0, flags: DIFlagPrototyped, spFlags: DISPFlagDefinition)
!4 = !DISubroutineType(types: !5)
!0 = distinct !DICompileUnit(language: DW_LANG_C11, file: !1, emissionKind: FullDebug)
!1 = !DIFile(filename: "x.c", directory: "/")
!6 = !DIBasicType(name: "caf\C3\A9_t", size: 32, encoding: DW_ATE_signed)
!7 = !DIDerivedType(tag: DW_TAG_pointer_type, baseType: !8, size: 64)
!8 = !DICompositeType(tag: DW_TAG_structure_type, name: "s, \22q\22", size: 32, elements: !{!9, !DIExpression()})
!9 = !DIDerivedType(tag: DW_TAG_member, name: "v", baseType: !6, size: 32, flags: DIFlagPublic | DIFlagBitField)
!10 = !DILocalVariable(arg: 2, name: "p", scope: !3, type: !7)
"""


def test_hand_written_metadata_out_of_order() -> None:
    sigs = Sigs(read_signatures(HAND_WRITTEN_IR))
    assert sorted(sigs.functions) == ["f.q", "plain_ir"]
    fq = sigs.functions["f.q"]
    assert fq["c"] == 'café_t f.q(café_t arg1, struct s, "q" *p)'
    record = sigs.type(sigs.param("f.q", 1)["to"])
    assert record["tag"] == 's, "q"'
    assert record["fields"] == [{"name": "v", "type": "!6", "offset": 0, "bit_size": 32, "bit_offset": 0}]
    plain = sigs.functions["plain_ir"]
    assert plain["vararg"] is True
    assert sigs.ret("plain_ir") == {"kind": "int", "name": "uint16_t", "size": 2, "signed": False}
    assert [sigs.param("plain_ir", i)["name"] for i in range(4)] == ["int8_t", "int64_t", "struct", "double"]
    assert sigs.param("plain_ir", 2)["kind"] == "unsupported"
    assert plain["c"] == "uint16_t plain_ir(int8_t a, int64_t count, struct out, double d, ...)"


def test_metadata_values() -> None:
    node = parse_node(
        "!DICompositeType(tag: DW_TAG_array_type, baseType: !4, size: -1, flags: DIFlagVector | DIFlagPublic, "
        'elements: !{!5, null}, name: "a\\5Cb", extraData: i64 -3, annotations: !{!"x", i32 7})'
    )
    assert node is not None
    assert node.kind == "DICompositeType"
    assert node.get("baseType") == 4
    assert node.get("size") == -1
    assert node.get("extraData") == -3
    assert node.flags() == {"DIFlagVector", "DIFlagPublic"}
    assert node.get("elements").items == [5, None]
    assert node.get("name") == "a\\b"
    assert node.get("annotations").items == ["x", 7]
    assert parse_node("!{}").items == []  # type: ignore[union-attr]
    assert parse_node("not metadata") is None


def _table(builder: Builder, sources: Sequence[Path], options: BuildOptions) -> list[tuple[Any, ...]]:
    """Each block's function, size and source lines."""
    table = builder.build(list(sources), options=options, kind="library", keep_main=True).table()
    return [(b.function, b.size, b.file, b.line, b.lines) for b in table.blocks]


@pytest.mark.parametrize("opt_level", ["0", "2"])
def test_full_debug_info_does_not_change_the_counted_code(builder: Builder, opt_level: str) -> None:
    sources = sorted((EXAMPLE / "src").glob("*.c"))
    include = (EXAMPLE / "include",)
    full = _table(builder, sources, BuildOptions(opt_level=opt_level, include_dirs=include))
    for flag in ("-gline-tables-only", "-g0"):
        other = _table(builder, sources, BuildOptions(opt_level=opt_level, include_dirs=include, cflags=(flag,)))
        if flag == "-g0":  # no lines at all
            other = [(f, size) for f, size, *_ in other]
            assert other == [(f, size) for f, size, *_ in full]
        else:
            assert other == full, flag
    assert sum(size for _, size, *_ in full) > 500
    assert sum(1 for *_, line, _ in full if line > 0) > len(full) // 2  # the lines are there to compare


@pytest.mark.parametrize("opt_level", ["0", "2"])
def test_full_debug_info_does_not_change_exact_counts(builder: Builder, opt_level: str) -> None:
    totals = []
    for flags in ((), ("-gline-tables-only",)):
        artifact = builder.build([DATA / "regions.c"], options=BuildOptions(opt_level=opt_level, cflags=flags))
        run = run_program(artifact, ["3"])
        assert run.counts is not None
        (cost,) = IrCountModel().evaluate(run.counts)
        totals.append((cost.total, run.counts.counts))
    assert totals[0] == totals[1]
    assert totals[0][0] > 0


def _many_functions(n: int) -> str:
    parts = ["#include <stdint.h>\n#include <stddef.h>\n"]
    for i in range(n):
        parts.append(
            f"typedef struct s{i} {{ uint32_t a; int64_t b[{i % 7 + 1}]; const char *name; struct s{i} *next; }} "
            f"s{i}_t;\n"
            f"enum e{i} {{ E{i}_A, E{i}_B = {i} }};\n"
            f"int64_t f{i}(s{i}_t *p, const uint8_t *data, size_t n, enum e{i} e) {{\n"
            f"  int64_t acc = e;\n"
            f"  for (size_t k = 0; k < n; k++) acc += data[k] * p->b[k % {i % 7 + 1}] + (p->next ? p->next->a : 0);\n"
            f"  return acc;\n}}\n"
        )
    return "".join(parts)


def test_large_module_has_every_signature(builder: Builder, tmp_path: Path) -> None:
    # Its speed is not asserted here (a loaded machine failed a wall-clock bound): only what it reads.
    source = tmp_path / "many.c"
    source.write_text(_many_functions(300))
    ir = linked_ir(builder, [source], BuildOptions(opt_level="0"))
    assert len(ir) > 5_000_000
    doc = read_signatures(ir)
    assert len(doc["functions"]) == 300
    assert doc["functions"]["f7"]["c"] == "int64_t f7(s7_t *p, const uint8_t *data, size_t n, enum e7 e)"
