"""A build that defines C library functions itself (its own ``strlen``, ``memcpy``) keeps them.

Two ways this failed (a docs audit): in a program, the runtime's own calls of ``memcpy``,
``memset`` and ``strlen`` (writing the counts at exit) ran the program's definitions,
instrumented, so every run stopped with "running total differs from the block counters"; in a
library, the program's ``strlen`` bound to the host process's C library, loaded first, which
ran uncounted in its place and gave its own answer.
"""

from __future__ import annotations

import pytest

from cbuild import Builder, BuildOptions, IrCountModel, Library, run_program

MODEL = IrCountModel()

#: Each function counts its calls; main calls each a known number of times, with lengths known only
#: at run time (so that no call is expanded into moves).
OWN_PROGRAM = r"""
#include <stdio.h>
#include <string.h>
static int calls[5];
size_t strlen(const char *s) { size_t n = 0; calls[0]++; while (s[n]) n++; return n; }
void *memcpy(void *d, const void *s, size_t n) {
    char *o = d; const char *i = s; calls[1]++; while (n--) *o++ = *i++; return d;
}
void *memset(void *d, int c, size_t n) { char *o = d; calls[2]++; while (n--) *o++ = (char)c; return d; }
int strcmp(const char *a, const char *b) { calls[3]++; while (*a && *a == *b) a++, b++; return *a - *b; }
void *memmove(void *d, const void *s, size_t n) {
    char *o = d; const char *i = s; calls[4]++;
    if (o < i) while (n--) *o++ = *i++; else while (n--) o[n] = i[n];
    return d;
}
int main(int argc, char **argv) {
    char a[300], b[300];
    size_t n = strlen(argv[0]) % 7 + 250;
    memset(a, 'x', n); a[n] = 0;
    memcpy(b, a, n + 1);
    memmove(b + 1, b, n - 1);
    int same = strcmp(a, b) == 0;
    size_t len = strlen(b);
    printf("%d %d %d %d %d %zu %d\n", calls[0], calls[1], calls[2], calls[3], calls[4], len, same);
    return 0;
}
"""

OWN_LIBRARY = r"""
#include <string.h>
/* Not the C library's answer: a call that reached the host's strlen would say so. */
__attribute__((noinline)) size_t strlen(const char *s) { size_t n = 0; while (s[n]) n++; return n + 100; }
int work(const char *s) { return (int)strlen(s); }
"""


@pytest.mark.parametrize("count_libraries", [True, False])
def test_a_program_with_its_own_string_functions_runs_them_alone(
    builder: Builder, write, count_libraries: bool
) -> None:  # type: ignore[no-untyped-def]
    artifact = builder.build([write("own.c", OWN_PROGRAM)], options=BuildOptions(count_libraries=count_libraries))
    runs = [run_program(artifact, []) for _ in range(2)]
    for result in runs:
        assert result.returncode == 0, result.stderr.decode()
        # Two strlen calls, one of each of the others: the runtime called none of them.
        assert result.stdout.split()[:5] == [b"2", b"1", b"1", b"1", b"1"]
        assert result.stdout.split()[6] == b"1"
    costs = [MODEL.evaluate(result.counts)[0] for result in runs if result.counts is not None]
    assert len(costs) == 2
    assert costs[0].total == costs[1].total
    # The program's own, counted under their names (its strcmp is inlined into main). The counted
    # C library's own functions call its copies (printf's memcpy), as a library built apart would.
    for name in ("strlen", "memcpy", "memset", "memmove"):
        assert costs[0].functions[name] > 0, name


@pytest.mark.parametrize("count_libraries", [True, False])
def test_a_library_with_its_own_strlen_calls_it_not_the_hosts(builder: Builder, write, count_libraries: bool) -> None:  # type: ignore[no-untyped-def]
    artifact = builder.build(
        [write("ownlib.c", OWN_LIBRARY)], kind="library", options=BuildOptions(count_libraries=count_libraries)
    )
    with Library(artifact) as lib:
        assert lib.work(b"hello") == 105
        assert lib.strlen(b"abc") == 103  # still exported under its name
        totals = []
        for text in (b"hello", b"hello" * 2, b"hello" * 3):
            since = lib.snapshot()
            assert lib.work(text) == len(text) + 100
            (cost,) = MODEL.evaluate(lib.counts(since))
            assert set(cost.functions) == {"work", "strlen"}
            totals.append(cost.total)
        # Its loop ran, counted: the same instructions for each further five characters.
        assert totals[2] - totals[1] == totals[1] - totals[0] > 0


#: Touches pages for the zkvm model's estimate, whose bookkeeping (a 1 KiB table reset as it starts
#: and at each segment's end) the compiler had made a call of memset: the program's own.
PAGES = r"""
#include <stdio.h>
#include <string.h>
static int calls;
void *memset(void *d, int c, size_t n) { char *o = d; calls++; while (n--) *o++ = (char)c; return d; }
int main(void) {
    static char big[1 << 22];
    for (long i = 0; i < (long)sizeof big; i += 512) big[i] = 1;
    printf("%d\n", calls);
    return 0;
}
"""


def test_a_models_estimate_calls_no_memset_of_the_programs(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    from cbuild.models import default_registry

    zkvm = default_registry().create("zkvm", {"execute": False})
    result = run_program(builder.build([write("pages.c", PAGES)], models=[zkvm]), [])
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout == b"0\n"  # the program never calls it; the model did, as it started and at each segment


def test_only_a_definition_for_the_whole_build_replaces_the_librarys() -> None:
    """A static strlen serves its unit alone (the other units' calls still reach the counted one),
    and a C99 inline one only stands for a definition elsewhere."""
    from cbuild.build.libc import defined_names

    units = [
        "define internal i64 @strlen(ptr %s) {\n}",
        "define available_externally ptr @memcpy(ptr %d, ptr %s, i64 %n) {\n}",
        "define dso_local i32 @strcmp(ptr %a, ptr %b) {\n}",
    ]
    assert defined_names(units) == {"strcmp"}
    assert defined_names([*units, "define i64 @strlen(ptr %s) {\n}"]) == {"strcmp", "strlen"}
