"""Where a crashed process's fault was, in the words of its code: `` in f (lib.c:12) at address 0x0``.

A library host's guard (``runtime/host_guard.c``) writes the faulting instruction as a line on its
stderr; a program's runtime (``runtime/instrbudget_rt.c``) writes it to ``<counts>.fault``. Both
give an offset from where the binary is loaded, which the binary's symbols and line tables name.
"""

from __future__ import annotations

import contextlib
import signal
from pathlib import Path

from elftools.common.exceptions import ELFError

from cbuild.build.demangle import demangle
from cbuild.build.places import Frame, symbols

#: Signals a memory access causes (one may be a stack overflow).
FAULTS = (signal.SIGSEGV, signal.SIGBUS)
#: Signals an instruction causes, whose place the guard and the runtime report.
PLACED = (*FAULTS, signal.SIGFPE, signal.SIGILL, signal.SIGTRAP)
#: Signals of an instruction that traps: what padding after a function holds (x86-64: int3).
TRAPS = (signal.SIGTRAP, signal.SIGILL)
#: Bytes past a function's end still said to be its end (the padding before the next function).
_PADDING = 64
_MAGIC = "instrbudget-fault 1"


def fault_place(
    binary: Path, offset: int, address: int | None, *, ran_off: bool = False, named_only: bool = False
) -> str:
    """`` in f (lib.c:12) at address 0x0``: the instruction ``offset`` bytes from where ``binary``
    is loaded, as its function and source line where the binary's symbols and line tables have
    them (else the file and offset, or nothing with ``named_only``: the offset may lie outside
    the binary), and the address a memory fault touched. With ``ran_off`` (a trap), code in the
    padding after a function is said to have run off that function's end."""
    where, why = "" if named_only else f"in {binary.name}+{offset:#x}", ""
    found = None
    if not str(binary).startswith("/proc/"):  # a memory file of a host's not named: no file to read
        with contextlib.suppress(OSError, ELFError):
            found = symbols(binary, binary.stat().st_mtime_ns)
    if found is not None:
        at = offset + found.link_base
        function = found.function(at)
        before = found.before(at, within=_PADDING) if function is None and ran_off else None
        if function is not None:
            source, line = found.place(at) or ("", 0)
            where = f"in {Frame(demangle(function), source, line)}"
        elif before is not None:
            function, end = before
            source, line = found.place(end - 1) or ("", 0)
            where = f"past the end of {Frame(demangle(function), source, line)}"
            why = (
                ": its code ran off its end, as code does after undefined behaviour the compiler"
                " saw (a null pointer read, a missing return value)"
            )
    if not where:
        return ""
    touched = f" at address {address:#x}" if address is not None else ""
    return f" {where}{touched}{why}"


def program_fault(path: Path, binary: Path, signum: int) -> str:
    """The place of a program's fault from the record its runtime wrote at ``path`` (nothing where
    it wrote none, or one that cannot be read: the message then goes without it)."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    if not lines or lines[0] != _MAGIC:
        return ""
    fields = {key: value for key, _, value in (line.partition(" ") for line in lines[1:])}
    try:
        recorded, pc, base = int(fields["signal"], 16), int(fields["pc"], 16), int(fields["base"], 16)
        address = int(fields["address"], 16) if "address" in fields else None
    except (KeyError, ValueError):
        return ""
    if recorded != signum or pc < base:  # not the fault that ended it; not in the program's own code
        return ""
    # A pc in another binary (a shared C library) lies in none of this one's functions: nothing said.
    return fault_place(binary, pc - base, address, ran_off=signum in TRAPS, named_only=True)
