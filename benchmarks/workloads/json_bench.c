/* CPU-heavy workload: tokenising a generated JSON document repeatedly (minikit's mk_json_count_tokens). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "minikit.h"

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 40;
    size_t cap = 1 << 20, len = 0;
    char *doc = malloc(cap + 256);
    if (doc == NULL) return 1;
    len += (size_t)sprintf(doc + len, "[");
    for (int i = 0; len < cap; i++)
        len += (size_t)sprintf(doc + len, "%s{\"id\":%d,\"name\":\"item\\u00e9%d\",\"tags\":[true,false,null],\"v\":-%d.5e3}",
                               i ? "," : "", i, i, i % 97);
    len += (size_t)sprintf(doc + len, "]");
    long tokens = 0;
    for (int r = 0; r < rounds; r++) tokens += mk_json_count_tokens(doc, len);
    printf("%zu bytes, %ld tokens, depth %d\n", len, tokens, mk_json_max_depth(doc, len));
    free(doc);
    return 0;
}
