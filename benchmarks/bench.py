"""Side-by-side figures for pytest-instrbudget, measured in one run.

    python benchmarks/bench.py            # full run (a few minutes)
    python benchmarks/bench.py --quick    # smaller inputs, fewer repeats

Prints three tables:
  1. run time of CPU-heavy C workloads: instrumented vs the same pipeline without
     counters (``--no-instrument``), and ``valgrind --tool=callgrind`` where installed;
  2. build time of a large C file (yyjson.c, 10k lines, from the ``yyjson`` sdist on
     PyPI): the instrumenting pipeline cold vs plain ``zig cc -O2 -c``, and a warm cache hit;
  3. the instruction counts themselves, to show they repeat exactly.
Times are the best of N runs (wall clock); ratios are computed from those.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from cbuild import Builder, BuildOptions, IrCountModel, run_program
from cbuild.execute import COUNTS_ENV

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MINIKIT = ROOT / "example_project"
MODEL = IrCountModel()


def best_of(n: int, fn: Callable[[], object]) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def fetch_yyjson(dest: Path) -> Path | None:
    """yyjson's sources from its PyPI sdist (a registry package), or None when offline."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--no-binary",
            ":all:",
            "yyjson==4.0.6",
            "-d",
            str(dest),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    archives = list(dest.glob("yyjson-*.tar.gz"))
    if proc.returncode != 0 or not archives:
        print(f"(yyjson sdist unavailable: {proc.stderr.strip()[-200:]})")
        return None
    with tarfile.open(archives[0]) as tar:
        tar.extractall(dest, filter="data")
    found = next(dest.glob("yyjson-*/yyjson/yyjson.c"), None)
    return found.parent if found else None


def time_command(cmd: list[str], stdin: bytes, env: dict[str, str] | None = None) -> float:
    """Wall time of one run of ``cmd``."""
    start = time.perf_counter()
    subprocess.run(cmd, input=stdin, capture_output=True, check=True, env=env)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller inputs and fewer repeats")
    args = parser.parse_args()
    repeats = 3 if args.quick else 5

    work = Path(tempfile.mkdtemp(prefix="instrbudget-bench-"))
    builder = Builder(cache_dir=work / "cache")
    yy = fetch_yyjson(work / "yyjson")
    include = (MINIKIT / "include").resolve()
    lib = [MINIKIT / "src" / f for f in ("json.c", "hashmap.c", "sort.c", "ringbuf.c")]
    workloads: list[tuple[str, list[Path], tuple[Path, ...], list[str]]] = [
        (
            "sort 6M ints (minikit)",
            [HERE / "workloads" / "sort_bench.c", *lib],
            (include,),
            ["1000000" if args.quick else "6000000"],
        ),
        (
            "json tokenise 1 MiB x200 (minikit)",
            [HERE / "workloads" / "json_bench.c", *lib],
            (include,),
            ["40" if args.quick else "200"],
        ),
        (
            "wordfreq 4.4M words (minikit)",
            [MINIKIT / "src" / "wordfreq.c", MINIKIT / "src" / "hashmap.c"],
            (include,),
            ["10"],
        ),
    ]
    if yy is not None:
        workloads.append(
            (
                "yyjson read 1 MiB x150",
                [HERE / "workloads" / "yyjson_bench.c", yy / "yyjson.c"],
                (yy,),
                ["30" if args.quick else "150"],
            )
        )
    words = b"lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor " * 400000
    if args.quick:
        words = words[: len(words) // 4]

    valgrind = shutil.which("valgrind")
    print("\n== Run time: instrumented vs the same pipeline without counters ==")
    header = f"{'workload':36} {'plain s':>8} {'instr s':>8} {'ratio':>6} {'callgrind s':>12} {'cg/instr':>9}"
    print(f"{header}  IR instructions")
    ratios = []
    for name, sources, incs, wargs in workloads:
        plain = builder.build(sources, options=BuildOptions(include_dirs=incs, instrument=False))
        instr = builder.build(sources, options=BuildOptions(include_dirs=incs))
        stdin = words if "wordfreq" in name else b""
        # Interleave so that machine noise hits both builds alike.
        t_plain: list[float] = []
        t_instr: list[float] = []
        env = dict(os.environ)
        counts_file = work / "counts"
        env[COUNTS_ENV] = str(counts_file)
        for _ in range(repeats):
            t_plain.append(time_command([str(plain.path), *wargs], stdin))
            t_instr.append(time_command([str(instr.path), *wargs], stdin, env))
        p, i = min(t_plain), min(t_instr)
        ratios.append(i / p)
        totals = set()
        for _ in range(2):
            res = run_program(instr, wargs, input=stdin, timeout=600)
            assert res.counts is not None
            totals.add(MODEL.evaluate(res.counts)[0].total)
        cg = ""
        cg_ratio = ""
        if valgrind:
            cmd = [valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", str(plain.path), *wargs]
            t_cg = time_command(cmd, stdin)
            cg, cg_ratio = f"{t_cg:.2f}", f"{t_cg / i:.1f}x"
        same = "repeats exactly" if len(totals) == 1 else f"DIFFER: {sorted(totals)}"
        print(f"{name:36} {p:8.3f} {i:8.3f} {i / p:5.2f}x {cg:>12} {cg_ratio:>9}  {min(totals):,} ({same})")
    print(f"{'geometric mean':36} {'':8} {'':8} {statistics.geometric_mean(ratios):5.2f}x")

    print("\n== Build time of a large C file ==")
    if yy is None:
        print("skipped: yyjson sources unavailable")
        return 0
    zig = builder.toolchain.cc
    src = yy / "yyjson.c"
    lines = sum(1 for _ in src.open(errors="replace"))

    def plain_build() -> None:
        with tempfile.TemporaryDirectory() as zcache:
            env = dict(os.environ, ZIG_LOCAL_CACHE_DIR=zcache)
            subprocess.run(
                [*zig, "-target", builder.toolchain.triple, "-O2", "-c", str(src), "-o", str(work / "yyjson.o")],
                check=True,
                env=env,
                capture_output=True,
            )

    def pipeline_cold() -> None:
        with tempfile.TemporaryDirectory() as cache:
            Builder(cache_dir=Path(cache), progress=lambda m: None).build([src], kind="library")

    n = 1 if args.quick else 3
    t_plain = best_of(n, plain_build)
    t_cold = best_of(n, pipeline_cold)
    warm_builder = Builder(cache_dir=work / "warm", progress=lambda m: None)
    warm_builder.build([src], kind="library")
    t_warm = best_of(20, lambda: warm_builder.build([src], kind="library"))
    print(f"file: yyjson.c ({lines:,} lines), -O2")
    print(f"plain `zig cc -O2 -c`            {t_plain:7.2f} s")
    print(f"pipeline cold (IR, instrument, codegen, link) {t_cold:7.2f} s   ratio {t_cold / t_plain:.2f}x")
    print(f"pipeline warm cache hit          {t_warm * 1000:7.1f} ms")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
