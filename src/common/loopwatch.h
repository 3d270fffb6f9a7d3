/*
 * loopwatch: how late an event loop runs its timers, for the daemons.
 *
 * Purpose: everything a daemon does with ZooKeeper passes through its loop, so
 * a step that holds the loop for seconds looks, to coord, like a silent
 * session: past the session timeout its locks are given up (coord.h, "session
 * suspect"). A quadratic step of a job's start did exactly that at 10,000 nodes
 * and took perf to find. loopwatch names it: a 100 ms timer measures how late
 * each of its ticks fires; every lateness goes to a histogram
 * (drover_loop_lag_seconds on droverd's /metrics), and one of at least
 * warn_ms is logged at warn as event=loop-stalled with the milliseconds.
 *
 * Threads: everything on the loop's thread. A process stopped whole (SIGSTOP,
 * a paused VM) shows the same as a stalled loop: nothing ran.
 * Ownership: the caller frees the watch (loopwatch_free) before the base.
 */
#ifndef DROVER_LOOPWATCH_H
#define DROVER_LOOPWATCH_H

#include <stdbool.h>
#include <stdint.h>

struct event_base;
struct evbuffer;

#define LOOPWATCH_TICK_MS 100
#define LOOPWATCH_WARN_MS 1000 /* the daemons' threshold for event=loop-stalled */

struct loopwatch;

/* Starts ticking at once; mod names the module in the log line; NULL on failure. */
struct loopwatch *loopwatch_new(struct event_base *base, const char *mod, long warn_ms);
void loopwatch_free(struct loopwatch *w);

/* Ticks seen, ticks at least warn_ms late, the largest lateness (ms). */
uint64_t loopwatch_ticks(const struct loopwatch *w);
uint64_t loopwatch_stalls(const struct loopwatch *w);
int64_t loopwatch_max_late_ms(const struct loopwatch *w);

/* drover_loop_lag_seconds (histogram) and drover_loop_stalls_total (counter), with HELP
   and TYPE. */
void loopwatch_write(const struct loopwatch *w, struct evbuffer *out);

#endif
