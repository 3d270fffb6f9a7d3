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
 * Invariants (engine__job_check, debug builds):
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
#include <time.h>

#include <event2/event.h>

#include "coord.h"
#include "engine_int.h"
#include "job_pg.h"
#include "log.h"
#include "macro.h"
#include "planner.h"
#include "planner_model.h"
#include "seal.h"
#include "sshkey.h"
#include "store.h"
#include "strmap.h"
#include "xalloc.h"

#define MOD "engine"
#define CTX_PART 3500

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

bool engine__job_alive(const struct ejob *j)
{
    return j->own != EJ_DEAD;
}

void engine__job_check(const struct ejob *j)
{
#ifndef NDEBUG
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

void engine__job_ref(struct ejob *j)
{
    j->refs++;
}

static void job_free(struct ejob *j)
{
    engine__plan_clear(&j->fwd);
    engine__plan_clear(&j->rb);
    engine__plan_out_clear(&j->po);
    json_decref(j->job);
    json_decref(j->cluster);
    json_decref(j->catalog);
    json_decref(j->inputs);
    json_decref(j->props);
    json_decref(j->snapshot);
    json_decref(j->ctx);
    json_decref(j->pg_nodes);
    json_decref(j->mnodes);
    macro_cluster_free(j->mcluster);
    json_decref(j->mnodes_old);
    macro_cluster_free(j->mcluster_old);
    json_decref(j->ssh_new);
    strmap_free(j->node_index);
    free(j->node_confirm);
    free(j->nchunk_dirty);
    if (j->runs) {
        size_t pos = 0;
        void *v;
        while (strmap_next(j->runs, &pos, NULL, &v)) {
            struct erun *r = v;
            free(r->name);
            free(r->path);
            json_decref(r->data);
            free(r);
        }
        strmap_free(j->runs);
    }
    free(j->retries);
    if (j->kick_ev)
        event_free(j->kick_ev);
    if (j->retry_ev)
        event_free(j->retry_ev);
    if (j->pg_retry_ev)
        event_free(j->pg_retry_ev);
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
             (long long)(j->t_acquired ? now_ms() - j->t_acquired : 0), rc == 0);
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
    return !j->zk_busy && !j->pg_busy && !j->building && j->withdrawing == 0;
}

/* Called whenever the pipeline goes idle: a handover waiting for it goes on. */
void engine__job_idle(struct ejob *j)
{
    if (j->own == EJ_HANDING_OVER && pipeline_idle(j)) {
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
        j->t_handover = engine__mono_ms();
        engine__job_idle(j);
        break;
    default:
        break; /* finishing: it ends by itself soon; dead: nothing */
    }
}

/* ---- loading ------------------------------------------------------------------------ */

static void load(struct ejob *j);
static void start_new(struct ejob *j);
static void resume(struct ejob *j);
static void finish(struct ejob *j);

