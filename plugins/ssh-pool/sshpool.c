/*
 * ssh-pool: the provider plugin of a configured pool of existing hosts
 * reachable by SSH, bare metal for instance (docs/plugins.md, "ssh-pool").
 *
 * Provider fields: "hosts" (address, port, user, host_key, hostname), the
 * pool's own key ("private_key", sensitive; "public_key"), "wipe_script" (a
 * script on the worker's host: the operator's, from worker.provider_settings) and
 * "pool" (the claims' name, default the provider's name).
 *
 * A host's life in the pool:
 *
 *   free --create: claim znode--> claimed --key installed--> in use
 *    ^                                                          |
 *    +--- claim deleted <--- wipe script, key removed <--- delete (state "wiping")
 *
 * Invariants:
 *   1. A host is used by at most one node: its claim is a znode that only one
 *      creator can make (poolzk.h).
 *   2. A host goes back to the pool only after its wipe succeeded; a failed
 *      wipe keeps it claimed (state "wiping") for an operator or a retry.
 *   3. Delete touches a host only when its claim names the task's node, so a
 *      late delete never wipes a host that another node holds now.
 *
 * create: find the node's claim (a retry) or claim the first free host, from
 * an offset that depends on the node so that concurrent creates rarely collide;
 * then, with the pool's key, add the cluster's public key to the host user's
 * authorized_keys (marked "drover:<tenant>:<cluster>:<node>").
 * confirm: log in with the cluster's key, checking the host key from the
 * pool's configuration; return hostname, ipaddresses, ssh_host_key, ssh_port,
 * ssh_user. delete: wipe, remove the key, release.
 *
 * Paths on a host are below ${DROVER_NODE_ROOT} when a session sets it (hosts
 * that are loopback nodes, in tests), else below / as usual.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clock.h"
#include "log.h"
#include "plugin.h"
#include "poolzk.h"
#include "sshc.h"
#include "xalloc.h"

#define MOD "ssh-pool"

struct pool_host {
    const char *address;
    int port;
    const char *user;
    const char *hostname;
    char fp[SSHKEY_FP_LEN];
    char type[40];
    char name[300]; /* "<address>:<port>": the claim's name */
};

struct pool {
    char name[129];
    char claims[260]; /* the claims' place: "<tenant>/<name>" (a tenant's own namespace) */
    struct pool_host *hosts;
    size_t n;
    const char *key, *pubkey; /* the pool's own key pair */
    const char *wipe;         /* the operator's script on this host, or NULL */
};

/* What check() and open() make of the task, for the actions. */
struct pool_run {
    struct pool p;
    struct poolzk *z;
    int64_t deadline;
};

