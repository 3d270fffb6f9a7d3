/*
 * nodes: the cluster's nodes as plugins and macros see them, and macros.
 *
 * The nodes map is {"node-1": {"hostname": ..., "ipaddresses": {...},
 * "services": [...]}, ...} over the nodes of the job's target layout. It is
 * built from the plan (services) and the nodes' key-values (hostname and
 * addresses, returned by the providers' confirm), and updated entry by entry
 * as results come in: O(1) per result, not O(nodes).
 *
 * Two uses:
 *   - macros (%host.service.S%, ...: macro.h) in the cluster's config and in
 *     the actions' fields are expanded with it when a service task is
 *     dispatched, for the task's node; a macro naming a node not confirmed
 *     yet holds the task back until it is (DRV_EAGAIN); an entry has
 *     "confirmed": true once its confirm succeeded (or when the node was
 *     there before the job), and then missing data fails the task instead;
 *   - plugins that want it (a descriptor's "wants": ["nodes"]) get it whole:
 *     it is kept in ZooKeeper as jobs/<id>/nodes/n<k>, 16 nodes a znode
 *     (invariant 7), written in the owner's multi-ops when an entry changes;
 *     a queue item carries the map's revision, and a worker reads the chunks
 *     again only when its copy is older.
 *
 * A job that changes the layout (expand, shrink, add or remove services) has
 * a second map, the cluster as it was (start layout, every node confirmed):
 * the macros of a task acting on what leaves (a node the target lacks, or a
 * service its node loses: a shrink's stop and delete, a removeservices' stop
 * and remove) are expanded with it, so that a leaving ZooKeeper server still
 * finds its own myid; every other task sees the target.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"
#include "macro.h"
#include "planner.h"
#include "planner_model.h"
#include "strmap.h"
#include "xalloc.h"

#define PER_CHUNK 16

/*
 * Whether node i of the target layout is confirmed: its forward plan's confirm
 * succeeded, or the plan has none (the node was there before the job). Then
 * missing data is final for the macros (macro.h), not a wait.
 */
static bool confirmed(const struct ejob *j, size_t i)
{
    uint32_t k = j->node_confirm ? j->node_confirm[i] : 0;
    if (!k)
        return true;
    return j->fwd.recs && k - 1 < j->fwd.n && j->fwd.recs[k - 1].state == ENGINE_TS_SUCCEEDED;
}

/* Node n's entry in the nodes map: its key-values so far and its services in that layout. */
static json_t *entry_of(struct ejob *j, const struct planner_node *n, bool before_job)
{
    json_t *e = json_object();
    json_t *props = json_object_get(j->props, n->id);
    json_t *h = json_object_get(props, "hostname"), *ip = json_object_get(props, "ipaddresses");
    if (json_is_string(h))
        json_object_set(e, "hostname", h);
    if (json_is_object(ip))
        json_object_set(e, "ipaddresses", ip);
    json_t *svcs = json_array();
    for (size_t i = 0; i < n->n_services; i++)
        json_array_append_new(svcs, json_string(n->services[i]));
    json_object_set_new(e, "services", svcs);
    uintptr_t k = (uintptr_t)strmap_get(j->node_index, n->id);
    if (before_job || (k && confirmed(j, k - 1)))
        json_object_set_new(e, "confirmed", json_true());
    return e;
}

static bool has_service(const struct planner_node *n, const char *svc)
{
    for (size_t i = 0; i < n->n_services; i++)
        if (strcmp(n->services[i], svc) == 0)
            return true;
    return false;
}

/* Whether a task acts on what leaves the cluster: a node or a service the target lacks. */
static bool acts_on_leaving(const struct ejob *j, const struct planner_task *t)
{
    uintptr_t k = (uintptr_t)strmap_get(j->node_index, t->node);
    if (!k)
        return true;
    return t->service && !has_service(&j->po.in->target.nodes[k - 1], t->service);
}

/* The cluster as it was, when the job changes its nodes or their services. */
static void old_init(struct ejob *j)
{
    json_decref(j->mnodes_old);
    macro_cluster_free(j->mcluster_old);
    j->mnodes_old = NULL;
    j->mcluster_old = NULL;
    const struct planner_layout *s = &j->po.in->start, *t = &j->po.in->target;
    if (s->nodes == t->nodes || s->n_nodes == 0)
        return; /* the same layout, or nothing was there */
    j->mnodes_old = json_object();
    for (size_t i = 0; i < s->n_nodes; i++)
        json_object_set_new(j->mnodes_old, s->nodes[i].id, entry_of(j, &s->nodes[i], true));
    j->mcluster_old = macro_cluster_new(j->mnodes_old);
}

