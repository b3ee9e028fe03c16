"""``assertions``: whether ``assert`` checks run (and count) or ``NDEBUG`` is defined, as in release
builds; a config key, a per-build option, part of the build key and of the baseline's fingerprint."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cbuild import Builder, BuildOptions, IrCountModel, run_program

CHECKED_C = """\
#include <assert.h>
#include <stdlib.h>
static int sorted(const int *v, int n) { for (int i = 1; i < n; i++) if (v[i - 1] > v[i]) return 0; return 1; }
int sum(const int *v, int n) {
    assert(sorted(v, n));  /* a check that costs n steps */
    int s = 0;
    for (int i = 0; i < n; i++) s += v[i];
    return s;
}
int main(int argc, char **argv) {
    int n = atoi(argv[1]);
    int *v = malloc(n * sizeof *v);
    for (int i = 0; i < n; i++) v[i] = argc > 2 ? n - i : i;  /* a second argument: not sorted */
    int s = sum(v, n);
    free(v);
    return s == n * (n - 1) / 2 ? 0 : 1;
}
"""


def _total(builder: Builder, source: Path, options: BuildOptions, *args: object) -> tuple[int, int]:
    result = run_program(builder.build([source], options=options), args, timeout=30)
    assert result.counts is not None
    (cost,) = IrCountModel().evaluate(result.counts)
    return result.returncode, int(cost.total)


def test_assertions_off_defines_ndebug_and_the_check_costs_nothing(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    source = write("checked.c", CHECKED_C)
    on, off = BuildOptions(opt_level="1", assertions=True), BuildOptions(opt_level="1")
    assert "assertions=True" in on.key_parts()
    assert "assertions=False" in off.key_parts()
    (rc_on, small_on), (_, large_on) = _total(builder, source, on, 1000), _total(builder, source, on, 2000)
    (rc_off, small_off), (_, large_off) = _total(builder, source, off, 1000), _total(builder, source, off, 2000)
    assert rc_on == rc_off == 0
    # The check is a second pass over the elements: more per element with it than without.
    assert (large_on - small_on) > (large_off - small_off) > 0
    # An unsorted input fails the assert (the program aborts) only with assertions on.
    with pytest.raises(Exception, match=r"Assertion|SIGABRT|abort"):
        run_program(builder.build([source], options=on), [10, "unsorted"], timeout=30)
    assert run_program(builder.build([source], options=off), [10, "unsorted"], timeout=30).returncode == 1


def test_assertions_config_key_fixture_option_and_fingerprint(pytester: pytest.Pytester) -> None:
    pytester.makefile(".c", checked=CHECKED_C.replace("int main", "int unused_main"))
    pytester.makepyfile(
        test_a="""
        def test_session_default(cbuild):
            lib = cbuild.library("checked.c")
            assert lib.sum(bytes(8), 2) == 0

        def test_override(cbuild):
            without = cbuild.library("checked.c")
            data = (3).to_bytes(4, "little") + (1).to_bytes(4, "little")  # not sorted
            assert without.sum(data, 2) == 4
            with_checks = cbuild.library("checked.c", assertions=True)
            assert with_checks.sum(bytes(8), 2) == 0  # sorted: the check passes
        """
    )
    pytester.makepyprojecttoml("[tool.instrbudget]\nopt_level = '1'\n")
    assert pytester.runpytest("-p", "no:cacheprovider", "--instrbudget-update").ret == 0
    path = pytester.path / ".instrbudget" / "baseline.json"
    assert json.loads(path.read_text())["fingerprint"]["assertions"] == "off (NDEBUG)"
    pytester.makepyprojecttoml("[tool.instrbudget]\nopt_level = '1'\nassertions = true\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*differs in: assertions*", "*assertions changed: with assertions = false NDEBUG*"])
    pytester.makepyprojecttoml("[tool.instrbudget]\nassertions = 'no'\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret != 0
    assert "assertions" in result.stderr.str() + result.stdout.str()
    assert "expected true or false, got 'no'" in result.stderr.str() + result.stdout.str()


@pytest.mark.parametrize("level", ["0", "2"])
def test_cli_assertions_whatever_the_optimisation_level(tmp_path: Path, level: str) -> None:
    """zig's driver defines NDEBUG when it optimises and not at -O0: the key decides, not the level."""
    (tmp_path / "checked.c").write_text(CHECKED_C)
    run = [sys.executable, "-m", "cbuild", "run", "checked.c", "-O", level]
    off = subprocess.run([*run, "--", "10", "x"], cwd=tmp_path, capture_output=True, text=True)
    on = subprocess.run([*run, "--assertions", "--", "10", "x"], cwd=tmp_path, capture_output=True, text=True)
    assert off.returncode == 1, off.stderr  # the program's own answer for an unsorted input: no check ran
    assert on.returncode != 0
    assert "Assertion" in on.stderr, on.stderr
