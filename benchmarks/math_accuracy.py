"""How exact the counted math.h is: each function on 10,000 arguments (the ranges of
tests/test_counted_math.py, another seed), against mpmath at 160 bits and against the host's libm.

    python benchmarks/math_accuracy.py [--n N]

Per function: the largest error in units in the last place, the share of results that are the
correctly rounded one, and the share that are the same bits as the host libm's. Prints a line
per function and writes them, after the date, machine, commit and command, to
``benchmarks/results/math_accuracy.txt``.
"""

from __future__ import annotations

import argparse
import array
import ctypes
import ctypes.util
import random
import sys
import tempfile
from pathlib import Path

from provenance import header_lines

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "math_accuracy.txt"
sys.path.insert(0, str(ROOT))

from cbuild import Builder, Library  # noqa: E402
from tests.test_counted_math import (  # noqa: E402
    BINARY,
    COUNTED,
    UNARY,
    _binary_inputs,
    _finite,
    _harness,
    _inputs,
    _ulps,
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=5000, help="arguments per input range (default 5000)")
    args = parser.parse_args()
    path = ctypes.util.find_library("m")
    libm = ctypes.CDLL(path) if path else None
    titles = ("arguments", "max error", "correctly rounded", "same as host libm")
    lines = [f"{'function':10s} {titles[0]:>9s} {titles[1]:>10s} {titles[2]:>18s} {titles[3]:>18s}"]
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "harness.c"
        source.write_text(_harness())
        with Library(Builder(progress=lambda message: None).build([source], kind="library", options=COUNTED)) as lib:
            for name, (exact, _bound) in {**UNARY, **BINARY}.items():
                rng = random.Random(name + " benchmark")
                if name in UNARY:
                    pairs = [(x,) for x in _inputs(name, rng, args.n) if _finite(exact(x))]
                else:
                    pairs = [p for p in zip(*_binary_inputs(name, rng, args.n), strict=True) if _finite(exact(*p))]
                columns = [array.array("d", column) for column in zip(*pairs, strict=True)]
                ys = array.array("d", [0.0] * len(pairs))
                getattr(lib, f"run_{name}")(*columns, ys, len(pairs))
                errors = [_ulps(y, exact(*p)) for p, y in zip(pairs, ys, strict=True)]
                same = "-"
                if libm is not None:
                    f = getattr(libm, name)
                    f.restype, f.argtypes = ctypes.c_double, [ctypes.c_double] * len(pairs[0])
                    same = f"{sum(f(*p) == y for p, y in zip(pairs, ys, strict=True)) / len(pairs):.2%}"
                rounded = sum(e <= 0.5 for e in errors) / len(errors)
                lines.append(f"{name:10s} {len(pairs):9d} {max(errors):6.3f} ulp {rounded:18.2%} {same:>18s}")
                print(lines[-1], flush=True)
    RESULTS.write_text("\n".join([*header_lines(), "", *lines]) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
