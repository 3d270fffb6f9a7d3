/*
 * queue_take: taking items from a queue (see queue_int.h for the tree).
 *
 * Recipe:
 *   1. list one shard (with a child watch); then, only when it has a name
 *      this consumer may take (not its own, not skipped) or when this is the
 *      round's last listing and something was passed over as claimed (5),
 *      list the claims; keep the unclaimed names, in queue order (priority,
 *      then age), as the cache. Names this consumer holds count as claimed;
 *   2. claim the head of the cache for the waiting takes: one multi-op of
 *      (check item, create ephemeral claim) pairs, up to 64, sent on the
 *      current session and remembered with its generation, the items read
 *      in the same round trip (pipelined);
 *   3. deliver each claimed item to a waiting take and record the claim as
 *      held (queue_hold.c); one claimed by nobody (the take timed out, the
 *      queue was closed before the answer) is given back: its claim is
 *      deleted on the session that made it;
 *   4. a multi-op that fails because another consumer claimed one name: leave
 *      the shard to it (drop the cache, jump to a random other shard); the
 *      other names stay in the queue;
 *   5. only when the cache is empty list again: the next shard, SCAN_PACE_MS
 *      after a listing that found nothing (the pace); after a round of empty
 *      shards wait for a child watch on a shard or on the claims (a dead
 *      consumer's claims vanish). The claims watch is set by the round's
 *      last listing; a claim released between an earlier listing and that
 *      one would be missed, so the items passed over as claimed during the
 *      round are checked against the last listing's claims: one whose claim
 *      is gone sends the consumer back to its shard instead of idle. A
 *      shard's watch that fires during a round marks it fired: fired shards
 *      are listed first, out of the round's order (the round's cursor stays),
 *      and the round does not end idle (it starts again). A clean shard (its
 *      last listing held no item and its watch has not fired since) is passed
 *      over without a request, unless it would be the round's last listing;
 *   6. a consumer's skip filter (coord_queue_opts.skip) passes items over as
 *      if they were claimed; coord_queue_rescan starts a round again.
 * No consumer re-lists the queue on every change (no herd); consumers start
 * at different shards (a hash of consumer, session and a random draw).
 *
 * Why the pace: a consumer with takes waiting (a worker with free slots)
 * lists shard after shard until a round is empty and no watch fired during
 * it. Under a steady flow of small tasks a watch fires in every round, so it
 * never rests: its listings were bound by the round trip, not by the work
 * (bench/run engine-small, four workers: 2.7-5.9 listings per task, two
 * thirds of the workers' requests). 5 ms between the empty listings of a
 * round cut them to about 1.3-2 per task. Why fired and clean shards: paced,
 * a round takes 16 paces, and a consumer whose watch on a shard fired sees
 * nothing more there until it lists it again; a new item put there waited
 * for the round to come round (hops of 200-350 ms at rest). Listed first, a
 * fired shard is seen a pace after its change; passed over, a clean one
 * costs neither a request nor a pace.
 *
 * Homes (queue_home.c, issue 37): an idle consumer wakes only for a change of
 * its home shards (one listing of that shard), of a shard it is the fallback
 * of (STEAL_MS later), of the claims when it passed over a claimed item of a
 * home shard, or for a new home; a change of another shard is passed over
 * (counted) and marks it not clean, so its next round lists it.
 *
 * Invariants of an idle consumer (what makes the skipping safe):
 *   Q1. every shard is listed since its watch last fired, and each listing
 *       set the watch again, or was marked not clean when it fired: a new
 *       item in a home shard wakes it (a round ends idle only when no watch
 *       fired during it, and a clean shard's watch is set by its last listing
 *       and has not fired since); one in another shard wakes its homes;
 *   Q2. the items passed over as claimed in the round were checked against
 *       the claims of its last listing, which set the claims' watch: a
 *       release of one of a home shard wakes it (a clean shard held no item
 *       to pass over).
 *
 *   cache empty --refill--> LISTING --names--> CLAIMING --claimed--> deliver
 *        ^   ^ pace (5 ms)    |  (a fired shard first,       |  taken by another
 *        |   +---- empty -----+   a clean one passed over)   v
 *        |                    v empty round         drop cache, other shard
 *        +---- watch fired -- IDLE
 *
 * Cost: per item 1 read and 1/64 of a multi-op (the claim batch), plus one
 * listing of a shard per cache refill (and of the claims when step 1 needs
 * them); at most one listing per SCAN_PACE_MS while a round finds nothing.
 */
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "clock.h"
#include "log.h"
#include "queue_int.h"
#include "xalloc.h"

