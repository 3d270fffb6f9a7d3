/*
 * progconf: the configuration keys of droverd and drover-worker.
 *
 * One table per program (see src/common/config.h for the format and the
 * errors); `droverd --help-config` and `drover-worker --help-config` print
 * them, and docs/configuration.md lists them. conf/ holds an example of each.
 */
#ifndef DROVER_PROGCONF_H
#define DROVER_PROGCONF_H

#include "config.h"

/* Settings both programs share: identity, ZooKeeper, logging. */
struct common_conf {
    char *node_id;        /* unique among members; default: hostname-pid */
    char *zk_hosts;       /* "host:port,host:port" */
    char *zk_chroot;      /* "" or "/path" */
    char *zk_digest_file; /* "" or a file holding "user:password" (mode 0600) */
    long zk_session_ms;
    char *log_level;
};

struct droverd_conf {
    struct common_conf common;
    char *http_listen;
    char *pg_conninfo;
    long pg_pool_size;
    long http_max_body;
    long http_max_connections;
    long http_max_per_source;
    long http_timeout_ms;
    long http_header_timeout_ms;
    long http_body_timeout_ms;
    long http_max_headers;
    char *tls_cert;
    char *tls_key;
    char *secrets_key_file;
    char *bootstrap_token_file;
    char *ui_dir;
    long engine_max_failures;
    long engine_max_in_flight;
    int engine_rollback;
    long engine_task_timeout_ms;
    long engine_txn_budget;
    long shutdown_grace_ms;
    long token_ttl_ms;
    long token_max_ttl_ms;
    long token_cache_ttl_ms;
    long heavy_threads, heavy_queue;
    long max_requests_per_user, max_requests_per_tenant;
    long max_heavy_per_user, max_heavy_per_tenant, max_heavy_waiting_per_tenant;
    long scale_target_wait_ms, scale_worker_slots, scale_task_ms;
};

struct worker_conf {
    struct common_conf common;
    char *tenant;
    char *worker_class;
    long concurrency;
    char *plugin_dir;
    char *plugins;
    long grace_ms;
    char *resources_dir;
    char *secrets_key_file;
    char *state_dir;      /* resources synced from droverd go below */
    char *api_url;        /* droverd's URL for the worker's fetches */
    char *api_token_file; /* a token of the worker's tenant */
    long resources_keep_ms;
};

extern const struct config_key droverd_conf_keys[];
extern const struct config_key worker_conf_keys[];

/*
 * Fill in what defaults cannot express (node id from host and pid) and check
 * what a table cannot: a node id must be usable as a znode name.
 */
int common_conf_finish(struct common_conf *c, const char *prefix, struct drv_err *err);

/*
 * The start of both daemons' main(): parse --config FILE, --check-config FILE,
 * --help and --help-config; load FILE into conf with keys; finish the common
 * part (id_prefix names a default node id); with --check-config, report and
 * stop. Then set up the process: logger, libraries' logs, SIGPIPE ignored,
 * libevent's pthread support (before any event_base is made).
 *
 * Returns -1 when the program should go on and run, else the exit status
 * main() should return (0 after --help or a good --check-config, 1 for a bad
 * file, 2 for bad arguments); conf is then already freed.
 */
int prog_start(int argc, char **argv, const char *prog, const char *id_prefix,
               const struct config_key *keys, void *conf, struct common_conf *common);

/* ZooKeeper digest credentials read from zookeeper.digest_file ("user:password"). */
struct zk_digest {
    char user[128];
    char password[256];
};

/*
 * Read path (empty: no credentials, both fields empty). The file must not be
 * readable by group or others, since it holds a secret.
 */
int zk_digest_read(const char *path, struct zk_digest *d, struct drv_err *err);
/* Wipe the secret from memory. */
void zk_digest_clear(struct zk_digest *d);

#endif
