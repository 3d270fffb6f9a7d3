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
#include "cli_int.h"
#include "cli_plan.h"
#include "clock.h"
#include "xalloc.h"

/* ---- output ---------------------------------------------------------------- */

static const char *str(const json_t *o, const char *k)
{
    return cli__str(o, k);
}

static void print_json(const json_t *j)
{
    cli__print_json(j);
}

/* Print rows of `items` as a table of the given columns (headers upper-cased keys). */
static void table(const json_t *items, const char *const *cols)
{
    cli__table(items, cols);
}

/* Do the call and print: table cols for {"items": [...]}, else JSON. */
/*
 * One API call: 0 with the reply in *out (the caller's, may be NULL for an
 * empty body), or 1 once the failure has been told on stderr (*out NULL).
 */
static int call(const struct cli_opts *o, const char *method, const char *path, const json_t *body,
                json_t **out)
{
    return cli__call(o, method, path, body, out);
}

static int run(const struct cli_opts *o, const char *method, const char *path, const json_t *body,
               const char *const *cols, const char *list_key)
{
    json_t *out;
    int rc = call(o, method, path, body, &out);
    if (rc)
        return rc;
    if (o->json) {
        if (out)
            print_json(out);
    } else if (!cols) {
        if (json_is_object(out))
            cli__show_object(out, 0);
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
    return cli_usage(kind, NULL);
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
    if (argc != 2)
        return cli_usage("import", NULL);
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
        return cli_usage("export", NULL);
    }
    o.json = 1;
    return run(&o, "GET", "/v1/export", NULL, NULL, NULL);
}

/* ---- clusters ---------------------------------------------------------------------------- */

/* Take "--flag VALUE" from argv; NULL when absent. */
static const char *flag(int *argc, char **argv, const char *name)
{
    return cli__flag(argc, argv, name);
}

/* Take a "--switch" with no value from argv; whether it was there. */
static bool take_switch(int *argc, char **argv, const char *name)
{
    return cli__switch(argc, argv, name);
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
    return cli__parse_int(s, out);
}

static int usage_cluster(void)
{
    return cli_usage("cluster", NULL);
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
    /* The integer flags: flag, the body's key, what it expects (for the error). */
    static const struct {
        const char *flag, *key, *what;
    } ints[] = {{"--nodes", "nodes", "a number"},
                {"--to", "size", "a node count"},
                {"--template-version", "template_version", "a number"}};
    for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
        long n;
        if (!(v = flag(argc, argv, ints[i].flag)))
            continue;
        if (parse_int(v, &n) != 0) {
            fprintf(stderr, "drover: %s: expected %s, got \"%s\"\n", ints[i].flag, ints[i].what, v);
            json_decref(b);
            return NULL;
        }
        json_object_set_new(b, ints[i].key, json_integer(n));
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
    if (take_switch(argc, argv, "--merge"))
        json_object_set_new(b, "mode", json_string("merge"));
    if (take_switch(argc, argv, "--replace")) {
        if (json_object_get(b, "mode")) {
            fprintf(stderr, "drover: --merge and --replace: one or the other\n");
            json_decref(b);
            return NULL;
        }
        json_object_set_new(b, "mode", json_string("replace"));
    }
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
        json_t *out;
        int rc = call(&o, "GET", p, NULL, &out);
        free(p);
        if (rc == 0 && o.json)
            print_json(out);
        else if (rc == 0)
            cli__show_cluster(out);
        json_decref(out);
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
    bool dry = take_switch(&argc, argv, "--dry-run"), yes = take_switch(&argc, argv, "--yes");
    json_t *body = cluster_body(&argc, argv, create);
    if (!body)
        return 2;
    if (argc != (create ? 2 : 3)) {
        json_decref(body);
        return usage_cluster();
    }
    if (dry && create) { /* a create's plan: the preview, as a diff */
        json_t *out;
        int rc = call(&o, "POST", "/v1/plans", body, &out);
        json_decref(body);
        if (rc)
            return rc;
        if (o.json)
            print_json(out);
        else
            cli_plan_preview_print(out, false);
        json_decref(out);
        return 0;
    }
    /* On a terminal an operation shows its plan and asks first. */
    bool ask = !dry && !yes && !create && !o.json && isatty(0) && isatty(1);
    if ((dry || yes || ask) && !create) { /* cli_plan.c: the plan, then exactly that plan */
        char *pp = strcmp(verb, "delete") == 0 ? xasprintf("/v1/clusters/%s/delete", argv[2])
                                               : xasprintf("/v1/clusters/%s/%s", argv[2], verb);
        int rc = cli_plan_run(&o, pp, body, yes && !dry, ask);
        free(pp);
        json_decref(body);
        return rc;
    }
    char *p = create                        ? xstrdup("/v1/clusters")
              : strcmp(verb, "delete") == 0 ? xasprintf("/v1/clusters/%s", argv[2])
                                            : xasprintf("/v1/clusters/%s/%s", argv[2], verb);
    json_t *out;
    int st = cli_call(&o, strcmp(verb, "delete") == 0 ? "DELETE" : "POST", p, body, &out, NULL);
    free(p);
    if (st >= 0 && st < 400)
        cli_plan_scale_note(verb, body, out);
    json_decref(body);
    if (st < 0)
        return 1;
    return print_accepted(&o, st, out);
}

