/*
 * Unit tests of taskmsg (src/common/taskmsg.c): keys and run record names
 * round-trip and refuse what is not theirs; items and run records are checked
 * field by field; an encoded item passes the check; the version before this
 * build's is read.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "taskmsg.h"

static void test_keys(void **state)
{
    char buf[64], job[24], ph;
    uint32_t idx;
    unsigned att;
    assert_int_equal(taskmsg_key(buf, sizeof(buf), "42", 'f', 17, 1), 0);
    assert_string_equal(buf, "42.f17.1");
    assert_int_equal(taskmsg_key_parse(buf, job, &ph, &idx, &att), 0);
    assert_string_equal(job, "42");
    assert_int_equal(ph, 'f');
    assert_int_equal(idx, 17);
    assert_int_equal(att, 1);
    assert_int_equal(taskmsg_key(buf, sizeof(buf), "42", 'r', 4000000000u, 61), 0);
    assert_int_equal(taskmsg_key_parse(buf, job, &ph, &idx, &att), 0);
    assert_int_equal(idx, 4000000000u);
    assert_int_equal(taskmsg_key(buf, sizeof(buf), "4x", 'f', 1, 1), DRV_EINVAL);
    assert_int_equal(taskmsg_key(buf, sizeof(buf), "4", 'x', 1, 1), DRV_EINVAL);
    assert_int_equal(taskmsg_key(buf, 4, "42", 'f', 17, 1), DRV_EINVAL);
    const char *bad[] = {"",        "42",     "42.",      "42.f",     "42.f1",   "42.f1.",
                         "42.x1.1", "a.f1.1", "42.f1.1.", "42.f-1.1", "42.f1.1x"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(taskmsg_key_parse(bad[i], job, &ph, &idx, &att), DRV_EINVAL);
}

static void test_run_names(void **state)
{
    char buf[128], ph;
    uint32_t idx;
    unsigned att;
    assert_int_equal(taskmsg_run_name(buf, sizeof(buf), 'r', 9, 2, "worker.a-1", 0xbeef), 0);
    assert_string_equal(buf, "r9.2.worker.a-1.0000beef");
    assert_int_equal(taskmsg_run_name_parse(buf, &ph, &idx, &att), 0);
    assert_int_equal(ph, 'r');
    assert_int_equal(idx, 9);
    assert_int_equal(att, 2);
    assert_int_equal(taskmsg_run_name_parse("r9.2", &ph, &idx, &att), DRV_EINVAL);
    assert_int_equal(taskmsg_run_name_parse("x9.2.w.1", &ph, &idx, &att), DRV_EINVAL);
}

static void test_item_check(void **state)
{
    struct drv_err err;
    json_t *it = json_pack("{s:i, s:s, s:s, s:i, s:i, s:s, s:s, s:s, s:s, s:s}", "v", 1, "job",
                           "42", "phase", "f", "idx", 3, "attempt", 1, "task", "node-1/create",
                           "name", "create", "tenant", "acme", "cluster", "7", "plugin", "aws");
    assert_int_equal(taskmsg_item_check(it, &err), 0);
    json_object_set_new(it, "v", json_integer(TASKMSG_VERSION + 1));
    assert_int_equal(taskmsg_item_check(it, &err), DRV_EINVAL);
    assert_non_null(strstr(err.msg, "\"v\""));
    json_object_set_new(it, "v", json_integer(1));
    json_object_set_new(it, "phase", json_string("x"));
    assert_int_equal(taskmsg_item_check(it, &err), DRV_EINVAL);
    json_object_set_new(it, "phase", json_string("r"));
    json_object_del(it, "plugin");
    assert_int_equal(taskmsg_item_check(it, &err), DRV_EINVAL);
    assert_non_null(strstr(err.msg, "\"plugin\""));
    json_decref(it);
    assert_int_equal(taskmsg_item_check(NULL, &err), DRV_EINVAL);
}

/* The engine's encoder and the workers' checker agree: an encoded item passes the check. */
static void test_item_encode(void **state)
{
    struct drv_err err;
    json_t *fields = json_pack("{s:s}", "size", "small");
    json_t *props = json_pack("{s:s}", "provider-id", "i-1");
    struct taskmsg_item in = {
        .job = "42",
        .phase = 'f',
        .idx = 3,
        .attempt = 2,
        .task = "node-1/create",
        .name = "create",
        .tenant = "acme",
        .cluster = "7",
        .plugin = "aws",
        .cleanup = true,
        .nodes_rev = 5,
        .node = "node-1",
        .fields = fields,
        .props = props,
        .avoid = "worker-2",
        .timeout_ms = 30000,
    };
    char *s = taskmsg_item_encode(&in);
    assert_non_null(s);
    /* The bytes, field order included: what zkCli.sh shows of an item. */
    assert_string_equal(s, "{\"v\":1,\"job\":\"42\",\"phase\":\"f\",\"idx\":3,\"attempt\":2,"
                           "\"task\":\"node-1/create\",\"name\":\"create\",\"tenant\":\"acme\","
                           "\"cluster\":\"7\",\"plugin\":\"aws\",\"cleanup\":true,\"nodes_rev\":5,"
                           "\"node\":\"node-1\",\"fields\":{\"size\":\"small\"},"
                           "\"props\":{\"provider-id\":\"i-1\"},\"avoid\":\"worker-2\","
                           "\"timeout_ms\":30000}");
    json_t *back = json_loads(s, 0, NULL);
    free(s);
    assert_int_equal(taskmsg_item_check(back, &err), 0);
    assert_int_equal(json_integer_value(json_object_get(back, "attempt")), 2);
    assert_null(json_object_get(back, "service"));
    assert_null(json_object_get(back, "config_override"));
    json_decref(back);
    /* The encoder took its own references. */
    assert_int_equal(fields->refcount, 1);
    assert_int_equal(props->refcount, 1);

    /* Optional fields left out; a rollback item. */
    struct taskmsg_item bare = in;
    bare.phase = 'r';
    bare.node = NULL;
    bare.fields = NULL;
    bare.props = NULL;
    bare.avoid = NULL;
    bare.timeout_ms = 0;
    s = taskmsg_item_encode(&bare);
    back = json_loads(s, 0, NULL);
    free(s);
    assert_int_equal(taskmsg_item_check(back, &err), 0);
    assert_int_equal(json_object_size(back), 12);
    json_decref(back);

    /* What the checker refuses, the encoder does not hide: a bad phase is caught on reading. */
    struct taskmsg_item bad = in;
    bad.phase = 'x';
    s = taskmsg_item_encode(&bad);
    back = json_loads(s, 0, NULL);
    free(s);
    assert_int_equal(taskmsg_item_check(back, &err), DRV_EINVAL);
    assert_non_null(strstr(err.msg, "\"phase\""));
    json_decref(back);
    /* A required string missing: no item at all. */
    bad = in;
    bad.plugin = NULL;
    assert_null(taskmsg_item_encode(&bad));
    json_decref(fields);
    json_decref(props);
}

