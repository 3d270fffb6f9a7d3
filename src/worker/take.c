/*
 * take: the claim loop. Keeps up to worker.concurrency takes and tasks going over
 * the worker's queues (pump), turns a taken item into a task and sends the record
 * of its attempt (start_task; attempt.c goes on from there), kills the plugin of a
 * task whose claim coord reports lost, and passes over for a while the retries
 * that asked to avoid this worker. The task's life and its invariants are
 * attempt.c's note. Loop thread only: coord's callbacks arrive on it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <jansson.h>

#include "clock.h"
#include "coord.h"
#include "log.h"
#include "strmap.h"
#include "taskmsg.h"
#include "worker.h"
#include "worker_int.h"
#include "xalloc.h"
#include "zkpath.h"

#define MOD "worker"
#define TAKE_WAIT_MS 1000
#define PUMP_RETRY_MS 250      /* while the session is not connected */
#define AVOID_MS 5000          /* how long a retry that avoids this worker is left to the others */
#define AVOID_FORGET_MS 600000 /* how long after that it is run here without avoiding it again */
#define TOO_NEW_MS 60000       /* how long an item of a newer format is left to newer workers */

/* ---- claims ------------------------------------------------------------------------ */

static struct wtask *task_by_item(struct worker *w, const char *item_id)
{
    for (struct wtask *t = w->tasks; t; t = t->next)
        if (strcmp(t->item_id, item_id) == 0)
            return t;
    return NULL;
}

void worker__claim_lost_cb(struct coord_queue *q, const char *item_id, void *arg)
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

/*
 * Avoidance: a retry after a failure here carries "avoid": this worker. It
 * gives the item back at once and passes it over for AVOID_MS (the queues'
 * skip filter), so that another worker takes it; after that, if nobody did,
 * it runs it itself.
 */
bool worker__avoid_skip_cb(const char *key, void *arg)
{
    struct worker *w = arg;
    int64_t *until = strmap_get(w->avoided, key);
    return until && *until > clock_mono_ms();
}

void worker__avoid_expire_cb(evutil_socket_t fd, short what, void *arg)
{
    struct worker *w = arg;
    int64_t now = clock_mono_ms(), next = 0;
    size_t pos = 0;
    const char *k;
    void *v;
    while (strmap_next(w->avoided, &pos, &k, &v)) {
        /* An entry outlives its avoidance by AVOID_FORGET_MS: while it is there, the item
           is run here when it comes back (start_task). Forgotten at once, it was avoided
           again each time, for ever when no other worker took it (issue 33: a peer whose
           queue stopped taking left a retry unrun). */
        int64_t until = *(int64_t *)v;
        int64_t at = until > now ? until : until + AVOID_FORGET_MS;
        if (until + AVOID_FORGET_MS <= now) {
            free(strmap_del(w->avoided, k)); /* allowed during the iteration */
            continue;
        }
        if (!next || at < next)
            next = at;
    }
    for (size_t i = 0; i < w->n_queues; i++)
        coord_queue_rescan(w->queues[i].q);
    w->avoid_at = next;
    if (next) {
        struct timeval tv = {(next - now) / 1000, ((next - now) % 1000) * 1000};
        event_add(w->avoid_ev, &tv);
    }
}

