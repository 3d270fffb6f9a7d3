/*
 * worker: take a task, record the attempt, run its plugin, complete the item
 * with the outcome (worker.h has the promises, docs/worker.md the story). This
 * file takes, records, completes and lives; CONTEXT to RUNNING (the job's
 * context, the plugin, its environment and lease) is run.c.
 *
 * One task's life (struct wtask), all on the loop thread:
 *
 *   TAKEN --record the attempt (run record created, checked against our
 *     |    claim in one multi-op)--> CONTEXT --job context read--> RUNNING
 *     |                      (NODES: the job's nodes map read, for plugins that want it)
 *     |                      (RESOURCES: the job's pinned resources version fetched, resources.c)
 *     |                                                              |
 *     | claim not ours / job gone                          plugin ended
 *     v                                                              v
 *   DONE <--complete the item + set the run record's outcome, one multi-op-- COMPLETING
 *
 *   any state --claim lost (coord's on_lost)--> the plugin is killed, nothing
 *     more is written for this delivery: another worker will run the attempt
 *     once our session has expired (after the plugin is dead).
 *   RUNNING --worker_stop past the grace--> plugin killed, item released
 *     (handed back at once), the run record stays without an outcome.
 *   RUNNING --the plugin's lease ran out (its guard killed it: this loop did
 *     not renew in time, so it may have been frozen past its session)-->
 *     event=lease-expired, the task counts as lost, nothing is written for
 *     the delivery; the item is released in case the claim is still ours
 *     (coord changes nothing when it is not), so it goes on at once.
 *
 * The lease (proc.c has the whole story): every plugin runs under a lease
 * that this loop renews every sixth of the session timeout, to the moment the
 * server last answered plus half the timeout. The server cannot expire the
 * session, and so give the item to another worker, before that moment plus
 * the whole timeout: a worker frozen (SIGSTOP, a stalled loop) loses its
 * plugins half a timeout before anyone else can take their items. A sixth:
 * coord keeps "last answered" within about a fifth of the timeout of now on a
 * healthy session (a probe every tenth), so a renewal always arrives before
 * the lease it extends runs out, with a tenth of the timeout to spare.
 *   A task taken before worker_stop goes on to run (within the grace); a take
 *     answered after it is released unrecorded.
 *
 * Invariants (wtask_check):
 *   1. A plugin is started only after the run record was created under the
 *      claim (st >= RUNNING implies recorded).
 *   2. A task that lost its claim never writes again (lost implies no
 *      further coord call on its item).
 *   3. running == number of tasks not DONE; outstanding takes + running <=
 *      concurrency while not stopping.
 *   4. A task whose plugin was killed by its lease is lost, and never
 *      completes (lease_expired implies lost and st != COMPLETING).
 *
 * Costs per task: the claim (shared multi-ops, coord), the record of the
 * attempt, one read of the job's context per job (cached), the complete; coord
 * gathers the records and completes of one loop turn into shared multi-ops. The ZooKeeper writes:
 * claim, run record, and the complete (claim and item deleted, run record set).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <jansson.h>

#include "clock.h"
#include "check.h"
#include "coord.h"
#include "log.h"
#include "seal.h"
#include "strmap.h"
#include "taskmsg.h"
#include "worker.h"
#include "worker_int.h"
#include "xalloc.h"
#include "zkpath.h"

#define MOD "worker"
#define TAKE_WAIT_MS 1000
#define PUMP_RETRY_MS 250 /* while the session is not connected */
#define RETRY_MS 200
#define AVOID_MS 5000 /* how long a retry that avoids this worker is left to the others */

static void pump(struct worker *w);

void worker__wtask_check(const struct wtask *t)
{
#if DRV_CHECKS
    if (t->st >= WT_RUNNING && t->st != WT_DONE && !t->recorded)
        abort(); /* 1 */
    if (t->proc && t->st != WT_RUNNING)
        abort();
    if (t->lease_expired && (!t->lost || t->st == WT_COMPLETING))
        abort(); /* 4 */
#else
    (void)t;
#endif
}

