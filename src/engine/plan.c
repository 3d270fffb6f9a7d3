/*
 * plan: a job's plan from its pinned inputs. Pure (no I/O): it runs on an
 * offload thread, since a 10,000-node plan takes a few hundred milliseconds.
 *
 * A job pins what its plan is made of when it starts (jobs.inputs): the
 * tenant's catalogue as it was, the template, the starting and target
 * layouts, the services an operation acts on. Solver and planner are
 * deterministic (invariant 4, docs/architecture.md), so a new owner after a failover
 * rebuilds the very same plan from the same inputs, and checks it byte for
 * byte against the digest in the job's state znode. When the digest differs
 * (a changed planner during a rolling upgrade, changed inputs) the stored
 * plan is not read back: jobs.plan is jsonb, which does not keep the text
 * the digest was made of, and the plan alone is not what an owner needs (the
 * nodes' info, the target layout come from the build). The job ends failed
 * then, once, saying why (job.c engine__job_unresumable).
 * engine__plan_from_text reads a plan's text back, for tools and tests.
 *
 * Operations (the API's names) map to the planner's: addservices ->
 * add-services, removeservices -> remove-services, configure with
 * "restart": true -> configure-restart.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "engine_int.h"
#include "facts.h"
#include "hex.h"
#include "model.h"
#include "planner.h"
#include "planner_model.h"
#include "xalloc.h"

void engine__sha256_hex(const char *data, size_t len, char out[65])
{
    unsigned char md[32];
    unsigned int n = 0;
    EVP_Digest(data, len, md, &n, EVP_sha256(), NULL);
    hex_encode(md, 32, out);
}

int engine__op_parse(const char *op, const json_t *request)
{
    return planner_api_op_plan(op, json_is_true(json_object_get(request, "restart")));
}

void engine__plan_out_clear(struct engine__plan_out *o)
{
    planner_plan_free(o->plan);
    free(o->text);
    planner_input_free(o->in);
    model_catalog_free(o->own_cat);
    model_catset_unref(o->set);
    json_decref(o->target_layout);
    json_decref(o->nodeinfo);
    json_decref(o->provider);
    memset(o, 0, sizeof(*o));
}

/* The catalogue from pinned rows [{kind, name, body}]. Rows the codec refuses are skipped
 * (they were refused when stored too). */
static struct model_catalog *catalog_of(const json_t *rows)
{
    struct model_catalog *cat = model_catalog_new();
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r)
    {
        int k = model_kind_parse(json_string_value(json_object_get(r, "kind")));
        struct drv_err e;
        if (k >= 0)
            model_catalog_put_json(cat, (enum model_kind)k, json_object_get(r, "body"), NULL, &e);
    }
    return cat;
}

/*
 * A type's providermap entry into o, but for its cost (the solver's) and reserved keys
 * (facts.h: an entry is the tenant's and never names a fact; the API refuses one, so only
 * an entity stored before that rule has them). Dropped keys are counted in out.
 */
static void set_entry(json_t *o, const struct model_providermap_entry *pm, const char *type,
                      struct engine__plan_out *out)
{
    if (!pm || !json_is_object(pm->fields))
        return;
    const char *k;
    json_t *v;
    json_object_foreach(pm->fields, k, v)
    {
        if (strcmp(k, "cost") == 0)
            continue;
        if (facts_is_reserved(k)) {
            if (!out->dropped++)
                snprintf(out->dropped_key, sizeof(out->dropped_key), "%s.providermap.%s.%s", type,
                         pm->provider, k);
            continue;
        }
        json_object_set(o, k, v);
    }
}

/* For each node of both layouts: its types, services, and what the provider's maps say of
 * its types (entries). */
static json_t *node_info(const struct model_catalog *cat, const struct planner_input *in,
                         const char *provider, struct engine__plan_out *out)
{
    json_t *info = json_object();
    const struct planner_layout *ls[2] = {&in->start, &in->target};
    for (int l = 0; l < 2; l++)
        for (size_t i = 0; i < ls[l]->n_nodes; i++) {
            const struct planner_node *n = &ls[l]->nodes[i];
            if (json_object_get(info, n->id))
                continue;
            json_t *o = json_object(), *entries = json_object();
            const struct model_hardwaretype *h =
                n->hardwaretype ? model_catalog_hardwaretype(cat, n->hardwaretype) : NULL;
            const struct model_imagetype *im =
                n->imagetype ? model_catalog_imagetype(cat, n->imagetype) : NULL;
            if (h && provider)
                set_entry(entries, model_hardwaretype_provider(h, provider), n->hardwaretype, out);
            if (im && provider)
                set_entry(entries, model_imagetype_provider(im, provider), n->imagetype, out);
            json_object_set_new(o, "entries", entries);
            if (n->hardwaretype)
                json_object_set_new(o, "hardwaretype", json_string(n->hardwaretype));
            if (n->imagetype)
                json_object_set_new(o, "imagetype", json_string(n->imagetype));
            json_t *svcs = json_array();
            for (size_t s = 0; s < n->n_services; s++)
                json_array_append_new(svcs, json_string(n->services[s]));
            json_object_set_new(o, "services", svcs);
            json_object_set_new(info, n->id, o);
        }
    return info;
}