static void on_lock(struct coord_lock *l, enum coord_lock_event ev, void *arg)
{
    struct ejob *j = arg;
    if (j->own == EJ_DEAD)
        return;
    switch (ev) {
    case COORD_LOCK_ACQUIRED:
        j->token = coord_lock_token(l);
        j->t_acquired = now_ms();
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
    j->t_contend = engine__mono_ms();
    j->st_ver = -1;
    j->runs = strmap_new();
    j->props = json_object();
    j->pg_nodes = json_object();
    snprintf(j->cls, sizeof(j->cls), "default");
    char *dir = xasprintf("/drover/locks/jobs/%s", id);
    char *holder = xasprintf("{\"node\":\"%s\",\"job\":\"%s\"}", e->node_id, id);
    j->lock = coord_lock_new(e->zk, dir, holder, on_lock, j);
    free(dir);
    free(holder);
    coord_lock_acquire(j->lock, -1);
    return j;
}

static const char *row_str(const json_t *row, const char *k)
{
    const char *s = json_string_value(json_object_get(row, k));
    return s ? s : "";
}

static bool status_final(const char *s)
{
    return strcmp(s, "succeeded") == 0 || strcmp(s, "rolled-back") == 0 ||
           strcmp(s, "cancelled") == 0 || strcmp(s, "failed") == 0 ||
           strcmp(s, "needs-operator") == 0;
}

static void on_state(int rc, const char *data, int version, void *arg);

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
    j->catalog = json_incref(l->catalog);
    snprintf(j->tenant_id, sizeof(j->tenant_id), "%s", row_str(l->job, "tenant_id"));
    snprintf(j->tenant, sizeof(j->tenant), "%s", row_str(l->job, "tenant"));
    snprintf(j->cluster_id, sizeof(j->cluster_id), "%s", row_str(l->job, "cluster_id"));
    snprintf(j->op, sizeof(j->op), "%s", row_str(l->job, "operation"));
    json_t *inputs = json_object_get(l->job, "inputs");
    if (json_is_object(inputs))
        j->inputs = json_incref(inputs);
    engine__pg_load_free(l);
    /* Node key-values as recorded. */
    size_t i;
    json_t *n;
    json_array_foreach(json_object_get(j->cluster, "nodes"), i, n)
    {
        /* A deleted node's key-values are of a machine that is gone (a failed create made
           again reuses its id). */
        if (strcmp(row_str(n, "status"), "deleted") == 0)
            continue;
        json_t *p = json_object_get(n, "properties");
        json_object_set_new(j->props, row_str(n, "id"),
                            json_is_object(p) ? json_deep_copy(p) : json_object());
    }
    const char *status = row_str(j->job, "status");
    if (status_final(status)) {
        /* It ended; only the ZooKeeper subtree may be left. */
        j->st.phase = (enum engine_phase)engine_phase_parse(status);
        j->own = EJ_FINISHING;
        engine__job_cleanup(j);
        engine__job_unref(j);
        return;
    }
    char *p = xasprintf("/drover/jobs/%s/state", j->id);
    coord_get(j->e->zk, p, on_state, j); /* keeps the reference */
    free(p);
}

static void load(struct ejob *j)
{
    struct engine__pg_load *l = xcalloc(1, sizeof(*l));
    l->j = j;
    snprintf(l->id, sizeof(l->id), "%s", j->id);
    snprintf(l->node, sizeof(l->node), "%s", j->e->node_id);
    l->token = j->token;
    engine__job_ref(j);
    store_submit(j->e->db, engine__pg_load_work, loaded, l);
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
    if (rc == DRV_ENOENT) {
        start_new(j);
    } else if (rc == 0 && engine__state_decode(data, strlen(data), &j->st, &err) == 0) {
        j->st_ver = version;
        resume(j);
    } else if (rc == 0) {
        /* A state this build cannot read (a newer format): leave the job to a newer node. */
        log_error(MOD, "event=job-state-unreadable job=%s error=\"%s\"", j->id, err.msg);
        engine__job_release(j);
    } else {
        log_warn(MOD, "event=job-state-read-failed job=%s error=%s", j->id, drv_strerror(rc));
        engine__job_release(j);
    }
    engine__job_unref(j);
}

/* ---- planning --------------------------------------------------------------------------- */

struct build {
    struct ejob *j;
    struct engine__plan_in in;
    json_t *inputs; /* what in points into */
    struct engine__plan_out out;
    struct drv_err err;
    int rc;
    bool resuming;
};

static void build_run(void *arg)
{
    struct build *b = arg;
    b->rc = engine__plan_build(&b->in, &b->out, &b->err);
}

