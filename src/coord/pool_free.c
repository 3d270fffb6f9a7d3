/*
 * pool_free: droverd's half of giving a host of an operator's shared ssh-pool pool back
 * (docs/security.md "Pools of existing hosts", docs/zookeeper-tree.md "pools").
 *
 * Why droverd. ZooKeeper checks a delete against the parent's ACL, not the child's: a
 * tenant whose workers could delete their own claims in pools/_operator/<pool>/claims
 * could delete every other granted tenant's too, and then claim a host another tenant's
 * node still uses. So granted tenants get read and create on a shared pool's claims
 * directory, never delete (acl.c), and no tenant deletes any claim there. The ssh-pool
 * plugin releases a claim instead by writing "state": "released" into the claim (only the
 * claim's own tenant's workers may set it: its ACL) and, in the same multi-op, creating
 * a marker pools/_operator/<pool>/released/<address>:<port>-<sequence> (create only, no
 * delete either). droverd, trusted with everything, deletes the claim. The marker only
 * says "look at this claim": what frees the host is the claim's own data, so a marker a
 * hostile tenant makes for another tenant's claim frees nothing (it is deleted and
 * logged, event=pool-release-forged). Markers are sequential so that a forged one cannot
 * hold a name that a real release then needs (its create would fail and the release
 * with it).
 *
 * For each pool of zookeeper.pool_grants, a re-arming child watcher on its released
 * directory (coord_watch_children: a first listing at start, so markers left while no
 * droverd ran are handled then; another after every change and after a new session).
 * Each marker, up to PF_PARALLEL at once:
 *
 *   get claims/<host>
 *     no such znode           -> delete the marker                  (freed already)
 *     "state": "released"     -> multi: delete the claim at the version read,
 *                                delete the marker                  event=pool-claim-freed
 *     anything else           -> delete the marker                  event=pool-release-forged
 *   a marker name that is not "<host>-<10 digits>" -> delete it     event=pool-marker-bad
 *
 * Every droverd does this, and races between them are harmless: the version check means
 * a claim is deleted only in the state read, and NONODE (another node did it first) ends
 * an item as done. BADVERSION, a lost answer or a session change makes the pass end with
 * a retry: after a backoff the directory is listed again.
 *
 * Pool states (one machine per pool, loop thread only):
 *
 *   IDLE --listing from the watcher--> WORKING --all items done, none to retry--> IDLE
 *                                      ^  |  ^
 *             a pending listing (when  |  |  | listed (or a pending listing)
 *             the pass ends, at once   |  |  |
 *             while WAITING)           |  v  |
 *                                    WAITING --timer--> LISTING --listing failed--> WAITING
 *                 (an item to retry: backoff; after PF_MAX_TRIES, IDLE, event=pool-release-stuck)
 *
 *   A listing the watcher gives while the pool is not IDLE is kept as pending (the newest
 *   one replaces an older one) and worked next: when the pass ends (WORKING), at once
 *   (WAITING: the timer is cancelled), or after the listing in flight (LISTING).
 *
 * Transitions: pf_listed (the watcher's callback) IDLE -> WORKING, WAITING -> WORKING,
 * else keeps pending; pass_end WORKING -> WORKING (pending) / WAITING / IDLE; pf_timer
 * WAITING -> LISTING; pf_relisted LISTING -> WORKING / WAITING / IDLE.
 *
 * Invariants (pf_check, under DROVER_CHECKS):
 *   1. names != NULL exactly in WORKING, and next <= n;
 *   2. 0 <= inflight <= PF_PARALLEL, and inflight == 0 outside WORKING;
 *   3. timer != NULL exactly in WAITING;
 *   4. j->ops counts every request of the janitor in flight; once the owner freed the
 *      janitor (dead), nothing new is sent and the last answer frees it.
 *
 * Cost: per release one get and one multi-op (two deletes) per droverd that sees the
 * marker, plus one listing per change of the directory. Latency: one watch round trip
 * after the plugin's multi-op (the event, a listing, a get, the multi-op).
 *
 * Threads: loop thread only, as every coord object.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "coord.h"
#include "coord_int.h"
#include "log.h"
#include "xalloc.h"
#include "zkpath.h"

#define MOD "coord"
#define PF_PARALLEL 8
#define PF_MAX_TRIES 10 /* then wait for the next change or start */

enum pf_state { PF_IDLE, PF_WORKING, PF_WAITING, PF_LISTING };

