"""Outputs (cbuild/report/outputs.py) checked by a session without CAP_DAC_OVERRIDE.

tests/test_outputs.py runs as whoever runs the suite, usually root, and root writes through
file permissions: a read-only directory or file only refuses a user without CAP_DAC_OVERRIDE.
So these tests start small pytest sessions as such a user: "nobody" when the suite runs as
root, else the current user (already without it); each session's own test asserts it.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import re
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

#: Each test starts sessions as another user, on a build cache of their own.
pytestmark = pytest.mark.slow
NODEID = "test_budget.py::test_work"
WORK_C = "int work(int n) { int s = 0; for (int i = 0; i < n; i++) s += i; return s; }\n"
#: The session's test fails if the session could write through file permissions.
INNER_TEST = """\
import os


def _dac_override():
    try:
        with open("/proc/self/status") as status:
            caps = next(line for line in status if line.startswith("CapEff:"))
    except (OSError, StopIteration):
        return os.geteuid() == 0
    return bool(int(caps.split()[1], 16) & (1 << 1))


def test_work(cbuild):
    assert not _dac_override(), f"uid {os.geteuid()} has CAP_DAC_OVERRIDE"
    assert cbuild.library("work.c").work(100) == 4950
"""
#: What a session needs of the interpreter, run as its user: the packages, and starting
#: ``sys.executable`` again (the LLVM worker is started that way).
PROBE = """\
import os, subprocess, sys
from pathlib import Path
import cbuild, pytest, pytest_instrbudget, ziglang
zig = Path(ziglang.__file__).parent / "zig"
assert os.access(zig, os.X_OK), f"{zig} cannot be run"
subprocess.run([sys.executable, "-c", "import cbuild.build.llvm_worker"], check=True)
"""
CAP_DAC_OVERRIDE = 1


def _has_dac_override() -> bool:
    try:
        with open("/proc/self/status") as status:
            caps = next(line for line in status if line.startswith("CapEff:"))
    except (OSError, StopIteration):
        return os.geteuid() == 0
    return bool(int(caps.split()[1], 16) & (1 << CAP_DAC_OVERRIDE))


@dataclass(frozen=True)
class Space:
    """A project written for the session's user, and how sessions are started in it."""

    root: Path
    project: Path
    python: str
    uid: int
    gid: int
    switch: bool  # start sessions as uid/gid (the suite runs as root), else as the current user
    env: dict[str, str]

    @property
    def how(self) -> str:
        who = f"uid {self.uid}, gid {self.gid}"
        return f"as {who} via subprocess user=" if self.switch else f"as the current user ({who})"

    def own(self, *paths: Path) -> None:
        """Give ``paths`` to the session's user (as the current user they are its already)."""
        for path in paths:
            if self.switch:
                os.lchown(path, self.uid, self.gid)

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        """A pytest session in the project, with ``args``."""
        return self.start([self.python, "-m", "pytest", "-p", "no:cacheprovider", *args])

    def start(self, cmd: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            cmd,
            cwd=self.project,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
            user=self.uid if self.switch else None,
            group=self.gid if self.switch else None,
            extra_groups=[] if self.switch else None,
        )


def _overlay_python(root: Path) -> str | None:
    """A venv of a system Python of this version that reads this venv's packages, for a user
    who cannot reach this interpreter's own installation (e.g. a pyenv under /root)."""
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    mine = os.path.realpath(sys.executable)
    for base in (f"/usr/bin/python{version}", f"/usr/local/bin/python{version}"):
        if not os.path.isfile(base) or os.path.realpath(base) == mine:
            continue
        venv = root / "overlay-venv"
        made = subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], capture_output=True, check=False)
        site = venv / "lib" / f"python{version}" / "site-packages"
        if made.returncode != 0 or not site.is_dir():
            continue
        outer = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
        (site / "_outer_venv.pth").write_text("import site; " + "; ".join(f"site.addsitedir({d!r})" for d in outer))
        return str(venv / "bin" / "python")
    return None


def _cannot_run(space: Space, python: str) -> str:
    """Why ``python`` cannot run a session as the session's user ("" if it can)."""
    try:
        probe = space.start([python, "-c", PROBE])
    except OSError as exc:
        return str(exc)
    return "" if probe.returncode == 0 else probe.stderr.strip()


