/*
 * engine_int: what the files of src/engine share: the job's and the task's state machines,
 * the task log's codecs, the plan's build, and the runtime's types (struct engine, struct
 * ejob, the plans and run records being followed) with the functions of the node and of the
 * job core that every phase calls. Not a public header (tests include it to drive the pure
 * parts alone). Each group of fields that one file owns has that file's header instead,
 * and struct engine / struct ejob hold only a pointer to it, opaque elsewhere:
 *
 *   batch.h     batch.c's: the jobs' parts gathered into shared transactions and multi-ops
 *   assign.h    assign.c's: the workers' slots the jobs hold, the offers, the node's view
 *   commit.h    the commit pipeline's (commit.c, commit_pg.c, commit_zk.c): busy flags,
 *               retries to put, PostgreSQL marks, timers, backoff, the final write
 *   nodes.h     nodes.c's: the cluster as the job sees it, key-values, maps, macros
 *   withdraw.h  withdraw.c's: the withdrawal's counts
 *   watchdog.h  watchdog.c's: who serves which queue, each job's clocks
 *   recon.h     recon.c's pure decisions on resume
 *   job_pg.h    the PostgreSQL work (job_pg.c, on the store's threads)
 *
 * The files:
 *
 *   pure (no I/O; unit-tested alone):
 *     fsm.c       the job's and the task's state machines, as step functions
 *     tasklog.c   the task log's and the job state's znode codecs
 *     plan.c      a job's plan from its pinned inputs (runs on a thread)
 *     recon.c     what a resuming owner does about each task and run record it finds
 *     tasks.c     the in-memory task log of the plans being run, and what is to be written
 *   the node:
 *     engine.c    which jobs this node owns: members, ring, the job list, queues, the
 *                 plan pool
 *     janitor.c   periodic duties of this node's share of the ring
 *     watchdog.c  a job that cannot go on says so, then gives up
 *     metrics.c   what the engine shows on /metrics
 *     conf.c      the engine's configuration keys (engine.h)
 *   one job (struct ejob):
 *     job.c       the job core: contend, load the rows, handover, control requests,
 *                 the state machine's driver, the end; the only file that changes
 *                 j->own and enters a phase
 *     jobstart.c  phase "start": a first start, from the rows to ACTIVE (and the plan's
 *                 build, which a resume shares)
 *     jobresume.c phase "start": a resume from the task log, with its reconciliation
 *     run.c       phase "run": run records, results, the tasks' events
 *     withdraw.c  taking the job's queued items back (pause, cancel, give-up)
 *     nodes.c     the cluster as the job sees it: key-values, the nodes map, macros
 *     commit.c    phase "commit": the job's fenced writes, the rounds and the final write
 *     commit_pg.c a round's PostgreSQL batch
 *     commit_zk.c a round's ZooKeeper multi-op, with the dispatch
 *     assign.c    the dispatch into the workers' slots (when all can), their offers
 *     sweep.c     phase "sweep": the ZooKeeper subtree removed, then the lock released
 *   below the jobs:
 *     batch.c     the rounds and parts of all the jobs together: one transaction, one
 *                 multi-op; calls the store's work and coord, and of the jobs only the
 *                 callbacks their parts came with
 *     job_pg.c    the PostgreSQL work (pool threads)
 *
 * The call rule: the phases call the job core (ref/unref, event, finish, lost, release,
 * activate, wind_up), and reach a group only through its owner's header (engine__kick:
 * write what is dirty, which any phase may ask for); only job.c enters a phase:
 * engine__job_start_new (jobstart.c) and engine__job_resume (jobresume.c),
 * engine__job_activate (ACTIVE: run.c's watch of the run records) and
 * engine__job_wind_up (FINISHING: sweep.c). So each transition of j->own is made in job.c,
 * where its invariants are checked (engine__job_check). The commit hands its parts down to
 * the batch, the batch to the store; nothing below calls back up but the completion
 * callbacks handed down with the parts.
 */
#ifndef DROVER_ENGINE_INT_H
#define DROVER_ENGINE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/util.h>

#include "engine.h"
#include "error.h"
#include "format.h"
#include "promtext.h"

