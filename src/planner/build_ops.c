/*
 * build_ops: what operations promise beyond their task lists, as edges and
 * tasks of the build (build_int.h; rules in docs/planner.md "Rolling
 * restarts" and "Which tasks").
 *
 *   - Rolling restarts (step 4 of build.c's note): a service stopped and
 *     started again on several nodes with a rolling strategy has at most w
 *     nodes between its stop and its start: the stop on the (k + w)-th node
 *     waits for the start on the k-th, in plan order. An edge that would
 *     close a loop is left out.
 *   - Dependents of a layout change: a service whose config reads the nodes
 *     of others (struct planner_reconf) is configured again, and restarted
 *     when it says so, on the nodes it keeps when a node gains or loses one
 *     of those services. Selected here; its tasks are made by build.c's
 *     service_chain and wired there.
 *
 * Pure, single-threaded, deterministic like the rest of the build.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "build_int.h"

/* Which dependents of a layout change act: those with a service in `on` that a node gains
 * or loses. Needs b->nodes. */
int planner__select_reconf(struct build *b)
{
    const struct planner_request *req = b->req;
    if (req->n_reconf == 0 || !planner_op_changes_layout(req->op) || req->op == PLANNER_OP_CREATE)
        return 0;
    b->reconf = xcalloc(b->ns ? b->ns : 1, 1);
    b->reconf_on = xcalloc(b->ns ? b->ns : 1, sizeof(*b->reconf_on));
    unsigned char *changed = xcalloc(b->ns ? b->ns : 1, 1);
    for (size_t i = 0; i < b->nn; i++) {
        const struct pnode *n = &b->nodes[i];
        for (int side = 0; side < 2; side++) {
            const struct planner_node *a = side ? n->s : n->t, *o = side ? n->t : n->s;
            for (size_t k = 0; a && k < a->n_services; k++)
                if (!planner__node_has(o, a->services[k]))
                    changed[planner__map_get(&b->svc_map, a->services[k])] = 1;
        }
    }
    for (size_t r = 0; r < req->n_reconf; r++) {
        const struct planner_reconf *rf = &req->reconf[r];
        long s = rf->service ? planner__map_get(&b->svc_map, rf->service) : -1;
        if (s < 0 || !b->present[s]) /* not on the cluster: nothing to reconfigure */
            continue;
        for (size_t k = 0; k < rf->on.n; k++) {
            long d = planner__map_get(&b->svc_map, rf->on.v[k]);
            if (d < 0 || d == s || !changed[d])
                continue;
            ulist_add(&b->reconf_on[s], (uint32_t)d);
            if (b->reconf[s] < (rf->restart ? 2 : 1))
                b->reconf[s] = rf->restart ? 2 : 1;
        }
    }
    free(changed);
    return 0;
}

/* ---- step 4: rolling restarts ---- */

/* How many nodes a rolling stop-then-start of s may have down at once; 0: no limit. */
static unsigned roll_window(struct build *b, size_t s)
{
    const struct planner_strategy *st = &svc_act(b, s, PLANNER_ACT_STOP)->strategy,
                                  *sa = &svc_act(b, s, PLANNER_ACT_START)->strategy;
    if (st->max_down)
        return st->max_down;
    if (sa->max_down)
        return sa->max_down;
    unsigned w = 0;
    const struct planner_strategy *both[2] = {st, sa};
    for (int i = 0; i < 2; i++) {
        unsigned x = both[i]->type == PLANNER_STRAT_ONE_BY_ONE ? 1 : both[i]->amount;
        if (x && (w == 0 || x < w))
            w = x;
    }
    return w;
}

/* Does task from (transitively) wait for task to? mark is scratch of n_tasks bytes, zeroed
 * on return. */
static bool waits_for(struct build *b, uint32_t from, uint32_t to, unsigned char *mark,
                      struct ulist *stack)
{
    bool found = false;
    stack->n = 0;
    XGROW(stack->v, stack->cap, 1);
    stack->v[stack->n++] = from;
    mark[from] = 1;
    struct ulist seen = {0};
    XGROW(seen.v, seen.cap, 1);
    seen.v[seen.n++] = from;
    while (stack->n > 0 && !found) {
        const struct planner_task *t = &b->plan->tasks[stack->v[--stack->n]];
        for (uint32_t k = 0; k < t->n_deps && !found; k++) {
            uint32_t d = t->deps[k];
            if (d == to)
                found = true;
            else if (!mark[d]) {
                mark[d] = 1;
                XGROW(seen.v, seen.cap, seen.n + 1);
                seen.v[seen.n++] = d;
                XGROW(stack->v, stack->cap, stack->n + 1);
                stack->v[stack->n++] = d;
            }
        }
    }
    for (size_t i = 0; i < seen.n; i++)
        mark[seen.v[i]] = 0;
    free(seen.v);
    return found;
}

void planner__roll(struct build *b)
{
    unsigned char *mark = NULL;
    struct ulist stack = {0};
    uint32_t *stops = xmalloc((b->nn + 1) * sizeof(*stops)),
             *starts = xmalloc((b->nn + 1) * sizeof(*starts));
    for (size_t s = 0; s < b->ns; s++) {
        if (!has_tasks(b, s, PLANNER_ACT_STOP) || !has_tasks(b, s, PLANNER_ACT_START))
            continue;
        unsigned w = roll_window(b, s);
        if (w == 0)
            continue;
        size_t m = 0; /* the nodes where s is stopped, then started again */
        for (size_t i = 0; i < b->nn; i++) {
            long st = planner__local_task(b, &b->nodes[i], s, PLANNER_ACT_STOP);
            long sa = planner__local_task(b, &b->nodes[i], s, PLANNER_ACT_START);
            if (st >= 0 && sa > st) {
                stops[m] = (uint32_t)st;
                starts[m++] = (uint32_t)sa;
            }
        }
        if (mark == NULL && m > w)
            mark = xcalloc(b->plan->n_tasks + 1, 1);
        for (size_t k = w; k < m; k++)
            if (!waits_for(b, starts[k - w], stops[k], mark, &stack))
                planner__add_dep(b->plan, stops[k], starts[k - w]);
    }
    free(stops);
    free(starts);
    free(stack.v);
    free(mark);
}
