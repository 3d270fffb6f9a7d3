/*
 * assign: a job's tasks handed to the workers' slots (issue 37; docs/engine.md "Tasks to
 * slots"; the slots themselves: docs/coord.md "Slots", src/coord/slots.c).
 *
 * When every droverd member and every live worker of the job's tenant and class says
 * "slots" (a rolling upgrade mixes builds: until then the queue's items, as before), the
 * owner puts no queue item: in its fenced round it writes the task into a worker's slot.
 * The round is the record of the attempt (invariant 3): the task log's 'q' of the attempt,
 * the slot's assignment and the attempt's key record keys/<key> {"slot": <name>} go in one
 * multi-op, so the attempt is recorded, and claimed for one worker's session, before any
 * worker hears of it; the key record also refuses a second dispatch of the same attempt,
 * as a keyed put's did, and tells a new owner where the attempt runs.
 *
 * Where a slot comes from, in this order: one of the job's own, idle since its last
 * outcome, for at most ASSIGN_TURNS tasks in a row (set at the version it holds: no read,
 * no offer); or an offer (dir/free/<slot>@<version>, a worker's free slot), taken by
 * deleting the offer and setting the slot at that version in the same multi-op, so that
 * two owners racing for one offer cannot both have it (the loser's op fails: that slot's
 * ops are dropped and the rest sent again). The offers are listed through a children
 * watcher kept only while a job here waits for a slot (the pool's); each offer it lists
 * wakes the waiting jobs. A slot the job no longer needs at the end of its round goes to
 * another job of this node that waits for one of that queue (no write), or is set free
 * (its worker offers it again). A worker's slot taken ASSIGN_TURNS times by one job is set
 * free, so that the other nodes' jobs get their share of the fleet.
 *
 * The worker reads the assignment (its data watch), runs the task, and writes the run
 * record, whole, with the key record's delete, in one multi-op. run.c reads it through the
 * runs/ watch, as any record, and calls engine__assign_outcome: the slot is idle, the
 * job's for its next task. An outcome "lost" (the worker was cut off and killed the
 * plugin) steps the task by LOST (fsm T4: again, no failure counted), "returned" (it never
 * started) by WITHDRAWN. A worker whose session ends writes nothing: its member leaves, or
 * comes back with another session, and engine__assign_workers sees every slot of the old
 * session dead; the job then syncs and lists its runs/ (an outcome written just before the
 * end is there), and a task with none is LOST, its key record deleted in the next round.
 *
 * One slot, as a job holds it (struct eheld):
 *
 *   offer --take (round)--> RUNNING(task) --outcome--> IDLE --next task (round)--> RUNNING
 *                              |                        |--another job here waits: its IDLE
 *            worker's session  |                        +--round's end: free (round)--> gone
 *            ends: lost check  v
 *                            DEAD --an outcome after all, or LOST--> gone
 *   a round's op of the slot fails (someone else's write came first): gone, its task back
 *   to the retries; a round not applied: as before the round, its task back to the retries
 *
 * Invariants (assign_check, DROVER_CHECKS):
 *   A1. a held slot is in its job's list and in the node's map, once, under its name;
 *   A2. a slot runs at most one task, and a task runs in at most one slot of its job;
 *   A3. busy (an op in the round in flight) only while the job's round is in flight, and
 *       then its round table has exactly one group of it;
 *   A4. a slot's ops are sent only while its job holds it (or takes it in that round).
 *
 * Cost per task, W workers, S slots in all: the owner's share of one multi-op (the slot's
 * set and the key record: two ops; plus an offer's delete every ASSIGN_TURNS tasks), no
 * request of its own but the outcome's read (run.c); a listing of the offers per offer
 * while it waits (bounded by the offers, not by W). Nothing here grows with W: a worker
 * joining or leaving costs the node one read (the members' watch, coord.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "assign.h"
#include "batch.h"
#include "clock.h"
#include "commit.h"
#include "coord.h"
#include "engine_int.h"
#include "log.h"
#include "planner.h"
#include "strmap.h"
#include "taskmsg.h"
#include "watchdog.h"
#include "xalloc.h"
#include "zkpath.h"

#define MOD "engine"
#define ASSIGN_TURNS 32

/* One slot a job holds. */
struct eheld {
    char *name; /* the slot's znode name: <worker>.<session hex>.<i> */
    char *path; /* queues/<tenant>/<class>/slots/<name> */
    char worker[128];
    int64_t session;
    int version; /* the slot's data version after our last write applied */
    struct ejob *j;
    bool running; /* runs (phase, idx, attempt) */
    char phase;
    uint32_t idx;
    unsigned attempt;
    unsigned turns; /* tasks of this job it ran */
    bool busy;      /* an op of it is in the round in flight */
    bool dead;      /* its worker's session ended */
    bool checking;  /* dead and running: its job looks for its outcome (lost check) */
};

enum gkind { G_TAKE, G_SET, G_FREE, G_KEYDEL };

