/*
 * Unit tests for src/planner: operations to task DAGs, dependencies, anchors,
 * stages, loops, rollback, export, and the whole Coopr catalogue.
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

/* ---- fixtures ---- */

/* The seeds' example: s3 depends on s1 and s2; node 1 has s1 and s3, nodes 2-5 s2. */
static struct model_catalog *seeds_catalog(void)
{
    struct model_catalog *c = model_catalog_new();
    fx_service(c, "s1", FX_ALL, "", "", "", "");
    fx_service(c, "s2", FX_ALL, "", "", "", "");
    fx_service(c, "s3", FX_ALL, "", "s1,s2", "", "");
    return c;
}

static struct model_layout *seeds_layout(void)
{
    struct model_layout *l = model_layout_new();
    fx_node(l, "n1", "s1,s3");
    for (int i = 2; i <= 5; i++) {
        char id[8];
        snprintf(id, sizeof(id), "n%d", i);
        fx_node(l, id, "s2");
    }
    return l;
}

/* planner_task_to_json gives, byte for byte, each task's element of planner_plan_to_json. */
static void check_task_json(const struct planner_plan *p)
{
    json_t *all = planner_plan_to_json(p);
    json_t *tasks = json_object_get(all, "tasks");
    assert_int_equal(json_array_size(tasks), p->n_tasks);
    for (size_t i = 0; i < p->n_tasks; i++) {
        json_t *one = planner_task_to_json(p, &p->tasks[i]);
        char *a = json_dumps(one, JSON_COMPACT);
        char *b = json_dumps(json_array_get(tasks, i), JSON_COMPACT);
        assert_string_equal(a, b);
        free(a);
        free(b);
        json_decref(one);
    }
    json_decref(all);
}

/* ---- create ---- */

static void test_create_seeds_example(void **state)
{
    struct model_catalog *c = seeds_catalog();
    struct model_layout *l = seeds_layout();
    struct planner_plan *p = fx_plan(c, PLANNER_OP_CREATE, NULL, l, NULL);

    /* Per node: create > confirm > bootstrap > install > configure > initialize > start. */
    assert_true(fx_direct(p, "n1/confirm", "n1/create"));
    assert_true(fx_direct(p, "n1/bootstrap", "n1/confirm"));
    assert_true(fx_direct(p, "n1/s3/install", "n1/bootstrap"));
    assert_true(fx_direct(p, "n1/s3/configure", "n1/s3/install"));
    assert_true(fx_direct(p, "n1/s3/initialize", "n1/s3/configure"));
    assert_true(fx_direct(p, "n1/s3/start", "n1/s3/initialize"));
    /* Initialize s3 waits for the start of s1 and of s2 on every node. */
    assert_true(fx_waits(p, "n1/s3/initialize", "n1/s1/start"));
    for (int i = 2; i <= 5; i++) {
        char id[32];
        snprintf(id, sizeof(id), "n%d/s2/start", i);
        assert_true(fx_waits(p, "n1/s3/initialize", id));
    }
    /* ... through one anchor for s2 (on four nodes), directly for s1 (on one). */
    assert_true(fx_direct(p, "n1/s3/initialize", "*/s2/start"));
    assert_true(fx_direct(p, "n1/s3/initialize", "n1/s1/start"));
    assert_int_equal(fx_task(p, "*/s2/start")->n_deps, 4);
    /* No dependency for install and configure beyond the node's own chain. */
    assert_int_equal(fx_task(p, "n1/s3/install")->n_deps, 1);
    assert_int_equal(fx_task(p, "n1/s3/configure")->n_deps, 1);
    /* Start s3 waits only for its initialize: the rest is implied. */
    assert_int_equal(fx_task(p, "n1/s3/start")->n_deps, 1);
    /* s1 and s2 start without waiting for anyone else. */
    assert_false(fx_waits(p, "n2/s2/start", "n1/s1/start"));
    /* Counts: 5 nodes * 3 node tasks, s1 and s3 4 actions each, s2 4 on 4 nodes. */
    assert_int_equal(fx_count(p, PLANNER_ACT_CREATE), 5);
    assert_int_equal(fx_count(p, PLANNER_ACT_INSTALL), 6);
    assert_int_equal(fx_count(p, PLANNER_ACT_STOP), 0);
    /* The task carries the plugin and its fields. */
    const struct planner_task *t = fx_task(p, "n1/s3/install");
    assert_string_equal(t->type, "chef-solo");
    assert_string_equal(json_string_value(json_object_get(t->fields, "run_list")),
                        "recipe[s3::install]");
    t = fx_task(p, "n2/create");
    assert_string_equal(t->type, "rackspace");
    assert_string_equal(json_string_value(json_object_get(t->fields, "hardwaretype")),
                        "standard-large");
    fx_check_stages(p);
    fx_check_roundtrip(p);
    planner_plan_free(p);
    model_layout_free(l);
    model_catalog_free(c);
}

static void test_install_requires_order_installs(void **state)
{
    struct model_catalog *c = model_catalog_new();
    fx_service(c, "base", "install,configure", "", "", "", "");
    fx_service(c, "zk", FX_ALL, "base", "", "", "");
    fx_service(c, "hb", FX_ALL, "base,zk", "zk", "", "");
    struct model_layout *l = model_layout_new();
    fx_node(l, "a", "base,zk");
    fx_node(l, "b", "base,hb");
    struct planner_plan *p = fx_plan(c, PLANNER_OP_CREATE, NULL, l, NULL);
    /* Local when the required service is on the node, every node when it is not. */
    assert_true(fx_direct(p, "a/zk/install", "a/base/install"));
    assert_true(fx_direct(p, "b/hb/install", "b/base/install"));
    assert_true(fx_direct(p, "b/hb/install", "a/zk/install"));
    /* base has no start: hb's initialize waits for zk's start. */
    assert_true(fx_direct(p, "b/hb/initialize", "a/zk/start"));
    fx_check_stages(p);
    planner_plan_free(p);
    model_layout_free(l);
    model_catalog_free(c);
}

