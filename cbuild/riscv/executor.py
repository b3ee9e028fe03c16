"""The RISC-V executor: run a static riscv32/riscv64 ELF, or call its functions, in unicorn.

The executing code is native (``runtime/rv_executor.c``, built with the project's clang against
the ``unicorn`` wheel's ``libunicorn.so.2``), with the C code of the cost models that measure
through it compiled in: their hooks see every executed machine block and, if they ask, every
memory access with the index of the instruction that made it. Python only lays out memory,
starts runs and reads results (:class:`Executor`). :func:`run_isolated` runs a program in a
child process, an executor server kept for later runs, so that nothing the guest or the engine
does can end the caller.
"""

from __future__ import annotations

import atexit
import base64
import bisect
import contextlib
import ctypes
import functools
import hashlib
import importlib.util
import os
import pickle
import re
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from array import array
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from cbuild.build.demangle import LIBC_PREFIX, demangle
from cbuild.build.places import Frame, symbols
from cbuild.errors import CBuildError
from cbuild.riscv.messages import (
    TimeLimitPassed,
    UntimedLimitPassed,
    marked_untimed,
    receive_message,
    receive_reply,
    send_message,
)

if TYPE_CHECKING:  # the executor's child process imports this module: only what running needs
    from cbuild.build.cache import Cache
    from cbuild.build.toolchain import Toolchain

SOURCE = Path(__file__).parent.parent / "runtime" / "rv_executor.c"

#: rvx_run outcomes.
EXITED, RETURNED, FAULT, LIMIT, READY, FALLBACK, STOPPED = 0, 1, 2, 3, 4, 5, 6
#: Guest memory layout: the stack ends at STACK_TOP, anonymous mappings grow up from MMAP_BASE.
STACK_TOP = 0x8000_0000
STACK_SIZE = 16 << 20
MMAP_BASE = 0x4000_0000
#: Bytes the counted C library's heap takes in a RISC-V build, from MMAP_BASE (built in as its
#: limit: the guest's environment is empty, so ``INSTRBUDGET_HEAP_LIMIT`` does not reach it).
HEAP_SIZE = 256 << 20
#: A mapped address no code lives at: called functions return to it.
RETURN_ADDRESS = STACK_TOP - STACK_SIZE - 0x1000
PAGE = 4096
_AT = {"PHDR": 3, "PHENT": 4, "PHNUM": 5, "PAGESZ": 6, "BASE": 7, "FLAGS": 8, "ENTRY": 9, "UID": 11, "EUID": 12}
_AT |= {"GID": 13, "EGID": 14, "HWCAP": 16, "CLKTCK": 17, "SECURE": 23, "RANDOM": 25, "EXECFN": 31}
_HWCAP_IMA = (1 << (ord("i") - 97)) | (1 << (ord("m") - 97)) | (1 << (ord("a") - 97))
#: unicorn's RISC-V register numbers (unicorn/riscv.h): x0..x31 are 1..32.
REG_X0 = 1
REG_SP, REG_RA, REG_A0 = REG_X0 + 2, REG_X0 + 1, REG_X0 + 10
_HOOKS = ("block", "access", "accesses_done", "reset", "finish", "now", "clock_step", "block_slack", "room")
#: Section of the RISC-V builds listing region markers (written by :mod:`cbuild.riscv.build`).
MARKER_SECTION = ".instrbudget_marks"
#: The source file name (an ELF ``STT_FILE`` symbol) of the counted C library's own object in a
#: RISC-V build: its static functions (``ib_alloc``) are named as the native build names them.
COUNTED_LIBC_FILE = "instrbudget-libc.c"
_COUNTED_LIBC = COUNTED_LIBC_FILE.encode()  # as the symbol table holds it
#: The file of the copies the RISC-V backend calls for long constant-length copies (compiler-rt's
#: ``memcpy``, ``memset``), which are not the counted library's.
_COMPILER_RT_FILE = b"compiler_rt"
#: Non-allocated section of a library's build: how its code takes each exported function's
#: arguments and result (:func:`cbuild.riscv.build.abi_table`, JSON; read by :mod:`cbuild.riscv.guest`).
ABI_SECTION = ".instrbudget.abi"
#: Models one executor holds (RVX_MAX_MODELS in rv_executor.c).
MAX_MODELS = 4
_NO_REGION = 0xFFFF_FFFF


class ExecutorError(CBuildError):
    """The executor could not be built, or a guest could not be loaded or run."""


@dataclass(frozen=True)
class ExecRuntime:
    """A cost model's C code inside the executor.

    ``source`` defines ``model_block(const rvx_block *b)`` (before each executed block: ``b->pc``,
    ``b->n`` instructions, ``b->nmem`` accesses, ``b->page_events`` the most first touches of
    1 KiB pages they can make, ``b->id`` its number in its machine (kept by a kept machine),
    ``b->data[RVX_MODEL]`` the model's block data,
    read-only; all but ``page_events`` constants in translated code; ``RVX_EXECUTED`` the
    instructions executed in the measurement, this block's included; ``RVX_SCRATCH(b)`` four ``uint64_t`` of
    the model's own per block, zero at first and when a kept machine restarts), ``model_access(uint64_t
    address, uint32_t size, uint32_t is_store, uint32_t index)`` (with ``memory``: each load and
    store, ``index`` the instruction's position in the block), optionally
    ``model_accesses_done(uint64_t first, uint64_t last, uint32_t is_store)`` with
    ``RVX_ACCESSES_DONE`` defined (nonzero: no access of that kind between ``first`` and
    ``last``, less than 1 KiB apart, would change anything, so translated code skips them),
    ``model_reset(void)``,
    ``model_finish(uint64_t *out)`` (``results`` numbers), ``uint64_t model_now(void)`` (the
    cost so far, never decreasing: regions and cut-offs read it) and optionally
    ``uint64_t model_clock_step(void)`` with ``RVX_CLOCK_STEP`` defined (the most ``model_now``
    grows over one instruction, its fetch and accesses included: a cut-off on the clock then
    looks at it only when it could have passed, not before every block) and optionally, with
    ``RVX_ROOM`` defined, ``uint64_t model_block_slack(uint64_t pc, uint32_t n, uint32_t nmem)``
    (a block's constant) and ``int64_t model_room(void)``: translated code checks, with the
    instruction limit, whether ``RVX_EXECUTED`` plus the block's slack is at most every model's
    room, and runs the block hook with ``RVX_ROOMY`` nonzero if so, so that the hook can leave out
    a check of its own; the model calls ``RVX_ROOM_CHANGED()`` whenever its room changes. With
    ``RVX_ROOM_TAKEN`` defined too (a block that starts with room takes at most its slack less one
    of it) by every model of the run, a hot block's check covers the next block's, which then
    starts unchecked, with
    ``RVX_FOLLOWS`` nonzero where the block before it, with room too, has instructions on every
    1 KiB page of its own; and where every model of the run defines ``RVX_ROOM_TAKEN`` or has no
    room, a check at a hot function's entries, call returns and loop heads covers every block on
    the way to the next such check, which start unchecked, with room (``RVX_FOLLOWS`` as above
    where every block entering them so lies on their pages). ``block_data``
    (optional) computes a block's data from its instruction words and address, once per block, in
    Python; a :class:`~cbuild.errors.CBuildError` it raises (a
    word it cannot decode) makes the model's results unavailable for the run, with that reason.
    ``block_data_id`` names the producer for the block-data file kept beside the ELF (see
    :class:`BlockDataFile`); empty: computed in every process.
    """

    source: str
    results: int
    memory: bool = False
    block_data: Callable[[Sequence[int], int], Sequence[int]] | None = None
    block_data_id: str = ""


def unicorn_paths() -> tuple[Path, Path]:
    """The ``unicorn`` wheel's include directory and ``libunicorn.so.2``."""
    spec = importlib.util.find_spec("unicorn")
    if spec is None or spec.origin is None:
        raise ExecutorError(
            "the RISC-V cost models need the 'unicorn' package, a dependency of pytest-instrbudget "
            "(pip install 'unicorn>=2.1.3,<2.2')"
        )
    root = Path(spec.origin).parent
    include, library = root / "include", root / "lib" / "libunicorn.so.2"
    if not (include / "unicorn" / "unicorn.h").exists() or not library.exists():
        raise ExecutorError(f"the unicorn package at {root} has no C headers or libunicorn.so.2")
    return include, library


