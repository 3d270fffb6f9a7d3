/*
 * session: one ZooKeeper session driven from a libevent loop.
 *
 * Threads. ZooKeeper's multi-threaded client runs an I/O thread and a
 * completion thread; every completion and every watch event runs on the
 * completion thread, in server order. Those callbacks only copy the result into
 * the struct coord__op (or an event item) and append it to this session's
 * hand-off queue under a mutex; when the queue turns non-empty they write the
 * eventfd. The loop thread reads the eventfd, takes the whole queue under the
 * mutex and runs each item in order, outside the mutex. So every piece of
 * coord state is touched by the loop thread only, ordering is ZooKeeper's, and
 * no ZooKeeper call (blocking or not) is made from a ZooKeeper thread. The
 * eventfd needs no libevent threading support (evthread_use_pthreads is not
 * required, though harmless).
 *
 * Expiry. The old handle is closed and a new one made on the loop thread, in
 * this order: every listener hears LOST (locks report COORD_LOCK_LOST), then
 * the owner hears EXPIRED, then the new handle starts. Once it is connected,
 * listeners hear NEW_SESSION (members re-join, watches re-arm), then the owner
 * hears CONNECTED. Items from an older handle are recognised by their
 * generation and dropped (completions still run, with their error).
 */
#include <errno.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "coord_int.h"
#include "log.h"
#include "xalloc.h"

#define MOD "coord"

/* What a handle's callbacks need: the session and which handle this is. */
struct handle_ctx {
    struct coord_session *s;
    unsigned gen;
};

const char *coord_state_name(enum coord_state st)
{
    switch (st) {
    case COORD_CONNECTING:
        return "connecting";
    case COORD_CONNECTED:
        return "connected";
    case COORD_SUSPENDED:
        return "suspended";
    case COORD_EXPIRED:
        return "expired";
    case COORD_AUTH_FAILED:
        return "auth-failed";
    case COORD_CLOSED:
        return "closed";
    }
    return "unknown";
}

int coord__zrc(int zrc)
{
    switch (zrc) {
    case ZOK:
        return 0;
    case ZNONODE:
        return DRV_ENOENT;
    case ZNODEEXISTS:
        return DRV_EEXIST;
    case ZBADVERSION:
        return DRV_ECONFLICT;
    case ZNOAUTH:
    case ZAUTHFAILED:
        return DRV_EPERM;
    case ZCONNECTIONLOSS:
    case ZOPERATIONTIMEOUT:
    case ZINVALIDSTATE:
    case ZSESSIONEXPIRED:
    case ZCLOSING:
    case ZSESSIONMOVED:
        return DRV_EAGAIN;
    case ZBADARGUMENTS:
        return DRV_EINVAL;
    default:
        return DRV_EZK;
    }
}

bool coord__zrc_unknown(int zrc)
{
    return zrc == ZCONNECTIONLOSS || zrc == ZOPERATIONTIMEOUT;
}

int64_t coord__now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t coord__seq_of(const char *name)
{
    size_t n = strlen(name);
    if (n < 10)
        return -1;
    int64_t v = 0;
    for (size_t i = n - 10; i < n; i++) {
        if (name[i] < '0' || name[i] > '9')
            return -1;
        v = v * 10 + (name[i] - '0');
    }
    return v;
}

const char *coord__basename(const char *path)
{
    const char *p = strrchr(path, '/');
    return p ? p + 1 : path;
}

void coord__unique_prefix(struct coord_session *s, char *buf, size_t n)
{
    const clientid_t *cid = s->zh ? zoo_client_id(s->zh) : NULL;
    snprintf(buf, n, "%016llx-%llx-", (unsigned long long)(cid ? cid->client_id : 0),
             (unsigned long long)++s->uniq);
}

/* ---- the hand-off queue ------------------------------------------------ */

/*
 * Queue op for the loop, once. Called with s->mu held; returns whether the
 * loop must be woken. An op is queued at most once: by its completion or, when
 * the client library refused the request at once, by the issuer (see issued()).
 */
static bool enqueue_locked(struct coord_session *s, struct coord__op *op)
{
    bool was_empty = s->q_head == NULL;
    op->queued = true;
    op->next = NULL;
    if (s->q_tail)
        s->q_tail->next = op;
    else
        s->q_head = op;
    s->q_tail = op;
    if (s->draining)
        pthread_cond_broadcast(&s->cond);
    return was_empty;
}

