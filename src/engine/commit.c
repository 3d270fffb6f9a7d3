/*
 * commit: a job's writes. Everything an owner decides is first made in
 * memory (run.c, job.c), then written by this pipeline (this file drives the
 * rounds and makes the final write; commit_pg.c builds a round's PostgreSQL
 * batch, commit_zk.c its ZooKeeper multi-op), one PostgreSQL
 * transaction and one ZooKeeper multi-op in flight per job at a time; what
 * happens meanwhile waits for the next round, so a busy job's writes batch
 * themselves.
 *
 * A round (commit_cb, at the end of a turn of the loop):
 *   1. PostgreSQL (fenced, job_pg.c): the job row's phase, the tasks'
 *      changed rows, the attempts of the run records that ended or were
 *      superseded, the nodes' key-values, the rollback plan's rows.
 *   2. ZooKeeper (fenced by the job's lock): one multi-op of
 *        set state (expected version)  -- the sequencer: every write of the
 *                                         owner bumps it, so after a lost
 *                                         answer its version says whether
 *                                         the multi-op went through
 *        set the nodes map's changed chunks
 *        put the retries, then newly ready tasks
 *        set (or create) chunks that changed -- the task log: 'q' and the
 *                                         attempt travel with the queue item
 *        delete run records whose PostgreSQL row is written
 *      under the byte budget (engine.txn_budget), which is kept whatever
 *      happened at once (10,000 nodes confirmed in one round): what does not
 *      fit waits for the next round, under three rules. A put goes only in a
 *      multi-op that also carries its task's log chunk, and every changed
 *      chunk of the nodes map (the item names the map's revision: a worker
 *      must not read an older map under it). A run record is deleted only
 *      in a multi-op that leaves no log chunk behind (its result must be in
 *      the log before its record goes). The rollback log's chunks are
 *      created when first written; one that does not exist is all waiting.
 *   3. When the job is finishing and nothing is left to write: the final
 *      PostgreSQL write, then the ZooKeeper subtree goes (sweep), then the
 *      lock.
 *
 * The rule that makes a failover lose nothing: a run record is deleted only
 * after its attempt's row is in PostgreSQL, and a queue item is created only
 * in the multi-op that writes its task's 'q'. The task log may run ahead of
 * PostgreSQL (a new owner writes the rows again from the run records still
 * there), never behind ZooKeeper's queues.
 *
 * A job's first dispatch (a multi-op that puts while PostgreSQL records no task of the
 * job begun, ecommit.pg_begun) is parked until the round with its tasks' queued rows has
 * committed (commit_zk.c), so that a ZooKeeper state lost after a dispatch always meets
 * tasks_begun > 0 at the next load (job.c).
 *
 * A row held by another transaction a moment (a user's pause) is not a failure: batch.c
 * sends the part again shortly and the round stays in flight (job_pg.h engine__pg_held).
 *
 * PostgreSQL unreachable (a write failed, not fenced out): the job's rounds
 * stop, ZooKeeper's included, so nothing more is dispatched while the system
 * of record cannot follow; the PostgreSQL write alone is tried again with
 * backoff (100 ms doubling to 5 s), and the first that succeeds starts the
 * rounds again where they were. Workers finish what they hold meanwhile:
 * their run records wait in ZooKeeper.
 *
 * Failures: a lost lock or a version that moved means another owner: the job
 * is lost (job.c). An unknown outcome (connection loss) is settled by
 * reading the state's version: one more than expected, it applied; the same,
 * the same multi-op is sent again (keyed puts cannot duplicate: the version
 * check comes first). Anything else waits and tries again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "batch.h"
#include "commit.h"
#include "engine_int.h"
#include "job_pg.h"
#include "log.h"
#include "nodes.h"
#include "planner.h"
#include "store.h"
#include "strmap.h"
#include "xalloc.h"

#define MOD "engine"
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000

/* ---- the pipeline, and what other files mark --------------------------------------------- */

void engine__commit_new(struct ejob *j)
{
    j->commit = xcalloc(1, sizeof(*j->commit));
    j->commit->pg_nodes = json_object();
}

void engine__commit_free(struct ejob *j)
{
    struct ecommit *c = j->commit;
    if (!c)
        return;
    engine__commit_zk_parked_free(j);
    json_decref(c->pg_nodes);
    free(c->retries);
    if (c->kick_ev)
        event_free(c->kick_ev);
    if (c->retry_ev)
        event_free(c->retry_ev);
    if (c->pg_retry_ev)
        event_free(c->pg_retry_ev);
    free(c);
    j->commit = NULL;
}