def executor_source(runtimes: Sequence[ExecRuntime], *, translated: bool = False) -> str:
    """The executor's C source with the models' hooks joined in; ``translated``: the form that runs
    translated code (:mod:`cbuild.riscv.translated`) instead of unicorn."""
    if len(runtimes) > MAX_MODELS:
        raise ExecutorError(f"a RISC-V target runs at most {MAX_MODELS} executing cost models, not {len(runtimes)}")
    memory = any(r.memory for r in runtimes)
    parts = [
        "/* Generated by pytest-instrbudget: the RISC-V executor and its cost models. */\n",
        "#define RVX_TRANSLATED 1\n" if translated else "",
        f"#define RVX_MEMORY_EVENTS {int(memory)}\n",
        SOURCE.read_text(),
    ]
    for i, runtime in enumerate(runtimes):
        parts.append(f"\n/* ---- cost model {i} ---- */\n#define RVX_MODEL {i}\n")
        parts.extend(f"#define model_{hook} rvm{i}_{hook}\n" for hook in _HOOKS)
        parts.append(
            f"RVX_INLINE void rvm{i}_block(const rvx_block *b);\n"
            f"RVX_INLINE void rvm{i}_access(uint64_t address, uint32_t size, uint32_t is_store, uint32_t index);\n"
        )
        parts.append(runtime.source)
        parts.append(
            "\n#ifndef RVX_ACCESSES_DONE /* the model has no model_accesses_done: each access goes to its hook */\n"
            f"RVX_INLINE uint32_t rvm{i}_accesses_done(uint64_t f, uint64_t l, uint32_t w) "
            "{ (void)f; (void)l; (void)w; return 0; }\n#endif\n#undef RVX_ACCESSES_DONE\n"
            "#ifndef RVX_CLOCK_STEP /* no bound on the clock's growth: a cut-off looks at it before every block */\n"
            f"static uint64_t rvm{i}_clock_step(void) {{ return UINT64_MAX; }}\n#endif\n#undef RVX_CLOCK_STEP\n"
            "#ifdef RVX_ROOM_TAKEN /* asks for covering checks, bounding the room a block takes */\n"
            f"#define rvm{i}_covers 1\n#else\n#define rvm{i}_covers 0\n#endif\n#undef RVX_ROOM_TAKEN\n"
            "#ifndef RVX_ROOM /* no room: every block's hook makes its own checks */\n"
            f"RVX_INLINE uint64_t rvm{i}_block_slack(uint64_t p, uint32_t n, uint32_t m) "
            "{ (void)p; (void)n; (void)m; return 0; }\n"
            f"static int64_t rvm{i}_room(void) {{ return INT64_MAX; }}\n#define rvm{i}_roomless 1\n"
            f"#else\n#define rvm{i}_roomless 0\n#endif\n#undef RVX_ROOM\n"
        )
        parts.extend(f"\n#undef model_{hook}" for hook in _HOOKS)
        parts.append("\n#undef RVX_MODEL\n")
    block = " ".join(f"rvm{i}_block(b);" for i in range(len(runtimes)))
    access = " ".join(f"rvm{i}_access(a, s, w, k);" for i, r in enumerate(runtimes) if r.memory)
    done = "".join(f" && rvm{i}_accesses_done(f, l, w)" for i, r in enumerate(runtimes) if r.memory)
    reset = " ".join(f"rvm{i}_reset();" for i in range(len(runtimes)))
    offsets = [sum(r.results for r in runtimes[:i]) for i in range(len(runtimes))]
    finish = " ".join(f"rvm{i}_finish(out + {offsets[i]});" for i in range(len(runtimes)))
    now = " ".join(f"out[{i}] = rvm{i}_now();" for i in range(len(runtimes)))
    step = " ".join(f"out[{i}] = rvm{i}_clock_step();" for i in range(len(runtimes)))
    slack = " ".join(
        f"s = rvm{i}_block_slack(p, n, m) > s ? rvm{i}_block_slack(p, n, m) : s;" for i in range(len(runtimes))
    )
    room = " ".join(f"if (rvm{i}_room() < r) r = rvm{i}_room();" for i in range(len(runtimes)))
    covers = "".join(f" && rvm{i}_covers" for i in range(len(runtimes)))
    # What a block takes of each model's room is bounded by its slack, or the model has none.
    bounded = "".join(f" && (rvm{i}_covers || rvm{i}_roomless)" for i in range(len(runtimes)))
    parts.append(
        f"""
RVX_INLINE void rvx_models_block(const rvx_block *b) {{ (void)b; {block} }}
RVX_INLINE void rvx_models_access(uint64_t a, uint32_t s, uint32_t w, uint32_t k) {{
    (void)a; (void)s; (void)w; (void)k; {access} }}
RVX_INLINE uint32_t rvx_models_accesses_done(uint64_t f, uint64_t l, uint32_t w) {{
    (void)f; (void)l; (void)w; return 1{done}; }}
static void rvx_models_reset(void) {{ {reset} }}
static void rvx_models_finish(uint64_t *out) {{ (void)out; {finish} }}
static void rvx_models_now(uint64_t *out) {{ (void)out; {now} }}
static void rvx_models_clock_step(uint64_t *out) {{ (void)out; {step} }}
RVX_INLINE uint64_t rvx_models_slack(uint64_t p, uint32_t n, uint32_t m) {{
    uint64_t s = 0; (void)p; (void)n; (void)m; {slack} return s; }}
static int64_t rvx_models_room(void) {{ int64_t r = INT64_MAX; {room} return r; }}
RVX_INLINE uint32_t rvx_models_cover(void) {{ return 1{covers}; }}
RVX_INLINE uint32_t rvx_models_bounded(void) {{ return 1{bounded}; }}
"""
    )
    return "".join(parts)


def build_executor(toolchain: Toolchain, cache: Cache, runtimes: Sequence[ExecRuntime]) -> Path:
    """The executor as a shared library for the host, with ``runtimes`` compiled in (cached by content)."""
    include, library = unicorn_paths()
    header = (include / "unicorn" / "unicorn.h").read_bytes()
    # Which unicorn it is built against is part of the cached executor's key (a reinstall of
    # another version at the same path must not reuse it).
    engine = f"/* unicorn.h {hashlib.sha256(header).hexdigest()[:16]}, {library.stat().st_size} bytes */\n"
    flags = [
        "-shared",
        "-fPIC",
        "-O2",
        "-std=c11",
        "-D_POSIX_C_SOURCE=200809L",
        f"-I{include}",
        str(library),
        f"-Wl,-rpath,{library.parent}",
    ]
    return _compile_executor(toolchain, cache, engine + executor_source(runtimes), "RISC-V executor", flags, ".so")


def build_executor_ir(toolchain: Toolchain, cache: Cache, runtimes: Sequence[ExecRuntime]) -> Path:
    """The translated form of the executor, with ``runtimes`` compiled in, as LLVM IR for the host
    (cached by content): :mod:`cbuild.riscv.translated` loads it beside each translation."""
    flags = ["-S", "-emit-llvm", "-g0", "-O2", "-fPIC", "-std=c11", "-D_POSIX_C_SOURCE=200809L"]
    source = executor_source(runtimes, translated=True)
    return _compile_executor(toolchain, cache, source, "translated RISC-V executor", flags, ".ll")


def _compile_executor(
    toolchain: Toolchain, cache: Cache, source: str, what: str, flags: Sequence[str], suffix: str
) -> Path:
    from cbuild.build.compile import compile_own  # building needs the toolchain; running does not

    stem = "rvexec" if suffix == ".so" else "rvexec-translated"
    try:
        return compile_own(toolchain, cache, source, what=what, stem=stem, flags=flags, suffix=suffix)
    except CBuildError as exc:
        raise ExecutorError(str(exc)) from None


@dataclass(frozen=True)
class Segment:
    """A loadable part of an ELF image."""

    vaddr: int
    memsz: int
    data: bytes
    #: Its flags have PF_X: it holds code.
    executable: bool = False


@dataclass(frozen=True)
class Image:
    """What loading a static RISC-V ELF needs."""

    xlen: int
    entry: int
    segments: tuple[Segment, ...]
    phdr: int
    phentsize: int
    phnum: int
    #: Function symbols: (start, size, name), sorted by start.
    functions: tuple[tuple[int, int, str], ...]
    #: Region markers (section ``.instrbudget_marks``, :mod:`cbuild.riscv.build`): (address, kind, name),
    #: sorted by address; kind 0 start, 1 next, 2 stop.
    markers: tuple[tuple[int, int, str], ...] = ()
    #: The contents of section :data:`ABI_SECTION` (a library build's), or b"".
    abi: bytes = b""

    @property
    def end(self) -> int:
        """First page-aligned address after the image (where the heap starts)."""
        return max(_align(s.vaddr + s.memsz) for s in self.segments)

    def symbol(self, name: str) -> int:
        """A function's address; an error naming the ELF's functions if there is none."""
        for start, _, sym in self.functions:
            if sym == name:
                return start
        raise ExecutorError(f"the RISC-V build has no function {name!r}")


