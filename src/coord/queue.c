/*
 * queue: a sharded locking queue of tasks: open, put, close. Takes are in
 * queue_take.c, held claims in queue_hold.c, stats and the janitor's reads in
 * queue_find.c; the tree and the item names in queue_int.h.
 *
 * Why shards: one getChildren reply must stay far below ZooKeeper's 1 MB
 * packet limit. An item name is about 40 bytes, so with the default 16 shards
 * a backlog of 100,000 items makes replies of about 6,250 names (~270 KB),
 * and the claims list only holds what consumers hold right now.
 *
 * Open: ensure the parent, create <q> (or read its shard count), then
 * items/, claims/, keys/, puts/ and the shards, pipelined; the last answer
 * decides. Calls made meanwhile are deferred behind it. A failed attempt
 * fails the deferred calls (DRV_EAGAIN), tells the owner once, and is
 * retried with backoff; calls made meanwhile wait for the next attempt.
 *
 *   OPENING --ok--> OPEN
 *      |  ^
 *      v  | backoff
 *     RETRY
 *
 * Put (coord_queue_put), exactly once:
 *   1. names i<r>-<t>-g<random>-<n>-<i>, round-robin over the shards; the
 *      items are cut into chunks under the session's size budget;
 *   2. each chunk is one multi-op: its items and an ephemeral marker
 *      puts/m-<random>-<n>-<chunk>; chunks go one after the other;
 *   3. answer lost: after a backoff, on the same session, a sync then an
 *      exists of the marker say whether the chunk applied (even if
 *      consumers completed its items meanwhile); not applied: sent again.
 *      The session expired meanwhile (marker gone): any of the chunk's items
 *      still there means it applied; none means it cannot be known
 *      (DRV_EAGAIN: never a second copy);
 *   4. answered markers are deleted together, one multi-op per 50 ms.
 * A keyed put (coord_txn_queue_put) is one record of a transaction: the
 * item i<r>-<t>-k<key> in shard hash(key) and the key record keys/<key>,
 * which makes a second put of a live key fail.
 *
 * Cost per item: 4 znode writes (create item, create claim, delete claim,
 * delete item), 6 for a keyed item (its key record); in transactions: 1 per
 * put chunk + 1 per claim batch + 1 per complete batch.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <jansson.h>

#include "clock.h"
#include "jsoncheck.h"
#include "log.h"
#include "queue_int.h"
#include "xalloc.h"

#define MOD "coord"
#define TIME_DIGITS 11

void coord__q_unref(struct coord_queue *q)
{
    if (--q->refs > 0)
        return;
    for (size_t i = 0; i < q->cache_n; i++)
        free(q->cache[i]);
    free(q->cache);
    for (size_t i = 0; i < q->n_round_claimed; i++)
        free(q->round_claimed[i]);
    free(q->round_claimed);
    for (unsigned i = 0; i < q->shards; i++)
        free(q->head ? q->head[i] : NULL);
    free(q->head);
    free(q->fins);
    for (size_t i = 0; i < q->n_markers; i++)
        free(q->markers[i]);
    free(q->markers);
    coord__q_hold_free(q);
    free(q->path);
    free(q->consumer);
    free(q);
}

struct coord__op *coord__q_op(struct coord_queue *q, void (*done)(struct coord__op *), void *owner)
{
    q->refs++;
    return coord__op_new(q->s, done, owner);
}

char *coord__q_shard_path(const struct coord_queue *q, unsigned k)
{
    return xasprintf("%s/items/s%02u", q->path, k);
}

bool coord__q_name_ok(const char *name)
{
    return name[0] == 'i' && name[1] >= '0' && name[1] <= '9' && name[2] == '-';
}

int64_t coord_queue_item_time(const char *item_id)
{
    const char *slash = item_id ? strrchr(item_id, '/') : NULL;
    return item_id ? coord__q_name_time(slash ? slash + 1 : item_id) : -1;
}

int64_t coord__q_name_time(const char *name)
{
    if (!coord__q_name_ok(name) || strlen(name) < 3 + TIME_DIGITS + 2 ||
        name[3 + TIME_DIGITS] != '-')
        return -1;
    int64_t t = 0;
    for (int i = 3; i < 3 + TIME_DIGITS; i++) {
        char c = name[i];
        int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (v < 0)
            return -1;
        t = t * 16 + v;
    }
    return t;
}

/* The key of a keyed item's name, else NULL. */
static const char *key_of(const char *name)
{
    if (coord__q_name_time(name) < 0 || name[3 + TIME_DIGITS + 1] != 'k')
        return NULL;
    return name + 3 + TIME_DIGITS + 2;
}

