"""The ``rocket`` machine against llvm-mca-14 (LLVM's Rocket model), and control-transfer penalties.

The agreement check compiles lz4 (from its PyPI sdist) with the project's clang, splits the
assembly into basic blocks and compares every block's estimate with llvm-mca's ``Total Cycles - 1``
(``benchmarks/pipeline_mca.py``, which also runs the other libraries). The hand-checked cases spell
out the cycles from docs/pipeline-model.md, and are confirmed with llvm-mca when it is installed.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from cbuild.riscv.isa import Instruction, parse_assembly
from cbuild.riscv.machine import Machine, MachineError, load_machine

ROOT = Path(__file__).resolve().parent.parent
LLVM_MCA = Path("/usr/bin/llvm-mca-14")
needs_mca = pytest.mark.skipif(not LLVM_MCA.exists(), reason=f"{LLVM_MCA} is not installed")


def _benchmark() -> ModuleType:
    spec = importlib.util.spec_from_file_location("pipeline_mca", ROOT / "benchmarks" / "pipeline_mca.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


bench = _benchmark()


def mca_estimate(text: str, target: str = "riscv64") -> int:
    """llvm-mca's Total Cycles - 1 for one iteration of a block."""
    (total,) = bench.mca_cycles([bench.Block("b", tuple(text.strip().splitlines()))], target)
    assert total is not None, text
    return int(total) - 1


# ---------------------------------------------------------------------------------------------
# Real code
# ---------------------------------------------------------------------------------------------


@pytest.mark.slow
@needs_mca
@pytest.mark.parametrize("target", ["riscv64", "riscv32"])
def test_lz4_blocks_agree_with_llvm_mca(target: str) -> None:
    blocks = bench.library_blocks("lz4", target)
    summary = bench.compare_blocks(blocks, load_machine("rocket"), target, f"lz4 {target}")
    assert len(summary.rows) > 2000, bench.report(summary, 5)
    assert summary.skipped == 0, bench.report(summary, 5)
    assert summary.exact >= 0.99, bench.report(summary, 10)


def test_split_blocks() -> None:
    text = """\
f:                                      # @f
\t.cfi_startproc
# %bb.0:
\tlw\ta0, 0(a1)                    # a comment
.Ltmp0:
\taddi\ta0, a0, 1
\tbeqz\ta0, .LBB0_2
\tsw\ta0, 0(a2)
.LBB0_2:
\tsd\ta0, 8(a2)
\tret
g = .L_MergedGlobals
"""
    blocks = bench.split_blocks(text)
    # .Ltmp0 is no jump target: it does not split the first block
    assert [b.lines for b in blocks] == [
        ("lw a0, 0(a1)", "addi a0, a0, 1", "beqz a0, .LBB0_2"),
        ("sw a0, 0(a2)",),
        ("sd a0, 8(a2)", "ret"),
    ]
    assert bench.comparable(blocks[2]).lines == ("sd a0, 8(a2)",)  # llvm-mca 14 costs ret as a call
    assert bench.comparable(blocks[0]) == blocks[0]  # conditional branches stay


# ---------------------------------------------------------------------------------------------
# Hand-checked blocks: (assembly, timeline, estimate)
# ---------------------------------------------------------------------------------------------

