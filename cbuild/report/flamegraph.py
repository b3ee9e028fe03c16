"""Call-path profiles in formats other tools read: speedscope's JSON and collapsed stacks.

Stacks are real call paths as the program ran (``main;parse;next_token``), each with
the cost spent in its innermost function (exclusive). Collapsed stacks are the
input of Brendan Gregg's flamegraph.pl and of inferno; speedscope opens its JSON
(https://www.speedscope.app/file-format-schema.json) directly.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cbuild.build.demangle import demangle

SPEEDSCOPE_SCHEMA = "https://www.speedscope.app/file-format-schema.json"


def collapsed(stacks: Mapping[str, int]) -> str:
    """``frame;frame;frame value`` lines, sorted, demangled (frames of C++ names may contain spaces)."""
    lines = []
    for path, value in sorted(stacks.items()):
        if value > 0:
            frames = ";".join(demangle(f).replace(";", ",") for f in path.split(";"))
            lines.append(f"{frames} {value}")
    return "\n".join(lines) + ("\n" if lines else "")


def speedscope(name: str, profiles: Mapping[str, Mapping[str, int]], *, exporter: str) -> dict[str, Any]:
    """One speedscope document with a sampled profile per metric: a sample per call path,
    weighted by its exclusive cost."""
    frames: list[dict[str, Any]] = []
    index: dict[str, int] = {}

    def frame(function: str) -> int:
        if function not in index:
            index[function] = len(frames)
            frames.append({"name": demangle(function)})
        return index[function]

    documents = []
    for metric, stacks in profiles.items():
        samples, weights = [], []
        for path, value in sorted(stacks.items()):
            if value > 0:
                samples.append([frame(f) for f in path.split(";")])
                weights.append(value)
        documents.append(
            {
                "type": "sampled",
                "name": f"{name} ({metric})",
                "unit": "none",
                "startValue": 0,
                "endValue": sum(weights),
                "samples": samples,
                "weights": weights,
            }
        )
    return {
        "$schema": SPEEDSCOPE_SCHEMA,
        "shared": {"frames": frames},
        "profiles": documents,
        "name": name,
        "activeProfileIndex": 0,
        "exporter": exporter,
    }


def flame_tree(
    stacks: Mapping[str, int], functions: Mapping[str, int], baseline: Mapping[str, int] | None = None
) -> dict[str, Any]:
    """A call tree for d3-flame-graph: nodes ``{name, value, delta, children}`` where ``value`` is
    the node's own (exclusive) cost on that path.

    Baselines keep costs per function, not per path: a function's change against ``baseline``
    (exclusive, from ``functions``) is shared among its paths in proportion to their cost there,
    so the graph shows which functions grew or shrank, wherever they ran.
    """
    root: dict[str, Any] = {"name": "all", "value": 0, "delta": 0, "children": []}
    index: dict[tuple[str, ...], dict[str, Any]] = {(): root}
    for path, value in sorted(stacks.items()):
        if value <= 0:
            continue
        frames = tuple(path.split(";"))
        for depth in range(1, len(frames) + 1):
            key = frames[:depth]
            if key not in index:
                node: dict[str, Any] = {"name": demangle(key[-1]), "value": 0, "delta": 0, "children": []}
                index[key[:-1]]["children"].append(node)
                index[key] = node
        index[frames]["value"] += value
    if baseline is not None:
        for key, node in index.items():
            if key and node["value"]:
                now = functions.get(key[-1], 0)
                change = now - baseline.get(key[-1], 0)
                node["delta"] = round(change * node["value"] / now) if now else 0
    return root
