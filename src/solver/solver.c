/*
 * solver: the constraint solver for cluster layouts. See solver.h for the
 * interface and docs/solver.md for the algorithm and why it is exact.
 *
 * Vocabulary:
 *   service    one of the cluster's services, numbered in name order (bits.h)
 *   free       a service in no layout constraint, with no quantity and no
 *              hardware or image constraint: it goes on every node and takes
 *              no part in the search
 *   tracked    every other service; counted during the search
 *   unit       services that must-coexist groups tie together (overlapping
 *              groups joined), or one tracked service alone
 *   pair       a (hardware type, image type) the provider offers and the
 *              template and request allow
 *   candidate  a node layout: a service set with its preferred pair
 *   group      nodes whose layout is chosen together: each existing node
 *              layout (its nodes may gain services), the new nodes; when
 *              shrinking, one group holds every existing node layout
 *   var        one (group, candidate) of the search, with its count x
 *
 * Invariants:
 *   1. Everything is ordered by name or by the comparator, which is total:
 *      no hash order, no pointer order, so the output is deterministic.
 *   2. The search gives vars, in order, the largest count the constraints
 *      allow: its first leaf is the lexicographically greatest count vector,
 *      the same layout the reference algorithm would return.
 *   3. No allocation depends on the node count: 10,000 nodes cost what 10 do.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bits.h"
#include "solver.h"
#include "xalloc.h"

#define INF ((int64_t)1 << 40)
#define MAX_ADDED_PER_NODE 20
#define DEFAULT_MAX_STEPS 50000000UL
#define MAX_CANDIDATES 1000000

struct svc {
    const char *name;
    const struct model_service *def;
    const struct model_service_constraint *cons; /* NULL when none */
    int64_t qmin, qmax;                          /* qmax INF when none */
    bool free_;
    int unit; /* -1 when free */
};

struct unit {
    struct bits svcs;
    bool bounded; /* holds a service with a maximum */
    int *cant;    /* can't-coexist groups touching it */
    int n_cant;
};

struct typeref {
    const char *name;
    double cost;
    bool has_cost;
    bool preferred;
};

struct pair {
    int hw, img;       /* indices into ctx.hw / ctx.img */
    struct bits units; /* units that may go on it */
};

/* A node layout: a service set with a hardware and an image type. */
struct cand {
    struct bits svcs;
    struct bits units; /* fresh candidates only */
    const struct typeref *hw, *img;
    int nsvc;
    int cls; /* shrink: the existing class; else -1 */
};

struct excl {
    struct bits svcs;
    const char *hw, *img;
};

/* An existing node layout (identical entries without id merged). */
struct cls {
    struct bits svcs; /* its services that stay (removed ones dropped) */
    struct typeref hw, img;
    int64_t count;
    const char *id;
    size_t first_entry; /* for ordering */
};

struct ctx {
    const struct solver_request *req;
    struct drv_err *err;
    const struct model_template *t;
    const char *provider;
    bool dominance;

    struct svc *svc;
    int n_svc;
    struct bits free_mask, tracked_mask;
    struct bits *must; /* effective must-coexist groups (>= 2 services on the cluster) */
    int n_must;
    struct bits *cant; /* effective can't-coexist groups (all on the cluster) */
    int n_cant;
    struct unit *unit;
    int n_unit;

    struct typeref *hw, *img;
    int n_hw, n_img;
    struct pair *pair;
    int n_pair;
    /* distinct allowed-unit sets of the pairs */
    struct bits *mask;
    int n_mask;

    struct excl *excl;
    int n_excl;

    /* existing cluster */
    struct cls *cls;
    int n_cls;
    struct bits existing_svcs; /* services of S already on some node */
    bool existing_removed;     /* some existing node holds a service not in S */
    int64_t existing_size;
};

static int cmp_cands(const struct ctx *c, const struct cand *a, const struct cand *b);

/* ---- comparator ------------------------------------------------------------ */

struct cand_view {
    const struct ctx *c;
    const struct cand *cand;
};

const char *solver_candidate_service(const struct solver_candidate *sc, size_t i)
{
    const struct cand_view *v = sc->priv;
    size_t k = 0;
    BITS_FOREACH(s, &v->cand->svcs)
    {
        if (k++ == i)
            return v->c->svc[s].name;
    }
    return NULL;
}

static int pair_pref_cmp(const struct typeref *ha, const struct typeref *ia,
                         const struct typeref *hb, const struct typeref *ib)
{
    if (ha->preferred != hb->preferred)
        return ha->preferred ? -1 : 1;
    if (ha->has_cost != hb->has_cost)
        return ha->has_cost ? -1 : 1;
    if (ha->has_cost && ha->cost != hb->cost)
        return ha->cost < hb->cost ? -1 : 1;
    if (ia->preferred != ib->preferred)
        return ia->preferred ? -1 : 1;
    int r = strcmp(ha->name, hb->name);
    if (r)
        return r < 0 ? -1 : 1;
    r = strcmp(ia->name, ib->name);
    return r < 0 ? -1 : r > 0;
}

int solver_default_cmp(const struct solver_candidate *a, const struct solver_candidate *b,
                       void *arg)
{
    if (a->n_services != b->n_services)
        return a->n_services > b->n_services ? -1 : 1;
    struct typeref ha = {a->hardwaretype, a->hw_cost, a->hw_has_cost, a->hw_preferred};
    struct typeref hb = {b->hardwaretype, b->hw_cost, b->hw_has_cost, b->hw_preferred};
    struct typeref ia = {a->imagetype, 0, false, a->img_preferred};
    struct typeref ib = {b->imagetype, 0, false, b->img_preferred};
    int r = pair_pref_cmp(&ha, &ia, &hb, &ib);
    if (r)
        return r;
    for (size_t i = 0; i < a->n_services; i++) {
        r = strcmp(solver_candidate_service(a, i), solver_candidate_service(b, i));
        if (r)
            return r < 0 ? -1 : 1;
    }
    return 0;
}

static void cand_view(const struct ctx *c, const struct cand *x, struct cand_view *v,
                      struct solver_candidate *sc)
{
    v->c = c;
    v->cand = x;
    sc->n_services = (size_t)x->nsvc;
    sc->hardwaretype = x->hw->name;
    sc->imagetype = x->img->name;
    sc->hw_cost = x->hw->cost;
    sc->hw_has_cost = x->hw->has_cost;
    sc->hw_preferred = x->hw->preferred;
    sc->img_preferred = x->img->preferred;
    sc->priv = v;
}

static int cmp_cands(const struct ctx *c, const struct cand *a, const struct cand *b)
{
    if (!c->req->cmp) {
        /* The default comparator on bit sets: same order, no names built. */
        if (a->nsvc != b->nsvc)
            return a->nsvc > b->nsvc ? -1 : 1;
        if (a->hw != b->hw || a->img != b->img) {
            int r = pair_pref_cmp(a->hw, a->img, b->hw, b->img);
            if (r)
                return r;
        }
        return bits_name_cmp(&a->svcs, &b->svcs);
    }
    struct cand_view va, vb;
    struct solver_candidate sa, sb;
    cand_view(c, a, &va, &sa);
    cand_view(c, b, &vb, &sb);
    return c->req->cmp(&sa, &sb, c->req->cmp_arg);
}

/* qsort has no context argument: sorting is the only user of this. */
static _Thread_local const struct ctx *sort_ctx;

