/*
 * queue_find: what the engine's janitor and /metrics ask of a queue they do
 * not consume: its figures (coord_queue_stats), who holds an item
 * (coord_queue_holder), where an item put with a key is (coord_queue_find),
 * and cancelling an item nobody holds (coord_queue_cancel).
 *
 * stats:  S stat reads of the shards (numChildren) and one of the claims for
 *         length and claimed, and their cversion for the put, take and
 *         remove counters (each child create and delete bumps it once); for
 *         the age, the oldest item of each shard (the smallest t in its names)
 *         is cached and checked with one stat read; a shard is listed again
 *         only when it is gone.
 * holder: the claim's data and the item's existence, pipelined: 2 reads.
 * find:   the key record keys/<key> names the item (1 read; when it is
 *         missing, the key's shard, a pure function of the key, is listed and
 *         searched); then its claim, the item, every shard and the claims are
 *         read in one pipelined round for `ahead` (diagnostics).
 * cancel: one multi-op: create the claim (fails if someone holds the item),
 *         delete the item, delete the claim, delete the key record. A lost
 *         answer is resolved after a sync: item gone = DRV_ENOENT (maybe by
 *         this very call), claimed = DRV_ECONFLICT, else sent again.
 * key item: the key record (1 read): with cancel, constant work per item
 *         taken back, whatever the queue's length (find's `ahead` reads the
 *         whole queue: a find per item of a long queue is quadratic).
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "clock.h"
#include "log.h"
#include "queue_int.h"
#include "xalloc.h"

#define MOD "coord"

/* ---- stats ------------------------------------------------------------------- */

struct stats {
    struct coord_queue *q;
    coord_stats_cb cb;
    void *arg;
    int pending;
    int rc;
    struct coord_queue_stats st;
    int64_t oldest; /* ctime ms, 0 when none */
};

struct shard_stat {
    struct stats *st;
    unsigned k;
};

static void stats_part(struct stats *st)
{
    if (--st->pending > 0)
        return;
    if (st->oldest) {
        int64_t age = clock_wall_ms() - st->oldest;
        st->st.oldest_age_ms = age > 0 ? age : 0;
    }
    st->cb(st->rc ? NULL : &st->st, st->rc, st->arg);
    struct coord_queue *q = st->q;
    free(st);
    coord__q_unref(q);
}

static void stats_oldest(struct stats *st, int64_t ctime)
{
    if (ctime && (!st->oldest || ctime < st->oldest))
        st->oldest = ctime;
}

static void head_stat(struct coord__op *op);

static void head_listed(struct coord__op *op)
{
    struct shard_stat *ss = op->owner;
    struct stats *st = ss->st;
    struct coord_queue *q = st->q;
    const char *best = NULL;
    int64_t bt = -1;
    for (int i = 0; op->rc == ZOK && i < op->strc; i++) {
        int64_t t = coord__q_name_time(op->strv[i]);
        if (t >= 0 && (bt < 0 || t < bt)) {
            bt = t;
            best = op->strv[i];
        }
    }
    if (best && !q->dead) {
        free(q->head[ss->k]);
        q->head[ss->k] = xstrdup(best);
        char *p = xasprintf("%s/%s", op->path, best);
        struct coord__op *e = coord__op_new(q->s, head_stat, ss);
        e->tag = 1; /* do not list again */
        coord__zk_exists(e, p, false);
        free(p);
        return;
    }
    free(ss);
    stats_part(st);
}

static void head_stat(struct coord__op *op)
{
    struct shard_stat *ss = op->owner;
    struct stats *st = ss->st;
    struct coord_queue *q = st->q;
    if (op->rc == ZOK) {
        stats_oldest(st, op->stat.ctime);
    } else if (op->tag == 0 && !q->dead) {
        /* The cached oldest item is gone: list this shard once. */
        char *sp = coord__q_shard_path(q, ss->k);
        coord__zk_children(coord__op_new(q->s, head_listed, ss), sp, false);
        free(sp);
        return;
    }
    free(ss);
    stats_part(st);
}

