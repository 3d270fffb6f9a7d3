/*
 * Property test: on random small templates the solver gives exactly the
 * layout of a brute-force reference (every valid service set, every count
 * vector in lexicographic order), or fails exactly when the reference finds
 * nothing. This is what makes the pruning (units, dominance, count bounds)
 * safe to change. Deterministic: a fixed-seed generator.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "solver.h"

#define NS 5
#define INF 1000000

static uint32_t rng = 12345;

static uint32_t rnd(uint32_t n)
{
    rng = rng * 1103515245u + 12345u;
    return (rng >> 8) % n;
}

struct tmpl {
    int n_must, n_cant;
    int must[3][NS], must_n[3];
    int cant[4][NS], cant_n[4];
    int qmin[NS], qmax[NS]; /* -1 absent */
    int hw[NS], img[NS];    /* 0 any, 1 or 2 */
};

static const char *hwn[] = {"", "hw1", "hw2"};
static const char *imgn[] = {"", "img1", "img2"};

static json_t *tmpl_json(const struct tmpl *t)
{
    json_t *svcs = json_array(), *must = json_array(), *cant = json_array(), *cons = json_object();
    char name[8];
    for (int i = 0; i < NS; i++) {
        snprintf(name, sizeof(name), "r%d", i);
        json_array_append_new(svcs, json_string(name));
        json_t *c = json_object();
        if (t->qmin[i] >= 0 || t->qmax[i] >= 0) {
            json_t *q = json_object();
            if (t->qmin[i] >= 0)
                json_object_set_new(q, "min", json_integer(t->qmin[i]));
            if (t->qmax[i] >= 0)
                json_object_set_new(q, "max", json_integer(t->qmax[i]));
            json_object_set_new(c, "quantities", q);
        }
        if (t->hw[i])
            json_object_set_new(c, "hardwaretypes", json_pack("[s]", hwn[t->hw[i]]));
        if (t->img[i])
            json_object_set_new(c, "imagetypes", json_pack("[s]", imgn[t->img[i]]));
        json_object_set_new(cons, name, c);
    }
    for (int g = 0; g < t->n_must; g++) {
        json_t *a = json_array();
        for (int k = 0; k < t->must_n[g]; k++) {
            snprintf(name, sizeof(name), "r%d", t->must[g][k]);
            json_array_append_new(a, json_string(name));
        }
        json_array_append_new(must, a);
    }
    for (int g = 0; g < t->n_cant; g++) {
        json_t *a = json_array();
        for (int k = 0; k < t->cant_n[g]; k++) {
            snprintf(name, sizeof(name), "r%d", t->cant[g][k]);
            json_array_append_new(a, json_string(name));
        }
        json_array_append_new(cant, a);
    }
    return json_pack("{s:s,s:{s:o,s:s},s:{s:{s:o,s:o},s:o}}", "name", "rand", "defaults",
                     "services", svcs, "provider", "p", "constraints", "layout", "mustcoexist",
                     must, "cantcoexist", cant, "services", cons);
}

static void random_group(int *v, int *n)
{
    *n = 2 + (int)rnd(2);
    int used = 0;
    for (int k = 0; k < *n;) {
        int s = (int)rnd(NS);
        if (used & (1 << s))
            continue;
        used |= 1 << s;
        v[k++] = s;
    }
}

static void random_tmpl(struct tmpl *t)
{
    memset(t, 0, sizeof(*t));
    t->n_must = (int)rnd(3);
    for (int g = 0; g < t->n_must; g++)
        random_group(t->must[g], &t->must_n[g]);
    t->n_cant = (int)rnd(4);
    for (int g = 0; g < t->n_cant; g++)
        random_group(t->cant[g], &t->cant_n[g]);
    for (int i = 0; i < NS; i++) {
        t->qmin[i] = rnd(3) == 0 ? (int)rnd(3) : -1;
        t->qmax[i] = rnd(3) == 0 ? 1 + (int)rnd(3) : -1;
        if (t->qmin[i] > t->qmax[i] && t->qmax[i] >= 0)
            t->qmax[i] = t->qmin[i];
        t->hw[i] = rnd(6) == 0 ? 1 + (int)rnd(2) : 0;
        t->img[i] = rnd(6) == 0 ? 1 + (int)rnd(2) : 0;
    }
}

