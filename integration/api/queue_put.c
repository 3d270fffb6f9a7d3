/*
 * queue_put: put N items in /drover/queues/<tenant>/<class> through the coord
 * API, for the queues view's integration test (the engine will be the real
 * producer). Usage: queue_put ZK_HOSTS TENANT CLASS N. Exit 0 when all are in.
 */
#include <stdio.h>
#include <stdlib.h>

#include <event2/event.h>
#include <event2/thread.h>

#include "coord.h"
#include "xalloc.h"

static int result = 1;

static void on_put(int rc, void *arg)
{
    result = rc == 0 ? 0 : 1;
    event_base_loopexit(arg, NULL);
}

int main(int argc, char **argv)
{
    if (argc != 5)
        return 2;
    evthread_use_pthreads();
    struct event_base *base = event_base_new();
    struct drv_err err;
    struct coord_session_opts o = {.hosts = argv[1]};
    struct coord_session *s = coord_session_new(base, &o, &err);
    if (!s || coord_session_wait_connected(s, 15000, &err) != 0) {
        fprintf(stderr, "queue_put: %s\n", err.msg);
        return 1;
    }
    char *path = xasprintf("/drover/queues/%s/%s", argv[2], argv[3]);
    struct coord_queue *q = coord_queue_open(s, path, NULL, NULL, NULL);
    int n = atoi(argv[4]);
    struct coord_queue_put_item *items = xcalloc((size_t)n, sizeof(*items));
    for (int i = 0; i < n; i++)
        items[i].json = "{\"task\":\"test\"}";
    if (coord_queue_put(q, items, (size_t)n, on_put, base) != 0)
        return 1;
    event_base_dispatch(base);
    coord_queue_close(q);
    coord_session_free(s);
    event_base_free(base);
    free(items);
    free(path);
    return result;
}
