"""What counting the libraries costs and how its counts compare, measured side by side in one run.

    .venv/bin/python benchmarks/libraries.py            # full inputs, medians of 7 interleaved runs
    .venv/bin/python benchmarks/libraries.py --quick    # smaller inputs, medians of 3

Instrumented builds link the counted C library (cbuild/libc: mem*/str*, the fixed-address
malloc, qsort, strto*) and, in C++ builds, the counted parts of libc++ (cbuild/build/libcxx.py);
``BuildOptions(instrument=False)`` is the plain program with the host's libraries. Prints:
  1. run time of the counted build against the plain build on bench.py's workloads, a string-
     and allocation-heavy C program (workloads/strings_bench.c), a formatting one
     (workloads/format_bench.c), a math one (workloads/math_bench.c) and a libc++ one
     (workloads/sort_strings.cc): medians of interleaved runs, the ratio per workload and
     the geometric mean, and the counted total of two runs of each (they must be equal);
  2. the counted total (ir_instructions) against ``valgrind --tool=callgrind``'s Ir total of the
     plain build, same arguments and stdin, on eight small programs: sort_strings.cc, a zstd round
     trip (the zstandard sdist's zstd.c), the quadratic strlen loop, strings_bench.c,
     format_bench.c (snprintf, sscanf, strtod), math_bench.c (exp, log, erfc, sin, cos, pow), and two of
     bench.py's workloads; where the ratio is outside 0.5x-2x, the functions that dominate each side;
  3. the cold cost of the counted libraries: building the counted libc++ IR (and the counted C
     library's) in a fresh cache, a first counted C++ build of sort_strings.cc there, a first
     build with ``count_libraries=False`` in another fresh cache, and a warm rebuild (cache hit).
Everything printed also goes to benchmarks/results/libraries.txt, after the date, machine,
commit and command. No assertions on times: the script prints, the reader judges.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for _path in (ROOT, HERE, ROOT / "tests"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import pytest  # noqa: E402  (tests/sdists.py reports a failed download as a pytest outcome)
from bench import fetch_yyjson, make_workloads, stdin_words, time_command  # noqa: E402
from provenance import header_lines  # noqa: E402
from sdists import sdist  # noqa: E402  (tests/sdists.py: PyPI sdists, downloaded once)

from cbuild import Builder, BuildOptions, IrCountModel, run_program  # noqa: E402
from cbuild.build.builder import Artifact  # noqa: E402
from cbuild.build.demangle import demangle  # noqa: E402
from cbuild.build.libc import libc_ir  # noqa: E402
from cbuild.build.libcxx import libcxx_ir  # noqa: E402
from cbuild.errors import CBuildError  # noqa: E402
from cbuild.run.program import COUNTS_ENV, DEFAULT_ENV  # noqa: E402

WORKLOADS = HERE / "workloads"
RESULTS = HERE / "results" / "libraries.txt"
MODEL = IrCountModel()
#: The callgrind ratios outside this range get a breakdown by function.
EXPECTED_RATIO = (0.5, 2.0)
TOP_FUNCTIONS = 6


def quiet(message: str) -> None:
    """A Builder progress callback that says nothing."""


# ----------------------------------------------------------------------------------------------
# Output
# ----------------------------------------------------------------------------------------------


class Report:
    """Prints lines and writes them to the results file as they come."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.handle: IO[str] = path.open("w")

    def __call__(self, line: str = "") -> None:
        print(line, flush=True)
        self.handle.write(line + "\n")
        self.handle.flush()

    def close(self) -> None:
        self.handle.close()


# ----------------------------------------------------------------------------------------------
# Programs
# ----------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Program:
    """A program to build and run: sources, include directories, arguments and stdin."""

    name: str
    sources: tuple[Path, ...]
    includes: tuple[Path, ...] = ()
    args: tuple[str, ...] = ()
    stdin: bytes = b""

    def options(self, **kw: Any) -> BuildOptions:
        return BuildOptions(include_dirs=self.includes, **kw)

    @property
    def shown_args(self) -> str:
        return " ".join(self.args)

    def build(self, builder: Builder, **kw: Any) -> Artifact:
        return builder.build(list(self.sources), options=self.options(**kw))

    def with_args(self, *args: str, name: str, stdin: bytes | None = None) -> Program:
        return dataclasses.replace(self, name=name, args=args, stdin=self.stdin if stdin is None else stdin)


