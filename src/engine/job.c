/*
 * job: one job this node contends for or owns, from its lock to its end.
 *
 *   CONTENDING --lock acquired--> LOADING --PostgreSQL read, token claimed-->
 *        |                           |      (status final: clean ZooKeeper up, release)
 *        |                           v
 *        |        state znode absent: plan, write the start (PostgreSQL, then the
 *        |        job's znodes in ZooKeeper, the state last) ------------+
 *        |        state znode present: rebuild the plan, read the task   |
 *        |        log, resume ------------------------------------------+--> ACTIVE
 *        |                                                                    |
 *        +--ring moved (handover)--> released               ring moved        |
 *                                                   HANDING_OVER <------------+
 *                                       (the write in flight ends, release)    |
 *                                                                  FINISH      |
 *                                                   FINISHING <---------------+
 *                    (flush, final PostgreSQL write, ZooKeeper subtree removed, release)
 *
 *   any --lock LOST--> DEAD at once: nothing more is written (fencing makes
 *   a write already sent fail).
 *
 * This file: contending, loading the rows, handover, control requests, the
 * job's state machine and the end, and every change of own: the phases
 * (jobstart.c, jobresume.c, run.c, commit.c, sweep.c) are entered from here only
 * (engine__job_activate, engine__job_wind_up; the call rule in engine_int.h).
 * The way from the rows to ACTIVE (plan, first start or resume from the task
 * log) is jobstart.c and jobresume.c.
 *
 * Invariants (engine__job_check on the whole job at each event; 3 and 4, which are
 * about calls, by engine__job_check_io where the calls are made: commit.c's
 * multi-op and PostgreSQL batch, withdraw.c, sweep.c):
 *   1. own >= LOADING implies the lock was acquired and token > 0.
 *   2. In ACTIVE, cur is the forward plan unless the phase is a rollback
 *      phase, and every plan's in_flight equals its tasks in QUEUED/RUNNING.
 *   3. Tasks are dispatched only in ACTIVE with a dispatching phase (fsm J1;
 *      commit.c checks own before taking new tasks).
 *   4. DEAD is final: no coord or store call is made for a DEAD job.
 *
 * The job's ZooKeeper subtree (docs/zookeeper-tree.md):
 *   /drover/jobs/<id>          the API's announcement {"tenant":..,"cluster":..,"op":..}
 *   /drover/jobs/<id>/control  the API's requests {"want":"pause"|"resume"|"cancel"}
 *   /drover/jobs/<id>/state    the owner's state (tasklog.c), the sequencer of its writes
 *   /drover/jobs/<id>/ctx      the job's context for workers (or {"parts":n} + ctx/p<i>)
 *   /drover/jobs/<id>/log/<f|r><k>   the task log, 512 tasks a znode
 *   /drover/jobs/<id>/runs/<name>    run records, written by workers
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "batch.h"
#include "check.h"
#include "clock.h"
#include "commit.h"
#include "coord.h"
#include "engine_int.h"
#include "job_pg.h"
#include "log.h"
#include "model.h"
#include "nodes.h"
#include "planner_model.h"
#include "store.h"
#include "strmap.h"
#include "watchdog.h"
#include "withdraw.h"
#include "xalloc.h"
#include "zkpath.h"

#define MOD "engine"

void engine__job_check(const struct ejob *j)
{
#if DRV_CHECKS
    if (j->own >= EJ_LOADING && j->own != EJ_DEAD && j->token <= 0)
        abort(); /* 1 */
    if (j->own == EJ_ACTIVE && j->cur) {
        if ((j->cur == &j->rb) != engine_phase_rollback(j->st.phase) &&
            j->st.phase != ENGINE_PH_DRAINING && !engine_phase_final(j->st.phase))
            abort(); /* 2 */
        const struct eplan *p = j->cur;
        size_t fl = 0;
        for (uint32_t i = 0; i < p->n; i++)
            fl += p->recs[i].state == ENGINE_TS_QUEUED || p->recs[i].state == ENGINE_TS_RUNNING;
        if (fl != p->in_flight)
            abort(); /* 2 */
    }
#else
    (void)j;
