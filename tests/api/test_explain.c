/*
 * Unit tests of the API's explanations (src/api/explain.c): every reason a
 * waiting task can have, from a job as store_job_get returns it, and a page
 * of tasks from the compact form (dependencies' rows and busy tasks apart).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "api_int.h"

/* A task row: phase f, index i. */
static json_t *task(int i, const char *id, const char *node, const char *svc, const char *act,
                    const char *status, const char *deps, const char *strategy)
{
    json_error_t je;
    return json_pack("{s:s, s:i, s:s, s:s?, s:s?, s:s, s:s, s:o, s:s?}", "phase", "f", "idx", i,
                     "id", id, "node_id", node, "service", svc, "action", act, "status", status,
                     "deps", json_loads(deps, 0, &je), "strategy", strategy);
}

static const char *reason(json_t *job, int i)
{
    return json_string_value(json_object_get(
        json_object_get(json_array_get(json_object_get(job, "tasks"), i), "why"), "reason"));
}

static void test_reasons(void **state)
{
    json_t *tasks = json_array();
    json_array_append_new(tasks,
                          task(0, "n1/create", "n1", NULL, "create", "succeeded", "[]", NULL));
    json_array_append_new(tasks,
                          task(1, "n1/db/install", "n1", "db", "install", "running", "[0]", NULL));
    json_array_append_new(
        tasks, task(2, "n1/db/configure", "n1", "db", "configure", "waiting", "[1]", NULL));
    json_array_append_new(
        tasks, task(3, "n1/web/install", "n1", "web", "install", "waiting", "[0]", NULL));
    json_array_append_new(tasks,
                          task(4, "n2/create", "n2", NULL, "create", "succeeded", "[]", NULL));
    json_array_append_new(
        tasks, task(5, "n2/db/install", "n2", "db", "install", "waiting", "[4]", "one-by-one"));
    json_array_append_new(tasks, task(6, "n3/create", "n3", NULL, "create", "queued", "[]", NULL));
    json_array_append_new(tasks, task(7, "n4/create", "n4", NULL, "create", "waiting", "[]", NULL));
    json_t *job = json_pack("{s:s, s:o}", "status", "running", "tasks", tasks);
    api__explain(job);
    assert_null(reason(job, 0));
    assert_null(reason(job, 1));
    assert_string_equal(reason(job, 2), "dependency");
    json_t *w = json_object_get(json_array_get(tasks, 2), "why");
    assert_string_equal(json_string_value(json_object_get(w, "task")), "n1/db/install");
    assert_string_equal(json_string_value(json_object_get(w, "status")), "running");
    assert_non_null(strstr(json_string_value(json_object_get(w, "text")), "n1/db/install"));
    assert_string_equal(reason(job, 3), "node");
    assert_string_equal(reason(job, 5), "strategy");
    assert_string_equal(reason(job, 6), "queued");
    assert_string_equal(reason(job, 7), "ready");
    json_object_set_new(job, "status", json_string("paused"));
    api__explain(job);
    assert_string_equal(reason(job, 7), "paused");
    json_object_set_new(job, "status", json_string("rolling-back"));
    api__explain(job);
    assert_string_equal(reason(job, 7), "stopping");
    json_decref(job);
}

/* A page of tasks explained from the compact form: the dependencies' rows and the busy
   tasks given apart, as the paged list reads them (a dependency outside the page). */
static void test_page(void **state)
{
    json_t *page = json_array();
    json_array_append_new(
        page, task(7, "n2/db/configure", "n2", "db", "configure", "waiting", "[3]", NULL));
    json_array_append_new(page,
                          task(8, "n3/db/install", "n3", "db", "install", "waiting", "[4]", NULL));
    json_array_append_new(
        page, task(9, "n4/web/install", "n4", "web", "install", "waiting", "[5]", "one-by-one"));
    json_array_append_new(page,
                          task(10, "n5/create", "n5", NULL, "create", "waiting", "[6]", NULL));
    json_error_t je;
    json_t *deps = json_loads("{\"3\": {\"idx\": 3, \"id\": \"n2/db/install\", \"status\": "
                              "\"failed\"},"
                              " \"4\": {\"idx\": 4, \"id\": \"n3/create\", \"status\": "
                              "\"succeeded\"},"
                              " \"5\": {\"idx\": 5, \"id\": \"n4/create\", \"status\": "
                              "\"skipped\"}}",
                              0, &je);
    json_t *busy = json_loads("[{\"id\": \"n3/base/install\", \"node_id\": \"n3\", \"service\": "
                              "\"base\", \"action\": \"install\", \"status\": \"running\"},"
                              " {\"id\": \"n9/web/install\", \"node_id\": \"n9\", \"service\": "
                              "\"web\", \"action\": \"install\", \"status\": \"queued\"}]",
                              0, &je);
    assert_non_null(deps);
    assert_non_null(busy);
    api__explain_tasks(page, "running", deps, busy);
    json_t *job = json_pack("{s:O}", "tasks", page);
    assert_string_equal(reason(job, 0), "dependency"); /* n2/db/install failed */
    assert_string_equal(reason(job, 1), "node");       /* n3 busy with n3/base/install */
    assert_string_equal(reason(job, 2), "strategy");   /* web/install one-by-one, one queued */
    assert_string_equal(reason(job, 3), "ready");      /* dependency 6 not given: done */
    json_decref(job);
    /* The status a phase is explained under. */
    assert_string_equal(api__explain_status("rolling-back", "r", true), "running");
    assert_string_equal(api__explain_status("rolling-back", "f", true), "failed");
    assert_string_equal(api__explain_status("running", "f", false), "running");
    api__explain_tasks(page, api__explain_status("rolling-back", "f", true), deps, busy);
    json_t *job2 = json_pack("{s:O}", "tasks", page);
    assert_string_equal(reason(job2, 3), "stopping");
    json_decref(job2);
    json_decref(page);
    json_decref(deps);
    json_decref(busy);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_reasons), cmocka_unit_test(test_page)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