static void test_pass_through_service_without_action(void **state)
{
    struct model_catalog *c = model_catalog_new();
    fx_service(c, "a", FX_ALL, "", "b", "", "");
    fx_service(c, "b", "install,configure", "", "c", "", ""); /* no start */
    fx_service(c, "c", FX_ALL, "", "", "", "");
    struct model_layout *l = model_layout_new();
    fx_node(l, "n1", "a");
    fx_node(l, "n2", "b");
    fx_node(l, "n3", "c");
    struct planner_plan *p = fx_plan(c, PLANNER_OP_CREATE, NULL, l, NULL);
    assert_false(fx_has(p, "n2/b/start"));
    assert_false(fx_has(p, "n2/b/initialize"));
    assert_true(fx_direct(p, "n1/a/initialize", "n3/c/start"));
    /* Stop passes through too, reversed. */
    planner_plan_free(p);
    p = fx_plan(c, PLANNER_OP_STOP, l, NULL, NULL);
    assert_true(fx_direct(p, "n3/c/stop", "n1/a/stop"));
    planner_plan_free(p);
    model_layout_free(l);
    model_catalog_free(c);
}

static void test_dependencies_reduced_to_direct(void **state)
{
    struct model_catalog *c = model_catalog_new();
    fx_service(c, "a", FX_ALL, "", "b,c", "", "");
    fx_service(c, "b", FX_ALL, "", "c", "", "");
    fx_service(c, "c", FX_ALL, "", "", "", "");
    struct model_layout *l = model_layout_new();
    fx_node(l, "n1", "a");
    fx_node(l, "n2", "b");
    fx_node(l, "n3", "c");
    struct planner_plan *p = fx_plan(c, PLANNER_OP_CREATE, NULL, l, NULL);
    assert_true(fx_direct(p, "n1/a/initialize", "n2/b/start"));
    assert_false(fx_direct(p, "n1/a/initialize", "n3/c/start")); /* implied through b */
    assert_true(fx_waits(p, "n1/a/initialize", "n3/c/start"));
    planner_plan_free(p);
    model_layout_free(l);
    model_catalog_free(c);
}

static void test_provides_and_uses(void **state)
{
    struct model_catalog *c = model_catalog_new();
    fx_service(c, "x", FX_ALL, "", "", "client,absent", "");
    fx_service(c, "y", FX_ALL, "", "", "", "client");
    fx_service(c, "z", FX_ALL, "", "", "", "client");
    struct model_layout *l = model_layout_new();
    fx_node(l, "n1", "x");
    fx_node(l, "n2", "y,z");
    struct planner_plan *p = fx_plan(c, PLANNER_OP_CREATE, NULL, l, NULL);
    /* "client" resolves to y and z; "absent" is not on the cluster: ignored. */
    assert_true(fx_direct(p, "n1/x/initialize", "n2/y/start"));
    assert_true(fx_direct(p, "n1/x/initialize", "n2/z/start"));
    planner_plan_free(p);
    model_layout_free(l);
    model_catalog_free(c);
}

/* ---- start, stop, restart ---- */

static void test_stop_order_reversed(void **state)
{
    struct model_catalog *c = seeds_catalog();
    struct model_layout *l = seeds_layout();
    struct planner_plan *p = fx_plan(c, PLANNER_OP_STOP, l, NULL, NULL);
    assert_int_equal(fx_count(p, PLANNER_ACT_STOP), 6);
    assert_int_equal(fx_count(p, PLANNER_ACT_START), 0);
    assert_true(fx_waits(p, "n1/s1/stop", "n1/s3/stop"));
    for (int i = 2; i <= 5; i++) {
        char id[32];
        snprintf(id, sizeof(id), "n%d/s2/stop", i);
        assert_true(fx_waits(p, id, "n1/s3/stop"));
    }
    assert_false(fx_waits(p, "n1/s3/stop", "n1/s1/stop"));
    fx_check_stages(p);
    planner_plan_free(p);
    model_layout_free(l);
    model_catalog_free(c);
}

static void test_start_subset_pulls_in_requires(void **state)
{
    struct model_catalog *c = seeds_catalog();
    struct model_layout *l = seeds_layout();
    struct planner_plan *p = fx_plan(c, PLANNER_OP_START, l, NULL, "s3");
    assert_true(fx_has(p, "n1/s3/start"));
    assert_true(fx_has(p, "n1/s1/start"));
    assert_true(fx_has(p, "n4/s2/start"));
    assert_true(fx_waits(p, "n1/s3/start", "n4/s2/start"));
    assert_int_equal(fx_count(p, PLANNER_ACT_INITIALIZE), 0);
    planner_plan_free(p);
    /* Starting s1 alone starts nothing else. */
    p = fx_plan(c, PLANNER_OP_START, l, NULL, "s1");
    assert_int_equal(fx_count(p, PLANNER_ACT_START), 1);
    planner_plan_free(p);
    model_layout_free(l);
    model_catalog_free(c);
}

static void test_stop_subset_pulls_in_dependents(void **state)
{
    struct model_catalog *c = seeds_catalog();
    struct model_layout *l = seeds_layout();
    struct planner_plan *p = fx_plan(c, PLANNER_OP_STOP, l, NULL, "s1");
    assert_true(fx_has(p, "n1/s1/stop"));
    assert_true(fx_has(p, "n1/s3/stop")); /* s3 requires s1 */
    assert_false(fx_has(p, "n2/s2/stop"));
    assert_true(fx_direct(p, "n1/s1/stop", "n1/s3/stop"));
    planner_plan_free(p);
    /* Stopping s3 stops only s3. */
    p = fx_plan(c, PLANNER_OP_STOP, l, NULL, "s3");
    assert_int_equal(fx_count(p, PLANNER_ACT_STOP), 1);
    planner_plan_free(p);
    /* Unknown service in the subset. */
    struct drv_err err = {0};
    assert_int_equal(fx_plan_err(c, PLANNER_OP_STOP, l, NULL, "nope", &p, &err), DRV_EINVAL);
    assert_non_null(strstr(err.msg, "\"nope\""));
    model_layout_free(l);
    model_catalog_free(c);
}

