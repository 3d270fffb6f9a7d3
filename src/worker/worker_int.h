/*
 * worker_int: what the files of src/worker share. Not a public header (tests
 * include it to drive the pieces alone).
 *
 * proc.c runs one plugin as a child process; plugin.c reads plugin
 * descriptors and picks the plugin of a task; task.c turns a queue item into
 * the plugin's task JSON and the plugin's output into a run record; jobctx.c
 * caches the job contexts and nodes maps the tasks need; resources.c syncs
 * the tenant's resources. The take-run-complete loop (worker.h) is worker.c
 * (the worker's life: new, stop, free), take.c (the claim loop: taking items,
 * lost claims, avoidance), attempt.c (a task's attempt on the books: record,
 * complete, hand back; its design note has the task's states) and run.c (from
 * a task's context to its plugin's outcome). sandbox.c decides who a plugin
 * runs as and what it is given, uidmap.c gives each tenant's plugins a host uid
 * of their own, rejoin.c lets a restarted worker serve again at once, conf.c
 * holds the worker's configuration keys, slot.c the tasks droverd assigns to this
 * worker's slots.
 */
#ifndef DROVER_WORKER_INT_H
#define DROVER_WORKER_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <event2/util.h>

#include "error.h"
#include "taskmsg.h"
#include "worker.h"

struct event_base;

/* ---- proc.c: one child process ------------------------------------------------ */

struct worker__proc_opts {
    const char *path;   /* executable (argv[0]; no other argument) */
    const char *cwd;    /* NULL: the worker's */
    char *const *envp;  /* the whole environment, NULL-terminated */
    const char *input;  /* written to standard input, then closed */
    size_t input_len;   /* (a secret may be in it: it is wiped once written) */
    size_t max_output;  /* standard output beyond this: the group is killed (too_large) */
    size_t stderr_tail; /* keep the last this many bytes of standard error */
    int timeout_ms;     /* > 0: the group is killed after this long (timed_out) */
    /*
     * > 0: the plugin's lease (proc.c, "The lease"): the guard kills the group at this
     * moment of CLOCK_BOOTTIME (clock_boot_ms) unless worker__proc_lease moves it
     * later first (lease_expired). 0: no lease; the plugin lives until it ends, is killed
     * by the worker, or the worker dies.
     */
    int64_t lease_until_ms;
    /*
     * run_as: the plugin (not its guard) drops to this uid and gid, with no supplementary
     * groups, before it changes directory and execs (sandbox.c). run_as false: it keeps
     * the worker's identity. A drop that fails is a spawn error (spawn_errno), never a
     * plugin run with the worker's privileges.
     */
    bool run_as;
    uid_t uid;
    gid_t gid;
    /*
     * > 2: a descriptor the guard keeps open (close-on-exec, so the plugin never has it)
     * until it has killed its group: the worker's session-file lock (rejoin.c), so that a
     * free lock proves every plugin of a dead worker dead too. 0: none.
     */
    int hold_fd;
};

struct worker__proc_result {
    bool exited;        /* exit_code is valid */
    int exit_code;      /* when exited */
    int signal;         /* the signal that ended it, 0 when none */
    bool timed_out;     /* the time limit passed */
    bool killed;        /* worker__proc_kill() was called */
    bool too_large;     /* standard output passed max_output */
    bool lease_expired; /* the guard killed the group: the lease was not renewed in time */
    int spawn_errno;    /* the executable could not be started (0 when it was) */
    char *out;          /* standard output, NUL-terminated (owned by the proc) */
    size_t out_len;
    char *err_tail; /* the last stderr_tail bytes of standard error, NUL-terminated */
    size_t err_len;
    size_t err_total;   /* bytes of standard error read in all (only the tail is kept) */
    int64_t start_ms;   /* wall clock, for the run record ("end" is end_ms) */
    int64_t end_ms;     /* wall clock */
    int64_t elapsed_ms; /* the run's duration, on the monotonic clock */
};

/*
 * The most a proc reads from one of its pipes in one turn of the loop (standard output,
 * standard error, the guard's status): a plugin writing without pause gets a slice of the
 * loop, never all of it (test_proc's stderr flood).
 */
#define WORKER__PROC_READ_TURN (64 * 1024)

struct worker__proc;
/* r and its buffers live until the callback returns; the proc is freed after it. */
typedef void (*worker__proc_done_cb)(const struct worker__proc_result *r, void *arg);

