/*
 * handlers_drain: an operator's drain and undrain of one member
 * (docs/api.md "Fleet", docs/operations.md "Drain").
 *
 *   POST /v1/members/{id}/drain|undrain   a droverd   (superadmin: it serves every tenant)
 *   POST /v1/workers/{id}/drain           a worker    (superadmin, its tenant's admin)
 *
 * The call reaches whichever droverd the load balancer picked, usually not
 * the one named. It is handed to the named process through ZooKeeper: the
 * persistent znode /drover/control/<group>/<id> is set to
 * {"want":...,"by":...,"at":...,"incarnation":...}, which that process
 * watches (coord_control_watch). The incarnation (host, pid, start time) is
 * read from the member znode now, so the request applies to the process that
 * runs now and never to one started later under the same id. The reply (202)
 * says the request is recorded; the member's znode ("draining", "drained",
 * "owned", shown by GET /v1/members) says how far it got.
 *
 * Database part (pool): a tenant admin's worker drain checked against the worker's
 * tenant (api__worker_tenant; 404 otherwise, with no audit entry), then the audit
 * entry. Loop part: the member looked up in
 * the group the API watches (404 when it is not a member), then the znode
 * written (create when missing), then the reply.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api_int.h"
#include "coord.h"
#include "handlers.h"
#include "log.h"
#include "xalloc.h"
#include "zkpath.h"

#define MODULE "api"

struct control_write {
    struct call *c;
    char *path, *data;
    struct coord_session *zk; /* for the tenant's binding (coord_acl_unbind) */
    bool bound;
};

static void write_free(struct control_write *w)
{
    if (w->bound)
        coord_acl_unbind(w->zk, w->path);
    free(w->path);
    free(w->data);
    free(w);
}

static void unavailable(struct call *c)
{
    json_decref(c->out);
    c->out = NULL;
    call_fail(c, 503, "unavailable", NULL, "zookeeper unavailable, try again");
}

static void written(int rc, void *arg)
{
    struct control_write *w = arg;
    if (rc) {
        log_warn(MODULE, "event=member-control-failed path=%s error=%s", w->path, drv_strerror(rc));
        unavailable(w->c);
    }
    api__reply(w->c);
    write_free(w);
}

static void parent_ready(int rc, void *arg)
{
    struct control_write *w = arg;
    if (rc) {
        unavailable(w->c);
        api__reply(w->c);
        write_free(w);
        return;
    }
    coord_upsert(api__zk(w->c->api), w->path, w->data, written, w);
}

static int control_on_loop(struct call *c)
{
    const char *group = json_string_value(json_object_get(c->loop_data, "group"));
    const char *id = json_string_value(json_object_get(c->loop_data, "id"));
    const char *want = json_string_value(json_object_get(c->loop_data, "want"));
    struct coord_session *zk = api__zk(c->api);
    if (!zk || coord_session_state(zk) != COORD_CONNECTED) {
        call_fail(c, 503, "unavailable", NULL, "zookeeper unavailable, try again");
        return 0;
    }
    bool droverd = strcmp(group, "droverd") == 0;
    json_t *members = droverd ? api__members(c->api) : api__workers(c->api);
    const json_t *data = NULL;
    size_t i;
    json_t *m;
    bool proven = true;
    json_array_foreach(members, i, m)
    {
        if (strcmp(json_string_value(json_object_get(m, "id")), id) == 0) {
            data = json_object_get(m, "data");
            proven = !json_is_false(json_object_get(m, "proven"));
        }
    }
    /* A member whose ACL does not prove its tenant belongs to no tenant (the superadmin
       alone drains it, and its request is bound to no tenant). */
    const char *tenant = proven ? json_string_value(json_object_get(data, "tenant")) : NULL;
    bool other_tenant =
        !droverd && c->who.role != ROLE_SUPER && (!tenant || strcmp(tenant, c->who.tenant) != 0);
    if (!data || other_tenant) {
        call_fail(c, 404, "not-found", NULL, "no %s member \"%s\"", droverd ? "droverd" : "worker",
                  id);
        return 0;
    }
    char inc[400];
    char *mj = json_dumps(data, JSON_COMPACT);
    int rc = coord_control_incarnation_of(mj, inc, sizeof(inc));
    free(mj);
    if (rc) {
        call_fail(c, 409, "conflict", NULL, "member \"%s\" does not say its pid", id);
        return 0;
    }
    struct control_write *w = xcalloc(1, sizeof(*w));
    w->c = c;
    w->zk = zk;
    w->path = zkpath_control(NULL, 0, group, id);
    json_t *d = json_pack("{s:s, s:s, s:I, s:s}", "want", want, "by", c->who.user, "at",
                          (json_int_t)time(NULL), "incarnation", inc);
    w->data = json_dumps(d, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(d);
    c->out = json_pack("{s:s, s:s, s:s, s:s}", "member", id, "group", group, "want", want,
                       "incarnation", inc);
    c->status = 202;
    /* A worker's request is readable by its tenant's workers' identity (coord_acl_grant). */
    if (!droverd && tenant) {
        coord_acl_bind(zk, w->path, tenant);
        w->bound = true;
    }
    char parent[64];
    zkpath_control_group(parent, sizeof(parent), group);
    coord_ensure_path(zk, parent, parent_ready, w);
    return 1;
}

static int control(PGconn *conn, struct call *c, const char *group, const char *want,
                   struct drv_err *err)
{
    /* The tenant check before the audit entry (issue 20): a refused call leaves no entry
     * in the caller's audit log. The loop part checks again against the same view. */
    char tenant[128];
    if (strcmp(group, "worker") == 0 && c->who.role != ROLE_SUPER &&
        (!api__worker_tenant(c->api, c->seg[2], tenant, sizeof(tenant)) ||
         strcmp(tenant, c->who.tenant) != 0))
        return call_fail(c, 404, "not-found", NULL, "no worker member \"%s\"", c->seg[2]);
    char action[40];
    snprintf(action, sizeof(action), "%s.%s", strcmp(group, "droverd") == 0 ? "member" : "worker",
             want);
    int rc = api__audit(conn, c, action, strcmp(group, "droverd") == 0 ? "member" : "worker",
                        c->seg[2], NULL, err);
    if (rc)
        return rc;
    json_decref(c->loop_data);
    c->loop_data = json_pack("{s:s, s:s, s:s}", "group", group, "id", c->seg[2], "want", want);
    c->on_loop = control_on_loop;
    c->status = 202;
    return 0;
}

int api__h_member_action(PGconn *conn, struct call *c, struct drv_err *err)
{
    const char *act = c->seg[3];
    if (strcmp(act, "drain") != 0 && strcmp(act, "undrain") != 0)
        return call_fail(c, 404, "not-found", NULL, "no member action \"%s\"", act);
    return control(conn, c, "droverd", act, err);
}

int api__h_worker_action(PGconn *conn, struct call *c, struct drv_err *err)
{
    if (strcmp(c->seg[3], "drain") != 0)
        return call_fail(c, 404, "not-found", NULL, "no worker action \"%s\"", c->seg[3]);
    return control(conn, c, "worker", "drain", err);
}
