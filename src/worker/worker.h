/*
 * worker: the take-run-complete loop of drover-worker, the fleet's stateless
 * workers (the seeds' "provisioners").
 *
 * A worker serves one tenant and one or more worker classes: it takes task
 * items from /drover/queues/<tenant>/<class>, records each attempt before
 * running it, runs the plugin that serves the task (docs/plugins.md) as a
 * child process, and completes the item and writes the attempt's outcome
 * in one multi-op. docs/worker.md tells the whole story; the formats are in
 * src/common/taskmsg.h.
 *
 * Guarantees (invariant 3, docs/architecture.md), each checked by a test:
 *   - An attempt is recorded (its run record created, under the worker's
 *     claim) before its plugin starts (integration engine_worker_death).
 *   - When the worker's claim on an item is gone or may be gone (ZooKeeper
 *     session suspended past a third of its timeout, or expired), it kills
 *     the plugin's whole process group at once and writes nothing: the item
 *     goes to another worker only after the session has expired, so two
 *     attempts of one task never run at the same time (integration
 *     engine_worker_partition; the sleep plugin's flock checks it).
 *   - The same under a worker frozen (SIGSTOP) or whose loop stalls: each
 *     plugin's guard kills it when the lease the worker's loop renews runs
 *     out, half a session timeout after the server last answered, so before
 *     the session can expire and the item go to another worker
 *     (integration engine_worker_freeze, unit test_proc; proc.c tells why).
 *   - A plugin never outlives its worker, even a worker killed with SIGKILL
 *     (unit test_proc).
 *   - A root worker runs a plugin as worker.plugin_user unless it is listed in
 *     worker.privileged_plugins, with an environment that names no fleet
 *     secret: it cannot read the worker's 0600 files or environment
 *     (integration security_host_plugin; sandbox.c).
 *
 * Threads: everything on the loop thread of the coord session's event_base;
 * plugins are child processes watched from that loop.
 *
 * Ownership: the caller owns the worker (worker_free) and must free it
 * before the coord session.
 */
#ifndef DROVER_WORKER_H
#define DROVER_WORKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "error.h"

struct coord_session;
struct coord_session_opts;

struct event_base;
struct coord_session;
struct worker;

struct worker_opts {
    const char *id;             /* the worker's member id (required) */
    const char *tenant;         /* required */
    const char *classes;        /* comma-separated worker classes, e.g. "default" */
    unsigned concurrency;       /* tasks at once (>= 1) */
    const char *plugin_dir;     /* required */
    const char *plugins;        /* comma-separated allow-list of plugin names, NULL or "": all */
    int testing_plugins;        /* run plugins marked "testing": true (noop, sleep); else they
                                   are skipped, and naming one in plugins is an error */
    int grace_ms;               /* worker_stop: how long running tasks may finish */
    int slots;                  /* worker.slots: also offer slots droverd assigns tasks to
                                   (slot.c, docs/worker.md "Slots"); 0: the queues only */
    const unsigned char *key;   /* the tenant's key (32 bytes) or NULL: sealed values stay sealed */
    const char *resources_dir;  /* DROVER_RESOURCES for plugins, NULL: none */
    const char *zk_hosts;       /* DROVER_ZK_HOSTS for plugins (ssh-pool) */
    const char *zk_digest_file; /* DROVER_ZK_DIGEST_FILE for plugins */
    const char *zk_acl_owner;   /* zookeeper.acl_owner, zookeeper.acl_readers: the ACL of */
    const char *zk_acl_readers; /*   what a plugin that wants zookeeper creates (ssh-pool) */
    const char *host_conf;      /* DROVER_HOST_CONF for plugins (the container provider's
                                   host settings), NULL or "": none */
    const char *version;        /* shown in the member znode */
    /* Resources synced from droverd (docs/worker.md "Resources"): all three, or none and
       resources_dir serves every task. */
    const char *state_dir;        /* versions under <state_dir>/resources */
    const char *api_url;          /* http://host:port of droverd */
    const char *api_token_file;   /* a token of the tenant */
    long resources_keep_ms;       /* unused older versions are removed after this (0: 10 min) */
    const char *secrets_key_file; /* secrets.tenant_key_file: the program loads key from it */
    const char *fleet_key_file;   /* secrets.key_file: must stay "" (refused at start-up) */
    /* The host boundary (sandbox.c, docs/security.md): */
    const char *plugin_uids;        /* "FIRST-LAST": a root worker runs plugins as its
                                       tenant's own uid of this range (uidmap.c); "": as
                                       plugin_user */
    const char *plugin_homes;       /* the host's record of tenants' uids and their plugins'
                                       homes ("": /var/lib/drover-worker/tenants) */
    const char *plugin_user;        /* with plugin_uids "": a root worker runs plugins as
                                       this user (created if missing); "": as itself */
    const char *privileged_plugins; /* comma-separated plugins that keep the worker's root */
    const char *provider_settings;  /* JSON file: providertype -> fields over config.provider */
    /* Restarts (rejoin.c): worker.session_file, and the program's lock on it (> 2, set by the
       program from worker_rejoin_open; 0: none), which every plugin's guard keeps open until
       its plugin's group is dead. */
    const char *session_file;
    int hold_fd;
};

