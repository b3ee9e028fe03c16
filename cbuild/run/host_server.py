"""The library host: a process that loads a test's shared libraries and runs their functions.

Started by :mod:`cbuild.run.hosts` as ``python -S host_server.py REQUESTS REQUEST_BELL REPLIES REPLY_BELL GUARD_SO``
with ASLR off and a fixed environment; standard library only. Requests and replies
travel through two :class:`Channel`\\ s. The test process imports this module for the
channel; everything else runs in the host.
"""

from __future__ import annotations

import ctypes
import itertools
import marshal
import mmap
import os
import select
import struct
import sys
import time

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs the host milliseconds

if TYPE_CHECKING:  # the host starts once per test: only what it needs at run time is imported
    from collections.abc import Callable, Iterator, Sequence
    from typing import Any

#: Sequence number and payload length at the start of each shared-memory mailbox.
_HEADER = struct.Struct("<QQ")
_WORD = struct.Struct("<Q")
#: How long a side polls shared memory for the next message before it sleeps on its pipe.
#: Waking a sleeping process costs tens of microseconds on virtual machines; a call
#: made right after the previous one's reply is seen within a few.
SPIN_SECONDS = 200e-6 if os.uname().machine in ("x86_64", "i686") else 0.0
#: Bytes reserved for one mailbox at first; a larger message grows its file.
MAILBOX_BYTES = 1 << 20
#: Bytes read from a returned ``char *`` at most, when the test asks for its string.
MAX_STRING = 1 << 24
#: The memory a call's arguments point at (buffers, strings, arrays of strings) starts at a
#: multiple of this: the counted strlen's work depends on where a string starts within a 32-byte
#: block, and the host's heap puts its objects wherever its layout (the project's path, for one)
#: leaves room.
ARGUMENT_ALIGN = 64
#: Where an instrumented library's runtime writes its counters if a call ends this process: read
#: from the environment when the library loads (cbuild.run.program.COUNTS_ENV).
_COUNTS_ENV = "INSTRBUDGET_COUNTS"


