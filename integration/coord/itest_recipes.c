/*
 * itest_recipes: integration tests of the recipes the engine needs (issue 10).
 *
 *   watch              one-shot watches with the Stat (get, children, exists), cancel,
 *                      expiry (COORD_EV_SESSION); re-arming watchers coalesce and come
 *                      back after a new session; sync
 *   lock-release-done  release with a completion: the znode is gone when done runs,
 *                      the next contender takes over; also while creating, idle, expired
 *   lock-orphan        a create answered by a connection loss, the attempt abandoned by its
 *                      deadline while recovering: the next acquire does not wait behind the
 *                      orphan contender of its own session
 *   many-locks         2,000 locks and 2,000 watches on one session, all right
 */
#include <string.h>
#include <unistd.h>

#include "itest.h"
#include "xalloc.h"

static void must(struct event_base *base, struct coord_session *s, const char *what,
                 void (*fn)(struct coord_session *, const char *, coord_done_cb, void *),
                 const char *path)
{
    struct it_rc o = {0};
    fn(s, path, it_on_rc, &o);
    CHECK(it_wait_rc(base, &o, 20000) == 0, "%s %s rc %d", what, path, o.rc);
}

static void write_json(struct event_base *base, struct coord_session *s, const char *path,
                       const char *json, int flags)
{
    struct it_txn o = {0};
    struct coord_txn *t = coord_txn_new();
    if (flags < 0)
        coord_txn_set(t, path, json, -1);
    else
        coord_txn_create(t, path, json, flags);
    coord_txn_commit(s, t, NULL, it_on_txn, &o);
    CHECK(it_run_until(base, &o.done, 20000) && o.rc == 0, "write %s rc %d", path, o.rc);
}

static void remove_path(struct event_base *base, struct coord_session *s, const char *path)
{
    struct it_txn o = {0};
    struct coord_txn *t = coord_txn_new();
    coord_txn_delete(t, path, -1);
    coord_txn_commit(s, t, NULL, it_on_txn, &o);
    CHECK(it_run_until(base, &o.done, 20000) && o.rc == 0, "delete %s rc %d", path, o.rc);
}

/* ---- watch ---------------------------------------------------------------------- */

struct wr {
    bool read;
    int rc;
    char data[256];
    struct coord_stat st;
    bool has_stat;
    size_t n;
    int events;
    enum coord_event ev;
    char ev_path[256];
    struct coord_watch *self;
    bool cancel_in_read;
};

static void on_data(int rc, const char *data, size_t len, const struct coord_stat *st, void *arg)
{
    struct wr *w = arg;
    w->read = true;
    w->rc = rc;
    snprintf(w->data, sizeof(w->data), "%.*s", (int)len, data ? data : "");
    w->has_stat = st != NULL;
    if (st)
        w->st = *st;
    if (w->cancel_in_read)
        coord_watch_cancel(w->self);
}

static void on_list(int rc, char *const *names, size_t n, const struct coord_stat *st, void *arg)
{
    struct wr *w = arg;
    w->read = true;
    w->rc = rc;
    w->n = n;
    w->has_stat = st != NULL;
    if (st)
        w->st = *st;
}

static void on_stat(int rc, const struct coord_stat *st, void *arg)
{
    struct wr *w = arg;
    w->read = true;
    w->rc = rc;
    w->has_stat = st != NULL;
    if (st)
        w->st = *st;
}

static void on_ev(enum coord_event ev, const char *path, void *arg)
{
    struct wr *w = arg;
    w->events++;
    w->ev = ev;
    snprintf(w->ev_path, sizeof(w->ev_path), "%s", path);
    /* Cancelling a fired watch from its own callback is a no-op. */
    coord_watch_cancel(w->self);
}

static bool fired(void *arg)
{
    return ((struct wr *)arg)->events > 0;
}

/* A re-arming watcher's callbacks. */
struct wt {
    int calls;
    int rc;
    char data[256];
    size_t n;
    int32_t version;
};

static void on_wdata(int rc, const char *data, size_t len, const struct coord_stat *st, void *arg)
{
    struct wt *w = arg;
    w->calls++;
    w->rc = rc;
    snprintf(w->data, sizeof(w->data), "%.*s", (int)len, data ? data : "");
    w->version = st ? st->version : -1;
}

