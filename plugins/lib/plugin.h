/*
 * plugin: what every Drover plugin executable shares (library drover_plugin).
 *
 * A plugin is a short-lived child of a worker (docs/plugins.md): it reads one
 * task JSON on standard input, does its work, writes one result JSON on
 * standard output and exits. This library is its main() (plugin_main: the
 * plugin gives a table of the task names it serves), reads and checks the
 * task, gives typed access to its config, builds the result, and keeps the
 * time limit.
 * The ssh helpers that providers and the automator share are in sshc.h.
 *
 * Output discipline: standard output carries the result and nothing else
 * (plugin_result_emit() writes it once); everything for people goes to
 * standard error through log.h, one key=value line per event. Secrets (the
 * cluster's private key, provider credentials) are never logged: log ids and
 * fingerprints, not keys.
 *
 * Threads: single-threaded programs; nothing here is thread-safe.
 * Ownership: a struct plugin_task owns its JSON; every json_t and string a
 * getter returns is borrowed from it and lives until plugin_task_free().
 */
#ifndef DROVER_PLUGIN_H
#define DROVER_PLUGIN_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* The largest task JSON read from standard input. */
#define PLUGIN_MAX_TASK (16u << 20)

struct plugin_task {
    json_t *root;           /* the whole task JSON (owned) */
    json_t *config;         /* root's "config" object (borrowed; never NULL after a read) */
    const char *task_id;    /* "<job>.<task index>.<attempt>" */
    const char *task_key;   /* "<job>.<task index>": task_id without the attempt (owned) */
    const char *job_id;     /* "" when absent */
    const char *cluster_id; /* "" when absent */
    const char *tenant;     /* "" when absent */
    const char *task_name;  /* "create", "install", ... */
    const char *node_id;    /* "" when absent */
    const char *service;    /* "" for node-level tasks */
    int attempt;            /* from 1 */
    bool cleanup;           /* a retried create: remove first */
    int64_t timeout_ms;     /* the run's time limit (0: none given) */
    int64_t started_ms;     /* clock_mono_ms() when the task was read */
};

/*
 * Read and check the task JSON from fd (standard input: 0). Required:
 * "taskId" (of the form <job>.<index>.<attempt>, characters [A-Za-z0-9_.-]),
 * "taskName", "config" (an object). Checked when present: "attempt" (a positive
 * integer, equal to the taskId's last part), "timeout_ms" (non-negative), and
 * "nodeId", "clusterId", "tenant", "service" ([A-Za-z0-9_.-], at most 128
 * bytes: they name files and znodes). DRV_EINVAL with a message naming the
 * field, or the JSON error's line and column.
 */
int plugin_task_read(int fd, struct plugin_task *t, struct drv_err *err);

/* Parse and check a task from a string (plugin_task_read's checks). */
int plugin_task_parse(const char *text, size_t len, struct plugin_task *t, struct drv_err *err);

void plugin_task_free(struct plugin_task *t);

/*
 * The value at a dotted path below config ("ssh.private_key",
 * "provider.root"), or NULL when some part is missing or not an object.
 */
json_t *plugin_cfg(const struct plugin_task *t, const char *path);

/* The string at path, or NULL when missing or not a string. */
const char *plugin_cfg_str(const struct plugin_task *t, const char *path);

/* The integer at path (a JSON integer or a decimal string), or def when missing or bad. */
int64_t plugin_cfg_int(const struct plugin_task *t, const char *path, int64_t def);

/*
 * A fact of the task's machine as its provider reported it ("provider-id",
 * "ipaddresses.access_v4", "ssh_host_key", ...): config.facts, which only the
 * provider's own results write (src/common/facts.h, docs/security.md "Three
 * writers"). What a plugin acts on as a machine's identity, address or login
 * comes from here, never from config's top level.
 */
json_t *plugin_fact(const struct plugin_task *t, const char *path);
const char *plugin_fact_str(const struct plugin_task *t, const char *path);
int64_t plugin_fact_int(const struct plugin_task *t, const char *path, int64_t def);

/*
 * The moment (clock_mono_ms() clock, clock.h) by which the plugin should have finished
 * and reported, a margin before the worker's time limit kills it: the limit
 * less a tenth, at most 5 s, at least 1 s (but never more than half of it), so
 * that there is time to kill remote work and report; def_ms after the start
 * when the task gives no limit.
 */
int64_t plugin_deadline_ms(const struct plugin_task *t, int64_t def_ms);

/*
 * The bound of one SSH step (connect, authenticate, one command on the node) that a
 * plugin takes: the cluster config's "ssh.command_timeout" (config.cluster.ssh.
 * command_timeout: a duration such as "90s", "2m", "500ms", or an integer of
 * milliseconds; 1 s to 1 h), else def_ms. A value that is not such a duration is
 * DRV_EINVAL naming the key, so that a typo is not silently the default.
 */
