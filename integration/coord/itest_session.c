/*
 * itest_session: the defects of issue 10 in the session and the locks, each
 * with its fault injected by the test (see itest_faults.c for the queue's).
 *
 *   txn-too-large          multi-ops over the size budget: a commit is refused at once
 *                          (DRV_ETOOBIG), a put is split, one huge item is refused; the
 *                          connection is never dropped by the server
 *   session-restart-retry  starting the new handle after an expiry fails (no descriptor
 *                          left): the session retries until it works
 *   prefix-collision       two processes that ask before their first connection do not take
 *                          each other's lock contender or sequential znode for their own
 *   lock-silent-partition  a holder cut off by a network that drops packets reports LOST
 *                          well before the server expires it (ratio within the run)
 *   session-free-in-callback  coord_session_free from inside the session's own callbacks
 */
#include <fcntl.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "itest.h"
#include "xalloc.h"

static bool renewed(void *arg)
{
    return coord_session_generation(arg) >= 1 && coord_session_state(arg) == COORD_CONNECTED;
}

/* ---- defect 3: multi-ops stay under the size budget ------------------------- */

static char state_trace[1024];

static void on_state_trace(struct coord_session *s, enum coord_state st, void *arg)
{
    strncat(state_trace, coord_state_name(st), sizeof(state_trace) - strlen(state_trace) - 1);
    strncat(state_trace, ";", sizeof(state_trace) - strlen(state_trace) - 1);
}

int t_txn_too_large(void)
{
    struct event_base *base = event_base_new();
    struct coord_session *s = it_session_nowait(base, it_zk(), 10000, on_state_trace, NULL);
    struct drv_err err;
    CHECK(coord_session_wait_connected(s, 30000, &err) == 0, "%s", err.msg);
    struct it_rc ok = {0};
    coord_ensure_path(s, "/drover/itest/big", it_on_rc, &ok);
    CHECK(it_wait_rc(base, &ok, 20000) == 0, "ensure");
    char *pad = xmalloc(4001);
    memset(pad, 'x', 4000);
    pad[4000] = '\0';
    char *big = xasprintf("{\"pad\":\"%s\"}", pad);

    /* 300 creates of 4 KB: 1.2 MB, over the server's 1 MB limit. Refused, nothing sent. */
    struct coord_txn *t = coord_txn_new();
    for (int i = 0; i < 300; i++) {
        char path[64];
        snprintf(path, sizeof(path), "/drover/itest/big/n%03d", i);
        coord_txn_create(t, path, big, 0);
    }
    struct it_txn to = {0};
    coord_txn_commit(s, t, NULL, it_on_txn, &to);
    CHECK(it_run_until(base, &to.done, 30000), "the commit was never answered");
    CHECK(to.rc == DRV_ETOOBIG, "a 1.2 MB commit got rc %d, want DRV_ETOOBIG", to.rc);
    CHECK(it_children_count(base, s, "/drover/itest/big", true) == 0, "some of it was applied");

    /* A put of 400 items of 4 KB: split under the budget, every item in. */
    struct coord_queue *q =
        it_queue_open(base, s, "/drover/queues/itest/big", 4, "big", NULL, NULL, 20000);
    struct coord_queue_put_item *items = xcalloc(400, sizeof(*items));
    for (int i = 0; i < 400; i++)
        items[i] = (struct coord_queue_put_item){big, 3};
    struct it_rc pr = {0};
    CHECK(coord_queue_put(q, items, 400, it_on_rc, &pr) == 0, "put");
    CHECK(it_run_until(base, &pr.done, 30000), "a 1.6 MB put never finished");
    CHECK(pr.rc == 0, "put rc %d", pr.rc);
    struct coord_queue_stats st = it_queue_stats(base, q);
    CHECK(st.length == 400, "%lld items for 400", (long long)st.length);

    /* One item of 2 MB: refused with a clear error. */
    char *huge_pad = xmalloc(2 * 1024 * 1024 + 1);
    memset(huge_pad, 'y', 2 * 1024 * 1024);
    huge_pad[2 * 1024 * 1024] = '\0';
    char *huge = xasprintf("{\"pad\":\"%s\"}", huge_pad);
    struct coord_queue_put_item one = {huge, 3};
    struct it_rc hr = {0};
    int rc = coord_queue_put(q, &one, 1, it_on_rc, &hr);
    if (rc == 0)
        rc = it_wait_rc(base, &hr, 30000);
    CHECK(rc == DRV_ETOOBIG, "a 2 MB item got rc %d, want DRV_ETOOBIG", rc);
    CHECK(strstr(state_trace, "suspended") == NULL, "the server dropped the connection (states %s)",
          state_trace);
    coord_queue_close(q);
    coord_session_free(s);
    event_base_free(base);
    free(items);
    free(huge);
    free(huge_pad);
    free(big);
    free(pad);
    printf("txn-too-large: ok\n");
    return 0;
}

