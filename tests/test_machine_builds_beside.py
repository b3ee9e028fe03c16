"""The RISC-V build of an executing model runs beside the native build, not after it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cbuild import Builder
from cbuild.build import builder as builder_module
from cbuild.build import llvm_worker
from cbuild.models.registry import default_registry

SOURCE = """
#include <stdio.h>
int main(void) { long s = 0; for (int i = 0; i < 1000; i++) s += i % 7; printf("%ld\\n", s); return 0; }
"""


def test_the_riscv_build_starts_before_the_native_code_generation(
    builder: Builder, write: Callable[[str, str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Native code generation waits (up to 60 s) for the RISC-V build to have started: had the
    RISC-V build waited for the native one, as it did, it would never start in time."""
    started = threading.Event()
    seen: list[bool] = []
    build_riscv, compile_module = builder_module.build_riscv, llvm_worker.compile_module

    def spied_build_riscv(*args: Any, **kwargs: Any) -> None:
        started.set()
        build_riscv(*args, **kwargs)

    def spied_compile_module(*args: Any, **kwargs: Any) -> Any:
        seen.append(started.wait(timeout=60))
        return compile_module(*args, **kwargs)

    monkeypatch.setattr(builder_module, "build_riscv", spied_build_riscv)
    monkeypatch.setattr(llvm_worker, "compile_module", spied_compile_module)
    zkvm = default_registry().create("zkvm", {"execute": True})
    artifact = builder.build([write("beside.c", SOURCE)], models=[zkvm])
    assert seen == [True]
    (machine,) = artifact.machines().values()
    assert Path(machine["elf"]).is_file()
