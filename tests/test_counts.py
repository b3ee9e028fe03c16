"""Exact counts: known IR gives known totals; C loops follow a formula of their trip count."""

from __future__ import annotations

from pathlib import Path

import pytest

from cbuild import Builder, BuildOptions, IrCountModel, Library, run_program
from tests.test_blocks import LOOP_IR

MODEL = IrCountModel()


def _total(lib: Library, call: object, *args: object) -> int:
    before = lib.snapshot()
    assert callable(call)
    call(*args)
    (cost,) = MODEL.evaluate(lib.counts(before))
    return cost.total


def loop_ir_total(n: int) -> int:
    """LOOP_IR by hand: entry 3, loop 3 per iteration, `three` 1 at i=3 and i=5, next 4, exit 2."""
    if n <= 0:
        return 3 + 2
    hits = sum(1 for i in (3, 5) if i < n)
    return 3 + 3 * n + hits + 4 * n + 2


@pytest.mark.parametrize("n", [0, 1, 4, 6, 10, 1000])
def test_counts_known_ir_exact(builder: Builder, tmp_path: Path, n: int) -> None:
    source = tmp_path / "loop.ll"
    # Debug records need full debug info to reach the code generator; the counts do not depend on them.
    source.write_text(LOOP_IR.replace("    #dbg_value(i32 %i, !9, !DIExpression(), !10)\n", ""))
    lib = Library(builder.build([source], kind="library"))
    assert _total(lib, lib.f, n) == loop_ir_total(n)


SUM_C = """\
int sum_to(int n) {
    volatile int s = 0;
    for (int i = 0; i < n; i++)
        s += i;
    return s;
}
"""


@pytest.mark.parametrize("opt_level", ["0", "1", "2"])
def test_counts_loop_is_linear_in_trip_count(builder: Builder, write, tmp_path: Path, opt_level: str) -> None:  # type: ignore[no-untyped-def]
    lib = Library(
        builder.build([write("sum.c", SUM_C)], options=BuildOptions(opt_level=opt_level), kind="library"),
    )
    # -O1 and above may unroll the loop (by up to 8 here): the cost is affine in n
    # over multiples of the unroll factor; at -O0 it is affine for every n.
    stride = 1 if opt_level == "0" else 8
    base = _total(lib, lib.sum_to, 2 * stride)
    step = _total(lib, lib.sum_to, 3 * stride) - base
    assert step > 0
    for k in (4, 7, 100, 125):
        assert _total(lib, lib.sum_to, k * stride) == base + (k - 2) * step
    if opt_level == "0":  # the loop body is a block of its own, run once per iteration
        before = lib.snapshot()
        lib.sum_to(37)
        assert 37 in lib.counts(before).counts