def _align(value: int) -> int:
    return (value + PAGE - 1) & -PAGE


#: Memory a machine maps besides its image, zero at the start: the stack, the return page, and the
#: first HEAP_SIZE bytes of the anonymous mappings, which the counted C library's heap takes
#: (mapped from the start, so that a machine kept for later runs need not unmap them).
_ZEROED = (
    (STACK_TOP - STACK_SIZE, STACK_TOP),
    (RETURN_ADDRESS, RETURN_ADDRESS + PAGE),
    (MMAP_BASE, MMAP_BASE + HEAP_SIZE),
)


#: Major opcodes of the F and D extensions' instructions (loads, stores, fused, the rest).
_FLOAT_OPCODES = frozenset({0x07, 0x27, 0x43, 0x47, 0x4B, 0x4F, 0x53})
_ECALL, _EBREAK = 0x0000_0073, 0x0010_0073


def _restartable(code: Sequence[tuple[int, bytes]], pc: int, n: int) -> bool:
    """Whether a block of ``n`` instructions at ``pc`` lies in the program's code and has no
    instruction whose effect a restart does not set back (floating point, any system instruction
    but ``ecall`` and ``ebreak``)."""
    for start, contents in code:
        if start <= pc and pc + 4 * n <= start + len(contents):
            for at in range(pc - start, pc - start + 4 * n, 4):
                word = int.from_bytes(contents[at : at + 4], "little")
                if word & 0x7F in _FLOAT_OPCODES or (word & 0x7F == 0x73 and word not in (_ECALL, _EBREAK)):
                    return False
            return True
    return False  # the memory restarting makes zero again may hold code unicorn translated


def _loaded_memory(image: Image) -> tuple[tuple[tuple[int, bytes], ...], tuple[tuple[int, bytes], ...]]:
    """Memory as a new machine holds it before its run, in two parts: the code (each executable
    segment, as (address, contents)) and the rest of the pages the segments lie on."""
    spans: list[list[int]] = []
    for start, end in sorted((s.vaddr & -PAGE, _align(s.vaddr + s.memsz)) for s in image.segments):
        if spans and start <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], end)
        else:
            spans.append([start, end])
    code = sorted((s.vaddr, s.vaddr + s.memsz) for s in image.segments if s.executable)
    executable, rest = [], []
    for start, end in spans:
        contents = bytearray(end - start)
        for seg in image.segments:  # in the order a new machine writes them
            if start <= seg.vaddr < end:
                contents[seg.vaddr - start : seg.vaddr - start + len(seg.data)] = seg.data
        at = start
        for a, b in code:
            if start <= a < end:
                if at < a:
                    rest.append((at, bytes(contents[at - start : a - start])))
                executable.append((a, bytes(contents[a - start : b - start])))
                at = b
        if at < end:
            rest.append((at, bytes(contents[at - start :])))
    return tuple(executable), tuple(rest)


#: Images read before, by path and file signature, least recently used first: an executor server
#: runs the same few builds again and again, and parsing an ELF's symbols costs more than a small
#: program's run.
_IMAGES: dict[tuple[Path, tuple[int, int, int]], Image] = {}
_KEEP_IMAGES = 8
_IMAGES_LOCK = threading.Lock()  # run_program's RISC-V runs go on in threads of their own


def _local_name(name: str, file: bytes) -> str:
    """A static function's name as reports give it: the counted C library's as its native build
    names them (``ib_alloc [libc]``, ``heap_get [libc]``), compiler-rt's copies apart from the
    counted ones (``memcpy (compiler_rt)``)."""
    if file == _COUNTED_LIBC and not name.startswith(LIBC_PREFIX):
        return LIBC_PREFIX + name.removeprefix("__instrbudget_")
    if file == _COMPILER_RT_FILE:
        return f"{name} (compiler_rt)"
    return name


def read_image(path: Path) -> Image:
    """Segments, entry point and function symbols of a static RISC-V ELF (ELF32 or ELF64, little-endian)."""
    path = Path(path)
    try:
        key = (path.resolve(), file_signature(path))
        with _IMAGES_LOCK:
            found = _IMAGES.pop(key, None)
            if found is not None:
                _IMAGES[key] = found
                return found
        data = path.read_bytes()
    except OSError as exc:
        raise ExecutorError(f"cannot read the RISC-V build {path}: {exc}") from None
    try:
        image = _parse_image(data)
    except (struct.error, IndexError, ValueError) as exc:
        raise ExecutorError(f"{path} is not a usable RISC-V ELF: {exc}") from None
    with _IMAGES_LOCK:
        while len(_IMAGES) >= _KEEP_IMAGES:
            del _IMAGES[next(iter(_IMAGES))]
        _IMAGES[key] = image
    return image


def _parse_image(data: bytes) -> Image:
    if data[:4] != b"\x7fELF" or data[5] != 1:
        raise ValueError("not a little-endian ELF file")
    wide = data[4] == 2
    if wide:
        _, machine, _, entry, phoff, shoff, _, _, phentsize, phnum, shentsize, shnum, _ = struct.unpack_from(
            "<HHIQQQIHHHHHH", data, 16
        )
    else:
        _, machine, _, entry, phoff, shoff, _, _, phentsize, phnum, shentsize, shnum, _ = struct.unpack_from(
            "<HHIIIIIHHHHHH", data, 16
        )
    if machine != 243:
        raise ValueError(f"machine {machine}, not RISC-V (243)")
    segments, phdr = [], 0
    for i in range(phnum):
        at = phoff + i * phentsize
        if wide:
            ptype, flags, offset, vaddr, _, filesz, memsz, _ = struct.unpack_from("<IIQQQQQQ", data, at)
        else:
            ptype, offset, vaddr, _, filesz, memsz, flags, _ = struct.unpack_from("<IIIIIIII", data, at)
        if ptype == 1:
            segments.append(Segment(vaddr, memsz, data[offset : offset + filesz], bool(flags & 1)))
        elif ptype == 6:
            phdr = vaddr
    sections, names = [], []
    for i in range(shnum):
        at = shoff + i * shentsize
        if wide:
            sname, stype, _, _, offset, size, link, _, _, entsize = struct.unpack_from("<IIQQQQIIQQ", data, at)
        else:
            sname, stype, _, _, offset, size, link, _, _, entsize = struct.unpack_from("<IIIIIIIIII", data, at)
        sections.append((stype, offset, size, link, entsize))
        names.append(sname)
    shstrndx = struct.unpack_from("<H", data, 62 if wide else 50)[0]
    markers: list[tuple[int, int, str]] = []
    abi = b""
    if shstrndx < len(sections):
        strings = sections[shstrndx][1]
        for (_, offset, size, _, _), sname in zip(sections, names, strict=True):
            section = data[strings + sname : data.index(b"\0", strings + sname)]
            if section == ABI_SECTION.encode():
                abi = data[offset : offset + size]
            elif section == MARKER_SECTION.encode():
                fmt = "<QQQ" if wide else "<III"
                for at in range(offset, offset + size - struct.calcsize(fmt) + 1, struct.calcsize(fmt)):
                    address, kind, name = struct.unpack_from(fmt, data, at)
                    markers.append((address, kind, _string_at(segments, name)))
    symbols: list[tuple[int, int, int, str]] = []  # (start, size, bind, name)
    for stype, offset, size, link, entsize in sections:
        if stype != 2 or not entsize:  # SHT_SYMTAB
            continue
        strtab = sections[link]
        file = b""  # the source file (STT_FILE) of the local symbols that follow
        for at in range(offset, offset + size, entsize):
            if wide:
                name, info, _, shndx, value, symsize = struct.unpack_from("<IBBHQQ", data, at)
            else:
                name, value, symsize, info, _, shndx = struct.unpack_from("<IIIBBH", data, at)
            if info & 0xF == 4:  # STT_FILE
                file = data[strtab[1] + name : data.index(b"\0", strtab[1] + name)]
                continue
            if info & 0xF != 2 or shndx == 0 or not name:  # functions defined here
                continue
            end = data.index(b"\0", strtab[1] + name)
            text = data[strtab[1] + name : end].decode(errors="replace")
            if info >> 4 == 0:  # STB_LOCAL
                text = _local_name(text, file)
            symbols.append((value, symsize, info >> 4, text))
    # Aliases of one address: the global name wins, then the shorter one. A function without a size
    # reaches to the next one.
    best: dict[int, tuple[int, int, int, str]] = {}
    for sym in symbols:
        known = best.get(sym[0])
        if known is None or (sym[2] != 1, -sym[1], len(sym[3]), sym[3]) < (
            known[2] != 1,
            -known[1],
            len(known[3]),
            known[3],
        ):
            best[sym[0]] = sym
    starts = sorted(best)
    functions = []
    for i, start in enumerate(starts):
        _, size, _, name = best[start]
        if size == 0:
            size = (starts[i + 1] if i + 1 < len(starts) else start + 4) - start
        functions.append((start, size, name))
    return Image(
        64 if wide else 32,
        entry,
        tuple(segments),
        phdr,
        phentsize,
        phnum,
        tuple(functions),
        tuple(sorted(markers)),
        abi,
    )


