/*
 * watch: reads with the Stat, one-shot watches, re-arming watchers, sync.
 *
 * One-shot watch (struct coord_watch), ZooKeeper's own watch made safe to use
 * from the loop:
 *   1. the read is sent with watch=1 (the session's global watcher);
 *   2. when its answer reaches the loop, the read callback runs, then the
 *      watch is registered for its path (registry.c). Registering at the
 *      answer, not at the send, is exact: the server sends a watch's event
 *      after the answer that set it, on the same connection, and the hand-off
 *      keeps that order, so an event seen after the registration is the
 *      first change after the read, and one seen before it belongs to an
 *      older watch of the same path;
 *   3. get and children of an absent znode set no watch on the server, so an
 *      exists watch is set in their place (fires on creation); if the znode
 *      appeared meanwhile, CREATED fires at once;
 *   4. the first event of a wanted type fires on_event; the watch is then
 *      unregistered and freed. A session expiry fires COORD_EV_SESSION. A
 *      read that failed fires COORD_EV_SESSION after its callback.
 *
 *   READING --answer ok--> ARMED --event / expiry--> FIRED (freed)
 *      |  \--absent (get, children)--> EXISTS --ok--> ARMED / FIRED (created)
 *      +--error--> FIRED (SESSION)
 *   any --cancel--> CANCELLED (freed once no read is in flight)
 *
 * Re-arming watcher (struct coord_watcher): a read with watch, then a read
 * again on every event of its path (one read in flight at most; events
 * during it set `again`), on NEW_SESSION, and with backoff after errors.
 *
 * Cost: one read per one-shot watch (two when absent; a watcher made for a
 * znode that is usually absent looks with an exists first: one); an event is routed in
 * O(1) (hash of the path). Objects are reference counted by their requests.
 */
#include <stdlib.h>
#include <string.h>

#include "coord_int.h"
#include "log.h"
#include "xalloc.h"

#define MOD "coord"

/* ---- plain reads ---------------------------------------------------------- */

struct read_cb {
    coord_get_cb get;
    coord_children_cb children;
    coord_data_cb data;
    coord_list_cb list;
    coord_stat_cb stat;
    coord_done_cb done;
    void *arg;
};

static void got(struct coord__op *op)
{
    struct read_cb *r = op->owner;
    r->get(coord__zrc(op->rc), op->rc == ZOK ? op->value : NULL,
           op->has_stat ? op->stat.version : -1, r->arg);
    free(r);
}

void coord_get(struct coord_session *s, const char *path, coord_get_cb cb, void *arg)
{
    struct read_cb *r = xcalloc(1, sizeof(*r));
    r->get = cb;
    r->arg = arg;
    coord__zk_get(coord__op_new(s, got, r), path, false);
}

static void listed_children(struct coord__op *op)
{
    struct read_cb *r = op->owner;
    r->children(coord__zrc(op->rc), op->strv, op->rc == ZOK ? (size_t)op->strc : 0, r->arg);
    free(r);
}

void coord_children(struct coord_session *s, const char *path, coord_children_cb cb, void *arg)
{
    struct read_cb *r = xcalloc(1, sizeof(*r));
    r->children = cb;
    r->arg = arg;
    coord__zk_children(coord__op_new(s, listed_children, r), path, false);
}

/* Deliver op's answer to the typed callback of r (get, children or exists). */
static void deliver(const struct read_cb *r, const struct coord__op *op)
{
    struct coord_stat st;
    bool ok = op->rc == ZOK && op->has_stat;
    if (ok)
        coord__stat_of(&op->stat, &st);
    int rc = coord__zrc(op->rc);
    if (r->data)
        r->data(rc, op->rc == ZOK ? op->value : NULL, op->rc == ZOK ? (size_t)op->value_len : 0,
                ok ? &st : NULL, r->arg);
    else if (r->list)
        r->list(rc, op->strv, op->rc == ZOK ? (size_t)op->strc : 0, ok ? &st : NULL, r->arg);
    else if (r->stat)
        r->stat(rc, ok ? &st : NULL, r->arg);
}

static void plain_read(struct coord__op *op)
{
    deliver(op->owner, op);
    free(op->owner);
}

static void synced(struct coord__op *op)
{
    struct read_cb *r = op->owner;
    if (r->done)
        r->done(coord__zrc(op->rc), r->arg);
    free(r);
}