/* One slot's part of the round in flight: its ops carry tag = index + 1. */
struct ground {
    enum gkind kind;
    struct eheld *h; /* G_TAKE: made for the round (held once applied) */
    char *offer;     /* G_TAKE: the offer's name */
    char *key;       /* G_KEYDEL: the key record's path */
    struct eplan *p; /* G_TAKE, G_SET: the task */
    uint32_t idx;
    unsigned attempt;
    bool dropped; /* its ops were dropped (one failed) */
};

/* The offers of one queue, as this node sees them. */
struct epool {
    struct engine *e;
    char *tc;       /* "<tenant>/<class>" */
    char *dir;      /* queues/<tenant>/<class> */
    char *free_dir; /* dir/free */
    struct coord_watcher *w;
    char **offers; /* the last listing, in this node's order of preference */
    size_t n_offers;
    struct strmap *taken; /* offers tried (in a round, or failed): not tried again */
    struct ejob **want;   /* jobs waiting for a slot of this queue */
    size_t n_want, cap_want;
    bool listed; /* the watcher's listing is in (offers says what is offered) */
};

/* The node's. */
struct eassign {
    struct strmap *pools;    /* tc -> struct epool */
    struct strmap *held;     /* slot name -> struct eheld (every job's) */
    struct strmap *slots_ok; /* tc -> (void *)1: every live worker serving it says "slots" */
    struct strmap *live;     /* worker id -> int64_t * (its session): live, proven */
    struct strmap *draining; /* worker id -> (void *)1 */
    struct strmap *modes;    /* tc -> (void *)1 slots, 2 queue: as last logged */
    bool droverd_ok;         /* every droverd member says "slots" */
    bool have_members, have_workers;
};

/* The job's. */
struct ejassign {
    struct eheld **held;
    size_t n_held, cap_held;
    struct ground *round;
    size_t n_round, cap_round;
    char **keydel; /* key records of lost attempts, to delete in the next round */
    size_t n_keydel, cap_keydel;
    struct epool *pool;
    bool wanting;   /* in its pool's list of jobs that wait for a slot */
    bool wants_now; /* the round being built found no slot for a task */
};

/* ---- helpers -------------------------------------------------------------------------------- */

static struct ejassign *ja(struct ejob *j)
{
    if (!j->assign)
        j->assign = xcalloc(1, sizeof(*j->assign));
    return j->assign;
}

static void assign_check(const struct ejob *j)
{
#if DRV_CHECKS
    const struct ejassign *a = j->assign;
    if (!a)
        return;
    for (size_t i = 0; i < a->n_held; i++) {
        const struct eheld *h = a->held[i];
        if (h->j != j || strmap_get(j->e->assign->held, h->name) != h)
            abort(); /* A1 */
        for (size_t k = i + 1; k < a->n_held; k++)
            if (a->held[k] == h || (h->running && a->held[k]->running &&
                                    a->held[k]->phase == h->phase && a->held[k]->idx == h->idx))
                abort(); /* A1, A2 */
        size_t groups = 0;
        for (size_t g = 0; g < a->n_round; g++)
            groups += a->round[g].h == h && !a->round[g].dropped;
        if (h->busy != (groups == 1) || groups > 1)
            abort(); /* A3 */
    }
#else
    (void)j;
#endif
}

static void held_free(struct eheld *h)
{
    free(h->name);
    free(h->path);
    free(h);
}

/* Forget h: out of its job's list and the node's map, freed. */
static void held_drop(struct ejob *j, struct eheld *h)
{
    struct ejassign *a = ja(j);
    for (size_t i = 0; i < a->n_held; i++)
        if (a->held[i] == h) {
            a->held[i] = a->held[--a->n_held];
            break;
        }
    if (strmap_get(j->e->assign->held, h->name) == h)
        strmap_del(j->e->assign->held, h->name);
    held_free(h);
}

static void held_add(struct ejob *j, struct eheld *h)
{
    struct ejassign *a = ja(j);
    h->j = j;
    XGROW(a->held, a->cap_held, a->n_held + 1);
    a->held[a->n_held++] = h;
    struct eheld *old = strmap_get(j->e->assign->held, h->name);
    if (old && old != h) {
        /* Another job here held it (a stale view of ours): that one is forgotten. */
        log_warn(MOD, "event=slot-held-twice slot=%s job=%s other=%s", h->name, j->id, old->j->id);
        held_drop(old->j, old);
    }
    strmap_put(j->e->assign->held, h->name, h);
}

static struct eheld *held_new(const char *dir, const char *name)
{
    struct eheld *h = xcalloc(1, sizeof(*h));
    h->name = xstrdup(name);
    h->path = xasprintf("%s/slots/%s", dir, name);
    unsigned i;
    if (coord_slot_parse(name, h->worker, sizeof(h->worker), &h->session, &i) != 0)
        h->worker[0] = '\0';
    return h;
}

static char *tc_of(const struct ejob *j)
{
    return xasprintf("%s/%s", j->tenant, j->cls);
}

