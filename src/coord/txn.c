/*
 * txn: transactions (ZooKeeper multi-ops) and fenced writes.
 *
 * A commit is one multi-op: first the guard ops, then t's ops in order.
 *   - coord_txn_commit with a fence: one check that the lock holder's
 *     contender znode exists. A stale holder's writes fail even if it has not
 *     heard yet that it lost the lock; when the check fails the lock reports
 *     LOST.
 *   - the queue's commits (coord__commit_guarded): up to 3 ops on the claim
 *     (check it, or delete claim and item), sent only on the handle
 *     generation whose session created the claim.
 * A keyed queue put is one record of t and two ops of the multi (its key
 * record, then the item): results are reported per record.
 *
 * Size: the encoded size is checked against the session's budget before
 * anything is sent; over it, DRV_ETOOBIG (coord__zk_multi refuses it too).
 *
 * Gathering: the queue's commits started in one turn of the loop (a worker
 * records and completes many tasks at once) go out as one multi-op, each
 * commit's guard ops before its own, within the size budget: one request
 * where there were many. All applied: each commit hears its own success. An
 * op failed: nothing applied, so each is sent again alone and hears its own
 * answer. No answer (connection loss, expiry): each is settled as if it had
 * been sent alone (its resolver, or DRV_EAGAIN). Commits with a fence,
 * sequential creates or a lost earlier answer, and lone ones, go alone.
 *
 * Lost answers (connection loss before the answer):
 *   1. sequential creates: their names carry a prefix unique to this commit;
 *      after a backoff, a sync then a listing of each parent (pipelined: the
 *      server answers a session's requests in order) tell whether the
 *      multi-op applied (found: done) or not (sent again);
 *   2. else the guard's resolver decides (the queue's complete);
 *   3. else DRV_EAGAIN: nothing is sent again, the caller reads.
 *
 *   SENT --ok / failed--> DONE
 *     |--lost--> SEARCH --found--> DONE
 *     |            |--not found--> SENT
 *     |            +--cannot tell--> (backoff) SEARCH
 *     +--lost, guard resolver--> RESOLVE --> SENT or DONE
 */
#include <stdlib.h>
#include <string.h>

#include "coord_int.h"
#include "log.h"
#include "xalloc.h"

#define MOD "coord"

enum top { T_CHECK, T_CREATE, T_SET, T_DELETE, T_QPUT };

struct trec {
    enum top type;
    char *path; /* T_QPUT: the item */
    char *json;
    int version;
    int flags;
    char *key_path; /* T_QPUT: the key record and its data */
    char *key_json;
};

struct coord_txn {
    struct trec *r;
    size_t n, cap;
};

struct coord_txn *coord_txn_new(void)
{
    return xcalloc(1, sizeof(struct coord_txn));
}

static struct trec *txn_add(struct coord_txn *t, enum top type, const char *path, const char *json,
                            int version, int flags)
{
    XGROW(t->r, t->cap, t->n + 1);
    t->r[t->n] = (struct trec){.type = type,
                               .path = xstrdup(path),
                               .json = json ? xstrdup(json) : NULL,
                               .version = version,
                               .flags = flags};
    return &t->r[t->n++];
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

void coord__txn_qput(struct coord_txn *t, const char *item, const char *key_path,
                     const char *key_json, const char *json)
{
    struct trec *r = txn_add(t, T_QPUT, item, json, -1, 0);
    r->key_path = xstrdup(key_path);
    r->key_json = xstrdup(key_json);
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
        free(t->r[i].key_path);
        free(t->r[i].key_json);
    }
    free(t->r);
    free(t);
}

static size_t rec_bytes(const struct trec *r)
{
    switch (r->type) {
    case T_CHECK:
    case T_DELETE:
        return coord__size_path_op(r->path);
    case T_CREATE:
        /* A sequential create's name grows by the commit's prefix. */
        return coord__size_create(r->path, r->json) + 64;
    case T_SET:
        return coord__size_set(r->path, r->json);
    case T_QPUT:
        return coord__size_create(r->key_path, r->key_json) + coord__size_create(r->path, r->json);
    }
    return 0;
}

size_t coord_txn_create_bytes(const char *path, const char *json)
{
    struct trec r = {.type = T_CREATE, .path = (char *)path, .json = (char *)json};
    return rec_bytes(&r);
}

size_t coord_txn_set_bytes(const char *path, const char *json)
{
    struct trec r = {.type = T_SET, .path = (char *)path, .json = (char *)json};
    return rec_bytes(&r);
}

