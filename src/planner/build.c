/*
 * build: an operation to a DAG of node-level tasks.
 *
 * Three steps, each deterministic:
 *
 *   1. Which tasks. The operation decides, per node, the node-level actions
 *      before (create > confirm > bootstrap) and after (delete) the service
 *      tasks, and for each service it acts on the chain of service actions
 *      (create: install > configure > initialize > start). Layout-changing
 *      operations compare the starting and target layouts node by node: a new
 *      node is created, a node that left is stopped and deleted, a service that
 *      arrived on a node is installed and started, one that left is stopped and
 *      removed. A service without an action gets no task for it; the chain goes
 *      from the task before to the task after.
 *
 *   2. Service-level dependency graphs. Names resolve to the services on the
 *      cluster: a service itself when it is there, and every service that
 *      `provides` the name; `uses` and `requires` of a service not on the
 *      cluster are dropped. A service that lacks the actions of a kind is
 *      passed through: whoever depends on it depends on its dependencies. A
 *      service with the actions but no task in this plan (already running,
 *      already installed) is done and dropped. The runtime graph is then
 *      reduced to direct dependencies (A needs B and C, B needs C: A waits for
 *      B only), unless it has a loop, which step 3 reports.
 *
 *   3. Task dependencies. Install waits for the install of what it needs on
 *      the same node, or on every node when it is not on this one; remove is
 *      the reverse. The first of initialize/start of A on any node waits for
 *      the start (or, failing that, the initialize) of each B it needs on every
 *      node; stop is the reverse. "Every node" goes through an anchor per
 *      service and action ("* /B/start"), so two services on N and M nodes cost
 *      N + M edges, not N * M; a service on one node is waited for directly.
 *
 *   4. Rolling restarts. A service stopped and started again on several
 *      nodes (restart, configure-restart, upgrade) with a rolling strategy on
 *      its stop or start (one-by-one, parallel with an amount, or max_down)
 *      has at most w nodes down at once: the stop on the (k + w)-th node
 *      waits for the start on the k-th, in plan order. The strategy limits
 *      alone bound stops and starts separately, not the time between them.
 *      An edge that would close a loop (the start waits, through runtime
 *      dependencies, for that stop) is left out: nothing can roll there.
 *
 * Finally the DAG is sorted once: a loop is an error naming its tasks.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "build_int.h"
#include "xalloc.h"

#define NA PLANNER_ACT_COUNT

/* ---- step 0: inputs ---- */

static int check_layout(struct build *b, const struct planner_layout *l, const char *which)
{
    if (l == NULL)
        return 0;
    struct planner__map ids;
    planner__map_init(&ids, l->n_nodes);
    int rc = 0;
    for (size_t i = 0; i < l->n_nodes && rc == 0; i++) {
        const struct planner_node *n = &l->nodes[i];
        if (n->id == NULL || n->id[0] == '\0' || strchr(n->id, '/') || strcmp(n->id, "*") == 0) {
            rc = drv_err_set(b->err, DRV_EINVAL, 0, "%s layout: bad node id \"%s\"", which,
                             n->id ? n->id : "");
            break;
        }
        if (planner__map_put(&ids, n->id, (uint32_t)i) >= 0) {
            rc = drv_err_set(b->err, DRV_EINVAL, 0, "%s layout: duplicate node \"%s\"", which,
                             n->id);
            break;
        }
        for (size_t k = 0; k < n->n_services; k++) {
            long s = planner__map_get(&b->svc_map, n->services[k]);
            if (s < 0) {
                rc = drv_err_set(b->err, DRV_EINVAL, 0, "node \"%s\": unknown service \"%s\"",
                                 n->id, n->services[k]);
                break;
            }
            b->present[s] = 1;
        }
    }
    planner__map_free(&ids);
    return rc;
}

/* Resolve a dependency name: the service itself when on the cluster, and the
 * services on the cluster that provide the name. */
static void resolve(struct build *b, size_t self, const char *name, struct ulist *out)
{
    long s = planner__map_get(&b->svc_map, name);
    if (s >= 0 && (size_t)s != self && b->present[s])
        ulist_add(out, (uint32_t)s);
    for (size_t j = 0; j < b->ns; j++) {
        if (j == self || !b->present[j])
            continue;
        const struct planner_strlist *p = &b->req->services[j].provides;
        for (size_t k = 0; k < p->n; k++)
            if (strcmp(p->v[k], name) == 0)
                ulist_add(out, (uint32_t)j);
    }
}