/* ---- the reference ------------------------------------------------------------- */

struct ref_layout {
    int set, hw, img, nsvc;
};

static int popcount(int x)
{
    return __builtin_popcount((unsigned)x);
}

static bool set_valid(const struct tmpl *t, int set, int freem)
{
    if (!set || (set & freem) != freem)
        return false;
    for (int g = 0; g < t->n_must; g++) {
        int m = 0;
        for (int k = 0; k < t->must_n[g]; k++)
            m |= 1 << t->must[g][k];
        if ((set & m) && (set & m) != m)
            return false;
    }
    for (int g = 0; g < t->n_cant; g++) {
        int m = 0;
        for (int k = 0; k < t->cant_n[g]; k++)
            m |= 1 << t->cant[g][k];
        if ((set & m) == m)
            return false;
    }
    return true;
}

static int ref_cmp_names(int a, int b)
{
    /* sorted name lists, equal length: the lowest differing service */
    int d = a ^ b;
    int low = d & -d;
    return (a & low) ? -1 : 1;
}

static int ref_cmp(const void *x, const void *y)
{
    const struct ref_layout *a = x, *b = y;
    if (a->nsvc != b->nsvc)
        return a->nsvc > b->nsvc ? -1 : 1;
    /* hw2 is cheaper than hw1; img1 before img2 by name */
    if (a->hw != b->hw)
        return a->hw == 2 ? -1 : 1;
    if (a->img != b->img)
        return a->img < b->img ? -1 : 1;
    return a->set == b->set ? 0 : ref_cmp_names(a->set, b->set);
}

static struct ref_layout L[64];
static int nL, cnt[64], qmin_[NS], qmax_[NS];

static bool ref_search(int i, int rem, int *count)
{
    if (i == nL - 1) {
        cnt[i] = rem;
        for (int s = 0; s < NS; s++) {
            int c = count[s] + ((L[i].set >> s) & 1) * rem;
            if (c < qmin_[s] || c > qmax_[s])
                return false;
        }
        return true;
    }
    for (int x = rem; x >= 0; x--) {
        bool over = false;
        for (int s = 0; s < NS; s++)
            if (((L[i].set >> s) & 1) && count[s] + x > qmax_[s])
                over = true;
        if (over)
            continue;
        cnt[i] = x;
        for (int s = 0; s < NS; s++)
            count[s] += ((L[i].set >> s) & 1) * x;
        bool ok = ref_search(i + 1, rem - x, count);
        for (int s = 0; s < NS; s++)
            count[s] -= ((L[i].set >> s) & 1) * x;
        if (ok)
            return true;
    }
    return false;
}