CASES = {
    # lw latency 2; the independent sw issues at 1 and completes at 2, with the load. Finish 2,
    # as in llvm-mca (which delays a store behind a load only with -noalias=false).
    "load then independent store": ("lw a0, 0(a1)\nsw a2, 0(a3)\n", [(0, 2), (1, 2)], 2),
    # lbu latency 3, so wb = 3; the sb (latency 1) must complete no earlier: it issues at 3 - 1 = 2,
    # not 1, and the addi after it at 3. Finish 4 (it was 3 before stores obeyed the write-back order).
    "store behind a narrow load": ("lbu a0, 0(a1)\nsb a2, 0(a3)\naddi a4, a4, 1\n", [(0, 3), (2, 3), (3, 4)], 4),
    # the same for a store behind a divide: it issues at 33 - 1 = 32, the add at 33.
    "store behind a divide": (
        "div a0, a1, a2\nsw a3, 0(a4)\nadd a5, a6, a7\n",
        [(0, 33), (32, 33), (33, 34)],
        34,
    ),
    # a branch is held the same way: bnez waits until 4 - 1 = 3.
    "branch behind a multiply": ("mul a0, a1, a2\nbnez a3, .L1\n", [(0, 4), (3, 4)], 4),
    # 32-bit divides take 34 cycles (LLVM: WriteIDiv32), 64-bit ones 33.
    "divw": ("divw a0, a1, a2\nadd a3, a0, a0\n", [(0, 34), (34, 35)], 35),
    # double-precision FMA 7, add 6, move to an integer register 2.
    "double precision": (
        "fmadd.d fa0, fa1, fa2, fa3\nfadd.d fa4, fa0, fa0\nfmv.x.d a0, fa4\n",
        [(0, 7), (7, 13), (13, 15)],
        15,
    ),
    # fsqrt.d 25 cycles on the FP divider; the fsd behind it waits for the write-back order.
    "fsqrt.d": ("fsqrt.d fa0, fa1\nfsd fa2, 0(a0)\n", [(0, 25), (24, 25)], 25),
    # atomics' ordering suffixes do not change their class: amoadd latency 2.
    "atomic with ordering suffix": ("amoadd.w.aqrl a0, a2, (a1)\naddi a3, a0, 1\n", [(0, 2), (2, 3)], 3),
}


@pytest.mark.parametrize("name", list(CASES))
def test_rocket_hand_checked(name: str) -> None:
    text, timeline, estimate = CASES[name]
    machine = load_machine("rocket")
    instrs = parse_assembly(text)
    assert machine.timeline(instrs) == timeline
    assert machine.estimate(instrs) == estimate


@needs_mca
@pytest.mark.parametrize("name", list(CASES))
def test_rocket_hand_checked_with_llvm_mca(name: str) -> None:
    text, _, estimate = CASES[name]
    assert mca_estimate(text) == estimate


def test_inorder5_stores_keep_the_old_rule() -> None:
    # in_order_writeback = true: a store has no destination and is not held back (issues at 1).
    machine = load_machine("inorder5")
    assert machine.timeline(parse_assembly("div a0, a1, a2\nsw a3, 0(a4)\n")) == [(0, 32), (1, 2)]


# ---------------------------------------------------------------------------------------------
# Control-transfer penalties
# ---------------------------------------------------------------------------------------------

CHIP = """\
[machine]
name = "chip"
units = ["alu"]
default_class = "alu"
{extra}
[classes.alu]
units = {{ alu = 1 }}
latency = 1
"""


def chip(tmp_path: Path, extra: str) -> Machine:
    path = tmp_path / "chip.toml"
    path.write_text(CHIP.format(extra=extra))
    return load_machine(path)


def one(text: str) -> Instruction:
    (instr,) = parse_assembly(text)
    return instr


def test_rocket_penalties_follow_llvm() -> None:
    machine = load_machine("rocket")
    # LLVM's RocketModel: MispredictPenalty = 3; no charge for a correctly predicted transfer.
    assert (machine.mispredict_penalty, machine.taken_branch_penalty, machine.predictor) == (3, 0, "btfn")
    loop = one("bnez a0, .LBB0_1")
    assert machine.transfer_penalty(loop, 0x120, 0x100, taken=True) == 0  # backward, taken: predicted
    assert machine.transfer_penalty(loop, 0x120, 0x100, taken=False) == 3  # loop exit: mispredicted
    skip = one("beq a0, a1, .LBB0_9")
    assert machine.transfer_penalty(skip, 0x120, 0x180, taken=False) == 0  # forward, not taken: predicted
    assert machine.transfer_penalty(skip, 0x120, 0x180, taken=True) == 3  # forward, taken: mispredicted
    assert machine.transfer_penalty(one("bnez a0, .L1"), 0x100, 0x100, taken=True) == 0  # to itself: backward
    for jump in ("j .LBB0_3", "ret", "jr a5", "call memcpy", "tail memcpy", "jal foo", "jalr a5"):
        assert machine.transfer_penalty(one(jump), 0x100, 0x400, taken=True) == 0, jump
    assert machine.transfer_penalty(one("add a0, a1, a2"), 0x100, 0x104, taken=False) == 0


