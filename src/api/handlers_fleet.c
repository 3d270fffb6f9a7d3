/*
 * handlers_fleet: the fleet views (docs/api.md "Fleet"): members with the
 * ring's owner of each unfinished job, workers, and the task queues.
 *
 * Each handler has a pool part (the tenant's open jobs, or nothing) and a
 * loop part that reads what the ZooKeeper group watches hold (api.c) or asks
 * ZooKeeper (queues), then replies.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "api_int.h"
#include "clock.h"
#include "handlers.h"
#include "coord.h"
#include "promtext.h"
#include "strmap.h"
#include "store.h"
#include "xalloc.h"
#include "zkpath.h"

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
    json_t *shown = json_deep_copy(members);
    if (c->who.role != ROLE_SUPER) {
        /* A tenant's admin sees the ring, not the fleet's hosts (issue 20): no host, pid
         * or listening address of the shared droverd nodes. */
        json_array_foreach(shown, i, m)
        {
            json_t *d = json_object_get(m, "data");
            static const char *const hidden[] = {"host", "pid", "http", NULL};
            for (const char *const *h = hidden; *h; h++) {
                json_object_del(d, *h);
                json_object_del(m, *h);
            }
        }
    }
    c->out = json_pack("{s:o, s:{s:I}, s:o}", "members", shown, "ring", "size",
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
        if (t && strcmp(t, c->who.tenant) == 0 && !json_is_false(json_object_get(w, "proven")))
            json_array_append(out, w); /* an unproven member is not the tenant's it names */
    }
    c->out = json_pack("{s:o}", "workers", out);
    c->status = 200;
    return 0;
}

/*
 * The queues' figures (GET /v1/queues, GET /v1/metrics), read from ZooKeeper
 * on the loop: list the tenants (a superadmin's metrics: every tenant's
 * /drover/queues/<tenant>) or take the caller's, list each one's classes,
 * open each queue, read its stats, close it; when the last answer is in, the
 * arrival rates and the recommended worker counts are worked out and the
 * reply made. `waiting` counts the reads in flight: a listing adds its
 * children's reads before it ends its own.
 *
 * Arrival rate: per queue, this node keeps the last put counter it read and
 * an exponentially weighted rate (time constant 60 s) updated on each read
 * at least 1 s after the previous one, so a burst raises it by its share of a
 * minute, not by its instantaneous rate; the first read of a queue says 0.
 * Each node keeps its own (a load balancer's readers see similar figures).
 */
struct api_qrate {
    int64_t puts;
    int64_t t_ms;
    double rate;
};

struct queues_read {
    struct call *c;
    bool metrics; /* GET /v1/metrics: text; else GET /v1/queues: JSON */
    size_t waiting;
    json_t *items;
    bool zk_failed;
};

struct queue_stat {
    struct queues_read *r;
    struct coord_queue *q;
    char *tenant, *cls;
};

#define RATE_TAU_MS 60000.0

void api__qrates_free(struct api *a)
{
    size_t pos = 0;
    void *v;
    while (strmap_next(a->qrates, &pos, NULL, &v))
        free(v);
    strmap_free(a->qrates);
    a->qrates = NULL;
}

static double arrival_rate(struct api *a, const char *tenant, const char *cls, int64_t puts)
{
    char key[300];
    snprintf(key, sizeof(key), "%s/%s", tenant, cls);
    struct api_qrate *q = strmap_get(a->qrates, key);
    int64_t now = clock_mono_ms();
    if (!q) {
        q = xcalloc(1, sizeof(*q));
        q->puts = puts;
        q->t_ms = now;
        strmap_put(a->qrates, key, q);
        return 0;
    }
    int64_t dt = now - q->t_ms;
    if (dt >= 1000) {
        double inst = puts >= q->puts ? (double)(puts - q->puts) * 1000.0 / (double)dt : 0;
        q->rate += (1 - exp(-(double)dt / RATE_TAU_MS)) * (inst - q->rate);
        q->puts = puts;
        q->t_ms = now;
    }
    return q->rate;
}

static int cmp_item(const void *a, const void *b)
{
    json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    int c = strcmp(json_string_value(json_object_get(x, "tenant")),
                   json_string_value(json_object_get(y, "tenant")));
    return c ? c
             : strcmp(json_string_value(json_object_get(x, "class")),
                      json_string_value(json_object_get(y, "class")));
}

