/*
 * Unit tests of src/engine/plan.c: a job's plan from its pinned inputs is
 * the same byte for byte every time (the failover check rests on it), the
 * target layout names every node, node info carries the provider's maps,
 * and bad inputs are refused with the reason.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "engine_int.h"
#include "job_pg.h"
#include "model.h"
#include "planner.h"

static json_t *rows;

/* The Coopr catalogue as pinned rows [{kind, name, body}]. */
static int setup(void **state)
{
    struct model_catalog *c = model_catalog_new();
    struct drv_err err;
    char dir[512];
    snprintf(dir, sizeof(dir), "%s/../shared/fixtures/coopr-templates", DROVER_SOURCE_DIR);
    if (model_catalog_load_dir(c, dir, &err) != 0) {
        fprintf(stderr, "%s\n", err.msg);
        return -1;
    }
    rows = json_array();
    for (int k = 0; k < MODEL_KIND_COUNT; k++)
        for (size_t i = 0; i < model_catalog_count(c, k); i++) {
            const char *name = *(char *const *)model_catalog_at(c, k, i);
            json_array_append_new(rows,
                                  json_pack("{s:s, s:s, s:o}", "kind", model_kind_name(k), "name",
                                            name, "body", model_catalog_get_json(c, k, name)));
        }
    model_catalog_free(c);
    return 0;
}

static int teardown(void **state)
{
    json_decref(rows);
    return 0;
}

