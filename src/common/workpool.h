/*
 * workpool: run functions on a bounded pool of threads, completions on the loop.
 *
 * For CPU-heavy work that must neither run on the event loop nor hold one of
 * the store's database connections while it computes: solving, planning,
 * parsing or serialising large JSON. A pool has a fixed number of threads and
 * a bounded queue; work beyond the queue is refused at once (DRV_EAGAIN)
 * instead of piling up, so the caller decides what to do (answer 503, try
 * later). Its threads may run at a lower CPU priority (opts.nice), so that
 * the loop and short requests get the cores first when the machine is busy.
 *
 * Threads: workpool_new, workpool_submit and workpool_free are called on the
 * loop's thread (the thread that runs base). A work function runs on a pool
 * thread and may touch only its argument and data that nobody writes while
 * it runs; its done function runs afterwards on the loop's thread, never
 * inside workpool_submit. Completions are delivered in the order the work
 * finished. libevent's pthread support must be on before base was made
 * (evthread_use_pthreads()), as for loopq. Completions arrive through an
 * event that is activated, never added, so event_base_dispatch() does not
 * wait for them on its own: the loop must have other events (a daemon's
 * listener, signals) or the caller keeps it running. workpool_stats may be
 * called from any thread.
 *
 * Ownership: the caller owns the pool and frees it on the loop's thread, after
 * which no done function runs. workpool_free waits for the work that is
 * running, and calls done(arg, true) ("cancelled"), on the calling thread,
 * for everything not yet delivered: work still queued, work that ran but
 * whose completion had not reached the loop, and the work it waited for. So
 * every accepted submission gets exactly one done call, and its owner can
 * free arg there.
 */
#ifndef DROVER_WORKPOOL_H
#define DROVER_WORKPOOL_H

#include <stdbool.h>

#include "error.h"

struct event_base;
struct workpool;

/* Runs on a pool thread. */
typedef void (*workpool_work_fn)(void *arg);
/* Runs on the loop's thread once the work is done; cancelled: it did not run, or it
   ran but the pool was freed before the completion was delivered. */
typedef void (*workpool_done_fn)(void *arg, bool cancelled);

struct workpool_opts {
    const char *name; /* in logs and in the threads' names (at most 10 characters kept) */
    int threads;      /* 1 to 64 */
    int max_queued;   /* work waiting for a thread beyond which submit refuses (>= 0) */
    int nice;         /* 0 to 19, added to the threads' nice value; 0 keeps it */
};

/* Start the threads. Aborts when a thread cannot be made (start-up). */
struct workpool *workpool_new(struct event_base *base, const struct workpool_opts *o);

/*
 * Queue work(arg), then done(arg, false) on the loop. Returns 0, or DRV_EAGAIN
 * when max_queued items already wait (nothing queued: done will not be called).
 * done may be NULL.
 */
int workpool_submit(struct workpool *p, workpool_work_fn work, workpool_done_fn done, void *arg);

/* Work running now and work waiting for a thread (either pointer may be NULL). */
void workpool_stats(struct workpool *p, int *running, int *queued);

/* Wait for running work, cancel the rest (see above), stop the threads, free. NULL is fine. */
void workpool_free(struct workpool *p);

#endif
