/*
 * batch: the writes of all the jobs this node owns, together ("Batching across jobs" in
 * docs/engine.md). commit.c makes each job's round as before (its PostgreSQL batch, its
 * ZooKeeper multi-op, one of each in flight per job) and hands them here, and job.c,
 * jobstart.c and commit.c hand their loads, starts and final writes here too (PostgreSQL
 * parts, engine__batch_pg_part); the parts and rounds the jobs made in one turn of the loop
 * go out in one PostgreSQL transaction per lane (the loads and starts in one, the rounds and
 * final writes in the other) and one ZooKeeper multi-op (several when over the byte budget),
 * at most one of each in flight per lane and node: what the jobs write while one is in
 * flight gathers for the next. Each job hears how its part went as if it had been sent alone
 * (commit_pg.c's pg_done, job.c's loaded, jobstart.c's started_pg, commit.c's final_done,
 * commit_zk.c's on_zk), so the job's own pipeline, its rules (docs/engine.md "One attempt of
 * one task") and its fencing are unchanged. Loop thread only; the PostgreSQL work runs on a
 * store thread.
 *
 * A stage between the jobs and the servers: the jobs hand parts down (batch.h), the batch
 * calls the store's work (job_pg.c) and coord, and nothing of the jobs' but the callback
 * that each part came with. What it needs of a job's multi-op is in the part (its ops, its
 * size); of the job itself only its lock, the fence (engine__job_alive, engine_int.h).
 *
 * Fencing, per job, in a batch:
 *   PostgreSQL (engine__pg_multi_work, job_pg.c): one statement locks the parts' job rows in
 *     id order (two batches never deadlock: each takes its locks in the same order) and
 *     checks each token (a load's higher than the one recorded, any other's equal); a part
 *     fenced out is left out before its statements (DRV_ECONFLICT: its job is lost); each other
 *     part's statements run under a SAVEPOINT, so a part whose statements fail is rolled back
 *     alone and the others commit. A part is held (job_pg.h engine__pg_held) when another
 *     transaction holds a lock it needs: its job row (the fence's SKIP LOCKED: a user's pause
 *     a moment, an older owner frozen mid-transaction) or a row its statements write (past
 *     lock_timeout). Nothing of it is written, and it is not answered: hold_part keeps it and
 *     sends it again in the lane's next transaction after a short wait, so its job keeps its
 *     lock and its pipeline as if the transaction were slow (no load given back, no start
 *     planned again, no round counted as PostgreSQL down; engine_batch_locked_row,
 *     engine_row_held).
 *   ZooKeeper: a multi-op applies whole or not at all, so each job's part begins with a check
 *     of its lock's contender znode (what coord_txn_commit's fence checks for one), then its
 *     ops (the state's versioned set first). When an op fails, the part it is in says whose:
 *     that job hears the failure alone (lost for a fence or a version, its record delete
 *     dropped, ...), and the other jobs' parts are sent again at once, without it. A job
 *     whose lock is not held when the batch is made is not put in (lost at once).
 *
 * Invariants:
 *   1. A job's round or part is in at most one batch, and a PostgreSQL batch holds at most
 *      one part per job (gather_cb keeps a second for the next; commit.c's pg_busy and
 *      zk_busy: one round of each in flight per job).
 *   2. Every round and part handed here is answered once, through its done callback or
 *      on_zk (a held part only once it is written, fenced or failed for another reason, or
 *      its job is dead), also when the engine stops (engine__batch_free: DRV_EAGAIN, the
 *      held ones too), and also when
 *      coord answers a multi-op after the engine is freed (an orphaned zmulti: its jobs are
 *      dead, their parts only freed).
 *   3. A job's part of a ZooKeeper batch applies only with its lock's check in the same
 *      multi-op; a job's part of a PostgreSQL batch only after its token is compared, under
 *      its row's lock held to the commit.
 *
 * Test hooks (DROVER_FAULT=gather-loads=K, gather-starts=K, gather-progress=K, gather-ends=K;
 * gather_held): the first loads, starts, rounds carrying a worker's progress, or final writes
 * wait in their lane's gather until K jobs have a part there, then go as one transaction.
 *
 * Test hook (DROVER_FAULT=hold-batch-answer, docs/testing.md): the answer to the first
 * multi-op of several jobs is held, unread: its jobs wait for it as if it were still in
 * flight (and so does every later multi-op of the node, one being in flight), so a SIGTERM
 * finds them mid-batch and the shutdown's grace runs out. engine__batch_free then orphans it
 * like any other and asks coord for a read whose answer hands the held one on: coord
 * delivers it while its session closes, after the engine is freed, which is when a real late
 * answer comes (invariant 2). Test engine_batch_orphan.
 */
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "batch.h"
#include "check.h"
#include "coord.h"
#include "engine_int.h"
#include "job_pg.h"
#include "log.h"
#include "store.h"
#include "xalloc.h"
#include "zkpath.h"