/* The inputs of the plan: pinned ones on resume, else made from the rows just read. */
static json_t *make_inputs(struct ejob *j)
{
    const json_t *req = json_object_get(j->job, "request");
    const json_t *layout = json_object_get(j->cluster, "layout");
    json_t *start = json_null(), *target = json_null();
    bool create = strcmp(j->op, "create") == 0;
    if (create) {
        target = json_incref((json_t *)layout);
    } else {
        start = json_incref((json_t *)layout);
        json_t *t = json_object_get(json_object_get(req, "target"), "layout");
        if (t)
            target = json_incref(t);
    }
    json_t *subset = json_object_get(req, "services");
    bool acts_on_subset = strcmp(j->op, "configure") == 0 || strcmp(j->op, "start") == 0 ||
                          strcmp(j->op, "stop") == 0 || strcmp(j->op, "restart") == 0 ||
                          strcmp(j->op, "upgrade") == 0;
    /* The tenant's resources as they are now (null: none pushed): the job keeps this
       version to the end, whatever is pushed meanwhile (docs/worker.md "Resources"). */
    json_t *res = json_object_get(j->job, "resources");
    return json_pack(
        "{s:i, s:s, s:O, s:O, s:O, s:s, s:s?, s:o, s:o, s:O}", "format", j->e->write_format, "op",
        j->op, "resources", json_is_object(res) ? res : json_null(), "request",
        req ? req : json_null(), "catalog", j->catalog ? j->catalog : json_null(), "template",
        row_str(j->cluster, "template"), "provider",
        json_string_value(json_object_get(j->cluster, "provider")), "start", start, "target",
        target, "subset", acts_on_subset && json_is_array(subset) ? subset : json_null());
}

static void build_start(struct ejob *j, bool resuming, void (*done)(void *))
{
    struct build *b = xcalloc(1, sizeof(*b));
    b->j = j;
    b->resuming = resuming;
    b->inputs = resuming ? json_incref(j->inputs) : make_inputs(j);
    b->in.op = json_string_value(json_object_get(b->inputs, "op"));
    b->in.request = json_object_get(b->inputs, "request");
    b->in.catalog = json_object_get(b->inputs, "catalog");
    b->in.template_name = json_string_value(json_object_get(b->inputs, "template"));
    b->in.provider = json_string_value(json_object_get(b->inputs, "provider"));
    b->in.start = json_object_get(b->inputs, "start");
    b->in.target = json_object_get(b->inputs, "target");
    b->in.subset = json_object_get(b->inputs, "subset");
    /* Inputs pinned before formats were negotiated say 1. */
    json_int_t format = json_integer_value(json_object_get(b->inputs, "format"));
    b->in.format = format > 0 ? (int)format : 1;
    if (json_is_null(b->in.subset))
        b->in.subset = NULL;
    j->building = true;
    engine__job_ref(j);
    engine__offload(j->e, build_run, done, b);
}

static void build_free(struct build *b)
{
    engine__plan_out_clear(&b->out);
    json_decref(b->inputs);
    free(b);
}

/* The job cannot even be planned: it fails at once, with the reason. */
static void fail_unplanned(struct ejob *j, const char *why)
{
    log_warn(MOD, "event=job-unplannable job=%s reason=\"%s\"", j->id, why);
    snprintf(j->st.error, sizeof(j->st.error), "no plan: %s", why);
    j->st.phase = ENGINE_PH_FAILED;
    j->own = EJ_ACTIVE;
    finish(j);
}

/* ---- a new job: plan, record the start, create the znodes -------------------------------- */

static void zk_init(struct ejob *j);

static void started_pg(int rc, const struct drv_err *err, void *arg)
{
    struct engine__pg_start *s = arg;
    struct ejob *j = s->j;
    engine__pg_start_free(s);
    j->pg_busy = false;
    if (j->own == EJ_HANDING_OVER)
        engine__job_idle(j);
    if (j->own == EJ_LOADING) {
        if (rc == 0)
            zk_init(j);
        else if (rc == DRV_ECONFLICT)
            engine__job_lost(j, "fenced out in PostgreSQL");
        else {
            log_warn(MOD, "event=job-start-failed job=%s error=\"%s\"", j->id, err->msg);
            engine__job_release(j);
        }
    }
    engine__job_unref(j);
}

