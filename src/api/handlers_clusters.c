/*
 * handlers_clusters: reading clusters, and their operations (docs/api.md
 * "Clusters"); the create and the preview are in handlers_create.c.
 *
 * An operation is checked against the cluster and the tenant's catalogue
 * (400, 422 unknown-reference, 422 unsatisfiable) and, when it changes the
 * layout, solved before anything is written; it is then recorded with its
 * pending job and audit entry in one transaction. Pool-thread code, after
 * authentication.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "handlers.h"
#include "jmerge.h"
#include "log.h"
#include "model.h"
#include "planner.h"
#include "planner_model.h"
#include "solver.h"
#include "store.h"
#include "xalloc.h"

/* ---- clusters ---------------------------------------------------------------------- */

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
        rc = api__cluster_links(conn, c->who.tenant_id, c->out, err);
    if (rc == 0)
        c->status = 200;
    return rc;
}

int api__h_cluster_snapshots(PGconn *conn, struct call *c, struct drv_err *err)
{
    json_t *out;
    int rc = store_cluster_snapshots(conn, c->who.tenant_id, call_owner(c), c->seg[2],
                                     c->nseg == 5 ? c->seg[4] : NULL, &out, err);
    if (rc)
        return rc;
    c->out = c->nseg == 5 ? out : json_pack("{s:o}", "items", out);
    c->status = 200;
    return 0;
}

/* ---- operations ------------------------------------------------------------------ */

#define MAX_NODES 10000

static bool op_is(const char *op, const char *a)
{
    return strcmp(op, a) == 0;
}

/* The operations that change the layout, solved before they are recorded. */
static bool op_solves(const char *op)
{
    return op_is(op, "expand") || op_is(op, "shrink") || op_is(op, "addservices") ||
           op_is(op, "removeservices") || op_is(op, "upgrade") || op_is(op, "recreate");
}

static bool has_service(const json_t *list, const char *s)
{
    size_t i;
    json_t *v;
    json_array_foreach(list, i, v) if (strcmp(json_string_value(v), s) == 0) return true;
    return false;
}

