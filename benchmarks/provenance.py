"""The first lines of a results file in ``benchmarks/results/``: date, machine, commit, command.

The command is written as it would be typed at the root of any checkout (``python
benchmarks/suite.py --example``): nothing recorded depends on where this one lies.
"""

from __future__ import annotations

import datetime
import os
import platform
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _git(*args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    return proc.stdout.strip() if proc.returncode == 0 else f"(git {' '.join(args)} failed)"


def command() -> str:
    """This process's command line, from the checkout's root, with ``python`` for the interpreter."""
    script = Path(sys.argv[0]).resolve()
    shown = str(script.relative_to(ROOT)) if script.is_relative_to(ROOT) else script.name
    return shlex.join(["python", shown, *sys.argv[1:]])


def header_lines() -> list[str]:
    """Date, machine, commit and command."""
    cpu = "unknown CPU"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        found = re.search(r"^model name\s*:\s*(.+)$", cpuinfo.read_text(), re.MULTILINE)
        cpu = found.group(1).strip() if found else cpu
    # Results files written by earlier scripts of the same series do not change what is measured.
    changed = _git("status", "--porcelain", "--", ".", ":(exclude)benchmarks/results")
    dirty = " (with uncommitted changes in the tree)" if changed else ""
    return [
        f"date (UTC): {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M:%S}",
        f"machine: {platform.platform()}; {cpu}; {os.cpu_count()} cores",
        f"commit: {_git('rev-parse', '--short', 'HEAD')}{dirty}",
        f"command: {command()}",
    ]


class Results:
    """What a benchmark prints as it goes, written to its results file after the header."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def say(self, text: str) -> None:
        print(text, flush=True)
        self.lines.append(text)

    def write(self, path: Path) -> None:
        path.write_text("\n".join([*header_lines(), *self.lines]) + "\n")