int cli_preview_main(int argc, char **argv)
{
    struct cli_opts o;
    argc = cli_take_opts(argc, argv, &o);
    const char *format = flag(&argc, argv, "--format");
    json_t *body = cluster_body(&argc, argv, 1);
    if (!body)
        return 2;
    bool stages = format && strcmp(format, "stages") == 0;
    if (argc != 1 || (format && !stages && strcmp(format, "json") != 0)) {
        json_decref(body);
        return cli_usage("preview", NULL);
    }
    json_t *out;
    int rc = call(&o, "POST", stages ? "/v1/plans?format=stages" : "/v1/plans", body, &out);
    json_decref(body);
    if (rc)
        return rc;
    if (o.json || (format && strcmp(format, "json") == 0))
        print_json(out);
    else
        cli_plan_preview_print(out, stages); /* cli_plan.c */
    json_decref(out);
    return 0;
}

/* ---- fleet, tenants, users, tokens ----------------------------------------------------- */

int cli_fleet_main(int argc, char **argv)
{
    struct cli_opts o;
    argc = cli_take_opts(argc, argv, &o);
    if (argc != 1) {
        return cli_usage(argv[0], NULL);
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
    if (strcmp(argv[0], "workers") == 0) {
        json_t *out;
        int rc = call(&o, "GET", "/v1/workers", NULL, &out);
        if (rc == 0 && o.json)
            print_json(out);
        else if (rc == 0)
            cli__show_workers(&o, out);
        json_decref(out);
        return rc;
    }
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
            json_t *used = json_object_get(q, "used");
            char us[32] = "-"; /* heavy: counted by each node, not shown */
            if (used)
                snprintf(us, sizeof(us), "%lld", (long long)json_integer_value(used));
            printf("%-18s %12s %12s\n", k, limit ? ls : "none", us);
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
    return cli_usage("tenant", NULL);
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
    return cli_usage("user", NULL);
}

static int usage_token(void)
{
    return cli_usage("token", NULL);
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
        return cli_usage("audit", NULL);
    }
    char *p = xasprintf("/v1/audit?limit=%s%s%s", limit ? limit : "100", tenant ? "&tenant=" : "",
                        tenant ? tenant : "");
    int rc = run(&o, "GET", p, NULL, cols, NULL);
    free(p);
    return rc;
}

/* ---- drain ------------------------------------------------------------------------------ */

static int usage_drain(const char *cmd)
{
    return cli_usage(cmd, NULL);
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
        return usage_drain(argv[0]);
    long secs = 0;
    if (wait) {
        char *end;
        secs = strtol(wait, &end, 10);
        if (!*wait || *end || secs <= 0 || !node || strcmp(argv[1], "drain") != 0)
            return usage_drain(argv[0]);
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
