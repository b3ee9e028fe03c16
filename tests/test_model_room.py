"""A model's room (``RVX_ROOM``): translated code checks it with the instruction limit, in one
comparison per hot block, and runs the model's block hook with ``RVX_ROOMY`` set where the block has
room, so that the hook can leave its own check out. A third-party model here, used exactly as the
zkvm model uses it: its answer must not depend on the engine, and the hook must see room in
translated runs (else the interface does nothing) and never where the block has none."""

from __future__ import annotations

from pathlib import Path

import pytest

from cbuild import Builder, Cost
from cbuild.models.base import CostModel, Metric
from cbuild.models.costs import BlockCounts
from cbuild.riscv import executor
from cbuild.riscv.translated import CHECK_TRANSLATION, TRANSLATE_AT

#: Milestones every STEP instructions: a block ending at or past the next one passes it.
STEP = 1000
NEARER = 7

MILESTONE_SOURCE = f"""
#define MS_STEP {STEP}u
#define MS_NEARER {NEARER}u
static uint64_t ms_next = MS_STEP, ms_passed, ms_roomy, ms_late, ms_follows;
static inline void model_block(const rvx_block *b) {{
    (void)b;
    if (RVX_ROOMY) {{ /* RVX_EXECUTED + 1 <= ms_next: no milestone in this block */
        ms_roomy++;
        ms_follows += RVX_FOLLOWS != 0;
        ms_late += RVX_EXECUTED >= ms_next; /* a room that was not there: the test fails on it */
        return;
    }}
    if (RVX_EXECUTED >= ms_next) {{
        ms_passed++;
        ms_next = (RVX_EXECUTED / MS_STEP + 1) * MS_STEP;
        RVX_ROOM_CHANGED();
    }}
}}
/* Each store brings the next milestone nearer: a room that shrinks, as the zkvm model's does when
 * paging costs cycles. */
static inline void model_access(uint64_t a, uint32_t s, uint32_t st, uint32_t i) {{
    (void)a; (void)s; (void)i;
    if (st && ms_next > MS_NEARER) {{
        ms_next -= MS_NEARER;
        RVX_ROOM_CHANGED();
    }}
}}
static void model_reset(void) {{
    ms_next = MS_STEP;
    ms_passed = ms_roomy = ms_late = ms_follows = 0;
    RVX_ROOM_CHANGED();
}}
static void model_finish(uint64_t *out) {{
    out[0] = ms_passed; out[1] = ms_roomy; out[2] = ms_late; out[3] = ms_follows;
}}
static inline uint64_t model_now(void) {{ return ms_passed; }}
#define RVX_ROOM
static int64_t model_room(void) {{ return (int64_t)ms_next; }}
"""

#: The slack of a block that needs its next instruction before the milestone: it may take no room.
SLACK_ALONE = """
static inline uint64_t model_block_slack(uint64_t pc, uint32_t n, uint32_t nmem) {
    (void)pc; (void)n; (void)nmem;
    return 1;
}
"""

#: The slack with each access counted as a store, which takes MS_NEARER of the room: a block takes
#: at most its slack less one of it, as RVX_ROOM_TAKEN promises.
SLACK_TAKEN = """
#define RVX_ROOM_TAKEN
static inline uint64_t model_block_slack(uint64_t pc, uint32_t n, uint32_t nmem) {
    (void)pc; (void)n;
    return 1u + MS_NEARER * nmem;
}
"""

LOOP_C = r"""
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) static unsigned mix(unsigned h, unsigned i) { return h * 31u + (i ^ (h >> 7)); }
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 20000;
    static volatile unsigned seen[64];
    unsigned h = 1;
    for (long i = 0; i < n; i++) {
        h = (i & 3) ? mix(h, (unsigned)i) : h + 1u;
        if ((h & 7) == 0) seen[i & 63] = h;
    }
    printf("%u\n", h);
    return 0;
}
"""


class MilestoneModel(CostModel):
    """Milestones passed; and, for this test only, the block hooks that ran with room and those
    that followed a block on their code's pages."""

    name = "milestones"
    metrics = (Metric("milestones", "milestones", "max_milestones"),)

    slack = SLACK_ALONE

    def executes(self) -> str | None:
        return "riscv32"

    def exec_runtime(self) -> executor.ExecRuntime:
        return executor.ExecRuntime(MILESTONE_SOURCE + self.slack, results=4, memory=True)

    def evaluate(self, counts: BlockCounts) -> list[Cost]:
        (passed, _, _, _) = counts.results_of(self.name)
        return [Cost("milestones", passed)]


class TakenMilestoneModel(MilestoneModel):
    """The same, promising that a block takes at most its slack less one of the room."""

    version = "taken"
    slack = SLACK_TAKEN


@pytest.mark.parametrize("model", [MilestoneModel, TakenMilestoneModel], ids=["alone", "taken"])
def test_a_models_room_is_checked_with_the_limit_and_changes_no_answer(
    builder: Builder,
    write,
    monkeypatch: pytest.MonkeyPatch,
    model: type[MilestoneModel],  # type: ignore[no-untyped-def]
) -> None:
    """With ``RVX_ROOM_TAKEN`` a hot block's check covers the next one's too (which then follows
    on its pages); without it, every hot block checks: either way, room only where there is some."""
    monkeypatch.setenv(CHECK_TRANSLATION, "0")
    monkeypatch.setenv(TRANSLATE_AT, "0")
    artifact = builder.build([write("loop.c", LOOP_C)], models=[model()])
    doc = artifact.machines()["riscv32"]
    library, elf = Path(doc["executor"]), Path(doc["elf"])
    translation, runtimes = Path(doc["translation"]), executor.slot_runtimes(doc["slots"])

    def run() -> executor.Execution:
        return executor.run_program(library, elf, runtimes, [elf.name], translation=translation)

    first = run()
    assert first.engine == "unicorn"
    translated = run()
    assert translated.engine == "translated", translated.note
    assert translated.stdout == first.stdout
    assert translated.instructions == first.instructions > 50 * STEP
    for execution in (first, translated):
        passed, _, late, _ = execution.results
        assert passed > execution.instructions // STEP  # stores bring milestones nearer
        assert late == 0
    assert translated.results[0] == first.results[0]
    assert first.results[1] == first.results[3] == 0  # unicorn's hooks make every check
    if model is TakenMilestoneModel:
        assert translated.results[3] > translated.results[1] // 10
    else:
        assert translated.results[3] == 0
    blocks = sum(count for _, _, count in translated.blocks)
    # Nearly every block is a hot one with room: all but those near a milestone and the start-up's.
    assert 0.9 * blocks < translated.results[1] < blocks
