/*
 * handlers_clusters: clusters, their operations and the plan preview
 * (docs/api.md "Clusters").
 *
 * A create, a preview and the operations that change the layout are checked
 * against the tenant's catalogue (400, 422 unknown-reference, 422
 * unsatisfiable) and solved before anything is written; a create or an
 * operation is then recorded with its pending job and audit entry in one
 * transaction. Pool-thread code, after authentication.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "handlers.h"
#include "log.h"
#include "model.h"
#include "planner.h"
#include "planner_model.h"
#include "solver.h"
#include "store.h"
#include "xalloc.h"

/* ---- clusters ---------------------------------------------------------------------- */

/* The tenant's catalogue as the model sees it, and each entity's version. */
static int load_catalog(PGconn *conn, struct call *c, struct model_catalog **out, json_t **rows,
                        struct drv_err *err)
{
    int rc = store_entity_all(conn, c->who.tenant_id, rows, err);
    if (rc)
        return rc;
    struct model_catalog *cat = model_catalog_new();
    size_t i;
    json_t *r;
    json_array_foreach(*rows, i, r)
    {
        int k = model_kind_parse(json_string_value(json_object_get(r, "kind")));
        struct drv_err e;
        if (k >= 0 && model_catalog_put_json(cat, (enum model_kind)k, json_object_get(r, "body"),
                                             NULL, &e) != 0)
            log_warn("api", "event=bad_stored_entity kind=%s name=%s", model_kind_name(k),
                     json_string_value(json_object_get(r, "name")));
    }
    *out = cat;
    return 0;
}

static int entity_version(const json_t *rows, const char *kind, const char *name)
{
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r)
    {
        if (strcmp(json_string_value(json_object_get(r, "kind")), kind) == 0 &&
            strcmp(json_string_value(json_object_get(r, "name")), name) == 0)
            return (int)json_integer_value(json_object_get(r, "version"));
    }
    return 0;
}

/* Check a create request against the template; 0 or call_fail. Fills the choices. */
static int check_create(struct call *c, const struct model_catalog *cat,
                        const struct model_template *t, long nodes, const char **provider,
                        const char **hw, const char **img, json_t *services)
{
    if (!*provider)
        *provider = t->default_provider;
    if (!*hw)
        *hw = t->default_hardwaretype;
    if (!*img)
        *img = t->default_imagetype;
    if (!*provider)
        return call_fail(c, 400, "invalid", "provider",
                         "field \"provider\": required (template \"%s\" has no default)", t->name);
    if (!model_catalog_provider(cat, *provider))
        return call_fail(c, 422, "unknown-reference", "provider", "no provider \"%s\"", *provider);
    if (*hw && !model_catalog_hardwaretype(cat, *hw))
        return call_fail(c, 422, "unknown-reference", "hardwaretype", "no hardwaretype \"%s\"",
                         *hw);
    if (*img && !model_catalog_imagetype(cat, *img))
        return call_fail(c, 422, "unknown-reference", "imagetype", "no imagetype \"%s\"", *img);
    if (*hw && t->compat_hardwaretypes.n && !model_strlist_has(&t->compat_hardwaretypes, *hw))
        return call_fail(c, 422, "unsatisfiable", "hardwaretype",
                         "template \"%s\" does not allow hardwaretype \"%s\"", t->name, *hw);
    if (*img && t->compat_imagetypes.n && !model_strlist_has(&t->compat_imagetypes, *img))
        return call_fail(c, 422, "unsatisfiable", "imagetype",
                         "template \"%s\" does not allow imagetype \"%s\"", t->name, *img);
    size_t i;
    json_t *v;
    json_array_foreach(services, i, v)
    {
        const char *s = json_string_value(v);
        if (!model_catalog_service(cat, s))
            return call_fail(c, 422, "unknown-reference", "services", "no service \"%s\"", s);
        if (t->compat_services.n && !model_strlist_has(&t->compat_services, s))
            return call_fail(c, 422, "unsatisfiable", "services",
                             "template \"%s\" does not allow service \"%s\"", t->name, s);
        const struct model_service_constraint *sc = model_template_constraint(t, s);
        if (sc && sc->qmin > nodes)
            return call_fail(c, 422, "unsatisfiable", "nodes",
                             "service \"%s\" needs at least %d nodes, asked for %ld", s, sc->qmin,
                             nodes);
    }
    if ((t->size_min >= 0 && nodes < t->size_min) || (t->size_max >= 0 && nodes > t->size_max))
        return call_fail(c, 422, "unsatisfiable", "nodes",
                         "template \"%s\" allows %d to %d nodes, asked for %ld", t->name,
                         t->size_min >= 0 ? t->size_min : 1, t->size_max >= 0 ? t->size_max : 10000,
                         nodes);
    return 0;
}

