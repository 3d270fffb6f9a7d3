/*
 * job_pg: the engine's PostgreSQL work (job_pg.h has the contract).
 *
 * Every write of an owner is one transaction that starts with the fence:
 * the job's row locked FOR UPDATE and its token compared with the owner's.
 * A newer owner records its higher token when it loads the job (that
 * update waits for the row lock, so it is ordered with the older owner's
 * transactions), after which the older owner's fence finds a different
 * token and its transaction changes nothing (DRV_ECONFLICT).
 *
 * Bulk rows (140,007 tasks of a 10,000-node create) travel as one JSON
 * parameter per 10,000 rows, expanded by jsonb_to_recordset: one round trip
 * each, no SQL built from strings.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job_pg.h"
#include "log.h"
#include "model.h"
#include "planner.h"
#include "store.h"
#include "strbuf.h"
#include "strmap.h"
#include "xalloc.h"

#define ROWS_PER_INSERT 10000
#define STR_(x) #x
#define STR(x) STR_(x)

/* ---- JSON text ----------------------------------------------------------------------- */

void engine__pg_jstr(struct strbuf *b, const char *s)
{
    if (!s) {
        strbuf_addstr(b, "null");
        return;
    }
    strbuf_addch(b, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        size_t plain = 0; /* a run that needs no escape, added at once */
        while (p[plain] && p[plain] != '"' && p[plain] != '\\' && p[plain] >= 0x20)
            plain++;
        strbuf_add(b, p, plain);
        p += plain;
        if (!*p)
            break;
        if (*p == '"' || *p == '\\') {
            strbuf_addch(b, '\\');
            strbuf_addch(b, (char)*p);
        } else {
            strbuf_addf(b, "\\u%04x", *p);
        }
    }
    strbuf_addch(b, '"');
}

/* ---- shared ----------------------------------------------------------------------------- */

/* SQLSTATE lock_not_available (55P03) as store.c encodes it in lib_code (base 36). */
static int lock_na_code(void)
{
    int v = 0;
    for (const char *c = "55P03"; *c; c++)
        v = v * 36 + (*c >= '0' && *c <= '9' ? *c - '0' : *c - 'A' + 10);
    return v;
}

int engine__pg_held_set(struct drv_err *err, const char *id, const char *why)
{
    return drv_err_set(err, DRV_EAGAIN, lock_na_code(), "job %s: %s", id, why);
}

bool engine__pg_held(int rc, const struct drv_err *err)
{
    return rc == DRV_EAGAIN && err && err->lib_code == lock_na_code();
}

/* A statement that waited lock_timeout for another transaction's lock (DRV_EPG, 55P03):
 * the part's row held, as the fence's SKIP LOCKED finds it. */
static int held_from(int rc, struct drv_err *err)
{
    if (rc == DRV_EPG && err->lib_code == lock_na_code()) {
        err->code = DRV_EAGAIN;
        return DRV_EAGAIN;
    }
    return rc;
}

/* The settings of every engine write transaction. A bulk write may take minutes; an owner
 * frozen between two statements (SIGSTOP, a stalled host) must not hold the job's row lock,
 * which the next owner's load waits for: the server ends a transaction idle for 10 s. No
 * statement waits longer than ENGINE_PG_LOCK_TIMEOUT_MS for another transaction's lock (a
 * user's pause holding a task or node row a moment): it fails (55P03), its part is held
 * (engine__pg_held) and tried again shortly, and the other parts of a batch go on. */
static int tx_settings(PGconn *conn, struct drv_err *err)
{
    return store_execp(conn,
                       "SELECT set_config('statement_timeout', '300000', true),"
                       " set_config('idle_in_transaction_session_timeout', '10000', true),"
                       " set_config('lock_timeout', '" STR(ENGINE_PG_LOCK_TIMEOUT_MS) "', true)",
                       0, NULL, NULL, err);
}

/* The job's row locked (SKIP LOCKED: another transaction holding it, a user's pause or an
 * older owner frozen mid-transaction, makes the part held, not waiting) and its token
 * compared with the owner's. */
static int fence(PGconn *conn, const char *id, int64_t token, int64_t zk, struct drv_err *err)
{
    char tok[24], zks[24];
    snprintf(tok, sizeof(tok), "%lld", (long long)token);
    snprintf(zks, sizeof(zks), "%lld", (long long)zk);
    const char *p[] = {id, tok, zks};
    PGresult *r;
    int rc = store_execp(conn,
                         "SELECT (SELECT owner_token = $2::bigint AND owner_zk = $3::bigint"
                         "   FROM jobs WHERE id = $1::bigint FOR UPDATE SKIP LOCKED) AS mine,"
                         " EXISTS (SELECT 1 FROM jobs WHERE id = $1::bigint) AS there",
                         3, p, &r, err);
    if (rc)
        return rc;
    bool locked = PQntuples(r) == 1 && !PQgetisnull(r, 0, 0);
    bool mine = locked && PQgetvalue(r, 0, 0)[0] == 't';
    bool there = PQntuples(r) == 1 && PQgetvalue(r, 0, 1)[0] == 't';
    PQclear(r);
    if (!locked && there)
        return engine__pg_held_set(err, id, "its row is locked by another transaction");
    if (!mine)
        return drv_err_set(err, DRV_ECONFLICT, 0,
                           "job %s: a newer owner's token is recorded: this owner is fenced out",
                           id);
    return 0;
}

/* Run the writes of fn inside BEGIN, the fence, COMMIT. */
static int fenced(PGconn *conn, const char *id, int64_t token, int64_t zk,
                  int (*fn)(PGconn *, void *, struct drv_err *), void *arg, struct drv_err *err)
{
    int rc = store_begin(conn, err);
    if (rc)
        return rc;
    rc = tx_settings(conn, err);
    if (rc == 0)
        rc = fence(conn, id, token, zk, err);
    if (rc == 0)
        rc = held_from(fn(conn, arg, err), err);
    if (rc == 0)
        rc = store_commit(conn, err);
    if (rc)
        store_rollback(conn);
    return rc;
}

