/*
 * The zkvm model in the RISC-V executor (rv_executor.c): RISC Zero rv32im cycles of the executed ELF.
 *
 * User cycles: one per executed instruction. Before each instruction the segment closes if
 * user + paging + reserved cycles have reached 2^po2 - ZK_MAX_INSN_CYCLES (RISC Zero's
 * segment_threshold); a closed segment is padded to 2^po2, the last to the next power of two.
 * Paging, per segment: each instruction fetches its word (the first fetch from a 1 KiB page pages
 * it in), then makes its data accesses; the first read of a page costs ZK_PAGE_CYCLES plus
 * ZK_NODE_CYCLES per Merkle ancestor not yet loaded in the segment, the first write the same
 * again for the page-out (ancestors not yet dirty). Near a segment's end instructions are begun
 * lazily, when an access or the next block needs them, so a segment boundary falls on the exact
 * instruction; elsewhere a block's instructions begin when it starts.
 */
#include <stdlib.h>

#define ZK_NODES (2u << ZK_DEPTH)
#define ZK_PAGE_MASK ((1u << ZK_DEPTH) - 1u)
#define ZK_SEGMENT_RESERVED ((int64_t)ZK_RESERVED_CYCLES + (int64_t)ZK_RESERVED_PAGING_CYCLES)
#define ZK_THRESHOLD ((int64_t)((uint64_t)1 << ZK_PO2) - (int64_t)ZK_MAX_INSN_CYCLES)
/* The most cycles one page-in or page-out costs. */
#define ZK_EVENT_CYCLES ((int64_t)ZK_PAGE_CYCLES + (int64_t)ZK_DEPTH * ZK_NODE_CYCLES)
#define ZK_NONE 0xffffffffu

static uint32_t *zk_loaded, *zk_dirty; /* per Merkle node: the segment generation that loaded / dirtied it */
/* This segment's user + paging cycles are the instructions begun in the measurement plus zk_off
 * (its paging cycles less the instructions begun before it): a block adds no cycles of its own
 * here, RVX_EXECUTED counts them. zk_room is what the segment's threshold leaves for that count, or
 * INT64_MIN while a block is begun lazily (so the next block's one check takes the slow path). */
static int64_t zk_off, zk_room, zk_seg_paging;
static uint64_t zk_user_total, zk_paging_total, zk_closed, zk_closed_padded, zk_page_ins, zk_page_outs;
/* Per page, what the fast paths may skip: ZK_LOADED if it is loaded in this segment, with ZK_DIRTY
 * if it is dirty too (translated code tests one bit of one byte per access). A page's byte is set
 * only outside strict mode, and zk_marked lists the pages whose bytes are set, so that emptying the
 * map clears those alone. */
#define ZK_LOADED 1u
#define ZK_DIRTY 2u
static uint8_t zk_map[1u << ZK_DEPTH];
static uint32_t *zk_marked, zk_nmarked, zk_marked_room;
static uint32_t zk_fetch_page;
/* A block begun lazily (near a segment's end): its start, instructions, the next one not yet begun
 * (ZK_BEGUN: none is pending) and the instructions begun before it. While zk_off stays below
 * zk_safe_off, no segment can close before its last instruction, and the map of pages stays as
 * it is; once it may (zk_strict), it is emptied and kept empty, so that each of its accesses
 * takes the slow path, which begins the instructions before it. */
static uint64_t zk_pc, zk_lazy_base;
#define ZK_BEGUN 0xffffffffu
static uint32_t zk_n, zk_pos = ZK_BEGUN, zk_strict;
static int64_t zk_safe_off;

RVX_SLOW static void zk_empty_map(void);
static void zk_go_strict(void);

static void zk_forget(void) {
    zk_empty_map();
    zk_fetch_page = ZK_NONE;
}

static void zk_set_room(void) {
    zk_room = zk_pos == ZK_BEGUN ? ZK_THRESHOLD - ZK_SEGMENT_RESERVED - zk_off : INT64_MIN;
    RVX_ROOM_CHANGED();
}

static void zk_add_paging(int64_t cycles) {
    zk_seg_paging += cycles;
    zk_off += cycles;
    zk_set_room();
    if (zk_pos != ZK_BEGUN && zk_off >= zk_safe_off) zk_go_strict();
}

/* Whether the map of pages loaded / dirty is empty. */
static uint32_t zk_map_empty;

RVX_SLOW static void zk_empty_map(void) {
    uint32_t i;
    for (i = 0; i < zk_nmarked; i++) zk_map[zk_marked[i]] = 0;
    zk_nmarked = 0;
    zk_map_empty = 1;
}

