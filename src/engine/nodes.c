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
 *
 * This file owns the cluster as the job sees it (struct enodes, j->nodes: nodes.h): the
 * nodes' key-values, the maps, the macros' indexes, the chunks' dirty marks. The other
 * files reach them through nodes.h: the load fills the key-values from the rows, a result
 * merges into them (engine__nodes_merge), the dispatch expands the macros and reads a
 * node's key-values, the commit writes the dirty chunks, the sweep deletes them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"
#include "facts.h"
#include "macro.h"
#include "nodes.h"
#include "planner.h"
#include "planner_model.h"
#include "strmap.h"
#include "xalloc.h"

#define PER_CHUNK 16

struct enodes {
    json_t *props;                  /* node id -> key-values of that node (results merged) */
    json_t *mnodes;                 /* the nodes map of plugins and macros */
    struct macro_cluster *mcluster; /* mnodes sorted and indexed once, for the macros */
    /* The cluster as it was (start layout), when the job changes the layout: the macros of
       tasks that act on what leaves (a node, a service) see it, the rest see mnodes. */
    json_t *mnodes_old;
    struct macro_cluster *mcluster_old;
    struct strmap *node_index; /* node id -> 1 + its index in the target layout */
    uint32_t *node_confirm;    /* per target node: 1 + its confirm task's index, or 0 */
    size_t n_nchunks;          /* jobs/<id>/nodes/n<k> */
    uint8_t *nchunk_dirty;
    bool config_macros; /* the cluster's config has macros */
    char cluster_owner[128];
};

void engine__nodes_new(struct ejob *j)
{
    j->nodes = xcalloc(1, sizeof(*j->nodes));
    j->nodes->props = json_object();
}

void engine__nodes_free(struct ejob *j)
{
    struct enodes *n = j->nodes;
    if (!n)
        return;
    json_decref(n->props);
    json_decref(n->mnodes);
    macro_cluster_free(n->mcluster);
    json_decref(n->mnodes_old);
    macro_cluster_free(n->mcluster_old);
    strmap_free(n->node_index);
    free(n->node_confirm);
    free(n->nchunk_dirty);
    free(n);
    j->nodes = NULL;
}

json_t *engine__cluster_config(const struct ejob *j)
{
    json_t *asked = json_object_get(json_object_get(j->job, "request"), "config");
    if (strcmp(j->op, "configure") == 0 && json_is_object(asked))
        return asked;
    json_t *c = json_object_get(j->cluster, "config");
    return json_is_object(c) ? c : NULL;
}

void engine__nodes_load(struct ejob *j, const json_t *rows)
{
    size_t i;
    json_t *n;
    json_array_foreach(rows, i, n)
    {
        /* A deleted node's key-values are of a machine that is gone (a failed create made
           again reuses its id). */
        if (strcmp(engine__row_str(n, "status"), "deleted") == 0)
            continue;
        json_t *p = json_object_get(n, "properties");
        json_object_set_new(j->nodes->props, engine__row_str(n, "id"),
                            json_is_object(p) ? json_deep_copy(p) : json_object());
    }
}

json_t *engine__nodes_props(const struct ejob *j, const char *node)
{
    return node ? json_object_get(j->nodes->props, node) : NULL;
}

json_t *engine__nodes_merge(struct ejob *j, const char *node, json_t *result, bool from_provider,
                            size_t *refused, char first[64])
{
    *refused = 0;
    first[0] = '\0';
    if (!node || !json_is_object(result) || json_object_size(result) == 0)
        return NULL;
    json_t *props = json_object_get(j->nodes->props, node);
    if (!props) {
        props = json_object();
        json_object_set_new(j->nodes->props, node, props);
    }
    /* The facts are the provider's: only its own tasks' results write them (facts.h). */
    *refused = facts_merge_result(props, result, from_provider, first, 64);
    engine__nodes_touch(j, node);
    return props;
}

/*
 * Whether node i of the target layout is confirmed: its forward plan's confirm
 * succeeded, or the plan has none (the node was there before the job). Then
 * missing data is final for the macros (macro.h), not a wait.
 */
static bool confirmed(const struct ejob *j, size_t i)
{
    const struct enodes *nd = j->nodes;
    uint32_t k = nd->node_confirm ? nd->node_confirm[i] : 0;
    if (!k)
        return true;
    return j->fwd.recs && k - 1 < j->fwd.n && j->fwd.recs[k - 1].state == ENGINE_TS_SUCCEEDED;
}

/* Node n's entry in the nodes map: its key-values so far and its services in that layout. */
static json_t *entry_of(struct ejob *j, const struct planner_node *n, bool before_job)
{
    struct enodes *nd = j->nodes;
    json_t *e = json_object();
    json_t *props = json_object_get(nd->props, n->id);
    json_t *h = json_object_get(props, "hostname"), *ip = json_object_get(props, "ipaddresses");
    if (json_is_string(h))
        json_object_set(e, "hostname", h);
    if (json_is_object(ip))
        json_object_set(e, "ipaddresses", ip);
    json_t *svcs = json_array();
    for (size_t i = 0; i < n->n_services; i++)
        json_array_append_new(svcs, json_string(n->services[i]));
    json_object_set_new(e, "services", svcs);
    uintptr_t k = (uintptr_t)strmap_get(nd->node_index, n->id);
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
    uintptr_t k = (uintptr_t)strmap_get(j->nodes->node_index, t->node);
    if (!k)
        return true;
    return t->service && !has_service(&j->po.in->target.nodes[k - 1], t->service);
}

