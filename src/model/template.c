/*
 * template: JSON codec of cluster templates and partial templates, and the
 * resolution of `extends` and `includes` into one flat template.
 *
 * Fields (docs/model.md): compatibility.{services,hardwaretypes,imagetypes},
 * defaults.{services,provider,hardwaretype,imagetype,config},
 * constraints.layout.{mustcoexist,cantcoexist} (arrays of arrays of names),
 * constraints.services.<svc>.{hardwaretypes,imagetypes,quantities.{min,max}},
 * constraints.size.{min,max}, administration, links, extends, includes.
 * `extends` is a name or {"name": ...}; `includes` an array of those.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec_util.h"
#include "model.h"
#include "xalloc.h"

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        if ((rc = (x)) < 0)                                                                        \
            goto fail;                                                                             \
    } while (0)

static void groups_free(struct model_strlist *g, size_t n)
{
    for (size_t i = 0; i < n; i++)
        model__strlist_free(&g[i]);
    free(g);
}

static void constraint_free(struct model_service_constraint *c)
{
    free(c->service);
    model__strlist_free(&c->hardwaretypes);
    model__strlist_free(&c->imagetypes);
}

void model_template_free(struct model_template *t)
{
    if (!t)
        return;
    free(t->name);
    free(t->description);
    free(t->extends);
    model__strlist_free(&t->includes);
    model__strlist_free(&t->compat_services);
    model__strlist_free(&t->compat_hardwaretypes);
    model__strlist_free(&t->compat_imagetypes);
    model__strlist_free(&t->default_services);
    free(t->default_provider);
    free(t->default_hardwaretype);
    free(t->default_imagetype);
    json_decref(t->default_config);
    groups_free(t->mustcoexist, t->n_mustcoexist);
    groups_free(t->cantcoexist, t->n_cantcoexist);
    for (size_t i = 0; i < t->n_svc_constraints; i++)
        constraint_free(&t->svc_constraints[i]);
    free(t->svc_constraints);
    json_decref(t->administration);
    json_decref(t->links);
    json_decref(t->extra);
    free(t);
}

static int groups_parse(struct model__pctx *p, const json_t *v, const char *path,
                        struct model_strlist **out, size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    if (!v)
        return 0;
    if (!json_is_array(v))
        return model__fail(p, path, "an array of arrays of service names");
    size_t n = json_array_size(v);
    struct model_strlist *g = xcalloc(n ? n : 1, sizeof(*g));
    for (size_t i = 0; i < n; i++) {
        char field[300];
        snprintf(field, sizeof(field), "%s[%zu]", path, i);
        int rc = model__strlist(p, json_array_get(v, i), field, &g[i]);
        if (rc == 0 && !json_is_array(json_array_get(v, i)))
            rc = model__fail(p, field, "an array of service names");
        if (rc < 0) {
            groups_free(g, i);
            return rc;
        }
    }
    *out = g;
    *n_out = n;
    return 0;
}

static json_t *groups_json(const struct model_strlist *g, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, model__strlist_json(&g[i]));
    return a;
}

static int constraint_cmp(const void *a, const void *b)
{
    const struct model_service_constraint *x = a, *y = b;
    return strcmp(x->service, y->service);
}

static int svc_constraints_parse(struct model__pctx *p, const json_t *v, struct model_template *t)
{
    if (!v)
        return 0;
    if (!json_is_object(v))
        return model__fail(p, "constraints.services", "an object of service name to constraint");
    size_t n = json_object_size(v);
    t->svc_constraints = xcalloc(n ? n : 1, sizeof(*t->svc_constraints));
    const char *key;
    json_t *c;
    char path[300], field[400];
    json_object_foreach((json_t *)v, key, c)
    {
        snprintf(path, sizeof(path), "constraints.services.%s", key);
        if (!json_is_object(c) || key[0] == '\0')
            return model__fail(p, path, "an object");
        struct model_service_constraint *sc = &t->svc_constraints[t->n_svc_constraints++];
        sc->service = xstrdup(key);
        sc->qmin = sc->qmax = -1;
        int rc;
        snprintf(field, sizeof(field), "%s.hardwaretypes", path);
        if ((rc = model__strlist(p, model__member(c, "hardwaretypes"), field, &sc->hardwaretypes)))
            return rc;
        snprintf(field, sizeof(field), "%s.imagetypes", path);
        if ((rc = model__strlist(p, model__member(c, "imagetypes"), field, &sc->imagetypes)))
            return rc;
        json_t *q = model__member(c, "quantities");
        snprintf(field, sizeof(field), "%s.quantities", path);
        if (q && !json_is_object(q))
            return model__fail(p, field, "an object with \"min\" and \"max\"");
        snprintf(field, sizeof(field), "%s.quantities.min", path);
        if ((rc = model__count(p, model__member(q, "min"), field, &sc->qmin)))
            return rc;
        snprintf(field, sizeof(field), "%s.quantities.max", path);
        if ((rc = model__count(p, model__member(q, "max"), field, &sc->qmax)))
            return rc;
        if (sc->qmin >= 0 && sc->qmax >= 0 && sc->qmin > sc->qmax)
            return model__fail(p, field, "a maximum not below the minimum");
    }
    qsort(t->svc_constraints, t->n_svc_constraints, sizeof(*t->svc_constraints), constraint_cmp);
    return 0;
}

static int ref_parse(struct model__pctx *p, const json_t *v, const char *path, char **out)
{
    if (json_is_object(v))
        return model__str(p, v, "name", path, true, NULL, out);
    if (json_is_string(v) && json_string_length(v) > 0 &&
        strlen(json_string_value(v)) == json_string_length(v)) {
        *out = xstrdup(json_string_value(v));
        return 0;
    }
    return model__fail(p, path, "a template name or {\"name\": ...}");
}

int model_template_from_json(const json_t *j, bool partial, struct model_template **out,
                             struct drv_err *err)
{
    static const char *const known[] = {
        "name",           "description", "compatibility", "defaults", "constraints",
        "administration", "links",       "extends",       "includes", NULL};
    struct model__pctx p = {.kind = partial ? "partialtemplate" : "clustertemplate", .err = err};
    struct model_template *t = xcalloc(1, sizeof(*t));
    int rc;
    t->partial = partial;
    t->size_min = t->size_max = -1;
    *out = NULL;
    if (!j || !json_is_object(j)) {
        rc = drv_err_set(err, DRV_EINVAL, 0, "%s: expected a JSON object", p.kind);
        goto fail;
    }
    CHECK(model__str(&p, j, "name", "name", true, NULL, &t->name));
    p.name = t->name;
    CHECK(model__str(&p, j, "description", "description", false, "", &t->description));

    json_t *ext = model__member(j, "extends");
    if (ext)
        CHECK(ref_parse(&p, ext, "extends", &t->extends));
    json_t *inc = model__member(j, "includes");
    if (inc) {
        if (!json_is_array(inc)) {
            rc = model__fail(&p, "includes", "an array of partial template names");
            goto fail;
        }
        for (size_t i = 0; i < json_array_size(inc); i++) {
            char field[64], *name;
            snprintf(field, sizeof(field), "includes[%zu]", i);
            CHECK(ref_parse(&p, json_array_get(inc, i), field, &name));
            model__strlist_add_unique(&t->includes, name);
            free(name);
        }
    }

    json_t *compat = model__member(j, "compatibility");
    if (compat && !json_is_object(compat)) {
        rc = model__fail(&p, "compatibility", "an object");
        goto fail;
    }
    CHECK(model__strlist(&p, model__member(compat, "services"), "compatibility.services",
                         &t->compat_services));
    CHECK(model__strlist(&p, model__member(compat, "hardwaretypes"), "compatibility.hardwaretypes",
                         &t->compat_hardwaretypes));
    CHECK(model__strlist(&p, model__member(compat, "imagetypes"), "compatibility.imagetypes",
                         &t->compat_imagetypes));

    json_t *def = model__member(j, "defaults");
    if (def && !json_is_object(def)) {
        rc = model__fail(&p, "defaults", "an object");
        goto fail;
    }
    CHECK(model__strlist(&p, model__member(def, "services"), "defaults.services",
                         &t->default_services));
    CHECK(model__str(&p, def, "provider", "defaults.provider", false, NULL, &t->default_provider));
    CHECK(model__str(&p, def, "hardwaretype", "defaults.hardwaretype", false, NULL,
                     &t->default_hardwaretype));
    CHECK(
        model__str(&p, def, "imagetype", "defaults.imagetype", false, NULL, &t->default_imagetype));
    CHECK(model__object(&p, def, "config", "defaults.config", true, &t->default_config));

    json_t *cons = model__member(j, "constraints");
    if (cons && !json_is_object(cons)) {
        rc = model__fail(&p, "constraints", "an object");
        goto fail;
    }
    json_t *layout = model__member(cons, "layout");
    if (layout && !json_is_object(layout)) {
        rc = model__fail(&p, "constraints.layout", "an object");
        goto fail;
    }
    CHECK(groups_parse(&p, model__member(layout, "mustcoexist"), "constraints.layout.mustcoexist",
                       &t->mustcoexist, &t->n_mustcoexist));
    CHECK(groups_parse(&p, model__member(layout, "cantcoexist"), "constraints.layout.cantcoexist",
                       &t->cantcoexist, &t->n_cantcoexist));
    CHECK(svc_constraints_parse(&p, model__member(cons, "services"), t));
    json_t *size = model__member(cons, "size");
    if (size && !json_is_object(size)) {
        rc = model__fail(&p, "constraints.size", "an object with \"min\" and \"max\"");
        goto fail;
    }
    CHECK(model__count(&p, model__member(size, "min"), "constraints.size.min", &t->size_min));
    CHECK(model__count(&p, model__member(size, "max"), "constraints.size.max", &t->size_max));
    if (t->size_min >= 0 && t->size_max >= 0 && t->size_min > t->size_max) {
        rc = model__fail(&p, "constraints.size.max", "a maximum not below the minimum");
        goto fail;
    }

    CHECK(model__object(&p, j, "administration", "administration", false, &t->administration));
    json_t *links = model__member(j, "links");
    if (links) {
        if (!json_is_array(links)) {
            rc = model__fail(&p, "links", "an array of {\"label\", \"url\"}");
            goto fail;
        }
        for (size_t i = 0; i < json_array_size(links); i++) {
            json_t *l = json_array_get(links, i);
            char field[64];
            snprintf(field, sizeof(field), "links[%zu]", i);
            if (!json_is_object(l) || !json_is_string(json_object_get(l, "url"))) {
                rc = model__fail(&p, field, "an object with a string \"url\"");
                goto fail;
            }
        }
        t->links = json_deep_copy(links);
    }
    t->extra = model__extra(j, known);
    *out = t;
    return 0;
fail:
    model_template_free(t);
    return rc;
}

json_t *model_template_to_json(const struct model_template *t)
{
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(t->name));
    json_object_set_new(o, "description", json_string(t->description));
    if (t->extends)
        json_object_set_new(o, "extends", json_pack("{s:s}", "name", t->extends));
    if (t->includes.n) {
        json_t *a = json_array();
        for (size_t i = 0; i < t->includes.n; i++)
            json_array_append_new(a, json_pack("{s:s}", "name", t->includes.v[i]));
        json_object_set_new(o, "includes", a);
    }
    json_object_set_new(o, "compatibility",
                        json_pack("{s:o,s:o,s:o}", "services",
                                  model__strlist_json(&t->compat_services), "hardwaretypes",
                                  model__strlist_json(&t->compat_hardwaretypes), "imagetypes",
                                  model__strlist_json(&t->compat_imagetypes)));
    json_t *def = json_object();
    json_object_set_new(def, "services", model__strlist_json(&t->default_services));
    if (t->default_provider)
        json_object_set_new(def, "provider", json_string(t->default_provider));
    if (t->default_hardwaretype)
        json_object_set_new(def, "hardwaretype", json_string(t->default_hardwaretype));
    if (t->default_imagetype)
        json_object_set_new(def, "imagetype", json_string(t->default_imagetype));
    json_object_set_new(def, "config", json_deep_copy(t->default_config));
    json_object_set_new(o, "defaults", def);

    json_t *cons = json_object();
    json_object_set_new(cons, "layout",
                        json_pack("{s:o,s:o}", "mustcoexist",
                                  groups_json(t->mustcoexist, t->n_mustcoexist), "cantcoexist",
                                  groups_json(t->cantcoexist, t->n_cantcoexist)));
    json_t *svcs = json_object();
    for (size_t i = 0; i < t->n_svc_constraints; i++) {
        const struct model_service_constraint *c = &t->svc_constraints[i];
        json_t *co = json_object();
        if (c->hardwaretypes.n)
            json_object_set_new(co, "hardwaretypes", model__strlist_json(&c->hardwaretypes));
        if (c->imagetypes.n)
            json_object_set_new(co, "imagetypes", model__strlist_json(&c->imagetypes));
        if (c->qmin >= 0 || c->qmax >= 0) {
            json_t *q = json_object();
            if (c->qmin >= 0)
                json_object_set_new(q, "min", json_integer(c->qmin));
            if (c->qmax >= 0)
                json_object_set_new(q, "max", json_integer(c->qmax));
            json_object_set_new(co, "quantities", q);
        }
        json_object_set_new(svcs, c->service, co);
    }
    json_object_set_new(cons, "services", svcs);
    if (t->size_min >= 0 || t->size_max >= 0) {
        json_t *s = json_object();
        if (t->size_min >= 0)
            json_object_set_new(s, "min", json_integer(t->size_min));
        if (t->size_max >= 0)
            json_object_set_new(s, "max", json_integer(t->size_max));
        json_object_set_new(cons, "size", s);
    }
    json_object_set_new(o, "constraints", cons);
    if (t->administration)
        json_object_set_new(o, "administration", json_deep_copy(t->administration));
    if (t->links)
        json_object_set_new(o, "links", json_deep_copy(t->links));
    model__put_extra(o, t->extra);
    return o;
}

const struct model_service_constraint *model_template_constraint(const struct model_template *t,
                                                                 const char *service)
{
    struct model_service_constraint key = {.service = (char *)service};
    return t->n_svc_constraints ? bsearch(&key, t->svc_constraints, t->n_svc_constraints,
                                          sizeof(key), constraint_cmp)
                                : NULL;
}

/* ---- resolution of extends / includes ---------------------------------- */

