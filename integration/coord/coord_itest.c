/*
 * coord_itest: integration tests of src/coord against real ZooKeeper servers.
 *
 *   coord_itest members        join, watch, update, leave at once, re-join after expiry
 *   coord_itest lock           herd-free waiting, try-lock, deadline, then several processes
 *                              loop on lock/increment/unlock: no lost update, tokens grow
 *   coord_itest lock-expiry    the holder's session expires: it hears LOST before EXPIRED,
 *                              the next contender gets the lock, the old fenced write fails
 *   coord_itest queue          priority order, batches, stats, two consumers share the work
 *                              and every item is delivered once
 *   coord_itest queue-backlog  100,000 items: every shard's listing stays far below 1 MB, the
 *                              figures are right, consumers take from it
 *   coord_itest queue-kill     a consumer holding claims is killed with SIGKILL: its items go
 *                              to another consumer, none is delivered twice or lost
 *   coord_itest connloss       creates whose replies are lost (a proxy swallows them, then
 *                              drops the connection): exactly one znode each
 *   coord_itest lock-partition the holder is cut off from ZooKeeper: it gives the lock up (a
 *                              third of the timeout later) before the server expires its
 *                              session and the next contender gets it
 *   coord_itest election       leader election hands over on expiry and on leaving
 *   coord_itest chroot-auth    a chrooted session with digest credentials: its znodes land
 *                              under the chroot, readable by it and its readers, writable
 *                              by it only (no world read)
 *   coord_itest restart        the ZooKeeper server (or, in an ensemble, its leader) is killed
 *                              and started again while clients lock and use a queue
 *
 * Each test is a subcommand, listed in itest_list.h (with those of itest_*.c); ctest runs each
 * under scripts/with-stack.
 */
#include <signal.h>
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

int t_members(void)
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
    /* (Whether the watcher sees the gap depends on timing: only the outcome is checked.) */
    for (int w = 0; w < 2000 && coord_session_generation(s1) == 0; w++)
        it_run_for(base, 10);
    CHECK(coord_session_generation(s1) == 1, "generation %u", coord_session_generation(s1));
    it_read_until(base, s3, "/drover/members/itest/a", "{\"n\":1,\"draining\":true}", 20000);
    CHECK(it_run_until_fn(base, seen_is, "a={\"n\":1,\"draining\":true};", 20000),
          "member back: %s", seen);
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
    const char *trace;
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