/* ---- fsm.c: jobs --------------------------------------------------------------------- */

enum engine_phase {
    ENGINE_PH_PENDING = 0,
    ENGINE_PH_RUNNING,
    ENGINE_PH_PAUSED,
    ENGINE_PH_DRAINING,     /* forward plan stopped (failure or cancel): in flight finish */
    ENGINE_PH_ROLLING_BACK, /* the rollback plan runs */
    ENGINE_PH_RB_DRAINING,  /* a rollback task gave up: in flight finish */
    ENGINE_PH_SUCCEEDED,
    ENGINE_PH_ROLLED_BACK,
    ENGINE_PH_CANCELLED,
    ENGINE_PH_FAILED,
    ENGINE_PH_NEEDS_OPERATOR,
    ENGINE_PH_COUNT
};

enum engine_job_event {
    ENGINE_EV_START = 1, /* the owner has the job and its plan can be made */
    ENGINE_EV_PROGRESS,  /* a task ended or was withdrawn: look at the facts again */
    ENGINE_EV_GAVE_UP,   /* a task failed past its retries */
    ENGINE_EV_PAUSE,
    ENGINE_EV_RESUME,
    ENGINE_EV_CANCEL,
    ENGINE_EV_STALLED, /* the watchdog gave up: no worker serves it, or past its deadline */
};

/* What the job step needs to know, after the event's own bookkeeping. */
struct engine_job_facts {
    size_t in_flight;     /* tasks queued or running */
    bool plan_done;       /* every task of the current plan succeeded (or was skipped) */
    bool cancel;          /* a cancel was asked for */
    bool paused;          /* a pause was asked for and not resumed (before START) */
    bool rollback_wanted; /* roll back a failed or cancelled forward plan */
};

enum engine_job_action {
    ENGINE_ACT_PLAN = 1 << 0,           /* build the forward plan */
    ENGINE_ACT_RECORD = 1 << 1,         /* write the new phase (ZooKeeper, PostgreSQL) */
    ENGINE_ACT_WITHDRAW = 1 << 2,       /* take back queued items nobody has claimed */
    ENGINE_ACT_BUILD_ROLLBACK = 1 << 3, /* make the rollback plan from the task states */
    ENGINE_ACT_FINISH = 1 << 4,         /* final status, cluster state, snapshot, clean up */
};

struct engine_job_out {
    enum engine_phase phase;
    unsigned actions; /* enum engine_job_action bits */
};

struct engine_job_out engine_job_step(enum engine_phase ph, enum engine_job_event ev,
                                      const struct engine_job_facts *f);
const char *engine_phase_name(enum engine_phase ph);
int engine_phase_parse(const char *s);
/* The job status the API shows (docs/api.md): "running", "rolling-back", ... */
const char *engine_phase_status(enum engine_phase ph, bool cancel);
bool engine_phase_final(enum engine_phase ph);
/* The event a resuming owner feeds a job that is not final: START for a job still
 * PENDING (its first owner died between its znodes and START), PROGRESS otherwise. */
enum engine_job_event engine_resume_event(enum engine_phase ph);
bool engine_phase_dispatches(enum engine_phase ph);
bool engine_phase_rollback(enum engine_phase ph);

/* ---- fsm.c: tasks -------------------------------------------------------------------- */

enum engine_task_state {
    ENGINE_TS_WAITING = 0,
    ENGINE_TS_PENDING,
    ENGINE_TS_QUEUED,
    ENGINE_TS_RUNNING,
    ENGINE_TS_SUCCEEDED,
    ENGINE_TS_FAILED,
    ENGINE_TS_FAILED_DEP,
    ENGINE_TS_SKIPPED,
    ENGINE_TS_CANCELLED,
    ENGINE_TS_COUNT
};

#define ENGINE_MAX_ATTEMPT 61 /* one base-62 digit in the task log */

/* A task's record: what the task log keeps (state as a letter, attempt, failures). */
struct engine_task_rec {
    uint8_t state; /* enum engine_task_state */
    uint8_t attempt;
    uint8_t failures;
};

