"""Where counters go: on the edges left out of a spanning tree of each function's CFG.

Counting every block entry costs one memory update per block. Flow conservation
(what enters a block leaves it) makes most of those redundant: with a counter on
each edge outside a spanning tree of the control-flow graph (plus a virtual EXIT
node joined to the entry), every other edge count follows by solving the tree
from its leaves, and a block's count is the sum of its incoming edges (Knuth,
"Optimal measurement points for program frequency counts", 1973). A maximum
spanning tree over estimated frequencies (loop depth) keeps counters on cold edges.

Exactness rests on two rules:

* Control that leaves a block other than through its terminator (a call that exits,
  longjmps or throws through the frame) takes an *abnormal* edge to EXIT. Every
  block that calls a function has one; it cannot be measured, so it is forced into
  the tree and solved for. A frame suspended in a call counts as having left that
  way, so the derived counts are exact whenever a call or a return is under way,
  which is whenever anyone can look at the counters.
* Edges that cannot get a block of their own (unwind edges into shared landing pads,
  ``indirectbr``, ``callbr``) are forced into the tree as well. When forced edges
  would close a cycle, the function falls back to one counter per block.

A measured edge is counted at the start of its target when it is the target's only
way in, at the end of its source when it is the source's only way out, and
otherwise in a new block placed on the edge.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from cbuild.build.blocks import ParsedBlock

EXIT = -1
#: Site kinds.
START, END, SPLIT = "start", "end", "split"


@dataclass(frozen=True)
class Site:
    """Where one counter's code goes."""

    kind: str  # START of ``block``, END of ``block`` (before its terminator), or SPLIT of block -> target
    block: int
    target: int = EXIT


@dataclass
class Placement:
    """Counters of a module: their sites, their weights, and how block counts follow from them."""

    sites: list[Site] = field(default_factory=list)
    #: Per block (global index): (counter, coefficient) pairs; the block's count is their sum.
    derive: list[list[tuple[int, int]]] = field(default_factory=list)
    #: Per counter: the instructions one increment stands for (sum of size x coefficient).
    weights: list[int] = field(default_factory=list)


@dataclass
class _Edge:
    src: int
    dst: int
    kind: str  # "flow", "fixed", "return", "abnormal", "call"
    counter: int | None = None


def back_edges(succ: dict[int, list[int]], entry: int) -> list[tuple[int, int]]:
    """The back edges (tail, head) of a depth-first search of ``succ`` from ``entry``: every cycle has one."""
    state: dict[int, int] = {entry: 1}  # 1 on the stack, 2 done
    back: list[tuple[int, int]] = []
    stack = [(entry, iter(succ[entry]))]
    while stack:
        node, it = stack[-1]
        nxt = next(it, None)
        if nxt is None:
            state[node] = 2
            stack.pop()
        elif state.get(nxt) == 1:
            back.append((node, nxt))
        elif nxt not in state:
            state[nxt] = 1
            stack.append((nxt, iter(succ[nxt])))
    return back


def _loop_depth(nodes: Sequence[int], succ: dict[int, list[int]], entry: int) -> dict[int, int]:
    """How many natural loops contain each node (back edges found by depth-first search)."""
    depth = dict.fromkeys(nodes, 0)
    pred: dict[int, list[int]] = {n: [] for n in nodes}
    for u in nodes:
        for v in succ[u]:
            pred[v].append(u)
    back = back_edges(succ, entry)
    for tail, head in back:
        body = {head, tail}
        work = [tail]
        while work:
            n = work.pop()
            if n == head:
                continue
            for p in pred[n]:
                if p not in body:
                    body.add(p)
                    work.append(p)
        for n in body:
            depth[n] += 1
    return depth


def _find(parent: dict[int, int], x: int) -> int:
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


