"""``python -m cbuild``."""

from cbuild.cli import main

raise SystemExit(main())
