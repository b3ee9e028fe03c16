"""The executing RISC-V models (``zkvm`` and ``pipeline`` with ``execute = true``), measured in one run.

    .venv/bin/python benchmarks/riscv_models.py              # bench.py's --quick inputs, medians of 3
    .venv/bin/python benchmarks/riscv_models.py --full       # bench.py's full inputs (much longer)
    .venv/bin/python benchmarks/riscv_models.py --parts 1 3  # only some of the tables

Prints these tables:
  1. zkvm user cycles against an independent count: the riscv32 ELF the model executed, run again
     by ``tests/rv32emu.py`` (unicorn with Python hooks, no code of the executor's), per user
     function (the functions the program's own sources define), on bench.py's four workloads (with
     inputs small enough for a Python-hooked emulator) and on third-party code from PyPI sdists:
     lz4.c (lz4 4.4.5) compressing and decompressing a buffer, xxhash.c (xxhash 4.1.0) hashing one.
     Region markers (instrbudget.h's, which the executor skips without counting) are made ``nop``
     in the emulator's copy and their executions taken off their function's count;
  2. what a user pays: the whole ``run_program`` call with each executing model (zkvm; pipeline
     on inorder5, riscv32) against the plain native program (``BuildOptions(instrument=False)``)
     on the four workloads, medians of interleaved runs, and where the time goes: the native
     instrumented run (an ir-count build's ``run_program``), the executor measured phase by phase
     in a child process interleaved with those runs (setup, the run itself, the pipeline's block
     data computed in Python, reading the results back, and the child's start and exit);
  3. executor speed, RISC-V instructions per second inside the executor's run (wall and CPU time),
     per configuration on the largest workload: unicorn alone (no hooks, system calls only), the
     executor with no model (its block hook), with a model that only asks for memory accesses,
     zkvm, pipeline inorder5, pipeline rocket on riscv64, zkvm and pipeline together;
  4. build time of yyjson.c (10k lines, the ``yyjson`` sdist) with each executing model against
     the ir-count build, cold cache (a fresh ``cache_dir`` per build; zig's own caches, with its
     musl for both RISC-V targets, warmed by a build before the first measurement), with the
     extra phases of the executing builds.
  5. what a small test pays per run (programs of a few thousand to a few hundred thousand
     instructions, the size of a unit test's code): run_program with ir-count, zkvm and pipeline
     against the plain program, a first run (a process with no executor server yet, no block data
     kept beside the build) and repeated runs, in unicorn and translated.
No timing assertions: the script prints, the reader judges. It writes what it printed, after the
date, machine, commit and command, to ``benchmarks/results/riscv_models.txt`` (a run with
``--full`` too: its header's command says so); a run of some ``--parts`` writes
``riscv_models-parts-<parts>.txt`` instead, so that it never replaces a whole run's file.
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import dataclasses
import importlib
import json
import os
import resource
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for _path in (ROOT, HERE, ROOT / "tests"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from bench import make_workloads, stdin_words, time_command  # noqa: E402
from provenance import header_lines  # noqa: E402

import cbuild.build.builder  # noqa: E402
import cbuild.riscv.build  # noqa: E402
from cbuild import Builder, BuildOptions, run_program  # noqa: E402
from cbuild.build.builder import Artifact  # noqa: E402
from cbuild.models import default_registry  # noqa: E402
from cbuild.models.base import CostModel  # noqa: E402
from cbuild.riscv import executor as rvx  # noqa: E402
from cbuild.riscv.executor import KEEP_MACHINES  # noqa: E402
from cbuild.riscv.translated import TRANSLATE_AT  # noqa: E402

RESULTS = HERE / "results" / "riscv_models.txt"
INCLUDE = ROOT / "cbuild" / "include"  # instrbudget.h, which the builder adds by itself
#: Targets of the issue (ratios against the plain program, and build time against ir-count).
TARGETS = {"zkvm": 15.0, "pipeline": 25.0, "build": 2.0}

LZ4_MAIN = r"""
/* lz4 round trips of a generated text buffer (LZ4_compress_fast at several accelerations). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lz4.h"

static unsigned lcg(unsigned *s) { *s = *s * 1664525u + 1013904223u; return *s >> 8; }

int main(int argc, char **argv) {
    static const char *words[] = {"lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing",
                                  "elit", "sed", "do", "eiusmod", "tempor", "incididunt", "labore", "magna"};
    int size = argc > 1 ? atoi(argv[1]) : 1 << 18, rounds = argc > 2 ? atoi(argv[2]) : 3, n = 0;
    unsigned s = 1;
    char *src = malloc((size_t)size), *back = malloc((size_t)size);
    int bound = LZ4_compressBound(size);
    char *dst = malloc((size_t)bound);
    if (src == NULL || back == NULL || dst == NULL) return 1;
    while (n < size) {
        const char *w = words[lcg(&s) % 15u];
        for (; *w && n < size; w++) src[n++] = *w;
        if (n < size) src[n++] = lcg(&s) % 11u == 0 ? (char)('0' + lcg(&s) % 10u) : ' ';
    }
    unsigned long total = 0;
    for (int r = 0; r < rounds; r++) {
        int c = LZ4_compress_fast(src, dst, size, bound, 1 + 3 * r);
        if (c <= 0) return 2;
        int d = LZ4_decompress_safe(dst, back, c, size);
        if (d != size || memcmp(src, back, (size_t)size) != 0) return 3;
        total += (unsigned long)c;
        printf("acceleration %d: %d -> %d bytes\n", 1 + 3 * r, size, c);
    }
    printf("total %lu\n", total);
    return 0;
}
"""

XXHASH_MAIN = r"""
/* xxhash: XXH32, XXH64, XXH3 64 and 128 over a generated buffer, and XXH3/XXH32 of its short prefixes. */
#include <stdio.h>
#include <stdlib.h>
#include "xxhash.h"

