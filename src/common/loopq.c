/*
 * loopq: see loopq.h.
 *
 * The queue is a singly linked FIFO under a mutex. The loop callback swaps
 * the whole list out under the lock and runs it without the lock, so a
 * closure may post again (it then runs on the next activation).
 */
#include "loopq.h"

#include <event2/event.h>
#include <pthread.h>

#include "xalloc.h"

struct item {
    struct item *next;
    loopq_fn fn;
    void *arg;
};

struct loopq {
    struct event *ev;
    pthread_mutex_t mu;
    struct item *head, *tail;
};

static void drain(evutil_socket_t fd, short what, void *arg)
{
    struct loopq *q = arg;
    pthread_mutex_lock(&q->mu);
    struct item *it = q->head;
    q->head = q->tail = NULL;
    pthread_mutex_unlock(&q->mu);
    while (it) {
        struct item *next = it->next;
        it->fn(it->arg);
        free(it);
        it = next;
    }
}

void loopq_run_pending(struct loopq *q)
{
    drain(-1, 0, q);
}

struct loopq *loopq_new(struct event_base *base)
{
    struct loopq *q = xcalloc(1, sizeof(*q));
    pthread_mutex_init(&q->mu, NULL);
    q->ev = event_new(base, -1, 0, drain, q);
    if (!q->ev)
        abort();
    return q;
}

void loopq_free(struct loopq *q)
{
    if (!q)
        return;
    event_free(q->ev);
    struct item *it = q->head;
    while (it) {
        struct item *next = it->next;
        free(it);
        it = next;
    }
    pthread_mutex_destroy(&q->mu);
    free(q);
}

void loopq_post(struct loopq *q, loopq_fn fn, void *arg)
{
    struct item *it = xmalloc(sizeof(*it));
    it->next = NULL;
    it->fn = fn;
    it->arg = arg;
    pthread_mutex_lock(&q->mu);
    if (q->tail)
        q->tail->next = it;
    else
        q->head = it;
    q->tail = it;
    pthread_mutex_unlock(&q->mu);
    event_active(q->ev, 0, 0);
}
