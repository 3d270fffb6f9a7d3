/*
 * store_rows: query results as JSON, and transactions.
 *
 * The API's queries all want their rows as JSON objects; this converts a
 * PGresult once, by column type, so that the query files hold SQL and not
 * conversion code. Runs on the calling (pool) thread; no shared state.
 */
#include <stdlib.h>
#include <string.h>

#include "store.h"

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

int store_begin(PGconn *conn, struct drv_err *err)
{
    return store_exec(conn, "BEGIN", 0, NULL, NULL, err);
}

int store_commit(PGconn *conn, struct drv_err *err)
{
    return store_exec(conn, "COMMIT", 0, NULL, NULL, err);
}

void store_rollback(PGconn *conn)
{
    struct drv_err ignored;
    store_exec(conn, "ROLLBACK", 0, NULL, NULL, &ignored);
}
