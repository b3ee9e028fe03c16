"""``python -m cbuild history``: the baseline's series read from a real git repository."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cbuild.cli import main
from cbuild.errors import CBuildError
from cbuild.models.costs import Cost
from cbuild.report.history import History, keyword_matcher, read_history, render_text
from cbuild.report.snapshot import Snapshot
from cbuild.report.sparkline import bar, sparkline

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

BASELINE = "proj/.instrbudget/baseline.json"
FP = {"clang": "22.1.8", "llvm": "22.1.0", "models": "ir-count version=1", "pipeline": "1"}
ROOT = Path(__file__).resolve().parents[1]


class Repo:
    """A git repository in a temporary directory whose commits get one day each."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.day = 0
        root.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")

    def env(self) -> dict[str, str]:
        date = f"2024-03-{self.day + 1:02d}T12:00:00+00:00"
        return dict(
            os.environ,
            GIT_AUTHOR_NAME="Ada",
            GIT_AUTHOR_EMAIL="ada@example.org",
            GIT_COMMITTER_NAME="Ada",
            GIT_COMMITTER_EMAIL="ada@example.org",
            GIT_AUTHOR_DATE=date,
            GIT_COMMITTER_DATE=date,
            GIT_CONFIG_NOSYSTEM="1",
            GIT_CONFIG_GLOBAL=os.devnull,
        )

    def git(self, *args: str) -> str:
        proc = subprocess.run(["git", *args], cwd=self.root, env=self.env(), capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip()

    def commit(self, content: str | Snapshot, subject: str, path: str = BASELINE) -> str:
        """Write ``content`` to ``path``, commit it; the short hash."""
        file = self.root / path
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(content if isinstance(content, str) else content.dumps())
        self.git("add", "-A")
        self.git("commit", "-q", "-m", subject)
        self.day += 1
        return self.git("rev-parse", "--short", "HEAD")


def snap(tests: dict[str, dict[str, int]], fingerprint: dict[str, str] | None = None) -> Snapshot:
    return Snapshot(
        dict(FP if fingerprint is None else fingerprint),
        {t: {m: Cost(m, v, {"f": v}) for m, v in metrics.items()} for t, metrics in tests.items()},
    )


def ir(**tests: int) -> Snapshot:
    """One ir_instructions value per test; keyword names stand for ``tests/test_a.py::<name>``."""
    return snap({f"tests/test_a.py::{name}": {"ir_instructions": v} for name, v in tests.items()})


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["history", *args]) == 0
    return capsys.readouterr().out


def by_test(history: History) -> dict[tuple[str, str], list[int]]:
    return {(s.test, s.metric): [p.value for p in s.points] for s in history.series}


def test_values_over_commits_oldest_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = Repo(tmp_path / "r")
    values = [100, 110, 105, 130, 160]
    shorts = [repo.commit(ir(test_x=v, test_flat=7), f"step {i}") for i, v in enumerate(values)]
    history = read_history(repo.root / BASELINE)
    assert [v.commit.short for v in history.versions] == shorts
    assert [v.commit.subject for v in history.versions] == [f"step {i}" for i in range(5)]
    assert history.versions[0].commit.date == "2024-03-01T12:00:00+00:00"
    assert len(history.versions[0].commit.hash) == 40
    assert not history.shallow
    assert history.commits_seen == 5
    assert by_test(history) == {
        ("tests/test_a.py::test_flat", "ir_instructions"): [7] * 5,
        ("tests/test_a.py::test_x", "ir_instructions"): values,
    }
    x = history.series[1]
    assert [p.commit for p in x.points] == shorts
    assert x.current
    assert not x.renamed_from
    assert x.removed_in is None

    out = run_cli(capsys, "--baseline", str(repo.root / BASELINE), "--width", "200")
    lines = out.splitlines()
    assert lines[0].split() == ["test", "metric", "history", "first", "last", "change", "n"]
    assert lines[1].split() == ["tests/test_a.py::test_x", "ir_instructions", "▁▂▂▅█", "100", "160", "+60.00%", "5"]
    assert lines[2] == "1 unchanged series not listed (--all lists them)"
    assert f"5 commits changed {repo.root / BASELINE} ({shorts[0]} 2024-03-01 .. {shorts[-1]} 2024-03-05)" in out
    assert "shallow" not in out
    assert "could not be read" not in out
    assert out == run_cli(capsys, "--baseline", str(repo.root / BASELINE), "--width", "200")  # deterministic
    every = run_cli(capsys, "--baseline", str(repo.root / BASELINE), "--width", "200", "--all").splitlines()
    assert every[1].split() == lines[1].split()  # changed series first
    assert every[2].split() == ["tests/test_a.py::test_flat", "ir_instructions", "▁▁▁▁▁", "7", "7", "0.00%", "5"]
    assert "not listed" not in "\n".join(every)


