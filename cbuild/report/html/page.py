"""One HTML file per report: data as JSON, ``report.js`` and the bundled libraries inlined.

Two kinds of page share the script: ``"results"`` (a session's tests: a sortable, filterable
table, per test its metrics against limit and baseline as a chart, its regions, and a flame
graph of its call paths) and ``"history"`` (metrics of tests over the commits of a baseline).
The file loads nothing from anywhere: it opens offline, from disk or as a CI artifact.
"""

from __future__ import annotations

import html
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
VENDOR = HERE / "vendor"
#: Bundled scripts, in load order (see vendor/VENDORED.md for versions and licences).
SCRIPTS = ("d3.min.js", "d3-flamegraph.umd.min.js", "chart.umd.min.js")
STYLES = ("d3-flamegraph.css",)
KINDS = ("results", "history")


@cache
def _asset(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    return re.sub(r"^//# sourceMappingURL=\S+\s*$", "", text, flags=re.M)


def _inline_script(text: str) -> str:
    # A script element ends at the first "</script"; the bundled code never means one.
    return "<script>" + text.replace("</script", "<\\/script") + "</script>"


def render(kind: str, title: str, data: dict[str, Any]) -> str:
    """The page: ``data`` (JSON-able) rendered by ``report.js`` as a ``kind`` report."""
    if kind not in KINDS:
        raise ValueError(f"unknown report kind {kind!r}; expected one of {', '.join(KINDS)}")
    payload = json.dumps({"kind": kind, "title": title, **data}, sort_keys=True, allow_nan=False)
    # JSON inside a script element: "<" escaped so no string can close the element.
    payload = payload.replace("<", "\\u003c")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title>",
        *(f"<style>{_asset(VENDOR / name)}</style>" for name in STYLES),
        f"<style>{_asset(HERE / 'report.css')}</style>",
        "</head><body>",
        f'<script type="application/json" id="instrbudget-data">{payload}</script>',
        '<div id="app"></div>',
        *(_inline_script(_asset(VENDOR / name)) for name in SCRIPTS),
        _inline_script(_asset(HERE / "report.js")),
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"
