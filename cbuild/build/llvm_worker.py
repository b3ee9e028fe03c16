"""LLVM's build stages in worker processes, where an abort inside LLVM cannot end the session.

LLVM reports some failures by ending its process: ``report_fatal_error`` prints
``LLVM ERROR: ...`` and aborts, a failed assertion aborts, an error diagnostic
nobody handles exits with status 1. :func:`link_units` and :func:`compile_module`
run :mod:`cbuild.build.codegen`'s stages in a worker process instead of the caller's;
when the worker dies the build raises :class:`~cbuild.errors.LLVMCrashed`, naming
the stage, the sources and what the worker printed last, and the next request
starts a new worker. Errors LLVM reports normally (the verifier's) come back as
the same exceptions the stages raise in-process.

Workers live as long as the process that started them: Python and llvmlite start
once per worker, not once per build. A pool keeps up to one per CPU, started on
demand, so builds in several threads run side by side. A worker reads
length-prefixed pickles on its stdin and answers on its stdout; its stderr goes
to a temporary file the parent reads when it dies. It exits when its stdin
closes: when the parent ends the pool at exit, or when the parent is gone.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

from cbuild.errors import CBuildError, LLVMCrashed
from cbuild.framing import receive_message, send_message

#: Characters of the dead worker's stderr quoted in the error (its end: LLVM's message).
STDERR_TAIL = 4000
#: Sources named in an error before the rest are counted.
MAX_NAMED_SOURCES = 8
#: The worker imports the engine's modules it needs (codegen, blocks, errors, framing) without
#: running ``cbuild/__init__.py``, which imports all of the engine: over half of the start-up.
_BOOTSTRAP = """\
import sys, types
if sys.path and sys.path[0] == "":
    del sys.path[0]
package = types.ModuleType("cbuild")
package.__path__ = [sys.argv[1]]
sys.modules["cbuild"] = package
from cbuild.build.llvm_worker import serve
serve()
"""


def _portable(exc: Exception) -> Exception:
    """``exc`` as the parent should raise it.

    The engine's errors travel as they are (their messages say it all); other exceptions
    carry the worker's traceback in a note, or become a RuntimeError quoting it if they
    cannot be pickled.
    """
    if isinstance(exc, CBuildError):
        return exc
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)).rstrip()
    notes = [*getattr(exc, "__notes__", ()), f"in the LLVM worker:\n{text}"]
    setattr(exc, "__notes__", notes)  # noqa: B010 - an attribute of Python 3.11, shown with the traceback
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        return RuntimeError(f"{type(exc).__name__} in the LLVM worker: {exc}\n{text}")
    return exc


def serve() -> None:
    """The worker's loop: answer requests until stdin closes."""
    # Ctrl-C reaches the whole process group; the parent handles it and ends its workers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    requests = os.fdopen(os.dup(0), "rb")
    replies = os.fdopen(os.dup(1), "wb")
    # Whatever else reads stdin or writes stdout (LLVM's diagnostics) stays off the channel.
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    from cbuild.build import codegen

    operations: dict[str, Callable[..., Any]] = {
        "link_units": codegen.link_units,
        "compile_module": codegen.compile_module,
    }
    while True:
        try:
            name, args, kwargs = receive_message(requests)
        except EOFError:
            return
        try:
            reply: tuple[str, Any] = ("ok", operations[name](*args, **kwargs))
        except Exception as exc:  # the parent raises it in the build that asked
            reply = ("error", _portable(exc))
        send_message(replies, reply)


class WorkerDied(Exception):
    """A worker ended before it answered (internal: the pool turns it into LLVMCrashed)."""

    def __init__(self, how: str, stderr: str) -> None:
        super().__init__(how)
        self.how = how
        self.stderr = stderr


def _describe(returncode: int | None) -> str:
    if returncode is None:
        return "stopped answering"
    if returncode < 0:
        try:
            return f"was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited with status {returncode}"


class Worker:
    """One worker process; one request at a time (the pool sees to that)."""

    def __init__(self) -> None:
        if not sys.executable:
            raise CBuildError("cannot start the LLVM worker: sys.executable is not set")
        # Open as long as the worker lives (closed in close()).
        self._stderr = tempfile.TemporaryFile(prefix="instrbudget-llvm-")  # noqa: SIM115
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _BOOTSTRAP, str(Path(__file__).parent.parent)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                close_fds=True,
            )
        except OSError as exc:
            self._stderr.close()
            raise CBuildError(f"cannot start the LLVM worker ({sys.executable}): {exc}") from exc
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self._requests: IO[bytes] = self.process.stdin
        self._replies: IO[bytes] = self.process.stdout

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def call(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, Any]:
        """``("ok", value)`` or ``("error", exception)``; raises WorkerDied if the worker ended first."""
        start = os.fstat(self._stderr.fileno()).st_size
        try:
            send_message(self._requests, (name, args, kwargs))
            return receive_message(self._replies)  # type: ignore[no-any-return]
        except (EOFError, BrokenPipeError):
            pass
        try:
            returncode: int | None = self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            returncode = None
        raise WorkerDied(_describe(returncode), self._stderr_since(start))

    def _stderr_since(self, start: int) -> str:
        fd = self._stderr.fileno()
        end = os.fstat(fd).st_size
        begin = max(start, end - STDERR_TAIL)
        return os.pread(fd, end - begin, begin).decode(errors="replace").strip()

    def close(self, *, kill: bool = False) -> None:
        """End the process: closing its stdin ends its loop; a worker still busy after 5 s (or
        at once with ``kill``: one left half-way through a request) is killed."""
        if kill and self.process.poll() is None:
            self.process.kill()
        for stream in (self._requests, self._replies):
            with contextlib.suppress(OSError):  # a dead worker's pipe
                stream.close()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._stderr.close()

    def forget(self) -> None:
        """In a forked child: drop this process's copies of the pipes, leave the worker to its parent.

        The descriptors are pointed at /dev/null rather than closed: their file objects
        still close them some day, and must not close a number reused meanwhile.
        """
        devnull = os.open(os.devnull, os.O_RDWR)
        try:
            for stream in (self._requests, self._replies, self._stderr):
                with contextlib.suppress(OSError, ValueError):
                    os.dup2(devnull, stream.fileno())
        finally:
            os.close(devnull)


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