static void resolve_all(struct build *b)
{
    b->dep_install = xcalloc(b->ns, sizeof(struct ulist));
    b->dep_runtime = xcalloc(b->ns, sizeof(struct ulist));
    b->req_runtime = xcalloc(b->ns, sizeof(struct ulist));
    for (size_t i = 0; i < b->ns; i++) {
        const struct planner_service *sv = &b->req->services[i];
        for (size_t k = 0; k < sv->install_requires.n; k++)
            resolve(b, i, sv->install_requires.v[k], &b->dep_install[i]);
        for (size_t k = 0; k < sv->install_uses.n; k++)
            resolve(b, i, sv->install_uses.v[k], &b->dep_install[i]);
        for (size_t k = 0; k < sv->runtime_requires.n; k++) {
            resolve(b, i, sv->runtime_requires.v[k], &b->dep_runtime[i]);
            resolve(b, i, sv->runtime_requires.v[k], &b->req_runtime[i]);
        }
        for (size_t k = 0; k < sv->runtime_uses.n; k++)
            resolve(b, i, sv->runtime_uses.v[k], &b->dep_runtime[i]);
    }
}

/* Close set under runtime requires: forward (what the set needs) or reverse
 * (what needs the set). */
static void close_requires(struct build *b, unsigned char *set, int reverse)
{
    for (int changed = 1; changed;) {
        changed = 0;
        for (size_t a = 0; a < b->ns; a++) {
            for (size_t k = 0; k < b->req_runtime[a].n; k++) {
                size_t r = b->req_runtime[a].v[k];
                size_t from = reverse ? r : a, to = reverse ? a : r;
                if (set[from] && !set[to] && b->present[to]) {
                    set[to] = 1;
                    changed = 1;
                }
            }
        }
    }
}

static int select_services(struct build *b)
{
    const struct planner_request *req = b->req;
    b->sel = xcalloc(b->ns ? b->ns : 1, 1);
    b->restart = xcalloc(b->ns ? b->ns : 1, 1);
    if (req->subset.n == 0) {
        memcpy(b->sel, b->present, b->ns);
    } else {
        for (size_t k = 0; k < req->subset.n; k++) {
            long s = planner__map_get(&b->svc_map, req->subset.v[k]);
            if (s < 0 || !b->present[s])
                return drv_err_set(b->err, DRV_EINVAL, 0, "service \"%s\" is not on the cluster",
                                   req->subset.v[k]);
            b->sel[s] = 1;
        }
    }
    switch (req->op) {
    case PLANNER_OP_START:
        close_requires(b, b->sel, 0); /* starting a service starts what it requires */
        break;
    case PLANNER_OP_STOP:
    case PLANNER_OP_RESTART:
        close_requires(b, b->sel, 1); /* stopping one stops what requires it */
        break;
    case PLANNER_OP_CONFIGURE_RESTART:
    case PLANNER_OP_UPGRADE:
        memcpy(b->restart, b->sel, b->ns);
        close_requires(b, b->restart, 1);
        break;
    default:
        break;
    }
    return 0;
}

/* ---- step 1: tasks ---- */

int planner__node_has(const struct planner_node *n, const char *svc)
{
    if (n == NULL)
        return 0;
    for (size_t k = 0; k < n->n_services; k++)
        if (strcmp(n->services[k], svc) == 0)
            return 1;
    return 0;
}