static void test_restart_and_configure(void **state)
{
    struct model_catalog *c = seeds_catalog();
    struct model_layout *l = seeds_layout();
    struct planner_plan *p = fx_plan(c, PLANNER_OP_RESTART, l, NULL, "s1");
    /* s1 and its dependent s3 are stopped (s3 first) and started (s1 first). */
    assert_true(fx_waits(p, "n1/s1/stop", "n1/s3/stop"));
    assert_true(fx_waits(p, "n1/s3/start", "n1/s1/start"));
    assert_true(fx_direct(p, "n1/s1/start", "n1/s1/stop"));
    assert_false(fx_has(p, "n2/s2/stop"));
    fx_check_stages(p);
    planner_plan_free(p);

    /* Configure: only bootstrap and configure. */
    p = fx_plan(c, PLANNER_OP_CONFIGURE, l, NULL, NULL);
    for (size_t i = 0; i < p->n_tasks; i++) {
        enum planner_action a = p->tasks[i].action;
        assert_true(a == PLANNER_ACT_BOOTSTRAP || a == PLANNER_ACT_CONFIGURE);
    }
    assert_int_equal(fx_count(p, PLANNER_ACT_BOOTSTRAP), 5);
    assert_int_equal(fx_count(p, PLANNER_ACT_CONFIGURE), 6);
    assert_true(fx_direct(p, "n1/s3/configure", "n1/bootstrap"));
    planner_plan_free(p);

    /* Configure with restart: configure, then stop and start in order. */
    p = fx_plan(c, PLANNER_OP_CONFIGURE_RESTART, l, NULL, "s1");
    assert_true(fx_direct(p, "n1/s1/stop", "n1/s1/configure"));
    assert_true(fx_waits(p, "n1/s1/stop", "n1/s3/stop"));
    assert_true(fx_waits(p, "n1/s3/start", "n1/s1/start"));
    assert_false(fx_has(p, "n1/s3/configure"));
    planner_plan_free(p);
    model_layout_free(l);
    model_catalog_free(c);
}

static void test_upgrade(void **state)
{
    struct model_catalog *c = seeds_catalog();
    struct model_layout *l = seeds_layout();
    struct planner_plan *p = fx_plan(c, PLANNER_OP_UPGRADE, l, NULL, NULL);
    assert_true(fx_direct(p, "n1/s3/install", "n1/s3/stop"));
    assert_true(fx_direct(p, "n1/s3/configure", "n1/s3/install"));
    assert_true(fx_direct(p, "n1/s3/start", "n1/s3/configure"));
    assert_true(fx_waits(p, "n1/s1/stop", "n1/s3/stop")); /* stop: reverse order */
    assert_true(fx_waits(p, "n1/s3/start", "n3/s2/start"));
    assert_int_equal(fx_count(p, PLANNER_ACT_INITIALIZE), 0);
    fx_check_stages(p);
    planner_plan_free(p);
    model_layout_free(l);
    model_catalog_free(c);
}

/* ---- layout changes ---- */

static void test_add_services_does_not_reinstall(void **state)
{
    struct model_catalog *c = seeds_catalog();
    struct model_layout *s = model_layout_new(), *t = model_layout_new();
    fx_node(s, "n1", "s1");
    fx_node(s, "n2", "s2");
    fx_node(t, "n1", "s1,s3");
    fx_node(t, "n2", "s2");
    struct planner_plan *p = fx_plan(c, PLANNER_OP_ADD_SERVICES, s, t, NULL);
    assert_false(fx_has(p, "n1/s1/install"));
    assert_false(fx_has(p, "n1/create"));
    assert_false(fx_has(p, "n2/bootstrap")); /* nothing to do on n2 */
    assert_true(fx_has(p, "n1/s3/install"));
    assert_true(fx_direct(p, "n1/s3/install", "n1/bootstrap"));
    /* s1 and s2 already run: s3 waits for nobody's start. */
    assert_int_equal(fx_count(p, PLANNER_ACT_START), 1);
    assert_int_equal(fx_task(p, "n1/s3/initialize")->n_deps, 1);
    assert_int_equal(p->n_tasks, 5);
    planner_plan_free(p);
    model_layout_free(s);
    model_layout_free(t);
    model_catalog_free(c);
}

static void test_expand_shrink_remove(void **state)
{
    struct model_catalog *c = seeds_catalog();
    struct model_layout *s = seeds_layout(), *t = seeds_layout();
    fx_node(t, "n6", "s2");
    struct planner_plan *p = fx_plan(c, PLANNER_OP_EXPAND, s, t, NULL);
    for (size_t i = 0; i < p->n_tasks; i++)
        assert_string_equal(p->tasks[i].node, "n6");
    assert_int_equal(p->n_tasks, 3 + 4);
    planner_plan_free(p);

    /* Shrink back: n6 stops its services, then is deleted. */
    p = fx_plan(c, PLANNER_OP_SHRINK, t, s, NULL);
    assert_int_equal(p->n_tasks, 2);
    assert_true(fx_direct(p, "n6/delete", "n6/s2/stop"));
    planner_plan_free(p);

    /* Remove s3 from n1: stop, then remove when the service has a remove action. */
    struct model_layout *r = model_layout_new();
    fx_node(r, "n1", "s1");
    for (int i = 2; i <= 5; i++) {
        char id[8];
        snprintf(id, sizeof(id), "n%d", i);
        fx_node(r, id, "s2");
    }
    fx_service(c, "s3", "install,configure,initialize,start,stop,remove", "", "s1,s2", "", "");
    p = fx_plan(c, PLANNER_OP_REMOVE_SERVICES, s, r, NULL);
    assert_int_equal(p->n_tasks, 2);
    assert_true(fx_direct(p, "n1/s3/remove", "n1/s3/stop"));
    planner_plan_free(p);
    model_layout_free(r);
    model_layout_free(s);
    model_layout_free(t);
    model_catalog_free(c);
}

static void test_delete_one_per_node(void **state)
{
    struct model_catalog *c = seeds_catalog();
    struct model_layout *l = seeds_layout();
    struct planner_plan *p = fx_plan(c, PLANNER_OP_DELETE, l, NULL, NULL);
    assert_int_equal(p->n_tasks, 5);
    assert_int_equal(fx_count(p, PLANNER_ACT_DELETE), 5);
    for (size_t i = 0; i < p->n_tasks; i++)
        assert_int_equal(p->tasks[i].n_deps, 0);
    assert_true(fx_has(p, "n3/delete"));
    planner_plan_free(p);
    model_layout_free(l);
    model_catalog_free(c);
}

/* ---- structure ---- */

static void test_loop_reported_with_path(void **state)
{
    struct model_catalog *c = model_catalog_new();
    fx_service(c, "a", FX_ALL, "", "b", "", "");
    fx_service(c, "b", FX_ALL, "", "a", "", "");
    struct model_layout *l = model_layout_new();
    fx_node(l, "n1", "a,b");
    struct planner_plan *p = NULL;
    struct drv_err err = {0};
    assert_int_equal(fx_plan_err(c, PLANNER_OP_CREATE, NULL, l, NULL, &p, &err), DRV_ECYCLE);
    assert_null(p);
    assert_non_null(strstr(err.msg, "dependency loop: "));
    assert_non_null(strstr(err.msg, "n1/a/"));
    assert_non_null(strstr(err.msg, "n1/b/"));
    /* The path closes on its first task. */
    const char *first = err.msg + strlen("dependency loop: ");
    const char *arrow = strstr(first, " -> ");
    assert_non_null(arrow);
    size_t len = (size_t)(arrow - first);
    const char *last = strrchr(err.msg, ' ') + 1;
    assert_int_equal(strlen(last), len);
    assert_memory_equal(first, last, len);
    model_layout_free(l);
    model_catalog_free(c);
}

