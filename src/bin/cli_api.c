/*
 * cli_api: the `drover` subcommands that speak the HTTP API (docs/api.md).
 *
 *   drover KIND list|get NAME|create FILE|replace NAME FILE|delete NAME
 *       KIND: providers hardwaretypes imagetypes services clustertemplates partialtemplates
 *   drover import DIR|FILE          drover export
 *   drover cluster list|get ID|create ...|delete ID|OPERATION ID [...]
 *   drover job list [--cluster ID]|get ID|watch ID|plan ID [--format dot]|cancel|pause|resume
 * ID drover preview ...              (POST /v1/plans) drover members|workers|queues|whoami drover
 * tenant create NAME|list  drover user create NAME --role R [--tenant T]|list drover token create
 *
 * Every command takes --url, --token (or DROVER_URL, DROVER_TOKEN) and --json
 * (print the API's JSON as is; otherwise tables for people). Exit status: 0
 * ok, 1 API error (the message printed), 2 usage error.
 */
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cli_http.h"
#include "clock.h"
#include "xalloc.h"

/* ---- output ---------------------------------------------------------------- */

static const char *str(const json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    static char buf[8][64];
    static int i;
    if (json_is_string(v))
        return json_string_value(v);
    if (json_is_integer(v)) {
        i = (i + 1) % 8;
        snprintf(buf[i], sizeof(buf[i]), "%lld", (long long)json_integer_value(v));
        return buf[i];
    }
    if (json_is_real(v)) {
        i = (i + 1) % 8;
        snprintf(buf[i], sizeof(buf[i]), "%.3g", json_real_value(v));
        return buf[i];
    }
    if (json_is_true(v))
        return "true";
    if (json_is_false(v))
        return "false";
    return "-";
}

static void print_json(const json_t *j)
{
    char *s = json_dumps(j, JSON_INDENT(2) | JSON_SORT_KEYS);
    printf("%s\n", s ? s : "null");
    free(s);
}