#define MOD "engine"

/* ---- PostgreSQL: the jobs' parts together ------------------------------------------------- */

/* The parts the jobs made in one turn of the loop go in one transaction per lane
 * (engine__pg_multi_work; one part alone: its own work, as before): lane 0 carries the loads
 * and starts, lane 1 the rounds and final writes, so that a job's start never waits behind
 * a batch of other jobs' rounds. At most ENGINE_PG_MULTIS transactions in flight per lane:
 * while they are, what the jobs write meanwhile gathers for the lane's next. A job has one
 * PostgreSQL part in flight at a time whatever the lane (a load before anything else, then
 * pg_busy), so the two lanes' transactions never carry the same job's live parts. */
#define ENGINE_PG_MULTIS 1
#define LANE_STARTS 0
#define LANE_ROUNDS 1
#define ENGINE_ZK_MULTIS 1 /* (below: the multi-ops) */

/* A job's PostgreSQL part waiting for its lane's next transaction (engine__batch_pg_part). */
struct pgq {
    int kind; /* enum engine__pg_kind */
    void *arg;
    void (*done)(int rc, const struct drv_err *err, void *arg);
    unsigned held; /* times it was held (engine__pg_held) since it was handed here */
};

/* A lane: its gathered parts and its transactions in flight. */
struct pglane {
    struct engine *e;
    struct pgq *gather; /* waiting for the lane's next transaction */
    size_t n_gather, cap_gather;
    struct event *gather_ev;
    int pg_multis; /* the lane's transactions in flight (at most ENGINE_PG_MULTIS) */
    /* Parts held (another transaction held a lock they need, engine__pg_held): sent again
       after held_ms (HELD_MIN_MS doubling to HELD_MAX_MS while the lane's transactions
       keep finding parts held), their jobs not told. */
    struct pgq *held;
    size_t n_held, cap_held;
    struct event *held_ev;
    int held_ms;
};
#define HELD_MIN_MS 20
#define HELD_MAX_MS 500

/* The test hooks that gather PostgreSQL parts (gather_held). */
enum gather_hook { GATHER_LOADS, GATHER_STARTS, GATHER_PROGRESS, GATHER_ENDS, GATHER_HOOKS };

struct zmulti;

/* The batch's state, in struct engine (e->batch): this file's alone. */
struct ebatch {
    struct pglane pglane[2];        /* LANE_STARTS, LANE_ROUNDS */
    struct engine__zpart **zgather; /* the jobs' multi-ops waiting for the next one */
    size_t n_zgather, cap_zgather;
    struct event *zgather_ev;
    int zk_multis; /* such multi-ops in flight (at most ENGINE_ZK_MULTIS) */
    /* Those multi-ops: engine__batch_free orphans them, so that an answer coord delivers
       after the engine is gone touches nothing of it. */
    struct zmulti **zflying;
    size_t n_zflying, cap_zflying;
    /* Test hook (DROVER_FAULT=hold-batch-answer): the answer to the first multi-op of
       several jobs is held, its jobs waiting as if it were in flight, until the engine is
       freed; then coord delivers it to the orphan. */
    bool fault_hold_batch;
    struct zmulti *held; /* that multi-op (one of zflying), NULL until then */
    /* Test hooks (DROVER_FAULT=gather-loads=K,gather-starts=K,gather-progress=K,gather-ends=K):
       the first loads, starts, rounds carrying a worker's progress (a task running or ended), or
       final writes gather until K jobs have a part in their lane, then go as one transaction; each
       0 once done (or without the hook). */
    size_t fault_gather[GATHER_HOOKS];
};

