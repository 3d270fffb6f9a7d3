/*
 * entity: JSON codec of providers, hardware types, image types, services and
 * cluster templates (see model.h for ownership and docs/model.md for fields).
 *
 * Parsing is strict about types (a list of names is an array of non-empty
 * strings, a quantity a non-negative integer or numeric string) and lenient
 * about unknown fields, which are kept in `extra` so that an entity written
 * by a newer Drover survives a round trip. Every failure names the entity,
 * the field path and what was expected; nothing here aborts on bad input.
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

static int begin(struct model__pctx *p, const char *kind, const json_t *j, char **name,
                 struct drv_err *err)
{
    p->kind = kind;
    p->name = NULL;
    p->err = err;
    *name = NULL;
    if (!j || !json_is_object(j))
        return drv_err_set(err, DRV_EINVAL, 0, "%s: expected a JSON object", kind);
    int rc = model__str(p, j, "name", "name", true, NULL, name);
    if (rc == 0)
        p->name = *name;
    return rc;
}

/* ---- providers ---------------------------------------------------------- */

void model_provider_free(struct model_provider *p)
{
    if (!p)
        return;
    free(p->name);
    free(p->description);
    free(p->providertype);
    json_decref(p->provisioner);
    json_decref(p->extra);
    free(p);
}

int model_provider_from_json(const json_t *j, struct model_provider **out, struct drv_err *err)
{
    static const char *const known[] = {"name", "description", "providertype", "provisioner", NULL};
    struct model__pctx p;
    struct model_provider *e = xcalloc(1, sizeof(*e));
    int rc;
    *out = NULL;
    CHECK(begin(&p, "provider", j, &e->name, err));
    CHECK(model__str(&p, j, "description", "description", false, "", &e->description));
    CHECK(model__str(&p, j, "providertype", "providertype", false, "", &e->providertype));
    CHECK(model__object(&p, j, "provisioner", "provisioner", true, &e->provisioner));
    e->extra = model__extra(j, known);
    *out = e;
    return 0;
fail:
    model_provider_free(e);
    return rc;
}

json_t *model_provider_to_json(const struct model_provider *e)
{
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(e->name));
    json_object_set_new(o, "description", json_string(e->description));
    json_object_set_new(o, "providertype", json_string(e->providertype));
    json_object_set_new(o, "provisioner", json_deep_copy(e->provisioner));
    model__put_extra(o, e->extra);
    return o;
}

/* ---- hardware and image types ------------------------------------------ */

static void pmap_free(struct model_providermap_entry *m, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(m[i].provider);
        json_decref(m[i].fields);
    }
    free(m);
}

static int pmap_cmp(const void *a, const void *b)
{
    const struct model_providermap_entry *x = a, *y = b;
    return strcmp(x->provider, y->provider);
}

static int pmap_parse(struct model__pctx *p, const json_t *j, struct model_providermap_entry **out,
                      size_t *n_out)
{
    json_t *m = model__member(j, "providermap");
    *out = NULL;
    *n_out = 0;
    if (!m)
        return 0;
    if (!json_is_object(m))
        return model__fail(p, "providermap", "an object of provider name to object");
    size_t n = json_object_size(m), k = 0;
    struct model_providermap_entry *v = xcalloc(n ? n : 1, sizeof(*v));
    const char *key;
    json_t *val;
    char field[300];
    json_object_foreach(m, key, val)
    {
        snprintf(field, sizeof(field), "providermap.%s", key);
        if (!json_is_object(val) || key[0] == '\0') {
            pmap_free(v, k);
            return model__fail(p, field, "an object");
        }
        v[k].provider = xstrdup(key);
        v[k].fields = json_deep_copy(val);
        json_t *cost = json_object_get(val, "cost");
        if (json_is_number(cost)) {
            v[k].cost = json_number_value(cost);
            v[k].has_cost = true;
        } else if (json_is_string(cost) && json_string_length(cost) > 0) {
            char *end;
            v[k].cost = strtod(json_string_value(cost), &end);
            if (*end != '\0') {
                snprintf(field, sizeof(field), "providermap.%s.cost", key);
                k++;
                pmap_free(v, k);
                return model__fail(p, field, "a number or a numeric string");
            }
            v[k].has_cost = true;
        }
        k++;
    }
    qsort(v, k, sizeof(*v), pmap_cmp);
    *out = v;
    *n_out = k;
    return 0;
}