/* ---- defect 4: a failed restart after an expiry is retried ------------------------ */

static struct {
    int fill[4096];
    int nfill;
    int low;
    bool starved;
    struct rlimit old;
} rr;

/*
 * On EXPIRED, every descriptor below rr.low is taken and the limit lowered to
 * rr.low, so the new handle cannot get one (the session's own descriptors,
 * above rr.low, are of no use to it): starting it fails.
 */
static void on_state_starve(struct coord_session *s, enum coord_state st, void *arg)
{
    if (st != COORD_EXPIRED || rr.starved)
        return;
    for (;;) {
        int fd = open("/dev/null", O_RDONLY);
        if (fd < 0)
            break;
        if (fd >= rr.low || rr.nfill >= 4096) {
            close(fd);
            break;
        }
        rr.fill[rr.nfill++] = fd;
    }
    struct rlimit lim = rr.old;
    lim.rlim_cur = (rlim_t)rr.low;
    CHECK(setrlimit(RLIMIT_NOFILE, &lim) == 0, "setrlimit");
    rr.starved = true;
}

int t_session_restart_retry(void)
{
    struct event_base *base = event_base_new();
    CHECK(getrlimit(RLIMIT_NOFILE, &rr.old) == 0, "getrlimit");
    for (int i = 0; i < 64; i++) {
        int fd = open("/dev/null", O_RDONLY);
        CHECK(fd >= 0, "open");
        rr.fill[rr.nfill++] = fd;
        if (fd + 1 > rr.low)
            rr.low = fd + 1;
    }
    struct coord_session *s = it_session_nowait(base, it_zk(), 4000, on_state_starve, NULL);
    struct drv_err err;
    CHECK(coord_session_wait_connected(s, 30000, &err) == 0, "%s", err.msg);
    it_expire(s);
    CHECK(it_run_until(base, &rr.starved, 20000), "no expiry seen");
    it_run_for(base, 1500);
    CHECK(coord_session_state(s) != COORD_CONNECTED, "connected without a descriptor?");
    /* The descriptors come back: the session must start again by itself. */
    CHECK(setrlimit(RLIMIT_NOFILE, &rr.old) == 0, "setrlimit");
    for (int i = 0; i < rr.nfill; i++)
        close(rr.fill[i]);
    CHECK(it_run_until_fn(base, renewed, s, 20000),
          "the session never started again after a failed start (state %s)",
          coord_state_name(coord_session_state(s)));
    CHECK(coord_session_generation(s) == 1, "generation %u after one new session",
          coord_session_generation(s));
    struct it_got g = {0};
    coord_get(s, "/zookeeper", it_on_got, &g);
    CHECK(it_run_until(base, &g.done, 20000) && g.rc == 0, "read after restart rc %d", g.rc);
    coord_session_free(s);
    event_base_free(base);
    printf("session-restart-retry: ok\n");
    return 0;
}

/* ---- defect 8: name prefixes unique per process and session ------------------- */

struct lkx {
    enum coord_lock_event last;
    int lost;
};

static void on_lkx(struct coord_lock *l, enum coord_lock_event ev, void *arg)
{
    struct lkx *k = arg;
    k->last = ev;
    k->lost += ev == COORD_LOCK_LOST;
}

struct seq_out {
    bool done;
    int rc;
    char path[256];
};

static void on_seq(int rc, const char *path, void *arg)
{
    struct seq_out *o = arg;
    o->rc = rc;
    snprintf(o->path, sizeof(o->path), "%s", path ? path : "");
    o->done = true;
}

static struct {
    struct lkx *kb;
    struct seq_out *qb, *qa;
    struct coord_lock *la;
} pf;

static bool b_settled(void *arg)
{
    return pf.kb->last == COORD_LOCK_ACQUIRED && pf.qb->done;
}

