/*
 * planner: cluster operations to a DAG of node-level tasks.
 *
 * The planner takes a starting layout, a target layout, the services'
 * definitions and an operation, and returns a plan: node-level tasks (create a
 * node, install a service on it, start it, ...) with the dependencies between
 * them. The engine runs the DAG itself: it dispatches every task whose
 * dependencies are done, at most one task per node at a time, within each
 * task's concurrency strategy. The stages of the reference documents (sources
 * grouped, then split so that no node has two tasks in one stage) are derived
 * from the DAG for people to read.
 *
 * Pure library: no I/O, no globals, no threads (plan_cli.c, the `drover plan`
 * front, is the one file that reads and writes files). Same input, same plan,
 * byte for byte (invariant 4, docs/architecture.md). The rules (which tasks
 * an operation makes, how service dependencies become task dependencies,
 * anchors, rollback) are in docs/planner.md.
 *
 * Threads: a finished plan may be read from several threads at once; building,
 * freeing and a planner_exec belong to one thread at a time.
 *
 * Ownership: every input is borrowed for the duration of the call only. A plan
 * owns all its strings and holds its own reference to every `fields` object;
 * free it with planner_plan_free(). Returned strings and JSON values belong to
 * the caller.
 */
#ifndef DROVER_PLANNER_H
#define DROVER_PLANNER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "format.h"

/* Format version of the JSON form of a plan a build makes; it reads every version from 1 up
   to it (format.h). The engine sets a plan's format_version to its job's. */
#define PLANNER_FORMAT_VERSION DROVER_FORMAT_VERSION

/* Node-level actions. The order is the per-node order of a create. */
enum planner_action {
    PLANNER_ACT_CREATE = 0, /* provider: create the machine */
    PLANNER_ACT_CONFIRM,    /* provider: wait until it answers */
    PLANNER_ACT_BOOTSTRAP,  /* automators: prepare the node */
    PLANNER_ACT_INSTALL,
    PLANNER_ACT_CONFIGURE,
    PLANNER_ACT_INITIALIZE,
    PLANNER_ACT_START,
    PLANNER_ACT_STOP,
    PLANNER_ACT_REMOVE,
    PLANNER_ACT_DELETE, /* provider: delete the machine */
    PLANNER_ACT_ANCHOR, /* no execution: a synchronisation point */
    PLANNER_ACT_COUNT
};

enum planner_op {
    PLANNER_OP_CREATE = 0,
    PLANNER_OP_DELETE,
    PLANNER_OP_EXPAND,
    PLANNER_OP_SHRINK,
    PLANNER_OP_ADD_SERVICES,
    PLANNER_OP_REMOVE_SERVICES,
    PLANNER_OP_CONFIGURE,
    PLANNER_OP_CONFIGURE_RESTART,
    PLANNER_OP_START,
    PLANNER_OP_STOP,
    PLANNER_OP_RESTART,
    PLANNER_OP_UPGRADE,
    PLANNER_OP_ROLLBACK,
    PLANNER_OP_COUNT
};

/* Task states of task-based deployment, used by the DOT export and rollback. */
enum planner_task_state {
    PLANNER_TS_WAITING = 0, /* dependencies not done yet */
    PLANNER_TS_PENDING,     /* dependencies done, held by a concurrency limit */
    PLANNER_TS_IN_PROGRESS, /* running */
    PLANNER_TS_SUCCESS,     /* done */
    PLANNER_TS_ERROR,       /* failed past its retries */
    PLANNER_TS_FAILED_DEPS, /* will not run: a dependency failed */
    PLANNER_TS_COUNT
};

enum planner_strategy_type { PLANNER_STRAT_PARALLEL = 0, PLANNER_STRAT_ONE_BY_ONE };

/*
 * How many tasks of one service and action run at once across the cluster:
 * parallel (amount 0: no limit) or one by one. Declared in the service action
 * as "strategy": {"type": "parallel", "amount": 5}.
 */