static void test_stages_split_per_node(void **state)
{
    struct model_catalog *c = seeds_catalog();
    struct model_layout *l = seeds_layout();
    struct planner_plan *p = fx_plan(c, PLANNER_OP_CREATE, NULL, l, NULL);
    struct planner_stages *st = NULL;
    struct drv_err err = {0};
    assert_int_equal(planner_stages(p, &st, &err), 0);
    /* Stage 1 all creates; installs of s1 and s3 on n1 are split. */
    assert_int_equal(st->start[1] - st->start[0], 5);
    json_t *j = planner_stages_to_json(p, st);
    assert_string_equal(json_string_value(json_array_get(json_array_get(j, 0), 0)), "n1/create");
    char *text = planner_stages_to_text(p, st);
    assert_non_null(strstr(text, "stage 1 (5 tasks)"));
    free(text);
    json_decref(j);
    planner_stages_free(st);
    fx_check_stages(p);
    planner_plan_free(p);
    model_layout_free(l);
    model_catalog_free(c);
}

static void test_strategy_and_determinism(void **state)
{
    struct model_catalog *c = model_catalog_new();
    fx_service(c, "db", "install,configure,start:one-by-one,stop", "", "", "", "");
    fx_service(c, "web", "install,configure,start:parallel=3,stop", "", "db", "", "");
    struct model_layout *l = model_layout_new();
    for (int i = 1; i <= 4; i++) {
        char id[8];
        snprintf(id, sizeof(id), "n%d", i);
        fx_node(l, id, "db,web");
    }
    struct planner_plan *p = fx_plan(c, PLANNER_OP_CREATE, NULL, l, NULL);
    assert_int_equal(fx_task(p, "n2/db/start")->strategy.type, PLANNER_STRAT_ONE_BY_ONE);
    assert_int_equal(fx_task(p, "n2/web/start")->strategy.type, PLANNER_STRAT_PARALLEL);
    assert_int_equal(fx_task(p, "n2/web/start")->strategy.amount, 3);
    assert_int_equal(fx_task(p, "n2/web/install")->strategy.amount, 0);
    struct planner_plan *q = fx_plan(c, PLANNER_OP_CREATE, NULL, l, NULL);
    json_t *a = planner_plan_to_json(p), *b = planner_plan_to_json(q);
    char *sa = json_dumps(a, JSON_COMPACT), *sb = json_dumps(b, JSON_COMPACT);
    assert_string_equal(sa, sb);
    assert_non_null(strstr(sa, "\"strategy\":{\"type\":\"one-by-one\"}"));
    assert_non_null(strstr(sa, "\"format_version\":1"));
    free(sa);
    free(sb);
    json_decref(a);
    json_decref(b);
    check_task_json(p);
    json_t *t = planner_task_to_json(p, fx_task(p, "n2/web/start"));
    char *st = json_dumps(t, JSON_COMPACT);
    assert_non_null(strstr(st, "{\"id\":\"n2/web/start\",\"node\":\"n2\",\"service\":\"web\","
                               "\"action\":\"start\","));
    assert_non_null(strstr(st, "\"strategy\":{\"type\":\"parallel\",\"amount\":3},\"deps\":["));
    assert_null(strstr(st, "inverse_of"));
    free(st);
    json_decref(t);
    fx_check_roundtrip(p);
    planner_plan_free(p);
    planner_plan_free(q);
    model_layout_free(l);
    model_catalog_free(c);
}

static void test_cross_node_edges_linear(void **state)
{
    struct model_catalog *c = seeds_catalog();
    struct model_layout *l = model_layout_new();
    const int n = 300;
    for (int i = 0; i < n; i++) {
        char id[16];
        snprintf(id, sizeof(id), "a%d", i);
        fx_node(l, id, "s1,s2");
        snprintf(id, sizeof(id), "b%d", i);
        fx_node(l, id, "s3");
    }
    struct planner_plan *p = fx_plan(c, PLANNER_OP_CREATE, NULL, l, NULL);
    /* N*M would be 2 * 300 * 300 edges; anchors keep it near the task count. */
    assert_true(fx_edges(p) < 3 * p->n_tasks);
    assert_true(fx_waits(p, "b7/s3/initialize", "a299/s2/start"));
    planner_plan_free(p);
    model_layout_free(l);
    model_catalog_free(c);
}

