"""Builds described by compilation databases (CMake's compile_commands.json) and by glob patterns."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from cbuild import Builder, Library
from cbuild.build import compiledb
from cbuild.build.sources import Source, expand
from cbuild.build.toolchain import find_toolchain
from cbuild.errors import BuildDescriptionError, BuildDescriptionWarning, CompileError
from cbuild.models import IrCountModel
from cbuild.models.costs import Cost
from tests.sdists import sdist

SCALE_H = """\
#define BIAS 7
long scaled(long n);
"""

#: Runs its loop n * SCALE times: the cost of a call grows with the target's SCALE.
SCALE_C = """\
#include "scale.h"
long scaled(long n) {
    volatile long s = 0;
    for (long i = 0; i < n * SCALE; i++) s += i;
    return s + BIAS;
}
"""

TOOL_C = """\
#include <stdio.h>
#include "scale.h"
int main(void) { printf("%ld %s\\n", scaled(4), GREETING); return 0; }
"""

#: The same source in three targets, each with its own SCALE; GREETING needs shell quoting.
SCALES_CMAKE = """\
cmake_minimum_required(VERSION 3.16)
project(scales C)
add_library(a SHARED src/scale.c)
add_library(b SHARED src/scale.c)
add_executable(tool src/tool.c src/scale.c)
target_compile_definitions(a PRIVATE SCALE=2)
target_compile_definitions(b PRIVATE SCALE=3)
target_compile_definitions(tool PRIVATE SCALE=4 "GREETING=\\"hello world\\"")
foreach(t a b tool)
  target_include_directories(${t} PRIVATE include)
  target_compile_options(${t} PRIVATE -O3 -march=x86-64 -Wall)
endforeach()
"""

SCALES_TESTS = """\
import pytest

DB = "build/compile_commands.json"

@pytest.mark.parametrize(("target", "n"), [("a", 10), ("a", 20), ("b", 10)])
def test_scaled(cbuild, target, n):
    lib = cbuild.library(compile_commands=DB, targets=[target], opt_level=0)
    m = n * {"a": 2, "b": 3}[target]
    assert lib.scaled(n) == m * (m - 1) // 2 + 7

def test_sources_as_globs(cbuild):
    assert cbuild.library("src/s*.c", compile_commands=DB, targets="b").scaled(1) == 3 + 7
    assert cbuild.library(sources=["src/s*.c"], compile_commands=DB, targets="a").scaled(1) == 0 + 1 + 7
    assert cbuild.library(sources="src/scale.c", compile_commands=DB, targets="a").scaled(1) == 0 + 1 + 7

def test_program(cbuild):
    run = cbuild.program(compile_commands=DB, targets=["tool"]).run()
    assert run.text == "127 hello world\\n"  # scaled(4) with SCALE=4: 0 + ... + 15, + 7

def test_same_file_two_ways(cbuild):
    cbuild.library(compile_commands=DB)

def test_targets_without_database(cbuild):
    cbuild.library("src/scale.c", targets=["a"])
