"""Running built programs as subprocesses and reading back their counters."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cbuild.build.blocks import BlockTable
from cbuild.build.builder import Artifact
from cbuild.errors import CBuildError, ExecutionError, ProgramCrashed, ProgramTimeout
from cbuild.models.costs import BlockCounts, split_results, warn_if_interleaved
from cbuild.models.profile import Profile, clock_metrics, read_profile, with_machine_regions
from cbuild.riscv.executor import Execution, run_isolated, slot_results, slot_runtimes, slot_unavailable
from cbuild.riscv.translated import checking_translation, translation_of
from cbuild.run.faults import program_fault
from cbuild.run.spawn import aslr_off, own_group
from cbuild.run.stops import CodeStopped, check_timeout, clock_limits, machine_stop, read_stop, requested

COUNTS_ENV = "INSTRBUDGET_COUNTS"
#: The environment programs get unless the caller passes one. Its size moves the
#: initial stack, so a fixed environment keeps address-dependent work the same
#: whatever the caller's (or pytest-xdist's) variables are.
DEFAULT_ENV = {"LC_ALL": "C", "PATH": "/usr/local/bin:/usr/bin:/bin"}
_MAGIC = b"instrbudget-counts 2 "


def read_counts(
    path: Path, *, build_id: str, table: BlockTable, models: Mapping[str, Any] | None = None
) -> tuple[BlockCounts, int]:
    """Parse a counts file; returns the counts and the program's running total.

    ``models`` is the artifact's model metadata (:meth:`Artifact.models`).
    """
    counts, total, _threads = _read_counts(path, build_id=build_id, table=table, models=models)
    return counts, total


def _read_counts(
    path: Path, *, build_id: str, table: BlockTable, models: Mapping[str, Any] | None
) -> tuple[BlockCounts, int, int]:
    """:func:`read_counts`, and how many threads ran instrumented code in the process that wrote it."""
    counters, results, total, threads = read_raw_counts(path, build_id=build_id, table=table)
    analyses, dynamic = split_results(models or {}, results.tolist())
    return BlockCounts(table, table.block_counts(counters), analyses, dynamic), total, threads


def read_raw_counts(path: Path, *, build_id: str, table: BlockTable) -> tuple[memoryview, memoryview, int, int]:
    """A counts file the runtime wrote: its counters and model results as they are, the running
    total, and how many threads ran instrumented code."""
    data = path.read_bytes()
    newline = data.find(b"\n")
    if not data.startswith(_MAGIC) or newline < 0:
        raise ExecutionError(f"{path} is not an instrbudget counts file")
    fields = data[len(_MAGIC) : newline].decode(errors="replace").split()
    if len(fields) not in (4, 5):  # the fifth, there when more than one: threads
        raise ExecutionError(f"{path}: malformed counts header")
    try:
        got_id, ncounters, total, nresults = fields[0], int(fields[1]), int(fields[2]), int(fields[3])
        threads = int(fields[4]) if len(fields) == 5 else 1
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
    return view[:ncounters], view[ncounters:], total, threads


@dataclass(frozen=True)
class RunResult:
    """What a program run produced."""

    args: tuple[str, ...]
    returncode: int
    stdout: bytes
    stderr: bytes
    #: None for a program built without instrumentation. Summed over the program's forked processes.
    counts: BlockCounts | None
    #: How many processes' counts were summed (the program and its forked children).
    processes: int = 1
    #: The most threads that ran instrumented code in one of those processes.
    threads: int = 1


def _wait_exit(proc: subprocess.Popen[bytes], timeout: float | None, wake: int | None = None) -> bool | None:
    """Wait until ``proc`` has exited, leaving it unreaped (its pid, and so its process group's
    id, stay taken); False on timeout, None if ``wake`` (a file descriptor) became readable first.
    Where that is not possible, waits and reaps (and ``wake`` is not watched)."""
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # not Linux 5.3+
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        return True
    try:
        ready = select.select([pidfd, *([] if wake is None else [wake])], [], [], timeout)[0]
        return True if pidfd in ready else None if ready else False
    finally:
        os.close(pidfd)


def _group_left(pgid: int) -> bool:
    """Whether any process of the group still runs (zombies waiting for their parent do not)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if not sys.platform.startswith("linux"):
        return True
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        state, _, group = stat[stat.rfind(")") + 2 :].split(" ", 3)[:3]
        if int(group) == pgid and state not in ("Z", "X"):
            return True
    return False


