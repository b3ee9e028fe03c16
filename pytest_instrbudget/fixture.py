"""The ``cbuild`` fixture: build C/C++ sources relative to the test file, load or run them."""

from __future__ import annotations

import contextlib
import shlex
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from cbuild import errors
from cbuild.build import compiledb
from cbuild.build.builder import Artifact, Builder
from cbuild.build.options import BuildOptions
from cbuild.build.sources import Source, expand
from cbuild.errors import (
    BuildDescriptionError,
    CBuildError,
    CompileError,
    ExecutionError,
    LibraryCrashed,
    LibraryTimeout,
    LinkError,
    ProgramCrashed,
    ProgramTimeout,
    SignatureError,
    UnknownFunction,
)
from cbuild.models import CostModel, ModelError, ModelRegistry
from cbuild.models.costs import Cost
from cbuild.run.extension import Extension, ExtensionError, extension_options
from cbuild.run.hosts import HostPool, HostProcess
from cbuild.run.library import Library, Pointer
from cbuild.run.program import run_program
from cbuild.run.stops import CodeStopped, checked_limits, machine_clock_usage
from pytest_instrbudget.marker import model_names
from pytest_instrbudget.measure import Meter, measure


@dataclass(frozen=True)
class ProgramRun:
    """One run of a program: its exit status, output, and what it cost."""

    returncode: int
    stdout: bytes
    stderr: bytes
    #: Metric name -> cost of this run (empty when instrumentation is disabled).
    costs: dict[str, Cost]
    #: Metric name -> why its model could not measure this run (the build's target cannot build the code).
    unavailable: dict[str, str] = field(default_factory=dict)

    @property
    def text(self) -> str:
        """stdout decoded as UTF-8."""
        return self.stdout.decode()

    def cost(self, metric: str = "ir_instructions") -> int:
        """Total of one metric for this run; 0 when instrumentation is disabled (``--instrbudget-disable``)."""
        if metric in self.unavailable:
            raise LookupError(f"this run's {metric} is unavailable: {self.unavailable[metric]}")
        if not self.costs and not self.unavailable:  # built without counters: nothing was counted
            return 0
        if metric not in self.costs:
            known = ", ".join(sorted(self.costs)) or "none"
            raise LookupError(f"this run has no metric {metric!r}; the active models measure: {known}")
        return self.costs[metric].total


class Program:
    """A built program; each :meth:`run` is measured when it happens during the test."""

    def __init__(
        self, artifact: Artifact, meter: Meter, models: list[CostModel], timeout: float, base_dir: Path
    ) -> None:
        self.artifact = artifact
        self._base = base_dir
        self.path = artifact.path
        self._meter = meter
        self._models = models
        self._timeout = timeout
        self._table = artifact.table()
        #: True once the fixture that made it has ended: its runs would be measured for no test.
        self.closed = False

    def run(
        self,
        args: Sequence[object] = (),
        *,
        input: bytes | str = b"",
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
    ) -> ProgramRun:
        """Run with ``args`` and ``input`` on stdin, in ``cwd`` (relative to the test file, as the
        sources are; None: pytest's working directory); a crash or timeout raises with stderr."""
        if self.closed:
            raise CBuildError(
                f"this program ({self.artifact.name}) was made by the cbuild fixture of a test that has ended, "
                "so its runs would be measured for no test; call cbuild.program(...) in the test that runs it "
                "(its build is cached: the same sources and options cost nothing the second time)"
            )
        data = input.encode() if isinstance(input, str) else input
        self._meter.add_artifact(self.artifact)
        # The engine's warnings (a RISC-V run that differs from the native one) point at the test's line.
        raised: list[warnings.WarningMessage] = []
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    result = run_program(
                        self.artifact,
                        args,
                        input=data,
                        timeout=timeout if timeout is not None else self._timeout,
                        env=env,
                        cwd=self._base / cwd if cwd is not None else None,
                        table=self._table,
                        limits=checked_limits(self.artifact, self._meter.program_limits()),
                    )
                finally:
                    raised = list(caught)
        except BaseException as error:
            if isinstance(error, ProgramCrashed):  # if the test fails with it: the cost counted until then
                self._meter.add_crashed(error.counts)
            elif isinstance(error, ProgramTimeout):
                self._meter.add_ended(self.artifact.name, "a program run timed out")
            elif isinstance(error, CodeStopped):
                self._meter.add_ended(self.artifact.name, "a program run stopped at the cut-off")
            _warn_again(raised, quietly=True)
            raise
        _warn_again(raised)
        self._meter.add_run(result.counts)
        costs: dict[str, Cost] = {}
        unavailable: dict[str, str] = {}
        if result.counts is not None:
            measured = measure(self._models, [result.counts])
            costs = measured.costs
            unavailable = {metric: why.reason for metric, why in measured.unavailable.items()}
        spent = {metric: cost.total for metric, cost in costs.items()}
        if result.counts is not None:  # an executing model's clock counts what its run used, not its total
            spent.update(machine_clock_usage(self.artifact, result.counts.machine))
        self._meter.program_ran(spent)
        return ProgramRun(result.returncode, result.stdout, result.stderr, costs, unavailable)


