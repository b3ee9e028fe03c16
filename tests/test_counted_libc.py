"""The counted C library (cbuild/libc): the work of string, memory, allocation, sorting and
conversion functions shows in the count, the same from any path and environment."""

from __future__ import annotations

import json
import platform
import re
from dataclasses import replace
from pathlib import Path

import pytest

from cbuild import Builder, BuildOptions, IrCountModel, Library, run_program
from cbuild.build.libc import PREFIX, aliases, functions, point_at_libc
from cbuild.errors import CBuildError
from cbuild.models import default_registry
from cbuild.models.costs import outside_calls

MODEL = IrCountModel()
COUNTED = BuildOptions(count_libraries=True)

QUADRATIC_C = """\
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    int n = atoi(argv[1]);
    char *s = malloc(n + 1);
    memset(s, 'a', n);
    s[n] = 0;
    for (size_t i = 0; i < strlen(s); i++)
        if (s[i] == 'a') s[i] = 'A';
    int ok = s[n - 1] == 'A';
    free(s);
    return !ok;
}
"""

COPY_C = """\
#include <string.h>
void copy(char *dst, const char *src, unsigned long n) { memcpy(dst, src, n); }
"""

SORT_C = """\
#include <stdlib.h>
static long calls;
static int by_value(const void *a, const void *b) {
    calls++;
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}
long sort_scrambled(int n) {
    int *v = malloc(n * sizeof *v);
    for (int i = 0; i < n; i++) v[i] = (int)((i * 2654435761u) % 100003u);
    calls = 0;
    qsort(v, n, sizeof *v, by_value);
    for (int i = 1; i < n; i++)
        if (v[i - 1] > v[i]) return -1;
    free(v);
    return calls;
}
int main(int argc, char **argv) { return sort_scrambled(atoi(argv[1])) < 0; }
"""

ADDRESSES_C = """\
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
/* Work that follows the address of a local variable at each depth of a recursion. */
static unsigned long walk(int depth, unsigned long work) {
    volatile char local[24];
    uintptr_t h = (uintptr_t)&local[0] * 0x9E3779B97F4A7C15ull;
    for (unsigned k = 0; k < (unsigned)(h >> 59); k++) work += k;
    return depth ? walk(depth - 1, work) : work;
}
/* A hash table keyed by heap addresses: its collisions (and so its count) follow the addresses. */
int main(void) {
    int here;
    printf("stack %p %lu\\n", (void *)&here, walk(200, 0));
    enum { N = 2000, BUCKETS = 61 };
    unsigned long chain[BUCKETS] = {0}, work = 0;
    void *keep[N];
    for (int i = 0; i < N; i++) {
        keep[i] = malloc(16 + i % 50);
        uintptr_t h = (uintptr_t)keep[i] * 0x9E3779B97F4A7C15ull;
        unsigned b = (unsigned)(h >> 58) % BUCKETS;
        for (unsigned long k = 0; k < chain[b]; k++) work++;
        chain[b]++;
    }
    printf("%lu %p\\n", work, keep[0]);
    for (int i = 0; i < N; i++) free(keep[i]);
    return 0;
}
"""

HOLD_C = """\
#include <stdlib.h>
int main(int argc, char **argv) {
    int n = atoi(argv[1]);
    void **p = malloc(64 * sizeof *p);
    for (int i = 0; i < n; i++) p[i] = malloc(1024);
    for (int i = 0; i < n; i++) free(p[i]);
    free(p);
    return 0;
}
"""


def _total(result: object) -> int:
    counts = getattr(result, "counts", None)
    assert counts is not None
    (cost,) = MODEL.evaluate(counts)
    return cost.total


def _run_total(builder: Builder, source: Path, *args: object, options: BuildOptions = COUNTED) -> int:
    program = builder.build([source], options=options)
    result = run_program(program, args)
    assert result.returncode == 0, result.stderr
    return _total(result)


def test_counted_libc_quadratic_strlen_loop_shows_quadratic(builder: Builder, shared_source) -> None:  # type: ignore[no-untyped-def]
    source = shared_source("quadratic.c", QUADRATIC_C)
    small, large = _run_total(builder, source, 200), _run_total(builder, source, 2000)
    assert large >= 50 * small, (small, large)


def test_counted_libc_switched_off_counts_only_own_code(builder: Builder, shared_source) -> None:  # type: ignore[no-untyped-def]
    """count_libraries = false: strlen is the host's again and costs its call (today's behaviour)."""
    source = shared_source("quadratic.c", QUADRATIC_C)
    options = BuildOptions(count_libraries=False)
    small, large = _run_total(builder, source, 200, options=options), _run_total(builder, source, 2000, options=options)
    assert large < 12 * small, (small, large)