static void shard_counted(struct coord__op *op)
{
    struct shard_stat *ss = op->owner;
    struct stats *st = ss->st;
    struct coord_queue *q = st->q;
    if (op->rc != ZOK) {
        st->rc = coord__zrc(op->rc);
    } else {
        st->st.length += op->stat.numChildren;
        int64_t cv = (uint32_t)op->stat.cversion;
        st->st.puts += (cv + op->stat.numChildren) / 2;
        st->st.completes += (cv - op->stat.numChildren) / 2;
        if (op->stat.numChildren > 0 && !q->dead) {
            char *sp = coord__q_shard_path(q, ss->k);
            if (q->head[ss->k]) {
                char *p = xasprintf("%s/%s", sp, q->head[ss->k]);
                coord__zk_exists(coord__op_new(q->s, head_stat, ss), p, false);
                free(p);
            } else {
                coord__zk_children(coord__op_new(q->s, head_listed, ss), sp, false);
            }
            free(sp);
            return;
        }
    }
    free(ss);
    stats_part(st);
}

static void claims_counted(struct coord__op *op)
{
    struct stats *st = op->owner;
    if (op->rc != ZOK)
        st->rc = coord__zrc(op->rc);
    else {
        st->st.claimed = op->stat.numChildren;
        st->st.takes = ((int64_t)(uint32_t)op->stat.cversion + op->stat.numChildren) / 2;
    }
    stats_part(st);
}

static void stats_start(struct coord_queue *q, void *arg)
{
    struct stats *st = arg;
    if (q->open != Q_OPEN) {
        st->rc = DRV_EAGAIN;
        st->pending = 1;
        stats_part(st);
        return;
    }
    st->pending = (int)q->shards + 1;
    for (unsigned k = 0; k < q->shards; k++) {
        struct shard_stat *ss = xcalloc(1, sizeof(*ss));
        ss->st = st;
        ss->k = k;
        char *sp = coord__q_shard_path(q, k);
        coord__zk_exists(coord__op_new(q->s, shard_counted, ss), sp, false);
        free(sp);
    }
    char *cp = xasprintf("%s/claims", q->path);
    coord__zk_exists(coord__op_new(q->s, claims_counted, st), cp, false);
    free(cp);
}

void coord_queue_stats(struct coord_queue *q, coord_stats_cb cb, void *arg)
{
    struct stats *st = xcalloc(1, sizeof(*st));
    st->q = q;
    st->cb = cb;
    st->arg = arg;
    q->refs++;
    if (q->open == Q_OPEN)
        stats_start(q, st);
    else
        coord__q_defer(q, stats_start, st);
}

/* ---- holder ------------------------------------------------------------------------ */

struct holder_q {
    struct coord_queue *q;
    coord_holder_cb cb;
    void *arg;
    int pending;
    int claim_rc, item_rc;
    char *claim_json;
};

static void holder_part(struct coord__op *op)
{
    struct holder_q *h = op->owner;
    if (op->tag == 0) {
        h->claim_rc = op->rc;
        if (op->rc == ZOK)
            h->claim_json = xstrdup(op->value);
    } else {
        h->item_rc = op->rc;
    }
    if (--h->pending > 0)
        return;
    if (h->claim_rc == ZOK)
        h->cb(0, h->claim_json, h->arg);
    else if (h->claim_rc != ZNONODE)
        h->cb(coord__zrc(h->claim_rc), NULL, h->arg);
    else if (h->item_rc == ZOK)
        h->cb(0, NULL, h->arg);
    else
        h->cb(coord__zrc(h->item_rc), NULL, h->arg);
    free(h->claim_json);
    struct coord_queue *q = h->q;
    free(h);
    coord__q_unref(q);
}

static void holder_bad(void *owner)
{
    struct holder_q *h = owner;
    h->cb(DRV_EINVAL, NULL, h->arg);
    coord__q_unref(h->q);
    free(h);
}

void coord_queue_holder(struct coord_queue *q, const char *item_id, coord_holder_cb cb, void *arg)
{
    struct holder_q *h = xcalloc(1, sizeof(*h));
    h->q = q;
    h->cb = cb;
    h->arg = arg;
    q->refs++;
    char *item, *claim;
    if (!coord__q_paths(q, item_id, &item, &claim, NULL)) {
        coord__timer(q->s, 0, holder_bad, h);
        return;
    }
    h->pending = 2;
    struct coord__op *c = coord__op_new(q->s, holder_part, h);
    c->tag = 0;
    coord__zk_get(c, claim, false);
    struct coord__op *i = coord__op_new(q->s, holder_part, h);
    i->tag = 1;
    coord__zk_exists(i, item, false);
    free(item);
    free(claim);
}

/* ---- cancel --------------------------------------------------------------------------- */

