/*
 * itest_faults: one integration test per defect of issue 10, each with the
 * fault injected by the test itself (a proxy that closes, holds, swallows or
 * silently drops; an expired session). Each of them failed on the coord that
 * landed first; the commit that fixed the defect says how. The session's
 * defects are in itest_session.c.
 *
 *   claim-late-release     a consumer's session expires; another takes its item; the
 *                          first one's late release must not free the other's claim
 *   claim-late-complete    ... and its late complete must not delete the item the other runs
 *   members-partial        a group refresh whose reads die with the connection must not
 *                          report members that did not leave as gone
 *   queue-close-claims     claims whose answers arrive after coord_queue_close are released
 *   queue-open-retry       a queue whose open failed (cut off) opens later by itself
 *   put-exactly-once       a put whose answer is lost while consumers complete its items is
 *                          not put again
 */
#include <string.h>
#include <unistd.h>

#include "itest.h"
#include "xalloc.h"

/* ---- small helpers ------------------------------------------------------- */

static void put_n(struct event_base *base, struct coord_queue *q, int n, int first)
{
    struct coord_queue_put_item *items = xcalloc((size_t)n, sizeof(*items));
    char **json = xcalloc((size_t)n, sizeof(char *));
    for (int i = 0; i < n; i++) {
        json[i] = xasprintf("{\"n\":%d}", first + i);
        items[i] = (struct coord_queue_put_item){json[i], 5};
    }
    struct it_rc o = {0};
    CHECK(coord_queue_put(q, items, (size_t)n, it_on_rc, &o) == 0, "put");
    CHECK(it_wait_rc(base, &o, 20000) == 0, "put rc %d", o.rc);
    for (int i = 0; i < n; i++)
        free(json[i]);
    free(json);
    free(items);
}

static bool connected(void *arg)
{
    return coord_session_state(arg) == COORD_CONNECTED;
}

static bool renewed(void *arg)
{
    return coord_session_generation(arg) >= 1 && coord_session_state(arg) == COORD_CONNECTED;
}

/* ---- defect 1: complete and release only by the holder -------------------- */

static int t_claim_late(bool complete)
{
    struct event_base *base = event_base_new();
    struct coord_session *s1 = it_session(base, 4000);
    struct coord_session *s2 = it_session(base, 10000);
    const char *path = complete ? "/drover/queues/itest/late-c" : "/drover/queues/itest/late-r";
    struct coord_queue *q1 = it_queue_open(base, s1, path, 1, "c1", NULL, NULL, 20000);
    struct coord_queue *q2 = it_queue_open(base, s2, path, 1, "c2", NULL, NULL, 20000);
    put_n(base, q2, 1, 0);
    struct it_take t1 = it_take_one(base, q1, 10000);
    CHECK(t1.rc == 0, "c1 take rc %d", t1.rc);

    /* c1's session expires: its claim goes, and c1 gets a new session by itself. */
    it_expire(s1);
    CHECK(it_run_until_fn(base, renewed, s1, 20000), "c1 has no new session");
    struct it_take t2 = it_take_one(base, q2, 10000);
    CHECK(t2.rc == 0 && strcmp(t1.id, t2.id) == 0, "c2 got %s (rc %d), not %s", t2.id, t2.rc,
          t1.id);

    struct it_rc late = {0};
    if (!complete) {
        coord_queue_release(q1, t1.id, it_on_rc, &late);
        it_wait_rc(base, &late, 20000);
        struct coord_queue_stats st = it_queue_stats(base, q2);
        CHECK(st.claimed == 1, "c1's late release freed c2's claim (claimed %lld)",
              (long long)st.claimed);
        struct it_take t3 = it_take_one(base, q1, 1000);
        CHECK(t3.rc == DRV_ETIMEDOUT, "the item was handed out a third time (rc %d)", t3.rc);
        CHECK(late.rc == DRV_ECONFLICT, "c1's late release said %d", late.rc);
    } else {
        coord_queue_complete(q1, t1.id, it_on_rc, &late);
        it_wait_rc(base, &late, 20000);
        struct coord_queue_stats st = it_queue_stats(base, q2);
        CHECK(st.length == 1 && st.claimed == 1,
              "c1's late complete removed the item c2 runs (length %lld claimed %lld)",
              (long long)st.length, (long long)st.claimed);
        CHECK(late.rc == DRV_ECONFLICT, "c1's late complete said %d", late.rc);
    }
    struct it_rc done = {0};
    coord_queue_complete(q2, t2.id, it_on_rc, &done);
    CHECK(it_wait_rc(base, &done, 20000) == 0, "c2's complete rc %d", done.rc);
    struct coord_queue_stats st = it_queue_stats(base, q2);
    CHECK(st.length == 0 && st.claimed == 0, "left %lld", (long long)st.length);
    coord_queue_close(q1);
    coord_queue_close(q2);
    coord_session_free(s1);
    coord_session_free(s2);
    event_base_free(base);
    printf("claim-late-%s: ok\n", complete ? "complete" : "release");
    return 0;
}

