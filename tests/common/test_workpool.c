/* Unit tests for src/common/workpool: threads, the queue bound, completions on the loop,
   cancellation at free. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/thread.h>

#include "workpool.h"

struct job {
    pthread_t ran_on, done_on;
    int ran, done, cancelled;
    atomic_int *gate; /* when not NULL: spin until it turns non-zero */
};

static atomic_int now_running, max_running;

static void work(void *arg)
{
    struct job *j = arg;
    int n = atomic_fetch_add(&now_running, 1) + 1;
    int m = atomic_load(&max_running);
    while (n > m && !atomic_compare_exchange_weak(&max_running, &m, n))
        ;
    if (j->gate)
        while (!atomic_load(j->gate))
            usleep(1000);
    else
        usleep(2000);
    j->ran_on = pthread_self();
    j->ran = 1;
    atomic_fetch_sub(&now_running, 1);
}

static int delivered;
static struct event_base *loop_base;

/* A loop with nothing but a pool's completions pending would return at once: keep it busy. */
static struct event *keep_alive(struct event_base *base)
{
    struct event *ev = event_new(base, -1, EV_PERSIST, NULL, NULL);
    struct timeval tv = {3600, 0};
    event_add(ev, &tv);
    return ev;
}

static void done(void *arg, bool cancelled)
{
    struct job *j = arg;
    j->done_on = pthread_self();
    j->done++;
    j->cancelled = cancelled;
    if (++delivered == 12)
        event_base_loopexit(loop_base, NULL);
}

static void test_runs_on_threads_done_on_loop(void **state)
{
    evthread_use_pthreads();
    loop_base = event_base_new();
    delivered = 0;
    atomic_store(&max_running, 0);
    struct workpool_opts o = {.name = "t", .threads = 3, .max_queued = 100, .nice = 5};
    struct workpool *p = workpool_new(loop_base, &o);
    struct job jobs[12];
    memset(jobs, 0, sizeof(jobs));
    for (int i = 0; i < 12; i++)
        assert_int_equal(workpool_submit(p, work, done, &jobs[i]), 0);
    for (int i = 0; i < 12; i++)
        assert_int_equal(jobs[i].done, 0); /* never inside submit */
    struct event *ka = keep_alive(loop_base);
    event_base_dispatch(loop_base);
    event_free(ka);
    for (int i = 0; i < 12; i++) {
        assert_int_equal(jobs[i].ran, 1);
        assert_int_equal(jobs[i].done, 1);
        assert_false(jobs[i].cancelled);
        assert_true(pthread_equal(jobs[i].done_on, pthread_self()));
        assert_false(pthread_equal(jobs[i].ran_on, pthread_self()));
    }
    assert_true(atomic_load(&max_running) <= 3);
    assert_true(atomic_load(&max_running) >= 1);
    workpool_free(p);
    event_base_free(loop_base);
}

static void wait_running(struct workpool *p, int n)
{
    int r = -1;
    for (int i = 0; i < 5000 && r != n; i++) {
        workpool_stats(p, &r, NULL);
        if (r != n)
            usleep(1000);
    }
    assert_int_equal(r, n);
}

static void test_queue_bound_and_cancel_at_free(void **state)
{
    evthread_use_pthreads();
    struct event_base *base = event_base_new();
    struct workpool_opts o = {.name = "bound", .threads = 1, .max_queued = 1};
    struct workpool *p = workpool_new(base, &o);
    atomic_int gate = 0;
    struct job a = {.gate = &gate}, b = {0}, c = {0};
    assert_int_equal(workpool_submit(p, work, done, &a), 0);
    wait_running(p, 1);
    assert_int_equal(workpool_submit(p, work, done, &b), 0);
    assert_int_equal(workpool_submit(p, work, done, &c), DRV_EAGAIN); /* one already waits */
    int queued = -1;
    workpool_stats(p, NULL, &queued);
    assert_int_equal(queued, 1);
    /* Free while a runs: it waits for a, then cancels a's completion and b. */
    atomic_store(&gate, 1);
    workpool_free(p);
    assert_int_equal(a.ran, 1);
    assert_int_equal(a.done, 1);
    assert_true(a.cancelled);
    assert_int_equal(b.done, 1);
    assert_true(b.cancelled);
    assert_int_equal(c.done, 0); /* refused work never gets done */
    event_base_free(base);
}

static struct workpool *chain_pool;
static int chain_left;

static void chain_work(void *arg)
{
}

static void chain_done(void *arg, bool cancelled)
{
    assert_false(cancelled);
    if (--chain_left > 0)
        assert_int_equal(workpool_submit(chain_pool, chain_work, chain_done, arg), 0);
    else
        event_base_loopexit(loop_base, NULL);
}

static void test_done_may_submit_again(void **state)
{
    evthread_use_pthreads();
    loop_base = event_base_new();
    struct workpool_opts o = {.name = "chain", .threads = 2, .max_queued = 0};
    chain_pool = workpool_new(loop_base, &o);
    chain_left = 50;
    assert_int_equal(workpool_submit(chain_pool, chain_work, chain_done, NULL), 0);
    struct event *ka = keep_alive(loop_base);
    event_base_dispatch(loop_base);
    event_free(ka);
    assert_int_equal(chain_left, 0);
    workpool_free(chain_pool);
    event_base_free(loop_base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runs_on_threads_done_on_loop),
        cmocka_unit_test(test_queue_bound_and_cancel_at_free),
        cmocka_unit_test(test_done_may_submit_again),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
