/*
 * poolzk: host claims of the ssh-pool provider in ZooKeeper (plugin-internal).
 *
 *   /drover/pools/<pool>/claims/<address>:<port>   P   {"provider-id": ..., "tenant": ...,
 *                                                       "cluster": ..., "node": ...,
 *                                                       "state": "claimed" | "wiping"}
 *
 * A claim is a persistent znode created with a plain create: ZooKeeper lets
 * exactly one of several concurrent creators succeed, so a host is never given
 * to two nodes, whichever workers ask at once. It is persistent because the
 * host stays the node's long after this plugin has exited; delete removes it
 * after wiping the host. <pool> is "<tenant>/<name>" or "_operator/<name>". In an
 * operator's shared pool no tenant may delete a claim (ZooKeeper checks a delete against
 * the parent, so the right would reach every tenant's claims): release sets the claim's
 * "state" to "released" and creates released/<host>-<sequence> in one multi-op, and
 * droverd deletes the claim (src/coord/pool_free.c); there a claim gives its creator read,
 * write and admin (admin: so that its ACL shows the creator's own id, poolzk_find), a
 * marker read only. With
 * digest credentials every znode the plugin creates carries what coord gives a
 * tenant's pools (docs/zookeeper-tree.md "ACLs"): all for droverd (acl_owner),
 * read, write, create and delete for the creating identity, read for the readers.
 * With a tenant's worker identity the plugin reaches its tenant's pools and the
 * operator's pools granted to the tenant, nothing else.
 *
 * The client is the ZooKeeper C library's synchronous API (a plugin is a
 * short-lived program with nothing else to do while it waits).
 */
#ifndef DROVER_POOLZK_H
#define DROVER_POOLZK_H

#include <jansson.h>
#include <stdint.h>

#include "error.h"

struct poolzk;

/*
 * Connect to hosts (a ZooKeeper connection string, chroot suffix allowed) with
 * the digest credentials digest ("user:password", as the worker gives them on
 * standard input) or else those in digest_file (mode 0600; NULL or "" for none),
 * waiting until connected or deadline_ms (clock_mono_ms clock). With credentials,
 * acl_owner (droverd's digest id, or NULL: the identity itself has all) and
 * acl_readers (comma-separated digest ids, at most 2, or NULL) make the ACL of
 * every znode created (the worker's zookeeper.acl_owner and acl_readers).
 */
struct poolzk *poolzk_open(const char *hosts, const char *digest, const char *digest_file,
                           const char *acl_owner, const char *acl_readers, int64_t deadline_ms,
                           struct drv_err *err);
void poolzk_close(struct poolzk *z);

/* Create /drover/pools/<pool>/claims and its parents when missing. Refused (NOAUTH),
   here and in every call below: DRV_EZK with a message naming the grant. */
int poolzk_ensure(struct poolzk *z, const char *pool, struct drv_err *err);

/*
 * Claim host for the node: DRV_EEXIST when someone holds it. data (a JSON
 * object) is written into the claim.
 */
int poolzk_claim(struct poolzk *z, const char *pool, const char *host, json_t *data,
                 struct drv_err *err);

/*
 * The claim held by the node (tenant, cluster, node), if any: host gets the
 * claim's name (size len); DRV_ENOENT when none. A claim in "released" is no node's.
 * In an operator's shared pool a claim is the node's only when its ACL proves this
 * tenant's workers made it (poolzk.c, claim_ours): one that names the node without that
 * proof is not adopted, and when it is the only one, DRV_ENOENT comes with err filled
 * (code DRV_EPERM, the host named) so that a caller that must not take "none" for an
 * answer (delete, confirm) can say so.
 */
int poolzk_find(struct poolzk *z, const char *pool, const char *tenant, const char *cluster,
                const char *node, char *host, size_t len, struct drv_err *err);

/* Read a claim's data (new reference) and version; DRV_ENOENT when none. */
int poolzk_get(struct poolzk *z, const char *pool, const char *host, json_t **data, int *version,
               struct drv_err *err);

/* Replace a claim's data at version. */
int poolzk_set(struct poolzk *z, const char *pool, const char *host, json_t *data, int version,
               struct drv_err *err);

/* Release a claim; a missing one is fine. A tenant's own pool: delete it. An operator's
   shared pool whose released directory exists (droverd made it: it deletes released
   claims): "state": "released" at the version read, with a marker, in one multi-op (a
   claim released before: nothing to do); without that directory, delete it. */
int poolzk_release(struct poolzk *z, const char *pool, const char *host, struct drv_err *err);

#endif
