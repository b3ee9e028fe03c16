/*
 * pytest-instrbudget runtime, linked (uninstrumented) into every instrumented
 * program and library. The counters themselves live in the instrumented module;
 * this file exposes them and, in programs, writes them out when the process
 * exits (normally or through a fatal signal) to the file named by the
 * INSTRBUDGET_COUNTS environment variable.
 *
 * File format: the ASCII line
 * "instrbudget-counts 2 <build-id> <ncounters> <total> <nresults>[ <threads>]\n"
 * followed by <ncounters> native-endian unsigned 64-bit counters, then the
 * <nresults> numbers of the cost models' dynamic phases (see cbuild/models/dynamic.py).
 * Block counts follow from the counters through the artifact's block table.
 * Counters and total are the sums over the process's threads; <threads>, there when more
 * than one, is how many threads ran instrumented code (see "Threads" below).
 *
 * Processes: the first process writes to $INSTRBUDGET_COUNTS. A child made by fork()
 * starts from zero (counters, running total, regions, profile, models) and writes its
 * own work to $INSTRBUDGET_COUNTS.<pid> (.<pid>.<n> if that name is taken), so each
 * file holds one process's work and the files add up. Files appear complete or not at
 * all (written to NAME.part, then renamed). _exit and _Exit write too (Linux); a
 * process that execs writes nothing, and the variable is taken out of the environment
 * so that programs run from this one write nothing either. vfork and posix_spawn
 * children share the parent's memory until exec or _exit: they never write.
 */
#if defined(__linux__)
#define _GNU_SOURCE 1 /* syscall(), pthread_getattr_np() */
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#endif

extern uint64_t __instrbudget_counters[]; /* NCOUNTERS counters, then the running total */
extern uint64_t __instrbudget_total;      /* __instrbudget_counters[NCOUNTERS] */
extern const uint64_t __instrbudget_ncounters;
extern const char __instrbudget_build_id[];
/* Defined by the build's generated cost-model unit (cbuild/models/dynamic.py). */
extern uint64_t __instrbudget_results[];
extern const uint64_t __instrbudget_nresults;
void __instrbudget_models_reset(uint32_t in_process);
/* The stack pointer when the process started (the address of argc): stack frames lie below it
 * at offsets that do not depend on the arguments, the environment or the program's path. */
uintptr_t __instrbudget_initial_sp __attribute__((visibility("hidden")));
void __instrbudget_models_finish(void);

#define EXPORT __attribute__((visibility("default")))

/* The runtime's own copies of the C library's string functions. A program may define memcpy,
 * memset or strlen itself, and a call from here would then run that definition, instrumented:
 * counted, as if the program had made it. Built with -fno-builtin (cbuild/build/builder.py), so
 * that these loops stay loops, and the runtime calls none of them (tests/test_own_libc_names.py). */
static void ib_copy(void *dst, const void *src, size_t n) {
    unsigned char *d = (unsigned char *)dst;
    const unsigned char *s = (const unsigned char *)src;
    while (n--) *d++ = *s++;
}

static void ib_zero(void *dst, size_t n) {
    unsigned char *d = (unsigned char *)dst;
    while (n--) *d++ = 0;
}

static size_t ib_len(const char *s) {
    size_t n = 0;
    while (s[n]) n++;
    return n;
}

static int ib_same(const char *a, const char *b) {
    while (*a && *a == *b) a++, b++;
    return *a == *b;
}

EXPORT uint64_t *instrbudget_counters(void) { return __instrbudget_counters; }
EXPORT uint64_t *instrbudget_total(void) { return &__instrbudget_total; }
EXPORT uint64_t instrbudget_ncounters(void) { return __instrbudget_ncounters; }
EXPORT const char *instrbudget_build_id(void) { return __instrbudget_build_id; }
EXPORT uint64_t *instrbudget_results(void) { return __instrbudget_results; }
EXPORT uint64_t instrbudget_nresults(void) { return __instrbudget_nresults; }
EXPORT void instrbudget_models_reset(uint32_t in_process) { __instrbudget_models_reset(in_process); }
EXPORT void instrbudget_models_finish(void) { __instrbudget_models_finish(); }


/* ---- Threads ------------------------------------------------------------------------------
 * Every thread counts into an array of its own: NCOUNTERS counters, then its running total.
 * Instrumented code finds its thread's array through the initial-exec thread-local pointer
 * __instrbudget_thread_base (loaded once per function call) and asks __instrbudget_thread_init
 * for one while it is NULL. The first thread to ask (the constructor asks for the thread that
 * loads the program or library) gets the module's own array, __instrbudget_counters, whose last
 * element is __instrbudget_total: single-threaded code counts where it always did. Other threads
 * get a zeroed array of their own, mapped apart from the program's heap and kept in a list that
 * only grows. When a thread ends (a key destructor, run before pthread_join returns) its array
 * is added to the retired sums and zeroed for the next thread. The process's counts are the
 * module's array + the retired sums + the arrays of threads still running.
 * The rest of the runtime's state (regions, call tracking, the models') is shared, unguarded. */
extern __thread uint64_t *__instrbudget_thread_base; /* general-dynamic here: the runtime seldom needs it */
struct ib_thread { struct ib_thread *next; uint64_t *counts; uint32_t used; };
static struct ib_thread *ib_thread_list; /* new entries are pushed at the head, none leave */
static uint64_t *ib_retired;             /* NCOUNTERS + 1 sums of ended threads */
static uint32_t ib_owned, ib_nthreads;   /* the module's array has its thread; threads that ran instrumented code */
static int ib_spin;                      /* guards the list, the retired sums and folding into them */
static pthread_key_t ib_key;
static pthread_once_t ib_key_once = PTHREAD_ONCE_INIT;
static void *ib_zeroed(size_t size);

/* Take the lock; with TRIES > 0 give up after that many attempts (signal handlers, exit). */
static int ib_lock(unsigned tries) {
    unsigned i;
    for (i = 0; tries == 0 || i < tries; i++) {
        if (!__atomic_exchange_n(&ib_spin, 1, __ATOMIC_ACQUIRE)) return 1;
        sched_yield();
    }
    return 0;
}