static int qsort_cands(const void *a, const void *b)
{
    const struct cand *x = *(const struct cand *const *)a, *y = *(const struct cand *const *)b;
    int r = cmp_cands(sort_ctx, x, y);
    if (r)
        return r;
    /* Identical layouts (shrink: two classes alike): keep the existing order. */
    return (x->cls > y->cls) - (x->cls < y->cls);
}

/* Sorts pointers, then moves the candidates once: they are large. */
static void sort_cands(const struct ctx *c, struct cand *v, size_t n)
{
    if (n < 2)
        return;
    const struct cand **p = xcalloc(n, sizeof(*p));
    for (size_t i = 0; i < n; i++)
        p[i] = &v[i];
    sort_ctx = c;
    qsort(p, n, sizeof(*p), qsort_cands);
    sort_ctx = NULL;
    struct cand *tmp = xcalloc(n, sizeof(*tmp));
    for (size_t i = 0; i < n; i++)
        tmp[i] = *p[i];
    memcpy(v, tmp, n * sizeof(*v));
    free(tmp);
    free(p);
}

/* ---- helpers ---------------------------------------------------------------- */

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

static int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

static int svc_index(const struct ctx *c, const char *name)
{
    int lo = 0, hi = c->n_svc;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        int r = strcmp(c->svc[mid].name, name);
        if (r == 0)
            return mid;
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* "a", "b", "c" into buf */
static const char *names(const struct ctx *c, const struct bits *b, char *buf, size_t n)
{
    size_t off = 0;
    buf[0] = '\0';
    BITS_FOREACH(s, b)
    {
        int w = snprintf(buf + off, n - off, "%s\"%s\"", off ? ", " : "", c->svc[s].name);
        if (w < 0 || (size_t)w >= n - off)
            break;
        off += (size_t)w;
    }
    return buf;
}

/* The set breaks no can't-coexist group. */
static bool cant_ok(const struct ctx *c, const struct bits *set)
{
    for (int g = 0; g < c->n_cant; g++)
        if (bits_subset(&c->cant[g], set))
            return false;
    return true;
}

/* Adding unit u to set (services) breaks no can't-coexist group. */
static bool unit_fits(const struct ctx *c, const struct bits *set, int u)
{
    struct bits s = bits_or(*set, c->unit[u].svcs);
    for (int k = 0; k < c->unit[u].n_cant; k++)
        if (bits_subset(&c->cant[c->unit[u].cant[k]], &s))
            return false;
    return true;
}

static bool must_ok(const struct ctx *c, const struct bits *set)
{
    for (int g = 0; g < c->n_must; g++) {
        struct bits i = bits_and(c->must[g], *set);
        if (!bits_empty(&i) && !bits_eq(&i, &c->must[g]))
            return false;
    }
    return true;
}

static bool list_allows(const struct model_strlist *l, const char *name)
{
    return l->n == 0 || model_strlist_has(l, name);
}

/* Every service of set accepts this hardware and image type. */
static bool types_ok(const struct ctx *c, const struct bits *set, const char *hw, const char *img)
{
    BITS_FOREACH(s, set)
    {
        const struct model_service_constraint *k = c->svc[s].cons;
        if (k && (!list_allows(&k->hardwaretypes, hw) || !list_allows(&k->imagetypes, img)))
            return false;
    }
    return true;
}

static bool excluded(const struct ctx *c, const struct bits *set, const char *hw, const char *img)
{
    for (int i = 0; i < c->n_excl; i++)
        if (bits_eq(&c->excl[i].svcs, set) && strcmp(c->excl[i].hw, hw) == 0 &&
            strcmp(c->excl[i].img, img) == 0)
            return true;
    return false;
}

/* ---- step 1: validate and index ---------------------------------------------- */

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool provided(const struct ctx *c, const char *what)
{
    for (int i = 0; i < c->n_svc; i++) {
        if (strcmp(c->svc[i].name, what) == 0)
            return true;
        if (model_strlist_has(&c->svc[i].def->provides, what))
            return true;
    }
    return false;
}

static int setup_services(struct ctx *c)
{
    const struct solver_request *r = c->req;
    const struct model_template *t = c->t;
    const char **list;
    size_t n;
    if (r->services) {
        list = xcalloc(r->n_services + 1, sizeof(char *));
        for (n = 0; n < r->n_services; n++)
            list[n] = r->services[n];
    } else if (r->existing) {
        n = 0;
        size_t cap = 0;
        list = NULL;
        for (size_t i = 0; i < r->existing->n_nodes; i++)
            for (size_t k = 0; k < r->existing->nodes[i].n_services; k++) {
                XGROW(list, cap, n + 1);
                list[n++] = r->existing->nodes[i].services[k];
            }
        if (!list)
            list = xcalloc(1, sizeof(char *));
    } else {
        list = xcalloc(t->default_services.n + 1, sizeof(char *));
        for (n = 0; n < t->default_services.n; n++)
            list[n] = t->default_services.v[n];
    }
    qsort(list, n, sizeof(char *), str_cmp);
    size_t uniq = 0;
    for (size_t i = 0; i < n; i++)
        if (!uniq || strcmp(list[uniq - 1], list[i]) != 0)
            list[uniq++] = list[i];
    n = uniq;
    if (n == 0) {
        free(list);
        return drv_err_set(c->err, DRV_EINVAL, 0,
                           "no services: template \"%s\" has no default "
                           "services and none were given",
                           t->name);
    }
    if (n > SOLVER_MAX_SERVICES) {
        free(list);
        return drv_err_set(c->err, DRV_EINVAL, 0, "%zu services: at most %d per cluster", n,
                           SOLVER_MAX_SERVICES);
    }
    c->svc = xcalloc(n, sizeof(*c->svc));
    c->n_svc = (int)n;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        struct svc *s = &c->svc[i];
        s->name = list[i];
        s->def = model_catalog_service(r->catalog, list[i]);
        s->unit = -1;
        if (!s->def)
            rc = drv_err_set(c->err, DRV_EINVAL, 0, "unknown service \"%s\"", list[i]);
        else if (t->compat_services.n && !model_strlist_has(&t->compat_services, list[i]))
            rc = drv_err_set(c->err, DRV_EINVAL, 0,
                             "service \"%s\" is not compatible with template \"%s\"", list[i],
                             t->name);
    }
    free(list);
    if (rc)
        return rc;
    for (int i = 0; i < c->n_svc; i++) {
        const struct model_service *d = c->svc[i].def;
        const struct model_strlist *req[2] = {&d->install_requires, &d->runtime_requires};
        for (int p = 0; p < 2; p++)
            for (size_t k = 0; k < req[p]->n; k++)
                if (!provided(c, req[p]->v[k]))
                    return drv_err_set(c->err, DRV_EINVAL, 0,
                                       "service \"%s\" requires \"%s\" (%s), which no service on "
                                       "the cluster is or provides",
                                       d->name, req[p]->v[k], p ? "runtime" : "install");
        for (size_t k = 0; k < d->conflicts.n; k++)
            for (int j = 0; j < c->n_svc; j++) {
                if (j == i)
                    continue;
                const struct model_service *o = c->svc[j].def;
                if (strcmp(o->name, d->conflicts.v[k]) == 0 ||
                    model_strlist_has(&o->provides, d->conflicts.v[k]))
                    return drv_err_set(c->err, DRV_EINVAL, 0,
                                       "services \"%s\" and \"%s\" conflict (\"%s\" conflicts "
                                       "with \"%s\")",
                                       i < j ? d->name : o->name, i < j ? o->name : d->name,
                                       d->name, d->conflicts.v[k]);
            }
    }
    /* quantities */
    for (int i = 0; i < c->n_svc; i++) {
        struct svc *s = &c->svc[i];
        s->cons = model_template_constraint(t, s->name);
        s->qmin = 1;
        s->qmax = INF;
        if (s->cons && s->cons->qmin >= 0)
            s->qmin = s->cons->qmin;
        if (s->cons && s->cons->qmax >= 0)
            s->qmax = s->cons->qmax;
        /* A maximum the cluster cannot reach binds nothing: no maximum (exact). */
        if (s->qmax >= (int64_t)r->nodes)
            s->qmax = INF;
    }
    return 0;
}