/* The shape of an operation's body, and what the cluster alone decides; 0 or call_fail. */
static int check_op(struct call *c, const char *op, const json_t *cluster)
{
    const json_t *b = c->body;
    json_t *jn = b ? json_object_get(b, "nodes") : NULL;
    json_t *js = b ? json_object_get(b, "services") : NULL;
    long size = (long)json_integer_value(json_object_get(cluster, "size"));
    const json_t *have = json_object_get(cluster, "services");
    /* A cluster in a final state other than active takes a delete only: a create that failed
       made nothing to expand or configure; an operator looks at needs-operator. */
    const char *st = json_string_value(json_object_get(cluster, "status"));
    if (op_is(op, "recreate")) {
        if (!st || strcmp(st, "failed") != 0)
            return call_fail(c, 409, "conflict", NULL,
                             "cluster \"%s\" is %s: only a failed cluster is made again", c->seg[2],
                             st ? st : "?");
        return 0;
    }
    if (st && (strcmp(st, "failed") == 0 || strcmp(st, "needs-operator") == 0) &&
        !op_is(op, "delete"))
        return call_fail(c, 409, "conflict", NULL,
                         "cluster \"%s\" is %s: only a delete (or, failed, a recreate) is possible",
                         c->seg[2], st);
    if (op_is(op, "expand") || op_is(op, "shrink")) {
        /* "size": the node count after the operation (a target, as kubectl scale); "nodes":
           how many to add or remove. */
        json_t *jz = b ? json_object_get(b, "size") : NULL;
        if (jz && jn)
            return call_fail(c, 400, "invalid", "size",
                             "fields \"size\" and \"nodes\": one or the other");
        if (jz) {
            if (!json_is_integer(jz) || json_integer_value(jz) < 1 ||
                json_integer_value(jz) > MAX_NODES)
                return call_fail(c, 400, "invalid", "size", "field \"size\": expected 1 to %d",
                                 MAX_NODES);
            long to = (long)json_integer_value(jz);
            if (op_is(op, "expand") ? to <= size : to >= size)
                return call_fail(c, 422, "unsatisfiable", "size",
                                 "the cluster has %ld nodes: %s to %ld would %s", size, op, to,
                                 op_is(op, "expand") ? "not add any" : "not remove any");
            return 0;
        }
        if (!jn)
            return call_fail(c, 400, "invalid", "nodes",
                             "field \"size\" (the node count after) or \"nodes\": required");
        if (!json_is_integer(jn) || json_integer_value(jn) < 1 ||
            json_integer_value(jn) > MAX_NODES)
            return call_fail(c, 400, "invalid", "nodes", "field \"nodes\": expected 1 to %d",
                             MAX_NODES);
        long n = (long)json_integer_value(jn);
        if (op_is(op, "shrink") && n >= size)
            return call_fail(c, 422, "unsatisfiable", "nodes",
                             "cannot remove %ld of the cluster's %ld nodes", n, size);
        if (op_is(op, "expand") && size + n > MAX_NODES)
            return call_fail(c, 422, "unsatisfiable", "nodes",
                             "the cluster would have %ld nodes, more than %d", size + n, MAX_NODES);
    } else if (op_is(op, "addservices") || op_is(op, "removeservices")) {
        if (!js)
            return call_fail(c, 400, "invalid", "services", "field \"services\": required");
        if (!api__string_list_ok(js) || json_array_size(js) == 0)
            return call_fail(c, 400, "invalid", "services",
                             "field \"services\": expected a non-empty array of strings");
        size_t i;
        json_t *v;
        json_array_foreach(js, i, v)
        {
            const char *sv = json_string_value(v);
            bool on = has_service(have, sv);
            if (op_is(op, "addservices") && on)
                return call_fail(c, 422, "unsatisfiable", "services",
                                 "the cluster already has service \"%s\"", sv);
            if (op_is(op, "removeservices") && !on)
                return call_fail(c, 422, "unsatisfiable", "services",
                                 "the cluster has no service \"%s\"", sv);
        }
    } else if (op_is(op, "configure")) {
        json_t *jc = b ? json_object_get(b, "config") : NULL;
        if (!json_is_object(jc))
            return call_fail(c, 400, "invalid", "config", "field \"config\": expected an object");
        json_t *jm = json_object_get(b, "mode");
        const char *mode = json_string_value(jm);
        if (jm && (!mode || (strcmp(mode, "merge") != 0 && strcmp(mode, "replace") != 0)))
            return call_fail(c, 400, "invalid", "mode",
                             "field \"mode\": expected \"merge\" or \"replace\"");
        if (!jm && json_object_size(jc) == 0)
            return call_fail(c, 400, "invalid", "config",
                             "field \"config\": {} would reset the cluster's config to the "
                             "template's defaults; say \"mode\": \"replace\" to do that, or "
                             "\"merge\" to change some keys");
        json_t *jr = json_object_get(b, "restart");
        if (jr && !json_is_boolean(jr))
            return call_fail(c, 400, "invalid", "restart",
                             "field \"restart\": expected true or false");
    } else if (op_is(op, "upgrade")) {
        json_t *v = b ? json_object_get(b, "template_version") : NULL;
        if (v && (!json_is_integer(v) || json_integer_value(v) < 1))
            return call_fail(c, 400, "invalid", "template_version",
                             "field \"template_version\": expected a positive integer");
    } else if (!op_is(op, "delete") && !op_is(op, "start") && !op_is(op, "stop") &&
               !op_is(op, "restart")) {
        return call_fail(c, 404, "not-found", NULL, "no operation \"%s\"", op);
    }
    /* The services a configure, start, stop or restart acts on: the cluster's own. */
    if (op_is(op, "configure") || op_is(op, "start") || op_is(op, "stop") || op_is(op, "restart")) {
        if (js && !api__string_list_ok(js))
            return call_fail(c, 400, "invalid", "services",
                             "field \"services\": expected an array of strings");
        size_t i;
        json_t *v;
        json_array_foreach(js, i, v) if (!has_service(have, json_string_value(v))) return call_fail(
            c, 422, "unsatisfiable", "services", "the cluster has no service \"%s\"",
            json_string_value(v));
    }
    return 0;
}

