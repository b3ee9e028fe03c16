"""A library's RISC-V build in a worker process, replaying the calls a test makes natively.

The test sees the native results. Each call is made again in the RISC-V build (executed by
:mod:`cbuild.riscv.executor`) with the same arguments, placed as the target's own code takes them:
the build's table of its functions' IR signatures (:func:`cbuild.riscv.build.abi_table`, in the
ELF's section :data:`cbuild.riscv.executor.ABI_SECTION`) gives each parameter's register type, so a
``size_t`` or a typedef of ``long`` is one 32-bit register on riscv32, an ``unsigned int`` is
sign-extended on riscv64, a small struct travels in registers and a large one by reference,
a large struct result through a result address (soft-float ABI: floating-point values in
integer registers). Byte buffers are copied into guest memory and back, pointers a function
returned are mapped to the guest's own. The guest's result and written buffers are compared
with the native ones by the caller. A call whose arguments cannot be carried over (raw
addresses, more than eight argument registers) makes the RISC-V models unavailable for that
library.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import json
import os
import re
import select
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cbuild.build.signatures import split_top
from cbuild.riscv.executor import (
    EXITED,
    FALLBACK,
    READY,
    REG_A0,
    REG_RA,
    REG_SP,
    RETURN_ADDRESS,
    RETURNED,
    STOPPED,
    ExecRuntime,
    Execution,
    Executor,
    ExecutorError,
    Image,
    compare_executions,
    guest_place,
    pack_runtimes,
    read_image,
    unpack_runtimes,
)
from cbuild.riscv.messages import (
    TimeLimitPassed,
    UntimedLimitPassed,
    marked_untimed,
    receive_message,
    receive_reply,
    send_message,
)

#: Argument buffers are copied here, one call at a time.
ARENA = 0x7000_0000
ARENA_END = 0x7E00_0000
#: Integer types whose width is the target's word (ILP32: 4 bytes on riscv32).
_WORD_TYPES = frozenset(
    {
        "long",
        "unsigned long",
        "long int",
        "long unsigned int",
        "size_t",
        "ssize_t",
        "ptrdiff_t",
        "intptr_t",
        "uintptr_t",
        "off_t",
    }
)


class Unreplayable(ExecutorError):
    """A call's arguments cannot be carried into the RISC-V build."""


@dataclass(frozen=True)
class Arg:
    """One argument as the guest gets it: ``kind`` int (``bits``, ``signed``: the host's C type),
    float (``bits``), buffer (``data``, copied back if ``back``), struct (its bytes), handle (a
    guest address), null, or cell (a ``char **`` out-parameter: ``value`` the string it points to
    before the call, or None; the string it points to after comes back)."""

    kind: str
    value: Any = None
    bits: int = 0
    signed: bool = True
    back: bool = False
    #: A buffer of integers whose width differs on the target (size_t, long): (host bytes, target
    #: bytes, signed) per element; ``value`` holds them at the target's width already.
    element: tuple[int, int, bool] | None = None


#: A parameter or result as the target's code takes it: [IR type, extension, role] (see
#: :func:`cbuild.riscv.build.abi_table`).
Slot = Sequence[str]


def word_bits(desc: dict[str, Any], xlen: int) -> int:
    """Width of an integer type on the target, guessed from its name (for functions the build's
    table does not list)."""
    bits = 8 * int(desc.get("size", 4))
    name = str(desc.get("name", "")).removeprefix("const ").strip()
    return xlen if bits == 64 and name in _WORD_TYPES else bits


def read_abi(image: Image, elf: Path) -> dict[str, Any]:
    """The table of :data:`~cbuild.riscv.executor.ABI_SECTION` in a RISC-V build ({} if it has none)."""
    if not image.abi:
        return {}
    try:
        table = json.loads(image.abi)
    except ValueError as exc:
        raise ExecutorError(f"the RISC-V build {elf} has an unreadable ABI table: {exc}") from None
    if not isinstance(table, dict):
        raise ExecutorError(f"the RISC-V build {elf} has an unreadable ABI table: not an object")
    return table