/* The cluster's config for this job: a configure brings its new one. */
json_t *engine__job_config(const struct ejob *j)
{
    json_t *asked = json_object_get(json_object_get(j->job, "request"), "config");
    if (strcmp(j->op, "configure") == 0 && json_is_object(asked))
        return asked;
    json_t *c = json_object_get(j->cluster, "config");
    return json_is_object(c) ? c : NULL;
}

static json_t *make_ctx(struct ejob *j)
{
    json_t *config = engine__job_config(j);
    json_t *ctx = json_pack(
        "{s:i, s:s, s:s, s:o, s:O, s:s, s:s, s:I}", "v", 1, "clustername",
        row_str(j->cluster, "name"), "template", row_str(j->cluster, "template"), "cluster",
        config ? json_incref(config) : json_object(), "provider", j->po.provider, "tenant",
        j->tenant, "job", j->id, "nodes_chunks", (json_int_t)j->n_nchunks);
    /* The cluster's SSH key (its private part sealed): made by this job's start or an
     * earlier job's. */
    json_t *ssh =
        j->ssh_new ? j->ssh_new : json_object_get(json_object_get(j->cluster, "secrets"), "ssh");
    if (json_is_object(ssh))
        json_object_set(ctx, "ssh", ssh);
    json_t *res = json_object_get(j->inputs, "resources");
    if (json_is_object(res))
        json_object_set(ctx, "resources", res); /* {"version", "sha256"}: pinned */
    return ctx;
}

/* A cluster without a key gets one with its first job, when the fleet can seal it. */
static void make_cluster_key(struct ejob *j)
{
    if (json_is_object(json_object_get(json_object_get(j->cluster, "secrets"), "ssh")) ||
        !j->e->has_key)
        return;
    struct sshkey_pair kp;
    struct drv_err err;
    char comment[96];
    snprintf(comment, sizeof(comment), "drover-cluster-%s", j->cluster_id);
    if (sshkey_generate(comment, &kp, &err) != 0) {
        log_error(MOD, "event=cluster-key-failed job=%s error=\"%s\"", j->id, err.msg);
        return;
    }
    char *sealed = seal_text(j->e->key, kp.private_pem);
    j->ssh_new = json_pack("{s:s, s:s}", "public_key", kp.public_line, "private_key", sealed);
    free(sealed);
    sshkey_pair_clear(&kp);
}

static void start_built(void *arg)
{
    struct build *b = arg;
    struct ejob *j = b->j;
    j->building = false;
    if (j->own == EJ_HANDING_OVER)
        engine__job_idle(j);
    if (j->own != EJ_LOADING) {
        build_free(b);
        engine__job_unref(j);
        return;
    }
    if (b->rc) {
        fail_unplanned(j, b->err.msg);
        build_free(b);
        engine__job_unref(j);
        return;
    }
    j->po = b->out;
    memset(&b->out, 0, sizeof(b->out));
    json_decref(j->inputs);
    j->inputs = json_incref(b->inputs);
    build_free(b);
    struct drv_err err;
    if (engine__plan_init(&j->fwd, 'f', j->po.plan, NULL, &err) != 0 ||
        engine__plan_exec(&j->fwd, &err) != 0) {
        fail_unplanned(j, err.msg);
        engine__job_unref(j);
        return;
    }
    j->cur = &j->fwd;
    j->st.format = j->po.plan->format_version;
    j->st.tasks = j->fwd.n;
    snprintf(j->st.plan_sha, sizeof(j->st.plan_sha), "%s", j->po.sha);
    j->st.cancel = json_is_string(json_object_get(j->job, "control")) &&
                   strcmp(row_str(j->job, "control"), "cancel") == 0;
    j->st.paused = strcmp(row_str(j->job, "control"), "pause") == 0;
    j->snapshot = json_deep_copy(j->cluster);
    json_object_del(j->snapshot, "secrets");
    snprintf(j->cluster_owner, sizeof(j->cluster_owner), "%s", row_str(j->cluster, "owner"));
    engine__nodes_init(j);
    if (engine__macros_check(j, &err) != 0) {
        fail_unplanned(j, err.msg);
        engine__job_unref(j);
        return;
    }
    make_cluster_key(j);
    j->ctx = make_ctx(j);
    /* PostgreSQL first: the plan and its inputs are what a new owner rebuilds from. */
    struct engine__pg_start *s = engine__pg_start_new(j);
    j->pg_busy = true;
    store_submit(j->e->db, engine__pg_start_work, started_pg, s);
    /* (started_pg keeps the reference) */
}

