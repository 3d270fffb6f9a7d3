/*
 * lbnode: the machinery of the loopback provider (plugin-internal header).
 *
 * A loopback "machine" is a node directory plus its own sshd on its own
 * loopback address, port 22 (the provider's "port"), in its own PID and mount
 * namespace:
 *
 *   <root>/                      the provider's "root" field
 *   ├── .lock                    flock: one allocator at a time on this machine
 *   ├── .addresses/<a.b.c.d>     address claims, holding the provider-id (O_EXCL)
 *   └── <provider-id>/           one node (0755)
 *       ├── node.json            address, pids, namespace, host key fingerprint
 *       ├── sshd.log
 *       ├── ssh/                 (0700) host key, authorized_keys, sshd_config
 *       └── root/                the node's own "/": DROVER_NODE_ROOT in every session;
 *                                sshd also reads root/<home>/.ssh/authorized_keys, so
 *                                the node's users' keys live where a real host has them
 *
 * Claims survive crashes (they are files) and are found again by provider-id,
 * so a retried create re-uses its address; the flock dies with its holder, so
 * a crashed allocator blocks nobody.
 *
 * Processes: sshd runs as PID 1 of a new PID namespace (unshare --pid --fork
 * --mount-proc --kill-child), in a session of its own. Everything started
 * through it, daemons included, lives in that namespace; killing its PID 1
 * makes the kernel kill every other process there. That is how delete leaves
 * no process behind (no cgroup is needed: the machine's cgroup v1/v2 mix is
 * not touched).
 */
#ifndef DROVER_LBNODE_H
#define DROVER_LBNODE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"

struct lb_conf {
    char root[512];    /* absolute, [A-Za-z0-9_./-] */
    uint32_t net_lo;   /* first address of the network, host order */
    uint32_t net_hi;   /* last */
    char sshd[256];    /* /usr/sbin/sshd */
    char unshare[256]; /* /usr/bin/unshare */
    int port;          /* sshd's port on every node: 22, unless the machine's own sshd has *:22 */
};

/* What node.json holds. */
struct lb_node {
    char id[256];     /* provider-id */
    char dir[800];    /* <root>/<id> */
    char address[16]; /* "127.77.0.3" */
    int port;         /* sshd's port (the provider's "port") */
    char node_id[129];
    pid_t unshare_pid; /* host pid of unshare (parent of the namespace) */
    pid_t init_pid;    /* host pid of sshd, PID 1 of the namespace */
    char pidns[64];    /* "pid:[4026532xxx]" */
    char host_key[64]; /* "SHA256:..." */
    char host_key_type[32];
};

/* Parse the provider fields (config.provider): root, network, port, sshd, unshare. */
int lb_conf_parse(json_t *provider, struct lb_conf *c, struct drv_err *err);

/* Take the machine-wide allocation lock (flock on <root>/.lock); returns its fd. */
int lb_lock(const struct lb_conf *c, struct drv_err *err);
void lb_unlock(int fd);

/* The address claimed for id, into addr (16 bytes); DRV_ENOENT when none. */
int lb_claim_find(const struct lb_conf *c, const char *id, char *addr);

/*
 * Claim the first free address of the network for id: no claim file, nothing
 * listening on it. Hold lb_lock() around it.
 */
int lb_claim_new(const struct lb_conf *c, const char *id, char *addr, struct drv_err *err);

/* Remove every claim holding id. */
void lb_claim_release(const struct lb_conf *c, const char *id);

/* Read and write node.json of the node in n->dir. */
int lb_node_load(struct lb_node *n, struct drv_err *err);
int lb_node_save(const struct lb_node *n, struct drv_err *err);

/* Is the node's sshd (its namespace's PID 1) alive and still ours? */
bool lb_node_running(const struct lb_node *n);

/*
 * Start the node's sshd in its own namespaces and session; fills the pids and
 * pidns of n (and saves node.json). The files must exist (lb_node_prepare).
 */
int lb_node_start(const struct lb_conf *c, struct lb_node *n, struct drv_err *err);

/*
 * Write what the node needs that is missing: directories, host key,
 * authorized_keys (always rewritten from pubkey), sshd_config.
 */
int lb_node_prepare(const struct lb_conf *c, struct lb_node *n, const char *pubkey,
                    struct drv_err *err);

/*
 * Wait until something accepts TCP on the node's address and port, or its
 * sshd dies, or deadline_ms (clock_mono_ms clock) passes.
 */
int lb_node_wait_listening(const struct lb_node *n, int64_t deadline_ms, struct drv_err *err);

/*
 * Stop every process of the node and remove its directory and claims. Works
 * from whatever is left (no node.json, no directory: then it only makes sure).
 * Fails only when a process of the node survives, its address stays in use,
 * or a file cannot be removed, by deadline_ms.
 */
int lb_node_destroy(const struct lb_conf *c, const char *id, int64_t deadline_ms,
                    struct drv_err *err);

/* Can something bind addr:port now (nothing listens there)? */
bool lb_address_free(const char *addr, int port);

#endif