def ir_bytes(ir: str, xlen: int) -> int:
    """Size in bytes of an IR type the calling convention passes in registers."""
    if ir == "ptr":
        return xlen // 8
    if ir in ("float", "double"):
        return 4 if ir == "float" else 8
    if re.fullmatch(r"i\d+", ir):
        return (int(ir[1:]) + 7) // 8
    array = re.fullmatch(r"\[(\d+) x (.+)\]", ir)
    if array:
        return int(array.group(1)) * ir_bytes(array.group(2), xlen)
    if ir.startswith("{") and ir.endswith("}"):
        size = 0
        for element in split_top(ir[1:-1], ","):
            n = ir_bytes(element, xlen)
            size = (size + n - 1) // n * n + n  # each element at its natural alignment
        return size
    raise Unreplayable(f"a parameter of IR type {ir}")


def fits(value: int, bits: int) -> bool:
    """Whether a host integer (64 bits at most) means the same in ``bits`` bits: its low bits,
    zero- or sign-extended, give it back (``(size_t)-10`` fits 32 bits, ``1L << 40`` does not)."""
    low = value & ((1 << bits) - 1)
    signed = low - (1 << bits) if low >> (bits - 1) else low
    return (value - low) % 2**64 == 0 or (value - signed) % 2**64 == 0


def _words(raw: int, size: int, xlen: int) -> list[int]:
    """``raw`` (``size`` bytes) as the registers that carry it, least significant first."""
    mask = (1 << xlen) - 1
    return [(raw >> shift) & mask for shift in range(0, max(size, 1) * 8, xlen)]


def _float_bits(value: float, bits: int) -> int:
    if bits == 32:
        return int(struct.unpack("<I", struct.pack("<f", value))[0])
    return int(struct.unpack("<Q", struct.pack("<d", value))[0])


def default_slots(args: Sequence[Arg], ret: tuple[str, int, bool], xlen: int) -> tuple[list[Slot], Slot]:
    """Parameters and result by the RISC-V psABI from the host's C types, for a function the
    build's table does not list."""

    def record(size: int) -> str:
        return f"i{xlen}" if size <= xlen // 8 else f"[2 x i{xlen}]" if size <= xlen // 4 else "ptr"

    params: list[Slot] = []
    for arg in args:
        if arg.kind == "int":
            params.append([f"i{arg.bits}", "s" if arg.signed else "z", ""])
        elif arg.kind == "float":
            params.append(["float" if arg.bits == 32 else "double", "", ""])
        elif arg.kind == "struct":
            params.append([record(len(arg.value)), "", ""])
        else:
            params.append(["ptr", "", ""])
    kind, bits, signed = ret
    result: Slot = ["void", "", ""]
    if kind == "int":
        result = [f"i{bits}", "s" if signed else "z", ""]
    elif kind == "float":
        result = ["float" if bits == 32 else "double", "", ""]
    elif kind == "pointer":
        result = ["ptr", "", ""]
    elif kind == "struct":
        result = [record(bits), "", ""]
        if result[0] == "ptr":
            result = ["void", "", ""]
            params.insert(0, ["ptr", "", "sret"])
    return params, result


class _Arena:
    """Guest memory for one call's buffers, by-reference structs and struct result."""

    def __init__(self, ex: Executor) -> None:
        self.ex = ex
        self.pos = ARENA

    def put(self, data: bytes) -> int:
        address = self.pos
        if address + len(data) > ARENA_END:
            raise Unreplayable("the call's buffers do not fit the argument area")
        self.ex.write(address, data)
        self.pos = (address + len(data) + 16) & -16
        return address


