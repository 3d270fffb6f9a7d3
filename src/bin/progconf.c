/* progconf: see progconf.h. */
#include "progconf.h"

#include <ctype.h>
#include <getopt.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/thread.h>

#include "log.h"
#include "xalloc.h"

#define COMMON_KEYS(type)                                                                          \
    CONFIG_KEY("node.id", CONFIG_STRING, type, common.node_id, .deflt = "",                        \
               .help = "this process's id among members (default: hostname-pid)"),                 \
        CONFIG_KEY("zookeeper.hosts", CONFIG_STRING, type, common.zk_hosts, .required = 1,         \
                   .help = "ZooKeeper connection string, host:port[,host:port...]"),               \
        CONFIG_KEY("zookeeper.chroot", CONFIG_STRING, type, common.zk_chroot, .deflt = "",         \
                   .help = "path under which Drover keeps its tree (empty: /)"),                   \
        CONFIG_KEY("zookeeper.digest_file", CONFIG_STRING, type, common.zk_digest_file,            \
                   .deflt = "",                                                                    \
                   .help = "file holding user:password for ZooKeeper digest auth and ACLs"),       \
        CONFIG_KEY("zookeeper.session_timeout", CONFIG_DURATION, type, common.zk_session_ms,       \
                   .deflt = "10s", .min = 1000, .max = 60000,                                      \
                   .help = "ZooKeeper session timeout"),                                           \
        CONFIG_KEY("log.level", CONFIG_ENUM, type, common.log_level, .deflt = "info",              \
                   .choices = "debug|info|warn|error", .help = "minimum level of log lines")