def test_counted_libc_memcpy_of_a_runtime_length_grows_with_it(builder: Builder, shared_source) -> None:  # type: ignore[no-untyped-def]
    lib = Library(builder.build([shared_source("copy.c", COPY_C)], kind="library", options=COUNTED))
    src = bytes(range(256)) * 400
    dst = bytearray(len(src))

    def cost(n: int) -> int:
        before = lib.snapshot()
        lib.copy(dst, src, n)
        (c,) = MODEL.evaluate(lib.counts(before))
        return c.total

    small, large = cost(10_000), cost(100_000)
    assert large >= 5 * small, (small, large)
    assert bytes(dst) == src[:100_000] + bytes(len(src) - 100_000)


FIXED_C = """\
#include <string.h>
struct big { char bytes[65536]; };
struct small { char bytes[16]; };
char scratch[1 << 20]; /* not static: its clearing is kept */
void clear_fixed(void) { memset(scratch, 0, sizeof scratch); }
void clear(unsigned long n) { memset(scratch, 0, n); }
void copy_fixed(char *dst, const char *src) { memcpy(dst, src, 65536); }
void copy(char *dst, const char *src, unsigned long n) { memcpy(dst, src, n); }
void assign_big(struct big *a, const struct big *b) { *a = *b; }
void assign_small(struct small *a, const struct small *b) { *a = *b; }
"""


def test_counted_libc_long_constant_length_copies_cost_what_runtime_lengths_do(builder: Builder, shared_source) -> None:  # type: ignore[no-untyped-def]
    """A memcpy or memset of a long constant length (and a large struct assignment) calls the
    counted copy, as code generation would call the library's: it costs what the same length
    known only at run time costs, not one instruction; a short one stays a few moves."""
    lib = Library(builder.build([shared_source("fixed.c", FIXED_C)], kind="library", options=COUNTED))
    src, dst = bytes(range(256)) * 256, bytearray(65536)

    def cost(call) -> tuple[int, dict[str, int]]:  # type: ignore[no-untyped-def]
        before = lib.snapshot()
        call()
        (c,) = MODEL.evaluate(lib.counts(before))
        return c.total, {name: n for name, n in c.functions.items() if name.startswith(PREFIX)}

    fixed, fixed_libc = cost(lib.clear_fixed)
    runtime, runtime_libc = cost(lambda: lib.clear(1 << 20))
    assert fixed_libc, fixed_libc
    assert fixed_libc == runtime_libc
    assert fixed > 10_000
    assert abs(fixed - runtime) <= 10, (fixed, runtime)
    fixed, fixed_libc = cost(lambda: lib.copy_fixed(dst, src))
    runtime, runtime_libc = cost(lambda: lib.copy(dst, src, 65536))
    assert fixed_libc, fixed_libc
    assert fixed_libc == runtime_libc
    assert bytes(dst) == src
    _, big_libc = cost(lambda: lib.assign_big(dst, src))
    assert big_libc == runtime_libc
    small, small_libc = cost(lambda: lib.assign_small(dst, src))
    assert small_libc == {}
    assert small < 10


ASSIGN_C = """\
#include <stddef.h>
struct big { char bytes[4096]; };
size_t copy_and_fail(struct big *out, const struct big *in) {
    struct big local = *in; /* a copy the debug info tracks as an assignment (!DIAssignID) */
    local.bytes[0] ^= 1;
    *out = local;
    return (size_t)-1;
}
"""


def test_counted_libc_a_routed_copy_keeps_the_modules_debug_info(builder: Builder, shared_source) -> None:  # type: ignore[no-untyped-def]
    """A long struct copy routed to the counted memcpy leaves the intrinsic's assignment-tracking
    metadata behind: on a call LLVM would drop the module's debug info as invalid, and the
    library's signatures would fall back to IR types (size_t read as a signed int64_t)."""
    lib = Library(builder.build([shared_source("assign.c", ASSIGN_C)], kind="library", options=COUNTED))
    src, dst = bytearray(4096), bytearray(4096)
    assert lib.copy_and_fail(dst, src) == 2**64 - 1  # size_t, from the DWARF signature
    assert dst[0] == 1