int main(int argc, char **argv) {
    size_t size = argc > 1 ? strtoul(argv[1], NULL, 10) : 1u << 20;
    unsigned char *buf = malloc(size + 256);
    unsigned s = 1;
    if (buf == NULL) return 1;
    for (size_t i = 0; i < size + 256; i++) { s = s * 1664525u + 1013904223u; buf[i] = (unsigned char)(s >> 24); }
    XXH128_hash_t h128 = XXH3_128bits(buf, size);
    unsigned long long acc = 0;
    for (unsigned len = 0; len < 256; len++)
        acc ^= XXH3_64bits_withSeed(buf + len, len, len) + XXH32(buf, len, len) + XXH64(buf + len, len, len);
    printf("%08x %016llx %016llx %016llx%016llx %016llx\n", XXH32(buf, size, 0),
           (unsigned long long)XXH64(buf, size, 0), (unsigned long long)XXH3_64bits(buf, size),
           (unsigned long long)h128.high64, (unsigned long long)h128.low64, acc);
    free(buf);
    return 0;
}
"""


#: What :func:`say` printed, for the results file.
OUTPUT: list[str] = []


def say(text: str) -> None:
    """Print ``text`` and keep it for the results file."""
    print(text, flush=True)
    OUTPUT.append(text)


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def quiet_builder(cache: Path) -> Builder:
    return Builder(cache_dir=cache, progress=lambda message: None)


def sdist(name: str, version: str) -> Path:
    """An unpacked PyPI sdist, downloaded once (tests/sdists.py, kept under ~/.cache)."""
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        fetch: Callable[[str, str], Path] = importlib.import_module("sdists").sdist  # tests/sdists.py
        top = fetch(name, version)
    finally:
        sys.path.remove(str(ROOT / "tests"))
    return top


# ----------------------------------------------------------------------------------------------
# Programs
# ----------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Program:
    """A program to build: its sources, include directories, arguments and stdin."""

    name: str
    sources: list[Path]
    includes: tuple[Path, ...]
    args: list[str]
    stdin: bytes = b""

    @property
    def label(self) -> str:
        return f"{self.name} {' '.join(self.args)}".strip()

    @property
    def stem(self) -> str:
        """argv[0] of a run_program run: the first source's stem."""
        return self.sources[0].stem

    def options(self, **kw: Any) -> BuildOptions:
        return BuildOptions(include_dirs=self.includes, **kw)


#: bench.py's workloads by short name: sort, json, wordfreq, yyjson.
def workloads(yy: Path, *, full: bool) -> list[Program]:
    words = stdin_words(quick=not full)
    out = []
    for title, sources, includes, args in make_workloads(yy, quick=not full):
        name = title.split()[0]
        out.append(Program(name, sources, includes, args, words if name == "wordfreq" else b""))
    return out


#: Inputs for the emulator comparison: the emulator runs about 1M instructions/s.
EMULATOR_ARGS = {"sort": ["20000"], "json": ["1"], "wordfreq": ["10"], "yyjson": ["1"]}
EMULATOR_WORDS = 40_000  # bytes of wordfreq's input


def third_party(work: Path) -> list[Program]:
    """Programs on third-party C from PyPI sdists, with drivers written here."""
    lz4 = sdist("lz4", "4.4.5") / "lz4libs"
    xxh = sdist("xxhash", "4.1.0") / "deps" / "xxhash"
    (work / "lz4_roundtrip.c").write_text(LZ4_MAIN)
    (work / "xxhash_sums.c").write_text(XXHASH_MAIN)
    return [
        Program("lz4", [work / "lz4_roundtrip.c", lz4 / "lz4.c"], (lz4,), ["262144", "3"]),
        Program("xxhash", [work / "xxhash_sums.c", xxh / "xxhash.c"], (xxh,), ["1048576"]),
    ]


def zkvm_model(**extra: Any) -> CostModel:
    return default_registry().create("zkvm", {"execute": True, **extra})


def pipeline_model(machine: str = "inorder5") -> CostModel:
    return default_registry().create("pipeline", {"execute": True, "machine": machine})


def build_variants(
    builder: Builder, program: Program, models: dict[str, CostModel]
) -> tuple[Artifact, dict[str, Artifact]]:
    """The plain (uninstrumented) build, and the ir-count build and one build per model, by name."""
    plain = builder.build(program.sources, options=program.options(instrument=False))
    built = {"ir-count": builder.build(program.sources, options=program.options())}
    for name, model in models.items():
        built[name] = builder.build(program.sources, options=program.options(), models=[model])
    return plain, built


