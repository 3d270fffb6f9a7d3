/*
 * run: executing a plan: the in-memory task log, the run records workers
 * write, and the queue items the owner puts.
 *
 * Recipe (one attempt of one task):
 *   1. commit.c dispatches it: the task log says 'q' with attempt n, and the
 *      queue item "<job>.<phase><idx>.<n>" is created, in one fenced multi-op.
 *   2. A worker claims the item and creates jobs/<id>/runs/<phase><idx>.<n>.<worker>.<nonce>
 *      under its claim before it starts the plugin; the owner sees the name
 *      appear (a children watcher), reads it with a data watch: the task is
 *      running, on that worker.
 *   3. The worker sets the record's outcome in the multi-op that completes
 *      the item; the data watch fires; the owner reads the outcome and steps
 *      the task (fsm.c): succeeded (its result key-values merged into its
 *      node's), retried (a new attempt, preferably on another worker), or
 *      given up (the job hears GAVE_UP).
 *   4. The attempt's row goes to PostgreSQL; only then is the run record
 *      deleted, in a later fenced multi-op (commit.c). So an owner that dies
 *      in between leaves the record for the next owner, which processes it
 *      again: key-values merged again (the same), the row written again
 *      (an upsert), nothing lost.
 *
 * Stale records: an outcome for an attempt that is not the task's current
 * one (a retry was already dispatched, or a worker died and the queue gave
 * the item to another: two records of one attempt) is written to
 * PostgreSQL as what it was, and deleted; it never steps the task.
 *
 * Cost per task: one children-list event (shared by all the records created
 * at once), two reads of its record, and its share of the owner's multi-ops.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assign.h"
#include "clock.h"
#include "commit.h"
#include "coord.h"
#include "engine_int.h"
#include "facts.h"
#include "log.h"
#include "nodes.h"
#include "planner.h"
#include "strmap.h"
#include "taskmsg.h"
#include "xalloc.h"
#include "zkpath.h"

#define MOD "engine"

/* ---- outcomes ----------------------------------------------------------------------------- */

/* The tasks a provider plugin runs: their results are the machine's facts. */
static bool is_provider_action(enum planner_action a)
{
    return a == PLANNER_ACT_CREATE || a == PLANNER_ACT_CONFIRM || a == PLANNER_ACT_DELETE;
}

/*
 * Merge a task's result into its node's key-values (null deletes a key), for PostgreSQL
 * too. A provider task's result (create, confirm, delete: from_provider) writes the
 * machine's facts; any other task's is the tenant's and may not name a reserved key
 * (src/common/facts.h): such a key is refused, logged, and changes nothing (the worker
 * fails such a task already, so only a record it did not write gets here).
 */
static void merge_props(struct ejob *j, const struct planner_task *t, bool from_provider,
                        json_t *result)
{
    size_t refused;
    char first[64];
    json_t *props = engine__nodes_merge(j, t->node, result, from_provider, &refused, first);
    if (refused)
        log_warn(MOD,
                 "event=result-key-refused job=%s task=%s node=%s keys=%zu first=\"%s\" "
                 "why=\"reserved for the provider's facts or the task's config\"",
                 j->id, t->id, t->node, refused, first);
    if (props)
        engine__commit_node(j, t->node, props);
}

static struct eplan *plan_of(struct ejob *j, char phase)
{
    return phase == 'f' ? &j->fwd : phase == 'r' && j->rb.n ? &j->rb : NULL;
}

