/*
 * handlers_plan: the plan of an operation on a cluster, before it runs
 * (POST /v1/clusters/{id}/{operation} with "dry_run": true; docs/api.md
 * "Plans"), and the cluster revision that applying it checks.
 *
 * The plan is made as the engine will make it (engine/plan.c): the same
 * planner input from the cluster's stored layout and the solved target, the
 * same operation mapping (the planner's planner_api_op: configure with restart
 * is configure-restart, a recreate a create), the same subset and dependents of a layout change. So
 * what a dry run shows is what the job runs, as long as the cluster does not
 * change in between, which the revision guards: an apply that carries
 * "plan_revision" is refused with 409 when the cluster's revision is no
 * longer that one (handlers_clusters.c op_record).
 *
 * The answer: the layout diff (nodes added and removed, services added and
 * removed per node, config keys changed with old and new values, sealed or
 * sensitive ones masked), the DAG's summary (tasks per action, stages, the
 * critical path in tasks and, where the tenant's past tasks of the same
 * service and action say how long they take, in seconds), and the rollback
 * the job would run if it failed at its very end.
 *
 * Heavy-pool code (api__plan_answer) on the call's own data; the revision is
 * computed wherever a cluster row is at hand.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "api_int.h"
#include "handlers.h"
#include "hex.h"
#include "jmerge.h"
#include "model.h"
#include "planner.h"
#include "planner_model.h"
#include "xalloc.h"

void api__cluster_revision(const json_t *cluster, char out[API_REVISION_LEN + 1])
{
    static const char *const keys[] = {"size",   "services", "layout",     "template_version",
                                       "status", "config",   "updated_at", NULL};
    json_t *o = json_object();
    for (const char *const *k = keys; *k; k++) {
        json_t *v = json_object_get(cluster, *k);
        json_object_set(o, *k, v ? v : json_null());
    }
    char *text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    unsigned char md[32];
    unsigned int n = 0;
    EVP_Digest(text, strlen(text), md, &n, EVP_sha256(), NULL);
    free(text);
    char hex[65];
    hex_encode(md, 32, hex);
    memcpy(out, hex, API_REVISION_LEN);
    out[API_REVISION_LEN] = '\0';
}

/* The planner's operation for an API operation, as the engine maps the job's
   (planner_api_op_plan, the one table); -1 if none. */
static int plan_op(const char *op, const json_t *body)
{
    return planner_api_op_plan(op, json_is_true(json_object_get(body, "restart")));
}

static bool acts_on_subset(const char *op)
{
    const struct planner_api_op *a = planner_api_op(op);
    return a && a->subset;
}

/* ---- the layout diff ---- */

static const struct planner_node *find_node(const struct planner_layout *l, const char *id)
{
    for (size_t i = 0; l && i < l->n_nodes; i++)
        if (strcmp(l->nodes[i].id, id) == 0)
            return &l->nodes[i];
    return NULL;
}

static bool node_has(const struct planner_node *n, const char *svc)
{
    for (size_t k = 0; n && k < n->n_services; k++)
        if (strcmp(n->services[k], svc) == 0)
            return true;
    return false;
}

static json_t *node_json(const struct planner_node *n)
{
    json_t *svcs = json_array();
    for (size_t k = 0; k < n->n_services; k++)
        json_array_append_new(svcs, json_string(n->services[k]));
    return json_pack("{s:s, s:s?, s:s?, s:o}", "id", n->id, "hardwaretype", n->hardwaretype,
                     "imagetype", n->imagetype, "services", svcs);
}

/* Services of b's node that a's lacks, as a JSON array. */
static json_t *svc_minus(const struct planner_node *b, const struct planner_node *a)
{
    json_t *out = json_array();
    for (size_t k = 0; b && k < b->n_services; k++)
        if (!node_has(a, b->services[k]))
            json_array_append_new(out, json_string(b->services[k]));
    return out;
}

