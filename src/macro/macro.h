/*
 * macro: the Coopr catalogue's configuration macros (library drover_macro).
 *
 * A service's config and its actions' fields may name things that exist only
 * once the cluster does, as %...% macros in string values:
 *
 *   %host.service.S%            hostnames of the nodes with service S, joined by ","
 *   %host.service.S[i]%         the i-th of them (from 0)
 *   %ip.service.S%              their addresses of the default type (below)
 *   %ip.T.service.S%, [i]       their ipaddresses.T ("access_v4", "bind_v4", ...)
 *   %num.service.S%             how many nodes have S
 *   %instance.self.service.S%   this node's rank among the nodes with S (from 1)
 *   %host.self%                 this node's hostname
 *   %ip.self%, %ip.T.self%      this node's address
 *   %host.self.service.S%       this node's hostname, if it has S
 *   %ip.self.service.S%, %ip.T.self.service.S%   this node's address, if it has S
 *   %cluster.owner%             the cluster's owner
 *   %join(L,'sep')%             the list L (a basic list macro or a map) joined by sep
 *   %map(B,'fmt')%              each element of the list B put into fmt, where "$" is
 *                               the element and "$$" a literal "$" (joined by ",")
 *
 * For example "%join(map(ip.access_v4.service.zookeeper-server,'$:2181'),',')%".
 * Quoted strings take '...' or "..." with backslash escapes; spaces may surround
 * the parentheses and commas. "%%" is a literal "%"; a "%" with no closing
 * "%" is copied as is. Anything else between two "%" is a macro, and one that
 * does not parse, or names an unknown macro, is an error.
 *
 * Order: the nodes with a service are taken in the natural order of their ids
 * (node-2 before node-10), so lists, [i] and instance numbers agree on every
 * node, and the same cluster gives the same expansion (invariant 4, docs/architecture.md).
 * The default address type is "bind_v4", falling back to "access_v4" for a
 * node without it.
 *
 * Unresolved macros: a macro about a service no node has, a self macro on a
 * node without the service, or an index past the list are left as written
 * (Coopr's behaviour: catalogues name optional services), unless MACRO_STRICT
 * makes them errors. Missing node data (a node with the service but no
 * hostname or address yet) is DRV_EAGAIN: expand again once the node is
 * confirmed; on a node whose entry says "confirmed": true it is DRV_EINVAL
 * (its provider returned none, and waiting would not help).
 *
 * Pure: no I/O, no globals, thread-safe. Errors: 0 or a negative DRV_E* code;
 * err->msg names the JSON path of the value and the macro:
 *   config.zookeeper.servers: macro "%hosts.service.zk%": unknown macro
 */
#ifndef DROVER_MACRO_H
#define DROVER_MACRO_H

#include <jansson.h>

#include "error.h"

/* A macro that cannot be resolved is an error (DRV_ENOENT), not left as written. */
#define MACRO_STRICT 1u
/*
 * Plan time: check the syntax, the macro names and (with MACRO_STRICT) that
 * the services exist on the cluster, without needing hostnames or addresses;
 * nothing is expanded (*out, when asked for, is a copy of the input).
 */
#define MACRO_CHECK 2u

/* The largest expansion of one string (bigger is DRV_EINVAL). */
#define MACRO_MAX_OUTPUT (1u << 20)

struct macro_cluster;

struct macro_ctx {
    /*
     * The cluster's nodes, as in the task JSON's "nodes": {"node-1":
     * {"hostname": "...", "ipaddresses": {"access_v4": "..."}, "services":
     * ["..."]}, ...}. Borrowed; NULL is an empty cluster.
     */
    const json_t *nodes;
    /*
     * Optional: the same nodes sorted and indexed once (macro_cluster_new), for a
     * caller that expands many values: then nodes is not read, and each expansion
     * costs what its macros name, not O(nodes log nodes).
     */
    const struct macro_cluster *cluster;
    const char *self;  /* the id of the node the expansion is for; NULL: no self macros */
    const char *owner; /* for %cluster.owner%; NULL: that macro is unresolved */
};

/*
 * Expand every macro in the string values of in (objects and arrays are walked;
 * keys are not expanded). On success *out (when out is not NULL) is a new
 * value owned by the caller (json_decref); on failure *out is NULL. in is not
 * changed. path names in for messages ("config", "fields"; inner values get
 * "config.a.b[2]"); NULL means "value".
 */
int macro_expand(const json_t *in, const struct macro_ctx *ctx, unsigned flags, const char *path,
                 json_t **out, struct drv_err *err);

/*
 * Sort and index nodes once. The entries are borrowed: they may change in
 * place (a hostname learnt), but the map's set of nodes and their services
 * must not change while the cluster is in use. Free with macro_cluster_free.
 */
struct macro_cluster *macro_cluster_new(const json_t *nodes);
void macro_cluster_free(struct macro_cluster *mc);

/* The same for one string; *out (when not NULL) is a new string owned by the caller. */
int macro_expand_string(const char *in, const struct macro_ctx *ctx, unsigned flags, char **out,
                        struct drv_err *err);

#endif
