/*
 * fuzz_resbundle: a resources push's "files" (or a fetched body) on arbitrary
 * bytes, as the API and the worker read them.
 *
 * Every input that is JSON must be accepted or refused by resbundle_check
 * with a message; an accepted one must have only paths that stay inside a
 * directory (checked again here: no "..", "." or empty component, not
 * absolute) and a canonical text that reads back to the same bundle with the
 * same digest. Nothing may crash, leak or read out of bounds.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "resbundle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void inside(const char *p)
{
    if (!*p || p[0] == '/')
        abort();
    for (const char *s = p;;) {
        const char *e = strchr(s, '/');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
            abort();
        if (!e)
            break;
        s = e + 1;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *files = json_loadb((const char *)data, size, 0, NULL);
    if (!files)
        return 0;
    struct drv_err err;
    size_t total;
    int rc = resbundle_check(files, 1 << 20, &total, &err);
    if (rc != 0 && (rc != DRV_EINVAL && rc != DRV_ETOOBIG))
        abort();
    if (rc == 0) {
        const char *path;
        json_t *v;
        json_object_foreach(files, path, v) inside(path);
        char *a = resbundle_canonical(files);
        json_t *back = json_loads(a, 0, NULL);
        char *b = back ? resbundle_canonical(back) : NULL;
        if (!b || strcmp(a, b) != 0)
            abort();
        char ha[65], hb[65];
        resbundle_sha256_hex(a, strlen(a), ha);
        resbundle_sha256_hex(b, strlen(b), hb);
        if (strcmp(ha, hb) != 0)
            abort();
        free(a);
        free(b);
        json_decref(back);
    }
    json_decref(files);
    return 0;
}