size_t coord_txn_delete_bytes(const char *path)
{
    struct trec r = {.type = T_DELETE, .path = (char *)path};
    return rec_bytes(&r);
}

size_t coord_txn_bytes(const struct coord_txn *t)
{
    size_t b = 0;
    for (size_t i = 0; i < t->n; i++)
        b += rec_bytes(&t->r[i]);
    return b;
}

size_t coord__txn_bytes_with(const struct coord_txn *t, int n, char *const *paths)
{
    size_t b = t ? coord_txn_bytes(t) : 0;
    for (int i = 0; i < n; i++)
        b += coord__size_path_op(paths[i]);
    return b + COORD__MULTI_FRAME;
}

static int rec_ops(const struct trec *r)
{
    return r->type == T_QPUT ? 2 : 1;
}

/* ---- commits ------------------------------------------------------------------ */

struct coord__commit {
    struct coord_session *s;
    struct coord_txn *t;
    coord_txn_cb cb;
    void *arg;
    struct coord_lock *fence; /* a reference is held */
    unsigned fence_attempt;
    struct coord__guard g; /* paths owned */
    int first;             /* guard ops before t's */
    int base;              /* index of its first op in the multi (gathered: not 0) */
    size_t bytes;          /* encoded, guard ops included */
    int *rec_of;           /* multi op index - first -> record index */
    int nops;              /* t's ops in the multi */
    char *prefix;          /* "<session>-<random>-<n>-" of sequential creates, or NULL */
    char **created;        /* per record, after a recovery */
    int searching;         /* listings in flight during a recovery */
    bool found_any;
    bool search_failed;
    unsigned tries;
};

static void send_commit(struct coord__commit *c);
static void put_ops(struct coord__commit *c, struct coord__op *op);
static void recover_txn(void *owner);

static void commit_free(struct coord__commit *c)
{
    if (c->fence)
        coord__lock_unref(c->fence);
    if (c->created) {
        for (size_t i = 0; i < c->t->n; i++)
            free(c->created[i]);
        free(c->created);
    }
    for (int i = 0; i < c->g.n; i++)
        free(c->g.path[i]);
    coord_txn_free(c->t);
    free(c->rec_of);
    free(c->prefix);
    free(c);
}

static void commit_end(struct coord__commit *c, struct coord_txn_result *r)
{
    if (c->cb)
        c->cb(r, c->arg);
    commit_free(c);
}

void coord__commit_finish(struct coord__commit *c, int rc, int failed_op)
{
    struct coord_txn_result r = {.rc = rc, .failed_op = failed_op};
    r.n = c->t->n;
    r.created = xcalloc(r.n ? r.n : 1, sizeof(char *));
    if (rc == 0)
        for (size_t i = 0; i < r.n; i++) {
            const struct trec *t = &c->t->r[i];
            if (c->created && c->created[i])
                r.created[i] = c->created[i];
            else if ((t->type == T_CREATE && !(t->flags & COORD_SEQUENTIAL)) || t->type == T_QPUT)
                r.created[i] = t->path;
        }
    commit_end(c, &r);
    free(r.created);
}

const struct coord_txn *coord__commit_txn(const struct coord__commit *c)
{
    return c->t;
}

void coord__commit_resend(struct coord__commit *c)
{
    send_commit(c);
}

/* After an unknown outcome: a listing of one sequential create's parent. */
static void recover_listed_txn(struct coord__op *op)
{
    struct coord__commit *c = op->owner;
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
    if (c->search_failed && !c->s->closing) {
        /* Cannot tell yet (still disconnected?): look again later. */
        c->search_failed = false;
        coord__timer(c->s, coord__backoff_ms(c->s, c->tries++), recover_txn, c);
    } else if (c->search_failed) {
        coord__commit_finish(c, DRV_EAGAIN, -1);
    } else if (c->found_any) {
        /* The lost multi-op went through (and so all of it). */
        log_info(MOD, "event=txn-recovered prefix=%s", c->prefix);
        coord__commit_finish(c, 0, -1);
    } else {
        send_commit(c);
    }
}

static void recover_txn(void *owner)
{
    struct coord__commit *c = owner;
    c->found_any = false;
    c->searching = 0;
    if (!c->created)
        c->created = xcalloc(c->t->n, sizeof(char *));
    bool synced = false;
    for (size_t i = 0; i < c->t->n; i++) {
        if (c->t->r[i].type != T_CREATE || !(c->t->r[i].flags & COORD_SEQUENTIAL))
            continue;
        char *parent = coord__parent(c->t->r[i].path);
        if (!synced) {
            /* The listings after it see every write committed before it. */
            coord__zk_sync(coord__op_new(c->s, NULL, NULL), parent);
            synced = true;
        }
        c->searching++;
        struct coord__op *op = coord__op_new(c->s, recover_listed_txn, c);
        op->tag = (intptr_t)i;
        coord__zk_children(op, parent, false);
        free(parent);
    }
}

