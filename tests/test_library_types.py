"""Library calls see the C types the sources declare (taken from their debug info)."""

from __future__ import annotations

import ctypes
import enum
import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cbuild import Builder, CBuildError, Library, Pointer, SignatureError
from cbuild.run.ctypes_map import without_qualifiers

TYPES_C = r"""
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

uint8_t  neg8(uint8_t x)   { return (uint8_t)-x; }
uint16_t neg16(uint16_t x) { return (uint16_t)-x; }
uint32_t neg32(uint32_t x) { return (uint32_t)-x; }
uint64_t neg64(uint64_t x) { return (uint64_t)-x; }
int8_t   minus8(int8_t x)  { return (int8_t)-x; }
int64_t  minus64(int64_t x) { return -x; }
bool     is_even(uint32_t x) { return (x & 1) == 0; }
bool     negate(bool b) { return !b; }

enum color { RED, GREEN = 5, BLUE };
int32_t color_code(const enum color *c) { return (int32_t)*c; }  /* before the by-value uses */
enum color next_color(enum color c) { return c == RED ? GREEN : c == GREEN ? BLUE : RED; }

typedef struct { uint64_t low64; uint64_t high64; } hash128;
hash128 mix(uint64_t a, uint64_t b) { hash128 h = { a ^ b, a + b }; return h; }
uint64_t fold(hash128 h) { return h.low64 ^ (h.high64 * 31u); }

typedef struct { int32_t x; int32_t y; } vec2;  /* reached only through const pointers */
int32_t dot(const vec2 *a, const vec2 *b) { return a->x * b->x + a->y * b->y; }
typedef enum { LOW, HIGH = 7 } level;
int32_t level_of(const level *l) { return (int32_t)*l; }

struct point { int32_t x; double y; };
int32_t point_x(const struct point *p) { return p->x; }
struct point shifted(struct point p, int32_t dx) { p.x += dx; p.y *= 2; return p; }

const char *version(void) { return "v1.2.3"; }

struct counter { uint64_t value; char name[16]; };
struct counter *counter_new(const char *name) {
    struct counter *c = calloc(1, sizeof *c);
    strncpy(c->name, name, sizeof c->name - 1);
    return c;
}
uint64_t counter_add(struct counter *c, uint64_t by) { return c->value += by; }
const char *counter_name(const struct counter *c) { return c->name; }
void counter_free(struct counter *c) { free(c); }

size_t fill(uint8_t *out, size_t n, uint8_t start) {
    for (size_t i = 0; i < n; i++) out[i] = (uint8_t)(start + i);
    return n;
}
size_t length(const char *s) { return strlen(s); }
unsigned misalignment(const void *p) { return (unsigned)((uintptr_t)p % 64); }
unsigned text_misalignment(const char **p) { return (unsigned)((uintptr_t)*p % 64); }
unsigned strings_misalignment(const char *const *s) {
    unsigned m = (unsigned)((uintptr_t)s % 64);
    for (; *s != NULL; s++) m |= (unsigned)((uintptr_t)*s % 64);
    return m;
}

typedef struct { uint64_t head, tail; unsigned char data[72]; } ring_t;  /* 88 bytes */
void ring_init(ring_t *r) { memset(r, 0, sizeof *r); r->tail = 7; }
uint64_t ring_tail(const ring_t *r) { return r->tail; }
ring_t *ring_new(void) { ring_t *r = calloc(1, sizeof *r); r->tail = 3; return r; }
void ring_free(ring_t *r) { free(r); }
void ring_new_into(ring_t **out) { *out = ring_new(); }
bool is_null(const ring_t *r) { return r == NULL; }
int64_t sum32(const int32_t *xs, size_t n) { int64_t s = 0; for (size_t i = 0; i < n; i++) s += xs[i]; return s; }
size_t count_nonzero(const unsigned char *p, size_t n) { size_t k = 0; while (n--) k += *p++ != 0; return k; }
size_t zero_bytes(void *p, size_t n) { memset(p, 0, n); return n; }
"""


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory, builder: Builder) -> Iterator[Library]:
    source = tmp_path_factory.mktemp("types") / "types.c"
    source.write_text(TYPES_C)
    with Library(builder.build([source], kind="library")) as library:
        yield library


