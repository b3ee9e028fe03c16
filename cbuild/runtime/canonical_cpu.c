/* The canonical CPU: what a built program is told about the processor it runs on.
 *
 * The build (cbuild/build/cpu.py) rewrites `cpuid` and `xgetbv` inline assembly into calls
 * that read __instrbudget_cpuid_into / __instrbudget_xgetbv_into, the `llvm.x86.xgetbv` intrinsic into
 * __instrbudget_xgetbv64, and the names compiler-rt gives `__builtin_cpu_supports`
 * and `__builtin_cpu_init` (__cpu_model, __cpu_features2, __cpu_indicator_init) into
 * the tables below, so that run-time CPU dispatch (simdjson, zstd, xxHash, function
 * multiversioning) picks the same code on every x86-64 machine. The first argument
 * of each call is the level chosen for the build:
 *
 *   1 x86-64      CMOV CX8 FPU FXSR MMX SCE SSE SSE2
 *   2 x86-64-v2   + CMPXCHG16B LAHF-SAHF POPCNT SSE3 SSE4.1 SSE4.2 SSSE3
 *   3 x86-64-v3   + AVX AVX2 BMI1 BMI2 F16C FMA LZCNT MOVBE XSAVE/OSXSAVE
 *   4 x86-64-v4   + AVX512F AVX512BW AVX512CD AVX512DQ AVX512VL
 *
 * (the x86-64 psABI's micro-architecture levels). At start-up the host is checked
 * for each feature of the build's level: a program that would be told about an
 * instruction the machine cannot run stops, naming it.
 *
 * Everything here is hidden, as compiler-rt's __cpu_model and __cpu_indicator_init are
 * (clang declares them dso_local, and its references stay dso_local once renamed): each
 * program or shared library binds its own copy, never another object's, and a library
 * links (a preemptible definition cannot take those PC-relative references).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define LEVELS 4
#define HIDDEN __attribute__((visibility("hidden")))

/* The build's level, defined by the instrumented module (absent in other objects), hidden there. */
HIDDEN extern const int32_t __instrbudget_cpu_level __attribute__((weak));

/* CPUID.1:EDX and CPUID.80000001h:EDX of every level, what every x86-64 processor has:
 * FPU TSC CX8 CMOV CLFSH MMX FXSR SSE SSE2; SYSCALL NX LM. */
#define EDX1 ((1u << 0) | (1u << 4) | (1u << 8) | (1u << 15) | (1u << 19) | (1u << 23) | (1u << 24) | (1u << 25) | (1u << 26))
#define EDX81 ((1u << 11) | (1u << 20) | (1u << 29))

/* Each feature bit above the baseline and the lowest level that has it: the answers
 * to CPUID below, and what the host is checked for at start-up. */
struct feature {
    const char *name;
    uint32_t leaf, subleaf;
    int reg; /* 0 eax, 1 ebx, 2 ecx, 3 edx */
    int bit, level;
};

static const struct feature features[] = {
    {"SSE3", 1, 0, 2, 0, 2},      {"SSSE3", 1, 0, 2, 9, 2},      {"CMPXCHG16B", 1, 0, 2, 13, 2},
    {"SSE4.1", 1, 0, 2, 19, 2},   {"SSE4.2", 1, 0, 2, 20, 2},    {"POPCNT", 1, 0, 2, 23, 2},
    {"LAHF-SAHF", 0x80000001, 0, 2, 0, 2},
    {"FMA", 1, 0, 2, 12, 3},      {"MOVBE", 1, 0, 2, 22, 3},     {"XSAVE", 1, 0, 2, 26, 3},
    {"OSXSAVE", 1, 0, 2, 27, 3},  {"AVX", 1, 0, 2, 28, 3},       {"F16C", 1, 0, 2, 29, 3},
    {"BMI1", 7, 0, 1, 3, 3},      {"AVX2", 7, 0, 1, 5, 3},       {"BMI2", 7, 0, 1, 8, 3},
    {"LZCNT", 0x80000001, 0, 2, 5, 3},
    {"AVX512F", 7, 0, 1, 16, 4},  {"AVX512DQ", 7, 0, 1, 17, 4},  {"AVX512CD", 7, 0, 1, 28, 4},
    {"AVX512BW", 7, 0, 1, 30, 4}, {"AVX512VL", 7, 0, 1, 31, 4},
};
#define NFEATURES (sizeof features / sizeof features[0])

/* XCR0: x87 and SSE state; v3 adds AVX, v4 the AVX-512 opmask and ZMM state. */
static const uint32_t xcr0[LEVELS + 1] = {0, 0x3, 0x3, 0x7, 0xe7};
/* CPUID.(0Dh,0):EBX/ECX, the XSAVE area for those states (no XSAVE below v3). */
static const uint32_t xsave_size[LEVELS + 1] = {0, 0, 0, 0x340, 0xa80};

static int clamp(int32_t level) { return level < 1 ? 1 : level > LEVELS ? LEVELS : level; }

/* Leaves whose answer depends on ECX; the others ignore it, as processors do. */
static int has_subleaves(uint32_t leaf) { return leaf == 7 || leaf == 0xd; }

