"""Side-by-side figures for pytest-instrbudget, measured in one run.

    python benchmarks/bench.py            # full run (a few minutes)
    python benchmarks/bench.py --quick    # smaller inputs, fewer repeats

Prints these tables:
  1. run time of CPU-heavy C workloads: instrumented (ir-count) vs the same pipeline
     without counters (``--no-instrument``), with call tracking for inclusive costs and
     profiles vs the ir-count run, and ``valgrind --tool=callgrind`` where installed,
     with the instruction counts themselves, to show they repeat exactly;
  2. run time with the ``pipeline`` and the ``zkvm`` models active vs the plain program;
  3. build time of a large C file (yyjson.c, 10k lines, from the ``yyjson`` sdist on
     PyPI): the instrumenting pipeline cold vs plain ``zig cc -O2 -c``, a warm cache hit,
     and the static phase of the pipeline and zkvm models;
  4. the zkvm model against an RV32IM emulator (unicorn): user cycles vs executed
     instructions of the same programs, and the time each takes.
Times are the best of N runs (wall clock); ratios are computed from those. Writes the same,
after the date, machine, commit and command, to ``benchmarks/results/bench.txt`` (a ``--quick``
run too: its header's command says so).
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

from provenance import header_lines

from cbuild import Builder, BuildOptions, IrCountModel, run_program
from cbuild.models import CostModel, default_registry
from cbuild.run.program import COUNTS_ENV

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results" / "bench.txt"
MINIKIT = ROOT / "example_project"
MODEL = IrCountModel()
#: What :func:`say` printed, for the results file.
OUTPUT: list[str] = []


def say(text: str) -> None:
    """Print ``text`` and keep it for the results file."""
    print(text, flush=True)
    OUTPUT.append(text)


def best_of(n: int, fn: Callable[[], object]) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def fetch_yyjson(dest: Path, say: Callable[[str], None] = print) -> Path | None:
    """yyjson's sources from its PyPI sdist (a registry package), or None when offline (said with ``say``)."""
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
        say(f"(yyjson sdist unavailable: {proc.stderr.strip()[-200:]})")
        return None
    with tarfile.open(archives[0]) as tar:
        tar.extractall(dest, filter="data")
    found = next(dest.glob("yyjson-*/yyjson/yyjson.c"), None)
    return found.parent if found else None


Workload = tuple[str, list[Path], tuple[Path, ...], list[str]]


def make_workloads(yy: Path | None, *, quick: bool) -> list[Workload]:
    """The four CPU-heavy workloads: (name, sources, include dirs, arguments); yyjson when its sdist came."""
    include = (MINIKIT / "include").resolve()
    lib = [MINIKIT / "src" / f for f in ("json.c", "hashmap.c", "sort.c", "ringbuf.c")]
    workloads: list[Workload] = [
        (
            "sort 6M ints (minikit)",
            [HERE / "workloads" / "sort_bench.c", *lib],
            (include,),
            ["1000000" if quick else "6000000"],
        ),
        (
            "json tokenise 1 MiB x200 (minikit)",
            [HERE / "workloads" / "json_bench.c", *lib],
            (include,),
            ["40" if quick else "200"],
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
                ["30" if quick else "150"],
            )
        )
    return workloads


