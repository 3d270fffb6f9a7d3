/*
 * store_quotas: a tenant's quotas and what it uses of them (issue 20; docs/api.md
 * "Quotas", docs/schema.md "Version 6").
 *
 * tenants.quotas holds the superadmin's per-tenant limits ({"clusters": 5, ...}); a
 * quota it does not name takes droverd's default (quota.* keys). Usage is counted
 * from the rows themselves inside the caller's transaction, after the tenant row is
 * locked (store_tenant_lock_quota), so two concurrent writes of one tenant see each
 * other's rows and a quota is never passed by a race. The lock is FOR NO KEY UPDATE: it
 * serialises the quota checks (and a tenant's deletion) but not the foreign-key checks
 * of inserts that name the tenant (FOR KEY SHARE: entities, users, another create's
 * rows), so a create may insert its rows first and take the lock last without a deadlock.
 * Pool threads; no state.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

int store_tenant_lock_quota(PGconn *conn, const char *tenant_id, struct drv_err *err)
{
    const char *p[] = {tenant_id};
    json_t *row;
    int rc = store_query_row(conn,
                             "SELECT id FROM tenants WHERE id = $1::bigint AND deleted_at IS NULL"
                             " FOR NO KEY UPDATE",
                             1, p, &row, err);
    if (rc == DRV_ENOENT)
        return drv_err_set(err, DRV_ECONFLICT, 0, "the tenant has been deleted");
    json_decref(row);
    return rc;
}

int store_tenant_share_quota(PGconn *conn, const char *tenant_id, json_t **quotas,
                             struct drv_err *err)
{
    const char *p[] = {tenant_id};
    json_t *row;
    *quotas = NULL;
    int rc = store_query_row(conn,
                             "SELECT quotas FROM tenants WHERE id = $1::bigint"
                             " AND deleted_at IS NULL FOR SHARE",
                             1, p, &row, err);
    if (rc == DRV_ENOENT)
        return drv_err_set(err, DRV_ECONFLICT, 0, "the tenant has been deleted");
    if (rc)
        return rc;
    *quotas = json_incref(json_object_get(row, "quotas"));
    json_decref(row);
    return 0;
}

int store_quota_lane(PGconn *conn, const char *tenant_id, int lanes, int first, int *lane,
                     struct drv_err *err)
{
    char n[16], f[16];
    snprintf(n, sizeof(n), "%d", lanes);
    snprintf(f, sizeof(f), "%d", first);
    const char *p[] = {tenant_id, n, f};
    PGresult *r;
    /* The first free lane from first on (LIMIT 1 stops at the first lock taken: the
       others were tried and not taken), else wait for lane first. */
    int rc = store_execp(conn,
                         "SELECT coalesce((SELECT l FROM (SELECT (k + $3::int) % $2::int AS l"
                         "   FROM generate_series(0, $2::int - 1) k) x"
                         "  WHERE pg_try_advisory_xact_lock(hashtextextended("
                         "   'drover-quota/' || $1 || '/' || l, 0)) LIMIT 1), -1)",
                         3, p, &r, err);
    if (rc)
        return rc;
    *lane = atoi(PQgetvalue(r, 0, 0));
    PQclear(r);
    if (*lane >= 0)
        return 0;
    *lane = first % lanes;
    return store_execp(conn,
                       "SELECT pg_advisory_xact_lock(hashtextextended("
                       " 'drover-quota/' || $1 || '/' || ($3::int % $2::int), 0))",
                       3, p, NULL, err);
}

int store_tenant_usage(PGconn *conn, const char *tenant_id, json_t **row, struct drv_err *err)
{
    const char *p[] = {tenant_id};
    return store_query_row(
        conn,
        "SELECT t.quotas,"
        " (SELECT count(*) FROM clusters c WHERE c.tenant_id = t.id AND c.deleted_at IS NULL)"
        "   AS clusters,"
        " (SELECT coalesce(sum(c.size), 0)::bigint FROM clusters c WHERE c.tenant_id = t.id"
        "   AND c.deleted_at IS NULL) AS nodes,"
        " (SELECT count(*) FROM jobs j WHERE j.tenant_id = t.id AND j.ended_at IS NULL) AS jobs,"
        " (SELECT count(*) FROM resources r WHERE r.tenant_id = t.id) AS resource_versions,"
        " (SELECT coalesce(sum(r.size), 0)::bigint FROM resources r WHERE r.tenant_id = t.id)"
        "   AS resource_bytes"
        " FROM tenants t WHERE t.id = $1::bigint",
        1, p, row, err);
}

int store_tenant_quotas_set(PGconn *conn, const char *tenant_id, const char *quotas,
                            struct drv_err *err)
{
    const char *p[] = {tenant_id, quotas};
    return store_execp(conn, "UPDATE tenants SET quotas = $2::jsonb WHERE id = $1::bigint", 2, p,
                       NULL, err);
}

int store_resource_prune(PGconn *conn, const char *tenant_id, long keep, long *pruned,
                         struct drv_err *err)
{
    char k[24];
    snprintf(k, sizeof(k), "%ld", keep);
    const char *p[] = {tenant_id, k};
    PGresult *r = NULL;
    int rc = store_execp(conn,
                         "DELETE FROM resources r WHERE r.tenant_id = $1::bigint"
                         " AND r.version NOT IN (SELECT version FROM resources"
                         "   WHERE tenant_id = $1::bigint ORDER BY version DESC LIMIT $2::bigint)"
                         " AND NOT EXISTS (SELECT 1 FROM jobs j"
                         "   LEFT JOIN job_plans p ON p.job_id = j.id"
                         "   WHERE j.tenant_id = r.tenant_id AND j.ended_at IS NULL"
                         "   AND (coalesce(p.inputs, j.inputs)->'resources'->>'version')::integer"
                         "     = r.version)",
                         2, p, &r, err);
    if (rc == 0 && pruned)
        *pruned = atol(PQcmdTuples(r));
    if (r)
        PQclear(r);
    return rc;
}
