/*
 * store_clusters: clusters, their nodes, and jobs.
 *
 * Visibility is part of every query: a row is found only with its tenant's
 * id, and, when an owner is given (role user), only when that user owns the
 * cluster. So a caller can never tell "not yours" from "does not exist".
 *
 * A cluster operation is a job row; a cluster has at most one unfinished
 * job. Callers check that under the cluster row's lock (store_cluster_get
 * with lock=1 inside a transaction), so two operations on one cluster never
 * both pass the check.
 */
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>

#include "store.h"

#define CLUSTER_COLS                                                                               \
    "c.id::text AS id, c.name, c.template_name AS template, c.template_version,"                   \
    " c.provider, c.hardwaretype, c.imagetype, c.size, c.services, c.status, c.config,"            \
    " c.layout, u.name AS owner, u.deleted_at IS NOT NULL AS owner_deleted, c.created_at,"         \
    " c.updated_at"

#define JOB_COLS                                                                                   \
    "j.id::text AS id, j.cluster_id::text AS cluster, j.operation, j.status, j.request,"           \
    " j.error, j.format_version, u.name AS requested_by, j.created_at, j.started_at,"              \
    " j.ended_at, j.control, j.owner"

int store_cluster_list(PGconn *conn, const char *tenant_id, const char *owner_id, json_t **items,
                       struct drv_err *err)
{
    const char *p[] = {tenant_id, owner_id};
    return store_query_json(conn,
                            "SELECT " CLUSTER_COLS " FROM clusters c"
                            " LEFT JOIN users u ON u.id = c.owner_id"
                            " WHERE c.tenant_id = $1::bigint AND c.deleted_at IS NULL"
                            " AND ($2::bigint IS NULL OR c.owner_id = $2::bigint) ORDER BY c.id",
                            2, p, items, err);
}

static int not_found(struct drv_err *err, const char *what, const char *id)
{
    return drv_err_set(err, DRV_ENOENT, 0, "no %s \"%s\"", what, id);
}

/* Ids come from URLs: anything but 1..18 digits is simply not found. */
static int bad_id(const char *id)
{
    size_t n = strlen(id);
    if (n == 0 || n > 18)
        return 1;
    for (const char *p = id; *p; p++)
        if (*p < '0' || *p > '9')
            return 1;
    return 0;
}

int store_cluster_snapshots(PGconn *conn, const char *tenant_id, const char *owner_id,
                            const char *cluster_id, const char *job_id, json_t **out,
                            struct drv_err *err)
{
    *out = NULL;
    if (bad_id(cluster_id))
        return not_found(err, "cluster", cluster_id);
    if (job_id && bad_id(job_id))
        return not_found(err, "snapshot", job_id);
    const char *p[] = {tenant_id, owner_id, cluster_id, job_id};
    json_t *c;
    int rc = store_query_row(conn,
                             "SELECT c.id FROM clusters c WHERE c.tenant_id = $1::bigint"
                             " AND c.deleted_at IS NULL"
                             " AND ($2::bigint IS NULL OR c.owner_id = $2::bigint)"
                             " AND c.id = $3::bigint",
                             3, p, &c, err);
    if (rc == DRV_ENOENT)
        return not_found(err, "cluster", cluster_id);
    if (rc)
        return rc;
    json_decref(c);
#define SNAP_COLS                                                                                  \
    "s.job_id::text AS job, j.operation, s.taken_at,"                                              \
    " jsonb_array_length(coalesce(s.state -> 'nodes', '[]')) AS nodes"
    if (!job_id)
        return store_query_json(conn,
                                "SELECT " SNAP_COLS
                                " FROM snapshots s JOIN jobs j ON j.id = s.job_id"
                                " WHERE s.cluster_id = $1::bigint"
                                " ORDER BY s.taken_at DESC, s.job_id DESC LIMIT 100",
                                1, p + 2, out, err);
    rc = store_query_row(conn,
                         "SELECT " SNAP_COLS ", s.state FROM snapshots s"
                         " JOIN jobs j ON j.id = s.job_id"
                         " WHERE s.cluster_id = $1::bigint AND s.job_id = $2::bigint",
                         2, p + 2, out, err);
#undef SNAP_COLS
    return rc == DRV_ENOENT ? not_found(err, "snapshot", job_id) : rc;
}