/* Step task idx of p by ev and carry the actions out. */
static void task_event(struct ejob *j, struct eplan *p, uint32_t idx, enum engine_task_event ev,
                       const struct taskmsg_run *r)
{
    const struct planner_task *t = &p->plan->tasks[idx];
    struct engine_task_policy pol = {j->e->max_failures, t->action == PLANNER_ACT_CREATE};
    enum engine_task_state before = (enum engine_task_state)p->recs[idx].state;
    struct engine_task_out o = engine_task_step(&p->recs[idx], ev, &pol);
    if (o.state != before || o.actions)
        engine__task_touch(p, idx);
    struct drv_err err;
    if (o.actions & ENGINE_TACT_EXEC_OK) {
        planner_exec_done(p->x, idx, 1, &err);
        p->in_flight--;
        p->done++;
        j->e->stats.results++;
        if (r)
            merge_props(j, t, is_provider_action(t->action), r->result);
        if (t->action == PLANNER_ACT_CONFIRM && p->phase == 'f' && t->node)
            engine__nodes_touch(j, t->node); /* confirmed: missing data is final now */
    }
    if (o.actions & ENGINE_TACT_EXEC_FAIL) {
        planner_exec_done(p->x, idx, 0, &err);
        p->in_flight--;
        j->e->stats.results++;
    }
    if (o.actions & ENGINE_TACT_EXEC_REQUEUE) {
        planner_exec_requeue(p->x, idx, &err);
        p->in_flight--;
    }
    if (r && r->ended && !r->ok && t->action == PLANNER_ACT_CREATE)
        merge_props(j, t, true, r->result); /* what a failed create made: its delete needs it */
    if (o.actions & ENGINE_TACT_PUT) {
        /* A retry: put again with the new attempt (commit.c), avoiding the worker that failed. */
        if (!(o.actions & ENGINE_TACT_AVOID_WORKER) || !r) {
            free(p->worker[idx]);
            p->worker[idx] = NULL;
        }
        j->e->stats.results++;
        log_info(MOD,
                 "event=task-retry job=%s task=%s attempt=%u failures=%u held=%d reason=\"%s\"",
                 j->id, t->id, p->recs[idx].attempt, p->recs[idx].failures,
                 !engine_phase_dispatches(j->st.phase), r ? r->message : "");
        if (engine_phase_dispatches(j->st.phase)) {
            engine__commit_retry(j, idx);
        } else {
            /* Paused or draining (fsm J1): the retry is a dispatch like any other, so it
             * is taken back at once, as a queued item would be: pending again, dispatched
             * by the planner after a resume (with cleanup when it is a create). */
            engine_task_step(&p->recs[idx], ENGINE_TEV_WITHDRAWN, &pol);
            planner_exec_requeue(p->x, idx, &err);
            p->in_flight--;
            o.actions |= ENGINE_TACT_EXEC_REQUEUE; /* the job looks again, below */
        }
    }
    if (o.actions & ENGINE_TACT_GAVE_UP) {
        p->gave_up = true;
        /* The log line carries this task's own error; the job's error stays its first one. */
        char own[sizeof(j->st.error)];
        snprintf(own, sizeof(own), "task %s failed after %u attempts: %s", t->id,
                 p->recs[idx].failures, r ? r->message : "too many attempts");
        if (!*j->st.error)
            snprintf(j->st.error, sizeof(j->st.error), "%s", own);
        log_warn(MOD, "event=task-gave-up job=%s task=%s error=\"%s\"", j->id, t->id, own);
        engine__job_event(j, ENGINE_EV_GAVE_UP);
    }
    if (o.actions & (ENGINE_TACT_EXEC_OK | ENGINE_TACT_EXEC_FAIL | ENGINE_TACT_EXEC_REQUEUE))
        engine__job_event(j, ENGINE_EV_PROGRESS);
}

/* A run record's content is in: step its task when it is the current attempt. */
static void run_seen(struct ejob *j, struct erun *run)
{
    struct taskmsg_run r;
    struct drv_err err;
    if (taskmsg_run_of(run->data, &r, &err) != 0) {
        log_warn(MOD, "event=bad-run-record job=%s run=%s error=\"%s\"", j->id, run->name, err.msg);
        run->ended = true; /* nothing to wait for: record it as it is and delete it */
        return;
    }
    struct eplan *p = plan_of(j, run->phase);
    bool current = p == j->cur && run->idx < p->n && p->recs[run->idx].attempt == run->attempt &&
                   (p->recs[run->idx].state == ENGINE_TS_QUEUED ||
                    p->recs[run->idx].state == ENGINE_TS_RUNNING);
    if (!run->started) {
        run->started = true;
        if (current) {
            free(p->worker[run->idx]);
            p->worker[run->idx] = xstrdup(r.worker);
            p->t_start[run->idx] = r.start_ms;
            engine__observe_start(j, r.item, r.start_ms);
            task_event(j, p, run->idx, ENGINE_TEV_STARTED, &r);
        }
    }
    if (r.ended && !run->ended) {
        run->ended = true;
        engine__assign_outcome(j, run->phase, run->idx, run->attempt); /* its slot is idle */
        if (current) {
            p->t_end[run->idx] = r.end_ms;
            engine__observe_end(j, p->t_start[run->idx] ? p->t_start[run->idx] : r.start_ms,
                                r.end_ms);
            /* A slot's task that never ran ("returned": its worker stopped first) goes back
               to pending; one cut short with its slot ("lost") again without counting a
               failure (fsm T4). */
            const char *status = json_string_value(json_object_get(r.root, "status"));
            enum engine_task_event ev = r.ok ? ENGINE_TEV_OK : ENGINE_TEV_FAIL;
            if (!r.ok && status && strcmp(status, "lost") == 0)
                ev = ENGINE_TEV_LOST;
            else if (!r.ok && status && strcmp(status, "returned") == 0)
                ev = ENGINE_TEV_WITHDRAWN;
            task_event(j, p, run->idx, ev, ev == ENGINE_TEV_WITHDRAWN ? NULL : &r);
        }
    }
    taskmsg_run_clear(&r);
}

/* For the reconciliation on resume (jobresume.c) and the withdrawal (withdraw.c). */
void engine__result_merge(struct ejob *j, const struct planner_task *t, json_t *result)
{
    if (t->node)
        merge_props(j, t, is_provider_action(t->action), result);
}

