/*
 * store_rows: query results as JSON, and transactions.
 *
 * The API's queries all want their rows as JSON objects; this converts a
 * PGresult once, by column type, so that the query files hold SQL and not
 * conversion code. Runs on the calling (pool) thread; no shared state but
 * the lost COMMIT's test hook (store_int.h), which counts under a mutex.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "store.h"
#include "store_int.h"

#include "fault.h"
#include "log.h"

/* PostgreSQL type OIDs (pg_type.h is a server header; these never change). */
#define OID_BOOL 16
#define OID_INT8 20
#define OID_INT2 21
#define OID_INT4 23
#define OID_JSON 114
#define OID_JSONB 3802

static json_t *cell(const PGresult *r, int row, int col)
{
    if (PQgetisnull(r, row, col))
        return json_null();
    const char *v = PQgetvalue(r, row, col);
    switch (PQftype(r, col)) {
    case OID_BOOL:
        return json_boolean(v[0] == 't');
    case OID_INT2:
    case OID_INT4:
    case OID_INT8:
        return json_integer(strtoll(v, NULL, 10));
    case OID_JSON:
    case OID_JSONB: {
        json_t *j = json_loads(v, JSON_DECODE_ANY, NULL);
        return j ? j : json_string(v);
    }
    default:
        return json_string(v);
    }
}

int store_query_json(PGconn *conn, const char *sql, int nparams, const char *const *params,
                     json_t **rows, struct drv_err *err)
{
    PGresult *r;
    *rows = NULL;
    int rc = store_execp(conn, sql, nparams, params, &r, err);
    if (rc)
        return rc;
    json_t *a = json_array();
    int nrows = PQntuples(r), ncols = PQnfields(r);
    for (int i = 0; i < nrows; i++) {
        json_t *o = json_object();
        for (int c = 0; c < ncols; c++)
            json_object_set_new(o, PQfname(r, c), cell(r, i, c));
        json_array_append_new(a, o);
    }
    PQclear(r);
    *rows = a;
    return 0;
}

int store_query_row(PGconn *conn, const char *sql, int nparams, const char *const *params,
                    json_t **row, struct drv_err *err)
{
    json_t *rows;
    *row = NULL;
    int rc = store_query_json(conn, sql, nparams, params, &rows, err);
    if (rc)
        return rc;
    if (json_array_size(rows) == 0) {
        json_decref(rows);
        return drv_err_set(err, DRV_ENOENT, 0, "not found");
    }
    *row = json_incref(json_array_get(rows, 0));
    json_decref(rows);
    return 0;
}

/* ---- the lost COMMIT's test hook (store_int.h) ---- */

static pthread_once_t fault_once = PTHREAD_ONCE_INIT;
static char *fault_sql; /* SUBSTRING, or NULL: no hook */
static unsigned fault_every_n;
static pthread_mutex_t fault_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned fault_seen;             /* matching COMMITs that applied (fault_mu) */
static _Thread_local bool fault_marked; /* this thread's transaction ran a matching statement */

static void fault_init(void)
{
    char *a = fault_arg("pg-commit-lost");
    if (!a)
        return;
    fault_every_n = fault_every(a, 2);
    if (!*a) {
        free(a);
        return;
    }
    fault_sql = a;
    char q[300];
    log_warn("store", "event=fault-armed fault=pg-commit-lost sql=%s every=%u",
             log_quote(a, q, sizeof(q)), fault_every_n);
}

void store__fault_note(const char *sql)
{
    pthread_once(&fault_once, fault_init);
    if (fault_sql && sql && strstr(sql, fault_sql))
        fault_marked = true;
}

int store_begin(PGconn *conn, struct drv_err *err)
{
    fault_marked = false;
    return store_exec(conn, "BEGIN", 0, NULL, NULL, err);
}

int store_commit(PGconn *conn, struct drv_err *err)
{
    pthread_once(&fault_once, fault_init);
    bool marked = fault_marked;
    fault_marked = false;
    int rc = store_exec(conn, "COMMIT", 0, NULL, NULL, err);
    if (rc || !marked)
        return rc;
    pthread_mutex_lock(&fault_mu);
    bool lose = fault_seen++ % fault_every_n == 0;
    pthread_mutex_unlock(&fault_mu);
    if (!lose)
        return 0;
    /* Committed: now the connection drops before the caller hears of it. */
    shutdown(PQsocket(conn), SHUT_RDWR);
    store__conn_unusable = true;
    char q[300];
    log_warn("store", "event=fault-injected fault=pg-commit-lost sql=%s",
             log_quote(fault_sql, q, sizeof(q)));
    return drv_err_set(err, DRV_EAGAIN, 0,
                       "postgresql: server closed the connection unexpectedly (test hook "
                       "pg-commit-lost: the COMMIT applied)");
}

void store_rollback(PGconn *conn)
{
    fault_marked = false;
    struct drv_err ignored;
    store_exec(conn, "ROLLBACK", 0, NULL, NULL, &ignored);
}
