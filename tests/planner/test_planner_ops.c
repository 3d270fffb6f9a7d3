/*
 * test_planner_ops: what operations promise beyond their task lists: rolling
 * restarts keep at most max_down nodes of a service down (docs/planner.md
 * "Rolling restarts"), and a layout change reconfigures the services whose
 * config depends on the changed nodes ("Dependents of a layout change").
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "fixture.h"

static struct model_layout *same_nodes(int n, const char *services)
{
    struct model_layout *l = model_layout_new();
    for (int i = 1; i <= n; i++) {
        char id[8];
        snprintf(id, sizeof(id), "n%d", i);
        fx_node(l, id, services);
    }
    return l;
}

static void test_one_by_one_restart_finishes_node_before_next_stops(void **state)
{
    (void)state;
    struct model_catalog *c = model_catalog_new();
    fx_service(c, "zk", "install,configure,start:one-by-one,stop:one-by-one", "", "", "", "");
    struct model_layout *l = same_nodes(3, "zk");
    enum planner_op ops[] = {PLANNER_OP_RESTART, PLANNER_OP_CONFIGURE_RESTART, PLANNER_OP_UPGRADE};
    for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
        struct planner_plan *p = fx_plan(c, ops[o], l, NULL, NULL);
        /* The edges themselves: node k's stop waits for node k-1's start. */
        assert_true(fx_direct(p, "n2/zk/stop", "n1/zk/start"));
        assert_true(fx_direct(p, "n3/zk/stop", "n2/zk/start"));
        assert_false(fx_waits(p, "n1/zk/stop", "n2/zk/start"));
        assert_false(fx_waits(p, "n1/zk/stop", "n3/zk/start"));
        /* Run it: it finishes, within every limit (fx_run checks them). */
        for (unsigned seed = 1; seed <= 5; seed++) {
            enum planner_task_state *st = fx_run(p, seed, NULL, 0);
            for (size_t i = 0; i < p->n_tasks; i++)
                assert_int_equal(st[i], PLANNER_TS_SUCCESS);
            free(st);
        }
        fx_check_stages(p);
        fx_check_roundtrip(p);
        planner_plan_free(p);
    }
    model_layout_free(l);
    model_catalog_free(c);
}

/* Only the stop is one-by-one (the start unconstrained): still rolls. A parallel amount is
 * the window; a service without a strategy does not roll. */
static void test_window_from_strategy(void **state)
{
    (void)state;
    struct model_catalog *c = model_catalog_new();
    fx_service(c, "a", "start,stop:one-by-one", "", "", "", "");
    fx_service(c, "b", "start,stop:parallel=2", "", "", "", "");
    fx_service(c, "free", "start,stop", "", "", "", "");
    struct model_layout *l = same_nodes(4, "a,b,free");
    struct planner_plan *p = fx_plan(c, PLANNER_OP_RESTART, l, NULL, NULL);
    assert_true(fx_direct(p, "n2/a/stop", "n1/a/start"));
    assert_true(fx_direct(p, "n4/a/stop", "n3/a/start"));
    assert_false(fx_waits(p, "n2/b/stop", "n1/b/start"));
    assert_true(fx_direct(p, "n3/b/stop", "n1/b/start"));
    assert_true(fx_direct(p, "n4/b/stop", "n2/b/start"));
    assert_false(fx_waits(p, "n3/b/stop", "n2/b/start"));
    for (int i = 2; i <= 4; i++) {
        char stop[32], start[32];
        snprintf(stop, sizeof(stop), "n%d/free/stop", i);
        snprintf(start, sizeof(start), "n%d/free/start", i - 1);
        assert_false(fx_waits(p, stop, start));
    }
    planner_plan_free(p);
    model_layout_free(l);
    model_catalog_free(c);
}

/* max_down in the catalogue overrides the strategy's own window. */
static void test_max_down(void **state)
{
    (void)state;
    struct model_catalog *c = model_catalog_new();
    json_t *j = json_pack("{s:s, s:{s:{s:{s:s, s:{s:s, s:i}}, s:{s:s}}}}", "name", "kv",
                          "provisioner", "actions", "stop", "type", "shell", "strategy", "type",
                          "one-by-one", "max_down", 2, "start", "type", "shell");
    struct drv_err err = {0};
    assert_int_equal(model_catalog_put_json(c, MODEL_SERVICE, j, NULL, &err), 0);
    json_decref(j);
    struct model_layout *l = same_nodes(5, "kv");
    struct planner_plan *p = fx_plan(c, PLANNER_OP_RESTART, l, NULL, NULL);
    assert_false(fx_waits(p, "n2/kv/stop", "n1/kv/start"));
    assert_true(fx_direct(p, "n3/kv/stop", "n1/kv/start"));
    assert_true(fx_direct(p, "n5/kv/stop", "n3/kv/start"));
    planner_plan_free(p);
    /* Refused when not a positive integer, with the field named. */
    j = json_pack("{s:s, s:{s:{s:{s:s, s:{s:s, s:i}}}}}", "name", "bad", "provisioner", "actions",
                  "stop", "type", "shell", "strategy", "type", "one-by-one", "max_down", 0);
    assert_int_not_equal(model_catalog_put_json(c, MODEL_SERVICE, j, NULL, &err), 0);
    assert_non_null(strstr(err.msg, "max_down"));
    json_decref(j);
    model_layout_free(l);
    model_catalog_free(c);
}

/* A needs B at runtime, both rolling: B's restart needs every A stopped first, so A
 * cannot roll; the plan is still made (no loop), B rolls. */
static void test_roll_never_makes_a_loop(void **state)
{
    (void)state;
    struct model_catalog *c = model_catalog_new();
    fx_service(c, "b", "start:one-by-one,stop:one-by-one", "", "", "", "");
    fx_service(c, "a", "start:one-by-one,stop:one-by-one", "", "b", "", "");
    struct model_layout *l = same_nodes(3, "a,b");
    struct planner_plan *p = fx_plan(c, PLANNER_OP_RESTART, l, NULL, NULL);
    assert_true(fx_direct(p, "n2/b/stop", "n1/b/start") || fx_waits(p, "n2/b/stop", "n1/b/start"));
    fx_check_stages(p);
    enum planner_task_state *st = fx_run(p, 3, NULL, 0);
    for (size_t i = 0; i < p->n_tasks; i++)
        assert_int_equal(st[i], PLANNER_TS_SUCCESS);
    free(st);
    planner_plan_free(p);
    model_layout_free(l);
    model_catalog_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_by_one_restart_finishes_node_before_next_stops),
        cmocka_unit_test(test_window_from_strategy),
        cmocka_unit_test(test_max_down),
        cmocka_unit_test(test_roll_never_makes_a_loop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