/*
 * Start o->path as the leader of a new process group, through a guard
 * process: the guard (a forked copy of the worker that only forks, waits and
 * kills) asks the kernel for a signal when the worker dies and then kills
 * the whole group, so a plugin never outlives a worker killed with SIGKILL.
 * done runs once on base's loop after the plugin has ended and its output is
 * read. Returns NULL (err filled) only when the pipes or the fork fail; an
 * executable that cannot be run is reported through done (spawn_errno).
 */
struct worker__proc *worker__proc_start(struct event_base *base, const struct worker__proc_opts *o,
                                        worker__proc_done_cb done, void *arg, struct drv_err *err);

/* SIGKILL the whole group now; done still follows (killed). Idempotent. */
void worker__proc_kill(struct worker__proc *p);

/*
 * Renew the plugin's lease: the guard may let it run until until_ms (clock_boot_ms), and
 * not later. A lease never shortens (an earlier until_ms than one already sent changes
 * nothing). No-op without a lease or once the plugin has ended. Never blocks.
 */
void worker__proc_lease(struct worker__proc *p, int64_t until_ms);

/*
 * The guard's lease arithmetic, pure (proc.c runs it in the guard; tests call it):
 * worker__lease_wait_ms: how long the guard may sleep before it must look again, for a
 * lease until until_ms at now: -1 with no lease (until_ms <= 0, sleep until something
 * happens), 0 when the lease has run out (kill now), else the ms left (at least 1).
 * worker__lease_renewed: the lease after a renewal to v arrived: the later of the two.
 */
int worker__lease_wait_ms(int64_t until_ms, int64_t now_ms);
/* The lease to send (run.c): half a session timeout after coord last heard the server,
   both on CLOCK_BOOTTIME (coord_session_heard_ms), so a host suspend counts. */
int64_t worker__lease_until(int64_t heard_boot_ms, int timeout_ms);
int64_t worker__lease_renewed(int64_t until_ms, int64_t v);

/* The process group id (the plugin's pid), for tests and logs. */
pid_t worker__proc_pgid(const struct worker__proc *p);

/* Describe how it ended for people: "exit 3", "killed by signal 9", "timed out after 30s", ... */
void worker__proc_describe(const struct worker__proc_result *r, int timeout_ms, char *buf,
                           size_t n);

/* ---- plugin.c: descriptors (docs/plugins.md) ------------------------------------- */

enum worker__plugin_type { WORKER__PROVIDER = 0, WORKER__AUTOMATOR };

struct worker__plugin {
    char *name;
    enum worker__plugin_type type;
    char *dir;     /* the plugin's directory (absolute) */
    char *exec;    /* the executable (absolute), NULL for a builtin */
    char *builtin; /* "noop" for "builtin:noop", else NULL */
    char **serves; /* provider types or action types ("*": any) */
    size_t n_serves;
    json_t *fields; /* the descriptor's "fields" object (never NULL) */
    long timeout_ms;
    bool wants_nodes;
    bool wants_zookeeper; /* "wants": ["zookeeper"]: the worker's ZooKeeper login on stdin */
    bool testing;
};

struct worker__plugins {
    struct worker__plugin *v;
    size_t n;
};

/*
 * Read every <dir>/<name>/plugin.json. Errors name the file and the field:
 * `plugins/sleep/plugin.json: field "type": expected "provider" or
 * "automator"`; two plugins serving one type is an error too. A missing dir is
 * DRV_ENOENT. On success *out is owned by the caller (worker__plugins_free).
 */
int worker__plugins_load(const char *dir, struct worker__plugins **out, struct drv_err *err);
void worker__plugins_free(struct worker__plugins *ps);
/* Keep only the plugins named in allow (comma-separated; NULL or "": keep all). */
void worker__plugins_filter(struct worker__plugins *ps, const char *allow);
/*
 * Unless allowed (worker.testing_plugins), take out the plugins whose descriptor says
 * "testing": true (docs/plugins.md: for tests and benchmarks only), their names into
 * dropped (n bytes, comma-separated). DRV_EINVAL naming the plugin when allow (the
 * worker.plugins list) names one of them: asked for by name, it is an error, not a skip.
 */
int worker__plugins_testing(struct worker__plugins *ps, const char *allow, bool allowed,
                            char *dropped, size_t n, struct drv_err *err);