struct cancel_q {
    struct coord_queue *q;
    coord_done_cb done;
    void *arg;
    char *item, *claim, *key;
    unsigned tries;
    int pending, item_rc, claim_rc;
};

static void cancel_send(struct cancel_q *c);

static void cancel_end(struct cancel_q *c, int rc)
{
    if (c->done)
        c->done(rc, c->arg);
    struct coord_queue *q = c->q;
    free(c->item);
    free(c->claim);
    free(c->key);
    free(c);
    coord__q_unref(q);
}

static void cancel_check(void *owner);

static void cancel_checked(struct coord__op *op)
{
    struct cancel_q *c = op->owner;
    if (op->tag == 0)
        c->item_rc = op->rc;
    else
        c->claim_rc = op->rc;
    if (--c->pending > 0)
        return;
    if (c->item_rc == ZNONODE)
        cancel_end(c, DRV_ENOENT);
    else if (c->item_rc == ZOK && c->claim_rc == ZOK)
        cancel_end(c, DRV_ECONFLICT);
    else if (c->item_rc == ZOK && c->claim_rc == ZNONODE)
        cancel_send(c);
    else if (c->q->s->closing)
        cancel_end(c, DRV_EAGAIN);
    else
        coord__timer(c->q->s, coord__backoff_ms(c->q->s, c->tries++), cancel_check, c);
}

static void cancel_check(void *owner)
{
    struct cancel_q *c = owner;
    struct coord_session *s = c->q->s;
    c->pending = 2;
    coord__zk_sync(coord__op_new(s, NULL, NULL), c->q->path);
    struct coord__op *i = coord__op_new(s, cancel_checked, c);
    i->tag = 0;
    coord__zk_exists(i, c->item, false);
    struct coord__op *k = coord__op_new(s, cancel_checked, c);
    k->tag = 1;
    coord__zk_exists(k, c->claim, false);
}

static void cancelled(struct coord__op *op)
{
    struct cancel_q *c = op->owner;
    int failed = coord__multi_failed(op);
    int zrc = failed >= 0 ? op->results[failed].err : op->rc;
    if (op->rc == ZOK) {
        log_info(MOD, "event=queue-item-cancelled item=%s", c->item);
        cancel_end(c, 0);
    } else if (coord__zrc_unknown(op->rc) && !op->s->closing) {
        coord__timer(op->s, coord__backoff_ms(op->s, c->tries++), cancel_check, c);
    } else if (failed == 0 && zrc == ZNODEEXISTS) {
        cancel_end(c, DRV_ECONFLICT);
    } else if (failed == 1 && zrc == ZNONODE) {
        cancel_end(c, DRV_ENOENT);
    } else if (failed == 3 && zrc == ZNONODE) {
        FREE_NULL(c->key); /* its key record is gone already */
        cancel_send(c);
    } else {
        cancel_end(c, coord__zrc(zrc));
    }
}

static void cancel_send(struct cancel_q *c)
{
    struct coord__op *op = coord__op_new(c->q->s, cancelled, c);
    coord__multi_init(op, c->key ? 4 : 3);
    coord__mop_create(op, 0, c->claim, "{\"cancel\":true}", COORD_EPHEMERAL);
    coord__mop_delete(op, 1, c->item, -1);
    coord__mop_delete(op, 2, c->claim, -1);
    if (c->key)
        coord__mop_delete(op, 3, c->key, -1);
    coord__zk_multi(op);
}

static void cancel_bad(void *owner)
{
    cancel_end(owner, DRV_EINVAL);
}

void coord_queue_cancel(struct coord_queue *q, const char *item_id, coord_done_cb done, void *arg)
{
    struct cancel_q *c = xcalloc(1, sizeof(*c));
    c->q = q;
    c->done = done;
    c->arg = arg;
    q->refs++;
    if (!coord__q_paths(q, item_id, &c->item, &c->claim, &c->key)) {
        coord__timer(q->s, 0, cancel_bad, c);
        return;
    }
    cancel_send(c);
}

/* ---- an item by its key: the key record names it ---------------------------------------- */

struct key_item {
    struct coord_queue *q;
    coord_key_item_cb cb;
    void *arg;
    char *key;
};

static void key_item_end(struct key_item *k, int rc, const char *id)
{
    k->cb(rc, id, k->arg);
    struct coord_queue *q = k->q;
    free(k->key);
    free(k);
    coord__q_unref(q);
}

