/*
 * itest_queue: integration tests of the queue recipes the engine needs.
 *
 *   queue-keyed   keyed puts in a fenced transaction (created paths, item ids, a
 *                 second put of a live key fails, a stale owner's put fails), find,
 *                 holder, cancel
 *   queue-txn     transactions on a held claim, complete with a transaction in one
 *                 multi-op, failures of the caller's ops, not the holder, and lost
 *                 answers resolved (applied once)
 *   queue-gather  transactions on claims started in one turn go out as one multi-op;
 *                 each hears its own answer: created paths, one failing op fails only
 *                 its own (the others are sent again alone), lost answers resolved
 *   queue-pipelined  the items' reads go out behind the claim multi-op before its
 *                 answer (one round trip for both: replies held at a proxy until
 *                 both reached the server); a read behind a claim that loses is
 *                 discarded (the item of another consumer is never delivered)
 *   claim-lost    on_lost: silent partition (before another consumer gets the item),
 *                 claim deleted by hand, session expired (before EXPIRED), connection
 *                 lost past the threshold with the session surviving (the claim is
 *                 deleted by coord and the item goes to another consumer); a watched
 *                 claim completed as its queue closes
 *   queue-skip    a consumer's skip filter passes keyed items over (left to other
 *                 consumers, not claimed), coord_queue_rescan lets an idle consumer
 *                 take what its filter now allows; a consumer idle behind a claimed
 *                 item takes it once it is released
 */
#include <string.h>
#include <unistd.h>

#include "itest.h"
#include "xalloc.h"

static void write_node(struct event_base *base, struct coord_session *s, const char *p,
                       const char *json)
{
    struct it_rc e = {0};
    coord_ensure_path(s, p, it_on_rc, &e);
    CHECK(it_wait_rc(base, &e, 30000) == 0, "ensure %s", p);
    struct it_txn o = {0};
    struct coord_txn *t = coord_txn_new();
    coord_txn_set(t, p, json, -1);
    coord_txn_commit(s, t, NULL, it_on_txn, &o);
    CHECK(it_wait_txn(base, &o, 30000).rc == 0, "write %s rc %d", p, o.rc);
}

struct lk {
    enum coord_lock_event last;
};

static void on_lock(struct coord_lock *l, enum coord_lock_event ev, void *arg)
{
    ((struct lk *)arg)->last = ev;
}

static bool lk_event(void *arg)
{
    return ((struct lk *)arg)->last != 0;
}

struct found {
    bool done;
    int rc;
    char id[512];
    char claim[256];
    bool claimed;
    int64_t ahead;
};

static void on_found(int rc, const struct coord_queue_found *f, void *arg)
{
    struct found *o = arg;
    o->rc = rc;
    if (f) {
        snprintf(o->id, sizeof(o->id), "%s", f->id);
        o->claimed = f->claim_json != NULL;
        snprintf(o->claim, sizeof(o->claim), "%s", f->claim_json ? f->claim_json : "");
        o->ahead = f->ahead;
    }
    o->done = true;
}

static struct found find(struct event_base *base, struct coord_queue *q, const char *key)
{
    struct found o = {0};
    coord_queue_find(q, key, on_found, &o);
    CHECK(it_run_until(base, &o.done, 20000), "find %s", key);
    return o;
}

static void on_holder(int rc, const char *claim_json, void *arg)
{
    struct found *o = arg;
    o->rc = rc;
    o->claimed = claim_json != NULL;
    snprintf(o->claim, sizeof(o->claim), "%s", claim_json ? claim_json : "");
    o->done = true;
}

/* ---- queue-keyed ---------------------------------------------------------------------- */