/* Is the worker of h live with h's session, and may it take more (not draining)? */
static bool worker_live(const struct eassign *a, const char *worker, int64_t session)
{
    const int64_t *s = a->live ? strmap_get(a->live, worker) : NULL;
    return s && *s == session;
}

static bool worker_takes(const struct eassign *a, const char *worker, int64_t session)
{
    return worker_live(a, worker, session) && !(a->draining && strmap_get(a->draining, worker));
}

static char *key_path(const struct ejob *j, const struct eplan *p, uint32_t idx, unsigned attempt)
{
    char key[80];
    taskmsg_key(key, sizeof(key), j->id, p->phase, idx, attempt);
    char *q = zkpath_queue(NULL, 0, j->tenant, j->cls);
    char *kp = xasprintf("%s/keys/%s", q, key);
    free(q);
    return kp;
}

static struct eplan *plan_of(struct ejob *j, char phase)
{
    return phase == 'f' ? &j->fwd : phase == 'r' && j->rb.plan ? &j->rb : NULL;
}

/* ---- the node -------------------------------------------------------------------------------- */

void engine__assign_init(struct engine *e)
{
    e->assign = xcalloc(1, sizeof(*e->assign));
    e->assign->pools = strmap_new();
    e->assign->held = strmap_new();
}

static void pool_offers_clear(struct epool *p)
{
    for (size_t i = 0; i < p->n_offers; i++)
        free(p->offers[i]);
    free(p->offers);
    p->offers = NULL;
    p->n_offers = 0;
}

static void live_free(struct eassign *a)
{
    if (a->live) {
        size_t pos = 0;
        void *v;
        while (strmap_next(a->live, &pos, NULL, &v))
            free(v);
        strmap_free(a->live);
    }
    strmap_free(a->draining);
    strmap_free(a->slots_ok);
    a->live = a->draining = a->slots_ok = NULL;
}

void engine__assign_free(struct engine *e)
{
    struct eassign *a = e->assign;
    if (!a)
        return;
    size_t pos = 0;
    void *v;
    while (strmap_next(a->pools, &pos, NULL, &v)) {
        struct epool *p = v;
        coord_watcher_free(p->w);
        pool_offers_clear(p);
        strmap_free(p->taken);
        free(p->want);
        free(p->tc);
        free(p->dir);
        free(p->free_dir);
        free(p);
    }
    strmap_free(a->pools);
    strmap_free(a->held); /* the jobs' slots are theirs (job_gone freed them) */
    strmap_free(a->modes);
    live_free(a);
    free(a);
    e->assign = NULL;
}

void engine__assign_members(struct engine *e, const struct coord_member_info *m, size_t n)
{
    bool all = n > 0;
    for (size_t i = 0; i < n && all; i++) {
        json_t *d = json_loads(m[i].json ? m[i].json : "", 0, NULL);
        all = json_integer_value(json_object_get(d, "slots")) >= 1;
        json_decref(d);
    }
    if (all != e->assign->droverd_ok || !e->assign->have_members)
        log_info(MOD, "event=slots-droverd node=%s all=%d members=%zu", e->node_id, (int)all, n);
    e->assign->droverd_ok = all;
    e->assign->have_members = true;
}

static void lost_check(struct ejob *j);

static void mark_cb(const char *queue, void *arg)
{
    if (arg)
        strmap_put(arg, queue, (void *)1);
}

