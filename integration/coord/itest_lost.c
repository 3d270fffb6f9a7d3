/*
 * itest_lost: lost answers made by coord's own test hook (issue 33), against a real
 * ZooKeeper. DROVER_FAULT=zk-answer-lost:KIND:SUBSTRING[:N] (coord_int.h) lets a write
 * apply on the server and replaces its answer by a connection loss, so these tests know
 * exactly which request lost its answer, with no timing.
 *
 *   answer-lost      the hook is real: a create, a set, a delete and a multi-op each
 *                    report DRV_EAGAIN (the answer lost) while a second session reads
 *                    that each applied; requests of other paths are untouched
 *   queue-txn-lost   coord_queue_txn_commit has no resolver (coord.h): its lost answer
 *                    is DRV_EAGAIN, the record it created is there, and the caller's
 *                    resend of the create fails on op 0 with ZNODEEXISTS, nothing else
 *                    changed and the claim still held: what the worker resolves by its
 *                    record's name, unique to the delivery (worker/attempt.c)
 *   queue-answers-lost the worker's other queue requests (docs/worker.md "Lost answers"):
 *                    a claim multi-op's answer lost (resolved: the claim found ours is
 *                    deleted and the item taken again; delivered once, nothing else
 *                    claimed), a complete's (resolved: done, the item gone), a release's
 *                    (a delete that finds the claim gone is done; another consumer takes
 *                    the item), and a member join's create (ZNODEEXISTS of this session's
 *                    own: joined)
 */
#include <string.h>
#include <unistd.h>

#include <zookeeper/zookeeper.h>

#include "itest.h"
#include "xalloc.h"

static struct it_txn commit(struct event_base *base, struct coord_session *s, struct coord_txn *t)
{
    struct it_txn o = {0};
    coord_txn_commit(s, t, NULL, it_on_txn, &o);
    CHECK(it_run_until(base, &o.done, 30000), "commit never answered");
    return o;
}

/* A session that loses the answer of every Nth applied write of kind naming prefix. */
static struct coord_session *lossy_every(struct event_base *base, const char *kind,
                                         const char *prefix, unsigned every)
{
    char spec[256];
    snprintf(spec, sizeof(spec), "zk-answer-lost:%s:%s:%u", kind, prefix, every);
    setenv("DROVER_FAULT", spec, 1);
    struct coord_session *s = it_session(base, 20000);
    unsetenv("DROVER_FAULT");
    return s;
}

/* A session whose answers under prefix are all lost (the hook with N 1). */
static struct coord_session *lossy(struct event_base *base, const char *kind, const char *prefix)
{
    return lossy_every(base, kind, prefix, 1);
}

int t_answer_lost(void)
{
    struct event_base *base = event_base_new();
    struct coord_session *d = it_session(base, 20000);
    struct it_rc e = {0};
    coord_ensure_path(d, "/drover/itest/al/x", it_on_rc, &e);
    CHECK(it_run_until(base, &e.done, 20000) && e.rc == 0, "ensure");
    struct coord_session *s = lossy(base, "any", "/drover/itest/al/");

    struct coord_txn *t = coord_txn_new();
    coord_txn_create(t, "/drover/itest/al/a", "{\"v\":1}", 0);
    struct it_txn o = commit(base, s, t);
    CHECK(o.rc == DRV_EAGAIN, "create: rc %d, want the answer lost", o.rc);
    struct it_got g = it_get(base, d, "/drover/itest/al/a");
    CHECK(g.rc == 0 && strcmp(g.data, "{\"v\":1}") == 0, "the create applied: rc %d %s", g.rc,
          g.data);

    t = coord_txn_new();
    coord_txn_set(t, "/drover/itest/al/a", "{\"v\":2}", 0);
    o = commit(base, s, t);
    CHECK(o.rc == DRV_EAGAIN, "set: rc %d", o.rc);
    g = it_get(base, d, "/drover/itest/al/a");
    CHECK(g.rc == 0 && strcmp(g.data, "{\"v\":2}") == 0, "the set applied: %s", g.data);

    t = coord_txn_new();
    coord_txn_create(t, "/drover/itest/al/b", "{}", 0);
    coord_txn_create(t, "/drover/itest/al/c", "{}", 0);
    coord_txn_delete(t, "/drover/itest/al/a", 1);
    o = commit(base, s, t);
    CHECK(o.rc == DRV_EAGAIN, "multi: rc %d", o.rc);
    CHECK(it_get(base, d, "/drover/itest/al/a").rc == DRV_ENOENT, "the delete applied");
    CHECK(it_get(base, d, "/drover/itest/al/b").rc == 0 &&
              it_get(base, d, "/drover/itest/al/c").rc == 0,
          "the creates applied");

    /* A failed request keeps its answer (only applied ones are lost). */
    t = coord_txn_new();
    coord_txn_create(t, "/drover/itest/al/b", "{}", 0);
    o = commit(base, s, t);
    CHECK(o.rc == DRV_ECONFLICT && o.failed_op == 0 && o.zrc == ZNODEEXISTS,
          "a failing create: rc %d op %d zrc %d", o.rc, o.failed_op, o.zrc);
    /* Another path's answer is not touched. */
    t = coord_txn_new();
    coord_txn_set(t, "/drover/itest/al", "{\"ok\":1}", -1);
    o = commit(base, s, t);
    CHECK(o.rc == 0, "a write outside the prefix: rc %d", o.rc);

    /* Kinds: a session losing only sets' answers keeps a multi-op's. */
    struct coord_session *k = lossy(base, "set", "/drover/itest/al/");
    t = coord_txn_new();
    coord_txn_create(t, "/drover/itest/al/d", "{}", 0);
    o = commit(base, k, t);
    CHECK(o.rc == 0, "a multi-op under a set-only hook: rc %d", o.rc);
    coord_session_free(k);

    coord_session_free(s);
    coord_session_free(d);
    event_base_free(base);
    printf("answer-lost: ok\n");
    return 0;
}

