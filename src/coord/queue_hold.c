/*
 * queue_hold: the claims a consumer holds, and everything only their holder
 * may do: complete, release, transactions on a claim; claim loss. (The
 * janitor's reads and cancel are in queue_find.c.)
 *
 * Ownership. ZooKeeper's multi-op cannot compare a znode's owner, so a
 * claim's ownership is bound to the session that created it: every
 * complete, release or transaction of a claim is sent only on that handle
 * generation (coord__op_bind: on a later session it fails at once), and
 * only while the claim is in this consumer's table of held claims. While that
 * session lives, nobody else deletes the claim (other consumers only touch
 * claims they hold; cancel fails on a claimed item), so a delete with
 * version -1 on it deletes our own claim; once it has expired the request
 * fails on the server. So a consumer whose session expired and came back can
 * neither release nor complete the item another consumer now holds.
 *
 * Held table (hashed by item id):
 *
 *   (delivered) --> HELD --complete/release/txn--> BUSY --ok--> (gone)
 *                    |  ^                           |
 *                    |  +---------failed (t's op)---+
 *                    +--suspect / expired / claim deleted--> (gone, on_lost)
 *
 * Invariants (hold_check, Debug builds):
 *   1. every entry is in the table under the hash of its id;
 *   2. an entry is in the arming FIFO at most once, in delivery order;
 *   3. busy >= 0, and st == H_BUSY iff busy > 0;
 *   4. entries belong to the current handle generation or an older one only
 *      until LOST clears them.
 *
 * Claim loss: on SUSPECT every held claim is told lost and its delete is
 * sent bound to its session (it goes out once that session is connected
 * again, and not at all if it expired); on LOST every held claim is told
 * lost; a claim held for ARM_MS gets an exists watch (not earlier: most are
 * completed well before, and a watch on each would cost a read and an event
 * per item), so one deleted by someone else is told lost too; a complete,
 * release or transaction that finds the claim gone tells it.
 *
 * Lost answers of a complete are resolved on the same session, after a sync:
 * claim and item gone = applied (only this session could), claim still there
 * = not applied (sent again); after an expiry, the item still there = not
 * applied (DRV_ECONFLICT), gone = applied when there was nothing else in the
 * transaction, else unknown (DRV_EAGAIN).
 */
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <jansson.h>

#include "clock.h"
#include "log.h"
#include "queue_int.h"
#include "xalloc.h"

#define MOD "coord"
#define ARM_MS 500
#define H_OF(n) COORD__CONTAINER_OF(n, struct held, hn)

static void hold_check(const struct coord_queue *q)
{
    size_t n = 0;
    for (const struct held *h = q->fifo_head; h; h = h->fnext) {
        COORD__ASSERT(h->in_fifo && (!h->fnext || h->fnext->fprev == h));
        COORD__ASSERT(!h->fnext || h->since_ms <= h->fnext->since_ms);
        n++;
    }
    COORD__ASSERT(n <= q->held.n);
    size_t all_n;
    struct coord__hnode **all = coord__htab_all(&q->held, &all_n);
    for (size_t i = 0; i < all_n; i++) {
        const struct held *h = H_OF(all[i]);
        COORD__ASSERT(h->busy >= 0 && (h->st == H_BUSY) == (h->busy > 0));
        COORD__ASSERT(h->hn.hash == coord__hash_str(h->id));
    }
    free(all);
}

static struct held *held_find(struct coord_queue *q, const char *id)
{
    for (struct coord__hnode *n = coord__htab_find(&q->held, coord__hash_str(id)); n;
         n = coord__htab_next(n))
        if (strcmp(H_OF(n)->id, id) == 0)
            return H_OF(n);
    return NULL;
}

bool coord__q_holds(struct coord_queue *q, const char *id)
{
    return held_find(q, id) != NULL;
}

static void fifo_unlink(struct coord_queue *q, struct held *h)
{
    if (!h->in_fifo)
        return;
    if (h->fprev)
        h->fprev->fnext = h->fnext;
    else
        q->fifo_head = h->fnext;
    if (h->fnext)
        h->fnext->fprev = h->fprev;
    else
        q->fifo_tail = h->fprev;
    h->fprev = h->fnext = NULL;
    h->in_fifo = false;
}

/* The session's stakes count this queue while it holds claims and is open (probes,
   session.c). */