void engine__batch_init(struct engine *e)
{
    struct ebatch *b = xcalloc(1, sizeof(*b));
    const char *fault = getenv("DROVER_FAULT");
    b->fault_hold_batch = fault && strcmp(fault, "hold-batch-answer") == 0;
    static const char *const gathers[GATHER_HOOKS] = {
        "gather-loads=", "gather-starts=", "gather-progress=", "gather-ends="};
    for (int h = 0; fault && h < GATHER_HOOKS; h++) {
        const char *at = strstr(fault, gathers[h]);
        if (at)
            b->fault_gather[h] = strtoul(at + strlen(gathers[h]), NULL, 10);
    }
    for (int k = 0; k < 2; k++)
        b->pglane[k].e = e;
    e->batch = b;
}

struct pgmulti {
    struct pglane *lane;
    struct pgq *q; /* sorted by job id, as m.p */
    struct engine__pg_multi m;
};

static void gather_cb(evutil_socket_t fd, short what, void *arg);

static const char *part_id(const struct pgq *q, int64_t *token, int64_t *zk)
{
    switch ((enum engine__pg_kind)q->kind) {
    case ENGINE__PG_LOAD: {
        struct engine__pg_load *l = q->arg;
        *token = l->token;
        *zk = l->zk;
        return l->id;
    }
    case ENGINE__PG_START: {
        struct engine__pg_start *s = q->arg;
        *token = s->token;
        *zk = s->zk;
        return s->id;
    }
    case ENGINE__PG_ROUND: {
        struct engine__pg_batch *b = q->arg;
        *token = b->token;
        *zk = b->zk;
        return b->id;
    }
    case ENGINE__PG_FINAL: {
        struct engine__pg_final *f = q->arg;
        *token = f->token;
        *zk = f->zk;
        return f->id;
    }
    }
    *token = 0;
    *zk = 0;
    return "";
}

/* The job a part is of. */
static struct ejob *part_job(const struct pgq *q)
{
    switch ((enum engine__pg_kind)q->kind) {
    case ENGINE__PG_LOAD:
        return ((struct engine__pg_load *)q->arg)->j;
    case ENGINE__PG_START:
        return ((struct engine__pg_start *)q->arg)->j;
    case ENGINE__PG_ROUND:
        return ((struct engine__pg_batch *)q->arg)->j;
    case ENGINE__PG_FINAL:
        return ((struct engine__pg_final *)q->arg)->j;
    }
    return NULL;
}

void engine__batch_pg_part(struct engine *e, int kind, void *arg,
                           void (*done)(int rc, const struct drv_err *err, void *arg))
{
    struct ebatch *b = e->batch;
    struct pglane *l =
        &b->pglane[kind == ENGINE__PG_LOAD || kind == ENGINE__PG_START ? LANE_STARTS : LANE_ROUNDS];
    XGROW(l->gather, l->cap_gather, l->n_gather + 1);
    l->gather[l->n_gather++] = (struct pgq){.kind = kind, .arg = arg, .done = done};
    l->e = e;
    if (!l->gather_ev)
        l->gather_ev = event_new(e->base, -1, 0, gather_cb, l);
    /* At the end of this turn: what the other jobs write in it goes in too. */
    if (l->pg_multis < ENGINE_PG_MULTIS)
        event_active(l->gather_ev, EV_TIMEOUT, 0);
}

static int by_id(const void *a, const void *b)
{
    int64_t t;
    const char *x = part_id(a, &t, &t), *y = part_id(b, &t, &t);
    return engine__pg_id_cmp(x, y);
}

/* Invariant 1 of a PostgreSQL batch about to be sent: its parts in strictly increasing job
 * id order (the row locks' order; one part per job). */
static void pgmulti_check(const struct pgmulti *pm)
{
#if DRV_CHECKS
    for (size_t i = 0; i < pm->m.n; i++) {
        int64_t t;
        if (strcmp(pm->m.p[i].id, part_id(&pm->q[i], &t, &t)) != 0 ||
            (i && engine__pg_id_cmp(pm->m.p[i - 1].id, pm->m.p[i].id) >= 0)) {
            log_error(MOD, "event=check-failed what=pg-batch part=%zu job=%s", i, pm->m.p[i].id);
            abort();
        }
    }
#else
    (void)pm;
#endif
}

