/*
 * solver: which services go on which node, with which hardware and image
 * type, for a cluster template and a number of nodes.
 *
 * A pure library: no I/O, no global state, no clock. The same request gives
 * the same layout, byte for byte (invariant 4, docs/architecture.md). The algorithm and
 * its exactness argument are in docs/solver.md; in short:
 *
 *   1. validate the services (compatibility, requires, conflicts), the
 *      provider, the hardware and image types;
 *   2. services that appear in no constraint ("free") go on every node;
 *      must-coexist groups (shrunk to the cluster's services, overlapping
 *      groups joined) are units; service sets are sets of units holding no
 *      whole can't-coexist group;
 *   3. each service set gets its preferred (hardware, image) pair, checked
 *      against the services' constraints and the provider's maps; sets that
 *      another set dominates (a superset by services without a maximum) are
 *      skipped, since the preferred layout never uses them;
 *   4. node counts: a depth-first search over the node layouts in preference
 *      order that gives each one as many nodes as the constraints allow, with
 *      each count's interval computed from the quantity bounds.
 *
 * Changes to an existing cluster (expand, shrink, add or remove services) keep
 * the existing nodes' hardware and image, and their services except the ones
 * removed; see struct solver_request.
 *
 * Thread safety: solver_solve() only reads the request; concurrent calls on
 * distinct requests (sharing a catalogue that nobody changes) are safe.
 */
#ifndef DROVER_SOLVER_H
#define DROVER_SOLVER_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "model.h"

/* The largest number of services one cluster may hold. */
#define SOLVER_MAX_SERVICES 256

/*
 * A node layout being ranked: the comparator's view. Borrowed, valid only
 * during the call.
 */
struct solver_candidate {
    size_t n_services;
    const char *hardwaretype;
    const char *imagetype;
    double hw_cost;     /* the provider's cost for this hardware type */
    bool hw_has_cost;   /* false: no cost in the providermap */
    bool hw_preferred;  /* the requested or template default hardware type */
    bool img_preferred; /* the requested or template default image type */
    const void *priv;   /* the solver's; use solver_candidate_service() */
};

/* The i-th service (name order) of a candidate, i < n_services. */
const char *solver_candidate_service(const struct solver_candidate *c, size_t i);

/*
 * A preference between node layouts: negative when a is preferred, positive
 * when b is, 0 only when they are the same layout. Must be a total order.
 */
typedef int (*solver_cmp_fn)(const struct solver_candidate *a, const struct solver_candidate *b,
                             void *arg);

/*
 * The default: more services per node, then the preferred hardware type,
 * then cheaper hardware (a known cost before an unknown one), then the
 * preferred image type, then the hardware type, image type and service names.
 */
int solver_default_cmp(const struct solver_candidate *a, const struct solver_candidate *b,
                       void *arg);

struct solver_request {
    const struct model_catalog *catalog; /* services, hardware and image types, providers */
    const struct model_template *tmpl;   /* resolved (see model_template_resolve()) */
    unsigned nodes;                      /* the cluster's size after the operation */
    /*
     * The cluster's services after the operation (any order). NULL: the
     * existing cluster's services, or else the template's defaults. With an
     * existing layout, services not on it are added to the existing nodes
     * where constraints allow and on new nodes; services on it but not here
     * are removed from its nodes.
     */
    const char *const *services;
    size_t n_services;
    const char *provider;     /* NULL: the template's default */
    const char *hardwaretype; /* NULL: any compatible one, the template's default preferred */
    const char *imagetype;    /* NULL: any compatible one, the template's default preferred */
    /*
     * The cluster as it is, or NULL for a new cluster. nodes above its size
     * expands it, below shrinks it (shrink with no service change only).
     */
    const struct model_layout *existing;
    /*
     * Node layouts that failed (their services, hardware and image type; the
     * count is ignored): never used again, the next preferred one is taken.
     */
    const struct model_layout *excluded;
    /* NULL: solver_default_cmp. */
    solver_cmp_fn cmp;
    void *cmp_arg;
    /*
     * Set when cmp ranks a node layout before any layout whose services are a
     * strict subset of its own (the default does): enables the dominance
     * pruning of step 3. Ignored (treated as true) when cmp is NULL.
     */
    bool cmp_prefers_supersets;
    /* Give up after this many search steps (0: 50 million). */
    unsigned long max_steps;
};

/*
 * Solve. On success *out is a new layout owned by the caller
 * (model_layout_free): for a new cluster, one entry per node layout with its
 * count, in preference order; with an existing layout, its entries first in
 * their order (an entry whose nodes gain different services is split), then
 * the new nodes. Errors: DRV_EINVAL (bad request: unknown service, provider,
 * type; incompatible service; missing requirement; conflict; size out of the
 * template's range), DRV_EUNSAT (no layout meets the constraints; err says
 * which constraint), both with err->msg set.
 */
int solver_solve(const struct solver_request *req, struct model_layout **out, struct drv_err *err);

/*
 * Check a layout against a request's template and services (the checks the
 * solver guarantees): every node's set valid, hardware and image allowed,
 * quantities and size met. 0 or DRV_EUNSAT with the first violation.
 */
int solver_check(const struct solver_request *req, const struct model_layout *layout,
                 struct drv_err *err);

/*
 * `drover solve`: argv[0] is "solve". Reads the catalogue and files (the only
 * I/O of this module, in solve_cli.c), prints the layout to stdout. Returns
 * 0, 1 (no layout or an error, the reason on stderr) or 2 (usage).
 */
int solver_cli_main(int argc, char **argv);

#endif
