/*
 * tasklog: the task log's znodes and the job's state znode, as JSON.
 *
 * The task log of a plan of N tasks is ceil(N / 512) znodes
 * (jobs/<id>/log/f<k> for the forward plan, r<k> for the rollback plan), each
 * holding 512 tasks as three strings of one character per task, so that a
 * 140,007-task plan is 274 znodes of about 1.6 KB (invariant 7, docs/architecture.md):
 *
 *   {"format":1,"first":1024,"n":512,
 *    "s":"SSSqq.....",   the state letter (fsm.c: . q S F K C)
 *    "a":"1112100000",   the attempt (dispatch count), base 62
 *    "f":"0001000000"}   the failures, base 62
 *
 * Only what cannot be derived is written: waiting, pending and
 * failed-dependency are recomputed from the plan, queued and running from
 * the queue and the run records. A new owner reads the chunks and knows
 * which tasks are done (never run again) and which attempt is in flight.
 *
 * Format versions (seed 004, rolling upgrades; src/common/format.h): a
 * build reads DROVER_FORMAT_VERSION and the one before, and writes a job's
 * records in the job's own format (chosen when it started), so nodes of
 * versions N and N+1 can own each other's jobs while a fleet is upgraded.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "engine_int.h"
#include "xalloc.h"

static const char b62[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

char engine__b62(unsigned v)
{
    return v < 62 ? b62[v] : b62[61];
}

int engine__b62_value(char c)
{
    const char *p = c ? strchr(b62, c) : NULL;
    return p ? (int)(p - b62) : -1;
}

static bool format_readable(json_int_t f)
{
    return DROVER_FORMAT_READABLE(f);
}

char *engine__log_encode(const struct engine_task_rec *recs, size_t first, size_t n, int format)
{
    char *s = xmalloc(3 * n + 3);
    char *a = s + n + 1, *f = a + n + 1;
    for (size_t i = 0; i < n; i++) {
        s[i] = engine_task_letter((enum engine_task_state)recs[first + i].state);
        a[i] = engine__b62(recs[first + i].attempt);
        f[i] = engine__b62(recs[first + i].failures);
    }
    s[n] = a[n] = f[n] = '\0';
    char *out =
        xasprintf("{\"format\":%d,\"first\":%zu,\"n\":%zu,\"s\":\"%s\",\"a\":\"%s\",\"f\":\"%s\"}",
                  format > 0 ? format : DROVER_FORMAT_VERSION, first, n, s, a, f);
    free(s);
    return out;
}

static int letter_state(char c, enum engine_task_state *st)
{
    switch (c) {
    case '.':
        *st = ENGINE_TS_WAITING;
        return 0;
    case 'q':
        *st = ENGINE_TS_QUEUED;
        return 0;
    case 'S':
        *st = ENGINE_TS_SUCCEEDED;
        return 0;
    case 'F':
        *st = ENGINE_TS_FAILED;
        return 0;
    case 'K':
        *st = ENGINE_TS_SKIPPED;
        return 0;
    case 'C':
        *st = ENGINE_TS_CANCELLED;
        return 0;
    default:
        return -1;
    }
}

int engine__log_decode(const char *json, size_t len, size_t first, size_t n,
                       struct engine_task_rec *recs, struct drv_err *err)
{
    json_error_t je;
    json_t *j = json_loadb(json, len, 0, &je);
    if (!json_is_object(j)) {
        json_decref(j);
        return drv_err_set(err, DRV_EINVAL, 0, "task log chunk: not a JSON object");
    }
    int rc = 0;
    json_int_t format = json_integer_value(json_object_get(j, "format"));
    const char *s = json_string_value(json_object_get(j, "s"));
    const char *a = json_string_value(json_object_get(j, "a"));
    const char *f = json_string_value(json_object_get(j, "f"));
    if (!format_readable(format))
        rc = drv_err_set(err, DRV_EINVAL, 0,
                         "task log chunk: format %lld is not one this build reads",
                         (long long)format);
    else if (json_integer_value(json_object_get(j, "first")) != (json_int_t)first ||
             json_integer_value(json_object_get(j, "n")) != (json_int_t)n)
        rc = drv_err_set(err, DRV_EINVAL, 0, "task log chunk: expected tasks %zu..%zu", first,
                         first + n);
    else if (!s || !a || !f || strlen(s) != n || strlen(a) != n || strlen(f) != n)
        rc = drv_err_set(err, DRV_EINVAL, 0, "task log chunk: expected %zu letters in s, a and f",
                         n);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        enum engine_task_state st;
        int av = engine__b62_value(a[i]), fv = engine__b62_value(f[i]);
        if (letter_state(s[i], &st) != 0 || av < 0 || fv < 0) {
            rc = drv_err_set(err, DRV_EINVAL, 0, "task log chunk: bad entry for task %zu",
                             first + i);
            break;
        }
        recs[i].state = (uint8_t)st;
        recs[i].attempt = (uint8_t)av;
        recs[i].failures = (uint8_t)fv;
    }
    json_decref(j);
    return rc;
}

char *engine__state_encode(const struct engine_state *st, const char *owner, int64_t token)
{
    json_t *j =
        json_pack("{s:i, s:s, s:b, s:b, s:i, s:i, s:s, s:s, s:I, s:s, s:s, s:I}", "format",
                  st->format > 0 ? st->format : DROVER_FORMAT_VERSION, "phase",
                  engine_phase_name(st->phase), "cancel", st->cancel, "paused", st->paused, "tasks",
                  (int)st->tasks, "rb_tasks", (int)st->rb_tasks, "plan_sha", st->plan_sha, "rb_sha",
                  st->rb_sha, "nodes_rev", (json_int_t)st->nodes_rev, "error", st->error, "owner",
                  owner ? owner : "", "token", (json_int_t)token);
    char *s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    return s;
}

int engine__state_decode(const char *json, size_t len, struct engine_state *st, struct drv_err *err)
{
    memset(st, 0, sizeof(*st));
    json_error_t je;
    json_t *j = json_loadb(json, len, 0, &je);
    if (!json_is_object(j)) {
        json_decref(j);
        return drv_err_set(err, DRV_EINVAL, 0, "job state: not a JSON object");
    }
    int rc = 0;
    json_int_t format = json_integer_value(json_object_get(j, "format"));
    int ph = engine_phase_parse(json_string_value(json_object_get(j, "phase")));
    json_int_t tasks = json_integer_value(json_object_get(j, "tasks"));
    json_int_t rb = json_integer_value(json_object_get(j, "rb_tasks"));
    const char *sha = json_string_value(json_object_get(j, "plan_sha"));
    const char *rsha = json_string_value(json_object_get(j, "rb_sha"));
    if (!format_readable(format))
        rc = drv_err_set(err, DRV_EINVAL, 0, "job state: format %lld is not one this build reads",
                         (long long)format);
    else if (ph < 0)
        rc = drv_err_set(err, DRV_EINVAL, 0, "job state: unknown phase");
    else if (tasks < 0 || tasks > UINT32_MAX || rb < 0 || rb > UINT32_MAX || !sha ||
             strlen(sha) > 64 || (rsha && strlen(rsha) > 64))
        rc = drv_err_set(err, DRV_EINVAL, 0, "job state: bad task counts or digests");
    if (rc == 0) {
        st->format = (int)format;
        st->phase = (enum engine_phase)ph;
        st->cancel = json_is_true(json_object_get(j, "cancel"));
        st->paused = json_is_true(json_object_get(j, "paused"));
        st->tasks = (uint32_t)tasks;
        st->rb_tasks = (uint32_t)rb;
        snprintf(st->plan_sha, sizeof(st->plan_sha), "%s", sha);
        snprintf(st->rb_sha, sizeof(st->rb_sha), "%s", rsha ? rsha : "");
        st->nodes_rev = (uint64_t)json_integer_value(json_object_get(j, "nodes_rev"));
        const char *e = json_string_value(json_object_get(j, "error"));
        snprintf(st->error, sizeof(st->error), "%s", e ? e : "");
    }
    json_decref(j);
    return rc;
}
