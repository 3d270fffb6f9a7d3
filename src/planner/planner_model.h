/*
 * planner_model: the planner's input made from the entity model (src/model).
 *
 * The planner proper takes plain borrowed structs (planner.h) so that it can
 * be tested and fuzzed without a catalogue; this adapter fills them from a
 * catalogue and model layouts.
 *
 * Node ids. A model layout groups nodes by node layout with a count and may
 * name a node ("id", count 1). Every node gets an id:
 *   - a node with an id keeps it;
 *   - the starting layout's other nodes are numbered in layout order:
 *     "node-1", "node-2", ... (skipping ids already taken);
 *   - a target node without an id takes the id of a starting node not yet
 *     taken, first one with the same services, hardware and image type, then
 *     one with the same hardware and image type (services added or removed);
 *     a target node left over is new and gets the next free "node-<n>".
 * So a layout from the solver that only grows keeps every existing node, and a
 * plan for expand creates only the new ones.
 */
#ifndef DROVER_PLANNER_MODEL_H
#define DROVER_PLANNER_MODEL_H

#include "model.h"
#include "planner.h"

struct planner_input {
    struct planner_service *services; /* every service of either layout, by name */
    size_t n_services;
    struct planner_layout start, target;
    const char *provider, *providertype; /* from the template's defaults, may be NULL */
    struct planner_input__store *store;  /* what the pointers above point into */
};

/*
 * Build the input. start may be NULL (create); target may be NULL (the same as
 * start). tmpl (may be NULL) gives the default provider, looked up in c for its
 * type. Errors: DRV_ENOENT for a service not in the catalogue.
 * The input copies what it needs of start and target (they may be freed at
 * once) and borrows c, which must outlive it.
 */
int planner_input_from_model(const struct model_catalog *c, const struct model_template *tmpl,
                             const struct model_layout *start, const struct model_layout *target,
                             struct planner_input **out, struct drv_err *err);
void planner_input_free(struct planner_input *in);

/* A request for op over the input (subset borrowed from the caller). */
struct planner_request planner_input_request(const struct planner_input *in, enum planner_op op,
                                             const char *const *subset, size_t n_subset);

/* The target layout as a model layout with one entry per node and its id, for
 * storing with the cluster so that the next operation keeps the ids. New. */
struct model_layout *planner_input_target_layout(const struct planner_input *in);

/*
 * Dependents of a layout change (planner.h struct planner_reconf), from the
 * catalogue and the cluster's config: each service named in `services` (a JSON
 * array of names) whose definition says
 *     "reconfigure": {"config": ["haproxy"], "restart": true}
 * depends on the services of `services` that the macros in those top-level
 * sections of `config` name ("service.<name>" in a string, as in
 * %join(map(ip.access_v4.service.nginx,'$'),' ')%). Returns a new JSON array
 * [{"service", "on": [...], "restart"}], sorted by service, for a job's request
 * (the engine plans from it, so the plan does not depend on the catalogue of
 * the moment); empty when none.
 */
json_t *planner_model_reconf(const struct model_catalog *c, const json_t *services,
                             const json_t *config);
/* That array as entries borrowing its strings into *out (free with planner_reconf_free;
 * the strings stay arr's); entries of the wrong shape are skipped. Returns the count. */
size_t planner_reconf_from_json(const json_t *arr, struct planner_reconf **out);
void planner_reconf_free(struct planner_reconf *r, size_t n);

#endif
