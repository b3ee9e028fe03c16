"""Per-function inclusive costs, call paths, source lines, flame-graph files, diffs and reports."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cbuild import Builder, BuildOptions, run_program
from cbuild.models import default_registry
from cbuild.report.attribution import attributed
from cbuild.report.flamegraph import collapsed, speedscope

DATA = Path(__file__).parent / "data"
EXAMPLE = Path(__file__).parent.parent / "example_project"


def profiled(builder: Builder, n: int):  # type: ignore[no-untyped-def]
    models = [default_registry().create("ir-count")]
    artifact = builder.build([DATA / "calls.c"], options=BuildOptions(calls=True), models=models)
    run = run_program(artifact, [n])
    assert run.counts is not None
    return run.counts, attributed(models, [run.counts])["ir_instructions"]


def test_call_paths_add_up_and_agree_with_the_block_counts(builder: Builder) -> None:
    counts, cost = profiled(builder, 12)
    # Every instruction belongs to exactly one call path.
    assert sum(cost.stacks.values()) == cost.total
    assert cost.inclusive["main"] == cost.total
    # A function's inclusive cost is what all paths through it spent (its outermost activations).
    for function, inclusive in cost.inclusive.items():
        assert inclusive == sum(v for path, v in cost.stacks.items() if function in path.split(";")), function
    # Calls counted by the hooks equal the executions of each function's entry block.
    table = counts.table
    entry_counts = {}
    for block, count in zip(table.blocks, counts.counts, strict=True):
        entry_counts.setdefault(block.function, count)
    assert cost.calls == {f: c for f, c in entry_counts.items() if c}
    assert cost.inclusive["fib"] == sum(v for p, v in cost.stacks.items() if p.startswith("main;fib"))
    assert cost.inclusive["fib"] > cost.functions["fib"]  # it calls leaf


def test_frames_left_by_longjmp_are_closed(builder: Builder) -> None:
    _, cost = profiled(builder, 5)
    dives = [p for p in cost.stacks if p.startswith("main;dive")]
    assert dives, cost.stacks
    assert max(p.count("dive") for p in dives) >= 2  # real recursion, not a static call graph
    # After the longjmp, main's own work and its last call to leaf are main's again.
    assert "main;leaf" in cost.stacks
    assert sum(cost.stacks.values()) == cost.total


def test_profiles_cost_nothing_in_the_counts(builder: Builder) -> None:
    models = [default_registry().create("ir-count")]
    plain = run_program(builder.build([DATA / "calls.c"], models=models), [10])
    _, cost = profiled(builder, 10)
    assert plain.counts is not None
    assert attributed(models, [plain.counts])["ir_instructions"].total == cost.total


def test_source_lines_add_up_to_the_total(builder: Builder) -> None:
    _, cost = profiled(builder, 10)
    assert sum(v for per_line in cost.lines.values() for v in per_line.values()) == cost.total
    (function, where, _), *_ = cost.top_lines(1, "fib")
    assert function == "fib"
    assert re.fullmatch(r".*calls\.c:1[01]", where), where


def test_flamegraph_formats() -> None:
    stacks = {"main": 3, "main;parse": 10, "main;parse;next": 7, "main;idle": 0}
    assert collapsed(stacks) == "main 3\nmain;parse 10\nmain;parse;next 7\n"
    doc = speedscope("t", {"ir_instructions": stacks}, exporter="x")
    (profile,) = doc["profiles"]
    names = [f["name"] for f in doc["shared"]["frames"]]
    assert [[names[i] for i in s] for s in profile["samples"]] == [
        ["main"],
        ["main", "parse"],
        ["main", "parse", "next"],
    ]
    assert profile["weights"] == [3, 10, 7]
    assert profile["endValue"] == 20


def test_example_profiles_open_in_speedscope(pytester: pytest.Pytester, tmp_path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema", reason="validating against speedscope's schema needs jsonschema")
    schema = json.loads((DATA / "speedscope-file-format-schema.json").read_text())
    pytester.makefile(".c", calls=(DATA / "calls.c").read_text())
    pytester.makepyfile(test_p="def test_calls(cbuild):\n    cbuild.program('calls.c').run(['8'])\n")
    out = tmp_path / "profiles"
    result = pytester.runpytest("-p", "no:cacheprovider", f"--instrbudget-profile-dir={out}")
    result.assert_outcomes(passed=1)
    (document,) = out.glob("*.speedscope.json")
    doc = json.loads(document.read_text())
    jsonschema.validate(doc, schema)
    assert doc["profiles"][0]["name"] == "test_p.py::test_calls (ir_instructions)"
    text = (out / "test_p.py__test_calls.ir_instructions.collapsed").read_text()
    # Frames may contain spaces (``atoi [libc]``, C++ signatures): the count follows the last one.
    assert all(re.fullmatch(r"[^;]+(;[^;]+)* \d+", line) for line in text.splitlines())
    assert "main;fib;fib;leaf " in text


def test_relative_output_paths_are_the_invocation_directorys_whatever_a_test_changes_to(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    # A test that changes directory (monkeypatch.chdir, os.chdir) is still running when its
    # profile is written: a relative --instrbudget-profile-dir went under that directory.
    pytester.makefile(".c", calls=(DATA / "calls.c").read_text())
    away = tmp_path / "away"
    away.mkdir()
    pytester.makepyfile(
        test_p=f"def test_calls(cbuild, monkeypatch):\n    prog = cbuild.program('calls.c')\n"
        f"    monkeypatch.chdir({str(away)!r})\n    prog.run(['8'])\n"
    )
    # (The JSON, HTML and markdown reports are written at the session's end, after monkeypatch
    # has changed back; the profile is written while the test's directory is still in force.)
    result = pytester.runpytest("-p", "no:cacheprovider", "--instrbudget-profile-dir=out/profiles")
    result.assert_outcomes(passed=1)
    assert (pytester.path / "out" / "profiles" / "test_p.py__test_calls.ir_instructions.collapsed").is_file()
    assert not list(away.iterdir())


def test_diff_and_markdown(pytester: pytest.Pytester) -> None:
    pytester.makefile(".c", calls=(DATA / "calls.c").read_text())
    pytester.makepyfile(
        test_d="import pytest\n\n@pytest.mark.parametrize('n', [6, 7])\n"
        "def test_calls(cbuild, n):\n    cbuild.program('calls.c').run([str(n)])\n"
    )
    pytester.runpytest("-p", "no:cacheprovider", "--instrbudget-json=old.json").assert_outcomes(passed=2)
    pytester.makefile(".c", calls=(DATA / "calls.c").read_text().replace("x * 3 + 1", "x * x * 3 + x / 7 + 1"))
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--instrbudget-json=new.json", "--instrbudget-markdown=summary.md"
    )
    result.assert_outcomes(passed=2)
    cli = [sys.executable, "-m", "cbuild", "diff", "old.json", "new.json"]
    proc = subprocess.run(cli, capture_output=True, text=True, cwd=pytester.path, check=False)
    assert proc.returncode == 1
    assert re.search(r"test_d.py::test_calls\[6\]  ir_instructions: [\d,]+ -> [\d,]+ \+\d+\.\d+%", proc.stdout)
    assert re.search(r"    leaf  \+\d+", proc.stdout)
    proc = subprocess.run([*cli, "--markdown"], capture_output=True, text=True, cwd=pytester.path, check=False)
    assert proc.stdout.startswith("| test | metric | old | new | change | functions that changed most |")
    same = subprocess.run([*cli[:-1], "old.json"], capture_output=True, text=True, cwd=pytester.path, check=False)
    assert (same.returncode, same.stdout) == (0, "no differences\n")
    summary = (pytester.path / "summary.md").read_text()
    assert summary.startswith("## instrbudget")
    assert summary.splitlines()[4] == "| test | ir_instructions | status |"
    assert re.search(r"^\| `test_d.py::test_calls\[6\]` \| [\d,]+ \| new \|$", summary, re.M)


def test_diff_of_a_baseline_and_a_results_document_pairs_library_functions(pytester: pytest.Pytester) -> None:
    """The CI workflow's "what changed" step diffs the committed baseline (functions by symbol)
    with the run's JSON (functions by readable name): ``strtol [libc]`` is one function in both."""
    pytester.makefile(".c", calls=(DATA / "calls.c").read_text())
    pytester.makepyfile(test_d="def test_calls(cbuild):\n    cbuild.program('calls.c').run(['6'])\n")
    pytester.runpytest("-p", "no:cacheprovider", "--instrbudget-update").assert_outcomes(passed=1)
    baseline = json.loads((pytester.path / ".instrbudget" / "baseline.json").read_text())
    assert "__instrbudget_libc_strtol" in baseline["tests"]["test_d.py::test_calls"]["ir_instructions"]["functions"]
    pytester.makefile(".c", calls=(DATA / "calls.c").read_text().replace("x * 3 + 1", "x * x * 3 + x / 7 + 1"))
    pytester.runpytest("-p", "no:cacheprovider", "--instrbudget-json=new.json").assert_outcomes(passed=1)
    cli = [sys.executable, "-m", "cbuild", "diff", ".instrbudget/baseline.json", "new.json"]
    proc = subprocess.run(cli, capture_output=True, text=True, cwd=pytester.path, check=False)
    assert proc.returncode == 1, proc.stderr
    assert re.search(r"    leaf  \+\d+", proc.stdout)
    assert "libc" not in proc.stdout  # strtol did the same work: not a change, let alone two
    markdown = subprocess.run([*cli, "--markdown"], capture_output=True, text=True, cwd=pytester.path, check=False)
    assert "libc" not in markdown.stdout