class WorkerPool:
    """Up to ``size`` workers, started on demand and kept for later requests."""

    def __init__(self, size: int) -> None:
        self.size = max(1, size)
        self._idle: list[Worker] = []
        self._all: set[Worker] = set()
        self._reserved = 0  # workers being started
        self._cond = threading.Condition()

    def _count(self) -> int:
        return len(self._all) + self._reserved

    def _start(self) -> Worker:
        """A new worker, in a slot reserved under the lock."""
        try:
            worker = Worker()
        except BaseException:
            with self._cond:
                self._reserved -= 1
                self._cond.notify()
            raise
        with self._cond:
            self._reserved -= 1
            self._all.add(worker)
        return worker

    def _acquire(self) -> Worker:
        with self._cond:
            while True:
                while self._idle:
                    worker = self._idle.pop()
                    if worker.alive():
                        return worker
                    self._all.discard(worker)  # died while idle (killed from outside)
                    worker.close()
                if self._count() < self.size:
                    self._reserved += 1
                    break
                self._cond.wait()
        return self._start()

    def _release(self, worker: Worker, healthy: bool) -> None:
        with self._cond:
            if healthy:
                self._idle.append(worker)
            else:
                self._all.discard(worker)
            self._cond.notify()
        if not healthy:
            worker.close(kill=True)

    def prestart(self) -> None:
        """Start one worker now if there is none, so that it is ready when a build needs it."""
        with self._cond:
            if self._count():
                return
            self._reserved += 1
        worker = self._start()
        self._release(worker, True)

    def call(self, stage: str, sources: Sequence[str], name: str, *args: Any, **kwargs: Any) -> Any:
        """Run ``codegen.<name>(*args, **kwargs)`` in a worker; its exceptions are raised here."""
        worker = self._acquire()
        healthy = False
        try:
            status, value = worker.call(name, args, kwargs)
            healthy = True
        except WorkerDied as died:
            raise LLVMCrashed(_crash_message(stage, sources, died)) from None
        finally:
            self._release(worker, healthy)
        if status == "error":
            raise value
        return value

    def workers(self) -> list[Worker]:
        """The live workers (for tests and diagnostics)."""
        with self._cond:
            return list(self._all)

    def shutdown(self) -> None:
        """End every worker (at exit)."""
        with self._cond:
            workers = list(self._all)
            self._all.clear()
            self._idle.clear()
        for worker in workers:
            worker.close()

    def forget(self) -> None:
        """In a forked child: the workers belong to the parent."""
        for worker in self._all:
            worker.forget()


def _crash_message(stage: str, sources: Sequence[str], died: WorkerDied) -> str:
    named = ", ".join(sources[:MAX_NAMED_SOURCES])
    if len(sources) > MAX_NAMED_SOURCES:
        named += f" and {len(sources) - MAX_NAMED_SOURCES} more"
    said = f"; its last output:\n{died.stderr}" if died.stderr else ", printing nothing"
    return f"{stage} {named} failed: the LLVM worker process {died.how}{said}"


_pool = WorkerPool(_cpus())
#: Pools left behind by a fork: kept referenced so that their pipes are never flushed or closed twice.
_inherited: list[WorkerPool] = []


def _after_fork_in_child() -> None:
    global _pool
    _pool.forget()
    _inherited.append(_pool)
    _pool = WorkerPool(_pool.size)


def _shutdown() -> None:
    _pool.shutdown()


atexit.register(_shutdown)
os.register_at_fork(after_in_child=_after_fork_in_child)


def pool() -> WorkerPool:
    """This process's pool."""
    return _pool


def prestart() -> None:
    """Start a worker in the background if none runs yet (while clang compiles, say)."""
    _pool.prestart()


def link_units(
    paths: Sequence[Path],
    names: Sequence[str],
    *,
    libc: Sequence[Path] = (),
    libcxx: Path | None = None,
    size_bits: int = 64,
) -> str:
    """:func:`cbuild.build.codegen.link_units` in a worker: the linked module's text."""
    text: str = _pool.call(
        "linking the IR of",
        names,
        "link_units",
        [str(p) for p in paths],
        list(names),
        libc=[str(p) for p in libc],
        libcxx=None if libcxx is None else str(libcxx),
        size_bits=size_bits,
    )
    return text


def compile_module(text: str, models: str | None, *, triple: str, speed_level: int, sources: Sequence[str]) -> bytes:
    """:func:`cbuild.build.codegen.compile_module` in a worker; ``sources`` name the build in errors."""
    obj: bytes = _pool.call(
        "generating code for", sources, "compile_module", text, models, triple=triple, speed_level=speed_level
    )
    return obj
