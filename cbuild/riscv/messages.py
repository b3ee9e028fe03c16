"""Messages between a process and the executor processes it starts (program runs and library guests).

Each message is pickled, its length first. Before its reply to a request, an executor process may
write :data:`UNTIMED` and :data:`TIMED` around work that is not the guest's (compiling a
translation, or waiting for another process to compile it): :func:`receive_reply` leaves that
time out of the request's time limit, which is for the program's run, not for building it; that
work has a limit of its own, :data:`UNTIMED_LIMIT`.
"""

from __future__ import annotations

import contextlib
import enum
import os
import select
import time
from collections.abc import Iterator
from typing import IO, Any

from cbuild.framing import read_message, receive_message, send_message

__all__ = [
    "TIMED",
    "UNTIMED",
    "UNTIMED_LIMIT",
    "TimeLimitPassed",
    "UntimedLimitPassed",
    "marked_untimed",
    "receive_message",
    "receive_reply",
    "send_message",
]

#: Seconds an executor process may spend at once on work that is not the guest's run (compiling
#: a translation, or waiting for another process to compile it) before the request fails: that
#: work is not held to the run's time limit, but must end (compiling yyjson's translation, the
#: largest here, takes 11-14 s).
UNTIMED_LIMIT = 600.0


class TimeLimitPassed(Exception):
    """An executor process took longer than a request's time limit to reply."""


class UntimedLimitPassed(TimeLimitPassed):
    """An executor process spent longer than ``limit`` seconds (:data:`UNTIMED_LIMIT`) on work
    that is not the guest's."""

    def __init__(self, limit: float) -> None:
        super().__init__(limit)
        self.limit = limit

    def describe(self, elf: str) -> str:
        """What passed the limit, for the run or call of the ELF named ``elf``."""
        return (
            f"compiling (or waiting for) the translation of {elf}, work outside the time limit, "
            f"took longer than {self.limit:g} s"
        )


class _Clock(enum.Enum):
    UNTIMED = "untimed"
    TIMED = "timed"


#: The work that follows is not the guest's run (until :data:`TIMED`).
UNTIMED = _Clock.UNTIMED
#: The guest's run goes on.
TIMED = _Clock.TIMED


@contextlib.contextmanager
def marked_untimed(out: IO[bytes]) -> Iterator[None]:
    """Mark the work in the block as not the guest's, for the process reading ``out``."""
    send_message(out, UNTIMED)
    try:
        yield
    finally:
        send_message(out, TIMED)


def receive_reply(fd: int, timeout: float | None) -> Any:
    """The reply an executor process writes to file descriptor ``fd`` (read unbuffered, so that no
    message waits in a buffer that ``select`` cannot see). :class:`TimeLimitPassed` when the
    process takes more than ``timeout`` seconds, not counting its untimed work, and
    :class:`UntimedLimitPassed` when a stretch of untimed work takes more than
    :data:`UNTIMED_LIMIT` seconds; EOFError when it ends first. A reply is written whole once it
    starts."""

    def read(n: int) -> bytes:
        return os.read(fd, min(n, 1 << 20))

    left = timeout
    while True:
        if left is not None:
            started = time.monotonic()
            if not select.select([fd], [], [], max(left, 0.0))[0]:
                raise TimeLimitPassed
            left -= time.monotonic() - started
        message = read_message(read)
        if message is not UNTIMED:
            return message
        if not select.select([fd], [], [], UNTIMED_LIMIT)[0]:
            raise UntimedLimitPassed(UNTIMED_LIMIT)
        if read_message(read) is not TIMED:  # nothing else is written within untimed work
            raise EOFError