def _end_group(proc: subprocess.Popen[bytes], *, grace: float = 5.0) -> None:
    """Kill what is left of the program's process group, reap the program, and wait (up to
    ``grace`` seconds) until the group's processes are gone, so no one writes after this."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + grace
    while _group_left(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.005)


def _count_files(counts_path: Path) -> list[tuple[int, Path]]:
    """Counts files of the forked processes (``NAME.PID``, ``NAME.PID.N``), by pid."""
    pattern = re.compile(re.escape(counts_path.name) + r"\.(\d+)(?:\.(\d+))?")
    found = []
    for path in counts_path.parent.iterdir():
        m = pattern.fullmatch(path.name)
        if m:
            found.append((int(m.group(1)), int(m.group(2) or 0), path))
    return [(pid, path) for pid, _, path in sorted(found)]


def _added(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
    out = dict(a)
    for key, value in b.items():
        out[key] = out.get(key, 0) + value
    return out


def merge_profiles(profiles: Iterable[Profile]) -> Profile | None:
    """One profile for several processes: counts and costs of equal regions, functions and call
    paths added, problems listed once each."""
    profiles = list(profiles)
    if len(profiles) <= 1:
        return profiles[0] if profiles else None
    regions: dict[str, tuple[int, dict[str, int]]] = {}
    functions: dict[str, tuple[int, dict[str, int]]] = {}
    paths: dict[tuple[str, ...], dict[str, int]] = {}
    for profile in profiles:
        for table, part in ((regions, profile.regions), (functions, profile.functions)):
            for key, (count, costs) in part.items():
                old_count, old_costs = table.get(key, (0, {}))
                table[key] = (old_count + count, _added(old_costs, costs))
        for stack, costs in profile.paths.items():
            paths[stack] = _added(paths.get(stack, {}), costs)
    problems = tuple(dict.fromkeys(problem for profile in profiles for problem in profile.problems))
    return Profile(regions, problems, functions, paths)


def _summed(parts: Sequence[BlockCounts]) -> BlockCounts:
    """Block counts and model results of several processes of one artifact, added up."""
    first = parts[0]
    if len(parts) == 1:
        return first
    counts = tuple(map(sum, zip(*(part.counts for part in parts), strict=True)))
    results = {
        name: tuple(map(sum, zip(*(part.results[name] for part in parts), strict=True))) for name in first.results
    }
    profile = merge_profiles(part.profile for part in parts if part.profile is not None)
    return dataclasses.replace(first, counts=counts, results=results, profile=profile)


class _MachineRuns:
    """The RISC-V builds' runs of a program, in a thread of their own: they need only its arguments
    and stdin, so they go on while the native program runs. :meth:`wait` gives them by target, or
    raises what a run raised; runs nobody waits for (the native run failed) end on their own.
    ``cutoffs`` (per target, runtime index -> clock) stop a run where a model's clock passes one
    (the builds with one run first, and the others only if none stopped); with them, :attr:`done`
    is a file descriptor that becomes readable when the runs are over, open until :meth:`wait` or
    :meth:`close`."""

    def __init__(
        self,
        machines: Mapping[str, Any],
        argv: Sequence[str],
        stdin: bytes,
        timeout: float | None,
        cutoffs: Mapping[str, Mapping[int, int]] | None = None,
        name: str | None = None,
    ) -> None:
        self._runs: dict[str, Execution] = {}
        self.name = name
        self._error: BaseException | None = None
        self.cutoffs = dict(cutoffs or {})
        self.done: int | None = None
        self._done_write: int | None = None
        if self.cutoffs:
            self.done, self._done_write = os.pipe()
        check = checking_translation()  # read here: the environment is the caller's
        requests = [(target, doc, translation_of(doc)) for target, doc in machines.items() if "unavailable" not in doc]
        requests.sort(key=lambda request: request[0] not in self.cutoffs)  # stable: the rest keep their order
        self._thread: threading.Thread | None = None
        if requests:  # a build whose RISC-V builds are all unavailable runs nothing
            self._thread = threading.Thread(
                target=self._run, args=(requests, list(argv), stdin, timeout, check), daemon=True
            )
            self._thread.start()

    def _run(
        self,
        requests: Sequence[tuple[str, Mapping[str, Any], Path | None]],
        argv: list[str],
        stdin: bytes,
        timeout: float | None,
        check: bool,
    ) -> None:
        try:
            for target, doc, translation in requests:
                self._runs[target] = run_isolated(
                    Path(doc["executor"]),
                    Path(doc["elf"]),
                    slot_runtimes(doc["slots"]),
                    argv,
                    stdin=stdin,
                    timeout=timeout,
                    translation=translation,
                    check=check,
                    cutoffs=self.cutoffs.get(target),
                    name=self.name,
                )
                if self._runs[target].stopped is not None:
                    break  # the program stopped: its other builds need not run
        except BaseException as exc:  # raised again by wait(), in the caller's thread
            self._error = exc
        finally:
            if self._done_write is not None:
                os.close(self._done_write)  # the read end sees its end

    def wait(self) -> dict[str, Execution]:
        if self._thread is not None:
            self._thread.join()
        self.close()
        if self._error is not None:
            raise self._error
        return self._runs

    def close(self) -> None:
        """Close :attr:`done` (the runs go on, and end on their own)."""
        if self.done is not None:
            os.close(self.done)
            self.done = None

    def __enter__(self) -> _MachineRuns:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def stop_first(self, what: str, machines: Mapping[str, Any]) -> None:
        """Raise :class:`CodeStopped` if a run with a cut-off stopped there: what a run reports, whatever
        the native program did after that point (crashed, exited without counts). Its own errors
        are left to the native run's."""
        if not self.cutoffs:
            return
        try:
            self.wait()
        except Exception:
            return
        self.raise_stop(what, machines)

    def raise_stop(self, what: str, machines: Mapping[str, Any]) -> None:
        """Raise :class:`CodeStopped` for a run that stopped at a cut-off, if one did (after :meth:`wait`)."""
        for target, run in self._runs.items():
            if run.stopped is not None:
                stop = machine_stop(machines[target], run.stopped, self.cutoffs[target], run.results)
                raise CodeStopped(what, stop, run.stdout, run.stderr)


