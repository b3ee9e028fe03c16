"""Ground truth for the zkVM cost model: build C for RV32IM and count what it really executes.

``build_rv32`` compiles and statically links a riscv32 Linux/musl ELF with the ``ziglang`` wheel's clang,
``user_functions`` reads its symbol table, and ``emulate`` runs it in Unicorn (RISCV32) with a tiny Linux
syscall layer, counting executed instructions (total and per function) and recording first-touch events of
1 KiB pages, the unit RISC Zero pages memory in.

Compiler flags (see ``RV32_FLAGS``):

* ``-mcpu=generic_rv32+m+zalrsc``: base I plus M; no C (so every instruction is 4 bytes), no F/D (so the ABI is
  ilp32 soft-float).  Zalrsc (``lr.w``/``sc.w`` only) is there because musl's riscv32 ``atomic_arch.h`` uses them
  in inline asm and does not compile without; code without atomics never emits them.  zig builds (and caches)
  its musl with the same CPU features, so libc is RV32IM+Zalrsc as well.
* ``-mno-relax``: no linker relaxation, so code size and addresses do not depend on the link (zig's
  ``generic_rv32`` already disables it; stated explicitly against a changed default).
* ``-fomit-frame-pointer``: zig cc keeps frame pointers by default; optimized zkVM guests do not.

zig 0.17's libc is not all musl: ``malloc``/``calloc``/``free`` are Zig's ``SmpAllocator`` (which executes
``lr.w``/``sc.w`` on every call and asks ``sched_getaffinity`` for the CPU count) and ``memcpy``/``memset``/
``strlen``/``strcmp`` come from Zig's compiler_rt.  ``Emulation.extension_instructions`` counts such non-RV32IM
instructions; user functions stay pure RV32IM.  The first link for these CPU features builds zig's libc
(about a minute, then cached in zig's global cache).

Counting uses ``UC_HOOK_BLOCK`` (each translated block is decoded once, so compressed instructions would be
counted right too) and ``UC_HOOK_MEM_READ``/``WRITE`` for the page trace; both match a per-instruction
``UC_HOOK_CODE`` reference exactly (see the tests).  Only the standard library and ``unicorn`` (imported
lazily by ``emulate``) are used.
"""

from __future__ import annotations

import bisect
import importlib
import os
import struct
import subprocess
import sys
from collections.abc import Callable, Collection, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "RV32_FLAGS",
    "ElfSymbol",
    "Emulation",
    "EmulatorError",
    "build_rv32",
    "elf_symbols",
    "emulate",
    "object_files",
    "user_functions",
]

#: Target and code-generation flags of every compilation (see the module docstring).
RV32_FLAGS: tuple[str, ...] = (
    "-target",
    "riscv32-linux-musl",
    "-mcpu=generic_rv32+m+zalrsc",
    "-mno-relax",
    "-fomit-frame-pointer",
)

PAGE_BITS = 10  # 1 KiB pages for the trace
_HOST_PAGE = 4096  # Unicorn's mapping granularity and the AT_PAGESZ we report
_STACK_TOP = 0x8000_0000
_STACK_SIZE = 16 << 20
_MMAP_BASE = 0x4000_0000


class EmulatorError(RuntimeError):
    """A build, ELF or emulation failure (the message includes clang's stderr or the faulting pc)."""


# --------------------------------------------------------------------------------------------------------------
# Building
# --------------------------------------------------------------------------------------------------------------


def object_files(output: Path) -> list[Path]:
    """The object files ``build_rv32`` kept for the executable ``output`` (inputs of ``user_functions``)."""
    return sorted(_objects_dir(output).glob("*.o"))


def _objects_dir(output: Path) -> Path:
    return output.parent / f"{output.name}.objs"


