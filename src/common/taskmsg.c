/*
 * taskmsg: keys, names, and the engine's and the workers' messages both
 * ways: queue items, run records, job contexts (taskmsg.h has the formats
 * and their versions).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "facts.h"
#include "taskmsg.h"

static bool digits(const char *s, size_t n)
{
    if (n == 0 || n > 18)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return true;
}

int taskmsg_key(char *buf, size_t n, const char *job, char phase, uint32_t idx, unsigned attempt)
{
    if (!job || !digits(job, strlen(job)) || (phase != 'f' && phase != 'r'))
        return DRV_EINVAL;
    int w = snprintf(buf, n, "%s.%c%u.%u", job, phase, idx, attempt);
    return w < 0 || (size_t)w >= n ? DRV_EINVAL : 0;
}

/* "<phase><idx>.<attempt>" at s; returns the end, or NULL. */
static const char *parse_pia(const char *s, char *phase, uint32_t *idx, unsigned *attempt)
{
    if (*s != 'f' && *s != 'r')
        return NULL;
    *phase = *s++;
    char *end;
    unsigned long i = strtoul(s, &end, 10);
    if (end == s || *end != '.' || i > UINT32_MAX)
        return NULL;
    s = end + 1;
    unsigned long a = strtoul(s, &end, 10);
    if (end == s || a > 1000)
        return NULL;
    *idx = (uint32_t)i;
    *attempt = (unsigned)a;
    return end;
}

int taskmsg_key_parse(const char *key, char job[24], char *phase, uint32_t *idx, unsigned *attempt)
{
    const char *dot = strchr(key, '.');
    if (!dot || !digits(key, (size_t)(dot - key)))
        return DRV_EINVAL;
    const char *end = parse_pia(dot + 1, phase, idx, attempt);
    if (!end || *end)
        return DRV_EINVAL;
    memcpy(job, key, (size_t)(dot - key));
    job[dot - key] = '\0';
    return 0;
}

int taskmsg_run_name(char *buf, size_t n, char phase, uint32_t idx, unsigned attempt,
                     const char *worker, unsigned nonce)
{
    int w = snprintf(buf, n, "%c%u.%u.%s.%08x", phase, idx, attempt, worker, nonce);
    return w < 0 || (size_t)w >= n ? DRV_EINVAL : 0;
}

int taskmsg_run_name_parse(const char *name, char *phase, uint32_t *idx, unsigned *attempt)
{
    const char *end = parse_pia(name, phase, idx, attempt);
    return end && *end == '.' ? 0 : DRV_EINVAL;
}

bool taskmsg_run_same_delivery(const char *a, const char *b)
{
    char ph;
    uint32_t idx;
    unsigned att;
    if (taskmsg_run_name_parse(a, &ph, &idx, &att) != 0 ||
        taskmsg_run_name_parse(b, &ph, &idx, &att) != 0)
        return false;
    const char *da = strrchr(a, '.'), *db = strrchr(b, '.');
    return da - a == db - b && strncmp(a, b, (size_t)(da - a)) == 0;
}

/* v is a version of a kind this build writes up to `latest` and reads down to 1. */
static bool version_readable(const json_t *v, int latest)
{
    json_int_t n = json_integer_value(v);
    return json_is_integer(v) && n >= 1 && n <= latest && n >= latest - 1;
}

/* A copy of a tenant's part of the node without its reserved keys (facts.h). */
static json_t *tenant_part(const json_t *o)
{
    json_t *c = json_is_object(o) ? json_copy((json_t *)o) : json_object();
    facts_drop_reserved(c, NULL, 0);
    return c;
}

