/*
 * build_int: the planner build's working state, shared by build.c (steps 0
 * to 3 and the whole) and build_ops.c (what operations promise beyond their
 * task lists: rolling restarts and the dependents of a layout change). Not a
 * public header: docs/planner.md describes the steps.
 */
#ifndef DROVER_PLANNER_BUILD_INT_H
#define DROVER_PLANNER_BUILD_INT_H

#include "planner_int.h"
#include "xalloc.h"

#define NA PLANNER_ACT_COUNT

struct ulist {
    uint32_t *v;
    size_t n, cap;
};

static inline void ulist_add(struct ulist *l, uint32_t x)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i] == x)
            return;
    XGROW(l->v, l->cap, l->n + 1);
    l->v[l->n++] = x;
}

/* A node of the plan: in the starting layout, the target layout or both. */
struct pnode {
    const struct planner_node *s, *t;
    const char *id;        /* arena */
    uint32_t first, count; /* its tasks: [first, first + count) */
    long pre_last;         /* last node-level task before the services, or -1 */
};

struct build {
    const struct planner_request *req;
    struct planner_plan *plan;
    struct drv_err *err;
    size_t ns; /* services */
    struct planner__map svc_map;
    const char **svc_name;   /* arena copies */
    unsigned char *present;  /* on the cluster (either layout) */
    unsigned char *sel;      /* acted on by configure/start/stop/restart/upgrade */
    unsigned char *restart;  /* stopped and started again (configure-restart, upgrade) */
    unsigned char *reconf;   /* layout change: 1 configure again where kept, 2 and restart */
    struct ulist *reconf_on; /* per service: the changed services whose arrival it waits for */
    struct ulist *dep_install, *dep_runtime, *req_runtime; /* resolved, per service */
    struct pnode *nodes;
    size_t nn;
    int *task_svc; /* per task: service index, -1 for node-level tasks */
    size_t task_svc_cap;
    struct ulist *by_sa; /* per service * NA + action: its tasks */
    long *anchor;        /* per service * NA + action: anchor task, -1 */
    json_t *empty;       /* {} shared */
};

static inline const struct planner_svc_action *svc_act(struct build *b, size_t s, int a)
{
    return &b->req->services[s].actions[a];
}

static inline int has_def(struct build *b, size_t s, int a)
{
    return svc_act(b, s, a)->type != NULL;
}

static inline int has_tasks(struct build *b, size_t s, int a)
{
    return b->by_sa[s * NA + a].n > 0;
}

/* build.c */
int planner__node_has(const struct planner_node *n, const char *svc);
/* The task that stands for "(s, a) on every node": the task, or an anchor waiting for all. */
uint32_t planner__every(struct build *b, size_t s, int a);
/* Node n's task of service s and action a, or -1. */
long planner__local_task(struct build *b, const struct pnode *n, size_t s, int a);
/* The runtime task of s that others wait for: start, or initialize without start. */
int planner__runtime_done_action(struct build *b, size_t s);

/* build_ops.c */
/* Which dependents of a layout change act (b->reconf, b->reconf_on); needs b->nodes. 0. */
int planner__select_reconf(struct build *b);
/* Step 4: the rolling-restart edges. */
void planner__roll(struct build *b);

#endif
