/*
 * queue: a sharded locking queue of tasks.
 *
 * Tree (docs/zookeeper-tree.md):
 *   <q>                      {"kind":"queue","format":1,"shards":S}
 *   <q>/items/sNN            {}                    NN = 00 .. S-1
 *   <q>/items/sNN/i<r>-<session>-<n>-<seq>         the item's JSON; r = 9 - priority
 *   <q>/claims               {}
 *   <q>/claims/sNN-<item>    {"consumer":...,"session":"0x...","ms":...}   ephemeral
 *
 * Why shards: one getChildren reply must stay far below ZooKeeper's 1 MB
 * packet limit. An item name is about 40 bytes, so with the default 16 shards
 * a backlog of 100,000 items makes replies of about 6,250 names (~280 KB),
 * and the claims list only holds what consumers hold right now.
 *
 * put: n items, round-robin over the shards, in one multi-op (all or none).
 *   The names carry a prefix unique to this session and call; after a
 *   connection loss the first item's shard is searched for it before the
 *   multi-op is sent again, so a put is never duplicated.
 * take: a consumer lists one shard (with a child watch) and the claims, and
 *   keeps the unclaimed names, sorted by priority then sequence, as its cache.
 *   It claims the head of the cache with multi(check item, create claim)
 *   and reads the item in the same round trip (pipelined). A claim that
 *   exists already means another consumer has it: the next name is tried.
 *   Only when its cache is empty does a consumer list again: the next shard,
 *   and after a whole round of empty shards it waits for a child watch on a
 *   shard or on the claims (a dead consumer's claims vanish). So consumers
 *   do not re-list the queue on every change (no herd), and consumers start
 *   at different shards (hash of session and id) so they rarely collide.
 * complete: multi(delete claim, delete item). It travels on the consumer's
 *   own session; the claim is an ephemeral of that session, so it is gone
 *   only if the session is (then the multi-op fails: session expired) or if
 *   this consumer released it. Hence "only if the claim is still ours".
 * release: delete the claim.
 * stats: S stat reads of the shards (numChildren) and one of the claims for
 *   length and claimed; for the age, the smallest sequence number of a shard
 *   is its oldest item (sequence numbers grow with time per shard): the
 *   oldest name of each shard is cached and checked with one stat read; a
 *   shard is listed again only when its cached oldest item is gone.
 *
 * Priority is strict within a shard; across shards a consumer drains its
 * current shard before it moves on.
 *
 * Cost per item: 4 znode writes (create item, create claim, delete claim,
 * delete item) in 3 transactions, or 2 + 1/n transactions with puts of n.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <jansson.h>

#include "coord_int.h"
#include "log.h"
#include "xalloc.h"

#define MOD "coord"
#define RETRY_MS 200

struct take {
    struct take *next;
    struct coord_queue *q;
    coord_take_cb cb;
    void *arg;
    struct event *timer;
};

struct coord_queue {
    struct coord_session *s;
    char *path;
    char *consumer;
    unsigned shards;
    int refs;
    bool dead;
    bool ready;
    coord_done_cb ready_cb;
    void *ready_arg;
    /* calls made before ready */
    struct deferred *deferred;
    /* puts */
    unsigned rr;
    /* takes */
    struct take *takes, *takes_tail;
    size_t n_takes;
    size_t claiming; /* claim attempts in flight */
    char **cache;
    size_t cache_n, cache_pos;
    unsigned cache_shard;
    unsigned shard;   /* the shard to list next */
    unsigned scanned; /* empty shards seen in a row */
    bool refilling;
    bool idle;  /* a whole round was empty: waiting for a watch */
    bool poked; /* a watch fired during the round */
    bool pump_scheduled;
    struct event *pump_ev, *flush_ev;
    /* completes waiting for the end of this turn of the loop */
    struct fin **fins;
    size_t n_fins, cap_fins;
    bool flush_scheduled;
    unsigned poke_shard;
    unsigned epoch; /* bumped on a new session: older claim results are void */
    /* stats */
    char **head;
};

struct deferred {
    struct deferred *next;
    void (*fn)(struct coord_queue *q, void *p);
    void *p;
};

static void q_unref(struct coord_queue *q)
{
    if (--q->refs > 0)
        return;
    for (size_t i = 0; i < q->cache_n; i++)
        free(q->cache[i]);
    free(q->cache);
    for (unsigned i = 0; i < q->shards; i++)
        free(q->head ? q->head[i] : NULL);
    free(q->head);
    free(q->fins);
    free(q->path);
    free(q->consumer);
    free(q);
}

static struct coord__op *q_op(struct coord_queue *q, void (*done)(struct coord__op *), void *owner)
{
    q->refs++;
    return coord__op_new(q->s, done, owner);
}

