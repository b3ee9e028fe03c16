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
 * The state is kept as the issue slot S[0] (pl_issue) and the other release times relative to it,
 * clamped at 0, interned as a number (pl_sid). Every row of every instruction's matrix is "issue
 * time + constant", and every issue time is at least the current issue slot: a resource released
 * before S[0] acts exactly as if released at S[0], and the finishing cycle (the latest release) is
 * at least S[0]. So the clamp changes no result, and a block maps a relative state and the penalty
 * before it to one next relative state and one advance of the issue slot. Each block remembers its
 * last two such steps (in its RVX_SCRATCH): a repeated one (a loop in a steady state, a function
 * called from the same context) costs a comparison and two stores; any other is computed in full.
 * States are numbered from 1 and never numbered again, even after the model resets or forgets
 * them, so that no step a block remembers from before can match.
 */
#include <stdlib.h>
#include <string.h>
#define PL_HEAD 6
#ifndef PL_MAX_STATES
#define PL_MAX_STATES (1u << 18) /* interned states kept; past them all are forgotten and begun again */
#endif

#define PL_PENALTY_BITS 20 /* penalties are less than 2^20 cycles (MAX_PENALTY in cbuild/riscv/machine.py) */

typedef struct pl_step {
    uint64_t key; /* the relative state before (its number from 1, shifted) and the penalty; 0: none */
    uint32_t next; /* the relative state after, less pl_first */
    int32_t advance; /* of the issue slot, past the penalty */
} pl_step;
_Static_assert(2 * sizeof(pl_step) <= sizeof(((rvx_block *)0)->scratch[0]), "two steps fit a block's scratch");

static int64_t pl_issue;
static uint64_t pl_first = 1; /* the number of the first state interned since the last forgetting */
static uint32_t pl_sid; /* the current relative state, less pl_first */
static int32_t *pl_states; /* PL_RESOURCES release times less the issue slot per state, [0] = 0 */
static uint32_t pl_nstates, pl_state_room;
static uint32_t *pl_table, pl_table_size; /* open addressing: state + 1 by hash, 0 empty */

/* The previous block: its data gives the penalty before the next ([2] if it transferred control,
 * [3] if execution fell through to its ``fall``), and the step it remembered last (its first) the
 * relative state now. Where no block's step says the state (a block without a matrix, a step not
 * remembered, a reset), pl_loose stands for the block, with the state in its step and the previous
 * block's penalties and fall, if it had a matrix, else none. So a block's hook stores one pointer
 * where it would store the state and three numbers: stores, not loads, bound the hook's speed in
 * translated code. pl_sid is the state in the slow paths, which start from the block's and end
 * with pl_settle or pl_prev set to a block whose first step leads to it. */
#define PL_STEPS(b) ((pl_step *)RVX_SCRATCH(b))
static const int32_t pl_no_penalty[PL_HEAD];
static rvx_block pl_loose = {.fall = UINT64_MAX, .data[RVX_MODEL] = pl_no_penalty};
static const rvx_block *pl_prev = &pl_loose;

/* The state is pl_sid, after block ``b`` (NULL: no penalty before the next block). */
static void pl_settle(const rvx_block *b) {
    pl_loose.fall = b != NULL ? b->fall : UINT64_MAX;
    pl_loose.data[RVX_MODEL] = b != NULL ? b->data[RVX_MODEL] : pl_no_penalty;
    PL_STEPS(&pl_loose)[0].next = pl_sid;
    pl_prev = &pl_loose;
}

static uint64_t pl_hash(const int32_t *rel) {
    uint64_t h = 1469598103934665603u;
    uint32_t i;
    for (i = 0; i < PL_RESOURCES; i++) h = (h ^ (uint32_t)rel[i]) * 1099511628211u;
    return h ^ (h >> 29);
}

/* Every interned state forgotten (the steps blocks remember name them by numbers not used again). */
static void pl_forget_states(void) {
    pl_first += pl_nstates;
    if (pl_first + PL_MAX_STATES >= (uint64_t)1 << (64 - PL_PENALTY_BITS)) abort(); /* keys would overflow */
    pl_nstates = 0;
    if (pl_table != NULL) memset(pl_table, 0, sizeof(uint32_t) * pl_table_size);
}

/* The number of the relative state ``rel``, interned if new. */
static uint32_t pl_intern(const int32_t *rel) {
    uint32_t at, i;
    if (pl_table == NULL || 2 * (pl_nstates + 1) > pl_table_size) {
        uint32_t size = pl_table_size ? 2 * pl_table_size : 1024;
        free(pl_table);
        pl_table = (uint32_t *)calloc(size, sizeof(uint32_t));
        if (pl_table == NULL) abort();
        pl_table_size = size;
        for (i = 0; i < pl_nstates; i++) {
            at = (uint32_t)pl_hash(pl_states + (size_t)i * PL_RESOURCES) & (size - 1);
            while (pl_table[at] != 0) at = (at + 1) & (size - 1);
            pl_table[at] = i + 1;
        }
    }
    at = (uint32_t)pl_hash(rel) & (pl_table_size - 1);
    for (; pl_table[at] != 0; at = (at + 1) & (pl_table_size - 1))
        if (memcmp(pl_states + (size_t)(pl_table[at] - 1) * PL_RESOURCES, rel, sizeof(int32_t) * PL_RESOURCES) == 0)
            return pl_table[at] - 1;
    if (pl_nstates == pl_state_room) {
        pl_state_room = pl_state_room ? 2 * pl_state_room : 256;
        pl_states = (int32_t *)realloc(pl_states, sizeof(int32_t) * PL_RESOURCES * (size_t)pl_state_room);
        if (pl_states == NULL) abort();
    }
    memcpy(pl_states + (size_t)pl_nstates * PL_RESOURCES, rel, sizeof(int32_t) * PL_RESOURCES);
    pl_table[at] = pl_nstates + 1;
    return pl_nstates++;
}