static void test_run_parse(void **state)
{
    struct taskmsg_run r;
    struct drv_err err;
    const char *start =
        "{\"v\":1,\"worker\":\"w1\",\"session\":\"0x1\",\"start\":1000,\"item\":\"s01/i\"}";
    assert_int_equal(taskmsg_run_parse(start, strlen(start), &r, &err), 0);
    assert_false(r.ended);
    assert_string_equal(r.worker, "w1");
    assert_int_equal(r.start_ms, 1000);
    taskmsg_run_clear(&r);
    const char *end = "{\"v\":1,\"worker\":\"w1\",\"start\":1000,\"end\":1500,\"status\":\"ok\","
                      "\"result\":{\"provider-id\":\"x\"},\"message\":\"made\",\"how\":\"exit 0\"}";
    assert_int_equal(taskmsg_run_parse(end, strlen(end), &r, &err), 0);
    assert_true(r.ended && r.ok);
    assert_int_equal(r.end_ms, 1500);
    assert_string_equal(json_string_value(json_object_get(r.result, "provider-id")), "x");
    assert_string_equal(r.message, "made");
    assert_string_equal(r.tail, "");
    taskmsg_run_clear(&r);
    const char *failed =
        "{\"v\":1,\"worker\":\"w1\",\"start\":1,\"status\":\"failed\",\"result\":3}";
    assert_int_equal(taskmsg_run_parse(failed, strlen(failed), &r, &err), 0);
    assert_true(r.ended && !r.ok);
    assert_null(r.result);
    taskmsg_run_clear(&r);
    const char *bad[] = {"[]", "{\"v\":1}", "{\"v\":9,\"worker\":\"w\",\"start\":1}", "{"};
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(taskmsg_run_parse(bad[i], strlen(bad[i]), &r, &err), DRV_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keys),       cmocka_unit_test(test_run_names),
        cmocka_unit_test(test_item_check), cmocka_unit_test(test_item_encode),
        cmocka_unit_test(test_run_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