static int audit(PGconn *conn, const char *tenant_id, const char *node, const char *action,
                 const char *job_id, const char *detail, struct drv_err *err)
{
    char actor[160];
    snprintf(actor, sizeof(actor), "engine:%s", node);
    return store_audit(conn, tenant_id, NULL, actor, action, "job", job_id, NULL, detail, err);
}

/* ---- load --------------------------------------------------------------------------------- */

int engine__pg_claim_work(PGconn *conn, void *arg, struct drv_err *err)
{
    struct engine__pg_load *l = arg;
    char tok[24], zk[24];
    snprintf(tok, sizeof(tok), "%lld", (long long)l->token);
    snprintf(zk, sizeof(zk), "%lld", (long long)l->zk);
    const char *p[] = {l->id, l->node, tok, zk};
    PGresult *r;
    /* The pair (incarnation, zxid) must be higher than the one recorded (job.c "The
       incarnation"): a token of a rebuilt ZooKeeper outranks the old one's. */
    int rc = store_execp(conn,
                         "UPDATE jobs SET owner = $2, owner_token = $3::bigint,"
                         " owner_zk = $4::bigint WHERE id = $1::bigint"
                         " AND (owner_zk, owner_token) < ($4::bigint, $3::bigint) RETURNING id",
                         4, p, &r, err);
    if (rc)
        return rc;
    int claimed = PQntuples(r);
    PQclear(r);
    if (!claimed)
        return drv_err_set(err, DRV_ECONFLICT, 0, "job %s: a newer owner's token is recorded",
                           l->id);
    return 0;
}

/* The claim alone (a batch of one): in one statement, the row locked SKIP LOCKED (held by
 * another transaction: the part is held, not waiting), the token recorded when higher. */
static int claim_alone(PGconn *conn, struct engine__pg_load *l, struct drv_err *err)
{
    char tok[24], zk[24];
    snprintf(tok, sizeof(tok), "%lld", (long long)l->token);
    snprintf(zk, sizeof(zk), "%lld", (long long)l->zk);
    const char *p[] = {l->id, l->node, tok, zk};
    PGresult *r;
    /* The pair (incarnation, zxid), as engine__pg_claim_work. */
    int rc =
        store_execp(conn,
                    "WITH l AS (SELECT id, (owner_zk, owner_token) < ($4::bigint, $3::bigint)"
                    "   AS ok FROM jobs WHERE id = $1::bigint FOR UPDATE SKIP LOCKED),"
                    " u AS (UPDATE jobs j SET owner = $2, owner_token = $3::bigint,"
                    "   owner_zk = $4::bigint FROM l WHERE j.id = l.id AND l.ok RETURNING j.id)"
                    " SELECT (SELECT count(*) FROM u) AS claimed,"
                    " (SELECT count(*) FROM l) AS locked,"
                    " EXISTS (SELECT 1 FROM jobs WHERE id = $1::bigint) AS there",
                    4, p, &r, err);
    if (rc)
        return rc;
    bool claimed = PQntuples(r) == 1 && PQgetvalue(r, 0, 0)[0] == '1';
    bool locked = PQntuples(r) == 1 && PQgetvalue(r, 0, 1)[0] == '1';
    bool there = PQntuples(r) == 1 && PQgetvalue(r, 0, 2)[0] == 't';
    PQclear(r);
    if (!locked && there)
        return engine__pg_held_set(err, l->id, "its row is locked by another transaction");
    if (!claimed)
        return drv_err_set(err, DRV_ECONFLICT, 0, "job %s: a newer owner's token is recorded",
                           l->id);
    return 0;
}

/* The catalogue version v of the job's tenant: this node's parsed one, or the pinned rows. */
static int catalog_pinned(PGconn *conn, struct engine__pg_load *l, const char *tenant, long long v,
                          struct drv_err *err)
{
    l->catset = model_catcache_get(l->cache, tenant, v);
    if (l->catset)
        return 0;
    json_t *rows;
    int rc = store_catalog_pinned(conn, tenant, v, &rows, err);
    if (rc)
        return rc;
    l->catset = model_catset_new(tenant, v, rows, true);
    model_catcache_put(l->cache, l->catset);
    return 0;
}

/* A first start's catalogue when the API named none: the tenant's version now. */
static int catalog_now(PGconn *conn, struct engine__pg_load *l, const char *tenant,
                       struct drv_err *err)
{
    long long v = 0;
    int rc = store_catalog_head(conn, tenant, &v, err);
    if (rc)
        return rc;
    l->catset = model_catcache_get(l->cache, tenant, v);
    if (l->catset)
        return 0;
    json_t *rows;
    if ((rc = store_catalog_read(conn, tenant, &v, &rows, err)) != 0)
        return rc;
    l->catset = model_catset_new(tenant, v, rows, false);
    model_catcache_put(l->cache, l->catset);
    return 0;
}

