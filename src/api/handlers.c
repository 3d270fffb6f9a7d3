/*
 * handlers: the routes of /v1 and what each does (docs/api.md).
 *
 * Every handler runs on a store pool thread after authentication, with the
 * caller in c->who; it reads c->seg/c->body, runs its queries, and leaves
 * the reply in c->status/c->out (or an error through call_fail or a DRV
 * code). Writes run in one transaction with their audit entry: a handler
 * that fails after BEGIN returns non-zero and call_work rolls back.
 *
 * Tenant isolation: every query takes the caller's tenant id (and, for role
 * user, its user id as the owner), so what another tenant owns is simply not
 * found. A superadmin has no tenant and no route into tenant data.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/http.h>

#include "api_int.h"
#include "coord.h"
#include "log.h"
#include "model.h"
#include "planner.h"
#include "planner_model.h"
#include "solver.h"
#include "store.h"
#include "xalloc.h"

#define ALL (ROLE_SUPER | ROLE_ADMIN | ROLE_USER)
#define TENANT (ROLE_ADMIN | ROLE_USER)

/* ---- small helpers ---------------------------------------------------------- */

static int name_ok(const char *s, int lower_only)
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
static int entity_name_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > 128)
        return 0;
    for (const char *p = s; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_' && *p != '.')
            return 0;
    return 1;
}

static int audit(PGconn *conn, struct call *c, const char *action, const char *kind, const char *id,
                 json_t *detail, struct drv_err *err)
{
    char *d = detail ? json_dumps(detail, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(detail);
    int rc = store_audit(conn, c->who.tenant_id[0] ? c->who.tenant_id : NULL, c->who.user_id,
                         c->who.user, action, kind, id, c->source, d, err);
    free(d);
    return rc;
}

static int need_body(struct call *c)
{
    if (!c->body)
        return call_fail(c, 400, "malformed", NULL, "a JSON object body is required");
    return 0;
}

/* The field path inside a model error ("... field \"a.b\": ..."), into out. */
static void model_field(const char *msg, const char *prefix, char *out, size_t n)
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

static int string_list_ok(const json_t *j)
{
    size_t i;
    json_t *v;
    if (!json_is_array(j))
        return 0;
    json_array_foreach(j, i, v) if (!json_is_string(v)) return 0;
    return 1;
}

/* ---- entities ------------------------------------------------------------------ */

static int kind_of(const char *seg)
{
    int k = model_kind_parse(seg);
    if (k < 0 || strcmp(model_kind_dir((enum model_kind)k), seg) != 0)
        return -1;
    return k;
}

/* Validate j as an entity of kind k with the model codec. */
static int validate_entity(int k, const json_t *j, struct drv_err *err)
{
    struct model_catalog *cat = model_catalog_new();
    int rc = model_catalog_put_json(cat, (enum model_kind)k, j, NULL, err);
    model_catalog_free(cat);
    return rc;
}

/*
 * Seal the sensitive fields of a provider's provisioner object in place.
 * "********" keeps the value of prev (the stored body, may be NULL).
 */
static int seal_provider(struct call *c, json_t *body, const json_t *prev, const char *where)
{
    json_t *prov = json_object_get(body, "provisioner");
    if (!json_is_object(prov))
        return 0;
    const json_t *prev_prov = prev ? json_object_get(prev, "provisioner") : NULL;
    /* Fields named in the provider's "sensitive" list are sealed too. */
    const json_t *marked = json_object_get(body, "sensitive");
    if (marked && !string_list_ok(marked))
        return call_fail(c, 400, "invalid", "sensitive",
                         "field \"sensitive\": expected an array of provisioner field names");
    const char *k;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(prov, tmp, k, v)
    {
        int listed = 0;
        size_t mi;
        json_t *mv;
        json_array_foreach(marked, mi, mv) listed |= strcmp(json_string_value(mv), k) == 0;
        if ((!listed && !api_field_sensitive(k)) || !json_is_string(v) ||
            json_string_length(v) == 0)
            continue;
        char field[200];
        snprintf(field, sizeof(field), "%s%sprovisioner.%s", where, *where ? "." : "", k);
        if (strcmp(json_string_value(v), API_REDACTED) == 0) {
            json_t *old = prev_prov ? json_object_get(prev_prov, k) : NULL;
            if (!json_is_string(old) || strncmp(json_string_value(old), "enc:v1:", 7) != 0)
                return call_fail(c, 400, "invalid", field,
                                 "field \"%s\": \"%s\" keeps a stored value, and there is none",
                                 field, API_REDACTED);
            json_object_set(prov, k, old);
            continue;
        }
        if (!c->key)
            return call_fail(c, 422, "no-secrets-key", field,
                             "field \"%s\" is sensitive and secrets.key_file is not configured",
                             field);
        char *sealed = api_secret_encrypt(c->key, json_string_value(v));
        json_object_set_new(prov, k, json_string(sealed));
        free(sealed);
    }
    return 0;
}

static int h_entity_list(PGconn *conn, struct call *c, struct drv_err *err)
{
    int k = kind_of(c->seg[1]);
    if (k == MODEL_PROVIDER && c->who.role == ROLE_USER)
        return call_fail(c, 403, "forbidden", NULL, "role user may not read providers");
    json_t *rows;
    int rc =
        store_entity_list(conn, c->who.tenant_id, model_kind_name((enum model_kind)k), &rows, err);
    if (rc)
        return rc;
    json_t *items = json_array();
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r) json_array_append(items, json_object_get(r, "body"));
    json_decref(rows);
    c->out = json_pack("{s:o}", "items", items);
    c->status = 200;
    return 0;
}

static int h_entity_get(PGconn *conn, struct call *c, struct drv_err *err)
{
    int k = kind_of(c->seg[1]);
    if (k == MODEL_PROVIDER && c->who.role == ROLE_USER)
        return call_fail(c, 403, "forbidden", NULL, "role user may not read providers");
    json_t *row;
    int rc = store_entity_get(conn, c->who.tenant_id, model_kind_name((enum model_kind)k),
                              c->seg[2], &row, err);
    if (rc)
        return rc;
    c->out = json_incref(json_object_get(row, "body"));
    snprintf(c->version, sizeof(c->version), "%lld",
             (long long)json_integer_value(json_object_get(row, "version")));
    json_decref(row);
    c->status = 200;
    return 0;
}