static void on_wlist(int rc, char *const *names, size_t n, const struct coord_stat *st, void *arg)
{
    struct wt *w = arg;
    w->calls++;
    w->rc = rc;
    w->n = n;
}

struct wt_want {
    struct wt *w;
    const char *data;
    int rc;
    size_t n;
};

static bool wt_has(void *arg)
{
    struct wt_want *x = arg;
    return x->w->rc == x->rc && (!x->data || strcmp(x->w->data, x->data) == 0) &&
           (x->data || x->w->n == x->n);
}

int t_watch(void)
{
    struct event_base *base = event_base_new();
    struct coord_session *s = it_session(base, 4000);
    struct coord_session *d = it_session(base, 20000);
    must(base, d, "ensure", coord_ensure_path, "/drover/itest/w");

    /* get with a watch: data, Stat, then CHANGED once. */
    write_json(base, d, "/drover/itest/w/a", "{\"v\":1}", 0);
    struct wr a = {0};
    a.self = coord_get_w(s, "/drover/itest/w/a", on_data, on_ev, &a);
    CHECK(a.self, "a watch");
    CHECK(it_run_until(base, &a.read, 20000) && a.rc == 0, "read rc %d", a.rc);
    CHECK(strcmp(a.data, "{\"v\":1}") == 0 && a.has_stat && a.st.version == 0 && a.st.czxid > 0 &&
              a.st.mtime_ms > 0 && a.st.ephemeral_owner == 0 && a.st.data_length == 7,
          "data %s version %d", a.data, a.st.version);
    write_json(base, d, "/drover/itest/w/a", "{\"v\":2}", -1);
    CHECK(it_run_until_fn(base, fired, &a, 20000), "no CHANGED");
    CHECK(a.ev == COORD_EV_CHANGED && strcmp(a.ev_path, "/drover/itest/w/a") == 0, "ev %d %s", a.ev,
          a.ev_path);
    write_json(base, d, "/drover/itest/w/a", "{\"v\":3}", -1);
    it_run_for(base, 300);
    CHECK(a.events == 1, "a one-shot watch fired %d times", a.events);

    /* exists of an absent znode: ENOENT, then CREATED; an ephemeral's owner. */
    struct wr e = {0};
    e.self = coord_exists_w(s, "/drover/itest/w/e", on_stat, on_ev, &e);
    CHECK(it_run_until(base, &e.read, 20000) && e.rc == DRV_ENOENT && !e.has_stat, "exists rc %d",
          e.rc);
    write_json(base, s, "/drover/itest/w/e", "{}", COORD_EPHEMERAL);
    CHECK(it_run_until_fn(base, fired, &e, 20000) && e.ev == COORD_EV_CREATED, "no CREATED");
    struct wr e2 = {0};
    coord_exists_w(s, "/drover/itest/w/e", on_stat, NULL, &e2);
    CHECK(it_run_until(base, &e2.read, 20000) && e2.rc == 0 &&
              e2.st.ephemeral_owner == coord_session_id(s),
          "ephemeral owner");

    /* children: CHILD; get of an absent znode waits for its creation. */
    struct wr c = {0};
    c.self = coord_children_w(s, "/drover/itest/w", on_list, on_ev, &c);
    CHECK(it_run_until(base, &c.read, 20000) && c.rc == 0 && c.n == 2 && c.st.num_children == 2,
          "children rc %d n %zu", c.rc, c.n);
    struct wr g = {0};
    g.self = coord_get_w(s, "/drover/itest/w/later", on_data, on_ev, &g);
    CHECK(it_run_until(base, &g.read, 20000) && g.rc == DRV_ENOENT, "absent get rc %d", g.rc);
    it_run_for(base, 100);
    write_json(base, d, "/drover/itest/w/later", "{}", 0);
    CHECK(it_run_until_fn(base, fired, &c, 20000) && c.ev == COORD_EV_CHILD, "no CHILD");
    CHECK(it_run_until_fn(base, fired, &g, 20000) && g.ev == COORD_EV_CREATED, "no CREATED");

    /* Cancelled (before, and from inside the read callback): nothing fires. */
    struct wr x = {0}, y = {.cancel_in_read = true};
    x.self = coord_get_w(s, "/drover/itest/w/later", on_data, on_ev, &x);
    y.self = coord_get_w(s, "/drover/itest/w/later", on_data, on_ev, &y);
    CHECK(it_run_until(base, &x.read, 20000) && it_run_until(base, &y.read, 20000), "reads");
    coord_watch_cancel(x.self);
    remove_path(base, d, "/drover/itest/w/later");
    it_run_for(base, 300);
    CHECK(x.events == 0 && y.events == 0, "cancelled watches fired %d %d", x.events, y.events);

    /* Watchers: first read, one read per change (coalesced), absent, recreated. */
    struct wt wd = {0}, wc = {0};
    struct coord_watcher *w1 = coord_watch_data(s, "/drover/itest/w/a", on_wdata, &wd);
    struct coord_watcher *w2 = coord_watch_children(s, "/drover/itest/w", on_wlist, &wc);
    struct wt_want want = {&wd, "{\"v\":3}", 0, 0};
    CHECK(it_run_until_fn(base, wt_has, &want, 20000), "watcher first read %s", wd.data);
    struct wt_want wantc = {&wc, NULL, 0, 2};
    CHECK(it_run_until_fn(base, wt_has, &wantc, 20000), "children watcher %zu", wc.n);
    int before = wd.calls;
    for (int i = 4; i <= 8; i++) {
        char j[32];
        snprintf(j, sizeof(j), "{\"v\":%d}", i);
        write_json(base, d, "/drover/itest/w/a", j, -1);
    }
    want.data = "{\"v\":8}";
    CHECK(it_run_until_fn(base, wt_has, &want, 20000), "watcher saw %s", wd.data);
    CHECK(wd.calls - before <= 5, "%d callbacks for 5 changes", wd.calls - before);
    remove_path(base, d, "/drover/itest/w/a");
    want = (struct wt_want){&wd, "", DRV_ENOENT, 0};
    CHECK(it_run_until_fn(base, wt_has, &want, 20000), "watcher rc %d", wd.rc);
    wantc.n = 1;
    CHECK(it_run_until_fn(base, wt_has, &wantc, 20000), "children watcher %zu", wc.n);
    write_json(base, d, "/drover/itest/w/a", "{\"v\":9}", 0);
    want = (struct wt_want){&wd, "{\"v\":9}", 0, 0};
    CHECK(it_run_until_fn(base, wt_has, &want, 20000), "watcher after creation %s", wd.data);

    /* Expiry: armed watches hear SESSION; watchers read again on the new session. */
    struct wr z = {0};
    z.self = coord_exists_w(s, "/drover/itest/w/a", on_stat, on_ev, &z);
    CHECK(it_run_until(base, &z.read, 20000), "z read");
    int calls = wd.calls;
    it_expire(s);
    CHECK(it_run_until_fn(base, fired, &z, 20000) && z.ev == COORD_EV_SESSION, "z ev %d", z.ev);
    for (int i = 0; i < 2000 && wd.calls == calls; i++)
        it_run_for(base, 10);
    CHECK(wd.calls > calls && wd.rc == 0 && strcmp(wd.data, "{\"v\":9}") == 0,
          "no read after the new session");
    write_json(base, d, "/drover/itest/w/a", "{\"v\":10}", -1);
    want = (struct wt_want){&wd, "{\"v\":10}", 0, 0};
    CHECK(it_run_until_fn(base, wt_has, &want, 20000), "watcher after expiry %s", wd.data);

    /* No callback after free. */
    coord_watcher_free(w1);
    coord_watcher_free(w2);
    calls = wd.calls;
    write_json(base, d, "/drover/itest/w/a", "{\"v\":11}", -1);
    it_run_for(base, 300);
    CHECK(wd.calls == calls, "a freed watcher was called");

    struct it_rc sy = {0};
    coord_sync(s, "/drover/itest/w", it_on_rc, &sy);
    CHECK(it_wait_rc(base, &sy, 20000) == 0, "sync rc %d", sy.rc);
    coord_session_free(s);
    coord_session_free(d);
    event_base_free(base);
    printf("watch: ok\n");
    return 0;
}

