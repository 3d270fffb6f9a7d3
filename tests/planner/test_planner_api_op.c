/*
 * test_planner_api_op: the API's operations as the planner, the job row and the engine take
 * them (planner_api_op): the one table the API's plan preview, the job insert and the
 * engine's plan read.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "planner.h"

static const char *const api_ops[] = {"create",      "delete",         "expand",    "shrink",
                                      "addservices", "removeservices", "configure", "start",
                                      "stop",        "restart",        "upgrade",   "recreate"};

/* Every operation the API takes maps to a planner operation, with and without "restart". */
static void test_every_api_op_maps(void **state)
{
    for (size_t i = 0; i < sizeof(api_ops) / sizeof(api_ops[0]); i++) {
        const struct planner_api_op *a = planner_api_op(api_ops[i]);
        assert_non_null(a);
        assert_string_equal(a->name, api_ops[i]);
        assert_true(planner_api_op_plan(api_ops[i], false) >= 0);
        assert_true(planner_api_op_plan(api_ops[i], true) >= 0);
    }
}

/* The job row's operation, read back by the engine, plans as the API's operation does (the
 * preview shows what the job runs): a recreate is recorded, and planned, as a create. */
static void test_job_op_plans_the_same(void **state)
{
    for (size_t i = 0; i < sizeof(api_ops) / sizeof(api_ops[0]); i++) {
        const struct planner_api_op *a = planner_api_op(api_ops[i]);
        for (int restart = 0; restart < 2; restart++)
            assert_int_equal(planner_api_op_plan(a->job_op, restart),
                             planner_api_op_plan(a->name, restart));
    }
    assert_string_equal(planner_api_op("recreate")->job_op, "create");
    assert_int_equal(planner_api_op_plan("recreate", false), PLANNER_OP_CREATE);
}

/* "restart" makes a configure a configure-restart, and nothing else. */
static void test_restart(void **state)
{
    assert_int_equal(planner_api_op_plan("configure", true), PLANNER_OP_CONFIGURE_RESTART);
    assert_int_equal(planner_api_op_plan("configure", false), PLANNER_OP_CONFIGURE);
    assert_int_equal(planner_api_op_plan("restart", true), PLANNER_OP_RESTART);
    assert_int_equal(planner_api_op_plan("expand", true), PLANNER_OP_EXPAND);
}

/* The planner's own names are not the API's; nor is anything else. */
static void test_not_api_ops(void **state)
{
    static const char *const not [] = {
        "add-services", "remove-services", "configure-restart", "rollback", "fly", ""};
    for (size_t i = 0; i < sizeof(not ) / sizeof(not [0]); i++) {
        assert_null(planner_api_op(not [i]));
        assert_int_equal(planner_api_op_plan(not [i], false), -1);
    }
    assert_null(planner_api_op(NULL));
}

/* The operations that act on the request's "services" alone. */
static void test_subset(void **state)
{
    static const char *const subset[] = {"configure", "start", "stop", "restart", "upgrade"};
    size_t n = 0;
    for (size_t i = 0; i < sizeof(api_ops) / sizeof(api_ops[0]); i++)
        n += planner_api_op(api_ops[i])->subset;
    assert_int_equal(n, sizeof(subset) / sizeof(subset[0]));
    for (size_t i = 0; i < sizeof(subset) / sizeof(subset[0]); i++)
        assert_true(planner_api_op(subset[i])->subset);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_api_op_maps),
        cmocka_unit_test(test_job_op_plans_the_same),
        cmocka_unit_test(test_restart),
        cmocka_unit_test(test_not_api_ops),
        cmocka_unit_test(test_subset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
