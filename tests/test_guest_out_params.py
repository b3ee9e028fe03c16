"""Library calls replayed in the riscv32 build with out-parameters whose layout differs there:
``size_t`` arrays (8 bytes an element natively, 4 in the build) and ``char **`` that the function
points at a string. The replay must give the build the same values, and compare what it writes
back element by element and string by string."""

from __future__ import annotations

import ctypes
import time
import warnings

import pytest

from cbuild import Builder, Library
from cbuild.models import default_registry

ITER_C = r"""
#include <stddef.h>
#include <stdint.h>
static const char *names[] = {"alpha", "beta", "gamma", "delta"};

/* The next name after *cursor, and its length; 0 once past the end. */
int next_name(size_t *cursor, const char **name, int64_t *length) {
    size_t i = *cursor;
    if (i >= sizeof names / sizeof names[0]) return 0;
    *cursor = i + 1;
    if (name) *name = names[i];
    if (length) { int64_t n = 0; while (names[i][n]) n++; *length = n; }
    return 1;
}

/* prefix[i] = sum of values[0..i]: an array of size_t in and one out. */
void prefix_sums(const size_t *values, size_t *prefix, size_t n) {
    size_t s = 0;
    for (size_t i = 0; i < n; i++) { s += values[i]; prefix[i] = s; }
}

/* Names a width: "wide" where long has 64 bits, "narrow" where it has 32 (riscv32). */
void long_width(const char **out) { *out = sizeof(long) == 8 ? "wide" : "narrow"; }
"""


@pytest.fixture
def lib(builder: Builder, write):  # type: ignore[no-untyped-def]
    model = default_registry().create("zkvm")
    artifact = builder.build([write("iter.c", ITER_C)], kind="library", models=[model])
    with Library(artifact) as library:
        yield library


def test_a_char_pointer_out_parameter_is_replayed_and_compared(lib) -> None:  # type: ignore[no-untyped-def]
    cursor, name, length = ctypes.c_size_t(0), ctypes.c_char_p(), ctypes.c_int64()
    seen = []
    since = lib.snapshot()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # any difference between the builds fails the test
        while lib.next_name(ctypes.pointer(cursor), ctypes.pointer(name), ctypes.pointer(length)):
            seen.append((name.value, length.value))
    assert seen == [(b"alpha", 5), (b"beta", 4), (b"gamma", 5), (b"delta", 5)]
    assert cursor.value == 4
    counts = lib.counts(since)
    assert "zkvm" not in counts.unavailable
    run = counts.machine_run("riscv32")
    assert run.functions["next_name"] > 0


def test_size_t_arrays_travel_at_the_target_width(lib) -> None:  # type: ignore[no-untyped-def]
    values = (ctypes.c_size_t * 5)(3, 1, 4, 1, 5)
    prefix = (ctypes.c_size_t * 5)()
    since = lib.snapshot()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        lib.prefix_sums(values, prefix, 5)
    assert list(prefix) == [3, 4, 8, 9, 14]
    counts = lib.counts(since)
    assert "zkvm" not in counts.unavailable
    # Five additions ran in the guest: its work depends on the values it got, element by element.
    assert counts.machine_run("riscv32").functions["prefix_sums"] > 5


def test_a_size_t_that_does_not_fit_the_target_is_a_difference(lib) -> None:  # type: ignore[no-untyped-def]
    values = (ctypes.c_size_t * 2)(0xFFFF_FFFF, 1)  # both fit 32 bits; their sum does not
    prefix = (ctypes.c_size_t * 2)()
    with pytest.warns(RuntimeWarning, match=r"prefix_sums\(\): argument 2 is written differently in the riscv32"):
        lib.prefix_sums(values, prefix, 2)
    assert list(prefix) == [0xFFFF_FFFF, 1 << 32]  # the test sees the native results


def test_a_string_that_differs_between_the_builds_is_named(lib) -> None:  # type: ignore[no-untyped-def]
    out = ctypes.c_char_p()
    with pytest.warns(RuntimeWarning, match=r"long_width\(\): argument 1 points to b'narrow' \(natively b'wide'\)"):
        lib.long_width(ctypes.pointer(out))
    assert out.value == b"wide"


def test_a_string_stored_through_a_pointer_outlives_the_call(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    """Natively too: the string a ``char **`` comes back with stays valid in the caller's c_char_p."""
    import gc

    artifact = builder.build([write("iter.c", ITER_C)], kind="library")
    with Library(artifact) as library:
        out = ctypes.c_char_p()
        library.long_width(ctypes.pointer(out))
        gc.collect()
        filler = [bytes([i % 256]) * 6 for i in range(1000)]  # reuse freed memory, if the string was freed
        assert out.value == b"wide"
        assert filler


def test_a_const_size_t_array_the_target_cannot_hold_is_a_difference(lib) -> None:  # type: ignore[no-untyped-def]
    values = (ctypes.c_size_t * 3)(1, 1 << 33, 2)
    prefix = (ctypes.c_size_t * 3)()
    expected = r"prefix_sums\(\): argument 1\[1\] \(8589934592\) does not fit the build's 32-bit element"
    with pytest.warns(RuntimeWarning, match=expected):
        lib.prefix_sums(values, prefix, 3)


ENDLESS_ON_RV32_C = r"""
/* Returns at once natively; loops for ever where long has 32 bits (the riscv32 build). */
int spin(int n) {
    volatile int forever = sizeof(long) == 4;
    while (forever) n++;  /* the endless loop */
    return n;
}
"""


@pytest.mark.slow
def test_a_replay_that_does_not_end_stops_at_the_tests_timeout(pytester: pytest.Pytester) -> None:
    pytester.makefile(".c", spin=ENDLESS_ON_RV32_C)
    pytester.makepyfile(
        test_spin="""
        import pytest

        @pytest.mark.budget(max_zkcycles=10**9, timeout=3)
        def test_spin(cbuild):
            assert cbuild.library("spin.c").spin(7) == 7
        """
    )
    pytester.makepyprojecttoml('[tool.instrbudget]\nmodels = ["ir-count", "zkvm"]\n')
    start = time.monotonic()
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=240)
    elapsed = time.monotonic() - start
    result.assert_outcomes(failed=1)
    # Where the guest was: the function and the loop's line, as a native stop names them (makefile strips the text).
    (loop,) = [n for n, line in enumerate(ENDLESS_ON_RV32_C.strip().splitlines(), 1) if "the endless loop" in line]
    result.stdout.fnmatch_lines(
        [
            "*max_zkcycles=1,000,000,000 not checked: the zkvm model could not measure this test:",
            "*int spin(int n): cannot be replayed in the riscv32 build: the replay of spin() took longer than 3 s, "
            f"the call's time limit; it was in spin (spin.c:{loop}) at pc 0x*",
        ]
    )
    assert elapsed < 120, elapsed  # the build's time, and 3 s for the replay: not the 60 s default