const struct config_key droverd_conf_keys[] = {
    COMMON_KEYS(struct droverd_conf),
    CONFIG_KEY("http.listen", CONFIG_ADDR, struct droverd_conf, http_listen,
               .deflt = "127.0.0.1:8080", .help = "address of the HTTP API"),
    CONFIG_KEY("http.max_body", CONFIG_SIZE, struct droverd_conf, http_max_body, .deflt = "4m",
               .min = 1024, .max = 1L << 30, .help = "largest request body accepted (413 beyond)"),
    CONFIG_KEY("http.max_connections", CONFIG_INT, struct droverd_conf, http_max_connections,
               .deflt = "1024", .min = 1, .max = 100000, .help = "concurrent HTTP connections"),
    CONFIG_KEY(
        "http.max_connections_per_source", CONFIG_INT, struct droverd_conf, http_max_per_source,
        .deflt = "256", .min = 1, .max = 100000,
        .help =
            "concurrent HTTP connections from one client address (a load balancer counts as one)"),
    CONFIG_KEY("http.header_timeout", CONFIG_DURATION, struct droverd_conf, http_header_timeout_ms,
               .deflt = "10s", .min = 1000, .max = 600000,
               .help = "time for a request's line and headers to arrive (from the connection or "
                       "the last reply)"),
    CONFIG_KEY("http.body_timeout", CONFIG_DURATION, struct droverd_conf, http_body_timeout_ms,
               .deflt = "30s", .min = 1000, .max = 3600000,
               .help = "time for a request's body to arrive once its headers have"),
    CONFIG_KEY("http.timeout", CONFIG_DURATION, struct droverd_conf, http_timeout_ms,
               .deflt = "30s", .min = 1000, .max = 3600000,
               .help = "time a reply may go unread, and a database query's limit"),
    CONFIG_KEY("http.max_headers", CONFIG_SIZE, struct droverd_conf, http_max_headers,
               .deflt = "16k", .min = 1024, .max = 1L << 20,
               .help = "largest request line and headers accepted"),
    CONFIG_KEY("http.tls_cert", CONFIG_STRING, struct droverd_conf, tls_cert, .deflt = "",
               .help = "PEM certificate chain: the API speaks HTTPS when set (with http.tls_key)"),
    CONFIG_KEY("http.tls_key", CONFIG_STRING, struct droverd_conf, tls_key, .deflt = "",
               .help = "PEM private key of http.tls_cert"),
    CONFIG_KEY("secrets.key_file", CONFIG_STRING, struct droverd_conf, secrets_key_file,
               .deflt = "",
               .help = "file with 64 hex digits (mode 0600) sealing sensitive values at rest"),
    CONFIG_KEY("api.bootstrap_token_file", CONFIG_STRING, struct droverd_conf, bootstrap_token_file,
               .deflt = "",
               .help =
                   "file the first superadmin token is written to, once (mode 0600); empty: none"),
    CONFIG_KEY("api.token_ttl", CONFIG_DURATION, struct droverd_conf, token_ttl_ms, .deflt = "90d",
               .min = 60000, .max = 3650L * 86400000L,
               .help = "life of a new API token unless its request asks for less"),
    CONFIG_KEY("api.token_max_ttl", CONFIG_DURATION, struct droverd_conf, token_max_ttl_ms,
               .deflt = "365d", .min = 60000, .max = 3650L * 86400000L,
               .help = "the longest life a token request may ask for"),
    CONFIG_KEY("api.token_cache_ttl", CONFIG_DURATION, struct droverd_conf, token_cache_ttl_ms,
               .deflt = "10s", .min = 0, .max = 300000,
               .help = "how long a verified token is trusted without the database; also how long a "
                       "revoked token "
                       "may still work on another node (0: no cache)"),
    CONFIG_KEY(
        "api.heavy_threads", CONFIG_INT, struct droverd_conf, heavy_threads, .deflt = "2", .min = 1,
        .max = 64,
        .help = "threads that solve and plan (previews, creates, layout changes), apart from the "
                "database pool"),
    CONFIG_KEY("api.heavy_queue", CONFIG_INT, struct droverd_conf, heavy_queue, .deflt = "32",
               .min = 1, .max = 10000,
               .help = "solving or planning work waiting for a heavy thread beyond which 503"),
    CONFIG_KEY("api.max_requests_per_user", CONFIG_INT, struct droverd_conf, max_requests_per_user,
               .deflt = "32", .min = 1, .max = 100000,
               .help = "requests of one user in progress on a node; beyond, 429"),
    CONFIG_KEY("api.max_requests_per_tenant", CONFIG_INT, struct droverd_conf,
               max_requests_per_tenant, .deflt = "128", .min = 1, .max = 100000,
               .help = "requests of one tenant in progress on a node; beyond, 429"),
    CONFIG_KEY("api.max_heavy_per_user", CONFIG_INT, struct droverd_conf, max_heavy_per_user,
               .deflt = "2", .min = 1, .max = 1000,
               .help = "solving or planning requests of one user at once on a node; more wait"),
    CONFIG_KEY("api.max_heavy_per_tenant", CONFIG_INT, struct droverd_conf, max_heavy_per_tenant,
               .deflt = "4", .min = 1, .max = 1000,
               .help = "solving or planning requests of one tenant at once on a node; more wait"),
    CONFIG_KEY("api.max_heavy_waiting_per_tenant", CONFIG_INT, struct droverd_conf,
               max_heavy_waiting_per_tenant, .deflt = "16", .min = 1, .max = 10000,
               .help = "solving or planning requests of one tenant waiting on a node; beyond, 429"),
    CONFIG_KEY("ui.dir", CONFIG_STRING, struct droverd_conf, ui_dir, .deflt = DROVER_UI_DIR,
               .help = "directory of the web dashboard's files, served under /ui/ (read at start); "
                       "empty: none"),
    CONFIG_KEY("postgres.conninfo", CONFIG_STRING, struct droverd_conf, pg_conninfo, .required = 1,
               .help = "libpq connection string of the system-of-record database"),
    CONFIG_KEY("postgres.pool_size", CONFIG_INT, struct droverd_conf, pg_pool_size, .deflt = "4",
               .min = 1, .max = 64, .help = "database connections (one thread each)"),
    CONFIG_KEY("engine.max_failures", CONFIG_INT, struct droverd_conf, engine_max_failures,
               .deflt = "3", .min = 1, .max = 60,
               .help = "failed attempts of a task before it gives up and the job fails"),
    CONFIG_KEY("engine.max_in_flight", CONFIG_INT, struct droverd_conf, engine_max_in_flight,
               .deflt = "0", .min = 0, .max = 1000000,
               .help = "tasks queued or running per job (0: only the plan's limits)"),
    CONFIG_KEY(
        "engine.rollback", CONFIG_BOOL, struct droverd_conf, engine_rollback, .deflt = "true",
        .help = "roll a failed or cancelled job back (false: leave it failed, for debugging)"),
    CONFIG_KEY("engine.task_timeout", CONFIG_DURATION, struct droverd_conf, engine_task_timeout_ms,
               .deflt = "0", .min = 0, .max = 86400000,
               .help = "time limit of a task given to workers (0: the plugin's own)"),
    CONFIG_KEY("engine.txn_budget", CONFIG_SIZE, struct droverd_conf, engine_txn_budget,
               .deflt = "256k", .min = 16384, .max = 900000,
               .help = "bytes of one ZooKeeper multi-op written by the engine"),
    CONFIG_KEY("autoscale.target_wait", CONFIG_DURATION, struct droverd_conf, scale_target_wait_ms,
               .deflt = "10s", .min = 100, .max = 86400000,
               .help = "how long a task may wait in its queue, for the recommended worker count"),
    CONFIG_KEY("autoscale.worker_slots", CONFIG_INT, struct droverd_conf, scale_worker_slots,
               .deflt = "4", .min = 1, .max = 256,
               .help = "tasks one worker runs at once (its worker.concurrency)"),
    CONFIG_KEY("autoscale.task_time", CONFIG_DURATION, struct droverd_conf, scale_task_ms,
               .deflt = "1s", .min = 1, .max = 86400000,
               .help = "mean task time assumed for a tenant before one was measured"),
    CONFIG_KEY("shutdown.grace", CONFIG_DURATION, struct droverd_conf, shutdown_grace_ms,
               .deflt = "10s", .min = 0, .max = 600000,
               .help = "on SIGTERM: how long to hand jobs over before exiting anyway"),
    CONFIG_END,
};