static int setup_groups(struct ctx *c)
{
    const struct model_template *t = c->t;
    struct bits in_layout = {{0}};
    c->must = xcalloc(t->n_mustcoexist + 1, sizeof(struct bits));
    for (size_t g = 0; g < t->n_mustcoexist; g++) {
        struct bits b = {{0}};
        for (size_t k = 0; k < t->mustcoexist[g].n; k++) {
            int s = svc_index(c, t->mustcoexist[g].v[k]);
            if (s >= 0)
                bits_set(&b, s);
        }
        if (bits_count(&b) >= 2) {
            c->must[c->n_must++] = b;
            in_layout = bits_or(in_layout, b);
        }
    }
    c->cant = xcalloc(t->n_cantcoexist + 1, sizeof(struct bits));
    for (size_t g = 0; g < t->n_cantcoexist; g++) {
        struct bits b = {{0}};
        bool all = t->cantcoexist[g].n > 0;
        for (size_t k = 0; k < t->cantcoexist[g].n; k++) {
            int s = svc_index(c, t->cantcoexist[g].v[k]);
            if (s < 0)
                all = false;
            else
                bits_set(&b, s);
        }
        /* A group with a service not on the cluster can never be whole: no constraint. */
        if (all) {
            c->cant[c->n_cant++] = b;
            in_layout = bits_or(in_layout, b);
        }
    }
    for (int i = 0; i < c->n_svc; i++) {
        struct svc *s = &c->svc[i];
        bool typed = s->cons && (s->cons->hardwaretypes.n || s->cons->imagetypes.n);
        bool counted = s->cons && (s->cons->qmin >= 0 || s->cons->qmax >= 0);
        s->free_ = !bits_has(&in_layout, i) && !typed && !counted;
        if (s->free_)
            bits_set(&c->free_mask, i);
        else
            bits_set(&c->tracked_mask, i);
    }
    /* Units: union-find over must-coexist groups. */
    int *parent = xcalloc((size_t)c->n_svc, sizeof(int));
    for (int i = 0; i < c->n_svc; i++)
        parent[i] = i;
    for (int g = 0; g < c->n_must; g++) {
        int first = bits_next(&c->must[g], 0);
        BITS_FOREACH(s, &c->must[g])
        {
            int a = s, b = first;
            while (parent[a] != a)
                a = parent[a];
            while (parent[b] != b)
                b = parent[b];
            if (a != b)
                parent[a > b ? a : b] = a < b ? a : b;
        }
    }
    c->unit = xcalloc((size_t)c->n_svc, sizeof(*c->unit));
    int *root_unit = xcalloc((size_t)c->n_svc, sizeof(int));
    for (int i = 0; i < c->n_svc; i++)
        root_unit[i] = -1;
    for (int i = 0; i < c->n_svc; i++) {
        if (c->svc[i].free_)
            continue;
        int r = i;
        while (parent[r] != r)
            r = parent[r];
        if (root_unit[r] < 0)
            root_unit[r] = c->n_unit++;
        struct unit *u = &c->unit[root_unit[r]];
        bits_set(&u->svcs, i);
        c->svc[i].unit = root_unit[r];
        if (c->svc[i].qmax < INF)
            u->bounded = true;
    }
    free(parent);
    free(root_unit);
    for (int u = 0; u < c->n_unit; u++) {
        struct unit *un = &c->unit[u];
        un->cant = xcalloc((size_t)c->n_cant + 1, sizeof(int));
        for (int g = 0; g < c->n_cant; g++)
            if (bits_intersects(&c->cant[g], &un->svcs))
                un->cant[un->n_cant++] = g;
    }
    return 0;
}

static void typeref_fill(struct typeref *tr, const char *name,
                         const struct model_providermap_entry *pm, bool preferred)
{
    tr->name = name;
    tr->cost = pm && pm->has_cost ? pm->cost : 0;
    tr->has_cost = pm && pm->has_cost;
    tr->preferred = preferred;
}

static int setup_types(struct ctx *c)
{
    const struct solver_request *r = c->req;
    const struct model_template *t = c->t;
    c->provider = r->provider ? r->provider : t->default_provider;
    if (!c->provider)
        return drv_err_set(c->err, DRV_EINVAL, 0,
                           "no provider: template \"%s\" has no default and none was given",
                           t->name);
    if (!model_catalog_provider(r->catalog, c->provider))
        return drv_err_set(c->err, DRV_EINVAL, 0, "unknown provider \"%s\"", c->provider);

    for (int kind = 0; kind < 2; kind++) {
        bool hw = kind == 0;
        const char *want = hw ? r->hardwaretype : r->imagetype;
        const char *pref = want ? want : hw ? t->default_hardwaretype : t->default_imagetype;
        const struct model_strlist *compat = hw ? &t->compat_hardwaretypes : &t->compat_imagetypes;
        enum model_kind mk = hw ? MODEL_HARDWARETYPE : MODEL_IMAGETYPE;
        const char *what = hw ? "hardware type" : "image type";
        size_t total = model_catalog_count(r->catalog, mk);
        struct typeref *v = xcalloc(total + 1, sizeof(*v));
        int n = 0;
        if (want) {
            const void *e = hw ? (const void *)model_catalog_hardwaretype(r->catalog, want)
                               : (const void *)model_catalog_imagetype(r->catalog, want);
            int rc = 0;
            if (!e)
                rc = drv_err_set(c->err, DRV_EINVAL, 0, "unknown %s \"%s\"", what, want);
            else if (compat->n && !model_strlist_has(compat, want))
                rc = drv_err_set(c->err, DRV_EINVAL, 0,
                                 "%s \"%s\" is not compatible with template \"%s\"", what, want,
                                 t->name);
            if (rc) {
                free(v);
                return rc;
            }
        }
        for (size_t i = 0; i < total; i++) {
            const char *name = *(char *const *)model_catalog_at(r->catalog, mk, i);
            if (want && strcmp(name, want) != 0)
                continue;
            if (compat->n && !model_strlist_has(compat, name))
                continue;
            const struct model_providermap_entry *pm =
                hw ? model_hardwaretype_provider(model_catalog_at(r->catalog, mk, i), c->provider)
                   : model_imagetype_provider(model_catalog_at(r->catalog, mk, i), c->provider);
            if (!pm)
                continue;
            typeref_fill(&v[n++], name, hw ? pm : NULL, pref && strcmp(pref, name) == 0);
        }
        if (n == 0) {
            free(v);
            if (want)
                return drv_err_set(c->err, DRV_EINVAL, 0,
                                   "%s \"%s\" is not available from provider \"%s\"", what, want,
                                   c->provider);
            return drv_err_set(c->err, DRV_EUNSAT, 0,
                               "no %s of template \"%s\" is available from provider \"%s\"", what,
                               t->name, c->provider);
        }
        if (hw) {
            c->hw = v;
            c->n_hw = n;
        } else {
            c->img = v;
            c->n_img = n;
        }
    }
    /* Pairs, in the default preference order, with the units each allows. */
    c->pair = xcalloc((size_t)(c->n_hw * c->n_img), sizeof(*c->pair));
    for (int h = 0; h < c->n_hw; h++)
        for (int i = 0; i < c->n_img; i++) {
            struct pair *p = &c->pair[c->n_pair++];
            p->hw = h;
            p->img = i;
            for (int u = 0; u < c->n_unit; u++)
                if (types_ok(c, &c->unit[u].svcs, c->hw[h].name, c->img[i].name))
                    bits_set(&p->units, u);
        }
    for (int a = 1; a < c->n_pair; a++) /* insertion sort: few pairs */
        for (int b = a; b > 0; b--) {
            struct pair *x = &c->pair[b - 1], *y = &c->pair[b];
            if (pair_pref_cmp(&c->hw[x->hw], &c->img[x->img], &c->hw[y->hw], &c->img[y->img]) <= 0)
                break;
            struct pair tmp = *x;
            *x = *y;
            *y = tmp;
        }
    c->mask = xcalloc((size_t)c->n_pair, sizeof(struct bits));
    for (int p = 0; p < c->n_pair; p++) {
        bool seen = false;
        for (int m = 0; m < c->n_mask && !seen; m++)
            seen = bits_eq(&c->mask[m], &c->pair[p].units);
        if (!seen)
            c->mask[c->n_mask++] = c->pair[p].units;
    }
    return 0;
}

