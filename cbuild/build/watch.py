"""Saying what a long build is doing: its step and how far it is, then how long it took.

A build that is still at work :data:`SLOW` seconds after it started names its step when the
next one begins (``building lib.c: compiling 7 of 35 sources (4 s so far)``), at most every
:data:`EVERY` seconds, and its total at the end (``built lib.c in 41.2 s: compiling 12.0 s,
building for riscv32 25.1 s, ...``). Quick builds say nothing. The lines go to the builder's
``progress`` (the plugin's shows them past pytest's output capturing, a line each, so a CI
log gets them too).
"""

from __future__ import annotations

import time
from collections.abc import Callable

#: Seconds a build runs before it says what it does.
SLOW = 3.0
#: At most one progress line per this many seconds (the last step and the total always).
EVERY = 10.0


class BuildWatch:
    """The steps of one build, timed; see the module's docstring."""

    def __init__(self, say: Callable[[str], None], name: str) -> None:
        self._say = say
        self.name = name
        self._start = self._step_start = time.monotonic()
        self._step = ""
        self._said = 0.0
        self._spoke = False
        #: Step (without its count) -> seconds spent in it.
        self.times: dict[str, float] = {}

    def step(self, what: str, done: int | None = None, total: int | None = None) -> None:
        """The build begins ``what`` (``done`` of ``total`` when it counts something)."""
        now = time.monotonic()
        self._close(now)
        self._step, self._step_start = what, now
        elapsed = now - self._start
        if elapsed >= SLOW and (not self._spoke or now - self._said >= EVERY):
            count = f" {done} of {total}" if done is not None and total is not None else ""
            self._say(f"building {self.name}: {what}{count} ({elapsed:.0f} s so far)")
            self._said, self._spoke = now, True

    def done(self, waited: float = 0.0) -> None:
        """The build is complete: its total and the time per step, if it was slow; ``waited``:
        seconds of it spent waiting for other processes building the same entries."""
        now = time.monotonic()
        self._close(now)
        elapsed = now - self._start
        if elapsed >= SLOW:
            steps = ", ".join(f"{what} {seconds:.1f} s" for what, seconds in self.times.items() if seconds >= 0.1)
            if waited >= 0.1:
                steps += f"{'; ' if steps else ''}{waited:.1f} s of it waiting for another process"
            self._say(f"built {self.name} in {elapsed:.1f} s" + (f": {steps}" if steps else ""))

    def _close(self, now: float) -> None:
        if self._step:
            self.times[self._step] = self.times.get(self._step, 0.0) + now - self._step_start
