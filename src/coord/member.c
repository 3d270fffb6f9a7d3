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
 * A group watch keeps each member's data as last read with a watch (the cache) and
 * reads only what changed: the children's watch (a join or a leave) lists the group and
 * reads the members not in the cache; a member's data watch (an update) reads that
 * member alone; a new session (every watch gone) lists and reads all; so does
 * coord_group_resync with reread (the owner's periodic check against lost watches;
 * without reread it lists and reads the new members only). So a join costs
 * each watcher two requests, not one per member (issue 37: a fleet of W forming cost
 * O(W^2) reads per watcher before). Events that come while a refresh is in flight are
 * coalesced into one more.
 *
 * A refresh reports only a complete view. A child gone between the listing
 * and its read (ZNONODE) has left; one this session may not read (ZNOAUTH:
 * another tenant's worker, docs/zookeeper-tree.md "ACLs") is not in its view; any other failure (a
 * connection lost in the middle of the refresh) makes the whole refresh void: the callback does not
 * run, the last good view stands, and the refresh is retried with backoff. So the ring never sees a
 * member vanish that did not leave.
 *
 *   IDLE --children/new session--> LISTING --listed--> READING --all read--> IDLE (callback)
 *     \--a member's data changed-------------------------^  |
 *                     |                                      |
 *                     +--failed--+---------------------------+--a read failed--> RETRY
 *                                                              --backoff--> LISTING
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

/*
 * A member as last read. valid: its data was read with a watch that has not fired since,
 * so it is what the server holds (the client library sets the watch again after a
 * connection loss; a new session voids every entry). hidden: this session may not read it
 * (NOAUTH: another tenant's worker), not in the view, not read again while it stays listed.
 */
struct gmember {
    char *id;
    char *data; /* NULL until read, or hidden */
    bool valid, hidden, gone;
    int64_t czxid, session;
    struct coord__watch *reg; /* its registration in the session's registry */
    /* coord_group_watch_checked: the proof of (czxid, tenant) as last checked */
    char *tenant;
    int64_t proof_czxid;
    enum coord_member_proof proof;
    bool proof_known;
};

struct coord_group {
    struct coord_session *s;
    char *path;
    char *field; /* coord_group_watch_checked: the data's field naming the tenant, or NULL */
    coord_group_cb cb;
    void *arg;
    int refs;
    bool dead;
    bool busy;      /* a refresh is in flight */
    bool again;     /* an event came during it */
    bool failed;    /* a read of the refresh in flight failed: it is void */
    bool need_list; /* the children changed (or nothing is known): list before reading */
    unsigned tries;
    size_t pending;
    struct gmember *m; /* the cache, sorted by id */
    size_t n;
    struct coord__watch *dir_reg;
};

static void gmember_clear(struct coord_group *g, struct gmember *e)
{
    if (e->reg)
        coord__reg_watch_del(&g->s->reg, e->reg);
    free(e->id);
    free(e->data);
    free(e->tenant);
    memset(e, 0, sizeof(*e));
}

static void group_unref(struct coord_group *g)
{
    if (--g->refs > 0)
        return;
    for (size_t i = 0; i < g->n; i++) {
        free(g->m[i].id);
        free(g->m[i].data);
        free(g->m[i].tenant);
    }
    free(g->m);
    free(g->field);
    free(g->path);
    free(g);
}

/*
 * Invariants (group_check_inv, DROVER_CHECKS): G1. the cache is sorted by id, each id
 * once; G2. every entry has its registration; G3. while no refresh is in flight nothing
 * is pending; G4. a valid entry is either hidden or has data.
 */
static void group_check_inv(const struct coord_group *g)
{
#if DRV_CHECKS
    for (size_t i = 0; i < g->n; i++) {
        COORD__ASSERT(g->m[i].id && g->m[i].reg);                        /* G2 */
        COORD__ASSERT(i == 0 || strcmp(g->m[i - 1].id, g->m[i].id) < 0); /* G1 */
        COORD__ASSERT(!g->m[i].valid || g->m[i].hidden || g->m[i].data); /* G4 */
    }
    COORD__ASSERT(g->busy || g->pending == 0); /* G3 */
#else
    (void)g;
#endif
}