static void stake(struct coord_queue *q)
{
    bool want = q->held.n > 0 && !q->dead;
    if (want != q->staked) {
        q->s->stakes += want ? 1 : -1;
        q->staked = want;
    }
}

static void held_del(struct coord_queue *q, struct held *h)
{
    coord__reg_watch_del(&q->s->reg, h->watch);
    fifo_unlink(q, h);
    coord__htab_del(&q->held, &h->hn);
    free(h->id);
    free(h);
    stake(q);
    COORD__CHECK(hold_check, q);
}

/* The claim of h is gone or may be: forget it and tell the owner. */
static void lost(struct coord_queue *q, struct held *h, const char *reason)
{
    char *id = xstrdup(h->id);
    held_del(q, h);
    log_warn(MOD, "event=queue-claim-lost reason=%s queue=%s item=%s", reason, q->path, id);
    if (q->on_lost && !q->dead)
        q->on_lost(q, id, q->lost_arg);
    free(id);
}

static void busy(struct held *h, int d)
{
    h->busy += d;
    h->st = h->busy > 0 ? H_BUSY : H_HELD;
}

/* ---- claim watches ------------------------------------------------------------- */

static void arm_schedule(struct coord_queue *q);

static void on_claim_event(void *owner, int type, const char *path)
{
    struct coord_queue *q = owner;
    if (q->dead || type != ZOO_DELETED_EVENT)
        return;
    const char *b = coord__basename(path); /* sNN-<name> */
    char *id = xstrdup(b);
    char *dash = strchr(id, '-');
    if (dash)
        *dash = '/';
    struct held *h = held_find(q, id);
    free(id);
    if (h && h->st == H_HELD && h->watch)
        lost(q, h, "claim-deleted");
}

struct armed {
    struct coord_queue *q;
    char *id;
    unsigned gen;
};

static void claim_watched(struct coord__op *op)
{
    struct armed *a = op->owner;
    struct coord_queue *q = a->q;
    struct held *h = q->dead ? NULL : held_find(q, a->id);
    if (h && h->gen == a->gen && op->gen == q->s->gen) {
        if (op->rc == ZOK && !h->watch)
            h->watch =
                coord__reg_watch_add(&q->s->reg, op->path, COORD__WM_DATA, q, on_claim_event);
        else if (op->rc == ZNONODE && h->st == H_HELD)
            lost(q, h, "claim-gone");
    }
    free(a->id);
    free(a);
    coord__q_unref(q);
}

static void arm_fire(void *owner)
{
    struct coord_queue *q = owner;
    q->arm_ev = NULL;
    long now = clock_mono_ms();
    while (!q->dead && q->fifo_head && q->fifo_head->since_ms + ARM_MS <= now) {
        struct held *h = q->fifo_head;
        fifo_unlink(q, h);
        char *item, *claim;
        if (!coord__q_paths(q, h->id, &item, &claim, NULL))
            continue;
        struct armed *a = xcalloc(1, sizeof(*a));
        a->q = q;
        a->id = xstrdup(h->id);
        a->gen = h->gen;
        struct coord__op *op = coord__q_op(q, claim_watched, a);
        coord__op_bind(op, h->gen);
        coord__zk_exists(op, claim, true);
        free(item);
        free(claim);
    }
    arm_schedule(q);
    coord__q_unref(q);
}

static void arm_schedule(struct coord_queue *q)
{
    if (q->arm_ev || !q->fifo_head || q->dead)
        return;
    long ms = q->fifo_head->since_ms + ARM_MS - clock_mono_ms();
    q->refs++;
    q->arm_ev = coord__timer(q->s, ms > 0 ? (int)ms : 0, arm_fire, q);
}

void coord__q_hold_add(struct coord_queue *q, const char *id, unsigned gen)
{
    struct held *h = held_find(q, id);
    if (!h) {
        h = xcalloc(1, sizeof(*h));
        h->id = xstrdup(id);
        coord__htab_add(&q->held, &h->hn, coord__hash_str(id));
        stake(q);
    }
    h->gen = gen;
    h->st = H_HELD;
    h->busy = 0;
    h->since_ms = clock_mono_ms();
    fifo_unlink(q, h);
    h->fprev = q->fifo_tail;
    if (q->fifo_tail)
        q->fifo_tail->fnext = h;
    else
        q->fifo_head = h;
    q->fifo_tail = h;
    h->in_fifo = true;
    COORD__CHECK(hold_check, q);
    arm_schedule(q);
}

