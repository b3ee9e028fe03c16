"""What running library code outside the test process costs, measured side by side in one run.

    python benchmarks/isolation.py                  # all tables
    python benchmarks/isolation.py --suite-ref REF  # compare the example suite with git REF

Prints:
  1. the round trip of a library call through the library host process (scalar
     arguments; a 64 KiB writable buffer), next to the same call made in-process with
     ctypes on the same shared library; and the time to start a host process;
     the same for an extension module's calls, against the module imported in-process;
  2. what the other design would add per test: forking a process the size of a pytest
     session, sending a report back and waiting for the child;
  3. the example project's budget suite, warm cache, with this tree against the
     in-process version it replaced (git REF, default the last commit before isolation,
     checked out in a temporary worktree and imported through PYTHONPATH).
Times are medians of many calls (1, 2) or the best of N runs (3). Writes the same, after the
date, machine, commit and command, to ``benchmarks/results/isolation.txt`` (a ``--no-suite`` run
too: its header's command says so).
"""

from __future__ import annotations

import argparse
import ctypes
import importlib.machinery
import importlib.util
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from provenance import header_lines

from cbuild import Builder, BuildOptions, Library
from cbuild.run.extension import Extension, extension_options
from cbuild.run.hosts import HostProcess, default_pool

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "isolation.txt"
#: The in-process engine this design replaced.
DEFAULT_REF = "f6ee6f9"
SOURCE = """
#include <stddef.h>
#include <stdint.h>
int add(int a, int b) { return a + b; }
void touch(uint8_t *buf, size_t n) { buf[0] += 1; buf[n - 1] += 1; }
"""


EXTENSION = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
static PyObject *add(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    return PyLong_FromLong(PyLong_AsLong(args[0]) + PyLong_AsLong(args[1]));
}
static PyObject *checksum(PyObject *self, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    unsigned long sum = 0;
    for (Py_ssize_t i = 0; i < view.len; i += 4096) sum += ((unsigned char *)view.buf)[i];
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(sum);
}
static PyMethodDef methods[] = {
    {"add", (PyCFunction)(void (*)(void))add, METH_FASTCALL, NULL}, {"checksum", checksum, METH_O, NULL}, {0}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "benchext", NULL, -1, methods};