static void ib_unlock(void) { __atomic_store_n(&ib_spin, 0, __ATOMIC_RELEASE); }

static size_t ib_words(void) { return (size_t)__instrbudget_ncounters + 1; }

/* A thread ends: its counts join the retired sums; the array waits for the next thread. Should the
 * thread run instrumented code after this (another key's destructor), it asks for an array again. */
static void ib_thread_end(void *arg) {
    struct ib_thread *t = (struct ib_thread *)arg;
    size_t i, words = ib_words();
    __instrbudget_thread_base = NULL;
    ib_lock(0);
    if (ib_retired == NULL) __atomic_store_n(&ib_retired, (uint64_t *)ib_zeroed(words * sizeof(uint64_t)), __ATOMIC_RELEASE);
    for (i = 0; i < words; i++) {
        ib_retired[i] += t->counts[i];
        t->counts[i] = 0;
    }
    t->used = 0;
    ib_unlock();
}

static void ib_key_make(void) { pthread_key_create(&ib_key, ib_thread_end); }

__attribute__((visibility("hidden"), cold, noinline)) uint64_t *__instrbudget_thread_init(void) {
    uint32_t unowned = 0;
    struct ib_thread *t;
    if (__instrbudget_thread_base != NULL) return __instrbudget_thread_base;
    __atomic_fetch_add(&ib_nthreads, 1, __ATOMIC_RELAXED);
    if (__atomic_compare_exchange_n(&ib_owned, &unowned, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return __instrbudget_thread_base = __instrbudget_counters;
    pthread_once(&ib_key_once, ib_key_make);
    ib_lock(0);
    for (t = ib_thread_list; t != NULL && t->used; t = t->next) {}
    if (t == NULL) { /* 64 bytes for the entry, then the counters on a cache line of their own */
        t = (struct ib_thread *)ib_zeroed(64 + ib_words() * sizeof(uint64_t));
        t->counts = (uint64_t *)((char *)t + 64);
        t->next = ib_thread_list;
        __atomic_store_n(&ib_thread_list, t, __ATOMIC_RELEASE);
    }
    t->used = 1;
    ib_unlock();
    pthread_setspecific(ib_key, t);
    return __instrbudget_thread_base = t->counts;
}

/* OUT[0..WORDS) = the process's counts (the running total at NCOUNTERS): every thread's. */
static void ib_sum(uint64_t *out, size_t words) {
    const struct ib_thread *t;
    size_t i;
    ib_copy(out, __instrbudget_counters, words * sizeof(uint64_t));
    if (ib_retired != NULL)
        for (i = 0; i < words; i++) out[i] += ib_retired[i];
    for (t = ib_thread_list; t != NULL; t = t->next)
        for (i = 0; i < words; i++) out[i] += __atomic_load_n(&t->counts[i], __ATOMIC_RELAXED);
}

/* The running total of every thread (exact for this thread and for threads that ended or wait in a call). */
static uint64_t ib_total_now(void) {
    const struct ib_thread *t = __atomic_load_n(&ib_thread_list, __ATOMIC_ACQUIRE);
    const uint64_t *retired;
    uint64_t n = __instrbudget_ncounters, sum = __instrbudget_total;
    if (t == NULL) return sum; /* one thread */
    retired = __atomic_load_n(&ib_retired, __ATOMIC_ACQUIRE);
    if (retired != NULL) sum += __atomic_load_n(&retired[n], __ATOMIC_RELAXED);
    for (; t != NULL; t = t->next) sum += __atomic_load_n(&t->counts[n], __ATOMIC_RELAXED);
    return sum;
}

/* The counters of every thread, for library hosts (NCOUNTERS values). */
EXPORT void instrbudget_collect(uint64_t *out) {
    if (__atomic_load_n(&ib_thread_list, __ATOMIC_ACQUIRE) == NULL) {
        ib_copy(out, __instrbudget_counters, (size_t)__instrbudget_ncounters * sizeof(uint64_t));
        return;
    }
    ib_lock(0);
    ib_sum(out, (size_t)__instrbudget_ncounters);
    ib_unlock();
}

/* How many threads ran instrumented code. */
EXPORT uint64_t instrbudget_threads(void) { return __atomic_load_n(&ib_nthreads, __ATOMIC_RELAXED); }

static const char *dump_path; /* $INSTRBUDGET_COUNTS; NULL: write nothing */
static char ib_dump_path[4096];
static volatile sig_atomic_t dumped;
static pid_t ib_pid;  /* the process the counters describe */
static int ib_forked; /* a forked child: writes under a name of its own */

static size_t put_u64(char *out, uint64_t v) {
    char tmp[20];
    size_t n = 0, i;
    do { tmp[n++] = (char)('0' + v % 10); v /= 10; } while (v);
    for (i = 0; i < n; i++) out[i] = tmp[n - 1 - i];
    return n;
}

/* Only async-signal-safe calls: this also runs from fatal signal handlers. */
static int write_all(int fd, const void *data, size_t left) {
    const char *p = (const char *)data;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w <= 0) return -1;
        p += w;
        left -= (size_t)w;
    }
    return 0;
}

/* ---- Regions (instrbudget.h) ------------------------------------------------------------
 * Each region's cost is the difference of every clock between its start and its stop:
 * clock 0 is the running total of IR instructions of all threads (exact at every call, so
 * at every marker, for this thread and threads that ended), the others are the cost models' own (cbuild/models/dynamic.py). Regions nest; a
 * region is identified by its path of names. Unbalanced markers are remembered with
 * their file and line and reported. */
#define IB_CLOCKS 4
#define IB_DEPTH 64
#define IB_REGIONS 512
#define IB_ERRORS 32
extern const uint64_t __instrbudget_nclocks;
void __instrbudget_clocks(uint64_t *out);

