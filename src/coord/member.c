/*
 * member: group membership (ephemeral znodes with JSON data) and group watches.
 *
 * A member is the ephemeral znode <group>/<id>. Joining creates it; a
 * connection loss retries the create, and ZNODEEXISTS is resolved by its
 * ephemeralOwner: ours means the lost create went through, another session's
 * means a previous incarnation of this id left it (it is deleted and
 * re-created). After an expiry the NEW_SESSION listener creates it again with
 * the latest data.
 *
 * A group watch lists the children with a watch and reads each child's data
 * with a watch, all pipelined; any event (join, leave, data change, new
 * session) starts one more refresh, coalesced while one is in flight.
 *
 * A refresh reports only a complete view. A child gone between the listing
 * and its read (ZNONODE) has left; one this session may not read (ZNOAUTH:
 * another tenant's worker, docs/zookeeper-tree.md "ACLs") is not in its view; any other failure (a
 * connection lost in the middle of the refresh) makes the whole refresh void: the callback does not
 * run, the last good view stands, and the refresh is retried with backoff. So the ring never sees a
 * member vanish that did not leave.
 *
 *   IDLE --event--> LISTING --listed--> READING --all read--> IDLE (callback)
 *                     |                    |
 *                     +--failed--+---------+--a read failed--> RETRY --backoff--> LISTING
 *
 * A checked watch (coord_group_watch_checked, droverd's view of the workers) also reads,
 * after a member's data, its ACL when its (czxid, named tenant) was not checked in the last
 * complete refresh, and says whether the ACL proves the tenant the data names (coord.h,
 * enum coord_member_proof): READING counts those reads too, and a failed one voids the
 * refresh. The cache is the last complete refresh's proofs, so a member is checked once.
 *
 * Objects are reference counted by their in-flight ops: free marks them dead,
 * and the last completion frees the memory. Loop thread only.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "coord_int.h"
#include "log.h"
#include "xalloc.h"

#define MOD "coord"

struct coord_member {
    struct coord_session *s;
    char *group;
    char *path;
    char *json;
    int refs;
    bool dead;
    bool joined_once;
    bool creating;
    unsigned tries;
    coord_done_cb done;
    void *arg;
};

static void member_unref(struct coord_member *m)
{
    if (--m->refs > 0)
        return;
    free(m->group);
    free(m->path);
    free(m->json);
    free(m);
}

static void member_create(struct coord_member *m);

static void member_first(struct coord_member *m, int rc)
{
    if (m->joined_once)
        return;
    m->joined_once = true;
    if (m->done)
        m->done(rc, m->arg);
}

static void member_retry(void *owner)
{
    struct coord_member *m = owner;
    if (!m->dead)
        member_create(m);
    member_unref(m);
}

static void member_later(struct coord_member *m)
{
    m->refs++;
    coord__timer(m->s, coord__backoff_ms(m->s, m->tries++), member_retry, m);
}

static void member_deleted_old(struct coord__op *op)
{
    struct coord_member *m = op->owner;
    if (!m->dead && op->rc == ZNOAUTH)
        member_later(m); /* a worker may not delete: wait until the old session ends */
    else if (!m->dead)
        member_create(m);
    member_unref(m);
}

static void member_checked(struct coord__op *op)
{
    struct coord_member *m = op->owner;
    if (m->dead) {
        member_unref(m);
        return;
    }
    if (op->rc == ZNONODE) {
        member_create(m);
    } else if (op->rc != ZOK) {
        member_later(m);
    } else if (op->stat.ephemeralOwner == coord_session_id(m->s)) {
        m->creating = false;
        log_info(MOD, "event=member-joined path=%s", m->path);
        member_first(m, 0);
    } else {
        log_warn(MOD, "event=member-replace-stale path=%s owner=0x%llx", m->path,
                 (unsigned long long)op->stat.ephemeralOwner);
        m->refs++;
        coord__zk_delete(coord__op_new(m->s, member_deleted_old, m), m->path, op->stat.version);
    }
    member_unref(m);
}