int t_queue_keyed(void)
{
    struct event_base *base = event_base_new();
    struct coord_session *s = it_session(base, 20000), *d = it_session(base, 20000);
    const char *qp = "/drover/queues/itest/keyed";
    struct coord_queue *q = it_queue_open(base, s, qp, 4, "owner", NULL, NULL, 30000);
    struct lk k = {0};
    struct coord_lock *l = coord_lock_new(s, "/drover/locks/itest-keyed", "{}", on_lock, &k);
    coord_lock_acquire(l, -1);
    CHECK(it_run_until_fn(base, lk_event, &k, 20000) && k.last == COORD_LOCK_ACQUIRED, "lock");
    write_node(base, d, "/drover/itest/job", "{\"dispatched\":0}");

    /* "Tasks 0 and 1 dispatched" and the two puts: one fenced multi-op. */
    struct coord_txn *t = coord_txn_new();
    coord_txn_set(t, "/drover/itest/job", "{\"dispatched\":2}", 1);
    CHECK(coord_txn_queue_put(t, q, "j1.0.1", "{\"task\":0}", 5) == 0, "put 0");
    CHECK(coord_txn_queue_put(t, q, "j1.1.1", "{\"task\":1}", 7) == 0, "put 1");
    /* The caller's figures before building are coord's own (the engine sizes rounds by them). */
    size_t want = coord_txn_set_bytes("/drover/itest/job", "{\"dispatched\":2}") +
                  coord_txn_queue_put_bytes(q, "j1.0.1", "{\"task\":0}") +
                  coord_txn_queue_put_bytes(q, "j1.1.1", "{\"task\":1}");
    CHECK(coord_txn_bytes(t) == want, "bytes %zu, predicted %zu", coord_txn_bytes(t), want);
    struct it_txn o = {0};
    coord_txn_commit(s, t, l, it_on_txn, &o);
    CHECK(it_wait_txn(base, &o, 30000).rc == 0, "commit rc %d op %d", o.rc, o.failed_op);
    char id0[256], id1[256];
    CHECK(coord_queue_item_id(q, o.created[1], id0, sizeof(id0)) == 0, "id of %s", o.created[1]);
    CHECK(coord_queue_item_id(q, o.created[2], id1, sizeof(id1)) == 0, "id of %s", o.created[2]);
    CHECK(coord_queue_item_id(q, "/drover/itest/job", id1 + 200, 40) == DRV_EINVAL, "not an item");
    char shard[8];
    snprintf(shard, sizeof(shard), "s%02u/", (unsigned)(coord_hash64("j1.0.1", 6) % 4));
    CHECK(strncmp(id0, shard, 4) == 0, "%s is not in the key's shard %s", id0, shard);

    /* Idempotent: a second put of a live key fails, and nothing of its txn applies. */
    t = coord_txn_new();
    coord_txn_set(t, "/drover/itest/job", "{\"dispatched\":3}", 2);
    coord_txn_queue_put(t, q, "j1.0.1", "{\"task\":0}", 5);
    memset(&o, 0, sizeof(o));
    coord_txn_commit(s, t, l, it_on_txn, &o);
    it_wait_txn(base, &o, 30000);
    CHECK(o.rc == DRV_ECONFLICT && o.failed_op == 1 && o.zrc == -110, "re-put rc %d op %d zrc %d",
          o.rc, o.failed_op, o.zrc);
    struct it_got job = it_get(base, d, "/drover/itest/job");
    CHECK(job.version == 2 && strcmp(job.data, "{\"dispatched\":2}") == 0, "job %s v%d", job.data,
          job.version);

    /* Bad input, and a queue not open yet. */
    t = coord_txn_new();
    CHECK(coord_txn_queue_put(t, q, "bad/key", "{}", 1) == DRV_EINVAL, "bad key");
    CHECK(coord_txn_queue_put(t, q, "", "{}", 1) == DRV_EINVAL, "empty key");
    CHECK(coord_txn_queue_put(t, q, "k", "{}", 10) == DRV_EINVAL, "priority 10");
    CHECK(coord_txn_queue_put(t, q, "k", "{\"x\":", 1) == DRV_EINVAL, "bad json");
    CHECK(coord_txn_queue_put(t, q, "k", "\"\\u0000\"", 1) == DRV_EINVAL, "json jansson refuses");
    struct coord_queue_put_item bad_item = {"[1,]", 1};
    CHECK(coord_queue_put(q, &bad_item, 1, NULL, NULL) == DRV_EINVAL, "put of bad json");
    struct coord_queue *q2 = coord_queue_open(s, "/drover/queues/itest/keyed2", NULL, NULL, NULL);
    CHECK(coord_txn_queue_put(t, q2, "k", "{}", 1) == DRV_EAGAIN, "not open");
    coord_txn_free(t);

    /* find: the item, unclaimed, and what comes before it. */
    struct found f0 = find(base, q, "j1.0.1"), f1 = find(base, q, "j1.1.1");
    CHECK(f0.rc == 0 && strcmp(f0.id, id0) == 0 && !f0.claimed, "find 0: rc %d id %s", f0.rc,
          f0.id);
    CHECK(f1.rc == 0 && strcmp(f1.id, id1) == 0 && f1.ahead == 0, "find 1: ahead %lld",
          (long long)f1.ahead);
    CHECK(f0.ahead == 1, "find 0: ahead %lld, want 1 (the higher priority one)",
          (long long)f0.ahead);
    CHECK(find(base, q, "j9.9.9").rc == DRV_ENOENT, "a key never put");

    /* A consumer takes one: holder and find say who. */
    struct coord_queue *qc = it_queue_open(base, d, qp, 4, "worker-7", NULL, NULL, 30000);
    struct it_take tk = it_take_one(base, qc, 10000);
    CHECK(tk.rc == 0, "take rc %d", tk.rc);
    struct found h = {0};
    coord_queue_holder(q, tk.id, on_holder, &h);
    CHECK(it_run_until(base, &h.done, 20000) && h.rc == 0 && strstr(h.claim, "worker-7"),
          "holder rc %d %s", h.rc, h.claim);
    const char *taken_key = strcmp(tk.id, id0) == 0 ? "j1.0.1" : "j1.1.1";
    const char *other = strcmp(tk.id, id0) == 0 ? id1 : id0;
    struct found ft = find(base, q, taken_key);
    CHECK(ft.rc == 0 && ft.claimed && strstr(ft.claim, "worker-7"), "find of the taken one");
    struct found ho = {0};
    coord_queue_holder(q, other, on_holder, &ho);
    CHECK(it_run_until(base, &ho.done, 20000) && ho.rc == 0 && !ho.claimed, "unclaimed holder");

    /* cancel: not a claimed one; an unclaimed one (its key may be put again); a gone one. */
    struct it_rc c1 = {0}, c2 = {0}, c3 = {0};
    coord_queue_cancel(q, tk.id, it_on_rc, &c1);
    CHECK(it_wait_rc(base, &c1, 30000) == DRV_ECONFLICT, "cancel of a claimed item rc %d", c1.rc);
    coord_queue_cancel(q, other, it_on_rc, &c2);
    CHECK(it_wait_rc(base, &c2, 30000) == 0, "cancel rc %d", c2.rc);
    coord_queue_cancel(q, other, it_on_rc, &c3);
    CHECK(it_wait_rc(base, &c3, 30000) == DRV_ENOENT, "cancel of a gone item rc %d", c3.rc);
    struct found fg = {0};
    coord_queue_holder(q, other, on_holder, &fg);
    CHECK(it_run_until(base, &fg.done, 20000) && fg.rc == DRV_ENOENT, "holder of a gone item");

    /* Complete deletes the key record too: both keys may be put again now. */
    struct it_rc cd = {0};
    coord_queue_complete(qc, tk.id, it_on_rc, &cd);
    CHECK(it_wait_rc(base, &cd, 30000) == 0, "complete rc %d", cd.rc);
    t = coord_txn_new();
    coord_txn_queue_put(t, q, "j1.0.1", "{\"task\":0,\"again\":true}", 5);
    coord_txn_queue_put(t, q, "j1.1.1", "{\"task\":1,\"again\":true}", 7);
    memset(&o, 0, sizeof(o));
    coord_txn_commit(s, t, l, it_on_txn, &o);
    CHECK(it_wait_txn(base, &o, 30000).rc == 0, "put again rc %d op %d", o.rc, o.failed_op);
    struct coord_queue_stats st = it_queue_stats(base, q);
    CHECK(st.length == 2 && st.claimed == 0, "length %lld", (long long)st.length);

    /* A stale owner: its lock is lost (session expired), its fenced put fails. */
    struct coord_session *s3 = it_session(base, 4000);
    struct coord_queue *q3 = it_queue_open(base, s3, qp, 4, "stale", NULL, NULL, 30000);
    struct lk k3 = {0};
    struct coord_lock *l3 = coord_lock_new(s3, "/drover/locks/itest-keyed3", "{}", on_lock, &k3);
    coord_lock_acquire(l3, -1);
    CHECK(it_run_until_fn(base, lk_event, &k3, 20000) && k3.last == COORD_LOCK_ACQUIRED, "l3");
    char *node = xstrdup(coord_lock_node(l3));
    it_expire(s3);
    it_wait_gone(node);
    free(node);
    t = coord_txn_new();
    CHECK(coord_txn_queue_put(t, q3, "j2.0.1", "{}", 5) == 0, "stale put");
    memset(&o, 0, sizeof(o));
    coord_txn_commit(s3, t, l3, it_on_txn, &o);
    it_wait_txn(base, &o, 30000);
    CHECK(o.rc != 0, "a stale owner's put applied");
    CHECK(find(base, q, "j2.0.1").rc == DRV_ENOENT, "the stale put is in the queue");

    coord_lock_free(l);
    coord_lock_free(l3);
    coord_queue_close(q);
    coord_queue_close(q2);
    coord_queue_close(q3);
    coord_queue_close(qc);
    coord_session_free(s3);
    coord_session_free(s);
    coord_session_free(d);
    event_base_free(base);
    printf("queue-keyed: ok\n");
    return 0;
}

