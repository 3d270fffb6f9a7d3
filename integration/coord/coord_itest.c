/*
 * coord_itest: integration tests of src/coord against real ZooKeeper servers.
 *
 *   coord_itest members        join, watch, update, leave at once, re-join after expiry
 *   coord_itest lock           herd-free waiting, try-lock, deadline, then several processes
 *                              loop on lock/increment/unlock: no lost update, tokens grow
 *   coord_itest lock-expiry    the holder's session expires: it hears LOST before EXPIRED,
 *                              the next contender gets the lock, the old fenced write fails
 *
 * Each test is a subcommand; ctest runs each under scripts/with-stack.
 */
#include <string.h>
#include <unistd.h>

#include "itest.h"
#include "log.h"
#include "xalloc.h"

static char order_trace[512];

/* ---- members ------------------------------------------------------------ */

static char seen[4096];
static int seen_count;

static void on_members(const struct coord_member_info *m, size_t n, void *arg)
{
    seen[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        strncat(seen, m[i].id, sizeof(seen) - strlen(seen) - 1);
        strncat(seen, "=", sizeof(seen) - strlen(seen) - 1);
        strncat(seen, m[i].json, sizeof(seen) - strlen(seen) - 1);
        strncat(seen, ";", sizeof(seen) - strlen(seen) - 1);
    }
    seen_count++;
}

static bool seen_is_trace(void *want)
{
    return strcmp(order_trace, want) == 0;
}

static bool seen_is(void *want)
{
    return strcmp(seen, want) == 0;
}

static void set_flag(int rc, void *arg)
{
    CHECK(rc == 0, "rc=%d", rc);
    *(bool *)arg = true;
}

static int t_members(void)
{
    struct event_base *base = event_base_new();
    struct coord_session *s1 = it_session(base, 4000);
    struct coord_session *s2 = it_session(base, 30000);
    struct coord_session *s3 = it_session(base, 30000);
    const char *grp = "/drover/members/itest";
    struct coord_group *g = coord_group_watch(s3, grp, on_members, NULL);
    bool j1 = false, j2 = false;
    struct coord_member *m1 = coord_member_join(s1, grp, "a", "{\"n\":1}", set_flag, &j1);
    struct coord_member *m2 = coord_member_join(s2, grp, "b", "{\"n\":2}", set_flag, &j2);
    CHECK(it_run_until(base, &j1, 20000) && it_run_until(base, &j2, 20000), "join");
    CHECK(it_run_until_fn(base, seen_is, "a={\"n\":1};b={\"n\":2};", 20000), "seen %s", seen);

    bool upd = false;
    coord_member_update(m1, "{\"n\":1,\"draining\":true}", set_flag, &upd);
    CHECK(it_run_until(base, &upd, 20000), "update");
    CHECK(it_run_until_fn(base, seen_is, "a={\"n\":1,\"draining\":true};b={\"n\":2};", 20000),
          "seen %s", seen);

    /* Leave at once: seen long before s2's 30 s session timeout. */
    coord_member_leave(m2);
    coord_session_free(s2);
    CHECK(it_run_until_fn(base, seen_is, "a={\"n\":1,\"draining\":true};", 15000), "seen %s", seen);

    /* Expiry of s1: a new session, and the member is back with its latest data. */
    it_expire(s1);
    CHECK(it_run_until_fn(base, seen_is, "", 20000), "member gone with the session: %s", seen);
    CHECK(it_run_until_fn(base, seen_is, "a={\"n\":1,\"draining\":true};", 20000),
          "member back: %s", seen);
    CHECK(coord_session_generation(s1) == 1, "generation %u", coord_session_generation(s1));
    CHECK(coord_session_state(s1) == COORD_CONNECTED, "state %d", coord_session_state(s1));

    coord_member_leave(m1);
    coord_group_free(g);
    coord_session_free(s1);
    coord_session_free(s3);
    event_base_free(base);
    printf("members: ok (%d notifications)\n", seen_count);
    return 0;
}

/* ---- locks -------------------------------------------------------------- */

struct lk {
    struct coord_lock *l;
    enum coord_lock_event last;
    int events;
    char trace[256];
};

static void on_lock(struct coord_lock *l, enum coord_lock_event ev, void *arg)
{
    struct lk *k = arg;
    k->last = ev;
    k->events++;
    if (ev == COORD_LOCK_LOST)
        strncat(order_trace, "lost;", sizeof(order_trace) - strlen(order_trace) - 1);
}

static bool lk_event(void *arg)
{
    return ((struct lk *)arg)->last != 0;
}

static void set_bool(int rc, void *arg)
{
    *(bool *)arg = true;
}

