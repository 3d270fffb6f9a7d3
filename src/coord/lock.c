/*
 * lock: ZooKeeper locks with fencing tokens, leader election, fenced multi-ops.
 *
 * Recipe (ZooKeeper's "Locks" recipe, without the herd effect):
 *   1. create <dir>/c-<session id>-<n>-<seq> (ephemeral, sequential) holding
 *      the holder's JSON. The prefix is unique to this session and attempt, so
 *      after a connection loss in the middle of the create the contender lists
 *      <dir> and looks for it before creating again (a node found that belongs
 *      to another session is deleted and created again).
 *   2. list <dir> (no watch) and sort the contenders by sequence number.
 *   3. first: held. The fencing token is the contender's creation zxid, which
 *      grows with the sequence, so it strictly increases from holder to holder.
 *      An exists-watch on its own znode reports a delete (COORD_LOCK_LOST).
 *   4. else: exists-watch on the predecessor only; when it goes, back to 2.
 *
 * States (loop thread only):
 *
 *   IDLE --acquire--> CREATING --ok--> LISTING --first--> HELD
 *                       |  ^              |  ^              |
 *              lost conn|  |not found     |  |pred gone     | node deleted or
 *                       v  |              v  |              | session expired
 *                    RECOVERING        WAITING              v
 *                                                         IDLE (LOST)
 *   any acquiring state --session expired--> WAIT_SESSION --new session--> CREATING
 *   any acquiring state --deadline / try-lock busy--> IDLE (TIMEDOUT / BUSY)
 *
 * Every op carries the attempt number at issue; a result from an older
 * attempt is stale and only cleaned up after (a contender it created is
 * deleted). Objects are reference counted by their in-flight ops.
 */
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "coord_int.h"
#include "log.h"
#include "xalloc.h"

#define MOD "coord"
#define RETRY_MS 200

enum lstate { L_IDLE, L_CREATING, L_RECOVERING, L_LISTING, L_WAITING, L_HELD, L_WAIT_SESSION };

struct coord_lock {
    struct coord_session *s;
    char *dir;
    char *json;
    coord_lock_cb cb;
    void *arg;
    int refs;
    bool dead;
    enum lstate st;
    unsigned attempt;
    char *want; /* <dir>/c-<prefix>: the path asked of create */
    char *node; /* the contender's path, once known */
    int64_t token;
    char *pred;
    bool try_only;
    struct event *deadline;
};

static void lock_unref(struct coord_lock *l)
{
    if (--l->refs > 0)
        return;
    free(l->dir);
    free(l->json);
    free(l->want);
    free(l->node);
    free(l->pred);
    free(l);
}

static struct coord__op *lock_op(struct coord_lock *l, void (*done)(struct coord__op *))
{
    l->refs++;
    struct coord__op *op = coord__op_new(l->s, done, l);
    op->tag = (intptr_t)l->attempt;
    return op;
}

static bool stale(struct coord__op *op)
{
    struct coord_lock *l = op->owner;
    return l->dead || op->tag != (intptr_t)l->attempt;
}

static bool session_gone(int zrc)
{
    return zrc == ZSESSIONEXPIRED || zrc == ZINVALIDSTATE || zrc == ZCLOSING;
}

/* The deadline timer holds a reference; the caller holds another. */
static void cancel_deadline(struct coord_lock *l)
{
    if (l->deadline) {
        coord__timer_cancel(l->deadline);
        l->deadline = NULL;
        l->refs--;
    }
}

/* Forget the contender (the caller deletes it if needed) and stop watching. */
static void reset(struct coord_lock *l, enum lstate st)
{
    l->attempt++;
    l->st = st;
    FREE_NULL(l->node);
    FREE_NULL(l->pred);
    l->token = 0;
    coord__watch_remove(l->s, l);
    if (st == L_IDLE)
        cancel_deadline(l);
}

static void finish(struct coord_lock *l, enum coord_lock_event ev)
{
    if (l->node)
        coord__delete_sure(l->s, l->node, -1);
    reset(l, L_IDLE);
    l->cb(l, ev, l->arg);
}

/* ---- cleaning up after a stale create whose outcome is unknown --------- */

