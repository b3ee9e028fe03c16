"""Self-contained HTML reports: one file with the data, the page's script and the bundled libraries."""

from cbuild.report.html.page import render

__all__ = ["render"]