static int entity_write(PGconn *conn, struct call *c, enum store_put_mode mode, struct drv_err *err)
{
    int rc = need_body(c);
    if (rc)
        return rc;
    int k = kind_of(c->seg[1]);
    const char *kname = model_kind_name((enum model_kind)k);
    json_t *jn = json_object_get(c->body, "name");
    if (mode == STORE_PUT_REPLACE) {
        if (!jn)
            json_object_set_new(c->body, "name", json_string(c->seg[2]));
        else if (!json_is_string(jn) || strcmp(json_string_value(jn), c->seg[2]) != 0)
            return call_fail(c, 400, "invalid", "name",
                             "field \"name\": must be \"%s\" as in the path", c->seg[2]);
    }
    jn = json_object_get(c->body, "name");
    if (!json_is_string(jn))
        return call_fail(c, 400, "invalid", "name", "field \"name\": expected a string");
    const char *name = json_string_value(jn);
    if (!entity_name_ok(name))
        return call_fail(c, 400, "invalid", "name",
                         "field \"name\": \"%s\" must be 1 to 128 letters, digits, '.', '_' or '-'",
                         name);
    if (validate_entity(k, c->body, err) != 0) {
        char field[128];
        model_field(err->msg, NULL, field, sizeof(field));
        return call_fail(c, 400, "invalid", field, "%s", err->msg);
    }
    if ((rc = store_begin(conn, err)) != 0)
        return rc;
    if (k == MODEL_PROVIDER) {
        json_t *prev = NULL;
        rc = store_entity_get(conn, c->who.tenant_id, kname, name, &prev, err);
        if (rc && rc != DRV_ENOENT)
            return rc;
        rc = seal_provider(c, c->body, prev ? json_object_get(prev, "body") : NULL, "");
        json_decref(prev);
        if (rc)
            return rc;
    }
    char *text = json_dumps(c->body, JSON_COMPACT | JSON_SORT_KEYS);
    int version = 0;
    rc = store_entity_put(conn, c->who.tenant_id, kname, name, text, mode, &version, err);
    free(text);
    if (rc)
        return rc;
    rc = audit(conn, c, mode == STORE_PUT_CREATE ? "create" : "replace", kname, name,
               json_pack("{s:i}", "version", version), err);
    if (rc == 0)
        rc = store_commit(conn, err);
    if (rc)
        return rc;
    c->out = json_incref(c->body);
    snprintf(c->version, sizeof(c->version), "%d", version);
    c->status = mode == STORE_PUT_CREATE ? 201 : 200;
    return 0;
}

static int h_entity_create(PGconn *conn, struct call *c, struct drv_err *err)
{
    return entity_write(conn, c, STORE_PUT_CREATE, err);
}

static int h_entity_replace(PGconn *conn, struct call *c, struct drv_err *err)
{
    return entity_write(conn, c, STORE_PUT_REPLACE, err);
}

static int h_entity_delete(PGconn *conn, struct call *c, struct drv_err *err)
{
    const char *kname = model_kind_name((enum model_kind)kind_of(c->seg[1]));
    int rc = store_begin(conn, err);
    if (rc == 0)
        rc = store_entity_delete(conn, c->who.tenant_id, kname, c->seg[2], err);
    if (rc == 0)
        rc = audit(conn, c, "delete", kname, c->seg[2], NULL, err);
    if (rc == 0)
        rc = store_commit(conn, err);
    if (rc == 0)
        c->status = 204;
    return rc;
}

/* ---- import / export ---------------------------------------------------------- */

static int h_import(PGconn *conn, struct call *c, struct drv_err *err)
{
    int rc = need_body(c);
    if (rc)
        return rc;
    const char *key;
    json_t *arr;
    json_object_foreach(c->body, key, arr)
    {
        int k = kind_of(key);
        if (k < 0)
            return call_fail(c, 400, "invalid", key,
                             "field \"%s\": not an entity kind (providers, hardwaretypes,"
                             " imagetypes, services, clustertemplates, partialtemplates)",
                             key);
        if (!json_is_array(arr))
            return call_fail(c, 400, "invalid", key, "field \"%s\": expected an array", key);
        size_t i;
        json_t *e;
        json_array_foreach(arr, i, e)
        {
            char where[64];
            snprintf(where, sizeof(where), "%s[%zu]", key, i);
            json_t *n = json_object_get(e, "name");
            if (!json_is_object(e) || !json_is_string(n) || !entity_name_ok(json_string_value(n)))
                return call_fail(c, 400, "invalid", where,
                                 "%s: expected an object with a valid \"name\"", where);
            if (validate_entity(k, e, err) != 0) {
                char field[160];
                model_field(err->msg, where, field, sizeof(field));
                return call_fail(c, 400, "invalid", field, "%s: %s", where, err->msg);
            }
        }
    }
    if ((rc = store_begin(conn, err)) != 0)
        return rc;
    json_t *counts = json_object();
    json_object_foreach(c->body, key, arr)
    {
        int k = kind_of(key);
        const char *kname = model_kind_name((enum model_kind)k);
        size_t i;
        json_t *e;
        json_array_foreach(arr, i, e)
        {
            const char *name = json_string_value(json_object_get(e, "name"));
            if (k == MODEL_PROVIDER) {
                json_t *prev = NULL;
                rc = store_entity_get(conn, c->who.tenant_id, kname, name, &prev, err);
                if (rc && rc != DRV_ENOENT)
                    break;
                char where[64];
                snprintf(where, sizeof(where), "%s[%zu]", key, i);
                rc = seal_provider(c, e, prev ? json_object_get(prev, "body") : NULL, where);
                json_decref(prev);
                if (rc)
                    break;
            }
            char *text = json_dumps(e, JSON_COMPACT | JSON_SORT_KEYS);
            rc = store_entity_put(conn, c->who.tenant_id, kname, name, text, STORE_PUT_UPSERT, NULL,
                                  err);
            free(text);
            if (rc)
                break;
        }
        if (rc)
            break;
        json_object_set_new(counts, key, json_integer((json_int_t)json_array_size(arr)));
    }
    if (rc == 0)
        rc = audit(conn, c, "import", NULL, NULL, json_incref(counts), err);
    if (rc == 0)
        rc = store_commit(conn, err);
    if (rc) {
        json_decref(counts);
        return rc;
    }
    c->out = json_pack("{s:o}", "imported", counts);
    c->status = 200;
    return 0;
}

static int h_export(PGconn *conn, struct call *c, struct drv_err *err)
{
    json_t *rows;
    int rc = store_entity_all(conn, c->who.tenant_id, &rows, err);
    if (rc)
        return rc;
    json_t *out = json_object();
    for (int k = 0; k < MODEL_KIND_COUNT; k++)
        json_object_set_new(out, model_kind_dir((enum model_kind)k), json_array());
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r)
    {
        int k = model_kind_parse(json_string_value(json_object_get(r, "kind")));
        if (k >= 0)
            json_array_append(json_object_get(out, model_kind_dir((enum model_kind)k)),
                              json_object_get(r, "body"));
    }
    json_decref(rows);
    c->out = out;
    c->status = 200;
    return 0;
}

/* ---- tenants, users, tokens ------------------------------------------------------ */

static int h_whoami(PGconn *conn, struct call *c, struct drv_err *err)
{
    static const char *const roles[] = {"", "superadmin", "admin", "", "user"};
    c->out = json_pack("{s:s, s:s, s:s, s:s}", "user", c->who.user, "user_id", c->who.user_id,
                       "role", roles[c->who.role], "tenant", c->who.tenant);
    c->status = 200;
    return 0;
}

static int h_token_new(PGconn *conn, struct call *c, struct drv_err *err)
{
    char token[90];
    int rc = store_begin(conn, err);
    if (rc == 0)
        rc = api__token_new(conn, c->who.user_id, token, err);
    if (rc == 0)
        rc = audit(conn, c, "token.create", "user", c->who.user_id, NULL, err);
    if (rc == 0)
        rc = store_commit(conn, err);
    if (rc)
        return rc;
    c->out = json_pack("{s:s, s:s#}", "token", token, "id", token + 4, (int)16);
    c->status = 201;
    return 0;
}