struct ib_region { const char *name; uint32_t parent; uint64_t count; uint64_t value[IB_CLOCKS]; };
struct ib_open { uint32_t node; const char *file; int32_t line; uint64_t start[IB_CLOCKS]; };
struct ib_error { uint32_t kind; const char *name; const char *file; int32_t line; };
static struct ib_region ib_regions[IB_REGIONS + 1]; /* 0 is the root */
static uint32_t ib_nregions = 1, ib_depth, ib_nerrors, ib_lost, ib_overflow; /* overflow: starts past IB_DEPTH */
static struct ib_open ib_stack[IB_DEPTH];
static struct ib_error ib_errors[IB_ERRORS];

static uint32_t ib_nclk; /* clocks in use: the IR total and the models' (0: not known yet) */

static uint32_t ib_clocks(void) {
    if (ib_nclk == 0)
        ib_nclk = 1 + (uint32_t)(__instrbudget_nclocks < IB_CLOCKS - 1 ? __instrbudget_nclocks : IB_CLOCKS - 1);
    return ib_nclk;
}

static void ib_now(uint64_t *out) {
    ib_zero(out, IB_CLOCKS * sizeof(uint64_t));
    out[0] = ib_total_now();
    if (ib_clocks() > 1) __instrbudget_clocks(out + 1);
}

static void ib_error(uint32_t kind, const char *name, const char *file, int32_t line) {
    if (ib_nerrors < IB_ERRORS) {
        struct ib_error *e = &ib_errors[ib_nerrors++];
        e->kind = kind, e->name = name, e->file = file, e->line = line;
    }
}

static uint32_t ib_node(uint32_t parent, const char *name) {
    uint32_t i;
    for (i = 1; i < ib_nregions; i++)
        if (ib_regions[i].parent == parent && (ib_regions[i].name == name || ib_same(ib_regions[i].name, name)))
            return i;
    if (ib_nregions > IB_REGIONS) return 0;
    ib_regions[ib_nregions].name = name;
    ib_regions[ib_nregions].parent = parent;
    return ib_nregions++;
}

static void ib_start(const char *name, const char *file, int32_t line, const uint64_t *now) {
    struct ib_open *o;
    if (ib_depth >= IB_DEPTH) { ib_lost++; ib_overflow++; return; }
    o = &ib_stack[ib_depth];
    o->node = ib_node(ib_depth ? ib_stack[ib_depth - 1].node : 0, name);
    if (o->node == 0) ib_lost++; /* more distinct regions than IB_REGIONS: not measured */
    o->file = file, o->line = line;
    ib_copy(o->start, now, sizeof o->start);
    ib_depth++;
}

static int ib_stop(const char *file, int32_t line, const uint64_t *now) {
    struct ib_open *o;
    uint32_t c;
    if (ib_overflow) { ib_overflow--; return 1; } /* the stop of a region too deep to keep */
    if (ib_depth == 0) { ib_error(1, "", file, line); return 0; }
    o = &ib_stack[--ib_depth];
    if (o->node) {
        ib_regions[o->node].count++;
        for (c = 0; c < IB_CLOCKS; c++) ib_regions[o->node].value[c] += now[c] - o->start[c];
    }
    return 1;
}

/* kind: 0 start, 1 next (stop the innermost, start name), 2 stop */
__attribute__((visibility("hidden"))) void __instrbudget_region(int32_t kind, const char *name, const char *file, int32_t line) {
    uint64_t now[IB_CLOCKS];
    ib_now(now);
    if (kind != 0) ib_stop(file, line, now); /* a next without an open region is reported, then starts */
    if (kind != 2) ib_start(name, file, line, now);
}

/* ---- Calls: inclusive costs per function, exclusive costs per call path ---------------------
 * Builds made for profiles report every function entry and return with the function's
 * frame address. A shadow stack follows the real one: a frame whose address lies at or
 * below the current function's was left without returning (longjmp, an exception) and
 * is popped. Between two events every clock's progress belongs to the call path on top;
 * a function's inclusive cost runs from its outermost entry to that activation's exit. */
#define IB_FRAMES 4096
#define IB_PATHS (1u << 16)
extern const uint64_t __instrbudget_nfunctions __attribute__((weak));
struct ib_frame { uint32_t fid, path; uintptr_t frame; };
static struct ib_frame ib_frames[IB_FRAMES];
static uint32_t ib_nframes, ib_deep; /* frames on the stack; frames deeper than IB_FRAMES */
static uint64_t ib_last[IB_CLOCKS];
static uint32_t ib_path_parent[IB_PATHS], ib_path_fid[IB_PATHS], ib_npaths = 1; /* path 0: outside */
static uint64_t ib_path_self[IB_PATHS][IB_CLOCKS];
static uint32_t ib_path_slot[2 * IB_PATHS]; /* open addressing: (parent, fid) -> path + 1 */
static uint32_t ib_path_memo[IB_PATHS][2];   /* per path: the last child's function and path + 1 */
static uint64_t *ib_fn_calls, *ib_fn_incl, *ib_fn_entry; /* per function (x IB_CLOCKS) */
static uint32_t *ib_fn_active;
static int ib_calls_seen;

static uint32_t ib_path_lookup(uint32_t parent, uint32_t fid) {
    uint32_t h = (parent * 2654435761u) ^ (fid * 40503u), i;
    for (i = 0; i < 2 * IB_PATHS; i++) {
        uint32_t slot = (h + i) & (2 * IB_PATHS - 1), id = ib_path_slot[slot];
        if (id == 0) {
            if (ib_npaths >= IB_PATHS) return parent; /* full: charge the caller's path */
            id = ib_npaths++;
            ib_path_parent[id] = parent, ib_path_fid[id] = fid;
            ib_path_slot[slot] = id + 1;
            return id;
        }
        if (ib_path_parent[id - 1] == parent && ib_path_fid[id - 1] == fid) return id - 1;
    }
    return parent;
}

static uint32_t ib_path(uint32_t parent, uint32_t fid) {
    uint32_t id;
    if (ib_path_memo[parent][1] && ib_path_memo[parent][0] == fid) return ib_path_memo[parent][1] - 1;
    id = ib_path_lookup(parent, fid);
    ib_path_memo[parent][0] = fid, ib_path_memo[parent][1] = id + 1;
    return id;
}