struct planner_strategy {
    enum planner_strategy_type type;
    unsigned amount;
    /* Rolling restarts (a stop then a start of the service on one node): how many
     * nodes may be between the two at once; 0: not given (docs/planner.md
     * "Rolling restarts"). Planned as edges, not exported with the task. */
    unsigned max_down;
};

/* Name and parse ("create", "add-services", "success", "one-by-one", ...). -1 when unknown. */
const char *planner_action_name(enum planner_action a);
int planner_action_parse(const char *s);
const char *planner_op_name(enum planner_op op);
int planner_op_parse(const char *s);
const char *planner_state_name(enum planner_task_state s);
int planner_state_parse(const char *s);
/* Does the operation change the layout (so the solver runs first)? */
int planner_op_changes_layout(enum planner_op op);

/*
 * The API's operations on a cluster (POST /v1/clusters: "create"; POST
 * /v1/clusters/{id}/{op}: the rest, docs/api.md), as the planner, the job row and the
 * engine take them: the one home of that mapping, used by the API's plan preview, the job
 * insert and the engine's plan.
 */
struct planner_api_op {
    const char *name;   /* the API's: "create", "addservices", "recreate", ... */
    enum planner_op op; /* the planner's; a configure with "restart": true is
                           configure-restart (planner_api_op_plan) */
    const char *job_op; /* the job row's operation, what the engine reads back: a recreate
                           is recorded as a create of the cluster's new layout */
    bool subset;        /* acts only on the request's "services", when it names some */
};
/* The API operation named name, or NULL: no such operation (the planner's own names,
 * "add-services", "rollback", are not the API's). */
const struct planner_api_op *planner_api_op(const char *name);
/* The planner's operation for API operation name, with the request's "restart", or -1. */
int planner_api_op_plan(const char *name, bool restart);

/* ---- input: services and layouts (borrowed) ---- */

struct planner_strlist {
    const char *const *v;
    size_t n;
};

/* One provisioner action of a service. type NULL: the service lacks the action. */
struct planner_svc_action {
    const char *type; /* automator plugin, "chef-solo" */
    json_t *fields;   /* plugin fields, may be NULL; the plan takes its own reference */
    struct planner_strategy strategy;
};

struct planner_service {
    const char *name;
    struct planner_strlist install_requires, install_uses;
    struct planner_strlist runtime_requires, runtime_uses;
    struct planner_strlist provides;
    /* Indexed by install, configure, initialize, start, stop, remove; others ignored. */
    struct planner_svc_action actions[PLANNER_ACT_COUNT];
};

struct planner_node {
    const char *id; /* unique in the layout; no '/', not "*" */
    const char *hardwaretype;
    const char *imagetype;
    const char *const *services;
    size_t n_services;
};

struct planner_layout {
    const struct planner_node *nodes;
    size_t n_nodes;
};

/*
 * A dependent of a layout change: a service whose config reads the nodes of
 * others through macros (HAProxy's backends over the nginx nodes). When a
 * layout-changing operation adds or removes a node of any service in `on`,
 * the service is configured again on every node it keeps, and, with
 * `restart`, stopped and started again (docs/planner.md "Dependents of a
 * layout change"). Other operations ignore it.
 */
struct planner_reconf {
    const char *service;
    struct planner_strlist on;
    int restart;
};

struct planner_request {
    enum planner_op op; /* any but PLANNER_OP_ROLLBACK: see planner_rollback() */
    /* Layout before the operation; NULL or empty for create. */
    const struct planner_layout *start;
    /* Layout after it (from the solver); NULL: the same as start. */
    const struct planner_layout *target;
    /* Every service of both layouts (for upgrade: the new versions). */
    const struct planner_service *services;
    size_t n_services;
    /* Services that configure, start, stop, restart and upgrade act on; none: all. */
    struct planner_strlist subset;
    /* Provider of create, confirm and delete: the name goes in the task fields (the
     * worker looks its credentials up; they never go in a plan), the type names the plugin. */
    const char *provider;
    const char *providertype;
    /* Dependents of a layout change (may be NULL). */
    const struct planner_reconf *reconf;
    size_t n_reconf;
};

