/*
 * metrics: /metrics in Prometheus text, and the fleet data the ZooKeeper group
 * watches keep for the fleet views. Loop thread only.
 *
 * /metrics (no token) shows this node only and names no tenant: HTTP, the
 * request durations by route pattern (never the raw path: ids would make a
 * series per cluster), ZooKeeper's session, the PostgreSQL pool, the ring,
 * and the program's own figures (the engine's, api_set_metrics). Tenants'
 * figures (queues, jobs and tasks by status, task durations, the
 * recommended worker count) are on GET /v1/metrics, behind a token
 * (handlers_fleet.c; docs/api.md "Metrics").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include <event2/buffer.h>

#include "api_int.h"
#include "clock.h"
#include "coord.h"
#include "guard.h"
#include "http.h"
#include "server.h"
#include "store.h"
#include "workpool.h"
#include "xalloc.h"

/* ---- fleet views and metrics ---------------------------------------------------- */

/* Each member as {"id", "data"}; a worker member whose ACL does not prove the tenant its
   data names (coord.h, enum coord_member_proof) also says "proven": false, and nothing of
   the API takes it for that tenant's (docs/security.md "ZooKeeper: who made it"). */
static void group_to_json(json_t **slot, const struct coord_member_info *m, size_t n)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *d = json_loads(m[i].json, 0, NULL);
        json_t *e = json_pack("{s:s, s:o}", "id", m[i].id, "data", d ? d : json_null());
        if (m[i].proof == COORD_MEMBER_UNPROVEN)
            json_object_set_new(e, "proven", json_false());
        json_array_append_new(arr, e);
    }
    json_decref(*slot);
    *slot = arr;
}

void api__on_droverd_group(const struct coord_member_info *m, size_t n, void *arg)
{
    struct api *a = arg;
    group_to_json(&a->members, m, n);
}

void api__on_worker_group(const struct coord_member_info *m, size_t n, void *arg)
{
    struct api *a = arg;
    group_to_json(&a->workers, m, n);
    json_t *t = json_object();
    size_t i;
    json_t *w;
    json_array_foreach(a->workers, i, w)
    {
        json_t *tn = json_object_get(json_object_get(w, "data"), "tenant");
        if (json_is_string(tn) && !json_is_false(json_object_get(w, "proven")))
            json_object_set(t, json_string_value(json_object_get(w, "id")), tn);
    }
    pthread_mutex_lock(&a->worker_mu);
    json_decref(a->worker_tenants);
    a->worker_tenants = t;
    pthread_mutex_unlock(&a->worker_mu);
}

bool api__worker_tenant(struct api *a, const char *id, char *out, size_t n)
{
    pthread_mutex_lock(&a->worker_mu);
    const char *t = json_string_value(json_object_get(a->worker_tenants, id));
    if (t)
        snprintf(out, n, "%s", t);
    pthread_mutex_unlock(&a->worker_mu);
    return t != NULL;
}

static const char *method_name(int m)
{
    switch (m) {
    case API_M_GET:
        return "GET";
    case API_M_HEAD:
        return "HEAD";
    case API_M_POST:
        return "POST";
    case API_M_PUT:
        return "PUT";
    case API_M_DELETE:
        return "DELETE";
    case API_M_OTHER:
        return "OTHER";
    default:
        return "UNKNOWN";
    }
}

void api__observe(struct api *a, const char *route, int method, int status, int64_t t0_us)
{
    if (!a->h_req || t0_us <= 0)
        return;
    char labels[200];
    snprintf(labels, sizeof(labels), "route=\"%s%s\",method=\"%s\",code=\"%d\"",
             route && route[0] != '/' ? "/" : "", route ? route : "unmatched", method_name(method),
             status);
    prom_histo_observe(prom_hvec_get(a->h_req, labels), (double)(clock_mono_us() - t0_us) / 1e6);
}

