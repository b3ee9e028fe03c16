"""``python -m cbuild``: build, run and measure C/C++ programs without pytest."""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from cbuild.build import Builder
from cbuild.demangle import demangle
from cbuild.errors import CBuildError
from cbuild.execute import run_program
from cbuild.models import default_registry
from cbuild.options import OPT_LEVELS, BuildOptions


def _add_build_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("sources", nargs="+", type=Path, help="C (.c) and C++ (.cc, .cpp, .cxx) sources")
    p.add_argument("-O", dest="opt_level", default="2", choices=OPT_LEVELS, help="optimisation level (default 2)")
    p.add_argument("-I", dest="include_dirs", action="append", default=[], type=Path, metavar="DIR")
    p.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME[=VALUE]")
    p.add_argument("--cflags", default="", metavar="'FLAGS'", help="extra C flags, e.g. --cflags='-std=c11 -Wall'")
    p.add_argument("--cxxflags", default="", metavar="'FLAGS'", help="extra C++ flags")
    p.add_argument("--ldflags", default="", metavar="'FLAGS'", help="extra link flags, e.g. --ldflags=-lpthread")
    p.add_argument("--no-instrument", action="store_true", help="same pipeline, no counting code")
    p.add_argument("--clang", default=None, help="a clang driver to use instead of the ziglang wheel's")
    p.add_argument("--cache-dir", type=Path, default=None, help="build cache (default ~/.cache/instrbudget)")


def _options(args: argparse.Namespace) -> BuildOptions:
    return BuildOptions(
        opt_level=args.opt_level,
        cflags=tuple(shlex.split(args.cflags)),
        cxxflags=tuple(shlex.split(args.cxxflags)),
        ldflags=tuple(shlex.split(args.ldflags)),
        include_dirs=tuple(d.resolve() for d in args.include_dirs),
        defines=tuple(args.defines),
        instrument=not args.no_instrument,
    )


def parser() -> argparse.ArgumentParser:
    """The command-line interface."""
    top = argparse.ArgumentParser(prog="python -m cbuild", description=__doc__)
    sub = top.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build", help="build an instrumented executable or shared library")
    _add_build_flags(build)
    build.add_argument("-o", dest="output", type=Path, required=True, help="output file")
    build.add_argument("--shared", action="store_true", help="build a shared library")
    run = sub.add_parser("run", help="build (cached), run, and print the program's cost")
    _add_build_flags(run)
    run.add_argument("--json", action="store_true", help="print a JSON document instead of the summary")
    run.add_argument("--top", type=int, default=10, help="functions to list (default 10)")
    run.add_argument("--timeout", type=float, default=None, help="seconds before the program is killed")
    return top


def _cmd_build(args: argparse.Namespace, builder: Builder) -> int:
    artifact = builder.build(args.sources, options=_options(args), kind="library" if args.shared else "program")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(artifact.path, args.output)
    shutil.copymode(artifact.path, args.output)
    sidecar = args.output.with_name(args.output.name + ".instrbudget.json")
    shutil.copyfile(artifact.table_path, sidecar)
    print(
        f"built {args.output} ({'instrumented' if artifact.instrumented else 'not instrumented'}); "
        f"block table {sidecar}",
        file=sys.stderr,
    )
    return 0


def _cmd_run(args: argparse.Namespace, builder: Builder, program_args: list[str]) -> int:
    artifact = builder.build(args.sources, options=_options(args), kind="program")
    result = run_program(
        artifact, program_args, input=b"" if sys.stdin.isatty() else sys.stdin.buffer.read(), timeout=args.timeout
    )
    sys.stdout.buffer.write(result.stdout)
    sys.stdout.flush()
    sys.stderr.buffer.write(result.stderr)
    sys.stderr.flush()
    if result.counts is None:
        return result.returncode
    model = default_registry().create("ir-count")
    (cost,) = model.evaluate(result.counts)
    if args.json:
        doc = {
            "returncode": result.returncode,
            "fingerprint": artifact.fingerprint,
            "metric": cost.metric,
            "total": cost.total,
            "functions": dict(sorted(cost.functions.items())),
        }
        print(json.dumps(doc, indent=2))
    else:
        print(f"\n{cost.metric}: {cost.total}", file=sys.stderr)
        top = [(demangle(name), value) for name, value in cost.top_functions(args.top)]
        width = max((len(name) for name, _ in top), default=0)
        for name, value in top:
            share = 100.0 * value / cost.total if cost.total else 0.0
            print(f"  {name:<{width}}  {value:>12}  {share:5.1f}%", file=sys.stderr)
    return result.returncode


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    program_args: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, program_args = argv[:cut], argv[cut + 1 :]
    args = parser().parse_args(argv)
    try:
        builder = Builder(cache_dir=args.cache_dir, clang=args.clang)
        if args.command == "build":
            return _cmd_build(args, builder)
        return _cmd_run(args, builder, program_args)
    except CBuildError as exc:
        print(f"cbuild: {exc}", file=sys.stderr)
        return 2