void coord_sync(struct coord_session *s, const char *path, coord_done_cb done, void *arg)
{
    struct read_cb *r = xcalloc(1, sizeof(*r));
    r->done = done;
    r->arg = arg;
    coord__zk_sync(coord__op_new(s, synced, r), path);
}

/* ---- one-shot watches --------------------------------------------------------- */

enum wkind { W_GET, W_CHILDREN, W_EXISTS };
enum wstate { WS_READING, WS_EXISTS, WS_ARMED, WS_FIRED, WS_CANCELLED };

struct coord_watch {
    struct coord_session *s;
    char *path;
    enum wkind kind;
    enum wstate st;
    struct read_cb r;
    coord_event_cb on_event;
    int refs; /* a read in flight; the watch while READING, EXISTS or ARMED */
    struct coord__watch *reg;
    bool listening;
};

/*
 * Invariants:
 *   1. registered (reg != NULL) iff ARMED;
 *   2. a session listener iff READING, EXISTS or ARMED;
 *   3. refs >= 1 while not FIRED or CANCELLED.
 */
static void watch_check(const struct coord_watch *w)
{
    if ((w->reg != NULL) != (w->st == WS_ARMED) || w->listening != (w->st <= WS_ARMED) ||
        (w->st <= WS_ARMED && w->refs < 1))
        abort();
}

/* Drop n references. */
static void watch_unref(struct coord_watch *w, int n)
{
    w->refs -= n;
    if (w->refs > 0)
        return;
    free(w->path);
    free(w);
}

static void watch_session(void *owner, enum coord__session_event ev);

/* Leave the live states: unregister, stop listening. */
static void watch_settle(struct coord_watch *w, enum wstate st)
{
    coord__reg_watch_del(&w->s->reg, w->reg);
    w->reg = NULL;
    if (w->listening)
        coord__reg_listener_remove(&w->s->reg, w);
    w->listening = false;
    w->st = st;
    COORD__CHECK(watch_check, w);
}

/* Fire once. The caller holds a reference besides the live one, dropped here. */
static void fire(struct coord_watch *w, enum coord_event ev)
{
    watch_settle(w, WS_FIRED);
    w->on_event(ev, w->path, w->r.arg);
    w->refs--;
}

static void watch_event(void *owner, int type, const char *path)
{
    struct coord_watch *w = owner;
    if (w->st != WS_ARMED)
        return;
    enum coord_event ev = type == ZOO_CREATED_EVENT   ? COORD_EV_CREATED
                          : type == ZOO_DELETED_EVENT ? COORD_EV_DELETED
                          : type == ZOO_CHANGED_EVENT ? COORD_EV_CHANGED
                                                      : COORD_EV_CHILD;
    w->refs++;
    fire(w, ev);
    watch_unref(w, 1);
}

static void watch_session(void *owner, enum coord__session_event ev)
{
    struct coord_watch *w = owner;
    if (ev != COORD__LOST || w->st > WS_ARMED)
        return;
    w->refs++;
    fire(w, COORD_EV_SESSION);
    watch_unref(w, 1);
}

static void arm(struct coord_watch *w, unsigned mask)
{
    w->st = WS_ARMED;
    w->reg = coord__reg_watch_add(&w->s->reg, w->path, mask, w, watch_event);
    COORD__CHECK(watch_check, w);
}

static void exists_set(struct coord__op *op)
{
    struct coord_watch *w = op->owner;
    if (w->st == WS_EXISTS) {
        if (op->gen != w->s->gen || (op->rc != ZOK && op->rc != ZNONODE))
            fire(w, COORD_EV_SESSION);
        else if (op->rc == ZOK)
            fire(w, COORD_EV_CREATED); /* created between the read and this */
        else
            arm(w, COORD__WM_DATA);
    }
    watch_unref(w, 1);
}

static void watch_read(struct coord__op *op)
{
    struct coord_watch *w = op->owner;
    w->refs++; /* the callbacks below may cancel */
    deliver(&w->r, op);
    if (w->st == WS_READING) {
        bool absent = op->rc == ZNONODE;
        if (op->gen != w->s->gen || (op->rc != ZOK && !absent)) {
            fire(w, COORD_EV_SESSION);
        } else if (absent && w->kind != W_EXISTS) {
            w->st = WS_EXISTS;
            w->refs++;
            coord__zk_exists(coord__op_new(w->s, exists_set, w), w->path, true);
        } else {
            arm(w, w->kind == W_CHILDREN ? COORD__WM_CHILD : COORD__WM_DATA);
        }
    }
    watch_unref(w, 2); /* taken above, and the read's */
}