class Channel:
    """One direction of messages: a shared-memory mailbox (a memory file) and a pipe as its doorbell.

    The sender copies a :mod:`marshal` payload into the mailbox, then bumps the
    sequence number, then writes one byte to the pipe. The receiver polls the
    sequence number for :data:`SPIN_SECONDS`, and otherwise sleeps reading the pipe
    until the next number is there. Stores reach the other process in program order (x86);
    elsewhere the receiver does not poll, and the pipe orders them. Requests and replies
    alternate, so a mailbox is never written while its last message is unread.
    """

    def __init__(self, memory_fd: int, pipe_fd: int) -> None:
        self.memory_fd = memory_fd
        self.pipe_fd = pipe_fd
        self._map = mmap.mmap(memory_fd, os.fstat(memory_fd).st_size)
        self._size = self._map.size()
        self._seq = 0
        # Wake-ups are read into this: whether a side slept or spun leaves the heap the same,
        # and so the addresses the library's allocations get.
        self._doorbell = bytearray(4096)
        self._base = 0
        #: (offset, size) of each blob of the last message received.
        self.blobs: list[tuple[int, int]] = []

    @staticmethod
    def memory() -> int:
        """A new mailbox file."""
        fd = os.memfd_create("instrbudget-mailbox", 0)
        os.ftruncate(fd, MAILBOX_BYTES)
        return fd

    def _fit(self, size: int) -> None:
        if self._size < size:
            if os.fstat(self.memory_fd).st_size < size:
                os.ftruncate(self.memory_fd, max(size, 2 * self._size))
            self._map.close()
            self._map = mmap.mmap(self.memory_fd, os.fstat(self.memory_fd).st_size)
            self._size = self._map.size()
            self._base = 0

    @property
    def base(self) -> int:
        """The mailbox's address in this process."""
        if not self._base:
            anchor = ctypes.c_char.from_buffer(self._map)  # released at once: the mapping stays
            self._base = ctypes.addressof(anchor)
            del anchor
        return self._base

    def send(self, message: Any, blobs: Sequence[Any] = ()) -> None:
        """Post one message, and ``blobs`` (bytes-like) beside it, copied once each."""
        sizes = [memoryview(blob).nbytes for blob in blobs]
        payload = marshal.dumps((message, sizes))
        at = _HEADER.size + len(payload)
        spans = []
        for size in sizes:
            at = (at + 15) & ~15
            spans.append((at, size))
            at += size
        self._fit(at)
        self._map[_HEADER.size : _HEADER.size + len(payload)] = payload
        for (start, size), blob in zip(spans, blobs, strict=True):
            self._map[start : start + size] = blob
        self._seq += 1
        # The payload and its length first, then the sequence number: a receiver that sees the
        # whole new number sees the whole message.
        _WORD.pack_into(self._map, 8, len(payload))
        _WORD.pack_into(self._map, 0, self._seq)
        try:  # noqa: SIM105 - cheaper than contextlib.suppress on every message
            os.write(self.pipe_fd, b"!")
        except BlockingIOError:  # a full pipe already holds wake-ups the receiver has yet to read
            pass

    def ready(self, timeout: float | None) -> bool:
        """Wait until a message is there (at most ``timeout`` seconds); raises EOFError if the sender is gone."""
        # The exact next number: a number caught half-written (the sender stores it byte by byte)
        # never equals it, so a message counts as there only once its number is complete.
        expected = self._seq + 1
        deadline = time.perf_counter() + SPIN_SECONDS
        while time.perf_counter() < deadline:
            if _HEADER.unpack_from(self._map, 0)[0] == expected:
                return True
            os.sched_yield()  # should the other side share this CPU, it runs now
        end = None if timeout is None else time.monotonic() + timeout
        while _HEADER.unpack_from(self._map, 0)[0] != expected:
            wait = None if end is None else max(0.0, end - time.monotonic())
            if not select.select([self.pipe_fd], [], [], wait)[0]:
                return False
            if not os.readv(self.pipe_fd, [self._doorbell]):
                if _HEADER.unpack_from(self._map, 0)[0] == expected:
                    return True
                raise EOFError
        return True

    def receive(self) -> Any:
        """The message :meth:`ready` found; its blobs stay in the mailbox until the next one."""
        size = _HEADER.unpack_from(self._map, 0)[1]
        self._fit(_HEADER.size + size)
        self._seq += 1
        with memoryview(self._map) as whole, whole[_HEADER.size : _HEADER.size + size] as payload:
            message, sizes = marshal.loads(payload)  # straight from the mailbox: no copy of the payload first
        at = _HEADER.size + size
        self.blobs = []
        for blob_size in sizes:
            at = (at + 15) & ~15
            self.blobs.append((at, blob_size))
            at += blob_size
        self._fit(at)
        return message

    def blob_into(self, index: int, address: int) -> int:
        """Copy blob ``index`` of the last message to ``address``; returns its size."""
        start, size = self.blobs[index]
        ctypes.memmove(address, self.base + start, size)
        return size

    def close(self) -> None:
        """Unmap the mailbox."""
        self._map.close()


#: Clocks the runtime keeps (IB_CLOCKS in runtime/instrbudget_rt.c): the IR total and three models'.
_CLOCKS = 4


