"""Unicode sparklines: a series of values in one line of a terminal table."""

from __future__ import annotations

from collections.abc import Sequence

BARS = "▁▂▃▄▅▆▇█"
#: Drawn between two points whose values are not comparable (the baseline's fingerprint changed).
BREAK = "┊"


def bar(value: int, lo: int, hi: int) -> str:
    """The bar of ``value`` on a scale from ``lo`` (▁) to ``hi`` (█); a flat scale draws ▁."""
    if hi <= lo:
        return BARS[0]
    steps = len(BARS) - 1
    # Rounded half up in integers: the same bars on every platform.
    return BARS[(2 * (value - lo) * steps + (hi - lo)) // (2 * (hi - lo))]


def sparkline(cells: Sequence[int | str | None]) -> str:
    """One character per cell: an integer is a bar scaled between the cells' smallest and
    largest integers, ``None`` a blank, a string is drawn as it is (e.g. :data:`BREAK`)."""
    values = [c for c in cells if isinstance(c, int)]
    lo, hi = (min(values), max(values)) if values else (0, 0)
    return "".join(" " if cell is None else cell if isinstance(cell, str) else bar(cell, lo, hi) for cell in cells)
