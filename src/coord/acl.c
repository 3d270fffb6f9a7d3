/*
 * acl: who may read what Drover writes to ZooKeeper (docs/zookeeper-tree.md,
 * "ACLs"; docs/security.md, "ZooKeeper ACLs").
 *
 * With digest credentials, every znode a session creates carries: all
 * permissions for the owner (the creating identity, scheme "auth", or
 * coord_session_opts.acl_owner: a worker names droverd's id there), read for
 * each of the session's readers (acl_readers: the operator's read-only
 * identity that `drover zk` uses), and, where the path is a tenant's, what
 * that tenant's workers need of it (coord_acl_grant, with the tenant's worker
 * identity: droverd derives it from the fleet key through acl_tenant_id, a
 * worker knows its own). Never world read: ZooKeeper is readable only by the
 * roles that need each path (invariant 8, docs/architecture.md). Without
 * credentials, nodes are open (tests and single-machine trials).
 *
 * The policy, one function for creates and for the fix-up (Z = ZOO_PERM_*):
 *
 *   queues/<t> and below            t: read, write, create, delete (claim, complete)
 *   resources/<t>                   t: read
 *   jobs/<id>/ctx[/..], nodes[/..]  the job's tenant: read
 *   jobs/<id>/runs                  the job's tenant: read, create (its run records)
 *   jobs/<id>/runs/<run>            the job's tenant: read, write (the outcome)
 *   members/worker/<id>             the worker's tenant: read, write (its data)
 *   control/worker/<id>             the worker's tenant: read (a drain request)
 *   members/worker                  every tenant: read, create (coord_acl_tenant_add)
 *   pools/<t> and below             t: read, write, create, delete (ssh-pool's claims)
 *   pools/_operator/<pool>, below   each tenant acl_pool_grants names for the pool: read
 *                                   the pool, read and create its claims, create in its
 *                                   released, read and write its own claims; no delete
 *                                   (shared_pool_perms: an operator's shared pool; the
 *                                   fix-up alone writes it, droverd never creates there)
 *   anything else                   no tenant: droverd's alone
 *
 * A job's tenant is bound by its owner (coord_acl_bind) before it writes the
 * job's subtree; a worker's session has one tenant, its own. Built ACL
 * vectors are kept per (tenant, perms) until the session is freed, because a
 * multi-op points at them until it is sent.
 *
 * Threads: coord__acl_for and the binding under acl_mu (any thread);
 * coord_acl_tenant_add on the loop thread. coord_acl_fixup brings an existing
 * tree to that form at droverd's start, so an upgrade from world-readable
 * znodes closes them: a synchronous walk on its own short-lived handle
 * (start-up only, any thread but a callback's).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/sha.h>
#include <jansson.h>
#include <zookeeper/zookeeper.h>

#include "clock.h"
#include "coord.h"
#include "coord_int.h"
#include "log.h"
#include "xalloc.h"
#include "zkpath.h"

#define MOD "coord"

int coord_acl_digest_id(const char *user, const char *password, char *out, size_t n)
{
    char *cred = xasprintf("%s:%s", user, password);
    unsigned char md[SHA_DIGEST_LENGTH];
    SHA1((const unsigned char *)cred, strlen(cred), md);
    explicit_bzero(cred, strlen(cred));
    free(cred);
    char b64[4 * ((SHA_DIGEST_LENGTH + 2) / 3) + 1];
    EVP_EncodeBlock((unsigned char *)b64, md, SHA_DIGEST_LENGTH);
    int w = snprintf(out, n, "%s:%s", user, b64);
    return w < 0 || (size_t)w >= n ? DRV_EINVAL : 0;
}

struct coord__acl_grant {
    struct coord__acl_grant *next;
    char *tenant;
    int perms;
    struct ACL_vector v;
};

struct coord__acl_bind {
    struct coord__acl_bind *next;
    char *path;
    char *tenant;
    int refs; /* binds less unbinds: two objects of one job may overlap (a lock lost, taken again)
               */
};

