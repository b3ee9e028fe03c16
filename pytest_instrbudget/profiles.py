"""``--instrbudget-profile-dir``: each measured test's call-path profile, for flame graphs."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from pathlib import Path

from cbuild.build.cache import atomic_write
from cbuild.models.costs import Cost
from cbuild.report.flamegraph import collapsed, speedscope

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


#: Characters of a test id kept in a file name (the file system allows 255 bytes per name).
MAX_STEM = 120


def file_stem(nodeid: str) -> str:
    """A file name for a test, unique per test id and never too long.

    ``test_p.py::test_x`` -> ``test_p.py__test_x``; an id with other characters
    (``/``, ``[``) or a long one is shortened and gets a hash of the whole id:
    ``tests/test_sort.py::test_x[3]`` -> ``tests_test_sort.py__test_x_3.5f0c3e9a1b``.
    """
    stem = nodeid.replace("::", "__")
    if _UNSAFE.search(stem) or len(stem) > MAX_STEM or not stem:
        tag = hashlib.sha256(nodeid.encode()).hexdigest()[:10]
        stem = f"{_UNSAFE.sub('_', stem)[:MAX_STEM].strip('_')}.{tag}"
    return stem


def write(directory: Path, nodeid: str, costs: Mapping[str, Cost]) -> list[Path]:
    """``STEM.speedscope.json`` (a profile per metric) and ``STEM.METRIC.collapsed``; nothing without stacks."""
    stacks = {metric: cost.stacks for metric, cost in costs.items() if cost.stacks}
    if not stacks:
        return []
    directory.mkdir(parents=True, exist_ok=True)
    stem = file_stem(nodeid)
    written = []
    doc = speedscope(nodeid, stacks, exporter="pytest-instrbudget")
    path = directory / f"{stem}.speedscope.json"
    atomic_write(path, (json.dumps(doc, indent=1) + "\n").encode())
    written.append(path)
    for metric, per_path in stacks.items():
        path = directory / f"{stem}.{metric}.collapsed"
        atomic_write(path, collapsed(per_path).encode())
        written.append(path)
    return written
