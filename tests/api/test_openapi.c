/*
 * docs/openapi.yaml against the router (routes.c), both ways, on the JSON droverd serves
 * (api__openapi_json, made from the YAML at build time):
 *   - every operation the document names reaches a route of that method (not 404 or 405),
 *     with each value of an enumerated path parameter ({operation}, {action}) tried;
 *   - every route of the table, for each of its methods, is reached by some documented
 *     operation: a route added to routes.c without its document fails here.
 * The probes (/healthz, /readyz, /metrics, /v1/openapi.json) are served before routing
 * (api.c) and are checked by the API tests instead.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api_int.h"
#include "http.h"
#include "xalloc.h"

extern const char api__openapi_json[];

struct seen {
    int methods;
    const char *pattern;
    int hit; /* methods reached by a documented operation */
};
static struct seen table[128];
static size_t ntable;

static void collect(int methods, const char *pattern, void *arg)
{
    assert_true(ntable < sizeof(table) / sizeof(table[0]));
    table[ntable++] = (struct seen){methods, pattern, 0};
}

static int method_of(const char *m)
{
    if (strcmp(m, "get") == 0)
        return API_M_GET;
    if (strcmp(m, "post") == 0)
        return API_M_POST;
    if (strcmp(m, "put") == 0)
        return API_M_PUT;
    if (strcmp(m, "delete") == 0)
        return API_M_DELETE;
    return 0;
}

static bool probe(const char *path)
{
    return strcmp(path, "/healthz") == 0 || strcmp(path, "/readyz") == 0 ||
           strcmp(path, "/metrics") == 0 || strcmp(path, "/v1/openapi.json") == 0;
}

/* The schema of path parameter name in params (an array of parameters or $refs), or NULL. */
static json_t *param_schema(json_t *doc, json_t *params, const char *name)
{
    size_t i;
    json_t *p;
    json_array_foreach(params, i, p)
    {
        const char *ref = json_string_value(json_object_get(p, "$ref"));
        if (ref) /* "#/components/parameters/X" */
            p = json_object_get(json_object_get(json_object_get(doc, "components"), "parameters"),
                                strrchr(ref, '/') + 1);
        const char *in = json_string_value(json_object_get(p, "in"));
        const char *n = json_string_value(json_object_get(p, "name"));
        if (in && n && strcmp(in, "path") == 0 && strcmp(n, name) == 0)
            return json_object_get(p, "schema");
    }
    return NULL;
}

/* Route method path; 0 with the route's pattern in *pattern, or the failing status. */
static int route(int method, const char *path, const char **pattern)
{
    struct call c;
    memset(&c, 0, sizeof(c));
    c.method = method;
    c.path = xstrdup(path);
    char why[160];
    int st = api__http_split_path(path, &c.segbuf, c.seg, CALL_MAX_SEGS, &c.nseg, why);
    int rc = st ? st : api__route(&c) == 0 ? 0 : c.status;
    *pattern = c.route;
    free(c.path);
    free(c.segbuf);
    return rc;
}

/*
 * Route every concrete path of template (its enumerated parameters expanded, the others a
 * sample value) with method, marking the routes reached. Returns how many failed.
 */
static int try_paths(json_t *doc, json_t *params, const char *tmpl, int method, const char *what)
{
    const char *open = strchr(tmpl, '{');
    if (!open) {
        const char *pattern = NULL;
        int st = route(method, tmpl, &pattern);
        if (st) {
            print_error("%s: the router answers %d to %s\n", what, st, tmpl);
            return 1;
        }
        for (size_t i = 0; i < ntable; i++)
            if (table[i].pattern == pattern)
                table[i].hit |= method;
        return 0;
    }
    const char *close = strchr(open, '}');
    char name[64];
    snprintf(name, sizeof(name), "%.*s", (int)(close - open - 1), open + 1);
    json_t *schema = param_schema(doc, params, name);
    if (!schema) {
        print_error("%s: path parameter {%s} is not declared\n", what, name);
        return 1;
    }
    json_t *values = json_object_get(schema, "enum");
    json_t *sample = json_array();
    if (!values) {
        json_array_append_new(sample, json_string("12"));
        values = sample;
    }
    int bad = 0;
    size_t i;
    json_t *v;
    json_array_foreach(values, i, v)
    {
        char *next =
            xasprintf("%.*s%s%s", (int)(open - tmpl), tmpl, json_string_value(v), close + 1);
        bad += try_paths(doc, params, next, method, what);
        free(next);
    }
    json_decref(sample);
    return bad;
}

static void test_document_and_router_agree(void **state)
{
    json_error_t je;
    json_t *doc = json_loads(api__openapi_json, 0, &je);
    if (!doc)
        fail_msg("the served document is not JSON: %s", je.text);
    assert_string_equal(json_string_value(json_object_get(doc, "openapi")), "3.1.0");
    ntable = 0;
    api__routes_each(collect, NULL);
    assert_true(ntable > 30);

    int bad = 0, ops = 0;
    const char *path;
    json_t *item;
    json_object_foreach(json_object_get(doc, "paths"), path, item)
    {
        if (probe(path))
            continue;
        const char *m;
        json_t *op;
        json_object_foreach(item, m, op)
        {
            int method = method_of(m);
            if (!method)
                continue;
            ops++;
            json_t *params = json_array();
            json_array_extend(params, json_object_get(item, "parameters"));
            json_array_extend(params, json_object_get(op, "parameters"));
            char what[200];
            snprintf(what, sizeof(what), "%s %s", m, path);
            bad += try_paths(doc, params, path, method, what);
            json_decref(params);
        }
    }
    static const struct {
        int m;
        const char *name;
    } names[] = {
        {API_M_GET, "GET"}, {API_M_POST, "POST"}, {API_M_PUT, "PUT"}, {API_M_DELETE, "DELETE"}};
    for (size_t i = 0; i < ntable; i++)
        for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
            if ((table[i].methods & names[k].m) && !(table[i].hit & names[k].m)) {
                print_error("route %s %s is not in docs/openapi.yaml\n", names[k].name,
                            table[i].pattern);
                bad++;
            }
    json_decref(doc);
    assert_true(ops > 40);
    if (bad)
        fail_msg("docs/openapi.yaml and src/api/routes.c disagree in %d places (above)", bad);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_document_and_router_agree),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
