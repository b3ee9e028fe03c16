"""How the build's progress messages are laid out: ``instrbudget: ...``, wrapped to the width of
the terminal or CI log they go to (80 columns where it has none), later lines indented."""

from __future__ import annotations

import shutil
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


def stderr_progress(message: str) -> None:
    """Write a progress message to stderr at once (the builder's default)."""
    print("\n".join(progress_lines(message, shutil.get_terminal_size().columns)), file=sys.stderr, flush=True)
