"""Static functions that share a name across sources are reported as ``f (file.c)``: a name that
depends on their own source, not on how many names the linker had seen before them."""

from __future__ import annotations

from pathlib import Path

from cbuild import Builder, BuildOptions, IrCountModel, run_program
from cbuild.build.demangle import demangle

UNIT = """\
static __attribute__((noinline)) int helper(int x) {{
    volatile int s = 0;
    for (int i = 0; i < x + {seed}; i++) s += i;
    return s;
}}
int {name}(int x) {{ return helper(x); }}
"""

MAIN = """\
#include <stdlib.h>
int from_a(int), from_b(int), from_c(int);
static __attribute__((noinline)) int unrelated(int x) { return x + 1; }
int main(int argc, char **argv) {
    int n = atoi(argv[1]);
    return (from_a(n) + from_b(n) + from_c(n) + unrelated(n)) & 1;
}
"""


def _functions(builder: Builder, sources: list[Path]) -> dict[str, int]:
    result = run_program(builder.build(sources, options=BuildOptions(opt_level="1")), [50])
    assert result.counts is not None
    (cost,) = IrCountModel().evaluate(result.counts)
    return {name: value for name, value in cost.functions.items() if "helper" in name}


def test_static_functions_of_one_name_are_named_by_their_file_and_stay_so(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    a = write("src/a.c", UNIT.format(seed=3, name="from_a"))
    b = write("src/b.c", UNIT.format(seed=5, name="from_b"))
    c = write("lib/a.c", UNIT.format(seed=7, name="from_c"))  # the same file name in another folder
    main = write("src/main.c", MAIN)
    extra = write("src/extra.c", "static int helper2(int x) { return x; }\nint unused(int x) { return helper2(x); }\n")
    names = _functions(builder, [extra, a, b, c, main])
    assert set(names) == {"helper (src/a.c)", "helper (src/b.c)", "helper (lib/a.c)"}
    assert len(set(names.values())) == 3  # each its own loop (50 + 3, 50 + 5, 50 + 7 trips), counted apart
    # Removing an unrelated source (or reordering) changes no name and no count.
    assert _functions(builder, [c, b, a, main]) == names


def test_a_static_name_shared_with_an_external_function(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    shared = write("shared.c", "int helper(int x) { return 2 * x; }\n")
    own = write("own.c", UNIT.format(seed=3, name="from_a"))
    main = write(
        "main.c", "int helper(int);\nint from_a(int);\nint main(void) { return (helper(1) + from_a(3)) & 1; }\n"
    )
    result = run_program(builder.build([shared, own, main], options=BuildOptions(opt_level="1")))
    assert result.counts is not None
    (cost,) = IrCountModel().evaluate(result.counts)
    assert {"helper", "helper (own.c)"} <= set(cost.functions)  # the external one keeps its name


def test_demangled_static_cxx_names_keep_their_file() -> None:
    assert demangle("_ZL6helperi (src/a.cc)") == "helper(int) (src/a.cc)"
    assert demangle("helper (src/a.c)") == "helper (src/a.c)"
    assert demangle("_ZL6helperi") == "helper(int)"


def test_cxx20_names_the_host_cannot_read_are_demangled_by_the_toolchains_demangler() -> None:
    """clang 22 mangles a constrained template parameter as ``Tk`` and a non-type one as ``Tn``,
    which older host demanglers (GCC 12's) refuse: the ziglang wheel's libc++abi reads them."""
    from cbuild.build import demangle as names

    constrained = "_Z5twiceITkNSt3__18integralEiET_S1_"  # template <std::integral T> T twice(T)
    assert names._toolchain_demangler() is not None
    assert names._demangled(names._toolchain_demangler(), constrained) == "int twice<int>(int)"
    assert demangle(constrained) == "int twice<int>(int)"
    assert demangle("_Zbad") == "_Zbad"  # neither reads it: the symbol stays
