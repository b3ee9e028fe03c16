"""The counted printf and scanf families, strtod and ctype: their work shows in the count,
and what they print, read and convert is what the host's C library gives.

The reference is the host's own C library: the same program built with
``count_libraries=False`` calls glibc's ``printf``, ``strtod`` and ``scanf``."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from cbuild import Builder, BuildOptions, IrCountModel, Library, run_program
from cbuild.models import default_registry
from cbuild.models.costs import outside_calls

COUNTED = BuildOptions(count_libraries=True)
HOST = BuildOptions(count_libraries=False)
MODEL = IrCountModel()

FORMATS_C = r"""
#include <stdio.h>
#include <stdint.h>
#include <inttypes.h>
#include <limits.h>
#include <float.h>
static const double values[] = {0.0, -0.0, 1.0, 0.1, 1.0 / 3.0, 2.5, 3.5, -1234.5678, 1e-7, 123456789.0,
                                1e21, 1e300, 5e-324, DBL_MAX, DBL_MIN, 0.000123456, 9.9999995, 1.0 / 0.0, -1.0 / 0.0};
int main(void) {
    for (unsigned i = 0; i < sizeof values / sizeof values[0]; i++) {
        double v = values[i];
        printf("%f|%.0f|%.3f|%e|%.10e|%g|%.17g|%#g|%-12.4g|%+08.2f|%G|%E\n", v, v, v, v, v, v, v, v, v, v, v, v);
    }
    printf("%Lf|%.20Lg|%Le\n", 1.0L / 3.0L, 2.0L / 3.0L, 12345.678L);
    printf("%d|%i|%5d|%-5d|%05d|%+d|% d|%u|%x|%X|%#x|%o|%#o|%c|%%\n", 42, -42, 7, 7, 7, 7, 7, 3000000000u, 255, 255,
           255, 8, 8, 'z');
    printf("%ld|%lld|%hd|%hhu|%zu|%jd|%" PRId64 "|%" PRIx64 "|%lu\n", LONG_MIN, LLONG_MAX, (short)-3,
           (unsigned char)300, (size_t)12345, (intmax_t)-9, INT64_MIN, UINT64_MAX, ULONG_MAX);
    printf("%s|%.2s|%8s|%-8s|%*d|%.*f\n", "text", "text", "pad", "pad", 6, 1, 3, 3.14159);
    printf("%2$s %1$s %3$05d\n", "world", "hello", 42);
    int n1 = 0, n2 = 0;
    printf("abc%nde%n\n", &n1, &n2);
    printf("%d %d\n", n1, n2);
    char buf[8];
    int w = snprintf(buf, sizeof buf, "%s", "longer than eight");
    printf("%d [%s]\n", w, buf);
    fprintf(stderr, "to stderr %d\n", 1);
    puts("puts between");
    fprintf(stdout, "%s\n", "after puts");
    return 0;
}
"""

PARSE_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
static const char *inputs[] = {"0", "-0", "0.1", "1e-310", "2.2250738585072011e-308", "1.7976931348623157e308",
                               "1e309", "123456789012345678901234567890", "0x1.8p3", "  +3.25xyz", "inf", "-inf", "nan",
                               "4.9406564584124654e-324", "9007199254740993", "1.00000000000000011102230246251565",
                               ".5e+2", "e5", "", "7.", "0.000000000000000000000000000001"};
static uint64_t bits(double d) { uint64_t b; memcpy(&b, &d, sizeof b); return b; }
int main(void) {
    for (unsigned i = 0; i < sizeof inputs / sizeof inputs[0]; i++) {
        char *end;
        double d = strtod(inputs[i], &end);
        float f = strtof(inputs[i], NULL);
        double s = -1;
        int got = sscanf(inputs[i], "%lf", &s);
        uint32_t fb; memcpy(&fb, &f, sizeof fb);
        printf("%s -> %016llx %08x used %ld sscanf %d %016llx atof %016llx\n", inputs[i], (unsigned long long)bits(d),
               (unsigned)fb, (long)(end - inputs[i]), got, (unsigned long long)bits(s),
               (unsigned long long)bits(atof(inputs[i])));
    }
    int a, b; char word[16]; unsigned x; long long big;
    int n = sscanf("12 -7 hello 0x1f 9223372036854775807 rest", "%d %d %15s %x %lld", &a, &b, word, &x, &big);
    printf("%d: %d %d %s %u %lld\n", n, a, b, word, x, big);
    char set[16]; int after = 0;
    n = sscanf("abc123def", "%15[a-z]%n", set, &after);
    printf("%d: %s %d\n", n, set, after);
    return 0;
}
"""

STDIN_C = r"""
#include <stdio.h>
int main(void) {
    int a = 0, b = 0;
    char word[32];
    int n = scanf("%d %d", &a, &b);
    int next = getchar();
    char line[64];
    if (!fgets(line, sizeof line, stdin)) line[0] = 0;
    int m = fscanf(stdin, "%31s", word);
    int last = scanf("%d", &a);
    printf("%d %d %d [%c] [%s] %d %s %d\n", n, a, b, next, line, m, word, last);
    return 0;
}
"""

CTYPE_C = r"""
#include <ctype.h>
#include <stdio.h>
int main(void) {
    unsigned long h = 0;
    for (int c = -128; c < 256; c++) {
        int v = (isalpha(c) != 0) | (isdigit(c) != 0) << 1 | (isspace(c) != 0) << 2 | (ispunct(c) != 0) << 3 |
                (isupper(c) != 0) << 4 | (islower(c) != 0) << 5 | (isxdigit(c) != 0) << 6 | (isprint(c) != 0) << 7 |
                (isgraph(c) != 0) << 8 | (iscntrl(c) != 0) << 9 | (isblank(c) != 0) << 10 | (isalnum(c) != 0) << 11;
        h = h * 31 + (unsigned long)v * 1000003u + (unsigned long)(tolower(c) + 1000) * 7 + (unsigned long)toupper(c);
    }
    printf("%lx\n", h);
    return 0;
}
"""


