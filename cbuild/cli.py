"""``python -m cbuild``: build, run and measure C/C++ programs without pytest."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import shlex
import shutil
import signal
import stat
import sys
import warnings

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cbuild.build import eviction, zig_caches
from cbuild.build.builder import Builder
from cbuild.build.cache import default_cache_dir
from cbuild.build.compile import INCLUDE_DIR
from cbuild.build.demangle import demangle, demangled_keys, readable_names
from cbuild.build.options import CXX_SUFFIXES, OPT_LEVELS, BuildOptions, optimisation_flag
from cbuild.build.toolchain import own_zig_cache, zig_binary
from cbuild.config import Settings, load_settings
from cbuild.errors import CBuildError, CompilerWarning, ToolchainError, describe_os_error
from cbuild.models import CostModel, ModelError, default_registry
from cbuild.models.costs import outside_calls
from cbuild.models.profile import IR_METRIC
from cbuild.report import shards, texttable, update
from cbuild.report.attribution import attributed
from cbuild.report.diff import changes, compared, incomparable, load_run, only_in, render_markdown, render_text
from cbuild.report.history import configured_baseline, default_baseline, read_history
from cbuild.report.history import render_text as render_history
from cbuild.report.html import render as render_page
from cbuild.report.outputs import first_shared, write_output
from cbuild.riscv.isa import check_operands, parse_assembly
from cbuild.riscv.machine import builtin_machines, load_machine
from cbuild.run.program import DEFAULT_ENV, run_program
from cbuild.run.stops import CodeStopped, needs_cutoff_build
from cbuild.run.warm import warm


def _count(text: str) -> int:
    """A ``--top`` value: a whole number, 0 or more."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative: give 0 or more")
    return value


#: The narrowest ``--width`` a table of names and numbers is laid out in.
_MIN_WIDTH = 20


def _width(text: str) -> int:
    """A ``--width`` value: a whole number of columns, :data:`_MIN_WIDTH` or more."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < _MIN_WIDTH:
        raise argparse.ArgumentTypeError(f"{value} columns is too narrow: give {_MIN_WIDTH} or more")
    return value


def _seconds(text: str) -> float | None:
    """A ``--timeout`` value: seconds, 0 for none."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value >= 0:  # NaN too
        raise argparse.ArgumentTypeError(f"{text} is not 0 (no timeout) or more seconds")
    return value or None


def _add_build_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("sources", nargs="+", type=Path, help="C (.c), C++ (.cc, .cpp, .cxx) and LLVM IR (.ll) sources")
    p.add_argument("-O", dest="opt_level", default="2", choices=OPT_LEVELS, help="optimisation level (default 2)")
    p.add_argument(
        "-I", dest="include_dirs", action="append", default=[], type=Path, metavar="DIR", help="an include directory"
    )
    p.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME[=VALUE]", help="a macro to define")
    p.add_argument("--cflags", default="", metavar="'FLAGS'", help="extra C flags, e.g. --cflags='-std=c11 -Wall'")
    p.add_argument("--cxxflags", default="", metavar="'FLAGS'", help="extra C++ flags")
    p.add_argument("--ldflags", default="", metavar="'FLAGS'", help="extra link flags, e.g. --ldflags=-lpthread")
    p.add_argument("--no-instrument", action="store_true", help="same pipeline, no counting code")
    p.add_argument(
        "--count-libraries",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="count the C library's and libc++'s work too (the default); --no-count-libraries counts only yours",
    )
    p.add_argument(
        "--assertions",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="run assert checks; without it (--no-assertions, the default) NDEBUG is defined, as in release builds",
    )
    p.add_argument("--clang", default=None, help="a clang driver to use instead of the ziglang wheel's")
    p.add_argument(
        "--cache-dir",
        type=Path,
        default=None,
        help="build cache (default $INSTRBUDGET_CACHE_DIR, else $XDG_CACHE_HOME/instrbudget, "
        "else ~/.cache/instrbudget)",
    )


def _add_model_flag(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="NAME[:KEY=VALUE,...]",
        help=f"{what} (repeatable; default ir-count, which models given replace: add --model ir-count to keep "
        "it), e.g. --model pipeline:machine=rocket",
    )


def _options(args: argparse.Namespace) -> BuildOptions:
    for key in ("cflags", "cxxflags"):
        level = optimisation_flag(tuple(shlex.split(getattr(args, key))))
        if level is not None:
            suffix = f" {level[2:]}" if level[2:] in OPT_LEVELS else f" LEVEL ({', '.join(OPT_LEVELS)})"
            raise CBuildError(
                f"--{key} has {level!r}: set the optimisation level with -O{suffix} instead; it sets clang's level "
                f"and the instrumented pipeline's alike, where {level!r} in --{key} would change only clang's"
            )
    return BuildOptions(
        opt_level=args.opt_level,
        cflags=tuple(shlex.split(args.cflags)),
        cxxflags=tuple(shlex.split(args.cxxflags)),
        ldflags=tuple(shlex.split(args.ldflags)),
        include_dirs=tuple(d.resolve() for d in args.include_dirs),
        defines=tuple(args.defines),
        instrument=not args.no_instrument,
        count_libraries=args.count_libraries,
        assertions=args.assertions,
    )


