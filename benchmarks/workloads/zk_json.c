/* zkVM workload: validating an LCG-generated JSON document (minikit's mk_json_count_tokens and
 * mk_json_max_depth).  Compile with example_project/src/json.c.  Deterministic: fixed seed, no time, no rand(). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "minikit.h"

#define DOC_CAP 12000

static char doc[DOC_CAP + 128];
static size_t len;

static uint32_t lcg(uint32_t *state)
{
    *state = *state * 1664525u + 1013904223u;
    return *state >> 8;
}

static void put(const char *s)
{
    while (*s != '\0') {
        doc[len++] = *s++;
    }
}

static void put_uint(uint32_t v)
{
    char tmp[12];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10u);
        v /= 10u;
    } while (v != 0);
    while (n > 0) {
        doc[len++] = tmp[--n];
    }
}

/* One record: {"id":N,"name":"itemN","tags":[true,false,null],"pos":[x,y,[z]],"v":-N.5e3} */
static void put_record(uint32_t *state, uint32_t id)
{
    put("{\"id\":");
    put_uint(id);
    put(",\"name\":\"item\\u00e9");
    put_uint(lcg(state) % 1000u);
    put("\",\"tags\":[true,false,null],\"pos\":[");
    put_uint(lcg(state) % 100000u);
    put(",");
    put_uint(lcg(state) % 100000u);
    put(",[");
    put_uint(lcg(state) % 7u);
    put("]],\"v\":-");
    put_uint(lcg(state) % 97u);
    put(".5e3}");
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 4;
    uint32_t state = 2024u;
    put("[");
    for (uint32_t id = 0; len < DOC_CAP; id++) {
        if (id != 0) {
            put(",");
        }
        put_record(&state, id);
    }
    put("]");
    long tokens = 0;
    for (int r = 0; r < rounds; r++) {
        tokens += mk_json_count_tokens(doc, len);
    }
    int depth = mk_json_max_depth(doc, len);
    printf("json bytes=%u rounds=%d tokens=%ld depth=%d\n", (unsigned)len, rounds, tokens, depth);
    return tokens > 0 && depth == 4 ? 0 : 1;
}
