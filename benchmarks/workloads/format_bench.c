/* Formatting- and parsing-heavy workload: n records formatted with snprintf (integers, fixed and
 * exponent floats, strings, widths), parsed back with sscanf and strtod, checked and summed;
 * `rounds` times. Arguments: n rounds. Prints the sum, so the work cannot be skipped. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 10000, rounds = argc > 2 ? atoi(argv[2]) : 1;
    char line[128], name[32];
    double total = 0;
    unsigned seed = 12345;
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < n; i++) {
            seed = seed * 1664525u + 1013904223u;
            double value = (double)(seed >> 8) / 1024.0 - 4096.0;
            int len = snprintf(line, sizeof line, "%08d %-10s %.6f %e %x", i, i % 3 ? "alpha" : "omega", value,
                               value * 1e-3, seed);
            int id = 0;
            double fixed = 0;
            unsigned hex = 0;
            if (sscanf(line, "%d %31s %lf %*e %x", &id, name, &fixed, &hex) != 4 || id != i || hex != seed) return 1;
            char *end;
            double scientific = strtod(strchr(line + 20, 'e') - 9, &end);
            total += fixed + scientific + len + (double)strlen(name);
        }
    }
    printf("%.3f\n", total);
    return 0;
}