/* The chain of service actions for service s on node n; returns its length. */
static int service_chain(struct build *b, const struct pnode *n, size_t s, int *acts)
{
    const char *name = b->req->services[s].name;
    int in_s = planner__node_has(n->s, name), in_t = planner__node_has(n->t, name);
    int k = 0;
    switch (b->req->op) {
    case PLANNER_OP_CREATE:
    case PLANNER_OP_EXPAND:
    case PLANNER_OP_SHRINK:
    case PLANNER_OP_ADD_SERVICES:
    case PLANNER_OP_REMOVE_SERVICES:
        if (in_t && !in_s) {
            acts[k++] = PLANNER_ACT_INSTALL;
            acts[k++] = PLANNER_ACT_CONFIGURE;
            acts[k++] = PLANNER_ACT_INITIALIZE;
            acts[k++] = PLANNER_ACT_START;
        } else if (in_s && !in_t) {
            acts[k++] = PLANNER_ACT_STOP;
            if (n->t) /* the node stays: take the service off it */
                acts[k++] = PLANNER_ACT_REMOVE;
        } else if (in_s && in_t && b->reconf && b->reconf[s]) {
            /* A dependent of the change, kept on this node: configured again. */
            acts[k++] = PLANNER_ACT_CONFIGURE;
            if (b->reconf[s] == 2) {
                acts[k++] = PLANNER_ACT_STOP;
                acts[k++] = PLANNER_ACT_START;
            }
        }
        break;
    case PLANNER_OP_CONFIGURE:
        if (b->sel[s])
            acts[k++] = PLANNER_ACT_CONFIGURE;
        break;
    case PLANNER_OP_CONFIGURE_RESTART:
        if (b->sel[s])
            acts[k++] = PLANNER_ACT_CONFIGURE;
        if (b->restart[s]) {
            acts[k++] = PLANNER_ACT_STOP;
            acts[k++] = PLANNER_ACT_START;
        }
        break;
    case PLANNER_OP_START:
        if (b->sel[s])
            acts[k++] = PLANNER_ACT_START;
        break;
    case PLANNER_OP_STOP:
        if (b->sel[s])
            acts[k++] = PLANNER_ACT_STOP;
        break;
    case PLANNER_OP_RESTART:
        if (b->sel[s]) {
            acts[k++] = PLANNER_ACT_STOP;
            acts[k++] = PLANNER_ACT_START;
        }
        break;
    case PLANNER_OP_UPGRADE:
        if (b->sel[s]) {
            acts[k++] = PLANNER_ACT_STOP;
            acts[k++] = PLANNER_ACT_INSTALL;
            acts[k++] = PLANNER_ACT_CONFIGURE;
            acts[k++] = PLANNER_ACT_START;
        } else if (b->restart[s]) {
            acts[k++] = PLANNER_ACT_STOP;
            acts[k++] = PLANNER_ACT_START;
        }
        break;
    default:
        break;
    }
    /* Keep only the actions the service has. */
    int m = 0;
    for (int i = 0; i < k; i++)
        if (has_def(b, s, acts[i]))
            acts[m++] = acts[i];
    return m;
}

/* Shared fields objects: one per distinct value, so 10,000 nodes of one
 * hardware type hold one object. */
struct fcache {
    char **keys;
    json_t **vals;
    size_t n, cap;
};

static json_t *fcache_get(struct fcache *c, const char *key)
{
    for (size_t i = c->n; i-- > 0;)
        if (strcmp(c->keys[i], key) == 0)
            return c->vals[i];
    return NULL;
}

static json_t *fcache_put(struct fcache *c, const char *key, json_t *val)
{
    XGROW(c->keys, c->cap, c->n + 1);
    c->vals = xrealloc(c->vals, c->cap * sizeof(*c->vals));
    c->keys[c->n] = xstrdup(key);
    c->vals[c->n++] = val;
    return val;
}

static void fcache_free(struct fcache *c)
{
    for (size_t i = 0; i < c->n; i++) {
        free(c->keys[i]);
        json_decref(c->vals[i]);
    }
    free(c->keys);
    free(c->vals);
}

static json_t *provider_fields(struct build *b, struct fcache *c, const struct planner_node *n)
{
    const char *hw = n && n->hardwaretype ? n->hardwaretype : "";
    const char *img = n && n->imagetype ? n->imagetype : "";
    char *key = xasprintf("%s\n%s", hw, img);
    json_t *f = fcache_get(c, key);
    if (f == NULL) {
        f = json_object();
        if (b->req->provider)
            json_object_set_new(f, "provider", json_string(b->req->provider));
        if (hw[0])
            json_object_set_new(f, "hardwaretype", json_string(hw));
        if (img[0])
            json_object_set_new(f, "imagetype", json_string(img));
        fcache_put(c, key, f);
    }
    free(key);
    return f;
}