#endif
}

void engine__job_check_io(const struct ejob *j, bool dispatches)
{
#if DRV_CHECKS
    if (j->own == EJ_DEAD)
        abort(); /* 4 */
    if (dispatches && (j->own != EJ_ACTIVE || !engine_phase_dispatches(j->st.phase)))
        abort(); /* 3 */
#else
    (void)j;
    (void)dispatches;
#endif
}

void engine__job_ref(struct ejob *j)
{
    j->refs++;
}

static void job_free(struct ejob *j)
{
    /* (Its ACL binding went with engine__job_gone: the last reference may go after the
       engine, from coord's session being freed, and j->e is then gone.) */
    engine__plan_clear(&j->fwd);
    engine__plan_clear(&j->rb);
    engine__plan_out_clear(&j->po);
    json_decref(j->job);
    json_decref(j->cluster);
    model_catset_unref(j->catset);
    json_decref(j->inputs);
    json_decref(j->snapshot);
    json_decref(j->ctx);
    json_decref(j->ssh_new);
    if (j->runs) {
        size_t pos = 0;
        void *v;
        while (strmap_next(j->runs, &pos, NULL, &v)) {
            struct erun *r = v;
            free(r->name);
            free(r->path);
            free(r->row);
            json_decref(r->data);
            free(r);
        }
        strmap_free(j->runs);
    }
    if (j->sweep_ev)
        event_free(j->sweep_ev);
    engine__commit_free(j);
    engine__nodes_free(j);
    engine__withdraw_free(j);
    engine__watchdog_job_free(j);
    free(j);
}

void engine__job_unref(struct ejob *j)
{
    if (--j->refs == 0)
        job_free(j);
}

/* Stop every watch and forget the lock object (its znode: see the callers). */
static void stop_watching(struct ejob *j)
{
    coord_watcher_free(j->runs_w);
    j->runs_w = NULL;
    coord_watcher_free(j->control_w);
    j->control_w = NULL;
    if (j->runs) {
        size_t pos = 0;
        void *v;
        while (strmap_next(j->runs, &pos, NULL, &v)) {
            struct erun *r = v;
            if (r->w) {
                coord_watch_cancel(r->w);
                r->w = NULL;
                engine__job_unref(j); /* the watch's reference (the map holds one more) */
            }
        }
    }
}

void engine__job_lost(struct ejob *j, const char *why)
{
    if (j->own == EJ_DEAD)
        return;
    bool owned = j->own != EJ_CONTENDING;
    j->own = EJ_DEAD;
    if (owned) {
        j->e->stats.lost++;
        log_warn(MOD, "event=job-lost job=%s node=%s reason=\"%s\"", j->id, j->e->node_id, why);
    }
    stop_watching(j);
    engine__commit_cancel(j);
    coord_lock_free(j->lock);
    j->lock = NULL;
    engine__job_gone(j->e, j);
}

/* The lock's znode is gone on the server (or the session is closing). The engine may be
 * gone by now (a node that handed everything over and stopped): touch the job only. */
static void released(int rc, void *arg)
{
    struct ejob *j = arg;
    log_info(MOD, "event=job-released job=%s held_ms=%lld confirmed=%d", j->id,
             (long long)(j->t_acquired ? clock_wall_ms() - j->t_acquired : 0), rc == 0);
    engine__job_unref(j);
}

/* Give the lock up now and tell when it is gone on the server. */
void engine__job_release(struct ejob *j)
{
    if (j->own == EJ_DEAD)
        return;
    j->own = EJ_DEAD;
    stop_watching(j);
    engine__commit_cancel(j);
    engine__job_ref(j);
    coord_lock_release_done(j->lock, released, j);
    coord_lock_free(j->lock);
    j->lock = NULL;
    engine__job_gone(j->e, j);
}

static bool pipeline_idle(const struct ejob *j)
{
    return engine__commit_idle(j) && !j->building;
}

/* Called whenever the pipeline goes idle: a handover waiting for it goes on. What
 * PostgreSQL lacks is written first (a round more), unless PostgreSQL is down: a result's
 * key-values merged just before the ring moved were left to the next owner, which has to
 * re-derive them from the run records (issue 22 item 1; jobresume.c does). */
