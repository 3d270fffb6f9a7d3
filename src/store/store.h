/*
 * store: PostgreSQL, Drover's system of record.
 *
 * Threads: a store owns a small pool of threads, each with its own PGconn.
 * Work is a function that runs on a pool thread with a connection; its
 * completion callback runs on the event loop's thread (through a loopq), so
 * the loop never blocks on the database. A connection that breaks is dropped
 * and opened again on next use, so a restart of PostgreSQL is survived: work
 * submitted while it is down completes with DRV_EAGAIN (the API's 503), and
 * work after it is back succeeds, with no restart of droverd.
 *
 * Failover (PostgreSQL under Patroni, conninfo a libpq multi-host string with
 * target_session_attrs=read-write): a connection is also dropped when the
 * server answers that it is read-only (SQLSTATE 25006, a demoted primary) or
 * shutting down (57P01, 57P02, 57P03) or any connection exception (class 08);
 * that work completes with DRV_EAGAIN and the next work connects to whichever
 * server is primary then. Work is never run twice by the pool: a caller that
 * retries (the engine's fenced writes) makes its work safe to repeat.
 *
 * Health: store_healthy() is the result of the last ping (a `SELECT 1` sent
 * every second from the loop through the pool), read by /readyz.
 *
 * SQL: parameters always go through store_exec()'s $1..$n parameters
 * (PQexecParams); no SQL is built from strings.
 *
 * Migrations: store_migrate() applies the versioned schema (migrations.c)
 * under a PostgreSQL advisory lock, so that of several droverd starting
 * together exactly one applies each migration, and a restart applies nothing.
 * It blocks and is meant for start-up.
 */
#ifndef DROVER_STORE_H
#define DROVER_STORE_H

#include <stdbool.h>

#include <jansson.h>
#include <libpq-fe.h>

#include "config.h"
#include "error.h"

struct event_base;
struct store;

/* Runs on a pool thread with a live connection. Return 0 or a DRV_E* code. */
typedef int (*store_work_fn)(PGconn *conn, void *arg, struct drv_err *err);
/* Runs on the loop's thread after the work: rc and err are the work's. */
typedef void (*store_done_fn)(int rc, const struct drv_err *err, void *arg);

/* base must have been created after evthread_use_pthreads(). conninfo is copied. */
/* Where the system of record is: droverd's postgres.* keys fill it (store_config_keys). */
struct store_opts {
    const char *conninfo; /* libpq connection string (store_migrate, store_new) */
    int pool_size;        /* connections, one thread each (store_new's nthreads) */
};

/* The postgres.* keys of droverd's config file, into a struct store_opts (src/store/conf.c). */
extern const struct config_key store_config_keys[];

struct store *store_new(struct event_base *base, const char *conninfo, int nthreads);
/*
 * Shutdown, on the loop thread once the loop no longer runs: stop the threads
 * (running work finishes), end the work that never ran with DRV_EAGAIN, and
 * run every completion now, so that each owner hears of its work. Later
 * submits complete at once with DRV_EAGAIN.
 */
void store_quiesce(struct store *s);
/* store_quiesce, then free. */
void store_free(struct store *s);

/* Queue work; done (may be NULL) runs on the loop afterwards. */
void store_submit(struct store *s, store_work_fn work, store_done_fn done, void *arg);

/* 1 when the last ping succeeded. Loop thread only. */
int store_healthy(const struct store *s);

/* The pool's use now, for /metrics. Any thread. */
struct store_pool_stats {
    int size;      /* threads, each with at most one connection */
    int busy;      /* threads running work */
    int connected; /* threads holding a connection, as of the end of their last work */
    int queued;    /* work waiting for a thread */
    unsigned long long submitted;      /* work submitted since the start */
    unsigned long long dropped;        /* connections dropped: lost, read-only, shutting down */
    unsigned long long server_changes; /* connections made to another server than the last */
};
void store_pool_stats(struct store *s, struct store_pool_stats *st);
/* Begin pinging every second (from the loop). */
void store_start_health(struct store *s);

