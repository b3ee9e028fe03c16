"""Bad input in the engine: each error says what went wrong and where."""

from __future__ import annotations

import ctypes
import re
import warnings
from pathlib import Path

import pytest

from cbuild import (
    Builder,
    BuildOptions,
    CBuildError,
    CompileError,
    Library,
    LibraryCrashed,
    ProgramCrashed,
    ProgramTimeout,
    SignatureError,
    ToolchainError,
    UnknownFunction,
    run_program,
)
from cbuild.build import toolchain as toolchain_mod
from cbuild.errors import ReadOnlyArgumentWarning


def test_errors_compile_error_shows_clang_diagnostic_with_file_and_line(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    src = write("broken.c", "int f(void) {\n    return missing;\n}\n")
    with pytest.raises(CompileError) as info:
        builder.build([src])
    message = str(info.value)
    assert f"{src}:2:12: error: use of undeclared identifier 'missing'" in message
    assert "Traceback" not in message
    assert not any(line.startswith(". ") for line in message.splitlines())  # no -H header lines


def test_errors_missing_source_names_the_file(builder: Builder, tmp_path: Path) -> None:
    with pytest.raises(CompileError, match=r"source file not found: .*nowhere\.c"):
        builder.build([tmp_path / "nowhere.c"])


def test_errors_unknown_source_language(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(CBuildError, match=r"notes\.txt: unknown source language"):
        builder.build([write("notes.txt", "hello")])


def test_errors_bad_opt_level() -> None:
    with pytest.raises(CBuildError, match="optimisation level '4' is not one of 0, 1, 2, 3, s, z"):
        BuildOptions(opt_level="4")


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"cflags": ("-Wall", "-O3")}, "cflags has '-O3': set the optimisation level with opt_level '3' instead"),
        (
            {"cxxflags": ("-Ofast",)},
            r"cxxflags has .-Ofast.: set the optimisation level with opt_level \(0, 1, 2, 3, s, z\) instead",
        ),
        ({"cflags": ("-O",)}, r"cflags has '-O': .* would change only clang's"),
    ],
)
def test_errors_an_optimisation_flag_beside_opt_level(flags: dict[str, tuple[str, ...]], message: str) -> None:
    # clang would optimise at the flag's level and the instrumented pipeline at opt_level's.
    with pytest.raises(CBuildError, match=message):
        BuildOptions(**flags)  # type: ignore[arg-type]
    BuildOptions(cflags=("-Wall", "-fno-omit-frame-pointer", "-Wno-overflow"))  # other flags are left alone


