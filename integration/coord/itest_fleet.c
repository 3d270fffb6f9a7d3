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
