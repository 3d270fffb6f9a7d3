/*
 * cli_job: `drover job ...`, the jobs of the HTTP API (docs/api.md "Jobs").
 *
 *   list [--cluster ID]     the jobs, newest first, with their duration
 *   get ID                  the job, why each task waits, and the first failure: the task
 *                           that failed earliest (by the end of its first failed attempt),
 *                           with its own error and the tail of its stderr
 *   watch ID                one line per change until the job ends
 *   logs ID [TASK]          each attempt's outcome, message and stderr tail
 *                           (GET /v1/jobs/{id}/attempts); --follow prints attempts as they
 *                           end, until the job ends, reading only what is new
 *                           (attempts?since=, a cursor)
 *   plan ID                 the plan stage by stage (the planner's text), or JSON, or DOT
 *   cancel|pause|resume ID
 *
 * What a plugin prints on stdout is its result (key-values and a message); the
 * worker records the message, how the process ended and the last 4 KiB of its
 * stderr with each attempt, and that is what `logs` shows. Single-threaded;
 * `watch` and `logs --follow` block on the API's long-poll.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cli_http.h"
#include "cli_int.h"
#include "error.h"
#include "planner.h"
#include "xalloc.h"

static int usage_job(void)
{
    return cli_usage("job", NULL);
}

static int terminal(const char *status)
{
    return strcmp(status, "succeeded") == 0 || strcmp(status, "failed") == 0 ||
           strcmp(status, "rolled-back") == 0 || strcmp(status, "cancelled") == 0 ||
           strcmp(status, "needs-operator") == 0;
}

/* ---- watch --------------------------------------------------------------------------------- */

static int job_watch(const struct cli_opts *o, const char *id, long interval)
{
    char *p = xasprintf("/v1/jobs/%s?tasks=none", id);
    char last[256] = "";
    int rc = 1;
    for (;;) {
        json_t *out;
        int st = cli_call(o, "GET", p, NULL, &out, NULL);
        if (st < 0)
            break;
        if (st >= 400) {
            rc = cli_api_error(st, out);
            json_decref(out);
            break;
        }
        const char *status = cli__str(out, "status");
        json_t *pr = json_object_get(out, "progress"),
               *rb = json_object_get(out, "rollback_progress");
        char line[256];
        int w = snprintf(line, sizeof(line), "job %s %s: %s, %s/%s tasks done", id,
                         cli__str(out, "operation"), status, cli__str(pr, "done"),
                         cli__str(pr, "total"));
        if (rb && w > 0 && (size_t)w < sizeof(line))
            snprintf(line + w, sizeof(line) - (size_t)w, ", rollback %s/%s", cli__str(rb, "done"),
                     cli__str(rb, "total"));
        if (strcmp(line, last) != 0) {
            if (o->json) {
                char *s = json_dumps(out, JSON_COMPACT | JSON_SORT_KEYS);
                printf("%s\n", s);
                free(s);
            } else {
                time_t now = time(NULL);
                char ts[32];
                struct tm tm;
                strftime(ts, sizeof(ts), "%H:%M:%S", localtime_r(&now, &tm));
                printf("%s  %s\n", ts, line);
            }
            fflush(stdout);
            snprintf(last, sizeof(last), "%s", line);
        }
        if (terminal(status)) {
            rc = strcmp(status, "succeeded") == 0 ? 0 : 1;
            if (rc && json_is_string(json_object_get(out, "error")))
                fprintf(stderr,
                        "drover: job %s %s: %s\n(drover job get %s: its first failure; drover "
                        "job logs %s: every attempt's output)\n",
                        id, status, cli__str(out, "error"), id, id);
            json_decref(out);
            break;
        }
        json_decref(out);
        sleep((unsigned)interval);
    }
    free(p);
    return rc;
}

/* ---- attempts ------------------------------------------------------------------------------ */

/* The attempts of one task ({"items": [...]}, new reference), or NULL once told on stderr. */
static json_t *attempts_of(const struct cli_opts *o, const char *job, const char *phase,
                           const char *task)
{
    char *t = cli__uri_encode(task);
    char *p = xasprintf("/v1/jobs/%s/attempts?task=%s&phase=%s", job, t, phase);
    json_t *out = NULL;
    cli__call(o, "GET", p, NULL, &out);
    free(p);
    free(t);
    return out;
}

