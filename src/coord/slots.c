/*
 * slots: a consumer's capacity, offered by name, and what its writers assign to it (issue
 * 37; docs/coord.md "Slots").
 *
 * A consumer of dir (a queue's directory, /drover/queues/<tenant>/<class>) keeps n slots,
 * ephemeral znodes of its session:
 *
 *   dir/slots/<consumer>.<session hex>.<i>   its data: {"v":1} (free) or an assignment
 *                                            {"v":1,"key":K,"by":...,"task":{...}}
 *   dir/free/<slot>@<version>                an offer: the slot is free at that version
 *
 * A writer (droverd) that wants the slot deletes the offer and sets the slot at the
 * offer's version, in one multi-op (two writers racing for an offer: one delete fails, so
 * one multi-op does); it may set the slot again at the next version (the next task, or
 * free) without any offer. The consumer reads its slots through re-arming data watches: an
 * assignment it has not seen is handed to on_assigned; a free slot is offered again (while
 * offering is on: off withdraws the offers, a drain). So the consumer writes nothing per
 * assignment: the slots and their first offers are one multi-op per session, an offer one
 * create per time its writer frees it.
 *
 * A slot's assignment is the consumer's while its session lives: on SUSPECT (the server may
 * expire the session before the client hears of it) and on LOST every running assignment
 * is told on_lost, before anyone else can have it, and is never delivered again; so is one
 * whose slot is deleted, set free, or set to another key under it. After an expiry the
 * slots are made again under the new session's names (the writers see the old ones gone
 * with the session's member). coord_slots_done(i, key): the consumer is done with the
 * assignment (its outcome written); if no writer sets the slot within done_free_ms (its
 * writer died or moved on), the consumer sets it free itself, at the version it read (a
 * writer's set in between wins: the consumer's fails).
 *
 * One slot:
 *
 *   (made) --> FREE(offered) --writer sets key K--> RUNNING(K) --done(K)--> SETTLED(K)
 *                 ^                                   |                       |
 *                 |                 suspect/expired/deleted/taken back:      |
 *                 |                 on_lost(K) --> SETTLED(K)                 |
 *                 +------writer sets free, or done_free_ms: set free----------+
 *                      (writer sets K' in RUNNING(K) or SETTLED(K): on_lost(K) if running,
 *                       then RUNNING(K'))
 *
 * Invariants (slots_check, DROVER_CHECKS):
 *   S1. a key is handed to on_assigned at most once per slot object and session: never
 *       while it is running or settled;
 *   S2. running and settled are never the same key; a slot runs at most one key;
 *   S3. the session's stakes count this object iff a slot runs a key and it is open;
 *   S4. an offer is made only for a slot read free at that version, while offering.
 *
 * Lost answers: the slots' multi-op is sent again, and ZNODEEXISTS on its first op is its
 * own (the names carry this session's id); an offer's create likewise (NODEEXISTS: made);
 * an offer's withdrawal and the consumer's own free are idempotent or versioned (NONODE or
 * BADVERSION: a writer came first, and the data watch says what it did).
 *
 * Loop thread only. Cost: per session 1 multi-op and n reads; per assignment one read; per
 * free one read and one create.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <jansson.h>

#include "coord_int.h"
#include "log.h"
#include "xalloc.h"

#define MOD "coord"
#define DONE_FREE_MS 5000

struct slot {
    struct coord_slots *sl;
    unsigned i;
    char *name; /* <consumer>.<session hex>.<i> */
    char *path; /* dir/slots/<name> */
    struct coord_watcher *w;
    int version;    /* of the data as last read, -1 unknown */
    char *running;  /* the key handed to on_assigned, not yet done or lost */
    char *settled;  /* the last key done or told lost: never handed out again */
    int offer_ver;  /* the version of the offer made or being made, -1 none */
    bool free_seen; /* the last read said free */
    struct event *done_ev;
};

