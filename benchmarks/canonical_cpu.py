"""zstd's run-time CPU dispatch under each canonical CPU level, counted side by side in one run.

    python benchmarks/canonical_cpu.py [--sdist zstandard-0.25.0.tar.gz] [--levels x86-64-v2 x86-64-v3]

zstd (``zstd/zstd.c``, the single-file library in the zstandard sdist from PyPI,
fetched with ``pip download`` unless ``--sdist`` names it) asks CPUID for BMI2 and
picks its Huffman and entropy kernels from the answer. Each level's build compresses
and decompresses the same 52,000 bytes twice, in two library processes; the table
shows the ``ir_instructions`` of both runs (equal: deterministic), which kernels the
level selects, and what this host's own CPU would have said. Writes the same, after the
date, machine, commit and command, to ``benchmarks/results/canonical_cpu.txt``.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from provenance import header_lines

from cbuild import Builder, BuildOptions, Library
from cbuild.models import CostModel, default_registry
from cbuild.report.attribution import attributed

RESULTS = Path(__file__).resolve().parent / "results" / "canonical_cpu.txt"
DATA = b"instrbudget canonical cpu " * 2000
PIP_DOWNLOAD = (sys.executable, "-m", "pip", "download", "-q", "--no-binary", ":all:", "--no-deps")


def _zstd_source(sdist: Path | None, workdir: Path) -> Path:
    if sdist is None:
        subprocess.run(
            [*PIP_DOWNLOAD, "zstandard==0.25.0", "-d", str(workdir)],
            check=True,
        )
        sdist = next(workdir.glob("zstandard-*.tar.gz"))
    with tarfile.open(sdist) as tar:
        tar.extractall(workdir, filter="data")
    return next(workdir.glob("zstandard-*/zstd/zstd.c"))


def _count(library: Library, ir_count: CostModel) -> int:
    before = library.snapshot()
    bound = library.ZSTD_compressBound(len(DATA))
    packed = bytearray(bound)
    size = library.ZSTD_compress(packed, bound, DATA, len(DATA), 3)
    unpacked = bytearray(len(DATA))
    assert library.ZSTD_decompress(unpacked, len(unpacked), bytes(packed[:size]), size) == len(DATA)
    assert bytes(unpacked) == DATA
    costs = attributed([ir_count], [library.counts(before)])
    return costs["ir_instructions"].total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sdist", type=Path, help="a zstandard sdist (.tar.gz); fetched from PyPI if absent")
    parser.add_argument("--levels", nargs="+", default=["x86-64", "x86-64-v2", "x86-64-v3"])
    args = parser.parse_args()
    lines: list[str] = []

    def say(text: str) -> None:
        print(text, flush=True)
        lines.append(text)

    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    host_bmi2 = bool(re.search(r"^flags\s*:.*\bbmi2\b", flags, re.MULTILINE))
    say(f"this host's CPU has BMI2: {host_bmi2} (zstd built without the canonical CPU would use it)")
    ir_count = default_registry().create("ir-count", {})
    builder = Builder()
    with tempfile.TemporaryDirectory(prefix="instrbudget-zstd-") as tmp:
        source = _zstd_source(args.sdist, Path(tmp))
        say(f"{'cpu':<12} {'run 1':>12} {'run 2':>12}  kernels")
        for level in args.levels:
            artifact = builder.build([source], kind="library", options=BuildOptions(cpu=level))
            runs = []
            for _ in range(2):
                with Library(artifact) as library:
                    runs.append(_count(library, ir_count))
            kernels = "BMI2" if level in ("x86-64-v3", "x86-64-v4") else "plain"
            say(f"{level:<12} {runs[0]:>12,} {runs[1]:>12,}  {kernels}")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text("\n".join([*header_lines(), "", *lines]) + "\n")


if __name__ == "__main__":
    main()
