/*
 * session: one ZooKeeper session driven from a libevent loop.
 *
 * How results reach the loop: zkops.c (and docs/threading.md).
 *
 * States, as reported to the owner (loop thread):
 *
 *   CONNECTING --> CONNECTED <--> SUSPENDED        (lost, or silent: see below)
 *                     |               |
 *                     +---> EXPIRED <-+
 *                              |  ^
 *                              v  | start failed: retry with backoff
 *                          CONNECTING --> CONNECTED (a new session)
 *   any ------------------> CLOSED                 (coord_session_free)
 *
 * Expiry, in this order on the loop: every listener hears LOST (locks report
 * COORD_LOCK_LOST, watches COORD_EV_SESSION, queues on_lost), the owner hears
 * EXPIRED, the old handle is closed and a new one started. If it cannot be
 * started (no descriptor, no thread, an unresolvable host), that is logged
 * (event=session-restart-failed) and retried with backoff until it works;
 * requests meanwhile fail at once with ZINVALIDSTATE. Once connected,
 * listeners hear NEW_SESSION (members re-join, watchers re-read), then the
 * owner hears CONNECTED. Items from an older handle are recognised by their
 * generation and dropped (completions still run, with their error).
 *
 * A closed handle's unanswered requests. zookeeper_close stops the client
 * library's completion thread before it runs the completions still queued (the
 * expiry's own ZSESSIONEXPIRED answers can be among them, a race its threads
 * lose under load), so some requests are never answered. Each is answered by
 * coord instead, once the handle is closed (coord__ops_abandon, zkops.c), with
 * what the library would have said: ZSESSIONEXPIRED at an expiry, ZCLOSING at
 * coord_session_free. Without it, a watcher whose read was among them stays
 * busy for ever and never reads again (coord_abandoned): a droverd's list of
 * announced jobs would freeze, and its share of new jobs never be taken.
 *
 * Suspicion. A holder must stop before the server can expire its session and
 * hand its locks or claims to others: the server does so once the whole
 * timeout T has passed since it last heard from the client. Listeners hear
 * SUSPECT once per episode, at the earlier of:
 *   - T/3 after the client library reported the connection lost (it notices
 *     a dead connection after up to 2T/3 of silence itself: that margin is
 *     for a connection that dies with an RST or FIN);
 *   - T/2 after the issue time of the latest request the server answered,
 *     checked every T/10: a network that silently drops packets is noticed
 *     here, long before the client library gives up on the connection. The
 *     server heard from us at or after that issue time, so it cannot expire
 *     the session before T after it: LOST comes at most 0.6 T after it, at
 *     least 0.4 T before the expiry. When nothing else is answered for T/10,
 *     a probe (exists on "/") keeps the figure fresh; while the session holds
 *     no lock and no claim (s->stakes == 0: nothing to stop in time), only
 *     after 7T/30, just before the client library would send a ping (after
 *     T/3 without sending), which the probe replaces: an idle session costs
 *     what its pings would.
 * A silence is reported to the owner as SUSPENDED, and CONNECTED again when
 * answers resume.
 *
 * Giving up. A session whose connection the client library has not had back for
 * GIVE_UP_TIMEOUTS (2) whole timeouts since the server last answered is taken as
 * expired, the way the server's own expiry is (event=session-given-up, then LOST,
 * EXPIRED and a new handle). The server has expired it by then unless it could not
 * (no quorum: a leader elected after the heal gives every session a new timeout) or
 * still hears the client (answers lost on the way back: its reconnects keep the session
 * alive). Either way this process holds nothing any more (its holders heard LOST), the
 * old handle is closed, and the old session's ephemerals go a timeout after the server
 * last heard of it. Only the rebuilt case below is tested. The case it is for: a
 * ZooKeeper rebuilt from nothing refuses a client that has seen a later zxid than it
 * has made, for ever and without an expiry, so without giving up the process would
 * serve nothing until restarted (engine_zk_rebuilt_live). A new handle has seen no zxid.
 *
 * Free. coord_session_free may be called from inside any callback coord runs
 * (cb_depth > 0): it is then only recorded, and the outermost callback frame
 * (coord__callbacks_done) closes and frees the session when it returns.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "clock.h"
#include "coord_int.h"
#include "fault.h"
#include "log.h"
#include "xalloc.h"

#define MOD "coord"
/* Giving up: a session disconnected this many timeouts is taken as expired. */
#define GIVE_UP_TIMEOUTS 2

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