/* ---- lock-release-done ----------------------------------------------------------------- */

struct lk {
    enum coord_lock_event last;
    int events;
};

static void on_lock(struct coord_lock *l, enum coord_lock_event ev, void *arg)
{
    struct lk *k = arg;
    k->last = ev;
    k->events++;
}

static bool lk_event(void *arg)
{
    return ((struct lk *)arg)->last != 0;
}

struct gone {
    struct event_base *base;
    struct coord_session *d;
    char node[256];
    bool done;
    int rc;
    int present; /* the node at the time done ran, per a read issued then */
};

static void on_exists_at_done(int rc, const struct coord_stat *st, void *arg)
{
    struct gone *g = arg;
    g->present = rc == 0;
    g->done = true;
}

static void on_released(int rc, void *arg)
{
    struct gone *g = arg;
    g->rc = rc;
    /* Read through another session: the znode must be gone already. */
    coord_exists_w(g->d, g->node, on_exists_at_done, NULL, g);
}

int t_lock_release_done(void)
{
    struct event_base *base = event_base_new();
    struct coord_session *sa = it_session(base, 4000), *sb = it_session(base, 20000);
    struct coord_session *d = it_session(base, 20000);
    const char *dir = "/drover/locks/itest-reldone";
    struct lk ka = {0}, kb = {0};
    struct coord_lock *a = coord_lock_new(sa, dir, "{}", on_lock, &ka);
    struct coord_lock *b = coord_lock_new(sb, dir, "{}", on_lock, &kb);
    coord_lock_acquire(a, -1);
    CHECK(it_run_until_fn(base, lk_event, &ka, 20000) && ka.last == COORD_LOCK_ACQUIRED, "a");
    coord_lock_acquire(b, -1);
    while (!coord_lock_waiting_on(b))
        it_run_for(base, 10);
    /* Hand-over: done runs once a's znode is gone on the server; then b holds it. */
    struct gone g = {.base = base, .d = d};
    snprintf(g.node, sizeof(g.node), "%s", coord_lock_node(a));
    coord_lock_release_done(a, on_released, &g);
    CHECK(it_run_until(base, &g.done, 20000), "release never done");
    CHECK(g.rc == 0 && !g.present, "done(%d) while the znode is still there (%d)", g.rc, g.present);
    CHECK(it_run_until_fn(base, lk_event, &kb, 20000) && kb.last == COORD_LOCK_ACQUIRED, "b");
    CHECK(ka.events == 1, "a heard %d events", ka.events);

    /* Idle: done(0) at once. Released while its create is in flight: nothing left behind. */
    struct it_rc idle = {0};
    coord_lock_release_done(a, it_on_rc, &idle);
    CHECK(it_wait_rc(base, &idle, 20000) == 0, "idle rc %d", idle.rc);
    struct it_rc early = {0};
    coord_lock_acquire(a, -1);
    coord_lock_release_done(a, it_on_rc, &early);
    CHECK(it_wait_rc(base, &early, 20000) == 0, "early rc %d", early.rc);
    CHECK(it_children_count(base, d, dir, false) == 1, "%zu contenders left, want b's only",
          it_children_count(base, d, dir, false));

    /* The holder's session expired: done(0) all the same (the znode went with it). */
    struct lk kc = {0};
    coord_lock_release_done(b, NULL, NULL);
    struct coord_lock *c = coord_lock_new(sa, dir, "{}", on_lock, &kc);
    coord_lock_acquire(c, -1);
    CHECK(it_run_until_fn(base, lk_event, &kc, 20000) && kc.last == COORD_LOCK_ACQUIRED, "c");
    it_expire(sa);
    struct it_rc ex = {0};
    coord_lock_release_done(c, it_on_rc, &ex);
    CHECK(it_wait_rc(base, &ex, 20000) == 0, "expired rc %d", ex.rc);
    coord_lock_free(a);
    coord_lock_free(b);
    coord_lock_free(c);
    coord_session_free(sa);
    coord_session_free(sb);
    coord_session_free(d);
    event_base_free(base);
    printf("lock-release-done: ok\n");
    return 0;
}