static int pool_parse(json_t *prov, struct pool *p, struct drv_err *err)
{
    memset(p, 0, sizeof(*p));
    const char *name = json_string_value(json_object_get(prov, "pool"));
    if (!name)
        name = json_string_value(json_object_get(prov, "name"));
    if (!plugin_name_ok(name, 128))
        return drv_err_set(err, DRV_EINVAL, 0,
                           "provider field \"pool\" (or \"name\"): expected [A-Za-z0-9_.-]");
    snprintf(p->name, sizeof(p->name), "%s", name);
    json_t *hosts = json_object_get(prov, "hosts");
    if (!json_is_array(hosts) || json_array_size(hosts) == 0)
        return drv_err_set(err, DRV_EINVAL, 0,
                           "provider field \"hosts\": expected a non-empty array");
    p->n = json_array_size(hosts);
    p->hosts = xcalloc(p->n, sizeof(*p->hosts));
    for (size_t i = 0; i < p->n; i++) {
        json_t *h = json_array_get(hosts, i);
        struct pool_host *ph = &p->hosts[i];
        ph->address = json_string_value(json_object_get(h, "address"));
        json_t *port = json_object_get(h, "port");
        ph->port = port ? (int)json_integer_value(port) : 22;
        ph->user = json_string_value(json_object_get(h, "user"));
        ph->hostname = json_string_value(json_object_get(h, "hostname"));
        if (!ph->user)
            ph->user = "root";
        if (!plugin_name_ok(ph->address, 253) || ph->port <= 0 || ph->port > 65535)
            return drv_err_set(err, DRV_EINVAL, 0,
                               "provider field \"hosts\"[%zu]: expected \"address\" and a port", i);
        if (!plugin_name_ok(ph->user, 64))
            return drv_err_set(err, DRV_EINVAL, 0, "provider field \"hosts\"[%zu].user: bad name",
                               i);
        struct drv_err e2;
        if (sshc_host_key_parse(json_string_value(json_object_get(h, "host_key")), ph->fp, ph->type,
                                sizeof(ph->type), &e2) != 0)
            return drv_err_set(err, DRV_EINVAL, 0, "provider field \"hosts\"[%zu].host_key: %s", i,
                               e2.msg);
        snprintf(ph->name, sizeof(ph->name), "%s:%d", ph->address, ph->port);
    }
    p->key = json_string_value(json_object_get(prov, "private_key"));
    p->pubkey = json_string_value(json_object_get(prov, "public_key"));
    if (!p->key || !*p->key)
        return drv_err_set(err, DRV_EINVAL, 0,
                           "provider field \"private_key\" (the pool's key) is missing");
    /* The operator's (worker.provider_settings; the worker drops a tenant's, droverd refuses
       it in an entity): a host's wipe decides what the next node, maybe another tenant's,
       finds there, so no tenant writes it. */
    p->wipe = json_string_value(json_object_get(prov, "wipe_script"));
    if (p->wipe && (p->wipe[0] != '/' || strstr(p->wipe, "/../")))
        return drv_err_set(err, DRV_EINVAL, 0,
                           "provider field \"wipe_script\": expected an absolute path of a script "
                           "on the worker's host, which the operator names in "
                           "worker.provider_settings (no longer a path in the tenant's resources)");
    return 0;
}

static struct pool_host *host_by_name(struct pool *p, const char *name)
{
    for (size_t i = 0; i < p->n; i++)
        if (strcmp(p->hosts[i].name, name) == 0)
            return &p->hosts[i];
    return NULL;
}

/* A session to h: with the pool's key, or with the cluster's (cluster = true). */
static struct sshc *host_connect(const struct plugin_task *t, struct pool *p, struct pool_host *h,
                                 bool cluster, struct drv_err *err)
{
    struct sshc_opts o = {
        .host = h->address,
        .port = h->port,
        .user = h->user,
        .private_key = cluster ? plugin_cfg_str(t, "ssh.private_key") : p->key,
        .public_key = cluster ? plugin_cfg_str(t, "ssh.public_key") : p->pubkey,
        .host_key = h->fp,
        .host_key_type = h->type[0] ? h->type : NULL,
        .timeout_ms = 15000,
        /* A pool's hosts are the tenant's to list: never this host itself (issue 32). */
        .nodes_only = true,
    };
    return sshc_connect(&o, err);
}

/* Run a fixed script with quoted arguments; DRV_ESSH with its stderr when it fails. */
static int host_sh(struct sshc *c, const char *script, const char *const *args, size_t n,
                   int timeout_ms, struct drv_err *err)
{
    char *q = plugin_sh_quote(script);
    char *line = xasprintf("sh -c %s drover", q);
    free(q);
    for (size_t i = 0; i < n; i++) {
        char *a = plugin_sh_quote(args[i]);
        char *l2 = xasprintf("%s %s", line, a);
        free(a);
        free(line);
        line = l2;
    }
    struct sshc_out o;
    int rc = sshc_exec(c, line, NULL, 0, 65536, timeout_ms, &o, err);
    free(line);
    if (rc != 0)
        return rc;
    if (o.out_len)
        fprintf(stderr, "--- stdout of %s\n%s\n", sshc_peer(c), o.out);
    if (o.err_len)
        fprintf(stderr, "--- stderr of %s\n%s\n", sshc_peer(c), o.err);
    if (o.status != 0) {
        size_t l = o.err_len;
        while (l > 0 && o.err[l - 1] == '\n')
            o.err[--l] = '\0';
        const char *nl = strrchr(o.err, '\n');
        rc = drv_err_set(err, DRV_ESSH, o.status, "on %s: exit %d%s%s", sshc_peer(c), o.status,
                         l ? ": " : "", nl ? nl + 1 : o.err);
    }
    sshc_out_free(&o);
    return rc;
}

