"""Would page protection beat the zkvm model's page check per load and store? Measured, not built.

    .venv/bin/python benchmarks/page_protection.py

The translated zkvm model checks each load and store against its map of the pages loaded (and
dirty) in the current segment. Hardware page protection could catch the first touches instead,
with no check per access: each page is protected when a segment ends, and a touch of a protected
page faults once. This prints, for bench.py's four workloads, the first touches a run makes (the
model's page-ins and page-outs, each one fault), and the CPU time of one caught touch on this
machine (``workloads/page_faults.c``: SIGSEGV, mprotect in the handler, the range protected
again each round), so the time the faults alone would take, against what the per-access checks
cost (docs/translation-log.md). It leaves out what the scheme would add besides: RISC Zero pages
1 KiB and the host 4 KiB, so one guest page per host page (four times the address space, an
address computation per access), and a fault handler that knows the cycle count at the faulting
instruction. Writes the same to ``benchmarks/results/page_protection.txt`` after the provenance
header. No timing assertions.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench import fetch_yyjson
from provenance import Results
from riscv_models import quiet_builder, run_checked, workloads, zkvm_model

from cbuild import BuildOptions
from cbuild.build.cache import default_cache_dir
from cbuild.models.zkvm import RESULTS

HERE = Path(__file__).resolve().parent
RESULTS_FILE = HERE / "results" / "page_protection.txt"
#: Pages protected a round, rounds: about 50,000 caught touches.
SHAPES = [(64, 800), (256, 200), (1024, 50)]


def main() -> int:
    results = Results()
    say = results.say

    builder = quiet_builder(default_cache_dir())
    faults = builder.build([HERE / "workloads" / "page_faults.c"], options=BuildOptions(instrument=False))
    per_fault = []
    for pages, rounds in SHAPES:
        out = subprocess.run([str(faults.path), str(pages), str(rounds)], capture_output=True, text=True, check=True)
        count, nanoseconds = (int(x) for x in out.stdout.split())
        per_fault.append(nanoseconds)
        say(f"{pages:5} pages a round, {count} caught touches: {nanoseconds / 1000:.2f} us CPU each")
    cost = min(per_fault) / 1e9
    say(f"one caught touch: {min(per_fault) / 1000:.2f} us (the least of the {len(SHAPES)} shapes)")
    say("")
    say(f"{'workload':14} {'segments':>9} {'page-ins':>9} {'page-outs':>10} {'faults alone s':>15}")
    with tempfile.TemporaryDirectory(prefix="instrbudget-pages-") as tmp:
        yy = fetch_yyjson(Path(tmp))
        assert yy is not None, "yyjson could not be fetched"
        model = zkvm_model()
        for program in workloads(yy, full=False):
            artifact = builder.build(program.sources, options=program.options(), models=[model])
            run = run_checked(artifact, program, [])
            assert run.counts is not None
            r = dict(zip(RESULTS, run.counts.results_of("zkvm"), strict=True))
            touches = r["page_ins"] + r["page_outs"]
            say(f"{program.label:14} {r['segments']:9,} {r['page_ins']:9,} {r['page_outs']:10,} {touches * cost:15.3f}")
    results.write(RESULTS_FILE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
