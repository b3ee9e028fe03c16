/* zkVM workload: a string -> int64 map (minikit's mk_map_*): inserts with growth, overwrites, hits, misses and
 * one iteration.  Compile with example_project/src/hashmap.c.  Deterministic: fixed seed, no time, no rand(). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "minikit.h"

#define KEYS 1500

static uint32_t lcg(uint32_t *state)
{
    *state = *state * 1664525u + 1013904223u;
    return *state;
}

/* "k" followed by 8 lowercase hex digits of v. */
static void make_key(char *out, uint32_t v)
{
    static const char hex[] = "0123456789abcdef";
    out[0] = 'k';
    for (int i = 0; i < 8; i++) {
        out[1 + i] = hex[(v >> (28 - 4 * i)) & 0xFu];
    }
    out[9] = '\0';
}

int main(int argc, char **argv)
{
    int keys = argc > 1 ? atoi(argv[1]) : KEYS;
    mk_map *m = mk_map_new(0);
    if (m == NULL) {
        return 1;
    }
    char key[10];
    uint32_t state = 7u;
    int inserted = 0;
    for (int i = 0; i < keys; i++) {
        /* values below keys/2 repeat, so some puts overwrite */
        uint32_t v = lcg(&state) % (uint32_t)(keys + keys / 2);
        make_key(key, v);
        inserted += mk_map_put(m, key, (int64_t)v * 1000003);
    }
    int64_t sum = 0, value;
    int hits = 0;
    state = 99u;
    for (int i = 0; i < 2 * keys; i++) {
        make_key(key, lcg(&state) % (uint32_t)(keys + keys / 2));
        if (mk_map_get(m, key, &value)) {
            hits++;
            sum += value;
        }
    }
    size_t cursor = 0;
    const char *k;
    uint32_t iter_hash = 0;
    while (mk_map_iter(m, &cursor, &k, &value)) {
        iter_hash ^= mk_fnv1a32(k) + (uint32_t)value;
    }
    printf("hashmap keys=%d inserted=%d size=%u hits=%d sum=%lld iter=%08x\n", keys, inserted,
           (unsigned)mk_map_size(m), hits, (long long)sum, (unsigned)iter_hash);
    mk_map_free(m);
    return 0;
}