/*
 * The worker.* keys (and secrets.tenant_key_file) of drover-worker's config file:
 * they fill a struct worker_opts (src/worker/conf.c; docs/configuration.md).
 * The program sets id, key, zk_hosts, zk_digest_file, zk_acl_owner, zk_acl_readers and
 * version.
 */
extern const struct config_key worker_config_keys[];

/*
 * Load the plugins, open the queues and start taking (once the session is
 * connected). NULL with err filled on a bad option or plugin descriptor.
 */
struct worker *worker_new(struct event_base *base, struct coord_session *zk,
                          const struct worker_opts *o, struct drv_err *err);

/*
 * Stop taking; running tasks have grace_ms to finish, after which their
 * plugins are killed and their items handed back (released) at once so that
 * other workers take them without waiting for this session to expire. done
 * runs once nothing runs any more. Idempotent.
 */
void worker_stop(struct worker *w, void (*done)(void *arg), void *arg);

/* Tasks running now. */
size_t worker_running(const struct worker *w);

/* Counters since start, for logs and tests. */
struct worker_stats {
    unsigned long taken, succeeded, failed, lost, handed_back;
    unsigned long too_new; /* items of a newer format given back (event=task-item-too-new) */
};
void worker_get_stats(const struct worker *w, struct worker_stats *st);

/* Kill every plugin at once and free (no waiting: use worker_stop first to drain). */
void worker_free(struct worker *w);

/*
 * rejoin.c: restarts without waiting for the dead one's session (docs/worker.md
 * "Restarts"). The program holds one struct worker_rejoin for its life.
 */
struct worker_rejoin {
    int fd;           /* > 2: the session file, locked by this process; 0: none */
    int64_t recorded; /* the session id the file holds now */
};

/*
 * Before the worker's own session: with path (worker.session_file; NULL or "": nothing
 * to do), open it (created 0600; refused when not a regular file of this user with mode
 * 0600) and lock it. Locked: close the session it names (re-attached on a handle of its
 * own with o's hosts and timeout, blocking up to that timeout), whose holders the lock
 * proves dead; r->fd is the locked descriptor, to give the worker as worker_opts.hold_fd.
 * Held by a live process: log event=session-file-busy and go on without it (r->fd 0).
 * 0, or DRV_EIO / DRV_EINVAL naming the file.
 */
int worker_rejoin_open(const char *path, const struct coord_session_opts *o,
                       struct worker_rejoin *r, struct drv_err *err);

/* Write s's id and password into the file when they changed (call on every CONNECTED). */
void worker_rejoin_record(struct worker_rejoin *r, const struct coord_session *s);

/* Close the file (the lock stays while a plugin's guard still has it). */
void worker_rejoin_close(struct worker_rejoin *r);

#endif
