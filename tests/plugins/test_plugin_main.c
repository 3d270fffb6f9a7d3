/*
 * Unit tests of the plugins' shared main() (plugins/lib/plugin.c,
 * plugin_serve): a task runs the action its name picks, or the plugin's
 * "other"; a name the plugin does not serve is refused with the list it
 * serves, before open; a failed check or open runs no action; close always
 * runs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "plugin.h"

struct calls {
    char ran[32]; /* the action that ran, "" for none */
    int checked, opened, closed;
    int fail_check, fail_open;
};

static void act_create(struct plugin_task *t, void *ctx, struct plugin_result *r)
{
    struct calls *c = ctx;
    strcpy(c->ran, "create");
    plugin_result_ok(r, "created");
}

static void act_delete(struct plugin_task *t, void *ctx, struct plugin_result *r)
{
    struct calls *c = ctx;
    strcpy(c->ran, "delete");
    plugin_result_ok(r, "deleted");
}

static void act_other(struct plugin_task *t, void *ctx, struct plugin_result *r)
{
    struct calls *c = ctx;
    strcpy(c->ran, "other");
    plugin_result_ok(r, "ran %s", t->task_name);
}

static int check(struct plugin_task *t, void *ctx, struct plugin_result *r)
{
    struct calls *c = ctx;
    c->checked++;
    if (c->fail_check)
        plugin_result_fail(r, "bad config");
    return c->fail_check ? -1 : 0;
}

static int open_(struct plugin_task *t, void *ctx, struct plugin_result *r)
{
    struct calls *c = ctx;
    c->opened++;
    if (c->fail_open)
        plugin_result_fail(r, "cannot open");
    return c->fail_open ? -1 : 0;
}

static void close_(void *ctx)
{
    struct calls *c = ctx;
    c->closed++;
}

static const struct plugin_action actions[] = {
    {"create", act_create}, {"confirm", act_create}, {"delete", act_delete}, {NULL, NULL}};

static const struct plugin_def def = {
    .name = "test", .actions = actions, .check = check, .open = open_, .close = close_};

/* Serve a task named name with def; c says what ran, r how it went (the caller inits it). */
static void serve(const struct plugin_def *d, const char *name, struct calls *c,
                  struct plugin_result *r)
{
    char text[256];
    snprintf(text, sizeof(text), "{\"taskId\":\"1.2.1\",\"taskName\":\"%s\",\"config\":{}}", name);
    struct plugin_task t;
    struct drv_err err;
    assert_int_equal(plugin_task_parse(text, strlen(text), &t, &err), 0);
    plugin_result_init(r);
    plugin_serve(d, c, &t, r);
    plugin_task_free(&t);
}

static void done(struct plugin_result *r)
{
    json_decref(r->result);
    json_decref(r->sensitive);
}

static void test_dispatch(void **state)
{
    struct calls c = {0};
    struct plugin_result r;
    serve(&def, "delete", &c, &r);
    assert_string_equal(c.ran, "delete");
    assert_true(r.ok);
    assert_string_equal(r.message, "deleted");
    assert_int_equal(c.checked + c.opened + c.closed, 3);
    done(&r);

    memset(&c, 0, sizeof(c));
    serve(&def, "confirm", &c, &r);
    assert_string_equal(c.ran, "create");
    done(&r);
}

static void test_refused(void **state)
{
    struct calls c = {0};
    struct plugin_result r;
    serve(&def, "install", &c, &r);
    assert_false(r.ok);
    assert_string_equal(r.message, "test serves create, confirm and delete, not \"install\"");
    assert_string_equal(c.ran, "");
    /* Checked first, never opened, closed. */
    assert_int_equal(c.checked, 1);
    assert_int_equal(c.opened, 0);
    assert_int_equal(c.closed, 1);
    done(&r);

    /* With one or two names. */
    static const struct plugin_action one[] = {{"create", act_create}, {NULL, NULL}};
    static const struct plugin_action two[] = {
        {"create", act_create}, {"delete", act_delete}, {NULL, NULL}};
    struct plugin_def d = {.name = "p", .actions = one};
    serve(&d, "x", &c, &r);
    assert_string_equal(r.message, "p serves create, not \"x\"");
    done(&r);
    d.actions = two;
    serve(&d, "x", &c, &r);
    assert_string_equal(r.message, "p serves create and delete, not \"x\"");
    done(&r);
}

static void test_other(void **state)
{
    struct plugin_def d = def;
    d.other = act_other;
    struct calls c = {0};
    struct plugin_result r;
    serve(&d, "install", &c, &r);
    assert_string_equal(c.ran, "other");
    assert_true(r.ok);
    assert_string_equal(r.message, "ran install");
    assert_int_equal(c.opened, 1);
    done(&r);
    /* The table still wins. */
    memset(&c, 0, sizeof(c));
    serve(&d, "create", &c, &r);
    assert_string_equal(c.ran, "create");
    done(&r);
}

static void test_failed_hooks(void **state)
{
    struct calls c = {.fail_check = 1};
    struct plugin_result r;
    serve(&def, "create", &c, &r);
    assert_false(r.ok);
    assert_string_equal(r.message, "bad config");
    assert_string_equal(c.ran, "");
    assert_int_equal(c.opened, 0);
    assert_int_equal(c.closed, 1);
    done(&r);

    memset(&c, 0, sizeof(c));
    c.fail_open = 1;
    serve(&def, "create", &c, &r);
    assert_false(r.ok);
    assert_string_equal(r.message, "cannot open");
    assert_string_equal(c.ran, "");
    assert_int_equal(c.closed, 1);
    done(&r);

    /* No hooks at all. */
    struct plugin_def bare = {.name = "bare", .actions = actions};
    memset(&c, 0, sizeof(c));
    serve(&bare, "create", &c, &r);
    assert_true(r.ok);
    assert_string_equal(c.ran, "create");
    done(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dispatch),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_other),
        cmocka_unit_test(test_failed_hooks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
