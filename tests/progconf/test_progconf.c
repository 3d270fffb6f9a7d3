/*
 * Unit tests for the programs' key tables: the example files in conf/ load,
 * and the keys hold the defaults and bounds docs/configuration.md promises;
 * each module's keys land in that module's options struct.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "droverd_conf.h"
#include "worker_conf.h"

static void test_example_droverd_conf(void **state)
{
    struct droverd_conf c;
    struct drv_err e;
    memset(&c, 0, sizeof(c));
    int rc = config_load(DROVER_SOURCE_DIR "/conf/droverd.conf", droverd_conf_keys(), &c, &e);
    if (rc)
        fail_msg("%s", e.msg);
    assert_string_equal(c.prog.node_id, "droverd-1");
    assert_string_equal(c.api.listen, "127.0.0.1:8080");
    assert_string_equal(c.prog.zk.session.chroot, "");
    assert_int_equal(c.prog.zk.session.session_timeout_ms, 10000);
    assert_int_equal(c.api.max_body, 4 << 20);
    assert_int_equal(c.store.pool_size, 4);
    assert_int_equal(c.api.header_timeout_ms, 10000);
    assert_int_equal(c.api.max_per_source, 256);
    assert_int_equal(c.api.token_ttl_ms, 90L * 86400000L);
    assert_int_equal(c.api.token_cache_ttl_ms, 10000);
    assert_int_equal(c.api.max_heavy_per_user, 1);
    assert_int_equal(c.api.max_heavy_per_tenant, 1);
    assert_int_equal(droverd_conf_check(&c, &e), 0);
    config_free(droverd_conf_keys(), &c);
}

static void test_example_worker_conf(void **state)
{
    struct worker_conf c;
    struct drv_err e;
    memset(&c, 0, sizeof(c));
    int rc = config_load(DROVER_SOURCE_DIR "/conf/drover-worker.conf", worker_conf_keys(), &c, &e);
    if (rc)
        fail_msg("%s", e.msg);
    assert_string_equal(c.worker.tenant, "default");
    assert_int_equal(c.worker.concurrency, 4);
    config_free(worker_conf_keys(), &c);
}

static void test_droverd_requires_zk_and_pg(void **state)
{
    struct droverd_conf c;
    struct drv_err e;
    memset(&c, 0, sizeof(c));
    int rc = config_load_string("x.conf", "zookeeper.hosts = h:1\n", droverd_conf_keys(), &c, &e);
    assert_int_equal(rc, DRV_EINVAL);
    assert_non_null(strstr(e.msg, "required key \"postgres.conninfo\" is missing"));
    config_free(droverd_conf_keys(), &c);
}

static void test_session_timeout_bounds(void **state)
{
    struct worker_conf c;
    struct drv_err e;
    memset(&c, 0, sizeof(c));
    int rc =
        config_load_string("w.conf", "zookeeper.hosts = h:1\nzookeeper.session_timeout = 200ms\n",
                           worker_conf_keys(), &c, &e);
    assert_int_equal(rc, DRV_EINVAL);
    assert_non_null(strstr(e.msg, "w.conf:2: key \"zookeeper.session_timeout\""));
    config_free(worker_conf_keys(), &c);
}

/* The modules' keys fill the modules' own structs, at their own types. */
static void test_modules_fill_their_structs(void **state)
{
    struct droverd_conf c;
    struct drv_err e;
    memset(&c, 0, sizeof(c));
    int rc = config_load_string("d.conf",
                                "zookeeper.hosts = h:1\npostgres.conninfo = host=x\n"
                                "zookeeper.chroot = /d\nlog.level = warn\n"
                                "engine.rollback = false\nengine.txn_budget = 64k\n"
                                "engine.max_failures = 7\nautoscale.worker_slots = 8\n"
                                "engine.plan_threads = 3\n"
                                "api.bootstrap_token_file = /t\nsecrets.key_file = /k\n",
                                droverd_conf_keys(), &c, &e);
    if (rc)
        fail_msg("%s", e.msg);
    assert_string_equal(c.prog.zk.session.hosts, "h:1");
    assert_string_equal(c.prog.zk.session.chroot, "/d");
    assert_string_equal(c.prog.zk.digest_file, "");
    assert_string_equal(c.prog.log.level, "warn");
    assert_string_equal(c.store.conninfo, "host=x");
    assert_true(c.engine.no_rollback);
    assert_int_equal(c.engine.txn_budget, 64 * 1024);
    assert_int_equal(c.engine.max_failures, 7);
    assert_int_equal(c.engine.max_in_flight, 1000);
    assert_int_equal(c.engine.task_timeout_ms, 0);
    assert_int_equal(c.engine.plan_threads, 3);
    assert_int_equal(c.api.scale_worker_slots, 8);
    assert_int_equal(c.api.scale_target_wait_ms, 10000);
    assert_string_equal(c.api.bootstrap_token_file, "/t");
    assert_string_equal(c.api.secrets_key, "/k");
    assert_int_equal(c.shutdown_grace_ms, 10000);
    assert_null(c.engine.node_id); /* the program's to set */
    config_free(droverd_conf_keys(), &c);
    assert_null(c.api.listen);
    assert_null(c.prog.zk.session.hosts);

    struct worker_conf w;
    memset(&w, 0, sizeof(w));
    rc = config_load_string("w.conf",
                            "zookeeper.hosts = h:1\nworker.class = a,b\nworker.grace = 5s\n"
                            "secrets.tenant_key_file = /k\nsecrets.key_file = /fleet\n",
                            worker_conf_keys(), &w, &e);
    if (rc)
        fail_msg("%s", e.msg);
    assert_string_equal(w.worker.classes, "a,b");
    assert_int_equal(w.worker.grace_ms, 5000);
    assert_int_equal(w.worker.resources_keep_ms, 600000);
    assert_string_equal(w.worker.plugin_dir, "plugins");
    assert_string_equal(w.worker.secrets_key_file, "/k");
    assert_string_equal(w.worker.fleet_key_file, "/fleet"); /* read, then refused by the program */
    config_free(worker_conf_keys(), &w);
}