static struct gmember *group_find(struct coord_group *g, const char *id)
{
    size_t lo = 0, hi = g->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(g->m[mid].id, id);
        if (c == 0)
            return &g->m[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static void group_refresh(struct coord_group *g);
static void group_later(struct coord_group *g);

static void group_finish(struct coord_group *g)
{
    bool failed = g->failed;
    /* Members gone between the listing and their read have left. */
    size_t k = 0;
    for (size_t i = 0; i < g->n; i++) {
        if (g->m[i].gone) {
            gmember_clear(g, &g->m[i]);
            continue;
        }
        g->m[k++] = g->m[i];
    }
    g->n = k;
    if (!g->dead && !failed) {
        struct coord_member_info *mi = xcalloc(g->n ? g->n : 1, sizeof(*mi));
        k = 0;
        for (size_t i = 0; i < g->n; i++) {
            const struct gmember *e = &g->m[i];
            if (e->hidden || !e->data)
                continue;
            mi[k++] = (struct coord_member_info){
                .id = e->id,
                .json = e->data,
                .proof = g->field && e->proof_known ? e->proof : COORD_MEMBER_UNCHECKED,
                .czxid = e->czxid,
                .session = e->session,
            };
        }
        g->tries = 0;
        COORD__CHECK(group_check_inv, g);
        g->cb(mi, k, g->arg); /* sorted: the cache is */
        free(mi);
    }
    g->busy = false;
    g->failed = false;
    if (g->dead)
        return;
    if (failed) {
        /* Keep the last good view; look again a little later (listing too). */
        log_info(MOD, "event=group-refresh-incomplete path=%s", g->path);
        g->again = false;
        g->need_list = true;
        group_later(g);
    } else if (g->again) {
        g->again = false;
        group_refresh(g);
    }
}

static void group_done_one(struct coord_group *g)
{
    if (--g->pending == 0)
        group_finish(g);
}

/* The member's ACL, read by droverd: proven when it grants WRITE to the exact worker id of
   the tenant its data names (coord.h, enum coord_member_proof). */
static void group_acl_got(struct coord__op *op)
{
    struct coord_group *g = op->owner;
    size_t i = (size_t)op->tag;
    if (i < g->n && !g->dead) {
        struct gmember *e = &g->m[i];
        char id[COORD_ACL_MAX_GRANT_ID + 1];
        if (op->rc == ZOK || op->rc == ZNOAUTH) { /* NOAUTH: made to hide from droverd */
            bool ok = op->rc == ZOK && coord__acl_worker_id(g->s, e->tenant, id, sizeof(id)) &&
                      coord__acl_strv_writer(op->strv, op->strc, id);
            e->proof = ok ? COORD_MEMBER_PROVEN : COORD_MEMBER_UNPROVEN;
            e->proof_known = true;
            if (!ok)
                log_warn(MOD, "event=member-unproven path=%s/%s tenant=%s", g->path, e->id,
                         e->tenant);
        } else if (op->rc == ZNONODE) {
            e->gone = true; /* left meanwhile */
        } else {
            e->valid = false;
            g->failed = true;
        }
    }
    if (!g->dead)
        group_done_one(g);
    group_unref(g);
}

/* With field: member i's proof, kept while its czxid and named tenant stay, else read from
   its ACL (one more pending). */
static void group_prove(struct coord_group *g, size_t i)
{
    struct gmember *e = &g->m[i];
    json_t *d = json_loads(e->data, 0, NULL);
    const char *t = json_string_value(json_object_get(d, g->field));
    t = t ? t : "";
    bool same = e->proof_known && e->tenant && strcmp(e->tenant, t) == 0 &&
                e->proof_czxid == e->czxid && e->proof != COORD_MEMBER_UNCHECKED;
    free(e->tenant);
    e->tenant = xstrdup(t);
    json_decref(d);
    if (same)
        return;
    e->proof_czxid = e->czxid;
    e->proof_known = true;
    if (!coord__acl_can_derive(g->s)) {
        e->proof = COORD_MEMBER_UNCHECKED; /* no credentials, no fleet key: nothing to check */
        return;
    }
    if (!*e->tenant) {
        e->proof = COORD_MEMBER_UNPROVEN;
        return;
    }
    e->proof_known = false;
    char *path = xasprintf("%s/%s", g->path, e->id);
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
    if (g->dead) {
        group_unref(g);
        return;
    }
    if (i >= g->n) { /* cannot happen: the cache changes only between refreshes */
        g->failed = true;
        group_done_one(g);
        group_unref(g);
        return;
    }
    struct gmember *e = &g->m[i];
    if (op->rc == ZOK) {
        free(e->data);
        e->data = xstrdup(op->value);
        e->czxid = op->has_stat ? op->stat.czxid : -1;
        e->session = op->has_stat ? op->stat.ephemeralOwner : 0;
        e->hidden = false;
        e->valid = true;
        if (g->field)
            group_prove(g, i);
    } else if (op->rc == ZNONODE) {
        e->gone = true; /* gone between the listing and its read: it left */
    } else if (op->rc == ZNOAUTH) {
        e->hidden = true; /* another tenant's worker, not this reader's to see */
        e->valid = true;
        FREE_NULL(e->data);
    } else {
        g->failed = true;
    }
    group_done_one(g);
    group_unref(g);
}

/* Read every member whose data is not known (or whose watch fired): the refresh's reads. */
static void group_read_stale(struct coord_group *g)
{
    g->pending = 1; /* held while the reads are issued */
    for (size_t i = 0; i < g->n; i++) {
        struct gmember *e = &g->m[i];
        if (e->valid || e->gone)
            continue;
        char *p = xasprintf("%s/%s", g->path, e->id);
        struct coord__op *get = coord__op_new(g->s, group_got, g);
        get->tag = (intptr_t)i;
        g->refs++;
        g->pending++;
        coord__zk_get(get, p, true);
        free(p);
    }
    group_done_one(g);
}

static void group_event(void *owner, int type, const char *path)
{
    struct coord_group *g = owner;
    if (g->dead)
        return;
    if (!path || strcmp(path, g->path) == 0) {
        g->need_list = true;
        if (!path) /* a new session: every watch is gone */
            for (size_t i = 0; i < g->n; i++)
                g->m[i].valid = false;
    } else {
        struct gmember *e = group_find(g, coord__basename(path));
        if (e)
            e->valid = false;
        /* Deleted: the group's children watch, set by the listing that found it, fires
           too, and that listing says it left: nothing to read for it now. */
        if (type == ZOO_DELETED_EVENT)
            return;
    }
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

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The listing: the cache becomes the listed members, in order. A member listed and known
 * (valid) is not read again; one new, or whose watch fired, is read; one no longer listed
 * has left.
 */
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
        g->need_list = true;
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
    size_t n = (size_t)op->strc;
    qsort(op->strv, n, sizeof(char *), cmp_str);
    struct gmember *m = xcalloc(n ? n : 1, sizeof(*m));
    size_t k = 0, a = 0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && strcmp(op->strv[i - 1], op->strv[i]) == 0)
            continue;
        while (a < g->n && strcmp(g->m[a].id, op->strv[i]) < 0)
            gmember_clear(g, &g->m[a++]); /* not listed: it left */
        if (a < g->n && strcmp(g->m[a].id, op->strv[i]) == 0) {
            m[k++] = g->m[a++];
            continue;
        }
        struct gmember *e = &m[k++];
        e->id = xstrdup(op->strv[i]);
        char *p = xasprintf("%s/%s", g->path, e->id);
        e->reg = coord__reg_watch_add(&g->s->reg, p, COORD__WM_ANY, g, group_event);
        free(p);
    }
    while (a < g->n)
        gmember_clear(g, &g->m[a++]);
    free(g->m);
    g->m = m;
    g->n = k;
    g->failed = false;
    group_read_stale(g);
    group_unref(g);
}