enum engine_task_event {
    ENGINE_TEV_DISPATCH = 1, /* the planner's bookkeeping let it go */
    ENGINE_TEV_STARTED,      /* a worker recorded the attempt */
    ENGINE_TEV_OK,
    ENGINE_TEV_FAIL,
    ENGINE_TEV_WITHDRAWN, /* its queue item was taken back unclaimed */
    ENGINE_TEV_CANCEL,    /* the job ends without it */
    ENGINE_TEV_LOST,      /* its attempt was cut short with its worker's slot (worker.md) */
};

struct engine_task_policy {
    unsigned max_failures; /* >= 1: failures before giving up */
    bool is_create;        /* a provider's create: retried with cleanup */
};

enum engine_task_action {
    ENGINE_TACT_PUT = 1 << 0,     /* put the task on its queue with the new attempt */
    ENGINE_TACT_CLEANUP = 1 << 1, /* ... asking the plugin to remove an earlier attempt's work */
    ENGINE_TACT_AVOID_WORKER = 1 << 2, /* ... preferably not on the worker that just failed */
    ENGINE_TACT_EXEC_OK = 1 << 3,      /* tell the planner's bookkeeping: succeeded */
    ENGINE_TACT_EXEC_FAIL = 1 << 4,    /* ... failed */
    ENGINE_TACT_EXEC_REQUEUE = 1 << 5, /* ... back to ready */
    ENGINE_TACT_GAVE_UP = 1 << 6,      /* the job hears ENGINE_EV_GAVE_UP */
};

struct engine_task_out {
    enum engine_task_state state;
    unsigned actions; /* enum engine_task_action bits */
};

/* Step t (updated in place) by ev under pol. */
struct engine_task_out engine_task_step(struct engine_task_rec *t, enum engine_task_event ev,
                                        const struct engine_task_policy *pol);
const char *engine_task_state_name(enum engine_task_state s);
int engine_task_state_parse(const char *s);
/* The task log's letter of a state ('.', 'q', 'S', 'F', 'K', 'C'). */
char engine_task_letter(enum engine_task_state s);

/* ---- tasklog.c: znode codecs ---------------------------------------------------------- */

/* The task log's and the state's format is the job's (format.h): DROVER_FORMAT_MIN_READ up to
   DROVER_FORMAT_VERSION are read, a job's own written. */
/* The largest encoding of a job's state znode (engine__state_encode: its error of 255 bytes
   escaped at 6 bytes each at worst, and the fields around it). */
#define ENGINE_STATE_MAX_JSON 2048
#define ENGINE_LOG_CHUNK 512 /* tasks per task-log znode (~1.6 KB of JSON) */
/* Run records whose rows are in PostgreSQL kept in runs/ before they are deleted, all at
   once (commit_zk.c): a small job's go with its subtree, and no delete makes the owner's
   own runs/ watch fire and list again. */
#define ENGINE_RUNS_KEEP 64

/* Encode tasks [first, first + n) of recs as one chunk's JSON text (new string). */
char *engine__log_encode(const struct engine_task_rec *recs, size_t first, size_t n, int format);
/*
 * Decode a chunk into recs[0..n): the chunk must say it starts at first and
 * holds n tasks. A task found 'q' decodes as QUEUED; '.' as WAITING.
 * DRV_EINVAL (err says why) on anything else, a format newer than this build
 * reads included.
 */
int engine__log_decode(const char *json, size_t len, size_t first, size_t n,
                       struct engine_task_rec *recs, struct drv_err *err);

/* The job's state znode (jobs/<id>/state): what a new owner needs first. */
struct engine_state {
    int format;
    enum engine_phase phase;
    bool cancel;
    bool paused;
    uint32_t tasks;    /* forward plan */
    uint32_t rb_tasks; /* rollback plan, 0 before it exists */
    char plan_sha[65]; /* SHA-256 of the forward plan's JSON text, hex */
    char rb_sha[65];
    uint64_t nodes_rev; /* bumped whenever a node's key-values change */
    char error[256];    /* why the job failed, "" when it did not */
};

char *engine__state_encode(const struct engine_state *st, const char *owner, int64_t token);
int engine__state_decode(const char *json, size_t len, struct engine_state *st,
                         struct drv_err *err);