"""

#: A CMake build of brotli's C library like the project's own (the PyPI sdist ships none):
#: three shared libraries, each source with its library's export define, and the brotli tool.
BROTLI_CMAKE = """\
cmake_minimum_required(VERSION 3.16)
project(brotli C)
file(GLOB common_sources c/common/*.c)
file(GLOB dec_sources c/dec/*.c)
file(GLOB enc_sources c/enc/*.c)
add_library(brotlicommon SHARED ${common_sources})
add_library(brotlidec SHARED ${dec_sources})
add_library(brotlienc SHARED ${enc_sources})
target_link_libraries(brotlidec brotlicommon)
target_link_libraries(brotlienc brotlicommon)
foreach(lib brotlicommon brotlidec brotlienc)
  target_include_directories(${lib} PUBLIC c/include)
  target_compile_definitions(${lib} PUBLIC BROTLI_SHARED_COMPILATION)
  string(TOUPPER ${lib} LIB)
  set_target_properties(${lib} PROPERTIES DEFINE_SYMBOL ${LIB}_SHARED_COMPILATION)
endforeach()
add_executable(brotli c/tools/brotli.c)
target_link_libraries(brotli brotlienc brotlidec m)
"""

BROTLI_TESTS = """\
import ctypes
from pathlib import Path

import pytest

DB = "build/compile_commands.json"
DATA = Path("c").resolve().parent / "tests" / "testdata"
LIBRARIES = ["brotlicommon", "brotlidec", "brotlienc"]
#: Sizes at quality 5, window 22: brotli 1.2.1's encoder is deterministic.
SIZES = {"alice29.txt": 52809, "monkey": 426, "quickfox": 46}


def compress(lib, data, quality):
    out = bytearray(lib.BrotliEncoderMaxCompressedSize(len(data)))
    size = ctypes.c_size_t(len(out))
    assert lib.BrotliEncoderCompress(quality, 22, 0, len(data), data, ctypes.byref(size), out) == 1
    return bytes(out[: size.value])


def decompress(lib, data, size):
    out = bytearray(size)
    n = ctypes.c_size_t(size)
    assert lib.BrotliDecoderDecompress(len(data), data, ctypes.byref(n), out) == 1
    return bytes(out[: n.value])


@pytest.mark.parametrize("name", sorted(SIZES))
def test_round_trip_equals_the_brotli_tool(cbuild, name):
    original = (DATA / name).read_bytes()
    lib = cbuild.library(compile_commands=DB, targets=LIBRARIES)
    packed = compress(lib, original, 5)
    assert len(packed) == SIZES[name]
    assert decompress(lib, packed, len(original)) == original
    tool = cbuild.program(compile_commands=DB)  # every source: the tool and the three libraries
    assert tool.run(["-c", "-q", "5", "-w", "22"], input=original).stdout == packed


def test_decoder_from_globs_reads_the_official_files(cbuild):
    lib = cbuild.library("c/common/*.c", "c/dec/*.c", include_dirs=["c/include"])
    for name in SIZES:
        original = (DATA / name).read_bytes()
        assert decompress(lib, (DATA / f"{name}.compressed").read_bytes(), len(original)) == original


def test_glob_matching_nothing(cbuild):
    cbuild.library("c/common/*.c", "c/decoder/*.c")
"""


def cmake_configure(source: Path, build: Path) -> Path:
    """Configure ``source`` into ``build`` with the venv's cmake; the path of its compile_commands.json.

    The C compiler is the pipeline's own clang (zig cc, for the pipeline's target): it exists on
    every machine the tests run on, and zig reuses the C library it builds for the pipeline."""
    cmake = shutil.which("cmake", path=str(Path(sys.executable).parent)) or shutil.which("cmake")
    if cmake is None:
        message = "cmake is not installed (pip install cmake, a test dependency)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    build.mkdir(parents=True, exist_ok=True)
    cc = build / "zigcc"
    toolchain = find_toolchain()
    cc.write_text(f'#!/bin/sh\nexec {shlex.join(toolchain.cc)} -target {toolchain.triple} "$@"\n')
    cc.chmod(0o755)
    generator = "Ninja" if shutil.which("ninja") else "Unix Makefiles"
    proc = subprocess.run(
        [cmake, "-S", str(source), "-B", str(build), "-G", generator, "-DCMAKE_BUILD_TYPE=Release",
         "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON", f"-DCMAKE_C_COMPILER={cc}"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return build / "compile_commands.json"


def run_json(pytester: pytest.Pytester) -> tuple[pytest.RunResult, dict]:  # type: ignore[type-arg]
    out = pytester.path / "results.json"
    result = pytester.runpytest("-p", "no:cacheprovider", f"--instrbudget-json={out}")
    return result, json.loads(out.read_text())


def test_cmake_targets_compile_one_source_with_their_own_defines(pytester: pytest.Pytester) -> None:
    pytester.makefile(".h", **{"include/scale": SCALE_H})
    pytester.makefile(".c", **{"src/scale": SCALE_C, "src/tool": TOOL_C})
    (pytester.path / "CMakeLists.txt").write_text(SCALES_CMAKE)
    cmake_configure(pytester.path, pytester.path / "build")
    pytester.makepyfile(test_db=SCALES_TESTS)
    result, doc = run_json(pytester)
    result.assert_outcomes(passed=5, failed=2)
    # Each call runs the loop n * SCALE times (20, 40, 30) at -O0: the costs are c + k * trips.
    value = {t: doc["tests"][f"test_db.py::test_scaled[{t}]"]["metrics"]["ir_instructions"]["value"] for t in
             ("a-10", "a-20", "b-10")}  # fmt: skip
    assert value["b-10"] - value["a-10"] == (value["a-20"] - value["a-10"]) // 2 > 0
    assert (value["a-20"] - value["a-10"]) % 20 == 0
    out = result.stdout.str()
    database = pytester.path / "build" / "compile_commands.json"
    assert (
        f"{database} compiles {pytester.path / 'src' / 'scale.c'} 3 ways, with different "
        "flags: CMakeFiles/a.dir/src/scale.c.o (-DSCALE=2 -Da_EXPORTS); "
        "CMakeFiles/b.dir/src/scale.c.o (-DSCALE=3 -Db_EXPORTS); "
        "CMakeFiles/tool.dir/src/scale.c.o ('-DGREETING=\"hello world\"' -DSCALE=4); "
        "choose one with targets=['a'] (its targets: a, b, tool)\n"
    ) in out
    assert "BuildDescriptionError: targets= picks entries of a compilation database; pass compile_commands= too" in out
    # Left-out flags are said once for the database, in the warnings summary; -Wall is not among them.
    assert out.count("BuildDescriptionWarning") == 1
    result.stdout.fnmatch_lines(
        [
            f"*BuildDescriptionWarning: {database}: flags of this compilation database were left out: "
            "optimisation levels (the build's opt_level decides): -O3; "
            "target flags (the pipeline picks the target): -march=x86-64"
        ]
    )
    assert "-Wall" not in out


@pytest.fixture(scope="module")
def brotli(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """brotli 1.2.1's sources (its PyPI sdist) with a CMake build configured: the project directory."""
    root = sdist("brotli", "1.2.1")
    project = tmp_path_factory.mktemp("brotli")
    (project / "c").symlink_to(root / "c")
    (project / "CMakeLists.txt").write_text(BROTLI_CMAKE)
    cmake_configure(project, project / "build")
    return project


@pytest.mark.slow
def test_brotli_from_its_compilation_database_and_from_globs(pytester: pytest.Pytester, brotli: Path) -> None:
    for name in ("c", "CMakeLists.txt", "build"):
        (pytester.path / name).symlink_to(brotli / name)
    pytester.makepyfile(test_brotli=BROTLI_TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=4, failed=1)
    result.stdout.fnmatch_lines([f"*no file matches the pattern c/decoder/*.c (in {pytester.path})"])


# The engine, without pytest's fixture.


def write_db(path: Path, entries: object) -> Path:
    path.write_text(json.dumps(entries))
    return path


def test_flags_kept_dropped_and_said(tmp_path: Path) -> None:
    command = (
        "/usr/bin/gcc -DNAME='\"a b\"' -D X=1 -U Y -I inc -isystem /opt/sys -iquote q -include pre.h -std=c99 "
        "-O2 -march=native -m64 -fPIC -fvisibility=hidden -fno-strict-aliasing -Wall -Werror -g -MD -MF x.d "
        "-o out/x.o -c ../src/x.c"
    )
    path = write_db(tmp_path / "cc.json", [{"directory": "build", "command": command, "file": "../src/x.c"}])
    db = compiledb.load(path)
    with pytest.warns(BuildDescriptionWarning) as caught:
        db.select([], base=tmp_path)  # said when a selection uses the entry
    (entry,) = db.entries
    build = tmp_path / "build"
    assert entry.source == Source(
        tmp_path / "src" / "x.c",
        ('-DNAME="a b"', "-DX=1", "-UY", f"-I{build}/inc", "-isystem/opt/sys", f"-iquote{build}/q", "-include",
         f"{build}/pre.h", "-std=c99", "-fno-strict-aliasing"),
        build,
    )  # fmt: skip
    assert entry.output == "out/x.o"
    assert [str(w.message) for w in caught] == [
        f"{path}: flags of this compilation database were left out: "
        "optimisation levels (the build's opt_level decides): -O2; "
        "target flags (the pipeline picks the target): -march=native -m64; "
        "flags the pipeline does not honour: -fvisibility=hidden"
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert compiledb.load(path) is db  # once per database: read again, nothing said
        db.select(["src/x.c"], base=tmp_path)


def test_sources_and_databases_take_what_a_user_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``Source("x.c", ["-DA=1"], "dir")`` as docs/fixture.md writes it is the Source of Paths and a
    tuple (a list of flags made it unhashable, a str path failed in the builder); a str path to
    ``compiledb.load``, and ``select()`` without ``base``, work from the current directory."""
    assert Source("x.c", ["-DA=1"], "dir") == Source(Path("x.c"), ("-DA=1",), Path("dir"))
    hash(Source("x.c", ["-DA=1"]))
    with pytest.raises(BuildDescriptionError, match="flags is a list of flags, not the string '-DA=1'"):
        Source("x.c", "-DA=1")  # type: ignore[arg-type]
    write_db(tmp_path / "cc.json", [{"directory": str(tmp_path), "arguments": ["cc", "-c", "x.c"], "file": "x.c"}])
    monkeypatch.chdir(tmp_path)
    (source,) = compiledb.load("cc.json").select()
    assert source.path == tmp_path / "x.c"


def test_arguments_entries_and_response_files(tmp_path: Path) -> None:
    (tmp_path / "flags.rsp").write_text("-DFROM_RSP=1 -I include")
    args = ["clang", "-DA=1", f"@{tmp_path / 'flags.rsp'}", "-c", "x.c"]
    db = compiledb.read(
        write_db(tmp_path / "cc.json", [{"directory": str(tmp_path), "arguments": args, "file": "x.c"}])
    )
    assert db.entries[0].source.flags == ("-DA=1", "-DFROM_RSP=1", f"-I{tmp_path}/include")
    assert db.dropped == ()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[{", "{path} is not a compilation database: it is not JSON (Expecting*"),
        ('{"file": "x.c"}', "{path} is not a compilation database: expected a JSON list of compile commands, "
                            "found a JSON object"),
        ('[{"directory": "/"}]', "{path}, entry 0: has no 'file' string"),
        ('[{"directory": "/", "file": "x.c"}]',
         "{path}, entry 0 (x.c): has neither an 'arguments' list of strings nor a 'command' string"),
        ('[{"directory": "/", "file": "x.c", "command": "cc \\"x.c"}]',
         "{path}, entry 0 (x.c): its command cannot be split into arguments (No closing quotation)"),
    ],
)  # fmt: skip
def test_unusable_databases_are_named(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "compile_commands.json"
    path.write_text(content)
    with pytest.raises(BuildDescriptionError) as info:
        compiledb.load(path).select([], base=tmp_path)  # an entry's command is split when a selection uses it
    assert re.fullmatch(re.escape(message.format(path=path)).replace(r"\*", ".*"), str(info.value))


def test_missing_and_unreadable_databases(tmp_path: Path) -> None:
    with pytest.raises(
        BuildDescriptionError, match=r"^the compilation database .*/nope\.json does not exist; generate"
    ):
        compiledb.load(tmp_path / "nope.json")
    with pytest.raises(BuildDescriptionError) as info:
        compiledb.load(tmp_path)
    assert str(info.value) == f"cannot read the compilation database {tmp_path}: Is a directory"