def parser() -> argparse.ArgumentParser:
    """The command-line interface."""
    # As the user started it: the installed script, or the module.
    prog = "cbuild" if Path(sys.argv[0]).stem == "cbuild" else "python -m cbuild"
    top = argparse.ArgumentParser(prog=prog, description="Build, run and measure C/C++ programs without pytest.")
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    build = sub.add_parser("build", help="build an instrumented executable or shared library")
    _add_build_flags(build)
    build.add_argument("-o", dest="output", type=Path, required=True, help="output file")
    build.add_argument("--shared", action="store_true", help="build a shared library")
    build.add_argument(
        "--keep-main",
        action="store_true",
        help="with --shared: keep a source that defines main in the library (refused otherwise)",
    )
    _add_model_flag(build, "cost model whose run-time part to build in")
    run = sub.add_parser(
        "run",
        help="build (cached), run, and print the program's cost",
        description="Build (cached), run and print the program's cost. The program's own arguments "
        f"follow --: {prog} run prog.c -- ARGS...",
    )
    _add_build_flags(run)
    run.add_argument(
        "--json",
        action="store_true",
        help='print a JSON document instead of the summary (the program\'s output in its "stdout")',
    )
    run.add_argument(
        "--top", type=_count, default=10, help="functions to list (default 10; 0: totals only; --json lists all)"
    )
    run.add_argument(
        "--timeout", type=_seconds, default=60.0, help="seconds before the program is killed (default 60; 0: none)"
    )
    run.add_argument(
        "--stop-at",
        action="append",
        default=[],
        metavar="[METRIC=]N",
        help="stop the program before it passes N IR instructions, or N of a model's clock (zk_cycles=N with "
        "--model zkvm; repeatable); a stopped run says where and exits 2",
    )
    run.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a variable of the program's environment (repeatable), which is otherwise fixed (LC_ALL, PATH) so "
        "that counts do not depend on the caller's: INSTRBUDGET_HEAP_LIMIT=67108864",
    )
    _add_model_flag(run, "cost model to report")
    pipe = sub.add_parser(
        "pipeline",
        help="estimate the cycles of one straight-line block of RISC-V assembly with a pipeline machine",
    )
    pipe.add_argument("file", type=Path, help="RISC-V assembly (.s), read as one straight-line block")
    pipe.add_argument("--machine", default="inorder5", help=f"{', '.join(builtin_machines())} or a .toml description")
    pipe.add_argument("--timeline", action="store_true", help="show when each instruction issues and completes")
    diff = sub.add_parser(
        "diff",
        help="compare two runs: baselines or --instrbudget-json documents",
        description="What changed from OLD to NEW (baselines or --instrbudget-json documents); exit status 1 when "
        "a metric of a test in both changed.",
    )
    diff.add_argument("old", type=Path, help="the earlier run's baseline or JSON document")
    diff.add_argument("new", type=Path, help="the later run's baseline or JSON document")
    diff.add_argument("--markdown", action="store_true", help="a markdown table (e.g. for $GITHUB_STEP_SUMMARY)")
    diff.add_argument(
        "--top", type=_count, default=5, help="functions and regions to list per change (default 5; 0: none)"
    )
    diff.add_argument("--width", type=_width, default=None, metavar="N", help="line width (default: the terminal's)")
    sub.add_parser("include-dir", help="print the directory of instrbudget.h (to build the sources without the plugin)")
    merge = sub.add_parser("merge", help="merge the --instrbudget-json documents of one run's shards")
    merge.add_argument("documents", type=Path, nargs="+", metavar="SHARD.json")
    merge.add_argument("-o", dest="output", type=Path, required=True, help="the merged document")
    baseline = sub.add_parser("baseline", help="write a run's results into the baseline")
    baseline_sub = baseline.add_subparsers(dest="baseline_command", required=True)
    baseline_update = baseline_sub.add_parser(
        "update", help="update the baseline from a (merged) --instrbudget-json document, as --instrbudget-update"
    )
    baseline_update.add_argument("document", type=Path, metavar="RUN.json")
    baseline_update.add_argument(
        "--baseline", type=Path, default=None, metavar="PATH", help="the baseline (default: the one the run used)"
    )
    baseline_update.add_argument(
        "--prune", action="store_true", help="drop entries of tests that no longer exist (needs every shard)"
    )
    warm = sub.add_parser(
        "warm", help="build everything the project's configuration needs before its first test (a CI cache step)"
    )
    warm.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="NAME",
        help="a model tests choose with models=[...] beyond [tool.instrbudget] models (repeatable)",
    )
    warm.add_argument(
        "--cache-dir", type=Path, default=None, help="the cache to fill (default: the project's, as pytest's)"
    )
    warm.add_argument(
        "--cxx",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="warm C++ too, libc++ being the longest build (default: if the project has C++ sources)",
    )
    cache = sub.add_parser("cache", help="what the build cache holds; keep it within a size, or empty it")
    cache_sub = cache.add_subparsers(dest="cache_command", required=True)
    for name, text in (
        ("info", "entries and size per kind, the last pytest session's hit rate, zig's own cache"),
        ("prune", "remove least recently used entries until the cache is within its size"),
        ("clear", "remove every entry (entries being built stay)"),
    ):
        p = cache_sub.add_parser(name, help=text)
        p.add_argument(
            "--cache-dir",
            type=Path,
            default=None,
            help="the cache (default: [tool.instrbudget] cache_dir of the nearest pyproject.toml, else "
            "$INSTRBUDGET_CACHE_DIR, else $XDG_CACHE_HOME/instrbudget, else ~/.cache/instrbudget)",
        )
        if name == "prune":
            p.add_argument(
                "--max-size",
                default=None,
                metavar="SIZE",
                help='such as "2GiB" (default: [tool.instrbudget] cache_max_size, else 5GiB)',
            )
    history = sub.add_parser("history", help="how each test's costs changed over the baseline's git history")
    history.add_argument(
        "--baseline",
        type=Path,
        default=None,
        metavar="PATH",
        help="baseline file (default: [tool.instrbudget] baseline of the nearest pyproject.toml that has "
        "that table, else .instrbudget/baseline.json beside the nearest pyproject.toml)",
    )
    history.add_argument(
        "-k",
        dest="keyword",
        default=None,
        metavar="PATTERN",
        help="tests whose node id contains PATTERN (as pytest -k)",
    )
    history.add_argument("--metric", default=None, metavar="NAME", help="only this metric")
    history.add_argument("--width", type=_width, default=None, metavar="N", help="line width (default: the terminal's)")
    history.add_argument("--all", action="store_true", help="list unchanged series too (after the changed ones)")
    history.add_argument("--html", type=Path, default=None, metavar="OUT", help="write an HTML report with charts")
    return top


