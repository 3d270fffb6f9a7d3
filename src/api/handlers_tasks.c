/*
 * handlers_tasks: a job's tasks for large jobs (docs/api.md "Jobs"):
 *
 *   GET /v1/jobs/{id}/tasks?state=&phase=&node=&service=&action=&cursor=&limit=
 *       a page of the tasks, in plan order, each waiting one with its "why";
 *   GET /v1/jobs/{id}/tasks/groups?by=service|node&phase=&q=&limit=
 *       the tasks' counts by state, grouped (the dashboard's grouped view);
 *   GET /v1/jobs/{id} (the full read) streamed: the summary, then the tasks a
 *       page at a time as the client takes them (Transfer-Encoding: chunked).
 *
 * Each is bounded in droverd's memory by its page (STREAM_PAGE tasks for the
 * full read, at most TASKS_LIMIT_MAX for a page), whatever the job's size.
 * The explanations come from the compact form (explain.c): a page's tasks,
 * their dependencies' rows and the phase's busy tasks, read per page.
 *
 * The full read as a state machine over the call's passes (each pass one run
 * of the handler on the store's pool, the loop writing its part between):
 *
 *   first pass: summary (tenant and owner checked) -> head text + page 1
 *   next pass:  page k after the cursor -> text; a short page -> the tail too,
 *               stream_last
 *
 * The tasks are read page by page, each page as it is then: a task that
 * changes during the read shows the state its page saw (each task appears
 * once, in plan order); "progress" is the summary's, from the first pass.
 *
 * Pool-thread code.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "handlers.h"
#include "store.h"
#include "strbuf.h"
#include "xalloc.h"

#define TASKS_LIMIT_DEFAULT 100
#define TASKS_LIMIT_MAX 1000
#define GROUPS_LIMIT_DEFAULT 60
#define GROUPS_LIMIT_MAX 1000
#define STREAM_PAGE 2000

static const char *const task_states[] = {
    "waiting", "pending",           "queued",  "running",   "succeeded",
    "failed",  "failed-dependency", "skipped", "cancelled", NULL};

/* ---- cursors ------------------------------------------------------------------------- */

int api__task_cursor_parse(const char *s, char phase[2], long *idx)
{
    if (!s || (s[0] != 'f' && s[0] != 'r') || s[1] != '.' || !isdigit((unsigned char)s[2]))
        return -1;
    long v = 0;
    const char *p = s + 2;
    for (; *p; p++) {
        if (!isdigit((unsigned char)*p) || p - (s + 2) >= 9)
            return -1;
        v = v * 10 + (*p - '0');
    }
    if (p - (s + 2) > 1 && s[2] == '0') /* no leading zeros: one spelling per position */
        return -1;
    phase[0] = s[0];
    phase[1] = '\0';
    *idx = v;
    return 0;
}

void api__task_cursor_format(const json_t *task, char out[16])
{
    const char *ph = json_string_value(json_object_get(task, "phase"));
    snprintf(out, 16, "%c.%" JSON_INTEGER_FORMAT, ph && ph[0] == 'r' ? 'r' : 'f',
             json_integer_value(json_object_get(task, "idx")));
}

/* "{a,b}" from "a,b" when every name is a task state; NULL otherwise. Caller frees. */
char *api__task_states(const char *list)
{
    struct strbuf b = STRBUF_INIT;
    strbuf_addch(&b, '{');
    const char *p = list;
    int n = 0;
    while (*p) {
        size_t len = strcspn(p, ",");
        bool known = false;
        for (const char *const *st = task_states; *st && !known; st++)
            known = strlen(*st) == len && strncmp(*st, p, len) == 0;
        if (!known) {
            strbuf_release(&b);
            return NULL;
        }
        if (n++)
            strbuf_addch(&b, ',');
        strbuf_add(&b, p, len);
        p += len;
        if (*p == ',' && *++p == '\0') { /* a trailing comma */
            strbuf_release(&b);
            return NULL;
        }
    }
    if (!n) {
        strbuf_release(&b);
        return NULL;
    }
    strbuf_addch(&b, '}');
    return strbuf_detach(&b, NULL);
}

/* ---- explanations for a page ------------------------------------------------------------ */