/* ---- tasks ----------------------------------------------------------------------- */

void worker__task_unref(struct wtask *t)
{
    if (--t->refs > 0)
        return;
    free(t->item_id);
    json_decref(t->item);
    free(t->run_path);
    json_decref(t->rec);
    free(t);
}

static void task_unlink(struct wtask *t)
{
    struct worker *w = t->w;
    for (struct wtask **pp = &w->tasks; *pp; pp = &(*pp)->next)
        if (*pp == t) {
            *pp = t->next;
            break;
        }
    w->running--;
}

static void maybe_stopped(struct worker *w)
{
    if (w->stopping && w->running == 0 && w->takes == 0 && w->stop_done) {
        void (*done)(void *) = w->stop_done;
        w->stop_done = NULL;
        if (w->grace_ev) {
            event_free(w->grace_ev);
            w->grace_ev = NULL;
        }
        /* What this worker cost ZooKeeper, per kind of request (bench/engine BENCH_DEBUG). */
        char zk[256];
        size_t o = 0;
        for (int k = 0; k < COORD_REQ_N && o < sizeof(zk); k++)
            o += (size_t)snprintf(zk + o, sizeof(zk) - o, " zk_%s=%llu", coord_req_name(k),
                                  (unsigned long long)coord_session_requests(w->zk, k));
        log_info(MOD, "event=worker-stopped worker=%s taken=%lu%s", w->id, w->stats.taken, zk);
        done(w->stop_arg);
    }
}

/* The task is over for this worker: forget it and take the next. */
void worker__task_finish(struct wtask *t)
{
    struct worker *w = t->w;
    if (t->st == WT_DONE)
        return;
    t->st = WT_DONE;
    if (t->res_dir) {
        worker__res_release(w->res, t->res_version);
        t->res_dir = NULL;
    }
    task_unlink(t);
    worker__task_unref(t);
    if (!w->freed) {
        pump(w);
        maybe_stopped(w);
    }
}

static struct wtask *task_by_item(struct worker *w, const char *item_id)
{
    for (struct wtask *t = w->tasks; t; t = t->next)
        if (strcmp(t->item_id, item_id) == 0)
            return t;
    return NULL;
}

static void on_claim_lost(struct coord_queue *q, const char *item_id, void *arg)
{
    struct worker *w = arg;
    struct wtask *t = task_by_item(w, item_id);
    if (!t || (t->lost && !t->lease_expired))
        return;
    log_warn(MOD, "event=claim-lost worker=%s task=%s state=%d", w->id, t->key, (int)t->st);
    if (t->lost)
        return; /* its lease ran out first (the same moment, seen by the guard): handled */
    t->lost = true;
    w->stats.lost++;
    if (t->proc) {
        worker__proc_kill(t->proc); /* invariant 3 of worker.h: before anyone else can run it */
    } else if (t->st == WT_RESOURCES) {
        worker__task_finish(
            t); /* nothing started; no callback holds it (on_resources looks it up) */
    } else if (t->st != WT_COMPLETING) {
        /* Recording or reading the context: their callbacks see lost and stop. */
    }
}

static void released_done(int rc, void *arg)
{
    struct wtask *t = arg;
    if (rc && rc != DRV_ECONFLICT)
        log_warn(MOD, "event=release-failed task=%s error=%s", t->key, drv_strerror(rc));
    worker__task_finish(t);
    worker__task_unref(t);
}

void worker__hand_back(struct wtask *t)
{
    t->refs++;
    t->w->stats.handed_back++;
    coord_queue_release(t->wq->q, t->item_id, released_done, t);
}

