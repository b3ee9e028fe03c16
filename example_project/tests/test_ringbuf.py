"""Ring buffer budgets: FIFO order, wraparound against a Python model, capacity limits."""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from cbuild import Pointer


@contextmanager
def _new_ring(minikit, capacity: int) -> Iterator[Pointer]:
    ring = minikit.mk_ring_new(capacity)  # a pointer in the library's process
    assert ring is not None
    try:
        yield ring
    finally:
        minikit.mk_ring_free(ring)


def _read(minikit, ring, n: int) -> bytes:
    out = bytearray(n)
    got = minikit.mk_ring_read(ring, out, n)
    return bytes(out[:got])


@pytest.mark.budget(max_instr=1_100)
def test_ringbuf_fifo_order(minikit):
    with _new_ring(minikit, 16) as ring:
        assert minikit.mk_ring_capacity(ring) == 16
        assert minikit.mk_ring_write(ring, b"hello", 5) == 5
        assert minikit.mk_ring_write(ring, b" world", 6) == 6
        assert minikit.mk_ring_used(ring) == 11
        assert _read(minikit, ring, 3) == b"hel"
        assert _read(minikit, ring, 100) == b"lo world"
        assert minikit.mk_ring_used(ring) == 0
        assert _read(minikit, ring, 4) == b""  # empty: nothing to read


@pytest.mark.budget(max_instr=1_100)
def test_ringbuf_capacity_limit(minikit):
    with _new_ring(minikit, 8) as ring:
        assert minikit.mk_ring_write(ring, b"0123456789", 10) == 8  # truncated to capacity
        assert minikit.mk_ring_used(ring) == 8
        assert minikit.mk_ring_write(ring, b"X", 1) == 0  # full: never overwrites
        assert _read(minikit, ring, 2) == b"01"
        assert minikit.mk_ring_write(ring, b"abcdef", 6) == 2  # only the freed room
        assert minikit.mk_ring_used(ring) == 8
        assert _read(minikit, ring, 8) == b"234567ab"


@pytest.mark.budget(max_instr=1_200)
def test_ringbuf_wraparound_split_copy(minikit):
    with _new_ring(minikit, 10) as ring:
        assert minikit.mk_ring_write(ring, b"abcdefgh", 8) == 8
        assert _read(minikit, ring, 6) == b"abcdef"
        # head is at 6 with 2 bytes stored: this write wraps past the end.
        assert minikit.mk_ring_write(ring, b"12345678", 8) == 8
        assert minikit.mk_ring_used(ring) == 10
        # and this read wraps too.
        assert _read(minikit, ring, 10) == b"gh12345678"


@pytest.mark.budget(max_instr=150_000)
def test_ringbuf_wraparound_random_model(minikit):
    rng = random.Random(1234)
    capacity = 37  # not a power of two, so wraps happen at odd offsets
    model: deque[int] = deque()
    written = read = 0
    with _new_ring(minikit, capacity) as ring:
        for step in range(1000):
            if rng.random() < 0.55:
                n = rng.randint(0, 20)
                chunk = bytes((written + k) % 251 for k in range(n))
                accepted = minikit.mk_ring_write(ring, chunk, n)
                assert accepted == min(n, capacity - len(model)), step
                model.extend(chunk[:accepted])
                written += accepted
            else:
                n = rng.randint(0, 20)
                expected = bytes(model.popleft() for _ in range(min(n, len(model))))
                assert _read(minikit, ring, n) == expected, step
                read += len(expected)
            assert minikit.mk_ring_used(ring) == len(model)
    assert written > 5 * capacity  # the buffer really wrapped many times
    assert read > 5 * capacity


@pytest.mark.budget(max_instr=5_000)
def test_ringbuf_byte_at_a_time(minikit):
    with _new_ring(minikit, 3) as ring:
        out = bytearray()
        for byte in b"the quick brown fox":
            assert minikit.mk_ring_write(ring, bytes([byte]), 1) == 1
            if minikit.mk_ring_used(ring) == 3:
                out += _read(minikit, ring, 1)
        out += _read(minikit, ring, 3)
        assert bytes(out) == b"the quick brown fox"


def test_ringbuf_invalid_arguments(minikit):
    # No budget: argument checks only, measured but never failing on cost.
    assert minikit.mk_ring_new(0) is None
    assert minikit.mk_ring_used(None) == 0
    assert minikit.mk_ring_capacity(None) == 0
    assert minikit.mk_ring_write(None, b"x", 1) == 0
    assert minikit.mk_ring_read(None, bytearray(1), 1) == 0
    minikit.mk_ring_free(None)
    with _new_ring(minikit, 4) as ring:
        assert minikit.mk_ring_write(ring, None, 3) == 0
        assert minikit.mk_ring_read(ring, None, 3) == 0
        assert minikit.mk_ring_write(ring, b"", 0) == 0
        assert minikit.mk_ring_used(ring) == 0
