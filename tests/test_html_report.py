"""HTML reports opened in a real browser: headless Chromium loads the file offline, runs its
scripts, and the page it builds is read back (``--dump-dom``) with every console message."""

from __future__ import annotations

import re
import shutil
import subprocess
from html import unescape
from pathlib import Path

import pytest

from cbuild.cli import main
from tests.test_history import Repo, ir, snap

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (.ci/run installs it)")
# The flags that keep Chromium off the network and quiet on a machine without one.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--enable-logging=stderr",
    "--v=0",
    "--virtual-time-budget=5000",
)

LIB = """\
__attribute__((noinline)) long parse(long n) { volatile long s = 0; for (long i = 0; i < n; i++) s += i; return s; }
__attribute__((noinline)) long check(long n) { volatile long s = 0; for (long i = 0; i < n; i++) s ^= i; return s; }
long run(long n) { return parse(n) + check(n); }
"""

TESTS = """\
import pytest

@pytest.fixture
def lib(cbuild):
    return cbuild.library("lib.c", opt_level="1")

@pytest.mark.budget(max_instr=12_000)
@pytest.mark.parametrize("n", [10, 100, 1000])
def test_run(lib, n):
    assert lib.run(n) >= 0

def test_check_only(lib):
    assert lib.check(50) >= 0
"""


def open_page(path: Path, tmp_path: Path, fragment: str = "") -> tuple[str, list[str]]:
    """The page's DOM after its scripts ran, and the console messages it printed."""
    assert CHROMIUM is not None
    url = path.resolve().as_uri() + fragment
    proc = subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'chromium-profile'}", "--dump-dom", url],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    console = [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]
    return proc.stdout, console


def test_results_report_in_chromium(pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytester.makefile(".c", lib=LIB)
    pytester.makepyfile(test_lib=TESTS)
    pytester.runpytest("-p", "no:cacheprovider", "--instrbudget-update").assert_outcomes(passed=4)
    # parse() does three times the work: the n=1000 test goes over its budget, the others regress.
    pytester.makefile(".c", lib=LIB.replace("s += i;", "{ s += i; s += 0; s -= 0; }"))
    result = pytester.runpytest("-p", "no:cacheprovider", "--instrbudget-html=report.html")
    result.assert_outcomes(passed=1, failed=3)
    report = pytester.path / "report.html"
    text = report.read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text)  # loads nothing from anywhere

    dom, console = open_page(report, tmp_path, "#test=" + "test_lib.py::test_run[1000]")
    assert console == []  # no errors, no warnings, nothing logged
    rows = re.findall(r'<tr data-nodeid="([^"]+)" data-status="([^"]+)"', dom)
    assert sorted(rows) == [
        ("test_lib.py::test_check_only", "ok"),
        ("test_lib.py::test_run[1000]", "over limit"),
        ("test_lib.py::test_run[100]", "regressed"),
        ("test_lib.py::test_run[10]", "regressed"),
    ]
    details = dom.split('<section id="details">', 1)[1]
    assert "<h2>test_lib.py::test_run[1000]" in details
    flame = details.split('<div id="flame">', 1)[1]
    frames = {unescape(t) for t in re.findall(r"<title>([^<]*)</title>", flame)}
    grown = [t for t in frames if t.startswith("parse: ")]
    assert len(grown) == 1
    assert re.fullmatch(r"parse: [\d,]+ \(own [\d,]+\), \+[\d,]+ against the baseline", grown[0])
    assert any(t.startswith("check: ") and "against the baseline" not in t for t in frames)  # unchanged
    assert details.count("<canvas") == 1  # one chart: ir_instructions against limit and baseline


def test_history_report_in_chromium(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo")
    repo.commit(ir(test_a=100, test_b=50), "first")
    repo.commit(ir(test_a=120, test_b=50), "slower a")
    repo.commit(ir(test_a=110, test_c=50), "rename b to c")
    other = {"clang": "23.0.0", "llvm": "23.0.0", "models": "ir-count version=1", "pipeline": "1"}
    repo.commit(snap({"tests/test_a.py::test_a": {"ir_instructions": 90}}, other), "new toolchain </script>")
    out = tmp_path / "history.html"
    assert main(["history", "--baseline", str(repo.root / "proj/.instrbudget/baseline.json"), "--html", str(out)]) == 0

    dom, console = open_page(out, tmp_path)
    assert console == []
    cards = re.findall(r'<figure class="history" data-test="([^"]+)"', dom)
    assert sorted(cards) == ["tests/test_a.py::test_a", "tests/test_a.py::test_c"]
    assert "renamed from tests/test_a.py::test_b in" in dom
    assert "models or toolchain changed: segments not joined" in dom
    assert 'data-drawn="1"' in dom  # the charts in view were drawn
    assert "new toolchain \\u003c/script>" in out.read_text()  # a subject cannot end the data's script
