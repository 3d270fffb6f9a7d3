/*
 * reseal: the one-off start-up migration of sealed values from the legacy
 * format (enc:v1/enc:j1: one fleet-wide key, no place) to the placed format
 * of src/common/seal.h (docs/security.md, "Sealed values").
 *
 * droverd runs api_reseal_legacy once at start-up, after the schema
 * migrations and before it serves (src/bin/droverd.c). In one transaction,
 * under an advisory lock (several nodes starting together: the first does
 * the work, the others find nothing left), it reads every row that holds a
 * legacy value and writes it back with each legacy value opened under the
 * fleet key and sealed again under its tenant's key at its place:
 *
 *   entities (live and old versions) provider         body.provisioner
 *                                    cluster/partial  body.defaults.config
 *   clusters                         config           cluster/<name> config.<p>
 *                                    secrets.ssh      cluster/<name> ssh.<p>
 *   nodes                            properties       node/<cluster id>/<node id> <k>
 *   jobs                             request.config   cluster/<name> config.<p>
 *
 * A legacy value that does not open under the fleet key (another key, a
 * damaged value) fails the whole migration and the start: nothing is written
 * and the operator is told which row and field. A second run finds nothing.
 * Values in ZooKeeper (an in-flight job's context) are not rewritten: drain
 * jobs before the upgrade (docs/operations.md).
 *
 * Blocking, start-up only, on its own connection.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "api.h"
#include "seal.h"
#include "store.h"
#include "xalloc.h"

/* Arbitrary constant naming the re-seal among advisory locks. */
#define RESEAL_LOCK_KEY "7301946287"
#define LEGACY_LIKE(col) "(" col "::text LIKE '%enc:v1:%' OR " col "::text LIKE '%enc:j1:%')"

/* Migrate j[k] (an object) in place at base; *n grows. */
static int migrate_part(const unsigned char fleet[32], json_t *j, const char *k,
                        const struct seal_place *base, int *n, struct drv_err *err)
{
    json_t *v = k ? json_object_get(j, k) : j;
    if (!json_is_object(v) && !json_is_array(v))
        return 0;
    int got = 0;
    int rc = seal_migrate_tree(fleet, base, v, &got, err);
    *n += got;
    return rc;
}

static int update(PGconn *c, const char *sql, json_t *doc, const char *const *keys, int nkeys,
                  struct drv_err *err)
{
    char *text = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
    const char *params[6] = {text};
    for (int i = 0; i < nkeys; i++)
        params[i + 1] = keys[i];
    int rc = store_exec(c, sql, nkeys + 1, params, NULL, err);
    seal_wipe_free(text);
    return rc;
}

static int entities(PGconn *c, const unsigned char fleet[32], int *n, struct drv_err *err)
{
    PGresult *res = NULL;
    int rc = store_exec(
        c,
        "SELECT e.tenant_id::text, t.name, e.kind, e.name, e.version::text, "
        "e.body::text FROM entities e JOIN tenants t ON t.id = e.tenant_id "
        "WHERE e.kind IN ('provider', 'clustertemplate', 'partialtemplate') AND " LEGACY_LIKE(
            "e.body"),
        0, NULL, &res, err);
    for (int i = 0; rc == 0 && i < PQntuples(res); i++) {
        const char *tenant = PQgetvalue(res, i, 1), *kind = PQgetvalue(res, i, 2),
                   *name = PQgetvalue(res, i, 3);
        json_t *body = json_loads(PQgetvalue(res, i, 5), 0, NULL);
        bool prov = strcmp(kind, "provider") == 0;
        struct seal_place base = {tenant, kind, name, prov ? "provisioner" : "defaults.config"};
        rc = prov ? migrate_part(fleet, body, "provisioner", &base, n, err)
                  : migrate_part(fleet, json_object_get(body, "defaults"), "config", &base, n, err);
        if (rc == 0) {
            const char *keys[] = {PQgetvalue(res, i, 0), kind, name, PQgetvalue(res, i, 4)};
            rc = update(c,
                        "UPDATE entities SET body = $1::jsonb WHERE tenant_id = $2::bigint AND "
                        "kind = $3 AND name = $4 AND version = $5::integer",
                        body, keys, 4, err);
        } else {
            drv_err_prefix(err, "%s \"%s\" of tenant \"%s\"", kind, name, tenant);
        }
        json_decref(body);
    }
    PQclear(res);
    return rc;
}