/* ---- queue-txn ---------------------------------------------------------------------------- */

int t_queue_txn(void)
{
    struct event_base *base = event_base_new();
    struct it_proxy *p = it_proxy_new(it_zk_port(1));
    struct coord_session *s = it_session_at(base, it_proxy_addr(p), 20000);
    struct coord_session *d = it_session(base, 20000);
    const char *qp = "/drover/queues/itest/qtxn";
    struct coord_queue *q = it_queue_open(base, s, qp, 1, "c", NULL, NULL, 30000);
    struct coord_queue *qd = it_queue_open(base, d, qp, 1, "producer", NULL, NULL, 30000);
    write_node(base, d, "/drover/itest/rec", "{\"v\":0}"); /* version 1 */
    struct coord_queue_put_item items[3] = {{"{\"n\":0}", 5}, {"{\"n\":1}", 5}, {"{\"n\":2}", 5}};
    struct it_rc pr = {0};
    coord_queue_put(qd, items, 3, it_on_rc, &pr);
    CHECK(it_wait_rc(base, &pr, 30000) == 0, "put");
    struct it_take x = it_take_one(base, q, 10000);
    CHECK(x.rc == 0, "take");

    /* A transaction only while holding the claim. */
    struct coord_txn *t = coord_txn_new();
    coord_txn_set(t, "/drover/itest/rec", "{\"v\":1}", 1);
    struct it_txn o = {0};
    coord_queue_txn_commit(q, x.id, t, it_on_txn, &o);
    CHECK(it_wait_txn(base, &o, 30000).rc == 0, "txn on a held claim rc %d", o.rc);

    /* Complete with a transaction whose op fails: nothing applied, still held. */
    t = coord_txn_new();
    coord_txn_set(t, "/drover/itest/rec", "{\"v\":2}", 1);
    memset(&o, 0, sizeof(o));
    coord_queue_complete_txn(q, x.id, t, it_on_txn, &o);
    it_wait_txn(base, &o, 30000);
    CHECK(o.rc == DRV_ECONFLICT && o.failed_op == 0, "rc %d failed_op %d", o.rc, o.failed_op);
    struct coord_queue_stats st = it_queue_stats(base, qd);
    CHECK(st.length == 3 && st.claimed == 1, "length %lld claimed %lld", (long long)st.length,
          (long long)st.claimed);
    /* The counters, from the child versions: 3 put, 1 claimed, none removed. */
    CHECK(st.puts == 3 && st.takes >= 1 && st.completes == 0, "puts %lld takes %lld completes %lld",
          (long long)st.puts, (long long)st.takes, (long long)st.completes);

    /* Complete with the right version: claim, item and the caller's ops in one multi-op. */
    t = coord_txn_new();
    coord_txn_set(t, "/drover/itest/rec", "{\"v\":2}", 2);
    coord_txn_create(t, "/drover/itest/result-x", "{\"ok\":true}", 0);
    memset(&o, 0, sizeof(o));
    coord_queue_complete_txn(q, x.id, t, it_on_txn, &o);
    CHECK(it_wait_txn(base, &o, 30000).rc == 0, "complete_txn rc %d op %d", o.rc, o.failed_op);
    CHECK(strcmp(o.created[1], "/drover/itest/result-x") == 0, "created %s", o.created[1]);
    st = it_queue_stats(base, qd);
    CHECK(st.length == 2 && st.claimed == 0, "length %lld", (long long)st.length);

    /* Not the holder (any more): nothing applied, failed_op -1. */
    t = coord_txn_new();
    coord_txn_set(t, "/drover/itest/rec", "{\"v\":99}", -1);
    memset(&o, 0, sizeof(o));
    coord_queue_complete_txn(q, x.id, t, it_on_txn, &o);
    it_wait_txn(base, &o, 30000);
    CHECK(o.rc == DRV_ECONFLICT && o.failed_op == -1, "not held: rc %d op %d", o.rc, o.failed_op);
    t = coord_txn_new();
    coord_txn_set(t, "/drover/itest/rec", "{\"v\":99}", -1);
    memset(&o, 0, sizeof(o));
    coord_queue_txn_commit(q, x.id, t, it_on_txn, &o);
    it_wait_txn(base, &o, 30000);
    CHECK(o.rc == DRV_ECONFLICT && o.failed_op == -1, "not held: rc %d op %d", o.rc, o.failed_op);

    /* Answers lost (the proxy swallows them, then cuts): resolved, applied exactly once. */
    struct it_take y = it_take_one(base, q, 10000), z = it_take_one(base, q, 10000);
    CHECK(y.rc == 0 && z.rc == 0, "takes");
    it_proxy_set_swallow(p, 14 /* multi */);
    t = coord_txn_new();
    coord_txn_set(t, "/drover/itest/rec", "{\"v\":3}", 3);
    memset(&o, 0, sizeof(o));
    coord_queue_complete_txn(q, y.id, t, it_on_txn, &o);
    struct it_rc zc = {0};
    coord_queue_complete(q, z.id, it_on_rc, &zc);
    it_run_for(base, 500);
    CHECK(!o.done && !zc.done, "answered through the proxy: %d/%d %d/%d", o.done, o.rc, zc.done,
          zc.rc);
    it_proxy_cut_all(p);
    it_proxy_set_swallow(p, 0);
    CHECK(it_wait_txn(base, &o, 30000).rc == 0, "lost complete_txn rc %d op %d", o.rc, o.failed_op);
    CHECK(it_wait_rc(base, &zc, 30000) == 0, "lost complete rc %d", zc.rc);
    struct it_got rec = it_get(base, d, "/drover/itest/rec");
    CHECK(rec.version == 4 && strcmp(rec.data, "{\"v\":3}") == 0, "rec %s v%d", rec.data,
          rec.version);
    st = it_queue_stats(base, qd);
    CHECK(st.length == 0 && st.claimed == 0, "length %lld", (long long)st.length);
    coord_queue_close(q);
    coord_queue_close(qd);
    coord_session_free(s);
    coord_session_free(d);
    event_base_free(base);
    printf("queue-txn: ok\n");
    return 0;
}