#define MOD "coord"
#define CLAIM_BATCH 64
#define SCAN_PACE_MS 5    /* between a listing that found nothing and the round's next one */
#define STEAL_MS 100      /* a fallback's look after a change its shard's homes should take */
#define STEAL_MAX_MS 3200 /* its backoff while its looks find nothing (the homes keep up) */

/* The round's state (DROVER_CHECKS): a fired shard is not clean; an idle consumer has no
   fired shard, no listing in flight and no pace running; the cursor is within the round. */
static void take_check(const struct coord_queue *q)
{
    COORD__ASSERT(q->shards >= 1 && q->shards <= 100 && q->shard < q->shards);
    COORD__ASSERT(q->scanned < q->shards);
    for (unsigned k = 0; k < q->shards; k++) {
        COORD__ASSERT(!(q->fired[k] && q->clean[k]));
        COORD__ASSERT(!(q->idle && q->fired[k]));
    }
    COORD__ASSERT(!q->idle || (!q->refilling && !q->pacing));
}

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
    coord__q_unref(q);
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
 * create claim) pairs, and n reads pipelined behind it. All or nothing.
 */
struct attempt {
    struct coord_queue *q;
    unsigned shard;
    unsigned epoch;
    unsigned gen; /* the handle generation the claims were made on */
    int n;
    char **names;
    int parts; /* results still to come: the multi and the n reads */
    int claim_rc;
    char **data;
    int64_t *ctime;
    int *get_rc;
};

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
    char *id = xasprintf("s%02u/%s", a->shard, a->names[i]);
    struct take *t = take_pop(q);
    if (!t) {
        /* Nobody waits any more (timed out): give it back. */
        coord__q_drop_claim(q, id, a->gen);
        free(id);
        return;
    }
    struct coord_queue_item *it = xcalloc(1, sizeof(*it));
    it->id = id;
    it->json = a->data[i];
    a->data[i] = NULL;
    it->priority = COORD_QUEUE_MAX_PRIORITY - (a->names[i][1] - '0');
    it->ctime_ms = a->ctime[i];
    coord__q_hold_add(q, id, a->gen);
    q->counters.delivered++;
    t->cb(it, 0, t->arg);
    free(t);
}

/* After an unknown outcome: delete the claim only if this session made it. */
static void maybe_ours(struct coord__op *op)
{
    if (op->rc == ZOK && op->stat.ephemeralOwner == coord_session_id(op->s))
        coord__delete_done(op->s, op->path, op->stat.version, op->gen, NULL, NULL);
    else if (coord__zrc_unknown(op->rc) && !op->s->closing)
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
    if (a->claim_rc == ZOK && (q->dead || !current)) {
        /* Claimed for nobody (closed meanwhile): give them back. */
        for (int i = 0; i < a->n; i++) {
            char *id = xasprintf("s%02u/%s", a->shard, a->names[i]);
            coord__q_drop_claim(q, id, a->gen);
            free(id);
        }
    } else if (coord__zrc_unknown(a->claim_rc)) {
        for (int i = 0; i < a->n; i++) {
            char *c = xasprintf("%s/claims/s%02u-%s", q->path, a->shard, a->names[i]);
            coord__zk_exists(coord__op_new(q->s, maybe_ours, NULL), c, false);
            free(c);
        }
    } else if (a->claim_rc == ZOK) {
        for (int i = 0; i < a->n; i++) {
            if (a->get_rc[i] == ZOK) {
                deliver(q, a, i);
            } else {
                char *id = xasprintf("s%02u/%s", a->shard, a->names[i]);
                coord__q_drop_claim(q, id, a->gen); /* claimed but unreadable */
                free(id);
            }
        }
    } else if (!q->dead && current && a->shard == q->cache_shard) {
        /*
         * Another consumer holds one of them (or completed it): it works
         * this shard too. Leave the shard to it rather than race it name
         * by name: drop the cache and list another shard. The names not
         * claimed stay in the queue for the next listing.
         */
        cache_clear(q);
        q->shard = (a->shard + 1 + (unsigned)(coord__rand(q->s) % q->shards)) % q->shards;
        q->scanned = 0;
    }
    if (!q->dead && current)
        coord__q_pump(q);
    attempt_free(a);
    coord__q_unref(q);
}

