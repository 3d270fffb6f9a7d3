/*
 * lock: ZooKeeper locks with fencing tokens. (Leader election on top of them
 * is in election.c, fenced multi-ops in txn.c.)
 *
 * Recipe (ZooKeeper's "Locks" recipe, without the herd effect):
 *   1. create <dir>/c-<session id>-<random>-<n>-<seq> (ephemeral, sequential)
 *      holding the holder's JSON. The prefix is unique to this session
 *      object, process and attempt (coord__unique_prefix), so after a
 *      connection loss in the middle of the create the contender lists <dir>
 *      and looks for it before creating again; a node found with it that
 *      belongs to an older session of ours is deleted and created again.
 *   2. list <dir> (no watch) and sort the contenders by sequence number
 *      (skipped for sequence 0: the directory's first child ever is first).
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
 * deleted). Objects are reference counted by their in-flight ops. Retries
 * wait with backoff and jitter (coord__backoff_ms).
 *
 * Release with a completion (coord_lock_release_done, a hand-over): the
 * contender's delete is sent at once, bound to the session that created it,
 * and done runs when the server has answered or that session is gone (its
 * ephemeral with it). A contender whose create is still in flight is deleted
 * when the create is answered, or searched for by its prefix when the answer
 * was lost, and done waits for that.
 *
 * Cost: an uncontended acquire is 3 requests (create, list, exists) and 1
 * write; a new lock's, 3 and 2 writes (its directory's create sent ahead of the
 * contender's, in the same round trip, and no list: a contender of sequence 0
 * is the first the directory ever had, so it holds the lock at once); a waiter costs one
 * exists-watch on its predecessor, woken once; a release is 1 delete. The session routes events and
 * session changes to locks through hashed registries: O(1) per event with thousands of locks.
 *
 * Invariants (lock_check, Debug builds):
 *   1. node != NULL exactly in LISTING, WAITING and HELD, and then token != 0;
 *   2. pred != NULL exactly in WAITING;
 *   3. no deadline timer in IDLE or HELD;
 *   4. refs >= 1 while the owner has not freed the lock.
 */
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "coord_int.h"
#include "log.h"
#include "xalloc.h"

#define MOD "coord"

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
    bool staked; /* counted in the session's stakes (held, alive) */
    unsigned attempt;
    char *want; /* <dir>/c-<prefix>: the path asked of create */
    char *node; /* the contender's path, once known */
    int64_t token;
    char *pred;
    bool try_only;
    struct event *deadline;
    unsigned node_gen; /* the handle generation that created node */
    unsigned tries;    /* failures in a row of the current step: backoff */
    struct rel *rels;  /* release_done calls waiting for a create in flight */
    bool dir_sent;     /* the directory's create was sent ahead of the first contender */
};

/* A coord_lock_release_done waiting for the create of one attempt. */
struct rel {
    struct rel *next;
    unsigned attempt;
    coord_done_cb done;
    void *arg;
};

static void lock_check(const struct coord_lock *l)
{
    bool has_node = l->st == L_LISTING || l->st == L_WAITING || l->st == L_HELD;
    if ((l->node != NULL) != has_node || (has_node && !l->token) ||
        (l->pred != NULL) != (l->st == L_WAITING) ||
        (l->deadline && (l->st == L_IDLE || l->st == L_HELD)) || (!l->dead && l->refs < 1))
        abort();
}

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
    return coord__zrc_session_gone(zrc);
}

void coord__lock_ref(struct coord_lock *l)
{
    l->refs++;
}