int coord__acl_build(struct coord_session *s, const struct coord_session_opts *o,
                     struct drv_err *err)
{
    size_t n = 0;
    char *list = xstrdup(o->acl_readers ? o->acl_readers : ""), *save = NULL;
    pthread_mutex_init(&s->acl_mu, NULL);
    s->acl_own.data = xcalloc(1 + COORD_ACL_MAX_READERS, sizeof(struct ACL));
    s->acl_own.count = 1;
    if (o->acl_owner && *o->acl_owner) {
        if (strlen(o->acl_owner) > COORD_ACL_MAX_ID || !strchr(o->acl_owner, ':')) {
            free(list);
            return drv_err_set(err, DRV_EINVAL, 0,
                               "acl owner: \"%s\": expected a digest id user:hash of up to %d "
                               "characters",
                               o->acl_owner, COORD_ACL_MAX_ID);
        }
        s->acl_own.data[n++] = (struct ACL){
            .perms = ZOO_PERM_ALL, .id = {.scheme = "digest", .id = xstrdup(o->acl_owner)}};
        if (o->acl_tenant && *o->acl_tenant && o->digest_user) {
            char self[COORD_ACL_MAX_GRANT_ID + 1];
            if (coord_acl_digest_id(o->digest_user, o->digest_password, self, sizeof(self)) == 0) {
                s->acl_self = xstrdup(self);
                s->acl_tenant = xstrdup(o->acl_tenant);
            }
        }
    } else {
        s->acl_own.data[n++] =
            (struct ACL){.perms = ZOO_PERM_ALL, .id = {.scheme = "auth", .id = xstrdup("")}};
    }
    s->acl_tenant_id = o->acl_tenant_id;
    s->acl_tenant_arg = o->acl_tenant_arg;
    s->quota_znodes = o->tenant_quota_znodes;
    s->quota_bytes = o->tenant_quota_bytes;
    s->chrooted = o->chroot && *o->chroot;
    for (char *r = strtok_r(list, ",", &save); r; r = strtok_r(NULL, ",", &save)) {
        while (*r == ' ')
            r++;
        size_t len = strlen(r);
        while (len && r[len - 1] == ' ')
            r[--len] = '\0';
        if (!len)
            continue;
        if (n > COORD_ACL_MAX_READERS || len > COORD_ACL_MAX_ID || !strchr(r, ':')) {
            free(list);
            s->acl_own.count = (int32_t)n;
            return drv_err_set(err, DRV_EINVAL, 0,
                               "acl readers: \"%s\": expected at most %d digest ids user:hash of "
                               "up to %d characters",
                               r, COORD_ACL_MAX_READERS, COORD_ACL_MAX_ID);
        }
        s->acl_own.data[n++] =
            (struct ACL){.perms = ZOO_PERM_READ, .id = {.scheme = "digest", .id = xstrdup(r)}};
    }
    free(list);
    s->acl_own.count = (int32_t)n;
    s->acl = &s->acl_own;
    return 0;
}

static void free_vector(struct ACL_vector *v)
{
    for (int32_t i = 0; i < v->count; i++)
        free(v->data[i].id.id);
    free(v->data);
    v->data = NULL;
    v->count = 0;
}

void coord__acl_free(struct coord_session *s)
{
    if (!s->acl_own.data)
        return;
    free_vector(&s->acl_own);
    while (s->acl_grants) {
        struct coord__acl_grant *g = s->acl_grants;
        s->acl_grants = g->next;
        free(g->tenant);
        free_vector(&g->v);
        free(g);
    }
    while (s->acl_binds) {
        struct coord__acl_bind *b = s->acl_binds;
        s->acl_binds = b->next;
        free(b->path);
        free(b->tenant);
        free(b);
    }
    free(s->acl_tenant);
    free(s->acl_self);
    s->acl_tenant = s->acl_self = NULL;
    pthread_mutex_destroy(&s->acl_mu);
}

/* ---- the policy ---------------------------------------------------------------------- */

#define POOL_PERMS (ZOO_PERM_READ | ZOO_PERM_WRITE | ZOO_PERM_CREATE | ZOO_PERM_DELETE)

static int grant_of(const char *tenant_in, char *tenant, size_t n, int perms)
{
    if (!tenant_in || !*tenant_in || strlen(tenant_in) >= n)
        return 0;
    snprintf(tenant, n, "%s", tenant_in);
    return perms;
}

/* The same for a tenant named in the path. */
static int grant_named(struct zkpath_name t, char *tenant, size_t n, int perms)
{
    return zkpath_name_copy(t, tenant, n) && *tenant ? perms : 0;
}

/* By the path's kind (zkpath_classify), the policy's table above, row by row. */
int coord_acl_grant(const char *path, const char *job_tenant, const char *member_tenant,
                    char *tenant, size_t n)
{
    struct zkpath_class c;
    bool exact = zkpath_classify(path, &c) != ZKPATH_OTHER && !c.below;
    bool worker = c.a.len == strlen("worker") && memcmp(c.a.s, "worker", c.a.len) == 0;
    switch (c.kind) {
    case ZKPATH_TENANT_QUEUES:
    case ZKPATH_QUEUE:
        return grant_named(c.a, tenant, n,
                           ZOO_PERM_READ | ZOO_PERM_WRITE | ZOO_PERM_CREATE | ZOO_PERM_DELETE);
    case ZKPATH_TENANT_POOLS:
    case ZKPATH_POOL:
    case ZKPATH_POOL_CLAIMS:
    case ZKPATH_POOL_CLAIM:
    case ZKPATH_POOL_RELEASED:
        /* pools/_operator/...: an operator's pool, granted by coord_acl_fixup alone. */
        return c.a.s[0] != '_' ? grant_named(c.a, tenant, n, POOL_PERMS) : 0;
    case ZKPATH_RESOURCES:
        return exact ? grant_named(c.a, tenant, n, ZOO_PERM_READ) : 0;
    case ZKPATH_MEMBER:
        return exact && worker ? grant_of(member_tenant, tenant, n, ZOO_PERM_READ | ZOO_PERM_WRITE)
                               : 0;
    case ZKPATH_CONTROL:
        return exact && worker ? grant_of(member_tenant, tenant, n, ZOO_PERM_READ) : 0;
    case ZKPATH_JOB_CTX:
    case ZKPATH_JOB_CTX_PART:
    case ZKPATH_JOB_NODES:
    case ZKPATH_JOB_NODES_CHUNK:
        return grant_of(job_tenant, tenant, n, ZOO_PERM_READ);
    case ZKPATH_JOB_RUNS:
        return exact ? grant_of(job_tenant, tenant, n, ZOO_PERM_READ | ZOO_PERM_CREATE) : 0;
    case ZKPATH_JOB_RUN:
        return exact ? grant_of(job_tenant, tenant, n, ZOO_PERM_READ | ZOO_PERM_WRITE) : 0;
    default:
        return 0; /* droverd's alone */
    }
}

