"""User errors in builds: link errors where they belong, short messages, failures not retried."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from cbuild import Builder, BuildOptions, CBuildError, CompileError, LinkError, ToolchainError
from cbuild.build import toolchain as toolchain_mod
from cbuild.errors import CompilerWarning

TWICE_A = "int twice(int x) { return 2 * x; }\n"
TWICE_B = "int twice(int x) { return x + x; }\nint main(void) { return twice(0); }\n"


def test_library_with_an_undefined_symbol_is_a_link_error(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    src = write("lib.c", "int missing(int);\nint f(int x) {\n    return missing(x) + 1;\n}\n")
    with pytest.raises(LinkError) as info:
        builder.build([src], kind="library")
    message = str(info.value)
    assert message.startswith("linking the library of lib.c failed:")
    assert "undefined symbol: missing" in message
    assert f"({src}:3)" in message  # the file:line of the reference


@pytest.mark.parametrize("count_libraries", [True, False])
def test_program_without_main_says_so(builder: Builder, write, count_libraries: bool) -> None:  # type: ignore[no-untyped-def]
    # The counted build links main through a wrapper of the runtime's: the linker's own message
    # names the wrapper and a file of the runtime, not the user's sources.
    src = write("funcs.c", "int f(int x) { return x + 1; }\n")
    with pytest.raises(LinkError) as info:
        builder.build([src], options=BuildOptions(count_libraries=count_libraries))
    assert str(info.value) == (
        "linking the program of funcs.c failed: none of its sources defines main, where a program starts; "
        "to call the sources' functions from a test, build them as a library (cbuild.library)"
    )


def test_inline_assembly_the_assembler_rejects_names_its_line(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    # Accepted by clang's front end; only code generation (in the LLVM worker) rejects it.
    src = write("bad_asm.c", 'int f(int x) {\n    __asm__ volatile(".byte 0x1ff");\n    return x;\n}\n')
    with pytest.raises(CompileError) as info:
        builder.build([src], kind="library")
    message = str(info.value)
    assert "bad_asm.c:2:" in message
    assert "out of range" in message
    assert "LLVM worker" not in message


WARNS_C = "int f(int a) {\n    int unused;\n    return a;\n}\n"


def test_compiler_warnings_are_python_warnings_at_their_line_from_the_cache_too(shared_cache: Path, write) -> None:  # type: ignore[no-untyped-def]
    """clang's warnings (-Wall) reach the user as CompilerWarning at the source line: from a
    fresh compile, and from the cache in a later session (a new builder); once per builder."""
    src = write("warns.c", WARNS_C)
    options = BuildOptions(cflags=("-Wall",))
    for _ in range(2):  # the first compiles, the second (another session) finds the IR cached
        builder = Builder(cache_dir=shared_cache)
        with pytest.warns(CompilerWarning) as seen:
            builder.build([src], kind="library", options=options)
        (warning,) = seen
        assert (warning.filename, warning.lineno) == (str(src.resolve()), 2)
        assert "warning: unused variable 'unused' [-Wunused-variable]" in str(warning.message)
        assert "generated" not in str(warning.message)  # clang's "1 warning generated." is not one
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            builder.build([src], kind="library", options=options)  # reported once per builder
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Builder(cache_dir=shared_cache).build([src], kind="library")  # no -Wall: nothing to say


def test_library_may_allow_undefined_symbols_with_ldflags(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    from cbuild import BuildOptions

    src = write("hosted.c", "int provided_by_host(int);\nint f(int x) { return provided_by_host(x); }\n")
    artifact = builder.build([src], kind="library", options=BuildOptions(ldflags=("-Wl,-z,undefs",)))
    assert artifact.path.exists()


def test_symbol_defined_in_two_sources_names_the_symbol_and_both_files(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    a, b = write("a.c", TWICE_A), write("b.c", TWICE_B)
    with pytest.raises(LinkError) as info:
        builder.build([a, b])
    message = str(info.value)
    assert f"symbol 'twice' is defined in both {a.resolve()} and {b.resolve()}" in message
    assert "symbol multiply defined" in message


def test_the_same_source_listed_twice_is_named(builder: Builder, write, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    b = write("b.c", TWICE_B)
    again = tmp_path / "sub" / ".." / "b.c"
    (tmp_path / "sub").mkdir()
    with pytest.raises(CBuildError, match=r"b\.c is listed twice among the sources \(also as .*b\.c\)"):
        builder.build([b, again])


def test_a_directory_as_a_source_is_named(builder: Builder, tmp_path: Path) -> None:
    with pytest.raises(CBuildError, match=rf"{tmp_path} is a directory; name the source files in it"):
        builder.build([tmp_path])


def test_a_failed_build_is_not_retried_until_a_source_changes(
    shared_cache: Path,
    write,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    import cbuild.build.compile

    clang_runs: list[list[str]] = []
    real_run = subprocess.run

    def counting_run(cmd, *args, **kwargs):  # type: ignore[no-untyped-def]
        if "-emit-llvm" in cmd:
            clang_runs.append(cmd)
        return real_run(cmd, *args, **kwargs)

    monkeypatch.setattr(cbuild.build.compile.subprocess, "run", counting_run)
    builder = Builder(cache_dir=shared_cache, progress=lambda message: None)
    src = write("bad.c", "int f(void) { return nope; }\n")
    with pytest.raises(CBuildError) as first:
        builder.build([src], kind="library")
    assert len(clang_runs) == 1
    with pytest.raises(CBuildError) as second:
        builder.build([src], kind="library")
    assert len(clang_runs) == 1
    assert str(second.value) == str(first.value)
    # An edit is a new attempt.
    src.write_text("int f(void) { return 1; }\n")
    later = time.time_ns() + 10**9
    os.utime(src, ns=(later, later))
    assert builder.build([src], kind="library").path.exists()
    assert len(clang_runs) == 2


def test_zig_without_a_home_names_home_and_zig_global_cache_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HOME", raising=False)
    monkeypatch.delenv("ZIG_GLOBAL_CACHE_DIR", raising=False)
    toolchain_mod._zig_clang_version.cache_clear()
    try:
        with pytest.raises(ToolchainError) as info:
            toolchain_mod.find_toolchain()
    finally:
        toolchain_mod._zig_clang_version.cache_clear()
    message = str(info.value)
    assert "needs a writable cache directory" in message
    assert "HOME is not set" in message
    assert "ZIG_GLOBAL_CACHE_DIR" in message


def test_each_zig_installation_gets_a_zig_cache_of_its_own(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Two virtual environments with the same ziglang wheel shared ~/.cache/zig and rebuilt each
    # other's libc++ (about 90 s) whenever they took turns (found by a new user's walkthrough).
    monkeypatch.delenv("ZIG_GLOBAL_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    zig_a, zig_b = "/venv-a/site-packages/ziglang/zig", "/venv-b/site-packages/ziglang/zig"
    one, two = toolchain_mod.own_zig_cache(zig_a), toolchain_mod.own_zig_cache(zig_b)
    assert one is not None
    assert two is not None
    assert Path(one).parent == Path(two).parent == tmp_path / ".cache" / "zig"  # where CI caches it
    assert one != two
    assert Path(one).name.startswith("instrbudget-")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert toolchain_mod.own_zig_cache(zig_a) == str(tmp_path / "xdg" / "zig" / Path(one).name)
    monkeypatch.setenv("ZIG_GLOBAL_CACHE_DIR", str(tmp_path / "chosen"))  # the user's choice stands
    assert toolchain_mod.own_zig_cache(zig_a) == str(tmp_path / "chosen")
    monkeypatch.delenv("ZIG_GLOBAL_CACHE_DIR")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.delenv("HOME")
    assert toolchain_mod.own_zig_cache(zig_a) is None  # zig says what is missing


def test_a_host_other_than_linux_is_told_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """Programs, libraries and the counted heap need Linux (pidfd_open, memfd_create, fixed
    mappings): another system gets one sentence when the toolchain is looked for, not an
    AttributeError from the first program run."""
    monkeypatch.setattr(toolchain_mod.platform, "system", lambda: "Darwin")
    monkeypatch.setattr(toolchain_mod.platform, "machine", lambda: "arm64")
    with pytest.raises(ToolchainError, match=r"^pytest-instrbudget runs on Linux hosts; this is Darwin \(arm64\)$"):
        toolchain_mod.host_target()


def test_zig_with_an_unusable_home_says_so(tmp_path: Path, write) -> None:  # type: ignore[no-untyped-def]
    blocker = write("not-a-dir", "")
    src = write("ok.c", "int main(void) { return 0; }\n")
    env = {k: v for k, v in os.environ.items() if k != "ZIG_GLOBAL_CACHE_DIR"}
    env["HOME"] = str(blocker / "home")  # below a regular file: unusable, for root too
    proc = subprocess.run(
        [sys.executable, "-m", "cbuild", "build", str(src), "-o", str(tmp_path / "ok")],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert "needs a writable cache directory" in proc.stderr
    assert "ZIG_GLOBAL_CACHE_DIR" in proc.stderr


MODEL_ERROR_TEST = """\
def test_one(cbuild):
    cbuild.library("broken.c")