static int setup_existing(struct ctx *c)
{
    const struct model_layout *e = c->req->existing;
    if (!e)
        return 0;
    c->cls = xcalloc(e->n_nodes + 1, sizeof(*c->cls));
    for (size_t i = 0; i < e->n_nodes; i++) {
        const struct model_node_layout *n = &e->nodes[i];
        const struct model_hardwaretype *hw =
            model_catalog_hardwaretype(c->req->catalog, n->hardwaretype);
        if (!hw)
            return drv_err_set(c->err, DRV_EINVAL, 0,
                               "existing layout: nodes[%zu]: unknown hardware type \"%s\"", i,
                               n->hardwaretype);
        if (!model_catalog_imagetype(c->req->catalog, n->imagetype))
            return drv_err_set(c->err, DRV_EINVAL, 0,
                               "existing layout: nodes[%zu]: unknown image type \"%s\"", i,
                               n->imagetype);
        struct bits b = {{0}};
        for (size_t k = 0; k < n->n_services; k++) {
            int s = svc_index(c, n->services[k]);
            if (s >= 0) {
                bits_set(&b, s);
                bits_set(&c->existing_svcs, s);
            } else if (model_catalog_service(c->req->catalog, n->services[k])) {
                c->existing_removed = true;
            } else {
                return drv_err_set(c->err, DRV_EINVAL, 0,
                                   "existing layout: nodes[%zu]: unknown service \"%s\"", i,
                                   n->services[k]);
            }
        }
        c->existing_size += n->count;
        /* Entries with an id stay apart; the others merge with their twins. */
        int k = n->id ? c->n_cls : 0;
        for (; k < c->n_cls; k++) {
            struct cls *x = &c->cls[k];
            if (!n->id && !x->id && bits_eq(&x->svcs, &b) &&
                strcmp(x->hw.name, n->hardwaretype) == 0 && strcmp(x->img.name, n->imagetype) == 0)
                break;
        }
        if (k < c->n_cls) {
            c->cls[k].count += n->count;
            continue;
        }
        struct cls *x = &c->cls[c->n_cls++];
        x->svcs = b;
        x->count = n->count;
        x->id = n->id;
        x->first_entry = i;
        bool hw_pref = false, img_pref = false;
        for (int h = 0; h < c->n_hw; h++)
            if (strcmp(c->hw[h].name, n->hardwaretype) == 0)
                hw_pref = c->hw[h].preferred;
        for (int h = 0; h < c->n_img; h++)
            if (strcmp(c->img[h].name, n->imagetype) == 0)
                img_pref = c->img[h].preferred;
        typeref_fill(&x->hw, n->hardwaretype, model_hardwaretype_provider(hw, c->provider),
                     hw_pref);
        typeref_fill(&x->img, n->imagetype, NULL, img_pref);
    }
    return 0;
}

static void setup_excluded(struct ctx *c)
{
    const struct model_layout *e = c->req->excluded;
    if (!e)
        return;
    c->excl = xcalloc(e->n_nodes + 1, sizeof(*c->excl));
    for (size_t i = 0; i < e->n_nodes; i++) {
        struct excl *x = &c->excl[c->n_excl];
        bool known = true;
        for (size_t k = 0; k < e->nodes[i].n_services; k++) {
            int s = svc_index(c, e->nodes[i].services[k]);
            if (s < 0)
                known = false;
            else
                bits_set(&x->svcs, s);
        }
        if (!known) { /* holds a service not on the cluster: can never match */
            memset(x, 0, sizeof(*x));
            continue;
        }
        x->hw = e->nodes[i].hardwaretype;
        x->img = e->nodes[i].imagetype;
        c->n_excl++;
    }
}

/* ---- step 2 and 3: node layouts for new nodes ------------------------------------ */

struct cands {
    struct cand *v;
    size_t n, cap;
};

static void cands_push(struct cands *cs, const struct cand *x)
{
    XGROW(cs->v, cs->cap, cs->n + 1);
    cs->v[cs->n++] = *x;
}

/* Some pair of this mask takes set (services, free included) without exclusion. */
static bool usable_in_mask(const struct ctx *c, const struct bits *units, const struct bits *set,
                           int m)
{
    if (c->n_excl == 0)
        return true;
    for (int p = 0; p < c->n_pair; p++)
        if (bits_eq(&c->pair[p].units, &c->mask[m]) && bits_subset(units, &c->pair[p].units) &&
            !excluded(c, set, c->hw[c->pair[p].hw].name, c->img[c->pair[p].img].name))
            return true;
    return false;
}

/* Under mask m, some unbounded unit could join: the set is dominated. */
static bool dominated_in_mask(const struct ctx *c, const struct bits *units,
                              const struct bits *svcs, int m)
{
    for (int u = 0; u < c->n_unit; u++) {
        if (c->unit[u].bounded || bits_has(units, u) || !bits_has(&c->mask[m], u))
            continue;
        if (!unit_fits(c, svcs, u))
            continue;
        struct bits u2 = *units, s2 = bits_or(*svcs, c->unit[u].svcs);
        bits_set(&u2, u);
        if (usable_in_mask(c, &u2, &s2, m))
            return true;
    }
    return false;
}

struct enum_state {
    struct ctx *c;
    int m;
    struct bits *suffix; /* services of allowed units from index i on */
    struct cands *out;
    bool overflow; /* more than MAX_CANDIDATES: stop */
};