static void zk_set_map(uint32_t page, uint8_t bits) {
    if (zk_map[page] == 0) {
        if (zk_nmarked == zk_marked_room) {
            zk_marked_room = zk_marked_room ? 2 * zk_marked_room : 4096;
            zk_marked = (uint32_t *)realloc(zk_marked, zk_marked_room * sizeof *zk_marked);
            if (zk_marked == NULL) abort();
        }
        zk_marked[zk_nmarked++] = page;
    }
    zk_map[page] |= bits;
}

static void zk_go_strict(void) {
    if (!zk_map_empty) zk_empty_map();
    zk_strict = 1;
}

RVX_SLOW static void zk_touch_slow(uint32_t page, uint32_t is_store) {
    uint32_t leaf = (1u << ZK_DEPTH) + page;
    if (zk_loaded == NULL) {
        zk_loaded = (uint32_t *)calloc(ZK_NODES, sizeof(uint32_t));
        zk_dirty = (uint32_t *)calloc(ZK_NODES, sizeof(uint32_t));
        if (zk_loaded == NULL || zk_dirty == NULL) abort();
    }
    if (zk_loaded[leaf] != zk_generation) {
        zk_add_paging((int64_t)zk_mark(zk_loaded, page));
        zk_page_ins++;
    }
    if (is_store && zk_dirty[leaf] != zk_generation) {
        zk_add_paging((int64_t)zk_mark(zk_dirty, page));
        zk_page_outs++;
    }
    /* After the paging above, which may have made the block strict. */
    if (!zk_strict) zk_set_map(page, is_store ? ZK_LOADED | ZK_DIRTY : ZK_LOADED);
    zk_map_empty &= zk_strict;
}

static inline void zk_touch(uint32_t page, uint32_t is_store) {
    if (!(zk_map[page] & (is_store ? ZK_DIRTY : ZK_LOADED))) zk_touch_slow(page, is_store);
}

static uint64_t zk_pow2(uint64_t n) {
    uint64_t p = 1;
    while (p < n) p <<= 1;
    return p;
}

/* A segment starts after ``begun`` instructions with no cycles of its own yet. */
static void zk_open_segment(uint64_t begun) {
    zk_seg_paging = 0;
    zk_off = -(int64_t)begun;
    zk_set_room();
}

/* The segment ends after ``begun`` instructions. */
RVX_SLOW static void zk_close_segment(uint64_t begun) {
    int64_t used = (int64_t)begun + zk_off;
    zk_user_total += (uint64_t)(used - zk_seg_paging);
    zk_paging_total += (uint64_t)zk_seg_paging;
    zk_closed++;
    zk_closed_padded += (uint64_t)1 << ZK_PO2;
    zk_open_segment(begun);
    zk_generation++;
    zk_forget();
}

/* Begin the lazily begun block's instructions up to index ``last``: split checks and fetches. */
RVX_SLOW static void zk_begin(uint32_t last) {
    while (zk_pos <= last && zk_pos < zk_n) {
        uint64_t address = zk_pc + 4u * (uint64_t)zk_pos, begun = zk_lazy_base + zk_pos;
        uint32_t page = (uint32_t)(address >> ZK_PAGE_BITS) & ZK_PAGE_MASK;
        int64_t room;
        uint32_t in_page, count;
        if ((int64_t)begun + zk_off + ZK_SEGMENT_RESERVED >= ZK_THRESHOLD) zk_close_segment(begun);
        if (page != zk_fetch_page) {
            zk_touch(page, 0);
            zk_fetch_page = page;
        }
        /* Instructions from here to ``last`` on this page; each later one is begun only while the
         * segment has room before its own check. */
        in_page = (uint32_t)((((address >> ZK_PAGE_BITS) + 1) << ZK_PAGE_BITS) - address) / 4u;
        count = last - zk_pos + 1;
        if (count > zk_n - zk_pos) count = zk_n - zk_pos;
        if (count > in_page) count = in_page;
        room = ZK_THRESHOLD - ((int64_t)begun + zk_off + ZK_SEGMENT_RESERVED);
        if ((int64_t)count > room) count = room > 1 ? (uint32_t)room : 1u;
        zk_pos += count;
    }
    if (zk_pos >= zk_n) zk_pos = ZK_BEGUN, zk_strict = 0;
    zk_set_room();
}