/* EAX, EBX, ECX, EDX into out[0..3]. */
HIDDEN void __instrbudget_cpuid_into(int32_t level, uint32_t leaf, uint32_t subleaf, uint32_t out[4]) {
    int n = clamp(level);
    uint32_t r[4] = {0, 0, 0, 0};
    switch (leaf) {
    case 0: /* highest basic leaf, "GenuineIntel" */
        r[0] = 0xd;
        memcpy(&r[1], "Genu", 4);
        memcpy(&r[3], "ineI", 4);
        memcpy(&r[2], "ntel", 4);
        break;
    case 1: /* family 6; one logical processor, 64-byte cache lines */
        r[0] = 0x000906ea;
        r[1] = 0x00010800;
        r[3] = EDX1;
        break;
    case 0xd:
        if (n >= 3 && subleaf == 0) {
            r[0] = xcr0[n];
            r[1] = r[2] = xsave_size[n];
        }
        break;
    case 0x80000000:
        r[0] = 0x80000001;
        break;
    case 0x80000001:
        r[3] = EDX81;
        break;
    default:
        break;
    }
    for (size_t i = 0; i < NFEATURES; i++) {
        const struct feature *f = &features[i];
        if (f->level <= n && f->leaf == leaf && (!has_subleaves(leaf) || f->subleaf == subleaf))
            r[f->reg] |= 1u << f->bit;
    }
    memcpy(out, r, sizeof r);
}

/* EAX, EDX of XGETBV into out[0..1]. */
HIDDEN void __instrbudget_xgetbv_into(int32_t level, uint32_t index, uint32_t out[2]) {
    out[0] = index == 0 ? xcr0[clamp(level)] : 0;
    out[1] = 0;
}

HIDDEN uint64_t __instrbudget_xgetbv64(int32_t level, uint32_t index) { return index == 0 ? xcr0[clamp(level)] : 0; }

/* __builtin_cpu_supports: bit n of the feature set is bit n%32 of word n/32, word 0 in
 * __cpu_model.features, words 1-3 in __cpu_features2 (LLVM's X86TargetParser numbering). */
struct cpu_model {
    uint32_t vendor, type, subtype;
    uint32_t features[1];
};

#define F(n) (1u << ((n) % 32))
/* word 0: cmov 0, mmx 1, sse 3, sse2 4 | popcnt 2, sse3 5, ssse3 6, sse4.1 7, sse4.2 8 |
 * avx 9, avx2 10, fma 14, bmi 16, bmi2 17 | avx512f 15, avx512vl 20, avx512bw 21, avx512dq 22, avx512cd 23 */
#define W0_V1 (F(0) | F(1) | F(3) | F(4))
#define W0_V2 (W0_V1 | F(2) | F(5) | F(6) | F(7) | F(8))
#define W0_V3 (W0_V2 | F(9) | F(10) | F(14) | F(16) | F(17))
#define W0_V4 (W0_V3 | F(15) | F(20) | F(21) | F(22) | F(23))
/* word 1: cx16 46, sahf 54 | f16c 49, lzcnt 57, movbe 58 */
#define W1_V2 (F(46) | F(54))
#define W1_V3 (W1_V2 | F(49) | F(57) | F(58))
/* word 2: xsave 81 (v3), x86-64 95; word 3: x86-64-v2 96, -v3 97, -v4 98 */
#define W2_V1 F(95)
#define W2_V3 (W2_V1 | F(81))

/* vendor 1: Intel; type and subtype 0 match no __builtin_cpu_is() name. */
HIDDEN const struct cpu_model __instrbudget_cpu_model_1 = {1, 0, 0, {W0_V1}};
HIDDEN const struct cpu_model __instrbudget_cpu_model_2 = {1, 0, 0, {W0_V2}};
HIDDEN const struct cpu_model __instrbudget_cpu_model_3 = {1, 0, 0, {W0_V3}};
HIDDEN const struct cpu_model __instrbudget_cpu_model_4 = {1, 0, 0, {W0_V4}};
HIDDEN const uint32_t __instrbudget_cpu_features2_1[3] = {0, W2_V1, 0};
HIDDEN const uint32_t __instrbudget_cpu_features2_2[3] = {W1_V2, W2_V1, F(96)};
HIDDEN const uint32_t __instrbudget_cpu_features2_3[3] = {W1_V3, W2_V3, F(96) | F(97)};
HIDDEN const uint32_t __instrbudget_cpu_features2_4[3] = {W1_V3, W2_V3, F(96) | F(97) | F(98)};

/* The tables are constant: there is nothing to detect. */
HIDDEN int __instrbudget_cpu_indicator_init(void) { return 0; }

static void host_cpuid(uint32_t leaf, uint32_t subleaf, uint32_t r[4]) {
    __asm__ volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "0"(leaf), "2"(subleaf));
}

static const char *const level_names[LEVELS + 1] = {"", "x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4"};

static void stop(const char *what, int level) {
    char message[256];
    int n = snprintf(message, sizeof message,
                     "instrbudget: this machine's CPU lacks %s, which the canonical CPU %s has; "
                     "choose a lower `cpu` in [tool.instrbudget]\n",
                     what, level_names[level]);
    if (n > 0) (void)!write(2, message, (size_t)n < sizeof message ? (size_t)n : sizeof message - 1);
    _exit(125);
}

__attribute__((constructor(100))) static void check_host(void) {
    if (&__instrbudget_cpu_level == NULL) return;
    int level = clamp(__instrbudget_cpu_level);
    uint32_t r[4];
    host_cpuid(0x80000000, 0, r);
    uint32_t max_extended = r[0];
    host_cpuid(0, 0, r);
    uint32_t max_basic = r[0];
    for (size_t i = 0; i < NFEATURES; i++) {
        const struct feature *f = &features[i];
        if (f->level > level) continue;
        int known = f->leaf >= 0x80000000 ? f->leaf <= max_extended : f->leaf <= max_basic;
        if (known) host_cpuid(f->leaf, f->subleaf, r);
        if (!known || !(r[f->reg] >> f->bit & 1)) stop(f->name, level);
    }
    if (level >= 3) {
        uint32_t lo, hi;
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        if ((lo & xcr0[level]) != xcr0[level]) stop(level == 4 ? "AVX-512 state enabled by the OS" : "AVX state enabled by the OS", level);
    }
}
