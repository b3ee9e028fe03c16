"""``python -m cbuild``: build, run and measure without pytest."""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cbuild.build.blocks import BlockTable
from cbuild.models import default_registry
from cbuild.run.program import read_counts

PROGRAM = """\
#include <stdio.h>
#include <stdlib.h>
int work(int n) { int s = 0; for (int i = 0; i < n; i++) s += i % 7; return s; }
int main(int argc, char **argv) { printf("%d\\n", work(argc > 1 ? atoi(argv[1]) : 10)); return 0; }
"""


def cli(*args: str, cwd: Path, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "cbuild", *args], cwd=cwd, input=stdin, capture_output=True, check=False
    )


def test_cli_run_prints_output_then_cost(tmp_path: Path) -> None:
    (tmp_path / "prog.c").write_text(PROGRAM)
    small = cli("run", "prog.c", "-O", "1", "--", "100", cwd=tmp_path)
    assert small.returncode == 0, small.stderr.decode()
    assert small.stdout == b"295\n"
    assert b"ir_instructions: " in small.stderr
    assert b"  main  " in small.stderr  # work() is inlined into main at -O1


def test_cli_run_puts_a_name_too_long_for_the_terminal_on_a_line_of_its_own(tmp_path: Path) -> None:
    """One long name (a C++ lambda's runs to hundreds of characters) does not pad the other rows."""
    long_name = "count_" + "and_count_again_" * 6
    (tmp_path / "w.c").write_text(
        f"__attribute__((noinline)) int {long_name}(int n) {{ int s = 0; while (n--) s += n; return s; }}\n"
        f"int main(int argc, char **argv) {{ (void)argv; return {long_name}(argc * 50) == 7; }}\n"
    )
    run = subprocess.run(
        [sys.executable, "-m", "cbuild", "run", "w.c", "-O", "1"],
        cwd=tmp_path,
        capture_output=True,
        check=False,
        env={**os.environ, "COLUMNS": "80"},
    )
    lines = run.stderr.decode().splitlines()
    at = lines.index(f"  {long_name}")
    assert lines[at + 1].endswith("%"), lines
    assert all(len(line) <= 80 for line in lines[at + 1 :]), lines


def test_cli_run_top_lists_that_many_and_refuses_a_negative_count(tmp_path: Path) -> None:
    (tmp_path / "w.c").write_text('#include <unistd.h>\nint main(void) { write(1, "hi\\n", 3); return 0; }\n')
    one = cli("run", "w.c", "--top", "1", cwd=tmp_path)
    assert one.returncode == 0, one.stderr.decode()
    assert one.stderr.decode().splitlines()[-3:] == [
        "  main  2  100.0%",
        "calls outside the count (the host's library functions, not counted):",
        "  write  x1",
    ]
    none = cli("run", "w.c", "--top", "0", cwd=tmp_path)
    assert none.stderr.decode().split() == ["ir_instructions:", "2"]  # totals only
    negative = cli("run", "w.c", "--top", "-1", cwd=tmp_path)
    assert negative.returncode == 2
    assert b"argument --top: -1 is negative: give 0 or more" in negative.stderr