/* Print rows of `items` as a table of the given columns (headers upper-cased keys). */
static void table(const json_t *items, const char *const *cols)
{
    size_t ncols = 0, w[16] = {0};
    while (cols[ncols])
        ncols++;
    for (size_t c = 0; c < ncols; c++)
        w[c] = strlen(cols[c]);
    size_t i;
    json_t *r;
    json_array_foreach(items, i, r) for (size_t c = 0; c < ncols; c++)
    {
        size_t l = strlen(str(r, cols[c]));
        if (l > w[c])
            w[c] = l > 60 ? 60 : l;
    }
    for (size_t c = 0; c < ncols; c++) {
        for (const char *p = cols[c]; *p; p++)
            putchar(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
        printf("%*s", c + 1 < ncols ? (int)(w[c] - strlen(cols[c]) + 2) : 0, "");
    }
    putchar('\n');
    json_array_foreach(items, i, r)
    {
        for (size_t c = 0; c < ncols; c++)
            printf("%-*.60s%s", c + 1 < ncols ? (int)w[c] : 0, str(r, cols[c]),
                   c + 1 < ncols ? "  " : "");
        putchar('\n');
    }
}

/* Do the call and print: table cols for {"items": [...]}, else JSON. */
/*
 * One API call: 0 with the reply in *out (the caller's, may be NULL for an
 * empty body), or 1 once the failure has been told on stderr (*out NULL).
 */
static int call(const struct cli_opts *o, const char *method, const char *path, const json_t *body,
                json_t **out)
{
    int st = cli_call(o, method, path, body, out, NULL);
    if (st < 0)
        return 1;
    if (st >= 400) {
        int rc = cli_api_error(st, *out);
        json_decref(*out);
        *out = NULL;
        return rc;
    }
    return 0;
}

static int run(const struct cli_opts *o, const char *method, const char *path, const json_t *body,
               const char *const *cols, const char *list_key)
{
    json_t *out;
    int rc = call(o, method, path, body, &out);
    if (rc)
        return rc;
    if (o->json || !cols) {
        if (out)
            print_json(out);
    } else {
        table(json_object_get(out, list_key ? list_key : "items"), cols);
    }
    json_decref(out);
    return 0;
}

static json_t *load_file(const char *path)
{
    json_error_t e;
    json_t *j = strcmp(path, "-") == 0 ? json_loadf(stdin, 0, &e) : json_load_file(path, 0, &e);
    if (!j)
        fprintf(stderr, "drover: %s:%d: %s\n", path, e.line, e.text);
    return j;
}

/* ---- entities ------------------------------------------------------------------- */

static int usage_entity(const char *kind)
{
    fprintf(stderr,
            "usage: drover %s list | get NAME | create FILE | replace NAME FILE | delete NAME\n"
            "       (FILE is JSON, - for standard input; --json, --url, --token anywhere)\n",
            kind);
    return 2;
}

int cli_entity_main(int argc, char **argv)
{
    struct cli_opts o;
    argc = cli_take_opts(argc, argv, &o);
    const char *kind = argv[0];
    static const char *const cols[] = {"name", "description", NULL};
    if (argc < 2)
        return usage_entity(kind);
    const char *verb = argv[1];
    char *path = NULL;
    int rc;
    if (strcmp(verb, "list") == 0 && argc == 2) {
        path = xasprintf("/v1/%s", kind);
        rc = run(&o, "GET", path, NULL, cols, NULL);
    } else if (strcmp(verb, "get") == 0 && argc == 3) {
        path = xasprintf("/v1/%s/%s", kind, argv[2]);
        rc = run(&o, "GET", path, NULL, NULL, NULL);
    } else if (strcmp(verb, "delete") == 0 && argc == 3) {
        path = xasprintf("/v1/%s/%s", kind, argv[2]);
        rc = run(&o, "DELETE", path, NULL, NULL, NULL);
    } else if ((strcmp(verb, "create") == 0 && argc == 3) ||
               (strcmp(verb, "replace") == 0 && argc == 4)) {
        int create = verb[0] == 'c';
        json_t *body = load_file(argv[create ? 2 : 3]);
        if (!body)
            return 2;
        path = create ? xasprintf("/v1/%s", kind) : xasprintf("/v1/%s/%s", kind, argv[2]);
        rc = run(&o, create ? "POST" : "PUT", path, body, NULL, NULL);
        json_decref(body);
    } else {
        return usage_entity(kind);
    }
    free(path);
    return rc;
}

/* ---- import / export ------------------------------------------------------------------ */

static const char *const kinds[] = {"providers", "hardwaretypes",    "imagetypes",
                                    "services",  "clustertemplates", "partialtemplates",
                                    NULL};

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A catalogue directory (the Coopr layout) as one import body. */
static json_t *load_dir(const char *dir)
{
    json_t *all = json_object();
    for (const char *const *k = kinds; *k; k++) {
        char *sub = xasprintf("%s/%s", dir, *k);
        DIR *d = opendir(sub);
        json_t *arr = json_array();
        if (d) {
            char **names = NULL;
            size_t n = 0, cap = 0;
            struct dirent *e;
            while ((e = readdir(d))) {
                size_t l = strlen(e->d_name);
                if (l > 5 && strcmp(e->d_name + l - 5, ".json") == 0) {
                    XGROW(names, cap, n + 1);
                    names[n++] = xstrdup(e->d_name);
                }
            }
            closedir(d);
            qsort(names, n, sizeof(*names), cmp_str);
            for (size_t i = 0; i < n; i++) {
                char *f = xasprintf("%s/%s", sub, names[i]);
                json_t *j = arr ? load_file(f) : NULL;
                if (j)
                    json_array_append_new(arr, j);
                else {
                    json_decref(arr);
                    arr = NULL;
                }
                free(f);
                free(names[i]);
            }
            free(names);
        }
        free(sub);
        if (!arr) {
            json_decref(all);
            return NULL;
        }
        json_object_set_new(all, *k, arr);
    }
    return all;
}

int cli_import_main(int argc, char **argv)
{
    struct cli_opts o;
    argc = cli_take_opts(argc, argv, &o);
    int help = argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0);
    if (argc != 2 || help) {
        fprintf(help ? stdout : stderr,
                "usage: drover import DIR|FILE   (DIR: providers/, hardwaretypes/, ...)\n");
        return help ? 0 : 2;
    }
    DIR *d = opendir(argv[1]);
    json_t *body;
    if (d) {
        closedir(d);
        body = load_dir(argv[1]);
    } else {
        body = load_file(argv[1]);
    }
    if (!body)
        return 2;
    json_t *out;
    int rc = call(&o, "POST", "/v1/import", body, &out);
    json_decref(body);
    if (rc)
        return rc;
    if (o.json) {
        print_json(out);
    } else {
        const char *k;
        json_t *v;
        json_object_foreach(json_object_get(out, "imported"), k, v)
            printf("imported %lld %s\n", (long long)json_integer_value(v), k);
    }
    json_decref(out);
    return 0;
}

