"""Library host processes: where library code runs, so that it cannot take the caller down.

Each :class:`HostProcess` is a fresh Python process (``cbuild/run/host_server.py``) started with
ASLR off and the fixed environment programs get. It loads libraries and runs their
functions on request. A crash, ``exit()``, stack overflow or hang in library code ends
or stalls that process only; the caller gets an exception naming the function, the
signal or exit status, and the tail of the process's stderr.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from cbuild.build.cache import Cache, default_cache_dir
from cbuild.build.compile import compile_own
from cbuild.build.toolchain import Toolchain, find_toolchain
from cbuild.errors import ExecutionError, LibraryCrashed, LibraryTimeout
from cbuild.run.faults import FAULTS, PLACED, TRAPS, fault_place
from cbuild.run.host_server import Channel
from cbuild.run.program import DEFAULT_ENV, signal_name, uncaught_exception
from cbuild.run.spawn import aslr_off
from cbuild.run.stops import STOP_STATUS

HOST_SCRIPT = Path(__file__).with_name("host_server.py")
GUARD_SOURCE = Path(__file__).parent.parent / "runtime" / "host_guard.c"
_STACK_MARKER = b"\ninstrbudget-host: stack overflow\n"
_EXIT_MARKER = b"\ninstrbudget-host: exit called\n"
#: Where a fault happened (runtime/host_guard.c): the loaded file, the offset from its load address
#: and, for a memory fault, the address the instruction touched.
_FAULT_MARKER = re.compile(rb"\ninstrbudget-host: fault at (/[^\n]*)\+0x([0-9a-f]+)(?: address 0x([0-9a-f]+))?\n")


def guard_library(toolchain: Toolchain, cache: Cache) -> Path:
    """The host's crash guard (``runtime/host_guard.c``) as a shared library, built once per toolchain."""
    return compile_own(
        toolchain,
        cache,
        GUARD_SOURCE.read_text(),
        what="the library host's crash guard",
        stem="host_guard",
        flags=["-shared", "-fPIC", "-O2"],
        suffix=".so",
        mode=0o755,
    )


def _without_markers(stderr: bytes) -> bytes:
    """The host's stderr without the lines its guard wrote for this process."""
    return _FAULT_MARKER.sub(b"", stderr.replace(_STACK_MARKER, b"").replace(_EXIT_MARKER, b""))


def _fault_place(stderr: bytes, loaded: dict[str, Path], *, ran_off: bool = False, loading: Path | None = None) -> str:
    """Where the host's last fault was, from the line its guard wrote (``loaded`` names the files
    behind the host's memory files; a memory file it does not name is the library ``loading``,
    whose constructors crashed), or nothing if it wrote none: see :func:`fault_place`."""
    found = list(_FAULT_MARKER.finditer(stderr))
    if not found:
        return ""
    file, offset, address = found[-1].groups()
    name = file.decode(errors="replace")
    binary = loaded.get(name) or (loading if loading is not None and name.startswith("/proc/") else Path(name))
    touched = int(address, 16) if address is not None else None
    return fault_place(binary, int(offset, 16), touched, ran_off=ran_off)


