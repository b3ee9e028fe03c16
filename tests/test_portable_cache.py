"""A project copied to another directory hits the build cache: keys name the project's files
relative to it, and a header changed in the copy is still seen."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from cbuild.build import eviction
from cbuild.build.cache import LAYOUT

TEST = """
def test_sum(cbuild):
    lib = cbuild.library("../src/sum.c")
    assert lib.sum_to(100) == 5050


def test_program(cbuild):
    result = cbuild.program("../src/main.c", "../src/sum.c").run(["7"])
    assert result.stdout == b"src/main.c 28\\n"
"""


def project(directory: Path, cache: Path) -> None:
    (directory / "src").mkdir(parents=True)
    (directory / "include").mkdir()
    (directory / "tests").mkdir()
    (directory / "pyproject.toml").write_text(
        f'[tool.instrbudget]\ncache_dir = "{cache}"\ninclude_dirs = ["include"]\nmodels = ["ir-count", "zkvm"]\n'
    )
    (directory / "include" / "sum.h").write_text("#define STEP 1\nint sum_to(int n);\n")
    (directory / "src" / "sum.c").write_text(
        '#include "sum.h"\nint sum_to(int n) { int s = 0; for (int i = 1; i <= n; i += STEP) s += i; return s; }\n'
    )
    (directory / "src" / "main.c").write_text(
        '#include <stdio.h>\n#include <stdlib.h>\n#include "sum.h"\n'
        'int main(int argc, char **argv) { printf("%s %d\\n", __FILE__, sum_to(atoi(argv[1]))); return 0; }\n'
    )
    (directory / "tests" / "test_sum.py").write_text(TEST)
    settled(directory)


def settled(directory: Path) -> None:
    """Sources written a while ago: a file changed while clang reads it is compiled for one use only."""
    past = time.time() - 60
    for path in directory.rglob("*"):
        os.utime(path, (past, past))


def session(pytester: pytest.Pytester, directory: Path, cache: Path) -> tuple[dict[str, object], dict[str, int]]:
    """Run the project's tests there: its costs, and the builds the session made per kind."""
    result = pytester.runpytest(
        "-p",
        "no:cacheprovider",
        str(directory),
        "--rootdir",
        str(directory),
        "--instrbudget-json",
        str(directory / "out.json"),
    )
    result.assert_outcomes(passed=2)
    doc = json.loads((directory / "out.json").read_text())
    costs = {n: {m: v["value"] for m, v in t["metrics"].items()} for n, t in doc["tests"].items()}
    builds = json.loads((cache / LAYOUT / eviction.SESSION_FILE).read_text())["builds"]
    return costs, builds


@pytest.mark.slow
def test_a_copied_project_builds_nothing_and_counts_the_same(pytester: pytest.Pytester) -> None:
    cache = pytester.path / "cache"
    first = pytester.path / "checkouts" / "a"
    project(first, cache)
    costs, builds = session(pytester, first, cache)
    assert builds["tu"] >= 2  # compiled, natively and for RISC-V
    assert builds["bin"] == 2  # instrumented and linked

    moved = pytester.path / "elsewhere" / "with a longer path" / "b"
    shutil.copytree(first, moved)
    (moved / "out.json").unlink()
    again, builds = session(pytester, moved, cache)
    assert again == costs
    assert builds == {}  # nothing compiled, instrumented, linked or built for RISC-V

    # The copy's own header is what its builds read: a change there is a rebuild.
    (moved / "include" / "sum.h").write_text("#define STEP 2\nint sum_to(int n);\n")
    (moved / "tests" / "test_sum.py").write_text(TEST.replace("5050", "2500").replace("28", "16"))
    settled(moved)
    changed, builds = session(pytester, moved, cache)
    assert builds["tu"] >= 2
    assert changed != costs


def test_the_counted_c_librarys_musl_key_does_not_depend_on_where_the_package_lies(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The musl part's debug paths name the package's own sources (``-ffile-prefix-map`` of
    cbuild/libc), whose absolute path must not reach its cache key: a moved checkout, or another
    CI workspace restoring the cache, would build the counted C library again."""
    from cbuild.build import libc

    here = libc._musl_key("toolchain", tuple(libc.musl_flags("x86_64-linux-gnu")))
    monkeypatch.setattr(libc, "LIBC_DIR", Path("/elsewhere/cbuild/libc"))
    moved = tuple(libc.musl_flags("x86_64-linux-gnu"))
    assert "-ffile-prefix-map=/elsewhere/cbuild/libc=cbuild/libc" in moved
    assert libc._musl_key("toolchain", moved) == here