static void key_item_read(struct coord__op *op)
{
    struct key_item *k = op->owner;
    json_t *j = op->rc == ZOK ? json_loads(op->value, 0, NULL) : NULL;
    const char *id = json_string_value(json_object_get(j, "item"));
    if (id)
        key_item_end(k, 0, id);
    else if (op->rc == ZOK || op->rc == ZNONODE)
        key_item_end(k, DRV_ENOENT, NULL); /* the record goes with its item */
    else
        key_item_end(k, coord__zrc(op->rc), NULL);
    json_decref(j);
}

static void key_item_start(struct coord_queue *q, void *arg)
{
    struct key_item *k = arg;
    if (q->open != Q_OPEN) {
        key_item_end(k, DRV_EAGAIN, NULL);
        return;
    }
    char *kp = xasprintf("%s/keys/%s", q->path, k->key);
    coord__zk_get(coord__op_new(q->s, key_item_read, k), kp, false);
    free(kp);
}

void coord_queue_key_item(struct coord_queue *q, const char *key, coord_key_item_cb cb, void *arg)
{
    struct key_item *k = xcalloc(1, sizeof(*k));
    k->q = q;
    k->cb = cb;
    k->arg = arg;
    k->key = xstrdup(key ? key : "");
    q->refs++;
    if (q->open == Q_OPEN)
        key_item_start(q, k);
    else
        coord__q_defer(q, key_item_start, k);
}

/* ---- find ------------------------------------------------------------------------------ */

struct find_q {
    struct coord_queue *q;
    coord_find_cb cb;
    void *arg;
    char *key;
    char *id; /* "sNN/<name>" once known */
    char *claim_json;
    int claim_rc, item_rc, rc;
    int pending;
    char ***shard_names;
    int *shard_n;
    char **claims;
    int n_claims;
};

static void find_end(struct find_q *f, int rc, int64_t ahead)
{
    struct coord_queue_found found = {.id = f->id, .claim_json = f->claim_json, .ahead = ahead};
    f->cb(rc, rc == 0 ? &found : NULL, f->arg);
    for (unsigned k = 0; f->shard_names && k < f->q->shards; k++) {
        for (int i = 0; i < f->shard_n[k]; i++)
            free(f->shard_names[k][i]);
        free(f->shard_names[k]);
    }
    free(f->shard_names);
    free(f->shard_n);
    for (int i = 0; i < f->n_claims; i++)
        free(f->claims[i]);
    free(f->claims);
    free(f->key);
    free(f->id);
    free(f->claim_json);
    struct coord_queue *q = f->q;
    free(f);
    coord__q_unref(q);
}

/* Unclaimed items before f's item: before it in its shard, of a higher priority elsewhere. */
static int64_t count_ahead(struct find_q *f)
{
    qsort(f->claims, (size_t)f->n_claims, sizeof(char *), coord__q_cmp_item);
    unsigned mine = (unsigned)atoi(f->id + 1);
    const char *name = strchr(f->id, '/') + 1;
    int64_t ahead = 0;
    for (unsigned k = 0; k < f->q->shards; k++)
        for (int i = 0; i < f->shard_n[k]; i++) {
            const char *n = f->shard_names[k][i];
            if (!coord__q_name_ok(n))
                continue;
            bool before = k == mine ? strcmp(n, name) < 0 : n[1] < name[1];
            if (!before)
                continue;
            char c[512];
            snprintf(c, sizeof(c), "s%02u-%s", k, n);
            const char *cp = c;
            if (!bsearch(&cp, f->claims, (size_t)f->n_claims, sizeof(char *), coord__q_cmp_item))
                ahead++;
        }
    return ahead;
}

static void find_part(struct coord__op *op)
{
    struct find_q *f = op->owner;
    intptr_t tag = op->tag;
    if (tag == -1) {
        f->claim_rc = op->rc;
        if (op->rc == ZOK)
            f->claim_json = xstrdup(op->value);
    } else if (tag == -2) {
        f->item_rc = op->rc;
    } else if (op->rc != ZOK) {
        f->rc = op->rc;
    } else if (tag == -3) {
        f->claims = op->strv;
        f->n_claims = op->strc;
        op->strv = NULL;
        op->strc = 0;
    } else {
        f->shard_names[tag] = op->strv;
        f->shard_n[tag] = op->strc;
        op->strv = NULL;
        op->strc = 0;
    }
    if (--f->pending > 0)
        return;
    if (f->item_rc == ZNONODE)
        find_end(f, DRV_ENOENT, 0);
    else if (f->item_rc != ZOK)
        find_end(f, coord__zrc(f->item_rc), 0);
    else if (f->claim_rc != ZOK && f->claim_rc != ZNONODE)
        find_end(f, coord__zrc(f->claim_rc), 0);
    else if (f->rc != ZOK)
        find_end(f, coord__zrc(f->rc), 0);
    else
        find_end(f, 0, count_ahead(f));
}

