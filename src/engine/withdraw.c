/*
 * withdraw: taking a job's queued items back, on a pause, a cancel or a give-up (the job
 * state machine's ENGINE_ACT_WITHDRAW, job.c), with the retries not put yet.
 *
 * Each item is found by its key record (coord_queue_key_item: constant work per item, where
 * a find per item read the whole queue each time) and cancelled unless a worker holds it.
 * Taken back: its task is WITHDRAWN, pending again (run.c's engine__task_event). Claimed or
 * gone: its run record tells the rest. Each cancel in flight holds the commit pipeline
 * (engine__commit_hold), so that a handover and the final write wait for it. The
 * withdrawal's counts (struct ewithdraw, j->withdraw) are this file's alone; the end of a
 * withdrawal is logged (event=job-withdrawn ... ms=, engine_withdraw_many reads it).
 *
 * Loop thread. Cost: per queued or running task, one read of its key record and one cancel
 * multi-op, whatever the queue's length.
 */
#include <stdint.h>
#include <stdlib.h>

#include "assign.h"
#include "clock.h"
#include "commit.h"
#include "coord.h"
#include "engine_int.h"
#include "log.h"
#include "planner.h"
#include "taskmsg.h"
#include "withdraw.h"
#include "xalloc.h"

#define MOD "engine"

/* The withdrawal in progress: how many items are being taken back, for its log line. */
struct ewithdraw {
    size_t withdrawing;        /* queue items being taken back */
    size_t wd_items, wd_taken; /* of the withdrawal in progress (logged when it ends) */
    int64_t wd_start;          /* when it began (ms, monotonic) */
};

/* One queue item being taken back. */
struct withdraw {
    struct ejob *j;
    struct eplan *p;
    uint32_t idx;
    unsigned attempt;
    struct equeue *q;
};

static void withdrawn(int rc, void *arg)
{
    struct withdraw *w = arg;
    struct ejob *j = w->j;
    struct ewithdraw *d = j->withdraw;
    d->withdrawing--;
    engine__commit_unhold(j);
    d->wd_taken += rc == 0;
    if (d->withdrawing == 0 && d->wd_items) {
        log_info(MOD, "event=job-withdrawn job=%s items=%zu taken=%zu ms=%lld", j->id, d->wd_items,
                 d->wd_taken, (long long)(clock_mono_ms() - d->wd_start));
        d->wd_items = d->wd_taken = 0;
    }
    if (engine__job_alive(j) && w->p == j->cur && w->p->recs[w->idx].attempt == w->attempt) {
        if (rc == 0) {
            log_info(MOD, "event=task-withdrawn job=%s task=%s", j->id,
                     w->p->plan->tasks[w->idx].id);
            engine__task_event(j, w->p, w->idx, ENGINE_TEV_WITHDRAWN);
        }
        /* Claimed (running) or gone (completed): its run record tells the rest. */
    }
    if (j->own == EJ_HANDING_OVER)
        engine__job_idle(j);
    engine__kick(j);
    free(w);
    engine__job_unref(j);
}

/* The item's id is known: cancel it, unless the job is no longer ours (claimed: running). */
static void keyed(int rc, const char *item_id, void *arg)
{
    struct withdraw *w = arg;
    if (rc == 0 && engine__job_alive(w->j)) {
        coord_queue_cancel(w->q->q, item_id, withdrawn, w);
        return;
    }
    withdrawn(rc ? rc : DRV_ECONFLICT, w);
}

void engine__withdraw(struct ejob *j)
{
    struct eplan *p = j->cur;
    if (!j->queue)
        return;
    engine__job_check_io(j, false);     /* job.c invariant 4 */
    engine__commit_retries_withdraw(j); /* first: they have no item to look for */
    if (!j->withdraw)
        j->withdraw = xcalloc(1, sizeof(*j->withdraw));
    struct ewithdraw *d = j->withdraw;
    for (uint32_t i = 0; i < p->n; i++) {
        /* RUNNING too: an item whose worker died is unclaimed again, and with no other
           worker nothing would take it back (a job no worker serves stalls: watchdog.c).
           One a live worker holds is claimed: the cancel refuses it and it runs on. */
        if (p->recs[i].state != ENGINE_TS_QUEUED && p->recs[i].state != ENGINE_TS_RUNNING)
            continue;
        /* In a worker's slot: it runs (there is no queue item to take back); its outcome,
           or its worker's end (assign.c), ends it. */
        if (engine__assign_running(j, p->phase, i))
            continue;
        struct withdraw *w = xcalloc(1, sizeof(*w));
        w->j = j;
        w->p = p;
        w->idx = i;
        w->attempt = p->recs[i].attempt;
        w->q = j->queue;
        char key[80];
        taskmsg_key(key, sizeof(key), j->id, p->phase, i, p->recs[i].attempt);
        if (d->withdrawing == 0 && d->wd_items == 0)
            d->wd_start = clock_mono_ms();
        d->withdrawing++;
        engine__commit_hold(j); /* a handover and the final write wait for the cancel */
        d->wd_items++;
        engine__job_ref(j);
        /* By its key record: constant work per item (a find per item read the whole
           queue each time: quadratic, long enough on the loop to lose the session). */
        coord_queue_key_item(j->queue->q, key, keyed, w);
    }
}

void engine__withdraw_free(struct ejob *j)
{
    free(j->withdraw);
    j->withdraw = NULL;
}