def _cmd_diff(args: argparse.Namespace) -> int:
    unfinished: dict[Path, list[str]] = {args.old: [], args.new: []}
    missing: dict[Path, dict[str, list[str]]] = {args.old: {}, args.new: {}}
    old = load_run(args.old, unfinished[args.old], missing[args.old])
    new = load_run(args.new, unfinished[args.new], missing[args.new])
    try:  # a baseline does not say which model gives which metric: the installed models do
        registry = default_registry()
        # ir-count's first, as a session's default models have it; each model's metrics in its order.
        names = sorted(registry.names, key=lambda name: name != "ir-count")
        known = {m.name: name for name in names for m in registry.model_class(name).metrics}
    except ModelError:  # a plugin that does not load is no reason not to compare two files
        known = {}
    builds, models = incomparable(args.old, args.new, known)
    if builds:
        print(
            f"cbuild: {args.old} and {args.new} were measured with other toolchains or build settings (differs in: "
            f"{', '.join(builds)}): their costs are not comparable, and the differences below include that change",
            file=sys.stderr,
        )
    for metric, how in models.items():  # the other metrics still compare
        print(f"cbuild: {metric} left out: its model differs ({how})", file=sys.stderr)
        for run in (old, new):
            for metrics in run.values():
                metrics.pop(metric, None)
    found = changes(old, new, top=args.top, order=list(known))
    width = args.width if args.width is not None else shutil.get_terminal_size().columns
    if not compared(old, new):  # "no differences" would read as a check that passed
        sys.stdout.write("Nothing was compared.\n" if args.markdown else "nothing compared\n")
    else:
        sys.stdout.write(render_markdown(found) if args.markdown else render_text(found, width))

    def listed(tests: list[str]) -> str:
        return ", ".join(tests[:5]) + (f" and {len(tests) - 5} more" if len(tests) > 5 else "")

    def note(text: str) -> None:  # within the width, as the report above
        print("\n".join(texttable.wrap(text, width)), file=sys.stderr)

    for where, tests in unfinished.items():
        if tests:
            note(f"{len(tests)} test(s) did not complete in {where}, not compared: {listed(tests)}")
    for where, by_metric in missing.items():  # "-" above: a model could not measure them there
        for metric, tests in sorted(by_metric.items()):
            note(f"{metric} unavailable in {where} in {len(tests)} test(s), not compared: {listed(tests)}")
    for label, tests in (("only in", only_in(old, new)), ("new in", only_in(new, old))):
        where = args.old if label == "only in" else args.new
        tests = [t for t in tests if t not in unfinished[args.new if label == "only in" else args.old]]
        if tests:
            note(f"{len(tests)} test(s) {label} {where}: {listed(tests)}")
    if not compared(old, new):  # "no differences" would pass a CI step that compared nothing
        print(
            f"cbuild: nothing was compared: no test has a metric measured alike in {args.old} and {args.new}",
            file=sys.stderr,
        )
        return 2
    return 1 if found else 0