static struct coord_watch *watch_start(struct coord_session *s, const char *path, enum wkind kind,
                                       const struct read_cb *r, coord_event_cb on_event)
{
    if (!on_event) {
        struct read_cb *c = xcalloc(1, sizeof(*c));
        *c = *r;
        struct coord__op *op = coord__op_new(s, plain_read, c);
        if (kind == W_GET)
            coord__zk_get(op, path, false);
        else if (kind == W_CHILDREN)
            coord__zk_children(op, path, false);
        else
            coord__zk_exists(op, path, false);
        return NULL;
    }
    struct coord_watch *w = xcalloc(1, sizeof(*w));
    w->s = s;
    w->path = xstrdup(path);
    w->kind = kind;
    w->r = *r;
    w->on_event = on_event;
    w->refs = 2; /* live, and the read */
    w->st = WS_READING;
    w->listening = true;
    coord__reg_listener_add(&s->reg, w, watch_session);
    struct coord__op *op = coord__op_new(s, watch_read, w);
    if (kind == W_GET)
        coord__zk_get(op, path, true);
    else if (kind == W_CHILDREN)
        coord__zk_children(op, path, true);
    else
        coord__zk_exists(op, path, true);
    return w;
}

struct coord_watch *coord_get_w(struct coord_session *s, const char *path, coord_data_cb cb,
                                coord_event_cb on_event, void *arg)
{
    struct read_cb r = {.data = cb, .arg = arg};
    return watch_start(s, path, W_GET, &r, on_event);
}

struct coord_watch *coord_children_w(struct coord_session *s, const char *path, coord_list_cb cb,
                                     coord_event_cb on_event, void *arg)
{
    struct read_cb r = {.list = cb, .arg = arg};
    return watch_start(s, path, W_CHILDREN, &r, on_event);
}

struct coord_watch *coord_exists_w(struct coord_session *s, const char *path, coord_stat_cb cb,
                                   coord_event_cb on_event, void *arg)
{
    struct read_cb r = {.stat = cb, .arg = arg};
    return watch_start(s, path, W_EXISTS, &r, on_event);
}

void coord_watch_cancel(struct coord_watch *w)
{
    if (!w || w->st > WS_ARMED)
        return;
    watch_settle(w, WS_CANCELLED);
    watch_unref(w, 1);
}

/* ---- re-arming watchers --------------------------------------------------------- */

struct coord_watcher {
    struct coord_session *s;
    char *path;
    bool children;
    struct read_cb r;
    int refs;
    bool dead;
    bool busy;  /* a read in flight */
    bool again; /* an event came during it */
    unsigned tries;
    struct coord__watch *reg;
};

static void watcher_read(struct coord_watcher *w);

static void watcher_unref(struct coord_watcher *w)
{
    if (--w->refs > 0)
        return;
    free(w->path);
    free(w);
}

static void watcher_event(void *owner, int type, const char *path)
{
    struct coord_watcher *w = owner;
    if (w->dead)
        return;
    /* The server's watch is spent: unregister until the next read sets one. */
    coord__reg_watch_del(&w->s->reg, w->reg);
    w->reg = NULL;
    if (w->busy)
        w->again = true;
    else
        watcher_read(w);
}

static void watcher_retry(void *owner)
{
    struct coord_watcher *w = owner;
    if (!w->dead && !w->busy)
        watcher_read(w);
    watcher_unref(w);
}

static void watcher_later(struct coord_watcher *w)
{
    w->refs++;
    coord__timer(w->s, coord__backoff_ms(w->s, w->tries++), watcher_retry, w);
}

