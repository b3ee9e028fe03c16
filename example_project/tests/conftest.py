"""Shared fixtures: the minikit library built once per test through the instrbudget pipeline."""

from __future__ import annotations

import pytest

from cbuild import Library

LIB_SOURCES = ("../src/json.c", "../src/hashmap.c", "../src/sort.c", "../src/ringbuf.c")


@pytest.fixture
def minikit(cbuild) -> Library:
    """A fresh instance of libminikit (each test gets its own static state and counters)."""
    return cbuild.library(*LIB_SOURCES)