def _refuse_replacing(output: Path, flag: str, inputs: Sequence[tuple[str, Path]]) -> None:
    """An error where ``output`` (given as ``flag``) is one of the files the command reads
    (``inputs``: what each is, its path): writing it would replace that file."""
    for what, path in inputs:  # each with the output alone: two inputs may be one file
        if first_shared([(what, path), (flag, output)]) is not None:
            raise CBuildError(
                f"{flag} {output} is {what}: writing it would replace it; give the output a path of its own"
            )


def _project_baseline() -> list[tuple[str, Path]]:
    """The baseline of the project here, if any, as an input no output may replace."""
    project = _project_here()
    baseline = configured_baseline(project) if project is not None else None
    return [("the project's baseline", baseline)] if baseline is not None else []


def _cmd_merge(args: argparse.Namespace) -> int:
    documents = [(f"the input {path}", path) for path in args.documents]
    _refuse_replacing(args.output, "-o", [*documents, *_project_baseline()])
    merged = shards.merge([(path, shards.load(path)) for path in args.documents])
    try:
        write_output(args.output, (json.dumps(merged.doc, indent=2, sort_keys=True) + "\n").encode())
    except OSError as exc:
        raise CBuildError(f"cannot write {args.output}: {describe_os_error(exc)}") from None
    tests = merged.doc["tests"]
    print(
        f"merged {len(args.documents)} document(s) into {args.output}: {len(merged.doc['selected'])} of "
        f"{len(merged.doc['collected'])} collected test(s) ran, {len(tests)} measured",
        file=sys.stderr,
    )
    for nodeid, paths in merged.twice.items():
        print(f"ran in {len(paths)} shards: {nodeid} ({', '.join(paths)})", file=sys.stderr)
    if merged.missing:
        print(f"{len(merged.missing)} collected test(s) ran in no shard:", file=sys.stderr)
        for nodeid in merged.missing:
            print(f"  {nodeid}", file=sys.stderr)
    return 1 if merged.twice or merged.missing else 0


def _cmd_baseline(args: argparse.Namespace) -> int:
    doc = shards.load(args.document)
    project = _checkout(Path(doc["root"]))
    if project is None and args.baseline is not None:
        project = Path.cwd()
    if project is None:
        raise _no_project("whose baseline it updates")
    done = shards.update_baseline(doc, project, path=args.baseline, prune=args.prune)
    result = done.result
    if done.note is not None:
        print(done.note, file=sys.stderr)
    if result.refused is not None:
        print(f"cbuild: baseline not written: {result.refused}", file=sys.stderr)
        return 1
    what = "written" if result.write else "unchanged"
    print(
        f"baseline {done.path} {what}: {len(result.added)} added, {len(result.changed)} changed, "
        f"{len(result.pruned)} pruned",
        file=sys.stderr,
    )
    if result.write and (rewrite := update.rewrite_note(result)) is not None:
        print(f"  {rewrite}", file=sys.stderr)
    if result.not_written:
        print(
            f"{len(result.not_written)} failing test(s) not written: {', '.join(result.not_written)}", file=sys.stderr
        )
    unpruned = [n for n in done.stale if n not in result.pruned]
    if unpruned:
        print(f"{len(unpruned)} entries for tests that no longer exist (remove with --prune):", file=sys.stderr)
        for nodeid in unpruned:
            print(f"  {nodeid}", file=sys.stderr)
    return 0


def _cmd_cache(args: argparse.Namespace) -> int:
    # The project's cache_dir and cache_max_size (read as the plugin reads them) unless the command line gives them.
    prune_limit = getattr(args, "max_size", None)
    needs_project = args.cache_dir is None or (args.cache_command == "prune" and prune_limit is None)
    settings = _settings() if needs_project else None
    root: Path = args.cache_dir or (settings and settings.cache_dir) or default_cache_dir()
    if root.exists() and not root.is_dir():
        raise CBuildError(f"build cache {root} is not a directory")
    if args.cache_command != "info" and not root.exists():  # a misspelt --cache-dir would read as an empty cache
        print(f"build cache {root}: no such directory (nothing was built there yet), nothing removed")
        return 0
    try:  # the zig cache this installation's builds use (toolchain.own_zig_cache)
        own = own_zig_cache(zig_binary())
    except ToolchainError:
        own = None
    # zig's caches of installations since removed (info counts them, prune removes them)
    gone = zig_caches.gone(Path(own)) if own is not None and args.cache_command != "clear" else []
    if args.cache_command == "info":
        zig = Path(own or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "zig")
        for line in eviction.render_summary(eviction.summary(root, zig if zig.is_dir() else None)):
            print(line)
        if gone:
            size = eviction.format_size(sum(cache.size for cache in gone))
            print(f"zig caches of {len(gone)} removed installation(s): {size} (cache prune removes them)")
        return 0
    if args.cache_command == "prune":
        if prune_limit is not None:
            limit = eviction.parse_size(prune_limit, where="--max-size")
        else:
            limit = (settings or _settings()).cache_max_size
        done = eviction.prune(root, limit)
        entries = eviction.noun(done.removed)
        what = f"removed {done.removed} least recently used {entries} ({eviction.format_size(done.freed)})"
    else:
        done = eviction.clear(root)
        what = f"removed {done.removed} {eviction.noun(done.removed)} ({eviction.format_size(done.freed)})"
    busy = f"; {done.kept()}" if done.in_use else ""
    print(f"build cache {root}: {what}{busy}; {eviction.format_size(done.size_after)} left")
    removed = zig_caches.remove(gone) if args.cache_command == "prune" else []
    if removed:
        freed = eviction.format_size(sum(cache.size for cache in removed))
        print(f"zig caches of {len(removed)} removed installation(s): removed ({freed})")
    return 0