void engine__assign_workers(struct engine *e, const struct coord_member_info *m, size_t n)
{
    struct eassign *a = e->assign;
    struct strmap *was = a->slots_ok;
    a->slots_ok = NULL;
    live_free(a);
    a->live = strmap_new();
    a->draining = strmap_new();
    a->slots_ok = strmap_new();
    struct strmap *old = strmap_new(); /* tc -> (void *)1: some live worker says no slots */
    for (size_t i = 0; i < n; i++) {
        if (m[i].proof == COORD_MEMBER_UNPROVEN)
            continue; /* not its tenant's word (watchdog.c) */
        json_t *d = json_loads(m[i].json ? m[i].json : "", 0, NULL);
        const char *tenant = json_string_value(json_object_get(d, "tenant"));
        bool slots = json_integer_value(json_object_get(d, "slots")) >= 1;
        bool draining = json_is_true(json_object_get(d, "draining"));
        int64_t *s = xmalloc(sizeof(*s));
        *s = m[i].session;
        free(strmap_get(a->live, m[i].id));
        strmap_put(a->live, m[i].id, s);
        if (draining)
            strmap_put(a->draining, m[i].id, (void *)1);
        /* A queue one live worker serves without slots stays on the queue's items (old); a
           draining worker's takes nothing more. */
        engine__member_queues(d, tenant, mark_cb, !slots ? old : draining ? NULL : a->slots_ok);
        json_decref(d);
    }
    size_t pos = 0;
    const char *key;
    void *v0;
    while (strmap_next(old, &pos, &key, NULL))
        if (strmap_get(a->slots_ok, key))
            strmap_del(a->slots_ok, key); /* allowed during the walk: another map */
    struct strmap *old_seen = old;
    /* Each queue whose way changed (or first seen), said once: operators and tests wait
       for it. A queue no live worker serves keeps its last word. */
    if (!a->modes)
        a->modes = strmap_new();
    struct strmap *served = strmap_new();
    pos = 0;
    while (strmap_next(a->slots_ok, &pos, &key, NULL))
        strmap_put(served, key, (void *)1);
    pos = 0;
    while (strmap_next(old_seen, &pos, &key, NULL))
        strmap_put(served, key, (void *)2);
    pos = 0;
    while (strmap_next(served, &pos, &key, &v0)) {
        if (strmap_get(a->modes, key) == v0)
            continue;
        strmap_put(a->modes, key, v0);
        log_info(MOD, "event=slots-queue node=%s queue=%s slots=%d", e->node_id, key,
                 v0 == (void *)1);
    }
    strmap_free(served);
    strmap_free(old_seen);
    strmap_free(was);
    a->have_workers = true;
    /* Slots whose worker's session ended: their jobs look for their outcomes. */
    pos = 0;
    void *v;
    size_t n_jobs = 0, cap = 0;
    struct ejob **jobs = NULL;
    while (strmap_next(a->held, &pos, NULL, &v)) {
        struct eheld *h = v;
        if (h->dead || worker_live(a, h->worker, h->session))
            continue;
        h->dead = true;
        log_info(MOD, "event=slot-worker-gone job=%s slot=%s running=%d", h->j->id, h->name,
                 (int)h->running);
        bool seen = false;
        for (size_t i = 0; i < n_jobs; i++)
            seen |= jobs[i] == h->j;
        if (!seen) {
            XGROW(jobs, cap, n_jobs + 1);
            jobs[n_jobs++] = h->j;
        }
    }
    for (size_t i = 0; i < n_jobs; i++)
        lost_check(jobs[i]);
    free(jobs);
}

bool engine__assign_on(const struct ejob *j)
{
    const struct eassign *a = j->e->assign;
    if (!a || !a->droverd_ok || !a->slots_ok)
        return false;
    char key[300];
    snprintf(key, sizeof(key), "%s/%s", j->tenant, j->cls);
    return strmap_get(a->slots_ok, key) != NULL;
}

/* ---- the offers (a pool per queue) ---------------------------------------------------------- */

static uint64_t pref(const char *node, const char *offer)
{
    char buf[400];
    int n = snprintf(buf, sizeof(buf), "%s|%s", node, offer);
    return coord_hash64(buf, n > 0 ? (size_t)n : 0);
}

static const char *sort_node;

static int by_pref(const void *x, const void *y)
{
    uint64_t a = pref(sort_node, *(char *const *)x), b = pref(sort_node, *(char *const *)y);
    return a < b ? -1 : a > b;
}

static void pool_listed(int rc, char *const *names, size_t n, const struct coord_stat *st,
                        void *arg)
{
    struct epool *p = arg;
    if (rc != 0)
        return; /* the watcher reads again */
    pool_offers_clear(p);
    p->listed = true;
    p->offers = xcalloc(n + 1, sizeof(char *));
    struct strmap *still = strmap_new();
    for (size_t i = 0; i < n; i++) {
        p->offers[p->n_offers++] = xstrdup(names[i]);
        if (p->taken && strmap_get(p->taken, names[i]))
            strmap_put(still, names[i], (void *)1);
    }
    /* Offers tried that are gone from the listing will not come back: forgotten. */
    strmap_free(p->taken);
    p->taken = still;
    /* Each node its own order: two nodes rarely race for the same offer. */
    sort_node = p->e->node_id;
    qsort(p->offers, p->n_offers, sizeof(char *), by_pref);
    for (size_t i = 0; i < p->n_want; i++)
        engine__kick(p->want[i]);
}

static struct epool *pool_of(struct ejob *j)
{
    struct ejassign *a = ja(j);
    if (a->pool)
        return a->pool;
    char *tc = tc_of(j);
    struct epool *p = strmap_get(j->e->assign->pools, tc);
    if (!p) {
        p = xcalloc(1, sizeof(*p));
        p->e = j->e;
        p->tc = tc;
        p->dir = zkpath_queue(NULL, 0, j->tenant, j->cls);
        p->free_dir = xasprintf("%s/free", p->dir);
        p->taken = strmap_new();
        strmap_put(j->e->assign->pools, tc, p);
    } else {
        free(tc);
    }
    a->pool = p;
    return p;
}

static void pool_want(struct ejob *j)
{
    struct ejassign *a = ja(j);
    struct epool *p = pool_of(j);
    if (a->wanting)
        return;
    a->wanting = true;
    XGROW(p->want, p->cap_want, p->n_want + 1);
    p->want[p->n_want++] = j;
    if (!p->w)
        p->w = coord_watch_children(j->e->zk, p->free_dir, pool_listed, p);
}

