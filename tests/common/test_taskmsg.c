/*
 * Unit tests of taskmsg (src/common/taskmsg.c): keys and run record names
 * round-trip and refuse what is not theirs; items and run records are checked
 * field by field; an encoded item passes the check; each message is written
 * byte for byte as zkCli.sh shows it, and what the previous version wrote
 * (item 1: a node's "props" and "nodeinfo" merged) is read back into the
 * node's parts by writer, a tenant's reserved keys dropped.
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
    /* One delivery: only the nonce differs (assign.c's trace of a lost attempt, nonce 0,
       and its worker's own record of it). */
    char other[128];
    taskmsg_run_name(other, sizeof(other), 'r', 9, 2, "worker.a-1", 0);
    assert_true(taskmsg_run_same_delivery(buf, other));
    taskmsg_run_name(other, sizeof(other), 'r', 9, 2, "worker.a-2", 0xbeef);
    assert_false(taskmsg_run_same_delivery(buf, other));
    taskmsg_run_name(other, sizeof(other), 'r', 9, 3, "worker.a-1", 0xbeef);
    assert_false(taskmsg_run_same_delivery(buf, other));
    taskmsg_run_name(other, sizeof(other), 'f', 9, 2, "worker.a-1", 0xbeef);
    assert_false(taskmsg_run_same_delivery(buf, other));
    taskmsg_run_name(other, sizeof(other), 'r', 9, 2, "worker.a", 0xbeef);
    assert_false(taskmsg_run_same_delivery(buf, other));
    assert_false(taskmsg_run_same_delivery(buf, "r9.2"));
}

static void test_item_check(void **state)
{
    struct drv_err err;
    json_t *it = json_pack("{s:i, s:s, s:s, s:i, s:i, s:s, s:s, s:s, s:s, s:s}", "v", 1, "job",
                           "42", "phase", "f", "idx", 3, "attempt", 1, "task", "node-1/create",
                           "name", "create", "tenant", "acme", "cluster", "7", "plugin", "aws");
    assert_int_equal(taskmsg_item_check(it, &err), 0);
    json_object_set_new(it, "v", json_integer(TASKMSG_ITEM_VERSION + 1));
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
    /* The node's key-values as the engine keeps them: facts and values in one object. */
    json_t *props = json_pack("{s:s, s:s}", "provider-id", "i-1", "installed", "yes");
    json_t *entries = json_pack("{s:s}", "flavor", "m1");
    json_t *svcs = json_pack("[s]", "zk");
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
        .facts = props,
        .values = props,
        .entries = entries,
        .hardwaretype = "small",
        .imagetype = "debian12",
        .services = svcs,
        .avoid = "worker-2",
        .timeout_ms = 30000,
    };
    char *s = taskmsg_item_encode(&in, TASKMSG_ITEM_VERSION);
    assert_non_null(s);
    /* The bytes, field order included: what zkCli.sh shows of an item. */
    assert_string_equal(s, "{\"v\":2,\"job\":\"42\",\"phase\":\"f\",\"idx\":3,\"attempt\":2,"
                           "\"task\":\"node-1/create\",\"name\":\"create\",\"tenant\":\"acme\","
                           "\"cluster\":\"7\",\"plugin\":\"aws\",\"cleanup\":true,\"nodes_rev\":5,"
                           "\"node\":\"node-1\",\"fields\":{\"size\":\"small\"},"
                           "\"facts\":{\"provider-id\":\"i-1\"},\"values\":{\"installed\":\"yes\"},"
                           "\"entries\":{\"flavor\":\"m1\"},\"hardwaretype\":\"small\","
                           "\"imagetype\":\"debian12\",\"services\":[\"zk\"],"
                           "\"avoid\":\"worker-2\",\"timeout_ms\":30000}");
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

    /* Version 1, for workers of the version before: the parts merged as they read them,
       the facts after the values, and no reserved key in nodeinfo (it goes over props). */
    json_object_set_new(entries, "provider-id", json_string("someone-else"));
    s = taskmsg_item_encode(&in, 1);
    assert_string_equal(s, "{\"v\":1,\"job\":\"42\",\"phase\":\"f\",\"idx\":3,\"attempt\":2,"
                           "\"task\":\"node-1/create\",\"name\":\"create\",\"tenant\":\"acme\","
                           "\"cluster\":\"7\",\"plugin\":\"aws\",\"cleanup\":true,\"nodes_rev\":5,"
                           "\"node\":\"node-1\",\"fields\":{\"size\":\"small\"},"
                           "\"props\":{\"installed\":\"yes\",\"provider-id\":\"i-1\"},"
                           "\"nodeinfo\":{\"flavor\":\"m1\",\"hardwaretype\":\"small\","
                           "\"imagetype\":\"debian12\",\"services\":[\"zk\"]},"
                           "\"avoid\":\"worker-2\",\"timeout_ms\":30000}");
    free(s);
    /* Version 2 leaves the tenant's reserved key out too. */
    s = taskmsg_item_encode(&in, 2);
    assert_null(strstr(s, "someone-else"));
    free(s);

    /* Optional fields left out; a rollback item. */
    struct taskmsg_item bare = in;
    bare.phase = 'r';
    bare.node = NULL;
    bare.fields = NULL;
    bare.facts = bare.values = bare.entries = bare.services = NULL;
    bare.hardwaretype = bare.imagetype = NULL;
    bare.avoid = NULL;
    bare.timeout_ms = 0;
    for (int v = 1; v <= TASKMSG_ITEM_VERSION; v++) {
        s = taskmsg_item_encode(&bare, v);
        back = json_loads(s, 0, NULL);
        free(s);
        assert_int_equal(taskmsg_item_check(back, &err), 0);
        assert_int_equal(json_object_size(back), 12);
        json_decref(back);
    }

    /* What the checker refuses, the encoder does not hide: a bad phase is caught on reading. */
    struct taskmsg_item bad = in;
    bad.phase = 'x';
    s = taskmsg_item_encode(&bad, TASKMSG_ITEM_VERSION);
    back = json_loads(s, 0, NULL);
    free(s);
    assert_int_equal(taskmsg_item_check(back, &err), DRV_EINVAL);
    assert_non_null(strstr(err.msg, "\"phase\""));
    json_decref(back);
    /* A required string missing: no item at all. */
    bad = in;
    bad.plugin = NULL;
    assert_null(taskmsg_item_encode(&bad, TASKMSG_ITEM_VERSION));
    json_decref(fields);
    json_decref(props);
    json_decref(entries);
    json_decref(svcs);
}

