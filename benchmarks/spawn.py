"""What starting a built program costs: Python code between fork and exec, against none.

    .venv/bin/python benchmarks/spawn.py

A run starts its program with ASLR off and in a process group of its own. Done by a
``preexec_fn`` (Python code in the child), ``subprocess`` has to ``fork`` the whole interpreter,
whose page tables grow with what the process holds (a pytest session with many tests, llvmlite's
LLVM); done by the calling thread's persona and ``process_group`` (``cbuild/run/spawn.py``), it
can ``vfork``. This prints the median wall time of each way of starting (and waiting for) a small
built program, in interleaved rounds, with the process as it is and holding 300 MB more, and the
whole ``run_program`` of the same program's ir-count build next to the plain program. Writes the
same to ``benchmarks/results/spawn.txt`` after the provenance header. No timing assertions.
"""

from __future__ import annotations

import ctypes
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from provenance import Results
from riscv_models import TINY_C, quiet_builder

from cbuild import BuildOptions, run_program
from cbuild.build.cache import default_cache_dir
from cbuild.run.spawn import _ADDR_NO_RANDOMIZE, aslr_off, own_group

HERE = Path(__file__).resolve().parent
RESULTS_FILE = HERE / "results" / "spawn.txt"
ROUNDS, RUNS = 5, 20


def _in_child() -> None:  # the way runs started before: Python code between fork and exec
    os.setpgid(0, 0)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.personality(libc.personality(0xFFFFFFFF) | _ADDR_NO_RANDOMIZE)


def main() -> int:
    results = Results()
    say = results.say

    builder = quiet_builder(default_cache_dir())
    with tempfile.TemporaryDirectory(prefix="instrbudget-spawn-") as tmp:
        source = Path(tmp) / "tiny.c"
        source.write_text(TINY_C)
        plain = builder.build([source], options=BuildOptions(instrument=False))
        counted = builder.build([source])
        argv = [str(plain.path), "1000"]

        def preexec() -> None:
            subprocess.run(argv, stdout=subprocess.DEVNULL, preexec_fn=_in_child, check=True)

        def persona() -> None:
            with aslr_off():
                subprocess.run(argv, stdout=subprocess.DEVNULL, check=True, **own_group())

        ways: dict[str, Callable[[], object]] = {
            "preexec_fn (before)": preexec,
            "persona + process_group": persona,
            "plain subprocess.run": lambda: subprocess.run(argv, stdout=subprocess.DEVNULL, check=True),
            "run_program, ir-count": lambda: run_program(counted, ["1000"]),
        }
        say(f"median wall ms of {ROUNDS} interleaved rounds of {RUNS} runs each; the program loops 1,000 times")
        say(f"{'way of starting':26} {'as is':>8} {'+300 MB':>8}")
        medians: dict[str, list[float]] = {}
        for held in (0, 300):
            ballast = [bytearray(1 << 20) for _ in range(held)]
            for ballast_page in ballast:  # touched, so the pages are the process's
                ballast_page[::4096] = b"\1" * len(ballast_page[::4096])
            times: dict[str, list[float]] = {name: [] for name in ways}
            for _ in range(ROUNDS):
                for name, way in ways.items():
                    start = time.perf_counter()
                    for _ in range(RUNS):
                        way()
                    times[name].append((time.perf_counter() - start) / RUNS * 1000)
            for name, samples in times.items():
                medians.setdefault(name, []).append(statistics.median(samples))
            del ballast
        for name, (as_is, heavy) in medians.items():
            say(f"{name:26} {as_is:8.2f} {heavy:8.2f}")
    results.write(RESULTS_FILE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
