/*
 * The state of the pipeline runtime in native builds (pipeline_model.c): the release time of each
 * resource, resource 0 the issue slot. The RISC-V executor's (pipeline_exec.c) keeps its own.
 */
static int64_t pl_state[PL_RESOURCES];

/* One result: the finishing cycle, the last release time of any resource. */
static void model_finish(uint64_t *out) {
    int64_t best = 0;
    uint32_t i;
    for (i = 0; i < PL_RESOURCES; i++)
        if (pl_state[i] > best) best = pl_state[i];
    out[0] = (uint64_t)best;
}

/* The issue slot: cycles so far, for regions. */
static inline uint64_t model_now(void) { return (uint64_t)pl_state[0]; }
