/* progconf: see progconf.h. */
#include "progconf.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/thread.h>

#include "log.h"
#include "xalloc.h"

#define COMMON_KEYS(type)                                                                          \
    {"node.id",                                                                                    \
     CONFIG_STRING,                                                                                \
     offsetof(type, common.node_id),                                                               \
     0,                                                                                            \
     "",                                                                                           \
     0,                                                                                            \
     0,                                                                                            \
     NULL,                                                                                         \
     "this process's id among members (default: hostname-pid)"},                                   \
        {"zookeeper.hosts",                                                                        \
         CONFIG_STRING,                                                                            \
         offsetof(type, common.zk_hosts),                                                          \
         1,                                                                                        \
         NULL,                                                                                     \
         0,                                                                                        \
         0,                                                                                        \
         NULL,                                                                                     \
         "ZooKeeper connection string, host:port[,host:port...]"},                                 \
        {"zookeeper.chroot",                                                                       \
         CONFIG_STRING,                                                                            \
         offsetof(type, common.zk_chroot),                                                         \
         0,                                                                                        \
         "",                                                                                       \
         0,                                                                                        \
         0,                                                                                        \
         NULL,                                                                                     \
         "path under which Drover keeps its tree (empty: /)"},                                     \
        {"zookeeper.digest_file",                                                                  \
         CONFIG_STRING,                                                                            \
         offsetof(type, common.zk_digest_file),                                                    \
         0,                                                                                        \
         "",                                                                                       \
         0,                                                                                        \
         0,                                                                                        \
         NULL,                                                                                     \
         "file holding user:password for ZooKeeper digest auth and ACLs"},                         \
        {"zookeeper.session_timeout",                                                              \
         CONFIG_DURATION,                                                                          \
         offsetof(type, common.zk_session_ms),                                                     \
         0,                                                                                        \
         "10s",                                                                                    \
         1000,                                                                                     \
         60000,                                                                                    \
         NULL,                                                                                     \
         "ZooKeeper session timeout"},                                                             \
    {                                                                                              \
        "log.level", CONFIG_ENUM, offsetof(type, common.log_level), 0, "info", 0, 0,               \
            "debug|info|warn|error", "minimum level of log lines"                                  \
    }