static void wake(struct coord_session *s)
{
    uint64_t one = 1;
    ssize_t w;
    do {
        w = write(s->efd, &one, sizeof(one));
    } while (w < 0 && errno == EINTR);
}

static void push(struct coord_session *s, struct coord__op *op)
{
    pthread_mutex_lock(&s->mu);
    bool w = enqueue_locked(s, op);
    pthread_mutex_unlock(&s->mu);
    if (w)
        wake(s);
}

/*
 * A completion starts here: false when the op was already queued by its
 * issuer (an immediate failure), in which case the completion must not touch
 * it. On true the caller fills the op and calls completion_end(), all under
 * s->mu, so that the issuer never sees a half-filled op.
 */
static bool completion_begin(struct coord__op *op)
{
    pthread_mutex_lock(&op->s->mu);
    if (op->queued) {
        pthread_mutex_unlock(&op->s->mu);
        return false;
    }
    return true;
}

static void completion_end(struct coord__op *op)
{
    struct coord_session *s = op->s;
    bool w = enqueue_locked(s, op);
    pthread_mutex_unlock(&s->mu);
    if (w)
        wake(s);
}

static void noop_done(struct coord__op *op)
{
}

struct coord__op *coord__op_new(struct coord_session *s, void (*done)(struct coord__op *),
                                void *owner)
{
    struct coord__op *op = xcalloc(1, sizeof(*op));
    op->s = s;
    op->done = done ? done : noop_done;
    op->owner = owner;
    op->gen = s->gen;
    return op;
}

void coord__op_free(struct coord__op *op)
{
    if (!op)
        return;
    free(op->value);
    if (op->strv) {
        for (int i = 0; i < op->strc; i++)
            free(op->strv[i]);
        free(op->strv);
    }
    for (int i = 0; i < op->nops; i++)
        free(op->bufs[i]);
    free(op->bufs);
    free(op->ops);
    free(op->results);
    for (int i = 0; i < op->nstrs; i++)
        free(op->strs[i]);
    free(op->strs);
    free(op->path);
    free(op);
}

/* ---- completions: ZooKeeper's completion thread ------------------------- */

static void c_void(int rc, const void *data)
{
    struct coord__op *op = (struct coord__op *)data;
    if (!completion_begin(op))
        return;
    op->rc = rc;
    completion_end(op);
}

static void c_stat(int rc, const struct Stat *stat, const void *data)
{
    struct coord__op *op = (struct coord__op *)data;
    if (!completion_begin(op))
        return;
    op->rc = rc;
    if (rc == ZOK && stat) {
        op->stat = *stat;
        op->has_stat = true;
    }
    completion_end(op);
}

static void c_string_stat(int rc, const char *value, const struct Stat *stat, const void *data)
{
    struct coord__op *op = (struct coord__op *)data;
    if (!completion_begin(op))
        return;
    op->rc = rc;
    if (rc == ZOK && value)
        op->value = xstrdup(value);
    if (rc == ZOK && stat) {
        op->stat = *stat;
        op->has_stat = true;
    }
    completion_end(op);
}

static void c_data(int rc, const char *value, int value_len, const struct Stat *stat,
                   const void *data)
{
    struct coord__op *op = (struct coord__op *)data;
    if (!completion_begin(op))
        return;
    op->rc = rc;
    if (rc == ZOK) {
        int n = value && value_len > 0 ? value_len : 0;
        op->value = xmalloc((size_t)n + 1);
        if (n)
            memcpy(op->value, value, (size_t)n);
        op->value[n] = '\0';
        op->value_len = n;
        if (stat) {
            op->stat = *stat;
            op->has_stat = true;
        }
    }
    completion_end(op);
}

static void c_strings_stat(int rc, const struct String_vector *strings, const struct Stat *stat,
                           const void *data)
{
    struct coord__op *op = (struct coord__op *)data;
    if (!completion_begin(op))
        return;
    op->rc = rc;
    if (rc == ZOK && strings) {
        op->strc = strings->count;
        op->strv = xcalloc((size_t)(strings->count ? strings->count : 1), sizeof(char *));
        for (int i = 0; i < strings->count; i++)
            op->strv[i] = xstrdup(strings->data[i]);
    }
    if (rc == ZOK && stat) {
        op->stat = *stat;
        op->has_stat = true;
    }
    completion_end(op);
}