/*
 * Run sql with text parameters (NULL entries are SQL NULL). On success *res
 * (when res is not NULL) receives the result, owned by the caller (PQclear);
 * on failure err carries the SQLSTATE (lib_code: its five characters as a
 * base-36 number, 0 when none) and PostgreSQL's message, and a broken
 * connection yields DRV_EAGAIN.
 */
int store_exec(PGconn *conn, const char *sql, int nparams, const char *const *params,
               PGresult **res, struct drv_err *err);

/*
 * Run a constant script of several statements (the simple query protocol):
 * for migrations only, never with data from outside.
 */
int store_exec_script(PGconn *conn, const char *sql, struct drv_err *err);

/* The SQLSTATE carried in err->lib_code, as text (buf of 6 bytes). */
const char *store_sqlstate(const struct drv_err *err, char buf[6]);

/*
 * Connect synchronously (start-up, tools, tests). NULL with err on failure.
 *
 * A silent network (a partition that drops packets, no reset) would hold a query on an
 * open connection for the kernel's retransmission time, a quarter of an hour: every
 * connection is made with tcp_user_timeout 10 s (data sent and not acknowledged for that
 * long ends the connection) and TCP keepalives (idle 5 s, then 3 probes 2 s apart: an
 * idle or waiting connection whose server vanished ends within 11 s), so that work meeting
 * such a network fails with DRV_EAGAIN within about 10 s. conninfo's own settings of these
 * keywords win (they are given before it).
 */
PGconn *store_connect(const char *conninfo, struct drv_err *err);

/*
 * After a failed store_connect: is the failure the server's state, worth waiting for?
 * true when the server does not answer or does not accept connections yet (stopped,
 * starting, shutting down, in recovery: PQping's NO_RESPONSE and REJECT); false when it
 * accepts connections, so the failure is the caller's (password, database name, rights),
 * or when conninfo cannot be used at all (NO_ATTEMPT); true again when the servers answer
 * but none is writable for target_session_attrs=read-write ("session is read-only": every
 * server a replica while Patroni elects a primary, seen by scripts/chaos --hosts --ha), and
 * when a connection succeeds now (the one that failed met the election before it ended).
 * Blocks for one or two connection attempts.
 */
bool store_worth_waiting(const char *conninfo);

/* Apply pending migrations; *applied (when not NULL) receives how many this call applied. */
int store_migrate(const char *conninfo, const char *node_id, int *applied, struct drv_err *err);
/* The newest schema version this build knows. */
int store_schema_version(void);
/* The schema that has job_plans and the catalogue by version (docs/schema.md, version 9):
   jobs are started that way once every droverd member says it knows this schema. */
#define STORE_SCHEMA_JOB_PLANS 9

/* ------------------------------------------------------------------------ */
/* Queries for the API (store_rows.c, store_auth.c, store_entities.c,       */
/* store_clusters.c). Each runs on a pool thread with the connection it is  */
/* given; ids travel as decimal text. Every `json_t **out` receives a new   */
/* reference owned by the caller. Errors: DRV_ENOENT (no such row, or not   */
/* visible to the tenant/owner given), DRV_EEXIST (a unique name in use),   */
/* DRV_ECONFLICT (a state that forbids the change; err says which),         */
/* DRV_EAGAIN (database unreachable), DRV_EPG (anything else).              */
/* ------------------------------------------------------------------------ */

/*
 * store_exec through a named prepared statement, prepared on first use per
 * connection. sql must be a string constant: its address names the statement.
 * Every API query goes through this (store_query_json included).
 */
int store_execp(PGconn *conn, const char *sql, int nparams, const char *const *params,
                PGresult **res, struct drv_err *err);
/* statement_timeout (ms, 0: none) for the connections store_execp sees next. Call at start-up. */
void store_set_query_timeout(long ms);

/*
 * Run sql and give its rows as a JSON array of objects keyed by column name:
 * integers as integers, booleans as booleans, json/jsonb parsed, SQL NULL as
 * null, everything else as text.
 */
int store_query_json(PGconn *conn, const char *sql, int nparams, const char *const *params,
                     json_t **rows, struct drv_err *err);
