/* What a first touch would cost if page protection caught it: each round protects PAGES pages
 * (PROT_NONE, one mprotect of the range, as a zkvm segment's end would), then touches each once;
 * the SIGSEGV handler opens the touched page (mprotect) and returns to the access. Prints the
 * process CPU time per caught touch in nanoseconds. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static long faults;

static void on_fault(int sig, siginfo_t *info, void *context) {
    (void)sig;
    (void)context;
    char *page = (char *)((unsigned long)info->si_addr & ~4095ul);
    if (mprotect(page, 4096, PROT_READ | PROT_WRITE) != 0) _exit(2);
    faults++;
}

static double cpu_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    long pages = argc > 1 ? atol(argv[1]) : 64, rounds = argc > 2 ? atol(argv[2]) : 800;
    char *memory = mmap(NULL, (size_t)pages * 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) return 1;
    struct sigaction sa = {0};
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, NULL);
    volatile long sum = 0;
    double start = cpu_seconds();
    for (long r = 0; r < rounds; r++) {
        for (long p = 0; p < pages; p++) sum += memory[p * 4096 + (r & 7)];
        mprotect(memory, (size_t)pages * 4096, PROT_NONE);
    }
    double seconds = cpu_seconds() - start;
    printf("%ld %.0f\n", faults, seconds / (double)faults * 1e9);
    return 0;
}