const char *coord_queue_item_key(const char *item_id)
{
    const char *slash = item_id ? strrchr(item_id, '/') : NULL;
    return slash && coord__q_name_ok(slash + 1) ? key_of(slash + 1) : NULL;
}

int coord__q_cmp_item(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

bool coord__q_paths(const struct coord_queue *q, const char *id, char **item, char **claim,
                    char **key_path)
{
    const char *slash = strchr(id, '/');
    if (!slash || id[0] != 's' || slash == id + 1 || strchr(slash + 1, '/') ||
        !coord__q_name_ok(slash + 1))
        return false;
    if (item)
        *item = xasprintf("%s/items/%s", q->path, id);
    if (claim)
        *claim = xasprintf("%s/claims/%.*s-%s", q->path, (int)(slash - id), id, slash + 1);
    if (key_path) {
        const char *k = key_of(slash + 1);
        *key_path = k ? xasprintf("%s/keys/%s", q->path, k) : NULL;
    }
    return true;
}

int coord_queue_item_id(const struct coord_queue *q, const char *path, char *buf, size_t n)
{
    size_t plen = strlen(q->path);
    if (strncmp(path, q->path, plen) != 0 || strncmp(path + plen, "/items/s", 8) != 0)
        return DRV_EINVAL;
    const char *id = path + plen + 7;
    if (!coord__q_paths(q, id, NULL, NULL, NULL) || strlen(id) + 1 > n)
        return DRV_EINVAL;
    memcpy(buf, id, strlen(id) + 1);
    return 0;
}

/* ---- open ----------------------------------------------------------------- */

static void run_deferred(struct coord_queue *q)
{
    struct deferred *d = q->deferred;
    q->deferred = NULL;
    /* In call order. */
    struct deferred *rev = NULL;
    while (d) {
        struct deferred *n = d->next;
        d->next = rev;
        rev = d;
        d = n;
    }
    while (rev) {
        struct deferred *n = rev->next;
        rev->fn(q, rev->p);
        free(rev);
        rev = n;
    }
}

void coord__q_defer(struct coord_queue *q, void (*fn)(struct coord_queue *, void *), void *p)
{
    struct deferred *d = xcalloc(1, sizeof(*d));
    d->fn = fn;
    d->p = p;
    d->next = q->deferred;
    q->deferred = d;
}

static void open_attempt(struct coord_queue *q);

static void open_retry(void *owner)
{
    struct coord_queue *q = owner;
    if (!q->dead && q->open == Q_RETRY)
        open_attempt(q);
    coord__q_unref(q);
}

static void open_done(struct coord__op *op)
{
    struct coord_queue *q = op->owner;
    if (!q->dead) {
        int rc = op->rc == ZOK || op->rc == ZNODEEXISTS ? 0 : coord__zrc(op->rc);
        q->open = rc == 0 ? Q_OPEN : Q_RETRY;
        if (rc) {
            int ms = coord__backoff_ms(q->s, q->open_tries++);
            log_warn(MOD, "event=queue-open-failed path=%s zrc=%d retry_ms=%d", q->path, op->rc,
                     ms);
            q->refs++;
            coord__timer(q->s, ms, open_retry, q);
        } else if (q->open_tries) {
            log_info(MOD, "event=queue-opened path=%s attempts=%u", q->path, q->open_tries + 1);
        }
        if (!q->told) {
            q->told = true;
            if (q->ready_cb)
                q->ready_cb(rc, q->ready_arg);
        }
        run_deferred(q); /* each fails with DRV_EAGAIN unless open */
        if (!rc)
            coord__q_pump(q);
    }
    coord__q_unref(q);
}

static void open_subtree(struct coord_queue *q)
{
    static const char *const dirs[] = {"items", "claims", "keys", "puts"};
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        char *p = xasprintf("%s/%s", q->path, dirs[i]);
        coord__zk_create(coord__op_new(q->s, NULL, NULL), p, "{}", 0);
        free(p);
    }
    if (!q->head)
        q->head = xcalloc(q->shards, sizeof(char *));
    for (unsigned k = 0; k < q->shards; k++) {
        char *p = coord__q_shard_path(q, k);
        if (k + 1 < q->shards)
            coord__zk_create(coord__op_new(q->s, NULL, NULL), p, "{}", 0);
        else
            coord__zk_create(coord__q_op(q, open_done, q), p, "{}", 0);
        free(p);
    }
}