@pytest.mark.parametrize(
    ("name", "bits"),
    [("neg8", 8), ("neg16", 16), ("neg32", 32), ("neg64", 64)],
)
def test_unsigned_results_are_non_negative(lib: Library, name: str, bits: int) -> None:
    fn: Callable[[int], int] = lib.function(name)
    assert fn(1) == (1 << bits) - 1
    assert fn((1 << bits) - 1) == 1
    assert fn(0) == 0
    with pytest.raises(SignatureError, match=rf"{name}\(\) argument 1 \(uint{bits}_t\): -1 is out of range"):
        fn(-1)
    with pytest.raises(SignatureError, match=rf"{1 << bits} is out of range \[0, {(1 << bits) - 1}\]"):
        fn(1 << bits)


def test_uint64_has_its_full_range(lib: Library) -> None:
    assert lib.neg64(3304406505380291936) == 15142337568329259680


def test_signed_results(lib: Library) -> None:
    assert lib.minus8(-128) == -128
    assert lib.minus8(5) == -5
    assert lib.minus64(-(1 << 63) + 1) == (1 << 63) - 1
    with pytest.raises(SignatureError, match=r"minus8\(\) argument 1 \(int8_t\): 128 is out of range \[-128, 127\]"):
        lib.minus8(128)


def test_bool(lib: Library) -> None:
    assert lib.is_even(4) is True
    assert lib.is_even(5) is False
    assert lib.negate(True) is False
    assert lib.negate(False) is True


def test_enum_values_come_back_named(lib: Library) -> None:
    color = lib.c_type("color")
    assert issubclass(color, enum.IntEnum)
    assert {m.name: m.value for m in color} == {"RED": 0, "GREEN": 5, "BLUE": 6}
    result = lib.next_color(color.GREEN)
    assert result is color.BLUE
    assert lib.next_color(0) == color.GREEN


def test_struct_of_two_uint64_returned_and_passed_by_value(lib: Library) -> None:
    h = lib.mix(1 << 63, 3)
    assert type(h) is lib.c_type("hash128")
    assert [name for name, *_ in h._fields_] == ["low64", "high64"]
    assert (h.low64, h.high64) == ((1 << 63) ^ 3, (1 << 63) + 3)
    assert lib.fold(h) == (h.low64 ^ (h.high64 * 31)) % (1 << 64)
    assert lib.fold({"low64": 7, "high64": 1}) == 7 ^ 31
    assert lib.fold((7, 1)) == 7 ^ 31
    with pytest.raises(SignatureError, match=r"fold\(\) argument 1 \(hash128\): expected hash128"):
        lib.fold(7)


def test_struct_with_padding_by_value(lib: Library) -> None:
    point = lib.c_type("point")
    assert point.y.offset == 8
    p = lib.shifted(point(x=1, y=1.5), 41)
    assert (p.x, p.y) == (42, 3.0)
    # The type itself, not the const one that point_x's parameter reaches first.
    assert type(p) is point
    assert lib.point_x(ctypes.byref(p)) == 42


def test_enum_reached_through_const_pointer_first_is_the_same_enum(lib: Library) -> None:
    color = lib.c_type("color")
    assert lib.next_color(color.RED) is color.GREEN
    assert lib.color_code(ctypes.byref(ctypes.c_int(color.BLUE))) == 6


def test_types_reached_only_through_const_pointers_are_found_by_name(lib: Library) -> None:
    vec2 = lib.c_type("vec2")
    assert vec2.__name__ == "vec2"
    assert [name for name, _ in vec2._fields_] == ["x", "y"]
    a, b = vec2(x=2, y=3), vec2(x=5, y=7)
    assert lib.dot(ctypes.byref(a), ctypes.byref(b)) == 2 * 5 + 3 * 7
    level = lib.c_type("level")
    assert lib.c_type("const level") is level
    assert level.__name__ == "level"
    assert level.HIGH == 7
    assert lib.level_of(ctypes.byref(ctypes.c_int(level.HIGH))) == 7