static void complete_plain_done(int rc, void *arg)
{
    struct wtask *t = arg;
    if (rc)
        log_warn(MOD, "event=complete-failed task=%s error=%s", t->key, drv_strerror(rc));
    worker__task_finish(t);
    worker__task_unref(t);
}

/* Drop an item whose job is gone (its run directory no longer exists). */
static void drop_item(struct wtask *t, const char *why)
{
    log_info(MOD, "event=task-dropped worker=%s task=%s reason=\"%s\"", t->w->id, t->key, why);
    t->refs++;
    coord_queue_complete(t->wq->q, t->item_id, complete_plain_done, t);
}

static void complete_retry(evutil_socket_t fd, short what, void *arg)
{
    struct wtask *t = arg;
    worker__complete_send(t);
    worker__task_unref(t);
}

static void later(struct wtask *t, void (*fn)(evutil_socket_t, short, void *), int ms)
{
    t->refs++;
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    event_base_once(t->w->base, -1, EV_TIMEOUT, fn, t, &tv);
}

static void on_completed(const struct coord_txn_result *r, void *arg)
{
    struct wtask *t = arg;
    struct worker *w = t->w;
    if (r->rc == 0) {
        if (strcmp(json_string_value(json_object_get(t->rec, "status")), "ok") == 0)
            w->stats.succeeded++;
        else
            w->stats.failed++;
        worker__task_finish(t);
    } else if (r->rc == DRV_ECONFLICT && r->failed_op < 0) {
        /* Not our claim any more: another delivery runs it; write nothing. */
        t->lost = true;
        worker__task_finish(t);
    } else if (r->failed_op >= 0) {
        /* The run record is gone: the job ended (cancelled, handed over and
         * finished...). The item still goes. */
        drop_item(t, "the job's run record is gone");
    } else if (!w->freed) {
        later(t, complete_retry, RETRY_MS);
    }
    worker__task_unref(t);
}

void worker__complete_send(struct wtask *t)
{
    if (t->lost || t->w->freed) {
        worker__task_finish(t);
        return;
    }
    char *data = json_dumps(t->rec, JSON_COMPACT);
    struct coord_txn *txn = coord_txn_new();
    coord_txn_set(txn, t->run_path, data, 0);
    free(data);
    t->refs++;
    coord_queue_complete_txn(t->wq->q, t->item_id, txn, on_completed, t);
}

/* ---- recording the attempt ------------------------------------------------------------ */

static void record_send(struct wtask *t);

static void record_retry(evutil_socket_t fd, short what, void *arg)
{
    struct wtask *t = arg;
    record_send(t);
    worker__task_unref(t);
}

static void on_recorded(const struct coord_txn_result *r, void *arg)
{
    struct wtask *t = arg;
    struct worker *w = t->w;
    if (w->freed) {
        worker__task_unref(t);
        return;
    }
    if (r->rc == 0) {
        t->recorded = true;
        /* Recorded while stopping too: it runs within the grace like the tasks already
           running (handing it back would leave a lost attempt and a retry for nothing). */
        if (t->lost)
            worker__task_finish(t);
        else
            worker__need_context(t);
    } else if (r->rc == DRV_ECONFLICT && r->failed_op < 0) {
        t->lost = true;
        worker__task_finish(t);
    } else if (r->failed_op >= 0) {
        drop_item(t, "the job has no run directory: it is over");
    } else {
        later(t, record_retry, RETRY_MS);
    }
    worker__task_unref(t);
}

static void record_send(struct wtask *t)
{
    if (t->lost) {
        worker__task_finish(t);
        return;
    }
    char *data = json_dumps(t->rec, JSON_COMPACT);
    struct coord_txn *txn = coord_txn_new();
    coord_txn_create(txn, t->run_path, data, 0);
    free(data);
    t->refs++;
    coord_queue_txn_commit(t->wq->q, t->item_id, txn, on_recorded, t);
}