static json_t *pmap_json(const struct model_providermap_entry *m, size_t n)
{
    json_t *o = json_object();
    for (size_t i = 0; i < n; i++)
        json_object_set_new(o, m[i].provider, json_deep_copy(m[i].fields));
    return o;
}

static const struct model_providermap_entry *pmap_find(const struct model_providermap_entry *m,
                                                       size_t n, const char *provider)
{
    struct model_providermap_entry key = {.provider = (char *)provider};
    return n ? bsearch(&key, m, n, sizeof(*m), pmap_cmp) : NULL;
}

/*
 * Hardware and image types have the same fields (model.h): each public function below is
 * one call of these, given the fields of its own struct.
 */
struct ptype {
    char **name, **description;
    struct model_providermap_entry **providermap;
    size_t *n_providermap;
    json_t **extra;
};

#define PTYPE(e)                                                                                   \
    {                                                                                              \
        &(e)->name, &(e)->description, &(e)->providermap, &(e)->n_providermap, &(e)->extra         \
    }

static void ptype_clear(const struct ptype *t)
{
    free(*t->name);
    free(*t->description);
    pmap_free(*t->providermap, *t->n_providermap);
    json_decref(*t->extra);
}

static int ptype_parse(const struct ptype *t, const char *kind, const json_t *j,
                       struct drv_err *err)
{
    static const char *const known[] = {"name", "description", "providermap", NULL};
    struct model__pctx p;
    int rc;
    CHECK(begin(&p, kind, j, t->name, err));
    CHECK(model__str(&p, j, "description", "description", false, "", t->description));
    CHECK(pmap_parse(&p, j, t->providermap, t->n_providermap));
    *t->extra = model__extra(j, known);
    return 0;
fail:
    return rc;
}

static json_t *ptype_json(const char *name, const char *description,
                          const struct model_providermap_entry *providermap, size_t n,
                          const json_t *extra)
{
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(name));
    json_object_set_new(o, "description", json_string(description));
    json_object_set_new(o, "providermap", pmap_json(providermap, n));
    model__put_extra(o, extra);
    return o;
}

void model_hardwaretype_free(struct model_hardwaretype *h)
{
    if (!h)
        return;
    ptype_clear(&(struct ptype)PTYPE(h));
    free(h);
}

void model_imagetype_free(struct model_imagetype *i)
{
    if (!i)
        return;
    ptype_clear(&(struct ptype)PTYPE(i));
    free(i);
}

int model_hardwaretype_from_json(const json_t *j, struct model_hardwaretype **out,
                                 struct drv_err *err)
{
    struct model_hardwaretype *e = xcalloc(1, sizeof(*e));
    int rc = ptype_parse(&(struct ptype)PTYPE(e), "hardwaretype", j, err);
    if (rc < 0) {
        model_hardwaretype_free(e);
        e = NULL;
    }
    *out = e;
    return rc < 0 ? rc : 0;
}

int model_imagetype_from_json(const json_t *j, struct model_imagetype **out, struct drv_err *err)
{
    struct model_imagetype *e = xcalloc(1, sizeof(*e));
    int rc = ptype_parse(&(struct ptype)PTYPE(e), "imagetype", j, err);
    if (rc < 0) {
        model_imagetype_free(e);
        e = NULL;
    }
    *out = e;
    return rc < 0 ? rc : 0;
}

json_t *model_hardwaretype_to_json(const struct model_hardwaretype *e)
{
    return ptype_json(e->name, e->description, e->providermap, e->n_providermap, e->extra);
}

json_t *model_imagetype_to_json(const struct model_imagetype *e)
{
    return ptype_json(e->name, e->description, e->providermap, e->n_providermap, e->extra);
}

const struct model_providermap_entry *
model_hardwaretype_provider(const struct model_hardwaretype *h, const char *provider)
{
    return pmap_find(h->providermap, h->n_providermap, provider);
}

const struct model_providermap_entry *model_imagetype_provider(const struct model_imagetype *i,
                                                               const char *provider)
{
    return pmap_find(i->providermap, i->n_providermap, provider);
}

