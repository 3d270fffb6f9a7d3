/*
 * task: from a queue item to a plugin's task JSON, and from a plugin's exit
 * to a run record's outcome. Pure (no I/O): unit-tested alone.
 *
 * The queue item (src/common/taskmsg.h) carries what is particular to one
 * task: its names, the action's fields, its node's key-values and types; the
 * job's context (jobs/<id>/ctx) carries the cluster-wide rest. The plugin
 * gets both merged in the shape of docs/plugins.md.
 *
 * The outcome: success needs exit status 0 and a result JSON object with
 * "status": "ok" on standard output. Anything else is a failure with a reason
 * a person can act on ("plugin printed invalid JSON", "timed out after ...").
 * Sensitive result keys are sealed before the record leaves the worker.
 */
#include <stdio.h>
#include <string.h>

#include "seal.h"
#include "taskmsg.h"
#include "worker_int.h"
#include "xalloc.h"

#define TAIL_IN_RECORD 2048

static void set_str(json_t *o, const char *k, const json_t *from, const char *fk)
{
    json_t *v = json_object_get(from, fk);
    if (json_is_string(v))
        json_object_set_new(o, k, json_string(json_string_value(v)));
}

json_t *worker__task_json(const json_t *item, const json_t *ctx, const json_t *nodes)
{
    char key[80] = "";
    const char *ph = json_string_value(json_object_get(item, "phase"));
    taskmsg_key(key, sizeof(key), json_string_value(json_object_get(item, "job")), ph ? ph[0] : 'f',
                (uint32_t)json_integer_value(json_object_get(item, "idx")),
                (unsigned)json_integer_value(json_object_get(item, "attempt")));
    json_t *t = json_object();
    json_object_set_new(t, "format", json_integer(1));
    json_object_set_new(t, "taskId", json_string(key));
    set_str(t, "jobId", item, "job");
    set_str(t, "clusterId", item, "cluster");
    set_str(t, "tenant", item, "tenant");
    set_str(t, "task", item, "task");
    set_str(t, "taskName", item, "name");
    set_str(t, "nodeId", item, "node");
    set_str(t, "service", item, "service");
    json_object_set_new(t, "attempt",
                        json_integer(json_integer_value(json_object_get(item, "attempt"))));
    json_object_set_new(t, "cleanup", json_boolean(json_is_true(json_object_get(item, "cleanup"))));
    json_object_set_new(t, "timeout_ms",
                        json_integer(json_integer_value(json_object_get(item, "timeout_ms"))));

    json_t *config = json_object();
    /* The node's key-values first: what the cluster-wide keys do not name. */
    json_t *props = json_object_get(item, "props");
    if (json_is_object(props))
        json_object_update(config, props);
    json_t *info = json_object_get(item, "nodeinfo");
    if (json_is_object(info))
        json_object_update(config, info);
    set_str(config, "clustername", ctx, "clustername");
    json_t *cluster = json_object_get(item, "config_override");
    if (!json_is_object(cluster))
        cluster = json_object_get(ctx, "cluster");
    json_object_set_new(config, "cluster",
                        json_is_object(cluster) ? json_deep_copy(cluster) : json_object());
    json_t *provider = json_object_get(ctx, "provider");
    json_object_set_new(config, "provider",
                        json_is_object(provider) ? json_deep_copy(provider) : json_object());
    json_t *ssh = json_object_get(ctx, "ssh");
    if (json_is_object(ssh))
        json_object_set_new(config, "ssh", json_deep_copy(ssh));
    json_t *fields = json_object_get(item, "fields");
    const char *name = json_string_value(json_object_get(item, "name"));
    if (worker__is_provider_task(name)) {
        if (json_is_object(fields))
            json_object_update(json_object_get(config, "provider"), fields);
    } else {
        const char *svc = json_string_value(json_object_get(item, "service"));
        json_t *action = json_object();
        set_str(action, "type", item, "plugin");
        json_object_set_new(action, "fields",
                            json_is_object(fields) ? json_deep_copy(fields) : json_object());
        json_object_set_new(config, "service",
                            json_pack("{s:s, s:o}", "name", svc ? svc : "", "action", action));
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
    if (rc)
        return rc;
    /* The node's own key-values: config's top level, but for the parts named above (and
       service and nodes, which hold nothing sealed: they stay as they are). */
    static const char *const parts[] = {"clustername", "cluster", "provider", "ssh",
                                        "service",     "nodes",   NULL};
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
                         const json_t *item, json_t *rec)
{
    char node_name[300];
    snprintf(node_name, sizeof(node_name), "%s/%s", str_or_empty(item, "cluster"),
             str_or_empty(item, "node"));
    char how[256];
    worker__proc_describe(r, timeout_ms, how, sizeof(how));
    json_object_set_new(rec, "how", json_string(how));
    json_object_set_new(rec, "end", json_integer(r->end_ms));
    const char *tail = r->err_tail ? r->err_tail : "";
    size_t tl = strlen(tail);
    json_object_set_new(rec, "tail",
                        json_string(tl > TAIL_IN_RECORD ? tail + tl - TAIL_IN_RECORD : tail));
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
    json_object_set_new(rec, "status", json_string(ok ? "ok" : "failed"));
    json_object_set_new(rec, "message", json_string(reason));
    int rc = 0;
    json_t *result = json_object_get(out, "result");
    if (json_is_object(result)) {
        json_t *sealed = json_deep_copy(result);
        json_t *sens = json_object_get(out, "sensitive");
        const char *k;
        json_t *v;
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
                rc = DRV_EPERM;
                continue;
            }
            /* At its place: node/<cluster id>/<node id>, the result key (seal.h). */
            struct seal_place at = {str_or_empty(item, "tenant"), "node", node_name, k};
            char *enc = seal_value_at(key, &at, v);
            json_object_set_new(sealed, k, json_string(enc));
            free(enc);
        }
        json_object_set_new(rec, "result", sealed);
    }
    json_t *undo = json_object_get(out, "undo");
    if (undo)
        json_object_set(rec, "undo", undo);
    json_decref(out);
    return rc;
}