struct coord_slots {
    struct coord_session *s;
    char *dir, *slots_dir, *free_dir, *consumer;
    unsigned n;
    struct slot *v; /* n of them, NULL before the first session's */
    coord_slot_cb on_assigned, on_lost;
    void *arg;
    int refs;
    bool dead;
    bool offering;
    bool making;       /* the slots' multi-op is in flight */
    bool dirs_missing; /* the last make found slots/ or free/ missing: ensured before the next */
    bool staked;
    unsigned gen;    /* the handle generation the slots were made on (0: none yet) */
    int64_t session; /* their session's id */
    unsigned tries;
    int done_free_ms;
    struct coord_slots_counters c;
};

static void slots_unref(struct coord_slots *sl)
{
    if (--sl->refs > 0)
        return;
    free(sl->dir);
    free(sl->slots_dir);
    free(sl->free_dir);
    free(sl->consumer);
    free(sl);
}

static void slots_check(const struct coord_slots *sl)
{
#if DRV_CHECKS
    bool any = false;
    for (unsigned i = 0; sl->v && i < sl->n; i++) {
        const struct slot *x = &sl->v[i];
        COORD__ASSERT(!x->running || !x->settled || strcmp(x->running, x->settled) != 0); /* S2 */
        COORD__ASSERT(x->offer_ver < 0 || sl->offering);                                  /* S4 */
        any |= x->running != NULL;
    }
    COORD__ASSERT(sl->staked == (any && !sl->dead)); /* S3 */
#else
    (void)sl;
#endif
}

/* S3: the session's stakes count this object while a slot runs a key (probes, session.c). */
static void slots_stake(struct coord_slots *sl)
{
    bool any = false;
    for (unsigned i = 0; sl->v && i < sl->n; i++)
        any |= sl->v[i].running != NULL;
    bool want = any && !sl->dead;
    if (want != sl->staked) {
        sl->s->stakes += want ? 1 : -1;
        sl->staked = want;
    }
}

static void slot_settle(struct slot *x, char *key)
{
    free(x->settled);
    x->settled = key;
}

/* The running key is not ours any more: settle it and tell the consumer. */
static void slot_lost(struct slot *x, const char *why)
{
    struct coord_slots *sl = x->sl;
    if (!x->running)
        return;
    char *key = x->running;
    x->running = NULL;
    slot_settle(x, key);
    sl->c.lost++;
    log_warn(MOD, "event=slot-lost slot=%s key=%s why=%s", x->name, key, why);
    slots_stake(sl);
    if (sl->on_lost)
        sl->on_lost(sl, x->i, key, NULL, sl->arg);
}

/* ---- offers ------------------------------------------------------------------------------ */

/* An offer in flight or due again: by slot index and generation (the slot may be gone). */
struct offer_ref {
    struct coord_slots *sl;
    unsigned i, gen;
    int version;
};

static struct slot *ref_slot(const struct offer_ref *r)
{
    struct coord_slots *sl = r->sl;
    return !sl->dead && sl->v && sl->gen == r->gen && r->i < sl->n ? &sl->v[r->i] : NULL;
}

static void slot_offer(struct slot *x);

static void offer_again(void *owner)
{
    struct offer_ref *r = owner;
    struct slot *x = ref_slot(r);
    if (x && x->offer_ver < 0)
        slot_offer(x);
    slots_unref(r->sl);
    free(r);
}

static void offered(struct coord__op *op)
{
    struct offer_ref *r = op->owner;
    struct coord_slots *sl = r->sl;
    struct slot *x = ref_slot(r);
    if (x && op->rc != ZOK && op->rc != ZNODEEXISTS && !coord__zrc_session_gone(op->rc) &&
        r->version == x->offer_ver) {
        /* A lost answer (sent again: NODEEXISTS is then ours, the name is this session's),
           or refused (tried again, logged each time, with backoff). */
        log_info(MOD, "event=slot-offer-failed slot=%s zrc=%d", x->name, op->rc);
        x->offer_ver = -1;
        coord__timer(sl->s, coord__backoff_ms(sl->s, 0), offer_again, r);
        return; /* r and its reference go with the timer */
    }
    slots_unref(sl);
    free(r);
}