void coord__q_drop_claim(struct coord_queue *q, const char *id, unsigned gen)
{
    char *claim;
    if (coord__q_paths(q, id, NULL, &claim, NULL)) {
        coord__delete_done(q->s, claim, -1, gen, NULL, NULL);
        free(claim);
    }
}

void coord__q_hold_session(struct coord_queue *q, enum coord__session_event ev)
{
    if (ev != COORD__SUSPECT && ev != COORD__LOST)
        return;
    q->refs++; /* on_lost may close q */
    size_t n;
    struct coord__hnode **all = coord__htab_all(&q->held, &n);
    for (size_t i = 0; i < n; i++) {
        struct held *h = H_OF(all[i]);
        if (ev == COORD__SUSPECT)
            coord__q_drop_claim(q, h->id, h->gen); /* once connected, if the session lives */
        lost(q, h, ev == COORD__SUSPECT ? "suspended" : "session-expired");
    }
    free(all);
    coord__q_unref(q);
}

/* ---- transactions on a claim: complete_txn, txn_commit --------------------------- */

enum qmode { QM_COMPLETE, QM_TXN };

struct qtxn {
    struct coord_queue *q;
    char *id, *item, *claim;
    unsigned gen;
    enum qmode mode;
    bool empty; /* no op of the caller's */
    coord_txn_cb cb;
    coord_done_cb done; /* coord_queue_complete: a done callback instead */
    void *arg;
    /* resolving a lost answer */
    struct coord__commit *c;
    bool same; /* the claim's session still lives */
    int claim_rc, item_rc, pending;
    unsigned tries;
};

static void qtxn_free(struct qtxn *x)
{
    struct coord_queue *q = x->q;
    free(x->id);
    free(x->item);
    free(x->claim);
    free(x);
    coord__q_unref(q);
}

static void qtxn_end(const struct coord_txn_result *r, void *arg)
{
    struct qtxn *x = arg;
    struct coord_queue *q = x->q;
    struct held *h = held_find(q, x->id);
    if (h && h->gen == x->gen) {
        busy(h, -1);
        if (r->rc == 0 && x->mode == QM_COMPLETE)
            held_del(q, h);
    }
    if (x->cb)
        x->cb(r, x->arg);
    if (x->done)
        x->done(r->rc, x->arg);
    qtxn_free(x);
}

static bool qtxn_guard_failed(void *owner, int index, int zrc)
{
    struct qtxn *x = owner;
    if (index == 2 && zrc == ZNONODE) {
        log_warn(MOD, "event=queue-key-record-missing item=%s", x->id);
        return true; /* complete without it */
    }
    struct held *h = x->q->dead ? NULL : held_find(x->q, x->id);
    if (h && h->gen == x->gen)
        lost(x->q, h, index == 0 ? "claim-gone" : "session-expired");
    return false;
}

static void resolve_start(struct qtxn *x);

static void resolve_later(void *owner)
{
    resolve_start(owner);
}

static void resolved_part(struct coord__op *op)
{
    struct qtxn *x = op->owner;
    if (op->tag == 0)
        x->claim_rc = op->rc;
    else
        x->item_rc = op->rc;
    if (--x->pending > 0)
        return;
    struct coord_session *s = x->q->s;
    bool same = x->same;
    int a = x->claim_rc, b = x->item_rc;
    if (s->closing) {
        coord__commit_finish(x->c, DRV_EAGAIN, -1);
    } else if ((same && (coord__zrc_unknown(a) || coord__zrc_unknown(b))) ||
               (!same && coord__zrc_unknown(b))) {
        coord__timer(s, coord__backoff_ms(s, x->tries++), resolve_later, x);
    } else if (same && (a == ZSESSIONEXPIRED || b == ZSESSIONEXPIRED)) {
        resolve_start(x); /* expired meanwhile: ask again, the other way */
    } else if (same && a == ZOK) {
        coord__commit_resend(x->c); /* not applied: the claim is still ours */
    } else if (same && a == ZNONODE && b == ZNONODE) {
        log_info(MOD, "event=queue-complete-recovered item=%s", x->id);
        coord__commit_finish(x->c, 0, -1);
    } else if (same && a == ZNONODE) {
        qtxn_guard_failed(x, 0, ZNONODE);
        coord__commit_finish(x->c, DRV_ECONFLICT, -1);
    } else if (b == ZOK) {
        coord__commit_finish(x->c, DRV_ECONFLICT, -1);
    } else if (b == ZNONODE) {
        if (!x->empty)
            log_warn(MOD, "event=queue-complete-unknown item=%s", x->id);
        coord__commit_finish(x->c, x->empty ? 0 : DRV_EAGAIN, -1);
    } else {
        coord__commit_finish(x->c, coord__zrc(b), -1);
    }
}

