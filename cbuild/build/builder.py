"""The pipeline: sources -> IR -> one linked, instrumented module -> object -> program or library."""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Hashable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from cbuild.build import cpu, demangle, llvm_worker
from cbuild.build.blocks import BlockTable
from cbuild.build.cache import Cache, atomic_write, default_cache_dir, digest, file_digest
from cbuild.build.compile import CompiledUnit, compile_own, compile_unit, locate_inline_asm
from cbuild.build.data_layout import aligned_data
from cbuild.build.instrument import instrument
from cbuild.build.libc import HEAP_MAP_SOURCE, libc_ir, size_t_bits
from cbuild.build.libcxx import libcxx_ir
from cbuild.build.options import BuildOptions, language_of, optimisation_flag
from cbuild.build.progress import stderr_progress
from cbuild.build.signatures import read_signatures
from cbuild.build.sources import Source
from cbuild.build.toolchain import PIPELINE_VERSION, Toolchain, find_toolchain
from cbuild.build.watch import BuildWatch
from cbuild.errors import CBuildError, CompilerWarning, InstrumentedIRRejected, LinkError, LLVMCrashed
from cbuild.models import dynamic
from cbuild.models.base import BLOCKS, BuildView, CostModel, ModelError, Runtime, model_failed
from cbuild.riscv.build import TargetUnavailable, build_riscv
from cbuild.riscv.executor import block_data_text, build_executor, build_executor_ir

RUNTIME_SOURCE = Path(__file__).parent.parent / "runtime" / "instrbudget_rt.c"
CPU_SOURCE = Path(__file__).parent.parent / "runtime" / "canonical_cpu.c"
FIXED_STACK_SOURCE = Path(__file__).parent.parent / "runtime" / "fixed_stack.c"
Progress = Callable[[str], None]


@functools.lru_cache(maxsize=64)
def _read_sidecar(path: Path) -> dict[str, Any]:
    # Cache entries are content-addressed and never change once written.
    doc: dict[str, Any] = json.loads(path.read_text())
    return doc


@functools.lru_cache(maxsize=64)
def _parse_table(table_path: Path, binary: Path) -> BlockTable:
    try:
        return BlockTable.from_json(_read_sidecar(table_path)["table"])
    except (OSError, ValueError, KeyError) as exc:
        raise CBuildError(f"the block table of {binary} is unreadable ({exc}); delete the cache entry") from exc


@functools.cache
def engine_digest() -> str:
    """Identity of this engine's own code (instrumenter, placement, runtime): part of every artifact key,
    so that a new version of the engine never reuses an artifact built by an older one."""
    here = Path(__file__).parent.parent
    data = ("runtime/*.c", "libc/*.[ch]", "libc/musl/*.c", "riscv/machines/*.toml", "include/*.h")
    files = [*here.rglob("*.py"), *(p for pattern in data for p in here.glob(pattern))]
    return digest(*(f"{p.relative_to(here)}:{file_digest(p)}" for p in sorted(files)))


#: For the engine's own C code that runs inside a build (the runtime, the models' dynamic phases):
#: its loops stay loops, never calls of a ``memcpy`` or ``memset`` the program may define itself,
#: which would run instrumented, counted as the program's (tests/test_own_libc_names.py).
_OWN_LOOPS = ("-fno-builtin",)

_DEFINES_MAIN = re.compile(rb"^define [^@\n]*@main\(", re.MULTILINE)
#: The linker's error for a program without ``main`` (the runtime's ``__wrap_main`` refers to it).
_NO_MAIN = re.compile(r"error: undefined symbol: main$", re.MULTILINE)
#: clang's count of a unit's diagnostics, the last line of its output: not one of them.
_WARNINGS_GENERATED = re.compile(
    r"^\d+ (?:warnings?|errors?)(?: and \d+ (?:warnings?|errors?))? generated\.\n?", re.MULTILINE
)
#: Where clang's first diagnostic in a unit's warnings is (``file:line:column: warning: ...``).
_DIAGNOSTIC_AT = re.compile(r"^(?P<file>[^\n]+?):(?P<line>\d+):\d+: (?:warning|note|remark|error)\b", re.MULTILINE)


def _sources_state(sources: Sequence[Path | str]) -> tuple[tuple[str, int, int], ...]:
    """Each source's path, size and modification time (-1 when it cannot be read)."""
    state = []
    for source in sources:
        try:
            st = os.stat(source)
            state.append((str(source), st.st_size, st.st_mtime_ns))
        except OSError:
            state.append((str(source), -1, -1))
    return tuple(state)


