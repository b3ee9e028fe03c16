"""Call-path profiles in formats other tools read: speedscope's JSON and collapsed stacks.

Stacks are real call paths as the program ran (``main;parse;next_token``), each with
the cost spent in its innermost function (exclusive). Collapsed stacks are the
input of Brendan Gregg's flamegraph.pl and of inferno; speedscope opens its JSON
(https://www.speedscope.app/file-format-schema.json) directly.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cbuild.demangle import demangle

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
