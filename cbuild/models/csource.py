"""C source for the tables a model's dynamic phase reads."""

from __future__ import annotations

from collections.abc import Sequence


def c_array(ctype: str, name: str, values: Sequence[int]) -> str:
    """A static const C array (never empty: C has no zero-length arrays)."""
    items = list(values) or [0]
    lines = []
    for start in range(0, len(items), 24):
        lines.append("    " + ", ".join(str(v) for v in items[start : start + 24]) + ",")
    body = "\n".join(lines)
    return f"static const {ctype} {name}[{len(items)}] = {{\n{body}\n}};\n"
