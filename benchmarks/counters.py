"""What counting costs single-threaded code: this tree's counters against an earlier version's, side by side.

    python benchmarks/counters.py                 # against the shared counters (before per-thread ones)
    python benchmarks/counters.py --ref REF --repeat 31

Builds bench.py's four CPU-heavy workloads plainly and instrumented (ir-count) with this
tree, and instrumented with the engine at git REF (checked out in a temporary worktree,
built in a subprocess with it on PYTHONPATH). Then runs the three binaries of each workload
in turn, REPEAT rounds, and prints each one's best time against the plain program's, and
the geometric means: the difference is what the change of engine costs. Both count the
program's own code only (``count_libraries = false`` where the option exists), so that they
count the same work: the IR instruction counts of both instrumented builds are printed too,
and differ only where the engines compile the same source differently. Writes
the same, after the date, machine, commit and command, to ``benchmarks/results/counters.txt``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import Workload, fetch_yyjson, make_workloads, stdin_words
from provenance import header_lines

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "counters.txt"
#: The last commit whose threads shared one counter array.
DEFAULT_REF = "b5e4da1"

#: Run by each engine (PYTHONPATH) to build the workloads ([[name, sources, include dirs], ...] as JSON
#: in argv[3]): prints {name: binary} as JSON. It imports nothing but ``cbuild``'s top level: bench.py
#: imports this tree's modules, which the engine at REF may not have.
BUILD = """
import dataclasses, json, shutil, sys
from pathlib import Path
import cbuild
from cbuild import Builder, BuildOptions
# The C library counted or not, the same in both engines (an engine from before counted libraries
# has no such option and counts none).
same = {"count_libraries": False} if "count_libraries" in {f.name for f in dataclasses.fields(BuildOptions)} else {}
out, cache, plain = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[4] == "plain"
builder = Builder(cache_dir=cache, progress=lambda message: None)
built = {}
for name, sources, includes in json.loads(sys.argv[3]):
    options = BuildOptions(include_dirs=tuple(Path(i) for i in includes), instrument=not plain, **same)
    artifact = builder.build([Path(s) for s in sources], options=options)
    copy = out / f"{len(built)}.{sys.argv[5]}"
    shutil.copy(artifact.path, copy)
    built[name] = str(copy)
print(json.dumps({"cbuild": cbuild.__file__, "built": built}))
"""


def build(tree: Path, work: Path, tag: str, workloads: list[Workload], *, plain: bool = False) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    spec = json.dumps(
        [[name, [str(s) for s in sources], [str(i) for i in includes]] for name, sources, includes, _ in workloads]
    )
    args = [str(work), str(work / f"cache-{tag}"), spec, "plain" if plain else "instr", tag]
    # Run outside any checkout: ``python -c`` puts the working directory first on the import path.
    proc = subprocess.run(
        [sys.executable, "-c", BUILD, *args], env=env, cwd=work, capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise SystemExit(f"building with {tree} failed:\n{proc.stderr[-3000:]}")
    answer = json.loads(proc.stdout.strip().splitlines()[-1])
    if not Path(answer["cbuild"]).resolve().is_relative_to(tree.resolve()):
        raise SystemExit(f"the build meant to use {tree} imported {answer['cbuild']}")
    built: dict[str, str] = answer["built"]
    return built


def total(binary: str, args: list[str], stdin: bytes, counts: Path) -> int:
    subprocess.run([binary, *args], input=stdin, capture_output=True, check=True,
                   env={**os.environ, "INSTRBUDGET_COUNTS": str(counts)})  # fmt: skip
    return int(counts.read_bytes().split(b"\n", 1)[0].split()[4])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ref", default=DEFAULT_REF, help="git ref of the engine to compare with")
    parser.add_argument("--repeat", type=int, default=21, help="rounds of runs (best of them is kept)")
    args = parser.parse_args()
    lines: list[str] = []

    def say(text: str) -> None:
        print(text, flush=True)
        lines.append(text)

    words = stdin_words(quick=False)
    with tempfile.TemporaryDirectory(prefix="instrbudget-counters-") as tmp:
        work = Path(tmp)
        workloads = make_workloads(fetch_yyjson(work / "yyjson", say), quick=False)
        old = work / "ref"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(old), args.ref],
                       check=True, capture_output=True)  # fmt: skip
        try:
            variants = {
                "plain": build(ROOT, work, "plain", workloads, plain=True),
                "this tree": build(ROOT, work, "new", workloads),
                args.ref: build(old, work, "old", workloads),
            }
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old)], check=False)
        say(f"{'workload':36} {'plain s':>8} {'this tree':>16} {args.ref:>16}  IR instructions (both)")
        ratios: dict[str, list[float]] = {"this tree": [], args.ref: []}
        for name, _sources, _includes, wargs in workloads:
            stdin = words if "wordfreq" in name else b""
            best = dict.fromkeys(variants, float("inf"))
            for _ in range(args.repeat):
                for variant, binaries in variants.items():
                    start = time.perf_counter()
                    subprocess.run([binaries[name], *wargs], input=stdin, capture_output=True, check=True)
                    best[variant] = min(best[variant], time.perf_counter() - start)
            counts = {v: total(variants[v][name], wargs, stdin, work / "counts") for v in ratios}
            cells = []
            for variant in ratios:
                ratios[variant].append(best[variant] / best["plain"])
                cells.append(f"{best[variant]:7.3f} {ratios[variant][-1]:5.3f}x")
            same = "equal" if len(set(counts.values())) == 1 else f"DIFFER {counts}"
            say(f"{name:36} {best['plain']:8.3f} {cells[0]:>16} {cells[1]:>16}  {counts['this tree']:,} ({same})")
        means = {v: statistics.geometric_mean(r) for v, r in ratios.items()}
        say(f"{'geometric mean':36} {'':8} {means['this tree']:15.3f}x {means[args.ref]:15.3f}x")
        say(f"this tree costs {100 * (means['this tree'] - means[args.ref]):+.1f} points over {args.ref}")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text("\n".join([*header_lines(), "", *lines]) + "\n")


if __name__ == "__main__":
    main()