/* Base-62 digit of v (0..61) and back (-1 when not a digit). */
char engine__b62(unsigned v);
int engine__b62_value(char c);

/* ---- plan.c: a job's plan from its pinned inputs (pure) ------------------------------ */

#include <jansson.h>

struct planner_plan;
struct planner_exec;
struct planner_input;
struct planner_task;
struct model_catalog;
struct model_catset;

struct engine__plan_in {
    const char *op;            /* the API's operation name */
    const json_t *request;     /* the job's request (configure's "restart") */
    const json_t *catalog;     /* [{kind, name, body}]: the tenant's catalogue as pinned */
    struct model_catset *set;  /* the same parsed and shared (borrowed), or NULL: parse catalog */
    const char *template_name; /* the cluster's template */
    const char *provider;      /* the cluster's provider (may be NULL) */
    const json_t *start;       /* layout before the operation (NULL or null: none) */
    const json_t *target;      /* layout after it (NULL: the same as start) */
    const json_t *subset;      /* services the operation acts on (NULL: all) */
    int format;                /* the job's format version: the plan's format_version */
};

struct engine__plan_out {
    struct planner_plan *plan;
    char *text; /* planner_plan_to_json_text */
    size_t len;
    char sha[65];
    struct planner_input *in;        /* kept: rollback plans need its services and layouts */
    const struct model_catalog *cat; /* own_cat, or set's: in borrows from it */
    struct model_catalog *own_cat;   /* parsed from the inputs' rows */
    struct model_catset *set;        /* a reference to the shared catalogue cat is, or NULL */
    json_t *target_layout; /* per node with ids: the cluster's layout once the job succeeds */
    /* node id -> {hardwaretype, imagetype, services, entries}: entries are the types'
       providermap entries for the job's provider (the tenant's: no reserved key, facts.h) */
    json_t *nodeinfo;
    size_t dropped; /* reserved keys left out of entries (stored before the API refused them) */
    char dropped_key[160]; /* the first, "<type>.providermap.<provider>.<key>" */
    json_t *provider;      /* {name, providertype, fields... (sealed as stored)} */
};

void engine__sha256_hex(const char *data, size_t len, char out[65]);
/* The planner's operation for an API operation name (the job row's), or -1: the planner's
 * mapping (planner_api_op_plan), with the request's "restart". */
int engine__op_parse(const char *op, const json_t *request);
int engine__plan_build(const struct engine__plan_in *in, struct engine__plan_out *out,
                       struct drv_err *err);
void engine__plan_out_clear(struct engine__plan_out *o);
/* A plan's JSON text back (planner_plan_to_json_text's): for tools and tests. */
int engine__plan_from_text(const char *text, size_t len, struct planner_plan **out,
                           struct drv_err *err);

/* ---- the runtime's types (engine.c, job.c and the phases) ----------------------------- */

struct engine;
struct ejob;
struct coord_queue;
struct coord_watch;
struct coord_watcher;
struct coord_lock;
struct store;

/* A task queue this node puts on: /drover/queues/<tenant>/<class>. */
struct equeue {
    char *path;
    struct coord_queue *q;
};

/* The queue for tenant and class, opened on first use (engine.c). An open that fails is
 * retried by coord with backoff until it works; dispatch waits for coord_queue_is_open. */
struct equeue *engine__queue(struct engine *e, const char *tenant, const char *cls);

/*
 * Run fn(arg) on a thread of the engine's plan pool, then done(arg) on the loop (heavy pure
 * work: plans). At most e->plan_threads run at once; the rest wait in order, never on the
 * loop. engine__offload_init starts the pool (threads <= 0: ENGINE_PLAN_THREADS);
 * engine__offload_free waits for every build (their done run) and stops it.
 */
#define ENGINE_PLAN_THREADS 2 /* a plan is CPU-bound: more than the cores only adds memory */
void engine__offload(struct engine *e, void (*fn)(void *), void (*done)(void *), void *arg);
void engine__offload_init(struct engine *e, int threads);
void engine__offload_free(struct engine *e);