def _string_at(segments: Sequence[Segment], address: int) -> str:
    """The NUL-terminated string the image holds at ``address``."""
    for seg in segments:
        if seg.vaddr <= address < seg.vaddr + len(seg.data):
            start = address - seg.vaddr
            end = seg.data.find(b"\0", start)
            return seg.data[start : end if end >= 0 else len(seg.data)].decode(errors="replace")
    raise ValueError(f"a region marker's name at {address:#x} lies outside the image")


@dataclass
class Execution:
    """What one run or one measured stretch of calls executed."""

    #: Executed machine blocks: (start address, instructions, executions).
    blocks: list[tuple[int, int, int]]
    #: The models' results, in the order their runtimes were given.
    results: list[int]
    instructions: int
    exit_code: int | None = None
    stdout: bytes = b""
    stderr: bytes = b""
    #: Why the run did not end normally (fault, limit), or "".
    error: str = ""
    functions: dict[str, int] = field(default_factory=dict)
    #: Region path ("parse", "parse/tokens") -> (times run, each model's clock over it, in runtime order).
    regions: dict[str, tuple[int, list[int]]] = field(default_factory=dict)
    #: Models (by runtime index) whose block data could not be computed, with the reason: their
    #: results are not measurements.
    unavailable: dict[int, str] = field(default_factory=dict)
    #: What executed the code: "unicorn" or "translated" (:mod:`cbuild.riscv.translated`).
    engine: str = "unicorn"
    #: Why a run that could have been translated ran in unicorn, or "".
    note: str = ""
    #: A run stopped at a cut-off on a model's clock: (the model's runtime index, its clock, the
    #: address of the block that would have started next), else None. The rest describes what ran.
    stopped: tuple[int, int, int] | None = None
    #: Each model's clock (``model_now``) at the end, in runtime order: what a cut-off counts.
    clocks: list[int] = field(default_factory=list)


def function_instructions(image: Image, blocks: Sequence[tuple[int, int, int]]) -> dict[str, int]:
    """Executed instructions per function symbol (blocks split where a symbol ends)."""
    starts = [f[0] for f in image.functions]
    out: dict[str, int] = {}
    for pc, n, count in blocks:
        if not count:
            continue
        address, end = pc, pc + 4 * n
        while address < end:
            i = bisect.bisect_right(starts, address) - 1
            if i >= 0 and address < image.functions[i][0] + image.functions[i][1]:
                name = image.functions[i][2]
                stop = min(end, image.functions[i][0] + image.functions[i][1])
            else:
                name = "(no symbol)"
                nxt = starts[i + 1] if i + 1 < len(starts) else end
                stop = min(end, max(nxt, address + 4))
            out[name] = out.get(name, 0) + count * ((stop - address) // 4)
            address = stop
    return out


def function_at(image: Image, address: int) -> str:
    """The function symbol whose code holds ``address``, or "(no symbol)"."""
    i = bisect.bisect_right([f[0] for f in image.functions], address) - 1
    if i >= 0 and address < image.functions[i][0] + image.functions[i][1]:
        return image.functions[i][2]
    return "(no symbol)"


def guest_place(elf: Path, pc: int) -> str:
    """Where the guest code at ``pc`` (a block's start) is, named as a native stop names a place
    (:class:`cbuild.build.places.Frame`): ``spin (spin.c:5) at pc 0x10234``, or ``spin (pc 0x10234)``
    where the build has no line table for it (:func:`guest_frame`)."""
    frame = guest_frame(elf, pc)
    return f"{frame} at pc {pc:#x}" if frame.file else f"{frame.function} (pc {pc:#x})"


def guest_frame(elf: Path, pc: int) -> Frame:
    """The function and source line of the guest code at ``pc`` (a block's start); no file and line
    0 where the build has no line table for it.

    The line is that of the first instruction from ``pc`` on, in its function, that has one (code
    the compiler made has line 0). The ELF's DWARF is read only when asked: for an error or a stop.
    """
    image = read_image(elf)
    name = demangle(function_at(image, pc))
    end = next((start + size for start, size, _ in image.functions if start <= pc < start + size), pc + 4)
    frame = None
    try:
        elf_symbols = symbols(elf, elf.stat().st_mtime_ns)
        for address in range(pc, end, 4):  # the RISC-V builds have no compressed instructions
            found = elf_symbols.place(address)
            if found is None:
                break
            if frame is None or found[1]:
                frame = Frame(name, *found)
            if found[1]:
                break
    except Exception:  # a line table that cannot be read: the error this is for still names the function
        frame = None
    return frame or Frame(name, "", 0)


BlockKey = tuple[int, tuple[int, ...]]
#: A block-data file starts with this and the sha256 of the rest.
_DATA_MAGIC = b"instrbudget block data 1\n"


class BlockDataFile:
    """A model's block data for one ELF, kept in a file beside it (``<elf>.blocks-<id>``) so that
    later runs of the same build do not compute it again.

    Keyed by the block's address and instruction words, so a file left by an earlier ELF at the
    same path can only miss, never give another block's data. A file that cannot be read or whose
    checksum does not match counts as empty (and is rewritten); one that cannot be written (a
    read-only build directory) is left as it is; writes are atomic, and two runs writing at once
    each leave a complete file.
    """

    def __init__(self, elf: Path, producer_id: str) -> None:
        self.path = elf.with_name(f"{elf.name}.blocks-{producer_id}")
        self.data: dict[BlockKey, list[int]] = {}
        self.added = 0
        #: The file's (size, mtime, inode) when its data was read; None if nothing was read.
        self.signature: tuple[int, int, int] | None = None
        try:
            signature = file_signature(self.path)
            known = _KEPT.get(self.path)
            if known is not None and known[0] == signature:  # read by an earlier run of this process
                self.data, self.signature = known[1], signature
                return
            raw = self.path.read_bytes()
        except OSError:
            return
        head, check, payload = (
            raw[: len(_DATA_MAGIC)],
            raw[len(_DATA_MAGIC) : len(_DATA_MAGIC) + 32],
            raw[len(_DATA_MAGIC) + 32 :],
        )
        if head != _DATA_MAGIC or hashlib.sha256(payload).digest() != check:
            return  # damaged or from another version: computed again and rewritten
        loaded = pickle.loads(payload)
        if isinstance(loaded, dict):
            self.data, self.signature = loaded, signature
            _KEPT[self.path] = (signature, loaded)

    def known(self) -> KnownBlocks | None:
        """The data read from the file, packed for the executor (:class:`KnownBlocks`); made once
        per content of the file in this process. None if nothing was read."""
        if self.signature is None or not self.data:
            return None
        packed = _PACKED.get(self.path)
        if packed is None or packed[0] != self.signature:
            packed = _PACKED[self.path] = (self.signature, KnownBlocks(self.data))
        return packed[1]

    def save(self) -> None:
        """Write the file if blocks were added since it was read."""
        if not self.added:
            return
        from cbuild.build.cache import atomic_write

        try:
            payload = pickle.dumps(self.data, protocol=pickle.HIGHEST_PROTOCOL)
            atomic_write(self.path, _DATA_MAGIC + hashlib.sha256(payload).digest() + payload)
            _KEPT[self.path] = (file_signature(self.path), self.data)
        except OSError:
            return
        self.added = 0


#: Block-data files this process has read or written, with their (size, mtime, inode) then: an
#: executor server reads each once, not once per run.
_KEPT: dict[Path, tuple[tuple[int, int, int], dict[BlockKey, list[int]]]] = {}


class KnownBlocks:
    """A block-data file's entries as the executor takes them before a run
    (``rvx_known_block_data``): a new block found there gets its data without a call of the block
    callback, a Python function (about 40 us each, most of a small program's run in unicorn with
    the pipeline model)."""

    def __init__(self, data: Mapping[BlockKey, Sequence[int]]) -> None:
        entries = sorted(data.items())
        pcs, word_at, words, data_at, values = array("Q"), array("I", [0]), array("I"), array("I", [0]), array("i")
        for (pc, block_words), block_data in entries:
            pcs.append(pc)
            words.extend(block_words)
            word_at.append(len(words))
            values.extend(map(_int32, block_data))  # a file written unwrapped
            data_at.append(len(values))
        self.count = len(entries)
        # Never empty: the executor keeps pointers into them.
        self.arrays = [a if len(a) else type(a)(a.typecode, [0]) for a in (pcs, word_at, words, data_at, values)]

    def give(self, lib: Any, handle: Any, model: int) -> None:
        """Hand the entries to executor ``handle`` for ``model``; they must outlive it (kept here)."""
        pointers = [ctypes.c_void_p(a.buffer_info()[0]) for a in self.arrays]
        lib.rvx_known_block_data(handle, model, self.count, *pointers)


#: Packed block data by file, with the file's signature it was packed from.
_PACKED: dict[Path, tuple[tuple[int, int, int], KnownBlocks]] = {}


def file_signature(path: Path) -> tuple[int, int, int]:
    """A file's size, modification time and inode: while they stay, its content is the one read."""
    st = path.stat()
    return st.st_size, st.st_mtime_ns, st.st_ino


_T = TypeVar("_T")


def _int32(value: int) -> int:
    """Block data as the executor holds it: 32-bit two's complement (what a ctypes int32 array
    makes of any int)."""
    return ((value + 2**31) & 0xFFFF_FFFF) - 2**31


def read_kept(kept: dict[Path, tuple[tuple[int, int, int], _T]], path: Path, read: Callable[[Path], _T]) -> _T:
    """``read(path)``, kept in ``kept`` while the file keeps the signature it had before the read (a
    file replaced between the two is kept under the old signature, which no later stat matches, so
    it is read again then); OSError from the file passes on."""
    signature = file_signature(path)
    known = kept.get(path)
    if known is not None and known[0] == signature:
        return known[1]
    value = read(path)
    kept[path] = (signature, value)
    return value


_BLOCK_CB = ctypes.CFUNCTYPE(
    None, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint32)
)


