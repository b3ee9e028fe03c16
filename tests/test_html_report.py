"""HTML reports opened in a real browser: headless Chromium loads the file offline, runs its
scripts, and the page it builds is read back (``--dump-dom``) with every console message."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html import unescape
from pathlib import Path
from typing import Any

import pytest

from cbuild.cli import main
from tests.test_history import Repo, ir, snap

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (.ci/run installs it)"),
    pytest.mark.slow,  # a browser per page
]
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

@pytest.mark.xfail(reason="run rejects negative sizes")
def test_expected_to_fail(lib):
    lib.check(5)
    assert lib.run(-1) > 0

@pytest.mark.skip(reason="needs the big input")
@pytest.mark.budget(max_instr=100)
def test_skipped(lib):
    lib.run(10)
"""


#: Measures the axis labels of every chart the page drew (tests/data/chart_labels.js).
LABEL_CHECK = Path(__file__).parent / "data" / "chart_labels.js"


def open_page(path: Path, tmp_path: Path, fragment: str = "", width: int = 1280) -> tuple[str, list[str]]:
    """The page's DOM after its scripts ran in a window ``width`` pixels wide, and the console
    messages it printed."""
    assert CHROMIUM is not None
    url = path.resolve().as_uri() + fragment
    proc = subprocess.run(
        [
            CHROMIUM,
            *FLAGS,
            f"--window-size={width},900",
            f"--user-data-dir={tmp_path / 'chromium-profile'}",
            "--dump-dom",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    console = [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]
    return proc.stdout, console


def chart_labels(path: Path, tmp_path: Path, fragment: str = "") -> dict[int, dict[str, Any]]:
    """Per window width (a phone's and a desktop's): how many charts and axis labels a copy of
    the page drew, the pairs of labels that overlap and the labels outside their canvas."""
    head, tail = path.read_text().rsplit("</body>", 1)
    checked = tmp_path / f"checked-{path.name}"
    checked.write_text(f"{head}<script>{LABEL_CHECK.read_text()}</script></body>{tail}")
    found = {}
    for width in (400, 1280):
        dom, console = open_page(checked, tmp_path, fragment, width)
        assert console == []
        *_, last = re.finditer(r'<pre id="label-check">([^<]*)</pre>', dom)  # the last: not the script's text
        found[width] = json.loads(unescape(last.group(1)))
    return found


def test_results_report_in_chromium(pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytester.makefile(".c", lib=LIB)
    pytester.makepyfile(test_lib=TESTS)
    pytester.runpytest("-p", "no:cacheprovider", "--instrbudget-update").assert_outcomes(passed=4, xfailed=1, skipped=1)
    # parse() does three times the work: the n=1000 test goes over its budget, the others regress.
    pytester.makefile(".c", lib=LIB.replace("s += i;", "{ s += i; s += 0; s -= 0; }"))
    result = pytester.runpytest("-p", "no:cacheprovider", "--instrbudget-html=report.html")
    result.assert_outcomes(passed=1, failed=3, xfailed=1, skipped=1)
    report = pytester.path / "report.html"
    text = report.read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text)  # loads nothing from anywhere

    dom, console = open_page(report, tmp_path, "#test=" + "test_lib.py::test_run[1000]")
    assert console == []  # no errors, no warnings, nothing logged
    rows = re.findall(r'<tr data-nodeid="([^"]+)" data-status="([^"]+)" data-outcome="([^"]*)"', dom)
    assert sorted(rows) == [
        ("test_lib.py::test_check_only", "ok", "passed"),
        ("test_lib.py::test_expected_to_fail", "xfailed (partial)", "xfailed"),
        ("test_lib.py::test_run[1000]", "over limit", "failed"),
        ("test_lib.py::test_run[100]", "regressed", "failed"),
        ("test_lib.py::test_run[10]", "regressed", "failed"),
        ("test_lib.py::test_skipped", "skipped", "skipped"),
    ]
    assert dom.count('data-failing="1"') == 3  # the xfailed test's partial counts fail nothing
    details = dom.split('<section id="details">', 1)[1]
    assert "<h2>test_lib.py::test_run[1000]" in details
    flame = details.split('<div id="flame">', 1)[1]
    frames = {unescape(t) for t in re.findall(r"<title>([^<]*)</title>", flame)}
    grown = [t for t in frames if t.startswith("parse: ")]
    assert len(grown) == 1
    assert re.fullmatch(r"parse: [\d,]+ \(own [\d,]+\), \+[\d,]+ against the baseline", grown[0])
    assert any(t.startswith("check: ") and "against the baseline" not in t for t in frames)  # unchanged
    assert details.count("<canvas") == 1  # one chart: ir_instructions against limit and baseline

    # Every measured test has its flame graph, the unchanged one too; one that measured nothing says why.
    dom, _ = open_page(report, tmp_path, "#test=" + "test_lib.py::test_check_only")
    flame = dom.split('<section id="details">', 1)[1].split('<div id="flame">', 1)[1]
    assert any(unescape(t).startswith("check: ") for t in re.findall(r"<title>([^<]*)</title>", flame))
    dom, _ = open_page(report, tmp_path, "#test=" + "test_lib.py::test_skipped")
    details = dom.split('<section id="details">', 1)[1]
    assert "pytest: skipped (needs the big input)" in details
    assert (
        "No flame graph: it measured nothing: no library or program of it ran (skipped: needs the big input)."
        in details
    )
    dom, _ = open_page(report, tmp_path, "#test=" + "test_lib.py::test_expected_to_fail")
    assert "pytest: xfailed (run rejects negative sizes)" in dom

    # Axis labels never overlap nor leave their canvas, in a narrow window and a wide one.
    for width, drawn in chart_labels(report, tmp_path, "#test=" + "test_lib.py::test_run[1000]").items():
        assert (drawn["charts"], drawn["overlaps"], drawn["outside"]) == (1, [], []), width
        assert drawn["labels"] >= 5, width


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


def test_chart_labels_never_overlap(tmp_path: Path) -> None:
    """History charts of many commits with values in the millions, at two window widths; the
    check itself finds the overlaps of labels drawn without skipping (it can fail)."""
    repo = Repo(tmp_path / "repo")
    for i in range(28):
        repo.commit(ir(test_a=12_000_000 + 37_000 * i, test_b=5_000_000 - 1_000 * i), f"commit {i}")
    out = tmp_path / "history.html"
    assert main(["history", "--baseline", str(repo.root / "proj/.instrbudget/baseline.json"), "--html", str(out)]) == 0
    for width, drawn in chart_labels(out, tmp_path).items():
        assert (drawn["charts"], drawn["overlaps"], drawn["outside"]) == (2, [], []), width
        assert drawn["labels"] >= 20, width

    crowded = tmp_path / "crowded.html"
    page = out.read_text()
    assert "autoSkip: true" in page
    crowded.write_text(page.replace("autoSkip: true", "autoSkip: false"))
    assert chart_labels(crowded, tmp_path)[400]["overlaps"]