const struct config_key worker_conf_keys[] = {
    COMMON_KEYS(struct worker_conf),
    CONFIG_KEY("worker.tenant", CONFIG_STRING, struct worker_conf, tenant, .deflt = "default",
               .help = "tenant whose task queues this worker serves"),
    CONFIG_KEY("worker.class", CONFIG_STRING, struct worker_conf, worker_class, .deflt = "default",
               .help = "worker classes (queues) this worker serves, comma-separated"),
    CONFIG_KEY("worker.concurrency", CONFIG_INT, struct worker_conf, concurrency, .deflt = "4",
               .min = 1, .max = 256, .help = "tasks run at once"),
    CONFIG_KEY("worker.plugin_dir", CONFIG_STRING, struct worker_conf, plugin_dir,
               .deflt = "plugins", .help = "directory of plugin descriptors"),
    CONFIG_KEY("worker.plugins", CONFIG_STRING, struct worker_conf, plugins, .deflt = "",
               .help =
                   "plugins to use, comma-separated (empty: every plugin in worker.plugin_dir)"),
    CONFIG_KEY("worker.grace", CONFIG_DURATION, struct worker_conf, grace_ms, .deflt = "30s",
               .min = 0, .max = 3600000,
               .help = "on SIGTERM: how long running tasks may finish before they are handed back"),
    CONFIG_KEY(
        "worker.resources_dir", CONFIG_STRING, struct worker_conf, resources_dir, .deflt = "",
        .help = "the tenant's resources (scripts, data files) for plugins (DROVER_RESOURCES)"),
    CONFIG_KEY("secrets.key_file", CONFIG_STRING, struct worker_conf, secrets_key_file, .deflt = "",
               .help = "the fleet's secrets key (as droverd's): opens sealed values for plugins"),
    CONFIG_KEY(
        "worker.state_dir", CONFIG_STRING, struct worker_conf, state_dir, .deflt = "",
        .help =
            "the worker's own files: resources versions synced from droverd (state_dir/resources)"),
    CONFIG_KEY("worker.api_url", CONFIG_STRING, struct worker_conf, api_url, .deflt = "",
               .help = "droverd's URL (http://host:port) to fetch the tenant's resources from "
                       "(empty: no sync)"),
    CONFIG_KEY(
        "worker.api_token_file", CONFIG_STRING, struct worker_conf, api_token_file, .deflt = "",
        .help = "a file holding an API token of the worker's tenant, for the resources fetch"),
    CONFIG_KEY(
        "worker.resources_keep", CONFIG_DURATION, struct worker_conf, resources_keep_ms,
        .deflt = "10m", .min = 1000, .max = 86400000,
        .help = "an older resources version no task uses is removed this long after its last use"),
    CONFIG_END,
};

