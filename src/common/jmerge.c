/*
 * jmerge: RFC 7396 merge patch and a leaf diff (see jmerge.h for the rules).
 * Recursion depth is the depth of the inputs, which jansson bounds at 2048
 * when it parses them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jmerge.h"
#include "xalloc.h"

json_t *jmerge_patch(const json_t *target, const json_t *patch)
{
    if (!json_is_object(patch))
        return json_deep_copy(patch);
    json_t *out = json_is_object(target) ? json_deep_copy(target) : json_object();
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)patch, k, v)
    {
        if (json_is_null(v))
            json_object_del(out, k);
        else
            json_object_set_new(out, k, jmerge_patch(json_object_get(out, k), v));
    }
    return out;
}

static void diff_at(const json_t *a, const json_t *b, const char *path, json_t *out)
{
    if (json_is_object(a) && json_is_object(b)) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)a, k, v)
        {
            char *sub = *path ? xasprintf("%s.%s", path, k) : xstrdup(k);
            diff_at(v, json_object_get(b, k), sub, out);
            free(sub);
        }
        json_object_foreach((json_t *)b, k, v)
        {
            if (json_object_get(a, k))
                continue;
            char *sub = *path ? xasprintf("%s.%s", path, k) : xstrdup(k);
            diff_at(NULL, v, sub, out);
            free(sub);
        }
        return;
    }
    /* An object on one side only: each of its leaves is added or removed. */
    if ((json_is_object(a) && !b) || (json_is_object(b) && !a)) {
        json_t *e = json_object();
        diff_at(a ? a : e, b ? b : e, path, out);
        json_decref(e);
        return;
    }
    if (a && b && json_equal(a, b))
        return;
    json_t *d = json_pack("{s:s}", "key", path);
    if (a)
        json_object_set(d, "old", (json_t *)a);
    if (b)
        json_object_set(d, "new", (json_t *)b);
    json_array_append_new(out, d);
}

static int by_key(const void *x, const void *y)
{
    const json_t *const *a = x, *const *b = y;
    return strcmp(json_string_value(json_object_get(*a, "key")),
                  json_string_value(json_object_get(*b, "key")));
}

json_t *jmerge_diff(const json_t *a, const json_t *b)
{
    json_t *out = json_array();
    json_t *ea = a ? NULL : json_object(), *eb = b ? NULL : json_object();
    diff_at(a ? a : ea, b ? b : eb, "", out);
    json_decref(ea);
    json_decref(eb);
    size_t n = json_array_size(out);
    json_t **v = xcalloc(n + 1, sizeof(*v));
    for (size_t i = 0; i < n; i++)
        v[i] = json_incref(json_array_get(out, i));
    qsort(v, n, sizeof(*v), by_key);
    json_array_clear(out);
    for (size_t i = 0; i < n; i++)
        json_array_append_new(out, v[i]);
    free(v);
    return out;
}