static bool a_settled(void *arg)
{
    return (coord_lock_waiting_on(pf.la) || coord_lock_held(pf.la) || pf.kb->lost) && pf.qa->done;
}

int t_prefix_collision(void)
{
    struct event_base *base = event_base_new();
    struct coord_session *direct = it_session(base, 20000);
    const char *dir = "/drover/locks/itest-prefix";
    struct it_rc ok1 = {0}, ok2 = {0};
    coord_ensure_path(direct, dir, it_on_rc, &ok1);
    coord_ensure_path(direct, "/drover/itest/pfx", it_on_rc, &ok2);
    CHECK(it_wait_rc(base, &ok1, 20000) == 0 && it_wait_rc(base, &ok2, 20000) == 0, "dirs");
    struct it_proxy *pa = it_proxy_new(it_zk_port(1)), *pb = it_proxy_new(it_zk_port(1));
    it_proxy_set_down(pa, true);
    it_proxy_set_down(pb, true);
    /* Two processes (here two sessions) ask before their first connection. */
    struct coord_session *sb = it_session_nowait(base, it_proxy_addr(pb), 20000, NULL, NULL);
    struct coord_session *sa = it_session_nowait(base, it_proxy_addr(pa), 20000, NULL, NULL);
    struct lkx kb = {0}, ka = {0};
    struct seq_out qb = {0}, qa = {0};
    struct coord_lock *lb = coord_lock_new(sb, dir, "{\"who\":\"b\"}", on_lkx, &kb);
    pf.la = coord_lock_new(sa, dir, "{\"who\":\"a\"}", on_lkx, &ka);
    coord_lock_acquire(lb, -1);
    coord_lock_acquire(pf.la, -1);
    coord_create_seq(sb, "/drover/itest/pfx/e-", "{\"who\":\"b\"}", 0, on_seq, &qb);
    coord_create_seq(sa, "/drover/itest/pfx/e-", "{\"who\":\"a\"}", 0, on_seq, &qa);
    pf.kb = &kb;
    pf.qb = &qb;
    pf.qa = &qa;
    it_run_for(base, 1000); /* their first requests die with the refused connections */
    it_proxy_set_down(pb, false);
    CHECK(it_run_until_fn(base, b_settled, NULL, 30000), "b: lock %d, create %d", kb.last, qb.done);
    it_proxy_set_down(pa, false);
    CHECK(it_run_until_fn(base, a_settled, NULL, 30000), "a did not settle");
    it_run_for(base, 500);
    CHECK(kb.lost == 0, "b lost its lock: a's recovery took b's contender for its own");
    CHECK(coord_lock_held(lb) && !coord_lock_held(pf.la), "b %d a %d", coord_lock_held(lb),
          coord_lock_held(pf.la));
    CHECK(qa.rc == 0 && qb.rc == 0, "creates rc %d %d", qa.rc, qb.rc);
    CHECK(strcmp(qa.path, qb.path) != 0, "a took b's znode %s for its own", qb.path);
    CHECK(it_children_count(base, direct, "/drover/itest/pfx", true) == 2, "want 2 znodes");
    coord_lock_free(lb);
    coord_lock_free(pf.la);
    coord_session_free(sa);
    coord_session_free(sb);
    coord_session_free(direct);
    event_base_free(base);
    printf("prefix-collision: ok\n");
    return 0;
}

/* ---- defect 9: silent partitions ---------------------------------------------- */

static struct {
    char trace[256];
    long t_lost, t_acq;
} sp;

static void on_silent_lock(struct coord_lock *l, enum coord_lock_event ev, void *arg)
{
    const char *who = arg;
    strncat(sp.trace, who, sizeof(sp.trace) - strlen(sp.trace) - 1);
    strncat(sp.trace,
            ev == COORD_LOCK_ACQUIRED ? "-acquired;"
            : ev == COORD_LOCK_LOST   ? "-lost;"
                                      : "-other;",
            sizeof(sp.trace) - strlen(sp.trace) - 1);
    if (ev == COORD_LOCK_LOST && !sp.t_lost)
        sp.t_lost = it_now_ms();
    if (ev == COORD_LOCK_ACQUIRED && strcmp(who, "b") == 0)
        sp.t_acq = it_now_ms();
}

static bool trace_has(void *want)
{
    return strstr(sp.trace, want) != NULL;
}

