/* Unit tests for src/common: errors, log quoting, allocation helpers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "error.h"
#include "log.h"
#include "xalloc.h"

static void test_err_set_and_prefix(void **state)
{
    struct drv_err e;
    drv_err_clear(&e);
    int rc = drv_err_set(&e, DRV_EINVAL, 7, "unknown key \"%s\"", "foo");
    assert_int_equal(rc, DRV_EINVAL);
    assert_int_equal(e.lib_code, 7);
    assert_string_equal(e.msg, "unknown key \"foo\"");
    drv_err_prefix(&e, "%s:%d", "a.conf", 3);
    assert_string_equal(e.msg, "a.conf:3: unknown key \"foo\"");
    /* NULL is allowed and the code still comes back. */
    assert_int_equal(drv_err_set(NULL, DRV_ENOENT, 0, "x"), DRV_ENOENT);
    assert_string_equal(drv_strerror(DRV_ENOENT), "not-found");
}

static void test_log_quote(void **state)
{
    char buf[64];
    assert_string_equal(log_quote("plain", buf, sizeof(buf)), "plain");
    assert_string_equal(log_quote("two words", buf, sizeof(buf)), "\"two words\"");
    assert_string_equal(log_quote("a\"b", buf, sizeof(buf)), "\"a\\\"b\"");
    assert_string_equal(log_quote("k=v", buf, sizeof(buf)), "\"k=v\"");
    assert_string_equal(log_quote("", buf, sizeof(buf)), "\"\"");
    /* Truncation keeps the closing quote. */
    char small[8];
    const char *q = log_quote("a long value here", small, sizeof(small));
    assert_true(strlen(q) < sizeof(small));
    assert_int_equal(q[strlen(q) - 1], '"');
}

static void test_xasprintf_and_grow(void **state)
{
    char *s = xasprintf("%s-%d", "node", 42);
    assert_string_equal(s, "node-42");
    FREE_NULL(s);
    assert_null(s);
    int *arr = NULL;
    size_t cap = 0;
    for (int i = 0; i < 1000; i++) {
        XGROW(arr, cap, (size_t)i + 1);
        arr[i] = i;
    }
    assert_true(cap >= 1000);
    assert_int_equal(arr[999], 999);
    free(arr);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_err_set_and_prefix),
        cmocka_unit_test(test_log_quote),
        cmocka_unit_test(test_xasprintf_and_grow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
