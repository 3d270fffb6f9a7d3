/*
 * fsm: the job's and the task's state machines, as pure step functions.
 *
 * Nothing here does I/O: a step takes a state, an event and the facts it
 * needs, and returns the next state and the actions the caller must carry
 * out (job.c does). So every transition is unit-tested (tests/engine/
 * test_fsm.c) and the real-server tests only need to cover failover.
 *
 * Job (status as the API shows it in quotes):
 *
 *   PENDING "pending" --START--> RUNNING "running" --all tasks ok--> SUCCEEDED
 *                                   |   ^                               "succeeded"
 *                             PAUSE |   | RESUME
 *                                   v   |
 *                               PAUSED "paused"    (running tasks finish; nothing new starts)
 *
 *   RUNNING, PAUSED --a task gave up--> DRAINING "rolling-back" --in flight 0--> ROLLING_BACK
 *   RUNNING, PAUSED --CANCEL--> DRAINING "rolling-back"    --in flight 0--> ROLLING_BACK
 *      (DRAINING --in flight 0, rollback not wanted--> FAILED "failed")
 *   ROLLING_BACK "rolling-back" --all ok--> ROLLED_BACK "rolled-back", or CANCELLED "cancelled"
 *   ROLLING_BACK --a task gave up--> RB_DRAINING "rolling-back" --in flight 0--> NEEDS_OPERATOR
 *   RUNNING, PAUSED --STALLED--> as a task that gave up (watchdog.c: no worker, deadline)
 *   ROLLING_BACK --STALLED--> RB_DRAINING, its queued items taken back --in flight 0-->
 *      NEEDS_OPERATOR (a rollback nobody can run is an operator's to look at)
 *   PENDING --CANCEL--> CANCELLED (nothing ran)
 *
 * Invariants (engine__job_check in job.c asserts them on a whole job):
 *   J1. Tasks are dispatched only in RUNNING and ROLLING_BACK
 *       (engine_phase_dispatches).
 *   J2. A job leaves DRAINING and RB_DRAINING only with nothing in flight, so
 *       the rollback plan is made from final task states and an operator
 *       never gets a job with work still running.
 *   J3. The final phases (SUCCEEDED, ROLLED_BACK, CANCELLED, FAILED,
 *       NEEDS_OPERATOR) take no event.
 *
 * Task (durable letter of the task log in brackets):
 *
 *   WAITING [.] --deps ok--> PENDING [.] --DISPATCH--> QUEUED [q] --STARTED--> RUNNING [q]
 *                 (held by a limit)                       |    ^                  |
 *                                               WITHDRAW  |    | FAIL, retries    | OK
 *                                         (back to [.])   v    | left             v
 *                                                     PENDING  +-----------  SUCCEEDED [S]
 *   QUEUED, RUNNING --LOST (its slot went with its worker's session)--> QUEUED [q], next
 *                     attempt, no failure counted (a create: as FAIL)
 *   RUNNING --WITHDRAW (its item taken back unclaimed: its worker is gone)--> PENDING [.]
 *   QUEUED, RUNNING --FAIL, no retry left--> FAILED [F]
 *   WAITING, PENDING --a dependency failed--> FAILED_DEP (derived, never written)
 *   WAITING, PENDING --job ends without it--> CANCELLED [C]
 *   an anchor (no execution) --deps ok--> SKIPPED [K]
 *
 * Invariants:
 *   T1. attempt counts dispatches; a task is never dispatched twice with the
 *       same attempt (the queue key holds it, so a retry is a new item).
 *   T2. failures <= max_failures; FAILED only when failures reached it.
 *   T3. A failed create is dispatched again with cleanup set: the provider
 *       removes what the failed attempt made before creating (seed 000).
 *   T4. A lost attempt (LOST: its worker's slot went with its session, or the
 *       worker was cut off and killed its plugin) is dispatched again as a new
 *       attempt without counting a failure, but for a create (T3), and never
 *       past ENGINE_MAX_ATTEMPT.
 */
#include <string.h>

#include "engine_int.h"