/* The cluster as it was, when the job changes its nodes or their services. */
static void old_init(struct ejob *j)
{
    struct enodes *nd = j->nodes;
    json_decref(nd->mnodes_old);
    macro_cluster_free(nd->mcluster_old);
    nd->mnodes_old = NULL;
    nd->mcluster_old = NULL;
    const struct planner_layout *s = &j->po.in->start, *t = &j->po.in->target;
    if (s->nodes == t->nodes || s->n_nodes == 0)
        return; /* the same layout, or nothing was there */
    nd->mnodes_old = json_object();
    for (size_t i = 0; i < s->n_nodes; i++)
        json_object_set_new(nd->mnodes_old, s->nodes[i].id, entry_of(j, &s->nodes[i], true));
    nd->mcluster_old = macro_cluster_new(nd->mnodes_old);
}

void engine__nodes_init(struct ejob *j)
{
    struct enodes *nd = j->nodes;
    snprintf(nd->cluster_owner, sizeof(nd->cluster_owner), "%s",
             engine__row_str(j->cluster, "owner"));
    json_decref(nd->mnodes);
    nd->mnodes = json_object();
    strmap_free(nd->node_index);
    nd->node_index = strmap_new();
    const struct planner_layout *t = &j->po.in->target;
    for (size_t i = 0; i < t->n_nodes; i++)
        strmap_put(nd->node_index, t->nodes[i].id, (void *)(uintptr_t)(i + 1));
    /* Each node's confirm in the forward plan, if it has one. */
    free(nd->node_confirm);
    nd->node_confirm = xcalloc(t->n_nodes + 1, sizeof(*nd->node_confirm));
    const struct planner_plan *plan = j->po.plan;
    for (size_t i = 0; plan && i < plan->n_tasks; i++) {
        const struct planner_task *task = &plan->tasks[i];
        uintptr_t k = task->action == PLANNER_ACT_CONFIRM && task->node
                          ? (uintptr_t)strmap_get(nd->node_index, task->node)
                          : 0;
        if (k)
            nd->node_confirm[k - 1] = (uint32_t)i + 1;
    }
    for (size_t i = 0; i < t->n_nodes; i++)
        json_object_set_new(nd->mnodes, t->nodes[i].id, entry_of(j, &t->nodes[i], false));
    nd->n_nchunks = (t->n_nodes + PER_CHUNK - 1) / PER_CHUNK;
    /* Sorted and indexed once for the macros: entries change in place from here on. */
    macro_cluster_free(nd->mcluster);
    nd->mcluster = macro_cluster_new(nd->mnodes);
    old_init(j);
    free(nd->nchunk_dirty);
    nd->nchunk_dirty = xcalloc(nd->n_nchunks + 1, 1);
    /* Whether the config has macros at all: most have none, and then nothing is expanded. */
    json_t *config = engine__cluster_config(j);
    char *text = config ? json_dumps(config, JSON_COMPACT) : NULL;
    nd->config_macros = text && strchr(text, '%');
    free(text);
}

void engine__nodes_touch(struct ejob *j, const char *node)
{
    struct enodes *nd = j->nodes;
    uintptr_t k = (uintptr_t)strmap_get(nd->node_index, node);
    if (!k || !nd->mnodes)
        return;
    json_t *now = entry_of(j, &j->po.in->target.nodes[k - 1], false),
           *was = json_object_get(nd->mnodes, node);
    if (!json_equal(now, was)) {
        /* In place: the macros' sorted cluster holds this very object. */
        json_object_clear(was);
        json_object_update(was, now);
        nd->nchunk_dirty[(k - 1) / PER_CHUNK] = 1;
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

size_t engine__nodes_chunks(const struct ejob *j)
{
    return j->nodes->n_nchunks;
}

bool engine__nodes_dirty(const struct ejob *j, size_t k)
{
    return j->nodes->nchunk_dirty && j->nodes->nchunk_dirty[k];
}

void engine__nodes_clean(struct ejob *j, size_t k)
{
    j->nodes->nchunk_dirty[k] = 0;
}

void engine__nodes_dirty_all(struct ejob *j)
{
    for (size_t k = 0; k < j->nodes->n_nchunks; k++)
        j->nodes->nchunk_dirty[k] = 1;
}

char *engine__nodes_chunk(struct ejob *j, size_t k)
{
    const struct planner_layout *t = &j->po.in->target;
    json_t *c = json_object();
    for (size_t i = k * PER_CHUNK; i < t->n_nodes && i < (k + 1) * PER_CHUNK; i++)
        json_object_set(c, t->nodes[i].id, json_object_get(j->nodes->mnodes, t->nodes[i].id));
    char *s = json_dumps(c, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(c);
    return s;
}

int engine__macros_check(struct ejob *j, struct drv_err *err)
{
    struct enodes *nd = j->nodes;
    struct macro_ctx ctx = {
        .nodes = nd->mnodes, .cluster = nd->mcluster, .owner = nd->cluster_owner};
    json_t *config = engine__cluster_config(j);
    if (config && nd->config_macros &&
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
    struct enodes *nd = j->nodes;
    *fields = *config = NULL;
    if (!t->service)
        return 0; /* node-level tasks get the config as it is */
    bool old = nd->mcluster_old && acts_on_leaving(j, t);
    struct macro_ctx ctx = {.nodes = old ? nd->mnodes_old : nd->mnodes,
                            .cluster = old ? nd->mcluster_old : nd->mcluster,
                            .self = t->node,
                            .owner = nd->cluster_owner};
    if (t->fields) {
        int rc = macro_expand(t->fields, &ctx, 0, "fields", fields, err);
        if (rc)
            return rc;
    }
    json_t *c = engine__cluster_config(j);
    if (c && nd->config_macros) {
        int rc = macro_expand(c, &ctx, 0, "config", config, err);
        if (rc) {
            json_decref(*fields);
            *fields = NULL;
            return rc;
        }
    }
    return 0;
}
