/*
 * rollback: the plan that undoes what a failed plan did.
 *
 * Input: the failed plan and each task's state. Every task that succeeded gets
 * its inverse (create > delete, install > remove, configure > configure with
 * the previous configuration, start > stop, stop > start, remove > install,
 * delete > create; in an upgrade install > install of the previous version).
 * Tasks with nothing to undo (confirm, bootstrap, initialize, anchors, and a
 * stop and a start of one service on one node that both succeeded: a restart)
 * get none.
 *
 * Order: reverse of the original dependencies. If t waited for d in the failed
 * plan, the inverse of d waits for the inverse of t. Tasks without an inverse
 * stay in the graph at first so that order passes through them, then are
 * contracted away (their predecessors joined to their successors) when that
 * adds no more edges than it removes; the others remain as anchors
 * ("* /<original id>"), which keeps the rollback of a 10,000-node create linear.
 *
 * Deleted nodes: with the starting layout (planner_rollback_layout), a node the
 * failed plan deleted is recreated whole (create, confirm, bootstrap, its
 * services installed, configured, initialised and started, as an expand would)
 * and nothing else is undone on it; without it, its delete is undone by a bare
 * create.
 *
 * A rollback plan is not rolled back: the cluster stops for an operator.
 */
#include <string.h>

#include "planner_int.h"
#include "xalloc.h"

struct ulist {
    uint32_t *v;
    size_t n, cap;
};

/* Append; duplicates and stale entries are filtered when the plan is emitted,
 * so that no step here is quadratic in a 10,000-entry list. */
