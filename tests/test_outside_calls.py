"""Calls of the host's library functions (printf, write): their work is not counted, but how
often they were called is, and the reports show it."""

from __future__ import annotations

import json
import textwrap

import pytest

from cbuild import Builder, run_program
from cbuild.build.blocks import BlockTable, parse_module
from cbuild.models.costs import outside_calls

IR = """\
declare i32 @printf(ptr, ...)
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)
declare void @__instrbudget_region(i32, ptr, ptr, i32)
declare ptr @__errno_location()
declare i32 @"odd name"(i32)

define i32 @helper(i32 %x) {
  ret i32 %x
}

define i32 @main(ptr %p, ptr %q) {
  %1 = call i32 (ptr, ...) @printf(ptr %p)
  %2 = call i32 (ptr, ...) @printf(ptr %q, i32 %1)
  call void @llvm.memcpy.p0.p0.i64(ptr %p, ptr %q, i64 8, i1 false)
  %3 = call ptr @__errno_location()
  %4 = call i32 @helper(i32 %2)
  br label %next

next:
  %5 = tail call i32 @"odd name"(i32 %4)
  ret i32 %5
}
"""

PROGRAM_C = """\
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
int main(int argc, char **argv) {
    int n = atoi(argv[1]);
    double s = 0;
    for (int i = 0; i < n; i++) s += clock();
    puts(s > -1e9 ? "done" : "odd");
    return 0;
}
"""


def test_outside_calls_recorded_per_block_and_kept_in_the_table() -> None:
    table = parse_module(IR).table()
    by_function = {b.function: b.outside for b in table.blocks}
    assert [b.outside for b in table.blocks if b.function == "main"] == [(("printf", 2),), (("odd name", 1),)]
    assert by_function["helper"] == ()  # defined in the module: counted, not outside
    again = BlockTable.from_json(json.loads(json.dumps(table.to_json())))
    assert again.blocks == table.blocks


def test_outside_calls_follow_the_block_counts(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    program = builder.build([write("p.c", PROGRAM_C)])
    for n in (10, 250):
        result = run_program(program, [n])
        assert result.returncode == 0, result.stderr
        assert result.counts is not None
        assert outside_calls(result.counts) == {"clock": n, "puts": 1}


def test_outside_calls_in_the_failure_and_the_json_report(pytester: pytest.Pytester) -> None:
    pytester.makefile(".c", p=PROGRAM_C)
    pytester.makepyfile(
        test_p=textwrap.dedent(
            """
            import pytest

            @pytest.mark.budget(max_instr=10)
            def test_p(cbuild):
                assert cbuild.program("p.c").run(["40"]).returncode == 0
            """
        )
    )
    out = pytester.path / "r.json"
    result = pytester.runpytest("-p", "no:cacheprovider", f"--instrbudget-json={out}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["  calls outside the count (not counted): clock x40, puts x1"])
    metric = json.loads(out.read_text())["tests"]["test_p.py::test_p"]["metrics"]["ir_instructions"]
    assert metric["outside_calls"] == {"clock": 40, "puts": 1}
