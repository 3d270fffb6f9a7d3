/*
 * watchdog: a job that cannot go on says so, then gives up (watchdog.c has the rules and
 * their invariants). Its fields are its own: the node's count of who serves which queue
 * (struct ewatchdog, e->watchdog) and each job's clocks (struct ewatch, j->watch). Loop
 * thread, but for the pure engine_watch_step.
 */
#ifndef DROVER_ENGINE_WATCHDOG_H
#define DROVER_ENGINE_WATCHDOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine_int.h"

enum engine_watch {
    ENGINE_WATCH_FINE,      /* served, or not waiting for a worker */
    ENGINE_WATCH_UNSERVED,  /* tasks in flight and no live worker serves the job's queue */
    ENGINE_WATCH_NO_WORKER, /* unserved for engine.no_worker_timeout: stall */
    ENGINE_WATCH_DEADLINE,  /* the forward plan ran past engine.job_deadline: stall */
};

struct engine_watch_facts {
    enum engine_phase phase;
    size_t in_flight;          /* tasks queued or running */
    bool workers_known;        /* the worker group has been read */
    unsigned serving;          /* live workers of the job's tenant and class */
    int64_t now_ms;            /* monotonic */
    int64_t unserved_since_ms; /* 0: served when last looked at */
    int64_t no_worker_ms;      /* 0: wait for ever */
    int64_t age_ms;            /* since the job was created */
    int64_t deadline_ms;       /* 0: none */
};

/* Pure: what the watchdog makes of a job (rules and invariants in watchdog.c). */
enum engine_watch engine_watch_step(const struct engine_watch_facts *f);

/* The node's: made with the engine (engine.no_worker_timeout, engine.job_deadline; 0:
 * none), freed with it. */
void engine__watchdog_init(struct engine *e, int64_t no_worker_ms, int64_t deadline_ms);
void engine__watchdog_free(struct engine *e);
struct coord_member_info;
/* The worker group changed: count who serves which "<tenant>/<class>". */
void engine__workers_seen(struct engine *e, const struct coord_member_info *m, size_t n);
/* Each "<tenant>/<class>" queue a worker's member data d names, to fn (none when tenant is
 * NULL: the caller's word that the member serves nothing). assign.c reads the same group. */
void engine__member_queues(const json_t *d, const char *tenant,
                           void (*fn)(const char *queue, void *arg), void *arg);
/* The queue items' format version every live worker reads (taskmsg.h; 1 before any is seen). */
int engine__workers_item_version(const struct engine *e);
/* Jobs owned here that no worker serves now (drover_engine_jobs_unserved). */
size_t engine__watchdog_unserved(const struct engine *e);

/* A job's: its age when loaded (PostgreSQL's now() - created_at, ms): the deadline's clock
 * starts from it. Freed with the job. */
void engine__watchdog_loaded(struct ejob *j, int64_t age_ms);
void engine__watchdog_job_free(struct ejob *j);
/* Look at one owned job (the tick): log, count, stall. */
void engine__watchdog(struct ejob *j);
/* The job is served again or leaves this node: stop counting it as unserved. */
void engine__watchdog_forget(struct ejob *j);

#endif
