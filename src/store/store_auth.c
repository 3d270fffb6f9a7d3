/*
 * store_auth: tenants, users, API tokens and the audit log.
 *
 * Tokens are stored as (public id, salt, hash of the secret); hashing and
 * checking happen in the API (src/api/auth.c), so the secret never reaches
 * this file. bytea values travel as hex text ('\x...').
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

/* SQLSTATE unique_violation (23505) as store_exec encodes it. */
static int is_unique_violation(const struct drv_err *err)
{
    char buf[6];
    return err->code == DRV_EPG && strcmp(store_sqlstate(err, buf), "23505") == 0;
}

int store_token_lookup(PGconn *conn, const char *token_id, json_t **row, struct drv_err *err)
{
    const char *p[] = {token_id};
    return store_query_row(
        conn,
        "SELECT u.id::text AS user_id, u.role, u.tenant_id::text AS tenant_id, u.name AS user,"
        " coalesce(tn.name, '') AS tenant, encode(t.salt, 'hex') AS salt,"
        " coalesce((tn.quotas->>'heavy')::bigint, 0) AS heavy,"
        " encode(t.hash, 'hex') AS hash,"
        " coalesce((extract(epoch FROM t.expires_at) * 1000)::bigint, 0) AS expires_ms"
        " FROM api_tokens t JOIN users u ON u.id = t.user_id"
        " LEFT JOIN tenants tn ON tn.id = u.tenant_id"
        " WHERE t.id = $1 AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > "
        "now()) AND u.deleted_at IS NULL AND (u.tenant_id IS NULL OR tn.deleted_at IS NULL)",
        1, p, row, err);
}

int store_token_insert(PGconn *conn, const char *token_id, const char *user_id,
                       const char *salt_hex, const char *hash_hex, const char *expires_s,
                       const char *label, json_t **row, struct drv_err *err)
{
    const char *p[] = {token_id, user_id, salt_hex, hash_hex, expires_s, label ? label : ""};
    return store_query_row(conn,
                           "INSERT INTO api_tokens (id, user_id, salt, hash, expires_at, label)"
                           " VALUES ($1, $2::bigint, decode($3, 'hex'), decode($4, 'hex'),"
                           " now() + make_interval(secs => $5::bigint), $6)"
                           " RETURNING id, label, created_at, expires_at",
                           6, p, row, err);
}

int store_token_list(PGconn *conn, const char *user_id, json_t **items, struct drv_err *err)
{
    const char *p[] = {user_id};
    return store_query_json(conn,
                            "SELECT id, label, created_at, expires_at FROM api_tokens"
                            " WHERE user_id = $1::bigint AND revoked_at IS NULL"
                            " AND (expires_at IS NULL OR expires_at > now())"
                            " ORDER BY created_at, id",
                            1, p, items, err);
}

int store_superadmin_exists(PGconn *conn, int *exists, struct drv_err *err)
{
    PGresult *r;
    int rc =
        store_execp(conn, "SELECT count(*) FROM users WHERE role = 'superadmin'", 0, NULL, &r, err);
    if (rc)
        return rc;
    *exists = strcmp(PQgetvalue(r, 0, 0), "0") != 0;
    PQclear(r);
    return 0;
}