/* ---- services ------------------------------------------------------------ */

void model_service_free(struct model_service *s)
{
    if (!s)
        return;
    free(s->name);
    free(s->description);
    model__strlist_free(&s->provides);
    model__strlist_free(&s->conflicts);
    model__strlist_free(&s->install_requires);
    model__strlist_free(&s->install_uses);
    model__strlist_free(&s->runtime_requires);
    model__strlist_free(&s->runtime_uses);
    for (size_t i = 0; i < s->n_actions; i++) {
        free(s->actions[i].name);
        free(s->actions[i].type);
        json_decref(s->actions[i].fields);
    }
    free(s->actions);
    json_decref(s->extra);
    free(s);
}

static int action_cmp(const void *a, const void *b)
{
    const struct model_action *x = a, *y = b;
    return strcmp(x->name, y->name);
}

static int strategy_parse(struct model__pctx *p, const json_t *v, const char *path,
                          struct model_action *a)
{
    char field[300];
    const json_t *type = v;
    const json_t *amount = NULL, *max_down = NULL;
    if (!v)
        return 0;
    if (json_is_object(v)) {
        type = json_object_get(v, "type");
        amount = json_object_get(v, "amount");
        max_down = json_object_get(v, "max_down");
    }
    snprintf(field, sizeof(field), "%s%s", path, json_is_object(v) ? ".type" : "");
    if (!json_is_string(type))
        return model__fail(p, field, "\"parallel\" or \"one-by-one\"");
    if (strcmp(json_string_value(type), "parallel") == 0)
        a->strategy = MODEL_STRATEGY_PARALLEL;
    else if (strcmp(json_string_value(type), "one-by-one") == 0)
        a->strategy = MODEL_STRATEGY_ONE_BY_ONE;
    else
        return model__fail(p, field, "\"parallel\" or \"one-by-one\"");
    if (amount && !json_is_null(amount)) {
        snprintf(field, sizeof(field), "%s.amount", path);
        if (a->strategy != MODEL_STRATEGY_PARALLEL)
            return model__fail(p, field, "no amount with \"one-by-one\"");
        int n;
        int rc = model__count(p, amount, field, &n);
        if (rc < 0)
            return rc;
        if (n < 1)
            return model__fail(p, field, "a positive integer");
        a->amount = (unsigned)n;
    }
    if (max_down && !json_is_null(max_down)) {
        snprintf(field, sizeof(field), "%s.max_down", path);
        int n;
        int rc = model__count(p, max_down, field, &n);
        if (rc < 0)
            return rc;
        if (n < 1)
            return model__fail(p, field, "a positive integer");
        a->max_down = (unsigned)n;
    }
    return 0;
}

static int actions_parse(struct model__pctx *p, const json_t *j, struct model_service *s)
{
    json_t *prov = model__member(j, "provisioner");
    if (!prov)
        return 0;
    if (!json_is_object(prov))
        return model__fail(p, "provisioner", "an object");
    json_t *acts = model__member(prov, "actions");
    if (!acts)
        return 0;
    if (!json_is_object(acts))
        return model__fail(p, "provisioner.actions", "an object of action name to action");
    size_t n = json_object_size(acts);
    s->actions = xcalloc(n ? n : 1, sizeof(*s->actions));
    const char *key;
    json_t *v;
    char path[300], field[400];
    json_object_foreach(acts, key, v)
    {
        snprintf(path, sizeof(path), "provisioner.actions.%s", key);
        if (!json_is_object(v) || key[0] == '\0')
            return model__fail(p, path, "an object");
        struct model_action *a = &s->actions[s->n_actions++];
        a->name = xstrdup(key);
        snprintf(field, sizeof(field), "%s.type", path);
        int rc = model__str(p, v, "type", field, true, NULL, &a->type);
        if (rc < 0)
            return rc;
        snprintf(field, sizeof(field), "%s.fields", path);
        if ((rc = model__object(p, v, "fields", field, true, &a->fields)) < 0)
            return rc;
        snprintf(field, sizeof(field), "%s.strategy", path);
        if ((rc = strategy_parse(p, model__member(v, "strategy"), field, a)) < 0)
            return rc;
    }
    qsort(s->actions, s->n_actions, sizeof(*s->actions), action_cmp);
    return 0;
}