def _project_root() -> Path:
    """The directory of the nearest pyproject.toml (the project pytest runs), else the current one."""
    for directory in (Path.cwd(), *Path.cwd().parents):
        if (directory / "pyproject.toml").is_file():
            return directory
    return Path.cwd()


#: Files that make a directory pytest's rootdir.
_ROOT_FILES = ("pyproject.toml", "pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg")


def _checkout(ran_in: Path) -> Path | None:
    """The project a document's results go into: the directory the run was in (``ran_in``) where the
    current directory is in it, else the nearest project from here up (another checkout of it)."""
    here = Path.cwd()
    if ran_in.is_dir() and (here == ran_in or ran_in in here.parents):
        return ran_in
    return _project_here()


def _no_project(what: str) -> CBuildError:
    """The error of a command that needs a project, run outside any; ``what`` says what it does there."""
    return CBuildError(
        f"no project in {Path.cwd()} or above ({', '.join(_ROOT_FILES[:-1])} or {_ROOT_FILES[-1]}): run this in "
        f"the project's checkout, {what}, or name the baseline with --baseline PATH"
    )


def _project_here() -> Path | None:
    """The nearest directory from here up that pytest would take for a project's root; None outside any."""
    here = Path.cwd()
    return next((d for d in (here, *here.parents) if any((d / name).is_file() for name in _ROOT_FILES)), None)


#: Directories a search for a project's sources passes by.
_NOT_SOURCES = {"node_modules", "venv", "build", "dist", "__pycache__", "site-packages"}


def _has_cxx_sources(root: Path, limit: int = 50_000) -> bool:
    """Whether the project has C++ sources (looking at ``limit`` files at most, hidden folders left out)."""
    seen = 0
    for _, folders, files in os.walk(root):
        folders[:] = [f for f in folders if not f.startswith(".") and f not in _NOT_SOURCES]
        for name in files:
            if Path(name).suffix in CXX_SUFFIXES:
                return True
            seen += 1
            if seen >= limit:
                return False
    return False


def _settings() -> Settings:
    """The ``[tool.instrbudget]`` settings of the project pytest would run here."""
    return load_settings(_project_root(), known_models=default_registry().names)


def _cmd_warm(args: argparse.Namespace) -> int:
    registry = default_registry()
    settings = _settings()
    root = settings.root
    names = list(dict.fromkeys([*settings.models, *args.model]))
    for name in names:
        registry.model_class(name)  # an unknown name lists the known ones
    models = [registry.create(name, settings.model_params.get(name, {}), root=root) for name in names]

    def say(line: str) -> None:
        print(line, file=sys.stderr)

    cache_dir = args.cache_dir if args.cache_dir is not None else settings.cache_dir
    builder = Builder(cache_dir=cache_dir, clang=settings.clang, progress=say)
    options = settings.build_options(instrument=True)
    options = dataclasses.replace(options, model_params=tuple(p for m in models for p in m.key_params()))
    say(f"warming the build cache {builder.cache.root} for {root} ({builder.toolchain.summary})")
    cxx = args.cxx if args.cxx is not None else _has_cxx_sources(root)
    seconds = warm(builder, options, models, cxx=cxx, say=lambda line: say(f"  {line}"))
    say(f"warm in {seconds:.1f} s")
    return 0


def _cmd_history(args: argparse.Namespace) -> int:
    baseline = args.baseline
    if baseline is None:
        project = _project_here()
        if project is None:
            raise _no_project("whose baseline's history it shows")
        baseline = Path(os.path.relpath(default_baseline(project)))
    if args.html is not None:
        _refuse_replacing(args.html, "--html", [("the baseline it reads", baseline)])
    history = read_history(baseline)
    chosen = history.select(args.keyword, args.metric)
    if args.html is not None:
        page = render_page("history", f"instrbudget history: {baseline}", chosen.to_json())
        try:
            write_output(args.html, page.encode())
        except OSError as exc:
            raise CBuildError(f"cannot write the HTML report {args.html}: {describe_os_error(exc)}") from None
        print(f"wrote {args.html}: {len(chosen.series)} series over {history.commits_seen} commit(s)", file=sys.stderr)
    width = args.width if args.width is not None else shutil.get_terminal_size().columns
    asked = [f"-k {args.keyword!r}"] if args.keyword else []
    asked += [f"--metric {args.metric}"] if args.metric else []
    empty = f"no test matches {' and '.join(asked)}" if asked and history.series else "no series to show"
    if args.metric and args.metric not in history.metrics:
        empty += f" (metrics in the history: {', '.join(history.metrics) or 'none'})"
    sys.stdout.write(render_history(chosen, width, empty=empty, show_all=args.all))
    # A -k or --metric that matches nothing shows nothing: a typo must not read as a quiet history.
    return 2 if asked and history.series and not chosen.series else 0