static char *shard_path(struct coord_queue *q, unsigned k)
{
    return xasprintf("%s/items/s%02u", q->path, k);
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

static void defer(struct coord_queue *q, void (*fn)(struct coord_queue *, void *), void *p)
{
    struct deferred *d = xcalloc(1, sizeof(*d));
    d->fn = fn;
    d->p = p;
    d->next = q->deferred;
    q->deferred = d;
}

static void pump(struct coord_queue *q);

static void open_done(struct coord__op *op)
{
    struct coord_queue *q = op->owner;
    if (!q->dead) {
        int rc = op->rc == ZOK || op->rc == ZNODEEXISTS ? 0 : coord__zrc(op->rc);
        if (rc)
            log_error(MOD, "event=queue-open-failed path=%s zrc=%d", q->path, op->rc);
        q->ready = rc == 0;
        if (q->ready_cb)
            q->ready_cb(rc, q->ready_arg);
        run_deferred(q);
        pump(q);
    }
    q_unref(q);
}

static void open_subtree(struct coord_queue *q)
{
    char *p = xasprintf("%s/items", q->path);
    coord__zk_create(coord__op_new(q->s, NULL, NULL), p, "{}", 0);
    free(p);
    p = xasprintf("%s/claims", q->path);
    coord__zk_create(coord__op_new(q->s, NULL, NULL), p, "{}", 0);
    free(p);
    q->head = xcalloc(q->shards, sizeof(char *));
    for (unsigned k = 0; k < q->shards; k++) {
        p = shard_path(q, k);
        if (k + 1 < q->shards)
            coord__zk_create(coord__op_new(q->s, NULL, NULL), p, "{}", 0);
        else
            coord__zk_create(q_op(q, open_done, q), p, "{}", 0);
        free(p);
    }
    /* Each consumer starts at its own shard. */
    char key[128];
    snprintf(key, sizeof(key), "%s/%llx", q->consumer, (unsigned long long)coord_session_id(q->s));
    q->shard = (unsigned)(coord_hash64(key, strlen(key)) % q->shards);
}

static void open_meta(struct coord__op *op)
{
    struct coord_queue *q = op->owner;
    if (!q->dead) {
        if (op->rc == ZOK) {
            json_t *j = json_loads(op->value, 0, NULL);
            json_t *sh = json_object_get(j, "shards");
            if (json_is_integer(sh) && json_integer_value(sh) >= 1 && json_integer_value(sh) <= 100)
                q->shards = (unsigned)json_integer_value(sh);
            json_decref(j);
        }
        open_subtree(q);
    }
    q_unref(q);
}

static void open_created(struct coord__op *op)
{
    struct coord_queue *q = op->owner;
    if (!q->dead) {
        if (op->rc == ZNODEEXISTS)
            coord__zk_get(q_op(q, open_meta, q), q->path, false); /* its shard count wins */
        else
            open_subtree(q);
    }
    q_unref(q);
}

static void open_parent(int rc, void *arg)
{
    struct coord_queue *q = arg;
    if (!q->dead) {
        char *meta = xasprintf("{\"kind\":\"queue\",\"format\":1,\"shards\":%u}", q->shards);
        coord__zk_create(q_op(q, open_created, q), q->path, meta, 0);
        free(meta);
    }
    q_unref(q);
}

static void q_session(void *owner, enum coord__session_event ev);

struct coord_queue *coord_queue_open(struct coord_session *s, const char *path,
                                     const struct coord_queue_opts *o, coord_done_cb done,
                                     void *arg)
{
    struct coord_queue *q = xcalloc(1, sizeof(*q));
    q->s = s;
    q->path = xstrdup(path);
    q->shards = o && o->shards ? (o->shards > 100 ? 100 : o->shards) : COORD_QUEUE_DEFAULT_SHARDS;
    q->consumer = o && o->consumer_id ? xstrdup(o->consumer_id) : xasprintf("pid-%d", getpid());
    q->ready_cb = done;
    q->ready_arg = arg;
    q->refs = 2;
    coord__listener_add(s, q, q_session);
    char *parent = xstrndup(path, (size_t)(coord__basename(path) - path - 1));
    coord_ensure_path(s, parent, open_parent, q);
    free(parent);
    return q;
}

/* ---- put ------------------------------------------------------------------- */

struct put {
    struct coord_queue *q;
    coord_done_cb done;
    void *arg;
    size_t n;
    char **paths; /* requested (prefix) paths */
    char **data;
    char *prefix; /* "-<session>-<n>-" part shared by the names */
    unsigned first_shard;
};

static void put_free(struct put *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->paths[i]);
        free(p->data[i]);
    }
    free(p->paths);
    free(p->data);
    free(p->prefix);
    free(p);
}

