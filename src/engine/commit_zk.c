/*
 * commit_zk: a round's ZooKeeper multi-op (commit.c's note has the rounds, step
 * 2, the byte budget and its three rules, and how an unknown outcome is settled):
 * built from the job's dirty marks (zk_build), handed to batch.c, which sends
 * many jobs' multi-ops as one, and settled when its outcome comes back (applied:
 * versions move on; refused for a reason that is no one else's write: what it
 * carried is marked to go again; another owner's write: the job is lost).
 * Loop thread only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "assign.h"
#include "batch.h"
#include "clock.h"
#include "commit.h"
#include "coord.h"
#include "engine_int.h"
#include "log.h"
#include "nodes.h"
#include "planner.h"
#include "strmap.h"
#include "taskmsg.h"
#include "watchdog.h"
#include "xalloc.h"
#include "zkpath.h"

#define MOD "engine"

/* ---- the ZooKeeper multi-op, kept until it is settled ------------------------------------ */

/* A round's multi-op: its ops (in z, what batch.c sends) and what settling it needs. */
struct etxn {
    struct engine__zpart z; /* first: on_zk gets it back */
    struct {
        struct eplan *p;
        size_t k;
    } * chunks;
    size_t n_chunks, cap_chunks;
    struct erun **dels;
    size_t n_dels, cap_dels;
    int32_t st_ver; /* the state version it expects */
    size_t dispatched;
    struct {
        struct eplan *p;
        uint32_t idx;
    } * disp; /* the tasks dispatched (put, or into a slot) */
    size_t n_disp, cap_disp;
    bool slots; /* this round's tasks go to the workers' slots (assign.c), not the queue */
};

static void etxn_free(struct etxn *t)
{
    engine__zpart_clear(&t->z);
    free(t->chunks);
    free(t->dels);
    free(t->disp);
    free(t);
}

static void note_dispatch(struct etxn *t, struct eplan *p, uint32_t idx)
{
    XGROW(t->disp, t->cap_disp, t->n_disp + 1);
    t->disp[t->n_disp].p = p;
    t->disp[t->n_disp++].idx = idx;
    t->dispatched++;
}

/* ---- ZooKeeper ----------------------------------------------------------------------------- */

static void zk_send(struct etxn *t);

static void chunk_add(struct etxn *t, struct eplan *p, size_t k)
{
    struct ejob *j = t->z.j;
    size_t first = k * ENGINE_LOG_CHUNK;
    size_t cnt = p->n - first < ENGINE_LOG_CHUNK ? p->n - first : ENGINE_LOG_CHUNK;
    char *path = zkpath_job_log_chunk(NULL, 0, j->id, p->phase, k);
    engine__zpart_add(&t->z, p->chunk_ver[k] < 0 ? ENGINE__ZOP_CREATE : ENGINE__ZOP_SET, path,
                      engine__log_encode(p->recs, first, cnt, j->st.format), p->chunk_ver[k]);
    XGROW(t->chunks, t->cap_chunks, t->n_chunks + 1);
    t->chunks[t->n_chunks].p = p;
    t->chunks[t->n_chunks++].k = k;
    p->chunk_dirty[k] = 0;
}

/* What writing chunk k of p costs in a multi-op (its JSON, its path, the op). */
static size_t chunk_cost(const struct eplan *p, size_t k)
{
    size_t first = k * ENGINE_LOG_CHUNK;
    size_t cnt = p->n - first < ENGINE_LOG_CHUNK ? p->n - first : ENGINE_LOG_CHUNK;
    /* engine__log_encode: three letters a task and about 70 bytes of JSON around them; a
       chunk's path is under 128 bytes; created (its ACL counted) or set. */
    return coord_txn_create_bytes("", "") + 128 + 3 * cnt + 100;
}

/* The queue item of task idx of p into *out (new string, taskmsg_item_encode). DRV_EAGAIN:
 * its macros name a node not confirmed yet (dispatch it later); another error: it can never
 * run (err says). */