def scales_db(tmp_path: Path) -> compiledb.CompilationDatabase:
    entries = [
        {"directory": str(tmp_path), "file": "src/scale.c", "output": f"{tmp_path}/CMakeFiles/{t}.dir/scale.c.o",
         "arguments": ["cc", f"-DSCALE={n}", "-c", "src/scale.c"]}
        for t, n in (("a", 2), ("b", 3))
    ] + [{"directory": str(tmp_path), "file": "src/other.c", "arguments": ["cc", "-c", "src/other.c"]}]  # fmt: skip
    return compiledb.read(write_db(tmp_path / "cc.json", entries))


def test_sources_missing_from_the_database(tmp_path: Path) -> None:
    db = scales_db(tmp_path)
    with pytest.raises(BuildDescriptionError) as info:
        db.select(["src/scales.c"], base=tmp_path)
    assert str(info.value) == (
        f"{tmp_path}/src/scales.c is not a source of {tmp_path}/cc.json; close matches: src/scale.c"
    )
    with pytest.raises(BuildDescriptionError) as info:
        db.select(["src/*.cc"], base=tmp_path, targets=["a"])
    assert (
        str(info.value) == f"the pattern src/*.cc (in {tmp_path}) matches no source of {tmp_path}/cc.json (targets a)"
    )
    with pytest.raises(BuildDescriptionError) as info:
        db.select([], base=tmp_path, targets=["c"])
    assert str(info.value) == (
        f"no compile command of {tmp_path}/cc.json belongs to the target 'c' (its targets: a, b; a target "
        "may also be a glob matched against the object files)"
    )


