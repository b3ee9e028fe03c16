"""Translated execution of the RISC-V builds (cbuild/riscv/translate.py, translated.py) against unicorn.

The whole test session runs with INSTRBUDGET_CHECK_TRANSLATION set (tests/conftest.py): every
program run of a RISC-V build runs in both engines and fails on any difference. These tests add
what that cannot show: the arithmetic corner cases, the engine each run used, and the ways a
translated run hands over to unicorn.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cbuild import Builder, BuildOptions, Library, run_program
from cbuild.build.builder import Artifact
from cbuild.models import CostModel, default_registry
from cbuild.riscv import executor, messages, translate, translated
from cbuild.riscv.translate import Block
from cbuild.riscv.translated import (
    CHECK_TRANSLATION,
    HOT,
    RISCV_ENGINE,
    TRANSLATE_AT,
    reached_path,
    read_reached,
)

CORNERS_C = r"""
#include <limits.h>
#include <stdio.h>
#if __SIZEOF_LONG__ == 8
typedef __int128 wide;
typedef unsigned __int128 uwide;
#else
typedef long long wide;
typedef unsigned long long uwide;
#endif
#define BITS (8 * (int)sizeof(long))
typedef unsigned long ul;
/* RISC-V's division: by zero and the one overflow are defined; the native build computes the same. */
#ifdef __riscv
#define RV(op, a, b) ({ long r_; __asm__ volatile(op " %0, %1, %2" : "=r"(r_) : "r"(a), "r"(b)); r_; })
#define DIV(a, b) RV("div", a, b)
#define DIVU(a, b) RV("divu", a, b)
#define REM(a, b) RV("rem", a, b)
#define REMU(a, b) RV("remu", a, b)
#else
#define DIV(a, b) ((b) == 0 ? -1L : (a) == LONG_MIN && (b) == -1 ? LONG_MIN : (a) / (b))
#define DIVU(a, b) ((b) == 0 ? -1L : (long)((ul)(a) / (ul)(b)))
#define REM(a, b) ((b) == 0 ? (a) : (a) == LONG_MIN && (b) == -1 ? 0L : (a) % (b))
#define REMU(a, b) ((b) == 0 ? (a) : (long)((ul)(a) % (ul)(b)))
#endif
#if defined(__riscv) && __riscv_xlen == 64
#define DIVW(a, b) RV("divw", a, b)
#define REMUW(a, b) RV("remuw", a, b)
#else
#define DIVW(a, b) ((long)((int)(b) == 0 ? -1 : (int)(a) == INT_MIN && (int)(b) == -1 ? INT_MIN : (int)(a) / (int)(b)))
#define REMUW(a, b) ((long)(int)((unsigned)(b) == 0 ? (unsigned)(a) : (unsigned)(a) % (unsigned)(b)))
#endif
static volatile long v[] = {0, 1, -1, 7, -7, LONG_MIN, LONG_MAX, 0x5555, -0x10000};
static volatile int w[] = {0, 1, -1, 7, -7, INT_MIN, INT_MAX, 0x5555, -0x10000};
int main(int argc, char **argv) {
    ul h = 0;
    int n = sizeof v / sizeof v[0];
    (void)argv;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            long a = v[i], b = v[j];
            ul ua = (ul)a, ub = (ul)b;
            int x = w[i], y = w[j];
            h = h * 31 + (ul)DIV(a, b) + (ul)REM(a, b) + (ul)DIVU(a, b) + (ul)REMU(a, b);
            h = h * 31 + (ul)DIVW(a, b) + (ul)REMUW(a, b);
            h = h * 31 + (ul)(((wide)a * b) >> BITS) + (ul)(((uwide)ua * ub) >> BITS);
            h = h * 31 + (ua << (j * 7 % BITS)) + (ua >> (i * 5 % BITS)) + (ul)(a >> (j * 3 % BITS));
            h = h * 31 + (unsigned)(y ? (y == -1 ? -(unsigned)x : (unsigned)(x / y)) : 0);
            h = h * 31 + (unsigned)(x < y) + (ua < ub) + (unsigned)(x % ((y & 0xff) | 2));
            h = h * 31 + ((unsigned)x >> (j % 32)) + (unsigned)(x >> (i % 32)) + ((unsigned)x << (j % 32));
        }
    int shared = argc, old = 5;
    __atomic_compare_exchange_n(&shared, &old, 9, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    h = h * 31 + (unsigned)__atomic_fetch_add(&shared, 3, __ATOMIC_SEQ_CST) + (unsigned)shared + (unsigned)old;
    printf("%lx %zu\n", h, sizeof(long));
    return 0;
}
"""

PATHS_C = r"""
#include <stdio.h>
#include <string.h>
__attribute__((noinline)) static unsigned first(unsigned n) {
    unsigned s = 1;
    for (unsigned i = 0; i < n; i++) s = s * 3 + i;
    return s;
}
__attribute__((noinline)) static unsigned second(unsigned n) {
    unsigned s = 0;
    for (unsigned i = 0; i < n; i++) s ^= s << 5 ^ i;
    return s;
}
int main(int argc, char **argv) {
    unsigned n = 2000;
    printf("%u\n", argc > 1 && strcmp(argv[1], "second") == 0 ? second(n) : first(n));
    return 0;
}
"""

CALLS_C = r"""
#include <stdio.h>
#include <stdlib.h>
/* Calls through pointers, a dense switch (a jump table), recursion deeper than the translation
 * nests host calls, and qsort calling back into the program. */
