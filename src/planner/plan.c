/*
 * plan: the DAG structure and the algorithms on it that do not care how it was
 * made: names, the string arena, the id map, topological sort with the loop's
 * path, and stages.
 *
 * Invariants of a plan (checked by planner__check_ids and planner_toposort):
 *   1. task ids are unique;
 *   2. deps hold indices of other tasks of the same plan, each at most once;
 *   3. the graph is acyclic (a plan with a loop is never returned).
 */
#include "planner_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "xalloc.h"

/* ---- names ---- */

static const char *const action_names[PLANNER_ACT_COUNT] = {
    "create", "confirm", "bootstrap", "install", "configure", "initialize",
    "start",  "stop",    "remove",    "delete",  "anchor",
};

static const char *const op_names[PLANNER_OP_COUNT] = {
    "create",       "delete",
    "expand",       "shrink",
    "add-services", "remove-services",
    "configure",    "configure-restart",
    "start",        "stop",
    "restart",      "upgrade",
    "rollback",
};

static const char *const state_names[PLANNER_TS_COUNT] = {
    "waiting", "pending", "in-progress", "success", "error", "failed-dependencies",
};

static int parse_name(const char *const *names, int n, const char *s)
{
    if (s == NULL)
        return -1;
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], s) == 0)
            return i;
    return -1;
}

const char *planner_action_name(enum planner_action a)
{
    return (unsigned)a < PLANNER_ACT_COUNT ? action_names[a] : "?";
}

int planner_action_parse(const char *s)
{
    return parse_name(action_names, PLANNER_ACT_COUNT, s);
}

const char *planner_op_name(enum planner_op op)
{
    return (unsigned)op < PLANNER_OP_COUNT ? op_names[op] : "?";
}

int planner_op_parse(const char *s)
{
    return parse_name(op_names, PLANNER_OP_COUNT, s);
}

const char *planner_state_name(enum planner_task_state s)
{
    return (unsigned)s < PLANNER_TS_COUNT ? state_names[s] : "?";
}

int planner_state_parse(const char *s)
{
    return parse_name(state_names, PLANNER_TS_COUNT, s);
}

int planner_op_changes_layout(enum planner_op op)
{
    return op == PLANNER_OP_CREATE || op == PLANNER_OP_EXPAND || op == PLANNER_OP_SHRINK ||
           op == PLANNER_OP_ADD_SERVICES || op == PLANNER_OP_REMOVE_SERVICES;
}

/* ---- the API's operations ---- */

static const struct planner_api_op api_ops[] = {
    {"create", PLANNER_OP_CREATE, "create", false},
    {"delete", PLANNER_OP_DELETE, "delete", false},
    {"expand", PLANNER_OP_EXPAND, "expand", false},
    {"shrink", PLANNER_OP_SHRINK, "shrink", false},
    {"addservices", PLANNER_OP_ADD_SERVICES, "addservices", false},
    {"removeservices", PLANNER_OP_REMOVE_SERVICES, "removeservices", false},
    {"configure", PLANNER_OP_CONFIGURE, "configure", true},
    {"start", PLANNER_OP_START, "start", true},
    {"stop", PLANNER_OP_STOP, "stop", true},
    {"restart", PLANNER_OP_RESTART, "restart", true},
    {"upgrade", PLANNER_OP_UPGRADE, "upgrade", true},
    /* A failed cluster solved again, its failed node layouts excluded: a create of the new
       layout, for the planner and for the job (docs/engine.md "Rollback"). */
    {"recreate", PLANNER_OP_CREATE, "create", false},
};

const struct planner_api_op *planner_api_op(const char *name)
{
    for (size_t i = 0; name && i < sizeof(api_ops) / sizeof(api_ops[0]); i++)
        if (strcmp(api_ops[i].name, name) == 0)
            return &api_ops[i];
    return NULL;
}

int planner_api_op_plan(const char *name, bool restart)
{
    const struct planner_api_op *a = planner_api_op(name);
    if (!a)
        return -1;
    return a->op == PLANNER_OP_CONFIGURE && restart ? PLANNER_OP_CONFIGURE_RESTART : (int)a->op;
}

/* ---- arena ---- */

struct arena_block {
    struct arena_block *next;
    size_t used, cap;
    char data[];
};

struct planner__arena {
    struct arena_block *head;
};

struct planner__arena *planner__arena_new(void)
{
    return xcalloc(1, sizeof(struct planner__arena));
}

