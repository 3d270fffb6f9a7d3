/* Unit tests for src/api/jobwait.c: a job summary's revision. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "api_int.h"

static void test_revision(void **state)
{
    json_t *a =
        json_loads("{\"id\":\"4\",\"status\":\"running\",\"progress\":{\"done\":1,\"total\":9,"
                   "\"states\":{\"running\":1,\"succeeded\":1,\"waiting\":7}}}",
                   0, NULL);
    json_t *b =
        json_loads("{\"progress\":{\"states\":{\"waiting\":7,\"succeeded\":1,\"running\":1},"
                   "\"total\":9,\"done\":1},\"status\":\"running\",\"id\":\"4\"}",
                   0, NULL);
    char ra[33], rb[33], rc[33];
    api__job_revision(a, ra);
    api__job_revision(b, rb);
    /* Key order does not matter; the revision is in the object. */
    assert_int_equal(strlen(ra), 32);
    assert_string_equal(ra, rb);
    assert_string_equal(json_string_value(json_object_get(a, "revision")), ra);
    /* Computing it again over an object that has one gives the same. */
    api__job_revision(a, rc);
    assert_string_equal(ra, rc);
    /* A task that starts changes it. */
    json_t *st = json_object_get(json_object_get(b, "progress"), "states");
    json_object_set_new(st, "running", json_integer(2));
    json_object_set_new(st, "waiting", json_integer(6));
    api__job_revision(b, rb);
    assert_string_not_equal(ra, rb);
    json_decref(a);
    json_decref(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_revision),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