PyMODINIT_FUNC PyInit_benchext(void) { return PyModule_Create(&module); }
"""


#: What :func:`say` printed, for the results file.
OUTPUT: list[str] = []


def say(text: str) -> None:
    """Print ``text`` and keep it for the results file."""
    print(text, flush=True)
    OUTPUT.append(text)


def median_us(n: int, fn: Callable[[], object]) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def round_trips(builder: Builder, work: Path) -> None:
    src = work / "calls.c"
    src.write_text(SOURCE)
    artifact = builder.build([src], kind="library")
    buf = bytearray(65536)
    with Library(artifact) as lib:
        lib.add(1, 2)
        scalar = median_us(5000, lambda: lib.add(1, 2))
        big = median_us(2000, lambda: lib.touch(buf, len(buf)))
    local = ctypes.CDLL(str(artifact.path))
    local.add.argtypes = [ctypes.c_int, ctypes.c_int]
    local.touch.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    cbuf = (ctypes.c_char * len(buf)).from_buffer(buf)
    local_scalar = median_us(5000, lambda: local.add(1, 2))
    local_big = median_us(5000, lambda: local.touch(cbuf, len(buf)))
    pool = default_pool()
    pool.take().close()  # the crash guard is built, the spare started

    def start() -> None:
        host = HostProcess(pool._guard_path)
        host.request("read", 0, 0, what="a first request")
        host.close()

    started = median_us(20, start)
    say("1. library calls: host process vs in-process ctypes (median)")
    say(f"   scalar call        {scalar:8.1f} us   in-process {local_scalar:6.1f} us")
    say(f"   64 KiB buffer call {big:8.1f} us   in-process {local_big:6.1f} us")
    say(f"   host start to first reply {started / 1000:.1f} ms (hidden by starting the next host ahead)")


def extension_calls(builder: Builder, work: Path) -> None:
    src = work / "benchext.c"
    src.write_text(EXTENSION)
    artifact = builder.build([src], options=extension_options(BuildOptions()), kind="library")
    data = bytes(65536)
    with Extension(artifact, "benchext") as module:
        module.add(1, 2)
        scalar = median_us(5000, lambda: module.add(1, 2))
        big = median_us(2000, lambda: module.checksum(data))
    loader = importlib.machinery.ExtensionFileLoader("benchext", str(artifact.path))
    spec = importlib.util.spec_from_file_location("benchext", str(artifact.path), loader=loader)
    assert spec is not None
    local = importlib.util.module_from_spec(spec)
    loader.exec_module(local)
    local_scalar = median_us(5000, lambda: local.add(1, 2))
    local_big = median_us(5000, lambda: local.checksum(data))
    say("1b. extension module calls: host process vs the module imported in-process (median)")
    say(f"   add(1, 2)          {scalar:8.1f} us   in-process {local_scalar:6.1f} us")
    say(f"   64 KiB bytes arg   {big:8.1f} us   in-process {local_big:6.1f} us")


def fork_cost() -> None:
    import llvmlite.binding  # noqa: F401 - a process the size of a pytest session with the plugin
    import pytest  # noqa: F401

    import pytest_instrbudget.plugin  # noqa: F401

    report = pickle.dumps({"nodeid": "tests/test_x.py::test_y", "outcome": "passed", "counts": list(range(2000))})

    def one() -> None:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            os.write(w, report)
            os._exit(0)
        os.close(w)
        while os.read(r, 65536):
            pass
        os.close(r)
        os.waitpid(pid, 0)

    say("2. forking the test process per test (the other design), median")
    say(f"   fork + report + wait {median_us(200, one) / 1000:.2f} ms per test")


def suite(ref: str, repeat: int) -> None:
    example = ROOT / "example_project"
    with tempfile.TemporaryDirectory(prefix="instrbudget-ref-") as tmp:
        old = Path(tmp) / "ref"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(old), ref], check=True, capture_output=True
        )
        try:
            variants = {"this tree": (ROOT, example), f"in-process ({ref})": (old, old / "example_project")}
            best: dict[str, float] = {}
            for _ in range(repeat + 1):  # the first round warms the caches
                for name, (tree, project) in variants.items():
                    env = {**os.environ, "PYTHONPATH": str(tree)}
                    start = time.perf_counter()
                    proc = subprocess.run(
                        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                        cwd=project,
                        env=env,
                        capture_output=True,
                        text=True,
                        check=False,
                    )
                    elapsed = time.perf_counter() - start
                    if proc.returncode != 0:
                        raise SystemExit(f"{name}: the example suite failed:\n{proc.stdout[-3000:]}")
                    best[name] = min(best.get(name, elapsed), elapsed)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old)], check=False)
    say(f"3. example suite, warm cache, best of {repeat}")
    for name, seconds in best.items():
        say(f"   {name:28} {seconds:6.2f} s")
    first, second = best.values()
    say(f"   ratio {first / second:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--suite-ref", default=DEFAULT_REF, help="git ref of the in-process version")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-suite", action="store_true", help="skip the example suite comparison")
    args = parser.parse_args()
    builder = Builder(progress=lambda message: None)
    with tempfile.TemporaryDirectory(prefix="instrbudget-bench-") as tmp:
        round_trips(builder, Path(tmp))
        extension_calls(builder, Path(tmp))
    fork_cost()
    if not args.no_suite:
        suite(args.suite_ref, args.repeat)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text("\n".join([*header_lines(), "", *OUTPUT]) + "\n")


if __name__ == "__main__":
    main()