/* c's multi-op (alone, or gathered at c->base) applied. */
static void applied(struct coord__commit *c, const struct coord__op *op)
{
    struct coord_txn_result r = {.rc = 0, .failed_op = -1};
    r.n = c->t->n;
    r.created = xcalloc(r.n ? r.n : 1, sizeof(char *));
    int k = c->base + c->first;
    for (size_t i = 0; i < r.n; i++) {
        const struct trec *t = &c->t->r[i];
        if (t->type == T_CREATE)
            r.created[i] = op->bufs[k];
        else if (t->type == T_QPUT)
            r.created[i] = op->bufs[k + 1];
        k += rec_ops(t);
    }
    commit_end(c, &r);
    free(r.created);
}

static void committed(struct coord__op *op)
{
    struct coord__commit *c = op->owner;
    if (op->rc == ZOK) {
        applied(c, op);
        return;
    }
    if (coord__zrc_unknown(op->rc) && !c->s->closing) {
        if (c->prefix) {
            /* Lost answer, sequential creates: look for them before sending again. */
            log_info(MOD, "event=txn-unknown prefix=%s zrc=%d", c->prefix, op->rc);
            coord__timer(c->s, coord__backoff_ms(c->s, c->tries++), recover_txn, c);
            return;
        }
        if (c->g.resolve) {
            c->g.resolve(c, c->g.owner);
            return;
        }
    }
    int failed = coord__multi_failed(op);
    int zrc = failed >= 0 ? op->results[failed].err : op->rc;
    bool guarded = c->fence || c->g.n > 0;
    struct coord_txn_result r = {.rc = coord__zrc(op->rc), .failed_op = -1, .zrc = zrc};
    if (guarded &&
        ((failed >= 0 && failed < c->first) || zrc == ZSESSIONEXPIRED || zrc == ZINVALIDSTATE)) {
        /* The fence or the claim is gone: nothing applied, stop. */
        r.rc = DRV_ECONFLICT;
        if (c->fence)
            coord__lock_fence_lost(c->fence, c->fence_attempt);
        int gi = failed >= 0 && failed < c->first ? failed : -1;
        if (c->g.guard_failed && c->g.guard_failed(c->g.owner, gi, zrc) && gi >= 0) {
            /* Drop that guard op and send again. */
            free(c->g.path[gi]);
            for (int i = gi; i + 1 < c->g.n; i++) {
                c->g.path[i] = c->g.path[i + 1];
                c->g.type[i] = c->g.type[i + 1];
            }
            c->g.n--;
            c->first--;
            send_commit(c);
            return;
        }
    } else if (failed >= c->first) {
        r.failed_op = c->rec_of[failed - c->first];
        r.rc = zrc == ZBADVERSION || zrc == ZNONODE || zrc == ZNODEEXISTS ? DRV_ECONFLICT
                                                                          : coord__zrc(zrc);
    }
    log_info(MOD, "event=txn-failed zrc=%d failed_op=%d guarded=%s", zrc, r.failed_op,
             guarded ? "yes" : "no");
    r.n = c->t->n;
    r.created = xcalloc(r.n ? r.n : 1, sizeof(char *));
    commit_end(c, &r);
    free(r.created);
}

static void fence_not_held(void *owner)
{
    struct coord__commit *c = owner;
    log_info(MOD, "event=txn-failed reason=fence-not-held");
    struct coord_txn_result r = {.rc = DRV_ECONFLICT, .failed_op = -1, .zrc = ZNONODE};
    r.n = c->t->n;
    r.created = xcalloc(r.n ? r.n : 1, sizeof(char *));
    commit_end(c, &r);
    free(r.created);
}

static void too_big(void *owner)
{
    coord__commit_finish(owner, DRV_ETOOBIG, -1);
}