static int h_token_revoke(PGconn *conn, struct call *c, struct drv_err *err)
{
    /* A user revokes its own tokens, an admin any of its tenant's, a superadmin any. */
    const char *tenant = c->who.role == ROLE_ADMIN ? c->who.tenant_id : NULL;
    const char *user = c->who.role == ROLE_USER ? c->who.user_id : NULL;
    int rc = store_begin(conn, err);
    if (rc == 0)
        rc = store_token_revoke(conn, c->seg[2], tenant, user, err);
    if (rc == 0)
        rc = audit(conn, c, "token.revoke", "token", c->seg[2], NULL, err);
    if (rc == 0)
        rc = store_commit(conn, err);
    if (rc == 0)
        c->status = 204;
    return rc;
}

static int h_audit(PGconn *conn, struct call *c, struct drv_err *err)
{
    char *limit = call_query(c, "limit");
    long n = 100;
    if (limit) {
        char *end;
        n = strtol(limit, &end, 10);
        int bad = !*limit || *end || n < 1 || n > 1000;
        free(limit);
        if (bad)
            return call_fail(c, 400, "invalid", "limit",
                             "query parameter \"limit\": expected 1 to 1000");
    }
    char tenant_id[24] = "", ns[16];
    snprintf(ns, sizeof(ns), "%ld", n);
    int rc;
    if (c->who.role == ROLE_SUPER) {
        char *t = call_query(c, "tenant");
        rc = t ? store_tenant_id(conn, t, tenant_id, err) : 0;
        free(t);
        if (rc)
            return rc;
    } else {
        snprintf(tenant_id, sizeof(tenant_id), "%s", c->who.tenant_id);
    }
    json_t *items;
    if ((rc = store_audit_list(conn, *tenant_id ? tenant_id : NULL, ns, &items, err)) != 0)
        return rc;
    c->out = json_pack("{s:o}", "items", items);
    c->status = 200;
    return 0;
}

static int h_tenant_list(PGconn *conn, struct call *c, struct drv_err *err)
{
    json_t *items;
    int rc = store_tenant_list(conn, &items, err);
    if (rc)
        return rc;
    c->out = json_pack("{s:o}", "items", items);
    c->status = 200;
    return 0;
}

static int h_tenant_create(PGconn *conn, struct call *c, struct drv_err *err)
{
    int rc = need_body(c);
    if (rc)
        return rc;
    const char *name = json_string_value(json_object_get(c->body, "name"));
    if (!name || !name_ok(name, 1))
        return call_fail(c, 400, "invalid", "name",
                         "field \"name\": expected 1 to 63 lowercase letters, digits, '_' or '-'");
    json_t *row;
    if ((rc = store_begin(conn, err)) != 0 || (rc = store_tenant_insert(conn, name, &row, err)))
        return rc;
    rc = audit(conn, c, "tenant.create", "tenant", json_string_value(json_object_get(row, "id")),
               NULL, err);
    if (rc == 0)
        rc = store_commit(conn, err);
    if (rc) {
        json_decref(row);
        return rc;
    }
    c->out = row;
    c->status = 201;
    return 0;
}

static int h_user_create(PGconn *conn, struct call *c, struct drv_err *err)
{
    int rc = need_body(c);
    if (rc)
        return rc;
    const char *name = json_string_value(json_object_get(c->body, "name"));
    const char *role = json_string_value(json_object_get(c->body, "role"));
    json_t *jt = json_object_get(c->body, "tenant");
    if (!name || !name_ok(name, 1))
        return call_fail(c, 400, "invalid", "name",
                         "field \"name\": expected 1 to 63 lowercase letters, digits, '_' or '-'");
    if (!role || (strcmp(role, "admin") != 0 && strcmp(role, "user") != 0))
        return call_fail(c, 400, "invalid", "role",
                         "field \"role\": expected \"admin\" or \"user\"");
    if (jt && !json_is_string(jt))
        return call_fail(c, 400, "invalid", "tenant", "field \"tenant\": expected a string");
    char tenant_id[24];
    const char *tenant = jt ? json_string_value(jt) : NULL;
    if (c->who.role == ROLE_SUPER) {
        if (!tenant)
            return call_fail(c, 400, "invalid", "tenant", "field \"tenant\": required");
        rc = store_tenant_id(conn, tenant, tenant_id, err);
        if (rc == DRV_ENOENT)
            return call_fail(c, 422, "unknown-reference", "tenant", "no tenant \"%s\"", tenant);
        if (rc)
            return rc;
    } else {
        if (tenant && strcmp(tenant, c->who.tenant) != 0)
            return call_fail(c, 422, "unknown-reference", "tenant", "no tenant \"%s\"", tenant);
        tenant = c->who.tenant;
        snprintf(tenant_id, sizeof(tenant_id), "%s", c->who.tenant_id);
    }
    char user_id[24], token[90];
    if ((rc = store_begin(conn, err)) != 0)
        return rc;
    rc = store_user_insert(conn, tenant_id, name, role, user_id, err);
    if (rc == 0)
        rc = api__token_new(conn, user_id, token, err);
    if (rc == 0)
        rc = store_audit(conn, tenant_id, c->who.user_id, c->who.user, "user.create", "user",
                         user_id, c->source, NULL, err);
    if (rc == 0)
        rc = store_commit(conn, err);
    if (rc)
        return rc;
    c->out = json_pack("{s:{s:s, s:s, s:s, s:s}, s:s}", "user", "id", user_id, "name", name, "role",
                       role, "tenant", tenant, "token", token);
    c->status = 201;
    return 0;
}

static int h_user_list(PGconn *conn, struct call *c, struct drv_err *err)
{
    char tenant_id[24];
    int rc;
    if (c->who.role == ROLE_SUPER) {
        char *t = call_query(c, "tenant");
        if (!t)
            return call_fail(c, 400, "invalid", "tenant", "query parameter \"tenant\": required");
        rc = store_tenant_id(conn, t, tenant_id, err);
        free(t);
        if (rc)
            return rc;
    } else {
        snprintf(tenant_id, sizeof(tenant_id), "%s", c->who.tenant_id);
    }
    json_t *items;
    if ((rc = store_user_list(conn, tenant_id, &items, err)) != 0)
        return rc;
    c->out = json_pack("{s:o}", "items", items);
    c->status = 200;
    return 0;
}

/* ---- clusters ---------------------------------------------------------------------- */

/* The tenant's catalogue as the model sees it, and each entity's version. */
static int load_catalog(PGconn *conn, struct call *c, struct model_catalog **out, json_t **rows,
                        struct drv_err *err)
{
    int rc = store_entity_all(conn, c->who.tenant_id, rows, err);
    if (rc)
        return rc;
    struct model_catalog *cat = model_catalog_new();
    size_t i;
    json_t *r;
    json_array_foreach(*rows, i, r)
    {
        int k = model_kind_parse(json_string_value(json_object_get(r, "kind")));
        struct drv_err e;
        if (k >= 0 && model_catalog_put_json(cat, (enum model_kind)k, json_object_get(r, "body"),
                                             NULL, &e) != 0)
            log_warn("api", "event=bad_stored_entity kind=%s name=%s", model_kind_name(k),
                     json_string_value(json_object_get(r, "name")));
    }
    *out = cat;
    return 0;
}

static int entity_version(const json_t *rows, const char *kind, const char *name)
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