/* 0 when the cluster has no unfinished job, else 409 naming it. */
static int check_idle(PGconn *conn, struct call *c, struct drv_err *err)
{
    json_t *open = NULL;
    int rc = store_cluster_open_job(conn, c->seg[2], &open, err);
    if (rc == 0)
        rc = call_fail(c, 409, "conflict", NULL, "cluster \"%s\" is busy: job %s (%s) is %s",
                       c->seg[2], json_string_value(json_object_get(open, "id")),
                       json_string_value(json_object_get(open, "operation")),
                       json_string_value(json_object_get(open, "status")));
    else if (rc == DRV_ENOENT)
        rc = 0;
    json_decref(open);
    return rc;
}

/* The cluster's services after addservices or removeservices of body's "services". */
static json_t *services_after(const json_t *now, const char *op, const json_t *change)
{
    json_t *out = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(
        now, i, v) if (!(op_is(op, "removeservices") && has_service(change, json_string_value(v))))
        json_array_append(out, v);
    if (op_is(op, "addservices"))
        json_array_foreach(change, i, v) if (!has_service(out, json_string_value(v)))
            json_array_append(out, v);
    return out;
}

/* What an operation that solves carries from its first part to the others. */
struct op_work {
    const char *op;
    json_t *cluster; /* as read in the first part */
    json_t *services;
    long nodes;
    int version;                     /* upgrade: the template version asked for */
    struct model_catset *set;        /* the catalogue solved against (the job names it) */
    const struct model_catalog *cat; /* set's, or own */
    struct model_catalog *own;       /* an upgrade's: set's with the template version asked */
    struct model_template *t;
    struct model_layout *existing;
    struct model_layout *excluded; /* recreate: node layouts that failed, never used again */
    json_t *excluded_json;         /* the same, as the job's request keeps them */
    json_t *target;                /* the solved {layout, services, size} */
    bool dry;                      /* a dry run: plan and answer, record nothing */
    json_t *config;                /* dry run of a configure: the config it would apply */
    json_t *durations;             /* dry run: past task durations of the tenant */
    char revision[API_REVISION_LEN + 1];
};

static void op_work_free(void *w)
{
    struct op_work *o = w;
    json_decref(o->cluster);
    json_decref(o->services);
    model_catset_unref(o->set);
    model_catalog_free(o->own);
    model_template_free(o->t);
    model_layout_free(o->existing);
    model_layout_free(o->excluded);
    json_decref(o->excluded_json);
    json_decref(o->target);
    json_decref(o->config);
    json_decref(o->durations);
    free(o);
}

/*
 * A recreate solves the failed cluster afresh, never with a node layout that
 * failed (seed 001): those of the nodes whose tasks failed in its last job,
 * plus the ones earlier recreates excluded. Nothing failed (a cancelled
 * create): nothing excluded, the same layout again.
 */