static void member_created(struct coord__op *op)
{
    struct coord_member *m = op->owner;
    if (m->dead) {
        member_unref(m);
        return;
    }
    if (op->rc == ZOK) {
        m->creating = false;
        m->tries = 0;
        log_info(MOD, "event=member-joined path=%s", m->path);
        member_first(m, 0);
    } else if (op->rc == ZNODEEXISTS) {
        m->refs++;
        coord__zk_exists(coord__op_new(m->s, member_checked, m), m->path, false);
    } else if (op->rc == ZNONODE) {
        /* The group vanished (an operator?): make it again. */
        coord_ensure_path(m->s, m->group, NULL, NULL);
        member_later(m);
    } else if ((coord__zrc(op->rc) == DRV_EAGAIN && op->rc != ZSESSIONEXPIRED &&
                op->rc != ZCLOSING) ||
               op->rc == ZNOAUTH) {
        /* NOAUTH: a worker whose tenant droverd has not let in yet (coord_acl_tenant_add). */
        if (op->rc == ZNOAUTH && m->tries == 0)
            log_warn(MOD, "event=member-join-refused path=%s zrc=%d", m->path, op->rc);
        member_later(m);
    } else if (op->rc == ZSESSIONEXPIRED || op->rc == ZCLOSING || op->rc == ZINVALIDSTATE) {
        /* The NEW_SESSION listener creates it again. */
        m->creating = false;
    } else {
        log_error(MOD, "event=member-join-failed path=%s zrc=%d", m->path, op->rc);
        m->creating = false;
        member_first(m, coord__zrc(op->rc));
    }
    member_unref(m);
}

static void member_create(struct coord_member *m)
{
    m->creating = true;
    m->refs++;
    coord__zk_create(coord__op_new(m->s, member_created, m), m->path, m->json, COORD_EPHEMERAL);
}

static void member_group_ready(int rc, void *arg)
{
    struct coord_member *m = arg;
    if (!m->dead)
        member_create(m);
    member_unref(m);
}

static void member_session(void *owner, enum coord__session_event ev)
{
    struct coord_member *m = owner;
    if (ev == COORD__NEW_SESSION && !m->dead && !m->creating)
        member_create(m);
}

struct coord_member *coord_member_join(struct coord_session *s, const char *group, const char *id,
                                       const char *json, coord_done_cb done, void *arg)
{
    struct coord_member *m = xcalloc(1, sizeof(*m));
    m->s = s;
    m->group = xstrdup(group);
    m->path = xasprintf("%s/%s", group, id);
    m->json = xstrdup(json && *json ? json : "{}");
    m->done = done;
    m->arg = arg;
    m->refs = 2; /* the caller's, and the ensure_path below */
    m->creating = true;
    coord__reg_listener_add(&s->reg, m, member_session);
    coord_ensure_path(s, group, member_group_ready, m);
    return m;
}

struct update {
    struct coord_member *m;
    coord_done_cb done;
    void *arg;
};

static void member_updated(struct coord__op *op)
{
    struct update *u = op->owner;
    if (op->rc != ZOK)
        log_warn(MOD, "event=member-update-failed path=%s zrc=%d", op->path, op->rc);
    if (u->done)
        u->done(coord__zrc(op->rc), u->arg);
    member_unref(u->m);
    free(u);
}

void coord_member_update(struct coord_member *m, const char *json, coord_done_cb done, void *arg)
{
    free(m->json);
    m->json = xstrdup(json);
    struct update *u = xcalloc(1, sizeof(*u));
    u->m = m;
    u->done = done;
    u->arg = arg;
    m->refs++;
    coord__zk_set(coord__op_new(m->s, member_updated, u), m->path, json, -1);
}

const char *coord_member_path(const struct coord_member *m)
{
    return m->path;
}

void coord_member_leave(struct coord_member *m)
{
    if (!m)
        return;
    m->dead = true;
    coord__reg_listener_remove(&m->s->reg, m);
    /* Sent now, so a close of the session right after still comes behind it. */
    coord__zk_delete(coord__op_new(m->s, NULL, NULL), m->path, -1);
    log_info(MOD, "event=member-leave path=%s", m->path);
    member_unref(m);
}

/* ---- group watch ------------------------------------------------------- */

/* A member's proof as last checked: (id, czxid, tenant named) -> proof. */
struct group_proof {
    char *id, *tenant;
    int64_t czxid;
    enum coord_member_proof proof;
};

struct coord_group {
    struct coord_session *s;
    char *path;
    char *field; /* coord_group_watch_checked: the data's field naming the tenant, or NULL */
    coord_group_cb cb;
    void *arg;
    int refs;
    bool dead;
    bool busy;   /* a refresh is in flight */
    bool again;  /* an event came during it */
    bool failed; /* a read of the refresh in flight failed: it is void */
    unsigned tries;
    /* the refresh in flight */
    size_t n, pending;
    char **ids;
    char **data;
    struct group_proof *proofs; /* n of them, with field: this refresh's */
    /* with field: the last complete refresh's proofs (the cache) */
    struct group_proof *known;
    size_t n_known;
};

static void proofs_free(struct group_proof *p, size_t n)
{
    for (size_t i = 0; p && i < n; i++) {
        free(p[i].id);
        free(p[i].tenant);
    }
    free(p);
}

