/* test_jmerge: RFC 7396 merge patch (the RFC's own appendix A cases) and the leaf diff. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "jmerge.h"

static json_t *j(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &e);
    if (!v)
        fail_msg("bad test JSON %s: %s", text, e.text);
    return v;
}

static void expect_patch(const char *target, const char *patch, const char *want)
{
    json_t *t = j(target), *p = j(patch), *w = j(want);
    json_t *got = jmerge_patch(t, p);
    if (!json_equal(got, w)) {
        char *g = json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY);
        fail_msg("%s + %s: got %s, want %s", target, patch, g, want);
    }
    /* Inputs untouched. */
    json_t *t2 = j(target);
    assert_true(json_equal(t, t2));
    json_decref(t2);
    json_decref(got);
    json_decref(t);
    json_decref(p);
    json_decref(w);
}

static void test_rfc7396_appendix_a(void **state)
{
    (void)state;
    expect_patch("{\"a\":\"b\"}", "{\"a\":\"c\"}", "{\"a\":\"c\"}");
    expect_patch("{\"a\":\"b\"}", "{\"b\":\"c\"}", "{\"a\":\"b\",\"b\":\"c\"}");
    expect_patch("{\"a\":\"b\"}", "{\"a\":null}", "{}");
    expect_patch("{\"a\":\"b\",\"b\":\"c\"}", "{\"a\":null}", "{\"b\":\"c\"}");
    expect_patch("{\"a\":[\"b\"]}", "{\"a\":\"c\"}", "{\"a\":\"c\"}");
    expect_patch("{\"a\":\"c\"}", "{\"a\":[\"b\"]}", "{\"a\":[\"b\"]}");
    expect_patch("{\"a\":{\"b\":\"c\"}}", "{\"a\":{\"b\":\"d\",\"c\":null}}",
                 "{\"a\":{\"b\":\"d\"}}");
    expect_patch("{\"a\":[{\"b\":\"c\"}]}", "{\"a\":[1]}", "{\"a\":[1]}");
    expect_patch("[\"a\",\"b\"]", "[\"c\",\"d\"]", "[\"c\",\"d\"]");
    expect_patch("{\"a\":\"b\"}", "[\"c\"]", "[\"c\"]");
    expect_patch("{\"a\":\"foo\"}", "null", "null");
    expect_patch("{\"a\":\"foo\"}", "\"bar\"", "\"bar\"");
    expect_patch("{\"e\":null}", "{\"a\":1}", "{\"e\":null,\"a\":1}");
    expect_patch("[1,2]", "{\"a\":\"b\",\"c\":null}", "{\"a\":\"b\"}");
    expect_patch("{}", "{\"a\":{\"bb\":{\"ccc\":null}}}", "{\"a\":{\"bb\":{}}}");
    /* A template's defaults with a user's config over them: siblings kept. */
    expect_patch("{\"haproxy\":{\"port\":80,\"backends\":\"%x%\"},\"nginx\":{\"port\":80}}",
                 "{\"nginx\":{\"message\":\"hi\"}}",
                 "{\"haproxy\":{\"port\":80,\"backends\":\"%x%\"},\"nginx\":{\"port\":80,"
                 "\"message\":\"hi\"}}");
    /* No target: the patch less its nulls. */
    json_t *p = j("{\"a\":1,\"b\":null}"), *got = jmerge_patch(NULL, p), *w = j("{\"a\":1}");
    assert_true(json_equal(got, w));
    json_decref(p);
    json_decref(got);
    json_decref(w);
}

static void test_diff(void **state)
{
    (void)state;
    json_t *a = j("{\"nginx\":{\"port\":80,\"message\":\"a\"},\"x\":[1],\"gone\":{\"k\":1}}");
    json_t *b = j("{\"nginx\":{\"port\":8080,\"message\":\"a\",\"new\":true},\"x\":[1]}");
    json_t *d = jmerge_diff(a, b);
    json_t *w = j("[{\"key\":\"gone.k\",\"old\":1},{\"key\":\"nginx.new\",\"new\":true},"
                  "{\"key\":\"nginx.port\",\"old\":80,\"new\":8080}]");
    if (!json_equal(d, w))
        fail_msg("diff: %s", json_dumps(d, JSON_COMPACT));
    json_decref(d);
    d = jmerge_diff(NULL, NULL);
    assert_int_equal(json_array_size(d), 0);
    json_decref(d);
    d = jmerge_diff(a, a);
    assert_int_equal(json_array_size(d), 0);
    json_decref(d);
    json_decref(a);
    json_decref(b);
    json_decref(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rfc7396_appendix_a),
        cmocka_unit_test(test_diff),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
