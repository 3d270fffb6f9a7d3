/*
 * store_catalogs: a tenant's catalogue by version (docs/schema.md, version 9).
 *
 * Every transaction that writes an entity gives its tenant a new catalogue version
 * (catalog_heads, set by a trigger on entities, whoever writes), so a version names one
 * catalogue: the live entities of a snapshot that sees that head. droverd keeps the
 * catalogues it parsed by (tenant, version) (model.h, model_catset) and asks for the head
 * alone while it has that version (store_catalog_head: one indexed row), the entities
 * only when it has not (store_catalog_read: the head and the entities in one statement,
 * so one snapshot). A job is made from one version: the catalogue is pinned once per
 * version in catalogs (store_catalog_pin, by the first create or start that uses it on a
 * node), and a job names it (jobs.catalog_version, its inputs' {"catalog": {"version"}})
 * instead of carrying a copy; store_catalog_pinned reads it back.
 *
 * Pool threads; no state.
 */
#include <stdio.h>
#include <stdlib.h>

#include "store.h"

int store_catalog_head(PGconn *conn, const char *tenant_id, long long *version, struct drv_err *err)
{
    const char *p[] = {tenant_id};
    PGresult *r;
    int rc = store_execp(conn,
                         "SELECT coalesce((SELECT version FROM catalog_heads"
                         " WHERE tenant_id = $1::bigint), 0)",
                         1, p, &r, err);
    if (rc)
        return rc;
    *version = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return 0;
}

int store_catalog_read(PGconn *conn, const char *tenant_id, long long *version, json_t **rows,
                       struct drv_err *err)
{
    const char *p[] = {tenant_id};
    json_t *row;
    *rows = NULL;
    /* A tenant without a head has written no entity since version 9: none is live. */
    int rc = store_query_row(
        conn,
        "SELECT coalesce((SELECT version FROM catalog_heads WHERE tenant_id = $1::bigint),"
        "  0)::text AS version,"
        " coalesce((SELECT jsonb_agg(jsonb_build_object('kind', e.kind, 'name', e.name,"
        "   'version', e.version, 'body', e.body) ORDER BY e.kind, e.name) FROM ("
        "   SELECT DISTINCT ON (kind, name) kind, name, version, body FROM entities"
        "   WHERE tenant_id = $1::bigint AND deleted_at IS NULL"
        "   ORDER BY kind, name, version DESC) e), '[]') AS entities",
        1, p, &row, err);
    if (rc)
        return rc;
    *version = strtoll(json_string_value(json_object_get(row, "version")), NULL, 10);
    *rows = json_incref(json_object_get(row, "entities"));
    json_decref(row);
    return 0;
}

int store_catalog_pinned(PGconn *conn, const char *tenant_id, long long version, json_t **rows,
                         struct drv_err *err)
{
    char v[24];
    snprintf(v, sizeof(v), "%lld", version);
    const char *p[] = {tenant_id, v};
    json_t *row;
    *rows = NULL;
    int rc = store_query_row(conn,
                             "SELECT entities FROM catalogs WHERE tenant_id = $1::bigint"
                             " AND version = $2::bigint",
                             2, p, &row, err);
    if (rc == DRV_ENOENT)
        return drv_err_set(err, DRV_ENOENT, 0, "no catalogue version %lld of tenant %s", version,
                           tenant_id);
    if (rc)
        return rc;
    *rows = json_incref(json_object_get(row, "entities"));
    json_decref(row);
    return 0;
}

int store_catalog_pin(PGconn *conn, const char *tenant_id, long long version, const char *entities,
                      struct drv_err *err)
{
    char v[24];
    snprintf(v, sizeof(v), "%lld", version);
    const char *p[] = {tenant_id, v, entities};
    /* Once per version: a version names one catalogue, so a second pin (another node, a
       replay after a lost answer) has nothing to add. */
    return store_execp(conn,
                       "INSERT INTO catalogs (tenant_id, version, entities)"
                       " VALUES ($1::bigint, $2::bigint, $3::jsonb) ON CONFLICT DO NOTHING",
                       3, p, NULL, err);
}