static int opt_string(struct call *c, const char *field, const char **out)
{
    json_t *v = json_object_get(c->body, field);
    *out = NULL;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v) || json_string_length(v) == 0)
        return call_fail(c, 400, "invalid", field, "field \"%s\": expected a string", field);
    *out = json_string_value(v);
    return 0;
}

/* A create (or preview) request, validated and solved. */
struct create_req {
    const char *name, *tname; /* borrowed from the body */
    long nodes;
    json_t *services; /* the cluster's services (array) */
    char *provider, *hw, *img;
    char *config; /* JSON text */
    int tversion;
    struct model_catalog *cat;
    struct model_template *t;
    struct model_layout *layout;
};

static void create_req_release(struct create_req *r)
{
    json_decref(r->services);
    free(r->provider);
    free(r->hw);
    free(r->img);
    free(r->config);
    model_layout_free(r->layout);
    model_template_free(r->t);
    model_catalog_free(r->cat);
    memset(r, 0, sizeof(*r));
}

/*
 * Check the body's fields (400), the references (422 unknown-reference), the
 * template's rules (422 unsatisfiable), then solve the layout (422
 * unsatisfiable with the solver's reason). need_name: a create (a preview
 * may leave the name out).
 */
static int create_prepare(PGconn *conn, struct call *c, int need_name, struct create_req *r,
                          struct drv_err *err)
{
    memset(r, 0, sizeof(*r));
    int rc = api__need_body(c);
    if (rc)
        return rc;
    json_t *jname = json_object_get(c->body, "name"), *jt = json_object_get(c->body, "template"),
           *jn = json_object_get(c->body, "nodes"), *js = json_object_get(c->body, "services"),
           *jc = json_object_get(c->body, "config");
    if (!jname && need_name)
        return call_fail(c, 400, "invalid", "name", "field \"name\": required");
    if (jname && (!json_is_string(jname) || !api__name_ok(json_string_value(jname), 0)))
        return call_fail(c, 400, "invalid", "name",
                         "field \"name\": expected 1 to 63 letters, digits, '.', '_' or '-'");
    if (!jt)
        return call_fail(c, 400, "invalid", "template", "field \"template\": required");
    if (!json_is_string(jt))
        return call_fail(c, 400, "invalid", "template", "field \"template\": expected a string");
    if (!jn)
        return call_fail(c, 400, "invalid", "nodes", "field \"nodes\": required");
    if (!json_is_integer(jn))
        return call_fail(c, 400, "invalid", "nodes", "field \"nodes\": expected an integer");
    r->nodes = (long)json_integer_value(jn);
    if (r->nodes < 1 || r->nodes > 10000)
        return call_fail(c, 400, "invalid", "nodes", "field \"nodes\": expected 1 to 10000");
    if (js && !api__string_list_ok(js))
        return call_fail(c, 400, "invalid", "services",
                         "field \"services\": expected an array of strings");
    if (jc && !json_is_object(jc))
        return call_fail(c, 400, "invalid", "config", "field \"config\": expected an object");
    const char *provider, *hw, *img;
    if ((rc = opt_string(c, "provider", &provider)) || (rc = opt_string(c, "hardwaretype", &hw)) ||
        (rc = opt_string(c, "imagetype", &img)))
        return rc;
    const char *req_hw = hw, *req_img = img;
    r->name = jname ? json_string_value(jname) : NULL;
    r->tname = json_string_value(jt);