def _run(builder: Builder, source: Path, options: BuildOptions, *args: object, input: bytes = b""):  # type: ignore[no-untyped-def]
    result = run_program(builder.build([source], options=options), args, input=input)
    assert result.returncode == 0, result.stderr
    assert result.counts is not None
    return result


def _total(result) -> int:  # type: ignore[no-untyped-def]
    (cost,) = MODEL.evaluate(result.counts)
    return int(cost.total)


def test_counted_printf_prints_what_the_host_prints(builder: Builder, shared_source) -> None:  # type: ignore[no-untyped-def]
    source = shared_source("formats.c", FORMATS_C)
    counted, host = _run(builder, source, COUNTED), _run(builder, source, HOST)
    assert counted.stdout == host.stdout
    assert counted.stderr == host.stderr == b"to stderr 1\n"
    # The formatting is counted now: only the writes to the host's streams are outside.
    assert set(outside_calls(counted.counts)) == {"fwrite", "puts", "frexpl"}
    assert {"printf", "fprintf"} <= set(outside_calls(host.counts))
    assert _total(counted) > 20 * _total(host)


def test_counted_printf_fortified_names(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    source = write("formats.c", FORMATS_C.replace('printf("abc%nde%n\\n", &n1, &n2);', ""))
    fortified = ("-D_FORTIFY_SOURCE=2",)
    counted = _run(builder, source, replace(COUNTED, cflags=fortified))
    host = _run(builder, source, replace(HOST, cflags=fortified))
    assert {name for name in outside_calls(host.counts) if name.endswith("_chk")}
    assert counted.stdout == host.stdout
    assert not {name for name in outside_calls(counted.counts) if name.endswith("_chk")}


def test_counted_strtod_sscanf_and_atof_convert_as_the_host(builder: Builder, shared_source) -> None:  # type: ignore[no-untyped-def]
    source = shared_source("parse.c", PARSE_C)
    counted, host = _run(builder, source, COUNTED), _run(builder, source, HOST)
    assert counted.stdout == host.stdout
    assert b"-> 3fb999999999999a" in counted.stdout  # 0.1, correctly rounded
    assert not {"strtod", "strtof", "sscanf", "__isoc99_sscanf", "__isoc23_sscanf"} & set(outside_calls(counted.counts))


def test_counted_scanf_reads_the_hosts_stdin_and_leaves_the_rest(builder: Builder, shared_source) -> None:  # type: ignore[no-untyped-def]
    source = shared_source("stdin.c", STDIN_C)
    data = b"12   34;rest of line\n  word tail"
    counted, host = _run(builder, source, COUNTED, input=data), _run(builder, source, HOST, input=data)
    assert counted.stdout == host.stdout == b"2 12 34 [;] [rest of line\n] 1 word 0\n"
    assert "getc" in outside_calls(counted.counts)


def test_counted_ctype_is_the_c_locale_of_glibc(builder: Builder, shared_source) -> None:  # type: ignore[no-untyped-def]
    source = shared_source("ctype.c", CTYPE_C)
    counted, host = _run(builder, source, COUNTED), _run(builder, source, HOST)
    assert counted.stdout == host.stdout
    assert "__ctype_b_loc" in outside_calls(host.counts)
    assert not {name for name in outside_calls(counted.counts) if "ctype" in name}


def test_counted_snprintf_grows_with_what_it_formats(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    source = write(
        "grow.c",
        r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    int n = atoi(argv[1]);
    char *s = malloc(n + 1), *out = malloc(n + 16);
    memset(s, 'x', n);
    s[n] = 0;
    int w = snprintf(out, n + 16, "[%s]", s);
    free(s);
    free(out);
    return w != n + 2;
}
""",
    )
    program = builder.build([source], options=COUNTED)
    small, large = (run_program(program, [n]) for n in (1_000, 10_000))
    assert small.returncode == large.returncode == 0
    assert _total(large) >= 5 * _total(small)


def test_counted_snprintf_in_a_library_called_from_python(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    source = write(
        "fmt.c",
        r"""
#include <stdio.h>
int format(char *out, int size, double v, int n) { return snprintf(out, size, "%.3f/%05d/%s", v, n, "ok"); }
""",
    )
    lib = Library(builder.build([source], kind="library", options=COUNTED))
    out = bytearray(64)
    before = lib.snapshot()
    assert lib.format(out, 64, 2.0 / 3.0, 42) == len("0.667/00042/ok")
    counts = lib.counts(before)
    assert bytes(out).rstrip(b"\0") == b"0.667/00042/ok"
    (cost,) = MODEL.evaluate(counts)
    assert cost.total > 500
    # musl's formatting of a double splits it with frexpl: a host function of fixed cost.
    assert set(outside_calls(counts)) <= {"frexpl"}


def test_counted_printf_and_strtod_print_the_same_in_the_riscv_build(builder: Builder, shared_source) -> None:  # type: ignore[no-untyped-def]
    """The RISC-V build of the models links the same musl sources: same conversions, same text."""
    source = shared_source("parse.c", PARSE_C)
    zkvm = default_registry().create("zkvm", {})
    program = builder.build([source], models=[zkvm, MODEL], options=COUNTED)
    result = run_program(program)
    assert result.returncode == 0, result.stderr
    assert result.counts is not None
    guest = result.counts.machine_run("riscv32")
    assert guest.stdout == result.stdout
    assert "printf_core [libc]" in guest.functions or any("printf" in f for f in guest.functions)