void engine__commit_cancel(struct ejob *j)
{
    struct ecommit *c = j->commit;
    if (c->retry_ev)
        event_del(c->retry_ev);
    if (c->pg_retry_ev)
        event_del(c->pg_retry_ev);
}

static void commit_cb(evutil_socket_t fd, short what, void *arg);

void engine__kick(struct ejob *j)
{
    if (!engine__job_alive(j))
        return;
    struct ecommit *c = j->commit;
    if (!c->kick_ev)
        c->kick_ev = event_new(j->e->base, -1, 0, commit_cb, j);
    event_active(c->kick_ev, EV_TIMEOUT, 0);
}

bool engine__commit_idle(const struct ejob *j)
{
    const struct ecommit *c = j->commit;
    return !c->zk_busy && !c->pg_busy && c->held == 0;
}

void engine__commit_hold(struct ejob *j)
{
    j->commit->held++;
}

void engine__commit_unhold(struct ejob *j)
{
    j->commit->held--;
}

/* What engine__commit_pg_flush (commit_pg.c) takes, but the run records' rows. */
static bool pg_marked(const struct ejob *j)
{
    const struct ecommit *c = j->commit;
    return c->pg_job || c->pg_rb || json_object_size(c->pg_nodes) || j->fwd.n_pg || j->rb.n_pg;
}

bool engine__commit_pg_owed(const struct ejob *j)
{
    const struct ecommit *c = j->commit;
    return j->queue &&
           (c->pg_job || (c->pg_rb && j->rb.plan) || json_object_size(c->pg_nodes) || j->fwd.n_pg ||
            j->rb.n_pg) &&
           !c->pg_down;
}

void engine__commit_job_row(struct ejob *j)
{
    j->commit->pg_job = true;
}

void engine__commit_node(struct ejob *j, const char *node, json_t *props)
{
    json_object_set(j->commit->pg_nodes, node, props);
}

void engine__commit_rollback_rows(struct ejob *j)
{
    j->commit->pg_rb = true;
}

void engine__commit_retry(struct ejob *j, uint32_t idx)
{
    struct ecommit *c = j->commit;
    XGROW(c->retries, c->cap_retries, c->n_retries + 1);
    c->retries[c->n_retries++] = idx;
}

void engine__commit_retries_withdraw(struct ejob *j)
{
    struct ecommit *c = j->commit;
    struct eplan *p = j->cur;
    size_t n = c->n_retries;
    c->n_retries = 0;
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        uint32_t idx = c->retries[i];
        if (!p || idx >= p->n || p->recs[idx].state != ENGINE_TS_QUEUED)
            continue; /* superseded */
        struct engine_task_policy pol = {j->e->max_failures, false};
        engine_task_step(&p->recs[idx], ENGINE_TEV_WITHDRAWN, &pol);
        engine__task_touch(p, idx);
        struct drv_err err;
        planner_exec_requeue(p->x, idx, &err);
        p->in_flight--;
        any = true;
        log_info(MOD, "event=task-withdrawn job=%s task=%s retry=1", j->id, p->plan->tasks[idx].id);
    }
    if (any)
        engine__job_event(j, ENGINE_EV_PROGRESS);
}

void engine__commit_finish(struct ejob *j)
{
    j->commit->finishing = true;
    engine__kick(j); /* flush, then the final write */
}

bool engine__commit_finishing(const struct ejob *j)
{
    return j->commit->finishing;
}

void engine__commit_backoff(struct ejob *j, struct event **ev,
                            void (*cb)(evutil_socket_t, short, void *))
{
    struct ecommit *c = j->commit;
    c->backoff_ms = c->backoff_ms ? c->backoff_ms * 2 : BACKOFF_MIN_MS;
    if (c->backoff_ms > BACKOFF_MAX_MS)
        c->backoff_ms = BACKOFF_MAX_MS;
    /* Jitter, so that many jobs of one node do not retry in step. */
    int ms = c->backoff_ms / 2 + rand() % (c->backoff_ms / 2 + 1);
    if (!*ev)
        *ev = evtimer_new(j->e->base, cb, j);
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    evtimer_add(*ev, &tv);
}

void engine__commit_retry_later(struct ejob *j)
{
    engine__commit_backoff(j, &j->commit->retry_ev, commit_cb);
}

/* ---- the end ------------------------------------------------------------------------------------
 */

static bool nothing_to_write(struct ejob *j)
{
    if (pg_marked(j))
        return false;
    size_t pos = 0;
    void *v;
    while (strmap_next(j->runs, &pos, NULL, &v)) {
        struct erun *run = v;
        if (!run->recorded && run->data && (run->ended || engine__run_superseded(j, run)))
            return false;
    }
    return true;
}