static void cleanup_listed(struct coord__op *op)
{
    char *want = op->owner;
    if (op->rc == ZOK) {
        const char *prefix = coord__basename(want);
        size_t plen = strlen(prefix);
        for (int i = 0; i < op->strc; i++)
            if (strncmp(op->strv[i], prefix, plen) == 0) {
                char *p = xasprintf("%s/%s", op->path, op->strv[i]);
                coord__delete_sure(op->s, p, -1);
                free(p);
            }
    }
    free(want);
}

static void cleanup_prefix(struct coord_session *s, const char *want)
{
    char *dir = xstrndup(want, (size_t)(coord__basename(want) - want - 1));
    coord__zk_children(coord__op_new(s, cleanup_listed, xstrdup(want)), dir, false);
    free(dir);
}

/* ---- the recipe --------------------------------------------------------- */

static void start_create(struct coord_lock *l);
static void list(struct coord_lock *l);

static void recover(void *owner);

struct retry {
    struct coord_lock *l;
    unsigned attempt;
};

static void retry_timer(void *owner)
{
    struct retry *r = owner;
    struct coord_lock *l = r->l;
    if (!l->dead && r->attempt == l->attempt) {
        if (l->st == L_LISTING || l->st == L_WAITING) {
            list(l);
        } else if (l->st == L_RECOVERING) {
            l->refs++;
            recover(l);
        }
    }
    free(r);
    lock_unref(l);
}

/* Retry the current step of this attempt after a pause. */
static void later(struct coord_lock *l)
{
    struct retry *r = xcalloc(1, sizeof(*r));
    r->l = l;
    r->attempt = l->attempt;
    l->refs++;
    coord__timer(l->s, RETRY_MS, retry_timer, r);
}

static void on_node_event(void *owner, int type, const char *path)
{
    struct coord_lock *l = owner;
    if (l->st == L_HELD && l->node && strcmp(path, l->node) == 0 && type == ZOO_DELETED_EVENT) {
        log_warn(MOD, "event=lock-lost reason=node-deleted node=%s", l->node);
        reset(l, L_IDLE);
        l->cb(l, COORD_LOCK_LOST, l->arg);
    }
}

static void held_watch_set(struct coord__op *op)
{
    struct coord_lock *l = op->owner;
    if (!stale(op) && l->st == L_HELD && op->rc == ZNONODE) {
        log_warn(MOD, "event=lock-lost reason=node-gone node=%s", l->node);
        reset(l, L_IDLE);
        l->cb(l, COORD_LOCK_LOST, l->arg);
    }
    lock_unref(l);
}

static void on_pred_event(void *owner, int type, const char *path)
{
    struct coord_lock *l = owner;
    if (l->st == L_WAITING && l->pred && strcmp(path, l->pred) == 0)
        list(l);
}

static void pred_checked(struct coord__op *op)
{
    struct coord_lock *l = op->owner;
    if (!stale(op) && l->st == L_WAITING) {
        if (op->rc == ZNONODE)
            list(l);
        else if (op->rc != ZOK)
            later(l);
        /* ZOK: wait for the predecessor's watch. */
    }
    lock_unref(l);
}

struct contender {
    int64_t seq;
    const char *name;
};