/* One run record being followed (jobs/<id>/runs/<name>). */
struct erun {
    struct ejob *j;
    char *name;
    char *path;
    char phase;
    uint32_t idx;
    unsigned attempt;
    struct coord_watch *w; /* while waiting for its outcome */
    bool reading;
    bool started;   /* its start was seen */
    bool ended;     /* its outcome was seen */
    bool recorded;  /* its PostgreSQL row is written */
    bool deleting;  /* its delete is in a ZooKeeper transaction */
    bool queued_pg; /* its row is in the PostgreSQL batch */
    bool deleted;   /* its delete was committed */
    bool refused;   /* its delete was refused (NOAUTH): not sent again, the sweep tries it */
    bool trace;     /* the owner's trace of a lost attempt, never in ZooKeeper (assign.c) */
    char *row;      /* the run name of its PostgreSQL row when not its own: the trace's, for
                       the worker's record of a traced attempt (run.c), so one row each */
    json_t *data;   /* the record as last read */
};

/* One plan being run: the forward plan or the rollback plan. */
struct eplan {
    char phase; /* 'f' or 'r' */
    struct planner_plan *plan;
    struct planner_exec *x;
    struct engine_task_rec *recs; /* the task log, in memory */
    uint32_t n;
    size_t n_chunks;
    int32_t *chunk_ver;   /* ZooKeeper versions of log/<phase><k> */
    uint8_t *chunk_dirty; /* to write in the next transaction */
    char **worker;        /* worker of the current attempt (for "avoid"), may be NULL */
    uint8_t *pg_dirty;    /* the task's PostgreSQL row needs an update (and is in pg_list) */
    uint32_t *pg_list;    /* the tasks whose flag is set */
    size_t n_pg, cap_pg;
    int64_t *t_start, *t_end; /* of the current attempt, ms (0: unknown) */
    bool owns_plan;           /* the rollback plan is the job's; the forward plan is po's */
    char sha[65];
    size_t in_flight; /* queued or running */
    size_t done;      /* succeeded or skipped */
    bool gave_up;     /* a task failed past its retries */
};

struct loopq;
struct event;
struct offload;
struct workpool;
struct coord_group;
struct coord_ring;
struct coord_txn;
struct strmap;
struct macro_cluster;
struct recon;
struct ebatch;
struct ecommit;
struct ewithdraw;
struct enodes;
struct ewatchdog;
struct ewatch;
struct eassign;
struct ejassign;
struct resync_read;

struct engine {
    struct event_base *base;
    struct coord_session *zk;
    struct store *db;
    char *node_id;
    size_t peers_serving; /* engine_peers_serving, from the last members' listing */
    unsigned max_failures, max_in_flight;
    bool no_rollback;
    bool fault_final; /* test hook (DROVER_FAULT=crash-before-final-write): exit there */
    size_t budget;
    size_t zk_max; /* the most one multi-op may carry (the session's limit, less its framing) */
    int task_timeout_ms;
    unsigned char key[32];
    bool has_key;
    struct coord_group *members;
    struct coord_ring *ring;
    bool have_ring;
    char *ring_sig; /* the members, weights and draining flags the ring was made of */
    struct coord_watcher *jobs_w;
    char **ids; /* the announced jobs, sorted */
    size_t n_ids;
    bool have_ids;
    /* The periodic check against lost watches (engine.c, "Lost watches" in docs/engine.md):
       every resync_ms the job list is read apart from the watcher, and the groups again. */
    struct event *resync;
    struct resync_read *resync_rd; /* the job list's read in flight, or NULL */
    unsigned long stale_lists;     /* resyncs that found the list a watch left stale */
    struct strmap *jobs;           /* id -> struct ejob (owned or contending) */
    struct strmap *queues;         /* "<tenant>/<class>" -> struct equeue */
    struct loopq *lq;
    bool stopping;
    int write_format; /* format of the jobs this node starts: the lowest of the members' */
    bool keep_runs;   /* every member says "keeps_runs": records kept (ENGINE_RUNS_KEEP) */
    /* every member knows schema STORE_SCHEMA_JOB_PLANS: jobs started now keep their plan in
       job_plans and name their catalogue's version (an older node reads neither) */
    bool slim_jobs;
    struct model_catcache *catalogs; /* engine_opts' (borrowed), shared with the API */
    void (*stop_done)(void *);
    void *stop_arg;
    struct event *tick;
    struct engine_stats stats;
    /* metrics.c: loop thread only */
    struct prom_hvec *h_task, *h_wait; /* by tenant and class, seconds */
    struct prom_histo h_takeover, h_handover;
    int offloads; /* plans being built on threads or waiting for one */
    struct workpool *plans;
    int plan_threads;
    struct offload *offload_wait, *offload_tail; /* waiting for a thread, in order */
    size_t n_offload_wait;
    _Atomic int plan_busy;     /* builds running now (pool threads) */
    _Atomic int plan_busy_max; /* the most that ever ran at once */
    struct event *soon;
    bool reconcile_pending;
    bool scanning;               /* the janitor's query is in flight */
    struct coord_group *workers; /* /drover/members/worker (the watchdog reads it) */
    struct ewatchdog *watchdog;  /* watchdog.c's (watchdog.h) */
    struct ebatch *batch;        /* batch.c's: the jobs' writes gathered (batch.h) */
    struct eassign *assign;      /* assign.c's: the slots the jobs here hold (assign.h) */
    /* The ZooKeeper incarnation the session's locks live in (job.c, "The incarnation"):
       ZKPATH_ENSEMBLE's ctime, read once per session generation; the jobs acquired
       meanwhile wait for it. */
    struct eensemble *ens;
};

