"""A suite split across CI jobs: `python -m cbuild merge` and `python -m cbuild baseline update`,
end to end with pytest-split on the example project, and the refusals that keep shards of
different runs apart."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cbuild.cli import main
from cbuild.errors import CBuildError
from cbuild.report import shards

EXAMPLE = Path(__file__).resolve().parent.parent / "example_project"
GONE = "tests/test_gone.py::test_removed_long_ago"


def doc(root: Path, selected: list[str], tests: dict[str, int], **fingerprint: str) -> dict[str, Any]:
    """A shard's document: ``tests`` maps node ids to their ir_instructions."""
    return {
        "version": 2,
        "fingerprint": {"clang": "22.1.8", "models": "ir-count version=1", **fingerprint},
        "models": ["ir-count"],
        "baseline": str(root / ".instrbudget" / "baseline.json"),
        "root": str(root),
        "collected": ["t.py::a", "t.py::b", "t.py::c"],
        "selected": selected,
        "partial_files": [],
        "metric_models": {"ir_instructions": "ir-count"},
        "tests": {
            n: {"completed": True, "metrics": {"ir_instructions": {"value": v, "functions": {"f": v}}}}
            for n, v in tests.items()
        },
    }


def write(path: Path, document: dict[str, Any]) -> Path:
    path.write_text(json.dumps(document))
    return path


def test_merge_names_tests_run_twice_or_never(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one = write(tmp_path / "one.json", doc(tmp_path, ["t.py::a", "t.py::b"], {"t.py::a": 1, "t.py::b": 2}))
    two = write(tmp_path / "two.json", doc(tmp_path, ["t.py::b"], {"t.py::b": 2}))
    assert main(["merge", str(one), str(two), "-o", str(tmp_path / "all.json")]) == 1
    err = capsys.readouterr().err
    assert f"ran in 2 shards: t.py::b ({one}, {two})" in err
    assert "1 collected test(s) ran in no shard:\n  t.py::c\n" in err
    merged = json.loads((tmp_path / "all.json").read_text())
    assert merged["selected"] == ["t.py::a", "t.py::b"]
    assert sorted(merged["tests"]) == ["t.py::a", "t.py::b"]
    # Pruning needs every collected test: this merged run did not run t.py::c.
    with pytest.raises(CBuildError, match=r"--prune needs a run that covered every collected test; 1 did not run"):
        shards.update_baseline(merged, tmp_path, prune=True)


def test_merge_refuses_shards_of_different_runs_naming_the_file(tmp_path: Path) -> None:
    base = (tmp_path / "a.json", doc(tmp_path, ["t.py::a"], {"t.py::a": 1}))
    other_clang = (tmp_path / "b.json", doc(tmp_path, ["t.py::b"], {"t.py::b": 1}, clang="21.1.0"))
    with pytest.raises(CBuildError, match=rf"{other_clang[0]} was measured with another toolchain .*differs in: clang"):
        shards.merge([base, other_clang])
    other_tests = doc(tmp_path, ["t.py::b"], {})
    other_tests["collected"] = ["t.py::a", "t.py::b", "t.py::c", "t.py::d"]
    with pytest.raises(CBuildError, match=r"b.json and .*a.json collected different tests \(1 differ, e.g. t.py::d\)"):
        shards.merge([base, (tmp_path / "b.json", other_tests)])
    other_baseline = doc(tmp_path, ["t.py::b"], {})
    other_baseline["baseline"] = str(tmp_path / "budgets.json")
    with pytest.raises(
        CBuildError, match=r"compares with the baseline budgets.json, .* with .instrbudget/baseline.json"
    ):
        shards.merge([base, (tmp_path / "b.json", other_baseline)])
    other_code = doc(tmp_path, ["t.py::b"], {"t.py::b": 1})
    other_code["commit"] = "1" * 40
    with pytest.raises(
        CBuildError, match=r"b.json was measured at commit 1{40}, .*a.json at \(none recorded\): shards of one run"
    ):
        shards.merge([base, (tmp_path / "b.json", other_code)])
    committed = write(tmp_path / "baseline.json", {"fingerprint": {}, "tests": {"t.py::a": {}}, "version": 1})
    with pytest.raises(CBuildError, match=r"baseline.json is a baseline, not a --instrbudget-json document"):
        shards.load(committed)
    old = doc(tmp_path, ["t.py::a"], {})
    del old["collected"], old["selected"]
    with pytest.raises(CBuildError, match=r"old.json lacks collected, selected: it was written by an older"):
        shards.load(write(tmp_path / "old.json", old))
    disabled = doc(tmp_path, ["t.py::a", "t.py::b", "t.py::c"], {})
    disabled["disabled"] = True  # a shard run with --instrbudget-disable in its addopts measured nothing
    with pytest.raises(CBuildError, match=r"off.json is of a run with --instrbudget-disable: it measured nothing"):
        shards.load(write(tmp_path / "off.json", disabled))
    (tmp_path / "cut.json").write_text("{")
    with pytest.raises(CBuildError, match=r"cut.json is not valid JSON"):
        shards.load(tmp_path / "cut.json")


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, capture_output=True, text=True, check=False)


