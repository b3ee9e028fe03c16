"""``python -m cbuild``."""

from cbuild.cli import entry

raise SystemExit(entry())
