/* Unit tests for src/api's pure parts: tokens, sealed secrets, redaction, routing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "seal.h"
#include "api_int.h"
#include "guard.h"
#include "handlers.h"
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

static void test_seal_any_value(void **state)
{
    unsigned char key[32] = {9};
    const struct seal_place at = {"acme", "cluster", "c1", "config.x"};
    const char *cases[] = {
        "\"text\"", "42", "3.5", "true", "[1,\"a\",{\"b\":null}]", "{\"user\":\"u\",\"pw\":[1,2]}",
        "\"\""};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *v = json_loads(cases[i], JSON_DECODE_ANY, NULL);
        char *t = seal_value_at(key, &at, v);
        assert_true(strncmp(t, "enc:v2:", 7) == 0);
        json_t *back = NULL;
        struct drv_err err;
        assert_int_equal(seal_open_at(key, &at, t, &back, &err), 0);
        assert_true(json_equal(v, back));
        json_decref(back);
        /* what the API shows in its place */
        json_t *o = json_pack("{s:s}", "pw", t);
        api_redact(o);
        assert_string_equal(json_string_value(json_object_get(o, "pw")), "********");
        json_decref(o);
        free(t);
        json_decref(v);
    }
}

/* api__seal on a call with a key: every sensitive value at any depth, any type. */
static void test_seal_tree(void **state)
{
    unsigned char key[32] = {3};
    struct call c;
    memset(&c, 0, sizeof(c));
    c.key = key;
    snprintf(c.who.tenant, sizeof(c.who.tenant), "acme");
    const struct api__place pl = {"cluster", "c1", "config"};
    json_t *j = json_loads("{\"db\": {\"root_password\": {\"a\": 1}, \"port\": 5},"
                           " \"list\": [{\"api_key\": 7}], \"auth\": {\"pin\": 1234},"
                           " \"TOKEN\": [1, 2], \"empty_secret\": \"\"}",
                           0, NULL);
    json_t *marked = json_loads("[\"auth.pin\"]", 0, NULL);
    assert_int_equal(api__seal(&c, j, NULL, marked, &pl, "config"), 0);
    const char *sealed[] = {"/db/root_password", "/list/0/api_key", "/auth/pin", "/TOKEN"};
    json_t *at[] = {json_object_get(json_object_get(j, "db"), "root_password"),
                    json_object_get(json_array_get(json_object_get(j, "list"), 0), "api_key"),
                    json_object_get(json_object_get(j, "auth"), "pin"),
                    json_object_get(j, "TOKEN")};
    /* each sealed under the tenant's key at its own place (the list index included) */
    const char *fields[] = {"config.db.root_password", "config.list[0].api_key", "config.auth.pin",
                            "config.TOKEN"};
    unsigned char tkey[32];
    seal_tenant_key(key, "acme", tkey);
    for (int i = 0; i < 4; i++) {
        if (!json_is_string(at[i]) || strncmp(json_string_value(at[i]), "enc:v2:", 7) != 0)
            fail_msg("%s not sealed", sealed[i]);
        struct seal_place sp = {"acme", "cluster", "c1", fields[i]};
        json_t *back = NULL;
        struct drv_err err;
        if (seal_open_at(tkey, &sp, json_string_value(at[i]), &back, &err) != 0)
            fail_msg("%s does not open at %s: %s", sealed[i], fields[i], err.msg);
        json_decref(back);
    }
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "db"), "port")), 5);
    assert_string_equal(json_string_value(json_object_get(j, "empty_secret")), "");
    /* "********" keeps the stored value; with none stored it is refused. */
    json_t *again = json_loads("{\"db\": {\"root_password\": \"********\"}}", 0, NULL);
    assert_int_equal(api__seal(&c, again, j, NULL, &pl, "config"), 0);
    assert_true(json_equal(json_object_get(json_object_get(again, "db"), "root_password"), at[0]));
    json_decref(again);
    again = json_loads("{\"password\": \"********\"}", 0, NULL);
    assert_int_not_equal(api__seal(&c, again, NULL, NULL, &pl, "config"), 0);
    assert_int_equal(c.status, 400);
    assert_string_equal(c.field, "config.password");
    json_decref(again);
    /* Without a key a sensitive value is refused. */
    memset(&c, 0, sizeof(c));
    json_t *nokey = json_loads("{\"x\": {\"secret\": 1}}", 0, NULL);
    assert_int_not_equal(api__seal(&c, nokey, NULL, NULL, &pl, "config"), 0);
    assert_int_equal(c.status, 422);
    assert_string_equal(c.code, "no-secrets-key");
    json_decref(nokey);
    /* Redaction hides both forms. */
    api_redact(j);
    char *text = json_dumps(j, JSON_COMPACT);
    assert_null(strstr(text, "enc:"));
    free(text);
    json_decref(j);
    json_decref(marked);
}

