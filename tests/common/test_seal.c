/*
 * Unit tests of seal (src/common/seal.c), the format of docs/security.md's
 * "Sealed values": a value opens only with its tenant's key and at its own
 * place (tenant, entity kind and name, field path); a moved, tampered or
 * wrongly keyed value fails with DRV_ETLS and no message carries its text;
 * the tenant key is HKDF-SHA256 of the fleet key (a known answer); trees
 * open value by value naming the failing path; the legacy format (enc:v1,
 * enc:j1) is migrated in place and refused everywhere else.
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

#include "hex.h"
#include "seal.h"
#include "xalloc.h"

/* The fleet key 00 01 .. 1f. */
static unsigned char fleet[32];
/* Legacy values under it (AES-256-GCM, zero nonce, no AAD), made with Python's cryptography. */
#define LEGACY_TEXT "enc:v1:AAAAAAAAAAAAAAAAZsnbqtBesYtpuwgZp8YqWk2WujCIKgA=" /* "hunter2" */
#define LEGACY_JSON                                                                                \
    "enc:j1:AAAAAAAAAAAAAAAAdZ7U/I93spE69dRWZdZXERkfwyqiDJz73pqh" /* {"a":[1,2]}                   \
                                                                   */

static const struct seal_place here = {"acme", "provider", "aws", "provisioner.api_password"};

static int setup(void **state)
{
    (void)state;
    for (int i = 0; i < 32; i++)
        fleet[i] = (unsigned char)i;
    return 0;
}

static void test_tenant_key(void **state)
{
    (void)state;
    unsigned char a[32], a2[32], b[32];
    char hex[65];
    seal_tenant_key(fleet, "acme", a);
    seal_tenant_key(fleet, "acme", a2);
    seal_tenant_key(fleet, "globex", b);
    hex_encode(a, 32, hex);
    /* HKDF-SHA256(ikm = fleet, salt = "drover-seal", info = "drover tenant key v2:acme") */
    assert_string_equal(hex, "dc35f2e3f4bb3df8160d77ff479e28c8f159f95ef259466d9c8d3084f328d572");
    assert_memory_equal(a, a2, 32);
    assert_memory_not_equal(a, b, 32);
    assert_memory_not_equal(a, fleet, 32);
}

static void test_roundtrip(void **state)
{
    (void)state;
    unsigned char k[32];
    seal_tenant_key(fleet, "acme", k);
    json_t *s = json_string("hunter2"), *o = json_pack("{s:[i,s]}", "a", 1, "x");
    char *es = seal_value_at(k, &here, s), *eo = seal_value_at(k, &here, o);
    assert_true(strncmp(es, "enc:v2:", 7) == 0);
    assert_true(seal_looks_sealed(es) && !seal_is_legacy(es));
    assert_null(strstr(es, "hunter2"));
    json_t *back;
    struct drv_err err;
    assert_int_equal(seal_open_at(k, &here, es, &back, &err), 0);
    assert_true(json_equal(back, s));
    json_decref(back);
    assert_int_equal(seal_open_at(k, &here, eo, &back, &err), 0);
    assert_true(json_equal(back, o));
    json_decref(back);
    free(es);
    free(eo);
    json_decref(s);
    json_decref(o);
}

/* The place is bound: another tenant, kind, entity or field does not open, and says nothing. */
static void test_place_bound(void **state)
{
    (void)state;
    unsigned char k[32], kb[32];
    seal_tenant_key(fleet, "acme", k);
    seal_tenant_key(fleet, "globex", kb);
    json_t *s = json_string("hunter2");
    char *es = seal_value_at(k, &here, s);
    const struct seal_place moved[] = {
        {"globex", "provider", "aws", "provisioner.api_password"}, /* another tenant, same key */
        {"acme", "clustertemplate", "aws", "provisioner.api_password"}, /* another kind */
        {"acme", "provider", "gce", "provisioner.api_password"},        /* another entity */
        {"acme", "provider", "aws", "provisioner.username"},            /* another field */
        {"acme", "provider", "aws", "provisioner.api_password[0]"},
        {"acme", "provider", "awsprovisioner.", "api_password"}, /* no ambiguity in the joins */
    };
    json_t *back = NULL;
    struct drv_err err;
    for (size_t i = 0; i < sizeof(moved) / sizeof(moved[0]); i++) {
        assert_int_equal(seal_open_at(k, &moved[i], es, &back, &err), DRV_ETLS);
        assert_null(back);
        assert_null(strstr(err.msg, "hunter2"));
        assert_non_null(strstr(err.msg, "does not open here"));
    }
    /* another tenant's key, at the right place */
    assert_int_equal(seal_open_at(kb, &here, es, &back, &err), DRV_ETLS);
    /* the fleet key itself opens nothing */
    assert_int_equal(seal_open_at(fleet, &here, es, &back, &err), DRV_ETLS);
    free(es);
    json_decref(s);
}

static void test_tamper(void **state)
{
    (void)state;
    unsigned char k[32];
    seal_tenant_key(fleet, "acme", k);
    json_t *s = json_string("hunter2");
    char *es = seal_value_at(k, &here, s);
    json_t *back = NULL;
    struct drv_err err;
    for (size_t i = 7; i < strlen(es) - 2; i += 5) {
        char *t = xstrdup(es);
        t[i] = t[i] == 'A' ? 'B' : 'A';
        int rc = seal_open_at(k, &here, t, &back, &err);
        assert_true(rc == DRV_ETLS || rc == DRV_EINVAL);
        assert_null(back);
        free(t);
    }
    assert_int_equal(seal_open_at(k, &here, "enc:v2:AAAA", &back, &err), DRV_EINVAL);
    assert_int_equal(seal_open_at(k, &here, "plain", &back, &err), DRV_EINVAL);
    assert_int_equal(seal_open_at(k, &here, LEGACY_TEXT, &back, &err), DRV_EINVAL);
    assert_non_null(strstr(err.msg, "old format"));
    free(es);
    json_decref(s);
}

