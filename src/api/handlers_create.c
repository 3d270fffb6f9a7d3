/*
 * handlers_create: a cluster's create and its preview (docs/api.md
 * "Clusters"), each in parts:
 *
 *   store pool: the body's fields (400), the references (422
 *               unknown-reference) and the template's rules (422
 *               unsatisfiable) against the tenant's catalogue
 *   heavy pool: solve the layout (422 with the solver's reason); a preview
 *               also plans and builds its page of the reply
 *   store pool: (create) the cluster, its pending job and the audit entry in
 *               one transaction
 *
 * so solving and planning never hold one of the database connections that
 * short requests need. The catalogue read in the first part is what the
 * solver uses: a template replaced in between is seen by the next request.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "handlers.h"
#include "jmerge.h"
#include "model.h"
#include "planner.h"
#include "planner_model.h"
#include "solver.h"
#include "store.h"
#include "xalloc.h"

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

/* A create (or preview) request, validated and solved: the call's work between its parts. */
struct create_req {
    const char *name, *tname;     /* borrowed from the body */
    const char *req_hw, *req_img; /* as asked (borrowed from the body), NULL: the solver picks */
    long nodes;
    json_t *services; /* the cluster's services (array) */
    char *provider, *hw, *img;
    char *config; /* JSON text */
    int tversion;
    struct model_catset *set;        /* the catalogue checked against (pinned with the job) */
    const struct model_catalog *cat; /* set's */
    struct model_template *t;
    struct model_layout *layout;
};

static void create_req_clear(struct create_req *r)
{
    json_decref(r->services);
    free(r->provider);
    free(r->hw);
    free(r->img);
    free(r->config);
    model_layout_free(r->layout);
    model_template_free(r->t);
    model_catset_unref(r->set);
}

static void create_req_free(void *w)
{
    create_req_clear(w);
    free(w);
}

/*
 * The database part of a create or a preview: check the body's fields (400),
 * the references (422 unknown-reference) and the template's rules (422
 * unsatisfiable) against the tenant's catalogue, which r keeps for the
 * solver. need_name: a create (a preview may leave the name out).
 */
static int create_load(PGconn *conn, struct call *c, int need_name, struct create_req *r,
                       struct drv_err *err)
{
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
    r->req_hw = hw;
    r->req_img = img;
    r->name = jname ? json_string_value(jname) : NULL;
    r->tname = json_string_value(jt);

    if ((rc = api__load_catalog(conn, c, &r->set, err)) != 0)
        return rc;
    r->cat = model_catset_catalog(r->set);
    r->tversion = api__entity_version(model_catset_rows(r->set), "clustertemplate", r->tname);
    if (!model_catalog_template(r->cat, r->tname, false))
        return call_fail(c, 422, "unknown-reference", "template", "no clustertemplate \"%s\"",
                         r->tname);
    if (model_template_resolve(r->cat, r->tname, &r->t, err) != 0)
        return call_fail(c, 422, "unsatisfiable", "template", "%s", err->msg);
    /* Sensitive config values are sealed before anything keeps them (the job's request
       carries the body); "********" keeps the template's default. */
    struct api__place at = {"cluster", r->name ? r->name : "", "config"};
    if (jc && (rc = api__seal(c, jc, r->t->default_config, NULL, &at, "config")) != 0)
        return rc;
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
    /* The user's config is merged over the template's defaults (RFC 7396: null removes a
       default, objects merge, anything else replaces; docs/catalog.md). What the cluster
       keeps: its own values sealed at its own place (those from the template opened at the
       template's and sealed again). */
    json_t *merged =
        jc ? jmerge_patch(r->t->default_config, jc) : json_deep_copy(r->t->default_config);
    if (!json_is_object(merged)) {
        json_decref(merged);
        merged = json_object();
    }
    if ((rc = api__seal_rebind(c, merged, r->cat, r->tname, at.name)) != 0) {
        json_decref(merged);
        return rc;
    }
    r->config = json_dumps(merged, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(merged);

    return 0;
}

/* The compute part: solve the layout (422 unsatisfiable with the solver's reason). */
static int create_solve(struct call *c, struct create_req *r, struct drv_err *err)
{
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
        .hardwaretype = r->req_hw,
        .imagetype = r->req_img,
        .cmp_prefers_supersets = true,
    };
    int rc = solver_solve(&sr, &r->layout, err);
    free(names);
    if (rc == DRV_EUNSAT || rc == DRV_EINVAL)
        return call_fail(c, 422, "unsatisfiable", NULL, "no layout: %s", err->msg);
    return rc;
}

