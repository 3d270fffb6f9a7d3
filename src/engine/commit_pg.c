/*
 * commit_pg: a round's PostgreSQL batch (commit.c's note has the rounds, step 1):
 * the job row's phase, the tasks' changed rows, the attempts of the run records
 * that ended or were superseded, the nodes' key-values and the rollback plan's
 * rows, gathered from the job's dirty marks into a struct pgb and handed to
 * batch.c, which writes many jobs' batches in one transaction (job_pg.c, pool
 * threads). The outcome comes back on the loop thread: written, the run records
 * count as recorded; failed, everything is marked dirty again, and the write
 * alone is tried again with backoff ("PostgreSQL unreachable"); fenced out, the
 * job is lost. Loop thread only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "batch.h"
#include "commit.h"
#include "engine_int.h"
#include "job_pg.h"
#include "log.h"
#include "planner.h"
#include "strbuf.h"
#include "strmap.h"
#include "xalloc.h"

#define MOD "engine"

/* After a failed PostgreSQL write: that write alone, again (see "PostgreSQL unreachable"). */
static void pg_retry_cb(evutil_socket_t fd, short what, void *arg)
{
    struct ejob *j = arg;
    if (!engine__job_alive(j) || j->commit->pg_busy)
        return;
    if (!engine__commit_pg_flush(j)) { /* nothing left to write: go on */
        j->commit->pg_down = false;
        engine__kick(j);
    }
}

static void pg_retry_later(struct ejob *j)
{
    engine__commit_backoff(j, &j->commit->pg_retry_ev, pg_retry_cb);
}

/* ---- PostgreSQL --------------------------------------------------------------------------- */

struct pgb {
    struct ejob *j;
    struct engine__pg_batch *b;
    struct erun **runs;
    size_t n_runs;
    json_t *nodes; /* what was taken from pg_nodes, to put back on failure */
    bool job, rb;
    struct {
        struct eplan *p;
        uint32_t idx;
    } * tasks;
    size_t n_tasks;
    bool begun; /* a task row past waiting (what tasks_begun counts) */
};

/* Each row names its job ("j", which the job's own statements ignore): rows of several jobs'
 * rounds merge into one statement by concatenation (job_pg.c, merge_rounds). */
static void task_row(struct strbuf *b, const char *job, const struct eplan *p, uint32_t i,
                     bool first)
{
    const struct engine_task_rec *r = &p->recs[i];
    strbuf_addf(
        b, "%s{\"j\":%s,\"p\":\"%c\",\"i\":%u,\"st\":\"%s\",\"at\":%u,\"w\":", first ? "" : ",",
        job, p->phase, i, engine_task_state_name((enum engine_task_state)r->state), r->attempt);
    engine__pg_jstr(b, p->worker[i]);
    if (p->t_start[i])
        strbuf_addf(b, ",\"s\":%lld", (long long)p->t_start[i]);
    if (p->t_end[i] && (r->state == ENGINE_TS_SUCCEEDED || r->state == ENGINE_TS_FAILED))
        strbuf_addf(b, ",\"e\":%lld", (long long)p->t_end[i]);
    strbuf_addch(b, '}');
}

static void attempt_row(struct strbuf *b, const struct ejob *j, const struct erun *run, bool first)
{
    const struct eplan *p = run->phase == 'f' ? &j->fwd : &j->rb;
    const char *task = p->plan && run->idx < p->n ? p->plan->tasks[run->idx].id : "?";
    json_t *d = run->data;
    const char *status = json_string_value(json_object_get(d, "status"));
    /* A slot's task cut short with its worker's slot says "lost", one never started
       "returned" (assign.c); no status: its worker died first. */
    const char *st = !status                           ? "lost"
                     : strcmp(status, "ok") == 0       ? "succeeded"
                     : strcmp(status, "lost") == 0     ? "lost"
                     : strcmp(status, "returned") == 0 ? "returned"
                                                       : "failed";
    strbuf_addf(b, "%s{\"j\":%s,\"p\":\"%c\",\"t\":", first ? "" : ",", j->id, run->phase);
    engine__pg_jstr(b, task);
    strbuf_addf(b, ",\"a\":%u,\"r\":", run->attempt);
    engine__pg_jstr(b, run->row ? run->row : run->name); /* one row per attempt (run.c) */
    strbuf_addstr(b, ",\"w\":");
    engine__pg_jstr(b, json_string_value(json_object_get(d, "worker")));
    strbuf_addf(b, ",\"st\":\"%s\"", st);
    json_int_t s = json_integer_value(json_object_get(d, "start")),
               e = json_integer_value(json_object_get(d, "end"));
    if (s)
        strbuf_addf(b, ",\"s\":%lld", (long long)s);
    if (e)
        strbuf_addf(b, ",\"e\":%lld", (long long)e);
    strbuf_addstr(b, ",\"m\":");
    engine__pg_jstr(b, json_string_value(json_object_get(d, "message")));
    strbuf_addstr(b, ",\"h\":");
    engine__pg_jstr(b, json_string_value(json_object_get(d, "how")));
    strbuf_addstr(b, ",\"tail\":");
    engine__pg_jstr(b, json_string_value(json_object_get(d, "tail")));
    json_t *res = json_object_get(d, "result"), *undo = json_object_get(d, "undo");
    if (res) {
        char *t = json_dumps(res, JSON_COMPACT | JSON_ENCODE_ANY);
        strbuf_addf(b, ",\"res\":%s", t);
        free(t);
    }
    if (undo) {
        char *t = json_dumps(undo, JSON_COMPACT | JSON_ENCODE_ANY);
        strbuf_addf(b, ",\"undo\":%s", t);
        free(t);
    }
    strbuf_addch(b, '}');
}