int cli_export_main(int argc, char **argv)
{
    struct cli_opts o;
    argc = cli_take_opts(argc, argv, &o);
    if (argc != 1) {
        fprintf(stderr, "usage: drover export   (the catalogue as one JSON document)\n");
        return 2;
    }
    o.json = 1;
    return run(&o, "GET", "/v1/export", NULL, NULL, NULL);
}

/* ---- clusters ---------------------------------------------------------------------------- */

/* Take "--flag VALUE" from argv; NULL when absent. */
static const char *flag(int *argc, char **argv, const char *name)
{
    for (int i = 1; i + 1 < *argc; i++)
        if (strcmp(argv[i], name) == 0) {
            const char *v = argv[i + 1];
            for (int j = i; j + 2 <= *argc; j++)
                argv[j] = argv[j + 2];
            *argc -= 2;
            return v;
        }
    return NULL;
}

/* Take a "--switch" with no value from argv; whether it was there. */
static bool take_switch(int *argc, char **argv, const char *name)
{
    for (int i = 1; i < *argc; i++)
        if (strcmp(argv[i], name) == 0) {
            for (int j = i; j + 1 <= *argc; j++)
                argv[j] = argv[j + 1];
            *argc -= 1;
            return true;
        }
    return false;
}

static json_t *csv_list(const char *s)
{
    json_t *a = json_array();
    char *copy = xstrdup(s), *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save))
        json_array_append_new(a, json_string(t));
    free(copy);
    return a;
}

static int parse_int(const char *s, long *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end)
        return -1;
    *out = v;
    return 0;
}

static int usage_cluster(void)
{
    fprintf(
        stderr,
        "usage: drover cluster list\n"
        "       drover cluster get ID\n"
        "       drover cluster create --name N --template T --nodes K [--provider P]\n"
        "              [--hardwaretype H] [--imagetype I] [--services a,b] [--config FILE]\n"
        "       drover cluster delete ID\n"
        "       drover cluster expand|shrink ID --nodes K\n"
        "       drover cluster addservices|removeservices ID --services a,b\n"
        "       drover cluster configure ID --config FILE [--restart] [--services a,b]\n"
        "       drover cluster start|stop|restart ID [--services a,b]\n"
        "       drover cluster upgrade ID [--template-version V]\n"
        "       drover cluster recreate ID   (a failed create, with the failed layout excluded)\n"
        "       drover cluster snapshots ID [JOB]   (the state after each successful operation)\n");
    return 2;
}

/* Build a create or operation body from flags; NULL (usage printed) on error. */
static json_t *cluster_body(int *argc, char **argv, int create)
{
    json_t *b = json_object();
    const char *v;
    if (create) {
        if ((v = flag(argc, argv, "--name")))
            json_object_set_new(b, "name", json_string(v));
        if ((v = flag(argc, argv, "--template")))
            json_object_set_new(b, "template", json_string(v));
        const char *keys[] = {"provider", "hardwaretype", "imagetype", NULL};
        for (const char **k = keys; *k; k++) {
            char f[32];
            snprintf(f, sizeof(f), "--%s", *k);
            if ((v = flag(argc, argv, f)))
                json_object_set_new(b, *k, json_string(v));
        }
    }
    if ((v = flag(argc, argv, "--nodes"))) {
        long n;
        if (parse_int(v, &n) != 0) {
            fprintf(stderr, "drover: --nodes: expected a number, got \"%s\"\n", v);
            json_decref(b);
            return NULL;
        }
        json_object_set_new(b, "nodes", json_integer(n));
    }
    if ((v = flag(argc, argv, "--template-version"))) {
        long n;
        if (parse_int(v, &n) != 0) {
            fprintf(stderr, "drover: --template-version: expected a number\n");
            json_decref(b);
            return NULL;
        }
        json_object_set_new(b, "template_version", json_integer(n));
    }
    if ((v = flag(argc, argv, "--services")))
        json_object_set_new(b, "services", csv_list(v));
    if ((v = flag(argc, argv, "--config"))) {
        json_t *c = load_file(v);
        if (!c) {
            json_decref(b);
            return NULL;
        }
        json_object_set_new(b, "config", c);
    }
    if (take_switch(argc, argv, "--restart"))
        json_object_set_new(b, "restart", json_true());
    return b;
}

