/*
 * itest_fleet: what a fleet costs ZooKeeper as it grows (issue 37).
 *
 *   members-cost  a watcher of a group that 40 members join one by one reads each newcomer
 *                 once (a listing and one read per join, at most, not one read per member
 *                 per join: O(W) for a fleet of W, not O(W^2)); an update is one read of that
 *                 member, a leave one listing; every view it reports is the whole group as
 *                 it is; after its session expires it reads the group again, whole
 */
#include <string.h>
#include <unistd.h>

#include "itest.h"
#include "xalloc.h"

/* ---- members-cost ------------------------------------------------------------------ */

struct mview {
    int calls;
    size_t n;
    char ids[64][16];
    char last_json[64][64];
};

static void mc_on_members(const struct coord_member_info *m, size_t n, void *arg)
{
    struct mview *v = arg;
    v->calls++;
    v->n = n < 64 ? n : 64;
    for (size_t i = 0; i < v->n; i++) {
        snprintf(v->ids[i], sizeof(v->ids[i]), "%s", m[i].id);
        snprintf(v->last_json[i], sizeof(v->last_json[i]), "%s", m[i].json);
    }
}

struct mc_want {
    struct mview *v;
    size_t n;
    const char *json_of_first; /* NULL: any */
};

static bool mc_view_is(void *arg)
{
    struct mc_want *w = arg;
    if (w->v->calls == 0 || w->v->n != w->n)
        return false;
    for (size_t i = 0; i < w->n; i++) {
        char id[16];
        snprintf(id, sizeof(id), "m%02zu", i);
        if (strcmp(w->v->ids[i], id) != 0)
            return false;
    }
    return !w->json_of_first || (w->n && strcmp(w->v->last_json[0], w->json_of_first) == 0);
}

static uint64_t reads(struct coord_session *s)
{
    return coord_session_requests(s, COORD_REQ_GET) + coord_session_requests(s, COORD_REQ_CHILDREN);
}

static void mc_flag(int rc, void *arg)
{
    CHECK(rc == 0, "rc %d", rc);
    *(bool *)arg = true;
}

int t_members_cost(void)
{
    enum { N = 40 };
    struct event_base *base = event_base_new();
    struct coord_session *w = it_session(base, 4000);
    struct coord_session *j = it_session(base, 30000);
    const char *grp = "/drover/members/itest-cost";
    struct mview v = {0};
    struct coord_group *g = coord_group_watch(w, grp, mc_on_members, &v);
    struct mc_want want = {&v, 0, NULL};
    CHECK(it_run_until_fn(base, mc_view_is, &want, 20000), "empty view");

    uint64_t r0 = reads(w);
    struct coord_member *m[N];
    for (int i = 0; i < N; i++) {
        char id[16];
        snprintf(id, sizeof(id), "m%02d", i);
        bool joined = false;
        m[i] = coord_member_join(j, grp, id, "{\"n\":0}", mc_flag, &joined);
        CHECK(it_run_until(base, &joined, 20000), "join %s", id);
        want.n = (size_t)i + 1;
        CHECK(it_run_until_fn(base, mc_view_is, &want, 20000), "view after join %d: %zu", i, v.n);
    }
    uint64_t joins = reads(w) - r0;

    /* Each join: one listing and one read of the newcomer (fewer when two coalesce). Before
       issue 37's change every member was read again on each join: N(N+1)/2 + N = 860. */
    printf("members-cost: %d joins cost the watcher %llu reads\n", N, (unsigned long long)joins);
    CHECK(joins <= 2 * N, "%llu reads for %d joins (at most %d)", (unsigned long long)joins, N,
          2 * N);

    /* An update: that member is read again, nothing else. */
    r0 = reads(w);
    bool upd = false;
    coord_member_update(m[0], "{\"n\":1}", mc_flag, &upd);
    CHECK(it_run_until(base, &upd, 20000), "update");
    want.json_of_first = "{\"n\":1}";
    CHECK(it_run_until_fn(base, mc_view_is, &want, 20000), "update seen: %s", v.last_json[0]);
    CHECK(reads(w) - r0 == 1, "an update cost %llu reads", (unsigned long long)(reads(w) - r0));

    /* A leave: one listing. */
    r0 = reads(w);
    int calls = v.calls;
    coord_member_leave(m[N - 1]);
    m[N - 1] = NULL;
    want.n = N - 1;
    CHECK(it_run_until_fn(base, mc_view_is, &want, 20000), "leave seen: %zu", v.n);
    CHECK(reads(w) - r0 == 1, "a leave cost %llu reads", (unsigned long long)(reads(w) - r0));
    CHECK(v.calls == calls + 1, "one view per leave (%d)", v.calls - calls);

    /* The watcher's session expires: all its watches are gone, it reads the whole group. */
    r0 = reads(w);
    it_expire(w);
    for (int i = 0; i < 2000 && coord_session_generation(w) == 0; i++)
        it_run_for(base, 10);
    CHECK(coord_session_generation(w) == 1, "new session");
    bool upd2 = false;
    coord_member_update(m[0], "{\"n\":2}", mc_flag, &upd2);
    CHECK(it_run_until(base, &upd2, 20000), "update 2");
    want.json_of_first = "{\"n\":2}";
    CHECK(it_run_until_fn(base, mc_view_is, &want, 20000), "view after the new session");
    CHECK(reads(w) - r0 >= N, "a new session read %llu (the whole group: %d)",
          (unsigned long long)(reads(w) - r0), N);

    for (int i = 0; i < N; i++)
        if (m[i])
            coord_member_leave(m[i]);
    coord_group_free(g);
    coord_session_free(j);
    coord_session_free(w);
    event_base_free(base);
    printf("members-cost: ok\n");
    return 0;
}