def _listed(sources: Sequence[str | Path] | str | Path) -> Sequence[str | Path]:
    """``sources=`` as a list: one path or pattern given alone is a list of one; anything else
    that is not a list of paths is an error naming what it got."""
    listed = [sources] if isinstance(sources, (str, Path)) else sources
    if not isinstance(listed, (list, tuple)) or not all(isinstance(s, (str, Path)) for s in listed):
        raise TypeError(f"sources are paths or glob patterns (str or pathlib.Path), or lists of them; got {sources!r}")
    return listed


def _arguments(keyword: str, values: Sequence[str | Path]) -> tuple[str | Path, ...]:
    """A list keyword's values (``defines=``, ``cflags=``, ...): a string alone is refused, naming
    the list it meant, where iterating it would have passed one character per argument."""
    if isinstance(values, (str, bytes, Path)):
        meant: list[str | bytes | Path] = [values]
        if isinstance(values, str) and keyword != "include_dirs":  # a path may hold spaces; flags part at them
            with contextlib.suppress(ValueError):  # an unclosed quote: the string as one
                meant = list(shlex.split(values))
        raise TypeError(f"{keyword}={values!r}: expected a list of strings, one per argument, as {keyword}={meant!r}")
    return tuple(values)


def _all(
    paths: Sequence[Sequence[str | Path] | str | Path],
    sources: Sequence[str | Path] | str | Path,
    exclude: Sequence[str | Path] | str | Path,
) -> tuple[str | Path, ...]:
    """Positional paths (a list among them counts as its paths), ``sources=`` and ``exclude=``
    (as ``!pattern`` entries) as one list."""
    positional = [p for path in paths for p in _listed(path)]
    return (*positional, *_listed(sources), *(f"!{pattern}" for pattern in _listed(exclude)))


def _warn_again(caught: list[warnings.WarningMessage], *, quietly: bool = False) -> None:
    """Warn ``caught`` again at the line of the test that called the fixture's method; ``quietly``
    while an error is on its way, so that a warning made an error (``-W error``) does not take
    its place."""
    for warning in caught:
        with contextlib.suppress(Warning) if quietly else contextlib.nullcontext():
            warnings.warn(warning.message, warning.category, stacklevel=3)


