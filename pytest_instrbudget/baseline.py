"""The committed baseline: per test and metric, the last accepted total and per-function costs.

The file's layout is :mod:`cbuild.report.snapshot`'s; this module reads and writes it
(:func:`cbuild.report.outputs.locked` serialises the sessions that write it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from cbuild.models.costs import Cost
from cbuild.report.outputs import write_output
from cbuild.report.snapshot import Snapshot, SnapshotError, decode


class BaselineError(Exception):
    """The baseline file cannot be used; the message names the file."""


@dataclass
class Baseline:
    """Baseline entries: test node id -> metric -> Cost."""

    path: Path
    fingerprint: dict[str, str] = field(default_factory=dict)
    tests: dict[str, dict[str, Cost]] = field(default_factory=dict)
    exists: bool = False

    @classmethod
    def load(cls, path: Path) -> Baseline:
        """Read ``path``; a missing file is an empty baseline, a damaged one an error."""
        if not path.exists():
            return cls(path)
        try:
            snapshot = decode(path.read_bytes())
        except OSError as exc:
            raise BaselineError(f"baseline {path} cannot be read: {exc}") from None
        except SnapshotError as exc:
            raise BaselineError(
                f"baseline {path} {exc}; "
                f"fix it, restore it from version control, or rewrite it with --instrbudget-update"
            ) from None
        return cls(path, snapshot.fingerprint, snapshot.tests, exists=True)

    def snapshot(self) -> Snapshot:
        """The entries as a snapshot document."""
        return Snapshot(self.fingerprint, self.tests)

    def save(self) -> None:
        """Write atomically: readers see the old file or the new one, never a mix.

        A file that exists keeps its permissions (a read-only baseline stays read-only); a
        symlinked baseline's target is the file written (:mod:`pytest_instrbudget.outputs`).
        """
        write_output(self.path, self.snapshot().dumps().encode())