/* Sorted by tenant and class, with the rate, the mean task time and the recommendation. */
static json_t *finish_items(struct queues_read *r)
{
    struct call *c = r->c;
    size_t n = json_array_size(r->items);
    json_t **v = xcalloc(n + 1, sizeof(*v));
    for (size_t i = 0; i < n; i++)
        v[i] = json_array_get(r->items, i);
    qsort(v, n, sizeof(*v), cmp_item);
    json_t *means = json_object_get(c->loop_data, "mean");
    const struct api_opts *o = c->opts;
    double wait_s = (o->scale_target_wait_ms > 0 ? (double)o->scale_target_wait_ms : 10000.0) / 1e3;
    double dflt_s = (o->scale_task_ms > 0 ? (double)o->scale_task_ms : 1000.0) / 1e3;
    int slots = o->scale_worker_slots > 0 ? (int)o->scale_worker_slots : 4;
    json_t *out = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *it = v[i];
        const char *t = json_string_value(json_object_get(it, "tenant"));
        const char *cls = json_string_value(json_object_get(it, "class"));
        int64_t len = json_integer_value(json_object_get(it, "length"));
        int64_t claimed = json_integer_value(json_object_get(it, "claimed"));
        double rate = arrival_rate(c->api, t, cls, json_integer_value(json_object_get(it, "puts")));
        json_t *m = json_object_get(means, t);
        double mean = json_is_number(m) ? json_number_value(m) : dflt_s;
        json_object_set_new(it, "arrival_per_s", json_real(rate));
        json_object_set_new(it, "mean_task_s", json_real(mean));
        json_object_set_new(it, "mean_task_measured", json_boolean(json_is_number(m)));
        json_object_set_new(
            it, "recommended_workers",
            json_integer(api__scale_workers(len - claimed, claimed, rate, mean, wait_s, slots)));
        json_array_append(out, it);
    }
    free(v);
    json_decref(r->items);
    r->items = NULL;
    return out;
}

static void metrics_text(struct queues_read *r, json_t *items);

static void queues_finish(struct queues_read *r)
{
    struct call *c = r->c;
    json_t *items = finish_items(r);
    if (r->metrics) {
        metrics_text(r, items);
    } else if (r->zk_failed) {
        call_fail(c, 503, "unavailable", NULL, "zookeeper unavailable, try again");
    } else {
        c->out = json_pack("{s:O}", "queues", items);
        c->status = 200;
    }
    json_decref(items);
    free(r);
    api__reply(c);
}

static void read_done(struct queues_read *r)
{
    if (--r->waiting == 0)
        queues_finish(r);
}

static void on_queue_stats(const struct coord_queue_stats *st, int rc, void *arg)
{
    struct queue_stat *qs = arg;
    struct queues_read *r = qs->r;
    if (rc == 0)
        json_array_append_new(
            r->items,
            json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I}", "tenant", qs->tenant, "class",
                      qs->cls, "length", (json_int_t)st->length, "claimed", (json_int_t)st->claimed,
                      "oldest_age_ms", (json_int_t)st->oldest_age_ms, "puts", (json_int_t)st->puts,
                      "takes", (json_int_t)st->takes, "completes", (json_int_t)st->completes));
    else
        r->zk_failed = true;
    coord_queue_close(qs->q);
    free(qs->tenant);
    free(qs->cls);
    free(qs);
    read_done(r);
}

struct classes_read {
    struct queues_read *r;
    char *tenant;
};

static void on_queue_classes(int rc, char *const *names, size_t n, void *arg)
{
    struct classes_read *cr = arg;
    struct queues_read *r = cr->r;
    if (rc != 0 && rc != DRV_ENOENT)
        r->zk_failed = true;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        struct queue_stat *qs = xcalloc(1, sizeof(*qs));
        qs->r = r;
        qs->tenant = xstrdup(cr->tenant);
        qs->cls = xstrdup(names[i]);
        char *path = zkpath_queue(NULL, 0, cr->tenant, names[i]);
        qs->q = coord_queue_open(api__zk(r->c->api), path, NULL, NULL, NULL);
        free(path);
        r->waiting++;
        coord_queue_stats(qs->q, on_queue_stats, qs);
    }
    free(cr->tenant);
    free(cr);
    read_done(r);
}

static void read_classes(struct queues_read *r, const char *tenant)
{
    struct classes_read *cr = xcalloc(1, sizeof(*cr));
    cr->r = r;
    cr->tenant = xstrdup(tenant);
    char *path = zkpath_tenant_queues(NULL, 0, tenant);
    r->waiting++;
    coord_children(api__zk(r->c->api), path, on_queue_classes, cr);
    free(path);
}

