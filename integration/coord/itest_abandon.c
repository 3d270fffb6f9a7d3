/*
 * itest_abandon: requests a closed handle never answered (issue 34), against a real
 * ZooKeeper. The multi-threaded client library stops its completion thread before it runs
 * the completions still queued when its handle is closed (at an expiry, at
 * coord_session_free), so some requests are never answered; coord answers them itself once
 * the handle is closed (coord__ops_abandon). Which request is caught that way is a race of
 * the library's threads; coord's test hook DROVER_FAULT=zk-answer-held:SUBSTRING[:N]
 * (coord_int.h) makes one deterministically: the answer of the first read of the path is
 * held, as the library holds one it will drop.
 *
 *   abandoned   a children watcher whose first read is held hears nothing (the hook is
 *               real), then, once its session expires, reads again and delivers the list
 *               made meanwhile; a plain read held when the session is freed is answered,
 *               once, DRV_EAGAIN. On the code before, the watcher stayed busy with the
 *               unanswered read for ever and never delivered (a droverd's list of announced
 *               jobs would freeze so), and the read was never answered
 *
 *   lock-release-closed
 *               a lock released (coord_lock_release_done) while its contender's create is in
 *               flight, the create applied and its answer lost (zk-answer-lost), so the
 *               release lists the lock's directory to delete what it made by its prefix
 *               (lock.c cleanup_prefix); that listing is pending when the session expires and
 *               coord replaces the handle, and the library answers it ZCLOSING
 *               (zk-answer-closed holds it and answers it so at the close). The contender went
 *               with the expired session, so the release is done(0), as coord.h promises; on
 *               the code before, cleanup_listed read that ZCLOSING as the session closing and
 *               said DRV_EAGAIN (issue 33 item 6)
 */
#include <string.h>

#include "itest.h"

struct lw {
    int calls;
    int rc;
    size_t n;
    char first[64];
};

static void on_list(int rc, char *const *names, size_t n, const struct coord_stat *st, void *arg)
{
    struct lw *w = arg;
    (void)st;
    w->calls++;
    w->rc = rc;
    w->n = n;
    snprintf(w->first, sizeof(w->first), "%s", n ? names[0] : "");
}

static bool listed_one(void *arg)
{
    const struct lw *w = arg;
    return w->calls > 0 && w->rc == 0 && w->n == 1;
}

/* A session whose first read under prefix has its answer held (then every millionth). */
static struct coord_session *holding(struct event_base *base, const char *prefix)
{
    char spec[256];
    snprintf(spec, sizeof(spec), "zk-answer-held:%s:1000000", prefix);
    setenv("DROVER_FAULT", spec, 1);
    struct coord_session *s = it_session(base, 4000);
    unsetenv("DROVER_FAULT");
    return s;
}

int t_abandoned(void)
{
    struct event_base *base = event_base_new();
    struct coord_session *d = it_session(base, 20000);
    struct it_rc e = {0};
    coord_ensure_path(d, "/drover/itest/ab/w", it_on_rc, &e);
    CHECK(it_run_until(base, &e.done, 20000) && e.rc == 0, "ensure");

    /* The watcher's first read is held: it hears nothing, however long. */
    struct coord_session *s = holding(base, "/drover/itest/ab/w");
    struct lw w = {0};
    struct coord_watcher *cw = coord_watch_children(s, "/drover/itest/ab/w", on_list, &w);
    it_run_for(base, 1500);
    CHECK(w.calls == 0, "the held read was delivered (%d calls): the hook is not real", w.calls);
    e = (struct it_rc){0};
    coord_ensure_path(d, "/drover/itest/ab/w/c1", it_on_rc, &e);
    CHECK(it_run_until(base, &e.done, 20000) && e.rc == 0, "create c1");

    /* The session expires: the closed handle's unanswered read is answered, the watcher
       reads again on the new session and delivers what was made meanwhile. */
    it_expire(s);
    CHECK(it_run_until_fn(base, listed_one, &w, 20000),
          "the watcher never delivered after the expiry (%d calls, rc %d, n %zu)", w.calls, w.rc,
          w.n);
    CHECK(strcmp(w.first, "c1") == 0, "listed %s", w.first);
    coord_watcher_free(cw);
    coord_session_free(s);

    /* A plain read held when its session is freed: answered once, as closed. */
    s = holding(base, "/drover/itest/ab/w");
    struct it_got g = {0};
    coord_get(s, "/drover/itest/ab/w", it_on_got, &g);
    it_run_for(base, 500);
    CHECK(!g.done, "the held read was answered before the free");
    coord_session_free(s);
    it_run_for(base, 200);
    CHECK(g.done && g.rc == DRV_EAGAIN, "the held read, at the free: done %d rc %d", (int)g.done,
          g.rc);

    coord_session_free(d);
    event_base_free(base);
    printf("abandoned: ok\n");
    return 0;
}

/* ---- lock-release-closed --------------------------------------------------------------- */

static bool listed_sent(void *arg)
{
    return coord_session_requests(arg, COORD_REQ_CHILDREN) >= 1;
}

static void on_lock_ignored(struct coord_lock *l, enum coord_lock_event ev, void *arg)
{
    (void)l;
    (void)ev;
    (*(int *)arg)++;
}

int t_lock_release_closed(void)
{
    struct event_base *base = event_base_new();
    struct coord_session *d = it_session(base, 20000);
    const char *dir = "/drover/locks/itest-relclosed";
    struct it_rc e = {0};
    coord_ensure_path(d, dir, it_on_rc, &e);
    CHECK(it_run_until(base, &e.done, 20000) && e.rc == 0, "ensure");

    /* The contender's create applies and loses its answer; the first listing of the
       directory is held, then answered ZCLOSING when the handle is closed. */
    setenv("DROVER_FAULT",
           "zk-answer-lost:create:/drover/locks/itest-relclosed/c-:1000000,"
           "zk-answer-closed:/drover/locks/itest-relclosed:1000000",
           1);
    struct coord_session *s = it_session(base, 4000);
    unsetenv("DROVER_FAULT");
    int events = 0;
    struct coord_lock *l = coord_lock_new(s, dir, "{}", on_lock_ignored, &events);
    CHECK(coord_lock_acquire(l, -1) == 0, "acquire");
    struct it_rc rel = {0};
    coord_lock_release_done(l, it_on_rc, &rel); /* CREATING: settled when the create is answered */
    CHECK(it_run_until_fn(base, listed_sent, s, 20000), "the release never listed the directory");
    it_run_for(base, 500);
    CHECK(!rel.done, "the held listing was answered (rc %d): the hook is not real", rel.rc);
    CHECK(it_children_count(base, d, dir, false) == 1, "the lost create did not apply");

    /* The session expires: coord replaces the handle, the listing hears ZCLOSING. */
    it_expire(s);
    CHECK(it_wait_rc(base, &rel, 20000) == 0,
          "release done(%d) after the handle's replacement, want 0 (the contender went with "
          "the expired session)",
          rel.rc);
    CHECK(rel.calls == 1, "done ran %d times", rel.calls);
    CHECK(it_children_count(base, d, dir, false) == 0, "a contender is left");
    CHECK(events == 0, "the lock's callback heard %d events after its release", events);
    coord_lock_free(l);
    coord_session_free(s);
    coord_session_free(d);
    event_base_free(base);
    printf("lock-release-closed: ok\n");
    return 0;
}