int t_claim_late_release(void)
{
    return t_claim_late(false);
}

int t_claim_late_complete(void)
{
    return t_claim_late(true);
}

/* ---- defect 2: a refresh that cannot read everything keeps the last view ---- */

enum { MP_N = 50 };

static struct {
    bool full;
    int fewest; /* fewest members reported once all had joined */
    int last_n;
    char m00[64];
} mp = {.fewest = MP_N};

static void on_mp(const struct coord_member_info *m, size_t n, void *arg)
{
    mp.last_n = (int)n;
    if (n == MP_N)
        mp.full = true;
    if (mp.full && (int)n < mp.fewest)
        mp.fewest = (int)n;
    mp.m00[0] = '\0';
    for (size_t i = 0; i < n; i++)
        if (strcmp(m[i].id, "m00") == 0)
            snprintf(mp.m00, sizeof(mp.m00), "%s", m[i].json);
}

static bool mp_updated(void *arg)
{
    return mp.last_n == MP_N && strcmp(mp.m00, "{\"n\":100}") == 0;
}

static bool mp_full(void *arg)
{
    return mp.last_n == MP_N;
}

int t_members_partial(void)
{
    struct event_base *base = event_base_new();
    struct coord_session *direct = it_session(base, 20000);
    struct it_proxy *p = it_proxy_new(it_zk_port(1));
    struct coord_session *sw = it_session_at(base, it_proxy_addr(p), 20000);
    const char *grp = "/drover/members/itest-partial";
    struct coord_member *m[MP_N];
    struct it_rc joined[MP_N];
    memset(joined, 0, sizeof(joined));
    for (int i = 0; i < MP_N; i++) {
        char id[16], json[32];
        snprintf(id, sizeof(id), "m%02d", i);
        snprintf(json, sizeof(json), "{\"n\":%d}", i);
        m[i] = coord_member_join(direct, grp, id, json, it_on_rc, &joined[i]);
    }
    for (int i = 0; i < MP_N; i++)
        CHECK(it_wait_rc(base, &joined[i], 20000) == 0, "join %d", i);
    struct coord_group *g = coord_group_watch(sw, grp, on_mp, NULL);
    CHECK(it_run_until_fn(base, mp_full, NULL, 20000), "the watcher sees %d members", mp.last_n);

    /* A change starts a refresh: its listing is answered, its reads are not; then the cut. */
    it_proxy_set_swallow(p, 4 /* getData */);
    struct it_rc upd = {0};
    coord_member_update(m[0], "{\"n\":100}", it_on_rc, &upd);
    CHECK(it_wait_rc(base, &upd, 20000) == 0, "update");
    it_run_for(base, 500);
    it_proxy_cut_all(p);
    it_proxy_set_swallow(p, 0);
    CHECK(it_run_until_fn(base, mp_updated, NULL, 20000), "the update never showed: n %d, m00 %s",
          mp.last_n, mp.m00);
    CHECK(mp.fewest == MP_N,
          "the group callback reported %d members: members that did not leave vanished", mp.fewest);
    coord_group_free(g);
    for (int i = 0; i < MP_N; i++)
        coord_member_leave(m[i]);
    coord_session_free(sw);
    coord_session_free(direct);
    event_base_free(base);
    printf("members-partial: ok\n");
    return 0;
}

