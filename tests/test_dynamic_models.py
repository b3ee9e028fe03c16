"""The pipeline and zkvm models on real builds: dynamic phases, determinism, and the RV32IM emulator."""

from __future__ import annotations

from pathlib import Path

import pytest

from cbuild import Builder, BuildOptions, IrCountModel, Library, run_program
from cbuild.models import default_registry
from cbuild.models.costs import BlockCounts
from cbuild.models.zkvm import RESULTS
from cbuild.riscv import executor
from cbuild.riscv.translated import CHECK_TRANSLATION, TRANSLATE_AT

ROOT = Path(__file__).parent.parent
DATA = Path(__file__).parent / "data"
EXAMPLE = ROOT / "example_project"

STRAIGHT_C = """
int mix(int a, int b, int c) {
    int x = a * b;
    int y = x / (c | 1);
    return y * 3 + (a ^ c);
}
"""

LOOP_C = """
#include <stdlib.h>
int main(int argc, char **argv) {
    int n = atoi(argv[1]);
    unsigned h = 2166136261u;
    for (int i = 0; i < n; i++) { h ^= (unsigned)i; h *= 16777619u; h /= (unsigned)(i | 3); }
    return (int)(h & 1);
}
"""


def zk_results(counts: BlockCounts) -> dict[str, int]:
    return dict(zip(RESULTS, counts.results_of("zkvm"), strict=True))


@pytest.mark.parametrize("machine", ["inorder5", "rocket"])
def test_pipeline_single_block_call_costs_its_static_estimate(
    builder: Builder,
    shared_source,
    tmp_path: Path,
    machine: str,  # type: ignore[no-untyped-def]
) -> None:
    model = default_registry().create("pipeline", {"machine": machine, "execute": False})
    artifact = builder.build([shared_source("mix.c", STRAIGHT_C)], kind="library", models=[model])
    analysis = artifact.models()["pipeline"]["analysis"]
    table = artifact.table()
    (block,) = [i for i, b in enumerate(table.blocks) if b.function == "mix"]
    lib = Library(artifact)
    since = lib.snapshot()
    assert lib.mix(6, 7, 4) == 6 * 7 // 5 * 3 + (6 ^ 4)
    (cost,) = model.evaluate(lib.counts(since))
    # One block from an idle machine: the dynamic phase must give the block's own estimate.
    assert cost.total == analysis["estimates"][block] > 0
    # A second measurement starts from an idle machine again.
    since = lib.snapshot()
    lib.mix(1, 2, 3)
    (again,) = model.evaluate(lib.counts(since))
    assert again.total == cost.total


def test_pipeline_cycles_of_a_loop_grow_linearly(builder: Builder, shared_source) -> None:  # type: ignore[no-untyped-def]
    model = default_registry().create("pipeline", {"machine": "inorder5"})
    artifact = builder.build([shared_source("loop.c", LOOP_C)], models=[model])

    def cycles(n: int) -> int:
        run = run_program(artifact, [n])
        assert run.counts is not None
        return model.evaluate(run.counts)[0].total

    c100, c200, c300 = cycles(100), cycles(200), cycles(300)
    # The loop body's state repeats from one iteration to the next: a constant cost per iteration,
    # at least the divider's 32 busy cycles.
    assert c300 - c200 == c200 - c100 >= 100 * 32
    assert cycles(300) == c300  # deterministic