def test_one_source_two_ways_is_picked_by_target(tmp_path: Path) -> None:
    db = scales_db(tmp_path)
    with pytest.raises(
        BuildDescriptionError, match=r"compiles .*/src/scale.c 2 ways, .*\(-DSCALE=2\); .*\(-DSCALE=3\)"
    ):
        db.select(["src/*.c"], base=tmp_path)
    assert [s.flags for s in db.select(["src/*.c"], base=tmp_path, targets=["b"])] == [("-DSCALE=3",)]
    assert [s.flags for s in db.select(["src/scale.c"], base=tmp_path, targets=["*/a.dir/*"])] == [("-DSCALE=2",)]
    assert db.select(["src/other.c"], base=tmp_path) == [Source(tmp_path / "src" / "other.c", (), tmp_path)]


def test_globs_expand_sorted_and_recursive(tmp_path: Path) -> None:
    for name in ("b.c", "a.c", "sub/deep/c.c", "sub/d.h"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    assert expand(["*.c", "a.c", "**/*.c"], tmp_path) == [
        tmp_path / "a.c", tmp_path / "b.c", tmp_path / "a.c", tmp_path / "sub/deep/c.c"
    ]  # fmt: skip
    with pytest.raises(BuildDescriptionError) as info:
        expand(["src/*.c"], tmp_path)
    assert str(info.value) == f"no file matches the pattern src/*.c (in {tmp_path})"


def total(lib: Library, *args: int) -> Cost:
    before = lib.snapshot()
    lib.scaled(*args)
    (cost,) = IrCountModel().evaluate(lib.counts(before))
    return cost


def test_per_source_flags_enter_the_build_identity(builder: Builder, tmp_path: Path) -> None:
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "scale.h").write_text(SCALE_H)
    (tmp_path / "scale.c").write_text(SCALE_C)
    for written in (tmp_path / "inc" / "scale.h", tmp_path / "scale.c"):
        os.utime(written, (1e9, 1e9))  # not "changed while clang read it", which is never cached
    # A relative include directory, found from the source's own working directory.
    two = Source(tmp_path / "scale.c", ("-DSCALE=2", "-Iinc"), tmp_path)
    three = Source(tmp_path / "scale.c", ("-DSCALE=3", "-Iinc"), tmp_path)
    options_a, options_b = builder.build([two], kind="library"), builder.build([three], kind="library")
    assert options_a.key != options_b.key
    assert builder.build([two], kind="library").key == options_a.key
    assert Library(options_a).scaled(10) == 190 + 7
    assert Library(options_b).scaled(10) == 435 + 7
    # A header found through the relative directory is a dependency like any other.
    (tmp_path / "inc" / "scale.h").write_text(SCALE_H.replace("BIAS 7", "BIAS 8"))
    os.utime(tmp_path / "inc" / "scale.h", (1.1e9, 1.1e9))
    changed = builder.build([two], kind="library")
    assert changed.key != options_a.key
    assert Library(changed).scaled(10) == 190 + 8