/* Zeroed memory of the runtime's own, mapped apart from the program's heap: allocating it with
 * malloc would move the program's later allocations, and with them what cost models see. */
static void *ib_zeroed(size_t size) {
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) abort();
    return p;
}

static int ib_calls_ready(void) {
    uint64_t n = &__instrbudget_nfunctions ? __instrbudget_nfunctions : 0;
    if (ib_fn_calls == NULL && n) {
        ib_fn_incl = (uint64_t *)ib_zeroed(n * IB_CLOCKS * sizeof(uint64_t));
        ib_fn_entry = (uint64_t *)ib_zeroed(n * IB_CLOCKS * sizeof(uint64_t));
        ib_fn_active = (uint32_t *)ib_zeroed(n * sizeof(uint32_t));
        ib_fn_calls = (uint64_t *)ib_zeroed(n * sizeof(uint64_t)); /* last: the tables are ready */
    }
    return ib_fn_calls != NULL;
}

/* What ran since the last event belongs to the path on top of the stack. */
static void ib_charge(const uint64_t *now) {
    uint32_t path = ib_nframes && ib_nframes <= IB_FRAMES ? ib_frames[ib_nframes - 1].path : 0, c, n = ib_clocks();
    for (c = 0; c < n; c++) {
        ib_path_self[path][c] += now[c] - ib_last[c];
        ib_last[c] = now[c];
    }
}

static void ib_pop(const uint64_t *now) {
    struct ib_frame *f = &ib_frames[--ib_nframes];
    uint32_t c, n = ib_clocks();
    if (--ib_fn_active[f->fid] == 0)
        for (c = 0; c < n; c++) ib_fn_incl[f->fid * IB_CLOCKS + c] += now[c] - ib_fn_entry[f->fid * IB_CLOCKS + c];
}

__attribute__((visibility("hidden"))) void __instrbudget_enter(uint32_t fid, void *frame) {
    uint64_t now[IB_CLOCKS];
    uint32_t c;
    if (!ib_calls_ready()) return;
    ib_calls_seen = 1;
    ib_now(now);
    ib_charge(now);
    if (ib_deep) { ib_deep++; return; }
    while (ib_nframes && ib_frames[ib_nframes - 1].frame <= (uintptr_t)frame) ib_pop(now); /* left by longjmp */
    if (ib_nframes == IB_FRAMES) { ib_deep = 1; return; }
    ib_frames[ib_nframes].fid = fid;
    ib_frames[ib_nframes].frame = (uintptr_t)frame;
    ib_frames[ib_nframes].path = ib_path(ib_nframes ? ib_frames[ib_nframes - 1].path : 0, fid);
    ib_nframes++;
    ib_fn_calls[fid]++;
    if (ib_fn_active[fid]++ == 0)
        for (c = 0; c < ib_clocks(); c++) ib_fn_entry[fid * IB_CLOCKS + c] = now[c];
}

__attribute__((visibility("hidden"))) void __instrbudget_leave(uint32_t fid, void *frame) {
    uint64_t now[IB_CLOCKS];
    (void)fid;
    if (!ib_calls_ready()) return;
    ib_now(now);
    ib_charge(now);
    if (ib_deep) { ib_deep--; return; }
    while (ib_nframes && ib_frames[ib_nframes - 1].frame < (uintptr_t)frame) ib_pop(now); /* callees left by longjmp */
    if (ib_nframes) ib_pop(now);
}

static void ib_calls_reset(void) {
    uint64_t n = &__instrbudget_nfunctions ? __instrbudget_nfunctions : 0;
    ib_nframes = ib_deep = 0;
    if (ib_npaths > 1) { /* only what the last measurement used: most have no call tracking */
        ib_zero(ib_path_slot, sizeof ib_path_slot);
        ib_zero(ib_path_self, ib_npaths * sizeof ib_path_self[0]);
        ib_zero(ib_path_memo, ib_npaths * sizeof ib_path_memo[0]);
    } else {
        ib_zero(ib_path_self[0], sizeof ib_path_self[0]);
        ib_zero(ib_path_memo[0], sizeof ib_path_memo[0]);
    }
    ib_npaths = 1;
    ib_calls_seen = 0;
    ib_now(ib_last);
    if (ib_fn_calls != NULL) {
        ib_zero(ib_fn_calls, n * sizeof(uint64_t));
        ib_zero(ib_fn_incl, n * IB_CLOCKS * sizeof(uint64_t));
        ib_zero(ib_fn_active, n * sizeof(uint32_t));
    }
}

EXPORT void instrbudget_profile_reset(void) {
    ib_zero(ib_regions, ib_nregions * sizeof ib_regions[0]);
    ib_nregions = 1, ib_depth = 0, ib_nerrors = 0, ib_lost = 0, ib_overflow = 0;
    ib_calls_reset();
}

static size_t ib_put(char *buf, size_t at, size_t cap, const char *text) {
    size_t n = ib_len(text);
    if (at + n < cap) ib_copy(buf + at, text, n);
    return at + n;
}

static size_t ib_put_u64(char *buf, size_t at, size_t cap, uint64_t v) {
    char tmp[24];
    size_t n = put_u64(tmp, v);
    tmp[n] = '\0';
    return ib_put(buf, at, cap, tmp);
}

/* Comma-separated clock values, then a tab. */
static size_t ib_put_values(char *buf, size_t at, size_t cap, const uint64_t *values, uint32_t clocks) {
    uint32_t c;
    for (c = 0; c < clocks; c++) {
        if (c) at = ib_put(buf, at, cap, ",");
        at = ib_put_u64(buf, at, cap, values[c]);
    }
    return ib_put(buf, at, cap, "\t");
}

/* A tab-terminated text field, then a number field. */
static size_t ib_put_place(char *buf, size_t at, size_t cap, const char *kind, const char *file, int32_t line) {
    at = ib_put(buf, at, cap, kind);
    at = ib_put(buf, at, cap, file);
    at = ib_put(buf, at, cap, "\t");
    return ib_put_u64(buf, at, cap, (uint64_t)line);
}

