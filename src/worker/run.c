/*
 * run: one task from its job's context to its plugin's outcome, the part of the
 * take-run-complete loop (take.c, attempt.c) between "recorded" and "completing":
 *
 *   RECORDING --recorded--> CONTEXT --the job's context (jobctx.c)--> [NODES: the nodes map]
 *     --> [RESOURCES: the pinned resources version (resources.c)] --> RUNNING: the plugin
 *     spawned under its guard (proc.c), with the task JSON on stdin and the environment
 *     below --plugin ended--> the run record's outcome --> COMPLETING (attempt.c)
 *
 * Also here: the plugins' environment (an allow-list: sandbox.c), and the lease this loop renews
 * for every running plugin (proc.c, "The lease"). Loop thread only, like attempt.c; the objects are
 * worker_int.h's, and attempt.c's design note numbers their invariants (wtask_check).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <jansson.h>

#include "clock.h"
#include "coord.h"
#include "log.h"
#include "seal.h"
#include "worker_int.h"
#include "xalloc.h"

#define MOD "worker"
#define LEASE_RENEWALS 6 /* lease renewals a session timeout */

extern char **environ;

/* ---- the plugins' environment ---------------------------------------------------- */

static void env_add(struct worker *w, char *kv)
{
    w->env = xrealloc(w->env, (w->n_env + 2) * sizeof(char *));
    w->env[w->n_env++] = kv;
    w->env[w->n_env] = NULL;
}

void worker__env_build(struct worker *w)
{
    for (char **e = environ; *e; e++)
        if (worker__sandbox_env_ok(*e))
            env_add(w, xstrdup(*e));
    env_add(w, xasprintf("DROVER_WORKER_ID=%s", w->id));
    if (w->zk_hosts)
        env_add(w, xasprintf("DROVER_ZK_HOSTS=%s", w->zk_hosts));
    if (w->host_conf)
        env_add(w, xasprintf("DROVER_HOST_CONF=%s", w->host_conf));
}

/* The base environment plus this task's variables: a new array (free each string). */
static char **env_for(struct worker *w, struct wtask *t)
{
    char **e = xcalloc(w->n_env + 6, sizeof(char *));
    size_t n = 0;
    for (size_t i = 0; i < w->n_env; i++)
        e[n++] = xstrdup(w->env[i]);
    e[n++] = xasprintf("DROVER_TASK_ID=%s", t->key);
    e[n++] = xasprintf("DROVER_JOB_ID=%s", t->job);
    e[n++] = xasprintf("DROVER_ATTEMPT=%u", t->item.attempt);
    e[n++] = xasprintf("DROVER_PLUGIN_DIR=%s", t->plugin ? t->plugin->dir : "");
    if (t->res_dir || w->resources)
        e[n++] = xasprintf("DROVER_RESOURCES=%s", t->res_dir ? t->res_dir : w->resources);
    return e;
}

void worker__env_free(char **e)
{
    for (char **p = e; p && *p; p++)
        free(*p);
    free(e);
}

/* ---- running the plugin ---------------------------------------------------------- */

/*
 * The plugins' lease: until half a session timeout after the server last showed the
 * session alive (proc.c, "The lease", has why).
 */
static int64_t lease_until(const struct worker *w)
{
    /* One clock, CLOCK_BOOTTIME, from coord's "heard" to the guard: it goes on while the
       host is suspended, so after a resume the lease is the moment the server last heard
       from us plus half the timeout, long past, not a fresh half timeout (issue 33 item 3:
       a monotonic "heard" carried over as a delay renewed it for half a session after a
       sleep, while the server had expired the session and another worker ran the task). */
    return worker__lease_until(coord_session_heard_ms(w->zk), coord_session_timeout_ms(w->zk));
}

void worker__lease_arm(struct worker *w)
{
    int every = coord_session_timeout_ms(w->zk) / LEASE_RENEWALS;
    if (every < 10)
        every = 10;
    struct timeval tv = {every / 1000, (every % 1000) * 1000};
    evtimer_add(w->lease_ev, &tv);
}