int t_queue_txn_lost(void)
{
    struct event_base *base = event_base_new();
    struct coord_session *d = it_session(base, 20000);
    struct coord_session *s = lossy(base, "multi", "/drover/itest/qtl/");
    const char *qp = "/drover/queues/itest/qtl";
    struct it_rc e = {0};
    coord_ensure_path(d, "/drover/itest/qtl/runs", it_on_rc, &e);
    CHECK(it_run_until(base, &e.done, 20000) && e.rc == 0, "ensure");
    struct coord_queue_opts qo = {.shards = 1, .consumer_id = "c"};
    e = (struct it_rc){0};
    struct coord_queue *q = coord_queue_open(s, qp, &qo, it_on_rc, &e);
    CHECK(it_run_until(base, &e.done, 20000) && e.rc == 0, "open");
    struct coord_queue_opts po = {.shards = 1, .consumer_id = "producer"};
    e = (struct it_rc){0};
    struct coord_queue *qd = coord_queue_open(d, qp, &po, it_on_rc, &e);
    CHECK(it_run_until(base, &e.done, 20000) && e.rc == 0, "open producer");
    struct coord_queue_put_item item = {"{\"n\":0}", 5};
    e = (struct it_rc){0};
    coord_queue_put(qd, &item, 1, it_on_rc, &e);
    CHECK(it_run_until(base, &e.done, 20000) && e.rc == 0, "put");
    struct it_take x = {0};
    coord_queue_take(q, 10000, it_on_take, &x);
    CHECK(it_run_until(base, &x.done, 20000) && x.rc == 0, "take");

    const char *rec = "/drover/itest/qtl/runs/f0.1.w-1.7";
    struct coord_txn *t = coord_txn_new();
    coord_txn_create(t, rec, "{\"worker\":\"w-1\"}", 0);
    struct it_txn o = {0};
    coord_queue_txn_commit(q, x.id, t, it_on_txn, &o);
    CHECK(it_run_until(base, &o.done, 30000), "txn never answered");
    CHECK(o.rc == DRV_EAGAIN, "the record's answer: rc %d, want lost", o.rc);
    struct it_got g = it_get(base, d, rec);
    CHECK(g.rc == 0 && strstr(g.data, "w-1"), "the record applied: rc %d", g.rc);

    t = coord_txn_new();
    coord_txn_create(t, rec, "{\"worker\":\"w-1\"}", 0);
    o = (struct it_txn){0};
    coord_queue_txn_commit(q, x.id, t, it_on_txn, &o);
    CHECK(it_run_until(base, &o.done, 30000), "resend never answered");
    CHECK(o.rc == DRV_ECONFLICT && o.failed_op == 0 && o.zrc == ZNODEEXISTS,
          "the resend: rc %d op %d zrc %d (want op 0 ZNODEEXISTS: the caller's to resolve)", o.rc,
          o.failed_op, o.zrc);

    /* The claim is still ours: a complete goes through (its answer lost too, resolved). */
    e = (struct it_rc){0};
    coord_queue_complete(q, x.id, it_on_rc, &e);
    CHECK(it_run_until(base, &e.done, 30000), "complete never answered");
    CHECK(e.rc == 0, "complete after the lost answer: rc %d", e.rc);

    coord_queue_close(q);
    coord_queue_close(qd);
    coord_session_free(s);
    coord_session_free(d);
    event_base_free(base);
    printf("queue-txn-lost: ok\n");
    return 0;
}

struct it_owner {
    bool done;
    int rc;
    int64_t owner;
};

static void on_owner(int rc, const struct coord_stat *st, void *arg)
{
    struct it_owner *o = arg;
    o->rc = rc;
    o->owner = rc == 0 && st ? st->ephemeral_owner : 0;
    o->done = true;
}