def _cmd_pipeline(args: argparse.Namespace) -> int:
    machine = load_machine(args.machine)
    try:
        text = args.file.read_text()
    except OSError as exc:
        raise CBuildError(f"cannot read {args.file}: {exc.strerror}") from None
    instrs = parse_assembly(text)
    if not instrs:
        raise CBuildError(f"{args.file} has no instructions")
    for instr in instrs:
        check_operands(instr)
    unlisted = [instr for instr in instrs if machine.named_class(instr) is None]
    if unlisted and machine.default_class is not None:
        shown = ", ".join(f"{instr.mnemonic} (line {instr.line})" for instr in unlisted[:8])
        more = f" and {len(unlisted) - 8} more" if len(unlisted) > 8 else ""
        print(
            f"cbuild: not in {machine.name}'s classes, timed as its default class "
            f"{machine.default_class.name!r}: {shown}{more}",
            file=sys.stderr,
        )
    cycles = machine.estimate(instrs)
    if args.timeline:
        timings = machine.timeline(instrs)
        width = len(str(max((done for _, done in timings), default=0)))
        print(f"{'issue':>{max(width, 5)}}  {'done':>{max(width, 4)}}  instruction")
        lines = text.splitlines()
        for instr, (issue, done) in zip(instrs, timings, strict=True):
            source = lines[instr.line - 1].split("#", 1)[0].strip()
            print(f"{issue:>{max(width, 5)}}  {done:>{max(width, 4)}}  {source}")
    print(f"{cycles} cycles ({len(instrs)} instructions on {machine.name})")
    return 0


def _uninstrumented_models(args: argparse.Namespace) -> None:
    """A model or a cut-off asked of a build without counting code measures nothing: refused, not ignored."""
    asked = [f"--model {spec}" for spec in args.model] + [f"--stop-at {s}" for s in getattr(args, "stop_at", [])]
    if args.no_instrument and asked:
        raise CBuildError(f"{asked[0]} measures costs, which --no-instrument does not: give one of them")


def _stop_limits(items: Sequence[str]) -> dict[str, int]:
    """``--stop-at [METRIC=]N`` as limits by metric (the IR total where no metric is named)."""
    limits: dict[str, int] = {}
    for item in items:
        metric, sep, value = item.rpartition("=")
        metric = metric if sep else IR_METRIC
        try:
            limit = int(value.replace("_", ""))
        except ValueError:
            limit = -1
        if not metric or limit < 0:
            raise CBuildError(f"--stop-at {item}: expected N or METRIC=N, N a count of 0 or more")
        if metric in limits:
            raise CBuildError(f"--stop-at {item}: {metric} has a cut-off already")
        limits[metric] = limit
    return limits


def _cmd_build(args: argparse.Namespace, builder: Builder) -> int:
    _uninstrumented_models(args)
    models = _models(args.model)
    for spec, model in zip(args.model or (), models, strict=False):
        target = model.executes()
        if target is not None:  # its costs come from a run of a build that is not the one written
            where = (
                "in a test, cbuild.library(...)" if args.shared else f"with `python -m cbuild run --model {spec} ...`"
            )
            kept = [p for p in spec.partition(":")[2].split(",") if p and not p.startswith("execute=")]
            estimate = f"{model.name}:{','.join([*kept, 'execute=false'])}"
            raise CBuildError(
                f"--model {model.name} measures a {target} build of its own, which `build` does not write: "
                f"measure it {where}"
                + (
                    f", or build its estimate into the binary with --model {estimate}"
                    if "execute" in model.params
                    else ""
                )
            )
    if args.keep_main and not args.shared:
        raise CBuildError("--keep-main is for a library (--shared): a program's main is always kept")
    kind = "library" if args.shared else "program"
    sidecar = args.output.with_name(args.output.name + ".instrbudget.json")
    sources = [(f"the source {path}", Path(path)) for path in args.sources]
    _refuse_replacing(args.output, "-o", sources)
    _refuse_replacing(sidecar, "-o's block table", sources)
    artifact = builder.build(args.sources, options=_options(args), kind=kind, models=models, keep_main=args.keep_main)
    # Each replaced whole (a binary that is running keeps running, no reader sees half of one),
    # through a symlink, and a device written, not replaced (write_output).
    for built, target in ((artifact.path, args.output), (artifact.table_path, sidecar)):
        try:
            write_output(target, built.read_bytes(), mode=stat.S_IMODE(built.stat().st_mode))
        except OSError as exc:
            raise CBuildError(f"cannot write {target}: {describe_os_error(exc)}") from None
    how = (
        f"instrumented; models {', '.join(model.name for model in models)}"
        if artifact.instrumented
        else "not instrumented"
    )
    print(f"built {args.output} ({how}); block table {sidecar}", file=sys.stderr)
    return 0