def test_two(cbuild):
    cbuild.library("broken.c")
"""


def test_engine_errors_in_tests_are_short(pytester: pytest.Pytester) -> None:
    pytester.makefile(".c", broken="int f(void) {\n    return nope;\n}\n")
    pytester.makefile(".c", dup_a=TWICE_A, dup_b=TWICE_B)
    # Compiles for the host, not for the zkvm model's riscv32 build: the model is unavailable, the test passes.
    pytester.makefile(".c", wide='_Static_assert(sizeof(void *) == 8, "64-bit only");\nint g(int x) { return x; }\n')
    pytester.makepyfile(
        test_short=MODEL_ERROR_TEST
        + "\ndef test_dir(cbuild):\n    cbuild.program('.')\n"
        + "\ndef test_dup(cbuild):\n    cbuild.program('dup_a.c', 'dup_b.c')\n"
        + "\ndef test_model(cbuild):\n    cbuild.library('wide.c')\n"
    )
    pytester.makepyprojecttoml("[tool.instrbudget]\nmodels = ['ir-count', 'zkvm']\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=4, passed=1)
    out = result.stdout.str()
    assert "Traceback" not in out
    assert "cbuild/" not in out  # no frames of the engine
    result.stdout.fnmatch_lines(
        [
            "test_short.py:2: CompileError: compiling *broken.c failed:",
            "*broken.c:2:12: error: use of undeclared identifier 'nope'",
            "test_short.py:5: CompileError: compiling *broken.c failed:",
            "test_short.py:8: CBuildError: * is a directory; name the source files in it",
            "test_short.py:11: LinkError: symbol 'twice' is defined in both *dup_a.c and *dup_b.c*",
            "*test_short.py::test_model: cannot be built for riscv32: static assertion failed*64-bit only",
            "*at wide.c:1",
        ],
        consecutive=False,
    )
    assert len(out.splitlines()) < 80


def test_a_library_whose_sources_define_main_is_an_error_naming_the_file(pytester: pytest.Pytester) -> None:
    """A glob that took the project's command-line program too: said at build time, before any model."""
    (pytester.path / "src").mkdir()
    (pytester.path / "src" / "twice.c").write_text(TWICE_A)
    (pytester.path / "src" / "main.c").write_text('#include <stdio.h>\nint main(void) { puts("cli"); return 0; }\n')
    pytester.makepyfile(
        test_lib="def test_glob(cbuild):\n"
        "    assert cbuild.library('src/*.c').twice(2) == 4\n"
        "\n"
        "def test_excluded(cbuild):\n"
        "    assert cbuild.library('src/*.c', exclude=['src/main.c']).twice(3) == 6\n"
        "\n"
        "def test_kept(cbuild):\n"
        "    assert cbuild.library('src/*.c', keep_main=True).twice(4) == 8\n"
        "\n"
        "def test_a_list(cbuild):\n"
        "    assert cbuild.library(['src/twice.c']).twice(5) == 10\n"
        "\n"
        "def test_not_a_path(cbuild):\n"
        "    cbuild.library(('src/twice.c', 3))\n"
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*CBuildError: */src/main.c defines main, and this is a library: its functions are called, main never "
            "runs *Leave main.c out (exclude=, or a '!pattern' among the sources), or pass keep_main=True*",
            "*TypeError: sources are paths or glob patterns (str or pathlib.Path), or lists of them; "
            "got ('src/twice.c', 3)",
        ],
        consecutive=False,
    )


