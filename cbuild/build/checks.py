"""Where a cut-off build compares the running total with its limit, and how it does so exactly.

Code can run unboundedly only through a loop or a call, so a check at the entry of
every function that calls another and at the head of every loop (the target of a
retreating edge of a depth-first search, which every cycle of a control-flow graph
contains, reducible or not) is reached at least once per iteration and per recursive
call. A function that calls nothing (calls that surely return, such as intrinsics,
do not count) runs on only through its own loops.

The running total is exact only at calls and exits (:mod:`cbuild.build.placement`): in the
middle of a function, edge counters have added what some blocks *will* cost and not
yet what others did. The difference is a constant per block: for any two paths from
the entry to a block, their difference is a circulation, on which the counters'
weights are exact. So ``offset[v]``, the weights added minus the instructions executed
on one path from the entry up to the check in ``v``, corrects the total on every path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cbuild.build.blocks import ParsedBlock
from cbuild.build.placement import END, SPLIT, START, Placement, back_edges, function_spans
from cbuild.errors import InstrumentError


@dataclass(frozen=True)
class CheckPoint:
    """A check at the start of a block (after its own counting code)."""

    block: int
    #: Weights counted minus instructions executed before the block, in this activation.
    offset: int


def check_points(blocks: Sequence[ParsedBlock], plan: Placement) -> list[CheckPoint]:
    """The checks of a module, in block order: entries of functions that call, and loop heads."""
    start_w: dict[int, int] = {}
    end_w: dict[int, int] = {}
    split_w: dict[tuple[int, int], int] = {}
    for counter, site in enumerate(plan.sites):
        weight = plan.weights[counter]
        if site.kind == START:
            start_w[site.block] = start_w.get(site.block, 0) + weight
        elif site.kind == END:
            end_w[site.block] = end_w.get(site.block, 0) + weight
        elif site.kind == SPLIT:
            split_w[site.block, site.target] = split_w.get((site.block, site.target), 0) + weight
    out: list[CheckPoint] = []
    for first, last in function_spans(blocks):
        index = {blocks[i].label: i for i in range(first, last)}
        succ = {
            i: [index[s] for s in (*blocks[i].successors, *blocks[i].fixed_successors) if s in index]
            for i in range(first, last)
        }

        def step(u: int, v: int) -> int:
            """What the offset gains from the check in ``u`` to the check in its successor ``v``."""
            return end_w.get(u, 0) + split_w.get((u, v), 0) + start_w.get(v, 0) - blocks[u].size

        offsets = {first: start_w.get(first, 0)}
        work = [first]
        while work:  # every path gives the same offsets: any traversal will do
            u = work.pop()
            for v in succ[u]:
                if v not in offsets:
                    offsets[v] = offsets[u] + step(u, v)
                    work.append(v)
        for u, targets in succ.items():  # the property the checks rest on, verified
            for v in targets:
                if u in offsets and offsets[v] != offsets[u] + step(u, v):
                    raise InstrumentError(
                        f"{blocks[u].function}: the running total's offset differs between paths to block "
                        f"{blocks[v].label}; a cut-off could not be exact there"
                    )
        heads = {head for _, head in back_edges(succ, first)}
        if any(blocks[i].calls for i in range(first, last)):
            heads.add(first)  # a function without calls cannot recurse: its loops are its only way to run on
        out.extend(CheckPoint(b, offsets[b]) for b in sorted(heads))
    return out