void engine__job_idle(struct ejob *j)
{
    if (j->own == EJ_HANDING_OVER && j->commit->zk_parked) {
        /* A first dispatch waiting for PostgreSQL: dropped while it is down (commit_zk.c). */
        engine__commit_zk_unpark(j);
        if (j->commit->zk_parked || j->own != EJ_HANDING_OVER)
            return;
    }
    if (j->own == EJ_HANDING_OVER && pipeline_idle(j)) {
        if (engine__commit_pg_owed(j)) {
            engine__kick(j); /* pg_done calls here again */
            return;
        }
        /* A member of an older build joined: the kept records go first, or that owner
           would merge them in its listing's order (zk_settled calls here again). */
        if (engine__commit_runs_flush(j))
            return;
        log_info(MOD, "event=job-handed-over job=%s runs_kept=%zu keep_runs=%d", j->id,
                 engine__commit_runs_kept(j), (int)j->e->keep_runs);
        j->e->stats.handed_over++;
        engine__observe_handover(j);
        engine__job_release(j);
    }
}

void engine__job_handover(struct ejob *j)
{
    switch (j->own) {
    case EJ_CONTENDING:
        engine__job_release(j); /* stops acquiring; nothing was held */
        break;
    case EJ_LOADING:
    case EJ_ACTIVE:
        log_info(MOD, "event=job-handover job=%s node=%s", j->id, j->e->node_id);
        j->own = EJ_HANDING_OVER;
        j->t_handover = clock_mono_ms();
        engine__job_idle(j);
        break;
    default:
        break; /* finishing: it ends by itself soon; dead: nothing */
    }
}

/* ---- the incarnation -----------------------------------------------------------------
 *
 * A job's fencing token is its lock contender's creation zxid: it grows from holder to
 * holder while ZooKeeper keeps its history. A ZooKeeper rebuilt from nothing (data lost,
 * a new ensemble) starts its zxids again from low numbers, so every new token is lower
 * than the one PostgreSQL records (jobs.owner_token) and every load would be fenced out
 * for ever. So the token PostgreSQL records and compares is the pair (incarnation, zxid),
 * ordered by incarnation first (jobs.owner_zk, job_pg.c):
 *
 *   1. the incarnation is the ctime (the ZooKeeper leader's clock, ms) of ZKPATH_ENSEMBLE,
 *      a persistent znode made once per ZooKeeper (coord_ensure_path: whoever finds it
 *      missing makes it; a second maker's create finds it there);
 *   2. it is read once per session generation (a session lives in one incarnation: a
 *      rebuilt ZooKeeper does not know the old session, which expires), before the first
 *      load of a job acquired on that session; the jobs acquired meanwhile wait for it;
 *   3. a job acquired on a generation the engine has not read yet waits; one whose read
 *      fails is released (the next reconcile takes it again).
 *
 * Fencing stays: within one incarnation the zxids order the holders as before; a holder of
 * a later incarnation outranks every earlier one, whose sessions the rebuild ended (a
 * stale owner of the old ZooKeeper can neither win a load, its pair being lower, nor pass a
 * fence, which compares both). The order holds while the ZooKeeper servers' clocks do not
 * go back past the older incarnation's birth (the znode of a rebuilt ZooKeeper is made
 * after the one it replaces). Rows written before this column (owner_zk 0) rank below
 * every incarnation. Then the load goes on as for a job whose ZooKeeper state was lost
 * (jobresume.c: failed when tasks were begun, event=job-unresumable; else started again).
 */
struct eensemble {
    struct engine *e; /* NULL once the engine is freed: the read's answer is dropped */
    bool known;       /* id was read, on session generation gen */
    unsigned gen;
    int64_t id;
    bool reading;
    unsigned reading_gen;
    struct ejob **wait;
    size_t n_wait, cap_wait;
};

static void load(struct ejob *j);
static void ens_read(struct eensemble *en);

