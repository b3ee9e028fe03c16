"""`python -m cbuild warm` builds what a project's sessions need before the first test: after it,
a session on an empty cache builds only the project's own sources."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from cbuild.build import eviction
from cbuild.build.cache import LAYOUT


@pytest.mark.slow
def test_warm_leaves_a_session_only_its_own_sources_to_build(pytester: pytest.Pytester) -> None:
    pytester.makefile(
        ".toml",
        pyproject='[tool.instrbudget]\ncache_dir = "cache"\nmodels = ["ir-count", "heap"]\nopt_level = "1"\n',
    )
    pytester.makefile(".c", lib="#include <string.h>\nint len(const char *s) { return (int)strlen(s); }\n")
    pytester.makepyfile(test_a="def test_a(cbuild):\n    assert cbuild.library('lib.c').len(b'four') == 4\n")
    warm = subprocess.run(
        [sys.executable, "-m", "cbuild", "warm"],  # no C++ sources: no C++
        cwd=pytester.path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert warm.returncode == 0, warm.stderr
    assert f"warming the build cache {pytester.path / 'cache'} for {pytester.path}" in warm.stderr
    assert "  C program with ir-count, heap: " in warm.stderr
    assert "  library and its host process with ir-count, heap: " in warm.stderr
    assert "C++" not in warm.stderr
    built = {e.kind for e in eviction.entries(pytester.path / "cache")}
    assert {"rt", "tu", "ir", "bin"} <= built

    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    session = json.loads((pytester.path / "cache" / LAYOUT / eviction.SESSION_FILE).read_text())
    assert session["builds"].get("rt", 0) == 0  # the runtime, the counted C library, the host: all warm
    assert session["hits"]["rt"] > 0
    assert session["builds"]["tu"] == 1  # lib.c, the project's own


def test_warm_names_an_unknown_model(pytester: pytest.Pytester) -> None:
    pytester.makefile(".toml", pyproject='[tool.instrbudget]\nmodels = ["ir-count"]\n')
    proc = subprocess.run(
        [sys.executable, "-m", "cbuild", "warm", "--model", "wallclock"],
        cwd=pytester.path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert "wallclock" in proc.stderr
    assert "ir-count" in proc.stderr  # the known models are listed
