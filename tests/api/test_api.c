/* Unit tests for src/api's pure parts: tokens, sealed secrets, redaction, routing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "api_int.h"
#include "http.h"
#include "xalloc.h"

static const char good[] =
    "drv_0123456789abcdef_00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

static void test_token_parse(void **state)
{
    char id[17], secret[65];
    assert_int_equal(api_token_parse(good, id, secret), 0);
    assert_string_equal(id, "0123456789abcdef");
    assert_string_equal(secret, good + 21);
    /* wrong prefix, length, separator, upper case, non-hex */
    assert_int_not_equal(api_token_parse("xyz", id, secret), 0);
    assert_int_not_equal(api_token_parse(good + 1, id, secret), 0);
    char t[sizeof(good)];
    memcpy(t, good, sizeof(good));
    t[20] = '-';
    assert_int_not_equal(api_token_parse(t, id, secret), 0);
    memcpy(t, good, sizeof(good));
    t[30] = 'A';
    assert_int_not_equal(api_token_parse(t, id, secret), 0);
    memcpy(t, good, sizeof(good));
    t[5] = 'g';
    assert_int_not_equal(api_token_parse(t, id, secret), 0);
}

static void test_token_hash(void **state)
{
    unsigned char salt[4] = {1, 2, 3, 4}, salt2[4] = {1, 2, 3, 5};
    char h1[65], h2[65], h3[65];
    api_token_hash(salt, sizeof(salt), "secret", h1);
    api_token_hash(salt, sizeof(salt), "secret", h2);
    api_token_hash(salt2, sizeof(salt2), "secret", h3);
    assert_int_equal(strlen(h1), 64);
    assert_string_equal(h1, h2);       /* deterministic */
    assert_string_not_equal(h1, h3);   /* salted */
    assert_null(strstr(h1, "secret")); /* not the secret */
    /* SHA-256("") with an empty salt: a known vector */
    api_token_hash(NULL, 0, "", h1);
    assert_string_equal(h1, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

static void test_sensitive_names(void **state)
{
    assert_true(api_field_sensitive("api_password"));
    assert_true(api_field_sensitive("API_KEY"));
    assert_true(api_field_sensitive("ssh_private_key"));
    assert_true(api_field_sensitive("client_secret"));
    assert_true(api_field_sensitive("auth_token"));
    assert_false(api_field_sensitive("aws_region"));
    assert_false(api_field_sensitive("ssh_keypair"));
    assert_false(api_field_sensitive("api_user"));
}

static void test_seal_roundtrip(void **state)
{
    unsigned char key[32], other[32];
    for (int i = 0; i < 32; i++) {
        key[i] = (unsigned char)i;
        other[i] = (unsigned char)(i + 1);
    }
    char *a = api_secret_encrypt(key, "hunter2");
    char *b = api_secret_encrypt(key, "hunter2");
    assert_true(strncmp(a, "enc:v1:", 7) == 0);
    assert_null(strstr(a, "hunter2"));
    assert_string_not_equal(a, b); /* a fresh nonce each time */
    char *plain = NULL;
    struct drv_err err;
    assert_int_equal(api_secret_decrypt(key, a, &plain, &err), 0);
    assert_string_equal(plain, "hunter2");
    free(plain);
    /* the wrong key, a flipped byte, garbage: refused */
    assert_int_not_equal(api_secret_decrypt(other, a, &plain, &err), 0);
    assert_null(plain);
    a[10] = a[10] == 'A' ? 'B' : 'A';
    assert_int_not_equal(api_secret_decrypt(key, a, &plain, &err), 0);
    assert_int_not_equal(api_secret_decrypt(key, "enc:v1:abc", &plain, &err), 0);
    assert_int_not_equal(api_secret_decrypt(key, "plain", &plain, &err), 0);
    /* empty text seals and opens */
    char *e = api_secret_encrypt(key, "");
    assert_int_equal(api_secret_decrypt(key, e, &plain, &err), 0);
    assert_string_equal(plain, "");
    free(plain);
    free(e);
    free(a);
    free(b);
}

static void test_redact(void **state)
{
    json_t *j = json_loads("{\"a\": \"enc:v1:xxxx\", \"b\": \"plain\", \"c\": {\"d\": "
                           "[\"enc:v1:yy\", 3]}}",
                           0, NULL);
    api_redact(j);
    char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(s, "{\"a\":\"********\",\"b\":\"plain\",\"c\":{\"d\":[\"********\",3]}}");
    free(s);
    json_decref(j);
}

/* Route a method and path as the server does. */
static int route(int method, const char *path, int *status)
{
    struct call c;
    memset(&c, 0, sizeof(c));
    c.method = method;
    c.path = xstrdup(path);
    char why[160];
    int st = api__http_split_path(path, &c.segbuf, c.seg, CALL_MAX_SEGS, &c.nseg, why);
    int rc = st ? -1 : api__route(&c);
    *status = st ? st : c.status;
    free(c.path);
    free(c.segbuf);
    return rc;
}

static void test_routes(void **state)
{
    int st;
    assert_int_equal(route(API_M_GET, "/v1/providers", &st), 0);
    assert_int_equal(route(API_M_GET, "/v1/clustertemplates/lamp", &st), 0);
    assert_int_equal(route(API_M_PUT, "/v1/services/x", &st), 0);
    assert_int_equal(route(API_M_POST, "/v1/clusters/12/expand", &st), 0);
    assert_int_equal(route(API_M_DELETE, "/v1/clusters/12", &st), 0);
    assert_int_equal(route(API_M_GET, "/v1/jobs/3/plan", &st), 0);
    assert_int_equal(route(API_M_HEAD, "/v1/whoami", &st), 0);
    assert_int_not_equal(route(API_M_GET, "/v1/gizmos", &st), 0);
    assert_int_equal(st, 404);
    assert_int_not_equal(route(API_M_GET, "/v1/providers/a/b", &st), 0);
    assert_int_equal(st, 404);
    assert_int_not_equal(route(API_M_PUT, "/v1/providers", &st), 0);
    assert_int_equal(st, 405);
    assert_int_not_equal(route(API_M_DELETE, "/v1/import", &st), 0);
    assert_int_equal(st, 405);
    assert_int_not_equal(route(API_M_OTHER, "/v1/providers", &st), 0); /* PATCH */
    assert_int_equal(st, 405);
    assert_int_not_equal(route(API_M_UNKNOWN, "/v1/providers", &st), 0);
    assert_int_equal(st, 501);
    assert_int_not_equal(route(API_M_GET, "/v1/hardwaretypes/a%2Fb", &st), 0);
    assert_int_equal(st, 400);
    assert_int_not_equal(route(API_M_GET, "/v1%2Fhardwaretypes", &st), 0);
    assert_int_equal(st, 400);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_token_parse),     cmocka_unit_test(test_token_hash),
        cmocka_unit_test(test_sensitive_names), cmocka_unit_test(test_seal_roundtrip),
        cmocka_unit_test(test_redact),          cmocka_unit_test(test_routes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