/* The plugin for a task: a provider for create/confirm/delete (type = the
 * provider's providertype), else an automator (type = the action's type).
 * A plugin naming the type wins over one serving "*". NULL when none. */
const struct worker__plugin *worker__plugins_find(const struct worker__plugins *ps,
                                                  enum worker__plugin_type type, const char *what);

/* Does the descriptor mark this result or config field sensitive? */
bool worker__plugin_sensitive(const struct worker__plugin *p, const char *field);

/* Is taskName one that a provider handles (create, confirm, delete)? */
bool worker__is_provider_task(const char *task_name);

/* ---- task.c: the plugin's task JSON and the run record's outcome -------------------- */

/*
 * The plugin's standard input (docs/plugins.md, task format 2) from a queue
 * item (decoded: taskmsg_item_decode), the job's context (jobs/<id>/ctx, an
 * object) and the nodes map (NULL unless the plugin wants it). The node's
 * config: the tenant's parts first (its values, its types' entries, its types
 * and services), then its provider's facts over them, also whole in
 * config.facts, then the job's parts (clustername, cluster, provider, ssh,
 * service, nodes); no tenant part names a reserved key (facts.h), so nothing
 * the tenant wrote shadows a fact. Sealed values stay sealed: the caller opens
 * them (worker__task_open) just before writing. New reference.
 */
json_t *worker__task_json(const struct taskmsg_item *it, const json_t *ctx, const json_t *nodes);

/*
 * Open, in place, the sealed values of a task JSON (worker__task_json's) with
 * the tenant's key, each at exactly the place it was sealed at (seal.h):
 *   config.provider.<p>  provider/<config.provider.name>, provisioner.<p>
 *   config.cluster.<p>   cluster/<config.clustername>, config.<p>
 *   config.ssh.<p>       cluster/<config.clustername>, ssh.<p>
 *   config.<k>... (the node's key-values) node/<clusterId>/<nodeId>, <k>...
 *   config.facts.<k>...                   node/<clusterId>/<nodeId>, <k>...
 * A value that does not open at its place stops it (DRV_ETLS; DRV_EINVAL for
 * a legacy or unknown format): err names the field's path at its place and
 * never the value. Sealed-looking strings under config.service and
 * config.nodes are left as they are (nothing is sealed there).
 */
int worker__task_open(const unsigned char tkey[32], json_t *task, struct drv_err *err);

/*
 * Set the outcome of a plugin run into rec (the run record: taskmsg_run_end):
 * "status" ("ok" or "failed"), "message" (why, for people), "how", "end",
 * "tail", "result" (sensitive keys sealed with the tenant key at their place,
 * node/<item's cluster>/<item's node>, <key>; dropped when key is NULL, and
 * DRV_EPERM returned), "undo". A task that is not a provider's (create,
 * confirm, delete) whose result names a reserved key (facts.h: a provider's
 * fact or a part of the config) fails, the message naming the key, and its
 * result is not kept: DRV_EINVAL (the caller logs event=result-key-refused).
 * 0, DRV_EPERM or DRV_EINVAL.
 */
int worker__task_outcome(const struct worker__proc_result *r, int timeout_ms,
                         const struct worker__plugin *p, const unsigned char *key,
                         const struct taskmsg_item *it, json_t *rec);

/* ---- worker.c, take.c, attempt.c, run.c: the take-run-complete loop's objects (loop) - */

struct coord_queue;
struct coord_group;
struct worker__ctxs;
struct worker__res;
struct worker__plugins;
struct strmap;
struct event;

enum wstate {
    WT_RECORDING, /* 0: a claimed task's first state (take.c) */
    WT_CONTEXT,
    WT_NODES,
    WT_RESOURCES,
    WT_RUNNING,
    WT_COMPLETING,
    WT_DONE,
    WT_WAITING /* an assignment (slot.c) waiting for a free place: worker.concurrency; last,
                  so that a claimed task never is in it and the states' numbers stay */
};

struct wqueue {
    struct worker *w;
    char *cls;
    char *path;
    struct coord_queue *q;
    struct coord_slots *slots; /* its slots (slot.c), NULL for a worker of an older build */
};