static int item_json(struct ejob *j, struct eplan *p, uint32_t idx, bool cleanup, const char *avoid,
                     char **out, struct drv_err *err)
{
    *out = NULL;
    const struct planner_task *t = &p->plan->tasks[idx];
    bool previous = t->restore && strcmp(t->restore, "previous-config") == 0;
    json_t *fields = NULL, *config = NULL;
    if (!previous) {
        int rc = engine__macros_expand(j, t, &fields, &config, err);
        if (rc)
            return rc;
    }
    /* Bootstrap is served by the automator that serves "bootstrap" (ssh), or a "*" one. */
    const char *plugin = t->action == PLANNER_ACT_BOOTSTRAP ? "bootstrap" : t->type ? t->type : "";
    json_int_t tmo = json_integer_value(json_object_get(t->fields, "timeout_ms"));
    if (tmo <= 0)
        tmo = j->e->task_timeout_ms;
    /* A restore runs with the config the snapshot kept. */
    json_t *prev = previous ? json_object_get(j->snapshot, "config") : NULL;
    if (!json_is_object(prev))
        prev = NULL;
    /* The node in its parts (facts.h): its key-values give the facts and the values, the
     * plan's node info its types, services and providermap entries. Nothing of any other
     * node: a plugin that wants them reads the nodes map. */
    json_t *props = engine__nodes_props(j, t->node);
    json_t *info = t->node ? json_object_get(j->po.nodeinfo, t->node) : NULL;
    struct taskmsg_item it = {
        .job = j->id,
        .phase = p->phase,
        .idx = idx,
        .attempt = p->recs[idx].attempt,
        .task = t->id,
        .name = planner_action_name(t->action),
        .tenant = j->tenant,
        .cluster = j->cluster_id,
        .plugin = plugin,
        .cleanup = cleanup,
        .nodes_rev = j->st.nodes_rev,
        .node = t->node,
        .service = t->service,
        .fields = fields ? fields : t->fields,
        .config_override = config ? config : prev,
        .facts = props,
        .values = props,
        .entries = json_object_get(info, "entries"),
        .hardwaretype = json_string_value(json_object_get(info, "hardwaretype")),
        .imagetype = json_string_value(json_object_get(info, "imagetype")),
        .services = json_object_get(info, "services"),
        .avoid = avoid,
        .timeout_ms = tmo,
    };
    *out = taskmsg_item_encode(&it, engine__workers_item_version(j->e));
    json_decref(fields);
    json_decref(config);
    return 0;
}

static int put_task(struct etxn *t, struct eplan *p, uint32_t idx, bool cleanup, const char *avoid,
                    struct drv_err *err)
{
    struct ejob *j = t->z.j;
    struct engine *e = j->e;
    char *item;
    int rc = item_json(j, p, idx, cleanup, avoid, &item, err);
    if (rc)
        return rc;
    /* What the put adds, by coord's own figures, with its chunk (it goes in this multi-op
       too: counted now, added after the puts). A slot's assignment: assign.c's figure. */
    char key[80];
    taskmsg_key(key, sizeof(key), j->id, p->phase, idx, p->recs[idx].attempt);
    size_t put = t->slots ? engine__assign_bytes(j, item)
                          : coord_txn_queue_put_bytes(j->queue->q, key, item);
    size_t chunk = chunk_cost(p, idx / ENGINE_LOG_CHUNK);
    size_t need = put + (p->chunk_dirty[idx / ENGINE_LOG_CHUNK] ? 0 : chunk);
    /* A multi-op of the state, the chunk and this put alone: over the session's limit, the
       item can never be sent (the task fails, with the figures); over what is left of this
       round's budget, it waits for the next round (a round's first put always goes: a
       round is never empty for want of room, and it stays under the session's limit). */
    size_t alone = coord_txn_set_bytes("", "") + 128 + ENGINE_STATE_MAX_JSON + chunk + put;
    if (alone > e->zk_max) {
        size_t len = strlen(item);
        free(item);
        return drv_err_set(err, DRV_ETOOBIG, 0,
                           "its queue item (%zu bytes of JSON, %zu with what coord adds) is "
                           "over ZooKeeper's request limit (%zu)",
                           len, alone, e->zk_max);
    }
    if ((t->dispatched > 0 && t->z.bytes + need > e->budget) || t->z.bytes + need > e->zk_max) {
        free(item);
        return DRV_ETOOBIG; /* not in this round */
    }
    if (t->slots) {
        /* Into a worker's slot (assign.c): its ops count their own bytes, the chunk here.
           No slot now: as a full round, the task waits (the job is kicked when one is
           offered). */
        size_t before = t->z.bytes;
        int arc = engine__assign_task(j, &t->z, p, idx, item, avoid);
        free(item);
        if (arc)
            return DRV_ETOOBIG;
        if (t->z.bytes - before < need)
            t->z.bytes = before + need;
        note_dispatch(t, p, idx);
        return 0;
    }
    struct engine__zop *o = engine__zpart_add(&t->z, ENGINE__ZOP_PUT, NULL, item, 0);
    o->q = j->queue->q;
    o->prio = p->phase == 'r' ? 7 : 5;
    memcpy(o->key, key, sizeof(o->key));
    t->z.bytes += need;
    note_dispatch(t, p, idx);
    return 0;
}

