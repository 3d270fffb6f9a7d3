/*
 * zkops: issuing ZooKeeper requests from the loop, and getting their results
 * back to it.
 *
 * Threads. ZooKeeper's multi-threaded client runs an I/O thread and a
 * completion thread; every completion and every watch event runs on the
 * completion thread, in server order. Those callbacks only copy the result
 * into the struct coord__op (or an event item) and append it to the session's
 * hand-off queue under a mutex; when the queue turns non-empty they write the
 * eventfd. The loop thread reads the eventfd, takes the whole queue under the
 * mutex and runs each item in order, outside the mutex (coord__drain). So
 * every piece of coord state is touched by the loop thread only, ordering is
 * ZooKeeper's, and no ZooKeeper call is made from a ZooKeeper thread.
 *
 * Refusals. A request is not handed to the library when the session has no
 * handle (closing, or a restart pending: ZCLOSING / ZINVALIDSTATE), when the
 * handle's session has expired (its multi-op call frees memory it does not
 * own on that path), when it is bound to another handle generation
 * (ZSESSIONEXPIRED: see coord__op_bind), or when it is over the size budget
 * (COORD__ZTOOBIG). Such an op is queued by the issuer with its rc, and so is
 * one the library refuses at once; since the library sometimes still
 * registers the completion, every op is queued at most once (a flag under
 * the mutex) and such ops are freed only when their handle is closed.
 *
 * Unanswered requests. Every request the library took (issued() with ZOK) is in
 * s->lib_ops until its answer is queued; what is still there when the handle is
 * closed, the library will never answer: coord__ops_abandon answers it (session.c).
 *
 * Sizes: the jute encoding of each op is counted as it is added to a
 * multi-op (ACLs at their largest), and the whole checked against the
 * session's budget before sending: ZooKeeper drops the connection of a client
 * whose request is over the server's limit, which would fail every request
 * in flight and, resent, do it again.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "clock.h"
#include "coord_int.h"
#include "log.h"
#include "xalloc.h"

#include <zookeeper/proto.h>

#define MOD "coord"

/* ---- the hand-off queue ------------------------------------------------ */

/*
 * Queue op for the loop, once. Called with s->mu held; returns whether the
 * loop must be woken.
 */
static void lib_unlink_locked(struct coord_session *s, struct coord__op *op)
{
    if (op->lib_prev)
        op->lib_prev->lib_next = op->lib_next;
    else
        s->lib_ops = op->lib_next;
    if (op->lib_next)
        op->lib_next->lib_prev = op->lib_prev;
    op->lib_prev = op->lib_next = NULL;
    op->in_lib = false;
}

