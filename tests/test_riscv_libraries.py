"""Real libraries under the models that execute the RISC-V build (issue 10, part 5).

lz4, brotli, zstd, xxhash, mmh3 and simdjson's portable kernel, from their PyPI sdists, are built
as libraries for the host and for the models' RISC-V target. Each test calls real functions with
real data and checks the native results against known answers (the libraries' own test data and
documented values, the mmh3 wheel); the RISC-V build replays every call, and a replay that differs
from the native call (a RuntimeWarning, made an error here) fails the test. The models' metrics
must be present, positive, and the same for the same calls in a fresh library process.

The second half checks the replay itself on small C functions: arguments and results whose
size or passing differs between the host and riscv32.

Builds of these sources take minutes (zstd.c has 53k lines, simdjson.cpp 180k, and the first
riscv32 C++ build compiles libc++), so they are kept between sessions in a build cache of their
own (``~/.cache/instrbudget-tests/builds``, ``INSTRBUDGET_TEST_BUILD_CACHE`` overrides); its
keys hold the engine's own code, so an engine change rebuilds them.
"""

from __future__ import annotations

import ctypes
import os
import random
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cbuild import Builder, BuildOptions, Library
from cbuild.build.builder import Artifact
from cbuild.models import CostModel, default_registry
from cbuild.models.costs import Cost
from cbuild.models.pipeline import PipelineModel
from tests.sdists import sdist

BUILD_CACHE = Path(
    os.environ.get("INSTRBUDGET_TEST_BUILD_CACHE", Path.home() / ".cache" / "instrbudget-tests" / "builds")
)

PIPELINE_EXECUTES = pytest.mark.skipif(
    "execute" not in PipelineModel.params,
    reason="the pipeline model cannot execute the RISC-V build yet (PipelineModel.params has no 'execute')",
)
#: The models that execute the RISC-V build, one line each: (model, its configuration).
MODELS = [
    pytest.param(("zkvm", {"execute": True}), id="zkvm"),
    pytest.param(("pipeline", {"machine": "inorder5", "execute": True}), id="pipeline", marks=PIPELINE_EXECUTES),
    pytest.param(("pipeline", {"machine": "rocket", "execute": True}), id="pipeline-rv64", marks=PIPELINE_EXECUTES),
]

#: A few kilobytes of text with repeats, then bytes that do not compress.
TEXT = b"".join(b"%04d the quick brown fox jumps over the lazy dog\n" % i for i in range(48))
SAMPLE = TEXT + random.Random(10).randbytes(512)


@pytest.fixture(scope="module")
def rv_builder() -> Builder:
    """A builder on the build cache that outlives the session."""
    return Builder(cache_dir=BUILD_CACHE, progress=lambda message: None)


def stable_source(name: str, text: str) -> Path:
    """``text`` as a file at a path that stays the same between sessions (build keys hold the path)."""
    path = BUILD_CACHE / "sources" / name
    if not path.exists() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        scratch = path.with_name(f".{path.name}.{os.getpid()}")
        scratch.write_text(text)
        scratch.replace(path)
    return path


@dataclass
class Measured:
    """What one library process measured for a sequence of calls."""

    #: Whatever the calls returned (native results).
    results: Any
    #: The model's costs by metric.
    costs: dict[str, Cost]
    #: The model's raw results (zkvm: total, user, paging, reserved, segments, page-ins, page-outs).
    raw: tuple[int, ...]