static void on_queue_tenants(int rc, char *const *names, size_t n, void *arg)
{
    struct queues_read *r = arg;
    if (rc != 0 && rc != DRV_ENOENT)
        r->zk_failed = true;
    for (size_t i = 0; rc == 0 && i < n; i++)
        read_classes(r, names[i]);
    read_done(r);
}

static int queues_start(struct call *c, bool metrics)
{
    struct coord_session *zk = api__zk(c->api);
    struct queues_read *r = xcalloc(1, sizeof(*r));
    r->c = c;
    r->metrics = metrics;
    r->items = json_array();
    if (!zk || coord_session_state(zk) != COORD_CONNECTED) {
        r->zk_failed = true;
        r->waiting = 1;
        read_done(r);
        return 1;
    }
    r->waiting = 1; /* this start, ended below */
    if (c->who.role == ROLE_SUPER) {
        r->waiting++;
        coord_children(zk, ZKPATH_QUEUES, on_queue_tenants, r);
    } else {
        read_classes(r, c->who.tenant);
    }
    read_done(r);
    return 1;
}

static int queues_on_loop(struct call *c)
{
    return queues_start(c, false);
}

static int metrics_on_loop(struct call *c)
{
    return queues_start(c, true);
}

/*
 * The database part of both: the mean task time per tenant, from the attempts
 * that ended in the last 10 minutes (jobs open or ended in that time: the
 * jobs' index bounds the scan); for /v1/metrics also jobs and tasks by
 * status. The tenant's own (an admin), or every tenant's (a superadmin).
 */
static const char SQL_MEAN[] =
    "SELECT t.name AS tenant, avg(extract(epoch FROM a.ended_at - a.started_at))::text AS s"
    " FROM jobs j JOIN tenants t ON t.id = j.tenant_id"
    " JOIN task_attempts a ON a.job_id = j.id"
    " WHERE ($1::bigint IS NULL OR j.tenant_id = $1::bigint)"
    " AND (j.ended_at IS NULL OR j.ended_at > now() - interval '10 minutes')"
    " AND a.ended_at > now() - interval '10 minutes' AND a.started_at IS NOT NULL"
    " GROUP BY t.name";
static const char SQL_JOBS[] =
    "SELECT t.name AS tenant, j.status, count(*) AS n FROM jobs j"
    " JOIN tenants t ON t.id = j.tenant_id"
    " WHERE ($1::bigint IS NULL OR j.tenant_id = $1::bigint) AND t.deleted_at IS NULL"
    " GROUP BY 1, 2 ORDER BY 1, 2";
static const char SQL_TASKS[] =
    "SELECT t.name AS tenant, k.status, count(*) AS n FROM tasks k"
    " JOIN jobs j ON j.id = k.job_id JOIN tenants t ON t.id = j.tenant_id"
    " WHERE ($1::bigint IS NULL OR j.tenant_id = $1::bigint) AND t.deleted_at IS NULL"
    " GROUP BY 1, 2 ORDER BY 1, 2";

static int fleet_pg(PGconn *conn, struct call *c, bool metrics, struct drv_err *err)
{
    const char *p[1] = {c->who.role == ROLE_SUPER ? NULL : c->who.tenant_id};
    json_t *rows = NULL;
    int rc = store_query_json(conn, SQL_MEAN, 1, p, &rows, err);
    if (rc)
        return rc;
    json_t *mean = json_object();
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row)
    {
        const char *s = json_string_value(json_object_get(row, "s"));
        if (s)
            json_object_set_new(mean, json_string_value(json_object_get(row, "tenant")),
                                json_real(strtod(s, NULL)));
    }
    json_decref(rows);
    c->loop_data = json_pack("{s:o}", "mean", mean);
    if (metrics) {
        json_t *jobs = NULL, *tasks = NULL;
        rc = store_query_json(conn, SQL_JOBS, 1, p, &jobs, err);
        if (rc == 0)
            rc = store_query_json(conn, SQL_TASKS, 1, p, &tasks, err);
        json_object_set_new(c->loop_data, "jobs", jobs ? jobs : json_array());
        json_object_set_new(c->loop_data, "tasks", tasks ? tasks : json_array());
        if (rc)
            return rc;
    }
    return 0;
}

int api__h_queues(PGconn *conn, struct call *c, struct drv_err *err)
{
    int rc = fleet_pg(conn, c, false, err);
    if (rc == 0)
        c->on_loop = queues_on_loop;
    return rc;
}