static json_t *layout_diff(const struct planner_layout *s, const struct planner_layout *t,
                           bool deleting)
{
    json_t *added = json_array(), *removed = json_array(), *changed = json_array();
    for (size_t i = 0; !deleting && i < t->n_nodes; i++) {
        const struct planner_node *tn = &t->nodes[i], *sn = find_node(s, tn->id);
        if (!sn) {
            json_array_append_new(added, node_json(tn));
            continue;
        }
        json_t *plus = svc_minus(tn, sn), *minus = svc_minus(sn, tn);
        if (json_array_size(plus) || json_array_size(minus))
            json_array_append_new(changed,
                                  json_pack("{s:s, s:o, s:o}", "id", tn->id, "services_added", plus,
                                            "services_removed", minus));
        else {
            json_decref(plus);
            json_decref(minus);
        }
    }
    for (size_t i = 0; s && i < s->n_nodes; i++)
        if (deleting || !find_node(t, s->nodes[i].id))
            json_array_append_new(removed, node_json(&s->nodes[i]));
    return json_pack("{s:o, s:o, s:o}", "added", added, "removed", removed, "changed", changed);
}

/* Mask a value for the answer: sealed values, and any value under a sensitive key. */
static bool is_secret(const char *key, const json_t *v)
{
    const char *s = json_string_value(v);
    if (s && (strncmp(s, "enc:v1:", 7) == 0 || strncmp(s, "enc:j1:", 7) == 0))
        return true;
    char *dup = xstrdup(key);
    bool sens = false;
    for (char *save = NULL, *p = strtok_r(dup, ".", &save); p; p = strtok_r(NULL, ".", &save))
        sens |= api_field_sensitive(p) != 0;
    free(dup);
    return sens;
}

static json_t *config_diff(const json_t *old, const json_t *new)
{
    json_t *d = jmerge_diff(old, new);
    size_t i;
    json_t *e;
    json_array_foreach(d, i, e)
    {
        const char *key = json_string_value(json_object_get(e, "key"));
        bool hide =
            is_secret(key, json_object_get(e, "old")) || is_secret(key, json_object_get(e, "new"));
        if (!hide)
            continue;
        if (json_object_get(e, "old"))
            json_object_set_new(e, "old", json_string(API_REDACTED));
        if (json_object_get(e, "new"))
            json_object_set_new(e, "new", json_string(API_REDACTED));
        json_object_set_new(e, "secret", json_true());
    }
    return d;
}

/* ---- the DAG's summary ---- */

static json_t *by_action(const struct planner_plan *p, size_t *real)
{
    size_t count[PLANNER_ACT_COUNT] = {0};
    *real = 0;
    for (size_t i = 0; i < p->n_tasks; i++)
        if (p->tasks[i].action != PLANNER_ACT_ANCHOR) {
            count[p->tasks[i].action]++;
            (*real)++;
        }
    json_t *o = json_object();
    for (int a = 0; a < PLANNER_ACT_COUNT; a++)
        if (count[a])
            json_object_set_new(o, planner_action_name((enum planner_action)a),
                                json_integer((json_int_t)count[a]));
    return o;
}

/* Mean seconds of (service, action) among the durations, or -1. */
static double mean_secs(const json_t *durations, const char *service, const char *action)
{
    size_t i;
    json_t *r;
    json_array_foreach(durations, i, r)
    {
        if (strcmp(json_string_value(json_object_get(r, "service")), service ? service : "") == 0 &&
            strcmp(json_string_value(json_object_get(r, "action")), action) == 0)
            return json_number_value(json_object_get(r, "secs"));
    }
    return -1;
}