def _models(specs: list[str]) -> list[CostModel]:
    """Models from ``NAME[:KEY=VALUE,...]`` (values are read as TOML values, else as strings)."""
    registry = default_registry()
    out: list[CostModel] = []
    for spec in specs or ["ir-count"]:
        name, _, rest = spec.partition(":")
        if any(m.name == name for m in out):
            raise CBuildError(f"--model {name} is given twice; a model can be active once")
        params: dict[str, object] = {}
        for item in filter(None, rest.split(",")):
            key, sep, value = item.partition("=")
            if not sep:
                raise CBuildError(f"--model {spec}: expected KEY=VALUE, got {item!r}")
            if key in params:
                raise CBuildError(f"--model {spec}: {key} is given twice")
            try:
                params[key] = tomllib.loads(f"v = {value}")["v"]
            except tomllib.TOMLDecodeError:
                params[key] = value
        try:
            out.append(registry.create(name, params, root=Path.cwd()))
        except ModelError as exc:  # said of the command line, not of a pyproject table
            raise CBuildError(str(exc).replace(f"[tool.instrbudget.{name}]", f"--model {spec}:", 1)) from None
    return out


def _error_document(exc: CBuildError, **more: object) -> str:
    """``run --json``'s document for a run that ended without costs: why, and no return code."""
    return json.dumps({"error": str(exc), "kind": type(exc).__name__, "returncode": None, **more}, indent=2)


def _write_through(stream: Any, data: bytes) -> None:
    """The program's output on ``stream``; a reader that went away (``| head``) is no error: the
    cost still goes to stderr."""
    try:
        stream.buffer.write(data)
        stream.flush()
    except BrokenPipeError:
        _into_nothing(stream)


def _cmd_run(args: argparse.Namespace, builder: Builder, program_args: list[str]) -> int:
    if args.json and args.no_instrument:  # it printed the program's output where the document was expected
        raise CBuildError("--json prints the costs, which --no-instrument does not measure: give one of them")
    _uninstrumented_models(args)
    limits = _stop_limits(args.stop_at)
    env = dict(DEFAULT_ENV)
    for item in args.env:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise CBuildError(f"--env {item}: expected NAME=VALUE")
        env[name] = value
    models = _models(args.model)
    options = dataclasses.replace(_options(args), cutoff=needs_cutoff_build(limits, models))
    artifact = builder.build(args.sources, options=options, kind="program", models=models)
    try:
        result = run_program(
            artifact,
            program_args,
            input=b"" if sys.stdin.isatty() else sys.stdin.buffer.read(),
            timeout=args.timeout,
            env=env,
            limits=limits,
        )
    except CodeStopped as stopped:  # what the program wrote, then where it stopped
        if args.json:
            stop = stopped.stop
            where = {"metric": stop.metric, "count": stop.count, "limit": stop.limit, "in": stop.stack()}
            print(_error_document(stopped, stopped=where))
        else:
            _write_through(sys.stdout, stopped.stdout)
        sys.stderr.buffer.write(stopped.stderr)
        print(f"cbuild: {stopped}", file=sys.stderr)
        return 2
    if not args.json or result.counts is None:  # with --json, stdout holds the document alone
        _write_through(sys.stdout, result.stdout)
    sys.stderr.buffer.write(result.stderr)
    sys.stderr.flush()
    if result.counts is None:
        return result.returncode
    costs = list(attributed(models, [result.counts]).values())  # with the regions of its markers
    outside = sorted(outside_calls(result.counts).items(), key=lambda kv: (-kv[1], kv[0]))
    # A model that could not measure this program (its RISC-V build failed, say) has no value: its
    # metrics are said to be unavailable, not shown as 0, and run exits 2.
    unavailable = {m.name: result.counts.unavailable[m.name] for m in models if m.name in result.counts.unavailable}
    owner = {metric.name: m for m in models for metric in m.metrics}
    missing = {metric: unavailable[m.name] for metric, m in owner.items() if m.name in unavailable}
    status = 2 if unavailable else result.returncode
    if args.json:
        tables, symbols = demangled_keys(*(cost.functions for cost in costs))
        metrics: dict[str, dict[str, object]] = {
            c.metric: {"total": None, "unavailable": missing[c.metric]}
            if c.metric in missing
            else {"total": c.total, "functions": t, **({"regions": dict(c.regions)} if c.regions else {})}
            for c, t in zip(costs, tables, strict=True)
        }
        doc = {
            "returncode": result.returncode,
            # What the program wrote to its standard output (UTF-8, undecodable bytes replaced).
            "stdout": result.stdout.decode(errors="replace"),
            "fingerprint": artifact.fingerprint,
            # The first model's headline metric, then every metric; functions by demangled name.
            "metric": costs[0].metric,
            "total": metrics[costs[0].metric]["total"],
            "functions": metrics[costs[0].metric].get("functions", {}),
            "metrics": metrics,
            "symbols": symbols,
            # Calls of the host's library functions: their work is not in the totals.
            "outside_calls": {demangle(name): n for name, n in outside},
            **({"unavailable": unavailable} if unavailable else {}),
        }
        print(json.dumps(doc, indent=2))
        return status
    for cost in costs:
        if cost.metric in missing:  # the model's metrics on one line, where its first would be
            names = [metric.name for metric in owner[cost.metric].metrics]
            if cost.metric == names[0]:
                print(f"\n{', '.join(names)}: unavailable", file=sys.stderr)
            continue
        print(f"\n{cost.metric}: {cost.total:,}", file=sys.stderr)
        listed = cost.top_functions(args.top)
        shown = readable_names(name for name, _ in listed)
        cells = [
            [shown[name], f"{value:,}", f"{100.0 * value / cost.total if cost.total else 0.0:5.1f}%"]
            for name, value in listed
        ]
        # Within the terminal's width: a name too long for its column goes on a line of its own.
        width = shutil.get_terminal_size().columns
        for line in texttable.render(None, cells, right={1, 2}, width=width, indent="  "):
            print(line, file=sys.stderr)
        if cost.regions:  # the program's INSTRBUDGET_REGION markers, inclusive
            print("  regions:", file=sys.stderr)
            rows = [[path, f"{value:,}"] for path, value in sorted(cost.regions.items())]
            for line in texttable.render(None, rows, right={1}, width=width, indent="    "):
                print(line, file=sys.stderr)
    if outside and args.top:
        print("calls outside the count (the host's library functions, not counted):", file=sys.stderr)
        shown = readable_names(name for name, _ in outside[: args.top])
        for name, n in outside[: args.top]:
            print(f"  {shown[name]}  x{n:,}", file=sys.stderr)
    for m in models:
        if m.name in unavailable:
            print(f"cbuild: {m.name} measured nothing: {unavailable[m.name]}", file=sys.stderr)
            for metric in (metric.name for metric in m.metrics if metric.name in limits):
                print(f"cbuild: --stop-at {metric}={limits[metric]} was not checked", file=sys.stderr)
    return status


