/*
 * handlers_resources: a tenant's plugin resources (docs/api.md "Resources"):
 * push a new version, list the versions, fetch one.
 *
 * A push (admin) checks the bundle (resbundle.h: relative paths only, no
 * "..", bounded size), stores its canonical text as the tenant's next version
 * in one transaction with its audit entry, then, on the loop, announces it in
 * /drover/resources/<tenant> as {"version", "sha256"} (never the content).
 * The announcement only moves forward: a push that finds a newer version
 * announced (by this tenant: it carries the tenant's id, since a deleted
 * tenant's name can be used again) leaves it. It is a hint for workers to fetch early: jobs pin
 * their version from PostgreSQL (engine/job_pg.c) and workers fetch a pinned
 * version on demand, so a lost announcement costs a late fetch, never a wrong
 * one.
 *
 * The fetch (GET /v1/resources/{version}, any role of the tenant: workers use
 * a user's token) replies the stored canonical text as is, so that its
 * SHA-256 is the version's checksum.
 *
 * Quotas (quota.c): a push prunes the tenant's versions beyond quota.resource_versions
 * that no unfinished job pins, in its own transaction, and is refused (nothing written)
 * when what is left is still over the versions or bytes quota.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api_int.h"
#include "coord.h"
#include "handlers.h"
#include "log.h"
#include "resbundle.h"
#include "store.h"
#include "xalloc.h"
#include "zkpath.h"

#define MODULE "api"
#define RESOURCES_MAX_BYTES (3u << 20) /* decoded content of one version */

/* ---- the announcement (loop thread) ---------------------------------------------------- */

struct announce {
    struct call *c;
    char path[200];
    json_int_t version;
    char *data;
    int tries;
};

static void announce_end(struct announce *a, int rc)
{
    if (rc)
        log_warn(MODULE,
                 "event=resources-announce-failed path=%s version=%lld error=%s (workers fetch "
                 "on demand)",
                 a->path, (long long)a->version, drv_strerror(rc));
    else
        log_info(MODULE, "event=resources-announced path=%s version=%lld", a->path,
                 (long long)a->version);
    api__reply(a->c);
    free(a->data);
    free(a);
}

static void announce_try(struct announce *a);

static void announce_set(const struct coord_txn_result *r, void *arg)
{
    struct announce *a = arg;
    if (r->rc == DRV_ECONFLICT && a->tries < 5)
        return announce_try(a); /* another push moved it meanwhile: look again */
    announce_end(a, r->rc);
}

static void announce_read(int rc, const char *data, int version, void *arg)
{
    struct announce *a = arg;
    if (rc) {
        announce_end(a, rc);
        return;
    }
    json_t *cur = json_loads(data ? data : "", 0, NULL);
    json_int_t have = json_integer_value(json_object_get(cur, "version"));
    /* An announcement of an earlier tenant of this name does not count. */
    const char *tid = json_string_value(json_object_get(cur, "tenant_id"));
    if (!tid || strcmp(tid, a->c->who.tenant_id) != 0)
        have = 0;
    json_decref(cur);
    if (have >= a->version) {
        announce_end(a, 0); /* a newer push announced itself already */
        return;
    }
    struct coord_txn *t = coord_txn_new();
    coord_txn_set(t, a->path, a->data, version);
    coord_txn_commit(api__zk(a->c->api), t, NULL, announce_set, a);
}

static void announce_try(struct announce *a)
{
    a->tries++;
    coord_get(api__zk(a->c->api), a->path, announce_read, a);
}

static void announce_ensured(int rc, void *arg)
{
    struct announce *a = arg;
    if (rc) {
        announce_end(a, rc);
        return;
    }
    announce_try(a);
}

static int announce_on_loop(struct call *c)
{
    struct coord_session *zk = api__zk(c->api);
    if (!zk)
        return 0;
    struct announce *a = xcalloc(1, sizeof(*a));
    a->c = c;
    zkpath_resources(a->path, sizeof(a->path), c->who.tenant);
    a->version = json_integer_value(json_object_get(c->out, "version"));
    json_t *d = json_pack("{s:I, s:O, s:s, s:I}", "version", a->version, "sha256",
                          json_object_get(c->out, "sha256"), "tenant_id", c->who.tenant_id, "at",
                          (json_int_t)time(NULL));
    a->data = json_dumps(d, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(d);
    coord_ensure_path(zk, a->path, announce_ensured, a);
    return 1;
}

/* ---- handlers (pool threads) ------------------------------------------------------------- */

int api__h_resources_push(PGconn *conn, struct call *c, struct drv_err *err)
{
    if (api__need_body(c))
        return DRV_EINVAL;
    json_t *files = json_object_get(c->body, "files");
    if (!files)
        return call_fail(c, 400, "invalid", "files", "field \"files\": required");
    size_t total = 0;
    struct drv_err e;
    int rc = resbundle_check(files, RESOURCES_MAX_BYTES, &total, &e);
    if (rc == DRV_ETOOBIG)
        return call_fail(c, 413, "too-large", "files", "field \"files\": %s", e.msg);
    if (rc)
        return call_fail(c, 400, "invalid", "files", "field \"files\": %s", e.msg);
    char *body = resbundle_canonical(files);
    char sha[65], size[24], n[24];
    resbundle_sha256_hex(body, strlen(body), sha);
    snprintf(size, sizeof(size), "%zu", total);
    snprintf(n, sizeof(n), "%zu", json_object_size(files));
    json_t *row = NULL;
    rc = store_begin(conn, err);
    if (rc == 0)
        rc = api__quota_lock(conn, c, err);
    if (rc == 0)
        rc = store_resource_insert(conn, c->who.tenant_id, sha, size, n, body, c->who.user, &row,
                                   err);
    free(body);
    /* Quotas (quota.c): older unpinned versions pruned, then versions and bytes checked;
       over either, the whole push rolls back (prune included). */
    if (rc == 0)
        rc = api__quota_after_push(conn, c, (long)total, err);
    char vs[24] = "";
    if (rc == 0) {
        snprintf(vs, sizeof(vs), "%lld",
                 (long long)json_integer_value(json_object_get(row, "version")));
        rc = api__audit(conn, c, "resources.push", "resources", vs,
                        json_pack("{s:s, s:s, s:s}", "sha256", sha, "size", size, "files", n), err);
    }
    if (rc == 0)
        rc = store_commit(conn, err);
    if (rc) {
        json_decref(row);
        return rc;
    }
    c->out = row;
    c->status = 201;
    c->on_loop = announce_on_loop;
    return 0;
}

int api__h_resources_list(PGconn *conn, struct call *c, struct drv_err *err)
{
    json_t *items;
    int rc = store_resource_list(conn, c->who.tenant_id, &items, err);
    if (rc)
        return rc;
    c->out = json_pack("{s:o}", "items", items);
    c->status = 200;
    return 0;
}

int api__h_resources_get(PGconn *conn, struct call *c, struct drv_err *err)
{
    const char *v = c->seg[2];
    char *end = NULL;
    long n = strtol(v, &end, 10);
    if (!*v || *end || n < 1 || n > 1000000000)
        return call_fail(c, 400, "invalid", "version", "version \"%.40s\": a positive integer", v);
    json_t *row;
    int rc = store_resource_get(conn, c->who.tenant_id, v, &row, err);
    if (rc)
        return rc;
    const char *body = json_string_value(json_object_get(row, "body"));
    c->raw = xstrdup(body ? body : "{}");
    c->raw_type = "application/json";
    json_decref(row);
    c->status = 200;
    return 0;
}
