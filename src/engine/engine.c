/*
 * engine: which jobs this node owns (engine.h has the promises).
 *
 * Ownership recipe:
 *   1. Every engine watches /drover/members/droverd (the ring) and the
 *      children of /drover/jobs (the announced jobs, one znode per job that
 *      has not ended).
 *   2. After either changes (reconcile): for each announced job, the ring
 *      names one member. If it is this one and the job has no object here,
 *      one is made and contends for the job's lock, waiting as long as it
 *      takes (the last owner may be finishing a write). If it names another
 *      member and the job is here, the job is handed over: no new work, the
 *      write in flight finishes, the lock is released at once, so the next
 *      owner, waiting on it, takes it within a round trip.
 *   3. A job's znode that disappears (it ended) drops any object left here.
 *   4. A draining member keeps its points in the ring but lookups step over
 *      it, so only its jobs move (coord_ring_add). engine_stop makes this
 *      node take nothing and hand everything over; engine_resume (undrain)
 *      makes it take its share again.
 *   5. Every engine.resync_interval the job list and the ring are read again
 *      whatever the watches said (on_resync): a lost watch costs a job one
 *      interval, not for ever. A swept job leaves the list at once.
 *
 * Two members with different views of the ring for a moment both contend;
 * the lock decides, and the one that should not own the job releases it as
 * soon as its view catches up. Fencing (job.c) makes a stale owner's writes
 * fail, so a wrong view costs time, never correctness.
 *
 * Cost: a reconcile is O(jobs announced + jobs here), on a membership or job
 * list change; a job's lock costs one contender znode and one exists-watch; a
 * resync one listing of the jobs, one of each group and one read per member.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "assign.h"
#include "batch.h"
#include "coord.h"
#include "engine_int.h"
#include "log.h"
#include "loopq.h"
#include "store.h"
#include "strmap.h"
#include "watchdog.h"
#include "workpool.h"
#include "xalloc.h"
#include "zkpath.h"

#define MOD "engine"
#define TXN_BUDGET (256 * 1024)

/* ---- offload: heavy pure work on a bounded pool -------------------------------------- */

/*
 * Plans are built on e->plan_threads threads (engine.plan_threads), never on the loop and
 * never one thread each: a node that takes many jobs at once (a failover, an undrain) would
 * otherwise start as many threads, each holding a plan's inputs and result, and compete
 * with the loop for the cores. The pool takes only what its threads can run now
 * (max_queued 0); the rest waits here, in the order asked, and is submitted as builds end.
 * So every build runs, at most plan_threads at a time.
 */
struct offload {
    struct engine *e;
    void (*fn)(void *);
    void (*done)(void *);
    void *arg;
    struct offload *next; /* waiting for a thread */
};

static void offload_work(void *arg)
{
    struct offload *o = arg;
    struct engine *e = o->e;
    int busy = atomic_fetch_add(&e->plan_busy, 1) + 1;
    int max = atomic_load(&e->plan_busy_max);
    while (busy > max && !atomic_compare_exchange_weak(&e->plan_busy_max, &max, busy))
        ;
    o->fn(o->arg);
    atomic_fetch_sub(&e->plan_busy, 1);
}

static void offload_pump(struct engine *e);

static void offload_done(void *arg, bool cancelled)
{
    struct offload *o = arg;
    struct engine *e = o->e;
    (void)cancelled; /* only at engine_free, after every build was waited for */
    e->offloads--;
    log_debug(MOD, "event=offload-done node=%s threads=%d busy_max=%d waiting=%zu", e->node_id,
              e->plan_threads, atomic_load(&e->plan_busy_max), e->n_offload_wait);
    o->done(o->arg);
    free(o);
    offload_pump(e);
}

/* Hand waiting work to the pool while it has an idle thread. */
static void offload_pump(struct engine *e)
{
    while (e->offload_wait) {
        struct offload *o = e->offload_wait;
        if (workpool_submit(e->plans, offload_work, offload_done, o) != 0)
            return; /* every thread busy: the next completion pumps again */
        e->offload_wait = o->next;
        if (!e->offload_wait)
            e->offload_tail = NULL;
        e->n_offload_wait--;
    }
}