@functools.cache
def _cdll(path: str) -> ctypes.CDLL:
    """The executor's shared library, loaded after this environment's ``libunicorn.so.2``: the
    executor's search path names the unicorn of the environment that built it, which a cached
    build outlives (a virtual environment made again elsewhere, or removed)."""
    ctypes.CDLL(str(unicorn_paths()[1]), mode=ctypes.RTLD_GLOBAL)
    return ctypes.CDLL(path)


#: Libraries whose functions' C signatures are declared (:func:`_library`).
_DECLARED: weakref.WeakSet[Any] = weakref.WeakSet()


def _library(library: Path | Any) -> Any:
    """The executor's functions, from its shared library (a path) or a loaded translation, with their
    C signatures declared: once per library in a process, not once per run."""
    lib = _cdll(str(library)) if isinstance(library, (str, Path)) else library
    if lib in _DECLARED:
        return lib
    u64, u32, ptr = ctypes.c_uint64, ctypes.c_uint32, ctypes.c_void_p
    lib.rvx_new.restype = ptr
    lib.rvx_new.argtypes = [ctypes.c_int, u64, u64, u64, _BLOCK_CB, u32]
    for name, args in {
        "rvx_map": [ptr, u64, u64],
        "rvx_map_zero": [ptr, u64, u64],
        "rvx_write": [ptr, u64, ctypes.c_char_p, ctypes.c_size_t],
        "rvx_read": [ptr, u64, ptr, ctypes.c_size_t],
        "rvx_run": [ptr, u64, u64, u64],
        "rvx_exit_code": [ptr],
    }.items():
        getattr(lib, name).argtypes = args
        getattr(lib, name).restype = ctypes.c_int
    lib.rvx_get_reg.argtypes, lib.rvx_get_reg.restype = [ptr, ctypes.c_int], u64
    lib.rvx_set_reg.argtypes, lib.rvx_set_reg.restype = [ptr, ctypes.c_int, u64], None
    lib.rvx_set_stdin.argtypes, lib.rvx_set_stdin.restype = [ptr, ctypes.c_char_p, ctypes.c_size_t], None
    lib.rvx_output.argtypes = [ptr, ctypes.c_int, ctypes.POINTER(ctypes.POINTER(ctypes.c_uint8))]
    lib.rvx_output.restype = ctypes.c_size_t
    lib.rvx_error.argtypes, lib.rvx_error.restype = [ptr], ctypes.c_char_p
    lib.rvx_executed.argtypes, lib.rvx_executed.restype = [ptr], u64
    lib.rvx_block_count.argtypes, lib.rvx_block_count.restype = [ptr], u32
    lib.rvx_blocks.argtypes, lib.rvx_blocks.restype = [ptr, ptr, ptr, ptr], None
    lib.rvx_set_block_data.argtypes = [ptr, u32, u32, ctypes.POINTER(ctypes.c_int32), u32]
    lib.rvx_set_block_data.restype = None
    lib.rvx_known_block_data.argtypes = [ptr, u32, u32, ptr, ptr, ptr, ptr, ptr]
    lib.rvx_known_block_data.restype = None
    lib.rvx_set_markers.argtypes = [ptr, u32, ctypes.POINTER(u64), ctypes.POINTER(u32), ctypes.POINTER(u32)]
    lib.rvx_set_markers.restype = None
    lib.rvx_region_count.argtypes, lib.rvx_region_count.restype = [ptr], u32
    lib.rvx_regions.argtypes, lib.rvx_regions.restype = [ptr, ptr, ptr, ptr, ptr], None
    lib.rvx_set_cutoff.argtypes, lib.rvx_set_cutoff.restype = [ptr, u32, u64], None
    lib.rvx_stopped.argtypes, lib.rvx_stopped.restype = [ptr, ptr, ptr], u32
    if isinstance(library, (str, Path)):  # a machine kept for later runs: unicorn's only
        for name in ("rvx_seal", "rvx_restart"):
            getattr(lib, name).argtypes, getattr(lib, name).restype = [ptr], ctypes.c_int
    for name in ("rvx_reset", "rvx_clear_output", "rvx_free"):
        getattr(lib, name).argtypes, getattr(lib, name).restype = [ptr], None
    for name in ("rvx_finish", "rvx_now"):
        getattr(lib, name).argtypes, getattr(lib, name).restype = [ptr, ptr], None
    _DECLARED.add(lib)
    return lib


