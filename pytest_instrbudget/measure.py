"""What one test's instrumented code executes during its call phase."""

from __future__ import annotations

from cbuild.attribution import attributed
from cbuild.costs import BlockCounts
from cbuild.library import Library

#: Every model's costs summed over several artifacts' counts, with regions and source lines.
evaluate = attributed


class Meter:
    """Collects block counts of libraries and programs while a test's call phase runs.

    Libraries loaded before the call (in fixtures) are snapshotted when the call
    starts; libraries loaded during the call count from their load. Program runs
    count when they happen during the call.
    """

    def __init__(self) -> None:
        self.active = False
        self.used = False
        self._libraries: list[tuple[Library, tuple[int, ...] | None]] = []
        self._runs: list[BlockCounts] = []

    def add_library(self, library: Library) -> None:
        """Register a library loaded for this test."""
        if library.artifact.instrumented:
            self._libraries.append((library, None))
            self.used = self.used or self.active

    def add_run(self, counts: BlockCounts | None) -> None:
        """Register a finished program run."""
        if counts is not None and self.active:
            self._runs.append(counts)
            self.used = True

    def start(self) -> None:
        """The call phase begins: snapshot what is loaded already."""
        self._libraries = [(lib, lib.snapshot()) for lib, _ in self._libraries]
        self.active = True
        self.used = self.used or bool(self._libraries)

    def stop(self) -> tuple[list[BlockCounts], list[str]]:
        """The call phase ended: counts executed during it, per artifact, and why any were lost
        (a library whose process a call ended)."""
        self.active = False
        out, lost = [], []
        for lib, since in self._libraries:
            if lib.host.alive:
                out.append(lib.counts(since))
            else:
                lost.append(f"{lib.artifact.name}: {lib.host.ended}")
        return out + self._runs, lost