static void group_unref(struct coord_group *g)
{
    if (--g->refs > 0)
        return;
    proofs_free(g->known, g->n_known);
    free(g->field);
    free(g->path);
    free(g);
}

static void group_refresh(struct coord_group *g);

static void group_clear(struct coord_group *g)
{
    for (size_t i = 0; i < g->n; i++) {
        free(g->ids[i]);
        free(g->data[i]);
    }
    FREE_NULL(g->ids);
    FREE_NULL(g->data);
    proofs_free(g->proofs, g->n);
    g->proofs = NULL;
    g->n = 0;
}

static int cmp_info(const void *a, const void *b)
{
    return strcmp(((const struct coord_member_info *)a)->id,
                  ((const struct coord_member_info *)b)->id);
}

static void group_later(struct coord_group *g);

static void group_finish(struct coord_group *g)
{
    bool failed = g->failed;
    if (!g->dead && !failed) {
        struct coord_member_info *mi = xcalloc(g->n ? g->n : 1, sizeof(*mi));
        size_t k = 0;
        for (size_t i = 0; i < g->n; i++)
            if (g->data[i]) /* NULL: gone between the list and the read: it left */
                mi[k++] = (struct coord_member_info){.id = g->ids[i],
                                                     .json = g->data[i],
                                                     .proof = g->proofs ? g->proofs[i].proof
                                                                        : COORD_MEMBER_UNCHECKED};
        qsort(mi, k, sizeof(*mi), cmp_info);
        g->tries = 0;
        g->cb(mi, k, g->arg);
        free(mi);
        if (g->proofs) { /* this view's proofs are the next refresh's cache */
            proofs_free(g->known, g->n_known);
            g->known = g->proofs;
            g->n_known = g->n;
            g->proofs = NULL;
        }
    }
    group_clear(g);
    g->busy = false;
    g->failed = false;
    if (g->dead)
        return;
    if (failed) {
        /* Keep the last good view; look again a little later. */
        log_info(MOD, "event=group-refresh-incomplete path=%s", g->path);
        g->again = false;
        group_later(g);
    } else if (g->again) {
        g->again = false;
        group_refresh(g);
    }
}

/* The member's ACL, read by droverd: proven when it grants WRITE to the exact worker id of
   the tenant its data names (coord.h, enum coord_member_proof). */
static void group_acl_got(struct coord__op *op)
{
    struct coord_group *g = op->owner;
    size_t i = (size_t)op->tag;
    if (i < g->n && g->proofs) {
        struct group_proof *p = &g->proofs[i];
        char id[COORD_ACL_MAX_GRANT_ID + 1];
        if (op->rc == ZOK || op->rc == ZNOAUTH) { /* NOAUTH: made to hide from droverd */
            bool ok = op->rc == ZOK && coord__acl_worker_id(g->s, p->tenant, id, sizeof(id)) &&
                      coord__acl_strv_writer(op->strv, op->strc, id);
            p->proof = ok ? COORD_MEMBER_PROVEN : COORD_MEMBER_UNPROVEN;
            if (!ok)
                log_warn(MOD, "event=member-unproven path=%s/%s tenant=%s", g->path, p->id,
                         p->tenant);
        } else if (op->rc == ZNONODE) {
            FREE_NULL(g->data[i]); /* left meanwhile */
        } else {
            g->failed = true;
        }
    }
    if (--g->pending == 0)
        group_finish(g);
    group_unref(g);
}

/* With field: the proof of member i, from the cache or from its ACL (pending one more). */
static void group_check(struct coord_group *g, size_t i, int64_t czxid)
{
    struct group_proof *p = &g->proofs[i];
    p->id = xstrdup(g->ids[i]);
    p->czxid = czxid;
    json_t *d = json_loads(g->data[i], 0, NULL);
    const char *t = json_string_value(json_object_get(d, g->field));
    p->tenant = xstrdup(t ? t : "");
    json_decref(d);
    if (!coord__acl_can_derive(g->s)) {
        p->proof = COORD_MEMBER_UNCHECKED; /* no credentials, no fleet key: nothing to check */
        return;
    }
    if (!*p->tenant) {
        p->proof = COORD_MEMBER_UNPROVEN;
        return;
    }
    for (size_t k = 0; k < g->n_known; k++) {
        const struct group_proof *q = &g->known[k];
        if (strcmp(q->id, p->id) == 0 && q->czxid == czxid && strcmp(q->tenant, p->tenant) == 0 &&
            q->proof != COORD_MEMBER_UNCHECKED) {
            p->proof = q->proof;
            return;
        }
    }
    char *path = xasprintf("%s/%s", g->path, g->ids[i]);
    struct coord__op *op = coord__op_new(g->s, group_acl_got, g);
    op->tag = (intptr_t)i;
    g->refs++;
    g->pending++;
    coord__zk_get_acl(op, path);
    free(path);
}

