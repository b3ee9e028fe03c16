"""The counted math.h (cbuild/libc/musl/math.c and the musl sources it builds on): within one
unit in the last place of the exact result (mpmath at 160 bits), the host libm's special
values, and work that shows in the count."""

from __future__ import annotations

import array
import ctypes
import ctypes.util
import math
import random
import re
from collections.abc import Callable, Iterator
from fractions import Fraction
from pathlib import Path

import mpmath
import pytest

from cbuild import Builder, BuildOptions, IrCountModel, Library, run_program
from cbuild.build.libc import MATH, functions, point_at_libc
from cbuild.models.costs import outside_calls

COUNTED = BuildOptions(count_libraries=True)
MODEL = IrCountModel()
mpmath.mp.prec = 160
mpf = mpmath.mpf

# name -> (arity, the exact function, the largest error allowed, in units in the last place).
# Below 1: the result is one of the two doubles around the exact value. musl's own functions
# (the wheel's C, not this project's) are allowed what musl documents for them.
UNARY: dict[str, tuple[Callable[..., object], float]] = {
    "sin": (mpmath.sin, 1.0),
    "cos": (mpmath.cos, 1.0),
    "tan": (mpmath.tan, 1.0),
    "exp": (mpmath.exp, 1.0),
    "exp2": (lambda x: mpf(2) ** x, 1.0),
    "exp10": (lambda x: mpf(10) ** x, 1.0),
    "log": (mpmath.log, 1.0),
    "log2": (lambda x: mpmath.log(x, 2), 1.0),
    "log10": (mpmath.log10, 1.0),
    "log1p": (mpmath.log1p, 1.0),
    "expm1": (mpmath.expm1, 1.0),
    "atan": (mpmath.atan, 1.0),
    "asin": (mpmath.asin, 1.0),
    "acos": (mpmath.acos, 1.0),
    "sinh": (mpmath.sinh, 2.0),
    "cosh": (mpmath.cosh, 2.0),
    "tanh": (mpmath.tanh, 2.0),
    "asinh": (mpmath.asinh, 2.0),
    "acosh": (mpmath.acosh, 2.0),
    "atanh": (mpmath.atanh, 2.0),
    "cbrt": (lambda x: mpmath.sign(x) * mpmath.cbrt(abs(x)), 1.0),
    "erf": (mpmath.erf, 2.0),
    "erfc": (mpmath.erfc, 4.0),
    "tgamma": (mpmath.gamma, 8.0),  # musl's: its largest errors are near the negative poles
}
BINARY: dict[str, tuple[Callable[..., object], float]] = {
    "pow": (lambda x, y: mpf(x) ** y, 1.0),
    "atan2": (mpmath.atan2, 2.0),
    "hypot": (mpmath.hypot, 1.0),
    "fmod": (lambda x, y: mpf(Fraction(x) - Fraction(y) * int(Fraction(x) / Fraction(y))), 0.0),
}
FLOAT = ("sinf", "cosf", "tanf", "expf", "exp2f", "logf", "log2f", "log10f", "atanf", "asinf", "acosf", "cbrtf")
FLOAT_MUSL = ("powf", "expm1f", "sinhf", "erff")


def _harness() -> str:
    lines = ["#define _GNU_SOURCE", "#include <math.h>"]
    for name in UNARY:
        loop = f"for (int i = 0; i < n; i++) y[i] = {name}(x[i]);"
        lines.append(f"void run_{name}(const double *x, double *y, int n) {{ {loop} }}")
    for name in BINARY:
        lines.append(
            f"void run_{name}(const double *x, const double *z, double *y, int n)"
            f" {{ for (int i = 0; i < n; i++) y[i] = {name}(x[i], z[i]); }}"
        )
    for name in FLOAT + FLOAT_MUSL:
        args = "x[i], z[i]" if name == "powf" else "x[i]"
        lines.append(
            f"void run_{name}(const float *x, const float *z, float *y, int n)"
            f" {{ for (int i = 0; i < n; i++) y[i] = {name}({args}); }}"
        )
    return "\n".join(lines) + "\n"


