"""Counts identical across runs: five sessions of the example project and five fresh processes per
third-party library, with cold and warm build caches, serially and under pytest-xdist.

    python benchmarks/determinism.py              # the example project and the libraries
    python benchmarks/determinism.py --example    # the example project only

The example project's suite runs five times with ``--instrbudget-json``: on an empty build cache
(cold), again on it (warm), with ``-n 2`` (warm), with ``-n 2`` on another empty cache (cold), and
serially once more. Every metric of every test must be the same in all five documents.

The libraries (the PyPI sdists the tests use: brotli, lz4, zstd from zstandard, simdjson from
pysimdjson) are built with the counted libraries and called in a fresh process five times, the
first two on empty caches: each call's ``ir_instructions`` total and its per-function counts must
be the same every time.

Prints a line per subject and writes them, after the date, machine, commit and command, to
``benchmarks/results/determinism.txt``. Exits 1 if anything differed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

from provenance import header_lines

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "determinism.txt"
sys.path.insert(0, str(ROOT))

from tests.sdists import sdist  # noqa: E402
from tests.test_riscv_libraries import DOCUMENT, SIMDJSON_C  # noqa: E402

#: The five sessions of the example project: (name, fresh cache, xdist workers).
SESSIONS = (
    ("cold, serial", True, 0),
    ("warm, serial", False, 0),
    ("warm, -n 2", False, 2),
    ("cold, -n 2", True, 2),
    ("warm, serial again", False, 0),
)

#: One process's calls of a library: prints a JSON object of call -> (total, per-function counts).
LIBRARY_CALLS = textwrap.dedent(
    """
    import ctypes, json, sys
    from pathlib import Path
    from cbuild import Builder, BuildOptions, IrCountModel, Library

    name, sources, include = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
    options = BuildOptions(include_dirs=(Path(include),) if include else ())
    document = sys.argv[4].encode()
    builder = Builder(progress=lambda message: None)
    lib = Library(builder.build([Path(s) for s in sources], kind="library", options=options))
    model = IrCountModel()
    sample = b"".join(b"line %d: the quick brown fox jumps over the lazy dog\\n" % i for i in range(2000))
    out = {}

    def measure(label, call):
        before = lib.snapshot()
        result = call()
        (cost,) = model.evaluate(lib.counts(before))
        out[label] = [result, cost.total, cost.functions]

    if name == "lz4":
        cap = lib.LZ4_compressBound(len(sample))
        packed = bytearray(cap)
        measure("compress", lambda: lib.LZ4_compress_default(sample, packed, len(sample), cap))
        back = bytearray(len(sample))
        size = out["compress"][0]
        measure("decompress", lambda: lib.LZ4_decompress_safe(bytes(packed[:size]), back, size, len(back)))
    elif name == "zstd":
        cap = lib.ZSTD_compressBound(len(sample))
        packed = bytearray(cap)
        measure("compress", lambda: lib.ZSTD_compress(packed, cap, sample, len(sample), 3))
        back = bytearray(len(sample))
        size = out["compress"][0]
        measure("decompress", lambda: lib.ZSTD_decompress(back, len(back), bytes(packed[:size]), size))
    elif name == "brotli":
        cap = lib.BrotliEncoderMaxCompressedSize(len(sample))
        packed = bytearray(cap)
        written = ctypes.c_size_t(cap)
        compress = lib.BrotliEncoderCompress
        measure("compress", lambda: compress(5, 22, 0, len(sample), sample, ctypes.byref(written), packed))
        back = bytearray(len(sample) + 16)
        got = ctypes.c_size_t(len(back))
        data = bytes(packed[: written.value])
        measure("decompress", lambda: lib.BrotliDecoderDecompress(len(data), data, ctypes.byref(got), back))
    elif name == "simdjson":
        error = ctypes.c_int(-1)
        measure("number_at", lambda: lib.sj_number_at(document, len(document), b"/sizes/ratio", ctypes.byref(error)))
        minified = bytearray(len(document))
        measure("minify", lambda: lib.sj_minify(document, len(document), minified))
    print(json.dumps(out, sort_keys=True))
    """
)


def library_specs(work: Path) -> dict[str, tuple[list[Path], Path | None]]:
    """The libraries' sources and include directory (simdjson's C wrapper is written to ``work``)."""
    lz4 = sdist("lz4", "4.4.5") / "lz4libs"
    brotli = sdist("brotli", "1.2.1") / "c"
    simdjson = sdist("pysimdjson", "7.0.2") / "simdjson"
    wrapper = work / "sj.cpp"
    wrapper.write_text(SIMDJSON_C)
    return {
        "lz4": ([lz4 / "lz4.c", lz4 / "lz4hc.c"], None),
        "zstd": ([sdist("zstandard", "0.25.0") / "zstd" / "zstd.c"], None),
        "brotli": (
            sorted(p for part in ("common", "enc", "dec") for p in (brotli / part).glob("*.c")),
            brotli / "include",
        ),
        "simdjson": ([simdjson / "simdjson.cpp", wrapper], simdjson),
    }


def example_sessions() -> tuple[str, bool]:
    """Five sessions of the example project; a line saying whether every metric matched."""
    documents: list[dict[str, Any]] = []
    times = []
    with tempfile.TemporaryDirectory(prefix="instrbudget-determinism-") as tmp:
        cache = Path(tmp) / "cache-0"
        for n, (name, fresh, workers) in enumerate(SESSIONS):
            if fresh:
                cache = Path(tmp) / f"cache-{n}"
            out = Path(tmp) / f"session-{n}.json"
            cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--instrbudget-json={out}"]
            cmd += ["-n", str(workers)] if workers else []
            env = dict(os.environ, INSTRBUDGET_CACHE_DIR=str(cache))
            start = time.perf_counter()
            proc = subprocess.run(cmd, cwd=ROOT / "example_project", env=env, capture_output=True, text=True)
            times.append(f"{name} {time.perf_counter() - start:.0f} s")
            if proc.returncode != 0:
                return f"example project: session '{name}' failed:\n{proc.stdout[-2000:]}", False
            tests = json.loads(out.read_text())["tests"]
            documents.append(
                {test: {m: v["value"] for m, v in t["metrics"].items()} for test, t in sorted(tests.items())}
            )
    same = all(doc == documents[0] for doc in documents)
    values = sum(len(metrics) for metrics in documents[0].values())
    verdict = "identical" if same else "DIFFERENT"
    sessions = ", ".join(times)
    return (
        f"example project: {len(documents[0])} tests, {values} metric values, 5 sessions ({sessions}): {verdict}",
        same,
    )


def library_runs(name: str, sources: list[Path], include: Path | None) -> tuple[str, bool]:
    """Five fresh processes calling ``name``; a line saying whether every count matched."""
    outputs = []
    with tempfile.TemporaryDirectory(prefix="instrbudget-determinism-") as tmp:
        for n in range(5):
            cache = Path(tmp) / (f"cold-{n}" if n < 2 else "cold-1")
            env = dict(os.environ, INSTRBUDGET_CACHE_DIR=str(cache))
            args = [name, json.dumps([str(s) for s in sources]), str(include or ""), DOCUMENT.decode()]
            proc = subprocess.run(
                [sys.executable, "-c", LIBRARY_CALLS, *args], env=env, capture_output=True, text=True, cwd=ROOT
            )
            if proc.returncode != 0:
                return f"{name}: run {n + 1} failed: {proc.stderr[-1500:]}", False
            outputs.append(json.loads(proc.stdout.splitlines()[-1]))
    same = all(out == outputs[0] for out in outputs)
    totals = ", ".join(f"{call} {result[1]:,}" for call, result in sorted(outputs[0].items()))
    return f"{name}: 5 processes (2 cold): {totals}: {'identical' if same else 'DIFFERENT'}", same


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--example", action="store_true", help="the example project only")
    args = parser.parse_args()
    lines = header_lines()
    ok = True
    line, same = example_sessions()
    print(line, flush=True)
    lines.append(line)
    ok &= same
    if not args.example:
        with tempfile.TemporaryDirectory(prefix="instrbudget-determinism-") as work:
            for name, (sources, include) in library_specs(Path(work)).items():
                line, same = library_runs(name, sources, include)
                print(line, flush=True)
                lines.append(line)
                ok &= same
    RESULTS.write_text("\n".join(lines) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
