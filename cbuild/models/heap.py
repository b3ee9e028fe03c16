"""The ``heap`` model: what the counted C library's allocator did (cbuild/libc/malloc.c).

Exact and deterministic like the instruction count: ``allocations`` (successful
``malloc``, ``calloc``, aligned and moving ``realloc`` calls), ``allocated_bytes`` (the
bytes those calls asked for) and ``peak_heap_bytes`` (the most bytes asked for and not
yet freed at any moment of the measurement). ``allocations`` is also a clock: regions have
theirs, and builds that track calls (``--instrbudget-report=functions``, profiles, the HTML
report) say who allocated: each function's inclusive allocations and each call path's (the
flame graph). They are not kept in the baseline, whose entries must not depend on which
reports a run wrote. Needs the counted C library
(``count_libraries``, on by default): without it the allocator is the host's, which
keeps no such numbers, and a build with the model fails saying so.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cbuild.models.base import BuildView, CostModel, Metric, ModelError, Runtime
from cbuild.models.costs import BlockCounts, Cost

RUNTIME = Path(__file__).resolve().parent.parent / "runtime" / "heap_model.c"
RESULTS = ("allocations", "allocated_bytes", "peak_heap_bytes")


class HeapModel(CostModel):
    """Allocations, bytes allocated and peak live heap bytes, read from the counted allocator."""

    name = "heap"
    metrics = (
        Metric("allocations", "allocations", "max_allocations"),
        Metric("allocated_bytes", "bytes", "max_allocated_bytes"),
        Metric("peak_heap_bytes", "bytes", "max_peak_heap_bytes"),
    )

    def analyse(self, build: BuildView) -> dict[str, Any]:
        if "@__instrbudget_heap " not in build.ir:
            raise ModelError(
                "the heap model measures the counted C library's allocator, and this build does not link it "
                "(count_libraries = false, or an uninstrumented build): set count_libraries = true or drop the model"
            )
        return {}

    def runtime(self, analysis: Mapping[str, Any]) -> Runtime | None:
        return Runtime(RUNTIME.read_text(), results=len(RESULTS), clock=True)

    def evaluate(self, counts: BlockCounts) -> list[Cost]:
        if self.name in counts.unavailable:
            return []
        results = dict(zip(RESULTS, counts.results_of(self.name), strict=True))
        return [Cost(name, results[name]) for name in RESULTS]