/* The first row of the same, or DRV_ENOENT when there is none. */
int store_query_row(PGconn *conn, const char *sql, int nparams, const char *const *params,
                    json_t **row, struct drv_err *err);

/* Transactions: BEGIN, COMMIT, and a ROLLBACK that never fails (errors ignored). */
int store_begin(PGconn *conn, struct drv_err *err);
int store_commit(PGconn *conn, struct drv_err *err);
void store_rollback(PGconn *conn);

/* ---- tenants, users, tokens, audit (store_auth.c) ---- */

/* The token row by its public id: user_id, role, tenant_id (null for a
 * superadmin), user, tenant, salt and hash (hex), expires_ms (Unix time in ms,
 * 0 for none). DRV_ENOENT when unknown, revoked, expired, or its user or
 * tenant is deleted. */
int store_token_lookup(PGconn *conn, const char *token_id, json_t **row, struct drv_err *err);
/* A new token row; expires_s: seconds from now (decimal text), NULL for never. *row:
   {id, label, created_at, expires_at}. */
int store_token_insert(PGconn *conn, const char *token_id, const char *user_id,
                       const char *salt_hex, const char *hash_hex, const char *expires_s,
                       const char *label, json_t **row, struct drv_err *err);
/* A user's live tokens (not revoked, not expired), oldest first: [{id, label, created_at,
   expires_at}]. */
int store_token_list(PGconn *conn, const char *user_id, json_t **items, struct drv_err *err);
/*
 * Revoke a token by its public id. Only a token of user_id (when not NULL) or
 * of a user of tenant_id (when not NULL) is found: DRV_ENOENT otherwise.
 */
int store_token_revoke(PGconn *conn, const char *token_id, const char *tenant_id,
                       const char *user_id, struct drv_err *err);
/* The newest limit audit entries of a tenant (every tenant's when NULL). */
int store_audit_list(PGconn *conn, const char *tenant_id, const char *limit, json_t **items,
                     struct drv_err *err);
/* 1 when a superadmin exists. */
int store_superadmin_exists(PGconn *conn, int *exists, struct drv_err *err);
/* tenant_id NULL for a superadmin. *user_id receives the new id (text, 24 bytes). */
int store_user_insert(PGconn *conn, const char *tenant_id, const char *name, const char *role,
                      char user_id[24], struct drv_err *err);
/* A tenant's live users, by name. */
int store_user_list(PGconn *conn, const char *tenant_id, json_t **items, struct drv_err *err);
/* A live user's id by tenant and name (24 bytes), DRV_ENOENT when absent. */
int store_user_id(PGconn *conn, const char *tenant_id, const char *name, char user_id[24],
                  struct drv_err *err);
/* Mark a live user of the tenant deleted and revoke its tokens (inside the caller's
   transaction); *user_id receives its id. DRV_ENOENT when absent. Its clusters and jobs
   are left as they are. */
int store_user_delete(PGconn *conn, const char *tenant_id, const char *name, char user_id[24],
                      struct drv_err *err);
/* Share-lock the tenant row while it is live (in a transaction that adds to the tenant):
   DRV_ECONFLICT when it has been deleted. store_tenant_delete waits for it. */
int store_tenant_lock_live(PGconn *conn, const char *tenant_id, struct drv_err *err);
/* Mark a live tenant deleted with its users (tokens revoked) and entities, under the
   tenant row's lock (inside the caller's transaction); *tenant_id receives its id.
   DRV_ENOENT when absent; DRV_ECONFLICT while it has live clusters (deleted_at unset). */
int store_tenant_delete(PGconn *conn, const char *name, char tenant_id[24], struct drv_err *err);
int store_tenant_insert(PGconn *conn, const char *name, json_t **row, struct drv_err *err);
/* Live tenants, by name. */
int store_tenant_list(PGconn *conn, json_t **items, struct drv_err *err);
/* A live tenant's id by name (text, 24 bytes), DRV_ENOENT when absent. */
int store_tenant_id(PGconn *conn, const char *name, char id[24], struct drv_err *err);
/* Append to the audit log; detail is JSON text (NULL: {}). Any id may be NULL. */
int store_audit(PGconn *conn, const char *tenant_id, const char *user_id, const char *actor,
                const char *action, const char *entity_kind, const char *entity_id,
                const char *source, const char *detail, struct drv_err *err);