const struct config_key droverd_conf_keys[] = {
    COMMON_KEYS(struct droverd_conf),
    {"http.listen", CONFIG_ADDR, offsetof(struct droverd_conf, http_listen), 0, "127.0.0.1:8080", 0,
     0, NULL, "address of the HTTP API"},
    {"http.max_body", CONFIG_SIZE, offsetof(struct droverd_conf, http_max_body), 0, "4m", 1024,
     1L << 30, NULL, "largest request body accepted (413 beyond)"},
    {"http.max_connections", CONFIG_INT, offsetof(struct droverd_conf, http_max_connections), 0,
     "1024", 1, 100000, NULL, "concurrent HTTP connections"},
    {"http.max_connections_per_source", CONFIG_INT,
     offsetof(struct droverd_conf, http_max_per_source), 0, "256", 1, 100000, NULL,
     "concurrent HTTP connections from one client address (a load balancer counts as one)"},
    {"http.header_timeout", CONFIG_DURATION, offsetof(struct droverd_conf, http_header_timeout_ms),
     0, "10s", 1000, 600000, NULL,
     "time for a request's line and headers to arrive (from the connection or the last reply)"},
    {"http.body_timeout", CONFIG_DURATION, offsetof(struct droverd_conf, http_body_timeout_ms), 0,
     "30s", 1000, 3600000, NULL, "time for a request's body to arrive once its headers have"},
    {"http.timeout", CONFIG_DURATION, offsetof(struct droverd_conf, http_timeout_ms), 0, "30s",
     1000, 3600000, NULL, "time a reply may go unread, and a database query's limit"},
    {"http.max_headers", CONFIG_SIZE, offsetof(struct droverd_conf, http_max_headers), 0, "16k",
     1024, 1L << 20, NULL, "largest request line and headers accepted"},
    {"http.tls_cert", CONFIG_STRING, offsetof(struct droverd_conf, tls_cert), 0, "", 0, 0, NULL,
     "PEM certificate chain: the API speaks HTTPS when set (with http.tls_key)"},
    {"http.tls_key", CONFIG_STRING, offsetof(struct droverd_conf, tls_key), 0, "", 0, 0, NULL,
     "PEM private key of http.tls_cert"},
    {"secrets.key_file", CONFIG_STRING, offsetof(struct droverd_conf, secrets_key_file), 0, "", 0,
     0, NULL, "file with 64 hex digits (mode 0600) sealing sensitive values at rest"},
    {"api.bootstrap_token_file", CONFIG_STRING, offsetof(struct droverd_conf, bootstrap_token_file),
     0, "", 0, 0, NULL,
     "file the first superadmin token is written to, once (mode 0600); empty: none"},
    {"api.token_ttl", CONFIG_DURATION, offsetof(struct droverd_conf, token_ttl_ms), 0, "90d", 60000,
     3650L * 86400000L, NULL, "life of a new API token unless its request asks for less"},
    {"api.token_max_ttl", CONFIG_DURATION, offsetof(struct droverd_conf, token_max_ttl_ms), 0,
     "365d", 60000, 3650L * 86400000L, NULL, "the longest life a token request may ask for"},
    {"api.token_cache_ttl", CONFIG_DURATION, offsetof(struct droverd_conf, token_cache_ttl_ms), 0,
     "10s", 0, 300000, NULL,
     "how long a verified token is trusted without the database; also how long a revoked token "
     "may still work on another node (0: no cache)"},
    {"api.heavy_threads", CONFIG_INT, offsetof(struct droverd_conf, heavy_threads), 0, "2", 1, 64,
     NULL,
     "threads that solve and plan (previews, creates, layout changes), apart from the "
     "database pool"},
    {"api.heavy_queue", CONFIG_INT, offsetof(struct droverd_conf, heavy_queue), 0, "32", 1, 10000,
     NULL, "solving or planning work waiting for a heavy thread beyond which 503"},
    {"api.max_requests_per_user", CONFIG_INT, offsetof(struct droverd_conf, max_requests_per_user),
     0, "32", 1, 100000, NULL, "requests of one user in progress on a node; beyond, 429"},
    {"api.max_requests_per_tenant", CONFIG_INT,
     offsetof(struct droverd_conf, max_requests_per_tenant), 0, "128", 1, 100000, NULL,
     "requests of one tenant in progress on a node; beyond, 429"},
    {"api.max_heavy_per_user", CONFIG_INT, offsetof(struct droverd_conf, max_heavy_per_user), 0,
     "2", 1, 1000, NULL, "solving or planning requests of one user at once on a node; more wait"},
    {"api.max_heavy_per_tenant", CONFIG_INT, offsetof(struct droverd_conf, max_heavy_per_tenant), 0,
     "4", 1, 1000, NULL, "solving or planning requests of one tenant at once on a node; more wait"},
    {"api.max_heavy_waiting_per_tenant", CONFIG_INT,
     offsetof(struct droverd_conf, max_heavy_waiting_per_tenant), 0, "16", 1, 10000, NULL,
     "solving or planning requests of one tenant waiting on a node; beyond, 429"},
    {"ui.dir", CONFIG_STRING, offsetof(struct droverd_conf, ui_dir), 0, DROVER_UI_DIR, 0, 0, NULL,
     "directory of the web dashboard's files, served under /ui/ (read at start); empty: none"},
    {"postgres.conninfo", CONFIG_STRING, offsetof(struct droverd_conf, pg_conninfo), 1, NULL, 0, 0,
     NULL, "libpq connection string of the system-of-record database"},
    {"postgres.pool_size", CONFIG_INT, offsetof(struct droverd_conf, pg_pool_size), 0, "4", 1, 64,
     NULL, "database connections (one thread each)"},
    {"engine.max_failures", CONFIG_INT, offsetof(struct droverd_conf, engine_max_failures), 0, "3",
     1, 60, NULL, "failed attempts of a task before it gives up and the job fails"},
    {"engine.max_in_flight", CONFIG_INT, offsetof(struct droverd_conf, engine_max_in_flight), 0,
     "0", 0, 1000000, NULL, "tasks queued or running per job (0: only the plan's limits)"},
    {"engine.rollback", CONFIG_BOOL, offsetof(struct droverd_conf, engine_rollback), 0, "true", 0,
     0, NULL, "roll a failed or cancelled job back (false: leave it failed, for debugging)"},
    {"engine.task_timeout", CONFIG_DURATION, offsetof(struct droverd_conf, engine_task_timeout_ms),
     0, "0", 0, 86400000, NULL, "time limit of a task given to workers (0: the plugin's own)"},
    {"engine.txn_budget", CONFIG_SIZE, offsetof(struct droverd_conf, engine_txn_budget), 0, "256k",
     16384, 900000, NULL, "bytes of one ZooKeeper multi-op written by the engine"},
    {"autoscale.target_wait", CONFIG_DURATION, offsetof(struct droverd_conf, scale_target_wait_ms),
     0, "10s", 100, 86400000, NULL,
     "how long a task may wait in its queue, for the recommended worker count"},
    {"autoscale.worker_slots", CONFIG_INT, offsetof(struct droverd_conf, scale_worker_slots), 0,
     "4", 1, 256, NULL, "tasks one worker runs at once (its worker.concurrency)"},
    {"autoscale.task_time", CONFIG_DURATION, offsetof(struct droverd_conf, scale_task_ms), 0, "1s",
     1, 86400000, NULL, "mean task time assumed for a tenant before one was measured"},
    {"shutdown.grace", CONFIG_DURATION, offsetof(struct droverd_conf, shutdown_grace_ms), 0, "10s",
     0, 600000, NULL, "on SIGTERM: how long to hand jobs over before exiting anyway"},
    {NULL, 0, 0, 0, NULL, 0, 0, NULL, NULL},
};

