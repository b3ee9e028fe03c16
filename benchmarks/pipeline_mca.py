"""The pipeline model's machine against llvm-mca-14 on the basic blocks of real third-party C.

    .venv/bin/python benchmarks/pipeline_mca.py [--libraries lz4 brotli] [--targets riscv64 riscv32]
                                                [--machine rocket] [--worst 8]

Each library's sources (PyPI sdists, fetched and unpacked by ``tests/sdists.py``) are compiled
to RISC-V assembly with the project's clang (``python -m ziglang cc -O2 -S``, no vectorisation,
as the ``pipeline`` model compiles). The assembly is split into basic blocks: a label that is a
jump target (``.LBB*``, a function's name, or any label a branch names) starts a block, a control
transfer ends one; directives and comments are dropped. For every block the machine's estimate
(``Machine.estimate``: the finishing cycle from an idle machine) is compared with llvm-mca's
``Total Cycles - 1`` for one iteration on the same instructions (``Total Cycles`` counts the cycle
of the last write-back too). Many blocks go to one llvm-mca run, each between
``# LLVM-MCA-BEGIN`` / ``# LLVM-MCA-END`` markers. llvm-mca gets ``-mattr=+m,+a,+f,+d``
(``+m,+a`` for riscv32): ``-mcpu=rocket-rv64`` alone rejects ``mul`` and ``div``. A block it still
rejects (``fence``, ``ebreak``) is counted as rejected, not compared.

llvm-mca 14 gives ``j``/``jal``/``jr``/``jalr``/``ret`` a 100-cycle call latency and rejects
``call``/``tail``, so a block's final unconditional transfer is left out on both sides;
conditional branches stay in.

Prints the agreement per library and target, the worst mismatches and the totals, and writes
the same, after the date, machine, commit and command, to ``benchmarks/results/pipeline_mca.txt``.
"""

from __future__ import annotations

import argparse
import glob
import importlib
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from cbuild.riscv.isa import parse_assembly  # noqa: E402
from cbuild.riscv.machine import CONDITIONAL_BRANCHES, JUMPS, Machine, load_machine  # noqa: E402

LLVM_MCA = Path("/usr/bin/llvm-mca-14")
RESULTS = ROOT / "benchmarks" / "results" / "pipeline_mca.txt"


@dataclass(frozen=True)
class Library:
    """A PyPI sdist and the C files of it to compile (globs and include directories inside it)."""

    package: str
    version: str
    sources: tuple[str, ...]
    includes: tuple[str, ...] = ()
    #: Headers to stand in for ones the sdist expects from elsewhere: name -> text.
    stubs: tuple[tuple[str, str], ...] = ()


LIBRARIES: dict[str, Library] = {
    "lz4": Library("lz4", "4.4.5", ("lz4libs/lz4.c",)),
    "brotli": Library("brotli", "1.2.1", ("c/enc/*.c", "c/dec/*.c"), ("c/include",)),
    "xxhash": Library("xxhash", "4.1.0", ("deps/xxhash/xxhash.c",)),
    # murmurhash3.c takes only Py_ssize_t from Python.h
    "mmh3": Library(
        "mmh3",
        "5.3.1",
        ("src/mmh3/murmurhash3.c",),
        stubs=(("Python.h", "#include <sys/types.h>\ntypedef ssize_t Py_ssize_t;\n"),),
    ),
    "zstandard": Library("zstandard", "0.25.0", ("zstd/zstd.c",)),
}
#: clang target flags and llvm-mca arguments per RISC-V flavour.
TARGETS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "riscv64": (("-target", "riscv64-linux-musl"), ("-mtriple=riscv64", "-mcpu=rocket-rv64", "-mattr=+m,+a,+f,+d")),
    "riscv32": (
        ("-target", "riscv32-linux-musl", "-mcpu=generic_rv32+m+zalrsc"),
        ("-mtriple=riscv32", "-mcpu=rocket-rv32", "-mattr=+m,+a"),
    ),
}
CFLAGS = ("-O2", "-S", "-fno-vectorize", "-fno-slp-vectorize", "-mno-relax")
#: Control transfers: they end a block.
CONDITIONAL = CONDITIONAL_BRANCHES
UNCONDITIONAL = JUMPS
BLOCKS_PER_RUN = 1500


@dataclass(frozen=True)
class Block:
    """A basic block's instructions (assembly text, comments dropped) and where it comes from."""

    name: str
    lines: tuple[str, ...]

    @property
    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


@dataclass
class Comparison:
    """One block: the model's estimate and llvm-mca's ``Total Cycles - 1``."""

    block: Block
    model: int
    mca: int

    @property
    def diff(self) -> int:
        return self.model - self.mca


