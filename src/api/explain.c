/*
 * explain: why each task of a job that is neither running nor done waits.
 *
 * Computed from the job as PostgreSQL has it (store_job_get: every task's
 * status, node, service, action, strategy and dependencies as indices into
 * its plan), so any droverd answers, not only the owner. Reasons, first that
 * holds:
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
 * Pure: O(tasks + dependencies).
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

/* Explain the tasks of one phase ("f" or "r"), given as an array of pointers by index. */
static void explain_phase(json_t **by_idx, size_t n, const char *job_status)
{
    bool paused = strcmp(job_status, "paused") == 0;
    bool stopping = strcmp(job_status, "failed") == 0 || strcmp(job_status, "cancelled") == 0 ||
                    strcmp(job_status, "rolling-back") == 0 ||
                    strcmp(job_status, "rolled-back") == 0 ||
                    strcmp(job_status, "needs-operator") == 0;
    /* What each node is busy with, and how many of each service/action run. */
    struct strmap *node_busy = strmap_new(), *running = strmap_new();
    for (size_t o = 0; o < n; o++) {
        json_t *u = by_idx[o];
        if (!u || !busy(s(u, "status")))
            continue;
        const char *node = json_string_value(json_object_get(u, "node_id"));
        if (node && !strmap_get(node_busy, node))
            strmap_put(node_busy, node, u);
        char key[300];
        snprintf(key, sizeof(key), "%s/%s", s(u, "service"), s(u, "action"));
        strmap_put(running, key, (void *)((intptr_t)strmap_get(running, key) + 1));
    }
    for (size_t i = 0; i < n; i++) {
        json_t *t = by_idx[i];
        if (!t)
            continue;
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
                json_int_t di = json_integer_value(d);
                json_t *dep = di >= 0 && (size_t)di < n ? by_idx[di] : NULL;
                if (dep && !done(s(dep, "status"))) {
                    w = why("dependency", "waits for %s (%s)", s(dep, "id"), s(dep, "status"));
                    json_object_set_new(w, "task", json_string(s(dep, "id")));
                    json_object_set_new(w, "status", json_string(s(dep, "status")));
                }
            }
            const char *node = json_string_value(json_object_get(t, "node_id"));
            json_t *u = !w && node ? strmap_get(node_busy, node) : NULL;
            if (u) {
                w = why("node", "node %s is busy with %s", node, s(u, "id"));
                json_object_set_new(w, "task", json_string(s(u, "id")));
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

void api__explain(json_t *job)
{
    const char *status = s(job, "status");
    json_t *tasks = json_object_get(job, "tasks");
    size_t n = json_array_size(tasks);
    json_t **by[2] = {xcalloc(n + 1, sizeof(json_t *)), xcalloc(n + 1, sizeof(json_t *))};
    size_t len[2] = {0, 0}, i;
    json_t *t;
    json_array_foreach(tasks, i, t)
    {
        int k = strcmp(s(t, "phase"), "r") == 0;
        json_int_t idx = json_integer_value(json_object_get(t, "idx"));
        if (idx < 0 || (size_t)idx >= n)
            continue;
        by[k][idx] = t;
        if ((size_t)idx + 1 > len[k])
            len[k] = (size_t)idx + 1;
    }
    /* The rollback's tasks are held by "stopping" only in the forward plan. */
    explain_phase(by[0], len[0], len[1] ? "failed" : status);
    explain_phase(by[1], len[1], strcmp(status, "rolling-back") == 0 ? "running" : status);
    free(by[0]);
    free(by[1]);
}
