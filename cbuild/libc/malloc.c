/* <stdlib.h> allocation: a deterministic heap at a fixed address.
 *
 * The heap is one reservation at IB_HEAP_BASE, the same on every run, machine and
 * environment, so that the addresses malloc returns (and the counts of code that hashes
 * them) never move. Its first page holds the allocator's state, so every instrumented
 * library in one process shares one heap. Chunks come from a bump pointer and return to
 * free lists by size class; nothing is ever given back to the system. The heap holds at
 * most INSTRBUDGET_HEAP_LIMIT bytes (default 4 GiB): past that malloc returns NULL.
 *
 * The heap's statistics (allocations, bytes, peak live bytes) feed the ``heap`` cost
 * model. Pointers from elsewhere (the host C library's own allocations) go to the
 * host's free and realloc. */
#include <stdlib.h>

/* RISC-V builds (cbuild/riscv/build.py) define their own: the executor's memory is smaller. */
#ifndef IB_HEAP_BASE
#define IB_HEAP_BASE ((uintptr_t)0x4000000000ull) /* 256 GiB: free below 39-bit address spaces' top */
#endif
#ifndef IB_DEFAULT_LIMIT
#define IB_DEFAULT_LIMIT ((uint64_t)4 << 30)
#endif
#define IB_HEADER 16                              /* bytes before each user pointer */
#define IB_NBINS 128
#define IB_SMALL 1024                             /* chunks up to this size come in steps of 16 */

struct ib_free { struct ib_free *next; };

/* What the heap model reads: keep in step with cbuild/models/heap.py. */
struct ib_heap_stats {
    uint64_t allocations;     /* successful malloc, calloc, aligned and moving realloc calls */
    uint64_t allocated_bytes; /* bytes those calls asked for */
    uint64_t live_bytes;      /* bytes asked for and not yet freed */
    uint64_t peak_bytes;      /* the most live_bytes has been */
    uint64_t frees;           /* free calls on the heap's own chunks */
};

/* Its first fields are heap_map.c's struct ib_heap_head: keep them in step. */
struct ib_heap {
    uint64_t magic;
    uint64_t limit;        /* bytes reserved, header page included */
    uintptr_t top;         /* next unused byte */
    int lock;
    struct ib_heap_stats stats;
    struct ib_free *bins[IB_NBINS];
};

/* Each chunk starts with this header; the user's pointer follows it. An aligned allocation's
 * pointer may lie further in: its own header (just before it) says how far. */
struct ib_chunk {
    uint32_t bin;
    uint32_t offset;   /* user pointer - chunk start - IB_HEADER */
    uint64_t requested;
};

/* cbuild/runtime/heap_map.c (uninstrumented): the heap's mapping, and a lock whose waiting is not counted. */
void *__instrbudget_heap_get(uintptr_t base, uint64_t default_limit);
void __instrbudget_heap_lock(int *lock);

/* This binary's pointer to the process's heap (the heap model reads the statistics through it). */
__attribute__((visibility("hidden"))) struct ib_heap *__instrbudget_heap;
#define ib_heap_state __instrbudget_heap

/* The bin of a chunk of TOTAL bytes (header included) and its size. */
static uint32_t ib_bin_of(uint64_t total) {
    /* 32..1024 -> 0..62; a header alone (malloc(0)) takes the smallest bin. */
    if (total <= IB_SMALL) {
        uint32_t small = (uint32_t)total; /* 32 bits: one comparison on riscv32 too */
        return ((small > 32 ? small : 32) + 15) / 16 - 2;
    }
    /* Then two sizes per power of two: 2^k and 1.5 * 2^k. */
    uint32_t k = 63 - (uint32_t)__builtin_clzll(total - 1); /* 2^k < total <= 2^(k+1) */
    uint64_t half = (uint64_t)3 << (k - 1);                 /* 1.5 * 2^k */
    return 63 + 2 * (k - 10) + (total > half);
}

static uint64_t ib_bin_size(uint32_t bin) {
    if (bin < 63) return (uint64_t)(bin + 2) * 16;
    uint32_t k = (bin - 63) / 2 + 10;
    return (bin - 63) % 2 ? (uint64_t)1 << (k + 1) : (uint64_t)3 << (k - 1);
}

/* The process's heap, mapped on first use (cbuild/runtime/heap_map.c, uninstrumented): always
 * asked for, so that the first call of a process costs what every later one does. */
static struct ib_heap *ib_heap(void) {
    return ib_heap_state = (struct ib_heap *)__instrbudget_heap_get(IB_HEAP_BASE, IB_DEFAULT_LIMIT);
}

static int ib_owns(const struct ib_heap *h, const void *p) {
    return h && (uintptr_t)p > (uintptr_t)h && (uintptr_t)p < (uintptr_t)h + h->limit;
}

static void ib_lock(struct ib_heap *h) { __instrbudget_heap_lock(&h->lock); }

static void ib_unlock(struct ib_heap *h) { __atomic_store_n(&h->lock, 0, __ATOMIC_RELEASE); }

/* Always stored (a maximum, not a branch): the cost does not depend on earlier peaks. */
static void ib_note_peak(struct ib_heap *h) {
    uint64_t live = h->stats.live_bytes, peak = h->stats.peak_bytes;
    h->stats.peak_bytes = live > peak ? live : peak;
}

static void ib_count(struct ib_heap *h, uint64_t requested) {
    h->stats.allocations++;
    h->stats.allocated_bytes += requested;
    h->stats.live_bytes += requested;
    ib_note_peak(h);
}

