/*
 * planner_model: see planner_model.h. Everything the input points to lives in
 * the store: node arrays, generated ids, and the services' action tables (the
 * strings themselves stay in the catalogue and layouts, which must outlive the
 * input).
 */
#include "planner_model.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planner_int.h"
#include "xalloc.h"

struct planner_input__store {
    struct planner__arena *arena;
    struct planner_node *snodes, *tnodes;
    /* The layouts' strings copied into the arena (service lists into svcs), so that
       the input outlives the model layouts it was built from. */
    struct model_node_layout *own[2];
    char **svcs;
};

static const enum planner_action svc_actions[] = {
    PLANNER_ACT_INSTALL, PLANNER_ACT_CONFIGURE, PLANNER_ACT_INITIALIZE,
    PLANNER_ACT_START,   PLANNER_ACT_STOP,      PLANNER_ACT_REMOVE,
};

static struct planner_strlist sl(const struct model_strlist *l)
{
    return (struct planner_strlist){(const char *const *)l->v, l->n};
}

static void convert_service(const struct model_service *m, struct planner_service *p)
{
    memset(p, 0, sizeof(*p));
    p->name = m->name;
    p->install_requires = sl(&m->install_requires);
    p->install_uses = sl(&m->install_uses);
    p->runtime_requires = sl(&m->runtime_requires);
    p->runtime_uses = sl(&m->runtime_uses);
    p->provides = sl(&m->provides);
    for (size_t k = 0; k < sizeof(svc_actions) / sizeof(svc_actions[0]); k++) {
        enum planner_action a = svc_actions[k];
        const struct model_action *ma = model_service_action(m, planner_action_name(a));
        if (ma == NULL || ma->type == NULL)
            continue;
        p->actions[a].type = ma->type;
        p->actions[a].fields = ma->fields;
        p->actions[a].strategy.type = ma->strategy == MODEL_STRATEGY_ONE_BY_ONE
                                          ? PLANNER_STRAT_ONE_BY_ONE
                                          : PLANNER_STRAT_PARALLEL;
        p->actions[a].strategy.amount = ma->strategy == MODEL_STRATEGY_PARALLEL ? ma->amount : 0;
        p->actions[a].strategy.max_down = ma->max_down;
    }
}

static size_t layout_count(const struct model_layout *l)
{
    return l ? model_layout_size(l) : 0;
}

static void fill_node(struct planner_node *pn, const struct model_node_layout *nl, const char *id)
{
    pn->id = id;
    pn->hardwaretype = nl->hardwaretype;
    pn->imagetype = nl->imagetype;
    pn->services = (const char *const *)nl->services;
    pn->n_services = nl->n_services;
}

/* Next "node-<k>" not taken. */
static const char *fresh_id(struct planner__arena *a, struct planner__map *taken, unsigned *next)
{
    char buf[32];
    for (;;) {
        snprintf(buf, sizeof(buf), "node-%u", ++*next);
        if (planner__map_get(taken, buf) < 0)
            break;
    }
    char *id = planner__arena_strdup(a, buf);
    planner__map_put(taken, id, 0);
    return id;
}

/* Starting nodes by signature: hardware, image and (for the first pass) services. */
struct bucket {
    uint32_t *v;
    size_t n, cap, cur;
};

struct sigs {
    struct planner__map map; /* signature -> bucket index */
    struct bucket *b;
    size_t n, cap;
};

static char *signature(const struct planner_node *n, int with_services)
{
    size_t len = strlen(n->hardwaretype ? n->hardwaretype : "") +
                 strlen(n->imagetype ? n->imagetype : "") + 3;
    for (size_t i = 0; with_services && i < n->n_services; i++)
        len += strlen(n->services[i]) + 1;
    char *key = xmalloc(len);
    snprintf(key, len, "%s\n%s\n", n->hardwaretype ? n->hardwaretype : "",
             n->imagetype ? n->imagetype : "");
    for (size_t i = 0; with_services && i < n->n_services; i++) {
        strcat(key, n->services[i]);
        strcat(key, "\n");
    }
    return key;
}

static void sigs_init(struct sigs *s)
{
    memset(s, 0, sizeof(*s));
    planner__map_init(&s->map, 16);
}