static bool enqueue_locked(struct coord_session *s, struct coord__op *op)
{
    if (op->in_lib)
        lib_unlink_locked(s, op);
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

/*
 * The test hook of coord_int.h (DROVER_FAULT=zk-answer-lost): a write the server applied
 * loses its answer here, under s->mu, before the loop sees it. What the caller gets is
 * what the client library gives when the connection drops between apply and reply: the
 * rc ZCONNECTIONLOSS and no result (no created name, no stat, a multi's results zero).
 */
static void answer_lost_locked(struct coord__op *op)
{
    struct coord_session *s = op->s;
    if (!op->fault_answer || op->rc != ZOK || s->fault_answers++ % s->fault_answer_every)
        return;
    op->rc = ZCONNECTIONLOSS;
    free(op->value);
    op->value = NULL;
    op->value_len = 0;
    op->has_stat = false;
    if (op->results)
        memset(op->results, 0, (size_t)(op->nops ? op->nops : 1) * sizeof(*op->results));
    log_warn(MOD, "event=fault-injected fault=zk-answer-lost path=%s ops=%d",
             op->path && *op->path ? op->path : "-", op->nops);
}

/*
 * The test hook of coord_int.h (DROVER_FAULT=zk-answer-held): a read's answer is held, under
 * s->mu, as the client library holds one it will never give (a request still in its queues
 * when its handle is closed): the op stays in s->lib_ops, so only coord__ops_abandon answers
 * it, at the handle's close.
 */
static bool answer_held_locked(struct coord__op *op)
{
    struct coord_session *s = op->s;
    if (!op->fault_hold || s->fault_holds++ % s->fault_hold_every)
        return false;
    op->fault_held = true;
    log_warn(MOD, "event=fault-injected fault=%s path=%s",
             s->fault_hold_closing ? "zk-answer-closed" : "zk-answer-held",
             op->path ? op->path : "-");
    return true;
}

static void completion_end(struct coord__op *op)
{
    struct coord_session *s = op->s;
    answer_lost_locked(op);
    if (answer_held_locked(op)) {
        pthread_mutex_unlock(&s->mu);
        return;
    }
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

void coord__op_bind(struct coord__op *op, unsigned gen)
{
    op->need_gen = gen;
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

/* The test hook of coord_int.h (DROVER_FAULT=zk-watch-lost:PATH[:N]): drop this event? */
static bool watch_lost(struct coord_session *s, const struct coord__op *ev)
{
    if (!s->fault_watch || strcmp(ev->path, s->fault_watch) != 0 ||
        s->fault_watches++ % s->fault_watch_every)
        return false;
    log_warn(MOD, "event=fault-injected fault=zk-watch-lost path=%s type=%d", ev->path,
             ev->ev_type);
    return true;
}

void coord__ops_abandon(struct coord_session *s, int rc)
{
    unsigned n = 0;
    pthread_mutex_lock(&s->mu);
    bool w = false;
    while (s->lib_ops) {
        struct coord__op *op = s->lib_ops;
        /* No answer reached it, or the test hook held the one that did: drop what it holds.
           The hook zk-answer-closed answers as the library does what it had pending. */
        op->rc = op->fault_held && s->fault_hold_closing ? ZCLOSING : rc;
        free(op->value);
        op->value = NULL;
        op->value_len = 0;
        op->has_stat = false;
        if (op->strv) {
            for (int i = 0; i < op->strc; i++)
                free(op->strv[i]);
            free(op->strv);
            op->strv = NULL;
        }
        op->strc = 0;
        if (op->results)
            memset(op->results, 0, (size_t)(op->nops ? op->nops : 1) * sizeof(*op->results));
        w |= enqueue_locked(s, op);
        n++;
    }
    pthread_mutex_unlock(&s->mu);
    if (w)
        wake(s);
    if (n)
        log_info(MOD,
                 "event=requests-abandoned count=%u zrc=%d why=\"the closed handle never "
                 "answered them\"",
                 n, rc);
}

void coord__drain(struct coord_session *s)
{
    pthread_mutex_lock(&s->mu);
    struct coord__op *op = s->q_head;
    s->q_head = s->q_tail = NULL;
    pthread_mutex_unlock(&s->mu);
    s->cb_depth++;
    while (op) {
        struct coord__op *next = op->next;
        if (op->done) {
            if (op->counted)
                s->inflight--;
            coord__answered(s, op);
            op->done(op);
        } else if (op->gen == s->gen) {
            if (op->ev_type == ZOO_SESSION_EVENT)
                coord__session_event(s, op->ev_state);
            else if (!watch_lost(s, op))
                coord__reg_dispatch(&s->reg, op->ev_type, op->path);
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
    s->cb_depth--;
    coord__callbacks_done(s);
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

static void c_string(int rc, const char *value, const void *data)
{
    c_void(rc, data);
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

struct handle_ctx {
    struct coord_session *s;
    unsigned gen;
};

void coord__watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
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

/* The test hook of coord_int.h (DROVER_FAULT=zk-read-lost:SUBSTRING). */
static bool fault_read_lost(struct coord__op *op)
{
    struct coord_session *s = op->s;
    if (!s->fault_read || !op->fault_point || !op->path || !strstr(op->path, s->fault_read))
        return false;
    if (s->fault_reads++ % 2)
        return false;
    log_warn(MOD, "event=fault-injected fault=zk-read-lost path=%s", op->path);
    return true;
}

/* Refuse op locally when it must not reach the library; true when refused. */
static bool refused(struct coord__op *op)
{
    struct coord_session *s = op->s;
    int zst = s->zh ? zoo_state(s->zh) : 0;
    if (!s->zh)
        op->rc = s->closing ? ZCLOSING : ZINVALIDSTATE;
    else if (zst == ZOO_EXPIRED_SESSION_STATE || zst == ZOO_AUTH_FAILED_STATE)
        op->rc = ZINVALIDSTATE;
    else if (op->need_gen && op->need_gen != s->gen)
        op->rc = ZSESSIONEXPIRED;
    else if (fault_read_lost(op))
        op->rc = ZCONNECTIONLOSS;
    else
        return false;
    push(s, op);
    return true;
}

/* One op of a multi-op: its path. */
static const char *mop_path(const zoo_op_t *o)
{
    switch (o->type) {
    case ZOO_CREATE_OP:
        return o->create_op.path;
    case ZOO_DELETE_OP:
        return o->delete_op.path;
    case ZOO_SETDATA_OP:
        return o->set_op.path;
    case ZOO_CHECK_OP:
        return o->check_op.path;
    default:
        return NULL;
    }
}

/* A multi-op's first op's path, for counting (coord_session_requests_by_path). */
static const char *multi_path(const struct coord__op *op)
{
    return op->nops < 1 ? NULL : mop_path(&op->ops[0]);
}

/* The test hook (answer_lost_locked): mark a write of the hook's kind and path. */
static void answer_fault_mark(struct coord__op *op, enum coord_req kind)
{
    struct coord_session *s = op->s;
    if (!s->fault_answer ||
        (s->fault_answer_kind != COORD_REQ_N && s->fault_answer_kind != (int)kind))
        return;
    if (kind != COORD_REQ_MULTI) {
        op->fault_answer = op->path && strstr(op->path, s->fault_answer);
        return;
    }
    for (int i = 0; i < op->nops && !op->fault_answer; i++) {
        const char *p = mop_path(&op->ops[i]);
        op->fault_answer = p && strstr(p, s->fault_answer);
    }
}

static void issued(struct coord__op *op, enum coord_req kind, int zrc)
{
    struct coord_session *s = op->s;
    op->counted = true;
    op->issued_ms = clock_boot_ms();

    s->inflight++;
    if (zrc == ZOK) {
        /* Its answer may have come already (then it is queued); else the library holds it. */
        pthread_mutex_lock(&s->mu);
        if (!op->queued) {
            op->in_lib = true;
            op->lib_prev = NULL;
            op->lib_next = s->lib_ops;
            if (s->lib_ops)
                s->lib_ops->lib_prev = op;
            s->lib_ops = op;
        }
        pthread_mutex_unlock(&s->mu);
        s->sent[kind]++;
        coord__count_path(s, kind, kind == COORD_REQ_MULTI ? multi_path(op) : op->path);
        return;
    }
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

static bool too_big(struct coord__op *op, size_t bytes)
{
    if (bytes + COORD__MULTI_FRAME <= op->s->max_req)
        return false;
    log_warn(MOD, "event=request-too-large path=%s bytes=%zu max=%zu", op->path ? op->path : "-",
             bytes, op->s->max_req);
    op->rc = COORD__ZTOOBIG;
    push(op->s, op);
    return true;
}

static int zmode(int flags)
{
    if (flags & COORD__CONTAINER)
        return ZOO_CONTAINER;
    return ((flags & COORD_EPHEMERAL) ? ZOO_EPHEMERAL : ZOO_PERSISTENT) |
           ((flags & COORD_SEQUENTIAL) ? ZOO_SEQUENCE : 0);
}

void coord__zk_create(struct coord__op *op, const char *path, const char *data, int flags)
{
    struct coord_session *s = op->s;
    op->path = xstrdup(path);
    if (refused(op) || too_big(op, coord__size_create(path, data)))
        return;
    answer_fault_mark(op, COORD_REQ_CREATE);
    issued(op, COORD_REQ_CREATE,
           zoo_acreate2(s->zh, path, data, data ? (int)strlen(data) : -1, coord__acl_for(s, path),
                        zmode(flags), c_string_stat, op));
}

void coord__zk_delete(struct coord__op *op, const char *path, int version)
{
    op->path = xstrdup(path);
    if (refused(op))
        return;
    answer_fault_mark(op, COORD_REQ_DELETE);
    issued(op, COORD_REQ_DELETE, zoo_adelete(op->s->zh, path, version, c_void, op));
}

void coord__zk_exists(struct coord__op *op, const char *path, bool watch)
{
    op->path = xstrdup(path);
    op->fault_point = true;
    op->fault_hold = op->s->fault_hold && strstr(path, op->s->fault_hold);
    if (refused(op))
        return;
    issued(op, COORD_REQ_EXISTS, zoo_aexists(op->s->zh, path, watch, c_stat, op));
}

void coord__zk_get(struct coord__op *op, const char *path, bool watch)
{
    op->path = xstrdup(path);
    op->fault_point = true;
    op->fault_hold = op->s->fault_hold && strstr(path, op->s->fault_hold);
    if (refused(op))
        return;
    issued(op, COORD_REQ_GET, zoo_aget(op->s->zh, path, watch, c_data, op));
}

void coord__zk_set(struct coord__op *op, const char *path, const char *data, int version)
{
    op->path = xstrdup(path);
    if (refused(op) || too_big(op, coord__size_set(path, data)))
        return;
    answer_fault_mark(op, COORD_REQ_SET);
    issued(op, COORD_REQ_SET,
           zoo_aset(op->s->zh, path, data, (int)strlen(data), version, c_stat, op));
}

void coord__zk_children(struct coord__op *op, const char *path, bool watch)
{
    op->path = xstrdup(path);
    op->fault_point = true;
    op->fault_hold = op->s->fault_hold && strstr(path, op->s->fault_hold);
    if (refused(op))
        return;
    issued(op, COORD_REQ_CHILDREN, zoo_aget_children2(op->s->zh, path, watch, c_strings_stat, op));
}

/* An ACL read: each entry as a string "<perms> <scheme> <id>" in op->strv. */
static void c_acl(int rc, struct ACL_vector *acl, struct Stat *stat, const void *data)
{
    struct coord__op *op = (struct coord__op *)data;
    if (!completion_begin(op))
        return;
    op->rc = rc;
    if (rc == ZOK && acl) {
        op->strc = acl->count;
        op->strv = xcalloc((size_t)(acl->count ? acl->count : 1), sizeof(char *));
        for (int i = 0; i < acl->count; i++)
            op->strv[i] = xasprintf("%d %s %s", (int)acl->data[i].perms, acl->data[i].id.scheme,
                                    acl->data[i].id.id);
    }
    if (rc == ZOK && stat) {
        op->stat = *stat;
        op->has_stat = true;
    }
    completion_end(op);
}

void coord__zk_get_acl(struct coord__op *op, const char *path)
{
    op->path = xstrdup(path);
    if (refused(op))
        return;
    issued(op, COORD_REQ_GET, zoo_aget_acl(op->s->zh, path, c_acl, op)); /* counted as a read */
}

void coord__zk_set_acl(struct coord__op *op, const char *path, int version, struct ACL_vector *acl)
{
    op->path = xstrdup(path);
    if (refused(op))
        return;
    issued(op, COORD_REQ_SET,
           zoo_aset_acl(op->s->zh, path, version, acl, c_void, op)); /* a write */
}

void coord__zk_sync(struct coord__op *op, const char *path)
{
    op->path = xstrdup(path);
    if (refused(op))
        return;
    issued(op, COORD_REQ_SYNC, zoo_async(op->s->zh, path, c_string, op));
}

/* ---- multi-ops and sizes ------------------------------------------------ */

/* A string: its length (4 bytes) and its bytes. */
static size_t jstr(const char *s)
{
    return 4 + (s ? strlen(s) : 0);
}

/* The largest ACL list coord sends: the owner's all, a tenant's grant and
   COORD_ACL_MAX_READERS readers' read (acl.c). */
#define ACL_BYTES                                                                                  \
    (4 + (COORD_ACL_MAX_READERS + 1) * (4 + 4 + 6 + 4 + COORD_ACL_MAX_ID) +                        \
     (4 + 4 + 6 + 4 + COORD_ACL_MAX_GRANT_ID))
#define MULTI_HEADER 9

size_t coord__size_create(const char *path, const char *data)
{
    return MULTI_HEADER + jstr(path) + jstr(data) + ACL_BYTES + 4;
}

size_t coord__size_create_len(size_t path_len, size_t data_len)
{
    return MULTI_HEADER + 4 + path_len + 4 + data_len + ACL_BYTES + 4;
}

size_t coord__size_path_op(const char *path)
{
    return MULTI_HEADER + jstr(path) + 4;
}

size_t coord__size_set(const char *path, const char *data)
{
    return MULTI_HEADER + jstr(path) + jstr(data) + 4;
}

void coord__multi_init(struct coord__op *op, int n)
{
    op->nops = n;
    op->ops = xcalloc((size_t)(n ? n : 1), sizeof(zoo_op_t));
    op->results = xcalloc((size_t)(n ? n : 1), sizeof(zoo_op_result_t));
    op->bufs = xcalloc((size_t)(n ? n : 1), sizeof(char *));
    op->strs = xcalloc((size_t)(n ? n : 1) * 2, sizeof(char *));
}

static const char *keep(struct coord__op *op, const char *str)
{
    char *c = xstrdup(str);
    op->strs[op->nstrs++] = c;
    return c;
}

void coord__mop_create(struct coord__op *op, int i, const char *path, const char *data, int flags)
{
    size_t blen = strlen(path) + 16;
    op->bufs[i] = xcalloc(1, blen);
    const char *d = data ? keep(op, data) : NULL;
    zoo_create_op_init(&op->ops[i], keep(op, path), d, d ? (int)strlen(d) : -1,
                       coord__acl_for(op->s, path), zmode(flags), op->bufs[i], (int)blen);
    op->bytes += coord__size_create(path, data);
}

void coord__mop_delete(struct coord__op *op, int i, const char *path, int version)
{
    zoo_delete_op_init(&op->ops[i], keep(op, path), version);
    op->bytes += coord__size_path_op(path);
}

void coord__mop_set(struct coord__op *op, int i, const char *path, const char *data, int version)
{
    const char *p = keep(op, path);
    const char *d = keep(op, data);
    zoo_set_op_init(&op->ops[i], p, d, (int)strlen(d), version, NULL);
    op->bytes += coord__size_set(path, data);
}

void coord__mop_check(struct coord__op *op, int i, const char *path, int version)
{
    zoo_check_op_init(&op->ops[i], keep(op, path), version);
    op->bytes += coord__size_path_op(path);
}

void coord__zk_multi(struct coord__op *op)
{
    if (refused(op) || too_big(op, op->bytes))
        return;
    answer_fault_mark(op, COORD_REQ_MULTI);
    int zrc = zoo_amulti(op->s->zh, op->nops, op->ops, op->results, c_void, op);
    if (zrc != ZOK) {
        /* The library may have freed some of the op's strings: leak them rather. */
        op->nstrs = 0;
    }
    issued(op, COORD_REQ_MULTI, zrc);
}

int coord__multi_failed(const struct coord__op *op)
{
    if (op->rc == ZOK || !op->results || !op->counted || coord__zrc_unknown(op->rc))
        return -1;
    for (int i = 0; i < op->nops; i++)
        if (op->results[i].err != ZOK && op->results[i].err != ZRUNTIMEINCONSISTENCY)
            return i;
    return -1;
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
    struct coord_session *s = tc->s;
    timer_unlink(tc);
    event_free(tc->ev);
    free(tc);
    s->cb_depth++;
    fn(owner);
    s->cb_depth--;
    coord__callbacks_done(s);
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

void coord__fire_all_timers(struct coord_session *s)
{
    while (s->timers) {
        struct timer_closure *tc = s->timers;
        event_del(tc->ev);
        on_timer(-1, EV_TIMEOUT, tc);
    }
}

/* ---- ensure_path ------------------------------------------------------- */

struct ensure {
    coord_done_cb done;
    void *arg;
};

static void ensure_done(struct coord__op *op);

static void ensure_seen(struct coord__op *op)
{
    struct ensure *e = op->owner;
    int rc = op->rc == ZOK ? 0 : coord__zrc(op->rc == ZNONODE ? ZNOAUTH : op->rc);
    if (rc)
        log_warn(MOD, "event=ensure-path-failed path=%s zrc=%d", op->path, op->rc);
    if (e->done)
        e->done(rc, e->arg);
    free(e);
}

static void ensure_done(struct coord__op *op)
{
    struct ensure *e = op->owner;
    if (op->rc == ZNOAUTH) {
        /* A worker may not create in droverd's directories, whose create is refused before
           the server looks whether the znode exists: it is there if it exists. */
        coord__zk_exists(coord__op_new(op->s, ensure_seen, e), op->path, false);
        return;
    }
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

struct sure {
    char *path;
    int version;
    unsigned gen;
    unsigned tries;
    coord_done_cb done;
    void *arg;
};

static void sure_send(struct coord_session *s, struct sure *d);

static void sure_end(struct sure *d, int rc)
{
    if (d->done)
        d->done(rc, d->arg);
    free(d->path);
    free(d);
}

struct sure_retry {
    struct coord_session *s;
    struct sure *d;
};

static void sure_retry(void *owner)
{
    struct sure_retry *r = owner;
    sure_send(r->s, r->d);
    free(r);
}

static void sure_done(struct coord__op *op)
{
    struct sure *d = op->owner;
    struct coord_session *s = op->s;
    /* ZCLOSING while the session is not closing: the library closed the handle because its
     * session expired (coord replaces it), answering what was pending. A delete bound to
     * that session's generation is done (its ephemeral went with the session); an unbound
     * one is asked again on the new handle. */
    bool replaced = op->rc == ZCLOSING && !s->closing;
    if ((coord__zrc_unknown(op->rc) || replaced) && !s->closing && (!d->gen || d->gen == s->gen)) {
        /* Unknown: ask again (the same path and version) once reconnected. */
        struct sure_retry *r = xcalloc(1, sizeof(*r));
        r->s = s;
        r->d = d;
        coord__timer(s, coord__backoff_ms(s, d->tries++), sure_retry, r);
        return;
    }
    int rc = 0;
    if (s->closing && (op->rc == ZCLOSING || coord__zrc_unknown(op->rc)))
        rc = DRV_EAGAIN;
    else if (op->rc != ZOK && op->rc != ZNONODE && op->rc != ZSESSIONEXPIRED &&
             op->rc != ZINVALIDSTATE && !replaced && !coord__zrc_unknown(op->rc)) {
        log_warn(MOD, "event=delete-failed path=%s zrc=%d", d->path, op->rc);
        rc = coord__zrc(op->rc);
    }
    sure_end(d, rc);
}

static void sure_send(struct coord_session *s, struct sure *d)
{
    struct coord__op *op = coord__op_new(s, sure_done, d);
    if (d->gen)
        coord__op_bind(op, d->gen);
    coord__zk_delete(op, d->path, d->version);
}

void coord__delete_done(struct coord_session *s, const char *path, int version, unsigned gen,
                        coord_done_cb done, void *arg)
{
    struct sure *d = xcalloc(1, sizeof(*d));
    d->path = xstrdup(path);
    d->version = version;
    d->gen = gen;
    d->done = done;
    d->arg = arg;
    sure_send(s, d);
}

void coord__delete_sure(struct coord_session *s, const char *path, int version)
{
    coord__delete_done(s, path, version, 0, NULL, NULL);
}