def test_a_riscv_link_error_names_the_users_source_and_what_the_build_added(pytester: pytest.Pytester) -> None:
    """Names the host build accepts but the models' RISC-V link does not: the user's file and line,
    and what the RISC-V build links beside it, before the model runs anything."""
    pytester.makefile(".c", start="int _start(void) { return 1; }\nint g(int x) { return x; }\n")
    pytester.makefile(
        ".c", glibc="const char *gnu_get_libc_version(void);\nint h(int x) { return x + *gnu_get_libc_version(); }\n"
    )
    pytester.makepyfile(
        test_rv="def test_start(cbuild):\n"
        "    assert cbuild.library('start.c').g(2) == 2\n"
        "\n"
        "def test_glibc(cbuild):\n"
        "    assert cbuild.library('glibc.c').h(0) > 0\n"
    )
    pytester.makepyprojecttoml("[tool.instrbudget]\nmodels = ['ir-count', 'zkvm']\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    start, glibc = pytester.path / "start.c", pytester.path / "glibc.c"
    result.stdout.fnmatch_lines(
        [
            f"instrbudget:   test_rv.py::test_glibc: cannot be built for riscv32: undefined symbol: "
            f"gnu_get_libc_version, referenced by {glibc}:2",
            "instrbudget:     at glibc.c:2, in h",
            f"instrbudget:   test_rv.py::test_start: cannot be built for riscv32: duplicate symbol: _start, "
            f"defined at {start}:1 and crt1.c (the target's C runtime, zig's musl, which the riscv32 build links): "
            "rename yours",
            "instrbudget:     at start.c:1, in _start",
        ],
        consecutive=False,
    )


def test_a_cached_riscv_failure_names_this_checkouts_source(tmp_path: Path, shared_cache: Path) -> None:
    """Why a model's RISC-V build failed is kept with the build, which the same project checked
    out elsewhere reuses from the cache: the message names the source where it is now, not where
    it was when the build was made (or by an earlier session, from a checkout of its own)."""
    from cbuild.models import default_registry

    cache = shared_cache
    text = '_Static_assert(sizeof(void *) == 8, "64-bit only");\nint main(void) { return 0; }\n'
    messages = []
    for checkout in ("first", "second-checkout-elsewhere"):
        project = tmp_path / checkout / "project"
        (project / "src").mkdir(parents=True)
        source = project / "src" / "wide.c"
        source.write_text(text)
        zkvm = default_registry().create("zkvm", {})
        builder = Builder(cache_dir=cache, progress=lambda message: None)
        artifact = builder.build([source], models=[zkvm], options=BuildOptions(root=project))
        why = artifact.machines()["riscv32"]["unavailable"]
        assert f"{source}:1" in why, why
        messages.append(why.replace(str(source), "wide.c"))
    assert messages[0] == messages[1]


def test_compiler_warnings_from_the_cache_name_this_checkouts_files(shared_cache: Path, tmp_path: Path) -> None:
    """The cache entry is shared by a copy of the project elsewhere (keys name project files
    relative to it): its warnings then name the copy's file, not the first checkout's."""
    first, second = tmp_path / "a" / "project", tmp_path / "b" / "longer name" / "project"
    for root in (first, second):
        (root / "src").mkdir(parents=True)
        (root / "src" / "warns.c").write_text(WARNS_C)
        past = time.time() - 60  # settled sources: a file changed while clang reads it is not cached
        os.utime(root / "src" / "warns.c", (past, past))
    for root in (first, second):
        builder = Builder(cache_dir=shared_cache)
        with pytest.warns(CompilerWarning) as seen:
            builder.build(
                [root / "src" / "warns.c"], kind="library", options=BuildOptions(root=root, cflags=("-Wall",))
            )
        (warning,) = seen
        assert warning.filename == str(root / "src" / "warns.c")
        assert str(warning.message).startswith(f"{root / 'src' / 'warns.c'}:2:9: warning: unused variable")
    assert builder.cache.hits.get("tu")  # the second came from the cache


def test_compiler_warnings_show_in_pytests_warnings_summary(pytester: pytest.Pytester) -> None:
    pytester.makefile(".c", warns=WARNS_C)
    pytester.makepyprojecttoml('[tool.instrbudget]\ncflags = ["-Wall"]\n')
    pytester.makepyfile(
        "def test_one(cbuild):\n    assert cbuild.library('warns.c').f(3) == 3\n\n"
        "def test_two(cbuild):\n    assert cbuild.library('warns.c').f(4) == 4\n"
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, warnings=1)  # once in the session, not per test
    result.stdout.fnmatch_lines(
        ["*warnings summary*", "*warns.c:2: CompilerWarning: *warns.c:2:9: warning: unused variable 'unused'*"]
    )


def test_ir_whose_debug_information_llvm_drops_is_an_error(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    """LLVM drops a module's debug information it finds invalid with only a warning on stderr;
    the build fails instead, since source lines and C signatures would quietly go."""
    ir = write(
        "bad_dbg.ll",
        'source_filename = "bad.c"\n'
        "define i32 @f(i32 %x) !dbg !4 {\n  ret i32 %x, !dbg !7\n}\n"
        "!llvm.dbg.cu = !{!0}\n!llvm.module.flags = !{!2, !3}\n"
        '!0 = distinct !DICompileUnit(language: DW_LANG_C11, file: !1, producer: "clang", emissionKind: FullDebug)\n'
        '!1 = !DIFile(filename: "bad.c", directory: "/tmp")\n'
        '!2 = !{i32 7, !"Dwarf Version", i32 5}\n!3 = !{i32 2, !"Debug Info Version", i32 3}\n'
        '!4 = distinct !DISubprogram(name: "f", scope: !1, file: !1, line: 1, type: !5, unit: !0, '
        "spFlags: DISPFlagDefinition)\n"
        "!5 = !DISubroutineType(types: !6)\n!6 = !{null}\n"
        "!7 = !DILocation(line: 1, scope: !8)\n"  # a location whose scope is no scope: invalid
        '!8 = !{!"not a scope"}\n',
    )
    with pytest.raises(CBuildError, match=r"LLVM found the debug information in the IR of .*bad_dbg\.ll invalid"):
        builder.build([ir], kind="library")


@pytest.mark.parametrize(
    ("keyword", "value", "meant"),
    [
        ("defines", "'FOO'", "['FOO']"),
        ("cflags", "'-DFOO=1 -Wall'", "['-DFOO=1', '-Wall']"),
        ("cxxflags", "'-fno-rtti'", "['-fno-rtti']"),
        ("ldflags", "'-lm'", "['-lm']"),
        ("include_dirs", "'my headers'", "['my headers']"),
        ("cflags", """'-DMSG="hi'""", """['-DMSG="hi']"""),
    ],
)
def test_a_string_where_a_list_of_arguments_goes_is_refused_naming_the_list(
    pytester: pytest.Pytester, keyword: str, value: str, meant: str
) -> None:
    """``defines="FOO"`` was iterated into ``-DF -DO -DO`` and the build went on without FOO."""
    pytester.makefile(".c", foo="int has_foo(void) {\n#ifdef FOO\n  return 1;\n#endif\n  return 0;\n}\n")
    pytester.makepyfile(test_lib=f"def test_it(cbuild):\n    cbuild.library('foo.c', {keyword}={value}).has_foo()\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    assert f"TypeError: {keyword}={value}: expected a list of strings, one per argument, as {keyword}={meant}\n" in (
        result.stdout.str()
    )


def test_a_compiler_warning_made_an_error_fails_the_test_at_its_line_without_the_engines_traceback(
    pytester: pytest.Pytester,
) -> None:
    """``-W error::cbuild.errors.CompilerWarning`` failed each test with 30 lines of traceback through
    the fixture and the builder; it reads as a compile error does: the test's line and clang's text."""
    pytester.makefile(".c", warns=WARNS_C)
    pytester.makepyfile(test_w="def test_w(cbuild):\n    cbuild.library('warns.c', cflags=['-Wall'])\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "-W", "error::cbuild.errors.CompilerWarning")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["test_w.py:2: CompilerWarning: *warns.c:2:*warning: unused variable 'unused'*"])
    assert "builder.py" not in result.stdout.str()
