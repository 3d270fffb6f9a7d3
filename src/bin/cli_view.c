/*
 * cli_view: readable views of the API's objects for people (`--json` prints
 * the API's JSON instead): any entity as indented fields, a cluster with its
 * nodes as a table, a preview as its layout and its plan by stages, and the
 * workers with what each runs now. Single-threaded, like the rest of the
 * client.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "cli_int.h"
#include "error.h"
#include "xalloc.h"

static bool scalar(const json_t *v)
{
    return !json_is_object(v) && !json_is_array(v);
}

static bool all_scalars(const json_t *a)
{
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v) if (!scalar(v)) return false;
    return true;
}

/* A scalar as text; times (keys "at", "*_at") as ISO-8601. */
static void print_scalar(const char *key, const json_t *v)
{
    if (json_is_string(v)) {
        size_t n = strlen(key);
        char t[40];
        if (strcmp(key, "at") == 0 || (n > 3 && strcmp(key + n - 3, "_at") == 0))
            fputs(cli_fmt_time(json_string_value(v), t, sizeof(t)), stdout);
        else
            fputs(json_string_value(v), stdout);
    } else if (json_is_null(v)) {
        fputs("-", stdout);
    } else {
        char *s = json_dumps(v, JSON_ENCODE_ANY);
        fputs(s ? s : "?", stdout);
        free(s);
    }
}

static void print_list(const json_t *a)
{
    size_t i;
    json_t *v;
    if (json_array_size(a) == 0)
        fputs("(none)", stdout);
    json_array_foreach(a, i, v)
    {
        if (i)
            fputs(", ", stdout);
        print_scalar("", v);
    }
}

void cli__show_object(const json_t *o, int indent)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)o, k, v)
    {
        printf("%*s%s:", indent, "", k);
        if (scalar(v)) {
            putchar(' ');
            print_scalar(k, v);
            putchar('\n');
        } else if (json_is_array(v) && all_scalars(v)) {
            putchar(' ');
            print_list(v);
            putchar('\n');
        } else if (json_is_object(v)) {
            if (json_object_size(v) == 0)
                fputs(" {}", stdout);
            putchar('\n');
            cli__show_object(v, indent + 2);
        } else {
            putchar('\n');
            size_t i;
            json_t *e;
            json_array_foreach(v, i, e)
            {
                printf("%*s- [%zu]\n", indent + 2, "", i);
                if (json_is_object(e))
                    cli__show_object(e, indent + 4);
                else {
                    printf("%*s", indent + 4, "");
                    print_scalar("", e);
                    putchar('\n');
                }
            }
        }
    }
}

/* The first address of a node's properties.ipaddresses, "-" when none. */
static const char *address_of(const json_t *node)
{
    const json_t *ips = json_object_get(json_object_get(node, "properties"), "ipaddresses");
    const char *pref[] = {"access_v4", "bind_v4", NULL};
    for (const char **p = pref; *p; p++)
        if (json_is_string(json_object_get(ips, *p)))
            return json_string_value(json_object_get(ips, *p));
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)ips, k, v) if (json_is_string(v)) return json_string_value(v);
    return "-";
}

static char *joined(const json_t *a)
{
    size_t i, n = 1;
    json_t *v;
    json_array_foreach(a, i, v) n += strlen(json_string_value(v) ? json_string_value(v) : "") + 1;
    char *s = xmalloc(n);
    *s = '\0';
    json_array_foreach(a, i, v)
    {
        if (i)
            strcat(s, ",");
        strcat(s, json_string_value(v) ? json_string_value(v) : "");
    }
    return s;
}