/* Bootstrap fields: the automators the node's services use, sorted. */
static json_t *bootstrap_fields(struct build *b, struct fcache *c, const struct planner_node *n)
{
    const char *types[64];
    size_t nt = 0;
    for (size_t k = 0; n && k < n->n_services; k++) {
        size_t s = (size_t)planner__map_get(&b->svc_map, n->services[k]);
        for (int a = PLANNER_ACT_INSTALL; a <= PLANNER_ACT_REMOVE; a++) {
            const char *ty = svc_act(b, s, a)->type;
            if (ty == NULL)
                continue;
            size_t i = 0;
            while (i < nt && strcmp(types[i], ty) < 0)
                i++;
            if (i < nt && strcmp(types[i], ty) == 0)
                continue;
            if (nt == 64)
                continue;
            memmove(types + i + 1, types + i, (nt - i) * sizeof(*types));
            types[i] = ty;
            nt++;
        }
    }
    size_t len = 1;
    for (size_t i = 0; i < nt; i++)
        len += strlen(types[i]) + 1;
    char *key = xmalloc(len);
    key[0] = '\0';
    for (size_t i = 0; i < nt; i++) {
        strcat(key, types[i]);
        strcat(key, "\n");
    }
    json_t *f = fcache_get(c, key);
    if (f == NULL) {
        json_t *arr = json_array();
        for (size_t i = 0; i < nt; i++)
            json_array_append_new(arr, json_string(types[i]));
        f = json_object();
        json_object_set_new(f, "automators", arr);
        fcache_put(c, key, f);
    }
    free(key);
    return f;
}

static uint32_t add_task(struct build *b, const char *id, const char *node, int svc,
                         enum planner_action a, const char *type, json_t *fields,
                         struct planner_strategy st)
{
    const char *svc_name = svc >= 0 ? b->svc_name[svc] : NULL;
    uint32_t t = planner__add_task(b->plan, id, node, svc_name, a, type, fields, st);
    XGROW(b->task_svc, b->task_svc_cap, (size_t)t + 1);
    b->task_svc[t] = svc;
    if (svc >= 0 && a != PLANNER_ACT_ANCHOR) {
        struct ulist *l = &b->by_sa[(size_t)svc * NA + a]; /* new task: no duplicate check */
        XGROW(l->v, l->cap, l->n + 1);
        l->v[l->n++] = t;
    }
    return t;
}