class CBuild:
    """Builds sources (paths relative to the test file) with the project's settings."""

    # In a test's body the fixture's name hides the ``cbuild`` package: the package's errors and
    # types a test catches or checks are reached through the fixture as well.
    errors = errors
    CBuildError = CBuildError
    CompileError = CompileError
    LinkError = LinkError
    ExecutionError = ExecutionError
    ProgramCrashed = ProgramCrashed
    ProgramTimeout = ProgramTimeout
    LibraryCrashed = LibraryCrashed
    LibraryTimeout = LibraryTimeout
    SignatureError = SignatureError
    UnknownFunction = UnknownFunction
    ExtensionError = ExtensionError
    Pointer = Pointer

    def __init__(
        self,
        *,
        builder: Builder,
        options: BuildOptions,
        meter: Meter,
        models: list[CostModel],
        base_dir: Path,
        hosts: HostPool,
        timeout: float,
        registry: ModelRegistry,
    ) -> None:
        self._builder = builder
        self._options = options
        self._meter = meter
        self._models = models
        self._registry = registry
        self._base = base_dir
        self._hosts = hosts
        self._host: HostProcess | None = None
        self._timeout = timeout
        self._libraries: list[Library] = []
        self._programs: list[Program] = []

    def close(self) -> None:
        """Free this test's libraries (their RISC-V builds' workers go to the next test) and end
        its library process."""
        libraries, self._libraries = self._libraries, []
        for program in self._programs:
            program.closed = True
        try:
            for library in libraries:
                library.close()
        finally:
            if self._host is not None:
                self._host.close()

    def _take_host(self) -> HostProcess:
        """This test's library process, started at its first library."""
        if self._host is None:
            self._host = self._hosts.take()
            self._meter.attach_host(self._host)
        return self._host

    def _call_timeout(self, timeout: float | None) -> float:
        return timeout if timeout is not None else self._timeout

    def _build_models(self, names: Sequence[str] | str | None, call: str) -> list[CostModel]:
        """A build's models: the test's, or those of them ``models=`` names (in the test's order)."""
        if names is None:
            return self._models
        chosen = model_names(names, call, ModelError)
        mine = [model.name for model in self._models]
        for name in chosen:
            if name in mine:
                continue
            try:
                self._registry.model_class(name)
            except ModelError as exc:
                raise ModelError(f"models=: {exc}") from None
            raise ModelError(
                f"models=: the cost model {name!r} is not among this test's models ({', '.join(mine)}); a build "
                f"measures some of them: choose it for the test with @pytest.mark.budget(models=[...])"
            )
        return [model for model in self._models if model.name in chosen]

    def _build(
        self,
        sources: Sequence[str | Path],
        kind: str,
        include_dirs: Sequence[str | Path],
        defines: Sequence[str],
        cflags: Sequence[str],
        cxxflags: Sequence[str],
        ldflags: Sequence[str],
        opt_level: str | int | None,
        *,
        compile_commands: str | Path | None = None,
        targets: Sequence[str] = (),
        adjust: Callable[[BuildOptions], BuildOptions] | None = None,
        models: Sequence[CostModel] = (),
        assertions: bool | None = None,
        keep_main: bool = False,
    ) -> Artifact:
        """Build ``sources`` (paths or globs relative to the test file; with ``compile_commands``,
        the database's sources they name, or all of them, each with its own flags) with ``models``."""
        o = self._options
        options = replace(
            o,
            include_dirs=o.include_dirs
            + tuple((self._base / d).resolve() for d in _arguments("include_dirs", include_dirs)),
            defines=o.defines + tuple(map(str, _arguments("defines", defines))),
            cflags=o.cflags + tuple(map(str, _arguments("cflags", cflags))),
            cxxflags=o.cxxflags + tuple(map(str, _arguments("cxxflags", cxxflags))),
            ldflags=o.ldflags + tuple(map(str, _arguments("ldflags", ldflags))),
            opt_level=str(opt_level) if opt_level is not None else o.opt_level,
            model_params=tuple(p for model in models for p in model.key_params()),
            assertions=o.assertions if assertions is None else assertions,
        )
        if adjust is not None:
            options = adjust(options)
        units: list[Source] | list[Path]
        if compile_commands is not None:
            db = compiledb.load(
                self._base / compile_commands, cache=self._builder.cache, progress=self._builder.progress
            )
            picked = (targets,) if isinstance(targets, str) else tuple(targets)
            # stacklevel 3: the warning about left-out flags points at the test's call.
            units = db.select(sources, base=self._base, targets=picked, stacklevel=3)
        elif targets:
            raise BuildDescriptionError("targets= picks entries of a compilation database; pass compile_commands= too")
        else:
            units = expand(sources, self._base)
        return self._builder.build(units, options=options, kind=kind, models=models, keep_main=keep_main)

    def library(
        self,
        *paths: str | Path,
        sources: Sequence[str | Path] = (),
        exclude: Sequence[str | Path] = (),
        compile_commands: str | Path | None = None,
        targets: Sequence[str] = (),
        include_dirs: Sequence[str | Path] = (),
        defines: Sequence[str] = (),
        cflags: Sequence[str] = (),
        cxxflags: Sequence[str] = (),
        ldflags: Sequence[str] = (),
        opt_level: str | int | None = None,
        assertions: bool | None = None,
        timeout: float | None = None,
        models: Sequence[str] | None = None,
        keep_main: bool = False,
    ) -> Library:
        """Build a shared library and load a fresh instance of it into this test's library process.

        ``paths`` (and ``sources=``, the same as a list) are files or glob patterns (``*``, ``**``)
        relative to the test file; ``exclude=`` (or a ``!pattern`` among them) leaves out the
        files a path or pattern matches, and is an error where it matches none. ``assertions``
        overrides the config's key of that name for this build (False defines ``NDEBUG``). With
        ``compile_commands`` (a ``compile_commands.json``), each source is compiled with its flags
        there: ``sources`` pick files of the database (none: all of them), ``targets`` its entries
        of some CMake/Meson targets. ``timeout`` limits each call, in seconds (default: the
        marker's, else the config's). ``models`` names the cost models measuring this build, some
        of the test's (default: all of them). A source that defines ``main`` is an error naming it
        (a glob took a program's file) unless ``keep_main``.
        """
        artifact = self._build(
            _all(paths, sources, exclude), "library", include_dirs, defines, cflags, cxxflags, ldflags, opt_level,
            compile_commands=compile_commands, targets=targets, models=self._build_models(models, "cbuild.library"),
            assertions=assertions, keep_main=keep_main,
        )  # fmt: skip
        library = Library(artifact, host=self._take_host(), timeout=self._call_timeout(timeout))
        self._libraries.append(library)
        self._meter.add_library(library)
        return library

    def program(
        self,
        *paths: str | Path,
        sources: Sequence[str | Path] = (),
        exclude: Sequence[str | Path] = (),
        compile_commands: str | Path | None = None,
        targets: Sequence[str] = (),
        include_dirs: Sequence[str | Path] = (),
        defines: Sequence[str] = (),
        cflags: Sequence[str] = (),
        cxxflags: Sequence[str] = (),
        ldflags: Sequence[str] = (),
        opt_level: str | int | None = None,
        assertions: bool | None = None,
        timeout: float | None = None,
        models: Sequence[str] | None = None,
    ) -> Program:
        """Build an executable (sources and ``models`` as for :meth:`library`); run it with :meth:`Program.run`.
        ``timeout`` limits each of its runs, in seconds, where the run gives none (default: the
        marker's, else the config's)."""
        chosen = self._build_models(models, "cbuild.program")
        artifact = self._build(
            _all(paths, sources, exclude), "program", include_dirs, defines, cflags, cxxflags, ldflags, opt_level,
            compile_commands=compile_commands, targets=targets, models=chosen, assertions=assertions,
        )  # fmt: skip
        program = Program(artifact, self._meter, chosen, self._call_timeout(timeout), self._base)
        self._programs.append(program)
        return program

    def extension(
        self,
        *paths: str | Path,
        name: str,
        sources: Sequence[str | Path] = (),
        exclude: Sequence[str | Path] = (),
        compile_commands: str | Path | None = None,
        targets: Sequence[str] = (),
        include_dirs: Sequence[str | Path] = (),
        defines: Sequence[str] = (),
        cflags: Sequence[str] = (),
        cxxflags: Sequence[str] = (),
        ldflags: Sequence[str] = (),
        opt_level: str | int | None = None,
        assertions: bool | None = None,
        limited_api: str | None = None,
        timeout: float | None = None,
        models: Sequence[str] | None = None,
    ) -> Extension:
        """Build a CPython extension module ``name`` (sources as for :meth:`library`) and import it
        in this test's library process; use the result as the module.

        Its own C code is measured while the test calls it. ``limited_api="3.N"`` builds
        against the stable ABI of Python 3.N; ``models`` as for :meth:`library`.
        """
        artifact = self._build(
            _all(paths, sources, exclude), "library", include_dirs, defines, cflags, cxxflags, ldflags, opt_level,
            compile_commands=compile_commands, targets=targets, models=self._build_models(models, "cbuild.extension"),
            adjust=lambda options: extension_options(options, limited_api=limited_api), assertions=assertions,
        )  # fmt: skip
        module = Extension(artifact, name, host=self._take_host(), timeout=self._call_timeout(timeout))
        self._libraries.append(module._library)
        self._meter.add_library(module._library, since=module._origin)
        return module
