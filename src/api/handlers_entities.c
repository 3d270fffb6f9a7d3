/*
 * handlers_entities: the admin entities of /v1/{kind} (providers, hardware
 * types, image types, services, cluster and partial templates), import and
 * export (docs/api.md "Admin entities"). Sensitive values of providers and
 * templates are sealed here (seal.c) before they reach the database.
 *
 * Pool-thread code: each handler runs after authentication with the caller
 * in c->who; writes run in one transaction with their audit entry.
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
#include "xalloc.h"

/* ---- entities ------------------------------------------------------------------ */

/* Validate j as an entity of kind k with the model codec. */
static int validate_entity(int k, const json_t *j, struct drv_err *err)
{
    struct model_catalog *cat = model_catalog_new();
    int rc = model_catalog_put_json(cat, (enum model_kind)k, j, NULL, err);
    model_catalog_free(cat);
    return rc;
}

/*
 * Seal an entity's sensitive values in place (seal.c): a provider's
 * provisioner (names, and the dotted paths its "sensitive" array lists), a
 * cluster or partial template's defaults.config (names). prev: the stored
 * body (may be NULL), for "********". where: the entity's place in the request.
 */
static int seal_entity(struct call *c, int k, json_t *body, const json_t *prev, const char *where)
{
    char at[200];
    const char *name = json_string_value(json_object_get(body, "name"));
    if (!name)
        name = "";
    if (k == MODEL_PROVIDER) {
        json_t *prov = json_object_get(body, "provisioner");
        const json_t *marked = json_object_get(body, "sensitive");
        if (marked && !api__string_list_ok(marked))
            return call_fail(c, 400, "invalid", "sensitive",
                             "field \"sensitive\": expected an array of provisioner field paths");
        snprintf(at, sizeof(at), "%s%sprovisioner", where, *where ? "." : "");
        struct api__place pl = {"provider", name, "provisioner"};
        return api__seal(c, prov, prev ? json_object_get(prev, "provisioner") : NULL, marked, &pl,
                         at);
    }
    if (k == MODEL_TEMPLATE || k == MODEL_PARTIALTEMPLATE) {
        json_t *cfg = json_object_get(json_object_get(body, "defaults"), "config");
        snprintf(at, sizeof(at), "%s%sdefaults.config", where, *where ? "." : "");
        struct api__place pl = {k == MODEL_TEMPLATE ? "clustertemplate" : "partialtemplate", name,
                                "defaults.config"};
        return api__seal(c, cfg,
                         prev ? json_object_get(json_object_get(prev, "defaults"), "config") : NULL,
                         NULL, &pl, at);
    }
    return 0;
}

static bool has_secrets(int k)
{
    return k == MODEL_PROVIDER || k == MODEL_TEMPLATE || k == MODEL_PARTIALTEMPLATE;
}

int api__h_entity_list(PGconn *conn, struct call *c, struct drv_err *err)
{
    int k = api__kind_of(c->seg[1]);
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

int api__h_entity_get(PGconn *conn, struct call *c, struct drv_err *err)
{
    int k = api__kind_of(c->seg[1]);
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
    int rc = api__need_body(c);
    if (rc)
        return rc;
    int k = api__kind_of(c->seg[1]);
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
    if (!api__entity_name_ok(name))
        return call_fail(c, 400, "invalid", "name",
                         "field \"name\": \"%s\" must be 1 to 128 letters, digits, '.', '_' or '-' "
                         "(not \".\" or \"..\")",
                         name);
    if (validate_entity(k, c->body, err) != 0) {
        char field[128];
        api__model_field(err->msg, NULL, field, sizeof(field));
        return call_fail(c, 400, "invalid", field, "%s", err->msg);
    }
    if (k == MODEL_PROVIDER && (rc = api__provider_policy(c, c->body, "")) != 0)
        return rc;
    if ((rc = api__entity_limits(c, k, c->body, "")) != 0)
        return rc;
    if ((rc = store_begin(conn, err)) != 0)
        return rc;
    if (has_secrets(k)) {
        json_t *prev = NULL;
        rc = store_entity_get(conn, c->who.tenant_id, kname, name, &prev, err);
        if (rc && rc != DRV_ENOENT)
            return rc;
        rc = seal_entity(c, k, c->body, prev ? json_object_get(prev, "body") : NULL, "");
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
    rc = api__audit(conn, c, mode == STORE_PUT_CREATE ? "create" : "replace", kname, name,
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

int api__h_entity_create(PGconn *conn, struct call *c, struct drv_err *err)
{
    return entity_write(conn, c, STORE_PUT_CREATE, err);
}

int api__h_entity_replace(PGconn *conn, struct call *c, struct drv_err *err)
{
    return entity_write(conn, c, STORE_PUT_REPLACE, err);
}

int api__h_entity_delete(PGconn *conn, struct call *c, struct drv_err *err)
{
    const char *kname = model_kind_name((enum model_kind)api__kind_of(c->seg[1]));
    int rc = store_begin(conn, err);
    if (rc == 0)
        rc = store_entity_delete(conn, c->who.tenant_id, kname, c->seg[2], err);
    if (rc == 0)
        rc = api__audit(conn, c, "delete", kname, c->seg[2], NULL, err);
    if (rc == 0)
        rc = store_commit(conn, err);
    if (rc == 0)
        c->status = 204;
    return rc;
}

/* ---- import / export ---------------------------------------------------------- */

int api__h_import(PGconn *conn, struct call *c, struct drv_err *err)
{
    int rc = api__need_body(c);
    if (rc)
        return rc;
    const char *key;
    json_t *arr;
    json_object_foreach(c->body, key, arr)
    {
        int k = api__kind_of(key);
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
            if (!json_is_object(e) || !json_is_string(n) ||
                !api__entity_name_ok(json_string_value(n)))
                return call_fail(c, 400, "invalid", where,
                                 "%s: expected an object with a valid \"name\"", where);
            if (validate_entity(k, e, err) != 0) {
                char field[160];
                api__model_field(err->msg, where, field, sizeof(field));
                return call_fail(c, 400, "invalid", field, "%s: %s", where, err->msg);
            }
            if (k == MODEL_PROVIDER && (rc = api__provider_policy(c, e, where)) != 0)
                return rc;
            if ((rc = api__entity_limits(c, k, e, where)) != 0)
                return rc;
        }
    }
    if ((rc = store_begin(conn, err)) != 0)
        return rc;
    json_t *counts = json_object();
    json_object_foreach(c->body, key, arr)
    {
        int k = api__kind_of(key);
        const char *kname = model_kind_name((enum model_kind)k);
        size_t i;
        json_t *e;
        json_array_foreach(arr, i, e)
        {
            const char *name = json_string_value(json_object_get(e, "name"));
            if (has_secrets(k)) {
                json_t *prev = NULL;
                rc = store_entity_get(conn, c->who.tenant_id, kname, name, &prev, err);
                if (rc && rc != DRV_ENOENT)
                    break;
                char where[64];
                snprintf(where, sizeof(where), "%s[%zu]", key, i);
                rc = seal_entity(c, k, e, prev ? json_object_get(prev, "body") : NULL, where);
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
        rc = api__audit(conn, c, "import", NULL, NULL, json_incref(counts), err);
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

int api__h_export(PGconn *conn, struct call *c, struct drv_err *err)
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