/* The tenant bound to path's job or worker (coord_acl_bind), else the session's. acl_mu. */
static const char *bound_tenant(struct coord_session *s, const char *path)
{
    for (struct coord__acl_bind *b = s->acl_binds; b; b = b->next) {
        size_t n = strlen(b->path);
        if (strncmp(path, b->path, n) == 0 && (path[n] == '/' || path[n] == '\0'))
            return b->tenant;
    }
    return s->acl_tenant;
}

/* A tenant's worker digest id, or false (then no grant). acl_mu. */
static bool tenant_id(struct coord_session *s, const char *tenant, char *id, size_t n)
{
    if (s->acl_tenant && s->acl_self && strcmp(tenant, s->acl_tenant) == 0) {
        snprintf(id, n, "%s", s->acl_self);
        return true;
    }
    if (!s->acl_tenant_id || s->acl_tenant_id(tenant, id, n, s->acl_tenant_arg) != 0) {
        log_warn(MOD, "event=acl-no-tenant-id tenant=%s", tenant);
        return false;
    }
    return strlen(id) <= COORD_ACL_MAX_GRANT_ID;
}

bool coord__acl_worker_id(struct coord_session *s, const char *tenant, char *id, size_t n)
{
    if (!s->acl_tenant_id || !tenant || !*tenant || s->acl != &s->acl_own)
        return false;
    pthread_mutex_lock(&s->acl_mu);
    bool ok = s->acl_tenant_id(tenant, id, n, s->acl_tenant_arg) == 0;
    pthread_mutex_unlock(&s->acl_mu);
    return ok;
}

bool coord__acl_can_derive(const struct coord_session *s)
{
    return s->acl_tenant_id && s->acl == &s->acl_own;
}

bool coord__acl_strv_writer(char **strv, int strc, const char *id)
{
    for (int i = 0; i < strc; i++) {
        const char *sp1 = strchr(strv[i], ' '), *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
        if (sp2 && (atoi(strv[i]) & ZOO_PERM_WRITE) && (size_t)(sp2 - sp1 - 1) == 6 &&
            strncmp(sp1 + 1, "digest", 6) == 0 && strcmp(sp2 + 1, id) == 0)
            return true;
    }
    return false;
}

/* base with the grant (perms for id; none when id is NULL) in second place: a new vector,
   strings copied. */
static void with_grant(const struct ACL_vector *base, int perms, const char *id,
                       struct ACL_vector *out)
{
    out->data = xcalloc((size_t)base->count + 1, sizeof(struct ACL));
    int32_t k = 0;
    for (int32_t i = 0; i < base->count; i++) {
        out->data[k++] = (struct ACL){
            .perms = base->data[i].perms,
            .id = {.scheme = base->data[i].id.scheme, .id = xstrdup(base->data[i].id.id)}};
        if (i == 0 && id)
            out->data[k++] =
                (struct ACL){.perms = perms, .id = {.scheme = "digest", .id = xstrdup(id)}};
    }
    out->count = k;
}

const struct ACL_vector *coord__acl_for(struct coord_session *s, const char *path)
{
    if (s->acl != &s->acl_own || (!s->acl_tenant_id && !s->acl_tenant))
        return s->acl;
    char tenant[128], id[COORD_ACL_MAX_GRANT_ID + 1];
    const struct ACL_vector *v = s->acl;
    pthread_mutex_lock(&s->acl_mu);
    const char *t = bound_tenant(s, path);
    int perms = coord_acl_grant(path, t, t, tenant, sizeof(tenant));
    if (perms) {
        struct coord__acl_grant *g = s->acl_grants;
        while (g && (g->perms != perms || strcmp(g->tenant, tenant) != 0))
            g = g->next;
        if (!g && tenant_id(s, tenant, id, sizeof(id))) {
            g = xcalloc(1, sizeof(*g));
            g->tenant = xstrdup(tenant);
            g->perms = perms;
            with_grant(&s->acl_own, perms, id, &g->v);
            g->next = s->acl_grants;
            s->acl_grants = g;
        }
        if (g)
            v = &g->v;
    }
    pthread_mutex_unlock(&s->acl_mu);
    return v;
}

void coord_acl_bind(struct coord_session *s, const char *job_path, const char *tenant)
{
    if (s->acl != &s->acl_own || !s->acl_tenant_id || !tenant)
        return;
    pthread_mutex_lock(&s->acl_mu);
    struct coord__acl_bind *b = s->acl_binds;
    while (b && strcmp(b->path, job_path) != 0)
        b = b->next;
    if (!b) {
        b = xcalloc(1, sizeof(*b));
        b->path = xstrdup(job_path);
        b->next = s->acl_binds;
        s->acl_binds = b;
    } else {
        free(b->tenant);
    }
    b->refs++;
    b->tenant = xstrdup(tenant);
    pthread_mutex_unlock(&s->acl_mu);
}