/* The user's home on the host: $HOME below the node root, unless HOME is already there
   (a loopback node sets HOME in its own root, so that no host dotfile is read). */
#define HOME_SH                                                                                    \
    "h=$HOME; case $h in \"${DROVER_NODE_ROOT-}\"/*) ;; *) h=\"${DROVER_NODE_ROOT-}$h\" ;; esac\n"

static const char add_key_sh[] = "umask 077\n" HOME_SH "d=\"$h/.ssh\"; f=\"$d/authorized_keys\"\n"
                                 "mkdir -p \"$d\" && touch \"$f\" || exit 3\n"
                                 "grep -qxF \"$1\" \"$f\" || printf '%s\\n' \"$1\" >> \"$f\"\n";

static const char remove_key_sh[] = HOME_SH
    "f=\"$h/.ssh/authorized_keys\"\n"
    "[ -f \"$f\" ] || exit 0\n"
    "awk -v m=\" $1\" 'length($0) < length(m) || substr($0, length($0) - length(m) + 1) != m' "
    "\"$f\" > \"$f.drover\" && cat \"$f.drover\" > \"$f\" && rm -f \"$f.drover\"\n"
    "rm -rf \"${DROVER_NODE_ROOT-}/var/lib/drover\"\n";

static const char wipe_sh[] = "d=$(mktemp -d) || exit 3\n"
                              "cat > \"$d/wipe\" && chmod 700 \"$d/wipe\" || exit 3\n"
                              "DROVER_POOL=\"$1\" DROVER_NODE_ID=\"$2\" DROVER_CLUSTER_ID=\"$3\" "
                              "\"$d/wipe\" < /dev/null\n"
                              "rc=$?; rm -rf \"$d\"; exit $rc\n";

static void marker(const struct plugin_task *t, char *out, size_t n)
{
    snprintf(out, n, "drover:%s:%s:%s", t->tenant, t->cluster_id, t->node_id);
}

