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
 * inputs, which a zkVM guest receives by other means: they are not paged. Heap
 * addresses are placed from ZK_HEAP_GUEST, at their distance from the start of the
 * process's heap (so neither the image's size, which the runtime's own data changes
 * with the build, nor the kernel moves them), and a program's allocations all come from that
 * heap (glibc's malloc is told not to map large blocks elsewhere): where the kernel
 * puts the heap and its mappings (which depends on the kernel and on the stack's
 * size limit) does not matter. Other host addresses are taken modulo 4 GiB. In an in-process library (the Python process's heap and
 * stack are not reproducible) data accesses are not paged: code paging only.
 * Segments: before a block whose cycles would take the segment past
 * 2^po2 - ZK_MAX_INSN_CYCLES, the segment closes: page sets reset, the segment is
 * padded to 2^po2. The last segment is padded to the next power of two.
 */
#include <fcntl.h>
#include <malloc.h>
#include <stdlib.h>
#include <unistd.h>

#define ZK_NODES (2u << ZK_DEPTH)
#define ZK_PAGE_MASK ((1u << ZK_DEPTH) - 1u)
#define ZK_SEGMENT_RESERVED (ZK_RESERVED_CYCLES + ZK_RESERVED_PAGING_CYCLES)
#define ZK_LIMIT ((int64_t)((uint64_t)1 << ZK_PO2) - (int64_t)ZK_MAX_INSN_CYCLES - (int64_t)ZK_SEGMENT_RESERVED)
#define ZK_SEEN 256 /* direct-mapped caches of pages already paged in (read) or dirty (written) */

static uint32_t *zk_loaded, *zk_dirty; /* per Merkle node: the segment generation that loaded / dirtied it */
static int64_t zk_left = ZK_LIMIT;   /* cycles this segment can still take before it closes */
static uint64_t zk_seg_paging;       /* paging cycles of this segment */
static uint64_t zk_user_total, zk_paging_total, zk_closed, zk_closed_padded, zk_page_ins, zk_page_outs;
static uint32_t zk_seen[2][ZK_SEEN];
static uint32_t zk_code_page = 0xffffffffu; /* the code page the last block ran from */
static uint32_t zk_in_process;
static uintptr_t zk_stack_base; /* host stack pointer when the program started (0: unknown) */
/* Fast path: an address a in [zk_stack_lo, zk_stack_lo + 2 * ZK_STACK_SPAN) is on the stack (or in the
 * arguments above it) and moves by zk_stack_delta; other addresses stay. */
static uintptr_t zk_stack_lo = 0, zk_stack_delta = 0;
extern uintptr_t __instrbudget_initial_sp;
#define ZK_STACK_TOP 0xC0000000u
#define ZK_STACK_SPAN ((uintptr_t)64 << 20)
/* Addresses in [zk_heap_lo, zk_heap_lo + ZK_HEAP_SPAN) are on the heap and move by zk_heap_delta. */
static uintptr_t zk_heap_lo = 0, zk_heap_delta = 0;
#define ZK_HEAP_GUEST 0x60000000u /* above the image (host addresses modulo 4 GiB), below the stack */
#define ZK_HEAP_SPAN ((uintptr_t)1 << 30)

/* Where the process's heap starts (start_brk, field 47 of /proc/self/stat); 0 if unknown. */
static uintptr_t zk_start_brk(void) {
    char buf[1024];
    ssize_t n;
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC), field = 2;
    uintptr_t value = 0;
    char *p;
    if (fd < 0) return 0;
    n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 0;
    buf[n] = '\0';
    for (p = buf + n; p > buf && p[-1] != ')'; p--) /* the command name may hold spaces and parentheses */
        ;
    for (; *p != '\0' && field < 47; p++)
        if (*p == ' ') field++;
    for (; *p >= '0' && *p <= '9'; p++) value = value * 10 + (uintptr_t)(*p - '0');
    return field == 47 ? value : 0;
}

static void zk_forget(void) {
    uint32_t i;
    for (i = 0; i < ZK_SEEN; i++) zk_seen[0][i] = zk_seen[1][i] = 0xffffffffu;
    zk_code_page = 0xffffffffu;
}

__attribute__((noinline)) static void zk_touch(uint32_t page, uint32_t is_store) {
    uint32_t leaf = (1u << ZK_DEPTH) + page;
    uint64_t cost = 0;
    if (zk_in_process) { /* only code is paged in-process: remember data pages without paging them */
        zk_seen[0][page % ZK_SEEN] = page;
        if (is_store) zk_seen[1][page % ZK_SEEN] = page;
        return;
    }
    if (zk_loaded == NULL) {
        zk_loaded = (uint32_t *)calloc(ZK_NODES, sizeof(uint32_t));
        zk_dirty = (uint32_t *)calloc(ZK_NODES, sizeof(uint32_t));
        if (zk_loaded == NULL || zk_dirty == NULL) abort();
    }
    if (zk_loaded[leaf] != zk_generation) {
        cost += zk_mark(zk_loaded, page);
        zk_page_ins++;
    }
    zk_seen[0][page % ZK_SEEN] = page;
    if (is_store) {
        if (zk_dirty[leaf] != zk_generation) {
            cost += zk_mark(zk_dirty, page);
            zk_page_outs++;
        }
        zk_seen[1][page % ZK_SEEN] = page;
    }
    zk_seg_paging += cost;
    zk_left -= (int64_t)cost;
}