static const char *const phase_names[] = {
    [ENGINE_PH_PENDING] = "pending",
    [ENGINE_PH_RUNNING] = "running",
    [ENGINE_PH_PAUSED] = "paused",
    [ENGINE_PH_DRAINING] = "draining",
    [ENGINE_PH_ROLLING_BACK] = "rolling-back",
    [ENGINE_PH_RB_DRAINING] = "rollback-draining",
    [ENGINE_PH_SUCCEEDED] = "succeeded",
    [ENGINE_PH_ROLLED_BACK] = "rolled-back",
    [ENGINE_PH_CANCELLED] = "cancelled",
    [ENGINE_PH_FAILED] = "failed",
    [ENGINE_PH_NEEDS_OPERATOR] = "needs-operator",
};

const char *engine_phase_name(enum engine_phase ph)
{
    return ph < ENGINE_PH_COUNT ? phase_names[ph] : "unknown";
}

int engine_phase_parse(const char *s)
{
    for (int i = 0; s && i < ENGINE_PH_COUNT; i++)
        if (strcmp(s, phase_names[i]) == 0)
            return i;
    return -1;
}

const char *engine_phase_status(enum engine_phase ph, bool cancel)
{
    switch (ph) {
    case ENGINE_PH_DRAINING:    /* stopping: what runs finishes, then the rollback */
    case ENGINE_PH_RB_DRAINING: /* a rollback task gave up: what runs finishes */
        (void)cancel;
        return "rolling-back";
    default:
        return engine_phase_name(ph);
    }
}

bool engine_phase_final(enum engine_phase ph)
{
    return ph == ENGINE_PH_SUCCEEDED || ph == ENGINE_PH_ROLLED_BACK || ph == ENGINE_PH_CANCELLED ||
           ph == ENGINE_PH_FAILED || ph == ENGINE_PH_NEEDS_OPERATOR;
}

enum engine_job_event engine_resume_event(enum engine_phase ph)
{
    /* A job still pending was started whole (its state znode exists) but its first owner
       died before START: START it, or it would wait for ever (PROGRESS leaves PENDING be). */
    return ph == ENGINE_PH_PENDING ? ENGINE_EV_START : ENGINE_EV_PROGRESS;
}

bool engine_phase_dispatches(enum engine_phase ph)
{
    return ph == ENGINE_PH_RUNNING || ph == ENGINE_PH_ROLLING_BACK;
}

bool engine_phase_rollback(enum engine_phase ph)
{
    return ph == ENGINE_PH_ROLLING_BACK || ph == ENGINE_PH_RB_DRAINING;
}

static struct engine_job_out out(enum engine_phase ph, unsigned actions)
{
    struct engine_job_out o = {ph, actions};
    return o;
}

/* Nothing left in flight: where a draining job goes. */
static struct engine_job_out drained(enum engine_phase ph, const struct engine_job_facts *f)
{
    if (ph == ENGINE_PH_RB_DRAINING)
        return out(ENGINE_PH_NEEDS_OPERATOR, ENGINE_ACT_RECORD | ENGINE_ACT_FINISH);
    if (!f->rollback_wanted)
        return out(f->cancel ? ENGINE_PH_CANCELLED : ENGINE_PH_FAILED,
                   ENGINE_ACT_RECORD | ENGINE_ACT_FINISH);
    return out(ENGINE_PH_ROLLING_BACK, ENGINE_ACT_RECORD | ENGINE_ACT_BUILD_ROLLBACK);
}