static void pool_unwant(struct ejob *j)
{
    struct ejassign *a = j->assign;
    if (!a || !a->wanting || !a->pool)
        return;
    struct epool *p = a->pool;
    a->wanting = false;
    for (size_t i = 0; i < p->n_want; i++)
        if (p->want[i] == j) {
            memmove(&p->want[i], &p->want[i + 1], (p->n_want - i - 1) * sizeof(*p->want));
            p->n_want--;
            break;
        }
    if (p->n_want == 0 && p->w) {
        /* Nobody here waits: no listing per offer until somebody does. */
        coord_watcher_free(p->w);
        p->w = NULL;
        p->listed = false;
        pool_offers_clear(p);
    }
}

/* An offer of p this job may take (avoid: a worker to pass over when another will do). */
static const char *pool_pick(struct ejob *j, struct epool *p, const char *avoid, char *slot,
                             size_t n, int *version)
{
    const struct eassign *a = j->e->assign;
    const char *second = NULL;
    char second_slot[200];
    int second_ver = 0;
    for (size_t i = 0; i < p->n_offers; i++) {
        const char *o = p->offers[i];
        char s[200], w[128];
        int v;
        int64_t sid;
        unsigned k;
        if (strmap_get(p->taken, o) || coord_slot_offer_parse(o, s, sizeof(s), &v) != 0 ||
            coord_slot_parse(s, w, sizeof(w), &sid, &k) != 0 || !worker_takes(a, w, sid) ||
            strmap_get(a->held, s))
            continue;
        if (avoid && strcmp(w, avoid) == 0) {
            if (!second) {
                second = o;
                snprintf(second_slot, sizeof(second_slot), "%s", s);
                second_ver = v;
            }
            continue;
        }
        snprintf(slot, n, "%s", s);
        *version = v;
        return o;
    }
    if (second) {
        snprintf(slot, n, "%s", second_slot);
        *version = second_ver;
    }
    return second;
}

/* ---- a round ----------------------------------------------------------------------------------
 */

size_t engine__assign_bytes(const struct ejob *j, const char *item)
{
    /* The slot's set (its path under 160 bytes, the assignment around the item), the key
       record's create, an offer's delete. */
    char path[200];
    memset(path, 'x', sizeof(path) - 1);
    path[sizeof(path) - 1] = '\0';
    return coord_txn_set_bytes(path, "") + strlen(item) + 300 +
           coord_txn_create_bytes(path, "{\"slot\":\"\"}") + 160 + coord_txn_delete_bytes(path);
}

void engine__assign_round_begin(struct ejob *j)
{
    struct ejassign *a = ja(j);
    for (size_t i = 0; i < a->n_round; i++) {
        free(a->round[i].offer);
        free(a->round[i].key);
    }
    a->n_round = 0;
    a->wants_now = false;
}

static struct ground *group_add(struct ejob *j, enum gkind kind)
{
    struct ejassign *a = ja(j);
    XGROW(a->round, a->cap_round, a->n_round + 1);
    struct ground *g = &a->round[a->n_round++];
    memset(g, 0, sizeof(*g));
    g->kind = kind;
    return g;
}

static int tag_of(const struct ejob *j, const struct ground *g)
{
    return (int)(g - j->assign->round) + 1;
}

/* The ops of an assignment of task idx into h (set at version; take: the offer's delete
   first) and of its key record. */
static void assignment_ops(struct ejob *j, struct engine__zpart *z, struct ground *g,
                           const char *item, int version)
{
    struct eplan *p = g->p;
    char key[80];
    taskmsg_key(key, sizeof(key), j->id, p->phase, g->idx, g->attempt);
    int tag = tag_of(j, g);
    if (g->kind == G_TAKE) {
        char *q = zkpath_queue(NULL, 0, j->tenant, j->cls);
        char *offer = xasprintf("%s/free/%s", q, g->offer);
        free(q);
        engine__zpart_add(z, ENGINE__ZOP_DELETE, offer, NULL, -1)->tag = tag;
    }
    char *data = coord_slot_assignment(key, j->e->node_id, item);
    engine__zpart_add(z, ENGINE__ZOP_SET, xstrdup(g->h->path), data, version)->tag = tag;
    json_t *kj = json_pack("{s:s}", "slot", g->h->name);
    char *kd = json_dumps(kj, JSON_COMPACT);
    json_decref(kj);
    engine__zpart_add(z, ENGINE__ZOP_CREATE, key_path(j, p, g->idx, g->attempt), kd, -1)->tag = tag;
}

