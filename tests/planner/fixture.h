/*
 * Test fixtures for the planner: services and layouts written compactly, made
 * into model entities and then into the planner's input through the adapter,
 * as the daemon does.
 */
#ifndef DROVER_TEST_PLANNER_FIXTURE_H
#define DROVER_TEST_PLANNER_FIXTURE_H

#include <stdbool.h>

#include "planner.h"
#include "planner_model.h"

/*
 * Add a service. actions: comma list ("install,configure,start", "" for none;
 * "start:one-by-one" or "start:parallel=3" for a strategy); the others: comma
 * lists of names, "" for none.
 */
void fx_service(struct model_catalog *c, const char *name, const char *actions,
                const char *install_requires, const char *runtime_requires,
                const char *runtime_uses, const char *provides);
/* The usual service: install, configure, initialize, start, stop. */
#define FX_ALL "install,configure,initialize,start,stop"

/* Add a node with an id and a comma list of services. */
void fx_node(struct model_layout *l, const char *id, const char *services);

/* Plan op from start to target (either may be NULL); fails the test on error. */
struct planner_plan *fx_plan(const struct model_catalog *c, enum planner_op op,
                             const struct model_layout *start, const struct model_layout *target,
                             const char *subset);
/* The same, returning the error code and message instead. */
int fx_plan_err(const struct model_catalog *c, enum planner_op op, const struct model_layout *start,
                const struct model_layout *target, const char *subset, struct planner_plan **out,
                struct drv_err *err);

/* Task by id; fails the test when absent. */
const struct planner_task *fx_task(const struct planner_plan *p, const char *id);
bool fx_has(const struct planner_plan *p, const char *id);
/* a waits for b directly / through any path. */
bool fx_direct(const struct planner_plan *p, const char *a, const char *b);
bool fx_waits(const struct planner_plan *p, const char *a, const char *b);
size_t fx_count(const struct planner_plan *p, enum planner_action a);
size_t fx_edges(const struct planner_plan *p);
/* Check the stage invariants: every non-anchor task exactly once, no node twice
 * in a stage, every real dependency in an earlier stage. */
void fx_check_stages(const struct planner_plan *p);
/* JSON round trip gives the same bytes. */
void fx_check_roundtrip(const struct planner_plan *p);

/*
 * Run the plan with planner_exec, finishing in-progress tasks in a pseudo-random
 * order (seed), failing the task with id fail_id (may be NULL), and checking
 * the limits at every step (one task per node, strategy groups, dependencies
 * done before dispatch). With resume_at > 0, the run is handed over to a new
 * helper built from the states after that many completions (a failover).
 * Returns the final states (caller frees).
 */
enum planner_task_state *fx_run(const struct planner_plan *p, unsigned seed, const char *fail_id,
                                size_t resume_at);

#endif