static int layout_of(const json_t *j, struct model_layout **out, struct drv_err *err)
{
    *out = NULL;
    if (!j || json_is_null(j))
        return 0;
    /* The API stores a cluster's layout as {"nodes": [...]} or, before its first
     * job, possibly []: an empty layout. */
    if (json_is_array(j) && json_array_size(j) == 0)
        return 0;
    return model_layout_from_json(j, out, err);
}

int engine__plan_build(const struct engine__plan_in *pin, struct engine__plan_out *out,
                       struct drv_err *err)
{
    memset(out, 0, sizeof(*out));
    int op = engine__op_parse(pin->op, pin->request);
    if (op < 0)
        return drv_err_set(err, DRV_EINVAL, 0, "unknown operation \"%s\"", pin->op ? pin->op : "");
    /* The shared catalogue when the job has one (parsed once per version), else the
       inputs' own rows. */
    if (pin->set) {
        out->set = model_catset_ref(pin->set);
        out->cat = model_catset_catalog(out->set);
    } else {
        out->own_cat = catalog_of(pin->catalog);
        out->cat = out->own_cat;
    }
    struct model_template *tmpl = NULL;
    struct model_layout *start = NULL, *target = NULL;
    int rc = 0;
    if (pin->template_name && model_template_resolve(out->cat, pin->template_name, &tmpl, err) != 0)
        rc = drv_err_set(err, DRV_EINVAL, 0, "template \"%s\": %s", pin->template_name, err->msg);
    if (rc == 0)
        rc = layout_of(pin->start, &start, err);
    if (rc == 0)
        rc = layout_of(pin->target, &target, err);
    if (rc == 0)
        rc = planner_input_from_model(out->cat, tmpl, start, target, &out->in, err);
    const struct model_provider *p = NULL;
    if (rc == 0) {
        if (pin->provider && *pin->provider) {
            out->in->provider = pin->provider;
            p = model_catalog_provider(out->cat, pin->provider);
            if (!p)
                rc = drv_err_set(err, DRV_EINVAL, 0, "provider \"%s\" is not in the catalogue",
                                 pin->provider);
            else if (*p->providertype)
                out->in->providertype = p->providertype;
        }
    }
    const char **subset = NULL;
    size_t n_subset = json_array_size(pin->subset);
    if (rc == 0) {
        subset = xcalloc(n_subset + 1, sizeof(*subset));
        for (size_t i = 0; i < n_subset; i++)
            subset[i] = json_string_value(json_array_get(pin->subset, i));
        struct planner_request req =
            planner_input_request(out->in, (enum planner_op)op, subset, n_subset);
        /* The dependents of a layout change, as the API found them (request.target). */
        struct planner_reconf *rf = NULL;
        req.n_reconf = planner_reconf_from_json(
            json_object_get(json_object_get(pin->request, "target"), "reconfigure"), &rf);
        req.reconf = rf;
        rc = planner_build(&req, &out->plan, err);
        planner_reconf_free(rf, req.n_reconf);
    }
    free(subset);
    if (rc == 0) {
        if (pin->format > 0)
            out->plan->format_version = pin->format;
        out->text = planner_plan_to_json_text(out->plan, &out->len);
        engine__sha256_hex(out->text, out->len, out->sha);
        struct model_layout *tl = planner_input_target_layout(out->in);
        out->target_layout = model_layout_to_json(tl, true);
        model_layout_free(tl);
        out->nodeinfo = node_info(out->cat, out->in, out->in->provider, out);
        out->provider = json_object();
        if (p) {
            json_object_update(out->provider, p->provisioner);
            json_object_set_new(out->provider, "name", json_string(p->name));
            json_object_set_new(out->provider, "providertype", json_string(p->providertype));
        }
    }
    model_template_free(tmpl);
    model_layout_free(start);
    model_layout_free(target);
    if (rc)
        engine__plan_out_clear(out);
    return rc;
}

int engine__plan_from_text(const char *text, size_t len, struct planner_plan **out,
                           struct drv_err *err)
{
    json_error_t je;
    json_t *j = json_loadb(text, len, 0, &je);
    if (!j)
        return drv_err_set(err, DRV_EINVAL, 0, "stored plan: %s", je.text);
    int rc = planner_plan_from_json(j, out, err);
    json_decref(j);
    return rc;
}
