/*
 * Unit tests for macro: every form the Coopr catalogue uses, the order of
 * nodes, unresolved and strict modes, plan-time checks, errors with their
 * paths, and every macro in the fixtures' templates.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

/* node-10 sorts after node-2 (natural order); node-3 has no zookeeper. */
static const char nodes_json[] =
    "{\"node-10\": {\"hostname\": \"h10\", \"ipaddresses\": {\"access_v4\": \"10.0.0.10\","
    "  \"bind_v4\": \"192.168.0.10\"}, \"services\": [\"base\", \"zookeeper-server\","
    "  \"hive-metastore\"]},"
    " \"node-1\": {\"hostname\": \"h1\", \"ipaddresses\": {\"access_v4\": \"10.0.0.1\","
    "  \"bind_v4\": \"192.168.0.1\"}, \"services\": [\"base\", \"zookeeper-server\","
    "  \"hadoop-hdfs-namenode\"]},"
    " \"node-2\": {\"hostname\": \"h2\", \"ipaddresses\": {\"access_v4\": \"10.0.0.2\"},"
    "  \"services\": [\"base\", \"zookeeper-server\"]},"
    " \"node-3\": {\"hostname\": \"h3\", \"ipaddresses\": {\"access_v4\": \"10.0.0.3\"},"
    "  \"services\": [\"base\", \"nginx\"]}}";

static json_t *nodes;

static int setup(void **state)
{
    nodes = json_loads(nodes_json, 0, NULL);
    return nodes ? 0 : -1;
}

static int teardown(void **state)
{
    json_decref(nodes);
    return 0;
}

/*
 * Expand s for self (may be NULL) and compare; returns the rc. Every case runs
 * twice: from the nodes map, and from the same map sorted and indexed once
 * (macro_cluster_new), which must give the same answer.
 */
static int ex(const char *s, const char *self, unsigned flags, const char *want)
{
    struct macro_cluster *mc = macro_cluster_new(nodes);
    struct macro_ctx c = {.nodes = nodes, .self = self, .owner = NULL};
    struct macro_ctx c2 = {.cluster = mc, .self = self, .owner = NULL};
    char *out = NULL, *out2 = NULL;
    struct drv_err err, err2;
    drv_err_clear(&err);
    int rc = macro_expand_string(s, &c, flags, &out, &err);
    int rc2 = macro_expand_string(s, &c2, flags, &out2, &err2);
    assert_int_equal(rc, rc2);
    if (out || out2)
        assert_string_equal(out ? out : "(null)", out2 ? out2 : "(null)");
    if (want) {
        if (rc != 0)
            fail_msg("\"%s\": %s", s, err.msg);
        assert_string_equal(out, want);
    }
    free(out);
    free(out2);
    macro_cluster_free(mc);
    return rc;
}

/* The error message of expanding s (static buffer). */
static const char *errmsg(const char *s, const char *self, unsigned flags, int want_rc)
{
    static struct drv_err err;
    struct macro_ctx c = {.nodes = nodes, .self = self};
    char *out = (char *)1;
    drv_err_clear(&err);
    assert_int_equal(macro_expand_string(s, &c, flags, &out, &err), want_rc);
    assert_null(out);
    return err.msg;
}

static void test_service_lists(void **state)
{
    ex("%host.service.zookeeper-server%", NULL, 0, "h1,h2,h10");
    ex("hdfs://%host.service.hadoop-hdfs-namenode%:8020", NULL, 0, "hdfs://h1:8020");
    ex("%ip.service.zookeeper-server%", NULL, 0, "192.168.0.1,10.0.0.2,192.168.0.10");
    ex("%ip.access_v4.service.zookeeper-server%", NULL, 0, "10.0.0.1,10.0.0.2,10.0.0.10");
    ex("%ip.bind_v4.service.hive-metastore%", NULL, 0, "192.168.0.10");
    ex("%host.service.zookeeper-server[0]%:%host.service.zookeeper-server[2]%", NULL, 0, "h1:h10");
    ex("%ip.access_v4.service.zookeeper-server[1]%", NULL, 0, "10.0.0.2");
    ex("%num.service.zookeeper-server% of %num.service.base%", NULL, 0, "3 of 4");
    ex("%num.service.absent%", NULL, 0, "0");
}