def _registers(
    args: Sequence[Arg], params: Sequence[Slot], xlen: int, arena: _Arena
) -> tuple[list[int], list[int], str]:
    """Argument register values, the guest addresses of the buffer arguments, and what makes the
    guest's call differ from the native one ("" if nothing): an integer the target's parameter
    cannot hold."""
    regs: list[int] = []
    buffers: list[int] = []
    problem = ""
    for n, (arg, (ir, ext, _)) in enumerate(zip(args, params, strict=True), start=1):
        if arg.kind == "null":
            regs.append(0)
        elif arg.kind == "handle":
            regs.append(int(arg.value))
        elif arg.kind == "buffer":
            buffers.append(arena.put(bytes(arg.value)))
            regs.append(buffers[-1])
        elif arg.kind == "cell":
            text = 0 if arg.value is None else arena.put(bytes(arg.value) + b"\0")
            buffers.append(arena.put(text.to_bytes(xlen // 8, "little")))
            regs.append(buffers[-1])
        elif arg.kind == "struct":
            data = bytes(arg.value)
            if ir == "ptr":  # passed by reference, to a copy the callee may change
                regs.append(arena.put(data))
                continue
            size = ir_bytes(ir, xlen)
            if len(data) > size:
                raise Unreplayable(f"argument {n} ({len(data)} bytes) is {size} bytes in the build's {ir}")
            regs.extend(_words(int.from_bytes(data, "little"), size, xlen))
        elif arg.kind == "float":
            size = ir_bytes(ir, xlen)
            regs.extend(_words(_float_bits(float(arg.value), 8 * size), size, xlen))
        else:
            bits = xlen if ir == "ptr" else int(ir[1:]) if re.fullmatch(r"i\d+", ir) else 8 * ir_bytes(ir, xlen)
            value = int(arg.value)
            if not fits(value, bits) and not problem:
                problem = f"argument {n} ({value}) does not fit the build's {bits}-bit parameter"
            raw = value & ((1 << bits) - 1)
            width = max(bits, xlen)
            if (ext == "s" or (not ext and arg.signed)) and raw >> (bits - 1):
                raw |= ((1 << width) - 1) ^ ((1 << bits) - 1)  # sign-extended to the register
            regs.extend(_words(raw, width // 8, xlen))
    return regs, buffers, problem


def _result(ir: str, ret: tuple[str, int, bool], a0: int, a1: int, xlen: int) -> Any:
    """The result in a0 (and a1) as the host's C type ``ret`` has it; an integer with its width in
    the build: ``(value, bits)`` (a ``Py_ssize_t`` is an ``i32`` on riscv32)."""
    kind, bits, signed = ret
    raw = a0 | (a1 << xlen)
    if kind == "int":
        width = xlen if ir == "ptr" else int(ir[1:]) if re.fullmatch(r"i\d+", ir) else bits
        raw &= (1 << width) - 1
        return (raw - (1 << width) if signed and raw >> (width - 1) else raw), width
    if kind == "float":
        if ir_bytes(ir, xlen) == 4:
            return struct.unpack("<f", struct.pack("<I", raw & 0xFFFF_FFFF))[0]
        return struct.unpack("<d", struct.pack("<Q", raw & (2**64 - 1)))[0]
    if kind == "pointer":
        return a0
    if kind == "struct":
        return raw.to_bytes(2 * xlen // 8, "little")[:bits]
    return None


class CutoffReached(ExecutorError):
    """A call stopped at a cut-off on a model's clock (:meth:`Guest.set_cutoffs`): ``run`` is what
    the calls since the last reset executed, its :attr:`~cbuild.riscv.executor.Execution.stopped`
    says where."""

    def __init__(self, name: str, run: Execution, before: int = 0) -> None:
        super().__init__(f"{name}() in the RISC-V build stopped at a cut-off")
        self.name = name
        self.run = run
        #: The stopped model's clock when the call started.
        self.before = before

    def __reduce__(self) -> tuple[Any, ...]:  # pickled back to the library's process
        return (CutoffReached, (self.name, self.run, self.before))


class _Worker:
    """The guest in the worker process: one engine's machine (unicorn's, or the translation's)."""

    def __init__(self, library: Path | Any, image: Image, elf: Path, runtimes: list[ExecRuntime]) -> None:
        """``library``: the unicorn executor's path or a loaded translation. A translated machine
        that cannot start raises :class:`Handover`."""
        self.ex = Executor(library, image, runtimes, elf=elf)
        self.xlen = image.xlen
        #: symbol -> [result, parameters] as the build's code takes them (cbuild.riscv.build.abi_table).
        self.abi = read_abi(image, elf)
        self.ex.set_register(REG_SP, self.ex.setup_stack([os.fsencode(elf.name)]))
        status = self.ex.run(image.entry)
        if status == FALLBACK:
            self.ex.close()
            raise Handover(self.ex.error())
        if status != READY:
            raise ExecutorError(f"the RISC-V build of {elf.name} did not start: {self.ex.error() or status}")
        self.sp = (self.ex.register(REG_SP) - 4096) & -16
        self.ex.map(ARENA, ARENA_END)
        self.ex.reset()

    def call(self, name: str, args: list[Arg], ret: tuple[str, int, bool]) -> tuple[Any, list[bytes | None], str]:
        """See :meth:`Guest.call`; a translated machine that cannot finish the call raises :class:`Handover`."""
        entry = self.abi.get(name)
        if entry is None:
            params, result = default_slots(args, ret, self.xlen)
        else:
            result, params = entry
        arena = _Arena(self.ex)
        regs: list[int] = []
        out = 0
        if params and params[0][2] == "sret":  # the caller provides the result's memory
            out = arena.put(bytes(ret[1]))
            regs.append(out)
            params = params[1:]
        if len(params) != len(args):
            raise Unreplayable(f"the build's {name}() takes {len(params)} parameters, the C declaration {len(args)}")
        more, buffers, problem = _registers(args, params, self.xlen, arena)
        regs += more
        if len(regs) > 8:
            raise Unreplayable(f"{len(regs)} argument registers are needed; the replay passes at most 8")
        for i, reg in enumerate(regs):
            self.ex.set_register(REG_A0 + i, reg)
        self.ex.set_register(REG_SP, self.sp)
        self.ex.set_register(REG_RA, RETURN_ADDRESS)
        status = self.ex.run(self.ex.image.symbol(name), stop=RETURN_ADDRESS)
        if status == FALLBACK:
            raise Handover(self.ex.error())
        if status == STOPPED:
            self.ex.save_block_data()
            raise CutoffReached(name, self.ex.execution(status))
        if status != RETURNED:
            what = "exited" if status == EXITED else f"failed: {self.ex.error()}"
            return None, [], f"{name}() in the RISC-V build {what}"
        if out:
            value: Any = self.ex.read(out, ret[1])
        else:
            value = _result(result[0], ret, self.ex.register(REG_A0), self.ex.register(REG_A0 + 1), self.xlen)
        written: list[bytes | None] = []
        numbered = [(k, a) for k, a in enumerate(args, start=1) if a.kind in ("buffer", "cell")]
        for (k, arg), address in zip(numbered, buffers, strict=True):
            if arg.kind == "cell":
                pointer = int.from_bytes(self.ex.read(address, self.xlen // 8), "little")
                try:
                    written.append(self._string(pointer))
                except ExecutorError:
                    written.append(None)
                    problem = problem or f"argument {k} points to {pointer:#x}, where the build has no string"
            elif arg.back:
                written.append(self.ex.read(address, len(arg.value)))
        return value, written, problem

    def _string(self, address: int, limit: int = 1 << 20) -> bytes | None:
        """The C string at a guest address (None for NULL; at most ``limit`` bytes)."""
        if address == 0:
            return None
        out = b""
        while len(out) < limit:
            chunk = self.ex.read(address + len(out), 256 - (address + len(out)) % 256)
            end = chunk.find(b"\0")
            if end >= 0:
                return out + chunk[:end]
            out += chunk
        return out

    def measure(self) -> Execution:
        self.ex.save_block_data()
        return self.ex.execution(RETURNED)


class Handover(Exception):
    """The translated machine cannot go on (its reason): the guest goes on in unicorn."""


class _Engines:
    """The guest's machine in the engine that can run it, and with ``check`` in the other one too.

    With a translation (:mod:`cbuild.riscv.translated`) and recorded blocks, the machine is the
    translation's; what it cannot run hands the guest over to a unicorn machine, which makes the
    calls and measurement starts so far again (the guest is deterministic: it reaches the same
    state) and then the one that stopped. The blocks a unicorn machine ran join the recorded ones
    at each measurement. With ``check`` the other engine's machine runs every call too, from the
    first measurement on if the guest started in unicorn (made then by running what came before),
    and a difference in a call's result or a measurement is an :class:`ExecutorError`.
    """

    def __init__(
        self,
        executor: Path,
        elf: Path,
        runtimes: list[ExecRuntime],
        translation: Path | None,
        check: bool,
        untimed: Callable[[], AbstractContextManager[object]] = contextlib.nullcontext,
    ) -> None:
        self.executor, self.elf, self.runtimes, self.translation = executor, elf, runtimes, translation
        self.check = check and translation is not None
        self.untimed = untimed  # entered around compiling a translation
        self.image = read_image(elf)
        #: The calls (with their replies) and measurement starts since the guest started.
        self.log: list[tuple[Any, ...]] = []
        self.note = ""
        self.worker = self._translated() or self._unicorn()
        self.shadow = self._unicorn() if self.check and self.worker.ex.engine == "translated" else None

    def _unicorn(self) -> _Worker:
        return _Worker(self.executor, self.image, self.elf, self.runtimes)

    def _translated(self) -> _Worker | None:
        from cbuild.riscv import translated

        assert self.translation is not None or not self.check
        if self.translation is None:
            return None
        reached = translated.read_reached(self.elf)
        if not (reached.worth_translating() or (self.check and reached.blocks)):
            return None
        try:
            library = translated.load(self.elf, self.image, self.translation, reached, self.runtimes, self.untimed)
            return _Worker(library, self.image, self.elf, self.runtimes)
        except (Handover, ExecutorError) as exc:
            self.note = f"ran in unicorn: {exc}"
            return None

    def _record(self) -> None:
        """Record the blocks the unicorn machine ran so far, and its instructions."""
        from cbuild.riscv import translated

        blocks = self.worker.ex.blocks()
        translated.add_reached(self.elf, blocks, sum(n * count for _, n, count in blocks))

    def _twin(self) -> _Worker:
        """A translated machine of the blocks the unicorn machine ran so far, brought to the same
        state by making the same calls (compared) and measurement starts."""
        from cbuild.riscv import translated

        assert self.translation is not None
        self._record()
        reached = translated.read_reached(self.elf)
        library = translated.load(self.elf, self.image, self.translation, reached, self.runtimes, self.untimed)
        try:
            twin = _Worker(library, self.image, self.elf, self.runtimes)
            self._replay(twin, compare=True)
        except Handover as exc:
            raise ExecutorError(f"the translated calls into {self.elf.name} did not finish: {exc}") from None
        return twin

    def _replay(self, worker: _Worker, *, compare: bool) -> None:
        """Make the calls and measurement starts so far in ``worker`` (comparing the replies)."""
        for op, *args in self.log:
            if op == "reset":
                worker.ex.reset()
                continue
            if op == "cutoffs":
                worker.ex.set_cutoffs(args[0])
                continue
            name, call_args, ret, reply = args
            again = worker.call(name, call_args, ret)
            if compare:
                self._compare_calls(name, reply, again)

    def _compare_calls(self, name: str, expected: Any, got: Any) -> None:
        if repr(expected) != repr(got):
            raise ExecutorError(
                f"the translated call of {name}() differs from unicorn's: {got!r:.300} and {expected!r:.300}"
            )

    def call_within(
        self, name: str, args: list[Arg], ret: tuple[str, int, bool], rooms: dict[int, int]
    ) -> tuple[tuple[Any, list[bytes | None], str], dict[int, int]]:
        """:meth:`call`, stopped where a model's clock grows by more than its room (runtime index ->
        clock; none: no cut-off); also what each of those clocks grew by."""
        before = self.worker.ex.now()
        self.set_cutoffs({i: before[i] + room for i, room in rooms.items()})
        try:
            reply = self.call(name, args, ret)
        except CutoffReached as exc:
            model = exc.run.stopped[0] if exc.run.stopped is not None else 0
            exc.before = before[model]
            raise
        after = self.worker.ex.now()
        return reply, {i: after[i] - before[i] for i in rooms}

    def set_cutoffs(self, cutoffs: dict[int, int]) -> None:
        if self._replayable():
            self.log.append(("cutoffs", cutoffs))
        self.worker.ex.set_cutoffs(cutoffs)
        if self.shadow is not None:
            self.shadow.ex.set_cutoffs(cutoffs)

    def call(self, name: str, args: list[Arg], ret: tuple[str, int, bool]) -> tuple[Any, list[bytes | None], str]:
        try:
            reply = self._call(name, args, ret)
        except CutoffReached as exc:
            if self.shadow is not None:  # the other engine stops at the same place
                try:
                    self.shadow.call(name, args, ret)
                except CutoffReached as again:
                    self._compare_stops(exc.run, again.run)
                else:
                    raise ExecutorError(f"the translated call of {name}() and unicorn's differ in stopping") from None
            raise
        return reply

    def close(self) -> None:
        """Free the machines."""
        for machine in (self.worker, self.shadow):
            if machine is not None:
                machine.ex.close()

    def _compare_stops(self, mine: Execution, other: Execution) -> None:
        unicorn, fast = (mine, other) if mine.engine == "unicorn" else (other, mine)
        differences = compare_executions(unicorn, fast)
        if differences:
            raise ExecutorError(
                f"the translated calls into {self.elf.name} differ from unicorn's: {'; '.join(differences)}"
            )

    def _call(self, name: str, args: list[Arg], ret: tuple[str, int, bool]) -> tuple[Any, list[bytes | None], str]:
        try:
            reply = self.worker.call(name, args, ret)
        except Handover as exc:
            self.worker.ex.close()
            self.note = f"ran in unicorn: the translated run stopped at {exc}"
            self.worker = self._unicorn()
            self._replay(self.worker, compare=False)
            reply = self.worker.call(name, args, ret)
            if self.shadow is not None:
                self.shadow.ex.close()
                self.shadow = None
        if self._replayable():
            self.log.append(("call", name, args, ret, reply))
        if self.shadow is not None:
            try:
                self._compare_calls(name, reply, self.shadow.call(name, args, ret))
            except CutoffReached:
                raise ExecutorError(f"the translated call of {name}() and unicorn's differ in stopping") from None
            except Handover:  # the translated twin reached code no run had recorded: translated again
                self.shadow.ex.close()
                self.shadow = self._twin()
        return reply

    def _replayable(self) -> bool:
        """Whether the calls must be kept for a replay: a translated machine may hand over to
        unicorn, and the check makes a translated twin of a unicorn machine."""
        return self.check or self.worker.ex.engine == "translated"

    def reset(self) -> None:
        if self._replayable():
            self.log.append(("reset",))
        self.worker.ex.reset()
        if self.shadow is not None:
            self.shadow.ex.reset()

    def measure(self) -> Execution:
        run = self.worker.measure()
        run.note = self.note
        if self.translation is None:
            return run

        if run.engine == "unicorn":
            self._record()
        if not self.check:
            return run
        if self.shadow is None:  # the guest runs in unicorn: a translated machine from what it ran so far
            self.shadow = self._twin()
        other = self.shadow.measure()
        unicorn, fast = (run, other) if run.engine == "unicorn" else (other, run)
        differences = compare_executions(unicorn, fast)
        if differences:
            raise ExecutorError(
                f"the translated calls into {self.elf.name} differ from unicorn's: {'; '.join(differences)}"
            )
        return run


#: A worker process started ahead, for the next :class:`Guest`: its interpreter's start and
#: imports (most of a guest's start) happen while the test before runs.
_spare: subprocess.Popen[bytes] | None = None
#: A worker a closed guest gave back (its machines freed), for the next guest to load its build in.
_idle: subprocess.Popen[bytes] | None = None
_SPARE_LOCK = threading.Lock()
#: The environment variables a worker applies from its guest's process when it loads (the spare
#: started before a test set them).
_ENV_PREFIX = "INSTRBUDGET_"


def _start_worker() -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "cbuild.riscv.guest"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _take_worker() -> subprocess.Popen[bytes]:
    """A worker process for a new guest: one a closed guest gave back, else the one started ahead
    (then the next is started ahead), else a new one."""
    global _spare, _idle
    with _SPARE_LOCK:
        worker, _idle = _idle, None
        if worker is not None and worker.poll() is None:
            return worker
        if worker is not None:
            _end_worker(worker)
        worker, _spare = _spare, None
        if worker is None or worker.poll() is not None:
            if worker is not None:
                _end_worker(worker)
            worker = _start_worker()
        _spare = _start_worker()
    return worker


def _end_worker(worker: subprocess.Popen[bytes]) -> None:
    if worker.poll() is None:
        worker.kill()
    worker.wait()
    for stream in (worker.stdin, worker.stdout, worker.stderr):
        if stream is not None:
            with contextlib.suppress(OSError):  # a request the worker never read: a broken pipe
                stream.close()


def _give_back(worker: subprocess.Popen[bytes]) -> None:
    """Keep ``worker`` (idle, its machines freed) for the next guest, unless one is kept already."""
    global _idle
    assert worker.stderr is not None
    while select.select([worker.stderr], [], [], 0)[0]:  # what it wrote is not the next guest's
        if not os.read(worker.stderr.fileno(), 65536):
            break
    with _SPARE_LOCK:
        kept, _idle = (worker, None) if _idle is not None else (None, worker)
    if kept is not None:
        _end_worker(kept)


@atexit.register
def close_spare() -> None:
    """End the workers kept for later guests (at exit, or when a caller wants no child left)."""
    global _spare, _idle
    with _SPARE_LOCK:
        workers, _spare, _idle = (_spare, _idle), None, None
    for worker in workers:
        if worker is not None:
            _end_worker(worker)


class Guest:
    """The RISC-V build of a library, in a worker process of its own."""

    def __init__(
        self,
        executor: Path,
        elf: Path,
        runtimes: Sequence[ExecRuntime],
        *,
        translation: Path | None = None,
        check: bool = False,
    ) -> None:
        """``translation`` and ``check``: as :func:`cbuild.riscv.executor.run_program` takes them."""
        self.elf = elf
        #: Set once a request of this guest failed or was interrupted: the worker's state, or the
        #: order of its replies, is not one the next guest may start from, so it ends with the guest.
        self._failed = False
        self._closed = False
        self.proc = _take_worker()
        # Absolute: a worker started ahead or given back may have another working directory.
        where = None if translation is None else str(translation.resolve())
        env = {name: value for name, value in os.environ.items() if name.startswith(_ENV_PREFIX)}
        try:
            self._request(
                "load", str(executor.resolve()), str(elf.resolve()), pack_runtimes(runtimes), where, check, env
            )
        except BaseException:
            self.close()
            raise

    def _request(self, *message: Any, timeout: float | None = None, what: str = "") -> Any:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        failed, self._failed = self._failed, True
        try:
            send_message(self.proc.stdin, message)
            ok, value = receive_reply(self.proc.stdout.fileno(), timeout)
        except UntimedLimitPassed as passed:
            self.close()
            raise ExecutorError(passed.describe(self.elf.name)) from None
        except TimeLimitPassed:  # the worker cannot be interrupted mid-run: it ends, and the guest with it
            where = self._where()
            self.close()
            raise ExecutorError(f"{what} took longer than {timeout:g} s, the call's time limit{where}") from None
        except (EOFError, BrokenPipeError, OSError):
            err = self.proc.stderr.read().decode(errors="replace")[-2000:] if self.proc.stderr else ""
            raise ExecutorError(f"the RISC-V executor of {self.elf.name} ended:\n{err}") from None
        except BaseException:  # interrupted between request and reply: its reply would be the next one's
            self.close()
            raise
        if not ok:
            raise value
        self._failed = failed
        return value

    def _where(self) -> str:
        """Where the guest is (the executor writes it to stderr on SIGUSR2), as text for an error."""
        if self.proc.stderr is None:
            return ""
        with contextlib.suppress(OSError):
            self.proc.send_signal(signal.SIGUSR2)
        text = b""
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline and b"instrbudget-guest-pc" not in text:
            ready, _, _ = select.select([self.proc.stderr], [], [], 0.05)
            if ready:
                text += os.read(self.proc.stderr.fileno(), 65536)
        found = re.search(rb"instrbudget-guest-pc: 0x([0-9a-f]+)\n", text)
        if found is None:
            return ""
        pc = int(found.group(1), 16)
        return f"; it was in {guest_place(self.elf, pc)}"

    def call(
        self, name: str, args: list[Arg], ret: tuple[str, int, bool], *, timeout: float | None = None
    ) -> tuple[Any, list[bytes | None], str]:
        """Call ``name`` in the guest: its result (an integer as ``(value, bits in the build)``, a
        struct as its bytes), the buffers it wrote (those marked ``back``), and what makes the call
        differ from the native one ("" when it returned, with arguments it could hold). A call
        that takes more than ``timeout`` seconds ends the guest with an :class:`ExecutorError`."""
        result: tuple[Any, list[bytes | None], str] = self._request(
            "call", name, args, ret, timeout=timeout, what=f"the replay of {name}()"
        )
        return result

    def reset(self) -> None:
        """A measurement starts."""
        self._request("reset")

    def call_within(
        self,
        name: str,
        args: list[Arg],
        ret: tuple[str, int, bool],
        rooms: dict[int, int],
        *,
        timeout: float | None = None,
    ) -> tuple[tuple[Any, list[bytes | None], str], dict[int, int]]:
        """:meth:`call`, stopped at the first block that would start with a model's clock grown by
        more than its room in ``rooms`` (runtime index -> clock units; the call then raises
        :class:`CutoffReached`); also what each of those clocks grew by in the call."""
        result: tuple[tuple[Any, list[bytes | None], str], dict[int, int]] = self._request(
            "call_within", name, args, ret, rooms, timeout=timeout, what=f"the replay of {name}()"
        )
        return result

    def measure(self) -> Execution:
        """What the calls since the last reset executed, and the models' results."""
        result: Execution = self._request("measure")
        return result

    def close(self) -> None:
        """Free the guest. A worker that answered every request frees its machines and is kept for
        the next guest (as an executor server is for the next run); any other ends."""
        if self._closed:
            return
        self._closed = True
        if not self._failed and self.proc.poll() is None:
            with contextlib.suppress(ExecutorError):
                self._request("unload", timeout=_UNLOAD_TIMEOUT, what="freeing the guest")
                _give_back(self.proc)
                return
        _end_worker(self.proc)


#: Seconds a worker has to free a closed guest's machines before it is ended instead.
_UNLOAD_TIMEOUT = 10.0

#: Modules a load imports (the translation's loader; the built-in pipeline model's block data, which
#: its runtime unpickles to): imported by a worker before its first request, which it usually waits
#: for as the one started ahead.
_LOAD_IMPORTS = ("cbuild.riscv.translated", "cbuild.models.pipeline_blocks")


def _main() -> None:  # pragma: no cover - the worker process
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    for module in _LOAD_IMPORTS:
        importlib.import_module(module)
    worker: _Engines | None = None
    while True:
        try:
            op, *args = receive_message(inp)
        except EOFError:
            return
        try:
            if op == "load":
                executor, elf, packed, translation, check, env = args
                if worker is not None:
                    worker.close()
                    worker = None
                for name in [name for name in os.environ if name.startswith(_ENV_PREFIX)]:
                    del os.environ[name]
                os.environ.update(env)
                translated = None if translation is None else Path(translation)
                worker = _Engines(
                    Path(executor),
                    Path(elf),
                    unpack_runtimes(packed),
                    translated,
                    check,
                    untimed=lambda: marked_untimed(out),
                )
                reply: Any = None
            elif op == "unload":
                if worker is not None:
                    worker.close()
                worker, reply = None, None
            elif worker is None:
                raise ExecutorError("no RISC-V build loaded")
            elif op == "call":
                reply = worker.call(*args)
            elif op == "reset":
                worker.reset()
                reply = None
            elif op == "call_within":
                reply = worker.call_within(*args)
            else:
                reply = worker.measure()
            send_message(out, (True, reply))
        except ExecutorError as exc:
            send_message(out, (False, exc))


if __name__ == "__main__":  # pragma: no cover
    from cbuild.riscv.guest import _main as main

    main()