static void test_create_is_deterministic(void **state)
{
    json_t *layout = json_pack("{s:[{s:[s,s], s:s, s:s, s:i}]}", "nodes", "services", "base",
                               "hadoop-hdfs-datanode", "hardwaretype", "standard-small",
                               "imagetype", "ubuntu14", "count", 3);
    struct engine__plan_in in = {.op = "create",
                                 .catalog = rows,
                                 .template_name = "hadoop-distributed",
                                 .provider = "aws-us-east-1",
                                 .target = layout};
    struct engine__plan_out a, b;
    struct drv_err err;
    if (engine__plan_build(&in, &a, &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(engine__plan_build(&in, &b, &err), 0);
    assert_string_equal(a.sha, b.sha);
    assert_int_equal(a.len, b.len);
    assert_memory_equal(a.text, b.text, a.len);
    assert_true(a.plan->n_tasks > 3);
    json_t *nodes = json_object_get(a.target_layout, "nodes");
    assert_int_equal(json_array_size(nodes), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(nodes, 0), "id")),
                        "node-1");
    json_t *n1 = json_object_get(a.nodeinfo, "node-1");
    json_t *e1 = json_object_get(n1, "entries");
    assert_string_equal(json_string_value(json_object_get(e1, "flavor")), "m1.small");
    assert_string_equal(json_string_value(json_object_get(e1, "image")), "ami-a15e0db6");
    assert_null(json_object_get(e1, "cost"));
    assert_string_equal(json_string_value(json_object_get(n1, "hardwaretype")), "standard-small");
    assert_int_equal(a.dropped, 0);
    assert_string_equal(json_string_value(json_object_get(a.provider, "providertype")), "aws");
    /* The stored text reads back into the same plan. */
    struct planner_plan *back;
    assert_int_equal(engine__plan_from_text(a.text, a.len, &back, &err), 0);
    char *t2 = planner_plan_to_json_text(back, NULL);
    char sha[65];
    engine__sha256_hex(t2, strlen(t2), sha);
    assert_string_equal(sha, a.sha);
    free(t2);
    planner_plan_free(back);
    /* A start from the target: configure of one service keeps the ids. */
    struct engine__plan_in cin = {.op = "configure",
                                  .catalog = rows,
                                  .template_name = "hadoop-distributed",
                                  .provider = "aws-us-east-1",
                                  .start = a.target_layout,
                                  .subset = json_pack("[s]", "base")};
    struct engine__plan_out c;
    if (engine__plan_build(&cin, &c, &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(c.plan->op, PLANNER_OP_CONFIGURE);
    for (size_t i = 0; i < c.plan->n_tasks; i++)
        assert_true(!c.plan->tasks[i].service || strcmp(c.plan->tasks[i].service, "base") == 0);
    json_decref((json_t *)cin.subset);
    engine__plan_out_clear(&c);
    engine__plan_out_clear(&a);
    engine__plan_out_clear(&b);
    json_decref(layout);
}

/* The engine maps every operation of the API as the API's plan preview does
 * (api/handlers_plan.c), a recreate included: a dry run shows the plan the job runs. The
 * engine's own table used to lack "recreate" (-1) where the preview made it a create. */
static void test_ops_as_the_preview(void **state)
{
    static const struct {
        const char *op;
        int plan;
    } preview[] = {
        {"create", PLANNER_OP_CREATE},
        {"delete", PLANNER_OP_DELETE},
        {"expand", PLANNER_OP_EXPAND},
        {"shrink", PLANNER_OP_SHRINK},
        {"addservices", PLANNER_OP_ADD_SERVICES},
        {"removeservices", PLANNER_OP_REMOVE_SERVICES},
        {"configure", PLANNER_OP_CONFIGURE},
        {"start", PLANNER_OP_START},
        {"stop", PLANNER_OP_STOP},
        {"restart", PLANNER_OP_RESTART},
        {"upgrade", PLANNER_OP_UPGRADE},
        {"recreate", PLANNER_OP_CREATE},
    };
    for (size_t i = 0; i < sizeof(preview) / sizeof(preview[0]); i++)
        assert_int_equal(engine__op_parse(preview[i].op, NULL), preview[i].plan);
}

static void test_ops_and_errors(void **state)
{
    json_t *restart = json_pack("{s:b}", "restart", 1);
    assert_int_equal(engine__op_parse("addservices", NULL), PLANNER_OP_ADD_SERVICES);
    assert_int_equal(engine__op_parse("removeservices", NULL), PLANNER_OP_REMOVE_SERVICES);
    assert_int_equal(engine__op_parse("configure", restart), PLANNER_OP_CONFIGURE_RESTART);
    assert_int_equal(engine__op_parse("configure", NULL), PLANNER_OP_CONFIGURE);
    assert_int_equal(engine__op_parse("rollback", NULL), -1);
    assert_int_equal(engine__op_parse("fly", NULL), -1);
    json_decref(restart);
    struct engine__plan_out o;
    struct drv_err err;
    struct engine__plan_in in = {.op = "create", .catalog = rows, .template_name = "nope"};
    assert_int_equal(engine__plan_build(&in, &o, &err), DRV_EINVAL);
    assert_non_null(strstr(err.msg, "template \"nope\""));
    in.template_name = "lamp";
    in.provider = "moon";
    assert_int_equal(engine__plan_build(&in, &o, &err), DRV_EINVAL);
    assert_non_null(strstr(err.msg, "provider \"moon\""));
    in.op = "teleport";
    assert_int_equal(engine__plan_build(&in, &o, &err), DRV_EINVAL);
}

/* The task rows sent to PostgreSQL as one JSON parameter (job_pg.c), and their string escape. */
static void test_pg_task_rows(void **state)
{
    struct strbuf sb = STRBUF_INIT;
    engine__pg_jstr(&sb, NULL);
    strbuf_addch(&sb, ' ');
    engine__pg_jstr(&sb, "");
    strbuf_addch(&sb, ' ');
    engine__pg_jstr(&sb, "plain/é \"q\" back\\slash \x01\n\x1f end");
    assert_string_equal(sb.buf,
                        "null \"\" \"plain/é \\\"q\\\" back\\\\slash \\u0001\\u000a\\u001f end\"");
    strbuf_release(&sb);

    json_t *layout = json_pack("{s:[{s:[s,s], s:s, s:s, s:i}]}", "nodes", "services", "base",
                               "hadoop-hdfs-datanode", "hardwaretype", "standard-small",
                               "imagetype", "ubuntu14", "count", 2);
    struct engine__plan_in in = {.op = "create",
                                 .catalog = rows,
                                 .template_name = "hadoop-distributed",
                                 .provider = "aws-us-east-1",
                                 .target = layout};
    struct engine__plan_out a;
    struct drv_err err;
    if (engine__plan_build(&in, &a, &err) != 0)
        fail_msg("%s", err.msg);
    size_t n = a.plan->n_tasks, first = n / 3;
    char *text = engine__pg_task_rows(a.plan, first, n);
    json_error_t je;
    json_t *got = json_loads(text, 0, &je);
    if (!got)
        fail_msg("rows are not JSON: %s", je.text);
    assert_int_equal(json_array_size(got), n - first);
    for (size_t i = first; i < n; i++) {
        const struct planner_task *t = &a.plan->tasks[i];
        json_t *row = json_array_get(got, i - first);
        assert_int_equal(json_integer_value(json_object_get(row, "i")), i);
        assert_string_equal(json_string_value(json_object_get(row, "id")), t->id);
        assert_string_equal(json_string_value(json_object_get(row, "a")),
                            planner_action_name(t->action));
        assert_int_equal(json_array_size(json_object_get(row, "d")), t->n_deps);
    }
    json_decref(got);
    free(text);
    text = engine__pg_task_rows(a.plan, n, 5);
    assert_string_equal(text, "[]");
    free(text);
    engine__plan_out_clear(&a);
    json_decref(layout);
}

/*
 * Issue 32: a hardware type's providermap entry that names a provider's fact (stored
 * before the API refused it) is left out of the node's entries, and counted.
 */
static void test_reserved_entry_dropped(void **state)
{
    json_t *cat = json_deep_copy(rows);
    size_t i;
    json_t *r;
    json_array_foreach(cat, i, r)
    {
        if (strcmp(json_string_value(json_object_get(r, "name")), "standard-small") != 0)
            continue;
        json_t *e = json_object_get(json_object_get(json_object_get(r, "body"), "providermap"),
                                    "aws-us-east-1");
        json_object_set_new(e, "provider-id", json_string("ct-victim"));
        json_object_set_new(e, "ipaddresses", json_pack("{s:s}", "access_v4", "127.0.0.1"));
    }
    json_t *layout =
        json_pack("{s:[{s:[s], s:s, s:s, s:i}]}", "nodes", "services", "base", "hardwaretype",
                  "standard-small", "imagetype", "ubuntu14", "count", 2);
    struct engine__plan_in in = {.op = "create",
                                 .catalog = cat,
                                 .template_name = "hadoop-distributed",
                                 .provider = "aws-us-east-1",
                                 .target = layout};
    struct engine__plan_out a;
    struct drv_err err;
    if (engine__plan_build(&in, &a, &err) != 0)
        fail_msg("%s", err.msg);
    json_t *e1 = json_object_get(json_object_get(a.nodeinfo, "node-1"), "entries");
    assert_string_equal(json_string_value(json_object_get(e1, "flavor")), "m1.small");
    assert_null(json_object_get(e1, "provider-id"));
    assert_null(json_object_get(e1, "ipaddresses"));
    assert_int_equal(a.dropped, 4); /* two keys, two nodes */
    assert_string_equal(a.dropped_key, "standard-small.providermap.aws-us-east-1.provider-id");
    engine__plan_out_clear(&a);
    json_decref(layout);
    json_decref(cat);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_is_deterministic),
        cmocka_unit_test(test_reserved_entry_dropped),
        cmocka_unit_test(test_ops_as_the_preview),
        cmocka_unit_test(test_ops_and_errors),
        cmocka_unit_test(test_pg_task_rows),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
