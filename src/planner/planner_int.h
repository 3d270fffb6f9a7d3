/*
 * planner internals shared by the planner's files: the string arena, a string
 * to index map, and the plan's building blocks. Not part of the public API.
 *
 * The files: plan.c (the DAG and the algorithms that do not care how it was made:
 * names, the arena, the id map, topological sort; the API's operations), build.c (an
 * operation to a DAG of node-level tasks) with build_ops.c (what operations promise
 * beyond their task lists; build_int.h), rollback.c (the plan that undoes a failed
 * one), exec.c (which tasks may run now), export.c (a plan as JSON and DOT, and back),
 * planner_model.c (the planner's input from the model: planner_model.h), plan_cli.c
 * (`drover plan`, the offline dry run).
 */
#ifndef DROVER_PLANNER_INT_H
#define DROVER_PLANNER_INT_H

#include "planner.h"

/* Strings live in big blocks freed with the plan: tens of thousands of ids cost
 * a few allocations. */
struct planner__arena;
struct planner__arena *planner__arena_new(void);
void planner__arena_free(struct planner__arena *a);
char *planner__arena_strdup(struct planner__arena *a, const char *s);
char *planner__arena_printf(struct planner__arena *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Open-addressing map from a borrowed string to an index. */
struct planner__map {
    const char **keys;
    uint32_t *vals;
    size_t cap, n;
};
void planner__map_init(struct planner__map *m, size_t expect);
void planner__map_free(struct planner__map *m);
/* Insert; returns the existing value (and changes nothing) when the key is there, else -1. */
long planner__map_put(struct planner__map *m, const char *key, uint32_t val);
long planner__map_get(const struct planner__map *m, const char *key);

struct planner_plan *planner__plan_new(enum planner_op op);
/* Append a task; strings are copied into the arena (id must be new), fields is increfed. */
uint32_t planner__add_task(struct planner_plan *p, const char *id, const char *node,
                           const char *service, enum planner_action action, const char *type,
                           json_t *fields, struct planner_strategy strategy);
/* Add a dependency unless it is already there. */
void planner__add_dep(struct planner_plan *p, uint32_t task, uint32_t dep);
/* The same without the check, for a dependency known to be new (anchors). */
void planner__add_dep_new(struct planner_plan *p, uint32_t task, uint32_t dep);

/* Fail with DRV_EINVAL when two tasks share an id. */
int planner__check_ids(const struct planner_plan *p, struct drv_err *err);

#endif
