/*
 * The RISC-V executor: runs a static riscv32/riscv64 Linux ELF (or calls functions of one) in
 * unicorn, with native hooks, and reports exactly which machine blocks ran.
 *
 * Built by cbuild/riscv/executor.py into a shared library, together with the C code of the cost models
 * that measure through it (their hooks are joined by a generated prelude that defines
 * rvx_models_block/access/reset/finish/now). Python (cbuild.riscv.executor) loads the ELF's segments,
 * lays out the stack, and drives runs and calls through the functions marked RVX_API.
 *
 * Blocks: unicorn's translated blocks, keyed by (start address, instruction count); each has an
 * execution count. A block ends at a control transfer, an ecall, a page end or unicorn's size
 * limit, so the executed instructions are exactly the sum of count x size over blocks. Memory
 * accesses are attributed to instructions by position: the k-th access in a block is made by its
 * k-th memory instruction (AMOs make two), which models use to place events exactly.
 *
 * Linux system calls: the few a static musl program makes (write, read, brk, mmap of anonymous
 * memory, exit, clock_gettime with a deterministic clock, ...); the rest return -ENOSYS.
 *
 * With RVX_TRANSLATED defined the same executor runs the ELF's code translated to native code
 * (cbuild/riscv/translate.py) instead of unicorn: guest memory is a reserved 4 GiB range of this
 * process, registers live in ``rvx_cpu`` between calls of translated functions, and the
 * translated functions count each block (rvt_counts, rvt_executed), tell the models through
 * rvt_block and report each access through rvt_access, so the models see the same events in the
 * same order. A guest pc without a translation, an access outside mapped memory, or the
 * instruction limit end the run with RVX_FALLBACK: the caller runs it again in unicorn.
 */
#define _DEFAULT_SOURCE 1 /* MAP_ANONYMOUS, MAP_NORESERVE, madvise */
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#ifndef RVX_TRANSLATED
#include <unicorn/unicorn.h>
#endif
#include <unistd.h>

#define RVX_API __attribute__((visibility("default")))
/* A function on a rare path of the models' hooks (for model code): not inlined, and where the
 * translated form runs on x86-64 or AArch64 called without clobbering the caller's registers, so
 * that translated code keeps the guest's registers in host registers around its calls. (Only C
 * calls it: the translation's own calls into this file use the C calling convention.) */
#if defined(RVX_TRANSLATED) && defined(__clang__) && (defined(__x86_64__) || defined(__aarch64__))
#define RVX_SLOW __attribute__((noinline, preserve_most))
#else
#define RVX_SLOW __attribute__((noinline))
#endif

/* Run outcomes (rvx_run). */
#define RVX_EXITED 0   /* the program made the exit system call */
#define RVX_RETURNED 1 /* a called function returned to the stop address */
#define RVX_FAULT 2    /* an exception or unmapped access: see rvx_error */
#define RVX_LIMIT 3    /* the instruction limit was reached */
#define RVX_READY 4    /* a library guest's main announced it is ready for calls */
#define RVX_FALLBACK 5 /* the translated code cannot go on: run again in unicorn (see rvx_error) */
#define RVX_STOPPED 6  /* a model's clock had passed its cut-off when the block at the pc was to start */

#define SYS_READY 0x7f00 /* the ecall number a library guest's main makes once libc is set up */
#define RVX_MAX_MODELS 4

typedef struct rvx_block {
    uint64_t pc;
    uint64_t count;
    uint32_t n;      /* instructions, without a region marker that ends the block */
    uint32_t size;   /* instructions unicorn translated (the lookup key) */
    uint64_t fall;   /* where execution falls through to, past region markers */
    uint32_t id;     /* order of first execution */
    uint32_t nmem;   /* memory accesses the block's instructions make */
    uint32_t page_events; /* the most first touches of 1 KiB pages the accesses can make (rvx_page_events) */
    uint32_t transfer; /* the last instruction is a branch or jump */
    uint16_t *memidx; /* instruction index of each access */
    const int32_t *data[RVX_MAX_MODELS]; /* per-model data from the host (rvx_set_block_data), or in a
                                            translation the translation's (constants there), read-only */
    uint32_t data_len[RVX_MAX_MODELS];
    uint32_t given; /* bit m: data[m] is the translation's or the host's known data (not freed with the block) */
    uint64_t scratch[RVX_MAX_MODELS][4]; /* each model's own (RVX_SCRATCH), zero in a new block */
} rvx_block;

/* Block ``b``'s four words of the model's own: zero when the machine first meets the block and
 * again when rvx_restart restarts the machine, kept across resets otherwise (a model that resets
 * its state must not trust what it wrote before). */
#define RVX_SCRATCH(b) ((uint64_t *)(b)->scratch[RVX_MODEL])

/* Called once for each new block, for each model that asks for host-computed block data. */
typedef void (*rvx_block_cb)(uint32_t model, uint32_t id, uint64_t pc, uint32_t n, const uint32_t *words);

typedef struct rvx rvx;

#define RVX_MAX_DEPTH 64
#define RVX_NO_REGION 0xffffffffu
#define RVX_ZEROED 3                    /* ranges rvx_map_zero maps */
#define RVX_RESTART_UNMAP ((uint64_t)32 << 20) /* bytes rvx_restart unmaps at most */
typedef struct rvx_region {
    uint32_t parent, name;
    uint64_t count;
    uint64_t sum[RVX_MAX_MODELS];
} rvx_region;

/* The guest registers as translated code reads them (x0..x31 at 8-byte steps, then pc, the memory
 * base and the reason a translated function returned): the offsets are part of the translation. */
typedef struct rvx_cpu {
    uint64_t reg[32];
    uint64_t pc;
    uint8_t *mem;
    uint32_t reason;
    uint64_t reserved, reserved_value; /* lr's reservation: address (all ones: none) and the value read */
} rvx_cpu;

struct rvx {
    rvx_cpu cpu; /* first: translated code addresses it from the rvx pointer */
#ifdef RVX_TRANSLATED
    uint8_t *pages; /* one byte per 4 KiB guest page: mapped or not */
    uint64_t *recent_pc; /* rvt_lookup's table of recent lookups */
    uint64_t (**recent)(struct rvx *, uint64_t);
#else
    uc_engine *uc;
    /* The state rvx_seal kept for later runs of the program (rvx_restart): the CPU, the mapped
     * regions and the memory layout's pointers. */
    uc_context *sealed_cpu;
    uc_mem_region *sealed;
    uint32_t nsealed;
    uint64_t sealed_brk_mapped, sealed_mmap_next;
    /* Memory rvx_map_zero mapped (the stack, the return page, the heap), in host memory of the
     * executor's own that rvx_restart gives back to the kernel, so that it is zero again. */
    struct rvx_zeroed {
        uint8_t *host;
        uint64_t len;
    } zeroed[RVX_ZEROED];
#endif
    int xlen;
    rvx_block **table; /* open addressing on (pc, n) */
    uint32_t table_size, nblocks;
    rvx_block **order; /* blocks by id */
    uint32_t order_cap;
    rvx_block *cur;
    uint32_t access; /* accesses seen in the current block */
    uint64_t executed, limit;
    /* Cut-offs on the models' clocks (rvx_set_cutoff): bit m of ``cutoffs`` set if model m has one,
     * at ``cutoff[m]``; the clocks are next looked at when a block would end past ``check_at``
     * executed instructions. A run stopped there (RVX_STOPPED) says which model, its clock, and the
     * block it did not start. */
    uint64_t cutoff[RVX_MAX_MODELS], check_at, stop_clock, stop_pc;
    uint32_t cutoffs, stop_model;
    int status, exit_code, stop_requested;
    char error[256];
    uint8_t *in;
    size_t in_len, in_pos;
    uint8_t *out[2];
    size_t out_len[2], out_cap[2];
    uint64_t brk_start, brk, brk_mapped, mmap_next, mmap_end;
    rvx_block_cb block_cb;
    const int32_t *const *given_data; /* per model: the data of the block being made, if the translation has it */
    const uint32_t *given_len;
    uint32_t data_models; /* bit i: model i wants block data */
    /* Per model: block data the host knew before the run (rvx_known_block_data), entries sorted by
     * address; entry i has words[word_at[i] .. word_at[i+1]) and data[data_at[i] .. data_at[i+1]). */
    struct rvx_known {
        uint32_t count;
        const uint64_t *pc;
        const uint32_t *word_at, *words, *data_at;
        const int32_t *data;
    } known[RVX_MAX_MODELS];
    /* Region markers (instructions the models do not see): sorted addresses, kind, name id. */
    uint64_t *mark_at;
    uint32_t *mark_kind, *mark_name, nmarks;
    /* Regions: a tree of (parent, name) nodes with executions and per-model clock sums, and
     * the stack of open regions with their clocks at the start. */
    rvx_region *regions;
    uint32_t nregions, regions_cap, depth;
    uint32_t open[RVX_MAX_DEPTH];
    uint64_t open_at[RVX_MAX_DEPTH][RVX_MAX_MODELS];
};

/* ---- the models' hooks (generated prelude) ---- */
#ifdef RVX_TRANSLATED
/* Inlined into each translated block, where the block's facts are constants. */
#define RVX_INLINE static inline __attribute__((always_inline))
#else
#define RVX_INLINE static inline
#endif
/* The instructions executed in this measurement, those of the block that starts included: what the
 * models read as RVX_EXECUTED in their hooks (in translated code, a value in a register). */
