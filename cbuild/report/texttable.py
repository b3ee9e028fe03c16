"""Plain-text tables that fit a terminal: columns aligned, one column elided in the middle.

Rows never wrap: when a table is wider than the terminal, the flexible column (a test or
function name) gives up characters from its middle, where names differ least
(``tests/test_parse.py::test_…_large_input``), down to ``min_flex`` characters.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

ELLIPSIS = "…"


def elide(text: str, width: int, *, head: float = 0.5) -> str:
    """``text`` cut to ``width`` characters by replacing a part with an ellipsis; ``head`` is the
    share of the kept characters taken from the start (the rest come from the end)."""
    if len(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[: max(width, 0)]
    tail = int((width - 1) * (1 - head))
    start = width - 1 - tail
    return text[:start] + ELLIPSIS + (text[-tail:] if tail else "")


def width_without(header: Sequence[str], rows: Sequence[Sequence[str]], column: int) -> int:
    """The width of a rendered table's lines but for ``column``'s cells (separators included)."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return sum(w for i, w in enumerate(widths) if i != column) + 2 * (len(widths) - 1)


def render(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    right: Collection[int] = (),
    width: int | None = None,
    flex: int = 0,
    min_flex: int = 12,
    rule: bool = True,
) -> list[str]:
    """Header, an optional rule of dashes, and the rows; cells in ``right`` are right-aligned.

    With ``width``, column ``flex`` is narrowed (its cells elided) so lines fit, as far as
    ``min_flex`` allows.
    """
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    if width is not None:
        others = width_without(header, rows, flex)
        widths[flex] = max(min(widths[flex], width - others), min(min_flex, widths[flex]))

    def line(row: Sequence[str]) -> str:
        cells = []
        for i, (cell, w) in enumerate(zip(row, widths, strict=True)):
            cell = elide(cell, w)
            cells.append(cell.rjust(w) if i in right else cell.ljust(w))
        return "  ".join(cells).rstrip()

    out = [line(header)]
    if rule:
        out.append("  ".join("-" * w for w in widths))
    return out + [line(r) for r in rows]