static void test_json_errors_and_dot(void **state)
{
    struct drv_err err = {0};
    struct planner_plan *p = NULL;
    json_t *j = json_loads("{\"format_version\":1,\"operation\":\"start\",\"tasks\":["
                           "{\"id\":\"a\",\"node\":\"n\",\"action\":\"start\",\"type\":\"t\","
                           "\"deps\":[\"b\"]},"
                           "{\"id\":\"b\",\"node\":\"n\",\"action\":\"start\",\"type\":\"t\","
                           "\"deps\":[\"a\"]}]}",
                           0, NULL);
    assert_int_equal(planner_plan_from_json(j, &p, &err), DRV_ECYCLE);
    assert_non_null(strstr(err.msg, "a -> b -> a") ? strstr(err.msg, "a -> b -> a")
                                                   : strstr(err.msg, "b -> a -> b"));
    json_decref(j);
    j = json_loads("{\"format_version\":1,\"operation\":\"start\",\"tasks\":["
                   "{\"id\":\"a\",\"node\":\"n\",\"action\":\"start\",\"type\":\"t\","
                   "\"deps\":[\"zz\"]}]}",
                   0, NULL);
    assert_int_equal(planner_plan_from_json(j, &p, &err), DRV_EINVAL);
    assert_non_null(strstr(err.msg, "\"zz\""));
    json_decref(j);
    /* Odd characters survive both writers alike. */
    j = json_loads("{\"format_version\":1,\"operation\":\"rollback\",\"rollback_of\":\"start\","
                   "\"tasks\":[{\"id\":\"a\\\"b\\n\\u00e9\\u001f/\",\"node\":\"n\\t\","
                   "\"action\":\"stop\",\"type\":\"t\",\"fields\":{\"k\":\"\\\\\"},"
                   "\"strategy\":{\"type\":\"parallel\",\"amount\":2},\"deps\":[],"
                   "\"inverse_of\":\"x\",\"restore\":\"previous-config\"}]}",
                   0, NULL);
    assert_non_null(j);
    assert_int_equal(planner_plan_from_json(j, &p, &err), 0);
    assert_int_equal(p->rollback_of, PLANNER_OP_START);
    fx_check_roundtrip(p);
    planner_plan_free(p);
    json_decref(j);
    j = json_loads("{\"format_version\":99,\"operation\":\"start\",\"tasks\":[]}", 0, NULL);
    assert_int_equal(planner_plan_from_json(j, &p, &err), DRV_EINVAL);
    json_decref(j);

    struct model_catalog *c = seeds_catalog();
    struct model_layout *l = seeds_layout();
    p = fx_plan(c, PLANNER_OP_CREATE, NULL, l, NULL);
    enum planner_task_state *states = xcalloc(p->n_tasks, sizeof(*states));
    states[0] = PLANNER_TS_SUCCESS;
    states[1] = PLANNER_TS_ERROR;
    char *dot = planner_plan_to_dot(p, states);
    assert_non_null(strstr(dot, "digraph plan {"));
    assert_non_null(strstr(dot, "\"n1/create\" -> \"n1/confirm\";"));
    assert_non_null(strstr(dot, "fillcolor=palegreen"));
    assert_non_null(strstr(dot, "fillcolor=tomato"));
    assert_non_null(strstr(dot, "shape=diamond"));
    free(dot);
    dot = planner_plan_to_dot(p, NULL);
    assert_null(strstr(dot, "palegreen"));
    free(dot);
    free(states);
    planner_plan_free(p);
    model_layout_free(l);
    model_catalog_free(c);
}

/* ---- rollback ---- */

static int node_num(const char *id)
{
    return atoi(id + 1);
}