def fetch(name: str, version: str) -> Path | None:
    """An unpacked PyPI sdist (tests/sdists.py), or None with a message when it cannot be had."""
    try:
        return sdist(name, version)
    except (pytest.skip.Exception, pytest.fail.Exception) as exc:
        print(f"({name} {version} sdist unavailable: {exc})")
        return None


def bench_programs(*, quick: bool, work: Path) -> list[Program]:
    """bench.py's workloads (yyjson when its sdist comes)."""
    top = fetch("yyjson", "4.0.6")
    yy = top / "yyjson" if top is not None else fetch_yyjson(work / "yyjson")
    words = stdin_words(quick=quick)
    return [
        Program(title, tuple(sources), tuple(incs), tuple(args), words if "wordfreq" in title else b"")
        for title, sources, incs, args in make_workloads(yy, quick=quick)
    ]


def strings_bench(n: int, rounds: int) -> Program:
    return Program(
        f"strings {n}x{rounds} (strings_bench.c)", (WORKLOADS / "strings_bench.c",), (), (str(n), str(rounds))
    )


def format_bench(n: int, rounds: int) -> Program:
    return Program(f"format {n}x{rounds} (format_bench.c)", (WORKLOADS / "format_bench.c",), (), (str(n), str(rounds)))


def math_bench(n: int, rounds: int) -> Program:
    return Program(f"math {n}x{rounds} (math_bench.c)", (WORKLOADS / "math_bench.c",), (), (str(n), str(rounds)))


def sort_strings(n: int) -> Program:
    return Program(f"sort+to_string {n} (sort_strings.cc)", (WORKLOADS / "sort_strings.cc",), (), (str(n),))


def callgrind_programs(bench: list[Program]) -> list[Program]:
    """Eight programs small enough for callgrind to take seconds."""
    programs = [sort_strings(100_000)]
    zstd = fetch("zstandard", "0.25.0")
    if zstd is not None:
        programs.append(
            Program(
                "zstd round trip 128 KiB x2",
                (WORKLOADS / "zstd_roundtrip.c", zstd / "zstd" / "zstd.c"),
                (zstd / "zstd",),
                ("131072", "2"),
            )
        )
    programs.append(Program("quadratic strlen 4000", (WORKLOADS / "quadratic_strlen.c",), (), ("4000",)))
    programs.append(strings_bench(20_000, 2))
    programs.append(format_bench(20_000, 1))
    programs.append(math_bench(20_000, 1))
    by_kind = {p.name.split()[0]: p for p in bench}
    programs.append(by_kind["sort"].with_args("300000", name="sort 300k ints (bench.py sort_bench)"))
    words = b"lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor " * 10_000
    programs.append(by_kind["wordfreq"].with_args("10", stdin=words, name="wordfreq 120k words (bench.py)"))
    return programs


# ----------------------------------------------------------------------------------------------
# Measuring
# ----------------------------------------------------------------------------------------------


def counted_total(artifact: Artifact, program: Program) -> tuple[int, dict[str, int]]:
    """The ir_instructions total of one run, and the functions' exclusive counts."""
    result = run_program(artifact, program.args, input=program.stdin, timeout=3600)
    if result.returncode != 0:
        raise RuntimeError(f"exit status {result.returncode}: {result.stderr.decode(errors='replace')[-300:]}")
    assert result.counts is not None
    (cost,) = MODEL.evaluate(result.counts)
    return cost.total, cost.functions


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def overhead_table(out: Report, builder: Builder, programs: list[Program], repeats: int, work: Path) -> None:
    out("== 1. Run time: counted build (counted libraries) vs plain build (instrument=False, host libc) ==")
    out(f"medians of {repeats} interleaved runs each (wall clock); counted totals of two run_program runs")
    out(
        f"{'workload':40} {'args':>9} {'plain s':>8} {'counted s':>9} {'ratio':>7} "
        f"{'ir_instructions run 1':>22} {'run 2':>16}"
    )
    ratios: list[float] = []
    env = dict(os.environ, **{COUNTS_ENV: str(work / "counts")})
    for program in programs:
        try:
            plain = program.build(builder, instrument=False)
            counted = program.build(builder)
            t_plain: list[float] = []
            t_counted: list[float] = []
            for i in range(repeats):
                runs = [(t_plain, plain, None), (t_counted, counted, env)]
                for times, artifact, run_env in runs if i % 2 == 0 else runs[::-1]:
                    times.append(time_command([str(artifact.path), *program.args], program.stdin, run_env))
            first, _ = counted_total(counted, program)
            second, _ = counted_total(counted, program)
        except (CBuildError, subprocess.CalledProcessError, RuntimeError) as exc:
            out(f"{program.name:40} {program.shown_args:>9} FAILED: {_short(exc)}")
            continue
        p, c = statistics.median(t_plain), statistics.median(t_counted)
        ratios.append(c / p)
        same = "equal" if first == second else "DIFFER"
        out(
            f"{program.name:40} {program.shown_args:>9} {p:8.3f} {c:9.3f} {c / p:6.2f}x "
            f"{first:22,} {second:16,}  {same}"
        )
    if ratios:
        out(f"{'geometric mean':40} {'':9} {'':8} {'':9} {statistics.geometric_mean(ratios):6.2f}x")


