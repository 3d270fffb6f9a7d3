/*
 * final_replay: send a finished job's final write again, as its owner would
 * after an answer lost with its COMMIT (engine_final_replay, issue 22 item
 * 6). Usage: final_replay CONNINFO JOB_ID [JOB_ID...]. It fills each final
 * write from the job's row (its status, owner, token and target as recorded)
 * and runs engine__pg_final_work, fenced like the engine's; with several jobs,
 * their final writes go in one batch (engine__pg_multi_work), as the engine
 * sends those of jobs that end together. Exit 0 when the write
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

/* The final write of job id as its row records it (status, owner, token, target). */
static int final_of(PGconn *conn, const char *id, struct engine__pg_final *f, struct drv_err *err)
{
    json_t *row = NULL;
    const char *p[] = {id};
    int rc =
        store_query_row(conn,
                        "SELECT tenant_id::text AS tenant_id, cluster_id::text AS cluster_id,"
                        " owner, owner_token::text AS token, owner_zk::text AS zk, status, phase,"
                        " coalesce(error, '') AS error, operation, target::text AS target"
                        " FROM jobs WHERE id = $1::bigint",
                        1, p, &row, err);
    if (rc)
        return rc;
    memset(f, 0, sizeof(*f));
    snprintf(f->id, sizeof(f->id), "%s", id);
    snprintf(f->tenant_id, sizeof(f->tenant_id), "%s", field(row, "tenant_id"));
    snprintf(f->cluster_id, sizeof(f->cluster_id), "%s", field(row, "cluster_id"));
    snprintf(f->node, sizeof(f->node), "%s", field(row, "owner"));
    f->token = strtoll(field(row, "token"), NULL, 10);
    f->zk = strtoll(field(row, "zk"), NULL, 10);
    f->status = xstrdup(field(row, "status"));
    f->phase = xstrdup(field(row, "phase"));
    f->error = xstrdup(field(row, "error"));
    f->op = xstrdup(field(row, "operation"));
    f->target = xstrdup(*field(row, "target") ? field(row, "target") : "null");
    f->detail = xstrdup("{\"replay\":true}");
    f->fresh_create = strcmp(f->op, "create") == 0;
    json_decref(row);
    return 0;
}

static int by_id(const void *a, const void *b)
{
    return engine__pg_id_cmp(((const struct engine__pg_part *)a)->id,
                             ((const struct engine__pg_part *)b)->id);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: final_replay CONNINFO JOB_ID [JOB_ID...]\n");
        return 2;
    }
    PGconn *conn = PQconnectdb(argv[1]);
    if (PQstatus(conn) != CONNECTION_OK) {
        fprintf(stderr, "final_replay: %s", PQerrorMessage(conn));
        return 1;
    }
    size_t n = (size_t)argc - 2;
    struct drv_err err;
    struct engine__pg_final *fs = xcalloc(n, sizeof(*fs));
    struct engine__pg_part *parts = xcalloc(n, sizeof(*parts));
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        rc = final_of(conn, argv[i + 2], &fs[i], &err);
        parts[i] =
            (struct engine__pg_part){ENGINE__PG_FINAL, fs[i].id, fs[i].token, fs[i].zk, &fs[i]};
    }
    if (rc == 0 && n == 1) {
        rc = engine__pg_final_work(conn, &fs[0], &err);
    } else if (rc == 0) {
        /* Several: one batch, as the engine sends the final writes of jobs that end together
         * (engine__pg_multi_work); every part must succeed. */
        qsort(parts, n, sizeof(*parts), by_id);
        struct engine__pg_multi m = {parts, n, xcalloc(n, sizeof(int)),
                                     xcalloc(n, sizeof(struct drv_err))};
        rc = engine__pg_multi_work(conn, &m, &err);
        for (size_t i = 0; rc == 0 && i < n; i++)
            if (m.rc[i]) {
                rc = m.rc[i];
                err = m.err[i];
            }
        free(m.rc);
        free(m.err);
    }
    if (rc)
        fprintf(stderr, "final_replay: %s\n", err.msg);
    for (size_t i = 0; i < n; i++) {
        free(fs[i].status);
        free(fs[i].phase);
        free(fs[i].error);
        free(fs[i].op);
        free(fs[i].target);
        free(fs[i].detail);
    }
    free(fs);
    free(parts);
    PQfinish(conn);
    return rc ? 1 : 0;
}