def test_counted_libc_qsort_same_in_a_library_and_a_program(builder: Builder, shared_source) -> None:  # type: ignore[no-untyped-def]
    """The comparator is user code: with the counted qsort it runs as often in the host process
    (the host's C library beside it) as in a program, and the sort's count grows as n log n."""
    source = shared_source("sort.c", SORT_C)
    lib = Library(builder.build([source], kind="library", options=COUNTED, keep_main=True))
    calls = lib.sort_scrambled(10_000)
    assert calls > 0
    program = builder.build([source], options=COUNTED)
    costs = []
    for n in (10_000, 10_000, 100_000):
        result = run_program(program, [n])
        assert result.returncode == 0
        costs.append(_total(result))
    assert costs[0] == costs[1]
    assert 10 * costs[0] < costs[2] < 14 * costs[0]
    before = lib.snapshot()
    assert lib.sort_scrambled(10_000) == calls
    (in_library,) = MODEL.evaluate(lib.counts(before))
    # The program's count adds main and atoi to the same sort.
    assert 0 < costs[0] - in_library.total < 400


def test_counted_libc_addresses_do_not_move_with_paths_or_environment(  # type: ignore[no-untyped-def]
    tmp_path: Path, shared_cache: Path, shared_source
) -> None:
    """The same program built in two caches far apart (the session's and a private one on a longer
    path, where the counted C library is built again) and run with other environments."""
    source = shared_source("addresses.c", ADDRESSES_C)
    outputs = []
    for cache, env in (
        (shared_cache, {"PATH": "/usr/bin:/bin"}),
        (tmp_path / ("very-long-cache-directory-name-" * 4) / "c", {"PATH": "/usr/bin:/bin", "EXTRA": "x" * 500}),
    ):
        builder = Builder(cache_dir=cache, progress=lambda message: None)
        result = run_program(builder.build([source], options=COUNTED), env=env)
        assert result.returncode == 0, result.stderr
        outputs.append((result.stdout, _total(result)))
    assert outputs[0] == outputs[1]
    assert re.search(rb" 0x40000", outputs[0][0]), outputs[0][0]  # the fixed heap
    assert outputs[0][0].startswith(b"stack 0x3fe"), outputs[0][0]  # the fixed stack


def test_counted_libc_peak_heap_grows_by_what_is_held(builder: Builder, shared_source) -> None:  # type: ignore[no-untyped-def]
    heap = default_registry().create("heap")
    program = builder.build([shared_source("hold.c", HOLD_C)], models=[heap, IrCountModel()], options=COUNTED)
    metrics = {}
    for n in (10, 30):
        result = run_program(program, [n])
        assert result.counts is not None
        metrics[n] = {c.metric: c.total for c in heap.evaluate(result.counts)}
    assert metrics[30]["peak_heap_bytes"] - metrics[10]["peak_heap_bytes"] == 20 * 1024
    assert metrics[30]["allocations"] - metrics[10]["allocations"] == 20
    assert metrics[30]["allocated_bytes"] == 64 * 8 + 30 * 1024


def test_counted_libc_heap_model_refuses_a_build_without_it(builder: Builder, shared_source) -> None:  # type: ignore[no-untyped-def]
    heap = default_registry().create("heap")
    with pytest.raises(Exception, match="count_libraries"):
        builder.build([shared_source("hold.c", HOLD_C)], models=[heap], options=BuildOptions(count_libraries=False))


REALLOC_C = """\
#include <errno.h>
#include <stdlib.h>
#include <string.h>
/* Grow a buffer by doubling; keep its bytes; aligned and zeroed allocations; OOM at the limit. */
int main(int argc, char **argv) {
    char *p = NULL;
    size_t n = 0;
    for (int i = 0; i < 20; i++) {
        size_t m = n ? 2 * n : 16;
        char *q = realloc(p, m);
        if (!q) return 2;
        memset(q + n, i, m - n);
        p = q;
        n = m;
    }
    for (size_t k = 16; k < n; k *= 2)
        if (p[k] != (char)(__builtin_ctzll(k) - 3)) return 3;
    free(p);
    void *a = aligned_alloc(4096, 100);
    if (!a || (unsigned long)a % 4096) return 4;
    free(a);
    int *z = calloc(1000, sizeof *z);
    for (int i = 0; i < 1000; i++) if (z[i]) return 5;
    free(z);
    if (argc > 1 && argv[1][0] == 'm') {  /* 100 MiB: within the default limit, past 64 MiB */
        char *volatile mid = malloc((size_t)100 << 20);
        return mid ? 7 : 0;
    }
    if (argc > 1) {  /* past the heap limit: NULL and ENOMEM, not a crash */
        char *volatile big = malloc((size_t)1 << 32);
        if (big) {
            big[0] = 1;
            free(big);
            return 6;
        }
        return 0; /* (errno is ENOMEM, but clang assumes malloc leaves errno alone: not checked here) */
    }
    return 0;
}
"""


HISTORY_C = """\
#include <stdlib.h>
static void *held[256];
void take(int n, int size) { for (int i = 0; i < n; i++) held[i] = malloc((size_t)size + (size_t)i % 7); }
void give(int n) { for (int i = 0; i < n; i++) free(held[i]); }
"""