static int multi_work(PGconn *conn, void *arg, struct drv_err *err)
{
    struct pgmulti *pm = arg;
    if (pm->m.n > 1)
        return engine__pg_multi_work(conn, &pm->m, err);
    /* One part: its own work, as before batching. */
    pm->m.rc[0] = engine__pg_part_work(conn, &pm->m.p[0], err);
    if (pm->m.rc[0])
        pm->m.err[0] = *err;
    return pm->m.rc[0];
}

/* The held parts go back to the gather, for the lane's next transaction. */
static void pg_held_cb(evutil_socket_t fd, short what, void *arg)
{
    struct pglane *l = arg;
    for (size_t i = 0; i < l->n_held; i++) {
        XGROW(l->gather, l->cap_gather, l->n_gather + 1);
        l->gather[l->n_gather++] = l->held[i];
    }
    l->n_held = 0;
    if (l->n_gather && l->pg_multis < ENGINE_PG_MULTIS && l->gather_ev)
        event_active(l->gather_ev, EV_TIMEOUT, 0);
}

/* A part held (engine__pg_held): nothing of it was written; it is sent again after a short
 * wait, its job keeps what it holds (its lock, its place in the pipeline) and hears nothing,
 * as if the transaction were slow. A dead job's part is answered at once instead (its
 * callback only frees it). */
static bool hold_part(struct pglane *l, struct pgq *q, const struct drv_err *err, size_t batch)
{
    struct ejob *j = part_job(q);
    if (!j || !engine__job_alive(j))
        return false;
    q->held++;
    if (!l->held_ev)
        l->held_ev = evtimer_new(l->e->base, pg_held_cb, l);
    if (!evtimer_pending(l->held_ev, NULL)) {
        l->held_ms = l->held_ms ? l->held_ms * 2 : HELD_MIN_MS;
        if (l->held_ms > HELD_MAX_MS)
            l->held_ms = HELD_MAX_MS;
        struct timeval tv = {l->held_ms / 1000, (l->held_ms % 1000) * 1000};
        evtimer_add(l->held_ev, &tv);
    }
    if (q->held == 1 || q->held % 50 == 0)
        log_info(MOD,
                 "event=job-part-held job=%s part=%s batch=%zu times=%u retry_ms=%d error=\"%s\"",
                 j->id, engine__pg_kind_name((enum engine__pg_kind)q->kind), batch, q->held,
                 l->held_ms, err->msg);
    l->e->stats.pg_held++;
    XGROW(l->held, l->cap_held, l->n_held + 1);
    l->held[l->n_held++] = *q;
    return true;
}

static void multi_done(int rc, const struct drv_err *err, void *arg)
{
    struct pgmulti *pm = arg;
    struct pglane *l = pm->lane;
    l->pg_multis--;
    /* Nothing was written (the work may not even have run: no connection): every part hears
     * why, or a round never written would count as written. */
    for (size_t i = 0; rc && i < pm->m.n; i++) {
        pm->m.rc[i] = rc;
        pm->m.err[i] = *err;
    }
    bool any_held = false;
    for (size_t i = 0; i < pm->m.n; i++) {
        const struct engine__pg_part *p = &pm->m.p[i];
        const char *part = engine__pg_kind_name(p->kind);
        if (engine__pg_held(pm->m.rc[i], &pm->m.err[i]) &&
            hold_part(l, &pm->q[i], &pm->m.err[i], pm->m.n)) {
            any_held = true;
            continue;
        }
        if (pm->m.n > 1 && !rc && pm->m.rc[i] == DRV_ECONFLICT)
            log_info(MOD, "event=job-fenced-in-batch job=%s batch=%zu store=pg part=%s", p->id,
                     pm->m.n, part);
        else if (pm->m.n > 1 && !rc && pm->m.rc[i])
            log_info(MOD, "event=job-part-failed-in-batch job=%s batch=%zu part=%s error=\"%s\"",
                     p->id, pm->m.n, part, pm->m.err[i].msg);
        pm->q[i].done(pm->m.rc[i], &pm->m.err[i], pm->q[i].arg);
    }
    if (!any_held && !l->n_held)
        l->held_ms = 0; /* the lane's next held part waits the shortest again */
    free(pm->q);
    free(pm->m.p);
    free(pm->m.rc);
    free(pm->m.err);
    free(pm);
    if (l->n_gather && l->pg_multis < ENGINE_PG_MULTIS && l->gather_ev)
        event_active(l->gather_ev, EV_TIMEOUT, 0);
}

