/*
 * wordfreq.c - print the most frequent words read from standard input.
 *
 * Usage: wordfreq [N]
 *
 * Reads all of stdin, splits it into words (maximal runs of ASCII letters,
 * folded to lowercase; every other byte is a separator), counts them with
 * the minikit hash map, and prints the N most frequent words (default 10)
 * as "word count" lines.  Ordering is by count descending, then by word
 * ascending (byte-wise), so the output is fully deterministic.
 *
 * Exit status: 0 on success, 1 on I/O or memory errors, 2 for a bad
 * command line (message on stderr).
 */
#include "minikit.h"

#include <instrbudget.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_TOP_N   10u
#define READ_CHUNK      4096u

/* One (word, count) pair collected from the map for sorting. */
typedef struct {
    const char *word;
    int64_t     count;
} word_count;

/* Parse a positive decimal integer (digits only, no sign, no overflow). */
static int parse_top_n(const char *s, size_t *out)
{
    size_t value = 0;
    if (*s == '\0') {
        return 0;
    }
    for (; *s != '\0'; s++) {
        if (*s < '0' || *s > '9') {
            return 0;
        }
        size_t digit = (size_t)(*s - '0');
        if (value > (SIZE_MAX - digit) / 10) {
            return 0; /* would overflow */
        }
        value = value * 10 + digit;
    }
    if (value == 0) {
        return 0;
    }
    *out = value;
    return 1;
}

/* Read the whole stream into a malloc'd buffer with one spare byte at the
 * end (so the text can be NUL-terminated).  Returns NULL on failure. */
static char *read_all(FILE *f, size_t *len_out)
{
    size_t cap = READ_CHUNK;
    size_t len = 0;
    char *buf = malloc(cap);
    if (buf == NULL) {
        return NULL;
    }
    for (;;) {
        if (cap - len < 2) { /* keep room for >= 1 byte + the spare */
            if (cap > SIZE_MAX / 2) {
                free(buf);
                return NULL;
            }
            char *bigger = realloc(buf, cap * 2);
            if (bigger == NULL) {
                free(buf);
                return NULL;
            }
            buf = bigger;
            cap *= 2;
        }
        size_t got = fread(buf + len, 1, cap - len - 1, f);
        len += got;
        if (got == 0) {
            break;
        }
    }
    if (ferror(f)) {
        free(buf);
        return NULL;
    }
    buf[len] = '\0';
    *len_out = len;
    return buf;
}

static int is_upper(char c) { return c >= 'A' && c <= 'Z'; }
static int is_lower(char c) { return c >= 'a' && c <= 'z'; }

/* Lowercase @p text in place and count every word in @p m.  Each word is
 * temporarily NUL-terminated in the buffer to serve as a map key (the map
 * copies keys).  @p text must have a writable byte at text[len].
 * Returns 0 on success, -1 on allocation failure. */
static int count_words(mk_map *m, char *text, size_t len)
{
    size_t i = 0;
    while (i < len) {
        /* skip separators */
        while (i < len && !is_upper(text[i]) && !is_lower(text[i])) {
            i++;
        }
        size_t start = i;
        while (i < len && (is_upper(text[i]) || is_lower(text[i]))) {
            if (is_upper(text[i])) {
                text[i] = (char)(text[i] - 'A' + 'a');
            }
            i++;
        }
        if (i == start) {
            break; /* reached the end */
        }
        char saved = text[i];
        text[i] = '\0';
        int64_t count = 0;
        (void)mk_map_get(m, text + start, &count);
        int rc = mk_map_put(m, text + start, count + 1);
        text[i] = saved;
        if (rc < 0) {
            return -1;
        }
    }
    return 0;
}

/* Output order: higher count first, then alphabetical. */
static int comes_before(const word_count *a, const word_count *b)
{
    if (a->count != b->count) {
        return a->count > b->count;
    }
    return strcmp(a->word, b->word) < 0;
}

/* Top-down merge sort of a[0..n) using tmp[0..n) as scratch space.
 * Written by hand so all the work is in this program's own code. */
static void sort_entries(word_count *a, word_count *tmp, size_t n)
{
    if (n < 2) {
        return;
    }
    size_t half = n / 2;
    sort_entries(a, tmp, half);
    sort_entries(a + half, tmp, n - half);

    size_t i = 0, j = half, k = 0;
    while (i < half && j < n) {
        /* take from the right run only if strictly before: stable merge */
        if (comes_before(&a[j], &a[i])) {
            tmp[k++] = a[j++];
        } else {
            tmp[k++] = a[i++];
        }
    }
    while (i < half) {
        tmp[k++] = a[i++];
    }
    while (j < n) {
        tmp[k++] = a[j++];
    }
    memcpy(a, tmp, n * sizeof *a);
}

int main(int argc, char **argv)
{
    size_t top_n = DEFAULT_TOP_N;
    if (argc > 2) {
        fprintf(stderr, "usage: %s [N]\n", argv[0]);
        return 2;
    }
    if (argc == 2 && !parse_top_n(argv[1], &top_n)) {
        fprintf(stderr, "wordfreq: N must be a positive integer, got '%s'\n",
                argv[1]);
        return 2;
    }

    INSTRBUDGET_REGION_START("read");
    size_t len = 0;
    char *text = read_all(stdin, &len);
    INSTRBUDGET_REGION_STOP();
    if (text == NULL) {
        fprintf(stderr, "wordfreq: failed to read standard input\n");
        return 1;
    }

    int status = 1;
    word_count *entries = NULL;
    word_count *scratch = NULL;
    INSTRBUDGET_REGION_START("count");
    mk_map *counts = mk_map_new(0);
    int counted = counts != NULL && count_words(counts, text, len) == 0;
    INSTRBUDGET_REGION_STOP();
    if (!counted) {
        fprintf(stderr, "wordfreq: out of memory\n");
        goto done;
    }

    size_t n = mk_map_size(counts);
    if (n > 0) {
        entries = malloc(n * sizeof *entries);
        scratch = malloc(n * sizeof *scratch);
        if (entries == NULL || scratch == NULL) {
            fprintf(stderr, "wordfreq: out of memory\n");
            goto done;
        }
    }
    INSTRBUDGET_REGION_START("rank");
    size_t cursor = 0;
    size_t k = 0;
    while (k < n && mk_map_iter(counts, &cursor, &entries[k].word,
                                &entries[k].count)) {
        k++;
    }
    INSTRBUDGET_REGION_START("sort");
    sort_entries(entries, scratch, n);
    INSTRBUDGET_REGION_STOP();
    INSTRBUDGET_REGION_STOP();

    if (top_n > n) {
        top_n = n;
    }
    for (size_t i = 0; i < top_n; i++) {
        printf("%s %" PRId64 "\n", entries[i].word, entries[i].count);
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "wordfreq: write error\n");
        goto done;
    }
    status = 0;

done:
    free(scratch);
    free(entries);
    mk_map_free(counts);
    free(text);
    return status;
}