def test_counted_libc_allocation_costs_do_not_depend_on_history(builder: Builder, shared_source) -> None:  # type: ignore[no-untyped-def]
    """The first allocations of a process (which map the heap), allocations from fresh memory
    and from free lists cost the same: a test's count does not depend on the tests before it
    in the same library process (a module-scoped library, pytest-xdist's distribution)."""
    lib = Library(builder.build([shared_source("history.c", HISTORY_C)], kind="library", options=COUNTED))

    def cost(call: str, *args: int) -> int:
        before = lib.snapshot()
        getattr(lib, call)(*args)
        (c,) = MODEL.evaluate(lib.counts(before))
        return c.total

    first = cost("take", 200, 40)  # maps the heap, then fresh memory
    freed = cost("give", 200)
    assert cost("take", 200, 40) == first  # every chunk from a free list now
    assert cost("give", 200) == freed
    big = cost("take", 100, 3000)  # another size class: fresh memory again
    cost("give", 100)
    assert cost("take", 100, 3000) == big
    lib.close()


def test_counted_libc_realloc_aligned_calloc_and_the_heap_limit(builder: Builder, shared_source) -> None:  # type: ignore[no-untyped-def]
    program = builder.build([shared_source("realloc.c", REALLOC_C)], options=COUNTED)
    assert run_program(program).returncode == 0
    limited = run_program(program, ["limit"], env={"PATH": "/usr/bin:/bin", "INSTRBUDGET_HEAP_LIMIT": str(64 << 20)})
    assert limited.returncode == 0, limited.stderr
    # 100 MiB fits the default 4 GiB, not a limit of 64 MiB.
    assert run_program(program, ["mid"]).returncode == 7
    assert run_program(program, ["mid"], env={"INSTRBUDGET_HEAP_LIMIT": str(64 << 20)}).returncode == 0
    assert run_program(program, ["mid"], env={"INSTRBUDGET_HEAP_LIMIT": str(1 << 30)}).returncode == 7
    # The C library reads the digits a value starts with: "1G" was a limit of 64 KiB.
    for bad in ("1G", "64M", "lots", "-5", "0", " 64", "1000", str(2**70)):
        with pytest.raises(
            CBuildError, match=f"INSTRBUDGET_HEAP_LIMIT: expected a number of bytes from 65536.*'{bad}'"
        ):
            run_program(program, ["mid"], env={"INSTRBUDGET_HEAP_LIMIT": bad})


def test_counted_libc_names_in_reports(builder: Builder, shared_source) -> None:  # type: ignore[no-untyped-def]
    program = builder.build([shared_source("quadratic.c", QUADRATIC_C)], options=COUNTED)
    result = run_program(program, [100])
    assert result.counts is not None
    (cost,) = MODEL.evaluate(result.counts)
    assert "__instrbudget_libc_strlen" in cost.functions  # baselines keep the symbol
    from cbuild.build.demangle import demangle

    assert demangle("__instrbudget_libc_strlen") == "strlen [libc]"


def test_counted_libc_string_functions_at_page_ends_and_every_alignment(builder: Builder) -> None:
    """strlen, strcmp, memcmp, memchr, memcpy and memset (32 bytes at a time) against byte-at-a-time
    references, on strings that end at an unmapped page, at every alignment (tests/data/string_edges.c)."""
    program = builder.build([Path(__file__).parent / "data" / "string_edges.c"], options=COUNTED)
    result = run_program(program)
    assert (result.returncode, result.stdout) == (0, b""), result.stdout.decode()
    assert result.counts is not None
    (cost,) = MODEL.evaluate(result.counts)
    for name in ("strlen", "strcmp", "memcmp", "memchr", "memcpy"):
        assert cost.functions["__instrbudget_libc_" + name] > 0, name


#: What glibc gives for tests/data/libc_edges.c on LIBC_EDGES_INPUT (gcc -O2, glibc 2.36).
LIBC_EDGES_INPUT = b"first line of the input, longer than eight bytes\nsecond\nlast without newline"
LIBC_EDGES_OUTPUT = (
    "zero-byte allocations: pointers, distinct 1, posix_memalign 0\n"
    "never 0, all equal: " + " ".join(["7"] * 13) + "\n"
    "never 0, all equal, 40: " + " ".join(["7"] * 40) + "\n"
    "0/1, ascending: " + " ".join(map(str, range(20))) + "\n"
    "0/1, shuffled: " + " ".join(map(str, range(40))) + "\n"
    "49: first line of the input, longer than eight bytes\n"
    "7: second\n"
    "20: last without newline"
    "at the end: -1\n"
    "NUL-ended: 3 [ab] 3 [cd]\n"
    "byte-ended: 2 2 1\n"
)