/* A chunk of at least TOTAL bytes, or NULL when the heap is full. Called with the lock held.
 * One path whether the chunk comes from a free list or from fresh memory: what an allocation
 * costs depends on its size only, never on what the process allocated and freed before. */
static struct ib_chunk *ib_take(struct ib_heap *h, uint64_t total) {
    static struct ib_free none; /* the "next" of an empty list */
    uint32_t bin = ib_bin_of(total);
    uint64_t size = ib_bin_size(bin);
    struct ib_free *f = h->bins[bin];
    int reuse = f != NULL;
    uint64_t room = (uintptr_t)h + h->limit - h->top;
    if (!reuse & (size > room)) return NULL;
    uintptr_t fresh = h->top;
    h->top = fresh + (reuse ? 0 : size);
    h->bins[bin] = (reuse ? f : &none)->next;
    struct ib_chunk *c = (struct ib_chunk *)(reuse ? (uintptr_t)f : fresh);
    c->bin = bin;
    c->offset = 0;
    return c;
}

static struct ib_chunk *ib_chunk_of(void *p) { return (struct ib_chunk *)((char *)p - IB_HEADER); }

static void *ib_alloc(uint64_t size, uint64_t align) {
    struct ib_heap *h = ib_heap();
    if (!h || size > ((uint64_t)1 << 40)) {
        IB_ERRNO = IB_ENOMEM;
        return NULL;
    }
    uint64_t extra = align > 16 ? align : 0;
    ib_lock(h);
    struct ib_chunk *c = ib_take(h, size + IB_HEADER + extra);
    if (!c) {
        ib_unlock(h);
        IB_ERRNO = IB_ENOMEM;
        return NULL;
    }
    c->requested = size;
    ib_count(h, size);
    ib_unlock(h);
    char *user = (char *)c + IB_HEADER;
    if (extra) {
        char *aligned = (char *)(((uintptr_t)user + align - 1) & ~(uintptr_t)(align - 1));
        struct ib_chunk *inner = ib_chunk_of(aligned);
        inner->bin = c->bin;
        inner->offset = (uint32_t)(aligned - user);
        inner->requested = size;
        user = aligned;
    }
    return user;
}

void *LIBC(malloc)(size_t size) { return ib_alloc(size, 16); }

void *LIBC(calloc)(size_t n, size_t size) {
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) {
        IB_ERRNO = IB_ENOMEM;
        return NULL;
    }
    void *p = ib_alloc(total, 16);
    if (p) {
        unsigned char *d = (unsigned char *)p;
        for (size_t i = 0; i < total / 8; i++) ((ib_word *)d)[i] = 0; /* user pointers are 16-aligned */
        for (size_t i = total / 8 * 8; i < total; i++) d[i] = 0;
    }
    return p;
}

void LIBC(free)(void *p) {
    if (!p) return;
    struct ib_heap *h = ib_heap();
    if (!ib_owns(h, p)) {
        free(p); /* the host C library's own allocation */
        return;
    }
    struct ib_chunk *c = ib_chunk_of(p);
    struct ib_chunk *start = (struct ib_chunk *)((char *)c - c->offset);
    ib_lock(h);
    h->stats.frees++;
    h->stats.live_bytes -= c->requested;
    struct ib_free *f = (struct ib_free *)start;
    uint32_t bin = c->bin;
    f->next = h->bins[bin];
    h->bins[bin] = f;
    ib_unlock(h);
}

size_t LIBC(malloc_usable_size)(void *p) {
    if (!p || !ib_owns(ib_heap(), p)) return 0;
    struct ib_chunk *c = ib_chunk_of(p);
    return (size_t)(ib_bin_size(c->bin) - IB_HEADER - c->offset);
}

void *LIBC(realloc)(void *p, size_t size) {
    if (!p) return CALL(malloc)(size);
    struct ib_heap *h = ib_heap();
    if (!ib_owns(h, p)) return realloc(p, size);
    if (!size) {
        CALL(free)(p);
        return NULL;
    }
    struct ib_chunk *c = ib_chunk_of(p);
    if (size <= CALL(malloc_usable_size)(p)) { /* fits where it is */
        ib_lock(h);
        h->stats.live_bytes += size - c->requested;
        ib_note_peak(h);
        c->requested = size;
        ib_unlock(h);
        return p;
    }
    void *q = CALL(malloc)(size);
    if (!q) return NULL;
    CALL(memcpy)(q, p, c->requested);
    CALL(free)(p);
    return q;
}

void *LIBC(reallocarray)(void *p, size_t n, size_t size) {
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) {
        IB_ERRNO = IB_ENOMEM;
        return NULL;
    }
    return CALL(realloc)(p, total);
}

static int ib_power_of_two(size_t n) { return n && !(n & (n - 1)); }

void *LIBC(aligned_alloc)(size_t align, size_t size) {
    if (!ib_power_of_two(align) || align > ((size_t)1 << 30)) {
        IB_ERRNO = IB_EINVAL;
        return NULL;
    }
    return ib_alloc(size, align);
}

void *LIBC(memalign)(size_t align, size_t size) { return CALL(aligned_alloc)(align, size); }

int LIBC(posix_memalign)(void **out, size_t align, size_t size) {
    if (!ib_power_of_two(align) || align % sizeof(void *) || align > ((size_t)1 << 30)) return IB_EINVAL;
    void *p = ib_alloc(size, align);
    if (!p) return IB_ENOMEM;
    *out = p;
    return 0;
}