void coord_acl_unbind(struct coord_session *s, const char *job_path)
{
    if (s->acl != &s->acl_own || !s->acl_tenant_id)
        return;
    pthread_mutex_lock(&s->acl_mu);
    for (struct coord__acl_bind **pp = &s->acl_binds; *pp; pp = &(*pp)->next) {
        if (strcmp((*pp)->path, job_path) == 0) {
            struct coord__acl_bind *b = *pp;
            if (--b->refs > 0)
                break;
            *pp = b->next;
            free(b->path);
            free(b->tenant);
            free(b);
            break;
        }
    }
    pthread_mutex_unlock(&s->acl_mu);
}

/* ---- a tenant's workers at home --------------------------------------------------------- */

#define MEMBER_PERMS (ZOO_PERM_READ | ZOO_PERM_CREATE)

struct tenant_add {
    struct coord_session *s;
    char *tenant;
    char id[COORD_ACL_MAX_GRANT_ID + 1];
    unsigned tries;
    int quota_step; /* subtrees whose quota is set: queues/<t>, then pools/<t> */
    coord_done_cb done;
    void *arg;
};

static void tenant_quota_next(struct tenant_add *a);

static void tenant_add_end(struct tenant_add *a, int rc)
{
    if (rc == 0 && a->quota_step < 2 && (a->s->quota_znodes > 0 || a->s->quota_bytes > 0) &&
        !a->s->chrooted) {
        tenant_quota_next(a);
        return;
    }
    if (rc)
        log_warn(MOD, "event=acl-tenant-add-failed tenant=%s rc=%d", a->tenant, rc);
    else
        log_info(MOD, "event=acl-tenant-added tenant=%s", a->tenant);
    if (a->done)
        a->done(rc, a->arg);
    free(a->tenant);
    free(a);
}

static void tenant_add_read(struct tenant_add *a);

static void tenant_acl_set(struct coord__op *op)
{
    struct tenant_add *a = op->owner;
    if (op->rc == ZBADVERSION && a->tries++ < 10) {
        tenant_add_read(a); /* another node added one meanwhile */
        return;
    }
    tenant_add_end(a, coord__zrc(op->rc));
}

static void tenant_acl_got(struct coord__op *op)
{
    struct tenant_add *a = op->owner;
    if (op->rc != ZOK) {
        tenant_add_end(a, coord__zrc(op->rc));
        return;
    }
    struct ACL_vector v = {0, xcalloc((size_t)op->strc + 1, sizeof(struct ACL))};
    bool have = false;
    for (int i = 0; i < op->strc; i++) {
        char *sp1 = strchr(op->strv[i], ' '), *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
        if (!sp2)
            continue;
        *sp1 = *sp2 = '\0';
        v.data[v.count++] =
            (struct ACL){.perms = atoi(op->strv[i]), .id = {.scheme = sp1 + 1, .id = sp2 + 1}};
        have = have || (strcmp(sp1 + 1, "digest") == 0 && strcmp(sp2 + 1, a->id) == 0);
    }
    if (have) {
        free(v.data);
        tenant_add_end(a, 0);
        return;
    }
    v.data[v.count++] =
        (struct ACL){.perms = MEMBER_PERMS, .id = {.scheme = "digest", .id = a->id}};
    coord__zk_set_acl(coord__op_new(a->s, tenant_acl_set, a), ZKPATH_MEMBERS_WORKER,
                      op->stat.aversion, &v);
    free(v.data); /* serialised by the call */
}

static void tenant_add_read(struct tenant_add *a)
{
    coord__zk_get_acl(coord__op_new(a->s, tenant_acl_got, a), ZKPATH_MEMBERS_WORKER);
}

static void tenant_members_ready(int rc, void *arg)
{
    struct tenant_add *a = arg;
    if (rc) {
        tenant_add_end(a, rc);
        return;
    }
    tenant_add_read(a);
}

static void tenant_pools_ready(int rc, void *arg)
{
    struct tenant_add *a = arg;
    if (rc) {
        tenant_add_end(a, rc);
        return;
    }
    coord_ensure_path(a->s, ZKPATH_MEMBERS_WORKER, tenant_members_ready, a);
}

/*
 * The tenant's ZooKeeper quota (coord_session_opts.tenant_quota_*), on queues/<t> then
 * pools/<t>: ZooKeeper keeps a subtree's quota at /zookeeper/quota/<path>, zookeeper_limits
 * ("count=-1,bytes=-1,countHardLimit=N,byteHardLimit=B": the hard limits, which a server run
 * with zookeeper.enforceQuota=true enforces) and zookeeper_stats (what the subtree holds:
 * the server counts it when the znode is created, whatever it is created with, and keeps it
 * since; so it is made once, never set). Every znode there is droverd's (its ACL: droverd
 * all, the readers read), and so is /zookeeper/quota itself (coord_acl_fixup), so that no
 * tenant lifts its own quota.
 */
