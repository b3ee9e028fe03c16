/* The heap model's dynamic phase: what the counted C library's allocator (cbuild/libc/malloc.c)
 * did while the program ran, or while one library call ran. No events: the allocator keeps the
 * numbers, this code reads them at the start and the end. */

/* The head of the allocator's state: keep in step with struct ib_heap in cbuild/libc/malloc.c. */
struct heap_stats { uint64_t allocations, allocated_bytes, live_bytes, peak_bytes, frees; };
struct heap_head { uint64_t magic, limit; uintptr_t top; int lock; struct heap_stats stats; };
/* The build's pointer to the heap: absent without the counted library, NULL before the first allocation. */
extern struct heap_head *__instrbudget_heap __attribute__((weak, visibility("hidden")));

static uint64_t heap_allocations0, heap_bytes0;

static struct heap_head *heap_now(void) { return &__instrbudget_heap != NULL ? __instrbudget_heap : NULL; }

static void model_reset(uint32_t in_process) {
    struct heap_head *h = heap_now();
    (void)in_process;
    heap_allocations0 = h ? h->stats.allocations : 0;
    heap_bytes0 = h ? h->stats.allocated_bytes : 0;
    if (h) h->stats.peak_bytes = h->stats.live_bytes; /* the peak of this measurement */
}

/* The clock: successful allocations so far. Read at region markers and, in builds that track
 * calls, at every call and return: each region's allocations, and each call path's (who allocated). */
static inline uint64_t model_now(void) {
    struct heap_head *h = heap_now();
    return h ? h->stats.allocations : 0;
}

static void model_finish(uint64_t *out) {
    struct heap_head *h = heap_now();
    out[0] = h ? h->stats.allocations - heap_allocations0 : 0;
    out[1] = h ? h->stats.allocated_bytes - heap_bytes0 : 0;
    out[2] = h ? h->stats.peak_bytes : 0;
}