int api__scale_workers(int64_t waiting, int64_t running, double arrival_per_s, double mean_task_s,
                       double target_wait_s, int slots_per_worker)
{
    if (waiting < 0)
        waiting = 0;
    if (arrival_per_s < 0)
        arrival_per_s = 0;
    if (mean_task_s < 0)
        mean_task_s = 0;
    if (target_wait_s <= 0)
        target_wait_s = 1;
    if (slots_per_worker < 1)
        slots_per_worker = 1;
    double slots = arrival_per_s * mean_task_s + (double)waiting * mean_task_s / target_wait_s;
    double w = ceil(slots / slots_per_worker - 1e-9);
    if (w > 1e6)
        w = 1e6;
    int n = w > 0 ? (int)w : 0;
    if (n < 1 && waiting + running > 0)
        n = 1;
    return n;
}

static const char *const zk_states[] = {"connecting", "connected",   "suspended",
                                        "expired",    "auth-failed", "closed"};

json_t *api__members(struct api *a)
{
    return a->members;
}

json_t *api__workers(struct api *a)
{
    return a->workers;
}

void api__metrics(struct api *a, struct api_req *r)
{
    struct api_server_stats st;
    api__server_stats(a->server, &st);
    struct api_guard_stats gs;
    api__guard_stats(a->guard, &gs);
    int heavy_queued = 0;
    workpool_stats(a->heavy_pool, NULL, &heavy_queued);
    struct evbuffer *out = evbuffer_new();
    a->by_status[200]++;
    evbuffer_add_printf(out, "# HELP drover_http_requests_total API replies by status code.\n"
                             "# TYPE drover_http_requests_total counter\n");
    for (int s = 100; s < 600; s++)
        if (a->by_status[s])
            evbuffer_add_printf(out, "drover_http_requests_total{code=\"%d\"} %llu\n", s,
                                a->by_status[s]);
    evbuffer_add_printf(
        out,
        "# HELP drover_http_connections Open HTTP connections within the limits.\n"
        "# TYPE drover_http_connections gauge\n"
        "drover_http_connections %ld\n"
        "# HELP drover_http_connections_overflow Connections beyond the limits, read for a probe.\n"
        "# TYPE drover_http_connections_overflow gauge\n"
        "drover_http_connections_overflow %ld\n"
        "# HELP drover_http_connections_refused_total Connections refused (503 or closed) beyond "
        "http.max_connections or http.max_connections_per_source.\n"
        "# TYPE drover_http_connections_refused_total counter\n"
        "drover_http_connections_refused_total %llu\n"
        "# HELP drover_http_request_timeouts_total Request heads or bodies past their deadline.\n"
        "# TYPE drover_http_request_timeouts_total counter\n"
        "drover_http_request_timeouts_total %llu\n"
        "# HELP drover_token_cache_hits_total Requests authenticated from the token cache.\n"
        "# TYPE drover_token_cache_hits_total counter\n"
        "drover_token_cache_hits_total %llu\n"
        "# HELP drover_token_cache_misses_total Requests whose token was verified in the "
        "database.\n"
        "# TYPE drover_token_cache_misses_total counter\n"
        "drover_token_cache_misses_total %llu\n"
        "# HELP drover_http_bodies_parsed_off_loop_total Request bodies parsed on the parse "
        "pool (larger than 64 KiB).\n"
        "# TYPE drover_http_bodies_parsed_off_loop_total counter\n"
        "drover_http_bodies_parsed_off_loop_total %llu\n"
        "# HELP drover_api_heavy_running Solving or planning requests admitted.\n"
        "# TYPE drover_api_heavy_running gauge\n"
        "drover_api_heavy_running %ld\n"
        "# HELP drover_api_heavy_waiting Solving or planning requests waiting for their "
        "tenant's or user's slot.\n"
        "# TYPE drover_api_heavy_waiting gauge\n"
        "drover_api_heavy_waiting %ld\n"
        "# HELP drover_api_heavy_waits_total Solving or planning requests that had to wait.\n"
        "# TYPE drover_api_heavy_waits_total counter\n"
        "drover_api_heavy_waits_total %llu\n"
        "# HELP drover_api_heavy_pool_queued Heavy work queued for a heavy thread.\n"
        "# TYPE drover_api_heavy_pool_queued gauge\n"
        "drover_api_heavy_pool_queued %d\n"
        "# HELP drover_api_refused_total Requests refused with 429 for their tenant's or "
        "user's limits.\n"
        "# TYPE drover_api_refused_total counter\n"
        "drover_api_refused_total %llu\n"
        "# HELP drover_ring_members Orchestrator nodes in the ring.\n"
        "# TYPE drover_ring_members gauge\n"
        "drover_ring_members %zu\n"
        "# HELP drover_workers Workers registered.\n"
        "# TYPE drover_workers gauge\n"
        "drover_workers %zu\n"
        "# HELP drover_store_healthy 1 when PostgreSQL answered the last ping.\n"
        "# TYPE drover_store_healthy gauge\n"
        "drover_store_healthy %d\n"
        "# HELP drover_zookeeper_connected 1 when the ZooKeeper session is up.\n"
        "# TYPE drover_zookeeper_connected gauge\n"
        "drover_zookeeper_connected %d\n",
        st.open, st.overflow, st.refused + a->refused_overflow, st.timeouts, gs.token_hits,
        gs.token_misses, a->parsed_off_loop, gs.heavy_running, gs.heavy_waiting, gs.heavy_waits,
        heavy_queued, gs.refused, json_array_size(a->members), json_array_size(a->workers),
        store_healthy(a->store), a->zk ? coord_session_state(a->zk) == COORD_CONNECTED : 0);
    int zs = a->zk ? (int)coord_session_state(a->zk) : -1;
    prom_family(out, "drover_zookeeper_session_state", "gauge",
                "1 for the ZooKeeper session's current state, 0 for the others.");
    for (int i = 0; i < (int)(sizeof(zk_states) / sizeof(zk_states[0])); i++)
        evbuffer_add_printf(out, "drover_zookeeper_session_state{state=\"%s\"} %d\n", zk_states[i],
                            zs == i);
    struct store_pool_stats ps;
    store_pool_stats(a->store, &ps);
    evbuffer_add_printf(
        out,
        "# HELP drover_store_pool_size PostgreSQL pool threads (one connection each at most).\n"
        "# TYPE drover_store_pool_size gauge\n"
        "drover_store_pool_size %d\n"
        "# HELP drover_store_pool_busy PostgreSQL pool threads running work.\n"
        "# TYPE drover_store_pool_busy gauge\n"
        "drover_store_pool_busy %d\n"
        "# HELP drover_store_pool_connections PostgreSQL connections open in the pool.\n"
        "# TYPE drover_store_pool_connections gauge\n"
        "drover_store_pool_connections %d\n"
        "# HELP drover_store_pool_queued Database work waiting for a pool thread.\n"
        "# TYPE drover_store_pool_queued gauge\n"
        "drover_store_pool_queued %d\n"
        "# HELP drover_store_pool_work_total Database work submitted to the pool.\n"
        "# TYPE drover_store_pool_work_total counter\n"
        "drover_store_pool_work_total %llu\n"
        "# HELP drover_store_connections_dropped_total PostgreSQL connections the pool dropped "
        "as lost, read-only or shutting down (a restart or a failover).\n"
        "# TYPE drover_store_connections_dropped_total counter\n"
        "drover_store_connections_dropped_total %llu\n"
        "# HELP drover_store_server_changes_total New pool connections that reached another "
        "server than the one before (a failover or switchover seen by this node).\n"
        "# TYPE drover_store_server_changes_total counter\n"
        "drover_store_server_changes_total %llu\n",
        ps.size, ps.busy, ps.connected, ps.queued, ps.submitted, ps.dropped, ps.server_changes);
    prom_hvec_write(a->h_req, out, "drover_http_request_duration_seconds",
                    "API requests from their head's arrival to the reply, by route pattern, "
                    "method and status.",
                    NULL);
    if (a->metrics_fn)
        a->metrics_fn(out, false, NULL, a->metrics_arg);
    size_t len = evbuffer_get_length(out);
    char *text = xmalloc(len + 1);
    evbuffer_remove(out, text, len);
    evbuffer_free(out);
    api__server_reply(r, 200, "text/plain; version=0.0.4", NULL, text, len, false);
}