/* Check a create request against the template; 0 or call_fail. Fills the choices. */
static int check_create(struct call *c, const struct model_catalog *cat,
                        const struct model_template *t, long nodes, const char **provider,
                        const char **hw, const char **img, json_t *services)
{
    if (!*provider)
        *provider = t->default_provider;
    if (!*hw)
        *hw = t->default_hardwaretype;
    if (!*img)
        *img = t->default_imagetype;
    if (!*provider)
        return call_fail(c, 400, "invalid", "provider",
                         "field \"provider\": required (template \"%s\" has no default)", t->name);
    if (!model_catalog_provider(cat, *provider))
        return call_fail(c, 422, "unknown-reference", "provider", "no provider \"%s\"", *provider);
    if (*hw && !model_catalog_hardwaretype(cat, *hw))
        return call_fail(c, 422, "unknown-reference", "hardwaretype", "no hardwaretype \"%s\"",
                         *hw);
    if (*img && !model_catalog_imagetype(cat, *img))
        return call_fail(c, 422, "unknown-reference", "imagetype", "no imagetype \"%s\"", *img);
    if (*hw && t->compat_hardwaretypes.n && !model_strlist_has(&t->compat_hardwaretypes, *hw))
        return call_fail(c, 422, "unsatisfiable", "hardwaretype",
                         "template \"%s\" does not allow hardwaretype \"%s\"", t->name, *hw);
    if (*img && t->compat_imagetypes.n && !model_strlist_has(&t->compat_imagetypes, *img))
        return call_fail(c, 422, "unsatisfiable", "imagetype",
                         "template \"%s\" does not allow imagetype \"%s\"", t->name, *img);
    size_t i;
    json_t *v;
    json_array_foreach(services, i, v)
    {
        const char *s = json_string_value(v);
        if (!model_catalog_service(cat, s))
            return call_fail(c, 422, "unknown-reference", "services", "no service \"%s\"", s);
        if (t->compat_services.n && !model_strlist_has(&t->compat_services, s))
            return call_fail(c, 422, "unsatisfiable", "services",
                             "template \"%s\" does not allow service \"%s\"", t->name, s);
        const struct model_service_constraint *sc = model_template_constraint(t, s);
        if (sc && sc->qmin > nodes)
            return call_fail(c, 422, "unsatisfiable", "nodes",
                             "service \"%s\" needs at least %d nodes, asked for %ld", s, sc->qmin,
                             nodes);
    }
    if ((t->size_min >= 0 && nodes < t->size_min) || (t->size_max >= 0 && nodes > t->size_max))
        return call_fail(c, 422, "unsatisfiable", "nodes",
                         "template \"%s\" allows %d to %d nodes, asked for %ld", t->name,
                         t->size_min >= 0 ? t->size_min : 1, t->size_max >= 0 ? t->size_max : 10000,
                         nodes);
    return 0;
}

static int opt_string(struct call *c, const char *field, const char **out)
{
    json_t *v = json_object_get(c->body, field);
    *out = NULL;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v) || json_string_length(v) == 0)
        return call_fail(c, 400, "invalid", field, "field \"%s\": expected a string", field);
    *out = json_string_value(v);
    return 0;
}

/* A create (or preview) request, validated and solved. */
struct create_req {
    const char *name, *tname; /* borrowed from the body */
    long nodes;
    json_t *services; /* the cluster's services (array) */
    char *provider, *hw, *img;
    char *config; /* JSON text */
    int tversion;
    struct model_catalog *cat;
    struct model_template *t;
    struct model_layout *layout;
};

static void create_req_release(struct create_req *r)
{
    json_decref(r->services);
    free(r->provider);
    free(r->hw);
    free(r->img);
    free(r->config);
    model_layout_free(r->layout);
    model_template_free(r->t);
    model_catalog_free(r->cat);
    memset(r, 0, sizeof(*r));
}

/*
 * Check the body's fields (400), the references (422 unknown-reference), the
 * template's rules (422 unsatisfiable), then solve the layout (422
 * unsatisfiable with the solver's reason). need_name: a create (a preview
 * may leave the name out).
 */
static int create_prepare(PGconn *conn, struct call *c, int need_name, struct create_req *r,
                          struct drv_err *err)
{
    memset(r, 0, sizeof(*r));
    int rc = need_body(c);
    if (rc)
        return rc;
    json_t *jname = json_object_get(c->body, "name"), *jt = json_object_get(c->body, "template"),
           *jn = json_object_get(c->body, "nodes"), *js = json_object_get(c->body, "services"),
           *jc = json_object_get(c->body, "config");
    if (!jname && need_name)
        return call_fail(c, 400, "invalid", "name", "field \"name\": required");
    if (jname && (!json_is_string(jname) || !name_ok(json_string_value(jname), 0)))
        return call_fail(c, 400, "invalid", "name",
                         "field \"name\": expected 1 to 63 letters, digits, '.', '_' or '-'");
    if (!jt)
        return call_fail(c, 400, "invalid", "template", "field \"template\": required");
    if (!json_is_string(jt))
        return call_fail(c, 400, "invalid", "template", "field \"template\": expected a string");
    if (!jn)
        return call_fail(c, 400, "invalid", "nodes", "field \"nodes\": required");
    if (!json_is_integer(jn))
        return call_fail(c, 400, "invalid", "nodes", "field \"nodes\": expected an integer");
    r->nodes = (long)json_integer_value(jn);
    if (r->nodes < 1 || r->nodes > 10000)
        return call_fail(c, 400, "invalid", "nodes", "field \"nodes\": expected 1 to 10000");
    if (js && !string_list_ok(js))
        return call_fail(c, 400, "invalid", "services",
                         "field \"services\": expected an array of strings");
    if (jc && !json_is_object(jc))
        return call_fail(c, 400, "invalid", "config", "field \"config\": expected an object");
    const char *provider, *hw, *img;
    if ((rc = opt_string(c, "provider", &provider)) || (rc = opt_string(c, "hardwaretype", &hw)) ||
        (rc = opt_string(c, "imagetype", &img)))
        return rc;
    const char *req_hw = hw, *req_img = img;
    r->name = jname ? json_string_value(jname) : NULL;
    r->tname = json_string_value(jt);

    json_t *rows;
    if ((rc = load_catalog(conn, c, &r->cat, &rows, err)) != 0)
        return rc;
    r->tversion = entity_version(rows, "clustertemplate", r->tname);
    json_decref(rows);
    if (!model_catalog_template(r->cat, r->tname, false))
        return call_fail(c, 422, "unknown-reference", "template", "no clustertemplate \"%s\"",
                         r->tname);
    if (model_template_resolve(r->cat, r->tname, &r->t, err) != 0)
        return call_fail(c, 422, "unsatisfiable", "template", "%s", err->msg);
    if (js) {
        r->services = json_incref(js);
    } else {
        r->services = json_array();
        for (size_t i = 0; i < r->t->default_services.n; i++)
            json_array_append_new(r->services, json_string(r->t->default_services.v[i]));
    }
    rc = check_create(c, r->cat, r->t, r->nodes, &provider, &hw, &img, r->services);
    if (rc)
        return rc;
    r->provider = xstrdup(provider);
    r->hw = hw ? xstrdup(hw) : NULL;
    r->img = img ? xstrdup(img) : NULL;
    r->config = json_dumps(jc                     ? jc
                           : r->t->default_config ? r->t->default_config
                                                  : NULL,
                           JSON_COMPACT | JSON_SORT_KEYS);
    if (!r->config)
        r->config = xstrdup("{}");