int engine__pg_load_work(PGconn *conn, void *arg, struct drv_err *err)
{
    struct engine__pg_load *l = arg;
    const char *q[] = {l->id};
    /* inputs, snapshot: in job_plans for a job started since version 9 by a fleet that
       reads them there (slim), else on the row. */
    int rc =
        store_query_row(conn,
                        "SELECT j.id::text AS id, j.tenant_id::text AS tenant_id,"
                        " t.name AS tenant, j.cluster_id::text AS cluster_id, j.operation,"
                        " j.status, j.phase, j.request, coalesce(p.inputs, j.inputs) AS inputs,"
                        " j.plan_sha, j.control, j.error,"
                        " coalesce(p.snapshot, j.snapshot) AS snapshot, j.format_version,"
                        " j.owner_token, j.catalog_version::text AS catalog_version,"
                        " p.job_id IS NOT NULL AS slim,"
                        " (extract(epoch FROM now() - j.created_at) * 1000)::bigint::text"
                        "  AS age_ms,"
                        " (SELECT count(*) FROM tasks x WHERE x.job_id = j.id"
                        "  AND x.status NOT IN ('waiting', 'skipped'))::text AS tasks_begun,"
                        " (SELECT json_build_object('version', r.version, 'sha256', r.sha256)"
                        "  FROM resources r WHERE r.tenant_id = j.tenant_id"
                        "  ORDER BY r.version DESC LIMIT 1) AS resources"
                        " FROM jobs j JOIN tenants t ON t.id = j.tenant_id"
                        " LEFT JOIN job_plans p ON p.job_id = j.id"
                        " WHERE j.id = $1::bigint",
                        1, q, &l->job, err);
    if (rc == DRV_ENOENT)
        return drv_err_set(err, DRV_ENOENT, 0, "no job %s", l->id);
    if (rc)
        return rc;
    const char *c[] = {json_string_value(json_object_get(l->job, "cluster_id"))};
    if (!c[0])
        return drv_err_set(err, DRV_ENOENT, 0, "job %s has no cluster", l->id);
    rc = store_query_row(conn,
                         "SELECT c.id::text AS id, c.name, c.template_name AS template,"
                         " c.template_version, c.provider, c.status, c.layout, c.config,"
                         " c.services, c.size, c.hardwaretype, c.imagetype, c.secrets,"
                         " u.name AS owner FROM clusters c LEFT JOIN users u ON u.id = c.owner_id"
                         " WHERE c.id = $1::bigint",
                         1, c, &l->cluster, err);
    if (rc)
        return rc;
    json_t *nodes;
    rc = store_query_json(conn,
                          "SELECT id, hardwaretype, imagetype, services, properties, status"
                          " FROM nodes WHERE cluster_id = $1::bigint ORDER BY id",
                          1, c, &nodes, err);
    if (rc)
        return rc;
    json_object_set_new(l->cluster, "nodes", nodes);
    const char *tenant = json_string_value(json_object_get(l->job, "tenant_id"));
    const json_t *inputs = json_object_get(l->job, "inputs");
    const char *named = json_string_value(json_object_get(l->job, "catalog_version"));
    if (json_is_object(inputs)) {
        /* Pinned: the rows themselves (before version 9, or a fleet with an older node),
           or the version they name. */
        const json_t *cat = json_object_get(inputs, "catalog");
        if (json_is_object(cat))
            rc =
                catalog_pinned(conn, l, tenant,
                               (long long)json_integer_value(json_object_get(cat, "version")), err);
    } else if (named) {
        rc = catalog_pinned(conn, l, tenant, strtoll(named, NULL, 10), err);
    } else {
        rc = catalog_now(conn, l, tenant, err);
    }
    return rc;
}

void engine__pg_load_free(struct engine__pg_load *l)
{
    json_decref(l->job);
    json_decref(l->cluster);
    model_catset_unref(l->catset);
    free(l);
}

/* ---- start ----------------------------------------------------------------------------------- */

char *engine__pg_task_rows(const struct planner_plan *plan, size_t first, size_t n)
{
    struct strbuf b = STRBUF_INIT;
    strbuf_addch(&b, '[');
    for (size_t i = first; i < first + n && i < plan->n_tasks; i++) {
        const struct planner_task *t = &plan->tasks[i];
        strbuf_addf(&b, "%s{\"i\":%zu,\"id\":", i > first ? "," : "", i);
        engine__pg_jstr(&b, t->id);
        strbuf_addstr(&b, ",\"n\":");
        engine__pg_jstr(&b, t->node);
        strbuf_addstr(&b, ",\"s\":");
        engine__pg_jstr(&b, t->service);
        strbuf_addstr(&b, ",\"a\":");
        engine__pg_jstr(&b, planner_action_name(t->action));
        strbuf_addstr(&b, ",\"d\":[");
        for (uint32_t d = 0; d < t->n_deps; d++)
            strbuf_addf(&b, "%s%u", d ? "," : "", t->deps[d]);
        if (t->strategy.type == PLANNER_STRAT_ONE_BY_ONE)
            strbuf_addstr(&b, "],\"g\":\"one-by-one\"}");
        else if (t->strategy.amount)
            strbuf_addf(&b, "],\"g\":\"parallel:%u\"}", t->strategy.amount);
        else
            strbuf_addstr(&b, "],\"g\":null}");
    }
    strbuf_addch(&b, ']');
    return strbuf_detach(&b, NULL);
}

char **engine__pg_task_chunks(const struct planner_plan *plan, size_t *n)
{
    *n = (plan->n_tasks + ROWS_PER_INSERT - 1) / ROWS_PER_INSERT;
    char **chunks = xcalloc(*n + 1, sizeof(char *));
    for (size_t c = 0; c < *n; c++)
        chunks[c] = engine__pg_task_rows(plan, c * ROWS_PER_INSERT, ROWS_PER_INSERT);
    return chunks;
}

void engine__pg_start_free(struct engine__pg_start *s)
{
    free(s->status);
    free(s->phase);
    free(s->inputs);
    free(s->plan);
    free(s->sha);
    free(s->snapshot);
    free(s->target);
    for (size_t i = 0; i < s->n_chunks; i++)
        free(s->task_chunks[i]);
    free(s->task_chunks);
    free(s->new_nodes);
    free(s->detail);
    free(s->ssh);
    free(s->pin);
    free(s);
}

