/*
 * workpool: see workpool.h.
 *
 * Shape: one mutex guards two FIFOs, `queued` (submitted, waiting for a
 * thread) and `done` (finished, waiting for the loop), and the counters.
 * Threads sleep on a condition variable until work is queued or the pool
 * stops. A thread that finishes work moves the item to `done` and activates
 * one event on the loop (event_active is thread-safe with libevent's pthread
 * support); the event's callback swaps the whole `done` list out under the
 * lock and runs the done functions without it, so a done function may submit
 * again.
 *
 * Item states: queued -> running (on a thread, in no list) -> done-list ->
 * delivered (freed). workpool_free: stopping is set, threads finish what
 * they run and exit (they take nothing new), then every item in `queued` and
 * `done` gets done(arg, true) on the caller's thread.
 */
#include "workpool.h"

#include <event2/event.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "log.h"
#include "xalloc.h"

struct item {
    struct item *next;
    workpool_work_fn work;
    workpool_done_fn done;
    void *arg;
};

struct list {
    struct item *head, *tail;
};

struct workpool {
    char name[16];
    int nthreads, max_queued, nice;
    pthread_t *threads;
    struct event *deliver_ev;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct list queued, done;
    int nqueued, nrunning;
    bool stopping;
};

static void push(struct list *l, struct item *it)
{
    it->next = NULL;
    if (l->tail)
        l->tail->next = it;
    else
        l->head = it;
    l->tail = it;
}

static struct item *pop(struct list *l)
{
    struct item *it = l->head;
    if (it) {
        l->head = it->next;
        if (!l->head)
            l->tail = NULL;
    }
    return it;
}

static void *thread_main(void *arg)
{
    struct workpool *p = arg;
    if (p->nice > 0) {
        /* Linux: a thread's nice value is its own (PRIO_PROCESS with its tid). */
        pid_t tid = gettid();
        int now = getpriority(PRIO_PROCESS, (id_t)tid);
        if (setpriority(PRIO_PROCESS, (id_t)tid, now + p->nice) != 0)
            log_debug("workpool", "event=nice-failed pool=%s", p->name);
    }
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->queued.head && !p->stopping)
            pthread_cond_wait(&p->cv, &p->mu);
        if (p->stopping)
            break;
        struct item *it = pop(&p->queued);
        p->nqueued--;
        p->nrunning++;
        pthread_mutex_unlock(&p->mu);
        it->work(it->arg);
        pthread_mutex_lock(&p->mu);
        p->nrunning--;
        push(&p->done, it);
        event_active(p->deliver_ev, EV_TIMEOUT, 0);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static void deliver(evutil_socket_t fd, short what, void *arg)
{
    struct workpool *p = arg;
    pthread_mutex_lock(&p->mu);
    struct item *it = p->done.head;
    p->done.head = p->done.tail = NULL;
    pthread_mutex_unlock(&p->mu);
    while (it) {
        struct item *next = it->next;
        if (it->done)
            it->done(it->arg, false);
        free(it);
        it = next;
    }
}

struct workpool *workpool_new(struct event_base *base, const struct workpool_opts *o)
{
    struct workpool *p = xcalloc(1, sizeof(*p));
    snprintf(p->name, sizeof(p->name), "%.10s", o->name ? o->name : "pool");
    p->nthreads = o->threads < 1 ? 1 : o->threads > 64 ? 64 : o->threads;
    p->max_queued = o->max_queued < 0 ? 0 : o->max_queued;
    p->nice = o->nice < 0 ? 0 : o->nice > 19 ? 19 : o->nice;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->deliver_ev = event_new(base, -1, 0, deliver, p);
    if (!p->deliver_ev)
        abort();
    p->threads = xcalloc((size_t)p->nthreads, sizeof(pthread_t));
    for (int i = 0; i < p->nthreads; i++) {
        if (pthread_create(&p->threads[i], NULL, thread_main, p) != 0)
            abort();
        char tname[16];
        snprintf(tname, sizeof(tname), "%s-%d", p->name, i);
        pthread_setname_np(p->threads[i], tname);
    }
    return p;
}

int workpool_submit(struct workpool *p, workpool_work_fn work, workpool_done_fn done, void *arg)
{
    pthread_mutex_lock(&p->mu);
    /* Idle threads take work at once: count only what would have to wait for one. */
    if (p->nqueued + 1 - (p->nthreads - p->nrunning) > p->max_queued) {
        pthread_mutex_unlock(&p->mu);
        return DRV_EAGAIN;
    }
    struct item *it = xmalloc(sizeof(*it));
    it->work = work;
    it->done = done;
    it->arg = arg;
    push(&p->queued, it);
    p->nqueued++;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return 0;
}

void workpool_stats(struct workpool *p, int *running, int *queued)
{
    pthread_mutex_lock(&p->mu);
    if (running)
        *running = p->nrunning;
    if (queued)
        *queued = p->nqueued;
    pthread_mutex_unlock(&p->mu);
}

static void cancel_all(struct list *l)
{
    struct item *it;
    while ((it = pop(l)) != NULL) {
        if (it->done)
            it->done(it->arg, true);
        free(it);
    }
}

void workpool_free(struct workpool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stopping = true;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->nthreads; i++)
        pthread_join(p->threads[i], NULL);
    /* No thread runs now: the lists are ours. Work finished first, then work never started. */
    cancel_all(&p->done);
    cancel_all(&p->queued);
    event_free(p->deliver_ev);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p->threads);
    free(p);
}