static void ens_flush(struct eensemble *en, bool ok)
{
    struct ejob **w = en->wait;
    size_t n = en->n_wait;
    en->wait = NULL;
    en->n_wait = en->cap_wait = 0;
    for (size_t i = 0; i < n; i++) {
        struct ejob *j = w[i];
        if (j->own == EJ_LOADING) {
            if (ok)
                load(j);
            else
                engine__job_release(j);
        } else if (j->own == EJ_HANDING_OVER) {
            engine__job_idle(j);
        }
        engine__job_unref(j);
    }
    free(w);
}

static void ens_made(int rc, void *arg)
{
    struct eensemble *en = arg;
    if (!en->e) {
        free(en);
        return;
    }
    if (rc && rc != DRV_EEXIST) {
        log_warn(MOD, "event=zk-ensemble-failed step=create error=%s", drv_strerror(rc));
        en->reading = false;
        ens_flush(en, false);
        return;
    }
    ens_read(en);
}

static void ens_stat(int rc, const struct coord_stat *st, void *arg)
{
    struct eensemble *en = arg;
    if (!en->e) {
        free(en);
        return;
    }
    if (rc == DRV_ENOENT) {
        coord_ensure_path(en->e->zk, ZKPATH_ENSEMBLE, ens_made, en);
        return;
    }
    if (rc == 0 && en->reading_gen != coord_session_generation(en->e->zk)) {
        ens_read(en); /* read on a session that has ended since: read on the new one */
        return;
    }
    en->reading = false;
    if (rc) {
        log_warn(MOD, "event=zk-ensemble-failed step=read error=%s", drv_strerror(rc));
        ens_flush(en, false);
        return;
    }
    if (en->id != st->ctime_ms)
        log_info(MOD, "event=zk-ensemble id=%lld generation=%u", (long long)st->ctime_ms,
                 en->reading_gen);
    en->id = st->ctime_ms;
    en->gen = en->reading_gen;
    en->known = true;
    ens_flush(en, true);
}

static void ens_read(struct eensemble *en)
{
    en->reading = true;
    en->reading_gen = coord_session_generation(en->e->zk);
    coord_exists_w(en->e->zk, ZKPATH_ENSEMBLE, ens_stat, NULL, en);
}

/* The incarnation of j's lock, in j->zk: true when known now; else j waits for it (load()
   again, or released). */
static bool ens_known(struct ejob *j)
{
    struct engine *e = j->e;
    if (!e->ens) {
        e->ens = xcalloc(1, sizeof(*e->ens));
        e->ens->e = e;
    }
    struct eensemble *en = e->ens;
    if (en->known && en->gen == coord_session_generation(e->zk)) {
        j->zk = en->id;
        return true;
    }
    engine__job_ref(j);
    XGROW(en->wait, en->cap_wait, en->n_wait + 1);
    en->wait[en->n_wait++] = j;
    if (!en->reading)
        ens_read(en);
    return false;
}

void engine__ensemble_free(struct engine *e)
{
    struct eensemble *en = e->ens;
    if (!en)
        return;
    for (size_t i = 0; i < en->n_wait; i++)
        engine__job_unref(en->wait[i]);
    free(en->wait);
    en->wait = NULL;
    en->n_wait = 0;
    e->ens = NULL;
    if (en->reading)
        en->e = NULL; /* its answer frees it */
    else
        free(en);
}

/* ---- loading ------------------------------------------------------------------------ */

static void on_lock(struct coord_lock *l, enum coord_lock_event ev, void *arg)
{
    struct ejob *j = arg;
    if (j->own == EJ_DEAD)
        return;
    switch (ev) {
    case COORD_LOCK_ACQUIRED:
        j->token = coord_lock_token(l);
        j->t_acquired = clock_wall_ms();
        j->own = EJ_LOADING;
        j->e->stats.taken++;
        log_info(MOD, "event=job-acquired job=%s node=%s token=%lld at_ms=%lld", j->id,
                 j->e->node_id, (long long)j->token, (long long)j->t_acquired);
        load(j);
        break;
    case COORD_LOCK_LOST:
        engine__job_lost(j, "lock lost");
        break;
    default:
        /* An error acquiring: forget it; the next reconcile (at most 5 s) tries again. */
        log_warn(MOD, "event=job-lock-failed job=%s event=%d", j->id, (int)ev);
        engine__job_release(j);
        break;
    }
}