def run_checked(artifact: Artifact, program: Program, notes: list[str]) -> Any:
    """run_program, with its warnings (a RISC-V run that differs from the native one) kept."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = run_program(artifact, program.args, input=program.stdin, timeout=7200)
    notes.extend(f"{program.label}: {w.message}" for w in caught)
    return result


# ----------------------------------------------------------------------------------------------
# 1. zkvm user cycles against the emulator
# ----------------------------------------------------------------------------------------------

_MARKER_WORD, _NOP = 0x0000000B, 0x00000013


def _load_segments(data: bytes) -> list[tuple[int, int, int]]:
    """PT_LOAD segments of an ELF32 file: (vaddr, file offset, file size)."""
    (phoff,) = struct.unpack_from("<I", data, 28)
    phentsize, phnum = struct.unpack_from("<HH", data, 42)
    out = []
    for i in range(phnum):
        ptype, offset, vaddr, _, filesz = struct.unpack_from("<5I", data, phoff + i * phentsize)
        if ptype == 1:
            out.append((vaddr, offset, filesz))
    return out


def nop_markers(elf: Path) -> dict[int, str]:
    """Replace the region markers (custom-0 word 0x0000000b, not an RV32IM instruction) in the code of
    ``elf``'s functions by ``nop``; returns their addresses and functions."""
    import rv32emu  # type: ignore[import-not-found, unused-ignore]  # tests/rv32emu.py

    data = bytearray(elf.read_bytes())
    segments = _load_segments(bytes(data))
    found: dict[int, str] = {}
    for sym in rv32emu.elf_symbols(elf):
        for vaddr, offset, filesz in segments:
            if vaddr <= sym.address < vaddr + filesz:
                start = offset + sym.address - vaddr
                for at in range(start, start + sym.size - 3, 4):
                    if struct.unpack_from("<I", data, at)[0] == _MARKER_WORD:
                        struct.pack_into("<I", data, at, _NOP)
                        found[vaddr + at - offset] = sym.name
    elf.write_bytes(bytes(data))
    return found


def emulator_table(programs: Sequence[Program], work: Path, notes: list[str]) -> None:
    import rv32emu  # type: ignore[import-not-found, unused-ignore]  # tests/rv32emu.py

    say("\n== 1. zkvm user cycles vs an independent RV32IM emulator (tests/rv32emu.py), per user function ==")
    say(
        "Same riscv32 ELF on both sides (the one the model executed), same arguments and stdin; 'output': the\n"
        "emulator's stdout and exit status against the executor's, 'native': the executor's against the native\n"
        "x86-64 build's (lz4 hashes 5 bytes per position on 64-bit hosts and 4 on 32-bit ones, so its compressed\n"
        "sizes differ: run_program warns, below); 'markers': region markers made nop for the emulator."
    )
    model = zkvm_model()
    builder = quiet_builder(work / "cache")
    say(
        f"{'program':28} {'functions':>9} {'emulator user':>14} {'model user':>12} {'max |diff|':>10} "
        f"{'output':>7} {'native':>7} {'markers':>7} {'model s':>8} {'emulator s':>10}"
    )
    worst: list[tuple[int, str]] = []
    for program in programs:
        artifact = builder.build(program.sources, options=program.options(), models=[model])
        start = time.perf_counter()
        run = run_checked(artifact, program, notes)
        t_model = time.perf_counter() - start
        assert run.counts is not None
        measured = {c.metric: c for c in model.evaluate(run.counts)}["zk_user_cycles"].functions
        # The user functions: those the program's sources define (an RV32 build of them alone).
        here = work / "emu" / program.name
        here.mkdir(parents=True, exist_ok=True)
        own = rv32emu.build_rv32(
            program.sources, here / f"{program.stem}.own", include_dirs=[*program.includes, INCLUDE]
        )
        names = sorted({f.name for f in rv32emu.user_functions(own, rv32emu.object_files(own))})
        elf = here / program.stem  # argv[0] = the source's stem in both runs: musl's start-up reads it
        shutil.copy(artifact.machines()["riscv32"]["elf"], elf)
        markers = nop_markers(elf)
        cwd = Path.cwd()
        os.chdir(here)
        try:
            start = time.perf_counter()
            emulated = rv32emu.emulate(
                Path(program.stem), program.args, stdin=program.stdin, count_functions=names,
                record_blocks=bool(markers), max_instructions=10**10,
            )  # fmt: skip
            t_emu = time.perf_counter() - start
        finally:
            os.chdir(cwd)
        reference = dict(emulated.instructions_by_function)
        if markers:  # each executed nop stands for a marker the executor does not count
            at = sorted(markers)
            for address, n in emulated.block_trace:
                i = bisect.bisect_left(at, address)
                while i < len(at) and at[i] < address + 4 * n:
                    if markers[at[i]] in reference:
                        reference[markers[at[i]]] -= 1
                    i += 1
        compared = sorted(n for n in names if reference.get(n, 0) or measured.get(n, 0))
        diffs = {n: measured.get(n, 0) - reference.get(n, 0) for n in compared}
        biggest = max((abs(d) for d in diffs.values()), default=0)
        worst.append((biggest, program.label))
        for name, d in sorted(diffs.items()):
            if d:
                notes.append(
                    f"{program.label}: {name}: model {measured.get(name, 0):,} vs emulator {reference.get(name, 0):,}"
                )
        executed = run.counts.machine_run("riscv32")
        same = "same" if (emulated.stdout, emulated.exit_code) == (executed.stdout, executed.exit_code) else "DIFFER"
        native = "same" if (run.stdout, run.returncode) == (executed.stdout, executed.exit_code) else "differs"
        say(
            f"{program.label:28} {len(compared):9} {sum(reference[n] for n in compared):14,} "
            f"{sum(measured.get(n, 0) for n in compared):12,} {biggest:10,} {same:>7} {native:>7} {len(markers):7} "
            f"{t_model:8.2f} {t_emu:10.2f}"
        )
    exact = sum(1 for d, _ in worst if d == 0)
    say(f"exact per function on {exact} of {len(worst)} programs (target: all, difference 0)")