struct engine_job_out engine_job_step(enum engine_phase ph, enum engine_job_event ev,
                                      const struct engine_job_facts *f)
{
    if (engine_phase_final(ph))
        return out(ph, 0); /* J3 */
    switch (ph) {
    case ENGINE_PH_PENDING:
        if (ev == ENGINE_EV_CANCEL)
            return out(ENGINE_PH_CANCELLED, ENGINE_ACT_RECORD | ENGINE_ACT_FINISH);
        if (ev == ENGINE_EV_START)
            return out(f->paused ? ENGINE_PH_PAUSED : ENGINE_PH_RUNNING,
                       ENGINE_ACT_PLAN | ENGINE_ACT_RECORD);
        return out(ph, 0);
    case ENGINE_PH_RUNNING:
    case ENGINE_PH_PAUSED:
        switch (ev) {
        case ENGINE_EV_PROGRESS:
            if (f->plan_done && f->in_flight == 0)
                return out(ENGINE_PH_SUCCEEDED, ENGINE_ACT_RECORD | ENGINE_ACT_FINISH);
            return out(ph, 0);
        case ENGINE_EV_GAVE_UP:
        case ENGINE_EV_STALLED:
        case ENGINE_EV_CANCEL:
            if (f->in_flight == 0) {
                struct engine_job_out o = drained(ENGINE_PH_DRAINING, f);
                o.actions |= ENGINE_ACT_WITHDRAW;
                return o;
            }
            return out(ENGINE_PH_DRAINING, ENGINE_ACT_RECORD | ENGINE_ACT_WITHDRAW);
        case ENGINE_EV_PAUSE:
            if (ph == ENGINE_PH_RUNNING)
                return out(ENGINE_PH_PAUSED, ENGINE_ACT_RECORD | ENGINE_ACT_WITHDRAW);
            return out(ph, 0);
        case ENGINE_EV_RESUME:
            if (ph == ENGINE_PH_PAUSED)
                return out(ENGINE_PH_RUNNING, ENGINE_ACT_RECORD);
            return out(ph, 0);
        default:
            return out(ph, 0);
        }
    case ENGINE_PH_DRAINING:
    case ENGINE_PH_RB_DRAINING:
        if ((ev == ENGINE_EV_PROGRESS || ev == ENGINE_EV_GAVE_UP || ev == ENGINE_EV_CANCEL ||
             ev == ENGINE_EV_STALLED) &&
            f->in_flight == 0)
            return drained(ph, f); /* J2 */
        return out(ph, 0);
    case ENGINE_PH_ROLLING_BACK:
        if (ev == ENGINE_EV_GAVE_UP)
            return f->in_flight == 0 ? drained(ENGINE_PH_RB_DRAINING, f)
                                     : out(ENGINE_PH_RB_DRAINING, ENGINE_ACT_RECORD);
        if (ev == ENGINE_EV_STALLED) /* nothing will take its items: take them back */
            return f->in_flight == 0
                       ? drained(ENGINE_PH_RB_DRAINING, f)
                       : out(ENGINE_PH_RB_DRAINING, ENGINE_ACT_RECORD | ENGINE_ACT_WITHDRAW);
        if (ev == ENGINE_EV_PROGRESS && f->plan_done && f->in_flight == 0)
            return out(f->cancel ? ENGINE_PH_CANCELLED : ENGINE_PH_ROLLED_BACK,
                       ENGINE_ACT_RECORD | ENGINE_ACT_FINISH);
        return out(ph, 0); /* a rollback is neither paused nor cancelled */
    default:
        return out(ph, 0);
    }
}

/* ---- tasks ------------------------------------------------------------------------- */

static const char *const task_names[] = {
    [ENGINE_TS_WAITING] = "waiting",
    [ENGINE_TS_PENDING] = "pending",
    [ENGINE_TS_QUEUED] = "queued",
    [ENGINE_TS_RUNNING] = "running",
    [ENGINE_TS_SUCCEEDED] = "succeeded",
    [ENGINE_TS_FAILED] = "failed",
    [ENGINE_TS_FAILED_DEP] = "failed-dependency",
    [ENGINE_TS_SKIPPED] = "skipped",
    [ENGINE_TS_CANCELLED] = "cancelled",
};

const char *engine_task_state_name(enum engine_task_state s)
{
    return s < ENGINE_TS_COUNT ? task_names[s] : "unknown";
}

int engine_task_state_parse(const char *s)
{
    for (int i = 0; s && i < ENGINE_TS_COUNT; i++)
        if (strcmp(s, task_names[i]) == 0)
            return i;
    return -1;
}

char engine_task_letter(enum engine_task_state s)
{
    switch (s) {
    case ENGINE_TS_QUEUED:
    case ENGINE_TS_RUNNING:
        return 'q';
    case ENGINE_TS_SUCCEEDED:
        return 'S';
    case ENGINE_TS_FAILED:
        return 'F';
    case ENGINE_TS_SKIPPED:
        return 'K';
    case ENGINE_TS_CANCELLED:
        return 'C';
    default:
        return '.'; /* waiting, pending, failed-dependency: derived from the others */
    }
}

static struct engine_task_out task_out(enum engine_task_state st, unsigned actions)
{
    struct engine_task_out o = {st, actions};
    return o;
}