static int recreate_load(PGconn *conn, struct call *c, struct op_work *o, struct drv_err *err)
{
    json_t *last = NULL;
    int rc = store_cluster_last_failure(conn, c->seg[2], &last, err);
    if (rc == DRV_ENOENT)
        return call_fail(c, 409, "conflict", NULL, "cluster \"%s\" has no job", c->seg[2]);
    if (rc)
        return rc;
    if (strcmp(json_string_value(json_object_get(last, "operation")), "create") != 0) {
        json_decref(last);
        return call_fail(c, 409, "conflict", NULL,
                         "cluster \"%s\": only a failed create is made again", c->seg[2]);
    }
    json_t *req = json_object_get(last, "request");
    json_t *before = json_object_get(json_object_get(req, "target"), "excluded");
    o->excluded_json = json_is_array(before) ? json_deep_copy(before) : json_array();
    size_t i, x;
    json_t *e, *have;
    json_array_foreach(json_object_get(last, "failed_layouts"), i, e)
    {
        bool dup = false;
        json_array_foreach(o->excluded_json, x, have) dup |= json_equal(have, e);
        if (!dup)
            json_array_append(o->excluded_json, e);
    }
    json_decref(last);
    if (json_array_size(o->excluded_json) == 0)
        return 0;
    json_t *l = json_pack("{s:O}", "nodes", o->excluded_json);
    rc = model_layout_from_json(l, &o->excluded, err);
    json_decref(l);
    if (rc != 0) {
        log_error("api", "event=bad-excluded-layout cluster=%s error=\"%s\"", c->seg[2], err->msg);
        return call_fail(c, 500, "internal", NULL, "internal error (see the server log)");
    }
    return 0;
}

/*
 * The target of an operation that solves, checked against the catalogue (the
 * template version an upgrade names): services the catalogue lacks are 422
 * unknown-reference, ones the template does not allow or sizes outside it 422
 * unsatisfiable. Fills o for the solver.
 */