static void open_meta(struct coord__op *op)
{
    struct coord_queue *q = op->owner;
    if (!q->dead) {
        if (op->rc == ZOK && !q->head) {
            json_t *j = json_loads(op->value, 0, NULL);
            json_t *sh = json_object_get(j, "shards");
            if (json_is_integer(sh) && json_integer_value(sh) >= 1 && json_integer_value(sh) <= 100)
                q->shards = (unsigned)json_integer_value(sh);
            json_decref(j);
        }
        open_subtree(q);
    }
    coord__q_unref(q);
}

static void open_created(struct coord__op *op)
{
    struct coord_queue *q = op->owner;
    if (!q->dead) {
        if (op->rc == ZNODEEXISTS)
            coord__zk_get(coord__q_op(q, open_meta, q), q->path, false); /* its count wins */
        else
            open_subtree(q);
    }
    coord__q_unref(q);
}

static void open_parent(int rc, void *arg)
{
    struct coord_queue *q = arg;
    if (!q->dead) {
        char *meta = xasprintf("{\"kind\":\"queue\",\"format\":1,\"shards\":%u}", q->shards);
        coord__zk_create(coord__q_op(q, open_created, q), q->path, meta, 0);
        free(meta);
    }
    coord__q_unref(q);
}

static void open_attempt(struct coord_queue *q)
{
    q->open = Q_OPENING;
    q->refs++;
    char *parent = coord__parent(q->path);
    coord_ensure_path(q->s, parent, open_parent, q);
    free(parent);
}

static void q_session(void *owner, enum coord__session_event ev)
{
    struct coord_queue *q = owner;
    if (q->dead)
        return;
    if (ev == COORD__LOST) {
        coord__q_take_lost(q);
        /* Markers of the expired session went with it. */
        for (size_t i = 0; i < q->n_markers; i++)
            free(q->markers[i]);
        q->n_markers = 0;
    }
    coord__q_hold_session(q, ev);
    if (ev == COORD__NEW_SESSION && q->open == Q_OPEN) {
        /* Open again: the same creates, each NODEEXISTS after an expiry, but after a
           ZooKeeper rebuilt from nothing (session.c, "Giving up") the queue's znodes are
           gone and every listing and put would fail for ever. Takes wait meanwhile. */
        open_attempt(q);
    } else if (ev == COORD__NEW_SESSION) {
        coord__q_pump(q);
    }
}

struct coord_queue *coord_queue_open(struct coord_session *s, const char *path,
                                     const struct coord_queue_opts *o, coord_done_cb done,
                                     void *arg)
{
    struct coord_queue *q = xcalloc(1, sizeof(*q));
    q->s = s;
    q->path = xstrdup(path);
    q->shards = o && o->shards ? (o->shards > 100 ? 100 : o->shards) : COORD_QUEUE_DEFAULT_SHARDS;
    q->consumer = o && o->consumer_id ? xstrdup(o->consumer_id) : xasprintf("pid-%d", getpid());
    coord__q_home_init(q);
    q->on_lost = o ? o->on_lost : NULL;
    q->lost_arg = o ? o->lost_arg : NULL;
    q->skip = o ? o->skip : NULL;
    q->skip_arg = o ? o->skip_arg : NULL;
    q->ready_cb = done;
    q->ready_arg = arg;
    q->refs = 1;
    /* Each consumer starts at its own shard, and each process draws its own. */
    char key[160];
    snprintf(key, sizeof(key), "%s/%llx/%llx", q->consumer, (unsigned long long)coord_session_id(s),
             (unsigned long long)coord__rand(s));
    q->shard = (unsigned)(coord_hash64(key, strlen(key)) % q->shards);
    q->rr = (unsigned)(coord__rand(s) % q->shards);
    coord__reg_listener_add(&s->reg, q, q_session);
    open_attempt(q);
    return q;
}

bool coord_queue_is_open(const struct coord_queue *q)
{
    return q && !q->dead && q->open == Q_OPEN;
}

