"""Host instructions a translated RISC-V run executes per guest instruction, counted by callgrind:
a measure of the translated models that does not move with the machine's load.

    .venv/bin/python benchmarks/translated_instructions.py            # json and yyjson, zkvm and pipeline
    .venv/bin/python benchmarks/translated_instructions.py --workload json --model zkvm

For each workload and model: the workload's build with the model runs with arguments 1 and 2
(rounds of its work) until its translation is compiled and kept; the executor's request for
each run is taken as the plugin sends it to its executor server, and replayed in a process of
its own under ``valgrind --tool=callgrind``, which runs it translated. The difference of the
two processes' ``Collected`` instructions is the second round's work alone (the process's
start, Python and loading the kept object code cancel out), shown next to the guest's RV32
instructions in that round and the x86-64 instructions of the plain native program for the
same two arguments, counted the same way. Writes the same to
``benchmarks/results/translated_instructions.txt`` after the provenance header. Needs valgrind.
"""

from __future__ import annotations

import argparse
import dataclasses
import pickle
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench import fetch_yyjson
from provenance import header_lines
from riscv_models import Program, pipeline_model, quiet_builder, run_checked, workloads, zkvm_model

from cbuild.build.cache import default_cache_dir
from cbuild.riscv import executor

RESULTS = Path(__file__).resolve().parent / "results" / "translated_instructions.txt"
ROOT = Path(__file__).resolve().parent.parent

#: Replays one pickled executor request in this process (the executor server's own call).
REPLAY = """\
import pickle, sys
from pathlib import Path
from cbuild.riscv.executor import run_program, unpack_runtimes
library, elf, packed, argv, stdin, limit, translation, check, cutoffs = pickle.loads(Path(sys.argv[1]).read_bytes())
run = run_program(Path(library), Path(elf), unpack_runtimes(packed), argv, stdin=stdin, limit=limit,
                  translation=None if translation is None else Path(translation), check=check, cutoffs=cutoffs)
print(run.instructions)
"""


def captured_requests(artifact: Any, program: Program, args: list[str]) -> dict[str, Any]:
    """The executor request of a run of ``program`` with each of ``args``, after runs that record
    the code it reaches and compile its translation."""
    requests: dict[str, Any] = {}
    sent = executor._Server.request

    def request(self: Any, message: Any, timeout: float | None) -> Any:
        requests[message[3][-1]] = message  # by the program's last argument
        return sent(self, message, timeout)

    executor._Server.request = request  # type: ignore[method-assign]
    try:
        for arg in [*args, *args]:  # the first runs record what the run reaches; later ones translate it
            run_checked(artifact, dataclasses.replace(program, args=[arg]), [])
    finally:
        executor._Server.request = sent  # type: ignore[method-assign]
    return requests


def collected(command: list[str], work: Path) -> tuple[int, str]:
    """Callgrind's ``Collected`` of ``command`` (its own process only), and what it printed."""
    out = work / "callgrind.out"
    proc = subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *command],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    summary = next(line for line in out.read_text().splitlines() if line.startswith("summary:"))
    return int(summary.split()[1]), proc.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", action="append", choices=["json", "yyjson"], help="default: both")
    parser.add_argument("--model", action="append", choices=["zkvm", "pipeline"], help="default: both")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        print("valgrind is not installed: nothing measured", file=sys.stderr)
        return 2
    lines: list[str] = []

    def say(text: str) -> None:
        print(text, flush=True)
        lines.append(text)

    models = {"zkvm": zkvm_model, "pipeline": lambda: pipeline_model("inorder5")}
    with tempfile.TemporaryDirectory(prefix="instrbudget-instructions-") as tmp:
        work = Path(tmp)
        yy = fetch_yyjson(work)
        assert yy is not None, "yyjson could not be fetched"
        builder = quiet_builder(default_cache_dir())
        say("Host instructions of the second round of work (argument 2 less argument 1), callgrind's Collected")
        heads = ("RV32 instr", "host instr", "per RV32", "plain x86", "x plain")
        say(f"{'workload':<9}{'model':<10}" + "".join(f"{h:>13}" for h in heads))
        for program in workloads(yy, full=False):
            if program.name not in (args.workload or ["json", "yyjson"]):
                continue
            plain = builder.build(program.sources, options=program.options(instrument=False))
            native = [collected([str(plain.path), arg], work)[0] for arg in ("1", "2")]
            for name in args.model or ["zkvm", "pipeline"]:
                artifact = builder.build(program.sources, options=program.options(), models=[models[name]()])
                requests = captured_requests(artifact, program, ["1", "2"])
                counts, guest = [], []
                for arg in ("1", "2"):
                    path = work / f"request-{arg}.pickle"
                    path.write_bytes(pickle.dumps(requests[arg]))
                    total, printed = collected([sys.executable, "-c", REPLAY, str(path)], work)
                    counts.append(total)
                    guest.append(int(printed.split()[-1]))
                host, rv32, x86 = counts[1] - counts[0], guest[1] - guest[0], native[1] - native[0]
                cells = (f"{rv32:,}", f"{host:,}", f"{host / rv32:.2f}", f"{x86:,}", f"{host / x86:.2f}x")
                say(f"{program.name:<9}{name:<10}" + "".join(f"{c:>13}" for c in cells))
    RESULTS.write_text("\n".join([*header_lines(), *lines]) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
