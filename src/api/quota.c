/*
 * quota: what one tenant may take of the shared fleet (issue 20; docs/api.md "Quotas").
 *
 *   quota              counts                                   over it
 *   clusters           live clusters                            422
 *   nodes              the sizes of live clusters, summed        422
 *   jobs               jobs not ended (a delete is exempt)       429 (retry once one ends)
 *   resource_versions  resources versions kept                  429 (only pinned ones left)
 *   resource_bytes     bytes of the versions kept               422
 *
 * Each limit is the tenant's own (tenants.quotas, set by the superadmin with PUT
 * /v1/tenants/{name}/quotas) or droverd's default (quota.* keys); 0 is no limit.
 * A write that adds to a quota calls api__quota_check first in its transaction: it
 * locks the tenant row for update, so that the tenant's writes serialise and the
 * count it reads is the one its insert changes, and refuses with the quota's name,
 * limit and current use in the error ({"quota", "limit", "used", "asked"}); the
 * caller's transaction then rolls back, so nothing is partly written. A push of
 * resources inserts first, prunes the versions beyond resource_versions that no
 * unfinished job pins, then checks what is left (api__quota_after_push).
 *
 * Heavy requests (solving, planning) in flight of one tenant on one node: the quota
 * "heavy", the tenant's own (tenants.quotas.heavy) or api.max_heavy_per_tenant, which
 * the configuration requires below api.heavy_threads (api_opts_check). It is counted
 * in memory by each node (guard.c), not here: the view has no "used". A tenant's own
 * must be 1 to api.heavy_threads - 1 (422 naming the quota otherwise), so that one
 * tenant never holds every heavy thread; a node with fewer threads cuts it to its own
 * heavy_threads - 1. The guard reads it with the caller's token (auth.c), so a change
 * applies on this node at once (its cached tokens of the tenant forgotten) and on the
 * others within api.token_cache_ttl.
 *
 * Pool threads; no state of its own.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "guard.h"
#include "handlers.h"
#include "log.h"
#include "store.h"

#define MODULE "api"

struct quota_def {
    const char *name;
    size_t off; /* of the default in struct api_opts */
    int status; /* when over */
};

static const struct quota_def quota_defs[API_QUOTA_COUNT] = {
    [API_QUOTA_CLUSTERS] = {"clusters", offsetof(struct api_opts, quota_clusters), 422},
    [API_QUOTA_NODES] = {"nodes", offsetof(struct api_opts, quota_nodes), 422},
    [API_QUOTA_JOBS] = {"jobs", offsetof(struct api_opts, quota_jobs), 429},
    [API_QUOTA_RESOURCE_VERSIONS] = {"resource_versions",
                                     offsetof(struct api_opts, quota_resource_versions), 429},
    [API_QUOTA_RESOURCE_BYTES] = {"resource_bytes", offsetof(struct api_opts, quota_resource_bytes),
                                  422},
};

static long default_of(const struct api_opts *o, int q)
{
    return *(const long *)((const char *)o + quota_defs[q].off);
}

/* The limit of quota q for the tenant whose usage row is u (0: none). */
static long limit_of(const struct call *c, const json_t *u, int q, bool *own)
{
    const json_t *v = json_object_get(json_object_get(u, "quotas"), quota_defs[q].name);
    *own = json_is_integer(v);
    return *own ? (long)json_integer_value(v) : default_of(c->opts, q);
}

static long used_of(const json_t *u, int q)
{
    return (long)json_integer_value(json_object_get(u, quota_defs[q].name));
}

static int over(struct call *c, int q, long limit, long used, long asked)
{
    json_decref(c->err_detail);
    c->err_detail =
        json_pack("{s:s, s:I, s:I, s:I}", "quota", quota_defs[q].name, "limit", (json_int_t)limit,
                  "used", (json_int_t)used, "asked", (json_int_t)asked);
    log_info(MODULE, "event=quota-exceeded tenant=%s quota=%s limit=%ld used=%ld asked=%ld",
             c->who.tenant, quota_defs[q].name, limit, used, asked);
    return call_fail(c, quota_defs[q].status, "quota-exceeded", NULL,
                     "quota \"%s\" of tenant \"%s\": %ld in use and %ld more asked, limit %ld",
                     quota_defs[q].name, c->who.tenant, used, asked, limit);
}

/* Lock, count, compare; counted_already: the caller's own rows are in the count. */
static int quota_check(PGconn *conn, struct call *c, const long asked[API_QUOTA_COUNT],
                       bool counted_already, struct drv_err *err)
{
    int rc = store_tenant_lock_quota(conn, c->who.tenant_id, err);
    json_t *u = NULL;
    if (rc == 0)
        rc = store_tenant_usage(conn, c->who.tenant_id, &u, err);
    for (int q = 0; rc == 0 && q < API_QUOTA_COUNT; q++) {
        bool own;
        long limit = limit_of(c, u, q, &own), used = used_of(u, q);
        if (counted_already)
            used -= asked[q] > 0 ? asked[q] : 0;
        if (asked[q] > 0 && limit > 0 && used + asked[q] > limit)
            rc = over(c, q, limit, used, asked[q]);
    }
    json_decref(u);
    return rc;
}

