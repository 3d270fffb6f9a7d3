/* clock: see clock.h. */
#include "clock.h"

static struct timespec now(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return ts;
}

int64_t clock_mono_ms(void)
{
    struct timespec ts = now(CLOCK_MONOTONIC);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t clock_mono_us(void)
{
    struct timespec ts = now(CLOCK_MONOTONIC);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t clock_boot_ms(void)
{
    struct timespec ts = now(CLOCK_BOOTTIME);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t clock_wall_ms(void)
{
    struct timespec ts = now(CLOCK_REALTIME);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct timespec clock_wall_after(int64_t ms)
{
    struct timespec ts = now(CLOCK_REALTIME);
    ts.tv_sec += (time_t)(ms / 1000);
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    } else if (ts.tv_nsec < 0) { /* ms < 0: a moment already past */
        ts.tv_sec--;
        ts.tv_nsec += 1000000000L;
    }
    return ts;
}