int api__h_metrics(PGconn *conn, struct call *c, struct drv_err *err)
{
    int rc = fleet_pg(conn, c, true, err);
    if (rc == 0)
        c->on_loop = metrics_on_loop;
    return rc;
}

/* ---- GET /v1/metrics: the text --------------------------------------------------------- */

struct qfam {
    const char *name, *type, *help, *field;
    double scale;
};

static const struct qfam qfams[] = {
    {"drover_queue_length", "gauge", "Items in the queue, claimed ones included.", "length", 1},
    {"drover_queue_claimed", "gauge", "Items claimed by a worker (running).", "claimed", 1},
    {"drover_queue_oldest_item_age_seconds", "gauge", "Age of the queue's oldest item.",
     "oldest_age_ms", 1e-3},
    {"drover_queue_puts_total", "counter", "Items put on the queue since it was made.", "puts", 1},
    {"drover_queue_takes_total", "counter", "Claims taken on the queue's items since it was made.",
     "takes", 1},
    {"drover_queue_completes_total", "counter",
     "Items removed from the queue (completed or taken back) since it was made.", "completes", 1},
    {"drover_queue_arrival_rate", "gauge",
     "Items put per second, weighted over the last minute (this node's reads).", "arrival_per_s",
     1},
    {"drover_queue_mean_task_seconds", "gauge",
     "Mean task time of the tenant's last 10 minutes (the configured guess before any).",
     "mean_task_s", 1},
    {"drover_queue_recommended_workers", "gauge",
     "Workers the queue calls for: ceil((rate x mean + waiting x mean / target wait) / slots).",
     "recommended_workers", 1},
};

static void status_family(struct evbuffer *out, json_t *rows, const char *name, const char *help)
{
    prom_family(out, name, "gauge", help);
    size_t i;
    json_t *row;
    char t[260], s[100];
    json_array_foreach(rows, i, row)
    {
        evbuffer_add_printf(
            out, "%s{tenant=\"%s\",status=\"%s\"} %lld\n", name,
            prom_label(json_string_value(json_object_get(row, "tenant")), t, sizeof(t)),
            prom_label(json_string_value(json_object_get(row, "status")), s, sizeof(s)),
            (long long)json_integer_value(json_object_get(row, "n")));
    }
}

static void metrics_text(struct queues_read *r, json_t *items)
{
    struct call *c = r->c;
    struct evbuffer *out = evbuffer_new();
    prom_family(out, "drover_queue_read_ok", "gauge",
                "1 when every queue was read from ZooKeeper for this scrape.");
    evbuffer_add_printf(out, "drover_queue_read_ok %d\n", !r->zk_failed);
    for (size_t f = 0; f < sizeof(qfams) / sizeof(qfams[0]) && json_array_size(items); f++) {
        prom_family(out, qfams[f].name, qfams[f].type, qfams[f].help);
        size_t i;
        json_t *it;
        char t[260], k[140];
        json_array_foreach(items, i, it)
        {
            json_t *v = json_object_get(it, qfams[f].field);
            double x = json_is_number(v) ? json_number_value(v) : 0;
            evbuffer_add_printf(
                out, "%s{tenant=\"%s\",class=\"%s\"} %.17g\n", qfams[f].name,
                prom_label(json_string_value(json_object_get(it, "tenant")), t, sizeof(t)),
                prom_label(json_string_value(json_object_get(it, "class")), k, sizeof(k)),
                x * qfams[f].scale);
        }
    }
    status_family(out, json_object_get(c->loop_data, "jobs"), "drover_jobs",
                  "Jobs by status (every job the tenant has had).");
    status_family(out, json_object_get(c->loop_data, "tasks"), "drover_tasks",
                  "Tasks of the tenant's jobs by status.");
    struct api *a = c->api;
    if (a->metrics_fn)
        a->metrics_fn(out, true, c->who.role == ROLE_SUPER ? NULL : c->who.tenant, a->metrics_arg);
    size_t len = evbuffer_get_length(out);
    c->raw = xmalloc(len + 1);
    evbuffer_remove(out, c->raw, len);
    c->raw[len] = '\0';
    c->raw_type = "text/plain; version=0.0.4";
    evbuffer_free(out);
    c->status = 200;
}

int api__h_workers(PGconn *conn, struct call *c, struct drv_err *err)
{
    c->on_loop = workers_on_loop;
    return 0;
}