def test_counted_libc_does_what_glibc_does_where_programs_lean_on_it(builder: Builder) -> None:
    """malloc(0) and its kin (a header-only chunk's size class was -1: a crash), qsort with a
    comparator that never returns 0 (its scan ran below the array) or returns 0/1 (unsorted), and
    getline into the program's own malloc'd buffer (the host's realloc took the counted chunk: abort)."""
    program = builder.build([Path(__file__).parent / "data" / "libc_edges.c"], options=COUNTED)
    result = run_program(program, input=LIBC_EDGES_INPUT)
    assert (result.returncode, result.stdout.decode()) == (0, LIBC_EDGES_OUTPUT)
    assert result.counts is not None
    (cost,) = MODEL.evaluate(result.counts)
    assert cost.functions["__instrbudget_libc_getdelim"] > 0  # counted, not the host's


def test_counted_libc_routes_runtime_and_long_constant_length_intrinsics() -> None:
    text = (
        "define void @f(ptr %d, ptr %s, i64 %n) {\n"
        "  call void @llvm.memcpy.p0.p0.i64(ptr align 1 %d, ptr align 1 %s, i64 %n, i1 false), !dbg !7\n"
        "  call void @llvm.memcpy.p0.p0.i64(ptr align 1 %d, ptr align 1 %s, i64 16, i1 false)\n"
        "  call void @llvm.memcpy.p0.p0.i64(ptr align 1 %d, ptr align 1 %s, i64 128, i1 false)\n"
        "  call void @llvm.memmove.p0.p0.i64(ptr align 1 %d, ptr align 1 %s, i64 129, i1 false)\n"
        "  call void @llvm.memset.p0.i64(ptr align 1 %d, i8 7, i64 256, i1 false)\n"
        "  call void @llvm.memset.p0.i64(ptr align 1 %d, i8 7, i64 257, i1 false)\n"
        "  call void @llvm.memcpy.inline.p0.p0.i64(ptr align 1 %d, ptr align 1 %s, i64 4096, i1 false)\n"
        "  call void @llvm.memset.p0.i64(ptr align 1 %d, i8 0, i64 4096, i1 true)\n"
        "  tail call void @llvm.memset.p0.i64(ptr align 1 %d, i8 0, i64 %n, i1 false) #3\n"
        "  %l = call i64 @strlen(ptr %s)\n"
        "  ret void\n}\n"
        "declare i64 @strlen(ptr)\n"
    )
    out = point_at_libc(text, own=set(), size_bits=64)
    routed = "%instrbudget.libc.0 = call ptr @__instrbudget_libc_memcpy(ptr align 1 %d, ptr align 1 %s, i64 %n)"
    assert routed + ", !dbg !7" in out
    assert "@llvm.memcpy.p0.p0.i64(ptr align 1 %d, ptr align 1 %s, i64 16, i1 false)" in out
    assert "@llvm.memcpy.p0.p0.i64(ptr align 1 %d, ptr align 1 %s, i64 128, i1 false)" in out
    assert "call ptr @__instrbudget_libc_memmove(ptr align 1 %d, ptr align 1 %s, i64 129)" in out
    assert "@llvm.memset.p0.i64(ptr align 1 %d, i8 7, i64 256, i1 false)" in out
    assert "call ptr @__instrbudget_libc_memset_byte(ptr align 1 %d, i8 zeroext 7, i64 257)" in out
    assert "@llvm.memcpy.inline.p0.p0.i64(" in out  # must stay moves: never a call
    assert "@llvm.memset.p0.i64(ptr align 1 %d, i8 0, i64 4096, i1 true)" in out  # volatile stays
    assert "tail call ptr @__instrbudget_libc_memset_byte(ptr align 1 %d, i8 zeroext 0, i64 %n)" in out
    assert "call i64 @__instrbudget_libc_strlen(ptr %s)" in out
    assert "declare i64 @__instrbudget_libc_strlen(ptr)" in out
    assert point_at_libc(text, own={"strlen"}, size_bits=64).count("@strlen(") == 2


def test_counted_libc_covers_the_listed_families() -> None:
    names = functions()
    for family in (
        {"memcpy", "memmove", "memset", "memcmp", "memchr", "strlen", "strcmp", "strncmp", "strcpy", "strstr"},
        {"malloc", "calloc", "realloc", "free", "aligned_alloc", "posix_memalign"},
        {"qsort", "bsearch", "strtol", "strtoul", "strtoll", "strtoull", "atoi", "atol"},
        {"wcslen", "wcscmp"},
    ):
        assert family <= names, family - names
    assert aliases()["__isoc23_strtol"] == "__instrbudget_libc_strtol"