class Executor:
    """One guest in this process: an ELF loaded into the executor library."""

    def __init__(
        self, library: Path | Any, image: Image, runtimes: Sequence[ExecRuntime], *, elf: Path | None = None
    ) -> None:
        """``library``: the executor's shared library, or a loaded translation
        (:class:`cbuild.riscv.translated.NativeLibrary`). ``elf``: the file ``image`` was read from,
        beside which block data is kept (see :class:`BlockDataFile`); None keeps it in this process only."""
        self.image = image
        self.runtimes = list(runtimes)
        self.unavailable: dict[int, str] = {}
        self._data_files = {
            i: BlockDataFile(elf, r.block_data_id)
            for i, r in enumerate(self.runtimes)
            if elf is not None and r.block_data is not None and r.block_data_id
        }
        self.nresults = sum(r.results for r in runtimes)
        lib = self.lib = _library(library)
        #: What executes the code: "unicorn", or "translated" for a loaded translation.
        self.engine = "unicorn" if isinstance(library, (str, Path)) else "translated"
        #: Block data handed to the machine before the run, kept alive as long as it.
        self._known = {model: known for model, file in self._data_files.items() if (known := file.known()) is not None}
        self._callback = _BLOCK_CB(self._block_data)  # kept alive as long as the executor
        data_models = sum(1 << i for i, r in enumerate(runtimes) if r.block_data is not None)
        self._failure: BaseException | None = None
        self._loaded: tuple[tuple[tuple[int, bytes], ...], tuple[tuple[int, bytes], ...]] | None = None
        self._checked_blocks = 0  # blocks restart found in the program's code
        self.handle = lib.rvx_new(image.xlen, image.end, MMAP_BASE, 0x7000_0000, self._callback, data_models)
        if not self.handle:
            raise ExecutorError("unicorn could not start a RISC-V machine")
        try:
            self._load(image)
        except BaseException:
            self.close()
            raise

    def _load(self, image: Image) -> None:
        """Block data known before, the image, the stack, the return page, the heap and markers."""
        lib = self.lib
        for model, known in self._known.items():
            known.give(lib, self.handle, model)
        for seg in image.segments:
            self._check(lib.rvx_map(self.handle, seg.vaddr, seg.vaddr + seg.memsz), f"mapping {seg.vaddr:#x}")
            self.write(seg.vaddr, seg.data)
        for start, end in _ZEROED:
            self._check(lib.rvx_map_zero(self.handle, start, end), f"mapping {start:#x}")
        self._marker_names = sorted({name for _, _, name in image.markers})
        if image.markers:
            ids = {name: i for i, name in enumerate(self._marker_names)}
            n = len(image.markers)
            lib.rvx_set_markers(
                self.handle,
                n,
                (ctypes.c_uint64 * n)(*(a for a, _, _ in image.markers)),
                (ctypes.c_uint32 * n)(*(k for _, k, _ in image.markers)),
                (ctypes.c_uint32 * n)(*(ids[name] for _, _, name in image.markers)),
            )

    def _check(self, rc: int, what: str) -> None:
        if rc != 0:
            raise ExecutorError(f"the RISC-V executor failed {what}")

    def _block_data(self, model: int, block: int, pc: int, n: int, words: Any) -> None:
        try:
            data = self._compute_block_data(model, pc, tuple(words[i] for i in range(n)))
            array = (ctypes.c_int32 * max(len(data), 1))(*data)
            self.lib.rvx_set_block_data(self.handle, model, block, array, len(data))
        except BaseException as exc:  # an exception cannot cross the C frames: kept and raised after the run
            if isinstance(exc, CBuildError):  # the model cannot describe this block: no result, a reason
                self.unavailable.setdefault(model, f"{exc} (in {function_at(self.image, pc)})")
            elif self._failure is None:
                self._failure = exc
            empty = (ctypes.c_int32 * 1)()
            self.lib.rvx_set_block_data(self.handle, model, block, empty, 0)

    def _compute_block_data(self, model: int, pc: int, words: tuple[int, ...]) -> list[int]:
        file = self._data_files.get(model)
        if file is not None:
            found = file.data.get((pc, words))
            if found is not None:
                return found
        producer = self.runtimes[model].block_data
        assert producer is not None
        data = [_int32(int(v)) for v in producer(list(words), pc)]
        if file is not None:
            file.data[(pc, words)] = data
            file.added += 1
        return data

    def save_block_data(self) -> None:
        """Keep the block data computed so far beside the ELF, for later runs."""
        for file in self._data_files.values():
            file.save()

    def seal(self) -> None:
        """Keep the machine's state now (the program loaded, before its first run) as where later
        runs start (:meth:`restart`). unicorn only."""
        self._check(self.lib.rvx_seal(self.handle), "keeping the machine's state")

    def restart(self) -> bool:
        """Back to the state :meth:`seal` kept, for another run of the same program, with
        unicorn's translated blocks and the block table kept: False if the machine cannot go
        back, and is then unusable. It cannot where a run changed the program's code or ran code
        outside it, or ran an instruction that changes state a restart does not set back (the
        floating-point flags, control and status registers: the programs built here have none)."""
        if self._loaded is None:
            self._loaded = _loaded_memory(self.image)
        code, rest = self._loaded
        seen = self.lib.rvx_block_count(self.handle)
        if seen != self._checked_blocks:  # blocks are numbered as first seen: check the new ones
            new = self.blocks()[self._checked_blocks :]
            if not all(_restartable(code, pc, n) for pc, n, _ in new):
                return False
            self._checked_blocks = seen
        if self.lib.rvx_restart(self.handle) != 0:
            return False
        if any(self.read(start, len(contents)) != contents for start, contents in code):
            return False  # unicorn's translations of the code may be gone: a new machine is cheaper
        for start, contents in rest:
            if self.read(start, len(contents)) != contents:
                self.write(start, contents)
        return True

    def close(self) -> None:
        """Free the machine (unicorn's engine and the block tables); the executor is unusable after."""
        if self.handle:
            self.lib.rvx_free(self.handle)
            self.handle = None

    def map(self, start: int, end: int) -> None:
        """Make guest memory [start, end) usable (pages mapped already stay as they are)."""
        self._check(self.lib.rvx_map(self.handle, start, end), f"mapping {start:#x}")

    def write(self, address: int, data: bytes) -> None:
        """Copy ``data`` into guest memory."""
        if data:
            self._check(self.lib.rvx_write(self.handle, address, data, len(data)), f"writing {address:#x}")

    def read(self, address: int, size: int) -> bytes:
        """Guest memory."""
        buf = ctypes.create_string_buffer(size)
        self._check(self.lib.rvx_read(self.handle, address, buf, size), f"reading {address:#x}")
        return buf.raw

    def _word_bytes(self) -> int:
        return self.image.xlen // 8

    def setup_stack(self, argv: Sequence[bytes]) -> int:
        """The Linux initial stack (argc, argv, empty environment, auxiliary vector); returns sp."""
        width = self._word_bytes()
        sp = STACK_TOP - 64
        random_addr = sp - 16
        strings = b"".join(a + b"\0" for a in argv)
        base = random_addr - len(strings)
        pointers, pos = [], base
        for arg in argv:
            pointers.append(pos)
            pos += len(arg) + 1
        self.write(base, strings)
        self.write(random_addr, bytes(range(16)))  # fixed AT_RANDOM: runs stay deterministic
        image = self.image
        auxv = [
            (_AT["PHDR"], image.phdr),
            (_AT["PHENT"], image.phentsize),
            (_AT["PHNUM"], image.phnum),
            (_AT["PAGESZ"], PAGE),
            (_AT["BASE"], 0),
            (_AT["FLAGS"], 0),
            (_AT["ENTRY"], image.entry),
            (_AT["UID"], 0),
            (_AT["EUID"], 0),
            (_AT["GID"], 0),
            (_AT["EGID"], 0),
            (_AT["HWCAP"], _HWCAP_IMA),
            (_AT["CLKTCK"], 100),
            (_AT["SECURE"], 0),
            (_AT["RANDOM"], random_addr),
            (_AT["EXECFN"], pointers[0] if pointers else 0),
            (0, 0),
        ]
        words = [len(argv), *pointers, 0, 0, *(w for pair in auxv for w in pair)]
        sp = (base - width * len(words)) & -16
        self.write(sp, b"".join(w.to_bytes(width, "little") for w in words))
        return sp

    def set_cutoffs(self, cutoffs: Mapping[int, int]) -> None:
        """Stop runs (STOPPED) at the first block that would start with a model's clock past its
        cut-off: runtime index -> clock, counted from the last reset; models not named have none."""
        for model in range(MAX_MODELS):
            clock = cutoffs.get(model)
            self.lib.rvx_set_cutoff(self.handle, model, 2**64 - 1 if clock is None else clock)

    def run(self, pc: int, *, stop: int = 0, limit: int = 2**63) -> int:
        """Execute from ``pc``: an outcome (EXITED, RETURNED, FAULT, LIMIT, READY, STOPPED)."""
        status = self.lib.rvx_run(self.handle, pc, stop, limit)
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise ExecutorError(f"a cost model's block data failed: {failure!r}") from failure
        return int(status)

    def output(self, which: int) -> bytes:
        """What the guest wrote to stdout (0) or stderr (1)."""
        data = ctypes.POINTER(ctypes.c_uint8)()
        n = self.lib.rvx_output(self.handle, which, ctypes.byref(data))
        return ctypes.string_at(data, n) if n else b""

    def blocks(self) -> list[tuple[int, int, int]]:
        """Every block seen: (start, instructions, executions since the last reset)."""
        n = self.lib.rvx_block_count(self.handle)
        pcs, sizes, counts = (ctypes.c_uint64 * n)(), (ctypes.c_uint32 * n)(), (ctypes.c_uint64 * n)()
        self.lib.rvx_blocks(self.handle, pcs, sizes, counts)
        return list(zip(pcs, sizes, counts, strict=True))

    def results(self) -> list[int]:
        """The models' results for what ran since the last reset."""
        out = (ctypes.c_uint64 * max(self.nresults, 1))()
        self.lib.rvx_finish(self.handle, out)
        return list(out)[: self.nresults]

    def now(self) -> list[int]:
        """Each model's clock (``model_now``) since the last reset, in runtime order."""
        out = (ctypes.c_uint64 * MAX_MODELS)()
        self.lib.rvx_now(self.handle, out)
        return list(out)[: len(self.runtimes)]

    def reset(self) -> None:
        """Start a measurement: counts and the models' state from zero."""
        self.lib.rvx_reset(self.handle)

    def register(self, number: int) -> int:
        return int(self.lib.rvx_get_reg(self.handle, number))

    def set_register(self, number: int, value: int) -> None:
        self.lib.rvx_set_reg(self.handle, number, value)

    def error(self) -> str:
        return (self.lib.rvx_error(self.handle) or b"").decode(errors="replace")

    def stopped(self) -> tuple[int, int, int]:
        """After a run that ended STOPPED: the model's runtime index, its clock, the block's address."""
        clock, pc = ctypes.c_uint64(), ctypes.c_uint64()
        model = self.lib.rvx_stopped(self.handle, ctypes.byref(clock), ctypes.byref(pc))
        return int(model), clock.value, pc.value

    def execution(self, status: int) -> Execution:
        """What ran since the last reset, after a run that ended with ``status``."""
        blocks = sorted(b for b in self.blocks() if b[2])  # a kept machine knows blocks of earlier runs
        return Execution(
            blocks=blocks,
            results=self.results(),
            instructions=sum(n * c for _, n, c in blocks),
            exit_code=self.lib.rvx_exit_code(self.handle) if status == EXITED else None,
            stdout=self.output(0),
            stderr=self.output(1),
            error=""
            if status in (EXITED, RETURNED, READY, STOPPED)
            else ("more instructions than the limit" if status == LIMIT else self.error()),
            functions=function_instructions(self.image, blocks),
            regions=self.regions(),
            unavailable=dict(self.unavailable),
            engine=self.engine,
            stopped=self.stopped() if status == STOPPED else None,
            clocks=self.now(),
        )

    def regions(self) -> dict[str, tuple[int, list[int]]]:
        """Regions closed since the last reset: path -> (times run, each model's clock over it)."""
        n = self.lib.rvx_region_count(self.handle)
        if not n:
            return {}
        parents, names = (ctypes.c_uint32 * n)(), (ctypes.c_uint32 * n)()
        counts, sums = (ctypes.c_uint64 * n)(), (ctypes.c_uint64 * (n * MAX_MODELS))()
        self.lib.rvx_regions(self.handle, parents, names, counts, sums)
        paths: list[str] = []
        out: dict[str, tuple[int, list[int]]] = {}
        for i in range(n):  # a node comes after its parent
            name = self._marker_names[names[i]]
            paths.append(name if parents[i] == _NO_REGION else f"{paths[parents[i]]}/{name}")
            if counts[i]:
                out[paths[i]] = (counts[i], list(sums[i * MAX_MODELS : i * MAX_MODELS + len(self.runtimes)]))
        return out


