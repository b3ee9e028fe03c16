"""What counting costs single-threaded code: this tree's counters against an earlier version's, side by side.

    python benchmarks/counters.py                 # against the shared counters (before per-thread ones)
    python benchmarks/counters.py --ref REF --repeat 31

Builds bench.py's four CPU-heavy workloads plainly and instrumented (ir-count) with this
tree, and instrumented with the engine at git REF (checked out in a temporary worktree,
built in a subprocess with it on PYTHONPATH). Then runs the three binaries of each workload
in turn, REPEAT rounds, and prints each one's best time against the plain program's, and
the geometric means: the difference is what the change of engine costs. The IR
instruction counts of both instrumented builds are printed too; they must be equal.
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
from bench import fetch_yyjson, make_workloads, stdin_words

ROOT = Path(__file__).resolve().parent.parent
#: The last commit whose threads shared one counter array.
DEFAULT_REF = "b5e4da1"

#: Run by each engine (PYTHONPATH) to build the workloads: prints {name: [binary, ...]} as JSON.
BUILD = """
import json, shutil, sys
from pathlib import Path
sys.path.insert(0, sys.argv[3])
from bench import fetch_yyjson, make_workloads
from cbuild import Builder, BuildOptions
out, cache, plain = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[4] == "plain"
builder = Builder(cache_dir=cache, progress=lambda message: None)
built = {}
for name, sources, includes, _args in make_workloads(fetch_yyjson(out / "yyjson"), quick=False):
    artifact = builder.build(sources, options=BuildOptions(include_dirs=includes, instrument=not plain))
    copy = out / f"{len(built)}.{sys.argv[5]}"
    shutil.copy(artifact.path, copy)
    built[name] = str(copy)
print(json.dumps(built))
"""


def build(tree: Path, work: Path, tag: str, *, plain: bool = False) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    args = [str(work), str(work / f"cache-{tag}"), str(ROOT / "benchmarks"), "plain" if plain else "instr", tag]
    proc = subprocess.run([sys.executable, "-c", BUILD, *args], env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"building with {tree} failed:\n{proc.stderr[-3000:]}")
    built: dict[str, str] = json.loads(proc.stdout.strip().splitlines()[-1])
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
    words = stdin_words(quick=False)
    with tempfile.TemporaryDirectory(prefix="instrbudget-counters-") as tmp:
        work = Path(tmp)
        old = work / "ref"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(old), args.ref],
                       check=True, capture_output=True)  # fmt: skip
        try:
            variants = {
                "plain": build(ROOT, work, "plain", plain=True),
                "this tree": build(ROOT, work, "new"),
                args.ref: build(old, work, "old"),
            }
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old)], check=False)
        workloads = make_workloads(fetch_yyjson(work / "yyjson"), quick=False)
        print(f"{'workload':36} {'plain s':>8} {'this tree':>16} {args.ref:>16}  IR instructions (both)")
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
            print(f"{name:36} {best['plain']:8.3f} {cells[0]:>16} {cells[1]:>16}  {counts['this tree']:,} ({same})")
        means = {v: statistics.geometric_mean(r) for v, r in ratios.items()}
        print(f"{'geometric mean':36} {'':8} {means['this tree']:15.3f}x {means[args.ref]:15.3f}x")
        print(f"this tree costs {100 * (means['this tree'] - means[args.ref]):+.1f} points over {args.ref}")


if __name__ == "__main__":
    main()
