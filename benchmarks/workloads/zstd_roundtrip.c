/* zstd round trips (the zstandard sdist's single-file zstd.c): ZSTD_compress then ZSTD_decompress of a
 * generated text buffer at a few levels. Arguments: size in bytes, rounds (level = 1 + 2 * round). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "zstd.h"

static unsigned lcg(unsigned *s) {
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

int main(int argc, char **argv) {
    static const char *const words[] = {"lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing",
                                        "elit", "sed", "do", "eiusmod", "tempor", "incididunt", "labore", "magna"};
    size_t size = argc > 1 ? strtoul(argv[1], NULL, 10) : 1u << 18, n = 0;
    int rounds = argc > 2 ? atoi(argv[2]) : 3;
    unsigned s = 1;
    char *src = malloc(size), *back = malloc(size);
    size_t bound = ZSTD_compressBound(size);
    char *dst = malloc(bound);
    if (src == NULL || back == NULL || dst == NULL) return 1;
    while (n < size) {
        const char *w = words[lcg(&s) % 15u];
        for (; *w && n < size; w++) src[n++] = *w;
        if (n < size) src[n++] = lcg(&s) % 11u == 0 ? (char)('0' + lcg(&s) % 10u) : ' ';
    }
    size_t total = 0;
    for (int r = 0; r < rounds; r++) {
        int level = 1 + 2 * r;
        size_t c = ZSTD_compress(dst, bound, src, size, level);
        if (ZSTD_isError(c)) return 2;
        size_t d = ZSTD_decompress(back, size, dst, c);
        if (ZSTD_isError(d) || d != size || memcmp(src, back, size) != 0) return 3;
        total += c;
        printf("level %d: %zu -> %zu bytes\n", level, size, c);
    }
    printf("total %zu\n", total);
    free(src);
    free(back);
    free(dst);
    return 0;
}
