/*
 * conf: the engine's configuration keys (engine.h). The table is the
 * documentation and the validator; it fills a struct engine_opts and needs
 * nothing but src/common.
 */
#include <stddef.h>

#include "engine.h"

const struct config_key engine_config_keys[] = {
    CONFIG_KEY("engine.max_failures", CONFIG_INT, struct engine_opts, max_failures, .deflt = "3",
               .min = 1, .max = 60,
               .help = "failed attempts of a task before it gives up and the job fails"),
    CONFIG_KEY("engine.max_in_flight", CONFIG_INT, struct engine_opts, max_in_flight,
               .deflt = "1000", .min = 0, .max = 1000000,
               .help = "tasks queued or running per job, each a queue item in ZooKeeper "
                       "(0: only the plan's limits, no bound on ZooKeeper's share)"),
    CONFIG_KEY_NOT(
        "engine.rollback", struct engine_opts, no_rollback, .deflt = "true",
        .help = "roll a failed or cancelled job back (false: leave it failed, for debugging)"),
    CONFIG_KEY("engine.task_timeout", CONFIG_DURATION, struct engine_opts, task_timeout_ms,
               .deflt = "0", .min = 0, .max = 86400000,
               .help = "time limit of a task given to workers (0: the plugin's own)"),
    CONFIG_KEY("engine.plan_threads", CONFIG_INT, struct engine_opts, plan_threads, .deflt = "2",
               .min = 1, .max = 64,
               .help = "threads that build jobs' plans (CPU-bound; more jobs wait their turn)"),
    CONFIG_KEY("engine.no_worker_timeout", CONFIG_DURATION, struct engine_opts,
               no_worker_timeout_ms, .deflt = "10m", .min = 0, .max = 86400000,
               .help = "a job with tasks queued and no live worker of its tenant and class gives "
                       "up after this (0: waits for ever; docs/engine.md \"Watchdog\")"),
    CONFIG_KEY("engine.job_deadline", CONFIG_DURATION, struct engine_opts, job_deadline_ms,
               .deflt = "0", .min = 0, .max = 2000000000,
               .help = "a job whose forward plan runs longer than this since it was created "
                       "fails and rolls back (0: no deadline)"),
    CONFIG_KEY("engine.resync_interval", CONFIG_DURATION, struct engine_opts, resync_ms,
               .deflt = "30s", .min = 500, .max = 3600000,
               .help = "how often each droverd lists the announced jobs and the members again "
                       "whatever its watches said: the bound on a job's wait when a watch was "
                       "lost (docs/engine.md \"Lost watches\")"),
    CONFIG_KEY("engine.txn_budget", CONFIG_SIZE, struct engine_opts, txn_budget, .deflt = "256k",
               .min = 16384, .max = 900000,
               .help = "bytes of one ZooKeeper multi-op written by the engine"),
    CONFIG_END,
};