static void enum_rec(struct enum_state *st, int u, struct bits units, struct bits svcs)
{
    struct ctx *c = st->c;
    if (st->overflow)
        return;
    const struct bits *mask = &c->mask[st->m];
    while (u < c->n_unit && !bits_has(mask, u))
        u++;
    if (u == c->n_unit) {
        if (c->dominance && dominated_in_mask(c, &units, &svcs, st->m))
            return;
        struct bits all = bits_or(svcs, c->free_mask);
        if (bits_empty(&all))
            return;
        /*
         * Another mask that allows the set either generates it too (the
         * first such mask keeps it) or shows it dominated: skip it here.
         */
        for (int m = 0; m < c->n_mask; m++) {
            if (m == st->m || !bits_subset(&units, &c->mask[m]) ||
                !usable_in_mask(c, &units, &all, m))
                continue;
            if (m < st->m || (c->dominance && dominated_in_mask(c, &units, &svcs, m)))
                return;
        }
        struct cand x = {.svcs = all, .units = units, .cls = -1};
        if (st->out->n >= MAX_CANDIDATES)
            st->overflow = true;
        else
            cands_push(st->out, &x);
        return;
    }
    if (unit_fits(c, &svcs, u)) {
        struct bits u2 = units;
        bits_set(&u2, u);
        enum_rec(st, u + 1, u2, bits_or(svcs, c->unit[u].svcs));
    }
    if (c->dominance && !c->unit[u].bounded && c->n_excl == 0) {
        /* Leaving an unbounded unit out only makes sense if something will block it. */
        struct bits potential = bits_or(svcs, st->suffix[u + 1]);
        bool blockable = false;
        for (int k = 0; k < c->unit[u].n_cant && !blockable; k++) {
            struct bits rest = bits_andnot(c->cant[c->unit[u].cant[k]], c->unit[u].svcs);
            blockable = bits_subset(&rest, &potential);
        }
        if (!blockable)
            return;
    }
    enum_rec(st, u + 1, units, svcs);
}

/* Pick the preferred usable pair of each set; drop sets with none. */
static void choose_pairs(struct ctx *c, struct cands *cs)
{
    size_t k = 0;
    for (size_t i = 0; i < cs->n; i++) {
        struct cand *x = &cs->v[i];
        x->nsvc = bits_count(&x->svcs);
        struct cand best = {0};
        bool have = false;
        for (int p = 0; p < c->n_pair; p++) {
            const struct pair *pr = &c->pair[p];
            if (!bits_subset(&x->units, &pr->units) ||
                excluded(c, &x->svcs, c->hw[pr->hw].name, c->img[pr->img].name))
                continue;
            struct cand y = *x;
            y.hw = &c->hw[pr->hw];
            y.img = &c->img[pr->img];
            if (!have || cmp_cands(c, &y, &best) < 0) {
                best = y;
                have = true;
            }
            if (!c->req->cmp)
                break; /* pairs are in the default order already */
        }
        if (have)
            cs->v[k++] = best;
    }
    cs->n = k;
}

static int fresh_candidates(struct ctx *c, struct cands *cs)
{
    struct bits *suffix = xcalloc((size_t)c->n_unit + 2, sizeof(struct bits));
    for (int m = 0; m < c->n_mask; m++) {
        memset(suffix, 0, ((size_t)c->n_unit + 2) * sizeof(struct bits));
        for (int u = c->n_unit - 1; u >= 0; u--) {
            suffix[u] = suffix[u + 1];
            if (bits_has(&c->mask[m], u))
                suffix[u] = bits_or(suffix[u], c->unit[u].svcs);
        }
        struct enum_state st = {c, m, suffix, cs, false};
        struct bits none = {{0}};
        enum_rec(&st, 0, none, none);
        if (st.overflow) {
            free(suffix);
            int bounded = 0;
            for (int u = 0; u < c->n_unit; u++)
                bounded += c->unit[u].bounded;
            return drv_err_set(c->err, DRV_EUNSAT, 0,
                               "more than %d node layouts: template \"%s\" has %d groups of "
                               "services with a maximum that can combine freely; add "
                               "can't-coexist constraints or drop maxima",
                               MAX_CANDIDATES, c->t->name, bounded);
        }
    }
    free(suffix);
    choose_pairs(c, cs);
    sort_cands(c, cs->v, cs->n);
    return 0;
}

/* Why a unit fits nowhere, for the error message; 0 when some node layout holds it. */
static int explain_unplaceable(struct ctx *c, const struct cands *cs)
{
    for (int u = 0; u < c->n_unit; u++) {
        int64_t need = 0;
        int worst = -1;
        BITS_FOREACH(s, &c->unit[u].svcs)
        {
            if (c->svc[s].qmin > need) {
                need = c->svc[s].qmin;
                worst = s;
            }
        }
        if (need == 0)
            continue;
        bool placed = false;
        for (size_t i = 0; i < cs->n && !placed; i++)
            placed = bits_has(&cs->v[i].units, u);
        if (placed)
            continue;
        char buf[400];
        const struct bits *svcs = &c->unit[u].svcs;
        if (!cant_ok(c, svcs))
            return drv_err_set(c->err, DRV_EUNSAT, 0,
                               "service \"%s\" cannot be placed: must-coexist constraints put %s "
                               "on one node, but they can't coexist",
                               c->svc[worst].name, names(c, svcs, buf, sizeof(buf)));
        bool any_pair = false;
        for (int p = 0; p < c->n_pair && !any_pair; p++)
            any_pair = bits_has(&c->pair[p].units, u);
        if (!any_pair) {
            if (bits_count(svcs) > 1)
                return drv_err_set(c->err, DRV_EUNSAT, 0,
                                   "service \"%s\" cannot be placed: no hardware and image type "
                                   "from provider \"%s\" suits all of %s, which must coexist",
                                   c->svc[worst].name, c->provider,
                                   names(c, svcs, buf, sizeof(buf)));
            return drv_err_set(c->err, DRV_EUNSAT, 0,
                               "service \"%s\" cannot be placed: no hardware and image type from "
                               "provider \"%s\" meets its constraints",
                               c->svc[worst].name, c->provider);
        }
        return drv_err_set(c->err, DRV_EUNSAT, 0,
                           "service \"%s\" cannot be placed: every node layout holding it was "
                           "excluded",
                           c->svc[worst].name);
    }
    return 0;
}

/*
 * When every node must hold a unit with a maximum (no free service, no unit
 * without one), the new nodes cannot outnumber the sum of those maxima.
 */
static int capacity_check(struct ctx *c, int64_t new_nodes)
{
    if (!bits_empty(&c->free_mask))
        return 0;
    int64_t cap = 0;
    for (int u = 0; u < c->n_unit; u++) {
        if (!c->unit[u].bounded)
            return 0;
        int64_t m = INF;
        BITS_FOREACH(s, &c->unit[u].svcs)
        {
            m = min64(m, c->svc[s].qmax);
        }
        cap += m;
    }
    if (new_nodes <= cap)
        return 0;
    return drv_err_set(c->err, DRV_EUNSAT, 0,
                       "%lld new nodes, but every node must hold a service with a maximum and "
                       "those maxima allow at most %lld nodes",
                       (long long)new_nodes, (long long)cap);
}

/* ---- existing nodes: what each existing node layout may become --------------------- */