static void claim_done(struct coord__op *op)
{
    struct attempt *a = op->owner;
    a->claim_rc = op->rc;
    if (op->rc != ZOK)
        a->q->counters.claims_failed++;
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
    a->gen = q->s->gen;
    a->n = n;
    a->parts = n + 1;
    a->names = xcalloc((size_t)n, sizeof(char *));
    a->data = xcalloc((size_t)n, sizeof(char *));
    a->ctime = xcalloc((size_t)n, sizeof(int64_t));
    a->get_rc = xcalloc((size_t)n, sizeof(int));
    q->refs++;
    q->claiming += (size_t)n;
    q->counters.claims++;
    char data[256];
    char cq[128];
    snprintf(cq, sizeof(cq), "%s", q->consumer);
    for (char *c = cq; *c; c++)
        if (*c == '"' || *c == '\\' || (unsigned char)*c < 0x20)
            *c = '_';
    snprintf(data, sizeof(data), "{\"consumer\":\"%s\",\"session\":\"0x%llx\",\"ms\":%lld}", cq,
             (unsigned long long)coord_session_id(q->s), (long long)clock_wall_ms());
    struct coord__op *m = coord__op_new(q->s, claim_done, a);
    coord__op_bind(m, a->gen);
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

/* ---- listing a shard -------------------------------------------------------------- */

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
    bool extra; /* a fired shard listed out of the round's order (the cursor stays) */
};

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
        coord__q_pump(q);
    coord__q_unref(q);
}

static void round_reset(struct coord_queue *q)
{
    for (size_t i = 0; i < q->n_round_claimed; i++)
        free(q->round_claimed[i]);
    q->n_round_claimed = 0;
}

/* The shard of a round_claimed name whose claim is not in the (sorted) claims: -1 if none. */
static int released_shard(const struct coord_queue *q, char **claims, int n_claims)
{
    for (size_t i = 0; i < q->n_round_claimed; i++) {
        const char *k = q->round_claimed[i];
        if (n_claims == 0 ||
            !bsearch(&k, claims, (size_t)n_claims, sizeof(char *), coord__q_cmp_item))
            return atoi(q->round_claimed[i] + 1);
    }
    return -1;
}

static bool skipped(const struct coord_queue *q, const char *name)
{
    if (!q->skip)
        return false;
    const char *k = strchr(name + 1, '-');
    k = k ? strchr(k + 1, '-') : NULL;
    return k && k[1] == 'k' && q->skip(k + 2, q->skip_arg);
}

/* Whether this consumer holds name of shard: claimed, by itself. */
static bool held_here(struct coord_queue *q, unsigned shard, const char *name)
{
    char id[512];
    snprintf(id, sizeof(id), "s%02u/%s", shard, name);
    return coord__q_holds(q, id);
}

static void pace_end(void *owner)
{
    struct coord_queue *q = owner;
    q->pacing = false;
    q->pace_ev = NULL;
    if (!q->dead)
        coord__q_pump(q);
    coord__q_unref(q);
}

/* Step 5's pace: the next listing of this round waits SCAN_PACE_MS. */
static void pace(struct coord_queue *q)
{
    q->pacing = true;
    q->refs++;
    q->pace_ev = coord__timer(q->s, SCAN_PACE_MS, pace_end, q);
}