static void tenant_quota_set(int rc, void *arg)
{
    struct tenant_add *a = arg;
    if (rc == 0)
        log_info(MOD, "event=zk-quota-set tenant=%s subtree=%s znodes=%ld bytes=%ld", a->tenant,
                 a->quota_step == 1 ? "queues" : "pools", a->s->quota_znodes, a->s->quota_bytes);
    tenant_add_end(a, rc);
}

static void tenant_quota_stats(int rc, void *arg)
{
    struct tenant_add *a = arg;
    if (rc) {
        tenant_add_end(a, rc);
        return;
    }
    char *p = xasprintf("/zookeeper/quota%s/%s/zookeeper_limits",
                        a->quota_step == 1 ? ZKPATH_QUEUES : ZKPATH_POOLS, a->tenant);
    char *limits = xasprintf("count=-1,bytes=-1,countHardLimit=%ld,byteHardLimit=%ld",
                             a->s->quota_znodes > 0 ? a->s->quota_znodes : -1,
                             a->s->quota_bytes > 0 ? a->s->quota_bytes : -1);
    coord_upsert(a->s, p, limits, tenant_quota_set, a);
    free(limits);
    free(p);
}

static void tenant_quota_next(struct tenant_add *a)
{
    const char *sub = a->quota_step++ == 0 ? ZKPATH_QUEUES : ZKPATH_POOLS;
    char *stats = xasprintf("/zookeeper/quota%s/%s/zookeeper_stats", sub, a->tenant);
    coord_ensure_path(a->s, stats, tenant_quota_stats, a);
    free(stats);
}

/* Then pools/<t>: where its workers' ssh-pool plugin makes its pools (no tenant may create
   in pools/ itself, so none takes another's name first). */
static void tenant_queues_ready(int rc, void *arg)
{
    struct tenant_add *a = arg;
    if (rc) {
        tenant_add_end(a, rc);
        return;
    }
    char *p = xasprintf("%s/%s", ZKPATH_POOLS, a->tenant);
    coord_ensure_path(a->s, p, tenant_pools_ready, a);
    free(p);
}

void coord_acl_tenant_add(struct coord_session *s, const char *tenant, coord_done_cb done,
                          void *arg)
{
    struct tenant_add *a = xcalloc(1, sizeof(*a));
    a->s = s;
    a->tenant = xstrdup(tenant);
    a->done = done;
    a->arg = arg;
    bool ok = s->acl == &s->acl_own && s->acl_tenant_id;
    if (ok) {
        pthread_mutex_lock(&s->acl_mu);
        ok = tenant_id(s, tenant, a->id, sizeof(a->id));
        pthread_mutex_unlock(&s->acl_mu);
    }
    if (!ok) {
        if (done)
            done(0, arg);
        free(a->tenant);
        free(a);
        return;
    }
    char *q = xasprintf("%s/%s", ZKPATH_QUEUES, tenant);
    coord_ensure_path(s, q, tenant_queues_ready, a);
    free(q);
}

/* ---- the start-up fix-up ------------------------------------------------------------ */

struct fixup {
    zhandle_t *zh;
    const struct coord_session_opts *o;
    const char *const *tenants;
    struct ACL_vector base; /* the owner's all (the digest id), the readers' read */
    int changed, seen;
};

static bool same_acl(const struct ACL_vector *a, const struct ACL_vector *b)
{
    if (a->count != b->count)
        return false;
    for (int32_t i = 0; i < a->count; i++) {
        bool found = false;
        for (int32_t j = 0; j < b->count && !found; j++)
            found = a->data[i].perms == b->data[j].perms &&
                    strcmp(a->data[i].id.scheme, b->data[j].id.scheme) == 0 &&
                    strcmp(a->data[i].id.id, b->data[j].id.id) == 0;
        if (!found)
            return false;
    }
    return true;
}

/* The "tenant" of the JSON at path, into out (n bytes), or "" (none, unreadable). */
static void tenant_at(struct fixup *f, const char *path, char *out, size_t n)
{
    char buf[4096];
    int len = (int)sizeof(buf) - 1;
    out[0] = '\0';
    if (zoo_get(f->zh, path, 0, buf, &len, NULL) != ZOK || len < 0)
        return;
    buf[len] = '\0';
    json_t *j = json_loads(buf, 0, NULL);
    const char *t = json_string_value(json_object_get(j, "tenant"));
    if (t && strlen(t) < n)
        snprintf(out, n, "%s", t);
    json_decref(j);
}

/*
 * What a granted tenant's workers may do in an operator's shared pool, at rest (the path
 * after pools/_operator/<pool>; coord_pool_janitor_new in pool_free.c says why):
 *
 *   ""                     read           (the pool's directory)
 *   /claims                read, create   (claim a free host; never delete: ZooKeeper checks
 *                                          a delete against the parent, so it would reach
 *                                          every tenant's claims)
 *   /claims/<host>         read, write,   (the claim's own tenant only, when the ACL it
 *                          admin           has proves it made it: its state, and
 *                                          "released" to give it back; admin, so that its
 *                                          getACL shows its own digest id in full, which
 *                                          is how its plugin knows the claim is its own)
 *   /released              create         (the marker that tells droverd)
 *   anything else          nothing        (markers: droverd deletes them)
 */
