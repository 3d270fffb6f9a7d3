/*
 * task: from a queue item to a plugin's task JSON, and from a plugin's exit
 * to a run record's outcome. Pure (no I/O): unit-tested alone.
 *
 * The queue item (src/common/taskmsg.h) carries what is particular to one
 * task: its names, the action's fields, its node's parts by writer (the
 * provider's facts, the tenant's values and entries, its types); the job's
 * context (jobs/<id>/ctx) carries the cluster-wide rest. The plugin gets both
 * merged in the shape of docs/plugins.md, the facts last and apart
 * (config.facts), so no value of the tenant's stands in for one.
 *
 * The outcome: success needs exit status 0 and a result JSON object with
 * "status": "ok" on standard output. Anything else is a failure with a reason
 * a person can act on ("plugin printed invalid JSON", "timed out after ...").
 * Sensitive result keys are sealed before the record leaves the worker; a
 * result of a node's own task (not its provider's) that names a reserved key
 * fails the task (facts.h).
 */
#include <stdio.h>
#include <string.h>

#include "facts.h"
#include "seal.h"
#include "taskmsg.h"
#include "worker_int.h"
#include "xalloc.h"

#define TAIL_IN_RECORD 2048

static void set_str(json_t *o, const char *k, const char *v)
{
    if (v)
        json_object_set_new(o, k, json_string(v));
}

json_t *worker__task_json(const struct taskmsg_item *it, const json_t *ctxj, const json_t *nodes)
{
    struct taskmsg_ctx ctx;
    struct drv_err err;
    if (taskmsg_ctx_decode(ctxj, &ctx, &err) != 0)
        memset(&ctx, 0, sizeof(ctx)); /* the caller read it: an object, or nothing */
    char key[80] = "";
    taskmsg_key(key, sizeof(key), it->job, it->phase, it->idx, it->attempt);
    json_t *t = json_object();
    json_object_set_new(t, "format", json_integer(2));
    json_object_set_new(t, "taskId", json_string(key));
    set_str(t, "jobId", it->job);
    set_str(t, "clusterId", it->cluster);
    set_str(t, "tenant", it->tenant);
    set_str(t, "task", it->task);
    set_str(t, "taskName", it->name);
    set_str(t, "nodeId", it->node);
    set_str(t, "service", it->service);
    json_object_set_new(t, "attempt", json_integer(it->attempt));
    json_object_set_new(t, "cleanup", json_boolean(it->cleanup));
    json_object_set_new(t, "timeout_ms", json_integer(it->timeout_ms));

    /* The node: the tenant's parts (decoded without reserved keys), then the provider's
       facts over them and apart: nothing the tenant wrote stands in for a fact. */
    json_t *config = json_object();
    if (it->values)
        json_object_update(config, it->values);
    if (it->entries)
        json_object_update(config, it->entries);
    set_str(config, "hardwaretype", it->hardwaretype);
    set_str(config, "imagetype", it->imagetype);
    if (it->services && json_array_size(it->services))
        json_object_set(config, "services", it->services);
    json_t *facts = it->facts ? json_deep_copy(it->facts) : json_object();
    json_object_update(config, facts);
    json_object_set_new(config, "facts", facts);
    /* The job's parts. */
    set_str(config, "clustername", ctx.clustername);
    json_t *cluster = it->config_override;
    if (!json_is_object(cluster))
        cluster = ctx.cluster;
    json_object_set_new(config, "cluster",
                        json_is_object(cluster) ? json_deep_copy(cluster) : json_object());
    json_object_set_new(config, "provider",
                        ctx.provider ? json_deep_copy(ctx.provider) : json_object());
    if (ctx.ssh)
        json_object_set_new(config, "ssh", json_deep_copy(ctx.ssh));
    json_t *fields = it->fields;
    if (worker__is_provider_task(it->name)) {
        if (json_is_object(fields))
            json_object_update(json_object_get(config, "provider"), fields);
    } else {
        json_t *action = json_object();
        set_str(action, "type", it->plugin);
        json_object_set_new(action, "fields",
                            json_is_object(fields) ? json_deep_copy(fields) : json_object());
        json_object_set_new(
            config, "service",
            json_pack("{s:s, s:o}", "name", it->service ? it->service : "", "action", action));
    }
    if (nodes)
        json_object_set_new(config, "nodes", json_deep_copy(nodes));
    json_object_set_new(t, "config", config);
    return t;
}