void coord__lock_unref(struct coord_lock *l)
{
    lock_unref(l);
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

static void cleanup_prefix(struct coord_session *s, const char *want, coord_done_cb done,
                           void *arg);

/*
 * Forget the contender (the caller deletes it if needed) and stop watching.
 * An attempt abandoned while RECOVERING may have left a contender by a create
 * whose answer was lost: it is found by its prefix and deleted, or the next
 * attempt (same session) would wait on it forever.
 */
/* The session's stakes count this lock while it is held and alive (probes, session.c). */
static void stake(struct coord_lock *l)
{
    bool want = l->st == L_HELD && !l->dead;
    if (want != l->staked) {
        l->s->stakes += want ? 1 : -1;
        l->staked = want;
    }
}

static void reset(struct coord_lock *l, enum lstate st)
{
    if (l->st == L_RECOVERING && l->want)
        cleanup_prefix(l->s, l->want, NULL, NULL);
    l->attempt++;
    l->st = st;
    stake(l);
    FREE_NULL(l->node);
    FREE_NULL(l->pred);
    l->token = 0;
    l->tries = 0;
    coord__reg_watch_remove(&l->s->reg, l);
    if (st == L_IDLE)
        cancel_deadline(l);
    COORD__CHECK(lock_check, l);
}

static void finish(struct coord_lock *l, enum coord_lock_event ev)
{
    if (l->node)
        coord__delete_sure(l->s, l->node, -1);
    reset(l, L_IDLE);
    l->cb(l, ev, l->arg);
}

/* ---- cleaning up after a stale create whose outcome is unknown --------- */

/* Delete every contender named want<seq>; then done(0) (or DRV_EAGAIN: closing). */
struct cleanup {
    char *want;
    int pending;
    int rc;
    unsigned tries;
    coord_done_cb done;
    void *arg;
};

static void cleanup_start(struct coord_session *s, struct cleanup *c);

static void cleanup_part(int rc, void *arg)
{
    struct cleanup *c = arg;
    if (rc)
        c->rc = rc;
    if (--c->pending > 0)
        return;
    if (c->done)
        c->done(c->rc, c->arg);
    free(c->want);
    free(c);
}

struct cleanup_retry {
    struct coord_session *s;
    struct cleanup *c;
};

static void cleanup_again(void *owner)
{
    struct cleanup_retry *r = owner;
    cleanup_start(r->s, r->c);
    free(r);
}

static void cleanup_listed(struct coord__op *op)
{
    struct cleanup *c = op->owner;
    if (op->rc == ZOK) {
        const char *prefix = coord__basename(c->want);
        size_t plen = strlen(prefix);
        c->pending = 1;
        for (int i = 0; i < op->strc; i++)
            if (strncmp(op->strv[i], prefix, plen) == 0) {
                char *p = xasprintf("%s/%s", op->path, op->strv[i]);
                c->pending++;
                coord__delete_done(op->s, p, -1, 0, cleanup_part, c);
                free(p);
            }
        cleanup_part(0, c);
    } else if (coord__zrc_unknown(op->rc) && !op->s->closing) {
        struct cleanup_retry *r = xcalloc(1, sizeof(*r));
        r->s = op->s;
        r->c = c;
        coord__timer(op->s, coord__backoff_ms(op->s, c->tries++), cleanup_again, r);
    } else {
        /* ZNONODE: no directory, no contender; session gone: its ephemerals too. ZCLOSING
           is the session closing only when it is: after a handle's replacement (its session
           expired) the library answers what it had pending with it too
           (coord_lock-release-closed). */
        c->pending = 1;
        cleanup_part(op->rc == ZCLOSING && op->s->closing ? DRV_EAGAIN : 0, c);
    }
}

static void cleanup_start(struct coord_session *s, struct cleanup *c)
{
    char *dir = coord__parent(c->want);
    coord__zk_children(coord__op_new(s, cleanup_listed, c), dir, false);
    free(dir);
}

static void cleanup_prefix(struct coord_session *s, const char *want, coord_done_cb done, void *arg)
{
    struct cleanup *c = xcalloc(1, sizeof(*c));
    c->want = xstrdup(want);
    c->done = done;
    c->arg = arg;
    cleanup_start(s, c);
}

/*
 * The create of attempt a was answered (path created, or unknown, or failed):
 * the release_done waiting for it deletes what it made. False when none waits.
 */
static bool rels_settle(struct coord_lock *l, unsigned a, const char *created, unsigned gen,
                        bool unknown, const char *want)
{
    bool any = false;
    struct rel **pp = &l->rels;
    while (*pp) {
        struct rel *r = *pp;
        if (r->attempt != a) {
            pp = &r->next;
            continue;
        }
        *pp = r->next;
        any = true;
        if (created)
            coord__delete_done(l->s, created, -1, gen, r->done, r->arg);
        else if (unknown)
            cleanup_prefix(l->s, want, r->done, r->arg);
        else if (r->done)
            r->done(0, r->arg);
        free(r);
    }
    return any;
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
    coord__timer(l->s, coord__backoff_ms(l->s, l->tries++), retry_timer, r);
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

/* Step 3: first among the contenders. */
static void held(struct coord_lock *l)
{
    l->st = L_HELD;
    stake(l);
    l->tries = 0;
    cancel_deadline(l);
    coord__reg_watch_remove(&l->s->reg, l);
    coord__reg_watch_add(&l->s->reg, l->node, COORD__WM_ANY, l, on_node_event);
    coord__zk_exists(lock_op(l, held_watch_set), l->node, true);
    log_info(MOD, "event=lock-acquired node=%s token=%lld", l->node, (long long)l->token);
    l->cb(l, COORD_LOCK_ACQUIRED, l->arg);
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
        held(l);
    } else if (l->try_only) {
        finish(l, COORD_LOCK_BUSY);
    } else {
        free(l->pred);
        l->pred = xasprintf("%s/%s", l->dir, c[idx - 1].name);
        l->st = L_WAITING;
        stake(l);
        coord__reg_watch_remove(&l->s->reg, l);
        coord__reg_watch_add(&l->s->reg, l->pred, COORD__WM_ANY, l, on_pred_event);
        coord__zk_exists(lock_op(l, pred_checked), l->pred, true);
    }
    free(c);
    lock_unref(l);
}

static void list(struct coord_lock *l)
{
    l->st = L_LISTING;
    stake(l);
    coord__zk_children(lock_op(l, listed), l->dir, false);
}

static void created(struct coord__op *op);

static void issue_create(struct coord_lock *l)
{
    l->st = L_CREATING;
    stake(l);
    if (!l->dir_sent) {
        /* A new lock's directory is usually not there yet (a job's): its create goes
           ahead of the contender's in the same round trip (the server takes a session's
           requests in order); an answer that it exists, or has no parent, is dropped. */
        l->dir_sent = true;
        coord__zk_create(coord__op_new(l->s, NULL, NULL), l->dir, "{}", COORD__CONTAINER);
    }
    coord__zk_create(lock_op(l, created), l->want, l->json, COORD_EPHEMERAL | COORD_SEQUENTIAL);
}

static void adopt_checked(struct coord__op *op)
{
    struct coord_lock *l = op->owner;
    if (!stale(op) && l->st == L_RECOVERING) {
        if (op->rc == ZOK && op->stat.ephemeralOwner == coord_session_id(l->s)) {
            l->node = xstrdup(op->path);
            l->token = op->stat.czxid;
            l->node_gen = op->gen;
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

struct dir_wait {
    struct coord_lock *l;
    unsigned attempt;
};

static void dir_ready(int rc, void *arg)
{
    struct dir_wait *d = arg;
    struct coord_lock *l = d->l;
    if (!l->dead && l->st == L_CREATING && l->attempt == d->attempt)
        issue_create(l);
    else
        rels_settle(l, d->attempt, NULL, 0, false, NULL); /* released meanwhile: nothing made */
    free(d);
    lock_unref(l);
}

/* The lock's directory alone made (or there): create again; else make its parents too. */
static void dir_made(struct coord__op *op)
{
    struct dir_wait *d = op->owner;
    if (op->rc == ZOK || op->rc == ZNODEEXISTS)
        dir_ready(0, d);
    else
        coord__ensure_path(d->l->s, d->l->dir, COORD__CONTAINER, dir_ready, d);
}

static void created(struct coord__op *op)
{
    struct coord_lock *l = op->owner;
    if (stale(op)) {
        /* Given up meanwhile: do not leave a contender behind. */
        unsigned a = (unsigned)op->tag;
        bool unknown = coord__zrc_unknown(op->rc);
        if (rels_settle(l, a, op->rc == ZOK ? op->value : NULL, op->gen, unknown, op->path)) {
            /* done */
        } else if (op->rc == ZOK) {
            coord__delete_sure(l->s, op->value, -1);
        } else if (unknown) {
            cleanup_prefix(l->s, op->path, NULL, NULL);
        }
        lock_unref(l);
        return;
    }
    if (op->rc == ZOK) {
        l->node = xstrdup(op->value);
        l->token = op->stat.czxid;
        l->node_gen = op->gen;
        /* Sequence 0: the first child this directory ever had (its children's counter
           starts at 0 and only grows while it exists), so no contender is before it. */
        if (coord__seq_of(l->node) == 0)
            held(l);
        else
            list(l);
    } else if (op->rc == ZNONODE) {
        l->refs++;
        struct dir_wait *d = xcalloc(1, sizeof(*d));
        d->l = l;
        d->attempt = l->attempt;
        /* A container: the server deletes it once its last contender is gone. Its
           parents are there but for the first lock of all: the directory alone first. */
        coord__zk_create(coord__op_new(l->s, dir_made, d), l->dir, "{}", COORD__CONTAINER);
    } else if (coord__zrc_unknown(op->rc)) {
        log_info(MOD, "event=lock-create-unknown want=%s zrc=%d", l->want, op->rc);
        l->st = L_RECOVERING;
        stake(l);
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
    coord__reg_listener_add(&s->reg, l, lock_session);
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

static void release_done_now(void *owner)
{
    struct rel *r = owner;
    if (r->done)
        r->done(0, r->arg);
    free(r);
}

/* Give up; with r (may be NULL), tell it when the contender is gone. */
static void release(struct coord_lock *l, struct rel *r)
{
    if (l->st == L_IDLE || l->st == L_WAIT_SESSION) {
        /* Nothing held (WAIT_SESSION: it went with the expired session). */
        if (l->st == L_WAIT_SESSION)
            reset(l, L_IDLE);
        if (r)
            coord__timer(l->s, 0, release_done_now, r);
        return;
    }
    if (l->node) {
        log_info(MOD, "event=lock-release node=%s", l->node);
        if (r) {
            coord__delete_done(l->s, l->node, -1, l->node_gen, r->done, r->arg);
            free(r);
        } else {
            coord__delete_sure(l->s, l->node, -1);
        }
    } else if (r && l->st == L_CREATING) {
        /* The create in flight is answered later (created() sees it stale). */
        r->attempt = l->attempt;
        r->next = l->rels;
        l->rels = r;
    } else if (r) {
        /* RECOVERING: a lost create may have gone through; find it by its prefix. */
        cleanup_prefix(l->s, l->want, r->done, r->arg);
        FREE_NULL(l->want); /* reset need not look again */
        free(r);
    }
    reset(l, L_IDLE);
}

void coord_lock_release(struct coord_lock *l)
{
    release(l, NULL);
}

void coord_lock_release_done(struct coord_lock *l, coord_done_cb done, void *arg)
{
    struct rel *r = xcalloc(1, sizeof(*r));
    r->done = done;
    r->arg = arg;
    release(l, r);
}

void coord_lock_free(struct coord_lock *l)
{
    if (!l)
        return;
    coord_lock_release(l);
    l->dead = true;
    stake(l);
    coord__reg_listener_remove(&l->s->reg, l);
    lock_unref(l);
}

/* ---- the fence of a commit (txn.c) ------------------------------------------------ */

bool coord__lock_fence(struct coord_lock *l, unsigned *attempt, const char **node)
{
    if (l->st != L_HELD || !l->node)
        return false;
    *attempt = l->attempt;
    *node = l->node;
    return true;
}

void coord__lock_fence_lost(struct coord_lock *l, unsigned attempt)
{
    if (!l->dead && l->st == L_HELD && l->attempt == attempt) {
        log_warn(MOD, "event=lock-lost reason=fenced-write-rejected node=%s", l->node);
        reset(l, L_IDLE);
        l->cb(l, COORD_LOCK_LOST, l->arg);
    }
}