void engine__nodes_init(struct ejob *j)
{
    json_decref(j->mnodes);
    j->mnodes = json_object();
    strmap_free(j->node_index);
    j->node_index = strmap_new();
    const struct planner_layout *t = &j->po.in->target;
    for (size_t i = 0; i < t->n_nodes; i++)
        strmap_put(j->node_index, t->nodes[i].id, (void *)(uintptr_t)(i + 1));
    /* Each node's confirm in the forward plan, if it has one. */
    free(j->node_confirm);
    j->node_confirm = xcalloc(t->n_nodes + 1, sizeof(*j->node_confirm));
    const struct planner_plan *plan = j->po.plan;
    for (size_t i = 0; plan && i < plan->n_tasks; i++) {
        const struct planner_task *task = &plan->tasks[i];
        uintptr_t k = task->action == PLANNER_ACT_CONFIRM && task->node
                          ? (uintptr_t)strmap_get(j->node_index, task->node)
                          : 0;
        if (k)
            j->node_confirm[k - 1] = (uint32_t)i + 1;
    }
    for (size_t i = 0; i < t->n_nodes; i++)
        json_object_set_new(j->mnodes, t->nodes[i].id, entry_of(j, &t->nodes[i], false));
    j->n_nchunks = (t->n_nodes + PER_CHUNK - 1) / PER_CHUNK;
    /* Sorted and indexed once for the macros: entries change in place from here on. */
    macro_cluster_free(j->mcluster);
    j->mcluster = macro_cluster_new(j->mnodes);
    old_init(j);
    free(j->nchunk_dirty);
    j->nchunk_dirty = xcalloc(j->n_nchunks + 1, 1);
    /* Whether the config has macros at all: most have none, and then nothing is expanded. */
    json_t *config = engine__job_config(j);
    char *text = config ? json_dumps(config, JSON_COMPACT) : NULL;
    j->config_macros = text && strchr(text, '%');
    free(text);
}

void engine__nodes_touch(struct ejob *j, const char *node)
{
    uintptr_t k = (uintptr_t)strmap_get(j->node_index, node);
    if (!k || !j->mnodes)
        return;
    json_t *now = entry_of(j, &j->po.in->target.nodes[k - 1], false),
           *was = json_object_get(j->mnodes, node);
    if (!json_equal(now, was)) {
        /* In place: the macros' sorted cluster holds this very object. */
        json_object_clear(was);
        json_object_update(was, now);
        j->nchunk_dirty[(k - 1) / PER_CHUNK] = 1;
        j->st.nodes_rev++;
        j->state_dirty = true;
    }
    json_decref(now);
}

void engine__nodes_refresh(struct ejob *j)
{
    const struct planner_layout *t = &j->po.in->target;
    for (size_t i = 0; i < t->n_nodes; i++)
        engine__nodes_touch(j, t->nodes[i].id);
}

char *engine__nodes_chunk(struct ejob *j, size_t k)
{
    const struct planner_layout *t = &j->po.in->target;
    json_t *c = json_object();
    for (size_t i = k * PER_CHUNK; i < t->n_nodes && i < (k + 1) * PER_CHUNK; i++)
        json_object_set(c, t->nodes[i].id, json_object_get(j->mnodes, t->nodes[i].id));
    char *s = json_dumps(c, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(c);
    return s;
}

int engine__macros_check(struct ejob *j, struct drv_err *err)
{
    struct macro_ctx ctx = {.nodes = j->mnodes, .cluster = j->mcluster, .owner = j->cluster_owner};
    json_t *config = engine__job_config(j);
    if (config && j->config_macros &&
        macro_expand(config, &ctx, MACRO_CHECK, "config", NULL, err) != 0)
        return err->code;
    const struct planner_plan *p = j->po.plan;
    for (size_t i = 0; i < p->n_tasks; i++) {
        const struct planner_task *t = &p->tasks[i];
        if (!t->service || !t->fields)
            continue;
        char path[256];
        snprintf(path, sizeof(path), "%s.fields", t->id);
        if (macro_expand(t->fields, &ctx, MACRO_CHECK, path, NULL, err) != 0)
            return err->code;
    }
    return 0;
}

int engine__macros_expand(struct ejob *j, const struct planner_task *t, json_t **fields,
                          json_t **config, struct drv_err *err)
{
    *fields = *config = NULL;
    if (!t->service)
        return 0; /* node-level tasks get the config as it is */
    bool old = j->mcluster_old && acts_on_leaving(j, t);
    struct macro_ctx ctx = {.nodes = old ? j->mnodes_old : j->mnodes,
                            .cluster = old ? j->mcluster_old : j->mcluster,
                            .self = t->node,
                            .owner = j->cluster_owner};
    if (t->fields) {
        int rc = macro_expand(t->fields, &ctx, 0, "fields", fields, err);
        if (rc)
            return rc;
    }
    json_t *c = engine__job_config(j);
    if (c && j->config_macros) {
        int rc = macro_expand(c, &ctx, 0, "config", config, err);
        if (rc) {
            json_decref(*fields);
            *fields = NULL;
            return rc;
        }
    }
    return 0;
}