/* Child (lock-worker ITERS): loop on lock / read-increment-write (unversioned) / unlock. */
int t_lock_worker(char **args)
{
    int iters = atoi(args[0]);
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

int t_lock(void)
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

static bool txn_done(void *arg)
{
    return ((struct it_txn *)arg)->done;
}

int t_lock_expiry(void)
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
    struct it_txn w1 = {0};
    struct coord_txn *t = coord_txn_new();
    coord_txn_set(t, "/drover/itest/job", "{\"owner\":\"a\"}", 0);
    coord_txn_commit(s1, t, a.l, it_on_txn, &w1);
    CHECK(it_run_until_fn(base, txn_done, &w1, 20000) && w1.rc == 0, "fenced write rc %d", w1.rc);

    /* Expire a's session behind its back, then let it write before it knows. */
    char *a_node = xstrdup(coord_lock_node(a.l));
    it_expire(s1);
    it_wait_gone(a_node); /* the server has ended the session (the loop has not run) */
    free(a_node);
    struct it_txn w2 = {0};
    t = coord_txn_new();
    coord_txn_set(t, "/drover/itest/job", "{\"owner\":\"a-stale\"}", 1);
    CHECK(coord_lock_held(a.l), "a does not know yet");
    coord_txn_commit(s1, t, a.l, it_on_txn, &w2);
    CHECK(it_run_until_fn(base, txn_done, &w2, 20000), "stale write answered");
    /*
     * Rejected: DRV_ECONFLICT when the server saw it, or another error when the
     * client library refused it on the dead handle, or DRV_EAGAIN when the
     * answer was lost with the connection. Never applied (checked below). Once
     * a has heard of the expiry, a fenced write says DRV_ECONFLICT.
     */
    CHECK(w2.rc != 0, "the stale write was applied");
    while (w2.rc != DRV_ECONFLICT) {
        memset(&w2, 0, sizeof(w2));
        t = coord_txn_new();
        coord_txn_set(t, "/drover/itest/job", "{\"owner\":\"a-stale\"}", 1);
        coord_txn_commit(s1, t, a.l, it_on_txn, &w2);
        CHECK(it_run_until_fn(base, txn_done, &w2, 20000), "stale write answered");
        CHECK(w2.rc != 0, "the stale write was applied");
    }
    CHECK(w2.failed_op == -1, "stale write failed at op %d", w2.failed_op);
    it_read_check(base, s2, "/drover/itest/job", "{\"owner\":\"a\"}");
    CHECK(it_run_until_fn(base, lk_event, &b, 20000) && b.last == COORD_LOCK_ACQUIRED, "b");
    CHECK(a.last == COORD_LOCK_LOST, "a lost: %d", a.last);
    CHECK(it_run_until_fn(base, seen_is_trace, "lost;expired;", 20000), "order: %s", order_trace);
    CHECK(coord_lock_token(b.l) > ta, "token grows");

    /* b's fenced write with the right version works; with a stale version it fails. */
    struct it_txn w3 = {0}, w4 = {0};
    t = coord_txn_new();
    coord_txn_set(t, "/drover/itest/job", "{\"owner\":\"b\"}", 1);
    coord_txn_commit(s2, t, b.l, it_on_txn, &w3);
    CHECK(it_run_until_fn(base, txn_done, &w3, 20000) && w3.rc == 0, "b write %d", w3.rc);
    t = coord_txn_new();
    coord_txn_check(t, "/drover/itest", -1);
    coord_txn_set(t, "/drover/itest/job", "{\"owner\":\"b\"}", 1);
    coord_txn_commit(s2, t, b.l, it_on_txn, &w4);
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

/* ---- queues --------------------------------------------------------------- */

struct qt {
    struct event_base *base;
    struct coord_queue *q;
    bool ready;
    int puts_done;
    int taken;
    int completed;
    int errors;
    char order[256];
    bool complete_each;
    unsigned char *seen; /* per item number */
    int seen_n;
    int dupes;
    int outstanding;
};

static void qt_ready(int rc, void *arg)
{
    CHECK(rc == 0, "queue open rc %d", rc);
    ((struct qt *)arg)->ready = true;
}

static void qt_put(int rc, void *arg)
{
    CHECK(rc == 0, "put rc %d", rc);
    ((struct qt *)arg)->puts_done++;
}

static void qt_completed(int rc, void *arg)
{
    struct qt *x = arg;
    if (rc == 0)
        x->completed++;
    else
        x->errors++;
}

static void qt_take(struct coord_queue_item *it, int rc, void *arg);

static void qt_taken_common(struct qt *x, struct coord_queue_item *it)
{
    x->taken++;
    int n = -1;
    if (sscanf(it->json, "{\"n\":%d}", &n) == 1 && x->seen && n >= 0 && n < x->seen_n) {
        if (x->seen[n])
            x->dupes++;
        x->seen[n] = 1;
    }
    char b[16];
    snprintf(b, sizeof(b), "%d,", it->priority);
    strncat(x->order, b, sizeof(x->order) - strlen(x->order) - 1);
    if (x->complete_each)
        coord_queue_complete(x->q, it->id, qt_completed, x);
    coord_queue_item_free(it);
}

static void qt_take(struct coord_queue_item *it, int rc, void *arg)
{
    struct qt *x = arg;
    x->outstanding--;
    if (!it) {
        x->errors += rc != DRV_ETIMEDOUT && rc != DRV_EAGAIN;
        return;
    }
    qt_taken_common(x, it);
}

int t_queue(void)
{
    struct event_base *base = event_base_new();
    struct coord_session *s = it_session(base, 10000);

    /* One shard: strict priority, FIFO within a priority. */
    struct qt a = {.base = base};
    struct coord_queue_opts o1 = {.shards = 1, .consumer_id = "itest-a"};
    a.q = coord_queue_open(s, "/drover/queues/itest/prio", &o1, qt_ready, &a);
    struct coord_queue_put_item items[] = {
        {"{\"n\":0}", 1}, {"{\"n\":1}", 9}, {"{\"n\":2}", 5}, {"{\"n\":3}", 9}};
    CHECK(coord_queue_put(a.q, items, 4, qt_put, &a) == 0, "put");
    CHECK(it_run_until(base, &a.ready, 20000), "ready");
    while (a.puts_done < 1)
        it_run_for(base, 10);
    struct coord_queue_stats st = it_queue_stats(base, a.q);
    CHECK(st.length == 4 && st.claimed == 0, "length %lld claimed %lld", (long long)st.length,
          (long long)st.claimed);
    for (int i = 0; i < 4; i++) {
        a.outstanding++;
        coord_queue_take(a.q, 10000, qt_take, &a);
    }
    for (int w = 0; w < 2000 && a.taken < 4; w++)
        it_run_for(base, 10);
    CHECK(strcmp(a.order, "9,9,5,1,") == 0, "order %s", a.order);
    st = it_queue_stats(base, a.q);
    CHECK(st.length == 4 && st.claimed == 4, "claimed %lld", (long long)st.claimed);
    /* Nothing left to take: a take times out. */
    a.outstanding++;
    coord_queue_take(a.q, 200, qt_take, &a);
    while (a.outstanding > 0)
        it_run_for(base, 10);
    CHECK(a.errors == 0 && a.taken == 4, "taken %d errors %d", a.taken, a.errors);
    coord_queue_close(a.q);

    /* Sixteen shards, 1000 items in batches, two consumers on two sessions. */
    enum { N = 1000 };
    struct coord_session *s2 = it_session(base, 10000);
    struct qt b = {.base = base, .complete_each = true}, c = {.base = base, .complete_each = true};
    b.seen = c.seen = xcalloc(N, 1);
    b.seen_n = c.seen_n = N;
    struct coord_queue_opts ob = {.consumer_id = "itest-b"}, oc = {.consumer_id = "itest-c"};
    b.q = coord_queue_open(s, "/drover/queues/itest/many", &ob, qt_ready, &b);
    c.q = coord_queue_open(s2, "/drover/queues/itest/many", &oc, qt_ready, &c);
    char *json[N];
    struct coord_queue_put_item batch[100];
    for (int i = 0; i < N; i++)
        json[i] = xasprintf("{\"n\":%d}", i);
    for (int k = 0; k < N / 100; k++) {
        for (int i = 0; i < 100; i++)
            batch[i] = (struct coord_queue_put_item){json[k * 100 + i], i % 10};
        CHECK(coord_queue_put(b.q, batch, 100, qt_put, &b) == 0, "put");
    }
    while (b.puts_done < N / 100)
        it_run_for(base, 10);
    st = it_queue_stats(base, c.q);
    CHECK(st.length == N, "length %lld", (long long)st.length);
    CHECK(st.oldest_age_ms >= 0, "age %lld", (long long)st.oldest_age_ms);
    for (int i = 0; i < 8; i++) {
        b.outstanding++;
        coord_queue_take(b.q, -1, qt_take, &b);
        c.outstanding++;
        coord_queue_take(c.q, -1, qt_take, &c);
    }
    /* Keep 8 takes outstanding each until all are done. */
    while (b.completed + c.completed < N) {
        it_run_for(base, 5);
        while (b.outstanding < 8 && b.taken + c.taken < N) {
            b.outstanding++;
            coord_queue_take(b.q, -1, qt_take, &b);
        }
        while (c.outstanding < 8 && b.taken + c.taken < N) {
            c.outstanding++;
            coord_queue_take(c.q, -1, qt_take, &c);
        }
    }
    CHECK(b.dupes + c.dupes == 0, "delivered twice: %d", b.dupes + c.dupes);
    for (int i = 0; i < N; i++)
        CHECK(b.seen[i], "item %d never delivered", i);
    CHECK(b.errors + c.errors == 0, "errors %d", b.errors + c.errors);
    st = it_queue_stats(base, c.q);
    CHECK(st.length == 0 && st.claimed == 0, "left %lld", (long long)st.length);
    printf("queue: ok (b took %d, c took %d)\n", b.taken, c.taken);
    coord_queue_close(b.q);
    coord_queue_close(c.q);
    for (int i = 0; i < N; i++)
        free(json[i]);
    free(b.seen);
    coord_session_free(s);
    coord_session_free(s2);
    event_base_free(base);
    return 0;
}

/* ---- queue-backlog --------------------------------------------------------- */

struct shard_size {
    bool done;
    int rc;
    size_t n, bytes;
};

static void on_shard(int rc, char *const *names, size_t n, void *arg)
{
    struct shard_size *z = arg;
    z->rc = rc;
    z->n = n;
    for (size_t i = 0; i < n; i++)
        z->bytes += 4 + strlen(names[i]); /* jute: length + bytes */
    z->done = true;
}

int t_queue_backlog(void)
{
    enum { N = 100000, B = 1000 };
    struct event_base *base = event_base_new();
    struct coord_session *s = it_session(base, 10000);
    struct qt p = {.base = base, .complete_each = true};
    struct coord_queue_opts o = {.consumer_id = "backlog"};
    p.q = coord_queue_open(s, "/drover/queues/itest/backlog", &o, qt_ready, &p);
    char *json = xasprintf("{\"task\":\"configure\",\"node\":\"n-0001\",\"attempt\":1}");
    struct coord_queue_put_item *items = xcalloc(B, sizeof(*items));
    for (int i = 0; i < B; i++)
        items[i] = (struct coord_queue_put_item){json, i % 10};
    /* A few puts in flight at a time. */
    int sent = 0;
    while (p.puts_done < N / B) {
        while (sent < N / B && sent - p.puts_done < 8) {
            CHECK(coord_queue_put(p.q, items, B, qt_put, &p) == 0, "put");
            sent++;
        }
        it_run_for(base, 5);
    }
    struct coord_queue_stats st = it_queue_stats(base, p.q);
    CHECK(st.length == N && st.claimed == 0, "length %lld", (long long)st.length);
    size_t max = 0, total = 0;
    for (unsigned k = 0; k < COORD_QUEUE_DEFAULT_SHARDS; k++) {
        char path[128];
        snprintf(path, sizeof(path), "/drover/queues/itest/backlog/items/s%02u", k);
        struct shard_size z = {0};
        coord_children(s, path, on_shard, &z);
        CHECK(it_run_until(base, &z.done, 30000) && z.rc == 0, "list %s", path);
        total += z.n;
        if (z.bytes > max)
            max = z.bytes;
    }
    CHECK(total == N, "listed %zu", total);
    printf("queue-backlog: %d items, largest shard listing %zu bytes (limit 1048576)\n", N, max);
    CHECK(max < 1048576 / 2, "a shard listing of %zu bytes is too close to 1 MB", max);
    /* Consumers take from it: 2,000 items. */
    while (p.completed < 2000) {
        while (p.outstanding < 64 && p.taken + p.outstanding < 2000) {
            p.outstanding++;
            coord_queue_take(p.q, -1, qt_take, &p);
        }
        it_run_for(base, 5);
    }
    st = it_queue_stats(base, p.q);
    CHECK(st.length == N - 2000, "length %lld", (long long)st.length);
    CHECK(st.oldest_age_ms >= 0, "age %lld", (long long)st.oldest_age_ms);
    printf("queue-backlog: ok (oldest item %lld ms old)\n", (long long)st.oldest_age_ms);
    coord_queue_close(p.q);
    coord_session_free(s);
    event_base_free(base);
    free(items);
    free(json);
    return 0;
}

/* ---- queue-kill ----------------------------------------------------------- */

/* Child: "hold K" takes K items, prints them, and waits to be killed;
 * "drain N" takes and completes until it has completed N, printing each. */
static struct {
    struct coord_queue *q;
    bool hold;
    int limit;
    int taken, completed, outstanding;
} qc;

static void qc_take(struct coord_queue_item *it, int rc, void *arg);

static void qc_fill(void)
{
    int window = qc.hold ? qc.limit : 8;
    while (qc.outstanding < window &&
           (qc.hold ? qc.taken + qc.outstanding < qc.limit : qc.completed < qc.limit)) {
        qc.outstanding++;
        coord_queue_take(qc.q, -1, qc_take, NULL);
    }
}

static void qc_completed(int rc, void *arg)
{
    int n = (int)(intptr_t)arg;
    CHECK(rc == 0, "complete of %d rc %d", n, rc);
    qc.completed++;
    printf("done %d\n", n);
    fflush(stdout);
    if (qc.completed >= qc.limit)
        exit(0);
    qc_fill();
}

static void qc_take(struct coord_queue_item *it, int rc, void *arg)
{
    qc.outstanding--;
    CHECK(it, "take rc %d", rc);
    int n = -1;
    CHECK(sscanf(it->json, "{\"n\":%d}", &n) == 1, "bad item %s", it->json);
    qc.taken++;
    if (qc.hold) {
        printf("took %d\n", n);
        if (qc.taken == qc.limit)
            printf("held\n");
        fflush(stdout);
    } else {
        coord_queue_complete(qc.q, it->id, qc_completed, (void *)(intptr_t)n);
    }
    coord_queue_item_free(it);
    qc_fill();
}

static void qc_ready(int rc, void *arg)
{
    CHECK(rc == 0, "open rc %d", rc);
    qc_fill();
}

/* Child (queue-consumer MODE LIMIT) of the queue-kill test. */
int t_queue_consumer(char **args)
{
    const char *mode = args[0];
    int limit = atoi(args[1]);
    struct event_base *base = event_base_new();
    struct coord_session *s = it_session(base, 2000);
    qc.hold = strcmp(mode, "hold") == 0;
    qc.limit = limit;
    struct coord_queue_opts o = {.shards = 4, .consumer_id = mode};
    qc.q = coord_queue_open(s, "/drover/queues/itest/kill", &o, qc_ready, NULL);
    event_base_dispatch(base); /* until killed, or exit() in qc_completed */
    return 1;
}

int t_queue_kill(void)
{
    enum { N = 200, K = 20 };
    struct event_base *base = event_base_new();
    struct coord_session *s = it_session(base, 10000);
    struct qt p = {.base = base};
    struct coord_queue_opts o = {.shards = 4, .consumer_id = "producer"};
    p.q = coord_queue_open(s, "/drover/queues/itest/kill", &o, qt_ready, &p);
    char *json[N];
    struct coord_queue_put_item items[N];
    for (int i = 0; i < N; i++) {
        json[i] = xasprintf("{\"n\":%d}", i);
        items[i] = (struct coord_queue_put_item){json[i], 5};
    }
    coord_queue_put(p.q, items, N / 2, qt_put, &p);
    coord_queue_put(p.q, items + N / 2, N / 2, qt_put, &p);
    while (p.puts_done < 2)
        it_run_for(base, 10);

    int fa, fb;
    char k[16], n[16], line[128];
    snprintf(k, sizeof(k), "%d", K);
    snprintf(n, sizeof(n), "%d", N);
    char *argv_a[] = {(char *)it_self(), "queue-consumer", "hold", k, NULL};
    pid_t a = it_spawn_pipe(argv_a, &fa);
    bool held[N] = {false};
    for (int i = 0; i < K; i++) {
        int x;
        CHECK(it_read_line(fa, line, sizeof(line), 30000), "consumer a stopped");
        CHECK(sscanf(line, "took %d", &x) == 1 && x >= 0 && x < N, "a said %s", line);
        held[x] = true;
    }
    CHECK(it_read_line(fa, line, sizeof(line), 30000) && strcmp(line, "held") == 0, "a: %s", line);

    char *argv_b[] = {(char *)it_self(), "queue-consumer", "drain", n, NULL};
    pid_t b = it_spawn_pipe(argv_b, &fb);
    int done[N] = {0};
    for (int i = 0; i < N - K; i++) {
        int x;
        CHECK(it_read_line(fb, line, sizeof(line), 30000), "consumer b stopped after %d", i);
        CHECK(sscanf(line, "done %d", &x) == 1 && x >= 0 && x < N, "b said %s", line);
        CHECK(!held[x], "item %d delivered to b while a (alive) holds it", x);
        done[x]++;
    }
    /* While a lives, b gets nothing more. */
    CHECK(!it_read_line(fb, line, sizeof(line), 1000), "b got %s while a holds it", line);
    struct coord_queue_stats st = it_queue_stats(base, p.q);
    CHECK(st.length == K && st.claimed == K, "length %lld claimed %lld", (long long)st.length,
          (long long)st.claimed);

    kill(a, SIGKILL);
    CHECK(it_wait(a) == -SIGKILL, "a");
    for (int i = 0; i < K; i++) {
        int x;
        CHECK(it_read_line(fb, line, sizeof(line), 30000), "b got only %d of a's items", i);
        CHECK(sscanf(line, "done %d", &x) == 1 && x >= 0 && x < N, "b said %s", line);
        CHECK(held[x], "b got %d, not one of a's", x);
        done[x]++;
    }
    CHECK(it_wait(b) == 0, "b failed");
    for (int i = 0; i < N; i++)
        CHECK(done[i] == 1, "item %d completed %d times", i, done[i]);
    st = it_queue_stats(base, p.q);
    CHECK(st.length == 0 && st.claimed == 0, "left %lld", (long long)st.length);
    close(fa);
    close(fb);
    coord_queue_close(p.q);
    coord_session_free(s);
    event_base_free(base);
    for (int i = 0; i < N; i++)
        free(json[i]);
    printf("queue-kill: ok\n");
    return 0;
}

static const char *coord__basename_it(const char *p)
{
    const char *s = p ? strrchr(p, '/') : NULL;
    return s ? s + 1 : "";
}

static void on_written_rc(const struct coord_txn_result *r, void *arg);

static void on_seq_created(int rc, const char *path, void *arg)
{
    int *out = arg;
    CHECK(rc != 0 || (path && strstr(path, "/drover/itest/log/x-")), "created %s",
          path ? path : "(null)");
    *out = rc == 0 ? 1 : rc;
}

/* ---- connloss ----------------------------------------------------------------- */

struct children_out {
    bool done;
    int rc;
    size_t n;
    char names[64][128];
};

static void on_children(int rc, char *const *names, size_t n, void *arg)
{
    struct children_out *o = arg;
    o->rc = rc;
    o->n = n;
    for (size_t i = 0; i < n && i < 64; i++)
        snprintf(o->names[i], sizeof(o->names[i]), "%s", names[i]);
    o->done = true;
}

static struct children_out *list_children(struct event_base *base, struct coord_session *s,
                                          const char *path)
{
    static struct children_out o;
    memset(&o, 0, sizeof(o));
    coord_children(s, path, on_children, &o);
    CHECK(it_run_until(base, &o.done, 30000) && o.rc == 0, "list %s rc %d", path, o.rc);
    return &o;
}

static bool all_known(void *arg)
{
    struct lk *k = arg;
    for (int i = 0; i < 30; i++)
        if (!coord_lock_node(k[i].l) ||
            (!coord_lock_held(k[i].l) && !coord_lock_waiting_on(k[i].l)))
            return false;
    return true;
}

static bool puts_all_done(void *arg)
{
    return ((struct qt *)arg)->puts_done >= 20;
}

int t_connloss(void)
{
    enum { L = 30, P = 20, B = 10 };
    struct event_base *base = event_base_new();
    struct coord_session *direct = it_session(base, 20000);
    char *proxy = it_proxy_start(it_zk_port(1));
    struct coord_session *s = it_session_at(base, proxy, 20000);
    const char *dir = "/drover/locks/itest-loss";
    bool ok = false;
    coord_ensure_path(direct, dir, set_bool, &ok);
    CHECK(it_run_until(base, &ok, 20000), "dir");
    struct qt q = {.base = base};
    struct coord_queue_opts o = {.shards = 2, .consumer_id = "loss"};
    q.q = coord_queue_open(s, "/drover/queues/itest/loss", &o, qt_ready, &q);
    CHECK(it_run_until(base, &q.ready, 20000), "queue");

    /* Replies are swallowed from now on: the creates reach the server, the answers do not. */
    it_proxy_blackhole(true);
    struct lk k[L];
    memset(k, 0, sizeof(k));
    for (int i = 0; i < L; i++) {
        k[i].l = coord_lock_new(s, dir, "{}", on_lock, &k[i]);
        coord_lock_acquire(k[i].l, -1);
    }
    char *json[B];
    struct coord_queue_put_item items[B];
    for (int i = 0; i < B; i++) {
        json[i] = xasprintf("{\"n\":%d}", i);
        items[i] = (struct coord_queue_put_item){json[i], 1};
    }
    for (int i = 0; i < P; i++)
        coord_queue_put(q.q, items, B, qt_put, &q);
    /* And a fenced commit with sequential creates, and a lone sequential create. */
    ok = false;
    coord_ensure_path(direct, "/drover/itest/log", set_bool, &ok);
    CHECK(it_run_until(base, &ok, 20000), "log dir");
    int txn_rc = 0, seq_rc = 0;
    struct coord_txn *t = coord_txn_new();
    coord_txn_create(t, "/drover/itest/log/e-", "{\"event\":\"a\"}", COORD_SEQUENTIAL);
    coord_txn_create(t, "/drover/itest/log/e-", "{\"event\":\"b\"}", COORD_SEQUENTIAL);
    coord_txn_commit(s, t, NULL, on_written_rc, &txn_rc);
    coord_create_seq(s, "/drover/itest/log/x-", "{}", COORD_EPHEMERAL, on_seq_created, &seq_rc);
    /* Wait until the server has applied them all (seen through the direct session). */
    for (int w = 0; w < 3000 && list_children(base, direct, dir)->n < L; w++)
        it_run_for(base, 10);
    CHECK(list_children(base, direct, dir)->n == L, "server has %zu contenders",
          list_children(base, direct, dir)->n);
    CHECK(q.puts_done == 0, "a put was answered through the blackhole");
    for (int w = 0; w < 3000 && list_children(base, direct, "/drover/itest/log")->n < 3; w++)
        it_run_for(base, 10);
    CHECK(txn_rc == 0 && seq_rc == 0, "answered through the blackhole");
    /* Now the connection drops: every one of those creates has an unknown outcome. */
    it_proxy_cut();
    CHECK(it_run_until_fn(base, all_known, k, 30000), "locks did not settle");
    CHECK(it_run_until_fn(base, puts_all_done, &q, 30000), "puts did not settle");
    struct children_out *c = list_children(base, direct, dir);
    CHECK(c->n == L, "%zu contenders for %d locks", c->n, L);
    for (int i = 0; i < L; i++) {
        bool found = false;
        for (size_t j = 0; j < c->n; j++)
            found = found || strcmp(c->names[j], coord__basename_it(coord_lock_node(k[i].l))) == 0;
        CHECK(found, "lock %d node %s not on the server", i, coord_lock_node(k[i].l));
    }
    struct coord_queue_stats st = it_queue_stats(base, q.q);
    CHECK(st.length == P * B, "%lld items for %d put", (long long)st.length, P * B);
    while (txn_rc == 0 || seq_rc == 0)
        it_run_for(base, 10);
    CHECK(txn_rc == 1 && seq_rc == 1, "txn %d seq %d", txn_rc, seq_rc);
    c = list_children(base, direct, "/drover/itest/log");
    CHECK(c->n == 3, "%zu log entries, want 3", c->n);
    CHECK(coord_session_generation(s) == 0, "the session survived");
    for (int i = 0; i < L; i++)
        coord_lock_free(k[i].l);
    coord_queue_close(q.q);
    coord_session_free(s);
    coord_session_free(direct);
    event_base_free(base);
    for (int i = 0; i < B; i++)
        free(json[i]);
    free(proxy);
    printf("connloss: ok\n");
    return 0;
}

/* ---- lock-partition ---------------------------------------------------------- */

static char part_trace[256];

static void on_part_lock(struct coord_lock *l, enum coord_lock_event ev, void *arg)
{
    struct lk *k = arg;
    k->last = ev;
    k->events++;
    strncat(part_trace, k->trace, sizeof(part_trace) - strlen(part_trace) - 1);
    strncat(part_trace,
            ev == COORD_LOCK_ACQUIRED ? "-acquired;"
            : ev == COORD_LOCK_LOST   ? "-lost;"
                                      : "-other;",
            sizeof(part_trace) - strlen(part_trace) - 1);
}

static bool trace_has(void *want)
{
    return strstr(part_trace, want) != NULL;
}

int t_lock_partition(void)
{
    struct event_base *base = event_base_new();
    char *proxy = it_proxy_start(it_zk_port(1));
    struct coord_session *sa = it_session_at(base, proxy, 3000);
    struct coord_session *sb = it_session(base, 3000);
    const char *dir = "/drover/locks/itest-partition";
    struct lk a = {.trace = "a"}, b = {.trace = "b"};
    a.l = coord_lock_new(sa, dir, "{\"who\":\"a\"}", on_part_lock, &a);
    b.l = coord_lock_new(sb, dir, "{\"who\":\"b\"}", on_part_lock, &b);
    coord_lock_acquire(a.l, -1);
    CHECK(it_run_until_fn(base, trace_has, "a-acquired;", 20000), "a");
    coord_lock_acquire(b.l, -1);
    while (!coord_lock_waiting_on(b.l))
        it_run_for(base, 10);
    /* Cut a off: its session expires on the server; a must stop before b starts. */
    it_proxy_down(true);
    it_proxy_cut();
    CHECK(it_run_until_fn(base, trace_has, "b-acquired;", 30000), "b never got it: %s", part_trace);
    CHECK(strcmp(part_trace, "a-acquired;a-lost;b-acquired;") == 0, "order: %s", part_trace);
    CHECK(coord_session_state(sa) == COORD_SUSPENDED, "a still cut off");
    /* a comes back: its session is gone, it gets a new one. */
    it_proxy_down(false);
    for (int w = 0; w < 2000 && coord_session_generation(sa) == 0; w++)
        it_run_for(base, 10);
    CHECK(coord_session_generation(sa) == 1, "a's new session");
    coord_lock_free(a.l);
    coord_lock_free(b.l);
    coord_session_free(sa);
    coord_session_free(sb);
    event_base_free(base);
    free(proxy);
    printf("lock-partition: ok\n");
    return 0;
}

/* ---- election ------------------------------------------------------------- */

struct el {
    int leads, stops;
    bool leader;
    int64_t token;
};

static void on_elected(struct coord_election *e, bool leader, int64_t token, void *arg)
{
    struct el *x = arg;
    x->leader = leader;
    if (leader) {
        x->leads++;
        x->token = token;
    } else {
        x->stops++;
    }
}

static bool el_leads(void *arg)
{
    return ((struct el *)arg)->leader;
}

static bool el_stopped(void *arg)
{
    return ((struct el *)arg)->stops > 0;
}

int t_election(void)
{
    struct event_base *base = event_base_new();
    struct coord_session *s1 = it_session(base, 4000), *s2 = it_session(base, 4000);
    struct el x1 = {0}, x2 = {0};
    struct coord_election *e1 = coord_election_new(s1, "itest", "{\"who\":1}", on_elected, &x1);
    CHECK(it_run_until_fn(base, el_leads, &x1, 20000), "first leader");
    struct coord_election *e2 = coord_election_new(s2, "itest", "{\"who\":2}", on_elected, &x2);
    it_run_for(base, 300);
    CHECK(!x2.leader && coord_election_leader(e1), "one leader");
    it_expire(s1);
    CHECK(it_run_until_fn(base, el_stopped, &x1, 20000), "old leader told");
    CHECK(it_run_until_fn(base, el_leads, &x2, 20000), "second leader");
    CHECK(x2.token > x1.token, "token grows");
    /* The first contends again behind the second, and leads once it leaves. */
    it_run_for(base, 500);
    CHECK(!x1.leader, "two leaders");
    coord_election_free(e2);
    CHECK(it_run_until_fn(base, el_leads, &x1, 20000), "first leads again");
    CHECK(x1.leads == 2, "leads %d", x1.leads);
    coord_election_free(e1);
    coord_session_free(s1);
    coord_session_free(s2);
    event_base_free(base);
    printf("election: ok\n");
    return 0;
}

/* ---- chroot-auth ---------------------------------------------------------------- */

static void on_written_rc(const struct coord_txn_result *r, void *arg)
{
    int *out = arg;
    *out = r->rc == 0 ? 1 : r->rc;
}

int t_chroot_auth(void)
{
    struct event_base *base = event_base_new();
    struct coord_session *direct = it_session(base, 10000);
    bool ok = false;
    coord_ensure_path(direct, "/tenant-x", set_bool, &ok);
    CHECK(it_run_until(base, &ok, 20000), "chroot node");
    struct drv_err err;
    char ops_id[200];
    CHECK(coord_acl_digest_id("ops", "ops-secret", ops_id, sizeof(ops_id)) == 0, "digest id");
    struct coord_session_opts o = {.hosts = it_zk(),
                                   .chroot = "/tenant-x",
                                   .digest_user = "drover",
                                   .digest_password = "not-a-real-secret",
                                   .acl_readers = ops_id,
                                   .session_timeout_ms = 10000};
    struct coord_session *s = coord_session_new(base, &o, &err);
    CHECK(s && coord_session_wait_connected(s, 20000, &err) == 0, "chroot session");
    bool joined = false;
    struct coord_member *m =
        coord_member_join(s, "/drover/members/x", "a", "{\"n\":1}", set_flag, &joined);
    CHECK(it_run_until(base, &joined, 20000), "join");
    it_read_check(base, s, "/drover/members/x/a", "{\"n\":1}");
    /* The world may neither read nor write (docs/zookeeper-tree.md "ACLs"). */
    CHECK(it_read_rc(base, direct, "/tenant-x/drover/members/x/a") == DRV_EPERM,
          "an unauthenticated read was allowed");
    int rc = 0;
    struct coord_txn *t = coord_txn_new();
    coord_txn_set(t, "/tenant-x/drover/members/x/a", "{\"n\":2}", -1);
    coord_txn_commit(direct, t, NULL, on_written_rc, &rc);
    while (rc == 0)
        it_run_for(base, 10);
    CHECK(rc == DRV_EPERM, "an unauthenticated write got %d", rc);
    /* The owner may. */
    rc = 0;
    t = coord_txn_new();
    coord_txn_set(t, "/drover/members/x/a", "{\"n\":3}", -1);
    coord_txn_commit(s, t, NULL, on_written_rc, &rc);
    while (rc == 0)
        it_run_for(base, 10);
    CHECK(rc == 1, "the owner's write got %d", rc);
    /* A reader (acl_readers) may read, not write. */
    struct coord_session_opts ro = o;
    ro.digest_user = "ops";
    ro.digest_password = "ops-secret";
    struct coord_session *r = coord_session_new(base, &ro, &err);
    CHECK(r && coord_session_wait_connected(r, 20000, &err) == 0, "reader session");
    it_read_check(base, r, "/drover/members/x/a", "{\"n\":3}");
    rc = 0;
    t = coord_txn_new();
    coord_txn_set(t, "/drover/members/x/a", "{\"n\":4}", -1);
    coord_txn_commit(r, t, NULL, on_written_rc, &rc);
    while (rc == 0)
        it_run_for(base, 10);
    CHECK(rc == DRV_EPERM, "the reader's write got %d", rc);
    coord_session_free(r);
    coord_member_leave(m);
    coord_session_free(s);
    coord_session_free(direct);
    event_base_free(base);
    printf("chroot-auth: ok\n");
    return 0;
}

/* ---- restart ------------------------------------------------------------------- */

static struct {
    struct coord_session *s;
    struct coord_lock *l;
    struct coord_queue *q;
    long lock_cycles, completed, put;
    int outstanding;
    bool ready, putting, closing;
} rs;

static void rs_reacquire(void *arg)
{
    coord_lock_acquire(rs.l, 5000);
}

static void rs_lock(struct coord_lock *l, enum coord_lock_event ev, void *arg)
{
    if (ev == COORD_LOCK_ACQUIRED) {
        rs.lock_cycles++;
        coord_lock_release(l);
        coord_lock_acquire(l, 5000);
    } else {
        /* TIMEDOUT while the server is away, LOST after an expiry: try again. */
        struct timeval tv = {0, 100000};
        event_base_once(arg, -1, EV_TIMEOUT, (event_callback_fn)(void (*)(void))rs_reacquire, NULL,
                        &tv);
    }
}

static void rs_take(struct coord_queue_item *it, int rc, void *arg);

static void rs_completed(int rc, void *arg)
{
    if (rc == 0)
        rs.completed++;
}

static void rs_put(int rc, void *arg)
{
    rs.putting = false;
    if (rc == 0)
        rs.put += 10;
}

static void rs_feed(void)
{
    static struct coord_queue_put_item items[10];
    for (int i = 0; i < 10; i++)
        items[i] = (struct coord_queue_put_item){"{\"task\":\"restart\"}", 1};
    if (rs.put - rs.completed < 40 && !rs.putting) {
        rs.putting = true;
        coord_queue_put(rs.q, items, 10, rs_put, NULL);
    }
    while (rs.outstanding < 8 && !rs.closing) {
        rs.outstanding++;
        coord_queue_take(rs.q, 1000, rs_take, NULL);
    }
}

static void rs_take(struct coord_queue_item *it, int rc, void *arg)
{
    rs.outstanding--;
    if (it) {
        coord_queue_complete(rs.q, it->id, rs_completed, NULL);
        coord_queue_item_free(it);
    }
    rs_feed();
}

static void rs_ready(int rc, void *arg)
{
    rs.ready = rc == 0;
}

struct progress {
    long locks, items;
};

static bool progressed(void *arg)
{
    struct progress *p = arg;
    if (rs.ready && rs.outstanding == 0)
        rs_feed();
    return rs.lock_cycles >= p->locks && rs.completed >= p->items;
}

int t_restart(void)
{
    struct event_base *base = event_base_new();
    rs.s = it_session(base, 30000);
    rs.l = coord_lock_new(rs.s, "/drover/locks/itest-restart", "{}", rs_lock, base);
    struct coord_queue_opts o = {.shards = 4, .consumer_id = "restart"};
    rs.q = coord_queue_open(rs.s, "/drover/queues/itest/restart", &o, rs_ready, NULL);
    coord_lock_acquire(rs.l, 5000);
    struct progress p = {20, 50};
    CHECK(it_run_until_fn(base, progressed, &p, 30000), "no progress before: %ld locks %ld items",
          rs.lock_cycles, rs.completed);
    int n = it_zk_count() == 1 ? 1 : it_zk_leader();
    CHECK(n > 0, "no leader");
    printf("restart: killing server %d of %d\n", n, it_zk_count());
    fflush(stdout);
    it_zk_kill(n);
    if (it_zk_count() == 1) {
        it_run_for(base, 500);
        it_zk_start(n);
    }
    p = (struct progress){rs.lock_cycles + 20, rs.completed + 50};
    CHECK(it_run_until_fn(base, progressed, &p, 45000), "no progress after: %ld locks %ld items",
          rs.lock_cycles, rs.completed);
    if (it_zk_count() > 1) {
        /* And the old leader comes back and catches up. */
        it_zk_start(n);
        p = (struct progress){rs.lock_cycles + 20, rs.completed + 50};
        CHECK(it_run_until_fn(base, progressed, &p, 45000), "no progress at the end");
    }
    printf("restart: ok (%ld lock cycles, %ld items, %u new sessions)\n", rs.lock_cycles,
           rs.completed, coord_session_generation(rs.s));
    fflush(stdout);
    rs.closing = true;
    coord_lock_free(rs.l);
    coord_queue_close(rs.q);
    coord_session_free(rs.s);
    event_base_free(base);
    return 0;
}

/* The subcommands: itest_list.h, also read by CMakeLists.txt. */
static const struct itest_entry {
    const char *name;
    int (*test)(void);
    int (*helper)(char **args);
    int nargs;
} itests[] = {
#define ITEST(name, fn) {name, fn, NULL, 0},
#define ITEST_VARIANT(name, of, args)
#define ITEST_HELPER(name, fn, nargs) {name, NULL, fn, nargs},
#include "itest_list.h"
#undef ITEST
#undef ITEST_VARIANT
#undef ITEST_HELPER
};

int main(int argc, char **argv)
{
    it_self_path(argv[0]);
    log_init(getenv("DROVER_LOG_DEBUG") ? LOG_DEBUG : LOG_INFO, 2);
    log_route_libraries();
    CHECK(argc >= 2, "usage: coord_itest TEST");
    const char *t = argv[1];
    for (size_t i = 0; i < sizeof(itests) / sizeof(itests[0]); i++) {
        const struct itest_entry *e = &itests[i];
        if (strcmp(t, e->name) != 0)
            continue;
        if (e->test)
            return e->test();
        CHECK(argc - 2 >= e->nargs, "usage: coord_itest %s: %d arguments", t, e->nargs);
        return e->helper(argv + 2);
    }
    CHECK(false, "unknown test \"%s\"", t);
    return 2;
}