enum ejob_own {
    EJ_CONTENDING,   /* waiting for the lock */
    EJ_LOADING,      /* reading PostgreSQL and ZooKeeper, planning */
    EJ_ACTIVE,       /* owner: dispatching, consuming results */
    EJ_HANDING_OVER, /* the ring moved it: finishing the commit in flight, then release */
    EJ_FINISHING,    /* final status written: cleaning up ZooKeeper */
    EJ_DEAD,         /* lock lost or released: every callback ignores it */
};

struct ejob {
    struct engine *e;
    char id[24];
    int refs;
    enum ejob_own own;
    struct coord_lock *lock;
    int64_t token;
    int64_t zk; /* the incarnation the token was taken in (job.c "The incarnation") */
    /* from PostgreSQL */
    char tenant_id[24], tenant[128], cluster_id[24], op[32];
    bool acl_bound;  /* coord_acl_bind done for the job's path: job_free unbinds it */
    json_t *job;     /* the job row */
    json_t *cluster; /* the cluster row, with "nodes" */
    /* the catalogue of a first start, or the one the pinned inputs name by version */
    struct model_catset *catset;
    bool slim; /* the plan, inputs and snapshot in job_plans (decided at the first start) */
    /* the plans */
    struct engine__plan_out po; /* the forward plan and what it was made of */
    json_t *inputs;             /* the pinned inputs */
    struct eplan fwd, rb, *cur;
    struct engine_state st;
    int32_t st_ver; /* the state znode's version, -1 before it exists */
    bool state_dirty;
    struct enodes *nodes; /* the cluster as the job sees it: key-values, maps (nodes.h) */
    json_t *ssh_new;      /* a cluster key made by this job's start: {public_key, private_key} */
    json_t *snapshot;     /* the cluster before the job */
    json_t *ctx;          /* jobs/<id>/ctx */
    char cls[64];         /* worker class of the job's tasks */
    struct equeue *queue;
    struct coord_watcher *runs_w, *control_w;
    struct strmap *runs;        /* run record name -> struct erun */
    struct ecommit *commit;     /* the commit pipeline (commit.h) */
    struct ewithdraw *withdraw; /* the withdrawal's counts (withdraw.h) */
    int sweeps;                 /* attempts at removing the subtree */
    struct event *sweep_ev;     /* a sweep refused (NOAUTH) tries again after it (sweep.c) */
    bool sweep_keep_root;       /* that sweep's keep_root */
    bool subtree_made;          /* this owner created the subtree (jobstart.c): the sweep
                                   knows its names without listing them (sweep.c) */
    size_t ctx_parts;           /* ctx/p<k> it created (0: the context in ctx alone) */
    bool building;              /* a plan is being built on a thread */
    struct recon *recon;        /* the reconciliation on resume, while the rollback log is read */
    int64_t t_acquired;         /* when the lock was acquired (ms) */
    int64_t t_contend;          /* when this node began to contend for it (ms, monotonic) */
    int64_t t_handover;         /* when the ring moved it away (ms, monotonic), 0: not moving */
    int64_t control_ms;         /* when a control znode's request was last read (ms, monotonic) */
    struct ewatch *watch;       /* the watchdog's clocks of the job (watchdog.h) */
    struct ejassign *assign;    /* its workers' slots (assign.h) */
};

