"""The ``pipeline`` model: cycles on an in-order pipeline, by max-plus estimation.

Every instruction is a max-plus matrix over the machine's resources, a block the product of its
instructions' matrices in reverse order (:mod:`cbuild.riscv.machine`); the executed blocks' matrices
are applied in execution order to the resource release-time vector (zeros at the start), and the
metric is the finishing cycle. Details and limits: docs/pipeline-model.md.

By default (``execute = true``) the program or library is built for the machine's target
(:mod:`cbuild.riscv.build`) and executed in the RISC-V executor (:mod:`cbuild.riscv.executor`): each executed
machine block's matrix comes from its decoded machine code (:mod:`cbuild.riscv.decode`), computed
once per block, and the machine file's control-transfer penalty is added between blocks
(runtime/pipeline_exec.c); a cut-off on cycles (``stop_at_cycles``) stops that run. With
``execute = false`` the blocks are those of the IR lowered to RISC-V assembly
(:mod:`cbuild.riscv.lowering`), applied by the instrumented native program
(runtime/pipeline_model.c), whose cut-off checks then stop it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from cbuild.build.cache import file_digest
from cbuild.models.base import BLOCKS, BuildView, CostModel, Metric, ModelError, Param, Runtime, boolean
from cbuild.models.costs import BlockCounts, Cost
from cbuild.models.csource import c_array
from cbuild.models.pipeline_blocks import BlockMatrices
from cbuild.riscv.executor import ExecRuntime
from cbuild.riscv.machine import Machine, MachineError, load_machine

RUNTIME = Path(__file__).parent.parent / "runtime" / "pipeline_model.c"
EXEC_RUNTIME = Path(__file__).parent.parent / "runtime" / "pipeline_exec.c"
#: The resource state, result and clock both runtimes share, placed before either.
STATE = Path(__file__).parent.parent / "runtime" / "pipeline_state.c"
#: Matrix entries of a program up to which the dynamic phase is compiled once per block.
SPECIALISE_ENTRIES = 60_000


def _machine_name(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"expected a machine name (inorder5, rocket) or a path to a .toml file, got {value!r}")
    return value


class PipelineModel(CostModel):
    """Finishing cycle of the executed blocks on a single-issue in-order machine."""

    name = "pipeline"
    # The modelled RISC-V machines have no vector unit: vector code would be costed as scalar copies.
    compile_flags = ("-fno-vectorize", "-fno-slp-vectorize")
    events = frozenset({BLOCKS})
    metrics = (Metric("pipeline_cycles", "cycles", "max_cycles"),)
    #: pipeline_cycles ends when the last instruction finishes; the cut-offs' clock is its issue slot.
    clock_is_total: ClassVar[bool] = False
    params: ClassVar[Mapping[str, Param]] = {
        "machine": Param(
            "inorder5", "a shipped machine (inorder5, rocket) or the path of a TOML description", _machine_name
        ),
        "execute": Param(True, "execute the build for the machine's RISC-V target itself", boolean),
    }

    def configure(self) -> None:
        try:
            self.machine: Machine = load_machine(self.config["machine"], root=self.root)
        except MachineError as exc:
            raise ModelError(f"[tool.instrbudget.pipeline] machine: {exc}") from None

    def key_params(self) -> tuple[tuple[str, str], ...]:
        # A description edited in place must not reuse estimates made from its old text. Builds and
        # baselines made before ``execute`` existed stay valid while it is off.
        params = tuple(kv for kv in super().key_params() if kv != ("pipeline.execute", "False"))
        return (*params, ("pipeline.machine_digest", file_digest(self.machine.path)))

    def executes(self) -> str | None:
        return self.machine.target if self.config["execute"] else None

    def exec_runtime(self) -> ExecRuntime:
        widest = max(len(self.machine.resources), 1)
        source = "".join(
            [
                f"#define PL_RESOURCES {len(self.machine.resources)}\n#define PL_MAX_ROWS {widest}\n",
                EXEC_RUNTIME.read_text(),
            ]
        )
        return ExecRuntime(source, results=1, block_data=BlockMatrices(self.machine))

    def analyse(self, build: BuildView) -> dict[str, Any]:
        rows: list[list[Any]] = []
        estimates: list[int] = []
        zero = self.machine.initial_state()
        code = build.riscv(self.machine.target)
        matrices = self.machine.block_matrices(block.instructions for block in code.blocks)
        for matrix in matrices:
            rows.append(
                [
                    [i, [x for j, v in sorted(row.items()) for x in (j, int(v))]]
                    for i, row in sorted(matrix.rows.items())
                ]
            )
            estimates.append(self.machine.finish(matrix.apply(zero)))
        return {
            "machine": self.machine.name,
            "resources": len(self.machine.resources),
            "rows": rows,
            "estimates": estimates,
            "approximate_functions": code.approximate,
        }

    def runtime(self, analysis: Mapping[str, Any]) -> Runtime:
        block_rows, targets, row_entries, columns, values = [0], [], [0], [], []
        in_start, in_cols = [0], []
        widest = 1
        for block in analysis["rows"]:
            widest = max(widest, len(block))
            inputs: set[int] = set()
            for target, flat in block:
                targets.append(target)
                columns.extend(flat[0::2])
                values.extend(flat[1::2])
                row_entries.append(len(columns))
                inputs.update(flat[0::2])
            block_rows.append(len(targets))
            in_cols.extend(sorted(inputs - {0}))  # the issue slot is the reference
            in_start.append(len(in_cols))
        source = "".join(
            [
                f"#define PL_RESOURCES {analysis['resources']}\n#define PL_MAX_ROWS {widest}\n",
                f"#define PL_BLOCKS {max(len(analysis['rows']), 1)}\n#define PL_ROWS {max(len(targets), 1)}\n",
                c_array("uint32_t", "pl_in_start", in_start),
                c_array("uint16_t", "pl_in_col", in_cols),
                c_array("uint32_t", "pl_block_rows", block_rows),
                c_array("uint16_t", "pl_row_target", targets),
                c_array("uint32_t", "pl_row_entries", row_entries),
                c_array("uint16_t", "pl_entry_column", columns),
                c_array("int32_t", "pl_entry_value", values),
                STATE.read_text(),
                RUNTIME.read_text(),
            ]
        )
        # Each block's specialised copy unrolls its rows: past this size, one shared copy builds faster.
        return Runtime(source, results=1, specialise=len(columns) <= SPECIALISE_ENTRIES, clock=True)

    def evaluate(self, counts: BlockCounts) -> list[Cost]:
        if self.name in counts.unavailable:
            return []
        (cycles,) = counts.results_of(self.name)
        return [Cost(self.metrics[0].name, cycles)]