/* A task that can never run (a macro that cannot be expanded): it fails for good. */
static void cannot_run(struct ejob *j, struct eplan *p, uint32_t idx, const struct drv_err *err)
{
    struct drv_err e2;
    p->recs[idx].state = ENGINE_TS_FAILED;
    engine__task_touch(p, idx);
    planner_exec_done(p->x, idx, 0, &e2);
    p->gave_up = true;
    if (!*j->st.error)
        snprintf(j->st.error, sizeof(j->st.error), "task %s cannot run: %s", p->plan->tasks[idx].id,
                 err->msg);
    log_warn(MOD, "event=task-cannot-run job=%s task=%s error=\"%s\"", j->id,
             p->plan->tasks[idx].id, err->msg);
    engine__job_event(j, ENGINE_EV_GAVE_UP);
}

/* Build the next multi-op; NULL when there is nothing to write. */
static struct etxn *zk_build(struct ejob *j)
{
    struct engine *e = j->e;
    struct etxn *t = xcalloc(1, sizeof(*t));
    t->z.j = j;
    t->st_ver = j->st_ver;
    /* 0: the sequencer (filled last, with the state as it will be). */
    engine__zpart_add(&t->z, ENGINE__ZOP_SET, zkpath_job_state(NULL, 0, j->id), NULL, j->st_ver);
    struct eplan *p = j->cur;
    bool can_put = p && j->own == EJ_ACTIVE && !j->commit->finishing && j->queue &&
                   coord_queue_is_open(j->queue->q);
    t->slots = engine__assign_on(j);
    engine__assign_round_begin(j);
    if (p && j->own == EJ_ACTIVE && !j->commit->finishing && !can_put)
        engine__commit_retry_later(
            j); /* the queue is still opening (or coord retries a failed open) */
    /* The nodes map's chunks that changed (plugins that want it read them), under the
     * budget; while some wait, nothing is put (an item names the map's revision). */
    for (size_t k = 0; k < engine__nodes_chunks(j); k++)
        if (engine__nodes_dirty(j, k)) {
            if (t->z.bytes > e->budget / 2) {
                can_put = false;
                break;
            }
            engine__zpart_add(&t->z, ENGINE__ZOP_SET, zkpath_job_nodes_chunk(NULL, 0, j->id, k),
                              engine__nodes_chunk(j, k), -1);
            engine__nodes_clean(j, k);
        }
    /* The log chunks already changed go in too: counted before any put. */
    struct eplan *plans[2] = {&j->fwd, &j->rb};
    size_t reserved = 0;
    for (int k = 0; k < 2; k++)
        for (size_t c = 0; plans[k]->plan && c < plans[k]->n_chunks; c++)
            if (plans[k]->chunk_dirty[c])
                reserved += chunk_cost(plans[k], c);
    t->z.bytes += reserved;
    /* Retries first: a failed attempt's next one (its task is in flight already). */
    size_t kept = 0;
    struct drv_err err;
    bool later = false;
    for (size_t i = 0; i < j->commit->n_retries; i++) {
        uint32_t idx = j->commit->retries[i];
        if (!p || idx >= p->n || p->recs[idx].state != ENGINE_TS_QUEUED)
            continue; /* superseded (the plan changed) */
        const struct planner_task *task = &p->plan->tasks[idx];
        /* A retry is a dispatch: only while the phase dispatches (fsm J1). */
        err.code = 0;
        int rc =
            !can_put || !engine_phase_dispatches(j->st.phase) || t->z.bytes > e->budget * 3 / 4
                ? DRV_EAGAIN
                : put_task(t, p, idx, task->action == PLANNER_ACT_CREATE, p->worker[idx], &err);
        if (rc == DRV_ETOOBIG && err.code == 0)
            rc = DRV_EAGAIN; /* this round is full: the next one */
        if (rc == DRV_EAGAIN) {
            j->commit->retries[kept++] = idx;
            later |= can_put && engine_phase_dispatches(j->st.phase);
        } else if (rc) {
            /* Give it up: it leaves the in-flight count through the planner's failure. */
            p->in_flight--;
            cannot_run(j, p, idx, &err);
        }
    }
    j->commit->n_retries = kept;
    /* Newly ready tasks. One whose macros name a node not confirmed yet is held back
     * this round (requeued after the loop, so the planner does not give it again). */
    uint32_t held[65];
    size_t n_held = 0;
    bool full = false; /* the round stopped at a put that did not fit */
    if (can_put && engine_phase_dispatches(j->st.phase)) {
        while (t->z.bytes < e->budget * 3 / 4 && n_held < 64 &&
               (!e->max_in_flight || p->in_flight < e->max_in_flight)) {
            uint32_t idx;
            if (planner_exec_next(p->x, &idx, 1) == 0)
                break;
            const struct planner_task *task = &p->plan->tasks[idx];
            struct engine_task_policy pol = {e->max_failures, task->action == PLANNER_ACT_CREATE};
            struct engine_task_rec saved = p->recs[idx];
            struct engine_task_out o = engine_task_step(&p->recs[idx], ENGINE_TEV_DISPATCH, &pol);
            if (o.actions & ENGINE_TACT_GAVE_UP) {
                engine__task_touch(p, idx);
                planner_exec_done(p->x, idx, 0, &err);
                p->gave_up = true;
                continue;
            }
            size_t before = t->z.bytes;
            err.code = 0;
            int rc = put_task(t, p, idx, (o.actions & ENGINE_TACT_CLEANUP) != 0, NULL, &err);
            if (t->z.bytes != before)
                reserved +=
                    chunk_cost(p, idx / ENGINE_LOG_CHUNK) * !p->chunk_dirty[idx / ENGINE_LOG_CHUNK];
            if (rc == DRV_ETOOBIG && err.code == 0) {
                /* This round is full: the task goes back to the planner, first of the
                   next round (requeued below, with the held ones). */
                p->recs[idx] = saved;
                held[n_held++] = idx;
                full = true;
                break;
            }
            if (rc == DRV_EAGAIN) {
                p->recs[idx] = saved;
                held[n_held++] = idx;
                continue;
            }
            engine__task_touch(p, idx);
            if (rc) {
                cannot_run(j, p, idx, &err);
                continue;
            }
            p->in_flight++;
        }
    }
    for (size_t i = 0; i < n_held; i++)
        planner_exec_requeue(p->x, held[i], &err);
    if (n_held > (size_t)full || later)
        engine__commit_retry_later(j); /* a node they wait for is being confirmed */
    /* The task log's changed chunks, after the puts so that they carry the attempts
     * just dispatched. Every one a put needs is in (reserved above); with no put, a
     * round of many results may leave some for the next multi-op. */
    t->z.bytes -= reserved;
    bool log_behind = false;
    for (int k = 0; k < 2; k++) {
        struct eplan *q = plans[k];
        for (size_t c = 0; q->plan && c < q->n_chunks; c++)
            if (q->chunk_dirty[c]) {
                if (t->dispatched == 0 && t->z.bytes > e->budget) {
                    log_behind = true;
                    break;
                }
                chunk_add(t, q, c);
            }
    }
    /* The slots the job no longer needs, and the key records of lost attempts. */
    engine__assign_round_end(j, &t->z);
    /* Run records whose rows are in PostgreSQL, once the log has their results: kept
     * until more than ENGINE_RUNS_KEEP are, then all deleted (the sweep takes the rest);
     * each at once while a member of an older build may resume the job (engine.c). */
    size_t pos = 0, n_kept = 0;
    void *v;
    while (strmap_next(j->runs, &pos, NULL, &v)) {
        const struct erun *run = v;
        n_kept += run->recorded && !run->deleting && !run->deleted && !run->refused;
    }
    pos = 0;
    size_t keep = e->keep_runs ? ENGINE_RUNS_KEEP : 0; /* an older member: each at once */
    while (!log_behind && n_kept > keep && strmap_next(j->runs, &pos, NULL, &v)) {
        struct erun *run = v;
        if (!run->recorded || run->deleting || run->deleted || run->refused)
            continue;
        if (t->z.bytes > e->budget)
            break;
        engine__zpart_add(&t->z, ENGINE__ZOP_DELETE, xstrdup(run->path), NULL, -1);
        run->deleting = true;
        XGROW(t->dels, t->cap_dels, t->n_dels + 1);
        t->dels[t->n_dels++] = run;
    }
    if (t->z.n == 1 && !j->state_dirty) {
        etxn_free(t);
        return NULL;
    }
    free(t->z.ops[0].data);
    t->z.ops[0].data = engine__state_encode(&j->st, e->node_id, j->token);
    j->state_dirty = false;
    return t;
}

