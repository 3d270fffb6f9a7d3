/*
 * cli_plan: plans for people (see cli_plan.h). A dry run's answer (docs/api.md
 * "Plans") printed as a diff in the manner of terraform plan:
 *
 *   cluster 12 (web): expand, revision 3f2a9c0d1e4b5a69
 *     size 3 -> 4
 *   + node-4  small/debian12  base, nginx
 *   ~ node-1  haproxy reconfigured (reads nginx)
 *   ~ config nginx.port: 80 -> 8080
 *   plan: 14 tasks (create 1, confirm 1, ...), 9 stages, critical path 9 tasks, about 41 s
 *   rollback if it fails at its end: 9 tasks (delete 1, stop 2, ...)
 *
 * + added, - removed, ~ changed; green, red and yellow on a terminal.
 * Single-threaded, like the rest of the client.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_plan.h"
#include "xalloc.h"

static const char *paint(bool on, char sign)
{
    if (!on)
        return "";
    return sign == '+' ? "\033[32m" : sign == '-' ? "\033[31m" : "\033[33m";
}

static const char *reset(bool on)
{
    return on ? "\033[0m" : "";
}

static bool colour_wanted(void)
{
    const char *nc = getenv("NO_COLOR");
    return isatty(1) && !(nc && *nc);
}

/* "a, b, c" of a JSON array of strings (static buffer). */
static const char *names(const json_t *arr)
{
    static char buf[1024];
    size_t i, off = 0;
    json_t *v;
    buf[0] = '\0';
    json_array_foreach(arr, i, v)
    {
        int n = snprintf(buf + off, sizeof(buf) - off, "%s%s", i ? ", " : "",
                         json_string_value(v) ? json_string_value(v) : "?");
        if (n < 0 || (size_t)n >= sizeof(buf) - off)
            break;
        off += (size_t)n;
    }
    return buf;
}

/* "create 1, confirm 1" of {"create": 1, ...} (static buffer). */
static const char *counts(const json_t *obj)
{
    static char buf[512];
    size_t off = 0;
    const char *k;
    json_t *v;
    buf[0] = '\0';
    json_object_foreach((json_t *)obj, k, v)
    {
        int n = snprintf(buf + off, sizeof(buf) - off, "%s%s %lld", off ? ", " : "", k,
                         (long long)json_integer_value(v));
        if (n < 0 || (size_t)n >= sizeof(buf) - off)
            break;
        off += (size_t)n;
    }
    return buf;
}

static char *value_text(const json_t *v)
{
    if (!v)
        return xstrdup("(none)");
    return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
}

