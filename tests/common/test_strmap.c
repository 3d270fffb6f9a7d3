/*
 * Unit tests of strmap: against a reference (an array) through 200,000
 * random puts, gets and deletes, with iteration and deletion during it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strmap.h"

#define KEYS 5000

static void test_random(void **state)
{
    static void *ref[KEYS];
    memset(ref, 0, sizeof(ref));
    struct strmap *m = strmap_new();
    srand(7);
    size_t n = 0;
    for (int step = 0; step < 200000; step++) {
        int k = rand() % KEYS, op = rand() % 3;
        char key[32];
        snprintf(key, sizeof(key), "job-%d", k);
        void *v = (void *)(intptr_t)(k + 1 + step * KEYS);
        if (op == 0) {
            void *old = strmap_put(m, key, v);
            assert_ptr_equal(old, ref[k]);
            n += ref[k] == NULL;
            ref[k] = v;
        } else if (op == 1) {
            assert_ptr_equal(strmap_get(m, key), ref[k]);
        } else {
            assert_ptr_equal(strmap_del(m, key), ref[k]);
            n -= ref[k] != NULL;
            ref[k] = NULL;
        }
        assert_int_equal(strmap_count(m), n);
    }
    size_t pos = 0, seen = 0;
    const char *key;
    void *v;
    while (strmap_next(m, &pos, &key, &v)) {
        int k = atoi(key + 4);
        assert_ptr_equal(ref[k], v);
        seen++;
        if (k % 2)
            assert_ptr_equal(strmap_del(m, key), v);
    }
    assert_int_equal(seen, n);
    for (int k = 0; k < KEYS; k++) {
        char key2[32];
        snprintf(key2, sizeof(key2), "job-%d", k);
        assert_ptr_equal(strmap_get(m, key2), k % 2 ? NULL : ref[k]);
    }
    strmap_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_random)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
