"""RISC-V code per IR block: nothing lost or duplicated, loops attributed, the ILP32 twin matched."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cbuild.build import codegen
from cbuild.build.blocks import parse_module
from cbuild.riscv.isa import parse_assembly
from cbuild.riscv.lowering import (
    LoweringError,
    attribute,
    compile_riscv,
    located_ir,
    lower_blocks,
    lower_program,
    match_blocks,
)

EXAMPLE = Path(__file__).parent.parent / "example_project"

LOOP_C = """
unsigned checksum(const unsigned char *p, int n) {
    unsigned h = 2166136261u;
    for (int i = 0; i < n; i++) { h ^= p[i]; h *= 16777619u; }
    return h;
}
long scale(long x, long y) { return x * 3 + y / 7; }
"""


def ir_of(source: Path, triple: str, *flags: str) -> str:
    out = source.with_suffix(f".{triple}.ll")
    cmd = [sys.executable, "-m", "ziglang", "cc", "-O2", "-gline-tables-only", "-S", "-emit-llvm", "-target", triple]
    subprocess.run([*cmd, *flags, str(source), "-o", str(out)], check=True, capture_output=True)
    return str(codegen.parse(out.read_text(), name=source.name))


@pytest.mark.parametrize("target", ["riscv32", "riscv64"])
def test_every_machine_instruction_belongs_to_exactly_one_block(write, target: str) -> None:  # type: ignore[no-untyped-def]
    text = ir_of(write("loop.c", LOOP_C), "x86_64-linux-gnu", "-fno-vectorize")
    assembly = compile_riscv(located_ir(text), target=target, opt_level=2)
    blocks = attribute(assembly, len(parse_module(text).blocks))
    assert sum(len(b.instructions) for b in blocks) == len(parse_assembly(assembly))
    assert [b.words for b in blocks] == [b.words for b in lower_blocks(text, target=target, opt_level=2)]


def test_loop_body_holds_only_the_loop(write) -> None:  # type: ignore[no-untyped-def]
    text = ir_of(write("loop.c", LOOP_C), "x86_64-linux-gnux32", "-fno-vectorize", "-fno-unroll-loops")
    parsed = parse_module(text)
    blocks = lower_blocks(text, target="riscv32", opt_level=2)
    loops = [i for i, b in enumerate(parsed.blocks) if b.function == "checksum" and b.label in b.successors]
    assert len(loops) == 1
    body = [i.mnemonic for i in blocks[loops[0]].instructions]
    # xor, load byte, multiply, advance, compare-and-branch (+ counter): the FNV prime is hoisted out.
    assert "mul" in body
    assert "lbu" in body
    assert "lui" not in body, body
    assert len(body) <= 7, body


def test_twin_functions_match_the_host_control_flow(tmp_path: Path) -> None:
    source = EXAMPLE / "src" / "sort.c"
    flags = ("-fno-vectorize", "-fno-slp-vectorize", f"-I{EXAMPLE / 'include'}")
    host = ir_of(source, "x86_64-linux-gnu", *flags)
    twin = ir_of(source, "x86_64-linux-gnux32", *flags)
    mapping, unmatched = match_blocks(parse_module(host), parse_module(twin))
    assert unmatched == []
    assert len(mapping) == len(parse_module(host).blocks)
    program = lower_program(host, twin, target="riscv32", opt_level=2)
    assert program.approximate == []
    assert len(program.blocks) == len(mapping)


def test_host_only_code_is_a_clear_error() -> None:
    text = """
define i32 @f(i32 %x) {
  %r = call i32 @llvm.x86.rdrand.32()
  ret i32 %r
}
declare i32 @llvm.x86.rdrand.32()
"""
    with pytest.raises(LoweringError, match="x86 intrinsics cannot be compiled for riscv32"):
        compile_riscv(text, target="riscv32", opt_level=2)
