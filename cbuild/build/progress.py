"""How the build's progress messages are laid out: ``instrbudget: ...``, wrapped to the width of
the terminal or CI log they go to (80 columns where it has none), later lines indented."""

from __future__ import annotations

import contextlib
import os
import sys
import textwrap

PREFIX = "instrbudget: "


def progress_lines(message: str, width: int) -> list[str]:
    """``message`` as lines of at most ``width`` columns, the first with :data:`PREFIX`; a word
    longer than a line (a path) stays whole."""
    return textwrap.wrap(
        PREFIX + message,
        max(width, 40),
        subsequent_indent="  ",
        break_long_words=False,
        break_on_hyphens=False,
    ) or [PREFIX.rstrip()]


def stderr_width() -> int:
    """The width of the terminal stderr writes to: ``$COLUMNS`` where set, else the terminal's,
    else 80 (a CI log, a file); stdout may go elsewhere (``cbuild run --json > doc.json``)."""
    with contextlib.suppress(ValueError):
        if int(os.environ.get("COLUMNS", "")) > 0:
            return int(os.environ["COLUMNS"])
    try:
        return os.get_terminal_size(sys.stderr.fileno()).columns
    except (OSError, ValueError, AttributeError):
        return 80


def stderr_progress(message: str) -> None:
    """Write a progress message to stderr at once (the builder's default)."""
    print("\n".join(progress_lines(message, stderr_width())), file=sys.stderr, flush=True)
