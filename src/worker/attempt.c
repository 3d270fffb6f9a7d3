/*
 * attempt: one task's attempt on the books: the task object (struct wtask) and its
 * references, the record of the attempt under the claim (RECORDING), the complete
 * with its outcome (COMPLETING), the hand-back and the drop, and DONE. Taking is
 * take.c, CONTEXT to RUNNING (the job's context, the plugin, its environment and
 * lease) run.c, the worker's life worker.c (worker.h has the promises,
 * docs/worker.md the story). Loop thread only.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <jansson.h>

#include <zookeeper/zookeeper.h>

#include "coord.h"
#include "log.h"
#include "worker.h"
#include "worker_int.h"

#define MOD "worker"
#define RETRY_MS 200
#define REFUSED_RETRY_MS 2000 /* a write the server refused: slower, it logs each time */

void worker__wtask_check(const struct wtask *t)
{
#if DRV_CHECKS
    if (t->st >= WT_RUNNING && t->st != WT_DONE && t->st != WT_WAITING && !t->recorded)
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
    taskmsg_item_clear(&t->item);
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
        worker__slots_start_waiting(w);
        worker__pump(w);
        worker__maybe_stopped(w);
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

void worker__task_drop_lost(struct wtask *t)
{
    if (t->slot < 0) {
        worker__task_finish(t);
        return;
    }
    worker__slot_give_back(t, t->started ? "lost" : "returned",
                           t->started ? "the worker lost its slot while the plugin ran"
                                      : "the worker lost its slot before the plugin started");
}

void worker__hand_back(struct wtask *t)
{
    if (t->slot >= 0) {
        /* A slot task: its owner hears it through the record's status. */
        worker__slot_give_back(t, t->started ? "lost" : "returned",
                               t->started ? "the plugin was stopped (lease, or the worker's grace)"
                                          : "the worker stops");
        return;
    }
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
void worker__drop_item(struct wtask *t, const char *why)
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
    } else if (r->failed_op >= 0 && r->zrc == ZNONODE) {
        /* The run record is gone: the job ended (cancelled, handed over and
         * finished...). The item still goes. */
        worker__drop_item(t, "the job's run record is gone");
    } else if (!w->freed) {
        /* Lost answer (resolved by coord's complete), or refused (NOAUTH: a run
         * directory made by an older droverd; another op's failure): the outcome is
         * kept and sent again, never dropped with the item. */
        if (r->failed_op >= 0)
            log_error(MOD, "event=complete-refused worker=%s task=%s zrc=%d", w->id, t->key,
                      r->zrc);
        later(t, complete_retry, r->failed_op >= 0 ? REFUSED_RETRY_MS : RETRY_MS);
    }
    worker__task_unref(t);
}

void worker__complete_send(struct wtask *t)
{
    if (t->slot >= 0 && !t->w->freed) {
        if (t->lost)
            worker__task_drop_lost(t);
        else
            worker__slot_complete(t);
        return;
    }
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

static void record_retry(evutil_socket_t fd, short what, void *arg)
{
    struct wtask *t = arg;
    worker__record_send(t);
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
    } else if (r->failed_op == 0 && r->zrc == ZNODEEXISTS) {
        /* Our own record: its name is this delivery's (worker id and nonce), so only
           our earlier commit can have made it, under our claim; that commit's answer
           was lost (coord_queue_txn_commit has no resolver: DRV_EAGAIN, sent again). */
        log_info(MOD, "event=record-recovered worker=%s task=%s", w->id, t->key);
        t->recorded = true;
        if (t->lost)
            worker__task_finish(t);
        else
            worker__need_context(t);
    } else if (r->failed_op >= 0 && r->zrc == ZNONODE) {
        worker__drop_item(t, "the job has no run directory: it is over");
    } else if (r->failed_op >= 0) {
        /* Refused (NOAUTH: a run directory an older droverd made, which this worker's
           tenant identity may not write; docs/operations.md has the upgrade order): not
           the job's end. Keep the claim and try again; the item is never dropped. */
        log_error(MOD, "event=record-refused worker=%s task=%s zrc=%d", w->id, t->key, r->zrc);
        later(t, record_retry, REFUSED_RETRY_MS);
    } else {
        later(t, record_retry, RETRY_MS);
    }
    worker__task_unref(t);
}

void worker__record_send(struct wtask *t)
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
