/*
 * conf: the worker's configuration keys (worker.h). The table is the
 * documentation and the validator; it fills a struct worker_opts and needs
 * nothing but src/common.
 */
#include <stddef.h>

#include "worker.h"

const struct config_key worker_config_keys[] = {
    CONFIG_KEY("worker.tenant", CONFIG_STRING, struct worker_opts, tenant, .deflt = "default",
               .help = "tenant whose task queues this worker serves"),
    CONFIG_KEY("worker.class", CONFIG_STRING, struct worker_opts, classes, .deflt = "default",
               .help = "worker classes (queues) this worker serves, comma-separated"),
    CONFIG_KEY("worker.concurrency", CONFIG_INT, struct worker_opts, concurrency, .deflt = "4",
               .min = 1, .max = 256, .help = "tasks run at once"),
    CONFIG_KEY("worker.slots", CONFIG_BOOL, struct worker_opts, slots, .deflt = "false",
               .help = "also offer this worker's places as slots that droverd assigns tasks to "
                       "by name (issue 37: no herd of workers per task; docs/worker.md "
                       "\"Slots\"); used for a queue only while every droverd and every live "
                       "worker of that queue says so, else the queue's items, as with false"),
    CONFIG_KEY("worker.plugin_dir", CONFIG_STRING, struct worker_opts, plugin_dir,
               .deflt = "plugins", .help = "directory of plugin descriptors"),
    CONFIG_KEY("worker.plugins", CONFIG_STRING, struct worker_opts, plugins, .deflt = "",
               .help =
                   "plugins to use, comma-separated (empty: every plugin in worker.plugin_dir)"),
    CONFIG_KEY("worker.testing_plugins", CONFIG_BOOL, struct worker_opts, testing_plugins,
               .deflt = "false",
               .help = "run the plugins whose descriptor says \"testing\": true (noop, sleep: "
                       "for tests and benchmarks only; the sleep plugin writes files the task "
                       "names); false: they are skipped, and naming one in worker.plugins "
                       "stops the start"),
    CONFIG_KEY("worker.grace", CONFIG_DURATION, struct worker_opts, grace_ms, .deflt = "30s",
               .min = 0, .max = 3600000,
               .help = "on SIGTERM: how long running tasks may finish before they are handed back"),
    CONFIG_KEY(
        "worker.resources_dir", CONFIG_STRING, struct worker_opts, resources_dir, .deflt = "",
        .help = "the tenant's resources (scripts, data files) for plugins (DROVER_RESOURCES)"),
    CONFIG_KEY("secrets.tenant_key_file", CONFIG_STRING, struct worker_opts, secrets_key_file,
               .deflt = "",
               .help = "the worker's tenant's key (drover key derive): opens that tenant's sealed "
                       "values for plugins; never the fleet key"),
    CONFIG_KEY("secrets.key_file", CONFIG_STRING, struct worker_opts, fleet_key_file, .deflt = "",
               .help = "refused: the fleet key stays on droverd (use secrets.tenant_key_file)"),
    CONFIG_KEY("worker.host_conf", CONFIG_STRING, struct worker_opts, host_conf, .deflt = "",
               .help = "this host's settings for providers that make machines on it (container): "
                       "a key = value file, DROVER_HOST_CONF for plugins"),
    CONFIG_KEY(
        "worker.state_dir", CONFIG_STRING, struct worker_opts, state_dir, .deflt = "",
        .help =
            "the worker's own files: resources versions synced from droverd (state_dir/resources)"),
    CONFIG_KEY("worker.api_url", CONFIG_STRING, struct worker_opts, api_url, .deflt = "",
               .help = "droverd's URL (http://host:port) to fetch the tenant's resources from "
                       "(empty: no sync)"),
    CONFIG_KEY(
        "worker.api_token_file", CONFIG_STRING, struct worker_opts, api_token_file, .deflt = "",
        .help = "a file holding an API token of the worker's tenant, for the resources fetch"),
    CONFIG_KEY(
        "worker.resources_keep", CONFIG_DURATION, struct worker_opts, resources_keep_ms,
        .deflt = "10m", .min = 1000, .max = 86400000,
        .help = "an older resources version no task uses is removed this long after its last use"),
    CONFIG_KEY("worker.plugin_uids", CONFIG_STRING, struct worker_opts, plugin_uids,
               .deflt = "2000000-2999999",
               .help = "FIRST-LAST: host uids no account uses; a worker run as root (or with "
                       "CAP_SETUID and CAP_SETGID) runs its tenant's plugins as that tenant's "
                       "own uid of this range (empty: worker.plugin_user for every tenant)"),
    CONFIG_KEY("worker.plugin_homes", CONFIG_STRING, struct worker_opts, plugin_homes,
               .deflt = "/var/lib/drover-worker/tenants",
               .help = "the host's record of which uid each tenant's plugins have: one "
                       "directory per tenant, owned by that uid, its plugins' HOME and TMPDIR "
                       "(one per host: every worker of the host names the same)"),
    CONFIG_KEY("worker.plugin_user", CONFIG_STRING, struct worker_opts, plugin_user,
               .deflt = "drover-plugin",
               .help = "with worker.plugin_uids empty: a worker run as root runs plugins as "
                       "this unprivileged user (created with useradd when missing), shared by "
                       "every tenant; empty: as the worker itself"),
    CONFIG_KEY("worker.privileged_plugins", CONFIG_STRING, struct worker_opts, privileged_plugins,
               .deflt = "",
               .help = "plugins that keep the worker's root, comma-separated (loopback needs "
                       "it and gives root on this host: only for a trusted tenant)"),
    CONFIG_KEY("worker.provider_settings", CONFIG_STRING, struct worker_opts, provider_settings,
               .deflt = "",
               .help = "JSON file of providertype to provider fields the operator sets (host "
                       "programs, paths, address ranges), written over every provider task's"),
    CONFIG_KEY("worker.session_file", CONFIG_STRING, struct worker_opts, session_file, .deflt = "",
               .help = "a file (0600) the worker locks while it runs and where it keeps its "
                       "ZooKeeper session, so that a restart after a crash ends the dead one's "
                       "session and rejoins at once (empty: wait for it to expire)"),
    CONFIG_END,
};
