/*
 * handlers_jobs: jobs of /v1/jobs (docs/api.md "Jobs"): list, get, plan,
 * and the state changes cancel, pause, resume, retry.
 *
 * Pool-thread code: each handler runs after authentication with the caller
 * in c->who; a state change runs in one transaction with its audit entry.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "handlers.h"
#include "planner.h"
#include "store.h"

/* ---- jobs ------------------------------------------------------------------------------- */

int api__h_job_list(PGconn *conn, struct call *c, struct drv_err *err)
{
    char *cluster = call_query(c, "cluster");
    json_t *items;
    int rc = store_job_list(conn, c->who.tenant_id, call_owner(c), cluster, &items, err);
    free(cluster);
    if (rc)
        return rc;
    c->out = json_pack("{s:o}", "items", items);
    c->status = 200;
    return 0;
}

/* GET /v1/jobs/{id}[?tasks=all|none]: "none" leaves the tasks out (a watcher's poll: O(1) in
   the job's size), and with wait=S and revision=R waits up to S seconds for the summary to
   change (jobwait.c); "all" (the default) streams the tasks after the summary. */
int api__h_job_get(PGconn *conn, struct call *c, struct drv_err *err)
{
    char *tasks = call_query(c, "tasks");
    bool none = tasks && strcmp(tasks, "none") == 0;
    bool bad = tasks && !none && strcmp(tasks, "all") != 0;
    free(tasks);
    if (bad)
        return call_fail(c, 400, "invalid", "tasks", "query parameter \"tasks\": all or none");
    char *wait = call_query(c, "wait"), *end = NULL;
    long wait_s = wait ? strtol(wait, &end, 10) : 0;
    bad = wait && (!*wait || *end || wait_s < 1 || wait_s > 25);
    free(wait);
    if (bad)
        return call_fail(c, 400, "invalid", "wait", "query parameter \"wait\": 1 to 25 seconds");
    if (wait_s && !none)
        return call_fail(c, 400, "invalid", "wait", "\"wait\" needs tasks=none");
    if (!none) /* streamed a page at a time (handlers_tasks.c) */
        return api__h_job_get_full(conn, c, err);
    int rc = store_job_get_summary(conn, c->who.tenant_id, call_owner(c), c->seg[2], &c->out, err);
    if (rc == 0) {
        json_object_del(c->out, "has_plan");
        c->status = 200;
        char *rev = call_query(c, "revision");
        api__job_wait(c, rev, wait_s); /* sets "revision", and the ETag */
        free(rev);
    }
    return rc;
}

int api__h_job_plan(PGconn *conn, struct call *c, struct drv_err *err)
{
    char *format = call_query(c, "format");
    int dot = format && strcmp(format, "dot") == 0;
    int bad = format && !dot && strcmp(format, "json") != 0;
    free(format);
    if (bad)
        return call_fail(c, 400, "invalid", "format", "query parameter \"format\": json or dot");
    json_t *job;
    int rc = store_job_get_summary(conn, c->who.tenant_id, call_owner(c), c->seg[2], &job, err);
    if (rc)
        return rc;
    int has = json_is_true(json_object_get(job, "has_plan"));
    json_decref(job);
    if (!has)
        return call_fail(c, 404, "not-found", NULL, "job \"%s\" has no plan yet", c->seg[2]);
    json_t *row;
    const char *p[] = {c->seg[2]};
    /* The plan is in job_plans since version 9; on the row for jobs an older node started. */
    rc = store_query_row(conn,
                         "SELECT coalesce(p.plan, j.plan) AS plan FROM jobs j"
                         " LEFT JOIN job_plans p ON p.job_id = j.id WHERE j.id = $1::bigint",
                         1, p, &row, err);
    if (rc)
        return rc;
    json_t *plan = json_incref(json_object_get(row, "plan"));
    json_decref(row);
    if (!dot) {
        c->out = plan;
        c->status = 200;
        return 0;
    }
    struct planner_plan *pl;
    rc = planner_plan_from_json(plan, &pl, err);
    json_decref(plan);
    if (rc)
        return rc;
    c->raw = planner_plan_to_dot(pl, NULL);
    c->raw_type = "text/vnd.graphviz";
    planner_plan_free(pl);
    c->status = 200;
    return 0;
}

/* A cursor of attempts?since=: digits, at most 18 of them (a bigint). */
static bool seq_valid(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 18)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)s[i]))
            return false;
    return true;
}

/*
 * GET /v1/jobs/{id}/attempts?since=N[&task=ID][&phase=f|r][&limit=L]: the attempts
 * written or changed after cursor N (0 at the start), in the order they were written
 * (task_attempts.seq, docs/schema.md version 8), at most L (1 to 500, default 100): what a
 * follower of the job's logs has not seen yet. One indexed range read, so a poll costs what
 * is new, not the job's size. The job's status is read first: when it is final and "more"
 * is false, every attempt of the job has been given.
 */