typedef unsigned (*step)(unsigned);
__attribute__((noinline)) static unsigned twice(unsigned v) { return v * 2 + 1; }
__attribute__((noinline)) static unsigned thrice(unsigned v) { return v * 3 ^ 5; }
__attribute__((noinline)) static unsigned pick(unsigned v, unsigned k) {
    switch (k % 9) {
    case 0: return v + 11;
    case 1: return v ^ 0x55;
    case 2: return v * 7;
    case 3: return v >> 3;
    case 4: return v - 13;
    case 5: return v << 2;
    case 6: return ~v;
    case 7: return v * v;
    default: return v + k;
    }
}
__attribute__((noinline)) static unsigned deep(unsigned n) { return n == 0 ? 1 : deep(n - 1) * 3 + n; }
static int by_value(const void *a, const void *b) {
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
    return (x > y) - (x < y);
}
int main(int argc, char **argv) {
    static step steps[] = {twice, thrice};
    unsigned v = (unsigned)argc, keys[64];
    (void)argv;
    for (unsigned i = 0; i < 3000; i++) v = pick(steps[i & 1](v), i);
    for (unsigned i = 0; i < 64; i++) keys[i] = (v >> (i % 23)) * 2654435761u;
    qsort(keys, 64, sizeof keys[0], by_value);
    printf("%u %u %u %u\n", v, deep(200), keys[0], keys[63]);
    return 0;
}
"""

#: Guest functions that keep values in registers across calls against the calling convention: the
#: caller leaves a value in t3 for the callee's callee, which adds 7 to s2, which the caller reads
#: back; 2v + 207 only if every register a callee (or what it calls) may read or write is in the
#: machine around the host call, and comes back from it.
REGISTERS_C = r"""
#include <stdio.h>
#ifndef __riscv
static unsigned odd_caller(unsigned v) { return 2 * v + 207; } /* the native build's */
#else
unsigned odd_caller(unsigned);
__asm__(".text\n"
        ".globl odd_leaf\n.type odd_leaf, @function\nodd_leaf:\n"
        "  add a0, a0, t3\n  addi s2, s2, 7\n  ret\n.size odd_leaf, .-odd_leaf\n"
        ".globl odd_middle\n.type odd_middle, @function\nodd_middle:\n"
        "  addi sp, sp, -16\n  sw ra, 12(sp)\n  call odd_leaf\n  lw ra, 12(sp)\n  addi sp, sp, 16\n  ret\n"
        ".size odd_middle, .-odd_middle\n"
        ".globl odd_caller\n.type odd_caller, @function\nodd_caller:\n"
        "  addi sp, sp, -16\n  sw ra, 12(sp)\n  sw s2, 8(sp)\n  li t3, 100\n  mv s2, a0\n"
        "  call odd_middle\n  add a0, a0, s2\n  add a0, a0, t3\n"
        "  lw s2, 8(sp)\n  lw ra, 12(sp)\n  addi sp, sp, 16\n  ret\n.size odd_caller, .-odd_caller\n");