/* The session that owns the ephemeral znode at path (0: none or not there). */
static int64_t owner_of(struct event_base *base, struct coord_session *s, const char *path)
{
    struct it_owner o = {0};
    coord_exists_w(s, path, on_owner, NULL, &o);
    CHECK(it_run_until(base, &o.done, 20000), "exists never answered");
    return o.owner;
}

int t_queue_answers_lost(void)
{
    struct event_base *base = event_base_new();
    struct coord_session *d = it_session(base, 20000);
    const char *qp = "/drover/queues/itest/qal";
    struct coord_queue *qd = it_queue_open(base, d, qp, 1, "producer", NULL, NULL, 30000);
    struct coord_queue_put_item two[] = {{"{\"n\":1}", 5}, {"{\"n\":2}", 5}};
    struct it_rc e = {0};
    coord_queue_put(qd, two, 2, it_on_rc, &e);
    CHECK(it_wait_rc(base, &e, 20000) == 0, "put");

    /* 1. Every other claim multi-op under the queue loses its answer: the first take's, and
     * the complete's (the third multi-op naming a claim). */
    struct coord_session *sa = lossy_every(base, "multi", "/drover/queues/itest/qal/claims/", 2);
    struct coord_queue *qa = it_queue_open(base, sa, qp, 1, "a", NULL, NULL, 30000);
    struct it_take ta = it_take_one(base, qa, 10000);
    CHECK(ta.rc == 0, "a take after its claim's answer was lost: rc %d", ta.rc);
    char claim[700];
    const char *slash = strchr(ta.id, '/');
    snprintf(claim, sizeof(claim), "%s/claims/%.*s-%s", qp, (int)(slash - ta.id), ta.id, slash + 1);
    CHECK(owner_of(base, d, claim) == (int64_t)coord_session_id(sa),
          "the item delivered is not claimed by its taker");
    CHECK(it_children_count(base, d, "/drover/queues/itest/qal/claims", true) == 1,
          "more than the one item delivered is claimed");
    struct coord_queue_counters c;
    coord_queue_counters(qa, &c);
    CHECK(c.claims >= 2, "the lost claim was not taken again (%llu claim multi-ops)",
          (unsigned long long)c.claims);
    e = (struct it_rc){0};
    coord_queue_complete(qa, ta.id, it_on_rc, &e);
    CHECK(it_wait_rc(base, &e, 30000) == 0, "complete with its answer lost: rc %d", e.rc);
    CHECK(owner_of(base, d, claim) == 0, "the completed item's claim is still there");
    char item[700];
    snprintf(item, sizeof(item), "%s/items/%s", qp, ta.id);
    CHECK(it_get(base, d, item).rc == DRV_ENOENT, "the completed item is still there");
    coord_queue_close(qa);
    coord_session_free(sa);

    /* 2. A release whose delete's answer is lost: done, and another consumer takes the item. */
    struct coord_session *sb = lossy(base, "delete", "/drover/queues/itest/qal/claims/");
    struct coord_queue *qb = it_queue_open(base, sb, qp, 1, "b", NULL, NULL, 30000);
    struct it_take tb = it_take_one(base, qb, 10000);
    CHECK(tb.rc == 0 && strcmp(tb.id, ta.id) != 0, "b take of the other item: rc %d", tb.rc);
    e = (struct it_rc){0};
    coord_queue_release(qb, tb.id, it_on_rc, &e);
    CHECK(it_wait_rc(base, &e, 30000) == 0, "release with its answer lost: rc %d", e.rc);
    struct coord_queue *qc = it_queue_open(base, d, qp, 1, "c", NULL, NULL, 30000);
    struct it_take tc = it_take_one(base, qc, 10000);
    CHECK(tc.rc == 0 && strcmp(tc.id, tb.id) == 0, "the released item to another: rc %d", tc.rc);
    e = (struct it_rc){0};
    coord_queue_complete(qc, tc.id, it_on_rc, &e);
    CHECK(it_wait_rc(base, &e, 30000) == 0, "c's complete: rc %d", e.rc);
    coord_queue_close(qc);
    coord_queue_close(qb);
    coord_session_free(sb);

    /* 3. A member join whose create's answer is lost: joined, the znode this session's. */
    struct coord_session *sm = lossy(base, "create", "/drover/itest/qal-members/");
    struct it_rc j = {0};
    struct coord_member *m =
        coord_member_join(sm, "/drover/itest/qal-members", "w", "{\"n\":1}", it_on_rc, &j);
    CHECK(it_wait_rc(base, &j, 30000) == 0, "join with its answer lost: rc %d", j.rc);
    CHECK(owner_of(base, d, "/drover/itest/qal-members/w") == (int64_t)coord_session_id(sm),
          "the member znode is not the joining session's");
    coord_member_leave(m);
    coord_session_free(sm);

    coord_queue_close(qd);
    coord_session_free(d);
    event_base_free(base);
    printf("queue-answers-lost: ok\n");
    return 0;
}
