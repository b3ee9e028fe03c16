"""Starting child processes as the runs need them: ASLR off, and a process group of their own.

Both without Python code between fork and exec, which would make ``subprocess`` fork the
whole interpreter instead of using ``vfork``, at a cost that grows with what the process holds
(docs/performance.md, "Starting a run").
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

_ADDR_NO_RANDOMIZE = 0x0040000
#: ``personality(2)``'s argument that only asks for the current persona.
_QUERY = 0xFFFFFFFF


@functools.cache
def _personality() -> Callable[[int], int] | None:
    """The C library's ``personality``, or None where there is none (not Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    function = ctypes.CDLL(None, use_errno=True).personality
    function.argtypes = [ctypes.c_ulong]
    function.restype = ctypes.c_int
    return function


@contextlib.contextmanager
def aslr_off() -> Iterator[None]:
    """Processes this thread starts within the block run with ASLR off (Linux; elsewhere nothing
    changes). The persona is the calling thread's own, so other threads' children keep theirs,
    and it is set back after the block; this process's own layout never changes (the kernel reads
    the flag at ``exec``)."""
    personality = _personality()
    current = personality(_QUERY) if personality is not None else -1
    if personality is None or current == -1 or current & _ADDR_NO_RANDOMIZE:
        yield
        return
    personality(current | _ADDR_NO_RANDOMIZE)
    try:
        yield
    finally:
        personality(current)


def own_group() -> dict[str, Any]:
    """``Popen`` arguments that start the child as the leader of a new process group."""
    if sys.version_info >= (3, 11):
        return {"process_group": 0}
    return {"preexec_fn": functools.partial(os.setpgid, 0, 0)}  # Python 3.10: fork, not vfork