static void test_join_map(void **state)
{
    ex("%join(map(host.service.zookeeper-server,'$:2181'),',')%/cdap", NULL, 0,
       "h1:2181,h2:2181,h10:2181/cdap");
    ex("%join(map(ip.bind_v4.service.hive-metastore,'thrift://$:9083'),',')%", NULL, 0,
       "thrift://192.168.0.10:9083");
    ex("%join(host.service.zookeeper-server, ' ')%", NULL, 0, "h1 h2 h10");
    ex("% join ( map ( host.service.zookeeper-server , \"[$]\" ) , \";\" ) %", NULL, 0,
       "[h1];[h2];[h10]");
    ex("%map(host.service.zookeeper-server,'$$$')%", NULL, 0, "$h1,$h2,$h10");
    ex("%join(ip.access_v4.service.zookeeper-server,'\\n')%", NULL, 0,
       "10.0.0.1\n10.0.0.2\n10.0.0.10");
    ex("%join(map(host.service.zookeeper-server,'s.$=$'),'')%", NULL, 0, "s.h1=h1s.h2=h2s.h10=h10");
}

static void test_self(void **state)
{
    ex("%instance.self.service.zookeeper-server%", "node-1", 0, "1");
    ex("%instance.self.service.zookeeper-server%", "node-10", 0, "3");
    ex("%host.self%/%ip.self%/%ip.access_v4.self%", "node-10", 0, "h10/192.168.0.10/10.0.0.10");
    ex("%ip.bind_v4.self%", "node-1", 0, "192.168.0.1");
    ex("%host.self.service.nginx%", "node-3", 0, "h3");
    ex("%ip.self.service.nginx%", "node-3", 0, "10.0.0.3");
    /* Unresolved: left as written (Coopr), or an error when strict. */
    ex("%host.self.service.nginx%", "node-1", 0, "%host.self.service.nginx%");
    ex("x%instance.self.service.nginx%y", "node-2", 0, "x%instance.self.service.nginx%y");
    ex("%host.self%", NULL, 0, "%host.self%");
    assert_non_null(strstr(errmsg("%host.self.service.nginx%", "node-1", MACRO_STRICT, DRV_ENOENT),
                           "nothing on the cluster answers it"));
    assert_non_null(strstr(errmsg("%host.self%", "node-9", 0, DRV_EINVAL),
                           "node \"node-9\" is not in the cluster"));
}

static void test_unresolved_and_strict(void **state)
{
    ex("%host.service.hive-server2%", NULL, 0, "%host.service.hive-server2%");
    ex("%host.service.zookeeper-server[3]%", NULL, 0, "%host.service.zookeeper-server[3]%");
    ex("%join(map(host.service.absent,'$:1'),',')%", NULL, 0,
       "%join(map(host.service.absent,'$:1'),',')%");
    ex("%cluster.owner%", NULL, 0, "%cluster.owner%");
    assert_int_equal(ex("%host.service.hive-server2%", NULL, MACRO_STRICT, NULL), DRV_ENOENT);
    assert_int_equal(ex("%host.service.zookeeper-server[3]%", NULL, MACRO_STRICT, NULL),
                     DRV_ENOENT);
    struct macro_ctx c = {.nodes = nodes, .owner = "alice"};
    char *out = NULL;
    assert_int_equal(macro_expand_string("by %cluster.owner%", &c, 0, &out, NULL), 0);
    assert_string_equal(out, "by alice");
    free(out);
}

static void test_percent(void **state)
{
    ex("100%", NULL, 0, "100%");
    ex("%%host.service.zookeeper-server%%", NULL, 0, "%host.service.zookeeper-server%");
    ex("50%% of %num.service.base%", NULL, 0, "50% of 4");
    ex("", NULL, 0, "");
    ex("no macro", NULL, 0, "no macro");
}

