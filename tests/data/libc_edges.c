/* What programs may do that a careless C library gets wrong: allocations of zero bytes,
 * comparators that never return 0 or return 0/1, getline into a buffer of the program's own.
 * Prints what each did; the test compares with what glibc gives. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int never_equal(const void *a, const void *b) { return *(const int *)a < *(const int *)b ? -1 : 1; }
static int greater(const void *a, const void *b) { return *(const int *)a > *(const int *)b; }

static void sort_and_print(const char *name, int *v, size_t n, int (*cmp)(const void *, const void *)) {
    qsort(v, n, sizeof *v, cmp);
    printf("%s:", name);
    for (size_t i = 0; i < n; i++) printf(" %d", v[i]);
    printf("\n");
}

int main(void) {
    void *zero[7];
    int aligned = 0;
    zero[0] = malloc(0);
    zero[1] = calloc(0, 4);
    zero[2] = calloc(4, 0);
    zero[3] = realloc(NULL, 0);
    zero[4] = aligned_alloc(16, 0);
    aligned = posix_memalign(&zero[5], 16, 0);
    zero[6] = malloc(1);
    int distinct = 1;
    for (int i = 0; i < 7; i++)
        for (int j = 0; j < i; j++) distinct &= zero[i] != zero[j] || zero[i] == NULL;
    printf("zero-byte allocations: %s, distinct %d, posix_memalign %d\n", zero[0] ? "pointers" : "null", distinct,
           aligned);
    for (int i = 0; i < 7; i++) free(zero[i]);

    int same[40], ascending[40], shuffled[40];
    for (int i = 0; i < 40; i++) same[i] = 7, ascending[i] = i, shuffled[i] = (i * 17) % 40;
    sort_and_print("never 0, all equal", same, 13, never_equal);
    sort_and_print("never 0, all equal, 40", same, 40, never_equal);
    sort_and_print("0/1, ascending", ascending, 20, greater);
    sort_and_print("0/1, shuffled", shuffled, 40, greater);

    size_t cap = 8;
    char *line = malloc(cap);
    ssize_t n;
    while ((n = getline(&line, &cap, stdin)) != -1) printf("%zd: %s", n, line);
    free(line);
    char *word = NULL;
    cap = 0;
    printf("at the end: %zd\n", getdelim(&word, &cap, ' ', stdin));
    /* records ended by a NUL (find -print0) and by a byte above 127 given as a (signed) char */
    char records[] = "ab\0cd\0x\xe9y\xe9z";
    FILE *f = fmemopen(records, sizeof records - 1, "r");
    printf("NUL-ended:");
    for (int i = 0; i < 2; i++) {
        ssize_t got = getdelim(&word, &cap, '\0', f);
        printf(" %zd [%s]", got, word);
    }
    char sep = '\xe9';
    printf("\nbyte-ended:");
    while ((n = getdelim(&word, &cap, sep, f)) != -1) printf(" %zd", n);
    printf("\n");
    fclose(f);
    free(word);
    return 0;
}
