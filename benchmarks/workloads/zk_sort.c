/* zkVM workload: introsort of LCG-generated int32 arrays (minikit's mk_sort_ints).
 * Compile with example_project/src/sort.c.  Deterministic: fixed seeds, no time, no rand(). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "minikit.h"

#define N 4000
#define ROUNDS 2

static int32_t data[N];

/* Numerical Recipes 32-bit LCG. */
static uint32_t lcg(uint32_t *state)
{
    *state = *state * 1664525u + 1013904223u;
    return *state;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : ROUNDS;
    uint32_t state = 12345u, checksum = 0;
    int sorted = 1;
    for (int r = 0; r < rounds; r++) {
        for (size_t i = 0; i < N; i++) {
            data[i] = (int32_t)(lcg(&state) >> 1) - (1 << 30);
        }
        mk_sort_ints(data, N);
        sorted &= mk_is_sorted(data, N);
        for (size_t i = 0; i < N; i += 7) {
            checksum = checksum * 31u + (uint32_t)data[i];
        }
    }
    printf("sort n=%d rounds=%d sorted=%d checksum=%08x\n", N, rounds, sorted, (unsigned)checksum);
    return sorted ? 0 : 1;
}
