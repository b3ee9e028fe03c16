/* <stdlib.h> sorting and searching: qsort, qsort_r and bsearch.
 * qsort is an introsort: median-of-three quicksort, insertion sort below 12 elements,
 * heapsort past a depth of 2 log2(n); no allocation. The same comparisons on every host
 * (glibc's qsort is a merge sort, musl's a smoothsort: their comparator counts differ).
 * It asks the comparator only whether an element goes after another (a result > 0), and
 * never reads outside the array whatever the comparator says: comparators that never
 * return 0, or return 0/1 for "not greater"/"greater", sort as they do with glibc. */

typedef int (*ib_cmp_r)(const void *, const void *, void *);
typedef int (*ib_cmp)(const void *, const void *);

struct ib_sort {
    size_t size;
    ib_cmp_r cmp_r;
    ib_cmp cmp;
    void *arg;
};

static int ib_compare(const struct ib_sort *s, const void *a, const void *b) {
    return s->cmp ? s->cmp(a, b) : s->cmp_r(a, b, s->arg);
}

static void ib_swap(char *a, char *b, size_t size) {
    if (a == b) return;
    for (; size >= 8; size -= 8, a += 8, b += 8) {
        uint64_t t = *(ib_word_u *)a;
        *(ib_word_u *)a = *(ib_word_u *)b;
        *(ib_word_u *)b = t;
    }
    for (; size; size--, a++, b++) {
        char t = *a;
        *a = *b;
        *b = t;
    }
}

static void ib_insertion(const struct ib_sort *s, char *base, size_t n) {
    for (size_t i = 1; i < n; i++)
        for (char *p = base + i * s->size; p > base && ib_compare(s, p - s->size, p) > 0; p -= s->size)
            ib_swap(p - s->size, p, s->size);
}

static void ib_sift(const struct ib_sort *s, char *base, size_t root, size_t n) {
    for (size_t child; (child = 2 * root + 1) < n; root = child) {
        if (child + 1 < n && ib_compare(s, base + (child + 1) * s->size, base + child * s->size) > 0) child++;
        if (ib_compare(s, base + child * s->size, base + root * s->size) <= 0) return;
        ib_swap(base + root * s->size, base + child * s->size, s->size);
    }
}

static void ib_heapsort(const struct ib_sort *s, char *base, size_t n) {
    for (size_t i = n / 2; i-- > 0;) ib_sift(s, base, i, n);
    for (size_t end = n; end-- > 1;) {
        ib_swap(base, base + end * s->size, s->size);
        ib_sift(s, base, 0, end);
    }
}

static void ib_introsort(const struct ib_sort *s, char *base, size_t n, unsigned depth) {
    size_t size = s->size;
    while (n > 12) {
        if (!depth--) {
            ib_heapsort(s, base, n);
            return;
        }
        /* Median of first, middle and last to the front, as the pivot. */
        char *lo = base, *mid = base + (n / 2) * size, *hi = base + (n - 1) * size;
        if (ib_compare(s, lo, mid) > 0) ib_swap(mid, lo, size);
        if (ib_compare(s, mid, hi) > 0) {
            ib_swap(hi, mid, size);
            if (ib_compare(s, lo, mid) > 0) ib_swap(mid, lo, size);
        }
        ib_swap(base, mid, size);
        /* Hoare partition around base[0]. */
        char *i = base, *j = base + n * size;
        for (;;) {
            do i += size; while (i < j && ib_compare(s, base, i) > 0);
            do j -= size; while (j > base && ib_compare(s, j, base) > 0);
            if (i >= j) break;
            ib_swap(i, j, size);
        }
        ib_swap(base, j, size);
        size_t left = (size_t)(j - base) / size, right = n - left - 1;
        /* Recurse into the smaller side, loop on the larger: stack depth stays logarithmic. */
        if (left < right) {
            ib_introsort(s, base, left, depth);
            base = j + size;
            n = right;
        } else {
            ib_introsort(s, j + size, right, depth);
            n = left;
        }
    }
    ib_insertion(s, base, n);
}

static void ib_sort(struct ib_sort *s, void *base, size_t n) {
    unsigned depth = 0;
    for (size_t m = n; m > 1; m >>= 1) depth += 2;
    if (n > 1 && s->size) ib_introsort(s, (char *)base, n, depth);
}

void LIBC(qsort)(void *base, size_t n, size_t size, ib_cmp cmp) {
    struct ib_sort s = {size, NULL, cmp, NULL};
    ib_sort(&s, base, n);
}

void LIBC(qsort_r)(void *base, size_t n, size_t size, ib_cmp_r cmp, void *arg) {
    struct ib_sort s = {size, cmp, NULL, arg};
    ib_sort(&s, base, n);
}

void *LIBC(bsearch)(const void *key, const void *base, size_t n, size_t size, ib_cmp cmp) {
    const char *lo = (const char *)base;
    while (n) {
        const char *mid = lo + (n / 2) * size;
        int c = cmp(key, mid);
        if (!c) return (void *)mid;
        if (c > 0) {
            lo = mid + size;
            n -= n / 2 + 1;
        } else {
            n /= 2;
        }
    }
    return NULL;
}