# ----------------------------------------------------------------------------------------------
# 2 and 3. Run time and executor speed
# ----------------------------------------------------------------------------------------------


class TimedBlockData:
    """A runtime's block-data producer, timed."""

    def __init__(self, producer: Callable[[Sequence[int], int], Sequence[int]]) -> None:
        self.producer = producer
        self.seconds = 0.0
        self.blocks = 0

    def __call__(self, words: Sequence[int], pc: int) -> Sequence[int]:
        start = time.perf_counter()
        try:
            return self.producer(words, pc)
        finally:
            self.seconds += time.perf_counter() - start
            self.blocks += 1


def probe(request: dict[str, Any]) -> dict[str, Any]:
    """One executor run in this (fresh) process, phase by phase; what ``run_isolated``'s child does."""
    if request.get("bare"):
        return probe_bare_unicorn(request)
    started = time.perf_counter()
    runtimes = rvx.slot_runtimes(request["slots"])
    timers = [TimedBlockData(r.block_data) if r.block_data is not None else None for r in runtimes]
    runtimes = [dataclasses.replace(r, block_data=t) if t else r for r, t in zip(runtimes, timers, strict=True)]
    stdin = Path(request["stdin"]).read_bytes()
    image = rvx.read_image(Path(request["elf"]))
    executor = rvx.Executor(Path(request["executor"]), image, runtimes)
    executor.set_register(rvx.REG_SP, executor.setup_stack([os.fsencode(a) for a in request["argv"]]))
    executor.lib.rvx_set_stdin(executor.handle, stdin, len(stdin))
    ready, cpu = time.perf_counter(), time.process_time()
    status = executor.run(image.entry)
    ran, cpu = time.perf_counter(), time.process_time() - cpu
    execution = executor.execution(status)
    done = time.perf_counter()
    return {
        "setup": ready - started,
        "run": ran - ready,
        "run_cpu": cpu,
        "block_data": sum(t.seconds for t in timers if t),
        "new_blocks": max((t.blocks for t in timers if t), default=0),
        "results": done - ran,
        "instructions": execution.instructions,
        "error": execution.error,
    }


def probe_bare_unicorn(request: dict[str, Any]) -> dict[str, Any]:
    """The riscv32 ELF in unicorn with no block or memory hook, only the system calls (tests/rv32emu.py's
    machine with its counting hooks left out): how fast the engine alone runs the program."""
    import rv32emu  # type: ignore[import-not-found, unused-ignore]  # tests/rv32emu.py

    unicorn: Any = importlib.import_module("unicorn")
    original = unicorn.Uc.hook_add

    def syscalls_only(self: Any, kind: int, callback: Any, *args: Any, **kwargs: Any) -> Any:
        return original(self, kind, callback, *args, **kwargs) if kind == unicorn.UC_HOOK_INTR else 0

    unicorn.Uc.hook_add = syscalls_only
    stdin = Path(request["stdin"]).read_bytes()
    with tempfile.TemporaryDirectory() as tmp:  # region markers, which unicorn cannot run, made nop
        elf = Path(tmp) / "guest"
        shutil.copy(request["elf"], elf)
        nop_markers(elf)
        machine = rv32emu._Machine(rv32emu._read_elf(elf.read_bytes()), None, 2**62, stdin)
    ready, cpu = time.perf_counter(), time.process_time()
    machine.run([os.fsencode(a) for a in request["argv"]])
    ran, cpu = time.perf_counter(), time.process_time() - cpu
    return {"run": ran - ready, "run_cpu": cpu, "block_data": 0.0, "instructions": 0, "error": machine.error or ""}


def run_probe(request: dict[str, Any]) -> dict[str, Any]:
    """:func:`probe` in a child process: {executor, elf, slots, argv, stdin (a file), bare}."""
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--probe", json.dumps(request)],
        capture_output=True, text=True, check=False, cwd=ROOT,
    )  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"probe failed:\n{proc.stderr[-3000:]}")
    found: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    if found["error"]:
        raise RuntimeError(f"executor run failed: {found['error']}")
    return found


def probe_machine(artifact: Artifact, target: str, program: Program, work: Path) -> dict[str, Any]:
    doc = artifact.machines()[target]
    stdin = work / "stdin"
    stdin.write_bytes(program.stdin)
    return run_probe(
        {"executor": doc["executor"], "elf": doc["elf"], "slots": doc["slots"], "argv": [program.stem, *program.args],
         "stdin": str(stdin)}
    )  # fmt: skip


def interpreter_start(repeat: int) -> float:
    """Median wall time of a Python process that imports the executor's module and exits."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import cbuild.riscv.executor"], check=True, cwd=ROOT)
        times.append(time.perf_counter() - start)
    return median(times)


def cpu_seconds() -> float:
    """User + system time of this process, its waited-for children and its live children (the
    executor servers run_program keeps) so far."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime + live_children_cpu()


