/*
 * pytest-instrbudget runtime, linked (uninstrumented) into every instrumented
 * program and library. The counters themselves live in the instrumented module;
 * this file exposes them and, in programs, writes them out when the process
 * exits (normally or through a fatal signal) to the file named by the
 * INSTRBUDGET_COUNTS environment variable.
 *
 * File format: the ASCII line
 * "instrbudget-counts 2 <build-id> <ncounters> <total> <nresults>\n"
 * followed by <ncounters> native-endian unsigned 64-bit counters, then the
 * <nresults> numbers of the cost models' dynamic phases (see cbuild/dynamic.py).
 * Block counts follow from the counters through the artifact's block table.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern uint64_t __instrbudget_counters[];
extern uint64_t __instrbudget_total;
extern const uint64_t __instrbudget_ncounters;
extern const char __instrbudget_build_id[];
/* Defined by the build's generated cost-model unit (cbuild/dynamic.py). */
extern uint64_t __instrbudget_results[];
extern const uint64_t __instrbudget_nresults;
void __instrbudget_models_reset(uint32_t in_process);
/* The stack pointer when the process started (the address of argc): stack frames lie below it
 * at offsets that do not depend on the arguments, the environment or the program's path. */
uintptr_t __instrbudget_initial_sp __attribute__((visibility("hidden")));
void __instrbudget_models_finish(void);

#define EXPORT __attribute__((visibility("default")))

EXPORT uint64_t *instrbudget_counters(void) { return __instrbudget_counters; }
EXPORT uint64_t *instrbudget_total(void) { return &__instrbudget_total; }
EXPORT uint64_t instrbudget_ncounters(void) { return __instrbudget_ncounters; }
EXPORT const char *instrbudget_build_id(void) { return __instrbudget_build_id; }
EXPORT uint64_t *instrbudget_results(void) { return __instrbudget_results; }
EXPORT uint64_t instrbudget_nresults(void) { return __instrbudget_nresults; }
EXPORT void instrbudget_models_reset(uint32_t in_process) { __instrbudget_models_reset(in_process); }
EXPORT void instrbudget_models_finish(void) { __instrbudget_models_finish(); }

static const char *dump_path;
static volatile sig_atomic_t dumped;

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

static void dump(void) {
    char header[512];
    size_t len = 0, idlen = strlen(__instrbudget_build_id);
    const char *magic = "instrbudget-counts 2 ";
    int fd;
    if (dumped || dump_path == NULL) return;
    dumped = 1;
    if (idlen > 256) idlen = 256;
    memcpy(header, magic, strlen(magic));
    len += strlen(magic);
    memcpy(header + len, __instrbudget_build_id, idlen);
    len += idlen;
    header[len++] = ' ';
    len += put_u64(header + len, __instrbudget_ncounters);
    header[len++] = ' ';
    len += put_u64(header + len, __instrbudget_total);
    header[len++] = ' ';
    len += put_u64(header + len, __instrbudget_nresults);
    header[len++] = '\n';
    __instrbudget_models_finish();
    fd = open(dump_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return;
    if (write_all(fd, header, len) == 0 &&
        write_all(fd, __instrbudget_counters, (size_t)__instrbudget_ncounters * sizeof(uint64_t)) == 0)
        write_all(fd, __instrbudget_results, (size_t)__instrbudget_nresults * sizeof(uint64_t));
    close(fd);
}

static void on_fatal(int sig) {
    dump();
    signal(sig, SIG_DFL);
    raise(sig);
}

/* glibc calls constructors with (argc, argv, envp); argv[] sits right above argc. */
__attribute__((constructor(101))) static void instrbudget_init(int argc, char **argv, char **envp) {
    static const int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM};
    size_t i;
    (void)argc;
    (void)envp;
    __instrbudget_initial_sp = argv != NULL ? (uintptr_t)argv - sizeof(long) : 0;
    __instrbudget_models_reset(0); /* a program: the models see the whole run */
    dump_path = getenv("INSTRBUDGET_COUNTS");
    if (dump_path == NULL || dump_path[0] == '\0') {
        dump_path = NULL;
        return;
    }
    atexit(dump);
    for (i = 0; i < sizeof fatal / sizeof fatal[0]; i++) {
        struct sigaction sa;
        struct sigaction old;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fatal;
        sa.sa_flags = SA_RESETHAND | SA_NODEFER;
        sigemptyset(&sa.sa_mask);
        if (sigaction(fatal[i], NULL, &old) == 0 && old.sa_handler == SIG_DFL)
            sigaction(fatal[i], &sa, NULL);
    }
}