static void send_commit(struct coord__commit *c)
{
    const char *fence_node = NULL;
    unsigned attempt = 0;
    if (c->fence &&
        !(coord__lock_fence(c->fence, &attempt, &fence_node) && attempt == c->fence_attempt)) {
        /* Not held (any more): fail without asking the server, on the next turn. */
        coord__timer(c->s, 0, fence_not_held, c);
        return;
    }
    struct coord__op *op = coord__op_new(c->s, committed, c);
    if (c->g.gen)
        coord__op_bind(op, c->g.gen);
    coord__multi_init(op, c->first + c->nops);
    c->base = 0;
    if (c->fence)
        coord__mop_check(op, 0, fence_node, -1);
    put_ops(c, op);
    coord__zk_multi(op);
}

/* c's guard ops and t's ops into op, from c->base on. */
static void put_ops(struct coord__commit *c, struct coord__op *op)
{
    struct coord_txn *t = c->t;
    for (int i = 0; i < c->g.n; i++) {
        if (c->g.type[i] == COORD__GUARD_CHECK)
            coord__mop_check(op, c->base + i, c->g.path[i], -1);
        else
            coord__mop_delete(op, c->base + i, c->g.path[i], -1);
    }
    int k = c->base + c->first;
    for (size_t i = 0; i < t->n; i++) {
        struct trec *r = &t->r[i];
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
        case T_QPUT:
            coord__mop_create(op, k, r->key_path, r->key_json, 0);
            coord__mop_create(op, k + 1, r->path, r->json, 0);
            break;
        }
        k += rec_ops(r);
    }
}

/* ---- gathering ------------------------------------------------------------------ */

#define GATHER_MAX_OPS 1000

struct gathered {
    struct coord__commit **c;
    size_t n;
};

static void gathered_answer(struct coord__op *op)
{
    struct gathered *g = op->owner;
    if (op->rc != ZOK)
        log_debug(MOD, "event=txn-gathered-failed zrc=%d commits=%zu", op->rc, g->n);
    bool whole = coord__multi_failed(op) < 0; /* no op of ours failed: the request did */
    for (size_t i = 0; i < g->n; i++) {
        struct coord__commit *c = g->c[i];
        if (op->rc == ZOK) {
            applied(c, op);
        } else if (whole && coord__zrc_unknown(op->rc) && !c->s->closing && c->g.resolve) {
            c->g.resolve(c, c->g.owner);
        } else if (whole) {
            /* As if it had failed alone: ECONFLICT on an expiry, the error else. */
            struct coord_txn_result r = {.rc = coord__zrc(op->rc), .failed_op = -1, .zrc = op->rc};
            if (op->rc == ZSESSIONEXPIRED || op->rc == ZINVALIDSTATE) {
                r.rc = DRV_ECONFLICT;
                if (c->g.guard_failed)
                    c->g.guard_failed(c->g.owner, -1, op->rc);
            }
            r.n = c->t->n;
            r.created = xcalloc(r.n ? r.n : 1, sizeof(char *));
            commit_end(c, &r);
            free(r.created);
        } else {
            send_commit(c); /* nothing applied: alone, it hears its own answer */
        }
    }
    free(g->c);
    free(g);
}

static void flush_gathered(void *owner)
{
    struct coord_session *s = owner;
    struct coord__commit **all = s->gather;
    size_t n = s->n_gather, at = 0;
    s->gather = NULL;
    s->n_gather = s->cap_gather = 0;
    while (at < n) {
        /* One multi-op: the commits of one handle generation, within the budget. */
        struct gathered *g = xcalloc(1, sizeof(*g));
        g->c = xcalloc(n - at, sizeof(*g->c));
        size_t bytes = COORD__MULTI_FRAME;
        int nops = 0;
        unsigned gen = all[at]->g.gen;
        while (at < n && all[at]->g.gen == gen &&
               (g->n == 0 || (bytes + all[at]->bytes <= s->max_req &&
                              nops + all[at]->first + all[at]->nops <= GATHER_MAX_OPS))) {
            struct coord__commit *c = all[at++];
            c->base = nops;
            nops += c->first + c->nops;
            bytes += c->bytes;
            g->c[g->n++] = c;
        }
        if (g->n == 1) {
            send_commit(g->c[0]);
            free(g->c);
            free(g);
            continue;
        }
        struct coord__op *op = coord__op_new(s, gathered_answer, g);
        coord__op_bind(op, gen);
        coord__multi_init(op, nops);
        for (size_t i = 0; i < g->n; i++)
            put_ops(g->c[i], op);
        coord__zk_multi(op);
    }
    free(all);
}

/* Send c with the other commits of this turn. */
static void gather(struct coord__commit *c)
{
    struct coord_session *s = c->s;
    XGROW(s->gather, s->cap_gather, s->n_gather + 1);
    s->gather[s->n_gather++] = c;
    if (s->n_gather == 1)
        coord__timer(s, 0, flush_gathered, s);
}

