/* CPU-heavy workload on real third-party code: yyjson parsing and writing a generated document. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "yyjson.h"

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 30;
    yyjson_mut_doc *mdoc = yyjson_mut_doc_new(NULL);
    yyjson_mut_val *arr = yyjson_mut_arr(mdoc);
    yyjson_mut_doc_set_root(mdoc, arr);
    for (int i = 0; i < 20000; i++) {
        yyjson_mut_val *obj = yyjson_mut_arr_add_obj(mdoc, arr);
        yyjson_mut_obj_add_int(mdoc, obj, "id", i);
        yyjson_mut_obj_add_real(mdoc, obj, "score", i * 0.37);
        yyjson_mut_obj_add_str(mdoc, obj, "name", "a fairly ordinary name");
        yyjson_mut_obj_add_bool(mdoc, obj, "ok", i % 3 == 0);
    }
    size_t len = 0;
    char *text = yyjson_mut_write(mdoc, 0, &len);
    size_t total = 0;
    for (int r = 0; r < rounds; r++) {
        yyjson_doc *doc = yyjson_read(text, len, 0);
        total += yyjson_arr_size(yyjson_doc_get_root(doc));
        yyjson_doc_free(doc);
    }
    printf("%zu bytes, %zu values\n", len, total);
    free(text);
    yyjson_mut_doc_free(mdoc);
    return 0;
}
