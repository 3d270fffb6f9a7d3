/*
 * coord_itest: integration tests of src/coord against real ZooKeeper servers.
 *
 *   coord_itest members       join, watch, update, leave at once, re-join after expiry
 *
 * Each test is a subcommand; ctest runs each under scripts/with-stack.
 */
#include <string.h>
#include <unistd.h>

#include "itest.h"
#include "log.h"
#include "xalloc.h"

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

int main(int argc, char **argv)
{
    it_self_path(argv[0]);
    log_init(getenv("DROVER_LOG_DEBUG") ? LOG_DEBUG : LOG_INFO, 2);
    log_route_libraries();
    CHECK(argc >= 2, "usage: coord_itest TEST");
    const char *t = argv[1];
    if (strcmp(t, "members") == 0)
        return t_members();
    CHECK(false, "unknown test \"%s\"", t);
    return 2;
}