int store_user_insert(PGconn *conn, const char *tenant_id, const char *name, const char *role,
                      char user_id[24], struct drv_err *err)
{
    const char *p[] = {tenant_id, name, role};
    PGresult *r;
    int rc = store_execp(conn,
                         "INSERT INTO users (tenant_id, name, role) VALUES ($1::bigint, $2, $3)"
                         " RETURNING id",
                         3, p, &r, err);
    if (rc) {
        if (is_unique_violation(err))
            return drv_err_set(err, DRV_EEXIST, 0, "user \"%s\" already exists", name);
        return rc;
    }
    snprintf(user_id, 24, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    return 0;
}

int store_user_list(PGconn *conn, const char *tenant_id, json_t **items, struct drv_err *err)
{
    const char *p[] = {tenant_id};
    return store_query_json(conn,
                            "SELECT id::text AS id, name, role, created_at FROM users"
                            " WHERE tenant_id = $1::bigint AND deleted_at IS NULL ORDER BY name",
                            1, p, items, err);
}

int store_tenant_insert(PGconn *conn, const char *name, json_t **row, struct drv_err *err)
{
    const char *p[] = {name};
    int rc = store_query_row(conn,
                             "INSERT INTO tenants (name) VALUES ($1)"
                             " RETURNING id::text AS id, name, created_at",
                             1, p, row, err);
    if (rc && is_unique_violation(err))
        return drv_err_set(err, DRV_EEXIST, 0, "tenant \"%s\" already exists", name);
    return rc;
}

int store_tenant_list(PGconn *conn, json_t **items, struct drv_err *err)
{
    return store_query_json(conn,
                            "SELECT id::text AS id, name, created_at FROM tenants"
                            " WHERE deleted_at IS NULL ORDER BY name",
                            0, NULL, items, err);
}

int store_tenant_id(PGconn *conn, const char *name, char id[24], struct drv_err *err)
{
    const char *p[] = {name};
    PGresult *r;
    int rc = store_execp(conn, "SELECT id FROM tenants WHERE name = $1 AND deleted_at IS NULL", 1,
                         p, &r, err);
    if (rc)
        return rc;
    if (PQntuples(r) == 0) {
        PQclear(r);
        return drv_err_set(err, DRV_ENOENT, 0, "no tenant \"%s\"", name);
    }
    snprintf(id, 24, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    return 0;
}

int store_audit(PGconn *conn, const char *tenant_id, const char *user_id, const char *actor,
                const char *action, const char *entity_kind, const char *entity_id,
                const char *source, const char *detail, struct drv_err *err)
{
    const char *p[] = {tenant_id,   user_id,   actor,  action,
                       entity_kind, entity_id, source, detail ? detail : "{}"};
    return store_execp(conn,
                       "INSERT INTO audit_log (tenant_id, user_id, actor, action, entity_kind,"
                       " entity_id, source, detail)"
                       " VALUES ($1::bigint, $2::bigint, $3, $4, $5, $6, $7, $8::jsonb)",
                       8, p, NULL, err);
}

int store_token_revoke(PGconn *conn, const char *token_id, const char *tenant_id,
                       const char *user_id, struct drv_err *err)
{
    const char *p[] = {token_id, tenant_id, user_id};
    PGresult *r;
    int rc = store_execp(conn,
                         "UPDATE api_tokens t SET revoked_at = now() FROM users u"
                         " WHERE u.id = t.user_id AND t.id = $1 AND t.revoked_at IS NULL"
                         " AND ($2::bigint IS NULL OR u.tenant_id = $2::bigint)"
                         " AND ($3::bigint IS NULL OR u.id = $3::bigint)",
                         3, p, &r, err);
    if (rc)
        return rc;
    int n = atoi(PQcmdTuples(r));
    PQclear(r);
    return n ? 0 : drv_err_set(err, DRV_ENOENT, 0, "no token \"%s\"", token_id);
}

int store_audit_list(PGconn *conn, const char *tenant_id, const char *limit, json_t **items,
                     struct drv_err *err)
{
    const char *p[] = {tenant_id, limit};
    return store_query_json(conn,
                            "SELECT id::text AS id, at, actor, action, entity_kind, entity_id,"
                            " source, detail FROM audit_log"
                            " WHERE ($1::bigint IS NULL OR tenant_id = $1::bigint)"
                            " ORDER BY audit_log.id DESC LIMIT $2::integer",
                            2, p, items, err);
}

/* The id of the live user name of a tenant that sql (parameters: tenant, name) returns. */
static int user_id_of(PGconn *conn, const char *sql, const char *tenant_id, const char *name,
                      char user_id[24], struct drv_err *err)
{
    const char *p[] = {tenant_id, name};
    json_t *row;
    int rc = store_query_row(conn, sql, 2, p, &row, err);
    if (rc == DRV_ENOENT)
        return drv_err_set(err, DRV_ENOENT, 0, "no user \"%s\"", name);
    if (rc)
        return rc;
    snprintf(user_id, 24, "%s", json_string_value(json_object_get(row, "id")));
    json_decref(row);
    return 0;
}

int store_user_delete(PGconn *conn, const char *tenant_id, const char *name, char user_id[24],
                      struct drv_err *err)
{
    int rc = user_id_of(conn,
                        "UPDATE users SET deleted_at = now() WHERE tenant_id = $1::bigint"
                        " AND name = $2 AND deleted_at IS NULL RETURNING id::text AS id",
                        tenant_id, name, user_id, err);
    if (rc)
        return rc;
    const char *q[] = {user_id};
    return store_execp(conn,
                       "UPDATE api_tokens SET revoked_at = now() WHERE user_id = $1::bigint"
                       " AND revoked_at IS NULL",
                       1, q, NULL, err);
}

int store_user_id(PGconn *conn, const char *tenant_id, const char *name, char user_id[24],
                  struct drv_err *err)
{
    return user_id_of(conn,
                      "SELECT id::text AS id FROM users WHERE tenant_id = $1::bigint"
                      " AND name = $2 AND deleted_at IS NULL",
                      tenant_id, name, user_id, err);
}

int store_tenant_delete(PGconn *conn, const char *name, char tenant_id[24], struct drv_err *err)
{
    int rc = store_tenant_id(conn, name, tenant_id, err);
    if (rc)
        return rc;
    const char *p[] = {tenant_id};
    /* The tenant row's lock: no cluster can be created for it while this runs. */
    rc = store_execp(conn, "SELECT id FROM tenants WHERE id = $1::bigint FOR UPDATE", 1, p, NULL,
                     err);
    json_t *row = NULL;
    if (rc == 0)
        rc = store_query_row(conn,
                             "SELECT count(*) AS n FROM clusters WHERE tenant_id = $1::bigint"
                             " AND deleted_at IS NULL",
                             1, p, &row, err);
    if (rc)
        return rc;
    json_int_t n = json_integer_value(json_object_get(row, "n"));
    json_decref(row);
    if (n > 0)
        return drv_err_set(err, DRV_ECONFLICT, 0,
                           "tenant \"%s\" has %lld live clusters: delete them first", name,
                           (long long)n);
    rc =
        store_execp(conn,
                    "UPDATE api_tokens t SET revoked_at = now() FROM users u"
                    " WHERE u.id = t.user_id AND u.tenant_id = $1::bigint AND t.revoked_at IS NULL",
                    1, p, NULL, err);
    if (rc == 0)
        rc = store_execp(conn,
                         "UPDATE users SET deleted_at = now() WHERE tenant_id = $1::bigint"
                         " AND deleted_at IS NULL",
                         1, p, NULL, err);
    if (rc == 0)
        rc = store_execp(conn,
                         "UPDATE entities SET deleted_at = now() WHERE tenant_id = $1::bigint"
                         " AND deleted_at IS NULL",
                         1, p, NULL, err);
    if (rc == 0)
        rc = store_execp(conn, "UPDATE tenants SET deleted_at = now() WHERE id = $1::bigint", 1, p,
                         NULL, err);
    return rc;
}

int store_tenant_lock_live(PGconn *conn, const char *tenant_id, struct drv_err *err)
{
    const char *p[] = {tenant_id};
    json_t *row;
    int rc = store_query_row(conn,
                             "SELECT id FROM tenants WHERE id = $1::bigint AND deleted_at IS NULL"
                             " FOR SHARE",
                             1, p, &row, err);
    if (rc == DRV_ENOENT)
        return drv_err_set(err, DRV_ECONFLICT, 0, "the tenant has been deleted");
    json_decref(row);
    return rc;
}