/* What the test hooks below wait for (enum gather_hook): a job's load, its start, a round
 * that carries a worker's progress (a task marked running, or an attempt ended), a job's
 * final write. */
static bool gather_counts(int hook, const struct pgq *q)
{
    switch (hook) {
    case GATHER_LOADS:
        return q->kind == ENGINE__PG_LOAD;
    case GATHER_STARTS:
        return q->kind == ENGINE__PG_START;
    case GATHER_ENDS:
        return q->kind == ENGINE__PG_FINAL;
    default:
        if (q->kind != ENGINE__PG_ROUND)
            return false;
        const struct engine__pg_batch *b = q->arg;
        return b->attempts || (b->tasks && strstr(b->tasks, "\"st\":\"running\""));
    }
}

/* Test hooks (DROVER_FAULT=gather-loads=K, gather-starts=K, gather-progress=K, gather-ends=K,
 * comma separated): while a lane's gathered parts include one a hook counts (gather_counts) and
 * fewer than K jobs have a part, they wait for more (each part handed here looks again);
 * the first time K have one, they go, and that hook is done. So a test knows that the
 * jobs' loads (engine_batch_locked_row), their starts (engine_batch_start_fence), their first
 * writes after a worker came (engine_batch_fence) or their ends meet in one transaction whatever
 * the scheduling. */
static bool gather_held(struct pglane *l)
{
    static const char *const names[] = {"loads", "starts", "progress", "ends"};
    struct engine *e = l->e;
    struct ebatch *b = e->batch;
    bool starts = l == &b->pglane[LANE_STARTS];
    for (int h = starts ? GATHER_LOADS : GATHER_PROGRESS;
         h <= (starts ? GATHER_STARTS : GATHER_ENDS); h++) {
        if (!b->fault_gather[h])
            continue;
        size_t counted = 0;
        for (size_t i = 0; i < l->n_gather; i++)
            counted += gather_counts(h, &l->gather[i]);
        if (!counted)
            continue;
        if (l->n_gather < b->fault_gather[h])
            return true;
        log_warn(MOD, "event=fault-injected fault=gather-%s parts=%zu counted=%zu", names[h],
                 l->n_gather, counted);
        b->fault_gather[h] = 0;
    }
    return false;
}

static void gather_cb(evutil_socket_t fd, short what, void *arg)
{
    struct pglane *l = arg;
    struct engine *e = l->e;
    if (!l->n_gather || l->pg_multis >= ENGINE_PG_MULTIS || gather_held(l))
        return;
    size_t n = l->n_gather;
    struct pgq *qs = l->gather;
    l->gather = NULL;
    l->n_gather = l->cap_gather = 0;
    qsort(qs, n, sizeof(*qs), by_id);
    /* One part per job in a transaction (job_pg.h): a second one of the same job (a job
     * lost and taken again: the old object's round and the new one's load) waits for the
     * next, so that each is checked against what the other wrote. */
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t t;
        if (kept && strcmp(part_id(&qs[kept - 1], &t, &t), part_id(&qs[i], &t, &t)) == 0) {
            XGROW(l->gather, l->cap_gather, l->n_gather + 1);
            l->gather[l->n_gather++] = qs[i];
            continue;
        }
        qs[kept++] = qs[i];
    }
    n = kept;
    e->stats.pg_txns++;
    e->stats.pg_batches++;
    e->stats.pg_batch_jobs += n;
    struct pgmulti *pm = xcalloc(1, sizeof(*pm));
    pm->lane = l;
    pm->q = qs;
    pm->m.p = xcalloc(n, sizeof(*pm->m.p));
    for (size_t i = 0; i < n; i++) {
        struct engine__pg_part *p = &pm->m.p[i];
        p->kind = (enum engine__pg_kind)qs[i].kind;
        p->arg = qs[i].arg;
        p->id = part_id(&qs[i], &p->token, &p->zk);
        if (n > 1 && (p->kind == ENGINE__PG_LOAD || p->kind == ENGINE__PG_START))
            e->stats.pg_shared_starts++;
        else if (n > 1 && p->kind == ENGINE__PG_FINAL)
            e->stats.pg_shared_ends++;
    }
    pm->m.n = n;
    pm->m.rc = xcalloc(n, sizeof(*pm->m.rc));
    pm->m.err = xcalloc(n, sizeof(*pm->m.err));
    pgmulti_check(pm);
    l->pg_multis++;
    store_submit(e->db, multi_work, multi_done, pm);
}