def test_to_json_shape(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "r")
    first = repo.commit(ir(test_x=1), "one")
    second = repo.commit(ir(test_x=2), "two")
    doc = read_history(repo.root / BASELINE).to_json()
    assert json.loads(json.dumps(doc)) == doc
    assert doc["baseline"] == str(repo.root / BASELINE)
    assert doc["path"] == BASELINE
    assert (doc["shallow"], doc["commits_seen"], doc["unreadable"], doc["fingerprint_changes"]) == (False, 2, [], [])
    assert [c["short"] for c in doc["commits"]] == [first, second]
    assert set(doc["commits"][0]) == {"hash", "short", "date", "subject", "fingerprint"}
    assert doc["commits"][0]["fingerprint"] == FP
    assert doc["series"] == [
        {
            "test": "tests/test_a.py::test_x",
            "metric": "ir_instructions",
            "current": True,
            "segments": [
                {
                    "fingerprint": FP,
                    "changed": [],
                    "points": [{"commit": first, "value": 1}, {"commit": second, "value": 2}],
                }
            ],
            "renamed_from": [],
            "removed_in": None,
            "absent": [],
        }
    ]


def test_renamed_tests_continue_their_series(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = Repo(tmp_path / "r")
    old_x, old_parse = "tests/test_a.py::test_x", "tests/old/test_m.py::test_parse"
    new_x, new_parse = "tests/test_b.py::test_y", "tests/new/test_m.py::test_parse"
    repo.commit(snap({old_x: {"ir_instructions": 50, "cycles": 9}, old_parse: {"ir_instructions": 10}}), "one")
    repo.commit(snap({old_x: {"ir_instructions": 50, "cycles": 9}, old_parse: {"ir_instructions": 11}}), "two")
    # Same commit: test_x -> test_y with identical totals; test_parse moved file and changed its cost.
    moved = repo.commit(snap({new_x: {"ir_instructions": 50, "cycles": 9}, new_parse: {"ir_instructions": 12}}), "mv")
    repo.commit(snap({new_x: {"ir_instructions": 55, "cycles": 9}, new_parse: {"ir_instructions": 12}}), "four")
    history = read_history(repo.root / BASELINE)
    assert by_test(history) == {
        (new_parse, "ir_instructions"): [10, 11, 12, 12],
        (new_x, "cycles"): [9, 9, 9, 9],
        (new_x, "ir_instructions"): [50, 50, 50, 55],
    }
    for series in history.series:
        assert series.current
        old = old_parse if series.test == new_parse else old_x
        assert [(r.old, r.commit) for r in series.renamed_from] == [(old, moved)]
    doc = history.to_json()
    assert doc["series"][0]["renamed_from"] == [{"test": old_parse, "commit": moved}]

    out = run_cli(capsys, "--baseline", str(repo.root / BASELINE), "--width", "200")
    assert f"renamed from {old_x} in {moved}" in out
    assert f"renamed from {old_parse} in {moved}" in out
    # -k also finds a series by a name it had before.
    assert len(run_cli(capsys, "--baseline", str(repo.root / BASELINE), "-k", "test_a.py").splitlines()) >= 3


def test_ambiguous_disappearance_is_not_a_rename(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "r")
    repo.commit(ir(test_p=5, test_q=5), "one")
    gone = repo.commit(ir(test_r=5, test_s=5), "two")  # two candidates each way: no rename
    history = read_history(repo.root / BASELINE)
    assert [(s.test.split("::")[1], s.removed_in, [r.old for r in s.renamed_from]) for s in history.series] == [
        ("test_p", gone, []),
        ("test_q", gone, []),
        ("test_r", None, []),
        ("test_s", None, []),
    ]


def test_removed_test_ends_its_series(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = Repo(tmp_path / "r")
    repo.commit(ir(test_keep=1, test_gone=40), "one")
    repo.commit(ir(test_keep=2, test_gone=80), "two")
    removed = repo.commit(ir(test_keep=3), "three")
    repo.commit(ir(test_keep=4), "four")
    history = read_history(repo.root / BASELINE)
    gone, keep = history.series
    assert (gone.test, [p.value for p in gone.points], gone.removed_in, gone.current) == (
        "tests/test_a.py::test_gone",
        [40, 80],
        removed,
        False,
    )
    assert (keep.removed_in, keep.current) == (None, True)
    assert history.to_json()["series"][0]["removed_in"] == removed

    lines = run_cli(capsys, "--baseline", str(repo.root / BASELINE), "--width", "200").splitlines()
    assert lines[1].startswith("tests/test_a.py::test_gone  ir_instructions  ▁█     ")  # blank after its removal
    assert lines[1].endswith(f"removed in {removed}")
    assert lines[2].split()[2] == "▁▃▆█"


def test_a_test_removed_and_added_again_continues_its_series(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A test deleted and later added back under its name: one series, current, with its gap and
    the jump across it, where it read "removed" (its stale value the change) and the live series
    was hidden as unchanged."""
    repo = Repo(tmp_path / "r")
    repo.commit(ir(test_keep=1, test_back=651), "one")
    removed = repo.commit(ir(test_keep=1), "two")
    back = repo.commit(ir(test_keep=1, test_back=783), "three")
    repo.commit(ir(test_keep=2, test_back=783), "four")
    history = read_history(repo.root / BASELINE)
    series = {s.test.split("::")[1]: s for s in history.series}
    again = series["test_back"]
    assert ([p.value for p in again.points], again.current, again.absent) == ([651, 783, 783], True, [(removed, back)])
    assert history.to_json()["series"][0]["absent"] == [{"removed_in": removed, "back_in": back}]
    lines = run_cli(capsys, "--baseline", str(repo.root / BASELINE), "--width", "200").splitlines()
    assert lines[1].startswith("tests/test_a.py::test_back  ir_instructions  ▁ ██  ")
    assert lines[1].endswith(f"651   783   +20.28%  3  removed in {removed}, back in {back}")


def test_model_change_splits_series(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = Repo(tmp_path / "r")
    repo.commit(ir(test_x=100), "one")
    repo.commit(ir(test_x=120), "two")
    newer = {**FP, "models": "ir-count version=2"}
    changed = repo.commit(snap({"tests/test_a.py::test_x": {"ir_instructions": 300}}, newer), "model v2")
    repo.commit(snap({"tests/test_a.py::test_x": {"ir_instructions": 310}}, newer), "four")
    history = read_history(repo.root / BASELINE)
    (series,) = history.series
    assert [[p.value for p in s.points] for s in series.segments] == [[100, 120], [300, 310]]
    assert [s.fingerprint["models"] for s in series.segments] == ["ir-count version=1", "ir-count version=2"]
    assert [s.changed for s in series.segments] == [(), ("models",)]
    assert [(c.commit.short, c.keys) for c in history.fingerprint_changes] == [(changed, ("models",))]
    doc = history.to_json()
    assert doc["fingerprint_changes"] == [{"commit": changed, "keys": ["models"]}]
    assert [len(s["points"]) for s in doc["series"][0]["segments"]] == [2, 2]
    assert doc["series"][0]["segments"][1]["changed"] == ["models"]

    out = run_cli(capsys, "--baseline", str(repo.root / BASELINE), "--width", "200")
    row = out.splitlines()[1].split()
    assert row[2] == "▁▂┊██"  # scaled over the row; never joined across the change
    assert row[3:7] == ["100", "310", "┊+210.00%", "4"]
    assert out.splitlines()[1].endswith(f"model change {changed}")
    assert f"┊ model changes (fingerprint keys that differ; a ┊-marked change spans one): {changed} (models)" in out


def test_unreadable_versions_are_skipped_and_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = Repo(tmp_path / "r")
    good = [repo.commit(ir(test_x=1), "one")]
    broken = repo.commit('{"version": 1, "tests": {', "half a file")
    good.append(repo.commit(ir(test_x=2), "three"))
    other = repo.commit('{"version": 7, "fingerprint": {}, "tests": {}}\n', "future format")
    good.append(repo.commit(ir(test_x=3), "five"))
    history = read_history(repo.root / BASELINE)
    assert [v.commit.short for v in history.versions] == good
    assert by_test(history) == {("tests/test_a.py::test_x", "ir_instructions"): [1, 2, 3]}
    assert history.commits_seen == 5
    assert [(u.commit.short, u.commit.subject) for u in history.unreadable] == [
        (broken, "half a file"),
        (other, "future format"),
    ]
    assert history.unreadable[0].reason.startswith("is not valid JSON (line 1, column 26")
    assert history.unreadable[1].reason == "does not have the expected layout (version 7, expected 1)"
    assert [u["short"] for u in history.to_json()["unreadable"]] == [broken, other]

    out = run_cli(capsys, "--baseline", str(repo.root / BASELINE), "--width", "300")
    assert out.splitlines()[1].split()[2] == "▁▅█"
    assert f"2 versions could not be read: {broken}: is not valid JSON (line 1, column 26" in out
    assert f"; {other}: does not have the expected layout (version 7, expected 1)" in out


def test_shallow_clone_says_how_much_it_saw(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = Repo(tmp_path / "r")
    shorts = [repo.commit(ir(test_x=v), f"c{v}") for v in (1, 2, 3, 4)]
    clone = tmp_path / "clone"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "2", f"file://{repo.root}", str(clone)],
        check=True,
        capture_output=True,
        env=repo.env(),
    )
    history = read_history(clone / BASELINE)
    assert history.shallow
    assert history.commits_seen == 2
    assert [v.commit.short for v in history.versions] == shorts[2:]
    assert history.to_json()["shallow"] is True
    out = run_cli(capsys, "--baseline", str(clone / BASELINE), "--width", "200")
    assert "shallow clone: 2 commits of the baseline's history seen; `git fetch --unshallow` for all" in out


def test_baseline_file_renamed_is_followed(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "r")
    repo.commit(ir(test_x=1), "one", path="old/baseline.json")
    repo.commit(ir(test_x=2), "two", path="old/baseline.json")
    (repo.root / "proj" / ".instrbudget").mkdir(parents=True)
    repo.git("mv", "old/baseline.json", BASELINE)
    repo.git("commit", "-q", "-m", "move")
    repo.commit(ir(test_x=3), "three")
    history = read_history(repo.root / BASELINE)
    assert by_test(history) == {("tests/test_a.py::test_x", "ir_instructions"): [1, 2, 2, 3]}
    assert [v.commit.subject for v in history.versions] == ["one", "two", "move", "three"]


def test_merged_branch_shows_as_its_merge(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "r")
    repo.commit(ir(test_x=1), "one")
    repo.git("checkout", "-q", "-b", "side")
    repo.commit(ir(test_x=2), "side a")
    repo.commit(ir(test_x=3), "side b")
    repo.git("checkout", "-q", "main")
    repo.commit("unrelated\n", "main work", path="README")
    repo.git("merge", "-q", "--no-ff", "-m", "merge side", "side")
    repo.commit(ir(test_x=4), "four")
    history = read_history(repo.root / BASELINE)
    assert [v.commit.subject for v in history.versions] == ["one", "merge side", "four"]
    assert by_test(history) == {("tests/test_a.py::test_x", "ir_instructions"): [1, 3, 4]}


def test_not_a_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    path = tmp_path / "plain" / "baseline.json"
    path.parent.mkdir()
    path.write_text(ir(test_x=1).dumps())
    with pytest.raises(CBuildError, match=f"{path} is not in a git repository"):
        read_history(path)
    assert main(["history", "--baseline", str(path)]) == 2
    assert f"cbuild: {path} is not in a git repository" in capsys.readouterr().err


def test_never_committed(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "r")
    repo.commit("other\n", "unrelated", path="README")
    path = repo.root / "proj" / "baseline.json"
    path.parent.mkdir()
    path.write_text(ir(test_x=1).dumps())
    with pytest.raises(CBuildError, match=f"{path} has no history in git: the file was never committed$"):
        read_history(path)
    missing = repo.root / "nowhere" / "baseline.json"  # not even its directory exists
    with pytest.raises(CBuildError, match=r"never committed \(and there is no such file\)"):
        read_history(missing)
    with pytest.raises(CBuildError, match=r"never committed \(and there is no such file\)"):
        read_history(path.with_name("nosuch.json"))


def test_git_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(CBuildError, match=f"git is not installed; it is needed to read the history of {BASELINE}"):
        read_history(BASELINE)


def test_keyword_selection(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = Repo(tmp_path / "r")
    tests = {
        "tests/test_parse.py::test_parse_small": {"ir_instructions": 1, "cycles": 2},
        "tests/test_parse.py::test_parse_large": {"ir_instructions": 3, "cycles": 4},
        "tests/test_sort.py::test_sort": {"ir_instructions": 5, "cycles": 6},
    }
    repo.commit(snap(tests), "one")
    base = ("--baseline", str(repo.root / BASELINE), "--width", "200", "--all")

    def rows(*args: str) -> list[tuple[str, str]]:
        lines = run_cli(capsys, *base, *args).split("\n\n")[0].splitlines()[1:]
        return [(line.split()[0].split("::")[1], line.split()[1]) for line in lines]

    assert rows("-k", "PARSE_S") == [("test_parse_small", "cycles"), ("test_parse_small", "ir_instructions")]
    assert rows("-k", "parse and not small", "--metric", "cycles") == [("test_parse_large", "cycles")]
    assert rows("-k", "(small or sort) and not test_parse.py", "--metric", "cycles") == [("test_sort", "cycles")]
    assert rows("--metric", "ir_instructions") == [
        ("test_parse_large", "ir_instructions"),
        ("test_parse_small", "ir_instructions"),
        ("test_sort", "ir_instructions"),
    ]
    # Nothing matched: said, and the exit status says so too (a typo must not pass a CI step).
    assert main(["history", *base, "-k", "nothing", "--metric", "zk_cycles"]) == 2
    out = capsys.readouterr().out
    assert out.startswith(
        "no test matches -k 'nothing' and --metric zk_cycles (metrics in the history: cycles, ir_instructions)\n"
    )
    assert main(["history", *base, "-k", "nothing"]) == 2
    assert main(["history", *base, "--metric", "nosuch"]) == 2
    capsys.readouterr()
    for width in ("0", "-10", "19"):
        with pytest.raises(SystemExit):
            main(["history", *base, "--width", width])
        assert "columns is too narrow: give 20 or more" in capsys.readouterr().err
    assert main(["history", *base, "-k", "parse and"]) == 2
    assert "cbuild: -k 'parse and': expected a name at the end" in capsys.readouterr().err


def test_keyword_matcher() -> None:
    names = ["tests/test_a.py::test_Fast", "tests/old.py::test_slow"]
    assert keyword_matcher("")(names)
    assert keyword_matcher("fast")(names)
    assert keyword_matcher("OLD.PY and not medium")(names)
    assert not keyword_matcher("not slow")(names)
    assert keyword_matcher("not (medium or large)")(names)
    for bad, why in (("(fast", "a '(' is not closed"), ("fast)", "unexpected ')'"), ("or fast", "unexpected 'or'")):
        with pytest.raises(CBuildError, match=re.escape(f"-k {bad!r}: {why}")):
            keyword_matcher(bad)


def test_narrow_terminal_keeps_names_whole(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = Repo(tmp_path / "r")
    long = "tests/integration/test_word_frequencies.py::test_counts_every_word_of_a_large_input[utf8-crlf]"
    for v in (1000, 2000, 1500, 1200, 1100):
        repo.commit(snap({long: {"ir_instructions": v, "zk_paging_cycles": v * 3}}), f"v{v}")
    base = ("--baseline", str(repo.root / BASELINE))
    wide = run_cli(capsys, *base, "--width", "200").splitlines()
    assert wide[1].startswith(long + "  ir_instructions")
    out = run_cli(capsys, *base, "--width", "60")
    lines = out.splitlines()
    assert lines[1] == long  # whole, on a line of its own
    assert lines[2].split() == ["ir_instructions", "▁█▅▂▂", "1,000", "1,100", "+10.00%", "5"]
    assert lines[3].split() == ["zk_paging_cycles", "▁█▅▂▂", "3,000", "3,300", "+10.00%", "5"]  # named once
    assert all(len(line) <= 60 for line in lines if long not in line)
    assert all("\t" not in line for line in lines)
    tiny = run_cli(capsys, *base, "--width", "30")
    assert long in tiny.splitlines()
    assert "zk_paging_cycles" in tiny


def test_default_baseline_from_pyproject(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = Repo(tmp_path / "r")
    (repo.root / "pyproject.toml").write_text('[tool.instrbudget]\nbaseline = "budgets/base.json"\n')
    repo.commit(ir(test_x=1), "one", path="budgets/base.json")
    (repo.root / "src").mkdir()
    monkeypatch.chdir(repo.root / "src")
    out = run_cli(capsys, "--width", "200", "--all")
    assert "tests/test_a.py::test_x" in out
    assert "1 commit changed ../budgets/base.json" in out


def test_default_baseline_under_the_home_directory_as_the_plugin_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cbuild.report.history import default_baseline

    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "pyproject.toml").write_text('[tool.instrbudget]\nbaseline = "~/perf/b.json"\n')
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_baseline(tmp_path / "p") == tmp_path / "home" / "perf" / "b.json"


def test_command_line_exit_status(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "r")
    repo.commit(ir(test_x=1), "one")
    ok = subprocess.run(
        [sys.executable, "-m", "cbuild", "history", "--baseline", BASELINE, "--width", "100", "--all"],
        cwd=repo.root,
        capture_output=True,
        text=True,
        check=False,
    )
    assert ok.returncode == 0, ok.stderr
    assert "tests/test_a.py::test_x" in ok.stdout


def test_sparkline() -> None:
    assert bar(5, 5, 5) == "▁"
    assert sparkline([0, 7, None, "┊", 14]) == "▁▅ ┊█"


def test_change_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = Repo(tmp_path / "r")
    repo.commit(ir(test_a=1_000_000, test_b=0, test_c=0, test_d=50), "one")
    repo.commit(ir(test_a=1_000_001, test_b=0, test_c=5, test_d=25), "two")
    lines = run_cli(capsys, "--baseline", str(repo.root / BASELINE), "--width", "200", "--all").splitlines()
    assert [line.split()[5] for line in lines[1:5]] == ["+<0.01%", "—", "-50.00%", "0.00%"]


def test_render_without_series(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "r")
    repo.commit(snap({}), "empty")
    history = read_history(repo.root / BASELINE)
    assert render_text(history, 80).startswith("no series to show\n\n1 commit changed ")


def test_example_project_history_has_a_model_change(capsys: pytest.CaptureFixture[str]) -> None:
    path = ROOT / "example_project" / ".instrbudget" / "baseline.json"
    log = subprocess.run(
        ["git", "log", "--format=%H", "--", "example_project/.instrbudget/baseline.json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if log.returncode != 0 or not any(h.startswith("0d97faf") for h in log.stdout.split()):
        pytest.skip("not a git checkout with the example baseline's history")
    history = read_history(path)
    assert any(c.commit.short.startswith("0d97faf") and "models" in c.keys for c in history.fingerprint_changes)
    ir_series = next(s for s in history.series if s.metric == "ir_instructions" and "wordfreq" in s.test)
    assert len(ir_series.segments) > 1
    assert "models" in ir_series.segments[1].changed
    out = run_cli(capsys, "--baseline", str(path), "-k", "wordfreq", "--width", "120")
    assert "┊" in out.splitlines()[1] + out.splitlines()[2]
    assert "0d97faf (models)" in out
    assert max(len(line) for line in out.splitlines()) <= 120


def test_numbered_tests_come_with_numbers_compared_as_numbers(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "r")
    names = ["tests/test_a.py::test_sum[1000]", "tests/test_a.py::test_sum[100]", "tests/test_a.py::test_sum[10]"]
    repo.commit(snap({name: {"ir_instructions": 5} for name in names}), "one")
    repo.commit(snap({name: {"ir_instructions": 6} for name in names}), "two")
    history = read_history(repo.root / BASELINE)
    assert [s.test for s in history.series] == sorted(names, key=len)  # [10], [100], [1000]


@pytest.mark.parametrize(
    ("doc", "why"),
    [
        ([1, 2], "top level is not an object"),
        ({"version": 1, "tests": {}}, "'fingerprint' is missing"),
        (
            {"version": 1, "fingerprint": {}, "tests": {"t.py::x": {"ir_instructions": {"total": 1, "regions": 5}}}},
            "t.py::x ir_instructions: its regions are not an object",
        ),
        ({"version": 1, "fingerprint": {}, "tests": 5}, "'tests' is not an object"),
        ({"version": 1, "fingerprint": {}, "tests": {"t.py::x": 3}}, "t.py::x: its entry is not an object of metrics"),
        (
            {"version": 1, "fingerprint": {}, "tests": {"t.py::x": {"ir_instructions": {}}}},
            "t.py::x ir_instructions: no total",
        ),
    ],
)
def test_a_damaged_layout_says_what_is_wrong_in_the_documents_terms(doc: object, why: str) -> None:
    # Not Python's (KeyError: 'total', AttributeError: 'int' object has no attribute 'items').
    from cbuild.report.snapshot import SnapshotError, decode

    with pytest.raises(SnapshotError) as caught:
        decode(json.dumps(doc).encode())
    assert str(caught.value) == f"does not have the expected layout ({why})"


def test_history_outside_any_project_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """It said ".instrbudget/baseline.json is not in a git repository" of a directory with no project."""
    monkeypatch.chdir(tmp_path)
    assert main(["history"]) == 2
    assert (
        f"cbuild: no project in {tmp_path} or above (pyproject.toml, pytest.ini, .pytest.ini, tox.ini or setup.cfg): "
        "run this in the project's checkout, whose baseline's history it shows" in capsys.readouterr().err
    )
    # A project of a pytest.ini: its baseline, from a directory under it too.
    repo = Repo(tmp_path / "ini")
    (repo.root / "pytest.ini").write_text("[pytest]\n")
    repo.commit(ir(test_x=1), "one", path=".instrbudget/baseline.json")
    (repo.root / "src").mkdir()
    monkeypatch.chdir(repo.root / "src")
    assert main(["history", "--width", "200"]) == 0
    assert "1 commit changed ../.instrbudget/baseline.json" in capsys.readouterr().out