static void watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    struct handle_ctx *hc = ctx;
    struct coord_session *s = hc->s;
    if (type == ZOO_SESSION_EVENT) {
        pthread_mutex_lock(&s->mu);
        if (hc->gen == s->gen) {
            s->zk_state = state;
            pthread_cond_broadcast(&s->cond);
        }
        pthread_mutex_unlock(&s->mu);
    }
    struct coord__op *op = xcalloc(1, sizeof(*op));
    op->s = s;
    op->gen = hc->gen;
    op->ev_type = type;
    op->ev_state = state;
    op->path = xstrdup(path ? path : "");
    push(s, op);
}

/* ---- issuing (loop thread) -------------------------------------------- */

/* After coord_session_free closed the handle, requests fail at once with ZCLOSING. */
/*
 * ... and on a handle whose session has expired, they fail at once with
 * ZINVALIDSTATE without calling the client library, whose multi-op call
 * frees memory it does not own when it refuses a request on such a handle.
 */
#define CLOSED_GUARD(op)                                                                           \
    do {                                                                                           \
        int zst_ = (op)->s->zh ? zoo_state((op)->s->zh) : 0;                                       \
        if (!(op)->s->zh || zst_ == ZOO_EXPIRED_SESSION_STATE || zst_ == ZOO_AUTH_FAILED_STATE) {  \
            (op)->rc = (op)->s->zh ? ZINVALIDSTATE : ZCLOSING;                                     \
            push((op)->s, (op));                                                                   \
            return;                                                                                \
        }                                                                                          \
    } while (0)

static void issued(struct coord__op *op, int zrc)
{
    struct coord_session *s = op->s;
    op->counted = true;
    s->inflight++;
    if (zrc == ZOK)
        return;
    /*
     * Refused at once. The client library may still have registered the
     * completion (it does for some late failures), so queue the failure
     * ourselves unless the completion already did, and keep the op alive
     * until the handle is closed (see the zombie list) in case it fires.
     */
    pthread_mutex_lock(&s->mu);
    bool w = false;
    if (!op->queued) {
        op->rc = zrc;
        op->zombie = true;
        w = enqueue_locked(s, op);
    }
    pthread_mutex_unlock(&s->mu);
    if (w)
        wake(s);
}

void coord__zk_create(struct coord__op *op, const char *path, const char *data, int flags)
{
    struct coord_session *s = op->s;
    op->path = xstrdup(path);
    CLOSED_GUARD(op);
    int mode = ((flags & COORD_EPHEMERAL) ? ZOO_EPHEMERAL : ZOO_PERSISTENT) |
               ((flags & COORD_SEQUENTIAL) ? ZOO_SEQUENCE : 0);
    if (flags & COORD__CONTAINER)
        mode = ZOO_CONTAINER;
    issued(op, zoo_acreate2(s->zh, path, data, data ? (int)strlen(data) : -1, s->acl, mode,
                            c_string_stat, op));
}

void coord__zk_delete(struct coord__op *op, const char *path, int version)
{
    op->path = xstrdup(path);
    CLOSED_GUARD(op);
    issued(op, zoo_adelete(op->s->zh, path, version, c_void, op));
}

void coord__zk_exists(struct coord__op *op, const char *path, bool watch)
{
    op->path = xstrdup(path);
    CLOSED_GUARD(op);
    issued(op, zoo_aexists(op->s->zh, path, watch, c_stat, op));
}

void coord__zk_get(struct coord__op *op, const char *path, bool watch)
{
    op->path = xstrdup(path);
    CLOSED_GUARD(op);
    issued(op, zoo_aget(op->s->zh, path, watch, c_data, op));
}

void coord__zk_set(struct coord__op *op, const char *path, const char *data, int version)
{
    op->path = xstrdup(path);
    CLOSED_GUARD(op);
    issued(op, zoo_aset(op->s->zh, path, data, (int)strlen(data), version, c_stat, op));
}

void coord__zk_children(struct coord__op *op, const char *path, bool watch)
{
    op->path = xstrdup(path);
    CLOSED_GUARD(op);
    issued(op, zoo_aget_children2(op->s->zh, path, watch, c_strings_stat, op));
}