@pytest.mark.parametrize(
    ("spelled", "name"),
    [
        ("const vec2", "vec2"),
        ("const volatile struct p", "struct p"),
        ("const ns::Foo<const int>", "ns::Foo<const int>"),
        ("ns::Foo<int, const char *>", "ns::Foo<int, const char *>"),
        ("vec2", "vec2"),
    ],
)
def test_qualifiers_are_dropped_only_where_a_type_name_starts(spelled: str, name: str) -> None:
    assert without_qualifiers(spelled) == name


def test_const_char_result_is_readable(lib: Library) -> None:
    v = lib.version()
    assert isinstance(v, Pointer)
    assert v.c_type == "const char *"
    assert bytes(v) == b"v1.2.3"
    assert v.string() == b"v1.2.3"
    assert (v + 1).read(3) == b"1.2"
    with pytest.raises(ctypes.ArgumentError, match=r"points into the library's process.*\.string\(\)"):
        ctypes.string_at(v)  # type: ignore[call-overload]


def test_pointer_handle_passed_between_calls(lib: Library) -> None:
    c = lib.counter_new(b"hits")
    assert isinstance(c, Pointer)
    assert lib.counter_add(c, 5) == 5
    assert lib.counter_add(c, (1 << 64) - 1) == 4  # wraps as uint64_t does
    assert lib.counter_name(c).string() == b"hits"
    lib.counter_free(c)


def test_buffers_are_written_back(lib: Library) -> None:
    out = bytearray(5)
    assert lib.fill(out, 5, 250) == 5
    assert out == bytes([250, 251, 252, 253, 254])
    arr = (ctypes.c_uint8 * 3)()
    lib.fill(arr, 3, 7)
    assert list(arr) == [7, 8, 9]
    assert lib.length(b"four") == 4
    with pytest.raises(SignatureError, match=r"length\(\) argument 1 \(const char \*\): got str"):
        lib.length("four")


ADDRESS_REFUSED = (
    "an address of this process means nothing in the library's process; pass the buffer itself (bytes, "
    "bytearray, a ctypes array or structure), a pointer a function of the library returned, or None for NULL"
)


def test_a_ctypes_pointer_to_a_raw_address_is_refused(lib: Library) -> None:
    """``cast(address, POINTER(c_char))`` copied one item of the test process's memory at the
    address to the library's: never what it meant."""
    buf = ctypes.create_string_buffer(b"a,b,c")
    address = ctypes.addressof(buf)
    with pytest.raises(SignatureError) as refused:
        lib.length(ctypes.cast(address, ctypes.POINTER(ctypes.c_char)))
    assert str(refused.value) == (
        f"length() argument 1 (const char *): got a ctypes pointer to c_char at 0x{address:x}, which points into "
        f"no ctypes object it keeps: {ADDRESS_REFUSED}"
    )


def test_an_int_or_c_void_p_is_an_address_in_the_librarys_process(lib: Library) -> None:
    """A handle a function gave back through a ``void **`` out-parameter is passed back as it is (an
    int or a c_void_p holding an address of the library's process); 0 and ``c_void_p()`` are NULL."""
    handle = ctypes.c_void_p()
    lib.ring_new_into(ctypes.byref(handle))
    assert handle.value
    assert lib.ring_tail(handle) == 3
    assert lib.ring_tail(handle.value) == 3
    lib.ring_free(handle)
    assert lib.is_null(0) is True
    assert lib.is_null(None) is True
    assert lib.is_null(ctypes.c_void_p()) is True