/* ---- queue-gather ------------------------------------------------------------------------- */

int t_queue_gather(void)
{
    struct event_base *base = event_base_new();
    struct it_proxy *p = it_proxy_new(it_zk_port(1));
    struct coord_session *s = it_session_at(base, it_proxy_addr(p), 20000);
    struct coord_session *d = it_session(base, 20000);
    const char *qp = "/drover/queues/itest/qgather";
    struct coord_queue *q = it_queue_open(base, s, qp, 1, "c", NULL, NULL, 30000);
    struct coord_queue *qd = it_queue_open(base, d, qp, 1, "producer", NULL, NULL, 30000);
    write_node(base, d, "/drover/itest/grec", "{\"v\":0}"); /* version 1 */
    enum { N = 9 };
    struct coord_queue_put_item items[N];
    for (int i = 0; i < N; i++)
        items[i] = (struct coord_queue_put_item){"{}", 5};
    struct it_rc pr = {0};
    coord_queue_put(qd, items, N, it_on_rc, &pr);
    CHECK(it_wait_rc(base, &pr, 30000) == 0, "put");
    struct it_take x[N];
    for (int i = 0; i < N; i++) {
        x[i] = it_take_one(base, q, 10000);
        CHECK(x[i].rc == 0, "take %d", i);
    }

    /* Three completes and two transactions in one turn: one multi-op, five answers. */
    struct it_txn o[5];
    memset(o, 0, sizeof(o));
    int multis = it_proxy_requests(p, 14);
    for (int i = 0; i < 5; i++) {
        struct coord_txn *t = coord_txn_new();
        char path[64];
        snprintf(path, sizeof(path), "/drover/itest/g-%d", i);
        coord_txn_create(t, path, "{}", 0);
        if (i < 3)
            coord_queue_complete_txn(q, x[i].id, t, it_on_txn, &o[i]);
        else
            coord_queue_txn_commit(q, x[i].id, t, it_on_txn, &o[i]);
    }
    for (int i = 0; i < 5; i++) {
        char path[64];
        snprintf(path, sizeof(path), "/drover/itest/g-%d", i);
        CHECK(it_wait_txn(base, &o[i], 30000).rc == 0, "gathered commit %d rc %d op %d", i, o[i].rc,
              o[i].failed_op);
        CHECK(strcmp(o[i].created[0], path) == 0, "commit %d created %s", i, o[i].created[0]);
    }
    CHECK(it_proxy_requests(p, 14) - multis == 1, "%d multi-ops for five commits of one turn",
          it_proxy_requests(p, 14) - multis);
    struct coord_queue_stats st = it_queue_stats(base, qd);
    CHECK(st.length == N - 3 && st.claimed == N - 3, "length %lld claimed %lld",
          (long long)st.length, (long long)st.claimed);

    /* One op fails: only its commit fails; the others of its turn apply (sent again alone). */
    memset(o, 0, sizeof(o));
    struct coord_txn *t = coord_txn_new();
    coord_txn_set(t, "/drover/itest/grec", "{\"v\":1}", 7); /* wrong version */
    coord_queue_complete_txn(q, x[3].id, t, it_on_txn, &o[0]);
    t = coord_txn_new();
    coord_txn_set(t, "/drover/itest/grec", "{\"v\":1}", 1);
    coord_queue_complete_txn(q, x[4].id, t, it_on_txn, &o[1]);
    t = coord_txn_new();
    coord_txn_create(t, "/drover/itest/g-5", "{}", 0);
    coord_queue_txn_commit(q, x[5].id, t, it_on_txn, &o[2]);
    it_wait_txn(base, &o[0], 30000);
    CHECK(o[0].rc == DRV_ECONFLICT && o[0].failed_op == 0, "the failing one: rc %d op %d", o[0].rc,
          o[0].failed_op);
    CHECK(it_wait_txn(base, &o[1], 30000).rc == 0, "its neighbour rc %d", o[1].rc);
    CHECK(it_wait_txn(base, &o[2], 30000).rc == 0, "its other neighbour rc %d", o[2].rc);
    struct it_got rec = it_get(base, d, "/drover/itest/grec");
    CHECK(rec.version == 2 && strcmp(rec.data, "{\"v\":1}") == 0, "grec %s v%d", rec.data,
          rec.version);
    st = it_queue_stats(base, qd);
    CHECK(st.length == N - 4 && st.claimed == N - 4, "length %lld claimed %lld",
          (long long)st.length, (long long)st.claimed);

    /* The gathered multi-op's answer lost: every complete in it resolved, applied once. */
    memset(o, 0, sizeof(o));
    it_proxy_set_swallow(p, 14 /* multi */);
    for (int i = 0; i < 3; i++) {
        t = coord_txn_new();
        char path[64];
        snprintf(path, sizeof(path), "/drover/itest/gl-%d", i);
        coord_txn_create(t, path, "{}", 0);
        coord_queue_complete_txn(q, x[6 + i].id, t, it_on_txn, &o[i]);
    }
    it_run_for(base, 500);
    CHECK(!o[0].done && !o[1].done && !o[2].done, "answered through the proxy");
    it_proxy_cut_all(p);
    it_proxy_set_swallow(p, 0);
    for (int i = 0; i < 3; i++)
        CHECK(it_wait_txn(base, &o[i], 30000).rc == 0, "lost gathered complete %d rc %d", i,
              o[i].rc);
    for (int i = 0; i < 3; i++) {
        char path[64];
        snprintf(path, sizeof(path), "/drover/itest/gl-%d", i);
        CHECK(it_get(base, d, path).rc == 0, "%s not created", path);
    }
    st = it_queue_stats(base, qd);
    CHECK(st.length == N - 7 && st.claimed == N - 7, "length %lld claimed %lld",
          (long long)st.length, (long long)st.claimed);
    coord_queue_close(q);
    coord_queue_close(qd);
    coord_session_free(s);
    coord_session_free(d);
    event_base_free(base);
    printf("queue-gather: ok\n");
    return 0;
}

