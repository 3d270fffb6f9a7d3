/*
 * worker: the worker's life (worker.h has the promises, docs/worker.md the story):
 * worker_new opens the queues and their slots (slot.c) and watches the peers, worker_stop drains
 * (tasks taken go on within the grace, then their plugins are killed and the items handed back),
 * worker_free tears it all down. The loop is take.c (taking), attempt.c (a task's attempt on the
 * books; its design note has the task's states and invariants) and run.c (from the job's context to
 * the plugin's outcome). Loop thread only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <jansson.h>

#include "clock.h"
#include "coord.h"
#include "fault.h"
#include "log.h"
#include "strmap.h"
#include "worker.h"
#include "worker_int.h"
#include "xalloc.h"
#include "zkpath.h"

#define MOD "worker"

void worker__maybe_stopped(struct worker *w)
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
        /* And what its takes cost, summed over its queues (coord_queue_counters). */
        struct coord_queue_counters c = {0};
        for (size_t i = 0; i < w->n_queues; i++) {
            struct coord_queue_counters one;
            coord_queue_counters(w->queues[i].q, &one);
            c.listings += one.listings;
            c.listings_empty += one.listings_empty;
            c.claims_listings += one.claims_listings;
            c.skipped += one.skipped;
            c.claims += one.claims;
            c.claims_failed += one.claims_failed;
            c.delivered += one.delivered;
            c.idles += one.idles;
            c.wakes += one.wakes;
        }
        /* And its slots' (coord_slots_counters). */
        struct coord_slots_counters sc = {0};
        for (size_t i = 0; i < w->n_queues; i++) {
            if (!w->queues[i].slots)
                continue;
            struct coord_slots_counters one = coord_slots_counters(w->queues[i].slots);
            sc.assigned += one.assigned;
            sc.lost += one.lost;
            sc.offers += one.offers;
            sc.freed_self += one.freed_self;
        }
        log_info(MOD,
                 "event=worker-stopped worker=%s taken=%lu too_new=%lu%s q_listings=%llu "
                 "q_listings_empty=%llu "
                 "q_skipped=%llu q_claims_listings=%llu q_claims=%llu q_claims_failed=%llu "
                 "q_delivered=%llu "
                 "q_idles=%llu q_wakes=%llu s_assigned=%llu s_lost=%llu s_offers=%llu "
                 "s_freed_self=%llu",
                 w->id, w->stats.taken, w->stats.too_new, zk, (unsigned long long)c.listings,
                 (unsigned long long)c.listings_empty, (unsigned long long)c.skipped,
                 (unsigned long long)c.claims_listings, (unsigned long long)c.claims,
                 (unsigned long long)c.claims_failed, (unsigned long long)c.delivered,
                 (unsigned long long)c.idles, (unsigned long long)c.wakes,
                 (unsigned long long)sc.assigned, (unsigned long long)sc.lost,
                 (unsigned long long)sc.offers, (unsigned long long)sc.freed_self);
        done(w->stop_arg);
    }
}

/*
 * A member that came back under a new session (a worker restarted under the same
 * name before its old session expired: coord_member_join replaced its znode) leaves
 * claims of its old session behind. They die when that session expires, but the view
 * does not change then (the name is still there), and with a view nobody watches the
 * claims (queue_home.c): their items would wait for the next put in their shards. So
 * on a new session under a known name, and at this worker's first view (its own
 * predecessor's, which no view shows), the queues are looked at again once the old
 * session must have expired: after its timeout, the server's expiry tick, and a margin.
 */
static void reclaim_cb(evutil_socket_t fd, short what, void *arg)
{
    struct worker *w = arg;
    (void)fd;
    (void)what;
    log_info(MOD, "event=queues-rescan worker=%s reason=member-came-back", w->id);
    for (size_t i = 0; i < w->n_queues; i++)
        coord_queue_rescan(w->queues[i].q);
}

static void peers_note_sessions(struct worker *w, const struct coord_member_info *m, size_t n)
{
    bool came_back = w->peer_sessions == NULL; /* the first view */
    struct strmap *now = strmap_new();
    for (size_t i = 0; i < n; i++) {
        int64_t *was = w->peer_sessions ? strmap_get(w->peer_sessions, m[i].id) : NULL;
        if (was && *was && m[i].session && *was != m[i].session) {
            log_info(MOD, "event=member-came-back worker=%s member=%s", w->id, m[i].id);
            came_back = true;
        }
        int64_t *v = xmalloc(sizeof(*v));
        *v = m[i].session;
        free(strmap_put(now, m[i].id, v));
    }
    if (w->peer_sessions) {
        size_t pos = 0;
        void *v;
        while (strmap_next(w->peer_sessions, &pos, NULL, &v))
            free(v);
        strmap_free(w->peer_sessions);
    }
    w->peer_sessions = now;
    if (came_back) {
        int ms = coord_session_timeout_ms(w->zk);
        ms = (ms > 0 ? ms : 10000) * 3 / 2 + 2000;
        struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
        event_add(w->reclaim_ev, &tv); /* a later one moves it later */
    }
}