/* The release times now. */
static void pl_absolute(int64_t *s) {
    uint32_t i;
    if (pl_nstates == 0) pl_sid = pl_intern((int32_t[PL_RESOURCES]){0});
    for (i = 0; i < PL_RESOURCES; i++) s[i] = pl_issue + pl_states[(size_t)pl_sid * PL_RESOURCES + i];
}

/* The state becomes the release times ``s``. */
static void pl_keep(const int64_t *s) {
    int32_t rel[PL_RESOURCES];
    uint32_t i;
    for (i = 0; i < PL_RESOURCES; i++) {
        int64_t v = s[i] - s[0];
        if (v > INT32_MAX) abort(); /* a resource busy for 2^31 cycles: no machine description makes one */
        rel[i] = v < 0 ? 0 : (int32_t)v;
    }
    if (pl_nstates >= PL_MAX_STATES) pl_forget_states();
    pl_issue = s[0];
    pl_sid = pl_intern(rel);
}

/* A block without data: the penalty only. */
RVX_SLOW static void pl_penalty(int64_t pen) {
    int64_t s[PL_RESOURCES];
    pl_absolute(s);
    s[0] += pen;
    pl_keep(s);
}

/* A step the block has not remembered: its matrix applied in full, and remembered. */
RVX_SLOW static void pl_apply(const rvx_block *b, const int32_t *d, pl_step *m, uint64_t key, int64_t pen) {
    int64_t s[PL_RESOURCES], next[PL_RESOURCES], issue, before;
    uint64_t first;
    uint32_t rows, r;
    const int32_t *p;
    pl_step step;
    if (b->data_len[RVX_MODEL] < PL_HEAD) { /* no matrix: the penalty only */
        pl_penalty(pen);
        pl_settle(NULL);
        return;
    }
    /* Checked here, before any step of the block is remembered, so that a penalty never reaches
     * into a key's state bits. */
    if ((uint32_t)d[2] >= 1u << PL_PENALTY_BITS || (uint32_t)d[3] >= 1u << PL_PENALTY_BITS) abort();
    if (m[1].key == key) { /* the step before last */
        step = m[1];
        m[1] = m[0];
        m[0] = step;
        pl_sid = step.next;
        pl_issue += pen + step.advance;
        pl_prev = b;
        return;
    }
    rows = (uint32_t)d[0];
    p = d + PL_HEAD + rows + d[1];
    pl_absolute(s);
    s[0] += pen;
    issue = before = s[0];
    for (r = 0; r < rows; r++) {
        int64_t best = INT64_MIN;
        uint32_t e, entries = (uint32_t)p[1];
        for (e = 0; e < entries; e++) {
            int64_t v = s[p[2 + 2 * e]];
            v = p[3 + 2 * e] + (v > issue ? v : issue);
            if (v > best) best = v;
        }
        next[r] = best;
        p += 2 + 2 * entries;
    }
    p = d + PL_HEAD + rows + d[1];
    for (r = 0; r < rows; r++) {
        s[p[0]] = next[r];
        p += 2 + 2 * p[1];
    }
    if (s[0] < before) abort(); /* the issue slot never moves back (the memo's premise) */
    first = pl_first;
    pl_keep(s);
    if (s[0] - before > INT32_MAX) abort();
    if (pl_first != first) { /* pl_keep forgot every state, the one before included */
        pl_settle(b);
        return;
    }
    m[1] = m[0];
    m[0].key = key;
    m[0].next = pl_sid;
    m[0].advance = (int32_t)(s[0] - before);
    pl_prev = b;
}

static inline void model_block(const rvx_block *b) {
    const int32_t *d = b->data[RVX_MODEL];
    const rvx_block *p = pl_prev;
    int64_t pen = p->data[RVX_MODEL][b->pc == p->fall ? 3 : 2];
    uint32_t sid = PL_STEPS(p)[0].next;
    uint64_t key;
    pl_step *m = PL_STEPS(b);
    if (d == NULL) {
        pl_sid = sid;
        pl_penalty(pen);
        pl_settle(NULL);
        return;
    }
    key = ((pl_first + sid) << PL_PENALTY_BITS) | (uint64_t)pen;
    if (m[0].key == key) { /* remembered only for a block with its matrix */
        pl_issue += pen + m[0].advance;
        pl_prev = b;
    } else {
        pl_sid = sid;
        pl_apply(b, d, m, key, pen);
    }
}

static inline void model_access(uint64_t address, uint32_t size, uint32_t is_store, uint32_t index) {
    (void)address;
    (void)size;
    (void)is_store;
    (void)index;
}

static void model_reset(void) {
    pl_issue = 0;
    pl_forget_states();
    pl_sid = pl_intern((int32_t[PL_RESOURCES]){0});
    pl_settle(NULL);
}

/* One result: the finishing cycle, the last release time of any resource. */
static void model_finish(uint64_t *out) {
    int64_t s[PL_RESOURCES], best = 0;
    uint32_t i;
    pl_sid = PL_STEPS(pl_prev)[0].next;
    pl_absolute(s);
    for (i = 0; i < PL_RESOURCES; i++)
        if (s[i] > best) best = s[i];
    out[0] = (uint64_t)best;
}

/* The issue slot: cycles so far, for regions. */
static inline uint64_t model_now(void) { return (uint64_t)pl_issue; }