/*
 * Avoidance: a retry after a failure here carries "avoid": this worker. It
 * gives the item back at once and passes it over for AVOID_MS (the queues'
 * skip filter), so that another worker takes it; after that, if nobody did,
 * it runs it itself.
 */
static bool avoid_skip_cb(const char *key, void *arg)
{
    struct worker *w = arg;
    int64_t *until = strmap_get(w->avoided, key);
    return until && *until > clock_mono_ms();
}

static void avoid_expire_cb(evutil_socket_t fd, short what, void *arg)
{
    struct worker *w = arg;
    int64_t now = clock_mono_ms(), next = 0;
    size_t pos = 0;
    const char *k;
    void *v;
    while (strmap_next(w->avoided, &pos, &k, &v)) {
        int64_t until = *(int64_t *)v;
        if (until <= now) {
            free(strmap_del(w->avoided, k)); /* allowed during the iteration */
        } else if (!next || until < next) {
            next = until;
        }
    }
    for (size_t i = 0; i < w->n_queues; i++)
        coord_queue_rescan(w->queues[i].q);
    if (next) {
        struct timeval tv = {(next - now) / 1000, ((next - now) % 1000) * 1000};
        event_add(w->avoid_ev, &tv);
    }
}

static void avoid_add(struct worker *w, const char *key)
{
    int64_t *until = strmap_get(w->avoided, key);
    if (!until) {
        until = xmalloc(sizeof(*until));
        strmap_put(w->avoided, key, until);
    }
    *until = clock_mono_ms() + AVOID_MS;
    if (!evtimer_pending(w->avoid_ev, NULL)) {
        struct timeval tv = {AVOID_MS / 1000, (AVOID_MS % 1000) * 1000 + 1000};
        event_add(w->avoid_ev, &tv);
    }
}

static void start_task(struct wqueue *wq, struct coord_queue_item *it)
{
    struct worker *w = wq->w;
    struct wtask *t = xcalloc(1, sizeof(*t));
    t->w = w;
    t->wq = wq;
    t->refs = 1;
    t->item_id = xstrdup(it->id);
    t->next = w->tasks;
    w->tasks = t;
    w->running++;
    w->stats.taken++;
    json_error_t je;
    struct drv_err err;
    t->item = json_loads(it->json, 0, &je);
    if (taskmsg_item_check(t->item, &err) != 0) {
        /* Nothing can run it, now or later: drop it loudly rather than loop. */
        snprintf(t->key, sizeof(t->key), "%s", it->id);
        log_error(MOD, "event=bad-task-item worker=%s item=%s error=\"%s\"", w->id, it->id,
                  err.msg);
        drop_item(t, err.msg);
        return;
    }
    const char *ph = json_string_value(json_object_get(t->item, "phase"));
    uint32_t idx = (uint32_t)json_integer_value(json_object_get(t->item, "idx"));
    unsigned att = (unsigned)json_integer_value(json_object_get(t->item, "attempt"));
    snprintf(t->job, sizeof(t->job), "%s", json_string_value(json_object_get(t->item, "job")));
    taskmsg_key(t->key, sizeof(t->key), t->job, ph[0], idx, att);
    const char *avoid = json_string_value(json_object_get(t->item, "avoid"));
    if (avoid && strcmp(avoid, w->id) == 0 && w->n_peers > 0 && !strmap_get(w->avoided, t->key)) {
        /* A retry after a failure here: leave it to another worker for a while. */
        log_info(MOD, "event=task-avoided worker=%s task=%s", w->id, t->key);
        avoid_add(w, t->key);
        worker__hand_back(t);
        return;
    }
    char name[200];
    taskmsg_run_name(name, sizeof(name), ph[0], idx, att, w->id, ++w->nonce ^ (unsigned)rand());
    t->run_path = zkpath_job_run(NULL, 0, t->job, name);
    char sess[32];
    snprintf(sess, sizeof(sess), "0x%llx", (unsigned long long)coord_session_id(w->zk));
    t->rec = json_pack("{s:i, s:s, s:s, s:s, s:I}", "v", TASKMSG_VERSION, "worker", w->id,
                       "session", sess, "item", it->id, "start", (json_int_t)clock_wall_ms());
    t->st = WT_RECORDING;
    record_send(t);
}