static uint64_t zk_pow2(uint64_t n) {
    uint64_t p = 1;
    while (p < n) p <<= 1;
    return p;
}

static uint64_t zk_seg_user(void) {
    return (uint64_t)(ZK_LIMIT - zk_left) - zk_seg_paging;
}

__attribute__((noinline)) static void zk_close_segment(void) {
    zk_user_total += zk_seg_user();
    zk_paging_total += zk_seg_paging;
    zk_closed++;
    zk_closed_padded += (uint64_t)1 << ZK_PO2;
    zk_seg_paging = 0;
    zk_left = ZK_LIMIT;
    zk_generation++;
    zk_forget();
}

__attribute__((noinline)) static void zk_fetch(uint32_t first, uint32_t last) {
    uint32_t page;
    uint32_t saved = zk_in_process;
    zk_in_process = 0; /* code is always paged */
    for (page = first; page <= last; page++) zk_touch(page, 0);
    zk_in_process = saved;
    zk_code_page = first == last ? first : 0xffffffffu;
}

static inline __attribute__((always_inline)) void model_block(uint32_t block) {
    int64_t user = (int64_t)zk_user[block];
    if (zk_left < user && zk_left < ZK_LIMIT) zk_close_segment();
    zk_left -= user;
    if (zk_code_first[block] <= zk_code_last[block] &&
        (zk_code_first[block] != zk_code_page || zk_code_last[block] != zk_code_page))
        zk_fetch(zk_code_first[block], zk_code_last[block]);
}

/* Slow path of an access; ``address`` is already moved if on the stack or the heap. */
__attribute__((noinline)) static void zk_access_pages(uintptr_t host, uintptr_t address, uint64_t size, uint32_t is_store) {
    uint32_t first, last, page;
    if (size == 0) return;
    if (zk_stack_base != 0 && host >= zk_stack_base && host - zk_stack_base < ZK_STACK_SPAN) return; /* arguments */
    first = (uint32_t)(address >> ZK_PAGE_BITS) & ZK_PAGE_MASK;
    last = (uint32_t)((address + size - 1) >> ZK_PAGE_BITS) & ZK_PAGE_MASK;
    for (page = first;; page = (page + 1) & ZK_PAGE_MASK) {
        zk_touch(page, is_store);
        if (page == last) break;
    }
}

static inline __attribute__((always_inline)) void model_access(uintptr_t address, uint64_t size, uint32_t is_store) {
    uintptr_t moved = address + (address - zk_stack_lo < 2 * ZK_STACK_SPAN ? zk_stack_delta : 0) +
                      (address - zk_heap_lo < ZK_HEAP_SPAN ? zk_heap_delta : 0);
    uint32_t page = (uint32_t)(moved >> ZK_PAGE_BITS) & ZK_PAGE_MASK;
    if (zk_seen[is_store != 0][page % ZK_SEEN] == page && (moved & ((1u << ZK_PAGE_BITS) - 1)) + size <= (1u << ZK_PAGE_BITS))
        return;
    zk_access_pages(address, moved, size, is_store);
}

static void model_reset(uint32_t in_process) {
    zk_in_process = in_process;
    zk_stack_base = in_process ? 0 : __instrbudget_initial_sp;
    zk_stack_lo = zk_stack_base != 0 ? zk_stack_base - ZK_STACK_SPAN : 0;
    zk_stack_delta = zk_stack_base != 0 ? (uintptr_t)ZK_STACK_TOP - zk_stack_base : 0;
    zk_heap_lo = zk_heap_delta = 0;
    if (!in_process) {
        mallopt(M_MMAP_MAX, 0); /* every allocation from the heap, none from mappings placed by the kernel */
        zk_heap_lo = zk_start_brk();
        if (zk_heap_lo != 0) zk_heap_delta = (uintptr_t)ZK_HEAP_GUEST - zk_heap_lo;
    }
    zk_seg_paging = 0;
    zk_left = ZK_LIMIT;
    zk_user_total = zk_paging_total = zk_closed = zk_closed_padded = zk_page_ins = zk_page_outs = 0;
    zk_generation++;
    zk_forget();
}

/* total, user, paging, reserved, segments, page-ins, page-outs */
static void model_finish(uint64_t *out) {
    uint64_t segments = zk_closed + 1;
    uint64_t last = zk_seg_user() + zk_seg_paging + ZK_SEGMENT_RESERVED;
    out[0] = zk_closed_padded + zk_pow2(last);
    out[1] = zk_user_total + zk_seg_user();
    out[2] = zk_paging_total + zk_seg_paging;
    out[3] = segments * ZK_SEGMENT_RESERVED;
    out[4] = segments;
    out[5] = zk_page_ins;
    out[6] = zk_page_outs;
}

/* Cycles executed so far (user + paging, before padding and reservations), for regions. */
static inline uint64_t model_now(void) {
    return zk_user_total + zk_paging_total + zk_seg_user() + zk_seg_paging;
}