static void sigs_add(struct sigs *s, struct planner__arena *ar, const char *key, uint32_t j)
{
    long bi = planner__map_get(&s->map, key);
    if (bi < 0) {
        XGROW(s->b, s->cap, s->n + 1);
        memset(&s->b[s->n], 0, sizeof(s->b[s->n]));
        planner__map_put(&s->map, planner__arena_strdup(ar, key), (uint32_t)s->n);
        bi = (long)s->n++;
    }
    struct bucket *b = &s->b[bi];
    XGROW(b->v, b->cap, b->n + 1);
    b->v[b->n++] = j;
}

static struct bucket *sigs_get(struct sigs *s, const char *key)
{
    long bi = planner__map_get(&s->map, key);
    return bi < 0 ? NULL : &s->b[bi];
}

static void sigs_free(struct sigs *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->b[i].v);
    free(s->b);
    planner__map_free(&s->map);
}

static size_t layout_services(const struct model_layout *l)
{
    size_t n = 0;
    for (size_t i = 0; l && i < l->n_nodes; i++)
        n += l->nodes[i].n_services;
    return n;
}

/*
 * The node layouts of l with every string in the arena and the service lists
 * in st->svcs from *used on: the input keeps pointers to ids, types and
 * service names, and its caller may free the layouts it was built from (the
 * engine does, right after planning).
 */
static struct model_node_layout *own_nodes(struct planner_input__store *st,
                                           const struct model_layout *l, size_t *used)
{
    if (l == NULL)
        return NULL;
    struct model_node_layout *v = xcalloc(l->n_nodes + 1, sizeof(*v));
    for (size_t i = 0; i < l->n_nodes; i++) {
        const struct model_node_layout *nl = &l->nodes[i];
        v[i] = *nl;
        v[i].id = planner__arena_strdup(st->arena, nl->id);
        v[i].hardwaretype = planner__arena_strdup(st->arena, nl->hardwaretype);
        v[i].imagetype = planner__arena_strdup(st->arena, nl->imagetype);
        v[i].services = (char **)&st->svcs[*used];
        for (size_t k = 0; k < nl->n_services; k++)
            st->svcs[(*used)++] = planner__arena_strdup(st->arena, nl->services[k]);
    }
    return v;
}

int planner_input_from_model(const struct model_catalog *c, const struct model_template *tmpl,
                             const struct model_layout *start, const struct model_layout *target,
                             struct planner_input **out, struct drv_err *err)
{
    *out = NULL;
    struct planner_input *in = xcalloc(1, sizeof(*in));
    in->store = xcalloc(1, sizeof(*in->store));
    struct planner__arena *ar = in->store->arena = planner__arena_new();
    /* From here on, start and target are the input's own copies. */
    if (target == start)
        target = NULL;
    size_t n_svcs = 0;
    in->store->svcs =
        xcalloc(layout_services(start) + layout_services(target) + 1, sizeof(*in->store->svcs));
    struct model_node_layout *os = own_nodes(in->store, start, &n_svcs);
    struct model_node_layout *ot = own_nodes(in->store, target, &n_svcs);
    in->store->own[0] = os;
    in->store->own[1] = ot;
    struct model_layout owned_start = {os, start ? start->n_nodes : 0};
    struct model_layout owned_target = {ot, target ? target->n_nodes : 0};
    start = start ? &owned_start : NULL;
    target = target ? &owned_target : NULL;