/* Text, one record per line, fields separated by tabs:
 *   instrbudget-profile 1 NCLOCKS
 *   region ID PARENT COUNT V0,V1,.. NAME
 *   open FILE LINE NAME          (a region never stopped)
 *   unopened FILE LINE           (a stop without a start)
 *   lost N                       (regions nested deeper than the runtime keeps)
 *   func FID CALLS V0,V1,..      (inclusive cost of a function, outermost activations)
 *   path ID PARENT FID V0,V1,..  (exclusive cost of a call path) */
static int ib_write_profile(int fd) {
    static char buf[1 << 16];
    size_t at = 0, cap = sizeof buf;
    uint32_t i, c, clocks = 1 + (uint32_t)(__instrbudget_nclocks < IB_CLOCKS - 1 ? __instrbudget_nclocks : IB_CLOCKS - 1);
    at = ib_put(buf, at, cap, "instrbudget-profile 1 ");
    at = ib_put_u64(buf, at, cap, clocks);
    at = ib_put(buf, at, cap, "\n");
    for (i = 1; i < ib_nregions; i++) {
        if (at > cap - 1024) { /* region names are short; keep the buffer from filling */
            if (write_all(fd, buf, at) != 0) return -1;
            at = 0;
        }
        at = ib_put(buf, at, cap, "region\t");
        at = ib_put_u64(buf, at, cap, i);
        at = ib_put(buf, at, cap, "\t");
        at = ib_put_u64(buf, at, cap, ib_regions[i].parent);
        at = ib_put(buf, at, cap, "\t");
        at = ib_put_u64(buf, at, cap, ib_regions[i].count);
        at = ib_put(buf, at, cap, "\t");
        at = ib_put_values(buf, at, cap, ib_regions[i].value, clocks);
        at = ib_put(buf, at, cap, ib_regions[i].name);
        at = ib_put(buf, at, cap, "\n");
    }
    for (i = 0; i < ib_depth; i++) {
        at = ib_put_place(buf, at, cap, "open\t", ib_stack[i].file, ib_stack[i].line);
        at = ib_put(buf, at, cap, "\t");
        at = ib_put(buf, at, cap, ib_regions[ib_stack[i].node].name ? ib_regions[ib_stack[i].node].name : "?");
        at = ib_put(buf, at, cap, "\n");
    }
    for (i = 0; i < ib_nerrors; i++) {
        at = ib_put_place(buf, at, cap, "unopened\t", ib_errors[i].file, ib_errors[i].line);
        at = ib_put(buf, at, cap, "\n");
    }
    if (ib_lost) {
        at = ib_put(buf, at, cap, "lost\t");
        at = ib_put_u64(buf, at, cap, ib_lost);
        at = ib_put(buf, at, cap, "\n");
    }
    if (at >= cap) return -1;
    if (write_all(fd, buf, at) != 0) return -1;
    if (ib_calls_seen) {
        uint64_t n = __instrbudget_nfunctions, now[IB_CLOCKS], values[IB_CLOCKS];
        ib_now(now);
        ib_charge(now);
        for (i = 0; i < n; i++) {
            if (!ib_fn_calls[i] && !ib_fn_active[i]) continue; /* active: entered before a fork */
            at = ib_put(buf, 0, cap, "func\t");
            at = ib_put_u64(buf, at, cap, i);
            at = ib_put(buf, at, cap, "\t");
            at = ib_put_u64(buf, at, cap, ib_fn_calls[i]);
            at = ib_put(buf, at, cap, "\t");
            for (c = 0; c < IB_CLOCKS; c++) /* an activation still running counts up to now */
                values[c] = ib_fn_incl[i * IB_CLOCKS + c] + (ib_fn_active[i] ? now[c] - ib_fn_entry[i * IB_CLOCKS + c] : 0);
            at = ib_put_values(buf, at, cap, values, clocks);
            at = ib_put(buf, at - 1, cap, "\n"); /* replace the trailing tab */
            if (write_all(fd, buf, at) != 0) return -1;
        }
        for (i = 1; i < ib_npaths; i++) {
            at = ib_put(buf, 0, cap, "path\t");
            at = ib_put_u64(buf, at, cap, i);
            at = ib_put(buf, at, cap, "\t");
            at = ib_put_u64(buf, at, cap, ib_path_parent[i]);
            at = ib_put(buf, at, cap, "\t");
            at = ib_put_u64(buf, at, cap, ib_path_fid[i]);
            at = ib_put(buf, at, cap, "\t");
            at = ib_put_values(buf, at, cap, ib_path_self[i], clocks);
            at = ib_put(buf, at - 1, cap, "\n");
            if (write_all(fd, buf, at) != 0) return -1;
        }
    }
    return 0;
}

EXPORT int instrbudget_profile_write(const char *path) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644), rc;
    if (fd < 0) return -1;
    rc = ib_write_profile(fd);
    close(fd);
    return rc;
}

/* DST = A B C (each may be NULL); returns 0 if it does not fit. */
static int ib_join(char *dst, size_t cap, const char *a, const char *b, const char *c) {
    const char *parts[3];
    size_t at = 0, i, n;
    parts[0] = a, parts[1] = b, parts[2] = c;
    for (i = 0; i < 3; i++) {
        if (parts[i] == NULL) continue;
        n = ib_len(parts[i]);
        if (at + n >= cap) return 0;
        ib_copy(dst + at, parts[i], n);
        at += n;
    }
    dst[at] = '\0';
    return 1;
}

static int ib_write_counts(const char *path, const char *header, size_t len, const uint64_t *counters) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644), rc = -1;
    if (fd < 0) return -1;
    if (write_all(fd, header, len) == 0 &&
        write_all(fd, counters, (size_t)__instrbudget_ncounters * sizeof(uint64_t)) == 0 &&
        write_all(fd, __instrbudget_results, (size_t)__instrbudget_nresults * sizeof(uint64_t)) == 0)
        rc = 0;
    close(fd);
    return rc;
}