class HostProcess:
    """One library host; :meth:`request` sends an operation and returns its result."""

    def __init__(self, guard: Path | None) -> None:
        requests_r, requests_w = os.pipe()
        replies_r, replies_w = os.pipe()
        request_box, reply_box = Channel.memory(), Channel.memory()
        self._dir = tempfile.TemporaryDirectory(prefix="instrbudget-host-")
        self.scratch = Path(self._dir.name)
        out_path, err_path = self.scratch / "stdout", self.scratch / "stderr"
        child_out, child_err = open(out_path, "ab"), open(err_path, "ab")  # noqa: SIM115 - closed below
        # Read through descriptions of our own, so the host's writes never move our position.
        self._outputs = [(os.open(out_path, os.O_RDONLY), 1), (os.open(err_path, os.O_RDONLY), 2)]
        self._seen = [0, 0]
        self._stderr_text = b""
        #: The names libraries are loaded under in the host (memory files) -> their files here.
        self.loaded: dict[str, Path] = {}
        #: The library being loaded (its constructors run), until its load returns.
        self.loading: Path | None = None
        env = {**DEFAULT_ENV, "PYTHONHASHSEED": "0"}
        fds = (request_box, requests_r, reply_box, replies_w)
        # Descriptor numbers zero-padded: the arguments have the same length every run.
        argv = [sys.executable, "-S", str(HOST_SCRIPT), *(f"{fd:06}" for fd in fds), str(guard or "")]
        try:
            with aslr_off():
                self.process = subprocess.Popen(
                    argv, stdin=subprocess.DEVNULL, stdout=child_out, stderr=child_err, pass_fds=fds, env=env
                )
        finally:
            os.close(requests_r)
            os.close(replies_w)
            child_out.close()
            child_err.close()
        os.set_blocking(requests_w, False)
        self._requests = Channel(request_box, requests_w)
        self._replies = Channel(reply_box, replies_r)
        #: Where library code stopped at a cut-off writes its stop record.
        self.stop_file = self.scratch / "stop"
        #: Why the process is gone, once it is.
        self.ended: str | None = None
        self._closed = False

    @property
    def alive(self) -> bool:
        """True while the process can take requests."""
        return self.ended is None

    def request(self, op: str, *args: Any, what: str, timeout: float | None = None, blobs: Sequence[Any] = ()) -> Any:
        """Run ``op`` in the host; ``what`` names it in errors (``"mk_parse()"``).

        ``blobs`` (bytes-like) travel beside the arguments, which refer to them by index;
        the reply's blobs can be copied out with :meth:`reply_blob_into` until the next request.
        """
        __tracebackhide__ = True
        if self.ended == "closed":  # a library kept past its test (in a module-level dict), or closed
            raise LibraryCrashed(
                f"{what}: the library was closed (the test that loaded it ended, or it was closed); a library "
                "serves the test that loaded it: call cbuild.library(...) in each test (its build is cached)"
            )
        if self.ended is not None:
            raise LibraryCrashed(f"{what}: the library's process ended earlier in this test ({self.ended})")
        try:
            self._requests.send((op, *args), blobs)
            reply = self._replies.receive() if self._replies.ready(timeout) else None
        except (EOFError, BrokenPipeError):
            raise self._died(what) from None
        except BaseException:  # interrupted (Ctrl-C) mid-call: the process may be anywhere in it
            self._kill()
            self.ended = f"{what} was interrupted"
            raise
        finally:
            self._forward_output()
        if reply is None:
            self._kill()
            self.ended = f"{what} ran past its {timeout:g} s timeout"
            tail = self._stderr_tail()
            killed = f"{what} ran past its {timeout:g} s timeout; the library's process was killed"
            timed_out = LibraryTimeout(f"{killed}{tail}")
            timed_out.echoed = tail
            raise timed_out
        if reply[0] == "error":
            raise ExecutionError(f"{what}: {reply[1]}: {reply[2]}")
        return reply[1]

    def reply_blob_into(self, index: int, address: int) -> int:
        """Copy blob ``index`` of the last reply to ``address`` (this process); returns its size."""
        return self._replies.blob_into(index, address)

    def _died(self, what: str) -> LibraryCrashed:
        try:
            status = self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._kill()
            status = self.process.wait()
        self._forward_output()
        if status == STOP_STATUS and self.stop_file.exists():
            summary = "was stopped at its cut-off"
        elif status < 0:
            name = signal_name(-status)
            if -status in FAULTS and _STACK_MARKER in self._stderr_text:
                cause = " (stack overflow)"
            elif -status in PLACED:
                cause = _fault_place(self._stderr_text, self.loaded, ran_off=-status in TRAPS, loading=self.loading)
            else:
                cause = uncaught_exception(-status, self._stderr_text)
            summary = f"crashed: killed by {name}{cause}"
        elif _EXIT_MARKER in self._stderr_text:
            summary = f"called exit({status})"
        else:
            summary = f"called _exit({status})"
        self.ended = f"{what} {summary}"
        tail = self._stderr_tail()
        crashed = LibraryCrashed(f"{what} {summary}; the library's process ended{tail}")
        crashed.echoed = tail
        return crashed

    def _forward_output(self) -> None:
        """Pass on what library code printed since the last look, as if it had printed it here."""
        for n, (fd, to) in enumerate(self._outputs):
            size = os.fstat(fd).st_size
            if size == self._seen[n]:
                continue
            data = os.pread(fd, size - self._seen[n], self._seen[n])
            self._seen[n] += len(data)
            if to == 2:
                self._stderr_text = (self._stderr_text + data)[-16384:]
                data = _without_markers(data)
            if data:
                with contextlib.suppress(OSError):
                    os.write(to, data)

    def _stderr_tail(self) -> str:
        """The last lines the host wrote to stderr under a heading (they were passed on to this
        process's stderr as they came), or "" if it wrote none."""
        text = _without_markers(self._stderr_text).decode(errors="replace")
        text = text.strip("\n")
        return f"\n--- stderr (last lines) ---\n{text[-4000:]}" if text else ""

    def _kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()
        self.process.wait()

    def close(self) -> None:
        """End the process (if it still runs) and remove its files.

        A host that was asked to exit is not waited for here: it is reaped when the next
        host starts, or at exit (killed if it is still running 5 s after it was asked).
        """
        _reap(block=False)
        if self._closed:
            return  # its descriptors' numbers may belong to someone else by now
        self._closed = True
        if self.ended is None:
            self.ended = "closed"
            try:
                self._requests.send(("exit",))
            except OSError:
                self._kill()
            else:
                _exiting.append((time.monotonic() + EXIT_GRACE, self.process))
        elif self.process.returncode is None:
            self._kill()
        for channel in (self._requests, self._replies):
            channel.close()
            for fd in (channel.memory_fd, channel.pipe_fd):
                with contextlib.suppress(OSError):
                    os.close(fd)
        for fd, _ in self._outputs:
            os.close(fd)
        self._dir.cleanup()

    def __del__(self) -> None:
        if getattr(self, "process", None) is not None and not self._closed:
            with contextlib.suppress(Exception):
                self.close()