static int start_writes(PGconn *conn, void *arg, struct drv_err *err)
{
    struct engine__pg_start *s = arg;
    const char *p[] = {s->id,  s->status,   s->phase,  s->inputs, s->plan,
                       s->sha, s->snapshot, s->target, s->format};
    /* Once only, settled by its effect: this write sets started_at, so a replay (the
       same owner again after its COMMIT's answer was lost, say to a PostgreSQL failover,
       or a next owner after the first's write went through) finds it set and adds no
       second "job.started" audit row. The fence holds the row lock. */
    PGresult *r;
    int rc = store_execp(conn, "SELECT started_at IS NULL FROM jobs WHERE id = $1::bigint", 1, p,
                         &r, err);
    if (rc)
        return rc;
    bool first = PQntuples(r) == 1 && PQgetvalue(r, 0, 0)[0] == 't';
    PQclear(r);
    if (s->pin) /* the catalogue the inputs name, once per version (store_catalog_pin) */
        rc = store_catalog_pin(conn, s->tenant_id, strtoll(s->catalog_version, NULL, 10), s->pin,
                               err);
    if (rc == 0 && s->slim) {
        /* Written once (a replay writes the same: the same owner's, or a next owner's plan
           made again from the same inputs); the job row's updates then copy a small tuple. */
        const char *pp[] = {s->id, s->inputs, s->plan, s->snapshot};
        rc = store_execp(conn,
                         "INSERT INTO job_plans (job_id, inputs, plan, snapshot)"
                         " VALUES ($1::bigint, $2::jsonb, $3::jsonb, $4::jsonb)"
                         " ON CONFLICT (job_id) DO UPDATE SET inputs = excluded.inputs,"
                         " plan = excluded.plan, snapshot = excluded.snapshot",
                         4, pp, NULL, err);
        const char *pj[] = {s->id,
                            s->status,
                            s->phase,
                            s->sha,
                            s->target,
                            s->format,
                            *s->catalog_version ? s->catalog_version : NULL};
        if (rc == 0)
            rc = store_execp(conn,
                             "UPDATE jobs SET status = $2, phase = $3, plan_sha = $4,"
                             " target = $5::jsonb, error = NULL, format_version = $6::int,"
                             " catalog_version = coalesce($7::bigint, catalog_version),"
                             " started_at = coalesce(started_at, now()) WHERE id = $1::bigint",
                             7, pj, NULL, err);
    } else if (rc == 0) {
        rc = store_execp(conn,
                         "UPDATE jobs SET status = $2, phase = $3, inputs = $4::jsonb,"
                         " plan = $5::jsonb, plan_sha = $6, snapshot = $7::jsonb,"
                         " target = $8::jsonb, error = NULL, format_version = $9::int,"
                         " started_at = coalesce(started_at, now()) WHERE id = $1::bigint",
                         9, p, NULL, err);
    }
    for (size_t c = 0; rc == 0 && c < s->n_chunks; c++) {
        const char *q[] = {s->id, s->task_chunks[c]};
        rc = store_execp(conn,
                         "INSERT INTO tasks (job_id, phase, idx, id, node_id, service, action,"
                         " status, deps, strategy)"
                         " SELECT $1::bigint, 'f', r.i, r.id, r.n, r.s, r.a,"
                         " CASE WHEN r.a = 'anchor' THEN 'skipped' ELSE 'waiting' END, r.d, r.g"
                         " FROM jsonb_to_recordset($2::jsonb)"
                         "   AS r(i int, id text, n text, s text, a text, d jsonb, g text)"
                         " ON CONFLICT DO NOTHING",
                         2, q, NULL, err);
    }
    if (rc == 0) {
        const char *q[] = {s->cluster_id, s->new_nodes};
        rc = store_execp(conn,
                         "INSERT INTO nodes (cluster_id, id, hardwaretype, imagetype, services,"
                         " status) SELECT $1::bigint, r.id, coalesce(r.hw, ''),"
                         " coalesce(r.img, ''), coalesce(r.svc, '[]'), 'creating'"
                         " FROM jsonb_to_recordset($2::jsonb)"
                         "   AS r(id text, hw text, img text, svc jsonb)"
                         " ON CONFLICT (cluster_id, id) DO UPDATE SET"
                         " hardwaretype = EXCLUDED.hardwaretype, imagetype = EXCLUDED.imagetype,"
                         " services = EXCLUDED.services, properties = '{}', status = 'creating',"
                         " updated_at = now() WHERE nodes.status = 'deleted'",
                         2, q, NULL, err);
    }
    if (rc == 0) {
        const char *q[] = {s->cluster_id, s->cluster_status, s->ssh};
        rc = store_execp(conn,
                         "UPDATE clusters SET status = $2, updated_at = now(),"
                         " secrets = CASE WHEN $3::jsonb IS NULL THEN secrets"
                         "   ELSE jsonb_set(secrets, '{ssh}', $3::jsonb) END"
                         " WHERE id = $1::bigint",
                         3, q, NULL, err);
    }
    if (rc == 0 && first)
        rc = audit(conn, s->tenant_id, s->node, "job.started", s->id, s->detail, err);
    return rc;
}

int engine__pg_start_work(PGconn *conn, void *arg, struct drv_err *err)
{
    struct engine__pg_start *s = arg;
    return fenced(conn, s->id, s->token, s->zk, start_writes, s, err);
}

/* ---- a batch ------------------------------------------------------------------------------------
 */