class CountsDisagree(ExecutionError):
    """A process's running total is not what its block counters add up to."""


#: What the message of a crash whose counts :func:`check_total` refused adds to it.
COUNTS_UNKNOWN = (
    "; its counts are unknown: the counters and the running total disagree (it crashed between two "
    "calls, where they are not exact, or while another thread was counting)"
)


def check_total(who: str, table: BlockTable, counts: Sequence[int], total: int) -> None:
    """Raise :class:`CountsDisagree` unless the block counts ``counts`` (solved from the counters a
    process's runtime wrote) add up to its running total ``total``, none of them negative.

    The counters are exact while a call or a return is under way (:mod:`cbuild.build.placement`):
    a crash in counted code between two calls, or a thread counting when the process ended,
    leaves them and the running total apart, and the counts solved from them wrong (negative
    ones included). Program runs and crashed library calls both check their counts here."""
    expected = sum(c * s for c, s in zip(counts, table.sizes, strict=True))
    if expected != total or any(c < 0 for c in counts):
        raise CountsDisagree(
            f"{who}: running total {total} differs from the block counters' {expected}: "
            f"the counts are inconsistent (a thread still running when the process exited "
            f"was counted as far as it got, or the process ended between two calls)"
        )


def _native_counts(artifact: Artifact, counts_path: Path, table: BlockTable) -> tuple[BlockCounts, int, int]:
    """The native run's counts (summed over the processes it forked), processes and threads."""
    models = artifact.models()
    parts = []
    threads = 1
    for pid, path in [(None, counts_path), *_count_files(counts_path)]:
        part, total, part_threads = _read_counts(path, build_id=artifact.key, table=table, models=models)
        threads = max(threads, part_threads)
        profile = read_profile(path.with_name(path.name + ".profile"), clock_metrics(models), table.functions)
        if profile is not None:
            part = dataclasses.replace(part, profile=profile)
        who = artifact.name if pid is None else f"{artifact.name} (forked process {pid})"
        check_total(who, table, part.counts, total)
        parts.append(part)
    return _summed(parts), len(parts), threads