static int op_load(PGconn *conn, struct call *c, struct op_work *o, struct drv_err *err)
{
    const json_t *cl = o->cluster;
    const char *tname = json_string_value(json_object_get(cl, "template"));
    long size = (long)json_integer_value(json_object_get(cl, "size"));
    int rc = api__load_catalog(conn, c, &o->set, err);
    if (rc)
        return rc;
    o->cat = model_catset_catalog(o->set);
    int current = api__entity_version(model_catset_rows(o->set), "clustertemplate", tname);
    if (op_is(o->op, "upgrade")) {
        json_t *v = c->body ? json_object_get(c->body, "template_version") : NULL;
        o->version = v ? (int)json_integer_value(v) : current;
        if (o->version == 0)
            return call_fail(c, 422, "unknown-reference", "template",
                             "template \"%s\" no longer exists", tname);
        if (o->version == (int)json_integer_value(json_object_get(cl, "template_version")))
            return call_fail(c, 422, "unsatisfiable", "template_version",
                             "the cluster is already at version %d of template \"%s\"", o->version,
                             tname);
        char vs[16];
        snprintf(vs, sizeof(vs), "%d", o->version);
        json_t *row = NULL;
        rc = store_entity_get_version(conn, c->who.tenant_id, "clustertemplate", tname, vs, &row,
                                      err);
        if (rc == DRV_ENOENT)
            return call_fail(c, 422, "unknown-reference", "template_version",
                             "template \"%s\" has no version %d", tname, o->version);
        if (rc)
            return rc;
        if (o->version != current) {
            /* The shared catalogue is never changed: this request's own copy gets the
               version asked for. */
            o->own = model_catalog_new();
            size_t i;
            json_t *r;
            json_array_foreach(model_catset_rows(o->set), i, r)
            {
                int k = model_kind_parse(json_string_value(json_object_get(r, "kind")));
                struct drv_err e;
                if (k >= 0)
                    model_catalog_put_json(o->own, (enum model_kind)k, json_object_get(r, "body"),
                                           NULL, &e);
            }
            o->cat = o->own;
            if (model_catalog_put_json(o->own, MODEL_TEMPLATE, json_object_get(row, "body"), NULL,
                                       err) != 0) {
                json_decref(row);
                return call_fail(c, 422, "unsatisfiable", "template_version", "%s", err->msg);
            }
        }
        json_decref(row);
    }
    if (model_template_resolve(o->cat, tname, &o->t, err) != 0)
        return call_fail(c, 422, "unknown-reference", "template", "template \"%s\": %s", tname,
                         err->msg);
    long n = json_integer_value(json_object_get(c->body, "nodes"));
    json_t *jz = json_object_get(c->body, "size");
    o->nodes = jz                       ? (long)json_integer_value(jz)
               : op_is(o->op, "expand") ? size + n
               : op_is(o->op, "shrink") ? size - n
                                        : size;
    o->services = op_is(o->op, "addservices") || op_is(o->op, "removeservices")
                      ? services_after(json_object_get(cl, "services"), o->op,
                                       json_object_get(c->body, "services"))
                      : json_incref(json_object_get(cl, "services"));
    const struct model_template *t = o->t;
    size_t i;
    json_t *v;
    json_array_foreach(o->services, i, v)
    {
        const char *sv = json_string_value(v);
        bool named = has_service(json_object_get(c->body, "services"), sv);
        if (!model_catalog_service(o->cat, sv))
            return call_fail(c, 422, "unknown-reference", "services", "no service \"%s\"", sv);
        if (t->compat_services.n && !model_strlist_has(&t->compat_services, sv))
            return call_fail(c, 422, "unsatisfiable", named ? "services" : "template_version",
                             "template \"%s\" does not allow service \"%s\"", t->name, sv);
    }
    const char *hw = json_string_value(json_object_get(cl, "hardwaretype"));
    const char *img = json_string_value(json_object_get(cl, "imagetype"));
    if (hw && t->compat_hardwaretypes.n && !model_strlist_has(&t->compat_hardwaretypes, hw))
        return call_fail(c, 422, "unsatisfiable", "template_version",
                         "template \"%s\" does not allow hardwaretype \"%s\"", t->name, hw);
    if (img && t->compat_imagetypes.n && !model_strlist_has(&t->compat_imagetypes, img))
        return call_fail(c, 422, "unsatisfiable", "template_version",
                         "template \"%s\" does not allow imagetype \"%s\"", t->name, img);
    if ((t->size_min >= 0 && o->nodes < t->size_min) ||
        (t->size_max >= 0 && o->nodes > t->size_max))
        return call_fail(c, 422, "unsatisfiable",
                         op_is(o->op, "upgrade") ? "template_version" : "nodes",
                         "template \"%s\" allows %d to %d nodes; the cluster would have %ld",
                         t->name, t->size_min >= 0 ? t->size_min : 1,
                         t->size_max >= 0 ? t->size_max : MAX_NODES, o->nodes);
    if (op_is(o->op, "recreate"))
        return recreate_load(conn, c, o, err);
    if (model_layout_from_json(json_object_get(cl, "layout"), &o->existing, err) != 0) {
        log_error("api", "event=bad-stored-layout cluster=%s error=\"%s\"", c->seg[2], err->msg);
        return call_fail(c, 500, "internal", NULL, "internal error (see the server log)");
    }
    return 0;
}

/*
 * The compute part: solve the target with the cluster's current layout as a
 * constraint (its nodes keep their hardware and image, uninvolved services
 * never move, a shrink never drops the only holder of a service). A change
 * that cannot be met is 422 with the solver's reason.
 */
static int op_record(PGconn *conn, struct call *c, struct drv_err *err);

/* A dry run's answer (handlers_plan.c) from what the first part read and the solve made. */
static int op_dry_answer(struct call *c, struct op_work *o, const struct model_layout *target,
                         struct drv_err *err)
{
    struct api_plan_in in = {
        .op = o->op,
        .body = c->body,
        .cluster = o->cluster,
        .cat = o->cat,
        .t = o->t,
        .existing = op_is(o->op, "recreate") ? NULL : o->existing,
        .target = target,
        .target_json = o->target,
        .config = o->config,
        .durations = o->durations,
        .revision = o->revision,
    };
    return api__plan_answer(c, &in, err);
}