static uint64_t rvx_models_executed;
#define RVX_EXECUTED rvx_models_executed
/* Nonzero while a block hook runs for a block whose start found every model's room (model_room)
 * at least RVX_EXECUTED plus the block's slack (model_block_slack): in translated code the one
 * check of the instruction limit says so, and a model's hook folds its own check away.
 * RVX_FOLLOWS, only with RVX_ROOMY: the block that ran just before, which itself started with room,
 * has instructions on every 1 KiB page this block's instructions lie on (translated code knows it
 * where one block's check covered the next, translate.py's _covers, which every model of the run
 * asks for by defining RVX_ROOM_TAKEN), so a model that tracks the pages code is fetched from has
 * nothing to do for this block's. */
#ifdef RVX_TRANSLATED
static uint32_t rvx_models_roomy, rvx_models_follows;
#define RVX_ROOMY rvx_models_roomy
#define RVX_FOLLOWS rvx_models_follows
#else
#define RVX_ROOMY 0u
#define RVX_FOLLOWS 0u
#endif
/* A model calls RVX_ROOM_CHANGED() whenever what its model_room() returns changes. */
static void rvx_room_changed(void);
#define RVX_ROOM_CHANGED() rvx_room_changed()
RVX_INLINE void rvx_models_block(const rvx_block *b);
RVX_INLINE uint64_t rvx_models_slack(uint64_t pc, uint32_t n, uint32_t nmem);
static int64_t rvx_models_room(void);
RVX_INLINE uint32_t rvx_models_cover(void);
RVX_INLINE uint32_t rvx_models_bounded(void);
RVX_INLINE void rvx_models_access(uint64_t address, uint32_t size, uint32_t is_store, uint32_t index);
RVX_INLINE uint32_t rvx_models_accesses_done(uint64_t first, uint64_t last, uint32_t is_store);
static void rvx_models_reset(void);
static void rvx_models_finish(uint64_t *out);
static void rvx_models_now(uint64_t *out);
static void rvx_models_clock_step(uint64_t *out);
#ifndef RVX_MEMORY_EVENTS
#define RVX_MEMORY_EVENTS 0
#endif

/* ---- the machine: memory, registers, stopping (unicorn, or this process for translated code) ---- */

#define PAGE 4096u
#define ALIGN_UP(v) (((v) + PAGE - 1) & ~(uint64_t)(PAGE - 1))
/* Register numbers as the API takes them: unicorn's (x0..x31 are 1..32). */
#define RVX_REG_X0 1
#ifdef RVX_TRANSLATED
#define RVX_REG_PC 33 /* in unicorn.h the CSRs and F registers come before the pc: it is no register number of the API */
#else
#define RVX_REG_PC UC_RISCV_REG_PC
#endif
#define RVX_REG_A0 (RVX_REG_X0 + 10)
#define RVX_REG_A7 (RVX_REG_X0 + 17)

#ifdef RVX_TRANSLATED
/* The translation (cbuild/riscv/translate.py): its blocks, and its entry points sorted by guest pc. */
typedef uint64_t (*rvt_code)(struct rvx *x, uint64_t pc);
extern const uint32_t rvt_block_count, rvt_entry_count;
extern rvx_block *rvt_block_slot[]; /* per block of the translation: its rvx_block in this run */
extern uint64_t rvt_counts[];       /* per block of the translation: its executions in this run */
extern const uint64_t rvt_entry_pc[];
/* The hot blocks whose models' data the translation has: found (rvt_first_entry) before a run
 * starts, so that the translated code counts them without checking for a first entry. */
typedef struct {
    uint64_t pc;
    uint32_t number, size, n, nmem; /* its index in rvt_block_slot, words, instructions, accesses */
    const int32_t *const *data;
    const uint32_t *len;
} rvt_ready_block;
extern const uint32_t rvt_ready_count;
extern const rvt_ready_block rvt_ready[];
extern const uint32_t rvt_code_range_count;
extern const uint64_t rvt_code_ranges[]; /* page-aligned [start, end) pairs holding the translated code */
extern const rvt_code rvt_entry_code[];
/* While translated code runs: the instructions executed and the limit (the machine's ``executed``
 * and ``limit``, which the translated functions keep in registers and store back when they
 * return), and the block the run last left a translated function from or went round a loop in (an
 * index into rvt_block_slot; RVT_NONE before the first): exact at a system call or a marker. */
RVX_API uint64_t rvt_executed, rvt_limit;
RVX_API uint32_t rvt_current;
#define RVT_NONE UINT32_MAX

#define RVX_SPACE ((uint64_t)1 << 32) /* guest addresses the translated code can reach */
#define RVX_GUARD ((uint64_t)1 << 16) /* unmapped room after it for accesses that run past the end */

static int rvx_range_mapped(const rvx *x, uint64_t address, size_t len) {
    uint64_t page, last;
    if (len == 0) return 1;
    if (address >= RVX_SPACE || len > RVX_SPACE - address) return 0;
    last = (address + len - 1) / PAGE;
    for (page = address / PAGE; page <= last; page++)
        if (!x->pages[page]) return 0;
    return 1;
}

static int rvx_mem_read(rvx *x, uint64_t address, void *data, size_t len) {
    if (!rvx_range_mapped(x, address, len)) return -1;
    memcpy(data, x->cpu.mem + address, len);
    return 0;
}

static int rvx_mem_write(rvx *x, uint64_t address, const void *data, size_t len) {
    if (!rvx_range_mapped(x, address, len)) return -1;
    memcpy(x->cpu.mem + address, data, len);
    return 0;
}

/* Map whole pages [start, start + len): fails if one of them is mapped already (as uc_mem_map does). */
static int rvx_mem_map(rvx *x, uint64_t start, uint64_t len) {
    uint64_t page;
    if (start % PAGE || len % PAGE || start >= RVX_SPACE || len > RVX_SPACE - start) return -1;
    for (page = start / PAGE; page < (start + len) / PAGE; page++)
        if (x->pages[page]) return -1;
    if (mprotect(x->cpu.mem + start, len, PROT_READ | PROT_WRITE) != 0) return -1;
    memset(x->pages + start / PAGE, 1, len / PAGE);
    return 0;
}

/* Map [start, end) (page-aligned), leaving pages that are mapped already as they are. */
static int rvx_map_range(rvx *x, uint64_t start, uint64_t end) {
    uint64_t pos = start;
    if (end > RVX_SPACE) return -1;
    while (pos < end) {
        uint64_t run = pos;
        if (x->pages[pos / PAGE]) {
            pos += PAGE;
            continue;
        }
        while (run < end && !x->pages[run / PAGE]) run += PAGE;
        if (rvx_mem_map(x, pos, run - pos) != 0) return -1;
        pos = run;
    }
    return 0;
}

static uint64_t rvx_reg(rvx *x, int reg) {
    uint64_t v = reg == RVX_REG_PC ? x->cpu.pc : reg > RVX_REG_X0 && reg < RVX_REG_PC ? x->cpu.reg[reg - RVX_REG_X0] : 0;
    return x->xlen == 32 ? (uint32_t)v : v;
}

static void rvx_set(rvx *x, int reg, uint64_t v) {
    if (x->xlen == 32) v = (uint32_t)v;
    if (reg == RVX_REG_PC) x->cpu.pc = v;
    else if (reg > RVX_REG_X0 && reg < RVX_REG_PC) x->cpu.reg[reg - RVX_REG_X0] = v;
}

static void rvx_stop(rvx *x) { (void)x; /* the dispatcher sees x->stop_requested */ }

/* Map [start, end) (page-aligned, none of it mapped yet): what unicorn's machines map as memory a
 * restart makes zero. */
RVX_API int rvx_map_zero(rvx *x, uint64_t start, uint64_t end) { return end <= start ? -1 : rvx_mem_map(x, start, end - start); }
#else
static int rvx_mem_read(rvx *x, uint64_t address, void *data, size_t len) {
    return uc_mem_read(x->uc, address, data, len) == UC_ERR_OK ? 0 : -1;
}

static int rvx_mem_write(rvx *x, uint64_t address, const void *data, size_t len) {
    return uc_mem_write(x->uc, address, data, len) == UC_ERR_OK ? 0 : -1;
}

static int rvx_mem_map(rvx *x, uint64_t start, uint64_t len) {
    return uc_mem_map(x->uc, start, len, UC_PROT_ALL) == UC_ERR_OK ? 0 : -1;
}

/* Map [start, end) (page-aligned), leaving pages that are mapped already as they are. */
static int rvx_map_range(rvx *x, uint64_t start, uint64_t end) {
    uc_mem_region *regions = NULL;
    uint32_t count = 0, i;
    uint64_t pos = start;
    if (uc_mem_regions(x->uc, &regions, &count) != UC_ERR_OK) return -1;
    while (pos < end) {
        uint64_t gap_end = end;
        int inside = 0;
        for (i = 0; i < count; i++) {
            if (regions[i].begin <= pos && pos <= regions[i].end) {
                pos = regions[i].end + 1; /* end is inclusive */
                inside = 1;
                break;
            }
            if (regions[i].begin > pos && regions[i].begin < gap_end) gap_end = regions[i].begin;
        }
        if (inside) continue;
        if (rvx_mem_map(x, pos, gap_end - pos) != 0) {
            uc_free(regions);
            return -1;
        }
        pos = gap_end;
    }
    uc_free(regions);
    return 0;
}

static uint64_t rvx_reg(rvx *x, int reg) {
    uint64_t v = 0;
    uc_reg_read(x->uc, reg, &v);
    return x->xlen == 32 ? (uint32_t)v : v;
}

static void rvx_set(rvx *x, int reg, uint64_t v) {
    if (x->xlen == 32) {
        uint32_t w = (uint32_t)v;
        uc_reg_write(x->uc, reg, &w);
    } else {
        uc_reg_write(x->uc, reg, &v);
    }
}