struct pf_pool {
    struct coord_pool_janitor *j;
    char name[COORD__POOL_NAME + 1];
    char *released; /* pools/_operator/<pool>/released */
    char *claims;   /* pools/_operator/<pool>/claims */
    struct coord_watcher *w;
    enum pf_state st;
    char **names; /* this pass's markers */
    size_t n, next;
    int inflight;
    char **pending; /* the watcher's newest listing, while busy */
    size_t n_pending;
    bool has_pending;
    bool retry; /* an item of this pass failed in a way worth trying again */
    unsigned tries;
    struct event *timer;
};

struct coord_pool_janitor {
    struct coord_session *s;
    struct pf_pool *pools;
    int n;
    int ops;
    bool dead;
};

enum pf_kind { PF_GONE, PF_FREED, PF_FORGED, PF_BAD };

struct pf_item {
    struct pf_pool *p;
    char *marker;
    char host[COORD__POOL_NAME * 2 + 1];
    enum pf_kind kind;
    char tenant[128]; /* the claim's, for the log */
    char state[32];
};

static void pf_check(const struct pf_pool *p)
{
#if DRV_CHECKS
    COORD__ASSERT((p->names != NULL) == (p->st == PF_WORKING));
    COORD__ASSERT(p->next <= p->n);
    COORD__ASSERT(p->inflight >= 0 && p->inflight <= PF_PARALLEL);
    COORD__ASSERT(p->st == PF_WORKING || p->inflight == 0);
    COORD__ASSERT((p->timer != NULL) == (p->st == PF_WAITING));
    COORD__ASSERT(p->j->ops >= 0);
#else
    (void)p;
#endif
}

/* ---- pure helpers (coord_int.h) ----------------------------------------------------- */