void coord__multi_init(struct coord__op *op, int n)
{
    op->nops = n;
    op->ops = xcalloc((size_t)n, sizeof(zoo_op_t));
    op->results = xcalloc((size_t)n, sizeof(zoo_op_result_t));
    op->bufs = xcalloc((size_t)n, sizeof(char *));
    op->strs = xcalloc((size_t)n * 2, sizeof(char *));
}

static const char *keep(struct coord__op *op, const char *str)
{
    char *c = xstrdup(str);
    op->strs[op->nstrs++] = c;
    return c;
}

void coord__mop_create(struct coord__op *op, int i, const char *path, const char *data, int flags)
{
    int mode = ((flags & COORD_EPHEMERAL) ? ZOO_EPHEMERAL : ZOO_PERSISTENT) |
               ((flags & COORD_SEQUENTIAL) ? ZOO_SEQUENCE : 0);
    size_t blen = strlen(path) + 16;
    op->bufs[i] = xcalloc(1, blen);
    const char *d = data ? keep(op, data) : NULL;
    zoo_create_op_init(&op->ops[i], keep(op, path), d, d ? (int)strlen(d) : -1, op->s->acl, mode,
                       op->bufs[i], (int)blen);
}

void coord__mop_delete(struct coord__op *op, int i, const char *path, int version)
{
    zoo_delete_op_init(&op->ops[i], keep(op, path), version);
}

void coord__mop_set(struct coord__op *op, int i, const char *path, const char *data, int version)
{
    const char *p = keep(op, path);
    const char *d = keep(op, data);
    zoo_set_op_init(&op->ops[i], p, d, (int)strlen(d), version, NULL);
}

void coord__mop_check(struct coord__op *op, int i, const char *path, int version)
{
    zoo_check_op_init(&op->ops[i], keep(op, path), version);
}

void coord__zk_multi(struct coord__op *op)
{
    CLOSED_GUARD(op);
    int zrc = zoo_amulti(op->s->zh, op->nops, op->ops, op->results, c_void, op);
    if (zrc != ZOK) {
        /* The library may have freed some of the op's strings: leak them rather. */
        op->nstrs = 0;
    }
    issued(op, zrc);
}

/* ---- listeners and watches -------------------------------------------- */

void coord__listener_add(struct coord_session *s, void *owner,
                         void (*fn)(void *owner, enum coord__session_event ev))
{
    XGROW(s->listeners, s->cap_listeners, s->n_listeners + 1);
    s->listeners[s->n_listeners++] = (struct coord__listener){.fn = fn, .owner = owner};
}

void coord__listener_remove(struct coord_session *s, void *owner)
{
    for (size_t i = 0; i < s->n_listeners; i++)
        if (s->listeners[i].owner == owner) {
            s->listeners[i].fn = NULL;
            s->listeners[i].owner = NULL;
            s->dirty = true;
        }
}

void coord__watch_add(struct coord_session *s, const char *path, void *owner,
                      void (*fn)(void *owner, int type, const char *path))
{
    for (size_t i = 0; i < s->n_watches; i++)
        if (s->watches[i].owner == owner && s->watches[i].fn == fn &&
            strcmp(s->watches[i].path, path) == 0)
            return;
    XGROW(s->watches, s->cap_watches, s->n_watches + 1);
    s->watches[s->n_watches++] =
        (struct coord__watch){.path = xstrdup(path), .fn = fn, .owner = owner};
}

void coord__watch_remove(struct coord_session *s, void *owner)
{
    for (size_t i = 0; i < s->n_watches; i++)
        if (s->watches[i].owner == owner) {
            s->watches[i].fn = NULL;
            s->watches[i].owner = NULL;
            s->dirty = true;
        }
}

static void compact(struct coord_session *s)
{
    if (s->dispatching || !s->dirty)
        return;
    size_t j = 0;
    for (size_t i = 0; i < s->n_listeners; i++)
        if (s->listeners[i].fn)
            s->listeners[j++] = s->listeners[i];
    s->n_listeners = j;
    j = 0;
    for (size_t i = 0; i < s->n_watches; i++) {
        if (s->watches[i].fn)
            s->watches[j++] = s->watches[i];
        else
            free(s->watches[i].path);
    }
    s->n_watches = j;
    s->dirty = false;
}