/* ---- taking ------------------------------------------------------------------------- */

static void on_take(struct coord_queue_item *it, int rc, void *arg)
{
    struct wqueue *wq = arg;
    struct worker *w = wq->w;
    w->takes--;
    if (w->freed) {
        coord_queue_item_free(it);
        return;
    }
    if (it) {
        if (w->stopping) {
            coord_queue_release(wq->q, it->id, NULL, NULL);
        } else {
            start_task(wq, it);
        }
        coord_queue_item_free(it);
    }
    pump(w);
    maybe_stopped(w);
}

static void pump_now(evutil_socket_t fd, short what, void *arg)
{
    struct worker *w = arg;
    while (!w->stopping && !w->freed && w->running + w->takes < w->concurrency &&
           coord_session_state(w->zk) == COORD_CONNECTED) {
        struct wqueue *wq = &w->queues[w->next_queue++ % w->n_queues];
        w->takes++;
        coord_queue_take(wq->q, TAKE_WAIT_MS, on_take, wq);
    }
    /* Not connected: look again soon. Nothing else would call pump when the same session
       comes back with no task running and no take waiting (no member change either). */
    if (!w->stopping && !w->freed && w->running + w->takes < w->concurrency &&
        coord_session_state(w->zk) != COORD_CONNECTED) {
        struct timeval tv = {0, PUMP_RETRY_MS * 1000};
        evtimer_add(w->pump_retry_ev, &tv);
    }
}

static void pump(struct worker *w)
{
    if (!w->freed)
        event_active(w->pump_ev, EV_TIMEOUT, 0);
}

static void on_peers(const struct coord_member_info *m, size_t n, void *arg)
{
    struct worker *w = arg;
    size_t peers = 0;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(m[i].id, w->id) == 0)
            continue;
        json_error_t je;
        json_t *j = json_loads(m[i].json, 0, &je);
        const char *tenant = json_string_value(json_object_get(j, "tenant"));
        bool shares = false;
        size_t k;
        json_t *c;
        json_array_foreach(json_object_get(j, "classes"), k, c) for (size_t q = 0; q < w->n_queues;
                                                                     q++) shares |=
            json_is_string(c) && strcmp(json_string_value(c), w->queues[q].cls) == 0;
        if (tenant && strcmp(tenant, w->tenant) == 0 && shares)
            peers++;
        json_decref(j);
    }
    w->n_peers = peers;
    pump(w); /* also a good moment: the session is likely connected */
}

/* ---- life ---------------------------------------------------------------------------- */

/* worker_new's way out once the strings, environment and plugins are made: all freed. */
static struct worker *new_failed(struct worker *w, struct worker__plugins *ps)
{
    worker__sandbox_free(w->sandbox);
    worker__plugins_free(ps);
    worker__env_free(w->env);
    free(w->id);
    free(w->tenant);
    free(w->resources);
    free(w->zk_hosts);
    free(w->zk_digest);
    free(w->version);
    free(w->host_conf);
    free(w);
    return NULL;
}