/* Add "why" to the page's waiting tasks, from the rows they need (store_tasks.c). */
static int explain_page(PGconn *conn, const char *job_id, const json_t *summary, json_t *items,
                        struct drv_err *err)
{
    const char *status = json_string_value(json_object_get(summary, "status"));
    bool has_rb = json_object_get(summary, "rollback_progress") != NULL;
    static const char *const phases[] = {"f", "r"};
    for (int k = 0; k < 2; k++) {
        json_t *list = json_array();
        struct strbuf idx = STRBUF_INIT;
        size_t i;
        json_t *t;
        bool any_waiting = false;
        json_array_foreach(items, i, t)
        {
            const char *ph = json_string_value(json_object_get(t, "phase"));
            if (!ph || strcmp(ph, phases[k]) != 0)
                continue;
            json_array_append(list, t);
            const char *st = json_string_value(json_object_get(t, "status"));
            if (!st || (strcmp(st, "waiting") != 0 && strcmp(st, "pending") != 0))
                continue;
            any_waiting = true;
            size_t j;
            json_t *d;
            json_array_foreach(json_object_get(t, "deps"), j, d) strbuf_addf(
                &idx, "%s%" JSON_INTEGER_FORMAT, idx.len ? "," : "", json_integer_value(d));
        }
        int rc = 0;
        json_t *deps = NULL, *busy = NULL;
        if (json_array_size(list)) {
            char *arr = xasprintf("{%s}", idx.len ? idx.buf : "");
            if (any_waiting)
                rc = store_task_deps(conn, job_id, phases[k], arr, &deps, err);
            else
                deps = json_object();
            free(arr);
            if (rc == 0)
                rc = store_task_busy(conn, job_id, phases[k], &busy, err);
            if (rc == 0)
                api__explain_tasks(
                    list, api__explain_status(status ? status : "", phases[k], has_rb), deps, busy);
        }
        json_decref(deps);
        json_decref(busy);
        json_decref(list);
        strbuf_release(&idx);
        if (rc)
            return rc;
    }
    return 0;
}

/* The job, if the caller may see it: its summary (O(1) in its size). */
static int job_summary(PGconn *conn, struct call *c, json_t **job, struct drv_err *err)
{
    int rc = store_job_get_summary(conn, c->who.tenant_id, call_owner(c), c->seg[2], job, err);
    if (rc == 0) {
        json_object_del(*job, "has_plan");
        json_object_del(*job, "task_changes");
    }
    return rc;
}

/* ---- GET /v1/jobs/{id}/tasks ------------------------------------------------------------- */

static int query_limit(struct call *c, long def, long max, long *out)
{
    char *v = call_query(c, "limit"), *end = NULL;
    *out = def;
    if (!v)
        return 0;
    long n = strtol(v, &end, 10);
    bool bad = !*v || *end || n < 1 || n > max;
    free(v);
    if (bad)
        return call_fail(c, 400, "invalid", "limit", "query parameter \"limit\": 1 to %ld", max);
    *out = n;
    return 0;
}

int api__h_job_tasks(PGconn *conn, struct call *c, struct drv_err *err)
{
    char *state = call_query(c, "state"), *phase = call_query(c, "phase");
    char *node = call_query(c, "node"), *service = call_query(c, "service");
    char *action = call_query(c, "action"), *cursor = call_query(c, "cursor");
    char *states = NULL, after_phase[2] = "";
    long after_idx = -1, limit = 0;
    json_t *job = NULL, *items = NULL;
    int rc = query_limit(c, TASKS_LIMIT_DEFAULT, TASKS_LIMIT_MAX, &limit);
    if (rc == 0 && state && !(states = api__task_states(state)))
        rc = call_fail(c, 400, "invalid", "state",
                       "query parameter \"state\": task states separated by commas (waiting, "
                       "pending, queued, running, succeeded, failed, failed-dependency, "
                       "skipped, cancelled)");
    if (rc == 0 && phase && strcmp(phase, "f") != 0 && strcmp(phase, "r") != 0)
        rc = call_fail(c, 400, "invalid", "phase", "query parameter \"phase\": f or r");
    if (rc == 0 && cursor && api__task_cursor_parse(cursor, after_phase, &after_idx) != 0)
        rc = call_fail(c, 400, "invalid", "cursor",
                       "query parameter \"cursor\": not a cursor this API gave (\"next\")");
    const char *names[] = {"node", "service", "action"};
    const char *vals[] = {node, service, action};
    for (int i = 0; rc == 0 && i < 3; i++) /* node= and service= (empty): tasks without one */
        if (vals[i] && ((i == 2 && !*vals[i]) || strlen(vals[i]) > 256))
            rc = call_fail(c, 400, "invalid", names[i], "query parameter \"%s\": %s256 bytes",
                           names[i], i == 2 ? "1 to " : "at most ");
    if (rc == 0)
        rc = job_summary(conn, c, &job, err);
    if (rc == 0) {
        struct store_task_filter f = {phase, states, node, service, action};
        rc = store_task_page(conn, c->seg[2], &f, after_phase, after_idx, limit, &items, err);
    }
    if (rc == 0)
        rc = explain_page(conn, c->seg[2], job, items, err);
    if (rc == 0) {
        char next[16] = "";
        if ((long)json_array_size(items) == limit)
            api__task_cursor_format(json_array_get(items, json_array_size(items) - 1), next);
        c->out =
            json_pack("{s:s, s:O, s:O, s:o, s:s?}", "job", c->seg[2], "status",
                      json_object_get(job, "status"), "progress", json_object_get(job, "progress"),
                      "items", items, "next", next[0] ? next : NULL);
        if (!json_object_get(c->out, "next"))
            json_object_set_new(c->out, "next", json_null());
        items = NULL;
        c->status = 200;
    }
    json_decref(items);
    json_decref(job);
    free(state);
    free(states);
    free(phase);
    free(node);
    free(service);
    free(action);
    free(cursor);
    return rc;
}

