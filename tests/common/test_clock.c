/*
 * Unit tests of clock: the monotonic clock does not go back and measures a
 * sleep, its two units agree, the wall clock is the epoch's, and a
 * clock_wall_after deadline is normalised and is what pthread_cond_timedwait
 * waits for.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "clock.h"

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static void test_mono_forward(void **state)
{
    int64_t last_ms = clock_mono_ms(), last_us = clock_mono_us();
    for (int i = 0; i < 100000; i++) {
        int64_t us = clock_mono_us(), ms = clock_mono_ms();
        assert_true(us >= last_us);
        assert_true(ms >= last_ms);
        assert_true(ms >= us / 1000); /* read after: never behind the us reading */
        last_ms = ms;
        last_us = us;
    }
}

static void test_mono_measures(void **state)
{
    int64_t t0 = clock_mono_ms(), u0 = clock_mono_us();
    sleep_ms(30);
    int64_t dt = clock_mono_ms() - t0, du = clock_mono_us() - u0;
    assert_true(dt >= 30);
    assert_true(dt < 10000);
    assert_true(du >= 30000);
    assert_true(du < 10000000);
}

static void test_wall_epoch(void **state)
{
    time_t before = time(NULL);
    int64_t ms = clock_wall_ms();
    time_t after = time(NULL);
    assert_true(ms / 1000 >= (int64_t)before - 1);
    assert_true(ms / 1000 <= (int64_t)after + 1);
    assert_true(ms > 1600000000000LL); /* after September 2020 */
}

static void test_wall_after_normalised(void **state)
{
    static const int64_t ms[] = {0, 1, 999, 1000, 1001, 1500, 2000, 86400123};
    for (int round = 0; round < 2000; round++) {
        for (size_t i = 0; i < sizeof(ms) / sizeof(ms[0]); i++) {
            struct timespec now;
            clock_gettime(CLOCK_REALTIME, &now);
            struct timespec d = clock_wall_after(ms[i]);
            assert_true(d.tv_nsec >= 0 && d.tv_nsec < 1000000000L);
            int64_t now_ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
            int64_t d_ns = (int64_t)d.tv_sec * 1000000000 + d.tv_nsec;
            assert_true(d_ns >= now_ns + ms[i] * 1000000);
            assert_true(d_ns < now_ns + ms[i] * 1000000 + 1000000000LL);
        }
    }
}

static void test_wall_after_condwait(void **state)
{
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
    int64_t t0 = clock_mono_ms();
    struct timespec until = clock_wall_after(50);
    pthread_mutex_lock(&mu);
    int rc = 0;
    while (rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&cond, &mu, &until);
    pthread_mutex_unlock(&mu);
    int64_t waited = clock_mono_ms() - t0;
    assert_true(waited >= 45); /* the two clocks may tick at slightly other rates */
    assert_true(waited < 10000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mono_forward),        cmocka_unit_test(test_mono_measures),
        cmocka_unit_test(test_wall_epoch),          cmocka_unit_test(test_wall_after_normalised),
        cmocka_unit_test(test_wall_after_condwait),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