def _crashed_counts(
    artifact: Artifact, counts_path: Path, table: BlockTable | None, killed: str
) -> tuple[BlockCounts | None, str]:
    """What a program killed by a signal counted until then (its runtime writes its counters on
    fatal signals), or None where it wrote nothing readable, with why for the message. The
    executing models' RISC-V runs were stopped with it: their metrics are unavailable."""
    if not artifact.instrumented or not counts_path.exists():
        return None, ""
    try:
        counts, _, _ = _native_counts(artifact, counts_path, table or artifact.table())
    except CountsDisagree:
        return None, COUNTS_UNKNOWN
    except (ExecutionError, OSError, ValueError):
        return None, ""
    stopped = {
        model: f"the program was killed by {killed}, and its {target} build's run with it"
        for target, doc in artifact.machines().items()
        for model in doc["models"]
    }
    return dataclasses.replace(counts, unavailable={**counts.unavailable, **stopped}), ""


def _with_machine_runs(
    artifact: Artifact,
    machines: Mapping[str, Any],
    counts: BlockCounts,
    runs: Mapping[str, Execution],
    stdout: bytes,
    returncode: int,
) -> BlockCounts:
    """``counts`` with the RISC-V builds' executions (``runs``) and their models' results added."""
    results = dict(counts.results)
    unavailable = dict(counts.unavailable)
    profile = counts.profile
    for target, doc in machines.items():
        if "unavailable" in doc:
            unavailable.update(dict.fromkeys(doc["models"], doc["unavailable"]))
            continue
        run = runs[target]
        if run.error:
            raise ExecutionError(f"the {target} build of {artifact.name} did not finish: {run.error}")
        if run.exit_code != returncode or run.stdout != stdout:
            what = (
                f"exit status {run.exit_code} differs from the native build's {returncode}"
                if run.exit_code != returncode
                else f"output differs from the native build's {_first_difference(run.stdout, stdout)}"
            )
            warnings.warn(
                f"{artifact.name}: the {target} build's {what}; its costs measure a different execution",
                RuntimeWarning,
                stacklevel=3,
            )
        results.update(slot_results(doc["slots"], run.results))
        unavailable.update(slot_unavailable(doc["slots"], run, target))
        profile = with_machine_regions(profile, run.regions, doc.get("clocks", []))
    return dataclasses.replace(counts, machine=dict(runs), results=results, unavailable=unavailable, profile=profile)


#: The most of a failed program's stdout and stderr its error shows (the end of each).
OUTPUT_TAIL = 4000


#: libc++abi's last words when an exception reaches std::terminate.
_UNCAUGHT = re.compile(r"terminating due to uncaught exception of type ([^\n]+)")


def _first_difference(guest: bytes, native: bytes) -> str:
    """``at byte 3 (b'4\\n' against b'8\\n')``: where two outputs part, and up to 16 bytes of each from there."""
    at = next((i for i, (a, b) in enumerate(zip(guest, native, strict=False)) if a != b), min(len(guest), len(native)))
    return f"at byte {at} ({guest[at : at + 16]!r} against {native[at : at + 16]!r})"


def uncaught_exception(signum: int, stderr: bytes) -> str:
    """`` after an uncaught C++ exception: std::out_of_range: vector`` for a process that SIGABRT
    ended after libc++abi reported the exception in ``stderr`` (std::terminate aborts), else ``""``."""
    found = _UNCAUGHT.findall(stderr.decode(errors="replace")) if signum == signal.SIGABRT else []
    return f" after an uncaught C++ exception: {found[-1].strip()}" if found else ""


