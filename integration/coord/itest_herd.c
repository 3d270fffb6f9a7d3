/*
 * itest_herd: delivery without a herd (issue 37; src/coord/queue_home.c).
 *
 *   queue-herd   24 idle consumers, each on its own session, one item put: with their view
 *                (coord_queue_set_peers) the listings it costs are its shard's homes' and a
 *                fallback's, at most half of those of the same consumers without a view
 *                (every idle one lists: the herd), and exactly one consumer gets it; then
 *                300 items to the 24: each delivered exactly once
 *   queue-homes-move  a consumer holding an item dies (its session closed): its claim dies
 *                with it, the other's view loses it, its shards move to the other, which
 *                lists them and takes the item (no starvation); a consumer that joins gets
 *                homes and the one already there keeps or loses only those
 *   queue-steal  the home of a shard holds its only take (busy); an item put there is taken by
 *                the idle fallback STEAL_MS later, not left for the busy home
 */
#include <string.h>
#include <unistd.h>

#include "itest.h"
#include "xalloc.h"

struct h_rc {
    bool done;
    int rc;
};

static void h_on_rc(int rc, void *arg)
{
    struct h_rc *o = arg;
    o->rc = rc;
    o->done = true;
}

static struct coord_queue *h_open(struct event_base *base, struct coord_session *s,
                                  const char *path, unsigned shards, const char *consumer)
{
    struct h_rc o = {0};
    struct coord_queue_opts qo = {.shards = shards, .consumer_id = consumer};
    struct coord_queue *q = coord_queue_open(s, path, &qo, h_on_rc, &o);
    CHECK(it_run_until(base, &o.done, 30000) && o.rc == 0, "open %s rc %d", path, o.rc);
    return q;
}

/* A consumer that takes, and completes what it gets when auto_complete. */
struct cons {
    struct coord_queue *q;
    int got;
    bool pending;
    bool auto_complete;
    char last[512];
    int *seen; /* per item index (JSON {"i":N}), deliveries */
};

static void c_take(struct cons *c);

static void c_on_take(struct coord_queue_item *it, int rc, void *arg)
{
    struct cons *c = arg;
    c->pending = false;
    if (rc != 0 || !it) {
        coord_queue_item_free(it);
        return;
    }
    c->got++;
    snprintf(c->last, sizeof(c->last), "%s", it->id);
    const char *p = strstr(it->json, "\"i\":");
    if (p && c->seen)
        c->seen[atoi(p + 4)]++;
    if (c->auto_complete) {
        coord_queue_complete(c->q, it->id, NULL, NULL);
        c_take(c);
    }
    coord_queue_item_free(it);
}

static void c_take(struct cons *c)
{
    c->pending = true;
    coord_queue_take(c->q, 60000, c_on_take, c);
}

/* A key whose item goes to shard k of S. */
static void key_for(unsigned k, unsigned S, char *buf, size_t n)
{
    for (int i = 0;; i++) {
        snprintf(buf, n, "key%d", i);
        if (coord_hash64(buf, strlen(buf)) % S == k)
            return;
    }
}

static void on_committed(const struct coord_txn_result *r, void *arg)
{
    struct h_rc *o = arg;
    o->rc = r->rc;
    o->done = true;
}

static void put_keyed(struct event_base *base, struct coord_session *s, struct coord_queue *q,
                      const char *key, const char *json)
{
    struct coord_txn *t = coord_txn_new();
    CHECK(coord_txn_queue_put(t, q, key, json, 5) == 0, "put %s", key);
    struct h_rc o = {0};
    coord_txn_commit(s, t, NULL, on_committed, &o);
    CHECK(it_run_until(base, &o.done, 30000) && o.rc == 0, "put %s rc %d", key, o.rc);
}

static uint64_t listings(struct coord_session **ss, int n)
{
    uint64_t c = 0;
    for (int i = 0; i < n; i++)
        c += coord_session_requests(ss[i], COORD_REQ_CHILDREN);
    return c;
}

