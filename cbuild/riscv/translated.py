"""Translated execution: a RISC-V build's code compiled to native code, loaded into this process.

A build's first run executes in unicorn and records the blocks it ran, with their executions, and
the instructions it ran (``<elf>.reached``, beside the ELF). Once a recorded run is long enough to
repay the compilation (:data:`TRANSLATE_AT` instructions), a later run translates those blocks
(:mod:`cbuild.riscv.translate`), links the translation with the executor's C code built in its
translated form (``RVX_TRANSLATED``: guest memory in this process), optimises them together at
``-O2`` (the cost models' hooks inline into each block executed often, :data:`HOT` times, with the
block's facts as constants; other blocks call them), keeps the object code beside the ELF
(``<elf>.rvt-<key>.o``, keyed by the ELF, the executor's code, the blocks, the hot ones and the
translator's code), and links it into this process with ORC's JITLink (llvmlite's LLJIT).
A run that reaches code outside the translation (or cannot go on in it for another reason) is run
again in unicorn, whose blocks join the recorded ones for the next translation: results always
come from a complete run of one engine or the other.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import hashlib
import os
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cbuild.errors import CBuildError
from cbuild.riscv.executor import BlockDataFile, ExecRuntime, ExecutorError, Image, read_kept
from cbuild.riscv.translate import VERSION, blocks_at, translate

#: Set (not "0"): every run of a RISC-V build also runs in the other engine (unicorn and the
#: translation, :mod:`cbuild.riscv.translated`), and any difference between them is an error.
CHECK_TRANSLATION = "INSTRBUDGET_CHECK_TRANSLATION"
#: "unicorn": RISC-V builds run in unicorn only, never translated (for comparisons and diagnosis).
RISCV_ENGINE = "INSTRBUDGET_RISCV_ENGINE"
#: Instructions a recorded run of a build must have executed for later runs to be translated
#: (default :data:`DEFAULT_TRANSLATE_AT`): a shorter run takes less time in unicorn than its
#: translation takes to compile.
TRANSLATE_AT = "INSTRBUDGET_TRANSLATE_AT"
DEFAULT_TRANSLATE_AT = 20_000_000
#: A block executed this many times in one recorded run has the models' hooks inlined.
HOT = 1000
#: A reached-blocks file starts with this line, then "instructions N", then one line per block:
#: its start and the most executions one run made of it, in hexadecimal.
_REACHED_MAGIC = "instrbudget reached blocks 2\n"


def translation_of(machine: Mapping[str, Any]) -> Path | None:
    """The translated executor of a RISC-V build (``Artifact.machines()``), unless the environment
    asks for unicorn only (:data:`RISCV_ENGINE`) or the build predates translation."""
    if "translation" not in machine or os.environ.get(RISCV_ENGINE) == "unicorn":
        return None
    return Path(machine["translation"])


def checking_translation() -> bool:
    """Whether runs of RISC-V builds run in both engines and compare (:data:`CHECK_TRANSLATION`)."""
    return os.environ.get(CHECK_TRANSLATION, "") not in ("", "0")


def translate_at() -> int:
    """:data:`TRANSLATE_AT` from the environment, or its default."""
    text = os.environ.get(TRANSLATE_AT, "")
    try:
        return max(int(text), 0) if text else DEFAULT_TRANSLATE_AT
    except ValueError:
        raise ExecutorError(f"{TRANSLATE_AT} must be a number of instructions, not {text!r}") from None


@dataclass(frozen=True)
class Reached:
    """What the recorded runs of a build executed: block starts with the most executions one run
    made of each, and the most instructions one run executed."""

    blocks: dict[int, int] = field(default_factory=dict)
    instructions: int = 0

    def worth_translating(self) -> bool:
        """Whether a recorded run was long enough (:func:`translate_at`) for a translation to pay."""
        return bool(self.blocks) and self.instructions >= translate_at()

    def hot(self) -> set[int]:
        """The blocks one run executed at least :data:`HOT` times."""
        return {pc for pc, count in self.blocks.items() if count >= HOT}


def reached_path(elf: Path) -> Path:
    return elf.with_name(f"{elf.name}.reached")


#: Records read before, by path and (size, mtime, inode): a server's later runs of a build do not
#: parse its record again while it stays the same file.
_RECORDS: dict[Path, tuple[tuple[int, int, int], Reached]] = {}


def read_reached(elf: Path) -> Reached:
    """What earlier runs of ``elf`` executed (nothing if none are recorded or the file is damaged)."""
    try:
        return read_kept(_RECORDS, reached_path(elf), _parse_reached)
    except OSError:
        return Reached()


def _parse_reached(path: Path) -> Reached:
    try:
        lines = path.read_text().splitlines(keepends=True)
    except UnicodeDecodeError:
        return Reached()
    if len(lines) < 2 or lines[0] != _REACHED_MAGIC or not lines[-1].endswith("\n"):
        return Reached()
    try:
        key, value = lines[1].split()
        if key != "instructions":
            return Reached()
        blocks = {}
        for line in lines[2:]:
            pc, count = line.split()
            blocks[int(pc, 16)] = int(count, 16)
        return Reached(blocks, int(value))
    except ValueError:
        return Reached()


def add_reached(elf: Path, blocks: Iterable[tuple[int, int, int]], instructions: int) -> Reached:
    """Record a unicorn run's executed ``blocks`` ((start, instructions, executions), as
    :class:`~cbuild.riscv.executor.Execution` has them) and its ``instructions`` (atomically; a
    read-only build directory keeps what it has); returns the record with this run in it, whatever
    another process recorded meanwhile. One process at a time reads, merges and writes (pytest-xdist
    workers record at once)."""
    from cbuild.build.cache import atomic_write

    path = reached_path(elf)
    blocks = list(blocks)
    known = read_reached(elf)
    if all(known.blocks.get(pc, -1) >= count for pc, _, count in blocks) and known.instructions >= instructions:
        return known  # nothing to add (a record only grows): no lock, no write
    with _making(path.with_name(path.name + ".lock")):
        known = read_reached(elf)
        merged = dict(known.blocks)
        for pc, _, count in blocks:
            merged[pc] = max(merged.get(pc, 0), count)
        reached = Reached(merged, max(known.instructions, instructions))
        if reached != known:
            body = "".join(f"{pc:x} {count:x}\n" for pc, count in sorted(merged.items()))
            with contextlib.suppress(OSError):
                atomic_write(path, f"{_REACHED_MAGIC}instructions {reached.instructions}\n{body}".encode())
    return reached


class NativeLibrary:
    """The translated executor's functions, found by name like a ``ctypes.CDLL``'s."""

    def __init__(self, tracker: Any, names: Iterable[str]) -> None:
        self._tracker = tracker  # the loaded code lives as long as it does
        self._addresses = {name: tracker[name] for name in names}
        self._functions: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        found = self._functions.get(name)
        if found is None:
            address = self._addresses.get(name)
            if not address:
                raise AttributeError(f"the translated executor has no function {name}")
            found = self._functions[name] = ctypes.CFUNCTYPE(None)(address)
        return found


#: The functions a loaded translation exports: the executor's interface.
_EXPORTED = re.compile(r"^define (?!internal |private )[^@\n]*@((?:rvx|rvt)_\w+)\(", re.MULTILINE)

#: The translator's sources (translate.py and the decoder it reads branch and jump targets with):
#: part of a translation's key, so that a change to them never reuses object code made before (its
#: VERSION alone depends on being bumped).
_TRANSLATOR = tuple(Path(__file__).with_name(name) for name in ("translate.py", "decode.py"))

#: Translations loaded in this process, by key, least recently used first: an executor server
#: loads each once, and keeps the last few (each holds its code and the executor's).
_LOADED: dict[str, NativeLibrary] = {}
_KEEP_LOADED = 16
_LOCK = threading.Lock()


#: Digests of files read before, by path and (size, mtime, inode): a server's later runs of a
#: build do not hash its ELF again.
_DIGESTS: dict[Path, tuple[tuple[int, int, int], str]] = {}


def _digest_file(path: Path) -> str:
    return read_kept(_DIGESTS, path, lambda file: hashlib.sha256(file.read_bytes()).hexdigest())


def _kept_object(path: Path, make: Callable[[], bytes], untimed: Callable[[], AbstractContextManager[object]]) -> bytes:
    """The object code kept at ``path``, or ``make()``'s, kept there for later runs. One process makes
    it while others that need it wait (a lock file beside it), all within ``untimed``."""
    try:
        return path.read_bytes()
    except OSError:
        pass
    with untimed(), _making(path.with_suffix(".lock")):
        try:
            return path.read_bytes()  # made by the process this one waited for
        except OSError:
            pass
        obj = make()
        from cbuild.build.cache import atomic_write

        with contextlib.suppress(OSError):  # a read-only build directory: made again by the next process
            atomic_write(path, obj)
        return obj


@contextlib.contextmanager
def _making(lock: Path) -> Iterator[None]:
    """Hold ``lock`` (no lock where it cannot be made: a read-only build directory)."""
    try:
        fh = open(lock, "a+b")  # noqa: SIM115 - closed below
    except OSError:
        yield
        return
    with fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def load(
    elf: Path,
    image: Image,
    executor_ir: Path,
    reached: Reached,
    runtimes: Sequence[ExecRuntime],
    untimed: Callable[[], AbstractContextManager[object]] = contextlib.nullcontext,
) -> NativeLibrary:
    """The executor's C code ``executor_ir`` (with the models ``runtimes``) linked with the
    translation of the ``reached`` blocks, loaded into this process; the object code is kept beside
    the ELF (compiled once, by one process at a time). ``untimed`` is entered around compiling it,
    or waiting for another process to: work a run's time limit leaves out."""
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    triple = llvm.get_process_triple()
    hot = reached.hot()
    producers = [r.block_data_id or "-" for r in runtimes]
    parts = [VERSION, *map(_digest_file, _TRANSLATOR), triple, _digest_file(elf), _digest_file(executor_ir), *producers]
    parts += map(str, sorted(reached.blocks))
    key = hashlib.sha256("\0".join([*parts, "hot", *map(str, sorted(hot))]).encode()).hexdigest()[:32]
    with _LOCK:
        found = _LOADED.pop(key, None)
        if found is not None:
            _LOADED[key] = found
            return found
        while len(_LOADED) >= _KEEP_LOADED:  # no machine of this process still runs in it: runs end with theirs
            del _LOADED[next(iter(_LOADED))]
        tm = llvm.Target.from_triple(triple).create_target_machine(opt=2, reloc="pic", codemodel="small")
        executor = executor_ir.read_text()
        code = _kept_object(
            elf.with_name(f"{elf.name}.rvt-{key}.o"),
            lambda: _compile(tm, translate(image, reached.blocks, _hot_data(elf, image, hot, runtimes)), executor),
            untimed,
        )
        library = _LOADED[key] = _link(tm, code, _EXPORTED.findall(executor), key)
        return library


