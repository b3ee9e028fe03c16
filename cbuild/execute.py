"""Running built programs as subprocesses and reading back their counters."""

from __future__ import annotations

import ctypes
import dataclasses
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cbuild.blocks import BlockTable
from cbuild.build import Artifact
from cbuild.costs import BlockCounts
from cbuild.errors import ExecutionError, ProgramCrashed, ProgramTimeout
from cbuild.profile import clock_metrics, read_profile

COUNTS_ENV = "INSTRBUDGET_COUNTS"
#: The environment programs get unless the caller passes one. Its size moves the
#: initial stack, so a fixed environment keeps address-dependent work the same
#: whatever the caller's (or pytest-xdist's) variables are.
DEFAULT_ENV = {"LC_ALL": "C", "PATH": "/usr/local/bin:/usr/bin:/bin"}
_ADDR_NO_RANDOMIZE = 0x0040000
_MAGIC = b"instrbudget-counts 2 "


def _disable_aslr() -> None:  # pragma: no cover - runs in the child between fork and exec
    libc = ctypes.CDLL(None, use_errno=True)
    current = libc.personality(0xFFFFFFFF)
    if current != -1:
        libc.personality(current | _ADDR_NO_RANDOMIZE)


def split_results(models: Mapping[str, Any], raw: Sequence[int]) -> tuple[dict[str, Any], dict[str, tuple[int, ...]]]:
    """Each model's static document and its slice of the dynamic phases' results."""
    analyses = {name: doc.get("analysis", {}) for name, doc in models.items()}
    results = {}
    for name, doc in models.items():
        if "results" in doc:
            offset, count = doc["results"]
            results[name] = tuple(raw[offset : offset + count])
    return analyses, results


def read_counts(
    path: Path, *, build_id: str, table: BlockTable, models: Mapping[str, Any] | None = None
) -> tuple[BlockCounts, int]:
    """Parse a counts file; returns the counts and the program's running total.

    ``models`` is the artifact's model metadata (:meth:`Artifact.models`).
    """
    data = path.read_bytes()
    newline = data.find(b"\n")
    if not data.startswith(_MAGIC) or newline < 0:
        raise ExecutionError(f"{path} is not an instrbudget counts file")
    fields = data[len(_MAGIC) : newline].decode().split()
    if len(fields) != 4:
        raise ExecutionError(f"{path}: malformed counts header")
    try:
        got_id, ncounters, total, nresults = fields[0], int(fields[1]), int(fields[2]), int(fields[3])
    except ValueError:
        raise ExecutionError(f"{path}: malformed counts header") from None
    if got_id != build_id:
        raise ExecutionError(f"{path} was written by build {got_id}, expected {build_id}")
    raw = data[newline + 1 :]
    if len(raw) != 8 * (ncounters + nresults) or ncounters != table.counters:
        raise ExecutionError(
            f"{path}: expected {table.counters} counters and {nresults} results, found {len(raw)} bytes"
        )
    view = memoryview(raw).cast("Q")
    analyses, results = split_results(models or {}, view[ncounters:].tolist())
    return BlockCounts(table, table.block_counts(view[:ncounters]), analyses, results), total


@dataclass(frozen=True)
class RunResult:
    """What a program run produced."""

    args: tuple[str, ...]
    returncode: int
    stdout: bytes
    stderr: bytes
    #: None for a program built without instrumentation.
    counts: BlockCounts | None


def run_program(
    artifact: Artifact,
    args: Sequence[object] = (),
    *,
    input: bytes = b"",
    timeout: float | None = 60.0,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    table: BlockTable | None = None,
) -> RunResult:
    """Run ``artifact`` with ASLR off (Linux); crashes and timeouts raise with stderr attached.

    The program sees ``env`` (default :data:`DEFAULT_ENV`) and its source name as ``argv[0]``.
    """
    argv = [Path(artifact.name).stem, *map(str, args)]
    with tempfile.TemporaryDirectory(prefix="instrbudget-run-") as tmp:
        counts_path = Path(tmp) / "counts"
        child_env = dict(DEFAULT_ENV if env is None else env)
        child_env[COUNTS_ENV] = str(counts_path)
        try:
            proc = subprocess.run(
                argv,
                executable=artifact.path,
                input=input,
                capture_output=True,
                timeout=timeout,
                env=child_env,
                cwd=cwd,
                preexec_fn=_disable_aslr if sys.platform.startswith("linux") else None,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            stderr = (exc.stderr or b"").decode(errors="replace")
            raise ProgramTimeout(
                f"{artifact.name} ({' '.join(argv[1:]) or 'no arguments'}) ran past its {timeout} s "
                f"timeout and was killed\n--- stderr ---\n{stderr[-4000:]}"
            ) from None
        if proc.returncode < 0:
            sig = -proc.returncode
            try:
                name = signal.Signals(sig).name
            except ValueError:
                name = f"signal {sig}"
            raise ProgramCrashed(
                f"program {artifact.name} was killed by {name} (exit status {proc.returncode})"
                f"\n--- stderr ---\n{proc.stderr.decode(errors='replace')[-4000:]}"
            )
        counts = None
        if artifact.instrumented:
            if not counts_path.exists():
                raise ExecutionError(
                    f"{artifact.name} exited with status {proc.returncode} without writing its "
                    f"counts (it may have called _exit or exec); stderr:\n"
                    f"{proc.stderr.decode(errors='replace')[-4000:]}"
                )
            table = table or artifact.table()
            models = artifact.models()
            counts, total = read_counts(counts_path, build_id=artifact.key, table=table, models=models)
            profile = read_profile(
                counts_path.with_name(counts_path.name + ".profile"), clock_metrics(models), table.functions
            )
            if profile is not None:
                counts = dataclasses.replace(counts, profile=profile)
            expected = sum(c * s for c, s in zip(counts.counts, table.sizes, strict=True))
            if expected != total:
                raise ExecutionError(
                    f"{artifact.name}: running total {total} differs from the block counters' {expected}: "
                    f"the counts are inconsistent (threads updating counters at once lose counts; "
                    f"otherwise please report this program)"
                )
    return RunResult(tuple(argv[1:]), proc.returncode, proc.stdout, proc.stderr, counts)