static int batch_writes(PGconn *conn, void *arg, struct drv_err *err)
{
    struct engine__pg_batch *b = arg;
    int rc = 0;
    if (b->job_phase) {
        const char *p[] = {b->id, b->job_phase, b->job_status, b->job_error};
        rc = store_execp(conn,
                         "UPDATE jobs SET phase = $2, status = coalesce($3, status),"
                         " error = nullif($4, '')"
                         " WHERE id = $1::bigint",
                         4, p, NULL, err);
    }
    if (rc == 0 && b->rb_tasks) {
        const char *p[] = {b->id, b->rb_tasks};
        rc = store_execp(conn,
                         "INSERT INTO tasks (job_id, phase, idx, id, node_id, service, action,"
                         " status, deps, strategy)"
                         " SELECT $1::bigint, 'r', r.i, r.id, r.n, r.s, r.a,"
                         " CASE WHEN r.a = 'anchor' THEN 'skipped' ELSE 'waiting' END, r.d, r.g"
                         " FROM jsonb_to_recordset($2::jsonb)"
                         "   AS r(i int, id text, n text, s text, a text, d jsonb, g text)"
                         " ON CONFLICT DO NOTHING",
                         2, p, NULL, err);
        if (rc == 0 && b->slim) {
            const char *q[] = {b->id, b->rb_plan};
            rc = store_execp(conn,
                             "INSERT INTO job_plans (job_id, rollback_plan)"
                             " VALUES ($1::bigint, $2::jsonb) ON CONFLICT (job_id)"
                             " DO UPDATE SET rollback_plan = excluded.rollback_plan",
                             2, q, NULL, err);
        } else if (rc == 0) {
            const char *q[] = {b->id, b->rb_plan};
            rc =
                store_execp(conn, "UPDATE jobs SET rollback_plan = $2::jsonb WHERE id = $1::bigint",
                            2, q, NULL, err);
        }
    }
    if (rc == 0 && b->tasks) {
        const char *p[] = {b->id, b->tasks};
        rc = store_execp(
            conn,
            "UPDATE tasks t SET status = u.st, attempts = u.at,"
            " worker = coalesce(u.w, t.worker), message = coalesce(u.m, t.message),"
            " started_at = coalesce(t.started_at, to_timestamp(u.s / 1000.0)),"
            " ended_at = CASE WHEN u.e IS NULL THEN t.ended_at ELSE to_timestamp(u.e / 1000.0) END"
            " FROM jsonb_to_recordset($2::jsonb)"
            "   AS u(p text, i int, st text, at int, w text, m text, s bigint, e bigint)"
            " WHERE t.job_id = $1::bigint AND t.phase = u.p AND t.idx = u.i",
            2, p, NULL, err);
    }
    if (rc == 0 && b->attempts) {
        const char *p[] = {b->id, b->attempts};
        rc = store_execp(
            conn,
            "INSERT INTO task_attempts (job_id, phase, task_id, attempt, run, worker, status,"
            " started_at, ended_at, message, how, output_tail, result, undo)"
            " SELECT $1::bigint, u.p, u.t, u.a, u.r, u.w, u.st, to_timestamp(u.s / 1000.0),"
            " to_timestamp(u.e / 1000.0), u.m, u.h, u.tail, u.res, u.undo"
            " FROM jsonb_to_recordset($2::jsonb) AS u(p text, t text, a int, r text, w text,"
            "   st text, s bigint, e bigint, m text, h text, tail text, res jsonb, undo jsonb)"
            " ON CONFLICT (job_id, phase, task_id, attempt, run) DO UPDATE SET"
            " status = excluded.status, ended_at = excluded.ended_at,"
            " message = excluded.message, how = excluded.how,"
            " output_tail = excluded.output_tail, result = excluded.result",
            2, p, NULL, err);
    }
    if (rc == 0 && b->nodes) {
        const char *p[] = {b->id, b->nodes};
        rc = store_execp(conn,
                         "UPDATE nodes n SET properties = u.value, updated_at = now()"
                         " FROM jobs j, jsonb_each($2::jsonb) AS u"
                         " WHERE j.id = $1::bigint AND n.cluster_id = j.cluster_id"
                         " AND n.id = u.key",
                         2, p, NULL, err);
    }
    return rc;
}

int engine__pg_batch_work(PGconn *conn, void *arg, struct drv_err *err)
{
    struct engine__pg_batch *b = arg;
    return fenced(conn, b->id, b->token, b->zk, batch_writes, b, err);
}

static int final_writes(PGconn *conn, void *arg, struct drv_err *err);

int engine__pg_id_cmp(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    return la != lb ? (la < lb ? -1 : 1) : strcmp(a, b);
}

const char *engine__pg_kind_name(enum engine__pg_kind k)
{
    switch (k) {
    case ENGINE__PG_LOAD:
        return "load";
    case ENGINE__PG_START:
        return "start";
    case ENGINE__PG_ROUND:
        return "round";
    case ENGINE__PG_FINAL:
        return "final";
    }
    return "?";
}

/* A part's statements, after its check (the load's UPDATE claims what the check saw
 * claimable: the row is locked). */
static int part_writes(PGconn *conn, struct engine__pg_part *p, struct drv_err *err)
{
    switch (p->kind) {
    case ENGINE__PG_LOAD:
        return engine__pg_claim_work(conn, p->arg, err);
    case ENGINE__PG_START:
        return start_writes(conn, p->arg, err);
    case ENGINE__PG_ROUND:
        return batch_writes(conn, p->arg, err);
    case ENGINE__PG_FINAL:
        return final_writes(conn, p->arg, err);
    }
    return drv_err_set(err, DRV_EINVAL, 0, "unknown part");
}

int engine__pg_part_work(PGconn *conn, struct engine__pg_part *p, struct drv_err *err)
{
    switch (p->kind) {
    case ENGINE__PG_LOAD:
        return claim_alone(conn, p->arg, err);
    case ENGINE__PG_START:
        return engine__pg_start_work(conn, p->arg, err);
    case ENGINE__PG_ROUND:
        return engine__pg_batch_work(conn, p->arg, err);
    case ENGINE__PG_FINAL:
        return engine__pg_final_work(conn, p->arg, err);
    }
    return drv_err_set(err, DRV_EINVAL, 0, "unknown part");
}

