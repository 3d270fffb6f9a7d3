/*
 * engine_int: what the files of src/engine share. Not a public header (tests
 * include it to drive the pure parts alone).
 *
 *   fsm.c       the job's and the task's state machines (pure)
 *   tasklog.c   the task log's and the job state's znode codecs (pure)
 *   dispatch.c  building a task's queue item (pure)
 *   explain.c   why a task waits (pure)
 *   owner.c     which jobs this node owns: ring, job list, locks
 *   job.c       one owned job: load, plan, dispatch, results, finish
 *   commit.c    a job's fenced writes to ZooKeeper and PostgreSQL
 *   job_pg.c    the engine's PostgreSQL queries (pool threads)
 *   janitor.c   periodic duties split by the ring
 */
#ifndef DROVER_ENGINE_INT_H
#define DROVER_ENGINE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "error.h"

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

#define ENGINE_LOG_FORMAT 1  /* this build writes; it reads ENGINE_LOG_FORMAT - 1 too */
#define ENGINE_LOG_CHUNK 512 /* tasks per task-log znode (~1.6 KB of JSON) */

/* Encode tasks [first, first + n) of recs as one chunk's JSON text (new string). */
char *engine__log_encode(const struct engine_task_rec *recs, size_t first, size_t n);
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
struct model_catalog;

struct engine__plan_in {
    const char *op;            /* the API's operation name */
    const json_t *request;     /* the job's request (configure's "restart") */
    const json_t *catalog;     /* [{kind, name, body}]: the tenant's catalogue as pinned */
    const char *template_name; /* the cluster's template */
    const char *provider;      /* the cluster's provider (may be NULL) */
    const json_t *start;       /* layout before the operation (NULL or null: none) */
    const json_t *target;      /* layout after it (NULL: the same as start) */
    const json_t *subset;      /* services the operation acts on (NULL: all) */
};

struct engine__plan_out {
    struct planner_plan *plan;
    char *text; /* planner_plan_to_json_text */
    size_t len;
    char sha[65];
    struct planner_input *in; /* kept: rollback plans need its services and layouts */
    struct model_catalog *cat;
    json_t *target_layout; /* per node with ids: the cluster's layout once the job succeeds */
    json_t *nodeinfo;      /* node id -> {hardwaretype, imagetype, services, flavor, image, ...} */
    json_t *provider;      /* {name, providertype, fields... (sealed as stored)} */
};

void engine__sha256_hex(const char *data, size_t len, char out[65]);
/* The planner's operation for an API operation name, or -1. */
int engine__op_parse(const char *op, const json_t *request);
int engine__plan_build(const struct engine__plan_in *in, struct engine__plan_out *out,
                       struct drv_err *err);
void engine__plan_out_clear(struct engine__plan_out *o);
/* A stored plan's JSON text back (a newer planner's digest did not match). */
int engine__plan_from_text(const char *text, size_t len, struct planner_plan **out,
                           struct drv_err *err);

#endif
