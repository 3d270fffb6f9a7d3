/*
 * handlers_fleet: the fleet views (docs/api.md "Fleet"): members with the
 * ring's owner of each unfinished job, workers, and the task queues.
 *
 * Each handler has a pool part (the tenant's open jobs, or nothing) and a
 * loop part that reads what the ZooKeeper group watches hold (api.c) or asks
 * ZooKeeper (queues), then replies.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "handlers.h"
#include "coord.h"
#include "store.h"
#include "xalloc.h"

/* ---- fleet --------------------------------------------------------------------------- */

static int members_on_loop(struct call *c)
{
    json_t *members = api__members(c->api);
    struct coord_ring *ring = coord_ring_new(0);
    size_t i;
    json_t *m;
    json_array_foreach(members, i, m)
    {
        json_t *d = json_object_get(m, "data");
        json_int_t w = json_integer_value(json_object_get(d, "weight"));
        coord_ring_add(ring, json_string_value(json_object_get(m, "id")), w > 0 ? (unsigned)w : 1,
                       json_is_true(json_object_get(d, "draining")));
    }
    json_t *jobs = json_array();
    json_array_foreach(c->loop_data, i, m)
    {
        const char *id = json_string_value(json_object_get(m, "id"));
        const char *owner = coord_ring_lookup(ring, id);
        json_array_append_new(jobs, json_pack("{s:s, s:O, s:O, s:s?}", "id", id, "operation",
                                              json_object_get(m, "operation"), "status",
                                              json_object_get(m, "status"), "owner", owner));
    }
    c->out = json_pack("{s:O, s:{s:I}, s:o}", "members", members, "ring", "size",
                       (json_int_t)coord_ring_size(ring), "jobs", jobs);
    coord_ring_free(ring);
    c->status = 200;
    return 0;
}

int api__h_members(PGconn *conn, struct call *c, struct drv_err *err)
{
    /* The superadmin, who belongs to no tenant, operates the fleet: every tenant's jobs. */
    int rc =
        store_job_open_ids(conn, c->who.tenant_id[0] ? c->who.tenant_id : NULL, &c->loop_data, err);
    if (rc == 0)
        c->on_loop = members_on_loop;
    return rc;
}

static int workers_on_loop(struct call *c)
{
    json_t *out = json_array();
    size_t i;
    json_t *w;
    json_array_foreach(api__workers(c->api), i, w)
    {
        const char *t = json_string_value(json_object_get(json_object_get(w, "data"), "tenant"));
        if (t && strcmp(t, c->who.tenant) == 0)
            json_array_append(out, w);
    }
    c->out = json_pack("{s:o}", "workers", out);
    c->status = 200;
    return 0;
}

/*
 * GET /v1/queues: the tenant's queues (/drover/queues/<tenant>/<class>, one
 * per worker class) and their figures, read from ZooKeeper on the loop: list
 * the classes, open each queue, read its stats, close it; reply when the last
 * answer is in.
 */
struct queues_read {
    struct call *c;
    size_t waiting;
    json_t *items;
};

struct queue_stat {
    struct queues_read *r;
    struct coord_queue *q;
    char *cls;
    size_t slot; /* index in r->items: the classes' sorted order */
};

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void queues_finish(struct queues_read *r)
{
    struct call *c = r->c;
    json_t *items = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(r->items, i, v) if (json_is_object(v)) json_array_append(items, v);
    json_decref(r->items);
    c->out = json_pack("{s:o}", "queues", items);
    c->status = 200;
    free(r);
    api__reply(c);
}

static void on_queue_stats(const struct coord_queue_stats *st, int rc, void *arg)
{
    struct queue_stat *qs = arg;
    struct queues_read *r = qs->r;
    if (rc == 0)
        json_array_set_new(r->items, qs->slot,
                           json_pack("{s:s, s:s, s:I, s:I, s:I}", "tenant", r->c->who.tenant,
                                     "class", qs->cls, "length", (json_int_t)st->length, "claimed",
                                     (json_int_t)st->claimed, "oldest_age_ms",
                                     (json_int_t)st->oldest_age_ms));
    coord_queue_close(qs->q);
    free(qs->cls);
    free(qs);
    if (--r->waiting == 0)
        queues_finish(r);
}

static void on_queue_classes(int rc, char *const *names, size_t n, void *arg)
{
    struct queues_read *r = arg;
    struct call *c = r->c;
    if (rc != 0 && rc != DRV_ENOENT) {
        json_decref(r->items);
        free(r);
        call_fail(c, 503, "unavailable", NULL, "zookeeper unavailable, try again");
        api__reply(c);
        return;
    }
    if (rc != 0 || n == 0) {
        queues_finish(r);
        return;
    }
    r->waiting = n;
    char **sorted = xcalloc(n, sizeof(*sorted));
    for (size_t i = 0; i < n; i++) {
        sorted[i] = names[i];
        json_array_append_new(r->items, json_null());
    }
    qsort(sorted, n, sizeof(*sorted), cmp_name);
    for (size_t i = 0; i < n; i++) {
        struct queue_stat *qs = xcalloc(1, sizeof(*qs));
        qs->r = r;
        qs->slot = i;
        qs->cls = xstrdup(sorted[i]);
        char *path = xasprintf("/drover/queues/%s/%s", c->who.tenant, sorted[i]);
        qs->q = coord_queue_open(api__zk(c->api), path, NULL, NULL, NULL);
        free(path);
        coord_queue_stats(qs->q, on_queue_stats, qs);
    }
    free(sorted);
}

static int queues_on_loop(struct call *c)
{
    struct coord_session *zk = api__zk(c->api);
    if (!zk || coord_session_state(zk) != COORD_CONNECTED) {
        call_fail(c, 503, "unavailable", NULL, "zookeeper unavailable, try again");
        return 0;
    }
    struct queues_read *r = xcalloc(1, sizeof(*r));
    r->c = c;
    r->items = json_array();
    char *path = xasprintf("/drover/queues/%s", c->who.tenant);
    coord_children(zk, path, on_queue_classes, r);
    free(path);
    return 1;
}

int api__h_queues(PGconn *conn, struct call *c, struct drv_err *err)
{
    c->on_loop = queues_on_loop;
    return 0;
}

int api__h_workers(PGconn *conn, struct call *c, struct drv_err *err)
{
    c->on_loop = workers_on_loop;
    return 0;
}