static int clusters(PGconn *c, const unsigned char fleet[32], int *n, struct drv_err *err)
{
    PGresult *res = NULL;
    int rc = store_exec(c,
                        "SELECT c.id::text, t.name, c.name, c.config::text, c.secrets::text "
                        "FROM clusters c JOIN tenants t ON t.id = c.tenant_id WHERE " LEGACY_LIKE(
                            "c.config") " OR " LEGACY_LIKE("c.secrets"),
                        0, NULL, &res, err);
    for (int i = 0; rc == 0 && i < PQntuples(res); i++) {
        const char *tenant = PQgetvalue(res, i, 1), *name = PQgetvalue(res, i, 2);
        json_t *config = json_loads(PQgetvalue(res, i, 3), 0, NULL);
        json_t *secrets = json_loads(PQgetvalue(res, i, 4), 0, NULL);
        struct seal_place cfg = {tenant, "cluster", name, "config"};
        struct seal_place ssh = {tenant, "cluster", name, "ssh"};
        rc = migrate_part(fleet, config, NULL, &cfg, n, err);
        if (rc == 0)
            rc = migrate_part(fleet, secrets, "ssh", &ssh, n, err);
        if (rc == 0) {
            const char *keys[] = {PQgetvalue(res, i, 0)};
            rc = update(c, "UPDATE clusters SET config = $1::jsonb WHERE id = $2::bigint", config,
                        keys, 1, err);
            if (rc == 0)
                rc = update(c, "UPDATE clusters SET secrets = $1::jsonb WHERE id = $2::bigint",
                            secrets, keys, 1, err);
        } else {
            drv_err_prefix(err, "cluster \"%s\" of tenant \"%s\"", name, tenant);
        }
        json_decref(config);
        json_decref(secrets);
    }
    PQclear(res);
    return rc;
}

static int nodes(PGconn *c, const unsigned char fleet[32], int *n, struct drv_err *err)
{
    PGresult *res = NULL;
    int rc = store_exec(c,
                        "SELECT n.cluster_id::text, n.id, t.name, n.properties::text FROM nodes n "
                        "JOIN clusters c ON c.id = n.cluster_id JOIN tenants t ON t.id = "
                        "c.tenant_id WHERE " LEGACY_LIKE("n.properties"),
                        0, NULL, &res, err);
    for (int i = 0; rc == 0 && i < PQntuples(res); i++) {
        char name[200];
        snprintf(name, sizeof(name), "%s/%s", PQgetvalue(res, i, 0), PQgetvalue(res, i, 1));
        json_t *props = json_loads(PQgetvalue(res, i, 3), 0, NULL);
        struct seal_place base = {PQgetvalue(res, i, 2), "node", name, ""};
        rc = migrate_part(fleet, props, NULL, &base, n, err);
        if (rc == 0) {
            const char *keys[] = {PQgetvalue(res, i, 0), PQgetvalue(res, i, 1)};
            rc = update(c,
                        "UPDATE nodes SET properties = $1::jsonb WHERE cluster_id = $2::bigint "
                        "AND id = $3",
                        props, keys, 2, err);
        } else {
            drv_err_prefix(err, "node \"%s\"", name);
        }
        json_decref(props);
    }
    PQclear(res);
    return rc;
}

static int jobs(PGconn *c, const unsigned char fleet[32], int *n, struct drv_err *err)
{
    PGresult *res = NULL;
    int rc = store_exec(c,
                        "SELECT j.id::text, t.name, cl.name, j.request::text FROM jobs j "
                        "JOIN tenants t ON t.id = j.tenant_id JOIN clusters cl ON cl.id = "
                        "j.cluster_id WHERE " LEGACY_LIKE("j.request"),
                        0, NULL, &res, err);
    for (int i = 0; rc == 0 && i < PQntuples(res); i++) {
        json_t *req = json_loads(PQgetvalue(res, i, 3), 0, NULL);
        struct seal_place base = {PQgetvalue(res, i, 1), "cluster", PQgetvalue(res, i, 2),
                                  "config"};
        rc = migrate_part(fleet, req, "config", &base, n, err);
        if (rc == 0) {
            const char *keys[] = {PQgetvalue(res, i, 0)};
            rc = update(c, "UPDATE jobs SET request = $1::jsonb WHERE id = $2::bigint", req, keys,
                        1, err);
        } else {
            drv_err_prefix(err, "job %s", PQgetvalue(res, i, 0));
        }
        json_decref(req);
    }
    PQclear(res);
    return rc;
}

int api_reseal_legacy(const char *conninfo, const unsigned char fleet[32], int *n,
                      struct drv_err *err)
{
    *n = 0;
    PGconn *c = store_connect(conninfo, err);
    if (!c)
        return err ? err->code : DRV_EAGAIN;
    int rc = store_begin(c, err);
    if (rc == 0)
        rc = store_exec(c, "SELECT pg_advisory_xact_lock(" RESEAL_LOCK_KEY ")", 0, NULL, NULL, err);
    if (rc == 0)
        rc = entities(c, fleet, n, err);
    if (rc == 0)
        rc = clusters(c, fleet, n, err);
    if (rc == 0)
        rc = nodes(c, fleet, n, err);
    if (rc == 0)
        rc = jobs(c, fleet, n, err);
    if (rc == 0)
        rc = store_commit(c, err);
    if (rc) {
        store_rollback(c);
        *n = 0;
    }
    PQfinish(c);
    return rc;
}