static const char *str_or_empty(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

/* ---- opening: the places the API, the engine and workers sealed at ---------------- */

/* Open the sealed values inside o[k] (an object), when there is one, at base + their path. */
static int open_part(const unsigned char tkey[32], json_t *o, const char *k,
                     const struct seal_place *base, struct drv_err *err)
{
    json_t *v = json_object_get(o, k);
    return json_is_object(v) ? seal_open_tree(tkey, base, v, err) : 0;
}

int worker__task_open(const unsigned char tkey[32], json_t *task, struct drv_err *err)
{
    const char *tenant = str_or_empty(task, "tenant");
    json_t *config = json_object_get(task, "config");
    if (!json_is_object(config))
        return 0;
    const char *cluster = str_or_empty(config, "clustername");
    const char *pname = str_or_empty(json_object_get(config, "provider"), "name");
    char node_name[300];
    snprintf(node_name, sizeof(node_name), "%s/%s", str_or_empty(task, "clusterId"),
             str_or_empty(task, "nodeId"));
    struct seal_place prov = {tenant, "provider", pname, "provisioner"};
    struct seal_place clu = {tenant, "cluster", cluster, "config"};
    struct seal_place ssh = {tenant, "cluster", cluster, "ssh"};
    struct seal_place node = {tenant, "node", node_name, ""};
    int rc = open_part(tkey, config, "provider", &prov, err);
    if (rc == 0)
        rc = open_part(tkey, config, "cluster", &clu, err);
    if (rc == 0)
        rc = open_part(tkey, config, "ssh", &ssh, err);
    if (rc == 0)
        rc = open_part(tkey, config, "facts", &node, err); /* a provider's sensitive fact */
    if (rc)
        return rc;
    /* The node's own key-values: config's top level, but for the parts named above (and
       service and nodes, which hold nothing sealed: they stay as they are). */
    static const char *const parts[] = {"clustername", "cluster", "provider", "ssh",
                                        "service",     "nodes",   "facts",    NULL};
    json_t *own = json_object();
    const char *k;
    json_t *v;
    json_object_foreach(config, k, v)
    {
        bool part = false;
        for (const char *const *p = parts; *p; p++)
            part |= strcmp(*p, k) == 0;
        if (!part)
            json_object_set(own, k, v);
    }
    rc = seal_open_tree(tkey, &node, own, err);
    if (rc == 0)
        json_object_update(config, own);
    json_decref(own);
    return rc;
}

/* The one JSON object of out (surrounding blanks allowed), or NULL. */
static json_t *parse_output(const char *out, size_t len)
{
    json_error_t je;
    json_t *j = json_loadb(out, len, JSON_DISABLE_EOF_CHECK, &je);
    if (!json_is_object(j)) {
        json_decref(j);
        return NULL;
    }
    for (size_t i = (size_t)je.position; i < len; i++)
        if (out[i] != ' ' && out[i] != '\n' && out[i] != '\r' && out[i] != '\t') {
            json_decref(j);
            return NULL;
        }
    return j;
}

int worker__task_outcome(const struct worker__proc_result *r, int timeout_ms,
                         const struct worker__plugin *p, const unsigned char *key,
                         const struct taskmsg_item *it, json_t *rec)
{
    char node_name[300];
    snprintf(node_name, sizeof(node_name), "%s/%s", it->cluster ? it->cluster : "",
             it->node ? it->node : "");
    char how[256];
    worker__proc_describe(r, timeout_ms, how, sizeof(how));
    const char *tail = r->err_tail ? r->err_tail : "";
    size_t tl = strlen(tail);
    json_t *out = r->out_len ? parse_output(r->out, r->out_len) : NULL;
    const char *status = json_string_value(json_object_get(out, "status"));
    const char *message = json_string_value(json_object_get(out, "message"));
    bool ok = r->exited && r->exit_code == 0 && status && strcmp(status, "ok") == 0;
    char reason[512];
    if (r->spawn_errno || r->timed_out || r->too_large || r->killed || !r->exited)
        snprintf(reason, sizeof(reason), "%s", how);
    else if (r->out_len == 0)
        snprintf(reason, sizeof(reason), "plugin printed nothing (%s)", how);
    else if (!out)
        snprintf(reason, sizeof(reason), "plugin printed invalid JSON (%s)", how);
    else if (!status || (strcmp(status, "ok") != 0 && strcmp(status, "failed") != 0))
        snprintf(reason, sizeof(reason),
                 "plugin result has no \"status\" of \"ok\" or \"failed\" (%s)", how);
    else if (!ok)
        snprintf(reason, sizeof(reason), "%s%s%s", message ? message : "failed",
                 r->exit_code ? ": " : "", r->exit_code ? how : "");
    else
        snprintf(reason, sizeof(reason), "%s", message ? message : "ok");
    int rc = 0;
    json_t *result = json_object_get(out, "result");
    /* A node's own result (an automator's: its service's script) is the tenant's: it may
       not stand in for a provider's fact or a part of the config (facts.h). */
    bool from_provider = worker__is_provider_task(it->name);
    const char *reserved = NULL, *k;
    json_t *v;
    json_object_foreach(json_is_object(result) ? result : NULL, k, v)
    {
        if (!reserved && facts_is_reserved(k) && !(from_provider && facts_is_fact(k)))
            reserved = k;
    }
    if (reserved) {
        snprintf(reason, sizeof(reason),
                 "result key \"%.64s\" is reserved: the node's facts (its id, addresses, host "
                 "key, login) are its provider's, and the config's parts the engine's; a task's "
                 "result may not set them",
                 reserved);
        ok = false;
        result = NULL;
        rc = DRV_EINVAL;
    }
    json_t *sealed = NULL;
    if (json_is_object(result)) {
        sealed = json_deep_copy(result);
        json_t *sens = json_object_get(out, "sensitive");
        void *tmp;
        json_object_foreach_safe(sealed, tmp, k, v)
        {
            bool listed = false;
            size_t i;
            json_t *s;
            json_array_foreach(sens, i, s) listed |=
                json_is_string(s) && strcmp(json_string_value(s), k) == 0;
            if (!listed && !(p && worker__plugin_sensitive(p, k)))
                continue;
            if (!key) {
                /* No key to seal with: drop the secret rather than write it in clear. */
                json_object_del(sealed, k);
                if (rc == 0)
                    rc = DRV_EPERM;
                continue;
            }
            /* At its place: node/<cluster id>/<node id>, the result key (seal.h). */
            struct seal_place at = {it->tenant ? it->tenant : "", "node", node_name, k};
            char *enc = seal_value_at(key, &at, v);
            json_object_set_new(sealed, k, json_string(enc));
            free(enc);
        }
    }
    struct taskmsg_outcome o = {
        .ok = ok,
        .end_ms = r->end_ms,
        .message = reason,
        .how = how,
        .tail = tl > TAIL_IN_RECORD ? tail + tl - TAIL_IN_RECORD : tail,
        .result = sealed,
        .undo = json_object_get(out, "undo"),
    };
    taskmsg_run_end(rec, &o);
    json_decref(sealed);
    json_decref(out);
    return rc;
}
