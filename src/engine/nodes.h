/*
 * nodes: the cluster as a job sees it (nodes.c has the note): its nodes' key-values, the
 * nodes map that plugins and macros read, and the macros. The fields (struct enodes,
 * j->nodes) are nodes.c's alone. Loop thread.
 */
#ifndef DROVER_ENGINE_NODES_H
#define DROVER_ENGINE_NODES_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

struct ejob;
struct drv_err;
struct planner_task;

/* Make (at the job's creation) / free (with the job). */
void engine__nodes_new(struct ejob *j);
void engine__nodes_free(struct ejob *j);

/* The cluster's config for this job (a configure's new one), borrowed, or NULL. */
json_t *engine__cluster_config(const struct ejob *j);

/* The nodes' key-values as recorded: the cluster row's "nodes" (a deleted node's are of a
 * machine that is gone: left out). At the load. */
void engine__nodes_load(struct ejob *j, const json_t *rows);
/* Node's key-values (borrowed), or NULL. */
json_t *engine__nodes_props(const struct ejob *j, const char *node);
/* A result's key-values merged into node's (null deletes a key), its map entry touched:
 * the node's key-values (borrowed) for PostgreSQL, or NULL when there was nothing. Only a
 * result of the node's provider's own task (from_provider: create, confirm, delete) writes
 * the machine's facts; a reserved key from any other writer is refused (src/common/facts.h),
 * counted in *refused, the first one's name in first (64 bytes). */
json_t *engine__nodes_merge(struct ejob *j, const char *node, json_t *result, bool from_provider,
                            size_t *refused, char first[64]);

/* The maps from the plan (its target layout and confirms) and the key-values; the
 * cluster's owner for the macros. After the plan is built. */
void engine__nodes_init(struct ejob *j);
/* The node's key-values changed: its entry in the map, its chunk, the map's revision. */
void engine__nodes_touch(struct ejob *j, const char *node);
/* Every entry again (after a resume read the task log: which nodes are confirmed). */
void engine__nodes_refresh(struct ejob *j);

/* The map's chunks in ZooKeeper (jobs/<id>/nodes/n<k>, 16 nodes each): how many; chunk k's
 * JSON (new string); whether it changed since it was last written; written (clean); all to
 * write again (a multi-op that carried some did not apply). */
size_t engine__nodes_chunks(const struct ejob *j);
char *engine__nodes_chunk(struct ejob *j, size_t k);
bool engine__nodes_dirty(const struct ejob *j, size_t k);
void engine__nodes_clean(struct ejob *j, size_t k);
void engine__nodes_dirty_all(struct ejob *j);

/* Plan time: every macro of the config and the actions' fields parses and is known. */
int engine__macros_check(struct ejob *j, struct drv_err *err);
/* Dispatch: task t's fields and the cluster's config expanded for its node (new references,
 * NULL when there is nothing to expand). DRV_EAGAIN: a node they name is not confirmed yet. */
int engine__macros_expand(struct ejob *j, const struct planner_task *t, json_t **fields,
                          json_t **config, struct drv_err *err);

#endif