static int delivered(struct cons *cs, int n)
{
    int d = 0;
    for (int i = 0; i < n; i++)
        d += cs[i].got;
    return d;
}

#define NC 24

/* One item put to idle consumers: the listings it costs, with or without their view. */
static uint64_t one_put(struct event_base *base, struct coord_session **ss,
                        struct coord_session *prod, const char *qp, bool view, int *takers)
{
    static char ids[NC][16];
    const char *idp[NC];
    for (int i = 0; i < NC; i++) {
        snprintf(ids[i], sizeof(ids[i]), "c%02d", i);
        idp[i] = ids[i];
    }
    struct cons cs[NC];
    memset(cs, 0, sizeof(cs));
    for (int i = 0; i < NC; i++) {
        cs[i].q = h_open(base, ss[i], qp, 16, ids[i]);
        if (view)
            coord_queue_set_peers(cs[i].q, idp, NC);
        c_take(&cs[i]);
    }
    struct coord_queue *pq = h_open(base, prod, qp, 16, "producer");
    it_run_for(base, 1500); /* every consumer's round ends idle */
    uint64_t l0 = listings(ss, NC);
    struct coord_queue_put_item it = {"{\"i\":0}", 5};
    struct h_rc o = {0};
    coord_queue_put(pq, &it, 1, h_on_rc, &o);
    CHECK(it_run_until(base, &o.done, 30000) && o.rc == 0, "put rc %d", o.rc);
    long t0 = it_now_ms();
    while (delivered(cs, NC) < 1 && it_now_ms() - t0 < 30000)
        it_run_for(base, 20);
    it_run_for(base, 600); /* a fallback's look (STEAL_MS) and whatever follows */
    uint64_t l = listings(ss, NC) - l0;
    *takers = delivered(cs, NC);
    for (int i = 0; i < NC; i++)
        coord_queue_close(cs[i].q);
    coord_queue_close(pq);
    it_run_for(base, 100);
    return l;
}

int t_queue_herd(void)
{
    struct event_base *base = event_base_new();
    struct coord_session *ss[NC];
    for (int i = 0; i < NC; i++)
        ss[i] = it_session(base, 20000);
    struct coord_session *prod = it_session(base, 20000);

    int with_takers = 0, without_takers = 0;
    uint64_t with = one_put(base, ss, prod, "/drover/queues/itest/herd-view", true, &with_takers);
    uint64_t without =
        one_put(base, ss, prod, "/drover/queues/itest/herd-none", false, &without_takers);
    printf("queue-herd: one put to %d idle consumers: %llu listings with their view, %llu "
           "without\n",
           NC, (unsigned long long)with, (unsigned long long)without);
    CHECK(with_takers == 1 && without_takers == 1, "takers %d and %d", with_takers, without_takers);
    CHECK(without >= NC, "without a view every idle consumer lists: %llu",
          (unsigned long long)without);
    CHECK(with * 2 <= without, "with the view %llu listings, without %llu: still a herd",
          (unsigned long long)with, (unsigned long long)without);

    /* Exactly once: 300 items to the 24, each completing and taking again. */
    const char *qp = "/drover/queues/itest/herd-once";
    static char ids[NC][16];
    const char *idp[NC];
    for (int i = 0; i < NC; i++) {
        snprintf(ids[i], sizeof(ids[i]), "c%02d", i);
        idp[i] = ids[i];
    }
    int seen[300] = {0};
    struct cons cs[NC];
    memset(cs, 0, sizeof(cs));
    for (int i = 0; i < NC; i++) {
        cs[i].q = h_open(base, ss[i], qp, 16, ids[i]);
        coord_queue_set_peers(cs[i].q, idp, NC);
        cs[i].auto_complete = true;
        cs[i].seen = seen;
        c_take(&cs[i]);
    }
    struct coord_queue *pq = h_open(base, prod, qp, 16, "producer");
    it_run_for(base, 1000);
    for (int b = 0; b < 3; b++) {
        struct coord_queue_put_item items[100];
        char js[100][32];
        for (int i = 0; i < 100; i++) {
            snprintf(js[i], sizeof(js[i]), "{\"i\":%d}", b * 100 + i);
            items[i].json = js[i];
            items[i].priority = 5;
        }
        struct h_rc o = {0};
        coord_queue_put(pq, items, 100, h_on_rc, &o);
        CHECK(it_run_until(base, &o.done, 30000) && o.rc == 0, "put rc %d", o.rc);
    }
    long t0 = it_now_ms();
    while (delivered(cs, NC) < 300 && it_now_ms() - t0 < 60000)
        it_run_for(base, 50);
    it_run_for(base, 500);
    int d = delivered(cs, NC);
    CHECK(d == 300, "%d deliveries of 300 items", d);
    for (int i = 0; i < 300; i++)
        CHECK(seen[i] == 1, "item %d delivered %d times", i, seen[i]);
    int busy = 0;
    for (int i = 0; i < NC; i++)
        busy += cs[i].got > 0;
    printf("queue-herd: 300 items, each delivered once, to %d of %d consumers\n", busy, NC);
    for (int i = 0; i < NC; i++)
        coord_queue_close(cs[i].q);
    coord_queue_close(pq);
    it_run_for(base, 200);
    coord_session_free(prod);
    for (int i = 0; i < NC; i++)
        coord_session_free(ss[i]);
    event_base_free(base);
    printf("queue-herd: ok\n");
    return 0;
}