/* ---- admin entities (store_entities.c) ---- */

enum store_put_mode {
    STORE_PUT_CREATE,  /* DRV_EEXIST when a live entity has the name */
    STORE_PUT_REPLACE, /* DRV_ENOENT when none has */
    STORE_PUT_UPSERT,  /* either */
};

/* Live entities of a kind ("provider", ...), by name: [{name, version, body}]. */
int store_entity_list(PGconn *conn, const char *tenant_id, const char *kind, json_t **items,
                      struct drv_err *err);
/* Every live entity of the tenant: [{kind, name, version, body}], by kind then name. */
int store_entity_all(PGconn *conn, const char *tenant_id, json_t **items, struct drv_err *err);
/* {name, version, body}, DRV_ENOENT when absent or deleted. */
int store_entity_get(PGconn *conn, const char *tenant_id, const char *kind, const char *name,
                     json_t **row, struct drv_err *err);
/* One version (decimal text) of an entity: {name, version, body}; DRV_ENOENT when there is
   no such version or the entity is deleted. */
int store_entity_get_version(PGconn *conn, const char *tenant_id, const char *kind,
                             const char *name, const char *version, json_t **row,
                             struct drv_err *err);
/* Write body (JSON text) as the entity's next version; *version receives it. */
int store_entity_put(PGconn *conn, const char *tenant_id, const char *kind, const char *name,
                     const char *body, enum store_put_mode mode, int *version, struct drv_err *err);
/* Mark every version deleted; DRV_ENOENT when none is live. */
int store_entity_delete(PGconn *conn, const char *tenant_id, const char *kind, const char *name,
                        struct drv_err *err);

/* ---- the catalogue by version (store_catalogs.c; docs/schema.md, version 9) ---- */

/* The tenant's catalogue version now (0: it has written no entity since version 9). */
int store_catalog_head(PGconn *conn, const char *tenant_id, long long *version,
                       struct drv_err *err);
/* The tenant's live entities and the version they are, from one snapshot: *rows
   [{kind, name, version, body}] by kind then name (as store_entity_all). */
int store_catalog_read(PGconn *conn, const char *tenant_id, long long *version, json_t **rows,
                       struct drv_err *err);
/* A pinned version's entities (as store_catalog_read's); DRV_ENOENT when not pinned. */
int store_catalog_pinned(PGconn *conn, const char *tenant_id, long long version, json_t **rows,
                         struct drv_err *err);
/* Pin a version's entities (JSON text of store_catalog_read's rows), once: a version
   already pinned is left as it is (safe to repeat, a lost answer's replay included). */
int store_catalog_pin(PGconn *conn, const char *tenant_id, long long version, const char *entities,
                      struct drv_err *err);

/* ---- quotas (store_quotas.c) ---- */

/* Lock the live tenant row FOR NO KEY UPDATE (DRV_ECONFLICT when deleted): the quota
   checks of one tenant's writes (and its deletion) serialise on it, inside the caller's
   transaction; inserts naming the tenant (their foreign key's FOR KEY SHARE) do not. */
int store_tenant_lock_quota(PGconn *conn, const char *tenant_id, struct drv_err *err);
/* The live tenant row share-locked (FOR SHARE: taken by many at once, waited for by
   store_tenant_lock_quota, a quota's change and the tenant's deletion) and its own limits
   (*quotas, an object); DRV_ECONFLICT when deleted. */
int store_tenant_share_quota(PGconn *conn, const char *tenant_id, json_t **quotas,
                             struct drv_err *err);
/* One of the tenant's lanes (a transaction advisory lock of lanes, numbered 0 to lanes - 1):
   the first free from first on, else lane first once it is free; *lane receives it. */
int store_quota_lane(PGconn *conn, const char *tenant_id, int lanes, int first, int *lane,
                     struct drv_err *err);
