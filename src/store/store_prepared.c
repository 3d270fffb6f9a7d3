/*
 * store_prepared: named prepared statements, prepared once per connection.
 *
 * The API's queries are string constants; the constant's address names the
 * statement. Each pool thread owns one connection, so the cache of what is
 * prepared lives in thread-local storage, tagged with the connection and its
 * backend pid: a new connection (after PostgreSQL restarted) starts empty. If
 * the server says a statement does not exist (SQLSTATE 26000), the cache is
 * dropped and the statement prepared again, once. A new connection also gets
 * statement_timeout (store_set_query_timeout): a query past it fails with
 * DRV_ETIMEDOUT instead of holding a pool thread.
 */
#include <stdio.h>
#include <string.h>

#include "store.h"
#include "store_int.h"

#define MAX_PREPARED 256

struct prepared_cache {
    const PGconn *conn;
    int backend_pid;
    const char *sql[MAX_PREPARED];
    int n;
};

static _Thread_local struct prepared_cache cache;

/* Set once at start-up (store_set_query_timeout), read by the pool threads after. */
static long query_timeout_ms;

void store_set_query_timeout(long ms)
{
    query_timeout_ms = ms;
}

static int sqlstate_is(const PGresult *r, const char *state)
{
    const char *s = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    return s && strcmp(s, state) == 0;
}

/* The statement's index in the cache, preparing it when new; -1 when the cache is full. */
static int prepare(PGconn *conn, const char *sql, int nparams, int *rc, struct drv_err *err)
{
    *rc = 0;
    int pid = PQbackendPID(conn);
    if (cache.conn != conn || cache.backend_pid != pid) {
        memset(&cache, 0, sizeof(cache));
        if (query_timeout_ms > 0) {
            /* A new connection: bound every statement's time on it. */
            char set[64];
            snprintf(set, sizeof(set), "SET statement_timeout = %ld", query_timeout_ms);
            PGresult *r = PQexec(conn, set);
            if (PQresultStatus(r) != PGRES_COMMAND_OK) {
                *rc = store__result(conn, r, NULL, err);
                return -1;
            }
            PQclear(r);
        }
        cache.conn = conn;
        cache.backend_pid = pid;
    }
    for (int i = 0; i < cache.n; i++)
        if (cache.sql[i] == sql)
            return i;
    if (cache.n == MAX_PREPARED)
        return -1;
    char name[24];
    snprintf(name, sizeof(name), "drv_%d", cache.n);
    PGresult *r = PQprepare(conn, name, sql, nparams, NULL);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        *rc = store__result(conn, r, NULL, err);
        return -1;
    }
    PQclear(r);
    cache.sql[cache.n] = sql;
    return cache.n++;
}

int store_execp(PGconn *conn, const char *sql, int nparams, const char *const *params,
                PGresult **res, struct drv_err *err)
{
    if (res)
        *res = NULL;
    store__fault_note(sql);
    for (int attempt = 0; attempt < 2; attempt++) {
        int rc;
        int i = prepare(conn, sql, nparams, &rc, err);
        if (rc)
            return rc;
        if (i < 0)
            return store_exec(conn, sql, nparams, params, res, err);
        char name[24];
        snprintf(name, sizeof(name), "drv_%d", i);
        PGresult *r = PQexecPrepared(conn, name, nparams, params, NULL, NULL, 0);
        if (attempt == 0 && sqlstate_is(r, "26000")) { /* not prepared after all */
            PQclear(r);
            memset(&cache, 0, sizeof(cache));
            continue;
        }
        if (sqlstate_is(r, "57014")) { /* statement_timeout */
            PQclear(r);
            return drv_err_set(err, DRV_ETIMEDOUT, 0, "postgresql: query took longer than %ld ms",
                               query_timeout_ms);
        }
        return store__result(conn, r, res, err);
    }
    return drv_err_set(err, DRV_EPG, 0, "postgresql: prepared statement lost twice");
}