int plugin_ssh_timeout_ms(const struct plugin_task *t, int def_ms, int *out_ms,
                          struct drv_err *err);

/*
 * The time limit the worker enforces on this task (docs/worker.md): the task's
 * timeout_ms, else the "timeout" of the plugin's descriptor (dir/plugin.json),
 * else 30 minutes, the worker's own default. dir NULL: the plugin's directory
 * (plugin_self_dir). A descriptor that cannot be read counts as one without
 * a timeout.
 */
int64_t plugin_limit_ms(const struct plugin_task *t, const char *dir);

/* plugin_deadline_ms's moment for that limit: what a plugin with no default of its own uses. */
int64_t plugin_deadline_limit_ms(const struct plugin_task *t, const char *dir);

/* The directory of the running executable (its descriptor is there), or "." (static). */
const char *plugin_self_dir(void);

/* ---- the result ---- */

struct plugin_result {
    bool ok;
    json_t *result;    /* key-values for the node (owned) */
    json_t *sensitive; /* names of result keys that are secrets (owned) */
    char message[1024];
};

void plugin_result_init(struct plugin_result *r);

/* Set a result key-value; v is stolen (json_string(...) and so on). */
void plugin_result_set(struct plugin_result *r, const char *key, json_t *v);

/* Mark the result ok or failed with a one-line message (newlines become spaces). */
void plugin_result_ok(struct plugin_result *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void plugin_result_fail(struct plugin_result *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/*
 * Write the result as one JSON object on standard output, free its JSON, and
 * return the exit status the program should end with: 0 when ok, 1 when
 * failed (the message says why, for the task log).
 */
int plugin_result_emit(struct plugin_result *r);

/*
 * For main(): fail at once with a message (printed as a failed result on
 * standard output and logged as event=failed). Returns 1.
 */
int plugin_fail_now(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- small helpers ---- */

/* s made of [A-Za-z0-9_.-] only, 1..max bytes. */
bool plugin_name_ok(const char *s, size_t max);

/*
 * s in single quotes for a POSIX shell, with every ' written as '\''. Owned by
 * the caller.
 */
char *plugin_sh_quote(const char *s);

/* Read a whole file (at most max bytes) into a new NUL-terminated string; NULL with err. */
char *plugin_read_file(const char *path, size_t max, size_t *len, struct drv_err *err);

/*
 * Write data to path atomically (a temporary file in the same directory, then
 * rename) with the given mode; the file is never readable by others while being
 * written.
 */
int plugin_write_file(const char *path, const void *data, size_t len, unsigned mode,
                      struct drv_err *err);

/* ---- main(): read the task, dispatch on its name, write the result ---- */

/*
 * One task name a plugin serves and the function that runs it. ctx is the
 * plugin's own (what plugin_main was given), filled by the def's hooks; the
 * function says how it went in r (plugin_result_ok, plugin_result_fail).
 */
typedef void (*plugin_run_fn)(struct plugin_task *t, void *ctx, struct plugin_result *r);

struct plugin_action {
    const char *name; /* the task name: "create", "bootstrap", ... */
    plugin_run_fn run;
};

/*
 * What a plugin is to plugin_main(). For each task, in this order:
 *   check    (may be NULL) check the task and its config, fill ctx; logs the
 *            task. Nonzero: r says why it failed, nothing else runs.
 *   the name: a task named in actions runs that action; another runs other
 *            or, with other NULL, fails: "<name> serves a, b and c, not "x"".
 *   open     (may be NULL) open what the actions share (a ZooKeeper client),
 *            for a task the plugin serves only. Nonzero: r says why, no action.
 *   the action.
 *   close    (may be NULL) free what check and open left in ctx; always runs,
 *            whatever happened before.
 */
struct plugin_def {
    const char *name;                    /* the plugin, for messages ("loopback") */
    const struct plugin_action *actions; /* ended by {NULL, NULL} */
    plugin_run_fn other;                 /* any other task name, or NULL */
    int (*check)(struct plugin_task *t, void *ctx, struct plugin_result *r);
    int (*open)(struct plugin_task *t, void *ctx, struct plugin_result *r);
    void (*close)(void *ctx);
};

/*
 * The whole of a plugin's main(): plugin_init(), read the task from standard
 * input (a bad one fails at once: plugin_fail_now), plugin_serve() it, write
 * the result. Returns the exit status. ctx (the plugin's, zeroed, may be
 * NULL) is handed to every hook and action.
 */
int plugin_main(const struct plugin_def *def, void *ctx);

/* The dispatch part of plugin_main on a task already read: r says how it went. */
void plugin_serve(const struct plugin_def *def, void *ctx, struct plugin_task *t,
                  struct plugin_result *r);

/*
 * Start-up of every plugin: logging (key=value lines on standard error, at
 * DROVER_LOG_LEVEL or info), SIGPIPE ignored, and JSON memory wiped when freed
 * (a task holds the cluster's private key).
 */
void plugin_init(void);

#endif