def stdin_words(*, quick: bool) -> bytes:
    """The wordfreq workload's input."""
    words = b"lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor " * 400000
    return words[: len(words) // 4] if quick else words


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
    yy = fetch_yyjson(work / "yyjson", say)
    workloads = make_workloads(yy, quick=args.quick)
    words = stdin_words(quick=args.quick)

    valgrind = shutil.which("valgrind")
    say("\n== Run time: instrumented vs the same pipeline without counters ==")
    header = (
        f"{'workload':36} {'plain s':>8} {'instr s':>8} {'ratio':>6} {'calls s':>8} {'/instr':>7} "
        f"{'callgrind s':>12} {'cg/instr':>9}"
    )
    say(f"{header}  IR instructions")
    ratios = []
    call_ratios = []
    for name, sources, incs, wargs in workloads:
        plain = builder.build(sources, options=BuildOptions(include_dirs=incs, instrument=False))
        instr = builder.build(sources, options=BuildOptions(include_dirs=incs))
        calls = builder.build(sources, options=BuildOptions(include_dirs=incs, calls=True))
        stdin = words if "wordfreq" in name else b""
        # Interleave so that machine noise hits both builds alike.
        t_plain: list[float] = []
        t_instr: list[float] = []
        t_calls: list[float] = []
        env = dict(os.environ)
        counts_file = work / "counts"
        env[COUNTS_ENV] = str(counts_file)
        for _ in range(repeats):
            t_plain.append(time_command([str(plain.path), *wargs], stdin))
            t_instr.append(time_command([str(instr.path), *wargs], stdin, env))
            t_calls.append(time_command([str(calls.path), *wargs], stdin, env))
        p, i, k = min(t_plain), min(t_instr), min(t_calls)
        ratios.append(i / p)
        call_ratios.append(k / i)
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
        say(
            f"{name:36} {p:8.3f} {i:8.3f} {i / p:5.2f}x {k:8.3f} {k / i:6.2f}x {cg:>12} {cg_ratio:>9}  "
            f"{min(totals):,} ({same})"
        )
    say(
        f"{'geometric mean':36} {'':8} {'':8} {statistics.geometric_mean(ratios):5.2f}x {'':8} "
        f"{statistics.geometric_mean(call_ratios):6.2f}x"
    )

    say("\n== Run time with the dynamic cost models vs the plain program ==")
    registry = default_registry()
    pipeline, zkvm = registry.create("pipeline"), registry.create("zkvm")
    say(f"{'workload':36} {'plain s':>8} {'pipeline s':>10} {'ratio':>6} {'zkvm s':>8} {'ratio':>6}")
    model_ratios: dict[str, list[float]] = {"pipeline": [], "zkvm": []}
    for name, sources, incs, wargs in workloads:
        options = BuildOptions(include_dirs=incs)
        plain = builder.build(sources, options=BuildOptions(include_dirs=incs, instrument=False))
        with_pipeline = builder.build(sources, options=options, models=[pipeline])
        with_zkvm = builder.build(sources, options=options, models=[zkvm])
        stdin = words if "wordfreq" in name else b""
        env = dict(os.environ, **{COUNTS_ENV: str(work / "counts")})
        times: dict[str, list[float]] = {"plain": [], "pipeline": [], "zkvm": []}
        for _ in range(repeats):
            times["plain"].append(time_command([str(plain.path), *wargs], stdin))
            times["pipeline"].append(time_command([str(with_pipeline.path), *wargs], stdin, env))
            times["zkvm"].append(time_command([str(with_zkvm.path), *wargs], stdin, env))
        p, tp, tz = min(times["plain"]), min(times["pipeline"]), min(times["zkvm"])
        model_ratios["pipeline"].append(tp / p)
        model_ratios["zkvm"].append(tz / p)
        say(f"{name:36} {p:8.3f} {tp:10.3f} {tp / p:5.2f}x {tz:8.3f} {tz / p:5.2f}x")
    say(
        f"{'geometric mean':36} {'':8} {'':10} {statistics.geometric_mean(model_ratios['pipeline']):5.2f}x "
        f"{'':8} {statistics.geometric_mean(model_ratios['zkvm']):5.2f}x"
    )
    emulator_table(builder, work)

    say("\n== Build time of a large C file ==")
    if yy is None:
        say("skipped: yyjson sources unavailable")
    else:
        build_table(builder, yy, work, quick=args.quick)
    shutil.rmtree(work, ignore_errors=True)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text("\n".join([*header_lines(), "", "\n".join(OUTPUT).lstrip("\n")]) + "\n")
    return 0


def build_table(builder: Builder, yy: Path, work: Path, *, quick: bool) -> None:
    """Build time of yyjson.c: plain, the instrumenting pipeline cold and warm, the models' static phase."""
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

    n = 1 if quick else 3
    t_plain = best_of(n, plain_build)
    t_cold = best_of(n, pipeline_cold)
    warm_builder = Builder(cache_dir=work / "warm", progress=lambda m: None)
    warm_builder.build([src], kind="library")
    t_warm = best_of(20, lambda: warm_builder.build([src], kind="library"))
    say(f"file: yyjson.c ({lines:,} lines), -O2")
    say(f"plain `zig cc -O2 -c`            {t_plain:7.2f} s")
    say(f"pipeline cold (IR, instrument, codegen, link) {t_cold:7.2f} s   ratio {t_cold / t_plain:.2f}x")
    say(f"pipeline warm cache hit          {t_warm * 1000:7.1f} ms")

    def with_models(models: list[CostModel]) -> Callable[[], None]:
        def build() -> None:
            with tempfile.TemporaryDirectory() as cache:
                b = Builder(cache_dir=Path(cache), progress=lambda m: None)
                b.build([src], kind="library", models=models)

        return build

    registry = default_registry()
    for label, models in (
        ("+ pipeline model (static phase)", [registry.create("pipeline")]),
        ("+ zkvm model (static phase)", [registry.create("zkvm")]),
    ):
        t_model = best_of(1 if quick else 2, with_models(models))
        say(f"pipeline cold {label:33} {t_model:7.2f} s   vs ir-count only {t_model / t_cold:.2f}x")


ZK_WORKLOADS = {"zk_sort": ["sort.c"], "zk_json": ["json.c"], "zk_hashmap": ["hashmap.c"]}


def emulator_table(builder: Builder, work: Path) -> None:
    """The zkvm model's user cycles against an RV32IM emulator running the same programs."""
    say("\n== zkvm model vs RV32IM emulator (unicorn) ==")
    sys.path.insert(0, str(ROOT / "tests"))  # the reference emulator lives with the tests
    try:
        import rv32emu  # type: ignore[import-not-found, unused-ignore]  # tests/rv32emu.py
    except ImportError as exc:  # pragma: no cover - unicorn is optional
        say(f"skipped: {exc}")
        return
    # The estimate from IR (execute = false), user functions only: the emulator's count leaves libc out.
    zkvm = default_registry().create("zkvm", {"execute": False})
    include = (MINIKIT / "include").resolve()
    say(
        f"{'program':12} {'model user':>11} {'emulator':>11} {'error':>7} {'paging':>8} {'total':>9} "
        f"{'run s':>7} {'emulate s':>10}"
    )
    for name, srcs in ZK_WORKLOADS.items():
        sources = [HERE / "workloads" / f"{name}.c", *(MINIKIT / "src" / s for s in srcs)]
        # Without the counted C library: the estimate then leaves libc out, as the emulator's count does.
        options = BuildOptions(include_dirs=(include,), count_libraries=False)
        artifact = builder.build(sources, options=options, models=[zkvm])
        start = time.perf_counter()
        run = run_program(artifact)
        t_run = time.perf_counter() - start
        assert run.counts is not None
        costs = {c.metric: c.total for c in zkvm.evaluate(run.counts)}
        elf = rv32emu.build_rv32(sources, work / f"{name}.elf", include_dirs=[include])
        names = [f.name for f in rv32emu.user_functions(elf, rv32emu.object_files(elf))]
        start = time.perf_counter()
        emulated = rv32emu.emulate(elf, count_functions=names)
        t_emu = time.perf_counter() - start
        reference = sum(emulated.instructions_by_function.values())
        user = costs["zk_user_cycles"]
        say(
            f"{name:12} {user:11,} {reference:11,} {100 * (user - reference) / reference:+6.2f}% "
            f"{costs['zk_paging_cycles']:8,} {costs['zk_cycles']:9,} {t_run:7.3f} {t_emu:10.2f}"
        )


if __name__ == "__main__":
    raise SystemExit(main())
