"""The counted C++ library (cbuild/build/libcxx.py): libc++'s out-of-line instantiations
(``std::sort`` of ints, ``std::string``'s members), ``std::to_string`` and ``operator new``
run as instrumented IR, so their work shows in the count."""

from __future__ import annotations

from pathlib import Path

from cbuild import Builder, BuildOptions, IrCountModel, run_program
from cbuild.build.libcxx import OVERRIDE_SECTION, SOURCES, prepare

MODEL = IrCountModel()
COUNTED = BuildOptions(count_libraries=True)

SORT_CC = """\
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>
int main(int argc, char **argv) {
    int n = std::atoi(argv[1]);
    std::vector<int> v(n);
    unsigned x = 1;
    for (int i = 0; i < n; i++) { x = x * 1103515245u + 12345u; v[i] = (int)(x >> 8); }
    std::sort(v.begin(), v.end());
    std::string s;
    for (int i = 0; i < n; i++) s += std::to_string(v[i]);
    return !std::is_sorted(v.begin(), v.end()) || s.empty();
}
"""

REPLACED_NEW_CC = """\
#include <cstdlib>
#include <new>
#include <vector>
static int news;
void *operator new(std::size_t n) { news++; return std::malloc(n ? n : 1); }
void operator delete(void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }
int main() {
    std::vector<int> v;
    for (int i = 0; i < 100; i++) v.push_back(i);
    return news == 0;
}
"""


STREAMS_CC = """\
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>
int main() {
    std::string text;
    for (int i = 0; i < 200; i++) text += "a fairly long line of text number " + std::to_string(i) + "\\n";
    std::istringstream in(text);
    std::string line;
    std::vector<std::shared_ptr<std::string>> lines;
    while (std::getline(in, line)) lines.push_back(std::make_shared<std::string>(line));
    std::ostringstream out;
    for (auto &l : lines) out << l->size() << ",";
    std::cout << lines.size() << " " << out.str().size() << "\\n";
    return 0;
}
"""


def _run(builder: Builder, source: Path, *args: object, options: BuildOptions = COUNTED) -> dict[str, int]:
    result = run_program(builder.build([source], options=options), args)
    assert result.returncode == 0, result.stderr
    assert result.counts is not None
    (cost,) = MODEL.evaluate(result.counts)
    return {"total": cost.total, **cost.functions}


def test_counted_libcxx_sort_shows_n_log_n(builder: Builder, shared_source) -> None:  # type: ignore[no-untyped-def]
    source = shared_source("sort.cc", SORT_CC)
    small, large = _run(builder, source, 1_000), _run(builder, source, 100_000)
    assert large["total"] >= 100 * small["total"], (small["total"], large["total"])
    # The sort itself, the conversions and the appends are counted functions of the build.
    for name in ("_ZNSt3__19to_stringEi", "_Znwm"):
        assert small[name] > 0, sorted(small)
    introsort = [name for name in small if "__introsort" in name]
    assert introsort
    assert all(large[name] > 100 * small[name] for name in introsort)


def test_counted_libcxx_off_counts_only_own_code(builder: Builder, shared_source) -> None:  # type: ignore[no-untyped-def]
    """count_libraries = false: libc++'s instantiations cost their calls only, linear in n."""
    source = shared_source("sort.cc", SORT_CC)
    off = BuildOptions(count_libraries=False)
    small, large = _run(builder, source, 1_000, options=off), _run(builder, source, 10_000, options=off)
    assert large["total"] < 11 * small["total"], (small["total"], large["total"])
    assert not any("__introsort" in name for name in large)


def test_counted_libcxx_keeps_a_replaced_operator_new(builder: Builder, shared_source) -> None:  # type: ignore[no-untyped-def]
    # The program's own operator new is the one called (main returns 0 only if it ran;
    # ``_run`` checks that), and its malloc is the counted one.
    counts = _run(builder, shared_source("new.cc", REPLACED_NEW_CC))
    assert counts["__instrbudget_libc_malloc"] > 0


def test_counted_libcxx_same_counts_twice(builder: Builder, shared_source) -> None:  # type: ignore[no-untyped-def]
    source = shared_source("sort.cc", SORT_CC)
    assert _run(builder, source, 3_000) == _run(builder, source, 3_000)


def test_counted_libcxx_prepare_leaves_the_override_section() -> None:
    text = "define weak ptr @_Znwm(i64 %0)" + OVERRIDE_SECTION + " {\n  ret ptr null\n}\n"
    assert prepare(text) == "define weak ptr @_Znwm(i64 %0) {\n  ret ptr null\n}\n"
    assert "string" in SOURCES
    assert "algorithm" in SOURCES


def test_counted_libcxx_beside_the_host_libcxx(builder: Builder, shared_source) -> None:  # type: ignore[no-untyped-def]
    """Streams, getline and shared_ptr run in the host's libc++ (uncounted) on strings the counted
    part made: its classes' vtables are the host's one copy, its aliases yield to the host's, and
    its internal functions keep no comdat the linker could take for the host's (it used to link
    with duplicate vtables, then call address 0)."""
    source = shared_source("streams.cc", STREAMS_CC)
    counted = run_program(builder.build([source], options=COUNTED))
    plain = run_program(builder.build([source], options=BuildOptions(count_libraries=False)))
    assert (counted.returncode, counted.stdout) == (plain.returncode, plain.stdout) == (0, b"200 600\n")
    assert counted.counts is not None
    (cost,) = MODEL.evaluate(counted.counts)
    assert cost.functions["__instrbudget_libc_malloc"] > 0


HASH_CC = """\
#include <cstdlib>
#include <functional>
#include <string>
#include <unordered_map>
int main(int argc, char **argv) {
    std::string key(std::atoi(argv[1]), 'k');
    std::unordered_map<std::string, int> seen;
    for (int i = 0; i < 100; i++) seen[key]++;  // each lookup hashes the whole key
    return seen[key] != 100 || std::hash<std::string>{}(key) == 0;
}
"""


def test_counted_libcxx_string_hash_grows_with_the_key(builder: Builder, shared_source) -> None:  # type: ignore[no-untyped-def]
    """``std::hash<std::string>`` (libc++'s ``__hash_memory``, in its functional.cpp) is counted:
    keys 100 times as long cost over 50 times as much to hash, where the call was all it cost."""
    source = shared_source("hash.cc", HASH_CC)
    short, long = _run(builder, source, 100), _run(builder, source, 10_000)
    assert any("__hash_memory" in name for name in short), sorted(short)
    hashing = [name for name in short if "__murmur2_or_cityhash" in name]
    assert hashing, sorted(short)
    assert all(long[name] > 50 * short[name] for name in hashing)