static void commit_start(struct coord_session *s, struct coord_txn *t, struct coord_lock *fence,
                         const struct coord__guard *g, coord_txn_cb cb, void *arg)
{
    struct coord__commit *c = xcalloc(1, sizeof(*c));
    c->s = s;
    c->cb = cb;
    c->arg = arg;
    c->t = t;
    c->fence = fence;
    if (fence) {
        coord__lock_ref(fence);
        const char *node;
        if (!coord__lock_fence(fence, &c->fence_attempt, &node))
            c->fence_attempt = (unsigned)-1;
        c->first = 1;
    }
    if (g) {
        c->g = *g;
        for (int i = 0; i < g->n; i++)
            c->g.path[i] = xstrdup(g->path[i]);
        c->first = g->n;
    }
    for (size_t i = 0; i < t->n; i++)
        c->nops += rec_ops(&t->r[i]);
    c->rec_of = xcalloc((size_t)(c->nops ? c->nops : 1), sizeof(int));
    for (size_t i = 0, k = 0; i < t->n; i++)
        for (int j = 0; j < rec_ops(&t->r[i]); j++)
            c->rec_of[k++] = (int)i;
    size_t bytes = coord__txn_bytes_with(t, c->first, c->g.path) + (fence ? 128 : 0);
    c->bytes = bytes;
    if (bytes > s->max_req) {
        log_warn(MOD, "event=txn-too-large bytes=%zu max=%zu ops=%zu", bytes, s->max_req, t->n);
        coord__timer(s, 0, too_big, c);
        return;
    }
    /* Sequential creates get a name prefix unique to this commit (see coord.h). */
    for (size_t i = 0; i < t->n; i++) {
        struct trec *r = &t->r[i];
        if (r->type != T_CREATE || !(r->flags & COORD_SEQUENTIAL))
            continue;
        if (!c->prefix) {
            char prefix[96];
            coord__unique_prefix(s, prefix, sizeof(prefix));
            c->prefix = xstrdup(prefix);
        }
        char *p = xasprintf("%s%s", r->path, c->prefix);
        free(r->path);
        r->path = p;
    }
    if (g && g->lost && g->resolve)
        g->resolve(c, g->owner);
    else if (g && g->gen && !c->prefix && !fence)
        gather(c);
    else
        send_commit(c);
}

void coord_txn_commit(struct coord_session *s, struct coord_txn *t, struct coord_lock *fence,
                      coord_txn_cb cb, void *arg)
{
    commit_start(s, t, fence, NULL, cb, arg);
}

void coord_txn_commit_gathered(struct coord_session *s, struct coord_txn *t, coord_txn_cb cb,
                               void *arg)
{
    struct coord__guard g = {.n = 0, .gen = s->gen};
    commit_start(s, t, NULL, &g, cb, arg);
}

void coord__commit_guarded(struct coord_session *s, struct coord_txn *t,
                           const struct coord__guard *g, coord_txn_cb cb, void *arg)
{
    commit_start(s, t, NULL, g, cb, arg);
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

/* ---- upsert: set, or create when missing ------------------------------------------------- */

struct upsert {
    struct coord_session *s;
    char *path, *json;
    bool creating;
    int tries;
    coord_done_cb done;
    void *arg;
};

static void upsert_try(struct upsert *p, bool create);

static void upserted(const struct coord_txn_result *r, void *arg)
{
    struct upsert *p = arg;
    /* A set of a znode not there, or a create of one there: the other way. */
    if (p->tries < COORD_UPSERT_TRIES && r->rc == DRV_ECONFLICT && r->failed_op == 0) {
        upsert_try(p, !p->creating);
        return;
    }
    if (p->done)
        p->done(r->rc, p->arg);
    free(p->path);
    free(p->json);
    free(p);
}

static void upsert_try(struct upsert *p, bool create)
{
    struct coord_txn *t = coord_txn_new();
    if (create)
        coord_txn_create(t, p->path, p->json, 0);
    else
        coord_txn_set(t, p->path, p->json, -1);
    p->creating = create;
    p->tries++;
    coord_txn_commit(p->s, t, NULL, upserted, p);
}

void coord_upsert(struct coord_session *s, const char *path, const char *json, coord_done_cb done,
                  void *arg)
{
    struct upsert *p = xcalloc(1, sizeof(*p));
    p->s = s;
    p->path = xstrdup(path);
    p->json = xstrdup(json);
    p->done = done;
    p->arg = arg;
    upsert_try(p, false);
}
