/*
 * store: the PostgreSQL pool. See store.h for the contract.
 *
 * Shape: a FIFO of requests under one mutex and condition variable; N
 * threads take requests, run them with their own connection and post the
 * completion to the loop through a loopq. A thread (re)connects lazily:
 * before running work it checks its connection, and after work that failed
 * it drops a connection that PQstatus() reports bad. A broken connection
 * also bumps `broken_gen`: every thread then replaces a connection made
 * before that before its next work, so that once the server is back (after
 * a restart, say) no request fails on an idle thread's stale connection.
 * A connection that libpq still calls open is dropped the same way when the
 * server's answer says it is no use (store__sqlstate_drops: read-only after a
 * demotion, shutting down): under Patroni the next connect, with libpq's
 * target_session_attrs=read-write over every server's address, reaches the
 * new primary. The work that met the broken connection ends with DRV_EAGAIN
 * and is not repeated here: only its caller knows whether it is safe to run
 * again (docs/operations.md, "PostgreSQL under Patroni").
 *
 * Shutdown: store_free sets `stopping`, wakes every thread and joins them;
 * requests still queued are freed without their callbacks.
 */
#include "store.h"
#include "store_int.h"

#include <event2/event.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "loopq.h"
#include "xalloc.h"

struct request {
    struct request *next;
    store_work_fn work;
    store_done_fn done;
    void *arg;
    int rc;
    struct drv_err err;
};

struct store {
    struct event_base *base;
    struct loopq *loopq;
    char *conninfo;
    int nthreads;
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct request *head, *tail;
    int stopping;
    int quiesced;        /* store_quiesce ran */
    unsigned broken_gen; /* bumped when a connection is found broken (under mu) */
    /* For /metrics (under mu): threads running work, threads holding a connection (as of
       their last work), work waiting for a thread, and work submitted since the start. */
    int busy, connected, queued;
    unsigned long long submitted, dropped, server_changes;
    char server[80]; /* host:port of the newest connection (libpq's PQhost, PQport) */
    /* Loop-thread state. */
    int healthy;
    int ping_outstanding;
    int64_t ping_sent_ms; /* when the outstanding ping was submitted (monotonic) */
    struct event *ping_timer;
};

static void notice_to_log(void *arg, const char *message)
{
    char q[600], m[512];
    snprintf(m, sizeof(m), "%s", message);
    m[strcspn(m, "\n")] = '\0';
    log_debug("store", "event=notice msg=%s", log_quote(m, q, sizeof(q)));
}

PGconn *store_connect(const char *conninfo, struct drv_err *err)
{
    /* The bounds on a silent network first, then conninfo (expanded: its keywords win). */
    static const char *const keys[] = {"tcp_user_timeout",
                                       "keepalives",
                                       "keepalives_idle",
                                       "keepalives_interval",
                                       "keepalives_count",
                                       "dbname",
                                       NULL};
    const char *vals[] = {"10000", "1", "5", "2", "3", conninfo, NULL};
    PGconn *c = PQconnectdbParams(keys, vals, 1);
    if (PQstatus(c) != CONNECTION_OK) {
        char msg[400];
        snprintf(msg, sizeof(msg), "%s", PQerrorMessage(c));
        msg[strcspn(msg, "\n")] = '\0';
        PQfinish(c);
        drv_err_set(err, DRV_EAGAIN, 0, "cannot connect to postgresql: %s", msg);
        return NULL;
    }
    /* NOTICEs (CREATE ... IF NOT EXISTS) go to our log, not to stderr. */
    PQsetNoticeProcessor(c, notice_to_log, NULL);
    return c;
}

bool store_worth_waiting(const char *conninfo)
{
    PGPing p = PQping(conninfo);
    if (p == PQPING_NO_RESPONSE || p == PQPING_REJECT)
        return true;
    if (p != PQPING_OK)
        return false;
    /* Servers answer, but with target_session_attrs=read-write none of them may be writable
     * yet: every one a replica while Patroni elects a primary (a failover, a primary cut from
     * ZooKeeper). libpq says so only in its message. */
    PGconn *c = PQconnectdb(conninfo);
    bool no_primary = PQstatus(c) != CONNECTION_OK && strstr(PQerrorMessage(c), "read-only");
    /* Or one is writable now: the connection that failed met the election before it ended
     * (scripts/chaos --hosts, 2026-11-29: a droverd started then exited, not waiting). */
    bool primary_now = PQstatus(c) == CONNECTION_OK;
    PQfinish(c);
    return no_primary || primary_now;
}

static int sqlstate_code(const char *s)
{
    if (!s || strlen(s) != 5)
        return 0;
    int v = 0;
    for (int i = 0; i < 5; i++) {
        char ch = s[i];
        int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'A' && ch <= 'Z' ? ch - 'A' + 10 : 0;
        v = v * 36 + d;
    }
    return v;
}