/* ---- ZooKeeper: the jobs' multi-ops together ------------------------------------------------ */

/* The multi-ops the jobs made in one turn of the loop go in one (within the byte budget; over
 * it, in several), at most ENGINE_ZK_MULTIS in flight: while they are, the jobs' next ones
 * gather. One job's alone is fenced by its lock as before; several carry each job's fence as
 * a check of its lock's contender znode, followed by that job's ops (its state's versioned
 * set first). A multi-op applies whole or not at all: when one job's op fails (its lock gone,
 * its version moved, a run record already deleted), that job hears it as if it had been
 * alone, and the others are sent again without it at once (docs/engine.md "Batching across
 * jobs"). */
struct zmulti {
    struct engine *e; /* NULL once the engine stopped with it in flight (orphaned) */
    struct engine__zpart **ts;
    size_t *off; /* index in the multi-op of each job's fence check */
    size_t n, cap;
    size_t bytes;
};

static void zgather_cb(evutil_socket_t fd, short what, void *arg);
static void zmulti_send(struct zmulti *zm);

struct engine__zop *engine__zpart_add(struct engine__zpart *z, enum engine__zop_kind kind,
                                      char *path, char *data, int version)
{
    XGROW(z->ops, z->cap, z->n + 1);
    struct engine__zop *o = &z->ops[z->n++];
    memset(o, 0, sizeof(*o));
    o->kind = kind;
    o->path = path;
    o->data = data;
    o->version = version;
    /* coord's own figures (an upper bound of what it sends: a create's ACL at its largest),
       so that a round under the budget is a multi-op under the session's limit. A set
       without data yet (a job's state, encoded last) reserves its largest encoding. A put
       is counted by its maker, which knows its key (coord_txn_queue_put_bytes). */
    switch (kind) {
    case ENGINE__ZOP_CREATE:
        z->bytes += coord_txn_create_bytes(path, data);
        break;
    case ENGINE__ZOP_SET:
        z->bytes += data ? coord_txn_set_bytes(path, data)
                         : coord_txn_set_bytes(path, "") + ENGINE_STATE_MAX_JSON;
        break;
    case ENGINE__ZOP_DELETE:
        z->bytes += coord_txn_delete_bytes(path);
        break;
    case ENGINE__ZOP_PUT:
        break;
    }
    return o;
}

void engine__zpart_drop(struct engine__zpart *z, size_t i)
{
    free(z->ops[i].path);
    free(z->ops[i].data);
    memmove(&z->ops[i], &z->ops[i + 1], (z->n - i - 1) * sizeof(*z->ops));
    z->n--;
}

void engine__zpart_clear(struct engine__zpart *z)
{
    for (size_t i = 0; i < z->n; i++) {
        free(z->ops[i].path);
        free(z->ops[i].data);
    }
    free(z->ops);
    z->ops = NULL;
    z->n = z->cap = 0;
}

/* z's ops appended to c, in order. */
static void add_ops(struct coord_txn *c, const struct engine__zpart *z)
{
    for (size_t i = 0; i < z->n; i++) {
        const struct engine__zop *o = &z->ops[i];
        switch (o->kind) {
        case ENGINE__ZOP_CREATE:
            coord_txn_create(c, o->path, o->data, 0);
            break;
        case ENGINE__ZOP_SET:
            coord_txn_set(c, o->path, o->data, o->version);
            break;
        case ENGINE__ZOP_DELETE:
            coord_txn_delete(c, o->path, o->version);
            break;
        case ENGINE__ZOP_PUT:
            coord_txn_queue_put(c, o->q, o->key, o->data, o->prio);
            break;
        }
    }
}

void engine__batch_zk(struct engine *e, struct engine__zpart *t)
{
    struct ebatch *b = e->batch;
    XGROW(b->zgather, b->cap_zgather, b->n_zgather + 1);
    b->zgather[b->n_zgather++] = t;
    if (!b->zgather_ev)
        b->zgather_ev = event_new(e->base, -1, 0, zgather_cb, e);
    if (b->zk_multis < ENGINE_ZK_MULTIS)
        event_active(b->zgather_ev, EV_TIMEOUT, 0);
}