/* Within each priority, this consumer's own names first (queue_home.c: consumers of one home
   set woken by one change claim different names), each part still oldest first. */
static void own_first(struct coord_queue *q)
{
    if (q->hsize <= 1 || q->cache_n < 2)
        return;
    char **tmp = xcalloc(q->cache_n, sizeof(char *));
    size_t i = 0;
    while (i < q->cache_n) {
        size_t j = i;
        while (j < q->cache_n && q->cache[j][1] == q->cache[i][1])
            j++;
        size_t o = 0;
        for (size_t k = i; k < j; k++)
            if (coord__q_own_name(q, q->cache[k]))
                tmp[o++] = q->cache[k];
        for (size_t k = i; k < j; k++)
            if (!coord__q_own_name(q, q->cache[k]))
                tmp[o++] = q->cache[k];
        memcpy(&q->cache[i], tmp, o * sizeof(char *));
        i = j;
    }
    free(tmp);
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
        coord__timer(q->s, coord__backoff_ms(q->s, q->refill_tries++), refill_later, q);
    } else {
        q->refill_tries = 0;
        /* Clean: its watch is set and it held no item (step 5 skips it until the watch fires). */
        bool none = true;
        for (int i = 0; i < l->n_items && none; i++)
            none = !coord__q_name_ok(l->items[i]);
        q->clean[l->shard] = none && !q->fired[l->shard]; /* fired meanwhile: list it again */
        if (l->n_claims > 0)
            qsort(l->claims, (size_t)l->n_claims, sizeof(char *), coord__q_cmp_item);
        char prefix[8];
        snprintf(prefix, sizeof(prefix), "s%02u-", l->shard);
        cache_clear(q);
        q->cache = xcalloc((size_t)l->n_items + 1, sizeof(char *));
        size_t passed = q->n_round_claimed;
        for (int i = 0; i < l->n_items; i++) {
            if (!coord__q_name_ok(l->items[i]))
                continue;
            char key[512];
            snprintf(key, sizeof(key), "%s%s", prefix, l->items[i]);
            const char *k = key;
            if ((l->n_claims > 0 &&
                 bsearch(&k, l->claims, (size_t)l->n_claims, sizeof(char *), coord__q_cmp_item)) ||
                held_here(q, l->shard, l->items[i])) {
                XGROW(q->round_claimed, q->cap_round_claimed, q->n_round_claimed + 1);
                q->round_claimed[q->n_round_claimed++] = xstrdup(key);
                continue;
            }
            if (skipped(q, l->items[i]))
                continue;
            if (q->own_only && !coord__q_own_name(q, l->items[i]))
                continue; /* a home set woken together: each takes its own (queue_home.c) */
            q->cache[q->cache_n++] = l->items[i];
            l->items[i] = NULL;
        }
        qsort(q->cache, q->cache_n, sizeof(char *), coord__q_cmp_item);
        own_first(q);
        q->cache_shard = l->shard;
        q->own_only = false; /* the wake's one listing is done: what follows is a round */
        if (q->steal_look == (int)l->shard) {
            /* A fallback's look (queue_home.c rule 4): something left by busy homes, look
               again soon after the next change; nothing, the homes keep up: back off (a
               shard's watch fires for its items' deletes too, each complete). */
            q->steal_look = -1;
            int b = q->steal_backoff[l->shard];
            q->steal_backoff[l->shard] = q->cache_n ? 0
                                                    : (b < STEAL_MS           ? 2 * STEAL_MS
                                                       : b * 2 > STEAL_MAX_MS ? STEAL_MAX_MS
                                                                              : b * 2);
        }
        if (q->cache_n) {
            q->scanned = 0;
            round_reset(q);
        } else if (l->extra) {
            q->counters.listings_empty++;
            pace(q);
        } else {
            q->counters.listings_empty++;
            q->scanned++;
            q->shard = (l->shard + 1) % q->shards;
            if (q->scanned < q->shards)
                pace(q);
            if (q->scanned >= q->shards) {
                q->scanned = 0;
                /* Whether a claims' change wakes it when idle: it passed over a claimed item
                   of a home shard in this round (queue_home.c). */
                q->claims_home = false;
                for (size_t i = 0; i < q->n_round_claimed; i++)
                    q->claims_home |= q->home[(unsigned)atoi(q->round_claimed[i] + 1) % q->shards];
                /* This listing's own passed-over names are as fresh as its claims. */
                for (size_t i = passed; i < q->n_round_claimed; i++)
                    free(q->round_claimed[i]);
                q->n_round_claimed = passed;
                int back = released_shard(q, l->claims, l->n_claims);
                round_reset(q);
                if (q->poked) {
                    /* Something changed during the round: look there again. */
                    q->poked = false;
                    q->shard = q->poke_shard;
                } else if (back >= 0) {
                    /* A claim seen earlier in the round is gone: its item is free. */
                    q->shard = (unsigned)back % q->shards;
                } else {
                    /* A whole round was empty: wait for a watch (set by the listings). */
                    q->idle = true;
                    q->counters.idles++;
                }
            }
        }
        COORD__CHECK(take_check, q);
        coord__q_pump(q);
    }
    listing_free(l);
    coord__q_unref(q);
}

