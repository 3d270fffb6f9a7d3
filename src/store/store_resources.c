/*
 * store_resources: a tenant's plugin resources, versioned (docs/schema.md
 * "Version 5").
 *
 * A push inserts the next version of the tenant's resources under the
 * tenant row's lock (store_tenant_lock_live) and a transaction advisory lock
 * keyed by the tenant, so two concurrent pushes get
 * versions n and n+1, never the same one. The body is the canonical JSON text
 * of the files (path -> base64), stored as bytea; readers get it back as
 * text. Rows are never changed: a version is what was pushed, for good.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

int store_resource_insert(PGconn *conn, const char *tenant_id, const char *sha256, const char *size,
                          const char *files, const char *body, const char *created_by, json_t **row,
                          struct drv_err *err)
{
    int rc = store_tenant_lock_live(conn, tenant_id, err);
    /* The tenant row's lock is shared: pushes of one tenant serialise here. */
    const char *t[] = {tenant_id};
    if (rc == 0)
        rc =
            store_execp(conn, "SELECT pg_advisory_xact_lock(730195, $1::integer)", 1, t, NULL, err);
    if (rc)
        return rc;
    const char *p[] = {tenant_id, sha256, size, files, body, created_by};
    return store_query_row(conn,
                           "INSERT INTO resources (tenant_id, version, sha256, size, files, body,"
                           " created_by) SELECT $1::bigint, coalesce(max(version), 0) + 1, $2,"
                           " $3::bigint, $4::integer, convert_to($5, 'UTF8'), $6"
                           " FROM resources WHERE tenant_id = $1::bigint"
                           " RETURNING version, sha256, size, files, created_at, created_by",
                           6, p, row, err);
}

int store_resource_list(PGconn *conn, const char *tenant_id, json_t **items, struct drv_err *err)
{
    const char *p[] = {tenant_id};
    return store_query_json(conn,
                            "SELECT version, sha256, size, files, created_at, created_by"
                            " FROM resources WHERE tenant_id = $1::bigint ORDER BY version DESC",
                            1, p, items, err);
}

int store_resource_get(PGconn *conn, const char *tenant_id, const char *version, json_t **row,
                       struct drv_err *err)
{
    const char *p[] = {tenant_id, version};
    int rc = store_query_row(conn,
                             "SELECT version, sha256, size, convert_from(body, 'UTF8') AS body"
                             " FROM resources WHERE tenant_id = $1::bigint"
                             " AND version = $2::integer",
                             2, p, row, err);
    if (rc == DRV_ENOENT)
        drv_err_set(err, DRV_ENOENT, 0, "no resources version %s", version);
    return rc;
}