struct ejob *engine__job_new(struct engine *e, const char *id)
{
    struct ejob *j = xcalloc(1, sizeof(*j));
    j->e = e;
    snprintf(j->id, sizeof(j->id), "%s", id);
    j->refs = 1; /* the engine's map */
    j->own = EJ_CONTENDING;
    j->t_contend = clock_mono_ms();
    j->st_ver = -1;
    j->runs = strmap_new();
    engine__nodes_new(j);
    engine__commit_new(j);
    snprintf(j->cls, sizeof(j->cls), "default");
    char *dir = zkpath_job_lock(NULL, 0, id);
    char *holder = xasprintf("{\"node\":\"%s\",\"job\":\"%s\"}", e->node_id, id);
    j->lock = coord_lock_new(e->zk, dir, holder, on_lock, j);
    free(dir);
    free(holder);
    coord_lock_acquire(j->lock, -1);
    return j;
}

static bool status_final(const char *s)
{
    return strcmp(s, "succeeded") == 0 || strcmp(s, "rolled-back") == 0 ||
           strcmp(s, "cancelled") == 0 || strcmp(s, "failed") == 0 ||
           strcmp(s, "needs-operator") == 0;
}

static void on_state(int rc, const char *data, int version, void *arg);

static void loaded(int rc, const struct drv_err *err, void *arg);

/* The claim is back (a part of a batch): read the job, on the pool, with no batch. */
static void claimed(int rc, const struct drv_err *err, void *arg)
{
    struct engine__pg_load *l = arg;
    struct ejob *j = l->j;
    if (rc || j->own != EJ_LOADING) {
        loaded(rc, err, l);
        return;
    }
    store_submit(j->e->db, engine__pg_load_work, loaded, l);
}

static void loaded(int rc, const struct drv_err *err, void *arg)
{
    struct engine__pg_load *l = arg;
    struct ejob *j = l->j;
    if (j->own == EJ_HANDING_OVER) {
        engine__pg_load_free(l);
        engine__job_idle(j);
        engine__job_unref(j);
        return;
    }
    if (j->own != EJ_LOADING) {
        engine__pg_load_free(l);
        engine__job_unref(j);
        return;
    }
    if (rc == DRV_ECONFLICT) {
        engine__pg_load_free(l);
        engine__job_lost(j, "a newer owner's token is recorded in PostgreSQL");
        engine__job_unref(j);
        return;
    }
    if (rc) {
        log_warn(MOD, "event=job-load-failed job=%s error=\"%s\"", j->id, err->msg);
        engine__pg_load_free(l);
        /* PostgreSQL unreachable or the job gone: give it back; reconcile retries. */
        engine__job_release(j);
        engine__job_unref(j);
        return;
    }
    j->job = json_incref(l->job);
    j->cluster = json_incref(l->cluster);
    /* Tasks begun as PostgreSQL records them: a first dispatch need not wait (commit.h). */
    j->commit->pg_begun = strtol(engine__row_str(l->job, "tasks_begun"), NULL, 10) > 0;
    j->catset = model_catset_ref(l->catset);
    j->slim = json_is_true(json_object_get(l->job, "slim"));
    snprintf(j->tenant_id, sizeof(j->tenant_id), "%s", engine__row_str(l->job, "tenant_id"));
    snprintf(j->tenant, sizeof(j->tenant), "%s", engine__row_str(l->job, "tenant"));
    /* The job's context, nodes and run records grant its tenant's workers what they need
       (coord_acl_grant; docs/zookeeper-tree.md "ACLs"), from its first write on. */
    char jp[128];
    if (!j->acl_bound)
        coord_acl_bind(j->e->zk, zkpath_job(jp, sizeof(jp), j->id), j->tenant);
    j->acl_bound = true;
    snprintf(j->cluster_id, sizeof(j->cluster_id), "%s", engine__row_str(l->job, "cluster_id"));
    snprintf(j->op, sizeof(j->op), "%s", engine__row_str(l->job, "operation"));
    engine__watchdog_loaded(j, strtoll(engine__row_str(l->job, "age_ms"), NULL, 10));
    json_t *inputs = json_object_get(l->job, "inputs");
    if (json_is_object(inputs))
        j->inputs = json_incref(inputs);
    engine__pg_load_free(l);
    engine__nodes_load(j, json_object_get(j->cluster, "nodes")); /* key-values as recorded */
    const char *status = engine__row_str(j->job, "status");
    if (status_final(status)) {
        /* It ended; only the ZooKeeper subtree may be left. */
        j->st.phase = (enum engine_phase)engine_phase_parse(status);
        engine__job_wind_up(j, false);
        engine__job_unref(j);
        return;
    }
    char *p = zkpath_job_state(NULL, 0, j->id);
    coord_get(j->e->zk, p, on_state, j); /* keeps the reference */
    free(p);
}

