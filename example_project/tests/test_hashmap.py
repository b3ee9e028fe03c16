"""Hash map budgets: insertion with growth, lookups (hits and misses), overwrite, iteration."""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from cbuild import Pointer


@contextmanager
def _new_map(minikit, initial_capacity: int = 0) -> Iterator[Pointer]:
    """A fresh map, freed when the block ends (even if an assertion fails)."""
    handle = minikit.mk_map_new(initial_capacity)  # a pointer in the library's process
    assert handle is not None
    try:
        yield handle
    finally:
        minikit.mk_map_free(handle)


def _get(minikit, m, key: bytes) -> int | None:
    out = ctypes.c_int64(-999)
    found = minikit.mk_map_get(m, key, ctypes.pointer(out))
    if found:
        return out.value
    assert found == 0
    assert out.value == -999  # untouched on a miss
    return None


def _keys(n: int, prefix: str = "key") -> list[bytes]:
    return [f"{prefix}-{i}".encode() for i in range(n)]


@pytest.mark.budget(max_instr=1_000_000)
def test_hashmap_put_get_grow_1000(minikit):
    keys = _keys(1000)
    with _new_map(minikit) as m:
        for i, key in enumerate(keys):
            assert minikit.mk_map_put(m, key, i * i - 500) == 1
        assert minikit.mk_map_size(m) == 1000
        for i, key in enumerate(keys):
            assert _get(minikit, m, key) == i * i - 500


@pytest.mark.budget(max_instr=550_000)
def test_hashmap_presized_1000(minikit):
    keys = _keys(1000)
    with _new_map(minikit, 1000) as m:
        for i, key in enumerate(keys):
            assert minikit.mk_map_put(m, key, i) == 1
        assert minikit.mk_map_size(m) == 1000
        assert _get(minikit, m, b"key-999") == 999


@pytest.mark.budget(max_instr=180_000)
def test_hashmap_missing_keys(minikit):
    with _new_map(minikit) as m:
        for i, key in enumerate(_keys(200)):
            minikit.mk_map_put(m, key, i)
        for key in _keys(200, prefix="absent"):
            assert _get(minikit, m, key) is None
        # Near misses: prefixes, extensions, case changes and the empty key.
        for key in (b"key", b"key-", b"key-1000", b"KEY-1", b"key-1 ", b""):
            assert _get(minikit, m, key) is None
        # A NULL out pointer is allowed and only reports presence.
        assert minikit.mk_map_get(m, b"key-7", None) == 1
        assert minikit.mk_map_get(m, b"absent-7", None) == 0


@pytest.mark.budget(max_instr=125_000)
def test_hashmap_overwrite_keeps_size(minikit):
    keys = _keys(100)
    with _new_map(minikit) as m:
        for key in keys:
            assert minikit.mk_map_put(m, key, 1) == 1
        for i, key in enumerate(keys):
            assert minikit.mk_map_put(m, key, -i) == 0  # existing key: replaced
        assert minikit.mk_map_size(m) == 100
        for i, key in enumerate(keys):
            assert _get(minikit, m, key) == -i
        # Extreme int64 values survive the round trip.
        assert minikit.mk_map_put(m, b"key-0", 2**63 - 1) == 0
        assert minikit.mk_map_put(m, b"min", -(2**63)) == 1
        assert _get(minikit, m, b"key-0") == 2**63 - 1
        assert _get(minikit, m, b"min") == -(2**63)
        assert minikit.mk_map_size(m) == 101


@pytest.mark.budget(max_instr=200_000)
def test_hashmap_iterate_all_entries(minikit):
    expected = {key: i * 3 for i, key in enumerate(_keys(300))}
    with _new_map(minikit) as m:
        for key, value in expected.items():
            minikit.mk_map_put(m, key, value)
        seen = {}
        cursor = ctypes.c_size_t(0)
        key_out = ctypes.c_char_p()
        value_out = ctypes.c_int64()
        while minikit.mk_map_iter(m, ctypes.pointer(cursor), ctypes.pointer(key_out), ctypes.pointer(value_out)):
            assert key_out.value not in seen
            seen[key_out.value] = value_out.value
        assert seen == expected
        # An exhausted cursor stays exhausted.
        assert minikit.mk_map_iter(m, ctypes.pointer(cursor), None, None) == 0


@pytest.mark.budget(max_instr=150)
def test_hashmap_fnv1a_known_vectors(minikit):
    # Reference values of 32-bit FNV-1a; the function returns uint32_t, and so does Python.
    vectors = {b"": 0x811C9DC5, b"a": 0xE40C292C, b"foobar": 0xBF9CF968}
    for key, expected in vectors.items():
        assert minikit.mk_fnv1a32(key) == expected


def test_hashmap_null_arguments(minikit):
    # No budget: error paths, measured only.
    assert minikit.mk_map_put(None, b"k", 1) == -1
    assert minikit.mk_map_get(None, b"k", None) == 0
    assert minikit.mk_map_size(None) == 0
    minikit.mk_map_free(None)
    with _new_map(minikit) as m:
        assert minikit.mk_map_put(m, None, 1) == -1
        assert minikit.mk_map_get(m, None, None) == 0
        assert minikit.mk_map_size(m) == 0