def portable_paths(text: str, sources: Sequence[str]) -> str:
    """``text`` with each source's path (``sources``, in their order) as ``{source:N}``."""
    for n, path in sorted(enumerate(sources), key=lambda item: -len(item[1])):
        text = text.replace(path, f"{{source:{n}}}")
    return text


def placed_paths(text: str, sources: Sequence[str]) -> str:
    """``text`` from :func:`portable_paths` with this build's sources' paths."""
    return re.sub(
        r"\{source:(\d+)\}", lambda m: sources[int(m.group(1))] if int(m.group(1)) < len(sources) else m.group(0), text
    )


@dataclass(frozen=True)
class Artifact:
    """A built program or shared library and the block table of its counters."""

    path: Path
    #: A readable name for messages: the first source's file name.
    name: str
    kind: str  # "program" or "library"
    table_path: Path
    #: Build id, also embedded in the binary; the counts file names it.
    key: str
    instrumented: bool
    fingerprint: dict[str, str]
    #: Built with cut-off checks (``BuildOptions.cutoff``): runs can be given limits.
    cutoff: bool = False
    #: The sources' paths as this build was asked for them (a cached build may have been made
    #: from the same contents elsewhere): what its messages name.
    sources: tuple[str, ...] = ()

    def machines(self) -> dict[str, Any]:
        """RISC-V target -> {"elf", "executor", "models", "slots"} or {"unavailable", "models"}
        (why, naming this build's sources)."""
        doc: dict[str, Any] = self.metadata().get("machines", {})
        return {
            target: {**m, "unavailable": placed_paths(m["unavailable"], self.sources)} if "unavailable" in m else m
            for target, m in doc.items()
        }

    def models(self) -> dict[str, Any]:
        """Model name -> {"analysis": static document, "results": [offset, count]} for this build."""
        doc: dict[str, Any] = self.metadata().get("models", {})
        return doc

    def metadata(self) -> dict[str, Any]:
        """The sidecar document: block table and exported function signatures (read once per process)."""
        try:
            return _read_sidecar(self.table_path)
        except (OSError, ValueError) as exc:
            raise CBuildError(f"the block table of {self.path} is unreadable ({exc}); delete the cache entry") from exc

    def table(self) -> BlockTable:
        """The block table (parsed once per process; treat it as read-only)."""
        return _parse_table(self.table_path, self.path)


def _runtime_digest(runtime: Runtime | None, events: Iterable[str]) -> str | None:
    """What a model's dynamic phase compiles into a build (its code and how it is compiled)."""
    if runtime is None:
        return "none"
    how = f"results={runtime.results} specialise={runtime.specialise} clock={runtime.clock}"
    return digest(runtime.source, how, ",".join(sorted(events)))


def _read_back_digest(model: CostModel, analysis: object) -> str | None:
    """The digest of the dynamic phase the model gives for its analysis as a cached build reads it
    back (JSON: tuples become lists, keys strings), as :meth:`Builder._stale_runtime` computes it;
    None where the model cannot make one from that (the check is then left out)."""
    try:
        return _runtime_digest(model.runtime(json.loads(json.dumps(analysis))), model.events)
    except Exception:
        return None