def _short(exc: BaseException) -> str:
    if isinstance(exc, subprocess.CalledProcessError):
        stderr = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else str(exc.stderr)
        return f"exit status {exc.returncode}: {stderr.strip()[-300:]}"
    return " ".join(str(exc).split())[:400]


def callgrind_total(valgrind: str, artifact: Artifact, program: Program, out_file: Path) -> tuple[int, float]:
    """Callgrind's Ir total of one run of ``artifact`` (its "totals:" or "summary:" line), and the run's time."""
    cmd = [valgrind, "--tool=callgrind", f"--callgrind-out-file={out_file}", str(artifact.path), *program.args]
    start = time.perf_counter()
    subprocess.run(cmd, input=program.stdin, capture_output=True, check=True, env=DEFAULT_ENV)
    return file_total(out_file), time.perf_counter() - start


def file_total(out_file: Path) -> int:
    """The Ir total of a callgrind output file: its "totals:" line, else its "summary:" line."""
    found: dict[str, int] = {}
    for line in out_file.read_text(errors="replace").splitlines():
        key, _, value = line.partition(":")
        if key in ("totals", "summary") and value.split():
            found[key] = int(value.split()[0])
    if not found:
        raise RuntimeError(f"no totals or summary line in {out_file}")
    return found["totals"] if "totals" in found else found["summary"]


_ANNOTATED = re.compile(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.+?)\s*$")


def callgrind_functions(out_file: Path) -> list[tuple[int, str]]:
    """The functions callgrind_annotate lists first (exclusive Ir), as (Ir, file:function [object])."""
    annotate = shutil.which("callgrind_annotate")
    if annotate is None:
        return []
    proc = subprocess.run([annotate, "--inclusive=no", str(out_file)], capture_output=True, text=True, check=False)
    rows = []
    for line in proc.stdout.splitlines():
        found = _ANNOTATED.match(line)
        if found and "PROGRAM TOTALS" not in found.group(2):
            rows.append((int(found.group(1).replace(",", "")), found.group(2)))
    return rows[:TOP_FUNCTIONS]


def callgrind_table(out: Report, builder: Builder, programs: list[Program], work: Path) -> None:
    out("== 2. Counted total (ir_instructions, counted libraries) vs callgrind Ir of the plain build ==")
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        out("skipped: valgrind is not installed")
        return
    version = subprocess.run([valgrind, "--version"], capture_output=True, text=True, check=False).stdout.strip()
    out(f"{version}; the plain build runs under callgrind with the same arguments and stdin")
    out(
        f"{'program':40} {'ir_instructions':>15} {'callgrind Ir':>15} {'tool/cg':>8} "
        f"{'run_program s':>13} {'callgrind s':>11}"
    )
    outliers: list[tuple[Program, float, dict[str, int], int, Path]] = []
    for n, program in enumerate(programs):
        out_file = work / f"callgrind.{n}.out"
        try:
            plain = program.build(builder, instrument=False)
            counted = program.build(builder)
            start = time.perf_counter()
            total, functions = counted_total(counted, program)
            t_run = time.perf_counter() - start
            cg, t_cg = callgrind_total(valgrind, plain, program, out_file)
        except (CBuildError, subprocess.CalledProcessError, RuntimeError) as exc:
            out(f"{program.name:40} FAILED: {_short(exc)}")
            continue
        ratio = total / cg
        out(f"{program.name:40} {total:15,} {cg:15,} {ratio:7.2f}x {t_run:13.2f} {t_cg:11.2f}")
        if not EXPECTED_RATIO[0] <= ratio <= EXPECTED_RATIO[1]:
            outliers.append((program, ratio, functions, total, out_file))
    for program, ratio, functions, total, out_file in outliers:
        out()
        out(f"{program.name}: tool/callgrind {ratio:.2f}x, outside {EXPECTED_RATIO[0]}x-{EXPECTED_RATIO[1]}x")
        out(f"  this tool's functions (exclusive ir_instructions, of {total:,}):")
        for name, count in sorted(functions.items(), key=lambda kv: -kv[1])[:TOP_FUNCTIONS]:
            out(f"    {count:15,} {100 * count / total:5.1f}%  {_clip(demangle(name))}")
        cg_total = file_total(out_file)
        out(f"  callgrind's functions (exclusive Ir, of {cg_total:,}):")
        for count, name in callgrind_functions(out_file):
            out(f"    {count:15,} {100 * count / cg_total:5.1f}%  {_clip(name)}")


