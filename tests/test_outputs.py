"""Outputs go where the user points: through symlinks, to FIFOs, devices and /dev/stdout,
appended for the markdown summary (cbuild/report/outputs.py)."""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

import pytest

from cbuild.report.outputs import write_output

WORK_C = "int work(int n) { int s = 0; for (int i = 0; i < n; i++) s += i; return s; }\n"


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".c", work=WORK_C)
    pytester.makepyfile(test_budget="def test_work(cbuild):\n    assert cbuild.library('work.c').work(100) == 4950\n")
    pytester.makepyprojecttoml("[tool.instrbudget]\nopt_level = '1'\n")
    return pytester


def test_outputs_symlink_target_is_replaced_and_the_link_stays(tmp_path: Path) -> None:
    shared = tmp_path / "shared" / "baseline.json"
    shared.parent.mkdir()
    shared.write_text("old\n")
    shared.chmod(0o640)
    link = tmp_path / "project" / "baseline.json"
    link.parent.mkdir()
    link.symlink_to(Path("..") / "shared" / "baseline.json")
    write_output(link, b"new\n")
    assert link.is_symlink()
    assert shared.read_text() == "new\n"
    assert stat.S_IMODE(shared.stat().st_mode) == 0o640
    assert sorted(p.name for p in shared.parent.iterdir()) == ["baseline.json"]  # no temporary left


def test_outputs_fifo_gets_the_data(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    write_output(fifo, b"through the pipe\n")
    reader.join(timeout=10)
    assert got == [b"through the pipe\n"]
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_outputs_device_is_written_not_replaced() -> None:
    """As root, a rename over /dev/null would succeed; it must never happen."""
    before = os.stat("/dev/null")
    write_output(Path("/dev/null"), b"discarded\n")
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode)
    assert (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)


def test_outputs_streams_are_the_process_descriptors_fifos_and_devices(tmp_path: Path) -> None:
    """A regular file is replaced wherever it lies: one in /dev/shm had each new document appended
    after the old one, so that a baseline written there twice was no longer JSON."""
    from cbuild.report.outputs import is_stream

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (tmp_path / "to_fifo").symlink_to(fifo)
    (tmp_path / "to_stdout").symlink_to("/dev/stdout")
    regular = tmp_path / "file.json"
    regular.write_text("{}")
    for path in (
        "/dev/stdout",
        "/dev/stderr",
        "/dev/fd/1",
        "/proc/self/fd/1",
        "/dev/null",
        fifo,
        "to_fifo",
        "to_stdout",
    ):
        assert is_stream(tmp_path / path), path
    for path in (regular, tmp_path / "new.json", tmp_path / "new_dir" / "new.json"):
        assert not is_stream(path), path
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        target = shm / f"instrbudget-test-{os.getpid()}.json"
        try:
            assert not is_stream(target)
            for text in (b'{"first": 1}\n', b'{"second": 2}\n'):
                write_output(target, text)
            assert target.read_bytes() == b'{"second": 2}\n'
        finally:
            target.unlink(missing_ok=True)


def test_outputs_append_keeps_what_was_there(tmp_path: Path) -> None:
    summary = tmp_path / "step_summary.md"
    summary.write_text("# an earlier step\n")
    write_output(summary, b"## instrbudget\n", append=True)
    assert summary.read_text() == "# an earlier step\n## instrbudget\n"
    fresh = tmp_path / "new" / "summary.md"
    write_output(fresh, b"first\n", append=True)
    assert fresh.read_text() == "first\n"


def test_outputs_symlinked_baseline_is_updated_through_the_link(project: pytest.Pytester) -> None:
    shared = project.path / "shared" / "baseline.json"
    shared.parent.mkdir()
    link = project.path / ".instrbudget" / "baseline.json"
    link.parent.mkdir()
    link.symlink_to(shared)
    result = project.runpytest("-p", "no:cacheprovider", "--instrbudget-update")
    result.assert_outcomes(passed=1)
    assert link.is_symlink()
    assert "test_budget.py::test_work" in json.loads(shared.read_text())["tests"]


def test_outputs_json_to_dev_stdout_and_markdown_appended(project: pytest.Pytester) -> None:
    summary = project.path / "summary.md"
    summary.write_text("# earlier step\n")
    result = project.runpytest_subprocess(
        "-p", "no:cacheprovider", "--instrbudget-json=/dev/stdout", f"--instrbudget-markdown={summary}"
    )
    result.assert_outcomes(passed=1)
    out = result.stdout.str()
    start = out.index('{\n  "baseline"')
    doc, _ = json.JSONDecoder().raw_decode(out[start:])
    assert "test_budget.py::test_work" in doc["tests"]
    text = summary.read_text()
    assert text.startswith("# earlier step\n")
    assert "instrbudget" in text[len("# earlier step\n") :]