static void group_got(struct coord__op *op)
{
    struct coord_group *g = op->owner;
    size_t i = (size_t)op->tag;
    if (op->rc == ZOK && i < g->n) {
        g->data[i] = xstrdup(op->value);
        if (g->proofs)
            group_check(g, i, op->has_stat ? op->stat.czxid : -1);
    } else if (op->rc != ZNONODE && op->rc != ZNOAUTH)
        g->failed = true; /* NOAUTH: another tenant's worker, not this reader's to see */
    if (--g->pending == 0)
        group_finish(g);
    group_unref(g);
}

static void group_event(void *owner, int type, const char *path)
{
    struct coord_group *g = owner;
    if (g->dead)
        return;
    if (g->busy)
        g->again = true;
    else
        group_refresh(g);
}

static void group_retry(void *owner)
{
    struct coord_group *g = owner;
    if (!g->dead && !g->busy)
        group_refresh(g);
    group_unref(g);
}

static void group_later(struct coord_group *g)
{
    g->refs++;
    coord__timer(g->s, coord__backoff_ms(g->s, g->tries++), group_retry, g);
}

static void group_listed(struct coord__op *op)
{
    struct coord_group *g = op->owner;
    if (g->dead) {
        g->busy = false;
        group_unref(g);
        return;
    }
    if (op->rc != ZOK) {
        g->busy = false;
        if (op->rc == ZNONODE) {
            coord_ensure_path(g->s, g->path, NULL, NULL);
        }
        if (!coord__zrc_session_gone(op->rc))
            group_later(g);
        else if (g->again)
            group_refresh(g); /* a new session came while this listing was in flight */
        group_unref(g);
        return;
    }
    g->n = (size_t)op->strc;
    g->ids = xcalloc(g->n ? g->n : 1, sizeof(char *));
    g->data = xcalloc(g->n ? g->n : 1, sizeof(char *));
    if (g->field)
        g->proofs = xcalloc(g->n ? g->n : 1, sizeof(*g->proofs));
    g->pending = g->n;
    g->failed = false;
    coord__reg_watch_remove(&g->s->reg, g);
    coord__reg_watch_add(&g->s->reg, g->path, COORD__WM_ANY, g, group_event);
    for (size_t i = 0; i < g->n; i++) {
        g->ids[i] = xstrdup(op->strv[i]);
        char *p = xasprintf("%s/%s", g->path, op->strv[i]);
        coord__reg_watch_add(&g->s->reg, p, COORD__WM_ANY, g, group_event);
        struct coord__op *get = coord__op_new(g->s, group_got, g);
        get->tag = (intptr_t)i;
        g->refs++;
        coord__zk_get(get, p, true);
        free(p);
    }
    if (g->n == 0)
        group_finish(g);
    group_unref(g);
}

static void group_refresh(struct coord_group *g)
{
    g->busy = true;
    g->again = false;
    g->refs++;
    coord__zk_children(coord__op_new(g->s, group_listed, g), g->path, true);
}

static void group_session(void *owner, enum coord__session_event ev)
{
    if (ev == COORD__NEW_SESSION)
        group_event(owner, 0, NULL);
}

static void group_ready(int rc, void *arg)
{
    struct coord_group *g = arg;
    if (!g->dead)
        group_refresh(g);
    group_unref(g);
}

struct coord_group *coord_group_watch(struct coord_session *s, const char *group, coord_group_cb cb,
                                      void *arg)
{
    return coord_group_watch_checked(s, group, NULL, cb, arg);
}

struct coord_group *coord_group_watch_checked(struct coord_session *s, const char *group,
                                              const char *field, coord_group_cb cb, void *arg)
{
    struct coord_group *g = xcalloc(1, sizeof(*g));
    g->field = field ? xstrdup(field) : NULL;
    g->s = s;
    g->path = xstrdup(group);
    g->cb = cb;
    g->arg = arg;
    g->refs = 2;
    g->busy = true;
    coord__reg_listener_add(&s->reg, g, group_session);
    coord_ensure_path(s, group, group_ready, g);
    return g;
}

void coord_group_free(struct coord_group *g)
{
    if (!g)
        return;
    g->dead = true;
    coord__reg_listener_remove(&g->s->reg, g);
    coord__reg_watch_remove(&g->s->reg, g);
    group_unref(g);
}