static void make_tasks(struct build *b)
{
    static const struct planner_strategy parallel = {PLANNER_STRAT_PARALLEL, 0, 0};
    struct fcache prov = {0}, boot = {0};
    const char *ptype = b->req->providertype ? b->req->providertype : "provider";
    const char *ptype_a = planner__arena_strdup(b->plan->arena, ptype);
    const char *btype = planner__arena_strdup(b->plan->arena, "bootstrap");
    char id[1024];
    enum planner_op op = b->req->op;

    for (size_t i = 0; i < b->nn; i++) {
        struct pnode *n = &b->nodes[i];
        const struct planner_node *cur = n->t ? n->t : n->s;
        n->first = (uint32_t)b->plan->n_tasks;
        n->pre_last = -1;

        /* The services of the node, with their chains. */
        size_t nsv = (n->s ? n->s->n_services : 0) + (n->t ? n->t->n_services : 0);
        size_t *svcs = xmalloc((nsv ? nsv : 1) * sizeof(*svcs));
        int(*chains)[8] = xmalloc((nsv ? nsv : 1) * sizeof(*chains));
        int *clen = xmalloc((nsv ? nsv : 1) * sizeof(*clen));
        size_t m = 0;
        int any = 0; /* an install or a configure on the node */
        for (int side = 0; side < 2; side++) {
            const struct planner_node *ln = side ? n->s : n->t;
            for (size_t k = 0; ln && k < ln->n_services; k++) {
                size_t s = (size_t)planner__map_get(&b->svc_map, ln->services[k]);
                int dup = 0;
                for (size_t j = 0; j < m; j++)
                    dup |= svcs[j] == s;
                if (dup)
                    continue;
                svcs[m] = s;
                clen[m] = service_chain(b, n, s, chains[m]);
                for (int c = 0; c < clen[m]; c++)
                    any |= chains[m][c] == PLANNER_ACT_INSTALL ||
                           chains[m][c] == PLANNER_ACT_CONFIGURE;
                m++;
            }
        }

        /* Node-level actions before the services. */
        int is_new = n->t && !n->s && planner_op_changes_layout(op);
        if (is_new) {
            static const enum planner_action pre[] = {PLANNER_ACT_CREATE, PLANNER_ACT_CONFIRM};
            for (int k = 0; k < 2; k++) {
                snprintf(id, sizeof(id), "%s/%s", n->id, planner_action_name(pre[k]));
                uint32_t t = add_task(b, id, n->id, -1, pre[k], ptype_a,
                                      provider_fields(b, &prov, cur), parallel);
                if (n->pre_last >= 0)
                    planner__add_dep(b->plan, t, (uint32_t)n->pre_last);
                n->pre_last = t;
            }
        }
        /* Bootstrap before installing or configuring anything on a node. */
        if (is_new || any) {
            snprintf(id, sizeof(id), "%s/bootstrap", n->id);
            uint32_t t = add_task(b, id, n->id, -1, PLANNER_ACT_BOOTSTRAP, btype,
                                  bootstrap_fields(b, &boot, cur), parallel);
            if (n->pre_last >= 0)
                planner__add_dep(b->plan, t, (uint32_t)n->pre_last);
            n->pre_last = t;
        }

        /* Service tasks, phase by phase; each waits for the one before it in
         * its chain, the first for the node-level tasks. */
        long *prev = xmalloc((m ? m : 1) * sizeof(*prev));
        for (size_t j = 0; j < m; j++)
            prev[j] = n->pre_last;
        for (int pos = 0; pos < 8; pos++) {
            for (size_t j = 0; j < m; j++) {
                if (pos >= clen[j])
                    continue;
                size_t s = svcs[j];
                int a = chains[j][pos];
                const struct planner_svc_action *sa = svc_act(b, s, a);
                snprintf(id, sizeof(id), "%s/%s/%s", n->id, b->svc_name[s], planner_action_name(a));
                const char *ty = planner__arena_strdup(b->plan->arena, sa->type);
                uint32_t t = add_task(b, id, n->id, (int)s, a, ty,
                                      sa->fields ? sa->fields : b->empty, sa->strategy);
                if (prev[j] >= 0)
                    planner__add_dep(b->plan, t, (uint32_t)prev[j]);
                prev[j] = t;
            }
        }

        /* Node-level actions after: delete, once every task of the node is done. */
        int del = (op == PLANNER_OP_DELETE) || (planner_op_changes_layout(op) && n->s && !n->t);
        if (del) {
            snprintf(id, sizeof(id), "%s/delete", n->id);
            uint32_t t = add_task(b, id, n->id, -1, PLANNER_ACT_DELETE, ptype_a,
                                  provider_fields(b, &prov, cur), parallel);
            for (size_t j = 0; j < m; j++)
                if (prev[j] >= 0)
                    planner__add_dep(b->plan, t, (uint32_t)prev[j]);
            if (n->pre_last >= 0)
                planner__add_dep(b->plan, t, (uint32_t)n->pre_last);
        }
        n->count = (uint32_t)(b->plan->n_tasks - n->first);
        free(prev);
        free(svcs);
        free(chains);
        free(clen);
    }
    /* The plan holds its own references; drop the caches'. */
    fcache_free(&prov);
    fcache_free(&boot);
}

/* ---- step 2: service-level graphs ---- */

/* Effective dependencies of one kind: targets with tasks of the action mask in
 * this plan; services lacking every action of the mask are passed through. */
static void flatten(struct build *b, const struct ulist *deps, size_t s, unsigned mask,
                    unsigned char *seen, struct ulist *out)
{
    for (size_t k = 0; k < deps[s].n; k++) {
        size_t d = deps[s].v[k];
        if (seen[d])
            continue;
        seen[d] = 1;
        int tasks = 0, defs = 0;
        for (int a = 0; a < NA; a++) {
            if (!(mask & (1u << a)))
                continue;
            tasks |= has_tasks(b, d, a);
            defs |= has_def(b, d, a);
        }
        if (tasks)
            ulist_add(out, (uint32_t)d);
        else if (!defs)
            flatten(b, deps, d, mask, seen, out);
        /* else: it has the action but nothing to do now: done already. */
    }
}