static int cmp_contender(const void *a, const void *b)
{
    const struct contender *x = a, *y = b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void listed(struct coord__op *op)
{
    struct coord_lock *l = op->owner;
    if (stale(op) || (l->st != L_LISTING && l->st != L_WAITING)) {
        lock_unref(l);
        return;
    }
    if (op->rc != ZOK) {
        if (session_gone(op->rc))
            reset(l, L_WAIT_SESSION);
        else
            later(l);
        lock_unref(l);
        return;
    }
    struct contender *c = xcalloc((size_t)op->strc + 1, sizeof(*c));
    int n = 0;
    for (int i = 0; i < op->strc; i++) {
        int64_t seq = coord__seq_of(op->strv[i]);
        if (strncmp(op->strv[i], "c-", 2) == 0 && seq >= 0)
            c[n++] = (struct contender){seq, op->strv[i]};
    }
    qsort(c, (size_t)n, sizeof(*c), cmp_contender);
    const char *mine = coord__basename(l->node);
    int idx = -1;
    for (int i = 0; i < n; i++)
        if (strcmp(c[i].name, mine) == 0)
            idx = i;
    if (idx < 0) {
        /* Our contender vanished (deleted by hand?): contend again. */
        log_warn(MOD, "event=lock-contender-vanished node=%s", l->node);
        FREE_NULL(l->node);
        start_create(l);
    } else if (idx == 0) {
        l->st = L_HELD;
        cancel_deadline(l);
        coord__watch_remove(l->s, l);
        coord__watch_add(l->s, l->node, l, on_node_event);
        coord__zk_exists(lock_op(l, held_watch_set), l->node, true);
        log_info(MOD, "event=lock-acquired node=%s token=%lld", l->node, (long long)l->token);
        l->cb(l, COORD_LOCK_ACQUIRED, l->arg);
    } else if (l->try_only) {
        finish(l, COORD_LOCK_BUSY);
    } else {
        free(l->pred);
        l->pred = xasprintf("%s/%s", l->dir, c[idx - 1].name);
        l->st = L_WAITING;
        coord__watch_remove(l->s, l);
        coord__watch_add(l->s, l->pred, l, on_pred_event);
        coord__zk_exists(lock_op(l, pred_checked), l->pred, true);
    }
    free(c);
    lock_unref(l);
}

static void list(struct coord_lock *l)
{
    l->st = L_LISTING;
    coord__zk_children(lock_op(l, listed), l->dir, false);
}

static void created(struct coord__op *op);

static void issue_create(struct coord_lock *l)
{
    l->st = L_CREATING;
    coord__zk_create(lock_op(l, created), l->want, l->json, COORD_EPHEMERAL | COORD_SEQUENTIAL);
}

static void adopt_checked(struct coord__op *op)
{
    struct coord_lock *l = op->owner;
    if (!stale(op) && l->st == L_RECOVERING) {
        if (op->rc == ZOK && op->stat.ephemeralOwner == coord_session_id(l->s)) {
            l->node = xstrdup(op->path);
            l->token = op->stat.czxid;
            list(l);
        } else if (op->rc == ZOK) {
            /* Made by an older session: delete it and start afresh. */
            coord__delete_sure(l->s, op->path, -1);
            start_create(l);
        } else if (op->rc == ZNONODE) {
            start_create(l);
        } else if (session_gone(op->rc)) {
            reset(l, L_WAIT_SESSION);
        } else {
            later(l);
        }
    }
    lock_unref(l);
}

static void recover_listed(struct coord__op *op)
{
    struct coord_lock *l = op->owner;
    if (!stale(op) && l->st == L_RECOVERING) {
        if (op->rc == ZOK) {
            const char *prefix = coord__basename(l->want);
            size_t plen = strlen(prefix);
            const char *found = NULL;
            for (int i = 0; i < op->strc; i++)
                if (strncmp(op->strv[i], prefix, plen) == 0)
                    found = op->strv[i];
            if (found) {
                char *p = xasprintf("%s/%s", l->dir, found);
                coord__zk_exists(lock_op(l, adopt_checked), p, false);
                free(p);
            } else {
                /* The lost create did not happen: create again, same name. */
                issue_create(l);
            }
        } else if (session_gone(op->rc)) {
            reset(l, L_WAIT_SESSION);
        } else {
            later(l);
        }
    }
    lock_unref(l);
}

static void recover(void *owner)
{
    struct coord_lock *l = owner;
    if (!l->dead && l->st == L_RECOVERING)
        coord__zk_children(lock_op(l, recover_listed), l->dir, false);
    lock_unref(l);
}

static void dir_ready(int rc, void *arg)
{
    struct coord_lock *l = arg;
    if (!l->dead && l->st == L_CREATING)
        issue_create(l);
    lock_unref(l);
}

static void created(struct coord__op *op)
{
    struct coord_lock *l = op->owner;
    if (stale(op)) {
        /* Given up meanwhile: do not leave a contender behind. */
        if (op->rc == ZOK)
            coord__delete_sure(l->s, op->value, -1);
        else if (coord__zrc_unknown(op->rc))
            cleanup_prefix(l->s, op->path);
        lock_unref(l);
        return;
    }
    if (op->rc == ZOK) {
        l->node = xstrdup(op->value);
        l->token = op->stat.czxid;
        list(l);
    } else if (op->rc == ZNONODE) {
        l->refs++;
        /* A container: the server deletes it once its last contender is gone. */
        coord__ensure_path(l->s, l->dir, COORD__CONTAINER, dir_ready, l);
    } else if (coord__zrc_unknown(op->rc)) {
        log_info(MOD, "event=lock-create-unknown want=%s zrc=%d", l->want, op->rc);
        l->st = L_RECOVERING;
        later(l);
    } else if (session_gone(op->rc)) {
        reset(l, L_WAIT_SESSION);
    } else {
        log_error(MOD, "event=lock-create-failed dir=%s zrc=%d", l->dir, op->rc);
        finish(l, COORD_LOCK_ERROR);
    }
    lock_unref(l);
}

static void start_create(struct coord_lock *l)
{
    char prefix[64];
    coord__unique_prefix(l->s, prefix, sizeof(prefix));
    free(l->want);
    l->want = xasprintf("%s/c-%s", l->dir, prefix);
    issue_create(l);
}

static void on_deadline(void *owner)
{
    struct coord_lock *l = owner;
    l->deadline = NULL;
    if (!l->dead && l->st != L_HELD && l->st != L_IDLE)
        finish(l, COORD_LOCK_TIMEDOUT);
    lock_unref(l);
}

static void lock_session(void *owner, enum coord__session_event ev)
{
    struct coord_lock *l = owner;
    if (l->dead)
        return;
    if (ev == COORD__SUSPECT) {
        if (l->st == L_HELD) {
            /* Give it up for good: the delete goes out once connected (if the session lives). */
            log_warn(MOD, "event=lock-lost reason=disconnected-too-long node=%s", l->node);
            coord__delete_sure(l->s, l->node, -1);
            reset(l, L_IDLE);
            l->cb(l, COORD_LOCK_LOST, l->arg);
        }
    } else if (ev == COORD__LOST) {
        if (l->st == L_HELD) {
            log_warn(MOD, "event=lock-lost reason=session-expired node=%s", l->node);
            reset(l, L_IDLE);
            l->cb(l, COORD_LOCK_LOST, l->arg);
        } else if (l->st != L_IDLE) {
            reset(l, L_WAIT_SESSION);
        }
    } else if (ev == COORD__NEW_SESSION && l->st == L_WAIT_SESSION) {
        start_create(l);
    }
}

struct coord_lock *coord_lock_new(struct coord_session *s, const char *dir, const char *holder_json,
                                  coord_lock_cb cb, void *arg)
{
    struct coord_lock *l = xcalloc(1, sizeof(*l));
    l->s = s;
    l->dir = xstrdup(dir);
    l->json = xstrdup(holder_json && *holder_json ? holder_json : "{}");
    l->cb = cb;
    l->arg = arg;
    l->refs = 1;
    coord__listener_add(s, l, lock_session);
    return l;
}

int coord_lock_acquire(struct coord_lock *l, int timeout_ms)
{
    if (l->st != L_IDLE)
        return DRV_EAGAIN;
    l->try_only = timeout_ms == 0;
    if (timeout_ms > 0) {
        l->refs++;
        l->deadline = coord__timer(l->s, timeout_ms, on_deadline, l);
    }
    start_create(l);
    return 0;
}

bool coord_lock_held(const struct coord_lock *l)
{
    return l->st == L_HELD;
}

int64_t coord_lock_token(const struct coord_lock *l)
{
    return l->st == L_HELD ? l->token : 0;
}

const char *coord_lock_node(const struct coord_lock *l)
{
    return l->node;
}

const char *coord_lock_waiting_on(const struct coord_lock *l)
{
    return l->st == L_WAITING ? l->pred : NULL;
}

void coord_lock_release(struct coord_lock *l)
{
    if (l->st == L_IDLE)
        return;
    if (l->node) {
        log_info(MOD, "event=lock-release node=%s", l->node);
        coord__delete_sure(l->s, l->node, -1);
    }
    reset(l, L_IDLE);
}

void coord_lock_free(struct coord_lock *l)
{
    if (!l)
        return;
    coord_lock_release(l);
    l->dead = true;
    coord__listener_remove(l->s, l);
    lock_unref(l);
}

/* ---- leader election ---------------------------------------------------- */

struct coord_election {
    struct coord_lock *lock;
    coord_election_cb cb;
    void *arg;
    bool leader;
    int refs;
    bool dead;
};

static void election_unref(struct coord_election *e)
{
    if (--e->refs == 0)
        free(e);
}

static void election_again(void *owner)
{
    struct coord_election *e = owner;
    if (!e->dead)
        coord_lock_acquire(e->lock, -1);
    election_unref(e);
}

static void election_event(struct coord_lock *l, enum coord_lock_event ev, void *arg)
{
    struct coord_election *e = arg;
    if (ev == COORD_LOCK_ACQUIRED) {
        e->leader = true;
        e->cb(e, true, coord_lock_token(l), e->arg);
        return;
    }
    bool was = e->leader;
    e->leader = false;
    if (was)
        e->cb(e, false, 0, e->arg);
    /* Contend again (after a lost session, the new one is up by then or soon). */
    e->refs++;
    coord__timer(l->s, RETRY_MS, election_again, e);
}

struct coord_election *coord_election_new(struct coord_session *s, const char *name,
                                          const char *holder_json, coord_election_cb cb, void *arg)
{
    struct coord_election *e = xcalloc(1, sizeof(*e));
    char *dir = xasprintf("/drover/elections/%s", name);
    e->cb = cb;
    e->arg = arg;
    e->refs = 1;
    e->lock = coord_lock_new(s, dir, holder_json, election_event, e);
    free(dir);
    coord_lock_acquire(e->lock, -1);
    return e;
}

bool coord_election_leader(const struct coord_election *e)
{
    return e->leader;
}

void coord_election_free(struct coord_election *e)
{
    if (!e)
        return;
    e->dead = true;
    coord_lock_free(e->lock);
    election_unref(e);
}

/* ---- transactions and fenced writes -------------------------------------- */

enum top { T_CHECK, T_CREATE, T_SET, T_DELETE };

struct trec {
    enum top type;
    char *path;
    char *json;
    int version;
    int flags;
};

struct coord_txn {
    struct trec *r;
    size_t n, cap;
};

struct coord_txn *coord_txn_new(void)
{
    return xcalloc(1, sizeof(struct coord_txn));
}

static void txn_add(struct coord_txn *t, enum top type, const char *path, const char *json,
                    int version, int flags)
{
    XGROW(t->r, t->cap, t->n + 1);
    t->r[t->n++] = (struct trec){type, xstrdup(path), json ? xstrdup(json) : NULL, version, flags};
}

void coord_txn_check(struct coord_txn *t, const char *path, int version)
{
    txn_add(t, T_CHECK, path, NULL, version, 0);
}

void coord_txn_create(struct coord_txn *t, const char *path, const char *json, int flags)
{
    txn_add(t, T_CREATE, path, json ? json : "{}", -1, flags);
}

void coord_txn_set(struct coord_txn *t, const char *path, const char *json, int version)
{
    txn_add(t, T_SET, path, json, version, 0);
}

void coord_txn_delete(struct coord_txn *t, const char *path, int version)
{
    txn_add(t, T_DELETE, path, NULL, version, 0);
}

size_t coord_txn_count(const struct coord_txn *t)
{
    return t->n;
}

void coord_txn_free(struct coord_txn *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++) {
        free(t->r[i].path);
        free(t->r[i].json);
    }
    free(t->r);
    free(t);
}