struct engine_task_out engine_task_step(struct engine_task_rec *t, enum engine_task_event ev,
                                        const struct engine_task_policy *pol)
{
    enum engine_task_state st = (enum engine_task_state)t->state;
    switch (ev) {
    case ENGINE_TEV_DISPATCH:
        if (st != ENGINE_TS_WAITING && st != ENGINE_TS_PENDING)
            return task_out(st, 0);
        if (t->attempt >= ENGINE_MAX_ATTEMPT) {
            t->state = ENGINE_TS_FAILED;
            return task_out(ENGINE_TS_FAILED, ENGINE_TACT_GAVE_UP);
        }
        t->attempt++; /* T1 */
        t->state = ENGINE_TS_QUEUED;
        return task_out(ENGINE_TS_QUEUED,
                        ENGINE_TACT_PUT |
                            (pol->is_create && t->failures ? ENGINE_TACT_CLEANUP : 0));
    case ENGINE_TEV_STARTED:
        if (st != ENGINE_TS_QUEUED)
            return task_out(st, 0);
        t->state = ENGINE_TS_RUNNING;
        return task_out(ENGINE_TS_RUNNING, 0);
    case ENGINE_TEV_OK:
        if (st != ENGINE_TS_QUEUED && st != ENGINE_TS_RUNNING)
            return task_out(st, 0);
        t->state = ENGINE_TS_SUCCEEDED;
        return task_out(ENGINE_TS_SUCCEEDED, ENGINE_TACT_EXEC_OK);
    case ENGINE_TEV_FAIL:
        if (st != ENGINE_TS_QUEUED && st != ENGINE_TS_RUNNING)
            return task_out(st, 0);
        if (t->failures < 255)
            t->failures++;
        if (t->failures >= pol->max_failures || t->attempt >= ENGINE_MAX_ATTEMPT) { /* T2 */
            t->state = ENGINE_TS_FAILED;
            return task_out(ENGINE_TS_FAILED, ENGINE_TACT_EXEC_FAIL | ENGINE_TACT_GAVE_UP);
        }
        t->attempt++;
        t->state = ENGINE_TS_QUEUED;
        /* T3: a create that failed may have made a machine: it goes first. */
        return task_out(ENGINE_TS_QUEUED, ENGINE_TACT_PUT | ENGINE_TACT_AVOID_WORKER |
                                              (pol->is_create ? ENGINE_TACT_CLEANUP : 0));
    case ENGINE_TEV_LOST:
        /* T4: its worker lost the slot (died, or was cut off and killed its plugin): again,
           elsewhere, without counting a failure; a create counts one, so that the next
           attempt cleans up whatever this one made (T3). */
        if (st != ENGINE_TS_QUEUED && st != ENGINE_TS_RUNNING)
            return task_out(st, 0);
        if (pol->is_create)
            return engine_task_step(t, ENGINE_TEV_FAIL, pol);
        if (t->attempt >= ENGINE_MAX_ATTEMPT) {
            t->state = ENGINE_TS_FAILED;
            return task_out(ENGINE_TS_FAILED, ENGINE_TACT_EXEC_FAIL | ENGINE_TACT_GAVE_UP);
        }
        t->attempt++;
        t->state = ENGINE_TS_QUEUED;
        return task_out(ENGINE_TS_QUEUED, ENGINE_TACT_PUT | ENGINE_TACT_AVOID_WORKER);
    case ENGINE_TEV_WITHDRAWN:
        /* Its item was taken back unclaimed. RUNNING too: a run record says it started, but
           its worker no longer holds the item (it died, or lost its claim and killed its
           plugin: invariant 3), so that attempt is over and nothing else would end it. */
        if (st != ENGINE_TS_QUEUED && st != ENGINE_TS_RUNNING)
            return task_out(st, 0);
        t->state = ENGINE_TS_PENDING;
        return task_out(ENGINE_TS_PENDING, ENGINE_TACT_EXEC_REQUEUE);
    case ENGINE_TEV_CANCEL:
        if (st != ENGINE_TS_WAITING && st != ENGINE_TS_PENDING)
            return task_out(st, 0);
        t->state = ENGINE_TS_CANCELLED;
        return task_out(ENGINE_TS_CANCELLED, 0);
    }
    return task_out(st, 0);
}