def test_outputs_directory_as_path_is_an_error_naming_it(project: pytest.Pytester) -> None:
    target = project.path / "a_directory"
    target.mkdir()
    result = project.runpytest("-p", "no:cacheprovider", f"--instrbudget-json={target}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([f"instrbudget: error: cannot write the JSON report {target}: *"])
    assert target.is_dir()


@pytest.mark.parametrize("option", ["json", "markdown", "html", "profile-dir"])
def test_outputs_an_empty_path_is_an_error_not_nothing_written(project: pytest.Pytester, option: str) -> None:
    # `--instrbudget-markdown=$GITHUB_STEP_SUMMARY` where the variable is unset wrote nothing, without a word.
    result = project.runpytest("-p", "no:cacheprovider", f"--instrbudget-{option}=")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*instrbudget: --instrbudget-{option}: expected a file path, got an empty one*"])


@pytest.mark.parametrize("option", ["json", "markdown", "html"])
def test_outputs_an_output_at_the_baseline_is_refused_and_the_baseline_kept(
    project: pytest.Pytester, option: str
) -> None:
    # --instrbudget-json=.instrbudget/baseline.json replaced the committed baseline in a green run.
    assert project.runpytest("-p", "no:cacheprovider", "--instrbudget-update").ret == pytest.ExitCode.OK
    baseline = project.path / ".instrbudget" / "baseline.json"
    before = baseline.read_bytes()
    for extra in ((), ("--instrbudget-update",)):
        result = project.runpytest(
            "-p", "no:cacheprovider", f"--instrbudget-{option}=.instrbudget/baseline.json", *extra
        )
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(
            [
                f"*instrbudget: --instrbudget-{option} and the baseline are the same file ({baseline}): it would "
                "replace the baseline; give each output a path of its own*"
            ]
        )
        assert baseline.read_bytes() == before


def test_outputs_expand_a_home_and_variables_in_their_paths(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``--instrbudget-json=~/out.json`` (quoted, so the shell left it) goes to the home directory,
    as pytest's ``--junitxml`` does, not to a directory named ``~``."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("REPORTS", str(tmp_path / "reports"))
    result = project.runpytest(
        "-p", "no:cacheprovider", "--instrbudget-json=~/out.json", "--instrbudget-html=$REPORTS/r.html"
    )
    result.assert_outcomes(passed=1)
    assert (tmp_path / "home" / "out.json").is_file()
    assert (tmp_path / "reports" / "r.html").is_file()
    assert not (project.path / "~").exists()
    # A variable that is not set (in addopts, which no shell expands) would name a file after itself.
    monkeypatch.delenv("REPORTS")
    unset = project.runpytest("-p", "no:cacheprovider", "--instrbudget-html=$REPORTS/r.html")
    assert unset.ret == pytest.ExitCode.USAGE_ERROR
    unset.stderr.fnmatch_lines(["*instrbudget: --instrbudget-html=$REPORTS/r.html: the variable REPORTS is not set"])
    # Where each went, as pytest says where --junitxml went.
    result.stdout.fnmatch_lines(
        [
            f"instrbudget: wrote the JSON report {tmp_path / 'home' / 'out.json'}",
            f"instrbudget: wrote the HTML report {tmp_path / 'reports' / 'r.html'}",
        ]
    )


def test_outputs_two_outputs_at_one_path_are_refused_but_stdout_takes_both(project: pytest.Pytester) -> None:
    result = project.runpytest("-p", "no:cacheprovider", "--instrbudget-json=out/r", "--instrbudget-html=out/../out/r")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*instrbudget: --instrbudget-html and --instrbudget-json are the same file (*): one would replace the other*"]
    )
    assert not (project.path / "out").exists()
    # pytest's --junitxml too: the last written replaced the other, without a word.
    result = project.runpytest("-p", "no:cacheprovider", "--instrbudget-json=j.xml", "--junitxml=./j.xml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*instrbudget: --junitxml and --instrbudget-json are the same file (*j.xml)*"])
    both = project.runpytest_subprocess(
        "-p", "no:cacheprovider", "--instrbudget-json=/dev/stdout", "--instrbudget-markdown=/dev/stdout"
    )
    both.assert_outcomes(passed=1)
    assert '"baseline"' in both.stdout.str()
    assert "# instrbudget" in both.stdout.str()
