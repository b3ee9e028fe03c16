"""Plain-text tables that fit a terminal or an 80-column CI log without cutting names.

A table is as wide as its cells when that fits. When it does not, the flexible column (a
test, function or source line) gets the width the other columns leave, and a name longer
than that is printed whole on a line of its own, with the row's other cells on the next
line. A test's name, a file name and a line number are what a reader looks for, so they are
never cut; only cells that describe (a sparkline, a note) are ever shortened, by their callers.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Collection, Iterable, Sequence

ELLIPSIS = "…"


def widths_of(header: Sequence[str] | None, rows: Sequence[Sequence[str]]) -> list[int]:
    """Each column's natural width: its longest cell."""
    lines = [header, *rows] if header is not None else list(rows)
    return [max(len(r[i]) for r in lines) for i in range(len(lines[0]))]


def width_without(header: Sequence[str] | None, rows: Sequence[Sequence[str]], column: int) -> int:
    """The width of a rendered table's lines but for ``column``'s cells (separators included)."""
    widths = widths_of(header, rows)
    return sum(w for i, w in enumerate(widths) if i != column) + 2 * (len(widths) - 1)


def render(
    header: Sequence[str] | None,
    rows: Sequence[Sequence[str]],
    *,
    right: Collection[int] = (),
    width: int | None = None,
    flex: int = 0,
    indent: str = "",
    rule: bool = True,
    below: Sequence[str] = (),
) -> list[str]:
    """The header (if any), a rule of dashes under it, and the rows, each line starting with
    ``indent``; cells in ``right`` are right-aligned; ``below[i]`` (when not empty) is wrapped
    onto lines under row ``i``, indented.

    With ``width``, column ``flex`` gets what the other columns leave of it, and a longer cell
    of that column goes whole on its own line above the rest of its row (once for consecutive
    rows with the same cell).
    """
    if not rows and header is None:
        return []
    widths = widths_of(header, rows)
    if width is not None:
        room = width - len(indent) - width_without(header, rows, flex)
        narrowest = len(header[flex]) if header is not None else 0
        widths[flex] = max(min(widths[flex], room), narrowest)

    above_last: list[str] = []

    def line(row: Sequence[str]) -> list[str]:
        nonlocal above_last
        cells = []
        above = []
        for i, (cell, w) in enumerate(zip(row, widths, strict=True)):
            if i == flex and len(cell) > w:
                above.append(indent + " " * sum(widths[j] + 2 for j in range(i)) + cell)
                cell = ""
            cells.append(cell.rjust(w) if i in right else cell.ljust(w))
        # Rows under one name (a test's metrics) show it once.
        shown, above_last = (above if above != above_last else []), above
        return [*shown, (indent + "  ".join(cells)).rstrip()]

    out = line(header) if header is not None else []
    if rule and header is not None:
        out.append(indent + "  ".join("-" * w for w in widths))
    for i, row in enumerate(rows):
        out += line(row)
        if i < len(below) and below[i]:
            out += wrap(below[i], width, indent=indent + "    ", subsequent=indent + "      ")
    return out


def common_directory(paths: Iterable[str]) -> str:
    """The directory (ending in ``/``) that every path lies in, or ``""``."""
    dirs = [p.rpartition("/")[0] for p in paths]
    if not dirs or any(not d for d in dirs):
        return ""
    common = os.path.commonpath(dirs) if len({d.startswith("/") for d in dirs}) == 1 else ""
    return common + "/" if common and common != "/" else ""


def fold_directory(labels: Sequence[str], room: int) -> tuple[str, list[str]]:
    """Where a label is longer than ``room``, the directory every label lies in (named once by the
    caller) and the labels without it; else ``""`` and the labels as they are."""
    folder = common_directory(labels)
    if not folder or max(map(len, labels)) <= room:
        return "", list(labels)
    return folder, [label[len(folder) :] for label in labels]


#: A space ``text`` given to :func:`wrap` is never broken at (``fwrite{KEEP}x10``), printed as one.
KEEP = "\u00a0"


def wrap(text: str, width: int | None, *, indent: str = "", subsequent: str | None = None) -> list[str]:
    """``text`` broken at spaces into lines of at most ``width`` (one line without a width), but
    at a :data:`KEEP`; words longer than a line stay whole."""
    if width is None:
        return [(indent + text).replace(KEEP, " ")]
    later = indent + "  " if subsequent is None else subsequent
    lines = textwrap.wrap(
        text,
        max(width, len(indent) + 8),
        initial_indent=indent,
        subsequent_indent=later,
        break_long_words=False,
        break_on_hyphens=False,
    ) or [indent]
    return [line.replace(KEEP, " ") for line in lines]