static void rvx_stop(rvx *x) { uc_emu_stop(x->uc); }
#endif

/* ---- instruction decoding (only what block bookkeeping needs) ---- */

static uint32_t rvx_accesses(uint32_t w) {
    uint32_t op = w & 0x7f;
    if (op == 0x03 || op == 0x07 || op == 0x23 || op == 0x27) return 1; /* loads, stores (also FP) */
    if (op == 0x2f) {
        uint32_t f5 = w >> 27;
        return (f5 == 0x02 || f5 == 0x03) ? 1 : 2; /* lr, sc: one; AMOs read and write */
    }
    return 0;
}

/* The most first touches of a 1 KiB page, one for reading and another for writing, that the
 * accesses of the ``n`` instructions ``words`` can make: the pages each access can touch, for
 * reading and, if it writes, for writing; except that loads and stores through one base register
 * that no instruction between them changes, all within 1 KiB of each other, touch two pages at most
 * between them. */
static uint32_t rvx_page_events(const uint32_t *words, uint32_t n) {
    struct rvx_group {
        int32_t lo, hi;   /* the offsets from the base register the group's accesses span */
        uint32_t live;    /* the base register has not changed since the group started */
        uint32_t writes;  /* one of them writes */
    } group[32];
    uint32_t i, events = 0;
    memset(group, 0, sizeof group);
    for (i = 0; i < n; i++) {
        uint32_t w = words[i], op = w & 0x7f, rd = (w >> 7) & 31, f3 = (w >> 12) & 7, rs1 = (w >> 15) & 31;
        if (op == 0x03 || op == 0x23) {
            uint32_t store = op == 0x23;
            struct rvx_group *g = &group[rs1];
            int32_t lo = store ? (int32_t)(((int32_t)w >> 25) * 32 + (int32_t)rd) : (int32_t)w >> 20;
            int32_t hi = lo + (1 << (f3 & 3)) - 1;
            int32_t low = g->live && g->lo < lo ? g->lo : lo, high = g->live && g->hi > hi ? g->hi : hi;
            if (!g->live || high - low >= 1024) { /* a new group: two pages read at most */
                g->live = 1;
                g->writes = 0;
                low = lo;
                high = hi;
                events += 2;
            }
            g->lo = low;
            g->hi = high;
            if (store && !g->writes) { /* and written */
                g->writes = 1;
                events += 2;
            }
        } else if (op == 0x07) { /* a floating-point load: two pages read */
            events += 2;
        } else if (op == 0x27) { /* a floating-point store: two pages read and written */
            events += 4;
        } else if (op == 0x2f) { /* lr reads, sc reads and writes, other atomics read, then write */
            events += (w >> 27) == 0x02 ? 2 : (w >> 27) == 0x03 ? 4 : 6;
        }
        if (rd != 0 && op != 0x23 && op != 0x27 && op != 0x63 && op != 0x0f && op != 0x73) group[rd].live = 0;
    }
    return events;
}

static uint32_t rvx_is_transfer(uint32_t w) {
    uint32_t op = w & 0x7f;
    return op == 0x63 || op == 0x6f || op == 0x67;
}

/* ---- blocks ---- */

static uint64_t rvx_hash(uint64_t pc, uint32_t n) {
    uint64_t h = (pc ^ ((uint64_t)n << 40)) * 0x9E3779B97F4A7C15ull;
    return h >> 20;
}

static void rvx_grow_table(rvx *x) {
    uint32_t size = x->table_size ? x->table_size * 2 : 4096, i;
    rvx_block **table = calloc(size, sizeof *table);
    if (table == NULL) abort();
    for (i = 0; i < x->nblocks; i++) {
        rvx_block *b = x->order[i];
        uint64_t h = rvx_hash(b->pc, b->size) & (size - 1);
        while (table[h] != NULL) h = (h + 1) & (size - 1);
        table[h] = b;
    }
    free(x->table);
    x->table = table;
    x->table_size = size;
}

static int rvx_is_marker(const rvx *x, uint64_t address, uint32_t *index) {
    uint32_t lo = 0, hi = x->nmarks;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (x->mark_at[mid] < address) lo = mid + 1;
        else hi = mid;
    }
    if (lo < x->nmarks && x->mark_at[lo] == address) {
        if (index != NULL) *index = lo;
        return 1;
    }
    return 0;
}

/* Model m's data for the block of n instructions ``words`` at ``pc``, if the host gave it before the
 * run (NULL if not: then the block callback computes it). */
static const int32_t *rvx_known_data(const rvx *x, uint32_t m, uint64_t pc, uint32_t n, const uint32_t *words,
                                     uint32_t *len) {
    const struct rvx_known *k = &x->known[m];
    uint32_t lo = 0, hi = k->count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (k->pc[mid] < pc) lo = mid + 1;
        else hi = mid;
    }
    for (; lo < k->count && k->pc[lo] == pc; lo++) {
        uint32_t at = k->word_at[lo];
        if (k->word_at[lo + 1] - at == n && memcmp(k->words + at, words, 4 * (size_t)n) == 0) {
            *len = k->data_at[lo + 1] - k->data_at[lo];
            return k->data + k->data_at[lo];
        }
    }
    return NULL;
}

static rvx_block *rvx_new_block(rvx *x, uint64_t pc, uint32_t size, uint64_t slot) {
    rvx_block *b = calloc(1, sizeof *b);
    uint32_t *words = malloc(4 * (size_t)(size ? size : 1)), i, k = 0, m, n = size, known_len;
    const int32_t *known;
    if (b == NULL || words == NULL) abort();
    /* A region marker is an illegal instruction, so it always ends its block: the models see the block without it. */
    if (n > 0 && rvx_is_marker(x, pc + 4u * (uint64_t)(n - 1), NULL)) n--;
    b->pc = pc;
    b->n = n;
    b->size = size;
    b->fall = pc + 4u * (uint64_t)size;
    while (rvx_is_marker(x, b->fall, NULL)) b->fall += 4;
    b->id = x->nblocks;
    if (rvx_mem_read(x, pc, words, 4 * (size_t)size) != 0) memset(words, 0, 4 * (size_t)size);
    for (i = 0; i < n; i++) b->nmem += rvx_accesses(words[i]);
    b->page_events = rvx_page_events(words, n);
    b->memidx = malloc(sizeof(uint16_t) * (b->nmem ? b->nmem : 1));
    if (b->memidx == NULL) abort();
    for (i = 0; i < n; i++)
        for (m = rvx_accesses(words[i]); m > 0; m--) b->memidx[k++] = (uint16_t)i;
    b->transfer = n > 0 && rvx_is_transfer(words[n - 1]);
    if (x->nblocks == x->order_cap) {
        x->order_cap = x->order_cap ? 2 * x->order_cap : 4096;
        x->order = realloc(x->order, x->order_cap * sizeof *x->order);
        if (x->order == NULL) abort();
    }
    x->order[x->nblocks++] = b;
    x->table[slot] = b;
    for (m = 0; m < RVX_MAX_MODELS; m++)
        if ((x->data_models >> m) & 1u) {
            if (x->given_data != NULL && x->given_data[m] != NULL) {
                b->data[m] = x->given_data[m];
                b->data_len[m] = x->given_len[m];
                b->given |= 1u << m;
            } else if ((known = rvx_known_data(x, m, pc, n, words, &known_len)) != NULL) {
                b->data[m] = known;
                b->data_len[m] = known_len;
                b->given |= 1u << m;
            } else if (x->block_cb != NULL) {
                x->block_cb(m, b->id, pc, n, words);
            }
        }
    free(words);
    if (2 * x->nblocks > x->table_size) rvx_grow_table(x);
    return b;
}

static rvx_block *rvx_find(rvx *x, uint64_t pc, uint32_t n) {
    uint64_t h = rvx_hash(pc, n) & (x->table_size - 1);
    rvx_block *b;
    while ((b = x->table[h]) != NULL) {
        if (b->pc == pc && b->size == n) return b;
        h = (h + 1) & (x->table_size - 1);
    }
    return rvx_new_block(x, pc, n, h);
}

/* The machine that runs now: the start of its current block (in translated code, of a block in the
 * loop it goes round), for a caller whose time limit passed, is written to stderr on SIGUSR2 as
 * "instrbudget-guest-pc: 0x...", while the run goes on (cbuild/riscv/executor.py). */
static rvx *volatile rvx_where;

static void rvx_say_where(int sig) {
    static const char digits[] = "0123456789abcdef";
    char line[64] = "\ninstrbudget-guest-pc: 0x";
    size_t n = sizeof "\ninstrbudget-guest-pc: 0x" - 1;
    rvx *x = rvx_where;
#ifdef RVX_TRANSLATED
    uint32_t at = *(volatile uint32_t *)&rvt_current;
    const rvx_block *b = x != NULL && at < rvt_block_count ? *(rvx_block *volatile *)&rvt_block_slot[at] : NULL;
#else
    const rvx_block *b = x != NULL ? *(rvx_block *volatile *)&x->cur : NULL;
#endif
    uint64_t pc = b != NULL ? b->pc : 0;
    (void)sig;
    for (int shift = 60; shift >= 0; shift -= 4) line[n++] = digits[(pc >> shift) & 15];
    line[n++] = '\n';
    if (write(2, line, n) < 0) return; /* nothing more to do in a signal handler */
}

/* ---- cut-offs on the models' clocks ---- */

/* Whether a model's clock has passed its cut-off with ``executed`` instructions run, at the start
 * of a block (then the run stops there, before the block). If not, when to look again: each
 * model's clock grows by at most its model_clock_step() per instruction, so none can pass its
 * cut-off before the executed instructions pass ``check_at`` (a model without a bound is looked at
 * before every block). Called only where a block would end past ``check_at``: an optimisation
 * that changes no stop, which is the first block whose start finds a clock past its cut-off. */
