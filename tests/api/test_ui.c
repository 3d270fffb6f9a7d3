/*
 * Unit tests for src/api/ui.c: the dashboard's static files. A directory is
 * made in /tmp with files, a subdirectory, a dotfile, a symbolic link out of
 * it and a file of an unknown type; then requests are answered from the table.
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

#include "http.h"
#include "ui.h"

static char dir[64];

static void put(const char *name, const char *text)
{
    char p[256];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int setup(void **state)
{
    snprintf(dir, sizeof(dir), "/tmp/drover-ui-test.XXXXXX");
    assert_non_null(mkdtemp(dir));
    char p[256];
    snprintf(p, sizeof(p), "%s/js", dir);
    mkdir(p, 0755);
    put("index.html", "<!doctype html><title>x</title>");
    put("app.css", "body{}");
    put("js/app.js", "export const x = 1;");
    put(".secret.js", "no");
    put("notes.md", "not served: unknown type");
    snprintf(p, sizeof(p), "%s/passwd.txt", dir);
    assert_int_equal(symlink("/etc/passwd", p), 0);
    return 0;
}

static int teardown(void **state)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void answer(const struct api_ui *u, int method, const char *path, const char *inm,
                   struct api_ui_reply *r)
{
    api_ui_answer(u, method, path, inm, r);
    /* Every answer, errors too, carries the policy. */
    assert_non_null(strstr(r->headers, "Content-Security-Policy: default-src 'none'; "
                                       "script-src 'self'"));
    assert_non_null(strstr(r->headers, "X-Content-Type-Options: nosniff"));
}

static void test_load_and_serve(void **state)
{
    struct drv_err err;
    drv_err_clear(&err);
    struct api_ui *u = api_ui_load(dir, &err);
    assert_non_null(u);
    /* index.html, app.css, js/app.js: not the dotfile, the .md, the link. */
    assert_int_equal(api_ui_count(u), 3);

    struct api_ui_reply r;
    answer(u, API_M_GET, "/ui/", NULL, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.type, "text/html; charset=utf-8");
    assert_int_equal(r.len, strlen("<!doctype html><title>x</title>"));
    assert_non_null(strstr(r.headers, "Cache-Control: no-cache"));
    char *etag = strstr(r.headers, "ETag: \"");
    assert_non_null(etag);
    char tag[64];
    assert_int_equal(sscanf(etag, "ETag: %63s", tag), 1);
    assert_int_equal(strlen(tag), 34);

    answer(u, API_M_GET, "/ui/index.html", tag, &r);
    assert_int_equal(r.status, 304);
    assert_null(r.body);
    answer(u, API_M_GET, "/ui/index.html", "\"other\"", &r);
    assert_int_equal(r.status, 200);

    answer(u, API_M_HEAD, "/ui/js/app.js", NULL, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.type, "text/javascript; charset=utf-8");
    answer(u, API_M_GET, "/ui/app.css", NULL, &r);
    assert_string_equal(r.type, "text/css; charset=utf-8");

    answer(u, API_M_GET, "/ui", NULL, &r);
    assert_int_equal(r.status, 301);
    assert_non_null(strstr(r.headers, "Location: /ui/\r\n"));
    api_ui_free(u);
}

static void test_refused(void **state)
{
    struct drv_err err;
    struct api_ui *u = api_ui_load(dir, &err);
    assert_non_null(u);
    struct api_ui_reply r;
    static const struct {
        const char *path;
        int status;
    } cases[] = {
        {"/ui/../secret", 400},   {"/ui/%2e%2e/etc/passwd", 400},
        {"/ui/js%2Fapp.js", 400}, {"/ui/./index.html", 400},
        {"/ui/%00", 400},         {"/ui/js/", 404},
        {"/ui//index.html", 404}, {"/ui/.secret.js", 404},
        {"/ui/notes.md", 404},    {"/ui/passwd.txt", 404},
        {"/ui/nothing.js", 404},  {"/ui/a/b/c/d/e/f.js", 404},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        answer(u, API_M_GET, cases[i].path, NULL, &r);
        if (r.status != cases[i].status)
            fail_msg("%s: %d, expected %d", cases[i].path, r.status, cases[i].status);
        assert_non_null(r.code);
        assert_null(r.body);
    }
    /* A name longer than any in the table, which would be cut to fit the lookup's buffer. */
    char longp[700];
    snprintf(longp, sizeof(longp), "/ui/index.html%0600d", 0);
    answer(u, API_M_GET, longp, NULL, &r);
    assert_int_equal(r.status, 404);
    answer(u, API_M_POST, "/ui/index.html", NULL, &r);
    assert_int_equal(r.status, 405);
    assert_string_equal(r.code, "method-not-allowed");
    assert_non_null(strstr(r.headers, "Allow: GET, HEAD\r\n"));
    answer(u, API_M_UNKNOWN, "/ui/", NULL, &r);
    assert_int_equal(r.status, 501);
    api_ui_free(u);

    /* No dashboard: 404, the API's error. */
    answer(NULL, API_M_GET, "/ui/", NULL, &r);
    assert_int_equal(r.status, 404);
    assert_string_equal(r.code, "not-found");
    assert_null(api_ui_load("/nonexistent-drover-ui", &err));
    assert_int_equal(err.code, DRV_ENOENT);
}

static void test_paths(void **state)
{
    assert_true(api_ui_path("/ui"));
    assert_true(api_ui_path("/ui/"));
    assert_true(api_ui_path("/ui/x.js"));
    assert_false(api_ui_path("/uix"));
    assert_false(api_ui_path("/v1/ui"));
}

/* The shipped ui/ directory loads, and has what index.html needs. */
static void test_shipped(void **state)
{
    char p[512];
    snprintf(p, sizeof(p), "%s/ui", DROVER_SOURCE_DIR);
    struct drv_err err;
    struct api_ui *u = api_ui_load(p, &err);
    assert_non_null(u);
    struct api_ui_reply r;
    api_ui_answer(u, API_M_GET, "/ui/", NULL, &r);
    assert_int_equal(r.status, 200);
    /* No inline script: every <script> names a src. */
    char *html = strndup(r.body, r.len);
    for (char *s = strstr(html, "<script"); s; s = strstr(s + 1, "<script")) {
        char *end = strchr(s, '>');
        assert_non_null(end);
        *end = '\0';
        assert_non_null(strstr(s, " src="));
        *end = '>';
    }
    free(html);
    api_ui_free(u);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_load_and_serve, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
        cmocka_unit_test(test_paths),
        cmocka_unit_test(test_shipped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