def test_a_missing_working_directory_is_named(builder: Builder, tmp_path: Path) -> None:
    (tmp_path / "x.c").write_text("int x;")
    with pytest.raises(CompileError) as info:
        builder.build([Source(tmp_path / "x.c", (), tmp_path / "gone")], kind="library")
    assert str(info.value) == (
        f"compiling {tmp_path}/x.c failed:\nerror: the directory to compile it in does not exist: {tmp_path}/gone"
    )


MESON_BUILD = """\
project('scales', 'c')
inc = include_directories('include')
shared_library('a', 'src/scale.c', c_args: ['-DSCALE=2', '-O3'], include_directories: inc)
shared_library('b', 'src/scale.c', c_args: ['-DSCALE=3'], include_directories: inc)
"""


def test_meson_database(tmp_path: Path, builder: Builder) -> None:
    """Meson writes compile_commands.json at setup: its targets are named as Meson names their files."""
    bindir = Path(sys.executable).parent
    meson = shutil.which("meson", path=str(bindir)) or shutil.which("meson")
    if meson is None:
        message = "meson is not installed (pip install meson ninja, test dependencies)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    (tmp_path / "include").mkdir()
    (tmp_path / "include" / "scale.h").write_text(SCALE_H)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "scale.c").write_text(SCALE_C)
    (tmp_path / "meson.build").write_text(MESON_BUILD)
    toolchain = find_toolchain()
    cc = tmp_path / "zigcc"
    cc.write_text(f'#!/bin/sh\nexec {shlex.join(toolchain.cc)} -target {toolchain.triple} "$@"\n')
    cc.chmod(0o755)
    env = {**os.environ, "CC": str(cc), "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = subprocess.run(
        [meson, "setup", str(tmp_path / "build")], cwd=tmp_path, env=env, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    db = compiledb.load(tmp_path / "build" / "compile_commands.json")
    with pytest.warns(BuildDescriptionWarning) as said:
        units = {target: db.select([], base=tmp_path, targets=[target]) for target in ("liba.so", "libb.so")}
    said_text = " ".join(str(w.message) for w in said)
    assert "optimisation levels (the build's opt_level decides): -O0 -O3" in said_text
    costs = {}
    for target, scale in (("liba.so", 2), ("libb.so", 3)):
        (unit,) = units[target]
        assert f"-DSCALE={scale}" in unit.flags
        assert unit.cwd == tmp_path / "build"
        with Library(builder.build([unit], kind="library")) as lib:
            before = lib.snapshot()
            assert lib.scaled(10) == (10 * scale) * (10 * scale - 1) // 2 + 7
            (cost,) = IrCountModel().evaluate(lib.counts(before))
            costs[scale] = cost.total
    with pytest.raises(BuildDescriptionError, match=r"its targets: liba\.so, libb\.so"):
        db.select([], base=tmp_path, targets=["a"])
    assert costs[3] > costs[2] > 0


def test_response_file_cycles_depth_and_size_are_refused(tmp_path: Path) -> None:
    def read_with(rsp: str) -> str:
        path = write_db(
            tmp_path / "cc.json", [{"directory": str(tmp_path), "file": "x.c", "command": f"cc @{rsp} x.c"}]
        )
        with pytest.raises(BuildDescriptionError) as info:
            compiledb.read(path).select([], base=tmp_path)
        return str(info.value)

    # Ten references to itself: refused at once, not expanded 10^8 times.
    (tmp_path / "self.rsp").write_text(" ".join(["@self.rsp"] * 10))
    start = time.perf_counter()
    message = read_with("self.rsp")
    assert time.perf_counter() - start < 2
    assert message.endswith(
        f"its response files name each other in a cycle: {tmp_path / 'self.rsp'} -> {tmp_path / 'self.rsp'}"
    )
    (tmp_path / "a.rsp").write_text("-DA @b.rsp")
    (tmp_path / "b.rsp").write_text("-DB @a.rsp")
    assert read_with("a.rsp").endswith(f"cycle: {tmp_path / 'a.rsp'} -> {tmp_path / 'b.rsp'} -> {tmp_path / 'a.rsp'}")
    for n in range(12):  # a chain of 12 distinct files
        (tmp_path / f"n{n}.rsp").write_text(f"-DN{n} @n{n + 1}.rsp" if n < 11 else "-DEND")
    assert f"nested more than {compiledb.RESPONSE_DEPTH} deep" in read_with("n0.rsp")
    # Distinct files, each naming the next twice: 2^7 copies of the last one's arguments.
    for n in range(7):
        (tmp_path / f"w{n}.rsp").write_text(f"@w{n + 1}.rsp @w{n + 1}.rsp")
    (tmp_path / "w7.rsp").write_text(" ".join(["-DX"] * 1000))
    assert "expand to more than 100,000 arguments" in read_with("w0.rsp")


def test_damaged_response_files_and_names_are_named(tmp_path: Path) -> None:
    (tmp_path / "binary.rsp").write_bytes(b"-DX=\xff")
    (tmp_path / "quote.rsp").write_text("-DX='1")
    for rsp, why in [("binary.rsp", "not UTF-8 (invalid start byte)"), ("quote.rsp", "No closing quotation")]:
        path = write_db(
            tmp_path / "cc.json", [{"directory": str(tmp_path), "file": "x.c", "command": f"cc @{rsp} x.c"}]
        )
        with pytest.raises(BuildDescriptionError) as info:
            compiledb.read(path).select([], base=tmp_path)
        assert str(info.value) == f"{path}, entry 0 (x.c): its response file {tmp_path / rsp} cannot be read: {why}"
    path = write_db(tmp_path / "cc.json", [{"directory": str(tmp_path), "file": "x\0.c", "command": "cc -c x.c"}])
    with pytest.raises(BuildDescriptionError) as info:
        compiledb.read(path)
    assert str(info.value) == f"{path}, entry 0 (x\0.c): its directory or file name holds a NUL character"


def test_names_with_glob_characters_and_files_reached_through_links(tmp_path: Path) -> None:
    (tmp_path / "v[1]").mkdir()
    (tmp_path / "v[1]" / "x.c").write_text("")
    path = write_db(
        tmp_path / "cc.json", [{"directory": str(tmp_path), "file": "v[1]/x.c", "command": "cc -c v[1]/x.c"}]
    )
    (source,) = compiledb.read(path).select(["v[1]/x.c"], base=tmp_path)  # the file named so, as expand() takes it
    assert source.path == tmp_path / "v[1]" / "x.c"
    assert expand(["v[1]/x.c"], tmp_path) == [tmp_path / "v[1]" / "x.c"]
    (tmp_path / "alias").symlink_to(tmp_path / "v[1]")
    assert expand(["**/*.c"], tmp_path) == [tmp_path / "alias" / "x.c"]  # one file, built once


def test_a_large_database_parses_only_the_entries_a_selection_uses(tmp_path: Path) -> None:
    """200,000 entries, every one but two with a command that cannot be split: picking those two
    works, since only their commands are parsed (the whole database is, and fails, on demand)."""
    src = tmp_path / "src"
    src.mkdir()
    items = [
        {"directory": str(tmp_path), "file": f"gen/f{n}.c", "command": f"cc -DN={n} 'unbalanced -c gen/f{n}.c"}
        for n in range(200_000)
    ]
    items[1234] = {"directory": str(tmp_path), "file": "src/a.c", "command": "cc -DA=1 -Iinc -c src/a.c"}
    items[150_000] = {"directory": str(tmp_path), "file": "src/b.c", "arguments": ["cc", "-DB=2", "-c", "src/b.c"]}
    path = write_db(tmp_path / "compile_commands.json", items)
    db = compiledb.read(path)
    a, b = db.select(["src/a.c", "src/b.c"], base=tmp_path)
    assert (a.path, a.flags) == (src / "a.c", ("-DA=1", f"-I{tmp_path}/inc"))
    assert (b.path, b.flags) == (src / "b.c", ("-DB=2",))
    (glob,) = db.select(["src/b*.c"], base=tmp_path)
    assert glob == b
    with pytest.raises(BuildDescriptionError, match=r"entry 0 \(gen/f0\.c\): its command cannot be split"):
        db.select([], base=tmp_path)


def test_exclusions_leave_out_what_they_match_and_say_when_they_match_nothing(tmp_path: Path) -> None:
    for name in ("src/a.c", "src/b.c", "src/main.c", "src/gen/t.c"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    src = tmp_path / "src"
    assert expand(["src/**/*.c", "!src/main.c", "!src/gen/*"], tmp_path) == [src / "a.c", src / "b.c"]
    with pytest.raises(BuildDescriptionError) as info:
        expand(["src/*.c", "!src/mian.c"], tmp_path)
    assert str(info.value) == (
        f"the exclusion !src/mian.c (in {tmp_path}) matches none of the sources (src/a.c, src/b.c, src/main.c)"
    )
    with pytest.raises(BuildDescriptionError, match=r"the exclusions !src/\*\.c leave no source to build"):
        expand(["src/*.c", "!src/*.c"], tmp_path)
    with pytest.raises(BuildDescriptionError, match="an exclusion '!' names no file or pattern"):
        expand(["src/*.c", "!"], tmp_path)
    # The same in a compilation database: the entries of the excluded files are not used.
    entries = [
        {"directory": str(tmp_path), "file": f"src/{name}", "arguments": ["cc", "-c", f"src/{name}"]}
        for name in ("a.c", "b.c", "main.c")
    ]
    (tmp_path / "compile_commands.json").write_text(json.dumps(entries))
    db = compiledb.read(tmp_path / "compile_commands.json")
    assert [s.path for s in db.select(["!src/main.c"], base=tmp_path)] == [src / "a.c", src / "b.c"]
    assert [s.path for s in db.select(["src/*.c", "!src/b.c"], base=tmp_path)] == [src / "a.c", src / "main.c"]
    with pytest.raises(BuildDescriptionError, match=r"the exclusion !src/x\.c .* matches none of the sources"):
        db.select(["!src/x.c"], base=tmp_path)


def test_fixture_exclude_keeps_a_command_line_main_out_of_a_library(pytester: pytest.Pytester) -> None:
    """A glob over a project's sources takes its command-line ``main.c`` too; ``exclude=`` leaves it out."""
    pytester.makefile(".c", **{"src/lib": "int twice(int x) { return 2 * x; }\n"})
    pytester.makefile(".c", **{"src/main": "int twice(int);\nint main(void) { return twice(0); }\n"})
    pytester.makepyfile(
        test_lib="""
        import pytest

        def test_without_main(cbuild):
            lib = cbuild.library("src/*.c", exclude=["src/main.c"])
            assert lib.twice(21) == 42
            assert not hasattr(lib, "main")

        def test_a_misspelt_exclusion_fails(cbuild):
            with pytest.raises(Exception, match=r"the exclusion !src/mian\\.c .* matches none of the sources"):
                cbuild.library("src/*.c", exclude="src/mian.c")
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