static void test_rollback_half_created(void **state)
{
    struct model_catalog *c = model_catalog_new();
    fx_service(c, "base", "install,configure", "", "", "", "");
    fx_service(c, "s1", FX_ALL, "base", "", "", "");
    fx_service(c, "s2", FX_ALL, "base", "", "", "");
    fx_service(c, "s3", FX_ALL, "base", "s1,s2", "", "");
    struct model_layout *l = model_layout_new();
    fx_node(l, "n1", "base,s1,s3");
    for (int i = 2; i <= 5; i++) {
        char id[8];
        snprintf(id, sizeof(id), "n%d", i);
        fx_node(l, id, "base,s2");
    }
    struct planner_plan *p = fx_plan(c, PLANNER_OP_CREATE, NULL, l, NULL);
    /* Half-way: nodes 1-3 created; base installed on 1-3, s1 on 1, s2 on 2;
     * s1 configured on 1; node 4's create failed, node 5's never ran. */
    enum planner_task_state *st = xcalloc(p->n_tasks, sizeof(*st));
    for (size_t i = 0; i < p->n_tasks; i++) {
        const struct planner_task *t = &p->tasks[i];
        if (t->node == NULL)
            continue;
        int n = node_num(t->node);
        int ok = 0;
        if (n <= 3 && t->service == NULL)
            ok = 1;
        else if (n <= 3 && t->action == PLANNER_ACT_INSTALL && strcmp(t->service, "base") == 0)
            ok = 1;
        else if (strcmp(t->id, "n1/s1/install") == 0 || strcmp(t->id, "n2/s2/install") == 0 ||
                 strcmp(t->id, "n1/s1/configure") == 0)
            ok = 1;
        st[i] = ok ? PLANNER_TS_SUCCESS : PLANNER_TS_WAITING;
    }
    st[planner_find(p, "n4/create")] = PLANNER_TS_ERROR;

    /* Services passed: remove runs each service's remove action if any. */
    struct planner_input *in = NULL;
    struct drv_err err = {0};
    assert_int_equal(planner_input_from_model(c, NULL, NULL, l, &in, &err), 0);
    struct planner_plan *rb = NULL;
    int rc = planner_rollback(p, st, in->services, in->n_services, &rb, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(rb->op, PLANNER_OP_ROLLBACK);
    assert_int_equal(rb->rollback_of, PLANNER_OP_CREATE);

    /* Exactly the nodes created are deleted, exactly what was installed removed. */
    assert_int_equal(fx_count(rb, PLANNER_ACT_DELETE), 3);
    assert_true(fx_has(rb, "n1/delete") && fx_has(rb, "n2/delete") && fx_has(rb, "n3/delete"));
    assert_int_equal(fx_count(rb, PLANNER_ACT_REMOVE), 5);
    const char *removed[] = {"n1/base/remove", "n2/base/remove", "n3/base/remove", "n1/s1/remove",
                             "n2/s2/remove"};
    for (size_t i = 0; i < 5; i++)
        assert_true(fx_has(rb, removed[i]));
    /* The configure gets the previous configuration back; nothing else. */
    assert_int_equal(fx_count(rb, PLANNER_ACT_CONFIGURE), 1);
    assert_string_equal(fx_task(rb, "n1/s1/configure")->restore, "previous-config");
    assert_string_equal(fx_task(rb, "n1/delete")->inverse_of, "n1/create");
    assert_int_equal(fx_count(rb, PLANNER_ACT_START) + fx_count(rb, PLANNER_ACT_STOP) +
                         fx_count(rb, PLANNER_ACT_CREATE) + fx_count(rb, PLANNER_ACT_INSTALL),
                     0);
    /* Reverse order: configure undone before remove, remove before the service it
     * needed, everything on a node before the node goes. */
    assert_true(fx_waits(rb, "n1/s1/remove", "n1/s1/configure"));
    assert_true(fx_waits(rb, "n1/base/remove", "n1/s1/remove"));
    assert_true(fx_waits(rb, "n1/delete", "n1/base/remove"));
    assert_true(fx_waits(rb, "n2/delete", "n2/s2/remove"));
    assert_false(fx_waits(rb, "n1/s1/remove", "n1/base/remove"));
    fx_check_stages(rb);
    fx_check_roundtrip(rb);
    check_task_json(rb);
    json_t *tj = planner_task_to_json(rb, fx_task(rb, "n1/s1/configure"));
    assert_string_equal(json_string_value(json_object_get(tj, "restore")), "previous-config");
    json_decref(tj);

    /* A rollback is not rolled back. */
    enum planner_task_state *st2 = xcalloc(rb->n_tasks, sizeof(*st2));
    struct planner_plan *rb2 = NULL;
    assert_int_equal(planner_rollback(rb, st2, NULL, 0, &rb2, &err), DRV_EPERM);
    assert_null(rb2);
    assert_non_null(strstr(err.msg, "operator"));
    free(st2);

    planner_plan_free(rb);
    planner_input_free(in);
    free(st);
    planner_plan_free(p);
    model_layout_free(l);
    model_catalog_free(c);
}

static void test_rollback_restart_has_nothing_to_undo(void **state)
{
    struct model_catalog *c = seeds_catalog();
    struct model_layout *l = seeds_layout();
    struct planner_plan *p = fx_plan(c, PLANNER_OP_RESTART, l, NULL, "s1");
    enum planner_task_state *st = xcalloc(p->n_tasks, sizeof(*st));
    for (size_t i = 0; i < p->n_tasks; i++)
        st[i] = PLANNER_TS_SUCCESS;
    st[planner_find(p, "n1/s3/start")] = PLANNER_TS_ERROR;
    struct planner_plan *rb = NULL;
    struct drv_err err = {0};
    assert_int_equal(planner_rollback(p, st, NULL, 0, &rb, &err), 0);
    /* s1 was stopped and started again: nothing. s3 was stopped: start it. */
    size_t real = 0;
    for (size_t i = 0; i < rb->n_tasks; i++)
        real += rb->tasks[i].action != PLANNER_ACT_ANCHOR;
    assert_int_equal(real, 1);
    assert_string_equal(fx_task(rb, "n1/s3/start")->inverse_of, "n1/s3/stop");
    planner_plan_free(rb);
    free(st);
    planner_plan_free(p);
    model_layout_free(l);
    model_catalog_free(c);
}

/* The input keeps nothing of the layouts it was built from: the engine frees them at once. */
static void test_input_outlives_layouts(void **state)
{
    struct model_catalog *c = seeds_catalog();
    fx_service(c, "base", "install,configure", "", "", "", "");
    struct model_layout *start = seeds_layout(), *target = seeds_layout();
    fx_node(target, "n6", "base,s2");
    struct planner_input *in = NULL;
    struct drv_err err = {0};
    assert_int_equal(planner_input_from_model(c, NULL, start, target, &in, &err), 0);
    size_t n_start = in->start.n_nodes;
    model_layout_free(start);
    model_layout_free(target);
    /* Freed layouts: ASan's use-after-free would fire on any pointer into them. */
    assert_int_equal(in->target.n_nodes, n_start + 1);
    const struct planner_node *n6 = &in->target.nodes[in->target.n_nodes - 1];
    assert_string_equal(n6->id, "n6");
    assert_int_equal(n6->n_services, 2);
    assert_string_equal(n6->services[0], "base");
    assert_string_equal(n6->services[1], "s2");
    for (size_t i = 0; i < in->start.n_nodes; i++)
        assert_string_equal(in->start.nodes[i].id, in->target.nodes[i].id);
    struct planner_request req = planner_input_request(in, PLANNER_OP_EXPAND, NULL, 0);
    struct planner_plan *p = NULL;
    assert_int_equal(planner_build(&req, &p, &err), 0);
    assert_true(fx_has(p, "n6/create"));
    planner_plan_free(p);
    planner_input_free(in);
    model_catalog_free(c);
    (void)state;
}

static void test_rollback_shrink_recreates_nodes(void **state)
{
    struct model_catalog *c = seeds_catalog();
    fx_service(c, "base", "install,configure", "", "", "", "");
    struct model_layout *big = seeds_layout(), *small = seeds_layout();
    fx_node(big, "n6", "base,s2");
    struct planner_plan *p = fx_plan(c, PLANNER_OP_SHRINK, big, small, NULL);
    enum planner_task_state *st = xcalloc(p->n_tasks, sizeof(*st));
    for (size_t i = 0; i < p->n_tasks; i++)
        st[i] = PLANNER_TS_SUCCESS;
    struct planner_input *in = NULL;
    struct drv_err err = {0};
    assert_int_equal(planner_input_from_model(c, NULL, big, NULL, &in, &err), 0);

    /* With the starting layout: n6 comes back whole. */
    struct planner_plan *rb = NULL;
    if (planner_rollback_layout(p, st, in->services, in->n_services, &in->start, &rb, &err))
        fail_msg("%s", err.msg);
    assert_string_equal(fx_task(rb, "n6/create")->inverse_of, "n6/delete");
    assert_string_equal(fx_task(rb, "n6/create")->type, "rackspace");
    assert_true(fx_has(rb, "n6/base/install"));
    assert_true(fx_waits(rb, "n6/s2/start", "n6/bootstrap"));
    assert_true(fx_direct(rb, "n6/s2/initialize", "n6/s2/configure"));
    assert_int_equal(fx_count(rb, PLANNER_ACT_CREATE), 1);
    assert_int_equal(fx_count(rb, PLANNER_ACT_START), 1);
    fx_check_stages(rb);
    fx_check_roundtrip(rb);
    planner_plan_free(rb);

    /* Without it: a bare create, and the stop undone. */
    assert_int_equal(planner_rollback(p, st, in->services, in->n_services, &rb, &err), 0);
    assert_true(fx_has(rb, "n6/create"));
    assert_false(fx_has(rb, "n6/s2/install"));
    assert_true(fx_waits(rb, "n6/s2/start", "n6/create"));
    planner_plan_free(rb);

    /* The delete failed: only the stop is undone. */
    st[planner_find(p, "n6/delete")] = PLANNER_TS_ERROR;
    assert_int_equal(
        planner_rollback_layout(p, st, in->services, in->n_services, &in->start, &rb, &err), 0);
    assert_int_equal(rb->n_tasks, 1);
    assert_string_equal(rb->tasks[0].id, "n6/s2/start");
    planner_plan_free(rb);
    planner_input_free(in);
    free(st);
    planner_plan_free(p);
    model_layout_free(big);
    model_layout_free(small);
    model_catalog_free(c);
}

/* ---- execution ---- */

/* Requeue (a withdrawn queue item) frees the task's slots and lets it run again;
 * why names the dependency, the busy node's task, or the strategy limit. */
static void test_exec_requeue_and_why(void **state)
{
    struct model_catalog *c = model_catalog_new();
    fx_service(c, "db", "install,configure,start:one-by-one,stop", "", "", "", "");
    struct model_layout *l = model_layout_new();
    fx_node(l, "n1", "db");
    fx_node(l, "n2", "db");
    struct planner_plan *p = fx_plan(c, PLANNER_OP_CREATE, NULL, l, NULL);
    struct planner_exec *x = NULL;
    struct drv_err err = {0};
    assert_int_equal(planner_exec_new(p, NULL, &x, &err), 0);
    uint32_t out[64], blocker;
    size_t n = planner_exec_next(x, out, 64);
    assert_int_equal(n, 2); /* the two creates */
    long install = planner_find(p, "n1/db/install");
    long create = planner_find(p, "n1/create");
    assert_int_equal(planner_exec_why(x, (uint32_t)install, &blocker), PLANNER_WHY_DEPENDENCY);
    assert_true(blocker < p->n_tasks);
    assert_int_equal(planner_exec_why(x, (uint32_t)create, &blocker), PLANNER_WHY_NONE);
    assert_int_equal(planner_exec_running(x), 2);
    assert_int_equal(planner_exec_requeue(x, (uint32_t)create, &err), 0);
    assert_int_equal(planner_exec_running(x), 1);
    assert_int_equal(planner_exec_requeue(x, (uint32_t)create, &err), DRV_EINVAL);
    n = planner_exec_next(x, out, 64);
    assert_int_equal(n, 1);
    assert_int_equal(out[0], (uint32_t)create);
    /* Run everything up to the starts: one-by-one holds the second start. */
    size_t guard = 0;
    long s1 = planner_find(p, "n1/db/start"), s2 = planner_find(p, "n2/db/start");
    for (;;) {
        bool progressed = false;
        for (size_t i = 0; i < p->n_tasks; i++) {
            const enum planner_task_state *st = planner_exec_states(x);
            if (st[i] == PLANNER_TS_IN_PROGRESS && (long)i != s1 && (long)i != s2) {
                assert_int_equal(planner_exec_done(x, (uint32_t)i, 1, &err), 0);
                progressed = true;
            }
        }
        n = planner_exec_next(x, out, 64);
        if (!progressed && n == 0)
            break;
        assert_true(++guard < 100);
    }
    const enum planner_task_state *st = planner_exec_states(x);
    long held = st[s1] == PLANNER_TS_IN_PROGRESS ? s2 : s1;
    assert_int_equal(st[held], PLANNER_TS_PENDING);
    assert_int_equal(planner_exec_why(x, (uint32_t)held, &blocker), PLANNER_WHY_STRATEGY);
    planner_exec_free(x);
    planner_plan_free(p);
    model_layout_free(l);
    model_catalog_free(c);
}

static void test_exec_runs_plan_within_limits(void **state)
{
    struct model_catalog *c = model_catalog_new();
    fx_service(c, "db", "install,configure,start:one-by-one,stop", "", "", "", "");
    fx_service(c, "web", "install,configure,start:parallel=2,stop", "", "db", "", "");
    struct model_layout *l = model_layout_new();
    for (int i = 1; i <= 6; i++) {
        char id[8];
        snprintf(id, sizeof(id), "n%d", i);
        fx_node(l, id, i <= 3 ? "db,web" : "web");
    }
    struct planner_plan *p = fx_plan(c, PLANNER_OP_CREATE, NULL, l, NULL);
    for (unsigned seed = 1; seed <= 5; seed++) {
        enum planner_task_state *st = fx_run(p, seed, NULL, seed * 3);
        for (size_t i = 0; i < p->n_tasks; i++)
            assert_int_equal(st[i], PLANNER_TS_SUCCESS);
        free(st);
    }
    /* A failure: what depends on it does not run, the rest finishes, and the
     * rollback plan undoes what succeeded. */
    enum planner_task_state *st = fx_run(p, 7, "n2/db/start", 0);
    assert_int_equal(st[planner_find(p, "n2/db/start")], PLANNER_TS_ERROR);
    assert_int_equal(st[planner_find(p, "*/db/start")], PLANNER_TS_FAILED_DEPS);
    assert_int_equal(st[planner_find(p, "n5/web/start")], PLANNER_TS_FAILED_DEPS);
    assert_int_equal(st[planner_find(p, "n5/web/configure")], PLANNER_TS_SUCCESS);
    assert_int_equal(st[planner_find(p, "n1/db/start")], PLANNER_TS_SUCCESS);
    struct planner_plan *rb = NULL;
    struct drv_err err = {0};
    assert_int_equal(planner_rollback(p, st, NULL, 0, &rb, &err), 0);
    assert_int_equal(fx_count(rb, PLANNER_ACT_DELETE), 6);
    assert_true(fx_has(rb, "n1/db/stop"));
    assert_false(fx_has(rb, "n2/db/stop"));
    free(st);
    st = fx_run(rb, 3, NULL, 4);
    free(st);
    planner_plan_free(rb);
    planner_plan_free(p);
    model_layout_free(l);
    model_catalog_free(c);
}

/* ---- the catalogue ---- */

static const char *catalog_dir(void)
{
    static char buf[1024];
    const char *src = getenv("DROVER_SOURCE_DIR");
    snprintf(buf, sizeof(buf), "%s/../shared/fixtures/coopr-templates",
             src ? src : DROVER_SOURCE_DIR);
    return buf;
}

/*
 * Every template plans every operation. Layout: one node with every default
 * service and one node per default service, which is what a solver could give
 * for some size (the planner does not check the template's constraints).
 */
static void test_every_catalogue_template(void **state)
{
    struct model_catalog *c = model_catalog_new();
    struct drv_err err = {0};
    if (model_catalog_load_dir(c, catalog_dir(), &err))
        fail_msg("%s", err.msg);
    size_t nt = model_catalog_count(c, MODEL_TEMPLATE);
    assert_true(nt >= 15);
    for (size_t i = 0; i < nt; i++) {
        const struct model_template *raw = model_catalog_at(c, MODEL_TEMPLATE, i);
        struct model_template *t = NULL;
        if (model_template_resolve(c, raw->name, &t, &err))
            fail_msg("%s: %s", raw->name, err.msg);
        struct model_layout *l = model_layout_new();
        const char *hw = t->default_hardwaretype ? t->default_hardwaretype : "standard-large";
        const char *img = t->default_imagetype ? t->default_imagetype : "ubuntu12";
        /* Only the services the catalogue has: coopr-standalone-docker names a
         * "coopr-standalone" that it lacks, which the solver refuses. */
        const char *sv[64];
        size_t n = 0;
        for (size_t k = 0; k < t->default_services.n && n < 64; k++)
            if (model_catalog_service(c, t->default_services.v[k]))
                sv[n++] = t->default_services.v[k];
        model_layout_add(l, sv, n, hw, img, 1, NULL);
        for (size_t k = 0; k < n; k++)
            model_layout_add(l, &sv[k], 1, hw, img, 2, NULL);
        struct model_layout *big = model_layout_new();
        model_layout_add(big, sv, n, hw, img, 1, NULL);
        for (size_t k = 0; k < n; k++)
            model_layout_add(big, &sv[k], 1, hw, img, 3, NULL);
        struct planner_input *in = NULL;
        if (planner_input_from_model(c, t, NULL, l, &in, &err))
            fail_msg("%s: %s", t->name, err.msg);
        for (int op = 0; op < PLANNER_OP_ROLLBACK; op++) {
            const struct model_layout *from = l, *to = NULL;
            if (op == PLANNER_OP_CREATE)
                from = NULL, to = l;
            else if (op == PLANNER_OP_EXPAND)
                to = big;
            else if (op == PLANNER_OP_SHRINK)
                from = big, to = l;
            else if (op == PLANNER_OP_ADD_SERVICES || op == PLANNER_OP_REMOVE_SERVICES)
                to = l;
            struct planner_plan *p = NULL;
            if (fx_plan_err(c, (enum planner_op)op, from, to, NULL, &p, &err))
                fail_msg("%s %s: %s", t->name, planner_op_name(op), err.msg);
            fx_check_stages(p);
            fx_check_roundtrip(p);
            /* Roll back after every other task succeeded. */
            enum planner_task_state *st = xcalloc(p->n_tasks + 1, sizeof(*st));
            for (size_t k = 0; k < p->n_tasks; k += 2)
                st[k] = PLANNER_TS_SUCCESS;
            struct planner_plan *rb = NULL;
            if (planner_rollback(p, st, in->services, in->n_services, &rb, &err))
                fail_msg("%s %s rollback: %s", t->name, planner_op_name(op), err.msg);
            fx_check_stages(rb);
            planner_plan_free(rb);
            free(st);
            planner_plan_free(p);
        }
        planner_input_free(in);
        model_layout_free(big);
        model_layout_free(l);
        model_template_free(t);
    }
    model_catalog_free(c);
}

#ifdef DROVER_HAVE_SOLVER
#include "solver.h"

/* Every template the solver can lay out plans create, then expand by two nodes. */
static void test_every_catalogue_template_solved(void **state)
{
    struct model_catalog *c = model_catalog_new();
    struct drv_err err = {0};
    if (model_catalog_load_dir(c, catalog_dir(), &err))
        fail_msg("%s", err.msg);
    size_t planned = 0;
    for (size_t i = 0; i < model_catalog_count(c, MODEL_TEMPLATE); i++) {
        const struct model_template *raw = model_catalog_at(c, MODEL_TEMPLATE, i);
        struct model_template *t = NULL;
        if (model_template_resolve(c, raw->name, &t, &err))
            fail_msg("%s: %s", raw->name, err.msg);
        unsigned size = t->size_min > 0 ? (unsigned)t->size_min : 1;
        if (t->size_max < 0 || size + 4 <= (unsigned)t->size_max)
            size += 4;
        struct solver_request sr = {
            .catalog = c, .tmpl = t, .nodes = size, .cmp_prefers_supersets = true};
        struct model_layout *l = NULL;
        if (solver_solve(&sr, &l, &err) < 0) {
            /* Not the planner's to judge: coopr-standalone-docker names a service
             * the catalogue lacks. */
            print_message("skip %s: %s\n", t->name, err.msg);
            model_template_free(t);
            continue;
        }
        struct planner_plan *p = fx_plan(c, PLANNER_OP_CREATE, NULL, l, NULL);
        assert_int_equal(fx_count(p, PLANNER_ACT_CREATE), size);
        fx_check_stages(p);
        planner_plan_free(p);
        if (t->size_max < 0 || size + 2 <= (unsigned)t->size_max) {
            sr.nodes = size + 2;
            sr.existing = l;
            struct model_layout *big = NULL;
            if (solver_solve(&sr, &big, &err) == 0) {
                p = fx_plan(c, PLANNER_OP_EXPAND, l, big, NULL);
                assert_int_equal(fx_count(p, PLANNER_ACT_CREATE), 2);
                fx_check_stages(p);
                planner_plan_free(p);
                model_layout_free(big);
            }
        }
        planned++;
        model_layout_free(l);
        model_template_free(t);
    }
    assert_true(planned >= 14);
    model_catalog_free(c);
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_seeds_example),
        cmocka_unit_test(test_install_requires_order_installs),
        cmocka_unit_test(test_pass_through_service_without_action),
        cmocka_unit_test(test_dependencies_reduced_to_direct),
        cmocka_unit_test(test_provides_and_uses),
        cmocka_unit_test(test_stop_order_reversed),
        cmocka_unit_test(test_start_subset_pulls_in_requires),
        cmocka_unit_test(test_stop_subset_pulls_in_dependents),
        cmocka_unit_test(test_restart_and_configure),
        cmocka_unit_test(test_upgrade),
        cmocka_unit_test(test_add_services_does_not_reinstall),
        cmocka_unit_test(test_expand_shrink_remove),
        cmocka_unit_test(test_delete_one_per_node),
        cmocka_unit_test(test_loop_reported_with_path),
        cmocka_unit_test(test_stages_split_per_node),
        cmocka_unit_test(test_strategy_and_determinism),
        cmocka_unit_test(test_cross_node_edges_linear),
        cmocka_unit_test(test_json_errors_and_dot),
        cmocka_unit_test(test_rollback_half_created),
        cmocka_unit_test(test_rollback_restart_has_nothing_to_undo),
        cmocka_unit_test(test_rollback_shrink_recreates_nodes),
        cmocka_unit_test(test_exec_runs_plan_within_limits),
        cmocka_unit_test(test_exec_requeue_and_why),
        cmocka_unit_test(test_input_outlives_layouts),
        cmocka_unit_test(test_every_catalogue_template),
#ifdef DROVER_HAVE_SOLVER
        cmocka_unit_test(test_every_catalogue_template_solved),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