def measure(artifact: Artifact, model: CostModel, calls: Callable[[Library], Any]) -> Measured:
    """Run ``calls`` in a fresh library process; any RuntimeWarning (a replay that differs from the
    native call) is an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with Library(artifact) as lib:
            since = lib.snapshot()
            results = calls(lib)
            counts = lib.counts(since)
    assert model.name not in counts.unavailable, counts.unavailable[model.name]
    costs = {cost.metric: cost for cost in model.evaluate(counts)}
    return Measured(results, costs, tuple(counts.results_of(model.name)))


def model_of(spec: tuple[str, dict[str, Any]]) -> CostModel:
    name, config = spec
    return default_registry().create(name, config)


def check_runs(
    artifact: Artifact, model: CostModel, calls: Callable[[Library], Any], functions: Sequence[str] = ()
) -> Measured:
    """Measure ``calls`` twice, each in a fresh process: the metrics are all there, positive, and
    the same both times; ``functions`` ran in the RISC-V build (zkvm's per-function cycles)."""
    first = measure(artifact, model, calls)
    assert sorted(first.costs) == sorted(m.name for m in model.metrics)
    assert all(cost.total > 0 for cost in first.costs.values()), first.costs
    if model.name == "zkvm":
        executed = first.costs["zk_user_cycles"].functions
        assert all(executed.get(name, 0) > 0 for name in functions), {n: executed.get(n) for n in functions}
        assert sum(executed.values()) == first.costs["zk_user_cycles"].total
    second = measure(artifact, model, calls)
    assert second.results == first.results
    assert second.raw == first.raw
    assert {m: (c.total, c.functions) for m, c in second.costs.items()} == {
        m: (c.total, c.functions) for m, c in first.costs.items()
    }
    return first


# --------------------------------------------------------------------------------------------------------
# lz4
# --------------------------------------------------------------------------------------------------------

#: An LZ4 block made by hand from the block format: 3 literals "abc" and a match of 9 bytes at
#: offset 3, then the last 5 literals.
LZ4_BLOCK = b"\x35abc\x03\x00\x50hello"


@pytest.mark.parametrize("spec", MODELS)
def test_lz4_blocks_round_trip_in_the_riscv_build(rv_builder: Builder, spec: tuple[str, dict[str, Any]]) -> None:
    root = sdist("lz4", "4.4.5") / "lz4libs"
    model = model_of(spec)
    artifact = rv_builder.build([root / "lz4.c", root / "lz4hc.c"], kind="library", models=[model])

    def calls(lib: Library) -> dict[str, Any]:
        out: dict[str, Any] = {"version": lib.LZ4_versionNumber()}
        known = bytearray(64)
        n = lib.LZ4_decompress_safe(LZ4_BLOCK, known, len(LZ4_BLOCK), len(known))
        out["known"] = bytes(known[: max(n, 0)])
        cap = lib.LZ4_compressBound(len(SAMPLE))
        compressors: list[tuple[str, Callable[[bytearray], int]]] = [
            ("fast", lambda dst: lib.LZ4_compress_default(SAMPLE, dst, len(SAMPLE), cap)),
            ("hc", lambda dst: lib.LZ4_compress_HC(SAMPLE, dst, len(SAMPLE), cap, 9)),
        ]
        for name, compress in compressors:
            packed = bytearray(cap)
            size = compress(packed)
            back = bytearray(len(SAMPLE))
            got = lib.LZ4_decompress_safe(bytes(packed[:size]), back, size, len(back))
            out[name] = (size, got, bytes(back) == SAMPLE)
        return out

    measured = check_runs(
        artifact, model, calls, functions=["LZ4_compress_default", "LZ4_compress_HC", "LZ4_decompress_safe"]
    )
    r = measured.results
    assert r["version"] == 10904  # lz4 1.9.4, as the sdist bundles it
    assert r["known"] == b"abcabcabcabchello"
    for name in ("fast", "hc"):
        size, got, same = r[name]
        assert 0 < size < len(SAMPLE), (name, size)
        assert (got, same) == (len(SAMPLE), True), name
    assert r["hc"][0] <= r["fast"][0]


# --------------------------------------------------------------------------------------------------------
# brotli
# --------------------------------------------------------------------------------------------------------

#: Files of brotli's own test data (tests/testdata in the sdist) with their compressed forms.
BROTLI_FILES = ("10x10y", "quickfox", "ukkonooa", "monkey")


@pytest.mark.slow
@pytest.mark.parametrize("spec", MODELS)
def test_brotli_decodes_its_test_data_and_round_trips_in_the_riscv_build(
    rv_builder: Builder, spec: tuple[str, dict[str, Any]]
) -> None:
    top = sdist("brotli", "1.2.1")
    root = top / "c"
    sources = sorted(p for part in ("common", "enc", "dec") for p in (root / part).glob("*.c"))
    model = model_of(spec)
    options = BuildOptions(include_dirs=(root / "include",))
    artifact = rv_builder.build(sources, options=options, kind="library", models=[model])
    testdata = top / "tests" / "testdata"
    files = {
        name: ((testdata / name).read_bytes(), (testdata / f"{name}.compressed").read_bytes()) for name in BROTLI_FILES
    }

    def decompress(lib: Library, data: bytes, size: int) -> tuple[int, bytes]:
        out = bytearray(size + 16)
        written = ctypes.c_size_t(len(out))
        result = lib.BrotliDecoderDecompress(len(data), data, ctypes.byref(written), out)
        return int(result), bytes(out[: written.value])

    def calls(lib: Library) -> dict[str, Any]:
        out: dict[str, Any] = {"versions": (lib.BrotliEncoderVersion(), lib.BrotliDecoderVersion())}
        out["decoded"] = {name: decompress(lib, packed, len(plain)) for name, (plain, packed) in files.items()}
        cap = lib.BrotliEncoderMaxCompressedSize(len(SAMPLE))
        packed = bytearray(cap)
        size = ctypes.c_size_t(cap)
        ok = lib.BrotliEncoderCompress(5, 22, 0, len(SAMPLE), SAMPLE, ctypes.byref(size), packed)
        out["round trip"] = (ok, size.value, decompress(lib, bytes(packed[: size.value]), len(SAMPLE)))
        return out

    measured = check_runs(artifact, model, calls, functions=["BrotliEncoderCompress", "BrotliDecoderDecompress"])
    r = measured.results
    assert r["versions"] == (0x1002001, 0x1002001)  # 1.2.1
    for name, (plain, _) in files.items():
        assert r["decoded"][name] == (1, plain), name  # BROTLI_DECODER_RESULT_SUCCESS
    ok, size, (result, back) = r["round trip"]
    assert (ok, result) == (1, 1)
    assert 0 < size < len(SAMPLE)
    assert back == SAMPLE


# --------------------------------------------------------------------------------------------------------
# zstd (the zstandard sdist's single-file zstd.c)
# --------------------------------------------------------------------------------------------------------


def zstd_raw_frame(data: bytes) -> bytes:
    """A zstd frame made by hand from RFC 8878: single segment, one-byte content size, one raw block."""
    assert len(data) < 256
    block_header = ((len(data) << 3) | 1).to_bytes(3, "little")  # last block, raw
    return b"\x28\xb5\x2f\xfd" + bytes([0x20, len(data)]) + block_header + data


@pytest.mark.slow
@pytest.mark.parametrize("spec", MODELS)
def test_zstd_round_trips_and_reads_a_handmade_frame_in_the_riscv_build(
    rv_builder: Builder, spec: tuple[str, dict[str, Any]]
) -> None:
    model = model_of(spec)
    artifact = rv_builder.build([sdist("zstandard", "0.25.0") / "zstd" / "zstd.c"], kind="library", models=[model])
    handmade = zstd_raw_frame(b"written by hand, read by zstd")

    def calls(lib: Library) -> dict[str, Any]:
        out: dict[str, Any] = {"version": lib.ZSTD_versionNumber()}
        plain = bytearray(64)
        n = lib.ZSTD_decompress(plain, len(plain), handmade, len(handmade))
        out["handmade"] = (lib.ZSTD_getFrameContentSize(handmade, len(handmade)), bytes(plain[:n]))
        cap = lib.ZSTD_compressBound(len(SAMPLE))
        packed = bytearray(cap)
        size = lib.ZSTD_compress(packed, cap, SAMPLE, len(SAMPLE), 3)
        back = bytearray(len(SAMPLE))
        got = lib.ZSTD_decompress(back, len(back), bytes(packed[:size]), size)
        frame = bytes(packed[:size])
        out["round trip"] = (size, lib.ZSTD_getFrameContentSize(frame, size), got, bytes(back) == SAMPLE)
        # An error result is (size_t)-code: 64 bits natively, 32 in riscv32; the same result.
        garbage = b"not a zstd frame"
        error = lib.ZSTD_decompress(back, len(back), garbage, len(garbage))
        out["error"] = (lib.ZSTD_isError(error), error >= 2**63)
        return out

    measured = check_runs(artifact, model, calls, functions=["ZSTD_compress", "ZSTD_decompress"])
    r = measured.results
    assert r["version"] == 10507  # zstd 1.5.7
    assert r["handmade"] == (29, b"written by hand, read by zstd")
    size, content_size, got, same = r["round trip"]
    assert 0 < size < len(SAMPLE)
    assert (content_size, got, same) == (len(SAMPLE), len(SAMPLE), True)
    assert r["error"] == (1, True)


# --------------------------------------------------------------------------------------------------------
# xxhash
# --------------------------------------------------------------------------------------------------------

#: Documented values (python-xxhash 4.1.0: README.rst and tests/test_xxh*.py in the sdist).
XXH_KNOWN = {
    "XXH32": [
        (b"a", 0, 1426945110),
        (b"a", 2**32 - 1, 3443684653),
        (b"Nobody inspects the spammish repetition", 0, 0xE2293B2F),
    ],
    "XXH64": [
        (b"a", 1, 16051599287423682246),
        (b"a", 2**64 - 1, 6972758980737027682),
        (b"xxhash", 20141025, 0xB559B98D844E0635),
    ],
    "XXH3_64bits_withSeed": [(b"a", 0, 16629034431890738719), (b"a", 2**64 - 1, 4875116479388997462)],
    "XXH3_128bits_withSeed": [
        (b"a", 0, 225219434562328483135862406050043285023),
        (b"a", 1, 337425133163118381928709500770786453280),
        (b"a", 2**64 - 1, 198297796855923085494266857744987477846),
    ],
}


@pytest.mark.parametrize("spec", MODELS)
def test_xxhash_gives_the_documented_hashes_in_the_riscv_build(
    rv_builder: Builder, spec: tuple[str, dict[str, Any]]
) -> None:
    model = model_of(spec)
    root = sdist("xxhash", "4.1.0") / "deps" / "xxhash"
    artifact = rv_builder.build([root / "xxhash.c"], kind="library", models=[model])

    def calls(lib: Library) -> dict[str, Any]:
        out: dict[str, Any] = {"version": lib.XXH_versionNumber()}
        for name, cases in XXH_KNOWN.items():
            hashes = []
            for data, seed, _ in cases:
                h = getattr(lib, name)(data, len(data), seed)
                if name.startswith("XXH3_128"):  # XXH128_hash_t: a struct result (sret on riscv32)
                    canonical = lib.c_type("XXH128_canonical_t")()
                    lib.XXH128_canonicalFromHash(canonical, h)  # the struct as an argument too
                    hashes.append((h.high64 << 64 | h.low64, bytes(canonical.digest)))
                else:
                    hashes.append(h)
            out[name] = hashes
        return out

    measured = check_runs(artifact, model, calls, functions=["XXH32", "XXH64"])
    r = measured.results
    assert r["version"] == 804  # xxHash 0.8.4
    for name, cases in XXH_KNOWN.items():
        expected = [value for _, _, value in cases]
        if name.startswith("XXH3_128"):
            assert r[name] == [(value, value.to_bytes(16, "big")) for value in expected]
        else:
            assert r[name] == expected, name


# --------------------------------------------------------------------------------------------------------
# mmh3 (murmurhash3.c)
# --------------------------------------------------------------------------------------------------------

#: murmurhash3.c includes <Python.h> for Py_ssize_t alone. CPython's headers are the host's
#: (pyconfig.h says an 8-byte long), so riscv32 cannot use them ("LONG_BIT definition appears
#: wrong for platform"); both builds get this stand-in instead.
PYTHON_H = """\
/* Stand-in for CPython's header: murmurhash3.c needs only Py_ssize_t from it. */
#include <sys/types.h>
typedef ssize_t Py_ssize_t;
"""


@pytest.mark.parametrize("spec", MODELS)
def test_mmh3_agrees_with_the_wheel_in_the_riscv_build(rv_builder: Builder, spec: tuple[str, dict[str, Any]]) -> None:
    mmh3 = pytest.importorskip("mmh3")
    model = model_of(spec)
    shim = stable_source("mmh3-python-h/Python.h", PYTHON_H).parent
    source = sdist("mmh3", "5.3.1") / "src" / "mmh3" / "murmurhash3.c"
    artifact = rv_builder.build([source], options=BuildOptions(include_dirs=(shim,)), kind="library", models=[model])
    rng = random.Random(3)
    inputs = [(rng.randbytes(size), rng.randrange(2**32)) for size in (0, 1, 3, 4, 15, 16, 17, 31, 100)]
    inputs.append((b"foo", 0))

    def calls(lib: Library) -> list[tuple[bytes, bytes, bytes]]:
        out = []
        for data, seed in inputs:
            h32, h86, h64 = bytearray(4), bytearray(16), bytearray(16)
            # Py_ssize_t len: an i32 in the riscv32 build (a register, not a register pair).
            lib.murmurhash3_x86_32(data, len(data), seed, h32)
            lib.murmurhash3_x86_128(data, len(data), seed, h86)
            lib.murmurhash3_x64_128(data, len(data), seed, h64)
            out.append((bytes(h32), bytes(h86), bytes(h64)))
        return out

    measured = check_runs(artifact, model, calls, functions=["murmurhash3_x86_32", "murmurhash3_x64_128"])
    for (data, seed), (h32, h86, h64) in zip(inputs, measured.results, strict=True):
        assert int.from_bytes(h32, "little", signed=True) == mmh3.hash(data, seed)
        assert h86 == mmh3.hash_bytes(data, seed, x64arch=False)
        assert h64 == mmh3.hash_bytes(data, seed)
    assert int.from_bytes(measured.results[-1][0], "little", signed=True) == -156908512  # mmh3's README


# --------------------------------------------------------------------------------------------------------
# simdjson (pysimdjson's amalgamation), fallback kernel only
# --------------------------------------------------------------------------------------------------------

#: C entry points to simdjson's C++ API.
SIMDJSON_C = """\
#include "simdjson.h"
#include <cstring>
#include <string>

extern "C" {
/* The name of the kernel simdjson chose, into out (capacity cap); its length. */
int sj_implementation(char *out, size_t cap) {
    std::string name = simdjson::get_active_implementation()->name();
    size_t n = name.size() < cap ? name.size() : cap;
    std::memcpy(out, name.data(), n);
    return int(n);
}

/* The number at a JSON pointer of a document; *error is simdjson's error code. */
double sj_number_at(const char *json, size_t len, const char *pointer, int *error) {
    simdjson::dom::parser parser;
    double value = 0;
    *error = int(parser.parse(json, len).at_pointer(pointer).get_double().get(value));
    return value;
}

/* The sum of the integers of the array at a JSON pointer; *error as above. */
long long sj_sum_at(const char *json, size_t len, const char *pointer, int *error) {
    simdjson::dom::parser parser;
    simdjson::dom::array array;
    simdjson::error_code e = parser.parse(json, len).at_pointer(pointer).get_array().get(array);
    long long sum = 0;
    for (simdjson::dom::element x : array) {
        int64_t v = 0;
        if (e || (e = x.get_int64().get(v))) break;
        sum += v;
    }
    *error = int(e);
    return sum;
}

/* The document without white space into out (capacity at least len); its length, or -1. */
long sj_minify(const char *json, size_t len, char *out) {
    size_t n = 0;
    return simdjson::minify(json, len, out, n) ? -1 : long(n);
}
}
"""
#: Every x86 kernel off: only the portable one is left, on the host as on RISC-V.
SIMDJSON_DEFINES = tuple(f"SIMDJSON_IMPLEMENTATION_{kernel}=0" for kernel in ("ICELAKE", "HASWELL", "WESTMERE"))
DOCUMENT = b"""{
  "name": "pytest-instrbudget", "version": [0, 5, 1],
  "sizes": {"zstd": 53692, "simdjson": 180000, "ratio": -2.5e-1},
  "tags": ["\\u00e9t\\u00e9", "riscv32", null, true]
}"""


@pytest.mark.parametrize("spec", MODELS)
def test_simdjson_fallback_kernel_parses_in_the_riscv_build(
    rv_builder: Builder, spec: tuple[str, dict[str, Any]]
) -> None:
    root = sdist("pysimdjson", "7.0.2") / "simdjson"
    model = model_of(spec)
    wrapper = stable_source("simdjson-c/sj.cpp", SIMDJSON_C)
    options = BuildOptions(include_dirs=(root,), defines=SIMDJSON_DEFINES)
    artifact = rv_builder.build([root / "simdjson.cpp", wrapper], options=options, kind="library", models=[model])

    def calls(lib: Library) -> dict[str, Any]:
        name = bytearray(32)
        out: dict[str, Any] = {"kernel": bytes(name[: lib.sj_implementation(name, len(name))])}
        error = ctypes.c_int(-1)
        for pointer in ("/sizes/zstd", "/sizes/ratio", "/version/2", "/missing"):
            value = lib.sj_number_at(DOCUMENT, len(DOCUMENT), pointer.encode(), ctypes.byref(error))
            out[pointer] = (value, error.value)
        out["sum"] = (lib.sj_sum_at(DOCUMENT, len(DOCUMENT), b"/version", ctypes.byref(error)), error.value)
        minified = bytearray(len(DOCUMENT))
        out["minified"] = bytes(minified[: lib.sj_minify(DOCUMENT, len(DOCUMENT), minified)])
        broken = b'{"unterminated": [1, 2'
        lib.sj_number_at(broken, len(broken), b"/unterminated/0", ctypes.byref(error))
        out["broken"] = error.value
        return out

    measured = check_runs(artifact, model, calls, functions=["sj_number_at"])
    r = measured.results
    assert r["kernel"] == b"fallback"
    assert r["/sizes/zstd"] == (53692.0, 0)
    assert r["/sizes/ratio"] == (-0.25, 0)
    assert r["/version/2"] == (1.0, 0)
    assert r["/missing"][1] != 0  # NO_SUCH_FIELD
    assert r["sum"] == (6, 0)
    assert r["minified"] == b"".join(DOCUMENT.split())  # no white space inside its strings
    assert r["broken"] != 0


# --------------------------------------------------------------------------------------------------------
# The replay of calls whose arguments the host and riscv32 pass differently
# --------------------------------------------------------------------------------------------------------

REPLAY_C = """\
#include <stdint.h>
typedef long my_ssize;                       /* a typedef of long: 8 bytes natively, 4 on riscv32 */
typedef struct { uint32_t a; uint16_t b; } small;   /* in two registers on riscv32 */
typedef struct { uint64_t lo, hi; } wide;           /* by reference, and returned through memory */

void bump(int *p) { *p += 1; }
my_ssize scale(my_ssize n, int k, int *seen) { *seen = k; return n * k; }
long widen(long a) { return a << 20; }
small grow(small s, int k) { s.a += (uint32_t)k; s.b = (uint16_t)(s.b * 2); return s; }
wide swap(wide w) { wide r = {w.hi, w.lo}; return r; }
uint64_t mix(wide w, small s, uint64_t x) { return w.lo * 3 + w.hi + s.a + s.b + x; }
unsigned half(unsigned x) { return x >> 1; }
"""


@pytest.fixture(scope="module")
def replay_lib(builder: Builder, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Library]:
    source = tmp_path_factory.mktemp("replay") / "replay.c"
    source.write_text(REPLAY_C)
    artifact = builder.build([source], kind="library", models=[default_registry().create("zkvm", {"execute": True})])
    with Library(artifact) as lib:
        yield lib


def replayed(lib: Library, call: Callable[[], Any]) -> Any:
    """``call()``'s native result; no replay differs, and the call ran in the riscv32 build."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        since = lib.snapshot()
        result = call()
        counts = lib.counts(since)
    assert "zkvm" not in counts.unavailable, counts.unavailable["zkvm"]
    assert counts.machine_run("riscv32").instructions > 0
    return result


def test_replay_gives_in_out_buffers_their_contents_before_the_call(replay_lib: Library) -> None:
    value = ctypes.c_int(41)
    replayed(replay_lib, lambda: replay_lib.bump(ctypes.byref(value)))
    assert value.value == 42  # the guest got 41 too, not the native 42, and wrote 42


def test_replay_passes_a_typedef_of_long_as_one_riscv32_register(replay_lib: Library) -> None:
    seen = ctypes.c_int(0)
    # Passed as a register pair, k would arrive where the high half of n went, and seen where k did.
    assert replayed(replay_lib, lambda: replay_lib.scale(-7, 6, ctypes.byref(seen))) == -42
    assert seen.value == 6


def test_replay_carries_structs_by_value(replay_lib: Library) -> None:
    small = replay_lib.c_type("small")
    wide = replay_lib.c_type("wide")
    grown = replayed(replay_lib, lambda: replay_lib.grow(small(7, 300), 5))
    assert (grown.a, grown.b) == (12, 600)
    swapped = replayed(replay_lib, lambda: replay_lib.swap(wide(1, 2**63 + 5)))
    assert (swapped.lo, swapped.hi) == (2**63 + 5, 1)
    assert replayed(replay_lib, lambda: replay_lib.mix(wide(2, 3), small(4, 5), 2**40)) == 6 + 3 + 4 + 5 + 2**40
    assert replayed(replay_lib, lambda: replay_lib.half(2**32 - 2)) == 2**31 - 1


def test_replay_warns_where_code_assumes_a_64_bit_long(replay_lib: Library) -> None:
    with pytest.warns(RuntimeWarning, match=r"widen\(\): the result is 0 \(natively 1099511627776\) in the riscv32"):
        assert replay_lib.widen(2**20) == 2**40
    with pytest.warns(RuntimeWarning, match=r"widen\(\): argument 1 \(1099511627776\) does not fit the build's 32-bit"):
        replay_lib.widen(2**40)
    assert replayed(replay_lib, lambda: replay_lib.widen(-3)) == -3 << 20  # fits: no warning