def _log_uniform(rng: random.Random, low: int, high: int, n: int, *, signed: bool = False) -> list[float]:
    out = []
    for _ in range(n):
        v = rng.uniform(1.0, 2.0) * 2.0 ** rng.randint(low, high)
        out.append(-v if signed and rng.random() < 0.5 else v)
    return out


def _inputs(name: str, rng: random.Random, n: int = 400) -> list[float]:
    u = rng.uniform
    ranges: dict[str, Callable[[], list[float]]] = {
        "sin": lambda: [u(-10, 10) for _ in range(n)] + _log_uniform(rng, -30, 60, n, signed=True),
        "exp": lambda: [u(-745, 709.7) for _ in range(n)] + [u(-1, 1) for _ in range(n)],
        "exp2": lambda: [u(-1074, 1023.9) for _ in range(n)] + [u(-1, 1) for _ in range(n)],
        "exp10": lambda: [u(-323, 308.2) for _ in range(n)] + [u(-1, 1) for _ in range(n)],
        "log": lambda: _log_uniform(rng, -1074, 1022, n) + [1 + u(-1e-3, 1e-3) for _ in range(n)],
        "log1p": lambda: [u(-0.999, 10) for _ in range(n)] + _log_uniform(rng, -60, -2, n, signed=True),
        "expm1": lambda: [u(-40, 709) for _ in range(n)] + _log_uniform(rng, -60, -2, n, signed=True),
        "atan": lambda: [u(-8, 8) for _ in range(n)] + _log_uniform(rng, -30, 60, n, signed=True),
        "asin": lambda: (
            [u(-1, 1) for _ in range(n)] + [(1 - 2.0 ** -rng.randint(2, 52)) * rng.choice((-1, 1)) for _ in range(n)]
        ),
        "sinh": lambda: [u(-30, 30) for _ in range(n)] + _log_uniform(rng, -30, 9, n, signed=True),
        "asinh": lambda: _log_uniform(rng, -30, 60, n, signed=True),
        "acosh": lambda: [1 + v for v in _log_uniform(rng, -40, 40, n)],
        "atanh": lambda: [u(-1, 1) for _ in range(n)],
        "cbrt": lambda: _log_uniform(rng, -1074, 1022, n, signed=True),
        "erf": lambda: [u(-6, 6) for _ in range(n)],
        "erfc": lambda: [u(-6, 27) for _ in range(n)],
        "tgamma": lambda: [u(0.01, 170) for _ in range(n)] + [u(-20, 0) for _ in range(n)],
    }
    same = {"cos": "sin", "tan": "sin", "log2": "log", "log10": "log", "acos": "asin", "cosh": "sinh", "tanh": "sinh"}
    return ranges[same.get(name, name)]()


def _binary_inputs(name: str, rng: random.Random, n: int = 400) -> tuple[list[float], list[float]]:
    u = rng.uniform
    if name == "pow":
        return _log_uniform(rng, -20, 20, n), [u(-50, 50) for _ in range(n)]
    if name == "hypot":
        xs = _log_uniform(rng, -1074, 1022, n, signed=True)
        return xs, [x * 2.0 ** rng.randint(-40, 40) * u(0.5, 2) for x in xs]
    return _log_uniform(rng, -1074, 1022, n, signed=True), _log_uniform(rng, -1074, 1022, n, signed=True)


def _finite(value: object) -> bool:
    """A real, finite exact value (not a complex one: an argument outside the domain)."""
    return isinstance(value, mpmath.mpf) and bool(mpmath.isfinite(value))


def _ulps(got: float, exact: object, *, single: bool = False) -> float:
    """|got - exact| in units in the last place of the exact value's format."""
    if math.isinf(got):
        return 0.0 if abs(exact) > (3.4028234663852886e38 if single else 1.7976931348623157e308) else math.inf  # type: ignore[arg-type,operator]
    nearest = float(exact)  # type: ignore[arg-type]
    if single:
        nearest = array.array("f", [nearest])[0]
        ulp = math.ulp(nearest) * 2.0**29 if nearest else 2.0**-149
        ulp = max(ulp, 2.0**-149)
    else:
        ulp = math.ulp(nearest) if nearest else 2.0**-1074
    return float(abs(mpf(got) - exact) / ulp)  # type: ignore[operator]


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory, shared_cache: Path) -> Iterator[Library]:
    source = tmp_path_factory.mktemp("math") / "harness.c"
    source.write_text(_harness())
    builder = Builder(cache_dir=shared_cache, progress=lambda message: None)
    lib = Library(builder.build([source], kind="library", options=COUNTED))
    yield lib
    lib.close()