static void tell_listeners(struct coord_session *s, enum coord__session_event ev)
{
    s->dispatching++;
    for (size_t i = 0; i < s->n_listeners; i++)
        if (s->listeners[i].fn)
            s->listeners[i].fn(s->listeners[i].owner, ev);
    s->dispatching--;
    compact(s);
}

static void dispatch_watch(struct coord_session *s, int type, const char *path)
{
    s->dispatching++;
    /* Entries added during dispatch are not called for this event. */
    size_t n = s->n_watches;
    for (size_t i = 0; i < n; i++)
        if (s->watches[i].fn && strcmp(s->watches[i].path, path) == 0)
            s->watches[i].fn(s->watches[i].owner, type, path);
    s->dispatching--;
    compact(s);
}

/* ---- timers ------------------------------------------------------------ */

struct timer_closure {
    void (*fn)(void *owner);
    void *owner;
    struct event *ev;
    struct coord_session *s;
    struct timer_closure *prev, *next; /* the session's pending timers */
};

static void timer_unlink(struct timer_closure *tc)
{
    struct coord_session *s = tc->s;
    if (tc->prev)
        tc->prev->next = tc->next;
    else
        s->timers = tc->next;
    if (tc->next)
        tc->next->prev = tc->prev;
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    struct timer_closure *tc = arg;
    void (*fn)(void *) = tc->fn;
    void *owner = tc->owner;
    timer_unlink(tc);
    event_free(tc->ev);
    free(tc);
    fn(owner);
}

struct event *coord__timer(struct coord_session *s, int ms, void (*fn)(void *owner), void *owner)
{
    struct timer_closure *tc = xcalloc(1, sizeof(*tc));
    tc->fn = fn;
    tc->owner = owner;
    tc->s = s;
    tc->next = s->timers;
    if (s->timers)
        s->timers->prev = tc;
    s->timers = tc;
    tc->ev = evtimer_new(s->base, on_timer, tc);
    struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
    evtimer_add(tc->ev, &tv);
    return tc->ev;
}

void coord__timer_cancel(struct event *ev)
{
    if (!ev)
        return;
    struct timer_closure *tc = event_get_callback_arg(ev);
    timer_unlink(tc);
    free(tc);
    event_free(ev);
}

/* At close: run every pending timer now, so that what waits on one unwinds. */
static void fire_all_timers(struct coord_session *s)
{
    while (s->timers) {
        struct timer_closure *tc = s->timers;
        event_del(tc->ev);
        on_timer(-1, EV_TIMEOUT, tc);
    }
}

/* ---- handles and states ----------------------------------------------- */

static int start_handle(struct coord_session *s, struct drv_err *err)
{
    struct handle_ctx *hc = xcalloc(1, sizeof(*hc));
    pthread_mutex_lock(&s->mu);
    s->gen++;
    s->zk_state = ZOO_CONNECTING_STATE;
    hc->gen = s->gen;
    pthread_mutex_unlock(&s->mu);
    hc->s = s;
    s->zh = zookeeper_init2(s->hosts, watcher, s->timeout_ms, NULL, hc, 0, log_zk_callback);
    if (!s->zh) {
        free(hc);
        return drv_err_set(err, DRV_EZK, errno, "cannot start zookeeper client for \"%s\": %s",
                           s->hosts, strerror(errno));
    }
    /*
     * By default the client resolves the host names every time it polls its
     * socket (a netlink dump per getaddrinfo): a large share of its CPU under
     * load. Once per 30 s (and on every connection loss) is plenty.
     */
    zoo_set_servers_resolution_delay(s->zh, 30000);
    if (s->digest)
        zoo_add_auth(s->zh, "digest", s->digest, (int)strlen(s->digest), NULL, NULL);
    return 0;
}

static void close_handle(struct coord_session *s)
{
    if (!s->zh)
        return;
    struct handle_ctx *hc = (struct handle_ctx *)zoo_get_context(s->zh);
    zookeeper_close(s->zh);
    s->zh = NULL;
    free(hc);
    /* No completion of the closed handle can come any more. */
    while (s->zombies) {
        struct coord__op *z = s->zombies;
        s->zombies = z->next;
        coord__op_free(z);
    }
}

