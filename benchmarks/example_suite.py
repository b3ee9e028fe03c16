"""The example project's suite at other commits, side by side with this checkout's, warm cache.

    .venv/bin/python benchmarks/example_suite.py 37c824c [COMMIT ...] [--rounds 3]

Each commit is checked out in a temporary git worktree; its own code (first on ``PYTHONPATH``)
runs its own ``example_project`` with this environment's packages and the default build cache,
after one run to warm that cache. Rounds interleave the checkouts. Prints each run's wall time
and pytest's last line, then the median per checkout; writes the same to
``benchmarks/results/example_suite.txt`` after the provenance header. No timing assertions.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

from provenance import Results

ROOT = Path(__file__).resolve().parent.parent
RESULTS_FILE = ROOT / "benchmarks" / "results" / "example_suite.txt"


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()


def _suite(tree: Path) -> tuple[float, int, str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=tree / "example_project",
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    lines = proc.stdout.strip().splitlines()
    return time.perf_counter() - started, proc.returncode, lines[-1] if lines else ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("commits", nargs="+", help="commits to compare with this checkout")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    results = Results()
    say = results.say

    with tempfile.TemporaryDirectory(prefix="instrbudget-suites-") as tmp:
        trees: dict[str, Path] = {}
        for commit in args.commits:
            short = _git("rev-parse", "--short", commit)
            tree = Path(tmp) / short
            _git("worktree", "add", "--detach", str(tree), commit)
            trees[short] = tree
        trees[f"{_git('rev-parse', '--short', 'HEAD')} (this checkout)"] = ROOT
        try:
            for tree in trees.values():
                _suite(tree)  # builds what the warm runs reuse
            times: dict[str, list[float]] = {name: [] for name in trees}
            for round_ in range(1, args.rounds + 1):
                for name, tree in trees.items():
                    seconds, rc, last = _suite(tree)
                    times[name].append(seconds)
                    say(f"round {round_} {name:24} {seconds:7.2f} s  exit {rc}  {last}")
            say("")
            for name, samples in times.items():
                say(f"median {name:24} {statistics.median(samples):7.2f} s")
        finally:
            for tree in trees.values():
                if tree != ROOT:
                    _git("worktree", "remove", "--force", str(tree))
    results.write(RESULTS_FILE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