int store_cluster_get(PGconn *conn, const char *tenant_id, const char *owner_id,
                      const char *cluster_id, int lock, json_t **row, struct drv_err *err)
{
    *row = NULL;
    if (bad_id(cluster_id))
        return not_found(err, "cluster", cluster_id);
    const char *p[] = {tenant_id, owner_id, cluster_id};
    int rc = store_query_row(conn,
                             lock ? "SELECT " CLUSTER_COLS " FROM clusters c"
                                    " LEFT JOIN users u ON u.id = c.owner_id"
                                    " WHERE c.tenant_id = $1::bigint AND c.deleted_at IS NULL"
                                    " AND ($2::bigint IS NULL OR c.owner_id = $2::bigint)"
                                    " AND c.id = $3::bigint FOR UPDATE OF c"
                                  : "SELECT " CLUSTER_COLS " FROM clusters c"
                                    " LEFT JOIN users u ON u.id = c.owner_id"
                                    " WHERE c.tenant_id = $1::bigint AND c.deleted_at IS NULL"
                                    " AND ($2::bigint IS NULL OR c.owner_id = $2::bigint)"
                                    " AND c.id = $3::bigint",
                             3, p, row, err);
    if (rc == DRV_ENOENT)
        return not_found(err, "cluster", cluster_id);
    if (rc)
        return rc;
    json_t *nodes;
    const char *q[] = {cluster_id};
    rc = store_query_json(
        conn,
        "SELECT id, hardwaretype, imagetype, services, properties, status"
        " FROM nodes WHERE cluster_id = $1::bigint AND status <> 'deleted' ORDER BY id",
        1, q, &nodes, err);
    if (rc) {
        json_decref(*row);
        *row = NULL;
        return rc;
    }
    json_object_set_new(*row, "nodes", nodes);
    return 0;
}

int store_cluster_insert(PGconn *conn, const struct store_cluster_new *c, json_t **row,
                         struct drv_err *err)
{
    const char *p[] = {c->tenant_id,        c->owner_id,  c->name,   c->template_name,
                       c->template_version, c->provider,  c->size,   c->services,
                       c->hardwaretype,     c->imagetype, c->config, c->layout};
    json_t *ids;
    int rc = store_query_row(
        conn,
        "INSERT INTO clusters (tenant_id, owner_id, name, template_name, template_version,"
        " provider, status, size, services, hardwaretype, imagetype, config, layout)"
        " VALUES ($1::bigint, $2::bigint, $3, $4, $5::integer, $6, 'pending', $7::integer,"
        " $8::jsonb, $9, $10, $11::jsonb, coalesce($12::jsonb, '[]')) RETURNING id::text AS id",
        12, p, &ids, err);
    if (rc) {
        char buf[6];
        if (rc == DRV_EPG && strcmp(store_sqlstate(err, buf), "23505") == 0)
            return drv_err_set(err, DRV_EEXIST, 0, "cluster \"%s\" already exists", c->name);
        return rc;
    }
    char id[24];
    snprintf(id, sizeof(id), "%s", json_string_value(json_object_get(ids, "id")));
    json_decref(ids);
    return store_cluster_get(conn, c->tenant_id, NULL, id, 0, row, err);
}

int store_cluster_set_status(PGconn *conn, const char *cluster_id, const char *status,
                             struct drv_err *err)
{
    const char *p[] = {cluster_id, status};
    return store_execp(conn,
                       "UPDATE clusters SET status = $2, updated_at = now() WHERE id = $1::bigint",
                       2, p, NULL, err);
}