    json_t *rows;
    if ((rc = load_catalog(conn, c, &r->cat, &rows, err)) != 0)
        return rc;
    r->tversion = entity_version(rows, "clustertemplate", r->tname);
    json_decref(rows);
    if (!model_catalog_template(r->cat, r->tname, false))
        return call_fail(c, 422, "unknown-reference", "template", "no clustertemplate \"%s\"",
                         r->tname);
    if (model_template_resolve(r->cat, r->tname, &r->t, err) != 0)
        return call_fail(c, 422, "unsatisfiable", "template", "%s", err->msg);
    if (js) {
        r->services = json_incref(js);
    } else {
        r->services = json_array();
        for (size_t i = 0; i < r->t->default_services.n; i++)
            json_array_append_new(r->services, json_string(r->t->default_services.v[i]));
    }
    rc = check_create(c, r->cat, r->t, r->nodes, &provider, &hw, &img, r->services);
    if (rc)
        return rc;
    r->provider = xstrdup(provider);
    r->hw = hw ? xstrdup(hw) : NULL;
    r->img = img ? xstrdup(img) : NULL;
    r->config = json_dumps(jc                     ? jc
                           : r->t->default_config ? r->t->default_config
                                                  : NULL,
                           JSON_COMPACT | JSON_SORT_KEYS);
    if (!r->config)
        r->config = xstrdup("{}");

    size_t n = json_array_size(r->services);
    const char **names = xcalloc(n + 1, sizeof(*names));
    for (size_t i = 0; i < n; i++)
        names[i] = json_string_value(json_array_get(r->services, i));
    struct solver_request sr = {
        .catalog = r->cat,
        .tmpl = r->t,
        .nodes = (unsigned)r->nodes,
        .services = names,
        .n_services = n,
        .provider = r->provider,
        .hardwaretype = req_hw,
        .imagetype = req_img,
        .cmp_prefers_supersets = true,
    };
    rc = solver_solve(&sr, &r->layout, err);
    free(names);
    if (rc == DRV_EUNSAT || rc == DRV_EINVAL)
        return call_fail(c, 422, "unsatisfiable", NULL, "no layout: %s", err->msg);
    return rc;
}