def test_memory_smaller_than_the_type_it_points_to_is_refused(lib: Library) -> None:
    """ring_init's memset wrote 88 bytes into a copy of 4 in the library's process (the test passed,
    and a later one crashed in the process's garbage collector)."""
    where = "ring_init() argument 1 (ring_t *)"
    with pytest.raises(SignatureError) as refused:
        lib.ring_init(bytearray(4))
    assert str(refused.value) == (
        f"{where}: bytearray bytearray(b'\\x00\\x00\\x00\\x00') is 4 bytes, smaller than the ring_t it points "
        "to (88 bytes); pass at least 88 bytes"
    )
    with pytest.raises(SignatureError) as refused:
        lib.ring_init((ctypes.c_uint8 * 87)())
    assert str(refused.value) == (
        f"{where}: a ctypes array of 87 c_ubyte is 87 bytes, smaller than the ring_t it points to (88 bytes); "
        "pass at least 88 bytes"
    )
    with pytest.raises(SignatureError) as refused:
        lib.ring_init(ctypes.byref(lib.c_type("vec2")()))
    assert str(refused.value) == (
        f"{where}: byref() of vec2 is 8 bytes, smaller than the ring_t it points to (88 bytes); pass at least 88 bytes"
    )
    with pytest.raises(SignatureError) as refused:
        lib.ring_tail(b"abc")
    assert str(refused.value) == (
        "ring_tail() argument 1 (const ring_t *): bytes b'abc' is 3 bytes, smaller than the ring_t it points to "
        "(88 bytes); pass at least 88 bytes"
    )
    with pytest.raises(SignatureError) as refused:
        lib.sum32(bytearray(3), 1)
    assert str(refused.value) == (
        "sum32() argument 1 (const int32_t *): bytearray bytearray(b'\\x00\\x00\\x00') is 3 bytes, smaller than "
        "the int32_t it points to (4 bytes); pass at least 4 bytes"
    )


def test_pointer_arguments_the_library_can_use_are_accepted(lib: Library) -> None:
    assert lib.length(b"a,b,c") == 5  # bytes for a const char *
    assert lib.length(b"") == 0
    ring_t = lib.c_type("ring_t")
    assert ctypes.sizeof(ring_t) == 88
    out = bytearray(88)  # an out-buffer
    lib.ring_init(out)
    assert int.from_bytes(out[8:16], "little") == 7
    assert lib.ring_tail(bytes(out)) == 7
    lib.ring_init(bytearray(100))  # more than one is fine
    ring = ring_t(head=1, tail=2)
    lib.ring_init(ring)  # a ctypes Structure of the right size
    assert (ring.head, ring.tail) == (0, 7)
    ring.tail = 9
    assert lib.ring_tail(ctypes.byref(ring)) == 9
    assert lib.ring_tail(ctypes.pointer(ring)) == 9
    rings = (ring_t * 2)()
    lib.ring_init(rings)
    assert rings[0].tail == 7
    assert lib.is_null(None) is True  # None for NULL
    returned = lib.ring_new()  # a pointer the library returned, passed back to it
    assert isinstance(returned, Pointer)
    assert lib.ring_tail(returned) == 3
    lib.ring_init(returned)
    assert lib.ring_tail(returned) == 7
    assert lib.is_null(returned) is False
    lib.ring_free(returned)
    # Pointers to single bytes, or to nothing in particular, take memory of any length.
    assert lib.count_nonzero(b"", 0) == 0
    assert lib.count_nonzero(bytearray(b"\0\1\2"), 3) == 2
    assert lib.zero_bytes(bytearray(3), 3) == 3
    assert lib.zero_bytes(bytearray(), 0) == 0
    assert lib.misalignment(bytearray(1)) == 0
    # Empty memory is a count of 0.
    assert lib.sum32((ctypes.c_int32 * 0)(), 0) == 0
    assert lib.sum32(b"", 0) == 0
    assert lib.sum32(bytearray(), 0) == 0
    # A pointer read back from an array of pointers (its pointee kept by the array).
    a, b = ctypes.c_int32(7), ctypes.c_int32(8)
    pointers = (ctypes.POINTER(ctypes.c_int32) * 2)(ctypes.pointer(a), ctypes.pointer(b))
    assert lib.sum32(pointers[1], 1) == 8
    # Memory from an offset into an array: as an object of its own (byref's offset is refused, below).
    numbers = (ctypes.c_int32 * 4)(1, 2, 3, 4)
    assert lib.sum32((ctypes.c_int32 * 2).from_buffer(numbers, 8), 2) == 7
    with pytest.raises(SignatureError) as refused:
        lib.sum32(ctypes.byref(numbers, 8), 2)
    assert str(refused.value) == (
        "sum32() argument 1 (const int32_t *): byref() with an offset (8 bytes) is not taken; pass the memory "
        "from there as a ctypes object of its own, e.g. (ctypes.c_int * n).from_buffer(array, 8)"
    )
    assert lib.sum32((ctypes.c_int32 * 2)(5, 6), 2) == 11
    # A ctypes pointer to a ctypes object the test holds is that object's memory.
    text = ctypes.create_string_buffer(b"four")
    assert lib.length(ctypes.pointer(text)) == 4