def test_cli_output_into_a_closed_pipe_stops_quietly(tmp_path: Path) -> None:
    """``python -m cbuild cache info | head -2``: the reader leaves, the command stops without a traceback."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "cbuild", "cache", "info", "--cache-dir", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    assert proc.stderr is not None
    proc.stdout.close()  # gone before the command writes
    stderr = proc.stderr.read()
    assert proc.wait(timeout=120) == 141
    assert b"Traceback" not in stderr, stderr


def test_cli_run_into_a_closed_pipe_still_says_the_cost(tmp_path: Path) -> None:
    """``python -m cbuild run prog.c | head``: the program's output stops, its cost still comes."""
    (tmp_path / "big.c").write_text(
        '#include <stdio.h>\nint main(void) { for (int i = 0; i < 20000; i++) printf("line %d\\n", i); return 0; }\n'
    )
    assert cli("run", "big.c", cwd=tmp_path).returncode == 0  # built before the pipe is closed
    proc = subprocess.Popen(
        [sys.executable, "-m", "cbuild", "run", "big.c"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None
    assert proc.stderr is not None
    proc.stdout.close()
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 0  # the program's status
    assert "Traceback" not in stderr, stderr
    assert "ir_instructions: " in stderr


def test_cli_run_json_grows_with_the_input(tmp_path: Path) -> None:
    (tmp_path / "prog.c").write_text(PROGRAM)
    docs = []
    for n in ("16", "24", "32"):  # as many digits each: atoi (counted) costs the same
        out = cli("run", "prog.c", "-O", "0", "--json", "--", n, cwd=tmp_path)
        assert out.returncode == 0, out.stderr.decode()
        docs.append(json.loads(out.stdout))  # the document alone: the output is in it
    totals = [d["total"] for d in docs]
    assert totals[2] - totals[1] == totals[1] - totals[0] > 0  # a loop of n iterations at -O0
    assert docs[0]["metric"] == "ir_instructions"
    # The counted printf's functions beside the program's own.
    assert {"main", "work", "atoi [libc]", "printf [libc]"} <= set(docs[0]["functions"])
    assert all(f.endswith(" [libc]") for f in set(docs[0]["functions"]) - {"main", "work"})
    plain = cli("run", "prog.c", "-O", "0", "--", "16", cwd=tmp_path)
    assert plain.stdout.decode() == docs[0]["stdout"] != ""


def test_cli_optimisation_flags_go_through_the_o_option(tmp_path: Path) -> None:
    # -O3 in --cflags would optimise clang's IR at 3 and the instrumented pipeline's at -O's 2.
    (tmp_path / "prog.c").write_text(PROGRAM)
    out = cli("build", "prog.c", "-o", "prog", "--cflags=-Wall -O3", cwd=tmp_path)
    assert out.returncode != 0
    assert "--cflags has '-O3': set the optimisation level with -O 3 instead" in out.stderr.decode()
    assert not (tmp_path / "prog").exists()


def test_cli_build_writes_program_table_and_counts(tmp_path: Path) -> None:
    (tmp_path / "prog.c").write_text(PROGRAM)
    out = cli("build", "prog.c", "-o", "bin/prog", "-D", "UNUSED=1", "--cflags=-std=c11 -Wall", cwd=tmp_path)
    assert out.returncode == 0, out.stderr.decode()
    binary = tmp_path / "bin" / "prog"
    sidecar = tmp_path / "bin" / "prog.instrbudget.json"
    env = dict(os.environ, INSTRBUDGET_COUNTS=str(tmp_path / "counts.bin"))
    run = subprocess.run([str(binary), "5"], capture_output=True, env=env, check=True)
    assert run.stdout == b"10\n"
    table = BlockTable.from_json(json.loads(sidecar.read_text())["table"])
    header = (tmp_path / "counts.bin").read_bytes().split(b"\n", 1)[0].decode().split()
    counts, total = read_counts(tmp_path / "counts.bin", build_id=header[2], table=table)
    assert total == sum(c * b.size for c, b in zip(counts.counts, table.blocks, strict=True)) > 0


def test_cli_build_with_a_model_builds_its_run_time_part_in(tmp_path: Path) -> None:
    """`build --model` as on `run`: the binary's own counts give the same zkvm cycles as `run` (the
    estimate from IR, whose dynamic phase is built into the native binary)."""
    (tmp_path / "prog.c").write_text(PROGRAM)
    out = cli("build", "prog.c", "-o", "prog", "--model", "zkvm:po2=16,execute=false", cwd=tmp_path)
    assert out.returncode == 0, out.stderr.decode()
    assert b"models zkvm)" in out.stderr
    sidecar = json.loads((tmp_path / "prog.instrbudget.json").read_text())
    assert set(sidecar["models"]) == {"zkvm"}
    env = dict(os.environ, INSTRBUDGET_COUNTS=str(tmp_path / "counts.bin"))
    # ASLR off, as `run` runs it: the paging estimate sees where the host's C library keeps `stdout`.
    setarch = [shutil.which("setarch") or "setarch", platform.machine(), "-R"]
    subprocess.run([*setarch, str(tmp_path / "prog"), "50"], capture_output=True, env=env, check=True)
    table = BlockTable.from_json(sidecar["table"])
    header = (tmp_path / "counts.bin").read_bytes().split(b"\n", 1)[0].decode().split()
    counts, _ = read_counts(tmp_path / "counts.bin", build_id=header[2], table=table, models=sidecar["models"])
    model = default_registry().create("zkvm", {"po2": 16, "execute": False})
    built = {cost.metric: cost.total for cost in model.evaluate(counts)}
    ran = cli("run", "prog.c", "--model", "zkvm:po2=16,execute=false", "--json", "--", "50", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr.decode()
    doc = json.loads(ran.stdout)
    assert built == {metric: m["total"] for metric, m in doc["metrics"].items()}
    assert built["zk_cycles"] > built["zk_user_cycles"] > 0

    bad = cli("build", "prog.c", "-o", "prog", "--model", "nope", cwd=tmp_path)
    assert bad.returncode == 2
    assert b"unknown cost model 'nope'; known models: heap, ir-count, pipeline, zkvm" in bad.stderr
    bad = cli("build", "prog.c", "-o", "prog", "--model", "zkvm:segment=16", cwd=tmp_path)
    assert bad.returncode == 2
    assert b"--model zkvm:segment=16: has an unknown key 'segment'; accepted: execute, max_insn_cycles," in bad.stderr
    bad = cli("build", "prog.c", "-o", "prog", "--model", "zkvm:po2=16,po2=17", cwd=tmp_path)
    assert bad.returncode == 2
    assert b"--model zkvm:po2=16,po2=17: po2 is given twice" in bad.stderr
    # An executing model's costs come from a RISC-V build `build` does not write: refused, not a
    # binary whose counts file lacks the metrics asked for.
    for spec, target in (("zkvm", "riscv32"), ("pipeline:machine=rocket", "riscv64")):
        bad = cli("build", "prog.c", "-o", "exec", "--model", spec, cwd=tmp_path)
        assert bad.returncode == 2
        name = spec.split(":")[0]
        sep = "," if ":" in spec else ":"
        assert (
            f"--model {name} measures a {target} build of its own, which `build` does not write: measure it "
            f"with `python -m cbuild run --model {spec} ...`, or build its estimate into the binary with "
            f"--model {spec}{sep}execute=false"
        ) in bad.stderr.decode()
        assert not (tmp_path / "exec").exists()


#: Host-only code: x86 inline assembly, which the riscv32 build of the executing models cannot compile.
X86_ONLY = r"""
#include <stdio.h>
static unsigned swap32(unsigned x) { __asm__("bswap %0" : "+r"(x)); return x; }
int main(void) {
    unsigned s = 0;
    for (unsigned i = 0; i < 1000; i++) s += swap32(i);
    printf("%u\n", s);
    return 0;
}
"""


def test_cli_run_says_a_model_measured_nothing_not_zero(tmp_path: Path) -> None:
    """A model whose RISC-V build fails has no value: `run` says so with the reason and exits 2,
    where it printed 0 cycles and exited 0."""
    (tmp_path / "x86.c").write_text(X86_ONLY)
    ran = cli("run", "x86.c", "--model", "ir-count", "--model", "zkvm", "--top", "1", cwd=tmp_path)
    err = ran.stderr.decode()
    assert ran.returncode == 2, err
    assert ran.stdout == b"%d\n" % (sum(int.from_bytes(i.to_bytes(4, "little"), "big") for i in range(1000)) % 2**32)
    assert "\nir_instructions: " in err  # the model that measured still reports
    assert "\nzk_cycles, zk_user_cycles, zk_paging_cycles, zk_segments: unavailable\n" in err
    assert "zk_cycles: 0" not in err
    reason = "cannot be built for riscv32: unrecognized instruction mnemonic (x86.c:3:"
    assert f"cbuild: zkvm measured nothing: {reason}" in err
    stop = cli("run", "x86.c", "--model", "zkvm", "--stop-at", "zk_cycles=100", "--top", "0", cwd=tmp_path)
    assert stop.returncode == 2
    assert stop.stderr.decode().endswith("cbuild: --stop-at zk_cycles=100 was not checked\n")
    doc = json.loads(cli("run", "x86.c", "--model", "zkvm", "--json", cwd=tmp_path).stdout)
    assert doc["returncode"] == 0
    assert doc["total"] is None
    assert doc["unavailable"]["zkvm"].startswith(reason)
    assert doc["metrics"]["zk_paging_cycles"] == {"total": None, "unavailable": doc["unavailable"]["zkvm"]}
    # Its estimate from IR builds from the host's IR, which has the assembly (it costs nothing there).
    estimated = cli("run", "x86.c", "--model", "zkvm:execute=false", "--json", cwd=tmp_path)
    assert estimated.returncode == 0, estimated.stderr.decode()
    assert json.loads(estimated.stdout)["metrics"]["zk_user_cycles"]["total"] > 3000


def test_cli_build_without_instrumentation_runs_plainly(tmp_path: Path) -> None:
    (tmp_path / "prog.c").write_text(PROGRAM)
    out = cli("build", "prog.c", "-o", "plain", "--no-instrument", cwd=tmp_path)
    assert out.returncode == 0, out.stderr.decode()
    assert b"(not instrumented); block table" in out.stderr  # it said "models ir-count"
    env = dict(os.environ, INSTRBUDGET_COUNTS=str(tmp_path / "counts.bin"))
    run = subprocess.run([str(tmp_path / "plain"), "3"], capture_output=True, env=env, check=True)
    assert run.stdout == b"3\n"
    header = (tmp_path / "counts.bin").read_bytes().split(b"\n", 1)[0].split()
    assert header[3:] == [b"0", b"0", b"0"]  # no counters, nothing counted, no model results


def test_cli_compile_error_exits_2_with_diagnostic(tmp_path: Path) -> None:
    (tmp_path / "bad.c").write_text("int main(void) { return nope; }\n")
    out = cli("run", "bad.c", cwd=tmp_path)
    assert out.returncode == 2
    assert b"bad.c:1:25: error: use of undeclared identifier 'nope'" in out.stderr
    assert b"Traceback" not in out.stderr


def test_cli_build_prints_compiler_warnings_and_stops_on_them_with_w_error(tmp_path: Path) -> None:
    (tmp_path / "warns.c").write_text("int f(int a) {\n    int unused;\n    return a;\n}\n")
    args = ("build", "warns.c", "--shared", "--cflags=-Wall", "-o", "warns.so")
    built = cli(*args, cwd=tmp_path)
    assert built.returncode == 0, built.stderr.decode()
    where = f"{(tmp_path / 'warns.c').resolve()}:2:9: warning: unused variable 'unused'"
    assert built.stderr.startswith(where.encode()), built.stderr.decode()  # as clang wrote it
    stopped = subprocess.run(
        [sys.executable, "-W", "error", "-m", "cbuild", *args], cwd=tmp_path, capture_output=True, check=False
    )
    assert stopped.returncode == 2
    assert b"warning: unused variable 'unused'" in stopped.stderr
    assert stopped.stderr.rstrip().endswith(b"cbuild: the build stopped there: warnings are errors in this run")
    assert b"Traceback" not in stopped.stderr


def test_cli_build_shared_keeps_main_only_when_asked(tmp_path: Path) -> None:
    """The refusal of a library source defining main named keep_main=, which the command line did not
    have."""
    (tmp_path / "lib.c").write_text("int twice(int a) { return 2 * a; }\nint main(void) { return twice(0); }\n")
    refused = cli("build", "lib.c", "--shared", "-o", "lib.so", cwd=tmp_path)
    assert refused.returncode == 2
    assert b"or pass keep_main=True (cbuild build --keep-main) if it belongs in the library" in refused.stderr
    kept = cli("build", "lib.c", "--shared", "--keep-main", "-o", "lib.so", cwd=tmp_path)
    assert kept.returncode == 0, kept.stderr.decode()
    assert (tmp_path / "lib.so").exists()
    program = cli("build", "lib.c", "--keep-main", "-o", "prog", cwd=tmp_path)
    assert program.returncode == 2
    assert b"--keep-main is for a library (--shared)" in program.stderr


def test_the_installed_script_names_itself_in_its_usage(tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "cbuild"  # pip's console script beside the interpreter
    if not script.exists():
        pytest.skip("no cbuild script beside this interpreter (the package is not installed)")
    proc = subprocess.run([str(script), "--help"], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert proc.stdout.startswith("usage: cbuild ")
    assert cli("--help", cwd=tmp_path).stdout.startswith(b"usage: python -m cbuild ")


def test_cli_build_output_that_cannot_be_written_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "prog.c").write_text(PROGRAM)
    (tmp_path / "sub").mkdir()
    into_directory = cli("build", "prog.c", "-o", "sub", cwd=tmp_path)
    assert (into_directory.returncode, into_directory.stderr) == (2, b"cbuild: cannot write sub: Is a directory\n")
    through_a_file = cli("build", "prog.c", "-o", "prog.c/x", cwd=tmp_path)
    assert through_a_file.returncode == 2
    assert through_a_file.stderr == b"cbuild: cannot write prog.c/x: prog.c is not a directory\n"
    # An output that is a source would replace it (clang and gcc refuse too).
    source = (tmp_path / "prog.c").read_bytes()
    over = cli("build", "prog.c", "-o", "./prog.c", cwd=tmp_path)
    assert over.returncode == 2
    assert over.stderr == (
        b"cbuild: -o prog.c is the source prog.c: writing it would replace it; give the output a path of its own\n"
    )
    assert (tmp_path / "prog.c").read_bytes() == source
    assert sorted(p.name for p in tmp_path.iterdir()) == ["prog.c", "sub"]  # no scratch file left


def test_cli_merge_and_history_do_not_write_over_what_they_read(tmp_path: Path) -> None:
    """`merge -o` naming one of its inputs or the project's baseline, and `history --html` naming
    the baseline it reads, replaced them (the next session then found no baseline it could read)."""
    (tmp_path / "pyproject.toml").write_text("[tool.instrbudget]\n")
    baseline = tmp_path / ".instrbudget" / "baseline.json"
    baseline.parent.mkdir()
    baseline.write_text('{"version": 1, "fingerprint": {}, "tests": {}}\n')
    shard = tmp_path / "a.json"
    shard.write_text("{}")
    kept = {path: path.read_bytes() for path in (baseline, shard)}
    for output, what in (("a.json", "the input a.json"), (".instrbudget/baseline.json", "the project's baseline")):
        done = cli("merge", "a.json", "-o", output, cwd=tmp_path)
        assert done.returncode == 2
        assert f"cbuild: -o {output} is {what}: writing it would replace it".encode() in done.stderr
    twice = cli("merge", "a.json", "./a.json", "-o", "out.json", cwd=tmp_path)  # two inputs, one file: merge's to say
    assert b"writing it would replace" not in twice.stderr
    done = cli("history", "--html", ".instrbudget/baseline.json", cwd=tmp_path)
    assert done.returncode == 2
    assert (
        b"cbuild: --html .instrbudget/baseline.json is the baseline it reads: writing it would replace it"
        in done.stderr
    )
    assert {path: path.read_bytes() for path in kept} == kept


STARTS_THEN_LOOPS = """\
#include <stdio.h>
#include <stdlib.h>
static long work(long n) { long s = 0; for (long i = 0; i < n; i++) s += i * i % 7; return s; }
int main(int argc, char **argv) {
    printf("start\\n");
    fflush(stdout);
    printf("%ld\\n", work(atol(argv[1])));
    return 0;
}
"""


def test_cli_run_stops_at_a_cut_off_and_says_where(tmp_path: Path) -> None:
    # A run that would take minutes ends at its cut-off, exactly and the same every time: exit 2,
    # what the program wrote before, and where it stopped.
    (tmp_path / "prog.c").write_text(STARTS_THEN_LOOPS)
    whole = cli("run", "prog.c", "--json", "--", "1000", cwd=tmp_path)
    assert whole.returncode == 0, whole.stderr.decode()
    total = json.loads(whole.stdout)["total"]
    roomy = cli("run", "prog.c", "--json", "--stop-at", str(total), "--", "1000", cwd=tmp_path)
    assert json.loads(roomy.stdout)["total"] == total  # a cut-off it never reaches changes nothing
    stopped = cli("run", "prog.c", "--stop-at", "5_000", "--top", "0", "--", "100000000000", cwd=tmp_path)
    assert stopped.returncode == 2
    assert stopped.stdout == b"start\n"
    said = stopped.stderr.decode().splitlines()[-1]
    assert re.fullmatch(
        r"cbuild: prog\.c \(100000000000\): stopped after [\d,]+ IR instructions \(cut-off 5,000\) in .*", said
    )
    count = int(said.split("stopped after ")[1].split()[0].replace(",", ""))
    assert 4_000 < count <= 5_000
    again = cli("run", "prog.c", "--stop-at", "5000", "--json", "--", "100000000000", cwd=tmp_path)
    assert again.returncode == 2
    doc = json.loads(again.stdout)
    assert doc["kind"] == "CodeStopped"
    assert doc["stopped"]["metric"] == "ir_instructions"
    assert (doc["stopped"]["count"], doc["stopped"]["limit"]) == (count, 5000)


def test_cli_run_stops_at_a_cut_off_on_a_models_clock(tmp_path: Path) -> None:
    (tmp_path / "prog.c").write_text(STARTS_THEN_LOOPS)
    args = ("run", "prog.c", "--model", "zkvm", "--stop-at", "zk_cycles=20000", "--top", "0", "--", "100000000")
    stopped = cli(*args, cwd=tmp_path)
    assert stopped.returncode == 2, stopped.stderr.decode()
    assert stopped.stdout == b"start\n"
    assert re.search(r"stopped after [\d,]+ zk_cycles \(cut-off 20,000\) in ", stopped.stderr.decode())


@pytest.mark.parametrize(
    ("given", "why"),
    [
        ("5x", "--stop-at 5x: expected N or METRIC=N, N a count of 0 or more"),
        ("=5", "--stop-at =5: expected N or METRIC=N, N a count of 0 or more"),
        ("-1", "--stop-at -1: expected N or METRIC=N, N a count of 0 or more"),
        ("zk_cycles=5", "prog.c: no limit can be set on 'zk_cycles'; metrics with a cut-off here: ir_instructions"),
    ],
)
def test_cli_run_refuses_a_cut_off_it_cannot_check(tmp_path: Path, given: str, why: str) -> None:
    (tmp_path / "prog.c").write_text(STARTS_THEN_LOOPS)
    out = cli("run", "prog.c", "--stop-at", given, "--", "10", cwd=tmp_path)
    assert out.returncode == 2
    assert out.stderr.decode().splitlines()[-1] == f"cbuild: {why}"
    assert out.stdout == b""


def test_cli_run_json_without_instrumentation_is_refused(tmp_path: Path) -> None:
    # It printed the program's output where a script expected the JSON document.
    (tmp_path / "prog.c").write_text(PROGRAM)
    out = cli("run", "prog.c", "--no-instrument", "--json", cwd=tmp_path)
    why = "--json prints the costs, which --no-instrument does not measure: give one of them"
    assert out.returncode == 2
    assert json.loads(out.stdout) == {"error": why, "kind": "CBuildError", "returncode": None}
    assert out.stderr == f"cbuild: {why}\n".encode()


@pytest.mark.parametrize("command", ["build", "run"])
def test_cli_a_model_without_instrumentation_is_refused(tmp_path: Path, command: str) -> None:
    # The model was dropped without a word: the build had no counting code to measure it with.
    (tmp_path / "prog.c").write_text(PROGRAM)
    output = ["-o", "a.out"] if command == "build" else []
    out = cli(command, "prog.c", *output, "--no-instrument", "--model", "pipeline", cwd=tmp_path)
    assert out.returncode == 2
    assert out.stderr == b"cbuild: --model pipeline measures costs, which --no-instrument does not: give one of them\n"
    assert not (tmp_path / "a.out").exists()


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def test_cli_run_terminated_ends_its_program(tmp_path: Path) -> None:
    # SIGTERM (a CI step's time limit) ended cbuild at once and left the program running, orphaned.
    import signal
    import time

    (tmp_path / "spin.c").write_text("int main(void) { volatile unsigned long x = 0; for (;;) x++; }\n")
    assert cli("build", "spin.c", "-o", "spin", cwd=tmp_path).returncode == 0  # built (cached) before
    proc = subprocess.Popen(
        [sys.executable, "-m", "cbuild", "run", "spin.c"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while not (programs := _children(proc.pid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert programs, "the program did not start"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 128 + signal.SIGTERM
    time.sleep(0.2)
    assert not [pid for pid in programs if Path(f"/proc/{pid}").exists() and "Z" not in _state(pid)]


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


REGIONS_AND_HEAP = r"""
#include <instrbudget.h>
#include <stdio.h>
#include <stdlib.h>
int main(void) {
    INSTRBUDGET_REGION_START("first");
    volatile int s = 0;
    for (int i = 0; i < 10; i++) s += i;
    INSTRBUDGET_REGION_NEXT("second");
    for (int i = 0; i < 100; i++) s += i;
    INSTRBUDGET_REGION_STOP();
    printf("%p\n", malloc(100u << 20));
    return 0;
}
"""


def test_cli_run_takes_the_programs_environment_and_shows_its_regions(tmp_path: Path) -> None:
    """The program's environment is fixed, so INSTRBUDGET_HEAP_LIMIT in the caller's was ignored
    without a word: --env sets it. The regions of its markers were measured and never shown."""
    (tmp_path / "prog.c").write_text(REGIONS_AND_HEAP)
    plain = cli("run", "prog.c", cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout == b"0x4000001010\n"
    assert b"  regions:\n    first    30\n    second  461\n" in plain.stderr
    limited = cli("run", "prog.c", "--env", "INSTRBUDGET_HEAP_LIMIT=67108864", "--json", cwd=tmp_path)
    doc = json.loads(limited.stdout)
    assert doc["stdout"] == "0\n"  # %p of NULL
    assert doc["metrics"]["ir_instructions"]["regions"] == {"first": 30, "second": 461}
    bad = cli("run", "prog.c", "--env", "NOEQUALS", cwd=tmp_path)
    assert (bad.returncode, bad.stderr) == (2, b"cbuild: --env NOEQUALS: expected NAME=VALUE\n")


def test_cli_run_json_of_a_crash_is_a_document_saying_why(tmp_path: Path) -> None:
    (tmp_path / "crash.c").write_text("int main(void) { volatile int *p = 0; return *p; }\n")
    run = cli("run", "crash.c", "--json", cwd=tmp_path)
    assert run.returncode == 2
    doc = json.loads(run.stdout)
    assert doc["kind"] == "ProgramCrashed"
    assert doc["returncode"] is None
    assert doc["error"].startswith("program crash.c was killed by SIGSEGV in main (crash.c:1)")


def test_cli_arguments_after_a_double_dash_are_for_run_alone(tmp_path: Path) -> None:
    (tmp_path / "prog.c").write_text("int main(void) { return 0; }\n")
    built = cli("build", "prog.c", "-o", "prog", "--", "ignored", cwd=tmp_path)
    assert (built.returncode, built.stderr) == (
        2,
        b"cbuild: arguments after -- are the program's, for run alone: ignored\n",
    )
    assert not (tmp_path / "prog").exists()
    timeout = cli("run", "prog.c", "--timeout", "-1", cwd=tmp_path)
    assert timeout.returncode == 2
    assert b"-1 is not 0 (no timeout) or more seconds" in timeout.stderr


def test_the_python_api_names_a_wrong_argument(tmp_path: Path) -> None:
    """A path where a list of sources or an Artifact goes failed with "/ is a directory" or an
    AttributeError from inside the engine."""
    from cbuild import Builder, CBuildError, Library, run_program

    with pytest.raises(
        CBuildError, match=r"^sources is a list of paths: build\(\['prog.c'\]\), not build\('prog.c'\)$"
    ):
        Builder(cache_dir=tmp_path / "cache").build("prog.c")
    with pytest.raises(CBuildError, match=r"^run_program takes the Artifact Builder.build\(...\) returns, not 'prog'"):
        run_program("prog")  # type: ignore[arg-type]
    with pytest.raises(CBuildError, match=r"^Library takes the Artifact Builder.build\(..., kind='library'\) returns"):
        Library(Path("libx.so"))  # type: ignore[arg-type]
