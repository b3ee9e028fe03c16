"""The executing RISC-V models in their two engines, side by side in one run: unicorn and the
translation (cbuild/riscv/translate.py, translated.py).

    .venv/bin/python benchmarks/riscv_engines.py            # bench.py's --quick inputs, medians of 3
    .venv/bin/python benchmarks/riscv_engines.py --repeat 5

For each of bench.py's four workloads: the plain native program, the ir-count build's run_program,
and run_program with zkvm, with pipeline (inorder5, riscv32) and with both, each in unicorn
(``INSTRBUDGET_RISCV_ENGINE=unicorn``) and translated (the default once a first run recorded the
code it reached), medians of interleaved rounds; in each round the plain program runs
:data:`PLAIN_RUNS` times, the ir-count build and each translated model build :data:`RUNS` times,
and their least times count (a plain run of json varied 0.08-0.16 s between rounds on a busy
machine, which moved its ratios by 2x, and a translated run of json 0.46-1.0 s; each time is
measured the same way, so that the difference of two is not that of a least and a single run);
unicorn's runs, ten to a hundred times longer, once a round. It prints the time each model adds
to the ir-count run in units of the plain program's run time, the executor's speed in RISC-V
instructions per second of that added time, the first translated run's extra time (translating,
compiling and keeping the object code; the executor's C code compiled once before), and the extra
time of the first run in a new executor server (loading the kept object code), both with zkvm.
Results of both engines are checked equal. Writes the same to
``benchmarks/results/riscv_engines.txt`` after the provenance header. No timing assertions: the
script prints, the reader judges.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench import fetch_yyjson, time_command
from provenance import header_lines
from riscv_models import Program, median, pipeline_model, quiet_builder, run_checked, workloads, zkvm_model

from cbuild.build.cache import default_cache_dir
from cbuild.riscv.executor import close_servers
from cbuild.riscv.translated import RISCV_ENGINE

RESULTS = Path(__file__).resolve().parent / "results" / "riscv_engines.txt"

#: Runs per round of the plain program, and of the ir-count build and each translated model build,
#: whose least times count.
PLAIN_RUNS, RUNS = 5, 3


def timed_run(artifact, program: Program, engine: str, notes: list[str]):  # type: ignore[no-untyped-def]
    if engine == "unicorn":
        os.environ[RISCV_ENGINE] = "unicorn"
    else:
        os.environ.pop(RISCV_ENGINE, None)
    start = time.perf_counter()
    run = run_checked(artifact, program, notes)
    return time.perf_counter() - start, run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    lines: list[str] = []

    def say(text: str) -> None:
        print(text, flush=True)
        lines.append(text)

    notes: list[str] = []
    single: list[str] = []  # the translated columns from one run a round
    with tempfile.TemporaryDirectory(prefix="instrbudget-engines-") as tmp:
        work = Path(tmp)
        yy = fetch_yyjson(work)
        assert yy is not None, "yyjson could not be fetched"
        builder = quiet_builder(default_cache_dir())  # the user's cache: builds made once, kept
        configs = {
            "zkvm": [zkvm_model()],
            "pipeline": [pipeline_model("inorder5")],
            "both": [zkvm_model(), pipeline_model("inorder5")],
        }
        say(
            f"Median of {args.repeat} interleaved rounds (plain: the least of {PLAIN_RUNS} runs in each, ir-count "
            f"and translated: of {RUNS}, unicorn: one); time a model adds to the ir-count run, in plain run times"
        )
        say(
            f"{'workload':18} {'plain s':>8} {'ir-count s':>10} | {'zkvm unicorn':>12} {'translated':>10} | "
            f"{'pipeline unicorn':>16} {'translated':>10} | {'both unicorn':>12} {'translated':>10} | "
            f"{'RV32 instr':>11} {'translated MIPS':>15} {'first translated run +s':>23} {'new process +s':>14}"
        )
        for program in workloads(yy, full=False):
            plain = builder.build(program.sources, options=program.options(instrument=False))
            base = builder.build(program.sources, options=program.options())
            built = {
                name: builder.build(program.sources, options=program.options(), models=models)
                for name, models in configs.items()
            }
            # First runs: a run in the default engine records the reached code (a run forced into
            # unicorn records nothing); then the first translated run compiles it.
            first_extra = cached_extra = 0.0
            for name, artifact in built.items():
                timed_run(artifact, program, "translated", notes)
                elf = Path(artifact.machines()["riscv32"]["elf"])
                for kept in elf.parent.glob(f"{elf.name}.rvt-*.o"):  # compiled again below
                    kept.unlink()
                close_servers()
                cold, _ = timed_run(artifact, program, "translated", notes)
                warm, _ = timed_run(artifact, program, "translated", notes)
                close_servers()  # a new executor server loads the kept object code
                cached, _ = timed_run(artifact, program, "translated", notes)
                if name == "zkvm":
                    first_extra, cached_extra = cold - warm, cached - warm
            times: dict[str, list[float]] = {}
            results: dict[str, set[tuple[tuple[str, tuple[int, ...]], ...]]] = {}
            instructions = 0
            for _ in range(args.repeat):
                plain_runs = [time_command([str(plain.path), *program.args], program.stdin) for _ in range(PLAIN_RUNS)]
                times.setdefault("plain", []).append(min(plain_runs))
                ir_runs = [timed_run(base, program, "translated", notes)[0] for _ in range(RUNS)]
                times.setdefault("ir-count", []).append(min(ir_runs))
                for name, artifact in built.items():
                    for engine in ("unicorn", "translated"):
                        runs = [
                            timed_run(artifact, program, engine, notes)
                            for _ in range(RUNS if engine == "translated" else 1)
                        ]
                        times.setdefault(f"{name} {engine}", []).append(min(seconds for seconds, _ in runs))
                        if engine == "translated":  # as the script took it before: one run a round
                            times.setdefault(f"{name} first", []).append(runs[0][0])
                        for _, run in runs:
                            assert run.counts is not None
                            machine = run.counts.machine["riscv32"]
                            if engine == "translated" and machine.engine != "translated":
                                notes.append(f"{program.label}: {name} ran in unicorn: {machine.note}")
                            results.setdefault(name, set()).add(tuple(sorted(run.counts.results.items())))
                            instructions = machine.instructions
            best = {k: median(v) for k, v in times.items()}
            for name, seen in results.items():
                if len(seen) != 1:
                    notes.append(f"{program.label}: {name} results differ between runs or engines")

            def added(key: str, best: dict[str, float] = best) -> str:
                return f"{(best[key] - best['ir-count']) / best['plain']:.1f}x"

            mips = instructions / max(best["zkvm translated"] - best["ir-count"], 1e-9) / 1e6
            single.append(
                f"{program.label:18} zkvm {added('zkvm first'):>6}  pipeline {added('pipeline first'):>6}  "
                f"both {added('both first'):>6}"
            )
            say(
                f"{program.label:18} {best['plain']:8.3f} {best['ir-count']:10.3f} | "
                f"{added('zkvm unicorn'):>12} {added('zkvm translated'):>10} | "
                f"{added('pipeline unicorn'):>16} {added('pipeline translated'):>10} | "
                f"{added('both unicorn'):>12} {added('both translated'):>10} | "
                f"{instructions:>11,} {mips:>15.0f} {first_extra:>23.2f} {cached_extra:>14.2f}"
            )
        os.environ.pop(RISCV_ENGINE, None)
    say(
        "Translated, as this script measured before 2026-11-29 (the first of the runs above in each "
        "round, a single run, against the least ir-count run):"
    )
    for line in single:
        say(line)
    for note in notes:
        say(f"note: {note}")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text("\n".join([*header_lines(), *lines]) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