/* ---- lock-orphan ----------------------------------------------------------------------- */

/*
 * A create whose answer is lost (applied on the server), then the deadline
 * abandons the attempt before the recovery could look: the next acquire must
 * not wait behind that orphan contender of its own session.
 */
int t_lock_orphan(void)
{
    struct event_base *base = event_base_new();
    struct coord_session *d = it_session(base, 20000);
    struct it_proxy *p = it_proxy_new(it_zk_port(1));
    struct coord_session *s = it_session_at(base, it_proxy_addr(p), 20000);
    const char *dir = "/drover/locks/itest-orphan";
    must(base, d, "ensure", coord_ensure_path, dir);
    struct lk k = {0};
    struct coord_lock *l = coord_lock_new(s, dir, "{}", on_lock, &k);
    it_proxy_set_swallow(p, 15 /* create2 */);
    coord_lock_acquire(l, 1500);
    for (int w = 0; w < 500 && it_children_count(base, d, dir, false) == 0; w++)
        it_run_for(base, 10);
    CHECK(it_children_count(base, d, dir, false) == 1, "the create did not reach the server");
    it_proxy_set_down(p, true);
    it_proxy_cut_all(p);
    it_proxy_set_swallow(p, 0);
    CHECK(it_run_until_fn(base, lk_event, &k, 20000) && k.last == COORD_LOCK_TIMEDOUT, "event %d",
          k.last);
    it_proxy_set_down(p, false);
    k.last = 0;
    coord_lock_acquire(l, -1);
    CHECK(it_run_until_fn(base, lk_event, &k, 20000) && k.last == COORD_LOCK_ACQUIRED,
          "the lock waits behind its own orphan contender (event %d)", k.last);
    it_run_for(base, 300);
    CHECK(it_children_count(base, d, dir, false) == 1, "%zu contenders, want the holder only",
          it_children_count(base, d, dir, false));
    coord_lock_free(l);
    coord_session_free(s);
    coord_session_free(d);
    event_base_free(base);
    printf("lock-orphan: ok\n");
    return 0;
}