static void zk_settled(struct etxn *t, bool applied);

size_t engine__commit_runs_kept(const struct ejob *j)
{
    size_t pos = 0, n = 0;
    void *v;
    while (j->runs && strmap_next(j->runs, &pos, NULL, &v)) {
        const struct erun *run = v;
        n += run->recorded && !run->deleted && !run->refused;
    }
    return n;
}

bool engine__commit_runs_flush(struct ejob *j)
{
    struct ecommit *c = j->commit;
    if (j->e->keep_runs || c->pg_down || engine__commit_runs_kept(j) == 0)
        return false;
    if (!c->retry_ev || !event_pending(c->retry_ev, EV_TIMEOUT, NULL))
        engine__kick(j);
    return true;
}

/* An answer for a job that has gone (lost or freed) meanwhile: drop the multi-op and the
 * answer's reference. True when it did. */
static bool job_gone(struct etxn *t)
{
    struct ejob *j = t->z.j;
    if (engine__job_alive(j))
        return false;
    j->commit->zk_busy = false;
    etxn_free(t);
    engine__job_unref(j);
    return true;
}

static void on_state_version(int rc, const char *data, int version, void *arg)
{
    struct etxn *t = arg;
    struct ejob *j = t->z.j;
    if (job_gone(t))
        return;
    if (rc == 0 && version == t->st_ver + 1) {
        zk_settled(t, true);
    } else if (rc == 0 && version == t->st_ver) {
        zk_send(t); /* it did not apply: the very same multi-op again */
    } else if (rc == 0) {
        j->commit->zk_busy = false;
        engine__job_lost(j, "the job's state was written by someone else");
        etxn_free(t);
    } else {
        /* Still cannot read: try the read again shortly. */
        char *p = zkpath_job_state(NULL, 0, j->id);
        engine__job_ref(j);
        coord_sync(j->e->zk, p, NULL, NULL);
        coord_get(j->e->zk, p, on_state_version, t);
        free(p);
    }
    engine__job_unref(j);
}

