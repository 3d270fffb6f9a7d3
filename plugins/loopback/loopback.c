/*
 * loopback: the provider plugin whose machines are sshd processes on this
 * machine's loopback addresses (docs/plugins.md, "loopback").
 *
 * Tasks:
 *   create   claim an address, write the node directory (host key, the
 *            cluster's authorised key, sshd_config), start sshd in its own PID
 *            namespace, wait until it listens. Idempotent: a retried create
 *            finds its claim and directory by provider-id and resumes; with
 *            "cleanup": true it removes them first. Returns provider-id, also
 *            when a later step fails, so that a retry or rollback can delete.
 *   confirm  connect to the node, check that it answers with the host key made
 *            at create, authenticate with the cluster's key, check the
 *            session's node root; return hostname, ipaddresses, ssh_host_key.
 *   delete   kill the node's namespace (every process started on the node
 *            dies with it), remove the directory, release the address. Succeeds
 *            when the node is already gone.
 *
 * The provider-id is a function of the task ("lb-<tenant>-<cluster>-<node>"),
 * so that even a create whose worker died before reporting can be found by
 * its retry or its rollback's delete.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "lbnode.h"
#include "log.h"
#include "plugin.h"
#include "sshc.h"
#include "sshkey.h"

#define MOD "loopback"

/* What check() makes of the task, for the actions. */
struct lb_run {
    struct lb_conf c;
    char id[256]; /* the node's provider-id */
};

static void node_paths(const struct lb_conf *c, const char *id, struct lb_node *n)
{
    memset(n, 0, sizeof(*n));
    snprintf(n->id, sizeof(n->id), "%s", id);
    snprintf(n->dir, sizeof(n->dir), "%s/%s", c->root, id);
}

static void do_create(struct plugin_task *t, void *ctx, struct plugin_result *r)
{
    const struct lb_run *x = ctx;
    const struct lb_conf *c = &x->c;
    const char *id = x->id;
    struct drv_err err;
    drv_err_clear(&err);
    if (!t->node_id[0]) {
        plugin_result_fail(r, "create: the task has no \"nodeId\"");
        return;
    }
    const char *pub = plugin_cfg_str(t, "ssh.public_key");
    char fp[SSHKEY_FP_LEN], ty[32];
    if (!pub || sshkey_fingerprint_line(pub, fp, ty, sizeof(ty), &err) != 0 ||
        strpbrk(pub, "\r\n")) {
        plugin_result_fail(r, "create: config \"ssh.public_key\" (the cluster's key) is %s",
                           pub ? "not one public key line" : "missing");
        return;
    }
    int64_t deadline = plugin_deadline_ms(t, 60000);
    int lk = lb_lock(c, &err);
    if (lk < 0) {
        plugin_result_fail(r, "create: %s", err.msg);
        return;
    }
    struct lb_node n;
    node_paths(c, id, &n);
    char addr[16] = "";
    bool have_claim = lb_claim_find(c, id, addr) == 0;
    struct stat st;
    bool have_dir = lstat(n.dir, &st) == 0;
    bool resumed = have_claim || have_dir;
    /* A directory without its claim is a broken leftover: start afresh. */
    if (t->cleanup || (have_dir && !have_claim)) {
        log_info(MOD, "event=cleanup id=%s why=%s", id, t->cleanup ? "retried-create" : "no-claim");
        if (lb_node_destroy(c, id, deadline, &err) != 0) {
            lb_unlock(lk);
            plugin_result_set(r, "provider-id", json_string(id));
            plugin_result_fail(r, "create: cleaning up an earlier attempt: %s", err.msg);
            return;
        }
        have_claim = false;
        resumed = false;
    }
    if (!have_claim && lb_claim_new(c, id, addr, &err) != 0) {
        lb_unlock(lk);
        plugin_result_fail(r, "create: %s", err.msg);
        return;
    }
    /* From here on the machine exists for Drover: report its id whatever happens. */
    plugin_result_set(r, "provider-id", json_string(id));
    log_info(MOD, "event=address-claimed id=%s address=%s resumed=%s", id, addr,
             resumed ? "yes" : "no");
    if (lb_node_load(&n, NULL) != 0 || strcmp(n.address, addr) != 0) {
        node_paths(c, id, &n);
    }
    snprintf(n.address, sizeof(n.address), "%s", addr);
    n.port = c->port;
    snprintf(n.node_id, sizeof(n.node_id), "%s", t->node_id);
    if (lb_node_prepare(c, &n, pub, &err) != 0) {
        lb_unlock(lk);
        plugin_result_fail(r, "create: %s", err.msg);
        return;
    }
    bool running = lb_node_running(&n);
    if (!running && lb_node_start(c, &n, &err) != 0) {
        lb_unlock(lk);
        plugin_result_fail(r, "create: %s", err.msg);
        return;
    }
    lb_unlock(lk);
    if (lb_node_wait_listening(&n, deadline, &err) != 0) {
        plugin_result_fail(r, "create: %s", err.msg);
        return;
    }
    plugin_result_ok(r, "%s node %s on %s:%d (%s)",
                     running ? "found running" : (resumed ? "resumed" : "created"), t->node_id,
                     n.address, n.port, id);
}