void worker__lease_renew_cb(evutil_socket_t fd, short what, void *arg)
{
    struct worker *w = arg;
    int64_t until = lease_until(w);
    for (struct wtask *t = w->tasks; t; t = t->next)
        if (t->proc)
            worker__proc_lease(t->proc, until);
    worker__lease_arm(w);
}

static void on_plugin_done(const struct worker__proc_result *r, void *arg)
{
    struct wtask *t = arg;
    struct worker *w = t->w;
    t->proc = NULL;
    if (r->lease_expired && !w->freed) {
        /* This loop did not renew in time: it was frozen or stalled, maybe past the
         * session, and the item may be another worker's by now. Write nothing. */
        log_warn(MOD,
                 "event=lease-expired worker=%s task=%s ms=%lld heard_ms_ago=%lld "
                 "session_timeout_ms=%d claim=%s",
                 w->id, t->key, (long long)r->elapsed_ms,
                 (long long)(clock_boot_ms() - coord_session_heard_ms(w->zk)),
                 coord_session_timeout_ms(w->zk), t->lost ? "lost" : "maybe-ours");
        t->lease_expired = true;
        if (!t->lost) {
            t->lost = true;
            w->stats.lost++;
            worker__wtask_check(t);
            worker__hand_back(t); /* DRV_ECONFLICT, nothing changed, when the claim is gone */
            worker__task_unref(t);
            return;
        }
        worker__wtask_check(t);
    }
    if (t->lost || w->freed) {
        if (w->freed)
            worker__task_finish(t);
        else
            worker__task_drop_lost(t);
        worker__task_unref(t);
        return;
    }
    if (t->killed_by_stop) {
        worker__hand_back(t);
        worker__task_unref(t);
        return;
    }
    int rc = worker__task_outcome(r, t->timeout_ms, t->plugin, w->has_key ? w->key : NULL, &t->item,
                                  t->rec);
    if (rc == DRV_EPERM)
        log_error(MOD,
                  "event=secret-dropped task=%s reason=\"no secrets key to seal a sensitive "
                  "result with\"",
                  t->key);
    if (rc == DRV_EINVAL) {
        char q[700];
        log_warn(MOD, "event=result-key-refused worker=%s task=%s node=%s message=%s", w->id,
                 t->key, t->item.node ? t->item.node : "",
                 log_quote(json_string_value(json_object_get(t->rec, "message")), q, sizeof(q)));
    }
    log_info(MOD, "event=task-ended worker=%s task=%s id=%s status=%s how=\"%s\" ms=%lld via=%s",
             w->id, t->key, t->item.task, json_string_value(json_object_get(t->rec, "status")),
             json_string_value(json_object_get(t->rec, "how")), (long long)r->elapsed_ms,
             t->slot >= 0 ? "slot" : "queue");
    t->st = WT_COMPLETING;
    worker__complete_send(t);
    worker__task_unref(t);
}

static void fail_now(struct wtask *t, const char *why)
{
    struct taskmsg_outcome o = {
        .ok = false, .end_ms = clock_wall_ms(), .message = why, .how = "not run"};
    taskmsg_run_end(t->rec, &o);
    log_warn(MOD, "event=task-failed worker=%s task=%s reason=\"%s\"", t->w->id, t->key, why);
    t->st = WT_COMPLETING;
    worker__complete_send(t);
}

static void spawn_plugin(struct wtask *t, const json_t *ctx, const json_t *nodes);

