/*
 * seal: sensitive values in request bodies, sealed before they are stored.
 *
 * A value is sensitive when its key's name says so (api_field_sensitive:
 * password, secret, token, credential, private_key, api_key), at any depth,
 * or when its dotted path is listed by the entity (a provider's "sensitive"
 * array, paths relative to its provisioner object). The whole value is
 * sealed, whatever its JSON type: a string as "enc:v1:..." (its text), any
 * other value as "enc:j1:..." (its compact JSON text), so an object, an
 * array or a number never reaches the database in clear. null and "" are
 * left alone. "********" (what the API shows in place of a sealed value)
 * keeps the value stored at the same place before; where there is none, it
 * is refused.
 *
 * Where it applies (handlers): a provider's provisioner, a cluster or partial
 * template's defaults.config, a create's and a preview's config, a
 * configure's config (and so the job requests that carry them).
 *
 * Pool or heavy thread code, on the call's own data; the key is read-only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "handlers.h"
#include "xalloc.h"

static bool listed(const json_t *marked, const char *path)
{
    size_t i;
    json_t *v;
    json_array_foreach(marked, i, v) if (strcmp(json_string_value(v), path) == 0) return true;
    return false;
}

static bool is_sealed(const json_t *v)
{
    const char *s = json_string_value(v);
    return s && (strncmp(s, "enc:v1:", 7) == 0 || strncmp(s, "enc:j1:", 7) == 0);
}

static int walk(struct call *c, json_t *j, const json_t *prev, const json_t *marked,
                const char *path, const char *where);

/* One sensitive value at key k of object obj. */
static int seal_one(struct call *c, json_t *obj, const char *k, json_t *v, const json_t *prev,
                    const char *field)
{
    if (json_is_null(v) || (json_is_string(v) && json_string_length(v) == 0) || is_sealed(v))
        return 0;
    if (json_is_string(v) && strcmp(json_string_value(v), API_REDACTED) == 0) {
        json_t *old = json_is_object(prev) ? json_object_get(prev, k) : NULL;
        if (!is_sealed(old))
            return call_fail(c, 400, "invalid", field,
                             "field \"%s\": \"%s\" keeps a stored value, and there is none", field,
                             API_REDACTED);
        json_object_set(obj, k, old);
        return 0;
    }
    if (!c->key)
        return call_fail(c, 422, "no-secrets-key", field,
                         "field \"%s\" is sensitive and secrets.key_file is not configured", field);
    json_object_set_new(obj, k, api_secret_seal(c->key, v));
    return 0;
}

static int walk(struct call *c, json_t *j, const json_t *prev, const json_t *marked,
                const char *path, const char *where)
{
    char sub[512], field[640];
    if (json_is_array(j)) {
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v)
        {
            snprintf(field, sizeof(field), "%s[%zu]", where, i);
            int rc = walk(c, v, json_is_array(prev) ? json_array_get(prev, i) : NULL, marked, path,
                          field);
            if (rc)
                return rc;
        }
        return 0;
    }
    if (!json_is_object(j))
        return 0;
    const char *k;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(j, tmp, k, v)
    {
        snprintf(sub, sizeof(sub), "%s%s%s", path, *path ? "." : "", k);
        snprintf(field, sizeof(field), "%s%s%s", where, *where ? "." : "", k);
        const json_t *pv = json_is_object(prev) ? json_object_get(prev, k) : NULL;
        int rc = api_field_sensitive(k) || listed(marked, sub) ? seal_one(c, j, k, v, prev, field)
                                                               : walk(c, v, pv, marked, sub, field);
        if (rc)
            return rc;
    }
    return 0;
}

int api__seal(struct call *c, json_t *j, const json_t *prev, const json_t *marked,
              const char *where)
{
    return walk(c, j, prev, marked, "", where ? where : "");
}