static void do_confirm(struct plugin_task *t, void *ctx, struct plugin_result *r)
{
    const struct lb_run *x = ctx;
    const struct lb_conf *c = &x->c;
    const char *id = x->id;
    struct drv_err err;
    drv_err_clear(&err);
    struct lb_node n;
    node_paths(c, id, &n);
    if (lb_node_load(&n, &err) != 0) {
        plugin_result_fail(r, "confirm: node \"%s\" does not exist here (%s)", id, err.msg);
        return;
    }
    if (!lb_node_running(&n)) {
        plugin_result_fail(r, "confirm: the sshd of node \"%s\" on %s is not running", id,
                           n.address);
        return;
    }
    const char *key = plugin_cfg_str(t, "ssh.private_key");
    const char *user = plugin_cfg_str(t, "ssh.user");
    struct sshc_opts o = {
        .host = n.address,
        .port = n.port,
        .user = key ? (user ? user : "root") : NULL,
        .private_key = key,
        .public_key = plugin_cfg_str(t, "ssh.public_key"),
        .host_key = n.host_key,
        .host_key_type = n.host_key_type,
        .timeout_ms = 10000,
    };
    if (plugin_ssh_timeout_ms(t, 10000, &o.timeout_ms, &err) != 0) {
        plugin_result_fail(r, "confirm: %s", err.msg);
        return;
    }
    int64_t deadline = plugin_deadline_ms(t, 60000);
    struct sshc *s = NULL;
    for (;;) {
        s = sshc_connect(&o, &err);
        if (s || err.code != DRV_EAGAIN || clock_mono_ms() >= deadline)
            break;
        usleep(100000); /* sshd may still be starting */
    }
    if (!s) {
        plugin_result_fail(r, "confirm: %s", err.msg);
        return;
    }
    char want[900];
    snprintf(want, sizeof(want), "%s/root", n.dir);
    if (key) {
        struct sshc_out out;
        int rc = sshc_exec(s, "printf '%s' \"${DROVER_NODE_ROOT-}\"", NULL, 0, 4096, 0, &out, &err);
        bool same = rc == 0 && out.status == 0 && strcmp(out.out, want) == 0;
        if (rc == 0 && !same)
            drv_err_set(&err, DRV_EINVAL, 0, "sessions on %s see node root \"%s\", not \"%s\"",
                        n.address, out.out, want);
        sshc_out_free(&out);
        if (!same) {
            sshc_close(s);
            plugin_result_fail(r, "confirm: %s", err.msg);
            return;
        }
    }
    sshc_close(s);
    plugin_result_set(r, "hostname", json_string(n.address));
    plugin_result_set(r, "ipaddresses",
                      json_pack("{s:s, s:s}", "access_v4", n.address, "bind_v4", n.address));
    plugin_result_set(r, "ssh_host_key", json_string(n.host_key));
    plugin_result_set(r, "ssh_host_key_type", json_string(n.host_key_type));
    plugin_result_set(r, "node_root", json_string(want));
    if (n.port != 22)
        plugin_result_set(r, "ssh_port", json_integer(n.port));
    plugin_result_ok(r, "node %s answers on %s:%d with host key %s%s", t->node_id, n.address,
                     n.port, n.host_key, key ? "; the cluster's key logs in" : "");
}

