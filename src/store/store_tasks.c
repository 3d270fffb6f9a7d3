/*
 * store_tasks: a job's tasks a page at a time, and the few rows that explain
 * them (docs/api.md "Jobs": GET /v1/jobs/{id}/tasks, the streamed full read).
 *
 * Every query here is bounded by its page, by its arguments or by the
 * job's queued and running tasks (the owner's in-flight limit), never by the
 * job's size in droverd's memory: a 140,007-task job is read 2,000 rows at a
 * time. The caller has checked that the job is the caller's to see
 * (store_job_get_summary); these take the job's id only.
 *
 * Order: (phase, idx): the forward plan's tasks in the planner's order, then
 * the rollback's. A task's phase and index never change, so a position in
 * that order (the cursor) stays valid while the job runs: a page starts
 * after it, whatever changed before it, and no task is listed twice.
 * Indexes: tasks_idx (job_id, phase, idx) for pages and dependencies,
 * tasks_busy (partial: queued and running) for what is busy.
 *
 * Pool-thread code; no shared state.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

#define TASK_COLS                                                                                  \
    "id, phase, idx, node_id, service, action, status, attempts, worker, deps, strategy,"          \
    " started_at, ended_at"

int store_task_page(PGconn *conn, const char *job_id, const struct store_task_filter *f,
                    const char *after_phase, long after_idx, long limit, json_t **items,
                    struct drv_err *err)
{
    char idx[24], lim[24];
    snprintf(idx, sizeof(idx), "%ld", after_idx);
    snprintf(lim, sizeof(lim), "%ld", limit);
    const char *p[] = {job_id,
                       after_phase,
                       idx,
                       f ? f->phase : NULL,
                       f ? f->states : NULL,
                       f ? f->node : NULL,
                       f ? f->service : NULL,
                       f ? f->action : NULL,
                       lim};
    return store_query_json(conn,
                            "SELECT " TASK_COLS " FROM tasks"
                            " WHERE job_id = $1::bigint"
                            " AND (job_id, phase, idx) > ($1::bigint, $2, $3::int)"
                            " AND ($4::text IS NULL OR phase = $4)"
                            " AND ($5::text[] IS NULL OR status = ANY($5::text[]))"
                            " AND ($6::text IS NULL OR node_id IS NOT DISTINCT FROM nullif($6, ''))"
                            " AND ($7::text IS NULL OR service IS NOT DISTINCT FROM nullif($7, ''))"
                            " AND ($8::text IS NULL OR action = $8)"
                            " ORDER BY phase, idx LIMIT $9::int",
                            9, p, items, err);
}

int store_task_deps(PGconn *conn, const char *job_id, const char *phase, const char *idx_array,
                    json_t **deps, struct drv_err *err)
{
    *deps = NULL;
    json_t *rows;
    const char *p[] = {job_id, phase, idx_array};
    int rc = store_query_json(conn,
                              "SELECT idx, id, status FROM tasks WHERE job_id = $1::bigint"
                              " AND phase = $2 AND idx = ANY($3::int[])",
                              3, p, &rows, err);
    if (rc)
        return rc;
    json_t *out = json_object();
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r)
    {
        char key[24];
        snprintf(key, sizeof(key), "%" JSON_INTEGER_FORMAT,
                 json_integer_value(json_object_get(r, "idx")));
        json_object_set(out, key, r);
    }
    json_decref(rows);
    *deps = out;
    return 0;
}

int store_task_busy(PGconn *conn, const char *job_id, const char *phase, json_t **busy,
                    struct drv_err *err)
{
    const char *p[] = {job_id, phase};
    return store_query_json(conn,
                            "SELECT id, node_id, service, action, status FROM tasks"
                            " WHERE job_id = $1::bigint AND phase = $2"
                            " AND status IN ('queued', 'running') ORDER BY idx",
                            2, p, busy, err);
}

int store_task_groups(PGconn *conn, const char *job_id, const char *phase, const char *by,
                      const char *contains, long limit, json_t **groups, struct drv_err *err)
{
    char lim[24];
    snprintf(lim, sizeof(lim), "%ld", limit);
    const char *p[] = {job_id, phase, by, contains, lim};
    return store_query_json(
        conn,
        "SELECT key, node, service, action, min(first) AS first, sum(n)::bigint AS total,"
        " jsonb_object_agg(status, n) AS states, count(*) OVER ()::bigint AS groups FROM ("
        "  SELECT CASE WHEN $3 = 'node' THEN coalesce(node_id, '(no node)')"
        "   ELSE coalesce(service, '(machine)') || ' · ' || coalesce(action, '?') END AS key,"
        "   CASE WHEN $3 = 'node' THEN node_id END AS node,"
        "   CASE WHEN $3 <> 'node' THEN service END AS service,"
        "   CASE WHEN $3 <> 'node' THEN action END AS action,"
        "   status, count(*) AS n, min(idx) AS first FROM tasks"
        "  WHERE job_id = $1::bigint AND phase = $2 GROUP BY 1, 2, 3, 4, 5) x"
        " WHERE $4::text IS NULL OR strpos(key, $4) > 0"
        " GROUP BY key, node, service, action"
        " ORDER BY CASE WHEN bool_or(status = 'failed') THEN 0"
        "  WHEN bool_or(status IN ('running', 'queued')) THEN 1"
        "  WHEN bool_or(status IN ('waiting', 'pending')) THEN 2 ELSE 3 END, min(first)"
        " LIMIT $5::int",
        5, p, groups, err);
}
