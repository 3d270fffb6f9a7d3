/* Unit tests for src/api/http_parse.c: the strict request parser. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"

/* Parse a whole head given as a string; the status, with h released. */
static int head(const char *text, struct api_http_head *out)
{
    struct api_http_head h;
    size_t used = 0;
    int rc = api__http_parse_head(text, strlen(text), 16384, &h, &used);
    if (rc == 0)
        assert_int_equal(used, strlen(text) - strlen(strstr(text, "\r\n\r\n") + 4));
    if (out) {
        *out = h;
        return rc;
    }
    api__http_head_release(&h);
    return rc;
}

/* The same with a NUL at position at. */
static int head_nul(const char *text, size_t at)
{
    size_t n = strlen(text);
    char *b = malloc(n);
    memcpy(b, text, n);
    b[at] = '\0';
    struct api_http_head h;
    size_t used;
    int rc = api__http_parse_head(b, n, 16384, &h, &used);
    api__http_head_release(&h);
    free(b);
    return rc;
}

static void test_good_heads(void **state)
{
    struct api_http_head h;
    assert_int_equal(head("GET /v1/whoami?x=1 HTTP/1.1\r\nHost: a\r\nAuthorization: bearer t\r\n"
                          "Content-Length: 12\r\nConnection: close\r\n\r\nbody",
                          &h),
                     0);
    assert_int_equal(h.method, API_M_GET);
    assert_string_equal(h.path, "/v1/whoami");
    assert_string_equal(h.query, "x=1");
    assert_string_equal(h.host, "a");
    assert_string_equal(h.authorization, "bearer t");
    assert_int_equal(h.content_length, 12);
    assert_false(h.keep_alive);
    assert_string_equal(api__http_header(&h, "CONNECTION"), "close");
    api__http_head_release(&h);
    /* HTTP/1.0 needs no Host and closes by default; blank lines first are skipped. */
    assert_int_equal(head("\r\nPOST /x HTTP/1.0\r\n\r\n", &h), 0);
    assert_int_equal(h.minor, 0);
    assert_false(h.keep_alive);
    assert_int_equal(h.content_length, -1);
    api__http_head_release(&h);
    assert_int_equal(head("PUT /x HTTP/1.1\r\nHost: a\r\nExpect: 100-Continue\r\n\r\n", &h), 0);
    assert_true(h.expect_continue);
    assert_true(h.keep_alive);
    api__http_head_release(&h);
    assert_int_equal(head("PATCH /x HTTP/1.1\r\nHost: a\r\n\r\n", &h), 0);
    assert_int_equal(h.method, API_M_OTHER);
    api__http_head_release(&h);
    assert_int_equal(head("BREW /x HTTP/1.1\r\nHost: a\r\n\r\n", &h), 0);
    assert_int_equal(h.method, API_M_UNKNOWN);
    api__http_head_release(&h);
}

static void test_bad_heads(void **state)
{
    /* Request smuggling and its relatives. */
    assert_int_equal(head("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: "
                          "7\r\n\r\n",
                          NULL),
                     400);
    assert_int_equal(head("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: "
                          "5\r\n\r\n",
                          NULL),
                     400);
    assert_int_equal(head("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 5\r\n\r\n", NULL),
                     400);
    assert_int_equal(head("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\n", NULL), 400);
    assert_int_equal(head("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: "
                          "chunked\r\n\r\n",
                          NULL),
                     400);
    assert_int_equal(
        head("POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n", NULL), 501);
    assert_int_equal(head("GET /x HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", NULL), 400);
    assert_int_equal(head("GET /x HTTP/1.1\r\n\r\n", NULL), 400); /* no Host */
    assert_int_equal(head("GET /x HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n", NULL), 400);
    assert_int_equal(head("GET /x HTTP/1.1\r\nHost : a\r\n\r\n", NULL), 400);
    assert_int_equal(head("GET /x HTTP/1.1\r\nHost: a\r\nExpect: 200-ok\r\n\r\n", NULL), 417);
    assert_int_equal(head("GET /x HTTP/2.0\r\nHost: a\r\n\r\n", NULL), 505);
    assert_int_equal(head("GET /x HTTP/1.1 extra\r\nHost: a\r\n\r\n", NULL), 400);
    assert_int_equal(head("GET  /x HTTP/1.1\r\nHost: a\r\n\r\n", NULL), 400);
    assert_int_equal(head("GET x HTTP/1.1\r\nHost: a\r\n\r\n", NULL), 400);
    assert_int_equal(head("GET http://a/x HTTP/1.1\r\nHost: a\r\n\r\n", NULL), 400);
    assert_int_equal(head("GET /x#f HTTP/1.1\r\nHost: a\r\n\r\n", NULL), 400);
    assert_int_equal(head("GET /x HTTP/1.1\r\nHost: a\r\nX: a\x01"
                          "b\r\n\r\n",
                          NULL),
                     400);
    assert_int_equal(head("GET /x HTTP/1.1\nHost: a\r\n\r\n", NULL), 400); /* bare LF */
    assert_int_equal(head("GET /x HTTP/1.1\r\nHost: a\rX\r\n\r\n", NULL), 400);
    /* A raw NUL anywhere in the head, a header value after a token included. */
    const char *t = "GET /x HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer tok\r\n\r\n";
    assert_int_equal(head_nul(t, strlen("GET /x HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer tok")),
                     400);
    assert_int_equal(head_nul(t, 5), 400);
}

