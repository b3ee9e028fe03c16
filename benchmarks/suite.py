"""How long the README's two commands take: the project's tests and the example project's suite.

    python benchmarks/suite.py              # both, the example cold and warm
    python benchmarks/suite.py --example    # the example project only

Runs, in this checkout and with this interpreter:
  1. ``python -m pytest -n 2 -q`` (the project's tests) on an empty shared build cache
     (``INSTRBUDGET_TEST_CACHE`` pointing at a new directory: the counted libraries, the models'
     run-time parts and every test's build made in the session, as after a change to the
     engine), again on that cache (warm, as a developer's next run), then with ``-m "not slow"``
     on it (the developer's loop); the third-party sources' builds for the RISC-V models keep
     theirs under ~/.cache/instrbudget-tests either way;
  2. the example project's ``python -m pytest -q`` on an empty build cache (cold: the
     first build of everything, zig's own caches warm) and again on that cache (warm).
Prints each command's wall time and pytest's last line, and writes the same, after the
date, machine, commit and command, to ``benchmarks/results/suite.txt``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from provenance import header_lines

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "suite.txt"


def timed(name: str, cmd: list[str], cwd: Path, env: dict[str, str]) -> str:
    """Run ``cmd``; one line: the name, wall seconds, exit status and pytest's summary line."""
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    summary = lines[-1].strip("= ") if lines else "(no output)"
    return f"{name:<42} {seconds:8.1f} s  exit {proc.returncode}  {summary}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--example", action="store_true", help="time the example project's suite only")
    args = parser.parse_args()
    out = header_lines()
    env = dict(os.environ)
    rows = []
    if not args.example:
        tests = [sys.executable, "-m", "pytest", "-n", "2", "-q", "-p", "no:cacheprovider"]
        with tempfile.TemporaryDirectory(prefix="instrbudget-suite-tests-") as shared:
            session = dict(env, INSTRBUDGET_TEST_CACHE=shared)
            rows.append(timed("project tests (pytest -n 2), empty cache", tests, ROOT, session))
            rows.append(timed("project tests (pytest -n 2), warm cache", tests, ROOT, session))
            rows.append(timed("project tests, -m 'not slow', warm cache", [*tests, "-m", "not slow"], ROOT, session))
    with tempfile.TemporaryDirectory(prefix="instrbudget-suite-") as cache:
        example = dict(env, INSTRBUDGET_CACHE_DIR=cache)
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        rows.append(timed("example suite, empty build cache", command, ROOT / "example_project", example))
        rows.append(timed("example suite, warm build cache", command, ROOT / "example_project", example))
    out += ["", *rows]
    text = "\n".join(out) + "\n"
    print(text, end="")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
