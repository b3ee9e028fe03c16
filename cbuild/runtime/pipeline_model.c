/*
 * Dynamic phase of the pipeline model. Before each block runs, the block's
 * max-plus matrix is applied to the vector of resource release times:
 * S'[i] = max_j (E[i][j] + S[j]) for the rows E changes; other rows keep their
 * value. Rows and their finite entries are tables generated per build:
 * block b changes rows pl_block_rows[b] .. pl_block_rows[b+1]-1; row r sets
 * resource pl_row_target[r] from entries pl_row_entries[r] .. pl_row_entries[r+1]-1.
 */
static int64_t pl_state[PL_RESOURCES];

static void model_block(uint32_t block) {
    int64_t next[PL_MAX_ROWS];
    uint32_t first = pl_block_rows[block], last = pl_block_rows[block + 1], r, e;
    for (r = first; r < last; r++) {
        int64_t best = INT64_MIN;
        for (e = pl_row_entries[r]; e < pl_row_entries[r + 1]; e++) {
            int64_t v = pl_entry_value[e] + pl_state[pl_entry_column[e]];
            if (v > best) best = v;
        }
        next[r - first] = best;
    }
    for (r = first; r < last; r++) pl_state[pl_row_target[r]] = next[r - first];
}

static void model_access(uintptr_t address, uint64_t size, uint32_t is_store) {
    (void)address; (void)size; (void)is_store;
}

static void model_reset(uint32_t in_process) {
    uint32_t i;
    (void)in_process;
    for (i = 0; i < PL_RESOURCES; i++) pl_state[i] = 0;
}

/* One result: the finishing cycle, the last release time of any resource. */
static void model_finish(uint64_t *out) {
    int64_t best = 0;
    uint32_t i;
    for (i = 0; i < PL_RESOURCES; i++)
        if (pl_state[i] > best) best = pl_state[i];
    out[0] = (uint64_t)best;
}