/* ---- queue-pipelined ------------------------------------------------------------------------ */

struct ptake {
    bool done;
    int rc;
    char id[512];
    char json[64];
};

static void on_ptake(struct coord_queue_item *it, int rc, void *arg)
{
    struct ptake *o = arg;
    o->rc = rc;
    if (it) {
        snprintf(o->id, sizeof(o->id), "%s", it->id);
        snprintf(o->json, sizeof(o->json), "%s", it->json ? it->json : "");
    }
    coord_queue_item_free(it);
    o->done = true;
}

struct pwait {
    struct it_proxy *p;
    int multis, gets;
};

/* Both the claim multi-op and the reads behind it reached the server. */
static bool sent_both(void *arg)
{
    struct pwait *w = arg;
    return it_proxy_requests(w->p, 14) >= w->multis && it_proxy_requests(w->p, 4) >= w->gets;
}

int t_queue_pipelined(void)
{
    struct event_base *base = event_base_new();
    struct it_proxy *p = it_proxy_new(it_zk_port(1));
    struct coord_session *s = it_session_at(base, it_proxy_addr(p), 20000);
    struct coord_session *d = it_session(base, 20000);
    const char *qp = "/drover/queues/itest/qpipe";
    struct coord_queue *q = it_queue_open(base, s, qp, 1, "c", NULL, NULL, 30000);
    struct coord_queue *qd = it_queue_open(base, d, qp, 1, "other", NULL, NULL, 30000);
    enum { N = 8 };
    char payload[N][32];
    struct coord_queue_put_item items[N];
    for (int i = 0; i < N; i++) {
        snprintf(payload[i], sizeof(payload[i]), "{\"n\":%d}", i);
        items[i] = (struct coord_queue_put_item){payload[i], 5};
    }
    struct it_rc pr = {0};
    coord_queue_put(qd, items, N, it_on_rc, &pr);
    CHECK(it_wait_rc(base, &pr, 30000) == 0, "put");
    /* One take lists the shard: the consumer caches the other names ... */
    struct it_take first = it_take_one(base, q, 10000);
    CHECK(first.rc == 0, "first take rc %d", first.rc);

    /* ... so the next takes claim at once. Replies wait at the proxy: the reads can only
       have been sent before the claim's answer came back, in its round trip. */
    enum { K = 4 };
    struct ptake t[K];
    memset(t, 0, sizeof(t));
    struct pwait w = {p, it_proxy_requests(p, 14) + 1, it_proxy_requests(p, 4) + K};
    int multis0 = it_proxy_requests(p, 14), gets0 = it_proxy_requests(p, 4);
    uint64_t cm0 = coord_session_requests(s, COORD_REQ_MULTI);
    uint64_t cg0 = coord_session_requests(s, COORD_REQ_GET);
    it_proxy_set_hold(p, true);
    for (int i = 0; i < K; i++)
        coord_queue_take(q, -1, on_ptake, &t[i]);
    CHECK(it_run_until_fn(base, sent_both, &w, 20000),
          "with no answer back, %d multi-op(s) and %d read(s) reached the server (want 1 and %d)",
          it_proxy_requests(p, 14) - multis0, it_proxy_requests(p, 4) - gets0, K);
    for (int i = 0; i < K; i++)
        CHECK(!t[i].done, "take %d answered while every reply was held", i);
    /* coord's own count of its requests agrees with what the proxy saw. */
    CHECK(coord_session_requests(s, COORD_REQ_MULTI) - cm0 == 1 &&
              coord_session_requests(s, COORD_REQ_GET) - cg0 == K,
          "coord counted %llu multi-ops and %llu reads",
          (unsigned long long)(coord_session_requests(s, COORD_REQ_MULTI) - cm0),
          (unsigned long long)(coord_session_requests(s, COORD_REQ_GET) - cg0));
    CHECK(strcmp(coord_req_name(COORD_REQ_CHILDREN), "children") == 0 &&
              strcmp(coord_req_name(COORD_REQ_N), "?") == 0,
          "request kind names");
    it_proxy_set_hold(p, false);
    for (int i = 0; i < K; i++) {
        CHECK(it_run_until(base, &t[i].done, 20000) && t[i].rc == 0, "take %d rc %d", i, t[i].rc);
        CHECK(strncmp(t[i].json, "{\"n\":", 5) == 0, "take %d delivered \"%s\"", i, t[i].json);
    }
    CHECK(it_proxy_requests(p, 14) - multis0 == 1 && it_proxy_requests(p, 4) - gets0 == K,
          "%d multi-ops and %d reads for %d takes of one turn (want 1 and %d)",
          it_proxy_requests(p, 14) - multis0, it_proxy_requests(p, 4) - gets0, K, K);

    /* A claim that loses: another consumer took the head of our cache first. Our read of
       that item went out behind the failed claim; it must not be delivered. */
    struct it_take other = it_take_one(base, qd, 10000);
    CHECK(other.rc == 0, "the other consumer's take rc %d", other.rc);
    struct ptake mine = {0};
    coord_queue_take(q, 10000, on_ptake, &mine);
    CHECK(it_run_until(base, &mine.done, 20000) && mine.rc == 0, "take after the race rc %d",
          mine.rc);
    CHECK(strcmp(mine.id, other.id) != 0, "the item the other consumer holds (%s) was delivered",
          other.id);
    for (int i = 0; i < K; i++)
        CHECK(strcmp(t[i].id, other.id) != 0 && strcmp(t[i].id, mine.id) != 0,
              "item %s delivered twice", t[i].id);
    struct coord_queue_stats st = it_queue_stats(base, qd);
    CHECK(st.length == N && st.claimed == K + 3, "length %lld claimed %lld", (long long)st.length,
          (long long)st.claimed);

    coord_queue_close(q);
    coord_queue_close(qd);
    coord_session_free(s);
    coord_session_free(d);
    event_base_free(base);
    printf("queue-pipelined: ok\n");
    return 0;
}