void engine__offload_init(struct engine *e, int threads)
{
    e->plan_threads = threads > 0 ? (threads > 64 ? 64 : threads) : ENGINE_PLAN_THREADS;
    struct workpool_opts po = {
        .name = "plan", .threads = e->plan_threads, .max_queued = 0, .nice = 5};
    e->plans = workpool_new(e->base, &po);
}

void engine__offload_free(struct engine *e)
{
    /* Every build reports to the loop (its done frees what it holds): wait for them. */
    while (e->offloads > 0)
        event_base_loop(e->base, EVLOOP_ONCE);
    workpool_free(e->plans);
    e->plans = NULL;
}

void engine__offload(struct engine *e, void (*fn)(void *), void (*done)(void *), void *arg)
{
    struct offload *o = xcalloc(1, sizeof(*o));
    o->e = e;
    o->fn = fn;
    o->done = done;
    o->arg = arg;
    e->offloads++;
    if (e->offload_tail)
        e->offload_tail->next = o;
    else
        e->offload_wait = o;
    e->offload_tail = o;
    e->n_offload_wait++;
    offload_pump(e);
}

/* ---- queues ------------------------------------------------------------------------ */

/*
 * The first attempt's outcome only. A failed open is not final: coord retries it with
 * backoff until it works, and dispatch (commit.c) asks coord_queue_is_open each round, so
 * the jobs of this tenant and class wait for it instead of never dispatching here again.
 */
static void queue_opened(int rc, void *arg)
{
    struct equeue *q = arg;
    if (rc)
        log_warn(MOD, "event=queue-open-failed path=%s error=%s retry=backoff", q->path,
                 drv_strerror(rc));
}

struct equeue *engine__queue(struct engine *e, const char *tenant, const char *cls)
{
    char key[300];
    snprintf(key, sizeof(key), "%s/%s", tenant, cls);
    struct equeue *q = strmap_get(e->queues, key);
    if (!q) {
        q = xcalloc(1, sizeof(*q));
        q->path = zkpath_queue(NULL, 0, tenant, cls);
        struct coord_queue_opts qo = {.consumer_id = e->node_id};
        q->q = coord_queue_open(e->zk, q->path, &qo, queue_opened, q);
        strmap_put(e->queues, key, q);
    }
    return q;
}

/* ---- ownership ---------------------------------------------------------------------- */