/*
 * An item as the previous version's engine wrote it (item 1), with the attack of issue
 * 32 in it: a hardware type's providermap entry naming another tenant's machine and its
 * address, which version 1 merged over the node's own key-values. Read back, the facts
 * are the provider's (props), the entry's keys are dropped and counted.
 */
static void test_item_read_v1(void **state)
{
    const char *v1 =
        "{\"v\":1,\"job\":\"42\",\"phase\":\"r\",\"idx\":9,\"attempt\":1,"
        "\"task\":\"node-1/delete\",\"name\":\"delete\",\"tenant\":\"evil\",\"cluster\":\"8\","
        "\"plugin\":\"container\",\"cleanup\":false,\"nodes_rev\":3,\"node\":\"node-1\","
        "\"props\":{\"provider-id\":\"ct-own\",\"installed\":\"yes\"},"
        "\"nodeinfo\":{\"cpus\":\"1\",\"provider-id\":\"ct-victim\","
        "\"ipaddresses\":{\"access_v4\":\"10.251.0.2\"},\"hardwaretype\":\"small\","
        "\"imagetype\":\"debian12\",\"services\":[\"zk\"]},\"timeout_ms\":1000}";
    json_t *j = json_loads(v1, 0, NULL);
    struct taskmsg_item it;
    struct drv_err err;
    assert_int_equal(taskmsg_item_decode(j, &it, &err), 0);
    json_decref(j);
    assert_int_equal(it.version, 1);
    assert_string_equal(it.job, "42");
    assert_int_equal(it.phase, 'r');
    assert_int_equal(it.idx, 9);
    assert_string_equal(it.name, "delete");
    assert_string_equal(it.node, "node-1");
    assert_int_equal(it.timeout_ms, 1000);
    assert_string_equal(json_string_value(json_object_get(it.facts, "provider-id")), "ct-own");
    assert_int_equal(json_object_size(it.facts), 1);
    assert_string_equal(json_string_value(json_object_get(it.values, "installed")), "yes");
    assert_int_equal(json_object_size(it.values), 1);
    assert_string_equal(json_string_value(json_object_get(it.entries, "cpus")), "1");
    assert_int_equal(json_object_size(it.entries), 1);
    assert_string_equal(it.hardwaretype, "small");
    assert_string_equal(it.imagetype, "debian12");
    assert_int_equal(json_array_size(it.services), 1);
    assert_int_equal(it.dropped, 2);
    assert_string_equal(it.dropped_key, "provider-id");
    assert_null(it.service);
    assert_null(it.fields);
    taskmsg_item_clear(&it);
    /* The oldest shape: no node parts at all. */
    const char *bare = "{\"v\":1,\"job\":\"1\",\"phase\":\"f\",\"idx\":0,\"attempt\":1,\"task\":"
                       "\"a\",\"name\":\"start\",\"tenant\":\"t\",\"cluster\":\"1\",\"plugin\":"
                       "\"shell\"}";
    j = json_loads(bare, 0, NULL);
    assert_int_equal(taskmsg_item_decode(j, &it, &err), 0);
    json_decref(j);
    assert_int_equal(json_object_size(it.facts) + json_object_size(it.values) +
                         json_object_size(it.entries) + json_array_size(it.services),
                     0);
    assert_null(it.hardwaretype);
    taskmsg_item_clear(&it);
}

