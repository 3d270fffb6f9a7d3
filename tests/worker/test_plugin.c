/*
 * Unit tests of plugin descriptors (src/worker/plugin.c): the shipped test
 * plugins load, selection prefers an exact type over "*", and every kind of
 * bad descriptor is refused with the file and the field named.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "worker_int.h"
#include "xalloc.h"

static char tmpdir[256];

static void put(const char *name, const char *json, bool with_exe)
{
    char *d = xasprintf("%s/%s", tmpdir, name);
    mkdir(d, 0755);
    char *f = xasprintf("%s/plugin.json", d);
    FILE *fp = fopen(f, "w");
    assert_non_null(fp);
    fputs(json, fp);
    fclose(fp);
    if (with_exe) {
        char *e = xasprintf("%s/run", d);
        fp = fopen(e, "w");
        fputs("#!/bin/sh\n", fp);
        fclose(fp);
        chmod(e, 0755);
        free(e);
    }
    free(f);
    free(d);
}

static void clear(void)
{
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s/*", tmpdir);
    assert_int_equal(system(cmd), 0);
}

static void test_select(void **state)
{
    clear();
    put("shell",
        "{\"name\":\"shell\",\"type\":\"automator\",\"executable\":\"run\","
        "\"actiontypes\":[\"shell\",\"ssh\"],\"timeout\":\"90s\",\"wants\":[\"nodes\"],"
        "\"fields\":{\"password\":{\"sensitive\":true}}}",
        true);
    put("any",
        "{\"name\":\"any\",\"type\":\"automator\",\"executable\":\"builtin:noop\","
        "\"actiontypes\":[\"*\"]}",
        false);
    put("cloud",
        "{\"name\":\"cloud\",\"type\":\"provider\",\"executable\":\"run\","
        "\"providertypes\":[\"aws\"]}",
        true);
    struct worker__plugins *ps;
    struct drv_err err;
    assert_int_equal(worker__plugins_load(tmpdir, &ps, &err), 0);
    assert_int_equal(ps->n, 3);
    const struct worker__plugin *p = worker__plugins_find(ps, WORKER__AUTOMATOR, "ssh");
    assert_string_equal(p->name, "shell");
    assert_int_equal(p->timeout_ms, 90000);
    assert_true(p->wants_nodes);
    assert_true(worker__plugin_sensitive(p, "password"));
    assert_false(worker__plugin_sensitive(p, "user"));
    assert_string_equal(worker__plugins_find(ps, WORKER__AUTOMATOR, "chef-solo")->name, "any");
    assert_string_equal(worker__plugins_find(ps, WORKER__AUTOMATOR, "chef-solo")->builtin, "noop");
    assert_string_equal(worker__plugins_find(ps, WORKER__PROVIDER, "aws")->name, "cloud");
    assert_null(worker__plugins_find(ps, WORKER__PROVIDER, "google"));
    assert_true(worker__is_provider_task("confirm"));
    assert_false(worker__is_provider_task("install"));
    worker__plugins_free(ps);
}

static void expect_error(const char *json, bool exe, const char *needle)
{
    clear();
    put("bad", json, exe);
    struct worker__plugins *ps = NULL;
    struct drv_err err;
    assert_int_equal(worker__plugins_load(tmpdir, &ps, &err), DRV_EINVAL);
    assert_null(ps);
    if (!strstr(err.msg, needle))
        fail_msg("error \"%s\" lacks \"%s\"", err.msg, needle);
    assert_non_null(strstr(err.msg, "plugin"));
}

static void test_bad(void **state)
{
    expect_error("{", false, "plugin.json:");
    expect_error("{\"name\":\"Bad\",\"type\":\"automator\"}", false, "field \"name\"");
    expect_error("{\"name\":\"b\",\"type\":\"both\",\"executable\":\"run\"}", true,
                 "field \"type\"");
    expect_error("{\"name\":\"b\",\"type\":\"automator\",\"executable\":\"run\"}", true,
                 "field \"actiontypes\"");
    expect_error("{\"name\":\"b\",\"type\":\"provider\",\"executable\":\"run\","
                 "\"providertypes\":[]}",
                 true, "field \"providertypes\"");
    expect_error("{\"name\":\"b\",\"type\":\"automator\",\"executable\":\"../x\","
                 "\"actiontypes\":[\"a\"]}",
                 true, "field \"executable\"");
    expect_error("{\"name\":\"b\",\"type\":\"automator\",\"executable\":\"missing\","
                 "\"actiontypes\":[\"a\"]}",
                 true, "is not executable");
    expect_error("{\"name\":\"b\",\"type\":\"automator\",\"executable\":\"builtin:ls\","
                 "\"actiontypes\":[\"a\"]}",
                 true, "builtin:noop");
    expect_error("{\"name\":\"b\",\"type\":\"automator\",\"executable\":\"run\","
                 "\"actiontypes\":[\"a\"],\"timeout\":\"soon\"}",
                 true, "field \"timeout\"");
}

static void test_two_serve_one_type(void **state)
{
    clear();
    put("one",
        "{\"name\":\"one\",\"type\":\"automator\",\"executable\":\"run\","
        "\"actiontypes\":[\"shell\"]}",
        true);
    put("two",
        "{\"name\":\"two\",\"type\":\"automator\",\"executable\":\"run\","
        "\"actiontypes\":[\"shell\"]}",
        true);
    struct worker__plugins *ps = NULL;
    struct drv_err err;
    assert_int_equal(worker__plugins_load(tmpdir, &ps, &err), DRV_EINVAL);
    assert_non_null(strstr(err.msg, "both serve action type \"shell\""));
}

static void test_missing_dir(void **state)
{
    struct worker__plugins *ps = NULL;
    struct drv_err err;
    assert_int_equal(worker__plugins_load("/nonexistent/plugins", &ps, &err), DRV_ENOENT);
}

static int setup(void **state)
{
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/drover-test-plugin-XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    return 0;
}

static int teardown(void **state)
{
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_select),
        cmocka_unit_test(test_bad),
        cmocka_unit_test(test_two_serve_one_type),
        cmocka_unit_test(test_missing_dir),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