int engine__assign_task(struct ejob *j, struct engine__zpart *z, struct eplan *p, uint32_t idx,
                        const char *item, const char *avoid)
{
    struct ejassign *a = ja(j);
    struct eassign *na = j->e->assign;
    /* One of the job's own, idle: its next task, no offer. */
    struct eheld *best = NULL;
    for (size_t i = 0; i < a->n_held; i++) {
        struct eheld *h = a->held[i];
        if (h->running || h->busy || h->dead || h->turns >= ASSIGN_TURNS ||
            !worker_takes(na, h->worker, h->session))
            continue;
        if (!best || (avoid && strcmp(best->worker, avoid) == 0))
            best = h;
    }
    if (best && avoid && strcmp(best->worker, avoid) == 0) {
        /* A retry that would rather go elsewhere: an offer of another worker, if any is
           offered (the offers are listed first when they are not: it waits for that). */
        struct epool *pl = pool_of(j);
        if (!pl->listed) {
            a->wants_now = true;
            pool_want(j);
            return DRV_EAGAIN;
        }
        char slot[200], w[128];
        int v;
        int64_t sid;
        unsigned k;
        const char *o = pool_pick(j, pl, avoid, slot, sizeof(slot), &v);
        if (o && coord_slot_parse(slot, w, sizeof(w), &sid, &k) == 0 && strcmp(w, avoid) != 0)
            best = NULL;
    }
    if (best) {
        struct ground *g = group_add(j, G_SET);
        g->h = best;
        g->p = p;
        g->idx = idx;
        g->attempt = p->recs[idx].attempt;
        best->busy = true;
        assignment_ops(j, z, g, item, best->version);
        return 0;
    }
    struct epool *pl = pool_of(j);
    char slot[200];
    int v;
    const char *o = pool_pick(j, pl, avoid, slot, sizeof(slot), &v);
    if (!o) {
        a->wants_now = true;
        pool_want(j);
        return DRV_EAGAIN;
    }
    struct ground *g = group_add(j, G_TAKE);
    g->h = held_new(pl->dir, slot);
    g->h->j = j;
    g->h->version = v;
    g->offer = xstrdup(o);
    g->p = p;
    g->idx = idx;
    g->attempt = p->recs[idx].attempt;
    strmap_put(pl->taken, o, (void *)1);
    assignment_ops(j, z, g, item, v);
    return 0;
}

/* Another job of this node that waits for a slot of j's queue, or NULL. */
static struct ejob *waiting_job(struct ejob *j)
{
    struct epool *p = j->assign ? j->assign->pool : NULL;
    for (size_t i = 0; p && i < p->n_want; i++)
        if (p->want[i] != j && engine__job_alive(p->want[i]) && p->want[i]->own == EJ_ACTIVE)
            return p->want[i];
    return NULL;
}

void engine__assign_round_end(struct ejob *j, struct engine__zpart *z)
{
    struct ejassign *a = j->assign;
    if (!a)
        return;
    struct eassign *na = j->e->assign;
    if (!a->wants_now)
        pool_unwant(j); /* every task it had found a slot, or it had none to give */
    for (size_t i = 0; i < a->n_held;) {
        struct eheld *h = a->held[i];
        if (h->running || h->busy) {
            i++;
            continue;
        }
        if (h->dead) {
            held_drop(j, h); /* gone with its worker's session: nothing to write */
            continue;
        }
        struct ejob *other = h->turns < ASSIGN_TURNS && worker_takes(na, h->worker, h->session)
                                 ? waiting_job(j)
                                 : NULL;
        if (other) {
            /* Handed over as it is (its version known): the other job's next round sets
               it, no write here. */
            a->held[i] = a->held[--a->n_held];
            strmap_del(na->held, h->name);
            h->turns = 0;
            held_add(other, h);
            engine__kick(other);
            continue;
        }
        struct ground *g = group_add(j, G_FREE);
        g->h = h;
        h->busy = true;
        engine__zpart_add(z, ENGINE__ZOP_SET, xstrdup(h->path), xstrdup(COORD_SLOT_FREE),
                          h->version)
            ->tag = tag_of(j, g);
        i++;
    }
    for (size_t i = 0; i < a->n_keydel; i++) {
        struct ground *g = group_add(j, G_KEYDEL);
        g->key = a->keydel[i];
        engine__zpart_add(z, ENGINE__ZOP_DELETE, xstrdup(g->key), NULL, -1)->tag = tag_of(j, g);
    }
    a->n_keydel = 0;
    assign_check(j);
}

/* The task of g back to the retries (its attempt unchanged: put again, into a slot). */
static void task_back(struct ejob *j, const struct ground *g)
{
    struct eplan *p = g->p;
    if (p == j->cur && g->idx < p->n && p->recs[g->idx].attempt == g->attempt &&
        p->recs[g->idx].state == ENGINE_TS_QUEUED)
        engine__commit_retry(j, g->idx);
}

static void started(struct ejob *j, struct ground *g, struct eheld *h)
{
    struct eplan *p = g->p;
    h->running = true;
    h->phase = p->phase;
    h->idx = g->idx;
    h->attempt = g->attempt;
    h->turns++;
    if (p->recs[g->idx].attempt != g->attempt)
        return;
    free(p->worker[g->idx]);
    p->worker[g->idx] = xstrdup(h->worker);
    p->t_start[g->idx] = clock_wall_ms();
    engine__task_event(j, p, g->idx, ENGINE_TEV_STARTED); /* running, on that worker */
}