static struct ulist *effective(struct build *b, const struct ulist *deps, unsigned mask)
{
    struct ulist *eff = xcalloc(b->ns ? b->ns : 1, sizeof(*eff));
    unsigned char *seen = xmalloc(b->ns ? b->ns : 1);
    for (size_t s = 0; s < b->ns; s++) {
        memset(seen, 0, b->ns);
        seen[s] = 1;
        flatten(b, deps, s, mask, seen, &eff[s]);
    }
    free(seen);
    return eff;
}

/* Drop t from eff[s] when another u in eff[s] reaches t. Skipped when the graph
 * has a loop: the task graph then reports it with its path. */
static void reduce(struct build *b, struct ulist *eff)
{
    size_t ns = b->ns;
    if (ns == 0)
        return;
    unsigned char *reach = xcalloc(ns * ns, 1); /* reach[u*ns+t]: u reaches t (path >= 1) */
    uint32_t *stack = xmalloc(ns * ns * sizeof(*stack) + sizeof(*stack));
    for (size_t u = 0; u < ns; u++) {
        size_t sp = 0;
        for (size_t k = 0; k < eff[u].n; k++)
            stack[sp++] = eff[u].v[k];
        while (sp > 0) {
            uint32_t v = stack[--sp];
            if (reach[u * ns + v])
                continue;
            reach[u * ns + v] = 1;
            for (size_t k = 0; k < eff[v].n; k++)
                if (!reach[u * ns + eff[v].v[k]])
                    stack[sp++] = eff[v].v[k];
        }
    }
    int loop = 0;
    for (size_t u = 0; u < ns; u++)
        loop |= reach[u * ns + u];
    if (!loop) {
        for (size_t s = 0; s < ns; s++) {
            struct ulist *l = &eff[s];
            size_t m = 0;
            for (size_t i = 0; i < l->n; i++) {
                int implied = 0;
                for (size_t j = 0; j < l->n && !implied; j++)
                    implied = j != i && reach[(size_t)l->v[j] * ns + l->v[i]];
                if (!implied)
                    l->v[m++] = l->v[i];
            }
            l->n = m;
        }
    }
    free(stack);
    free(reach);
}

static void free_lists(struct ulist *l, size_t n)
{
    if (l == NULL)
        return;
    for (size_t i = 0; i < n; i++)
        free(l[i].v);
    free(l);
}

/* ---- step 3: task dependencies ---- */

/* The task that stands for "(s, a) on every node": the task itself when there
 * is one, else an anchor waiting for all of them. */
uint32_t planner__every(struct build *b, size_t s, int a)
{
    struct ulist *l = &b->by_sa[s * NA + a];
    if (l->n == 1)
        return l->v[0];
    long *an = &b->anchor[s * NA + a];
    if (*an < 0) {
        char id[512];
        snprintf(id, sizeof(id), "*/%s/%s", b->svc_name[s], planner_action_name(a));
        static const struct planner_strategy parallel = {PLANNER_STRAT_PARALLEL, 0, 0};
        uint32_t t = add_task(b, id, NULL, (int)s, PLANNER_ACT_ANCHOR, NULL, NULL, parallel);
        for (size_t k = 0; k < l->n; k++) /* distinct tasks: no duplicate check */
            planner__add_dep_new(b->plan, t, l->v[k]);
        *an = t;
    }
    return (uint32_t)*an;
}

long planner__local_task(struct build *b, const struct pnode *n, size_t s, int a)
{
    for (uint32_t t = n->first; t < n->first + n->count; t++)
        if (b->task_svc[t] == (int)s && b->plan->tasks[t].action == (enum planner_action)a)
            return t;
    return -1;
}

/* The runtime task of s that others wait for: start, or initialize without start. */
int planner__runtime_done_action(struct build *b, size_t s)
{
    return has_tasks(b, s, PLANNER_ACT_START) ? PLANNER_ACT_START : PLANNER_ACT_INITIALIZE;
}

static void del_dep(struct planner_task *t, uint32_t dep)
{
    uint32_t m = 0;
    for (uint32_t i = 0; i < t->n_deps; i++)
        if (t->deps[i] != dep)
            t->deps[m++] = t->deps[i];
    t->n_deps = m;
}