struct wtask {
    struct wtask *next;
    struct worker *w;
    struct wqueue *wq;
    enum wstate st;
    char *item_id; /* the queue item's id, or the slot's name (slot >= 0) */
    int slot;      /* >= 0: assigned in this slot of wq (slot.c), not claimed from the queue */
    struct taskmsg_item item; /* decoded (taskmsg_item_decode); item.root NULL when unread */
    char key[80];
    char job[24];
    char *run_path;
    bool recorded, lost, killed_by_stop;
    bool started;       /* its plugin was started (a slot task given back says "lost", not
                           "returned") */
    bool keyless;       /* a slot task whose key record its owner deleted: the record alone */
    bool sent_unknown;  /* a slot task's outcome multi-op was sent and its answer lost: it
                           may have applied (slot.c) */
    bool lease_expired; /* its plugin was killed by its guard: the lease ran out */
    int refs;
    struct worker__proc *proc;
    const struct worker__plugin *plugin;
    int timeout_ms;
    json_t *rec;
    long res_version;    /* the job's pinned resources version: held while res_dir is set */
    const char *res_dir; /* its directory (resources.c's), NULL: worker.resources_dir */
};

struct worker {
    struct event_base *base;
    struct coord_session *zk;
    char *id, *tenant, *resources, *zk_hosts, *zk_digest, *version;
    char *host_conf; /* DROVER_HOST_CONF, NULL: none */
    unsigned concurrency;
    int grace_ms;
    int hold_fd; /* worker_opts.hold_fd: every plugin's guard keeps it */
    unsigned char key[32];
    bool has_key;
    struct worker__plugins *plugins;
    struct wqueue *queues;
    size_t n_queues, next_queue;
    struct wtask *tasks;
    size_t running;
    unsigned takes;            /* outstanding */
    struct worker__ctxs *ctxs; /* the jobs' contexts and nodes maps (jobctx.c) */
    struct worker__res *res;   /* NULL: no sync, worker.resources_dir for every task */
    struct coord_group *peers;
    size_t n_peers;                  /* other live workers of this tenant sharing a class */
    struct strmap *peer_sessions;    /* member id -> int64_t *: its session in the last view */
    struct event *reclaim_ev;        /* a predecessor's claims are dead: look at the queues again */
    struct strmap *avoided;          /* task key -> int64_t *: passed over until then (monotonic) */
    struct event *avoid_ev;          /* the next expiry: look at the queues again */
    struct worker__sandbox *sandbox; /* who plugins run as, what they get (sandbox.c) */
    char **env;                      /* the plugins' base environment */
    size_t n_env;
    bool stopping, freed;
    bool no_slots; /* test hook worker-old-build: a build before slots (queues only) */
    void (*stop_done)(void *);
    void *stop_arg;
    struct event *grace_ev, *pump_ev, *gc_ev;
    struct event *pump_retry_ev; /* pump again while the session is not connected */
    struct event *lease_ev;      /* renew the plugins' leases */
    struct worker_stats stats;
    unsigned nonce;
};

/* attempt.c: a task's life (its invariants: attempt.c's design note, checked in Debug). */
void worker__wtask_check(const struct wtask *t);
/* The task is over (DONE): unlinked, its references let go, the loop takes more. */
void worker__task_finish(struct wtask *t);
void worker__task_unref(struct wtask *t);
/* Complete the item with the run record's outcome, one multi-op (retried until settled). */
void worker__complete_send(struct wtask *t);
/* Release the item unrecorded: other workers take it at once. */
void worker__hand_back(struct wtask *t);
/* A task told lost (its claim or slot) whose plugin is not running: a queue task ends, writing
   nothing; a slot task writes "lost" (started) or "returned" as its outcome (slot.c). */
void worker__task_drop_lost(struct wtask *t);
/* Complete an item whose job is gone (or that nothing can run) without running it. */
void worker__drop_item(struct wtask *t, const char *why);
/* RECORDING: create the run record under the claim, one multi-op (retried until settled). */
void worker__record_send(struct wtask *t);

/* slot.c: the tasks droverd assigns to this worker's slots (coord_slots). */
void worker__slots_open(struct wqueue *wq);
/* Complete a slot task: its run record, with its outcome, and its key record gone, one
   multi-op (gathered with the turn's other outcomes; retried until settled). */
void worker__slot_complete(struct wtask *t);
/* A slot task ends without its plugin's outcome: "lost" (it started, and was cut short:
   its claim lost, its lease run out, killed past the grace) or "returned" (never started:
   the worker stops), written as its outcome so its owner dispatches it again. */