static void destroy(struct coord_session *s);

void coord__callbacks_done(struct coord_session *s)
{
    if (s->cb_depth == 0 && s->free_pending) {
        s->free_pending = false;
        destroy(s);
    }
}

/* ---- handles ------------------------------------------------------------- */

static int start_handle(struct coord_session *s, struct drv_err *err)
{
    struct handle_ctx *hc = xcalloc(1, sizeof(*hc));
    pthread_mutex_lock(&s->mu);
    s->gen++;
    s->zk_state = ZOO_CONNECTING_STATE;
    hc->gen = s->gen;
    pthread_mutex_unlock(&s->mu);
    hc->s = s;
    errno = 0;
    s->zh = zookeeper_init2(s->hosts, coord__watcher, s->timeout_ms, NULL, hc, 0, log_zk_callback);
    if (!s->zh) {
        int e = errno;
        free(hc);
        return drv_err_set(err, DRV_EZK, e, "cannot start zookeeper client for \"%s\": %s",
                           s->hosts, strerror(e));
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

/* Close the handle; what it took and never answered is answered with rc (zkops.c). */
static void close_handle(struct coord_session *s, int rc)
{
    if (!s->zh)
        return;
    struct handle_ctx *hc = (struct handle_ctx *)zoo_get_context(s->zh);
    zookeeper_close(s->zh);
    s->zh = NULL;
    free(hc);
    coord__ops_abandon(s, rc);
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
             (unsigned long long)coord_session_id(s), s->renewals);
    if (s->on_state)
        s->on_state(s, st, s->arg);
}

static void tell(struct coord_session *s, enum coord__session_event ev)
{
    coord__reg_tell(&s->reg, ev);
}

static int timeout_of(const struct coord_session *s)
{
    int t = s->zh ? zoo_recv_timeout(s->zh) : 0;
    return t > 0 ? t : s->timeout_ms;
}

/* ---- suspicion ------------------------------------------------------------ */

static void cancel_suspect(struct coord_session *s)
{
    if (s->suspect_timer) {
        coord__timer_cancel(s->suspect_timer);
        s->suspect_timer = NULL;
    }
    s->suspected = false;
    s->silent = false;
}

static void suspect(struct coord_session *s, const char *why)
{
    if (s->suspected)
        return;
    log_warn(MOD, "event=session-suspect reason=%s session=0x%llx silent_ms=%ld timeout_ms=%d", why,
             (unsigned long long)coord_session_id(s), (long)(clock_boot_ms() - s->last_ok_ms),
             timeout_of(s));
    s->suspected = true;
    tell(s, COORD__SUSPECT);
}

static void on_suspect(void *owner)
{
    struct coord_session *s = owner;
    s->suspect_timer = NULL;
    if (s->state == COORD_SUSPENDED && !s->silent)
        suspect(s, "disconnected");
}

static bool server_answered(int rc)
{
    return rc == ZOK || (rc < ZAPIERROR && rc != ZSESSIONEXPIRED && rc != ZCLOSING &&
                         rc != ZINVALIDCALLBACK && rc != ZSESSIONMOVED);
}

void coord__answered(struct coord_session *s, const struct coord__op *op)
{
    if (!op->counted || op->zombie || op->gen != s->gen || !server_answered(op->rc))
        return;
    if (op->issued_ms > s->last_ok_ms)
        s->last_ok_ms = op->issued_ms;
    if (s->silent && s->zh && zoo_state(s->zh) == ZOO_CONNECTED_STATE &&
        clock_boot_ms() - s->last_ok_ms < timeout_of(s) / 2) {
        log_info(MOD, "event=session-heard-again session=0x%llx",
                 (unsigned long long)coord_session_id(s));
        cancel_suspect(s);
        report(s, COORD_CONNECTED);
    }
}

static void probed(struct coord__op *op)
{
    op->s->probing = false;
}

static void probe(struct coord_session *s)
{
    if (s->probing || !s->zh || zoo_state(s->zh) != ZOO_CONNECTED_STATE)
        return;
    s->probing = true;
    coord__zk_exists(coord__op_new(s, probed, NULL), "/", false);
}

static void expire(struct coord_session *s);

/* Giving up (see "Giving up" at the top): the session is over for this process. */
static void give_up(struct coord_session *s, long quiet)
{
    log_warn(MOD,
             "event=session-given-up session=0x%llx disconnected_ms=%ld timeout_ms=%d "
             "why=\"no server took the session back within %d timeouts\"",
             (unsigned long long)coord_session_id(s), quiet, timeout_of(s), GIVE_UP_TIMEOUTS);
    expire(s);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct coord_session *s = arg;
    if (s->closing || !s->zh)
        return;
    s->cb_depth++;
    int t = timeout_of(s);
    long quiet = clock_boot_ms() - s->last_ok_ms;
    if (s->state == COORD_SUSPENDED && quiet >= GIVE_UP_TIMEOUTS * t &&
        zoo_state(s->zh) != ZOO_CONNECTED_STATE) {
        give_up(s, quiet);
    } else if (s->state == COORD_CONNECTED && quiet >= t / 2) {
        s->silent = true;
        report(s, COORD_SUSPENDED);
        suspect(s, "silent");
        probe(s);
    } else if ((s->state == COORD_CONNECTED &&
                quiet >= (s->stakes > 0 ? t / 10 : t / 3 - t / 10)) ||
               (s->state == COORD_SUSPENDED && s->silent)) {
        /* Holding nothing (no lock, no claim), the session has nothing to stop in time: it
           probes once per third of the timeout, just before the client library would ping
           (it pings after T/3 without sending; this tick comes every T/10, so the probe goes
           between 7T/30 and T/3 after the last answer, and the library sees a request
           instead): an idle session costs what its pings would. Holding something, every
           T/10 as above. */
        probe(s);
    }
    s->cb_depth--;
    coord__callbacks_done(s);
}

static void arm_tick(struct coord_session *s)
{
    int every = timeout_of(s) / 10;
    struct timeval tv = {.tv_sec = every / 1000, .tv_usec = (every % 1000) * 1000};
    event_del(s->tick);
    event_add(s->tick, &tv);
}

/* ---- restart after an expiry ------------------------------------------------- */

static void restart(struct coord_session *s);

static void restart_timer(void *owner)
{
    struct coord_session *s = owner;
    s->restart_timer = NULL;
    if (!s->closing && !s->free_pending && !s->zh)
        restart(s);
}

static void restart(struct coord_session *s)
{
    struct drv_err err;
    if (start_handle(s, &err) != 0) {
        int ms = coord__backoff_ms(s, s->restart_tries++);
        char q[600];
        log_error(MOD, "event=session-restart-failed attempt=%u retry_ms=%d error=%s",
                  s->restart_tries, ms, log_quote(err.msg, q, sizeof(q)));
        s->restart_timer = coord__timer(s, ms, restart_timer, s);
        return;
    }
    if (s->restart_tries)
        log_info(MOD, "event=session-restarted attempts=%u", s->restart_tries + 1);
    s->restart_tries = 0;
    s->renewals++;
    /* The owner sees EXPIRED -> CONNECTING -> CONNECTED. */
    report(s, COORD_CONNECTING);
    s->state = COORD_EXPIRED; /* so that CONNECTED renews */
}

/* The session is over (the server said so, or give_up): holders first, then the owner, then a
   new session. */
static void expire(struct coord_session *s)
{
    cancel_suspect(s);
    tell(s, COORD__LOST);
    report(s, COORD_EXPIRED);
    if (s->closing || s->free_pending)
        return;
    /* What the library would answer had it the time: the session is gone. */
    close_handle(s, ZSESSIONEXPIRED);
    restart(s);
}

void coord__session_event(struct coord_session *s, int state)
{
    if (state == ZOO_CONNECTED_STATE) {
        bool renew =
            s->state == COORD_EXPIRED || (s->state == COORD_CONNECTING && s->ever_connected);
        s->ever_connected = true;
        cancel_suspect(s);
        s->last_ok_ms = clock_boot_ms();
        arm_tick(s);
        if (renew)
            tell(s, COORD__NEW_SESSION);
        report(s, COORD_CONNECTED);
    } else if (state == ZOO_CONNECTING_STATE || state == ZOO_ASSOCIATING_STATE) {
        if (s->state == COORD_CONNECTED) {
            report(s, COORD_SUSPENDED);
            cancel_suspect(s);
            /* A third of the timeout from now, or half of it from the last answer. */
            int t = timeout_of(s);
            long ms = s->last_ok_ms + t / 2 - clock_boot_ms();
            if (ms > t / 3)
                ms = t / 3;
            s->suspect_timer = coord__timer(s, ms > 0 ? (int)ms : 0, on_suspect, s);
        } else if (s->state == COORD_SUSPENDED && s->silent) {
            /* The client gave up on the silent connection: suspicion stands. */
            s->silent = false;
        }
    } else if (state == ZOO_EXPIRED_SESSION_STATE) {
        log_warn(MOD, "event=session-expired session=0x%llx",
                 (unsigned long long)coord_session_id(s));
        expire(s);
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
    coord__drain(s); /* may free s */
}

/* ---- lifecycle -------------------------------------------------------------- */

/* DROVER_FAULT=zk-answer-lost:KIND:SUBSTRING[:N] (coord_int.h): a bad one is refused loudly
   rather than ignored, so that a test never runs without the fault it asked for. */
static void fault_answer_parse(struct coord_session *s)
{
    char *a = fault_arg("zk-answer-lost");
    if (!a)
        return;
    unsigned every = fault_every(a, 2);
    char *colon = strchr(a, ':');
    int kind = -1;
    if (colon) {
        *colon = '\0';
        static const enum coord_req kinds[] = {COORD_REQ_CREATE, COORD_REQ_SET, COORD_REQ_DELETE,
                                               COORD_REQ_MULTI};
        for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
            if (strcmp(a, coord_req_name(kinds[i])) == 0)
                kind = (int)kinds[i];
        if (strcmp(a, "any") == 0)
            kind = COORD_REQ_N;
    }
    if (kind < 0 || !colon[1]) {
        log_error(MOD, "event=fault-refused fault=zk-answer-lost reason=\"want "
                       "KIND:SUBSTRING[:N], KIND create, set, delete, multi or any\"");
        abort();
    }
    s->fault_answer = xstrdup(colon + 1);
    s->fault_answer_kind = kind;
    s->fault_answer_every = every;
    free(a);
    log_warn(MOD, "event=fault-armed fault=zk-answer-lost kind=%s path=%s every=%u",
             kind == COORD_REQ_N ? "any" : coord_req_name(kind), s->fault_answer, every);
}

/* DROVER_FAULT=zk-answer-held:SUBSTRING[:N], zk-answer-closed:SUBSTRING[:N] and
   zk-watch-lost:PATH[:N] (coord_int.h). */
static void fault_hold_parse(struct coord_session *s)
{
    char *a = fault_arg("zk-answer-held");
    char *c = fault_arg("zk-answer-closed");
    if (a && c) {
        log_error(MOD, "event=fault-refused fault=zk-answer-closed reason=\"not with "
                       "zk-answer-held\"");
        abort();
    }
    if (c) {
        a = c;
        s->fault_hold_closing = true;
    }
    const char *name = c ? "zk-answer-closed" : "zk-answer-held";
    if (a) {
        s->fault_hold_every = fault_every(a, 2);
        if (!*a) {
            log_error(MOD, "event=fault-refused fault=%s reason=\"want SUBSTRING[:N]\"", name);
            abort();
        }
        s->fault_hold = a;
        log_warn(MOD, "event=fault-armed fault=%s path=%s every=%u", name, a, s->fault_hold_every);
    }
    a = fault_arg("zk-watch-lost");
    if (a) {
        s->fault_watch_every = fault_every(a, 1);
        if (a[0] != '/') {
            log_error(MOD, "event=fault-refused fault=zk-watch-lost reason=\"want PATH[:N]\"");
            abort();
        }
        s->fault_watch = a;
        log_warn(MOD, "event=fault-armed fault=zk-watch-lost path=%s every=%u", a,
                 s->fault_watch_every);
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
    s->max_req = o->max_request_bytes ? o->max_request_bytes : COORD_DEFAULT_MAX_REQUEST_BYTES;
    if (s->max_req < COORD_MIN_MAX_REQUEST_BYTES)
        s->max_req = COORD_MIN_MAX_REQUEST_BYTES;
    s->on_state = o->on_state;
    s->arg = o->arg;
    s->state = COORD_CONNECTING;
    s->nonce = coord__random_seed();
    s->rng = s->nonce;
    if (o->digest_user) {
        s->digest = xasprintf("%s:%s", o->digest_user, o->digest_password);
        /* Creator (the digest identity) may do anything; the readers may read; the world
           nothing (acl.c). */
        if (coord__acl_build(s, o, err) != 0) {
            coord__acl_free(s);
            free(s->digest);
            free(s->hosts);
            free(s);
            return NULL;
        }
    } else {
        s->acl = &ZOO_OPEN_ACL_UNSAFE;
    }
    s->fault_read = fault_arg("zk-read-lost");
    if (s->fault_read && !*s->fault_read) {
        free(s->fault_read);
        s->fault_read = NULL;
    }
    fault_answer_parse(s);
    fault_hold_parse(s);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cond, NULL);
    s->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (s->efd < 0) {
        drv_err_set(err, DRV_EIO, errno, "eventfd: %s", strerror(errno));
        goto fail;
    }
    s->ev = event_new(base, s->efd, EV_READ | EV_PERSIST, on_efd, s);
    event_add(s->ev, NULL);
    s->tick = event_new(base, -1, EV_PERSIST, on_tick, s);
    if (start_handle(s, err) != 0)
        goto fail;
    log_info(MOD, "event=session-start hosts=%s timeout_ms=%d digest=%s max_request_bytes=%zu",
             s->hosts, s->timeout_ms, s->digest ? "yes" : "no", s->max_req);
    return s;
fail:
    if (s->tick)
        event_free(s->tick);
    if (s->ev)
        event_free(s->ev);
    if (s->efd >= 0)
        close(s->efd);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cond);
    free(s->hosts);
    free(s->digest);
    free(s->fault_read);
    free(s->fault_answer);
    free(s->fault_hold);
    free(s->fault_watch);
    coord__acl_free(s);
    free(s);
    return NULL;
}

int coord_session_wait_connected(struct coord_session *s, int timeout_ms, struct drv_err *err)
{
    struct timespec until = clock_wall_after(timeout_ms); /* s->cond runs on CLOCK_REALTIME */
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

int coord_session_timeout_ms(const struct coord_session *s)
{
    return timeout_of(s);
}

size_t coord_session_max_request(const struct coord_session *s)
{
    return s->max_req;
}

int64_t coord_session_heard_ms(const struct coord_session *s)
{
    return s->last_ok_ms;
}

unsigned coord_session_generation(const struct coord_session *s)
{
    return s->renewals;
}

uint64_t coord_session_requests(const struct coord_session *s, enum coord_req kind)
{
    return (unsigned)kind < COORD_REQ_N ? s->sent[kind] : 0;
}

const char *coord_req_name(enum coord_req kind)
{
    static const char *const names[COORD_REQ_N] = {
        [COORD_REQ_CREATE] = "create", [COORD_REQ_DELETE] = "delete",
        [COORD_REQ_EXISTS] = "exists", [COORD_REQ_GET] = "get",
        [COORD_REQ_SET] = "set",       [COORD_REQ_CHILDREN] = "children",
        [COORD_REQ_SYNC] = "sync",     [COORD_REQ_MULTI] = "multi",
    };
    return (unsigned)kind < COORD_REQ_N ? names[kind] : "?";
}

void coord_path_class(const char *path, char out[COORD_PATH_CLASS_MAX])
{
    size_t o = 0, comp = 0;
    const char *p = path ? path : "";
    if (!*p) {
        snprintf(out, COORD_PATH_CLASS_MAX, "-");
        return;
    }
    while (*p && o + 1 < COORD_PATH_CLASS_MAX) {
        if (*p == '/') {
            out[o++] = *p++;
            continue;
        }
        size_t len = strcspn(p, "/");
        bool inst = ++comp > 2 && (len > 12 || strcspn(p, "0123456789.-") < len);
        const char *w = inst ? "{}" : p;
        size_t wl = inst ? 2 : len;
        for (size_t k = 0; k < wl && o + 1 < COORD_PATH_CLASS_MAX; k++)
            out[o++] = w[k];
        p += len;
    }
    out[o] = 0;
}

void coord__count_path(struct coord_session *s, enum coord_req kind, const char *path)
{
    char cls[COORD_PATH_CLASS_MAX];
    coord_path_class(path, cls);
    size_t i;
    for (i = 0; i < s->n_by_path; i++)
        if (s->by_path[i].kind == kind && strcmp(s->by_path[i].cls, cls) == 0)
            break;
    if (i == s->n_by_path) {
        if (s->n_by_path + 1 < COORD__BY_PATH_MAX)
            memcpy(s->by_path[s->n_by_path].cls, cls, sizeof(cls));
        else {
            /* Full: the last counter is "other", of any kind. */
            i = COORD__BY_PATH_MAX - 1;
            kind = COORD_REQ_N;
            s->by_path[i].cls[0] = 0;
            s->n_by_path = COORD__BY_PATH_MAX - 1;
        }
        s->by_path[i].kind = kind;
        s->n_by_path++;
    }
    s->by_path[i].n++;
}

bool coord_session_requests_by_path(const struct coord_session *s, size_t i, enum coord_req *kind,
                                    const char **cls, uint64_t *n)
{
    if (i >= s->n_by_path)
        return false;
    *kind = s->by_path[i].kind;
    *cls = s->by_path[i].cls;
    *n = s->by_path[i].n;
    return true;
}

void coord_session_free(struct coord_session *s)
{
    if (!s || s->closing || s->free_pending)
        return;
    if (s->cb_depth > 0) {
        /* Inside one of our callbacks: close once it returns (coord__callbacks_done). */
        log_info(MOD, "event=session-free-deferred session=0x%llx",
                 (unsigned long long)coord_session_id(s));
        s->free_pending = true;
        return;
    }
    destroy(s);
}

static void destroy(struct coord_session *s)
{
    s->closing = true;
    log_info(MOD, "event=session-close session=0x%llx", (unsigned long long)coord_session_id(s));
    event_del(s->tick);
    /*
     * Let the requests in flight finish first (a member's delete, a lock's
     * release, a queue's completes), for at most 2 s: the client library
     * does not complete every kind of request when closed under it.
     */
    struct timespec until = clock_wall_after(2000);
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
        coord__drain(s);
    }
    /* zookeeper_close sends what is queued, then the close request. */
    close_handle(s, ZCLOSING);
    /*
     * Run what the close completed (with ZCLOSING) and every pending timer
     * (retries, deferred work: they fail at once now) so that owners' refs drop.
     */
    s->gen++;
    for (int i = 0; i < 100 && (s->q_head || s->timers); i++) {
        coord__drain(s);
        coord__fire_all_timers(s);
    }
    report(s, COORD_CLOSED);
    cancel_suspect(s);
    while (s->zombies) {
        struct coord__op *z = s->zombies;
        s->zombies = z->next;
        coord__op_free(z);
    }
    event_free(s->tick);
    event_free(s->ev);
    close(s->efd);
    coord__registry_free(&s->reg);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cond);
    free(s->hosts);
    free(s->digest);
    free(s->fault_read);
    free(s->fault_answer);
    free(s->fault_hold);
    free(s->fault_watch);
    coord__acl_free(s);
    free(s);
}