int store_cluster_last_failure(PGconn *conn, const char *cluster_id, json_t **row,
                               struct drv_err *err)
{
    const char *p[] = {cluster_id};
    return store_query_row(
        conn,
        "SELECT j.id::text AS job, j.operation, j.request,"
        " coalesce((SELECT jsonb_agg(DISTINCT jsonb_build_object('services', n.services,"
        "  'hardwaretype', n.hardwaretype, 'imagetype', n.imagetype, 'count', 1))"
        "  FROM tasks t JOIN nodes n ON n.cluster_id = j.cluster_id AND n.id = t.node_id"
        "  WHERE t.job_id = j.id AND t.phase = 'f' AND t.status = 'failed'), '[]')"
        "  AS failed_layouts"
        " FROM jobs j WHERE j.cluster_id = $1::bigint ORDER BY j.id DESC LIMIT 1",
        1, p, row, err);
}

int store_cluster_relayout(PGconn *conn, const char *cluster_id, const char *layout, long size,
                           struct drv_err *err)
{
    char sz[24];
    snprintf(sz, sizeof(sz), "%ld", size);
    const char *p[] = {cluster_id, layout, sz};
    return store_execp(conn,
                       "UPDATE clusters SET status = 'pending', layout = $2::jsonb,"
                       " size = $3::integer, updated_at = now() WHERE id = $1::bigint",
                       3, p, NULL, err);
}

int store_cluster_open_job(PGconn *conn, const char *cluster_id, json_t **row, struct drv_err *err)
{
    const char *p[] = {cluster_id};
    return store_query_row(conn,
                           "SELECT id::text AS id, operation, status FROM jobs"
                           " WHERE cluster_id = $1::bigint"
                           " AND status IN ('pending', 'running', 'paused', 'rolling-back')"
                           " LIMIT 1",
                           1, p, row, err);
}

int store_task_durations(PGconn *conn, const char *tenant_id, json_t **rows, struct drv_err *err)
{
    const char *p[] = {tenant_id};
    return store_query_json(
        conn,
        "SELECT coalesce(service, '') AS service, action,"
        " avg(extract(epoch FROM ended_at - started_at))::float8 AS secs, count(*) AS n"
        " FROM (SELECT t.service, t.action, t.started_at, t.ended_at FROM tasks t"
        "  JOIN jobs j ON j.id = t.job_id WHERE j.tenant_id = $1::bigint"
        "  AND t.status = 'succeeded' AND t.started_at IS NOT NULL AND t.ended_at IS NOT NULL"
        "  ORDER BY t.job_id DESC LIMIT 5000) r GROUP BY 1, 2 ORDER BY 1, 2",
        1, p, rows, err);
}

int store_job_insert(PGconn *conn, const char *tenant_id, const char *cluster_id,
                     const char *operation, const char *request, const char *user_id,
                     const char *catalog_version, json_t **row, struct drv_err *err)
{
    const char *p[] = {tenant_id, cluster_id, operation, request, user_id, catalog_version};
    json_t *ids;
    int rc = store_query_row(conn,
                             "INSERT INTO jobs (tenant_id, cluster_id, operation, status, request,"
                             " requested_by, catalog_version) VALUES ($1::bigint, $2::bigint, $3,"
                             " 'pending', $4::jsonb, $5::bigint, $6::bigint)"
                             " RETURNING id::text AS id",
                             6, p, &ids, err);
    if (rc)
        return rc;
    char id[24];
    snprintf(id, sizeof(id), "%s", json_string_value(json_object_get(ids, "id")));
    json_decref(ids);
    return store_job_get(conn, tenant_id, NULL, id, row, err);
}

static int job_row(PGconn *conn, const char *tenant_id, const char *owner_id, const char *job_id,
                   json_t **row, struct drv_err *err)
{
    *row = NULL;
    if (bad_id(job_id))
        return not_found(err, "job", job_id);
    const char *p[] = {tenant_id, owner_id, job_id};
    int rc = store_query_row(conn,
                             "SELECT " JOB_COLS ", (j.plan IS NOT NULL OR EXISTS (SELECT 1"
                             "  FROM job_plans p WHERE p.job_id = j.id AND p.plan IS NOT NULL))"
                             "  AS has_plan,"
                             " (SELECT coalesce(max(a.seq), 0) FROM task_attempts a"
                             "  WHERE a.job_id = j.id) AS task_changes FROM jobs j"
                             " LEFT JOIN clusters c ON c.id = j.cluster_id"
                             " LEFT JOIN users u ON u.id = j.requested_by"
                             " WHERE j.tenant_id = $1::bigint AND j.id = $3::bigint"
                             " AND ($2::bigint IS NULL OR c.owner_id = $2::bigint)",
                             3, p, row, err);
    return rc == DRV_ENOENT ? not_found(err, "job", job_id) : rc;
}