void planner__arena_free(struct planner__arena *a)
{
    if (a == NULL)
        return;
    for (struct arena_block *b = a->head, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    free(a);
}

static char *arena_alloc(struct planner__arena *a, size_t n)
{
    struct arena_block *b = a->head;
    if (b == NULL || b->cap - b->used < n) {
        size_t cap = n > 65536 ? n : 65536;
        b = xmalloc(sizeof(*b) + cap);
        b->used = 0;
        b->cap = cap;
        b->next = a->head;
        a->head = b;
    }
    char *p = b->data + b->used;
    b->used += n;
    return p;
}

char *planner__arena_strdup(struct planner__arena *a, const char *s)
{
    if (s == NULL)
        return NULL;
    size_t n = strlen(s) + 1;
    char *p = arena_alloc(a, n);
    memcpy(p, s, n);
    return p;
}

char *planner__arena_printf(struct planner__arena *a, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    char *p = arena_alloc(a, (size_t)n + 1);
    if ((size_t)n < sizeof(small)) {
        memcpy(p, small, (size_t)n + 1);
    } else {
        va_start(ap, fmt);
        vsnprintf(p, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    return p;
}

/* ---- map ---- */

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

void planner__map_init(struct planner__map *m, size_t expect)
{
    size_t cap = 16;
    while (cap < expect * 2)
        cap *= 2;
    m->keys = xcalloc(cap, sizeof(*m->keys));
    m->vals = xcalloc(cap, sizeof(*m->vals));
    m->cap = cap;
    m->n = 0;
}

void planner__map_free(struct planner__map *m)
{
    FREE_NULL(m->keys);
    FREE_NULL(m->vals);
    m->cap = m->n = 0;
}

static void map_grow(struct planner__map *m)
{
    struct planner__map bigger;
    planner__map_init(&bigger, m->cap);
    for (size_t i = 0; i < m->cap; i++)
        if (m->keys[i])
            planner__map_put(&bigger, m->keys[i], m->vals[i]);
    planner__map_free(m);
    *m = bigger;
}

long planner__map_put(struct planner__map *m, const char *key, uint32_t val)
{
    if ((m->n + 1) * 2 > m->cap)
        map_grow(m);
    size_t mask = m->cap - 1;
    for (size_t i = hash_str(key) & mask;; i = (i + 1) & mask) {
        if (m->keys[i] == NULL) {
            m->keys[i] = key;
            m->vals[i] = val;
            m->n++;
            return -1;
        }
        if (strcmp(m->keys[i], key) == 0)
            return m->vals[i];
    }
}

long planner__map_get(const struct planner__map *m, const char *key)
{
    if (m->cap == 0)
        return -1;
    size_t mask = m->cap - 1;
    for (size_t i = hash_str(key) & mask; m->keys[i]; i = (i + 1) & mask)
        if (strcmp(m->keys[i], key) == 0)
            return m->vals[i];
    return -1;
}

/* ---- plan ---- */

struct planner_plan *planner__plan_new(enum planner_op op)
{
    struct planner_plan *p = xcalloc(1, sizeof(*p));
    p->format_version = PLANNER_FORMAT_VERSION;
    p->op = op;
    p->rollback_of = -1;
    p->max_per_node = 1;
    p->arena = planner__arena_new();
    return p;
}

void planner_plan_free(struct planner_plan *plan)
{
    if (plan == NULL)
        return;
    for (size_t i = 0; i < plan->n_tasks; i++) {
        if (plan->tasks[i].fields)
            json_decref(plan->tasks[i].fields);
        free(plan->tasks[i].deps);
    }
    free(plan->tasks);
    planner__arena_free(plan->arena);
    free(plan);
}

uint32_t planner__add_task(struct planner_plan *p, const char *id, const char *node,
                           const char *service, enum planner_action action, const char *type,
                           json_t *fields, struct planner_strategy strategy)
{
    XGROW(p->tasks, p->cap_tasks, p->n_tasks + 1);
    struct planner_task *t = &p->tasks[p->n_tasks];
    memset(t, 0, sizeof(*t));
    t->id = planner__arena_strdup(p->arena, id);
    t->node = node; /* callers pass arena strings for node, service and type */
    t->service = service;
    t->action = action;
    t->type = type;
    t->fields = fields ? json_incref(fields) : NULL;
    t->strategy = strategy;
    return (uint32_t)p->n_tasks++;
}

void planner__add_dep(struct planner_plan *p, uint32_t task, uint32_t dep)
{
    struct planner_task *t = &p->tasks[task];
    for (uint32_t i = 0; i < t->n_deps; i++)
        if (t->deps[i] == dep)
            return;
    planner__add_dep_new(p, task, dep);
}

void planner__add_dep_new(struct planner_plan *p, uint32_t task, uint32_t dep)
{
    struct planner_task *t = &p->tasks[task];
    if (t->n_deps == t->cap_deps) {
        t->cap_deps = t->cap_deps ? t->cap_deps * 2 : 4;
        t->deps = xrealloc(t->deps, t->cap_deps * sizeof(*t->deps));
    }
    t->deps[t->n_deps++] = dep;
}

int planner__check_ids(const struct planner_plan *p, struct drv_err *err)
{
    struct planner__map m;
    planner__map_init(&m, p->n_tasks);
    int rc = 0;
    for (size_t i = 0; i < p->n_tasks; i++) {
        if (planner__map_put(&m, p->tasks[i].id, (uint32_t)i) >= 0) {
            rc = drv_err_set(err, DRV_EINVAL, 0, "duplicate task id \"%s\"", p->tasks[i].id);
            break;
        }
    }
    planner__map_free(&m);
    return rc;
}

long planner_find(const struct planner_plan *plan, const char *id)
{
    for (size_t i = 0; i < plan->n_tasks; i++)
        if (strcmp(plan->tasks[i].id, id) == 0)
            return (long)i;
    return -1;
}

/* ---- topological sort ---- */

/*
 * Iterative depth-first search over dependencies (a task after all it waits
 * for), so that 100,000 tasks in a chain do not overflow the C stack. A grey
 * task met again closes a loop; the DFS stack holds the path.
 */
int planner_toposort(const struct planner_plan *plan, uint32_t *order, struct drv_err *err)
{
    size_t n = plan->n_tasks;
    unsigned char *colour = xcalloc(n ? n : 1, 1); /* 0 white, 1 grey, 2 black */
    uint32_t *stack = xmalloc((n ? n : 1) * sizeof(*stack));
    uint32_t *next = xcalloc(n ? n : 1, sizeof(*next)); /* next dep to visit */
    size_t done = 0;
    int rc = 0;

    for (size_t root = 0; root < n && rc == 0; root++) {
        if (colour[root])
            continue;
        size_t sp = 0;
        stack[sp++] = (uint32_t)root;
        colour[root] = 1;
        while (sp > 0 && rc == 0) {
            uint32_t v = stack[sp - 1];
            const struct planner_task *t = &plan->tasks[v];
            if (next[v] < t->n_deps) {
                uint32_t w = t->deps[next[v]++];
                if (colour[w] == 0) {
                    colour[w] = 1;
                    stack[sp++] = w;
                } else if (colour[w] == 1) {
                    /* Loop: w ... v on the stack, and v waits for w. Print in
                     * execution order: w waits for ..., so walk the stack down. */
                    size_t from = sp - 1;
                    while (stack[from] != w)
                        from--;
                    size_t cap = 256, len = 0;
                    char *msg = xmalloc(cap);
                    msg[0] = '\0';
                    for (size_t k = sp; k-- > from;) {
                        const char *id = plan->tasks[stack[k]].id;
                        size_t need = len + strlen(id) + 5;
                        XGROW(msg, cap, need);
                        len += (size_t)sprintf(msg + len, "%s -> ", id);
                    }
                    XGROW(msg, cap, len + strlen(plan->tasks[v].id) + 1);
                    sprintf(msg + len, "%s", plan->tasks[v].id);
                    rc = drv_err_set(err, DRV_ECYCLE, 0, "dependency loop: %s", msg);
                    free(msg);
                }
            } else {
                colour[v] = 2;
                if (order)
                    order[done] = v;
                done++;
                sp--;
            }
        }
    }
    free(colour);
    free(stack);
    free(next);
    return rc;
}

/* ---- stages ---- */

int planner_stages(const struct planner_plan *plan, struct planner_stages **out,
                   struct drv_err *err)
{
    size_t n = plan->n_tasks;
    uint32_t *order = xmalloc((n ? n : 1) * sizeof(*order));
    int rc = planner_toposort(plan, order, err);
    if (rc < 0) {
        free(order);
        return rc;
    }
    /*
     * level[t]: the stage of a real task; exit[t]: the first level free after t.
     * An anchor takes no stage: its exit is the largest exit of its deps.
     */
    uint32_t *level = xcalloc(n ? n : 1, sizeof(*level));
    uint32_t *exitl = xcalloc(n ? n : 1, sizeof(*exitl));
    uint32_t max_level = 0;
    for (size_t k = 0; k < n; k++) {
        uint32_t v = order[k];
        const struct planner_task *t = &plan->tasks[v];
        uint32_t l = 0;
        for (uint32_t d = 0; d < t->n_deps; d++)
            if (exitl[t->deps[d]] > l)
                l = exitl[t->deps[d]];
        level[v] = l;
        if (t->action == PLANNER_ACT_ANCHOR) {
            exitl[v] = l;
        } else {
            exitl[v] = l + 1;
            if (l + 1 > max_level)
                max_level = l + 1;
        }
    }
    /* Split each level: a node's k-th task of the level (in plan order) goes to
     * sub-stage k. Tasks bucketed by level, then counted per node with a stamp. */
    uint32_t *sub = xcalloc(n ? n : 1, sizeof(*sub));
    uint32_t *node_of = xcalloc(n ? n : 1, sizeof(*node_of));
    struct planner__map nodes;
    planner__map_init(&nodes, 1024);
    uint32_t n_nodes = 0;
    size_t *bstart = xcalloc((size_t)max_level + 2, sizeof(*bstart));
    for (size_t v = 0; v < n; v++) {
        const struct planner_task *t = &plan->tasks[v];
        if (t->action == PLANNER_ACT_ANCHOR || t->node == NULL)
            continue;
        long ni = planner__map_put(&nodes, t->node, n_nodes);
        node_of[v] = ni < 0 ? n_nodes++ : (uint32_t)ni;
        bstart[level[v] + 1]++;
    }
    for (uint32_t l = 0; l <= max_level; l++)
        bstart[l + 1] += bstart[l];
    uint32_t *bucket = xmalloc((bstart[max_level + 1] + 1) * sizeof(*bucket));
    size_t *bfill = xcalloc((size_t)max_level + 1, sizeof(*bfill));
    for (size_t v = 0; v < n; v++)
        if (plan->tasks[v].action != PLANNER_ACT_ANCHOR && plan->tasks[v].node)
            bucket[bstart[level[v]] + bfill[level[v]]++] = (uint32_t)v;
    uint32_t *cnt = xcalloc(n_nodes + 1, sizeof(*cnt));
    uint32_t *stamp = xcalloc(n_nodes + 1, sizeof(*stamp));
    for (uint32_t l = 0; l < max_level; l++) {
        for (size_t k = bstart[l]; k < bstart[l + 1]; k++) {
            uint32_t v = bucket[k], ni = node_of[v];
            if (stamp[ni] != l + 1) {
                stamp[ni] = l + 1;
                cnt[ni] = 0;
            }
            sub[v] = cnt[ni]++;
        }
    }
    free(cnt);
    free(stamp);
    free(bucket);
    free(bfill);
    free(bstart);
    free(node_of);
    planner__map_free(&nodes);
    /* Sub-stages per level. */
    uint32_t *width = xcalloc(max_level + 1, sizeof(*width)); /* sub-stages in a level */
    for (size_t v = 0; v < n; v++)
        if (plan->tasks[v].action != PLANNER_ACT_ANCHOR && sub[v] + 1 > width[level[v]])
            width[level[v]] = sub[v] + 1;
    uint32_t *first = xcalloc(max_level + 1, sizeof(*first)); /* first stage of a level */
    size_t n_stages = 0;
    for (uint32_t l = 0; l < max_level; l++) {
        first[l] = (uint32_t)n_stages;
        n_stages += width[l];
    }
    struct planner_stages *st = xcalloc(1, sizeof(*st));
    st->n_stages = n_stages;
    st->start = xcalloc(n_stages + 1, sizeof(*st->start));
    for (size_t v = 0; v < n; v++)
        if (plan->tasks[v].action != PLANNER_ACT_ANCHOR)
            st->start[first[level[v]] + sub[v] + 1]++;
    for (size_t s = 0; s < n_stages; s++)
        st->start[s + 1] += st->start[s];
    st->tasks = xmalloc((st->start[n_stages] ? st->start[n_stages] : 1) * sizeof(*st->tasks));
    size_t *fill = xcalloc(n_stages + 1, sizeof(*fill));
    for (size_t v = 0; v < n; v++) {
        if (plan->tasks[v].action == PLANNER_ACT_ANCHOR)
            continue;
        size_t s = first[level[v]] + sub[v];
        st->tasks[st->start[s] + fill[s]++] = (uint32_t)v;
    }
    free(fill);
    free(first);
    free(width);
    free(sub);
    free(level);
    free(exitl);
    free(order);
    *out = st;
    return 0;
}

void planner_stages_free(struct planner_stages *st)
{
    if (st == NULL)
        return;
    free(st->start);
    free(st->tasks);
    free(st);
}