static int existing_options(struct ctx *c, const struct cls *k, struct cands *cs)
{
    struct bits added = bits_andnot(bits_andnot(c->tracked_mask, c->existing_svcs), k->svcs);
    struct bits forced = bits_andnot(c->free_mask, c->existing_svcs);
    int cand_svcs[SOLVER_MAX_SERVICES], n = 0;
    BITS_FOREACH(s, &added)
    {
        struct bits one = {{0}};
        bits_set(&one, s);
        if (types_ok(c, &one, k->hw.name, k->img.name))
            cand_svcs[n++] = s;
    }
    if (n > MAX_ADDED_PER_NODE)
        return drv_err_set(c->err, DRV_EINVAL, 0,
                           "%d services to add to existing nodes: at most %d at once", n,
                           MAX_ADDED_PER_NODE);
    struct bits base = bits_or(k->svcs, forced);
    size_t first = cs->n;
    for (uint32_t sub = 0; sub < (1u << n); sub++) {
        struct bits set = base;
        for (int i = 0; i < n; i++)
            if (sub & (1u << i))
                bits_set(&set, cand_svcs[i]);
        if (!must_ok(c, &set) || !cant_ok(c, &set))
            continue;
        if (sub && excluded(c, &set, k->hw.name, k->img.name))
            continue;
        struct cand x = {.svcs = set, .hw = &k->hw, .img = &k->img, .cls = -1};
        x.nsvc = bits_count(&set);
        cands_push(cs, &x);
    }
    if (c->dominance) {
        size_t w = first;
        for (size_t i = first; i < cs->n; i++) {
            bool dom = false;
            for (size_t j = first; j < cs->n && !dom; j++) {
                if (i == j || !bits_subset(&cs->v[i].svcs, &cs->v[j].svcs) ||
                    bits_eq(&cs->v[i].svcs, &cs->v[j].svcs))
                    continue;
                struct bits extra = bits_andnot(cs->v[j].svcs, cs->v[i].svcs);
                bool unbounded = true;
                BITS_FOREACH(s, &extra)
                {
                    if (c->svc[s].qmax < INF)
                        unbounded = false;
                }
                dom = unbounded;
            }
            if (!dom)
                cs->v[w++] = cs->v[i];
        }
        cs->n = w;
    }
    if (cs->n == first) {
        char buf[400];
        return drv_err_set(c->err, DRV_EUNSAT, 0,
                           "existing nodes with %s on \"%s\"/\"%s\" cannot be kept: they break a "
                           "must-coexist or can't-coexist constraint of template \"%s\"",
                           names(c, &k->svcs, buf, sizeof(buf)), k->hw.name, k->img.name,
                           c->t->name);
    }
    sort_cands(c, cs->v + first, cs->n - first);
    return 0;
}

/* ---- step 4: counts ---------------------------------------------------------------- */

struct var {
    const struct cand *cand;
    struct bits capped;  /* tracked services of the set with a maximum */
    struct bits counted; /* tracked services of the set */
    int64_t ub;
    int group;
    struct bits sufmask; /* tracked services of the later vars of its group */
    int64_t sufub;       /* sum of the later vars' ub (finite groups), else INF */
    int next_open;       /* index of a var at or after this one, same group, with no maximum */
    int64_t *sufcap;     /* finite groups: per service, the later vars' ub holding it */
};

struct group {
    int64_t total;
    int first, last;    /* vars [first, last] */
    bool finite;        /* vars have their own ub (shrink) */
    int64_t *cap_later; /* per service: nodes of later groups that could hold it */
    int cls;            /* existing class or -1 */
};

struct search {
    struct ctx *c;
    struct var *var;
    int n_var;
    struct group *grp;
    int n_grp;
    int64_t *count; /* per service */
    int64_t *rem;   /* per group */
    int64_t *x, *lo;
    unsigned long steps, max_steps;
    unsigned long *blame;  /* per service */
    struct bits saturated; /* services at their maximum */
    int64_t **sufcaps;     /* per group, the storage of its vars' sufcap */
};

/* Capacity of the vars after v in its group for service s. */
static int64_t suffix_cap(const struct search *S, int i, int s)
{
    const struct var *v = &S->var[i];
    const struct group *g = &S->grp[v->group];
    if (!bits_has(&v->sufmask, s))
        return 0;
    return g->finite ? v->sufcap[s] : INF;
}

/* The interval [*lo, *hi] for var i; false when empty. */
static bool interval(struct search *S, int i, int64_t *lo_out, int64_t *hi_out)
{
    struct ctx *c = S->c;
    const struct var *v = &S->var[i];
    const struct group *g = &S->grp[v->group];
    int64_t rem = S->rem[v->group];
    int64_t hi = min64(v->ub, rem), lo = i == g->last ? rem : max64(0, rem - v->sufub);
    int hi_by = -1, lo_by = -1;
    BITS_FOREACH(s, &v->capped)
    {
        int64_t room = c->svc[s].qmax - S->count[s];
        if (room < hi) {
            hi = room;
            hi_by = s;
        }
    }
    if (lo > hi)
        goto empty;
    /* Can the group's remaining nodes go anywhere? */
    if (v->next_open < 0 && g->finite == false) {
        int64_t absorb = 0;
        for (int j = i; j <= g->last && absorb < rem; j++) {
            int64_t cap = S->var[j].ub;
            BITS_FOREACH(s, &S->var[j].capped)
            {
                cap = min64(cap, c->svc[s].qmax - S->count[s]);
            }
            absorb += max64(cap, 0);
        }
        if (absorb < rem) {
            lo = hi + 1;
            goto empty;
        }
    }
    BITS_FOREACH(s, &c->tracked_mask)
    {
        int64_t d = c->svc[s].qmin - S->count[s];
        if (d <= 0)
            continue;
        int64_t later = g->cap_later[s];
        int64_t suf = suffix_cap(S, i, s);
        if (bits_has(&v->counted, s)) {
            if (d > rem + later) {
                lo = hi + 1;
                lo_by = s;
                goto empty;
            }
            if (d - suf - later > lo) {
                lo = d - suf - later;
                lo_by = s;
            }
        } else {
            if (suf + later < d) {
                lo = hi + 1;
                lo_by = s;
                goto empty;
            }
            int64_t bound = rem - max64(0, d - later);
            if (bound < hi) {
                hi = bound;
                hi_by = s;
            }
        }
        if (lo > hi)
            goto empty;
    }
    *lo_out = lo;
    *hi_out = hi;
    return true;
empty:
    if (hi_by >= 0)
        S->blame[hi_by]++;
    if (lo_by >= 0)
        S->blame[lo_by]++;
    return false;
}

static void apply(struct search *S, int i, int64_t x)
{
    const struct var *v = &S->var[i];
    if (x == 0)
        return;
    BITS_FOREACH(s, &v->counted)
    {
        S->count[s] += x;
    }
    BITS_FOREACH(s, &v->capped)
    {
        if (S->count[s] >= S->c->svc[s].qmax)
            bits_set(&S->saturated, s);
        else
            S->saturated.w[s >> 6] &= ~((uint64_t)1 << (s & 63));
    }
    S->rem[v->group] -= x;
}

/* 1 found, 0 none, -1 out of steps. */
static int search_run(struct search *S)
{
    int i = 0;
    for (;;) {
        if (i == S->n_var)
            return 1;
        if (++S->steps > S->max_steps)
            return -1;
        int64_t lo, hi;
        /*
         * A var holding a saturated service takes 0 nodes; the checks it
         * would make are repeated, stricter, by the next var, so skip them.
         */
        if (i != S->grp[S->var[i].group].last &&
            bits_intersects(&S->var[i].capped, &S->saturated)) {
            S->lo[i] = S->x[i] = 0;
            i++;
            continue;
        }
        if (interval(S, i, &lo, &hi)) {
            S->lo[i] = lo;
            S->x[i] = hi;
            apply(S, i, hi);
            i++;
            continue;
        }
        /* Backtrack: the latest var that can still take one node less. */
        for (;;) {
            i--;
            if (i < 0)
                return 0;
            if (S->x[i] > S->lo[i]) {
                apply(S, i, -1);
                S->x[i]--;
                i++;
                break;
            }
            apply(S, i, -S->x[i]);
            S->x[i] = 0;
        }
    }
}

