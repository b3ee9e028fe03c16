"""Sorting budgets: introsort on random and adversarial inputs."""

from __future__ import annotations

import ctypes

import pytest


def _random_array(minikit, n: int, seed: int) -> ctypes.Array:
    arr = (ctypes.c_int32 * n)()
    minikit.mk_fill_random(arr, n, seed)
    return arr


# Cycles on the in-order core (pipeline model) as well as IR instructions.
@pytest.mark.budget(max_instr=250_000, max_cycles=120_000)
def test_sort_random_1000(minikit):
    arr = _random_array(minikit, 1000, 42)
    minikit.mk_sort_ints(arr, 1000)
    assert minikit.mk_is_sorted(arr, 1000) == 1
    assert list(arr) == sorted(arr)


@pytest.mark.budget(max_instr=85_000)
def test_sort_already_sorted(minikit):
    arr = (ctypes.c_int32 * 1000)(*range(1000))
    minikit.mk_sort_ints(arr, 1000)
    assert list(arr) == list(range(1000))


@pytest.mark.budget(max_instr=100_000)
def test_sort_reversed(minikit):
    arr = (ctypes.c_int32 * 1000)(*range(1000, 0, -1))
    minikit.mk_sort_ints(arr, 1000)
    assert list(arr) == list(range(1, 1001))


@pytest.mark.parametrize("n", [0, 1, 2, 16, 17])
@pytest.mark.budget(max_instr=2_000)
def test_sort_small(minikit, n):
    arr = _random_array(minikit, max(n, 1), 7)
    minikit.mk_sort_ints(arr, n)
    assert minikit.mk_is_sorted(arr, n) == 1
