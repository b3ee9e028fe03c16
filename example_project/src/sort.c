/*
 * sort.c - introsort for int32_t arrays, plus a small deterministic PRNG.
 *
 * Introsort (Musser, 1997) runs quicksort with a median-of-three pivot,
 * switches to heapsort when the recursion gets deeper than 2*log2(n)
 * (guaranteeing O(n log n) worst case), and finishes small ranges with
 * insertion sort.  Recursion always goes into the smaller partition and
 * loops on the larger one, so stack depth is O(log n).
 */
#include "minikit.h"

#include <limits.h>

/* Ranges at most this long are left for insertion sort. */
#define INSERTION_THRESHOLD 16u

/* Seed substituted for a zero xorshift state (golden-ratio constant). */
#define XORSHIFT_ZERO_SEED 0x9E3779B9u

static void swap_ints(int32_t *x, int32_t *y)
{
    int32_t t = *x;
    *x = *y;
    *y = t;
}

/* Straight insertion sort; fast for short or nearly sorted ranges. */
static void insertion_sort(int32_t *a, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        int32_t v = a[i];
        size_t j = i;
        while (j > 0 && a[j - 1] > v) {
            a[j] = a[j - 1];
            j--;
        }
        a[j] = v;
    }
}

/* Restore the max-heap property below @p root in the heap a[0..n). */
static void sift_down(int32_t *a, size_t root, size_t n)
{
    for (;;) {
        size_t child = 2 * root + 1; /* root < n/2 here, so no overflow */
        if (child >= n) {
            return;
        }
        if (child + 1 < n && a[child] < a[child + 1]) {
            child++;
        }
        if (a[root] >= a[child]) {
            return;
        }
        swap_ints(&a[root], &a[child]);
        root = child;
    }
}

static void heap_sort(int32_t *a, size_t n)
{
    if (n < 2) {
        return;
    }
    for (size_t i = n / 2; i-- > 0;) {
        sift_down(a, i, n);
    }
    for (size_t end = n - 1; end > 0; end--) {
        swap_ints(&a[0], &a[end]);
        sift_down(a, 0, end);
    }
}

/*
 * Hoare partition of a[0..n) (n >= 3) around the median of the first,
 * middle and last elements.  Returns j such that every element of a[0..j]
 * is <= every element of a[j+1..n), with 0 <= j < n - 1 (so both parts are
 * non-empty and strictly smaller than n).
 */
static size_t partition(int32_t *a, size_t n)
{
    size_t mid = n / 2;
    size_t last = n - 1;

    /* Order a[0] <= a[mid] <= a[last]; these act as scan sentinels. */
    if (a[mid] < a[0]) {
        swap_ints(&a[mid], &a[0]);
    }
    if (a[last] < a[mid]) {
        swap_ints(&a[last], &a[mid]);
        if (a[mid] < a[0]) {
            swap_ints(&a[mid], &a[0]);
        }
    }
    int32_t pivot = a[mid];

    size_t i = 0;
    size_t j = last;
    for (;;) {
        while (a[i] < pivot) {
            i++;
        }
        while (a[j] > pivot) {
            j--;
        }
        if (i >= j) {
            return j;
        }
        swap_ints(&a[i], &a[j]);
        i++;
        j--;
    }
}

static void introsort_loop(int32_t *a, size_t n, unsigned depth_budget)
{
    while (n > INSERTION_THRESHOLD) {
        if (depth_budget == 0) {
            heap_sort(a, n);
            return;
        }
        depth_budget--;

        size_t j = partition(a, n);
        size_t left_n = j + 1;
        size_t right_n = n - left_n;

        /* Recurse on the smaller side, iterate on the larger one. */
        if (left_n < right_n) {
            introsort_loop(a, left_n, depth_budget);
            a += left_n;
            n = right_n;
        } else {
            introsort_loop(a + left_n, right_n, depth_budget);
            n = left_n;
        }
    }
}

void mk_sort_ints(int32_t *a, size_t n)
{
    if (a == NULL || n < 2) {
        return;
    }
    /* depth budget = 2 * floor(log2(n)) */
    unsigned depth_budget = 0;
    for (size_t m = n; m > 1; m >>= 1) {
        depth_budget += 2;
    }
    introsort_loop(a, n, depth_budget);
    /* Quicksort/heapsort leave runs of <= INSERTION_THRESHOLD elements
     * unsorted but in their final partition; one insertion pass fixes them
     * in O(n * INSERTION_THRESHOLD). */
    insertion_sort(a, n);
}

int mk_is_sorted(const int32_t *a, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        if (a[i - 1] > a[i]) {
            return 0;
        }
    }
    return 1;
}

uint32_t mk_xorshift32(uint32_t *state)
{
    uint32_t x = *state;
    if (x == 0) {
        x = XORSHIFT_ZERO_SEED;
    }
    /* Marsaglia (2003), shift triple (13, 17, 5): full period 2^32 - 1. */
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    *state = x;
    return x;
}

/* Map a uint32_t onto the full int32_t range without relying on the
 * implementation-defined conversion of out-of-range values. */
static int32_t u32_to_i32(uint32_t u)
{
    if (u <= (uint32_t)INT32_MAX) {
        return (int32_t)u;
    }
    /* u in [2^31, 2^32): result is u - 2^32, i.e. in [INT32_MIN, -1]. */
    return -(int32_t)(UINT32_MAX - u) - 1;
}

void mk_fill_random(int32_t *a, size_t n, uint32_t seed)
{
    uint32_t state = seed;
    for (size_t i = 0; i < n; i++) {
        a[i] = u32_to_i32(mk_xorshift32(&state));
    }
}
