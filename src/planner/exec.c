/*
 * exec: which tasks of a plan may run now. A pure helper for the engine, which
 * keeps the task states in ZooKeeper and asks this after every change.
 *
 * Task states are the ones of task-based deployment:
 *
 *   waiting --deps done--> pending --dispatched--> in-progress --ok--> success
 *      |                    (held by a limit)          |
 *      |                                               +--failed--> error
 *      +--a dependency is error or failed-dependencies--> failed-dependencies
 *
 * An anchor has no execution: it is success as soon as its dependencies are.
 *
 * Limits: at most max_per_node tasks of one node in progress, and per strategy
 * group (one service and action across the cluster) at most one (one-by-one)
 * or amount (parallel with an amount) in progress.
 *
 * Cost: O(tasks + dependencies) over a whole run, plus a heap operation per
 * task: ready tasks wait in a min-heap by plan index (so dispatch order is
 * deterministic), and a task held by its node or its group waits in that
 * node's or group's own heap until it frees.
 */
#include <string.h>

#include "planner_int.h"
#include "xalloc.h"

struct heap {
    uint32_t *v;
    size_t n, cap;
};

static void heap_push(struct heap *h, uint32_t x)
{
    XGROW(h->v, h->cap, h->n + 1);
    size_t i = h->n++;
    while (i > 0 && h->v[(i - 1) / 2] > x) {
        h->v[i] = h->v[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->v[i] = x;
}

static uint32_t heap_pop(struct heap *h)
{
    uint32_t top = h->v[0], x = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && h->v[c + 1] < h->v[c])
            c++;
        if (h->v[c] >= x)
            break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->n)
        h->v[i] = x;
    return top;
}

struct planner_exec {
    const struct planner_plan *plan;
    enum planner_task_state *state;
    uint32_t *remaining; /* dependencies not yet success */
    uint32_t **succ;     /* dependents of each task */
    uint32_t *n_succ;
    uint32_t *node_of;     /* node index, UINT32_MAX for none */
    uint32_t *group_of;    /* strategy group index */
    unsigned *group_limit; /* 0: none */
    uint32_t *node_busy, *group_busy;
    struct heap ready;
    struct heap *node_wait, *group_wait;
    size_t n_nodes, n_groups;
    size_t running, finished; /* finished: success, error, failed-deps */
};

static void fail_dependents(struct planner_exec *x, uint32_t t)
{
    /* Iterative: a failure near the root of a 100,000-task plan. */
    struct heap stack = {0};
    heap_push(&stack, t);
    while (stack.n) {
        uint32_t v = stack.v[--stack.n];
        for (uint32_t k = 0; k < x->n_succ[v]; k++) {
            uint32_t w = x->succ[v][k];
            if (x->state[w] == PLANNER_TS_WAITING || x->state[w] == PLANNER_TS_PENDING) {
                x->state[w] = PLANNER_TS_FAILED_DEPS;
                x->finished++;
                XGROW(stack.v, stack.cap, stack.n + 1);
                stack.v[stack.n++] = w;
            }
        }
    }
    free(stack.v);
}

static void succeed(struct planner_exec *x, uint32_t t);

/* t's dependencies are all done: an anchor succeeds, a task becomes ready. */
static void deps_done(struct planner_exec *x, uint32_t t)
{
    if (x->state[t] != PLANNER_TS_WAITING)
        return;
    if (x->plan->tasks[t].action == PLANNER_ACT_ANCHOR) {
        x->state[t] = PLANNER_TS_SUCCESS;
        x->finished++;
        succeed(x, t);
    } else {
        heap_push(&x->ready, t);
    }
}