def test_counted_libc_docs_table_lists_what_the_library_defines() -> None:
    doc = (Path(__file__).resolve().parent.parent / "docs" / "counted-libraries.md").read_text()
    table = doc.split("## What is counted", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[2] for line in table.splitlines() if line.startswith("| ") and "`" in line]
    listed = {name for row in rows for name in re.findall(r"`(\w+)`", row)}
    assert listed == set(functions())


def test_counted_libc_fingerprint_says_why_old_baselines_differ(pytester: pytest.Pytester) -> None:
    pytester.makefile(".c", work="#include <string.h>\nunsigned long work(const char *s) { return strlen(s); }\n")
    pytester.makepyfile(
        test_w="import pytest\n\n@pytest.mark.budget(max_instr=10_000)\n"
        "def test_w(cbuild):\n    assert cbuild.library('work.c').work(b'abc') == 3\n"
    )
    pytester.makepyprojecttoml("[tool.instrbudget]\ncount_libraries = true\n")
    assert pytester.runpytest("-p", "no:cacheprovider", "--instrbudget-update").ret == 0
    path = pytester.path / ".instrbudget" / "baseline.json"
    doc = json.loads(path.read_text())
    assert doc["fingerprint"]["libraries"] == "counted C library with formatting and libc++"
    del doc["fingerprint"]["libraries"]  # as a baseline made before the counted library
    path.write_text(json.dumps(doc))
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*differs in: libraries*", "*count_libraries changed*--instrbudget-update*"])
    doc["fingerprint"]["libraries"] = "counted C library and libc++"  # before formatting was counted
    path.write_text(json.dumps(doc))
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(
        ["*differs in: libraries*", "*the counted C library grew: printf, scanf*(the baseline has: counted C*"]
    )
    del doc["fingerprint"]["libraries"]
    path.write_text(json.dumps(doc))
    pytester.makepyprojecttoml("[tool.instrbudget]\ncount_libraries = false\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert "not comparable" not in result.stdout.str()


def test_counted_libc_bad_config_value(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    pytester.makepyprojecttoml("[tool.instrbudget]\ncount_libraries = 'yes'\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*count_libraries: expected true or false, got 'yes'*"])


def test_counted_libc_max_allocations_budget_fails(pytester: pytest.Pytester) -> None:
    pytester.makefile(
        ".c",
        per_item="#include <stdlib.h>\nlong build(int n) { int **v = malloc(n * sizeof *v); long s = 0;\n"
        "for (int i = 0; i < n; i++) { v[i] = malloc(sizeof **v); *v[i] = i; }\n"
        "for (int i = 0; i < n; i++) { s += *v[i]; free(v[i]); }\nfree(v); return s; }\n",
    )
    pytester.makepyfile(
        test_alloc="import pytest\n\n@pytest.mark.budget(max_allocations=10, models=['ir-count', 'heap'])\n"
        "def test_items(cbuild):\n    assert cbuild.library('per_item.c').build(100) == 4950\n"
    )
    pytester.makepyprojecttoml("[tool.instrbudget]\ncount_libraries = true\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == 1
    assert "allocations" in result.stdout.str()


WHO_ALLOCATES_C = """\
#include <stdlib.h>
#include <string.h>
#include "instrbudget.h"
__attribute__((noinline)) char *label(int i) { char b[8] = "item"; b[4] = (char)('a' + i % 26); return strdup(b); }
__attribute__((noinline)) void *grow(void *p, size_t n) { return realloc(p, n); }
int main(int argc, char **argv) {
    int n = atoi(argv[1]);
    char **v = NULL;
    INSTRBUDGET_REGION_START("grow");
    for (int i = 0; i < n; i++) v = grow(v, (size_t)(i + 1) * 16);
    INSTRBUDGET_REGION_NEXT("label");
    for (int i = 0; i < n; i++) v[i] = label(i);
    INSTRBUDGET_REGION_STOP();
    for (int i = 0; i < n; i++) free(v[i]);
    free(v);
    return 0;
}
"""


def test_counted_libc_who_allocated_per_region_function_and_call_path(builder: Builder, shared_source) -> None:  # type: ignore[no-untyped-def]
    """``allocations`` is the heap model's clock: regions have theirs, and a build that tracks
    calls gives each function's inclusive allocations and each call path's, exactly."""
    from cbuild.report.attribution import attributed

    heap = default_registry().create("heap")
    models = [IrCountModel(), heap]
    source = shared_source("who.c", WHO_ALLOCATES_C)
    program = builder.build([source], models=models, options=replace(COUNTED, calls=True))
    for n in (10, 40):
        allocations = attributed(models, [run_program(program, [str(n)]).counts])["allocations"]
        # Up to 1 KiB size classes are 16 bytes apart: each realloc to 16 more bytes moves. n of them, n strdups.
        assert allocations.total == 2 * n
        assert allocations.regions == {"grow": n, "label": n}
        assert {f: v for f, v in allocations.inclusive.items() if v} == {
            "main": 2 * n,
            "grow": n,
            "label": n,
            f"{PREFIX}realloc": n,
            f"{PREFIX}strdup": n,
            f"{PREFIX}ib_alloc": 2 * n,
        }
        assert allocations.stacks == {
            f"main;grow;{PREFIX}realloc;{PREFIX}ib_alloc": n,
            f"main;label;{PREFIX}strdup;{PREFIX}ib_alloc": n,
        }
        assert allocations.functions == {}  # not in the baseline: it would depend on the reports a run wrote


def test_counted_libc_same_counts_twice(builder: Builder, shared_source) -> None:  # type: ignore[no-untyped-def]
    source = shared_source("addresses.c", ADDRESSES_C)
    program = builder.build([source], options=replace(COUNTED, opt_level="1"))
    first, second = run_program(program), run_program(program)
    assert (first.stdout, _total(first)) == (second.stdout, _total(second))


MATH_C = """\
#include <math.h>
#include <stdio.h>
int main(void) {
    volatile int n = 300;
    double s = 0;
    for (int i = 1; i <= n; i++) s += sin(i) * exp(-i / 50.0) + log(i) + pow(i, 0.3) + atan2(i, 7) + fmod(i * 1.7, 3);
    printf("%a\\n", s);
    return 0;
}
"""


@pytest.mark.skipif(platform.machine() != "x86_64", reason="builds for x86_64 glibc and musl")
def test_counted_libc_qsort_same_beside_glibc_and_linked_statically_against_musl(  # type: ignore[no-untyped-def]
    shared_cache: Path, shared_source
) -> None:
    """The sort is the counted library's on any host C library: a program linked against glibc,
    one linked statically against musl (zig's), and a library in this glibc process run the
    same comparator calls and the same sort code, instruction for instruction."""
    source = shared_source("sort.c", SORT_C)
    sort_functions = ("by_value", "sort_scrambled", PREFIX + "qsort", PREFIX + "ib_introsort")

    def sort_costs(counts: object) -> dict[str, int]:
        (cost,) = MODEL.evaluate(counts)  # type: ignore[arg-type]
        assert any(name.startswith(PREFIX + "ib_") for name in cost.functions)
        return {name: cost.functions.get(name, 0) for name in sort_functions}

    per_libc = {}
    math_runs = {}
    for triple, ldflags in (("x86_64-linux-gnu", ()), ("x86_64-linux-musl", ("-static",))):
        builder = Builder(cache_dir=shared_cache, progress=lambda message: None)
        builder.toolchain = replace(builder.toolchain, triple=triple)
        program = builder.build([source], options=replace(COUNTED, ldflags=ldflags))
        result = run_program(program, [10_000])
        assert result.returncode == 0, result.stderr
        per_libc[triple] = sort_costs(result.counts)
        # math.h too: the same bits and the same count with glibc's and musl's headers.
        math_program = builder.build([shared_source("math.c", MATH_C)], options=replace(COUNTED, ldflags=ldflags))
        math_result = run_program(math_program)
        assert math_result.counts is not None
        (math_cost,) = MODEL.evaluate(math_result.counts)
        math_runs[triple] = (math_result.stdout, math_cost.total, outside_calls(math_result.counts))
    assert math_runs["x86_64-linux-gnu"] == math_runs["x86_64-linux-musl"]
    assert math_runs["x86_64-linux-gnu"][2] == {"frexpl": 1, "fwrite": 1}  # printf's; no math function
    assert b"ld-linux" not in program.path.read_bytes()  # no dynamic loader: the static musl program
    lib = Library(
        Builder(cache_dir=shared_cache, progress=lambda message: None).build(
            [source], kind="library", options=COUNTED, keep_main=True
        )
    )
    before = lib.snapshot()
    lib.sort_scrambled(10_000)
    in_library = sort_costs(lib.counts(before))
    assert per_libc["x86_64-linux-gnu"] == per_libc["x86_64-linux-musl"] == in_library
    assert in_library["by_value"] > 0
    assert in_library[PREFIX + "ib_introsort"] > in_library["by_value"]


def test_counted_libc_links_only_the_modules_a_build_reaches(builder: Builder) -> None:
    """Of musl's IR files in the library, a build parses and links those it reaches, through one another:
    pow brings math.c and what it calls (the tables of its kernels), not the formatting; a program that calls
    nothing of the library links none of musl's."""
    from cbuild.build.libc import libc_ir, needed_modules

    paths = [str(p) for p in libc_ir(builder.toolchain, builder.cache)][
        1:
    ]  # musl's: the library's own is always linked
    stems = {p: Path(p).name.split(".")[-2] for p in paths}
    pow_user = (
        "define double @f(double %x) {\n"
        "  %y = call double @__instrbudget_libc_pow(double %x, double 2.0)\n"
        "  ret double %y\n}\n"
    )
    chosen = {stems[p] for p in needed_modules([pow_user], paths)}
    assert {"math", "pow_data", "exp_data", "__math_oflow"} <= chosen
    assert not {"vfprintf", "floatscan", "strtod"} & chosen
    assert needed_modules(["define i32 @main() {\n  ret i32 0\n}\n"], paths) == []


STRTO_C = r"""
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

static const char *inputs[] = {
    "0", "42", "  -17xyz", "+9", "0x1F", "0X", "077", "z", "Zz", "1010", "18446744073709551615",
    "18446744073709551616", "-18446744073709551615", "9223372036854775807", "9223372036854775808",
    "-9223372036854775808", "-9223372036854775809", "4294967295", "4294967296", "-2147483649",
    "99999999999999999999999", "7fffffffffffffff", "ffffffffffffffff", "10000000000000000", "",
};
static const int bases[] = {0, 2, 8, 10, 16, 36};

int main(void) {
    for (unsigned i = 0; i < sizeof inputs / sizeof *inputs; i++) {
        for (unsigned b = 0; b < sizeof bases / sizeof *bases; b++) {
            char *end;
            errno = 0;
            long long ll = strtoll(inputs[i], &end, bases[b]);
            int e1 = errno, n1 = (int)(end - inputs[i]);
            errno = 0;
            unsigned long long ull = strtoull(inputs[i], &end, bases[b]);
            int e2 = errno, n2 = (int)(end - inputs[i]);
            errno = 0;
            intmax_t im = strtoimax(inputs[i], &end, bases[b]);
            int e3 = errno;
            printf("%s/%d: %lld %d %d | %llu %d %d | %jd %d\n", inputs[i], bases[b], ll, e1, n1, ull, e2, n2, im, e3);
        }
    }
    return 0;
}
"""

#: Decimal numbers read with strtoull, the base a variable as in a user's code.
PARSE_NUMBERS_C = r"""
#include <stdlib.h>
unsigned long long sum_numbers(const char *text, int base) {
    unsigned long long sum = 0;
    char *end;
    for (const char *p = text; *p; p = end) {
        sum += strtoull(p, &end, base);
        if (end == p) break;
    }
    return sum;
}
"""


def test_counted_libc_integer_conversions_convert_as_the_host_in_both_builds(builder: Builder, shared_source) -> None:  # type: ignore[no-untyped-def]
    """Every base, sign, prefix and overflow at the 32- and 64-bit limits: the same values, errno and
    ends as the host's C library, natively and in the riscv32 build the models run."""
    source = shared_source("strto.c", STRTO_C)
    host = run_program(builder.build([source], options=BuildOptions(count_libraries=False)))
    zkvm = default_registry().create("zkvm", {"execute": True})
    counted = run_program(builder.build([source], options=COUNTED, models=[zkvm]))
    assert host.returncode == counted.returncode == 0
    assert counted.stdout == host.stdout
    assert b"18446744073709551616/10: 9223372036854775807 34 20 | 18446744073709551615 34 20" in host.stdout
    assert counted.counts is not None
    assert counted.counts.machine_run("riscv32").stdout == host.stdout


def test_counted_libc_strtoull_divides_by_no_variable_per_digit_on_riscv32(builder: Builder, shared_source) -> None:  # type: ignore[no-untyped-def]
    """The overflow check of every digit divided the limit by the base: on riscv32 a call of the
    compiler's 64-bit division per digit, several times the parse's own work in zk cycles."""
    zkvm = default_registry().create("zkvm", {"execute": True})
    artifact = builder.build([shared_source("numbers.c", PARSE_NUMBERS_C)], kind="library", models=[zkvm])
    with Library(artifact) as lib:
        costs = {}
        for digits in (4, 12):
            text = " ".join(["7" * digits] * 10).encode()
            before = lib.snapshot()
            assert lib.sum_numbers(text, 10) == 10 * int("7" * digits)
            costs[digits] = lib.counts(before).machine_run("riscv32")
    assert not {name for name in costs[12].functions if "div" in name or "mod" in name}, costs[12].functions
    # 80 more digits parsed: each costs the few instructions of its loop.
    assert (costs[12].instructions - costs[4].instructions) / 80 < 40