/* Critical path in real tasks, and in seconds by the known durations (unknown: 0). */
json_t *api__plan_summary(const struct planner_plan *p, const json_t *durations,
                          struct drv_err *err)
{
    size_t n = p->n_tasks, real = 0;
    uint32_t *order = xcalloc(n + 1, sizeof(*order));
    double *w = xcalloc(n + 1, sizeof(*w)), *len = xcalloc(n + 1, sizeof(*len)),
           *secs = xcalloc(n + 1, sizeof(*secs));
    json_t *kinds = json_object(); /* "service/action" -> known */
    size_t known = 0;
    for (size_t i = 0; i < n; i++) {
        const struct planner_task *t = &p->tasks[i];
        if (t->action == PLANNER_ACT_ANCHOR)
            continue;
        const char *an = planner_action_name(t->action);
        w[i] = mean_secs(durations, t->service, an);
        char key[512];
        snprintf(key, sizeof(key), "%s/%s", t->service ? t->service : "", an);
        if (!json_object_get(kinds, key)) {
            json_object_set_new(kinds, key, json_boolean(w[i] >= 0));
            known += w[i] >= 0;
        }
    }
    int rc = planner_toposort(p, order, err);
    double cp = 0, cs = 0;
    for (size_t k = 0; rc == 0 && k < n; k++) {
        uint32_t i = order[k];
        const struct planner_task *t = &p->tasks[i];
        double l = 0, s = 0;
        for (uint32_t d = 0; d < t->n_deps; d++) {
            l = len[t->deps[d]] > l ? len[t->deps[d]] : l;
            s = secs[t->deps[d]] > s ? secs[t->deps[d]] : s;
        }
        bool anchor = t->action == PLANNER_ACT_ANCHOR;
        len[i] = l + (anchor ? 0 : 1);
        secs[i] = s + (!anchor && w[i] > 0 ? w[i] : 0);
        cp = len[i] > cp ? len[i] : cp;
        cs = secs[i] > cs ? secs[i] : cs;
    }
    struct planner_stages *st = NULL;
    struct drv_err e2;
    size_t stages = planner_stages(p, &st, &e2) == 0 ? st->n_stages : 0;
    planner_stages_free(st);
    json_t *acts = by_action(p, &real);
    size_t kinds_n = json_object_size(kinds);
    json_t *out = json_pack("{s:s, s:I, s:o, s:I, s:I, s:o, s:{s:I, s:I}}", "operation",
                            planner_op_name(p->op), "tasks", (json_int_t)real, "by_action", acts,
                            "stages", (json_int_t)stages, "critical_path", (json_int_t)cp,
                            "estimated_seconds", known ? json_real(cs) : json_null(), "estimate",
                            "known", (json_int_t)known, "unknown", (json_int_t)(kinds_n - known));
    json_decref(kinds);
    free(order);
    free(w);
    free(len);
    free(secs);
    return out;
}

/* What the job's rollback would do if it failed at its very end (every task done). */
static json_t *rollback_of(const struct planner_plan *p, const struct planner_input *in)
{
    enum planner_task_state *states = xcalloc(p->n_tasks + 1, sizeof(*states));
    for (size_t i = 0; i < p->n_tasks; i++)
        states[i] = PLANNER_TS_SUCCESS;
    struct planner_plan *rb = NULL;
    struct drv_err e;
    json_t *out;
    if (planner_rollback_layout(p, states, in->services, in->n_services, &in->start, &rb, &e) ==
        0) {
        size_t real = 0;
        json_t *acts = by_action(rb, &real);
        out = json_pack("{s:I, s:o, s:s}", "tasks", (json_int_t)real, "by_action", acts, "when",
                        "the job fails after its last task: every task undone, in reverse");
    } else {
        out = json_pack("{s:I, s:s}", "tasks", (json_int_t)0, "error", e.msg);
    }
    planner_plan_free(rb);
    free(states);
    return out;
}