static int print_accepted(const struct cli_opts *o, int st, json_t *out)
{
    if (st >= 400) {
        int rc = cli_api_error(st, out);
        json_decref(out);
        return rc;
    }
    if (o->json)
        print_json(out);
    else
        printf("cluster %s (%s): job %s %s %s\n", str(json_object_get(out, "cluster"), "id"),
               str(json_object_get(out, "cluster"), "name"), str(json_object_get(out, "job"), "id"),
               str(json_object_get(out, "job"), "operation"),
               str(json_object_get(out, "job"), "status"));
    json_decref(out);
    return 0;
}

int cli_cluster_main(int argc, char **argv)
{
    struct cli_opts o;
    argc = cli_take_opts(argc, argv, &o);
    static const char *const cols[] = {"id", "name", "template", "size", "status", "owner", NULL};
    if (argc < 2)
        return usage_cluster();
    const char *verb = argv[1];
    if (strcmp(verb, "list") == 0 && argc == 2)
        return run(&o, "GET", "/v1/clusters", NULL, cols, NULL);
    if (strcmp(verb, "get") == 0 && argc == 3) {
        char *p = xasprintf("/v1/clusters/%s", argv[2]);
        int rc = run(&o, "GET", p, NULL, NULL, NULL);
        free(p);
        return rc;
    }
    if (strcmp(verb, "snapshots") == 0 && (argc == 3 || argc == 4)) {
        static const char *const scols[] = {"job", "operation", "taken_at", "nodes", NULL};
        char *p = argc == 3 ? xasprintf("/v1/clusters/%s/snapshots", argv[2])
                            : xasprintf("/v1/clusters/%s/snapshots/%s", argv[2], argv[3]);
        int rc = run(&o, "GET", p, NULL, argc == 3 ? scols : NULL, NULL);
        free(p);
        return rc;
    }
    int create = strcmp(verb, "create") == 0;
    json_t *body = cluster_body(&argc, argv, create);
    if (!body)
        return 2;
    if (argc != (create ? 2 : 3)) {
        json_decref(body);
        return usage_cluster();
    }
    char *p = create                        ? xstrdup("/v1/clusters")
              : strcmp(verb, "delete") == 0 ? xasprintf("/v1/clusters/%s", argv[2])
                                            : xasprintf("/v1/clusters/%s/%s", argv[2], verb);
    json_t *out;
    int st = cli_call(&o, strcmp(verb, "delete") == 0 ? "DELETE" : "POST", p, body, &out, NULL);
    free(p);
    json_decref(body);
    if (st < 0)
        return 1;
    return print_accepted(&o, st, out);
}

int cli_preview_main(int argc, char **argv)
{
    struct cli_opts o;
    argc = cli_take_opts(argc, argv, &o);
    json_t *body = cluster_body(&argc, argv, 1);
    if (!body)
        return 2;
    if (argc != 1) {
        json_decref(body);
        fprintf(stderr, "usage: drover preview --name N --template T --nodes K [...]"
                        "   (as cluster create; nothing runs)\n");
        return 2;
    }
    o.json = 1;
    int rc = run(&o, "POST", "/v1/plans", body, NULL, NULL);
    json_decref(body);
    return rc;
}

/* ---- jobs ----------------------------------------------------------------------------------- */

static int usage_job(void)
{
    fprintf(stderr, "usage: drover job list [--cluster ID]\n"
                    "       drover job get ID\n"
                    "       drover job watch ID [--interval SECONDS]\n"
                    "       drover job plan ID [--format json|dot]\n"
                    "       drover job cancel|pause|resume ID\n");
    return 2;
}

static int terminal(const char *status)
{
    return strcmp(status, "succeeded") == 0 || strcmp(status, "failed") == 0 ||
           strcmp(status, "rolled-back") == 0 || strcmp(status, "cancelled") == 0 ||
           strcmp(status, "needs-operator") == 0;
}

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
        const char *status = str(out, "status");
        json_t *pr = json_object_get(out, "progress"),
               *rb = json_object_get(out, "rollback_progress");
        char line[256];
        int w = snprintf(line, sizeof(line), "job %s %s: %s, %s/%s tasks done", id,
                         str(out, "operation"), status, str(pr, "done"), str(pr, "total"));
        if (rb && w > 0 && (size_t)w < sizeof(line))
            snprintf(line + w, sizeof(line) - (size_t)w, ", rollback %s/%s", str(rb, "done"),
                     str(rb, "total"));
        if (strcmp(line, last) != 0) {
            if (o->json) {
                char *s = json_dumps(out, JSON_COMPACT | JSON_SORT_KEYS);
                printf("%s\n", s);
                free(s);
            } else {
                time_t now = time(NULL);
                char ts[16];
                strftime(ts, sizeof(ts), "%H:%M:%S", localtime(&now));
                printf("%s  %s\n", ts, line);
            }
            fflush(stdout);
            snprintf(last, sizeof(last), "%s", line);
        }
        if (terminal(status)) {
            rc = strcmp(status, "succeeded") == 0 ? 0 : 1;
            if (rc && json_is_string(json_object_get(out, "error")))
                fprintf(stderr, "drover: job %s %s: %s\n", id, status, str(out, "error"));
            json_decref(out);
            break;
        }
        json_decref(out);
        sleep((unsigned)interval);
    }
    free(p);
    return rc;
}

