/*
 * Dynamic phase of the pipeline model. Before each block runs, the block's
 * max-plus matrix is applied to the vector of resource release times:
 * S'[i] = max_j (E[i][j] + S[j]) for the rows E changes; other rows keep their
 * value. Tables generated per build: block b changes rows pl_block_rows[b] ..
 * pl_block_rows[b+1]-1; row r sets resource pl_row_target[r] from the entries
 * pl_row_entries[r] .. pl_row_entries[r+1]-1; the block reads the resources
 * pl_in_col[pl_in_start[b] .. pl_in_start[b+1]-1] (besides issue, resource 0).
 *
 * Memo: every row of every instruction's matrix is "issue time + constant", and
 * every issue time is at least the current issue slot S[0] (weights of the other
 * resources are 0 or less). So a resource released before S[0] acts exactly as if
 * released at S[0], and max-plus matrices commute with adding a constant to the
 * whole vector. A block's result, relative to S[0], therefore depends only on its
 * inputs relative to S[0] and clamped at 0: small numbers, packed into a key. Each
 * block remembers its last key and result; a repeated key (a loop in a steady
 * state) costs one comparison and a store per changed resource. The finishing
 * cycle, max(S), is the same for a vector and its clamped form.
 */
static uint64_t pl_memo_key[PL_BLOCKS]; /* key + 1; 0: nothing remembered */
static int32_t pl_memo_out[PL_ROWS];

__attribute__((noinline)) static void pl_apply(uint32_t block, int64_t issue, uint64_t key) {
    int64_t next[PL_MAX_ROWS];
    uint32_t first = pl_block_rows[block], last = pl_block_rows[block + 1], r, e;
    for (r = first; r < last; r++) {
        int64_t best = INT64_MIN;
        for (e = pl_row_entries[r]; e < pl_row_entries[r + 1]; e++) {
            int64_t s = pl_state[pl_entry_column[e]];
            int64_t v = pl_entry_value[e] + (s > issue ? s : issue);
            if (v > best) best = v;
        }
        next[r - first] = best;
    }
    for (r = first; r < last; r++) {
        pl_state[pl_row_target[r]] = next[r - first];
        pl_memo_out[r] = (int32_t)(next[r - first] - issue);
    }
    pl_memo_key[block] = key;
}

static inline __attribute__((always_inline)) void model_block(uint32_t block) {
    int64_t issue = pl_state[0];
    uint32_t i, r, first = pl_in_start[block], last = pl_in_start[block + 1];
    uint64_t key = 1, ok = last - first <= 10;
    for (i = first; i < last; i++) {
        int64_t v = pl_state[pl_in_col[i]] - issue;
        v = v < 0 ? 0 : v;
        ok &= v < 63;
        key = (key << 6) | (uint64_t)(v & 63);
    }
    if (ok && pl_memo_key[block] == key) {
        for (r = pl_block_rows[block]; r < pl_block_rows[block + 1]; r++)
            pl_state[pl_row_target[r]] = issue + pl_memo_out[r];
        return;
    }
    pl_apply(block, issue, ok ? key : 0);
}

static inline void model_access(uintptr_t address, uint64_t size, uint32_t is_store) {
    (void)address;
    (void)size;
    (void)is_store;
}

static void model_reset(uint32_t in_process) {
    uint32_t i;
    (void)in_process;
    for (i = 0; i < PL_RESOURCES; i++) pl_state[i] = 0;
}