int t_queue_homes_move(void)
{
    struct event_base *base = event_base_new();
    struct coord_session *sa = it_session(base, 4000), *sb = it_session(base, 20000),
                         *sc = it_session(base, 20000), *prod = it_session(base, 20000);
    const char *qp = "/drover/queues/itest/homes";
    const unsigned S = 8;
    const char *ab[] = {"a", "b"}, *abc[] = {"a", "b", "c"}, *bc[] = {"b", "c"};
    struct cons a = {0}, b = {0}, c = {0};
    a.q = h_open(base, sa, qp, S, "a");
    b.q = h_open(base, sb, qp, S, "b");
    struct coord_queue *pq = h_open(base, prod, qp, S, "producer");
    coord_queue_set_peers(a.q, ab, 2);
    coord_queue_set_peers(b.q, ab, 2);
    unsigned ka = S, homes_b = 0;
    for (unsigned k = 0; k < S; k++) {
        CHECK(coord_queue_is_home(a.q, k) || coord_queue_is_home(b.q, k), "shard %u has no home",
              k);
        if (coord_queue_is_home(a.q, k) && !coord_queue_is_home(b.q, k) && ka == S)
            ka = k;
        homes_b += coord_queue_is_home(b.q, k);
    }
    CHECK(ka < S, "a is home of no shard of its own");

    /* A joins: c. b keeps its homes but for the ones c takes over: none is gained. */
    c.q = h_open(base, sc, qp, S, "c");
    coord_queue_set_peers(a.q, abc, 3);
    coord_queue_set_peers(b.q, abc, 3);
    coord_queue_set_peers(c.q, abc, 3);
    unsigned homes_c = 0, b_gained = 0;
    for (unsigned k = 0; k < S; k++) {
        homes_c += coord_queue_is_home(c.q, k);
        CHECK(coord_queue_is_home(a.q, k) || coord_queue_is_home(b.q, k) ||
                  coord_queue_is_home(c.q, k),
              "shard %u has no home after the join", k);
    }
    (void)b_gained;
    CHECK(homes_c > 0, "the newcomer got no home");
    printf("queue-homes-move: b had %u homes of %u, c joined with %u\n", homes_b, S, homes_c);
    coord_queue_set_peers(a.q, ab, 2);
    coord_queue_set_peers(b.q, ab, 2);
    coord_queue_close(c.q);
    coord_session_free(sc);

    /* a takes an item of its own home shard and dies holding it. */
    char key[32];
    key_for(ka, S, key, sizeof(key));
    put_keyed(base, prod, pq, key, "{\"i\":1}");
    c_take(&a);
    long t0 = it_now_ms();
    while (!a.got && it_now_ms() - t0 < 30000)
        it_run_for(base, 20);
    CHECK(a.got == 1, "a did not take the item of its home shard");
    c_take(&b);
    it_run_for(base, 1000);
    CHECK(b.got == 0, "b took %s while a held it", b.last);
    coord_queue_close(a.q);
    it_expire(sa); /* a's session ends: its claim dies with it */
    /* b's view loses a: a's shards are b's now; it lists them and takes the item. */
    const char *bonly[] = {"b"};
    coord_queue_set_peers(b.q, bonly, 1);
    for (unsigned k = 0; k < S; k++)
        CHECK(coord_queue_is_home(b.q, k), "shard %u did not move to b", k);
    t0 = it_now_ms();
    while (!b.got && it_now_ms() - t0 < 30000)
        it_run_for(base, 20);
    CHECK(b.got == 1, "the item of the dead consumer's shard was never taken");
    printf("queue-homes-move: the dead consumer's item taken by b after %ld ms\n",
           it_now_ms() - t0);
    (void)bc;
    coord_queue_close(b.q);
    coord_queue_close(pq);
    it_run_for(base, 200);
    coord_session_free(prod);
    coord_session_free(sb);
    coord_session_free(sa);
    event_base_free(base);
    printf("queue-homes-move: ok\n");
    return 0;
}

