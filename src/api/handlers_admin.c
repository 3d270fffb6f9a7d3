/*
 * handlers_admin: who am I, the server's version, the audit log, tenants and users
 * (docs/api.md "Tenants and users").
 *
 * Pool-thread code: each handler runs after authentication with the caller
 * in c->who; writes run in one transaction with their audit entry.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "coord.h"
#include "drover_version.h"
#include "guard.h"
#include "handlers.h"
#include "log.h"
#include "store.h"
#include "xalloc.h"

/* ---- tenants, users, tokens ------------------------------------------------------ */

int api__h_whoami(PGconn *conn, struct call *c, struct drv_err *err)
{
    static const char *const roles[] = {"", "superadmin", "admin", "", "user"};
    c->out = json_pack("{s:s, s:s, s:s, s:s}", "user", c->who.user, "user_id", c->who.user_id,
                       "role", roles[c->who.role], "tenant", c->who.tenant);
    c->status = 200;
    return 0;
}

int api__h_version(PGconn *conn, struct call *c, struct drv_err *err)
{
    c->out = json_pack("{s:s, s:s, s:i}", "version", DROVER_VERSION, "commit", DROVER_GIT_COMMIT,
                       "format", DROVER_FORMAT_VERSION);
    c->status = 200;
    return 0;
}

int api__h_audit(PGconn *conn, struct call *c, struct drv_err *err)
{
    char *limit = call_query(c, "limit");
    long n = 100;
    if (limit) {
        char *end;
        n = strtol(limit, &end, 10);
        int bad = !*limit || *end || n < 1 || n > 1000;
        free(limit);
        if (bad)
            return call_fail(c, 400, "invalid", "limit",
                             "query parameter \"limit\": expected 1 to 1000");
    }
    char tenant_id[24] = "", ns[16];
    snprintf(ns, sizeof(ns), "%ld", n);
    int rc;
    if (c->who.role == ROLE_SUPER) {
        char *t = call_query(c, "tenant");
        rc = t ? store_tenant_id(conn, t, tenant_id, err) : 0;
        free(t);
        if (rc)
            return rc;
    } else {
        snprintf(tenant_id, sizeof(tenant_id), "%s", c->who.tenant_id);
    }
    json_t *items;
    if ((rc = store_audit_list(conn, *tenant_id ? tenant_id : NULL, ns, &items, err)) != 0)
        return rc;
    c->out = json_pack("{s:o}", "items", items);
    c->status = 200;
    return 0;
}

int api__h_tenant_list(PGconn *conn, struct call *c, struct drv_err *err)
{
    json_t *items;
    int rc = store_tenant_list(conn, &items, err);
    if (rc)
        return rc;
    c->out = json_pack("{s:o}", "items", items);
    c->status = 200;
    return 0;
}

static void tenant_added(int rc, void *arg)
{
    struct call *c = arg;
    if (rc) /* the tenant is recorded; its workers may join once a droverd restarts */
        log_warn("api", "event=tenant-zk-grant-failed tenant=%s rc=%d",
                 json_string_value(json_object_get(c->out, "name")), rc);
    api__reply(c);
}

/* Its workers' ZooKeeper identity may join and open its queues (coord_acl_tenant_add). */
static int tenant_add_on_loop(struct call *c)
{
    struct coord_session *zk = api__zk(c->api);
    if (!zk)
        return 0;
    coord_acl_tenant_add(zk, json_string_value(json_object_get(c->out, "name")), tenant_added, c);
    return 1;
}

int api__h_tenant_create(PGconn *conn, struct call *c, struct drv_err *err)
{
    int rc = api__need_body(c);
    if (rc)
        return rc;
    const char *name = json_string_value(json_object_get(c->body, "name"));
    if (!name || !api__name_ok(name, 1))
        return call_fail(c, 400, "invalid", "name",
                         "field \"name\": expected 1 to 63 lowercase letters, digits, '_' or '-'");
    json_t *row;
    if ((rc = store_begin(conn, err)) != 0 || (rc = store_tenant_insert(conn, name, &row, err)))
        return rc;
    rc = api__audit(conn, c, "tenant.create", "tenant",
                    json_string_value(json_object_get(row, "id")), NULL, err);
    if (rc == 0)
        rc = store_commit(conn, err);
    if (rc) {
        json_decref(row);
        return rc;
    }
    c->out = row;
    c->status = 201;
    c->on_loop = tenant_add_on_loop;
    return 0;
}

