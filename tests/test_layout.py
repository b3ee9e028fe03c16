"""The engine's layout: stage packages whose imports run one way, and public names that stay put."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "cbuild"

#: Stage -> its rank; a module may import its own stage and stages of lower rank.
#: Top-level modules: errors, lazy and framing (the messages between the engine's processes) are
#: the foundation (rank 0); hookspecs is the models' extension point (rank 3, beside models);
#: config (a project's settings) reads what the stages offer (rank 5); cli, __init__ and __main__
#: sit on everything.
RANKS = {"errors": 0, "lazy": 0, "framing": 0, "build": 1, "riscv": 2, "models": 3, "run": 4, "report": 4, "config": 5}
TOP = {"cli", "__init__", "__main__"}

#: The stated exceptions (cbuild/build/__init__.py says why).
EXCEPTIONS = {
    ("build.builder", "models"),  # the builder hands each build to the cost models
    ("build.builder", "riscv"),  # ... and to the RISC-V target build of executing models
}


def _stage(module: str) -> str:
    stage = module.split(".")[0]
    return "models" if stage == "hookspecs" else stage


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "cbuild":
                found.update(f"{alias.name}" for alias in node.names)
            elif node.module.startswith("cbuild."):
                found.add(node.module.removeprefix("cbuild."))
        elif isinstance(node, ast.Import):
            found.update(a.name.removeprefix("cbuild.") for a in node.names if a.name.startswith("cbuild."))
    return found


def _modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        out.append((".".join(p for p in rel.parts if p != "__init__") or "__init__", path))
    return out


def test_layout_imports_run_one_way() -> None:
    wrong = []
    for module, path in _modules():
        stage = _stage(module)
        if stage in TOP:
            continue
        assert stage in RANKS, f"cbuild/{path.relative_to(ROOT)} is in no stage: add it to a package"
        for target in _imports(path):
            target_stage = _stage(target)
            if target_stage in TOP or target_stage not in RANKS:
                wrong.append(f"{module} imports cbuild.{target}")
            else:
                upward = RANKS[target_stage] > RANKS[stage]
                sideways = RANKS[target_stage] == RANKS[stage] and target_stage != stage
                if (upward or sideways) and (module, target_stage) not in EXCEPTIONS:
                    wrong.append(f"{module} ({stage}) imports cbuild.{target} ({target_stage})")
    assert wrong == []


def test_layout_report_never_imports_run() -> None:
    for module, path in _modules():
        if _stage(module) == "report":
            assert not {t for t in _imports(path) if _stage(t) == "run"}, module


def test_layout_each_stage_says_what_it_takes_and_gives() -> None:
    for stage in ("build", "riscv", "models", "run", "report"):
        doc = ast.get_docstring(ast.parse((ROOT / stage / "__init__.py").read_text()))
        assert doc, f"cbuild/{stage}/__init__.py has no docstring"
        first, *_ = doc.splitlines()
        assert " in, " in first, f"cbuild/{stage}: the first line says what the stage takes in and gives out"
        assert "Imports " in doc, f"cbuild/{stage}: the docstring says which packages it imports"


def test_layout_table_in_the_engine_docs_names_every_module() -> None:
    # docs/engine.md's table of stage packages lists each package's modules (and its
    # subpackages, as `html/`): a module added without its row changing is missed here.
    import re

    doc = (ROOT.parent / "docs" / "engine.md").read_text()
    rows = dict(re.findall(r"^\| `cbuild/(\w+)/` \|.*\| (.*) \|$", doc, re.M))
    assert set(rows) == set(RANKS) - {"errors", "lazy", "framing", "config"}
    for package, cell in rows.items():
        listed = set(re.findall(r"`(\w+)/?`", cell))
        here = ROOT / package
        actual = {p.stem for p in here.glob("*.py") if p.stem != "__init__"}
        actual |= {p.name for p in here.iterdir() if (p / "__init__.py").exists() or p.name == "machines"}
        assert listed == actual, (package, sorted(actual - listed), sorted(listed - actual))


def test_layout_no_test_only_module_in_the_product() -> None:
    assert not (ROOT / "rv32emu.py").exists()
    assert not list(ROOT.rglob("utils.py"))


PUBLIC = {
    "cbuild": [
        "Artifact", "Block", "BlockCounts", "BlockTable", "BuildOptions", "Builder", "CBuildError", "CompileError",
        "Cost", "CostModel", "ExecutionError", "Extension", "ExtensionError", "InstrumentError", "IrCountModel",
        "Library", "LibraryCrashed", "LibraryTimeout", "LinkError", "Metric", "ModelRegistry", "Param", "Pointer",
        "ProgramCrashed", "ProgramTimeout", "RunResult", "Runtime", "SignatureError", "Source", "ToolchainError",
        "default_registry", "extension_options", "run_program",
    ],
    "cbuild.models": [
        "BLOCKS", "MEMORY", "BlockCounts", "BuildView", "Cost", "CostModel", "IrCountModel", "Metric", "ModelError",
        "ModelRegistry", "Param", "Runtime", "default_registry", "integer",
    ],
    "cbuild.hookspecs": ["hookimpl", "hookspec", "instrbudget_cost_models"],
    "cbuild.models.builtin": ["instrbudget_cost_models"],
}  # fmt: skip


@pytest.mark.parametrize(("module", "names"), sorted(PUBLIC.items()))
def test_layout_public_names_import(module: str, names: list[str]) -> None:
    imported = importlib.import_module(module)
    missing = [name for name in names if not hasattr(imported, name)]
    assert missing == []