static void put_end(struct put *p, int rc)
{
    if (p->done)
        p->done(rc, p->arg);
    struct coord_queue *q = p->q;
    put_free(p);
    q_unref(q);
}

static void put_send(struct put *p);

static void put_search(void *owner);

static void put_searched(struct coord__op *op)
{
    struct put *p = op->owner;
    struct coord_queue *q = p->q;
    if (op->rc == ZOK) {
        bool found = false;
        for (int i = 0; i < op->strc && !found; i++)
            found = strstr(op->strv[i], p->prefix) != NULL;
        if (found) {
            /* The lost multi-op went through, and so all of it. */
            log_info(MOD, "event=queue-put-recovered prefix=%s", p->prefix);
            put_end(p, 0);
        } else {
            put_send(p);
        }
    } else if (coord__zrc_unknown(op->rc)) {
        coord__timer(q->s, RETRY_MS, put_search, p);
    } else {
        put_end(p, coord__zrc(op->rc));
    }
    q_unref(q);
}

static void put_search(void *owner)
{
    struct put *p = owner;
    char *sp = shard_path(p->q, p->first_shard);
    coord__zk_children(q_op(p->q, put_searched, p), sp, false);
    free(sp);
}

static void put_done(struct coord__op *op)
{
    struct put *p = op->owner;
    if (op->rc == ZOK) {
        put_end(p, 0);
    } else if (coord__zrc_unknown(op->rc)) {
        log_info(MOD, "event=queue-put-unknown prefix=%s zrc=%d", p->prefix, op->rc);
        coord__timer(p->q->s, RETRY_MS, put_search, p);
    } else {
        log_warn(MOD, "event=queue-put-failed path=%s zrc=%d", p->q->path, op->rc);
        put_end(p, coord__zrc(op->rc));
    }
}

static void put_send(struct put *p)
{
    struct coord__op *op = coord__op_new(p->q->s, put_done, p);
    coord__multi_init(op, (int)p->n);
    for (size_t i = 0; i < p->n; i++)
        coord__mop_create(op, (int)i, p->paths[i], p->data[i], COORD_SEQUENTIAL);
    coord__zk_multi(op);
}

static void put_start(struct coord_queue *q, void *arg)
{
    struct put *p = arg;
    if (!q->ready) {
        put_end(p, DRV_EAGAIN);
        return;
    }
    char prefix[64];
    coord__unique_prefix(q->s, prefix, sizeof(prefix));
    p->prefix = xasprintf("-%s", prefix);
    p->first_shard = q->rr % q->shards;
    for (size_t i = 0; i < p->n; i++) {
        unsigned k = q->rr++ % q->shards;
        char *sp = shard_path(q, k);
        /* p->paths[i] holds the rank until now. */
        int rank = (int)(intptr_t)p->paths[i];
        p->paths[i] = xasprintf("%s/i%d%s", sp, rank, p->prefix);
        free(sp);
    }
    put_send(p);
}

int coord_queue_put(struct coord_queue *q, const struct coord_queue_put_item *items, size_t n,
                    coord_done_cb done, void *arg)
{
    if (n == 0 || n > COORD_QUEUE_MAX_BATCH)
        return DRV_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (!items[i].json || items[i].priority < 0 || items[i].priority > COORD_QUEUE_MAX_PRIORITY)
            return DRV_EINVAL;
    struct put *p = xcalloc(1, sizeof(*p));
    p->q = q;
    p->done = done;
    p->arg = arg;
    p->n = n;
    p->paths = xcalloc(n, sizeof(char *));
    p->data = xcalloc(n, sizeof(char *));
    for (size_t i = 0; i < n; i++) {
        p->data[i] = xstrdup(items[i].json);
        p->paths[i] = (char *)(intptr_t)(COORD_QUEUE_MAX_PRIORITY - items[i].priority);
    }
    q->refs++;
    if (q->ready)
        put_start(q, p);
    else
        defer(q, put_start, p);
    return 0;
}

/* ---- take ------------------------------------------------------------------ */

static struct take *take_pop(struct coord_queue *q)
{
    struct take *t = q->takes;
    if (t) {
        q->takes = t->next;
        if (!q->takes)
            q->takes_tail = NULL;
        q->n_takes--;
        if (t->timer) {
            coord__timer_cancel(t->timer);
            t->timer = NULL;
            q->refs--; /* the timer's reference; the caller holds another */
        }
    }
    return t;
}

static void take_timeout(void *owner)
{
    struct take *t = owner;
    struct coord_queue *q = t->q;
    t->timer = NULL;
    /* Unlink it. */
    struct take **pp = &q->takes;
    struct take *prev = NULL;
    while (*pp && *pp != t) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    if (*pp) {
        *pp = t->next;
        if (q->takes_tail == t)
            q->takes_tail = prev;
        q->n_takes--;
        t->cb(NULL, DRV_ETIMEDOUT, t->arg);
        free(t);
    }
    q_unref(q);
}