static void start_new(struct ejob *j)
{
    const char *status = row_str(j->job, "status");
    if (strcmp(row_str(j->job, "control"), "cancel") == 0 && strcmp(status, "pending") == 0) {
        /* Cancelled before it started: nothing ran. */
        j->st.phase = ENGINE_PH_CANCELLED;
        j->st.cancel = true;
        j->own = EJ_ACTIVE;
        finish(j);
        return;
    }
    /* Pending, or running with no state in ZooKeeper (its last owner died between its
     * PostgreSQL start and its ZooKeeper start): nothing was dispatched; start over. */
    build_start(j, j->inputs != NULL, start_built);
}

/* ---- the job's znodes ---------------------------------------------------------------------- */

struct init {
    struct ejob *j;
    struct coord_txn **txns; /* in order: everything, then the state znode last */
    size_t n, pos;
};

static void init_next(struct init *in);

static void init_committed(const struct coord_txn_result *r, void *arg)
{
    struct init *in = arg;
    struct ejob *j = in->j;
    j->zk_busy = false;
    if (j->own == EJ_HANDING_OVER)
        engine__job_idle(j);
    if (j->own != EJ_LOADING) {
        for (size_t i = in->pos; i < in->n; i++)
            coord_txn_free(in->txns[i]);
        free(in->txns);
        free(in);
        engine__job_unref(j);
        return;
    }
    if (r->rc == 0) {
        init_next(in);
        engine__job_unref(j);
        return;
    }
    for (size_t i = in->pos; i < in->n; i++)
        coord_txn_free(in->txns[i]);
    free(in->txns);
    free(in);
    if (r->rc == DRV_ECONFLICT && r->failed_op < 0) {
        engine__job_lost(j, "lock lost while creating the job's znodes");
    } else {
        /* Left-overs of an earlier owner's start (znodes exist), or ZooKeeper trouble:
         * remove what is there and start again from the lock. */
        log_warn(MOD, "event=job-init-failed job=%s error=%s op=%d", j->id, drv_strerror(r->rc),
                 r->failed_op);
        j->own = EJ_FINISHING; /* cleanup keeps the announcement, then releases */
        engine__job_sweep(j, true);
    }
    engine__job_unref(j);
}

static void init_next(struct init *in)
{
    struct ejob *j = in->j;
    if (in->pos == in->n) {
        free(in->txns);
        free(in);
        j->st_ver = 0;
        j->nchunks_new = false;
        j->own = EJ_ACTIVE;
        j->queue = engine__queue(j->e, j->tenant, j->cls);
        log_info(MOD, "event=job-started job=%s op=%s tasks=%u node=%s", j->id, j->op, j->fwd.n,
                 j->e->node_id);
        engine__runs_watch(j);
        engine__job_event(j, ENGINE_EV_START);
        return;
    }
    j->zk_busy = true;
    engine__job_ref(j);
    coord_txn_commit(j->e->zk, in->txns[in->pos++], j->lock, init_committed, in);
}