int api__h_user_create(PGconn *conn, struct call *c, struct drv_err *err)
{
    int rc = api__need_body(c);
    if (rc)
        return rc;
    const char *name = json_string_value(json_object_get(c->body, "name"));
    const char *role = json_string_value(json_object_get(c->body, "role"));
    json_t *jt = json_object_get(c->body, "tenant");
    if (!name || !api__name_ok(name, 1))
        return call_fail(c, 400, "invalid", "name",
                         "field \"name\": expected 1 to 63 lowercase letters, digits, '_' or '-'");
    if (!role || (strcmp(role, "admin") != 0 && strcmp(role, "user") != 0))
        return call_fail(c, 400, "invalid", "role",
                         "field \"role\": expected \"admin\" or \"user\"");
    if (jt && !json_is_string(jt))
        return call_fail(c, 400, "invalid", "tenant", "field \"tenant\": expected a string");
    char tenant_id[24];
    const char *tenant = jt ? json_string_value(jt) : NULL;
    if (c->who.role == ROLE_SUPER) {
        if (!tenant)
            return call_fail(c, 400, "invalid", "tenant", "field \"tenant\": required");
        rc = store_tenant_id(conn, tenant, tenant_id, err);
        if (rc == DRV_ENOENT)
            return call_fail(c, 422, "unknown-reference", "tenant", "no tenant \"%s\"", tenant);
        if (rc)
            return rc;
    } else {
        if (tenant && strcmp(tenant, c->who.tenant) != 0)
            return call_fail(c, 422, "unknown-reference", "tenant", "no tenant \"%s\"", tenant);
        tenant = c->who.tenant;
        snprintf(tenant_id, sizeof(tenant_id), "%s", c->who.tenant_id);
    }
    char user_id[24], token[90];
    if ((rc = store_begin(conn, err)) != 0)
        return rc;
    rc = store_user_insert(conn, tenant_id, name, role, user_id, err);
    if (rc == 0)
        rc = api__token_new(conn, user_id, c->opts->token_ttl_ms / 1000, "", token, NULL, err);
    if (rc == 0)
        rc = store_audit(conn, tenant_id, c->who.user_id, c->who.user, "user.create", "user",
                         user_id, c->source, NULL, err);
    if (rc == 0)
        rc = store_commit(conn, err);
    if (rc)
        return rc;
    c->out = json_pack("{s:{s:s, s:s, s:s, s:s}, s:s}", "user", "id", user_id, "name", name, "role",
                       role, "tenant", tenant, "token", token);
    c->status = 201;
    return 0;
}

int api__h_user_list(PGconn *conn, struct call *c, struct drv_err *err)
{
    char tenant_id[24];
    int rc;
    if (c->who.role == ROLE_SUPER) {
        char *t = call_query(c, "tenant");
        if (!t)
            return call_fail(c, 400, "invalid", "tenant", "query parameter \"tenant\": required");
        rc = store_tenant_id(conn, t, tenant_id, err);
        free(t);
        if (rc)
            return rc;
    } else {
        snprintf(tenant_id, sizeof(tenant_id), "%s", c->who.tenant_id);
    }
    json_t *items;
    if ((rc = store_user_list(conn, tenant_id, &items, err)) != 0)
        return rc;
    c->out = json_pack("{s:o}", "items", items);
    c->status = 200;
    return 0;
}

/* The tenant a request names: ?tenant= for a superadmin (required), the caller's own else. */
static int target_tenant(PGconn *conn, struct call *c, char tenant_id[24], struct drv_err *err)
{
    if (c->who.role != ROLE_SUPER) {
        snprintf(tenant_id, 24, "%s", c->who.tenant_id);
        return 0;
    }
    char *t = call_query(c, "tenant");
    if (!t)
        return call_fail(c, 400, "invalid", "tenant", "query parameter \"tenant\": required");
    int rc = store_tenant_id(conn, t, tenant_id, err);
    free(t);
    return rc;
}

static int forget_user_on_loop(struct call *c)
{
    api__guard_forget_user(api__guard(c->api), json_string_value(c->loop_data));
    return 0;
}

/*
 * DELETE /v1/users/{name}: the user is marked deleted and its tokens revoked;
 * its clusters and jobs stay with the tenant, whose admins keep seeing and
 * operating them (a new user of the same name does not inherit them).
 */
int api__h_user_delete(PGconn *conn, struct call *c, struct drv_err *err)
{
    char tenant_id[24], user_id[24];
    int rc = target_tenant(conn, c, tenant_id, err);
    if (rc)
        return rc;
    if (c->who.role != ROLE_SUPER && strcmp(c->seg[2], c->who.user) == 0)
        return call_fail(c, 409, "conflict", NULL, "you cannot delete yourself");
    if ((rc = store_begin(conn, err)) != 0)
        return rc;
    rc = store_user_delete(conn, tenant_id, c->seg[2], user_id, err);
    if (rc == 0)
        rc = store_audit(conn, tenant_id, c->who.user_id, c->who.user, "user.delete", "user",
                         user_id, c->source, NULL, err);
    if (rc == 0)
        rc = store_commit(conn, err);
    if (rc)
        return rc;
    c->loop_data = json_string(user_id);
    c->on_loop = forget_user_on_loop;
    c->status = 204;
    return 0;
}

static int forget_tenant_on_loop(struct call *c)
{
    api__guard_forget_tenant(api__guard(c->api), json_string_value(c->loop_data));
    return 0;
}

/*
 * DELETE /v1/tenants/{name}: refused (409) while the tenant has live
 * clusters, since their machines must be deleted by delete jobs first; then
 * the tenant, its users (tokens revoked) and its entities are marked deleted.
 * History (jobs, audit) stays; the name may be used again.
 */
int api__h_tenant_delete(PGconn *conn, struct call *c, struct drv_err *err)
{
    char tenant_id[24];
    int rc = store_begin(conn, err);
    if (rc == 0)
        rc = store_tenant_delete(conn, c->seg[2], tenant_id, err);
    if (rc == 0)
        rc = store_audit(conn, NULL, c->who.user_id, c->who.user, "tenant.delete", "tenant",
                         tenant_id, c->source, NULL, err);
    if (rc == 0)
        rc = store_commit(conn, err);
    if (rc)
        return rc;
    c->loop_data = json_string(tenant_id);
    c->on_loop = forget_tenant_on_loop;
    c->status = 204;
    return 0;
}
