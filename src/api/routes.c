/*
 * routes: the table of /v1 paths, their methods, handlers and roles, and
 * the lookup that picks a call's handler (404 for an unknown path, 405 for
 * a known path with another method). Pure: runs on the loop, and in the
 * fuzz target.
 */
#include <stdio.h>
#include <string.h>

#include "api_int.h"
#include "handlers.h"
#include "http.h"

#define ALL (ROLE_SUPER | ROLE_ADMIN | ROLE_USER)
#define TENANT (ROLE_ADMIN | ROLE_USER)

/* ---- routing ------------------------------------------------------------------------- */

struct route {
    int methods;
    const char *pattern; /* segments: literal, "*" any, "{kind}" an entity collection */
    api_handler fn;
    unsigned roles;
};

#define GET API_M_GET
#define POST API_M_POST
#define PUT API_M_PUT
#define DEL API_M_DELETE

static const struct route routes[] = {
    {GET, "v1/whoami", api__h_whoami, ALL},
    {GET, "v1/version", api__h_version, ALL},
    {POST, "v1/tokens", api__h_token_new, ALL},
    {GET, "v1/tokens", api__h_token_list, ALL},
    {DEL, "v1/tokens/*", api__h_token_revoke, ALL},
    {GET, "v1/audit", api__h_audit, ROLE_SUPER | ROLE_ADMIN},
    {GET, "v1/tenants", api__h_tenant_list, ROLE_SUPER},
    {POST, "v1/tenants", api__h_tenant_create, ROLE_SUPER},
    {DEL, "v1/tenants/*", api__h_tenant_delete, ROLE_SUPER},
    {GET, "v1/tenants/*/quotas", api__h_quota_get, ROLE_SUPER | ROLE_ADMIN},
    {PUT, "v1/tenants/*/quotas", api__h_quota_put, ROLE_SUPER},
    {GET, "v1/users", api__h_user_list, ROLE_SUPER | ROLE_ADMIN},
    {POST, "v1/users", api__h_user_create, ROLE_SUPER | ROLE_ADMIN},
    {DEL, "v1/users/*", api__h_user_delete, ROLE_SUPER | ROLE_ADMIN},
    {POST, "v1/import", api__h_import, ROLE_ADMIN},
    {GET, "v1/export", api__h_export, ROLE_ADMIN},
    {GET, "v1/clusters", api__h_cluster_list, TENANT},
    {POST, "v1/clusters", api__h_cluster_create, TENANT},
    {GET, "v1/clusters/*", api__h_cluster_get, TENANT},
    {DEL, "v1/clusters/*", api__h_cluster_delete, TENANT},
    {GET, "v1/clusters/*/snapshots", api__h_cluster_snapshots, TENANT},
    {GET, "v1/clusters/*/snapshots/*", api__h_cluster_snapshots, TENANT},
    {POST, "v1/clusters/*/*", api__h_cluster_op, TENANT},
    {POST, "v1/plans", api__h_preview, TENANT},
    {GET, "v1/jobs", api__h_job_list, TENANT},
    {GET, "v1/jobs/*", api__h_job_get, TENANT},
    {GET, "v1/jobs/*/plan", api__h_job_plan, TENANT},
    {GET, "v1/jobs/*/attempts", api__h_job_attempts, TENANT},
    {GET, "v1/jobs/*/tasks", api__h_job_tasks, TENANT},
    {GET, "v1/jobs/*/tasks/groups", api__h_job_task_groups, TENANT},
    {POST, "v1/jobs/*/*", api__h_job_action, TENANT},
    {GET, "v1/members", api__h_members, ROLE_SUPER | ROLE_ADMIN},
    {POST, "v1/members/*/*", api__h_member_action, ROLE_SUPER}, /* a droverd serves every tenant */
    {GET, "v1/workers", api__h_workers, ROLE_ADMIN},
    {POST, "v1/workers/*/*", api__h_worker_action, ROLE_SUPER | ROLE_ADMIN},
    {GET, "v1/queues", api__h_queues, ROLE_ADMIN},
    {GET, "v1/metrics", api__h_metrics, ROLE_SUPER | ROLE_ADMIN},
    {POST, "v1/resources", api__h_resources_push, ROLE_ADMIN},
    {GET, "v1/resources", api__h_resources_list, TENANT},
    {GET, "v1/resources/*", api__h_resources_get, TENANT},
    {GET, "v1/{kind}", api__h_entity_list, TENANT},
    {POST, "v1/{kind}", api__h_entity_create, ROLE_ADMIN},
    {GET, "v1/{kind}/*", api__h_entity_get, TENANT},
    {PUT, "v1/{kind}/*", api__h_entity_replace, ROLE_ADMIN},
    {DEL, "v1/{kind}/*", api__h_entity_delete, ROLE_ADMIN},
    {0, NULL, NULL, 0},
};

