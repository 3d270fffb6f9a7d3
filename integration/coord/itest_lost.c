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

/* A session whose answers under prefix are all lost (the hook with N 1). */
static struct coord_session *lossy(struct event_base *base, const char *kind, const char *prefix)
{
    char spec[256];
    snprintf(spec, sizeof(spec), "zk-answer-lost:%s:%s:1", kind, prefix);
    setenv("DROVER_FAULT", spec, 1);
    struct coord_session *s = it_session(base, 20000);
    unsetenv("DROVER_FAULT");
    return s;
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
