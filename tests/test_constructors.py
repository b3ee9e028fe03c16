"""Static constructors and destructors run in built programs and libraries (cbuild/build/startup.py).

They did not: llvmlite's code generator put them in ``.ctors``, which neither glibc nor musl runs,
so globals kept their zero bytes without a word (found by a new user's C++ walkthrough).
"""

from __future__ import annotations

import pytest

from cbuild import Builder, BuildOptions, Library, run_program
from cbuild.build.startup import place_structors

C_PROGRAM = """\
#include <stdio.h>
static volatile int n = 10;
int value;
__attribute__((constructor)) static void sum(void) { for (int i = 0; i < n; i++) value += i; }
__attribute__((constructor(200))) static void early(void) { puts("early"); }
__attribute__((destructor)) static void fini(void) { printf("fini %d\\n", value); }
int main(void) { printf("main %d\\n", value); return 0; }
"""

CXX_PROGRAM = """\
#include <cstdio>
#include <string>
#include <vector>
static int compute() { int s = 0; for (int i = 0; i < 100; i++) s += i; return s; }
int g_value = compute();
std::string g_name = std::string("instr") + "budget, long enough to live on the heap";
struct Noisy { Noisy() { std::puts("constructed"); } ~Noisy() { std::puts("destroyed"); } } g_noisy;
template <class T> struct Holder { static inline std::vector<T> items = {3, 1, 2}; };
int main() { std::printf("%d %zu %d\\n", g_value, g_name.size(), Holder<int>::items[0]); return 0; }
"""

LIBRARY = """\
static volatile int n = 10;
static int value;
__attribute__((constructor)) static void sum(void) { for (int i = 0; i < n; i++) value += i; }
int get(void) { return value; }
"""


@pytest.mark.parametrize("count_libraries", [True, False])
def test_a_c_programs_constructors_and_destructors_run_in_priority_order(
    builder: Builder, write, count_libraries: bool
) -> None:  # type: ignore[no-untyped-def]
    artifact = builder.build([write("ctors.c", C_PROGRAM)], options=BuildOptions(count_libraries=count_libraries))
    result = run_program(artifact, [])
    assert result.stdout == b"early\nmain 45\nfini 45\n"


def test_a_cxx_programs_globals_are_initialised_and_destroyed(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    result = run_program(builder.build([write("globals.cc", CXX_PROGRAM)]), [])
    assert result.stdout == b"constructed\n4950 44 3\ndestroyed\n"


def test_a_librarys_constructors_run_at_load_and_are_not_counted(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    with Library(builder.build([write("lib.c", LIBRARY)], kind="library")) as lib:
        assert lib.get() == 45
        # get() is a load and a return: the constructor's loop, run as the library loaded, is not
        # the test's (as an extension module's initialisation is not).
        counts = lib.counts()
        assert sum(n * size for n, size in zip(counts.counts, counts.table.sizes, strict=True)) == 2


def test_place_structors_keeps_order_priority_groups_and_used_globals() -> None:
    entry = "{{ i32, ptr, ptr }} {{ i32 {}, ptr @{}, ptr {} }}"
    ctors = ", ".join(
        [entry.format(65535, "a", "null"), entry.format(101, "b", "null"), entry.format(65535, "i", "@v")]
    )
    text = (
        "@x = global i32 0\n"
        "@v = linkonce_odr global i32 0, comdat\n"
        '@llvm.compiler.used = appending global [1 x ptr] [ptr @x], section "llvm.metadata"\n'
        f"@llvm.global_ctors = appending global [3 x {{ i32, ptr, ptr }}] [{ctors}]\n"
        f"@llvm.global_dtors = appending global [1 x {{ i32, ptr, ptr }}] [{entry.format(65535, 'c', 'null')}]\n"
    )
    out = place_structors(text)
    assert "global_ctors" not in out
    assert "global_dtors" not in out
    names = ", ".join(f"ptr @__instrbudget.{n}" for n in ("ctors.0", "ctors.1", "ctors.2", "dtors.0"))
    assert out.splitlines()[-5:] == [
        '@__instrbudget.ctors.0 = private global ptr @a, section ".init_array"',
        '@__instrbudget.ctors.1 = private global ptr @b, section ".init_array.101"',
        '@__instrbudget.ctors.2 = private global ptr @i, section ".init_array", comdat($v)',
        '@__instrbudget.dtors.0 = private global ptr @c, section ".fini_array"',
        f'@llvm.compiler.used = appending global [5 x ptr] [ptr @x, {names}], section "llvm.metadata"',
    ]
    assert out.count("@llvm.compiler.used") == 1
    assert place_structors("@x = global i32 0\n") == "@x = global i32 0\n"  # nothing to place


def test_a_librarys_constructor_that_crashes_or_hangs_fails_its_load_saying_so(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    # Constructors run now: one that hangs would have held the test for ever (the load had no time
    # limit), one that crashes was named as a memory file ("in 6+0x349d").
    from cbuild import LibraryCrashed, LibraryTimeout

    boom = write("boom.c", "static int *volatile p;\n__attribute__((constructor)) static void boom(void) { *p = 1; }\n")
    with pytest.raises(LibraryCrashed) as crashed:
        Library(builder.build([boom], kind="library"))
    assert str(crashed.value).startswith(
        "loading the library built from boom.c (its constructors) crashed: killed by SIGSEGV in boom (boom.c:2) "
        "at address 0x0"
    )
    spin = write("spin.c", "__attribute__((constructor)) static void spin(void) { for (volatile int i = 1; i;) {} }\n")
    with pytest.raises(LibraryTimeout, match=r"^loading the library built from spin\.c \(its constructors\) ran past"):
        Library(builder.build([spin], kind="library"), timeout=1)