@pytest.mark.parametrize("name", sorted(UNARY))
def test_counted_math_within_an_ulp(harness: Library, name: str) -> None:
    exact, bound = UNARY[name]
    xs = [x for x in _inputs(name, random.Random(name)) if _finite(exact(x))]
    ys = array.array("d", [0.0] * len(xs))
    getattr(harness, f"run_{name}")(array.array("d", xs), ys, len(xs))
    worst = max(((_ulps(y, exact(x)), x) for x, y in zip(xs, ys, strict=True)), key=lambda t: t[0])
    assert worst[0] < bound, f"{name}({worst[1].hex()}) is {worst[0]:.3f} ulp off"


@pytest.mark.parametrize("name", sorted(BINARY))
def test_counted_math_binary_within_an_ulp(harness: Library, name: str) -> None:
    exact, bound = BINARY[name]
    xs, zs = _binary_inputs(name, random.Random(name))
    pairs = [(x, z) for x, z in zip(xs, zs, strict=True) if _finite(exact(x, z))]
    ys = array.array("d", [0.0] * len(pairs))
    columns = [array.array("d", column) for column in zip(*pairs, strict=True)]
    getattr(harness, f"run_{name}")(*columns, ys, len(pairs))
    errors = [(_ulps(y, exact(x, z)), x, z) for (x, z), y in zip(pairs, ys, strict=True)]
    worst = max(errors, key=lambda t: t[0])
    if bound == 0.0:
        assert worst[0] == 0.0, f"{name}({worst[1].hex()}, {worst[2].hex()}) is not exact"
    else:
        assert worst[0] < bound, f"{name}({worst[1].hex()}, {worst[2].hex()}) is {worst[0]:.3f} ulp off"


@pytest.mark.parametrize("name", FLOAT + FLOAT_MUSL)
def test_counted_math_float_rounds_once(harness: Library, name: str) -> None:
    """The float functions computed in double round once: within half a unit of float's last
    place and a hair (musl's own float functions: within two)."""
    base = name[:-1]
    exact = UNARY[base][0] if base in UNARY else BINARY[base][0]
    rng = random.Random(name)
    xs = array.array("f", _inputs(base if base != "pow" else "log", rng, 300))
    zs = array.array("f", [rng.uniform(-8, 8) for _ in xs])
    ys = array.array("f", [0.0] * len(xs))
    getattr(harness, f"run_{name}")(xs, zs, ys, len(xs))
    bound = 0.5001 if name in FLOAT else 2.0
    for x, z, y in zip(xs, zs, ys, strict=True):
        value = exact(x, z) if base == "pow" else exact(x)
        if not _finite(value) or not 1.2e-38 < abs(float(value)) < 3.4e38:  # type: ignore[arg-type]
            continue
        assert _ulps(y, value, single=True) < bound, f"{name}({x!r}) = {y!r}"


SPECIAL = (0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0, 5e-324, -5e-324, 1.7976931348623157e308, -2.0, 0.5)