static int shared_pool_perms(const char *rest)
{
    if (!*rest)
        return ZOO_PERM_READ;
    if (strcmp(rest, "/claims") == 0)
        return ZOO_PERM_READ | ZOO_PERM_CREATE;
    if (strncmp(rest, "/claims/", 8) == 0 && rest[8] && !strchr(rest + 8, '/'))
        return ZOO_PERM_READ | ZOO_PERM_WRITE | ZOO_PERM_ADMIN;
    if (strcmp(rest, "/released") == 0)
        return ZOO_PERM_CREATE;
    return 0;
}

/* True when acl grants WRITE to tenant's exact worker id: its creator was that tenant's
   worker (or droverd), as coord.h's enum coord_member_proof says. */
static bool made_by(struct fixup *f, const struct ACL_vector *acl, const char *tenant)
{
    char id[COORD_ACL_MAX_GRANT_ID + 1];
    if (!acl || !*tenant || !f->o->acl_tenant_id ||
        f->o->acl_tenant_id(tenant, id, sizeof(id), f->o->acl_tenant_arg) != 0)
        return false;
    for (int32_t i = 0; i < acl->count; i++)
        if ((acl->data[i].perms & ZOO_PERM_WRITE) &&
            strcmp(acl->data[i].id.scheme, "digest") == 0 && strcmp(acl->data[i].id.id, id) == 0)
            return true;
    return false;
}

/* The tenant a worker's own znode (a member, a claim) names, when its ACL (have, read
   with droverd's ALL) proves it; else "" and the forgery logged. */
static void proven_tenant(struct fixup *f, const char *path, const struct ACL_vector *have,
                          char *out, size_t n)
{
    tenant_at(f, path, out, n);
    if (*out && !made_by(f, have, out)) {
        log_warn(MOD, "event=acl-fixup-unproven path=%s tenant=%s", path, out);
        out[0] = '\0';
    }
}

/* The ACL path should have (into want: free_vector it). job_tenant: path's job's; have: the
   ACL it has now. */
static bool want_of(struct fixup *f, const char *path, const char *job_tenant,
                    const struct ACL_vector *have, struct ACL_vector *want)
{
    char member[128] = "", tenant[128], id[COORD_ACL_MAX_GRANT_ID + 1];
    const char *mw = ZKPATH_MEMBERS_WORKER "/", *cw = ZKPATH_ROOT "/control/worker/";
    if (strncmp(path, mw, strlen(mw)) == 0)
        proven_tenant(f, path, have, member, sizeof(member));
    else if (strncmp(path, cw, strlen(cw)) == 0) {
        char *m = xasprintf("%s%s", mw, path + strlen(cw));
        struct ACL_vector macl = {0, NULL};
        struct Stat st;
        if (zoo_get_acl(f->zh, m, &macl, &st) == ZOK)
            proven_tenant(f, m, &macl, member, sizeof(member));
        deallocate_ACL_vector(&macl);
        free(m);
    }
    int perms = coord_acl_grant(path, job_tenant, member, tenant, sizeof(tenant));
    if (perms && f->o->acl_tenant_id &&
        f->o->acl_tenant_id(tenant, id, sizeof(id), f->o->acl_tenant_arg) == 0) {
        with_grant(&f->base, perms, id, want);
        return true;
    }
    const char *op = ZKPATH_POOLS "/_operator/";
    if (strncmp(path, op, strlen(op)) == 0 && f->o->acl_tenant_id) {
        /* An operator's pool: the tenants granted it (acl_pool_grants) by shared_pool_perms;
           a claim: its own tenant's alone, if granted (as the ssh-pool plugin creates it),
           so one granted tenant reads and writes no other's. */
        char pool[COORD__POOL_NAME + 1], who[COORD__POOL_MAX][COORD__POOL_NAME + 1];
        const char *name = path + strlen(op);
        size_t len = strcspn(name, "/");
        snprintf(pool, sizeof(pool), "%.*s", (int)(len > COORD__POOL_NAME ? 0 : len), name);
        int k = coord__pool_grantees(f->o->acl_pool_grants, pool, who, COORD__POOL_MAX);
        int sp = shared_pool_perms(name + len);
        if (strncmp(name + len, "/claims/", 8) == 0) {
            /* The claim's own tenant, when its ACL proves it made the claim (another granted
               tenant may create a claim naming anyone: poolzk_find adopts only proven ones). */
            proven_tenant(f, path, have, member, sizeof(member));
            int keep = 0;
            for (int i = 0; i < k; i++)
                if (strcmp(who[i], member) == 0)
                    memmove(who[keep++], who[i], sizeof(who[i]));
            k = keep;
        }
        if (!sp)
            k = 0;
        struct ACL_vector b;
        with_grant(&f->base, -1, NULL, &b);
        want->data = xcalloc((size_t)b.count + (size_t)k, sizeof(struct ACL));
        memcpy(want->data, b.data, (size_t)b.count * sizeof(struct ACL));
        want->count = b.count;
        free(b.data);
        for (int i = 0; i < k; i++)
            if (f->o->acl_tenant_id(who[i], id, sizeof(id), f->o->acl_tenant_arg) == 0)
                want->data[want->count++] =
                    (struct ACL){.perms = sp, .id = {.scheme = "digest", .id = xstrdup(id)}};
        return true;
    }
    if (strcmp(path, ZKPATH_MEMBERS_WORKER) == 0 && f->tenants && f->o->acl_tenant_id) {
        size_t n = 0;
        while (f->tenants[n])
            n++;
        struct ACL_vector b;
        with_grant(&f->base, -1, NULL, &b);
        want->data = xcalloc((size_t)b.count + n, sizeof(struct ACL));
        memcpy(want->data, b.data, (size_t)b.count * sizeof(struct ACL));
        want->count = b.count;
        free(b.data);
        for (size_t i = 0; i < n; i++)
            if (f->o->acl_tenant_id(f->tenants[i], id, sizeof(id), f->o->acl_tenant_arg) == 0)
                want->data[want->count++] = (struct ACL){
                    .perms = MEMBER_PERMS, .id = {.scheme = "digest", .id = xstrdup(id)}};
        return true;
    }
    with_grant(&f->base, -1, NULL, want); /* base alone */
    return true;
}

