/*
 * explain: why each task of a job that is neither running nor done waits.
 *
 * Computed from the job as PostgreSQL has it, so any droverd answers, not
 * only the owner. Two forms of input:
 *
 *   - a page of tasks (api__explain_tasks): the tasks to explain, the few
 *     rows they need besides (their dependencies' ids and statuses, by index)
 *     and the phase's queued and running tasks (bounded by the in-flight
 *     limit): O(page + busy), whatever the job's size. The paged task list
 *     and the streamed full read use it (handlers_tasks.c);
 *   - every task of a job (api__explain), which builds the same inputs.
 *
 * Reasons, first that holds:
 *
 *   paused       the job is paused: nothing new starts
 *   stopping     the job is failing or being cancelled: it will not run
 *   dependency   "task": the first dependency not done, and its status
 *   node         "task": the task its node is busy with (one task per node)
 *   strategy     its service's action runs one by one (or N at once) and
 *                that many are running
 *   queued       it is in its queue, waiting for a worker ("ahead": items
 *                before it, when the API could read the queue)
 *   ready        nothing in the plan holds it: the owner dispatches it next
 *                (or the job's in-flight limit, engine.max_in_flight, does)
 *
 * Pure: O(tasks + dependencies + busy tasks).
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "strmap.h"
#include "xalloc.h"

static bool done(const char *st)
{
    return st && (strcmp(st, "succeeded") == 0 || strcmp(st, "skipped") == 0);
}

static bool busy(const char *st)
{
    return st && (strcmp(st, "queued") == 0 || strcmp(st, "running") == 0);
}

static const char *s(const json_t *o, const char *k)
{
    const char *v = json_string_value(json_object_get(o, k));
    return v ? v : "";
}

static json_t *why(const char *reason, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static json_t *why(const char *reason, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *text = xvasprintf(fmt, ap);
    va_end(ap);
    json_t *w = json_pack("{s:s, s:s}", "reason", reason, "text", text);
    free(text);
    return w;
}

static json_t *dep_of(const json_t *deps, json_int_t di)
{
    char key[24];
    snprintf(key, sizeof(key), "%" JSON_INTEGER_FORMAT, di);
    return json_object_get(deps, key);
}

void api__explain_tasks(json_t *tasks, const char *job_status, const json_t *deps,
                        const json_t *busy_tasks)
{
    bool paused = strcmp(job_status, "paused") == 0;
    bool stopping = strcmp(job_status, "failed") == 0 || strcmp(job_status, "cancelled") == 0 ||
                    strcmp(job_status, "rolling-back") == 0 ||
                    strcmp(job_status, "rolled-back") == 0 ||
                    strcmp(job_status, "needs-operator") == 0;
    /* What each node is busy with, and how many of each service/action run. */
    struct strmap *node_busy = strmap_new(), *running = strmap_new();
    size_t o;
    json_t *u;
    json_array_foreach(busy_tasks, o, u)
    {
        if (!busy(s(u, "status")))
            continue;
        const char *node = json_string_value(json_object_get(u, "node_id"));
        if (node && !strmap_get(node_busy, node))
            strmap_put(node_busy, node, u);
        char key[300];
        snprintf(key, sizeof(key), "%s/%s", s(u, "service"), s(u, "action"));
        strmap_put(running, key, (void *)((intptr_t)strmap_get(running, key) + 1));
    }
    size_t i;
    json_t *t;
    json_array_foreach(tasks, i, t)
    {
        const char *st = s(t, "status");
        json_t *w = NULL;
        if (strcmp(st, "queued") == 0) {
            w = why("queued", "in its queue, waiting for a worker");
        } else if (strcmp(st, "waiting") == 0 || strcmp(st, "pending") == 0) {
            if (paused)
                w = why("paused", "the job is paused: nothing new starts");
            else if (stopping)
                w = why("stopping", "the job is %s: this task will not run", job_status);
            size_t k;
            json_t *d;
            json_array_foreach(json_object_get(t, "deps"), k, d)
            {
                if (w)
                    break;
                const json_t *dep = dep_of(deps, json_integer_value(d));
                if (dep && !done(s(dep, "status"))) {
                    w = why("dependency", "waits for %s (%s)", s(dep, "id"), s(dep, "status"));
                    json_object_set_new(w, "task", json_string(s(dep, "id")));
                    json_object_set_new(w, "status", json_string(s(dep, "status")));
                }
            }
            const char *node = json_string_value(json_object_get(t, "node_id"));
            json_t *b = !w && node ? strmap_get(node_busy, node) : NULL;
            if (b) {
                w = why("node", "node %s is busy with %s", node, s(b, "id"));
                json_object_set_new(w, "task", json_string(s(b, "id")));
            }
            const char *strat = json_string_value(json_object_get(t, "strategy"));
            if (!w && strat) {
                unsigned limit = strcmp(strat, "one-by-one") == 0 ? 1 : 0;
                if (strncmp(strat, "parallel:", 9) == 0)
                    limit = (unsigned)atoi(strat + 9);
                char key[300];
                snprintf(key, sizeof(key), "%s/%s", s(t, "service"), s(t, "action"));
                unsigned nrun = (unsigned)(intptr_t)strmap_get(running, key);
                if (limit && nrun >= limit)
                    w = why("strategy", "%s/%s runs %s: %u running", s(t, "service"),
                            s(t, "action"), strat, nrun);
            }
            if (!w)
                w = why("ready", "nothing in the plan holds it: the owner dispatches it next");
        }
        if (w)
            json_object_set_new(t, "why", w);
    }
    strmap_free(node_busy);
    strmap_free(running);
}

const char *api__explain_status(const char *job_status, const char *phase, bool has_rollback)
{
    if (strcmp(phase, "r") == 0)
        return strcmp(job_status, "rolling-back") == 0 ? "running" : job_status;
    /* The rollback's tasks are held by "stopping" only in the forward plan. */
    return has_rollback ? "failed" : job_status;
}

void api__explain(json_t *job)
{
    const char *status = s(job, "status");
    json_t *tasks = json_object_get(job, "tasks");
    /* Per phase: the tasks, every one of them by index, the busy ones. */
    json_t *list[2] = {json_array(), json_array()}, *deps[2] = {json_object(), json_object()},
           *busy_l[2] = {json_array(), json_array()};
    size_t i;
    json_t *t;
    json_array_foreach(tasks, i, t)
    {
        int k = strcmp(s(t, "phase"), "r") == 0;
        json_int_t idx = json_integer_value(json_object_get(t, "idx"));
        char key[24];
        snprintf(key, sizeof(key), "%" JSON_INTEGER_FORMAT, idx);
        json_object_set(deps[k], key, t);
        json_array_append(list[k], t);
        if (busy(s(t, "status")))
            json_array_append(busy_l[k], t);
    }
    bool has_rb = json_array_size(list[1]) > 0;
    for (int k = 0; k < 2; k++) {
        api__explain_tasks(list[k], api__explain_status(status, k ? "r" : "f", has_rb), deps[k],
                           busy_l[k]);
        json_decref(list[k]);
        json_decref(deps[k]);
        json_decref(busy_l[k]);
    }
}
