"""The ``zkvm`` model: RISC Zero rv32im cycles, with paging and segments.

By default (``execute = true``) the program or library is built for riscv32 itself
(:mod:`cbuild.riscv.build`) and executed in the RISC-V executor (:mod:`cbuild.riscv.executor`), where
runtime/zkvm_exec.c sees every executed machine instruction and memory access: user cycles are
exact, per function; 1 KiB pages are paged in and out per segment, and segments close before
the exact instruction; a cut-off on zk cycles (``stop_at_zkcycles``) stops that run. Constants
default to RISC Zero's circuit v2/v3 values (docs/cost-models.md).

With ``execute = false`` it estimates from IR instead: the program's IR is compiled for RV32IM
(:mod:`cbuild.riscv.lowering`), each block costs one user cycle per machine instruction, and the
instrumented native program reports blocks and memory accesses to runtime/zkvm_model.c (whose
cut-off checks then stop it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from cbuild.models.base import (
    BLOCKS,
    MEMORY,
    BuildView,
    CostModel,
    Metric,
    ModelError,
    Param,
    Runtime,
    boolean,
    integer,
)
from cbuild.models.costs import BlockCounts, Cost
from cbuild.models.csource import c_array
from cbuild.riscv.executor import ExecRuntime

RUNTIME = Path(__file__).parent.parent / "runtime" / "zkvm_model.c"
EXEC_RUNTIME = Path(__file__).parent.parent / "runtime" / "zkvm_exec.c"
#: The page Merkle tree both runtimes mark, placed before either.
MERKLE = Path(__file__).parent.parent / "runtime" / "zkvm_merkle.c"
PAGE_BITS = 10
#: Order of the dynamic phase's results.
RESULTS = ("total", "user", "paging", "reserved", "segments", "page_ins", "page_outs")


class ZkvmModel(CostModel):
    """Cycles a RISC Zero prover pays for the executed code: user, paging, reserved, padded total."""

    name = "zkvm"
    #: 2: every allocation on the heap, placed at a fixed address (paging no longer depends on the kernel).
    version = "2"
    # The modelled RISC-V machines have no vector unit: vector code would be costed as scalar copies.
    compile_flags = ("-fno-vectorize", "-fno-slp-vectorize")
    events = frozenset({BLOCKS, MEMORY})
    metrics = (
        Metric("zk_cycles", "cycles", "max_zkcycles"),
        Metric("zk_user_cycles", "cycles", "max_zkuser_cycles"),
        Metric("zk_paging_cycles", "cycles", "max_zkpaging_cycles"),
        Metric("zk_segments", "segments", "max_zksegments"),
    )
    #: zk_cycles is padded to a power of two per segment; the cut-offs' clock is user + paging cycles.
    clock_is_total: ClassVar[bool] = False
    params: ClassVar[Mapping[str, Param]] = {
        "po2": Param(20, "log2 of the segment size in cycles", integer(15, 24)),
        "page_cycles": Param(322, "cycles to hash one 1 KiB page, on page-in and on page-out", integer(0)),
        "node_cycles": Param(13, "cycles per Merkle node loaded or dirtied", integer(0)),
        "reserved_cycles": Param(4113, "cycles reserved per segment (lookup tables and control)", integer(0)),
        "reserved_paging_cycles": Param(10, "paging cycles reserved per segment", integer(0)),
        "max_insn_cycles": Param(25000, "head room a segment keeps below 2^po2", integer(0)),
        "merkle_depth": Param(22, "depth of the page Merkle tree (4 GiB of 1 KiB pages)", integer(22, 22)),
        "execute": Param(True, "execute the riscv32 build itself (exact user cycles and paging)", boolean),
    }

    def configure(self) -> None:
        c = self.config
        taken = c["max_insn_cycles"] + c["reserved_cycles"] + c["reserved_paging_cycles"]
        if taken >= 2 ** c["po2"]:
            raise ModelError(
                f"[tool.instrbudget.zkvm] po2 = {c['po2']}: a segment of 2^{c['po2']} cycles has no room left after "
                f"max_insn_cycles + reserved_cycles + reserved_paging_cycles = {taken}"
            )

    def _defines(self) -> dict[str, int]:
        c = self.config
        return {
            "ZK_PO2": c["po2"],
            "ZK_PAGE_CYCLES": c["page_cycles"],
            "ZK_NODE_CYCLES": c["node_cycles"],
            "ZK_RESERVED_CYCLES": c["reserved_cycles"],
            "ZK_RESERVED_PAGING_CYCLES": c["reserved_paging_cycles"],
            "ZK_MAX_INSN_CYCLES": c["max_insn_cycles"],
            "ZK_DEPTH": c["merkle_depth"],
            "ZK_PAGE_BITS": PAGE_BITS,
        }

    def key_params(self) -> tuple[tuple[str, str], ...]:
        # Builds and baselines made before ``execute`` existed stay valid with it off.
        return tuple(kv for kv in super().key_params() if kv != ("zkvm.execute", "False"))

    def executes(self) -> str | None:
        return "riscv32" if self.config["execute"] else None

    def exec_runtime(self) -> ExecRuntime:
        source = "".join(
            [*(f"#define {k} {v}u\n" for k, v in self._defines().items()), MERKLE.read_text(), EXEC_RUNTIME.read_text()]
        )
        return ExecRuntime(source, results=len(RESULTS), memory=True)

    def analyse(self, build: BuildView) -> dict[str, Any]:
        user, first, last = [], [], []
        code = build.riscv("riscv32")
        for block in code.blocks:
            user.append(block.words)
            if block.words:
                first.append(block.address >> PAGE_BITS)
                last.append((block.address + 4 * block.words - 1) >> PAGE_BITS)
            else:
                first.append(1)
                last.append(0)  # no code: no page to fetch
        return {"user": user, "code_first": first, "code_last": last, "approximate_functions": code.approximate}

    def runtime(self, analysis: Mapping[str, Any]) -> Runtime:
        defines = self._defines()
        source = "".join(
            [
                *(f"#define {k} {v}u\n" for k, v in defines.items()),
                c_array("uint32_t", "zk_user", analysis["user"]),
                c_array("uint32_t", "zk_code_first", analysis["code_first"]),
                c_array("uint32_t", "zk_code_last", analysis["code_last"]),
                MERKLE.read_text(),
                RUNTIME.read_text(),
            ]
        )
        return Runtime(source, results=len(RESULTS), clock=True)

    def describe_stop(self, results: Sequence[int]) -> str:
        if len(results) != len(RESULTS):
            return ""
        found = dict(zip(RESULTS, results, strict=True))
        return f"zkVM segment {found['segments']} (po2 {self.config['po2']})"

    def evaluate(self, counts: BlockCounts) -> list[Cost]:
        if self.name in counts.unavailable:
            return []
        results = dict(zip(RESULTS, counts.results_of(self.name), strict=True))
        if self.config["execute"]:
            executed = dict(counts.machine_run("riscv32").functions)
            return [
                Cost("zk_cycles", results["total"]),
                Cost("zk_user_cycles", results["user"], executed),
                Cost("zk_paging_cycles", results["paging"]),
                Cost("zk_segments", results["segments"]),
            ]
        functions: dict[str, int] = {}
        for block, count, words in zip(
            counts.table.blocks, counts.counts, counts.analysis(self.name)["user"], strict=True
        ):
            if count and words:
                functions[block.function] = functions.get(block.function, 0) + count * words
        return [
            Cost("zk_cycles", results["total"]),
            Cost("zk_user_cycles", results["user"], functions),
            Cost("zk_paging_cycles", results["paging"]),
            Cost("zk_segments", results["segments"]),
        ]