def _run_cc(args: list[str]) -> None:
    cmd = [sys.executable, "-m", "ziglang", "cc", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise EmulatorError(f"{' '.join(cmd)} failed (exit {proc.returncode}):\n{proc.stderr}")


def build_rv32(
    sources: list[Path],
    output: Path,
    *,
    opt_level: str = "2",
    cflags: Sequence[str] = (),
    include_dirs: Sequence[Path] = (),
) -> Path:
    """Compile ``sources`` (one object each, kept in ``<output>.objs/``) and link a static RV32IM musl ELF."""
    if not sources:
        raise EmulatorError("build_rv32 needs at least one source file")
    output = Path(output)
    objdir = _objects_dir(output)
    objdir.mkdir(parents=True, exist_ok=True)
    for stale in objdir.glob("*.o"):
        stale.unlink()
    common = [*RV32_FLAGS, f"-O{opt_level}", *(f"-I{d}" for d in include_dirs), *cflags]
    objects = [objdir / f"{i:03d}_{Path(src).stem}.o" for i, src in enumerate(sources)]
    jobs = [[*common, "-c", str(src), "-o", str(obj)] for src, obj in zip(sources, objects, strict=True)]
    with ThreadPoolExecutor(max_workers=min(len(jobs), os.cpu_count() or 1)) as pool:
        for future in [pool.submit(_run_cc, job) for job in jobs]:
            future.result()
    _run_cc([*RV32_FLAGS, "-static", *(str(o) for o in objects), "-o", str(output)])
    flags = _read_elf(output.read_bytes()).flags
    if flags & 0x7:  # EF_RISCV_RVC | EF_RISCV_FLOAT_ABI
        raise EmulatorError(f"{output}: not a plain RV32IM soft-float binary (e_flags={flags:#x})")
    return output


# --------------------------------------------------------------------------------------------------------------
# ELF32 reading
# --------------------------------------------------------------------------------------------------------------

_EM_RISCV = 243
_PT_LOAD = 1
_PT_PHDR = 6
_SHT_SYMTAB = 2
_STT_OBJECT = 1
_STT_FUNC = 2
_STT_FILE = 4
_BINDINGS = {0: "local", 1: "global", 2: "weak"}


@dataclass(frozen=True)
class ElfSymbol:
    """A function (or data) symbol: ``file`` is the preceding STT_FILE name for local symbols (None for global ones)."""

    name: str
    address: int
    size: int
    binding: str
    file: str | None = None


@dataclass(frozen=True)
class _Segment:
    vaddr: int
    offset: int
    filesz: int
    memsz: int


@dataclass
class _Elf:
    data: bytes
    entry: int
    flags: int
    phoff: int
    phentsize: int
    phnum: int
    segments: list[_Segment] = field(default_factory=list)
    phdr_vaddr: int | None = None


def _read_elf(data: bytes) -> _Elf:
    if data[:4] != b"\x7fELF" or data[4] != 1 or data[5] != 1:
        raise EmulatorError("not a little-endian ELF32 file")
    (_, _, machine, _, entry, phoff, _, flags, _, phentsize, phnum, *_rest) = struct.unpack_from(
        "<16sHHIIIIIHHHHHH", data
    )
    if machine != _EM_RISCV:
        raise EmulatorError(f"not a RISC-V ELF (e_machine={machine})")
    elf = _Elf(data, entry, flags, phoff, phentsize, phnum)
    for i in range(phnum):
        ptype, offset, vaddr, _, filesz, memsz, _, _ = struct.unpack_from("<8I", data, phoff + i * phentsize)
        if ptype == _PT_LOAD and memsz:
            elf.segments.append(_Segment(vaddr, offset, filesz, memsz))
        elif ptype == _PT_PHDR:
            elf.phdr_vaddr = vaddr
    if elf.phdr_vaddr is None:  # the headers are mapped by the segment containing file offset e_phoff
        for seg in elf.segments:
            if seg.offset <= phoff < seg.offset + seg.filesz:
                elf.phdr_vaddr = seg.vaddr + phoff - seg.offset
    return elf


def _cstr(data: bytes, offset: int) -> str:
    return data[offset : data.index(b"\0", offset)].decode("utf-8", "replace")


def elf_symbols(path: Path, *, kind: str = "func") -> list[ElfSymbol]:
    """The defined ``"func"`` (or ``"object"``: data) symbols of an ELF32 executable or object, in table order."""
    wanted_type = {"func": _STT_FUNC, "object": _STT_OBJECT}[kind]
    data = Path(path).read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 1:
        raise EmulatorError(f"{path}: not an ELF32 file")
    (shoff,) = struct.unpack_from("<I", data, 32)
    shentsize, shnum = struct.unpack_from("<HH", data, 46)
    sections = [struct.unpack_from("<10I", data, shoff + i * shentsize) for i in range(shnum)]
    out: list[ElfSymbol] = []
    for _, sh_type, _, _, offset, size, link, _, _, entsize in sections:
        if sh_type != _SHT_SYMTAB:
            continue
        strtab = sections[link][4]
        current_file: str | None = None
        for pos in range(offset, offset + size, entsize or 16):
            name_off, value, sym_size, info, _, shndx = struct.unpack_from("<IIIBBH", data, pos)
            sym_type, bind = info & 0xF, info >> 4
            if sym_type == _STT_FILE:
                current_file = _cstr(data, strtab + name_off)
            elif sym_type == wanted_type and shndx != 0 and bind in _BINDINGS:
                out.append(
                    ElfSymbol(
                        _cstr(data, strtab + name_off),
                        value,
                        sym_size,
                        _BINDINGS[bind],
                        current_file if bind == 0 else None,
                    )
                )
    return out


def user_functions(elf: Path, objects_or_names: Iterable[Path | str]) -> list[ElfSymbol]:
    """The function symbols of ``elf`` that the given object files define (or that are named by a ``str``).

    Global functions match by name; static ones by name and source file (the STT_FILE symbol), so a musl
    static function that happens to share a name is not picked up.
    """
    exe = elf_symbols(elf)
    wanted: set[tuple[str, str | None]] = set()
    for item in objects_or_names:
        if isinstance(item, str):
            wanted.update((s.name, s.file) for s in exe if s.name == item)
        else:
            wanted.update((s.name, s.file) for s in elf_symbols(item))
    return [sym for sym in exe if (sym.name, sym.file) in wanted]


# --------------------------------------------------------------------------------------------------------------
# Emulation
# --------------------------------------------------------------------------------------------------------------


@dataclass
class Emulation:
    """What one run did.

    ``page_trace`` lists, in execution order, the first ``fetch``/``read``/``write`` of each 1 KiB page as
    ``(instruction_index, page, kind)`` with ``page = address // 1024`` and a 0-based instruction index.
    ``extension_instructions`` counts executed instructions outside RV32IM (compressed or A-extension).
    """

    exit_code: int
    stdout: bytes
    stderr: bytes
    instructions: int
    instructions_by_function: dict[str, int]
    page_trace: list[tuple[int, int, str]]
    extension_instructions: int = 0
    syscalls: dict[int, int] = field(default_factory=dict)
    #: With ``record_blocks``: every executed block in order, as (address, instructions).
    block_trace: list[tuple[int, int]] = field(default_factory=list)
    #: With ``record_blocks``: every data access in order, as (instruction_index, address, size, kind).
    accesses: list[tuple[int, int, int, str]] = field(default_factory=list)


# riscv32 uses the asm-generic table, with only the 64-bit time syscalls.
SYS_IOCTL = 29
SYS_CLOSE = 57
SYS_READ = 63
SYS_WRITE = 64
SYS_READV = 65
SYS_WRITEV = 66
SYS_EXIT = 93
SYS_EXIT_GROUP = 94
SYS_SET_TID_ADDRESS = 96
SYS_SCHED_GETAFFINITY = 123
SYS_TKILL = 130
SYS_RT_SIGACTION = 134
SYS_RT_SIGPROCMASK = 135
SYS_GETPID = 172
SYS_GETUID = 174
SYS_GETEUID = 175
SYS_GETGID = 176
SYS_GETEGID = 177
SYS_GETTID = 178
SYS_BRK = 214
SYS_MUNMAP = 215
SYS_MMAP2 = 222
SYS_MPROTECT = 226
SYS_MADVISE = 233
SYS_CLOCK_GETTIME64 = 403

_ENOSYS = 38
_ENOMEM = 12
_EBADF = 9
_EINVAL = 22
_ENOTTY = 25
_EFAULT = 14
_MAP_FIXED = 0x10
_MAP_ANONYMOUS = 0x20

_AT = {"PHDR": 3, "PHENT": 4, "PHNUM": 5, "PAGESZ": 6, "BASE": 7, "FLAGS": 8, "ENTRY": 9, "UID": 11, "EUID": 12}
_AT |= {"GID": 13, "EGID": 14, "HWCAP": 16, "CLKTCK": 17, "SECURE": 23, "RANDOM": 25, "EXECFN": 31}
_HWCAP_IMA = (1 << (ord("i") - 97)) | (1 << (ord("m") - 97)) | (1 << (ord("a") - 97))


def _load_unicorn() -> tuple[Any, Any]:
    """The ``unicorn`` module and its RISC-V constants, as ``Any``: its own type hints are partial."""
    try:
        return importlib.import_module("unicorn"), importlib.import_module("unicorn.riscv_const")
    except ImportError as exc:
        raise EmulatorError(
            "emulate() needs the 'unicorn' package, a dependency of pytest-instrbudget "
            "(pip install 'unicorn>=2.1.3,<2.2')"
        ) from exc


def _align_up(value: int, align: int = _HOST_PAGE) -> int:
    return (value + align - 1) & -align


def _instruction_lengths(code: bytes) -> list[int]:
    """Byte offsets of the instructions in a straight-line block (2-byte compressed or 4-byte)."""
    offsets: list[int] = []
    pos = 0
    while pos < len(code):
        offsets.append(pos)
        pos += 4 if code[pos] & 3 == 3 else 2
    return offsets


class _FunctionMap:
    """Address -> function name, by symbol ranges (aliases at the same range collapse to one name)."""

    def __init__(self, symbols: Iterable[ElfSymbol], keep_aliases: bool) -> None:
        ranked: dict[tuple[int, int], list[ElfSymbol]] = {}
        for sym in symbols:
            if sym.size:
                ranked.setdefault((sym.address, sym.size), []).append(sym)
        entries: list[tuple[int, int, tuple[str, ...]]] = []
        for (start, size), syms in sorted(ranked.items()):
            if keep_aliases:
                names = tuple(dict.fromkeys(s.name for s in syms))
            else:
                order = {"global": 0, "weak": 1, "local": 2}
                names = (min(syms, key=lambda s: (order[s.binding], s.name.startswith("_"))).name,)
            entries.append((start, start + size, names))
        self._starts = [e[0] for e in entries]
        self._entries = entries

    def lookup(self, address: int) -> tuple[str, ...]:
        i = bisect.bisect_right(self._starts, address) - 1
        # overlapping ranges are rare; walk back to the innermost range containing the address
        while i >= 0:
            start, end, names = self._entries[i]
            if start <= address < end:
                return names
            if i == 0 or self._entries[i - 1][1] <= start:
                break
            i -= 1
        return ()


@dataclass
class _Block:
    """One translated basic block: instruction count, byte offsets (None when all are 4 bytes), function split."""

    count: int
    offsets: list[int] | None
    functions: list[tuple[str, int]]
    extension: int
    executed: int = 0


class _Machine:
    """Unicorn plus the process state of one run (memory layout, brk, mmap, output, counters)."""

    def __init__(
        self, elf: _Elf, functions: _FunctionMap | None, max_instructions: int, stdin: bytes, record: bool = False
    ) -> None:
        unicorn, rc = _load_unicorn()
        self.rc: Any = rc
        self.unicorn: Any = unicorn
        self.uc: Any = unicorn.Uc(unicorn.UC_ARCH_RISCV, unicorn.UC_MODE_RISCV32)
        self.prot_all: int = unicorn.UC_PROT_ALL
        self.elf = elf
        self.functions = functions
        self.max_instructions = max_instructions
        self.stdin = stdin
        self.stdin_pos = 0
        self.stdout = bytearray()
        self.stderr = bytearray()
        self.exit_code: int | None = None
        self.error: str | None = None
        self.syscalls: dict[int, int] = {}
        self.blocks: dict[int, _Block] = {}
        self.events: list[tuple[int, int, str]] = []
        self.block_trace: list[tuple[int, int]] | None = [] if record else None
        self.accesses: list[tuple[int, int, int, str]] | None = [] if record else None
        self.started = 0  # with ``record``: instructions started so far, the current one included
        self.executed = 0  # instructions started so far, through the end of the current block
        self.block_addr = 0
        self.block: _Block | None = None
        self.block_start = 0
        self._touched: set[tuple[int, str]] = set()
        self._load()
        self.uc.hook_add(unicorn.UC_HOOK_BLOCK, self._make_block_hook())
        if record:  # the pc a memory hook reads is not the access's instruction's: count them one by one
            self.uc.hook_add(unicorn.UC_HOOK_CODE, self._on_instruction)
        self.uc.hook_add(unicorn.UC_HOOK_MEM_READ, self._make_mem_hook("read"))
        self.uc.hook_add(unicorn.UC_HOOK_MEM_WRITE, self._make_mem_hook("write"))
        self.uc.hook_add(unicorn.UC_HOOK_INTR, self._on_interrupt)

    # ---- memory layout ---------------------------------------------------------------------------------------

    def _map(self, start: int, end: int) -> None:
        """Map [start, end) (host-page aligned), skipping pages already mapped."""
        mapped = sorted((b, e + 1) for b, e, _ in self.uc.mem_regions())
        pos = start
        for b, e in mapped:
            if e <= pos or b >= end:
                continue
            if b > pos:
                self.uc.mem_map(pos, b - pos, self.prot_all)
            pos = max(pos, e)
        if pos < end:
            self.uc.mem_map(pos, end - pos, self.prot_all)

    def _load(self) -> None:
        top = 0
        for seg in self.elf.segments:
            start, end = seg.vaddr & -_HOST_PAGE, _align_up(seg.vaddr + seg.memsz)
            self._map(start, end)
            self.uc.mem_write(seg.vaddr, self.elf.data[seg.offset : seg.offset + seg.filesz])
            top = max(top, end)
        self.brk_start = self.brk = self.brk_mapped = top
        self.mmap_next = _MMAP_BASE
        self.uc.mem_map(_STACK_TOP - _STACK_SIZE, _STACK_SIZE, self.prot_all)

    def _setup_stack(self, argv: list[bytes]) -> int:
        """Linux initial stack: argc, argv[], NULL, envp[] (empty), NULL, auxv pairs; returns sp."""
        strings = bytearray()
        sp = _STACK_TOP - 64
        random_addr = sp - 16
        str_base = random_addr - sum(len(a) + 1 for a in argv)
        pointers: list[int] = []
        for arg in argv:
            pointers.append(str_base + len(strings))
            strings += arg + b"\0"
        self.uc.mem_write(str_base, bytes(strings))
        self.uc.mem_write(random_addr, bytes(range(16)))  # fixed AT_RANDOM bytes: runs stay deterministic
        auxv = [
            (_AT["PHDR"], self.elf.phdr_vaddr or 0),
            (_AT["PHENT"], self.elf.phentsize),
            (_AT["PHNUM"], self.elf.phnum),
            (_AT["PAGESZ"], _HOST_PAGE),
            (_AT["BASE"], 0),
            (_AT["FLAGS"], 0),
            (_AT["ENTRY"], self.elf.entry),
            (_AT["UID"], 0),
            (_AT["EUID"], 0),
            (_AT["GID"], 0),
            (_AT["EGID"], 0),
            (_AT["HWCAP"], _HWCAP_IMA),
            (_AT["CLKTCK"], 100),
            (_AT["SECURE"], 0),
            (_AT["RANDOM"], random_addr),
            (_AT["EXECFN"], pointers[0]),
            (0, 0),
        ]
        words = [len(argv), *pointers, 0, 0] + [w for pair in auxv for w in pair]
        sp = (str_base - 4 * len(words)) & -16
        self.uc.mem_write(sp, struct.pack(f"<{len(words)}I", *words))
        return sp

    # ---- hooks -----------------------------------------------------------------------------------------------

    def _new_block(self, address: int, size: int) -> _Block:
        code = bytes(self.uc.mem_read(address, size))
        offsets = _instruction_lengths(code)
        extension = sum(1 for o in offsets if code[o] & 3 != 3 or code[o] & 0x7F == 0x2F)
        functions: dict[str, int] = {}
        if self.functions is not None:
            for off in offsets:
                for name in self.functions.lookup(address + off):
                    functions[name] = functions.get(name, 0) + 1
        block = _Block(len(offsets), None if size == 4 * len(offsets) else offsets, list(functions.items()), extension)
        # first fetch of each 1 KiB page this block covers
        first_page, last_page = address >> PAGE_BITS, (address + size - 1) >> PAGE_BITS
        for page in range(first_page, last_page + 1):
            if (page, "fetch") not in self._touched:
                self._touched.add((page, "fetch"))
                offset = max(0, (page << PAGE_BITS) - address)
                self.events.append((self.executed + self._index_in(block, offset), page, "fetch"))
        return block

    @staticmethod
    def _index_in(block: _Block, offset: int) -> int:
        if block.offsets is None:
            return offset >> 2
        return bisect.bisect_left(block.offsets, offset)

    def _make_block_hook(self) -> Callable[[Any, int, int, Any], None]:
        blocks = self.blocks
        trace = self.block_trace

        def on_block(uc: Any, address: int, size: int, _data: Any) -> None:
            key = address << 16 | size
            block = blocks.get(key)
            if block is None:
                block = blocks[key] = self._new_block(address, size)
            block.executed += 1
            if trace is not None:
                trace.append((address, size // 4))
            self.block = block
            self.block_addr = address
            start = self.block_start = self.executed
            self.executed = start + block.count
            if self.executed > self.max_instructions:
                self.error = f"more than {self.max_instructions} instructions executed"
                uc.emu_stop()

        return on_block

    def _on_instruction(self, _uc: Any, _address: int, _size: int, _data: Any) -> None:
        self.started += 1

    def _make_mem_hook(self, kind: str) -> Callable[[Any, int, int, int, int, Any], None]:
        seen: set[int] = set()
        pc_reg = self.rc.UC_RISCV_REG_PC

        def on_mem(uc: Any, _access: int, address: int, size: int, _value: int, _data: Any) -> None:
            if self.accesses is not None:
                self.accesses.append((self.started - 1, address, size, kind))
            page = address >> PAGE_BITS
            last = (address + size - 1) >> PAGE_BITS
            if page in seen and last in seen:
                return
            block = self.block
            index = self.block_start
            if block is not None:
                index += self._index_in(block, uc.reg_read(pc_reg) - self.block_addr)
            for p in range(page, last + 1):
                if p not in seen:
                    seen.add(p)
                    self.events.append((index, p, kind))

        return on_mem

    # ---- syscalls --------------------------------------------------------------------------------------------

    def _on_interrupt(self, uc: Any, intno: int, _data: Any) -> None:
        rc = self.rc
        pc = uc.reg_read(rc.UC_RISCV_REG_PC)
        if intno != 8:  # 8: environment call from U-mode
            self.error = f"exception {intno} at pc={pc:#x}"
            uc.emu_stop()
            return
        nr = uc.reg_read(rc.UC_RISCV_REG_A7)
        args = [uc.reg_read(r) for r in (rc.UC_RISCV_REG_A0, rc.UC_RISCV_REG_A1, rc.UC_RISCV_REG_A2)]
        args += [uc.reg_read(r) for r in (rc.UC_RISCV_REG_A3, rc.UC_RISCV_REG_A4, rc.UC_RISCV_REG_A5)]
        self.syscalls[nr] = self.syscalls.get(nr, 0) + 1
        result = self._syscall(nr, args)
        if result is not None:
            uc.reg_write(rc.UC_RISCV_REG_A0, result & 0xFFFFFFFF)

    def _signed(self, value: int) -> int:
        return value - (1 << 32) if value & 0x8000_0000 else value

    def _write(self, fd: int, data: bytes) -> int:
        if fd == 1:
            self.stdout += data
        elif fd == 2:
            self.stderr += data
        else:
            return -_EBADF
        return len(data)

    def _read(self, fd: int, addr: int, length: int) -> int:
        if fd != 0:
            return -_EBADF
        chunk = self.stdin[self.stdin_pos : self.stdin_pos + length]
        self.uc.mem_write(addr, chunk)
        self.stdin_pos += len(chunk)
        return len(chunk)

    def _iovecs(self, addr: int, count: int) -> list[tuple[int, int]]:
        raw = bytes(self.uc.mem_read(addr, 8 * count))
        return [struct.unpack_from("<II", raw, 8 * i) for i in range(count)]

    def _syscall(self, nr: int, a: list[int]) -> int | None:
        uc = self.uc
        if nr in (SYS_EXIT, SYS_EXIT_GROUP):
            self.exit_code = a[0] & 0xFF
            uc.emu_stop()
            return None
        if nr == SYS_WRITE:
            return self._write(a[0], bytes(uc.mem_read(a[1], a[2])))
        if nr == SYS_WRITEV:
            total = 0
            for base, length in self._iovecs(a[1], a[2]):
                written = self._write(a[0], bytes(uc.mem_read(base, length)) if length else b"")
                if written < 0:
                    return written
                total += written
            return total
        if nr == SYS_READ:
            return self._read(a[0], a[1], a[2])
        if nr == SYS_READV:
            total = 0
            for base, length in self._iovecs(a[1], a[2]):
                got = self._read(a[0], base, length)
                if got < 0:
                    return got
                total += got
                if got < length:
                    break
            return total
        if nr == SYS_BRK:
            return self._brk(a[0])
        if nr == SYS_MMAP2:
            return self._mmap(a[0], a[1], a[3], self._signed(a[4]))
        if nr == SYS_MUNMAP:
            return self._munmap(a[0], a[1])
        if nr == SYS_TKILL:
            self.exit_code = 128 + a[1]  # killed by a signal (abort): report it the way a shell does
            uc.emu_stop()
            return None
        if nr == SYS_CLOCK_GETTIME64:
            ns = self.executed  # deterministic clock: one nanosecond per instruction
            uc.mem_write(a[1], struct.pack("<qq", ns // 10**9, ns % 10**9))  # struct timespec64 (long long nsec)
            return 0
        if nr == SYS_SCHED_GETAFFINITY:  # one CPU (zig's malloc asks how many there are)
            if a[1] < 4:
                return -_EINVAL
            uc.mem_write(a[2], struct.pack("<I", 1))
            return 4
        if nr == SYS_IOCTL:
            return -_ENOTTY
        if nr == SYS_CLOSE:
            return 0 if a[0] <= 2 else -_EBADF
        if nr in (SYS_SET_TID_ADDRESS, SYS_GETPID, SYS_GETTID):
            return 1
        if nr in (SYS_RT_SIGACTION, SYS_RT_SIGPROCMASK, SYS_MPROTECT, SYS_MADVISE):
            return 0
        if nr in (SYS_GETUID, SYS_GETEUID, SYS_GETGID, SYS_GETEGID):
            return 0
        return -_ENOSYS

    def _brk(self, addr: int) -> int:
        if addr <= self.brk_start:
            return self.brk
        end = _align_up(addr)
        if end > _MMAP_BASE:
            return self.brk
        if end > self.brk_mapped:
            self._map(self.brk_mapped, end)
            self.brk_mapped = end
        self.brk = addr
        return self.brk

    def _mmap(self, addr: int, length: int, flags: int, fd: int) -> int:
        if not flags & _MAP_ANONYMOUS or fd != -1:
            return -_ENOSYS  # no files here
        if length == 0:
            return -_EINVAL
        length = _align_up(length)
        if flags & _MAP_FIXED:
            if addr & (_HOST_PAGE - 1):
                return -_EINVAL
            self._map(addr, addr + length)
            self.uc.mem_write(addr, bytes(length))
            return addr
        start = self.mmap_next
        if start + length > _STACK_TOP - _STACK_SIZE:
            return -_ENOMEM
        self.uc.mem_map(start, length, self.prot_all)
        self.mmap_next = start + length  # addresses are never reused: runs stay deterministic
        return start

    def _munmap(self, addr: int, length: int) -> int:
        if addr & (_HOST_PAGE - 1) or addr < _MMAP_BASE:
            return -_EINVAL if addr & (_HOST_PAGE - 1) else 0
        try:
            self.uc.mem_unmap(addr, _align_up(length))
        except self.unicorn.UcError:  # partially unmapped already: Linux does not mind either
            return 0
        return 0

    # ---- running ---------------------------------------------------------------------------------------------

    def run(self, argv: list[bytes]) -> None:
        sp = self._setup_stack(argv)
        self.uc.reg_write(self.rc.UC_RISCV_REG_SP, sp)
        try:
            self.uc.emu_start(self.elf.entry, 0)
        except self.unicorn.UcError as exc:
            pc = self.uc.reg_read(self.rc.UC_RISCV_REG_PC)
            raise EmulatorError(f"emulation failed at pc={pc:#x}: {exc}") from exc
        if self.error is not None:
            raise EmulatorError(self.error)
        if self.exit_code is None:
            pc = self.uc.reg_read(self.rc.UC_RISCV_REG_PC)
            raise EmulatorError(f"emulation stopped at pc={pc:#x} without an exit syscall")


def emulate(
    elf: Path,
    argv: Sequence[str] = (),
    *,
    stdin: bytes = b"",
    count_functions: Collection[str] | None = None,
    max_instructions: int = 10**9,
    record_blocks: bool = False,
) -> Emulation:
    """Run a static riscv32 Linux ELF to its exit and count what it executed.

    ``argv`` are the arguments after ``argv[0]`` (the ELF's path).  ``instructions_by_function`` has an entry
    for every name in ``count_functions`` (0 if never executed), or, when it is None, for every executed
    function symbol of the ELF (aliases of one address range collapse to one name; same-named local
    symbols are summed). ``record_blocks`` keeps the order of executed blocks (``block_trace``) and every data
    access (``accesses``).
    """
    path = Path(elf)
    parsed = _read_elf(path.read_bytes())
    symbols = elf_symbols(path)
    if count_functions is None:
        functions = _FunctionMap(symbols, keep_aliases=False)
    else:
        wanted = set(count_functions)
        functions = _FunctionMap((s for s in symbols if s.name in wanted), keep_aliases=True)
    machine = _Machine(parsed, functions, max_instructions, stdin, record_blocks)
    machine.run([str(path).encode(), *(a.encode() for a in argv)])
    by_function: dict[str, int] = dict.fromkeys(count_functions or (), 0)
    extension = 0
    for block in machine.blocks.values():
        extension += block.extension * block.executed
        for name, n in block.functions:
            by_function[name] = by_function.get(name, 0) + n * block.executed
    trace = sorted(machine.events, key=lambda e: e[0])  # stable: a fetch precedes its instruction's access
    assert machine.exit_code is not None
    return Emulation(
        exit_code=machine.exit_code,
        stdout=bytes(machine.stdout),
        stderr=bytes(machine.stderr),
        instructions=machine.executed,
        instructions_by_function=by_function,
        page_trace=trace,
        extension_instructions=extension,
        syscalls=dict(sorted(machine.syscalls.items())),
        block_trace=machine.block_trace or [],
        accesses=machine.accesses or [],
    )
