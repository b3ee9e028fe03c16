/* String- and allocation-heavy workload: build n strings with malloc/strcpy/strcat/strlen/memcpy,
 * qsort them with strcmp, join them, free them; `rounds` times. Arguments: n rounds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const WORDS[] = {"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
                                    "india", "juliett", "kilo", "lima", "mike", "november", "oscar", "papa"};

static unsigned lcg(unsigned *s) {
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

/* Decimal digits of v into buf (own code: printf's formatting would be the host's, uncounted). */
static void put_number(char *buf, unsigned v) {
    char tmp[16];
    int k = 0;
    do {
        tmp[k++] = (char)('0' + v % 10u);
        v /= 10u;
    } while (v != 0);
    for (int i = 0; i < k; i++) buf[i] = tmp[k - 1 - i];
    buf[k] = 0;
}

static int by_string(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 100000, rounds = argc > 2 ? atoi(argv[2]) : 5;
    char **strs = malloc((size_t)n * sizeof *strs);
    if (strs == NULL) return 1;
    unsigned seed = 7, checksum = 0;
    size_t joined_total = 0;
    for (int r = 0; r < rounds; r++) {
        size_t total = 0;
        for (int i = 0; i < n; i++) {
            char number[16], part[64];
            const char *a = WORDS[lcg(&seed) % 16u], *b = WORDS[lcg(&seed) % 16u];
            put_number(number, lcg(&seed) % 100000u);
            strcpy(part, a);
            strcat(part, "-");
            strcat(part, b);
            strcat(part, "-");
            strcat(part, number);
            size_t len = strlen(part);
            char *s = malloc(len + 1);
            if (s == NULL) return 1;
            memcpy(s, part, len + 1);
            strs[i] = s;
            total += len;
        }
        qsort(strs, (size_t)n, sizeof *strs, by_string);
        char *joined = malloc(total + (size_t)n + 1), *p = joined;
        if (joined == NULL) return 1;
        for (int i = 0; i < n; i++) {
            size_t len = strlen(strs[i]);
            memcpy(p, strs[i], len);
            p += len;
            *p++ = '\n';
            free(strs[i]);
        }
        *p = 0;
        joined_total += strlen(joined);
        for (size_t i = 0; joined[i] != 0; i += 97) checksum = checksum * 31u + (unsigned char)joined[i];
        free(joined);
    }
    printf("%d strings x %d rounds, %zu bytes joined, checksum %08x\n", n, rounds, joined_total, checksum);
    free(strs);
    return 0;
}