/* ---- slots ------------------------------------------------------------------------------ */

/*
 *   slots         a consumer's two slots are offered; a writer takes one (delete the offer,
 *                 set the slot at its version) and the consumer hears the assignment once;
 *                 a second writer's take of the same offer fails; the writer sets the next
 *                 task at the next version (no offer); set free, the slot is offered again;
 *                 a slot done with and left by its writer is freed by the consumer itself;
 *                 offers withdrawn (a drain) cannot be taken; a slot set to another key
 *                 under a running one: on_lost, then the new one; the consumer's session
 *                 expires: on_lost for what runs, and new slots under the new session
 *   slots-suspect the consumer is cut off silently while a slot runs: on_lost comes while
 *                 the slot still holds the key on the server (before the session can
 *                 expire); back on the same session, the key is not handed out again
 *   slots-lost    the answers of the slots' multi-op and of an offer's create are lost
 *                 (DROVER_FAULT=zk-answer-lost): the slots and offers are there once each
 */
struct sv {
    char trace[4096];
    int assigned, lost;
    char last_task[256];
};

static void sv_add(struct sv *v, const char *what, unsigned i, const char *key)
{
    char one[160];
    snprintf(one, sizeof(one), "%s%u:%s;", what, i, key);
    strncat(v->trace, one, sizeof(v->trace) - strlen(v->trace) - 1);
}

static void sv_assigned(struct coord_slots *sl, unsigned i, const char *key, const char *json,
                        void *arg)
{
    struct sv *v = arg;
    v->assigned++;
    snprintf(v->last_task, sizeof(v->last_task), "%s", json ? json : "");
    sv_add(v, "a", i, key);
}

static void sv_lost(struct coord_slots *sl, unsigned i, const char *key, const char *json,
                    void *arg)
{
    struct sv *v = arg;
    v->lost++;
    sv_add(v, "l", i, key);
}

struct sv_has {
    struct sv *v;
    const char *what;
};

static bool sv_has(void *arg)
{
    struct sv_has *h = arg;
    return strstr(h->v->trace, h->what) != NULL;
}

/* The children of path, sorted, joined with ','. */
struct names {
    bool done;
    int rc;
    char s[2048];
};

