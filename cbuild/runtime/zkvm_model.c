/*
 * Dynamic phase of the zkvm model: RISC Zero rv32im execution, segment by segment.
 *
 * User cycles: one per RV32IM instruction of each executed block (zk_user[b]).
 * Paging: the first read of a 1 KiB page in a segment pages it in (ZK_PAGE_CYCLES
 * plus ZK_NODE_CYCLES per Merkle ancestor not yet loaded in this segment); the
 * first write pages it in if needed and marks it dirty (ZK_PAGE_CYCLES plus
 * ZK_NODE_CYCLES per ancestor not yet dirty), paid again at page-out. A block
 * fetches its code pages.
 * Addresses: a program's stack frames are placed below ZK_STACK_TOP, at the same
 * distance from it as from the stack pointer when the process started (so the
 * length of the environment or of the program's path does not matter). The
 * arguments, environment and auxiliary vector above that point are the process's
 * inputs, which a zkVM guest receives by other means: they are not paged. Other
 * host addresses are taken modulo 4 GiB. In an in-process library (the Python process's heap and
 * stack are not reproducible) data accesses are not paged: code paging only.
 * Segments: before a block whose cycles would take the segment past
 * 2^po2 - ZK_MAX_INSN_CYCLES, the segment closes: page sets reset, the segment is
 * padded to 2^po2. The last segment is padded to the next power of two.
 */
#include <stdlib.h>

#define ZK_NODES (2u << ZK_DEPTH)
#define ZK_PAGE_MASK ((1u << ZK_DEPTH) - 1u)
#define ZK_SEGMENT_RESERVED (ZK_RESERVED_CYCLES + ZK_RESERVED_PAGING_CYCLES)

static uint32_t *zk_loaded, *zk_dirty; /* per Merkle node: the segment generation that loaded / dirtied it */
static uint32_t zk_generation = 1;
static uint64_t zk_seg_user, zk_seg_paging;
static uint64_t zk_user_total, zk_paging_total, zk_closed, zk_closed_padded, zk_page_ins, zk_page_outs;
static uint32_t zk_last_read = 0xffffffffu, zk_last_write = 0xffffffffu;
static uint32_t zk_in_process;
static uintptr_t zk_stack_base; /* host stack pointer when the program started (0: unknown) */
extern uintptr_t __instrbudget_initial_sp;
#define ZK_STACK_TOP 0xC0000000u
#define ZK_STACK_SPAN ((uintptr_t)64 << 20)

static void zk_tables(void) {
    zk_loaded = (uint32_t *)calloc(ZK_NODES, sizeof(uint32_t));
    zk_dirty = (uint32_t *)calloc(ZK_NODES, sizeof(uint32_t));
    if (zk_loaded == NULL || zk_dirty == NULL) abort();
}

static uint64_t zk_mark(uint32_t *set, uint32_t page) {
    uint32_t node = (1u << ZK_DEPTH) + page;
    uint64_t cost = ZK_PAGE_CYCLES;
    set[node] = zk_generation;
    for (node >>= 1; node >= 1; node >>= 1) {
        if (set[node] == zk_generation) break;
        set[node] = zk_generation;
        cost += ZK_NODE_CYCLES;
    }
    return cost;
}

static void zk_touch(uint32_t page, uint32_t is_store) {
    uint32_t leaf = (1u << ZK_DEPTH) + page;
    if (zk_loaded == NULL) zk_tables();
    if (zk_loaded[leaf] != zk_generation) {
        zk_seg_paging += zk_mark(zk_loaded, page);
        zk_page_ins++;
    }
    if (is_store && zk_dirty[leaf] != zk_generation) {
        zk_seg_paging += zk_mark(zk_dirty, page);
        zk_page_outs++;
    }
}

static uint64_t zk_pow2(uint64_t n) {
    uint64_t p = 1;
    while (p < n) p <<= 1;
    return p;
}

static void zk_close_segment(void) {
    zk_user_total += zk_seg_user;
    zk_paging_total += zk_seg_paging;
    zk_closed++;
    zk_closed_padded += (uint64_t)1 << ZK_PO2;
    zk_seg_user = zk_seg_paging = 0;
    zk_generation++;
    zk_last_read = zk_last_write = 0xffffffffu;
}

static void model_block(uint32_t block) {
    uint32_t page;
    uint64_t used = zk_seg_user + zk_seg_paging + ZK_SEGMENT_RESERVED;
    if (zk_seg_user > 0 && used + zk_user[block] > ((uint64_t)1 << ZK_PO2) - ZK_MAX_INSN_CYCLES) zk_close_segment();
    zk_seg_user += zk_user[block];
    for (page = zk_code_first[block]; page <= zk_code_last[block]; page++) zk_touch(page, 0);
}

static void model_access(uintptr_t address, uint64_t size, uint32_t is_store) {
    uint32_t first, last, page;
    if (size == 0 || zk_in_process) return;
    if (zk_stack_base != 0 && address < zk_stack_base + ZK_STACK_SPAN) {
        if (address >= zk_stack_base) return; /* arguments and environment */
        if (zk_stack_base - address < ZK_STACK_SPAN) address = ZK_STACK_TOP - (zk_stack_base - address);
    }
    first = (uint32_t)(address >> ZK_PAGE_BITS) & ZK_PAGE_MASK;
    if (is_store ? first == zk_last_write : first == zk_last_read) {
        if (((address & ((1u << ZK_PAGE_BITS) - 1)) + size) <= (1u << ZK_PAGE_BITS)) return;
    }
    last = (uint32_t)((address + size - 1) >> ZK_PAGE_BITS) & ZK_PAGE_MASK;
    for (page = first;; page = (page + 1) & ZK_PAGE_MASK) {
        zk_touch(page, is_store);
        if (page == last) break;
    }
    if (is_store) zk_last_write = last; else zk_last_read = last;
    if (is_store) zk_last_read = last; /* a stored page is loaded too */
}

static void model_reset(uint32_t in_process) {
    zk_in_process = in_process;
    zk_stack_base = __instrbudget_initial_sp;
    zk_seg_user = zk_seg_paging = 0;
    zk_user_total = zk_paging_total = zk_closed = zk_closed_padded = zk_page_ins = zk_page_outs = 0;
    zk_generation++;
    zk_last_read = zk_last_write = 0xffffffffu;
}

/* total, user, paging, reserved, segments, page-ins, page-outs */
static void model_finish(uint64_t *out) {
    uint64_t segments = zk_closed + 1;
    uint64_t last = zk_seg_user + zk_seg_paging + ZK_SEGMENT_RESERVED;
    out[0] = zk_closed_padded + zk_pow2(last);
    out[1] = zk_user_total + zk_seg_user;
    out[2] = zk_paging_total + zk_seg_paging;
    out[3] = segments * ZK_SEGMENT_RESERVED;
    out[4] = segments;
    out[5] = zk_page_ins;
    out[6] = zk_page_outs;
}