static void report(struct coord_session *s, enum coord_state st)
{
    if (s->state == st)
        return;
    s->state = st;
    log_info(MOD, "event=session-state state=%s session=0x%llx generation=%u", coord_state_name(st),
             (unsigned long long)coord_session_id(s), s->gen - 1);
    if (s->on_state)
        s->on_state(s, st, s->arg);
}

static void cancel_suspect(struct coord_session *s)
{
    if (s->suspect_timer) {
        coord__timer_cancel(s->suspect_timer);
        s->suspect_timer = NULL;
    }
    s->suspected = false;
}

static void on_suspect(void *owner)
{
    struct coord_session *s = owner;
    s->suspect_timer = NULL;
    if (s->state != COORD_SUSPENDED)
        return;
    /*
     * The client notices a silent connection after up to 2/3 of the timeout;
     * one more third and the server may expire the session and give our locks
     * to others before we can hear of it. Holders stop now.
     */
    log_warn(MOD, "event=session-suspect session=0x%llx", (unsigned long long)coord_session_id(s));
    s->suspected = true;
    tell_listeners(s, COORD__SUSPECT);
}

static void on_session_event(struct coord_session *s, int state)
{
    if (state == ZOO_CONNECTED_STATE) {
        bool renew =
            s->state == COORD_EXPIRED || (s->state == COORD_CONNECTING && s->ever_connected);
        s->ever_connected = true;
        cancel_suspect(s);
        if (renew)
            tell_listeners(s, COORD__NEW_SESSION);
        report(s, COORD_CONNECTED);
    } else if (state == ZOO_CONNECTING_STATE || state == ZOO_ASSOCIATING_STATE) {
        if (s->state == COORD_CONNECTED) {
            report(s, COORD_SUSPENDED);
            cancel_suspect(s);
            int t = s->zh ? zoo_recv_timeout(s->zh) : s->timeout_ms;
            s->suspect_timer = coord__timer(s, (t > 0 ? t : s->timeout_ms) / 3, on_suspect, s);
        }
    } else if (state == ZOO_EXPIRED_SESSION_STATE) {
        log_warn(MOD, "event=session-expired session=0x%llx",
                 (unsigned long long)coord_session_id(s));
        /* Lock holders first, then the owner, then a new session. */
        cancel_suspect(s);
        tell_listeners(s, COORD__LOST);
        report(s, COORD_EXPIRED);
        if (s->closing)
            return;
        close_handle(s);
        if (start_handle(s, NULL) != 0) {
            log_error(MOD, "event=session-restart-failed");
            return;
        }
        /* The owner sees EXPIRED -> CONNECTING -> CONNECTED. */
        report(s, COORD_CONNECTING);
        s->state = COORD_EXPIRED; /* so that CONNECTED renews */
    } else if (state == ZOO_AUTH_FAILED_STATE) {
        log_error(MOD, "event=auth-failed");
        report(s, COORD_AUTH_FAILED);
    }
}

