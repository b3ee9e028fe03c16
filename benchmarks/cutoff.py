"""What a deterministic cut-off costs, measured side by side in one run.

    python benchmarks/cutoff.py            # full inputs
    python benchmarks/cutoff.py --quick    # smaller inputs, fewer repeats

Prints:
  1. run time of the four workloads: a cut-off build (checks at every function entry
     and loop head) with a limit it never reaches, against the ordinary instrumented
     build, runs interleaved, best of N; and whether both counted the same;
  2. the time from starting an endless loop with a cut-off of 10^6 IR instructions to
     the CodeStopped exception (program start, the stop, reading the stop record and
     naming the function and callers): the first stop of a process (which reads the
     binary's symbol and line tables) and the median of later ones; and the same
     measured as the program's process alone.
Writes the same, after the date, machine, commit and command, to ``benchmarks/results/cutoff.txt``
(a ``--quick`` run too: its header's command says so).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import fetch_yyjson, make_workloads, stdin_words, time_command
from provenance import header_lines

from cbuild import Builder, BuildOptions, run_program
from cbuild.run.program import COUNTS_ENV
from cbuild.run.stops import CodeStopped

RESULTS = Path(__file__).resolve().parent / "results" / "cutoff.txt"

ENDLESS = r"""
static volatile unsigned long sink;
__attribute__((noinline)) static void parse_value(void) { for (;;) sink++; }
int main(void) { parse_value(); return 0; }
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller inputs and fewer repeats")
    args = parser.parse_args()
    repeats = 3 if args.quick else 5
    lines: list[str] = []

    def say(text: str) -> None:
        print(text, flush=True)
        lines.append(text)

    work = Path(tempfile.mkdtemp(prefix="instrbudget-cutoff-"))
    builder = Builder(cache_dir=work / "cache")
    words = stdin_words(quick=args.quick)

    say("== Run time: cut-off build (limit set, never reached) vs the ordinary instrumented build ==")
    say(f"{'workload':36} {'instr s':>8} {'cut-off s':>9} {'ratio':>6}  counts")
    ratios = []
    for name, sources, incs, wargs in make_workloads(fetch_yyjson(work / "yyjson", say), quick=args.quick):
        ordinary = builder.build(sources, options=BuildOptions(include_dirs=incs))
        checked = builder.build(sources, options=BuildOptions(include_dirs=incs, cutoff=True))
        stdin = words if "wordfreq" in name else b""
        counts = work / "counts"
        env = dict(os.environ, **{COUNTS_ENV: str(counts)})
        counts.with_name("counts.limits").write_text(f"0 {2**62}\n")  # armed, far away
        t_ordinary, t_checked = [], []
        for _ in range(repeats):
            t_ordinary.append(time_command([str(ordinary.path), *wargs], stdin, env))
            t_checked.append(time_command([str(checked.path), *wargs], stdin, env))
        counts.with_name("counts.limits").unlink()
        same = (
            run_program(ordinary, wargs, input=stdin, timeout=600).counts.counts  # type: ignore[union-attr]
            == run_program(checked, wargs, input=stdin, timeout=600, max_instr=2**62).counts.counts  # type: ignore[union-attr]
        )
        o, c = min(t_ordinary), min(t_checked)
        ratios.append(c / o)
        say(f"{name:36} {o:8.3f} {c:9.3f} {c / o:5.2f}x  {'the same' if same else 'DIFFER'}")
    say(f"{'geometric mean':36} {'':8} {'':9} {statistics.geometric_mean(ratios):5.2f}x")

    say("\n== Start to failure: an endless loop with a cut-off of 10^6 IR instructions ==")
    src = work / "endless.c"
    src.write_text(ENDLESS)
    endless = builder.build([src], options=BuildOptions(cutoff=True))
    times = []
    message = ""
    for _ in range(1 + 4 * repeats):
        start = time.perf_counter()
        try:
            run_program(endless, max_instr=10**6)
        except CodeStopped as exc:
            message = str(exc)
        times.append(time.perf_counter() - start)
    (work / "counts.limits").write_text("0 1000000\n")
    env = dict(os.environ, **{COUNTS_ENV: str(work / "counts")})
    process = []
    for _ in range(4 * repeats):
        start = time.perf_counter()
        proc = subprocess.run([str(endless.path)], env=env, capture_output=True, check=False)
        process.append(time.perf_counter() - start)
    say(f"  {message}")
    say(f"  run_program to CodeStopped, first in the process: {times[0] * 1000:7.1f} ms")
    say(f"  run_program to CodeStopped, median of later ones: {statistics.median(times[1:]) * 1000:7.1f} ms")
    say(
        f"  the program's process alone (exit status {proc.returncode}), median: "
        f"{statistics.median(process) * 1000:7.1f} ms"
    )
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text("\n".join([*header_lines(), "", *lines]) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