int coord__pool_marker_host(const char *marker, char *host, size_t n)
{
    size_t len = marker ? strlen(marker) : 0;
    if (len < 12 || marker[len - 11] != '-' || coord__seq_of(marker) < 0)
        return DRV_EINVAL;
    size_t hl = len - 11;
    if (hl >= n)
        return DRV_EINVAL;
    for (size_t i = 0; i < hl; i++) {
        char c = marker[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-' || c == ':'))
            return DRV_EINVAL;
    }
    if ((hl == 1 && marker[0] == '.') || (hl == 2 && marker[0] == '.' && marker[1] == '.'))
        return DRV_EINVAL;
    memcpy(host, marker, hl);
    host[hl] = '\0';
    return 0;
}

bool coord__pool_claim_released(const char *data, char *tenant, size_t tn, char *state, size_t sn)
{
    json_t *j = data ? json_loads(data, 0, NULL) : NULL;
    const char *t = json_string_value(json_object_get(j, "tenant"));
    const char *st = json_string_value(json_object_get(j, "state"));
    if (tenant && tn)
        snprintf(tenant, tn, "%s", t ? t : "");
    if (state && sn)
        snprintf(state, sn, "%s", st ? st : "");
    bool released = st && strcmp(st, "released") == 0;
    json_decref(j);
    return released;
}

/* ---- the machine ---------------------------------------------------------------------- */

static void free_names(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static char **copy_names(char *const *names, size_t n)
{
    char **v = xcalloc(n ? n : 1, sizeof(char *));
    for (size_t i = 0; i < n; i++)
        v[i] = xstrdup(names[i]);
    return v;
}

static void janitor_release(struct coord_pool_janitor *j)
{
    for (int i = 0; i < j->n; i++) {
        struct pf_pool *p = &j->pools[i];
        free_names(p->names, p->n);
        if (p->has_pending)
            free_names(p->pending, p->n_pending);
        free(p->released);
        free(p->claims);
    }
    free(j->pools);
    free(j);
}

/* A request of the janitor answered: false when the janitor is gone (freed on the last). */
static bool op_back(struct coord_pool_janitor *j)
{
    j->ops--;
    if (!j->dead)
        return true;
    if (j->ops == 0)
        janitor_release(j);
    return false;
}

static void pump(struct pf_pool *p);
static void start_pass(struct pf_pool *p, char **names, size_t n);

static void item_end(struct pf_item *it, bool retry)
{
    struct pf_pool *p = it->p;
    free(it->marker);
    free(it);
    p->inflight--;
    if (retry)
        p->retry = true;
    pump(p);
}

static void item_deleted(struct coord__op *op)
{
    struct pf_item *it = op->owner;
    struct pf_pool *p = it->p;
    if (!op_back(p->j)) {
        free(it->marker);
        free(it);
        return;
    }
    int zrc = op->rc;
    if (zrc != ZOK && op->nops > 0) {
        int i = coord__multi_failed(op);
        if (i >= 0)
            zrc = op->results[i].err;
    }
    /* The claim's tenant and state and the marker's name are a tenant's writing: quoted. */
    char qm[300], qt[300], qs[100];
    if (zrc == ZOK) {
        if (it->kind == PF_FREED) {
            log_info(MOD, "event=pool-claim-freed pool=_operator/%s host=%s tenant=%s", p->name,
                     it->host, log_quote(it->tenant, qt, sizeof(qt)));
        } else if (it->kind == PF_FORGED) {
            log_warn(MOD,
                     "event=pool-release-forged pool=_operator/%s host=%s marker=%s "
                     "claim_tenant=%s claim_state=%s",
                     p->name, it->host, log_quote(it->marker, qm, sizeof(qm)),
                     log_quote(it->tenant, qt, sizeof(qt)), log_quote(it->state, qs, sizeof(qs)));
        } else if (it->kind == PF_BAD) {
            log_warn(MOD, "event=pool-marker-bad pool=_operator/%s marker=%s", p->name,
                     log_quote(it->marker, qm, sizeof(qm)));
        }
        item_end(it, false);
        return;
    }
    if (zrc == ZNONODE) {
        /* Another droverd did it first (or the claim went meanwhile: look again). */
        item_end(it, it->kind == PF_FREED);
        return;
    }
    log_warn(MOD, "event=pool-release-retry pool=_operator/%s marker=%s zrc=%d", p->name,
             log_quote(it->marker, qm, sizeof(qm)), zrc);
    item_end(it, true);
}

/* Delete the marker, and with kind PF_FREED the claim at version, in one multi-op. */
static void item_delete(struct pf_item *it, int version)
{
    struct pf_pool *p = it->p;
    char *marker = xasprintf("%s/%s", p->released, it->marker);
    struct coord__op *op = coord__op_new(p->j->s, item_deleted, it);
    p->j->ops++;
    if (it->kind == PF_FREED) {
        char *claim = xasprintf("%s/%s", p->claims, it->host);
        coord__multi_init(op, 2);
        coord__mop_delete(op, 0, claim, version);
        coord__mop_delete(op, 1, marker, -1);
        coord__zk_multi(op);
        free(claim);
    } else {
        coord__zk_delete(op, marker, -1);
    }
    free(marker);
}

static void item_got(struct coord__op *op)
{
    struct pf_item *it = op->owner;
    if (!op_back(it->p->j)) {
        free(it->marker);
        free(it);
        return;
    }
    if (op->rc == ZNONODE) {
        it->kind = PF_GONE;
        item_delete(it, -1);
    } else if (op->rc == ZOK) {
        bool rel = coord__pool_claim_released(op->value, it->tenant, sizeof(it->tenant), it->state,
                                              sizeof(it->state));
        it->kind = rel ? PF_FREED : PF_FORGED;
        item_delete(it, op->stat.version);
    } else {
        char qm[300];
        log_warn(MOD, "event=pool-release-retry pool=_operator/%s marker=%s zrc=%d", it->p->name,
                 log_quote(it->marker, qm, sizeof(qm)), op->rc);
        item_end(it, true);
    }
}

static void item_start(struct pf_pool *p, const char *marker)
{
    struct pf_item *it = xcalloc(1, sizeof(*it));
    it->p = p;
    it->marker = xstrdup(marker);
    p->inflight++;
    if (coord__pool_marker_host(marker, it->host, sizeof(it->host)) != 0) {
        it->kind = PF_BAD;
        item_delete(it, -1);
        return;
    }
    char *claim = xasprintf("%s/%s", p->claims, it->host);
    p->j->ops++;
    coord__zk_get(coord__op_new(p->j->s, item_got, it), claim, false);
    free(claim);
}

static void pf_timer(void *owner);

static void pass_end(struct pf_pool *p)
{
    free_names(p->names, p->n);
    p->names = NULL;
    p->n = p->next = 0;
    bool retry = p->retry;
    p->retry = false;
    if (p->has_pending) {
        char **v = p->pending;
        size_t n = p->n_pending;
        p->pending = NULL;
        p->n_pending = 0;
        p->has_pending = false;
        start_pass(p, v, n);
        return;
    }
    if (retry && p->tries < PF_MAX_TRIES) {
        p->st = PF_WAITING;
        p->timer = coord__timer(p->j->s, coord__backoff_ms(p->j->s, p->tries++), pf_timer, p);
    } else {
        if (retry)
            log_warn(MOD, "event=pool-release-stuck pool=_operator/%s tries=%u", p->name, p->tries);
        p->st = PF_IDLE;
        p->tries = 0;
    }
    COORD__CHECK(pf_check, p);
}

static void pump(struct pf_pool *p)
{
    if (p->j->dead || p->st != PF_WORKING)
        return;
    while (p->inflight < PF_PARALLEL && p->next < p->n)
        item_start(p, p->names[p->next++]);
    COORD__CHECK(pf_check, p);
    if (p->next == p->n && p->inflight == 0)
        pass_end(p);
}

/* Takes names over. */
static void start_pass(struct pf_pool *p, char **names, size_t n)
{
    p->st = PF_WORKING;
    p->names = names;
    p->n = n;
    p->next = 0;
    pump(p);
}

static void pf_relisted(struct coord__op *op)
{
    struct pf_pool *p = op->owner;
    if (!op_back(p->j))
        return;
    if (op->rc == ZOK) {
        start_pass(p, copy_names(op->strv, (size_t)op->strc), (size_t)op->strc);
        return;
    }
    if (p->has_pending) { /* the watcher's listing is as good */
        p->st = PF_WORKING;
        p->names = xcalloc(1, sizeof(char *));
        p->n = 0;
        pass_end(p);
        return;
    }
    if (op->rc == ZNONODE) {
        p->st = PF_IDLE;
        p->tries = 0;
    } else {
        p->st = PF_WAITING;
        p->timer = coord__timer(p->j->s, coord__backoff_ms(p->j->s, p->tries++), pf_timer, p);
    }
    COORD__CHECK(pf_check, p);
}

static void pf_timer(void *owner)
{
    struct pf_pool *p = owner;
    p->timer = NULL;
    p->st = PF_LISTING;
    p->j->ops++;
    coord__zk_children(coord__op_new(p->j->s, pf_relisted, p), p->released, false);
}

static void pf_listed(int rc, char *const *names, size_t n, const struct coord_stat *st, void *arg)
{
    (void)st;
    struct pf_pool *p = arg;
    if (rc != 0 || p->j->dead)
        return; /* not made yet (DRV_ENOENT: the watcher waits for it), or retried by it */
    if (p->st == PF_IDLE) {
        start_pass(p, copy_names(names, n), n);
        return;
    }
    if (p->has_pending)
        free_names(p->pending, p->n_pending);
    p->pending = copy_names(names, n);
    p->n_pending = n;
    p->has_pending = true;
    if (p->st == PF_WAITING) { /* no need to wait for the timer: this listing is newer */
        coord__timer_cancel(p->timer);
        p->timer = NULL;
        p->st = PF_WORKING;
        p->names = xcalloc(1, sizeof(char *));
        p->n = 0;
        pass_end(p);
    }
}

struct coord_pool_janitor *coord_pool_janitor_new(struct coord_session *s, const char *grants)
{
    char pools[COORD__POOL_MAX][COORD__POOL_NAME + 1];
    int k = coord__pool_names(grants, pools, COORD__POOL_MAX);
    if (k <= 0)
        return NULL;
    struct coord_pool_janitor *j = xcalloc(1, sizeof(*j));
    j->s = s;
    j->pools = xcalloc((size_t)k, sizeof(*j->pools));
    j->n = k;
    for (int i = 0; i < k; i++) {
        struct pf_pool *p = &j->pools[i];
        p->j = j;
        snprintf(p->name, sizeof(p->name), "%s", pools[i]);
        char buf[512], *pool = xasprintf("_operator/%s", pools[i]);
        p->released = xstrdup(zkpath_pool_released(buf, sizeof(buf), pool));
        p->claims = xstrdup(zkpath_pool_claims(buf, sizeof(buf), pool));
        free(pool);
        p->w = coord_watch_children(s, p->released, pf_listed, p);
    }
    log_info(MOD, "event=pool-janitor-started pools=%d", k);
    return j;
}

void coord_pool_janitor_free(struct coord_pool_janitor *j)
{
    if (!j)
        return;
    for (int i = 0; i < j->n; i++) {
        struct pf_pool *p = &j->pools[i];
        coord_watcher_free(p->w);
        p->w = NULL;
        if (p->timer) {
            coord__timer_cancel(p->timer);
            p->timer = NULL;
        }
    }
    j->dead = true;
    if (j->ops == 0)
        janitor_release(j);
}
