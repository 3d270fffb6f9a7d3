/*
 * rounds_merge: the rounds of several jobs in one PostgreSQL batch (engine__pg_multi_work),
 * as the engine sends them (engine_rounds_merge). Usage: rounds_merge CONNINFO TAG BAD
 * JOB_ID... Each job gets a plain round (task states and an attempt row only, the kind whose
 * statements the batch merges across jobs): its first forward task's message set to
 * "TAG-JOB" (its state and attempts as recorded), and an attempt row of run "TAG-JOB". BAD
 * (a job id, or "-") makes that job's attempt row unreadable (an attempt number that is no
 * integer), so the merged statement fails and the batch writes each part alone. Prints
 * "JOB RC" per job (RC 0: written); exit 0 when the batch committed.
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

static int round_of(PGconn *conn, const char *id, const char *tag, bool bad,
                    struct engine__pg_batch *b, struct drv_err *err)
{
    json_t *row = NULL;
    const char *p[] = {id};
    int rc = store_query_row(
        conn,
        "SELECT j.owner_token::text AS token, j.owner_zk::text AS zk, t.idx::text AS idx,"
        " t.id AS task,"
        " t.status, t.attempts::text AS attempts FROM jobs j JOIN tasks t"
        " ON t.job_id = j.id AND t.phase = 'f'"
        " WHERE j.id = $1::bigint ORDER BY t.idx LIMIT 1",
        1, p, &row, err);
    if (rc)
        return rc;
    memset(b, 0, sizeof(*b));
    snprintf(b->id, sizeof(b->id), "%s", id);
    b->token = strtoll(field(row, "token"), NULL, 10);
    b->zk = strtoll(field(row, "zk"), NULL, 10);
    b->tasks =
        xasprintf("[{\"j\":%s,\"p\":\"f\",\"i\":%s,\"st\":\"%s\",\"at\":%s,\"w\":null,"
                  "\"m\":\"%s-%s\"}]",
                  id, field(row, "idx"), field(row, "status"), field(row, "attempts"), tag, id);
    b->attempts = xasprintf("[{\"j\":%s,\"p\":\"f\",\"t\":\"%s\",\"a\":%s,\"r\":\"%s-%s\","
                            "\"w\":\"rounds-merge\",\"st\":\"succeeded\",\"s\":1,\"e\":2,"
                            "\"m\":null,\"h\":null,\"tail\":null}]",
                            id, field(row, "task"), bad ? "\"x\"" : "7", tag, id);
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
    if (argc < 5) {
        fprintf(stderr, "usage: rounds_merge CONNINFO TAG BAD JOB_ID...\n");
        return 2;
    }
    PGconn *conn = PQconnectdb(argv[1]);
    if (PQstatus(conn) != CONNECTION_OK) {
        fprintf(stderr, "rounds_merge: %s", PQerrorMessage(conn));
        return 1;
    }
    size_t n = (size_t)argc - 4;
    struct drv_err err;
    struct engine__pg_batch *bs = xcalloc(n, sizeof(*bs));
    struct engine__pg_part *parts = xcalloc(n, sizeof(*parts));
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const char *id = argv[i + 4];
        rc = round_of(conn, id, argv[2], strcmp(id, argv[3]) == 0, &bs[i], &err);
        parts[i] =
            (struct engine__pg_part){ENGINE__PG_ROUND, bs[i].id, bs[i].token, bs[i].zk, &bs[i]};
    }
    if (rc == 0) {
        qsort(parts, n, sizeof(*parts), by_id);
        struct engine__pg_multi m = {parts, n, xcalloc(n, sizeof(int)),
                                     xcalloc(n, sizeof(struct drv_err))};
        rc = engine__pg_multi_work(conn, &m, &err);
        for (size_t i = 0; i < n; i++)
            printf("%s %d\n", parts[i].id, m.rc[i]);
        free(m.rc);
        free(m.err);
    }
    if (rc)
        fprintf(stderr, "rounds_merge: %s\n", err.msg);
    for (size_t i = 0; i < n; i++) {
        free(bs[i].tasks);
        free(bs[i].attempts);
    }
    free(bs);
    free(parts);
    PQfinish(conn);
    return rc ? 1 : 0;
}