static int cmp_s(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void names_got(int rc, char *const *n, size_t k, void *arg)
{
    struct names *o = arg;
    o->rc = rc;
    o->s[0] = '\0';
    char **v = xcalloc(k + 1, sizeof(char *));
    for (size_t i = 0; i < k; i++)
        v[i] = n[i];
    qsort(v, k, sizeof(char *), cmp_s);
    for (size_t i = 0; i < k; i++) {
        if (i)
            strncat(o->s, ",", sizeof(o->s) - strlen(o->s) - 1);
        strncat(o->s, v[i], sizeof(o->s) - strlen(o->s) - 1);
    }
    free(v);
    o->done = true;
}

static const char *children_of(struct event_base *base, struct coord_session *s, const char *path)
{
    static struct names o;
    memset(&o, 0, sizeof(o));
    coord_children(s, path, names_got, &o);
    CHECK(it_run_until(base, &o.done, 20000), "list %s", path);
    return o.s;
}

struct lst {
    struct event_base *base;
    struct coord_session *s;
    const char *path;
    const char *want;
};

static bool list_is(void *arg)
{
    struct lst *l = arg;
    return strcmp(children_of(l->base, l->s, l->path), l->want) == 0;
}

static void wait_list(struct event_base *base, struct coord_session *s, const char *path,
                      const char *want)
{
    struct lst l = {base, s, path, want};
    for (int i = 0; i < 400; i++) {
        if (list_is(&l))
            return;
        it_run_for(base, 50);
    }
    CHECK(false, "%s lists \"%s\", not \"%s\"", path, children_of(base, s, path), want);
}

struct txr {
    bool done;
    int rc, failed_op, zrc;
};

static void txr_done(const struct coord_txn_result *r, void *arg)
{
    struct txr *o = arg;
    o->rc = r->rc;
    o->failed_op = r->failed_op;
    o->zrc = r->zrc;
    o->done = true;
}

/* A writer's take: delete the offer, set the slot at its version, one multi-op. */
static int take(struct event_base *base, struct coord_session *w, const char *dir, const char *slot,
                int ver, const char *key)
{
    struct coord_txn *t = coord_txn_new();
    char *offer = xasprintf("%s/free/%s@%d", dir, slot, ver);
    char *path = xasprintf("%s/slots/%s", dir, slot);
    char task[64];
    snprintf(task, sizeof(task), "{\"k\":\"%s\"}", key);
    char *data = coord_slot_assignment(key, "itest", task);
    coord_txn_delete(t, offer, -1);
    coord_txn_set(t, path, data, ver);
    struct txr o = {0};
    coord_txn_commit(w, t, NULL, txr_done, &o);
    CHECK(it_run_until(base, &o.done, 20000), "take");
    free(offer);
    free(path);
    free(data);
    return o.rc;
}

static int set_slot(struct event_base *base, struct coord_session *w, const char *dir,
                    const char *slot, int ver, const char *key)
{
    struct coord_txn *t = coord_txn_new();
    char *path = xasprintf("%s/slots/%s", dir, slot);
    char *data = key ? coord_slot_assignment(key, "itest", "{}") : xstrdup(COORD_SLOT_FREE);
    coord_txn_set(t, path, data, ver);
    struct txr o = {0};
    coord_txn_commit(w, t, NULL, txr_done, &o);
    CHECK(it_run_until(base, &o.done, 20000), "set");
    free(path);
    free(data);
    return o.rc;
}

static bool named(void *arg)
{
    return coord_slots_name(arg, 0) != NULL;
}

/* Slot i's name, once the slots of the current session are named. */
static void slot_name(struct event_base *base, struct coord_slots *sl, unsigned i, char *out,
                      size_t n)
{
    CHECK(it_run_until_fn(base, named, sl, 20000), "the slots are not named");
    snprintf(out, n, "%s", coord_slots_name(sl, i));
}

static void wait_trace(struct event_base *base, struct sv *v, const char *what)
{
    struct sv_has h = {v, what};
    CHECK(it_run_until_fn(base, sv_has, &h, 20000), "no %s in %s", what, v->trace);
}

int t_slots(void)
{
    struct event_base *base = event_base_new();
    struct coord_session *c = it_session(base, 4000);
    struct coord_session *w = it_session(base, 30000);
    struct coord_session *w2 = it_session(base, 30000);
    const char *dir = "/drover/itest/slotq";
    struct sv v = {0};
    struct coord_slots_opts o = {.consumer_id = "wk",
                                 .n = 2,
                                 .on_assigned = sv_assigned,
                                 .on_lost = sv_lost,
                                 .arg = &v,
                                 .done_free_ms = 300};
    struct coord_slots *sl = coord_slots_open(c, dir, &o);
    char s0[64], s1[64], want[300];
    slot_name(base, sl, 0, s0, sizeof(s0));
    slot_name(base, sl, 1, s1, sizeof(s1));
    char *fdir = xasprintf("%s/free", dir), *sdir = xasprintf("%s/slots", dir);
    snprintf(want, sizeof(want), "%s@0,%s@0", s0, s1);
    wait_list(base, w, fdir, want);
    snprintf(want, sizeof(want), "%s,%s", s0, s1);
    CHECK(strcmp(children_of(base, w, sdir), want) == 0, "slots %s", children_of(base, w, sdir));

    /* Taken: heard once, with its task. A second writer's take of that offer fails. */
    CHECK(take(base, w, dir, s0, 0, "K1") == 0, "take");
    wait_trace(base, &v, "a0:K1;");
    CHECK(strcmp(v.last_task, "{\"k\":\"K1\"}") == 0, "task %s", v.last_task);
    CHECK(take(base, w2, dir, s0, 0, "K1b") != 0, "a second take of one offer went in");
    snprintf(want, sizeof(want), "%s@0", s1);
    wait_list(base, w, fdir, want);

    /* The next task at the next version, no offer; then free: offered again. */
    coord_slots_done(sl, 0, "K1");
    CHECK(set_slot(base, w, dir, s0, 1, "K2") == 0, "sticky set");
    wait_trace(base, &v, "a0:K2;");
    coord_slots_done(sl, 0, "K2");
    CHECK(set_slot(base, w, dir, s0, 2, NULL) == 0, "free");
    snprintf(want, sizeof(want), "%s@3,%s@0", s0, s1);
    wait_list(base, w, fdir, want);

    /* Done with and left by its writer: the consumer frees it itself (done_free_ms). */
    CHECK(take(base, w, dir, s0, 3, "K3") == 0, "take 2");
    wait_trace(base, &v, "a0:K3;");
    coord_slots_done(sl, 0, "K3");
    snprintf(want, sizeof(want), "%s@5,%s@0", s0, s1);
    wait_list(base, w, fdir, want);
    CHECK(coord_slots_counters(sl).freed_self == 1, "freed by itself");

    /* A drain: the offers go, and cannot be taken; then back. */
    coord_slots_offer(sl, false);
    wait_list(base, w, fdir, "");
    CHECK(take(base, w, dir, s1, 0, "KX") != 0, "a withdrawn offer was taken");
    coord_slots_offer(sl, true);
    snprintf(want, sizeof(want), "%s@5,%s@0", s0, s1);
    wait_list(base, w, fdir, want);

    /* Set to another key under a running one: lost, then the new one. */
    CHECK(take(base, w, dir, s1, 0, "K4") == 0, "take s1");
    wait_trace(base, &v, "a1:K4;");
    CHECK(set_slot(base, w, dir, s1, 1, "K5") == 0, "reassign");
    wait_trace(base, &v, "l1:K4;a1:K5;");
    CHECK(v.assigned == 5 && v.lost == 1, "assigned %d lost %d: %s", v.assigned, v.lost, v.trace);

    /* The consumer's session expires: what runs is lost; new slots, new offers. */
    int64_t old = coord_session_id(c);
    it_expire(c);
    wait_trace(base, &v, "l1:K5;");
    for (int i = 0; i < 2000 && coord_session_generation(c) == 0; i++)
        it_run_for(base, 10);
    CHECK(coord_session_id(c) != old, "a new session");
    for (int i = 0;
         i < 400 && strcmp(coord_slots_name(sl, 0) ? coord_slots_name(sl, 0) : s0, s0) == 0; i++)
        it_run_for(base, 10);
    slot_name(base, sl, 0, s0, sizeof(s0));
    slot_name(base, sl, 1, s1, sizeof(s1));
    snprintf(want, sizeof(want), "%s@0,%s@0", s0, s1);
    wait_list(base, w, fdir, want);
    snprintf(want, sizeof(want), "%s,%s", s0, s1);
    wait_list(base, w, sdir, want);
    CHECK(take(base, w, dir, s1, 0, "K6") == 0, "take after the new session");
    wait_trace(base, &v, "a1:K6;");
    CHECK(v.assigned == 6 && v.lost == 2, "assigned %d lost %d: %s", v.assigned, v.lost, v.trace);

    coord_slots_close(sl);
    free(fdir);
    free(sdir);
    coord_session_free(c);
    coord_session_free(w);
    coord_session_free(w2);
    event_base_free(base);
    printf("slots: ok (%s)\n", v.trace);
    return 0;
}

struct rdata {
    bool done;
    int rc;
    char data[512];
};

static void rdata_got(int rc, const char *data, int version, void *arg)
{
    struct rdata *r = arg;
    r->rc = rc;
    snprintf(r->data, sizeof(r->data), "%s", data ? data : "");
    r->done = true;
}

int t_slots_suspect(void)
{
    enum { T = 4000 };
    struct event_base *base = event_base_new();
    struct it_proxy *p = it_proxy_new(it_zk_port(1));
    struct coord_session *c = it_session_at(base, it_proxy_addr(p), T);
    struct coord_session *w = it_session(base, 30000);
    const char *dir = "/drover/itest/slotq-suspect";
    struct sv v = {0};
    struct coord_slots_opts o = {.consumer_id = "wk",
                                 .n = 1,
                                 .on_assigned = sv_assigned,
                                 .on_lost = sv_lost,
                                 .arg = &v,
                                 .done_free_ms = 300};
    struct coord_slots *sl = coord_slots_open(c, dir, &o);
    char s0[64], want[200];
    slot_name(base, sl, 0, s0, sizeof(s0));
    char *fdir = xasprintf("%s/free", dir), *spath = xasprintf("%s/slots/%s", dir, s0);
    snprintf(want, sizeof(want), "%s@0", s0);
    wait_list(base, w, fdir, want);
    CHECK(take(base, w, dir, s0, 0, "K1") == 0, "take");
    wait_trace(base, &v, "a0:K1;");

    /* Cut off silently: on_lost while the server still has the slot (and its key). */
    int64_t sid = coord_session_id(c);
    long t0 = it_now_ms();
    it_proxy_set_silent(p, true);
    wait_trace(base, &v, "l0:K1;");
    long lost_after = it_now_ms() - t0;
    struct rdata rd = {0};
    coord_get(w, spath, rdata_got, &rd);
    CHECK(it_run_until(base, &rd.done, 20000) && rd.rc == 0 && strstr(rd.data, "\"K1\""),
          "the slot holds %s (rc %d) when on_lost is told", rd.data, rd.rc);
    CHECK(lost_after < T, "on_lost after %ld ms, the session's timeout is %d", lost_after, T);
    it_proxy_set_silent(p, false);
    it_run_for(base, 1500);
    CHECK(coord_session_id(c) == sid, "the same session (it was cut off %ld ms)", lost_after);
    /* Back, same session: the slot still says K1, which is not handed out again. */
    coord_slots_done(sl, 0, "K1");
    snprintf(want, sizeof(want), "%s@2", s0); /* freed by itself at version 1 -> 2 */
    wait_list(base, w, fdir, want);
    CHECK(v.assigned == 1 && v.lost == 1, "assigned %d lost %d: %s", v.assigned, v.lost, v.trace);

    coord_slots_close(sl);
    free(fdir);
    free(spath);
    coord_session_free(c);
    coord_session_free(w);
    event_base_free(base);
    printf("slots-suspect: ok (on_lost %ld ms after the cut, timeout %d)\n", lost_after, T);
    return 0;
}

static bool offered_twice(void *arg)
{
    return coord_slots_counters(arg).offers >= 2;
}

int t_slots_lost(void)
{
    /* The first multi-op under /slots/ (the slots' own) loses its answer, and so does the
       first offer's create under /free/ made after a free (the hook's kinds: docs/testing.md). */
    setenv("DROVER_FAULT", "zk-answer-lost:multi:/slotq-lost/slots/", 1);
    struct event_base *base = event_base_new();
    struct coord_session *c = it_session(base, 4000);
    unsetenv("DROVER_FAULT");
    struct coord_session *w = it_session(base, 30000);
    const char *dir = "/drover/itest/slotq-lost";
    struct sv v = {0};
    struct coord_slots_opts o = {
        .consumer_id = "wk", .n = 2, .on_assigned = sv_assigned, .on_lost = sv_lost, .arg = &v};
    struct coord_slots *sl = coord_slots_open(c, dir, &o);
    char s0[64], s1[64], want[300];
    slot_name(base, sl, 0, s0, sizeof(s0));
    slot_name(base, sl, 1, s1, sizeof(s1));
    char *fdir = xasprintf("%s/free", dir);
    snprintf(want, sizeof(want), "%s@0,%s@0", s0, s1);
    wait_list(base, w, fdir, want);
    CHECK(take(base, w, dir, s0, 0, "K1") == 0, "take");
    wait_trace(base, &v, "a0:K1;");
    coord_slots_close(sl);
    coord_session_free(c);

    /* An offer's create (after its writer freed the slot) loses its answer: made once. */
    setenv("DROVER_FAULT", "zk-answer-lost:create:/slotq-lost/free/", 1);
    c = it_session(base, 4000);
    unsetenv("DROVER_FAULT");
    o.n = 1;
    sl = coord_slots_open(c, dir, &o);
    slot_name(base, sl, 0, s0, sizeof(s0));
    snprintf(want, sizeof(want), "%s@0", s0); /* the first session's went with it */
    wait_list(base, w, fdir, want);
    CHECK(take(base, w, dir, s0, 0, "K2") == 0, "take 2");
    wait_trace(base, &v, "a0:K2;");
    coord_slots_done(sl, 0, "K2");
    CHECK(set_slot(base, w, dir, s0, 1, NULL) == 0, "free");
    snprintf(want, sizeof(want), "%s@2", s0);
    wait_list(base, w, fdir, want);
    /* The listing shows the first create (it applied); the resend follows after a backoff. */
    CHECK(it_run_until_fn(base, offered_twice, sl, 20000), "the offer was made again (%llu)",
          (unsigned long long)coord_slots_counters(sl).offers);
    coord_slots_close(sl);
    free(fdir);
    coord_session_free(c);
    coord_session_free(w);
    event_base_free(base);
    printf("slots-lost: ok\n");
    return 0;
}
