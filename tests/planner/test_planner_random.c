/*
 * Randomised tests for src/planner: random service graphs (acyclic by
 * construction: a service only depends on services with a smaller index, by
 * name or through provides) on random layouts, every operation. Invariants:
 * the build succeeds, the plan is deterministic, stages hold, JSON round-trips
 * byte for byte, rollback of any prefix of a topological order succeeds and
 * undoes only what succeeded, and a service's runtime dependencies are started
 * before it on every node. The seed is fixed, so a failure reproduces.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "xalloc.h"

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static unsigned rnd(unsigned n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng % n);
}

#define NSVC 9

static const char *const all_actions[] = {"install", "configure", "initialize",
                                          "start",   "stop",      "remove"};

static void random_catalog(struct model_catalog *c)
{
    for (int i = 0; i < NSVC; i++) {
        char name[8], acts[96] = "", ireq[64] = "", rreq[64] = "", ruse[64] = "", prov[16] = "";
        snprintf(name, sizeof(name), "s%d", i);
        for (int a = 0; a < 6; a++) {
            if (rnd(4) == 0)
                continue; /* about a quarter of the actions missing: pass-through */
            if (acts[0])
                strcat(acts, ",");
            strcat(acts, all_actions[a]);
            if (a == 3 && rnd(5) == 0)
                strcat(acts, rnd(2) ? ":one-by-one" : ":parallel=2");
        }
        for (int j = 0; j < i; j++) {
            char dep[8];
            /* Depend on s<j> by name, or on "p<j>", which s<j> provides. */
            snprintf(dep, sizeof(dep), "%s%d", rnd(4) == 0 ? "p" : "s", j);
            char *lists[3] = {ireq, rreq, ruse};
            int which = (int)rnd(8);
            if (which < 3) {
                if (lists[which][0])
                    strcat(lists[which], ",");
                strcat(lists[which], dep);
            }
        }
        snprintf(prov, sizeof(prov), "p%d", i);
        fx_service(c, name, acts, ireq, rreq, ruse, prov);
    }
}

static struct model_layout *random_layout(int nodes, int first_id)
{
    struct model_layout *l = model_layout_new();
    for (int n = 0; n < nodes; n++) {
        char id[16], svcs[128] = "";
        snprintf(id, sizeof(id), "n%d", first_id + n);
        for (int i = 0; i < NSVC; i++) {
            if (rnd(3) != 0)
                continue;
            char s[8];
            snprintf(s, sizeof(s), "%ss%d", svcs[0] ? "," : "", i);
            strcat(svcs, s);
        }
        fx_node(l, id, svcs);
    }
    return l;
}

/* The layout with each node's services changed a little (add/remove services). */
static struct model_layout *perturb(const struct model_layout *l)
{
    struct model_layout *o = model_layout_new();
    for (size_t k = 0; k < l->n_nodes; k++) {
        const struct model_node_layout *nl = &l->nodes[k];
        const char *v[NSVC + 1];
        size_t n = 0;
        for (size_t i = 0; i < nl->n_services; i++)
            if (rnd(4) != 0)
                v[n++] = nl->services[i];
        char extra[8];
        snprintf(extra, sizeof(extra), "s%u", rnd(NSVC));
        v[n++] = extra;
        model_layout_add(o, v, n, nl->hardwaretype, nl->imagetype, 1, nl->id);
    }
    return o;
}

static void check_plan(const struct model_catalog *c, struct planner_plan *p,
                       const struct model_layout *from)
{
    fx_check_stages(p);
    fx_check_roundtrip(p);
    /* Rollback after a prefix of a topological order succeeded. */
    uint32_t *order = xmalloc((p->n_tasks + 1) * sizeof(*order));
    struct drv_err err = {0};
    assert_int_equal(planner_toposort(p, order, &err), 0);
    size_t cut = p->n_tasks ? rnd((unsigned)p->n_tasks + 1) : 0;
    enum planner_task_state *st = xcalloc(p->n_tasks + 1, sizeof(*st));
    for (size_t k = 0; k < cut; k++)
        st[order[k]] = PLANNER_TS_SUCCESS;
    struct planner_plan *rb = NULL;
    struct planner_input *in = NULL;
    if (from)
        assert_int_equal(planner_input_from_model(c, NULL, from, NULL, &in, &err), 0);
    if (planner_rollback_layout(p, st, in ? in->services : NULL, in ? in->n_services : 0,
                                in ? &in->start : NULL, &rb, &err))
        fail_msg("rollback: %s", err.msg);
    for (size_t i = 0; i < rb->n_tasks; i++) {
        const struct planner_task *t = &rb->tasks[i];
        if (t->action == PLANNER_ACT_ANCHOR || t->inverse_of == NULL)
            continue; /* anchors, and the tasks of a deleted node made whole again */
        long o = planner_find(p, t->inverse_of);
        assert_true(o >= 0);
        assert_int_equal(st[o], PLANNER_TS_SUCCESS);
        assert_string_equal(t->node, p->tasks[o].node);
    }
    fx_check_stages(rb);
    fx_check_roundtrip(rb);
    planner_plan_free(rb);
    planner_input_free(in);
    free(st);
    free(order);
}

