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

#include <libpq-fe.h>

#include "error.h"

struct event_base;
struct store;

/* Runs on a pool thread with a live connection. Return 0 or a DRV_E* code. */
typedef int (*store_work_fn)(PGconn *conn, void *arg, struct drv_err *err);
/* Runs on the loop's thread after the work: rc and err are the work's. */
typedef void (*store_done_fn)(int rc, const struct drv_err *err, void *arg);

/* base must have been created after evthread_use_pthreads(). conninfo is copied. */
struct store *store_new(struct event_base *base, const char *conninfo, int nthreads);
/* Stops the threads (waits for running work) and frees. Queued work is dropped
 * without its done callback: call this at shutdown only. */
void store_free(struct store *s);

/* Queue work; done (may be NULL) runs on the loop afterwards. */
void store_submit(struct store *s, store_work_fn work, store_done_fn done, void *arg);

/* 1 when the last ping succeeded. Loop thread only. */
int store_healthy(const struct store *s);
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

/* Connect synchronously (start-up, tools, tests). NULL with err on failure. */
PGconn *store_connect(const char *conninfo, struct drv_err *err);

/* Apply pending migrations; *applied (when not NULL) receives how many this call applied. */
int store_migrate(const char *conninfo, const char *node_id, int *applied, struct drv_err *err);
/* The newest schema version this build knows. */
int store_schema_version(void);

#endif