static void test_errors(void **state)
{
    const char *m = errmsg("%hosts.service.zk%", NULL, 0, DRV_EINVAL);
    assert_string_equal(m, "macro \"%hosts.service.zk%\": unknown macro");
    assert_non_null(strstr(errmsg("%host.servce.zk%", NULL, 0, DRV_EINVAL), "unknown macro"));
    assert_non_null(strstr(errmsg("%ip.service.%", NULL, 0, DRV_EINVAL), "no service name"));
    assert_non_null(strstr(errmsg("%join(host.service.zk)%", NULL, 0, DRV_EINVAL), "join("));
    assert_non_null(strstr(errmsg("%map(host.service.zk,$)%", NULL, 0, DRV_EINVAL), "map("));
    assert_non_null(strstr(errmsg("%map(host.service.zk,'$'%", NULL, 0, DRV_EINVAL), "map("));
    assert_non_null(
        strstr(errmsg("%host.service.zookeeper-server[x]%", NULL, 0, DRV_EINVAL), "[<index>]"));
    assert_non_null(strstr(errmsg("%num.service.zk[0]%", NULL, 0, DRV_EINVAL), "no index"));
    assert_non_null(strstr(errmsg("% %", NULL, 0, DRV_EINVAL), "expected a macro name"));
    assert_non_null(strstr(errmsg("%host.self extra%", "node-1", 0, DRV_EINVAL), "unexpected"));
    assert_non_null(strstr(errmsg("%ip.BAD.service.zk%", NULL, 0, DRV_EINVAL), "address type"));
    /* Two lone percent signs around text make a macro: unknown. */
    assert_non_null(strstr(errmsg("50% or 60%", NULL, 0, DRV_EINVAL), "macro \"% or 60%\""));
}

static void test_missing_data(void **state)
{
    /* node-2 has no bind_v4: asked for explicitly, that is missing data. */
    const char *m = errmsg("%ip.bind_v4.service.zookeeper-server%", NULL, 0, DRV_EAGAIN);
    assert_non_null(strstr(m, "node \"node-2\" has no ipaddresses.bind_v4 yet"));
    json_t *fresh = json_loads("{\"node-1\": {\"services\": [\"zk\"]}}", 0, NULL);
    struct macro_ctx c = {.nodes = fresh, .self = "node-1"};
    struct drv_err err;
    assert_int_equal(macro_expand_string("%host.service.zk%", &c, 0, NULL, &err), DRV_EAGAIN);
    assert_non_null(strstr(err.msg, "has no hostname yet"));
    /* Once the node is confirmed, missing data is final: an error, not a wait. */
    json_object_set_new(json_object_get(fresh, "node-1"), "confirmed", json_true());
    assert_int_equal(macro_expand_string("%host.service.zk%", &c, 0, NULL, &err), DRV_EINVAL);
    assert_non_null(strstr(err.msg, "node \"node-1\" has no hostname (its provider's confirm"));
    json_object_del(json_object_get(fresh, "node-1"), "confirmed");
    /* At plan time the same macros check out. */
    char *out = NULL;
    assert_int_equal(macro_expand_string("%join(map(host.service.zk,'$:1'),',')% "
                                         "%instance.self.service.zk%",
                                         &c, MACRO_CHECK | MACRO_STRICT, &out, &err),
                     0);
    assert_string_equal(out, "%join(map(host.service.zk,'$:1'),',')% %instance.self.service.zk%");
    free(out);
    assert_int_equal(
        macro_expand_string("%host.service.nope%", &c, MACRO_CHECK | MACRO_STRICT, NULL, &err),
        DRV_ENOENT);
    assert_int_equal(macro_expand_string("%hots.service.zk%", &c, MACRO_CHECK, NULL, &err),
                     DRV_EINVAL);
    json_decref(fresh);
}