static void watcher_exists(struct coord__op *op)
{
    struct coord_watcher *w = op->owner;
    w->busy = false;
    if (w->dead) {
        /* nothing */
    } else if (op->rc == ZNONODE && op->gen == w->s->gen) {
        w->tries = 0;
        w->reg = coord__reg_watch_add(&w->s->reg, w->path, COORD__WM_DATA, w, watcher_event);
        deliver(&w->r, op);
        if (!w->dead && w->again) {
            w->again = false;
            watcher_read(w);
        }
    } else if (op->rc == ZOK || w->again) {
        watcher_read(w); /* created meanwhile, or a new session came */
    } else if (!coord__zrc_session_gone(op->rc)) {
        watcher_later(w);
    }
    watcher_unref(w);
}

static void watcher_got(struct coord__op *op)
{
    struct coord_watcher *w = op->owner;
    w->busy = false;
    if (w->dead) {
        watcher_unref(w);
        return;
    }
    if (op->rc == ZOK && op->gen == w->s->gen) {
        w->tries = 0;
        w->reg = coord__reg_watch_add(
            &w->s->reg, w->path, w->children ? COORD__WM_CHILD : COORD__WM_DATA, w, watcher_event);
        deliver(&w->r, op);
        if (!w->dead && w->again) {
            w->again = false;
            watcher_read(w);
        }
    } else if (op->rc == ZNONODE && op->gen == w->s->gen) {
        /* No watch was set: an exists watch waits for the creation. */
        w->busy = true;
        w->refs++;
        coord__zk_exists(coord__op_new(w->s, watcher_exists, w), w->path, true);
    } else if (coord__zrc_session_gone(op->rc) || op->gen != w->s->gen) {
        /* NEW_SESSION reads again; if it came while this read was in flight, now. */
        if (w->again)
            watcher_read(w);
    } else {
        if (op->rc == ZNOAUTH)
            deliver(&w->r, op);
        if (!w->dead)
            watcher_later(w);
    }
    watcher_unref(w);
}

static void watcher_read(struct coord_watcher *w)
{
    w->busy = true;
    w->again = false;
    w->refs++;
    struct coord__op *op = coord__op_new(w->s, watcher_got, w);
    if (w->children)
        coord__zk_children(op, w->path, true);
    else
        coord__zk_get(op, w->path, true);
}

static void watcher_session(void *owner, enum coord__session_event ev)
{
    struct coord_watcher *w = owner;
    if (w->dead)
        return;
    if (ev == COORD__LOST) {
        coord__reg_watch_del(&w->s->reg, w->reg);
        w->reg = NULL;
    } else if (ev == COORD__NEW_SESSION) {
        if (w->busy)
            w->again = true;
        else
            watcher_read(w);
    }
}

/* The first look of a watcher of a znode that is usually absent: an exists-watch, which
   answers "absent" and waits for the creation in one request (a get would fail and set
   no watch, then the exists). */
static void watcher_look(struct coord_watcher *w)
{
    w->busy = true;
    w->again = false;
    w->refs++;
    coord__zk_exists(coord__op_new(w->s, watcher_exists, w), w->path, true);
}

static struct coord_watcher *watcher_new(struct coord_session *s, const char *path, bool children,
                                         const struct read_cb *r, bool absent)
{
    struct coord_watcher *w = xcalloc(1, sizeof(*w));
    w->s = s;
    w->path = xstrdup(path);
    w->children = children;
    w->r = *r;
    w->refs = 1;
    coord__reg_listener_add(&s->reg, w, watcher_session);
    if (absent)
        watcher_look(w);
    else
        watcher_read(w);
    return w;
}

struct coord_watcher *coord_watch_data(struct coord_session *s, const char *path, coord_data_cb cb,
                                       void *arg)
{
    struct read_cb r = {.data = cb, .arg = arg};
    return watcher_new(s, path, false, &r, false);
}

struct coord_watcher *coord_watch_data_absent(struct coord_session *s, const char *path,
                                              coord_data_cb cb, void *arg)
{
    struct read_cb r = {.data = cb, .arg = arg};
    return watcher_new(s, path, false, &r, true);
}

struct coord_watcher *coord_watch_children(struct coord_session *s, const char *path,
                                           coord_list_cb cb, void *arg)
{
    struct read_cb r = {.list = cb, .arg = arg};
    return watcher_new(s, path, true, &r, false);
}

void coord_watcher_free(struct coord_watcher *w)
{
    if (!w)
        return;
    w->dead = true;
    coord__reg_watch_del(&w->s->reg, w->reg);
    w->reg = NULL;
    coord__reg_listener_remove(&w->s->reg, w);
    watcher_unref(w);
}