/* ---- put ------------------------------------------------------------------- */

struct put {
    struct coord_queue *q;
    coord_done_cb done;
    void *arg;
    size_t n;
    char **paths;
    char **data;
    int *rank;
    size_t *ends; /* chunk k is [ends[k-1], ends[k]) */
    size_t n_chunks, chunk;
    char *marker; /* of the chunk in flight */
    unsigned gen; /* the handle generation it was sent on */
    unsigned tries;
    int found; /* recovery after an expiry: items still there, answers pending */
    int pending;
    bool failed;
    uint64_t id;
};

static void put_free(struct put *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->paths ? p->paths[i] : NULL);
        free(p->data[i]);
    }
    free(p->paths);
    free(p->data);
    free(p->rank);
    free(p->ends);
    free(p->marker);
    free(p);
}

static void put_end(struct put *p, int rc)
{
    if (p->done)
        p->done(rc, p->arg);
    struct coord_queue *q = p->q;
    put_free(p);
    coord__q_unref(q);
}

static void markers_flush(void *owner);

static void marker_answered(struct coord_queue *q, const char *marker)
{
    XGROW(q->markers, q->cap_markers, q->n_markers + 1);
    q->markers[q->n_markers++] = xstrdup(marker);
    if (!q->markers_scheduled) {
        q->markers_scheduled = true;
        q->refs++;
        coord__timer(q->s, 50, markers_flush, q);
    }
}

static void markers_deleted(struct coord__op *op)
{
    /* One marker gone already makes the whole multi-op fail: delete them one by one. */
    if (op->rc != ZOK && !coord__zrc_session_gone(op->rc))
        for (int i = 0; i < op->nops; i++)
            if (op->ops[i].delete_op.path)
                coord__zk_delete(coord__op_new(op->s, NULL, NULL), op->ops[i].delete_op.path, -1);
}

static void markers_flush(void *owner)
{
    struct coord_queue *q = owner;
    q->markers_scheduled = false;
    for (size_t start = 0; start < q->n_markers; start += 500) {
        size_t k = q->n_markers - start < 500 ? q->n_markers - start : 500;
        struct coord__op *op = coord__op_new(q->s, markers_deleted, NULL);
        coord__op_bind(op, q->s->gen);
        coord__multi_init(op, (int)k);
        for (size_t i = 0; i < k; i++)
            coord__mop_delete(op, (int)i, q->markers[start + i], -1);
        coord__zk_multi(op);
    }
    for (size_t i = 0; i < q->n_markers; i++)
        free(q->markers[i]);
    q->n_markers = 0;
    coord__q_unref(q);
}

static void put_send(struct put *p);
static void put_recover(void *owner);

static void put_next(struct put *p)
{
    p->chunk++;
    p->tries = 0;
    if (p->chunk >= p->n_chunks)
        put_end(p, 0);
    else
        put_send(p);
}

static void put_done(struct coord__op *op)
{
    struct put *p = op->owner;
    if (op->rc == ZOK) {
        marker_answered(p->q, p->marker);
        put_next(p);
    } else if (coord__zrc_unknown(op->rc) && !p->q->s->closing) {
        log_info(MOD, "event=queue-put-unknown marker=%s zrc=%d", p->marker, op->rc);
        coord__timer(p->q->s, coord__backoff_ms(p->q->s, p->tries++), put_recover, p);
    } else {
        log_warn(MOD, "event=queue-put-failed path=%s zrc=%d chunk=%zu of %zu", p->q->path, op->rc,
                 p->chunk + 1, p->n_chunks);
        put_end(p, coord__zrc(op->rc));
    }
}

/* The marker of the lost chunk, asked on the same session after a sync. */
static void put_marker_checked(struct coord__op *op)
{
    struct put *p = op->owner;
    if (op->rc == ZOK) {
        log_info(MOD, "event=queue-put-recovered marker=%s", p->marker);
        marker_answered(p->q, p->marker);
        put_next(p);
    } else if (op->rc == ZNONODE) {
        put_send(p); /* it did not apply */
    } else if (p->q->s->closing) {
        put_end(p, DRV_EAGAIN);
    } else {
        coord__timer(p->q->s, coord__backoff_ms(p->q->s, p->tries++), put_recover, p);
    }
}