static void listed_claims(struct coord__op *op);
static void on_queue_event(void *owner, int type, const char *path);
static void steal_later(struct coord_queue *q, unsigned k);

/* The claims are listed only when the shard's names need them (step 1). */
static bool claims_needed(struct coord_queue *q, const struct listing *l)
{
    bool last = !l->extra && q->scanned + 1 >= q->shards;
    if (last && q->n_round_claimed > 0)
        return true; /* the round's end checks them, and idle watches them */
    for (int i = 0; i < l->n_items; i++) {
        if (!coord__q_name_ok(l->items[i]))
            continue;
        if (held_here(q, l->shard, l->items[i])) {
            if (last)
                return true; /* passed over as claimed: as above */
            continue;
        }
        if (!skipped(q, l->items[i]))
            return true; /* one it may take: is it claimed? */
    }
    return false;
}

static void listed_items(struct coord__op *op)
{
    struct listing *l = op->owner;
    struct coord_queue *q = l->q;
    if (op->rc != ZOK) {
        l->rc = op->rc;
    } else {
        l->items = op->strv;
        l->n_items = op->strc;
        op->strv = NULL;
        op->strc = 0;
        if (!q->dead && l->epoch == q->epoch && claims_needed(q, l)) {
            l->parts++;
            q->counters.claims_listings++;
            char *cp = xasprintf("%s/claims", q->path);
            /* The round's last listing also watches the claims: while idle, a dead
               consumer's items come back. */
            bool watch_claims = !l->extra && q->scanned + 1 >= q->shards && !q->has_view;
            if (watch_claims)
                coord__reg_watch_add(&q->s->reg, cp, COORD__WM_ANY, q, on_queue_event);
            coord__zk_children(coord__op_new(q->s, listed_claims, l), cp, watch_claims);
            free(cp);
        }
    }
    listing_part(l);
}