/* The checks a table cannot make: node id and chroot, after the load. */
static void test_finish(void **state)
{
    static const struct {
        const char *text, *msg;
    } cases[] = {
        {"zookeeper.hosts = h:1\nzookeeper.chroot = rel\n",
         "key \"zookeeper.chroot\": \"rel\" must be an absolute path below /"},
        {"zookeeper.hosts = h:1\nzookeeper.chroot = /\n",
         "key \"zookeeper.chroot\": \"/\" must be an absolute path below /"},
        {"zookeeper.hosts = h:1\nnode.id = a/b\n", "key \"node.id\": \"a/b\" may hold only"},
        {"zookeeper.hosts = h:1\nnode.id = ..\n", "key \"node.id\": \"..\" is reserved"},
        {"zookeeper.hosts = h:1\n", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct worker_conf w;
        struct drv_err e;
        memset(&w, 0, sizeof(w));
        drv_err_clear(&e);
        assert_int_equal(config_load_string("w.conf", cases[i].text, worker_conf_keys(), &w, &e),
                         0);
        int rc = prog_conf_finish(&w.prog, "worker", &e);
        if (cases[i].msg && (rc != DRV_EINVAL || !strstr(e.msg, cases[i].msg)))
            fail_msg("case %zu: rc=%d msg=\"%s\"", i, rc, e.msg);
        if (!cases[i].msg) {
            assert_int_equal(rc, 0);
            assert_true(strncmp(w.prog.node_id, "worker-", 7) == 0);
        }
        config_free(worker_conf_keys(), &w);
    }
}

static void test_zk_opts(void **state)
{
    struct worker_conf w;
    struct drv_err e;
    memset(&w, 0, sizeof(w));
    assert_int_equal(
        config_load_string("w.conf", "zookeeper.hosts = h:1\n", worker_conf_keys(), &w, &e), 0);
    struct zk_digest d;
    memset(&d, 0, sizeof(d));
    struct coord_session_opts o;
    prog_zk_opts(&w.prog, &d, &o);
    assert_string_equal(o.hosts, "h:1");
    assert_null(o.chroot); /* "" is none */
    assert_null(o.digest_user);
    assert_int_equal(o.session_timeout_ms, 10000);
    snprintf(d.user, sizeof(d.user), "u");
    snprintf(d.password, sizeof(d.password), "p");
    prog_zk_opts(&w.prog, &d, &o);
    assert_string_equal(o.digest_user, "u");
    assert_string_equal(o.digest_password, "p");
    config_free(worker_conf_keys(), &w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_example_droverd_conf),
        cmocka_unit_test(test_example_worker_conf),
        cmocka_unit_test(test_droverd_requires_zk_and_pg),
        cmocka_unit_test(test_session_timeout_bounds),
        cmocka_unit_test(test_modules_fill_their_structs),
        cmocka_unit_test(test_finish),
        cmocka_unit_test(test_zk_opts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