/* The creates of the job's znodes, split under the budget; the state znode last. */
static void zk_init(struct ejob *j)
{
    struct engine *e = j->e;
    struct init *in = xcalloc(1, sizeof(*in));
    in->j = j;
    char path[256];
    size_t n_txns = 0, cap = 0;
    struct coord_txn *t = coord_txn_new();
    char *ctx = json_dumps(j->ctx, JSON_COMPACT);
    size_t len = strlen(ctx);
    snprintf(path, sizeof(path), "/drover/jobs/%s/ctx", j->id);
    if (len <= CTX_PART) {
        coord_txn_create(t, path, ctx, 0);
    } else {
        size_t parts = (len + CTX_PART - 1) / CTX_PART;
        char head[64];
        snprintf(head, sizeof(head), "{\"v\":1,\"parts\":%zu}", parts);
        coord_txn_create(t, path, head, 0);
        for (size_t i = 0; i < parts; i++) {
            char *part = xstrndup(ctx + i * CTX_PART, CTX_PART);
            snprintf(path, sizeof(path), "/drover/jobs/%s/ctx/p%zu", j->id, i);
            coord_txn_create(t, path, part, 0);
            free(part);
        }
    }
    free(ctx);
    snprintf(path, sizeof(path), "/drover/jobs/%s/runs", j->id);
    coord_txn_create(t, path, "{}", 0);
    snprintf(path, sizeof(path), "/drover/jobs/%s/nodes", j->id);
    coord_txn_create(t, path, "{}", 0);
    for (size_t k = 0; k < j->n_nchunks; k++) {
        char *text = engine__nodes_chunk(j, k);
        if (coord_txn_bytes(t) + strlen(text) + 200 > e->budget) {
            XGROW(in->txns, cap, n_txns + 1);
            in->txns[n_txns++] = t;
            t = coord_txn_new();
        }
        snprintf(path, sizeof(path), "/drover/jobs/%s/nodes/n%zu", j->id, k);
        coord_txn_create(t, path, text, 0);
        free(text);
        j->nchunk_dirty[k] = 0;
    }
    snprintf(path, sizeof(path), "/drover/jobs/%s/log", j->id);
    coord_txn_create(t, path, "{}", 0);
    for (size_t k = 0; k < j->fwd.n_chunks; k++) {
        size_t first = k * ENGINE_LOG_CHUNK;
        size_t cnt = j->fwd.n - first < ENGINE_LOG_CHUNK ? j->fwd.n - first : ENGINE_LOG_CHUNK;
        char *text = engine__log_encode(j->fwd.recs, first, cnt, j->st.format);
        if (coord_txn_bytes(t) + strlen(text) + 200 > e->budget) {
            XGROW(in->txns, cap, n_txns + 1);
            in->txns[n_txns++] = t;
            t = coord_txn_new();
        }
        snprintf(path, sizeof(path), "/drover/jobs/%s/log/f%zu", j->id, k);
        coord_txn_create(t, path, text, 0);
        free(text);
        j->fwd.chunk_ver[k] = 0;
    }
    XGROW(in->txns, cap, n_txns + 1);
    in->txns[n_txns++] = t;
    t = coord_txn_new();
    char *st = engine__state_encode(&j->st, e->node_id, j->token);
    snprintf(path, sizeof(path), "/drover/jobs/%s/state", j->id);
    coord_txn_create(t, path, st, 0);
    free(st);
    XGROW(in->txns, cap, n_txns + 1);
    in->txns[n_txns++] = t;
    in->n = n_txns;
    init_next(in);
}

/* ---- resuming a job another owner started ------------------------------------------------- */

struct chunk_read {
    struct ejob *j;
    struct eplan *p;
    size_t k;
    int *left;
    int *failed;
    void (*done)(struct ejob *j, int failed);
};

