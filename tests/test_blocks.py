"""The block table read from IR text: sizes, insertion points, source lines."""

from __future__ import annotations

from cbuild.build import codegen
from cbuild.build.blocks import parse_module
from cbuild.build.instrument import instrument

# A loop with a PHI, a switch spanning several lines, debug records and
# bookkeeping intrinsics that must not be counted.
LOOP_IR = """\
define i32 @f(i32 %n) !dbg !5 {
entry:
  %p = alloca i32, align 4
  call void @llvm.lifetime.start.p0(ptr %p)
  %c = icmp sgt i32 %n, 0, !dbg !8
  br i1 %c, label %loop, label %exit

loop:
  %i = phi i32 [ 0, %entry ], [ %i1, %next ]
  %s = phi i32 [ 0, %entry ], [ %s1, %next ]
    #dbg_value(i32 %i, !9, !DIExpression(), !10)
  switch i32 %i, label %next [
    i32 3, label %three
    i32 5, label %three
  ]

three:
  br label %next

next:
  %s1 = add i32 %s, %i, !dbg !10
  %i1 = add i32 %i, 1
  %d = icmp eq i32 %i1, %n
  br i1 %d, label %exit, label %loop

exit:
  %r = phi i32 [ 0, %entry ], [ %s1, %next ]
  call void @llvm.lifetime.end.p0(ptr %p)
  ret i32 %r
}

declare void @llvm.lifetime.start.p0(ptr)
declare void @llvm.lifetime.end.p0(ptr)

!llvm.module.flags = !{!0}
!llvm.dbg.cu = !{!1}
!0 = !{i32 2, !"Debug Info Version", i32 3}
!1 = distinct !DICompileUnit(language: DW_LANG_C11, file: !2, emissionKind: LineTablesOnly)
!2 = !DIFile(filename: "loop.c", directory: "/src")
!5 = distinct !DISubprogram(name: "f", scope: !2, file: !2, line: 10, type: !6, unit: !1)
!6 = !DISubroutineType(types: !7)
!7 = !{}
!8 = !DILocation(line: 11, column: 3, scope: !5)
!9 = !DILocalVariable(name: "i", scope: !5, file: !2, line: 11, type: !11)
!10 = !DILocation(line: 12, column: 5, scope: !5)
!11 = !DIBasicType(name: "int", size: 32, encoding: DW_ATE_signed)
"""


def test_blocks_sizes_exclude_debug_records_and_lifetime_calls() -> None:
    parsed = parse_module(LOOP_IR)
    table = parsed.table()
    assert [(b.function, b.size) for b in table.blocks] == [
        ("f", 3),  # alloca, icmp, br (lifetime.start not counted)
        ("f", 3),  # 2 phi + switch (debug record not counted)
        ("f", 1),
        ("f", 4),
        ("f", 2),  # phi, ret (lifetime.end not counted)
    ]


def test_blocks_source_lines_from_first_located_instruction() -> None:
    table = parse_module(LOOP_IR).table()
    assert [(b.file, b.line) for b in table.blocks] == [
        ("/src/loop.c", 11),
        ("/src/loop.c", 10),  # no located instruction: the function's line
        ("/src/loop.c", 10),
        ("/src/loop.c", 12),
        ("/src/loop.c", 10),
    ]


def test_blocks_insertion_point_follows_phis() -> None:
    parsed = parse_module(LOOP_IR)
    loop = parsed.blocks[1]
    assert parsed.lines[loop.insert_at].startswith("  switch")
    assert "= phi " in parsed.lines[loop.insert_at - 2]  # then the debug record, then the switch


def test_blocks_agree_with_llvmlite() -> None:
    module = codegen.parse(LOOP_IR, name="loop")
    codegen.check_table(module, parse_module(str(module)).table())


def test_instrument_output_verifies_and_adds_one_counter_per_block() -> None:
    module = codegen.parse(LOOP_IR, name="loop")
    result = instrument(str(module), build_id="test", placement="blocks")
    codegen.parse(result.text, name="instrumented")  # verifies
    for index, block in enumerate(result.table.blocks):
        assert result.text.count(f"%__ib.{index}.c1 = add i64 %__ib.{index}.c, 1") == 1
        assert result.text.count(f"%__ib.{index}.t1 = add i64 %__ib.{index}.t, {block.size}") == 1
    # The function's accumulator reaches the thread's total before its one exit.
    assert result.text.count("store i64 %__ib.f0.t1, ptr %__ib.total") == 1