static void merge_groups(struct model_strlist **dst, size_t *n, const struct model_strlist *src,
                         size_t m)
{
    *dst = xrealloc(*dst, (*n + m + 1) * sizeof(**dst));
    for (size_t i = 0; i < m; i++)
        model__strlist_copy(&(*dst)[(*n)++], &src[i]);
}

static void copy_str(char **dst, const char *src)
{
    if (src) {
        free(*dst);
        *dst = xstrdup(src);
    }
}

/* Merge src (a parent or an include) under dst: dst's own scalars win. */
static void merge_under(struct model_template *dst, const struct model_template *src)
{
    struct model_strlist *lists[][2] = {
        {&dst->compat_services, (struct model_strlist *)&src->compat_services},
        {&dst->compat_hardwaretypes, (struct model_strlist *)&src->compat_hardwaretypes},
        {&dst->compat_imagetypes, (struct model_strlist *)&src->compat_imagetypes},
        {&dst->default_services, (struct model_strlist *)&src->default_services},
    };
    for (size_t k = 0; k < sizeof(lists) / sizeof(lists[0]); k++) {
        /* Parent first: build src + dst. */
        struct model_strlist merged = {0};
        for (size_t i = 0; i < lists[k][1]->n; i++)
            model__strlist_add_unique(&merged, lists[k][1]->v[i]);
        for (size_t i = 0; i < lists[k][0]->n; i++)
            model__strlist_add_unique(&merged, lists[k][0]->v[i]);
        model__strlist_free(lists[k][0]);
        *lists[k][0] = merged;
    }
    if (!dst->default_provider)
        copy_str(&dst->default_provider, src->default_provider);
    if (!dst->default_hardwaretype)
        copy_str(&dst->default_hardwaretype, src->default_hardwaretype);
    if (!dst->default_imagetype)
        copy_str(&dst->default_imagetype, src->default_imagetype);
    json_t *cfg = json_deep_copy(src->default_config);
    json_object_update(cfg, dst->default_config);
    json_decref(dst->default_config);
    dst->default_config = cfg;
    merge_groups(&dst->mustcoexist, &dst->n_mustcoexist, src->mustcoexist, src->n_mustcoexist);
    merge_groups(&dst->cantcoexist, &dst->n_cantcoexist, src->cantcoexist, src->n_cantcoexist);
    for (size_t i = 0; i < src->n_svc_constraints; i++) {
        const struct model_service_constraint *c = &src->svc_constraints[i];
        if (model_template_constraint(dst, c->service))
            continue;
        dst->svc_constraints = xrealloc(dst->svc_constraints, (dst->n_svc_constraints + 1) *
                                                                  sizeof(*dst->svc_constraints));
        struct model_service_constraint *d = &dst->svc_constraints[dst->n_svc_constraints++];
        d->service = xstrdup(c->service);
        model__strlist_copy(&d->hardwaretypes, &c->hardwaretypes);
        model__strlist_copy(&d->imagetypes, &c->imagetypes);
        d->qmin = c->qmin;
        d->qmax = c->qmax;
        qsort(dst->svc_constraints, dst->n_svc_constraints, sizeof(*dst->svc_constraints),
              constraint_cmp);
    }
    if (dst->size_min < 0)
        dst->size_min = src->size_min;
    if (dst->size_max < 0)
        dst->size_max = src->size_max;
    if (!dst->administration && src->administration)
        dst->administration = json_deep_copy(src->administration);
    if (!dst->links && src->links)
        dst->links = json_deep_copy(src->links);
}