RVX_SLOW static int rvx_clock_passed(rvx *x, uint64_t executed) {
    uint64_t now[RVX_MAX_MODELS] = {0}, step[RVX_MAX_MODELS] = {0}, next = UINT64_MAX;
    uint32_t m;
    rvx_models_executed = executed;
    rvx_models_now(now);
    rvx_models_clock_step(step);
    for (m = 0; m < RVX_MAX_MODELS; m++) {
        uint64_t room;
        if (!((x->cutoffs >> m) & 1u)) continue;
        if (now[m] > x->cutoff[m]) {
            x->stop_model = m;
            x->stop_clock = now[m];
            return 1;
        }
        room = step[m] ? (x->cutoff[m] - now[m]) / step[m] : UINT64_MAX;
        if (room > UINT64_MAX - executed) room = UINT64_MAX - executed;
        if (executed + room < next) next = executed + room;
    }
    x->check_at = next;
    return 0;
}

/* The run stops before the block at ``pc``: a clock passed its cut-off. */
static void rvx_stop_at_cutoff(rvx *x, uint64_t pc) {
    x->status = RVX_STOPPED;
    x->stop_requested = 1;
    x->stop_pc = pc;
}

/* Something that can move the clocks outside blocks ran (a system call writing guest memory):
 * look at them before the next block. */
static void rvx_look_again(rvx *x) {
    if (x->cutoffs) x->check_at = x->executed;
}

#ifndef RVX_TRANSLATED
/* A block starts: count it and tell the models; nonzero once the instruction limit is passed (the
 * translated code does the same in the translation: cbuild/riscv/translate.py). */
static inline int rvx_enter(rvx *x, rvx_block *b) {
    b->count++;
    x->cur = b;
    x->access = 0; /* unicorn's memory hook numbers the block's accesses */
    x->executed += b->n;
    rvx_models_executed = x->executed;
    if (b->n > 0) rvx_models_block(b);
    return x->executed > x->limit;
}

static void rvx_on_block(uc_engine *uc, uint64_t address, uint32_t size, void *data) {
    rvx *x = data;
    rvx_block *b;
    if (x->status == RVX_STOPPED) return; /* unicorn may still run the block it was stopped before */
    b = rvx_find(x, address, size >> 2);
    if (x->executed + b->n > x->check_at && rvx_clock_passed(x, x->executed)) {
        rvx_stop_at_cutoff(x, address);
        uc_emu_stop(uc);
        return;
    }
    if (rvx_enter(x, b)) {
        x->status = RVX_LIMIT;
        x->stop_requested = 1;
        uc_emu_stop(uc);
    }
}

static void rvx_on_memory(uc_engine *uc, uc_mem_type type, uint64_t address, int size, int64_t value, void *data) {
    rvx *x = data;
    rvx_block *b = x->cur;
    uint32_t index = 0;
    (void)uc;
    (void)value;
    if (x->status == RVX_STOPPED) return; /* the block the run stopped before: not measured */
    if (b != NULL) index = x->access < b->nmem ? b->memidx[x->access] : (b->n ? b->n - 1 : 0);
    x->access++;
    rvx_models_access(address, (uint32_t)size, type == UC_MEM_WRITE, index);
}
#endif

/* ---- system calls ---- */

enum {
    NR_IOCTL = 29, NR_CLOSE = 57, NR_READ = 63, NR_WRITE = 64, NR_READV = 65, NR_WRITEV = 66, NR_EXIT = 93,
    NR_EXIT_GROUP = 94, NR_SET_TID_ADDRESS = 96, NR_CLOCK_GETTIME = 113, NR_SCHED_GETAFFINITY = 123,
    NR_TKILL = 130, NR_RT_SIGACTION = 134, NR_RT_SIGPROCMASK = 135, NR_GETPID = 172, NR_GETUID = 174,
    NR_GETEUID = 175, NR_GETGID = 176, NR_GETEGID = 177, NR_GETTID = 178, NR_BRK = 214, NR_MUNMAP = 215,
    NR_MMAP = 222, NR_MPROTECT = 226, NR_MADVISE = 233, NR_CLOCK_GETTIME64 = 403,
};
#define E_BADF 9
#define E_NOMEM 12
#define E_INVAL 22
#define E_NOTTY 25
#define E_NOSYS 38
#define E_FAULT 14
static const int rvx_args[6] = {RVX_REG_A0, RVX_REG_A0 + 1, RVX_REG_A0 + 2,
                                RVX_REG_A0 + 3, RVX_REG_A0 + 4, RVX_REG_A0 + 5};

/* Data the host writes into guest memory is a store by the ecall instruction, for the models. */
static void rvx_host_wrote(rvx *x, uint64_t address, uint64_t size) {
    if (RVX_MEMORY_EVENTS && size > 0 && x->cur != NULL) {
        uint64_t a;
        for (a = address; a < address + size; a = (a | 1023u) + 1) {
            uint64_t end = (a | 1023u) + 1;
            rvx_models_access(a, (uint32_t)((end < address + size ? end : address + size) - a), 1, x->cur->n - 1);
        }
    }
}

static int64_t rvx_write_fd(rvx *x, uint64_t fd, uint64_t address, uint64_t len) {
    int which;
    if (fd != 1 && fd != 2) return -E_BADF;
    which = (int)fd - 1;
    if (x->out_len[which] + len > x->out_cap[which]) {
        size_t cap = x->out_cap[which] ? x->out_cap[which] : 4096;
        while (cap < x->out_len[which] + len) cap *= 2;
        x->out[which] = realloc(x->out[which], cap);
        if (x->out[which] == NULL) abort();
        x->out_cap[which] = cap;
    }
    if (len && rvx_mem_read(x, address, x->out[which] + x->out_len[which], len) != 0) return -E_FAULT;
    x->out_len[which] += len;
    return (int64_t)len;
}

static int64_t rvx_read_fd(rvx *x, uint64_t fd, uint64_t address, uint64_t len) {
    size_t n;
    if (fd != 0) return -E_BADF;
    n = x->in_len - x->in_pos < len ? x->in_len - x->in_pos : len;
    if (n && rvx_mem_write(x, address, x->in + x->in_pos, n) != 0) return -E_FAULT;
    rvx_host_wrote(x, address, n);
    x->in_pos += n;
    return (int64_t)n;
}

static int64_t rvx_vector(rvx *x, int writing, uint64_t fd, uint64_t iov, uint64_t count) {
    int64_t total = 0, got;
    uint64_t i, width = (uint64_t)x->xlen / 8;
    for (i = 0; i < count; i++) {
        uint64_t base = 0, len = 0;
        if (rvx_mem_read(x, iov + i * 2 * width, &base, width) != 0 ||
            rvx_mem_read(x, iov + i * 2 * width + width, &len, width) != 0)
            return -E_FAULT;
        got = writing ? rvx_write_fd(x, fd, base, len) : rvx_read_fd(x, fd, base, len);
        if (got < 0) return got;
        total += got;
        if (!writing && (uint64_t)got < len) break;
    }
    return total;
}

static int64_t rvx_brk(rvx *x, uint64_t address) {
    uint64_t end;
    if (address <= x->brk_start) return (int64_t)x->brk;
    end = ALIGN_UP(address);
    if (end > x->mmap_next) return (int64_t)x->brk;
    if (end > x->brk_mapped) {
        if (rvx_map_range(x, x->brk_mapped, end) != 0) return (int64_t)x->brk;
        x->brk_mapped = end;
    }
    x->brk = address;
    return (int64_t)x->brk;
}

static int64_t rvx_mmap(rvx *x, uint64_t address, uint64_t len, uint64_t flags, int64_t fd) {
    uint64_t start;
    if (!(flags & 0x20) || fd != -1) return -E_NOSYS; /* anonymous memory only */
    if (len == 0) return -E_INVAL;
    len = ALIGN_UP(len);
    if (flags & 0x10) { /* MAP_FIXED */
        uint8_t *zeros;
        if (address & (PAGE - 1)) return -E_INVAL;
        if (rvx_map_range(x, address, address + len) != 0) return -E_NOMEM;
        zeros = calloc(1, len);
        if (zeros == NULL) abort();
        rvx_mem_write(x, address, zeros, len);
        free(zeros);
        return (int64_t)address;
    }
    start = x->mmap_next;
    if (start + len > x->mmap_end) return -E_NOMEM;
    /* Pages mapped already (the heap's, mapped with the machine) are zero unless the guest wrote
     * there before it asked for them: the same in every run. */
    if (rvx_map_range(x, start, start + len) != 0) return -E_NOMEM;
    x->mmap_next = start + len; /* never reused: runs stay deterministic */
    return (int64_t)start;
}