/* Version 2 both ways; a tenant's reserved key in a part of an item is dropped on reading
   too (an item written by hand), and a fact key outside "facts" is no fact. */
static void test_item_roundtrip_v2(void **state)
{
    json_t *facts = json_pack("{s:s, s:{s:s}, s:s}", "provider-id", "ct-1", "ipaddresses",
                              "access_v4", "10.0.0.2", "stray", "x");
    json_t *values = json_pack("{s:s, s:s}", "installed", "yes", "hostname", "forged");
    struct taskmsg_item in = {.job = "5",
                              .phase = 'f',
                              .idx = 1,
                              .attempt = 1,
                              .task = "node-2/zk/install",
                              .name = "install",
                              .tenant = "acme",
                              .cluster = "3",
                              .plugin = "shell",
                              .node = "node-2",
                              .service = "zk",
                              .facts = facts,
                              .values = values};
    char *s = taskmsg_item_encode(&in, 2);
    json_t *j = json_loads(s, 0, NULL);
    free(s);
    /* Written by hand into the item: the worker reads it as the tenant's, without it. */
    json_object_set_new(json_object_get(j, "values"), "ssh_port", json_integer(2222));
    struct taskmsg_item it;
    struct drv_err err;
    assert_int_equal(taskmsg_item_decode(j, &it, &err), 0);
    json_decref(j);
    assert_int_equal(it.version, 2);
    assert_string_equal(it.service, "zk");
    assert_int_equal(json_object_size(it.facts), 2);
    assert_string_equal(json_string_value(json_object_get(it.facts, "provider-id")), "ct-1");
    assert_int_equal(json_object_size(it.values), 1);
    assert_int_equal(it.dropped, 1);
    assert_string_equal(it.dropped_key, "ssh_port");
    taskmsg_item_clear(&it);
    json_decref(facts);
    json_decref(values);
    /* A version this build does not read. */
    j = json_pack("{s:i, s:s, s:s, s:i, s:i, s:s, s:s, s:s, s:s, s:s}", "v",
                  TASKMSG_ITEM_VERSION + 1, "job", "1", "phase", "f", "idx", 0, "attempt", 1,
                  "task", "a", "name", "start", "tenant", "t", "cluster", "1", "plugin", "x");
    assert_int_equal(taskmsg_item_decode(j, &it, &err), DRV_EINVAL);
    json_decref(j);
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

/* The run record as the worker writes it, byte for byte as the previous version did. */
static void test_run_write(void **state)
{
    json_t *rec = taskmsg_run_start("w1", "0x1", "s01/i", 1000);
    char *s = json_dumps(rec, JSON_COMPACT);
    assert_string_equal(s, "{\"v\":1,\"worker\":\"w1\",\"session\":\"0x1\",\"item\":\"s01/i\","
                           "\"start\":1000}");
    free(s);
    json_t *result = json_pack("{s:s}", "provider-id", "x");
    struct taskmsg_outcome o = {.ok = true,
                                .end_ms = 1500,
                                .message = "made",
                                .how = "exit 0",
                                .tail = "",
                                .result = result};
    taskmsg_run_end(rec, &o);
    s = json_dumps(rec, JSON_COMPACT);
    assert_string_equal(s, "{\"v\":1,\"worker\":\"w1\",\"session\":\"0x1\",\"item\":\"s01/i\","
                           "\"start\":1000,\"how\":\"exit 0\",\"end\":1500,\"tail\":\"\","
                           "\"status\":\"ok\",\"message\":\"made\","
                           "\"result\":{\"provider-id\":\"x\"}}");
    struct taskmsg_run r;
    struct drv_err err;
    assert_int_equal(taskmsg_run_parse(s, strlen(s), &r, &err), 0);
    free(s);
    assert_true(r.ended && r.ok);
    assert_string_equal(r.session, "0x1");
    assert_string_equal(r.item, "s01/i");
    assert_string_equal(r.how, "exit 0");
    taskmsg_run_clear(&r);
    /* A task not run: no tail, no result. */
    json_decref(rec);
    rec = taskmsg_run_start("w1", "0x1", "s01/i", 1000);
    struct taskmsg_outcome no = {
        .ok = false, .end_ms = 1001, .message = "no plugin", .how = "not run"};
    taskmsg_run_end(rec, &no);
    assert_int_equal(taskmsg_run_of(rec, &r, &err), 0);
    assert_true(r.ended && !r.ok);
    assert_string_equal(r.message, "no plugin");
    assert_null(json_object_get(rec, "tail"));
    taskmsg_run_clear(&r);
    json_decref(rec);
    json_decref(result);
}

/* The job's context: the bytes the previous version's engine wrote, and read back. */
static void test_ctx(void **state)
{
    json_t *cluster = json_pack("{s:i}", "port", 2181);
    json_t *provider = json_pack("{s:s, s:s}", "name", "ct", "providertype", "container");
    json_t *ssh = json_pack("{s:s}", "public_key", "ssh-ed25519 AAAA");
    struct taskmsg_ctx c = {.clustername = "zk1",
                            .template = "zookeeper-ensemble",
                            .cluster = cluster,
                            .provider = provider,
                            .tenant = "acme",
                            .job = "42",
                            .nodes_chunks = 1,
                            .ssh = ssh};
    json_t *j = taskmsg_ctx_encode(&c);
    char *s = json_dumps(j, JSON_COMPACT);
    assert_string_equal(s, "{\"v\":1,\"clustername\":\"zk1\",\"template\":\"zookeeper-ensemble\","
                           "\"cluster\":{\"port\":2181},\"provider\":{\"name\":\"ct\","
                           "\"providertype\":\"container\"},\"tenant\":\"acme\",\"job\":\"42\","
                           "\"nodes_chunks\":1,\"ssh\":{\"public_key\":\"ssh-ed25519 AAAA\"}}");
    free(s);
    struct taskmsg_ctx d;
    struct drv_err err;
    assert_int_equal(taskmsg_ctx_decode(j, &d, &err), 0);
    assert_int_equal(d.version, 1);
    assert_string_equal(d.clustername, "zk1");
    assert_ptr_equal(d.cluster, json_object_get(j, "cluster"));
    assert_null(d.resources);
    assert_int_equal(d.nodes_chunks, 1);
    json_object_set_new(j, "v", json_integer(TASKMSG_CTX_VERSION + 1));
    assert_int_equal(taskmsg_ctx_decode(j, &d, &err), DRV_EINVAL);
    assert_non_null(strstr(err.msg, "\"v\""));
    json_object_del(j, "v"); /* written before versions were read: 1 */
    assert_int_equal(taskmsg_ctx_decode(j, &d, &err), 0);
    assert_int_equal(d.version, 1);
    assert_int_equal(taskmsg_ctx_decode(NULL, &d, &err), DRV_EINVAL);
    json_decref(j);
    json_decref(cluster);
    json_decref(provider);
    json_decref(ssh);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keys),
        cmocka_unit_test(test_run_names),
        cmocka_unit_test(test_item_check),
        cmocka_unit_test(test_item_encode),
        cmocka_unit_test(test_run_parse),
        cmocka_unit_test(test_item_read_v1),
        cmocka_unit_test(test_item_roundtrip_v2),
        cmocka_unit_test(test_run_write),
        cmocka_unit_test(test_ctx),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