static void resolve_start(struct qtxn *x)
{
    struct coord_session *s = x->q->s;
    bool same = s->gen == x->gen;
    x->same = same;
    x->claim_rc = x->item_rc = ZOK;
    x->pending = same ? 2 : 1;
    /* After the sync, these see every write committed before it, ours included. */
    struct coord__op *sy = coord__op_new(s, NULL, NULL);
    if (same)
        coord__op_bind(sy, x->gen);
    coord__zk_sync(sy, x->q->path);
    if (same) {
        struct coord__op *c = coord__op_new(s, resolved_part, x);
        coord__op_bind(c, x->gen);
        c->tag = 0;
        coord__zk_exists(c, x->claim, false);
    }
    struct coord__op *i = coord__op_new(s, resolved_part, x);
    if (same)
        coord__op_bind(i, x->gen);
    i->tag = 1;
    coord__zk_exists(i, x->item, false);
}

static void qtxn_resolve(struct coord__commit *c, void *owner)
{
    struct qtxn *x = owner;
    x->c = c;
    log_info(MOD, "event=queue-complete-lost-answer item=%s", x->id);
    coord__timer(x->q->s, coord__backoff_ms(x->q->s, x->tries++), resolve_later, x);
}

static void not_ours(void *owner)
{
    struct qtxn *x = owner;
    struct coord_txn_result r = {.rc = DRV_ECONFLICT, .failed_op = -1};
    if (x->cb)
        x->cb(&r, x->arg);
    if (x->done)
        x->done(DRV_ECONFLICT, x->arg);
    qtxn_free(x);
}

static void qtxn_start(struct coord_queue *q, const char *id, struct coord_txn *t, enum qmode mode,
                       bool lost, unsigned lost_gen, coord_txn_cb cb, coord_done_cb done, void *arg)
{
    struct qtxn *x = xcalloc(1, sizeof(*x));
    x->q = q;
    x->mode = mode;
    x->cb = cb;
    x->done = done;
    x->arg = arg;
    x->id = xstrdup(id);
    x->empty = !t || coord_txn_count(t) == 0;
    q->refs++;
    char *key = NULL;
    struct held *h = held_find(q, id);
    bool paths = coord__q_paths(q, id, &x->item, &x->claim, &key);
    if (lost && paths) {
        /* Its multi-op was sent on generation lost_gen: resolve that one. */
        x->gen = lost_gen;
        if (h && h->gen == lost_gen)
            busy(h, 1);
    } else if (!h || h->gen != q->s->gen || !paths) {
        log_info(MOD, "event=queue-not-holder item=%s", id);
        coord_txn_free(t);
        free(key);
        coord__timer(q->s, 0, not_ours, x);
        return;
    } else {
        x->gen = h->gen;
        busy(h, 1);
    }
    struct coord__guard g = {.gen = x->gen, .guard_failed = qtxn_guard_failed, .owner = x};
    if (mode == QM_TXN) {
        g.n = 1;
        g.type[0] = COORD__GUARD_CHECK;
        g.path[0] = x->claim;
    } else {
        g.n = key ? 3 : 2;
        g.type[0] = g.type[1] = g.type[2] = COORD__GUARD_DELETE;
        g.path[0] = x->claim;
        g.path[1] = x->item;
        g.path[2] = key;
        g.resolve = qtxn_resolve;
        g.lost = lost;
    }
    coord__commit_guarded(q->s, t ? t : coord_txn_new(), &g, qtxn_end, x);
    free(key);
}