static void cache_clear(struct coord_queue *q)
{
    for (size_t i = 0; i < q->cache_n; i++)
        free(q->cache[i]);
    FREE_NULL(q->cache);
    q->cache_n = q->cache_pos = 0;
}

/*
 * One claim attempt for n names of one shard: a multi-op of n (check item,
 * create claim) pairs, and n reads pipelined behind it. All or nothing: when
 * one name is taken by another consumer (or gone), the others are tried again
 * one by one.
 */
struct attempt {
    struct coord_queue *q;
    unsigned shard;
    unsigned epoch;
    int n;
    char **names;
    int parts; /* results still to come: the multi and the n reads */
    int claim_rc;
    int failed; /* index of the name that failed the multi, -1 when unknown */
    char **data;
    int64_t *ctime;
    int *get_rc;
};

static void claim(struct coord_queue *q, unsigned shard, char **names, int n);

static void attempt_free(struct attempt *a)
{
    for (int i = 0; i < a->n; i++) {
        free(a->names[i]);
        free(a->data[i]);
    }
    free(a->names);
    free(a->data);
    free(a->ctime);
    free(a->get_rc);
    free(a);
}

static void deliver(struct coord_queue *q, struct attempt *a, int i)
{
    struct coord_queue_item *it = xcalloc(1, sizeof(*it));
    it->id = xasprintf("s%02u/%s", a->shard, a->names[i]);
    it->json = a->data[i];
    a->data[i] = NULL;
    it->priority = COORD_QUEUE_MAX_PRIORITY - (a->names[i][1] - '0');
    it->ctime_ms = a->ctime[i];
    struct take *t = take_pop(q);
    if (t) {
        t->cb(it, 0, t->arg);
        free(t);
    } else {
        /* Nobody waits any more (timed out or closed): give it back. */
        coord_queue_release(q, it->id, NULL, NULL);
        coord_queue_item_free(it);
    }
}

/* After an unknown outcome: delete the claim only if this session made it. */
static void maybe_ours(struct coord__op *op)
{
    if (op->rc == ZOK && op->stat.ephemeralOwner == coord_session_id(op->s))
        coord__delete_sure(op->s, op->path, op->stat.version);
    else if (coord__zrc_unknown(op->rc))
        coord__zk_exists(coord__op_new(op->s, maybe_ours, NULL), op->path, false);
}

static void attempt_part(struct attempt *a)
{
    if (--a->parts > 0)
        return;
    struct coord_queue *q = a->q;
    bool current = a->epoch == q->epoch;
    if (current)
        q->claiming -= (size_t)a->n;
    if (!q->dead && current) {
        if (a->claim_rc == ZOK) {
            for (int i = 0; i < a->n; i++) {
                if (a->get_rc[i] == ZOK) {
                    deliver(q, a, i);
                } else {
                    char *id = xasprintf("s%02u/%s", a->shard, a->names[i]);
                    coord_queue_release(q, id, NULL, NULL); /* claimed but unreadable */
                    free(id);
                }
            }
        } else if (coord__zrc_unknown(a->claim_rc)) {
            for (int i = 0; i < a->n; i++) {
                char *c = xasprintf("%s/claims/s%02u-%s", q->path, a->shard, a->names[i]);
                coord__zk_exists(coord__op_new(q->s, maybe_ours, NULL), c, false);
                free(c);
            }
        } else if (a->shard == q->cache_shard) {
            /*
             * Another consumer holds one of them (or completed it): it works
             * this shard too. Leave the shard to it rather than race it name
             * by name: drop the cache and list another shard. The names not
             * claimed stay in the queue for the next listing.
             */
            cache_clear(q);
            q->shard = (a->shard + 1 + (unsigned)rand() % q->shards) % q->shards;
            q->scanned = 0;
        }
        pump(q);
    }
    attempt_free(a);
    q_unref(q);
}

static void claim_done(struct coord__op *op)
{
    struct attempt *a = op->owner;
    a->claim_rc = op->rc;
    a->failed = -1;
    if (op->rc != ZOK && !coord__zrc_unknown(op->rc)) {
        for (int i = 0; i < op->nops; i++)
            if (op->results[i].err != ZOK && op->results[i].err != ZRUNTIMEINCONSISTENCY) {
                a->failed = i / 2;
                break;
            }
    }
    attempt_part(a);
}