static void do_create(struct plugin_task *t, void *ctx, struct plugin_result *r)
{
    struct pool_run *x = ctx;
    struct pool *p = &x->p;
    struct poolzk *z = x->z;
    struct drv_err err;
    drv_err_clear(&err);
    const char *pub = plugin_cfg_str(t, "ssh.public_key");
    char fp[SSHKEY_FP_LEN];
    if (!pub || strpbrk(pub, "\r\n") || sshkey_fingerprint_line(pub, fp, NULL, 0, &err) != 0) {
        plugin_result_fail(r, "create: config \"ssh.public_key\" (the cluster's key) is %s",
                           pub ? "not one public key line" : "missing");
        return;
    }
    char name[300] = "";
    bool again = poolzk_find(z, p->claims, t->tenant, t->cluster_id, t->node_id, name, sizeof(name),
                             &err) == 0;
    if (err.code == DRV_EPERM) {
        /* A claim naming this node that this tenant did not make: not ours, and no reason
           not to claim a host of our own (poolzk_find logged it). */
        log_warn(MOD, "event=claim-not-adopted node=%s reason=\"%s\"", t->node_id, err.msg);
        drv_err_clear(&err);
    }
    if (err.code && err.code != DRV_ENOENT) {
        plugin_result_fail(r, "create: %s", err.msg);
        return;
    }
    if (!again) {
        json_t *data =
            json_pack("{s:s, s:s, s:s, s:s, s:s}", "tenant", t->tenant, "cluster", t->cluster_id,
                      "node", t->node_id, "state", "claimed", "task", t->task_id);
        /* Start where this node's hash points: concurrent creates spread out. */
        char key[400];
        snprintf(key, sizeof(key), "%s/%s/%s", t->tenant, t->cluster_id, t->node_id);
        unsigned long hsh = 5381;
        for (const char *c = key; *c; c++)
            hsh = hsh * 33 + (unsigned char)*c;
        int rc = DRV_EEXIST;
        for (size_t k = 0; k < p->n && rc == DRV_EEXIST; k++) {
            struct pool_host *h = &p->hosts[(hsh + k) % p->n];
            char pid[500];
            snprintf(pid, sizeof(pid), "pool:%s:%s", p->name, h->name);
            json_object_set_new(data, "provider-id", json_string(pid));
            rc = poolzk_claim(z, p->claims, h->name, data, &err);
            if (rc == 0)
                snprintf(name, sizeof(name), "%s", h->name);
        }
        json_decref(data);
        if (rc == DRV_EEXIST) {
            plugin_result_fail(r, "create: no free host in pool \"%s\" (%zu hosts, all claimed)",
                               p->name, p->n);
            return;
        }
        if (rc != 0) {
            plugin_result_fail(r, "create: %s", err.msg);
            return;
        }
    }
    char pid[500];
    snprintf(pid, sizeof(pid), "pool:%s:%s", p->name, name);
    plugin_result_set(r, "provider-id", json_string(pid));
    log_info(MOD, "event=host-claimed pool=%s host=%s node=%s again=%s", p->name, name, t->node_id,
             again ? "yes" : "no");
    struct pool_host *h = host_by_name(p, name);
    if (!h) {
        plugin_result_fail(r, "create: claimed host \"%s\" is no longer in the pool's hosts", name);
        return;
    }
    struct sshc *c = host_connect(t, p, h, false, &err);
    char mark[400];
    marker(t, mark, sizeof(mark));
    /* The cluster's key, with our marker for a comment. */
    char keytype[64] = "", keyb64[1024] = "";
    sscanf(pub, "%63s %1023s", keytype, keyb64);
    char *line = xasprintf("%s %s %s", keytype, keyb64, mark);
    const char *args[] = {line};
    int rc = c ? host_sh(c, add_key_sh, args, 1, 60000, &err) : DRV_ESSH;
    free(line);
    sshc_close(c);
    if (rc != 0) {
        plugin_result_fail(r, "create: installing the cluster's key on %s: %s", name, err.msg);
        return;
    }
    plugin_result_ok(r, "%s host %s of pool %s for node %s", again ? "found claimed" : "claimed",
                     name, p->name, t->node_id);
}

/* The host a task's node holds: from provider-id, checked against the claim (invariant 3). */
static int held_host(const struct plugin_task *t, struct pool *p, struct poolzk *z, char *name,
                     size_t len, struct drv_err *err)
{
    int rc = poolzk_find(z, p->claims, t->tenant, t->cluster_id, t->node_id, name, len, err);
    if (rc == DRV_ENOENT && err->code == DRV_EPERM)
        return DRV_EPERM; /* only a claim this tenant did not make names the node: say so */
    if (rc != 0)
        return rc;
    const char *given = plugin_fact_str(t, "provider-id");
    char want[500];
    snprintf(want, sizeof(want), "pool:%s:%s", p->name, name);
    if (given && strcmp(given, want) != 0)
        log_warn(MOD, "event=provider-id-differs given=%s claim=%s", given, want);
    return 0;
}

static void do_confirm(struct plugin_task *t, void *ctx, struct plugin_result *r)
{
    struct pool_run *x = ctx;
    struct pool *p = &x->p;
    struct poolzk *z = x->z;
    struct drv_err err;
    drv_err_clear(&err);
    char name[300];
    int rc = held_host(t, p, z, name, sizeof(name), &err);
    if (rc == DRV_ENOENT) {
        plugin_result_fail(r, "confirm: node %s holds no host of pool \"%s\"", t->node_id, p->name);
        return;
    }
    if (rc != 0) {
        plugin_result_fail(r, "confirm: %s", err.msg);
        return;
    }
    struct pool_host *h = host_by_name(p, name);
    if (!h) {
        plugin_result_fail(r, "confirm: host \"%s\" is no longer in the pool", name);
        return;
    }
    struct sshc *c = host_connect(t, p, h, true, &err);
    if (!c) {
        plugin_result_fail(r, "confirm: %s", err.msg);
        return;
    }
    sshc_close(c);
    plugin_result_set(r, "hostname", json_string(h->hostname ? h->hostname : h->address));
    plugin_result_set(r, "ipaddresses",
                      json_pack("{s:s, s:s}", "access_v4", h->address, "bind_v4", h->address));
    plugin_result_set(r, "ssh_host_key", json_string(h->fp));
    if (h->type[0])
        plugin_result_set(r, "ssh_host_key_type", json_string(h->type));
    plugin_result_set(r, "ssh_port", json_integer(h->port));
    plugin_result_set(r, "ssh_user", json_string(h->user));
    plugin_result_ok(r, "host %s answers with host key %s; the cluster's key logs in as %s", name,
                     h->fp, h->user);
}