void engine__task_event(struct ejob *j, struct eplan *p, uint32_t idx, enum engine_task_event ev)
{
    task_event(j, p, idx, ev, NULL);
}

static void read_run(struct ejob *j, struct erun *run);

static void on_run_event(enum coord_event ev, const char *path, void *arg)
{
    struct erun *run = arg;
    struct ejob *j = run->j;
    run->w = NULL;
    if (!engine__job_alive(j) || j->own == EJ_HANDING_OVER) {
        engine__job_unref(j);
        return;
    }
    if (ev != COORD_EV_DELETED)
        read_run(j, run);
    engine__job_unref(j);
}

static void on_run_data(int rc, const char *data, size_t len, const struct coord_stat *st,
                        void *arg)
{
    struct erun *run = arg;
    struct ejob *j = run->j;
    run->reading = false;
    if (rc == DRV_ENOENT && run->w) {
        /* Gone (deleted by us, or the job ended): no watch to wait for. Any other error (the
           connection dropped while the read was in flight) keeps the watch: it hears
           COORD_EV_SESSION right after this, and on_run_event reads again. Cancelling it
           there lost the record for good: its outcome was never read, the job waited. */
        coord_watch_cancel(run->w);
        run->w = NULL;
        engine__job_unref(j);
    }
    if (engine__job_alive(j) && j->own != EJ_HANDING_OVER && rc == 0) {
        json_error_t je;
        json_t *d = json_loadb(data, len, 0, &je);
        if (d) {
            json_decref(run->data);
            run->data = d;
            run_seen(j, run);
        }
        if (run->ended && run->w) {
            coord_watch_cancel(run->w);
            run->w = NULL;
            engine__job_unref(j); /* the watch's reference */
        }
        engine__kick(j);
    }
    engine__job_unref(j);
}

static void read_run(struct ejob *j, struct erun *run)
{
    if (run->reading || run->ended)
        return;
    run->reading = true;
    engine__job_ref(j); /* the read's */
    engine__job_ref(j); /* the watch's */
    run->w = coord_get_w(j->e->zk, run->path, on_run_data, on_run_event, run);
}

/* A worker's record of an attempt the owner traced as lost (assign.c lost_row: its slot's
   session ended; the worker, only cut off, wrote its record alone later): the record takes
   the trace's PostgreSQL row, and the trace writes none of its own (or none again), so the
   attempt has one row. The trace's row, when written, is written first (one PostgreSQL
   write of a job in flight at a time): the record's upsert follows it. */
static void took_trace(struct ejob *j, struct erun *run)
{
    size_t pos = 0;
    void *v;
    while (strmap_next(j->runs, &pos, NULL, &v)) {
        struct erun *t = v;
        if (!t->trace || !taskmsg_run_same_delivery(t->name, run->name))
            continue;
        free(run->row);
        run->row = xstrdup(t->name);
        t->recorded = true; /* its row is the record's now */
        return;
    }
}

static void on_runs(int rc, char *const *names, size_t n, const struct coord_stat *st, void *arg)
{
    struct ejob *j = arg;
    if (!engine__job_alive(j) || j->own == EJ_HANDING_OVER || rc != 0)
        return;
    struct strmap *listed = strmap_new();
    for (size_t i = 0; i < n; i++) {
        strmap_put(listed, names[i], (void *)1);
        if (strmap_get(j->runs, names[i]))
            continue;
        struct erun *run = xcalloc(1, sizeof(*run));
        run->j = j;
        run->name = xstrdup(names[i]);
        run->path = zkpath_job_run(NULL, 0, j->id, names[i]);
        if (taskmsg_run_name_parse(names[i], &run->phase, &run->idx, &run->attempt) != 0) {
            log_warn(MOD, "event=bad-run-name job=%s run=%s", j->id, names[i]);
            run->ended = true;
            run->data = json_object();
        }
        took_trace(j, run);
        strmap_put(j->runs, names[i], run);
        read_run(j, run);
    }
    /* Records gone from the listing were deleted by our own multi-ops: forget them. */
    size_t pos = 0;
    const char *name;
    void *v;
    while (strmap_next(j->runs, &pos, &name, &v)) {
        struct erun *run = v;
        if (!strmap_get(listed, name) && run->deleted && run->recorded && !run->reading &&
            !run->w) {
            strmap_del(j->runs, name);
            free(run->name);
            free(run->path);
            free(run->row);
            json_decref(run->data);
            free(run);
        }
    }
    strmap_free(listed);
    engine__kick(j);
}

void engine__runs_watch(struct ejob *j)
{
    char path[256];
    zkpath_job_runs(path, sizeof(path), j->id);
    j->runs_w = coord_watch_children(j->e->zk, path, on_runs, j);
    engine__control_watch(j);
}
