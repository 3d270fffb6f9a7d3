/*
 * batch: the stage between the jobs' writes and the servers (batch.c has the design
 * note; docs/engine.md "Batching across jobs"). A job hands a part here (a PostgreSQL
 * part: its load, its start, a round's batch or its final write; a ZooKeeper part: a
 * round's multi-op) with the callback that hears its outcome; the batch sends it with the
 * other jobs' parts of the same turn of the loop and calls nothing of the job's but that
 * callback, exactly once. The batch's own fields (struct ebatch, in struct engine) are
 * batch.c's alone. Loop thread only.
 */
#ifndef DROVER_ENGINE_BATCH_H
#define DROVER_ENGINE_BATCH_H

#include <stdbool.h>
#include <stddef.h>

struct engine;
struct ejob;
struct drv_err;
struct coord_queue;
struct coord_txn_result;

/* Make the batch's state (the test hooks read from DROVER_FAULT) / answer what is gathered
 * and not sent (after store_quiesce; the jobs are dead by then: DRV_EAGAIN, unsent) and
 * orphan the multi-ops in flight, whose answers coord may still deliver. */
void engine__batch_init(struct engine *e);
void engine__batch_free(struct engine *e);

/* ---- PostgreSQL ------------------------------------------------------------------------ */

/* Hand a job's PostgreSQL part to its lane's next transaction: kind is an enum
 * engine__pg_kind and arg the struct of that kind (job_pg.h: an engine__pg_load, _start,
 * _batch or _final, whose id and token it carries). done hears its outcome on the loop,
 * exactly once, as if the part had been sent alone (also when the engine stops:
 * DRV_EAGAIN). */
void engine__batch_pg_part(struct engine *e, int kind, void *arg,
                           void (*done)(int rc, const struct drv_err *err, void *arg));

/* ---- ZooKeeper ------------------------------------------------------------------------- */

/* One op of a job's multi-op. */
enum engine__zop_kind { ENGINE__ZOP_CREATE, ENGINE__ZOP_SET, ENGINE__ZOP_DELETE, ENGINE__ZOP_PUT };

struct engine__zop {
    enum engine__zop_kind kind;
    char *path; /* owned (NULL for a put) */
    char *data; /* owned */
    int version;
    struct coord_queue *q; /* a put's queue, key and priority */
    char key[80];
    int prio;
    int tag; /* > 0: an op of a slot's (assign.c: its group in the round, from 1) */
};

/*
 * A job's multi-op as the batch sends it: the job's ops in order (its state's versioned set
 * first), fenced by the job's lock. The maker owns it and its ops; the batch only reads
 * them, and calls done once with the outcome as if the part had been sent alone (failed_op
 * indexes ops), also when the engine stopped with it gathered or in flight (DRV_ECONFLICT,
 * failed_op -1: the job is dead by then).
 */
struct engine__zpart {
    struct ejob *j;
    struct engine__zop *ops;
    size_t n, cap;
    size_t bytes; /* the estimate of the ops' size (the byte budget) */
    void (*done)(const struct coord_txn_result *r, struct engine__zpart *z);
};

/* Append an op (path and data owned from here on); returns it. bytes grows by its
 * estimate. */
struct engine__zop *engine__zpart_add(struct engine__zpart *z, enum engine__zop_kind kind,
                                      char *path, char *data, int version);
/* Drop op i (a delete that failed: sent again without it). */
void engine__zpart_drop(struct engine__zpart *z, size_t i);
/* Free the ops (not z). */
void engine__zpart_clear(struct engine__zpart *z);

/* Hand a job's multi-op to the next batch (sent at the end of this turn of the loop, or
 * when the batch in flight is answered). */
void engine__batch_zk(struct engine *e, struct engine__zpart *z);

#endif