int cli_job_main(int argc, char **argv)
{
    struct cli_opts o;
    argc = cli_take_opts(argc, argv, &o);
    static const char *const cols[] = {"id",           "cluster",    "operation", "status",
                                       "requested_by", "created_at", NULL};
    static const char *const task_cols[] = {"phase",  "id",      "status", "attempts",
                                            "worker", "waiting", NULL};
    if (argc < 2)
        return usage_job();
    const char *verb = argv[1];
    const char *cluster = flag(&argc, argv, "--cluster");
    const char *format = flag(&argc, argv, "--format");
    const char *ival = flag(&argc, argv, "--interval");
    if (strcmp(verb, "list") == 0 && argc == 2) {
        char *p = cluster ? xasprintf("/v1/jobs?cluster=%s", cluster) : xstrdup("/v1/jobs");
        int rc = run(&o, "GET", p, NULL, cols, NULL);
        free(p);
        return rc;
    }
    if (argc != 3)
        return usage_job();
    const char *id = argv[2];
    if (strcmp(verb, "watch") == 0) {
        long interval = 1;
        if (ival && (parse_int(ival, &interval) != 0 || interval < 1))
            return usage_job();
        return job_watch(&o, id, interval);
    }
    if (strcmp(verb, "get") == 0) {
        char *p = xasprintf("/v1/jobs/%s", id);
        json_t *out;
        int rc = call(&o, "GET", p, NULL, &out);
        free(p);
        if (rc)
            return rc;
        if (o.json) {
            print_json(out);
        } else {
            json_t *pr = json_object_get(out, "progress");
            printf("job %s: %s of cluster %s, %s (%s/%s tasks done)\ncreated %s by %s\n", id,
                   str(out, "operation"), str(out, "cluster"), str(out, "status"), str(pr, "done"),
                   str(pr, "total"), str(out, "created_at"), str(out, "requested_by"));
            if (json_is_string(json_object_get(out, "error")))
                printf("error: %s\n", str(out, "error"));
            if (json_is_string(json_object_get(out, "control")))
                printf("asked to %s\n", str(out, "control"));
            /* Why each task that waits does (the API's explanation), as one column. */
            size_t i;
            json_t *t;
            json_array_foreach(json_object_get(out, "tasks"), i, t)
            {
                const char *why =
                    json_string_value(json_object_get(json_object_get(t, "why"), "text"));
                json_object_set_new(t, "waiting", json_string(why ? why : ""));
            }
            if (json_array_size(json_object_get(out, "tasks")))
                table(json_object_get(out, "tasks"), task_cols);
        }
        json_decref(out);
        return 0;
    }
    if (strcmp(verb, "plan") == 0) {
        if (format && strcmp(format, "json") != 0 && strcmp(format, "dot") != 0)
            return usage_job();
        char *p = xasprintf("/v1/jobs/%s/plan?format=%s", id, format ? format : "json");
        json_t *out;
        char *raw;
        int st = cli_call(&o, "GET", p, NULL, &out, &raw);
        free(p);
        int rc = 0;
        if (st < 0)
            rc = 1;
        else if (st >= 400)
            rc = cli_api_error(st, out);
        else
            fputs(raw ? raw : "", stdout);
        json_decref(out);
        free(raw);
        return rc;
    }
    if (strcmp(verb, "cancel") == 0 || strcmp(verb, "pause") == 0 || strcmp(verb, "resume") == 0) {
        char *p = xasprintf("/v1/jobs/%s/%s", id, verb);
        json_t *out;
        int rc = call(&o, "POST", p, NULL, &out);
        free(p);
        if (rc)
            return rc;
        if (o.json)
            print_json(out);
        else
            printf("job %s: %s asked (the job is %s; its owner acts on it)\n", id, verb,
                   str(out, "status"));
        json_decref(out);
        return 0;
    }
    return usage_job();
}