static int64_t rvx_syscall(rvx *x, uint64_t nr, const uint64_t *a) {
    switch (nr) {
    case NR_EXIT:
    case NR_EXIT_GROUP:
        x->exit_code = (int)(a[0] & 0xff);
        x->status = RVX_EXITED;
        x->stop_requested = 1;
        rvx_stop(x);
        return 0;
    case SYS_READY:
        x->status = RVX_READY;
        x->stop_requested = 1;
        rvx_stop(x);
        return 0;
    case NR_WRITE: return rvx_write_fd(x, a[0], a[1], a[2]);
    case NR_WRITEV: return rvx_vector(x, 1, a[0], a[1], a[2]);
    case NR_READ: return rvx_read_fd(x, a[0], a[1], a[2]);
    case NR_READV: return rvx_vector(x, 0, a[0], a[1], a[2]);
    case NR_BRK: return rvx_brk(x, a[0]);
    case NR_MMAP: return rvx_mmap(x, a[0], a[1], a[3], x->xlen == 32 ? (int32_t)a[4] : (int64_t)a[4]);
    case NR_MUNMAP: return 0; /* addresses are never reused; the memory stays mapped */
    case NR_TKILL:
        x->exit_code = 128 + (int)a[1]; /* killed by a signal (abort), as a shell reports it */
        x->status = RVX_EXITED;
        x->stop_requested = 1;
        rvx_stop(x);
        return 0;
    case NR_CLOCK_GETTIME64:
    case NR_CLOCK_GETTIME: { /* a deterministic clock: one nanosecond per instruction */
        int64_t ts[2] = {(int64_t)(x->executed / 1000000000u), (int64_t)(x->executed % 1000000000u)};
        if (nr == NR_CLOCK_GETTIME && x->xlen == 32) return -E_NOSYS;
        if (rvx_mem_write(x, a[1], ts, sizeof ts) != 0) return -E_FAULT;
        rvx_host_wrote(x, a[1], sizeof ts);
        return 0;
    }
    case NR_SCHED_GETAFFINITY: { /* one CPU */
        uint32_t one = 1;
        if (a[1] < 4) return -E_INVAL;
        if (rvx_mem_write(x, a[2], &one, 4) != 0) return -E_FAULT;
        rvx_host_wrote(x, a[2], 4);
        return 4;
    }
    case NR_IOCTL: return -E_NOTTY;
    case NR_CLOSE: return a[0] <= 2 ? 0 : -E_BADF;
    case NR_SET_TID_ADDRESS:
    case NR_GETPID:
    case NR_GETTID: return 1;
    case NR_RT_SIGACTION:
    case NR_RT_SIGPROCMASK:
    case NR_MPROTECT:
    case NR_MADVISE:
    case NR_GETUID:
    case NR_GETEUID:
    case NR_GETGID:
    case NR_GETEGID: return 0;
    default: return -E_NOSYS;
    }
}

/* ---- regions ---- */

static uint32_t rvx_region_node(rvx *x, uint32_t parent, uint32_t name) {
    uint32_t i;
    for (i = 0; i < x->nregions; i++)
        if (x->regions[i].parent == parent && x->regions[i].name == name) return i;
    if (x->nregions == x->regions_cap) {
        x->regions_cap = x->regions_cap ? 2 * x->regions_cap : 64;
        x->regions = realloc(x->regions, x->regions_cap * sizeof *x->regions);
        if (x->regions == NULL) abort();
    }
    memset(&x->regions[x->nregions], 0, sizeof *x->regions);
    x->regions[x->nregions].parent = parent;
    x->regions[x->nregions].name = name;
    return x->nregions++;
}

static void rvx_region_close(rvx *x, const uint64_t *now) {
    rvx_region *r;
    uint32_t m;
    if (x->depth == 0) return; /* unbalanced: the native build's regions report it */
    x->depth--;
    r = &x->regions[x->open[x->depth]];
    r->count++;
    for (m = 0; m < RVX_MAX_MODELS; m++) r->sum[m] += now[m] - x->open_at[x->depth][m];
}

/* The marker at ``address`` was reached (its block's instructions before it have run): 0 if there is none. */
static int rvx_region_marker(rvx *x, uint64_t address) {
    uint64_t now[RVX_MAX_MODELS] = {0};
    uint32_t index, kind, m;
    if (!rvx_is_marker(x, address, &index)) return 0;
    kind = x->mark_kind[index];
    rvx_models_executed = x->executed;
    rvx_models_now(now);
    if (kind != 0) rvx_region_close(x, now); /* stop, next */
    if (kind != 2 && x->depth < RVX_MAX_DEPTH) { /* start, next */
        uint32_t parent = x->depth ? x->open[x->depth - 1] : RVX_NO_REGION;
        x->open[x->depth] = rvx_region_node(x, parent, x->mark_name[index]);
        for (m = 0; m < RVX_MAX_MODELS; m++) x->open_at[x->depth][m] = now[m];
        x->depth++;
    }
    return 1;
}

/* The system call the guest's ecall makes: arguments in a0..a5, number in a7, result to a0. */
static void rvx_ecall(rvx *x) {
    uint64_t a[6];
    int i;
    int64_t result;
    for (i = 0; i < 6; i++) a[i] = rvx_reg(x, rvx_args[i]);
    result = rvx_syscall(x, rvx_reg(x, RVX_REG_A7), a);
    if (!x->stop_requested) rvx_set(x, RVX_REG_A0, (uint64_t)result);
    rvx_look_again(x);
}

/* Answer SIGUSR2 with this executor's machine: a process that has loaded both executors (unicorn's
 * and a translation's) answers with the one whose run started last. */
static void rvx_answer_where(void) {
    struct sigaction sa;
    if (sigaction(SIGUSR2, NULL, &sa) == 0 && sa.sa_handler == rvx_say_where) return;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = rvx_say_where;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR2, &sa, NULL);
}

static rvx *rvx_alloc(int xlen, uint64_t brk_start, uint64_t mmap_start, uint64_t mmap_end, rvx_block_cb cb,
                      uint32_t data_models) {
    rvx *x = calloc(1, sizeof *x);
    if (x == NULL) return NULL;
    rvx_answer_where();
    x->xlen = xlen;
    rvx_grow_table(x);
    x->brk_start = x->brk = x->brk_mapped = brk_start;
    x->mmap_next = mmap_start;
    x->mmap_end = mmap_end;
    x->block_cb = cb;
    x->data_models = data_models;
    x->limit = UINT64_MAX;
    x->check_at = UINT64_MAX;
    return x;
}

static void rvx_release(rvx *x) {
    uint32_t i, m;
    if (rvx_where == x) rvx_where = NULL; /* no run of a freed machine to report */
    for (i = 0; i < x->nblocks; i++) {
        rvx_block *b = x->order[i];
        for (m = 0; m < RVX_MAX_MODELS; m++)
            if (!((b->given >> m) & 1u)) free((void *)b->data[m]);
        free(b->memidx);
        free(b);
    }
    free(x->table);
    free(x->order);
    free(x->in);
    free(x->out[0]);
    free(x->out[1]);
    free(x->mark_at);
    free(x->mark_kind);
    free(x->mark_name);
    free(x->regions);
    free(x);
}

static void rvx_start_run(rvx *x, uint64_t limit) {
    x->status = -1;
    x->stop_requested = 0;
    x->error[0] = '\0';
    x->cur = NULL;
    rvx_where = x;
    rvx_answer_where();
    x->limit = limit > UINT64_MAX - x->executed ? UINT64_MAX : x->executed + limit;
}

#ifdef RVX_TRANSLATED
/* ---- translated code ---- */

_Static_assert(offsetof(rvx_cpu, mem) == 264 && offsetof(rvx_cpu, reason) == 272 && offsetof(rvx_cpu, reserved) == 280 &&
                   offsetof(rvx_cpu, reserved_value) == 288 && offsetof(rvx, cpu) == 0,
               "the translation's offsets (cbuild/riscv/translate.py)");
/* Why a translated function returned (rvx_cpu.reason); it returns the guest pc to go on at. */
#define RVT_JUMP 0     /* go on at the pc */
#define RVT_ECALL 1    /* the ecall before the pc ran: make the system call, then go on */
#define RVT_MARKER 2   /* the region marker before the pc was reached */
#define RVT_UNKNOWN 3  /* an instruction the translation does not handle is at the pc */
#define RVT_LIMIT 4    /* the instruction limit passed entering the block at the pc */
#define RVT_FAULT 5    /* an access outside the guest's address space, in the block at the pc */
#define RVT_CHANGED 6  /* the code of the block at the pc in guest memory is not the code translated */
#define RVT_STOPPED 7  /* a model's clock had passed its cut-off when the block at the pc was to start */

/* Guest calls the translated code makes as host calls, nested now (cbuild/riscv/translate.py). */
RVX_API uint32_t rvt_depth;

/* The machine rvx_run runs: the translated code calls the two functions below without it, so that
 * the compiler knows they cannot change the guest registers it keeps. */
static rvx *rvt_running;
static rvx *rvt_slots_of; /* the machine whose blocks rvt_block_slot holds */

/* A block's first entry in a run (its count in rvt_counts is 0; a ready block's, before the run
 * starts): its rvx_block, kept in its slot (``slot``, in rvt_block_slot) for the machine's later
 * runs, made if the machine has none yet (the host gives the models' data then, unless the
 * translation has it: ``data`` of ``len`` numbers per model, or NULL). 0, or RVT_CHANGED if the
 * code in guest memory does not have the facts the translation has (``size`` words, ``n``
 * instructions, ``nmem`` accesses, that data). */
RVX_API __attribute__((noinline)) int rvt_first_entry(rvx_block **slot, uint64_t pc, uint32_t size, uint32_t n,
                                                      uint32_t nmem, const int32_t *const *data, const uint32_t *len) {
    rvx *x = rvt_running;
    rvx_block *b;
    uint32_t m;
    if (*slot != NULL) return 0; /* checked in an earlier run of this machine */
    x->given_data = data;
    x->given_len = len;
    b = rvx_find(x, pc, size);
    x->given_data = NULL;
    x->given_len = NULL;
    if (b->n != n || b->nmem != nmem) return RVT_CHANGED;
    for (m = 0; data != NULL && m < RVX_MAX_MODELS; m++)
        if (data[m] != NULL && (b->data[m] != data[m] || b->data_len[m] != len[m])) return RVT_CHANGED;
    *slot = b;
    return 0;
}