static void find_item(struct find_q *f)
{
    struct coord_queue *q = f->q;
    char *item, *claim;
    if (!coord__q_paths(q, f->id, &item, &claim, NULL)) {
        find_end(f, DRV_ENOENT, 0);
        return;
    }
    f->shard_names = xcalloc(q->shards, sizeof(char **));
    f->shard_n = xcalloc(q->shards, sizeof(int));
    f->pending = (int)q->shards + 3;
    f->rc = ZOK;
    struct coord__op *c = coord__op_new(q->s, find_part, f);
    c->tag = -1;
    coord__zk_get(c, claim, false);
    struct coord__op *i = coord__op_new(q->s, find_part, f);
    i->tag = -2;
    coord__zk_exists(i, item, false);
    char *cp = xasprintf("%s/claims", q->path);
    struct coord__op *l = coord__op_new(q->s, find_part, f);
    l->tag = -3;
    coord__zk_children(l, cp, false);
    free(cp);
    for (unsigned k = 0; k < q->shards; k++) {
        char *sp = coord__q_shard_path(q, k);
        struct coord__op *o = coord__op_new(q->s, find_part, f);
        o->tag = k;
        coord__zk_children(o, sp, false);
        free(sp);
    }
    free(item);
    free(claim);
}

/* The key record is missing: search the key's shard. */
static void find_listed(struct coord__op *op)
{
    struct find_q *f = op->owner;
    const char *found = NULL;
    size_t kl = strlen(f->key);
    for (int i = 0; op->rc == ZOK && i < op->strc && !found; i++) {
        const char *n = op->strv[i];
        size_t nl = strlen(n);
        if (coord__q_name_time(n) >= 0 && nl > kl + 2 && strcmp(n + nl - kl, f->key) == 0 &&
            n[nl - kl - 1] == 'k' && n[nl - kl - 2] == '-')
            found = n;
    }
    if (found) {
        f->id = xasprintf("%s/%s", coord__basename(op->path), found);
        find_item(f);
    } else {
        find_end(f, op->rc == ZOK || op->rc == ZNONODE ? DRV_ENOENT : coord__zrc(op->rc), 0);
    }
}

static void find_keyed(struct coord__op *op)
{
    struct find_q *f = op->owner;
    struct coord_queue *q = f->q;
    json_t *j = op->rc == ZOK ? json_loads(op->value, 0, NULL) : NULL;
    const char *id = json_string_value(json_object_get(j, "item"));
    if (id) {
        f->id = xstrdup(id);
        find_item(f);
    } else if (op->rc == ZOK || op->rc == ZNONODE) {
        unsigned k = (unsigned)(coord_hash64(f->key, strlen(f->key)) % q->shards);
        char *sp = coord__q_shard_path(q, k);
        coord__zk_children(coord__op_new(q->s, find_listed, f), sp, false);
        free(sp);
    } else {
        find_end(f, coord__zrc(op->rc), 0);
    }
    json_decref(j);
}

static void find_start(struct coord_queue *q, void *arg)
{
    struct find_q *f = arg;
    if (q->open != Q_OPEN) {
        find_end(f, DRV_EAGAIN, 0);
        return;
    }
    char *kp = xasprintf("%s/keys/%s", q->path, f->key);
    coord__zk_get(coord__op_new(q->s, find_keyed, f), kp, false);
    free(kp);
}

void coord_queue_find(struct coord_queue *q, const char *key, coord_find_cb cb, void *arg)
{
    struct find_q *f = xcalloc(1, sizeof(*f));
    f->q = q;
    f->cb = cb;
    f->arg = arg;
    f->key = xstrdup(key ? key : "");
    q->refs++;
    if (q->open == Q_OPEN)
        find_start(q, f);
    else
        coord__q_defer(q, find_start, f);
}