bool engine__announced(const struct engine *e, const char *id)
{
    size_t lo = 0, hi = e->n_ids;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(e->ids[mid], id);
        if (c == 0)
            return true;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

bool engine__ring_mine(struct engine *e, const char *id)
{
    if (e->stopping || !e->have_ring)
        return false;
    const char *owner = coord_ring_lookup(e->ring, id);
    return owner && strcmp(owner, e->node_id) == 0;
}

void engine__reconcile(struct engine *e)
{
    if (!e->have_ring || !e->have_ids)
        return;
    for (size_t i = 0; i < e->n_ids; i++)
        if (engine__ring_mine(e, e->ids[i]) && !strmap_get(e->jobs, e->ids[i]))
            strmap_put(e->jobs, e->ids[i], engine__job_new(e, e->ids[i]));
    /* Jobs here that the ring moved, or that ended (their znode is gone). */
    size_t pos = 0, n = strmap_count(e->jobs), k = 0;
    struct ejob **move = xcalloc(n + 1, sizeof(*move));
    const char *id;
    void *v;
    while (strmap_next(e->jobs, &pos, &id, &v))
        if (!engine__ring_mine(e, id) || !engine__announced(e, id))
            move[k++] = v;
    for (size_t i = 0; i < k; i++)
        engine__job_handover(move[i]);
    free(move);
}

static void reconcile_soon(evutil_socket_t fd, short what, void *arg)
{
    struct engine *e = arg;
    e->reconcile_pending = false;
    engine__reconcile(e);
}

void engine__job_gone(struct engine *e, struct ejob *j)
{
    engine__watchdog_forget(j);
    engine__assign_job_gone(j);
    if (j->acl_bound) {
        /* Nothing more of it is created on this session: its znodes' tenant is forgotten
           (counted: a new owner object of the same job binds again). */
        char jp[128];
        coord_acl_unbind(e->zk, zkpath_job(jp, sizeof(jp), j->id));
        j->acl_bound = false;
    }
    if (strmap_get(e->jobs, j->id) == j) {
        strmap_del(e->jobs, j->id);
        engine__job_unref(j);
    }
    /* A job lost here may still be ours (a fenced write refused, a lock deleted): take it
     * up again soon rather than at the next tick. */
    if (!e->stopping && !e->reconcile_pending) {
        e->reconcile_pending = true;
        struct timeval tv = {0, 200 * 1000};
        evtimer_add(e->soon, &tv);
    }
    if (e->stopping && strmap_count(e->jobs) == 0 && e->stop_done) {
        void (*done)(void *) = e->stop_done;
        e->stop_done = NULL;
        log_info(MOD, "event=engine-stopped node=%s", e->node_id);
        done(e->stop_arg);
    }
}

/* The format new jobs are written in: the lowest any member writes (format.h). */
static int fleet_format(const struct coord_member_info *m, size_t n)
{
    int f = DROVER_FORMAT_VERSION;
    for (size_t i = 0; i < n; i++) {
        json_error_t je;
        json_t *d = m[i].json && *m[i].json ? json_loads(m[i].json, 0, &je) : NULL;
        json_int_t v = json_integer_value(json_object_get(d, "format"));
        json_decref(d);
        if (v < 1)
            v = 1; /* a member that says none predates formats: 1 */
        if (v < f)
            f = (int)v;
    }
    return f;
}

/* What the ring is made of (ids in order, weights, draining flags), as text to compare. */
static char *ring_signature(const struct coord_member_info *m, size_t n)
{
    size_t cap = 64, len = 0;
    char *s = xmalloc(cap);
    s[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        json_t *j = json_loads(m[i].json ? m[i].json : "", 0, NULL);
        char one[300];
        int k = snprintf(one, sizeof(one), "%s/%lld/%d;", m[i].id,
                         (long long)json_integer_value(json_object_get(j, "weight")),
                         json_is_true(json_object_get(j, "draining")));
        json_decref(j);
        if (k < 0)
            continue;
        while (len + (size_t)k + 1 > cap)
            s = xrealloc(s, cap *= 2);
        memcpy(s + len, one, (size_t)k + 1);
        len += (size_t)k;
    }
    return s;
}

/* Do all members keep run records after their rows (ENGINE_RUNS_KEEP)? A build before
   that merges the records it finds on resume in the listing's order, so records are kept
   only when every member that may resume the job merges them in the order they ended. */
static bool fleet_keeps_runs(const struct coord_member_info *m, size_t n)
{
    bool all = true;
    for (size_t i = 0; i < n && all; i++) {
        json_error_t je;
        json_t *d = m[i].json && *m[i].json ? json_loads(m[i].json, 0, &je) : NULL;
        all = json_is_true(json_object_get(d, "keeps_runs"));
        json_decref(d);
    }
    return all;
}

/* Does every member know the schema with job_plans and the catalogue by version? A member
   that says no schema predates them. */
static bool fleet_slim_jobs(const struct coord_member_info *m, size_t n)
{
    bool all = true;
    for (size_t i = 0; i < n && all; i++) {
        json_error_t je;
        json_t *d = m[i].json && *m[i].json ? json_loads(m[i].json, 0, &je) : NULL;
        all = json_integer_value(json_object_get(d, "schema")) >= STORE_SCHEMA_JOB_PLANS;
        json_decref(d);
    }
    return all;
}

/* Members other than this node that are not draining and do not say they lost PostgreSQL. */
static size_t peers_serving(const struct engine *e, const struct coord_member_info *m, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(m[i].id, e->node_id) == 0)
            continue;
        json_t *j = json_loads(m[i].json ? m[i].json : "", 0, NULL);
        k += j && !json_is_true(json_object_get(j, "draining")) &&
             !json_is_false(json_object_get(j, "postgres"));
        json_decref(j);
    }
    return k;
}

size_t engine_peers_serving(const struct engine *e)
{
    return e->peers_serving;
}

