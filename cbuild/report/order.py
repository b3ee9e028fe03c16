"""The order tests come in, in every report: by node id, numbers compared as numbers."""

from __future__ import annotations

import re


def display_order(nodeid: str) -> tuple[list[str | int], str]:
    """Where a test stands in the outputs: by node id, with runs of digits compared as numbers,
    so that ``test_copy[1000]`` comes before ``test_copy[10000]`` and ``test_copy[100000]``; a
    minus sign that begins a parameter (``[-3]``, ``[1--3]``, not the ``-`` between ``[1-10]``'s)
    is the number's, so ``[-3]`` comes before ``[2]``."""
    parts: list[str | int] = [int(p) if i % 2 else p for i, p in enumerate(_NUMBER.split(nodeid))]
    return parts, nodeid


#: A number in a node id: digits, with the minus sign of a parameter that begins with one.
_NUMBER = re.compile(r"((?<=[\[-])-\d+|\d+)")