int api__h_cluster_create(PGconn *conn, struct call *c, struct drv_err *err)
{
    struct create_req r;
    int rc = create_prepare(conn, c, 1, &r, err);
    char version[16], size[16];
    snprintf(version, sizeof(version), "%d", r.tversion);
    snprintf(size, sizeof(size), "%ld", r.nodes);
    char *svc_text = r.services ? json_dumps(r.services, JSON_COMPACT) : NULL;
    json_t *lj = r.layout ? model_layout_to_json(r.layout, false) : NULL;
    char *layout_text = lj ? json_dumps(lj, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(lj);
    char *req_text = json_dumps(c->body, JSON_COMPACT | JSON_SORT_KEYS);
    json_t *cluster = NULL, *job = NULL;
    if (rc == 0)
        rc = store_begin(conn, err);
    if (rc == 0) {
        struct store_cluster_new n = {
            .tenant_id = c->who.tenant_id,
            .owner_id = c->who.user_id,
            .name = r.name,
            .template_name = r.tname,
            .template_version = version,
            .provider = r.provider,
            .size = size,
            .services = svc_text,
            .hardwaretype = r.hw,
            .imagetype = r.img,
            .config = r.config,
            .layout = layout_text,
        };
        rc = store_cluster_insert(conn, &n, &cluster, err);
    }
    const char *cid = cluster ? json_string_value(json_object_get(cluster, "id")) : NULL;
    if (rc == 0)
        rc = store_job_insert(conn, c->who.tenant_id, cid, "create", req_text, c->who.user_id, &job,
                              err);
    if (rc == 0)
        rc = api__audit(conn, c, "cluster.create", "cluster", cid,
                        json_pack("{s:s, s:s, s:s}", "name", r.name, "template", r.tname, "job",
                                  json_string_value(json_object_get(job, "id"))),
                        err);
    if (rc == 0)
        rc = store_commit(conn, err);
    free(svc_text);
    free(layout_text);
    free(req_text);
    create_req_release(&r);
    if (rc) {
        json_decref(cluster);
        json_decref(job);
        return rc;
    }
    c->out = json_pack("{s:o, s:o}", "cluster", cluster, "job", job);
    c->status = 202;
    return 0;
}

/* POST /v1/plans: solve and plan a create, write nothing. */
int api__h_preview(PGconn *conn, struct call *c, struct drv_err *err)
{
    char *format = call_query(c, "format");
    int dot = format && strcmp(format, "dot") == 0;
    int bad = format && !dot && strcmp(format, "json") != 0;
    free(format);
    if (bad)
        return call_fail(c, 400, "invalid", "format", "query parameter \"format\": json or dot");
    struct create_req r;
    int rc = create_prepare(conn, c, 0, &r, err);
    struct planner_input *in = NULL;
    struct planner_plan *plan = NULL;
    if (rc == 0)
        rc = planner_input_from_model(r.cat, r.t, NULL, r.layout, &in, err);
    if (rc == 0) {
        in->provider = r.provider;
        const struct model_provider *p = model_catalog_provider(r.cat, r.provider);
        in->providertype = p && *p->providertype ? p->providertype : in->providertype;
        struct planner_request pr = planner_input_request(in, PLANNER_OP_CREATE, NULL, 0);
        rc = planner_build(&pr, &plan, err);
        if (rc == DRV_EINVAL || rc == DRV_ECYCLE)
            rc = call_fail(c, 422, "unsatisfiable", NULL, "no plan: %s", err->msg);
    }
    if (rc == 0 && dot) {
        c->raw = planner_plan_to_dot(plan, NULL);
        c->raw_type = "text/vnd.graphviz";
    } else if (rc == 0) {
        c->out = json_pack("{s:o, s:o, s:I}", "layout", model_layout_to_json(r.layout, false),
                           "plan", planner_plan_to_json(plan), "tasks", (json_int_t)plan->n_tasks);
    }
    if (rc == 0)
        c->status = 200;
    planner_plan_free(plan);
    planner_input_free(in);
    create_req_release(&r);
    return rc;
}

int api__h_cluster_list(PGconn *conn, struct call *c, struct drv_err *err)
{
    json_t *items;
    int rc = store_cluster_list(conn, c->who.tenant_id, call_owner(c), &items, err);
    if (rc)
        return rc;
    c->out = json_pack("{s:o}", "items", items);
    c->status = 200;
    return 0;
}

int api__h_cluster_get(PGconn *conn, struct call *c, struct drv_err *err)
{
    int rc = store_cluster_get(conn, c->who.tenant_id, call_owner(c), c->seg[2], 0, &c->out, err);
    if (rc == 0)
        c->status = 200;
    return rc;
}

/* Validate an operation's body; 0 or call_fail. */
static int check_op(struct call *c, const char *op, const json_t *cluster)
{
    const json_t *b = c->body;
    json_t *jn = b ? json_object_get(b, "nodes") : NULL;
    json_t *js = b ? json_object_get(b, "services") : NULL;
    if (strcmp(op, "expand") == 0 || strcmp(op, "shrink") == 0) {
        if (!jn)
            return call_fail(c, 400, "invalid", "nodes", "field \"nodes\": required");
        if (!json_is_integer(jn) || json_integer_value(jn) < 1 || json_integer_value(jn) > 10000)
            return call_fail(c, 400, "invalid", "nodes", "field \"nodes\": expected 1 to 10000");
        long size = (long)json_integer_value(json_object_get(cluster, "size"));
        if (strcmp(op, "shrink") == 0 && json_integer_value(jn) >= size)
            return call_fail(c, 422, "unsatisfiable", "nodes",
                             "cannot remove %lld of the cluster's %ld nodes",
                             (long long)json_integer_value(jn), size);
    } else if (strcmp(op, "addservices") == 0 || strcmp(op, "removeservices") == 0) {
        if (!js)
            return call_fail(c, 400, "invalid", "services", "field \"services\": required");
        if (!api__string_list_ok(js) || json_array_size(js) == 0)
            return call_fail(c, 400, "invalid", "services",
                             "field \"services\": expected a non-empty array of strings");
    } else if (strcmp(op, "configure") == 0) {
        json_t *jc = b ? json_object_get(b, "config") : NULL;
        if (!json_is_object(jc))
            return call_fail(c, 400, "invalid", "config", "field \"config\": expected an object");
    } else if (strcmp(op, "start") == 0 || strcmp(op, "stop") == 0 || strcmp(op, "restart") == 0) {
        if (js && !api__string_list_ok(js))
            return call_fail(c, 400, "invalid", "services",
                             "field \"services\": expected an array of strings");
    } else if (strcmp(op, "upgrade") == 0) {
        json_t *v = b ? json_object_get(b, "template_version") : NULL;
        if (v && (!json_is_integer(v) || json_integer_value(v) < 1))
            return call_fail(c, 400, "invalid", "template_version",
                             "field \"template_version\": expected a positive integer");
    } else if (strcmp(op, "delete") != 0) {
        return call_fail(c, 404, "not-found", NULL, "no operation \"%s\"", op);
    }
    return 0;
}

/* The cluster's services after addservices or removeservices of body's "services". */
static json_t *services_after(const json_t *now, const char *op, const json_t *change)
{
    json_t *out = json_array();
    size_t i, k;
    json_t *v, *w;
    json_array_foreach(now, i, v)
    {
        int named = 0;
        json_array_foreach(change, k, w) named |= json_equal(v, w);
        if (!(named && strcmp(op, "removeservices") == 0))
            json_array_append(out, v);
    }
    if (strcmp(op, "addservices") == 0) {
        json_array_foreach(change, k, w)
        {
            int have = 0;
            json_array_foreach(out, i, v) have |= json_equal(v, w);
            if (!have)
                json_array_append(out, w);
        }
    }
    return out;
}

/*
 * Operations that change the layout (expand, shrink, addservices,
 * removeservices) solve the target before anything is recorded, with the
 * cluster's current layout as a constraint: its nodes keep their hardware and
 * image, uninvolved services never move, a shrink never drops the only
 * holder of a service. A change that cannot be met is 422 with the solver's
 * reason; otherwise *target is the new layout (JSON), stored with the job.
 * Other operations leave *target NULL. The tenant's current catalogue is used.
 */
static int solve_change(PGconn *conn, struct call *c, const char *op, const json_t *cluster,
                        json_t **target, struct drv_err *err)
{
    *target = NULL;
    int grow = strcmp(op, "expand") == 0 || strcmp(op, "shrink") == 0;
    if (!grow && strcmp(op, "addservices") != 0 && strcmp(op, "removeservices") != 0)
        return 0;
    const char *tname = json_string_value(json_object_get(cluster, "template"));
    struct model_catalog *cat = NULL;
    struct model_template *t = NULL;
    struct model_layout *existing = NULL, *layout = NULL;
    json_t *rows = NULL, *services = NULL;
    int rc = load_catalog(conn, c, &cat, &rows, err);
    json_decref(rows);
    if (rc == 0 && model_template_resolve(cat, tname, &t, err) != 0)
        rc = call_fail(c, 422, "unknown-reference", "template", "template \"%s\": %s", tname,
                       err->msg);
    if (rc == 0 &&
        model_layout_from_json(json_object_get(cluster, "layout"), &existing, err) != 0) {
        log_error("api", "event=bad_stored_layout cluster=%s error=\"%s\"", c->seg[2], err->msg);
        rc = call_fail(c, 500, "internal", NULL, "internal error (see the server log)");
    }
    if (rc == 0) {
        json_int_t nodes = grow ? json_integer_value(json_object_get(c->body, "nodes"))
                                : json_integer_value(json_object_get(cluster, "size"));
        if (strcmp(op, "expand") == 0)
            nodes += json_integer_value(json_object_get(cluster, "size"));
        else if (strcmp(op, "shrink") == 0)
            nodes = json_integer_value(json_object_get(cluster, "size")) - nodes;
        services = grow ? json_incref(json_object_get(cluster, "services"))
                        : services_after(json_object_get(cluster, "services"), op,
                                         json_object_get(c->body, "services"));
        size_t n = json_array_size(services);
        const char **names = xcalloc(n + 1, sizeof(*names));
        for (size_t i = 0; i < n; i++)
            names[i] = json_string_value(json_array_get(services, i));
        struct solver_request sr = {
            .catalog = cat,
            .tmpl = t,
            .nodes = (unsigned)nodes,
            .services = n ? names : NULL,
            .n_services = n,
            .provider = json_string_value(json_object_get(cluster, "provider")),
            .existing = existing,
            .cmp_prefers_supersets = true,
        };
        rc = solver_solve(&sr, &layout, err);
        free(names);
        if (rc == DRV_EUNSAT || rc == DRV_EINVAL)
            rc = call_fail(c, 422, "unsatisfiable", NULL, "no layout: %s", err->msg);
    }
    if (rc == 0)
        *target =
            json_pack("{s:o, s:o, s:I}", "layout", model_layout_to_json(layout, false), "services",
                      json_incref(services), "size", (json_int_t)model_layout_size(layout));
    json_decref(services);
    model_layout_free(layout);
    model_layout_free(existing);
    model_template_free(t);
    model_catalog_free(cat);
    return rc;
}

static int cluster_operation(PGconn *conn, struct call *c, const char *op, struct drv_err *err)
{
    /* Unknown operations are 404 before anything is read. */
    static const char *const ops[] = {"expand",    "shrink", "addservices", "removeservices",
                                      "configure", "start",  "stop",        "restart",
                                      "upgrade",   "delete", NULL};
    int known = 0;
    for (const char *const *o = ops; *o; o++)
        known |= strcmp(*o, op) == 0;
    if (!known)
        return call_fail(c, 404, "not-found", NULL, "no operation \"%s\"", op);
    json_t *cluster = NULL, *open = NULL, *job = NULL;
    int rc = store_begin(conn, err);
    if (rc == 0)
        rc = store_cluster_get(conn, c->who.tenant_id, call_owner(c), c->seg[2], 1, &cluster, err);
    if (rc == 0)
        rc = check_op(c, op, cluster);
    if (rc == 0) {
        rc = store_cluster_open_job(conn, c->seg[2], &open, err);
        if (rc == 0)
            rc = call_fail(c, 409, "conflict", NULL, "cluster \"%s\" is busy: job %s (%s) is %s",
                           c->seg[2], json_string_value(json_object_get(open, "id")),
                           json_string_value(json_object_get(open, "operation")),
                           json_string_value(json_object_get(open, "status")));
        else if (rc == DRV_ENOENT)
            rc = 0;
        json_decref(open);
    }
    json_t *target = NULL;
    if (rc == 0)
        rc = solve_change(conn, c, op, cluster, &target, err);
    /* The job's request: what was asked, and the solved target when the layout changes. */
    json_t *request = c->body ? json_deep_copy(c->body) : json_object();
    if (target)
        json_object_set_new(request, "target", target);
    char *req = json_dumps(request, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(request);
    if (rc == 0)
        rc =
            store_job_insert(conn, c->who.tenant_id, c->seg[2], op, req, c->who.user_id, &job, err);
    free(req);
    if (rc == 0 && strcmp(op, "delete") == 0) {
        rc = store_cluster_set_status(conn, c->seg[2], "deleting", err);
        json_object_set_new(cluster, "status", json_string("deleting"));
    }
    if (rc == 0) {
        char action[48];
        snprintf(action, sizeof(action), "cluster.%s", op);
        rc = api__audit(conn, c, action, "cluster", c->seg[2],
                        json_pack("{s:s}", "job", json_string_value(json_object_get(job, "id"))),
                        err);
    }
    if (rc == 0)
        rc = store_commit(conn, err);
    if (rc) {
        json_decref(cluster);
        json_decref(job);
        return rc;
    }
    json_object_del(cluster, "nodes");
    c->out = json_pack("{s:o, s:o}", "cluster", cluster, "job", job);
    c->status = 202;
    return 0;
}

int api__h_cluster_op(PGconn *conn, struct call *c, struct drv_err *err)
{
    return cluster_operation(conn, c, c->seg[3], err);
}

int api__h_cluster_delete(PGconn *conn, struct call *c, struct drv_err *err)
{
    return cluster_operation(conn, c, "delete", err);
}