static void on_members(const struct coord_member_info *m, size_t n, void *arg)
{
    struct engine *e = arg;
    e->peers_serving = peers_serving(e, m, n);
    bool keep = fleet_keeps_runs(m, n);
    if (keep != e->keep_runs)
        log_info(MOD, "event=run-records-kept node=%s kept=%d", e->node_id, (int)keep);
    e->keep_runs = keep;
    bool slim = fleet_slim_jobs(m, n);
    if (slim != e->slim_jobs)
        log_info(MOD, "event=job-plans-kept-apart node=%s kept_apart=%d", e->node_id, (int)slim);
    e->slim_jobs = slim;
    int f = fleet_format(m, n);
    if (f != e->write_format)
        log_info(MOD, "event=format-chosen node=%s format=%d builds_up_to=%d", e->node_id, f,
                 DROVER_FORMAT_VERSION);
    e->write_format = f;
    engine__assign_members(e, m, n);
    coord_ring_free(e->ring);
    e->ring = coord_ring_from_members(m, n, 0);
    e->have_ring = true;
    engine__reconcile(e);
    /* A member that left, joined or drains moves shares of the periodic duties: take ours
       now, not at the next tick. Only then: members rewrite their data for other reasons
       (their owned-job counts), which change nothing here. */
    char *sig = ring_signature(m, n);
    if (!e->ring_sig || strcmp(sig, e->ring_sig) != 0) {
        log_info(MOD, "event=ring-changed node=%s members=%zu", e->node_id, n);
        free(e->ring_sig);
        e->ring_sig = sig;
        engine__janitor(e);
    } else {
        free(sig);
    }
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The list becomes names (rc 0) or empty (ENOENT), sorted. */
static void set_ids(struct engine *e, int rc, char *const *names, size_t n)
{
    for (size_t i = 0; i < e->n_ids; i++)
        free(e->ids[i]);
    free(e->ids);
    e->ids = xcalloc(n + 1, sizeof(char *));
    e->n_ids = 0;
    for (size_t i = 0; rc == 0 && i < n; i++)
        e->ids[e->n_ids++] = xstrdup(names[i]);
    qsort(e->ids, e->n_ids, sizeof(char *), cmp_str);
    e->have_ids = true;
}

static void on_jobs(int rc, char *const *names, size_t n, const struct coord_stat *st, void *arg)
{
    struct engine *e = arg;
    if (rc != 0 && rc != DRV_ENOENT)
        return; /* the watcher reads again by itself */
    set_ids(e, rc, names, n);
    engine__reconcile(e);
}

void engine__ids_forget(struct engine *e, const char *id)
{
    size_t lo = 0, hi = e->n_ids;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(e->ids[mid], id);
        if (c == 0) {
            free(e->ids[mid]);
            memmove(&e->ids[mid], &e->ids[mid + 1], (e->n_ids - mid - 1) * sizeof(char *));
            e->n_ids--;
            return;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
}

/* ---- lost watches: the periodic resync ------------------------------------------------ */

/*
 * Every engine.resync_interval the job list is read apart from its watcher (a plain read,
 * whatever state the watcher is in), and the droverd group is read again whole (members
 * and their data), the workers' listed again: a watch that the server or a reconnection
 * lost, or a watcher left waiting, then costs a job at most one interval, not for ever.
 * Reads on one session are answered in order, so the latest answer, the watcher's or this
 * one's, is the newest list. A list found stale is logged (event=jobs-list-stale): it
 * means a watch was lost.
 */
struct resync_read {
    struct engine *e; /* NULL once the engine is freed: the answer is dropped */
};

/* How many of a (sorted) are not in b (sorted). */
static size_t missing_from(char *const *a, size_t na, char *const *b, size_t nb, const char **first)
{
    size_t k = 0, j = 0;
    for (size_t i = 0; i < na; i++) {
        while (j < nb && strcmp(b[j], a[i]) < 0)
            j++;
        if (j < nb && strcmp(b[j], a[i]) == 0)
            continue;
        if (k++ == 0)
            *first = a[i];
    }
    return k;
}

static void on_jobs_resynced(int rc, char *const *names, size_t n, void *arg)
{
    struct resync_read *rd = arg;
    struct engine *e = rd->e;
    free(rd);
    if (!e)
        return;
    e->resync_rd = NULL;
    if (rc != 0 && rc != DRV_ENOENT)
        return; /* the next interval reads again */
    char **sorted = xcalloc(n + 1, sizeof(char *));
    for (size_t i = 0; rc == 0 && i < n; i++)
        sorted[i] = names[i];
    size_t m = rc == 0 ? n : 0;
    qsort(sorted, m, sizeof(char *), cmp_str);
    const char *first_added = "", *first_removed = "";
    size_t added = missing_from(sorted, m, e->ids, e->n_ids, &first_added);
    size_t removed = missing_from(e->ids, e->n_ids, sorted, m, &first_removed);
    if (added || removed) {
        e->stale_lists++;
        log_warn(MOD,
                 "event=jobs-list-stale node=%s added=%zu removed=%zu first_added=%s "
                 "first_removed=%s why=\"no watch told of them\"",
                 e->node_id, added, removed, *first_added ? first_added : "-",
                 *first_removed ? first_removed : "-");
    }
    free(sorted);
    if (added || removed || !e->have_ids) {
        set_ids(e, rc, names, n);
        engine__reconcile(e);
    }
}

static void on_resync(evutil_socket_t fd, short what, void *arg)
{
    struct engine *e = arg;
    if (!e->resync_rd) {
        e->resync_rd = xcalloc(1, sizeof(*e->resync_rd));
        e->resync_rd->e = e;
        coord_children(e->zk, ZKPATH_JOBS, on_jobs_resynced, e->resync_rd);
    }
    coord_group_resync(e->members, true);
    coord_group_resync(e->workers, false);
}

/* The watchdog over every job owned here (the tick, and a change of the workers: a job
   says at once that its worker came back). Referenced first: a job it stalls may finish
   and leave the map while the others are looked at. */
static void watch_jobs(struct engine *e)
{
    size_t n = strmap_count(e->jobs), k = 0, pos = 0;
    struct ejob **v = xcalloc(n + 1, sizeof(*v));
    const char *id;
    void *val;
    while (k < n && strmap_next(e->jobs, &pos, &id, &val)) {
        v[k] = val;
        engine__job_ref(v[k++]);
    }
    for (size_t i = 0; i < k; i++) {
        if (engine__job_alive(v[i]))
            engine__watchdog(v[i]);
        engine__job_unref(v[i]);
    }
    free(v);
}

static void on_workers(const struct coord_member_info *m, size_t n, void *arg)
{
    engine__workers_seen(arg, m, n);
    engine__assign_workers(arg, m, n);
    watch_jobs(arg);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct engine *e = arg;
    engine__reconcile(e); /* a lock that failed to be taken is tried again here */
    engine__janitor(e);
    watch_jobs(e);
}

struct engine *engine_new(struct event_base *base, struct coord_session *zk, struct store *db,
                          const struct engine_opts *o, struct drv_err *err)
{
    if (!o->node_id || !*o->node_id) {
        drv_err_set(err, DRV_EINVAL, 0, "engine: node_id is required");
        return NULL;
    }
    struct engine *e = xcalloc(1, sizeof(*e));
    e->base = base;
    e->zk = zk;
    e->db = db;
    e->catalogs = o->catalogs;
    e->node_id = xstrdup(o->node_id);
    e->max_failures = o->max_failures ? o->max_failures : 3;
    e->max_in_flight = o->max_in_flight;
    /* Fault injection for the tests (docs/testing.md): die where a crash is hardest to get. */
    const char *fault = getenv("DROVER_FAULT");
    e->fault_final = fault && strcmp(fault, "crash-before-final-write") == 0;
    e->no_rollback = o->no_rollback;
    e->write_format = DROVER_FORMAT_MIN_READ;
    e->budget = o->txn_budget ? o->txn_budget : TXN_BUDGET;
    /* The most one multi-op may carry: the session's limit less the multi-op's own framing
       and the fence. A budget over it would make rounds that coord refuses every time. */
    e->zk_max = coord_session_max_request(zk) - COORD_TXN_OVERHEAD;
    if (e->budget > e->zk_max)
        e->budget = e->zk_max;
    e->task_timeout_ms = o->task_timeout_ms;
    if (o->key) {
        memcpy(e->key, o->key, 32);
        e->has_key = true;
    }
    e->jobs = strmap_new();
    e->queues = strmap_new();
    engine__batch_init(e);
    engine__watchdog_init(e, o->no_worker_timeout_ms, o->job_deadline_ms);
    engine__assign_init(e);
    engine__metrics_init(e);
    e->lq = loopq_new(base);
    engine__offload_init(e, o->plan_threads);
    coord_ensure_path(zk, ZKPATH_JOBS, NULL, NULL);
    e->members = coord_group_watch(zk, ZKPATH_MEMBERS_DROVERD, on_members, e);
    e->jobs_w = coord_watch_children(zk, ZKPATH_JOBS, on_jobs, e);
    e->workers = coord_group_watch_checked(zk, ZKPATH_MEMBERS_WORKER, "tenant", on_workers, e);
    e->soon = evtimer_new(base, reconcile_soon, e);
    e->tick = event_new(base, -1, EV_PERSIST, on_tick, e);
    struct timeval tv = {5, 0};
    event_add(e->tick, &tv);
    int rs = o->resync_ms > 0 ? o->resync_ms : 30000;
    e->resync = event_new(base, -1, EV_PERSIST, on_resync, e);
    struct timeval rtv = {rs / 1000, (rs % 1000) * 1000};
    event_add(e->resync, &rtv);
    log_info(MOD,
             "event=engine-started node=%s max_failures=%u plan_threads=%d builds_up_to=%d "
             "reads_from=%d",
             e->node_id, e->max_failures, e->plan_threads, DROVER_FORMAT_VERSION,
             DROVER_FORMAT_MIN_READ);
    return e;
}

void engine_stop(struct engine *e, void (*done)(void *arg), void *arg)
{
    if (e->stopping)
        return;
    e->stopping = true;
    e->stop_done = done;
    e->stop_arg = arg;
    log_info(MOD, "event=engine-stopping node=%s owned=%zu", e->node_id, strmap_count(e->jobs));
    engine__reconcile(e);
    if (strmap_count(e->jobs) == 0 && e->stop_done) {
        e->stop_done = NULL;
        done(arg);
    }
}

void engine_resume(struct engine *e)
{
    if (!e->stopping)
        return;
    e->stopping = false;
    e->stop_done = NULL;
    e->stop_arg = NULL;
    log_info(MOD, "event=engine-resumed node=%s", e->node_id);
    /* Jobs still being handed over take themselves up again once gone (engine__job_gone). */
    engine__reconcile(e);
}

json_t *engine_owned(const struct engine *e)
{
    json_t *a = json_array();
    size_t pos = 0;
    const char *id;
    void *v;
    while (strmap_next(e->jobs, &pos, &id, &v))
        if (((struct ejob *)v)->own >= EJ_LOADING && ((struct ejob *)v)->own <= EJ_FINISHING)
            json_array_append_new(a, json_string(id));
    return a;
}

void engine_free(struct engine *e)
{
    if (!e)
        return;
    e->stopping = true;
    coord_watcher_free(e->jobs_w);
    coord_group_free(e->members);
    coord_group_free(e->workers);
    size_t pos = 0;
    void *v;
    while (strmap_next(e->jobs, &pos, NULL, &v)) {
        struct ejob *j = v;
        engine__job_lost(j, "engine stopped");
    }
    /* engine__job_lost removed them; what is left holds references only. Plans being
     * built on threads report to the loop: wait for them. */
    engine__offload_free(e);
    engine__ensemble_free(e);
    engine__batch_free(e);
    strmap_free(e->jobs);
    pos = 0;
    while (strmap_next(e->queues, &pos, NULL, &v)) {
        struct equeue *q = v;
        coord_queue_close(q->q);
        free(q->path);
        free(q);
    }
    strmap_free(e->queues);
    engine__metrics_free(e);
    engine__watchdog_free(e);
    engine__assign_free(e);
    free(e->ring_sig);
    coord_ring_free(e->ring);
    for (size_t i = 0; i < e->n_ids; i++)
        free(e->ids[i]);
    free(e->ids);
    event_free(e->tick);
    event_free(e->resync);
    if (e->resync_rd)
        e->resync_rd->e = NULL; /* its answer comes while the session closes: dropped */
    event_free(e->soon);
    loopq_free(e->lq);
    explicit_bzero(e->key, sizeof(e->key));
    free(e->node_id);
    free(e);
}
