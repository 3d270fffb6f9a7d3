/*
 * Unit tests of a plugin's time limit (plugins/lib/plugin.c): the limit is the
 * one the worker enforces (docs/worker.md): the task's timeout_ms, else the
 * "timeout" of the plugin's descriptor, else 30 minutes; the deadline keeps
 * a margin before it. The ssh plugin's own descriptor says 30m: a task without
 * a timeout_ms gets 30 minutes less the margin, not the 10 minutes it had.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin.h"

#define MIN_MS (60 * 1000)

static char tmp[256];

static void descriptor(const char *json)
{
    char path[300];
    snprintf(path, sizeof(path), "%s/plugin.json", tmp);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(json, f);
    fclose(f);
}

static int setup(void **state)
{
    snprintf(tmp, sizeof(tmp), "/tmp/drover-test-deadline.XXXXXX");
    return mkdtemp(tmp) ? 0 : -1;
}

static int teardown(void **state)
{
    char path[300];
    snprintf(path, sizeof(path), "%s/plugin.json", tmp);
    unlink(path);
    rmdir(tmp);
    return 0;
}

static void test_ssh_descriptor(void **state)
{
    struct plugin_task t;
    memset(&t, 0, sizeof(t));
    t.started_ms = 1000000;
    char dir[512];
    snprintf(dir, sizeof(dir), "%s/plugins/ssh", DROVER_SOURCE_DIR);
    /* No timeout_ms: the descriptor's 30m, less the 5 s margin. */
    assert_int_equal(plugin_limit_ms(&t, dir), 30 * MIN_MS);
    assert_int_equal(plugin_deadline_limit_ms(&t, dir), 1000000 + 30 * MIN_MS - 5000);
    /* The task's own limit wins. */
    t.timeout_ms = 2 * MIN_MS;
    assert_int_equal(plugin_limit_ms(&t, dir), 2 * MIN_MS);
    assert_int_equal(plugin_deadline_limit_ms(&t, dir), 1000000 + 2 * MIN_MS - 5000);
}

static void test_other_descriptors(void **state)
{
    struct plugin_task t;
    memset(&t, 0, sizeof(t));
    t.started_ms = 5;
    descriptor("{\"name\":\"x\",\"timeout\":\"90s\"}");
    assert_int_equal(plugin_limit_ms(&t, tmp), 90000);
    assert_int_equal(plugin_deadline_limit_ms(&t, tmp), 5 + 90000 - 5000);
    descriptor("{\"name\":\"x\",\"timeout\":\"10s\"}");
    assert_int_equal(plugin_deadline_limit_ms(&t, tmp), 5 + 10000 - 1000); /* a tenth */
    /* No timeout, or one the worker would refuse: the worker's default, 30 minutes. */
    descriptor("{\"name\":\"x\"}");
    assert_int_equal(plugin_limit_ms(&t, tmp), 30 * MIN_MS);
    descriptor("{\"name\":\"x\",\"timeout\":\"soon\"}");
    assert_int_equal(plugin_limit_ms(&t, tmp), 30 * MIN_MS);
    teardown(NULL);
    assert_int_equal(plugin_limit_ms(&t, tmp), 30 * MIN_MS); /* no descriptor at all */
    setup(NULL);
}

static void test_self_dir(void **state)
{
    /* This test's own directory: where its executable is. */
    const char *d = plugin_self_dir();
    char exe[600];
    snprintf(exe, sizeof(exe), "%s/test_plugin_deadline", d);
    assert_int_equal(access(exe, X_OK), 0);
}

/* plugin_ssh_timeout_ms: the cluster config's ssh.command_timeout, else the default. */
static int ssh_tmo(const char *cluster_json, int def, int *ms)
{
    char text[512];
    snprintf(text, sizeof(text),
             "{\"taskId\": \"1.1.1\", \"taskName\": \"install\", \"config\": {\"cluster\": %s}}",
             cluster_json);
    struct plugin_task t;
    struct drv_err err;
    drv_err_clear(&err);
    assert_int_equal(plugin_task_parse(text, strlen(text), &t, &err), 0);
    int rc = plugin_ssh_timeout_ms(&t, def, ms, &err);
    if (rc != 0)
        assert_non_null(strstr(err.msg, "cluster.ssh.command_timeout"));
    plugin_task_free(&t);
    return rc;
}

static void test_ssh_command_timeout(void **state)
{
    int ms = 0;
    assert_int_equal(ssh_tmo("{}", 15000, &ms), 0);
    assert_int_equal(ms, 15000);
    assert_int_equal(ssh_tmo("{\"ssh\": {\"command_timeout\": \"90s\"}}", 15000, &ms), 0);
    assert_int_equal(ms, 90000);
    assert_int_equal(ssh_tmo("{\"ssh\": {\"command_timeout\": \"2m\"}}", 15000, &ms), 0);
    assert_int_equal(ms, 120000);
    assert_int_equal(ssh_tmo("{\"ssh\": {\"command_timeout\": 2500}}", 15000, &ms), 0);
    assert_int_equal(ms, 2500);
    /* Not a duration, or out of 1 s .. 1 h: an error naming the key, never the default. */
    assert_int_equal(ssh_tmo("{\"ssh\": {\"command_timeout\": \"soon\"}}", 15000, &ms), DRV_EINVAL);
    assert_int_equal(ssh_tmo("{\"ssh\": {\"command_timeout\": 10}}", 15000, &ms), DRV_EINVAL);
    assert_int_equal(ssh_tmo("{\"ssh\": {\"command_timeout\": \"2h\"}}", 15000, &ms), DRV_EINVAL);
    assert_int_equal(ssh_tmo("{\"ssh\": {\"command_timeout\": true}}", 15000, &ms), DRV_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ssh_descriptor),
        cmocka_unit_test_setup_teardown(test_other_descriptors, setup, teardown),
        cmocka_unit_test(test_self_dir),
        cmocka_unit_test(test_ssh_command_timeout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