/* The reference's layout as the solver prints it, or NULL when none. */
static char *reference(const struct tmpl *t, int nodes)
{
    int freem = 0, inlayout = 0;
    for (int g = 0; g < t->n_must; g++)
        for (int k = 0; k < t->must_n[g]; k++)
            inlayout |= 1 << t->must[g][k];
    for (int g = 0; g < t->n_cant; g++)
        for (int k = 0; k < t->cant_n[g]; k++)
            inlayout |= 1 << t->cant[g][k];
    for (int s = 0; s < NS; s++) {
        if (!((inlayout >> s) & 1) && t->qmin[s] < 0 && t->qmax[s] < 0 && !t->hw[s] && !t->img[s])
            freem |= 1 << s;
        qmin_[s] = t->qmin[s] >= 0 ? t->qmin[s] : 1;
        qmax_[s] = t->qmax[s] >= 0 ? t->qmax[s] : INF;
    }
    nL = 0;
    for (int set = 1; set < (1 << NS); set++) {
        if (!set_valid(t, set, freem))
            continue;
        /* best pair: hw2 before hw1, img1 before img2 */
        static const int hws[] = {2, 1}, imgs[] = {1, 2};
        for (int h = 0; h < 2; h++) {
            bool done = false;
            for (int m = 0; m < 2 && !done; m++) {
                bool ok = true;
                for (int s = 0; s < NS; s++)
                    if (((set >> s) & 1) &&
                        ((t->hw[s] && t->hw[s] != hws[h]) || (t->img[s] && t->img[s] != imgs[m])))
                        ok = false;
                if (ok) {
                    L[nL++] = (struct ref_layout){set, hws[h], imgs[m], popcount(set)};
                    done = true;
                }
            }
            if (done)
                break;
        }
    }
    if (nL == 0)
        return NULL;
    qsort(L, (size_t)nL, sizeof(L[0]), ref_cmp);
    int count[NS] = {0};
    if (!ref_search(0, nodes, count))
        return NULL;
    struct model_layout *l = model_layout_new();
    for (int i = 0; i < nL; i++) {
        if (!cnt[i])
            continue;
        const char *nm[NS];
        char names[NS][8];
        size_t n = 0;
        for (int s = 0; s < NS; s++)
            if ((L[i].set >> s) & 1) {
                snprintf(names[n], sizeof(names[n]), "r%d", s);
                nm[n] = names[n];
                n++;
            }
        model_layout_add(l, nm, n, hwn[L[i].hw], imgn[L[i].img], (unsigned)cnt[i], NULL);
    }
    json_t *j = model_layout_to_json(l, false);
    char *out = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    model_layout_free(l);
    return out;
}

static struct model_catalog *random_catalog(void)
{
    struct model_catalog *c = model_catalog_new();
    const char *ents[][2] = {
        {"0", "{\"name\": \"p\"}"},
        {"1", "{\"name\": \"hw1\", \"providermap\": {\"p\": {\"cost\": 2}}}"},
        {"1", "{\"name\": \"hw2\", \"providermap\": {\"p\": {\"cost\": 1}}}"},
        {"2", "{\"name\": \"img1\", \"providermap\": {\"p\": {}}}"},
        {"2", "{\"name\": \"img2\", \"providermap\": {\"p\": {}}}"},
    };
    for (size_t i = 0; i < sizeof(ents) / sizeof(ents[0]); i++) {
        json_t *j = json_loads(ents[i][1], 0, NULL);
        assert_int_equal(model_catalog_put_json(c, atoi(ents[i][0]), j, NULL, NULL), 0);
        json_decref(j);
    }
    for (int i = 0; i < NS; i++) {
        char name[8];
        snprintf(name, sizeof(name), "r%d", i);
        json_t *j = json_pack("{s:s}", "name", name);
        assert_int_equal(model_catalog_put_json(c, MODEL_SERVICE, j, NULL, NULL), 0);
        json_decref(j);
    }
    return c;
}

static void test_against_reference(void **state)
{
    struct model_catalog *c = random_catalog();
    int solved = 0, unsat = 0;
    for (int round = 0; round < 1500; round++) {
        struct tmpl t;
        random_tmpl(&t);
        json_t *j = tmpl_json(&t);
        struct model_template *mt;
        struct drv_err err = {0};
        assert_int_equal(model_template_from_json(j, false, &mt, &err), 0);
        int nodes = 1 + (int)rnd(5);
        char *want = reference(&t, nodes);
        struct solver_request r = {.catalog = c, .tmpl = mt, .nodes = (unsigned)nodes};
        struct model_layout *l = NULL;
        int rc = solver_solve(&r, &l, &err);
        char *got = NULL;
        if (rc == 0) {
            json_t *lj = model_layout_to_json(l, false);
            got = json_dumps(lj, JSON_COMPACT);
            json_decref(lj);
            model_layout_free(l);
        }
        if (!want != !got || (want && strcmp(want, got) != 0)) {
            char *tj = json_dumps(j, JSON_COMPACT);
            fail_msg("round %d, %d nodes\ntemplate %s\nwant %s\ngot  %s (%s)", round, nodes, tj,
                     want ? want : "none", got ? got : "none", rc ? err.msg : "");
        }
        if (!got)
            assert_int_equal(rc, DRV_EUNSAT);
        solved += got != NULL;
        unsat += got == NULL;
        free(want);
        free(got);
        model_template_free(mt);
        json_decref(j);
    }
    assert_true(solved > 100 && unsat > 100);
    model_catalog_free(c);
}