/* ---- many-locks ------------------------------------------------------------------------ */

enum { MANY = 2000 };

static long many_acquired, many_released, many_fired;

static void on_many_lock(struct coord_lock *l, enum coord_lock_event ev, void *arg)
{
    CHECK(ev == COORD_LOCK_ACQUIRED, "lock event %d", ev);
    many_acquired++;
}

static void on_many_released(int rc, void *arg)
{
    CHECK(rc == 0, "release rc %d", rc);
    many_released++;
}

static void on_many_stat(int rc, const struct coord_stat *st, void *arg)
{
}

static void on_many_ev(enum coord_event ev, const char *path, void *arg)
{
    CHECK(ev == COORD_EV_CREATED, "event %d", ev);
    CHECK(strcmp(path, arg) == 0, "event for %s on the watch of %s", path, (char *)arg);
    many_fired++;
}

static bool counted(void *arg)
{
    return *(long *)arg >= MANY;
}

int t_many_locks(void)
{
    struct event_base *base = event_base_new();
    struct coord_session *s = it_session(base, 20000), *d = it_session(base, 20000);
    struct coord_lock **l = xcalloc(MANY, sizeof(*l));
    for (int i = 0; i < MANY; i++) {
        char dir[64];
        snprintf(dir, sizeof(dir), "/drover/locks/itest-many/l%d", i);
        l[i] = coord_lock_new(s, dir, "{}", on_many_lock, NULL);
        coord_lock_acquire(l[i], -1);
    }
    CHECK(it_run_until_fn(base, counted, &many_acquired, 120000), "acquired %ld", many_acquired);
    char **paths = xcalloc(MANY, sizeof(char *));
    must(base, d, "ensure", coord_ensure_path, "/drover/itest/many");
    for (int i = 0; i < MANY; i++) {
        paths[i] = xasprintf("/drover/itest/many/w%d", i);
        coord_exists_w(s, paths[i], on_many_stat, on_many_ev, paths[i]);
    }
    struct it_rc sy = {0};
    coord_sync(s, "/drover/itest/many", it_on_rc, &sy);
    CHECK(it_wait_rc(base, &sy, 20000) == 0, "sync");
    for (int i = 0; i < MANY; i++)
        coord_ensure_path(d, paths[i], NULL, NULL);
    CHECK(it_run_until_fn(base, counted, &many_fired, 120000), "fired %ld", many_fired);
    for (int i = 0; i < MANY; i++)
        coord_lock_release_done(l[i], on_many_released, NULL);
    CHECK(it_run_until_fn(base, counted, &many_released, 120000), "released %ld", many_released);
    it_run_for(base, 200);
    CHECK(many_fired == MANY && many_acquired == MANY, "fired %ld acquired %ld", many_fired,
          many_acquired);
    for (int i = 0; i < MANY; i++) {
        coord_lock_free(l[i]);
        free(paths[i]);
    }
    free(l);
    free(paths);
    coord_session_free(s);
    coord_session_free(d);
    event_base_free(base);
    printf("many-locks: ok (%d locks, %d watches on one session)\n", MANY, MANY);
    return 0;
}