/* A row's string column, "" when absent or null. */
static inline const char *engine__row_str(const json_t *row, const char *k)
{
    const char *s = json_string_value(json_object_get(row, k));
    return s ? s : "";
}

/* Is the job still this node's to act on (not DEAD)? Every callback asks before it touches
 * the job, and the batch before it sends a job's part (its lock fences the part). */
static inline bool engine__job_alive(const struct ejob *j)
{
    return j->own != EJ_DEAD;
}

/* ---- engine.c ------------------------------------------------------------------------ */

void engine__reconcile(struct engine *e);
/* Does the ring give this job to this node (and is the engine taking jobs)? */
bool engine__ring_mine(struct engine *e, const char *id);
/* Is the job announced (in the last listing of /drover/jobs)? */
bool engine__announced(const struct engine *e, const char *id);
/* The job's announcement is gone (the sweep deleted it or found it deleted): drop it from
   the list until a listing says otherwise, so that a stale list does not take it again. */
void engine__ids_forget(struct engine *e, const char *id);
/* A job is gone from this node (lost, released, finished): forget it. */
void engine__job_gone(struct engine *e, struct ejob *j);

/* ---- janitor.c ----------------------------------------------------------------------- */

/* Periodic duties of this node's share of the ring. */
void engine__janitor(struct engine *e);

/* ---- metrics.c: observations for /metrics. Loop thread. ----------------------------- */

void engine__metrics_init(struct engine *e);
void engine__metrics_free(struct engine *e);
/* A current attempt of j's started (wait: from its put to its start) or ended. */
void engine__observe_start(struct ejob *j, const char *item_id, int64_t start_ms);
void engine__observe_end(struct ejob *j, int64_t start_ms, int64_t end_ms);
/* j was resumed after this node took it over / released after the ring moved it. */
void engine__observe_takeover(struct ejob *j);
void engine__observe_handover(struct ejob *j);

/* ---- job.c: the job core ------------------------------------------------------------- */

struct ejob *engine__job_new(struct engine *e, const char *id);
void engine__job_ref(struct ejob *j);
void engine__job_unref(struct ejob *j);
/* Asserts the numbered invariants of a job (debug builds). */
void engine__job_check(const struct ejob *j);
/* Asserts invariants 3 and 4 before a coord or store call for j (dispatches: the call puts
 * task items). */
void engine__job_check_io(const struct ejob *j, bool dispatches);
/* The ring gave the job to another member, or the engine stops: hand it over. */
void engine__job_handover(struct ejob *j);
/* The lock is lost: stop touching the job at once. */
void engine__job_lost(struct ejob *j, const char *why);
/* Give the lock up now (nothing more is written); the job leaves this node. */
void engine__job_release(struct ejob *j);
/* job.c: the incarnation's read (engine_free; jobs waiting for it are let go). */
void engine__ensemble_free(struct engine *e);
/* The commit pipeline went idle: a handover waiting for it continues. */
void engine__job_idle(struct ejob *j);
/* LOADING -> ACTIVE: the plan is in memory, or the end is decided. With follow, the job's
 * queue is opened and its run records watched (run.c): the run phase begins. */
void engine__job_activate(struct ejob *j, bool follow);
/* LOADING -> ACTIVE, phase FAILED, finishing: a resume found nothing to trust (cause: why,
 * for the job's error). Once, instead of releasing the job to be taken again forever. */