static void on_chunk(int rc, const char *data, int version, void *arg)
{
    struct chunk_read *c = arg;
    struct ejob *j = c->j;
    struct drv_err err;
    size_t first = c->k * ENGINE_LOG_CHUNK;
    size_t cnt = c->p->n - first < ENGINE_LOG_CHUNK ? c->p->n - first : ENGINE_LOG_CHUNK;
    if (rc == 0 && j->own == EJ_LOADING &&
        engine__log_decode(data, strlen(data), first, cnt, c->p->recs + first, &err) == 0) {
        c->p->chunk_ver[c->k] = version;
    } else if (rc == DRV_ENOENT && c->p->phase == 'r') {
        /* A rollback chunk is created when first written: until then all its tasks wait. */
    } else if (j->own == EJ_LOADING) {
        log_error(MOD, "event=task-log-unreadable job=%s chunk=%c%zu error=%s", j->id, c->p->phase,
                  c->k, rc ? drv_strerror(rc) : err.msg);
        (*c->failed)++;
    }
    if (--*c->left == 0) {
        int failed = *c->failed;
        free(c->left);
        free(c->failed);
        c->done(j, failed);
    }
    free(c);
    engine__job_unref(j);
}

/* Read every chunk of p's task log into p->recs; done(j, failures) once all are in. */
static void read_chunks(struct ejob *j, struct eplan *p, void (*done)(struct ejob *, int))
{
    int *left = xcalloc(1, sizeof(int)), *failed = xcalloc(1, sizeof(int));
    *left = (int)p->n_chunks;
    if (p->n_chunks == 0) {
        free(left);
        free(failed);
        done(j, 0);
        return;
    }
    for (size_t k = 0; k < p->n_chunks; k++) {
        struct chunk_read *c = xcalloc(1, sizeof(*c));
        c->j = j;
        c->p = p;
        c->k = k;
        c->left = left;
        c->failed = failed;
        c->done = done;
        char path[256];
        snprintf(path, sizeof(path), "/drover/jobs/%s/log/%c%zu", j->id, p->phase, k);
        engine__job_ref(j);
        coord_get(j->e->zk, path, on_chunk, c);
    }
}

static void resume_active(struct ejob *j)
{
    j->own = EJ_ACTIVE;
    j->queue = engine__queue(j->e, j->tenant, j->cls);
    log_info(MOD, "event=job-resumed job=%s phase=%s node=%s done=%zu in_flight=%zu", j->id,
             engine_phase_name(j->st.phase), j->e->node_id, j->cur->done, j->cur->in_flight);
    engine__observe_takeover(j);
    engine__runs_watch(j);
    /* The last owner decided the end but died before its final write: write it now. */
    if (engine_phase_final(j->st.phase))
        finish(j);
    else
        engine__job_event(j, ENGINE_EV_PROGRESS);
    engine__kick(j);
}

/* A plan's task log chunks are read: whether the plan can go on (else the job is let go). */
static bool chunks_ready(struct ejob *j, struct eplan *p, int failed)
{
    if (j->own != EJ_LOADING)
        return false;
    struct drv_err err;
    if (failed || engine__plan_exec(p, &err) != 0) {
        log_error(MOD, "event=job-resume-failed job=%s", j->id);
        engine__job_release(j);
        return false;
    }
    return true;
}

static void rb_chunks_read(struct ejob *j, int failed)
{
    if (chunks_ready(j, &j->rb, failed))
        resume_active(j);
}

static void fwd_chunks_read(struct ejob *j, int failed)
{
    if (!chunks_ready(j, &j->fwd, failed))
        return;
    struct drv_err err;
    j->cur = &j->fwd;
    engine__nodes_refresh(j); /* the confirms the log says succeeded */
    if (j->st.rb_tasks > 0 || engine_phase_rollback(j->st.phase)) {
        if (engine__job_rollback_plan(j, &err) != 0) {
            log_error(MOD, "event=job-resume-failed job=%s error=\"%s\"", j->id, err.msg);
            engine__job_release(j);
            return;
        }
        j->cur = &j->rb;
        read_chunks(j, &j->rb, rb_chunks_read);
        return;
    }
    resume_active(j);
}