/* Every part's job row locked in id order (the parts come sorted), each token checked: a
 * load's must be higher than the one recorded, any other's equal to it. rc[i]
 * DRV_ECONFLICT for a part whose owner is fenced out; held (engine__pg_held) for one whose
 * row another transaction holds (SKIP LOCKED: a user's pause or cancel a moment, an older
 * owner frozen in its own transaction until idle_in_transaction_session_timeout ends it,
 * must not hold the batch's other jobs with it; batch.c sends that part again shortly). */
static int fence_many(PGconn *conn, struct engine__pg_multi *m, struct drv_err *err)
{
    struct strbuf ids = STRBUF_INIT, toks = STRBUF_INIT, claims = STRBUF_INIT, zks = STRBUF_INIT;
    for (size_t i = 0; i < m->n; i++) {
        const struct engine__pg_part *p = &m->p[i];
        strbuf_addf(&ids, "%s%s", i ? "," : "{", p->id);
        strbuf_addf(&toks, "%s%lld", i ? "," : "{", (long long)p->token);
        strbuf_addf(&zks, "%s%lld", i ? "," : "{", (long long)p->zk);
        strbuf_addf(&claims, "%s%s", i ? "," : "{", p->kind == ENGINE__PG_LOAD ? "t" : "f");
        m->rc[i] =
            engine__pg_held_set(&m->err[i], p->id, "its row is locked by another transaction");
    }
    strbuf_addch(&ids, '}');
    strbuf_addch(&toks, '}');
    strbuf_addch(&claims, '}');
    strbuf_addch(&zks, '}');
    const char *q[] = {ids.buf, toks.buf, claims.buf, zks.buf};
    PGresult *r;
    int rc =
        store_execp(conn,
                    "SELECT u.k, CASE WHEN u.claim THEN (j.owner_zk, j.owner_token) < (u.zk, u.tok)"
                    "   ELSE j.owner_token = u.tok AND j.owner_zk = u.zk END FROM jobs j"
                    " JOIN unnest($1::bigint[], $2::bigint[], $3::bool[], $4::bigint[])"
                    "   WITH ORDINALITY AS u(id, tok, claim, zk, k) ON j.id = u.id"
                    " ORDER BY j.id FOR UPDATE OF j SKIP LOCKED",
                    4, q, &r, err);
    strbuf_release(&ids);
    strbuf_release(&toks);
    strbuf_release(&claims);
    strbuf_release(&zks);
    if (rc)
        return rc;
    for (int t = 0; t < PQntuples(r); t++) {
        long k = strtol(PQgetvalue(r, t, 0), NULL, 10);
        if (k < 1 || (size_t)k > m->n)
            continue;
        const struct engine__pg_part *p = &m->p[k - 1];
        if (PQgetvalue(r, t, 1)[0] == 't')
            m->rc[k - 1] = 0;
        else if (p->kind == ENGINE__PG_LOAD)
            m->rc[k - 1] = drv_err_set(&m->err[k - 1], DRV_ECONFLICT, 0,
                                       "job %s: a newer owner's token is recorded", p->id);
        else
            m->rc[k - 1] = drv_err_set(
                &m->err[k - 1], DRV_ECONFLICT, 0,
                "job %s: a newer owner's token is recorded: this owner is fenced out", p->id);
    }
    PQclear(r);
    return 0;
}

/* A round that writes only task states and attempt rows (no job row, rollback plan or node
 * properties): most of a small job's rounds. */
static bool plain_round(const struct engine__pg_part *p)
{
    const struct engine__pg_batch *b = p->arg;
    return p->kind == ENGINE__PG_ROUND && !b->job_phase && !b->rb_tasks && !b->nodes &&
           (b->tasks || b->attempts);
}

/* The rows of the plain rounds marked in `in`, concatenated: each part's JSON array (rows that
 * name their job, commit_pg.c) without its brackets. NULL when none has any. */
static char *merged_rows(const struct engine__pg_multi *m, const bool *in, bool attempts)
{
    struct strbuf sb = STRBUF_INIT;
    for (size_t i = 0; i < m->n; i++) {
        const struct engine__pg_batch *b = m->p[i].arg;
        const char *rows = !in[i] ? NULL : attempts ? b->attempts : b->tasks;
        size_t len = rows ? strlen(rows) : 0;
        if (len <= 2)
            continue;
        strbuf_addch(&sb, sb.len ? ',' : '[');
        strbuf_add(&sb, rows + 1, len - 2);
    }
    if (!sb.len)
        return NULL;
    strbuf_addch(&sb, ']');
    return strbuf_detach(&sb, NULL);
}

/* The plain rounds of two or more jobs whose fence held, written by one UPDATE of tasks and
 * one INSERT of attempts for all of them, under the batch's savepoint (made here; the caller
 * makes it again before the next part): a statement per kind instead of one per job, and the
 * task triggers' statements once. Sets in[i] for each part it wrote (rc[i] stays 0). When a
 * merged statement fails, the savepoint is rolled back to, nothing is marked, and the caller
 * writes each part alone as before (so one job's bad row fails its part only). Returns the
 * error that broke the connection (DRV_EAGAIN), else 0. */
