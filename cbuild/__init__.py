"""cbuild: build C/C++ through an instrumenting clang pipeline and count executed IR instructions.

The engine behind pytest-instrbudget, usable on its own::

    from cbuild import Builder, BuildOptions, run_program

    builder = Builder()
    program = builder.build(["main.c"], options=BuildOptions(opt_level="2"))
    result = run_program(program, ["arg"])
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cbuild.lazy import lazy_exports

if TYPE_CHECKING:
    from cbuild.blocks import Block, BlockTable
    from cbuild.build import Artifact, Builder
    from cbuild.costs import BlockCounts, Cost
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
    )
    from cbuild.execute import RunResult, run_program
    from cbuild.extension import Extension, ExtensionError, extension_options
    from cbuild.library import Library, Pointer
    from cbuild.models import CostModel, IrCountModel, Metric, ModelRegistry, Param, Runtime, default_registry
    from cbuild.options import BuildOptions
    from cbuild.sources import Source

#: Public name -> the module that defines it, imported on first use (cbuild.lazy).
_EXPORTS = {
    "Block": "cbuild.blocks",
    "BlockTable": "cbuild.blocks",
    "Artifact": "cbuild.build",
    "Builder": "cbuild.build",
    "BlockCounts": "cbuild.costs",
    "Cost": "cbuild.costs",
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
    "RunResult": "cbuild.execute",
    "run_program": "cbuild.execute",
    "Extension": "cbuild.extension",
    "ExtensionError": "cbuild.extension",
    "extension_options": "cbuild.extension",
    "Library": "cbuild.library",
    "Pointer": "cbuild.library",
    "CostModel": "cbuild.models",
    "IrCountModel": "cbuild.models",
    "Metric": "cbuild.models",
    "ModelRegistry": "cbuild.models",
    "Param": "cbuild.models",
    "Runtime": "cbuild.models",
    "default_registry": "cbuild.models",
    "BuildOptions": "cbuild.options",
    "Source": "cbuild.sources",
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
    "default_registry",
    "extension_options",
    "run_program",
]