void engine__job_unresumable(struct ejob *j, const char *cause);
/* -> FINISHING: remove the job's ZooKeeper subtree (keep_root: the announcement and
 * control stay, for a start made again), then release (sweep.c). */
void engine__job_wind_up(struct ejob *j, bool keep_root);
int engine__job_rollback_plan(struct ejob *j, struct drv_err *err);
/* Act on a user's "pause", "resume" or "cancel" (the control znode's or, from the
 * janitor, jobs.control's); true when it changed something. */
bool engine__control_apply(struct ejob *j, const char *want);
/* Watch the job's control znode (the API's requests). */
void engine__control_watch(struct ejob *j);
/* Feed the job state machine (fsm.c) an event and carry out its actions. */
void engine__job_event(struct ejob *j, enum engine_job_event ev);
/* The end is decided (the phase is final): flush, final write, clean up, release. */
void engine__job_finish(struct ejob *j);

/* ---- jobstart.c: phase "start", from the rows read to ACTIVE -------------------------- */

/* No state znode: plan (on a thread), write the start to PostgreSQL, then the znodes. */
void engine__job_start_new(struct ejob *j);

/* A plan being built on engine__offload's pool, for a first start or a resume. */
struct engine__build {
    struct ejob *j;
    struct engine__plan_in in;
    json_t *inputs; /* what in points into */
    struct engine__plan_out out;
    struct drv_err err;
    int rc;
    bool resuming;
};
/* Build j's plan off the loop (from its pinned inputs when resuming, else from the rows
 * just read); done(struct engine__build *) runs on the loop, holding a job reference. */
void engine__build_start(struct ejob *j, bool resuming, void (*done)(void *));
void engine__build_free(struct engine__build *b);
/* In done: true when the job still waits for this plan (LOADING); false when it does not
 * (b freed, the reference dropped, a handover told the pipeline is idle). */
bool engine__build_landed(struct engine__build *b);
/* The job's context for workers (jobs/<id>/ctx), a new reference. */
json_t *engine__job_ctx_make(struct ejob *j);

/* ---- jobresume.c: phase "start", a resume and its reconciliation ------------------- */

/* A state znode: rebuild the plan, check its digest, read the task log, reconcile
 * PostgreSQL and the queue with it (recon.c decides), go on. */
void engine__job_resume(struct ejob *j);

/* ---- tasks.c: the in-memory task log ------------------------------------------------- */

int engine__plan_init(struct eplan *p, char phase, struct planner_plan *plan,
                      const struct engine_task_rec *recs, struct drv_err *err);
/* The planner's bookkeeping from the records (after a start or a read of the task log). */
int engine__plan_exec(struct eplan *p, struct drv_err *err);
void engine__plan_clear(struct eplan *p);
/* The task changed: its chunk and its PostgreSQL row are to be written. */
void engine__task_touch(struct eplan *p, uint32_t idx);
/* Its PostgreSQL row alone (a resume writes the rows again from the log). */
void engine__task_pg_touch(struct eplan *p, uint32_t idx);
/* Is run not of its task's current attempt in flight (a retry dispatched, the task ended,
 * another plan)? Its outcome then steps nothing: its row is written, then it is deleted. */
bool engine__run_superseded(const struct ejob *j, const struct erun *run);

/* ---- run.c: phase "run" -------------------------------------------------------------- */

/* Watch the job's run records (jobs/<id>/runs): called by engine__job_activate. */
void engine__runs_watch(struct ejob *j);
/* A run record's result merged into its node's key-values again (the reconciliation on
 * resume, jobresume.c); a task stepped by ev (WITHDRAWN, FAIL) with no run record to go by
 * (the reconciliation, the withdrawal: withdraw.c). */
void engine__result_merge(struct ejob *j, const struct planner_task *t, json_t *result);
void engine__task_event(struct ejob *j, struct eplan *p, uint32_t idx, enum engine_task_event ev);

/* ---- sweep.c: phase "sweep" ---------------------------------------------------------- */

/* Remove the job's znodes (keep_root: the announcement and control stay), then release.
 * Entered through engine__job_wind_up. */
void engine__job_sweep(struct ejob *j, bool keep_root);

#endif