def test_unknown_type_name(lib: Library) -> None:
    with pytest.raises(CBuildError, match="declares no struct, union or enum 'nothing'"):
        lib.c_type("nothing")


def test_static_state_starts_from_zero_in_each_process(builder: Builder, tmp_path: Path) -> None:
    source = tmp_path / "state.c"
    source.write_text("static int calls;\nint bump(void) { return ++calls; }\n")
    artifact = builder.build([source], kind="library")
    for _ in range(2):
        with Library(artifact) as library:
            assert [library.bump() for _ in range(3)] == [1, 2, 3]


def test_closed_hosts_are_reaped_and_a_stuck_one_is_killed(
    tmp_path: Path, builder: Builder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Closing does not wait for the host to exit; it is reaped later, or killed after its grace."""
    from cbuild.run import hosts

    source = tmp_path / "types.c"
    source.write_text(TYPES_C)
    artifact = builder.build([source], kind="library")
    with Library(artifact) as library:
        assert library.neg8(1) == 2**8 - 1
        exiting = library.host.process
    hosts._reap(block=True)
    assert exiting.returncode == 0
    assert all(process is not exiting for _, process in hosts._exiting)

    monkeypatch.setattr(hosts, "EXIT_GRACE", 0.2)
    with Library(artifact) as library:
        stuck = library.host.process
        os.kill(stuck.pid, signal.SIGSTOP)  # asked to exit, it cannot
    started = time.monotonic()
    hosts._reap(block=True)
    assert stuck.returncode == -signal.SIGKILL
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("timeout", [True, float("nan"), float("inf"), 0, -1])
def test_library_timeout_must_be_positive_seconds(tmp_path: Path, builder: Builder, timeout: float) -> None:
    source = tmp_path / "types.c"
    source.write_text(TYPES_C)
    with pytest.raises(CBuildError, match="timeout must be a positive number of seconds"):
        Library(builder.build([source], kind="library"), timeout=timeout)


def test_closing_a_host_twice_leaves_other_descriptors_alone(
    tmp_path: Path, builder: Builder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host closed, then collected while it is still exiting, must not close numbers reused meanwhile."""
    import gc

    from cbuild.run import hosts

    monkeypatch.setattr(hosts, "EXIT_GRACE", 0.2)
    source = tmp_path / "types.c"
    source.write_text(TYPES_C)
    artifact = builder.build([source], kind="library")
    library = Library(artifact)
    host = library.host
    os.kill(host.process.pid, signal.SIGSTOP)  # still running when collected below
    library.close()
    # The lowest free numbers: those the host's channels and outputs just gave back.
    reused = [os.open(os.devnull, os.O_RDONLY) for _ in range(8)]
    try:
        host.close()
        del library, host
        gc.collect()
        for fd in reused:
            os.fstat(fd)  # EBADF if the host closed it
    finally:
        for fd in reused:
            os.close(fd)
        hosts._reap(block=True)


def test_the_memory_arguments_point_at_starts_on_a_64_byte_boundary(lib: Library) -> None:
    """The counted string functions work on aligned 32-byte blocks, so their cost depends on where
    a string starts: the library's process puts every argument's memory at a multiple of 64 bytes,
    wherever its own heap would have (which moved with the project's path, and the count with it)."""
    for size in (0, 1, 7, 15, 16, 17, 31, 33, 100, 1000, 5000):
        assert lib.misalignment(b"a" * size) == 0
        assert lib.misalignment(bytearray(size + 1)) == 0
        assert lib.misalignment(ctypes.create_string_buffer(size + 1)) == 0
        assert lib.text_misalignment(ctypes.pointer(ctypes.c_char_p(b"b" * size))) == 0
        names = (ctypes.c_char_p * 4)(b"x" * size, b"yy", b"z" * (size + 3), None)
        assert lib.strings_misalignment(names) == 0