static char *layout_string(const struct model_layout *l)
{
    json_t *j = model_layout_to_json(l, false);
    char *s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    return s;
}

/* Shrink: keep the lexicographically greatest counts of the existing entries, in order. */
static char *reference_shrink(const struct tmpl *t, const struct model_layout *e, int nodes)
{
    int n = (int)e->n_nodes;
    int sets[64], caps[64], x[64], count[NS] = {0};
    for (int i = 0; i < n; i++) {
        sets[i] = 0;
        for (size_t k = 0; k < e->nodes[i].n_services; k++)
            sets[i] |= 1 << (e->nodes[i].services[k][1] - '0');
        caps[i] = (int)e->nodes[i].count;
    }
    for (int s = 0; s < NS; s++) {
        qmin_[s] = t->qmin[s] >= 0 ? t->qmin[s] : 1;
        qmax_[s] = t->qmax[s] >= 0 ? t->qmax[s] : INF;
    }
    /* iterative odometer over x in lexicographic descending order */
    int rem = nodes;
    for (int i = 0; i < n; i++) {
        x[i] = caps[i] < rem ? caps[i] : rem;
        rem -= x[i];
    }
    for (;;) {
        if (rem == 0) {
            memset(count, 0, sizeof(count));
            for (int i = 0; i < n; i++)
                for (int s = 0; s < NS; s++)
                    count[s] += ((sets[i] >> s) & 1) * x[i];
            bool ok = true;
            for (int s = 0; s < NS; s++)
                ok = ok && count[s] >= qmin_[s] && count[s] <= qmax_[s];
            if (ok)
                break;
        }
        /* next vector: lower the last position that can go down, refill after it */
        int i;
        int tail = rem;
        for (i = n - 1; i >= 0; i--) {
            if (i < n - 1 && x[i] > 0) {
                /* can the positions after i take tail + 1? */
                int room = 0;
                for (int k = i + 1; k < n; k++)
                    room += caps[k];
                if (room >= tail + 1)
                    break;
            }
            tail += x[i];
            x[i] = 0;
        }
        if (i < 0)
            return NULL;
        x[i]--;
        tail++;
        for (int k = i + 1; k < n; k++) {
            x[k] = caps[k] < tail ? caps[k] : tail;
            tail -= x[k];
        }
        rem = tail;
    }
    struct model_layout *l = model_layout_new();
    for (int i = 0; i < n; i++)
        if (x[i])
            model_layout_add(l, (const char *const *)e->nodes[i].services, e->nodes[i].n_services,
                             e->nodes[i].hardwaretype, e->nodes[i].imagetype, (unsigned)x[i], NULL);
    char *out = layout_string(l);
    model_layout_free(l);
    return out;
}

static void test_shrink_against_reference(void **state)
{
    struct model_catalog *c = random_catalog();
    int compared = 0, none = 0;
    for (int round = 0; round < 1500; round++) {
        struct tmpl t;
        random_tmpl(&t);
        json_t *j = tmpl_json(&t);
        struct model_template *mt;
        assert_int_equal(model_template_from_json(j, false, &mt, NULL), 0);
        int big = 3 + (int)rnd(6);
        struct solver_request r = {.catalog = c, .tmpl = mt, .nodes = (unsigned)big};
        struct model_layout *e = NULL;
        if (solver_solve(&r, &e, NULL) == 0) {
            int small = 1 + (int)rnd((uint32_t)big - 1);
            char *want = reference_shrink(&t, e, small);
            r.existing = e;
            r.nodes = (unsigned)small;
            struct model_layout *l = NULL;
            struct drv_err err = {0};
            int rc = solver_solve(&r, &l, &err);
            char *got = rc == 0 ? layout_string(l) : NULL;
            if (!want != !got || (want && strcmp(want, got) != 0)) {
                char *tj = json_dumps(j, JSON_COMPACT), *es = layout_string(e);
                fail_msg("round %d, %d -> %d nodes\ntemplate %s\nexisting %s\nwant %s\ngot  %s "
                         "(%s)",
                         round, big, small, tj, es, want ? want : "none", got ? got : "none",
                         rc ? err.msg : "");
            }
            compared++;
            none += want == NULL;
            free(want);
            free(got);
            model_layout_free(l);
            model_layout_free(e);
        }
        model_template_free(mt);
        json_decref(j);
    }
    assert_true(compared > 200 && none > 20);
    model_catalog_free(c);
}

