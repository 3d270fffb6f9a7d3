/*
 * Unit tests of fault: DROVER_FAULT's hooks found by name among others, their
 * arguments after ':' or '=', and the ":N" period suffix.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "fault.h"

static void test_arg(void **state)
{
    char *a = fault_arg_in("gather-starts=6,zk-answer-lost:multi:/runs/:3,crash", "zk-answer-lost");
    assert_string_equal(a, "multi:/runs/:3");
    assert_int_equal(fault_every(a, 2), 3);
    assert_string_equal(a, "multi:/runs/");
    assert_int_equal(fault_every(a, 2), 2); /* "/runs/" is no number */
    free(a);
    a = fault_arg_in("gather-starts=6,crash", "gather-starts");
    assert_string_equal(a, "6");
    free(a);
    a = fault_arg_in("gather-starts=6,crash", "crash");
    assert_string_equal(a, "");
    free(a);
    assert_null(fault_arg_in("crash-after-start", "crash")); /* whole names only */
    assert_null(fault_arg_in(NULL, "crash"));
    assert_null(fault_arg_in("", "crash"));
    a = fault_arg_in("pg-commit-lost:UPDATE jobs SET owner", "pg-commit-lost");
    assert_string_equal(a, "UPDATE jobs SET owner");
    assert_int_equal(fault_every(a, 2), 2);
    free(a);
    char b[] = "x::bigint:0";
    assert_int_equal(fault_every(b, 2), 2); /* 0 is no period */
    assert_string_equal(b, "x::bigint:0");
}

static void test_env(void **state)
{
    setenv("DROVER_FAULT", "a,pg-commit-lost:INSERT INTO tasks:1", 1);
    char *a = fault_arg("pg-commit-lost");
    assert_non_null(a);
    assert_int_equal(fault_every(a, 2), 1);
    assert_string_equal(a, "INSERT INTO tasks");
    free(a);
    unsetenv("DROVER_FAULT");
    assert_null(fault_arg("pg-commit-lost"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_arg), cmocka_unit_test(test_env)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