void cli__show_cluster(const json_t *c)
{
    char t0[40], t1[40];
    printf("cluster %s (%s): %s, %s nodes, template %s version %s\n", cli__str(c, "id"),
           cli__str(c, "name"), cli__str(c, "status"), cli__str(c, "size"), cli__str(c, "template"),
           cli__str(c, "template_version"));
    printf("owner %s, created %s, updated %s\n", cli__str(c, "owner"),
           cli_fmt_time(cli__str(c, "created_at"), t0, sizeof(t0)),
           cli_fmt_time(cli__str(c, "updated_at"), t1, sizeof(t1)));
    printf("provider %s, hardware type %s, image type %s\nservices: ", cli__str(c, "provider"),
           cli__str(c, "hardwaretype"), cli__str(c, "imagetype"));
    print_list(json_object_get(c, "services"));
    putchar('\n');
    const json_t *config = json_object_get(c, "config");
    if (json_object_size(config)) {
        printf("config:\n");
        cli__show_object(config, 2);
    }
    json_t *rows = json_array();
    size_t i;
    json_t *n;
    json_array_foreach(json_object_get(c, "nodes"), i, n)
    {
        char *svc = joined(json_object_get(n, "services"));
        json_array_append_new(
            rows, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "node", cli__str(n, "id"),
                            "status", cli__str(n, "status"), "hostname",
                            cli__str(json_object_get(n, "properties"), "hostname"), "address",
                            address_of(n), "hardwaretype", cli__str(n, "hardwaretype"), "imagetype",
                            cli__str(n, "imagetype"), "services", svc));
        free(svc);
    }
    if (json_array_size(rows)) {
        static const char *const cols[] = {"node",         "status",    "hostname", "address",
                                           "hardwaretype", "imagetype", "services", NULL};
        putchar('\n');
        cli__table(rows, cols);
    }
    json_decref(rows);
}

static bool unfinished(const char *status)
{
    return strcmp(status, "pending") == 0 || strcmp(status, "running") == 0 ||
           strcmp(status, "paused") == 0 || strcmp(status, "rolling-back") == 0;
}

/* What each worker runs now: {worker id: "JOB:TASK, ..."} from the unfinished jobs' tasks. */
static json_t *running_tasks(const struct cli_opts *o)
{
    json_t *by = json_object(), *jobs = NULL;
    if (cli__call(o, "GET", "/v1/jobs", NULL, &jobs))
        return by;
    size_t i, looked = 0;
    json_t *j;
    json_array_foreach(json_object_get(jobs, "items"), i, j)
    {
        if (!unfinished(cli__str(j, "status")) || ++looked > 20)
            continue;
        char *p = xasprintf("/v1/jobs/%s", cli__str(j, "id"));
        json_t *full = NULL;
        if (cli__call(o, "GET", p, NULL, &full) == 0) {
            size_t k;
            json_t *t;
            json_array_foreach(json_object_get(full, "tasks"), k, t)
            {
                if (strcmp(cli__str(t, "status"), "running") != 0 ||
                    !json_is_string(json_object_get(t, "worker")))
                    continue;
                const char *w = cli__str(t, "worker");
                const char *had = json_string_value(json_object_get(by, w));
                char *v = xasprintf("%s%s%s:%s", had ? had : "", had ? ", " : "", cli__str(j, "id"),
                                    cli__str(t, "id"));
                json_object_set_new(by, w, json_string(v));
                free(v);
            }
        }
        json_decref(full);
        free(p);
    }
    json_decref(jobs);
    return by;
}

void cli__show_workers(const struct cli_opts *o, const json_t *reply)
{
    json_t *now = running_tasks(o), *rows = json_array();
    size_t i;
    json_t *w;
    json_array_foreach(json_object_get(reply, "workers"), i, w)
    {
        const json_t *d = json_object_get(w, "data");
        char *classes = joined(json_object_get(d, "classes"));
        char started[40] = "-";
        if (json_is_integer(json_object_get(d, "started"))) {
            time_t t = (time_t)json_integer_value(json_object_get(d, "started"));
            struct tm tm;
            char iso[32];
            strftime(iso, sizeof(iso), "%Y-%m-%d %H:%M:%S+00", gmtime_r(&t, &tm));
            cli_fmt_time(iso, started, sizeof(started));
        }
        const char *id = cli__str(w, "id");
        const char *task = json_string_value(json_object_get(now, id));
        json_array_append_new(
            rows, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "id", id, "host", cli__str(d, "host"),
                            "classes", *classes ? classes : "-", "state",
                            json_is_true(json_object_get(d, "draining")) ? "draining" : "serving",
                            "started_at", started, "current_task", task ? task : "-"));
        free(classes);
    }
    static const char *const cols[] = {"id",         "host",         "classes", "state",
                                       "started_at", "current_task", NULL};
    cli__table(rows, cols);
    json_decref(rows);
    json_decref(now);
}