LANDINGPAD_IR = """\
define void @g() personality ptr @__gxx_personality_v0 {
entry:
  invoke void @may_throw()
          to label %ok unwind label %lpad

ok:
  ret void

lpad:
  %lp = landingpad { ptr, i32 }
          cleanup
          catch ptr null
  call void @handle()
  resume { ptr, i32 } %lp
}

declare void @may_throw()
declare void @handle()
declare i32 @__gxx_personality_v0(...)
"""


def test_instrument_goes_after_landingpad_and_its_clauses() -> None:
    module = codegen.parse(LANDINGPAD_IR, name="eh")
    parsed = parse_module(str(module))
    assert [b.size for b in parsed.blocks] == [1, 1, 3]
    lpad = parsed.blocks[2]
    assert parsed.lines[lpad.insert_at].strip().startswith("call void @handle")
    codegen.parse(instrument(str(module), build_id="eh").text, name="eh-instrumented")


def test_instrument_drops_memory_claims_of_defined_functions_only() -> None:
    text = """\
define i32 @pure(i32 %x) #0 {
  ret i32 %x
}

declare i64 @strlen(ptr) #1

attributes #0 = { nounwind memory(none) }
attributes #1 = { nounwind memory(argmem: read) }
"""
    out = instrument(str(codegen.parse(text, name="m")), build_id="m").text
    assert "attributes #0 = { nounwind }" in out
    assert "attributes #1 = { nounwind memory(argmem: read) }" in out


def test_blocks_agree_with_llvmlite_on_real_c_and_cxx(builder, write) -> None:  # type: ignore[no-untyped-def]
    """The text-derived table matches llvmlite's own iteration on clang's output."""
    from cbuild.build.compile import compile_unit
    from cbuild.build.options import BuildOptions

    root = __import__("pathlib").Path(__file__).resolve().parent.parent / "example_project"
    options = BuildOptions(include_dirs=(root / "include",))
    sources = sorted((root / "src").glob("*.c"))
    sources.append(
        write(
            "stl.cpp",
            "#include <map>\n#include <string>\nint f(int n) { std::map<std::string,int> m;"
            " for (int i = 0; i < n; i++) m[std::to_string(i)] = i; return (int)m.size(); }\n",
        )
    )
    for source in sources:
        unit = compile_unit(builder.toolchain, builder.cache, source, options)
        module = codegen.parse(unit.ir_path.read_text(), name=str(source))
        table = parse_module(str(module)).table()
        assert len(table) > 0
        codegen.check_table(module, table)


def test_an_invoke_is_located_at_its_own_line(builder, write) -> None:  # type: ignore[no-untyped-def]
    """LLVM prints an ``invoke``'s ``!dbg`` on its second line (``to label %a unwind label %b, !dbg
    !7``): the call is at the line of the call, not its block's or function's first line."""
    from cbuild.build.compile import compile_unit
    from cbuild.build.options import BuildOptions

    source = write(
        "invoke.cc",
        "#include <string>\n"
        "__attribute__((noinline)) double parse(const std::string &s) { if (s.empty()) throw 1; return 2.0; }\n"
        "double sum(int n) {\n"
        "    double t = 0;\n"
        "    for (int i = 0; i < n; i++) {\n"
        "        std::string s(i, 'x');\n"
        "        try {\n"
        "            t += parse(s);\n"  # line 8
        "        } catch (int) {\n"
        "            t -= 1;\n"
        "        }\n"
        "    }\n"
        "    return t;\n"
        "}\n",
    )
    unit = compile_unit(builder.toolchain, builder.cache, source, BuildOptions())
    text = str(codegen.parse(unit.ir_path.read_text(), name="invoke.cc"))
    assert "invoke noundef double @_Z5parseRKNSt3__112basic_stringIcNS_11char_traitsIcEENS_9allocatorIcEEEE" in text
    sites = [
        (file, line)
        for block in parse_module(text).table().blocks
        for callee, file, line, _ in block.calls_to
        if callee.startswith("_Z5parse")
    ]
    assert sites
    assert set(sites) == {(str(source), 8)}  # the loop may be peeled: two calls
