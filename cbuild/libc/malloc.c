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
#include <sys/mman.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define IB_HEAP_BASE ((uintptr_t)0x4000000000ull) /* 256 GiB: free below 39-bit address spaces' top */
#define IB_HEAP_MAGIC 0x31706165686269ull        /* "ibheap1" */
#define IB_DEFAULT_LIMIT ((uint64_t)4 << 30)
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

/* The runtime's (uninstrumented): a wait for another thread is not counted. */
void __instrbudget_heap_lock(int *lock);
int __instrbudget_heap_ready(const uint64_t *magic, uint64_t want);

/* This binary's pointer to the process's heap (the heap model reads the statistics through it). */
__attribute__((visibility("hidden"))) struct ib_heap *__instrbudget_heap;
#define ib_heap_state __instrbudget_heap

/* The bin of a chunk of TOTAL bytes (header included) and its size. */
static uint32_t ib_bin_of(uint64_t total) {
    if (total <= IB_SMALL) return (uint32_t)((total + 15) / 16) - 2; /* 32..1024 -> 0..62 */
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

static uint64_t ib_limit(void) {
    const char *text = getenv("INSTRBUDGET_HEAP_LIMIT");
    uint64_t limit = 0;
    if (!text || !*text) return IB_DEFAULT_LIMIT;
    for (; *text >= '0' && *text <= '9'; text++) limit = limit * 10 + (uint64_t)(*text - '0');
    return limit < 65536 ? 65536 : limit;
}

static struct ib_heap *ib_heap(void) {
    struct ib_heap *h = ib_heap_state;
    if (h) return h;
    uint64_t limit = ib_limit();
    void *at = mmap((void *)IB_HEAP_BASE, limit, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (at == MAP_FAILED) {
        /* Another instrumented library of this process made the heap already. */
        h = (struct ib_heap *)IB_HEAP_BASE;
        if (msync(h, 4096, MS_ASYNC) != 0 || !__instrbudget_heap_ready(&h->magic, IB_HEAP_MAGIC)) return NULL;
        return ib_heap_state = h;
    }
    h = (struct ib_heap *)at;
    h->limit = limit;
    h->top = (uintptr_t)at + 4096;
    __atomic_store_n(&h->magic, IB_HEAP_MAGIC, __ATOMIC_RELEASE); /* last: the header is complete */
    return ib_heap_state = h;
}

static int ib_owns(const struct ib_heap *h, const void *p) {
    return h && (uintptr_t)p > (uintptr_t)h && (uintptr_t)p < (uintptr_t)h + h->limit;
}

static void ib_lock(struct ib_heap *h) { __instrbudget_heap_lock(&h->lock); }

static void ib_unlock(struct ib_heap *h) { __atomic_store_n(&h->lock, 0, __ATOMIC_RELEASE); }

static void ib_count(struct ib_heap *h, uint64_t requested) {
    h->stats.allocations++;
    h->stats.allocated_bytes += requested;
    h->stats.live_bytes += requested;
    if (h->stats.live_bytes > h->stats.peak_bytes) h->stats.peak_bytes = h->stats.live_bytes;
}

/* A chunk of at least TOTAL bytes, or NULL when the heap is full. Called with the lock held. */
static struct ib_chunk *ib_take(struct ib_heap *h, uint64_t total) {
    uint32_t bin = ib_bin_of(total);
    struct ib_free *f = h->bins[bin];
    struct ib_chunk *c;
    if (f) {
        h->bins[bin] = f->next;
        c = (struct ib_chunk *)f;
    } else {
        uint64_t size = ib_bin_size(bin);
        if (size > (uintptr_t)h + h->limit - h->top) return NULL;
        c = (struct ib_chunk *)h->top;
        h->top += size;
    }
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
    struct ib_heap *h = ib_heap_state;
    if (!p) return;
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
    if (!p || !ib_owns(ib_heap_state, p)) return 0;
    struct ib_chunk *c = ib_chunk_of(p);
    return (size_t)(ib_bin_size(c->bin) - IB_HEADER - c->offset);
}

void *LIBC(realloc)(void *p, size_t size) {
    struct ib_heap *h = ib_heap_state;
    if (!p) return CALL(malloc)(size);
    if (!ib_owns(h, p)) return realloc(p, size);
    if (!size) {
        CALL(free)(p);
        return NULL;
    }
    struct ib_chunk *c = ib_chunk_of(p);
    if (size <= CALL(malloc_usable_size)(p)) { /* fits where it is */
        ib_lock(h);
        h->stats.live_bytes += size - c->requested;
        if (h->stats.live_bytes > h->stats.peak_bytes) h->stats.peak_bytes = h->stats.live_bytes;
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