@pytest.fixture(scope="module")
def space() -> Iterator[Space]:
    switch = os.geteuid() == 0
    if not switch and _has_dac_override():
        pytest.skip(f"uid {os.geteuid()} has CAP_DAC_OVERRIDE and is not root, so cannot start a session without it")
    uid, gid = os.getuid(), os.getgid()
    if switch:
        try:
            uid, gid = pwd.getpwnam("nobody").pw_uid, pwd.getpwnam("nobody").pw_gid
        except KeyError:
            uid, gid = 65534, 65534
    root = Path(tempfile.mkdtemp(prefix="instrbudget-unprivileged-"))
    try:
        home, project = root / "home", root / "project"
        home.mkdir()
        project.mkdir()
        (project / "work.c").write_text(WORK_C)
        (project / "test_budget.py").write_text(INNER_TEST)
        (project / "pyproject.toml").write_text("[tool.instrbudget]\nopt_level = '1'\n")
        root.chmod(0o755)
        env = {
            "PATH": os.environ.get("PATH", os.defpath),
            "HOME": str(home),
            "INSTRBUDGET_CACHE_DIR": str(home / "instrbudget-cache"),
            "ZIG_GLOBAL_CACHE_DIR": str(home / "zig-cache"),
            "PYTHONDONTWRITEBYTECODE": "1",
            "LC_ALL": "C.UTF-8",
        }
        made = Space(root, project, sys.executable, uid, gid, switch, env)
        made.own(root, home, project, *project.iterdir())
        why = _cannot_run(made, sys.executable)
        if why and switch:
            overlay = _overlay_python(root)
            again = _cannot_run(made, overlay) if overlay else "no system Python of this version to fall back on"
            if again:
                pytest.skip(f"{made.how}, {sys.executable} cannot run a session: {why}; nor a fallback: {again}")
            made = Space(root, project, overlay or "", uid, gid, switch, env)
        elif why:
            pytest.skip(f"{made.how}, {sys.executable} cannot run a session: {why}")
        yield made
    finally:
        for path in root.rglob("*"):  # read-only directories left by a test, for rmtree as a non-root user
            if path.is_dir() and not path.is_symlink():
                with contextlib.suppress(OSError):
                    path.chmod(0o755)
        shutil.rmtree(root, ignore_errors=True)


def _passed(result: subprocess.CompletedProcess[str], space: Space) -> str:
    """The session's output; its one test passed (it ran without CAP_DAC_OVERRIDE)."""
    out = result.stdout
    assert re.search(r"=+ 1 passed in ", out), f"{space.how}:\n{out}\n{result.stderr}"
    return out


def _error(what: str, path: Path) -> str:
    return f"instrbudget: error: cannot write {what} {path}: Permission denied"


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_unprivileged_symlinked_baseline_fifo_and_appended_markdown(space: Space) -> None:
    """(a) the baseline is replaced through its symlink, (b) the JSON goes to a FIFO's
    reader, (d) the markdown summary is appended: one session, which also builds the cache."""
    shared = space.root / "shared"
    shared.mkdir()
    target = shared / "baseline.json"
    target.write_text('{"fingerprint": {}, "tests": {}, "version": 1}\n')
    target.chmod(0o640)
    link = space.project / ".instrbudget" / "baseline.json"
    link.parent.mkdir()
    link.symlink_to(Path("..") / ".." / "shared" / "baseline.json")
    fifo = space.root / "report.fifo"
    os.mkfifo(fifo, 0o600)
    summary = space.root / "summary.md"
    summary.write_text("# an earlier step\n")
    space.own(shared, target, link.parent, link, fifo, summary)

    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    result = space.run("--instrbudget-update", f"--instrbudget-json={fifo}", f"--instrbudget-markdown={summary}")
    reader.join(timeout=30)
    if reader.is_alive():  # nothing opened the FIFO for writing: let the reader see end of file
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        reader.join(timeout=10)
    out = _passed(result, space)
    assert result.returncode == 0, out

    assert link.is_symlink()
    assert os.readlink(link) == str(Path("..") / ".." / "shared" / "baseline.json")
    assert NODEID in json.loads(target.read_text())["tests"]
    assert (_mode(target), target.stat().st_uid) == (0o640, space.uid)
    # Written next to the target (in its directory), with no temporary left there or by the link.
    assert sorted(p.name for p in shared.iterdir()) == ["baseline.json"]
    assert sorted(p.name for p in link.parent.iterdir()) == ["baseline.json"]

    assert b"".join(got), "the FIFO's reader got nothing"
    assert NODEID in json.loads(got[0])["tests"]
    assert stat.S_ISFIFO(fifo.lstat().st_mode)

    text = summary.read_text()
    assert text.startswith("# an earlier step\n## instrbudget\n"), text
    assert f"`{NODEID}`" in text