/* The multi-op's outcome (from batch.c), as for the job's multi-op sent alone. */
static void on_zk(const struct coord_txn_result *r, struct engine__zpart *z)
{
    struct etxn *t = (struct etxn *)z;
    struct ejob *j = t->z.j;
    if (job_gone(t))
        return;
    if (r->rc == 0) {
        zk_settled(t, true);
    } else if (r->rc == DRV_EAGAIN) {
        /* Outcome unknown: the state's version tells, read after a sync (the server this
         * session now talks to may not have applied yet what another one answered). */
        char *p = zkpath_job_state(NULL, 0, j->id);
        engine__job_ref(j);
        coord_sync(j->e->zk, p, NULL, NULL);
        coord_get(j->e->zk, p, on_state_version, t);
        free(p);
    } else if (r->rc == DRV_ECONFLICT && r->failed_op < 0) {
        j->commit->zk_busy = false;
        engine__job_lost(j, "the lock is gone (fenced write refused)");
        etxn_free(t);
    } else if (r->failed_op >= 0 && engine__assign_op_failed(j, &t->z, (size_t)r->failed_op)) {
        /* A slot's op (someone else's write came first): that slot's ops are out, its task
           back to the retries; the rest again. */
        zk_send(t);
    } else if (r->failed_op >= 0 && (size_t)r->failed_op < t->z.n &&
               t->z.ops[r->failed_op].kind == ENGINE__ZOP_DELETE) {
        /* A run record already gone (ZNONODE): forget that delete, send the rest. One whose
         * delete was refused (NOAUTH: a runs/ that does not let droverd delete) is still
         * there: not taken as deleted (the sweep would loop on it), not sent again with every
         * round (the job goes on); the sweep tries it at the end, and waits while refused. */
        const struct engine__zop *o = &t->z.ops[r->failed_op];
        size_t kept = 0;
        for (size_t i = 0; i < t->n_dels; i++) {
            struct erun *run = t->dels[i];
            if (strcmp(run->path, o->path) != 0) {
                t->dels[kept++] = run;
                continue;
            }
            run->deleting = false; /* and out of this multi-op's deletes */
            if (r->rc == DRV_ENOENT) {
                run->deleted = true;
            } else {
                run->refused = true;
                log_warn(MOD, "event=run-record-delete-refused job=%s record=%s error=%s zrc=%d",
                         j->id, run->name, drv_strerror(r->rc), r->zrc);
            }
        }
        t->n_dels = kept;
        engine__zpart_drop(&t->z, (size_t)r->failed_op);
        zk_send(t);
    } else if (r->failed_op == 0 || (r->failed_op > 0 && (size_t)r->failed_op < t->z.n &&
                                     (t->z.ops[r->failed_op].kind == ENGINE__ZOP_SET ||
                                      t->z.ops[r->failed_op].kind == ENGINE__ZOP_CREATE))) {
        /* A version that moved, or a chunk that someone else created. */
        j->commit->zk_busy = false;
        engine__job_lost(j, "a version of the job's znodes moved: another owner wrote");
        etxn_free(t);
    } else {
        /* zrc -125: the tenant's ZooKeeper quota (docs/security.md "ZooKeeper quotas"). */
        log_warn(MOD, "event=job-zk-write-failed job=%s error=%s op=%d zrc=%d", j->id,
                 drv_strerror(r->rc), r->failed_op, r->zrc);
        zk_settled(t, false);
        engine__commit_retry_later(j); /* not at once: what failed may fail again */
    }
    engine__job_unref(j);
}