/* A worker's own znode where a tenant's identity may create: a member, a claim of an
   operator's pool, a release marker. */
static bool tenant_made(const char *path)
{
    const char *mw = ZKPATH_MEMBERS_WORKER "/", *op = ZKPATH_POOLS "/_operator/";
    if (strncmp(path, mw, strlen(mw)) == 0)
        return !strchr(path + strlen(mw), '/');
    if (strncmp(path, op, strlen(op)) != 0)
        return false;
    const char *rest = strchr(path + strlen(op), '/');
    return rest && (strncmp(rest, "/claims/", 8) == 0 || strncmp(rest, "/released/", 10) == 0) &&
           !strchr(rest + (rest[1] == 'c' ? 8 : 10), '/');
}

static int fix(struct fixup *f, const char *path, const char *job_tenant, struct drv_err *err)
{
    struct ACL_vector have = {0, NULL}, want = {0, NULL};
    struct Stat st;
    int rc = zoo_get_acl(f->zh, path, &have, &st);
    if (rc == ZNONODE)
        return 0; /* gone meanwhile: an ephemeral that left */
    if (rc == ZNOAUTH && tenant_made(path)) {
        /* Every znode Drover makes gives droverd all: one it may not even read, where a
           tenant may create, is a tenant's forgery made to stop this walk. Left alone
           (nothing believes it) and said. */
        log_warn(MOD, "event=acl-fixup-unreadable path=%s", path);
        return 0;
    }
    if (rc != ZOK)
        return drv_err_set(err, DRV_EZK, rc, "get acl of \"%s\": %s", path, zerror(rc));
    f->seen++;
    /* Below jobs/<id>: the job's tenant, from its announcement. */
    char jt[128] = "";
    const char *jobs = ZKPATH_JOBS "/";
    if (strncmp(path, jobs, strlen(jobs)) == 0 && !strchr(path + strlen(jobs), '/')) {
        tenant_at(f, path, jt, sizeof(jt));
        job_tenant = jt;
    }
    want_of(f, path, job_tenant, &have, &want);
    if (!same_acl(&have, &want)) {
        rc = zoo_set_acl(f->zh, path, -1, &want);
        if (rc == ZOK)
            f->changed++;
        else if (rc != ZNONODE) {
            deallocate_ACL_vector(&have);
            free_vector(&want);
            return drv_err_set(err, DRV_EZK, rc, "set acl of \"%s\": %s", path, zerror(rc));
        }
    }
    deallocate_ACL_vector(&have);
    free_vector(&want);
    struct String_vector kids = {0, NULL};
    rc = zoo_get_children(f->zh, path, 0, &kids);
    if (rc == ZNONODE)
        return 0;
    if (rc != ZOK)
        return drv_err_set(err, DRV_EZK, rc, "list \"%s\": %s", path, zerror(rc));
    int out = 0;
    for (int32_t i = 0; i < kids.count && out == 0; i++) {
        char *child = xasprintf("%s/%s", path, kids.data[i]);
        out = fix(f, child, job_tenant, err);
        free(child);
    }
    deallocate_String_vector(&kids);
    return out;
}

/*
 * The tenants' quotas are droverd's: /zookeeper/quota (world all on a new ensemble) and
 * every znode of /zookeeper/quota/drover get the base ACL (droverd all, the readers read),
 * so no tenant's identity changes or deletes one (ZooKeeper checks a delete against the
 * parent). A znode there droverd may not fix (made before by another identity, without
 * droverd in its ACL) is logged, not fatal: the quota under it may be someone else's.
 */
static void fix_quotas(struct fixup *f)
{
    int seen = f->seen, changed = f->changed; /* counted apart from the /drover walk's */
    struct ACL_vector base;
    with_grant(&f->base, -1, NULL, &base);
    int rc = zoo_set_acl(f->zh, "/zookeeper/quota", -1, &base);
    free_vector(&base);
    struct drv_err err;
    drv_err_clear(&err);
    if (rc == ZOK)
        rc = zoo_exists(f->zh, "/zookeeper/quota" ZKPATH_ROOT, 0, NULL) == ZNONODE
                 ? ZOK
                 : (fix(f, "/zookeeper/quota" ZKPATH_ROOT, NULL, &err) ? err.lib_code : ZOK);
    if (rc != ZOK)
        log_error(MOD, "event=zk-quota-not-droverds path=/zookeeper/quota zrc=%d error=\"%s\"", rc,
                  err.code ? err.msg : zerror(rc));
    else
        log_info(MOD, "event=zk-quota-fixup znodes=%d changed=%d", f->seen - seen,
                 f->changed - changed);
    f->seen = seen;
    f->changed = changed;
}