static void succeed(struct planner_exec *x, uint32_t t)
{
    /* Iterative over chains of anchors. */
    struct heap stack = {0};
    XGROW(stack.v, stack.cap, 1);
    stack.v[stack.n++] = t;
    while (stack.n) {
        uint32_t v = stack.v[--stack.n];
        for (uint32_t k = 0; k < x->n_succ[v]; k++) {
            uint32_t w = x->succ[v][k];
            if (x->remaining[w] > 0 && --x->remaining[w] == 0 &&
                x->state[w] == PLANNER_TS_WAITING) {
                if (x->plan->tasks[w].action == PLANNER_ACT_ANCHOR) {
                    x->state[w] = PLANNER_TS_SUCCESS;
                    x->finished++;
                    XGROW(stack.v, stack.cap, stack.n + 1);
                    stack.v[stack.n++] = w;
                } else {
                    heap_push(&x->ready, w);
                }
            }
        }
    }
    free(stack.v);
}

int planner_exec_new(const struct planner_plan *plan, const enum planner_task_state *states,
                     struct planner_exec **out, struct drv_err *err)
{
    *out = NULL;
    int rc = planner_toposort(plan, NULL, err);
    if (rc < 0)
        return rc;
    size_t n = plan->n_tasks;
    struct planner_exec *x = xcalloc(1, sizeof(*x));
    x->plan = plan;
    x->state = xcalloc(n + 1, sizeof(*x->state));
    x->remaining = xcalloc(n + 1, sizeof(*x->remaining));
    x->n_succ = xcalloc(n + 1, sizeof(*x->n_succ));
    x->succ = xcalloc(n + 1, sizeof(*x->succ));
    x->node_of = xcalloc(n + 1, sizeof(*x->node_of));
    x->group_of = xcalloc(n + 1, sizeof(*x->group_of));
    for (size_t i = 0; i < n; i++)
        for (uint32_t d = 0; d < plan->tasks[i].n_deps; d++)
            x->n_succ[plan->tasks[i].deps[d]]++;
    for (size_t i = 0; i < n; i++) {
        x->succ[i] = xmalloc((x->n_succ[i] + 1) * sizeof(**x->succ));
        x->n_succ[i] = 0;
    }
    for (size_t i = 0; i < n; i++)
        for (uint32_t d = 0; d < plan->tasks[i].n_deps; d++) {
            uint32_t dep = plan->tasks[i].deps[d];
            x->succ[dep][x->n_succ[dep]++] = (uint32_t)i;
        }

    /* Nodes and strategy groups ("service/action"), numbered in plan order. */
    struct planner__map nodes, groups;
    planner__map_init(&nodes, 1024);
    planner__map_init(&groups, 64);
    char **gkeys = xcalloc(n + 1, sizeof(*gkeys));
    size_t n_gkeys = 0;
    x->group_limit = xcalloc(n + 1, sizeof(*x->group_limit));
    for (size_t i = 0; i < n; i++) {
        const struct planner_task *t = &plan->tasks[i];
        x->node_of[i] = UINT32_MAX;
        x->group_of[i] = UINT32_MAX;
        if (t->action == PLANNER_ACT_ANCHOR)
            continue;
        if (t->node) {
            long ni = planner__map_put(&nodes, t->node, (uint32_t)x->n_nodes);
            x->node_of[i] = ni < 0 ? (uint32_t)x->n_nodes++ : (uint32_t)ni;
        }
        unsigned limit = t->strategy.type == PLANNER_STRAT_ONE_BY_ONE ? 1 : t->strategy.amount;
        if (limit == 0)
            continue;
        gkeys[n_gkeys] =
            xasprintf("%s/%s", t->service ? t->service : "", planner_action_name(t->action));
        long gi = planner__map_put(&groups, gkeys[n_gkeys], (uint32_t)x->n_groups);
        if (gi < 0) {
            x->group_limit[x->n_groups] = limit;
            x->group_of[i] = (uint32_t)x->n_groups++;
            n_gkeys++;
        } else {
            FREE_NULL(gkeys[n_gkeys]);
            x->group_of[i] = (uint32_t)gi;
        }
    }
    planner__map_free(&nodes);
    planner__map_free(&groups);
    for (size_t i = 0; i < n_gkeys; i++)
        free(gkeys[i]);
    free(gkeys);
    x->node_busy = xcalloc(x->n_nodes + 1, sizeof(*x->node_busy));
    x->group_busy = xcalloc(x->n_groups + 1, sizeof(*x->group_busy));
    x->node_wait = xcalloc(x->n_nodes + 1, sizeof(*x->node_wait));
    x->group_wait = xcalloc(x->n_groups + 1, sizeof(*x->group_wait));