/* (The job reference taken here is dropped by on_zk.) */
static void zk_send(struct etxn *t)
{
    struct ejob *j = t->z.j;
    engine__job_check_io(j, false);
    engine__job_ref(j);
    t->z.done = on_zk;
    engine__batch_zk(j->e, &t->z);
}

/*
 * The multi-op is settled: applied (versions move on) or refused for a reason
 * that is no one else's write: what it carried must be carried again, which
 * the in-memory state does by itself except for the puts (the tasks stay in
 * flight with an item that does not exist): those go back to the retries.
 */
static void zk_settled(struct etxn *t, bool applied)
{
    struct ejob *j = t->z.j;
    j->commit->zk_busy = false;
    engine__assign_settled(j, applied);
    if (applied) {
        j->st_ver = t->st_ver + 1;
        for (size_t i = 0; i < t->n_chunks; i++) {
            int32_t *ver = &t->chunks[i].p->chunk_ver[t->chunks[i].k];
            *ver = *ver < 0 ? 0 : *ver + 1; /* created, or set */
        }
        for (size_t i = 0; i < t->n_dels; i++) {
            t->dels[i]->deleting = false;
            t->dels[i]->deleted = true;
        }
        j->e->stats.dispatched += t->dispatched;
        j->commit->backoff_ms = 0;
        if (t->dispatched && !j->commit->dispatched_once) {
            /* For failover and handover figures: the first dispatch of this owner. */
            j->commit->dispatched_once = true;
            int64_t now = clock_wall_ms(); /* wall: compared with other nodes' at_ms */
            log_info(MOD, "event=first-dispatch job=%s node=%s at_ms=%lld since_acquired_ms=%lld",
                     j->id, j->e->node_id, (long long)now, (long long)(now - j->t_acquired));
        }
    } else {
        for (size_t i = 0; i < t->n_chunks; i++)
            t->chunks[i].p->chunk_dirty[t->chunks[i].k] = 1;
        for (size_t i = 0; i < t->n_dels; i++)
            t->dels[i]->deleting = false;
        j->state_dirty = true;
        engine__nodes_dirty_all(j); /* whichever it carried: all again (a rare path) */
        for (size_t i = 0; i < t->z.n; i++) {
            if (t->z.ops[i].kind != ENGINE__ZOP_PUT)
                continue;
            char job[24], ph;
            uint32_t idx;
            unsigned att;
            if (taskmsg_key_parse(t->z.ops[i].key, job, &ph, &idx, &att) == 0) {
                XGROW(j->commit->retries, j->commit->cap_retries, j->commit->n_retries + 1);
                j->commit->retries[j->commit->n_retries++] = idx;
            }
        }
    }
    etxn_free(t);
    /* Puts that did not go in while the job stopped dispatching (a pause, a drain came
       meanwhile): taken back, or a draining job would wait for them forever. */
    if (!applied && j->commit->n_retries && !engine_phase_dispatches(j->st.phase))
        engine__commit_retries_withdraw(j);
    if (applied)
        engine__kick(j); /* what waited for this multi-op */
    engine__job_idle(j);
}

