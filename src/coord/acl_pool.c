/*
 * acl_pool: the operator's ssh-pool pools and the tenants each is granted to
 * (zookeeper.pool_grants, coord_session_opts.acl_pool_grants; docs/zookeeper-tree.md
 * "ACLs", docs/plugins.md "ssh-pool").
 *
 * A tenant's own pools live under pools/<tenant>, which droverd makes when it lets the
 * tenant in (coord_acl_tenant_add) and which only that tenant's workers reach. A pool the
 * operator declares ("shared": true, a host field of worker.provider_settings) is one
 * namespace for several tenants, pools/_operator/<pool>: no path names its tenants, so the
 * grant is droverd's configuration, "POOL:TENANT+TENANT,POOL:TENANT", and the start-up
 * fix-up (coord_acl_fixup) makes each granted pool's claims and released directories and
 * gives exactly those tenants' workers what they need there, and no delete (acl.c,
 * shared_pool_perms; pool_free.c says why). A pool left out
 * of the list (or a tenant left out of a pool) loses its grant at the next start: a
 * tenant can never claim a host outside its grant, whatever its workers' configuration
 * says.
 *
 * Threads: pure functions of their arguments (any thread).
 */
#include <stdio.h>
#include <string.h>

#include "coord.h"
#include "coord_int.h"

#define NAME_MAX_LEN 128

static bool name_ok(const char *s, size_t len)
{
    if (!len || len > NAME_MAX_LEN || (len == 1 && s[0] == '.') ||
        (len == 2 && s[0] == '.' && s[1] == '.'))
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-'))
            return false;
    }
    return true;
}

/*
 * Walk grants: for each pool entry, each tenant through each_cb (when not NULL). Returns
 * 0, or DRV_EINVAL into err naming the bad entry.
 */
typedef void (*grant_cb)(const char *pool, size_t pool_len, const char *tenant, size_t tenant_len,
                         void *arg);

static int walk(const char *grants, grant_cb each_cb, void *arg, struct drv_err *err)
{
    const char *p = grants ? grants : "";
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        if (!*p)
            break;
        size_t len = strcspn(p, ",");
        const char *colon = memchr(p, ':', len);
        size_t pl = colon ? (size_t)(colon - p) : 0;
        if (!colon || !name_ok(p, pl))
            return drv_err_set(err, DRV_EINVAL, 0,
                               "key \"zookeeper.pool_grants\": \"%.*s\": expected "
                               "POOL:TENANT[+TENANT...], names [A-Za-z0-9_.-]",
                               (int)(len > 200 ? 200 : len), p);
        const char *t = colon + 1, *end = p + len;
        while (t < end) {
            const char *plus = memchr(t, '+', (size_t)(end - t));
            size_t tl = (size_t)((plus ? plus : end) - t);
            while (tl && t[tl - 1] == ' ')
                tl--;
            if (!name_ok(t, tl) || t[0] == '_')
                return drv_err_set(err, DRV_EINVAL, 0,
                                   "key \"zookeeper.pool_grants\": pool \"%.*s\": bad tenant "
                                   "\"%.*s\"",
                                   (int)pl, p, (int)(tl > 200 ? 200 : tl), t);
            if (each_cb)
                each_cb(p, pl, t, tl, arg);
            t = plus ? plus + 1 : end;
        }
        if (end[-1] == ':' || end[-1] == '+')
            return drv_err_set(err, DRV_EINVAL, 0,
                               "key \"zookeeper.pool_grants\": pool \"%.*s\": no tenant after "
                               "\"%c\"",
                               (int)pl, p, end[-1]);
        p = end;
    }
    return 0;
}

int coord_acl_pool_grants_check(const char *grants, struct drv_err *err)
{
    return walk(grants, NULL, NULL, err);
}

struct grantees {
    const char *pool;
    char (*out)[COORD__POOL_NAME + 1];
    int n, max;
};

static void grantee_cb(const char *pool, size_t pool_len, const char *tenant, size_t tenant_len,
                       void *arg)
{
    struct grantees *g = arg;
    if (strlen(g->pool) != pool_len || strncmp(g->pool, pool, pool_len) != 0 || g->n >= g->max)
        return;
    for (int i = 0; i < g->n; i++)
        if (strlen(g->out[i]) == tenant_len && strncmp(g->out[i], tenant, tenant_len) == 0)
            return; /* named twice */
    snprintf(g->out[g->n++], COORD__POOL_NAME + 1, "%.*s", (int)tenant_len, tenant);
}

int coord__pool_grantees(const char *grants, const char *pool, char (*out)[COORD__POOL_NAME + 1],
                         int max)
{
    struct drv_err err;
    struct grantees g = {.pool = pool, .out = out, .max = max};
    return walk(grants, grantee_cb, &g, &err) == 0 ? g.n : 0;
}

struct pools {
    char (*out)[COORD__POOL_NAME + 1];
    int n, max;
};

static void pool_cb(const char *pool, size_t pool_len, const char *tenant, size_t tenant_len,
                    void *arg)
{
    (void)tenant;
    (void)tenant_len;
    struct pools *p = arg;
    for (int i = 0; i < p->n; i++)
        if (strlen(p->out[i]) == pool_len && strncmp(p->out[i], pool, pool_len) == 0)
            return;
    if (p->n < p->max)
        snprintf(p->out[p->n++], COORD__POOL_NAME + 1, "%.*s", (int)pool_len, pool);
}

int coord__pool_names(const char *grants, char (*out)[COORD__POOL_NAME + 1], int max)
{
    struct drv_err err;
    struct pools p = {.out = out, .max = max};
    return walk(grants, pool_cb, &p, &err) == 0 ? p.n : 0;
}
