"""Saying what a long build is doing: its step and how far it is, then how long it took.

A build that is still at work :data:`SLOW` seconds after it started names its step when the
next one begins (``building lib.c: compiling 7 of 35 sources (4 s so far)``), at most every
:data:`EVERY` seconds, and its total at the end (``built lib.c in 41.2 s: compiling 12.0 s,
building for riscv32 25.1 s, ...``). Quick builds say nothing. The lines go to the builder's
``progress`` (the plugin's shows them past pytest's output capturing, a line each, so a CI
log gets them too). Work that runs in another thread beside the steps (the RISC-V builds of the
executing models) is timed apart and named after them (``...; beside them: building for riscv32
25.1 s``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

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
        #: Work beside the steps (:meth:`beside`) -> seconds spent in it.
        self.beside_times: dict[str, float] = {}
        self._lock = threading.Lock()

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

    @contextmanager
    def beside(self, what: str) -> Iterator[None]:
        """Time ``what``, which runs in another thread while the steps go on (it says nothing
        until the total)."""
        start = time.monotonic()
        try:
            yield
        finally:
            with self._lock:
                self.beside_times[what] = self.beside_times.get(what, 0.0) + time.monotonic() - start

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
            with self._lock:
                beside = ", ".join(f"{what} {seconds:.1f} s" for what, seconds in self.beside_times.items())
            if beside:
                steps += f"{'; ' if steps else ''}beside them: {beside}"
            self._say(f"built {self.name} in {elapsed:.1f} s" + (f": {steps}" if steps else ""))

    def _close(self, now: float) -> None:
        if self._step:
            self.times[self._step] = self.times.get(self._step, 0.0) + now - self._step_start