    /* Services of either layout, sorted by name (model layouts keep each node's sorted). */
    struct planner__map seen;
    planner__map_init(&seen, 64);
    const char **names = NULL;
    size_t nn = 0, cap = 0;
    const struct model_layout *ls[2] = {start, target};
    for (int w = 0; w < 2; w++) {
        for (size_t i = 0; ls[w] && i < ls[w]->n_nodes; i++) {
            const struct model_node_layout *nl = &ls[w]->nodes[i];
            for (size_t k = 0; k < nl->n_services; k++) {
                if (planner__map_put(&seen, nl->services[k], (uint32_t)nn) >= 0)
                    continue;
                XGROW(names, cap, nn + 1);
                names[nn++] = nl->services[k];
            }
        }
    }
    planner__map_free(&seen);
    for (size_t i = 1; i < nn; i++)
        for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            const char *t = names[j];
            names[j] = names[j - 1];
            names[j - 1] = t;
        }
    in->services = xcalloc(nn ? nn : 1, sizeof(*in->services));
    in->n_services = nn;
    for (size_t i = 0; i < nn; i++) {
        const struct model_service *ms = model_catalog_service(c, names[i]);
        if (ms == NULL) {
            int rc = drv_err_set(err, DRV_ENOENT, 0, "unknown service \"%s\"", names[i]);
            free(names);
            planner_input_free(in);
            return rc;
        }
        convert_service(ms, &in->services[i]);
    }
    free(names);

    if (tmpl && tmpl->default_provider) {
        in->provider = tmpl->default_provider;
        const struct model_provider *p = model_catalog_provider(c, tmpl->default_provider);
        if (p && p->providertype && p->providertype[0])
            in->providertype = p->providertype;
    }

    /* Node ids. */
    struct planner__map taken;
    planner__map_init(&taken, layout_count(start) + layout_count(target));
    for (int w = 0; w < 2; w++)
        for (size_t i = 0; ls[w] && i < ls[w]->n_nodes; i++)
            if (ls[w]->nodes[i].id)
                planner__map_put(&taken, ls[w]->nodes[i].id, 0);
    unsigned next = 0;
    size_t ns = layout_count(start);
    struct planner_node *sn = in->store->snodes = xcalloc(ns + 1, sizeof(*sn));
    size_t k = 0;
    for (size_t i = 0; start && i < start->n_nodes; i++) {
        const struct model_node_layout *nl = &start->nodes[i];
        for (unsigned c2 = 0; c2 < nl->count; c2++, k++)
            fill_node(&sn[k], nl, nl->id ? nl->id : fresh_id(ar, &taken, &next));
    }
    in->start.nodes = sn;
    in->start.n_nodes = ns;

    if (target == NULL || target == start) {
        in->target = in->start;
    } else {
        size_t nt = layout_count(target);
        struct planner_node *tn = in->store->tnodes = xcalloc(nt + 1, sizeof(*tn));
        unsigned char *used = xcalloc(ns + 1, 1);
        struct planner__map sids;
        planner__map_init(&sids, ns);
        for (size_t i = 0; i < ns; i++)
            planner__map_put(&sids, sn[i].id, (uint32_t)i);
        /* Pass 0: explicit ids. Pass 1: same node layout. Pass 2: same hardware
         * and image. Pass 3: new nodes. Passes 1 and 2 take the starting nodes
         * of a signature in order from a bucket, so pairing is linear. */
        struct sigs bk[2];
        for (int w = 0; w < 2; w++) {
            sigs_init(&bk[w]);
            for (size_t j = 0; j < ns; j++) {
                char *key = signature(&sn[j], w == 0);
                sigs_add(&bk[w], ar, key, (uint32_t)j);
                free(key);
            }
        }
        const char **ids = xcalloc(nt + 1, sizeof(*ids));
        for (int pass = 0; pass < 4; pass++) {
            k = 0;
            for (size_t i = 0; i < target->n_nodes; i++) {
                const struct model_node_layout *nl = &target->nodes[i];
                struct bucket *b = NULL;
                if (pass == 1 || pass == 2) {
                    struct planner_node probe;
                    fill_node(&probe, nl, NULL);
                    char *key = signature(&probe, pass == 1);
                    b = sigs_get(&bk[pass - 1], key);
                    free(key);
                }
                for (unsigned c2 = 0; c2 < nl->count; c2++, k++) {
                    if (ids[k])
                        continue;
                    if (pass == 0 && nl->id) {
                        ids[k] = nl->id;
                        long j = planner__map_get(&sids, nl->id);
                        if (j >= 0)
                            used[j] = 1;
                        continue;
                    }
                    if (pass == 0 || nl->id)
                        continue;
                    if (pass == 3) {
                        ids[k] = fresh_id(ar, &taken, &next);
                        continue;
                    }
                    while (b && b->cur < b->n && used[b->v[b->cur]])
                        b->cur++;
                    if (b && b->cur < b->n) {
                        uint32_t j = b->v[b->cur++];
                        used[j] = 1;
                        ids[k] = sn[j].id;
                    }
                }
            }
        }
        sigs_free(&bk[0]);
        sigs_free(&bk[1]);
        k = 0;
        for (size_t i = 0; i < target->n_nodes; i++) {
            const struct model_node_layout *nl = &target->nodes[i];
            for (unsigned c2 = 0; c2 < nl->count; c2++, k++)
                fill_node(&tn[k], nl, ids[k]);
        }
        free(ids);
        free(used);
        planner__map_free(&sids);
        in->target.nodes = tn;
        in->target.n_nodes = nt;
    }
    planner__map_free(&taken);
    *out = in;
    return 0;
}

void planner_input_free(struct planner_input *in)
{
    if (in == NULL)
        return;
    if (in->store) {
        free(in->store->own[0]);
        free(in->store->own[1]);
        free(in->store->svcs);
        planner__arena_free(in->store->arena);
        free(in->store->snodes);
        free(in->store->tnodes);
        free(in->store);
    }
    free(in->services);
    free(in);
}