int t_queue_steal(void)
{
    struct event_base *base = event_base_new();
    struct coord_session *sa = it_session(base, 20000), *sb = it_session(base, 20000),
                         *prod = it_session(base, 20000);
    const char *qp = "/drover/queues/itest/steal";
    const unsigned S = 8;
    const char *ab[] = {"a", "b"};
    struct cons a = {0}, b = {0};
    a.q = h_open(base, sa, qp, S, "a");
    b.q = h_open(base, sb, qp, S, "b");
    struct coord_queue *pq = h_open(base, prod, qp, S, "producer");
    coord_queue_set_peers(a.q, ab, 2);
    coord_queue_set_peers(b.q, ab, 2);
    unsigned ka = S;
    for (unsigned k = 0; k < S && ka == S; k++)
        if (coord_queue_is_home(a.q, k) && !coord_queue_is_home(b.q, k))
            ka = k;
    CHECK(ka < S, "a is home of no shard of its own");
    char key[32];
    /* a takes one item and holds it: its only take is spent (busy). */
    key_for(ka, S, key, sizeof(key));
    put_keyed(base, prod, pq, key, "{\"i\":1}");
    c_take(&a);
    long t0 = it_now_ms();
    while (!a.got && it_now_ms() - t0 < 30000)
        it_run_for(base, 20);
    CHECK(a.got == 1, "a did not take the first item");
    /* b waits idle; a second item goes to a's home shard. */
    c_take(&b);
    it_run_for(base, 1000);
    struct coord_queue_counters c0;
    coord_queue_counters(b.q, &c0);
    char key2[32];
    for (int i = 100;; i++) {
        snprintf(key2, sizeof(key2), "key%d", i);
        if (coord_hash64(key2, strlen(key2)) % S == ka)
            break;
    }
    put_keyed(base, prod, pq, key2, "{\"i\":2}");
    t0 = it_now_ms();
    while (!b.got && it_now_ms() - t0 < 30000)
        it_run_for(base, 20);
    CHECK(b.got == 1, "the busy home's item was not stolen");
    struct coord_queue_counters c1;
    coord_queue_counters(b.q, &c1);
    CHECK(c1.steals > c0.steals, "b took it without a steal (steals %llu)",
          (unsigned long long)c1.steals);
    printf("queue-steal: the busy home's item taken by the fallback after %ld ms\n",
           it_now_ms() - t0);
    coord_queue_close(a.q);
    coord_queue_close(b.q);
    coord_queue_close(pq);
    it_run_for(base, 200);
    coord_session_free(prod);
    coord_session_free(sb);
    coord_session_free(sa);
    event_base_free(base);
    printf("queue-steal: ok\n");
    return 0;
}
