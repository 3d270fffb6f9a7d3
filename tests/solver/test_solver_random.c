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

static void test_against_reference(void **state)
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