static void on_efd(evutil_socket_t fd, short what, void *arg)
{
    struct coord_session *s = arg;
    uint64_t v;
    if (read(s->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
        log_warn(MOD, "event=eventfd-read-failed error=%d", errno);
    pthread_mutex_lock(&s->mu);
    struct coord__op *op = s->q_head;
    s->q_head = s->q_tail = NULL;
    pthread_mutex_unlock(&s->mu);
    while (op) {
        struct coord__op *next = op->next;
        if (op->done) {
            if (op->counted)
                s->inflight--;
            op->done(op);
        } else if (op->gen == s->gen) {
            if (op->ev_type == ZOO_SESSION_EVENT)
                on_session_event(s, op->ev_state);
            else
                dispatch_watch(s, op->ev_type, op->path);
        }
        if (op->zombie) {
            /* Its completion may still come: free it once the handle is closed. */
            op->next = s->zombies;
            s->zombies = op;
        } else {
            coord__op_free(op);
        }
        op = next;
    }
}

struct coord_session *coord_session_new(struct event_base *base, const struct coord_session_opts *o,
                                        struct drv_err *err)
{
    if (!o || !o->hosts || !*o->hosts) {
        drv_err_set(err, DRV_EINVAL, 0, "no zookeeper hosts given");
        return NULL;
    }
    if (o->chroot && (o->chroot[0] != '/' || strchr(o->chroot, ',') || strlen(o->chroot) < 2)) {
        drv_err_set(err, DRV_EINVAL, 0, "bad chroot \"%s\"", o->chroot);
        return NULL;
    }
    if (!o->digest_user != !o->digest_password) {
        drv_err_set(err, DRV_EINVAL, 0, "digest user and password go together");
        return NULL;
    }
    struct coord_session *s = xcalloc(1, sizeof(*s));
    s->base = base;
    s->hosts = o->chroot ? xasprintf("%s%s", o->hosts, o->chroot) : xstrdup(o->hosts);
    s->timeout_ms = o->session_timeout_ms > 0 ? o->session_timeout_ms : 10000;
    s->on_state = o->on_state;
    s->arg = o->arg;
    s->state = COORD_CONNECTING;
    if (o->digest_user) {
        s->digest = xasprintf("%s:%s", o->digest_user, o->digest_password);
        /* Creator (the digest identity) may do anything; the world may read. */
        static struct ACL acls[2];
        static struct ACL_vector vec = {2, acls};
        acls[0] = (struct ACL){.perms = ZOO_PERM_ALL, .id = {.scheme = "auth", .id = ""}};
        acls[1] = (struct ACL){.perms = ZOO_PERM_READ, .id = {.scheme = "world", .id = "anyone"}};
        s->acl = &vec;
    } else {
        s->acl = &ZOO_OPEN_ACL_UNSAFE;
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cond, NULL);
    s->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (s->efd < 0) {
        drv_err_set(err, DRV_EIO, errno, "eventfd: %s", strerror(errno));
        goto fail;
    }
    s->ev = event_new(base, s->efd, EV_READ | EV_PERSIST, on_efd, s);
    event_add(s->ev, NULL);
    if (start_handle(s, err) != 0)
        goto fail;
    log_info(MOD, "event=session-start hosts=%s timeout_ms=%d digest=%s", s->hosts, s->timeout_ms,
             s->digest ? "yes" : "no");
    return s;
fail:
    if (s->ev)
        event_free(s->ev);
    if (s->efd >= 0)
        close(s->efd);
    free(s->hosts);
    free(s->digest);
    free(s);
    return NULL;
}

int coord_session_wait_connected(struct coord_session *s, int timeout_ms, struct drv_err *err)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    int rc = 0;
    pthread_mutex_lock(&s->mu);
    while (s->zk_state != ZOO_CONNECTED_STATE && s->zk_state != ZOO_AUTH_FAILED_STATE) {
        if (pthread_cond_timedwait(&s->cond, &s->mu, &until) == ETIMEDOUT) {
            rc =
                drv_err_set(err, DRV_ETIMEDOUT, 0, "no zookeeper connection to \"%s\" within %d ms",
                            s->hosts, timeout_ms);
            break;
        }
    }
    if (rc == 0 && s->zk_state == ZOO_AUTH_FAILED_STATE)
        rc = drv_err_set(err, DRV_EPERM, ZAUTHFAILED, "zookeeper refused the digest credentials");
    pthread_mutex_unlock(&s->mu);
    return rc;
}

enum coord_state coord_session_state(const struct coord_session *s)
{
    return s->state;
}

int64_t coord_session_id(const struct coord_session *s)
{
    const clientid_t *cid = s->zh ? zoo_client_id(s->zh) : NULL;
    return cid ? cid->client_id : 0;
}

int coord_session_credentials(const struct coord_session *s, int64_t *id, char passwd[16])
{
    const clientid_t *cid = s->zh ? zoo_client_id(s->zh) : NULL;
    if (!cid || !cid->client_id)
        return DRV_EAGAIN;
    *id = cid->client_id;
    memcpy(passwd, cid->passwd, 16);
    return 0;
}

unsigned coord_session_generation(const struct coord_session *s)
{
    return s->gen - 1;
}

void coord_session_free(struct coord_session *s)
{
    if (!s)
        return;
    s->closing = true;
    log_info(MOD, "event=session-close session=0x%llx", (unsigned long long)coord_session_id(s));
    /*
     * Let the requests in flight finish first (a member's delete, a lock's
     * release, a queue's completes), for at most 2 s: the client library
     * does not complete every kind of request when closed under it.
     */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 2;
    while (s->inflight > 0 && s->zh && zoo_state(s->zh) == ZOO_CONNECTED_STATE) {
        pthread_mutex_lock(&s->mu);
        s->draining = true;
        int r = 0;
        while (!s->q_head && r != ETIMEDOUT)
            r = pthread_cond_timedwait(&s->cond, &s->mu, &until);
        s->draining = false;
        pthread_mutex_unlock(&s->mu);
        if (r == ETIMEDOUT)
            break;
        on_efd(s->efd, EV_READ, s);
    }
    /* zookeeper_close sends what is queued, then the close request. */
    close_handle(s);
    /*
     * Run what the close completed (with ZCLOSING) and every pending timer
     * (retries, deferred work: they fail at once now) so that owners' refs drop.
     */
    s->gen++;
    for (int i = 0; i < 100 && (s->q_head || s->timers); i++) {
        on_efd(s->efd, EV_READ, s);
        fire_all_timers(s);
    }
    report(s, COORD_CLOSED);
    cancel_suspect(s);
    while (s->zombies) {
        struct coord__op *z = s->zombies;
        s->zombies = z->next;
        coord__op_free(z);
    }
    event_free(s->ev);
    close(s->efd);
    for (size_t i = 0; i < s->n_watches; i++)
        free(s->watches[i].path);
    free(s->watches);
    free(s->listeners);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cond);
    free(s->hosts);
    free(s->digest);
    free(s);
}