def _plan_function(blocks: list[ParsedBlock], first: int) -> tuple[list[_Edge], list[Site]] | None:
    """Edges with counters for one function (block indices are global); None to fall back."""
    index = {b.label: first + i for i, b in enumerate(blocks)}
    nodes = list(range(first, first + len(blocks)))
    edges: list[_Edge] = [_Edge(EXIT, first, "call")]
    succ: dict[int, list[int]] = {n: [] for n in nodes}
    for i, b in enumerate(blocks):
        u = first + i
        if b.terminator in ("catchswitch", "catchret", "cleanupret"):
            return None  # funclet-based exception handling: not placed by edges
        for label in b.successors:
            if label not in index:
                return None
            edges.append(_Edge(u, index[label], "flow"))
            succ[u].append(index[label])
        for label in b.fixed_successors:
            if label not in index:
                return None
            edges.append(_Edge(u, index[label], "fixed"))
            succ[u].append(index[label])
        if b.terminator in ("ret", "resume") and not (b.musttail and b.calls):
            # (A musttail block's return cannot be measured; its abnormal edge, also to
            # EXIT, stands for both.)
            edges.append(_Edge(u, EXIT, "return"))
        if b.calls or b.terminator == "unreachable":
            edges.append(_Edge(u, EXIT, "abnormal"))
    into: dict[int, int] = dict.fromkeys(nodes, 0)
    for e in edges:
        if e.dst != EXIT:
            into[e.dst] += 1
    flow_out: dict[int, int] = dict.fromkeys(nodes, 0)
    for e in edges:
        if e.src != EXIT and e.kind in ("flow", "fixed"):
            flow_out[e.src] += 1

    def site(e: _Edge) -> Site | None:
        if e.kind == "call":
            return Site(START, e.dst)
        if e.kind == "return":  # nothing may stand between a musttail call and its ret
            return None if blocks[e.src - first].musttail else Site(END, e.src)
        if e.kind == "abnormal":
            return None
        if into[e.dst] == 1 and e.src != e.dst:
            return Site(START, e.dst)
        if e.kind == "flow" and flow_out[e.src] == 1 and blocks[e.src - first].terminator == "br":
            return Site(END, e.src)
        if e.kind == "flow":
            return Site(SPLIT, e.src, e.dst)
        return None

    depth = _loop_depth(nodes, succ, first)
    sites = [site(e) for e in edges]
    parent = {n: n for n in [*nodes, EXIT]}
    in_tree = [False] * len(edges)

    def weight(i: int) -> float:
        """Cost of measuring an edge: its estimated frequency (8 per loop level, split
        evenly among a block's successors), doubled when it needs a block of its own."""
        e = edges[i]
        ends = [depth[n] for n in (e.src, e.dst) if n != EXIT]
        fan_out = len(succ[e.src]) if e.src != EXIT and succ[e.src] else 1
        measured_at = sites[i]
        penalty = 2.0 if measured_at is not None and measured_at.kind == SPLIT else 1.0
        return penalty * 8.0 ** min(ends) / fan_out

    forced = [i for i, s in enumerate(sites) if s is None]
    optional = sorted((i for i, s in enumerate(sites) if s is not None), key=lambda i: -weight(i))
    for i in [*forced, *optional]:
        e = edges[i]
        root_src, root_dst = _find(parent, e.src), _find(parent, e.dst)
        if root_src == root_dst:
            if sites[i] is None:
                return None  # an unmeasurable edge closes a cycle
            continue
        parent[root_src] = root_dst
        in_tree[i] = True
    placed: list[Site] = []
    for i, e in enumerate(edges):
        if not in_tree[i]:
            s = sites[i]
            assert s is not None
            e.counter = len(placed)
            placed.append(s)
    return edges, placed


def _solve(edges: list[_Edge], base: int) -> list[dict[int, int]]:
    """Each edge's count as a combination of counters (numbered from ``base``), by leaf elimination."""
    values: list[dict[int, int] | None] = [{base + e.counter: 1} if e.counter is not None else None for e in edges]
    incident: dict[int, list[int]] = {}
    for i, e in enumerate(edges):
        if e.src == e.dst:
            continue  # a self-loop enters and leaves: never in the tree, no part of conservation
        incident.setdefault(e.src, []).append(i)
        incident.setdefault(e.dst, []).append(i)
    unknown = {n: sum(1 for i in ids if values[i] is None) for n, ids in incident.items()}
    work = [n for n, k in unknown.items() if k == 1]
    while work:
        node = work.pop()
        if unknown[node] != 1:
            continue
        total: dict[int, int] = {}
        target = -1
        for i in incident[node]:
            v = values[i]
            if v is None:
                target = i
                continue
            sign = 1 if edges[i].dst == node else -1  # inflow minus outflow is zero
            for c, k in v.items():
                total[c] = total.get(c, 0) + sign * k
        e = edges[target]
        sign = -1 if e.dst == node else 1
        values[target] = {c: sign * k for c, k in total.items() if k}
        for n in (e.src, e.dst):
            unknown[n] -= 1
            if unknown[n] == 1:
                work.append(n)
    if any(v is None for v in values):
        raise AssertionError("spanning tree left an edge unsolved")
    return [v for v in values if v is not None]


def function_spans(blocks: Sequence[ParsedBlock]) -> Iterator[tuple[int, int]]:
    """(first, one past the last) block of each function, blocks being in module order."""
    start = 0
    while start < len(blocks):
        end = start
        while end < len(blocks) and blocks[end].function == blocks[start].function:
            end += 1
        yield start, end
        start = end


def place(blocks: list[ParsedBlock]) -> Placement:
    """Counters for every function of a module (blocks in module order)."""
    plan = Placement(derive=[[] for _ in blocks])
    for start, end in function_spans(blocks):
        fn_blocks = blocks[start:end]
        planned = _plan_function(fn_blocks, start)
        base = len(plan.sites)
        if planned is None:
            for i in range(start, end):
                plan.derive[i] = [(len(plan.sites), 1)]
                plan.sites.append(Site(START, i))
        else:
            edges, sites = planned
            plan.sites.extend(sites)
            values = _solve(edges, base)
            counts: dict[int, dict[int, int]] = {i: {} for i in range(start, end)}
            for e, v in zip(edges, values, strict=True):
                if e.dst != EXIT:
                    acc = counts[e.dst]
                    for c, k in v.items():
                        acc[c] = acc.get(c, 0) + k
            for i in range(start, end):
                plan.derive[i] = sorted((c, k) for c, k in counts[i].items() if k)
    plan.weights = [0] * len(plan.sites)
    for b, terms in zip(blocks, plan.derive, strict=True):
        for c, k in terms:
            plan.weights[c] += k * b.size
    return plan


def place_per_block(blocks: list[ParsedBlock]) -> Placement:
    """One counter per block, at its start: simple, and the reference the edge placement is tested against."""
    plan = Placement(
        sites=[Site(START, i) for i in range(len(blocks))],
        derive=[[(i, 1)] for i in range(len(blocks))],
        weights=[b.size for b in blocks],
    )
    return plan