static void ul_push(struct ulist *l, uint32_t x)
{
    XGROW(l->v, l->cap, l->n + 1);
    l->v[l->n++] = x;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

struct inverse {
    int action; /* -1: nothing to undo */
    const char *type;
    json_t *fields; /* borrowed */
    const char *restore;
};

static const struct planner_service *find_service(const struct planner_service *svcs, size_t n,
                                                  const char *name)
{
    for (size_t i = 0; name && i < n; i++)
        if (strcmp(svcs[i].name, name) == 0)
            return &svcs[i];
    return NULL;
}

/* The inverse runs the service's own action when it has one, else the plugin of
 * the original task with no fields: the automator knows how to undo its work. */
static void use_action(struct inverse *inv, const struct planner_task *t,
                       const struct planner_service *sv, int action, json_t *empty)
{
    inv->action = action;
    if (sv && sv->actions[action].type) {
        inv->type = sv->actions[action].type;
        inv->fields = sv->actions[action].fields ? sv->actions[action].fields : empty;
    } else {
        inv->type = t->type;
        inv->fields = empty;
    }
}

static struct inverse inverse_of(const struct planner_plan *p, const struct planner_task *t,
                                 const struct planner_service *sv, json_t *empty)
{
    struct inverse inv = {-1, NULL, NULL, NULL};
    switch (t->action) {
    case PLANNER_ACT_CREATE:
        inv = (struct inverse){PLANNER_ACT_DELETE, t->type, t->fields, NULL};
        break;
    case PLANNER_ACT_DELETE:
        inv = (struct inverse){PLANNER_ACT_CREATE, t->type, t->fields, NULL};
        break;
    case PLANNER_ACT_INSTALL:
        if (p->op == PLANNER_OP_UPGRADE)
            inv = (struct inverse){PLANNER_ACT_INSTALL, t->type, t->fields, "previous-version"};
        else
            use_action(&inv, t, sv, PLANNER_ACT_REMOVE, empty);
        break;
    case PLANNER_ACT_REMOVE:
        use_action(&inv, t, sv, PLANNER_ACT_INSTALL, empty);
        break;
    case PLANNER_ACT_CONFIGURE:
        inv = (struct inverse){PLANNER_ACT_CONFIGURE, t->type, t->fields, "previous-config"};
        break;
    case PLANNER_ACT_START:
        use_action(&inv, t, sv, PLANNER_ACT_STOP, empty);
        break;
    case PLANNER_ACT_STOP:
        use_action(&inv, t, sv, PLANNER_ACT_START, empty);
        break;
    default: /* confirm, bootstrap, initialize, anchor */
        break;
    }
    return inv;
}

/*
 * Nodes that a failed plan deleted come back whole: the tasks of an expand
 * from the starting layout without them to the starting layout (create,
 * confirm, bootstrap, then each service's install > configure > initialize >
 * start with the usual dependencies; services elsewhere are running and not
 * waited for). The provider comes from the delete task. NULL plan when no
 * node was deleted.
 */
static int recreate_deleted(const struct planner_plan *failed,
                            const enum planner_task_state *states,
                            const struct planner_service *services, size_t n_services,
                            const struct planner_layout *start, struct planner__map *deleted,
                            struct planner_plan **sub, struct drv_err *err)
{
    *sub = NULL;
    const struct planner_task *del = NULL;
    for (size_t i = 0; i < failed->n_tasks && !del; i++)
        if (failed->tasks[i].action == PLANNER_ACT_DELETE && states[i] == PLANNER_TS_SUCCESS)
            del = &failed->tasks[i];
    if (del == NULL)
        return 0;
    struct planner_node *kept = xcalloc(start->n_nodes + 1, sizeof(*kept));
    struct planner_layout now = {kept, 0};
    for (size_t i = 0; i < start->n_nodes; i++)
        if (planner__map_get(deleted, start->nodes[i].id) < 0)
            kept[now.n_nodes++] = start->nodes[i];
    struct planner_request req;
    memset(&req, 0, sizeof(req));
    req.op = PLANNER_OP_EXPAND;
    req.start = &now;
    req.target = start;
    req.services = services;
    req.n_services = n_services;
    req.providertype = del->type;
    const json_t *pv = del->fields ? json_object_get(del->fields, "provider") : NULL;
    req.provider = json_is_string(pv) ? json_string_value(pv) : NULL;
    int rc = planner_build(&req, sub, err);
    if (rc < 0)
        drv_err_prefix(err, "recreating deleted nodes");
    free(kept);
    return rc;
}

int planner_rollback(const struct planner_plan *failed, const enum planner_task_state *states,
                     const struct planner_service *services, size_t n_services,
                     struct planner_plan **out, struct drv_err *err)
{
    return planner_rollback_layout(failed, states, services, n_services, NULL, out, err);
}

int planner_rollback_layout(const struct planner_plan *failed,
                            const enum planner_task_state *states,
                            const struct planner_service *services, size_t n_services,
                            const struct planner_layout *start, struct planner_plan **out,
                            struct drv_err *err)
{
    *out = NULL;
    if (failed->op == PLANNER_OP_ROLLBACK)
        return drv_err_set(err, DRV_EPERM, 0,
                           "a rollback plan is not rolled back: the cluster needs an operator");
    size_t n = failed->n_tasks;
    json_t *empty = json_object();
    struct planner__map ids;
    planner__map_init(&ids, n);
    for (size_t i = 0; i < n; i++)
        planner__map_put(&ids, failed->tasks[i].id, (uint32_t)i);

    /* Nodes deleted by the failed plan: recreated whole when the starting layout
     * is known, and then nothing else is undone on them. */
    struct planner__map deleted;
    planner__map_init(&deleted, 16);
    struct planner_plan *sub = NULL;
    if (start && states && services) {
        for (size_t i = 0; i < n; i++)
            if (failed->tasks[i].action == PLANNER_ACT_DELETE && states[i] == PLANNER_TS_SUCCESS &&
                failed->tasks[i].node)
                planner__map_put(&deleted, failed->tasks[i].node, 0);
        int rc = recreate_deleted(failed, states, services, n_services, start, &deleted, &sub, err);
        if (rc < 0) {
            planner__map_free(&deleted);
            planner__map_free(&ids);
            json_decref(empty);
            return rc;
        }
    }

    /* Which tasks take part, and their inverses. */
    unsigned char *in = xcalloc(n ? n : 1, 1);
    struct inverse *inv = xcalloc(n ? n : 1, sizeof(*inv));
    for (size_t i = 0; i < n; i++) {
        const struct planner_task *t = &failed->tasks[i];
        inv[i].action = -1;
        if (t->action == PLANNER_ACT_ANCHOR) {
            in[i] = 1;
            continue;
        }
        if (states == NULL || states[i] != PLANNER_TS_SUCCESS)
            continue;
        if (sub && t->node && planner__map_get(&deleted, t->node) >= 0)
            continue; /* the node comes back whole */
        in[i] = 1;
        const struct planner_service *sv = find_service(services, n_services, t->service);
        inv[i] = inverse_of(failed, t, sv, empty);
        /* A stop and a start of one service on one node that both succeeded undo
         * each other: nothing to do for either. */
        if ((t->action == PLANNER_ACT_STOP || t->action == PLANNER_ACT_START) && t->node &&
            t->service) {
            char *other = xasprintf("%s/%s/%s", t->node, t->service,
                                    t->action == PLANNER_ACT_STOP ? "start" : "stop");
            long o = planner__map_get(&ids, other);
            if (o >= 0 && states[o] == PLANNER_TS_SUCCESS)
                inv[i].action = -1;
            free(other);
        }
    }

    /* Rollback graph over original indices: wait[x] holds what x waits for. */
    struct ulist *wait = xcalloc(n ? n : 1, sizeof(*wait));
    struct ulist *succ = xcalloc(n ? n : 1, sizeof(*succ));
    for (size_t i = 0; i < n; i++) {
        if (!in[i])
            continue;
        const struct planner_task *t = &failed->tasks[i];
        for (uint32_t k = 0; k < t->n_deps; k++) {
            uint32_t d = t->deps[k];
            if (!in[d])
                continue;
            ul_push(&wait[d], (uint32_t)i); /* undo d after undoing i */
            ul_push(&succ[i], d);
        }
    }
    /*
     * Contract tasks without an inverse, last first (the order undo runs in):
     * what waits for k waits for what k waited for. Entries naming a task
     * contracted earlier are stale and skipped (in[] is 0).
     */
    for (size_t k = n; k-- > 0;) {
        if (!in[k] || inv[k].action >= 0)
            continue;
        size_t np = wait[k].n, nsu = succ[k].n;
        if (np && nsu && np * nsu > np + nsu)
            continue; /* cheaper as an anchor */
        in[k] = 0;
        for (size_t a = 0; a < nsu; a++) {
            uint32_t s = succ[k].v[a];
            if (!in[s])
                continue;
            for (size_t c = 0; c < np; c++)
                if (in[wait[k].v[c]])
                    ul_push(&wait[s], wait[k].v[c]);
        }
        for (size_t c = 0; c < np; c++) {
            uint32_t pr = wait[k].v[c];
            if (!in[pr])
                continue;
            for (size_t a = 0; a < nsu; a++)
                if (in[succ[k].v[a]])
                    ul_push(&succ[pr], succ[k].v[a]);
        }
    }

    /* Emit, in reverse of the original order. */
    struct planner_plan *rb = planner__plan_new(PLANNER_OP_ROLLBACK);
    rb->rollback_of = (int)failed->op;
    uint32_t *newidx = xmalloc((n ? n : 1) * sizeof(*newidx));
    for (size_t k = n; k-- > 0;) {
        if (!in[k])
            continue;
        const struct planner_task *t = &failed->tasks[k];
        const char *node = planner__arena_strdup(rb->arena, t->node);
        const char *svc = planner__arena_strdup(rb->arena, t->service);
        uint32_t x;
        if (inv[k].action < 0) {
            char *id = xasprintf("*/%s", t->id);
            static const struct planner_strategy parallel = {PLANNER_STRAT_PARALLEL, 0, 0};
            x = planner__add_task(rb, id, NULL, svc, PLANNER_ACT_ANCHOR, NULL, NULL, parallel);
            free(id);
        } else {
            const char *an = planner_action_name(inv[k].action);
            char *id = svc ? xasprintf("%s/%s/%s", t->node, t->service, an)
                           : xasprintf("%s/%s", t->node, an);
            x = planner__add_task(rb, id, node, svc, inv[k].action,
                                  planner__arena_strdup(rb->arena, inv[k].type), inv[k].fields,
                                  t->strategy);
            free(id);
            rb->tasks[x].inverse_of = planner__arena_strdup(rb->arena, t->id);
            rb->tasks[x].restore = planner__arena_strdup(rb->arena, inv[k].restore);
        }
        newidx[k] = x;
    }
    for (size_t k = n; k-- > 0;) {
        if (!in[k])
            continue;
        /* Live entries only, once each, by original index: deterministic. */
        uint32_t *w = wait[k].v;
        size_t m = 0;
        for (size_t a = 0; a < wait[k].n; a++)
            if (in[w[a]])
                w[m++] = w[a];
        if (m > 1)
            qsort(w, m, sizeof(*w), cmp_u32);
        for (size_t a = 0; a < m; a++)
            if (a == 0 || w[a] != w[a - 1])
                planner__add_dep_new(rb, newidx[k], newidx[w[a]]);
    }

    /* The recreated nodes, after the rest (they depend on nothing else undone). */
    if (sub) {
        uint32_t base = (uint32_t)rb->n_tasks;
        for (size_t k = 0; k < sub->n_tasks; k++) {
            const struct planner_task *t = &sub->tasks[k];
            uint32_t x = planner__add_task(rb, t->id, planner__arena_strdup(rb->arena, t->node),
                                           planner__arena_strdup(rb->arena, t->service), t->action,
                                           planner__arena_strdup(rb->arena, t->type), t->fields,
                                           t->strategy);
            if (t->action == PLANNER_ACT_CREATE) {
                char *orig = xasprintf("%s/delete", t->node);
                rb->tasks[x].inverse_of = planner__arena_strdup(rb->arena, orig);
                free(orig);
            }
            for (uint32_t d = 0; d < t->n_deps; d++)
                planner__add_dep_new(rb, x, base + t->deps[d]);
        }
        planner_plan_free(sub);
    }
    planner__map_free(&deleted);

    int rc = planner__check_ids(rb, err);
    if (rc == 0)
        rc = planner_toposort(rb, NULL, err);
    if (rc == 0)
        *out = rb;
    else
        planner_plan_free(rb);

    for (size_t i = 0; i < n; i++) {
        free(wait[i].v);
        free(succ[i].v);
    }
    free(wait);
    free(succ);
    free(newidx);
    free(inv);
    free(in);
    planner__map_free(&ids);
    json_decref(empty);
    return rc;
}