static void set_progress(json_t *row, const size_t done[2], const size_t total[2])
{
    json_object_set_new(
        row, "progress",
        json_pack("{s:I, s:I}", "done", (json_int_t)done[0], "total", (json_int_t)total[0]));
    if (total[1])
        json_object_set_new(
            row, "rollback_progress",
            json_pack("{s:I, s:I}", "done", (json_int_t)done[1], "total", (json_int_t)total[1]));
}

int store_job_get_summary(PGconn *conn, const char *tenant_id, const char *owner_id,
                          const char *job_id, json_t **row, struct drv_err *err)
{
    int rc = job_row(conn, tenant_id, owner_id, job_id, row, err);
    if (rc)
        return rc;
    json_t *counts;
    const char *q[] = {job_id};
    /* Kept at write time by the tasks' triggers (migration 7): a few rows, whatever the
       job's size. */
    rc = store_query_json(conn,
                          "SELECT phase, status, n FROM job_task_counts"
                          " WHERE job_id = $1::bigint AND n <> 0 ORDER BY 1, 2",
                          1, q, &counts, err);
    if (rc) {
        json_decref(*row);
        *row = NULL;
        return rc;
    }
    /* Progress of each plan, and how many of its tasks are in each state (a watcher sees a
       task start, not only end). */
    size_t done[2] = {0, 0}, total[2] = {0, 0}, i;
    json_t *states[2] = {json_object(), json_object()};
    json_t *c;
    json_array_foreach(counts, i, c)
    {
        const char *ph = json_string_value(json_object_get(c, "phase"));
        const char *st = json_string_value(json_object_get(c, "status"));
        int k = ph && strcmp(ph, "r") == 0;
        size_t n = (size_t)json_integer_value(json_object_get(c, "n"));
        total[k] += n;
        if (st && (strcmp(st, "succeeded") == 0 || strcmp(st, "skipped") == 0))
            done[k] += n;
        if (st)
            json_object_set_new(states[k], st, json_integer((json_int_t)n));
    }
    json_decref(counts);
    set_progress(*row, done, total);
    json_object_set_new(json_object_get(*row, "progress"), "states", states[0]);
    json_t *rb = json_object_get(*row, "rollback_progress");
    if (rb)
        json_object_set_new(rb, "states", states[1]);
    else
        json_decref(states[1]);
    return 0;
}

int store_job_get(PGconn *conn, const char *tenant_id, const char *owner_id, const char *job_id,
                  json_t **row, struct drv_err *err)
{
    int rc = job_row(conn, tenant_id, owner_id, job_id, row, err);
    if (rc)
        return rc;
    json_t *tasks;
    const char *q[] = {job_id};
    rc = store_query_json(conn,
                          "SELECT id, phase, idx, node_id, service, action, status, attempts,"
                          " worker, deps, strategy, started_at, ended_at FROM tasks"
                          " WHERE job_id = $1::bigint ORDER BY phase, idx, id",
                          1, q, &tasks, err);
    if (rc) {
        json_decref(*row);
        *row = NULL;
        return rc;
    }
    /* Progress of each plan: the forward one, and the rollback once there is one. */
    size_t done[2] = {0, 0}, total[2] = {0, 0}, i;
    json_t *t;
    json_array_foreach(tasks, i, t)
    {
        const char *ph = json_string_value(json_object_get(t, "phase"));
        int k = ph && strcmp(ph, "r") == 0;
        const char *st = json_string_value(json_object_get(t, "status"));
        total[k]++;
        if (st && (strcmp(st, "succeeded") == 0 || strcmp(st, "skipped") == 0))
            done[k]++;
    }
    set_progress(*row, done, total);
    json_object_set_new(*row, "tasks", tasks);
    return 0;
}