/* Only async-signal-safe calls: this also runs from fatal signal handlers and _exit. */
static void dump(void) {
    static char final[4096], part[4096], extra[4096];
    char header[512], num[24];
    size_t len = 0, idlen = ib_len(__instrbudget_build_id);
    const char *magic = "instrbudget-counts 2 ";
    const uint64_t *counters = __instrbudget_counters;
    uint64_t k, total = __instrbudget_total;
    /* Another pid: a vfork child sharing our memory, or a child made without fork(). */
    if (dumped || dump_path == NULL || getpid() != ib_pid) return;
    dumped = 1;
    if (ib_thread_list != NULL) { /* other threads ran: add up (a thread still running counts as far as it got) */
        size_t words = ib_words();
        void *sum = mmap(NULL, words * sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (sum != MAP_FAILED) {
            int locked = ib_lock(1000); /* not forever: a fatal signal may have stopped the holder */
            ib_sum((uint64_t *)sum, words);
            if (locked) ib_unlock();
            counters = (const uint64_t *)sum;
            total = counters[words - 1];
        }
    }
    if (idlen > 256) idlen = 256;
    ib_copy(header, magic, ib_len(magic));
    len += ib_len(magic);
    ib_copy(header + len, __instrbudget_build_id, idlen);
    len += idlen;
    header[len++] = ' ';
    len += put_u64(header + len, __instrbudget_ncounters);
    header[len++] = ' ';
    len += put_u64(header + len, total);
    header[len++] = ' ';
    len += put_u64(header + len, __instrbudget_nresults);
    if (instrbudget_threads() > 1) {
        header[len++] = ' ';
        len += put_u64(header + len, instrbudget_threads());
    }
    header[len++] = '\n';
    __instrbudget_models_finish();
    if (!ib_forked) {
        if (!ib_join(final, sizeof final, dump_path, NULL, NULL) || !ib_join(part, sizeof part, dump_path, ".part", NULL))
            return;
        if (ib_write_counts(part, header, len, counters) != 0 || rename(part, final) != 0) return;
    } else { /* DUMP_PATH.PID, or DUMP_PATH.PID.N when an earlier process with this pid wrote that */
        num[put_u64(num, (uint64_t)getpid())] = '\0';
        if (!ib_join(extra, sizeof extra, dump_path, ".", num) || !ib_join(part, sizeof part, extra, ".part", NULL))
            return;
        if (ib_write_counts(part, header, len, counters) != 0) return;
        for (k = 0;; k++) {
            num[0] = '.';
            num[1 + put_u64(num + 1, k)] = '\0';
            if (!ib_join(final, sizeof final, extra, k ? num : NULL, NULL)) return;
            if (link(part, final) == 0) {
                unlink(part);
                break;
            }
            if (errno != EEXIST) { /* no hard links here: take the name */
                if (rename(part, final) != 0) return;
                break;
            }
        }
    }
    if (ib_nregions > 1 || ib_depth || ib_nerrors || ib_calls_seen) { /* beside the counts: FILE.profile */
        if (ib_join(part, sizeof part, final, ".profile.part", NULL) && ib_join(extra, sizeof extra, final, ".profile", NULL) &&
            instrbudget_profile_write(part) == 0)
            rename(part, extra);
    }
}

/* In a forked child: its own work starts here. The counters and the running total are exact
 * (fork is a call), so zeroing them leaves exactly what the child runs from now on. Of the
 * threads only the one that forked goes on: the others' arrays are free. Open regions and
 * active functions stay open, from now. */
static void ib_child_after_fork(void) {
    uint64_t now[IB_CLOCKS], n = &__instrbudget_nfunctions ? __instrbudget_nfunctions : 0, i;
    size_t words = ib_words();
    struct ib_thread *t;
    uint32_t c;
    ib_pid = getpid();
    ib_forked = 1;
    dumped = 0;
    ib_spin = 0;
    ib_zero(__instrbudget_counters, words * sizeof(uint64_t));
    __instrbudget_total = 0;
    if (ib_retired != NULL) ib_zero(ib_retired, words * sizeof(uint64_t));
    for (t = ib_thread_list; t != NULL; t = t->next) {
        ib_zero(t->counts, words * sizeof(uint64_t));
        t->used = t->counts == __instrbudget_thread_base;
    }
    ib_nthreads = 1;
    __instrbudget_models_reset(0);
    ib_now(now);
    for (i = 1; i < ib_nregions; i++) {
        ib_regions[i].count = 0;
        ib_zero(ib_regions[i].value, sizeof ib_regions[i].value);
    }
    for (i = 0; i < ib_depth; i++) ib_copy(ib_stack[i].start, now, sizeof now);
    ib_nerrors = 0, ib_lost = 0;
    ib_zero(ib_path_self, ib_npaths * sizeof ib_path_self[0]);
    ib_copy(ib_last, now, sizeof now);
    if (ib_fn_calls != NULL) {
        ib_zero(ib_fn_calls, n * sizeof(uint64_t));
        ib_zero(ib_fn_incl, n * IB_CLOCKS * sizeof(uint64_t));
        for (i = 0; i < n; i++)
            if (ib_fn_active[i])
                for (c = 0; c < IB_CLOCKS; c++) ib_fn_entry[i * IB_CLOCKS + c] = now[c];
    }
}

#if defined(__linux__)
/* The program's own _exit and _Exit (hidden: libc's internal calls keep theirs) write the
 * counts first, so a forked child that ends with _exit is counted. */
long syscall(long number, ...);
__attribute__((visibility("hidden"), noreturn)) void _exit(int status) {
    dump();
    for (;;) syscall(SYS_exit_group, status);
}
__attribute__((visibility("hidden"), noreturn)) void _Exit(int status) { _exit(status); }
#endif

/* ---- Cut-off --------------------------------------------------------------------------------
 * Cut-off builds check the running total against __instrbudget_limit at every function entry
 * and loop head, and model clocks against their limits at every block while a limit is set
 * (cbuild/build/checks.py, cbuild/models/dynamic.py). Code that would pass a limit stops there: the
 * runtime writes a stop record and ends the process with IB_STOP_STATUS, writing no counts
 * (between two calls they are not exact). The record names the limit's clock, the block
 * that would have passed it, the exact count before that block, the model results and the
 * return addresses of the callers, found through the frame pointers the build keeps; the
 * engine turns them into functions and lines (cbuild/run/stops.py).
 *
 * Text, one field per line: "instrbudget-stop 1", "clock C", "block B", "count N", "limit L",
 * "base HEX" (where the binary's ELF header is loaded), "results R0 R1 ..", "depth D" (frames
 * walked), "frames HEX HEX .." (return addresses from the stop outwards, at most IB_STOP_FRAMES). */
#define IB_STOP_STATUS 86
#define IB_STOP_FRAMES 256
__attribute__((visibility("hidden"))) int64_t __instrbudget_limit = INT64_MAX;
__attribute__((visibility("hidden"))) uint32_t __instrbudget_clocks_armed;
__attribute__((visibility("hidden"))) int64_t __instrbudget_clock_limits[IB_CLOCKS] = {INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX};
extern const char __ehdr_start[] __attribute__((weak, visibility("hidden")));
static char ib_stop_path[4096];

/* Limit of clock C (0: the IR total; the models' clocks after it); negative: none. */
EXPORT void instrbudget_set_limit(uint32_t clock, int64_t value) {
    uint32_t c;
    if (value < 0) value = INT64_MAX;
    if (clock == 0) __instrbudget_limit = value;
    else if (clock < IB_CLOCKS) __instrbudget_clock_limits[clock] = value;
    __instrbudget_clocks_armed = 0;
    for (c = 1; c < IB_CLOCKS; c++)
        if (__instrbudget_clock_limits[c] != INT64_MAX) __instrbudget_clocks_armed = 1;
}

/* Every clock now: the IR total, then the models' (IB_CLOCKS values). */
EXPORT void instrbudget_clocks(uint64_t *out) { ib_now(out); }

EXPORT void instrbudget_set_stop_file(const char *path) {
    if (!ib_join(ib_stop_path, sizeof ib_stop_path, path, NULL, NULL)) ib_stop_path[0] = '\0';
}

static size_t ib_put_hex(char *buf, size_t at, size_t cap, uint64_t v) {
    char tmp[17];
    int n = 0, i;
    do { tmp[n++] = "0123456789abcdef"[v & 15]; v >>= 4; } while (v);
    for (i = 0; i < n / 2; i++) { char t = tmp[i]; tmp[i] = tmp[n - 1 - i]; tmp[n - 1 - i] = t; }
    tmp[n] = '\0';
    return ib_put(buf, at, cap, tmp);
}

static int ib_write_stop(const uintptr_t *fp, uint32_t clock, uint32_t block, int64_t before) {
    static char buf[1 << 13], part[4096 + 32];
    uintptr_t hi = (uintptr_t)fp + ((uintptr_t)64 << 20), frames[IB_STOP_FRAMES];
    uint64_t depth = 0, i, limit = (uint64_t)(clock == 0 ? __instrbudget_limit : __instrbudget_clock_limits[clock]);
    size_t at = 0, cap = sizeof buf;
    pthread_attr_t attr;
    void *stack;
    size_t size;
    int fd, ok;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        if (pthread_attr_getstack(&attr, &stack, &size) == 0) hi = (uintptr_t)stack + size;
        pthread_attr_destroy(&attr);
    }
    /* From the caller of __instrbudget_stop outwards (the engine skips the hooks and the stopped function). */
    while (fp != NULL && depth < 100000000) {
        uintptr_t next = fp[0];
        if (depth < IB_STOP_FRAMES) frames[depth] = fp[1];
        depth++;
        if (next <= (uintptr_t)fp || next >= hi || (next & 7)) break;
        fp = (const uintptr_t *)next;
    }
    __instrbudget_models_finish();
    at = ib_put(buf, at, cap, "instrbudget-stop 1\nclock ");
    at = ib_put_u64(buf, at, cap, clock);
    at = ib_put(buf, at, cap, "\nblock ");
    at = ib_put_u64(buf, at, cap, block);
    at = ib_put(buf, at, cap, "\ncount ");
    at = ib_put_u64(buf, at, cap, (uint64_t)before);
    at = ib_put(buf, at, cap, "\nlimit ");
    at = ib_put_u64(buf, at, cap, limit);
    at = ib_put(buf, at, cap, "\nbase ");
    at = ib_put_hex(buf, at, cap, (uintptr_t)__ehdr_start);
    at = ib_put(buf, at, cap, "\nresults");
    for (i = 0; i < __instrbudget_nresults; i++) {
        at = ib_put(buf, at, cap, " ");
        at = ib_put_u64(buf, at, cap, __instrbudget_results[i]);
    }
    at = ib_put(buf, at, cap, "\ndepth ");
    at = ib_put_u64(buf, at, cap, depth);
    at = ib_put(buf, at, cap, "\nframes");
    for (i = 0; i < depth && i < IB_STOP_FRAMES; i++) {
        at = ib_put(buf, at, cap, " ");
        at = ib_put_hex(buf, at, cap, frames[i]);
    }
    at = ib_put(buf, at, cap, "\n");
    if (at >= cap || ib_stop_path[0] == '\0' || !ib_join(part, sizeof part, ib_stop_path, ".part", NULL)) return -1;
    fd = open(part, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return -1;
    ok = write_all(fd, buf, at) == 0;
    close(fd);
    return ok && rename(part, ib_stop_path) == 0 ? 0 : -1;
}

/* Code about to pass a limit: record where, and end the process. */
__attribute__((visibility("hidden"), noreturn, noinline, cold)) void __instrbudget_stop(uint32_t clock, uint32_t block, int64_t before) {
    ib_write_stop((const uintptr_t *)__builtin_frame_address(0), clock, block, before);
    dumped = 1; /* the counts are not exact between two calls: none are written */
    fflush(NULL);
#if defined(__linux__)
    for (;;) syscall(SYS_exit_group, IB_STOP_STATUS);
#else
    _exit(IB_STOP_STATUS);
#endif
}

/* A program's limits: "CLOCK VALUE" lines in $INSTRBUDGET_COUNTS.limits, when that file exists. */
static void ib_read_limits(void) {
    char path[4096 + 16], text[512];
    ssize_t n;
    int fd;
    char *p;
    if (!ib_join(path, sizeof path, dump_path, ".limits", NULL)) return;
    fd = open(path, O_RDONLY);
    if (fd < 0) return;
    n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0) return;
    text[n] = '\0';
    for (p = text; *p;) {
        uint64_t clock = 0, value = 0;
        while (*p >= '0' && *p <= '9') clock = clock * 10 + (uint64_t)(*p++ - '0');
        while (*p == ' ') p++;
        while (*p >= '0' && *p <= '9') value = value * 10 + (uint64_t)(*p++ - '0');
        if (clock < IB_CLOCKS && value <= (uint64_t)INT64_MAX) instrbudget_set_limit((uint32_t)clock, (int64_t)value);
        while (*p && *p != '\n') p++;
        if (*p) p++;
    }
}