/* ---- fleet, tenants, users, tokens ----------------------------------------------------- */

int cli_fleet_main(int argc, char **argv)
{
    struct cli_opts o;
    argc = cli_take_opts(argc, argv, &o);
    static const char *const wcols[] = {"id", NULL}; /* workers: the member ids */
    if (argc != 1) {
        fprintf(stderr, "usage: drover %s [--json]\n", argv[0]);
        return 2;
    }
    if (strcmp(argv[0], "members") == 0) {
        json_t *out;
        int rc = call(&o, "GET", "/v1/members", NULL, &out);
        if (rc)
            return rc;
        if (o.json) {
            print_json(out);
        } else {
            size_t i;
            json_t *m;
            printf("%-24s %-22s %-9s %-6s %-6s %s\n", "MEMBER", "HTTP", "STATE", "FORMAT", "OWNED",
                   "RING JOBS");
            json_array_foreach(json_object_get(out, "members"), i, m)
            {
                const char *id = str(m, "id");
                const json_t *d = json_object_get(m, "data");
                size_t ring = 0, j;
                json_t *job;
                json_array_foreach(json_object_get(out, "jobs"), j, job) ring +=
                    strcmp(str(job, "owner"), id) == 0;
                const char *state = json_is_true(json_object_get(d, "drained"))    ? "drained"
                                    : json_is_true(json_object_get(d, "draining")) ? "draining"
                                                                                   : "serving";
                printf("%-24s %-22s %-9s %-6s %-6s %zu\n", id, str(d, "http"), state,
                       str(d, "format"), str(d, "owned"), ring);
            }
        }
        json_decref(out);
        return 0;
    }
    if (strcmp(argv[0], "workers") == 0)
        return run(&o, "GET", "/v1/workers", NULL, wcols, "workers");
    if (strcmp(argv[0], "whoami") == 0) {
        json_t *out;
        int rc = call(&o, "GET", "/v1/whoami", NULL, &out);
        if (rc)
            return rc;
        if (o.json)
            print_json(out);
        else
            printf("%s (%s)%s%s\n", str(out, "user"), str(out, "role"),
                   *str(out, "tenant") ? " of tenant " : "", str(out, "tenant"));
        json_decref(out);
        return 0;
    }
    static const char *const qcols[] = {"class",
                                        "length",
                                        "claimed",
                                        "oldest_age_ms",
                                        "arrival_per_s",
                                        "mean_task_s",
                                        "recommended_workers",
                                        NULL};
    return run(&o, "GET", "/v1/queues", NULL, qcols, "queues");
}

/*
 * drover tenant quota NAME [QUOTA=N|QUOTA=default ...]: show the tenant's quotas (limit,
 * use, whether the default), or set some first (N: a limit, 0 none; default: droverd's).
 */
static int tenant_quota(const struct cli_opts *o, int argc, char **argv)
{
    char *p = xasprintf("/v1/tenants/%s/quotas", argv[2]);
    json_t *b = argc > 3 ? json_object() : NULL;
    for (int i = 3; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        char *end = NULL;
        long v = eq ? strtol(eq + 1, &end, 10) : -1;
        bool dflt = eq && strcmp(eq + 1, "default") == 0;
        if (!eq || eq == argv[i] || (!dflt && (!*(eq + 1) || *end || v < 0))) {
            fprintf(stderr, "drover: \"%s\": expected QUOTA=N (N >= 0) or QUOTA=default\n",
                    argv[i]);
            json_decref(b);
            free(p);
            return 2;
        }
        *eq = '\0';
        json_object_set_new(b, argv[i], dflt ? json_null() : json_integer(v));
    }
    json_t *out;
    int rc = call(o, b ? "PUT" : "GET", p, b, &out);
    json_decref(b);
    free(p);
    if (rc)
        return rc;
    if (o->json) {
        print_json(out);
    } else {
        printf("%-18s %12s %12s\n", "QUOTA", "LIMIT", "USED");
        const char *k;
        json_t *q;
        json_object_foreach(json_object_get(out, "quotas"), k, q)
        {
            json_int_t limit = json_integer_value(json_object_get(q, "limit"));
            char ls[32];
            snprintf(ls, sizeof(ls), "%lld%s", (long long)limit,
                     json_is_true(json_object_get(q, "default")) ? "*" : "");
            printf("%-18s %12s %12lld\n", k, limit ? ls : "none",
                   (long long)json_integer_value(json_object_get(q, "used")));
        }
        printf("(* droverd's default)\n");
    }
    json_decref(out);
    return 0;
}