int store_job_list(PGconn *conn, const char *tenant_id, const char *owner_id,
                   const char *cluster_id, json_t **items, struct drv_err *err)
{
    if (cluster_id && bad_id(cluster_id)) {
        *items = json_array();
        return 0;
    }
    const char *p[] = {tenant_id, owner_id, cluster_id};
    return store_query_json(conn,
                            "SELECT " JOB_COLS " FROM jobs j"
                            " LEFT JOIN clusters c ON c.id = j.cluster_id"
                            " LEFT JOIN users u ON u.id = j.requested_by"
                            " WHERE j.tenant_id = $1::bigint"
                            " AND ($2::bigint IS NULL OR c.owner_id = $2::bigint)"
                            " AND ($3::bigint IS NULL OR j.cluster_id = $3::bigint)"
                            " ORDER BY j.id DESC LIMIT 500",
                            3, p, items, err);
}

int store_job_control(PGconn *conn, const char *tenant_id, const char *owner_id, const char *job_id,
                      const char *want, json_t **row, struct drv_err *err)
{
    *row = NULL;
    if (bad_id(job_id))
        return not_found(err, "job", job_id);
    const char *p[] = {tenant_id, owner_id, job_id};
    json_t *cur;
    int rc = store_query_row(conn,
                             "SELECT j.status, j.control FROM jobs j"
                             " LEFT JOIN clusters c ON c.id = j.cluster_id"
                             " WHERE j.tenant_id = $1::bigint AND j.id = $3::bigint"
                             " AND ($2::bigint IS NULL OR c.owner_id = $2::bigint)"
                             " FOR UPDATE OF j",
                             3, p, &cur, err);
    if (rc == DRV_ENOENT)
        return not_found(err, "job", job_id);
    if (rc)
        return rc;
    char status[32], control[16];
    snprintf(status, sizeof(status), "%s", json_string_value(json_object_get(cur, "status")));
    const char *ctl = json_string_value(json_object_get(cur, "control"));
    snprintf(control, sizeof(control), "%s", ctl ? ctl : "");
    json_decref(cur);
    bool open = strcmp(status, "pending") == 0 || strcmp(status, "running") == 0 ||
                strcmp(status, "paused") == 0 || strcmp(status, "rolling-back") == 0;
    bool ok;
    if (strcmp(want, "cancel") == 0) /* a rollback runs to its end */
        ok = open && strcmp(status, "rolling-back") != 0 && strcmp(control, "cancel") != 0;
    else if (strcmp(want, "pause") == 0)
        ok = (strcmp(status, "pending") == 0 || strcmp(status, "running") == 0) &&
             strcmp(control, "cancel") != 0;
    else
        ok = (strcmp(status, "paused") == 0 || strcmp(control, "pause") == 0) &&
             strcmp(control, "cancel") != 0;
    if (!ok)
        return drv_err_set(err, DRV_ECONFLICT, 0, "job \"%s\" is %s%s%s: cannot %s it", job_id,
                           status, *control ? " (asked to " : "", *control ? control : "", want);
    const char *q[] = {job_id, want};
    rc = store_execp(conn, "UPDATE jobs SET control = $2 WHERE id = $1::bigint", 2, q, NULL, err);
    if (rc)
        return rc;
    return store_job_get_summary(conn, tenant_id, owner_id, job_id, row, err);
}

int store_job_open_ids(PGconn *conn, const char *tenant_id, json_t **ids, struct drv_err *err)
{
    const char *p[] = {tenant_id};
    return store_query_json(conn,
                            "SELECT id::text AS id, operation, status FROM jobs"
                            " WHERE ($1::bigint IS NULL OR tenant_id = $1::bigint)"
                            " AND status IN ('pending', 'running', 'paused', 'rolling-back')"
                            " ORDER BY jobs.id LIMIT 1000",
                            1, p, ids, err);
}
