"""Building, before the first test, everything a project's configuration will need.

A fresh CI runner pays minutes before its first result: zig's C and C++ libraries, the
counted C library and libc++, the runtime, the library host and the models' RISC-V builds.
:func:`warm` builds and runs three small programs that need all of it (a C program using the
counted C library, a C++ program using libc++, a shared library called in a host process)
with the project's build options and models, so a CI image or a cache-restore step pays it
once (``python -m cbuild warm``).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from cbuild.build.builder import Builder
from cbuild.build.options import BuildOptions
from cbuild.errors import CBuildError
from cbuild.models import CostModel
from cbuild.models.base import evaluated
from cbuild.run.hosts import HostPool, guard_library
from cbuild.run.library import Library
from cbuild.run.program import run_program

C_PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>

static int by_value(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

int main(void) {
    int v[8] = {5, 3, 7, 1, 8, 2, 6, 4};
    qsort(v, 8, sizeof v[0], by_value);
    char *text = malloc(64);
    snprintf(text, 64, "%d %.2f %s", v[0], strtod("1.5", NULL), "warm");
    int upper = 0;
    for (size_t i = 0; i < strlen(text); i++) upper += isupper((unsigned char)text[i]);
    puts(text);
    free(text);
    return upper;
}
"""

CXX_PROGRAM = r"""
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

int main() {
    std::vector<int> v{5, 3, 7, 1};
    std::sort(v.begin(), v.end());
    std::string s = std::to_string(v[0]);
    s += " warm";
    std::printf("%s\n", s.c_str());
    return 0;
}
"""

C_LIBRARY = "int instrbudget_warm(int x) { return x + 1; }\n"


def warm(
    builder: Builder,
    options: BuildOptions,
    models: Sequence[CostModel],
    *,
    cxx: bool = True,
    say: Callable[[str], None] = print,
) -> float:
    """Build and run the three programs with ``options`` and ``models``; ``say`` gets a line per
    step with its time. Returns the seconds it took."""
    started = time.monotonic()
    names = ", ".join(m.name for m in models)
    with tempfile.TemporaryDirectory(prefix="instrbudget-warm-") as tmp:
        steps: list[tuple[str, str, str]] = [("C program", "warm.c", C_PROGRAM)]
        if cxx:
            steps.append(("C++ program", "warm.cc", CXX_PROGRAM))
        for what, name, code in steps:
            t = time.monotonic()
            source = Path(tmp) / name
            source.write_text(code)
            artifact = builder.build([source], options=options, kind="program", models=models)
            result = run_program(artifact, [])
            if result.counts is None or result.returncode != 0:
                raise CBuildError(f"warming up: the {what} did not run ({result.stderr.decode(errors='replace')})")
            for model in models:
                evaluated(model, result.counts)
            say(f"{what} with {names}: {time.monotonic() - t:.1f} s")
        t = time.monotonic()
        source = Path(tmp) / "warm_lib.c"
        source.write_text(C_LIBRARY)
        artifact = builder.build([source], options=options, kind="library", models=models)
        pool = HostPool(lambda: guard_library(builder.toolchain, builder.cache))
        try:
            with Library(artifact, host=pool.take()) as library:
                if library.instrbudget_warm(41) != 42:
                    raise CBuildError("warming up: the library call returned a wrong value")
        finally:
            pool.close()
        say(f"library and its host process with {names}: {time.monotonic() - t:.1f} s")
    return time.monotonic() - started