void worker__slot_give_back(struct wtask *t, const char *status, const char *why);
/* Start the assignments waiting for a place, while there is one. */
void worker__slots_start_waiting(struct worker *w);
/* Stop offering the free slots (worker_stop). */
void worker__slots_withdraw(struct worker *w);
/* Tasks that hold a place (every task but those WAITING). */
size_t worker__active(const struct worker *w);

/* take.c: the claim loop. */
/* Take more on the next turn of the loop (up to the concurrency); no-op once freed. */
void worker__pump(struct worker *w);
/* w->pump_ev's and w->pump_retry_ev's callback: send the takes. */
void worker__pump_cb(evutil_socket_t fd, short what, void *arg);
/* coord's on_lost for the worker's queues: the task's plugin is killed, nothing more written. */
void worker__claim_lost_cb(struct coord_queue *q, const char *item_id, void *arg);
/* coord's skip filter: true for a task key passed over (avoided) until later. */
bool worker__avoid_skip_cb(const char *key, void *arg);
/* w->avoid_ev's callback: forget the avoidances that ran out, look at the queues again. */
void worker__avoid_expire_cb(evutil_socket_t fd, short what, void *arg);

/* worker.c: the worker's life. */
/* Stopping, nothing running or being taken: worker_stop's done is called (once). */
void worker__maybe_stopped(struct worker *w);

/* ---- uidmap.c: one host uid per tenant for its plugins ------------------------------- */

/* "FIRST-LAST" of worker.plugin_uids into first, last (1000 <= first <= last). */
int worker__uid_range_parse(const char *s, uid_t *first, uid_t *last, struct drv_err *err);
/*
 * The lowest uid of [first, last] that is not in used (n entries: sorted in place), not
 * 65534 or 65535, and for which taken (NULL: none) says false; (uid_t)-1 when none is left.
 */
uid_t worker__uid_pick(uid_t first, uid_t last, uid_t *used, size_t n,
                       bool (*taken)(uid_t uid, void *arg), void *arg);
/*
 * The uid of tenant's plugins on this host, recorded as the owner of homes/<tenant>
 * (made and given a new uid of the range when missing: *made). *home: that directory
 * (the caller frees it). Under an exclusive lock on homes/.lock.
 */
int worker__uid_for_tenant(const char *homes, const char *tenant, uid_t first, uid_t last,
                           uid_t *uid, char **home, bool *made, struct drv_err *err);

/* ---- sandbox.c: what a plugin runs as and what it is given -------------------------- */

/* Set up w->sandbox from the options (the plugin user, created when missing). */
int worker__sandbox_new(struct worker *w, const struct worker_opts *o, struct drv_err *err);
void worker__sandbox_free(struct worker__sandbox *s);
/* Fill po's run_as, uid and gid for plugin p. */
void worker__sandbox_proc(const struct worker__sandbox *s, const struct worker__plugin *p,
                          struct worker__proc_opts *po);
/*
 * env (an array of owned strings, NULL-terminated, from the run's env_for) with HOME and
 * TMPDIR set to the tenant's plugin home when plugin p runs as the tenant's uid: env
 * itself or its reallocation (the caller frees what is returned).
 */
char **worker__sandbox_env(const struct worker__sandbox *s, const struct worker__plugin *p,
                           char **env);
/* The plugin user's uid and gid for synced resources (false: keep the worker's). */
bool worker__sandbox_owner(const struct worker__sandbox *s, uid_t *uid, gid_t *gid);
/*
 * Add to a task JSON what the operator gives the plugin: the provider settings of
 * worker.provider_settings over config.provider (provider tasks), and the worker's
 * ZooKeeper login ("zookeeper": {"hosts", "digest"}) for a plugin that wants it.
 */
void worker__sandbox_task(const struct worker__sandbox *s, const struct worker__plugin *p,
                          bool provider_task, json_t *task);
/* True when an environment variable of the worker's may pass to plugins. */
bool worker__sandbox_env_ok(const char *kv);

/* run.c: from the job's context to the plugin's outcome. */
/* The plugins' base environment (the worker's, less DROVER_*, plus the worker's own). */
void worker__env_build(struct worker *w);
/* Free an environment array and its strings (NULL is fine). */
void worker__env_free(char **e);
/* CONTEXT: the job's context, read once per job (jobctx.c); then the plugin runs. */
void worker__need_context(struct wtask *t);
/* jobctx.c's callbacks: a job's context or nodes map read, its waiting tasks go on. */
void worker__run_ctx_ready_cb(const char *job, void *arg);
void worker__run_nodes_ready_cb(const char *job, void *arg);
/* Every 10 s: forget the contexts of jobs idle for a minute. */
void worker__ctx_gc_cb(evutil_socket_t fd, short what, void *arg);
/* resources.c's callback: a version is ready (or failed): the tasks that wait go on. */
void worker__resources_ready_cb(void *arg, long version, int rc, const char *msg);
/* The plugins' lease: renewed LEASE_RENEWALS times a session timeout (proc.c). */
void worker__lease_arm(struct worker *w);
void worker__lease_renew_cb(evutil_socket_t fd, short what, void *arg);