/* ---- defect 5: claims answered after close are released --------------------- */

static void on_take_ignore(struct coord_queue_item *it, int rc, void *arg)
{
    int *n = arg;
    (*n)++;
    coord_queue_item_free(it);
}

int t_queue_close_claims(void)
{
    struct event_base *base = event_base_new();
    struct coord_session *sd = it_session(base, 20000);
    struct it_proxy *p = it_proxy_new(it_zk_port(1));
    struct coord_session *sc = it_session_at(base, it_proxy_addr(p), 20000);
    const char *path = "/drover/queues/itest/close";
    struct coord_queue *qd = it_queue_open(base, sd, path, 1, "producer", NULL, NULL, 20000);
    struct coord_queue *qc = it_queue_open(base, sc, path, 1, "closer", NULL, NULL, 20000);
    put_n(base, qd, 21, 0);
    /* One take lists the shard (the consumer caches the other names) ... */
    struct it_take first = it_take_one(base, qc, 10000);
    CHECK(first.rc == 0, "first take rc %d", first.rc);
    struct it_rc fin = {0};
    coord_queue_complete(qc, first.id, it_on_rc, &fin);
    CHECK(it_wait_rc(base, &fin, 20000) == 0, "complete rc %d", fin.rc);
    /* ... so the next claims go out at once: they reach the server, their answers wait. */
    it_proxy_set_hold(p, true);
    int answered = 0;
    for (int i = 0; i < 20; i++)
        coord_queue_take(qc, -1, on_take_ignore, &answered);
    it_run_for(base, 500);
    struct coord_queue_stats st = it_queue_stats(base, qd);
    CHECK(st.claimed == 20, "the claims did not reach the server (%lld)", (long long)st.claimed);
    coord_queue_close(qc);
    it_proxy_set_hold(p, false);
    for (int w = 0; w < 100 && st.claimed > 0; w++) {
        it_run_for(base, 100);
        st = it_queue_stats(base, qd);
    }
    CHECK(st.claimed == 0, "%lld items stay claimed by a closed queue", (long long)st.claimed);
    int got = 0;
    for (int i = 0; i < 20; i++) {
        struct it_take t = it_take_one(base, qd, 10000);
        got += t.rc == 0;
    }
    CHECK(got == 20, "the producer could take %d of 20", got);
    coord_queue_close(qd);
    coord_session_free(sc);
    coord_session_free(sd);
    event_base_free(base);
    printf("queue-close-claims: ok (%d takes answered at close)\n", answered);
    return 0;
}

/* ---- defect 6: a queue whose open failed opens later -------------------------- */

static bool suspended(void *arg)
{
    return coord_session_state(arg) == COORD_SUSPENDED;
}

int t_queue_open_retry(void)
{
    struct event_base *base = event_base_new();
    struct it_proxy *p = it_proxy_new(it_zk_port(1));
    struct coord_session *s = it_session_at(base, it_proxy_addr(p), 20000);
    it_proxy_set_down(p, true);
    it_proxy_cut_all(p);
    CHECK(it_run_until_fn(base, suspended, s, 20000), "still connected");
    struct it_rc o = {0};
    struct coord_queue_opts qo = {.shards = 2, .consumer_id = "reopen"};
    struct coord_queue *q = coord_queue_open(s, "/drover/queues/itest/reopen", &qo, it_on_rc, &o);
    CHECK(it_run_until(base, &o.done, 30000), "the open never answered");
    CHECK(o.rc != 0, "the open worked while cut off");
    it_proxy_set_down(p, false);
    CHECK(it_run_until_fn(base, connected, s, 20000), "no reconnection");
    put_n(base, q, 5, 0);
    struct coord_queue_stats st = it_queue_stats(base, q);
    CHECK(st.length == 5, "length %lld", (long long)st.length);
    coord_queue_close(q);
    coord_session_free(s);
    event_base_free(base);
    printf("queue-open-retry: ok\n");
    return 0;
}