static void avoid_add(struct worker *w, const char *key, int ms)
{
    int64_t *until = strmap_get(w->avoided, key);
    if (!until) {
        until = xmalloc(sizeof(*until));
        strmap_put(w->avoided, key, until);
    }
    *until = clock_mono_ms() + ms;
    /* Armed later (an older entry's forget time, up to AVOID_FORGET_MS away): armed again
       for this one's end. Before, the timer was left as it was, so a retry avoided then
       waited for the older entry's forget time, ten minutes, unless something else made
       the queue look again (scripts/chaos --hosts, 2026-11-28: a job stuck so). */
    int64_t at = *until + 1000;
    if (!evtimer_pending(w->avoid_ev, NULL) || !w->avoid_at || w->avoid_at > at) {
        struct timeval tv = {ms / 1000 + 1, (ms % 1000) * 1000};
        w->avoid_at = at;
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
    t->slot = -1;
    t->item_id = xstrdup(it->id);
    t->next = w->tasks;
    w->tasks = t;
    w->running++;
    w->stats.taken++;
    json_error_t je;
    struct drv_err err;
    json_t *j = json_loads(it->json, 0, &je);
    int rc = taskmsg_item_decode(j, &t->item, &err);
    json_int_t v = json_integer_value(json_object_get(j, "v"));
    json_decref(j);
    if (rc != 0 && v > TASKMSG_ITEM_VERSION) {
        /* A newer build's item: a worker that reads it can run it, so it is left to one (the
           claim given back, its key passed over for TOO_NEW_MS, then looked at again), never
           dropped: its task stays queued, not lost (docs/worker.md, issue 33 item 6). */
        snprintf(t->key, sizeof(t->key), "%s", it->id);
        const char *key = coord_queue_item_key(it->id);
        w->stats.too_new++;
        log_warn(MOD,
                 "event=task-item-too-new worker=%s item=%s v=%lld reads=%d key=%s "
                 "why=\"left in the queue for a worker that reads it\"",
                 w->id, it->id, (long long)v, TASKMSG_ITEM_VERSION, key ? key : "-");
        if (key)
            avoid_add(w, key, TOO_NEW_MS);
        worker__hand_back(t);
        return;
    }
    if (rc != 0) {
        /* Nothing can run it, now or later: drop it loudly rather than loop. */
        snprintf(t->key, sizeof(t->key), "%s", it->id);
        log_error(MOD, "event=bad-task-item worker=%s item=%s error=\"%s\"", w->id, it->id,
                  err.msg);
        worker__drop_item(t, err.msg);
        return;
    }
    if (t->item.dropped)
        log_warn(MOD,
                 "event=reserved-key-dropped worker=%s item=%s keys=%zu first=\"%s\" "
                 "why=\"a tenant's value never names a provider's fact\"",
                 w->id, it->id, t->item.dropped, t->item.dropped_key);
    snprintf(t->job, sizeof(t->job), "%s", t->item.job);
    taskmsg_key(t->key, sizeof(t->key), t->job, t->item.phase, t->item.idx, t->item.attempt);
    const char *avoid = t->item.avoid;
    if (avoid && strcmp(avoid, w->id) == 0 && w->n_peers > 0 && !strmap_get(w->avoided, t->key)) {
        /* A retry after a failure here: leave it to another worker for a while. */
        log_info(MOD, "event=task-avoided worker=%s task=%s", w->id, t->key);
        avoid_add(w, t->key, AVOID_MS);
        worker__hand_back(t);
        return;
    }
    char name[200];
    taskmsg_run_name(name, sizeof(name), t->item.phase, t->item.idx, t->item.attempt, w->id,
                     ++w->nonce ^ (unsigned)rand());
    t->run_path = zkpath_job_run(NULL, 0, t->job, name);
    char sess[32];
    snprintf(sess, sizeof(sess), "0x%llx", (unsigned long long)coord_session_id(w->zk));
    t->rec = taskmsg_run_start(w->id, sess, it->id, clock_wall_ms());
    t->st = WT_RECORDING;
    worker__record_send(t);
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
        if (w->stopping || worker__active(w) >= w->concurrency) {
            /* Stopping, or the places went to tasks assigned to its slots meanwhile. */
            coord_queue_release(wq->q, it->id, NULL, NULL);
        } else {
            start_task(wq, it);
        }
        coord_queue_item_free(it);
    }
    worker__pump(w);
    worker__maybe_stopped(w);
}

void worker__pump_cb(evutil_socket_t fd, short what, void *arg)
{
    struct worker *w = arg;
    while (!w->stopping && !w->freed && w->running + w->takes < w->concurrency &&
           coord_session_state(w->zk) == COORD_CONNECTED) {
        struct wqueue *wq = &w->queues[w->next_queue++ % w->n_queues];
        w->takes++;
        coord_queue_take(wq->q, TAKE_WAIT_MS, on_take, wq);
    }
    /* Not connected: look again soon. Nothing else would call worker__pump when the same session
       comes back with no task running and no take waiting (no member change either). */
    if (!w->stopping && !w->freed && w->running + w->takes < w->concurrency &&
        coord_session_state(w->zk) != COORD_CONNECTED) {
        struct timeval tv = {0, PUMP_RETRY_MS * 1000};
        evtimer_add(w->pump_retry_ev, &tv);
    }
}

void worker__pump(struct worker *w)
{
    if (!w->freed)
        event_active(w->pump_ev, EV_TIMEOUT, 0);
}