int api__quota_check(PGconn *conn, struct call *c, const long asked[API_QUOTA_COUNT],
                     struct drv_err *err)
{
    return quota_check(conn, c, asked, false, err);
}

int api__quota_check_after(PGconn *conn, struct call *c, const long asked[API_QUOTA_COUNT],
                           struct drv_err *err)
{
    return quota_check(conn, c, asked, true, err);
}

/* The lanes of the fast check and the most one create may ask of each quota there. */
#define LANES 8
static const long fast_most[API_QUOTA_COUNT] = {
    [API_QUOTA_CLUSTERS] = 1, [API_QUOTA_NODES] = 100, [API_QUOTA_JOBS] = 1};

int api__quota_check_fast(PGconn *conn, struct call *c, const long asked[API_QUOTA_COUNT],
                          struct drv_err *err)
{
    json_t *own = NULL;
    int rc = store_tenant_share_quota(conn, c->who.tenant_id, &own, err);
    if (rc)
        return rc;
    json_t *u = json_pack("{s:O}", "quotas", own ? own : json_null());
    json_decref(own);
    bool limited = false, small = true;
    for (int q = 0; q < API_QUOTA_COUNT; q++) {
        bool mine;
        if (asked[q] > 0 && limit_of(c, u, q, &mine) > 0) {
            limited = true;
            small &= asked[q] <= fast_most[q];
        }
    }
    if (!limited) { /* nothing to count: no limit on what this create adds */
        json_decref(u);
        return 0;
    }
    if (!small) {
        json_decref(u);
        return API_QUOTA_SLOW;
    }
    /* A lane, then the count: at most LANES - 1 other creates are between their count and
       their commit now, each adding at most fast_most[q]; the slack keeps room for them. */
    static _Atomic unsigned next;
    int lane;
    rc = store_quota_lane(conn, c->who.tenant_id, LANES, (int)(next++ % LANES), &lane, err);
    json_t *use = NULL;
    if (rc == 0)
        rc = store_tenant_usage(conn, c->who.tenant_id, &use, err);
    for (int q = 0; rc == 0 && q < API_QUOTA_COUNT; q++) {
        bool mine;
        long limit = limit_of(c, u, q, &mine), used = used_of(use, q) - asked[q];
        if (asked[q] > 0 && limit > 0 && used + asked[q] + (LANES - 1) * fast_most[q] > limit)
            rc = API_QUOTA_SLOW; /* near a limit: the exact check decides */
    }
    json_decref(use);
    json_decref(u);
    return rc;
}

int api__quota_lock(PGconn *conn, struct call *c, struct drv_err *err)
{
    return store_tenant_lock_quota(conn, c->who.tenant_id, err);
}

int api__quota_after_push(PGconn *conn, struct call *c, long size, struct drv_err *err)
{
    json_t *u = NULL;
    int rc = store_tenant_usage(conn, c->who.tenant_id, &u, err);
    bool own;
    long keep = rc == 0 ? limit_of(c, u, API_QUOTA_RESOURCE_VERSIONS, &own) : 0;
    json_decref(u);
    u = NULL;
    long pruned = 0;
    if (rc == 0 && keep > 0)
        rc = store_resource_prune(conn, c->who.tenant_id, keep, &pruned, err);
    if (rc == 0)
        rc = store_tenant_usage(conn, c->who.tenant_id, &u, err);
    if (rc == 0) {
        long versions = used_of(u, API_QUOTA_RESOURCE_VERSIONS);
        long bytes = used_of(u, API_QUOTA_RESOURCE_BYTES);
        long lb = limit_of(c, u, API_QUOTA_RESOURCE_BYTES, &own);
        if (keep > 0 && versions > keep)
            rc = over(c, API_QUOTA_RESOURCE_VERSIONS, keep, versions - 1, 1);
        else if (lb > 0 && bytes > lb)
            rc = over(c, API_QUOTA_RESOURCE_BYTES, lb, bytes - size, size);
    }
    if (rc == 0 && pruned > 0)
        log_info(MODULE, "event=resources-pruned tenant=%s versions=%ld", c->who.tenant, pruned);
    json_decref(u);
    return rc;
}

/* ---- GET and PUT /v1/tenants/{name}/quotas ---------------------------------------------- */

#define HEAVY "heavy"

static json_t *quota_view(const struct call *c, const char *tenant, const json_t *u)
{
    json_t *qs = json_object();
    const json_t *h = json_object_get(json_object_get(u, "quotas"), HEAVY);
    json_object_set_new(qs, HEAVY,
                        json_pack("{s:I, s:b}", "limit",
                                  (json_int_t)(json_is_integer(h) ? json_integer_value(h)
                                                                  : c->opts->max_heavy_per_tenant),
                                  "default", !json_is_integer(h)));
    for (int q = 0; q < API_QUOTA_COUNT; q++) {
        bool own;
        long limit = limit_of(c, u, q, &own);
        json_object_set_new(qs, quota_defs[q].name,
                            json_pack("{s:I, s:I, s:b}", "limit", (json_int_t)limit, "used",
                                      (json_int_t)used_of(u, q), "default", !own));
    }
    return json_pack("{s:s, s:o}", "tenant", tenant, "quotas", qs);
}