static bool attempt_ended(const json_t *a)
{
    return json_is_string(json_object_get(a, "ended_at"));
}

/* The attempt's stderr tail, its last max_lines lines (all when 0), each prefixed. */
static void print_tail(const char *tail, const char *prefix, size_t max_lines)
{
    if (!tail || !*tail)
        return;
    const char *start = tail;
    if (max_lines) {
        size_t lines = 0;
        const char *end = tail + strlen(tail);
        if (end > tail && end[-1] == '\n')
            end--;
        for (const char *q = end; q > tail; q--)
            if (q[-1] == '\n' && ++lines == max_lines) {
                start = q;
                break;
            }
    }
    for (const char *q = start; *q;) {
        size_t n = strcspn(q, "\n");
        printf("%s%.*s\n", prefix, (int)n, q);
        q += n;
        if (*q)
            q++;
    }
}

static void print_attempt(const char *task, const char *phase, const json_t *a)
{
    char t0[40], t1[40], d[16] = "";
    const char *started = cli__str(a, "started_at"), *ended = cli__str(a, "ended_at");
    int64_t s = cli_parse_time(started), e = cli_parse_time(ended);
    if (s >= 0 && e >= s)
        snprintf(d, sizeof(d), " (%s)", cli_fmt_duration(e - s, t1, sizeof(t1)));
    printf("==> %s attempt %s%s on %s: %s, %s", task, cli__str(a, "attempt"),
           strcmp(phase, "r") == 0 ? " (rollback)" : "", cli__str(a, "worker"),
           cli__str(a, "status"), cli_fmt_time(started, t0, sizeof(t0)));
    if (attempt_ended(a))
        printf(" to %s%s", cli_fmt_time(ended, t1, sizeof(t1)), d);
    printf("\n");
    if (json_is_string(json_object_get(a, "message")) && *cli__str(a, "message"))
        printf("    message: %s\n", cli__str(a, "message"));
    if (json_is_string(json_object_get(a, "how")) && *cli__str(a, "how"))
        printf("    how: %s\n", cli__str(a, "how"));
    const char *tail = json_string_value(json_object_get(a, "output_tail"));
    if (tail && *tail) {
        printf("    stderr:\n");
        print_tail(tail, "    | ", 0);
    }
}

/*
 * The first failure of a job: among the tasks whose own attempts failed
 * (status "failed"; "failed-dependency" is a consequence), forward phase first,
 * the one whose first failed attempt ended earliest. Its attempts are returned
 * in *attempts (new reference) with the task in *task; NULL when none.
 */
static const json_t *first_failure(const struct cli_opts *o, const char *job, const json_t *tasks,
                                   json_t **attempts)
{
    const json_t *best = NULL;
    int64_t best_t = 0;
    *attempts = NULL;
    for (int pass = 0; pass < 2 && !best; pass++) {
        const char *phase = pass == 0 ? "f" : "r";
        size_t i, looked = 0;
        json_t *t;
        json_array_foreach(tasks, i, t)
        {
            if (strcmp(cli__str(t, "status"), "failed") != 0 ||
                strcmp(cli__str(t, "phase"), phase) != 0)
                continue;
            if (++looked > 50) /* a job with more failed tasks: the first 50 in plan order */
                break;
            json_t *at = attempts_of(o, job, phase, cli__str(t, "id"));
            int64_t when = -1;
            size_t k;
            json_t *a;
            json_array_foreach(json_object_get(at, "items"), k, a)
            {
                if (strcmp(cli__str(a, "status"), "succeeded") == 0 || !attempt_ended(a))
                    continue;
                when = cli_parse_time(cli__str(a, "ended_at"));
                break;
            }
            if (when < 0)
                when = INT64_MAX; /* failed with no recorded attempt: after any that has one */
            if (!best || when < best_t) {
                best = t;
                best_t = when;
                json_decref(*attempts);
                *attempts = at;
            } else {
                json_decref(at);
            }
        }
    }
    return best;
}

