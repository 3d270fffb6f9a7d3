/*
 * handlers_util: what the handler files share: name checks, the audit entry
 * of a write, body and model-error helpers. Pool-thread code, no state.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "handlers.h"
#include "log.h"
#include "model.h"
#include "store.h"

/* ---- small helpers ---------------------------------------------------------- */

int api__name_ok(const char *s, int lower_only)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > 63 || !isalnum((unsigned char)s[0]))
        return 0;
    for (const char *p = s; *p; p++) {
        unsigned char ch = (unsigned char)*p;
        if (lower_only && isupper(ch))
            return 0;
        if (!isalnum(ch) && ch != '-' && ch != '_' && (lower_only || ch != '.'))
            return 0;
    }
    return 1;
}

/* Entity names come from catalogues: letters, digits and . _ - (up to 128). */
int api__entity_name_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > 128)
        return 0;
    for (const char *p = s; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_' && *p != '.')
            return 0;
    /* "." and ".." name directories wherever names become paths (exports, plugin dirs). */
    return strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

int api__audit(PGconn *conn, struct call *c, const char *action, const char *kind, const char *id,
               json_t *detail, struct drv_err *err)
{
    char *d = detail ? json_dumps(detail, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(detail);
    int rc = store_audit(conn, c->who.tenant_id[0] ? c->who.tenant_id : NULL, c->who.user_id,
                         c->who.user, action, kind, id, c->source, d, err);
    free(d);
    return rc;
}

int api__need_body(struct call *c)
{
    if (!c->body)
        return call_fail(c, 400, "malformed", NULL, "a JSON object body is required");
    return 0;
}

/* The field path inside a model error ("... field \"a.b\": ..."), into out. */
void api__model_field(const char *msg, const char *prefix, char *out, size_t n)
{
    const char *f = strstr(msg, "field \"");
    if (!f) {
        snprintf(out, n, "%s", prefix ? prefix : "");
        return;
    }
    f += 7;
    size_t len = strcspn(f, "\"");
    snprintf(out, n, "%s%s%.*s", prefix ? prefix : "", prefix && *prefix ? "." : "", (int)len, f);
}

int api__string_list_ok(const json_t *j)
{
    size_t i;
    json_t *v;
    if (!json_is_array(j))
        return 0;
    json_array_foreach(j, i, v) if (!json_is_string(v)) return 0;
    return 1;
}

int api__kind_of(const char *seg)
{
    int k = model_kind_parse(seg);
    if (k < 0 || strcmp(model_kind_dir((enum model_kind)k), seg) != 0)
        return -1;
    return k;
}

/*
 * The caller's tenant's catalogue now, shared (model_catset). A catalogue version names one
 * catalogue (docs/schema.md, version 9), so while this node's cache has the tenant's head
 * version the catalogue costs one indexed read of the head; otherwise the entities and
 * their version are read in one statement, parsed, and cached for the next request (and
 * for the engine, which plans the job from the same version). *out is a new reference.
 */
int api__load_catalog(PGconn *conn, struct call *c, struct model_catset **out, struct drv_err *err)
{
    const char *tenant = c->who.tenant_id;
    long long version = 0;
    *out = NULL;
    int rc = store_catalog_head(conn, tenant, &version, err);
    if (rc)
        return rc;
    *out = model_catcache_get(c->opts->catalogs, tenant, version);
    if (*out)
        return 0;
    json_t *rows;
    if ((rc = store_catalog_read(conn, tenant, &version, &rows, err)) != 0)
        return rc;
    *out = model_catset_new(tenant, version, rows, false);
    if (model_catset_refused(*out))
        log_warn("api", "event=bad_stored_entity tenant=%s catalog_version=%lld refused=%zu",
                 tenant, version, model_catset_refused(*out));
    model_catcache_put(c->opts->catalogs, *out);
    return 0;
}

int api__pin_catalog(PGconn *conn, struct model_catset *s, struct drv_err *err)
{
    if (model_catset_pinned(s))
        return 0;
    char *text = json_dumps(model_catset_rows(s), JSON_COMPACT);
    int rc = store_catalog_pin(conn, model_catset_tenant(s), model_catset_version(s), text, err);
    free(text);
    return rc;
}

int api__entity_version(const json_t *rows, const char *kind, const char *name)
{
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r)
    {
        if (strcmp(json_string_value(json_object_get(r, "kind")), kind) == 0 &&
            strcmp(json_string_value(json_object_get(r, "name")), name) == 0)
            return (int)json_integer_value(json_object_get(r, "version"));
    }
    return 0;
}

static int query_long(struct call *c, const char *key, long min, long max, long dflt, long *out)
{
    char *v = call_query(c, key);
    *out = dflt;
    if (!v)
        return 0;
    char *end;
    long n = strtol(v, &end, 10);
    bool bad = !*v || *end || n < min || n > max;
    free(v);
    if (bad)
        return call_fail(c, 400, "invalid", key, "query parameter \"%s\": expected %ld to %ld", key,
                         min, max);
    *out = n;
    return 0;
}

int api__page_params(struct call *c, long *offset, long *limit)
{
    int rc = query_long(c, "offset", 0, 1000000000L, 0, offset);
    if (rc == 0)
        rc = query_long(c, "limit", 1, API_PAGE_MAX, API_PAGE_DEFAULT, limit);
    return rc;
}