def _same(a: float, b: float) -> bool:
    """The same value, sign of zero included; or two finite non-zero values a few units in the
    last place apart (both libraries round; the accuracy tests above measure which is closer)."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if a == 0 or b == 0 or math.isinf(a) or math.isinf(b):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return abs(a - b) <= 2 * math.ulp(a)


def test_counted_math_special_values_as_the_host_libm(harness: Library) -> None:
    """Zeros, infinities, NaNs, the smallest and largest doubles: the same results (sign of
    zero included) as the host's libm."""
    path = ctypes.util.find_library("m")
    if path is None:
        pytest.skip("no host libm to compare with")
    libm = ctypes.CDLL(path)
    different = []
    for name in UNARY:
        f = getattr(libm, name)
        f.restype, f.argtypes = ctypes.c_double, [ctypes.c_double]
        ys = array.array("d", [0.0] * len(SPECIAL))
        getattr(harness, f"run_{name}")(array.array("d", SPECIAL), ys, len(SPECIAL))
        for x, y in zip(SPECIAL, ys, strict=True):
            host = f(x)
            if not _same(host, y):
                different.append(f"{name}({x!r}) = {y!r}, host {host!r}")
    for name in BINARY:
        f = getattr(libm, name)
        f.restype, f.argtypes = ctypes.c_double, [ctypes.c_double, ctypes.c_double]
        pairs = [(x, z) for x in SPECIAL for z in SPECIAL]
        ys = array.array("d", [0.0] * len(pairs))
        xs, zs = array.array("d", [p[0] for p in pairs]), array.array("d", [p[1] for p in pairs])
        getattr(harness, f"run_{name}")(xs, zs, ys, len(pairs))
        for (x, z), y in zip(pairs, ys, strict=True):
            if not _same(f(x, z), y):
                different.append(f"{name}({x!r}, {z!r}) = {y!r}, host {f(x, z)!r}")
    assert not different, "\n".join(different)


EXACT_CASES_C = """\
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
int main(void) {
    int bad = 0;
    for (int k = -1074; k <= 1023; k++) bad += log2(ldexp(1.0, k)) != k || exp2(k) != ldexp(1.0, k);
    double p = 1;
    for (int k = 0; k <= 22; k++, p *= 10) bad += log10(p) != k || exp10(k) != p || pow(10, k) != p;
    for (int k = -20; k <= 20; k++) bad += cbrt((double)k * k * k) != k;
    bad += sqrt(2.0) * sqrt(2.0) == 2.0;
    printf("%d\\n", bad);
    return 0;
}
"""


def test_counted_math_exact_cases_are_exact(builder: Builder, shared_source) -> None:  # type: ignore[no-untyped-def]
    """log2 and exp2 of powers of two, log10, exp10 and pow of powers of ten, cube roots of
    cubes: exact, as users compare them."""
    result = run_program(builder.build([shared_source("exact.c", EXACT_CASES_C)], options=COUNTED))
    assert result.stdout == b"0\n"


SIN_C = """\
#include <math.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    int n = atoi(argv[1]);
    volatile double x = atof(argv[2]);
    double s = 0;
    for (int i = 0; i < n; i++) s += sin(x);
    return s > 1e300;
}
"""


def test_counted_math_work_shows_and_grows_with_the_argument(builder: Builder, shared_source) -> None:  # type: ignore[no-untyped-def]
    """sin is counted like user code: each call costs its instructions (not one call), the count
    grows by the same amount per call, and a huge argument (the long argument reduction)
    costs more than a small one."""
    program = builder.build([shared_source("sin.c", SIN_C)], options=COUNTED)

    def total(n: int, x: str) -> int:
        result = run_program(program, [n, x])
        assert result.counts is not None
        (cost,) = MODEL.evaluate(result.counts)
        assert "__instrbudget_libc_sin" in cost.functions
        assert "sin" not in outside_calls(result.counts)
        return cost.total

    small = [total(n, "0.5") for n in (100, 200, 300)]
    assert small[2] - small[1] == small[1] - small[0]
    per_call = (small[1] - small[0]) / 100
    assert per_call > 20
    huge = (total(200, "1e300") - total(100, "1e300")) / 100
    assert huge > 10 * per_call