static void resume_built(void *arg)
{
    struct build *b = arg;
    struct ejob *j = b->j;
    j->building = false;
    if (j->own == EJ_HANDING_OVER)
        engine__job_idle(j);
    if (j->own != EJ_LOADING) {
        build_free(b);
        engine__job_unref(j);
        return;
    }
    if (b->rc || strcmp(b->out.sha, j->st.plan_sha) != 0) {
        /* Not the plan the job runs: a newer or older planner. Never guess. */
        log_error(MOD, "event=job-plan-mismatch job=%s error=\"%s\"", j->id,
                  b->rc ? b->err.msg : "the rebuilt plan's digest differs from the job's");
        build_free(b);
        engine__job_release(j);
        engine__job_unref(j);
        return;
    }
    j->po = b->out;
    memset(&b->out, 0, sizeof(b->out));
    build_free(b);
    struct drv_err err;
    if (engine__plan_init(&j->fwd, 'f', j->po.plan, NULL, &err) != 0) {
        engine__job_release(j);
        engine__job_unref(j);
        return;
    }
    json_t *snap = json_object_get(j->job, "snapshot");
    j->snapshot = json_is_object(snap) ? json_incref(snap) : json_deep_copy(j->cluster);
    snprintf(j->cluster_owner, sizeof(j->cluster_owner), "%s", row_str(j->cluster, "owner"));
    engine__nodes_init(j);
    j->nchunks_new = false; /* made by the start */
    j->ctx = make_ctx(j);
    read_chunks(j, &j->fwd, fwd_chunks_read);
    engine__job_unref(j);
}

static void resume(struct ejob *j)
{
    if (!j->inputs) {
        log_error(MOD, "event=job-resume-failed job=%s error=\"no pinned inputs\"", j->id);
        engine__job_release(j);
        return;
    }
    build_start(j, true, resume_built);
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
            json_object_get(json_object_get(j->props, t->node), "provider-id"))
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
    j->control_ms = engine__mono_ms();
    engine__control_apply(j, json_string_value(json_object_get(c, "want")));
    json_decref(c);
    engine__kick(j);
}

void engine__control_watch(struct ejob *j)
{
    char path[256];
    snprintf(path, sizeof(path), "/drover/jobs/%s/control", j->id);
    j->control_w = coord_watch_data(j->e->zk, path, on_control, j);
}

/* ---- the job's state machine --------------------------------------------------------------- */

static void rollback_built(struct ejob *j);

void engine__job_event(struct ejob *j, enum engine_job_event ev)
{
    if (j->own != EJ_ACTIVE)
        return;
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
        j->pg_job = true;
    }
    if (o.actions & ENGINE_ACT_RECORD) {
        j->state_dirty = true;
        j->pg_job = true;
    }
    if (o.actions & ENGINE_ACT_WITHDRAW)
        engine__withdraw(j);
    if (o.actions & ENGINE_ACT_BUILD_ROLLBACK)
        rollback_built(j);
    if (o.actions & ENGINE_ACT_FINISH)
        finish(j);
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
        finish(j);
        return;
    }
    j->st.rb_tasks = j->rb.n;
    snprintf(j->st.rb_sha, sizeof(j->st.rb_sha), "%s", j->rb.sha);
    j->cur = &j->rb;
    log_info(MOD, "event=rollback-planned job=%s tasks=%u", j->id, j->rb.n);
    engine__pg_rollback_tasks(j);
    if (j->rb.n == 0)
        engine__job_event(j, ENGINE_EV_PROGRESS);
}

/* ---- the end -----------------------------------------------------------------------------------
 */

static void finish(struct ejob *j)
{
    if (j->finishing)
        return;
    j->finishing = true;
    j->e->stats.finished++;
    log_info(MOD, "event=job-finishing job=%s status=%s error=\"%s\"", j->id,
             engine_phase_status(j->st.phase, j->st.cancel), j->st.error);
    engine__kick(j); /* commit.c flushes, then writes the end (engine__job_final) */
}