char *taskmsg_item_encode(const struct taskmsg_item *in, int version)
{
    if (version < 1 || version > TASKMSG_ITEM_VERSION)
        version = TASKMSG_ITEM_VERSION;
    json_t *it =
        json_pack("{s:i, s:s, s:s#, s:I, s:I, s:s, s:s, s:s, s:s, s:s, s:b, s:I}", "v", version,
                  "job", in->job, "phase", &in->phase, (int)1, "idx", (json_int_t)in->idx,
                  "attempt", (json_int_t)in->attempt, "task", in->task, "name", in->name, "tenant",
                  in->tenant, "cluster", in->cluster, "plugin", in->plugin, "cleanup", in->cleanup,
                  "nodes_rev", (json_int_t)in->nodes_rev);
    if (!it)
        return NULL;
    if (in->node)
        json_object_set_new(it, "node", json_string(in->node));
    if (in->service)
        json_object_set_new(it, "service", json_string(in->service));
    if (in->fields)
        json_object_set(it, "fields", in->fields);
    if (in->config_override)
        json_object_set(it, "config_override", in->config_override);
    json_t *values = in->values ? tenant_part(in->values) : NULL;
    json_t *entries = in->entries ? tenant_part(in->entries) : NULL;
    json_t *facts = NULL;
    if (in->facts) {
        json_t *drop;
        facts_split(in->facts, &facts, &drop); /* only the fact keys */
        json_decref(drop);
    }
    bool has_types = in->hardwaretype || in->imagetype || in->services;
    if (version == 1) {
        /* What a build of version 1 merges: props, then nodeinfo over them. No reserved key
           is in nodeinfo, so the facts in props stay what the provider said. */
        if (values || facts) {
            json_t *props = values ? json_copy(values) : json_object();
            if (facts)
                json_object_update(props, facts);
            json_object_set_new(it, "props", props);
        }
        if (entries || has_types) {
            json_t *info = entries ? json_copy(entries) : json_object();
            if (in->hardwaretype)
                json_object_set_new(info, "hardwaretype", json_string(in->hardwaretype));
            if (in->imagetype)
                json_object_set_new(info, "imagetype", json_string(in->imagetype));
            if (in->services)
                json_object_set(info, "services", in->services);
            json_object_set_new(it, "nodeinfo", info);
        }
    } else {
        if (facts)
            json_object_set(it, "facts", facts);
        if (values)
            json_object_set(it, "values", values);
        if (entries)
            json_object_set(it, "entries", entries);
        if (in->hardwaretype)
            json_object_set_new(it, "hardwaretype", json_string(in->hardwaretype));
        if (in->imagetype)
            json_object_set_new(it, "imagetype", json_string(in->imagetype));
        if (in->services)
            json_object_set(it, "services", in->services);
    }
    json_decref(values);
    json_decref(entries);
    json_decref(facts);
    if (in->avoid)
        json_object_set_new(it, "avoid", json_string(in->avoid));
    if (in->timeout_ms > 0)
        json_object_set_new(it, "timeout_ms", json_integer(in->timeout_ms));
    char *out = json_dumps(it, JSON_COMPACT);
    json_decref(it);
    return out;
}

int taskmsg_item_check(const json_t *item, struct drv_err *err)
{
    if (!json_is_object(item))
        return drv_err_set(err, DRV_EINVAL, 0, "task item: not a JSON object");
    if (!version_readable(json_object_get(item, "v"), TASKMSG_ITEM_VERSION))
        return drv_err_set(err, DRV_EINVAL, 0,
                           "task item: field \"v\": not a version this build reads");
    static const char *const strs[] = {"job",    "phase",   "task",  "name",
                                       "tenant", "cluster", "plugin"};
    for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
        if (!json_is_string(json_object_get(item, strs[i])))
            return drv_err_set(err, DRV_EINVAL, 0, "task item: field \"%s\": expected a string",
                               strs[i]);
    if (!json_is_integer(json_object_get(item, "idx")) ||
        !json_is_integer(json_object_get(item, "attempt")))
        return drv_err_set(err, DRV_EINVAL, 0,
                           "task item: fields \"idx\" and \"attempt\": expected integers");
    const char *ph = json_string_value(json_object_get(item, "phase"));
    if (strcmp(ph, "f") != 0 && strcmp(ph, "r") != 0)
        return drv_err_set(err, DRV_EINVAL, 0,
                           "task item: field \"phase\": expected \"f\" or \"r\"");
    return 0;
}

static const char *str_or(const json_t *o, const char *k, const char *dflt);

/* Count and drop the reserved keys of part (a tenant's), noting the first in it. */
static void drop_noted(struct taskmsg_item *it, json_t *part)
{
    char first[64];
    size_t n = facts_drop_reserved(part, first, sizeof(first));
    if (n && !it->dropped)
        snprintf(it->dropped_key, sizeof(it->dropped_key), "%s", first);
    it->dropped += n;
}

