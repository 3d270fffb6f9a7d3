/* Unit tests for src/common/resbundle: path rules, size bound, checksum, unpacking. */
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

#include "resbundle.h"
#include "xalloc.h"

static int check(const char *json, size_t max, size_t *total)
{
    json_t *j = json_loads(json, 0, NULL);
    assert_non_null(j);
    struct drv_err e;
    size_t t = 0;
    int rc = resbundle_check(j, max, &t, &e);
    json_decref(j);
    if (total)
        *total = t;
    return rc;
}

static void test_paths(void **state)
{
    (void)state;
    size_t total;
    assert_int_equal(
        check("{\"x\": \"aGk=\", \"d/e/f.sh\": {\"data\": \"\", \"exec\": true}}", 100, &total), 0);
    assert_int_equal(total, 2);
    static const char *const bad[] = {
        "{\"/etc/passwd\": \"\"}",
        "{\"../x\": \"\"}",
        "{\"a/../../x\": \"\"}",
        "{\"a//b\": \"\"}",
        "{\"./a\": \"\"}",
        "{\"\": \"\"}",
        "{\"a\\\\b\": \"\"}",
        "{\"a/\": \"\"}",
        "{\"a\": \"not base64!\"}",
        "{\"a\": 5}",
        "{\"a\": \"\", \"a/b\": \"\"}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(check(bad[i], 100, NULL), DRV_EINVAL);
    assert_int_equal(check("{\"a\": \"aGVsbG8=\"}", 4, NULL), DRV_ETOOBIG);
}

static void test_unpack(void **state)
{
    (void)state;
    json_t *j = json_loads("{\"x\": \"aGVsbG8=\", \"bin/run.sh\": {\"data\": \"ZWNobw==\", "
                           "\"exec\": true}}",
                           0, NULL);
    char dir[] = "/tmp/resbundle-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *out = xasprintf("%s/1", dir);
    struct drv_err e;
    assert_int_equal(resbundle_unpack(j, out, (uid_t)-1, (gid_t)-1, &e), 0);
    char *p = xasprintf("%s/x", out);
    FILE *f = fopen(p, "r");
    char buf[16] = "";
    assert_non_null(fgets(buf, sizeof(buf), f));
    fclose(f);
    assert_string_equal(buf, "hello");
    free(p);
    p = xasprintf("%s/bin/run.sh", out);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    free(p);
    p = xasprintf("%s/x", out); /* plain files 0600, directories 0700 (issue 20) */
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    free(p);
    assert_int_equal(stat(out, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    /* The canonical text is stable whatever the key order, and so is its digest. */
    json_t *k = json_loads("{\"bin/run.sh\": {\"exec\": true, \"data\": \"ZWNobw==\"}, \"x\": "
                           "\"aGVsbG8=\"}",
                           0, NULL);
    char *a = resbundle_canonical(j), *b = resbundle_canonical(k);
    assert_string_equal(a, b);
    char h[65];
    resbundle_sha256_hex("abc", 3, h);
    assert_string_equal(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    free(a);
    free(b);
    json_decref(k);
    assert_int_equal(resbundle_rmtree(dir), 0);
    assert_int_not_equal(access(dir, F_OK), 0);
    free(out);
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paths),
        cmocka_unit_test(test_unpack),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