static void claim_read(struct coord__op *op)
{
    struct attempt *a = op->owner;
    int i = (int)op->tag;
    a->get_rc[i] = op->rc;
    if (op->rc == ZOK) {
        a->data[i] = op->value;
        op->value = NULL;
        a->ctime[i] = op->stat.ctime;
    }
    attempt_part(a);
}

/* Claim names[0..n) of shard (the names are copied). */
static void claim(struct coord_queue *q, unsigned shard, char **names, int n)
{
    struct attempt *a = xcalloc(1, sizeof(*a));
    a->q = q;
    a->shard = shard;
    a->epoch = q->epoch;
    a->n = n;
    a->parts = n + 1;
    a->names = xcalloc((size_t)n, sizeof(char *));
    a->data = xcalloc((size_t)n, sizeof(char *));
    a->ctime = xcalloc((size_t)n, sizeof(int64_t));
    a->get_rc = xcalloc((size_t)n, sizeof(int));
    q->refs++;
    q->claiming += (size_t)n;
    char data[256];
    char cq[128];
    snprintf(cq, sizeof(cq), "%s", q->consumer);
    for (char *c = cq; *c; c++)
        if (*c == '"' || *c == '\\' || (unsigned char)*c < 0x20)
            *c = '_';
    snprintf(data, sizeof(data), "{\"consumer\":\"%s\",\"session\":\"0x%llx\",\"ms\":%lld}", cq,
             (unsigned long long)coord_session_id(q->s), (long long)coord__now_ms());
    struct coord__op *m = coord__op_new(q->s, claim_done, a);
    coord__multi_init(m, 2 * n);
    for (int i = 0; i < n; i++) {
        a->names[i] = xstrdup(names[i]);
        char *item = xasprintf("%s/items/s%02u/%s", q->path, shard, names[i]);
        char *cl = xasprintf("%s/claims/s%02u-%s", q->path, shard, names[i]);
        coord__mop_check(m, 2 * i, item, -1);
        coord__mop_create(m, 2 * i + 1, cl, data, COORD_EPHEMERAL);
        free(item);
        free(cl);
    }
    coord__zk_multi(m);
    /* Pipelined: read the items in the same round trip. */
    for (int i = 0; i < n; i++) {
        char *item = xasprintf("%s/items/s%02u/%s", q->path, shard, names[i]);
        struct coord__op *g = coord__op_new(q->s, claim_read, a);
        g->tag = i;
        coord__zk_get(g, item, false);
        free(item);
    }
}

static void refill(struct coord_queue *q);

struct listing {
    struct coord_queue *q;
    unsigned shard;
    unsigned epoch;
    int parts;
    int rc;
    char **items;
    int n_items;
    char **claims;
    int n_claims;
};

