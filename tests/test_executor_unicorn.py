"""The executor finds this environment's unicorn, whatever environment built it."""

from __future__ import annotations

import ctypes
import subprocess
import sys
from pathlib import Path

import pytest

from cbuild.build.toolchain import find_toolchain
from cbuild.riscv.executor import unicorn_paths

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="an ELF shared library's search path")

USES_UNICORN_C = """
#include <unicorn/unicorn.h>
unsigned instrbudget_unicorn_version(void) { return uc_version(NULL, NULL); }
"""


def test_a_cached_executor_whose_unicorn_is_gone_still_loads(tmp_path: Path) -> None:
    include, library = unicorn_paths()
    source = tmp_path / "uses_unicorn.c"
    source.write_text(USES_UNICORN_C)
    built = tmp_path / "uses_unicorn.so"
    # Linked as the executor is, with the search path of an environment that no longer exists.
    gone = tmp_path / "removed-venv" / "unicorn" / "lib"
    zig = find_toolchain()
    subprocess.run(
        [
            *zig.cc,
            "-shared",
            "-fPIC",
            f"-I{include}",
            str(source),
            str(library),
            f"-Wl,-rpath,{gone}",
            "-o",
            str(built),
        ],
        check=True,
        capture_output=True,
    )
    # A fresh process, where nothing has loaded libunicorn yet.
    plain = subprocess.run(
        [sys.executable, "-c", f"import ctypes; ctypes.CDLL({str(built)!r})"], capture_output=True, text=True
    )
    assert "libunicorn.so.2" in plain.stderr
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            f"from cbuild.riscv.executor import _cdll; print(_cdll({str(built)!r}).instrbudget_unicorn_version())",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert int(loaded.stdout) == ctypes.CDLL(str(library)).uc_version(None, None)
