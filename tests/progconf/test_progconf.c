/*
 * Unit tests for the programs' key tables: the example files in conf/ load,
 * and the keys hold the defaults and bounds docs/configuration.md promises.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "progconf.h"

static void test_example_droverd_conf(void **state)
{
    struct droverd_conf c;
    struct drv_err e;
    memset(&c, 0, sizeof(c));
    int rc = config_load(DROVER_SOURCE_DIR "/conf/droverd.conf", droverd_conf_keys, &c, &e);
    if (rc)
        fail_msg("%s", e.msg);
    assert_string_equal(c.common.node_id, "droverd-1");
    assert_string_equal(c.http_listen, "127.0.0.1:8080");
    assert_string_equal(c.common.zk_chroot, "");
    assert_int_equal(c.common.zk_session_ms, 10000);
    assert_int_equal(c.http_max_body, 4 << 20);
    assert_int_equal(c.pg_pool_size, 4);
    assert_int_equal(c.http_header_timeout_ms, 10000);
    assert_int_equal(c.http_max_per_source, 256);
    assert_int_equal(c.token_ttl_ms, 90L * 86400000L);
    assert_int_equal(c.token_cache_ttl_ms, 10000);
    assert_int_equal(c.max_heavy_per_user, 2);
    config_free(droverd_conf_keys, &c);
}

static void test_example_worker_conf(void **state)
{
    struct worker_conf c;
    struct drv_err e;
    memset(&c, 0, sizeof(c));
    int rc = config_load(DROVER_SOURCE_DIR "/conf/drover-worker.conf", worker_conf_keys, &c, &e);
    if (rc)
        fail_msg("%s", e.msg);
    assert_string_equal(c.tenant, "default");
    assert_int_equal(c.concurrency, 4);
    config_free(worker_conf_keys, &c);
}

static void test_droverd_requires_zk_and_pg(void **state)
{
    struct droverd_conf c;
    struct drv_err e;
    memset(&c, 0, sizeof(c));
    int rc = config_load_string("x.conf", "zookeeper.hosts = h:1\n", droverd_conf_keys, &c, &e);
    assert_int_equal(rc, DRV_EINVAL);
    assert_non_null(strstr(e.msg, "required key \"postgres.conninfo\" is missing"));
    config_free(droverd_conf_keys, &c);
}

static void test_session_timeout_bounds(void **state)
{
    struct worker_conf c;
    struct drv_err e;
    memset(&c, 0, sizeof(c));
    int rc =
        config_load_string("w.conf", "zookeeper.hosts = h:1\nzookeeper.session_timeout = 200ms\n",
                           worker_conf_keys, &c, &e);
    assert_int_equal(rc, DRV_EINVAL);
    assert_non_null(strstr(e.msg, "w.conf:2: key \"zookeeper.session_timeout\""));
    config_free(worker_conf_keys, &c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_example_droverd_conf),
        cmocka_unit_test(test_example_worker_conf),
        cmocka_unit_test(test_droverd_requires_zk_and_pg),
        cmocka_unit_test(test_session_timeout_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
