"""Translated execution: a RISC-V build's code compiled to native code, loaded into this process.

A build's first run executes in unicorn and records the blocks it ran (``<elf>.reached``, beside
the ELF). A later run translates those blocks (:mod:`cbuild.riscv.translate`), links the
translation with the executor's C code built in its translated form (``RVX_TRANSLATED``: guest
memory in this process, the cost models' hooks inlined into the translated code), optimises it at
``-O2`` and keeps the object code beside the ELF (``<elf>.rvt-<key>.o``, keyed by the ELF, the
executor's code, the blocks and the translator), then runs it through llvmlite's MCJIT. A run that
reaches code outside the translation (or cannot go on in it for another reason) is run again in
unicorn, whose blocks join the recorded ones for the next translation: results always come from a
complete run of one engine or the other.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from cbuild.riscv.executor import ExecutorError, Image
from cbuild.riscv.translate import VERSION, translate

#: Set (not "0"): every run of a RISC-V build also runs in the other engine (unicorn and the
#: translation, :mod:`cbuild.riscv.translated`), and any difference between them is an error.
CHECK_TRANSLATION = "INSTRBUDGET_CHECK_TRANSLATION"
#: "unicorn": RISC-V builds run in unicorn only, never translated (for comparisons and diagnosis).
RISCV_ENGINE = "INSTRBUDGET_RISCV_ENGINE"
#: A reached-blocks file starts with this line; then one hexadecimal block start per line.
_REACHED_MAGIC = "instrbudget reached blocks 1\n"


def translation_of(machine: Mapping[str, Any]) -> Path | None:
    """The translated executor of a RISC-V build (``Artifact.machines()``), unless the environment
    asks for unicorn only (:data:`RISCV_ENGINE`) or the build predates translation."""
    if "translation" not in machine or os.environ.get(RISCV_ENGINE) == "unicorn":
        return None
    return Path(machine["translation"])


def checking_translation() -> bool:
    """Whether runs of RISC-V builds run in both engines and compare (:data:`CHECK_TRANSLATION`)."""
    return os.environ.get(CHECK_TRANSLATION, "") not in ("", "0")


def reached_path(elf: Path) -> Path:
    return elf.with_name(f"{elf.name}.reached")


def read_reached(elf: Path) -> set[int]:
    """Block starts earlier runs of ``elf`` executed (empty if none are recorded or the file is damaged)."""
    try:
        text = reached_path(elf).read_text()
    except (OSError, UnicodeDecodeError):
        return set()
    if not text.startswith(_REACHED_MAGIC) or not text.endswith("\n"):
        return set()
    try:
        return {int(line, 16) for line in text[len(_REACHED_MAGIC) :].split()}
    except ValueError:
        return set()


def add_reached(elf: Path, starts: set[int]) -> None:
    """Record more executed block starts (atomically; a read-only build directory keeps what it has)."""
    from cbuild.build.cache import atomic_write

    known = read_reached(elf)
    if starts <= known:
        return
    body = "".join(f"{pc:x}\n" for pc in sorted(known | starts))
    try:
        atomic_write(reached_path(elf), (_REACHED_MAGIC + body).encode())
    except OSError:
        return


class NativeLibrary:
    """The translated executor's functions, found by name like a ``ctypes.CDLL``'s."""

    def __init__(self, engine: Any) -> None:
        self._engine = engine
        self._functions: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        found = self._functions.get(name)
        if found is None:
            address = self._engine.get_function_address(name)
            if not address:
                raise AttributeError(f"the translated executor has no function {name}")
            found = self._functions[name] = ctypes.CFUNCTYPE(None)(address)
        return found


#: Translations loaded in this process, by key, least recently used first: an executor server
#: loads each once, and keeps the last few (each holds its code and the executor's).
_LOADED: dict[str, NativeLibrary] = {}
_KEEP_LOADED = 16
_LOCK = threading.Lock()


#: Digests of files read before, by path and (size, mtime, inode): a server's later runs of a
#: build do not hash its ELF again.
_DIGESTS: dict[Path, tuple[tuple[int, int, int], str]] = {}


def _digest_file(path: Path) -> str:
    st = path.stat()
    signature = (st.st_size, st.st_mtime_ns, st.st_ino)
    known = _DIGESTS.get(path)
    if known is not None and known[0] == signature:
        return known[1]
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    _DIGESTS[path] = (signature, digest)
    return digest


def _kept_object(path: Path, make: Callable[[], bytes]) -> bytes:
    """The object code kept at ``path``, or ``make()``'s, kept there for later runs."""
    try:
        return path.read_bytes()
    except OSError:
        pass
    obj = make()
    from cbuild.build.cache import atomic_write

    with contextlib.suppress(OSError):  # a read-only build directory: made again by the next process
        atomic_write(path, obj)
    return obj


def load(elf: Path, image: Image, executor_ir: Path, starts: set[int]) -> NativeLibrary:
    """The executor's C code ``executor_ir`` and the translation of the blocks at ``starts``, loaded
    into this process; their object code is kept beside each (compiled once)."""
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    triple = llvm.get_process_triple()
    code_key = hashlib.sha256("\0".join([VERSION, triple, _digest_file(elf), *map(str, sorted(starts))]).encode())
    runtime_key = hashlib.sha256("\0".join([triple, _digest_file(executor_ir)]).encode())
    key = code_key.hexdigest()[:24] + runtime_key.hexdigest()[:24]
    with _LOCK:
        found = _LOADED.pop(key, None)
        if found is not None:
            _LOADED[key] = found
            return found
        while len(_LOADED) >= _KEEP_LOADED:  # no machine of this process still runs in it: runs end with theirs
            del _LOADED[next(iter(_LOADED))]
        tm = llvm.Target.from_triple(triple).create_target_machine(opt=2, reloc="static", codemodel="large")
        runtime = _kept_object(
            executor_ir.with_name(f"{executor_ir.name}.{runtime_key.hexdigest()[:16]}.o"),
            lambda: _compile(tm, executor_ir.read_text(), optimise=False),
        )
        code = _kept_object(
            elf.with_name(f"{elf.name}.rvt-{code_key.hexdigest()[:24]}.o"),
            lambda: _compile(tm, translate(image, starts), optimise=True),
        )
        engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), tm)
        engine.add_object_file(llvm.ObjectFileRef.from_data(runtime))
        engine.add_object_file(llvm.ObjectFileRef.from_data(code))
        engine.finalize_object()
        library = _LOADED[key] = NativeLibrary(engine)
        return library


def _compile(tm: Any, text: str, *, optimise: bool) -> bytes:
    """Object code for LLVM IR ``text`` (``optimise``: at -O2 first; the executor's IR is optimised already)."""
    import llvmlite.binding as llvm

    try:
        module = llvm.parse_assembly(text)
        module.verify()
    except RuntimeError as exc:
        raise ExecutorError(f"the translated RISC-V executor's IR is not valid: {exc}") from None
    module.triple = tm.triple
    module.data_layout = str(tm.target_data)
    if optimise:
        pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=2))
        pb.getModulePassManager().run(module, pb)
    return bytes(tm.emit_object(module))