    /* Resume from the given states (after a failover): in progress keeps its
     * slots; error and failed-dependencies spread; the rest is recomputed. */
    for (size_t i = 0; i < n; i++) {
        enum planner_task_state s = states ? states[i] : PLANNER_TS_WAITING;
        if (s == PLANNER_TS_PENDING)
            s = PLANNER_TS_WAITING;
        x->state[i] = s;
        if (s == PLANNER_TS_SUCCESS || s == PLANNER_TS_ERROR || s == PLANNER_TS_FAILED_DEPS)
            x->finished++;
        if (s == PLANNER_TS_IN_PROGRESS) {
            x->running++;
            if (x->node_of[i] != UINT32_MAX)
                x->node_busy[x->node_of[i]]++;
            if (x->group_of[i] != UINT32_MAX)
                x->group_busy[x->group_of[i]]++;
        }
    }
    for (size_t i = 0; i < n; i++)
        for (uint32_t d = 0; d < plan->tasks[i].n_deps; d++)
            if (x->state[plan->tasks[i].deps[d]] != PLANNER_TS_SUCCESS)
                x->remaining[i]++;
    for (size_t i = 0; i < n; i++)
        if (x->state[i] == PLANNER_TS_ERROR || x->state[i] == PLANNER_TS_FAILED_DEPS)
            fail_dependents(x, (uint32_t)i);
    for (size_t i = 0; i < n; i++)
        if (x->remaining[i] == 0)
            deps_done(x, (uint32_t)i);
    *out = x;
    return 0;
}

void planner_exec_free(struct planner_exec *x)
{
    if (x == NULL)
        return;
    for (size_t i = 0; i < x->plan->n_tasks; i++)
        free(x->succ[i]);
    for (size_t i = 0; i < x->n_nodes; i++)
        free(x->node_wait[i].v);
    for (size_t i = 0; i < x->n_groups; i++)
        free(x->group_wait[i].v);
    free(x->succ);
    free(x->n_succ);
    free(x->state);
    free(x->remaining);
    free(x->node_of);
    free(x->group_of);
    free(x->group_limit);
    free(x->node_busy);
    free(x->group_busy);
    free(x->node_wait);
    free(x->group_wait);
    free(x->ready.v);
    free(x);
}

static unsigned per_node(const struct planner_exec *x)
{
    return x->plan->max_per_node > 0 ? (unsigned)x->plan->max_per_node : 1;
}

/*
 * Invariant: a node (or group) with a free slot and tasks waiting for it has
 * one of them among the ready tasks. Each time a slot frees, or a task taken
 * from a wait heap is parked on its other limit, one more waiter is let in.
 */
static void release_node(struct planner_exec *x, uint32_t ni)
{
    if (ni != UINT32_MAX && x->node_busy[ni] < per_node(x) && x->node_wait[ni].n)
        heap_push(&x->ready, heap_pop(&x->node_wait[ni]));
}

static void release_group(struct planner_exec *x, uint32_t gi)
{
    if (gi != UINT32_MAX && x->group_busy[gi] < x->group_limit[gi] && x->group_wait[gi].n)
        heap_push(&x->ready, heap_pop(&x->group_wait[gi]));
}

size_t planner_exec_next(struct planner_exec *x, uint32_t *out, size_t cap)
{
    size_t k = 0;
    while (k < cap && x->ready.n) {
        uint32_t t = heap_pop(&x->ready);
        if (x->state[t] != PLANNER_TS_WAITING && x->state[t] != PLANNER_TS_PENDING)
            continue;
        uint32_t ni = x->node_of[t], gi = x->group_of[t];
        if (ni != UINT32_MAX && x->node_busy[ni] >= per_node(x)) {
            x->state[t] = PLANNER_TS_PENDING;
            heap_push(&x->node_wait[ni], t);
            release_group(x, gi);
            continue;
        }
        if (gi != UINT32_MAX && x->group_busy[gi] >= x->group_limit[gi]) {
            x->state[t] = PLANNER_TS_PENDING;
            heap_push(&x->group_wait[gi], t);
            release_node(x, ni);
            continue;
        }
        x->state[t] = PLANNER_TS_IN_PROGRESS;
        x->running++;
        if (ni != UINT32_MAX)
            x->node_busy[ni]++;
        if (gi != UINT32_MAX)
            x->group_busy[gi]++;
        out[k++] = t;
    }
    return k;
}

