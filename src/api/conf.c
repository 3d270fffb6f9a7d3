/*
 * conf: the API's configuration keys (api.h). The tables are the
 * documentation and the validator; they fill a struct api_opts and need
 * nothing but src/common. DROVER_UI_DIR, ui.dir's default, is the source
 * tree's ui/, or where the packages install it (CMake's DROVER_UI_DIR).
 */
#include <stddef.h>

#include "api.h"

const struct config_key api_config_keys[] = {
    CONFIG_KEY("http.listen", CONFIG_ADDR, struct api_opts, listen, .deflt = "127.0.0.1:8080",
               .help = "address of the HTTP API"),
    CONFIG_KEY("http.max_body", CONFIG_SIZE, struct api_opts, max_body, .deflt = "4m", .min = 1024,
               .max = 1L << 30, .help = "largest request body accepted (413 beyond)"),
    CONFIG_KEY("http.max_connections", CONFIG_INT, struct api_opts, max_connections,
               .deflt = "1024", .min = 1, .max = 100000, .help = "concurrent HTTP connections"),
    CONFIG_KEY(
        "http.max_connections_per_source", CONFIG_INT, struct api_opts, max_per_source,
        .deflt = "256", .min = 1, .max = 100000,
        .help =
            "concurrent HTTP connections from one client address (a load balancer counts as one)"),
    CONFIG_KEY("http.header_timeout", CONFIG_DURATION, struct api_opts, header_timeout_ms,
               .deflt = "10s", .min = 1000, .max = 600000,
               .help = "time for a request's line and headers to arrive (from the connection or "
                       "the last reply)"),
    CONFIG_KEY("http.body_timeout", CONFIG_DURATION, struct api_opts, body_timeout_ms,
               .deflt = "30s", .min = 1000, .max = 3600000,
               .help = "time for a request's body to arrive once its headers have"),
    CONFIG_KEY("http.timeout", CONFIG_DURATION, struct api_opts, timeout_ms, .deflt = "30s",
               .min = 1000, .max = 3600000,
               .help = "time a reply may go unread, and a database query's limit"),
    CONFIG_KEY("http.max_headers", CONFIG_SIZE, struct api_opts, max_headers, .deflt = "16k",
               .min = 1024, .max = 1L << 20, .help = "largest request line and headers accepted"),
    CONFIG_KEY("http.tls_cert", CONFIG_STRING, struct api_opts, tls_cert, .deflt = "",
               .help = "PEM certificate chain: the API speaks HTTPS when set (with http.tls_key)"),
    CONFIG_KEY("http.tls_key", CONFIG_STRING, struct api_opts, tls_key, .deflt = "",
               .help = "PEM private key of http.tls_cert"),
    CONFIG_KEY("secrets.key_file", CONFIG_STRING, struct api_opts, secrets_key, .deflt = "",
               .help = "file with 64 hex digits (mode 0600) sealing sensitive values at rest"),
    CONFIG_KEY("api.bootstrap_token_file", CONFIG_STRING, struct api_opts, bootstrap_token_file,
               .deflt = "",
               .help =
                   "file the first superadmin token is written to, once (mode 0600); empty: none"),
    CONFIG_KEY("api.token_ttl", CONFIG_DURATION, struct api_opts, token_ttl_ms, .deflt = "90d",
               .min = 60000, .max = 3650L * 86400000L,
               .help = "life of a new API token unless its request asks for less"),
    CONFIG_KEY("api.token_max_ttl", CONFIG_DURATION, struct api_opts, token_max_ttl_ms,
               .deflt = "365d", .min = 60000, .max = 3650L * 86400000L,
               .help = "the longest life a token request may ask for"),
    CONFIG_KEY("api.token_cache_ttl", CONFIG_DURATION, struct api_opts, token_cache_ttl_ms,
               .deflt = "10s", .min = 0, .max = 300000,
               .help = "how long a verified token is trusted without the database; also how long a "
                       "revoked token "
                       "may still work on another node (0: no cache)"),
    CONFIG_KEY(
        "api.heavy_threads", CONFIG_INT, struct api_opts, heavy_threads, .deflt = "2", .min = 1,
        .max = 64,
        .help = "threads that solve and plan (previews, creates, layout changes), apart from the "
                "database pool"),
    CONFIG_KEY("api.heavy_queue", CONFIG_INT, struct api_opts, heavy_queue, .deflt = "32", .min = 1,
               .max = 10000,
               .help = "solving or planning work waiting for a heavy thread beyond which 503"),
    CONFIG_KEY("api.max_requests_per_user", CONFIG_INT, struct api_opts, max_requests_per_user,
               .deflt = "32", .min = 1, .max = 100000,
               .help = "requests of one user in progress on a node; beyond, 429"),
    CONFIG_KEY("api.max_requests_per_tenant", CONFIG_INT, struct api_opts, max_requests_per_tenant,
               .deflt = "128", .min = 1, .max = 100000,
               .help = "requests of one tenant in progress on a node; beyond, 429"),
    CONFIG_KEY("api.max_heavy_per_user", CONFIG_INT, struct api_opts, max_heavy_per_user,
               .deflt = "1", .min = 1, .max = 1000,
               .help = "solving or planning requests of one user at once on a node; more wait"),
    CONFIG_KEY("api.max_heavy_per_tenant", CONFIG_INT, struct api_opts, max_heavy_per_tenant,
               .deflt = "1", .min = 1, .max = 1000,
               .help = "solving or planning requests of one tenant at once on a node; more wait "
                       "(below api.heavy_threads: one tenant never holds them all)"),
    CONFIG_KEY("api.max_heavy_waiting_per_tenant", CONFIG_INT, struct api_opts,
               max_heavy_waiting_per_tenant, .deflt = "16", .min = 1, .max = 10000,
               .help = "solving or planning requests of one tenant waiting on a node; beyond, 429"),
    CONFIG_KEY("api.loopback_tenants", CONFIG_STRING, struct api_opts, loopback_tenants,
               .deflt = "",
               .help = "tenants that may use the loopback provider (root on the workers' hosts), "
                       "comma-separated; \"*\": every tenant (tests, demos); empty: none"),
    CONFIG_KEY("quota.clusters", CONFIG_INT, struct api_opts, quota_clusters, .deflt = "1000",
               .min = 0, .max = 1000000000,
               .help = "a tenant's live clusters, unless the superadmin set its own (0: no limit)"),
    CONFIG_KEY("quota.nodes", CONFIG_INT, struct api_opts, quota_nodes, .deflt = "100000", .min = 0,
               .max = 1000000000,
               .help = "a tenant's nodes in live clusters (the sum of their sizes; 0: no limit)"),
    CONFIG_KEY("quota.jobs", CONFIG_INT, struct api_opts, quota_jobs, .deflt = "100", .min = 0,
               .max = 1000000000,
               .help = "a tenant's jobs not ended; beyond, 429 (deletes exempt; 0: no limit)"),
    CONFIG_KEY("quota.resource_versions", CONFIG_INT, struct api_opts, quota_resource_versions,
               .deflt = "10", .min = 0, .max = 1000000,
               .help = "resources versions a tenant keeps: older ones no running job pins are "
                       "pruned at a push (0: no limit)"),
    CONFIG_KEY("quota.resource_bytes", CONFIG_SIZE, struct api_opts, quota_resource_bytes,
               .deflt = "256m", .min = 0, .max = 1L << 40,
               .help = "bytes of resources a tenant keeps, after pruning (0: no limit)"),
    CONFIG_KEY("ui.dir", CONFIG_STRING, struct api_opts, ui_dir, .deflt = DROVER_UI_DIR,
               .help = "directory of the web dashboard's files, served under /ui/ (read at start); "
                       "empty: none"),
    CONFIG_END,
};