/* ---- ensure_path ------------------------------------------------------- */

struct ensure {
    coord_done_cb done;
    void *arg;
};

static void ensure_done(struct coord__op *op)
{
    struct ensure *e = op->owner;
    int rc = op->rc == ZOK || op->rc == ZNODEEXISTS ? 0 : coord__zrc(op->rc);
    if (rc)
        log_warn(MOD, "event=ensure-path-failed path=%s zrc=%d", op->path, op->rc);
    if (e->done)
        e->done(rc, e->arg);
    free(e);
}

void coord_ensure_path(struct coord_session *s, const char *path, coord_done_cb done, void *arg)
{
    coord__ensure_path(s, path, 0, done, arg);
}

void coord__ensure_path(struct coord_session *s, const char *path, int last_flags,
                        coord_done_cb done, void *arg)
{
    /* Pipelined: one create per ancestor, in order; the last one's result counts. */
    char *p = xstrdup(path);
    size_t n = strlen(p);
    while (n > 1 && p[n - 1] == '/')
        p[--n] = '\0';
    for (size_t i = 1; i <= n; i++) {
        if (p[i] != '/' && p[i] != '\0')
            continue;
        char c = p[i];
        p[i] = '\0';
        if (c == '\0') {
            struct ensure *e = xcalloc(1, sizeof(*e));
            e->done = done;
            e->arg = arg;
            coord__zk_create(coord__op_new(s, ensure_done, e), p, "{}", last_flags);
        } else {
            coord__zk_create(coord__op_new(s, NULL, NULL), p, "{}", 0);
        }
        p[i] = c;
    }
    free(p);
}

/* ---- delete, surely ----------------------------------------------------- */

static void sure_again(void *owner);

static void sure_done(struct coord__op *op)
{
    /* Retry while the outcome is unknown; NONODE means done (by us or the session). */
    if (coord__zrc_unknown(op->rc) && !op->s->closing) {
        struct coord__op *again = coord__op_new(op->s, sure_done, NULL);
        again->path = op->path;
        again->tag = op->tag;
        op->path = NULL;
        coord__timer(op->s, 200, sure_again, again);
    } else if (op->rc != ZOK && op->rc != ZNONODE && op->rc != ZCLOSING &&
               op->rc != ZSESSIONEXPIRED) {
        log_warn(MOD, "event=delete-failed path=%s zrc=%d", op->path, op->rc);
    }
}

static void sure_again(void *owner)
{
    struct coord__op *op = owner;
    char *path = op->path;
    op->path = NULL;
    coord__zk_delete(op, path, (int)op->tag);
    free(path);
}

void coord__delete_sure(struct coord_session *s, const char *path, int version)
{
    struct coord__op *op = coord__op_new(s, sure_done, NULL);
    op->tag = version;
    coord__zk_delete(op, path, version);
}

/* ---- plain reads ---------------------------------------------------------- */

struct read_cb {
    coord_get_cb get;
    coord_children_cb children;
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