static void run_plugin(struct wtask *t, const json_t *ctx)
{
    struct worker *w = t->w;
    const char *name = t->item.name;
    const char *type = t->item.plugin;
    t->plugin = worker__plugins_find(
        w->plugins, worker__is_provider_task(name) ? WORKER__PROVIDER : WORKER__AUTOMATOR, type);
    if (!t->plugin) {
        char why[256];
        snprintf(why, sizeof(why), "no plugin serves %s type \"%s\" on worker %s",
                 worker__is_provider_task(name) ? "provider" : "action", type, w->id);
        fail_now(t, why);
        return;
    }
    int64_t tmo = t->item.timeout_ms;
    t->timeout_ms = tmo > 0 && tmo < INT32_MAX ? (int)tmo : (int)t->plugin->timeout_ms;
    t->st = WT_RUNNING;
    if (t->plugin->builtin) {
        /* builtin:noop: an outcome without a process, on the next turn of the loop. A
         * provider's confirm returns a name and a documentation address (RFC 5737), so that
         * macros naming the node resolve; nothing ever connects to it. */
        const char *node = t->item.node;
        char out[512];
        if (worker__is_provider_task(name) && name && strcmp(name, "confirm") == 0 && node)
            snprintf(out, sizeof(out),
                     "{\"status\":\"ok\",\"message\":\"noop\",\"result\":{\"hostname\":"
                     "\"%.200s.noop\",\"ipaddresses\":{\"access_v4\":\"192.0.2.1\",\"bind_v4\":"
                     "\"192.0.2.1\"}}}",
                     node);
        else
            snprintf(out, sizeof(out), "{\"status\":\"ok\",\"message\":\"noop\"}");
        t->started = true;
        struct worker__proc_result r = {.exited = true, .out = out};
        r.out_len = strlen(r.out);
        r.start_ms = r.end_ms = clock_wall_ms();
        r.err_tail = "";
        t->refs++;
        on_plugin_done(&r, t);
        return;
    }
    if (t->plugin->wants_nodes) {
        int64_t rev = t->item.nodes_rev;
        if (!worker__ctx_nodes_fresh(w->ctxs, t->job, rev)) {
            t->st = WT_NODES; /* the nodes map comes first: on_nodes_ready runs it */
            if (worker__ctx_nodes_read(w->ctxs, t->job, rev) != 0)
                fail_now(t, "no job context");
            return;
        }
        spawn_plugin(t, ctx, worker__ctx_nodes(w->ctxs, t->job));
        return;
    }
    spawn_plugin(t, ctx, NULL);
}

/*
 * The job's pinned resources (ctx "resources": {"version", "sha256"}), when this worker
 * syncs them: true when the task may go on (t->res_dir set, or no pinned version), false
 * when it waits for the fetch (on_resources runs it again) or has failed.
 */
static bool resources_ready(struct wtask *t, const json_t *ctx)
{
    struct worker *w = t->w;
    const json_t *res = json_object_get(ctx, "resources");
    json_int_t v = json_integer_value(json_object_get(res, "version"));
    if (!w->res || t->res_dir || v <= 0)
        return true;
    const char *sha = json_string_value(json_object_get(res, "sha256"));
    int rc = worker__res_acquire(w->res, (long)v, sha, &t->res_dir);
    t->res_version = (long)v;
    if (rc == 0)
        return true;
    t->res_dir = NULL;
    if (rc == DRV_EAGAIN) {
        log_info(MOD, "event=task-waits-for-resources worker=%s task=%s version=%ld", w->id, t->key,
                 t->res_version);
        t->st = WT_RESOURCES;
        return false;
    }
    char why[160];
    snprintf(why, sizeof(why), "resources version %ld: a checksum other than the pinned one",
             t->res_version);
    fail_now(t, why);
    return false;
}

/* resources.c: a version is ready (or could not be fetched): run the tasks that wait. */
void worker__resources_ready_cb(void *arg, long version, int rc, const char *msg)
{
    struct worker *w = arg;
    for (struct wtask *t = w->tasks; t; t = t->next) {
        if (t->st != WT_RESOURCES || t->res_version != version)
            continue;
        if (w->freed) {
            worker__task_finish(t);
        } else if (t->lost) {
            worker__task_drop_lost(t);
        } else if (rc) {
            fail_now(t, msg);
        } else {
            const json_t *ctx = worker__ctx_peek(w->ctxs, t->job);
            if (ctx)
                run_plugin(t, ctx);
            else
                worker__need_context(t);
        }
        return worker__resources_ready_cb(arg, version, rc, msg); /* the list changed */
    }
}