def test_report_functions_shows_inclusive_costs_and_calls(pytester: pytest.Pytester) -> None:
    pytester.makefile(".c", calls=(DATA / "calls.c").read_text())
    pytester.makepyfile(test_r="def test_calls(cbuild):\n    cbuild.program('calls.c').run(['8'])\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--instrbudget-report=functions,lines")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*instrbudget functions*",
            "test_r.py::test_calls",
            "  ir_instructions  (total *)",
            "    function  *exclusive  inclusive  calls",
            "    fib  * * *",
        ]
    )
    result.stdout.fnmatch_lines(["*instrbudget lines*", "test_r.py::test_calls", "*calls.c:*(fib)*"])
    # The counted library's lines are named by the package's path, wherever it was compiled from.
    result.stdout.fnmatch_lines(["    cbuild/libc/convert.c:* (strtol ?libc?) *"])


CXX_THROW = """
#include <stdexcept>
__attribute__((noinline)) int check(int x) { if (x > 3) throw std::runtime_error("too big"); return x * 2; }
__attribute__((noinline)) int walk(int n) { int s = 0; for (int i = 0; i < n; i++) s += check(i); return s; }
int main(int argc, char **) {
    int r = 0;
    try { r = walk(argc + 8); } catch (const std::exception &) { r = -1; }
    return walk(3) + (r < 0);
}
"""


