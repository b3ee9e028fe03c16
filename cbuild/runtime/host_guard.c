/* Loaded into the library host process before any library under test.
 *
 * It tells the test process how the host ended when a library call ended it:
 * a SIGSEGV/SIGBUS whose fault address lies in the main thread's stack region
 * (below its top, within the stack limit) is a stack overflow; any other one an
 * instruction caused (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP) names that instruction's
 * file and offset, and for SIGSEGV and SIGBUS the address it touched; a call of exit()
 * (as opposed to _exit()) runs an atexit handler.
 * Each writes one marker
 * line to stderr; the test process reads the tail of stderr after the host died.
 * On any fatal signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT, SIGTERM) it first has every loaded
 * instrumented library write its counters (instrbudget_host_on_crash), so the test keeps what
 * the library counted until then; the guard's handlers, in place before any library loads, keep
 * the libraries' runtimes from installing their own, which would write only the first one's.
 * The host never calls exit() itself (it ends with _exit), so the exit marker only
 * appears when code under test called exit().
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <ucontext.h>
#include <unistd.h>

static uintptr_t stack_low, stack_high;

/* The loaded libraries' counter writers (instrbudget_dump), called on a fatal signal. */
#define MAX_DUMPS 4096
static void (*volatile dumps[MAX_DUMPS])(void);
static volatile int ndumps;

/* Register a library's counter writer; -1 when there are too many. */
__attribute__((visibility("default"))) int instrbudget_host_on_crash(void (*dump)(void)) {
    if (ndumps >= MAX_DUMPS) return -1;
    dumps[ndumps] = dump;
    ndumps = ndumps + 1;
    return 0;
}

static void write_counts(void) {
    int i;
    for (i = 0; i < ndumps; i++) dumps[i]();
}
static char alt_stack[64 * 1024];

static void say(const char *text) {
    size_t n = strlen(text);
    while (n > 0) {
        ssize_t w = write(2, text, n);
        if (w <= 0) return;
        text += w;
        n -= (size_t)w;
    }
}

/* "0x" and ``value`` in hexadecimal into ``out`` (19 bytes at most), without stdio. */
static char *hex(char *out, uintptr_t value) {
    char digits[16];
    int n = 0;
    *out++ = '0';
    *out++ = 'x';
    do {
        digits[n++] = "0123456789abcdef"[value & 15];
        value >>= 4;
    } while (value != 0);
    while (n > 0) *out++ = digits[--n];
    return out;
}

/* The instruction that faulted, from the signal's context (0 where this host has no way to say). */
static uintptr_t fault_pc(void *context) {
    ucontext_t *uc = (ucontext_t *)context;
#if defined(__x86_64__)
    return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    return (uintptr_t)uc->uc_mcontext.pc;
#else
    (void)uc;
    return 0;
#endif
}

/* One line for the test process: the faulting instruction as a file and an offset from where the
 * file is loaded, and for a memory fault the address it touched:
 *   instrbudget-host: fault at /path/lib.so+0x1139 address 0x0
 * A breakpoint instruction (x86's int3, the padding after a function) reports the address
 * after it: the instruction is the byte before.
 * dladdr is not on POSIX's list of async-signal-safe functions: it takes the dynamic loader's
 * lock, so a fault while another thread of the library holds it (inside dlopen) would wait for
 * ever; the test process's time limit on the call then ends the host, reported as a timeout. A
 * fault in the loader's own code with the lock taken by this thread finds it taken recursively. */
static void say_where(int sig, const siginfo_t *info, void *context) {
    char line[4200], *p = line;
    Dl_info found;
    uintptr_t pc = fault_pc(context);
    size_t n;
#if defined(__x86_64__)
    if (sig == SIGTRAP && pc != 0) pc -= 1;
#endif
    if (pc == 0 || dladdr((void *)pc, &found) == 0 || found.dli_fname == NULL || found.dli_fname[0] != '/') return;
    n = strlen(found.dli_fname);
    if (n > 4096) return;
    memcpy(p, "\ninstrbudget-host: fault at ", 28);
    p += 28;
    memcpy(p, found.dli_fname, n);
    p += n;
    *p++ = '+';
    p = hex(p, pc - (uintptr_t)found.dli_fbase);
    if (sig == SIGSEGV || sig == SIGBUS) {
        memcpy(p, " address ", 9);
        p = hex(p + 9, (uintptr_t)info->si_addr);
    }
    *p++ = '\n';
    *p = '\0';
    say(line);
}

static void on_fatal(int sig, siginfo_t *info, void *context) {
    uintptr_t at = (uintptr_t)info->si_addr;
    if ((sig == SIGSEGV || sig == SIGBUS) && stack_high != 0 && at >= stack_low && at < stack_high)
        say("\ninstrbudget-host: stack overflow\n");
    else if (sig != SIGABRT && sig != SIGTERM && info->si_code > 0)
        say_where(sig, info, context);
    write_counts();
    /* SA_RESETHAND restored the default action: returning re-runs the faulting
     * instruction, which now ends the process with the original signal. A signal
     * sent (raise, kill) rather than caused has no instruction to re-run, and a breakpoint
     * (SIGTRAP) resumes after its instruction, not at it: send it again. */
    if (info->si_code <= 0 || sig == SIGTRAP) raise(sig);
}

static void on_exit_called(void) { say("\ninstrbudget-host: exit called\n"); }

/* The range the main thread's stack may grow into: from the top of the [stack]
 * mapping down by the stack limit (or 8 MiB when unlimited), with a page of slack. */
static void find_stack(void) {
    char line[512];
    FILE *maps = fopen("/proc/self/maps", "r");
    struct rlimit limit;
    uintptr_t lo = 0, hi = 0, size = 8u << 20;
    if (maps == NULL) return;
    while (fgets(line, sizeof line, maps) != NULL) {
        if (strstr(line, "[stack]") != NULL) {
            unsigned long a, b;
            if (sscanf(line, "%lx-%lx", &a, &b) == 2) {
                lo = a;
                hi = b;
            }
            break;
        }
    }
    fclose(maps);
    if (hi == 0) return;
    if (getrlimit(RLIMIT_STACK, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) size = limit.rlim_cur;
    stack_high = hi;
    stack_low = (hi - lo > size ? lo : hi - size) - 65536;
}

__attribute__((visibility("default"))) int instrbudget_host_guard(void) {
    static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT, SIGTERM};
    stack_t ss;
    size_t i;
    find_stack();
    memset(&ss, 0, sizeof ss);
    ss.ss_sp = alt_stack;
    ss.ss_size = sizeof alt_stack;
    if (sigaltstack(&ss, NULL) != 0) return -1;
    for (i = 0; i < sizeof faults / sizeof faults[0]; i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_fatal;
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND | SA_NODEFER;
        sigemptyset(&sa.sa_mask);
        if (sigaction(faults[i], &sa, NULL) != 0) return -1;
    }
    return atexit(on_exit_called);
}
