/*
 * Unit tests of loopwatch: a callback that holds the loop for 400 ms makes
 * the watch's next tick at least 300 ms late (the tick was due at most 100 ms
 * after the hold began), counted as a stall and written to the metrics.
 * Only lower bounds are asserted: a noisy machine only adds lateness.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "loopwatch.h"

static void hold_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    usleep(400 * 1000);
}

static void test_stall(void **state)
{
    (void)state;
    struct event_base *base = event_base_new();
    struct loopwatch *w = loopwatch_new(base, "test", 200);
    assert_non_null(w);
    struct event *hold = evtimer_new(base, hold_cb, NULL);
    struct timeval at = {0, 150 * 1000}, end = {1, 0};
    evtimer_add(hold, &at);
    event_base_loopexit(base, &end);
    event_base_dispatch(base);
    assert_true(loopwatch_ticks(w) >= 2);
    assert_true(loopwatch_stalls(w) >= 1);
    assert_true(loopwatch_max_late_ms(w) >= 300);

    struct evbuffer *out = evbuffer_new();
    loopwatch_write(w, out);
    evbuffer_add(out, "", 1);
    const char *text = (const char *)evbuffer_pullup(out, -1);
    char want[64];
    snprintf(want, sizeof(want), "drover_loop_lag_seconds_count %llu\n",
             (unsigned long long)loopwatch_ticks(w));
    assert_non_null(strstr(text, want));
    snprintf(want, sizeof(want), "drover_loop_stalls_total %llu\n",
             (unsigned long long)loopwatch_stalls(w));
    assert_non_null(strstr(text, want));
    assert_non_null(strstr(text, "# TYPE drover_loop_lag_seconds histogram"));
    evbuffer_free(out);
    event_free(hold);
    loopwatch_free(w);
    event_base_free(base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stall),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