def signal_name(number: int) -> str:
    """``SIGSEGV`` for 11; ``signal 99`` for a number the platform does not name."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _output_tail(out: bytes, err: bytes) -> str:
    """What a program that failed wrote, for its error: the end of its stdout and of its stderr,
    each under a heading, or a line saying it wrote nothing (output the program still held in
    its buffers when it was killed is lost with it)."""
    parts = []
    for name, data in (("stdout", out), ("stderr", err)):
        if data:
            cut = f" (its last {OUTPUT_TAIL} bytes of {len(data):,})" if len(data) > OUTPUT_TAIL else ""
            parts.append(f"\n--- {name}{cut} ---\n{data[-OUTPUT_TAIL:].decode(errors='replace').rstrip()}")
    return "".join(parts) or "\n(it wrote nothing to stdout or stderr)"


#: The counted C library's heap limit, in bytes (cbuild/runtime/heap_map.c).
HEAP_LIMIT_ENV = "INSTRBUDGET_HEAP_LIMIT"


def check_heap_limit(env: Mapping[str, str]) -> None:
    """A heap limit the measured process would not understand is an error here, not a limit of
    another size there (the C library reads the digits it can)."""
    value = env.get(HEAP_LIMIT_ENV)
    if value is None or value == "":  # unset, as the C library takes an empty value
        return
    if not (isinstance(value, str) and value.isascii() and value.isdigit() and 65536 <= int(value) < 2**63):
        raise CBuildError(
            f"{HEAP_LIMIT_ENV}: expected a number of bytes from 65536 up, such as 67108864 for 64 MiB, got {value!r}"
        )


def run_program(
    artifact: Artifact,
    args: Sequence[object] = (),
    *,
    input: bytes = b"",
    timeout: float | None = 60.0,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    table: BlockTable | None = None,
    max_instr: int | None = None,
    limits: Mapping[str, int] | None = None,
) -> RunResult:
    """Run ``artifact`` with ASLR off (Linux); crashes and timeouts raise with stderr attached.

    ``max_instr`` (IR instructions) and ``limits`` (metric -> limit, for the IR total and
    the cost models' clocks) stop the program before it passes them, raising
    :class:`~cbuild.run.stops.CodeStopped`; the artifact must be a cut-off build, except for
    limits on the clocks of models that execute a RISC-V build: that run stops at the first block
    that would start with the clock past its limit (and the native run with it).

    The program sees ``env`` (default :data:`DEFAULT_ENV`) and its source name as ``argv[0]``.
    It runs in a process group of its own: the run ends when the program's own process exits
    (or times out), and whatever is left of its group is then killed. The counts are the sum
    over the program and the children it forked that exited before it. The artifact's RISC-V
    builds (the executing cost models) run at the same time as the native program, in the
    executor's servers, unless a cut-off on a clock the native build keeps applies.
    """
    if not isinstance(artifact, Artifact):  # a file's path: its counters' table is in the build's Artifact
        raise CBuildError(
            f"run_program takes the Artifact Builder.build(...) returns, not {artifact!r}; a program built "
            "with `cbuild build` runs on its own, with INSTRBUDGET_COUNTS=FILE for its counts"
        )
    if isinstance(args, (str, bytes)):  # each character would be an argument
        raise CBuildError(f"args is a list of the program's arguments, got {args!r}; pass [{args!r}]")
    if not isinstance(input, (bytes, bytearray, memoryview)):
        raise CBuildError(f"input is the program's stdin as bytes, got {type(input).__name__}")
    input = bytes(input)  # the executing models' runs take it to another process
    check_timeout(timeout)
    check_heap_limit(DEFAULT_ENV if env is None else env)  # before any run starts, the RISC-V ones included
    argv = [Path(artifact.name).stem, *map(str, args)]
    what = f"{artifact.name} ({' '.join(argv[1:]) or 'no arguments'})"
    clocks, cutoffs = clock_limits(artifact, requested(max_instr, limits))
    machines = artifact.machines() if artifact.instrumented else {}
    # The RISC-V runs go on beside the native one, unless a cut-off may stop that one early (a
    # program stopped there may run on in the RISC-V build until its timeout). One stopped at a
    # cut-off on its own clock ends the native run.
    early = _MachineRuns(machines, argv, input, timeout, cutoffs, artifact.name) if machines and not clocks else None
    with tempfile.TemporaryDirectory(prefix="instrbudget-run-") as tmp, early or contextlib.nullcontext():
        counts_path = Path(tmp) / "counts"
        if clocks:
            counts_path.with_name("counts.limits").write_text("".join(f"{c} {v}\n" for c, v in clocks.items()))
        child_env = dict(DEFAULT_ENV if env is None else env)
        child_env[COUNTS_ENV] = str(counts_path)
        stdin_path, stdout_path, stderr_path = (Path(tmp) / name for name in ("stdin", "stdout", "stderr"))
        stdin_path.write_bytes(input)
        # Files, not pipes: a child the program leaves behind holding them cannot keep the run going.
        # The program leads a process group of its own: its leftover children go with it.
        with (
            stdin_path.open("rb") as stdin,
            stdout_path.open("wb") as stdout,
            stderr_path.open("wb") as stderr,
            aslr_off(),
        ):
            proc = subprocess.Popen(
                argv,
                executable=artifact.path,
                stdin=stdin,
                stdout=stdout,
                stderr=stderr,
                env=child_env,
                cwd=cwd,
                **own_group(),
            )
        try:
            started = time.monotonic()
            exited = _wait_exit(proc, timeout, early.done if early is not None else None)
            if exited is None and early is not None:  # the RISC-V runs ended first
                # A stop ends the native run with the process group; their errors wait for its end.
                early.stop_first(what, machines)
                left = None if timeout is None else max(0.0, timeout - (time.monotonic() - started))
                exited = _wait_exit(proc, left)
        finally:
            _end_group(proc)
        out, err = stdout_path.read_bytes(), stderr_path.read_bytes()
        stop_path = counts_path.with_name("counts.stop")
        if exited and stop_path.exists():
            stop = read_stop(stop_path, binary=artifact.path, table=table or artifact.table(), models=artifact.models())
            raise CodeStopped(what, stop, out, err)
        if not exited:
            raise ProgramTimeout(f"{what} ran past its {timeout} s timeout and was killed{_output_tail(out, err)}")
        if early is not None and (proc.returncode < 0 or (artifact.instrumented and not counts_path.exists())):
            early.stop_first(what, machines)
        if proc.returncode < 0:
            killed, tail = signal_name(-proc.returncode), _output_tail(out, err)
            status = proc.returncode
            why = uncaught_exception(-status, err)
            crashed, unread = _crashed_counts(artifact, counts_path, table, killed)
            place = program_fault(counts_path.with_name("counts.fault"), artifact.path, -status)
            raise ProgramCrashed(
                f"program {artifact.name} was killed by {killed}{place} (exit status {status}){why}{unread}{tail}",
                counts=crashed,
            )
        counts = None
        processes = threads = 1
        if artifact.instrumented:
            if not counts_path.exists():
                raise ExecutionError(
                    f"{artifact.name} exited with status {proc.returncode} without writing its "
                    "counts: it replaced itself with another program (exec), which counts nothing, or ended "
                    f"through a raw exit system call{_output_tail(out, err)}"
                )
            counts, processes, threads = _native_counts(artifact, counts_path, table or artifact.table())
            if machines:
                machine_runs = early or _MachineRuns(machines, argv, input, timeout, cutoffs, artifact.name)
                runs = machine_runs.wait()
                machine_runs.raise_stop(what, machines)
                counts = _with_machine_runs(artifact, machines, counts, runs, out, proc.returncode)
            warn_if_interleaved(artifact.name, threads, counts)
    return RunResult(tuple(argv[1:]), proc.returncode, out, err, counts, processes, threads)