    size_t n = json_array_size(r->services);
    const char **names = xcalloc(n + 1, sizeof(*names));
    for (size_t i = 0; i < n; i++)
        names[i] = json_string_value(json_array_get(r->services, i));
    struct solver_request sr = {
        .catalog = r->cat,
        .tmpl = r->t,
        .nodes = (unsigned)r->nodes,
        .services = names,
        .n_services = n,
        .provider = r->provider,
        .hardwaretype = req_hw,
        .imagetype = req_img,
        .cmp_prefers_supersets = true,
    };
    rc = solver_solve(&sr, &r->layout, err);
    free(names);
    if (rc == DRV_EUNSAT || rc == DRV_EINVAL)
        return call_fail(c, 422, "unsatisfiable", NULL, "no layout: %s", err->msg);
    return rc;
}

static int h_cluster_create(PGconn *conn, struct call *c, struct drv_err *err)
{
    struct create_req r;
    int rc = create_prepare(conn, c, 1, &r, err);
    char version[16], size[16];
    snprintf(version, sizeof(version), "%d", r.tversion);
    snprintf(size, sizeof(size), "%ld", r.nodes);
    char *svc_text = r.services ? json_dumps(r.services, JSON_COMPACT) : NULL;
    json_t *lj = r.layout ? model_layout_to_json(r.layout, false) : NULL;
    char *layout_text = lj ? json_dumps(lj, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(lj);
    char *req_text = json_dumps(c->body, JSON_COMPACT | JSON_SORT_KEYS);
    json_t *cluster = NULL, *job = NULL;
    if (rc == 0)
        rc = store_begin(conn, err);
    if (rc == 0) {
        struct store_cluster_new n = {
            .tenant_id = c->who.tenant_id,
            .owner_id = c->who.user_id,
            .name = r.name,
            .template_name = r.tname,
            .template_version = version,
            .provider = r.provider,
            .size = size,
            .services = svc_text,
            .hardwaretype = r.hw,
            .imagetype = r.img,
            .config = r.config,
            .layout = layout_text,
        };
        rc = store_cluster_insert(conn, &n, &cluster, err);
    }
    const char *cid = cluster ? json_string_value(json_object_get(cluster, "id")) : NULL;
    if (rc == 0)
        rc = store_job_insert(conn, c->who.tenant_id, cid, "create", req_text, c->who.user_id, &job,
                              err);
    if (rc == 0)
        rc = audit(conn, c, "cluster.create", "cluster", cid,
                   json_pack("{s:s, s:s, s:s}", "name", r.name, "template", r.tname, "job",
                             json_string_value(json_object_get(job, "id"))),
                   err);
    if (rc == 0)
        rc = store_commit(conn, err);
    free(svc_text);
    free(layout_text);
    free(req_text);
    create_req_release(&r);
    if (rc) {
        json_decref(cluster);
        json_decref(job);
        return rc;
    }
    c->out = json_pack("{s:o, s:o}", "cluster", cluster, "job", job);
    c->status = 202;
    api__announce(c, json_string_value(json_object_get(job, "id")), cid, "create");
    return 0;
}

/* POST /v1/plans: solve and plan a create, write nothing. */
static int h_preview(PGconn *conn, struct call *c, struct drv_err *err)
{
    char *format = call_query(c, "format");
    int dot = format && strcmp(format, "dot") == 0;
    int bad = format && !dot && strcmp(format, "json") != 0;
    free(format);
    if (bad)
        return call_fail(c, 400, "invalid", "format", "query parameter \"format\": json or dot");
    struct create_req r;
    int rc = create_prepare(conn, c, 0, &r, err);
    struct planner_input *in = NULL;
    struct planner_plan *plan = NULL;
    if (rc == 0)
        rc = planner_input_from_model(r.cat, r.t, NULL, r.layout, &in, err);
    if (rc == 0) {
        in->provider = r.provider;
        const struct model_provider *p = model_catalog_provider(r.cat, r.provider);
        in->providertype = p && *p->providertype ? p->providertype : in->providertype;
        struct planner_request pr = planner_input_request(in, PLANNER_OP_CREATE, NULL, 0);
        rc = planner_build(&pr, &plan, err);
        if (rc == DRV_EINVAL || rc == DRV_ECYCLE)
            rc = call_fail(c, 422, "unsatisfiable", NULL, "no plan: %s", err->msg);
    }
    if (rc == 0 && dot) {
        c->raw = planner_plan_to_dot(plan, NULL);
        c->raw_type = "text/vnd.graphviz";
    } else if (rc == 0) {
        c->out = json_pack("{s:o, s:o, s:I}", "layout", model_layout_to_json(r.layout, false),
                           "plan", planner_plan_to_json(plan), "tasks", (json_int_t)plan->n_tasks);
    }
    if (rc == 0)
        c->status = 200;
    planner_plan_free(plan);
    planner_input_free(in);
    create_req_release(&r);
    return rc;
}

static int h_cluster_list(PGconn *conn, struct call *c, struct drv_err *err)
{
    json_t *items;
    int rc = store_cluster_list(conn, c->who.tenant_id, call_owner(c), &items, err);
    if (rc)
        return rc;
    c->out = json_pack("{s:o}", "items", items);
    c->status = 200;
    return 0;
}

static int h_cluster_get(PGconn *conn, struct call *c, struct drv_err *err)
{
    int rc = store_cluster_get(conn, c->who.tenant_id, call_owner(c), c->seg[2], 0, &c->out, err);
    if (rc == 0)
        c->status = 200;
    return rc;
}

/* Validate an operation's body; 0 or call_fail. */
static int check_op(struct call *c, const char *op, const json_t *cluster)
{
    const json_t *b = c->body;
    json_t *jn = b ? json_object_get(b, "nodes") : NULL;
    json_t *js = b ? json_object_get(b, "services") : NULL;
    if (strcmp(op, "expand") == 0 || strcmp(op, "shrink") == 0) {
        if (!jn)
            return call_fail(c, 400, "invalid", "nodes", "field \"nodes\": required");
        if (!json_is_integer(jn) || json_integer_value(jn) < 1 || json_integer_value(jn) > 10000)
            return call_fail(c, 400, "invalid", "nodes", "field \"nodes\": expected 1 to 10000");
        long size = (long)json_integer_value(json_object_get(cluster, "size"));
        if (strcmp(op, "shrink") == 0 && json_integer_value(jn) >= size)
            return call_fail(c, 422, "unsatisfiable", "nodes",
                             "cannot remove %lld of the cluster's %ld nodes",
                             (long long)json_integer_value(jn), size);
    } else if (strcmp(op, "addservices") == 0 || strcmp(op, "removeservices") == 0) {
        if (!js)
            return call_fail(c, 400, "invalid", "services", "field \"services\": required");
        if (!string_list_ok(js) || json_array_size(js) == 0)
            return call_fail(c, 400, "invalid", "services",
                             "field \"services\": expected a non-empty array of strings");
    } else if (strcmp(op, "configure") == 0) {
        json_t *jc = b ? json_object_get(b, "config") : NULL;
        if (!json_is_object(jc))
            return call_fail(c, 400, "invalid", "config", "field \"config\": expected an object");
    } else if (strcmp(op, "start") == 0 || strcmp(op, "stop") == 0 || strcmp(op, "restart") == 0) {
        if (js && !string_list_ok(js))
            return call_fail(c, 400, "invalid", "services",
                             "field \"services\": expected an array of strings");
    } else if (strcmp(op, "upgrade") == 0) {
        json_t *v = b ? json_object_get(b, "template_version") : NULL;
        if (v && (!json_is_integer(v) || json_integer_value(v) < 1))
            return call_fail(c, 400, "invalid", "template_version",
                             "field \"template_version\": expected a positive integer");
    } else if (strcmp(op, "delete") != 0) {
        return call_fail(c, 404, "not-found", NULL, "no operation \"%s\"", op);
    }
    return 0;
}

/* The cluster's services after addservices or removeservices of body's "services". */
static json_t *services_after(const json_t *now, const char *op, const json_t *change)
{
    json_t *out = json_array();
    size_t i, k;
    json_t *v, *w;
    json_array_foreach(now, i, v)
    {
        int named = 0;
        json_array_foreach(change, k, w) named |= json_equal(v, w);
        if (!(named && strcmp(op, "removeservices") == 0))
            json_array_append(out, v);
    }
    if (strcmp(op, "addservices") == 0) {
        json_array_foreach(change, k, w)
        {
            int have = 0;
            json_array_foreach(out, i, v) have |= json_equal(v, w);
            if (!have)
                json_array_append(out, w);
        }
    }
    return out;
}

/*
 * Operations that change the layout (expand, shrink, addservices,
 * removeservices) solve the target before anything is recorded, with the
 * cluster's current layout as a constraint: its nodes keep their hardware and
 * image, uninvolved services never move, a shrink never drops the only
 * holder of a service. A change that cannot be met is 422 with the solver's
 * reason; otherwise *target is the new layout (JSON), stored with the job.
 * Other operations leave *target NULL. The tenant's current catalogue is used.
 */
static int solve_change(PGconn *conn, struct call *c, const char *op, const json_t *cluster,
                        json_t **target, struct drv_err *err)
{
    *target = NULL;
    int grow = strcmp(op, "expand") == 0 || strcmp(op, "shrink") == 0;
    if (!grow && strcmp(op, "addservices") != 0 && strcmp(op, "removeservices") != 0)
        return 0;
    const char *tname = json_string_value(json_object_get(cluster, "template"));
    struct model_catalog *cat = NULL;
    struct model_template *t = NULL;
    struct model_layout *existing = NULL, *layout = NULL;
    json_t *rows = NULL, *services = NULL;
    int rc = load_catalog(conn, c, &cat, &rows, err);
    json_decref(rows);
    if (rc == 0 && model_template_resolve(cat, tname, &t, err) != 0)
        rc = call_fail(c, 422, "unknown-reference", "template", "template \"%s\": %s", tname,
                       err->msg);
    if (rc == 0 &&
        model_layout_from_json(json_object_get(cluster, "layout"), &existing, err) != 0) {
        log_error("api", "event=bad_stored_layout cluster=%s error=\"%s\"", c->seg[2], err->msg);
        rc = call_fail(c, 500, "internal", NULL, "internal error (see the server log)");
    }
    if (rc == 0) {
        json_int_t nodes = grow ? json_integer_value(json_object_get(c->body, "nodes"))
                                : json_integer_value(json_object_get(cluster, "size"));
        if (strcmp(op, "expand") == 0)
            nodes += json_integer_value(json_object_get(cluster, "size"));
        else if (strcmp(op, "shrink") == 0)
            nodes = json_integer_value(json_object_get(cluster, "size")) - nodes;
        services = grow ? json_incref(json_object_get(cluster, "services"))
                        : services_after(json_object_get(cluster, "services"), op,
                                         json_object_get(c->body, "services"));
        size_t n = json_array_size(services);
        const char **names = xcalloc(n + 1, sizeof(*names));
        for (size_t i = 0; i < n; i++)
            names[i] = json_string_value(json_array_get(services, i));
        struct solver_request sr = {
            .catalog = cat,
            .tmpl = t,
            .nodes = (unsigned)nodes,
            .services = n ? names : NULL,
            .n_services = n,
            .provider = json_string_value(json_object_get(cluster, "provider")),
            .existing = existing,
            .cmp_prefers_supersets = true,
        };
        rc = solver_solve(&sr, &layout, err);
        free(names);
        if (rc == DRV_EUNSAT || rc == DRV_EINVAL)
            rc = call_fail(c, 422, "unsatisfiable", NULL, "no layout: %s", err->msg);
    }
    if (rc == 0)
        *target =
            json_pack("{s:o, s:o, s:I}", "layout", model_layout_to_json(layout, false), "services",
                      json_incref(services), "size", (json_int_t)model_layout_size(layout));
    json_decref(services);
    model_layout_free(layout);
    model_layout_free(existing);
    model_template_free(t);
    model_catalog_free(cat);
    return rc;
}

static int cluster_operation(PGconn *conn, struct call *c, const char *op, struct drv_err *err)
{
    /* Unknown operations are 404 before anything is read. */
    static const char *const ops[] = {"expand",    "shrink", "addservices", "removeservices",
                                      "configure", "start",  "stop",        "restart",
                                      "upgrade",   "delete", NULL};
    int known = 0;
    for (const char *const *o = ops; *o; o++)
        known |= strcmp(*o, op) == 0;
    if (!known)
        return call_fail(c, 404, "not-found", NULL, "no operation \"%s\"", op);
    json_t *cluster = NULL, *open = NULL, *job = NULL;
    int rc = store_begin(conn, err);
    if (rc == 0)
        rc = store_cluster_get(conn, c->who.tenant_id, call_owner(c), c->seg[2], 1, &cluster, err);
    if (rc == 0)
        rc = check_op(c, op, cluster);
    if (rc == 0) {
        /* A cluster in a final state other than active takes a delete only: a create that
         * failed made nothing to expand or configure; an operator looks at needs-operator. */
        const char *st = json_string_value(json_object_get(cluster, "status"));
        bool settled = st && (strcmp(st, "failed") == 0 || strcmp(st, "needs-operator") == 0);
        if (settled && strcmp(op, "delete") != 0)
            rc = call_fail(c, 409, "conflict", NULL,
                           "cluster \"%s\" is %s: only a delete is possible", c->seg[2], st);
    }
    if (rc == 0) {
        rc = store_cluster_open_job(conn, c->seg[2], &open, err);
        if (rc == 0)
            rc = call_fail(c, 409, "conflict", NULL, "cluster \"%s\" is busy: job %s (%s) is %s",
                           c->seg[2], json_string_value(json_object_get(open, "id")),
                           json_string_value(json_object_get(open, "operation")),
                           json_string_value(json_object_get(open, "status")));
        else if (rc == DRV_ENOENT)
            rc = 0;
        json_decref(open);
    }
    json_t *target = NULL;
    if (rc == 0)
        rc = solve_change(conn, c, op, cluster, &target, err);
    /* The job's request: what was asked, and the solved target when the layout changes. */
    json_t *request = c->body ? json_deep_copy(c->body) : json_object();
    if (target)
        json_object_set_new(request, "target", target);
    char *req = json_dumps(request, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(request);
    if (rc == 0)
        rc =
            store_job_insert(conn, c->who.tenant_id, c->seg[2], op, req, c->who.user_id, &job, err);
    free(req);
    if (rc == 0 && strcmp(op, "delete") == 0) {
        rc = store_cluster_set_status(conn, c->seg[2], "deleting", err);
        json_object_set_new(cluster, "status", json_string("deleting"));
    }
    if (rc == 0) {
        char action[48];
        snprintf(action, sizeof(action), "cluster.%s", op);
        rc = audit(conn, c, action, "cluster", c->seg[2],
                   json_pack("{s:s}", "job", json_string_value(json_object_get(job, "id"))), err);
    }
    if (rc == 0)
        rc = store_commit(conn, err);
    if (rc) {
        json_decref(cluster);
        json_decref(job);
        return rc;
    }
    json_object_del(cluster, "nodes");
    c->out = json_pack("{s:o, s:o}", "cluster", cluster, "job", job);
    c->status = 202;
    api__announce(c, json_string_value(json_object_get(job, "id")), c->seg[2], op);
    return 0;
}

static int h_cluster_op(PGconn *conn, struct call *c, struct drv_err *err)
{
    return cluster_operation(conn, c, c->seg[3], err);
}

static int h_cluster_delete(PGconn *conn, struct call *c, struct drv_err *err)
{
    return cluster_operation(conn, c, "delete", err);
}

/* ---- jobs ------------------------------------------------------------------------------- */

static int h_job_list(PGconn *conn, struct call *c, struct drv_err *err)
{
    char *cluster = call_query(c, "cluster");
    json_t *items;
    int rc = store_job_list(conn, c->who.tenant_id, call_owner(c), cluster, &items, err);
    free(cluster);
    if (rc)
        return rc;
    c->out = json_pack("{s:o}", "items", items);
    c->status = 200;
    return 0;
}

static int h_job_get(PGconn *conn, struct call *c, struct drv_err *err)
{
    int rc = store_job_get(conn, c->who.tenant_id, call_owner(c), c->seg[2], &c->out, err);
    if (rc == 0) {
        json_object_del(c->out, "has_plan");
        api__explain(c->out);
        c->status = 200;
    }
    return rc;
}

static int h_job_plan(PGconn *conn, struct call *c, struct drv_err *err)
{
    char *format = call_query(c, "format");
    int dot = format && strcmp(format, "dot") == 0;
    int bad = format && !dot && strcmp(format, "json") != 0;
    free(format);
    if (bad)
        return call_fail(c, 400, "invalid", "format", "query parameter \"format\": json or dot");
    json_t *job;
    int rc = store_job_get(conn, c->who.tenant_id, call_owner(c), c->seg[2], &job, err);
    if (rc)
        return rc;
    int has = json_is_true(json_object_get(job, "has_plan"));
    json_decref(job);
    if (!has)
        return call_fail(c, 404, "not-found", NULL, "job \"%s\" has no plan yet", c->seg[2]);
    json_t *row;
    const char *p[] = {c->seg[2]};
    rc = store_query_row(conn, "SELECT plan FROM jobs WHERE id = $1::bigint", 1, p, &row, err);
    if (rc)
        return rc;
    json_t *plan = json_incref(json_object_get(row, "plan"));
    json_decref(row);
    if (!dot) {
        c->out = plan;
        c->status = 200;
        return 0;
    }
    struct planner_plan *pl;
    rc = planner_plan_from_json(plan, &pl, err);
    json_decref(plan);
    if (rc)
        return rc;
    c->raw = planner_plan_to_dot(pl, NULL);
    c->raw_type = "text/vnd.graphviz";
    planner_plan_free(pl);
    c->status = 200;
    return 0;
}

/*
 * POST /v1/jobs/{id}/{pause,resume,cancel}: the request is recorded for the
 * job's owner, which acts on it (running tasks finish, nothing new starts;
 * cancel then rolls back). 202 with the job as it is now and its "control".
 */
static int h_job_action(PGconn *conn, struct call *c, struct drv_err *err)
{
    const char *act = c->seg[3];
    if (strcmp(act, "cancel") != 0 && strcmp(act, "pause") != 0 && strcmp(act, "resume") != 0)
        return call_fail(c, 404, "not-found", NULL, "no job action \"%s\"", act);
    int rc = store_begin(conn, err);
    if (rc == 0)
        rc = store_job_control(conn, c->who.tenant_id, call_owner(c), c->seg[2], act, &c->out, err);
    if (rc == 0) {
        char action[32];
        snprintf(action, sizeof(action), "job.%s", act);
        rc = audit(conn, c, action, "job", c->seg[2], NULL, err);
    }
    if (rc == 0)
        rc = store_commit(conn, err);
    if (rc == 0) {
        json_object_del(c->out, "has_plan");
        c->status = 202;
        api__control(c, c->seg[2], act);
    }
    return rc;
}

/* ---- fleet --------------------------------------------------------------------------- */

static int members_on_loop(struct call *c)
{
    json_t *members = api__members(c->api);
    struct coord_ring *ring = coord_ring_new(0);
    size_t i;
    json_t *m;
    json_array_foreach(members, i, m)
    {
        json_t *d = json_object_get(m, "data");
        json_int_t w = json_integer_value(json_object_get(d, "weight"));
        coord_ring_add(ring, json_string_value(json_object_get(m, "id")), w > 0 ? (unsigned)w : 1,
                       json_is_true(json_object_get(d, "draining")));
    }
    json_t *jobs = json_array();
    json_array_foreach(c->loop_data, i, m)
    {
        const char *id = json_string_value(json_object_get(m, "id"));
        const char *owner = coord_ring_lookup(ring, id);
        json_array_append_new(jobs, json_pack("{s:s, s:O, s:O, s:s?}", "id", id, "operation",
                                              json_object_get(m, "operation"), "status",
                                              json_object_get(m, "status"), "owner", owner));
    }
    c->out = json_pack("{s:O, s:{s:I}, s:o}", "members", members, "ring", "size",
                       (json_int_t)coord_ring_size(ring), "jobs", jobs);
    coord_ring_free(ring);
    c->status = 200;
    return 0;
}

static int h_members(PGconn *conn, struct call *c, struct drv_err *err)
{
    int rc = store_job_open_ids(conn, c->who.tenant_id, &c->loop_data, err);
    if (rc == 0)
        c->on_loop = members_on_loop;
    return rc;
}

static int workers_on_loop(struct call *c)
{
    json_t *out = json_array();
    size_t i;
    json_t *w;
    json_array_foreach(api__workers(c->api), i, w)
    {
        const char *t = json_string_value(json_object_get(json_object_get(w, "data"), "tenant"));
        if (t && strcmp(t, c->who.tenant) == 0)
            json_array_append(out, w);
    }
    c->out = json_pack("{s:o}", "workers", out);
    c->status = 200;
    return 0;
}

/*
 * GET /v1/queues: the tenant's queues (/drover/queues/<tenant>/<class>, one
 * per worker class) and their figures, read from ZooKeeper on the loop: list
 * the classes, open each queue, read its stats, close it; reply when the last
 * answer is in.
 */
struct queues_read {
    struct call *c;
    size_t waiting;
    json_t *items;
};

struct queue_stat {
    struct queues_read *r;
    struct coord_queue *q;
    char *cls;
    size_t slot; /* index in r->items: the classes' sorted order */
};

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void queues_finish(struct queues_read *r)
{
    struct call *c = r->c;
    json_t *items = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(r->items, i, v) if (json_is_object(v)) json_array_append(items, v);
    json_decref(r->items);
    c->out = json_pack("{s:o}", "queues", items);
    c->status = 200;
    free(r);
    api__reply(c);
}

static void on_queue_stats(const struct coord_queue_stats *st, int rc, void *arg)
{
    struct queue_stat *qs = arg;
    struct queues_read *r = qs->r;
    if (rc == 0)
        json_array_set_new(r->items, qs->slot,
                           json_pack("{s:s, s:s, s:I, s:I, s:I}", "tenant", r->c->who.tenant,
                                     "class", qs->cls, "length", (json_int_t)st->length, "claimed",
                                     (json_int_t)st->claimed, "oldest_age_ms",
                                     (json_int_t)st->oldest_age_ms));
    coord_queue_close(qs->q);
    free(qs->cls);
    free(qs);
    if (--r->waiting == 0)
        queues_finish(r);
}

static void on_queue_classes(int rc, char *const *names, size_t n, void *arg)
{
    struct queues_read *r = arg;
    struct call *c = r->c;
    if (rc != 0 && rc != DRV_ENOENT) {
        json_decref(r->items);
        free(r);
        call_fail(c, 503, "unavailable", NULL, "zookeeper unavailable, try again");
        api__reply(c);
        return;
    }
    if (rc != 0 || n == 0) {
        queues_finish(r);
        return;
    }
    r->waiting = n;
    char **sorted = xcalloc(n, sizeof(*sorted));
    for (size_t i = 0; i < n; i++) {
        sorted[i] = names[i];
        json_array_append_new(r->items, json_null());
    }
    qsort(sorted, n, sizeof(*sorted), cmp_name);
    for (size_t i = 0; i < n; i++) {
        struct queue_stat *qs = xcalloc(1, sizeof(*qs));
        qs->r = r;
        qs->slot = i;
        qs->cls = xstrdup(sorted[i]);
        char *path = xasprintf("/drover/queues/%s/%s", c->who.tenant, sorted[i]);
        qs->q = coord_queue_open(api__zk(c->api), path, NULL, NULL, NULL);
        free(path);
        coord_queue_stats(qs->q, on_queue_stats, qs);
    }
    free(sorted);
}

static int queues_on_loop(struct call *c)
{
    struct coord_session *zk = api__zk(c->api);
    if (!zk || coord_session_state(zk) != COORD_CONNECTED) {
        call_fail(c, 503, "unavailable", NULL, "zookeeper unavailable, try again");
        return 0;
    }
    struct queues_read *r = xcalloc(1, sizeof(*r));
    r->c = c;
    r->items = json_array();
    char *path = xasprintf("/drover/queues/%s", c->who.tenant);
    coord_children(zk, path, on_queue_classes, r);
    free(path);
    return 1;
}

static int h_queues(PGconn *conn, struct call *c, struct drv_err *err)
{
    c->on_loop = queues_on_loop;
    return 0;
}

static int h_workers(PGconn *conn, struct call *c, struct drv_err *err)
{
    c->on_loop = workers_on_loop;
    return 0;
}

/* ---- routing ------------------------------------------------------------------------- */

struct route {
    int methods;
    const char *pattern; /* segments: literal, "*" any, "{kind}" an entity collection */
    api_handler fn;
    unsigned roles;
};

#define GET EVHTTP_REQ_GET
#define POST EVHTTP_REQ_POST
#define PUT EVHTTP_REQ_PUT
#define DEL EVHTTP_REQ_DELETE

static const struct route routes[] = {
    {GET, "v1/whoami", h_whoami, ALL},
    {POST, "v1/tokens", h_token_new, ALL},
    {DEL, "v1/tokens/*", h_token_revoke, ALL},
    {GET, "v1/audit", h_audit, ROLE_SUPER | ROLE_ADMIN},
    {GET, "v1/tenants", h_tenant_list, ROLE_SUPER},
    {POST, "v1/tenants", h_tenant_create, ROLE_SUPER},
    {GET, "v1/users", h_user_list, ROLE_SUPER | ROLE_ADMIN},
    {POST, "v1/users", h_user_create, ROLE_SUPER | ROLE_ADMIN},
    {POST, "v1/import", h_import, ROLE_ADMIN},
    {GET, "v1/export", h_export, ROLE_ADMIN},
    {GET, "v1/clusters", h_cluster_list, TENANT},
    {POST, "v1/clusters", h_cluster_create, TENANT},
    {GET, "v1/clusters/*", h_cluster_get, TENANT},
    {DEL, "v1/clusters/*", h_cluster_delete, TENANT},
    {POST, "v1/clusters/*/*", h_cluster_op, TENANT},
    {POST, "v1/plans", h_preview, TENANT},
    {GET, "v1/jobs", h_job_list, TENANT},
    {GET, "v1/jobs/*", h_job_get, TENANT},
    {GET, "v1/jobs/*/plan", h_job_plan, TENANT},
    {POST, "v1/jobs/*/*", h_job_action, TENANT},
    {GET, "v1/members", h_members, ROLE_ADMIN},
    {GET, "v1/workers", h_workers, ROLE_ADMIN},
    {GET, "v1/queues", h_queues, ROLE_ADMIN},
    {GET, "v1/{kind}", h_entity_list, TENANT},
    {POST, "v1/{kind}", h_entity_create, ROLE_ADMIN},
    {GET, "v1/{kind}/*", h_entity_get, TENANT},
    {PUT, "v1/{kind}/*", h_entity_replace, ROLE_ADMIN},
    {DEL, "v1/{kind}/*", h_entity_delete, ROLE_ADMIN},
    {0, NULL, NULL, 0},
};

static int matches(const char *pattern, const struct call *c)
{
    char buf[64];
    snprintf(buf, sizeof(buf), "%s", pattern);
    char *save = NULL;
    int i = 0;
    for (char *t = strtok_r(buf, "/", &save); t; t = strtok_r(NULL, "/", &save), i++) {
        if (i >= c->nseg)
            return 0;
        if (strcmp(t, "*") == 0)
            continue;
        if (strcmp(t, "{kind}") == 0) {
            if (kind_of(c->seg[i]) < 0)
                return 0;
            continue;
        }
        if (strcmp(t, c->seg[i]) != 0)
            return 0;
    }
    return i == c->nseg;
}

int api__route(struct call *c)
{
    int method = c->method == EVHTTP_REQ_HEAD ? EVHTTP_REQ_GET : c->method;
    int path_found = 0;
    for (const struct route *r = routes; r->pattern; r++) {
        if (!matches(r->pattern, c))
            continue;
        path_found = 1;
        if (r->methods & method) {
            c->handler = r->fn;
            c->roles = r->roles;
            return 0;
        }
    }
    if (path_found)
        return call_fail(c, 405, "method-not-allowed", NULL, "method not allowed on %s", c->path);
    return call_fail(c, 404, "not-found", NULL, "no such path %s", c->path);
}
