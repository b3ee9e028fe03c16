/* The quadratic strlen loop: strlen(s) re-evaluated on every iteration over a string of n 'a's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 10000;
    char *s = malloc((size_t)n + 1);
    if (s == NULL) return 1;
    memset(s, 'a', (size_t)n);
    s[n] = 0;
    for (size_t i = 0; i < strlen(s); i++)
        if (s[i] == 'a') s[i] = 'A';
    int ok = n == 0 || s[n - 1] == 'A';
    printf("%d characters, last upper=%d\n", n, ok);
    free(s);
    return !ok;
}