/* The operator's granted pools' claims directories, made when missing (the walk then gives
   each its grant). */
static int make_shared_pools(struct fixup *f, struct drv_err *err)
{
    char pools[COORD__POOL_MAX][COORD__POOL_NAME + 1];
    int k = coord__pool_names(f->o->acl_pool_grants, pools, COORD__POOL_MAX);
    for (int i = 0; i < 2 * k; i++) {
        /* claims, then released (the ssh-pool plugin's release markers: pool_free.c) */
        char *claims = xasprintf("%s/_operator/%s/%s", ZKPATH_POOLS, pools[i / 2],
                                 i % 2 ? "released" : "claims");
        int rc = ZOK;
        for (char *sl = strchr(claims + 1, '/'); rc == ZOK || rc == ZNODEEXISTS;
             sl = strchr(sl + 1, '/')) {
            if (sl)
                *sl = '\0';
            struct ACL_vector want = {0, NULL};
            want_of(f, claims, NULL, NULL, &want);
            rc = zoo_create(f->zh, claims, "{}", 2, &want, 0, NULL, 0);
            free_vector(&want);
            if (!sl)
                break;
            *sl = '/';
        }
        if (rc != ZOK && rc != ZNODEEXISTS) {
            drv_err_set(err, DRV_EZK, rc, "create \"%s\": %s", claims, zerror(rc));
            free(claims);
            return err->code;
        }
        if (i % 2)
            log_info(MOD, "event=acl-pool-granted pool=_operator/%s", pools[i / 2]);
        free(claims);
    }
    return 0;
}

int coord_acl_fixup(const struct coord_session_opts *o, const char *root,
                    const char *const *tenants, int *changed, struct drv_err *err)
{
    *changed = 0;
    if (!o->digest_user)
        return 0; /* open tree: nothing to close */
    int64_t t0 = clock_mono_ms();
    char *hosts = o->chroot ? xasprintf("%s%s", o->hosts, o->chroot) : xstrdup(o->hosts);
    zhandle_t *zh =
        zookeeper_init2(hosts, NULL, o->session_timeout_ms > 0 ? o->session_timeout_ms : 10000,
                        NULL, NULL, 0, log_zk_callback);
    free(hosts);
    if (!zh)
        return drv_err_set(err, DRV_EZK, errno, "acl fix-up: cannot start a zookeeper client");
    for (int i = 0; i < 300 && zoo_state(zh) != ZOO_CONNECTED_STATE; i++)
        usleep(50 * 1000);
    char *cred = xasprintf("%s:%s", o->digest_user, o->digest_password);
    int rc = zoo_state(zh) == ZOO_CONNECTED_STATE
                 ? zoo_add_auth(zh, "digest", cred, (int)strlen(cred), NULL, NULL)
                 : ZCONNECTIONLOSS;
    explicit_bzero(cred, strlen(cred));
    free(cred);
    if (rc != ZOK) {
        zookeeper_close(zh);
        return drv_err_set(err, DRV_EZK, rc, "acl fix-up: cannot connect to zookeeper: %s",
                           zerror(rc));
    }
    /* The creator's entry as the server stores it: digest user:base64(sha1(user:password)). */
    char self[COORD_ACL_MAX_ID + 1];
    struct coord_session tmp;
    memset(&tmp, 0, sizeof(tmp));
    struct fixup f = {.zh = zh, .o = o, .tenants = tenants};
    struct coord_session_opts mine = *o;
    mine.acl_owner = NULL; /* droverd's own */
    mine.acl_tenant = NULL;
    int out = coord_acl_digest_id(o->digest_user, o->digest_password, self, sizeof(self));
    if (out == 0)
        out = coord__acl_build(&tmp, &mine, err);
    if (out == 0) {
        f.base = tmp.acl_own;
        free(f.base.data[0].id.id);
        f.base.data[0] =
            (struct ACL){.perms = ZOO_PERM_ALL, .id = {.scheme = "digest", .id = xstrdup(self)}};
        tmp.acl_own = f.base;
        if (strcmp(root, ZKPATH_ROOT) == 0)
            out = make_shared_pools(&f, err);
        if (out == 0)
            out = fix(&f, root, NULL, err);
        if (out == 0 && strcmp(root, ZKPATH_ROOT) == 0 && !(o->chroot && *o->chroot) &&
            (o->tenant_quota_znodes > 0 || o->tenant_quota_bytes > 0))
            fix_quotas(&f);
    }
    coord__acl_free(&tmp);
    zookeeper_close(zh);
    *changed = f.changed;
    if (out == 0)
        log_info(MOD, "event=acl-fixup root=%s znodes=%d changed=%d ms=%lld", root, f.seen,
                 f.changed, (long long)(clock_mono_ms() - t0));
    return out;
}
