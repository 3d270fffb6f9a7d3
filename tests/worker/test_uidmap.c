/*
 * Unit tests of the tenants' plugin uids (src/worker/uidmap.c): the range is parsed or
 * refused with the setting named; a pick skips used uids, 65534/65535 and what the
 * caller says is taken, and says when none is left; and, as root, the record in a
 * directory gives each tenant its own uid, the same one again at the next start, refuses
 * an entry that is not one uid's directory, and removes what a pick left half-done.
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

#include "worker_int.h"
#include "xalloc.h"

static void test_range(void **state)
{
    (void)state;
    struct drv_err err;
    uid_t a, b;
    assert_int_equal(worker__uid_range_parse("2000000-2999999", &a, &b, &err), 0);
    assert_int_equal(a, 2000000);
    assert_int_equal(b, 2999999);
    assert_int_equal(worker__uid_range_parse("5000-5000", &a, &b, &err), 0);
    const char *bad[] = {"",         "5000",   "5000-",      "-5000",           "6000-5000",
                         "999-2000", "5000-x", "5000-5001 ", "5000-4294967295", NULL};
    for (int i = 0; bad[i]; i++) {
        assert_int_not_equal(worker__uid_range_parse(bad[i], &a, &b, &err), 0);
        assert_non_null(strstr(err.msg, "worker.plugin_uids"));
    }
}

static bool odd_taken(uid_t u, void *arg)
{
    (void)arg;
    return u % 2 == 1;
}

static void test_pick(void **state)
{
    (void)state;
    uid_t used[] = {5002, 5000, 5001};
    assert_int_equal(worker__uid_pick(5000, 5010, used, 3, NULL, NULL), 5003);
    assert_int_equal(worker__uid_pick(5000, 5010, used, 3, odd_taken, NULL), 5004);
    assert_int_equal(worker__uid_pick(5000, 5002, used, 3, NULL, NULL), (uid_t)-1);
    assert_int_equal(worker__uid_pick(5000, 5000, NULL, 0, NULL, NULL), 5000);
    uid_t nobody[] = {65533};
    assert_int_equal(worker__uid_pick(65533, 65540, nobody, 1, NULL, NULL), 65536);
}

static void test_record(void **state)
{
    (void)state;
    if (geteuid() != 0) {
        skip(); /* giving a directory to another uid needs root */
        return;
    }
    char dir[] = "/tmp/test_uidmap.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *homes = xasprintf("%s/homes", dir);
    struct drv_err err;
    uid_t a = 0, b = 0, a2 = 0;
    char *ha = NULL, *hb = NULL, *h = NULL;
    bool made;
    /* A half-done pick of an earlier start: removed. */
    assert_int_equal(mkdir(homes, 0711), 0);
    char *left = xasprintf("%s/.zeta.new", homes);
    assert_int_equal(mkdir(left, 0700), 0);
    assert_int_equal(worker__uid_for_tenant(homes, "acme", 3000000, 3000009, &a, &ha, &made, &err),
                     0);
    assert_true(made);
    assert_int_equal(access(left, F_OK), -1);
    assert_int_equal(worker__uid_for_tenant(homes, "beta", 3000000, 3000009, &b, &hb, &made, &err),
                     0);
    assert_true(made);
    assert_int_not_equal(a, b);
    assert_true(a >= 3000000 && a <= 3000009 && b >= 3000000 && b <= 3000009);
    struct stat st;
    assert_int_equal(lstat(ha, &st), 0);
    assert_int_equal(st.st_uid, a);
    assert_int_equal(st.st_gid, a);
    assert_int_equal(st.st_mode & 0777, 0700);
    /* The next start finds the same. */
    assert_int_equal(worker__uid_for_tenant(homes, "acme", 3000000, 3000009, &a2, &h, &made, &err),
                     0);
    assert_false(made);
    assert_int_equal(a2, a);
    free(h);
    /* A range that no longer holds the recorded uid: refused, naming the entry. */
    assert_int_not_equal(
        worker__uid_for_tenant(homes, "acme", 3000100, 3000109, &a2, &h, &made, &err), 0);
    assert_non_null(strstr(err.msg, "acme"));
    /* A link planted as a tenant's entry: refused. */
    char *link = xasprintf("%s/gamma", homes);
    assert_int_equal(symlink(ha, link), 0);
    assert_int_not_equal(
        worker__uid_for_tenant(homes, "gamma", 3000000, 3000009, &a2, &h, &made, &err), 0);
    /* A full range: refused with the setting named. */
    assert_int_not_equal(
        worker__uid_for_tenant(homes, "delta", a < b ? a : b, a < b ? a : b, &a2, &h, &made, &err),
        0);
    assert_non_null(strstr(err.msg, "worker.plugin_uids"));
    /* A name that is not a tenant's (a path): refused before anything is touched. */
    assert_int_not_equal(
        worker__uid_for_tenant(homes, "../etc", 3000000, 3000009, &a2, &h, &made, &err), 0);
    /* A directory others can write: refused. */
    assert_int_equal(chmod(homes, 0777), 0);
    assert_int_not_equal(
        worker__uid_for_tenant(homes, "acme", 3000000, 3000009, &a2, &h, &made, &err), 0);
    assert_non_null(strstr(err.msg, "worker.plugin_homes"));
    char *cmd = xasprintf("rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    free(link);
    free(left);
    free(ha);
    free(hb);
    free(homes);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_range),
        cmocka_unit_test(test_pick),
        cmocka_unit_test(test_record),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