#endif
int main(void) {
    unsigned sum = 0;
    for (unsigned v = 0; v < 3000; v++) sum += odd_caller(v) == 2 * v + 207;
    printf("%u\n", sum);
    return 0;
}
"""

Writer = Callable[[str, str], Path]


def _models(target: str) -> list[CostModel]:
    registry = default_registry()
    if target == "riscv64":
        return [registry.create("pipeline", {"execute": True, "machine": "rocket"})]
    return [registry.create("zkvm", {"execute": True}), registry.create("pipeline", {"execute": True})]


@pytest.mark.parametrize("target", ["riscv32", "riscv64"])
@pytest.mark.filterwarnings("ignore:.*riscv32 build's output")  # long has 32 bits there, 64 natively
def test_translated_runs_compute_what_unicorn_computes_on_arithmetic_corner_cases(
    builder: Builder, write: Writer, target: str
) -> None:
    """Division by zero and overflow (RISC-V's own results), high products, shifts by any amount, the
    32-bit forms of RV64, lr/sc: the session's check compares them with unicorn; the 64-bit build
    also prints what the native build prints."""
    artifact = builder.build(
        [write("corners.c", CORNERS_C)], options=BuildOptions(opt_level="1"), models=_models(target)
    )
    run = run_program(artifact, [])
    assert run.counts is not None
    machine = run.counts.machine[target]
    assert machine.engine == "translated", machine.note
    digest, width = machine.stdout.split()
    assert width == (b"4" if target == "riscv32" else b"8")
    assert len(digest) > 4
    if target == "riscv64":
        assert machine.stdout == run.stdout


@pytest.mark.parametrize("target", ["riscv32", "riscv64"])
def test_calls_through_pointers_jump_tables_and_deep_recursion_run_translated(
    builder: Builder, write: Writer, target: str
) -> None:
    """Guest calls through registers and ``auipc``+``jalr`` calls are host calls of the translated
    callee, a jump table a switch within the function, and recursion past the nesting limit goes
    through the dispatcher: the session's check compares every result with unicorn's."""
    artifact = builder.build([write("calls.c", CALLS_C)], models=_models(target))
    run = run_program(artifact, [])
    assert run.counts is not None
    machine = run.counts.machine[target]
    assert machine.engine == "translated", machine.note
    assert machine.stdout == run.stdout


def test_registers_a_callee_reads_or_writes_against_the_calling_convention_cross_its_host_call(
    builder: Builder, write: Writer
) -> None:
    """A host call stores only the registers the callee and what it calls may read or write, and
    loads back those they may write: registers kept across calls against the calling convention
    (a temporary read two calls down, a saved register changed) keep their values."""
    artifact = builder.build([write("registers.c", REGISTERS_C)], models=_models("riscv32"))
    run = run_program(artifact, [])
    assert run.counts is not None
    machine = run.counts.machine["riscv32"]
    assert machine.engine == "translated", machine.note
    assert machine.stdout == b"3000\n"
    elf = Path(artifact.machines()["riscv32"]["elf"])
    image = executor.read_image(elf)
    starts = {name: start for start, _, name in image.functions}
    text = translate.translate(image, read_reached(elf).blocks)
    # The guest calls are host calls: odd_caller's function calls odd_middle's, which calls odd_leaf's.
    for caller, callee in (("odd_caller", "odd_middle"), ("odd_middle", "odd_leaf")):
        body = text.split(f"define internal i64 @rvt_f{starts[caller]:x}(", 1)[1].split("\n}", 1)[0]
        assert f"call i64 @rvt_f{starts[callee]:x}(" in body


Direct = tuple[Path, Path, Path, list[executor.ExecRuntime]]


def _direct(artifact: Artifact, target: str = "riscv32") -> Direct:
    doc = artifact.machines()[target]
    return Path(doc["executor"]), Path(doc["elf"]), Path(doc["translation"]), executor.slot_runtimes(doc["slots"])


@pytest.fixture
def paths(builder: Builder, write: Writer, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Direct:
    """PATHS_C's zkvm + pipeline build (executor, ELF, translated executor, runtimes), run here by
    the executor's own run_program: each call runs one engine unless asked for both. Each test
    gets a build of its own (the source names the test), so that tests running at the same time
    never share the recorded blocks beside an ELF."""
    monkeypatch.setenv(CHECK_TRANSLATION, "0")
    monkeypatch.setenv(TRANSLATE_AT, "0")  # runs of any length are translated
    source = write("paths.c", f"{PATHS_C}/* {request.node.name} */\n")
    return _direct(builder.build([source], models=_models("riscv32")))


def test_a_run_that_reaches_new_code_runs_in_unicorn_and_the_next_is_translated(paths: Direct) -> None:
    library, elf, translation, runtimes = paths
    reached_path(elf).unlink(missing_ok=True)

    def run(*argv: str) -> executor.Execution:
        return executor.run_program(library, elf, runtimes, [elf.name, *argv], translation=translation)

    first = run("first")
    assert (first.engine, first.note) == ("unicorn", "")
    again = run("first")
    assert again.engine == "translated"
    assert executor.compare_executions(first, again) == []
    other = run("second")  # reaches second(), which no earlier run executed
    assert other.engine == "unicorn"
    assert "no translated code at pc=" in other.note
    assert "second" in other.functions
    assert run("second").engine == "translated"
    assert executor.compare_executions(other, run("second")) == []
    assert executor.compare_executions(first, run("first")) == []


def test_a_damaged_reached_file_only_costs_a_unicorn_run(paths: Direct) -> None:
    library, elf, translation, runtimes = paths
    reached_path(elf).write_text("instrbudget reached blocks 2\ninstructions 5\nnot hexadecimal\n")
    run = executor.run_program(library, elf, runtimes, [elf.name], translation=translation)
    assert run.engine == "unicorn"
    assert read_reached(elf).blocks == {pc: count for pc, _, count in run.blocks}
    assert read_reached(elf).instructions == run.instructions
    assert executor.run_program(library, elf, runtimes, [elf.name], translation=translation).engine == "translated"


def test_runs_are_translated_once_a_run_was_long_enough(paths: Direct, monkeypatch: pytest.MonkeyPatch) -> None:
    """A translation is compiled once a recorded run executed TRANSLATE_AT instructions; its hooks
    inline into the blocks a run executed HOT times (a loop of 2000 iterations here)."""
    library, elf, translation, runtimes = paths
    first = executor.run_program(library, elf, runtimes, [elf.name], translation=translation)
    monkeypatch.setenv(TRANSLATE_AT, str(first.instructions + 1))
    short = executor.run_program(library, elf, runtimes, [elf.name], translation=translation)
    assert (short.engine, short.note) == ("unicorn", "")
    monkeypatch.setenv(TRANSLATE_AT, str(first.instructions))
    long = executor.run_program(library, elf, runtimes, [elf.name], translation=translation)
    assert long.engine == "translated"
    assert executor.compare_executions(first, long) == []
    reached = read_reached(elf)
    hot = {pc for pc, _, count in first.blocks if count >= HOT}
    assert reached.hot() == hot
    assert 0 < len(hot) < len(first.blocks)  # the loop's blocks, not the start-up code's
    monkeypatch.setenv(TRANSLATE_AT, "many")
    with pytest.raises(executor.ExecutorError, match=f"{TRANSLATE_AT} must be a number of instructions"):
        executor.run_program(library, elf, runtimes, [elf.name], translation=translation)


def test_an_instruction_limit_hands_the_run_to_unicorn(paths: Direct) -> None:
    library, elf, translation, runtimes = paths
    executor.run_program(library, elf, runtimes, [elf.name], translation=translation)  # records the blocks
    limited = executor.run_program(library, elf, runtimes, [elf.name], translation=translation, limit=5000)
    assert limited.engine == "unicorn"
    assert "the instruction limit" in limited.note
    assert limited.error == "more instructions than the limit"
    reference = executor.run_program(library, elf, runtimes, [elf.name], limit=5000)
    assert executor.compare_executions(reference, limited) == []


FAULT_C = r"""
#include <stdlib.h>
int main(int argc, char **argv) {
    volatile int *p = (volatile int *)(argc > 1 ? strtoul(argv[1], 0, 16) : 0x30000000ul);
    return *p;
}
"""


def test_an_access_to_unmapped_memory_reports_unicorns_fault(
    builder: Builder, write: Writer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CHECK_TRANSLATION, "0")
    monkeypatch.setenv(TRANSLATE_AT, "0")
    artifact = builder.build([write("fault.c", FAULT_C)], models=_models("riscv32"))  # only this test builds it
    library, elf, translation, runtimes = _direct(artifact)
    first = executor.run_program(library, elf, runtimes, [elf.name, "30000000"], translation=translation)
    second = executor.run_program(library, elf, runtimes, [elf.name, "30000000"], translation=translation)
    assert first.error
    assert first.exit_code is None
    assert second.engine == "unicorn"
    assert "unmapped memory" in second.note
    assert executor.compare_executions(first, second) == []


def test_the_comparison_names_what_differs(paths: Direct) -> None:
    """The session's check can fail: two different runs of one build are told apart."""
    library, elf, _, runtimes = paths
    reference = executor.run_program(library, elf, runtimes, [elf.name, "second"])
    other = executor.run_program(library, elf, runtimes, [elf.name, "first"])
    differences = executor.compare_executions(reference, other)
    assert any(d.startswith("results") for d in differences)
    assert any(d.startswith("stdout") for d in differences)


LIB_C = r"""
unsigned fold(unsigned n) {
    unsigned s = 1;
    for (unsigned i = 0; i < n; i++) s = s * 33 + i;
    return s;
}
unsigned other(unsigned n) { return fold(n) ^ (n * 7); }
"""


def test_library_calls_run_translated_once_a_guest_ran_them(
    builder: Builder, write: Writer, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """A library's riscv32 build: the first guest runs in unicorn; a later one runs the recorded
    code translated; a call into code no guest ran yet hands the guest over to unicorn, which
    makes the earlier calls again: every measurement is the one unicorn alone gives."""
    monkeypatch.setenv(CHECK_TRANSLATION, "0")
    monkeypatch.setenv(TRANSLATE_AT, "0")
    source = write("fold.c", f"{LIB_C}/* {request.node.name} */\n")
    artifact = builder.build([source], kind="library", models=_models("riscv32"))
    reached_path(Path(artifact.machines()["riscv32"]["elf"])).unlink(missing_ok=True)

    def measure(*names: str) -> tuple[executor.Execution, dict[str, tuple[int, ...]]]:
        with Library(artifact) as lib:
            for name in names[:-1]:
                getattr(lib, name)(500)
            since = lib.snapshot()
            assert getattr(lib, names[-1])(1000) == (lib.fold(1000) if names[-1] == "fold" else lib.other(1000))
            counts = lib.counts(since)
            return counts.machine_run("riscv32"), dict(counts.results)

    first, results = measure("fold")
    assert (first.engine, first.note) == ("unicorn", "")
    again, results_again = measure("fold")
    assert again.engine == "translated"
    assert results_again == results
    handed, handed_results = measure("fold", "other")
    assert handed.engine == "unicorn"
    assert "no translated code" in handed.note
    monkeypatch.setenv(RISCV_ENGINE, "unicorn")
    reference, reference_results = measure("fold", "other")
    monkeypatch.delenv(RISCV_ENGINE)
    assert handed_results == reference_results
    assert executor.compare_executions(reference, handed) == []
    translated, translated_results = measure("fold", "other")
    assert translated.engine == "translated"
    assert translated_results == reference_results


CHANGING_C = r"""
#include <stdio.h>
__attribute__((noinline, weak)) int value(void) { return 1; } /* weak: calls are not folded */
int main(int argc, char **argv) {
    (void)argv;
#ifdef __riscv
    if (argc > 1) { /* value() begins with li a0, 1: make it li a0, 2 */
        volatile unsigned *code = (volatile unsigned *)(void *)value;
        if (code[0] == 0x00100513u) code[0] = 0x00200513u;
    }
#endif
    printf("%d\n", value());
    return 0;
}
"""


def test_code_that_changes_code_runs_in_unicorn(
    builder: Builder, write: Writer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The translation is of the code in the ELF: a store into it hands the run to unicorn, which
    runs the changed code."""
    monkeypatch.setenv(CHECK_TRANSLATION, "0")
    monkeypatch.setenv(TRANSLATE_AT, "0")
    artifact = builder.build([write("changing.c", CHANGING_C)], models=_models("riscv32"))
    library, elf, translation, runtimes = _direct(artifact)

    def run(*argv: str) -> executor.Execution:
        return executor.run_program(library, elf, runtimes, [elf.name, *argv], translation=translation)

    first = run("change")
    assert (first.engine, first.stdout) == ("unicorn", b"2\n")
    second = run("change")
    assert second.engine == "unicorn"
    assert "a store into the translated code" in second.note
    assert executor.compare_executions(first, second) == []
    run()  # records the blocks of the path that changes nothing
    unchanged = run()
    assert (unchanged.engine, unchanged.stdout) == ("translated", b"1\n")


LOOPS_C = r"""
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    volatile long n = argc > 1 ? atol(argv[1]) : 10, s = 0;
    if (n < 0) for (;;) s++;              /* never ends */
    for (long i = 0; i < n; i++) s += i * i % 7;
    printf("%ld\n", (long)s);
    return 0;
}
"""


def test_a_translated_run_past_its_timeout_names_the_loop_it_goes_round(
    builder: Builder, write: Writer, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """The translated code records the block it is in where it goes round a loop, not in every block:
    a caller whose time limit passed still learns the loop's function and line."""
    monkeypatch.setenv(CHECK_TRANSLATION, "0")
    monkeypatch.setenv(TRANSLATE_AT, "0")
    executor.close_servers()  # servers started from now on see the settings above
    source = write("loops.c", f"{LOOPS_C}/* {request.node.name} */\n")
    library, elf, translation, runtimes = _direct(builder.build([source], models=_models("riscv32")))

    def run(*argv: str, limit: int = 2**63, timeout: float | None = None) -> executor.Execution:
        return executor.run_isolated(
            library, elf, runtimes, ["loops", *argv], limit=limit, timeout=timeout, translation=translation
        )

    assert run("100").stdout == b"197\n"
    run("-1", limit=200_000)  # stops at its limit: the loop's blocks are recorded too
    assert run("-1", limit=200_000).engine == "unicorn"  # compiles the translation; a limit hands over
    line = next(i for i, text in enumerate(LOOPS_C.splitlines(), 1) if "never ends" in text)
    where = rf"the program was in main \(loops\.c:{line}\)"
    with pytest.raises(executor.ExecutorError, match=rf"took longer than 2 s; {where}"):
        run("-1", timeout=2)
    translated = run("100")
    assert (translated.engine, translated.stdout) == ("translated", b"197\n")
    executor.close_servers()


def test_compiling_a_translation_is_not_part_of_the_runs_time_limit(
    builder: Builder, write: Writer, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """A run whose translation is compiled first (seconds) passes a time limit its run alone keeps;
    a run that goes on past it still stops there."""
    monkeypatch.setenv(CHECK_TRANSLATION, "0")
    monkeypatch.setenv(TRANSLATE_AT, "0")
    executor.close_servers()  # servers started from now on see the settings above
    source = write("loops.c", f"{LOOPS_C}/* {request.node.name} */\n")
    library, elf, translation, runtimes = _direct(builder.build([source], models=_models("riscv32")))

    def run(*argv: str, timeout: float | None = None) -> executor.Execution:
        return executor.run_isolated(library, elf, runtimes, ["loops", *argv], timeout=timeout, translation=translation)

    assert run("100").engine == "unicorn"  # records the blocks (and starts the server the next run takes)
    assert not list(elf.parent.glob(f"{elf.name}.rvt-*.o"))
    started = time.monotonic()
    compiled = run("100", timeout=0.5)  # the translation is compiled in this run
    assert time.monotonic() - started > 0.5, "the compilation this test is about took less than the limit"
    assert (compiled.engine, compiled.stdout) == ("translated", b"197\n")
    assert list(elf.parent.glob(f"{elf.name}.rvt-*.o"))
    with pytest.raises(executor.ExecutorError, match=r"took longer than 0\.5 s"):
        run("-1", timeout=0.5)
    executor.close_servers()


def test_compiling_a_translation_has_a_limit_of_its_own(
    builder: Builder, write: Writer, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """Compiling a translation is not held to the run's time limit, but to a limit of its own: past
    it, the run fails and says so, and the next run compiles it again."""
    monkeypatch.setenv(CHECK_TRANSLATION, "0")
    monkeypatch.setenv(TRANSLATE_AT, "0")
    executor.close_servers()
    source = write("loops.c", f"{LOOPS_C}/* {request.node.name} */\n")
    library, elf, translation, runtimes = _direct(builder.build([source], models=_models("riscv32")))

    def run() -> executor.Execution:
        return executor.run_isolated(library, elf, runtimes, ["loops", "100"], timeout=60, translation=translation)

    assert run().engine == "unicorn"  # records the blocks
    monkeypatch.setattr(messages, "UNTIMED_LIMIT", 0.05)  # compiling takes seconds
    passed = r"compiling \(or waiting for\) the translation of .* took longer than 0\.05 s"
    with pytest.raises(executor.ExecutorError, match=passed):
        run()
    monkeypatch.setattr(messages, "UNTIMED_LIMIT", 600.0)
    assert (run().engine, run().stdout) == ("translated", b"197\n")
    executor.close_servers()


GROUPS_C = r"""
#include <stdio.h>
#include <stdlib.h>
#define PAGE 1024 /* the zkvm's page */
struct rec { int a, b, c, d, e, f, g, h; };
struct node { struct node *next; int v; };
static char arena[64 * PAGE] __attribute__((aligned(PAGE)));
/* Two hops along the list in one block, the pointer rewritten in its own register between them. */
static long hop2(struct node **at) {
    struct node *p = *at;
    long v, w;
#if defined(__riscv) && __riscv_xlen == 32
    __asm__ volatile("lw %0, 4(%2)\n\tlw %2, 0(%2)\n\tlw %1, 4(%2)\n\tlw %2, 0(%2)"
                     : "=&r"(v), "=&r"(w), "+r"(p) : : "memory");
#else
    v = p->v;
    p = p->next;
    w = p->v;
    p = p->next;
#endif
    *at = p;
    return v + 3 * w;
}
int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 3000;
    long total = 0;
    /* a list whose every other node lies on a page nothing else touches */
    for (int i = 0; i < 32; i++) {
        struct node *n = (struct node *)(arena + (32 + i) * PAGE + 512);
        n->next = i < 31 ? (struct node *)(arena + (33 + i) * PAGE + 512) : 0;
        n->v = i;
    }
    for (int k = 0; k < rounds; k++) {
        for (int j = 0; j < 32; j += 2) {
            char *page = arena + j * PAGE;
            page[0] = (char)k; /* the even page: loaded and dirty */
            /* eight stores through one base register; the last four reach into the odd page */
            struct rec *r = (struct rec *)(page + PAGE - 16);
            r->a = k; r->b = j; r->c = k ^ j; r->d = 1; r->e = 2; r->f = 3; r->g = 4; r->h = 5;
        }
        /* the odd nodes' pages are touched by the second hop's loads only, after a store has
         * made the first node's page known to the segment */
        for (struct node *p = (struct node *)(arena + 32 * PAGE + 512); p != 0;) {
            p->v = k & 7;
            total += hop2(&p);
        }
    }
    printf("%ld\n", total);
    return 0;
}
"""


def _zkvm_checked(builder: Builder, source: Path, po2: int, monkeypatch: pytest.MonkeyPatch) -> executor.Execution:
    """A translated zkvm run of ``source`` (segments of 2^po2 cycles), checked against unicorn's."""
    monkeypatch.setenv(CHECK_TRANSLATION, "1")
    monkeypatch.setenv(TRANSLATE_AT, "0")
    zkvm = default_registry().create("zkvm", {"execute": True, "po2": po2})
    artifact = builder.build([source], options=BuildOptions(opt_level="2"), models=[zkvm])
    library, elf, translation, runtimes = _direct(artifact)
    executor.run_program(library, elf, runtimes, [elf.name], translation=translation)  # records the blocks
    run = executor.run_program(library, elf, runtimes, [elf.name], translation=translation, check=True)
    assert run.engine == "translated", run.note
    return run


def test_grouped_accesses_cost_what_unicorn_costs_across_pages_and_segment_ends(
    builder: Builder, write: Writer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hot block asks the zkvm model once whether a group of loads or stores through one base
    register can change anything (pages loaded and dirty in the segment already); records laid
    across 1 KiB page boundaries, and segments of 2^17 cycles whose ends fall inside such blocks,
    cost exactly what unicorn's access-by-access run costs."""
    run = _zkvm_checked(builder, write("groups.c", GROUPS_C), 17, monkeypatch)
    total, user, paging, _, segments, page_ins, page_outs = run.results
    assert segments > 10
    assert page_ins > segments
    assert page_outs > segments
    assert total > user + paging


MANY_PAGES_C = r"""
#include <stdio.h>
#define PAGES 30000
static char buf[PAGES * 1024];
int main(void) {
    unsigned long sum = 0;
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < PAGES; i++) {
            buf[i * 1024 + (i % 7)] += (char)round;
            sum += (unsigned char)buf[i * 1024 + 1000];
        }
    printf("%lu\n", sum);
    return 0;
}
"""


def test_segments_that_load_thousands_of_pages_cost_what_unicorn_costs(
    builder: Builder, write: Writer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The zkvm model's map of pages loaded in the segment, which the fast paths test, lists the
    pages it marks, to clear them when the segment closes: segments of 2^24 cycles that load
    thousands of pages each (a buffer of 30,000 pages, written twice) grow that list past its
    first size, and the costs are unicorn's."""
    run = _zkvm_checked(builder, write("pages.c", MANY_PAGES_C), 24, monkeypatch)
    _, _, _, _, segments, page_ins, page_outs = run.results
    assert segments >= 2
    assert page_ins > 4096 * segments  # some segment loaded more pages than the list's first size
    assert page_outs > 30000


RECORD_REACHED = """\
import sys
from pathlib import Path
from cbuild.riscv.translated import add_reached
elf, first = Path(sys.argv[1]), int(sys.argv[2])
for pc in range(first, first + 200):
    add_reached(elf, [(pc * 4, 1, 1)], 1)
"""


def test_processes_recording_reached_blocks_at_once_lose_none(tmp_path: Path) -> None:
    """pytest-xdist workers record the blocks their runs reached in one file at the same time:
    each read, merge and write is done alone, so that no worker's blocks are lost (a checked
    run translates what its own run reached, and a later run finds it translated)."""
    import subprocess
    import sys

    elf = tmp_path / "prog.elf"
    elf.write_bytes(b"")
    writers = [
        subprocess.Popen([sys.executable, "-c", RECORD_REACHED, str(elf), str(first)]) for first in (0, 1000, 2000)
    ]
    assert [w.wait() for w in writers] == [0, 0, 0]
    blocks = read_reached(elf).blocks
    assert sorted(blocks) == [pc * 4 for first in (0, 1000, 2000) for pc in range(first, first + 200)]


def test_a_translation_is_compiled_once_while_others_wait(tmp_path: Path) -> None:
    """Two runs that need the same object code at once (two xdist workers): one compiles it, the
    other waits and reads it, both inside their untimed part."""
    target = tmp_path / "prog.elf.rvt-key.o"
    made: list[float] = []
    entered: list[str] = []

    def make() -> bytes:
        made.append(time.monotonic())
        time.sleep(0.3)  # the other thread asks meanwhile
        return b"object code"

    @contextlib.contextmanager
    def untimed() -> Iterator[None]:
        entered.append(threading.current_thread().name)
        yield

    results: list[bytes] = []
    threads = [
        threading.Thread(target=lambda: results.append(translated._kept_object(target, make, untimed)), name=f"t{i}")
        for i in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [b"object code", b"object code"]
    assert len(made) == 1
    assert sorted(entered) == ["t0", "t1"]
    assert target.read_bytes() == b"object code"
    assert translated._kept_object(target, make, untimed) == b"object code"  # kept: no compilation, no wait
    assert (len(made), len(entered)) == (1, 2)


def test_a_hot_blocks_check_covers_the_blocks_it_goes_to_directly_that_make_one_access_at_most() -> None:
    nop, lw0, lw4 = 0x13, 0x0000A183, 0x0040A183  # addi x0, x0, 0; lw x3, 0(x1); lw x3, 4(x1)
    beq = 0x00208663  # beq x1, x2, +12
    a = Block(0x1000, 2, (nop, beq), False)  # branches to c (0x1010), falls through to b
    b = Block(0x1008, 2, (lw0, 0xFF5FF06F), False)  # jal x0, -12: back to a
    c = Block(0x1010, 3, (lw0, lw4, 0x108000EF), False)  # two accesses; jal ra, +0x108: a call
    d = Block(0x101C, 2, (nop, 0xFE1FF06F), False)  # the call's return: jal x0, -32 to a
    blocks = [a, b, c, d]
    owner = {0x1120: "rvt_f1120"}
    covers = translate._covers(blocks, {blk.pc for blk in blocks}, owner)
    assert {pc: [t.pc for t in ts] for pc, ts in covers.items()} == {
        0x1000: [0x1008],
        0x1008: [0x1000],
        0x101C: [0x1000],
    }
    assert translate._covers(blocks, {0x1000, 0x1010, 0x101C}, owner) == {0x101C: [a]}  # b runs rarely


def test_the_unchecked_copy_is_checked_at_entries_call_returns_and_loop_heads() -> None:
    """Where other code enters a function's hot blocks (its entry, a call's return) and on every
    way round a loop, a check comes first; the other blocks start unchecked within its room, and
    come in an order where each precedes the blocks it goes to that are not checks."""
    nop, lw0, lw4 = 0x13, 0x0000A183, 0x0040A183
    beq = 0x00208663  # beq x1, x2, +12
    a = Block(0x1000, 2, (nop, beq), False)  # the entry: branches to c (0x1010), falls through to b
    b = Block(0x1008, 2, (lw0, 0xFF5FF06F), False)  # jal x0, -12: back to a, a loop
    c = Block(0x1010, 3, (lw0, lw4, 0x108000EF), False)  # jal ra, +0x108: a call
    d = Block(0x101C, 2, (nop, 0xFE1FF06F), False)  # the call's return: jal x0, -32 to a
    regions = translate._regions([a, b, c, d], {blk.pc for blk in (a, b, c, d)}, {0x1120: "rvt_f1120"})
    assert regions.checks == {0x1000, 0x101C}  # a: entry and loop head; d: a call's return
    assert regions.succ == {0x1000: [0x1010, 0x1008], 0x1008: [0x1000], 0x1010: [], 0x101C: [0x1000]}
    position = {pc: i for i, pc in enumerate(regions.order)}
    assert sorted(position) == [0x1000, 0x1008, 0x1010, 0x101C]
    assert position[0x1010] < position[0x1000]
    assert position[0x1008] < position[0x1000]


def test_a_function_of_thousands_of_blocks_in_a_row_is_translated() -> None:
    """The order of a long chain of blocks (generated code: one if after another) is found without
    recursing along it."""
    bne = 0x00209463  # bne x1, x2, +8: to the block after next, else the next
    blocks = [Block(0x1000 + 4 * i, 1, (bne,), False) for i in range(5000)]
    regions = translate._regions(blocks, {blk.pc for blk in blocks}, {})
    assert regions.checks == {0x1000}
    assert len(regions.order) == 5000
    position = {pc: i for i, pc in enumerate(regions.order)}
    assert all(position[t] < position[pc] for pc, ts in regions.succ.items() for t in ts)
