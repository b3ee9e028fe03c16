"""Messages between the engine's processes (LLVM workers, executor servers, library guests): each
pickled, its length first."""

from __future__ import annotations

import pickle
import struct
from collections.abc import Callable
from typing import IO, Any

_LENGTH = struct.Struct("<Q")


def send_message(out: IO[bytes], message: Any) -> None:
    """One pickled message, length first."""
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    out.write(_LENGTH.pack(len(data)))
    out.write(data)
    out.flush()


def receive_message(inp: IO[bytes]) -> Any:
    """The next message :func:`send_message` sent; EOFError when the stream ended (also half-way
    through one)."""
    return read_message(inp.read)


def read_message(read: Callable[[int], bytes]) -> Any:
    """One message, read with ``read`` (which may return fewer bytes than asked for, none at the end)."""
    (n,) = _LENGTH.unpack(_read_exactly(read, _LENGTH.size))
    return pickle.loads(_read_exactly(read, n))


def _read_exactly(read: Callable[[int], bytes], n: int) -> bytes:
    parts = []
    while n:
        part = read(n)
        if not part:
            raise EOFError
        parts.append(part)
        n -= len(part)
    return b"".join(parts)
