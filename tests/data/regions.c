/* Phases of work between region markers; built with and without the markers (INSTRBUDGET_NO_REGIONS). */
#include <instrbudget.h>
#include <stdlib.h>

/* On a 1 KiB page of its own: the markers' names are strings that move the data after them by a
 * few bytes, and a table that straddled one more page boundary would take a zkVM page more. */
static unsigned table[4096] __attribute__((aligned(1024)));

__attribute__((noinline)) static unsigned fill(unsigned n, unsigned seed) {
    for (unsigned i = 0; i < n; i++) table[i % 4096] = seed = seed * 1103515245u + 12345u;
    return seed;
}

__attribute__((noinline)) static unsigned fold(unsigned n) {
    unsigned h = 0;
    for (unsigned i = 0; i < n; i++) h = (h ^ table[i % 4096]) * 16777619u;
    return h;
}

static unsigned recurse(unsigned depth) {
    INSTRBUDGET_REGION_START("recurse");
    unsigned r = depth ? recurse(depth - 1) + fold(depth) : 1;
    INSTRBUDGET_REGION_STOP();
    return r;
}

int main(int argc, char **argv) {
    unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 1000;
    INSTRBUDGET_REGION_START("setup");
    unsigned seed = fill(n, 7);
    INSTRBUDGET_REGION_NEXT("work");
    unsigned h = fold(n);
    INSTRBUDGET_REGION_START("inner");
    h += fold(n / 2);
    INSTRBUDGET_REGION_STOP();
    h += recurse(3);
    INSTRBUDGET_REGION_STOP();
    return (int)((h ^ seed) & 1);
}