/*
 * Expand and add or remove services on random clusters: the answer passes
 * solver_check(), existing entries come first with their hardware, image and
 * count, keep their remaining services and gain only added ones.
 */
static void test_changes_keep_existing(void **state)
{
    struct model_catalog *c = random_catalog();
    int changed = 0;
    for (int round = 0; round < 1500; round++) {
        struct tmpl t;
        random_tmpl(&t);
        json_t *j = tmpl_json(&t);
        struct model_template *mt;
        assert_int_equal(model_template_from_json(j, false, &mt, NULL), 0);
        /* Start from a random subset of the services. */
        const char *all[NS] = {"r0", "r1", "r2", "r3", "r4"}, *before[NS], *after[NS];
        size_t nb = 0, na = 0;
        for (int s = 0; s < NS; s++)
            if (rnd(3))
                before[nb++] = all[s];
        for (int s = 0; s < NS; s++)
            if (rnd(4))
                after[na++] = all[s];
        if (!nb || !na) {
            model_template_free(mt);
            json_decref(j);
            continue;
        }
        int size = 1 + (int)rnd(5);
        struct solver_request r = {.catalog = c,
                                   .tmpl = mt,
                                   .nodes = (unsigned)size,
                                   .services = before,
                                   .n_services = nb};
        struct model_layout *e = NULL, *l = NULL;
        if (solver_solve(&r, &e, NULL) == 0) {
            r.existing = e;
            r.services = after;
            r.n_services = na;
            r.nodes = (unsigned)(size + (int)rnd(3));
            struct drv_err err = {0};
            if (solver_solve(&r, &l, &err) == 0) {
                changed++;
                if (solver_check(&r, l, &err))
                    fail_msg("round %d: %s", round, err.msg);
                assert_int_equal(model_layout_size(l), r.nodes);
                /* Entries of e appear first, possibly split, in order. */
                size_t k = 0;
                for (size_t i = 0; i < e->n_nodes; i++) {
                    unsigned left = e->nodes[i].count;
                    while (left) {
                        assert_true(k < l->n_nodes);
                        const struct model_node_layout *o = &e->nodes[i], *n = &l->nodes[k++];
                        assert_string_equal(o->hardwaretype, n->hardwaretype);
                        assert_string_equal(o->imagetype, n->imagetype);
                        assert_true(n->count <= left);
                        left -= n->count;
                        for (size_t q = 0; q < o->n_services; q++) {
                            bool kept = false, present = false;
                            for (size_t w = 0; w < na; w++)
                                kept = kept || strcmp(after[w], o->services[q]) == 0;
                            for (size_t w = 0; w < n->n_services; w++)
                                present = present || strcmp(n->services[w], o->services[q]) == 0;
                            assert_int_equal(kept, present);
                        }
                        for (size_t w = 0; w < n->n_services; w++) {
                            bool old = false, added = true;
                            for (size_t q = 0; q < o->n_services; q++)
                                old = old || strcmp(n->services[w], o->services[q]) == 0;
                            /* added: on no existing node */
                            for (size_t q = 0; q < e->n_nodes; q++)
                                for (size_t z = 0; z < e->nodes[q].n_services; z++)
                                    added = added &&
                                            strcmp(n->services[w], e->nodes[q].services[z]) != 0;
                            assert_true(old || added);
                        }
                    }
                }
            }
            model_layout_free(l);
            model_layout_free(e);
        }
        model_template_free(mt);
        json_decref(j);
    }
    assert_true(changed > 200);
    model_catalog_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_reference),
        cmocka_unit_test(test_shrink_against_reference),
        cmocka_unit_test(test_changes_keep_existing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