int taskmsg_item_decode(json_t *item, struct taskmsg_item *it, struct drv_err *err)
{
    memset(it, 0, sizeof(*it));
    int rc = taskmsg_item_check(item, err);
    if (rc)
        return rc;
    it->root = json_incref(item);
    it->version = (int)json_integer_value(json_object_get(item, "v"));
    it->job = str_or(item, "job", "");
    it->phase = str_or(item, "phase", "f")[0];
    it->idx = (uint32_t)json_integer_value(json_object_get(item, "idx"));
    it->attempt = (unsigned)json_integer_value(json_object_get(item, "attempt"));
    it->task = str_or(item, "task", "");
    it->name = str_or(item, "name", "");
    it->tenant = str_or(item, "tenant", "");
    it->cluster = str_or(item, "cluster", "");
    it->plugin = str_or(item, "plugin", "");
    it->cleanup = json_is_true(json_object_get(item, "cleanup"));
    it->nodes_rev = json_integer_value(json_object_get(item, "nodes_rev"));
    it->node = str_or(item, "node", NULL);
    it->service = str_or(item, "service", NULL);
    it->fields = json_incref(json_object_get(item, "fields"));
    it->config_override = json_incref(json_object_get(item, "config_override"));
    it->avoid = str_or(item, "avoid", NULL);
    it->timeout_ms = json_integer_value(json_object_get(item, "timeout_ms"));
    const json_t *types;
    if (it->version == 1) {
        /* props: the facts by their keys, the rest values; nodeinfo: the entries and the
           names the engine set over them. */
        json_t *drop;
        facts_split(json_object_get(item, "props"), &it->facts, &drop);
        json_decref(drop);
        it->values = json_copy(json_object_get(item, "props"));
        if (!json_is_object(it->values)) {
            json_decref(it->values);
            it->values = json_object();
        }
        const char *k;
        json_t *v;
        void *tmp;
        json_object_foreach_safe(it->values, tmp, k, v)
        {
            if (facts_is_fact(k))
                json_object_del(it->values, k);
        }
        types = json_object_get(item, "nodeinfo");
        it->entries = json_is_object(types) ? json_copy((json_t *)types) : json_object();
        json_object_del(it->entries, "hardwaretype");
        json_object_del(it->entries, "imagetype");
        json_object_del(it->entries, "services");
    } else {
        json_t *drop;
        facts_split(json_object_get(item, "facts"), &it->facts, &drop);
        json_decref(drop);
        json_t *v = json_object_get(item, "values"), *e = json_object_get(item, "entries");
        it->values = json_is_object(v) ? json_copy(v) : json_object();
        it->entries = json_is_object(e) ? json_copy(e) : json_object();
        types = item;
    }
    drop_noted(it, it->values);
    drop_noted(it, it->entries);
    it->hardwaretype = str_or(types, "hardwaretype", NULL);
    it->imagetype = str_or(types, "imagetype", NULL);
    json_t *svcs = json_object_get(types, "services");
    it->services = json_is_array(svcs) ? json_incref(svcs) : json_array();
    return 0;
}

void taskmsg_item_clear(struct taskmsg_item *it)
{
    json_decref(it->fields);
    json_decref(it->config_override);
    json_decref(it->facts);
    json_decref(it->values);
    json_decref(it->entries);
    json_decref(it->services);
    json_decref(it->root);
    memset(it, 0, sizeof(*it));
}

static const char *str_or(const json_t *o, const char *k, const char *dflt)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : dflt;
}

int taskmsg_run_parse(const char *data, size_t len, struct taskmsg_run *r, struct drv_err *err)
{
    json_error_t je;
    json_t *j = json_loadb(data, len, 0, &je);
    int rc = taskmsg_run_of(j, r, err);
    json_decref(j);
    return rc;
}