class _Loaded:
    """One loaded library: its functions (typed on first use) and its counters."""

    def __init__(
        self,
        path: str,
        types: dict[str, Any],
        functions: dict[str, Any],
        type_map: Any,
        clocks: dict[str, int],
        stop_file: str,
        counts_file: str,
        guard: Any,
    ) -> None:
        # A memory file gives each load its own inode, hence its own copy of the library
        # (static state and counters from zero), under a path that is the same every run.
        fd = os.memfd_create("instrbudget-lib", 0)
        with open(path, "rb") as f:
            os.write(fd, f.read())
        #: The name the library is loaded under (what a fault in it is reported with).
        self.file = f"/proc/self/fd/{fd}"
        os.environ[_COUNTS_ENV] = counts_file  # the runtime takes it out again as it loads
        try:
            self.dll = ctypes.CDLL(self.file, mode=os.RTLD_LOCAL | os.RTLD_NOW)
        finally:
            os.environ.pop(_COUNTS_ENV, None)
        # The guard has it write its counters on a fatal signal.
        dump = ctypes.cast(self.dll.instrbudget_dump, ctypes.c_void_p)
        if guard is not None and guard.instrbudget_host_on_crash(dump):
            raise RuntimeError("more than 4096 libraries loaded in one test's process")
        self.map = type_map(types)
        self.functions = functions
        self._typed: dict[str, tuple[Any, list[Any], Any]] = {}
        dll = self.dll
        dll.instrbudget_collect.argtypes = [ctypes.c_void_p]
        dll.instrbudget_collect.restype = None
        dll.instrbudget_ncounters.restype = ctypes.c_uint64
        dll.instrbudget_threads.restype = ctypes.c_uint64
        dll.instrbudget_results.restype = ctypes.c_void_p
        dll.instrbudget_nresults.restype = ctypes.c_uint64
        dll.instrbudget_models_reset.argtypes = [ctypes.c_uint32]
        dll.instrbudget_profile_write.argtypes = [ctypes.c_char_p]
        dll.instrbudget_profile_write.restype = ctypes.c_int
        n = int(dll.instrbudget_ncounters())
        #: Every thread's counters, added up here by ``instrbudget_collect(counters_at)``.
        self.counters = (ctypes.c_char * (8 * n))()
        self.counters_at = ctypes.addressof(self.counters)
        nresults = int(dll.instrbudget_nresults())
        self.results = (ctypes.c_char * (8 * nresults)).from_address(dll.instrbudget_results())
        dll.instrbudget_models_reset(1)
        #: Metric -> the runtime's clock number, for cut-offs (empty: built without checks).
        self.clocks = clocks
        self.now = (ctypes.c_uint64 * _CLOCKS)()
        if clocks:
            dll.instrbudget_set_limit.argtypes = [ctypes.c_uint32, ctypes.c_int64]
            dll.instrbudget_clocks.argtypes = [ctypes.c_void_p]
            dll.instrbudget_set_stop_file.argtypes = [ctypes.c_char_p]
            dll.instrbudget_set_stop_file(stop_file.encode())

    def clock_values(self) -> dict[str, int]:
        """Every limited metric's clock now."""
        self.dll.instrbudget_clocks(ctypes.addressof(self.now))
        return {metric: int(self.now[c]) for metric, c in self.clocks.items()}

    def set_limits(self, limits: dict[str, int]) -> None:
        """Stop before passing ``limits`` (absolute clock values); clocks not named get none."""
        for metric, clock in self.clocks.items():
            self.dll.instrbudget_set_limit(clock, limits.get(metric, -1))

    def function(self, name: str) -> tuple[Any, list[Any], Any]:
        """The ctypes function, its parameter types and its return type."""
        if name not in self._typed:
            sig = self.functions[name]
            raw = getattr(self.dll, name)
            params = [self.map.ctype(p["type"]) for p in sig["params"]]
            ret = self.map.ctype(sig["ret"])
            raw.argtypes = params
            raw.restype = ret
            self._typed[name] = (raw, params, ret)
        return self._typed[name]


#: Types whose values travel to the test as copies; other objects stay here, behind handles.
_PLAIN = (type(None), bool, int, float, complex, str, bytes, bytearray, tuple, list, dict, set, frozenset, range,
          slice, type(Ellipsis), type(NotImplemented))  # fmt: skip


#: Types of values sent as a plain pickle, without a pickler that maps handles (both directions).
SCALARS = frozenset((type(None), bool, int, float, str, bytes))
_OPS: dict[str, Callable[..., Any]] = {}
#: Iterations a test has under way over the module's objects, by the number given to the test.
_ITERATIONS: dict[int, Iterator[Any]] = {}


def aligned_buffer(size: int) -> Any:
    """A zeroed ``c_char`` array of ``size`` bytes at a multiple of :data:`ARGUMENT_ALIGN`."""
    room = (ctypes.c_char * (size + ARGUMENT_ALIGN))()
    return (ctypes.c_char * size).from_buffer(room, -ctypes.addressof(room) % ARGUMENT_ALIGN)