static void load(struct ejob *j)
{
    if (!ens_known(j))
        return;
    struct engine__pg_load *l = xcalloc(1, sizeof(*l));
    l->j = j;
    snprintf(l->id, sizeof(l->id), "%s", j->id);
    snprintf(l->node, sizeof(l->node), "%s", j->e->node_id);
    l->token = j->token;
    l->zk = j->zk;
    l->cache = j->e->catalogs;
    engine__job_ref(j);
    /* With the other jobs' parts of this turn (batch.c): one transaction for all. */
    engine__batch_pg_part(j->e, ENGINE__PG_LOAD, l, claimed);
}

static void on_state(int rc, const char *data, int version, void *arg)
{
    struct ejob *j = arg;
    if (j->own == EJ_HANDING_OVER)
        engine__job_idle(j);
    if (j->own != EJ_LOADING) {
        engine__job_unref(j);
        return;
    }
    struct drv_err err;
    long begun = strtol(engine__row_str(j->job, "tasks_begun"), NULL, 10);
    if (rc == DRV_ENOENT && begun > 0) {
        /* No state, yet PostgreSQL records tasks dispatched: the state znode is created
           before any dispatch and deleted only after the final write, so ZooKeeper lost
           acknowledged writes (an ensemble's known bugs on quick leader changes, see
           docs/operations.md) or someone deleted the job's znodes. A first start would run
           its tasks again (a second machine made, say): end it for an operator instead. */
        char cause[200];
        snprintf(cause, sizeof(cause),
                 "its ZooKeeper state is gone though PostgreSQL records %ld tasks dispatched "
                 "(ZooKeeper lost acknowledged writes, or the job's znodes were deleted)",
                 begun);
        memset(&j->st, 0, sizeof(j->st));
        engine__job_unresumable(j, cause);
    } else if (rc == DRV_ENOENT) {
        engine__job_start_new(j);
    } else if (rc == 0 && engine__state_decode(data, strlen(data), &j->st, &err) == 0) {
        j->st_ver = version;
        engine__job_resume(j);
    } else if (rc == 0) {
        /* A state this build cannot read (garbage, a format newer than this build): released,
         * the ring would give it back here every 200 ms forever. */
        log_error(MOD, "event=job-state-unreadable job=%s error=\"%s\"", j->id, err.msg);
        memset(&j->st, 0, sizeof(j->st));
        engine__job_unresumable(j, err.msg);
    } else {
        log_warn(MOD, "event=job-state-read-failed job=%s error=%s", j->id, drv_strerror(rc));
        engine__job_release(j);
    }
    engine__job_unref(j);
}

/*
 * Resuming is impossible: what the job runs cannot be trusted (the rebuilt plan's digest
 * differs from the state's, the state or the task log cannot be read, the pinned inputs
 * are missing). Releasing the lock would only make the ring give the job back at once,
 * to this node or another with the same build, forever. It ends failed instead, once, with
 * the cause: nothing is rolled back (no plan to roll back from) and what its tasks did is
 * for an operator to look at. A transient failure (ZooKeeper or PostgreSQL unreachable) is
 * not this: those release and try again.
 */