const struct config_key api_autoscale_config_keys[] = {
    CONFIG_KEY("autoscale.target_wait", CONFIG_DURATION, struct api_opts, scale_target_wait_ms,
               .deflt = "10s", .min = 100, .max = 86400000,
               .help = "how long a task may wait in its queue, for the recommended worker count"),
    CONFIG_KEY("autoscale.worker_slots", CONFIG_INT, struct api_opts, scale_worker_slots,
               .deflt = "4", .min = 1, .max = 256,
               .help = "tasks one worker runs at once (its worker.concurrency)"),
    CONFIG_KEY("autoscale.task_time", CONFIG_DURATION, struct api_opts, scale_task_ms,
               .deflt = "1s", .min = 1, .max = 86400000,
               .help = "mean task time assumed for a tenant before one was measured"),
    CONFIG_END,
};

int api_opts_check(const struct api_opts *o, struct drv_err *err)
{
    if (o->max_heavy_per_tenant >= o->heavy_threads)
        return drv_err_set(err, DRV_EINVAL, 0,
                           "key \"api.max_heavy_per_tenant\": %ld must be below "
                           "api.heavy_threads (%ld), so that one tenant never holds every heavy "
                           "thread of a node",
                           o->max_heavy_per_tenant, o->heavy_threads);
    return 0;
}