def _pytest(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _run(cwd, "pytest", "-p", "no:cacheprovider", "-q", *args)


def _cbuild(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _run(cwd, "cbuild", *args)


@pytest.mark.slow
def test_three_pytest_split_shards_merge_to_the_unsharded_run(tmp_path: Path) -> None:
    pytest.importorskip("pytest_split")
    pytest.importorskip("xdist")
    example = tmp_path / "example"
    shutil.copytree(EXAMPLE, example, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    # A change to accept (every hashing test grows; the known-vectors test fails its body and is
    # not written) and an entry of a test that no longer exists, to prune.
    hashmap = example / "src" / "hashmap.c"
    slower = hashmap.read_text().replace(
        "        h *= FNV32_PRIME;\n", "        h *= FNV32_PRIME;\n        h ^= h >> 13;\n", 1
    )
    assert slower != hashmap.read_text()
    hashmap.write_text(slower)
    baseline = example / ".instrbudget" / "baseline.json"
    committed = json.loads(baseline.read_text())
    committed["tests"][GONE] = committed["tests"]["tests/test_sort.py::test_sort_random_1000"]
    baseline.write_text(json.dumps(committed, indent=2, sort_keys=True) + "\n")
    before = baseline.read_bytes()

    whole = _pytest(example, "--instrbudget-json=whole.json")
    assert whole.returncode == 1, whole.stdout[-3000:]
    for group in (1, 2, 3):
        xdist = ["-n", "2"] if group == 2 else []
        shard = _pytest(
            example, "--splits", "3", "--group", str(group), f"--instrbudget-json=shard-{group}.json", *xdist
        )
        assert shard.returncode in (0, 1), shard.stdout[-3000:] + shard.stderr[-3000:]
        assert json.loads((example / f"shard-{group}.json").read_text())["selected"]
    merge = _cbuild(example, "merge", "shard-1.json", "shard-2.json", "shard-3.json", "-o", "all.json")
    assert merge.returncode == 0, merge.stderr
    assert "merged 3 document(s) into all.json: 64 of 64 collected test(s) ran, 64 measured" in merge.stderr
    assert (example / "all.json").read_bytes() == (example / "whole.json").read_bytes()

    update = _cbuild(example, "baseline", "update", "all.json", "--prune")
    assert update.returncode == 0, update.stderr
    assert "1 failing test(s) not written: tests/test_hashmap.py::test_hashmap_fnv1a_known_vectors" in update.stderr
    assert ", 1 pruned" in update.stderr
    from_shards = baseline.read_bytes()
    assert from_shards != before

    baseline.write_bytes(before)
    single = _pytest(example, "--instrbudget-update", "--instrbudget-prune")
    assert "1 pruned" in single.stdout, single.stdout[-3000:]
    assert baseline.read_bytes() == from_shards


def test_baseline_update_rewrites_a_damaged_baseline_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run = write(tmp_path / "all.json", doc(tmp_path, ["t.py::a", "t.py::b", "t.py::c"], {"t.py::a": 7}))
    (tmp_path / "pyproject.toml").write_text("")
    monkeypatch.chdir(tmp_path)
    baseline = tmp_path / ".instrbudget" / "baseline.json"
    baseline.parent.mkdir()
    baseline.write_text('{"version": 1, "tests": ')
    assert main(["baseline", "update", str(run)]) == 0
    err = capsys.readouterr().err
    assert f"baseline {baseline} is not valid JSON" in err
    assert "it is rewritten from this run" in err
    assert json.loads(baseline.read_text())["tests"]["t.py::a"]["ir_instructions"]["total"] == 7
    kept = baseline.with_name("baseline.json.damaged")
    assert f"the damaged file is kept as {kept}" in err
    assert kept.read_text() == '{"version": 1, "tests": '  # nothing is lost


def test_baseline_update_writes_the_baseline_of_the_checkout_it_runs_in(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The shards ran in one checkout (their documents name it); the update runs in another, on
    # the same machine: the baseline written is this checkout's, never the one the shards ran in.
    ran_in, here = tmp_path / "runner" / "project", tmp_path / "dev" / "project"
    for checkout in (ran_in, here):
        (checkout / ".instrbudget").mkdir(parents=True)
        (checkout / "pyproject.toml").write_text("[tool.instrbudget]\n")
    run = write(tmp_path / "all.json", doc(ran_in, ["t.py::a"], {"t.py::a": 7}))
    (ran_in / ".instrbudget" / "baseline.json").write_text("kept as it is")
    (here / "tests").mkdir()
    monkeypatch.chdir(here / "tests")  # a directory of the checkout: its pyproject.toml is above
    assert main(["baseline", "update", str(run)]) == 0
    written = here / ".instrbudget" / "baseline.json"
    assert f"baseline {written} written: 1 added" in capsys.readouterr().err
    assert json.loads(written.read_text())["tests"]["t.py::a"]["ir_instructions"]["total"] == 7
    assert (ran_in / ".instrbudget" / "baseline.json").read_text() == "kept as it is"

    # Outside any project there is no checkout to update: an error, unless --baseline names the file.
    outside = tmp_path / "scratch"
    outside.mkdir()
    monkeypatch.chdir(outside)
    assert main(["baseline", "update", str(run)]) == 2
    err = capsys.readouterr().err
    markers = "pyproject.toml, pytest.ini, .pytest.ini, tox.ini or setup.cfg"
    assert f"cbuild: no project in {outside} or above ({markers})" in err
    assert main(["baseline", "update", str(run), "--baseline", "b.json"]) == 0
    assert json.loads((outside / "b.json").read_text())["tests"]["t.py::a"]["ir_instructions"]["total"] == 7

    # Run where the shards ran (a project whose rootdir a pytest.ini makes, no pyproject.toml):
    # that checkout's baseline, whatever project lies above.
    (ran_in / "pyproject.toml").unlink()
    (ran_in / "pytest.ini").write_text("[pytest]\n")
    monkeypatch.chdir(ran_in)
    assert main(["baseline", "update", str(run)]) == 0
    assert json.loads((ran_in / ".instrbudget" / "baseline.json").read_text())["tests"]["t.py::a"]


def test_baseline_update_of_a_baseline_outside_the_project_or_unwritable_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run whose baseline was outside its project (`--instrbudget-baseline=/shared/zk.json`) has
    no place in another checkout: it was written at the checkout's `../shared/zk.json`, which
    nobody named. A baseline that cannot be written is an error naming it, not a traceback."""
    project = tmp_path / "deep" / "project"
    project.mkdir(parents=True)
    (project / "pyproject.toml").write_text("[tool.instrbudget]\n")
    shard = doc(project, ["t.py::a"], {"t.py::a": 7})
    shard["baseline"] = str(tmp_path / "shared" / "zk.json")
    run = write(tmp_path / "all.json", shard)
    monkeypatch.chdir(project)
    assert main(["baseline", "update", str(run)]) == 2
    assert (
        f"cbuild: the run's baseline {tmp_path / 'shared' / 'zk.json'} is outside its project {project}, so it "
        "has no place in this checkout: give the baseline to update with --baseline PATH"
    ) in capsys.readouterr().err
    assert not (tmp_path / "deep" / "shared").exists()
    assert not (tmp_path / "shared").exists()
    # Where the project's own configuration puts it there (a monorepo's shared baseline), it is this
    # checkout's to update.
    (project / "pyproject.toml").write_text("[tool.instrbudget]\nbaseline = '../../shared/zk.json'\n")
    assert main(["baseline", "update", str(run)]) == 0
    written = json.loads((tmp_path / "shared" / "zk.json").read_text())
    assert written["tests"]["t.py::a"]["ir_instructions"]["total"] == 7
    capsys.readouterr()
    (project / "notes").write_text("a file, not a directory")
    assert main(["baseline", "update", str(run), "--baseline", "notes/b.json"]) == 2
    assert (
        f"cbuild: cannot write the baseline notes/b.json: {project / 'notes'} is not a directory"
        in capsys.readouterr().err
    )


def test_a_shard_records_the_commit_it_measured(tmp_path: Path) -> None:
    """Shards of two commits (a job re-run after a push) merged into one run of code nobody wrote:
    each document records the commit checked out in the project, and merge compares them."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    assert shards.checkout_commit(tmp_path) is None
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "a",
        "GIT_AUTHOR_EMAIL": "a@b",
        "GIT_COMMITTER_NAME": "a",
        "GIT_COMMITTER_EMAIL": "a@b",
    }
    for command in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "one"]):
        subprocess.run(["git", *command], cwd=tmp_path, env=env, check=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert shards.checkout_commit(tmp_path) == head.stdout.strip()
    (tmp_path / "pyproject.toml").write_text("[tool.instrbudget]\n")
    (tmp_path / "test_a.py").write_text("def test_a():\n    pass\n")
    done = _pytest(tmp_path, "--instrbudget-json=a.json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads((tmp_path / "a.json").read_text())["commit"] == head.stdout.strip()
