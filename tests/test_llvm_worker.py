"""LLVM runs in worker processes: an abort there fails one build, never the test session."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from cbuild import Builder, BuildOptions, CompileError, InstrumentError, run_program
from cbuild.build import builder as build_mod
from cbuild.build import codegen, llvm_worker
from cbuild.build.instrument import Instrumented, instrument
from cbuild.errors import InstrumentedIRRejected, LLVMCrashed

#: An AVX-512 intrinsic in a function compiled for generic x86-64: instruction selection
#: cannot split the 512-bit vector, and LLVM aborts ("LLVM ERROR: Do not know how to
#: split the result of this operator!", report_fatal_error then abort()).
AVX512_IR = """\
declare <16 x float> @llvm.x86.avx512.rcp14.ps.512(<16 x float>, <16 x float>, i16)

define <16 x float> @reciprocal(<16 x float> %x) {
  %r = call <16 x float> @llvm.x86.avx512.rcp14.ps.512(<16 x float> %x, <16 x float> %x, i16 -1)
  ret <16 x float> %r
}
"""

#: Inline assembly naming a register no target has: the back end reports an error
#: diagnostic, which LLVM's default handler turns into exit(1).
BAD_REGISTER_IR = """\
define i32 @copy(i32 %x) {
  %r = call i32 asm "mov $1, $0", "=&{nosuchreg},r"(i32 %x)
  ret i32 %r
}
"""

#: Parses, but the verifier refuses it: %x is used where its definition does not dominate.
NOT_DOMINATED_IR = """\
define i32 @pick(i1 %c) {
entry:
  br i1 %c, label %then, label %done
then:
  %x = add i32 1, 2
  br label %done
done:
  ret i32 %x
}
"""


def _live_pids() -> set[int]:
    return {w.pid for w in llvm_worker.pool().workers() if w.alive()}


def _gone(pid: int, timeout: float = 10.0) -> bool:
    """Whether ``pid`` has exited (reaped or a zombie) within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


def _check_next_build_works(builder: Builder, write, name: str) -> None:  # type: ignore[no-untyped-def]
    src = write(name, f"int main(void) {{ volatile int x = {len(name)}; return x - {len(name)}; }}\n")
    result = run_program(builder.build([src]), [])
    assert result.returncode == 0
    assert result.counts is not None
    assert sum(result.counts.counts) > 0


@pytest.mark.parametrize(
    ("name", "ir", "how", "llvm_says"),
    [
        pytest.param(
            "avx512",
            AVX512_IR,
            "was killed by SIGABRT",
            "LLVM ERROR: Do not know how to split the result of this operator!",
            id="abort",
        ),
        pytest.param(
            "badreg",
            BAD_REGISTER_IR,
            "exited with status 1",
            "couldn't allocate output register for constraint '{nosuchreg}'",
            id="exit",
        ),
    ],
)
def test_llvm_ending_its_process_in_code_generation_is_a_build_error(  # type: ignore[no-untyped-def]
    builder: Builder, write, name: str, ir: str, how: str, llvm_says: str
) -> None:
    if ir is AVX512_IR and not builder.toolchain.triple.startswith("x86_64"):
        pytest.skip("an x86 intrinsic")
    src = write(f"{name}.ll", ir)
    with pytest.raises(LLVMCrashed) as info:
        builder.build([src], kind="library")
    message = str(info.value)
    assert message.startswith(f"generating code for {src.resolve()} failed: ")
    assert f"the LLVM worker process {how}" in message
    assert llvm_says in message
    # The session goes on: the next build starts a new worker.
    _check_next_build_works(builder, write, f"after_{name}.c")


