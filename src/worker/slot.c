/*
 * slot: the tasks droverd assigns to this worker by name (issue 37; docs/worker.md "Slots").
 *
 * Each of the worker's queues has worker.concurrency slots (coord_slots: ephemeral znodes of
 * its session under the queue's directory, the free ones offered). A job's owner that has
 * a task for the queue takes an offer and writes the task into the slot in its fenced
 * round, with the task log's 'q' of that attempt and the attempt's key record: so the
 * attempt is recorded, and claimed for this worker's session, before the worker hears of
 * it, and the worker writes nothing to start it. When the plugin ends, one multi-op writes
 * the run record, whole (start and outcome), and deletes the key record; the owner reads the
 * record through its runs/ watch and sets the slot again (its next task) or free. So a task
 * costs the worker one read (the slot's watch) and its share of one multi-op (the outcomes
 * of one turn go together), where a claimed item cost a listing's share, a claim, a read, a
 * record and a complete.
 *
 *   (slot read: a new key) --> [WAITING: no place] --> CONTEXT --> ... --> RUNNING
 *        --plugin ended--> COMPLETING --record + key record gone, one multi-op--> DONE
 *   any state --on_lost (suspected, expired, the slot set under it)--> the plugin killed,
 *        then the record says "lost" (status), so its owner dispatches the task again
 *        without counting a failure (a worker that died writes nothing: its owner sees its
 *        member gone and does the same)
 *   WAITING or stopping before the plugin started --> the record says "returned"
 *
 * What each request does when its answer is lost: the outcome's multi-op is sent again;
 * ZNODEEXISTS on its record is our own (the record's name is this delivery's: worker id and
 * nonce), so the first one applied, whole. ZNONODE on the record: the job's runs/ is gone
 * (the job is over): the key record is deleted alone and the slot left to its owner (or
 * freed by coord after done_free_ms). ZNONODE on the key record: the owner gave the attempt
 * up (it saw this worker's session end): the record alone is written (what happened, for
 * the books). coord_slots' own requests: coord.h.
 *
 * The task's invariants are attempt.c's (wtask_check); for a slot task "recorded" holds
 * from the start: its owner recorded the attempt in the round that assigned it.
 * Loop thread only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <jansson.h>

#include <zookeeper/zookeeper.h>

#include "clock.h"
#include "coord.h"
#include "log.h"
#include "taskmsg.h"
#include "worker_int.h"
#include "xalloc.h"
#include "zkpath.h"

#define MOD "worker"
#define RETRY_MS 200
#define REFUSED_RETRY_MS 2000

size_t worker__active(const struct worker *w)
{
    size_t n = 0;
    for (const struct wtask *t = w->tasks; t; t = t->next)
        n += t->st != WT_WAITING && t->st != WT_DONE;
    return n;
}

static struct wtask *slot_task(struct wqueue *wq, unsigned i, const char *key)
{
    for (struct wtask *t = wq->w->tasks; t; t = t->next)
        if (t->wq == wq && t->slot == (int)i && strcmp(t->key, key) == 0 && t->st != WT_DONE)
            return t;
    return NULL;
}

void worker__slots_start_waiting(struct worker *w)
{
    if (w->freed)
        return;
    for (struct wtask *t = w->tasks; t; t = t->next) {
        if (t->slot < 0 || t->st != WT_WAITING)
            continue; /* (a claimed task is never WAITING: only assignments wait) */
        if (w->stopping) {
            worker__slot_give_back(t, "returned", "the worker stops");
            return worker__slots_start_waiting(w); /* the list may have changed */
        }
        if (worker__active(w) >= w->concurrency)
            return;
        worker__need_context(t);
        return worker__slots_start_waiting(w);
    }
}

/* ---- an assignment ------------------------------------------------------------------------ */