int common_conf_finish(struct common_conf *c, const char *prefix, struct drv_err *err)
{
    if (!c->node_id || !*c->node_id) {
        char host[256] = "localhost";
        gethostname(host, sizeof(host) - 1);
        free(c->node_id);
        c->node_id = xasprintf("%s-%s-%ld", prefix, host, (long)getpid());
    }
    size_t len = strlen(c->node_id);
    if (len > 128)
        return drv_err_set(err, DRV_EINVAL, 0, "key \"node.id\": longer than 128 characters");
    for (const char *p = c->node_id; *p; p++) {
        if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_' && *p != '.')
            return drv_err_set(err, DRV_EINVAL, 0,
                               "key \"node.id\": \"%s\" may hold only letters, digits, '-', "
                               "'_' and '.'",
                               c->node_id);
    }
    if (strcmp(c->node_id, ".") == 0 || strcmp(c->node_id, "..") == 0)
        return drv_err_set(err, DRV_EINVAL, 0, "key \"node.id\": \"%s\" is reserved", c->node_id);
    if (c->zk_chroot && *c->zk_chroot && (c->zk_chroot[0] != '/' || c->zk_chroot[1] == '\0'))
        return drv_err_set(err, DRV_EINVAL, 0,
                           "key \"zookeeper.chroot\": \"%s\" must be an absolute path below /",
                           c->zk_chroot);
    return 0;
}

int zk_digest_read(const char *path, struct zk_digest *d, struct drv_err *err)
{
    memset(d, 0, sizeof(*d));
    if (!path || !*path)
        return 0;
    char buf[400];
    int rc = config_read_secret("zookeeper.digest_file", path, buf, sizeof(buf), err);
    if (rc != 0)
        return rc;
    char *colon = strchr(buf, ':');
    if (!colon || colon == buf || !colon[1] || (size_t)(colon - buf) >= sizeof(d->user) ||
        strlen(colon + 1) >= sizeof(d->password)) {
        explicit_bzero(buf, sizeof(buf));
        return drv_err_set(err, DRV_EINVAL, 0,
                           "zookeeper.digest_file \"%s\": expected one line \"user:password\"",
                           path);
    }
    *colon = '\0';
    snprintf(d->user, sizeof(d->user), "%s", buf);
    snprintf(d->password, sizeof(d->password), "%s", colon + 1);
    explicit_bzero(buf, sizeof(buf));
    return 0;
}

void zk_digest_clear(struct zk_digest *d)
{
    explicit_bzero(d, sizeof(*d));
}

static void prog_usage(FILE *f, const char *prog)
{
    fprintf(f,
            "usage: %s --config FILE\n"
            "       %s --check-config FILE   validate a config file and exit\n"
            "       %s --help-config         list the config keys\n",
            prog, prog, prog);
}

int prog_start(int argc, char **argv, const char *prog, const char *id_prefix,
               const struct config_key *keys, void *conf, struct common_conf *common)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},
        {"check-config", required_argument, NULL, 'k'},
        {"help-config", no_argument, NULL, 'H'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *path = NULL;
    int check_only = 0, c;
    while ((c = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
        switch (c) {
        case 'c':
            path = optarg;
            break;
        case 'k':
            path = optarg;
            check_only = 1;
            break;
        case 'H':
            config_print_help(keys);
            return 0;
        case 'h':
            prog_usage(stdout, prog);
            return 0;
        default:
            prog_usage(stderr, prog);
            return 2;
        }
    }
    if (!path || optind != argc) {
        prog_usage(stderr, prog);
        return 2;
    }
    struct drv_err err;
    drv_err_clear(&err);
    int rc = config_load(path, keys, conf, &err);
    if (rc == 0 && common_conf_finish(common, id_prefix, &err) != 0) {
        drv_err_prefix(&err, "%s", path);
        rc = DRV_EINVAL;
    }
    if (rc != 0 || check_only) {
        if (rc != 0)
            fprintf(stderr, "%s: %s\n", prog, err.msg);
        else
            printf("%s: %s: ok\n", prog, path);
        config_free(keys, conf);
        return rc != 0;
    }
    log_init((enum log_level)log_level_parse(common->log_level), 2);
    log_route_libraries();
    signal(SIGPIPE, SIG_IGN);
    evthread_use_pthreads();
    return -1;
}