def _clip(text: str, width: int = 100) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def cold_table(out: Report, program: Program, work: Path, repeats: int) -> None:
    out("== 3. Cold cost of the counted libraries (fresh, empty cache directories) ==")
    cold = Builder(cache_dir=work / "cold-cache", progress=quiet)
    out("(zig's own build of libc++ for linking C++ programs lives in zig's global cache, warm by now)")
    libcxx: list[Path | None] = []
    t_libcxx = timed(lambda: libcxx.append(libcxx_ir(cold.toolchain, cold.cache)))
    if libcxx[0] is None:
        out("skipped: this toolchain's C++ library is not the libc++ the ziglang wheel ships sources of")
        return
    size = libcxx[0].stat().st_size
    out(f"{'counted libc++ IR (libcxx_ir), fresh cache':56} {t_libcxx:8.2f} s   ({size / 1e6:.1f} MB of IR)")
    t_libc = timed(lambda: libc_ir(cold.toolchain, cold.cache))
    out(f"{'counted C library IR (libc_ir), same cache':56} {t_libc:8.2f} s")
    t_first = timed(lambda: program.build(cold))
    out(f"{'first counted build of sort_strings.cc, same cache':56} {t_first:8.2f} s   (library IR already there)")
    uncounted = Builder(cache_dir=work / "cold-cache-uncounted", progress=quiet)
    t_uncounted = timed(lambda: program.build(uncounted, count_libraries=False))
    out(f"{'first build, count_libraries=False, another fresh cache':56} {t_uncounted:8.2f} s")
    t_all = t_libcxx + t_libc + t_first
    out(f"{'  counted from nothing (libc++ + libc + build)':56} {t_all:8.2f} s   {t_all / t_uncounted:.2f}x")
    warm = statistics.median(timed(lambda: program.build(cold)) for _ in range(repeats))
    out(f"{'warm rebuild (cache hit), median':56} {warm * 1000:8.1f} ms")
    fresh_process = Builder(cache_dir=work / "cold-cache", progress=quiet)
    warm_new = timed(lambda: program.build(fresh_process))
    out(f"{'warm rebuild with a new Builder on that cache':56} {warm_new * 1000:8.1f} ms")


# ----------------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller inputs and fewer repeats")
    parser.add_argument(
        "--cache-dir", type=Path, help="build cache for tables 1 and 2 (default: a temporary one); 3 uses fresh ones"
    )
    parser.add_argument("--output", type=Path, default=RESULTS, help=f"results file (default: {RESULTS})")
    args = parser.parse_args()
    quick: bool = args.quick
    repeats = 3 if quick else 7

    out = Report(args.output)
    for line in header_lines():
        out(line)
    out()
    work = Path(tempfile.mkdtemp(prefix="instrbudget-libraries-"))
    try:
        builder = Builder(cache_dir=args.cache_dir or work / "cache")
        bench = bench_programs(quick=quick, work=work)
        programs = [
            *bench,
            strings_bench(100_000, 3) if quick else strings_bench(200_000, 10),
            format_bench(50_000, 1) if quick else format_bench(200_000, 3),
            math_bench(100_000, 1) if quick else math_bench(200_000, 5),
            sort_strings(300_000) if quick else sort_strings(2_000_000),
        ]
        overhead_table(out, builder, programs, repeats, work)
        out()
        callgrind_table(out, builder, callgrind_programs(bench), work)
        out()
        cold_table(out, sort_strings(1000), work, 5 if quick else 20)
    except Exception:
        out(traceback.format_exc().rstrip())
        raise
    finally:
        out.close()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