static void on_assigned(struct coord_slots *sl, unsigned i, const char *key, const char *json,
                        void *arg)
{
    struct wqueue *wq = arg;
    struct worker *w = wq->w;
    if (w->freed)
        return;
    struct wtask *t = xcalloc(1, sizeof(*t));
    t->w = w;
    t->wq = wq;
    t->refs = 1;
    t->slot = (int)i;
    t->item_id = xstrdup(coord_slots_name(sl, i));
    t->recorded = true; /* its owner's round recorded it ('q', the key record) */
    t->next = w->tasks;
    w->tasks = t;
    w->running++;
    w->stats.taken++;
    snprintf(t->key, sizeof(t->key), "%s", key);
    char sess[32];
    snprintf(sess, sizeof(sess), "0x%llx", (unsigned long long)coord_session_id(w->zk));
    t->rec = taskmsg_run_start(w->id, sess, t->item_id, clock_wall_ms());
    char job[24], ph;
    uint32_t idx;
    unsigned att;
    if (taskmsg_key_parse(key, job, &ph, &idx, &att) != 0) {
        /* Not a key: nowhere to write an outcome. Left to its owner (and coord). */
        log_error(MOD, "event=bad-slot-key worker=%s slot=%s key=%s", w->id, t->item_id, key);
        coord_slots_done(sl, i, key);
        worker__task_finish(t);
        return;
    }
    snprintf(t->job, sizeof(t->job), "%s", job);
    char name[200];
    taskmsg_run_name(name, sizeof(name), ph, idx, att, w->id, ++w->nonce ^ (unsigned)rand());
    t->run_path = zkpath_job_run(NULL, 0, t->job, name);
    json_error_t je;
    struct drv_err err = {0};
    json_t *j = json_loads(json, 0, &je);
    int rc = j ? taskmsg_item_decode(j, &t->item, &err) : DRV_EINVAL;
    if (!j)
        snprintf(err.msg, sizeof(err.msg), "the task is not JSON: %s", je.text);
    json_decref(j);
    if (rc == 0) {
        char want[80];
        taskmsg_key(want, sizeof(want), t->item.job, t->item.phase, t->item.idx, t->item.attempt);
        if (strcmp(want, key) != 0) {
            rc = DRV_EINVAL;
            snprintf(err.msg, sizeof(err.msg), "the task is %s, its slot says %s", want, key);
        }
    }
    if (rc == 0 && t->item.dropped)
        log_warn(MOD,
                 "event=reserved-key-dropped worker=%s item=%s keys=%zu first=\"%s\" "
                 "why=\"a tenant's value never names a provider's fact\"",
                 w->id, t->item_id, t->item.dropped, t->item.dropped_key);
    log_debug(MOD, "event=task-assigned worker=%s task=%s slot=%s", w->id, key, t->item_id);
    if (rc != 0) {
        /* Nothing can run it, now or later: fail it loudly, its owner decides. */
        log_error(MOD, "event=bad-task-item worker=%s slot=%s key=%s error=\"%s\"", w->id,
                  t->item_id, key, err.msg);
        struct taskmsg_outcome o = {
            .ok = false, .end_ms = clock_wall_ms(), .message = err.msg, .how = "not run"};
        taskmsg_run_end(t->rec, &o);
        t->st = WT_COMPLETING;
        worker__slot_complete(t);
        return;
    }
    if (w->stopping) {
        worker__slot_give_back(t, "returned", "the worker stops");
        return;
    }
    t->st = WT_WAITING;
    worker__slots_start_waiting(w);
}

static void on_lost(struct coord_slots *sl, unsigned i, const char *key, const char *json,
                    void *arg)
{
    struct wqueue *wq = arg;
    struct worker *w = wq->w;
    struct wtask *t = slot_task(wq, i, key);
    if (!t || w->freed || (t->lost && !t->lease_expired))
        return;
    log_warn(MOD, "event=claim-lost worker=%s task=%s state=%d slot=%s", w->id, t->key, (int)t->st,
             t->item_id);
    if (t->lost)
        return; /* its lease ran out first: handled */
    t->lost = true;
    w->stats.lost++;
    if (t->proc) {
        worker__proc_kill(t->proc); /* invariant 3: before anyone else can run it */
    } else if (t->st == WT_WAITING || t->st == WT_RESOURCES) {
        worker__slot_give_back(t, "returned", "its slot was lost before it started");
    }
    /* CONTEXT, NODES: their callbacks see lost and give it back; COMPLETING: its outcome
       is being written, which stands (it ended before the loss). */
}

void worker__slots_open(struct wqueue *wq)
{
    struct coord_slots_opts o = {.consumer_id = wq->w->id,
                                 .n = wq->w->concurrency,
                                 .on_assigned = on_assigned,
                                 .on_lost = on_lost,
                                 .arg = wq};
    wq->slots = coord_slots_open(wq->w->zk, wq->path, &o);
}

void worker__slots_withdraw(struct worker *w)
{
    for (size_t i = 0; i < w->n_queues; i++)
        coord_slots_offer(w->queues[i].slots, false);
}

/* ---- the outcome ------------------------------------------------------------------------- */

static void complete_later_cb(evutil_socket_t fd, short what, void *arg)
{
    struct wtask *t = arg;
    worker__slot_complete(t);
    worker__task_unref(t);
}

static void complete_later(struct wtask *t, int ms)
{
    t->refs++;
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    event_base_once(t->w->base, -1, EV_TIMEOUT, complete_later_cb, t, &tv);
}