static void do_delete(struct plugin_task *t, void *ctx, struct plugin_result *r)
{
    const struct lb_run *x = ctx;
    const struct lb_conf *c = &x->c;
    const char *id = x->id;
    struct drv_err err;
    drv_err_clear(&err);
    int64_t deadline = plugin_deadline_ms(t, 60000);
    int lk = lb_lock(c, &err);
    if (lk < 0) {
        plugin_result_fail(r, "delete: %s", err.msg);
        return;
    }
    struct lb_node n;
    node_paths(c, id, &n);
    char addr[16];
    struct stat st;
    bool existed = lstat(n.dir, &st) == 0 || lb_claim_find(c, id, addr) == 0;
    int rc = lb_node_destroy(c, id, deadline, &err);
    lb_unlock(lk);
    if (rc != 0) {
        plugin_result_fail(r, "delete: %s", err.msg);
        return;
    }
    plugin_result_set(r, "provider-id", json_null());
    plugin_result_ok(r, existed ? "deleted node %s (%s)" : "node %s (%s) was already gone",
                     t->node_id[0] ? t->node_id : "?", id);
}

/* The provider config and the node's id; the task is logged once they are good. */
static int check(struct plugin_task *t, void *ctx, struct plugin_result *r)
{
    struct lb_run *x = ctx;
    struct drv_err err;
    drv_err_clear(&err);
    json_t *prov = plugin_cfg(t, "provider");
    const char *given = plugin_fact_str(t, "provider-id");
    if (!json_is_object(prov)) {
        plugin_result_fail(r, "the task's config has no \"provider\" object");
        return -1;
    }
    if (lb_conf_parse(prov, &x->c, &err) != 0) {
        plugin_result_fail(r, "%s", err.msg);
        return -1;
    }
    if (given && !plugin_name_ok(given, 200)) {
        plugin_result_fail(r, "config \"facts.provider-id\": \"%.60s\" is not a loopback node id",
                           given);
        return -1;
    }
    if (!t->node_id[0] && !t->tenant[0]) {
        /* No node and no tenant: a task no worker makes (the engine names both in every
           provider task), the operator's own delete by id (scripts/run down, by hand). */
        if (!given || strcmp(t->task_name, "delete") != 0) {
            plugin_result_fail(r, "the task names no \"nodeId\" and no \"tenant\": only an "
                                  "operator's delete by \"facts.provider-id\" may");
            return -1;
        }
        snprintf(x->id, sizeof(x->id), "%s", given);
    } else if (!t->node_id[0]) {
        plugin_result_fail(r, "the task has no \"nodeId\"");
        return -1;
    } else {
        /* The node's id is a function of the task: a task acts on its own node only, whatever
           its facts say (issue 32: a provider acts only on a machine that is the task's). */
        snprintf(x->id, sizeof(x->id), "lb%s%s%s%s-%s", t->tenant[0] ? "-" : "", t->tenant,
                 t->cluster_id[0] ? "-" : "", t->cluster_id, t->node_id);
        if (given && strcmp(given, x->id) != 0) {
            plugin_result_fail(r,
                               "config \"facts.provider-id\": \"%.60s\" is not the id of this "
                               "task's node; this provider acts only on its own nodes",
                               given);
            return -1;
        }
    }
    if (!plugin_name_ok(x->id, 200)) {
        plugin_result_fail(r, "node id \"%.60s...\" is too long", x->id);
        return -1;
    }
    log_info(MOD, "event=task task=%s id=%s task_id=%s", t->task_name, x->id, t->task_id);
    return 0;
}

static const struct plugin_action actions[] = {
    {"create", do_create},
    {"confirm", do_confirm},
    {"delete", do_delete},
    {NULL, NULL},
};

static const struct plugin_def loopback = {.name = "loopback", .actions = actions, .check = check};

int main(void)
{
    struct lb_run x = {0};
    return plugin_main(&loopback, &x);
}
