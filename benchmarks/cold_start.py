"""What a CI runner pays before its first result: a fresh runner, a runner with a restored cache,
and a runner that ran ``python -m cbuild warm`` first; the cache's size; what eviction costs.

    python benchmarks/cold_start.py

Each scenario runs the example project's suite (three models) in a copy of it, with its own
build cache (``INSTRBUDGET_CACHE_DIR``) and zig cache (``ZIG_GLOBAL_CACHE_DIR``):

* fresh: both caches empty, as on a new runner;
* restored: the caches the fresh run left, copied, and the project copied to another
  directory (another runner's workspace);
* warm first: both caches empty, ``python -m cbuild warm`` in the project, then the suite.

For each: seconds to the first test result (the first PASSED/FAILED line of ``-v`` output),
for the whole suite, and the builds the session made (from the cache's session record).
Then the sizes of both caches after the suite, and the time :func:`cbuild.build.eviction.prune`
takes to bring the build cache to half its size, and a session end's scan of it.

Prints the table and writes it, after the date, machine, commit and command, to
``benchmarks/results/cold_start.txt``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from provenance import header_lines

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "cold_start.txt"
sys.path.insert(0, str(ROOT))

from cbuild.build import eviction  # noqa: E402
from cbuild.build.cache import LAYOUT  # noqa: E402


def tree_size(top: Path) -> int:
    return sum(p.lstat().st_size for p in top.rglob("*") if p.is_file() and not p.is_symlink())


def environment(cache: Path, zig: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["INSTRBUDGET_CACHE_DIR"] = str(cache)
    env["ZIG_GLOBAL_CACHE_DIR"] = str(zig)
    return env


def suite(project: Path, env: dict[str, str]) -> tuple[float, float, int, int]:
    """Run the suite: seconds to the first result, seconds in all, tests passed, builds made."""
    started = time.monotonic()
    first = None
    passed = 0
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-v"],
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if first is None and (" PASSED" in line or " FAILED" in line):
            first = time.monotonic() - started
        passed += " PASSED" in line
    proc.wait()
    total = time.monotonic() - started
    record = json.loads((Path(env["INSTRBUDGET_CACHE_DIR"]) / LAYOUT / eviction.SESSION_FILE).read_text())
    return first or total, total, passed, sum(record["builds"].values())


def main() -> int:
    lines: list[str] = []

    def say(text: str) -> None:
        print(text, flush=True)
        lines.append(text)

    say(f"{'scenario':<34} {'first result':>12} {'suite':>8} {'passed':>6} {'builds':>6}")
    with tempfile.TemporaryDirectory(prefix="instrbudget-cold-") as tmp:
        work = Path(tmp)

        def fresh_project(name: str) -> Path:
            target = work / name / "example_project"
            shutil.copytree(ROOT / "example_project", target, ignore=shutil.ignore_patterns("__pycache__"))
            return target

        def row(name: str, first: float, total: float, passed: int, builds: int) -> None:
            say(f"{name:<34} {first:>11.1f}s {total:>7.1f}s {passed:>6} {builds:>6}")

        cache, zig = work / "fresh-cache", work / "fresh-zig"
        project = fresh_project("fresh")
        row("fresh runner (empty caches)", *suite(project, environment(cache, zig)))
        instr_size, zig_size = tree_size(cache), tree_size(zig)

        restored_cache, restored_zig = work / "restored-cache", work / "restored-zig"
        shutil.copytree(cache, restored_cache, symlinks=True)
        shutil.copytree(zig, restored_zig, symlinks=True)
        project = fresh_project("another/workspace")
        row("restored caches, moved checkout", *suite(project, environment(restored_cache, restored_zig)))

        warm_cache, warm_zig = work / "warm-cache", work / "warm-zig"
        project = fresh_project("warmed")
        env = environment(warm_cache, warm_zig)
        started = time.monotonic()
        subprocess.run([sys.executable, "-m", "cbuild", "warm"], cwd=project, env=env, check=True, capture_output=True)
        warming = time.monotonic() - started
        say(f"{'python -m cbuild warm (empty caches)':<34} {'':>12} {warming:>7.1f}s")
        row("suite after warm", *suite(project, env))

        say("")
        sizes = f"{eviction.format_size(instr_size)}; zig's cache: {eviction.format_size(zig_size)}"
        say(f"build cache after the suite: {sizes}")
        started = time.monotonic()
        eviction.entries(cache)
        scan = time.monotonic() - started
        started = time.monotonic()
        done = eviction.prune(cache, instr_size // 2, fraction=1.0, grace=0.0)
        prune = time.monotonic() - started
        say(
            f"session-end scan: {scan * 1000:.0f} ms; prune to half: {prune * 1000:.0f} ms, "
            f"{done.removed} entries ({eviction.format_size(done.freed)}) removed"
        )
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text("\n".join([*header_lines(), "", *lines]) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