@dataclass
class Summary:
    """Comparisons of many blocks."""

    label: str
    rows: list[Comparison] = field(default_factory=list)
    skipped: int = 0

    @property
    def exact(self) -> float:
        return sum(r.diff == 0 for r in self.rows) / len(self.rows) if self.rows else 1.0

    def worst(self, n: int) -> list[Comparison]:
        """The ``n`` largest mismatches, one per distinct instruction text, shortest first among equals."""
        seen: set[tuple[str, ...]] = set()
        out: list[Comparison] = []
        for row in sorted(self.rows, key=lambda r: (-abs(r.diff), len(r.block.lines))):
            if len(out) >= n:
                break
            if row.diff != 0 and row.block.lines not in seen:
                seen.add(row.block.lines)
                out.append(row)
        return out


def compile_assembly(source: Path, target: str, includes: Sequence[Path] = ()) -> str:
    """RISC-V assembly of one C file from the project's clang."""
    flags, _ = TARGETS[target]
    cmd = [sys.executable, "-m", "ziglang", "cc", *flags, *CFLAGS, *(f"-I{i}" for i in includes)]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / f"{source.stem}.s"
        proc = subprocess.run([*cmd, str(source), "-o", str(out)], capture_output=True, text=True, check=False)
        if proc.returncode != 0 or not out.exists():
            raise RuntimeError(f"compiling {source} failed:\n{proc.stderr[-2000:]}")
        return out.read_text(errors="replace")


_LABEL = re.compile(r"^\s*([\w.$]+):")
_ASSIGNMENT = re.compile(r"^[\w.$]+\s*=")  # symbol = expression


def _code(line: str) -> str:
    return line.split("#", 1)[0].strip()


def split_blocks(assembly: str, prefix: str = "") -> list[Block]:
    """Basic blocks of an assembly text: jump-target labels start them, control transfers end them."""
    targets: set[str] = set()
    for line in assembly.splitlines():
        parts = _code(line).replace(",", " ").split()
        if parts and (parts[0] in CONDITIONAL or parts[0] in UNCONDITIONAL):
            targets.add(parts[-1])
    blocks: list[Block] = []
    current: list[str] = []
    function = "?"

    def flush() -> None:
        if current:
            blocks.append(Block(f"{prefix}{function}#{len(blocks)}", tuple(current)))
            current.clear()

    for line in assembly.splitlines():
        code = _code(line)
        while (m := _LABEL.match(code)) is not None:
            label = m.group(1)
            if label.startswith(".LBB") or not label.startswith(".L") or label in targets:
                flush()
                if not label.startswith(".L"):
                    function = label
            code = code[m.end() :].strip()
        if not code or code.startswith(".") or _ASSIGNMENT.match(code):
            continue
        current.append(" ".join(code.split(None, 1)))
        mnemonic = code.split(None, 1)[0]
        if mnemonic in CONDITIONAL or mnemonic in UNCONDITIONAL:
            flush()
    flush()
    return blocks


def comparable(block: Block) -> Block:
    """The block without its final unconditional transfer (llvm-mca 14 costs those as calls)."""
    if block.lines and block.lines[-1].split(None, 1)[0] in UNCONDITIONAL:
        return Block(block.name, block.lines[:-1])
    return block


def _mca_run(blocks: Sequence[Block], target: str) -> list[int | None]:
    """llvm-mca's Total Cycles of each block, None for a block it rejects."""
    _, mca_args = TARGETS[target]
    pending = list(range(len(blocks)))
    result: list[int | None] = [None] * len(blocks)
    while pending:
        text, starts = [], []
        line = 1
        for i in pending:
            starts.append(line)
            body = f"# LLVM-MCA-BEGIN b{i}\n{blocks[i].text}# LLVM-MCA-END\n"
            text.append(body)
            line += body.count("\n")
        proc = subprocess.run(
            [str(LLVM_MCA), *mca_args, "-iterations=1", "-instruction-info=false", "-resource-pressure=false"],
            input="".join(text),
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode == 0:
            totals = [int(x) for x in re.findall(r"^Total Cycles:\s+(\d+)", proc.stdout, re.MULTILINE)]
            regions = [int(x) for x in re.findall(r"^\[\d+\] Code Region - b(\d+)", proc.stdout, re.MULTILINE)]
            if len(pending) == 1 and not regions:
                regions = pending
            if len(regions) != len(totals) or sorted(regions) != sorted(pending):
                raise RuntimeError(f"unexpected llvm-mca output:\n{proc.stdout[:2000]}")
            for i, total in zip(regions, totals, strict=True):
                result[i] = total
            return result
        bad_lines = {int(n) for n in re.findall(r"^<stdin>:(\d+):\d+: error", proc.stderr, re.MULTILINE)}
        if not bad_lines:
            raise RuntimeError(f"llvm-mca failed:\n{proc.stderr[-2000:]}")
        bad = {pending[max(k for k, s in enumerate(starts) if s <= n)] for n in bad_lines}
        pending = [i for i in pending if i not in bad]
    return result


def mca_cycles(blocks: Sequence[Block], target: str, jobs: int | None = None) -> list[int | None]:
    """llvm-mca's ``Total Cycles`` for one iteration of each block (None: rejected), in parallel runs."""
    chunks = [blocks[i : i + BLOCKS_PER_RUN] for i in range(0, len(blocks), BLOCKS_PER_RUN)]
    with ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 1) as pool:
        parts = list(pool.map(lambda chunk: _mca_run(chunk, target), chunks))
    return [total for part in parts for total in part]