def test_counts_program_total_matches_library_total(builder: Builder, write, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    source = "__attribute__((noinline)) " + SUM_C + "int main(void) { return sum_to(10) == 45 ? 0 : 1; }\n"
    src = write("prog.c", source)
    run = run_program(builder.build([src]), [])
    assert run.returncode == 0
    assert run.counts is not None
    (cost,) = MODEL.evaluate(run.counts)
    lib = Library(builder.build([src], kind="library", keep_main=True))
    main_cost = cost.functions["main"]
    assert cost.total == _total(lib, lib.sum_to, 10) + main_cost


def test_counts_repeat_identically(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    src = write(
        "hashy.c",
        """\
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
/* Work that depends on where the stack and heap are: identical only with ASLR off. */
int main(void) {
    int local;
    char *heap = malloc(64);
    uintptr_t a = (uintptr_t)&local ^ (uintptr_t)heap;
    unsigned steps = 0;
    while (a) { a &= a - 1; steps++; }
    free(heap);
    printf("%u\\n", steps);
    return 0;
}
""",
    )
    artifact = builder.build([src])
    runs = [run_program(artifact, []) for _ in range(3)]
    totals = {MODEL.evaluate(r.counts)[0].total for r in runs if r.counts is not None}
    outputs = {r.stdout for r in runs}
    assert len(outputs) == 1
    assert len(totals) == 1


@pytest.mark.slow
def test_counts_cold_and_warm_cache_agree(write, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    src = write("prog.c", SUM_C + "int main(void) { return sum_to(100) != 4950; }\n")
    totals = []
    for cache in ("cold-a", "cold-b"):
        for _ in range(2):  # cold, then warm
            b = Builder(cache_dir=tmp_path / cache, progress=lambda m: None)
            run = run_program(b.build([src]), [])
            assert run.counts is not None
            totals.append(MODEL.evaluate(run.counts)[0].total)
    assert len(set(totals)) == 1


CXX = """\
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

static int parse(const std::string &s) {
    if (s.empty()) throw std::invalid_argument("empty");
    return static_cast<int>(s.size());
}

extern "C" int count_words(int n) {
    std::map<std::string, int> freq;
    std::vector<std::string> words = {"a", "bb", "", "ccc"};
    int total = 0;
    for (int i = 0; i < n; i++) {
        const std::string &w = words[static_cast<size_t>(i) % words.size()];
        try {
            total += parse(w);
        } catch (const std::invalid_argument &) {
            total -= 1;
        }
        freq[w]++;
    }
    return total * 100 + static_cast<int>(freq.size());
}

int main() { return count_words(8) == 1004 ? 0 : 1; }
"""


def test_counts_cxx_exceptions_and_stl(builder: Builder, shared_source, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    src = shared_source("words.cpp", CXX)
    run = run_program(builder.build([src]), [])
    assert run.returncode == 0
    assert run.counts is not None
    first = MODEL.evaluate(run.counts)[0].total
    again = run_program(builder.build([src]), [])
    assert again.counts is not None
    assert MODEL.evaluate(again.counts)[0].total == first
    lib = Library(builder.build([src], kind="library", keep_main=True))
    assert lib.count_words(4) == 504  # lengths 1 + 2 + 3, minus 1 for the throw; 4 distinct keys
    # Each iteration that throws executes the handler's blocks: the cost grows with n.
    assert _total(lib, lib.count_words, 8) > _total(lib, lib.count_words, 4)


SETJMP_C = """\
#include <setjmp.h>
#include <stdio.h>
static jmp_buf env;
static volatile int depth;
__attribute__((noinline)) static void dive(int n) {
    depth++;
    if (n == 0) longjmp(env, 1);
    dive(n - 1);
}
int main(void) {
    int escapes = 0;
    for (int i = 0; i < 5; i++) {
        if (setjmp(env) == 0) dive(i * 3);
        else escapes++;
    }
    printf("%d %d\\n", escapes, depth);
    return 0;
}
"""


def test_counts_setjmp_longjmp_keep_total_and_counters_in_step(builder: Builder, shared_source) -> None:  # type: ignore[no-untyped-def]
    # run_program checks at exit that the running total equals the block counters' sum.
    artifact = builder.build([shared_source("jump.c", SETJMP_C)])
    first = run_program(artifact, [])
    assert first.stdout == b"5 35\n"
    second = run_program(artifact, [])
    assert first.counts == second.counts


def test_counts_inline_assembly_builds_and_counts_as_one_instruction(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    src = write(
        "asm.c",
        'int main(void) {\n  for (int i = 0; i < 3; i++) __asm__ volatile("nop");\n  return 0;\n}\n',
    )
    run = run_program(builder.build([src], options=BuildOptions(opt_level="0")), [])
    assert run.returncode == 0
    assert run.counts is not None
    assert MODEL.evaluate(run.counts)[0].total > 3


def test_counts_calls_through_an_alias_declared_const_stay_exact(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    # The caller believes sq_alias is pure; the callee does count. run_program checks
    # at exit that the running total agrees with the counters.
    a = write(
        "a.c",
        "int sq(int x) { int r = 0; for (int i = 0; i < x; i++) r += x; return r; }\n"
        'int sq_alias(int) __attribute__((alias("sq")));\n',
    )
    b = write(
        "b.c",
        "int sq_alias(int) __attribute__((const));\n"
        "int main(void) { int t = 0; for (int i = 0; i < 5; i++) t += sq_alias(i); return t != 30; }\n",
    )
    for level in ("1", "2", "3"):
        run = run_program(builder.build([a, b], options=BuildOptions(opt_level=level)), [])
        assert run.returncode == 0
        assert run.counts is not None
        assert MODEL.evaluate(run.counts)[0].functions["sq"] > 0