void coord_queue_txn_commit(struct coord_queue *q, const char *item_id, struct coord_txn *t,
                            coord_txn_cb cb, void *arg)
{
    qtxn_start(q, item_id, t, QM_TXN, false, 0, cb, NULL, arg);
}

void coord_queue_complete_txn(struct coord_queue *q, const char *item_id, struct coord_txn *t,
                              coord_txn_cb cb, void *arg)
{
    qtxn_start(q, item_id, t, QM_COMPLETE, false, 0, cb, NULL, arg);
}

/* ---- complete (batched) and release ------------------------------------------------- */

struct fin {
    struct coord_queue *q;
    coord_done_cb done;
    void *arg;
    char *id;
    unsigned gen; /* of the batch it was sent in */
};

/* Complete f alone; lost: its batch's answer was lost, resolve that first. */
static void fin_alone(struct fin *f, bool lost)
{
    qtxn_start(f->q, f->id, NULL, QM_COMPLETE, lost, f->gen, NULL, f->done, f->arg);
    coord__q_unref(f->q);
    free(f->id);
    free(f);
}

struct fin_batch {
    struct coord_queue *q;
    struct fin **f;
    size_t n;
};

static void batch_done(struct coord__op *op)
{
    struct fin_batch *b = op->owner;
    struct coord_queue *q = b->q;
    for (size_t i = 0; i < b->n; i++) {
        struct fin *f = b->f[i];
        struct held *h = held_find(q, f->id);
        if (h)
            busy(h, -1);
        if (op->rc == ZOK) {
            if (h)
                held_del(q, h);
            if (f->done)
                f->done(0, f->arg);
            coord__q_unref(q);
            free(f->id);
            free(f);
        } else {
            /* Settle each one alone: only the one at fault fails; lost answers resolved. */
            fin_alone(f, coord__zrc_unknown(op->rc));
        }
    }
    free(b->f);
    free(b);
    coord__q_unref(q);
}

static void flush_completes(void *owner)
{
    struct coord_queue *q = owner;
    q->flush_scheduled = false;
    q->flush_ev = NULL;
    size_t n = q->n_fins, start = 0;
    q->n_fins = 0;
    struct fin **fins = q->fins;
    q->fins = NULL;
    q->cap_fins = 0;
    while (start < n) {
        /* Held now, on this session, up to 500 or the budget: one multi-op. */
        struct fin_batch *b = xcalloc(1, sizeof(*b));
        b->q = q;
        b->f = xcalloc(n - start, sizeof(*b->f));
        size_t bytes = COORD__MULTI_FRAME, nops = 0;
        char **paths = xcalloc(3 * (n - start), sizeof(char *));
        while (start < n && b->n < 500) {
            struct fin *f = fins[start];
            struct held *h = held_find(q, f->id); /* also at close: this turn's completes go out */
            char *item, *claim, *key;
            if (!h || h->st != H_HELD || h->gen != q->s->gen ||
                !coord__q_paths(q, f->id, &item, &claim, &key)) {
                start++;
                fin_alone(f, false); /* alone: fails if not held */
                continue;
            }
            size_t add = coord__size_path_op(claim) + coord__size_path_op(item) +
                         (key ? coord__size_path_op(key) : 0);
            if (b->n && bytes + add > q->s->max_req) {
                free(item);
                free(claim);
                free(key);
                break;
            }
            bytes += add;
            busy(h, 1);
            f->gen = h->gen;
            paths[nops++] = claim;
            paths[nops++] = item;
            if (key)
                paths[nops++] = key;
            b->f[b->n++] = f;
            start++;
        }
        if (!b->n) {
            free(paths);
            free(b->f);
            free(b);
            continue;
        }
        q->refs++;
        struct coord__op *op = coord__op_new(q->s, batch_done, b);
        coord__op_bind(op, q->s->gen);
        coord__multi_init(op, (int)nops);
        for (size_t i = 0; i < nops; i++) {
            coord__mop_delete(op, (int)i, paths[i], -1);
            free(paths[i]);
        }
        free(paths);
        coord__zk_multi(op);
    }
    free(fins);
    coord__q_unref(q);
}