/* ---- GET /v1/jobs/{id}/tasks/groups ------------------------------------------------------- */

int api__h_job_task_groups(PGconn *conn, struct call *c, struct drv_err *err)
{
    char *by = call_query(c, "by"), *phase = call_query(c, "phase"), *q = call_query(c, "q");
    long limit = 0;
    json_t *job = NULL, *groups = NULL;
    int rc = query_limit(c, GROUPS_LIMIT_DEFAULT, GROUPS_LIMIT_MAX, &limit);
    if (rc == 0 && by && strcmp(by, "service") != 0 && strcmp(by, "node") != 0)
        rc = call_fail(c, 400, "invalid", "by", "query parameter \"by\": service or node");
    if (rc == 0 && phase && strcmp(phase, "f") != 0 && strcmp(phase, "r") != 0)
        rc = call_fail(c, 400, "invalid", "phase", "query parameter \"phase\": f or r");
    if (rc == 0 && q && strlen(q) > 256)
        rc = call_fail(c, 400, "invalid", "q", "query parameter \"q\": at most 256 bytes");
    if (rc == 0)
        rc = job_summary(conn, c, &job, err);
    if (rc == 0)
        rc = store_task_groups(conn, c->seg[2], phase ? phase : "f", by ? by : "service",
                               q && *q ? q : NULL, limit, &groups, err);
    if (rc == 0) {
        json_int_t matched =
            json_integer_value(json_object_get(json_array_get(groups, 0), "groups"));
        size_t i;
        json_t *g;
        json_array_foreach(groups, i, g) json_object_del(g, "groups");
        c->out = json_pack("{s:s, s:s, s:s, s:I, s:o}", "job", c->seg[2], "by", by ? by : "service",
                           "phase", phase ? phase : "f", "groups", matched, "items", groups);
        c->status = 200;
    }
    json_decref(job);
    free(by);
    free(phase);
    free(q);
    return rc;
}

/* ---- the full read, streamed -------------------------------------------------------------- */

struct job_stream {
    json_t *summary; /* for the explanations of each page */
    char after_phase[2];
    long after_idx;
};

static void stream_free(void *arg)
{
    struct job_stream *s = arg;
    json_decref(s->summary);
    free(s);
}

/* One page after the cursor, as JSON text (items joined by commas) into b. */
static int stream_page(PGconn *conn, struct call *c, struct job_stream *s, struct strbuf *b,
                       bool first, struct drv_err *err)
{
    json_t *items;
    int rc = store_task_page(conn, c->seg[2], NULL, s->after_phase, s->after_idx, STREAM_PAGE,
                             &items, err);
    if (rc == 0)
        rc = explain_page(conn, c->seg[2], s->summary, items, err);
    if (rc) {
        json_decref(items);
        return rc;
    }
    api_redact(items);
    size_t i;
    json_t *t;
    json_array_foreach(items, i, t)
    {
        char *text = json_dumps(t, JSON_COMPACT | JSON_SORT_KEYS);
        if (!first || i)
            strbuf_addch(b, ',');
        strbuf_addstr(b, text);
        free(text);
    }
    size_t n = json_array_size(items);
    if (n) {
        char cur[16];
        api__task_cursor_format(json_array_get(items, n - 1), cur);
        api__task_cursor_parse(cur, s->after_phase, &s->after_idx);
    }
    c->stream_last = n < STREAM_PAGE;
    json_decref(items);
    if (c->stream_last)
        strbuf_addstr(b, "]}\n");
    return 0;
}

int api__h_job_get_full(PGconn *conn, struct call *c, struct drv_err *err)
{
    struct job_stream *s = c->work;
    struct strbuf b = STRBUF_INIT;
    bool first = s == NULL;
    if (first) {
        json_t *job;
        int rc = job_summary(conn, c, &job, err);
        if (rc)
            return rc;
        s = xcalloc(1, sizeof(*s));
        s->summary = job;
        s->after_idx = -1;
        c->work = s;
        c->work_free = stream_free;
        /* The summary's text without its closing brace, then the tasks' array. */
        json_t *head = json_deep_copy(job);
        size_t len;
        char *text = api__call_serialise(head, &len);
        json_decref(head);
        if (len && text[len - 1] == '\n')
            len--;
        if (len && text[len - 1] == '}')
            len--; /* "{...}\n" -> "{..." */
        strbuf_add(&b, text, len);
        free(text);
        strbuf_addstr(&b, len > 1 ? ",\"tasks\":[" : "\"tasks\":[");
        c->stream = true;
        c->status = 200;
    }
    int rc = stream_page(conn, c, s, &b, first, err);
    if (rc) {
        strbuf_release(&b);
        return rc;
    }
    c->text = strbuf_detach(&b, &c->text_len);
    return 0;
}
