/*
 * store_int: what the store's own files share and nobody else uses.
 *
 * The files: store.c (the PostgreSQL pool: store.h), store_prepared.c (named
 * statements prepared once per connection), store_rows.c (results as JSON,
 * transactions), migrations.c (the schema as numbered migrations), conf.c (the
 * store's configuration keys); the API's queries by subject: store_auth.c (tenants,
 * users, tokens, the audit log), store_entities.c (the catalogue, versioned),
 * store_clusters.c (clusters, nodes, jobs), store_tasks.c (a job's tasks a page at a
 * time), store_quotas.c (quotas and use), store_resources.c (plugin resources),
 * store_catalogs.c (the catalogue by version, pinned once per version).
 */
#ifndef DROVER_STORE_INT_H
#define DROVER_STORE_INT_H

#include <stdbool.h>

#include <libpq-fe.h>

#include "error.h"

/*
 * Check a result's status. Success (COMMAND_OK or TUPLES_OK): r goes to *res
 * (the caller PQclears it) or is freed when res is NULL, and 0 comes back.
 * Failure: r is freed, err gets the SQLSTATE (base-36 in lib_code) and the
 * message, and the code is DRV_EAGAIN when the connection broke, else DRV_EPG.
 */
int store__result(PGconn *conn, PGresult *r, PGresult **res, struct drv_err *err);

/*
 * Set by store__result (on the pool thread) when the server's answer says this
 * connection cannot do what the pool needs any more although libpq still calls it
 * open: the server is read-only now (SQLSTATE 25006: demoted, or a replica), or it
 * is going away (57P01 admin shutdown, 57P02 crash shutdown, 57P03 cannot connect
 * now). The pool drops the connection after the work and connects again, and
 * libpq's target_session_attrs=read-write finds the primary of the moment.
 */
extern _Thread_local bool store__conn_unusable;

/*
 * Test hook (DROVER_FAULT=pg-commit-lost:SUBSTRING[:N], docs/testing.md; store_rows.c):
 * the first COMMIT of a transaction that ran a statement holding SUBSTRING, and every
 * N-th such after it (N 2 when not given), is sent and its answer read (so the server
 * really committed), then the connection is shut down under libpq and the caller gets
 * DRV_EAGAIN, as when the connection drops between COMMIT and its answer.
 * store__fault_note(sql) is called with every statement run (pool thread).
 */
void store__fault_note(const char *sql);

/* Does SQLSTATE state (five characters) mean the connection must be dropped? */
bool store__sqlstate_drops(const char *state);

#endif