/* Child: loop on lock / read-increment-write (unversioned) / unlock. */
static int t_lock_worker(int iters)
{
    struct event_base *base = event_base_new();
    struct coord_session *s = it_session(base, 10000);
    struct lk k = {0};
    k.l = coord_lock_new(s, "/drover/locks/itest-counter", "{\"who\":\"worker\"}", on_lock, &k);
    for (int i = 0; i < iters; i++) {
        k.last = 0;
        CHECK(coord_lock_acquire(k.l, -1) == 0, "acquire");
        CHECK(it_run_until_fn(base, lk_event, &k, 60000), "no lock");
        CHECK(k.last == COORD_LOCK_ACQUIRED, "event %d", k.last);
        /* Read, then write without a version: only the lock prevents lost updates. */
        long count = 0, token = 0;
        it_read_counter(base, s, &count, &token);
        CHECK(token < coord_lock_token(k.l), "token %ld not below ours %lld", token,
              (long long)coord_lock_token(k.l));
        it_write_counter(base, s, count + 1, (long)coord_lock_token(k.l));
        coord_lock_release(k.l);
    }
    coord_lock_free(k.l);
    coord_session_free(s);
    event_base_free(base);
    return 0;
}

static int t_lock(void)
{
    struct event_base *base = event_base_new();
    enum { K = 5 };
    struct coord_session *s[K];
    struct lk k[K];
    memset(k, 0, sizeof(k));
    for (int i = 0; i < K; i++) {
        s[i] = it_session(base, 10000);
        k[i].l = coord_lock_new(s[i], "/drover/locks/itest-herd", "{}", on_lock, &k[i]);
    }
    /* One at a time, so that the order of the contenders is known. */
    for (int i = 0; i < K; i++) {
        CHECK(coord_lock_acquire(k[i].l, -1) == 0, "acquire");
        if (i == 0)
            CHECK(it_run_until_fn(base, lk_event, &k[0], 20000), "first gets it");
        else
            for (int w = 0; w < 1000 && !coord_lock_waiting_on(k[i].l); w++)
                it_run_for(base, 10);
    }
    CHECK(k[0].last == COORD_LOCK_ACQUIRED && coord_lock_token(k[0].l) > 0, "held");
    for (int i = 1; i < K; i++) {
        CHECK(k[i].last == 0, "contender %d got event %d", i, k[i].last);
        CHECK(coord_lock_waiting_on(k[i].l) &&
                  strcmp(coord_lock_waiting_on(k[i].l), coord_lock_node(k[i - 1].l)) == 0,
              "contender %d waits on %s, not its predecessor %s", i, coord_lock_waiting_on(k[i].l),
              coord_lock_node(k[i - 1].l));
    }
    /* Try-lock and deadline while held elsewhere. */
    struct lk t = {0};
    t.l = coord_lock_new(s[0], "/drover/locks/itest-herd", "{}", on_lock, &t);
    coord_lock_acquire(t.l, 0);
    CHECK(it_run_until_fn(base, lk_event, &t, 20000) && t.last == COORD_LOCK_BUSY, "busy %d",
          t.last);
    t.last = 0;
    coord_lock_acquire(t.l, 300);
    CHECK(it_run_until_fn(base, lk_event, &t, 20000) && t.last == COORD_LOCK_TIMEDOUT,
          "timedout %d", t.last);
    coord_lock_free(t.l);
    /* Hand-over down the line: each release wakes exactly the next one; tokens grow. */
    int64_t prev = coord_lock_token(k[0].l);
    for (int i = 0; i < K - 1; i++) {
        coord_lock_release(k[i].l);
        CHECK(it_run_until_fn(base, lk_event, &k[i + 1], 20000), "next %d", i + 1);
        CHECK(k[i + 1].last == COORD_LOCK_ACQUIRED, "next %d event %d", i + 1, k[i + 1].last);
        for (int j = i + 2; j < K; j++)
            CHECK(k[j].last == 0, "contender %d woke early", j);
        CHECK(coord_lock_token(k[i + 1].l) > prev, "token grows");
        prev = coord_lock_token(k[i + 1].l);
    }
    for (int i = 0; i < K; i++) {
        coord_lock_free(k[i].l);
        coord_session_free(s[i]);
    }

    /* Several processes increment a shared counter under the lock. */
    enum { P = 4, ITERS = 50 };
    struct coord_session *cs = it_session(base, 10000);
    it_write_counter(base, cs, 0, 0);
    pid_t pids[P];
    char iters[16];
    snprintf(iters, sizeof(iters), "%d", ITERS);
    for (int i = 0; i < P; i++) {
        char *argv[] = {(char *)it_self(), "lock-worker", iters, NULL};
        pids[i] = it_spawn(argv);
    }
    for (int i = 0; i < P; i++)
        CHECK(it_wait(pids[i]) == 0, "worker %d failed", i);
    long count = 0, token = 0;
    it_read_counter(base, cs, &count, &token);
    CHECK(count == P * ITERS, "counter %ld, want %d: lost updates", count, P * ITERS);
    coord_session_free(cs);
    event_base_free(base);
    printf("lock: ok (%d processes x %d increments)\n", P, ITERS);
    return 0;
}

static void on_state_trace(struct coord_session *s, enum coord_state st, void *arg)
{
    if (st == COORD_EXPIRED)
        strncat(order_trace, "expired;", sizeof(order_trace) - strlen(order_trace) - 1);
}

struct txn_out {
    bool done;
    int rc;
    int failed_op;
};