#: This process's JIT: JITLink places each translation's code and data in one allocation, so the
#: small code model's pc-relative addressing of globals always reaches.
_JIT: Any = None
_LINKED = 0


def _link(tm: Any, code: bytes, names: Sequence[str], key: str) -> NativeLibrary:
    """The object ``code`` linked into this process (against its C library), with ``names`` exported."""
    import llvmlite.binding as llvm

    global _JIT, _LINKED
    if _JIT is None:
        _JIT = llvm.create_lljit_compiler(tm, use_jit_link=True)
    _LINKED += 1  # a library's name cannot be used again, even after it is unloaded
    builder = llvm.JITLibraryBuilder().add_object_img(code).add_current_process()
    for name in names:
        builder.export_symbol(name)
    try:
        tracker = builder.link(_JIT, f"rvt-{key}-{_LINKED}")
    except RuntimeError as exc:
        raise ExecutorError(f"the translated RISC-V executor could not be linked: {exc}") from None
    return NativeLibrary(tracker, names)


def _hot_data(
    elf: Path, image: Image, hot: set[int], runtimes: Sequence[ExecRuntime]
) -> dict[int, list[list[int] | None]]:
    """The hot blocks, each with every model's block data: what the model's block-data file beside
    the ELF keeps (:class:`~cbuild.riscv.executor.BlockDataFile`), else computed; empty for a model
    without block data. None where the model has no name for its producer (its data is not part of
    the translation's key) or cannot describe the block: the host then gives, or fails to give, the
    data at the block's first entry."""
    kept = [BlockDataFile(elf, r.block_data_id).data if r.block_data and r.block_data_id else None for r in runtimes]
    out: dict[int, list[list[int] | None]] = {}
    for block in blocks_at(image, hot):
        per_model: list[list[int] | None] = []
        for runtime, file in zip(runtimes, kept, strict=True):
            data = None
            if runtime.block_data is not None and file is not None and block.words:
                data = file.get((block.pc, block.words))
                if data is None:
                    try:
                        data = [int(v) for v in runtime.block_data(list(block.words), block.pc)]
                    except CBuildError:
                        data = None
            per_model.append([] if runtime.block_data is None else data or None)
        out[block.pc] = per_model
    return out


def _compile(tm: Any, translation: str, executor: str) -> bytes:
    """Object code for the ``translation`` linked with the ``executor``'s IR, optimised at -O2
    together (the executor's hooks inline into each translated block)."""
    import llvmlite.binding as llvm

    try:
        module = llvm.parse_assembly(translation)
        module.link_in(llvm.parse_assembly(executor))
        module.verify()
    except RuntimeError as exc:
        raise ExecutorError(f"the translated RISC-V executor's IR is not valid: {exc}") from None
    # Hidden: the code reaches its own globals pc-relative, not through a global offset table
    # (the linked library still finds them by name).
    for value in [*module.global_variables, *module.functions]:
        if not value.is_declaration and value.linkage == llvm.Linkage.external:
            value.visibility = "hidden"
    module.triple = tm.triple
    module.data_layout = str(tm.target_data)
    pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=2))
    pb.getModulePassManager().run(module, pb)
    return bytes(tm.emit_object(module))
