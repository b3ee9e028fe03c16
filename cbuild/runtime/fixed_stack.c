/*
 * pytest-instrbudget: a program's main runs on a stack at a fixed address.
 *
 * Linked (uninstrumented) into instrumented programs built with the counted libraries,
 * with the linker's --wrap=main: the C runtime's call of main reaches __wrap_main here,
 * which calls the program's main (__real_main). Where the kernel puts the
 * initial stack depends on the sizes of the environment, the arguments and the
 * program's path (the cache directory's), so code that hashes the address of a local
 * variable would count differently from another directory or with one more variable.
 * Here __wrap_main maps a stack of the process's stack limit (at most 1 GiB, 8 MiB when
 * unlimited) just below IB_STACK_TOP, with a guard region below it, and calls the
 * program's main on it; the same addresses on every run, machine and environment.
 * Where the stack cannot be mapped there (or on other systems) main runs where it is.
 */
#if defined(__linux__)
#define _GNU_SOURCE 1
#include <sys/mman.h>
#include <sys/resource.h>
#endif
#include <stddef.h>
#include <stdint.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define IB_STACK_TOP ((uintptr_t)0x3ff0000000ull) /* below the counted heap (cbuild/libc/malloc.c) */
#define IB_STACK_GUARD ((size_t)1 << 16)
#define IB_STACK_MAX ((size_t)1 << 30)

typedef int (*ib_main_fn)(int, char **, char **);

int __real_main(int argc, char **argv, char **envp);

#if defined(__linux__) && (defined(__x86_64__) || defined(__aarch64__))
static size_t ib_stack_size(void) {
    struct rlimit rl;
    size_t size = (size_t)8 << 20;
    if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur >= ((rlim_t)1 << 16))
        size = rl.rlim_cur < IB_STACK_MAX ? (size_t)rl.rlim_cur : IB_STACK_MAX;
    return (size + 4095) & ~(size_t)4095;
}

/* FN(ARGC, ARGV, ENVP) with the stack pointer at TOP (16-byte aligned); back on this stack after. */
static int ib_call_on(uintptr_t top, ib_main_fn fn, int argc, char **argv, char **envp) {
#if defined(__x86_64__)
    long ret;
    __asm__ volatile(
        "mov %%rsp, %%rbx\n\t"
        "mov %[top], %%rsp\n\t"
        "call *%[fn]\n\t"
        "mov %%rbx, %%rsp\n\t"
        : "=a"(ret), "+D"(argc), "+S"(argv), "+d"(envp)
        : [top] "r"(top), [fn] "r"(fn)
        : "rbx", "rcx", "r8", "r9", "r10", "r11", "memory", "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4",
          "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "st",
          "st(1)", "st(2)", "st(3)", "st(4)", "st(5)", "st(6)", "st(7)");
    return (int)ret;
#else
    register long x0 __asm__("x0") = argc;
    register char **x1 __asm__("x1") = argv;
    register char **x2 __asm__("x2") = envp;
    __asm__ volatile(
        "mov x19, sp\n\t"
        "mov sp, %[top]\n\t"
        "blr %[fn]\n\t"
        "mov sp, x19\n\t"
        : "+r"(x0), "+r"(x1), "+r"(x2)
        : [top] "r"(top), [fn] "r"(fn)
        : "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12", "x13", "x14", "x15", "x16", "x17",
          "x18", "x19", "x30", "memory", "cc", "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v16", "v17",
          "v18", "v19", "v20", "v21", "v22", "v23", "v24", "v25", "v26", "v27", "v28", "v29", "v30", "v31");
    return (int)x0;
#endif
}

int __wrap_main(int argc, char **argv, char **envp) {
    size_t size = ib_stack_size();
    uintptr_t low = IB_STACK_TOP - size - IB_STACK_GUARD;
    void *at = mmap((void *)low, size + IB_STACK_GUARD, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (at == MAP_FAILED) return __real_main(argc, argv, envp);
    if (at != (void *)low) {
        munmap(at, size + IB_STACK_GUARD); /* a kernel without MAP_FIXED_NOREPLACE put it elsewhere */
        return __real_main(argc, argv, envp);
    }
    mprotect(at, IB_STACK_GUARD, PROT_NONE);
    return ib_call_on(IB_STACK_TOP, __real_main, argc, argv, envp);
}
#else
int __wrap_main(int argc, char **argv, char **envp) { return __real_main(argc, argv, envp); }
#endif