def aligned_string(text: bytes) -> Any:
    """``text`` with its terminating zero in an :func:`aligned_buffer`."""
    buf = aligned_buffer(len(text) + 1)
    ctypes.memmove(buf, text, len(text))
    return buf


def _iter_start(obj: Any) -> int:
    iterator = iter(obj)
    key = id(iterator)
    _ITERATIONS[key] = iterator
    return key


def _iter_take(obj: Any, key: int, n: int) -> list[Any]:
    """The next ``n`` items of an iteration (fewer at its end, which forgets it)."""
    iterator = _ITERATIONS.get(key)
    items = [] if iterator is None else list(itertools.islice(iterator, n))
    if len(items) < n:
        _ITERATIONS.pop(key, None)
    return items


def _iter_end(obj: Any, key: int) -> None:
    _ITERATIONS.pop(key, None)


def _python_ops() -> dict[str, Callable[..., Any]]:
    """Operations on a Python object the test asks for by name (cbuild.run.extension.RemoteObject)."""
    if not _OPS:
        import operator

        _OPS.update(
            getattr=getattr, setattr=setattr, repr=repr, str=str, len=len, getitem=operator.getitem,
            setitem=operator.setitem, contains=operator.contains, bool=bool, eq=operator.eq, ne=operator.ne,
            hash=hash, dir=dir, list=list, lt=operator.lt, le=operator.le, gt=operator.gt, ge=operator.ge,
            neg=operator.neg, pos=operator.pos, invert=operator.invert, abs=abs, index=operator.index,
            int=int, float=float, complex=complex, round=round,
            iter_start=_iter_start, iter_take=_iter_take, iter_end=_iter_end,
        )  # fmt: skip
        # Binary operators, each also reflected (``1 & obj``: ``rand``) and in place (``obj &= 1``: ``iand``).
        for name in BINARY_OPERATORS:
            forward = divmod if name == "divmod" else getattr(operator, f"{name}_" if name in ("and", "or") else name)
            _OPS[name] = forward
            _OPS[f"r{name}"] = lambda obj, other, forward=forward: forward(other, obj)
            if name != "divmod":
                _OPS[f"i{name}"] = getattr(operator, f"i{name}")
    return _OPS


#: Binary operators a test may apply to an object of the module's (by their dunder names).
BINARY_OPERATORS = (
    "add", "sub", "mul", "matmul", "truediv", "floordiv", "mod", "pow", "divmod",
    "lshift", "rshift", "and", "or", "xor",
)  # fmt: skip


def _shared(obj: Any) -> bool:
    """Whether ``obj`` is known to the test process too: built-in and standard-library classes and
    functions (pickled by name), and values of their types (copied)."""
    named = obj if isinstance(obj, type) or callable(obj) else type(obj)
    module = getattr(named, "__module__", None)
    return isinstance(module, str) and (module == "builtins" or module.partition(".")[0] in sys.stdlib_module_names)


def _label(obj: Any) -> str:
    """What an object is, for messages: ``mmh3.hash128``, ``mmh3.mmh3_x64_128 object``."""
    if isinstance(obj, type(sys)):
        return str(obj.__name__)
    name = getattr(obj, "__qualname__", None) if callable(obj) else None
    if isinstance(name, str):
        module = getattr(obj, "__module__", None)
        return f"{module}.{name}" if isinstance(module, str) else name
    cls = type(obj)
    return f"{cls.__module__}.{cls.__qualname__} object"