static void test_open_tree(void **state)
{
    (void)state;
    unsigned char k[32];
    seal_tenant_key(fleet, "acme", k);
    struct seal_place a = {"acme", "cluster", "c1", "config.db.password"};
    struct seal_place b = {"acme", "cluster", "c1", "config.list[1]"};
    json_t *pw = json_string("pw"), *num = json_integer(7);
    char *ea = seal_value_at(k, &a, pw), *eb = seal_value_at(k, &b, num);
    json_t *j = json_pack("{s:{s:s}, s:[s, s], s:s}", "db", "password", ea, "list", "x", eb,
                          "plain", "not sealed");
    struct seal_place base = {"acme", "cluster", "c1", "config"};
    struct drv_err err;
    assert_int_equal(seal_open_tree(k, &base, j, &err), 0);
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "db"), "password")),
                        "pw");
    assert_int_equal(json_integer_value(json_array_get(json_object_get(j, "list"), 1)), 7);
    json_decref(j);
    /* the same value one field over fails, and the message names the path only */
    j = json_pack("{s:{s:s}}", "db", "user", ea);
    assert_int_equal(seal_open_tree(k, &base, j, &err), DRV_ETLS);
    assert_non_null(strstr(err.msg, "config.db.user"));
    assert_null(strstr(err.msg, "pw\""));
    json_decref(j);
    /* something that only looks sealed is refused, not passed on */
    j = json_pack("{s:s}", "x", "enc:v9:whatever");
    assert_int_equal(seal_open_tree(k, &base, j, &err), DRV_EINVAL);
    assert_non_null(strstr(err.msg, "config.x"));
    json_decref(j);
    free(ea);
    free(eb);
    json_decref(pw);
    json_decref(num);
}

static void test_migrate(void **state)
{
    (void)state;
    json_t *back;
    struct drv_err err;
    assert_int_equal(seal_open_legacy(fleet, LEGACY_TEXT, &back, &err), 0);
    assert_string_equal(json_string_value(back), "hunter2");
    json_decref(back);
    json_t *prov = json_pack("{s:s, s:{s:s}, s:s}", "api_password", LEGACY_TEXT, "deep", "k",
                             LEGACY_JSON, "region", "eu");
    struct seal_place base = {"acme", "provider", "aws", "provisioner"};
    int n = -1;
    assert_int_equal(seal_migrate_tree(fleet, &base, prov, &n, &err), 0);
    assert_int_equal(n, 2);
    const char *pw = json_string_value(json_object_get(prov, "api_password"));
    assert_true(strncmp(pw, "enc:v2:", 7) == 0);
    unsigned char k[32];
    seal_tenant_key(fleet, "acme", k);
    /* migrated values open at their place with the tenant key, and only there */
    json_t *copy = json_deep_copy(prov);
    assert_int_equal(seal_open_tree(k, &base, copy, &err), 0);
    assert_string_equal(json_string_value(json_object_get(copy, "api_password")), "hunter2");
    json_t *want = json_pack("{s:[i,i]}", "a", 1, 2);
    assert_true(json_equal(json_object_get(json_object_get(copy, "deep"), "k"), want));
    json_decref(want);
    json_decref(copy);
    assert_int_equal(seal_open_at(k, &here, pw, &back, &err),
                     0); /* here = provisioner.api_password */
    json_decref(back);
    struct seal_place other = {"acme", "provider", "gce", "provisioner.api_password"};
    assert_int_equal(seal_open_at(k, &other, pw, &back, &err), DRV_ETLS);
    /* a second run changes nothing */
    assert_int_equal(seal_migrate_tree(fleet, &base, prov, &n, &err), 0);
    assert_int_equal(n, 0);
    json_decref(prov);
    /* under another fleet key it fails and leaves the tree as it was */
    unsigned char wrong[32] = {9};
    prov = json_pack("{s:s, s:s}", "a", LEGACY_TEXT, "b", LEGACY_TEXT);
    json_t *before = json_deep_copy(prov);
    assert_int_equal(seal_migrate_tree(wrong, &base, prov, &n, &err), DRV_ETLS);
    assert_true(json_equal(prov, before));
    assert_non_null(strstr(err.msg, "provisioner.a"));
    json_decref(prov);
    json_decref(before);
}

static void test_key_file(void **state)
{
    (void)state;
    char path[] = "/tmp/drover-test-seal-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *hex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n";
    assert_int_equal(write(fd, hex, strlen(hex)), (ssize_t)strlen(hex));
    close(fd);
    unsigned char k[32];
    struct drv_err err;
    chmod(path, 0600);
    assert_int_equal(seal_key_load("secrets.key_file", path, k, &err), 0);
    assert_int_equal(k[31], 0x1f);
    chmod(path, 0644);
    assert_int_equal(seal_key_load("secrets.key_file", path, k, &err), DRV_EINVAL);
    assert_non_null(strstr(err.msg, "readable by others"));
    unlink(path);
    assert_int_equal(seal_key_load("secrets.tenant_key_file", path, k, &err), DRV_EIO);
    assert_non_null(strstr(err.msg, "secrets.tenant_key_file"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_tenant_key, setup),
        cmocka_unit_test_setup(test_roundtrip, setup),
        cmocka_unit_test_setup(test_place_bound, setup),
        cmocka_unit_test_setup(test_tamper, setup),
        cmocka_unit_test_setup(test_open_tree, setup),
        cmocka_unit_test_setup(test_migrate, setup),
        cmocka_unit_test_setup(test_key_file, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