def compare_blocks(blocks: Iterable[Block], machine: Machine, target: str, label: str = "") -> Summary:
    """Compare the machine's estimate with llvm-mca on every non-empty block."""
    summary = Summary(label)
    usable = [b for b in (comparable(b) for b in blocks) if b.lines]
    unique = sorted({b.lines for b in usable})
    totals = mca_cycles([Block(f"u{i}", lines) for i, lines in enumerate(unique)], target)
    by_text = dict(zip(unique, totals, strict=True))
    estimates: dict[tuple[str, ...], int] = {}
    for block in usable:
        total = by_text[block.lines]
        if total is None:
            summary.skipped += 1
            continue
        if block.lines not in estimates:
            estimates[block.lines] = machine.estimate(parse_assembly(block.text))
        summary.rows.append(Comparison(block, estimates[block.lines], total - 1))
    return summary


def library_sources(name: str) -> tuple[list[Path], list[Path]]:
    """The C files and include directories of a library, from its sdist (downloaded once)."""
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        sdist: Callable[[str, str], Path] = importlib.import_module("sdists").sdist  # tests/sdists.py
    finally:
        sys.path.remove(str(ROOT / "tests"))
    lib = LIBRARIES[name]
    top = sdist(lib.package, lib.version)
    files = sorted(Path(p) for pattern in lib.sources for p in glob.glob(str(top / pattern)))
    if not files:
        raise RuntimeError(f"no sources matching {lib.sources} in {top}")
    return files, [top / i for i in lib.includes]


def library_blocks(name: str, target: str, jobs: int | None = None) -> list[Block]:
    """Every basic block of a library's sources compiled for ``target``."""
    files, includes = library_sources(name)
    with tempfile.TemporaryDirectory() as stubs:
        for header, text in LIBRARIES[name].stubs:
            (Path(stubs) / header).write_text(text)
        with ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 1) as pool:
            texts = list(pool.map(lambda f: compile_assembly(f, target, [*includes, Path(stubs)]), files))
    return [b for f, text in zip(files, texts, strict=True) for b in split_blocks(text, prefix=f"{f.name}:")]


def compare_library(name: str, target: str, machine: Machine) -> Summary:
    """A library's blocks on ``machine`` against llvm-mca."""
    return compare_blocks(library_blocks(name, target), machine, target, f"{name} {target}")


def report(summary: Summary, worst: int) -> str:
    """Agreement figures and the worst mismatches of one comparison."""
    rows = summary.rows
    exact = sum(r.diff == 0 for r in rows)
    diffs = Counter(r.diff for r in rows if r.diff)
    line = (
        f"{summary.label}: {len(rows)} blocks ({len({r.block.lines for r in rows})} distinct), "
        f"exact {exact}/{len(rows)} = {summary.exact:.2%}"
    )
    if summary.skipped:
        line += f", {summary.skipped} rejected by llvm-mca"
    if diffs:
        line += "; model - llvm-mca: " + ", ".join(f"{d:+d} x{n}" for d, n in sorted(diffs.items()))
    out = [line]
    for row in summary.worst(worst):
        out.append(f"  {row.block.name}: model {row.model}, llvm-mca {row.mca}")
        out.extend(f"      {text}" for text in row.block.lines)
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Compare a machine's block estimates with llvm-mca-14 on real C.")
    parser.add_argument("--libraries", nargs="+", choices=sorted(LIBRARIES), default=list(LIBRARIES))
    parser.add_argument("--targets", nargs="+", choices=sorted(TARGETS), default=["riscv64", "riscv32"])
    parser.add_argument("--machine", default="rocket", help="a shipped machine or a .toml path (default rocket)")
    parser.add_argument("--worst", type=int, default=5, help="mismatches to print per library (default 5)")
    args = parser.parse_args(argv)
    # Here, not at the top: tests/test_machine_mca.py imports this file without benchmarks/ on sys.path.
    from provenance import header_lines

    lines: list[str] = []

    def say(text: str) -> None:
        print(text, flush=True)
        lines.append(text)

    if not LLVM_MCA.exists():
        print(f"{LLVM_MCA} is missing", file=sys.stderr)
        return 2
    machine = load_machine(args.machine)
    overall: dict[str, Summary] = {}
    for target in args.targets:
        overall[target] = Summary(f"all {target}")
        for name in args.libraries:
            summary = compare_library(name, target, machine)
            overall[target].rows += summary.rows
            overall[target].skipped += summary.skipped
            say(report(summary, args.worst))
    for summary in overall.values():
        say(report(summary, 0))
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text("\n".join([*header_lines(), "", *lines]) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