int cli_tenant_main(int argc, char **argv)
{
    struct cli_opts o;
    argc = cli_take_opts(argc, argv, &o);
    static const char *const cols[] = {"id", "name", "created_at", NULL};
    if (argc == 2 && strcmp(argv[1], "list") == 0)
        return run(&o, "GET", "/v1/tenants", NULL, cols, NULL);
    if (argc == 3 && strcmp(argv[1], "create") == 0) {
        json_t *b = json_pack("{s:s}", "name", argv[2]);
        int rc = run(&o, "POST", "/v1/tenants", b, NULL, NULL);
        json_decref(b);
        return rc;
    }
    if (argc == 3 && strcmp(argv[1], "delete") == 0) {
        char *p = xasprintf("/v1/tenants/%s", argv[2]);
        int rc = run(&o, "DELETE", p, NULL, NULL, NULL);
        free(p);
        if (rc == 0 && !o.json)
            printf("tenant %s deleted\n", argv[2]);
        return rc;
    }
    if (argc >= 3 && strcmp(argv[1], "quota") == 0)
        return tenant_quota(&o, argc, argv);
    fprintf(stderr, "usage: drover tenant list | create NAME | delete NAME   (superadmin)\n"
                    "       drover tenant quota NAME [QUOTA=N|QUOTA=default ...]   (setting: "
                    "superadmin)\n");
    return 2;
}

int cli_user_main(int argc, char **argv)
{
    struct cli_opts o;
    argc = cli_take_opts(argc, argv, &o);
    static const char *const cols[] = {"id", "name", "role", NULL};
    const char *role = flag(&argc, argv, "--role");
    const char *tenant = flag(&argc, argv, "--tenant");
    if (argc == 2 && strcmp(argv[1], "list") == 0) {
        char *p = tenant ? xasprintf("/v1/users?tenant=%s", tenant) : xstrdup("/v1/users");
        int rc = run(&o, "GET", p, NULL, cols, NULL);
        free(p);
        return rc;
    }
    if (argc == 3 && strcmp(argv[1], "create") == 0 && role) {
        json_t *b = json_pack("{s:s, s:s}", "name", argv[2], "role", role);
        if (tenant)
            json_object_set_new(b, "tenant", json_string(tenant));
        json_t *out;
        int rc = call(&o, "POST", "/v1/users", b, &out);
        json_decref(b);
        if (rc)
            return rc;
        if (o.json)
            print_json(out);
        else
            printf("user %s (%s) of tenant %s\ntoken (shown once): %s\n",
                   str(json_object_get(out, "user"), "name"),
                   str(json_object_get(out, "user"), "role"),
                   str(json_object_get(out, "user"), "tenant"), str(out, "token"));
        json_decref(out);
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "delete") == 0) {
        char *p = tenant ? xasprintf("/v1/users/%s?tenant=%s", argv[2], tenant)
                         : xasprintf("/v1/users/%s", argv[2]);
        int rc = run(&o, "DELETE", p, NULL, NULL, NULL);
        free(p);
        if (rc == 0 && !o.json)
            printf("user %s deleted\n", argv[2]);
        return rc;
    }
    fprintf(stderr, "usage: drover user list [--tenant T] | create NAME --role admin|user "
                    "[--tenant T] | delete NAME [--tenant T]\n");
    return 2;
}

static int usage_token(void)
{
    fprintf(stderr,
            "usage: drover token create [--expires-in SECONDS] [--label TEXT]   a new token for "
            "the caller\n"
            "       drover token list                 the caller's live tokens\n"
            "       drover token revoke ID            ID: the 16 hex digits after drv_\n");
    return 2;
}