/* ---- claim-lost ------------------------------------------------------------------------------ */

static char trace[1024];

static void tr(const char *what)
{
    strncat(trace, what, sizeof(trace) - strlen(trace) - 1);
}

static void on_lost(struct coord_queue *q, const char *id, void *arg)
{
    tr(arg);
    tr("-lost;");
}

static void on_state_tr(struct coord_session *s, enum coord_state st, void *arg)
{
    if (st == COORD_EXPIRED)
        tr("expired;");
}

static void on_take_tr(struct coord_queue_item *it, int rc, void *arg)
{
    struct it_take *o = arg;
    it_on_take(it, rc, arg);
    if (o->rc == 0)
        tr("b-took;");
}

static bool has(void *want)
{
    return strstr(trace, want) != NULL;
}

static int count(const char *what)
{
    int n = 0;
    for (const char *p = strstr(trace, what); p; p = strstr(p + 1, what))
        n++;
    return n;
}

int t_claim_lost(void)
{
    enum { T = 6000 };
    struct event_base *base = event_base_new();
    struct coord_session *d = it_session(base, 20000);
    struct coord_queue *qd =
        it_queue_open(base, d, "/drover/queues/itest/lost", 1, "producer", NULL, NULL, 30000);
    struct coord_queue_put_item one = {"{\"n\":1}", 5};
    struct it_rc pr = {0};

    /* 1. Silent partition: a is told before b can take the item. */
    struct it_proxy *p = it_proxy_new(it_zk_port(1));
    struct coord_session *sa = it_session_at(base, it_proxy_addr(p), T);
    struct coord_session *sb = it_session(base, T);
    struct coord_queue *qa =
        it_queue_open(base, sa, "/drover/queues/itest/lost", 1, "a", on_lost, "a", 30000);
    struct coord_queue *qb =
        it_queue_open(base, sb, "/drover/queues/itest/lost", 1, "b", NULL, NULL, 30000);
    coord_queue_put(qd, &one, 1, it_on_rc, &pr);
    CHECK(it_wait_rc(base, &pr, 30000) == 0, "put");
    struct it_take ta = it_take_one(base, qa, 10000);
    CHECK(ta.rc == 0, "a take");
    struct it_take tb = {0};
    coord_queue_take(qb, -1, on_take_tr, &tb);
    it_proxy_set_silent(p, true);
    CHECK(it_run_until(base, &tb.done, 4 * T), "b never got it: %s", trace);
    CHECK(strcmp(trace, "a-lost;b-took;") == 0 && strcmp(ta.id, tb.id) == 0, "order: %s", trace);
    struct it_rc late = {0};
    coord_queue_complete(qa, ta.id, it_on_rc, &late);
    CHECK(it_wait_rc(base, &late, 30000) == DRV_ECONFLICT, "a's complete after on_lost rc %d",
          late.rc);
    struct it_rc bc = {0};
    coord_queue_complete(qb, tb.id, it_on_rc, &bc);
    CHECK(it_wait_rc(base, &bc, 30000) == 0, "b's complete rc %d", bc.rc);
    coord_queue_close(qa);
    coord_session_free(sa);

    /* 2. The claim deleted by hand (held for a while: watched). */
    trace[0] = '\0';
    memset(&pr, 0, sizeof(pr));
    coord_queue_put(qd, &one, 1, it_on_rc, &pr);
    CHECK(it_wait_rc(base, &pr, 30000) == 0, "put");
    struct coord_queue *qc =
        it_queue_open(base, d, "/drover/queues/itest/lost", 1, "c", on_lost, "c", 30000);
    struct it_take tc = it_take_one(base, qc, 10000);
    CHECK(tc.rc == 0, "c take");
    it_run_for(base, 1200);
    char claim[600];
    const char *slash = strchr(tc.id, '/');
    snprintf(claim, sizeof(claim), "/drover/queues/itest/lost/claims/%.*s-%s", (int)(slash - tc.id),
             tc.id, slash + 1);
    struct coord_txn *t = coord_txn_new();
    coord_txn_delete(t, claim, -1);
    coord_txn_commit(sb, t, NULL, NULL, NULL);
    CHECK(it_run_until_fn(base, has, "c-lost;", 20000), "no on_lost for a deleted claim: %s",
          trace);
    struct it_rc cc = {0};
    coord_queue_complete(qc, tc.id, it_on_rc, &cc);
    CHECK(it_wait_rc(base, &cc, 30000) == DRV_ECONFLICT, "c's complete rc %d", cc.rc);
    struct it_take again = it_take_one(base, qb, 10000);
    CHECK(again.rc == 0 && strcmp(again.id, tc.id) == 0, "b takes it");
    memset(&bc, 0, sizeof(bc));
    coord_queue_complete(qb, again.id, it_on_rc, &bc);
    CHECK(it_wait_rc(base, &bc, 30000) == 0, "complete");
    coord_queue_close(qc);

    /* 3. Expiry: every held claim is told, before the owner hears EXPIRED. */
    trace[0] = '\0';
    struct coord_queue_put_item three[3] = {{"{\"n\":1}", 5}, {"{\"n\":2}", 5}, {"{\"n\":3}", 5}};
    memset(&pr, 0, sizeof(pr));
    coord_queue_put(qd, three, 3, it_on_rc, &pr);
    CHECK(it_wait_rc(base, &pr, 30000) == 0, "put");
    struct coord_session *se = it_session_nowait(base, it_zk(), 4000, on_state_tr, NULL);
    struct drv_err err;
    CHECK(coord_session_wait_connected(se, 20000, &err) == 0, "%s", err.msg);
    struct coord_queue *qe =
        it_queue_open(base, se, "/drover/queues/itest/lost", 1, "e", on_lost, "e", 30000);
    for (int i = 0; i < 3; i++)
        CHECK(it_take_one(base, qe, 10000).rc == 0, "e take %d", i);
    it_expire(se);
    CHECK(it_run_until_fn(base, has, "expired;", 20000), "no expiry");
    CHECK(strcmp(trace, "e-lost;e-lost;e-lost;expired;") == 0, "trace %s", trace);
    for (int i = 0; i < 3; i++) {
        struct it_take tt = it_take_one(base, qb, 10000);
        CHECK(tt.rc == 0, "b takes e's items");
        memset(&bc, 0, sizeof(bc));
        coord_queue_complete(qb, tt.id, it_on_rc, &bc);
        CHECK(it_wait_rc(base, &bc, 30000) == 0, "complete");
    }
    coord_queue_close(qe);
    coord_session_free(se);

    /* 4. Cut off past the threshold, back before the expiry: told, and the claim deleted. */
    trace[0] = '\0';
    memset(&pr, 0, sizeof(pr));
    coord_queue_put(qd, &one, 1, it_on_rc, &pr);
    CHECK(it_wait_rc(base, &pr, 30000) == 0, "put");
    struct it_proxy *p2 = it_proxy_new(it_zk_port(1));
    struct coord_session *sf = it_session_at(base, it_proxy_addr(p2), T);
    struct coord_queue *qf =
        it_queue_open(base, sf, "/drover/queues/itest/lost", 1, "f", on_lost, "f", 30000);
    struct it_take tf = it_take_one(base, qf, 10000);
    CHECK(tf.rc == 0, "f take");
    it_proxy_set_down(p2, true);
    it_proxy_cut_all(p2);
    CHECK(it_run_until_fn(base, has, "f-lost;", 3 * T), "f not told: %s", trace);
    it_proxy_set_down(p2, false);
    struct it_take tg = it_take_one(base, qb, 3 * T);
    CHECK(tg.rc == 0 && strcmp(tg.id, tf.id) == 0, "b never got f's item (rc %d)", tg.rc);
    CHECK(coord_session_generation(sf) == 0, "f's session was expected to survive");
    memset(&bc, 0, sizeof(bc));
    coord_queue_complete(qb, tg.id, it_on_rc, &bc);
    CHECK(it_wait_rc(base, &bc, 30000) == 0, "complete");
    CHECK(count("-lost;") == 1, "trace %s", trace);
    coord_queue_close(qf);
    coord_session_free(sf);

    /* 5. A watched claim completed, and the queue closed in the same turn: done(0), no lost. */
    trace[0] = '\0';
    memset(&pr, 0, sizeof(pr));
    coord_queue_put(qd, &one, 1, it_on_rc, &pr);
    CHECK(it_wait_rc(base, &pr, 30000) == 0, "put");
    struct coord_queue *qh =
        it_queue_open(base, d, "/drover/queues/itest/lost", 1, "h", on_lost, "h", 30000);
    struct it_take th = it_take_one(base, qh, 10000);
    CHECK(th.rc == 0, "h take");
    it_run_for(base, 1200); /* its claim is watched by now */
    struct it_rc hc = {0};
    coord_queue_complete(qh, th.id, it_on_rc, &hc);
    coord_queue_close(qh);
    CHECK(it_wait_rc(base, &hc, 30000) == 0, "complete across close rc %d", hc.rc);
    it_run_for(base, 200);
    CHECK(trace[0] == '\0', "trace %s", trace);

    coord_queue_close(qb);
    coord_queue_close(qd);
    coord_session_free(sb);
    coord_session_free(d);
    event_base_free(base);
    printf("claim-lost: ok\n");
    return 0;
}