#: Seconds a closed host has to exit before it is killed.
EXIT_GRACE = 5.0
#: Hosts asked to exit and not yet reaped: (deadline, process).
_exiting: list[tuple[float, subprocess.Popen[bytes]]] = []


def _reap(*, block: bool) -> None:
    """Collect hosts that have exited; kill those past their deadline (all of them, with ``block``)."""
    now = time.monotonic()
    still = []
    for deadline, process in _exiting:
        if process.poll() is not None:
            continue
        if block or now >= deadline:
            try:
                process.wait(timeout=max(0.0, deadline - now) if block else 0)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            continue
        still.append((deadline, process))
    _exiting[:] = still


atexit.register(_reap, block=True)


class HostPool:
    """Hands out fresh host processes, starting the next one ahead so that a test rarely waits."""

    def __init__(self, guard: Callable[[], Path | None]) -> None:
        self._guard = guard
        self._guard_path: Path | None = None
        self._spare: HostProcess | None = None

    def _start(self) -> HostProcess:
        if self._guard_path is None:
            self._guard_path = self._guard()
        return HostProcess(self._guard_path)

    def take(self) -> HostProcess:
        """A host that has served nobody yet."""
        host = self._spare if self._spare is not None and self._spare.process.poll() is None else self._start()
        self._spare = self._start()
        return host

    def close(self) -> None:
        """Stop the spare host."""
        if self._spare is not None:
            self._spare.close()
            self._spare = None


_default_pool: HostPool | None = None


def _default_guard(toolchain: Toolchain) -> Path:
    return guard_library(toolchain, Cache(default_cache_dir(), label=toolchain.label))


def default_pool() -> HostPool:
    """A pool for libraries loaded without one, with the default toolchain and cache."""
    global _default_pool
    if _default_pool is None:
        _default_pool = HostPool(lambda: _default_guard(find_toolchain(None)))
    return _default_pool