/* A create's last part: the cluster, its job and the audit entry in one transaction; fast:
 * the quota's check that does not serialise the tenant's creates (API_QUOTA_SLOW when it
 * cannot decide). */
static int create_txn(PGconn *conn, struct call *c, bool fast, struct drv_err *err)
{
    struct create_req *rp = c->work, r = *rp;
    int rc = 0;
    char version[16], size[16];
    snprintf(version, sizeof(version), "%d", r.tversion);
    snprintf(size, sizeof(size), "%ld", r.nodes);
    char *svc_text = r.services ? json_dumps(r.services, JSON_COMPACT) : NULL;
    json_t *lj = r.layout ? model_layout_to_json(r.layout, false) : NULL;
    char *layout_text = lj ? json_dumps(lj, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(lj);
    char *req_text = json_dumps(c->body, JSON_COMPACT | JSON_SORT_KEYS);
    json_t *cluster = NULL, *job = NULL;
    char catv[24];
    snprintf(catv, sizeof(catv), "%lld", model_catset_version(r.set));
    if (rc == 0)
        rc = store_begin(conn, err);
    /* The job is planned from the catalogue checked here (its version, pinned once per
       version: store_catalog_pin), not from whatever the engine would read later. */
    if (rc == 0)
        rc = api__pin_catalog(conn, r.set, err);
    /* The rows first, the tenant row's lock last (api__quota_check_after): the lock that
       serialises the tenant's quota checks is held from the count to the commit only, not
       over the inserts (docs/api.md "Quotas"). */
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
        rc = store_job_insert(conn, c->who.tenant_id, cid, "create", req_text, c->who.user_id, catv,
                              &job, err);
    if (rc == 0)
        rc = api__audit(conn, c, "cluster.create", "cluster", cid,
                        json_pack("{s:s, s:s, s:s}", "name", r.name, "template", r.tname, "job",
                                  json_string_value(json_object_get(job, "id"))),
                        err);
    if (rc == 0) { /* counts this create's rows; a tenant deleted meanwhile: refused */
        long asked[API_QUOTA_COUNT] = {
            [API_QUOTA_CLUSTERS] = 1, [API_QUOTA_NODES] = r.nodes, [API_QUOTA_JOBS] = 1};
        rc = fast ? api__quota_check_fast(conn, c, asked, err)
                  : api__quota_check_after(conn, c, asked, err);
    }
    if (rc == 0)
        rc = store_commit(conn, err);
    if (rc == 0)
        model_catset_set_pinned(r.set);
    free(svc_text);
    free(layout_text);
    free(req_text);
    if (rc) {
        json_decref(cluster);
        json_decref(job);
        return rc;
    }
    c->out = json_pack("{s:o, s:o}", "cluster", cluster, "job", job);
    c->status = 202;
    api__announce(c, json_string_value(json_object_get(job, "id")), cid, "create");
    return 0;
}

static int create_write(PGconn *conn, struct call *c, struct drv_err *err)
{
    int rc = create_txn(conn, c, true, err);
    if (rc == API_QUOTA_SLOW) { /* near a limit: the same again, with the exact check */
        store_rollback(conn);
        rc = create_txn(conn, c, false, err);
    }
    return rc;
}

static int create_heavy(struct call *c, struct drv_err *err)
{
    int rc = create_solve(c, c->work, err);
    if (rc == 0)
        c->then = create_write;
    return rc;
}

static struct create_req *create_work(struct call *c)
{
    struct create_req *r = xcalloc(1, sizeof(*r));
    c->work = r;
    c->work_free = create_req_free;
    return r;
}

/* POST /v1/clusters: load and check (here), solve (heavy pool), write (store pool). */
int api__h_cluster_create(PGconn *conn, struct call *c, struct drv_err *err)
{
    int rc = create_load(conn, c, 1, create_work(c), err);
    if (rc == 0)
        c->heavy = create_heavy;
    return rc;
}

/* ---- preview --------------------------------------------------------------------- */

/* The plan's JSON with tasks [offset, offset + limit) only. */
static json_t *plan_page(const struct planner_plan *plan, size_t offset, size_t limit)
{
    json_t *tasks = json_array();
    for (size_t i = offset; i < plan->n_tasks && i < offset + limit; i++)
        json_array_append_new(tasks, planner_task_to_json(plan, &plan->tasks[i]));
    return json_pack("{s:i, s:s, s:i, s:o}", "format_version", plan->format_version, "operation",
                     planner_op_name(plan->op), "max_per_node", plan->max_per_node, "tasks", tasks);
}

struct preview {
    struct create_req r;
    bool dot, stages;
    long offset, limit;
};

static void preview_free(void *w)
{
    struct preview *p = w;
    create_req_clear(&p->r);
    free(p);
}

/* The compute part of a preview: solve, plan, and the page of the reply. */
static int preview_heavy(struct call *c, struct drv_err *err)
{
    struct preview *p = c->work;
    struct create_req *r = &p->r;
    int rc = create_solve(c, r, err);
    struct planner_input *in = NULL;
    struct planner_plan *plan = NULL;
    if (rc == 0)
        rc = planner_input_from_model(r->cat, r->t, NULL, r->layout, &in, err);
    if (rc == 0) {
        in->provider = r->provider;
        const struct model_provider *pv = model_catalog_provider(r->cat, r->provider);
        in->providertype = pv && *pv->providertype ? pv->providertype : in->providertype;
        struct planner_request pr = planner_input_request(in, PLANNER_OP_CREATE, NULL, 0);
        rc = planner_build(&pr, &plan, err);
        if (rc == DRV_EINVAL || rc == DRV_ECYCLE)
            rc = call_fail(c, 422, "unsatisfiable", NULL, "no plan: %s", err->msg);
    }
    if (rc == 0 && p->dot && plan->n_tasks > API_PAGE_MAX) {
        rc = call_fail(c, 422, "too-large", NULL,
                       "the plan has %zu tasks; as DOT at most %d, use the JSON pages",
                       plan->n_tasks, API_PAGE_MAX);
    } else if (rc == 0 && p->dot) {
        c->raw = planner_plan_to_dot(plan, NULL);
        c->raw_type = "text/vnd.graphviz";
    } else if (rc == 0) {
        size_t next = (size_t)(p->offset + p->limit);
        json_t *sum = api__plan_summary(plan, NULL, err);
        json_t *stages = NULL;
        struct planner_stages *st = NULL;
        if (p->stages && planner_stages(plan, &st, err) == 0)
            stages = planner_stages_to_json(plan, st);
        planner_stages_free(st);
        c->out = json_pack("{s:o, s:o*, s:o, s:o, s:I, s:I, s:I, s:o}", "summary", sum, "stages",
                           stages, "layout", model_layout_to_json(r->layout, false), "plan",
                           plan_page(plan, (size_t)p->offset, (size_t)p->limit), "tasks",
                           (json_int_t)plan->n_tasks, "offset", (json_int_t)p->offset, "limit",
                           (json_int_t)p->limit, "next",
                           next < plan->n_tasks ? json_integer((json_int_t)next) : json_null());
    }
    if (rc == 0)
        c->status = 200;
    planner_plan_free(plan);
    planner_input_free(in);
    return rc;
}

/* POST /v1/plans: load and check (here), then solve and plan (heavy pool); nothing written. */
int api__h_preview(PGconn *conn, struct call *c, struct drv_err *err)
{
    char *format = call_query(c, "format");
    bool dot = format && strcmp(format, "dot") == 0;
    bool stages = format && strcmp(format, "stages") == 0;
    bool bad = format && !dot && !stages && strcmp(format, "json") != 0;
    free(format);
    if (bad)
        return call_fail(c, 400, "invalid", "format",
                         "query parameter \"format\": json, stages or dot");
    struct preview *p = xcalloc(1, sizeof(*p));
    c->work = p;
    c->work_free = preview_free;
    p->dot = dot;
    p->stages = stages;
    int rc = api__page_params(c, &p->offset, &p->limit);
    if (rc == 0)
        rc = create_load(conn, c, 0, &p->r, err);
    if (rc == 0)
        c->heavy = preview_heavy;
    return rc;
}