static void slot_offer(struct slot *x)
{
    struct coord_slots *sl = x->sl;
    if (!sl->offering || !x->free_seen || x->version < 0 || x->offer_ver == x->version || !sl->gen)
        return;
    x->offer_ver = x->version;
    char *p = xasprintf("%s/%s@%d", sl->free_dir, x->name, x->version);
    struct offer_ref *r = xcalloc(1, sizeof(*r));
    *r = (struct offer_ref){sl, x->i, sl->gen, x->version};
    struct coord__op *op = coord__op_new(sl->s, offered, r);
    coord__op_bind(op, sl->gen);
    sl->refs++;
    sl->c.offers++;
    coord__zk_create(op, p, "{}", COORD_EPHEMERAL);
    free(p);
}

static void withdrawn(struct coord__op *op)
{
    slots_unref((struct coord_slots *)op->owner);
}

static void slot_withdraw(struct slot *x)
{
    struct coord_slots *sl = x->sl;
    if (x->offer_ver < 0)
        return;
    char *p = xasprintf("%s/%s@%d", sl->free_dir, x->name, x->offer_ver);
    x->offer_ver = -1;
    struct coord__op *op = coord__op_new(sl->s, withdrawn, sl);
    coord__op_bind(op, sl->gen);
    sl->refs++;
    coord__zk_delete(op, p, -1); /* NONODE: a writer took it; its assignment follows */
    free(p);
}

/* ---- the consumer's own free, when its writer does not come ------------------------------- */

static void freed_self(struct coord__op *op)
{
    struct coord_slots *sl = op->owner;
    if (op->rc == ZOK)
        sl->c.freed_self++;
    slots_unref(sl);
}

static void done_due(evutil_socket_t fd, short what, void *arg)
{
    struct slot *x = arg;
    struct coord_slots *sl = x->sl;
    event_free(x->done_ev);
    x->done_ev = NULL;
    if (sl->dead || x->running || !x->settled || x->free_seen || x->version < 0)
        return;
    log_info(MOD, "event=slot-free-self slot=%s key=%s version=%d", x->name, x->settled,
             x->version);
    struct coord__op *op = coord__op_new(sl->s, freed_self, sl);
    coord__op_bind(op, sl->gen);
    sl->refs++;
    /* At the version read: a writer's set meanwhile wins (BADVERSION), and is read. */
    coord__zk_set(op, x->path, COORD_SLOT_FREE, x->version);
}

static void done_arm(struct slot *x)
{
    struct coord_slots *sl = x->sl;
    if (x->done_ev)
        return;
    x->done_ev = evtimer_new(sl->s->base, done_due, x);
    struct timeval tv = {sl->done_free_ms / 1000, (sl->done_free_ms % 1000) * 1000};
    evtimer_add(x->done_ev, &tv);
}

static void done_disarm(struct slot *x)
{
    if (x->done_ev) {
        event_free(x->done_ev);
        x->done_ev = NULL;
    }
}

/* ---- reading a slot ------------------------------------------------------------------------ */

static void slot_recreate(struct slot *x);

static void slot_read(int rc, const char *data, size_t len, const struct coord_stat *st, void *arg)
{
    struct slot *x = arg;
    struct coord_slots *sl = x->sl;
    if (sl->dead)
        return;
    if (rc == DRV_ENOENT) {
        x->version = -1;
        x->free_seen = false;
        x->offer_ver = -1;
        slot_lost(x, "slot-deleted");
        done_disarm(x);
        /* Deleted under a live session (by hand): made again. An expired session's slots
           are made again under the new one's names (slots_make). */
        if (sl->gen == sl->s->gen && coord_session_id(sl->s) == sl->session)
            slot_recreate(x);
        COORD__CHECK(slots_check, sl);
        return;
    }
    if (rc != 0 || !st)
        return; /* the watcher retries */
    json_t *d = json_loadb(data ? data : "", len, 0, NULL);
    const char *key = json_string_value(json_object_get(d, "key"));
    x->version = st->version;
    x->free_seen = key == NULL;
    if (!key) {
        done_disarm(x);
        slot_lost(x, "taken-back");
        slot_offer(x);
    } else if ((x->running && strcmp(x->running, key) == 0) ||
               (x->settled && strcmp(x->settled, key) == 0)) {
        /* still ours, or done and waiting for its writer */
    } else {
        slot_lost(x, "reassigned");
        done_disarm(x);
        x->running = xstrdup(key);
        sl->c.assigned++;
        slots_stake(sl);
        char *task = json_dumps(json_object_get(d, "task"), JSON_COMPACT | JSON_ENCODE_ANY);
        COORD__CHECK(slots_check, sl);
        if (sl->on_assigned)
            sl->on_assigned(sl, x->i, key, task ? task : "null", sl->arg);
        free(task);
    }
    json_decref(d);
    COORD__CHECK(slots_check, sl);
}