void engine__assign_settled(struct ejob *j, bool applied)
{
    struct ejassign *a = j->assign;
    if (!a)
        return;
    for (size_t i = 0; i < a->n_round; i++) {
        struct ground *g = &a->round[i];
        if (g->dropped)
            continue;
        struct eheld *h = g->h;
        switch (g->kind) {
        case G_TAKE: {
            struct epool *p = pool_of(j);
            if (applied) {
                h->version++;
                h->busy = false;
                held_add(j, h);
                started(j, g, h);
            } else {
                strmap_del(p->taken, g->offer); /* it may be tried again */
                held_free(h);
                task_back(j, g);
            }
            g->h = NULL;
            break;
        }
        case G_SET:
            h->busy = false;
            if (applied) {
                h->version++;
                started(j, g, h);
            } else {
                task_back(j, g);
            }
            break;
        case G_FREE:
            h->busy = false;
            if (applied)
                held_drop(j, h);
            break;
        case G_KEYDEL:
            if (!applied) {
                XGROW(a->keydel, a->cap_keydel, a->n_keydel + 1);
                a->keydel[a->n_keydel++] = g->key;
                g->key = NULL;
            }
            break;
        }
    }
    for (size_t i = 0; i < a->n_round; i++) {
        free(a->round[i].offer);
        free(a->round[i].key);
    }
    a->n_round = 0;
    assign_check(j);
}

bool engine__assign_op_failed(struct ejob *j, struct engine__zpart *z, size_t i)
{
    struct ejassign *a = j->assign;
    if (!a || i >= z->n || z->ops[i].tag <= 0 || (size_t)z->ops[i].tag > a->n_round)
        return false;
    int tag = z->ops[i].tag;
    struct ground *g = &a->round[tag - 1];
    log_info(MOD, "event=slot-op-failed job=%s kind=%d slot=%s op=%zu", j->id, (int)g->kind,
             g->h ? g->h->name : g->key, i);
    for (size_t k = z->n; k-- > 0;)
        if (z->ops[k].tag == tag)
            engine__zpart_drop(z, k);
    g->dropped = true;
    switch (g->kind) {
    case G_TAKE:
        /* Taken by someone else first, or its worker went: that offer is done with. */
        held_free(g->h);
        g->h = NULL;
        task_back(j, g);
        break;
    case G_SET:
    case G_FREE:
        /* The slot changed under us (its worker freed it itself, or went): not ours. */
        if (g->kind == G_SET)
            task_back(j, g);
        g->h->busy = false;
        held_drop(j, g->h);
        g->h = NULL;
        break;
    case G_KEYDEL:
        break; /* gone already */
    }
    assign_check(j);
    return true;
}

/* ---- outcomes, lost slots, resumes ----------------------------------------------------------- */

static struct eheld *running_of(const struct ejob *j, char phase, uint32_t idx)
{
    const struct ejassign *a = j->assign;
    for (size_t i = 0; a && i < a->n_held; i++)
        if (a->held[i]->running && a->held[i]->phase == phase && a->held[i]->idx == idx)
            return a->held[i];
    return NULL;
}

void engine__assign_outcome(struct ejob *j, char phase, uint32_t idx, unsigned attempt)
{
    struct eheld *h = running_of(j, phase, idx);
    if (!h || h->attempt != attempt)
        return;
    h->running = false;
    h->checking = false;
    engine__kick(j); /* its next task, or free */
}

bool engine__assign_running(const struct ejob *j, char phase, uint32_t idx)
{
    return running_of(j, phase, idx) != NULL;
}

/*
 * A lost attempt's trace (invariant 5): its worker died before it wrote a record, so the
 * owner makes one in memory, with no outcome, never in ZooKeeper: the commit pipeline writes
 * its attempt row ("lost", commit_pg.c) once its attempt is superseded, as for a record a
 * dead worker left without an outcome. A worker that was only cut off (frozen, partitioned)
 * writes its record of the attempt later, alone (its key record is gone): run.c gives that
 * record the trace's row, so the attempt has one row, the worker's words in it.
 */
static void lost_row(struct ejob *j, const struct eheld *h)
{
    char name[200];
    taskmsg_run_name(name, sizeof(name), h->phase, h->idx, h->attempt, h->worker, 0);
    if (strmap_get(j->runs, name))
        return;
    size_t pos = 0;
    const char *other;
    while (strmap_next(j->runs, &pos, &other, NULL))
        if (taskmsg_run_same_delivery(name, other))
            return; /* its worker's own record is in: its row is the trace */
    struct eplan *p = plan_of(j, h->phase);
    struct erun *run = xcalloc(1, sizeof(*run));
    run->j = j;
    run->name = xstrdup(name);
    run->phase = h->phase;
    run->idx = h->idx;
    run->attempt = h->attempt;
    run->started = true;
    run->deleted = true; /* nothing in ZooKeeper to delete */
    run->trace = true;
    char sess[32];
    snprintf(sess, sizeof(sess), "0x%llx", (unsigned long long)h->session);
    run->data = taskmsg_run_start(h->worker, sess, h->name,
                                  p && h->idx < p->n && p->t_start[h->idx] ? p->t_start[h->idx]
                                                                           : clock_wall_ms());
    strmap_put(j->runs, name, run);
}