static void spawn_plugin(struct wtask *t, const json_t *ctx, const json_t *nodes)
{
    struct worker *w = t->w;
    if (!resources_ready(t, ctx))
        return;
    t->st = WT_RUNNING;
    json_t *task = worker__task_json(&t->item, ctx, nodes);
    worker__sandbox_task(w->sandbox, t->plugin, worker__is_provider_task(t->item.name), task);
    struct drv_err err;
    if (w->has_key && worker__task_open(w->key, task, &err) != 0) {
        json_decref(task);
        char why[600];
        snprintf(why, sizeof(why), "cannot open a secret: %s", err.msg);
        char q[700];
        log_error(MOD, "event=secret-refused worker=%s task=%s error=%s", w->id, t->key,
                  log_quote(err.msg, q, sizeof(q))); /* the field's path, never the value */
        fail_now(t, why);
        return;
    }
    char *input = json_dumps(task, JSON_COMPACT);
    json_decref(task);
    char **env = worker__sandbox_env(w->sandbox, t->plugin, env_for(w, t));
    struct worker__proc_opts po = {
        .path = t->plugin->exec,
        .cwd = t->plugin->dir,
        .envp = env,
        .input = input,
        .input_len = strlen(input),
        .max_output = 1 << 20,
        .stderr_tail = 4096,
        .timeout_ms = t->timeout_ms,
        .lease_until_ms = lease_until(w),
        .hold_fd = w->hold_fd,
    };
    worker__sandbox_proc(w->sandbox, t->plugin, &po);
    t->refs++;
    t->started = true;
    t->proc = worker__proc_start(w->base, &po, on_plugin_done, t, &err);
    seal_wipe_free(input);
    worker__env_free(env);
    if (!t->proc) {
        worker__task_unref(t);
        char why[600];
        snprintf(why, sizeof(why), "cannot start the plugin: %s", err.msg);
        fail_now(t, why);
        return;
    }
    log_debug(MOD, "event=task-started worker=%s task=%s plugin=%s pgid=%d", w->id, t->key,
              t->plugin->name, (int)worker__proc_pgid(t->proc));
    worker__wtask_check(t);
}

/* ---- the job's context and nodes map (jobctx.c) ------------------------------------- */

/*
 * jobctx.c read the job's context or nodes map (or failed to): the tasks of the job that
 * wait in state st (CONTEXT or NODES) go on, or fail when what they wait for is missing.
 */
static void job_read(struct worker *w, const char *job, enum wstate st)
{
    const json_t *ctx = worker__ctx_peek(w->ctxs, job);
    const json_t *nodes = st == WT_NODES ? worker__ctx_nodes(w->ctxs, job) : NULL;
    for (struct wtask *t = w->tasks; t; t = t->next) {
        if (t->st != st || strcmp(t->job, job) != 0)
            continue;
        if (t->lost)
            worker__task_drop_lost(t);
        else if (!ctx)
            fail_now(t, "cannot read the job's context from ZooKeeper");
        else if (st == WT_NODES && !nodes)
            fail_now(t, "cannot read the job's nodes map from ZooKeeper");
        else if (st == WT_NODES)
            spawn_plugin(t, ctx, nodes);
        else
            run_plugin(t, ctx);
        return job_read(w, job, st); /* the list changed */
    }
}

void worker__run_ctx_ready_cb(const char *job, void *arg)
{
    job_read(arg, job, WT_CONTEXT);
}

void worker__run_nodes_ready_cb(const char *job, void *arg)
{
    job_read(arg, job, WT_NODES);
}

void worker__need_context(struct wtask *t)
{
    t->st = WT_CONTEXT;
    const json_t *ctx = worker__ctx_get(t->w->ctxs, t->job);
    if (ctx)
        run_plugin(t, ctx); /* else on_ctx_ready runs it */
}

static bool job_in_use(const char *job, void *arg)
{
    struct worker *w = arg;
    for (struct wtask *t = w->tasks; t; t = t->next)
        if (strcmp(t->job, job) == 0)
            return true;
    return false;
}

/* Forget contexts of jobs not seen for a minute. */
void worker__ctx_gc_cb(evutil_socket_t fd, short what, void *arg)
{
    struct worker *w = arg;
    worker__ctxs_gc(w->ctxs, job_in_use, w);
}