/* ---- output: the plan ---- */

struct planner_task {
    const char *id;      /* stable: "node/action", "node/service/action", "* /service/action" */
    const char *node;    /* NULL for an anchor */
    const char *service; /* NULL for node-level tasks */
    enum planner_action action;
    const char *type; /* plugin type; NULL for an anchor */
    json_t *fields;   /* plugin fields (an object); NULL for an anchor */
    struct planner_strategy strategy;
    const char *inverse_of; /* rollback plans: id of the task this one undoes */
    const char *restore;    /* rollback plans: "previous-config", "previous-version" */
    uint32_t *deps;         /* indices of the tasks this one waits for */
    uint32_t n_deps, cap_deps;
};

struct planner_plan {
    int format_version;
    enum planner_op op;
    int rollback_of;  /* rollback plans: the enum planner_op undone, else -1 */
    int max_per_node; /* running tasks per node at a time: 1 */
    struct planner_task *tasks;
    size_t n_tasks, cap_tasks;
    struct planner__arena *arena; /* strings */
};

/*
 * Plan an operation. On success *out is a new acyclic plan. Errors: DRV_EINVAL
 * (bad request: unknown service, duplicate node, bad node id), DRV_ECYCLE (a
 * dependency loop; err->msg names the tasks in it).
 */
int planner_build(const struct planner_request *req, struct planner_plan **out,
                  struct drv_err *err);

void planner_plan_free(struct planner_plan *plan);

/* Index of the task with this id, or -1. Linear: for tests and tools. */
long planner_find(const struct planner_plan *plan, const char *id);

/*
 * Topological order of the tasks into order[n_tasks] (may be NULL just to
 * check). DRV_ECYCLE when there is a loop; err->msg then reads
 * `dependency loop: a -> b -> c -> a`.
 */
int planner_toposort(const struct planner_plan *plan, uint32_t *order, struct drv_err *err);

/* Stages: tasks grouped by depth (anchors take no stage and are left out), then
 * split so that no node has two tasks in one stage. */
struct planner_stages {
    size_t n_stages;
    size_t *start; /* stage i is tasks[start[i] .. start[i+1]) */
    uint32_t *tasks;
};

int planner_stages(const struct planner_plan *plan, struct planner_stages **out,
                   struct drv_err *err);
void planner_stages_free(struct planner_stages *st);

/*
 * Rollback plan of a failed plan: the inverse of each task whose state is
 * PLANNER_TS_SUCCESS (create > delete, install > remove, configure > configure
 * with the previous configuration, start > stop, stop > start, remove > install,
 * delete > create), ordered in reverse of the original dependencies. Tasks with
 * nothing to undo (confirm, bootstrap, initialize, a stop and start of one
 * service: a restart) are left out. services (may be NULL) gives the remove and
 * stop actions' plugins. A rollback plan is not rolled back: DRV_EPERM, the
 * cluster needs an operator.
 */
int planner_rollback(const struct planner_plan *failed, const enum planner_task_state *states,
                     const struct planner_service *services, size_t n_services,
                     struct planner_plan **out, struct drv_err *err);
/*
 * The same, with the starting layout (may be NULL): a node the failed plan
 * deleted (a shrink) is recreated whole, as an expand to the starting layout
 * would (create, confirm, bootstrap, install > configure > initialize > start
 * of its services, with services the definitions), instead of a bare create.
 * The layout's node ids must be the plan's. Without services (NULL), as
 * planner_rollback().
 */
int planner_rollback_layout(const struct planner_plan *failed,
                            const enum planner_task_state *states,
                            const struct planner_service *services, size_t n_services,
                            const struct planner_layout *start, struct planner_plan **out,
                            struct drv_err *err);

/* ---- execution helper ---- */

