/*
 * drover-test-macro: macro_expand() for shell tests, which play the engine.
 *
 *   drover-test-macro [--strict] [--check] < {"value": ..., "nodes": {...}, "self": "node-1"}
 *
 * Prints the expanded value as JSON. Exit status: 0, 75 when a node lacks
 * data the macros need (DRV_EAGAIN: try again once it is confirmed), 1 on any
 * other error (the message on standard error).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

int main(int argc, char **argv)
{
    unsigned flags = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--strict") == 0)
            flags |= MACRO_STRICT;
        else if (strcmp(argv[i], "--check") == 0)
            flags |= MACRO_CHECK;
        else {
            fprintf(stderr, "usage: drover-test-macro [--strict] [--check] < JSON\n");
            return 2;
        }
    }
    json_error_t je;
    json_t *in = json_loadf(stdin, 0, &je);
    if (!in) {
        fprintf(stderr, "drover-test-macro: %d:%d: %s\n", je.line, je.column, je.text);
        return 1;
    }
    struct macro_ctx c = {.nodes = json_object_get(in, "nodes"),
                          .self = json_string_value(json_object_get(in, "self")),
                          .owner = json_string_value(json_object_get(in, "owner"))};
    json_t *out = NULL;
    struct drv_err err;
    drv_err_clear(&err);
    json_t *value = json_object_get(in, "value");
    int rc = macro_expand(value ? value : json_null(), &c, flags, "config", &out, &err);
    if (rc != 0) {
        fprintf(stderr, "drover-test-macro: %s\n", err.msg);
        json_decref(in);
        return rc == DRV_EAGAIN ? 75 : 1;
    }
    json_dumpf(out, stdout, JSON_COMPACT | JSON_ENCODE_ANY);
    fputc('\n', stdout);
    json_decref(out);
    json_decref(in);
    return 0;
}