struct planner_request planner_input_request(const struct planner_input *in, enum planner_op op,
                                             const char *const *subset, size_t n_subset)
{
    struct planner_request r;
    memset(&r, 0, sizeof(r));
    r.op = op;
    r.start = &in->start;
    r.target = &in->target;
    r.services = in->services;
    r.n_services = in->n_services;
    r.subset.v = subset;
    r.subset.n = n_subset;
    r.provider = in->provider;
    r.providertype = in->providertype;
    return r;
}

struct model_layout *planner_input_target_layout(const struct planner_input *in)
{
    struct model_layout *l = model_layout_new();
    for (size_t i = 0; i < in->target.n_nodes; i++) {
        const struct planner_node *n = &in->target.nodes[i];
        model_layout_add(l, n->services, n->n_services, n->hardwaretype, n->imagetype, 1, n->id);
    }
    return l;
}

/* ---- dependents of a layout change ---- */

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Does some string under v name "service.<name>" (followed by no name character)? */
static bool names_service(const json_t *v, const char *name)
{
    if (json_is_string(v)) {
        size_t len = strlen(name);
        for (const char *p = json_string_value(v); (p = strstr(p, "service.")) != NULL; p++) {
            const char *q = p + 8;
            if (strncmp(q, name, len) == 0) {
                char c = q[len];
                if (!(isalnum((unsigned char)c) || c == '-' || c == '_' || c == '.'))
                    return true;
            }
        }
        return false;
    }
    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)v, k, x) if (names_service(x, name)) return true;
    }
    if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) if (names_service(x, name)) return true;
    }
    return false;
}

json_t *planner_model_reconf(const struct model_catalog *c, const json_t *services,
                             const json_t *config)
{
    json_t *out = json_array();
    size_t n = 0;
    const char **names = xcalloc(json_array_size(services) + 1, sizeof(*names));
    for (size_t i = 0; i < json_array_size(services); i++)
        if (json_is_string(json_array_get(services, i)))
            names[n++] = json_string_value(json_array_get(services, i));
    qsort(names, n, sizeof(*names), cmp_name);
    for (size_t i = 0; i < n; i++) {
        const struct model_service *sv = model_catalog_service(c, names[i]);
        const json_t *rc = sv ? json_object_get(sv->extra, "reconfigure") : NULL;
        const json_t *sections = json_object_get(rc, "config");
        if (!json_is_array(sections))
            continue;
        json_t *on = json_array();
        for (size_t k = 0; k < n; k++) {
            if (k == i)
                continue;
            size_t x;
            json_t *sec;
            bool hit = false;
            json_array_foreach(sections, x, sec)
            {
                if (json_is_string(sec))
                    hit |= names_service(json_object_get(config, json_string_value(sec)), names[k]);
            }
            if (hit)
                json_array_append_new(on, json_string(names[k]));
        }
        if (json_array_size(on) == 0) {
            json_decref(on);
            continue;
        }
        json_array_append_new(out,
                              json_pack("{s:s, s:o, s:b}", "service", names[i], "on", on, "restart",
                                        json_is_true(json_object_get(rc, "restart"))));
    }
    free(names);
    return out;
}

size_t planner_reconf_from_json(const json_t *arr, struct planner_reconf **out)
{
    size_t n = json_array_size(arr), m = 0;
    *out = xcalloc(n + 1, sizeof(**out));
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(arr, i), *on = json_object_get(e, "on");
        const char *svc = json_string_value(json_object_get(e, "service"));
        if (!svc || !json_is_array(on))
            continue;
        bool ok = true;
        size_t k;
        json_t *x;
        json_array_foreach(on, k, x) ok &= json_is_string(x);
        if (!ok)
            continue;
        /* A jansson array of strings is not a char *[]: keep the names in the array itself. */
        struct planner_reconf *r = &(*out)[m++];
        r->service = svc;
        r->restart = json_is_true(json_object_get(e, "restart"));
        const char **v = xcalloc(json_array_size(on) + 1, sizeof(*v));
        json_array_foreach(on, k, x) v[k] = json_string_value(x);
        r->on.v = v;
        r->on.n = json_array_size(on);
    }
    return m;
}

void planner_reconf_free(struct planner_reconf *r, size_t n)
{
    for (size_t i = 0; r && i < n; i++)
        free((void *)r[i].on.v);
    free(r);
}