class Host:
    """Serves requests until told to stop (or until a library call ends the process)."""

    def __init__(self, type_map: Any, requests: Channel, guard: Any = None) -> None:
        self.type_map = type_map
        self.requests = requests
        #: The host guard (runtime/host_guard.c), None where it is not loaded.
        self.guard = guard
        #: Buffers to send back beside the reply being made.
        self.blobs_out: list[Any] = []
        self.libraries: dict[int, _Loaded] = {}
        #: Copies of the test's buffers, by their address in the test process: C code that keeps a
        #: pointer to one finds it again, updated, when the buffer is passed again. Kept for the test.
        self.slots: dict[int, Any] = {}
        self.libc = ctypes.CDLL(None)
        self.libc.fflush.argtypes = [ctypes.c_void_p]
        self.ops: dict[str, Callable[..., Any]] = {
            "load": self.load,
            "call": self.call,
            "snapshot": self.snapshot,
            "counts": self.counts,
            "read": self.read,
            "string": self.string,
            "limits": self.limits,
            "remaining": self.remaining,
            "spend": self.spend,
            "import": self.import_module,
            "py": self.python,
        }
        #: Python objects the test holds handles to (extension modules and what they made), by handle.
        self.objects: list[Any] = []
        #: Metric -> what library code may still execute before it is stopped (None: no cut-off).
        self.left: dict[str, int] | None = None

    def load(
        self,
        lib_id: int,
        path: str,
        types: dict[str, Any],
        functions: dict[str, Any],
        clocks: dict[str, int],
        stop_file: str,
        counts_file: str,
    ) -> tuple[str, bytes]:
        """Load the library at ``path``; returns the name it is loaded under and its counters after
        its constructors ran (a :meth:`snapshot`, in the same reply). Its counters go to
        ``counts_file`` if a call ends this process."""
        self.libraries[lib_id] = _Loaded(
            path, types, functions, self.type_map, clocks, stop_file, counts_file, self.guard
        )
        return self.libraries[lib_id].file, self.snapshot(lib_id)

    def limits(self, left: dict[str, int]) -> None:
        self.left = dict(left) if left else None
        if self.left is None:
            for lib in self.libraries.values():
                if lib.clocks:
                    lib.set_limits({})

    def remaining(self) -> dict[str, int]:
        return dict(self.left or {})

    def spend(self, spent: dict[str, int]) -> None:
        """Library code measured elsewhere (a RISC-V build's replay of a call) used ``spent``."""
        if self.left is not None:
            self.left = {m: n - spent.get(m, 0) for m, n in self.left.items()}

    def _run(self, lib: _Loaded, raw: Any, values: list[Any]) -> Any:
        """Call ``raw``, with the remaining cut-off in force when there is one."""
        left = self.left
        if left is None or not lib.clocks:
            return raw(*values)
        before = lib.clock_values()
        lib.set_limits({m: before[m] + max(n, 0) for m, n in left.items() if m in before})
        try:
            return raw(*values)
        finally:
            after = lib.clock_values()
            self.left = {m: n - (after[m] - before[m]) if m in before else n for m, n in left.items()}

    def _memory(self, slot: int | None, size: int) -> Any:
        """A buffer of ``size`` bytes; a slot keeps its address for the test's buffer while its size holds."""
        if slot is None:
            return aligned_buffer(size)
        buf = self.slots.get(slot)
        if buf is None or len(buf) != size:
            buf = self.slots[slot] = aligned_buffer(size)
        return buf

    def call(self, lib_id: int, name: str, args: list[Any]) -> tuple[Any, list[Any], dict[str, int] | None]:
        """Call a library function: its result, the buffers it wrote, and the cut-off left after
        it (None: none; a RISC-V build's replay of the call counts against it too)."""
        lib = self.libraries[lib_id]
        raw, params, ret = lib.function(name)
        values: list[Any] = []
        keep: list[Any] = []  # memory that must outlive the call itself
        back: list[tuple[int, Any, Any]] = []
        given: list[tuple[int, Any, bytes]] = []  # read-only memory, to tell whether the function wrote into it
        for n, (tag, *rest) in enumerate(args):
            if tag == "v":
                values.append(rest[0])
            elif tag == "m":  # memory: slot (None: this call only), its blob, whether to send it back (None:
                # read-only memory, only whether the function wrote into it)
                slot, blob, send_back = rest
                buf = self._memory(slot, self.requests.blobs[blob][1])
                self.requests.blob_into(blob, ctypes.addressof(buf))
                keep.append(buf)
                values.append(ctypes.addressof(buf))
                if send_back:
                    back.append((n, buf, None))
                elif send_back is None:
                    given.append((n, buf, bytes(buf)))
            elif tag == "cp":  # a char * the function may point elsewhere (char ** out-parameter)
                text = None if rest[0] is None else aligned_string(rest[0])
                cell = ctypes.c_void_p(None if text is None else ctypes.addressof(text))
                keep += [text, cell]
                values.append(ctypes.addressof(cell))
                back.append((n, cell, cell.value))
            elif tag == "strings":  # an array of C strings (char **), NULL-terminated as well
                strings = [None if s is None else aligned_string(s) for s in rest[0]]
                array = (ctypes.c_void_p * (len(strings) + 1)).from_buffer(
                    aligned_buffer(ctypes.sizeof(ctypes.c_void_p) * (len(strings) + 1))
                )
                array[: len(strings)] = [None if s is None else ctypes.addressof(s) for s in strings]
                keep += [strings, array]
                values.append(ctypes.addressof(array))
            else:  # "s": a structure by value, as its bytes
                values.append(params[n].from_buffer_copy(rest[0]))
        result = self._run(lib, raw, values)
        self.libc.fflush(None)
        written: list[tuple[int, Any, bytes | None]] = []
        self.blobs_out = []
        written += [(n, None, None) for n, buf, before in given if bytes(buf) != before]
        for n, buf, before in back:
            if isinstance(buf, ctypes.c_void_p):
                if buf.value != before:
                    written.append((n, buf.value or 0, None if buf.value is None else ctypes.string_at(buf.value)))
            else:
                written.append((n, len(self.blobs_out), None))
                self.blobs_out.append(buf)
        if ret is None:
            out: Any = ("v", None)
        elif ret is ctypes.c_void_p:
            out = ("p", result)
        elif isinstance(ret, type) and issubclass(ret, (ctypes.Structure, ctypes.Union, ctypes.Array)):
            out = ("s", bytes(result))
        else:
            out = ("v", result)
        return out, written, None if self.left is None else dict(self.left)

    def import_module(self, lib_id: int, name: str) -> tuple[int, str]:
        """Import loaded library ``lib_id`` as the extension module ``name``; its handle and label."""
        import importlib.machinery
        import importlib.util

        path = self.libraries[lib_id].dll._name  # the same file, so the same loaded copy
        loader = importlib.machinery.ExtensionFileLoader(name, path)
        spec = importlib.util.spec_from_file_location(name, path, loader=loader)
        assert spec is not None
        module = importlib.util.module_from_spec(spec)  # PyInit_<name> runs here
        sys.modules[name] = module
        loader.exec_module(module)
        self.objects.append(module)
        return len(self.objects) - 1, name

    def python(
        self, lib_id: int, handle: int, op: str, payload: bytes, writable: list[int | str]
    ) -> tuple[bool, Any, list[bytes]]:
        """Apply ``op`` to object ``handle`` with the pickled ``(args, kwargs)``: (True, pickled
        result) or (False, the exception) when it raised, and the contents of the arguments
        ``writable`` names (positions and keywords) after the call."""
        import io  # the extension modules' imports: libraries' tests never pay for them
        import pickle

        from_test = pickle.Unpickler(io.BytesIO(payload))
        from_test.persistent_load = self.objects.__getitem__  # type: ignore[method-assign]
        args, kwargs = from_test.load()
        target = self.objects[handle]
        if op == "call":
            action, values = target, args
        else:
            action, values = _python_ops()[op], (target, *args)

        def written() -> list[bytes]:
            return [bytes(args[k] if isinstance(k, int) else kwargs[k]) for k in writable]

        try:
            result = self._run(self.libraries[lib_id], lambda: action(*values, **kwargs), [])
        except BaseException as exc:  # KeyboardInterrupt and SystemExit too: the module's, not the host's
            self.libc.fflush(None)
            if type(exc).__module__ == "builtins" and isinstance(exc, Exception):
                try:
                    return False, ("value", self._pickled(exc)), written()
                except Exception:  # arguments that cannot travel: sent as its text below
                    pass
            mro = type(exc).__mro__
            names = [_label(c) for c in mro[: next(n for n, c in enumerate(mro) if c.__module__ == "builtins")]]
            base = next(c.__name__ for c in mro if c.__module__ == "builtins")
            try:
                text = str(exc)
            except Exception as err:  # a __str__ that raises
                text = f"<str() raised {type(err).__name__}>"
            return False, ("foreign", names or [type(exc).__name__], base, text), written()
        self.libc.fflush(None)
        return True, self._pickled(result), written()

    def _pickled(self, value: Any) -> bytes:
        """``value`` pickled, with every object that is not plain data kept here and sent as a handle."""
        import io
        import pickle

        if type(value) in SCALARS:
            return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        kept = len(self.objects)

        def handle(obj: Any) -> Any:
            if type(obj) in _PLAIN or (copies and _shared(obj)):
                return None
            self.objects.append(obj)
            if isinstance(obj, type) and issubclass(obj, BaseException) and not _shared(obj):
                mro = obj.__mro__
                names = [_label(c) for c in mro[: next(n for n, c in enumerate(mro) if c.__module__ == "builtins")]]
                base = next(c.__name__ for c in mro if c.__module__ == "builtins")
                return "exception type", len(self.objects) - 1, names, base
            return len(self.objects) - 1, _label(obj)

        # Values of standard-library types are copied too, unless one of them cannot be.
        for copies in (True, False):
            out = io.BytesIO()
            to_test = pickle.Pickler(out, protocol=pickle.HIGHEST_PROTOCOL)
            to_test.persistent_id = handle  # type: ignore[method-assign]
            try:
                to_test.dump(value)
                break
            except (pickle.PicklingError, TypeError, AttributeError):
                if not copies:
                    raise
                del self.objects[kept:]
        return out.getvalue()

    def snapshot(self, lib_id: int) -> bytes:
        lib = self.libraries[lib_id]
        lib.dll.instrbudget_models_reset(1)
        lib.dll.instrbudget_profile_reset()
        lib.dll.instrbudget_collect(lib.counters_at)
        return lib.counters.raw

    def counts(self, lib_id: int, profile_path: str) -> tuple[bytes, bytes, int, int]:
        lib = self.libraries[lib_id]
        lib.dll.instrbudget_models_finish()
        rc = lib.dll.instrbudget_profile_write(profile_path.encode())
        lib.dll.instrbudget_collect(lib.counters_at)
        return lib.counters.raw, lib.results.raw, int(rc), int(lib.dll.instrbudget_threads())

    def read(self, address: int, size: int) -> bytes:
        return ctypes.string_at(address, size)

    def string(self, address: int) -> bytes:
        data: bytes = ctypes.string_at(address)
        return data[:MAX_STRING]

    def serve(self, replies: Channel) -> None:
        requests = self.requests
        while True:
            try:
                requests.ready(None)
            except EOFError:
                os._exit(0)
            op, *args = requests.receive()  # memory arguments stay in the mailbox as blobs
            if op == "exit":
                os._exit(0)
            self.blobs_out = []
            try:
                replies.send(("ok", self.ops[op](*args)), self.blobs_out)
            except Exception as exc:  # reported to the test process, which raises it there
                replies.send(("error", type(exc).__name__, str(exc)))


def _main() -> None:
    here = sys.path.pop(0)  # this directory holds engine modules whose names shadow the standard library's
    import importlib.util

    spec = importlib.util.spec_from_file_location("instrbudget_ctypes_map", os.path.join(here, "ctypes_map.py"))
    assert spec is not None
    assert spec.loader is not None
    ctypes_map = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ctypes_map)
    fds, guard = [int(a) for a in sys.argv[1:5]], sys.argv[5]
    requests, replies = Channel(fds[0], fds[1]), Channel(fds[2], fds[3])
    os.set_blocking(fds[3], False)
    # Only the fixed environment programs get is left for the code under test.
    os.environ.pop("PYTHONHASHSEED", None)
    guard_dll = None
    if guard:
        guard_dll = ctypes.CDLL(guard)
        guard_dll.instrbudget_host_on_crash.argtypes = [ctypes.c_void_p]
        guard_dll.instrbudget_host_guard()
    Host(ctypes_map.TypeMap, requests, guard_dll).serve(replies)


if __name__ == "__main__":
    _main()