def test_errors_link_error_names_the_symbol(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    src = write("undef.c", "int nowhere(void);\nint main(void) { return nowhere(); }\n")
    with pytest.raises(CBuildError, match="nowhere"):
        builder.build([src])


def test_errors_segfault_reports_signal_stdout_and_stderr(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    src = write(
        "crash.c",
        '#include <stdio.h>\nint main(void) { printf("hello 4\\n"); fflush(stdout);\n'
        'fprintf(stderr, "about to crash\\n"); fflush(stderr); volatile int *p = 0; return *p; }\n',
    )
    with pytest.raises(ProgramCrashed) as info:
        run_program(builder.build([src]), [])
    message = str(info.value)
    # The function and line come from the fault's record (runtime/instrbudget_rt.c), as a crashed
    # library's do from its host's guard.
    assert "was killed by SIGSEGV in main (crash.c:3) at address 0x0 (exit status -11)" in message
    assert message.endswith("\n--- stdout ---\nhello 4\n--- stderr ---\nabout to crash"), message
    assert info.value.counts is not None  # it crashed in the block of its last call: counted whole


def test_errors_a_crash_whose_counts_are_unknown_says_so(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    # Counted code between the last call and the crash: the counters are exact at calls and
    # returns only, and the crash left them apart from the running total. There was no word of it.
    src = write(
        "crash_loop.c",
        "int main(int argc, char **argv) {\n"
        "    volatile int *p = 0; int s = 0;\n"
        "    for (int i = 0; i < argc * 10; i++) s += i;\n"
        "    return s > 5 ? *p : s;\n"
        "}\n",
    )
    with pytest.raises(ProgramCrashed) as info:
        run_program(builder.build([src]), [])
    assert info.value.counts is None
    assert str(info.value) == (
        "program crash_loop.c was killed by SIGSEGV in main (crash_loop.c:4) at address 0x0 (exit status -11); "
        "its counts are unknown: the counters and "
        "the running total disagree (it crashed between two calls, where they are not exact, or while another "
        "thread was counting)\n(it wrote nothing to stdout or stderr)"
    )


def test_errors_a_crashed_program_names_the_function_and_line(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    # A fault in a function of another file, one with no memory access (no address), and one in the
    # system's C library, which this does not name (the program's own binary has no such code).
    src = write(
        "main_fpe.c", "int divide(int a, int b);\nint main(int argc, char **argv) { return divide(argc, argc - 1); }\n"
    )
    lib = write("divide.c", "__attribute__((noinline)) int divide(int a, int b) {\n    return a / b;\n}\n")
    with pytest.raises(ProgramCrashed) as info:
        run_program(builder.build([src, lib]), [])
    assert str(info.value).startswith("program main_fpe.c was killed by SIGFPE in divide (divide.c:2) (exit status -8)")
    outside = write(
        "outside.c",
        "#include <string.h>\nint main(void) { const char *volatile p = 0; return (int)strlen(p); }\n",
    )
    with pytest.raises(ProgramCrashed) as info:
        run_program(builder.build([outside], options=BuildOptions(count_libraries=False)), [])
    assert str(info.value).startswith("program outside.c was killed by SIGSEGV (exit status -11)")


def test_errors_a_forked_childs_fault_is_not_the_programs(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    # The child's fault record named its null read as the place of the parent's later abort().
    src = write(
        "fork_abort.c",
        "#include <stdlib.h>\n#include <sys/wait.h>\n#include <unistd.h>\n"
        "int main(void) {\n    if (fork() == 0) { int *volatile p = 0; return *p; }\n"
        "    int status; wait(&status);\n    abort();\n}\n",
    )
    with pytest.raises(ProgramCrashed) as info:
        run_program(builder.build([src]), [])
    assert str(info.value).startswith("program fork_abort.c was killed by SIGABRT (exit status -6)")


def test_errors_abort_reports_sigabrt(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    src = write("abort.c", "#include <stdlib.h>\nint main(void) { abort(); }\n")
    with pytest.raises(ProgramCrashed, match="SIGABRT") as info:
        run_program(builder.build([src]), [])
    assert str(info.value).endswith("\n(it wrote nothing to stdout or stderr)")


def test_errors_infinite_loop_times_out(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    src = write("spin.c", "int main(void) { volatile int x = 1; while (x) {} return 0; }\n")
    with pytest.raises(ProgramTimeout, match=r"spin\.c .*ran past its 0\.5 s timeout"):
        run_program(builder.build([src]), [], timeout=0.5)


def test_errors_run_arguments_are_checked_before_the_program_runs(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    # A string for args ran the program with one argument per character ("50" as 5 and 0); a
    # negative or NaN timeout failed in select() after the program had started.
    artifact = builder.build([write("args.c", "int main(int argc, char **argv) { return argc; }\n")])
    with pytest.raises(CBuildError, match=r"args is a list of the program's arguments, got '50'; pass \['50'\]"):
        run_program(artifact, "50")  # type: ignore[arg-type]
    for timeout in (-1, 0, float("nan"), float("inf"), True):
        with pytest.raises(CBuildError, match=r"timeout must be a positive number of seconds, got"):
            run_program(artifact, [], timeout=timeout)
    with pytest.raises(CBuildError, match=r"input is the program's stdin as bytes, got int"):
        run_program(artifact, [], input=123)  # type: ignore[arg-type]
    assert run_program(artifact, ["50"], input=bytearray(b"x"), timeout=5).returncode == 2
    assert run_program(artifact, [], input=memoryview(b"x")).returncode == 1


def test_errors_nonzero_exit_is_a_result_not_an_error(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    src = write("exit3.c", "int main(void) { return 3; }\n")
    assert run_program(builder.build([src]), []).returncode == 3


SIGS = """\
#include <stdint.h>
#include <stddef.h>
unsigned char low_byte(unsigned x) { return (unsigned char)x; }
signed char neg(signed char x) { return (signed char)-x; }
double scale(double x, float f) { return x * f; }
size_t count_a(const char *s, size_t n) { size_t c = 0; for (size_t i = 0; i < n; i++) c += s[i] == 'a'; return c; }
void fill(uint8_t *out, size_t n, uint8_t v) { for (size_t i = 0; i < n; i++) out[i] = v; }
int64_t add64(int64_t a, int64_t b) { return a + b; }
struct pair { long a, b, c; };
long sum_pair(struct pair p) { return p.a + p.b + p.c; }
int variadic(int n, ...) { return n; }
long double widen(double x) { return x; }
int sum16(const int16_t *a, int n) { int s = 0; for (int i = 0; i < n; i++) s += a[i]; return s; }
size_t length(char *s) { size_t n = 0; while (s[n]) n++; return n; }
void fill_both(uint8_t *a, uint8_t *b, size_t n, uint8_t v) { for (size_t i = 0; i < n; i++) a[i] = b[i] = v; }
"""


@pytest.fixture
def sigs(builder: Builder, write, tmp_path: Path) -> Library:  # type: ignore[no-untyped-def]
    return Library(builder.build([write("sigs.c", SIGS)], kind="library"))


def test_library_types_follow_the_c_signature(sigs: Library) -> None:
    assert sigs.low_byte(0x1FF) == 255
    assert sigs.neg(5) == -5
    assert sigs.scale(2.5, 2) == 5.0
    assert sigs.count_a(b"banana", 6) == 3
    buf = bytearray(4)
    sigs.fill(buf, 4, 7)
    assert buf == bytearray(b"\x07" * 4)
    arr = (ctypes.c_uint8 * 3)()
    sigs.fill(arr, 3, 9)
    assert list(arr) == [9, 9, 9]
    assert sigs.add64(2**40, 1) == 2**40 + 1
    assert sigs.sum_pair({"a": 1, "b": 2, "c": 3}) == 6


def test_library_wrong_argument_types_are_clear(sigs: Library) -> None:
    with pytest.raises(SignatureError, match=r"count_a\(\) argument 1 \(const char \*\): got str 'banana'; pass bytes"):
        sigs.count_a("banana", 6)
    with pytest.raises(SignatureError, match=r"add64\(\) argument 2 \(int64_t\): expected int, got float 1.5"):
        sigs.add64(1, 1.5)
    with pytest.raises(SignatureError, match=r"add64\(\) takes 2 arguments, 1 given: int64_t add64\(int64_t"):
        sigs.add64(1)
    with pytest.raises(SignatureError, match=r"low_byte\(\) takes 1 argument, 2 given"):
        sigs.low_byte(1, 2)
    with pytest.raises(SignatureError, match=r"add64\(\) takes its arguments by position, as C does: .*; got b="):
        sigs.add64(1, b=2)
    out_of_range = r"low_byte\(\) argument 1 \(unsigned int\): 4294967296 is out of range \[0, 4294967295\]"
    with pytest.raises(SignatureError, match=out_of_range):
        sigs.low_byte(2**32)
    with pytest.raises(SignatureError, match=r"fill\(\) argument 1 \(uint8_t \*\): expected bytes, a writable buffer"):
        sigs.fill(1.5, 1, 1)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        # A misspelt field was dropped, a missing one zeroed: the call ran on other values than given.
        ({"a": 1, "b": 2, "cc": 3}, r"struct pair has no field 'cc' \(did you mean c\?\); its fields: a, b, c"),
        ({"a": 1, "b": 2}, r"struct pair: no value for c \(give every field\)"),
        ((1, 2), r"struct pair has 3 field\(s\) \(a, b, c\), got a tuple of 2"),
        ((1, 2, 3, 4), r"struct pair has 3 field\(s\) \(a, b, c\), got a tuple of 4"),
        (("x", 2, 3), r"struct pair: .*'str' object cannot be interpreted as an integer"),
    ],
)
def test_library_struct_arguments_name_every_field(sigs: Library, value: object, message: str) -> None:
    with pytest.raises(SignatureError, match=r"sum_pair\(\) argument 1 \(struct pair\): " + message):
        sigs.sum_pair(value)
    assert sigs.sum_pair((1, 2, 3)) == 6


def test_library_writes_into_bytes_are_not_lost_silently(sigs: Library) -> None:
    # bytes are read-only: the library's process wrote into a copy, and nothing said so.
    data = b"abcd"
    with pytest.warns(
        ReadOnlyArgumentWarning,
        match=r"fill\(\) wrote into argument 1 \(uint8_t \*\), given as bytes .*, which is read-only: what it "
        r"wrote is lost; pass a bytearray",
    ):
        sigs.fill(data, 4, 7)
    assert data == b"abcd"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert sigs.length(b"abc") == 3  # a char * it only reads
        sigs.fill(b"\x07\x07", 2, 7)  # it wrote what was there
        assert sigs.count_a(b"banana", 6) == 3  # a const pointer
        buf = bytearray(2)
        sigs.fill(buf, 2, 9)
    assert buf == b"\x09\x09"
    # With warnings as errors, the buffers after the read-only one still come back first.
    later = bytearray(2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ReadOnlyArgumentWarning):
            sigs.fill_both(b"ab", later, 2, 5)
    assert later == b"\x05\x05"


def test_library_typed_arrays_must_hold_the_pointees_type(sigs: Library) -> None:
    # An array of 4-byte ints for an int16_t pointer was read as twice as many 16-bit values: 3, not 6.
    import array

    with pytest.raises(
        SignatureError,
        match=r"sum16\(\) argument 1 \(const int16_t \*\): array.* holds 4-byte items, and the function reads "
        r"const int16_t \(2 bytes each\)",
    ):
        sigs.sum16(array.array("i", [1, 2, 3]), 3)
    with pytest.raises(SignatureError) as info:
        sigs.sum16((ctypes.c_int64 * 3)(1, 2, 3), 3)
    assert str(info.value) == (  # not the array's repr, "<...c_long_Array_3 object at 0x7f...>"
        "sum16() argument 1 (const int16_t *): a ctypes array of 3 c_long holds 8-byte items, and the function "
        "reads const int16_t (2 bytes each)"
    )
    # One item is checked too: a pointer to a double was read as an int16_t without a word.
    with pytest.raises(SignatureError, match=r"a ctypes pointer to c_double is an item of 8 bytes, and the function"):
        sigs.sum16(ctypes.pointer(ctypes.c_double(1.0)), 1)
    with pytest.raises(SignatureError, match=r"byref\(\) of c_double\(1.0\) is an item of 8 bytes"):
        sigs.sum16(ctypes.byref(ctypes.c_double(1.0)), 1)
    # A narrower one too: a call would read past it (a 1-byte item for an int16_t *).
    with pytest.raises(SignatureError, match=r"byref\(\) of c_bool\(True\) is an item of 1 byte, and"):
        sigs.sum16(ctypes.byref(ctypes.c_bool(True)), 1)
    assert sigs.sum16(ctypes.byref(ctypes.c_int16(7)), 1) == 7
    assert sigs.count_a(ctypes.byref(ctypes.c_uint32(0x61616161)), 4) == 4  # a char pointer reads any item
    assert sigs.sum16(array.array("h", [1, 2, 3]), 3) == 6
    assert sigs.sum16(((ctypes.c_int16 * 2) * 2)((1, 2), (3, 4)), 4) == 10  # a 2-D array's items
    assert sigs.sum16(bytes([1, 0, 2, 0]), 2) == 3  # bytes are memory of any type
    assert sigs.count_a(array.array("I", [0x61616161]), 4) == 4  # and so is what a char pointer reads


def test_library_unsupported_signatures_say_why(sigs: Library) -> None:
    with pytest.raises(SignatureError, match=r"sum_pair\(\) argument 1 \(struct pair\): expected struct pair"):
        sigs.sum_pair(1)
    long_double = r"long double widen\(double x\): cannot be called from Python: its result \(long double\)"
    with pytest.raises(SignatureError, match=long_double):
        sigs.widen(1.0)
    with pytest.raises(SignatureError, match="variadic"):
        sigs.variadic(1)


def test_library_unknown_function_lists_exports(sigs: Library) -> None:
    with pytest.raises(AttributeError, match=r"exports no function 'nope'; it has: add64, count_a"):
        _ = sigs.nope
    close = r"exports no function 'count_b' \(did you mean count_a\?\); it has: add64"
    with pytest.raises(UnknownFunction, match=close):
        _ = sigs.count_b
    assert not hasattr(sigs, "nope")  # still an AttributeError


def test_library_a_static_function_is_said_to_be_static(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    # It said "exports no function 'twice' (did you mean quad?)", as of a name nowhere in the code.
    src = write("statics.c", "static int twice(int x) { return 2 * x; }\nint quad(int x) { return twice(twice(x)); }\n")
    with Library(builder.build([src], kind="library")) as lib:
        with pytest.raises(UnknownFunction) as info:
            lib.twice(1)
        assert str(info.value) == (
            "the library built from statics.c exports no function 'twice': statics.c defines it, but not as a "
            "function the library exports (static or inline functions are not); remove static, or test it "
            "through an exported function that calls it"
        )
        # The counted C library's own functions are not the user's to be told about.
        with pytest.raises(UnknownFunction, match=r"exports no function '__instrbudget_heap_get'; it has: quad$"):
            lib.function("__instrbudget_heap_get")


MANGLED_CC = """\
int plain_cpp(int x) { return x * 2; }
namespace ns { int in_ns(int x) { return x + 1; } }
"""


def test_a_cxx_function_without_extern_c_is_named_with_its_symbol(builder: Builder, tmp_path: Path) -> None:
    """A C++ function's symbol is mangled: asking for it by its name says which symbol it has,
    and how to call it; the symbol works as an attribute, as ``function()`` does."""
    source = tmp_path / "mangled.cc"
    source.write_text(MANGLED_CC)
    with Library(builder.build([source], kind="library")) as lib:
        with pytest.raises(
            UnknownFunction,
            match=r"exports no function 'plain_cpp'; it has the C\+\+ function plain_cpp\(int\) as _Z9plain_cppi: "
            r'declare it extern "C" to call it by its name, or call it by its symbol, '
            r"lib.function\('_Z9plain_cppi'\)\(...\)",
        ):
            _ = lib.plain_cpp
        with pytest.raises(UnknownFunction, match=r"ns::in_ns\(int\) as _ZN2ns5in_nsEi"):
            _ = lib.in_ns
        assert lib._Z9plain_cppi(5) == 10
        assert lib.function("_ZN2ns5in_nsEi")(5) == 6


def test_library_names_of_its_own_are_few_and_documented(builder: Builder, tmp_path: Path) -> None:
    """C functions named like the library object's attributes: ``type_map`` and ``enum_type`` were
    public attributes the docs did not list, so ``lib.type_map(1)`` raised a TypeError; now they are
    functions as any other, and each name the docs list is reached through ``function()``."""
    docs = (Path(__file__).resolve().parents[1] / "docs" / "fixture.md").read_text()
    listed = re.search(r"is one of the library object's\s+own \(([^)]*)\)", docs)
    assert listed is not None
    own = re.findall(r"`(\w+)`", listed.group(1))
    source = tmp_path / "names.c"
    names = ["type_map", "enum_type", *own]
    source.write_text("".join(f"int {name}(int a) {{ return a + {n}; }}\n" for n, name in enumerate(names)))
    with Library(builder.build([source], kind="library")) as lib:
        public = {name for name in dir(lib) if not name.startswith("_")}
        assert public == set(own)  # every name of its own is listed
        assert lib.type_map(1) == 1
        assert lib.enum_type(1) == 2
        for n, name in enumerate(names):
            assert lib.function(name)(1) == 1 + n


THROWS_CC = """\
#include <vector>
extern "C" int at(int i) {
    std::vector<int> v(3);
    return v.at(i);
}
int main(int argc, char **) { return at(argc + 5); }
"""


def test_an_uncaught_cxx_exception_is_named_in_the_crash(builder: Builder, tmp_path: Path) -> None:
    """A C++ exception that nothing catches aborts the process; the crash names it (libc++abi's
    report), for a library call and for a program."""
    source = tmp_path / "throws.cc"
    source.write_text(THROWS_CC)
    with Library(builder.build([source], kind="library", keep_main=True)) as lib:
        assert lib.at(1) == 0
        with pytest.raises(
            LibraryCrashed,
            match=r"at\(\) crashed: killed by SIGABRT after an uncaught C\+\+ exception: std::out_of_range: vector;",
        ):
            lib.at(7)
    with pytest.raises(
        ProgramCrashed,
        match=r"killed by SIGABRT \(exit status -6\) after an uncaught C\+\+ exception: std::out_of_range: vector",
    ):
        run_program(builder.build([source]))


def test_unknown_function_in_a_test_is_one_line_with_close_matches(pytester: pytest.Pytester) -> None:
    pytester.makefile(".c", work="int work(int n) { return n; }\nint worker(void) { return 1; }\n")
    pytester.makepyfile(test_w="def test_w(cbuild):\n    cbuild.library('work.c').wrok(3)\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "test_w.py:2: UnknownFunction: the library built from work.c exports no function 'wrok' "
            "(did you mean work or worker?); it has: work, worker"
        ]
    )
    assert "cbuild/run/library.py" not in result.stdout.str()  # no traceback through the engine
    result.stdout.fnmatch_lines(["test_w.py::test_w *-  error"])  # built, measured nothing (docs/fixture.md)


def test_toolchain_major_version_mismatch_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(toolchain_mod, "_llvmlite_version", lambda: "21.1.0")
    with pytest.raises(ToolchainError) as info:
        toolchain_mod.find_toolchain()
    message = str(info.value)
    assert "clang 22." in message
    assert "LLVM 21.1.0" in message
    assert "pip install" in message


def test_toolchain_configured_clang_missing() -> None:
    with pytest.raises(
        ToolchainError, match=r"the clang given \(clang in \[tool.instrbudget\], or --clang\) was not found: /no/clang"
    ):
        toolchain_mod.find_toolchain("/no/clang")


def test_demangle_for_reports() -> None:
    from cbuild.build.demangle import _cxa_demangle, demangle

    assert demangle("main") == "main"
    if _cxa_demangle() is None:
        pytest.skip("no C++ runtime with __cxa_demangle on this machine")
    assert demangle("_Z5parseRKi") == "parse(int const&)"
    assert demangle("_Znot-a-symbol") == "_Znot-a-symbol"