static void recreated(struct coord__op *op)
{
    slots_unref((struct coord_slots *)op->owner);
}

static void slot_recreate(struct slot *x)
{
    struct coord_slots *sl = x->sl;
    struct coord__op *op = coord__op_new(sl->s, recreated, sl);
    coord__op_bind(op, sl->gen);
    sl->refs++;
    coord__zk_create(op, x->path, COORD_SLOT_FREE, COORD_EPHEMERAL);
}

/* ---- making the slots (one multi-op per session) ------------------------------------------- */

static void slots_drop(struct coord_slots *sl)
{
    for (unsigned i = 0; sl->v && i < sl->n; i++) {
        struct slot *x = &sl->v[i];
        coord_watcher_free(x->w);
        done_disarm(x);
        free(x->name);
        free(x->path);
        free(x->running);
        free(x->settled);
    }
    free(sl->v);
    sl->v = NULL;
    slots_stake(sl);
}

static void slots_make(struct coord_slots *sl);
static void slots_send(struct coord_slots *sl);

static void slots_dir_ready(int rc, void *arg);

static void make_again(struct coord_slots *sl)
{
    if (sl->dead || sl->making)
        return;
    if (sl->v && sl->gen == sl->s->gen && sl->session == coord_session_id(sl->s))
        slots_send(sl); /* this session's names: the multi-op again */
    else
        slots_make(sl);
}

static void make_retry(void *owner)
{
    struct coord_slots *sl = owner;
    if (!sl->dead && !sl->making && sl->dirs_missing) {
        /* The parents first (their first ensure failed: a tenant's queue made after its
           worker started, which may not create /drover/queues/<tenant> itself). */
        sl->refs++;
        coord_ensure_path(sl->s, sl->slots_dir, slots_dir_ready, sl);
    } else {
        make_again(sl);
    }
    slots_unref(sl);
}

static void slots_made(struct coord__op *op)
{
    struct coord_slots *sl = op->owner;
    sl->making = false;
    int bad = coord__multi_failed(op);
    if (sl->dead || (unsigned)op->tag != sl->gen || !sl->v) {
        slots_unref(sl);
        return;
    }
    if (op->rc == ZOK || (bad == 0 && op->results && op->results[0].err == ZNODEEXISTS)) {
        /* Made (NODEEXISTS on the first: our own lost answer, the names are this
           session's). The watchers read them: free, offered, or already assigned. */
        sl->tries = 0;
        log_info(MOD, "event=slots-made dir=%s consumer=%s slots=%u session=0x%llx", sl->dir,
                 sl->consumer, sl->n, (unsigned long long)sl->session);
        for (unsigned i = 0; i < sl->n; i++) {
            struct slot *x = &sl->v[i];
            if (sl->offering)
                x->offer_ver = 0; /* made in the multi-op with it */
            x->w = coord_watch_data(sl->s, x->path, slot_read, x);
        }
    } else if (coord__zrc_session_gone(op->rc)) {
        /* The NEW_SESSION listener makes them again. */
    } else {
        log_warn(MOD, "event=slots-make-failed dir=%s zrc=%d op=%d", sl->dir, op->rc, bad);
        sl->dirs_missing = op->rc == ZNONODE; /* slots/ or free/ is not there */
        sl->refs++;
        coord__timer(sl->s, coord__backoff_ms(sl->s, sl->tries++), make_retry, sl);
    }
    slots_unref(sl);
}