def live_children_cpu() -> float:
    """User + system seconds of this process's children that are still running (Linux /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for children in Path("/proc/self/task").glob("*/children"):
        for pid in children.read_text().split():
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue  # ended meanwhile
            total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime (fields 14 and 15)
    return total


@dataclasses.dataclass
class Timed:
    """Wall and CPU seconds of repeated runs."""

    wall: list[float] = dataclasses.field(default_factory=list)
    cpu: list[float] = dataclasses.field(default_factory=list)

    def measure(self, fn: Callable[..., Any], *args: Any) -> Any:
        wall, cpu = time.perf_counter(), cpu_seconds()
        result = fn(*args)
        self.wall.append(time.perf_counter() - wall)
        self.cpu.append(cpu_seconds() - cpu)
        return result


@dataclasses.dataclass
class Speed:
    """Table 2's result for table 3: the largest workload and its plain run's median wall time."""

    program: Program
    plain: float


def runtime_table(programs: Sequence[Program], work: Path, repeat: int, notes: list[str]) -> Speed:
    """Table 2; returns the workload with the most riscv32 instructions."""
    say("\n== 2. Run time: run_program with an executing model vs the plain native program ==")
    say(
        f"Median of {repeat} interleaved runs each, warm caches (every build made, and each model's program run "
        "twice, before timing:\nthe first run records the code it reaches, the second compiles its translation if "
        "the run was long enough). Wall time is\nwhat a user waits; CPU time (user + system, the process and its "
        "children) is shown too, since other jobs share this machine's\ncores. 'engines': where zkvm / pipeline ran "
        "(t translated, u unicorn)."
    )
    builder = quiet_builder(work / "cache")
    models = {"zkvm": zkvm_model(), "pipeline": pipeline_model("inorder5")}
    say(
        f"{'workload':22} {'plain s':>8} {'ir-count s':>10} {'zkvm s':>8} {'ratio':>7} {'pipeline s':>10} "
        f"{'ratio':>7} {'CPU ratios':>14} {'engines':>7}  riscv32 instructions"
    )
    rows: list[tuple[Program, dict[str, float], dict[str, list[dict[str, Any]]]]] = []
    ratios: dict[str, list[float]] = {name: [] for name in models}
    biggest, most = Speed(programs[-1], 0.0), -1
    for program in programs:
        plain, built = build_variants(builder, program, models)
        times = {name: Timed() for name in ("plain", *built, *(f"probe {m}" for m in models))}
        results: dict[str, set[tuple[int, ...]]] = {name: set() for name in models}
        phases: dict[str, list[dict[str, Any]]] = {name: [] for name in models}
        instructions = 0
        engines: dict[str, set[str]] = {name: set() for name in models}
        for name in models:  # records the reached code, then compiles the translation
            run_checked(built[name], program, notes)
            run_checked(built[name], program, notes)
        for _ in range(repeat):
            times["plain"].measure(time_command, [str(plain.path), *program.args], program.stdin)
            for name, artifact in built.items():
                run = times[name].measure(run_checked, artifact, program, notes)
                if name in models:
                    assert run.counts is not None
                    results[name].add(tuple(run.counts.results_of(name)))
                    instructions = run.counts.machine_run("riscv32").instructions
                    engines[name].add(run.counts.machine["riscv32"].engine[0])
                    # The same executor run again in a child process that times its phases.
                    probe = times[f"probe {name}"]
                    phases[name].append(probe.measure(probe_machine, artifact, "riscv32", program, work))
                    phases[name][-1]["wall"] = probe.wall[-1]
        best = {name: median(t.wall) for name, t in times.items()}
        cpu = {name: median(t.cpu) for name, t in times.items()}
        for name in models:
            ratios[name].append(best[name] / best["plain"])
            if len(results[name]) != 1:
                notes.append(f"{program.label}: {name} results differ between runs: {sorted(results[name])}")
        if instructions > most:
            biggest, most = Speed(program, best["plain"]), instructions
        rows.append((program, best, phases))
        cpu_ratios = f"{cpu['zkvm'] / cpu['plain']:.0f}x / {cpu['pipeline'] / cpu['plain']:.0f}x"
        ran = " / ".join("".join(sorted(engines[name])) for name in models)
        say(
            f"{program.label:22} {best['plain']:8.3f} {best['ir-count']:10.3f} {best['zkvm']:8.2f} "
            f"{best['zkvm'] / best['plain']:6.1f}x {best['pipeline']:10.2f} {best['pipeline'] / best['plain']:6.1f}x"
            f" {cpu_ratios:>14} {ran:>7}  {instructions:,}"
        )
    say(
        f"{'geometric mean':22} {'':8} {'':10} {'':8} {statistics.geometric_mean(ratios['zkvm']):6.1f}x "
        f"{'':10} {statistics.geometric_mean(ratios['pipeline']):6.1f}x"
    )
    for name in models:
        worst = max(ratios[name])
        verdict = "met" if worst <= TARGETS[name] else "MISSED"
        say(f"target {name} <= {TARGETS[name]:.0f}x on every workload: {verdict} (worst {worst:.1f}x)")

    start_cost = interpreter_start(repeat)
    say(
        "\nWhere the time goes (wall s, medians): native = the ir-count build's run_program; executor = a child\n"
        "process running the same executor run (interleaved with the runs above), split into setup (read the ELF,\n"
        "map, load), run (unicorn with the native hooks; for pipeline including the block data computed in Python,\n"
        "shown apart with the number of blocks), results (blocks and functions read back) and start/exit\n"
        "(interpreter start, imports, exit: the child's wall time less its phases;\n"
        "`python -c 'import cbuild.riscv.executor'`\n"
        f"alone takes {start_cost:.2f} s); other = total - native - (executor - start/exit): run_program's runs go\n"
        "to an executor server it keeps, which pays start/exit once, not per run."
    )
    say(
        f"{'workload':22} {'model':9} {'total':>7} {'native':>7} {'executor':>8} {'setup':>6} {'run':>7} "
        f"{'blk data':>8} {'blocks':>6} {'results':>7} {'start/exit':>10} {'other':>6}"
    )
    for program, best, phases in rows:
        for name in models:
            found = phases[name]
            child = best[f"probe {name}"]
            start_exit = median([f["wall"] - f["setup"] - f["run"] - f["results"] for f in found])
            say(
                f"{program.label:22} {name:9} {best[name]:7.2f} {best['ir-count']:7.2f} {child:8.2f} "
                f"{median([f['setup'] for f in found]):6.2f} {median([f['run'] for f in found]):7.2f} "
                f"{median([f['block_data'] for f in found]):8.2f} {found[0]['new_blocks']:6} "
                f"{median([f['results'] for f in found]):7.2f} {start_exit:10.2f} "
                f"{best[name] - best['ir-count'] - (child - start_exit):6.2f}"
            )
    return biggest


#: A cost model that does nothing, but asks for every memory access: what the access hook itself costs.
EMPTY_MODEL = """
static inline void model_block(const rvx_block *b) { (void)b; }
static inline void model_access(uint64_t a, uint32_t s, uint32_t w, uint32_t k) { (void)a; (void)s; (void)w; (void)k; }
static void model_reset(void) {}
static void model_finish(uint64_t *out) { (void)out; }
static inline uint64_t model_now(void) { return 0; }
"""


def speed_table(speed: Speed, work: Path, repeat: int) -> None:
    program = speed.program
    say(f"\n== 3. Executor speed on the largest workload ({program.label}) ==")
    say(
        f"RISC-V instructions per second of the executor's run (rvx_run), by wall and by CPU time, median of {repeat} "
        "runs,\neach in a fresh process (so the pipeline's block data, computed in Python, is in every run; "
        "'CPU w/o data'\ntakes its time off). 'unicorn alone': the same ELF with no block or memory hook, system "
        "calls only;\n'executor, empty mem. hook': the executor with a model that does nothing but asks for every "
        "memory access."
    )
    builder = quiet_builder(work / "cache")
    configs: list[tuple[str, str, list[CostModel]]] = [
        ("zkvm", "riscv32", [zkvm_model()]),
        ("pipeline inorder5", "riscv32", [pipeline_model("inorder5")]),
        ("pipeline rocket", "riscv64", [pipeline_model("rocket")]),
        ("zkvm + pipeline inorder5", "riscv32", [zkvm_model(), pipeline_model("inorder5")]),
    ]
    stdin = work / "stdin"
    stdin.write_bytes(program.stdin)
    argv = [program.stem, *program.args]
    plans: list[tuple[str, str, dict[str, Any]]] = []
    for label, target, models in configs:
        artifact = builder.build(program.sources, options=program.options(), models=models)
        doc = artifact.machines()[target]
        request = {"executor": doc["executor"], "elf": doc["elf"], "slots": doc["slots"], "argv": argv}
        plans.append((label, target, request))
        if label == "zkvm":
            no_model = rvx.build_executor(builder.toolchain, builder.cache, [])  # the block hook alone
            empty = rvx.build_executor(builder.toolchain, builder.cache, [rvx.ExecRuntime(EMPTY_MODEL, 0, memory=True)])
            plans[:0] = [
                ("unicorn alone (no hooks)", target, {**request, "bare": True}),
                ("executor, no model", target, {**request, "executor": str(no_model), "slots": []}),
                (
                    "executor, empty mem. hook",
                    target,
                    {**request, "executor": str(empty), "slots": [["empty", 0, 0, True, None]]},
                ),
            ]
    say(
        f"{'configuration':26} {'target':8} {'instructions':>14} {'run s':>7} {'M/s wall':>8} {'CPU s':>7} "
        f"{'M/s CPU':>8} {'data s':>7} {'M/s CPU w/o data':>16}"
    )
    measured = []
    for label, target, request in plans:
        found = [run_probe({**request, "stdin": str(stdin)}) for _ in range(repeat)]
        run, cpu = median([f["run"] for f in found]), median([f["run_cpu"] for f in found])
        measured.append((label, target, found[0]["instructions"], run, cpu, median([f["block_data"] for f in found])))
    riscv32 = next(n for _, target, n, *_ in measured if target == "riscv32" and n)
    fastest = 0.0
    for label, target, n, run, cpu, data in measured:
        n = n or riscv32  # unicorn alone does not count: the same ELF as the executor's riscv32 rows
        if not fastest:
            fastest = n / cpu
        say(
            f"{label:26} {target:8} {n:14,} {run:7.2f} {n / run / 1e6:8.1f} {cpu:7.2f} {n / cpu / 1e6:8.1f} "
            f"{data:7.2f} {n / (cpu - data) / 1e6:16.1f}"
        )
    if speed.plain and fastest:
        floor = riscv32 / fastest / speed.plain
        say(
            f"Even unicorn alone would take {riscv32 / fastest:.2f} s of CPU for this workload: {floor:.0f}x the plain "
            f"program's {speed.plain:.3f} s, before any hook, process start or native run."
        )


# ----------------------------------------------------------------------------------------------
# 4. Build time
# ----------------------------------------------------------------------------------------------


@contextlib.contextmanager
def phase_timers(seconds: dict[str, float]) -> Iterator[None]:
    """Time the executing builds' extra steps by wrapping the engine's functions (restored after)."""

    def timed(module: Any, attr: str, label: Callable[..., str]) -> None:
        original = getattr(module, attr, None)
        if original is None:  # the engine changed: that phase goes untimed
            return

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                key = label(*args, **kwargs)
                seconds[key] = seconds.get(key, 0.0) + time.perf_counter() - start

        patches.append((module, attr, original))
        setattr(module, attr, wrapper)

    patches: list[tuple[Any, str, Any]] = []
    timed(cbuild.build.builder, "build_riscv", lambda *a, **k: "riscv build")
    timed(cbuild.build.builder, "build_executor", lambda *a, **k: "executor .so")
    timed(cbuild.riscv.build, "compile_unit", lambda *a, **k: "  clang to IR")
    timed(cbuild.riscv.build, "_run", lambda cmd, *a: "  codegen" if "-c" in cmd else "  link")
    timed(cbuild.riscv.build, "_abi_object", lambda *a: "  abi table")
    try:
        yield
    finally:
        for module, attr, original in reversed(patches):
            setattr(module, attr, original)


def build_table(yy: Path, work: Path, repeat: int) -> None:
    src = yy / "yyjson.c"
    lines = sum(1 for _ in src.open(errors="replace"))
    say(f"\n== 4. Build time of yyjson.c ({lines:,} lines, -O2, kind=library): executing models vs ir-count ==")
    configs: list[tuple[str, Callable[[], list[CostModel]]]] = [
        ("ir-count only", list),
        ("zkvm execute", lambda: [zkvm_model()]),
        ("pipeline execute inorder5", lambda: [pipeline_model("inorder5")]),
        ("pipeline execute rocket", lambda: [pipeline_model("rocket")]),
        ("zkvm + pipeline inorder5", lambda: [zkvm_model(), pipeline_model("inorder5")]),
    ]
    # Warm zig's caches (its musl for riscv32 and riscv64, compiler_rt) in a cache_dir thrown away after.
    with tempfile.TemporaryDirectory(dir=work) as cache:
        for warm in ([zkvm_model(), pipeline_model("inorder5")], [pipeline_model("rocket")]):
            quiet_builder(Path(cache)).build([src], kind="library", models=warm)
    times: dict[str, list[float]] = {label: [] for label, _ in configs}
    phases: dict[str, dict[str, float]] = {label: {} for label, _ in configs}
    for _ in range(repeat):  # interleaved, so that machine noise hits every configuration alike
        for label, models in configs:
            with tempfile.TemporaryDirectory(dir=work) as cache, phase_timers(phases[label]):
                start = time.perf_counter()
                quiet_builder(Path(cache)).build([src], kind="library", models=models())
                times[label].append(time.perf_counter() - start)
    say(
        f"Cold cache (fresh cache_dir per build), zig's caches warm; median of {repeat} builds each; "
        "phases: mean seconds per build."
    )
    base = median(times["ir-count only"])
    say(f"{'configuration':28} {'build s':>8} {'vs ir-count':>11}  extra phases")
    worst = 0.0
    for label, _ in configs:
        t = median(times[label])
        ratio = t / base
        if label != "ir-count only" and "+" not in label:
            worst = max(worst, ratio)
        found = {k.strip(): v / repeat for k, v in phases[label].items()}
        parts = ", ".join(f"{k} {found[k]:.2f}" for k in ("clang to IR", "codegen", "abi table", "link") if k in found)
        extra = ""
        if "riscv build" in found:
            extra = f"riscv build {found['riscv build']:.2f} ({parts}), executor .so {found.get('executor .so', 0):.2f}"
        say(f"{label:28} {t:8.2f} {ratio:10.2f}x  {extra}")
    verdict = "met" if worst <= TARGETS["build"] else "MISSED"
    say(f"target <= {TARGETS['build']:.0f}x for each model alone: {verdict} (worst {worst:.2f}x)")


# ----------------------------------------------------------------------------------------------


TINY_C = r"""
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    long long n = argc > 1 ? atoll(argv[1]) : 1000, s = 0;  /* long is 32 bits on riscv32 */
    for (long long i = 0; i < n; i++) s += i * i % 7;
    printf("%lld\\n", s);
    return 0;
}
"""


def first_run(artifact: Artifact, program: Program, notes: list[str]) -> Any:
    """run_program as the first RISC-V run of a process would be: no executor server, and no
    block data kept beside the build (removed before)."""
    rvx.close_servers()
    for doc in artifact.machines().values():
        if "elf" in doc:
            for kept in Path(doc["elf"]).parent.glob(Path(doc["elf"]).name + ".blocks-*"):
                kept.unlink()
    return run_checked(artifact, program, notes)


@contextlib.contextmanager
def setting(name: str, value: str) -> Iterator[None]:
    """An ``INSTRBUDGET_*`` setting in this process's environment (executor servers started
    meanwhile take it), as a user who sets it gets."""
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


def translated_run(artifact: Artifact, program: Program, notes: list[str]) -> Any:
    """run_program meant to run translated (with ``INSTRBUDGET_TRANSLATE_AT=0``, in a server started
    there); a run that was not is noted."""
    run = run_checked(artifact, program, notes)
    assert run.counts is not None
    machine = run.counts.machine["riscv32"]
    if machine.engine != "translated":
        notes.append(f"{program.label}: a run meant to be translated ran in {machine.engine}: {machine.note}")
    return run


def small_table(programs: Sequence[Program], work: Path, repeat: int, notes: list[str]) -> None:
    """Table 5."""
    say("\n== 5. Small programs: what a unit-test-sized run pays ==")
    say(
        f"Median wall ms of {repeat} interleaved runs. 'first': the process's first RISC-V run (its executor server\n"
        "starts, the pipeline's block data is computed); 'again': later runs (a kept server, block data read back),\n"
        "in unicorn (these runs are shorter than INSTRBUDGET_TRANSLATE_AT's default): the server's second run, on the\n"
        "machine it kept from its first; 'new': the same in a server started with INSTRBUDGET_KEEP_MACHINES=0, on a\n"
        "new machine; 'translated': later runs with INSTRBUDGET_TRANSLATE_AT=0 (translated; timed after the others,\n"
        "in a server started with that setting, the translation compiled once before)."
    )
    builder = quiet_builder(work / "cache-small")
    models = {"zkvm": zkvm_model(), "pipeline": pipeline_model("inorder5")}
    say(
        f"{'program':22} {'plain':>7} {'ir-count':>8} {'zkvm first':>10} {'again':>7} {'new':>7} {'translated':>10} "
        f"{'pipeline first':>14} {'again':>7} {'new':>7} {'translated':>10}  riscv32 instructions"
    )
    for program in programs:
        plain, built = build_variants(builder, program, models)
        kinds = ("first", "new", "translated")
        names = ("plain", "ir-count", *models, *(f"{m} {kind}" for m in models for kind in kinds))
        times = {name: Timed() for name in names}
        instructions = 0
        for _ in range(repeat):
            times["plain"].measure(time_command, [str(plain.path), *program.args], program.stdin)
            times["ir-count"].measure(run_checked, built["ir-count"], program, notes)
            for name in models:
                times[f"{name} first"].measure(first_run, built[name], program, notes)
                run = times[name].measure(run_checked, built[name], program, notes)
                assert run.counts is not None
                instructions = run.counts.machine_run("riscv32").instructions
                with setting(KEEP_MACHINES, "0"):  # the executor server reads it when it starts
                    first_run(built[name], program, notes)
                    times[f"{name} new"].measure(run_checked, built[name], program, notes)
        with setting(TRANSLATE_AT, "0"):
            rvx.close_servers()
            for name in models:  # records the reached code (if not yet), compiles the translation
                run_checked(built[name], program, notes)
                translated_run(built[name], program, notes)
            for _ in range(repeat):
                for name in models:
                    times[f"{name} translated"].measure(translated_run, built[name], program, notes)
        rvx.close_servers()
        ms = {name: 1000 * median(t.wall) for name, t in times.items()}
        say(
            f"{program.label:22} {ms['plain']:7.1f} {ms['ir-count']:8.1f} {ms['zkvm first']:10.1f} {ms['zkvm']:7.1f} "
            f"{ms['zkvm new']:7.1f} {ms['zkvm translated']:10.1f} {ms['pipeline first']:14.1f} {ms['pipeline']:7.1f} "
            f"{ms['pipeline new']:7.1f} {ms['pipeline translated']:10.1f}  {instructions:,}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--full", action="store_true", help="bench.py's full inputs for tables 2 and 3")
    parser.add_argument("--repeat", type=int, default=3, help="runs per median (default 3)")
    parser.add_argument("--parts", nargs="+", type=int, choices=(1, 2, 3, 4, 5), default=[1, 2, 3, 4, 5])
    parser.add_argument("--probe", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        print(json.dumps(probe(json.loads(args.probe))))  # to the parent, not to the results
        return 0
    say(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="instrbudget-riscv-") as tmp:
        work = Path(tmp)
        yy = sdist("yyjson", "4.0.6") / "yyjson"
        programs = workloads(yy, full=args.full)
        if 1 in args.parts:
            small = [
                dataclasses.replace(
                    p,
                    args=EMULATOR_ARGS[p.name],
                    stdin=p.stdin[:EMULATOR_WORDS] if p.stdin else b"",
                )
                for p in programs
            ]
            emulator_table([*small, *third_party(work)], work, notes)
        biggest = Speed(next(p for p in programs if p.name == "yyjson"), 0.0)
        if 2 in args.parts:
            biggest = runtime_table(programs, work, args.repeat, notes)
        if 3 in args.parts:
            speed_table(biggest, work, args.repeat)
        if 4 in args.parts:
            build_table(yy, work, args.repeat)
        if 5 in args.parts:
            (work / "tiny.c").write_text(TINY_C)
            sort = next(p for p in programs if p.name == "sort")
            small = [
                Program("loop", [work / "tiny.c"], (), ["1000"]),
                Program("loop", [work / "tiny.c"], (), ["100000"]),
                dataclasses.replace(sort, args=["2000"]),
            ]
            small_table(small, work, args.repeat, notes)
    say(f"\nload average at the end {os.getloadavg()[0]:.2f} (1 min), {os.getloadavg()[2]:.2f} (15 min)")
    say("\n== Notes ==")
    say("\n".join(notes) if notes else "none: no per-function difference, no run that differed from the native one")
    # A run of some parts keeps its own file: it never replaces a whole run's.
    parts = sorted(set(args.parts))
    some = f"riscv_models-parts-{'-'.join(map(str, parts))}.txt"
    results = RESULTS if parts == [1, 2, 3, 4, 5] else RESULTS.with_name(some)
    results.parent.mkdir(exist_ok=True)
    results.write_text("\n".join([*header_lines(), "", *OUTPUT]) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
