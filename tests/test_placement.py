"""Edge counters (a spanning tree per function) give exactly the block counts of one counter per block."""

from __future__ import annotations

from pathlib import Path

import pytest

from cbuild import Builder, BuildOptions, Library, run_program
from cbuild.build.blocks import parse_module
from cbuild.build.placement import place
from tests.test_blocks import LOOP_IR
from tests.test_counts import CXX, SETJMP_C, SUM_C

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "example_project"

CONTROL_C = """\
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int classify(int c) {
    switch (c % 7) {
    case 0: case 3: return 1;
    case 1: return 2;
    case 5: return c > 40 ? 3 : 4;
    default: return 0;
    }
}

static int walk(const char *s) {
    int state = 0, n = 0;
again:
    for (; *s; s++) {
        if (*s == ' ') { state = 0; continue; }
        if (*s == '#') { s++; goto again; }
        if (state == 0) n++;
        state = classify((unsigned char)*s);
        if (state == 3 && s[1] == 'x') break;
    }
    return n;
}

static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

__attribute__((noinline)) static void maybe_exit(int i) {
    if (i == 41) { printf("exit at %d\\n", i); exit(0); }
}

int main(int argc, char **argv) {
    const char *text = argc > 1 ? argv[1] : "the quick brown # fox jumps over the lazy dog";
    long acc = 0;
    for (int i = 0; i < 60; i++) {
        acc += walk(text) + classify(i) + fib(i % 12);
        if (i % 5 == 0) acc ^= (long)strlen(text);
        maybe_exit(i);
    }
    printf("%ld\\n", acc);
    return 0;
}
"""

PROGRAMS = {
    "sum.c": SUM_C + "int main(void) { return sum_to(100) != 4950; }\n",
    "jump.c": SETJMP_C,
    "words.cpp": CXX,
    "control.c": CONTROL_C,
}


def _run_both(builder: Builder, sources: list[Path], level: str, args: list[str], stdin: bytes = b"") -> None:
    counts = {}
    for placement in ("blocks", "edges"):
        options = BuildOptions(opt_level=level, placement=placement, include_dirs=(EXAMPLE / "include",))
        run = run_program(builder.build(sources, options=options), args, input=stdin)
        assert run.counts is not None
        counts[placement] = (run.counts.counts, run.stdout, run.returncode)
    assert counts["edges"] == counts["blocks"]


@pytest.mark.parametrize("level", ["0", "2"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_placement_edges_equal_blocks_on_programs(builder: Builder, shared_source, name: str, level: str) -> None:  # type: ignore[no-untyped-def]
    _run_both(builder, [shared_source(name, PROGRAMS[name])], level, [])


def test_placement_edges_equal_blocks_on_the_example_program(builder: Builder) -> None:
    text = b"It was the best of times, it was the worst of times; it was the age of wisdom. " * 300
    sources = [EXAMPLE / "src" / "wordfreq.c", EXAMPLE / "src" / "hashmap.c"]
    _run_both(builder, sources, "2", ["5"], text)


def test_placement_edges_equal_blocks_in_a_library(builder: Builder, tmp_path: Path) -> None:
    import ctypes

    sources = [EXAMPLE / "src" / f for f in ("json.c", "hashmap.c", "sort.c", "ringbuf.c")]
    seen = {}
    for placement in ("blocks", "edges"):
        options = BuildOptions(placement=placement, include_dirs=(EXAMPLE / "include",))
        lib = Library(builder.build(sources, options=options, kind="library"))
        doc = b'{"a": [1, 2.5e3, "x\\\\u00e9"], "b": {"c": null, "d": [true, false]}}' * 1
        arr = (ctypes.c_int32 * 500)()
        lib.mk_fill_random(arr, 500, 3)
        lib.mk_sort_ints(arr, 500)
        tokens = lib.mk_json_count_tokens(doc, len(doc))
        seen[placement] = (lib.counts().counts, tokens)
    assert seen["edges"] == seen["blocks"]


def test_placement_uses_fewer_counters_and_derives_known_ir_exactly(builder: Builder, tmp_path: Path) -> None:
    parsed = parse_module(LOOP_IR)
    plan = place(parsed.blocks)
    assert len(plan.sites) < len(parsed.blocks)
    # Every block count is a combination of counters with integer coefficients.
    assert all(plan.derive[i] for i in range(len(parsed.blocks)))
    source = tmp_path / "loop.ll"
    source.write_text(LOOP_IR.replace("    #dbg_value(i32 %i, !9, !DIExpression(), !10)\n", ""))
    lib = Library(builder.build([source], kind="library"))
    before = lib.snapshot()
    lib.f(10)
    # entry, loop x10, three x2 (i = 3 and 5), next x10, exit
    assert lib.counts(before).counts == (1, 10, 2, 10, 1)
