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

/*
 * The documents that may hold legacy values, one table entry a column. Every select
 * returns the same shape: the place (tenant name, kind, name, field; seal.h), the path of
 * the part to migrate within the document (dotted, '' for the whole of it), the document,
 * a label naming the row for errors, then the row's keys, which are update's $2 on ($1:
 * the document migrated).
 */
enum { COL_TENANT, COL_KIND, COL_NAME, COL_FIELD, COL_PATH, COL_DOC, COL_LABEL, COL_KEYS };

static const struct reseal_table {
    const char *select;
    const char *update;
} tables[] = {
    {"SELECT t.name, e.kind, e.name, "
     "CASE e.kind WHEN 'provider' THEN 'provisioner' ELSE 'defaults.config' END, "
     "CASE e.kind WHEN 'provider' THEN 'provisioner' ELSE 'defaults.config' END, e.body::text, "
     "format('%s \"%s\" of tenant \"%s\"', e.kind, e.name, t.name), "
     "e.tenant_id::text, e.kind, e.name, e.version::text "
     "FROM entities e JOIN tenants t ON t.id = e.tenant_id "
     "WHERE e.kind IN ('provider', 'clustertemplate', 'partialtemplate') AND " LEGACY_LIKE(
         "e.body"),
     "UPDATE entities SET body = $1::jsonb WHERE tenant_id = $2::bigint AND kind = $3 AND "
     "name = $4 AND version = $5::integer"},
    {"SELECT t.name, 'cluster', c.name, 'config', '', c.config::text, "
     "format('cluster \"%s\" of tenant \"%s\"', c.name, t.name), c.id::text "
     "FROM clusters c JOIN tenants t ON t.id = c.tenant_id WHERE " LEGACY_LIKE("c.config"),
     "UPDATE clusters SET config = $1::jsonb WHERE id = $2::bigint"},
    {"SELECT t.name, 'cluster', c.name, 'ssh', 'ssh', c.secrets::text, "
     "format('cluster \"%s\" of tenant \"%s\"', c.name, t.name), c.id::text "
     "FROM clusters c JOIN tenants t ON t.id = c.tenant_id WHERE " LEGACY_LIKE("c.secrets"),
     "UPDATE clusters SET secrets = $1::jsonb WHERE id = $2::bigint"},
    {"SELECT t.name, 'node', n.cluster_id::text || '/' || n.id, '', '', n.properties::text, "
     "format('node \"%s/%s\"', n.cluster_id, n.id), n.cluster_id::text, n.id "
     "FROM nodes n JOIN clusters c ON c.id = n.cluster_id JOIN tenants t ON t.id = c.tenant_id "
     "WHERE " LEGACY_LIKE("n.properties"),
     "UPDATE nodes SET properties = $1::jsonb WHERE cluster_id = $2::bigint AND id = $3"},
    {"SELECT t.name, 'cluster', cl.name, 'config', 'config', j.request::text, "
     "format('job %s', j.id), j.id::text "
     "FROM jobs j JOIN tenants t ON t.id = j.tenant_id JOIN clusters cl ON cl.id = j.cluster_id "
     "WHERE " LEGACY_LIKE("j.request"),
     "UPDATE jobs SET request = $1::jsonb WHERE id = $2::bigint"},
};

/* The part of doc at a dotted path ("" : doc itself), or NULL. Borrowed. */
static json_t *part_at(json_t *doc, const char *path)
{
    char buf[64];
    snprintf(buf, sizeof(buf), "%s", path);
    json_t *v = doc;
    for (char *save = NULL, *k = strtok_r(buf, ".", &save); k && v; k = strtok_r(NULL, ".", &save))
        v = json_object_get(v, k);
    return v;
}

/* Every row of table t that holds a legacy value: migrated and written back; *n grows. */
static int reseal_table(PGconn *c, const struct reseal_table *t, const unsigned char fleet[32],
                        int *n, struct drv_err *err)
{
    PGresult *res = NULL;
    int rc = store_exec(c, t->select, 0, NULL, &res, err);
    for (int i = 0; rc == 0 && i < PQntuples(res); i++) {
        json_t *doc = json_loads(PQgetvalue(res, i, COL_DOC), 0, NULL);
        struct seal_place place = {PQgetvalue(res, i, COL_TENANT), PQgetvalue(res, i, COL_KIND),
                                   PQgetvalue(res, i, COL_NAME), PQgetvalue(res, i, COL_FIELD)};
        json_t *v = part_at(doc, PQgetvalue(res, i, COL_PATH));
        int got = 0;
        if (json_is_object(v) || json_is_array(v))
            rc = seal_migrate_tree(fleet, &place, v, &got, err);
        *n += got;
        if (rc == 0) {
            char *text = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
            const char *params[8] = {text};
            int np = 1;
            for (int k = COL_KEYS; k < PQnfields(res) && np < 8; k++)
                params[np++] = PQgetvalue(res, i, k);
            rc = store_exec(c, t->update, np, params, NULL, err);
            seal_wipe_free(text);
        } else {
            drv_err_prefix(err, "%s", PQgetvalue(res, i, COL_LABEL));
        }
        json_decref(doc);
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
    for (size_t i = 0; rc == 0 && i < sizeof(tables) / sizeof(tables[0]); i++)
        rc = reseal_table(c, &tables[i], fleet, n, err);
    if (rc == 0)
        rc = store_commit(c, err);
    if (rc) {
        store_rollback(c);
        *n = 0;
    }
    PQfinish(c);
    return rc;
}