struct worker *worker_new(struct event_base *base, struct coord_session *zk,
                          const struct worker_opts *o, struct drv_err *err)
{
    if (!o->id || !o->tenant || !o->plugin_dir || o->concurrency < 1) {
        drv_err_set(err, DRV_EINVAL, 0,
                    "worker: id, tenant, plugin_dir and concurrency >= 1 are required");
        return NULL;
    }
    bool has_state = o->state_dir && *o->state_dir, has_url = o->api_url && *o->api_url;
    if (has_state != has_url) {
        drv_err_set(err, DRV_EINVAL, 0,
                    "worker.state_dir and worker.api_url go together (the resources sync): "
                    "set both, with worker.api_token_file, or neither");
        return NULL;
    }
    struct worker__plugins *ps;
    if (worker__plugins_load(o->plugin_dir, &ps, err) != 0)
        return NULL;
    worker__plugins_filter(ps, o->plugins);
    struct worker *w = xcalloc(1, sizeof(*w));
    w->base = base;
    w->zk = zk;
    w->plugins = ps;
    w->id = xstrdup(o->id);
    w->tenant = xstrdup(o->tenant);
    w->resources = o->resources_dir && *o->resources_dir ? xstrdup(o->resources_dir) : NULL;
    w->zk_hosts = o->zk_hosts ? xstrdup(o->zk_hosts) : NULL;
    w->zk_digest = o->zk_digest_file && *o->zk_digest_file ? xstrdup(o->zk_digest_file) : NULL;
    w->version = xstrdup(o->version ? o->version : "");
    w->host_conf = o->host_conf && *o->host_conf ? xstrdup(o->host_conf) : NULL;
    w->concurrency = o->concurrency;
    w->grace_ms = o->grace_ms;
    w->hold_fd = o->hold_fd;
    if (o->key) {
        memcpy(w->key, o->key, 32);
        w->has_key = true;
    }
    worker__env_build(w);
    if (worker__sandbox_new(w, o, err) != 0)
        return new_failed(w, ps);
    if (o->state_dir && *o->state_dir && o->api_url && *o->api_url) {
        struct worker__res_opts ro = {.tenant = w->tenant,
                                      .state_dir = o->state_dir,
                                      .api_url = o->api_url,
                                      .token_file = o->api_token_file ? o->api_token_file : "",
                                      .keep_ms = o->resources_keep_ms,
                                      .on_ready = worker__resources_ready_cb,
                                      .arg = w};
        ro.own_uid = (uid_t)-1;
        ro.own_gid = (gid_t)-1;
        worker__sandbox_owner(w->sandbox, &ro.own_uid, &ro.own_gid);
        w->res = worker__res_new(base, zk, &ro, err);
        if (!w->res)
            return new_failed(w, ps);
    }
    const char *classes = o->classes && *o->classes ? o->classes : "default";
    for (const char *p = classes; *p;) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        while (len && *p == ' ')
            p++, len--;
        if (len) {
            w->queues = xrealloc(w->queues, (w->n_queues + 1) * sizeof(*w->queues));
            struct wqueue *wq = &w->queues[w->n_queues++];
            memset(wq, 0, sizeof(*wq));
            wq->w = w;
            wq->cls = xstrndup(p, len);
        }
        if (!c)
            break;
        p = c + 1;
    }
    for (size_t i = 0; i < w->n_queues; i++) {
        struct wqueue *wq = &w->queues[i];
        wq->path = zkpath_queue(NULL, 0, w->tenant, wq->cls);
        struct coord_queue_opts qo = {.consumer_id = w->id,
                                      .on_lost = on_claim_lost,
                                      .lost_arg = w,
                                      .skip = avoid_skip_cb,
                                      .skip_arg = w};
        wq->q = coord_queue_open(zk, wq->path, &qo, NULL, NULL);
    }
    w->pump_ev = event_new(base, -1, 0, pump_now, w);
    w->pump_retry_ev = evtimer_new(base, pump_now, w);
    w->lease_ev = evtimer_new(base, worker__lease_renew_cb, w);
    worker__lease_arm(w);
    w->avoided = strmap_new();
    w->avoid_ev = evtimer_new(base, avoid_expire_cb, w);
    w->ctxs = worker__ctxs_new(zk, worker__run_ctx_ready_cb, worker__run_nodes_ready_cb, w);
    w->gc_ev = event_new(base, -1, EV_PERSIST, worker__ctx_gc_cb, w);
    struct timeval tv = {10, 0};
    event_add(w->gc_ev, &tv);
    w->peers = coord_group_watch(zk, ZKPATH_MEMBERS_WORKER, on_peers, w);
    srand((unsigned)(clock_wall_ms() ^ getpid()));
    log_info(MOD, "event=worker-ready worker=%s tenant=%s classes=%s concurrency=%u plugins=%zu",
             w->id, w->tenant, classes, w->concurrency, ps->n);
    pump(w);
    return w;
}