int cli_token_main(int argc, char **argv)
{
    struct cli_opts o;
    argc = cli_take_opts(argc, argv, &o);
    const char *expires = flag(&argc, argv, "--expires-in");
    const char *label = flag(&argc, argv, "--label");
    if (argc == 3 && strcmp(argv[1], "revoke") == 0) {
        char *p = xasprintf("/v1/tokens/%s", argv[2]);
        int rc = run(&o, "DELETE", p, NULL, NULL, NULL);
        free(p);
        if (rc == 0 && !o.json)
            printf("token %s revoked\n", argv[2]);
        return rc;
    }
    if (argc == 2 && strcmp(argv[1], "list") == 0) {
        static const char *const cols[] = {"id",         "label",   "created_at",
                                           "expires_at", "current", NULL};
        return run(&o, "GET", "/v1/tokens", NULL, cols, NULL);
    }
    if (argc != 2 || strcmp(argv[1], "create") != 0)
        return usage_token();
    json_t *out, *b = json_object();
    if (expires) {
        char *end;
        long long v = strtoll(expires, &end, 10);
        if (!*expires || *end || v <= 0) {
            json_decref(b);
            fprintf(stderr, "drover: --expires-in: expected a number of seconds\n");
            return 2;
        }
        json_object_set_new(b, "expires_in", json_integer(v));
    }
    if (label)
        json_object_set_new(b, "label", json_string(label));
    int rc = call(&o, "POST", "/v1/tokens", b, &out);
    json_decref(b);
    if (rc)
        return rc;
    if (o.json)
        print_json(out);
    else
        printf("%s\n", str(out, "token"));
    json_decref(out);
    return 0;
}

int cli_audit_main(int argc, char **argv)
{
    struct cli_opts o;
    argc = cli_take_opts(argc, argv, &o);
    static const char *const cols[] = {"at",        "actor",  "action", "entity_kind",
                                       "entity_id", "source", NULL};
    const char *limit = flag(&argc, argv, "--limit");
    const char *tenant = flag(&argc, argv, "--tenant");
    if (argc != 1) {
        fprintf(stderr, "usage: drover audit [--limit N] [--tenant T]   (newest first)\n");
        return 2;
    }
    char *p = xasprintf("/v1/audit?limit=%s%s%s", limit ? limit : "100", tenant ? "&tenant=" : "",
                        tenant ? tenant : "");
    int rc = run(&o, "GET", p, NULL, cols, NULL);
    free(p);
    return rc;
}

/* ---- drain ------------------------------------------------------------------------------ */

static int usage_drain(void)
{
    fprintf(stderr,
            "usage: drover node drain ID [--wait SECONDS]   out of the ring, jobs handed over,\n"
            "                                              /readyz 503 (--wait: until it owns "
            "nothing)\n"
            "       drover node undrain ID                 back in the ring\n"
            "       drover worker drain ID                 stop taking, finish or hand back, "
            "exit\n"
            "(admin or superadmin)\n");
    return 2;
}

/* Poll the members until id says drained (0), is gone (0), or secs pass (1). */
static int wait_drained(const struct cli_opts *o, const char *id, long secs)
{
    int64_t t0 = clock_mono_ms();
    for (;;) {
        json_t *out;
        int rc = call(o, "GET", "/v1/members", NULL, &out);
        if (rc)
            return rc;
        const json_t *d = NULL;
        size_t i;
        json_t *m;
        json_array_foreach(json_object_get(out, "members"), i, m) if (strcmp(str(m, "id"), id) == 0)
            d = json_object_get(m, "data");
        int done = !d || json_is_true(json_object_get(d, "drained"));
        if (done)
            printf("node %s: %s\n", id, d ? "drained (owns nothing)" : "gone");
        json_decref(out);
        if (done)
            return 0;
        if (clock_mono_ms() - t0 >= (int64_t)secs * 1000) {
            fprintf(stderr, "drover: node %s still owns jobs after %ld s\n", id, secs);
            return 1;
        }
        struct timespec pause = {0, 200 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
}

int cli_drain_main(int argc, char **argv)
{
    struct cli_opts o;
    argc = cli_take_opts(argc, argv, &o);
    const char *wait = flag(&argc, argv, "--wait");
    bool node = strcmp(argv[0], "node") == 0;
    if (argc != 3 || (strcmp(argv[1], "drain") != 0 && (!node || strcmp(argv[1], "undrain") != 0)))
        return usage_drain();
    long secs = 0;
    if (wait) {
        char *end;
        secs = strtol(wait, &end, 10);
        if (!*wait || *end || secs <= 0 || !node || strcmp(argv[1], "drain") != 0)
            return usage_drain();
    }
    char *p = xasprintf("/v1/%s/%s/%s", node ? "members" : "workers", argv[2], argv[1]);
    json_t *out;
    int rc = call(&o, "POST", p, NULL, &out);
    free(p);
    if (rc)
        return rc;
    if (o.json)
        print_json(out);
    else
        printf("%s %s: %s asked\n", node ? "node" : "worker", argv[2], argv[1]);
    json_decref(out);
    return wait ? wait_drained(&o, argv[2], secs) : 0;
}