/* ---- queue-skip ----------------------------------------------------------------------- */

struct skip_set {
    const char *key; /* the key passed over, NULL: none */
};

static bool skip_cb(const char *key, void *arg)
{
    struct skip_set *k = arg;
    return k->key && strcmp(key, k->key) == 0;
}

int t_queue_skip(void)
{
    struct event_base *base = event_base_new();
    struct coord_session *s = it_session(base, 20000), *b = it_session(base, 20000);
    const char *qp = "/drover/queues/itest/skip";
    struct skip_set ks = {"j1.f0.2"};
    struct it_rc o = {0};
    struct coord_queue_opts qo = {
        .shards = 8, .consumer_id = "a", .skip = skip_cb, .skip_arg = &ks};
    struct coord_queue *qa = coord_queue_open(s, qp, &qo, it_on_rc, &o);
    CHECK(it_wait_rc(base, &o, 30000) == 0, "open a");
    struct coord_queue *qb = it_queue_open(base, b, qp, 8, "b", NULL, NULL, 30000);

    struct coord_txn *t = coord_txn_new();
    CHECK(coord_txn_queue_put(t, qa, "j1.f0.2", "{\"task\":0}", 9) == 0, "put 0");
    CHECK(coord_txn_queue_put(t, qa, "j1.f1.1", "{\"task\":1}", 5) == 0, "put 1");
    struct it_txn to = {0};
    coord_txn_commit(s, t, NULL, it_on_txn, &to);
    CHECK(it_wait_txn(base, &to, 30000).rc == 0, "puts rc %d", to.rc);

    /* a passes the higher-priority item over: it gets the other, then nothing. */
    struct it_take ta = it_take_one(base, qa, 10000);
    CHECK(ta.rc == 0 && strstr(ta.id, "kj1.f1.1"), "a took %s rc %d", ta.id, ta.rc);
    struct it_take tn = it_take_one(base, qa, 1500);
    CHECK(tn.rc == DRV_ETIMEDOUT, "a took the skipped item: %s rc %d", tn.id, tn.rc);
    struct coord_queue_stats st = it_queue_stats(base, qb);
    CHECK(st.length == 2 && st.claimed == 1, "passed over is not claimed: length %zu claimed %zu",
          (size_t)st.length, (size_t)st.claimed);

    /* The filter lets it through now: an idle a takes it after a rescan (nothing else
       changes in the queue, so without the rescan the take would time out). */
    struct it_take tr = {0};
    coord_queue_take(qa, 20000, it_on_take, &tr);
    it_run_for(base, 500); /* a is idle by now */
    ks.key = NULL;
    coord_queue_rescan(qa);
    CHECK(it_run_until(base, &tr.done, 30000), "take never answered");
    CHECK(tr.rc == 0 && strstr(tr.id, "kj1.f0.2"), "after the rescan a took %s rc %d", tr.id,
          tr.rc);

    /* b waits behind a's claims; a releases one: b takes it. */
    struct it_take tb = {0};
    coord_queue_take(qb, 20000, it_on_take, &tb);
    it_run_for(base, 500);
    CHECK(!tb.done, "b took %s while both items were claimed", tb.id);
    struct it_rc rr = {0};
    coord_queue_release(qa, tr.id, it_on_rc, &rr);
    CHECK(it_wait_rc(base, &rr, 30000) == 0, "release");
    CHECK(it_run_until(base, &tb.done, 30000), "b never took the released item");
    CHECK(tb.rc == 0 && strcmp(tb.id, tr.id) == 0, "b took %s rc %d", tb.id, tb.rc);

    coord_queue_close(qa);
    coord_queue_close(qb);
    coord_session_free(b);
    coord_session_free(s);
    event_base_free(base);
    printf("queue-skip: ok\n");
    return 0;
}

