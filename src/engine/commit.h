/*
 * commit: a job's writes (commit.c has the design note: the rounds, the budget, the rules
 * that make a failover lose nothing, what a failure means). The pipeline's fields (struct
 * ecommit, j->commit) are the commit files' alone:
 *
 *   commit.c     drives the rounds (engine__kick), the backoff and the retry timers, the
 *                busy flags, the final write; the marks below
 *   commit_pg.c  a round's PostgreSQL batch, built from the marks, settled back into them
 *   commit_zk.c  a round's ZooKeeper multi-op with the dispatch, the same
 *
 * Every other file marks what is to be written and asks what is in flight through the
 * functions below; the rounds hand their parts to the batch (batch.h). Loop thread only.
 */
#ifndef DROVER_ENGINE_COMMIT_H
#define DROVER_ENGINE_COMMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/util.h>
#include <jansson.h>

struct ejob;
struct event;

/* ---- for every file ------------------------------------------------------------------ */

/* Make (at the job's creation) / free (with the job) its pipeline. */
void engine__commit_new(struct ejob *j);
void engine__commit_free(struct ejob *j);

/* Write what is dirty: the next ZooKeeper multi-op and PostgreSQL batch, when none is in
 * flight (what comes meanwhile goes in the next round). At the end of this turn. */
void engine__kick(struct ejob *j);
/* The job leaves this node: no timer of the pipeline fires any more. */
void engine__commit_cancel(struct ejob *j);

/* Is no write of the job's in flight: no round, and nothing held (below)? */
bool engine__commit_idle(const struct ejob *j);
/* A write of the job's outside the rounds (the start's PostgreSQL part and ZooKeeper
 * creates, a queue item being taken back) is in flight / has ended: meanwhile the pipeline
 * is not idle (a handover waits for it) and the final write waits too. */
void engine__commit_hold(struct ejob *j);
void engine__commit_unhold(struct ejob *j);
/* Does PostgreSQL lack something this owner decided while ACTIVE (rows, key-values), and
 * can it take it now (its last write did not fail)? A handover writes that first. */
bool engine__commit_pg_owed(const struct ejob *j);
/* Kept run records (rows written, results in the log) that a member of an older build
 * would merge in its listing's order: while the fleet does not keep them (engine.c,
 * fleet_keeps_runs), a handover deletes them in a round before it lets the lock go
 * (issue 33 item 4). True while some are owed, and then a round is on its way (kicked
 * now, or by the retry timer after a failed one). False while PostgreSQL is down (no
 * round goes out then). */
bool engine__commit_runs_flush(struct ejob *j);
/* How many run records are kept now (rows written, not deleted): for the logs. */
size_t engine__commit_runs_kept(const struct ejob *j);

/* Marks: the job row's phase and status; a node's key-values (props: the node's whole
 * key-values, borrowed: referenced here); the rollback plan's task rows. Each goes in the
 * next round's PostgreSQL batch. */
void engine__commit_job_row(struct ejob *j);
void engine__commit_node(struct ejob *j, const char *node, json_t *props);
void engine__commit_rollback_rows(struct ejob *j);
/* Task idx of the current plan to be put again with its new attempt (a retry, or a resume
 * that found its item gone): in the next multi-op that dispatches, with its log chunk. */
void engine__commit_retry(struct ejob *j, uint32_t idx);
/* The retries not put yet have no item: take them back here and now (pending again), so
 * that no attempt starts while the phase does not dispatch (fsm J1) and a draining job
 * does not wait for them; the job hears PROGRESS when one was taken back. */
void engine__commit_retries_withdraw(struct ejob *j);

/* The end is decided: flush what is dirty, then the final PostgreSQL write, then the sweep
 * (engine__job_wind_up). engine__commit_finishing: since then. */
void engine__commit_finish(struct ejob *j);
bool engine__commit_finishing(const struct ejob *j);

/* ---- the commit files' own ----------------------------------------------------------- */

struct ecommit {
    uint32_t *retries; /* tasks of cur to put again (a failed attempt retried) */
    size_t n_retries, cap_retries;
    bool zk_busy, pg_busy; /* a round's multi-op, a round's batch or the final write in flight */
    int held;              /* writes outside the rounds in flight (engine__commit_hold) */
    bool pg_job;           /* the job row's phase and status to write */
    bool pg_rb;            /* the rollback plan's rows to write */
    json_t *pg_nodes;      /* node id -> key-values to write */
    struct event *kick_ev, *retry_ev;
    struct event *pg_retry_ev; /* the PostgreSQL write tried again after a failure */
    bool pg_down;              /* the last PostgreSQL write failed: no ZooKeeper round (no
                                  dispatch) until one succeeds */
    int backoff_ms;
    bool finishing;       /* FINISH asked: flush, then the final write */
    bool final_sent;      /* the final PostgreSQL write is in flight or done */
    bool dispatched_once; /* this owner has put a task (logged once) */
    /* PostgreSQL records a task of the job begun (a row past waiting: read at the load,
       tasks_begun, or committed by this owner's round), so that a ZooKeeper state lost
       from now on is caught at the next load (job.c, engine_zk_state_lost). Until then a
       multi-op that puts is parked (zk_parked, zk_busy set): it goes once the round that
       carries its tasks' queued rows has committed (engine__commit_zk_unpark). */
    bool pg_begun;
    struct etxn *zk_parked;
};

/* Arm *ev (made with cb and j on first use) after the job's backoff: 100 ms doubling to
 * 5 s, jittered, one backoff per job (a write that succeeds resets it). */
void engine__commit_backoff(struct ejob *j, struct event **ev,
                            void (*cb)(evutil_socket_t, short, void *));
/* The next round after the backoff. */
void engine__commit_retry_later(struct ejob *j);
/* commit_pg.c: collect what PostgreSQL lacks and hand it to the batch; false when there is
 * nothing. Only while no batch of the job's is in flight (pg_busy). */
bool engine__commit_pg_flush(struct ejob *j);
/* commit_zk.c: build the next multi-op and hand it to the batch; nothing when there is
 * nothing to write. Only while no multi-op of the job's is in flight (zk_busy). */
void engine__commit_zk_flush(struct ejob *j);
/* commit_zk.c: the parked multi-op (ecommit.zk_parked), after a PostgreSQL round's answer
 * or a handover: sent once pg_begun; dropped as not applied while PostgreSQL is down and the
 * job is being handed over (its puts back to the retries), or freed with a dead job; else
 * kept. */
void engine__commit_zk_unpark(struct ejob *j);
/* commit_zk.c: free a parked multi-op (the job is being freed). */
void engine__commit_zk_parked_free(struct ejob *j);

#endif