static char *key_path(const struct wtask *t)
{
    return xasprintf("%s/keys/%s", t->wq->path, t->key);
}

static void slot_done(struct wtask *t)
{
    coord_slots_done(t->wq->slots, (unsigned)t->slot, t->key);
    worker__task_finish(t);
}

static void on_completed(const struct coord_txn_result *r, void *arg)
{
    struct wtask *t = arg;
    struct worker *w = t->w;
    if (w->freed) {
        worker__task_unref(t);
        return;
    }
    const char *status = json_string_value(json_object_get(t->rec, "status"));
    if (r->rc == 0 || (r->failed_op == 0 && r->zrc == ZNODEEXISTS)) {
        /* Written (ZNODEEXISTS: by our own earlier multi-op, whose answer was lost: the
           record's name is this delivery's, so it applied, whole). */
        if (r->rc != 0)
            log_info(MOD, "event=outcome-recovered worker=%s task=%s", w->id, t->key);
        if (status && strcmp(status, "ok") == 0)
            w->stats.succeeded++;
        else if (status && strcmp(status, "failed") == 0)
            w->stats.failed++;
        slot_done(t);
    } else if (r->failed_op == 0 && r->zrc == ZNONODE) {
        /* No runs/: the job is over. Its key record goes alone; the slot is its owner's,
           and coord frees it itself if nobody comes. After a lost answer the first send may
           have applied, and its owner read it and ended the job (slot_lost.sh): said so,
           not "dropped". */
        if (t->sent_unknown)
            log_info(MOD,
                     "event=outcome-job-over worker=%s task=%s reason=\"the job ended after "
                     "an answer was lost: the first send applied, or the job ended without it\"",
                     w->id, t->key);
        else
            log_info(MOD, "event=task-dropped worker=%s task=%s reason=\"the job is over\"", w->id,
                     t->key);
        char *kp = key_path(t);
        struct coord_txn *txn = coord_txn_new();
        coord_txn_delete(txn, kp, -1);
        free(kp);
        coord_txn_commit(w->zk, txn, NULL, NULL, NULL); /* NONODE: gone already, fine */
        slot_done(t);
    } else if (r->failed_op == 1 && r->zrc == ZNONODE) {
        /* The key record is gone: the owner gave the attempt up (it saw our session end).
           The record alone, for the books; it steps nothing. */
        log_info(MOD, "event=outcome-without-key worker=%s task=%s", w->id, t->key);
        t->keyless = true;
        complete_later(t, 0);
    } else if (r->failed_op >= 0) {
        /* Refused (NOAUTH: a run directory made by an older droverd, ...): never dropped;
           sent again, slowly, logged each time. */
        log_error(MOD, "event=complete-refused worker=%s task=%s zrc=%d op=%d", w->id, t->key,
                  r->zrc, r->failed_op);
        complete_later(t, REFUSED_RETRY_MS);
    } else {
        /* Lost answer (DRV_EAGAIN) or not sent (the session's generation ended): again. */
        t->sent_unknown = true;
        complete_later(t, RETRY_MS);
    }
    worker__task_unref(t);
}

void worker__slot_complete(struct wtask *t)
{
    struct worker *w = t->w;
    if (w->freed) {
        worker__task_finish(t);
        return;
    }
    t->st = WT_COMPLETING;
    char *data = json_dumps(t->rec, JSON_COMPACT);
    struct coord_txn *txn = coord_txn_new();
    coord_txn_create(txn, t->run_path, data, 0);
    if (!t->keyless) {
        char *kp = key_path(t);
        coord_txn_delete(txn, kp, -1);
        free(kp);
    }
    free(data);
    t->refs++;
    coord_txn_commit_gathered(w->zk, txn, on_completed, t);
}

void worker__slot_give_back(struct wtask *t, const char *status, const char *why)
{
    struct worker *w = t->w;
    if (strcmp(status, "returned") == 0)
        w->stats.handed_back++;
    log_info(MOD, "event=task-given-back worker=%s task=%s status=%s reason=\"%s\"", w->id, t->key,
             status, why);
    struct taskmsg_outcome o = {.ok = false,
                                .end_ms = clock_wall_ms(),
                                .message = why,
                                .how = strcmp(status, "returned") == 0 ? "not run" : "lost"};
    taskmsg_run_end(t->rec, &o);
    json_object_set_new(t->rec, "status", json_string(status));
    if (t->res_dir) {
        worker__res_release(w->res, t->res_version);
        t->res_dir = NULL;
    }
    worker__slot_complete(t);
}