static void do_delete(struct plugin_task *t, void *ctx, struct plugin_result *r)
{
    struct pool_run *x = ctx;
    struct pool *p = &x->p;
    struct poolzk *z = x->z;
    int64_t deadline = x->deadline;
    struct drv_err err;
    drv_err_clear(&err);
    char name[300];
    int rc = held_host(t, p, z, name, sizeof(name), &err);
    if (rc == DRV_ENOENT) {
        plugin_result_set(r, "provider-id", json_null());
        plugin_result_ok(r, "node %s holds no host of pool %s: already released", t->node_id,
                         p->name);
        return;
    }
    if (rc != 0) {
        plugin_result_fail(r, "delete: %s", err.msg);
        return;
    }
    json_t *data = NULL;
    int version = 0;
    if (poolzk_get(z, p->claims, name, &data, &version, &err) != 0) {
        plugin_result_fail(r, "delete: %s", err.msg);
        return;
    }
    json_object_set_new(data, "state", json_string("wiping"));
    rc = poolzk_set(z, p->claims, name, data, version, &err);
    json_decref(data);
    if (rc != 0) {
        plugin_result_fail(r, "delete: %s", err.msg);
        return;
    }
    struct pool_host *h = host_by_name(p, name);
    if (!h) {
        plugin_result_fail(r, "delete: host \"%s\" is no longer in the pool: left claimed", name);
        return;
    }
    struct sshc *c = host_connect(t, p, h, false, &err);
    if (!c) {
        plugin_result_fail(r, "delete: %s (the host stays claimed)", err.msg);
        return;
    }
    if (p->wipe) {
        size_t len = 0;
        char *script = plugin_read_file(p->wipe, 1 << 20, &len, &err);
        if (!script) {
            sshc_close(c);
            plugin_result_fail(r, "delete: wipe script \"%s\": %s (the host stays claimed)",
                               p->wipe, err.msg);
            return;
        }
        char *q = plugin_sh_quote(wipe_sh);
        char *qp = plugin_sh_quote(p->name), *qn = plugin_sh_quote(t->node_id),
             *qc = plugin_sh_quote(t->cluster_id);
        char *line = xasprintf("sh -c %s drover %s %s %s", q, qp, qn, qc);
        free(q);
        free(qp);
        free(qn);
        free(qc);
        int64_t left = deadline - clock_mono_ms();
        struct sshc_out o;
        rc = sshc_exec(c, line, script, len, 65536, left > 1000 ? (int)left : 1000, &o, &err);
        free(line);
        free(script);
        if (rc == 0) {
            if (o.out_len)
                fprintf(stderr, "--- wipe stdout\n%s\n", o.out);
            if (o.err_len)
                fprintf(stderr, "--- wipe stderr\n%s\n", o.err);
            if (o.status != 0)
                rc = drv_err_set(&err, DRV_ESSH, o.status, "the wipe script exited with %d",
                                 o.status);
            sshc_out_free(&o);
        }
        if (rc != 0) {
            sshc_close(c);
            plugin_result_fail(r, "delete: wiping %s: %s (the host stays claimed)", name, err.msg);
            return;
        }
    } else {
        log_warn(MOD, "event=no-wipe-script pool=%s host=%s", p->name, name);
    }
    char mark[400];
    marker(t, mark, sizeof(mark));
    const char *args[] = {mark};
    rc = host_sh(c, remove_key_sh, args, 1, 60000, &err);
    sshc_close(c);
    if (rc != 0) {
        plugin_result_fail(r, "delete: removing the cluster's key from %s: %s", name, err.msg);
        return;
    }
    if (poolzk_release(z, p->claims, name, &err) != 0) {
        plugin_result_fail(r, "delete: %s", err.msg);
        return;
    }
    plugin_result_set(r, "provider-id", json_null());
    plugin_result_ok(r, "wiped host %s%s and released it to pool %s", name,
                     p->wipe ? "" : " (no wipe script)", p->name);
}