static void test_random_plans(void **state)
{
    for (int round = 0; round < 150; round++) {
        struct model_catalog *c = model_catalog_new();
        random_catalog(c);
        int nodes = 1 + (int)rnd(12);
        struct model_layout *l = random_layout(nodes, 1);
        struct model_layout *more = random_layout(1 + (int)rnd(4), 100);
        /* l plus the new nodes, for expand; l with services moved, for add/remove. */
        struct model_layout *big = model_layout_new();
        for (int w = 0; w < 2; w++) {
            const struct model_layout *src = w ? more : l;
            for (size_t k = 0; k < src->n_nodes; k++) {
                const struct model_node_layout *nl = &src->nodes[k];
                model_layout_add(big, (const char *const *)nl->services, nl->n_services,
                                 nl->hardwaretype, nl->imagetype, 1, nl->id);
            }
        }
        struct model_layout *moved = perturb(l);
        for (int op = 0; op < PLANNER_OP_ROLLBACK; op++) {
            const struct model_layout *from = l, *to = NULL;
            switch (op) {
            case PLANNER_OP_CREATE:
                from = NULL, to = l;
                break;
            case PLANNER_OP_EXPAND:
                to = big;
                break;
            case PLANNER_OP_SHRINK:
                from = big, to = l;
                break;
            case PLANNER_OP_ADD_SERVICES:
            case PLANNER_OP_REMOVE_SERVICES:
                to = moved;
                break;
            default:
                break;
            }
            struct planner_plan *p = NULL, *q = NULL;
            struct drv_err err = {0};
            if (fx_plan_err(c, (enum planner_op)op, from, to, NULL, &p, &err))
                fail_msg("round %d %s: %s", round, planner_op_name(op), err.msg);
            assert_int_equal(fx_plan_err(c, (enum planner_op)op, from, to, NULL, &q, &err), 0);
            char *a = planner_plan_to_json_text(p, NULL), *b = planner_plan_to_json_text(q, NULL);
            assert_string_equal(a, b); /* deterministic */
            free(a);
            free(b);
            if (op == PLANNER_OP_CREATE) {
                /* Runtime order: if s<i> requires s<j> (by name) and both start,
                 * every start of s<j> precedes every start of s<i>. */
                for (size_t x = 0; x < p->n_tasks; x++) {
                    const struct planner_task *t = &p->tasks[x];
                    if (t->action != PLANNER_ACT_START)
                        continue;
                    const struct model_service *sv = model_catalog_service(c, t->service);
                    for (size_t r = 0; r < sv->runtime_requires.n; r++) {
                        const char *dn = sv->runtime_requires.v[r];
                        if (dn[0] != 's')
                            continue;
                        for (size_t y = 0; y < p->n_tasks; y++) {
                            const struct planner_task *u = &p->tasks[y];
                            if (u->action == PLANNER_ACT_START && strcmp(u->service, dn) == 0)
                                assert_true(fx_waits(p, t->id, u->id));
                        }
                    }
                }
            }
            check_plan(c, p, from);
            /* Run it, with a failover, and fail one task in every other round. */
            const char *fail =
                (round % 2 && p->n_tasks) ? p->tasks[rnd((unsigned)p->n_tasks)].id : NULL;
            if (fail && p->tasks[planner_find(p, fail)].action == PLANNER_ACT_ANCHOR)
                fail = NULL;
            enum planner_task_state *st = fx_run(p, (unsigned)round, fail, rnd(8));
            for (size_t i = 0; i < p->n_tasks; i++)
                if (fail == NULL)
                    assert_int_equal(st[i], PLANNER_TS_SUCCESS);
            free(st);
            planner_plan_free(p);
            planner_plan_free(q);
        }
        model_layout_free(l);
        model_layout_free(more);
        model_layout_free(big);
        model_layout_free(moved);
        model_catalog_free(c);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_plans),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