struct commit {
    struct coord_session *s;
    struct coord_lock *fence; /* a reference is held */
    unsigned fence_attempt;
    coord_txn_cb cb;
    void *arg;
    int first; /* index of the first user op in the multi (1 when fenced) */
    struct coord_txn *t;
    char *prefix;   /* "<session>-<n>-" appended to sequential creates, or NULL */
    char **created; /* per user op, after a recovery */
    int searching;  /* listings in flight during a recovery */
    bool found_any;
    bool search_failed;
};

static void send_commit(struct commit *c);
static void recover_txn(void *owner);

static void commit_end(struct commit *c, struct coord_txn_result *r)
{
    if (c->cb)
        c->cb(r, c->arg);
    if (c->fence)
        lock_unref(c->fence);
    if (c->created) {
        for (size_t i = 0; i < c->t->n; i++)
            free(c->created[i]);
        free(c->created);
    }
    coord_txn_free(c->t);
    free(c->prefix);
    free(c);
}

static char *parent_of(const char *path)
{
    const char *b = coord__basename(path);
    return b - path > 1 ? xstrndup(path, (size_t)(b - path - 1)) : xstrdup("/");
}

/* After an unknown outcome: a listing of one sequential create's parent. */
static void recover_listed_txn(struct coord__op *op)
{
    struct commit *c = op->owner;
    size_t i = (size_t)op->tag;
    if (op->rc == ZOK) {
        const char *want = coord__basename(c->t->r[i].path); /* "<name><prefix>" */
        size_t wl = strlen(want);
        for (int k = 0; k < op->strc; k++)
            if (strncmp(op->strv[k], want, wl) == 0 && coord__seq_of(op->strv[k]) >= 0) {
                free(c->created[i]);
                c->created[i] = xasprintf("%s/%s", op->path, op->strv[k]);
                c->found_any = true;
            }
    } else if (op->rc != ZNONODE) {
        c->search_failed = true;
    }
    if (--c->searching > 0)
        return;
    if (c->search_failed) {
        /* Cannot tell yet (still disconnected?): look again later. */
        c->search_failed = false;
        coord__timer(c->s, RETRY_MS, recover_txn, c);
    } else if (c->found_any) {
        /* The lost multi-op went through (and so all of it). */
        log_info(MOD, "event=txn-recovered prefix=%s", c->prefix);
        struct coord_txn_result r = {.rc = 0, .failed_op = -1, .created = c->created, .n = c->t->n};
        commit_end(c, &r);
    } else {
        send_commit(c);
    }
}