def test_a_worker_killed_between_builds_is_replaced(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    _check_next_build_works(builder, write, "before_kill.c")
    victims = _live_pids()
    assert victims
    for pid in victims:
        os.kill(pid, signal.SIGKILL)
    for pid in victims:
        assert _gone(pid)
    _check_next_build_works(builder, write, "after_kill.c")
    assert _live_pids()
    assert not _live_pids() & victims


def test_a_crash_names_every_source_and_the_stage(write) -> None:  # type: ignore[no-untyped-def]
    died = llvm_worker.WorkerDied("was killed by SIGSEGV", "Stack dump:\n0. Program arguments: python")
    names = [f"/src/u{i}.c" for i in range(10)]
    message = llvm_worker._crash_message("linking the IR of", names, died)
    assert message.startswith("linking the IR of /src/u0.c, /src/u1.c, ")
    assert "/src/u7.c and 2 more failed: the LLVM worker process was killed by SIGSEGV; its last output:\n" in message
    assert message.endswith("Stack dump:\n0. Program arguments: python")


def test_verifier_errors_keep_their_message(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    src = write("notdominated.ll", NOT_DOMINATED_IR)
    with pytest.raises(InstrumentError) as info:
        builder.build([src])
    assert not isinstance(info.value, LLVMCrashed)
    with pytest.raises(InstrumentError) as in_process:
        codegen.parse(NOT_DOMINATED_IR, name=str(src.resolve()))
    assert str(info.value) == str(in_process.value)
    assert str(info.value).startswith(f"LLVM rejected the IR of {src.resolve()}: ")
    assert "Instruction does not dominate all uses!" in str(info.value)


def test_parse_errors_keep_their_message(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    src = write("typo.ll", "define i32 @f() {\n  ret i64 0\n}\n")
    with pytest.raises(InstrumentError, match=r"LLVM rejected the IR of .*typo\.ll: LLVM IR parsing error"):
        builder.build([src])


def test_compile_errors_are_unchanged(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    src = write("broken2.c", "int f(void) {\n    return missing;\n}\n")
    with pytest.raises(CompileError) as info:
        builder.build([src])
    assert str(info.value).startswith(f"compiling {src.resolve()} failed:\n")
    assert f"{src}:2:12: error: use of undeclared identifier 'missing'" in str(info.value)


def _spoil_edges(monkeypatch: pytest.MonkeyPatch, placements: list[str], *, always: bool = False) -> None:
    """Make the instrumented IR of edge placement (or of every placement) unacceptable to LLVM."""

    def spoiled(text: str, **kwargs: Any) -> Instrumented:
        placements.append(kwargs["placement"])
        result = instrument(text, **kwargs)
        if kwargs["placement"] == "edges" or always:
            return dataclasses.replace(result, text=result.text + "\ndefine void @spoiled() {\n  ret i32 0\n}\n")
        return result

    monkeypatch.setattr(build_mod, "instrument", spoiled)


def test_placement_falls_back_to_blocks_when_llvm_refuses_edges(builder: Builder, write, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    placements: list[str] = []
    _spoil_edges(monkeypatch, placements)
    src = write("fallback.c", "int main(int argc, char **argv) { return argc > 5 ? 1 : 0; }\n")
    result = run_program(builder.build([src]), [])
    assert placements == ["edges", "blocks"]
    assert result.returncode == 0
    assert result.counts is not None
    assert sum(result.counts.counts) > 0


def test_refused_blocks_placement_raises(builder: Builder, write, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    placements: list[str] = []
    _spoil_edges(monkeypatch, placements, always=True)
    src = write("refused.c", "int main(void) { return 0; }\n")
    with pytest.raises(InstrumentedIRRejected, match="LLVM rejected the IR of instrumented"):
        builder.build([src], options=BuildOptions(placement="blocks"))
    assert placements == ["blocks"]


def test_builds_in_threads_run_side_by_side(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    sources = [write(f"thread{i}.c", f"int main(void) {{ volatile int x = {i}; return x - {i}; }}\n") for i in range(4)]
    results: dict[int, int] = {}
    errors: list[BaseException] = []

    def one(i: int) -> None:
        try:
            results[i] = run_program(builder.build([sources[i]], options=BuildOptions(opt_level="1")), []).returncode
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert results == {0: 0, 1: 0, 2: 0, 3: 0}
    assert 1 <= len(_live_pids()) <= llvm_worker.pool().size


def test_linking_gives_the_same_text_every_time(write) -> None:  # type: ignore[no-untyped-def]
    struct = "%struct.s = type { i32, i64 }\n"
    a = write(
        "a.ll",
        struct + "define i64 @ga(ptr %p) {\n  %q = getelementptr %struct.s, ptr %p, i32 0, i32 1\n"
        "  %v = load i64, ptr %q\n  ret i64 %v\n}\n",
    )
    b = write("b.ll", struct + "define i32 @gb(ptr %p) {\n  %v = load i32, ptr %p\n  ret i32 %v\n}\n")
    first = llvm_worker.link_units([a, b], ["a.ll", "b.ll"])
    codegen.parse(a.read_text(), name="a")  # the session's own context has seen %struct.s now
    assert llvm_worker.link_units([a, b], ["a.ll", "b.ll"]) == first
    assert "%struct.s = type { i32, i64 }" in first


def test_pool_shutdown_ends_workers_cleanly(write) -> None:  # type: ignore[no-untyped-def]
    pool = llvm_worker.WorkerPool(1)
    src = write("one.ll", "define i32 @one() {\n  ret i32 1\n}\n")
    assert "define i32 @one()" in pool.call("linking the IR of", ["one.ll"], "link_units", [str(src)], ["one.ll"])
    (worker,) = pool.workers()
    pool.shutdown()
    assert worker.process.returncode == 0  # it read EOF and returned: not killed, and reaped
    assert not pool.workers()


def test_workers_end_when_their_parent_dies(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import os, sys
        from cbuild.build import llvm_worker
        llvm_worker.prestart()
        (worker,) = llvm_worker.pool().workers()
        print(worker.pid, flush=True)
        os._exit(0)  # no atexit handlers: the worker only sees its stdin close
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    pid = int(proc.stdout.strip())
    assert _gone(pid)


def test_a_worker_killed_during_a_request(write) -> None:  # type: ignore[no-untyped-def]
    pool = llvm_worker.WorkerPool(1)
    src = write("two.ll", "define i32 @two() {\n  ret i32 2\n}\n")
    args = ("linking the IR of", [str(src)], "link_units", [str(src)], [str(src)])
    try:
        pool.call(*args)
        (worker,) = pool.workers()
        os.kill(worker.pid, signal.SIGSTOP)  # it cannot answer the next request before it is killed
        outcome: list[BaseException] = []

        def request() -> None:
            try:
                pool.call(*args)
            except BaseException as exc:
                outcome.append(exc)

        thread = threading.Thread(target=request)
        thread.start()
        time.sleep(0.2)
        os.kill(worker.pid, signal.SIGKILL)
        thread.join(30)
        assert len(outcome) == 1
        assert isinstance(outcome[0], LLVMCrashed)
        assert str(outcome[0]) == (
            f"linking the IR of {src} failed: the LLVM worker process was killed by SIGKILL, printing nothing"
        )
        assert worker.process.returncode == -signal.SIGKILL  # reaped
        assert "define i32 @two()" in pool.call(*args)
        assert [w.pid for w in pool.workers()] != [worker.pid]
    finally:
        pool.shutdown()


def test_object_code_keeps_line_tables_but_not_variables(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    """Sources carry full DWARF (for their C types); the binary only their line tables."""
    src = write(
        "debuginfo.c",
        "struct point_of_interest { int abscissa_value; };\n"
        "int sum_upto(int n) {\n"
        "    int running_total_variable = 0;\n"
        "    for (int i = 0; i < n; i++) running_total_variable += i;\n"
        "    return running_total_variable;\n"
        "}\n"
        "int first(struct point_of_interest *p) { return p->abscissa_value; }\n",
    )
    artifact = builder.build([src], kind="library")
    binary = artifact.path.read_bytes()
    assert b".debug_line" in binary
    assert b"debuginfo.c" in binary
    for name in (b"running_total_variable", b"point_of_interest", b"abscissa_value"):
        assert name not in binary
    # The types were there for the signatures.
    assert "abscissa_value" in str(artifact.metadata()["signatures"]["types"])
