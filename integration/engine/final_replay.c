/*
 * final_replay: send a finished job's final write again, as its owner would
 * after an answer lost with its COMMIT (engine_final_replay, issue 22 item
 * 6). Usage: final_replay CONNINFO JOB_ID. It fills the final write from the
 * job's row (its status, owner, token and target as recorded) and runs
 * engine__pg_final_work, fenced like the engine's. Exit 0 when the write
 * returned 0, 1 otherwise (the error on standard error).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <libpq-fe.h>

#include "job_pg.h"
#include "store.h"
#include "xalloc.h"

static const char *field(const json_t *row, const char *k)
{
    const char *s = json_string_value(json_object_get(row, k));
    return s ? s : "";
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: final_replay CONNINFO JOB_ID\n");
        return 2;
    }
    PGconn *conn = PQconnectdb(argv[1]);
    if (PQstatus(conn) != CONNECTION_OK) {
        fprintf(stderr, "final_replay: %s", PQerrorMessage(conn));
        return 1;
    }
    struct drv_err err;
    json_t *row = NULL;
    const char *p[] = {argv[2]};
    int rc = store_query_row(conn,
                             "SELECT tenant_id::text AS tenant_id, cluster_id::text AS cluster_id,"
                             " owner, owner_token::text AS token, status, phase,"
                             " coalesce(error, '') AS error, operation, target::text AS target"
                             " FROM jobs WHERE id = $1::bigint",
                             1, p, &row, &err);
    if (rc) {
        fprintf(stderr, "final_replay: %s\n", err.msg);
        return 1;
    }
    struct engine__pg_final f;
    memset(&f, 0, sizeof(f));
    snprintf(f.id, sizeof(f.id), "%s", argv[2]);
    snprintf(f.tenant_id, sizeof(f.tenant_id), "%s", field(row, "tenant_id"));
    snprintf(f.cluster_id, sizeof(f.cluster_id), "%s", field(row, "cluster_id"));
    snprintf(f.node, sizeof(f.node), "%s", field(row, "owner"));
    f.token = strtoll(field(row, "token"), NULL, 10);
    f.status = xstrdup(field(row, "status"));
    f.phase = xstrdup(field(row, "phase"));
    f.error = xstrdup(field(row, "error"));
    f.op = xstrdup(field(row, "operation"));
    f.target = xstrdup(*field(row, "target") ? field(row, "target") : "null");
    f.detail = xstrdup("{\"replay\":true}");
    f.fresh_create = strcmp(f.op, "create") == 0;
    rc = engine__pg_final_work(conn, &f, &err);
    if (rc)
        fprintf(stderr, "final_replay: %s\n", err.msg);
    free(f.status);
    free(f.phase);
    free(f.error);
    free(f.op);
    free(f.target);
    free(f.detail);
    json_decref(row);
    PQfinish(conn);
    return rc ? 1 : 0;
}