int model_service_from_json(const json_t *j, struct model_service **out, struct drv_err *err)
{
    static const char *const known[] = {"name", "description", "dependencies", "provisioner", NULL};
    struct model__pctx p;
    struct model_service *e = xcalloc(1, sizeof(*e));
    int rc;
    *out = NULL;
    CHECK(begin(&p, "service", j, &e->name, err));
    CHECK(model__str(&p, j, "description", "description", false, "", &e->description));
    json_t *deps = model__member(j, "dependencies");
    if (deps && !json_is_object(deps)) {
        rc = model__fail(&p, "dependencies", "an object");
        goto fail;
    }
    CHECK(
        model__strlist(&p, model__member(deps, "provides"), "dependencies.provides", &e->provides));
    CHECK(model__strlist(&p, model__member(deps, "conflicts"), "dependencies.conflicts",
                         &e->conflicts));
    static const char *const phases[] = {"install", "runtime"};
    for (int i = 0; i < 2; i++) {
        json_t *ph = model__member(deps, phases[i]);
        char path[64];
        snprintf(path, sizeof(path), "dependencies.%s", phases[i]);
        if (ph && !json_is_object(ph)) {
            rc = model__fail(&p, path, "an object with \"requires\" and \"uses\"");
            goto fail;
        }
        struct model_strlist *req = i == 0 ? &e->install_requires : &e->runtime_requires;
        struct model_strlist *use = i == 0 ? &e->install_uses : &e->runtime_uses;
        snprintf(path, sizeof(path), "dependencies.%s.requires", phases[i]);
        CHECK(model__strlist(&p, model__member(ph, "requires"), path, req));
        snprintf(path, sizeof(path), "dependencies.%s.uses", phases[i]);
        CHECK(model__strlist(&p, model__member(ph, "uses"), path, use));
    }
    CHECK(actions_parse(&p, j, e));
    e->extra = model__extra(j, known);
    *out = e;
    return 0;
fail:
    model_service_free(e);
    return rc;
}

json_t *model_service_to_json(const struct model_service *e)
{
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(e->name));
    json_object_set_new(o, "description", json_string(e->description));
    json_t *deps = json_object();
    json_object_set_new(deps, "conflicts", model__strlist_json(&e->conflicts));
    json_object_set_new(deps, "provides", model__strlist_json(&e->provides));
    json_object_set_new(deps, "install",
                        json_pack("{s:o,s:o}", "requires",
                                  model__strlist_json(&e->install_requires), "uses",
                                  model__strlist_json(&e->install_uses)));
    json_object_set_new(deps, "runtime",
                        json_pack("{s:o,s:o}", "requires",
                                  model__strlist_json(&e->runtime_requires), "uses",
                                  model__strlist_json(&e->runtime_uses)));
    json_object_set_new(o, "dependencies", deps);
    json_t *acts = json_object();
    for (size_t i = 0; i < e->n_actions; i++) {
        const struct model_action *a = &e->actions[i];
        json_t *ao = json_object();
        json_object_set_new(ao, "type", json_string(a->type));
        json_object_set_new(ao, "fields", json_deep_copy(a->fields));
        json_t *st = NULL;
        if (a->strategy == MODEL_STRATEGY_ONE_BY_ONE)
            st = json_pack("{s:s}", "type", "one-by-one");
        else if (a->strategy == MODEL_STRATEGY_PARALLEL && a->amount)
            st = json_pack("{s:s,s:i}", "type", "parallel", "amount", a->amount);
        else if (a->strategy == MODEL_STRATEGY_PARALLEL)
            st = json_pack("{s:s}", "type", "parallel");
        if (st && a->max_down)
            json_object_set_new(st, "max_down", json_integer(a->max_down));
        if (st)
            json_object_set_new(ao, "strategy", st);
        json_object_set_new(acts, a->name, ao);
    }
    json_object_set_new(o, "provisioner", json_pack("{s:o}", "actions", acts));
    model__put_extra(o, e->extra);
    return o;
}

const struct model_action *model_service_action(const struct model_service *s, const char *name)
{
    struct model_action key = {.name = (char *)name};
    return s->n_actions ? bsearch(&key, s->actions, s->n_actions, sizeof(key), action_cmp) : NULL;
}
