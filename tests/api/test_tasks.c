/*
 * Unit tests of the pure parts of the large-job API (src/api/handlers_tasks.c,
 * src/api/links.c): task cursors (one spelling per position, anything else
 * refused), state lists, and a template's links expanded against nodes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "handlers.h"

static void test_cursor(void **state)
{
    char ph[2];
    long idx = -5;
    assert_int_equal(api__task_cursor_parse("f.0", ph, &idx), 0);
    assert_string_equal(ph, "f");
    assert_int_equal(idx, 0);
    assert_int_equal(api__task_cursor_parse("r.140006", ph, &idx), 0);
    assert_string_equal(ph, "r");
    assert_int_equal(idx, 140006);
    const char *bad[] = {"",     "f",   "f.",   "f.x",   "f.01", "f.-1", "g.1", "f.1234567890",
                         "f.1 ", "F.1", "f..1", "f.1.2", NULL};
    for (const char *const *b = bad; *b; b++)
        assert_int_equal(api__task_cursor_parse(*b, ph, &idx), -1);
    assert_int_equal(api__task_cursor_parse(NULL, ph, &idx), -1);
    /* format and parse agree */
    json_t *t = json_pack("{s:s, s:i}", "phase", "r", "idx", 42);
    char out[16];
    api__task_cursor_format(t, out);
    assert_string_equal(out, "r.42");
    assert_int_equal(api__task_cursor_parse(out, ph, &idx), 0);
    assert_int_equal(idx, 42);
    json_decref(t);
}

static void test_states(void **state)
{
    char *s = api__task_states("failed");
    assert_string_equal(s, "{failed}");
    free(s);
    s = api__task_states("queued,running,failed-dependency");
    assert_string_equal(s, "{queued,running,failed-dependency}");
    free(s);
    const char *bad[] = {"",      ",",    "failed,",      ",failed",  "failed,,running",
                         "bogus", "fail", "failed,bogus", "{failed}", NULL};
    for (const char *const *b = bad; *b; b++)
        assert_null(api__task_states(*b));
}

static void test_links(void **state)
{
    json_error_t je;
    json_t *nodes = json_loads(
        "[{\"id\": \"node-10\", \"services\": [\"web\"], \"properties\": {\"hostname\": \"h10\","
        "  \"ipaddresses\": {\"access_v4\": \"10.0.0.10\"}}},"
        " {\"id\": \"node-2\", \"services\": [\"web\", \"lb\"], \"properties\": {\"hostname\":"
        "  \"h2\", \"ipaddresses\": {\"access_v4\": \"10.0.0.2\"}}},"
        " {\"id\": \"node-3\", \"services\": [\"db\"], \"properties\": {}}]",
        0, &je);
    json_t *links =
        json_loads("[{\"label\": \"Web\", \"url\": \"http://%ip.access_v4.service.lb%/\"},"
                   " {\"label\": \"All\", \"url\": \"%join(map(host.service.web,'$:80'),',')%\"},"
                   " {\"label\": \"Db\", \"url\": \"db://%ip.access_v4.service.db%/\"},"
                   " {\"label\": \"Gone\", \"url\": \"http://%ip.service.nothing%/\"},"
                   " {\"label\": \"Bad\", \"url\": \"%unknown.macro%\"},"
                   " {\"label\": \"No url\"}]",
                   0, &je);
    assert_non_null(nodes);
    assert_non_null(links);
    json_t *out = api__links_expand(links, nodes);
    assert_int_equal(json_array_size(out), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(out, 0), "url")),
                        "http://10.0.0.2/");
    assert_string_equal(json_string_value(json_object_get(json_array_get(out, 1), "url")),
                        "h2:80,h10:80"); /* node-2 before node-10 */
    /* a service no node has: the macro stays as written (Coopr's catalogues name optional
       services); node-3 has db but no address yet, so "Db" is left out */
    assert_string_equal(json_string_value(json_object_get(json_array_get(out, 2), "label")),
                        "Gone");
    json_decref(out);
    json_t *none = api__links_expand(NULL, nodes);
    assert_int_equal(json_array_size(none), 0);
    json_decref(none);
    json_decref(links);
    json_decref(nodes);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_cursor), cmocka_unit_test(test_states),
                                       cmocka_unit_test(test_links)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