static int merge_rounds(PGconn *conn, struct engine__pg_multi *m, bool *in, bool *saved,
                        struct drv_err *err)
{
    size_t n = 0;
    for (size_t i = 0; i < m->n; i++) {
        in[i] = m->rc[i] == 0 && plain_round(&m->p[i]);
        n += in[i];
    }
    if (n < 2) {
        memset(in, 0, m->n * sizeof(*in));
        return 0;
    }
    char *tasks = merged_rows(m, in, false), *attempts = merged_rows(m, in, true);
    struct drv_err e;
    int rc = store_exec(conn, "SAVEPOINT job", 0, NULL, NULL, err);
    if (rc == 0)
        *saved = true;
    if (rc == 0 && tasks) {
        const char *p[] = {tasks};
        rc = store_execp(
            conn,
            "UPDATE tasks t SET status = u.st, attempts = u.at,"
            " worker = coalesce(u.w, t.worker), message = coalesce(u.m, t.message),"
            " started_at = coalesce(t.started_at, to_timestamp(u.s / 1000.0)),"
            " ended_at = CASE WHEN u.e IS NULL THEN t.ended_at ELSE to_timestamp(u.e / 1000.0) END"
            " FROM jsonb_to_recordset($1::jsonb)"
            "   AS u(j bigint, p text, i int, st text, at int, w text, m text, s bigint, e bigint)"
            " WHERE t.job_id = u.j AND t.phase = u.p AND t.idx = u.i",
            1, p, NULL, &e);
    }
    if (rc == 0 && attempts) {
        const char *p[] = {attempts};
        rc = store_execp(
            conn,
            "INSERT INTO task_attempts (job_id, phase, task_id, attempt, run, worker, status,"
            " started_at, ended_at, message, how, output_tail, result, undo)"
            " SELECT u.j, u.p, u.t, u.a, u.r, u.w, u.st, to_timestamp(u.s / 1000.0),"
            " to_timestamp(u.e / 1000.0), u.m, u.h, u.tail, u.res, u.undo"
            " FROM jsonb_to_recordset($1::jsonb) AS u(j bigint, p text, t text, a int, r text,"
            "   w text, st text, s bigint, e bigint, m text, h text, tail text, res jsonb,"
            "   undo jsonb)"
            " ON CONFLICT (job_id, phase, task_id, attempt, run) DO UPDATE SET"
            " status = excluded.status, ended_at = excluded.ended_at,"
            " message = excluded.message, how = excluded.how,"
            " output_tail = excluded.output_tail, result = excluded.result",
            1, p, NULL, &e);
    }
    free(tasks);
    free(attempts);
    if (rc == DRV_EAGAIN && *saved) { /* the connection broke: nothing is written */
        *err = e;
        return rc;
    }
    if (rc && *saved) {
        log_info("engine", "event=pg-rounds-merge-failed parts=%zu error=\"%s\"", n, e.msg);
        memset(in, 0, m->n * sizeof(*in));
        return store_exec(conn, "ROLLBACK TO SAVEPOINT job", 0, NULL, NULL, err);
    }
    return rc;
}

int engine__pg_multi_work(PGconn *conn, void *arg, struct drv_err *err)
{
    struct engine__pg_multi *m = arg;
    int rc = store_begin(conn, err);
    if (rc == 0)
        rc = tx_settings(conn, err);
    if (rc == 0)
        rc = fence_many(conn, m, err);
    /* One round trip per part around its statements: the savepoint is made before the
     * first part; after a part that wrote, it is released and made again in one script;
     * after one that failed, rolled back to (it stays, for the next part). */
    bool any = false, saved = false;
    bool *merged = xcalloc(m->n ? m->n : 1, sizeof(*merged));
    if (rc == 0)
        rc = merge_rounds(conn, m, merged, &saved, err);
    bool alone = false; /* a part still to write alone after the merged ones */
    for (size_t i = 0; i < m->n; i++) {
        any |= merged[i];
        alone |= m->rc[i] == 0 && !merged[i];
    }
    if (rc == 0 && any && alone) /* what the merged statements wrote stays if one fails */
        rc = store_exec_script(conn, "RELEASE SAVEPOINT job; SAVEPOINT job", err);
    for (size_t i = 0; rc == 0 && i < m->n; i++) {
        if (m->rc[i] || merged[i])
            continue; /* fenced out, or written merged: the others go on */
        if (!saved)
            rc = store_exec(conn, "SAVEPOINT job", 0, NULL, NULL, err);
        if (rc)
            break;
        saved = true;
        m->rc[i] = part_writes(conn, &m->p[i], &m->err[i]);
        if (m->rc[i] == DRV_EAGAIN) { /* the connection broke: nothing is written */
            *err = m->err[i];
            rc = DRV_EAGAIN;
            break;
        }
        /* A statement that waited lock_timeout for a foreign lock: held, rolled back alone. */
        m->rc[i] = held_from(m->rc[i], &m->err[i]);
        any |= m->rc[i] == 0;
        bool more = false;
        for (size_t k = i + 1; k < m->n && !more; k++)
            more = m->rc[k] == 0 && !merged[k];
        if (m->rc[i])
            rc = store_exec(conn, "ROLLBACK TO SAVEPOINT job", 0, NULL, NULL, err);
        else if (more)
            rc = store_exec_script(conn, "RELEASE SAVEPOINT job; SAVEPOINT job", err);
    }
    if (rc == 0 && any)
        rc = store_commit(conn, err);
    if (rc || !any)
        store_rollback(conn);
    if (rc)
        for (size_t i = 0; i < m->n; i++) {
            m->rc[i] = rc;
            m->err[i] = *err;
        }
    free(merged);
    return rc;
}

void engine__pg_batch_free(struct engine__pg_batch *b)
{
    free(b->job_phase);
    free(b->job_status);
    free(b->job_error);
    free(b->tasks);
    free(b->attempts);
    free(b->nodes);
    free(b->rb_tasks);
    free(b->rb_plan);
    free(b);
}

/* ---- the end
 * ---------------------------------------------------------------------------------------- */

void engine__pg_final_free(struct engine__pg_final *f)
{
    free(f->status);
    free(f->phase);
    free(f->error);
    free(f->op);
    free(f->target);
    free(f->services);
    free(f->config);
    free(f->template_version);
    free(f->detail);
    free(f);
}