def test_inorder5_has_no_penalties() -> None:
    machine = load_machine("inorder5")
    assert machine.transfer_penalty(one("bnez a0, .L1"), 0x120, 0x100, taken=False) == 0
    assert machine.transfer_penalty(one("j .L1"), 0x120, 0x100, taken=True) == 0


def test_btfn_with_taken_penalty(tmp_path: Path) -> None:
    machine = chip(tmp_path, 'taken_branch_penalty = 1\nmispredict_penalty = 4\npredictor = "btfn"\n')
    loop, skip = one("blt a0, a1, .L1"), one("bgeu a0, a1, .L2")
    assert machine.transfer_penalty(loop, 0x200, 0x1F0, taken=True) == 1  # predicted, but a redirect
    assert machine.transfer_penalty(loop, 0x200, 0x1F0, taken=False) == 4
    assert machine.transfer_penalty(skip, 0x200, 0x240, taken=True) == 4
    assert machine.transfer_penalty(skip, 0x200, 0x240, taken=False) == 0
    assert machine.transfer_penalty(one("j .L3"), 0x200, 0x100, taken=True) == 1
    assert machine.transfer_penalty(one("ret"), 0x200, 0x900, taken=True) == 1
    assert machine.transfer_penalty(one("j .L3"), 0x200, 0x204, taken=False) == 0
    # not a control transfer: no penalty whatever the caller says
    assert machine.transfer_penalty(one("mul a0, a1, a2"), 0x200, 0x100, taken=True) == 0


def test_no_predictor(tmp_path: Path) -> None:
    # "none": fetch runs on sequentially; a taken branch costs the redirect, nothing is mispredicted
    machine = chip(tmp_path, 'taken_branch_penalty = 2\nmispredict_penalty = 5\npredictor = "none"\n')
    loop = one("bnez a0, .L1")
    assert machine.transfer_penalty(loop, 0x200, 0x1F0, taken=True) == 2
    assert machine.transfer_penalty(loop, 0x200, 0x1F0, taken=False) == 0
    assert machine.transfer_penalty(one("beqz a0, .L2"), 0x200, 0x300, taken=True) == 2
    assert machine.transfer_penalty(one("jal foo"), 0x200, 0x300, taken=True) == 2


def test_penalties_default_to_zero(tmp_path: Path) -> None:
    machine = chip(tmp_path, "")
    assert (machine.taken_branch_penalty, machine.mispredict_penalty, machine.predictor) == (0, 0, "none")
    assert machine.transfer_penalty(one("bnez a0, .L1"), 0x200, 0x1F0, taken=False) == 0


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ('predictor = "gshare"\n', "machine.predictor"),
        ("mispredict_penalty = -1\n", "machine.mispredict_penalty"),
        ('taken_branch_penalty = "2"\n', "machine.taken_branch_penalty"),
        ("taken_branch_penalty = true\n", "machine.taken_branch_penalty"),
        ('in_order_writeback = "some"\n', "machine.in_order_writeback"),
    ],
)
def test_machine_field_errors(tmp_path: Path, extra: str, field: str) -> None:
    with pytest.raises(MachineError) as info:
        chip(tmp_path, extra)
    message = str(info.value)
    assert field in message
    assert "chip.toml:5:" in message  # the line of the field


@needs_mca
def test_llvm_mca_does_not_apply_the_mispredict_penalty() -> None:
    # llvm-mca has no branch prediction: a conditional branch is a 1-cycle instruction, so the
    # block comparisons are unaffected by the penalty, which the run-time side adds per transfer.
    assert mca_estimate("addi a0, a0, -1\nbnez a0, .L1\n") == 2
    proc = subprocess.run(
        [str(LLVM_MCA), "-mtriple=riscv64", "-mcpu=rocket-rv64", "-iterations=1"],
        input="bnez a0, .L1\n",
        capture_output=True,
        text=True,
        check=True,
    )
    assert "Total Cycles:      2" in proc.stdout
