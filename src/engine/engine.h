/*
 * engine: the part of droverd that runs jobs (docs/engine.md).
 *
 * Every droverd runs one engine. A job belongs to the member that the hash
 * ring of /drover/members/droverd names for its id; that member takes the
 * job's lock (/drover/locks/jobs/<id>) and, holding it, plans the job,
 * dispatches its ready tasks to the workers' queues, consumes their run
 * records, retries, rolls back, and writes the outcome. Jobs are announced
 * by the API as /drover/jobs/<id>; every engine watches that list and the
 * members, and takes or hands over jobs as the ring says.
 *
 * Guarantees (invariants 1, 2, 3, 5, 7, docs/architecture.md), each checked by a test in
 * integration/engine (docs/engine.md lists which):
 *   - one owner acts on a job at a time: every ZooKeeper write of an owner is
 *     a multi-op that checks its lock, and every PostgreSQL write carries its
 *     fencing token and changes nothing when a newer token is recorded; an
 *     owner that hears its lock is lost stops touching the job at once;
 *   - a new owner resumes from the task log: a task that succeeded never runs
 *     again, an attempt in flight is waited for, the rest continues;
 *   - a job ends succeeded, rolled-back, cancelled, failed (rollback not
 *     wanted) or needs-operator (a rollback failed), and says why;
 *   - no znode over a few KB, no children list longer than the tasks in
 *     flight or the task log's chunks (512 tasks each).
 *
 * Threads: everything on the loop thread of the event_base; PostgreSQL work
 * on the store's pool, plans on the engine's own bounded pool
 * (engine.plan_threads), each handing back to the loop.
 *
 * Ownership: the caller owns the engine and frees it before the coord
 * session and the store it was given.
 */
#ifndef DROVER_ENGINE_H
#define DROVER_ENGINE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "error.h"

struct event_base;
struct coord_session;
struct store;
struct engine;
struct model_catcache;

struct engine_opts {
    const char *node_id;      /* this droverd's member id in /drover/members/droverd (required) */
    unsigned max_failures;    /* failed attempts before a task gives up (0: 3) */
    unsigned max_in_flight;   /* tasks queued or running per job (0: only the plan's limits;
                                 engine.max_in_flight's default is 1000) */
    bool no_rollback;         /* leave a failed job "failed" instead of rolling it back */
    size_t txn_budget;        /* bytes of one ZooKeeper multi-op (0: 256 KiB) */
    int task_timeout_ms;      /* time limit given to workers (0: the plugin's own) */
    int plan_threads;         /* threads that build plans (0: 2) */
    int no_worker_timeout_ms; /* a job no worker serves gives up after this (0: never) */
    int job_deadline_ms;      /* a forward plan running longer gives up (0: no deadline) */
    int resync_ms; /* list the announced jobs and the members again this often (0: 30 s) */
    const unsigned char *key; /* the secrets key (32 bytes), or NULL */
    /* The catalogues parsed, by tenant and version, shared with the API (model.h); borrowed;
       NULL: each job parses its own */
    struct model_catcache *catalogs;
};

/*
 * The engine.* keys of droverd's config file: they fill max_failures,
 * max_in_flight, no_rollback (engine.rollback = false), task_timeout_ms,
 * plan_threads, no_worker_timeout_ms, job_deadline_ms, resync_ms and txn_budget of a struct
 * engine_opts
 * (src/engine/conf.c; docs/configuration.md). The program sets node_id and key.
 */
extern const struct config_key engine_config_keys[];

/* Start: watch the members and the job list, take the jobs the ring gives this node. */
struct engine *engine_new(struct event_base *base, struct coord_session *zk, struct store *db,
                          const struct engine_opts *o, struct drv_err *err);

/*
 * Hand every job over (drain, SIGTERM): stop dispatching, finish the writes
 * in flight, release each job's lock so that the next owner takes it at
 * once, without waiting for a session timeout. done runs once this node
 * owns nothing. The engine takes no job after this.
 */
void engine_stop(struct engine *e, void (*done)(void *arg), void *arg);

/*
 * Undo engine_stop (an operator's undrain): take the jobs the ring gives this
 * node again. A done given to engine_stop that has not run yet never runs.
 * Nothing happens when the engine is not stopping.
 */
void engine_resume(struct engine *e);

struct engine_stats {
    size_t owned;              /* jobs this node holds the lock of */
    unsigned long dispatched;  /* task attempts put on queues */
    unsigned long results;     /* outcomes consumed */
    unsigned long finished;    /* jobs brought to a final state */
    unsigned long taken;       /* jobs whose lock this node acquired */
    unsigned long handed_over; /* jobs released because the ring moved them */
    unsigned long lost;        /* jobs whose lock was lost */
    unsigned long resumed;     /* jobs resumed from another owner's task log (failovers) */
    /* jobs stalled for running past engine.job_deadline (watchdog.c) */
    unsigned long past_deadline;
    /* The cost of the jobs in round trips (docs/engine.md "What a job costs"): PostgreSQL
     * transactions the jobs' owner sent (one per batch of loads, starts, rounds and final
     * writes) and ZooKeeper multi-ops (the start's creates, the rounds', the sweep's). A
     * PostgreSQL batch carries one or more jobs' parts: pg_batches counts the batches,
     * pg_batch_jobs the parts they carried. */
    unsigned long pg_txns;
    unsigned long zk_multis;
    unsigned long pg_batches;
    unsigned long pg_batch_jobs;
    unsigned long zk_multi_jobs; /* the jobs the rounds' multi-ops carried */
    /* Jobs' loads and starts (pg_shared_starts) and final writes (pg_shared_ends) that went
     * in a transaction carrying other jobs' parts too (batch.c). */
    unsigned long pg_shared_starts;
    unsigned long pg_shared_ends;
    /* Jobs' parts held (another transaction held a lock they need) and sent again
     * (batch.c, job_pg.h engine__pg_held). */
    unsigned long pg_held;
};
void engine_get_stats(const struct engine *e, struct engine_stats *st);

struct evbuffer;
/*
 * Prometheus text (docs/operations.md "Metrics"). tenants false: this node's
 * figures, no tenant in them (jobs owned, failovers and handovers with their
 * durations). tenants true: the task duration and queue wait histograms of
 * the jobs this node owned, by tenant and class; only tenant's when it is not
 * NULL. Loop thread.
 */
void engine_metrics(const struct engine *e, struct evbuffer *out, bool tenants, const char *tenant);

/*
 * Other droverd members that could take this node's jobs now: not draining, and not saying
 * "postgres": false in their member data (a member that does not say, an older build,
 * counts). droverd steps out of the ring when PostgreSQL is lost only while one exists
 * (docs/operations.md "When the network fails"). Loop thread.
 */
size_t engine_peers_serving(const struct engine *e);

/* The ids of the jobs owned now, as a JSON array (new reference). */
json_t *engine_owned(const struct engine *e);

/* Release every lock at once and free (use engine_stop first for a clean handover). */
void engine_free(struct engine *e);

#endif
