/*
 * recon: what a resuming owner does about each task and each run record it
 * found, before it goes on (docs/engine.md "Reconciliation on resume"). Pure:
 * facts in, an action out; jobresume.c gathers the facts (the task log, the
 * run records under jobs/<id>/runs, the queue's key records) and carries the
 * actions out. Unit-tested case by case (tests/engine/test_recon.c).
 *
 * Why it is needed: the last owner's writes can be cut anywhere. Its
 * ZooKeeper multi-op (the task log) may have applied while its PostgreSQL
 * batch (task rows, attempt rows, node key-values) did not; a queue item may
 * have been taken back (a withdraw is not in the fenced multi-op) while the
 * log still says 'q'; a worker may have died after its run record was made.
 *
 * A task the log says 'q' (current attempt n), in a phase that is not final:
 *
 *   item of attempt n in the queue (claimed or not)   -> NONE: a worker has it or will
 *   no item, a run record of n with its outcome       -> NONE: run.c steps the task from it
 *   no item, a run record of n without outcome        -> LOST: its worker is gone (a
 *                                                        worker holds its claim on the item
 *                                                        until the outcome is written):
 *                                                        a failed attempt (retry or give up)
 *   no item, no run record of n, the phase dispatches -> PUT: the same attempt again (its
 *                                                        key is free)
 *   no item, no run record of n, it does not          -> WITHDRAWN: back to pending (it
 *                                                        never ran)
 *
 * Why "no item and a record without outcome" means the worker is gone: the
 * worker creates its record under its claim on the item, and writes the
 * outcome in the multi-op that completes (deletes) the item; a withdraw
 * takes back only unclaimed items. So the item being gone and the outcome
 * missing means the claim was lost (its worker died or was cut off, and a
 * worker that loses its claim kills its plugin: invariant 3). The owner
 * reads the queue before the records, so an outcome written in between is
 * seen.
 *
 * A run record with its outcome, of the current attempt of a task the log
 * already says is done: its result was merged by the last owner in memory,
 * but PostgreSQL (the node's key-values) may not have it: merge it again.
 * That is a succeeded task's result, or a create that failed for good (its
 * provider-id: the rollback's delete needs it). Records are kept after their rows
 * (ENGINE_RUNS_KEEP), so two tasks of one node may both be there: they are merged in the
 * order ZooKeeper wrote their outcomes (engine_recon_merge_order), which is the order the
 * last owner merged them in (a task is dispatched only after its dependencies' results were
 * merged), not in the workers' wall-clock "end", which a skew between hosts reverses.
 */
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"
#include "recon.h"

enum engine_recon_action engine_recon_task(const struct engine_recon_facts *f)
{
    if (engine_phase_final(f->phase))
        return ENGINE_RECON_NONE; /* nothing is in flight in a final phase (J2) */
    if (f->state != ENGINE_TS_QUEUED && f->state != ENGINE_TS_RUNNING)
        return ENGINE_RECON_NONE;
    if (f->item || f->rec_ended)
        return ENGINE_RECON_NONE;
    if (f->rec_open)
        return ENGINE_RECON_LOST;
    return engine_phase_dispatches(f->phase) ? ENGINE_RECON_PUT : ENGINE_RECON_WITHDRAWN;
}

bool engine_recon_merge(const struct engine_recon_run *r)
{
    if (!r->ended || !r->current)
        return false;
    if (r->state == ENGINE_TS_SUCCEEDED)
        return r->ok;
    if (r->state == ENGINE_TS_FAILED)
        return !r->ok && r->is_create;
    return false; /* in flight: run.c steps the task (and merges) from the record */
}

static int by_written(const void *a, const void *b)
{
    const struct engine_recon_written *x = a, *y = b;
    return x->mzxid < y->mzxid ? -1 : x->mzxid > y->mzxid ? 1 : strcmp(x->name, y->name);
}

void engine_recon_merge_order(struct engine_recon_written *w, size_t n)
{
    if (n > 1)
        qsort(w, n, sizeof(*w), by_written);
}

const char *engine_recon_name(enum engine_recon_action a)
{
    switch (a) {
    case ENGINE_RECON_NONE:
        return "none";
    case ENGINE_RECON_PUT:
        return "put";
    case ENGINE_RECON_WITHDRAWN:
        return "withdrawn";
    case ENGINE_RECON_LOST:
        return "lost";
    }
    return "?";
}