def run_program(
    library: Path,
    elf: Path,
    runtimes: Sequence[ExecRuntime],
    argv: Sequence[str] = (),
    *,
    stdin: bytes = b"",
    limit: int = 2**63,
    translation: Path | None = None,
    check: bool = False,
    cutoffs: Mapping[int, int] | None = None,
    untimed: Callable[[], AbstractContextManager[object]] = contextlib.nullcontext,
) -> Execution:
    """Run a static RISC-V program to its exit in this process; ``argv`` starts with the program's
    name (default: the ELF's file name). ``cutoffs`` (runtime index -> clock) stop it where a
    model's clock passes one (:meth:`Executor.set_cutoffs`; :attr:`Execution.stopped` says where).

    ``translation``: the executor's translated form (:func:`build_executor_ir`), with which runs
    after a long one (:data:`cbuild.riscv.translated.TRANSLATE_AT`) execute the code earlier runs
    reached natively (:mod:`cbuild.riscv.translated`); a run the translation cannot finish runs
    again in ``library`` (unicorn). ``check``: run both engines, however short the runs, and raise
    :class:`ExecutorError` if they differ in anything a run reports. ``untimed`` is entered around
    compiling a translation (work that is not the run's, for a caller's time limit).
    """
    image = read_image(elf)
    args = [os.fsencode(a) for a in (argv or [elf.name])]

    def once(engine: Path | Any) -> tuple[int, Execution]:  # a built executor, or a translated one
        return _run_once(engine, image, elf, runtimes, args, stdin, limit, cutoffs)

    if translation is None:
        return once(library)[1]
    from cbuild.riscv import translated

    note, fast = "", None
    reached = translated.read_reached(elf)
    if reached.worth_translating() or (check and reached.blocks):
        try:
            status, fast = once(translated.load(elf, image, translation, reached, runtimes, untimed))
        except ExecutorError as exc:
            note = f"not translated: {exc}"
        else:
            if status == FALLBACK:
                note, fast = f"ran in unicorn: the translated run stopped at {fast.error}", None
            elif not check:
                return fast
    reference = once(library)[1]
    reached = translated.add_reached(elf, reference.blocks, reference.instructions)
    if check:
        if fast is None:  # ``reached`` has this run's blocks, whatever another process recorded meanwhile
            status, fast = once(translated.load(elf, image, translation, reached, runtimes, untimed))
            if status == FALLBACK:
                raise ExecutorError(f"the translated run of {elf.name} did not finish: {fast.error}")
        differences = compare_executions(reference, fast)
        if differences:
            raise ExecutorError(f"the translated run of {elf.name} differs from unicorn's: {'; '.join(differences)}")
        return fast
    reference.note = note
    return reference


def compare_executions(reference: Execution, other: Execution) -> list[str]:
    """What two runs of one program report differently (empty: the same run)."""
    out = []
    for name in (
        "results",
        "instructions",
        "exit_code",
        "stdout",
        "stderr",
        "error",
        "functions",
        "regions",
        "unavailable",
        "stopped",
        "clocks",
    ):
        mine, theirs = getattr(reference, name), getattr(other, name)
        if mine != theirs:
            out.append(f"{name} {theirs!r:.200} instead of {mine!r:.200}")
    if sorted(reference.blocks) != sorted(other.blocks):
        out.append("the executed blocks")
    return out


#: Environment variable: how many machines a process keeps for later runs (:class:`KeptMachines`).
KEEP_MACHINES = "INSTRBUDGET_KEEP_MACHINES"


class KeptMachines:
    """unicorn machines kept after runs that exited, for later runs of the same program in this
    process (at most :meth:`size`, the least recently used given up first). A kept machine has the
    blocks unicorn translated in earlier runs, which a new machine translates again: most of a
    short run's time. It is restarted (:meth:`Executor.restart`) when its run ends, so that it
    holds no memory of the run while kept and the next run starts from the state it was sealed in
    after loading."""

    def __init__(self) -> None:
        self._machines: dict[tuple[Any, ...], Executor] = {}
        self._lock = threading.Lock()

    @staticmethod
    def key(library: Path | Any, elf: Path, runtimes: Sequence[ExecRuntime]) -> tuple[Any, ...] | None:
        """What a kept machine must match, or None where none is kept: a translation (whose runs
        keep their own state), or block data this process alone can name."""
        if not isinstance(library, (str, Path)):
            return None
        if any(r.block_data is not None and not r.block_data_id for r in runtimes):
            return None
        shapes = tuple((r.results, r.memory, r.block_data_id) for r in runtimes)
        return str(library), file_signature(Path(library)), str(elf.resolve()), file_signature(elf), shapes

    @staticmethod
    def size() -> int:
        """How many machines a process keeps: :data:`KEEP_MACHINES` in its environment, or 4."""
        text = os.environ.get(KEEP_MACHINES, "")
        try:
            return max(int(text), 0) if text else 4
        except ValueError:
            raise ExecutorError(f"{KEEP_MACHINES} must be a number of machines, not {text!r}") from None

    def take(self, key: tuple[Any, ...]) -> Executor | None:
        """The machine kept for ``key`` (restarted already), or None."""
        with self._lock:
            return self._machines.pop(key, None)

    def give(self, key: tuple[Any, ...], executor: Executor, size: int) -> None:
        """Keep a restarted machine, and at most ``size`` in all."""
        with self._lock:
            replaced = self._machines.pop(key, None)  # another thread's run of the same program
            self._machines[key] = executor
            given_up = [self._machines.pop(next(iter(self._machines))) for _ in range(len(self._machines) - size)]
        for old in (replaced, *given_up):
            if old is not None:
                old.close()

    def close_all(self) -> None:
        with self._lock:
            machines, self._machines = list(self._machines.values()), {}
        for executor in machines:
            executor.close()


#: This process's kept machines (:class:`KeptMachines`).
KEPT = KeptMachines()


