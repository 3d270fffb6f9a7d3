/*
 * fuzz_macro: macro expansion on arbitrary input, in every mode.
 *
 * Input that parses as JSON is walked as a value, anything else is one
 * string; both against a fixed cluster (one node has no addresses yet). Besides
 * not crashing, the modes must agree:
 *   - a full expansion that succeeds also passes the plan-time check;
 *   - a check that passes fails the full expansion only for missing node
 *     data (DRV_EAGAIN);
 *   - a strict expansion that succeeds gives what the lenient one gives.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "xalloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char nodes_json[] =
    "{\"node-1\": {\"hostname\": \"h1\", \"ipaddresses\": {\"access_v4\": \"10.0.0.1\"},"
    " \"services\": [\"zk\", \"web\"]},"
    " \"node-2\": {\"hostname\": \"h2\", \"ipaddresses\": {\"access_v4\": \"10.0.0.2\","
    " \"bind_v4\": \"10.1.0.2\"}, \"services\": [\"zk\"]},"
    " \"node-3\": {\"services\": [\"lb\"]}}";

static int run(json_t *j, const char *s, const struct macro_ctx *c, unsigned flags, char **out)
{
    struct drv_err err;
    if (j) {
        json_t *o = NULL;
        int rc = macro_expand(j, c, flags, "fuzz", &o, &err);
        if (rc == 0 && out)
            *out = json_dumps(o, JSON_SORT_KEYS | JSON_ENCODE_ANY);
        json_decref(o);
        return rc;
    }
    return macro_expand_string(s, c, flags, out, &err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static json_t *nodes;
    if (!nodes)
        nodes = json_loads(nodes_json, 0, NULL);
    char *s = xstrndup((const char *)data, size);
    json_t *j = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
    const char *selves[] = {NULL, "node-1", "node-3"};
    for (size_t k = 0; k < 3; k++) {
        struct macro_ctx c = {.nodes = nodes, .self = selves[k], .owner = k ? "o" : NULL};
        char *lenient = NULL, *strict = NULL;
        int full = run(j, s, &c, 0, &lenient);
        int check = run(j, s, &c, MACRO_CHECK, NULL);
        int st = run(j, s, &c, MACRO_STRICT, &strict);
        int stcheck = run(j, s, &c, MACRO_STRICT | MACRO_CHECK, NULL);
        if (full == 0 && check != 0)
            abort();
        if (check == 0 && full != 0 && full != DRV_EAGAIN)
            abort();
        if (st == 0 && (full != 0 || strcmp(strict, lenient) != 0))
            abort();
        if (st == 0 && stcheck != 0)
            abort();
        free(lenient);
        free(strict);
    }
    json_decref(j);
    free(s);
    return 0;
}
