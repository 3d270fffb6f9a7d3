/*
 * store_entities: providers, hardware types, image types, services, cluster
 * and partial templates, versioned.
 *
 * Every create or replace inserts the next version of (tenant, kind, name);
 * the live entity is the newest version not marked deleted. A delete marks
 * every version, so history (and the template version a cluster was made
 * from) stays. Writers of one name serialise on a transaction-level advisory
 * lock keyed by the name, so two creates of one name give one winner and one
 * DRV_EEXIST rather than a primary key error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

int store_entity_list(PGconn *conn, const char *tenant_id, const char *kind, json_t **items,
                      struct drv_err *err)
{
    const char *p[] = {tenant_id, kind};
    return store_query_json(conn,
                            "SELECT DISTINCT ON (name) name, version, body FROM entities"
                            " WHERE tenant_id = $1::bigint AND kind = $2 AND deleted_at IS NULL"
                            " ORDER BY name, version DESC",
                            2, p, items, err);
}

int store_entity_all(PGconn *conn, const char *tenant_id, json_t **items, struct drv_err *err)
{
    const char *p[] = {tenant_id};
    return store_query_json(
        conn,
        "SELECT DISTINCT ON (kind, name) kind, name, version, body FROM entities"
        " WHERE tenant_id = $1::bigint AND deleted_at IS NULL"
        " ORDER BY kind, name, version DESC",
        1, p, items, err);
}

int store_entity_get(PGconn *conn, const char *tenant_id, const char *kind, const char *name,
                     json_t **row, struct drv_err *err)
{
    const char *p[] = {tenant_id, kind, name};
    int rc = store_query_row(conn,
                             "SELECT name, version, body FROM entities"
                             " WHERE tenant_id = $1::bigint AND kind = $2 AND name = $3"
                             " AND deleted_at IS NULL ORDER BY version DESC LIMIT 1",
                             3, p, row, err);
    if (rc == DRV_ENOENT)
        drv_err_set(err, DRV_ENOENT, 0, "no %s \"%s\"", kind, name);
    return rc;
}

int store_entity_get_version(PGconn *conn, const char *tenant_id, const char *kind,
                             const char *name, const char *version, json_t **row,
                             struct drv_err *err)
{
    const char *p[] = {tenant_id, kind, name, version};
    int rc = store_query_row(conn,
                             "SELECT name, version, body FROM entities"
                             " WHERE tenant_id = $1::bigint AND kind = $2 AND name = $3"
                             " AND version = $4::integer AND deleted_at IS NULL",
                             4, p, row, err);
    if (rc == DRV_ENOENT)
        drv_err_set(err, DRV_ENOENT, 0, "no version %s of %s \"%s\"", version, kind, name);
    return rc;
}

static int lock_name(PGconn *conn, const char *tenant_id, const char *kind, const char *name,
                     struct drv_err *err)
{
    const char *p[] = {tenant_id, kind, name};
    return store_execp(conn,
                       "SELECT pg_advisory_xact_lock(hashtextextended($1 || '/' || $2 || '/' || $3,"
                       " 0))",
                       3, p, NULL, err);
}

int store_entity_put(PGconn *conn, const char *tenant_id, const char *kind, const char *name,
                     const char *body, enum store_put_mode mode, int *version, struct drv_err *err)
{
    int rc = lock_name(conn, tenant_id, kind, name, err);
    if (rc)
        return rc;
    const char *p[] = {tenant_id, kind, name};
    PGresult *r;
    rc =
        store_execp(conn,
                    "SELECT coalesce(max(version), 0), coalesce(bool_or(deleted_at IS NULL), false)"
                    " FROM entities WHERE tenant_id = $1::bigint AND kind = $2 AND name = $3",
                    3, p, &r, err);
    if (rc)
        return rc;
    int max = atoi(PQgetvalue(r, 0, 0));
    int live = PQgetvalue(r, 0, 1)[0] == 't';
    PQclear(r);
    if (mode == STORE_PUT_CREATE && live)
        return drv_err_set(err, DRV_EEXIST, 0, "%s \"%s\" already exists", kind, name);
    if (mode == STORE_PUT_REPLACE && !live)
        return drv_err_set(err, DRV_ENOENT, 0, "no %s \"%s\"", kind, name);
    char v[16];
    snprintf(v, sizeof(v), "%d", max + 1);
    const char *q[] = {tenant_id, kind, name, v, body};
    rc = store_execp(conn,
                     "INSERT INTO entities (tenant_id, kind, name, version, body)"
                     " VALUES ($1::bigint, $2, $3, $4::integer, $5::jsonb)",
                     5, q, NULL, err);
    if (rc == 0 && version)
        *version = max + 1;
    return rc;
}

int store_entity_delete(PGconn *conn, const char *tenant_id, const char *kind, const char *name,
                        struct drv_err *err)
{
    int rc = lock_name(conn, tenant_id, kind, name, err);
    if (rc)
        return rc;
    const char *p[] = {tenant_id, kind, name};
    PGresult *r;
    rc = store_execp(conn,
                     "UPDATE entities SET deleted_at = now() WHERE tenant_id = $1::bigint"
                     " AND kind = $2 AND name = $3 AND deleted_at IS NULL",
                     3, p, &r, err);
    if (rc)
        return rc;
    int n = atoi(PQcmdTuples(r));
    PQclear(r);
    if (n == 0)
        return drv_err_set(err, DRV_ENOENT, 0, "no %s \"%s\"", kind, name);
    return 0;
}