void api__routes_each(void (*fn)(int methods, const char *pattern, void *arg), void *arg)
{
    for (const struct route *r = routes; r->pattern; r++)
        fn(r->methods, r->pattern, arg);
}

static int matches(const char *pattern, const struct call *c)
{
    char buf[64];
    snprintf(buf, sizeof(buf), "%s", pattern);
    char *save = NULL;
    int i = 0;
    for (char *t = strtok_r(buf, "/", &save); t; t = strtok_r(NULL, "/", &save), i++) {
        if (i >= c->nseg)
            return 0;
        if (strcmp(t, "*") == 0)
            continue;
        if (strcmp(t, "{kind}") == 0) {
            if (api__kind_of(c->seg[i]) < 0)
                return 0;
            continue;
        }
        if (strcmp(t, c->seg[i]) != 0)
            return 0;
    }
    return i == c->nseg;
}

/* Routes that solve or plan: a create, a preview, the operations that change the layout. */
static bool heavy(const struct call *c)
{
    static const char *const ops[] = {"expand",         "shrink",  "addservices",
                                      "removeservices", "upgrade", NULL};
    if (c->method != API_M_POST || c->nseg < 2)
        return false;
    if (c->nseg == 2)
        return strcmp(c->seg[1], "plans") == 0 || strcmp(c->seg[1], "clusters") == 0;
    if (c->nseg == 4 && strcmp(c->seg[1], "clusters") == 0)
        for (const char *const *o = ops; *o; o++)
            if (strcmp(*o, c->seg[3]) == 0)
                return true;
    return false;
}

/* "GET, HEAD, POST" for the methods in mask. */
static void allow_list(unsigned mask, char *out, size_t n)
{
    static const struct {
        unsigned m;
        const char *name;
    } names[] = {{GET, "GET, HEAD"}, {POST, "POST"}, {PUT, "PUT"}, {DEL, "DELETE"}};
    out[0] = '\0';
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (mask & names[i].m)
            snprintf(out + strlen(out), n - strlen(out), "%s%s", out[0] ? ", " : "", names[i].name);
}

int api__route(struct call *c)
{
    if (c->method == API_M_UNKNOWN)
        return call_fail(c, 501, "not-implemented", NULL, "method not implemented");
    int method = c->method == API_M_HEAD ? API_M_GET : c->method;
    unsigned allowed = 0;
    for (const struct route *r = routes; r->pattern; r++) {
        if (!matches(r->pattern, c))
            continue;
        allowed |= (unsigned)r->methods;
        if (r->methods & method) {
            c->handler = r->fn;
            c->roles = r->roles;
            c->route = r->pattern;
            c->is_heavy = heavy(c);
            return 0;
        }
    }
    if (allowed) {
        allow_list(allowed, c->allow, sizeof(c->allow));
        return call_fail(c, 405, "method-not-allowed", NULL, "method not allowed on %s", c->path);
    }
    return call_fail(c, 404, "not-found", NULL, "no such path %s", c->path);
}
