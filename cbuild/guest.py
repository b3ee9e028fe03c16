"""A library's RISC-V build in a worker process, replaying the calls a test makes natively.

The test sees the native results. Each call is made again in the RISC-V build (executed by
:mod:`cbuild.rvexec`) with the same arguments: integers and floating-point values in the
target's argument registers (soft-float ABI, 64-bit values in register pairs on riscv32),
byte buffers copied into guest memory and back, pointers a function returned mapped to the
guest's own. The guest's result and written buffers are compared with the native ones by
the caller. A call whose arguments cannot be carried over (structs, raw addresses, more
than eight argument registers) makes the RISC-V models unavailable for that library.
"""

from __future__ import annotations

import os
import pickle
import struct
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from cbuild.rvexec import (
    EXITED,
    READY,
    REG_A0,
    REG_RA,
    REG_SP,
    RETURN_ADDRESS,
    RETURNED,
    ExecRuntime,
    Execution,
    Executor,
    ExecutorError,
    read_image,
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
    """One argument as the guest gets it: ``kind`` int (``bits``, ``signed``), float (``bits``),
    buffer (``data``, copied back if ``back``), handle (a guest address) or null."""

    kind: str
    value: Any = None
    bits: int = 0
    signed: bool = True
    back: bool = False


def word_bits(desc: dict[str, Any], xlen: int) -> int:
    """Width of an integer type on the target."""
    bits = 8 * int(desc.get("size", 4))
    name = str(desc.get("name", "")).removeprefix("const ").strip()
    return xlen if bits == 64 and name in _WORD_TYPES else bits


def _registers(args: Sequence[Arg], xlen: int, buffers: list[int]) -> list[int]:
    """Argument register values (soft-float calling convention)."""
    mask = (1 << xlen) - 1
    regs: list[int] = []
    for arg in args:
        if arg.kind == "null":
            regs.append(0)
        elif arg.kind in ("buffer", "handle"):
            regs.append(buffers.pop(0) if arg.kind == "buffer" else int(arg.value))
        elif arg.kind == "float":
            raw = (
                struct.unpack("<I", struct.pack("<f", arg.value))[0]
                if arg.bits == 32
                else (struct.unpack("<Q", struct.pack("<d", arg.value))[0])
            )
            regs.extend([raw & mask, raw >> 32] if arg.bits == 64 and xlen == 32 else [raw])
        else:
            value = int(arg.value) & ((1 << arg.bits) - 1)
            if arg.signed and arg.bits < xlen and value >> (arg.bits - 1):
                value |= mask ^ ((1 << arg.bits) - 1)  # sign-extended to the register
            regs.extend([value & mask, value >> 32] if arg.bits == 64 and xlen == 32 else [value & mask])
    if len(regs) > 8:
        raise Unreplayable(f"{len(regs)} argument registers are needed; the replay passes at most 8")
    return regs


class _Worker:
    """The guest in the worker process."""

    def __init__(self, executor: Path, elf: Path, runtimes: list[ExecRuntime]) -> None:
        image = read_image(elf)
        self.ex = Executor(executor, image, runtimes)
        self.xlen = image.xlen
        self.ex.set_register(REG_SP, self.ex.setup_stack([os.fsencode(elf.name)]))
        status = self.ex.run(image.entry)
        if status != READY:
            raise ExecutorError(f"the RISC-V build of {elf.name} did not start: {self.ex.error() or status}")
        self.sp = (self.ex.register(REG_SP) - 4096) & -16
        self.ex.map(ARENA, ARENA_END)
        self.ex.reset()

    def call(self, name: str, args: list[Arg], ret: tuple[str, int, bool]) -> tuple[Any, list[bytes], str]:
        addresses, pos = [], ARENA
        for arg in args:
            if arg.kind == "buffer":
                data = bytes(arg.value)
                if pos + len(data) > ARENA_END:
                    raise Unreplayable("the call's buffers do not fit the argument area")
                self.ex.write(pos, data)
                addresses.append(pos)
                pos = (pos + len(data) + 16) & -16
        regs = _registers(args, self.xlen, list(addresses))
        for i, reg in enumerate(regs):
            self.ex.set_register(REG_A0 + i, reg)
        self.ex.set_register(REG_SP, self.sp)
        self.ex.set_register(REG_RA, RETURN_ADDRESS)
        status = self.ex.run(self.ex.image.symbol(name), stop=RETURN_ADDRESS)
        if status != RETURNED:
            what = "exited" if status == EXITED else f"failed: {self.ex.error()}"
            return None, [], f"{name}() in the RISC-V build {what}"
        a0, a1 = self.ex.register(REG_A0), self.ex.register(REG_A0 + 1)
        kind, bits, signed = ret
        value: Any = None
        if kind == "int":
            raw = a0 | (a1 << 32) if bits == 64 and self.xlen == 32 else a0
            raw &= (1 << bits) - 1
            value = raw - (1 << bits) if signed and raw >> (bits - 1) else raw
        elif kind == "float":
            raw = a0 | (a1 << 32) if bits == 64 and self.xlen == 32 else a0
            value = (
                struct.unpack("<f", struct.pack("<I", raw & 0xFFFFFFFF))[0]
                if bits == 32
                else (struct.unpack("<d", struct.pack("<Q", raw & (2**64 - 1)))[0])
            )
        elif kind == "pointer":
            value = a0
        written = [
            self.ex.read(address, len(arg.value))
            for arg, address in zip([a for a in args if a.kind == "buffer"], addresses, strict=True)
            if arg.back
        ]
        return value, written, ""

    def measure(self) -> Execution:
        return self.ex.execution(RETURNED)


def _send(out: IO[bytes], message: Any) -> None:
    data = pickle.dumps(message)
    out.write(struct.pack("<Q", len(data)) + data)
    out.flush()


def _receive(inp: IO[bytes]) -> Any:
    head = inp.read(8)
    if len(head) < 8:
        raise EOFError
    (n,) = struct.unpack("<Q", head)
    return pickle.loads(inp.read(n))


class Guest:
    """The RISC-V build of a library, in a worker process of its own."""

    def __init__(self, executor: Path, elf: Path, runtimes: Sequence[ExecRuntime]) -> None:
        self.elf = elf
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cbuild.guest"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self._request("load", str(executor), str(elf), list(runtimes))

    def _request(self, *message: Any) -> Any:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        try:
            _send(self.proc.stdin, message)
            ok, value = _receive(self.proc.stdout)
        except (EOFError, BrokenPipeError, OSError):
            err = self.proc.stderr.read().decode(errors="replace")[-2000:] if self.proc.stderr else ""
            raise ExecutorError(f"the RISC-V executor of {self.elf.name} ended:\n{err}") from None
        if not ok:
            raise value
        return value

    def call(self, name: str, args: list[Arg], ret: tuple[str, int, bool]) -> tuple[Any, list[bytes], str]:
        """Call ``name`` in the guest: its result, the buffers it wrote (those marked ``back``), and
        what went wrong ("" when it returned)."""
        result: tuple[Any, list[bytes], str] = self._request("call", name, args, ret)
        return result

    def reset(self) -> None:
        """A measurement starts."""
        self._request("reset")

    def measure(self) -> Execution:
        """What the calls since the last reset executed, and the models' results."""
        result: Execution = self._request("measure")
        return result

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


def _main() -> None:  # pragma: no cover - the worker process
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    worker: _Worker | None = None
    while True:
        try:
            op, *args = _receive(inp)
        except EOFError:
            return
        try:
            if op == "load":
                worker = _Worker(Path(args[0]), Path(args[1]), args[2])
                reply: Any = None
            elif worker is None:
                raise ExecutorError("no RISC-V build loaded")
            elif op == "call":
                reply = worker.call(*args)
            elif op == "reset":
                worker.ex.reset()
                reply = None
            else:
                reply = worker.measure()
            _send(out, (True, reply))
        except ExecutorError as exc:
            _send(out, (False, exc))


if __name__ == "__main__":  # pragma: no cover
    from cbuild.guest import _main as main

    main()