static int final_writes(PGconn *conn, void *arg, struct drv_err *err)
{
    struct engine__pg_final *f = arg;
    const char *p[] = {f->id, f->status, f->phase, f->error};
    PGresult *res;
    /* Once only: a replay (the same owner again after an answer lost with its COMMIT, or
       a resumed owner whose predecessor's write went through) finds the job ended and
       changes nothing, so that it never writes over what the next job did to the
       cluster and its nodes (issue 22, 6). */
    int rc = store_execp(conn,
                         "UPDATE jobs SET status = $2, phase = $3, error = nullif($4, ''),"
                         " ended_at = now() WHERE id = $1::bigint AND ended_at IS NULL"
                         " RETURNING id",
                         4, p, &res, err);
    if (rc)
        return rc;
    int first = PQntuples(res);
    PQclear(res);
    if (!first)
        return 0;
    if (rc == 0) {
        const char *q[] = {f->id};
        rc = store_execp(conn,
                         "UPDATE tasks SET status = 'cancelled' WHERE job_id = $1::bigint"
                         " AND status IN ('waiting', 'pending', 'queued')",
                         1, q, NULL, err);
    }
    bool ok = strcmp(f->status, "succeeded") == 0;
    bool deleted = ok && strcmp(f->op, "delete") == 0;
    if (rc == 0 && deleted) {
        const char *q[] = {f->cluster_id};
        rc = store_execp(conn,
                         "UPDATE clusters SET status = 'deleted', deleted_at = now(), size = 0,"
                         " layout = '[]', updated_at = now() WHERE id = $1::bigint",
                         1, q, NULL, err);
        if (rc == 0)
            rc = store_execp(conn,
                             "UPDATE nodes SET status = 'deleted', updated_at = now()"
                             " WHERE cluster_id = $1::bigint",
                             1, q, NULL, err);
    } else if (rc == 0 && ok) {
        const char *q[] = {f->cluster_id, f->target,           f->services,
                           f->config,     f->template_version, f->run_status};
        rc = store_execp(conn,
                         "UPDATE clusters SET status = CASE WHEN $6::text IS NOT NULL THEN $6"
                         "   WHEN status = 'stopped' THEN 'stopped' ELSE 'active' END,"
                         " layout = $2::jsonb,"
                         " size = jsonb_array_length($2::jsonb -> 'nodes'),"
                         " services = coalesce($3::jsonb, services),"
                         " config = coalesce($4::jsonb, config),"
                         " template_version = coalesce($5::int, template_version),"
                         " updated_at = now() WHERE id = $1::bigint",
                         6, q, NULL, err);
        /* Joins, not a subquery per row: 10,000 nodes on each side (a subquery per row
           took seconds). The target's nodes are active, the others deleted. */
        if (rc == 0)
            rc = store_execp(conn,
                             "UPDATE nodes SET updated_at = now(), status = 'active',"
                             " services = coalesce(r.services, nodes.services)"
                             " FROM jsonb_to_recordset($2::jsonb -> 'nodes')"
                             "   AS r(id text, services jsonb)"
                             " WHERE nodes.cluster_id = $1::bigint AND nodes.id = r.id"
                             " AND nodes.status <> 'deleted'",
                             2, q, NULL, err);
        if (rc == 0)
            rc = store_execp(conn,
                             "UPDATE nodes SET updated_at = now(), status = 'deleted'"
                             " WHERE cluster_id = $1::bigint AND status <> 'deleted'"
                             " AND NOT EXISTS (SELECT 1 FROM jsonb_to_recordset($2::jsonb"
                             "   -> 'nodes') AS r(id text) WHERE r.id = nodes.id)",
                             2, q, NULL, err);
        if (rc == 0) {
            const char *s[] = {f->cluster_id, f->id};
            rc = store_execp(conn,
                             "INSERT INTO snapshots (cluster_id, job_id, state)"
                             " SELECT c.id, $2::bigint, jsonb_build_object('cluster',"
                             "  to_jsonb(c) - 'secrets', 'nodes', coalesce((SELECT"
                             "  jsonb_agg(to_jsonb(n) ORDER BY n.id) FROM nodes n WHERE"
                             "  n.cluster_id = c.id AND n.status <> 'deleted'), '[]'))"
                             " FROM clusters c WHERE c.id = $1::bigint"
                             " ON CONFLICT DO NOTHING",
                             2, s, NULL, err);
        }
    } else if (rc == 0) {
        /* Not done: the cluster goes back to what it was (its layout never changed),
         * nodes made for this job are gone; a create leaves a failed, empty cluster. */
        const char *cst = strcmp(f->status, "needs-operator") == 0 ? "needs-operator"
                          : f->fresh_create                        ? "failed"
                          : strcmp(f->status, "failed") == 0       ? "failed"
                                                                   : "active";
        const char *q[] = {f->cluster_id, cst};
        rc = store_execp(conn,
                         "UPDATE clusters SET status = CASE WHEN $2 = 'active' AND status ="
                         " 'stopped' THEN 'stopped' ELSE $2 END, updated_at = now()"
                         " WHERE id = $1::bigint",
                         2, q, NULL, err);
        if (rc == 0 && strcmp(cst, "needs-operator") != 0 && strcmp(f->status, "failed") != 0) {
            const char *r[] = {f->cluster_id};
            rc = store_execp(conn,
                             "UPDATE nodes SET status = 'deleted', updated_at = now()"
                             " WHERE cluster_id = $1::bigint AND status = 'creating'",
                             1, r, NULL, err);
        }
    }
    if (rc == 0) {
        char action[64];
        snprintf(action, sizeof(action), "job.%s", f->status);
        rc = audit(conn, f->tenant_id, f->node, action, f->id, f->detail, err);
    }
    return rc;
}

int engine__pg_final_work(PGconn *conn, void *arg, struct drv_err *err)
{
    struct engine__pg_final *f = arg;
    return fenced(conn, f->id, f->token, f->zk, final_writes, f, err);
}