static void group_refresh(struct coord_group *g)
{
    g->busy = true;
    g->again = false;
    g->failed = false;
    if (!g->need_list) {
        g->refs++;
        group_read_stale(g);
        group_unref(g);
        return;
    }
    g->need_list = false;
    if (!g->dir_reg)
        g->dir_reg = coord__reg_watch_add(&g->s->reg, g->path, COORD__WM_ANY, g, group_event);
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
    g->need_list = true;
    coord__reg_listener_add(&s->reg, g, group_session);
    coord_ensure_path(s, group, group_ready, g);
    return g;
}

void coord_group_resync(struct coord_group *g, bool reread)
{
    if (!g || g->dead)
        return;
    g->need_list = true;
    if (reread)
        for (size_t i = 0; i < g->n; i++)
            g->m[i].valid = false;
    if (g->busy)
        g->again = true;
    else
        group_refresh(g);
}

void coord_group_free(struct coord_group *g)
{
    if (!g)
        return;
    g->dead = true;
    coord__reg_listener_remove(&g->s->reg, g);
    coord__reg_watch_remove(&g->s->reg, g);
    for (size_t i = 0; i < g->n; i++)
        g->m[i].reg = NULL; /* removed above */
    g->dir_reg = NULL;
    group_unref(g);
}
