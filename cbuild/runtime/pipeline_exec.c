/*
 * The pipeline model in the RISC-V executor (rv_executor.c): the finishing cycle of the executed
 * machine code on a single-issue in-order machine.
 *
 * Before each executed block, the previous block's control-transfer penalty is added to the issue
 * slot (resource 0), then the block's max-plus matrix is applied to the vector of resource release
 * times: S'[i] = max_j (E[i][j] + S[j]) for the rows E changes; other rows keep their value.
 * Each block's data (computed once per block by the model in Python from the decoded machine
 * code, cbuild/models/pipeline_blocks.py; read-only, constants in translated code) is laid out as
 *   [0] rows, [1] inputs, [2] penalty if the block's last instruction transfers control,
 *   [3] penalty if execution falls through, [4..6+rows) unused,
 *   then the input resources, then per row: target resource, entries, (column, value) pairs.
 *
 * Memo: every row of every instruction's matrix is "issue time + constant", and every issue time
 * is at least the current issue slot S[0]. So a resource released before S[0] acts exactly as if
 * released at S[0], and a block's result relative to S[0] depends only on its inputs relative to
 * S[0], clamped at 0: small numbers, packed into a key. A block remembers its last key and result
 * (pl_memo, by block id); a repeated key (a loop in a steady state) costs a comparison and a store
 * per changed resource.
 */
#include <stdlib.h>
#define PL_HEAD 6
#define PL_MEMO (2 + PL_MAX_ROWS) /* per block: the key (two words), a result per row */

static int32_t *pl_memo;
static uint32_t pl_memo_blocks;

/* Block ``id``'s memo, the table grown to hold it (new entries: key 0, which no key equals). */
RVX_SLOW static int32_t *pl_memo_grow(uint32_t id) {
    uint32_t blocks = pl_memo_blocks ? pl_memo_blocks : 1024;
    while (blocks <= id) blocks *= 2;
    pl_memo = realloc(pl_memo, sizeof(int32_t) * PL_MEMO * blocks);
    if (pl_memo == NULL) abort();
    memset(pl_memo + (size_t)PL_MEMO * pl_memo_blocks, 0, sizeof(int32_t) * PL_MEMO * (blocks - pl_memo_blocks));
    pl_memo_blocks = blocks;
    return pl_memo + (size_t)PL_MEMO * id;
}

static inline int32_t *pl_memo_of(uint32_t id) {
    return id < pl_memo_blocks ? pl_memo + (size_t)PL_MEMO * id : pl_memo_grow(id);
}

/* The previous block's transfer penalties (if it transferred control, if it fell through) and
 * where it falls through to; both 0 after a block without data. */
static int64_t pl_taken, pl_fell;
static uint64_t pl_prev_next;

RVX_SLOW static void pl_apply(const int32_t *d, int32_t *memo, int64_t issue, uint64_t key) {
    int64_t next[PL_MAX_ROWS];
    uint32_t rows = (uint32_t)d[0], r;
    const int32_t *p = d + PL_HEAD + rows + d[1];
    for (r = 0; r < rows; r++) {
        int64_t best = INT64_MIN;
        uint32_t e, entries = (uint32_t)p[1];
        for (e = 0; e < entries; e++) {
            int64_t s = pl_state[p[2 + 2 * e]];
            int64_t v = p[3 + 2 * e] + (s > issue ? s : issue);
            if (v > best) best = v;
        }
        next[r] = best;
        p += 2 + 2 * entries;
    }
    p = d + PL_HEAD + rows + d[1];
    for (r = 0; r < rows; r++) {
        pl_state[p[0]] = next[r];
        memo[2 + r] = (int32_t)(next[r] - issue);
        p += 2 + 2 * p[1];
    }
    memo[0] = (int32_t)(uint32_t)key;
    memo[1] = (int32_t)(uint32_t)(key >> 32);
}

static inline void model_block(const rvx_block *b) {
    const int32_t *d = b->data[RVX_MODEL];
    int32_t *memo;
    int64_t issue;
    uint32_t i, rows, inputs;
    uint64_t key = 1, ok;
    const int32_t *p;
    pl_state[0] += b->pc == pl_prev_next ? pl_fell : pl_taken;
    if (d == NULL || b->data_len[RVX_MODEL] < PL_HEAD) {
        pl_taken = pl_fell = 0;
        return;
    }
    pl_taken = d[2];
    pl_fell = d[3];
    pl_prev_next = b->fall;
    issue = pl_state[0];
    rows = (uint32_t)d[0];
    inputs = (uint32_t)d[1];
    ok = inputs <= 10;
    for (i = 0; i < inputs; i++) {
        int64_t v = pl_state[d[PL_HEAD + rows + i]] - issue;
        v = v < 0 ? 0 : v;
        ok &= v < 63;
        key = (key << 6) | (uint64_t)(v & 63);
    }
    memo = pl_memo_of(b->id);
    if (ok && ((uint64_t)(uint32_t)memo[0] | (uint64_t)(uint32_t)memo[1] << 32) == key) {
        p = d + PL_HEAD + rows + inputs;
        for (i = 0; i < rows; i++) {
            pl_state[p[0]] = issue + memo[2 + i];
            p += 2 + 2 * p[1];
        }
        return;
    }
    pl_apply(d, memo, issue, ok ? key : 0);
}

static inline void model_access(uint64_t address, uint32_t size, uint32_t is_store, uint32_t index) {
    (void)address;
    (void)size;
    (void)is_store;
    (void)index;
}

static void model_reset(void) {
    uint32_t i;
    for (i = 0; i < PL_RESOURCES; i++) pl_state[i] = 0;
    pl_taken = pl_fell = 0;
    free(pl_memo); /* block ids are a machine's own */
    pl_memo = NULL;
    pl_memo_blocks = 0;
}