static int op_solve(struct call *c, struct drv_err *err)
{
    struct op_work *o = c->work;
    if (!op_solves(o->op)) /* a dry run of an operation that keeps the layout */
        return op_dry_answer(c, o, NULL, err);
    size_t n = json_array_size(o->services);
    const char **names = xcalloc(n + 1, sizeof(*names));
    for (size_t i = 0; i < n; i++)
        names[i] = json_string_value(json_array_get(o->services, i));
    struct model_layout *layout = NULL;
    struct solver_request sr = {
        .catalog = o->cat,
        .tmpl = o->t,
        .nodes = (unsigned)o->nodes,
        .services = n ? names : NULL,
        .n_services = n,
        .provider = json_string_value(json_object_get(o->cluster, "provider")),
        .existing = o->existing,
        .excluded = o->excluded,
        .cmp_prefers_supersets = true,
    };
    int rc = solver_solve(&sr, &layout, err);
    free(names);
    if (rc == DRV_EUNSAT || rc == DRV_EINVAL)
        return call_fail(c, 422, "unsatisfiable", NULL, "no layout: %s", err->msg);
    if (rc)
        return rc;
    o->target = json_pack("{s:o, s:O, s:I}", "layout", model_layout_to_json(layout, false),
                          "services", o->services, "size", (json_int_t)model_layout_size(layout));
    if (o->version)
        json_object_set_new(o->target, "template_version", json_integer(o->version));
    /* The services whose config reads the nodes that change (HAProxy's backends): the
       engine configures them again in the same job (docs/planner.md). */
    if (op_is(o->op, "expand") || op_is(o->op, "shrink") || op_is(o->op, "addservices") ||
        op_is(o->op, "removeservices")) {
        json_t *rf =
            planner_model_reconf(o->cat, o->services, json_object_get(o->cluster, "config"));
        if (json_array_size(rf))
            json_object_set(o->target, "reconfigure", rf);
        json_decref(rf);
    }
    if (o->excluded_json)
        json_object_set(o->target, "excluded", o->excluded_json);
    if (o->dry) {
        rc = op_dry_answer(c, o, layout, err);
        model_layout_free(layout);
        return rc;
    }
    model_layout_free(layout);
    c->then = op_record;
    return 0;
}

/* The fields an operation is judged on: it is recorded only if they did not change meanwhile. */
static bool same_cluster(const json_t *a, const json_t *b)
{
    static const char *const keys[] = {"size",   "services",   "layout", "template_version",
                                       "status", "updated_at", NULL};
    for (const char *const *k = keys; *k; k++)
        if (!json_equal(json_object_get(a, *k), json_object_get(b, *k)))
            return false;
    return true;
}

/*
 * A configure's config as the job will apply it, sealed: with "mode": "merge", the
 * body's config is a merge patch (RFC 7396) over the cluster's current config;
 * otherwise ("replace", or no mode) it is merged over the template's current
 * defaults, as at create. Seals the body's sensitive values first ("********"
 * keeps the cluster's value). *out is new.
 */
int api__configure_config(PGconn *conn, struct call *c, const json_t *cluster, json_t **out,
                          struct drv_err *err)
{
    *out = NULL;
    json_t *jc = json_object_get(c->body, "config");
    const json_t *now = json_object_get(cluster, "config");
    const char *name = json_string_value(json_object_get(cluster, "name"));
    int rc = api__seal(c, jc, now, NULL,
                       &(struct api__place){"cluster", name ? name : "", "config"}, "config");
    if (rc)
        return rc;
    const char *mode = json_string_value(json_object_get(c->body, "mode"));
    if (mode && strcmp(mode, "merge") == 0) {
        *out = jmerge_patch(json_is_object(now) ? now : NULL, jc);
        return 0;
    }
    struct model_catset *set = NULL;
    struct model_template *t = NULL;
    rc = api__load_catalog(conn, c, &set, err);
    if (rc)
        return rc;
    const struct model_catalog *cat = model_catset_catalog(set);
    const char *tname = json_string_value(json_object_get(cluster, "template"));
    struct drv_err e;
    if (tname && model_template_resolve(cat, tname, &t, &e) == 0)
        *out = jmerge_patch(t->default_config, jc);
    else /* the template is gone: no defaults */
        *out = json_deep_copy(jc);
    /* The template's sealed defaults move to the cluster's place. */
    if (tname && *out)
        rc = api__seal_rebind(c, *out, cat, tname, name ? name : "");
    if (rc) {
        json_decref(*out);
        *out = NULL;
    }
    model_template_free(t);
    model_catset_unref(set);
    return rc;
}

