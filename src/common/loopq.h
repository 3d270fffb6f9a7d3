/*
 * loopq: run a function on an event loop's thread, from any thread.
 *
 * Threads that are not the loop's (the ZooKeeper client's, the store's pool)
 * never touch loop-owned state: they post a closure here, and the loop runs it
 * in order of posting. Posting is a mutex-protected append plus event_active()
 * on one internal event, which needs libevent's pthread support enabled with
 * evthread_use_pthreads() before the event_base was created.
 *
 * Ownership: the caller owns the loopq and frees it on the loop's thread
 * after the threads that post to it are stopped; closures still queued then
 * are dropped without running (run them first with loopq_run_pending when
 * their owners must hear of them).
 */
#ifndef DROVER_LOOPQ_H
#define DROVER_LOOPQ_H

struct event_base;
struct loopq;

typedef void (*loopq_fn)(void *arg);

struct loopq *loopq_new(struct event_base *base);
void loopq_free(struct loopq *q);

/* Thread-safe. fn(arg) runs later on the loop's thread. */
void loopq_post(struct loopq *q, loopq_fn fn, void *arg);

/* Loop thread: run what is queued now (shutdown, when the loop no longer runs). */
void loopq_run_pending(struct loopq *q);

#endif