/* The final write's PostgreSQL part (job_pg.h): status, the cluster's new state, history. */
static struct engine__pg_final *final_part_new(struct ejob *j)
{
    struct engine__pg_final *f = xcalloc(1, sizeof(*f));
    f->j = j;
    snprintf(f->id, sizeof(f->id), "%s", j->id);
    snprintf(f->tenant_id, sizeof(f->tenant_id), "%s", j->tenant_id);
    snprintf(f->cluster_id, sizeof(f->cluster_id), "%s", j->cluster_id);
    snprintf(f->node, sizeof(f->node), "%s", j->e->node_id);
    f->token = j->token;
    f->zk = j->zk;
    f->status = xstrdup(engine_phase_status(j->st.phase, j->st.cancel));
    f->phase = xstrdup(engine_phase_name(j->st.phase));
    f->error = xstrdup(j->st.error);
    f->op = xstrdup(j->op);
    f->target =
        j->po.target_layout ? json_dumps(j->po.target_layout, JSON_COMPACT) : xstrdup("null");
    json_t *svcs =
        json_object_get(json_object_get(json_object_get(j->job, "request"), "target"), "services");
    f->services = json_is_array(svcs) ? json_dumps(svcs, JSON_COMPACT) : NULL;
    json_t *config = strcmp(j->op, "configure") == 0 ? engine__cluster_config(j) : NULL;
    f->config = config ? json_dumps(config, JSON_COMPACT) : NULL;
    json_t *tv = json_object_get(json_object_get(json_object_get(j->job, "request"), "target"),
                                 "template_version");
    f->template_version = strcmp(j->op, "upgrade") == 0 && json_is_integer(tv)
                              ? xasprintf("%" JSON_INTEGER_FORMAT, json_integer_value(tv))
                              : NULL;
    f->fresh_create = strcmp(j->op, "create") == 0;
    json_t *subset = json_object_get(json_object_get(j->job, "request"), "services");
    if (strcmp(j->op, "stop") == 0 && json_array_size(subset) == 0)
        f->run_status = "stopped";
    else if (strcmp(j->op, "start") == 0 || strcmp(j->op, "restart") == 0)
        f->run_status = "active";
    json_t *d = json_pack("{s:s, s:s, s:I, s:I}", "status", f->status, "error", f->error, "tasks",
                          (json_int_t)j->fwd.n, "rollback_tasks", (json_int_t)j->rb.n);
    f->detail = json_dumps(d, JSON_COMPACT);
    json_decref(d);
    return f;
}

static void final_done(int rc, const struct drv_err *err, void *arg)
{
    struct engine__pg_final *f = arg;
    struct ejob *j = f->j;
    j->commit->pg_busy = false;
    if (engine__job_alive(j)) {
        if (rc == 0) {
            log_info(MOD, "event=job-finished job=%s status=%s node=%s", j->id,
                     engine_phase_status(j->st.phase, j->st.cancel), j->e->node_id);
            engine__job_wind_up(j, false);
        } else if (rc == DRV_ECONFLICT) {
            char why[320];
            snprintf(why, sizeof(why), "at its final write: %s", err->msg);
            engine__job_lost(j, why);
        } else {
            log_warn(MOD, "event=job-final-write-failed job=%s error=\"%s\"", j->id, err->msg);
            j->commit->final_sent = false;
            engine__commit_retry_later(j);
        }
    }
    engine__pg_final_free(f);
    engine__job_unref(j);
}

static void commit_cb(evutil_socket_t fd, short what, void *arg)
{
    struct ejob *j = arg;
    if (!engine__job_alive(j) || j->own == EJ_CONTENDING || j->own == EJ_LOADING)
        return;
    struct ecommit *c = j->commit;
    if (j->own == EJ_FINISHING && c->final_sent)
        return;
    if (c->pg_down) { /* pg_retry_cb goes on */
        engine__job_idle(j);
        return;
    }
    if (!c->pg_busy)
        engine__commit_pg_flush(j);
    if (!c->zk_busy && j->own != EJ_FINISHING)
        engine__commit_zk_flush(j);
    if (c->finishing && !c->final_sent && engine__commit_idle(j) && nothing_to_write(j)) {
        if (j->e->fault_final) {
            log_warn(MOD, "event=fault-injected fault=crash-before-final-write job=%s", j->id);
            _exit(70);
        }
        c->final_sent = true;
        c->pg_busy = true;
        struct engine__pg_final *f = final_part_new(j);
        engine__job_ref(j);
        /* With the other jobs' parts of this turn (batch.c): one transaction for all. */
        engine__batch_pg_part(j->e, ENGINE__PG_FINAL, f, final_done);
    }
    engine__job_idle(j);
}