static void pg_done(int rc, const struct drv_err *err, void *arg);

/* Collect what PostgreSQL lacks; submit it. false when there is nothing. */
bool engine__commit_pg_flush(struct ejob *j)
{
    struct pgb *g = xcalloc(1, sizeof(*g));
    g->j = j;
    struct engine__pg_batch *b = xcalloc(1, sizeof(*b));
    g->b = b;
    b->j = j;
    snprintf(b->id, sizeof(b->id), "%s", j->id);
    b->token = j->token;
    b->zk = j->zk;
    bool any = false;
    if (j->commit->pg_job) {
        b->job_phase = xstrdup(engine_phase_name(j->st.phase));
        /* A final status is the final write's (with the cluster's new state, in one
         * transaction): until then the job shows what it did before. */
        b->job_status = engine_phase_final(j->st.phase)
                            ? NULL
                            : xstrdup(engine_phase_status(j->st.phase, j->st.cancel));
        b->job_error = xstrdup(j->st.error);
        g->job = true;
        j->commit->pg_job = false;
        any = true;
    }
    if (j->commit->pg_rb && j->rb.plan) {
        b->rb_tasks = engine__pg_task_rows(j->rb.plan, 0, j->rb.n);
        b->rb_plan = planner_plan_to_json_text(j->rb.plan, NULL);
        b->slim = j->slim;
        g->rb = true;
        j->commit->pg_rb = false;
        any = true;
    }
    struct eplan *plans[2] = {&j->fwd, &j->rb};
    struct strbuf tb = STRBUF_INIT;
    for (int k = 0; k < 2; k++) {
        struct eplan *p = plans[k];
        for (size_t i = 0; i < p->n_pg; i++) {
            uint32_t idx = p->pg_list[i];
            p->pg_dirty[idx] = 0;
            task_row(&tb, j->id, p, idx, tb.len == 0);
            enum engine_task_state st = (enum engine_task_state)p->recs[idx].state;
            g->begun |= st != ENGINE_TS_WAITING && st != ENGINE_TS_SKIPPED;
            g->tasks = xrealloc(g->tasks, (g->n_tasks + 1) * sizeof(*g->tasks));
            g->tasks[g->n_tasks].p = p;
            g->tasks[g->n_tasks++].idx = idx;
        }
        p->n_pg = 0;
    }
    if (tb.len) {
        b->tasks = xasprintf("[%s]", tb.buf);
        any = true;
    }
    strbuf_release(&tb);
    struct strbuf ab = STRBUF_INIT;
    size_t pos = 0;
    void *v;
    while (strmap_next(j->runs, &pos, NULL, &v)) {
        struct erun *run = v;
        if (run->recorded || run->queued_pg || !run->data ||
            (!run->ended && !engine__run_superseded(j, run)))
            continue;
        attempt_row(&ab, j, run, ab.len == 0);
        run->queued_pg = true;
        g->runs = xrealloc(g->runs, (g->n_runs + 1) * sizeof(*g->runs));
        g->runs[g->n_runs++] = run;
    }
    if (ab.len) {
        b->attempts = xasprintf("[%s]", ab.buf);
        any = true;
    }
    strbuf_release(&ab);
    if (json_object_size(j->commit->pg_nodes)) {
        b->nodes = json_dumps(j->commit->pg_nodes, JSON_COMPACT);
        g->nodes = j->commit->pg_nodes;
        j->commit->pg_nodes = json_object();
        any = true;
    }
    if (!any) {
        engine__pg_batch_free(b);
        free(g);
        return false;
    }
    engine__job_check_io(j, false); /* job.c invariant 4 */
    j->commit->pg_busy = true;
    engine__job_ref(j);
    b->back = g;
    /* With the other jobs' parts of this turn (batch.c): one transaction for all. */
    engine__batch_pg_part(j->e, ENGINE__PG_ROUND, b, pg_done);
    return true;
}

/* The round's outcome (from batch.c), as for a round sent alone. */
static void pg_done(int rc, const struct drv_err *err, void *arg)
{
    struct engine__pg_batch *b = arg;
    struct pgb *g = b->back;
    struct ejob *j = g->j;
    j->commit->pg_busy = false;
    for (size_t i = 0; i < g->n_runs; i++) {
        g->runs[i]->queued_pg = false;
        if (rc == 0)
            g->runs[i]->recorded = true;
    }
    if (rc == 0) {
        j->commit->pg_begun |= g->begun;
        j->commit->backoff_ms = 0;
        if (j->commit->pg_down)
            log_info(MOD, "event=job-pg-write-resumed job=%s", j->id);
        j->commit->pg_down = false;
    } else if (engine__job_alive(j)) {
        /* Put it all back for the next round. */
        j->commit->pg_job |= g->job;
        j->commit->pg_rb |= g->rb;
        for (size_t i = 0; i < g->n_tasks; i++)
            engine__task_touch(g->tasks[i].p, g->tasks[i].idx);
        if (g->nodes) {
            json_object_update_missing(j->commit->pg_nodes, g->nodes);
        }
        if (rc == DRV_ECONFLICT)
            engine__job_lost(j, err->msg);
        else {
            if (!j->commit->pg_down)
                log_warn(MOD, "event=job-pg-write-failed job=%s error=\"%s\"", j->id, err->msg);
            j->commit->pg_down = true;
            pg_retry_later(j);
        }
    }
    json_decref(g->nodes);
    engine__pg_batch_free(g->b);
    free(g->tasks);
    free(g->runs);
    free(g);
    engine__commit_zk_unpark(j); /* a first dispatch waiting for these rows */
    if (engine__job_alive(j)) {
        engine__kick(j);
        engine__job_idle(j);
    }
    engine__job_unref(j);
}
