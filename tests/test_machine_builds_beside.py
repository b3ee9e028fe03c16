"""The RISC-V build of an executing model runs beside the native build, not after it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cbuild import Builder
from cbuild.build import llvm_worker
from cbuild.errors import CBuildError
from cbuild.models.registry import default_registry
from cbuild.riscv import build as riscv_build

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
    build_riscv, compile_module = riscv_build.build_riscv, llvm_worker.compile_module

    def spied_build_riscv(*args: Any, **kwargs: Any) -> None:
        started.set()
        build_riscv(*args, **kwargs)

    def spied_compile_module(*args: Any, **kwargs: Any) -> Any:
        seen.append(started.wait(timeout=60))
        return compile_module(*args, **kwargs)

    monkeypatch.setattr("cbuild.build.builder.build_riscv", spied_build_riscv)
    monkeypatch.setattr(llvm_worker, "compile_module", spied_compile_module)
    zkvm = default_registry().create("zkvm", {"execute": True})
    artifact = builder.build([write("beside.c", SOURCE)], models=[zkvm])
    assert seen == [True]
    (machine,) = artifact.machines().values()
    assert Path(machine["elf"]).is_file()


def test_a_native_build_that_fails_says_so_without_waiting_for_the_riscv_build(
    builder: Builder, write: Callable[[str, str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The native link fails (an undefined function) while the RISC-V build's code generation is
    held until the test lets it go: the error comes at once, and the RISC-V build starts no more
    processes after it."""
    entered, released = threading.Event(), threading.Event()
    held: list[bool] = []
    started_after: list[list[str]] = []
    run, link = riscv_build._run, Builder._link

    def held_run(command: list[str], *args: Any, **kwargs: Any) -> Any:
        if not entered.is_set():
            entered.set()
            held.append(released.wait(timeout=60))
        elif released.is_set():
            started_after.append(command)
        return run(command, *args, **kwargs)

    def native_link(self: Builder, *args: Any, **kwargs: Any) -> Any:
        entered.wait(timeout=60)  # the native link fails once the RISC-V build is held
        return link(self, *args, **kwargs)

    monkeypatch.setattr(riscv_build, "_run", held_run)
    monkeypatch.setattr(Builder, "_link", native_link)
    zkvm = default_registry().create("zkvm", {"execute": True})
    source = write("undefined.c", "int missing(int);\nint main(void) { return missing(3); }\n")
    with pytest.raises(CBuildError, match="missing"):
        builder.build([source], models=[zkvm])
    released.set()
    for _ in range(600):  # the RISC-V thread goes on from its held process, then stops
        if held:
            break
        time.sleep(0.1)
    assert held == [True]  # let go by the test, after the error: not waited for
    time.sleep(1.0)
    assert started_after == []  # no link after the native build failed