void engine__job_unresumable(struct ejob *j, const char *cause)
{
    log_error(MOD, "event=job-unresumable job=%s node=%s error=\"%s\"", j->id, j->e->node_id,
              cause);
    snprintf(j->st.error, sizeof(j->st.error), "cannot resume: %s (an operator must look)", cause);
    j->st.phase = ENGINE_PH_FAILED;
    j->cur = NULL;
    engine__job_activate(j, false);
    engine__job_finish(j);
}

/* ---- entering the phases ---------------------------------------------------------------- */

void engine__job_activate(struct ejob *j, bool follow)
{
    j->own = EJ_ACTIVE;
    if (!follow)
        return;
    j->queue = engine__queue(j->e, j->tenant, j->cls);
    engine__runs_watch(j);
}

void engine__job_wind_up(struct ejob *j, bool keep_root)
{
    j->own = EJ_FINISHING;
    engine__job_sweep(j, keep_root);
}

/* ---- the rollback plan ------------------------------------------------------------------ */

int engine__job_rollback_plan(struct ejob *j, struct drv_err *err)
{
    struct eplan *f = &j->fwd;
    enum planner_task_state *states = xcalloc(f->n + 1, sizeof(*states));
    const enum planner_task_state *xs = planner_exec_states(f->x);
    for (uint32_t i = 0; i < f->n; i++) {
        states[i] = xs[i];
        /* A create that failed may still have made a machine (its result says so):
         * its delete belongs in the rollback. */
        const struct planner_task *t = &f->plan->tasks[i];
        if (states[i] == PLANNER_TS_ERROR && t->action == PLANNER_ACT_CREATE && t->node &&
            json_object_get(engine__nodes_props(j, t->node), "provider-id"))
            states[i] = PLANNER_TS_SUCCESS;
    }
    struct planner_plan *rb = NULL;
    const struct planner_input *in = j->po.in;
    int rc = planner_rollback_layout(f->plan, states, in->services, in->n_services, &in->start, &rb,
                                     err);
    free(states);
    if (rc)
        return rc;
    engine__plan_clear(&j->rb);
    rc = engine__plan_init(&j->rb, 'r', rb, NULL, err);
    if (rc == 0)
        rc = engine__plan_exec(&j->rb, err); /* from scratch; a resume reads the log after */
    if (rc)
        return rc;
    rb->format_version = j->st.format;
    char *text = planner_plan_to_json_text(rb, NULL);
    engine__sha256_hex(text, strlen(text), j->rb.sha);
    free(text);
    if (j->st.rb_tasks && strcmp(j->rb.sha, j->st.rb_sha) != 0)
        return drv_err_set(err, DRV_EINVAL, 0, "the rebuilt rollback plan's digest differs");
    return 0;
}

/* ---- control requests from the API --------------------------------------------------------- */

bool engine__control_apply(struct ejob *j, const char *want)
{
    bool changed = true;
    if (want && strcmp(want, "cancel") == 0 && !j->st.cancel) {
        j->st.cancel = true;
        j->state_dirty = true;
        log_info(MOD, "event=job-cancel job=%s", j->id);
        engine__job_event(j, ENGINE_EV_CANCEL);
    } else if (want && strcmp(want, "pause") == 0 && !j->st.paused) {
        j->st.paused = true;
        j->state_dirty = true;
        engine__job_event(j, ENGINE_EV_PAUSE);
    } else if (want && strcmp(want, "resume") == 0 && j->st.paused) {
        j->st.paused = false;
        j->state_dirty = true;
        engine__job_event(j, ENGINE_EV_RESUME);
    } else {
        changed = false;
    }
    if (changed)
        engine__kick(j);
    return changed;
}

static void on_control(int rc, const char *data, size_t len, const struct coord_stat *st, void *arg)
{
    struct ejob *j = arg;
    if (j->own != EJ_ACTIVE || rc != 0)
        return;
    json_error_t je;
    json_t *c = json_loadb(data, len, 0, &je);
    j->control_ms = clock_mono_ms();
    engine__control_apply(j, json_string_value(json_object_get(c, "want")));
    json_decref(c);
    engine__kick(j);
}

void engine__control_watch(struct ejob *j)
{
    char path[256];
    zkpath_job_control(path, sizeof(path), j->id);
    j->control_w = coord_watch_data_absent(j->e->zk, path, on_control, j); /* rarely there */
}

