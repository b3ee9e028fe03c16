"""The ``pipeline`` model's data for each executed machine block (what runtime/pipeline_exec.c reads).

Kept apart from :mod:`cbuild.models.pipeline` so that the executor's child process, which unpickles
the producer, imports only the machine description and the decoder.
"""

from __future__ import annotations

from collections.abc import Sequence

from cbuild.riscv.decode import decode
from cbuild.riscv.machine import Machine


class BlockMatrices:
    """The pipeline model's data for one executed machine block (the layout pipeline_exec.c reads):
    its max-plus matrix and the penalties of leaving it by a transfer of control or by falling through."""

    def __init__(self, machine: Machine) -> None:
        self.machine = machine
        self.xlen = 64 if machine.target == "riscv64" else 32

    def __call__(self, words: Sequence[int], pc: int) -> list[int]:
        instrs = [decode(word, pc + 4 * i, xlen=self.xlen) for i, word in enumerate(words)]
        if not instrs:
            return []
        matrix = self.machine.block_matrix(instrs)
        rows = sorted(matrix.rows.items())
        inputs = sorted({j for _, row in rows for j in row} - {0})  # the issue slot is the reference
        last, address = instrs[-1], pc + 4 * (len(instrs) - 1)
        target = _branch_target(last.operands)
        taken = self.machine.transfer_penalty(last, address, target, True)
        fallen = self.machine.transfer_penalty(last, address, target, False)
        # rows, inputs, the two penalties, the memo key (two words: PL_HEAD), a memo result per row
        data = [len(rows), len(inputs), taken, fallen, 0, 0, *([0] * len(rows)), *inputs]
        for resource, row in rows:
            data += [resource, len(row)]
            for column, value in sorted(row.items()):
                data += [column, int(value)]
        return data


def _branch_target(operands: Sequence[str]) -> int:
    """The address a decoded branch or jal names (its last operand), or -1 (an indirect jump)."""
    try:
        return int(operands[-1], 16) if operands else -1
    except ValueError:
        return -1