/* The slots of this session, and their first offers, in one multi-op. */
static void slots_send(struct coord_slots *sl)
{
    struct coord__op *op = coord__op_new(sl->s, slots_made, sl);
    coord__op_bind(op, sl->gen);
    op->tag = (intptr_t)sl->gen;
    coord__multi_init(op, (int)(sl->n * (sl->offering ? 2 : 1)));
    int k = 0;
    for (unsigned i = 0; i < sl->n; i++)
        coord__mop_create(op, k++, sl->v[i].path, COORD_SLOT_FREE, COORD_EPHEMERAL);
    for (unsigned i = 0; sl->offering && i < sl->n; i++) {
        char *p = xasprintf("%s/%s@0", sl->free_dir, sl->v[i].name);
        coord__mop_create(op, k++, p, "{}", COORD_EPHEMERAL);
        free(p);
    }
    sl->making = true;
    sl->refs++;
    coord__zk_multi(op);
}

static void slots_make(struct coord_slots *sl)
{
    struct coord_session *s = sl->s;
    int64_t sid = coord_session_id(s);
    if (sl->dead || sl->making)
        return;
    if (!sid || coord_session_state(s) != COORD_CONNECTED) {
        /* Not connected yet (the first session is not told as a new one): look again. */
        sl->refs++;
        coord__timer(s, 100, make_retry, sl);
        return;
    }
    if (sl->v && sl->gen == s->gen && sl->session == sid)
        return; /* this session's are made (or being read) */
    slots_drop(sl);
    sl->gen = s->gen;
    sl->session = sid;
    sl->v = xcalloc(sl->n, sizeof(*sl->v));
    for (unsigned i = 0; i < sl->n; i++) {
        struct slot *x = &sl->v[i];
        x->sl = sl;
        x->i = i;
        x->version = -1;
        x->offer_ver = -1;
        x->name = xasprintf("%s.%llx.%u", sl->consumer, (unsigned long long)sid, i);
        x->path = xasprintf("%s/%s", sl->slots_dir, x->name);
    }
    slots_send(sl);
}

static void slots_session(void *owner, enum coord__session_event ev)
{
    struct coord_slots *sl = owner;
    if (sl->dead)
        return;
    if (ev == COORD__SUSPECT || ev == COORD__LOST) {
        for (unsigned i = 0; sl->v && i < sl->n; i++)
            slot_lost(&sl->v[i], ev == COORD__SUSPECT ? "suspended" : "session-expired");
    }
    if (ev == COORD__LOST) {
        slots_drop(sl); /* gone with the session */
        sl->gen = 0;
    }
    if (ev == COORD__NEW_SESSION)
        slots_make(sl);
}

static void dirs_ready(int rc, void *arg)
{
    struct coord_slots *sl = arg;
    if (!sl->v || sl->dirs_missing) { /* the first make, or the one that found none */
        sl->dirs_missing = false;
        make_again(sl);
    }
    slots_unref(sl);
}

static void slots_dir_ready(int rc, void *arg)
{
    struct coord_slots *sl = arg;
    if (!sl->dead) {
        sl->refs++;
        coord_ensure_path(sl->s, sl->free_dir, dirs_ready, sl);
    }
    slots_unref(sl);
}

/* ---- the API --------------------------------------------------------------------------------- */

struct coord_slots *coord_slots_open(struct coord_session *s, const char *dir,
                                     const struct coord_slots_opts *o)
{
    struct coord_slots *sl = xcalloc(1, sizeof(*sl));
    sl->s = s;
    sl->dir = xstrdup(dir);
    sl->slots_dir = xasprintf("%s/slots", dir);
    sl->free_dir = xasprintf("%s/free", dir);
    sl->consumer = xstrdup(o->consumer_id);
    sl->n = o->n ? (o->n > COORD_SLOTS_MAX ? COORD_SLOTS_MAX : o->n) : 1;
    sl->on_assigned = o->on_assigned;
    sl->on_lost = o->on_lost;
    sl->arg = o->arg;
    sl->done_free_ms = o->done_free_ms > 0 ? o->done_free_ms : DONE_FREE_MS;
    sl->offering = true;
    sl->refs = 2; /* the caller's, and the path's below */
    coord__reg_listener_add(&s->reg, sl, slots_session);
    coord_ensure_path(s, sl->slots_dir, slots_dir_ready, sl);
    return sl;
}