static void listed_claims(struct coord__op *op)
{
    struct listing *l = op->owner;
    if (op->rc != ZOK) {
        l->rc = op->rc;
    } else {
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
    bool shard_event =
        strncmp(path, q->path, plen) == 0 && strncmp(path + plen, "/items/s", 8) == 0;
    if (shard_event) {
        k = (unsigned)atoi(path + plen + 8) % q->shards;
        q->clean[k] = false; /* its watch is spent: list it again */
    }
    if (!q->idle) {
        /* The watch is spent: remember it, so that the round does not end idle. */
        q->poked = true;
        q->poke_shard = k;
        if (shard_event)
            q->fired[k] = true; /* and the round lists it next (refill) */
        return;
    }
    if (shard_event && !q->home[k] && q->fallback[k]) {
        /* Its homes were woken; look STEAL_MS later, in case they are busy (queue_home.c). */
        steal_later(q, k);
        return;
    }
    if (shard_event ? !q->home[k] : (q->has_view || !q->claims_home)) {
        /* Not a home of ours (queue_home.c): its homes were woken; the watch is spent, so
           our next round lists it (clean is false). No herd. */
        q->counters.passed++;
        return;
    }
    coord__q_wake(q, k, shard_event);
}

void coord__q_wake(struct coord_queue *q, unsigned k, bool one)
{
    if (q->dead || k >= q->shards)
        return;
    q->clean[k] = false;
    if (!q->idle) {
        q->poked = true; /* the round in progress does not end idle, and lists k first */
        q->poke_shard = k;
        q->fired[k] = true;
        return;
    }
    /* Something changed while idle. one: list k as a round's last listing; nothing there
       for us: idle again at once; something: the cache is filled and the round starts
       afresh (others' shards too, while takes wait: the steal). One listing per wake of a
       shard, not a round. Else (the claims changed, homes moved): a round from k. */
    q->counters.wakes++;
    q->shard = k;
    q->idle = false;
    round_reset(q);
    q->scanned = one ? q->shards - 1 : 0;
    /* A home woken with its home set takes its own names only: the others are woken too
       (their owners), and a busy owner's are left to the fallback's look. */
    q->own_only = one && q->home[k] && q->hsize > 1;
    coord__q_pump(q);
}

struct steal {
    struct coord_queue *q;
    unsigned k;
};

static void steal_fire(void *owner)
{
    struct steal *st = owner;
    struct coord_queue *q = st->q;
    q->steal_due[st->k] = false;
    q->steal_ev[st->k] = NULL;
    q->steal_arg[st->k] = NULL;
    if (!q->dead && q->idle) {
        q->counters.steals++;
        q->steal_look = (int)st->k; /* its listing says whether to back off (listing_part) */
        coord__q_wake(q, st->k, true);
    } else if (!q->dead) {
        coord__q_wake(q, st->k, true); /* busy with a round: it lists k first */
    }
    free(st);
    coord__q_unref(q);
}

/* Rule 4 of queue_home.c: look at shard k STEAL_MS from now. */
static void steal_later(struct coord_queue *q, unsigned k)
{
    if (q->steal_due[k])
        return;
    q->steal_due[k] = true;
    struct steal *st = xcalloc(1, sizeof(*st));
    st->q = q;
    st->k = k;
    q->refs++;
    q->steal_arg[k] = st;
    int ms = q->steal_backoff[k] > STEAL_MS ? q->steal_backoff[k] : STEAL_MS;
    q->steal_ev[k] = coord__timer(q->s, ms, steal_fire, st);
}

void coord_queue_rescan(struct coord_queue *q)
{
    if (!q || q->dead)
        return;
    if (!q->idle) {
        q->poked = true; /* the round in progress does not end idle */
        q->poke_shard = q->shard;
        return;
    }
    q->idle = false;
    q->scanned = 0;
    round_reset(q);
    coord__q_pump(q);
}

static void refill(struct coord_queue *q)
{
    q->shard %= q->shards; /* drawn before the open read the queue's own count */
    if (q->scanned >= q->shards)
        q->scanned = 0;
    /* A shard whose watch fired during the round comes first, out of the round's order: a
       new item waits at most the pace (and the listings of the other fired ones). */
    int target = -1;
    /* With a view (queue_home.c), a round covers this consumer's shards only, its homes and
       those it is the fallback of: every shard has its own homes and fallback, and puts
       spread over the shards (keys hashed, round robin), so a round over the others would
       only race their homes for names (each listing a request, each lost race a failed
       multi-op). */
    for (unsigned k = 0; k < q->shards; k++)
        if (q->has_view && q->fired[k] && !coord__q_mine(q, k))
            q->fired[k] = false;
    for (unsigned i = 0; i < q->shards && target < 0; i++)
        if (q->fired[(q->shard + i) % q->shards])
            target = (int)((q->shard + i) % q->shards);
    if (target < 0) {
        /* Clean shards are passed over without a request, except as the round's last listing
           (whose claims the round's end checks, and which sets the claims' watch). */
        while ((q->clean[q->shard] || !coord__q_mine(q, q->shard)) && q->scanned + 1 < q->shards) {
            q->scanned++;
            q->shard = (q->shard + 1) % q->shards;
            q->counters.skipped++;
        }
        if (!coord__q_mine(q, q->shard) || (q->has_view && q->clean[q->shard])) {
            /* With a view nobody needs the claims' check of a round's last listing: a round
               whose shards are all passed over ends here, idle, without a request. */
            q->scanned = 0;
            q->shard = (q->shard + 1) % q->shards;
            round_reset(q);
            if (q->poked) {
                q->poked = false;
                q->shard = q->poke_shard;
                coord__q_pump(q);
            } else {
                q->idle = true;
                q->counters.idles++;
            }
            COORD__CHECK(take_check, q);
            return;
        }
        target = (int)q->shard;
    }
    q->fired[target] = false;
    q->refilling = true;
    struct listing *l = xcalloc(1, sizeof(*l));
    l->q = q;
    l->shard = (unsigned)target;
    l->extra = (unsigned)target != q->shard;
    l->epoch = q->epoch;
    l->parts = 1; /* the claims' listing adds one when it is needed (listed_items) */
    l->rc = ZOK;
    q->refs++;
    q->counters.listings++;
    COORD__CHECK(take_check, q);
    char *sp = coord__q_shard_path(q, l->shard);
    coord__reg_watch_add(&q->s->reg, sp, COORD__WM_ANY, q, on_queue_event);
    coord__zk_children(coord__op_new(q->s, listed_items, l), sp, true);
    free(sp);
}

static void pump_now(struct coord_queue *q)
{
    if (q->dead || q->open != Q_OPEN)
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
        !q->pacing && coord_session_state(q->s) != COORD_EXPIRED)
        refill(q);
}