void cli_plan_print(const json_t *plan, bool c)
{
    const json_t *cl = json_object_get(plan, "cluster"), *d = json_object_get(plan, "diff");
    printf("cluster %s (%s): %s, revision %s\n", json_string_value(json_object_get(cl, "id")),
           json_string_value(json_object_get(cl, "name")),
           json_string_value(json_object_get(plan, "operation")),
           json_string_value(json_object_get(plan, "revision")));
    const json_t *sz = json_object_get(d, "size");
    long long o = json_integer_value(json_object_get(sz, "old")),
              n = json_integer_value(json_object_get(sz, "new"));
    if (o != n)
        printf("%s~ size %lld -> %lld%s\n", paint(c, '~'), o, n, reset(c));
    const json_t *tv = json_object_get(d, "template_version");
    if (tv)
        printf("%s~ template %s version %lld -> %lld%s\n", paint(c, '~'),
               json_string_value(json_object_get(cl, "template")),
               (long long)json_integer_value(json_object_get(tv, "old")),
               (long long)json_integer_value(json_object_get(tv, "new")), reset(c));
    size_t i;
    json_t *e;
    const json_t *nodes = json_object_get(d, "nodes");
    json_array_foreach(json_object_get(nodes, "added"), i, e) printf(
        "%s+ node %s  %s/%s  %s%s\n", paint(c, '+'), json_string_value(json_object_get(e, "id")),
        json_string_value(json_object_get(e, "hardwaretype")),
        json_string_value(json_object_get(e, "imagetype")), names(json_object_get(e, "services")),
        reset(c));
    json_array_foreach(json_object_get(nodes, "removed"), i, e)
        printf("%s- node %s  %s%s\n", paint(c, '-'), json_string_value(json_object_get(e, "id")),
               names(json_object_get(e, "services")), reset(c));
    json_array_foreach(json_object_get(nodes, "changed"), i, e)
    {
        const json_t *plus = json_object_get(e, "services_added"),
                     *minus = json_object_get(e, "services_removed");
        if (json_array_size(plus))
            printf("%s~ node %s  + %s%s\n", paint(c, '~'),
                   json_string_value(json_object_get(e, "id")), names(plus), reset(c));
        if (json_array_size(minus))
            printf("%s~ node %s  - %s%s\n", paint(c, '~'),
                   json_string_value(json_object_get(e, "id")), names(minus), reset(c));
    }
    const json_t *svcs = json_object_get(d, "services");
    if (json_array_size(json_object_get(svcs, "added")))
        printf("%s+ services %s%s\n", paint(c, '+'), names(json_object_get(svcs, "added")),
               reset(c));
    if (json_array_size(json_object_get(svcs, "removed")))
        printf("%s- services %s%s\n", paint(c, '-'), names(json_object_get(svcs, "removed")),
               reset(c));
    json_array_foreach(json_object_get(d, "reconfigure"), i, e)
        printf("%s~ service %s reconfigured%s (reads %s)%s\n", paint(c, '~'),
               json_string_value(json_object_get(e, "service")),
               json_is_true(json_object_get(e, "restart")) ? " and restarted" : "",
               names(json_object_get(e, "on")), reset(c));
    json_array_foreach(json_object_get(d, "config"), i, e)
    {
        const json_t *ov = json_object_get(e, "old"), *nv = json_object_get(e, "new");
        char sign = !ov ? '+' : !nv ? '-' : '~';
        char *os = value_text(ov), *ns = value_text(nv);
        if (sign == '~')
            printf("%s~ config %s: %s -> %s%s\n", paint(c, sign),
                   json_string_value(json_object_get(e, "key")), os, ns, reset(c));
        else
            printf("%s%c config %s: %s%s\n", paint(c, sign), sign,
                   json_string_value(json_object_get(e, "key")), sign == '+' ? ns : os, reset(c));
        free(os);
        free(ns);
    }
    const json_t *p = json_object_get(plan, "plan");
    printf("plan: %lld tasks (%s), %lld stages, critical path %lld tasks",
           (long long)json_integer_value(json_object_get(p, "tasks")),
           counts(json_object_get(p, "by_action")),
           (long long)json_integer_value(json_object_get(p, "stages")),
           (long long)json_integer_value(json_object_get(p, "critical_path")));
    const json_t *est = json_object_get(p, "estimated_seconds");
    const json_t *k = json_object_get(p, "estimate");
    if (json_is_number(est))
        printf(", about %.0f s (%lld of %lld kinds of task timed before)", json_number_value(est),
               (long long)json_integer_value(json_object_get(k, "known")),
               (long long)(json_integer_value(json_object_get(k, "known")) +
                           json_integer_value(json_object_get(k, "unknown"))));
    else
        printf(", no estimate (no task of these kinds timed before)");
    printf("\n");
    const json_t *rb = json_object_get(plan, "rollback");
    if (json_object_get(rb, "error"))
        printf("rollback: none (%s)\n", json_string_value(json_object_get(rb, "error")));
    else if (json_integer_value(json_object_get(rb, "tasks")) == 0)
        printf("rollback if it fails at its end: nothing to undo\n");
    else
        printf("rollback if it fails at its end: %lld tasks (%s)\n",
               (long long)json_integer_value(json_object_get(rb, "tasks")),
               counts(json_object_get(rb, "by_action")));
}

