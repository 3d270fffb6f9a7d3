/*
 * clock: the one monotonic clock and the one wall clock (Redis keeps one
 * monotonic.h for the same reason).
 *
 * Which to use:
 *   - the monotonic clock (clock_mono_*) for every duration, timeout, deadline
 *     and age: it never jumps when the system time is set, so an elapsed time
 *     is never negative or a day long because of NTP or an operator;
 *   - the wall clock (clock_wall_*) only for moments that people or other
 *     processes read: record fields ("start", "end"), log fields ("at_ms"),
 *     queue names sorted across hosts. Two wall readings may go backwards.
 * The two never mix: a monotonic reading means nothing outside this process
 * (its zero is the boot), a wall reading is not fit to measure.
 *
 * Units: milliseconds or microseconds as int64_t, truncated (never rounded),
 * so that ms == us / 1000 for the same instant.
 *
 * Threads: every function may be called on any thread. No errors: the clocks
 * used (CLOCK_MONOTONIC, CLOCK_BOOTTIME, CLOCK_REALTIME) cannot fail on Linux. No allocation.
 */
#ifndef DROVER_CLOCK_H
#define DROVER_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Monotonic time since an arbitrary point (the boot), for durations. */
int64_t clock_mono_ms(void);
int64_t clock_mono_us(void);

/*
 * CLOCK_BOOTTIME: monotonic like clock_mono_ms, but it goes on while the host
 * is suspended (CLOCK_MONOTONIC stops). For a deadline that other hosts keep
 * too: the plugins' lease (worker/proc.c), which a ZooKeeper server elsewhere
 * lets run out whether this host slept or not. One clock for every process of
 * the host, like the monotonic one.
 */
int64_t clock_boot_ms(void);

/* Wall time: milliseconds since the Unix epoch, for records and logs. */
int64_t clock_wall_ms(void);

/*
 * The CLOCK_REALTIME moment ms from now, as pthread_cond_timedwait wants it
 * for a condition variable made with default attributes (whose clock is
 * CLOCK_REALTIME). tv_nsec is always in [0, 1 s); a negative ms gives a
 * moment already past.
 */
struct timespec clock_wall_after(int64_t ms);

#endif