static void on_peers(const struct coord_member_info *m, size_t n, void *arg)
{
    struct worker *w = arg;
    size_t peers = 0;
    peers_note_sessions(w, m, n);
    /* Per queue, the members that consume it too (same tenant, same class): its view of
       its consumers, from which coord computes which shards wake this worker when idle
       (coord_queue_set_peers: a put wakes its shard's homes, not every idle worker). */
    size_t *n_ids = xcalloc(w->n_queues + 1, sizeof(size_t));
    const char ***per = xcalloc(w->n_queues + 1, sizeof(const char **));
    for (size_t q = 0; q < w->n_queues; q++)
        per[q] = xcalloc(n + 1, sizeof(char *));
    json_t **docs = xcalloc(n + 1, sizeof(json_t *));
    for (size_t i = 0; i < n; i++) {
        if (strcmp(m[i].id, w->id) == 0)
            continue;
        json_error_t je;
        json_t *j = json_loads(m[i].json, 0, &je);
        docs[i] = j;
        const char *tenant = json_string_value(json_object_get(j, "tenant"));
        if (!tenant || strcmp(tenant, w->tenant) != 0)
            continue;
        bool shares = false;
        size_t k;
        json_t *c;
        json_array_foreach(json_object_get(j, "classes"), k, c)
        {
            for (size_t q = 0; q < w->n_queues; q++)
                if (json_is_string(c) && strcmp(json_string_value(c), w->queues[q].cls) == 0) {
                    shares = true;
                    per[q][n_ids[q]++] = m[i].id;
                }
        }
        if (shares)
            peers++;
    }
    for (size_t q = 0; q < w->n_queues; q++) {
        if (w->queues[q].q)
            coord_queue_set_peers(w->queues[q].q, per[q], n_ids[q]);
        free(per[q]);
    }
    for (size_t i = 0; i < n; i++)
        json_decref(docs[i]);
    free(docs);
    free(per);
    free(n_ids);
    w->n_peers = peers;
    worker__pump(w); /* also a good moment: the session is likely connected */
}

/* ---- life ---------------------------------------------------------------------------- */

/*
 * What worker_new makes before the queues: the plugins, the environment, the sandbox,
 * the key and the strings. Freed with w itself, by worker_new's way out when a later
 * step fails and by worker_free at the end.
 */
static void free_base(struct worker *w)
{
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
    char dropped[512];
    if (worker__plugins_testing(ps, o->plugins, o->testing_plugins, dropped, sizeof(dropped),
                                err) != 0) {
        worker__plugins_free(ps);
        return NULL;
    }
    if (dropped[0])
        log_warn(MOD,
                 "event=plugins-testing-skipped plugins=%s reason=\"testing in their descriptors: "
                 "for tests and benchmarks only (worker.testing_plugins)\"",
                 dropped);
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
    /* worker.slots off (the default), or the test hook DROVER_FAULT=worker-old-build
       (docs/testing.md: a build before slots): the queues only, and no "slots" in the
       member znode (drover-worker.c). */
    char *old_build = fault_arg("worker-old-build");
    w->no_slots = old_build != NULL || !o->slots;
    free(old_build);
    w->grace_ms = o->grace_ms;
    w->hold_fd = o->hold_fd;
    if (o->key) {
        memcpy(w->key, o->key, 32);
        w->has_key = true;
    }
    worker__env_build(w);
    if (worker__sandbox_new(w, o, err) != 0) {
        free_base(w);
        return NULL;
    }
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
        if (!w->res) {
            free_base(w);
            return NULL;
        }
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
                                      .on_lost = worker__claim_lost_cb,
                                      .lost_arg = w,
                                      .skip = worker__avoid_skip_cb,
                                      .skip_arg = w};
        wq->q = coord_queue_open(zk, wq->path, &qo, NULL, NULL);
        if (!w->no_slots)
            worker__slots_open(wq);
    }
    w->pump_ev = event_new(base, -1, 0, worker__pump_cb, w);
    w->pump_retry_ev = evtimer_new(base, worker__pump_cb, w);
    w->lease_ev = evtimer_new(base, worker__lease_renew_cb, w);
    worker__lease_arm(w);
    w->avoided = strmap_new();
    w->avoid_ev = evtimer_new(base, worker__avoid_expire_cb, w);
    w->reclaim_ev = evtimer_new(base, reclaim_cb, w);
    w->ctxs = worker__ctxs_new(zk, worker__run_ctx_ready_cb, worker__run_nodes_ready_cb, w);
    w->gc_ev = event_new(base, -1, EV_PERSIST, worker__ctx_gc_cb, w);
    struct timeval tv = {10, 0};
    event_add(w->gc_ev, &tv);
    w->peers = coord_group_watch(zk, ZKPATH_MEMBERS_WORKER, on_peers, w);
    srand((unsigned)(clock_wall_ms() ^ getpid()));
    log_info(MOD, "event=worker-ready worker=%s tenant=%s classes=%s concurrency=%u plugins=%zu",
             w->id, w->tenant, classes, w->concurrency, ps->n);
    worker__pump(w);
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
    worker__slots_withdraw(w); /* no new assignment: its owner's writes go elsewhere */
    w->grace_ev = evtimer_new(w->base, on_grace, w);
    struct timeval tv = {w->grace_ms / 1000, (w->grace_ms % 1000) * 1000};
    evtimer_add(w->grace_ev, &tv);
    worker__slots_start_waiting(w); /* the waiting ones are given back */
    worker__maybe_stopped(w);
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
        coord_slots_close(w->queues[i].slots);
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
    event_free(w->reclaim_ev);
    if (w->peer_sessions) {
        size_t rpos = 0;
        void *rv;
        while (strmap_next(w->peer_sessions, &rpos, NULL, &rv))
            free(rv);
        strmap_free(w->peer_sessions);
    }
    size_t pos = 0;
    void *v;
    while (strmap_next(w->avoided, &pos, NULL, &v))
        free(v);
    strmap_free(w->avoided);
    free_base(w);
}