static void add_group(struct search *S, const struct cand *v, size_t n, int64_t total, bool finite,
                      int cls)
{
    struct ctx *c = S->c;
    struct group *g = &S->grp[S->n_grp];
    g->total = total;
    g->finite = finite;
    g->cls = cls;
    g->first = S->n_var;
    for (size_t k = 0; k < n; k++) {
        struct var *x = &S->var[S->n_var++];
        x->cand = &v[k];
        x->counted = bits_and(v[k].svcs, c->tracked_mask);
        BITS_FOREACH(s, &x->counted)
        {
            if (c->svc[s].qmax < INF)
                bits_set(&x->capped, s);
        }
        x->ub = finite ? c->cls[v[k].cls].count : INF;
        x->group = S->n_grp;
    }
    g->last = S->n_var - 1;
    struct bits suf = {{0}};
    int64_t sufub = 0;
    int next_open = -1;
    int64_t *caps = NULL;
    if (finite) {
        caps = xcalloc(n * (size_t)c->n_svc + 1, sizeof(int64_t));
        S->sufcaps[S->n_grp] = caps;
    }
    for (int j = g->last; j >= g->first; j--) {
        struct var *x = &S->var[j];
        if (finite) {
            x->sufcap = caps + (size_t)(j - g->first) * (size_t)c->n_svc;
            if (j < g->last) {
                const struct var *y = &S->var[j + 1];
                memcpy(x->sufcap, y->sufcap, (size_t)c->n_svc * sizeof(int64_t));
                BITS_FOREACH(t, &y->counted)
                {
                    x->sufcap[t] += y->ub;
                }
            }
        }
        x->sufmask = suf;
        x->sufub = finite ? sufub : INF;
        if (bits_empty(&x->capped) && !finite)
            next_open = j;
        x->next_open = next_open;
        suf = bits_or(suf, x->counted);
        sufub += x->ub;
    }
    S->n_grp++;
}

static void finish_groups(struct search *S)
{
    struct ctx *c = S->c;
    int64_t *acc = xcalloc((size_t)c->n_svc, sizeof(int64_t));
    for (int g = S->n_grp - 1; g >= 0; g--) {
        struct group *gr = &S->grp[g];
        gr->cap_later = xcalloc((size_t)c->n_svc, sizeof(int64_t));
        memcpy(gr->cap_later, acc, (size_t)c->n_svc * sizeof(int64_t));
        if (gr->finite) {
            for (int s = 0; s < c->n_svc; s++) {
                int64_t cap = 0;
                for (int j = gr->first; j <= gr->last; j++)
                    if (bits_has(&S->var[j].counted, s))
                        cap += S->var[j].ub;
                acc[s] += min64(cap, gr->total);
            }
        } else {
            /* Any var holding s can take the whole group. */
            struct bits any = {{0}};
            for (int j = gr->first; j <= gr->last; j++)
                any = bits_or(any, S->var[j].counted);
            BITS_FOREACH(s, &any)
            {
                acc[s] += gr->total;
            }
        }
    }
    /* acc is now the capacity of every group: the root check. */
    S->rem = xcalloc((size_t)S->n_grp + 1, sizeof(int64_t));
    for (int g = 0; g < S->n_grp; g++)
        S->rem[g] = S->grp[g].total;
    free(S->count);
    S->count = acc; /* reused below after the check by the caller */
}

static void search_free(struct search *S)
{
    for (int g = 0; g < S->n_grp; g++) {
        free(S->grp[g].cap_later);
        free(S->sufcaps[g]);
    }
    free(S->sufcaps);
    free(S->grp);
    free(S->var);
    free(S->count);
    free(S->rem);
    free(S->x);
    free(S->lo);
    free(S->blame);
}

/* ---- assembling the answer ------------------------------------------------------------ */

static void emit(struct ctx *c, struct model_layout *l, const struct cand *x, int64_t count,
                 const char *id)
{
    const char *nm[SOLVER_MAX_SERVICES];
    size_t n = 0;
    BITS_FOREACH(s, &x->svcs)
    {
        nm[n++] = c->svc[s].name;
    }
    model_layout_add(l, nm, n, x->hw->name, x->img->name, (unsigned)count, id);
}

static void ctx_free(struct ctx *c)
{
    for (int u = 0; u < c->n_unit; u++)
        free(c->unit[u].cant);
    free(c->unit);
    free(c->svc);
    free(c->must);
    free(c->cant);
    free(c->hw);
    free(c->img);
    free(c->pair);
    free(c->mask);
    free(c->excl);
    free(c->cls);
}

static int ctx_init(struct ctx *c, const struct solver_request *req, struct drv_err *err)
{
    memset(c, 0, sizeof(*c));
    c->req = req;
    c->err = err;
    c->t = req->tmpl;
    c->dominance = !req->cmp || req->cmp_prefers_supersets;
    if (!req->catalog || !req->tmpl)
        return drv_err_set(err, DRV_EINVAL, 0, "no catalogue or no template");
    int rc;
    if ((rc = setup_services(c)) || (rc = setup_groups(c)) || (rc = setup_types(c)) ||
        (rc = setup_existing(c)))
        return rc;
    setup_excluded(c);
    return 0;
}

static int size_check(const struct ctx *c, int64_t n)
{
    const struct model_template *t = c->t;
    if (n < 1)
        return drv_err_set(c->err, DRV_EINVAL, 0, "a cluster needs at least one node");
    if (t->size_min >= 0 && n < t->size_min)
        return drv_err_set(c->err, DRV_EUNSAT, 0,
                           "cluster size %lld is below the minimum %d of template \"%s\"",
                           (long long)n, t->size_min, t->name);
    if (t->size_max >= 0 && n > t->size_max)
        return drv_err_set(c->err, DRV_EUNSAT, 0,
                           "cluster size %lld is above the maximum %d of template \"%s\"",
                           (long long)n, t->size_max, t->name);
    return 0;
}