static void wire(struct build *b)
{
    const unsigned inst = 1u << PLANNER_ACT_INSTALL, rm = 1u << PLANNER_ACT_REMOVE;
    const unsigned run = (1u << PLANNER_ACT_START) | (1u << PLANNER_ACT_INITIALIZE);
    const unsigned stop = 1u << PLANNER_ACT_STOP;
    struct ulist *e_inst = effective(b, b->dep_install, inst);
    struct ulist *e_rm = effective(b, b->dep_install, rm);
    struct ulist *e_run = effective(b, b->dep_runtime, run);
    struct ulist *e_stop = effective(b, b->dep_runtime, stop);
    reduce(b, e_run);
    reduce(b, e_stop);
    /* Reverse lists: who depends on s. */
    struct ulist *r_rm = xcalloc(b->ns ? b->ns : 1, sizeof(*r_rm));
    struct ulist *r_stop = xcalloc(b->ns ? b->ns : 1, sizeof(*r_stop));
    for (size_t a = 0; a < b->ns; a++) {
        for (size_t k = 0; has_tasks(b, a, PLANNER_ACT_REMOVE) && k < e_rm[a].n; k++)
            ulist_add(&r_rm[e_rm[a].v[k]], (uint32_t)a);
        for (size_t k = 0; has_tasks(b, a, PLANNER_ACT_STOP) && k < e_stop[a].n; k++)
            ulist_add(&r_stop[e_stop[a].v[k]], (uint32_t)a);
    }

    for (size_t i = 0; i < b->nn; i++) {
        struct pnode *n = &b->nodes[i];
        for (uint32_t t = n->first; t < n->first + n->count; t++) {
            int s = b->task_svc[t];
            if (s < 0)
                continue;
            enum planner_action a = b->plan->tasks[t].action;
            if (a == PLANNER_ACT_CONFIGURE && b->reconf && b->reconf[s] && n->s && n->t) {
                /* A dependent's configure renders the new nodes: after they start. */
                for (size_t k = 0; k < b->reconf_on[s].n; k++) {
                    size_t d = b->reconf_on[s].v[k];
                    if (has_tasks(b, d, planner__runtime_done_action(b, d)))
                        planner__add_dep(b->plan, t,
                                         planner__every(b, d, planner__runtime_done_action(b, d)));
                }
            }
            if (a == PLANNER_ACT_INSTALL) {
                int local = 0;
                for (size_t k = 0; k < e_inst[s].n; k++) {
                    size_t d = e_inst[s].v[k];
                    long lt = planner__local_task(b, n, d, PLANNER_ACT_INSTALL);
                    planner__add_dep(b->plan, t,
                                     lt >= 0 ? (uint32_t)lt
                                             : planner__every(b, d, PLANNER_ACT_INSTALL));
                    local |= lt >= 0;
                }
                /* Every service task of the node follows its node-level tasks: a
                 * local dependency implies them. */
                if (local && n->pre_last >= 0)
                    del_dep(&b->plan->tasks[t], (uint32_t)n->pre_last);
            } else if (a == PLANNER_ACT_REMOVE) {
                for (size_t k = 0; k < r_rm[s].n; k++) {
                    size_t d = r_rm[s].v[k];
                    long lt = planner__local_task(b, n, d, PLANNER_ACT_REMOVE);
                    planner__add_dep(b->plan, t,
                                     lt >= 0 ? (uint32_t)lt
                                             : planner__every(b, d, PLANNER_ACT_REMOVE));
                }
            } else if (a == PLANNER_ACT_INITIALIZE ||
                       (a == PLANNER_ACT_START &&
                        planner__local_task(b, n, (size_t)s, PLANNER_ACT_INITIALIZE) < 0)) {
                /* The first runtime task of s on this node. */
                for (size_t k = 0; k < e_run[s].n; k++) {
                    size_t d = e_run[s].v[k];
                    planner__add_dep(b->plan, t,
                                     planner__every(b, d, planner__runtime_done_action(b, d)));
                }
            } else if (a == PLANNER_ACT_STOP) {
                for (size_t k = 0; k < r_stop[s].n; k++)
                    planner__add_dep(b->plan, t,
                                     planner__every(b, r_stop[s].v[k], PLANNER_ACT_STOP));
            }
        }
    }
    free_lists(e_inst, b->ns);
    free_lists(e_rm, b->ns);
    free_lists(e_run, b->ns);
    free_lists(e_stop, b->ns);
    free_lists(r_rm, b->ns);
    free_lists(r_stop, b->ns);
}

/* ---- the whole ---- */