static void recover_txn(void *owner)
{
    struct commit *c = owner;
    c->found_any = false;
    c->searching = 0;
    if (!c->created)
        c->created = xcalloc(c->t->n, sizeof(char *));
    for (size_t i = 0; i < c->t->n; i++)
        if (c->t->r[i].type == T_CREATE && (c->t->r[i].flags & COORD_SEQUENTIAL))
            c->searching++;
    int n = c->searching;
    for (size_t i = 0; i < c->t->n && n > 0; i++) {
        if (c->t->r[i].type != T_CREATE || !(c->t->r[i].flags & COORD_SEQUENTIAL))
            continue;
        char *parent = parent_of(c->t->r[i].path);
        struct coord__op *op = coord__op_new(c->s, recover_listed_txn, c);
        op->tag = (intptr_t)i;
        coord__zk_children(op, parent, false);
        free(parent);
        n--;
    }
}

static void committed(struct coord__op *op)
{
    struct commit *c = op->owner;
    struct coord_txn_result r = {.rc = 0, .failed_op = -1, .zrc = 0};
    r.n = c->t->n;
    r.created = xcalloc(r.n ? r.n : 1, sizeof(char *));
    if (op->rc == ZOK) {
        for (size_t i = 0; i < r.n; i++)
            if (c->t->r[i].type == T_CREATE)
                r.created[i] = op->bufs[c->first + (int)i];
    } else if (coord__zrc_unknown(op->rc) && c->prefix && !c->s->closing) {
        /* Lost answer, sequential creates: look for them before sending again. */
        free(r.created);
        log_info(MOD, "event=txn-unknown prefix=%s zrc=%d", c->prefix, op->rc);
        coord__timer(c->s, RETRY_MS, recover_txn, c);
        return;
    } else {
        int failed = -2;
        for (int i = 0; i < op->nops && failed == -2; i++)
            if (op->results[i].err != ZOK && op->results[i].err != ZRUNTIMEINCONSISTENCY)
                failed = i;
        int zrc = failed >= 0 ? op->results[failed].err : op->rc;
        r.zrc = zrc;
        bool fence_gone = c->fence && ((failed == 0 && zrc == ZNONODE) || zrc == ZSESSIONEXPIRED ||
                                       zrc == ZINVALIDSTATE);
        if (fence_gone) {
            r.rc = DRV_ECONFLICT;
            r.failed_op = -1;
            struct coord_lock *l = c->fence;
            if (!l->dead && l->st == L_HELD && l->attempt == c->fence_attempt) {
                log_warn(MOD, "event=lock-lost reason=fenced-write-rejected node=%s", l->node);
                reset(l, L_IDLE);
                l->cb(l, COORD_LOCK_LOST, l->arg);
            }
        } else if (failed >= c->first) {
            r.failed_op = failed - c->first;
            r.rc = zrc == ZBADVERSION || zrc == ZNONODE || zrc == ZNODEEXISTS ? DRV_ECONFLICT
                                                                              : coord__zrc(zrc);
        } else {
            r.rc = coord__zrc(op->rc);
        }
        log_info(MOD, "event=txn-failed zrc=%d failed_op=%d fenced=%s", zrc, r.failed_op,
                 c->fence ? "yes" : "no");
    }
    commit_end(c, &r);
    free(r.created);
}