int solver_solve(const struct solver_request *req, struct model_layout **out, struct drv_err *err)
{
    struct ctx c;
    *out = NULL;
    int rc = ctx_init(&c, req, err);
    if (rc)
        goto done;
    int64_t n = req->nodes;
    if ((rc = size_check(&c, n)))
        goto done;
    bool shrink = req->existing && n < c.existing_size;
    if (shrink) {
        struct bits all = bits_or(c.tracked_mask, c.free_mask);
        if (!bits_eq(&all, &c.existing_svcs) || c.existing_removed) {
            rc = drv_err_set(err, DRV_EINVAL, 0,
                             "shrink and a change of services at once: do one, then the other");
            goto done;
        }
    }

    /* Node layouts of each group. */
    struct cands fresh = {0}, *opts = NULL;
    int n_opts = 0;
    int64_t new_nodes = req->existing ? n - c.existing_size : n;
    if (shrink) {
        opts = xcalloc(1, sizeof(*opts));
        n_opts = 1;
        for (int k = 0; k < c.n_cls; k++) {
            struct cand x = {
                .svcs = c.cls[k].svcs, .hw = &c.cls[k].hw, .img = &c.cls[k].img, .cls = k};
            x.nsvc = bits_count(&x.svcs);
            cands_push(&opts[0], &x);
        }
        sort_cands(&c, opts[0].v, opts[0].n);
    } else {
        opts = xcalloc((size_t)c.n_cls + 1, sizeof(*opts));
        n_opts = c.n_cls;
        for (int k = 0; k < c.n_cls && rc == 0; k++)
            rc = existing_options(&c, &c.cls[k], &opts[k]);
        if (rc == 0 && new_nodes > 0)
            rc = capacity_check(&c, new_nodes);
        if (rc == 0 && new_nodes > 0) {
            rc = fresh_candidates(&c, &fresh);
            if (rc == 0 && !req->existing)
                rc = explain_unplaceable(&c, &fresh);
            if (rc == 0 && fresh.n == 0)
                rc = drv_err_set(err, DRV_EUNSAT, 0,
                                 "no node layout meets the constraints of template \"%s\"",
                                 c.t->name);
        }
    }

    struct search S = {.c = &c};
    size_t total_vars = fresh.n;
    for (int k = 0; k < n_opts; k++)
        total_vars += opts[k].n;
    if (rc)
        goto free_cands;
    S.var = xcalloc(total_vars + 1, sizeof(*S.var));
    S.grp = xcalloc((size_t)n_opts + 2, sizeof(*S.grp));
    S.sufcaps = xcalloc((size_t)n_opts + 2, sizeof(*S.sufcaps));
    if (shrink) {
        add_group(&S, opts[0].v, opts[0].n, n, true, -1);
    } else {
        for (int k = 0; k < n_opts; k++)
            add_group(&S, opts[k].v, opts[k].n, c.cls[k].count, false, k);
        if (new_nodes > 0)
            add_group(&S, fresh.v, fresh.n, new_nodes, false, -1);
    }
    finish_groups(&S);
    /* Root check: a service's minimum beyond the nodes that could hold it. */
    BITS_FOREACH(s, &c.tracked_mask)
    {
        if (c.svc[s].qmin > S.count[s]) {
            rc = drv_err_set(err, DRV_EUNSAT, 0,
                             "service \"%s\" needs at least %lld nodes, but only %lld of the %lld "
                             "nodes can hold it",
                             c.svc[s].name, (long long)c.svc[s].qmin, (long long)S.count[s],
                             (long long)n);
            break;
        }
    }
    if (rc)
        goto free_search;
    memset(S.count, 0, (size_t)c.n_svc * sizeof(int64_t));
    S.x = xcalloc(total_vars + 1, sizeof(int64_t));
    S.lo = xcalloc(total_vars + 1, sizeof(int64_t));
    S.blame = xcalloc((size_t)c.n_svc, sizeof(unsigned long));
    S.max_steps = req->max_steps ? req->max_steps : DEFAULT_MAX_STEPS;
    int found = search_run(&S);
    if (found <= 0) {
        int worst = -1;
        for (int s = 0; s < c.n_svc; s++)
            if (S.blame[s] && (worst < 0 || S.blame[s] > S.blame[worst]))
                worst = s;
        char q[64] = "";
        if (worst >= 0 && c.svc[worst].qmax < INF)
            snprintf(q, sizeof(q), "min %lld, max %lld", (long long)c.svc[worst].qmin,
                     (long long)c.svc[worst].qmax);
        else if (worst >= 0)
            snprintf(q, sizeof(q), "min %lld", (long long)c.svc[worst].qmin);
        if (found < 0)
            rc = drv_err_set(err, DRV_EUNSAT, 0,
                             "no layout found within %lu search steps (%zu node layouts, %lld "
                             "nodes)",
                             S.max_steps, total_vars, (long long)n);
        else if (worst >= 0)
            rc = drv_err_set(err, DRV_EUNSAT, 0,
                             "no layout of %lld nodes meets the constraints: the quantities of "
                             "service \"%s\" (%s) cannot be met with the %zu node layouts the "
                             "other constraints allow",
                             (long long)n, c.svc[worst].name, q, total_vars);
        else
            rc = drv_err_set(err, DRV_EUNSAT, 0,
                             "no layout of %lld nodes meets the constraints: the %zu node layouts "
                             "the constraints allow cannot be combined into %lld nodes",
                             (long long)n, total_vars, (long long)n);
        goto free_search;
    }

    struct model_layout *l = model_layout_new();
    if (shrink) {
        /* Kept nodes, in the existing order. */
        int *var_of = xcalloc((size_t)c.n_cls + 1, sizeof(int));
        for (int i = 0; i < S.n_var; i++)
            var_of[S.var[i].cand->cls] = i;
        for (int k = 0; k < c.n_cls; k++) {
            int i = var_of[k];
            if (S.x[i] > 0)
                emit(&c, l, S.var[i].cand, S.x[i], c.cls[k].id);
        }
        free(var_of);
    } else {
        for (int i = 0; i < S.n_var; i++) {
            if (S.x[i] == 0)
                continue;
            int k = S.grp[S.var[i].group].cls;
            emit(&c, l, S.var[i].cand, S.x[i], k >= 0 ? c.cls[k].id : NULL);
        }
    }
    *out = l;
    rc = 0;
free_search:
    search_free(&S);
free_cands:
    free(fresh.v);
    for (int k = 0; k < n_opts; k++)
        free(opts[k].v);
    free(opts);
done:
    ctx_free(&c);
    return rc;
}

/* ---- checking a layout ------------------------------------------------------------------ */

int solver_check(const struct solver_request *req, const struct model_layout *layout,
                 struct drv_err *err)
{
    struct ctx c;
    int rc = ctx_init(&c, req, err);
    if (rc)
        goto done;
    if ((rc = size_check(&c, model_layout_size(layout))))
        goto done;
    int64_t *count = xcalloc((size_t)c.n_svc, sizeof(int64_t));
    for (size_t i = 0; i < layout->n_nodes && rc == 0; i++) {
        const struct model_node_layout *nl = &layout->nodes[i];
        struct bits set = {{0}};
        char buf[400];
        for (size_t k = 0; k < nl->n_services && rc == 0; k++) {
            int s = svc_index(&c, nl->services[k]);
            if (s < 0)
                rc = drv_err_set(err, DRV_EUNSAT, 0,
                                 "nodes[%zu]: service \"%s\" is not on the "
                                 "cluster",
                                 i, nl->services[k]);
            else
                bits_set(&set, s);
        }
        if (rc)
            break;
        if (!must_ok(&c, &set))
            rc = drv_err_set(err, DRV_EUNSAT, 0, "nodes[%zu]: %s break a must-coexist constraint",
                             i, names(&c, &set, buf, sizeof(buf)));
        else if (!cant_ok(&c, &set))
            rc = drv_err_set(err, DRV_EUNSAT, 0, "nodes[%zu]: %s break a can't-coexist constraint",
                             i, names(&c, &set, buf, sizeof(buf)));
        else if (!types_ok(&c, &set, nl->hardwaretype, nl->imagetype))
            rc = drv_err_set(err, DRV_EUNSAT, 0,
                             "nodes[%zu]: \"%s\"/\"%s\" breaks a service's hardware or image "
                             "constraint",
                             i, nl->hardwaretype, nl->imagetype);
        BITS_FOREACH(s, &set)
        {
            count[s] += nl->count;
        }
    }
    for (int s = 0; s < c.n_svc && rc == 0; s++)
        if (count[s] < c.svc[s].qmin || count[s] > c.svc[s].qmax)
            rc = drv_err_set(err, DRV_EUNSAT, 0,
                             "service \"%s\" is on %lld nodes, outside its quantities",
                             c.svc[s].name, (long long)count[s]);
    free(count);
done:
    ctx_free(&c);
    return rc;
}