def test_frames_left_by_an_exception_are_closed(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    models = [default_registry().create("ir-count")]
    artifact = builder.build([write("throw.cc", CXX_THROW)], options=BuildOptions(calls=True), models=models)
    run = run_program(artifact)
    assert run.counts is not None
    cost = attributed(models, [run.counts])["ir_instructions"]
    assert sum(cost.stacks.values()) == cost.total
    assert cost.calls["_Z4walki"] == 2
    assert cost.inclusive["main"] == cost.total
    # The second walk() runs from main, not from inside the first walk that the exception left.
    assert not any(p.startswith("main;_Z4walki;_Z4walki") for p in cost.stacks)


def test_library_lines_are_the_counted_libraries_and_the_toolchains_headers_wherever_they_are(
    tmp_path: Path,
) -> None:
    """Failure messages add the project's own lines where library code is costliest: what is
    library code depends on where a file is, not on how the debug information names it."""
    from cbuild.build.toolchain import zig_lib
    from cbuild.models.costs import library_line

    vector = zig_lib() / "libcxx" / "include" / "vector"
    assert library_line("__instrbudget_libc_strlen", "cbuild/libc/string.c:135", tmp_path)
    assert library_line("main", "quadratic.c:0", tmp_path)  # no source line
    assert library_line("_ZNSt3__16vectorIiE9push_backEOi", f"{vector}:12", tmp_path)
    # The wheel inside the project (a .venv in its root): its headers are named relative to it.
    inside = zig_lib().parent.parent
    assert library_line("push_back", f"{vector.relative_to(inside)}:12", inside)
    assert library_line("f", "/usr/include/stdio.h:3", tmp_path)
    # A cached build made in another environment names that environment's wheel.
    assert library_line(
        "f", "/elsewhere/.venv/lib/python3.12/site-packages/ziglang/lib/libcxx/include/string:9", tmp_path
    )
    # The project's sources, under the root or beside it (a build of ../csrc/q.c).
    assert not library_line("main", "quadratic.c:8", tmp_path)
    assert not library_line("main", "src/deep/dir/q.c:8", tmp_path)
    assert not library_line("main", f"{tmp_path.parent / 'csrc' / 'q.c'}:8", tmp_path)
    assert not library_line("count (a.c)", "../csrc/a.c:4", tmp_path)


def test_toolchain_headers_are_named_by_their_library_not_where_the_wheel_is() -> None:
    """A libc++ header's line read /work/.venv/lib/python3.11/site-packages/ziglang/lib/libcxx/
    include/__algorithm/sort.h:600 in failure messages and line reports: past 80 columns, and
    different in every environment."""
    from cbuild.build.toolchain import zig_lib
    from cbuild.models.costs import line_label

    sort = zig_lib() / "libcxx" / "include" / "__algorithm" / "sort.h"
    assert line_label(f"{sort}:600") == "libc++/__algorithm/sort.h:600"
    elsewhere = "/elsewhere/.venv/lib/python3.12/site-packages/ziglang/lib"
    assert line_label(f"{elsewhere}/libcxxabi/include/cxxabi.h:4") == "libc++abi/cxxabi.h:4"
    assert line_label(f"{elsewhere}/libc/include/generic-glibc/bits/string.h:0") == (
        "zig/libc/include/generic-glibc/bits/string.h (no source line)"
    )
    assert line_label("src/sort.c:34") == "src/sort.c:34"
    assert line_label("/usr/include/stdio.h:3") == "/usr/include/stdio.h:3"


def test_diff_lists_numbered_tests_with_numbers_compared_as_numbers() -> None:
    from cbuild.report.diff import Entry, changes, only_in

    names = ["test_sum[1000]", "test_sum[100]", "test_sum[10]", "test_sum[9]"]
    old = {name: {"ir_instructions": Entry(1)} for name in names}
    new = {name: {"ir_instructions": Entry(2)} for name in names[:3]}
    assert [c.test for c in changes(old, new)] == ["test_sum[10]", "test_sum[100]", "test_sum[1000]"]
    old["test_sum[90]"] = old["test_sum[9]"]
    assert only_in(old, new) == ["test_sum[9]", "test_sum[90]"]


def test_diff_leaves_out_tests_that_did_not_complete(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A test that timed out (value 0, or partial counts) in one run read as a change of -100%;
    a file that is not UTF-8 was a traceback."""
    from cbuild.cli import main

    def document(path: Path, value: int, completed: bool) -> Path:
        metric = {"value": value, "functions": {}, "regions": {}}
        tests = {
            "t.py::spin": {"completed": completed, "metrics": {"ir_instructions": metric}},
            "t.py::fine": {"completed": True, "metrics": {"ir_instructions": {"value": 5, "functions": {}}}},
        }
        path.write_text(json.dumps({"tests": tests}))
        return path

    done, stopped = document(tmp_path / "a.json", 3075, True), document(tmp_path / "b.json", 0, False)
    for pair in ([done, stopped], [stopped, done]):
        assert main(["diff", *map(str, pair), "--width", "300"]) == 0
        out, err = capsys.readouterr()
        assert out == "no differences\n"
        assert f"1 test(s) did not complete in {stopped}, not compared: t.py::spin" in err
        assert main(["diff", *map(str, pair), "--width", "60"]) == 0
        assert all(len(line) <= 60 or " " not in line.strip() for line in capsys.readouterr().err.splitlines())
        assert "only in" not in err
        assert "new in" not in err
    binary = tmp_path / "bin.json"
    binary.write_bytes(b"\xff\xfe")
    assert main(["diff", str(binary), str(done)]) == 2
    assert f"cbuild: {binary} is not valid JSON: byte 0 is not UTF-8 text" in capsys.readouterr().err


def test_diff_says_a_metric_a_model_could_not_measure_is_unavailable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A metric measured in one run and unavailable in the other (its model could not build the
    code): the total reads ``-`` and a note says it was not measured, where every function read as
    falling to 0 (``main  -12,015  (12,015 -> 0)``)."""
    from cbuild.cli import main

    ir = {"value": 100, "functions": {"main": 100}}
    zk = {"value": 14_118, "functions": {"main": 12_015, "memcpy": 2_103}}
    why = {"model": "zkvm", "reason": "cannot be built for riscv32: unrecognized instruction mnemonic"}
    measured = {"t.py::x86": {"completed": True, "metrics": {"ir_instructions": ir, "zk_cycles": zk}}}
    missing = {"t.py::x86": {"completed": True, "metrics": {"ir_instructions": ir}, "unavailable": {"zk_cycles": why}}}
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(json.dumps({"tests": measured}))
    new.write_text(json.dumps({"tests": missing}))
    assert main(["diff", str(old), str(new), "--width", "80"]) == 1
    out, err = capsys.readouterr()
    assert out == "t.py::x86  zk_cycles: 14,118 -> -\n"
    assert f"zk_cycles unavailable in {new} in 1 test(s), not compared: t.py::x86" in err.replace("\n  ", " ")
    assert main(["diff", str(old), str(new), "--markdown"]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == "| `t.py::x86` | zk_cycles | 14,118 | - |  |  |"


def test_diff_leaves_out_metrics_of_a_model_configured_otherwise(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two runs whose pipeline model had other parameters: its cycles were compared as if they were
    the same measurement (+4000%, no word); the other metrics still compare."""
    from cbuild.cli import main

    def document(path: Path, machine: str, cycles: int, instructions: int, clang: str = "22.1.8") -> Path:
        fingerprint = {
            "clang": clang,
            "llvm": "22.1.0",
            "pipeline": "2",
            "target": "x86_64-linux-gnu",
            "models": f"ir-count version=1; pipeline version=3 machine='{machine}'",
        }
        metrics = {"ir_instructions": {"value": instructions}, "pipeline_cycles": {"value": cycles}}
        doc = {
            "fingerprint": fingerprint,
            "metric_models": {"ir_instructions": "ir-count", "pipeline_cycles": "pipeline"},
            "tests": {"t.py::work": {"completed": True, "metrics": metrics}},
        }
        path.write_text(json.dumps(doc))
        return path

    old = document(tmp_path / "a.json", "inorder5", 100, 50)
    new = document(tmp_path / "b.json", "rocket", 4100, 60)
    assert main(["diff", str(old), str(new)]) == 1
    out, err = capsys.readouterr()
    assert "pipeline_cycles" not in out
    assert "ir_instructions" in out
    assert "+20" in out
    assert (
        f"cbuild: pipeline_cycles left out: its model differs (machine: 'inorder5' in {old}, 'rocket' in {new})"
    ) in err
    other = document(tmp_path / "c.json", "inorder5", 100, 60, clang="23.1.0")
    assert main(["diff", str(old), str(other)]) == 1
    err = capsys.readouterr().err
    assert f"cbuild: {old} and {other} were measured with other toolchains or build settings (differs in: clang)" in err


def test_diff_that_compared_nothing_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A diff against a document of no tests, or of other tests only, said "no differences" and exited
    0: a CI step gating on it passed without comparing anything."""
    from cbuild.cli import main

    def document(path: Path, tests: dict[str, dict[str, int]]) -> Path:
        path.write_text(
            json.dumps(
                {
                    "tests": {
                        name: {"completed": True, "metrics": {m: {"value": v} for m, v in metrics.items()}}
                        for name, metrics in tests.items()
                    }
                }
            )
        )
        return path

    full = document(tmp_path / "full.json", {"t.py::a": {"ir_instructions": 5}, "t.py::b": {"ir_instructions": 7}})
    empty = document(tmp_path / "empty.json", {})
    other = document(tmp_path / "other.json", {"t.py::c": {"ir_instructions": 5}})
    zk_only = document(tmp_path / "zk.json", {"t.py::a": {"zk_cycles": 9}})
    for pair in ([full, empty], [empty, full], [full, other], [full, zk_only], [empty, empty]):
        assert main(["diff", *map(str, pair)]) == 2
        out, err = capsys.readouterr()
        assert out == "nothing compared\n"
        assert f"cbuild: nothing was compared: no test has a metric measured alike in {pair[0]} and {pair[1]}" in err
    same = document(tmp_path / "same.json", {"t.py::a": {"ir_instructions": 5}})
    assert main(["diff", str(full), str(same)]) == 0
    out, err = capsys.readouterr()
    assert out == "no differences\n"
    assert "1 test(s) only in" in err


def test_calls_of_a_library_function_are_counted_per_line_of_the_caller(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    """Which lines call strlen, and how often: exact from the block counts (its table keeps the
    calls of the build's own functions with their lines), so a failure can name the loop condition
    that made a program quadratic."""
    from cbuild.build.blocks import BlockTable
    from cbuild.models.costs import call_sites

    source = write(
        "calls.c",
        "#include <stdio.h>\n"
        "#include <string.h>\n"
        "#include <stdlib.h>\n"
        "int main(int argc, char **argv) {\n"
        "    int n = atoi(argv[1]);\n"
        "    char *s = malloc(n + 1);\n"
        "    memset(s, 'a', n); s[n] = 0;\n"
        "    size_t k = 0;\n"
        "    for (size_t i = 0; i < strlen(s); i++) k += i;\n"
        '    printf("%zu\\n", k + strlen(s));\n'
        "    free(s);\n"
        "    return 0;\n"
        "}\n",
    )
    artifact = builder.build([source], options=BuildOptions(opt_level="0"))
    assert any(block.calls_to for block in artifact.table().blocks)  # read from the table beside it
    assert BlockTable.from_json(artifact.table().to_json()).blocks == artifact.table().blocks
    for n in (10, 100):
        result = run_program(artifact, [n])
        assert result.counts is not None
        sites = call_sites(result.counts)
        strlen = {
            (caller, where.rsplit("/", 1)[-1]): calls
            for (caller, where), calls in sites["__instrbudget_libc_strlen"].items()
        }
        # The loop's condition, once per round and once more; the printf's argument, once.
        assert strlen == {("main", "calls.c:9"): n + 1, ("main", "calls.c:10"): 1}
        printf = {where.rsplit("/", 1)[-1]: calls for (_, where), calls in sites["__instrbudget_libc_printf"].items()}
        assert printf == {"calls.c:10": 1}
        # Inside the counted library: printf's own calls, at its own lines.
        assert any(caller == "__instrbudget_libc_printf" for site in sites.values() for caller, _ in site)


def test_a_call_inlined_from_a_header_is_at_the_callers_own_line(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    """A call of the build's own function inlined from a header (a helper of the project's, as
    ``std::sort`` is libc++'s) is named at the line of the caller's own source that makes it, not
    at the header's line."""
    from cbuild.models.costs import call_sites

    write(
        "helper.h",
        "#include <string.h>\n"
        "static inline __attribute__((always_inline)) size_t len_of(const char *s) {\n"
        "    return strlen(s);\n"
        "}\n",
    )
    source = write(
        "inlined.c",
        '#include "helper.h"\n'
        "#include <stdlib.h>\n"
        "int main(int argc, char **argv) {\n"
        "    int n = atoi(argv[1]);\n"
        "    char *s = malloc(n + 1);\n"
        "    for (int i = 0; i < n; i++) s[i] = 'a';\n"
        "    s[n] = 0;\n"
        "    size_t k = 0;\n"
        "    for (size_t i = 0; i < len_of(s); i++) k += i;\n"
        "    free(s);\n"
        "    return (int)(k & 1);\n"
        "}\n",
    )
    artifact = builder.build([source], options=BuildOptions(opt_level="0"))  # strlen stays in the loop
    result = run_program(artifact, [10])
    assert result.counts is not None
    strlen = {
        (caller, where.rsplit("/", 1)[-1]): calls
        for (caller, where), calls in call_sites(result.counts)["__instrbudget_libc_strlen"].items()
    }
    assert strlen == {("main", "inlined.c:9"): 11}


def test_a_callers_long_name_goes_on_a_line_of_its_own(tmp_path: Path) -> None:
    """A row whose caller's name would take it past a CI log's 80 columns has the name on the next
    line, under the numbers: the rows' other columns stay within the width."""
    from pytest_instrbudget.results import MetricResult
    from pytest_instrbudget.session import _project_calls, _project_lines

    root = tmp_path
    callee = (
        "_ZNSt3__111__introsortINS_17_ClassicAlgPolicyERNS_6__lessIvvEEPiLb0EEEv"
        "T1_S6_NS_15iterator_traitsIS6_E15difference_typeEb"
    )
    caller = "_ZN9analytics6detail29RecordAccumulatorWithLongNameIiE37accumulate_every_record_and_sort_themEPKii"
    libcxx = "/venv/site-packages/ziglang/lib/libcxx/include/__algorithm/sort.h:700"
    m = MetricResult(
        "ir_instructions",
        "max_instr",
        10,
        1,
        None,
        0.0,
        "over limit",
        lines=[[callee, libcxx, 9]],
        project_lines=[[caller, "src/sorter.cc:8", 307], ["work", "src/sorter.cc:14", 428]],
    )
    sites = {callee: {(caller, f"{root}/src/sorter.cc:8"): 60, ("work", f"{root}/src/sorter.cc:15"): 1}}
    lines = {caller: {f"{root}/src/sorter.cc:8": 307}, "work": {f"{root}/src/sorter.cc:14": 428}}
    name = "analytics::detail::RecordAccumulatorWithLongName<int>::accumulate_every_record_and_sort_them(int const*)"
    short = "analytics::detail::RecordAccumulatorWithLongName<…>::accumulate_every_record_and_sort_them(…)"
    assert len(name) > 80
    assert _project_calls(m, callee, root, sites, lines) == [
        "  calls of it from the project's own code:",
        "    src/sorter.cc:8   60 calls",
        f"                      {short}",
        "    src/sorter.cc:15   1 call  work",
    ]
    assert _project_lines(m, callee, root) == [
        "  hottest lines of the project's own code:",
        "    src/sorter.cc:8   307",
        f"                      {short}",
        "    src/sorter.cc:14  428  work",
    ]


def test_a_failure_names_the_projects_lines_that_call_the_costly_library_function(tmp_path: Path) -> None:
    """Direct calls first, then calls through other library functions (printf -> printf_core), most
    first; a project function's call inlined from a header is still its own."""
    from pytest_instrbudget.results import MetricResult
    from pytest_instrbudget.session import _project_calls

    root = tmp_path
    core = "__instrbudget_libc_printf_core"
    m = MetricResult(
        "ir_instructions", "max_instr", 10, 1, None, 0.0, "over limit", lines=[[core, "/lib/musl/vfprintf.c:169", 9]]
    )
    sites = {
        core: {
            ("__instrbudget_libc_vfprintf", "/lib/musl/src/stdio/vfprintf.c:700"): 7,
            ("direct", f"{root}/src/app.c:40"): 1,
        },
        "__instrbudget_libc_vfprintf": {
            ("__instrbudget_libc_printf", "/lib/musl/src/stdio/printf.c:9"): 5,
            ("__instrbudget_libc_fprintf", "/lib/musl/src/stdio/fprintf.c:9"): 2,
        },
        "__instrbudget_libc_printf": {("main", f"{root}/src/app.c:12"): 5},
        "__instrbudget_libc_fprintf": {
            ("report", "/zig/lib/libcxx/include/ostream:9"): 1,
            ("main", f"{root}/src/app.c:14"): 1,
        },
    }
    lines = {  # each function's executed lines: report's own are its source's, whatever its call's line
        "main": {f"{root}/src/app.c:12": 4},
        "report": {f"{root}/src/app.c:29": 2},
        "direct": {f"{root}/src/app.c:40": 1},
        "__instrbudget_libc_printf": {"/lib/musl/src/stdio/printf.c:9": 3},
    }
    assert _project_calls(m, core, root, sites, lines) == [
        "  calls of it from the project's own code:",
        "    src/app.c:40                       1 call  direct",
        "    src/app.c:12                       5 calls of printf [libc]  main",
        "    src/app.c:14                       1 call of fprintf [libc]  main",
        "    /zig/lib/libcxx/include/ostream:9  1 call of fprintf [libc]  report",
    ]
    assert _project_calls(m, "main", root, sites, lines) == []  # the project's own function: its lines say it


def test_diff_refuses_costs_a_baseline_could_not_hold(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Totals of "100", 100.7 or true compared equal to 100 and 1 and read as no differences; a
    baseline with conflict markers says so, as pytest does."""
    from cbuild.cli import main

    good = tmp_path / "good.json"
    good.write_text(json.dumps({"tests": {"t::a": {"ir_instructions": {"total": 100}}}}))
    for bad, shown in (('"100"', "'100'"), ("100.7", "100.7"), ("true", "True"), ("-3", "-3")):
        path = tmp_path / "bad.json"
        path.write_text('{"tests": {"t::a": {"ir_instructions": {"total": ' + bad + "}}}}")
        assert main(["diff", str(good), str(path)]) == 2
        err = capsys.readouterr().err
        assert f"bad.json: unexpected entry (t::a ir_instructions: {shown} is not a non-negative integer)" in err
    path.write_text('{"tests": {"t::a": {"ir_instructions": {"total": 1, "functions": {"f": -1}}}}}')
    assert main(["diff", str(good), str(path)]) == 2
    assert "unexpected entry (t::a ir_instructions function f: -1 is not a non-negative integer)" in (
        capsys.readouterr().err
    )
    path.write_text('{"tests": {"t::a": {"ir_instructions": {"functions": {}}}}}')
    assert main(["diff", str(good), str(path)]) == 2
    assert "unexpected entry (no 'total')" in capsys.readouterr().err
    conflicted = tmp_path / "conflicted.json"
    conflicted.write_text('{\n<<<<<<< HEAD\n  "tests": {}\n=======\n  "tests": {}\n>>>>>>> main\n}\n')
    assert main(["diff", str(good), str(conflicted)]) == 2
    assert "conflicted.json has merge conflict markers (line 2): resolve the conflict first" in capsys.readouterr().err


def test_diff_lists_a_tests_metrics_in_the_models_order(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """As the plugin's table does (ir-count's first, each model's in its own order), not by name."""
    from cbuild.cli import main

    def run(path: Path, k: int) -> Path:
        metrics = ("zk_segments", "zk_paging_cycles", "ir_instructions", "zk_user_cycles", "zk_cycles")
        path.write_text(json.dumps({"tests": {"t::a": {m: {"total": 10 * k + i} for i, m in enumerate(metrics)}}}))
        return path

    assert main(["diff", str(run(tmp_path / "a.json", 1)), str(run(tmp_path / "b.json", 2)), "--width", "200"]) == 1
    shown = [line.split()[1].rstrip(":") for line in capsys.readouterr().out.splitlines() if line.startswith("t::a")]
    assert shown == ["ir_instructions", "zk_cycles", "zk_user_cycles", "zk_paging_cycles", "zk_segments"]