static int cmp_claim(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_item(const void *a, const void *b)
{
    const char *x = *(char *const *)a, *y = *(char *const *)b;
    if (x[1] != y[1])
        return x[1] < y[1] ? -1 : 1;
    int64_t sx = coord__seq_of(x), sy = coord__seq_of(y);
    return sx < sy ? -1 : sx > sy;
}

static void listing_free(struct listing *l)
{
    for (int i = 0; i < l->n_items; i++)
        free(l->items[i]);
    free(l->items);
    for (int i = 0; i < l->n_claims; i++)
        free(l->claims[i]);
    free(l->claims);
    free(l);
}

static void refill_later(void *owner)
{
    struct coord_queue *q = owner;
    if (!q->dead && !q->refilling && !q->idle)
        pump(q);
    q_unref(q);
}

static void listing_part(struct listing *l)
{
    if (--l->parts > 0)
        return;
    struct coord_queue *q = l->q;
    if (l->epoch == q->epoch)
        q->refilling = false;
    if (q->dead || l->epoch != q->epoch) {
        /* void */
    } else if (l->rc != ZOK) {
        q->refs++;
        coord__timer(q->s, RETRY_MS, refill_later, q);
    } else {
        qsort(l->claims, (size_t)l->n_claims, sizeof(char *), cmp_claim);
        char prefix[8];
        snprintf(prefix, sizeof(prefix), "s%02u-", l->shard);
        cache_clear(q);
        q->cache = xcalloc((size_t)l->n_items + 1, sizeof(char *));
        for (int i = 0; i < l->n_items; i++) {
            if (l->items[i][0] != 'i' || coord__seq_of(l->items[i]) < 0)
                continue;
            char key[512];
            snprintf(key, sizeof(key), "%s%s", prefix, l->items[i]);
            const char *k = key;
            if (bsearch(&k, l->claims, (size_t)l->n_claims, sizeof(char *), cmp_claim))
                continue;
            q->cache[q->cache_n++] = l->items[i];
            l->items[i] = NULL;
        }
        qsort(q->cache, q->cache_n, sizeof(char *), cmp_item);
        q->cache_shard = l->shard;
        if (q->cache_n) {
            q->scanned = 0;
        } else {
            q->scanned++;
            q->shard = (l->shard + 1) % q->shards;
            if (q->scanned >= q->shards) {
                q->scanned = 0;
                if (q->poked) {
                    /* Something changed during the round: look there again. */
                    q->poked = false;
                    q->shard = q->poke_shard;
                } else {
                    /* A whole round was empty: wait for a watch (set by the listings). */
                    q->idle = true;
                }
            }
        }
        pump(q);
    }
    for (int i = 0; i < l->n_items; i++)
        FREE_NULL(l->items[i]);
    listing_free(l);
    q_unref(q);
}

static void listed_items(struct coord__op *op)
{
    struct listing *l = op->owner;
    if (op->rc != ZOK)
        l->rc = op->rc;
    else {
        l->items = op->strv;
        l->n_items = op->strc;
        op->strv = NULL;
        op->strc = 0;
    }
    listing_part(l);
}

static void listed_claims(struct coord__op *op)
{
    struct listing *l = op->owner;
    if (op->rc != ZOK)
        l->rc = op->rc;
    else {
        l->claims = op->strv;
        l->n_claims = op->strc;
        op->strv = NULL;
        op->strc = 0;
    }
    listing_part(l);
}

static void on_queue_event(void *owner, int type, const char *path)
{
    struct coord_queue *q = owner;
    if (q->dead)
        return;
    unsigned k = q->shard;
    size_t plen = strlen(q->path);
    if (strncmp(path, q->path, plen) == 0 && strncmp(path + plen, "/items/s", 8) == 0)
        k = (unsigned)atoi(path + plen + 8) % q->shards;
    if (!q->idle) {
        /* The watch is spent: remember it, so that the round does not end idle. */
        q->poked = true;
        q->poke_shard = k;
        return;
    }
    /* Something changed while idle: look there first. */
    q->shard = k;
    q->idle = false;
    q->scanned = 0;
    pump(q);
}

static void refill(struct coord_queue *q)
{
    q->refilling = true;
    struct listing *l = xcalloc(1, sizeof(*l));
    l->q = q;
    l->shard = q->shard;
    l->epoch = q->epoch;
    l->parts = 2;
    l->rc = ZOK;
    q->refs++;
    char *sp = shard_path(q, q->shard);
    coord__watch_add(q->s, sp, q, on_queue_event);
    coord__zk_children(coord__op_new(q->s, listed_items, l), sp, true);
    free(sp);
    char *cp = xasprintf("%s/claims", q->path);
    /* Idle consumers also watch the claims: a dead consumer's items come back. */
    bool watch_claims = q->scanned + 1 >= q->shards;
    if (watch_claims)
        coord__watch_add(q->s, cp, q, on_queue_event);
    coord__zk_children(coord__op_new(q->s, listed_claims, l), cp, watch_claims);
    free(cp);
}

#define CLAIM_BATCH 64

static void pump_now(struct coord_queue *q)
{
    if (q->dead || !q->ready)
        return;
    while (q->claiming < q->n_takes && q->cache_pos < q->cache_n) {
        size_t want = q->n_takes - q->claiming;
        size_t have = q->cache_n - q->cache_pos;
        size_t n = want < have ? want : have;
        if (n > CLAIM_BATCH)
            n = CLAIM_BATCH;
        claim(q, q->cache_shard, &q->cache[q->cache_pos], (int)n);
        for (size_t i = 0; i < n; i++)
            FREE_NULL(q->cache[q->cache_pos + i]);
        q->cache_pos += n;
    }
    if (q->claiming < q->n_takes && q->cache_pos >= q->cache_n && !q->refilling && !q->idle &&
        coord_session_state(q->s) != COORD_EXPIRED)
        refill(q);
}

static void pump_timer(void *owner)
{
    struct coord_queue *q = owner;
    q->pump_scheduled = false;
    q->pump_ev = NULL;
    pump_now(q);
    q_unref(q);
}

/*
 * Claim for the waiting takes at the end of this turn of the loop, so that
 * takes asked for in one turn share one multi-op.
 */
static void pump(struct coord_queue *q)
{
    if (q->pump_scheduled || q->dead)
        return;
    q->pump_scheduled = true;
    q->refs++;
    q->pump_ev = coord__timer(q->s, 0, pump_timer, q);
}

static void take_closed(void *owner)
{
    struct take *t = owner;
    struct coord_queue *q = t->q;
    t->cb(NULL, DRV_EAGAIN, t->arg);
    free(t);
    q_unref(q);
}

void coord_queue_take(struct coord_queue *q, int timeout_ms, coord_take_cb cb, void *arg)
{
    struct take *t = xcalloc(1, sizeof(*t));
    t->q = q;
    t->cb = cb;
    t->arg = arg;
    if (q->dead) {
        /* Closed (a take from a callback during close): fail it, later. */
        q->refs++;
        coord__timer(q->s, 0, take_closed, t);
        return;
    }
    if (q->takes_tail)
        q->takes_tail->next = t;
    else
        q->takes = t;
    q->takes_tail = t;
    q->n_takes++;
    if (timeout_ms >= 0) {
        q->refs++;
        t->timer = coord__timer(q->s, timeout_ms, take_timeout, t);
    }
    pump(q);
}

void coord_queue_item_free(struct coord_queue_item *it)
{
    if (!it)
        return;
    free(it->id);
    free(it->json);
    free(it);
}

/* ---- complete and release ----------------------------------------------------- */

struct fin {
    struct coord_queue *q;
    coord_done_cb done;
    void *arg;
    char *item;
    char *claim;
    bool retried;
};

static bool parse_id(struct coord_queue *q, const char *id, char **item, char **claim)
{
    const char *slash = strchr(id, '/');
    if (!slash || id[0] != 's' || slash == id + 1 || strchr(slash + 1, '/'))
        return false;
    *item = xasprintf("%s/items/%s", q->path, id);
    *claim = xasprintf("%s/claims/%.*s-%s", q->path, (int)(slash - id), id, slash + 1);
    return true;
}

static void fin_end(struct fin *f, int rc)
{
    if (f->done)
        f->done(rc, f->arg);
    struct coord_queue *q = f->q;
    free(f->item);
    free(f->claim);
    free(f);
    q_unref(q);
}

static void complete_send(struct fin *f);

static void complete_checked(struct coord__op *op)
{
    struct fin *f = op->owner;
    /* After a lost answer: the item gone means our multi-op went through. */
    if (op->rc == ZNONODE)
        fin_end(f, 0);
    else if (op->rc == ZOK)
        fin_end(f, DRV_ECONFLICT);
    else if (coord__zrc_unknown(op->rc))
        coord__zk_exists(coord__op_new(f->q->s, complete_checked, f), f->item, false);
    else
        fin_end(f, coord__zrc(op->rc));
}

static void complete_done(struct coord__op *op)
{
    struct fin *f = op->owner;
    int first = ZOK;
    for (int i = 0; i < op->nops && op->rc != ZOK; i++)
        if (op->results[i].err != ZOK && op->results[i].err != ZRUNTIMEINCONSISTENCY) {
            first = op->results[i].err;
            break;
        }
    if (op->rc == ZOK) {
        fin_end(f, 0);
    } else if (coord__zrc_unknown(op->rc)) {
        f->retried = true;
        complete_send(f);
    } else if (f->retried && first == ZNONODE) {
        coord__zk_exists(coord__op_new(f->q->s, complete_checked, f), f->item, false);
    } else {
        log_warn(MOD, "event=queue-complete-rejected item=%s zrc=%d", f->item,
                 first != ZOK ? first : op->rc);
        fin_end(f, DRV_ECONFLICT);
    }
}

static void complete_send(struct fin *f)
{
    struct coord__op *op = coord__op_new(f->q->s, complete_done, f);
    coord__multi_init(op, 2);
    coord__mop_delete(op, 0, f->claim, -1);
    coord__mop_delete(op, 1, f->item, -1);
    coord__zk_multi(op);
}

static void bad_id(void *owner)
{
    fin_end(owner, DRV_EINVAL);
}

static void released(struct coord__op *op);

struct fin_batch {
    struct fin **f;
    size_t n;
};

static void batch_done(struct coord__op *op)
{
    struct fin_batch *b = op->owner;
    for (size_t i = 0; i < b->n; i++) {
        if (op->rc == ZOK) {
            fin_end(b->f[i], 0);
        } else {
            /* Settle each one alone: only the one at fault fails. */
            b->f[i]->retried = b->f[i]->retried || coord__zrc_unknown(op->rc);
            complete_send(b->f[i]);
        }
    }
    free(b->f);
    free(b);
}

static void flush_completes(void *owner)
{
    struct coord_queue *q = owner;
    q->flush_scheduled = false;
    q->flush_ev = NULL;
    size_t n = q->n_fins;
    if (n == 1) {
        complete_send(q->fins[0]);
    } else if (n > 1) {
        /* All of this turn's completes in one multi-op (up to 500 at a time). */
        for (size_t start = 0; start < n; start += 500) {
            size_t k = n - start < 500 ? n - start : 500;
            struct fin_batch *b = xcalloc(1, sizeof(*b));
            b->f = xcalloc(k, sizeof(*b->f));
            b->n = k;
            struct coord__op *op = coord__op_new(q->s, batch_done, b);
            coord__multi_init(op, (int)(2 * k));
            for (size_t i = 0; i < k; i++) {
                b->f[i] = q->fins[start + i];
                coord__mop_delete(op, (int)(2 * i), b->f[i]->claim, -1);
                coord__mop_delete(op, (int)(2 * i + 1), b->f[i]->item, -1);
            }
            coord__zk_multi(op);
        }
    }
    q->n_fins = 0;
    q_unref(q);
}

void coord_queue_complete(struct coord_queue *q, const char *item_id, coord_done_cb done, void *arg)
{
    struct fin *f = xcalloc(1, sizeof(*f));
    f->q = q;
    f->done = done;
    f->arg = arg;
    q->refs++;
    if (!parse_id(q, item_id, &f->item, &f->claim)) {
        coord__timer(q->s, 0, bad_id, f);
        return;
    }
    XGROW(q->fins, q->cap_fins, q->n_fins + 1);
    q->fins[q->n_fins++] = f;
    if (!q->flush_scheduled) {
        q->flush_scheduled = true;
        q->refs++;
        q->flush_ev = coord__timer(q->s, 0, flush_completes, q);
    }
}

void coord_queue_release(struct coord_queue *q, const char *item_id, coord_done_cb done, void *arg)
{
    struct fin *f = xcalloc(1, sizeof(*f));
    f->q = q;
    f->done = done;
    f->arg = arg;
    q->refs++;
    if (!parse_id(q, item_id, &f->item, &f->claim)) {
        coord__timer(q->s, 0, bad_id, f);
        return;
    }
    coord__zk_delete(coord__op_new(q->s, released, f), f->claim, -1);
}

static void released(struct coord__op *op)
{
    struct fin *f = op->owner;
    if (coord__zrc_unknown(op->rc)) {
        coord__zk_delete(coord__op_new(f->q->s, released, f), f->claim, -1);
        return;
    }
    fin_end(f, op->rc == ZOK || op->rc == ZNONODE ? 0 : coord__zrc(op->rc));
}

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
        int64_t age = coord__now_ms() - st->oldest;
        st->st.oldest_age_ms = age > 0 ? age : 0;
    }
    st->cb(st->rc ? NULL : &st->st, st->rc, st->arg);
    struct coord_queue *q = st->q;
    free(st);
    q_unref(q);
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
    int64_t bs = -1;
    for (int i = 0; op->rc == ZOK && i < op->strc; i++) {
        int64_t sq = coord__seq_of(op->strv[i]);
        if (sq >= 0 && (bs < 0 || sq < bs)) {
            bs = sq;
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
        char *sp = shard_path(q, ss->k);
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
        if (op->stat.numChildren > 0 && !q->dead) {
            char *sp = shard_path(q, ss->k);
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
    else
        st->st.claimed = op->stat.numChildren;
    stats_part(st);
}

static void stats_start(struct coord_queue *q, void *arg)
{
    struct stats *st = arg;
    if (!q->ready) {
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
        char *sp = shard_path(q, k);
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
    if (q->ready)
        stats_start(q, st);
    else
        defer(q, stats_start, st);
}

/* ---- session and close ----------------------------------------------------------- */

static void q_session(void *owner, enum coord__session_event ev)
{
    struct coord_queue *q = owner;
    if (q->dead)
        return;
    if (ev == COORD__LOST) {
        /* Our claims went with the session: forget what is in flight. */
        q->epoch++;
        q->claiming = 0;
        q->refilling = false;
        q->idle = false;
        q->poked = false;
        cache_clear(q);
    } else if (ev == COORD__NEW_SESSION) {
        pump(q);
    }
}

void coord_queue_close(struct coord_queue *q)
{
    if (!q)
        return;
    q->dead = true;
    coord__listener_remove(q->s, q);
    coord__watch_remove(q->s, q);
    struct take *t;
    while ((t = take_pop(q))) {
        t->cb(NULL, DRV_EAGAIN, t->arg);
        free(t);
    }
    struct deferred *d = q->deferred;
    q->deferred = NULL;
    q->ready = false;
    while (d) {
        struct deferred *n = d->next;
        d->fn(q, d->p); /* each fails with DRV_EAGAIN since not ready */
        free(d);
        d = n;
    }
    cache_clear(q);
    /* Send the completes of this turn now; no more claiming. */
    if (q->flush_ev) {
        coord__timer_cancel(q->flush_ev);
        q->flush_ev = NULL;
        flush_completes(q); /* drops the timer's reference */
    }
    if (q->pump_ev) {
        coord__timer_cancel(q->pump_ev);
        q->pump_ev = NULL;
        q->pump_scheduled = false;
        q->refs--;
    }
    q_unref(q);
}
