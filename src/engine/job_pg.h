/*
 * job_pg: the engine's PostgreSQL work (job_pg.c). Each struct is filled on
 * the loop thread, handed to a store pool thread (the *_work function), and
 * read back on the loop in the store_submit completion.
 *
 * Fencing (invariant 2, docs/architecture.md): every write of an owner runs in one
 * transaction that first locks the job's row and checks that the token
 * recorded there is the owner's (engine__pg_fence); a newer owner records a
 * higher token when it loads the job, so an older owner's transaction
 * changes nothing and fails with DRV_ECONFLICT. A token is the pair (zk, token):
 * the ZooKeeper incarnation it was taken in (jobs.owner_zk, job.c "The incarnation"),
 * then the zxid, compared in that order; a fence compares both.
 */
#ifndef DROVER_ENGINE_JOB_PG_H
#define DROVER_ENGINE_JOB_PG_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "strbuf.h"

struct ejob;
struct planner_plan;
struct model_catcache;
struct model_catset;

/* Append s to the JSON text sent as one parameter, as a JSON string (quoted, escaped); NULL as
 * null. */
void engine__pg_jstr(struct strbuf *b, const char *s);

/* Load, in two steps: claim the job with the token (recorded when higher than the one
 * there; DRV_ECONFLICT when not: a part of a batch, job.c), then read it (its own work on
 * the pool: reads need no durable commit and run in parallel). The reads come after the
 * claim, so an older owner's write can no longer land after them. */
struct engine__pg_load {
    struct ejob *j;
    char id[24], node[128];
    int64_t token, zk;            /* zk: the incarnation the token was taken in (job.c) */
    json_t *job;                  /* job row, with "tenant" (its name) */
    json_t *cluster;              /* cluster row with "nodes" */
    struct model_catcache *cache; /* the engine's (borrowed) */
    /* The catalogue: a first start's (the version the API checked the request against,
     * jobs.catalog_version, else the tenant's version now), or the one the pinned inputs
     * name ({"catalog": {"version"}}); NULL when the inputs carry their catalogue's rows. */
    struct model_catset *catset;
};
int engine__pg_claim_work(PGconn *conn, void *arg, struct drv_err *err);
int engine__pg_load_work(PGconn *conn, void *arg, struct drv_err *err);
void engine__pg_load_free(struct engine__pg_load *l);

/* Start: plan, inputs, snapshot, the task rows, the new nodes, the cluster's status. slim:
 * plan, inputs and snapshot into job_plans (every member reads them there), else on the job's
 * row as before version 9. */
struct engine__pg_start {
    char id[24], tenant_id[24], cluster_id[24], node[128];
    int64_t token, zk;
    bool slim;
    char catalog_version[24]; /* the catalogue the plan was made from ("" when unnamed) */
    char *pin;                /* its rows (JSON text) to pin first, or NULL: pinned already */
    char format[12];          /* the job's format version (jobs.format_version) */
    char *status, *phase;
    char *inputs, *plan, *sha, *snapshot, *target;
    char **task_chunks; /* JSON arrays of ROWS_PER_INSERT rows */
    size_t n_chunks;
    char *new_nodes; /* JSON array of {id, hw, img, svc} */
    const char *cluster_status;
    char *detail;
    char *ssh; /* the cluster key this start made (private part sealed), or NULL */
    struct ejob *j;
};

int engine__pg_start_work(PGconn *conn, void *arg, struct drv_err *err);
void engine__pg_start_free(struct engine__pg_start *s);

/* A batch of the running job's changes (commit.c builds it). */
struct engine__pg_batch {
    struct ejob *j;
    char id[24];
    int64_t token, zk;
    char *job_phase; /* NULL: no change to the job row */
    char *job_status;
    char *job_error;
    char *tasks;    /* JSON array of task changes, or NULL */
    char *attempts; /* JSON array of attempt rows, or NULL */
    char *nodes;    /* JSON object node id -> key-values, or NULL */
    char *rb_tasks; /* JSON array of rollback task rows to insert, or NULL */
    char *rb_plan;  /* the rollback plan's text, or NULL */
    bool slim;      /* the rollback plan goes to job_plans, not to the job's row */
    void *back;     /* commit_pg.c's round that made it (not freed here) */
};
int engine__pg_batch_work(PGconn *conn, void *arg, struct drv_err *err);