/*
 * Which tasks may run now: the engine's bookkeeping, pure. Dependencies done
 * (anchors succeed on their own), at most max_per_node tasks of a node in
 * progress, at most one (one-by-one) or amount (parallel) tasks of a strategy
 * group (one service and action) in progress. Dispatch order is plan order
 * among ready tasks. states (may be NULL: all waiting) resumes a run after a
 * failover: in-progress tasks keep their slots, errors spread. The plan must
 * outlive the helper.
 */
struct planner_exec;
int planner_exec_new(const struct planner_plan *plan, const enum planner_task_state *states,
                     struct planner_exec **out, struct drv_err *err);
void planner_exec_free(struct planner_exec *x);
/* Up to cap tasks to dispatch now, into out; they become in progress. */
size_t planner_exec_next(struct planner_exec *x, uint32_t *out, size_t cap);
/* A dispatched task ended. Not ok: error, and what depends on it (transitively) gets
 * failed-dependencies. DRV_EINVAL when the task is not in progress. A retry is the
 * engine's business: report the outcome of the last attempt only. */
int planner_exec_done(struct planner_exec *x, uint32_t task, int ok, struct drv_err *err);
/* A dispatched task goes back to ready without an outcome (its queue item was
 * taken back before anyone ran it: a pause, say). DRV_EINVAL when not in progress. */
int planner_exec_requeue(struct planner_exec *x, uint32_t task, struct drv_err *err);
/* Why a task is not running: */
enum planner_why {
    PLANNER_WHY_NONE = 0,   /* it is in progress or finished */
    PLANNER_WHY_DEPENDENCY, /* *blocker: a dependency not yet succeeded */
    PLANNER_WHY_NODE,       /* *blocker: the task its node is busy with (one per node) */
    PLANNER_WHY_STRATEGY,   /* its service/action's strategy limit is reached */
    PLANNER_WHY_READY,      /* nothing in the plan holds it: the engine's own limits do */
};
/* *blocker is a task index or UINT32_MAX. Linear in the plan for PLANNER_WHY_NODE:
 * for explanations, not for the dispatch path. */
int planner_exec_why(const struct planner_exec *x, uint32_t task, uint32_t *blocker);
/* Tasks in progress. */
size_t planner_exec_running(const struct planner_exec *x);
/* Current state of every task (indexed like plan->tasks), for the DOT export and rollback.
 * Borrowed: valid until the next call on x. */
const enum planner_task_state *planner_exec_states(const struct planner_exec *x);
/* Nothing in progress and nothing can start: every task is success, error or
 * failed-dependencies. */
int planner_exec_finished(const struct planner_exec *x);

/* ---- export and import ---- */

/* The complete JSON form (new reference): what the engine stores and reloads. */
json_t *planner_plan_to_json(const struct planner_plan *plan);
/* One task of plan as that form has it (new reference; deps by id, fields shared with t):
 * an element of its "tasks" array, for the API's pages of a plan. */
json_t *planner_task_to_json(const struct planner_plan *plan, const struct planner_task *t);
/* The same as compact text (json_dumps(..., JSON_COMPACT) bytes) written directly: 10 times
 * faster and smaller in memory for big plans. *len (may be NULL) gets the length. */
char *planner_plan_to_json_text(const struct planner_plan *plan, size_t *len);
/* The same JSON with one task per line, for people (`drover plan`). */
char *planner_plan_to_json_lines(const struct planner_plan *plan, size_t *len);
/* Read it back (any format version this build reads), checking ids, deps and loops. */
int planner_plan_from_json(const json_t *json, struct planner_plan **out, struct drv_err *err);
/* Graphviz DOT; states (indexed like tasks, may be NULL) colour the tasks. */
char *planner_plan_to_dot(const struct planner_plan *plan, const enum planner_task_state *states);
/* Stages as JSON ([[task id, ...], ...]) and as text for people. */
json_t *planner_stages_to_json(const struct planner_plan *plan, const struct planner_stages *st);
char *planner_stages_to_text(const struct planner_plan *plan, const struct planner_stages *st);

/* `drover plan ...`: argv[0] is "plan". 0 ok, 1 error (reason on stderr), 2 usage. */
int planner_cli_main(int argc, char **argv);

#endif