const char *store_sqlstate(const struct drv_err *err, char buf[6])
{
    int v = err ? err->lib_code : 0;
    for (int i = 4; i >= 0; i--) {
        int d = v % 36;
        buf[i] = (char)(d < 10 ? '0' + d : 'A' + d - 10);
        v /= 36;
    }
    buf[5] = '\0';
    return buf;
}

int store_exec(PGconn *conn, const char *sql, int nparams, const char *const *params,
               PGresult **res, struct drv_err *err)
{
    if (res)
        *res = NULL;
    store__fault_note(sql);
    return store__result(conn, PQexecParams(conn, sql, nparams, NULL, params, NULL, NULL, 0), res,
                         err);
}

int store_exec_script(PGconn *conn, const char *sql, struct drv_err *err)
{
    return store__result(conn, PQexec(conn, sql), NULL, err);
}

_Thread_local bool store__conn_unusable;

bool store__sqlstate_drops(const char *state)
{
    static const char *const drops[] = {"25006", "57P01", "57P02", "57P03"};
    if (!state)
        return false;
    if (strncmp(state, "08", 2) == 0) /* connection exception */
        return true;
    for (size_t i = 0; i < sizeof(drops) / sizeof(drops[0]); i++)
        if (strcmp(state, drops[i]) == 0)
            return true;
    return false;
}

int store__result(PGconn *conn, PGresult *r, PGresult **res, struct drv_err *err)
{
    ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
        if (res)
            *res = r;
        else
            PQclear(r);
        return 0;
    }
    const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    char msg[400];
    snprintf(msg, sizeof(msg), "%s", r ? PQresultErrorMessage(r) : PQerrorMessage(conn));
    msg[strcspn(msg, "\n")] = '\0';
    bool drop = store__sqlstate_drops(state);
    if (drop)
        store__conn_unusable = true;
    int code = PQstatus(conn) == CONNECTION_BAD || drop ? DRV_EAGAIN : DRV_EPG;
    drv_err_set(err, code, sqlstate_code(state), "postgresql: %s", msg);
    PQclear(r);
    return code;
}

static void complete(void *arg);

/* A new connection: which server it reached; a change (a failover, a switchover) is logged. */
static void note_server(struct store *s, PGconn *conn)
{
    char now[80];
    snprintf(now, sizeof(now), "%s:%s", PQhost(conn), PQport(conn));
    pthread_mutex_lock(&s->mu);
    bool changed = s->server[0] && strcmp(s->server, now) != 0;
    char before[80];
    snprintf(before, sizeof(before), "%s", s->server);
    snprintf(s->server, sizeof(s->server), "%s", now);
    s->server_changes += changed;
    pthread_mutex_unlock(&s->mu);
    if (changed)
        log_info("store", "event=postgres-server-changed server=%s previous=%s", now, before);
}

static void *pool_main(void *arg)
{
    struct store *s = arg;
    PGconn *conn = NULL;
    unsigned conn_gen = 0; /* broken_gen when conn was made */
    for (;;) {
        pthread_mutex_lock(&s->mu);
        while (!s->head && !s->stopping)
            pthread_cond_wait(&s->cv, &s->mu);
        if (s->stopping) {
            pthread_mutex_unlock(&s->mu);
            break;
        }
        struct request *r = s->head;
        s->head = r->next;
        if (!s->head)
            s->tail = NULL;
        unsigned gen = s->broken_gen;
        s->queued--;
        s->busy++;
        int had_conn = conn != NULL;
        pthread_mutex_unlock(&s->mu);

        drv_err_clear(&r->err);
        if (conn && (PQstatus(conn) != CONNECTION_OK || conn_gen != gen)) {
            PQfinish(conn);
            conn = NULL;
        }
        if (!conn) {
            conn = store_connect(s->conninfo, &r->err);
            conn_gen = gen;
            if (conn)
                note_server(s, conn);
        }
        if (!conn) {
            r->rc = DRV_EAGAIN;
        } else {
            store__conn_unusable = false;
            r->rc = r->work(conn, r->arg, &r->err);
            if (r->rc != 0 && (PQstatus(conn) != CONNECTION_OK || store__conn_unusable)) {
                char q[600];
                log_info("store", "event=postgres-connection-dropped why=%s error=%s",
                         PQstatus(conn) != CONNECTION_OK ? "connection-lost" : "server-state",
                         log_quote(r->err.msg, q, sizeof(q)));
                PQfinish(conn);
                conn = NULL;
                if (r->rc == DRV_EPG)
                    r->rc = r->err.code = DRV_EAGAIN;
                pthread_mutex_lock(&s->mu);
                s->dropped++;
                s->broken_gen++; /* the others' connections are suspect too */
                pthread_mutex_unlock(&s->mu);
            }
        }
        pthread_mutex_lock(&s->mu);
        s->busy--;
        s->connected += (conn != NULL) - had_conn;
        pthread_mutex_unlock(&s->mu);
        loopq_post(s->loopq, complete, r);
    }
    if (conn) {
        PQfinish(conn);
        pthread_mutex_lock(&s->mu);
        s->connected--;
        pthread_mutex_unlock(&s->mu);
    }
    return NULL;
}