def _run_once(
    library: Path | Any,
    image: Image,
    elf: Path,
    runtimes: Sequence[ExecRuntime],
    argv: Sequence[bytes],
    stdin: bytes,
    limit: int,
    cutoffs: Mapping[int, int] | None,
) -> tuple[int, Execution]:
    size = KEPT.size()
    key = KEPT.key(library, elf, runtimes) if size else None
    executor: Executor | None = None
    keep = False
    try:
        if key is not None:
            executor = KEPT.take(key)
        if executor is None:
            executor = Executor(library, image, runtimes, elf=elf)
            if key is not None:
                executor.seal()
        if cutoffs:
            executor.set_cutoffs(cutoffs)
        executor.set_register(REG_SP, executor.setup_stack(argv))
        executor.lib.rvx_set_stdin(executor.handle, stdin, len(stdin))
        status = executor.run(image.entry, limit=limit)
        executor.save_block_data()
        run = executor.execution(status)
        # A run that stopped early may have left unicorn mid-block; a model without data has no result.
        keep = key is not None and status == EXITED and not executor.unavailable and executor.restart()
        return status, run
    finally:
        if executor is not None:
            if keep:
                assert key is not None
                KEPT.give(key, executor, size)
            else:
                executor.close()


def run_isolated(
    library: Path,
    elf: Path,
    runtimes: Sequence[ExecRuntime],
    argv: Sequence[str] = (),
    *,
    stdin: bytes = b"",
    limit: int = 2**63,
    timeout: float | None = None,
    translation: Path | None = None,
    check: bool = False,
    cutoffs: Mapping[int, int] | None = None,
    name: str | None = None,
) -> Execution:
    """:func:`run_program` in a child process (block data producers must be picklable); errors
    name the program ``name`` (the source it was built from), else the ELF.

    The child is an executor server kept for later runs (its start-up, about 0.1 s, is paid once
    per process): it keeps the machines of the programs it ran for their later runs
    (:class:`KeptMachines`), and a server that crashes, or that a timeout stops, ends and is
    replaced. Runs at the same time use servers of their own.
    """
    translated = str(translation) if translation is not None else None
    request = (
        str(library),
        str(elf),
        pack_runtimes(runtimes),
        list(argv),
        stdin,
        limit,
        translated,
        check,
        dict(cutoffs or {}),
    )
    label = name or elf.name
    server = _Server.take()
    try:
        result = server.request(request, timeout)
    except UntimedLimitPassed as passed:
        server.close()
        raise ExecutorError(passed.describe(label)) from None
    except TimeLimitPassed:
        where = server.guest_where(elf)
        server.close()
        raise ExecutorError(f"the RISC-V run of {label} took longer than {timeout} s{where}") from None
    except EOFError:
        returncode, errors = server.close()
        raise ExecutorError(f"the RISC-V executor failed on {label} (exit {returncode}):\n{errors}") from None
    except BaseException:  # interrupted mid-request: the server's state is unknown
        server.close()
        raise
    server.give_back()
    if isinstance(result, ExecutorError):
        raise result
    assert isinstance(result, Execution)
    return result


class _Server:
    """A child process (``python -m cbuild.riscv.executor``) that runs programs one request at a time."""

    _idle: ClassVar[list[_Server]] = []
    _lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self) -> None:
        self.errors = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close(); a file, not a pipe, so stderr cannot block the child
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cbuild.riscv.executor"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.errors,
        )

    @classmethod
    def take(cls) -> _Server:
        with cls._lock:
            while cls._idle:
                server = cls._idle.pop()
                if server.proc.poll() is None:
                    return server
                server.close()
        return cls()

    def give_back(self) -> None:
        with self._lock:
            self._idle.append(self)

    def request(self, message: Any, timeout: float | None) -> Any:
        """Send a run and wait for its result (:class:`TimeLimitPassed` after ``timeout`` seconds of
        the run, compiling its translation left out; :class:`UntimedLimitPassed` after
        UNTIMED_LIMIT seconds of compiling it)."""
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        try:
            send_message(self.proc.stdin, message)
        except (BrokenPipeError, OSError):
            raise EOFError from None
        return receive_reply(self.proc.stdout.fileno(), timeout)

    def guest_where(self, elf: Path) -> str:
        """Where the guest program is (the function and source line of the block it runs, whose address
        the executor writes to stderr on SIGUSR2), as text to add to an error ("" if it does not answer)."""
        self.errors.seek(0, os.SEEK_END)
        start = self.errors.tell()
        with contextlib.suppress(OSError):
            self.proc.send_signal(signal.SIGUSR2)
        for _ in range(20):
            time.sleep(0.05)
            self.errors.seek(start)
            found = re.search(r"instrbudget-guest-pc: 0x([0-9a-f]+)\n", self.errors.read().decode(errors="replace"))
            if found:
                pc = int(found.group(1), 16)
                return f"; the program was in {guest_place(elf, pc)}"
        return ""

    def close(self) -> tuple[int | None, str]:
        """End the child: its exit status and the end of what it wrote to stderr."""
        for stream in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()
        if self.proc.poll() is None:
            self.proc.kill()
        returncode = self.proc.wait()
        self.errors.seek(0)
        errors = self.errors.read().decode(errors="replace")[-2000:]
        self.errors.close()
        return returncode, errors

    @classmethod
    def close_all(cls) -> None:
        """End the idle servers (at exit; in a forked child, forget the parent's)."""
        with cls._lock:
            idle, cls._idle = cls._idle, []
        for server in idle:
            server.close()

    @classmethod
    def forget_all(cls) -> None:
        cls._idle = []
        cls._lock = threading.Lock()


def close_servers() -> None:
    """End this process's idle executor servers (the next run starts a new one)."""
    _Server.close_all()


atexit.register(_Server.close_all)
os.register_at_fork(after_in_child=_Server.forget_all)


def _main() -> None:  # pragma: no cover - runs in the child of run_isolated
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            library, elf, packed, argv, stdin, limit, translation, check, cutoffs = receive_message(inp)
        except EOFError:
            return
        try:
            result: Execution | ExecutorError = run_program(
                Path(library),
                Path(elf),
                unpack_runtimes(packed),
                argv,
                stdin=stdin,
                limit=limit,
                translation=None if translation is None else Path(translation),
                check=check,
                cutoffs=cutoffs,
                untimed=lambda: marked_untimed(out),
            )
        except ExecutorError as exc:
            result = exc
        send_message(out, result)


def pack_runtimes(runtimes: Sequence[ExecRuntime]) -> tuple[list[str], bytes]:
    """Runtimes for an executor process: with this process's import path, so that a model's
    block-data producer defined in a test suite's own modules (a conftest.py) loads there too."""
    return list(sys.path), pickle.dumps(list(runtimes))


def unpack_runtimes(packed: tuple[list[str], bytes]) -> list[ExecRuntime]:
    """The runtimes :func:`pack_runtimes` packed, in the executor's process."""
    path, data = packed
    sys.path.extend(entry for entry in path if entry not in sys.path)
    try:
        runtimes = pickle.loads(data)
    except Exception as exc:
        raise ExecutorError(f"a cost model's block data cannot be loaded in the executor's process: {exc!r}") from None
    assert isinstance(runtimes, list)
    return runtimes


def block_data_text(runtime: ExecRuntime) -> str | None:
    """A runtime's block-data producer as text for a build's sidecar (a pickle, base64), or None."""
    if runtime.block_data is None:
        return None
    return base64.b64encode(pickle.dumps(runtime.block_data)).decode()


def slot_runtimes(slots: Sequence[Sequence[Any]]) -> list[ExecRuntime]:
    """The runtimes of a built executor, from its slots ``[name, offset, results, memory, block data]``
    (their C code is compiled in already: running needs their shapes and block-data producers)."""
    runtimes = []
    for name, _, n, memory, *rest in slots:
        data = rest[0] if rest else None
        try:
            producer = pickle.loads(base64.b64decode(data)) if data is not None else None
        except Exception as exc:
            raise ExecutorError(f"the recorded block data of cost model {name!r} cannot be read: {exc}") from None
        producer_id = hashlib.sha256(data.encode()).hexdigest()[:16] if data is not None else ""
        runtimes.append(ExecRuntime("", results=n, memory=memory, block_data=producer, block_data_id=producer_id))
    return runtimes


def slot_results(slots: Sequence[Sequence[Any]], results: Sequence[int]) -> dict[str, tuple[int, ...]]:
    """Each model's slice of an executor's results, by model name."""
    return {name: tuple(results[offset : offset + n]) for name, offset, n, *_ in slots}


def slot_unavailable(slots: Sequence[Sequence[Any]], run: Execution, target: str) -> dict[str, str]:
    """The models of a run whose block data could not be computed, by name, with the reason."""
    return {slots[i][0]: f"the {target} build: {reason}" for i, reason in run.unavailable.items()}


if __name__ == "__main__":  # pragma: no cover
    # Through the module's import name, so that the results pickle as cbuild.riscv.executor classes.
    from cbuild.riscv.executor import _main as main

    main()