static void on_txn(const struct coord_txn_result *r, void *arg)
{
    struct txn_out *o = arg;
    o->done = true;
    o->rc = r->rc;
    o->failed_op = r->failed_op;
}

static bool txn_done(void *arg)
{
    return ((struct txn_out *)arg)->done;
}

static int t_lock_expiry(void)
{
    struct event_base *base = event_base_new();
    struct drv_err err;
    struct coord_session_opts o = {
        .hosts = it_zk(), .session_timeout_ms = 4000, .on_state = on_state_trace};
    struct coord_session *s1 = coord_session_new(base, &o, &err);
    CHECK(s1 && coord_session_wait_connected(s1, 30000, &err) == 0, "s1");
    struct coord_session *s2 = it_session(base, 4000);
    const char *dir = "/drover/locks/itest-expiry";
    struct lk a = {0}, b = {0};
    a.l = coord_lock_new(s1, dir, "{\"who\":\"a\"}", on_lock, &a);
    b.l = coord_lock_new(s2, dir, "{\"who\":\"b\"}", on_lock, &b);
    coord_lock_acquire(a.l, -1);
    CHECK(it_run_until_fn(base, lk_event, &a, 20000) && a.last == COORD_LOCK_ACQUIRED, "a");
    coord_lock_acquire(b.l, -1);
    while (!coord_lock_waiting_on(b.l))
        it_run_for(base, 10);
    int64_t ta = coord_lock_token(a.l);

    /* The holder writes the job with a fenced, versioned write. */
    bool ok = false;
    coord_ensure_path(s1, "/drover/itest/job", set_bool, &ok);
    CHECK(it_run_until(base, &ok, 20000), "ensure");
    struct txn_out w1 = {0};
    struct coord_txn *t = coord_txn_new();
    coord_txn_set(t, "/drover/itest/job", "{\"owner\":\"a\"}", 0);
    coord_txn_commit(s1, t, a.l, on_txn, &w1);
    CHECK(it_run_until_fn(base, txn_done, &w1, 20000) && w1.rc == 0, "fenced write rc %d", w1.rc);

    /* Expire a's session behind its back, then let it write before it knows. */
    it_expire(s1);
    struct txn_out w2 = {0};
    t = coord_txn_new();
    coord_txn_set(t, "/drover/itest/job", "{\"owner\":\"a-stale\"}", 1);
    CHECK(coord_lock_held(a.l), "a does not know yet");
    coord_txn_commit(s1, t, a.l, on_txn, &w2);
    CHECK(it_run_until_fn(base, txn_done, &w2, 20000), "stale write answered");
    CHECK(w2.rc == DRV_ECONFLICT && w2.failed_op == -1, "stale write rc %d op %d", w2.rc,
          w2.failed_op);
    CHECK(it_run_until_fn(base, lk_event, &b, 20000) && b.last == COORD_LOCK_ACQUIRED, "b");
    CHECK(a.last == COORD_LOCK_LOST, "a lost: %d", a.last);
    CHECK(it_run_until_fn(base, seen_is_trace, "lost;expired;", 20000), "order: %s", order_trace);
    CHECK(coord_lock_token(b.l) > ta, "token grows");

    /* b's fenced write with the right version works; with a stale version it fails. */
    struct txn_out w3 = {0}, w4 = {0};
    t = coord_txn_new();
    coord_txn_set(t, "/drover/itest/job", "{\"owner\":\"b\"}", 1);
    coord_txn_commit(s2, t, b.l, on_txn, &w3);
    CHECK(it_run_until_fn(base, txn_done, &w3, 20000) && w3.rc == 0, "b write %d", w3.rc);
    t = coord_txn_new();
    coord_txn_check(t, "/drover/itest", -1);
    coord_txn_set(t, "/drover/itest/job", "{\"owner\":\"b\"}", 1);
    coord_txn_commit(s2, t, b.l, on_txn, &w4);
    CHECK(it_run_until_fn(base, txn_done, &w4, 20000), "w4");
    CHECK(w4.rc == DRV_ECONFLICT && w4.failed_op == 1, "w4 rc %d op %d", w4.rc, w4.failed_op);
    CHECK(coord_lock_held(b.l), "a version conflict does not lose the lock");

    coord_lock_free(a.l);
    coord_lock_free(b.l);
    coord_session_free(s1);
    coord_session_free(s2);
    event_base_free(base);
    printf("lock-expiry: ok\n");
    return 0;
}

int main(int argc, char **argv)
{
    it_self_path(argv[0]);
    log_init(getenv("DROVER_LOG_DEBUG") ? LOG_DEBUG : LOG_INFO, 2);
    log_route_libraries();
    CHECK(argc >= 2, "usage: coord_itest TEST");
    const char *t = argv[1];
    if (strcmp(t, "members") == 0)
        return t_members();
    if (strcmp(t, "lock") == 0)
        return t_lock();
    if (strcmp(t, "lock-worker") == 0 && argc >= 3)
        return t_lock_worker(atoi(argv[2]));
    if (strcmp(t, "lock-expiry") == 0)
        return t_lock_expiry();
    CHECK(false, "unknown test \"%s\"", t);
    return 2;
}
