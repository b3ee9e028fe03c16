"""cbuild: build C/C++ through an instrumenting clang pipeline and count executed IR instructions.

The engine behind pytest-instrbudget, usable on its own::

    from cbuild import Builder, BuildOptions, run_program

    builder = Builder()
    program = builder.build(["main.c"], options=BuildOptions(opt_level="2"))
    result = run_program(program, ["arg"])

Packages by stage, imports running one way (tests/test_layout.py checks it):
``build`` (sources to an instrumented binary) <- ``riscv`` (the models' RISC-V build and
executor) <- ``models`` (costs; the interface third parties implement) <- ``run``
(programs, library and extension hosts) and ``report`` (snapshots, diffs, history, HTML).
``errors`` and ``lazy`` sit under all of them; ``cli`` on top.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cbuild.lazy import lazy_exports

if TYPE_CHECKING:
    from cbuild.build.blocks import Block, BlockTable
    from cbuild.build.builder import Artifact, Builder
    from cbuild.build.options import BuildOptions
    from cbuild.build.sources import Source
    from cbuild.errors import (
        CBuildError,
        CompileError,
        ExecutionError,
        InstrumentError,
        LibraryCrashed,
        LibraryTimeout,
        LinkError,
        ProgramCrashed,
        ProgramTimeout,
        SignatureError,
        ToolchainError,
        UnknownFunction,
    )
    from cbuild.models import CostModel, IrCountModel, Metric, ModelRegistry, Param, Runtime, default_registry
    from cbuild.models.costs import BlockCounts, Cost
    from cbuild.run.extension import Extension, ExtensionError, extension_options
    from cbuild.run.library import Library, Pointer
    from cbuild.run.program import RunResult, run_program

#: Public name -> the module that defines it, imported on first use (cbuild.lazy).
_EXPORTS = {
    "Block": "cbuild.build.blocks",
    "BlockTable": "cbuild.build.blocks",
    "Artifact": "cbuild.build.builder",
    "Builder": "cbuild.build.builder",
    "BlockCounts": "cbuild.models.costs",
    "Cost": "cbuild.models.costs",
    "CBuildError": "cbuild.errors",
    "CompileError": "cbuild.errors",
    "ExecutionError": "cbuild.errors",
    "InstrumentError": "cbuild.errors",
    "LibraryCrashed": "cbuild.errors",
    "LibraryTimeout": "cbuild.errors",
    "LinkError": "cbuild.errors",
    "ProgramCrashed": "cbuild.errors",
    "ProgramTimeout": "cbuild.errors",
    "SignatureError": "cbuild.errors",
    "ToolchainError": "cbuild.errors",
    "UnknownFunction": "cbuild.errors",
    "RunResult": "cbuild.run.program",
    "run_program": "cbuild.run.program",
    "Extension": "cbuild.run.extension",
    "ExtensionError": "cbuild.run.extension",
    "extension_options": "cbuild.run.extension",
    "Library": "cbuild.run.library",
    "Pointer": "cbuild.run.library",
    "CostModel": "cbuild.models",
    "IrCountModel": "cbuild.models",
    "Metric": "cbuild.models",
    "ModelRegistry": "cbuild.models",
    "Param": "cbuild.models",
    "Runtime": "cbuild.models",
    "default_registry": "cbuild.models",
    "BuildOptions": "cbuild.build.options",
    "Source": "cbuild.build.sources",
}


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

__all__ = [
    "Artifact",
    "Block",
    "BlockCounts",
    "BlockTable",
    "BuildOptions",
    "Builder",
    "CBuildError",
    "CompileError",
    "Cost",
    "CostModel",
    "ExecutionError",
    "Extension",
    "ExtensionError",
    "InstrumentError",
    "IrCountModel",
    "Library",
    "LibraryCrashed",
    "LibraryTimeout",
    "LinkError",
    "Metric",
    "ModelRegistry",
    "Param",
    "Pointer",
    "ProgramCrashed",
    "ProgramTimeout",
    "RunResult",
    "Runtime",
    "SignatureError",
    "Source",
    "ToolchainError",
    "UnknownFunction",
    "default_registry",
    "extension_options",
    "run_program",
]
