/*
 * watchdog: a job that cannot go on says so, and in the end gives up.
 *
 * Two ways a job can wait for ever without anything failing: nobody serves its
 * queue (no live worker of its tenant and class: none was started, all died, a
 * frozen one lost its session), or it runs past any reasonable time (a task
 * that hangs with a live worker, a plugin that never answers). The engine's
 * other paths end a task only when a worker reports, so without this a job
 * stays "running" and says nothing.
 *
 * The rule, checked on the engine's tick (every 5 s) and whenever the worker
 * group changes, for each job this node owns and runs (engine_watch_step, pure, unit-tested in
 * tests/engine/ test_watchdog.c):
 *
 *   1. A job dispatches (RUNNING or ROLLING_BACK), has tasks queued or running,
 *      and /drover/members/worker holds no worker of its tenant (proven by its
 *      ACL: coord_group_watch_checked) whose classes include the job's and that
 *      is not draining (a worker told to stop says
 *      "draining" in its member data: it finishes what it runs and takes
 *      nothing more): it is UNSERVED. The first time, the owner logs
 *      job-no-worker (warn) and counts it in drover_jobs_unserved; when a worker
 *      comes back it logs job-worker-back.
 *   2. UNSERVED for engine.no_worker_timeout (default 10 minutes; 0: wait for
 *      ever): the job STALLS. In the forward plan it fails as if a task had
 *      given up: its queued items are taken back and the rollback follows (whose
 *      own tasks are watched the same way). In the rollback it ends
 *      needs-operator: nothing can undo what was done, an operator must look.
 *   3. engine.job_deadline (default 0: none) past since the job was created,
 *      in the forward plan (RUNNING or PAUSED): the job STALLS the same way. A
 *      rollback is not cut short by the deadline: it undoes what was made.
 *
 * The clocks: a job's age is PostgreSQL's now() - created_at when the owner
 * loaded it, plus this node's monotonic time since (so no two nodes' wall
 * clocks are compared); the time unserved is counted by the owner from when it
 * first saw it, so a new owner starts counting again (a failover restarts the
 * no-worker clock; the deadline it keeps).
 *
 * Invariants:
 *   W1. A job stalls at most once per phase: the STALLED event moves it out of
 *       RUNNING, PAUSED or ROLLING_BACK, and the watchdog acts only there.
 *   W2. A served job never stalls for want of workers; a job that is not
 *       dispatching (pending, draining, final) is never UNSERVED.
 *
 * Cost: O(jobs owned) per tick, one string map lookup each.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "commit.h"
#include "coord.h"
#include "engine_int.h"
#include "log.h"
#include "strmap.h"
#include "taskmsg.h"
#include "watchdog.h"
#include "xalloc.h"

#define MOD "engine"

/* The node's. */
struct ewatchdog {
    struct strmap *served; /* "<tenant>/<class>" -> live workers (a count, not a pointer) */
    bool have_workers;     /* the group has been read once */
    int item_version;      /* queue items' format: the lowest "taskmsg" of the live workers */
    int64_t no_worker_ms, deadline_ms;
    size_t unserved; /* jobs owned here that no worker serves now */
};

/* A job's (made when it is loaded). */
struct ewatch {
    int64_t unserved_since; /* when this owner saw no worker serve it (ms, monotonic), 0: served */
    int64_t age_at_load_ms; /* PostgreSQL's now() - created_at when loaded */
    int64_t t_loaded;       /* when that was (ms, monotonic) */
};

void engine__watchdog_init(struct engine *e, int64_t no_worker_ms, int64_t deadline_ms)
{
    e->watchdog = xcalloc(1, sizeof(*e->watchdog));
    e->watchdog->no_worker_ms = no_worker_ms;
    e->watchdog->deadline_ms = deadline_ms;
    e->watchdog->item_version = 1; /* until the workers are seen */
}

int engine__workers_item_version(const struct engine *e)
{
    return e->watchdog->item_version;
}

void engine__watchdog_free(struct engine *e)
{
    if (!e->watchdog)
        return;
    strmap_free(e->watchdog->served);
    free(e->watchdog);
    e->watchdog = NULL;
}

size_t engine__watchdog_unserved(const struct engine *e)
{
    return e->watchdog->unserved;
}

void engine__watchdog_loaded(struct ejob *j, int64_t age_ms)
{
    if (!j->watch)
        j->watch = xcalloc(1, sizeof(*j->watch));
    j->watch->age_at_load_ms = age_ms;
    j->watch->t_loaded = clock_mono_ms();
}

void engine__watchdog_job_free(struct ejob *j)
{
    free(j->watch);
    j->watch = NULL;
}

enum engine_watch engine_watch_step(const struct engine_watch_facts *f)
{
    bool forward = f->phase == ENGINE_PH_RUNNING || f->phase == ENGINE_PH_PAUSED;
    if (forward && f->deadline_ms > 0 && f->age_ms >= f->deadline_ms)
        return ENGINE_WATCH_DEADLINE; /* rule 3 */
    if (!engine_phase_dispatches(f->phase) || f->in_flight == 0 || !f->workers_known ||
        f->serving > 0)
        return ENGINE_WATCH_FINE; /* W2 */
    if (f->no_worker_ms > 0 && f->unserved_since_ms > 0 &&
        f->now_ms - f->unserved_since_ms >= f->no_worker_ms)
        return ENGINE_WATCH_NO_WORKER; /* rule 2 */
    return ENGINE_WATCH_UNSERVED;      /* rule 1 */
}