static void print_first_failure(const struct cli_opts *o, const char *job, const json_t *tasks)
{
    json_t *at;
    const json_t *t = first_failure(o, job, tasks, &at);
    if (!t)
        return;
    json_t *items = json_object_get(at, "items"), *last = NULL, *a;
    size_t k;
    json_array_foreach(items, k, a) if (strcmp(cli__str(a, "status"), "succeeded") != 0 &&
                                        attempt_ended(a)) last = a;
    char when[40];
    if (last) {
        printf("first failure: %s (attempt %s on %s, %s): %s\n", cli__str(t, "id"),
               cli__str(last, "attempt"), cli__str(last, "worker"),
               cli_fmt_time(cli__str(last, "ended_at"), when, sizeof(when)),
               json_is_string(json_object_get(last, "message")) ? cli__str(last, "message")
                                                                : cli__str(last, "how"));
        print_tail(json_string_value(json_object_get(last, "output_tail")), "  | ", 5);
    } else {
        printf("first failure: %s (no attempt recorded)\n", cli__str(t, "id"));
    }
    printf("  (drover job logs %s %s: every attempt's output)\n", job, cli__str(t, "id"));
    json_decref(at);
}

/* ---- logs ---------------------------------------------------------------------------------- */

struct logs {
    const struct cli_opts *o;
    const char *job, *task;
    long attempt; /* 0: every attempt */
};

/* Print the attempts of the job's tasks; 1 on an API error (told), 0 otherwise. */
static int logs_pass(struct logs *l, const json_t *tasks, bool *found)
{
    size_t i;
    json_t *t;
    json_array_foreach(tasks, i, t)
    {
        const char *id = cli__str(t, "id"), *phase = cli__str(t, "phase");
        if (l->task && strcmp(l->task, id) != 0)
            continue;
        *found = true;
        if (json_integer_value(json_object_get(t, "attempts")) == 0 && !l->task)
            continue;
        json_t *at = attempts_of(l->o, l->job, phase, id);
        if (!at)
            return 1;
        size_t k;
        json_t *a;
        json_array_foreach(json_object_get(at, "items"), k, a)
        {
            if (l->attempt && (long)json_integer_value(json_object_get(a, "attempt")) != l->attempt)
                continue;
            print_attempt(id, phase, a);
        }
        json_decref(at);
        fflush(stdout);
    }
    return 0;
}

/*
 * --follow: the attempts written since the last cursor (GET /v1/jobs/{id}/attempts?since=,
 * docs/api.md "Jobs"), each printed when it has ended, in the order they ended; between
 * two reads, the job's summary long-polled until it changes. Each poll costs what is new,
 * never the job's size. Ends with the job: 0 when it succeeded.
 */
static int job_logs_follow(const struct cli_opts *o, const char *job, const char *task,
                           long attempt)
{
    char *t = task ? cli__uri_encode(task) : NULL;
    char *cursor = xstrdup("0"), *rev = NULL;
    int rc = 0;
    for (;;) {
        char *p = xasprintf("/v1/jobs/%s/attempts?since=%s&limit=500%s%s", job, cursor,
                            t ? "&task=" : "", t ? t : "");
        json_t *out;
        rc = cli__call(o, "GET", p, NULL, &out);
        free(p);
        if (rc)
            break;
        size_t k;
        json_t *a;
        json_array_foreach(json_object_get(out, "items"), k, a)
        {
            if (!attempt_ended(a))
                continue; /* printed once it ends */
            if (attempt && (long)json_integer_value(json_object_get(a, "attempt")) != attempt)
                continue;
            print_attempt(cli__str(a, "task"), cli__str(a, "phase"), a);
        }
        fflush(stdout);
        free(cursor);
        cursor = xstrdup(cli__str(out, "cursor"));
        bool more = json_is_true(json_object_get(out, "more"));
        char status[32];
        snprintf(status, sizeof(status), "%s", cli__str(out, "status"));
        json_decref(out);
        if (more)
            continue;
        if (terminal(status)) {
            rc = strcmp(status, "succeeded") == 0 ? 0 : 1;
            if (rc)
                fprintf(stderr, "drover: job %s %s\n", job, status);
            break;
        }
        /* Wait for a change of the job's summary (the API's long-poll), then look again. */
        for (;;) {
            p = rev ? xasprintf("/v1/jobs/%s?tasks=none&wait=10&revision=%s", job, rev)
                    : xasprintf("/v1/jobs/%s?tasks=none", job);
            rc = cli__call(o, "GET", p, NULL, &out);
            free(p);
            if (rc)
                break;
            const char *r = json_string_value(json_object_get(out, "revision"));
            bool changed = !rev || !r || strcmp(rev, r) != 0;
            free(rev);
            rev = r ? xstrdup(r) : NULL;
            json_decref(out);
            if (changed || !r)
                break;
        }
        if (rc)
            break;
    }
    free(rev);
    free(cursor);
    free(t);
    return rc;
}