/* ---- upsert ------------------------------------------------------------------------- */

/* coord_upsert: creates what is missing, sets what is there, and two writers racing to create
   the same znode both succeed (the loser sets); a missing parent is an error, not a loop. */
int t_upsert(void)
{
    struct event_base *base = event_base_new();
    struct coord_session *s = it_session(base, 20000), *d = it_session(base, 20000);
    must(base, d, "ensure", coord_ensure_path, "/drover/itest/put");

    struct it_rc o = {0};
    coord_upsert(s, "/drover/itest/put/a", "{\"v\":1}", it_on_rc, &o);
    CHECK(it_wait_rc(base, &o, 20000) == 0, "put of a missing znode: rc %d", o.rc);
    struct it_got g = it_get(base, d, "/drover/itest/put/a");
    CHECK(g.rc == 0 && strcmp(g.data, "{\"v\":1}") == 0 && g.version == 0, "created: %s v%d",
          g.data, g.version);

    o = (struct it_rc){0};
    coord_upsert(s, "/drover/itest/put/a", "{\"v\":2}", it_on_rc, &o);
    CHECK(it_wait_rc(base, &o, 20000) == 0, "put of an existing znode: rc %d", o.rc);
    g = it_get(base, d, "/drover/itest/put/a");
    CHECK(strcmp(g.data, "{\"v\":2}") == 0 && g.version == 1, "set: %s v%d", g.data, g.version);

    /* Two sessions put the same missing znode in the same turn: one creates, the other's
       set finds nothing, its create then finds the first's znode, and it sets. */
    struct it_rc o1 = {0}, o2 = {0};
    coord_upsert(s, "/drover/itest/put/b", "{\"by\":1}", it_on_rc, &o1);
    coord_upsert(d, "/drover/itest/put/b", "{\"by\":2}", it_on_rc, &o2);
    CHECK(it_wait_rc(base, &o1, 20000) == 0 && it_wait_rc(base, &o2, 20000) == 0,
          "racing puts: rc %d %d", o1.rc, o2.rc);
    g = it_get(base, d, "/drover/itest/put/b");
    CHECK(g.rc == 0 && (strcmp(g.data, "{\"by\":1}") == 0 || strcmp(g.data, "{\"by\":2}") == 0),
          "raced: %s", g.data);

    o = (struct it_rc){0};
    coord_upsert(s, "/drover/itest/put/none/c", "{}", it_on_rc, &o);
    CHECK(it_wait_rc(base, &o, 20000) == DRV_ECONFLICT, "put under a missing parent: rc %d", o.rc);
    g = it_get(base, d, "/drover/itest/put/none/c");
    CHECK(g.rc == DRV_ENOENT, "under a missing parent: rc %d", g.rc);

    coord_upsert(s, "/drover/itest/put/d", "{}", NULL, NULL); /* done may be NULL */
    for (int i = 0; i < 200 && it_get(base, d, "/drover/itest/put/d").rc != 0; i++)
        it_run_for(base, 10);
    CHECK(it_get(base, d, "/drover/itest/put/d").rc == 0, "put without a callback");

    coord_session_free(s);
    coord_session_free(d);
    event_base_free(base);
    printf("upsert: ok\n");
    return 0;
}