void engine__member_queues(const json_t *d, const char *tenant,
                           void (*fn)(const char *queue, void *arg), void *arg)
{
    size_t k;
    json_t *c;
    json_array_foreach(json_object_get(d, "classes"), k, c)
    {
        if (!tenant || !json_is_string(c))
            continue;
        char key[300];
        snprintf(key, sizeof(key), "%s/%s", tenant, json_string_value(c));
        fn(key, arg);
    }
}

static void count_cb(const char *queue, void *arg)
{
    struct strmap *served = arg;
    strmap_put(served, queue, (void *)((uintptr_t)strmap_get(served, queue) + 1)); /* a count */
}

/* "<tenant>/<class>" -> live workers serving it, rebuilt from the whole group on each change. */
void engine__workers_seen(struct engine *e, const struct coord_member_info *m, size_t n)
{
    struct ewatchdog *w = e->watchdog;
    strmap_free(w->served);
    w->served = strmap_new();
    /* The queue items' format: one every live worker reads (taskmsg.h). A member that says
       none is of a build before item version 2; with no worker at all, the first that
       comes may be of any build. */
    int items = n ? TASKMSG_ITEM_VERSION : 1;
    for (size_t i = 0; i < n; i++) {
        json_error_t jerr;
        json_t *d = json_loads(m[i].json, 0, &jerr);
        json_int_t v = json_integer_value(json_object_get(d, "taskmsg"));
        if (v < items)
            items = v < 1 ? 1 : (int)v;
        const char *tenant = json_string_value(json_object_get(d, "tenant"));
        if (json_is_true(json_object_get(d, "draining")))
            tenant = NULL; /* on its way out: it takes nothing more, so it serves nothing */
        if (m[i].proof == COORD_MEMBER_UNPROVEN)
            tenant = NULL; /* its ACL does not prove the tenant it names: forged, or made
                              with droverd's credentials (docs/security.md) */
        engine__member_queues(d, tenant, count_cb, w->served);
        json_decref(d);
    }
    w->have_workers = true;
    if (items != w->item_version)
        log_info(MOD, "event=item-format-chosen node=%s version=%d workers=%zu", e->node_id, items,
                 n);
    w->item_version = items;
}

static unsigned serving(const struct ewatchdog *w, const struct ejob *j)
{
    char key[300];
    snprintf(key, sizeof(key), "%s/%s", j->tenant, j->cls);
    return w->served ? (unsigned)(uintptr_t)strmap_get(w->served, key) : 0;
}

static void stall(struct ejob *j, const char *why)
{
    size_t len = strlen(j->st.error);
    if (engine_phase_rollback(j->st.phase) && len)
        snprintf(j->st.error + len, sizeof(j->st.error) - len, "; rollback stopped: %s", why);
    else if (!len)
        snprintf(j->st.error, sizeof(j->st.error), "%s", why);
    engine__job_event(j, ENGINE_EV_STALLED);
}

void engine__watchdog(struct ejob *j)
{
    struct ewatchdog *wd = j->e->watchdog;
    struct ewatch *jw = j->watch;
    if (j->own != EJ_ACTIVE || engine__commit_finishing(j) || !j->cur || !jw)
        return;
    int64_t now = clock_mono_ms();
    struct engine_watch_facts f = {
        .phase = j->st.phase,
        .in_flight = j->cur->in_flight,
        .workers_known = wd->have_workers,
        .serving = serving(wd, j),
        .now_ms = now,
        .unserved_since_ms = jw->unserved_since,
        .no_worker_ms = wd->no_worker_ms,
        .age_ms = jw->age_at_load_ms + (now - jw->t_loaded),
        .deadline_ms = wd->deadline_ms,
    };
    enum engine_watch w = engine_watch_step(&f);
    if (w != ENGINE_WATCH_FINE && w != ENGINE_WATCH_DEADLINE && !jw->unserved_since) {
        jw->unserved_since = now;
        wd->unserved++;
        log_warn(MOD,
                 "event=job-no-worker job=%s tenant=%s class=%s in_flight=%zu gives_up_in_ms=%lld",
                 j->id, j->tenant, j->cls, f.in_flight, (long long)wd->no_worker_ms);
    } else if (w == ENGINE_WATCH_FINE && jw->unserved_since) {
        if (f.serving > 0)
            log_info(MOD, "event=job-worker-back job=%s tenant=%s class=%s waited_ms=%lld", j->id,
                     j->tenant, j->cls, (long long)(now - jw->unserved_since));
        engine__watchdog_forget(j);
    }
    char why[200];
    if (w == ENGINE_WATCH_NO_WORKER) {
        snprintf(why, sizeof(why), "no worker of tenant %s serves class %s (waited %lld s)",
                 j->tenant, j->cls, (long long)((now - jw->unserved_since) / 1000));
        log_warn(MOD, "event=job-no-worker-gave-up job=%s phase=%s error=\"%s\"", j->id,
                 engine_phase_name(j->st.phase), why);
        engine__watchdog_forget(j);
        stall(j, why);
    } else if (w == ENGINE_WATCH_DEADLINE) {
        snprintf(why, sizeof(why), "ran past its deadline of %lld s (engine.job_deadline)",
                 (long long)(wd->deadline_ms / 1000));
        log_warn(MOD, "event=job-deadline job=%s phase=%s age_ms=%lld", j->id,
                 engine_phase_name(j->st.phase), (long long)f.age_ms);
        j->e->stats.past_deadline++; /* drover_engine_jobs_past_deadline_total */
        engine__watchdog_forget(j);
        stall(j, why);
    }
}

void engine__watchdog_forget(struct ejob *j)
{
    if (!j->watch || !j->watch->unserved_since)
        return;
    j->watch->unserved_since = 0;
    j->e->watchdog->unserved--;
}