static void on_grace(evutil_socket_t fd, short what, void *arg)
{
    struct worker *w = arg;
    for (struct wtask *t = w->tasks; t; t = t->next)
        if (t->proc) {
            log_warn(MOD, "event=task-handed-back worker=%s task=%s reason=\"grace over\"", w->id,
                     t->key);
            t->killed_by_stop = true;
            worker__proc_kill(t->proc);
        }
    /* Tasks still waiting for their resources go back too. */
    bool again = true;
    while (again) {
        again = false;
        for (struct wtask *t = w->tasks; t && !again; t = t->next)
            if (t->st == WT_RESOURCES && !t->lost) {
                t->st = WT_COMPLETING;
                worker__hand_back(t); /* may change the list */
                again = true;
            }
    }
}

void worker_stop(struct worker *w, void (*done)(void *arg), void *arg)
{
    if (w->stopping)
        return;
    w->stopping = true;
    w->stop_done = done;
    w->stop_arg = arg;
    log_info(MOD, "event=worker-stopping worker=%s running=%zu grace_ms=%d", w->id, w->running,
             w->grace_ms);
    w->grace_ev = evtimer_new(w->base, on_grace, w);
    struct timeval tv = {w->grace_ms / 1000, (w->grace_ms % 1000) * 1000};
    evtimer_add(w->grace_ev, &tv);
    maybe_stopped(w);
}

size_t worker_running(const struct worker *w)
{
    return w->running;
}

void worker_get_stats(const struct worker *w, struct worker_stats *st)
{
    *st = w->stats;
}

void worker_free(struct worker *w)
{
    if (!w)
        return;
    w->freed = true;
    worker__ctxs_close(w->ctxs);
    for (struct wtask *t = w->tasks; t; t = t->next)
        if (t->proc)
            worker__proc_kill(t->proc);
    /* Let the killed plugins be reaped so their procs free themselves. */
    while (w->tasks) {
        bool any = false;
        for (struct wtask *t = w->tasks; t; t = t->next)
            any |= t->proc != NULL;
        if (!any)
            break;
        event_base_loop(w->base, EVLOOP_ONCE);
    }
    while (w->tasks) {
        struct wtask *t = w->tasks;
        w->tasks = t->next;
        worker__task_unref(t);
    }
    worker__res_free(w->res);
    coord_group_free(w->peers);
    for (size_t i = 0; i < w->n_queues; i++) {
        coord_queue_close(w->queues[i].q);
        free(w->queues[i].cls);
        free(w->queues[i].path);
    }
    free(w->queues);
    worker__ctxs_free(w->ctxs);
    if (w->grace_ev)
        event_free(w->grace_ev);
    event_free(w->pump_ev);
    event_free(w->gc_ev);
    event_free(w->pump_retry_ev);
    event_free(w->lease_ev);
    event_free(w->avoid_ev);
    size_t pos = 0;
    void *v;
    while (strmap_next(w->avoided, &pos, NULL, &v))
        free(v);
    strmap_free(w->avoided);
    worker__plugins_free(w->plugins);
    worker__env_free(w->env);
    worker__sandbox_free(w->sandbox);
    explicit_bzero(w->key, sizeof(w->key));
    free(w->id);
    free(w->tenant);
    free(w->resources);
    free(w->zk_hosts);
    free(w->zk_digest);
    free(w->version);
    free(w->host_conf);
    free(w);
}
