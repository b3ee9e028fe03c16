"""Messages between a process and the executor processes it starts (program runs and library guests).

Each message is pickled, its length first. Before its reply to a request, an executor process may
write :data:`UNTIMED` and :data:`TIMED` around work that is not the guest's (compiling a
translation, or waiting for another process to compile it): :func:`receive_reply` leaves that
time out of the request's time limit, which is for the program's run, not for building it.
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

__all__ = ["TIMED", "UNTIMED", "TimeLimitPassed", "marked_untimed", "receive_message", "receive_reply", "send_message"]


class TimeLimitPassed(Exception):
    """An executor process took longer than a request's time limit to reply."""


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
    process takes more than ``timeout`` seconds, not counting its untimed work; EOFError when it
    ends first. A reply is written whole once it starts."""

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
        if read_message(read) is not TIMED:  # nothing else is written within untimed work
            raise EOFError
