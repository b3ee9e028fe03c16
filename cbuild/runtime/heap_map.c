/*
 * pytest-instrbudget: the counted C library's heap mapping and lock (cbuild/libc/malloc.c).
 *
 * Linked uninstrumented into native builds with the counted libraries, so that what the
 * allocator costs never depends on the process's history: the first allocation of a
 * process (which maps the heap) costs what every later one does, and waiting for another
 * thread's lock costs nothing more than taking a free one. RISC-V builds compile it with
 * the library (the executor counts every instruction, and runs one thread).
 *
 * The heap is one reservation at BASE; its first page holds the allocator's state, which
 * begins with struct ib_heap_head (keep in step with struct ib_heap in malloc.c). Every
 * library of one process maps it once and shares it: a library that finds the address
 * taken waits for the header of the one that mapped it.
 */
#if defined(__linux__)
#define _GNU_SOURCE 1
#endif
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
#define IB_HEAP_MAGIC 0x31706165686269ull /* "ibheap1" */
#define IB_HEAP_PAGE 4096

struct ib_heap_head {
    uint64_t magic;
    uint64_t limit; /* bytes reserved, header page included */
    uintptr_t top;  /* next unused byte */
    int lock;
};

static struct ib_heap_head *ib_mapped;

static uint64_t ib_limit(uint64_t default_limit) {
    const char *text = getenv("INSTRBUDGET_HEAP_LIMIT");
    uint64_t limit = 0;
    if (!text || !*text) return default_limit;
    for (; *text >= '0' && *text <= '9'; text++) limit = limit * 10 + (uint64_t)(*text - '0');
    return limit < 65536 ? 65536 : limit;
}

/* Whether H's header is (or soon becomes) complete: another library may still be writing it. */
static int ib_ready(struct ib_heap_head *h) {
    for (int i = 0; i < 100000; i++) {
        if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) == IB_HEAP_MAGIC) return 1;
        sched_yield();
    }
    return 0;
}

/* The process's heap at BASE (mapped on the first call), or NULL when it cannot be had. */
__attribute__((visibility("hidden"))) void *__instrbudget_heap_get(uintptr_t base, uint64_t default_limit) {
    struct ib_heap_head *h = __atomic_load_n(&ib_mapped, __ATOMIC_ACQUIRE);
    if (h) return h;
    uint64_t limit = ib_limit(default_limit);
    void *at = mmap((void *)base, limit, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (at == MAP_FAILED) {
        /* Another library of this process (or another thread) mapped it. */
        h = (struct ib_heap_head *)base;
        if (msync(h, IB_HEAP_PAGE, MS_ASYNC) != 0 || !ib_ready(h)) return NULL;
    } else {
        /* Where the system put it: BASE, or elsewhere where the address is only a hint (the executor). */
        h = (struct ib_heap_head *)at;
        h->limit = limit;
        h->top = (uintptr_t)at + IB_HEAP_PAGE;
        __atomic_store_n(&h->magic, IB_HEAP_MAGIC, __ATOMIC_RELEASE); /* last: the header is complete */
    }
    __atomic_store_n(&ib_mapped, h, __ATOMIC_RELEASE);
    return h;
}

__attribute__((visibility("hidden"))) void __instrbudget_heap_lock(int *lock) {
    while (__atomic_exchange_n(lock, 1, __ATOMIC_ACQUIRE)) sched_yield();
}