def _show_warning(
    message: Warning | str, category: type[Warning], filename: str, lineno: int, file: Any = None, line: Any = None
) -> None:
    """A warning on stderr as the compiler's own diagnostics read (clang's text as it wrote it)."""
    text = str(message) if issubclass(category, CompilerWarning) else f"cbuild: warning: {message}"
    print(text, file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    program_args: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, program_args = argv[:cut], argv[cut + 1 :]
    args = parser().parse_args(argv)
    if program_args and args.command != "run":  # they would be dropped without a word
        print(
            f"cbuild: arguments after -- are the program's, for run alone: {shlex.join(program_args)}", file=sys.stderr
        )
        return 2
    try:
        if args.command == "pipeline":
            return _cmd_pipeline(args)
        if args.command == "diff":
            return _cmd_diff(args)
        if args.command == "history":
            return _cmd_history(args)
        if args.command == "warm":
            return _cmd_warm(args)
        if args.command == "cache":
            return _cmd_cache(args)
        if args.command == "merge":
            return _cmd_merge(args)
        if args.command == "baseline":
            return _cmd_baseline(args)
        if args.command == "include-dir":
            print(INCLUDE_DIR)
            return 0
        builder = Builder(cache_dir=args.cache_dir, clang=args.clang)
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            if args.command == "build":
                return _cmd_build(args, builder)
            return _cmd_run(args, builder, program_args)
    except CBuildError as exc:
        print(f"cbuild: {exc}", file=sys.stderr)
        if args.command == "run" and args.json:  # a script reading the document finds why there is none
            print(_error_document(exc))
        return 2
    except CompilerWarning as exc:  # warnings made errors (python -W error)
        print(f"cbuild: {exc}\ncbuild: the build stopped there: warnings are errors in this run", file=sys.stderr)
        return 2


def _terminated(signum: int, frame: object) -> None:
    """SIGTERM (a CI step's time limit, ``kill``): leave through the ``finally`` blocks, which end
    the program's process group, instead of dying at once and leaving the program running."""
    raise SystemExit(128 + signum)


def entry() -> int:
    """The ``cbuild`` script and ``python -m cbuild``: :func:`main`, and a reader that went away
    (``| head``) ends the command quietly, as it does other tools, with the status of SIGPIPE."""
    signal.signal(signal.SIGTERM, _terminated)
    try:
        status = main()
        sys.stdout.flush()
        sys.stderr.flush()
        return status
    except BrokenPipeError:
        # Python flushes both streams again at exit: into nothing, so that it says nothing.
        _into_nothing(sys.stdout, sys.stderr)
        return 141


def _into_nothing(*streams: Any) -> None:
    """Point ``streams`` at /dev/null: a reader that went away is written to no more."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in streams:
        with contextlib.suppress(OSError, ValueError):
            os.dup2(devnull, stream.fileno())
    os.close(devnull)