/* ---- defect 7: a put is never applied twice ---------------------------------- */

static struct {
    struct coord_queue *q;
    int outstanding, completed, taken;
    int seen[64];
} pc;

static void pc_take(struct coord_queue_item *it, int rc, void *arg);

static void pc_completed(int rc, void *arg)
{
    CHECK(rc == 0, "complete rc %d", rc);
    pc.completed++;
}

static void pc_fill(void)
{
    while (pc.outstanding < 8) {
        pc.outstanding++;
        coord_queue_take(pc.q, -1, pc_take, NULL);
    }
}

static void pc_take(struct coord_queue_item *it, int rc, void *arg)
{
    pc.outstanding--;
    if (!it)
        return;
    int n = -1;
    CHECK(sscanf(it->json, "{\"n\":%d}", &n) == 1 && n >= 0 && n < 64, "item %s", it->json);
    pc.seen[n]++;
    pc.taken++;
    coord_queue_complete(pc.q, it->id, pc_completed, NULL);
    coord_queue_item_free(it);
    pc_fill();
}

static bool pc_twenty(void *arg)
{
    return pc.completed >= 20;
}

int t_put_exactly_once(void)
{
    struct event_base *base = event_base_new();
    struct coord_session *sd = it_session(base, 20000);
    struct it_proxy *p = it_proxy_new(it_zk_port(1));
    struct coord_session *sp = it_session_at(base, it_proxy_addr(p), 20000);
    const char *path = "/drover/queues/itest/once";
    struct coord_queue *qp = it_queue_open(base, sp, path, 4, "producer", NULL, NULL, 20000);
    pc.q = it_queue_open(base, sd, path, 4, "consumer", NULL, NULL, 20000);
    pc_fill();
    /* The put is applied, its answer swallowed; meanwhile every item is completed. */
    it_proxy_set_swallow(p, 14 /* multi */);
    struct coord_queue_put_item items[20];
    char json[20][32];
    for (int i = 0; i < 20; i++) {
        snprintf(json[i], sizeof(json[i]), "{\"n\":%d}", i);
        items[i] = (struct coord_queue_put_item){json[i], 5};
    }
    struct it_rc pr = {0};
    CHECK(coord_queue_put(qp, items, 20, it_on_rc, &pr) == 0, "put");
    CHECK(it_run_until_fn(base, pc_twenty, NULL, 20000), "completed %d", pc.completed);
    CHECK(!pr.done, "the put was answered through the proxy");
    it_proxy_cut_all(p);
    it_proxy_set_swallow(p, 0);
    CHECK(it_run_until(base, &pr.done, 30000), "the put never settled");
    it_run_for(base, 1000);
    struct coord_queue_stats st = it_queue_stats(base, pc.q);
    CHECK(pc.taken == 20 && st.length == 0,
          "the put was applied again: %d items delivered, %lld waiting", pc.taken,
          (long long)st.length);
    CHECK(pr.rc == 0, "put rc %d", pr.rc);
    for (int i = 0; i < 20; i++)
        CHECK(pc.seen[i] == 1, "item %d delivered %d times", i, pc.seen[i]);
    coord_queue_close(qp);
    coord_queue_close(pc.q);
    coord_session_free(sp);
    coord_session_free(sd);
    event_base_free(base);
    printf("put-exactly-once: ok\n");
    return 0;
}