static void zflying_del(struct engine *e, struct zmulti *zm)
{
    struct ebatch *b = e->batch;
    for (size_t i = 0; i < b->n_zflying; i++)
        if (b->zflying[i] == zm) {
            b->zflying[i] = b->zflying[--b->n_zflying];
            return;
        }
}

/* A part whose job is dead or whose lock is not held (lost meanwhile: j->lock may be NULL,
 * and a NULL fence would send the multi-op unfenced, against invariant 2) is settled here as
 * lost, never sent; true when so. Every send of a part alone goes through this. */
static bool zpart_lost(struct engine__zpart *t)
{
    struct ejob *j = t->j;
    if (engine__job_alive(j) && j->lock && coord_lock_held(j->lock))
        return false;
    struct coord_txn_result one = {.rc = DRV_ECONFLICT, .failed_op = -1};
    t->done(&one, t);
    return true;
}

static void on_zmulti(const struct coord_txn_result *r, void *arg)
{
    struct zmulti *zm = arg;
    struct engine *e = zm->e;
    if (!e) {
        /* Answered after the engine stopped (coord's session is freed after it): the jobs
           are dead, their parts are only freed. */
        log_info(MOD, "event=batch-answer-orphaned jobs=%zu", zm->n);
        struct coord_txn_result gone = {.rc = DRV_ECONFLICT, .failed_op = -1};
        for (size_t i = 0; i < zm->n; i++)
            zm->ts[i]->done(&gone, zm->ts[i]);
        free(zm->ts);
        free(zm->off);
        free(zm);
        return;
    }
    struct ebatch *b = e->batch;
    if (b->fault_hold_batch && zm->n > 1 && !b->held) {
        log_warn(MOD, "event=fault-injected fault=hold-batch-answer jobs=%zu rc=%d", zm->n, r->rc);
        b->held = zm; /* still flying: engine__batch_free orphans it */
        return;
    }
    zflying_del(e, zm);
    b->zk_multis--;
    if (zm->n == 1) {
        zm->ts[0]->done(r, zm->ts[0]);
    } else if (r->rc == DRV_ETOOBIG) {
        /* Each part fits the budget by its estimate, the encoded whole did not fit the
         * session's limit: each part alone, now (nothing was sent). */
        for (size_t i = 0; i < zm->n; i++) {
            if (zpart_lost(zm->ts[i]))
                continue;
            struct zmulti *one = xcalloc(1, sizeof(*one));
            one->e = e;
            XGROW(one->ts, one->cap, 1);
            one->off = xcalloc(one->cap, sizeof(*one->off));
            one->ts[one->n++] = zm->ts[i];
            zmulti_send(one);
        }
    } else if (r->rc == 0 || r->failed_op < 0) {
        /* Applied, or not for a reason that is every job's (connection, budget): each job
         * settles it as its own (an unknown outcome: each reads its state's version). */
        struct coord_txn_result one = {.rc = r->rc, .failed_op = -1, .zrc = r->zrc};
        for (size_t i = 0; i < zm->n; i++)
            zm->ts[i]->done(&one, zm->ts[i]);
    } else {
        size_t bad = 0;
        while (bad + 1 < zm->n && zm->off[bad + 1] <= (size_t)r->failed_op)
            bad++;
        for (size_t i = 0; i < zm->n; i++) {
            if (i != bad) {
                engine__batch_zk(
                    e, zm->ts[i]); /* nothing applied: again, without the one that failed */
                continue;
            }
            size_t local = (size_t)r->failed_op - zm->off[i];
            struct coord_txn_result one = {.rc = local == 0 ? DRV_ECONFLICT : r->rc,
                                           .failed_op = local == 0 ? -1 : (int)local - 1,
                                           .zrc = r->zrc};
            log_info(MOD, "event=job-fenced-in-batch job=%s batch=%zu store=zk op=%zu",
                     zm->ts[i]->j->id, zm->n, local);
            zm->ts[i]->done(&one, zm->ts[i]);
        }
    }
    free(zm->ts);
    free(zm->off);
    free(zm);
    if (b->n_zgather && b->zk_multis < ENGINE_ZK_MULTIS && b->zgather_ev)
        event_active(b->zgather_ev, EV_TIMEOUT, 0);
}