/* The tenant the path names, for the caller: an admin sees only its own (404 otherwise). */
static int quota_tenant(PGconn *conn, struct call *c, char id[24], struct drv_err *err)
{
    const char *name = c->seg[2];
    if (c->who.role != ROLE_SUPER && strcmp(name, c->who.tenant) != 0)
        return call_fail(c, 404, "not-found", NULL, "no tenant \"%s\"", name);
    return store_tenant_id(conn, name, id, err);
}

int api__h_quota_get(PGconn *conn, struct call *c, struct drv_err *err)
{
    char id[24];
    json_t *u = NULL;
    int rc = quota_tenant(conn, c, id, err);
    if (rc == 0)
        rc = store_tenant_usage(conn, id, &u, err);
    if (rc)
        return rc;
    c->out = quota_view(c, c->seg[2], u);
    json_decref(u);
    c->status = 200;
    return 0;
}

/* The tenant's cached tokens carry its heavy quota (auth.c): forget them on this node. */
static int quota_forget_on_loop(struct call *c)
{
    api__guard_forget_tenant(api__guard(c->api), json_string_value(c->loop_data));
    return 0;
}

int api__h_quota_put(PGconn *conn, struct call *c, struct drv_err *err)
{
    int rc = api__need_body(c);
    if (rc)
        return rc;
    const char *k;
    json_t *v;
    json_object_foreach(c->body, k, v)
    {
        int q = 0;
        while (q < API_QUOTA_COUNT && strcmp(quota_defs[q].name, k) != 0)
            q++;
        if (q == API_QUOTA_COUNT && strcmp(k, HEAVY) == 0) {
            long most = c->opts->heavy_threads - 1;
            if (json_is_null(v))
                continue;
            if (!json_is_integer(v) || json_integer_value(v) < 1)
                return call_fail(c, 400, "invalid", k,
                                 "field \"%s\": expected a positive integer or null (the "
                                 "default)",
                                 k);
            if (json_integer_value(v) > most) {
                json_decref(c->err_detail);
                c->err_detail =
                    json_pack("{s:s, s:I, s:I}", "quota", HEAVY, "asked",
                              (json_int_t)json_integer_value(v), "limit", (json_int_t)most);
                return call_fail(c, 422, "invalid", k,
                                 "quota \"heavy\": %lld heavy requests at once would let one "
                                 "tenant hold every heavy thread of a node (api.heavy_threads = "
                                 "%ld): at most %ld",
                                 (long long)json_integer_value(v), c->opts->heavy_threads, most);
            }
            continue;
        }
        if (q == API_QUOTA_COUNT)
            return call_fail(c, 400, "invalid", k,
                             "field \"%s\": not a quota (clusters, nodes, jobs, "
                             "resource_versions, resource_bytes, heavy)",
                             k);
        if (!json_is_null(v) && (!json_is_integer(v) || json_integer_value(v) < 0))
            return call_fail(c, 400, "invalid", k,
                             "field \"%s\": expected a non-negative integer (0: no limit) or "
                             "null (the default)",
                             k);
    }
    char id[24];
    json_t *u = NULL;
    if ((rc = quota_tenant(conn, c, id, err)) != 0 || (rc = store_begin(conn, err)) != 0)
        return rc;
    rc = store_tenant_lock_quota(conn, id, err);
    if (rc == 0)
        rc = store_tenant_usage(conn, id, &u, err);
    json_t *mine = NULL;
    if (rc == 0) {
        mine = json_deep_copy(json_object_get(u, "quotas"));
        if (!json_is_object(mine)) {
            json_decref(mine);
            mine = json_object();
        }
        json_object_foreach(c->body, k, v)
        {
            if (json_is_null(v))
                json_object_del(mine, k);
            else
                json_object_set(mine, k, v);
        }
        char *text = json_dumps(mine, JSON_COMPACT | JSON_SORT_KEYS);
        rc = store_tenant_quotas_set(conn, id, text, err);
        free(text);
        json_object_set(u, "quotas", mine);
    }
    if (rc == 0)
        rc = api__audit(conn, c, "tenant.quotas", "tenant", c->seg[2], json_incref(mine), err);
    if (rc == 0)
        rc = store_commit(conn, err);
    json_decref(mine);
    if (rc == 0) {
        c->out = quota_view(c, c->seg[2], u);
        c->status = 200;
        json_decref(c->loop_data);
        c->loop_data = json_string(id);
        c->on_loop = quota_forget_on_loop;
    }
    json_decref(u);
    return rc;
}
