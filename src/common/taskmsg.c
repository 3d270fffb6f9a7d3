/*
 * taskmsg: keys, names, the queue item's encoder and the checks of the
 * engine's and the workers' messages (taskmsg.h has the formats).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static bool version_readable(const json_t *v)
{
    json_int_t n = json_integer_value(v);
    return json_is_integer(v) && (n == TASKMSG_VERSION || (n == TASKMSG_VERSION - 1 && n >= 1));
}

char *taskmsg_item_encode(const struct taskmsg_item *in)
{
    json_t *it =
        json_pack("{s:i, s:s, s:s#, s:I, s:I, s:s, s:s, s:s, s:s, s:s, s:b, s:I}", "v",
                  TASKMSG_VERSION, "job", in->job, "phase", &in->phase, (int)1, "idx",
                  (json_int_t)in->idx, "attempt", (json_int_t)in->attempt, "task", in->task, "name",
                  in->name, "tenant", in->tenant, "cluster", in->cluster, "plugin", in->plugin,
                  "cleanup", in->cleanup, "nodes_rev", (json_int_t)in->nodes_rev);
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
    if (in->props)
        json_object_set(it, "props", in->props);
    if (in->nodeinfo)
        json_object_set(it, "nodeinfo", in->nodeinfo);
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
    if (!version_readable(json_object_get(item, "v")))
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
    if (!version_readable(json_object_get(j, "v")) ||
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