/* A library's counters to the file $INSTRBUDGET_COUNTS named when it was loaded: what the library
 * host's guard calls when a call ends the host's process (async-signal-safe, once). */
EXPORT void instrbudget_dump(void) { dump(); }

/* Where a program's fatal fault was, for the engine to name the function and line (run/faults.py):
 * $INSTRBUDGET_COUNTS.fault, text, one field per line: "instrbudget-fault 1", "signal HEX", "pc HEX"
 * (the instruction), "base HEX" (where the binary's ELF header is loaded) and, for a memory fault,
 * "address HEX" (the address it touched). Only for a signal an instruction caused, and only in
 * the process the counts file is for. */
static char ib_fault_path[4096];

static uintptr_t ib_fault_pc(const void *context) {
#if defined(__linux__) && defined(__x86_64__)
    return (uintptr_t)((const ucontext_t *)context)->uc_mcontext.gregs[REG_RIP];
#elif defined(__linux__) && defined(__aarch64__)
    return (uintptr_t)((const ucontext_t *)context)->uc_mcontext.pc;
#else
    (void)context;
    return 0;
#endif
}

/* Only async-signal-safe calls. */
static void ib_write_fault(int sig, const siginfo_t *info, const void *context) {
    char buf[160];
    size_t at = 0, cap = sizeof buf;
    uintptr_t pc = ib_fault_pc(context);
    int fd;
    if (ib_fault_path[0] == '\0' || pc == 0 || info->si_code <= 0 || ib_forked || getpid() != ib_pid) return;
#if defined(__x86_64__)
    if (sig == SIGTRAP) pc -= 1; /* a breakpoint reports the address after it */
#endif
    at = ib_put(buf, at, cap, "instrbudget-fault 1\nsignal ");
    at = ib_put_hex(buf, at, cap, (uint64_t)sig);
    at = ib_put(buf, at, cap, "\npc ");
    at = ib_put_hex(buf, at, cap, pc);
    at = ib_put(buf, at, cap, "\nbase ");
    at = ib_put_hex(buf, at, cap, (uintptr_t)__ehdr_start);
    if (sig == SIGSEGV || sig == SIGBUS) {
        at = ib_put(buf, at, cap, "\naddress ");
        at = ib_put_hex(buf, at, cap, (uintptr_t)info->si_addr);
    }
    at = ib_put(buf, at, cap, "\n");
    fd = open(ib_fault_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return;
    (void)write_all(fd, buf, at);
    close(fd);
}

static void on_fatal(int sig, siginfo_t *info, void *context) {
    ib_write_fault(sig, info, context);
    dump();
    signal(sig, SIG_DFL);
    raise(sig);
}

/* glibc calls constructors with (argc, argv, envp); argv[] sits right above argc. */
__attribute__((constructor(101))) static void instrbudget_init(int argc, char **argv, char **envp) {
    static const int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT, SIGTERM};
    size_t i;
    (void)argc;
    (void)envp;
    __instrbudget_initial_sp = argv != NULL ? (uintptr_t)argv - sizeof(long) : 0;
    __instrbudget_thread_init(); /* the thread that loads the program or library counts into the module's array */
    pthread_once(&ib_key_once, ib_key_make);
    __instrbudget_models_reset(0); /* a program: the models see the whole run */
    dump_path = getenv("INSTRBUDGET_COUNTS");
    if (dump_path == NULL || dump_path[0] == '\0' || ib_len(dump_path) >= sizeof ib_dump_path) {
        dump_path = NULL;
        return;
    }
    /* A copy of its own (a library host sets the variable anew for each library it loads);
     * programs this one execs or spawns do not inherit it. */
    ib_copy(ib_dump_path, dump_path, ib_len(dump_path) + 1);
    dump_path = ib_dump_path;
    unsetenv("INSTRBUDGET_COUNTS");
    ib_pid = getpid();
    if (ib_join(ib_stop_path, sizeof ib_stop_path, dump_path, ".stop", NULL)) ib_read_limits();
    else ib_stop_path[0] = '\0';
    if (!ib_join(ib_fault_path, sizeof ib_fault_path, dump_path, ".fault", NULL)) ib_fault_path[0] = '\0';
    pthread_atfork(NULL, NULL, ib_child_after_fork);
    atexit(dump);
    for (i = 0; i < sizeof fatal / sizeof fatal[0]; i++) {
        struct sigaction sa;
        struct sigaction old;
        ib_zero(&sa, sizeof sa);
        sa.sa_sigaction = on_fatal;
        sa.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_NODEFER;
        sigemptyset(&sa.sa_mask);
        if (sigaction(fatal[i], NULL, &old) == 0 && old.sa_handler == SIG_DFL)
            sigaction(fatal[i], &sa, NULL);
    }
}