/* ---- the job's state machine --------------------------------------------------------------- */

static void rollback_built(struct ejob *j);

/* Test hook (DROVER_FAULT=crash-after-withdraw): exit when a cancelled job hears progress
 * while it drains (a task withdrawn or ended), before the task log says so
 * (integration/engine/cancel_failover.sh). */
static void fault_after_withdraw(struct ejob *j, enum engine_job_event ev)
{
    const char *fault = getenv("DROVER_FAULT");
    if (ev != ENGINE_EV_PROGRESS || !j->st.cancel || j->st.phase != ENGINE_PH_DRAINING || !fault ||
        strcmp(fault, "crash-after-withdraw") != 0)
        return;
    log_warn(MOD, "event=fault-injected fault=crash-after-withdraw job=%s", j->id);
    _exit(70);
}

void engine__job_event(struct ejob *j, enum engine_job_event ev)
{
    /* No plan: a job that ended before it had one (unplanned, unresumable) is finishing;
       a request the janitor finds meanwhile changes nothing. */
    if (j->own != EJ_ACTIVE || !j->cur)
        return;
    fault_after_withdraw(j, ev);
    struct eplan *p = j->cur;
    struct engine_job_facts f = {
        .in_flight = p->in_flight,
        .plan_done = p->x && planner_exec_finished(p->x) && !p->gave_up && p->in_flight == 0,
        .cancel = j->st.cancel,
        .paused = j->st.paused,
        .rollback_wanted =
            !j->e->no_rollback && strcmp(j->op, "delete") != 0 &&
            !json_is_false(json_object_get(json_object_get(j->job, "request"), "rollback")),
    };
    struct engine_job_out o = engine_job_step(j->st.phase, ev, &f);
    if (o.phase != j->st.phase) {
        log_info(MOD, "event=job-phase job=%s from=%s to=%s", j->id, engine_phase_name(j->st.phase),
                 engine_phase_name(o.phase));
        j->st.phase = o.phase;
        j->state_dirty = true;
        engine__commit_job_row(j);
    }
    if (o.actions & ENGINE_ACT_RECORD) {
        j->state_dirty = true;
        engine__commit_job_row(j);
    }
    if (o.actions & ENGINE_ACT_WITHDRAW)
        engine__withdraw(j);
    if (o.actions & ENGINE_ACT_BUILD_ROLLBACK)
        rollback_built(j);
    if (o.actions & ENGINE_ACT_FINISH)
        engine__job_finish(j);
    engine__job_check(j);
    engine__kick(j);
}

/* The rollback plan (pure and quick next to the forward plan: on the loop). */
static void rollback_built(struct ejob *j)
{
    struct drv_err err;
    if (engine__job_rollback_plan(j, &err) != 0) {
        /* The forward plan cannot be undone (a rollback of a rollback, a loop): an
         * operator must look. */
        snprintf(j->st.error + strlen(j->st.error), sizeof(j->st.error) - strlen(j->st.error),
                 "%sno rollback: %s", *j->st.error ? "; " : "", err.msg);
        j->st.phase = ENGINE_PH_NEEDS_OPERATOR;
        engine__job_finish(j);
        return;
    }
    j->st.rb_tasks = j->rb.n;
    snprintf(j->st.rb_sha, sizeof(j->st.rb_sha), "%s", j->rb.sha);
    j->cur = &j->rb;
    log_info(MOD, "event=rollback-planned job=%s tasks=%u", j->id, j->rb.n);
    engine__commit_rollback_rows(j);
    if (j->rb.n == 0)
        engine__job_event(j, ENGINE_EV_PROGRESS);
}

/* ---- the end -----------------------------------------------------------------------------------
 */

void engine__job_finish(struct ejob *j)
{
    if (engine__commit_finishing(j))
        return;
    j->e->stats.finished++;
    log_info(MOD, "event=job-finishing job=%s status=%s error=\"%s\"", j->id,
             engine_phase_status(j->st.phase, j->st.cancel), j->st.error);
    engine__commit_finish(j); /* commit.c flushes, then writes the end */
}
