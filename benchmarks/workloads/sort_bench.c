/* CPU-heavy workload: introsort of pseudo-random int32 arrays (minikit's mk_sort_ints). */
#include <stdio.h>
#include <stdlib.h>
#include "minikit.h"

int main(int argc, char **argv) {
    size_t n = argc > 1 ? (size_t)strtoul(argv[1], NULL, 10) : 2000000;
    int32_t *a = malloc(n * sizeof *a);
    if (a == NULL) return 1;
    mk_fill_random(a, n, 12345u);
    mk_sort_ints(a, n);
    printf("%d %d sorted=%d\n", a[0], a[n - 1], mk_is_sorted(a, n));
    free(a);
    return 0;
}