static void pump_timer(void *owner)
{
    struct coord_queue *q = owner;
    q->pump_scheduled = false;
    q->pump_ev = NULL;
    pump_now(q);
    coord__q_unref(q);
}

/*
 * Claim for the waiting takes at the end of this turn of the loop, so that
 * takes asked for in one turn share one multi-op.
 */
void coord__q_pump(struct coord_queue *q)
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
    coord__q_unref(q);
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
    coord__q_pump(q);
}

void coord_queue_counters(const struct coord_queue *q, struct coord_queue_counters *out)
{
    *out = q->counters;
}

void coord_queue_item_free(struct coord_queue_item *it)
{
    if (!it)
        return;
    free(it->id);
    free(it->json);
    free(it);
}

void coord__q_take_lost(struct coord_queue *q)
{
    /* Our claims went with the session: forget what is in flight. */
    q->epoch++;
    q->claiming = 0;
    q->refilling = false;
    q->idle = false;
    q->poked = false;
    memset(q->fired, 0, sizeof(q->fired));
    memset(q->clean, 0, sizeof(q->clean)); /* the watches went with the session */
    cache_clear(q);
    round_reset(q);
}

void coord__q_take_close(struct coord_queue *q)
{
    struct take *t;
    while ((t = take_pop(q))) {
        t->cb(NULL, DRV_EAGAIN, t->arg);
        free(t);
    }
    cache_clear(q);
    if (q->pump_ev) {
        coord__timer_cancel(q->pump_ev);
        q->pump_ev = NULL;
        q->pump_scheduled = false;
        q->refs--;
    }
    if (q->pace_ev) {
        coord__timer_cancel(q->pace_ev);
        q->pace_ev = NULL;
        q->pacing = false;
        q->refs--;
    }
    for (unsigned k = 0; k < 100; k++)
        if (q->steal_ev[k]) {
            coord__timer_cancel(q->steal_ev[k]);
            free(q->steal_arg[k]);
            q->steal_ev[k] = NULL;
            q->steal_arg[k] = NULL;
            q->steal_due[k] = false;
            q->refs--;
        }
}