static void plan_nodes(struct build *b, const struct planner_layout *s,
                       const struct planner_layout *t)
{
    size_t ns = s ? s->n_nodes : 0, nt = t ? t->n_nodes : 0;
    b->nodes = xcalloc(ns + nt + 1, sizeof(*b->nodes));
    struct planner__map smap;
    planner__map_init(&smap, ns);
    for (size_t i = 0; i < ns; i++)
        planner__map_put(&smap, s->nodes[i].id, (uint32_t)i);
    unsigned char *used = xcalloc(ns + 1, 1);
    for (size_t i = 0; i < nt; i++) {
        struct pnode *n = &b->nodes[b->nn++];
        n->t = &t->nodes[i];
        long j = planner__map_get(&smap, n->t->id);
        if (j >= 0) {
            n->s = &s->nodes[j];
            used[j] = 1;
        }
        n->id = planner__arena_strdup(b->plan->arena, n->t->id);
    }
    for (size_t i = 0; i < ns; i++) {
        if (used[i])
            continue;
        struct pnode *n = &b->nodes[b->nn++];
        n->s = &s->nodes[i];
        n->id = planner__arena_strdup(b->plan->arena, n->s->id);
    }
    free(used);
    planner__map_free(&smap);
}

int planner_build(const struct planner_request *req, struct planner_plan **out, struct drv_err *err)
{
    *out = NULL;
    if ((unsigned)req->op >= PLANNER_OP_ROLLBACK)
        return drv_err_set(err, DRV_EINVAL, 0, "operation \"%s\" is not planned by planner_build",
                           planner_op_name(req->op));
    struct build bb = {0}, *b = &bb;
    b->req = req;
    b->err = err;
    b->ns = req->n_services;
    b->plan = planner__plan_new(req->op);
    b->empty = json_object();
    int rc = 0;

    planner__map_init(&b->svc_map, b->ns);
    b->svc_name = xcalloc(b->ns ? b->ns : 1, sizeof(*b->svc_name));
    b->present = xcalloc(b->ns ? b->ns : 1, 1);
    for (size_t i = 0; i < b->ns && rc == 0; i++) {
        const char *name = req->services[i].name;
        if (name == NULL || planner__map_put(&b->svc_map, name, (uint32_t)i) >= 0)
            rc = drv_err_set(err, DRV_EINVAL, 0, "duplicate service \"%s\"", name ? name : "");
        else
            b->svc_name[i] = planner__arena_strdup(b->plan->arena, name);
    }
    const struct planner_layout *start = req->start, *target = req->target;
    if (target == NULL)
        target = start;
    if (rc == 0)
        rc = check_layout(b, start, "starting");
    if (rc == 0 && target != start)
        rc = check_layout(b, target, "target");
    if (rc == 0) {
        resolve_all(b);
        rc = select_services(b);
    }
    if (rc == 0) {
        if (planner_op_changes_layout(req->op))
            plan_nodes(b, start, target);
        else if (req->op == PLANNER_OP_DELETE)
            plan_nodes(b, start ? start : target, NULL);
        else
            plan_nodes(b, target, target);
        rc = planner__select_reconf(b);
    }
    if (rc == 0) {
        b->by_sa = xcalloc(b->ns * NA + 1, sizeof(*b->by_sa));
        b->anchor = xmalloc((b->ns * NA + 1) * sizeof(*b->anchor));
        for (size_t i = 0; i < b->ns * NA; i++)
            b->anchor[i] = -1;
        make_tasks(b);
        wire(b);
        planner__roll(b);
        rc = planner__check_ids(b->plan, err);
    }
    if (rc == 0)
        rc = planner_toposort(b->plan, NULL, err);

    if (rc == 0)
        *out = b->plan;
    else
        planner_plan_free(b->plan);
    planner__map_free(&b->svc_map);
    free(b->svc_name);
    free(b->present);
    free(b->sel);
    free(b->restart);
    free(b->reconf);
    free_lists(b->reconf_on, b->reconf ? b->ns : 0);
    free_lists(b->dep_install, b->ns);
    free_lists(b->dep_runtime, b->ns);
    free_lists(b->req_runtime, b->ns);
    free(b->nodes);
    free(b->task_svc);
    free_lists(b->by_sa, b->ns * NA);
    free(b->anchor);
    json_decref(b->empty);
    return rc;
}
