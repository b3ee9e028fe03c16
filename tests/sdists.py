"""Third-party sources for tests: PyPI source distributions, downloaded once and unpacked.

Kept under ``~/.cache/instrbudget-tests/sdists`` (``INSTRBUDGET_SDIST_DIR`` overrides), so
a second test session reads them from disk. Offline, the tests that need them skip, except
under CI (``CI`` set), where a missing download fails: CI must not pass without them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import pytest

CACHE = Path(os.environ.get("INSTRBUDGET_SDIST_DIR", Path.home() / ".cache" / "instrbudget-tests" / "sdists"))


def sdist(name: str, version: str) -> Path:
    """The unpacked top directory of ``name==version``'s source distribution."""
    target = CACHE / f"{name}-{version}"
    if (target / ".complete").exists():
        return target / "src"
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-binary", ":all:", "--no-deps",
             "--dest", tmp, f"{name}=={version}"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        archives = sorted(Path(tmp).glob("*.tar.gz"))
        if proc.returncode != 0 or not archives:
            message = f"the {name} {version} sdist could not be downloaded: {proc.stderr.strip()[-300:]}"
            if os.environ.get("CI"):
                pytest.fail(message)
            pytest.skip(message)
        unpacked = Path(tmp) / "unpacked"
        with tarfile.open(archives[0]) as tar:
            if sys.version_info >= (3, 12):
                tar.extractall(unpacked, filter="data")
            else:
                tar.extractall(unpacked)
        (top,) = unpacked.iterdir()
        staged = Path(tmp) / "done"
        staged.mkdir()
        top.rename(staged / "src")
        (staged / ".complete").touch()
        try:
            staged.rename(target)
        except OSError:  # another worker finished first
            if not (target / ".complete").exists():
                shutil.rmtree(target, ignore_errors=True)
                staged.rename(target)
    return target / "src"