def _check_json(analysis: object) -> None:
    """``analyse``'s document is kept with the build as JSON, and later runs read it back as such."""
    try:
        json.dumps(analysis, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise CBuildError(
            f"analyse returned what JSON cannot hold ({exc}); it is kept with the build as JSON and read back "
            "so (dicts with string keys, lists, numbers, strings)"
        ) from None


def model_build_flags(models: Sequence[CostModel]) -> tuple[str, ...]:
    """The clang flags models that estimate from this build's IR add to it (a model that executes a
    RISC-V build gets its flags there only)."""
    return tuple(dict.fromkeys(f for m in models if m.executes() is None for f in m.compile_flags))


class Builder:
    """Builds artifacts with one toolchain into one cache."""

    def __init__(
        self,
        *,
        cache_dir: Path | None = None,
        clang: str | None = None,
        progress: Progress | None = None,
    ) -> None:
        self.toolchain: Toolchain = find_toolchain(clang)
        self.progress: Progress = progress or stderr_progress
        self.cache = Cache(cache_dir or default_cache_dir(), notify=self.progress, label=self.toolchain.label)
        demangle.build_with(self.toolchain, self.cache)  # where names the host cannot read are read
        self._failed: dict[Hashable, CBuildError] = {}
        #: Compiled unit key -> whether it defines main (its IR read once per process).
        self._defines_main: dict[str, bool] = {}
        #: (source, clang's warnings) already reported.
        self._warned: set[tuple[Path, str]] = set()

    def _report_warnings(self, units: Sequence[CompiledUnit]) -> None:
        """clang's warnings on the units, as :class:`CompilerWarning` at the place of the first
        (pytest lists them in its warnings summary); each source's once per builder, from a fresh
        compile or from the cache alike."""
        for unit in units:
            text = _WARNINGS_GENERATED.sub("", unit.warnings).strip()  # clang's "1 warning generated."
            if not text or (unit.source, text) in self._warned:
                continue
            at = _DIAGNOSTIC_AT.search(text)
            filename, line = (at["file"], int(at["line"])) if at else (str(unit.source), 0)
            # Raises where warnings are errors (-W error): then every build of the unit does.
            warnings.warn_explicit(CompilerWarning(text), CompilerWarning, filename, line)
            self._warned.add((unit.source, text))

    def _refuse_main(self, units: Sequence[CompiledUnit]) -> None:
        """A library's sources defining ``main``: usually a glob that took a program's file too."""
        for unit in units:
            if unit.key not in self._defines_main:
                self._defines_main[unit.key] = bool(_DEFINES_MAIN.search(unit.ir_path.read_bytes()))
            if self._defines_main[unit.key]:
                raise CBuildError(
                    f"{unit.source} defines main, and this is a library: its functions are called, main never "
                    f"runs (and the RISC-V models run a library under a main of their own). Leave {unit.source.name} "
                    "out (exclude=, or a '!pattern' among the sources), or pass keep_main=True (cbuild build "
                    "--keep-main) if it belongs in the library"
                )

    def build(
        self,
        sources: Sequence[Source | Path | str],
        *,
        options: BuildOptions | None = None,
        kind: str = "program",
        models: Sequence[CostModel] = (),
        keep_main: bool = False,
    ) -> Artifact:
        """Build (or find in the cache) a program or shared library from ``sources``: paths, or
        :class:`~cbuild.build.sources.Source` values with flags and a directory of their own.

        ``models`` run their static phase on the build, and their dynamic phases are
        linked into it (instrumented builds only). A library whose sources define ``main`` is
        an error naming the file (usually a glob took a program's file) unless ``keep_main``.
        """
        if isinstance(sources, (str, Path)):  # iterated, a path gave one "source" per character
            raise CBuildError(f"sources is a list of paths: build([{str(sources)!r}]), not build({str(sources)!r})")
        options = options or BuildOptions()
        units = tuple(Source.of(s) for s in sources)
        # A build that failed fails the same way until a source changes: not retried by every test.
        state = _sources_state([u.path for u in units])
        attempt = (state, units, options, kind, tuple((m.name, tuple(m.key_params())) for m in models), keep_main)
        failed = self._failed.get(attempt)
        if failed is not None:
            raise failed.with_traceback(None)
        try:
            return self._build(units, options, kind, models, keep_main=keep_main)
        except CBuildError as exc:
            self._failed[attempt] = exc
            raise

    def _build(
        self,
        sources: Sequence[Source],
        options: BuildOptions,
        kind: str,
        models: Sequence[CostModel],
        *,
        keep_main: bool = False,
    ) -> Artifact:
        names = [m.name for m in models]
        if len(set(names)) != len(names):
            raise ModelError(f"each cost model can be active once, got {', '.join(names)}")
        # Flags for a model that reads this build's IR (an estimate from IR); a model that executes
        # a RISC-V build gets its flags there only, so that the native build, and ir_instructions,
        # never depend on which other models are on.
        for model in models:
            level = optimisation_flag(model.compile_flags)
            if level is not None:
                raise ModelError(
                    f"cost model {model.name!r}: compile_flags has {level!r}; the optimisation level is the "
                    "build's (opt_level), not a model's"
                )
        flags = model_build_flags(models) if options.instrument else ()
        if flags:
            options = replace(options, cflags=options.cflags + flags, cxxflags=options.cxxflags + flags)
        if kind not in ("program", "library"):
            raise CBuildError(f"kind must be 'program' or 'library', not {kind!r}")
        if not sources:
            raise CBuildError("no source files given")
        paths = [s.path for s in sources]
        for path in paths:
            if path.is_dir():
                raise CBuildError(f"{path} is a directory; name the source files in it")
        seen: dict[Path, Path] = {}
        for path in paths:
            earlier = seen.get(path.resolve())
            if earlier is not None:
                raise CBuildError(f"{path} is listed twice among the sources (also as {earlier})")
            seen[path.resolve()] = path
        languages = {language_of(p) for p in paths}
        # The LLVM worker (Python and llvmlite) starts while clang runs; once per process.
        llvm_worker.prestart()
        self.cache.ensure_writable()
        more = f" and {len(paths) - 1} more" if len(paths) > 1 else ""
        # A build with call tracking is a build of its own: say so, since a report that asks for it
        # rebuilds what a plain run had built.
        tracking = " (with call tracking)" if options.calls else ""
        watch = BuildWatch(self.progress, f"{paths[0].name}{more}{tracking}")
        started = time.monotonic()
        # clang runs are independent processes: compile the translation units side by side.
        with ThreadPoolExecutor(max_workers=min(len(paths), os.cpu_count() or 1)) as pool:
            futures = [pool.submit(compile_unit, self.toolchain, self.cache, s, options) for s in sources]
            watch.step("compiling", 0, len(futures))
            for done, _ in enumerate(as_completed(futures), start=1):
                if done < len(futures):
                    watch.step("compiling", done, len(futures))
            units = [f.result() for f in futures]
        self._report_warnings(units)
        if kind == "library" and not keep_main:
            self._refuse_main(units)
        key = digest(
            PIPELINE_VERSION,
            self.toolchain.identity,
            kind,
            *options.key_parts(),
            engine_digest(),
            *(f"{k}={v}" for model in models for k, v in model.key_params()),
            *(part for model in models for part in model.code_key()),
            *(u.key for u in units),
        )
        suffix = ".so" if kind == "library" else ""
        binary = self.cache.path("bin", key, suffix)
        table_path = self.cache.path("bin", key, ".blocks.json")
        artifact = Artifact(
            binary,
            paths[0].name,
            kind,
            table_path,
            key,
            options.instrument,
            self.toolchain.fingerprint,
            options.cutoff and options.instrument,
            tuple(str(p) for p in paths),
        )
        cxx = "c++" in languages
        executing = [m for m in models if m.executes() is not None] if options.instrument else []

        def make(files: list[Path]) -> None:
            # The RISC-V builds run beside the native one, in a thread of their own (their work is
            # clang's and the linker's, in processes of their own). Should the native build fail,
            # its error is raised at once, and they start no more processes.
            side = ThreadPoolExecutor(max_workers=1, thread_name_prefix="instrbudget-machines")
            given_up = threading.Event()
            try:
                args = (executing, sources, options, kind, key, artifact.name, watch, given_up)
                machines = side.submit(self._machine_builds, *args)
                sidecar = self._make(
                    units, files[0], artifact, options=options, models=models, cxx=cxx, sources=sources, watch=watch
                )
                if not machines.done():
                    watch.step("waiting for the RISC-V build")
                sidecar["machines"] = machines.result()
                for model in executing:
                    sidecar["models"][model.name] = {"analysis": {}, "target": model.executes()}
            except BaseException:
                given_up.set()
                raise
            finally:
                side.shutdown(wait=False)
            atomic_write(files[1], json.dumps(sidecar, separators=(",", ":")).encode())

        files = self.cache.entry("bin", key, [suffix, ".blocks.json"], make, name=artifact.name)
        checked = models if options.instrument else ()
        if self._stale_runtime(checked, files[1]) is not None:
            # A third-party model's run-time C code is not in the key (it may depend on the analysis,
            # and be read from a file beside the model): a build made with other code is made again,
            # under the entry's lock, where another process may have made it again meanwhile.
            with self.cache.lock("bin", key, name=artifact.name):
                stale = self._stale_runtime(checked, files[1])
                if stale is not None:
                    self.progress(f"rebuilding {artifact.name}: {stale}")
                    self.cache.discard("bin", key, files)
            _read_sidecar.cache_clear()
            _parse_table.cache_clear()
            self.cache.entry("bin", key, [suffix, ".blocks.json"], make, name=artifact.name)
        watch.done(waited=self.cache.waited(started))
        return artifact

    @staticmethod
    def _stale_runtime(models: Sequence[CostModel], sidecar: Path) -> str | None:
        """Why a cached build is not the one the models ask for: a model outside this engine whose
        dynamic phase it holds in another version than the model gives now; or None."""
        checked = [
            m for m in models if m.executes() is None and m.code_key() and type(m).runtime is not CostModel.runtime
        ]
        if not checked:
            return None
        try:
            recorded = _read_sidecar(sidecar).get("models", {})  # read once per process, as the artifact reads it
        except (OSError, ValueError):  # gone (another process made it again) or damaged
            return "its cached build is gone or unreadable"
        for model in checked:
            doc = recorded.get(model.name, {})
            if doc.get("runtime") is None:  # not one a read-back analysis can check
                continue
            if _read_back_digest(model, doc.get("analysis", {})) != doc["runtime"]:
                return f"model {model.name!r} gives other run-time code than its cached build holds"
        return None

    def _make(
        self,
        units: Sequence[CompiledUnit],
        binary: Path,
        artifact: Artifact,
        *,
        options: BuildOptions,
        models: Sequence[CostModel],
        cxx: bool,
        sources: Sequence[Source],
        watch: BuildWatch,
    ) -> dict[str, Any]:
        """Link, instrument, analyse, generate code and link the binary; its sidecar's document
        but for the RISC-V builds (``machines``, and the models that execute one)."""
        key = artifact.key
        kind = artifact.kind
        # LLVM runs in worker processes (cbuild.build.llvm_worker): an abort there fails this build only.
        watch.step("linking the IR")
        linked_text = self._link_units(units, options, self.toolchain)
        if cpu.applies(self.toolchain.triple):
            linked_text = cpu.canonical_cpu(linked_text, options.cpu, library=kind == "library")
        linked_text = aligned_data(linked_text)
        active = [m for m in models if m.executes() is None] if options.instrument else []
        events = frozenset(e for model in active for e in model.events)
        placement = options.placement
        while True:
            watch.step("instrumenting")
            result = instrument(
                linked_text,
                build_id=key,
                counting=options.instrument,
                placement=placement,
                events=events,
                calls=options.calls,
                cutoff=options.cutoff,
            )
            watch.step("the models' analyses")  # a third party's slow analyse is not the instrumenter's
            analyses, models_code, dynamic_phases = self._models(active, result.table, linked_text, options, sources)
            # With dynamic phases the models' hooks join the program's module, to be inlined
            # where they are called; without, the models' object holds the (empty) results.
            extra = [] if dynamic_phases else [models_code]
            watch.step("generating code")
            try:
                obj = llvm_worker.compile_module(
                    result.text,
                    models_code.read_text() if dynamic_phases else None,
                    triple=self.toolchain.triple,
                    speed_level=options.speed_level,
                    sources=[str(s.path) for s in sources],
                )
                break
            except LLVMCrashed as exc:
                # LLVM ends the process on inline assembly the assembler rejects, saying only <inline asm>.
                located = locate_inline_asm(self.toolchain, sources, options) if "<inline asm>" in str(exc) else None
                if located is not None:
                    raise located from None
                raise
            except InstrumentedIRRejected:
                if placement == "blocks":
                    raise
                # Edge counters need new blocks on some edges; should LLVM refuse one,
                # one counter per block still counts the same.
                placement = "blocks"
        watch.step("linking")
        self._link(obj, binary, name=artifact.name, kind=kind, cxx=cxx, options=options, extra=extra)
        return {"table": result.table.to_json(), "signatures": read_signatures(linked_text), "models": analyses}

    def _models(
        self, models: Sequence[CostModel], table: BlockTable, ir: str, options: BuildOptions, sources: Sequence[Source]
    ) -> tuple[dict[str, Any], Path, bool]:
        """Static phases of the models, and their dynamic phases: IR to link into the program
        (True), or an object with just the empty results when no model has one (False)."""

        def twin(triple: str) -> str:
            # The same sources and flags for a host with another data model (never run).
            toolchain = replace(self.toolchain, triple=triple)
            with ThreadPoolExecutor(max_workers=min(len(sources), os.cpu_count() or 1)) as pool:
                units = list(pool.map(lambda s: compile_unit(toolchain, self.cache, s, options), sources))
            return self._link_units(units, options, toolchain)

        view = BuildView(table, ir, opt_level=options.speed_level, twin=twin)
        analyses: dict[str, Any] = {}
        runtimes = []
        for model in models:
            method = "analyse"
            try:
                analysis = model.analyse(view)
                _check_json(analysis)
                method = "runtime"
                runtime = model.runtime(analysis)
            except CBuildError as exc:
                raise ModelError(f"cost model {model.name!r}: {exc}") from exc
            except Exception as exc:  # the model's own bug: said with the model's name and line
                raise model_failed(model, method, exc) from exc
            analyses[model.name] = {"analysis": analysis, "runtime": _read_back_digest(model, analysis)}
            if runtime is not None:
                runtimes.append((model.name, runtime, model.events))
        cutoff = options.cutoff and options.instrument
        code, layout = dynamic.source(runtimes, len(table), cutoff=cutoff)
        for name, slot in layout.slots.items():
            analyses[name]["results"] = list(slot)
        for name, model_events in ((name, events) for name, _, events in runtimes):
            # A cut-off on the clock is looked at before each block only where the model sees blocks.
            analyses[name]["stops"] = BLOCKS in model_events
        metric_of = {model.name: model.metrics[0].name for model in models}
        for n, name in enumerate(layout.clocks, start=1):
            analyses[name]["clock"] = [n, metric_of[name]]
        # -fno-builtin: the models' loops stay loops, never calls of a memset the program may define.
        if not runtimes and not cutoff:
            return analyses, self._compile_c(code, "models", extra=_OWN_LOOPS), False
        return analyses, self._compile_c(code, "models", ir=True, extra=_OWN_LOOPS), True

    def _link_units(self, units: Sequence[CompiledUnit], options: BuildOptions, toolchain: Toolchain) -> str:
        """The units linked into one module; in instrumented builds with the counted libraries."""
        libc: tuple[Path, ...] = ()
        libcxx = None
        if options.instrument and options.count_libraries:
            libc = libc_ir(toolchain, self.cache)
            if any(language_of(u.source) == "c++" for u in units):
                libcxx = libcxx_ir(toolchain, self.cache)
        return llvm_worker.link_units(
            [u.ir_path for u in units],
            [str(u.source) for u in units],
            libc=libc,
            libcxx=libcxx,
            size_bits=size_t_bits(toolchain.triple),
        )

    def _machine_builds(
        self,
        models: Sequence[CostModel],
        sources: Sequence[Source],
        options: BuildOptions,
        kind: str,
        key: str,
        name: str,
        watch: BuildWatch,
        given_up: threading.Event,
    ) -> dict[str, Any]:
        """For each RISC-V target a model executes: its build and the executor with the target's
        models compiled in, or why the code cannot be built for it. Once ``given_up`` is set,
        no more of their processes start."""

        def build(target: str) -> dict[str, Any]:
            """The build for ``target`` and its executor."""
            mine = [m for m in models if m.executes() == target]
            runtimes = [m.exec_runtime() for m in mine]
            extra = tuple(dict.fromkeys(f for m in mine for f in m.compile_flags))
            target_options = replace(options, cflags=options.cflags + extra, cxxflags=options.cxxflags + extra)

            def make(files: list[Path]) -> None:
                tc, opts, out = self.toolchain, target_options, files[0]
                build_riscv(tc, self.cache, sources, opts, kind=kind, target_name=target, out=out, given_up=given_up)

            try:
                what = f"the {target} build of {name}"
                (elf,) = self.cache.entry("rvbin", digest(key, target), [".elf"], make, name=what)
            except TargetUnavailable as exc:
                # Cached with the build, which another checkout of the same sources reuses: the
                # sources' paths are stored as placeholders that Artifact.machines fills in.
                why = portable_paths(str(exc), [str(s.path) for s in sources])
                clocks = [m.metrics[0].name for m in mine]
                return {"unavailable": why, "models": [m.name for m in mine], "clocks": clocks}
            library = build_executor(self.toolchain, self.cache, runtimes)
            translation = build_executor_ir(self.toolchain, self.cache, runtimes)
            offset, slots = 0, []
            for model, runtime in zip(mine, runtimes, strict=True):
                slots.append([model.name, offset, runtime.results, runtime.memory, block_data_text(runtime)])
                offset += runtime.results
            return {
                "elf": str(elf),
                "executor": str(library),
                "translation": str(translation),
                "models": [m.name for m in mine],
                "slots": slots,
                # The metric each model's clock (``model_now``) gives regions.
                "clocks": [m.metrics[0].name for m in mine],
            }

        out: dict[str, Any] = {}
        for target in sorted({t for m in models if (t := m.executes()) is not None}):
            with watch.beside(f"building for {target}"):
                out[target] = build(target)
        return out

    def _runtime_objects(self) -> list[Path]:
        objects = [self._compile_c(RUNTIME_SOURCE.read_text(), "runtime", extra=_OWN_LOOPS)]
        if cpu.applies(self.toolchain.triple):
            objects.append(self._compile_c(CPU_SOURCE.read_text(), "canonical-cpu"))
        return objects

    def _compile_c(self, code: str, what: str, *, ir: bool = False, extra: Sequence[str] = ()) -> Path:
        """An object file (or LLVM IR) for C source of the plugin's own (cached by content)."""
        flags = [
            *(["-S", "-emit-llvm", "-g0"] if ir else ["-c"]),
            "-O2",
            "-fPIC",
            "-std=c11",
            "-D_POSIX_C_SOURCE=200809L",
            *extra,
        ]
        return compile_own(
            self.toolchain,
            self.cache,
            code,
            what=f"the instrbudget {what}",
            stem=what,
            flags=flags,
            suffix=".ll" if ir else ".o",
        )

    def _link(
        self,
        obj: bytes,
        out: Path,
        *,
        name: str,
        kind: str,
        cxx: bool,
        options: BuildOptions,
        extra: Sequence[Path] = (),
    ) -> None:
        tc = self.toolchain
        runtime = self._runtime_objects()
        marker = self.cache.root / f"libcxx-ready-{digest(tc.identity)}"
        first_cxx = cxx and tc.is_zig and not marker.exists()
        c_marker = self.cache.root / f"libc-ready-{digest(tc.identity)}"
        first_c = tc.is_zig and not c_marker.exists()
        if first_cxx:
            self.progress(
                "first C++ build with this cache: zig compiles libc++ and libc++abi from source "
                "unless its own cache has them (1-2 minutes on a new machine, once)"
            )
        elif first_c:  # the link step's silence: zig builds its C runtime for the target first
            self.progress(
                "first build with this cache: zig prepares its C library for this machine "
                "unless its own cache has it (about 30 s on a new machine, once)"
            )
        with tempfile.TemporaryDirectory(prefix="instrbudget-ld-") as tmp:
            obj_path = Path(tmp) / "program.o"
            obj_path.write_bytes(obj)
            tmp_out = Path(tmp) / ("out.so" if kind == "library" else "out")
            driver = tc.cxx if cxx else tc.cc
            cmd = [
                *driver,
                "-target",
                tc.triple,
                str(obj_path),
                *map(str, runtime),
                *map(str, extra),
                "-o",
                str(tmp_out),
            ]
            if kind == "library":
                # A symbol nothing defines is a link error here, as for programs, not a failed load
                # later (``-Wl,-z,undefs`` in ldflags allows it again, e.g. for symbols of a host).
                cmd += ["-shared", "-Wl,--no-undefined"]
            if options.instrument and options.count_libraries:
                # The counted heap's mapping and lock, uninstrumented (runtime/heap_map.c).
                cmd.append(str(self._compile_c(HEAP_MAP_SOURCE.read_text(), "heap-map", extra=_OWN_LOOPS)))
                if kind == "program" and "linux" in tc.triple:
                    # main on a stack at a fixed address (runtime/fixed_stack.c), reached through __wrap_main.
                    cmd += [str(self._compile_c(FIXED_STACK_SOURCE.read_text(), "fixed-stack")), "-Wl,--wrap=main"]
            cmd += ["-lm", *options.ldflags]
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                if kind == "program" and _NO_MAIN.search(proc.stderr):
                    raise LinkError(
                        f"linking the program of {name} failed: none of its sources defines main, where a "
                        "program starts; to call the sources' functions from a test, build them as a library "
                        "(cbuild.library)"
                    )
                raise LinkError(f"linking the {kind} of {name} failed:\n{proc.stderr.strip()}")
            atomic_write(out, tmp_out.read_bytes(), mode=0o755)
        if first_cxx:
            atomic_write(marker, b"")
        if first_c:
            atomic_write(c_marker, b"")
