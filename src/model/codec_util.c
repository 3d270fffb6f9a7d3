/* codec_util: see codec_util.h. */
#include "codec_util.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

int model__fail(struct model__pctx *p, const char *field, const char *expected)
{
    if (p->name)
        return drv_err_set(p->err, DRV_EINVAL, 0, "%s \"%s\": field \"%s\": expected %s", p->kind,
                           p->name, field, expected);
    return drv_err_set(p->err, DRV_EINVAL, 0, "%s: field \"%s\": expected %s", p->kind, field,
                       expected);
}

json_t *model__member(const json_t *o, const char *key)
{
    if (!o || !json_is_object(o))
        return NULL;
    json_t *v = json_object_get(o, key);
    return json_is_null(v) ? NULL : v;
}

int model__str(struct model__pctx *p, const json_t *o, const char *key, const char *path,
               bool required, const char *def, char **out)
{
    json_t *v = model__member(o, key);
    *out = NULL;
    if (!v) {
        if (required)
            return model__fail(p, path, "a non-empty string");
        *out = def ? xstrdup(def) : NULL;
        return 0;
    }
    if (!json_is_string(v) || (required && json_string_length(v) == 0))
        return model__fail(p, path, required ? "a non-empty string" : "a string");
    if (strlen(json_string_value(v)) != json_string_length(v))
        return model__fail(p, path, "a string without NUL characters");
    *out = xstrdup(json_string_value(v));
    return 0;
}

int model__strlist(struct model__pctx *p, const json_t *v, const char *path,
                   struct model_strlist *out)
{
    out->v = NULL;
    out->n = 0;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_array(v))
        return model__fail(p, path, "an array of strings");
    size_t n = json_array_size(v);
    out->v = xcalloc(n ? n : 1, sizeof(char *));
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(v, i);
        if (!json_is_string(e) || json_string_length(e) == 0 ||
            strlen(json_string_value(e)) != json_string_length(e)) {
            char field[256];
            snprintf(field, sizeof(field), "%s[%zu]", path, i);
            model__strlist_free(out);
            return model__fail(p, field, "a non-empty string");
        }
        out->v[out->n++] = xstrdup(json_string_value(e));
    }
    return 0;
}

int model__object(struct model__pctx *p, const json_t *o, const char *key, const char *path,
                  bool make_empty, json_t **out)
{
    json_t *v = model__member(o, key);
    *out = NULL;
    if (!v) {
        if (make_empty)
            *out = json_object();
        return 0;
    }
    if (!json_is_object(v))
        return model__fail(p, path, "an object");
    *out = json_deep_copy(v);
    return 0;
}

int model__count(struct model__pctx *p, const json_t *v, const char *path, int *out)
{
    *out = -1;
    if (!v || json_is_null(v))
        return 0;
    if (json_is_integer(v)) {
        json_int_t x = json_integer_value(v);
        if (x < 0 || x > INT_MAX)
            return model__fail(p, path, "a non-negative integer");
        *out = (int)x;
        return 0;
    }
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        char *end;
        errno = 0;
        long x = strtol(s, &end, 10);
        if (*s && *end == '\0' && errno == 0 && x >= 0 && x <= INT_MAX) {
            *out = (int)x;
            return 0;
        }
    }
    return model__fail(p, path, "a non-negative integer");
}

json_t *model__extra(const json_t *o, const char *const *known)
{
    json_t *extra = NULL;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)o, key, v)
    {
        bool k = false;
        for (const char *const *q = known; *q; q++)
            if (strcmp(*q, key) == 0)
                k = true;
        if (k)
            continue;
        if (!extra)
            extra = json_object();
        json_object_set_new(extra, key, json_deep_copy(v));
    }
    return extra;
}

void model__strlist_free(struct model_strlist *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    FREE_NULL(l->v);
    l->n = 0;
}

void model__strlist_copy(struct model_strlist *dst, const struct model_strlist *src)
{
    dst->n = 0;
    dst->v = xcalloc(src->n ? src->n : 1, sizeof(char *));
    for (size_t i = 0; i < src->n; i++)
        dst->v[dst->n++] = xstrdup(src->v[i]);
}

void model__strlist_add_unique(struct model_strlist *l, const char *s)
{
    if (model_strlist_has(l, s))
        return;
    l->v = xrealloc(l->v, (l->n + 1) * sizeof(char *));
    l->v[l->n++] = xstrdup(s);
}

json_t *model__strlist_json(const struct model_strlist *l)
{
    json_t *a = json_array();
    for (size_t i = 0; i < l->n; i++)
        json_array_append_new(a, json_string(l->v[i]));
    return a;
}

void model__put_extra(json_t *o, const json_t *extra)
{
    if (extra)
        json_object_update_missing(o, (json_t *)extra);
}

bool model_strlist_has(const struct model_strlist *l, const char *s)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->v[i], s) == 0)
            return true;
    return false;
}
