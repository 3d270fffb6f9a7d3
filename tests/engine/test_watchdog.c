/*
 * Unit tests of the watchdog's decision (src/engine/watchdog.c): its three
 * rules and invariant W2 over every phase, and the edges of each clock.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdbool.h>

#include "watchdog.h"

#define MIN 60000

/* A running job with one task queued, nobody serving it since t=1000, the clocks at t. */
static struct engine_watch_facts facts(enum engine_phase ph, int64_t now)
{
    struct engine_watch_facts f = {
        .phase = ph,
        .in_flight = 1,
        .workers_known = true,
        .serving = 0,
        .now_ms = now,
        .unserved_since_ms = 1000,
        .no_worker_ms = 10 * MIN,
        .age_ms = now,
        .deadline_ms = 0,
    };
    return f;
}

/* Rule 1 then rule 2: unserved, then given up exactly at the timeout, in both dispatching
   phases. */
static void test_no_worker(void **state)
{
    (void)state;
    enum engine_phase ph[] = {ENGINE_PH_RUNNING, ENGINE_PH_ROLLING_BACK};
    for (size_t i = 0; i < 2; i++) {
        struct engine_watch_facts f = facts(ph[i], 1000 + 10 * MIN - 1);
        assert_int_equal(engine_watch_step(&f), ENGINE_WATCH_UNSERVED);
        f.now_ms++;
        assert_int_equal(engine_watch_step(&f), ENGINE_WATCH_NO_WORKER);
        f.unserved_since_ms = 0; /* first look: it starts counting, never gives up at once */
        assert_int_equal(engine_watch_step(&f), ENGINE_WATCH_UNSERVED);
        f.unserved_since_ms = 1000;
        f.no_worker_ms = 0; /* engine.no_worker_timeout = 0: waits for ever, saying so */
        f.now_ms = INT64_MAX / 2;
        assert_int_equal(engine_watch_step(&f), ENGINE_WATCH_UNSERVED);
    }
}

/* W2: served, nothing in flight, the group not read yet, or a phase that does not dispatch. */
static void test_fine(void **state)
{
    (void)state;
    struct engine_watch_facts f = facts(ENGINE_PH_RUNNING, 1000 + 20 * MIN);
    f.serving = 1;
    assert_int_equal(engine_watch_step(&f), ENGINE_WATCH_FINE);
    f = facts(ENGINE_PH_RUNNING, 1000 + 20 * MIN);
    f.in_flight = 0;
    assert_int_equal(engine_watch_step(&f), ENGINE_WATCH_FINE);
    f = facts(ENGINE_PH_RUNNING, 1000 + 20 * MIN);
    f.workers_known = false;
    assert_int_equal(engine_watch_step(&f), ENGINE_WATCH_FINE);
    for (int ph = 0; ph < ENGINE_PH_COUNT; ph++) {
        f = facts((enum engine_phase)ph, 1000 + 20 * MIN);
        enum engine_watch w = engine_watch_step(&f);
        if (engine_phase_dispatches((enum engine_phase)ph))
            assert_int_equal(w, ENGINE_WATCH_NO_WORKER);
        else
            assert_int_equal(w, ENGINE_WATCH_FINE); /* paused, draining, pending, final */
    }
}

/* Rule 3: the deadline cuts the forward plan (running or paused), never a rollback, and
   wins over the no-worker rule; served or not does not matter. */
static void test_deadline(void **state)
{
    (void)state;
    for (int ph = 0; ph < ENGINE_PH_COUNT; ph++) {
        struct engine_watch_facts f = facts((enum engine_phase)ph, 5000);
        f.serving = 3;
        f.deadline_ms = 5000;
        bool forward = ph == ENGINE_PH_RUNNING || ph == ENGINE_PH_PAUSED;
        assert_int_equal(engine_watch_step(&f),
                         forward ? ENGINE_WATCH_DEADLINE : ENGINE_WATCH_FINE);
        f.age_ms = 4999;
        assert_int_equal(engine_watch_step(&f), ENGINE_WATCH_FINE);
    }
    struct engine_watch_facts f = facts(ENGINE_PH_RUNNING, 1000 + 20 * MIN);
    f.deadline_ms = MIN;
    assert_int_equal(engine_watch_step(&f), ENGINE_WATCH_DEADLINE);
    f.deadline_ms = 0;
    assert_int_equal(engine_watch_step(&f), ENGINE_WATCH_NO_WORKER);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_worker),
        cmocka_unit_test(test_fine),
        cmocka_unit_test(test_deadline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
