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
#include <stdlib.h>
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

/* ---- dependents of a layout change ---- */

/* lb (a balancer whose config reads web's nodes) and web, from JSON as a catalogue has them. */
static struct model_catalog *lb_catalog(void)
{
    struct model_catalog *c = model_catalog_new();
    fx_service(c, "web", "install,configure,start,stop,remove", "", "", "", "");
    json_t *j = json_pack(
        "{s:s, s:{s:{s:[s]}}, s:{s:[s], s:b}, s:{s:{s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}}}}", "name",
        "lb", "dependencies", "runtime", "uses", "web", "reconfigure", "config", "lb", "restart", 1,
        "provisioner", "actions", "install", "type", "shell", "configure", "type", "shell", "start",
        "type", "shell", "stop", "type", "shell");
    struct drv_err err = {0};
    if (model_catalog_put_json(c, MODEL_SERVICE, j, NULL, &err) != 0)
        fail_msg("lb: %s", err.msg);
    json_decref(j);
    return c;
}

static struct planner_plan *plan_reconf(const struct model_catalog *c, enum planner_op op,
                                        const struct model_layout *start,
                                        const struct model_layout *target, const json_t *reconf)
{
    struct planner_input *in = NULL;
    struct drv_err err = {0};
    assert_int_equal(planner_input_from_model(c, NULL, start, target, &in, &err), 0);
    struct planner_request req = planner_input_request(in, op, NULL, 0);
    struct planner_reconf *rf = NULL;
    req.n_reconf = planner_reconf_from_json(reconf, &rf);
    req.reconf = rf;
    struct planner_plan *p = NULL;
    if (planner_build(&req, &p, &err) != 0)
        fail_msg("build: %s", err.msg);
    planner_reconf_free(rf, req.n_reconf);
    planner_input_free(in);
    return p;
}

static void test_reconf_from_config(void **state)
{
    (void)state;
    struct model_catalog *c = lb_catalog();
    json_t *svcs = json_pack("[s, s]", "web", "lb");
    json_t *config = json_pack("{s:{s:s, s:i}, s:{s:s}}", "lb", "backends",
                               "%join(map(ip.access_v4.service.web,'$'),' ')%", "port", 80, "other",
                               "x", "%host.service.lb%");
    json_t *r = planner_model_reconf(c, svcs, config);
    char *text = json_dumps(r, JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(text, "[{\"on\":[\"web\"],\"restart\":true,\"service\":\"lb\"}]");
    free(text);
    json_decref(r);
    /* No macro over web in lb's section: nothing depends; "service.webx" is another name. */
    json_object_set_new(json_object_get(config, "lb"), "backends",
                        json_string("%join(map(ip.access_v4.service.webx,'$'),' ')%"));
    r = planner_model_reconf(c, svcs, config);
    assert_int_equal(json_array_size(r), 0);
    json_decref(r);
    json_decref(config);
    json_decref(svcs);
    model_catalog_free(c);
}

static void test_expand_shrink_reconfigure_dependents(void **state)
{
    (void)state;
    struct model_catalog *c = lb_catalog();
    json_t *reconf = json_pack("[{s:s, s:[s], s:b}]", "service", "lb", "on", "web", "restart", 1);
    struct model_layout *three = model_layout_new(), *four = model_layout_new();
    fx_node(three, "n1", "lb");
    fx_node(four, "n1", "lb");
    for (int i = 2; i <= 4; i++) {
        char id[8];
        snprintf(id, sizeof(id), "n%d", i);
        if (i < 4)
            fx_node(three, id, "web");
        fx_node(four, id, "web");
    }
    /* Expand: lb is configured again, after the new web node started, then restarted. */
    struct planner_plan *p = plan_reconf(c, PLANNER_OP_EXPAND, three, four, reconf);
    assert_true(fx_direct(p, "n1/lb/configure", "n4/web/start"));
    assert_true(fx_direct(p, "n1/lb/stop", "n1/lb/configure"));
    assert_true(fx_direct(p, "n1/lb/start", "n1/lb/stop"));
    assert_false(fx_has(p, "n2/web/configure"));
    assert_false(fx_has(p, "n1/lb/install"));
    fx_check_stages(p);
    fx_check_roundtrip(p);
    planner_plan_free(p);
    /* Shrink: lb is configured and restarted before the leaving web node stops. */
    p = plan_reconf(c, PLANNER_OP_SHRINK, four, three, reconf);
    assert_true(fx_has(p, "n1/lb/configure"));
    assert_true(fx_waits(p, "n4/web/stop", "n1/lb/start") ||
                fx_waits(p, "n4/web/stop", "n1/lb/stop"));
    assert_true(fx_has(p, "n4/delete"));
    enum planner_task_state *st = fx_run(p, 7, NULL, 0);
    free(st);
    planner_plan_free(p);
    /* Without the dependents (or for an operation that keeps the layout): nothing for lb. */
    p = fx_plan(c, PLANNER_OP_EXPAND, three, four, NULL);
    assert_false(fx_has(p, "n1/lb/configure"));
    planner_plan_free(p);
    p = plan_reconf(c, PLANNER_OP_RESTART, four, NULL, reconf);
    assert_int_equal(fx_count(p, PLANNER_ACT_CONFIGURE), 0);
    planner_plan_free(p);
    /* restart false: configured only. */
    json_object_set_new(json_array_get(reconf, 0), "restart", json_false());
    p = plan_reconf(c, PLANNER_OP_EXPAND, three, four, reconf);
    assert_true(fx_has(p, "n1/lb/configure"));
    assert_false(fx_has(p, "n1/lb/stop"));
    planner_plan_free(p);
    json_decref(reconf);
    model_layout_free(three);
    model_layout_free(four);
    model_catalog_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_by_one_restart_finishes_node_before_next_stops),
        cmocka_unit_test(test_window_from_strategy),
        cmocka_unit_test(test_max_down),
        cmocka_unit_test(test_roll_never_makes_a_loop),
        cmocka_unit_test(test_reconf_from_config),
        cmocka_unit_test(test_expand_shrink_reconfigure_dependents),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