/* The most cycles a block of ``n`` instructions from ``pc`` can add before its last instruction
 * begins, if its accesses make at most ``events`` page-ins and page-outs: its instructions, a
 * page-in per code page, and the events. A block's ``page_events`` bounds them (for 1 KiB pages);
 * so does four per access (a page-in and a page-out of up to two pages each), where only the
 * number of accesses is known. */
_Static_assert(ZK_PAGE_BITS >= 10, "page_events counts 1 KiB pages: larger pages are touched as often at most");
static inline int64_t zk_block_bound(uint64_t pc, uint32_t n, uint64_t events) {
    uint64_t pages = ((pc + 4u * (uint64_t)n - 1) >> ZK_PAGE_BITS) - (pc >> ZK_PAGE_BITS) + 1;
    return (int64_t)n + (int64_t)(pages + events) * ZK_EVENT_CYCLES;
}

/* The block's code pages loaded in the segment. In translated code the pages are constants, and
 * each check tests a fixed byte of the map of loaded pages, which code pages
 * nearly always find set (a check against the last fetched page would miss wherever the executed
 * blocks alternate between two pages, as a call to a function on another page does). */
static inline void zk_fetch(uint64_t pc, uint32_t n) {
    uint64_t last = (pc + 4u * (uint64_t)(n - 1)) >> ZK_PAGE_BITS, at;
    for (at = pc >> ZK_PAGE_BITS; at <= last; at++) zk_touch((uint32_t)at & ZK_PAGE_MASK, 0);
}

/* Cycles the block's code pages not yet loaded in the segment will page in. */
static int64_t zk_code_paging(uint64_t pc, uint32_t n) {
    uint64_t last = (pc + 4u * (uint64_t)(n - 1)) >> ZK_PAGE_BITS, at;
    int64_t cycles = 0;
    for (at = pc >> ZK_PAGE_BITS; at <= last; at++) {
        uint32_t page = (uint32_t)at & ZK_PAGE_MASK;
        if (zk_loaded == NULL || zk_loaded[(1u << ZK_DEPTH) + page] != zk_generation)
            cycles += ZK_EVENT_CYCLES;
    }
    return cycles;
}

/* A block near a segment's end, or after one begun lazily: its code pages counted as they are
 * (loaded in the segment or not) where the caller's bound counted each as a page-in. */
RVX_SLOW static void zk_block_slow(uint64_t pc, uint32_t n, uint64_t events, uint64_t before) {
    int64_t code;
    if (zk_pos != ZK_BEGUN) zk_begin(zk_n - 1);
    code = (int64_t)before + (int64_t)n + zk_code_paging(pc, n);
    if (code + (int64_t)events * ZK_EVENT_CYCLES < zk_room) {
        zk_fetch(pc, n);
        return;
    }
    /* Begun lazily, as accesses and the next block need them; the first instruction at once. */
    zk_pc = pc;
    zk_n = n;
    zk_pos = 0;
    zk_lazy_base = before;
    zk_strict = 0;
    zk_safe_off = INT64_MAX;
    zk_begin(0);
    if (zk_pos == ZK_BEGUN) return;
    /* No segment closes before the last instruction while the instructions and code pages still
     * to begin fit in the threshold with zk_off as it is. */
    zk_safe_off = ZK_THRESHOLD - ZK_SEGMENT_RESERVED - (int64_t)(before + n - 1) - zk_code_paging(pc + 4u, n - 1);
    if (zk_off >= zk_safe_off) zk_go_strict();
}

static inline void model_block(const rvx_block *b) {
    /* The block's facts first: in translated code they are constants, and the rest folds. */
    uint64_t pc = b->pc, before = RVX_EXECUTED - b->n;
    uint32_t n = b->n;
    /* Where no segment can close inside the block, its instructions begin at once: the cycles and
     * pages are the same in either order within a segment, and accesses then only touch pages. */
    if (RVX_ROOMY || (int64_t)before + zk_block_bound(pc, n, b->page_events) < zk_room) {
        if (!RVX_FOLLOWS) zk_fetch(pc, n);
    } else {
        zk_block_slow(pc, n, b->page_events, before);
    }
}

/* The room model_block checks, for translated code to check with the instruction limit: the block
 * has it where RVX_EXECUTED plus its slack is at most zk_room (before + bound < zk_room, with the
 * bound from four events per access, which is constant in translated code). */
#define RVX_ROOM
/* A block that starts with room pages in at most its bound less its instructions: its slack less one. */
#define RVX_ROOM_TAKEN
static inline uint64_t model_block_slack(uint64_t pc, uint32_t n, uint32_t nmem) {
    return (uint64_t)zk_block_bound(pc, n, 4u * (uint64_t)nmem) - n + 1u;
}
static int64_t model_room(void) { return zk_room; }