/*
 * Record the operation: under the cluster row's lock, check again that it is
 * idle (and, after a solve, unchanged since it was read), then write the job
 * (its request with the solved target), the status of a delete, and the
 * audit entry, in one transaction.
 */
static int op_record(PGconn *conn, struct call *c, struct drv_err *err)
{
    struct op_work *o = c->work;
    const char *op = c->nseg == 4 ? c->seg[3] : "delete";
    json_t *cluster = NULL, *job = NULL;
    int rc = store_begin(conn, err);
    if (rc == 0) /* the tenant row first, as every quota-checked write takes it */
        rc = api__quota_lock(conn, c, err);
    if (rc == 0)
        rc = store_cluster_get(conn, c->who.tenant_id, call_owner(c), c->seg[2], 1, &cluster, err);
    if (rc == 0) {
        /* Quotas (quota.c): a job more, and the nodes a larger layout adds; a delete only
           frees, so it is never refused for them. */
        long asked[API_QUOTA_COUNT] = {0};
        if (!op_is(op, "delete"))
            asked[API_QUOTA_JOBS] = 1;
        if (o && o->target) {
            long grow = (long)json_integer_value(json_object_get(o->target, "size")) -
                        (long)json_integer_value(json_object_get(cluster, "size"));
            asked[API_QUOTA_NODES] = grow > 0 ? grow : 0;
        }
        rc = api__quota_check(conn, c, asked, err);
    }
    if (rc == 0 && !o)
        rc = check_op(c, op, cluster);
    /* A configure's sensitive values are sealed before the job keeps them; "********" keeps
       the cluster's value. The job carries the whole config it applies. */
    json_t *config = NULL;
    if (rc == 0 && op_is(op, "configure"))
        rc = api__configure_config(conn, c, cluster, &config, err);
    /* Applying a plan: the cluster must be as the plan saw it. */
    const char *want = json_string_value(json_object_get(c->body, "plan_revision"));
    if (rc == 0 && want) {
        char now[API_REVISION_LEN + 1];
        api__cluster_revision(cluster, now);
        if (strcmp(now, want) != 0)
            rc = call_fail(c, 409, "conflict", "plan_revision",
                           "cluster \"%s\" changed since the plan was made (revision %s, now %s): "
                           "look at the new plan",
                           c->seg[2], want, now);
    }
    if (rc == 0 && o && !same_cluster(o->cluster, cluster))
        rc = call_fail(c, 409, "conflict", NULL,
                       "cluster \"%s\" changed while the request was being solved, try again",
                       c->seg[2]);
    if (rc == 0)
        rc = check_idle(conn, c, err);
    /* The job's request: what was asked, and the solved target when the layout changes. */
    json_t *request = c->body ? json_deep_copy(c->body) : json_object();
    json_object_del(request, "dry_run");
    if (o && o->target)
        json_object_set(request, "target", o->target);
    if (config) {
        json_object_set(request, "patch", json_object_get(request, "config"));
        json_object_set_new(request, "config", config);
    }
    char *req = json_dumps(request, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(request);
    /* The job's operation as the engine reads it (planner_api_op): a recreate is a create of
       the cluster's new layout. */
    bool recreate = op_is(op, "recreate");
    const struct planner_api_op *api_op = planner_api_op(op);
    const char *job_op = api_op ? api_op->job_op : op;
    /* An operation that solved names the catalogue it solved against (pinned); the others
       leave it to the engine (the tenant's version when the job starts). */
    char catv[24];
    snprintf(catv, sizeof(catv), "%lld", o && o->set ? model_catset_version(o->set) : 0LL);
    bool pin = rc == 0 && o && o->set;
    if (pin)
        rc = api__pin_catalog(conn, o->set, err);
    if (rc == 0)
        rc = store_job_insert(conn, c->who.tenant_id, c->seg[2], job_op, req, c->who.user_id,
                              pin ? catv : NULL, &job, err);
    free(req);
    if (rc == 0 && recreate) {
        json_t *layout = json_object_get(o->target, "layout");
        char *text = json_dumps(layout, JSON_COMPACT);
        rc = store_cluster_relayout(conn, c->seg[2], text,
                                    (long)json_integer_value(json_object_get(o->target, "size")),
                                    err);
        free(text);
        json_object_set(cluster, "layout", layout);
        json_object_set(cluster, "size", json_object_get(o->target, "size"));
        json_object_set_new(cluster, "status", json_string("pending"));
    }
    if (rc == 0 && op_is(op, "delete")) {
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
    if (pin)
        model_catset_set_pinned(o->set);
    json_object_del(cluster, "nodes");
    c->out = json_pack("{s:o, s:o}", "cluster", cluster, "job", job);
    c->status = 202;
    api__announce(c, json_string_value(json_object_get(job, "id")), c->seg[2], job_op);
    return 0;
}

/*
 * POST /v1/clusters/{id}/{operation}. One that solves comes in three parts:
 * read and check (here, no lock), solve (heavy pool), record (op_record);
 * the others are recorded at once.
 */
static int cluster_operation(PGconn *conn, struct call *c, const char *op, struct drv_err *err)
{
    static const char *const ops[] = {"expand",    "shrink", "addservices", "removeservices",
                                      "configure", "start",  "stop",        "restart",
                                      "upgrade",   "delete", "recreate",    NULL};
    bool known = false;
    for (const char *const *k = ops; *k; k++)
        known |= op_is(*k, op);
    if (!known) /* before anything is read */
        return call_fail(c, 404, "not-found", NULL, "no operation \"%s\"", op);
    json_t *jd = c->body ? json_object_get(c->body, "dry_run") : NULL;
    json_t *jr = c->body ? json_object_get(c->body, "plan_revision") : NULL;
    if (jd && !json_is_boolean(jd))
        return call_fail(c, 400, "invalid", "dry_run", "field \"dry_run\": expected true or false");
    if (jr && !json_is_string(jr))
        return call_fail(c, 400, "invalid", "plan_revision",
                         "field \"plan_revision\": expected the revision a dry run answered");
    bool dry = json_is_true(jd);
    if (!op_solves(op) && !dry)
        return op_record(conn, c, err);
    struct op_work *o = xcalloc(1, sizeof(*o));
    o->op = op;
    o->dry = dry;
    c->work = o;
    c->work_free = op_work_free;
    int rc =
        store_cluster_get(conn, c->who.tenant_id, call_owner(c), c->seg[2], 0, &o->cluster, err);
    if (rc == 0)
        rc = check_op(c, op, o->cluster);
    if (rc == 0 && !dry)
        rc = check_idle(conn, c, err);
    if (rc == 0)
        rc = op_load(conn, c, o, err);
    if (rc == 0 && dry) {
        api__cluster_revision(o->cluster, o->revision);
        if (op_is(op, "configure"))
            rc = api__configure_config(conn, c, o->cluster, &o->config, err);
        if (rc == 0)
            rc = store_task_durations(conn, c->who.tenant_id, &o->durations, err);
    }
    if (rc == 0)
        c->heavy = op_solve;
    return rc;
}

int api__h_cluster_op(PGconn *conn, struct call *c, struct drv_err *err)
{
    return cluster_operation(conn, c, c->seg[3], err);
}

int api__h_cluster_delete(PGconn *conn, struct call *c, struct drv_err *err)
{
    return cluster_operation(conn, c, "delete", err);
}