static void fence_not_held(void *owner)
{
    struct commit *c = owner;
    struct coord_txn_result r = {.rc = DRV_ECONFLICT, .failed_op = -1, .zrc = ZNONODE};
    r.n = c->t->n;
    r.created = xcalloc(r.n ? r.n : 1, sizeof(char *));
    log_info(MOD, "event=txn-failed reason=fence-not-held");
    commit_end(c, &r);
    free(r.created);
}

static void send_commit(struct commit *c)
{
    struct coord_txn *t = c->t;
    struct coord_lock *fence = c->fence;
    if (fence && !(fence->st == L_HELD && fence->attempt == c->fence_attempt && fence->node)) {
        /* Not held (any more): fail without asking the server, on the next turn. */
        coord__timer(c->s, 0, fence_not_held, c);
        return;
    }
    struct coord__op *op = coord__op_new(c->s, committed, c);
    coord__multi_init(op, (int)t->n + c->first);
    if (fence)
        coord__mop_check(op, 0, fence->node, -1);
    for (size_t i = 0; i < t->n; i++) {
        struct trec *r = &t->r[i];
        int k = c->first + (int)i;
        switch (r->type) {
        case T_CHECK:
            coord__mop_check(op, k, r->path, r->version);
            break;
        case T_CREATE:
            coord__mop_create(op, k, r->path, r->json, r->flags);
            break;
        case T_SET:
            coord__mop_set(op, k, r->path, r->json, r->version);
            break;
        case T_DELETE:
            coord__mop_delete(op, k, r->path, r->version);
            break;
        }
    }
    coord__zk_multi(op);
}