/*
 * A consumer with takes waiting, in a queue whose shard changes all the time with nothing
 * it can take (names that are not items): it paces its listings (SCAN_PACE_MS, 5 ms, between
 * the empty listings of a round) and lists the claims only when a shard has a name it may
 * take. Counted by the session's getChildren requests: at most one listing per 5 ms of the
 * churn, plus one for each round's start and each wake-up. Before, it listed shard and claims one
 * round trip after the other (thousands in the same time on a local server). Then an item put into
 * a shard is still taken, and once the churn stops the consumer rests: no request.
 */
int t_queue_paced(void)
{
    struct event_base *base = event_base_new();
    struct coord_session *s = it_session(base, 20000), *b = it_session(base, 20000);
    const char *qp = "/drover/queues/itest/paced";
    struct coord_queue *qa = it_queue_open(base, s, qp, 16, "a", NULL, NULL, 30000);
    struct it_take tk[8] = {{0}};
    for (int i = 0; i < 8; i++)
        coord_queue_take(qa, 60000, it_on_take, &tk[i]);
    it_run_for(base, 300); /* a round of empty shards: idle */

    uint64_t c0 = coord_session_requests(s, COORD_REQ_CHILDREN);
    long t0 = it_now_ms();
    int churns = 0;
    while (it_now_ms() - t0 < 1500) {
        char p[128];
        snprintf(p, sizeof(p), "%s/items/s%02d/x-%d", qp, churns % 16, churns);
        struct it_txn o = {0};
        struct coord_txn *t = coord_txn_new();
        coord_txn_create(t, p, "{}", 0);
        coord_txn_commit(b, t, NULL, it_on_txn, &o);
        CHECK(it_wait_txn(base, &o, 30000).rc == 0, "create %s rc %d", p, o.rc);
        struct it_txn d = {0};
        t = coord_txn_new();
        coord_txn_delete(t, p, -1);
        coord_txn_commit(b, t, NULL, it_on_txn, &d);
        CHECK(it_wait_txn(base, &d, 30000).rc == 0, "delete %s rc %d", p, d.rc);
        churns++;
    }
    long ms = it_now_ms() - t0;
    uint64_t lists = coord_session_requests(s, COORD_REQ_CHILDREN) - c0;
    struct coord_queue_counters qc;
    coord_queue_counters(qa, &qc);
    printf("queue-paced: %d churns in %ld ms: %llu listings (%llu of the claims)\n", churns, ms,
           (unsigned long long)lists, (unsigned long long)qc.claims_listings);
    CHECK(churns >= 20, "only %d churns", churns);
    /* 5 ms before each listing but a round's first (after 15 paced ones, or a wake-up). */
    CHECK(lists <= (uint64_t)(ms / 5 + ms / 30 + 4),
          "%llu listings in %ld ms: more than one per 5 ms", (unsigned long long)lists, ms);
    CHECK(qc.claims_listings == 0, "the claims listed %llu times with nothing to take",
          (unsigned long long)qc.claims_listings);

    /* An item put now is taken by one of the waiting takes. */
    struct coord_txn *t = coord_txn_new();
    CHECK(coord_txn_queue_put(t, qa, "j1.f0.1", "{\"task\":0}", 5) == 0, "put");
    struct it_txn to = {0};
    coord_txn_commit(b, t, NULL, it_on_txn, &to);
    CHECK(it_wait_txn(base, &to, 30000).rc == 0, "put rc %d", to.rc);
    bool any = false;
    for (long w0 = it_now_ms(); !any && it_now_ms() - w0 < 30000;) {
        it_run_for(base, 20);
        for (int i = 0; i < 8; i++)
            any = any || tk[i].done;
    }
    CHECK(any, "the item put after the churn was never taken");

    /* The churn is over: the consumer rests (a round, then idle: no listing). */
    it_run_for(base, 1000);
    uint64_t c1 = coord_session_requests(s, COORD_REQ_CHILDREN);
    it_run_for(base, 1000);
    CHECK(coord_session_requests(s, COORD_REQ_CHILDREN) == c1, "listings while nothing changes");

    coord_queue_close(qa);
    coord_session_free(b);
    coord_session_free(s);
    event_base_free(base);
    printf("queue-paced: ok\n");
    return 0;
}