/* Input that looks sealed is refused with 422 naming the field (only the API seals). */
static void test_refuse_sealed(void **state)
{
    struct call c;
    memset(&c, 0, sizeof(c));
    json_t *ok = json_loads("{\"a\": \"encrypted?\", \"b\": [\"x\", {\"c\": \"enc\"}]}", 0, NULL);
    assert_int_equal(api__refuse_sealed(&c, ok), 0);
    json_decref(ok);
    json_t *bad =
        json_loads("{\"a\": 1, \"config\": {\"list\": [\"x\", \"enc:v2:AAAA\"]}}", 0, NULL);
    assert_int_not_equal(api__refuse_sealed(&c, bad), 0);
    assert_int_equal(c.status, 422);
    assert_string_equal(c.code, "sealed-input");
    assert_string_equal(c.field, "config.list[1]");
    json_decref(bad);
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

static void test_scale_workers(void **state)
{
    (void)state;
    /* Idle: none; anything queued or running: at least one. */
    assert_int_equal(api__scale_workers(0, 0, 0, 1, 10, 4), 0);
    assert_int_equal(api__scale_workers(1, 0, 0, 0.01, 10, 4), 1);
    assert_int_equal(api__scale_workers(0, 3, 0, 0.01, 10, 4), 1);
    /* Backlog: 400 waiting tasks of 1 s within 10 s = 40 slots = 10 workers of 4. */
    assert_int_equal(api__scale_workers(400, 0, 0, 1, 10, 4), 10);
    /* Arrivals: 8 tasks/s of 2 s keep 16 slots busy = 4 workers; plus the backlog's. */
    assert_int_equal(api__scale_workers(0, 16, 8, 2, 10, 4), 4);
    assert_int_equal(api__scale_workers(20, 16, 8, 2, 10, 4), 5);
    /* Exact multiples do not round up; bad inputs are clamped. */
    assert_int_equal(api__scale_workers(40, 0, 0, 1, 10, 4), 1);
    assert_int_equal(api__scale_workers(-5, 0, -1, -1, 0, 0), 0);
}

/* The heavy quota: the tenant's own (who->heavy) over the default, never above heavy_max. */
static void test_guard_heavy_quota(void **state)
{
    (void)state;
    struct api_guard_limits l = {.per_user = 100,
                                 .per_tenant = 100,
                                 .heavy_per_user = 10,
                                 .heavy_per_tenant = 1,
                                 .heavy_wait_per_tenant = 5,
                                 .heavy_max = 2};
    struct api_guard *g = api__guard_new(&l);
    struct api_principal a = {.role = ROLE_USER, .user_id = "1", .tenant_id = "10"};
    struct api_principal b = {.role = ROLE_USER, .user_id = "2", .tenant_id = "20", .heavy = 2};
    struct api_principal c = {.role = ROLE_USER, .user_id = "3", .tenant_id = "30", .heavy = 9};
    /* a: the default, 1 */
    assert_int_equal(api__guard_admit(g, &a, true), API_ADMIT_NOW);
    assert_int_equal(api__guard_admit(g, &a, true), API_ADMIT_WAIT);
    /* b: its own, 2 */
    assert_int_equal(api__guard_admit(g, &b, true), API_ADMIT_NOW);
    assert_int_equal(api__guard_admit(g, &b, true), API_ADMIT_NOW);
    assert_int_equal(api__guard_admit(g, &b, true), API_ADMIT_WAIT);
    /* c: asks 9, cut to heavy_max (the node's heavy threads - 1) */
    assert_int_equal(api__guard_admit(g, &c, true), API_ADMIT_NOW);
    assert_int_equal(api__guard_admit(g, &c, true), API_ADMIT_NOW);
    assert_int_equal(api__guard_admit(g, &c, true), API_ADMIT_WAIT);
    api__guard_free(g);
    /* The quota travels with the cached token. */
    l.token_ttl_ms = 60000;
    g = api__guard_new(&l);
    const char *tok = "drv_0123456789abcdef_0123456789abcdef0123456789abcdef";
    struct api_principal got;
    api__guard_token_put(g, tok, &b, 0);
    assert_true(api__guard_token_get(g, tok, &got));
    assert_int_equal(got.heavy, 2);
    api__guard_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_token_parse),     cmocka_unit_test(test_token_hash),
        cmocka_unit_test(test_sensitive_names), cmocka_unit_test(test_redact),
        cmocka_unit_test(test_routes),          cmocka_unit_test(test_seal_any_value),
        cmocka_unit_test(test_seal_tree),       cmocka_unit_test(test_scale_workers),
        cmocka_unit_test(test_refuse_sealed),   cmocka_unit_test(test_guard_heavy_quota),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