/* The pool and the node the task is for. */
static int check(struct plugin_task *t, void *ctx, struct plugin_result *r)
{
    struct pool_run *x = ctx;
    struct drv_err err;
    drv_err_clear(&err);
    json_t *prov = plugin_cfg(t, "provider");
    x->deadline = plugin_deadline_ms(t, 120000);
    if (!json_is_object(prov)) {
        plugin_result_fail(r, "the task's config has no \"provider\" object");
        return -1;
    }
    if (pool_parse(prov, &x->p, &err) != 0) {
        plugin_result_fail(r, "%s", err.msg);
        return -1;
    }
    if (!t->node_id[0] || !t->cluster_id[0] || !t->tenant[0]) {
        plugin_result_fail(r, "the task needs \"tenant\", \"clusterId\" and \"nodeId\"");
        return -1;
    }
    /* Claims live in the tenant's own namespace (issue 20): a tenant naming another's pool
     * and hosts claims nothing of the other's, and leaves none of its hosts in wiping.
     * "<tenant>/<pool>" is under pools/<tenant>, which droverd makes and only the tenant's
     * workers reach (docs/zookeeper-tree.md "ACLs"). A pool the operator declares
     * ("shared": true, a host field: only worker.provider_settings sets it) is one
     * namespace for the tenants droverd's zookeeper.pool_grants grants it to,
     * "_operator/<pool>" (no tenant name starts with '_'): a host goes to one node of one
     * tenant at a time, and a tenant not granted it is refused by ZooKeeper. */
    if (json_is_true(json_object_get(prov, "shared")))
        snprintf(x->p.claims, sizeof(x->p.claims), "_operator/%s", x->p.name);
    else
        snprintf(x->p.claims, sizeof(x->p.claims), "%s/%s", t->tenant, x->p.name);
    return 0;
}

/* The claims in ZooKeeper, for a task the plugin serves. */
static int open_zk(struct plugin_task *t, void *ctx, struct plugin_result *r)
{
    struct pool_run *x = ctx;
    struct drv_err err;
    drv_err_clear(&err);
    /* The worker's login comes on standard input ("wants": ["zookeeper"]); run alone, the
     * environment's DROVER_ZK_HOSTS and DROVER_ZK_DIGEST_FILE. */
    const json_t *zk = json_object_get(t->root, "zookeeper");
    const char *hosts = json_string_value(json_object_get(zk, "hosts"));
    x->z = poolzk_open(hosts && *hosts ? hosts : getenv("DROVER_ZK_HOSTS"),
                       json_string_value(json_object_get(zk, "digest")),
                       getenv("DROVER_ZK_DIGEST_FILE"),
                       json_string_value(json_object_get(zk, "acl_owner")),
                       json_string_value(json_object_get(zk, "acl_readers")), x->deadline, &err);
    if (!x->z || poolzk_ensure(x->z, x->p.claims, &err) != 0) {
        plugin_result_fail(r, "%s", err.msg);
        return -1;
    }
    log_info(MOD, "event=task task=%s pool=%s node=%s task_id=%s", t->task_name, x->p.name,
             t->node_id, t->task_id);
    return 0;
}

static void close_run(void *ctx)
{
    struct pool_run *x = ctx;
    poolzk_close(x->z);
    free(x->p.hosts);
}

static const struct plugin_action actions[] = {
    {"create", do_create},
    {"confirm", do_confirm},
    {"delete", do_delete},
    {NULL, NULL},
};

static const struct plugin_def ssh_pool = {
    .name = "ssh-pool", .actions = actions, .check = check, .open = open_zk, .close = close_run};

int main(void)
{
    struct pool_run x = {0};
    return plugin_main(&ssh_pool, &x);
}