int taskmsg_run_of(json_t *j, struct taskmsg_run *r, struct drv_err *err)
{
    memset(r, 0, sizeof(*r));
    if (!json_is_object(j))
        return drv_err_set(err, DRV_EINVAL, 0, "run record: not a JSON object");
    if (!version_readable(json_object_get(j, "v"), TASKMSG_RUN_VERSION) ||
        !json_is_string(json_object_get(j, "worker")) ||
        !json_is_integer(json_object_get(j, "start")))
        return drv_err_set(err, DRV_EINVAL, 0,
                           "run record: expected \"v\", \"worker\" and \"start\"");
    r->root = json_incref(j);
    r->worker = str_or(j, "worker", "");
    r->session = str_or(j, "session", "");
    r->item = str_or(j, "item", "");
    r->start_ms = json_integer_value(json_object_get(j, "start"));
    const char *status = json_string_value(json_object_get(j, "status"));
    r->ended = status != NULL;
    r->ok = status && strcmp(status, "ok") == 0;
    r->end_ms = json_integer_value(json_object_get(j, "end"));
    r->result = json_object_get(j, "result");
    if (r->result && !json_is_object(r->result))
        r->result = NULL;
    r->undo = json_object_get(j, "undo");
    r->message = str_or(j, "message", "");
    r->how = str_or(j, "how", "");
    r->tail = str_or(j, "tail", "");
    return 0;
}

void taskmsg_run_clear(struct taskmsg_run *r)
{
    json_decref(r->root);
    memset(r, 0, sizeof(*r));
}

json_t *taskmsg_run_start(const char *worker, const char *session, const char *item,
                          int64_t start_ms)
{
    return json_pack("{s:i, s:s, s:s, s:s, s:I}", "v", TASKMSG_RUN_VERSION, "worker", worker,
                     "session", session ? session : "", "item", item ? item : "", "start",
                     (json_int_t)start_ms);
}

void taskmsg_run_end(json_t *rec, const struct taskmsg_outcome *o)
{
    if (o->how)
        json_object_set_new(rec, "how", json_string(o->how));
    json_object_set_new(rec, "end", json_integer(o->end_ms));
    if (o->tail)
        json_object_set_new(rec, "tail", json_string(o->tail));
    json_object_set_new(rec, "status", json_string(o->ok ? "ok" : "failed"));
    json_object_set_new(rec, "message", json_string(o->message ? o->message : ""));
    if (o->result)
        json_object_set(rec, "result", o->result);
    if (o->undo)
        json_object_set(rec, "undo", o->undo);
}

static json_t *obj_or_empty(json_t *v)
{
    return json_is_object(v) ? json_incref(v) : json_object();
}

json_t *taskmsg_ctx_encode(const struct taskmsg_ctx *c)
{
    json_t *ctx =
        json_pack("{s:i, s:s, s:s, s:o, s:o, s:s, s:s, s:I}", "v", TASKMSG_CTX_VERSION,
                  "clustername", c->clustername ? c->clustername : "", "template",
                  c->template ? c->template : "", "cluster", obj_or_empty(c->cluster), "provider",
                  obj_or_empty(c->provider), "tenant", c->tenant ? c->tenant : "", "job",
                  c->job ? c->job : "", "nodes_chunks", (json_int_t)c->nodes_chunks);
    if (json_is_object(c->ssh))
        json_object_set(ctx, "ssh", c->ssh);
    if (json_is_object(c->resources))
        json_object_set(ctx, "resources", c->resources);
    return ctx;
}

int taskmsg_ctx_decode(const json_t *j, struct taskmsg_ctx *c, struct drv_err *err)
{
    memset(c, 0, sizeof(*c));
    if (!json_is_object(j))
        return drv_err_set(err, DRV_EINVAL, 0, "job context: not a JSON object");
    /* Contexts written before the version was checked said 1. */
    const json_t *v = json_object_get(j, "v");
    if (v && !version_readable(v, TASKMSG_CTX_VERSION))
        return drv_err_set(err, DRV_EINVAL, 0,
                           "job context: field \"v\": not a version this build reads");
    c->version = v ? (int)json_integer_value(v) : 1;
    c->clustername = str_or(j, "clustername", "");
    c->template = str_or(j, "template", "");
    c->tenant = str_or(j, "tenant", "");
    c->job = str_or(j, "job", "");
    c->nodes_chunks = json_integer_value(json_object_get(j, "nodes_chunks"));
    json_t *o = json_object_get(j, "cluster");
    c->cluster = json_is_object(o) ? o : NULL;
    o = json_object_get(j, "provider");
    c->provider = json_is_object(o) ? o : NULL;
    o = json_object_get(j, "ssh");
    c->ssh = json_is_object(o) ? o : NULL;
    o = json_object_get(j, "resources");
    c->resources = json_is_object(o) ? o : NULL;
    return 0;
}