/* A block with instructions starts (counted by the translation, past its first entry): the models'
 * block hook, with the instructions ``executed`` in the measurement (this block's included).
 * Inlined into each hot block, where the block's facts (``pc``, ``n`` instructions,
 * ``nmem`` accesses, and each model's block ``data`` of ``len`` numbers, or NULL for data the host
 * gave) are constants: the block in the slot has them (checked at its first entry; the code pages
 * are read-only), so the models' hooks fold them in. */
RVX_API __attribute__((always_inline)) void rvt_block(rvx_block *const *slot, uint64_t pc, uint32_t n, uint32_t nmem,
                                                    const int32_t *const *data, const uint32_t *len,
                                                    uint64_t executed, uint32_t roomy, uint32_t follows) {
    const rvx_block *b = *slot;
    rvx_models_executed = executed;
    rvx_models_roomy = roomy;
    rvx_models_follows = follows;
    if (b == NULL || b->pc != pc || b->n != n || b->nmem != nmem) __builtin_unreachable();
#define RVT_SAME_DATA(m)                                                                                      \
    if (data != NULL && data[m] != NULL && (b->data[m] != data[m] || b->data_len[m] != len[m]))              \
        __builtin_unreachable();
    RVT_SAME_DATA(0)
    RVT_SAME_DATA(1)
    RVT_SAME_DATA(2)
    RVT_SAME_DATA(3)
#undef RVT_SAME_DATA
    _Static_assert(RVX_MAX_MODELS == 4, "one RVT_SAME_DATA per model");
    rvx_models_block(b);
}

RVX_API __attribute__((always_inline)) void rvt_access(uint64_t address, uint32_t size, uint32_t is_store,
                                                            uint32_t index) {
    if (RVX_MEMORY_EVENTS) rvx_models_access(address, size, is_store, index);
}

/* Accesses of one kind that a hot block is about to make, all between addresses ``first`` and
 * ``last`` (from one base register, less than 1 KiB apart): nonzero if the models' access hooks
 * would change nothing for any of them, so the translation skips them (rvt_access_unless). */
RVX_API __attribute__((always_inline)) uint32_t rvt_accesses_done(uint64_t first, uint64_t last, uint32_t is_store) {
    return rvx_models_accesses_done(first, last, is_store); /* 1 if no model asks for accesses */
}

RVX_API __attribute__((always_inline)) void rvt_access_unless(uint32_t done, uint64_t address, uint32_t size,
                                                           uint32_t is_store, uint32_t index) {
    if (!done) rvt_access(address, size, is_store, index);
}

/* The instruction count rvt_limit the translated code checks: the first of the limit, where the
 * clocks are looked at next, and the models' room (a hot block checks its end plus its slack
 * against it, a block that runs rarely its end). */
static uint64_t rvt_check_limit(const rvx *x) {
    uint64_t limit = x->check_at < x->limit ? x->check_at : x->limit;
    int64_t room = rvx_models_room();
    if (room < 0) room = 0;
    return (uint64_t)room < limit ? (uint64_t)room : limit;
}

static void rvx_room_changed(void) {
    if (rvt_running != NULL) rvt_limit = rvt_check_limit(rvt_running);
}

/* The models' slack for a block of ``n`` instructions with ``nmem`` accesses at ``pc``: a constant
 * in each hot block. */
RVX_API __attribute__((always_inline)) uint64_t rvt_slack(uint64_t pc, uint32_t n, uint32_t nmem) {
    return rvx_models_slack(pc, n, nmem);
}

/* Whether a hot block's check covers the next block's: every model asks for it, bounding what a
 * block takes of its room by its slack (RVX_ROOM_TAKEN), a constant in translated code. */
RVX_API __attribute__((always_inline)) uint32_t rvt_covers(void) { return rvx_models_cover(); }

/* Whether a check of translated code may cover every block on the way to the next check: every
 * model bounds what a block takes of its room by its slack (RVX_ROOM_TAKEN), or has no room. */
RVX_API __attribute__((always_inline)) uint32_t rvt_regions(void) { return rvx_models_bounded(); }

/* A block of ``n`` instructions would end past rvt_limit (with its slack, in a hot block),
 * ``executed`` instructions run before it: RVT_LIMIT past the instruction limit, RVT_STOPPED if a
 * clock passed its cut-off (the block does not start), else 0 and rvt_limit is where to look next
 * (the block then starts without room, as far as the models' hooks know). */
RVX_API __attribute__((noinline)) uint32_t rvt_over(uint64_t executed, uint32_t n) {
    rvx *x = rvt_running;
    if (executed + n > x->limit) return RVT_LIMIT;
    if (x->cutoffs && executed + n > x->check_at && rvx_clock_passed(x, executed)) return RVT_STOPPED;
    rvt_limit = rvt_check_limit(x);
    return 0;
}

/* The same, called (not inlined) from blocks that run rarely: they compile faster. */
RVX_API __attribute__((noinline)) void rvt_block_cold(rvx_block *const *slot, uint64_t executed) {
    rvx_models_executed = executed;
    rvx_models_roomy = 0;
    rvx_models_follows = 0;
    rvx_models_block(*slot);
}

RVX_API __attribute__((noinline)) void rvt_access_cold(uint64_t address, uint32_t size, uint32_t is_store,
                                                     uint32_t index) {
    rvt_access(address, size, is_store, index);
}

/* The block rvt_current names, or NULL. */
static rvx_block *rvt_current_block(void) { return rvt_current != RVT_NONE ? rvt_block_slot[rvt_current] : NULL; }

/* The run's block counts (rvt_counts) added to the machine's blocks, and zeroed. */
static void rvt_tally(void) {
    uint32_t i;
    for (i = 0; i < rvt_block_count; i++)
        if (rvt_counts[i] != 0) {
            rvt_block_slot[i]->count += rvt_counts[i];
            rvt_counts[i] = 0;
        }
}

#define RVT_RECENT 4096 /* entries of the direct-mapped table of pcs looked up before */

static rvt_code rvt_lookup(rvx *x, uint64_t pc) {
    uint32_t slot = (uint32_t)(pc >> 2) & (RVT_RECENT - 1), lo = 0, hi = rvt_entry_count;
    rvt_code code = NULL;
    if (x->recent_pc[slot] == pc && x->recent[slot] != NULL) return x->recent[slot];
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (rvt_entry_pc[mid] < pc) lo = mid + 1;
        else hi = mid;
    }
    if (lo < rvt_entry_count && rvt_entry_pc[lo] == pc) code = rvt_entry_code[lo];
    x->recent_pc[slot] = pc;
    x->recent[slot] = code;
    return code;
}

/* The translated function with a block at ``pc``, for a guest call through a register (a host
 * call of it from the translated code), or NULL. */
RVX_API __attribute__((noinline)) rvt_code rvt_find(uint64_t pc) { return rvt_lookup(rvt_running, pc); }

/* An access outside mapped guest memory faults in this process: the run ends with RVX_FALLBACK. */
static sigjmp_buf *rvt_escape;
static uint8_t *rvt_space;
static struct sigaction rvt_previous[2];
static volatile uint64_t rvt_fault_at; /* the guest address of the last such access */

static void rvt_on_fault(int sig, siginfo_t *info, void *context) {
    uint8_t *at = info->si_addr;
    if (rvt_escape != NULL && at >= rvt_space && at < rvt_space + RVX_SPACE + RVX_GUARD) {
        rvt_fault_at = (uint64_t)(at - rvt_space);
        siglongjmp(*rvt_escape, 1);
    }
    /* not the guest's: as if this handler were not there */
    sigaction(sig, &rvt_previous[sig == SIGBUS], NULL);
    (void)context;
}