/* An access the map does not show done already, or made while a block is begun lazily. */
RVX_SLOW static void zk_access(uint64_t address, uint32_t size, uint32_t is_store, uint32_t index) {
    uint32_t first, last, page;
    if (zk_pos != ZK_BEGUN && index >= zk_pos) zk_begin(index);
    if (size == 0) return;
    first = (uint32_t)(address >> ZK_PAGE_BITS) & ZK_PAGE_MASK;
    last = (uint32_t)((address + size - 1) >> ZK_PAGE_BITS) & ZK_PAGE_MASK;
    for (page = first;; page = (page + 1) & ZK_PAGE_MASK) {
        zk_touch(page, is_store);
        if (page == last) break;
    }
}

/* An access aligned to its size stays on one page: guest loads and stores are 8 bytes at most, and
 * the executor's own writes of guest memory (system calls) come in chunks of at most 1 KiB. */
_Static_assert(ZK_PAGE_BITS >= 10, "an access aligned to its size (1 KiB at most) stays on one page");
static inline void model_access(uint64_t address, uint32_t size, uint32_t is_store, uint32_t index) {
    uint32_t page = (uint32_t)(address >> ZK_PAGE_BITS) & ZK_PAGE_MASK;
    /* Nearly every access: aligned to its size (so on one page) within a page already loaded (and,
     * for a store, dirty) in this segment. While a block begun lazily may see a segment close, the
     * map is empty, so its accesses take the slow path (zk_strict); before, a page it shows is
     * loaded in this segment. */
    if ((zk_map[page] & (is_store ? ZK_DIRTY : ZK_LOADED)) && size != 0 && (size & (size - 1)) == 0 &&
        (address & (size - 1)) == 0)
        return;
    zk_access(address, size, is_store, index);
}

/* Accesses of one kind, all between ``first`` and ``last`` (less than a page apart, so on at most two
 * pages): nothing to do for any of them if both pages are loaded (and, for stores, dirty) in this
 * segment and the block was begun at once, so that no segment closes before the last of them. */
#define RVX_ACCESSES_DONE
static inline uint32_t model_accesses_done(uint64_t first, uint64_t last, uint32_t is_store) {
    uint32_t a = (uint32_t)(first >> ZK_PAGE_BITS) & ZK_PAGE_MASK, b = (uint32_t)(last >> ZK_PAGE_BITS) & ZK_PAGE_MASK;
    return (zk_map[a] & zk_map[b] & (is_store ? ZK_DIRTY : ZK_LOADED)) && zk_pos == ZK_BEGUN;
}

static void model_reset(void) {
    zk_open_segment(0);
    zk_user_total = zk_paging_total = zk_closed = zk_closed_padded = zk_page_ins = zk_page_outs = 0;
    zk_generation++;
    zk_n = 0;
    zk_pos = ZK_BEGUN;
    zk_strict = 0;
    zk_set_room();
    zk_forget();
}

/* This segment's user + paging cycles, the pending block begun first. */
static int64_t zk_used_now(void) {
    if (zk_pos != ZK_BEGUN) zk_begin(zk_n - 1);
    return (int64_t)RVX_EXECUTED + zk_off;
}

/* total, user, paging, reserved, segments, page-ins, page-outs */
static void model_finish(uint64_t *out) {
    uint64_t segments = zk_closed + 1, used = (uint64_t)zk_used_now();
    out[0] = zk_closed_padded + zk_pow2(used + (uint64_t)ZK_SEGMENT_RESERVED);
    out[1] = zk_user_total + (used - (uint64_t)zk_seg_paging);
    out[2] = zk_paging_total + (uint64_t)zk_seg_paging;
    out[3] = segments * (uint64_t)ZK_SEGMENT_RESERVED;
    out[4] = segments;
    out[5] = zk_page_ins;
    out[6] = zk_page_outs;
}

/* Cycles so far (user + paging, before padding and reservations), for regions. */
static inline uint64_t model_now(void) {
    return zk_user_total + zk_paging_total + (uint64_t)zk_used_now();
}

/* The most model_now() grows over one instruction: the instruction, a page-in of its code page, and
 * a page-in and page-out of each of the two pages its access may touch (a system call writing
 * guest memory pages more, so the executor looks at the clock again after one). */
#define RVX_CLOCK_STEP
static uint64_t model_clock_step(void) { return 1u + 5u * (uint64_t)ZK_EVENT_CYCLES; }
