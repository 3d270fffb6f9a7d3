/*
 * loopwatch: a one-shot timer armed LOOPWATCH_TICK_MS ahead, each time from
 * the moment it fires: the lateness of a tick is when it fired less when it
 * was due (CLOCK_MONOTONIC), whatever held the loop meanwhile.
 */
#include "loopwatch.h"

#include <event2/buffer.h>
#include <event2/event.h>

#include "clock.h"
#include "log.h"
#include "promtext.h"
#include "xalloc.h"

struct loopwatch {
    struct event *tick;
    const char *mod;
    long warn_ms;
    int64_t due_ms;
    uint64_t ticks, stalls;
    int64_t max_late_ms;
    struct prom_histo lag;
};

static void arm(struct loopwatch *w)
{
    struct timeval tv = {0, LOOPWATCH_TICK_MS * 1000};
    w->due_ms = clock_mono_ms() + LOOPWATCH_TICK_MS;
    evtimer_add(w->tick, &tv);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct loopwatch *w = arg;
    int64_t late = clock_mono_ms() - w->due_ms;
    if (late < 0)
        late = 0;
    w->ticks++;
    prom_histo_observe(&w->lag, (double)late / 1000.0);
    if (late > w->max_late_ms)
        w->max_late_ms = late;
    if (late >= w->warn_ms) {
        w->stalls++;
        log_warn(w->mod, "event=loop-stalled late_ms=%lld", (long long)late);
    }
    arm(w);
}

struct loopwatch *loopwatch_new(struct event_base *base, const char *mod, long warn_ms)
{
    struct loopwatch *w = xcalloc(1, sizeof(*w));
    w->mod = mod;
    w->warn_ms = warn_ms;
    w->tick = evtimer_new(base, on_tick, w);
    if (!w->tick) {
        free(w);
        return NULL;
    }
    prom_histo_init(&w->lag, prom_buckets_fast, prom_buckets_fast_n);
    arm(w);
    return w;
}

void loopwatch_free(struct loopwatch *w)
{
    if (!w)
        return;
    event_free(w->tick);
    prom_histo_release(&w->lag);
    free(w);
}

uint64_t loopwatch_ticks(const struct loopwatch *w)
{
    return w->ticks;
}

uint64_t loopwatch_stalls(const struct loopwatch *w)
{
    return w->stalls;
}

int64_t loopwatch_max_late_ms(const struct loopwatch *w)
{
    return w->max_late_ms;
}

void loopwatch_write(const struct loopwatch *w, struct evbuffer *out)
{
    prom_family(out, "drover_loop_lag_seconds", "histogram",
                "How late the event loop ran its 100 ms watch timer");
    prom_histo_write(&w->lag, out, "drover_loop_lag_seconds", "");
    prom_family(out, "drover_loop_stalls_total", "counter",
                "Watch timer ticks late by at least the warning threshold (logged loop-stalled)");
    evbuffer_add_printf(out, "drover_loop_stalls_total %llu\n", (unsigned long long)w->stalls);
}
