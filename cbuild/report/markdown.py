"""Text in Markdown as it was written: test ids and function names hold backticks, ``|`` and ``<``."""

from __future__ import annotations

import re


def code_span(text: str) -> str:
    """``text`` as a Markdown code span, whatever backticks it holds (CommonMark: a fence longer
    than its longest run of them, padded where it starts or ends with one)."""
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def table_code(text: str) -> str:
    """:func:`code_span` for a table cell: GitHub's tables split a row at every ``|`` not escaped,
    in code spans too (``operator|``, a test id with ``|`` among its parameters)."""
    return code_span(text).replace("|", "\\|")