static struct model_template *template_copy(const struct model_template *t)
{
    json_t *j = model_template_to_json(t);
    struct model_template *c = NULL;
    int rc = model_template_from_json(j, t->partial, &c, NULL);
    json_decref(j);
    return rc == 0 ? c : NULL;
}

#define RESOLVE_DEPTH 32

static int resolve(const struct model_catalog *cat, const char *name, bool partial, int depth,
                   struct model_template **out, struct drv_err *err)
{
    *out = NULL;
    if (depth > RESOLVE_DEPTH)
        return drv_err_set(err, DRV_ECYCLE, 0,
                           "template \"%s\": extends/includes nest deeper than %d (a loop?)", name,
                           RESOLVE_DEPTH);
    const struct model_template *t = model_catalog_template(cat, name, partial);
    if (!t)
        return drv_err_set(err, DRV_ENOENT, 0, "no %s \"%s\"",
                           partial ? "partial template" : "cluster template", name);
    struct model_template *r = template_copy(t);
    if (!r)
        return drv_err_set(err, DRV_EINVAL, 0, "template \"%s\": cannot be copied", name);
    for (size_t i = 0; i < t->includes.n; i++) {
        struct model_template *inc;
        int rc = resolve(cat, t->includes.v[i], true, depth + 1, &inc, err);
        if (rc < 0) {
            drv_err_prefix(err, "template \"%s\": includes", name);
            model_template_free(r);
            return rc;
        }
        merge_under(r, inc);
        model_template_free(inc);
    }
    if (t->extends) {
        struct model_template *parent;
        /* A parent is a cluster template, or else a partial one. */
        int rc = model_catalog_template(cat, t->extends, false)
                     ? resolve(cat, t->extends, false, depth + 1, &parent, err)
                     : resolve(cat, t->extends, true, depth + 1, &parent, err);
        if (rc < 0) {
            drv_err_prefix(err, "template \"%s\": extends", name);
            model_template_free(r);
            return rc;
        }
        merge_under(r, parent);
        model_template_free(parent);
    }
    FREE_NULL(r->extends);
    model__strlist_free(&r->includes);
    *out = r;
    return 0;
}

int model_template_resolve(const struct model_catalog *c, const char *name,
                           struct model_template **out, struct drv_err *err)
{
    return resolve(c, name, false, 0, out, err);
}