void cli_plan_scale_note(const char *verb, const json_t *body, const json_t *reply)
{
    const json_t *jn = json_object_get(body, "nodes");
    bool expand = strcmp(verb, "expand") == 0;
    if (!json_is_integer(jn) || !(expand || strcmp(verb, "shrink") == 0))
        return;
    long long k = json_integer_value(jn),
              was = json_integer_value(json_object_get(json_object_get(reply, "cluster"), "size"));
    long long to = expand ? was + k : was - k;
    fprintf(stderr,
            "drover: --nodes is deprecated (it counts the nodes to %s): %s %lld node%s: %lld -> "
            "%lld; say --to %lld for a target\n",
            expand ? "add" : "remove", expand ? "adding" : "removing", k, k == 1 ? "" : "s", was,
            to, to);
}

/* Read a line from the terminal: is it yes? */
static bool confirmed(void)
{
    char line[64];
    fprintf(stderr, "apply this plan? only \"yes\" applies it: ");
    fflush(stderr);
    if (!fgets(line, sizeof(line), stdin))
        return false;
    line[strcspn(line, "\r\n")] = '\0';
    return strcmp(line, "yes") == 0;
}

int cli_plan_run(const struct cli_opts *o, const char *path, json_t *body, bool yes, bool ask)
{
    json_object_set_new(body, "dry_run", json_true());
    json_t *plan = NULL;
    int st = cli_call(o, "POST", path, body, &plan, NULL);
    if (st < 0)
        return 1;
    if (st >= 400) {
        int rc = cli_api_error(st, plan);
        json_decref(plan);
        return rc;
    }
    if (o->json && !yes && !ask) {
        char *s = json_dumps(plan, JSON_INDENT(2) | JSON_SORT_KEYS);
        printf("%s\n", s ? s : "null");
        free(s);
    } else {
        cli_plan_print(plan, colour_wanted());
    }
    fflush(stdout);
    if (!yes && !(ask && confirmed())) {
        if (ask)
            fprintf(stderr, "drover: not applied\n");
        json_decref(plan);
        return ask ? 1 : 0;
    }
    json_object_del(body, "dry_run");
    json_object_set(body, "plan_revision", json_object_get(plan, "revision"));
    json_decref(plan);
    json_t *out = NULL;
    st = cli_call(o, "POST", path, body, &out, NULL);
    if (st < 0)
        return 1;
    if (st >= 400) {
        int rc = cli_api_error(st, out);
        json_decref(out);
        return rc;
    }
    cli_plan_scale_note(strrchr(path, '/') + 1, body, out);
    const json_t *job = json_object_get(out, "job");
    printf("applied: job %s %s %s\n", json_string_value(json_object_get(job, "id")),
           json_string_value(json_object_get(job, "operation")),
           json_string_value(json_object_get(job, "status")));
    json_decref(out);
    return 0;
}

void cli_plan_preview_print(const json_t *reply, bool stages)
{
    bool c = colour_wanted();
    const json_t *layout = json_object_get(json_object_get(reply, "layout"), "nodes");
    size_t i;
    json_t *e;
    long long nodes = 0;
    /* One line a node, named as the planner names a create's nodes (layout order). */
    json_array_foreach(layout, i, e)
    {
        long long n = json_is_integer(json_object_get(e, "count"))
                          ? json_integer_value(json_object_get(e, "count"))
                          : 1;
        for (long long k = 0; k < n; k++)
            printf("%s+ node node-%lld  %s/%s  %s%s\n", paint(c, '+'), ++nodes,
                   json_string_value(json_object_get(e, "hardwaretype")),
                   json_string_value(json_object_get(e, "imagetype")),
                   names(json_object_get(e, "services")), reset(c));
    }
    const json_t *sum = json_object_get(reply, "summary");
    printf("plan: %lld nodes, %lld tasks (%s), %lld stages, critical path %lld tasks\n", nodes,
           (long long)json_integer_value(json_object_get(sum, "tasks")),
           counts(json_object_get(sum, "by_action")),
           (long long)json_integer_value(json_object_get(sum, "stages")),
           (long long)json_integer_value(json_object_get(sum, "critical_path")));
    if (!stages)
        return;
    json_array_foreach(json_object_get(reply, "stages"), i, e)
    {
        printf("stage %zu:", i + 1);
        size_t k;
        json_t *t;
        json_array_foreach(e, k, t) printf(" %s", json_string_value(t));
        printf("\n");
    }
}