/*
 * The writes of several jobs in one transaction (batch.c gathers them per turn of the loop):
 * each job's part is its load, its start, a round's batch or its final write. One statement
 * locks every part's job row, in id order (so that two such transactions never deadlock),
 * and checks each part's token: a load's must be higher than the one recorded (it records
 * it), any other's must equal it. A part whose check fails is left out (rc[i] =
 * DRV_ECONFLICT: its owner is fenced out) before any of its statements, and the others go
 * on (a load's statement is its claim, engine__pg_claim_work). Each part's statements run
 * under their own SAVEPOINT: a part whose statements fail
 * has them rolled back (rc[i] = their error) and the others commit. Returns 0 when the
 * transaction committed (or had nothing to commit: rc[] says what each part did), or the
 * error that left nothing written (rc[] all set to it, err[] all to err). The parts must
 * come sorted by job id (engine__pg_id_cmp); a job may have at most one part.
 */
enum engine__pg_kind {
    ENGINE__PG_LOAD,  /* struct engine__pg_load: the token recorded (the reads follow alone) */
    ENGINE__PG_START, /* struct engine__pg_start */
    ENGINE__PG_ROUND, /* struct engine__pg_batch */
    ENGINE__PG_FINAL, /* struct engine__pg_final */
};
struct engine__pg_part {
    enum engine__pg_kind kind;
    const char *id; /* the job's (borrowed from arg) */
    int64_t token, zk;
    void *arg; /* borrowed */
};
struct engine__pg_multi {
    struct engine__pg_part *p; /* sorted by job id */
    size_t n;
    int *rc;             /* n results */
    struct drv_err *err; /* n errors */
};
int engine__pg_multi_work(PGconn *conn, void *arg, struct drv_err *err);
/* A part is held when another transaction holds a lock it needs: its job row (the fence
 * locks it SKIP LOCKED, in a batch and alone), or a row one of its statements writes (a task,
 * attempt, node or cluster row: no statement waits longer than ENGINE_PG_LOCK_TIMEOUT_MS, the
 * transactions' lock_timeout). Nothing of a held part is written (its statements are rolled
 * back to its savepoint, the other parts go on): rc[i] is DRV_EAGAIN with SQLSTATE 55P03
 * (lock_not_available) in err[i].lib_code, which engine__pg_held tells from a connection
 * that broke. batch.c sends a held part again shortly, its job never hears it
 * (docs/engine.md "Batching across jobs"). */
#define ENGINE_PG_LOCK_TIMEOUT_MS 200
bool engine__pg_held(int rc, const struct drv_err *err);
int engine__pg_held_set(struct drv_err *err, const char *id, const char *why);
/* One part alone, as its own work (the load unfenced, the others fenced), for a batch of
 * one. */
int engine__pg_part_work(PGconn *conn, struct engine__pg_part *p, struct drv_err *err);
/* Job ids (bigints as text) in numeric order: shorter is smaller. */
int engine__pg_id_cmp(const char *a, const char *b);
const char *engine__pg_kind_name(enum engine__pg_kind k);
void engine__pg_batch_free(struct engine__pg_batch *b);

/* The end: final status, the cluster's new (or restored) state, snapshot, audit. */
struct engine__pg_final {
    struct ejob *j;
    char id[24], tenant_id[24], cluster_id[24], node[128];
    int64_t token, zk;
    char *status, *phase, *error, *op;
    char *target;           /* per-node layout with ids: the cluster after success */
    char *services;         /* the cluster's services after success (JSON array) or NULL */
    char *config;           /* the cluster's config after success (a configure's), or NULL */
    char *template_version; /* the cluster's template version after success (an upgrade's) */
    char *detail;
    bool fresh_create; /* a create: nothing existed before */
    /* The cluster's status after success: "stopped" (a stop of every service), "active"
     * (a start or restart), or NULL: a stopped cluster stays stopped, any other is active. */
    const char *run_status;
};
/* Once per job: a replay after the job row says ended (ended_at set) changes nothing and
 * succeeds. */
int engine__pg_final_work(PGconn *conn, void *arg, struct drv_err *err);
void engine__pg_final_free(struct engine__pg_final *f);

/* Task rows [first, first + n) of a plan as JSON text (for the start and the rollback). */
char *engine__pg_task_rows(const struct planner_plan *plan, size_t first, size_t n);
/* All of a plan's task rows, in chunks of one insert each (*n of them; the start's
 * task_chunks). */
char **engine__pg_task_chunks(const struct planner_plan *plan, size_t *n);

#endif