static int attempts_since(PGconn *conn, struct call *c, const char *since, char *task, char *phase,
                          struct drv_err *err)
{
    char *lim = call_query(c, "limit"), *end = NULL;
    long limit = lim ? strtol(lim, &end, 10) : 100;
    bool bad_limit = lim && (!*lim || *end || limit < 1 || limit > 500);
    free(lim);
    int rc = 0;
    if (!seq_valid(since))
        rc = call_fail(c, 400, "invalid", "since",
                       "query parameter \"since\": the cursor of the last reply, or 0");
    else if (bad_limit)
        rc = call_fail(c, 400, "invalid", "limit", "query parameter \"limit\": 1 to 500");
    else if (task && (!*task || strlen(task) > 512))
        rc = call_fail(c, 400, "invalid", "task", "query parameter \"task\": a task id");
    else if (phase && strcmp(phase, "f") != 0 && strcmp(phase, "r") != 0)
        rc = call_fail(c, 400, "invalid", "phase", "query parameter \"phase\": f or r");
    json_t *job = NULL, *items = NULL, *found = NULL;
    if (rc == 0) /* the caller's to see; its status before the attempts (see above) */
        rc = store_job_get_summary(conn, c->who.tenant_id, call_owner(c), c->seg[2], &job, err);
    if (rc == 0 && task) {
        const char *p[] = {c->seg[2], task, phase ? phase : ""};
        rc = store_query_json(conn,
                              "SELECT 1 AS one FROM tasks WHERE job_id = $1::bigint AND id = $2"
                              " AND ($3 = '' OR phase = $3) LIMIT 1",
                              3, p, &found, err);
        if (rc == 0 && json_array_size(found) == 0)
            rc = call_fail(c, 404, "not-found", "task", "job \"%s\" has no task \"%s\"", c->seg[2],
                           task);
    }
    if (rc == 0) {
        char l[24];
        snprintf(l, sizeof(l), "%ld", limit + 1);
        const char *p[] = {c->seg[2], since, task ? task : "", phase ? phase : "", l};
        rc = store_query_json(
            conn,
            "SELECT phase, task_id AS task, attempt, run, worker, status, started_at, ended_at,"
            " message, how, output_tail, seq::text AS seq FROM task_attempts"
            " WHERE job_id = $1::bigint AND seq > $2::bigint AND ($3 = '' OR task_id = $3)"
            " AND ($4 = '' OR phase = $4) ORDER BY task_attempts.seq LIMIT $5::integer",
            5, p, &items, err);
    }
    if (rc == 0) {
        bool more = json_array_size(items) > (size_t)limit;
        if (more)
            json_array_remove(items, json_array_size(items) - 1);
        json_t *last = json_array_get(items, json_array_size(items) - 1);
        const char *cursor = last ? json_string_value(json_object_get(last, "seq")) : since;
        c->out = json_pack("{s:s, s:O, s:s, s:b, s:o}", "job", c->seg[2], "status",
                           json_object_get(job, "status"), "cursor", cursor ? cursor : since,
                           "more", more, "items", items);
        items = NULL;
        c->status = 200;
    }
    json_decref(items);
    json_decref(found);
    json_decref(job);
    return rc;
}

/*
 * GET /v1/jobs/{id}/attempts?task=ID[&phase=f|r]: the recorded attempts of one task
 * (worker, status, times, message, how it ended, the tail of the plugin's output), for a
 * failed task's story. One task at a time, at most 100 attempts: the reply stays small
 * whatever the job's size. With since=N: attempts_since above.
 */
int api__h_job_attempts(PGconn *conn, struct call *c, struct drv_err *err)
{
    char *task = call_query(c, "task"), *phase = call_query(c, "phase");
    char *since = call_query(c, "since");
    int rc = 0;
    if (since) {
        rc = attempts_since(conn, c, since, task, phase, err);
        free(since);
        free(task);
        free(phase);
        return rc;
    }
    if (!task || !*task || strlen(task) > 512)
        rc = call_fail(c, 400, "invalid", "task", "query parameter \"task\": a task id");
    else if (phase && strcmp(phase, "f") != 0 && strcmp(phase, "r") != 0)
        rc = call_fail(c, 400, "invalid", "phase", "query parameter \"phase\": f or r");
    json_t *job = NULL, *items = NULL;
    if (rc == 0) /* the job is the caller's to see (tenant, and owner for a user) */
        rc = store_job_get_summary(conn, c->who.tenant_id, call_owner(c), c->seg[2], &job, err);
    if (rc == 0) {
        const char *p[] = {c->seg[2], phase ? phase : "f", task};
        rc = store_query_json(conn,
                              "SELECT attempt, run, worker, status, started_at, ended_at, message,"
                              " how, output_tail FROM task_attempts WHERE job_id = $1::bigint"
                              " AND phase = $2 AND task_id = $3 ORDER BY attempt, started_at"
                              " LIMIT 100",
                              3, p, &items, err);
    }
    if (rc == 0) {
        c->out = json_pack("{s:s, s:s, s:s, s:o}", "job", c->seg[2], "phase", phase ? phase : "f",
                           "task", task, "items", items);
        c->status = 200;
    }
    json_decref(job);
    free(task);
    free(phase);
    return rc;
}

/*
 * POST /v1/jobs/{id}/{pause,resume,cancel}: the request is recorded for the
 * job's owner, which acts on it (running tasks finish, nothing new starts;
 * cancel then rolls back). 202 with the job as it is now and its "control".
 */
int api__h_job_action(PGconn *conn, struct call *c, struct drv_err *err)
{
    const char *act = c->seg[3];
    if (strcmp(act, "cancel") != 0 && strcmp(act, "pause") != 0 && strcmp(act, "resume") != 0)
        return call_fail(c, 404, "not-found", NULL, "no job action \"%s\"", act);
    int rc = store_begin(conn, err);
    if (rc == 0)
        rc = store_job_control(conn, c->who.tenant_id, call_owner(c), c->seg[2], act, &c->out, err);
    if (rc == 0) {
        char action[32];
        snprintf(action, sizeof(action), "job.%s", act);
        rc = api__audit(conn, c, action, "job", c->seg[2], NULL, err);
    }
    if (rc == 0)
        rc = store_commit(conn, err);
    if (rc == 0) {
        json_object_del(c->out, "has_plan");
        json_object_del(c->out, "task_changes");
        c->status = 202;
        api__control(c, c->seg[2], act);
    }
    return rc;
}