static void test_incomplete_and_limits(void **state)
{
    struct api_http_head h;
    size_t used;
    const char *part = "GET /x HTTP/1.1\r\nHost: a\r\n";
    assert_int_equal(api__http_parse_head(part, strlen(part), 16384, &h, &used), API_HTTP_MORE);
    api__http_head_release(&h);
    /* A NUL is refused before the head is complete: no waiting for the rest. */
    assert_int_equal(api__http_parse_head("GET /\0x", 7, 16384, &h, &used), 400);
    api__http_head_release(&h);
    char big[3000];
    memset(big, 'a', sizeof(big));
    memcpy(big, "GET /x HTTP/1.1\r\nX: ", 20);
    assert_int_equal(api__http_parse_head(big, sizeof(big), 2048, &h, &used), 431);
    api__http_head_release(&h);
    char *line = malloc(API_HTTP_MAX_TARGET + 200);
    memset(line, 'a', API_HTTP_MAX_TARGET + 200);
    memcpy(line, "GET /", 5);
    assert_int_equal(api__http_parse_head(line, API_HTTP_MAX_TARGET + 200, 1 << 20, &h, &used),
                     414);
    api__http_head_release(&h);
    free(line);
}

static int split(const char *path, int *n, char seg0[64])
{
    char *buf, *seg[8], why[160];
    int rc = api__http_split_path(path, &buf, seg, 8, n, why);
    if (rc == 0) {
        snprintf(seg0, 64, "%s", *n ? seg[*n - 1] : "");
        free(buf);
    }
    return rc;
}

static void test_paths(void **state)
{
    int n;
    char last[64];
    assert_int_equal(split("/v1/hardwaretypes/standard-small", &n, last), 0);
    assert_int_equal(n, 3);
    assert_string_equal(last, "standard-small");
    assert_int_equal(split("/v1/a%20b", &n, last), 0);
    assert_string_equal(last, "a b");
    assert_int_equal(split("/", &n, last), 0);
    assert_int_equal(n, 0);
    assert_int_equal(split("/v1/hardwaretypes/standard-small%00junk", &n, last), 400);
    assert_int_equal(split("/v1%2Fhardwaretypes", &n, last), 400);
    assert_int_equal(split("/v1/x%2fy", &n, last), 400);
    assert_int_equal(split("/v1/x%zz", &n, last), 400);
    assert_int_equal(split("/v1/x%4", &n, last), 400);
    assert_int_equal(split("/v1/x%0a", &n, last), 400);
    assert_int_equal(split("/v1/../x", &n, last), 400);
    assert_int_equal(split("/v1/%2e%2E", &n, last), 400);
    assert_int_equal(split("/v1/.", &n, last), 400);
    assert_int_equal(split("/v1//x", &n, last), 404);
    assert_int_equal(split("/v1/x/", &n, last), 404);
    assert_int_equal(split("/a/b/c/d/e/f/g/h/i", &n, last), 404);
}

static void test_query(void **state)
{
    json_t *q;
    char why[160];
    assert_int_equal(api__http_parse_query("a=1&b=x%20y+z&c", &q, why), 0);
    assert_string_equal(json_string_value(json_object_get(q, "b")), "x y z");
    assert_string_equal(json_string_value(json_object_get(q, "c")), "");
    json_decref(q);
    assert_int_equal(api__http_parse_query(NULL, &q, why), 0);
    assert_int_equal(json_object_size(q), 0);
    json_decref(q);
    assert_int_equal(api__http_parse_query("tenant=acme%00x", &q, why), 400);
    assert_null(q);
    assert_int_equal(api__http_parse_query("a=1&a=2", &q, why), 400);
    assert_int_equal(api__http_parse_query("a=%g1", &q, why), 400);
    assert_int_equal(api__http_parse_query("=1", &q, why), 400);
}

static void test_bearer(void **state)
{
    char t[128];
    assert_int_equal(api__http_bearer("Bearer abc", t, sizeof(t)), 0);
    assert_string_equal(t, "abc");
    assert_int_equal(api__http_bearer("bearer abc", t, sizeof(t)), 0);
    assert_int_equal(api__http_bearer("BEARER   abc=", t, sizeof(t)), 0);
    assert_string_equal(t, "abc=");
    assert_int_equal(api__http_bearer("Basic abc", t, sizeof(t)), -1);
    assert_int_equal(api__http_bearer("Bearer", t, sizeof(t)), -1);
    assert_int_equal(api__http_bearer("Bearer a b", t, sizeof(t)), -1);
    assert_int_equal(api__http_bearer("Bearerabc", t, sizeof(t)), -1);
    assert_int_equal(api__http_bearer(NULL, t, sizeof(t)), -1);
    assert_int_equal(api__http_bearer("Bearer abcdef", t, 4), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_heads),
        cmocka_unit_test(test_bad_heads),
        cmocka_unit_test(test_incomplete_and_limits),
        cmocka_unit_test(test_paths),
        cmocka_unit_test(test_query),
        cmocka_unit_test(test_bearer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