def test_zkvm_user_cycles_are_instruction_counts_and_segments_add_up(
    builder: Builder,
    shared_source,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import rv32emu

    model = default_registry().create("zkvm", {"po2": 15, "execute": True})
    artifact = builder.build([shared_source("loop.c", LOOP_C)], models=[model])
    run = run_program(artifact, [20000])
    assert run.counts is not None
    r = zk_results(run.counts)
    # One user cycle per executed instruction of the riscv32 build, as an independent emulator counts them.
    elf = Path(artifact.machines()["riscv32"]["elf"])
    named = tmp_path / "loop"
    named.write_bytes(elf.read_bytes())
    monkeypatch.chdir(tmp_path)
    reference = rv32emu.emulate(Path("loop"), ["20000"])  # argv[0] "loop" in both runs
    assert r["user"] == reference.instructions == run.counts.machine_run("riscv32").instructions
    assert reference.stdout == run.stdout
    assert r["segments"] > 1
    assert r["reserved"] == r["segments"] * (4113 + 10)
    last = r["total"] - (r["segments"] - 1) * 2**15
    assert 0 < last <= 2**15
    assert last & (last - 1) == 0  # the last segment is padded to a power of two
    assert r["user"] + r["paging"] + r["reserved"] <= r["total"]
    costs = {c.metric: c.total for c in model.evaluate(run.counts)}
    assert costs == {
        "zk_cycles": r["total"],
        "zk_user_cycles": r["user"],
        "zk_paging_cycles": r["paging"],
        "zk_segments": r["segments"],
    }
    again = run_program(artifact, [20000])
    assert again.counts is not None
    assert zk_results(again.counts) == r


def test_zkvm_pages_of_a_controlled_layout(builder: Builder) -> None:
    model = default_registry().create("zkvm")
    artifact = builder.build([DATA / "pages.c"], models=[model])

    def paging(reads: int, writes: int) -> dict[str, int]:
        run = run_program(artifact, [reads, writes])
        assert run.counts is not None
        return zk_results(run.counts)

    base, more = paging(1, 1), paging(9, 5)
    # Eight more pages read, four more written (each written page is paged in and out).
    assert more["page_ins"] - base["page_ins"] == 8 + 4
    assert more["page_outs"] - base["page_outs"] == 4
    # Each extra page costs a page-in (322 cycles) or a page-in and a page-out, plus Merkle nodes.
    extra = more["paging"] - base["paging"]
    assert 16 * 322 <= extra <= 16 * (322 + 22 * 13)


def test_zkvm_library_calls_run_in_the_riscv32_build(builder: Builder, shared_source, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    model = default_registry().create("zkvm", {"execute": True})
    artifact = builder.build([shared_source("mix.c", STRAIGHT_C)], kind="library", models=[model])
    with Library(artifact) as lib:
        since = lib.snapshot()
        native = lib.mix(1, 2, 3)
        counts = lib.counts(since)
        r = zk_results(counts)
        run = counts.machine_run("riscv32")
        # The guest made the call: its instructions are the user cycles, all of them in mix().
        assert r["user"] == run.instructions == run.functions["mix"] > 0
        # Code and the stack frame are paged in; nothing is written but the stack.
        assert r["page_ins"] >= 1
        assert native == lib.mix(1, 2, 3)
        costs = {c.metric: c for c in model.evaluate(lib.counts(since))}
        assert costs["zk_user_cycles"].total == 2 * r["user"]
        assert costs["zk_user_cycles"].functions == {"mix": 2 * r["user"]}


# --------------------------------------------------------------------------------------------------------
# Validation against an RV32IM emulator (unicorn): the same C programs compiled for RV32IM and executed.
# --------------------------------------------------------------------------------------------------------

WORKLOADS = {
    "zk_sort": ["sort.c"],
    "zk_json": ["json.c"],
    "zk_hashmap": ["hashmap.c"],
}


@pytest.fixture(scope="module")
def rv32emu():  # type: ignore[no-untyped-def]
    import rv32emu

    return rv32emu


@pytest.mark.parametrize("workload", sorted(WORKLOADS))
def test_zkvm_user_cycles_equal_the_emulator_per_function(
    builder: Builder,
    rv32emu,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    workload: str,  # type: ignore[no-untyped-def]
) -> None:
    sources = [ROOT / "benchmarks" / "workloads" / f"{workload}.c", *(EXAMPLE / "src" / s for s in WORKLOADS[workload])]
    include = EXAMPLE / "include"
    model = default_registry().create("zkvm", {"execute": True})
    artifact = builder.build(sources, options=BuildOptions(opt_level="2", include_dirs=(include,)), models=[model])
    run = run_program(artifact)
    assert run.counts is not None
    measured = {c.metric: c for c in model.evaluate(run.counts)}["zk_user_cycles"]
    # The same riscv32 build, counted by a separate emulator (Python hooks, no code of the executor's);
    # the user functions are those the sources define.
    plain = rv32emu.build_rv32(sources, tmp_path / f"{workload}.elf", opt_level="2", include_dirs=[include])
    functions = rv32emu.user_functions(plain, rv32emu.object_files(plain))
    (tmp_path / workload).write_bytes(Path(artifact.machines()["riscv32"]["elf"]).read_bytes())
    monkeypatch.chdir(tmp_path)
    emulated = rv32emu.emulate(Path(workload), count_functions=[f.name for f in functions])
    assert emulated.stdout == run.stdout  # the same computation
    reference = {name: n for name, n in emulated.instructions_by_function.items() if n}
    assert {name: measured.functions.get(name, 0) for name in reference} == reference


def test_zkvm_data_pages_match_the_emulator(builder: Builder, rv32emu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    elf = rv32emu.build_rv32([DATA / "pages.c"], tmp_path / "pages.elf", opt_level="2")
    symbols = {s.name: s for s in rv32emu.elf_symbols(elf, kind="object")}
    model = default_registry().create("zkvm")
    artifact = builder.build([DATA / "pages.c"], models=[model])

    def emulated(reads: int, writes: int) -> tuple[int, int]:
        trace = rv32emu.emulate(elf, [str(reads), str(writes)]).page_trace
        arrays = [(symbols[n].address // 1024, (symbols[n].address + symbols[n].size) // 1024) for n in ("src", "dst")]
        data = [(page, kind) for _, page, kind in trace if any(lo <= page < hi for lo, hi in arrays)]
        ins = len({page for page, kind in data if kind in ("read", "write")})
        outs = len({page for page, kind in data if kind == "write"})
        return ins, outs

    def modelled(reads: int, writes: int) -> tuple[int, int]:
        run = run_program(artifact, [reads, writes])
        assert run.counts is not None
        r = zk_results(run.counts)
        return r["page_ins"], r["page_outs"]

    # Both sides see the same data pages; the model's other pages (code, stack) cancel in the difference.
    (emu_ins, emu_outs), (base_ins, base_outs), (more_ins, more_outs) = emulated(9, 5), modelled(1, 1), modelled(9, 5)
    assert (emu_ins, emu_outs) == (9 + 5, 5)
    assert (more_ins - base_ins + 2, more_outs - base_outs + 1) == (emu_ins, emu_outs)


def test_zkvm_sees_atomic_accesses(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    source = write(
        "atomics.c",
        "#include <stdatomic.h>\n"
        "static _Atomic int counter;\n"
        "int main(void) {\n"
        "    for (int i = 0; i < 100; i++) atomic_fetch_add(&counter, 1);\n"
        "    int expected = 100;\n"
        "    atomic_compare_exchange_weak(&counter, &expected, 7);\n"
        "    return atomic_load(&counter) == 7 ? 0 : 1;\n"
        "}\n",
    )
    model = default_registry().create("zkvm")
    run = run_program(builder.build([source], models=[model]))
    assert run.returncode == 0
    assert run.counts is not None
    assert zk_results(run.counts)["page_outs"] >= 1  # the counter's page was written


@pytest.mark.slow
def test_builds_leave_nothing_beside_the_sources(tmp_path: Path) -> None:
    """All of a build's outputs, every model's included, go to the cache, none to the source tree."""
    sources = tmp_path / "src"
    sources.mkdir()
    (sources / "loop.c").write_text(LOOP_C)
    before = sorted(p.name for p in sources.iterdir())
    builder = Builder(cache_dir=tmp_path / "cache", progress=lambda message: None)
    models = [default_registry().create(name, {}) for name in ("ir-count", "pipeline", "zkvm")]
    artifact = builder.build([sources / "loop.c"], models=models)
    assert run_program(artifact, [3], cwd=sources).counts is not None
    assert sorted(p.name for p in sources.iterdir()) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "src"]


HEAP_C = """
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    for (int i = 0; i < atoi(argv[1]); i++) {
        if (len + 100 > cap) buf = realloc(buf, cap *= 2); /* past 128 KiB: where glibc would map blocks */
        for (int j = 0; j < 100; j++) buf[len++] = (char)(i + j);
    }
    unsigned sum = 0;
    for (size_t k = 0; k < len; k += 64) sum += (unsigned char)buf[k];
    free(buf);
    return (int)(sum & 1);
}
"""


def test_zkvm_paging_does_not_depend_on_where_the_kernel_maps_memory(builder: Builder, shared_source) -> None:  # type: ignore[no-untyped-def]
    """The stack's size limit moves the kernel's mappings (beyond 128 MiB it sets their base; kernels
    differ too): a program's large blocks must cost the same paging wherever the kernel would map them."""
    import resource

    artifact = builder.build([shared_source("heap.c", HEAP_C)], models=[default_registry().create("zkvm")])
    soft, hard = resource.getrlimit(resource.RLIMIT_STACK)
    results = []
    for limit in (8 << 20, 3000 << 20, 3333 << 20):
        if hard != resource.RLIM_INFINITY and limit > hard:
            pytest.skip(f"the stack's hard limit ({hard} bytes) is below {limit}")
        resource.setrlimit(resource.RLIMIT_STACK, (limit, hard))
        try:
            run = run_program(artifact, ["5000"])  # half a megabyte of buffer
        finally:
            resource.setrlimit(resource.RLIMIT_STACK, (soft, hard))
        assert run.counts is not None
        results.append(zk_results(run.counts))
    assert results[0]["page_ins"] > 500  # the buffer's pages were paged
    assert results[1] == results[0]
    assert results[2] == results[0]


def test_zkvm_costs_the_same_in_builds_made_for_profiles(builder: Builder, shared_source) -> None:  # type: ignore[no-untyped-def]
    """Call tracking (for flame graphs and the functions report) must not move the program's data:
    the runtime's own tables do not come from the program's heap."""
    source = shared_source("heap.c", HEAP_C)
    model = default_registry().create("zkvm")
    runs = []
    for calls in (False, True):
        artifact = builder.build([source], options=BuildOptions(calls=calls), models=[model])
        run = run_program(artifact, ["300"])
        assert run.counts is not None
        runs.append(zk_results(run.counts))
    assert runs[1] == runs[0]


PAGING_C = """
static unsigned char buf[192 * 1024];
static unsigned short *halves(unsigned i) { return (unsigned short *)(buf + (i & ~1u)); }
int main(int argc, char **argv) {
    unsigned h = (unsigned)argc;
    (void)argv;
    for (unsigned r = 0; r < 24; r++)
        for (unsigned i = r; i < sizeof buf; i += 613 + 37 * r) {
            h = h * 31u + buf[i];
            buf[(i * 7u) % sizeof buf] = (unsigned char)h;
            *halves((i * 13u + r) % (sizeof buf - 2)) += (unsigned short)h;
        }
    return (int)(h & 0x7f);
}
"""


def zk_reference(emulation, c: dict[str, int]) -> dict[str, int]:  # type: ignore[no-untyped-def]
    """The zkvm model's results, one instruction at a time from an emulator's trace: before each
    instruction the segment closes if its cycles and the reserved ones reach the threshold; the
    instruction costs a cycle, fetches its word, then makes its accesses; the first read of a 1 KiB
    page in a segment pages it in, the first write pages it out, each for the page's cycles and
    one node's per Merkle ancestor not yet loaded (dirtied) in the segment."""
    threshold = 2 ** c["po2"] - c["max_insn_cycles"]
    reserved = c["reserved_cycles"] + c["reserved_paging_cycles"]
    depth = c["merkle_depth"]
    accesses: dict[int, list[tuple[int, int, bool]]] = {}
    for index, address, size, kind in emulation.accesses:
        accesses.setdefault(index, []).append((address, size, kind == "write"))
    out = dict.fromkeys(("user", "paging", "segments", "page_ins", "page_outs"), 0)
    closed_padded = 0
    used = paging = 0
    marked: list[set[int]] = [set(), set()]  # nodes loaded, dirtied in this segment

    def mark(which: int, page: int) -> int:
        node, cost = (1 << depth) + page, c["page_cycles"]
        marked[which].add(node)
        node >>= 1
        while node >= 1 and node not in marked[which]:
            marked[which].add(node)
            cost += c["node_cycles"]
            node >>= 1
        return cost

    def touch(page: int, write: bool) -> int:
        cost = 0
        if (1 << depth) + page not in marked[0]:
            cost += mark(0, page)
            out["page_ins"] += 1
        if write and (1 << depth) + page not in marked[1]:
            cost += mark(1, page)
            out["page_outs"] += 1
        return cost

    index = 0
    for start, n in emulation.block_trace:
        for pc in range(start, start + 4 * n, 4):
            if used + reserved >= threshold:
                out["segments"] += 1
                out["paging"] += paging
                closed_padded += 2 ** c["po2"]
                used = paging = 0
                marked = [set(), set()]
            cost = touch(pc >> 10, False)
            for address, size, write in accesses.get(index, ()):
                for page in range(address >> 10, ((address + size - 1) >> 10) + 1):
                    cost += touch(page, write)
            used += 1 + cost
            paging += cost
            out["user"] += 1
            index += 1
    out["segments"] += 1
    out["paging"] += paging
    out["total"] = closed_padded + 2 ** (used + reserved - 1).bit_length()
    out["reserved"] = out["segments"] * reserved
    return out


@pytest.mark.parametrize("po2", [15, 16])
def test_zkvm_segments_and_paging_equal_a_per_instruction_reference(
    builder: Builder,
    shared_source,  # type: ignore[no-untyped-def]
    rv32emu,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    po2: int,
) -> None:
    """Every segment boundary and page event where the model puts it, in unicorn and translated: in
    small segments, with pages touched all the time, many blocks start near a segment's end (where
    the executor begins their instructions one at a time), and a boundary misplaced by one
    instruction changes the counts."""
    monkeypatch.setenv(CHECK_TRANSLATION, "0")
    monkeypatch.setenv(TRANSLATE_AT, "0")
    model = default_registry().create("zkvm", {"po2": po2, "execute": True})
    artifact = builder.build([shared_source("paging.c", PAGING_C)], models=[model])
    doc = artifact.machines()["riscv32"]
    library, elf = Path(doc["executor"]), Path(doc["elf"])
    runtimes = executor.slot_runtimes(doc["slots"])
    (tmp_path / "paging").write_bytes(elf.read_bytes())
    monkeypatch.chdir(tmp_path)
    emulation = rv32emu.emulate(Path("paging"), record_blocks=True)
    reference = zk_reference(emulation, model.config)
    assert reference["segments"] > 200
    for translation, engine in ((None, "unicorn"), (Path(doc["translation"]), "translated")):
        run = executor.run_program(library, elf, runtimes, ["paging"], translation=translation)
        if run.engine != engine:  # the first run of a new build records the blocks to translate
            run = executor.run_program(library, elf, runtimes, ["paging"], translation=translation)
        assert run.engine == engine, run.note
        assert run.exit_code == emulation.exit_code
        assert dict(zip(RESULTS, run.results, strict=True)) == reference


NAMES_C = """
#include <stdlib.h>
#include <string.h>
struct big { char bytes[600]; };
__attribute__((noinline)) void copy(struct big *to, const struct big *from) { *to = *from; }
int main(int argc, char **argv) {
    struct big *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    memset(a, argc, sizeof *a);
    copy(b, a);
    int r = b->bytes[599] + (int)strlen(argv[0]);
    free(a);
    free(b);
    return r == 0;
}
"""


def test_a_riscv_builds_functions_are_named_as_the_native_builds(builder: Builder, write) -> None:  # type: ignore[no-untyped-def]
    """The counted C library's static functions in a RISC-V build (the allocator's ``ib_alloc``, the
    heap's mapping) carry its mark as in the native build (``ib_alloc [libc]`` in every table), and
    the copy the RISC-V backend lowers a 600-byte struct assignment to, compiler-rt's ``memcpy``, is
    named apart from the counted ``memcpy [libc]``."""
    model = default_registry().create("zkvm", {"execute": True})
    artifact = builder.build([write("names.c", NAMES_C)], options=BuildOptions(opt_level="1"), models=[model])
    run = run_program(artifact)
    assert run.counts is not None
    zk = {c.metric: c for c in model.evaluate(run.counts)}["zk_user_cycles"].functions
    native = IrCountModel().evaluate(run.counts)[0].functions
    assert native["__instrbudget_libc_ib_alloc"] > 0
    assert zk["__instrbudget_libc_ib_alloc"] > 0
    assert zk["__instrbudget_libc_heap_get"] > 0
    assert zk["memcpy (compiler_rt)"] > 0
    assert not {"ib_alloc", "__instrbudget_heap_get", "memcpy"} & set(zk)