def test_counted_math_intrinsics_reach_the_counted_functions(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    """Built without errno (``-fno-math-errno``), clang makes ``llvm.sin.f64`` of sin: those calls
    are counted too, with the same results."""
    source = write(
        "intr.c",
        "#include <math.h>\n"
        "int main(void) { volatile double x = 0.7;\n"
        "  return (int)(1000 * (sin(x) + powf((float)x, 2.5f) + exp2(x) + fmod(x, 0.3))); }\n",
    )
    plain = run_program(builder.build([source], options=COUNTED))
    flags = BuildOptions(count_libraries=True, cflags=("-fno-math-errno",))
    intrinsics = run_program(builder.build([source], options=flags))
    expected = int(1000 * (math.sin(0.7) + 0.7**2.5 + 2**0.7 + math.fmod(0.7, 0.3))) % 256
    assert plain.returncode == intrinsics.returncode == expected
    for result in (plain, intrinsics):
        assert result.counts is not None
        assert not outside_calls(result.counts), outside_calls(result.counts)
        (cost,) = MODEL.evaluate(result.counts)
        counted = {
            "__instrbudget_libc_sin",
            "__instrbudget_libc_powf",
            "__instrbudget_libc_exp2",
            "__instrbudget_libc_fmod",
        }
        assert counted <= set(cost.functions)


def test_counted_math_routes_intrinsics_and_frem() -> None:
    text = (
        "define double @f(double %x, float %y, <2 x double> %v) {\n"
        "  %a = tail call fast double @llvm.sin.f64(double %x), !dbg !7\n"
        "  %b = frem double %a, 3.000000e+00\n"
        "  %c = frem nnan float %y, %y, !dbg !8\n"
        "  %d = call <2 x double> @llvm.sin.v2f64(<2 x double> %v)\n"
        "  %e = call float @llvm.pow.f32(float %c, float %y)\n"
        "  ret double %b\n}\n"
        "declare double @llvm.sin.f64(double)\n"
    )
    out = point_at_libc(text, own=set(), size_bits=64)
    assert "%a = tail call fast double @__instrbudget_libc_sin(double %x), !dbg !7" in out
    assert "%b = call double @__instrbudget_libc_fmod(double %a, double 3.000000e+00)" in out
    assert "%c = call nnan float @__instrbudget_libc_fmodf(float %y, float %y), !dbg !8" in out
    assert "@llvm.sin.v2f64(<2 x double> %v)" in out  # vectors stay as they are
    assert "%e = call float @__instrbudget_libc_powf(float %c, float %y)" in out
    for declaration in ("double @__instrbudget_libc_sin(double)", "float @__instrbudget_libc_powf(float, float)"):
        assert f"declare {declaration}" in out


def test_counted_math_functions_are_listed() -> None:
    """What math.c defines is in the library's list (its ``LIBC(name)`` definitions)."""
    defined = set(re.findall(r"\bLIBC\((\w+)\)\(", MATH.read_text()))
    assert {"sin", "cos", "tan", "exp", "log", "atan", "asin", "acos", "fmod", "sqrt", "sinf"} <= defined
    assert defined | {"pow", "atan2", "expm1", "erf", "tgamma"} <= functions()


RISCV_C = """\
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
int main(void) {
    double s = 0;
    for (int i = 1; i <= 200; i++) {
        double x = i * 0.731 - 40;
        s += sin(x) + cos(x) + tan(x) + exp(x / 8) + log(i) + log2(i) + log10(i) + log1p(i) + atan(x) + asin(1.0 / i)
            + acos(-1.0 / i) + pow(i, 0.37) + fmod(x, 3.1) + cbrt(x) + hypot(x, i) + tanh(x / 9) + cosh(x / 9)
            + erf(x / 20) + sinf((float)x) + expf((float)x / 16) + powf((float)i, 0.5f);
        printf("%a\\n", s);
    }
    return 0;
}
"""


def test_counted_math_the_riscv_build_computes_the_same_bits(builder: Builder, shared_source) -> None:  # type: ignore[no-untyped-def]
    """The models' RISC-V build (soft float, riscv32) runs the same math sources: every partial
    sum prints the same bits as the native build's, and the counted functions run there too."""
    from cbuild.models import default_registry

    zkvm = default_registry().create("zkvm", {})
    program = builder.build([shared_source("m.c", RISCV_C)], models=[zkvm, MODEL], options=COUNTED)
    result = run_program(program)
    assert result.returncode == 0, result.stderr
    assert result.counts is not None
    guest = result.counts.machine_run("riscv32")
    assert guest.stdout == result.stdout
    assert len(result.stdout.splitlines()) == 200
    assert {"__instrbudget_libc_sin", "__instrbudget_libc_atan_dd", "__instrbudget_libc_log_inline"} <= set(
        guest.functions
    )