static void test_json_walk(void **state)
{
    json_t *in = json_loads("{\"zk\": {\"servers\": [\"%host.service.zookeeper-server[0]%\","
                            " \"%ip.access_v4.service.zookeeper-server[1]%\"],"
                            " \"myid\": \"%instance.self.service.zookeeper-server%\","
                            " \"port\": 2181, \"on\": true, \"none\": null},"
                            " \"%host.self%\": \"keys stay\"}",
                            0, NULL);
    assert_non_null(in);
    char *before = json_dumps(in, JSON_SORT_KEYS);
    struct macro_ctx c = {.nodes = nodes, .self = "node-2"};
    json_t *out = NULL;
    struct drv_err err;
    assert_int_equal(macro_expand(in, &c, 0, "cluster", &out, &err), 0);
    char *after = json_dumps(in, JSON_SORT_KEYS);
    assert_string_equal(before, after); /* the input is not changed */
    char *got = json_dumps(out, JSON_SORT_KEYS | JSON_COMPACT);
    assert_string_equal(got, "{\"%host.self%\":\"keys stay\",\"zk\":{\"myid\":\"2\",\"none\":null,"
                             "\"on\":true,\"port\":2181,\"servers\":[\"h1\",\"10.0.0.2\"]}}");
    free(before);
    free(after);
    free(got);
    json_decref(out);
    /* An error names the value's path. */
    json_object_set_new(json_object_get(in, "zk"), "bad",
                        json_pack("[s, s]", "ok", "%host.service.zk[%"));
    out = (json_t *)1;
    assert_int_equal(macro_expand(in, &c, 0, "cluster", &out, &err), DRV_EINVAL);
    assert_null(out);
    assert_non_null(strstr(err.msg, "cluster.zk.bad[1]: macro \"%host.service.zk[%\""));
    json_decref(in);
}

static void test_deterministic_order(void **state)
{
    /* The same nodes in any JSON order give the same expansion. */
    json_t *a = json_loads("{\"n-10\": {\"hostname\": \"x10\", \"services\": [\"s\"]},"
                           " \"n-9\": {\"hostname\": \"x9\", \"services\": [\"s\"]},"
                           " \"n-09b\": {\"hostname\": \"x09b\", \"services\": [\"s\"]}}",
                           0, NULL);
    json_t *b = json_loads("{\"n-09b\": {\"hostname\": \"x09b\", \"services\": [\"s\"]},"
                           " \"n-9\": {\"hostname\": \"x9\", \"services\": [\"s\"]},"
                           " \"n-10\": {\"hostname\": \"x10\", \"services\": [\"s\"]}}",
                           0, NULL);
    char *oa = NULL, *ob = NULL;
    struct macro_ctx ca = {.nodes = a}, cb = {.nodes = b};
    assert_int_equal(macro_expand_string("%host.service.s%", &ca, 0, &oa, NULL), 0);
    assert_int_equal(macro_expand_string("%host.service.s%", &cb, 0, &ob, NULL), 0);
    assert_string_equal(oa, "x9,x09b,x10");
    assert_string_equal(oa, ob);
    free(oa);
    free(ob);
    json_decref(a);
    json_decref(b);
}

/* Every macro in the Coopr fixtures' templates checks out at plan time. */
static void test_fixture_templates(void **state)
{
    char dir[1024];
    snprintf(dir, sizeof(dir), "%s/../shared/fixtures/coopr-templates/clustertemplates",
             DROVER_SOURCE_DIR);
    DIR *d = opendir(dir);
    if (!d)
        skip();
    struct dirent *de;
    int files = 0;
    while ((de = readdir(d))) {
        if (!strstr(de->d_name, ".json"))
            continue;
        char path[1300];
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        json_t *t = json_load_file(path, 0, NULL);
        assert_non_null(t);
        struct drv_err err;
        struct macro_ctx c = {.nodes = nodes, .self = "node-1"};
        if (macro_expand(t, &c, MACRO_CHECK, de->d_name, NULL, &err) != 0)
            fail_msg("%s", err.msg);
        json_t *out = NULL;
        if (macro_expand(t, &c, 0, de->d_name, &out, &err) != 0)
            fail_msg("%s", err.msg);
        json_decref(out);
        json_decref(t);
        files++;
    }
    closedir(d);
    assert_true(files >= 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_service_lists),
        cmocka_unit_test(test_join_map),
        cmocka_unit_test(test_self),
        cmocka_unit_test(test_unresolved_and_strict),
        cmocka_unit_test(test_percent),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_missing_data),
        cmocka_unit_test(test_json_walk),
        cmocka_unit_test(test_deterministic_order),
        cmocka_unit_test(test_fixture_templates),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
