/*
 * Unit tests of the engine's plan pool (engine.c engine__offload): many
 * builds asked for at once all run, at most the pool's threads at a time,
 * each on a pool thread (never the loop's), each completion on the loop.
 *
 * A work function waits a little for more builds to join it, so that a pool
 * that let more than its bound run at once would be caught: the count of
 * builds running together is the work functions' own, and the engine's
 * high-water mark must agree with it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>
#include <event2/thread.h>

#include "engine_int.h"
#include "loopq.h"

#define BUILDS 40
#define BOUND 3

static pthread_t loop_thread;
static atomic_int running, running_max, on_loop;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int done_count;

static void work(void *arg)
{
    (void)arg;
    if (pthread_equal(pthread_self(), loop_thread))
        atomic_fetch_add(&on_loop, 1);
    int now = atomic_fetch_add(&running, 1) + 1;
    int max = atomic_load(&running_max);
    while (now > max && !atomic_compare_exchange_weak(&running_max, &max, now))
        ;
    /* Wait (briefly) for one more than the bound to be running: only a broken bound lets it. */
    pthread_mutex_lock(&mu);
    pthread_cond_broadcast(&cv);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 20 * 1000 * 1000;
    if (until.tv_nsec >= 1000000000) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000;
    }
    while (atomic_load(&running) <= BOUND)
        if (pthread_cond_timedwait(&cv, &mu, &until) != 0)
            break;
    pthread_mutex_unlock(&mu);
    atomic_fetch_sub(&running, 1);
}

static void done(void *arg)
{
    int *seen = arg;
    assert_true(pthread_equal(pthread_self(), loop_thread));
    (*seen)++;
    done_count++;
}

static void tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
}

static void test_bounded(void **state)
{
    (void)state;
    loop_thread = pthread_self();
    struct event_base *base = event_base_new();
    struct event *keep = event_new(base, -1, EV_PERSIST, tick, NULL);
    struct timeval tv = {0, 10 * 1000};
    event_add(keep, &tv);
    struct engine e;
    memset(&e, 0, sizeof(e));
    e.base = base;
    char node[] = "test";
    e.node_id = node;
    e.lq = loopq_new(base); /* what the engine has; the pool does not need it */
    engine__offload_init(&e, BOUND);
    int seen[BUILDS] = {0};
    for (int i = 0; i < BUILDS; i++)
        engine__offload(&e, work, done, &seen[i]);
    while (done_count < BUILDS)
        event_base_loop(base, EVLOOP_ONCE);
    for (int i = 0; i < BUILDS; i++)
        assert_int_equal(seen[i], 1); /* every build ran and reported once */
    assert_int_equal(atomic_load(&on_loop), 0);
    assert_true(atomic_load(&running_max) >= 1);
    assert_true(atomic_load(&running_max) <= BOUND);
    assert_int_equal(atomic_load(&e.plan_busy_max), atomic_load(&running_max));
    assert_int_equal(e.offloads, 0);
    engine__offload_free(&e);
    loopq_free(e.lq);
    event_free(keep);
    event_base_free(base);
}

int main(void)
{
    evthread_use_pthreads();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
