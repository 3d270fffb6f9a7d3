/*
 * Unit tests of seal (src/common/seal.c): a sealed value opens with its key
 * and only with it, and seal_open_json opens every sealed string at any depth
 * and names the path of one that does not open.
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

#include "seal.h"
#include "xalloc.h"

static const unsigned char key[32] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11,
                                      12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22,
                                      23, 24, 25, 26, 27, 28, 29, 30, 31};

static void test_roundtrip(void **state)
{
    char *enc = seal_text(key, "hunter2");
    assert_true(seal_is_sealed(enc));
    assert_null(strstr(enc, "hunter2"));
    char *text;
    struct drv_err err;
    assert_int_equal(seal_open(key, enc, &text, &err), 0);
    assert_string_equal(text, "hunter2");
    seal_wipe_free(text);
    unsigned char other[32] = {0};
    assert_int_equal(seal_open(other, enc, &text, &err), DRV_ETLS);
    assert_int_equal(seal_open(key, "plain", &text, &err), DRV_EINVAL);
    assert_int_equal(seal_open(key, "enc:v1:AAAA", &text, &err), DRV_EINVAL);
    free(enc);
}

static void test_open_json(void **state)
{
    char *a = seal_text(key, "pw"), *b = seal_text(key, "{\"k\":1}");
    json_t *j = json_pack("{s:s, s:{s:[s, i, s]}, s:s}", "top", a, "nested", "list", "x", 3, b,
                          "plain", "enc:v2:not-ours");
    struct drv_err err;
    assert_int_equal(seal_open_json(key, j, &err), 0);
    assert_string_equal(json_string_value(json_object_get(j, "top")), "pw");
    json_t *list = json_object_get(json_object_get(j, "nested"), "list");
    assert_string_equal(json_string_value(json_array_get(list, 2)), "{\"k\":1}");
    assert_string_equal(json_string_value(json_object_get(j, "plain")), "enc:v2:not-ours");
    json_decref(j);
    j = json_pack("{s:{s:s}}", "config", "password",
                  "enc:v1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA");
    assert_int_equal(seal_open_json(key, j, &err), DRV_ETLS);
    assert_non_null(strstr(err.msg, "config.password"));
    json_decref(j);
    free(a);
    free(b);
}

static void test_key_file(void **state)
{
    char path[] = "/tmp/drover-test-seal-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *hex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n";
    assert_int_equal(write(fd, hex, strlen(hex)), (ssize_t)strlen(hex));
    close(fd);
    unsigned char k[32];
    struct drv_err err;
    chmod(path, 0600);
    assert_int_equal(seal_key_load(path, k, &err), 0);
    assert_int_equal(k[31], 0x1f);
    chmod(path, 0644);
    assert_int_equal(seal_key_load(path, k, &err), DRV_EINVAL);
    assert_non_null(strstr(err.msg, "readable by others"));
    unlink(path);
    assert_int_equal(seal_key_load(path, k, &err), DRV_EIO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_open_json),
        cmocka_unit_test(test_key_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