/* The first multi-op that dispatches (puts, or assigns to a slot), while PostgreSQL records
 * no task of the job begun: held back until the round carrying its tasks' queued rows has committed
 * (pg_done calls engine__commit_zk_unpark), so that a ZooKeeper state lost once a task is
 * dispatched always finds tasks_begun > 0 (docs/engine.md "Resuming after a failover"). Its tasks'
 * rows are marked for that round here, whatever marked them before. */
static void park(struct ejob *j, struct etxn *t)
{
    for (size_t i = 0; i < t->n_disp; i++)
        engine__task_touch(t->disp[i].p, t->disp[i].idx);
    j->commit->zk_parked = t;
    log_info(MOD, "event=job-dispatch-waits-for-pg job=%s tasks=%zu", j->id, t->dispatched);
    engine__kick(j); /* the round with the queued rows */
}

void engine__commit_zk_unpark(struct ejob *j)
{
    struct ecommit *c = j->commit;
    struct etxn *t = c->zk_parked;
    if (!t)
        return;
    if (!engine__job_alive(j)) {
        c->zk_parked = NULL;
        c->zk_busy = false;
        etxn_free(t);
    } else if (c->pg_begun) {
        c->zk_parked = NULL;
        zk_send(t);
    } else if (c->pg_down && j->own == EJ_HANDING_OVER) {
        c->zk_parked = NULL;
        zk_settled(t, false); /* never sent: the next owner dispatches */
    }
}

void engine__commit_zk_parked_free(struct ejob *j)
{
    if (j->commit->zk_parked)
        etxn_free(j->commit->zk_parked);
    j->commit->zk_parked = NULL;
}

void engine__commit_zk_flush(struct ejob *j)
{
    struct etxn *t = zk_build(j);
    if (!t)
        return;
    bool puts = false;
    for (size_t i = 0; i < t->z.n; i++)
        puts |= t->z.ops[i].kind == ENGINE__ZOP_PUT;
    engine__job_check_io(j, puts); /* job.c invariants 3, 4 */
    j->commit->zk_busy = true;
    if (t->dispatched && !j->commit->pg_begun) {
        park(j, t);
        return;
    }
    zk_send(t);
}