int api__plan_answer(struct call *c, const struct api_plan_in *pin, struct drv_err *err)
{
    int op = plan_op(pin->op, pin->body);
    if (op < 0)
        return call_fail(c, 404, "not-found", NULL, "no operation \"%s\"", pin->op);
    const json_t *cl = pin->cluster;
    struct planner_input *in = NULL;
    struct planner_plan *plan = NULL;
    struct planner_reconf *rf = NULL;
    size_t n_rf = 0;
    const char **subset = NULL;
    int rc = planner_input_from_model(pin->cat, pin->t, pin->existing, pin->target, &in, err);
    if (rc == 0) {
        const char *prov = json_string_value(json_object_get(cl, "provider"));
        if (prov && *prov) {
            in->provider = prov;
            const struct model_provider *pv = model_catalog_provider(pin->cat, prov);
            if (pv && *pv->providertype)
                in->providertype = pv->providertype;
        }
        const json_t *js = json_object_get(pin->body, "services");
        size_t ns = acts_on_subset(pin->op) ? json_array_size(js) : 0;
        subset = xcalloc(ns + 1, sizeof(*subset));
        for (size_t i = 0; i < ns; i++)
            subset[i] = json_string_value(json_array_get(js, i));
        struct planner_request req = planner_input_request(in, (enum planner_op)op, subset, ns);
        n_rf = planner_reconf_from_json(json_object_get(pin->target_json, "reconfigure"), &rf);
        req.n_reconf = n_rf;
        req.reconf = rf;
        rc = planner_build(&req, &plan, err);
        if (rc == DRV_EINVAL || rc == DRV_ECYCLE)
            rc = call_fail(c, 422, "unsatisfiable", NULL, "no plan: %s", err->msg);
    } else if (rc == DRV_ENOENT || rc == DRV_EINVAL) {
        rc = call_fail(c, 422, "unsatisfiable", NULL, "no plan: %s", err->msg);
    }
    if (rc == 0) {
        bool deleting = strcmp(pin->op, "delete") == 0;
        json_t *diff = json_pack("{s:o}", "nodes", layout_diff(&in->start, &in->target, deleting));
        long before = (long)json_integer_value(json_object_get(cl, "size"));
        long after = deleting ? 0 : (long)in->target.n_nodes;
        json_object_set_new(
            diff, "size",
            json_pack("{s:I, s:I}", "old", (json_int_t)before, "new", (json_int_t)after));
        json_t *sa = json_array(), *sr = json_array();
        const json_t *now = json_object_get(cl, "services"),
                     *then = json_object_get(pin->target_json, "services");
        size_t i;
        json_t *v;
        if (json_is_array(then)) {
            json_array_foreach(then, i, v)
            {
                bool had = false;
                size_t k;
                json_t *x;
                json_array_foreach(now, k, x) had |= json_equal(x, v);
                if (!had)
                    json_array_append(sa, v);
            }
            json_array_foreach(now, i, v)
            {
                bool keeps = false;
                size_t k;
                json_t *x;
                json_array_foreach(then, k, x) keeps |= json_equal(x, v);
                if (!keeps)
                    json_array_append(sr, v);
            }
        }
        json_object_set_new(diff, "services", json_pack("{s:o, s:o}", "added", sa, "removed", sr));
        json_object_set_new(diff, "config",
                            pin->config ? config_diff(json_object_get(cl, "config"), pin->config)
                                        : json_array());
        const json_t *tv = json_object_get(pin->target_json, "template_version");
        if (json_is_integer(tv)) /* an upgrade */
            json_object_set_new(
                diff, "template_version",
                json_pack("{s:O, s:O}", "old", json_object_get(cl, "template_version"), "new", tv));
        if (json_object_get(pin->target_json, "reconfigure"))
            json_object_set(diff, "reconfigure", json_object_get(pin->target_json, "reconfigure"));
        json_t *sum = api__plan_summary(plan, pin->durations, err);
        c->out = json_pack(
            "{s:b, s:s, s:{s:O, s:O, s:O?, s:O, s:O}, s:s, s:o, s:o, s:o}", "dry_run", 1,
            "operation", pin->op, "cluster", "id", json_object_get(cl, "id"), "name",
            json_object_get(cl, "name"), "template", json_object_get(cl, "template"), "size",
            json_object_get(cl, "size"), "status", json_object_get(cl, "status"), "revision",
            pin->revision, "diff", diff, "plan", sum, "rollback", rollback_of(plan, in));
        c->status = 200;
    }
    planner_reconf_free(rf, n_rf);
    free(subset);
    planner_plan_free(plan);
    planner_input_free(in);
    return rc;
}