/* After an expiry: any of the chunk's items still there means it applied. */
static void put_item_checked(struct coord__op *op)
{
    struct put *p = op->owner;
    if (op->rc == ZOK)
        p->found++;
    else if (op->rc != ZNONODE)
        p->failed = true;
    if (--p->pending > 0)
        return;
    if (p->found) {
        log_info(MOD, "event=queue-put-recovered marker=%s items_left=%d", p->marker, p->found);
        put_next(p);
    } else if (p->failed && !p->q->s->closing) {
        coord__timer(p->q->s, coord__backoff_ms(p->q->s, p->tries++), put_recover, p);
    } else {
        log_warn(MOD, "event=queue-put-unknown-outcome marker=%s", p->marker);
        put_end(p, DRV_EAGAIN);
    }
}

static void put_recover(void *owner)
{
    struct put *p = owner;
    struct coord_session *s = p->q->s;
    if (s->closing) {
        put_end(p, DRV_EAGAIN);
        return;
    }
    if (s->gen == p->gen) {
        struct coord__op *sy = coord__op_new(s, NULL, NULL);
        coord__op_bind(sy, p->gen);
        coord__zk_sync(sy, p->q->path);
        struct coord__op *ex = coord__op_new(s, put_marker_checked, p);
        coord__op_bind(ex, p->gen);
        coord__zk_exists(ex, p->marker, false);
        return;
    }
    size_t from = p->chunk ? p->ends[p->chunk - 1] : 0;
    p->found = 0;
    p->failed = false;
    p->pending = (int)(p->ends[p->chunk] - from);
    coord__zk_sync(coord__op_new(s, NULL, NULL), p->q->path);
    for (size_t i = from; i < p->ends[p->chunk]; i++)
        coord__zk_exists(coord__op_new(s, put_item_checked, p), p->paths[i], false);
}

static void put_send(struct put *p)
{
    struct coord_queue *q = p->q;
    size_t from = p->chunk ? p->ends[p->chunk - 1] : 0;
    size_t n = p->ends[p->chunk] - from;
    free(p->marker);
    p->marker = xasprintf("%s/puts/m-%016llx-%llx-%zu", q->path, (unsigned long long)q->s->nonce,
                          (unsigned long long)p->id, p->chunk);
    char mdata[64];
    snprintf(mdata, sizeof(mdata), "{\"items\":%zu}", n);
    struct coord__op *op = coord__op_new(q->s, put_done, p);
    p->gen = q->s->gen;
    coord__multi_init(op, (int)n + 1);
    for (size_t i = 0; i < n; i++)
        coord__mop_create(op, (int)i, p->paths[from + i], p->data[from + i], 0);
    coord__mop_create(op, (int)n, p->marker, mdata, COORD_EPHEMERAL);
    coord__zk_multi(op);
}

static void put_start(struct coord_queue *q, void *arg)
{
    struct put *p = arg;
    if (q->open != Q_OPEN) {
        put_end(p, DRV_EAGAIN);
        return;
    }
    p->id = ++q->s->uniq;
    unsigned long long t = (unsigned long long)clock_wall_ms();
    p->paths = xcalloc(p->n, sizeof(char *));
    for (size_t i = 0; i < p->n; i++) {
        unsigned k = q->rr++ % q->shards;
        p->paths[i] =
            xasprintf("%s/items/s%02u/i%d-%011llx-g%016llx-%llx-%zx", q->path, k, p->rank[i], t,
                      (unsigned long long)q->s->nonce, (unsigned long long)p->id, i);
    }
    /* Chunks under the budget, each with its marker. */
    size_t budget = q->s->max_req - COORD__MULTI_FRAME - coord__size_create(q->path, "") - 160;
    p->ends = xcalloc(p->n, sizeof(size_t));
    size_t bytes = 0;
    for (size_t i = 0; i < p->n; i++) {
        size_t b = coord__size_create(p->paths[i], p->data[i]);
        if (bytes && bytes + b > budget) {
            p->ends[p->n_chunks++] = i;
            bytes = 0;
        }
        bytes += b;
    }
    p->ends[p->n_chunks++] = p->n;
    if (p->n_chunks > 1)
        log_info(MOD, "event=queue-put-split items=%zu chunks=%zu max=%zu", p->n, p->n_chunks,
                 q->s->max_req);
    put_send(p);
}