int planner_exec_done(struct planner_exec *x, uint32_t t, int ok, struct drv_err *err)
{
    if (t >= x->plan->n_tasks || x->state[t] != PLANNER_TS_IN_PROGRESS)
        return drv_err_set(err, DRV_EINVAL, 0, "task %u is not in progress", t);
    x->running--;
    x->finished++;
    uint32_t ni = x->node_of[t], gi = x->group_of[t];
    if (ni != UINT32_MAX)
        x->node_busy[ni]--;
    if (gi != UINT32_MAX)
        x->group_busy[gi]--;
    release_node(x, ni);
    release_group(x, gi);
    if (ok) {
        x->state[t] = PLANNER_TS_SUCCESS;
        succeed(x, t);
    } else {
        x->state[t] = PLANNER_TS_ERROR;
        fail_dependents(x, t);
    }
    return 0;
}

int planner_exec_requeue(struct planner_exec *x, uint32_t t, struct drv_err *err)
{
    if (t >= x->plan->n_tasks || x->state[t] != PLANNER_TS_IN_PROGRESS)
        return drv_err_set(err, DRV_EINVAL, 0, "task %u is not in progress", t);
    x->running--;
    uint32_t ni = x->node_of[t], gi = x->group_of[t];
    if (ni != UINT32_MAX)
        x->node_busy[ni]--;
    if (gi != UINT32_MAX)
        x->group_busy[gi]--;
    release_node(x, ni);
    release_group(x, gi);
    x->state[t] = PLANNER_TS_WAITING;
    heap_push(&x->ready, t);
    return 0;
}

int planner_exec_why(const struct planner_exec *x, uint32_t t, uint32_t *blocker)
{
    *blocker = UINT32_MAX;
    if (t >= x->plan->n_tasks)
        return PLANNER_WHY_NONE;
    enum planner_task_state s = x->state[t];
    const struct planner_task *task = &x->plan->tasks[t];
    if (s == PLANNER_TS_WAITING || s == PLANNER_TS_FAILED_DEPS) {
        for (uint32_t d = 0; d < task->n_deps; d++) {
            uint32_t dep = task->deps[d];
            if (x->state[dep] != PLANNER_TS_SUCCESS) {
                *blocker = dep;
                return PLANNER_WHY_DEPENDENCY;
            }
        }
        return s == PLANNER_TS_WAITING ? PLANNER_WHY_READY : PLANNER_WHY_NONE;
    }
    if (s != PLANNER_TS_PENDING)
        return PLANNER_WHY_NONE;
    uint32_t ni = x->node_of[t], gi = x->group_of[t];
    if (ni != UINT32_MAX && x->node_busy[ni] >= per_node(x)) {
        for (size_t i = 0; i < x->plan->n_tasks; i++)
            if (x->node_of[i] == ni && x->state[i] == PLANNER_TS_IN_PROGRESS) {
                *blocker = (uint32_t)i;
                break;
            }
        return PLANNER_WHY_NODE;
    }
    if (gi != UINT32_MAX && x->group_busy[gi] >= x->group_limit[gi])
        return PLANNER_WHY_STRATEGY;
    return PLANNER_WHY_READY;
}

size_t planner_exec_running(const struct planner_exec *x)
{
    return x->running;
}

const enum planner_task_state *planner_exec_states(const struct planner_exec *x)
{
    return x->state;
}

int planner_exec_finished(const struct planner_exec *x)
{
    return x->running == 0 && x->ready.n == 0;
}
