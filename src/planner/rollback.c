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
 * A rollback plan is not rolled back: the cluster stops for an operator.
 */
#include <string.h>

#include "planner_int.h"
#include "xalloc.h"

struct ulist {
    uint32_t *v;
    size_t n, cap;
};

static void ul_add(struct ulist *l, uint32_t x)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i] == x)
            return;
    XGROW(l->v, l->cap, l->n + 1);
    l->v[l->n++] = x;
}

static void ul_del(struct ulist *l, uint32_t x)
{
    for (size_t i = 0; i < l->n; i++) {
        if (l->v[i] == x) {
            l->v[i] = l->v[--l->n];
            return;
        }
    }
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

int planner_rollback(const struct planner_plan *failed, const enum planner_task_state *states,
                     const struct planner_service *services, size_t n_services,
                     struct planner_plan **out, struct drv_err *err)
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
            ul_add(&wait[d], (uint32_t)i); /* undo d after undoing i */
            ul_add(&succ[i], d);
        }
    }
    /* Contract tasks without an inverse, last first (the order undo runs in). */
    for (size_t k = n; k-- > 0;) {
        if (!in[k] || inv[k].action >= 0)
            continue;
        size_t np = wait[k].n, nsu = succ[k].n;
        if (np && nsu && np * nsu > np + nsu)
            continue; /* cheaper as an anchor */
        for (size_t a = 0; a < nsu; a++) {
            uint32_t s = succ[k].v[a];
            ul_del(&wait[s], (uint32_t)k);
            for (size_t c = 0; c < np; c++)
                ul_add(&wait[s], wait[k].v[c]);
        }
        for (size_t c = 0; c < np; c++) {
            uint32_t pr = wait[k].v[c];
            ul_del(&succ[pr], (uint32_t)k);
            for (size_t a = 0; a < nsu; a++)
                ul_add(&succ[pr], succ[k].v[a]);
        }
        wait[k].n = succ[k].n = 0;
        in[k] = 0;
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
            static const struct planner_strategy parallel = {PLANNER_STRAT_PARALLEL, 0};
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
        /* Deterministic dependency order: by original index. */
        uint32_t *w = wait[k].v;
        for (size_t a = 1; a < wait[k].n; a++)
            for (size_t c = a; c > 0 && w[c - 1] > w[c]; c--) {
                uint32_t tmp = w[c];
                w[c] = w[c - 1];
                w[c - 1] = tmp;
            }
        for (size_t a = 0; a < wait[k].n; a++)
            planner__add_dep(rb, newidx[k], newidx[w[a]]);
    }

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