RVX_API rvx *rvx_new(int xlen, uint64_t brk_start, uint64_t mmap_start, uint64_t mmap_end, rvx_block_cb cb,
                     uint32_t data_models) {
    rvx *x = rvx_alloc(xlen, brk_start, mmap_start, mmap_end, cb, data_models);
    void *space;
    if (x == NULL) return NULL;
    space = mmap(NULL, RVX_SPACE + RVX_GUARD, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    x->pages = calloc(RVX_SPACE / PAGE, 1);
    x->recent_pc = calloc(RVT_RECENT, sizeof *x->recent_pc);
    x->recent = calloc(RVT_RECENT, sizeof *x->recent);
    if (space == MAP_FAILED || x->pages == NULL || x->recent_pc == NULL || x->recent == NULL) {
        if (space != MAP_FAILED) munmap(space, RVX_SPACE + RVX_GUARD);
        free(x->pages);
        free(x->recent_pc);
        free(x->recent);
        rvx_release(x);
        return NULL;
    }
    x->cpu.mem = space;
    x->cpu.reserved = UINT64_MAX;
    rvx_models_executed = 0;
    rvx_models_reset();
    return x;
}

/* The machine and everything the executor allocated for it (a long-lived process runs many). */
RVX_API void rvx_free(rvx *x) {
    if (x == NULL) return;
    if (rvt_slots_of == x) rvt_slots_of = NULL;
    munmap(x->cpu.mem, RVX_SPACE + RVX_GUARD);
    free(x->pages);
    free(x->recent_pc);
    free(x->recent);
    rvx_release(x);
}

/* Give the mapped pages of the translated code the protection ``prot``. */
static void rvt_protect(rvx *x, int prot) {
    uint32_t i;
    for (i = 0; i < rvt_code_range_count; i++) {
        uint64_t page, end = rvt_code_ranges[2 * i + 1];
        for (page = rvt_code_ranges[2 * i]; page < end && page < RVX_SPACE; page += PAGE)
            if (x->pages[page / PAGE]) {
                uint64_t run = page;
                while (run < end && run < RVX_SPACE && x->pages[run / PAGE]) run += PAGE;
                mprotect(x->cpu.mem + page, run - page, prot);
                page = run - PAGE;
            }
    }
}

static int rvt_give_up(rvx *x, const char *why, uint64_t pc) {
    snprintf(x->error, sizeof x->error, "%s at pc=0x%llx", why, (unsigned long long)pc);
    x->stop_requested = 1;
    return x->status = RVX_FALLBACK;
}

/* Run from ``pc`` until the program exits, returns to ``stop_pc`` (nonzero), or the translated code
 * cannot go on (RVX_FALLBACK; the instruction limit is one such case). */
RVX_API int rvx_run(rvx *x, uint64_t pc, uint64_t stop_pc, uint64_t limit) {
    sigjmp_buf escape;
    struct sigaction sa;
    uint32_t i;
    rvx_start_run(x, limit);
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = rvt_on_fault;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &rvt_previous[0]);
    sigaction(SIGBUS, &sa, &rvt_previous[1]);
    rvt_space = x->cpu.mem;
    rvt_running = x;
    if (rvt_slots_of != x) { /* another machine ran last: its blocks are found again through x's table */
        memset(rvt_block_slot, 0, sizeof *rvt_block_slot * rvt_block_count);
        rvt_slots_of = x;
    }
    /* The translated code is the code in these pages: while it runs they are read-only, so that a
     * store into them (code that changes code) falls back to unicorn instead of running stale code. */
    rvt_protect(x, PROT_READ);
    rvt_depth = 0;
    rvt_executed = x->executed;
    rvt_limit = rvt_check_limit(x);
    rvt_current = RVT_NONE;
    for (i = 0; i < rvt_ready_count && !x->stop_requested; i++) {
        const rvt_ready_block *r = &rvt_ready[i];
        if (rvt_first_entry(&rvt_block_slot[r->number], r->pc, r->size, r->n, r->nmem, r->data, r->len) != 0)
            rvt_give_up(x, "code that differs from its translation", r->pc);
    }
    if (sigsetjmp(escape, 1) == 0) {
        rvt_escape = &escape;
        while (!x->stop_requested) {
            rvt_code code;
            if (stop_pc != 0 && pc == stop_pc) {
                x->status = RVX_RETURNED;
                break;
            }
            code = rvt_lookup(x, pc);
            if (code == NULL) {
                /* Past a cut-off, a block the translation does not have stops the run before it starts. */
                if (x->cutoffs && rvx_clock_passed(x, x->executed)) rvx_stop_at_cutoff(x, pc);
                else rvt_give_up(x, "no translated code", pc);
                break;
            }
            x->cpu.reason = RVT_JUMP;
            pc = code(x, pc);
            x->executed = rvt_executed; /* the clock system calls read, exact at an ecall */
            x->cur = rvt_current_block();
            switch (x->cpu.reason) {
            case RVT_JUMP: break;
            case RVT_ECALL:
                rvx_ecall(x);
                rvt_limit = rvt_check_limit(x); /* the system call may have moved a clock */
                break;
            case RVT_STOPPED: rvx_stop_at_cutoff(x, pc); break;
            case RVT_MARKER: rvx_region_marker(x, pc - 4); break;
            case RVT_UNKNOWN: rvt_give_up(x, "an instruction without a translation", pc); break;
            case RVT_LIMIT: rvt_give_up(x, "the instruction limit", pc); break;
            case RVT_CHANGED: rvt_give_up(x, "code that differs from its translation", pc); break;
            default: rvt_give_up(x, "an access outside the 32-bit address space", pc); break;
            }
        }
    } else {
        uint64_t at = rvt_fault_at;
        x->cur = rvt_current_block();
        rvt_give_up(x, at < RVX_SPACE && x->pages[at / PAGE] ? "a store into the translated code" : "an access to unmapped memory",
                    x->cur != NULL ? x->cur->pc : pc);
    }
    rvt_escape = NULL;
    x->executed = rvt_executed;
    rvt_current = RVT_NONE;
    rvt_tally();
    rvt_protect(x, PROT_READ | PROT_WRITE);
    sigaction(SIGSEGV, &rvt_previous[0], NULL);
    sigaction(SIGBUS, &rvt_previous[1], NULL);
    rvt_running = NULL; /* the models' room is looked at again when the next run starts */
    x->cpu.pc = pc;
    return x->status;
}
#else
static void rvx_room_changed(void) {} /* unicorn's runs have no rvt_limit */
RVX_API void rvx_reset(rvx *x);

static void rvx_on_interrupt(uc_engine *uc, uint32_t intno, void *data) {
    rvx *x = data;
    (void)uc;
    if (x->status == RVX_STOPPED) return; /* in the block the run stopped before */
    if (intno == 2 && rvx_region_marker(x, rvx_reg(x, RVX_REG_PC) - 4)) return; /* resumes after it */
    if (intno != 8) { /* 8: environment call from U-mode */
        snprintf(x->error, sizeof x->error, "exception %u at pc=0x%llx", intno,
                 (unsigned long long)rvx_reg(x, RVX_REG_PC));
        x->status = RVX_FAULT;
        x->stop_requested = 1;
        rvx_stop(x);
        return;
    }
    rvx_ecall(x);
}

RVX_API rvx *rvx_new(int xlen, uint64_t brk_start, uint64_t mmap_start, uint64_t mmap_end, rvx_block_cb cb,
                     uint32_t data_models) {
    rvx *x = rvx_alloc(xlen, brk_start, mmap_start, mmap_end, cb, data_models);
    uc_hook hook;
    if (x == NULL) return NULL;
    if (uc_open(UC_ARCH_RISCV, xlen == 32 ? UC_MODE_RISCV32 : UC_MODE_RISCV64, &x->uc) != UC_ERR_OK) {
        rvx_release(x);
        return NULL;
    }
    uc_hook_add(x->uc, &hook, UC_HOOK_BLOCK, (void *)rvx_on_block, x, 1, 0);
    if (RVX_MEMORY_EVENTS) uc_hook_add(x->uc, &hook, UC_HOOK_MEM_READ | UC_HOOK_MEM_WRITE, (void *)rvx_on_memory, x, 1, 0);
    uc_hook_add(x->uc, &hook, UC_HOOK_INTR, (void *)rvx_on_interrupt, x, 1, 0);
    rvx_models_executed = 0;
    rvx_models_reset();
    return x;
}

/* The machine and everything the executor allocated for it (a long-lived process runs many). */
RVX_API void rvx_free(rvx *x) {
    uint32_t i;
    if (x == NULL) return;
    if (x->sealed_cpu != NULL) uc_context_free(x->sealed_cpu);
    uc_free(x->sealed);
    uc_close(x->uc);
    for (i = 0; i < RVX_ZEROED; i++)
        if (x->zeroed[i].host != NULL) munmap(x->zeroed[i].host, x->zeroed[i].len);
    rvx_release(x);
}

/* Map [start, end) (page-aligned, none of it mapped yet) as memory that rvx_restart makes zero
 * again: the stack, the return page and the heap (RVX_ZEROED times at most). Code never runs
 * there in a machine rvx_restart restarts: the host changes the memory behind unicorn's back. */