/* The runs/ listing after the sync: a dead slot's task with no record of its attempt is
   LOST; one with a record is stepped by it (run.c reads it). */
static void lost_listed(int rc, char *const *names, size_t n, void *arg)
{
    struct ejob *j = arg;
    struct ejassign *a = j->assign;
    if (!engine__job_alive(j) || !a || j->own != EJ_ACTIVE) {
        for (size_t i = 0; a && i < a->n_held; i++)
            a->held[i]->checking = false; /* looked at again once ACTIVE */
        engine__job_unref(j);
        return;
    }
    for (size_t i = 0; i < a->n_held; i++) {
        struct eheld *h = a->held[i];
        if (!h->dead || !h->running || !h->checking)
            continue;
        if (rc != 0 && rc != DRV_ENOENT) {
            h->checking = false; /* looked at again on the next change of the workers */
            continue;
        }
        bool recorded = false;
        for (size_t k = 0; k < n && !recorded; k++) {
            char ph;
            uint32_t idx;
            unsigned att;
            recorded = taskmsg_run_name_parse(names[k], &ph, &idx, &att) == 0 && ph == h->phase &&
                       idx == h->idx && att == h->attempt;
        }
        if (recorded)
            continue; /* its outcome steps it (run.c) */
        struct eplan *p = plan_of(j, h->phase);
        h->running = false;
        h->checking = false;
        if (p) { /* its worker would have deleted it with the outcome */
            XGROW(a->keydel, a->cap_keydel, a->n_keydel + 1);
            a->keydel[a->n_keydel++] = key_path(j, p, h->idx, h->attempt);
        }
        if (p)
            lost_row(j, h);
        if (p && p == j->cur && h->idx < p->n && p->recs[h->idx].attempt == h->attempt) {
            log_warn(MOD, "event=task-lost job=%s task=%s attempt=%u slot=%s", j->id,
                     p->plan->tasks[h->idx].id, h->attempt, h->name);
            engine__task_event(j, p, h->idx, ENGINE_TEV_LOST);
        }
    }
    engine__kick(j);
    engine__job_unref(j);
}

static void lost_synced(int rc, void *arg)
{
    struct ejob *j = arg;
    if (engine__job_alive(j)) {
        char path[256];
        zkpath_job_runs(path, sizeof(path), j->id);
        engine__job_ref(j);
        coord_children(j->e->zk, path, lost_listed, j);
    }
    engine__job_unref(j);
}

/* Some of j's slots died with their worker's session: after a sync (an outcome written
   before the end is then seen), list runs/. */
static void lost_check(struct ejob *j)
{
    struct ejassign *a = j->assign;
    bool any = false;
    for (size_t i = 0; a && i < a->n_held; i++) {
        struct eheld *h = a->held[i];
        if (h->dead && h->running && !h->busy && !h->checking) {
            h->checking = true;
            any = true;
        }
    }
    if (!any || !engine__job_alive(j))
        return;
    char path[256];
    zkpath_job_runs(path, sizeof(path), j->id);
    engine__job_ref(j);
    coord_sync(j->e->zk, path, lost_synced, j);
}

void engine__assign_adopt(struct ejob *j, const char *slot, int version, char phase, uint32_t idx,
                          unsigned attempt)
{
    char *q = zkpath_queue(NULL, 0, j->tenant, j->cls);
    struct eheld *h = held_new(q, slot);
    free(q);
    h->version = version;
    h->running = true;
    h->phase = phase;
    h->idx = idx;
    h->attempt = attempt;
    h->turns = 1;
    held_add(j, h);
    struct eassign *na = j->e->assign;
    if (na->have_workers && !worker_live(na, h->worker, h->session)) {
        h->dead = true;
        lost_check(j);
    }
    log_info(MOD, "event=slot-adopted job=%s slot=%s version=%d", j->id, slot, version);
    assign_check(j);
}

void engine__assign_resumed(struct ejob *j)
{
    lost_check(j); /* slots adopted dead while it loaded */
}

void engine__assign_job_gone(struct ejob *j)
{
    struct ejassign *a = j->assign;
    if (!a)
        return;
    pool_unwant(j);
    while (a->n_held)
        held_drop(j, a->held[a->n_held - 1]);
    for (size_t i = 0; i < a->n_round; i++) {
        if (a->round[i].kind == G_TAKE && a->round[i].h)
            held_free(a->round[i].h);
        free(a->round[i].offer);
        free(a->round[i].key);
    }
    for (size_t i = 0; i < a->n_keydel; i++)
        free(a->keydel[i]);
    free(a->round);
    free(a->keydel);
    free(a->held);
    free(a);
    j->assign = NULL;
}

size_t engine__assign_waiting(const struct engine *e, const char *tenant, const char *cls)
{
    char key[300];
    snprintf(key, sizeof(key), "%s/%s", tenant, cls);
    const struct epool *p = e->assign ? strmap_get(e->assign->pools, key) : NULL;
    return p ? p->n_want : 0;
}