static void complete(void *arg)
{
    struct request *r = arg;
    if (r->done)
        r->done(r->rc, &r->err, r->arg);
    free(r);
}

struct store *store_new(struct event_base *base, const char *conninfo, int nthreads)
{
    struct store *s = xcalloc(1, sizeof(*s));
    s->base = base;
    s->loopq = loopq_new(base);
    s->conninfo = xstrdup(conninfo);
    s->nthreads = nthreads < 1 ? 1 : nthreads;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->threads = xcalloc((size_t)s->nthreads, sizeof(pthread_t));
    for (int i = 0; i < s->nthreads; i++)
        if (pthread_create(&s->threads[i], NULL, pool_main, s) != 0)
            abort();
    return s;
}

void store_quiesce(struct store *s)
{
    if (!s || s->quiesced)
        return;
    s->quiesced = 1;
    pthread_mutex_lock(&s->mu);
    s->stopping = 1;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    for (int i = 0; i < s->nthreads; i++)
        pthread_join(s->threads[i], NULL);
    if (s->ping_timer) {
        event_free(s->ping_timer);
        s->ping_timer = NULL;
    }
    /* Work that never ran ends with DRV_EAGAIN; then every completion runs, so that
     * each owner hears of its work and frees what it gave. */
    struct request *r = s->head;
    s->head = s->tail = NULL;
    while (r) {
        struct request *next = r->next;
        r->rc = drv_err_set(&r->err, DRV_EAGAIN, 0, "droverd is shutting down");
        loopq_post(s->loopq, complete, r);
        r = next;
    }
    loopq_run_pending(s->loopq);
}

void store_free(struct store *s)
{
    if (!s)
        return;
    store_quiesce(s);
    loopq_free(s->loopq);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s->threads);
    free(s->conninfo);
    free(s);
}

void store_submit(struct store *s, store_work_fn work, store_done_fn done, void *arg)
{
    if (s->quiesced) {
        /* After store_quiesce: fail at once (nobody runs the loop to deliver it later). */
        struct drv_err err;
        drv_err_set(&err, DRV_EAGAIN, 0, "droverd is shutting down");
        if (done)
            done(DRV_EAGAIN, &err, arg);
        return;
    }
    struct request *r = xcalloc(1, sizeof(*r));
    r->work = work;
    r->done = done;
    r->arg = arg;
    pthread_mutex_lock(&s->mu);
    if (s->tail)
        s->tail->next = r;
    else
        s->head = r;
    s->tail = r;
    s->queued++;
    s->submitted++;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

int store_healthy(const struct store *s)
{
    return s->healthy;
}

void store_pool_stats(struct store *s, struct store_pool_stats *st)
{
    pthread_mutex_lock(&s->mu);
    st->size = s->nthreads;
    st->busy = s->busy;
    st->connected = s->connected;
    st->queued = s->queued;
    st->submitted = s->submitted;
    st->dropped = s->dropped;
    st->server_changes = s->server_changes;
    pthread_mutex_unlock(&s->mu);
}

static int ping_work(PGconn *conn, void *arg, struct drv_err *err)
{
    return store_exec(conn, "SELECT 1", 0, NULL, NULL, err);
}

static void ping_done(int rc, const struct drv_err *err, void *arg)
{
    struct store *s = arg;
    s->ping_outstanding = 0;
    int ok = rc == 0;
    if (ok != s->healthy) {
        if (ok)
            log_info("store", "event=postgres_up");
        else {
            char q[600];
            log_warn("store", "event=postgres_down error=%s", log_quote(err->msg, q, sizeof(q)));
        }
    }
    s->healthy = ok;
}

/* A ping unanswered this long says PostgreSQL is not healthy, whatever the last one said:
 * on a silent network the ping waits behind work held on dead connections (store_connect's
 * bound ends those within about 10 s), and /readyz must not say 200 meanwhile. */
#define PING_STALE_MS 5000

static void ping_tick(evutil_socket_t fd, short what, void *arg)
{
    struct store *s = arg;
    if (!s->ping_outstanding) {
        s->ping_outstanding = 1;
        s->ping_sent_ms = clock_mono_ms();
        store_submit(s, ping_work, ping_done, s);
    } else if (s->healthy && clock_mono_ms() - s->ping_sent_ms >= PING_STALE_MS) {
        log_warn("store", "event=postgres_down error=\"no answer to a ping in %d ms\"",
                 PING_STALE_MS);
        s->healthy = 0;
    }
}

void store_start_health(struct store *s)
{
    struct timeval one = {1, 0};
    s->ping_timer = event_new(s->base, -1, EV_PERSIST, ping_tick, s);
    event_add(s->ping_timer, &one);
    ping_tick(-1, 0, s);
}