/* ---- jobctx.c: the job contexts and nodes maps read, cached per job ---------------- */

struct coord_session;
struct worker__ctxs;
/* A read of job's context or nodes map ended (well or not). Loop thread. */
typedef void (*worker__ctx_ready_cb)(const char *job, void *arg);

/* An empty cache reading through zk; ctx_ready and nodes_ready are called with arg. */
struct worker__ctxs *worker__ctxs_new(struct coord_session *zk, worker__ctx_ready_cb ctx_ready,
                                      worker__ctx_ready_cb nodes_ready, void *arg);
/*
 * The job's context (jobs/<id>/ctx, an object; borrowed until the next call into the
 * cache), its entry marked used now. NULL while it is being read: then exactly one
 * ctx_ready(job) follows, after which worker__ctx_peek gives the context, or NULL when
 * the read failed (logged; the entry is gone and the next get reads again).
 */
const json_t *worker__ctx_get(struct worker__ctxs *cs, const char *job);
/* The job's context if it is read, else NULL; starts nothing, marks nothing. */
const json_t *worker__ctx_peek(struct worker__ctxs *cs, const char *job);
/* The job's nodes map as last read (borrowed), or NULL. */
const json_t *worker__ctx_nodes(struct worker__ctxs *cs, const char *job);
/* Is the job's nodes map read, at revision rev or newer? */
bool worker__ctx_nodes_fresh(struct worker__ctxs *cs, const char *job, int64_t rev);
/*
 * Read the job's nodes map again (as of revision rev, the task's). 0: a read is in flight
 * (this one or an earlier one), and exactly one nodes_ready(job) follows for it; the map
 * stays as it was when the read fails (logged). DRV_ENOENT: the job's context is not read
 * (nothing started).
 */
int worker__ctx_nodes_read(struct worker__ctxs *cs, const char *job, int64_t rev);
/* Forget the entries idle for a minute whose job in_use(job, arg) says no task needs. */
void worker__ctxs_gc(struct worker__ctxs *cs, bool (*in_use)(const char *job, void *arg),
                     void *arg);
/* No callback from now on (the owner is going away); reads in flight end quietly. */
void worker__ctxs_close(struct worker__ctxs *cs);
/* Free the cache and its entries. NULL is fine. */
void worker__ctxs_free(struct worker__ctxs *cs);

/* ---- resources.c: the tenant's resources, synced from droverd ----------------------- */

struct coord_session;
struct worker__res;

struct worker__res_opts {
    const char *tenant;
    const char *state_dir;  /* versions go to <state_dir>/resources/<version> */
    const char *api_url;    /* http://host[:port][/prefix] of droverd */
    const char *token_file; /* a token of the tenant (any role) */
    long keep_ms;           /* an unused older version stays this long after its last use */
    uid_t own_uid;          /* versions are owned by this user ((uid_t)-1: the worker's) */
    gid_t own_gid;
    /* A version asked for is ready (rc 0) or could not be fetched (rc < 0, msg why). Loop. */
    void (*on_ready)(void *arg, long version, int rc, const char *msg);
    void *arg;
};

/* Scan what an earlier run left, watch /drover/resources/<tenant>. NULL with err. */
struct worker__res *worker__res_new(struct event_base *base, struct coord_session *zk,
                                    const struct worker__res_opts *o, struct drv_err *err);
/*
 * The directory of version (borrowed until worker__res_release; a reference is held so
 * it is not removed): 0. DRV_EAGAIN: not here yet, being fetched; on_ready tells.
 * sha: the version's checksum as pinned (may be NULL).
 */
int worker__res_acquire(struct worker__res *r, long version, const char *sha, const char **dir);
void worker__res_release(struct worker__res *r, long version);
/* Stop fetching and free (the directories stay). NULL is fine. */
void worker__res_free(struct worker__res *r);

#endif