int coord_queue_put(struct coord_queue *q, const struct coord_queue_put_item *items, size_t n,
                    coord_done_cb done, void *arg)
{
    if (n == 0 || n > COORD_QUEUE_MAX_BATCH)
        return DRV_EINVAL;
    size_t budget = q->s->max_req - COORD__MULTI_FRAME - coord__size_create(q->path, "") - 160;
    for (size_t i = 0; i < n; i++) {
        if (!items[i].json || items[i].priority < 0 ||
            items[i].priority > COORD_QUEUE_MAX_PRIORITY ||
            !jsoncheck_valid(items[i].json, strlen(items[i].json)))
            return DRV_EINVAL;
        /* The path is about strlen(q->path) + 70. */
        if (coord__size_create(q->path, items[i].json) + 80 > budget) {
            log_warn(MOD, "event=queue-put-too-large path=%s bytes=%zu max=%zu", q->path,
                     strlen(items[i].json), q->s->max_req);
            return DRV_ETOOBIG;
        }
    }
    struct put *p = xcalloc(1, sizeof(*p));
    p->q = q;
    p->done = done;
    p->arg = arg;
    p->n = n;
    p->data = xcalloc(n, sizeof(char *));
    p->rank = xcalloc(n, sizeof(int));
    for (size_t i = 0; i < n; i++) {
        p->data[i] = xstrdup(items[i].json);
        p->rank[i] = COORD_QUEUE_MAX_PRIORITY - items[i].priority;
    }
    q->refs++;
    if (q->open == Q_OPEN)
        put_start(q, p);
    else
        coord__q_defer(q, put_start, p);
    return 0;
}

static bool key_ok(const char *key)
{
    size_t n = key ? strlen(key) : 0;
    if (n < 1 || n > COORD_QUEUE_MAX_KEY)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = key[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == ':' || c == '-'))
            return false;
    }
    return true;
}

size_t coord_txn_queue_put_bytes(const struct coord_queue *q, const char *key, const char *json)
{
    /* The names coord_txn_queue_put makes, at their longest: i9-<11 hex digits>-k<key>. */
    size_t name = 2 + 1 + TIME_DIGITS + 2 + strlen(key);
    size_t item = strlen(q->path) + strlen("/items/sNN/") + name;
    size_t key_path = strlen(q->path) + strlen("/keys/") + strlen(key);
    size_t key_json = strlen("{\"item\":\"sNN/\"}") + name;
    /* coord__size_create counts what it is given: lengths stand in for the strings. */
    return coord__size_create_len(item, strlen(json)) + coord__size_create_len(key_path, key_json);
}

int coord_txn_queue_put(struct coord_txn *t, struct coord_queue *q, const char *key,
                        const char *json, int priority)
{
    if (q->open != Q_OPEN)
        return DRV_EAGAIN;
    if (!key_ok(key) || priority < 0 || priority > COORD_QUEUE_MAX_PRIORITY || !json)
        return DRV_EINVAL;
    if (!jsoncheck_valid(json, strlen(json))) /* not json_loads: a quarter of an owner's CPU */
        return DRV_EINVAL;
    unsigned k = (unsigned)(coord_hash64(key, strlen(key)) % q->shards);
    char *name = xasprintf("i%d-%011llx-k%s", COORD_QUEUE_MAX_PRIORITY - priority,
                           (unsigned long long)clock_wall_ms(), key);
    char *item = xasprintf("%s/items/s%02u/%s", q->path, k, name);
    char *key_path = xasprintf("%s/keys/%s", q->path, key);
    char *key_json = xasprintf("{\"item\":\"s%02u/%s\"}", k, name);
    coord__txn_qput(t, item, key_path, key_json, json);
    free(name);
    free(item);
    free(key_path);
    free(key_json);
    return 0;
}

/* ---- close -------------------------------------------------------------------- */

void coord_queue_close(struct coord_queue *q)
{
    if (!q)
        return;
    q->dead = true;
    coord__reg_listener_remove(&q->s->reg, q);
    coord__reg_watch_remove(&q->s->reg, q);
    coord__q_take_close(q);
    struct deferred *d = q->deferred;
    q->deferred = NULL;
    q->open = Q_RETRY;
    while (d) {
        struct deferred *n = d->next;
        d->fn(q, d->p); /* each fails with DRV_EAGAIN since not open */
        free(d);
        d = n;
    }
    coord__q_hold_close(q);
    coord__q_unref(q);
}