void coord_queue_complete(struct coord_queue *q, const char *item_id, coord_done_cb done, void *arg)
{
    struct fin *f = xcalloc(1, sizeof(*f));
    f->q = q;
    f->done = done;
    f->arg = arg;
    f->id = xstrdup(item_id);
    q->refs++;
    XGROW(q->fins, q->cap_fins, q->n_fins + 1);
    q->fins[q->n_fins++] = f;
    if (!q->flush_scheduled) {
        q->flush_scheduled = true;
        q->refs++;
        q->flush_ev = coord__timer(q->s, 0, flush_completes, q);
    }
}

struct rel {
    struct coord_queue *q;
    char *id, *claim;
    unsigned gen;
    unsigned tries;
    bool retried;
    coord_done_cb done;
    void *arg;
};

static void rel_send(struct rel *r);

static void rel_end(struct rel *r, int rc)
{
    struct coord_queue *q = r->q;
    struct held *h = held_find(q, r->id);
    if (h && h->gen == r->gen) {
        busy(h, -1);
        if (rc == 0)
            held_del(q, h);
        else if (rc == DRV_ECONFLICT)
            lost(q, h, "claim-gone");
    }
    if (r->done)
        r->done(rc, r->arg);
    free(r->id);
    free(r->claim);
    free(r);
    coord__q_unref(q);
}

static void rel_again(void *owner)
{
    rel_send(owner);
}

static void released(struct coord__op *op)
{
    struct rel *r = op->owner;
    if (coord__zrc_unknown(op->rc) && !op->s->closing) {
        r->retried = true;
        coord__timer(op->s, coord__backoff_ms(op->s, r->tries++), rel_again, r);
    } else if (op->rc == ZOK || (op->rc == ZNONODE && r->retried)) {
        rel_end(r, 0); /* after a lost answer, gone = our delete went through */
    } else if (op->rc == ZNONODE || op->rc == ZSESSIONEXPIRED || op->rc == ZINVALIDSTATE) {
        rel_end(r, DRV_ECONFLICT);
    } else {
        rel_end(r, coord__zrc(op->rc));
    }
}

static void rel_send(struct rel *r)
{
    struct coord__op *op = coord__op_new(r->q->s, released, r);
    coord__op_bind(op, r->gen);
    coord__zk_delete(op, r->claim, -1);
}

static void rel_not_ours(void *owner)
{
    struct rel *r = owner;
    if (r->done)
        r->done(DRV_ECONFLICT, r->arg);
    free(r->id);
    free(r->claim);
    coord__q_unref(r->q);
    free(r);
}

void coord_queue_release(struct coord_queue *q, const char *item_id, coord_done_cb done, void *arg)
{
    struct rel *r = xcalloc(1, sizeof(*r));
    r->q = q;
    r->done = done;
    r->arg = arg;
    r->id = xstrdup(item_id);
    q->refs++;
    struct held *h = q->dead ? NULL : held_find(q, item_id);
    if (!h || h->gen != q->s->gen || !coord__q_paths(q, item_id, NULL, &r->claim, NULL)) {
        log_info(MOD, "event=queue-not-holder item=%s", item_id);
        coord__timer(q->s, 0, rel_not_ours, r);
        return;
    }
    r->gen = h->gen;
    busy(h, 1);
    rel_send(r);
}

/* ---- close ---------------------------------------------------------------------- */

void coord__q_hold_close(struct coord_queue *q)
{
    /* Send the completes of this turn now. */
    if (q->flush_ev) {
        coord__timer_cancel(q->flush_ev);
        q->flush_ev = NULL;
        flush_completes(q); /* drops the timer's reference */
    }
    if (q->arm_ev) {
        coord__timer_cancel(q->arm_ev);
        q->arm_ev = NULL;
        q->refs--;
    }
    stake(q); /* closed: no more a stake */
    while (q->fifo_head)
        fifo_unlink(q, q->fifo_head);
    /* coord_queue_close removed every registration of q: forget the claims' watches. */
    size_t n;
    struct coord__hnode **all = coord__htab_all(&q->held, &n);
    for (size_t i = 0; i < n; i++)
        H_OF(all[i])->watch = NULL;
    free(all);
}

void coord__q_hold_free(struct coord_queue *q)
{
    size_t n;
    struct coord__hnode **all = coord__htab_all(&q->held, &n);
    for (size_t i = 0; i < n; i++) {
        free(H_OF(all[i])->id);
        free(H_OF(all[i]));
    }
    free(all);
    coord__htab_free(&q->held);
}