def test_unprivileged_json_to_dev_stdout(space: Space) -> None:
    """(c) ``--instrbudget-json=/dev/stdout`` puts the document in the session's output."""
    result = space.run("--instrbudget-json=/dev/stdout")
    out = _passed(result, space)
    assert result.returncode == 0, out
    doc, _ = json.JSONDecoder().raw_decode(out[out.index('{\n  "baseline"') :])
    assert NODEID in doc["tests"]


def _update_into(space: Space, baseline: Path, report: Path, summary: Path) -> subprocess.CompletedProcess[str]:
    """A session that updates ``baseline`` and writes the JSON ``report`` and the markdown ``summary``."""
    return space.run(
        "--instrbudget-update",
        f"--instrbudget-baseline={baseline}",
        f"--instrbudget-json={report}",
        f"--instrbudget-markdown={summary}",
    )


def test_unprivileged_unwritable_directory_is_an_error_naming_each_path(space: Space) -> None:
    """(e) Baseline, JSON and markdown in a directory the user cannot write: each is an error
    naming the path (the baseline is not silently left unwritten), the test keeps its outcome,
    the table is printed and the exit status is TESTS_FAILED (docs/baselines.md)."""
    locked = space.root / "read-only-dir"
    locked.mkdir()
    locked.chmod(0o555)  # owned by root when the session runs as nobody
    baseline, report, summary = locked / "baseline.json", locked / "report.json", locked / "summary.md"
    result = _update_into(space, baseline, report, summary)
    out = _passed(result, space)
    assert result.returncode == pytest.ExitCode.TESTS_FAILED, out
    lines = out.splitlines()
    for what, path in (("the baseline", baseline), ("the JSON report", report), ("the markdown summary", summary)):
        assert _error(what, path) in lines, out
    assert any(line.startswith(NODEID) for line in lines), out  # the table
    assert "written:" not in out
    assert list(locked.iterdir()) == []


def test_unprivileged_read_only_files(space: Space) -> None:
    """(f) Files the user may not write (0444; root's when the session runs as nobody) in a
    directory it may write: the appended markdown summary is refused, naming it, and left as
    it was. The baseline and the JSON report are replaced (a rename needs only the
    directory), keeping their mode, as docs/baselines.md says of a read-only baseline."""
    files = space.root / "read-only-files"
    files.mkdir()
    space.own(files)
    baseline, report, summary = files / "baseline.json", files / "report.json", files / "summary.md"
    first = space.run("--instrbudget-update", f"--instrbudget-baseline={baseline}")
    _passed(first, space)
    stale = json.loads(baseline.read_text())
    total = stale["tests"][NODEID]["ir_instructions"]["total"]
    stale["tests"][NODEID]["ir_instructions"] = {"functions": {"work": total + 1000}, "total": total + 1000}
    os.unlink(baseline)  # now the current user's (root's when the session runs as nobody)
    baseline.write_text(json.dumps(stale, indent=2, sort_keys=True) + "\n")
    report.write_text("stale report\n")
    summary.write_text("# an earlier step\n")
    before = (summary.read_bytes(), summary.stat().st_uid)
    for path in (baseline, report, summary):
        path.chmod(0o444)

    result = _update_into(space, baseline, report, summary)
    out = _passed(result, space)
    assert result.returncode == pytest.ExitCode.TESTS_FAILED, out
    lines = out.splitlines()
    assert _error("the markdown summary", summary) in lines, out
    assert (summary.read_bytes(), summary.stat().st_uid, _mode(summary)) == (*before, 0o444)

    assert f"instrbudget: baseline {baseline} written: 0 added, 1 changed, 0 pruned" in lines, out
    assert json.loads(baseline.read_text())["tests"][NODEID]["ir_instructions"]["total"] == total
    assert NODEID in json.loads(report.read_text())["tests"]
    assert (_mode(baseline), _mode(report)) == (0o444, 0o444)
    assert (baseline.stat().st_uid, report.stat().st_uid) == (space.uid, space.uid)  # new files, the user's
    assert not any("cannot write the baseline" in line or "cannot write the JSON" in line for line in lines), out
    assert sorted(p.name for p in files.iterdir()) == ["baseline.json", "report.json", "summary.md"]