static struct slot *slot_at(struct coord_slots *sl, unsigned i)
{
    return sl && !sl->dead && sl->v && i < sl->n ? &sl->v[i] : NULL;
}

void coord_slots_done(struct coord_slots *sl, unsigned i, const char *key)
{
    struct slot *x = slot_at(sl, i);
    if (!x || !key)
        return;
    if (x->running && strcmp(x->running, key) == 0) {
        char *k = x->running;
        x->running = NULL;
        slot_settle(x, k);
        slots_stake(sl);
    }
    if (x->settled && strcmp(x->settled, key) == 0 && !x->free_seen)
        done_arm(x);
    COORD__CHECK(slots_check, sl);
}

void coord_slots_offer(struct coord_slots *sl, bool on)
{
    if (!sl || sl->dead || sl->offering == on)
        return;
    sl->offering = on;
    for (unsigned i = 0; sl->v && i < sl->n; i++) {
        if (on)
            slot_offer(&sl->v[i]);
        else
            slot_withdraw(&sl->v[i]);
    }
}

const char *coord_slots_name(const struct coord_slots *sl, unsigned i)
{
    return sl && sl->v && i < sl->n ? sl->v[i].name : NULL;
}

struct coord_slots_counters coord_slots_counters(const struct coord_slots *sl)
{
    return sl->c;
}

void coord_slots_close(struct coord_slots *sl)
{
    if (!sl)
        return;
    sl->dead = true;
    coord__reg_listener_remove(&sl->s->reg, sl);
    slots_drop(sl);
    slots_unref(sl);
}

/* ---- names and data, for the writers (pure) ------------------------------------------------ */

int coord_slot_offer_parse(const char *entry, char *slot, size_t n, int *version)
{
    const char *at = entry ? strrchr(entry, '@') : NULL;
    if (!at || at == entry || !at[1] || (size_t)(at - entry) >= n)
        return DRV_EINVAL;
    char *end;
    long v = strtol(at + 1, &end, 10);
    if (*end || v < 0 || v > 0x7fffffff)
        return DRV_EINVAL;
    memcpy(slot, entry, (size_t)(at - entry));
    slot[at - entry] = '\0';
    *version = (int)v;
    return 0;
}

int coord_slot_parse(const char *name, char *consumer, size_t n, int64_t *session, unsigned *i)
{
    const char *last = name ? strrchr(name, '.') : NULL;
    if (!last || last == name)
        return DRV_EINVAL;
    const char *mid = last - 1;
    while (mid > name && *mid != '.')
        mid--;
    if (mid == name || (size_t)(mid - name) >= n)
        return DRV_EINVAL;
    char *end;
    unsigned long long sid = strtoull(mid + 1, &end, 16);
    if (end != last || mid + 1 == last)
        return DRV_EINVAL;
    unsigned long idx = strtoul(last + 1, &end, 10);
    if (*end || !last[1] || idx >= COORD_SLOTS_MAX)
        return DRV_EINVAL;
    memcpy(consumer, name, (size_t)(mid - name));
    consumer[mid - name] = '\0';
    *session = (int64_t)sid;
    *i = (unsigned)idx;
    return 0;
}

char *coord_slot_assignment(const char *key, const char *by, const char *task_json)
{
    json_t *k = json_string(key), *b = json_string(by ? by : "");
    char *ks = json_dumps(k, JSON_ENCODE_ANY), *bs = json_dumps(b, JSON_ENCODE_ANY);
    char *s = xasprintf("{\"v\":1,\"key\":%s,\"by\":%s,\"task\":%s}", ks, bs,
                        task_json && *task_json ? task_json : "null");
    free(ks);
    free(bs);
    json_decref(k);
    json_decref(b);
    return s;
}