static void zmulti_send(struct zmulti *zm)
{
    struct engine *e = zm->e;
    struct ebatch *b = e->batch;
    XGROW(b->zflying, b->cap_zflying, b->n_zflying + 1);
    b->zflying[b->n_zflying++] = zm;
    b->zk_multis++;
    e->stats.zk_multis++;
    e->stats.zk_multi_jobs += zm->n;
    struct coord_txn *c = coord_txn_new();
    if (zm->n == 1) {
        /* Never unfenced: every caller settled a part without a held lock (zpart_lost). */
#if DRV_CHECKS
        if (!zm->ts[0]->j->lock)
            abort();
#endif
        add_ops(c, zm->ts[0]);
        coord_txn_commit(e->zk, c, zm->ts[0]->j->lock, on_zmulti, zm);
        return;
    }
    for (size_t i = 0; i < zm->n; i++) {
        zm->off[i] = coord_txn_count(c);
        coord_txn_check(c, coord_lock_node(zm->ts[i]->j->lock), -1);
        add_ops(c, zm->ts[i]);
    }
    coord_txn_commit(e->zk, c, NULL, on_zmulti, zm);
}

static void zgather_cb(evutil_socket_t fd, short what, void *arg)
{
    struct engine *e = arg;
    struct ebatch *b = e->batch;
    if (!b->n_zgather || b->zk_multis >= ENGINE_ZK_MULTIS)
        return;
    size_t n = b->n_zgather;
    struct engine__zpart **ts = b->zgather;
    b->zgather = NULL;
    b->n_zgather = b->cap_zgather = 0;
    struct zmulti *zm = NULL;
    for (size_t i = 0; i < n; i++) {
        struct engine__zpart *t = ts[i];
        if (zpart_lost(t))
            continue; /* settled alone: a dead job's is dropped, a lock not held is lost */
        if (zm && zm->bytes + t->bytes + 128 > e->budget) {
            zmulti_send(zm);
            zm = NULL;
        }
        if (!zm) {
            zm = xcalloc(1, sizeof(*zm));
            zm->e = e;
        }
        XGROW(zm->ts, zm->cap, zm->n + 1);
        zm->off = xrealloc(zm->off, zm->cap * sizeof(*zm->off));
        zm->ts[zm->n++] = t;
        zm->bytes += t->bytes + 128;
    }
    if (zm)
        zmulti_send(zm);
    free(ts);
}

/* The held answer (the test hook), handed on by coord after the engine is gone. */
static void held_cb(int rc, const char *data, int version, void *arg)
{
    struct coord_txn_result r = {.rc = 0, .failed_op = -1};
    on_zmulti(&r, arg);
}

void engine__batch_free(struct engine *e)
{
    struct ebatch *b = e->batch;
    if (!b)
        return;
    struct drv_err err;
    drv_err_set(&err, DRV_EAGAIN, 0, "the engine stopped");
    for (int k = 0; k < 2; k++) {
        struct pglane *l = &b->pglane[k];
        for (size_t i = 0; i < l->n_gather; i++)
            l->gather[i].done(DRV_EAGAIN, &err, l->gather[i].arg);
        free(l->gather);
        if (l->gather_ev)
            event_free(l->gather_ev);
        for (size_t i = 0; i < l->n_held; i++)
            l->held[i].done(DRV_EAGAIN, &err, l->held[i].arg);
        free(l->held);
        if (l->held_ev)
            event_free(l->held_ev);
    }
    struct coord_txn_result gone = {.rc = DRV_ECONFLICT, .failed_op = -1};
    for (size_t i = 0; i < b->n_zgather; i++)
        b->zgather[i]->done(&gone, b->zgather[i]); /* (their jobs are dead: only freed) */
    free(b->zgather);
    if (b->zgather_ev)
        event_free(b->zgather_ev);
    for (size_t i = 0; i < b->n_zflying; i++)
        b->zflying[i]->e = NULL; /* on_zmulti frees it, whenever */
    if (b->held)
        coord_get(e->zk, ZKPATH_JOBS, held_cb, b->held);
    free(b->zflying);
    free(b);
    e->batch = NULL;
}