void coord_txn_commit(struct coord_session *s, struct coord_txn *t, struct coord_lock *fence,
                      coord_txn_cb cb, void *arg)
{
    struct commit *c = xcalloc(1, sizeof(*c));
    c->s = s;
    c->cb = cb;
    c->arg = arg;
    c->t = t;
    c->fence = fence;
    c->first = fence ? 1 : 0;
    if (fence) {
        fence->refs++;
        c->fence_attempt = fence->attempt;
    }
    /* Sequential creates get a name prefix unique to this commit (see coord.h). */
    for (size_t i = 0; i < t->n; i++) {
        struct trec *r = &t->r[i];
        if (r->type != T_CREATE || !(r->flags & COORD_SEQUENTIAL))
            continue;
        if (!c->prefix) {
            char prefix[64];
            coord__unique_prefix(s, prefix, sizeof(prefix));
            c->prefix = xstrdup(prefix);
        }
        char *p = xasprintf("%s%s", r->path, c->prefix);
        free(r->path);
        r->path = p;
    }
    send_commit(c);
}

/* ---- safe sequential create ---------------------------------------------------- */

struct seq_create {
    coord_create_cb cb;
    void *arg;
};

static void seq_created(const struct coord_txn_result *r, void *arg)
{
    struct seq_create *sc = arg;
    if (sc->cb)
        sc->cb(r->rc, r->rc == 0 && r->n ? r->created[0] : NULL, sc->arg);
    free(sc);
}

void coord_create_seq(struct coord_session *s, const char *path, const char *json, int flags,
                      coord_create_cb cb, void *arg)
{
    struct seq_create *sc = xcalloc(1, sizeof(*sc));
    sc->cb = cb;
    sc->arg = arg;
    struct coord_txn *t = coord_txn_new();
    coord_txn_create(t, path, json, flags | COORD_SEQUENTIAL);
    coord_txn_commit(s, t, NULL, seq_created, sc);
}