/* *row {quotas (the tenant's own limits, an object), clusters, nodes (sum of live clusters'
   sizes), jobs (not ended), resource_versions, resource_bytes}. */
int store_tenant_usage(PGconn *conn, const char *tenant_id, json_t **row, struct drv_err *err);
/* Replace the tenant's own limits (quotas: a JSON object's text). */
int store_tenant_quotas_set(PGconn *conn, const char *tenant_id, const char *quotas,
                            struct drv_err *err);
/* Delete the tenant's resources versions older than its newest keep that no unfinished job
   pins (jobs.inputs.resources.version); *pruned receives how many (may be NULL). */
int store_resource_prune(PGconn *conn, const char *tenant_id, long keep, long *pruned,
                         struct drv_err *err);

/* ---- resources (store_resources.c) ---- */

/* Insert the tenant's next resources version (under the tenant row's lock, inside the
   caller's transaction); *row {version, sha256, size, files, created_at, created_by}. */
int store_resource_insert(PGconn *conn, const char *tenant_id, const char *sha256, const char *size,
                          const char *files, const char *body, const char *created_by, json_t **row,
                          struct drv_err *err);
/* The tenant's versions, newest first, without their bodies. */
int store_resource_list(PGconn *conn, const char *tenant_id, json_t **items, struct drv_err *err);
/* One version with its body (text); DRV_ENOENT when there is none. */
int store_resource_get(PGconn *conn, const char *tenant_id, const char *version, json_t **row,
                       struct drv_err *err);

/* ---- clusters and jobs (store_clusters.c) ---- */

/* owner_id: NULL for every cluster of the tenant, else only that user's. */
int store_cluster_list(PGconn *conn, const char *tenant_id, const char *owner_id, json_t **items,
                       struct drv_err *err);
/* The cluster with its nodes; lock (inside a transaction) takes FOR UPDATE. */
int store_cluster_get(PGconn *conn, const char *tenant_id, const char *owner_id,
                      const char *cluster_id, int lock, json_t **row, struct drv_err *err);
/* A cluster's snapshots (the full state after each successful operation), newest first, at most
 * 100: {job, operation, taken_at, nodes (count)}; with job_id, that one with its "state"
 * (DRV_ENOENT if the cluster or that snapshot is not there for this tenant and owner). */
int store_cluster_snapshots(PGconn *conn, const char *tenant_id, const char *owner_id,
                            const char *cluster_id, const char *job_id, json_t **out,
                            struct drv_err *err);
struct store_cluster_new {
    const char *tenant_id, *owner_id, *name, *template_name, *template_version, *provider;
    const char *size, *services, *hardwaretype, *imagetype, *config; /* services, config: JSON */
    const char *layout;                                              /* JSON, NULL: [] */
};
/* DRV_EEXIST when a live cluster of the tenant has the name. */
int store_cluster_insert(PGconn *conn, const struct store_cluster_new *c, json_t **row,
                         struct drv_err *err);
/*
 * The cluster's last job and the layouts of the nodes whose forward tasks
 * failed in it: {"job": id, "operation": ..., "request": {...},
 * "failed_layouts": [{"services", "hardwaretype", "imagetype", "count": 1}]}.
 * DRV_ENOENT when the cluster has no job.
 */
int store_cluster_last_failure(PGconn *conn, const char *cluster_id, json_t **row,
                               struct drv_err *err);
/* A failed cluster made again: its new layout and size, status pending (a recreate). */
int store_cluster_relayout(PGconn *conn, const char *cluster_id, const char *layout, long size,
                           struct drv_err *err);
int store_cluster_set_status(PGconn *conn, const char *cluster_id, const char *status,
                             struct drv_err *err);
/* The unfinished job (pending, running, paused) of a cluster, or DRV_ENOENT. */
int store_cluster_open_job(PGconn *conn, const char *cluster_id, json_t **row, struct drv_err *err);
/* How long the tenant's tasks took, from its latest 5,000 succeeded tasks: rows
 * {"service" ("" for node tasks), "action", "secs" (mean, a real), "n"}, for a plan's
 * estimate (docs/api.md "Plans"). */