static int job_logs(const struct cli_opts *o, const char *job, const char *task, long attempt,
                    bool follow)
{
    if (follow)
        return job_logs_follow(o, job, task, attempt);
    struct logs l = {.o = o, .job = job, .task = task, .attempt = attempt};
    char *full = xasprintf("/v1/jobs/%s", job);
    json_t *out;
    bool found = false;
    int rc = cli__call(o, "GET", full, NULL, &out);
    free(full);
    if (rc)
        return rc;
    rc = logs_pass(&l, json_object_get(out, "tasks"), &found);
    json_decref(out);
    if (rc == 0 && task && !found) {
        fprintf(stderr, "drover: job %s has no task \"%s\"\n", job, task);
        rc = 1;
    }
    return rc;
}

/* ---- plan ---------------------------------------------------------------------------------- */

static int job_plan(const struct cli_opts *o, const char *id, const char *format)
{
    bool text = !o->json && (!format || strcmp(format, "text") == 0);
    char *p = xasprintf("/v1/jobs/%s/plan?format=%s", id,
                        text || !format || strcmp(format, "text") == 0 ? "json" : format);
    json_t *out;
    char *raw;
    int st = cli_call(o, "GET", p, NULL, &out, &raw);
    free(p);
    int rc = 0;
    if (st < 0) {
        rc = 1;
    } else if (st >= 400) {
        rc = cli_api_error(st, out);
    } else if (!text) {
        fputs(raw ? raw : "", stdout);
    } else {
        struct planner_plan *pl = NULL;
        struct planner_stages *stages = NULL;
        struct drv_err err;
        drv_err_clear(&err);
        if (planner_plan_from_json(out, &pl, &err) != 0 || planner_stages(pl, &stages, &err) != 0) {
            fprintf(stderr, "drover: job %s's plan: %s\n", id, err.msg);
            rc = 1;
        } else {
            char *s = planner_stages_to_text(pl, stages);
            fputs(s, stdout);
            free(s);
        }
        planner_stages_free(stages);
        planner_plan_free(pl);
    }
    json_decref(out);
    free(raw);
    return rc;
}

/* ---- get and list -------------------------------------------------------------------------- */

/* "took 1m05s" for a job that ended, "running for 3s" for one that did not. */
static void add_duration(json_t *job)
{
    int64_t s = cli_parse_time(cli__str(job, "started_at")),
            e = cli_parse_time(cli__str(job, "ended_at"));
    char d[32];
    if (s < 0)
        json_object_set_new(job, "duration", json_string("-"));
    else if (e >= s)
        json_object_set_new(job, "duration", json_string(cli_fmt_duration(e - s, d, sizeof(d))));
    else {
        char r[48];
        snprintf(r, sizeof(r), "%s so far",
                 cli_fmt_duration((int64_t)time(NULL) - s, d, sizeof(d)));
        json_object_set_new(job, "duration", json_string(r));
    }
}