int t_lock_silent_partition(void)
{
    enum { T = 6000 };
    struct event_base *base = event_base_new();
    struct it_proxy *p = it_proxy_new(it_zk_port(1));
    struct coord_session *sa = it_session_at(base, it_proxy_addr(p), T);
    struct coord_session *sb = it_session(base, T);
    const char *dir = "/drover/locks/itest-silent";
    struct coord_lock *a = coord_lock_new(sa, dir, "{\"who\":\"a\"}", on_silent_lock, "a");
    struct coord_lock *b = coord_lock_new(sb, dir, "{\"who\":\"b\"}", on_silent_lock, "b");
    coord_lock_acquire(a, -1);
    CHECK(it_run_until_fn(base, trace_has, "a-acquired;", 20000), "a");
    coord_lock_acquire(b, -1);
    while (!coord_lock_waiting_on(b))
        it_run_for(base, 10);
    /* Packets to and from a are dropped from now on: no RST, no FIN. */
    long t0 = it_now_ms();
    it_proxy_set_silent(p, true);
    CHECK(it_run_until_fn(base, trace_has, "b-acquired;", 4 * T), "b never got it: %s", sp.trace);
    CHECK(strcmp(sp.trace, "a-acquired;a-lost;b-acquired;") == 0, "order: %s", sp.trace);
    double ratio = (double)(sp.t_lost - t0) / (double)(sp.t_acq - t0);
    printf("lock-silent-partition: a lost after %ld ms, b acquired after %ld ms (ratio %.2f)\n",
           sp.t_lost - t0, sp.t_acq - t0, ratio);
    CHECK(ratio <= 0.8,
          "a reported LOST %.2f of the way to b's acquisition: no safety margin before expiry",
          ratio);
    it_proxy_set_silent(p, false);
    CHECK(it_run_until_fn(base, renewed, sa, 30000), "a's new session");
    coord_lock_free(a);
    coord_lock_free(b);
    coord_session_free(sa);
    coord_session_free(sb);
    event_base_free(base);
    printf("lock-silent-partition: ok\n");
    return 0;
}

/* ---- defect 10: freeing a session from its own callbacks ------------------------- */

static struct {
    struct coord_session *s;
    struct coord_member *m;
    int calls;
    bool freed;
    bool freed_on_expiry;
} fc;

static void on_get_free(int rc, const char *data, int version, void *arg)
{
    fc.calls++;
    if (!fc.freed) {
        fc.freed = true;
        coord_member_leave(fc.m);
        coord_session_free(fc.s);
    }
}

static void on_state_free(struct coord_session *s, enum coord_state st, void *arg)
{
    if (st == COORD_EXPIRED && !fc.freed_on_expiry) {
        fc.freed_on_expiry = true;
        coord_session_free(s);
    }
}

static bool all_calls(void *arg)
{
    return fc.calls >= 20;
}

int t_session_free_in_callback(void)
{
    struct event_base *base = event_base_new();
    struct coord_session *direct = it_session(base, 20000);
    fc.s = it_session(base, 20000);
    struct it_rc j = {0};
    fc.m = coord_member_join(fc.s, "/drover/members/itest-free", "x", "{}", it_on_rc, &j);
    CHECK(it_wait_rc(base, &j, 20000) == 0, "join");
    /* Twenty reads answered together; the first one's callback frees the session. */
    for (int i = 0; i < 20; i++)
        coord_get(fc.s, "/drover", on_get_free, NULL);
    CHECK(it_run_until_fn(base, all_calls, NULL, 20000), "%d of 20 callbacks", fc.calls);
    it_run_for(base, 200);
    CHECK(fc.calls == 20, "%d callbacks for 20 reads", fc.calls);
    struct it_got g = {0};
    coord_get(direct, "/drover/members/itest-free/x", it_on_got, &g);
    CHECK(it_run_until(base, &g.done, 20000) && g.rc == DRV_ENOENT, "the member is still there");

    /* Freed from the state callback that reports its expiry. */
    struct coord_session *s3 = it_session_nowait(base, it_zk(), 4000, on_state_free, NULL);
    struct drv_err err;
    CHECK(coord_session_wait_connected(s3, 30000, &err) == 0, "%s", err.msg);
    it_expire(s3);
    CHECK(it_run_until(base, &fc.freed_on_expiry, 20000), "no expiry seen");
    it_run_for(base, 300);
    coord_session_free(direct);
    event_base_free(base);
    printf("session-free-in-callback: ok\n");
    return 0;
}