RVX_API int rvx_map_zero(rvx *x, uint64_t start, uint64_t end) {
    struct rvx_zeroed *z = NULL;
    void *host;
    uint32_t i;
    for (i = 0; i < RVX_ZEROED && z == NULL; i++)
        if (x->zeroed[i].host == NULL) z = &x->zeroed[i];
    if (z == NULL || start % PAGE || end % PAGE || end <= start) return -1;
    host = mmap(NULL, end - start, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (host == MAP_FAILED) return -1;
    if (uc_mem_map_ptr(x->uc, start, end - start, UC_PROT_ALL, host) != UC_ERR_OK) {
        munmap(host, end - start);
        return -1;
    }
    z->host = host;
    z->len = end - start;
    return 0;
}

/* Keep the machine's state now (its program loaded, before its first run) as the state every later
 * run starts from (rvx_restart). 0, or -1 if unicorn cannot save it. */
RVX_API int rvx_seal(rvx *x) {
    if (x->sealed_cpu == NULL && uc_context_alloc(x->uc, &x->sealed_cpu) != UC_ERR_OK) return -1;
    if (uc_context_save(x->uc, x->sealed_cpu) != UC_ERR_OK) return -1;
    uc_free(x->sealed);
    x->sealed = NULL;
    if (uc_mem_regions(x->uc, &x->sealed, &x->nsealed) != UC_ERR_OK) return -1;
    x->sealed_brk_mapped = x->brk_mapped;
    x->sealed_mmap_next = x->mmap_next;
    return 0;
}

/* Back to the state rvx_seal kept, for another run of the same program that finds unicorn's
 * translated blocks and the block table as the last run left them: the CPU, memory mapped since
 * unmapped, the heap and anonymous mappings, standard input, output, exit code, cut-offs, counts
 * and the models' state. The contents of the regions mapped at the seal are the host's to write
 * again. The models' scratch of every block is zero again. 0, or -1 (the machine is unusable). */
/* Bytes of region ``r`` if rvx_seal did not see it mapped, else 0 (unicorn never merges or grows a
 * region: a region mapped since is a new one). */
static uint64_t rvx_mapped_since_seal(const rvx *x, const uc_mem_region *r) {
    uint32_t j;
    for (j = 0; j < x->nsealed; j++)
        if (x->sealed[j].begin == r->begin && x->sealed[j].end == r->end) return 0;
    return r->end - r->begin + 1;
}

RVX_API int rvx_restart(rvx *x) {
    uc_mem_region *now = NULL;
    uint32_t count = 0, i;
    uint64_t added = 0, len;
    int rc = 0;
    if (x->sealed_cpu == NULL) return -1;
    if (uc_mem_regions(x->uc, &now, &count) != UC_ERR_OK) return -1;
    for (i = 0; i < count; i++) added += rvx_mapped_since_seal(x, &now[i]);
    /* unicorn's unmapping costs about 40 us a MiB: past this, a new machine costs less. */
    if (added > RVX_RESTART_UNMAP) rc = -1;
    for (i = 0; i < count && rc == 0; i++)
        if ((len = rvx_mapped_since_seal(x, &now[i])) != 0 && uc_mem_unmap(x->uc, now[i].begin, len) != UC_ERR_OK) rc = -1;
    uc_free(now);
    if (rc != 0 || uc_context_restore(x->uc, x->sealed_cpu) != UC_ERR_OK) return -1;
    for (i = 0; i < RVX_ZEROED; i++) /* the pages the run touched read as zero again */
        if (x->zeroed[i].host != NULL && madvise(x->zeroed[i].host, x->zeroed[i].len, MADV_DONTNEED) != 0) return -1;
    x->brk = x->brk_start;
    x->brk_mapped = x->sealed_brk_mapped;
    x->mmap_next = x->sealed_mmap_next;
    x->in_len = x->in_pos = 0;
    x->out_len[0] = x->out_len[1] = 0;
    x->exit_code = 0;
    x->status = -1;
    x->stop_requested = 0;
    x->error[0] = '\0';
    x->stop_clock = x->stop_pc = 0;
    x->stop_model = 0;
    x->cutoffs = 0;
    for (i = 0; i < RVX_MAX_MODELS; i++) x->cutoff[i] = 0;
    x->cur = NULL;
    x->access = 0;
    x->limit = UINT64_MAX;
    for (i = 0; i < x->nblocks; i++) /* to the models, every block is as new as on a new machine */
        memset(x->order[i]->scratch, 0, sizeof x->order[i]->scratch);
    rvx_reset(x);
    return 0;
}

/* Run from ``pc`` until the program exits, returns to ``stop_pc`` (nonzero), faults, or has
 * executed ``limit`` more instructions. */
RVX_API int rvx_run(rvx *x, uint64_t pc, uint64_t stop_pc, uint64_t limit) {
    uc_err err;
    rvx_start_run(x, limit);
    err = uc_emu_start(x->uc, pc, stop_pc, 0, 0);
    if (err != UC_ERR_OK) {
        snprintf(x->error, sizeof x->error, "%s at pc=0x%llx", uc_strerror(err),
                 (unsigned long long)rvx_reg(x, RVX_REG_PC));
        return x->status = RVX_FAULT;
    }
    if (x->status >= 0) return x->status;
    if (stop_pc != 0 && rvx_reg(x, RVX_REG_PC) == stop_pc) return x->status = RVX_RETURNED;
    snprintf(x->error, sizeof x->error, "execution stopped at pc=0x%llx without exiting",
             (unsigned long long)rvx_reg(x, RVX_REG_PC));
    return x->status = RVX_FAULT;
}
#endif

RVX_API int rvx_map(rvx *x, uint64_t start, uint64_t end) { return rvx_map_range(x, start & ~(uint64_t)(PAGE - 1), ALIGN_UP(end)); }

RVX_API int rvx_write(rvx *x, uint64_t address, const void *data, size_t len) { return rvx_mem_write(x, address, data, len); }

RVX_API int rvx_read(rvx *x, uint64_t address, void *data, size_t len) { return rvx_mem_read(x, address, data, len); }

RVX_API uint64_t rvx_get_reg(rvx *x, int reg) { return rvx_reg(x, reg); }

RVX_API void rvx_set_reg(rvx *x, int reg, uint64_t value) { rvx_set(x, reg, value); }

RVX_API void rvx_set_stdin(rvx *x, const uint8_t *data, size_t len) {
    free(x->in);
    x->in = malloc(len ? len : 1);
    if (x->in == NULL) abort();
    memcpy(x->in, data, len);
    x->in_len = len;
    x->in_pos = 0;
}

/* Output written to fd 1 (which 0) or 2 (which 1) so far. */
RVX_API size_t rvx_output(rvx *x, int which, const uint8_t **data) {
    *data = x->out[which];
    return x->out_len[which];
}

/* A cut-off on model ``model``'s clock (UINT64_MAX: none): a run stops (RVX_STOPPED) at the first
 * block that would start with the clock past it, counted from the last reset. */
RVX_API void rvx_set_cutoff(rvx *x, uint32_t model, uint64_t clock) {
    if (model >= RVX_MAX_MODELS) return;
    x->cutoff[model] = clock;
    if (clock == UINT64_MAX) x->cutoffs &= ~(1u << model);
    else x->cutoffs |= 1u << model;
    x->check_at = x->cutoffs ? 0 : UINT64_MAX;
}

/* After RVX_STOPPED: the model whose clock passed its cut-off, that clock and the block's pc. */
RVX_API uint32_t rvx_stopped(rvx *x, uint64_t *clock, uint64_t *pc) {
    *clock = x->stop_clock;
    *pc = x->stop_pc;
    return x->stop_model;
}

RVX_API void rvx_clear_output(rvx *x) { x->out_len[0] = x->out_len[1] = 0; }

RVX_API const char *rvx_error(rvx *x) { return x->error; }
RVX_API int rvx_exit_code(rvx *x) { return x->exit_code; }
RVX_API uint64_t rvx_executed(rvx *x) { return x->executed; }
RVX_API uint32_t rvx_block_count(rvx *x) { return x->nblocks; }

/* Blocks by id: start address, instructions, executions. */
RVX_API void rvx_blocks(rvx *x, uint64_t *pc, uint32_t *n, uint64_t *count) {
    uint32_t i;
    for (i = 0; i < x->nblocks; i++) {
        pc[i] = x->order[i]->pc;
        n[i] = x->order[i]->n;
        count[i] = x->order[i]->count;
    }
}

/* Block data the host computed in earlier runs, for model ``model``: ``count`` entries sorted by
 * ``pc``, entry i with instruction words ``words[word_at[i] .. word_at[i+1])`` and data
 * ``data[data_at[i] .. data_at[i+1])``. A new block whose address and words match an entry takes
 * its data without the block callback. The arrays are the caller's, and must outlive the executor. */
RVX_API void rvx_known_block_data(rvx *x, uint32_t model, uint32_t count, const uint64_t *pc,
                                  const uint32_t *word_at, const uint32_t *words, const uint32_t *data_at,
                                  const int32_t *data) {
    struct rvx_known *k = &x->known[model];
    k->count = count;
    k->pc = pc;
    k->word_at = word_at;
    k->words = words;
    k->data_at = data_at;
    k->data = data;
}

/* Host-computed data for a block (from within the block callback): kept until the executor ends. */
RVX_API void rvx_set_block_data(rvx *x, uint32_t model, uint32_t id, const int32_t *data, uint32_t len) {
    int32_t *copy = malloc(sizeof(int32_t) * (len ? len : 1));
    if (copy == NULL) abort();
    memcpy(copy, data, sizeof(int32_t) * len);
    x->order[id]->data[model] = copy;
    x->order[id]->data_len[model] = len;
}

/* A measurement starts: block counts and the models' state from zero. */
RVX_API void rvx_reset(rvx *x) {
    uint32_t i;
    for (i = 0; i < x->nblocks; i++) x->order[i]->count = 0;
    x->executed = 0;
    x->nregions = x->depth = 0;
    rvx_models_executed = 0;
    rvx_models_reset();
    x->check_at = x->cutoffs ? 0 : UINT64_MAX;
}

RVX_API void rvx_finish(rvx *x, uint64_t *out) {
    rvx_models_executed = x->executed;
    rvx_models_finish(out);
}

RVX_API void rvx_now(rvx *x, uint64_t *out) {
    rvx_models_executed = x->executed;
    rvx_models_now(out);
}

/* The ELF's region markers, sorted by address: kind (0 start, 1 next, 2 stop) and name id. Before the first run. */
RVX_API void rvx_set_markers(rvx *x, uint32_t n, const uint64_t *at, const uint32_t *kind, const uint32_t *name) {
    x->mark_at = malloc(sizeof(uint64_t) * (n ? n : 1));
    x->mark_kind = malloc(sizeof(uint32_t) * (n ? n : 1));
    x->mark_name = malloc(sizeof(uint32_t) * (n ? n : 1));
    if (x->mark_at == NULL || x->mark_kind == NULL || x->mark_name == NULL) abort();
    memcpy(x->mark_at, at, sizeof(uint64_t) * n);
    memcpy(x->mark_kind, kind, sizeof(uint32_t) * n);
    memcpy(x->mark_name, name, sizeof(uint32_t) * n);
    x->nmarks = n;
}

RVX_API uint32_t rvx_region_count(rvx *x) { return x->nregions; }

/* Regions closed since the last reset, in creation order: parent (RVX_NO_REGION at the top), name
 * id, executions, and RVX_MAX_MODELS clock sums each. */
RVX_API void rvx_regions(rvx *x, uint32_t *parent, uint32_t *name, uint64_t *count, uint64_t *sums) {
    uint32_t i, m;
    for (i = 0; i < x->nregions; i++) {
        parent[i] = x->regions[i].parent;
        name[i] = x->regions[i].name;
        count[i] = x->regions[i].count;
        for (m = 0; m < RVX_MAX_MODELS; m++) sums[i * RVX_MAX_MODELS + m] = x->regions[i].sum[m];
    }
}