int store_task_durations(PGconn *conn, const char *tenant_id, json_t **rows, struct drv_err *err);
/* A new pending job; request is JSON text; catalog_version (decimal text, NULL: none) the
   catalogue version the request was checked against, pinned (store_catalog_pin): the
   engine plans the job from it. */
int store_job_insert(PGconn *conn, const char *tenant_id, const char *cluster_id,
                     const char *operation, const char *request, const char *user_id,
                     const char *catalog_version, json_t **row, struct drv_err *err);
/* The job with its tasks and progress; owner_id as for clusters. */
int store_job_get(PGconn *conn, const char *tenant_id, const char *owner_id, const char *job_id,
                  json_t **row, struct drv_err *err);
/* The same without "tasks": progress from the counts the tasks' triggers keep
 * (job_task_counts), and "task_changes", the job's newest attempt number (task_attempts.seq:
 * every attempt written or changed takes the next): O(1) in the job's size, to read and to
 * send. */
int store_job_get_summary(PGconn *conn, const char *tenant_id, const char *owner_id,
                          const char *job_id, json_t **row, struct drv_err *err);
/* cluster_id NULL: every visible job. Newest first, at most 500. */
int store_job_list(PGconn *conn, const char *tenant_id, const char *owner_id,
                   const char *cluster_id, json_t **items, struct drv_err *err);
/*
 * Record a user's request on a job (want: "pause", "resume", "cancel") in
 * jobs.control, for its owner to act on. DRV_ECONFLICT (naming the status)
 * when the job's state does not allow it: cancel an open job not already
 * being cancelled, pause a pending or running one, resume a paused one (or
 * one whose pause has not been acted on yet). *row receives the job.
 */
int store_job_control(PGconn *conn, const char *tenant_id, const char *owner_id, const char *job_id,
                      const char *want, json_t **row, struct drv_err *err);
/* ---- a job's tasks, a page at a time (store_tasks.c) ----
 * The caller has checked the job is the caller's (store_job_get_summary). */

/* Which tasks: each field NULL for any. states: a PostgreSQL array of statuses ("{a,b}").
   node and service "": the tasks without one (a machine's own tasks have no service, anchors
   no node). */
struct store_task_filter {
    const char *phase; /* "f" or "r" */
    const char *states;
    const char *node, *service, *action;
};
/*
 * At most limit tasks of the job matching f (NULL: all), in (phase, idx) order, after the
 * position (after_phase, after_idx) (after_phase "" for the first page): each {id, phase,
 * idx, node_id, service, action, status, attempts, worker, deps, strategy, started_at,
 * ended_at}. *items a new array (the caller's).
 */
int store_task_page(PGconn *conn, const char *job_id, const struct store_task_filter *f,
                    const char *after_phase, long after_idx, long limit, json_t **items,
                    struct drv_err *err);
/* The tasks of a phase at the indices of idx_array (a PostgreSQL array "{1,2}"), as an object
   from the decimal index to {idx, id, status}. */
int store_task_deps(PGconn *conn, const char *job_id, const char *phase, const char *idx_array,
                    json_t **deps, struct drv_err *err);
/* The phase's queued and running tasks: [{id, node_id, service, action, status}]. */
int store_task_busy(PGconn *conn, const char *job_id, const char *phase, json_t **busy,
                    struct drv_err *err);
/*
 * The phase's tasks grouped by "node" or by service and action ("service": "svc · action"),
 * the groups whose key contains contains (NULL: all), failed groups first, then running or
 * queued, waiting, the rest, each in plan order; at most limit: [{key, node (by node) or
 * service and action (by service; null where the tasks have none), first (lowest idx),
 * total, states {status: n}, groups (how many groups matched in all)}].
 */
int store_task_groups(PGconn *conn, const char *job_id, const char *phase, const char *by,
                      const char *contains, long limit, json_t **groups, struct drv_err *err);

/* Ids of the tenant's unfinished jobs (every tenant's when tenant_id is NULL). */
int store_job_open_ids(PGconn *conn, const char *tenant_id, json_t **ids, struct drv_err *err);

#endif