static int job_get(const struct cli_opts *o, const char *id)
{
    static const char *const task_cols[] = {"phase",  "id",      "status", "attempts",
                                            "worker", "waiting", NULL};
    char *p = xasprintf("/v1/jobs/%s", id);
    json_t *out;
    int rc = cli__call(o, "GET", p, NULL, &out);
    free(p);
    if (rc)
        return rc;
    if (o->json) {
        cli__print_json(out);
        json_decref(out);
        return 0;
    }
    json_t *pr = json_object_get(out, "progress");
    char c[40];
    add_duration(out);
    printf("job %s: %s of cluster %s, %s (%s/%s tasks done)\ncreated %s by %s", id,
           cli__str(out, "operation"), cli__str(out, "cluster"), cli__str(out, "status"),
           cli__str(pr, "done"), cli__str(pr, "total"),
           cli_fmt_time(cli__str(out, "created_at"), c, sizeof(c)), cli__str(out, "requested_by"));
    if (strcmp(cli__str(out, "duration"), "-") != 0)
        printf(", %s %s", json_is_string(json_object_get(out, "ended_at")) ? "took" : "running",
               cli__str(out, "duration"));
    printf("\n");
    if (json_is_string(json_object_get(out, "error")))
        printf("error: %s\n", cli__str(out, "error"));
    if (json_is_string(json_object_get(out, "control")))
        printf("asked to %s\n", cli__str(out, "control"));
    print_first_failure(o, id, json_object_get(out, "tasks"));
    /* Why each task that waits does (the API's explanation), as one column. */
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(out, "tasks"), i, t)
    {
        const char *why = json_string_value(json_object_get(json_object_get(t, "why"), "text"));
        json_object_set_new(t, "waiting", json_string(why ? why : ""));
    }
    if (json_array_size(json_object_get(out, "tasks")))
        cli__table(json_object_get(out, "tasks"), task_cols);
    json_decref(out);
    return 0;
}

static int job_list(const struct cli_opts *o, const char *cluster)
{
    static const char *const cols[] = {"id",         "cluster",  "operation",    "status",
                                       "created_at", "duration", "requested_by", NULL};
    char *p = cluster ? xasprintf("/v1/jobs?cluster=%s", cluster) : xstrdup("/v1/jobs");
    json_t *out;
    int rc = cli__call(o, "GET", p, NULL, &out);
    free(p);
    if (rc)
        return rc;
    if (o->json) {
        cli__print_json(out);
    } else {
        size_t i;
        json_t *j;
        json_array_foreach(json_object_get(out, "items"), i, j) add_duration(j);
        cli__table(json_object_get(out, "items"), cols);
    }
    json_decref(out);
    return 0;
}

int cli_job_main(int argc, char **argv)
{
    struct cli_opts o;
    argc = cli_take_opts(argc, argv, &o);
    if (argc < 2)
        return usage_job();
    const char *verb = argv[1];
    const char *cluster = cli__flag(&argc, argv, "--cluster");
    const char *format = cli__flag(&argc, argv, "--format");
    const char *ival = cli__flag(&argc, argv, "--interval");
    const char *att = cli__flag(&argc, argv, "--attempt");
    bool follow = cli__switch(&argc, argv, "--follow") || cli__switch(&argc, argv, "-f");
    if (strcmp(verb, "list") == 0 && argc == 2)
        return job_list(&o, cluster);
    if (strcmp(verb, "logs") == 0 && (argc == 3 || argc == 4)) {
        long attempt = 0;
        if (att && (cli__parse_int(att, &attempt) != 0 || attempt < 1)) {
            fprintf(stderr, "drover: --attempt: expected an attempt number (1, 2, ...)\n");
            return 2;
        }
        return job_logs(&o, argv[2], argc == 4 ? argv[3] : NULL, attempt, follow);
    }
    if (argc != 3)
        return usage_job();
    const char *id = argv[2];
    if (strcmp(verb, "watch") == 0) {
        long interval = 1;
        if (ival && (cli__parse_int(ival, &interval) != 0 || interval < 1))
            return usage_job();
        return job_watch(&o, id, interval);
    }
    if (strcmp(verb, "get") == 0)
        return job_get(&o, id);
    if (strcmp(verb, "plan") == 0) {
        if (format && strcmp(format, "text") != 0 && strcmp(format, "json") != 0 &&
            strcmp(format, "dot") != 0)
            return usage_job();
        return job_plan(&o, id, format);
    }
    if (strcmp(verb, "cancel") == 0 || strcmp(verb, "pause") == 0 || strcmp(verb, "resume") == 0) {
        char *p = xasprintf("/v1/jobs/%s/%s", id, verb);
        json_t *out;
        int rc = cli__call(&o, "POST", p, NULL, &out);
        free(p);
        if (rc)
            return rc;
        if (o.json)
            cli__print_json(out);
        else
            printf("job %s: %s asked (the job is %s; its owner acts on it)\n", id, verb,
                   cli__str(out, "status"));
        json_decref(out);
        return 0;
    }
    return usage_job();
}