const struct config_key worker_conf_keys[] = {
    COMMON_KEYS(struct worker_conf),
    {"worker.tenant", CONFIG_STRING, offsetof(struct worker_conf, tenant), 0, "default", 0, 0, NULL,
     "tenant whose task queues this worker serves"},
    {"worker.class", CONFIG_STRING, offsetof(struct worker_conf, worker_class), 0, "default", 0, 0,
     NULL, "worker classes (queues) this worker serves, comma-separated"},
    {"worker.concurrency", CONFIG_INT, offsetof(struct worker_conf, concurrency), 0, "4", 1, 256,
     NULL, "tasks run at once"},
    {"worker.plugin_dir", CONFIG_STRING, offsetof(struct worker_conf, plugin_dir), 0, "plugins", 0,
     0, NULL, "directory of plugin descriptors"},
    {"worker.plugins", CONFIG_STRING, offsetof(struct worker_conf, plugins), 0, "", 0, 0, NULL,
     "plugins to use, comma-separated (empty: every plugin in worker.plugin_dir)"},
    {"worker.grace", CONFIG_DURATION, offsetof(struct worker_conf, grace_ms), 0, "30s", 0, 3600000,
     NULL, "on SIGTERM: how long running tasks may finish before they are handed back"},
    {"worker.resources_dir", CONFIG_STRING, offsetof(struct worker_conf, resources_dir), 0, "", 0,
     0, NULL, "the tenant's resources (scripts, data files) for plugins (DROVER_RESOURCES)"},
    {"secrets.key_file", CONFIG_STRING, offsetof(struct worker_conf, secrets_key_file), 0, "", 0, 0,
     NULL, "the fleet's secrets key (as droverd's): opens sealed values for plugins"},
    {"worker.state_dir", CONFIG_STRING, offsetof(struct worker_conf, state_dir), 0, "", 0, 0, NULL,
     "the worker's own files: resources versions synced from droverd (state_dir/resources)"},
    {"worker.api_url", CONFIG_STRING, offsetof(struct worker_conf, api_url), 0, "", 0, 0, NULL,
     "droverd's URL (http://host:port) to fetch the tenant's resources from (empty: no sync)"},
    {"worker.api_token_file", CONFIG_STRING, offsetof(struct worker_conf, api_token_file), 0, "", 0,
     0, NULL, "a file holding an API token of the worker's tenant, for the resources fetch"},
    {"worker.resources_keep", CONFIG_DURATION, offsetof(struct worker_conf, resources_keep_ms), 0,
     "10m", 1000, 86400000, NULL,
     "an older resources version no task uses is removed this long after its last use"},
    {NULL, 0, 0, 0, NULL, 0, 0, NULL, NULL},
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
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return drv_err_set(err, DRV_EIO, errno, "zookeeper.digest_file \"%s\": %s", path,
                           strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || (st.st_mode & 077)) {
        close(fd);
        return drv_err_set(err, DRV_EINVAL, 0,
                           "zookeeper.digest_file \"%s\": readable by others (chmod 600 it)", path);
    }
    char buf[400];
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n < 0)
        return drv_err_set(err, DRV_EIO, errno, "zookeeper.digest_file \"%s\": %s", path,
                           strerror(errno));
    buf[n] = '\0';
    buf[strcspn(buf, "\r\n")] = '\0';
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
