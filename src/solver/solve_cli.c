/*
 * solve_cli: `drover solve`, the offline front end of the solver.
 *
 *   drover solve --catalog DIR --template NAME --nodes N [--services a,b]
 *                [--provider P] [--hardwaretype H] [--imagetype I]
 *                [--existing LAYOUT.json] [--exclude LAYOUT.json]
 *                [--json] [--per-node]
 *
 * The only file in the solver module that does I/O: it loads the catalogue
 * directory and the layout files, calls solver_solve(), prints the layout.
 * No ZooKeeper, no PostgreSQL. Exit status: 0 a layout, 1 none (or a bad
 * catalogue or file; the reason on stderr), 2 a usage error.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "solver.h"
#include "xalloc.h"

static const char usage[] =
    "usage: drover solve --catalog DIR --template NAME --nodes N [--services a,b]\n"
    "                    [--provider P] [--hardwaretype H] [--imagetype I]\n"
    "                    [--existing LAYOUT.json] [--exclude LAYOUT.json] [--json] [--per-node]\n";

struct opts {
    const char *catalog, *tmpl, *nodes, *services, *provider, *hardwaretype, *imagetype;
    const char *existing, *exclude;
    int json, per_node;
};

static int parse_args(int argc, char **argv, struct opts *o)
{
    static const struct {
        const char *name;
        size_t off;
    } valued[] = {
        {"catalog", offsetof(struct opts, catalog)},
        {"template", offsetof(struct opts, tmpl)},
        {"nodes", offsetof(struct opts, nodes)},
        {"services", offsetof(struct opts, services)},
        {"provider", offsetof(struct opts, provider)},
        {"hardwaretype", offsetof(struct opts, hardwaretype)},
        {"imagetype", offsetof(struct opts, imagetype)},
        {"existing", offsetof(struct opts, existing)},
        {"exclude", offsetof(struct opts, exclude)},
    };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--json") == 0) {
            o->json = 1;
            continue;
        }
        if (strcmp(a, "--per-node") == 0) {
            o->per_node = 1;
            continue;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            fputs(usage, stdout);
            return 1;
        }
        if (strncmp(a, "--", 2) != 0) {
            fprintf(stderr, "drover solve: unexpected argument \"%s\"\n%s", a, usage);
            return -1;
        }
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        size_t k;
        for (k = 0; k < sizeof(valued) / sizeof(valued[0]); k++)
            if (strlen(valued[k].name) == len && strncmp(valued[k].name, name, len) == 0)
                break;
        if (k == sizeof(valued) / sizeof(valued[0])) {
            fprintf(stderr, "drover solve: unknown option \"%s\"\n%s", a, usage);
            return -1;
        }
        const char *val = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (!val) {
            fprintf(stderr, "drover solve: option \"--%s\" needs a value\n%s", valued[k].name,
                    usage);
            return -1;
        }
        *(const char **)((char *)o + valued[k].off) = val;
    }
    if (!o->catalog || !o->tmpl || !o->nodes) {
        fprintf(stderr, "drover solve: --catalog, --template and --nodes are required\n%s", usage);
        return -1;
    }
    return 0;
}

static int load_layout(const char *path, struct model_layout **out)
{
    json_error_t jerr;
    json_t *j = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (!j) {
        fprintf(stderr, "drover solve: %s:%d:%d: %s\n", path, jerr.line, jerr.column, jerr.text);
        return -1;
    }
    struct drv_err err = {0};
    int rc = model_layout_from_json(j, out, &err);
    json_decref(j);
    if (rc)
        fprintf(stderr, "drover solve: %s: %s\n", path, err.msg);
    return rc;
}

static void print_text(const struct model_layout *l, const struct solver_request *r)
{
    printf("template %s, %u nodes, provider %s\n", r->tmpl->name, model_layout_size(l),
           r->provider ? r->provider : r->tmpl->default_provider);
    for (size_t i = 0; i < l->n_nodes; i++) {
        const struct model_node_layout *n = &l->nodes[i];
        printf("%6u x %s %s:", n->count, n->hardwaretype, n->imagetype);
        for (size_t k = 0; k < n->n_services; k++)
            printf(" %s", n->services[k]);
        if (n->id)
            printf(" (id %s)", n->id);
        putchar('\n');
    }
}

int solver_cli_main(int argc, char **argv)
{
    struct opts o = {0};
    int prc = parse_args(argc, argv, &o);
    if (prc)
        return prc > 0 ? 0 : 2;
    char *end;
    errno = 0;
    unsigned long nodes = strtoul(o.nodes, &end, 10);
    if (*o.nodes == '\0' || *end != '\0' || errno || nodes > 10000000 || o.nodes[0] == '-') {
        fprintf(stderr, "drover solve: --nodes: expected a number of nodes, got \"%s\"\n", o.nodes);
        return 2;
    }

    int code = 1;
    struct drv_err err = {0};
    struct model_catalog *cat = model_catalog_new();
    struct model_template *t = NULL;
    struct model_layout *existing = NULL, *excluded = NULL, *out = NULL;
    char *svc_copy = NULL;
    const char **svcs = NULL;
    size_t n_svcs = 0;

    if (model_catalog_load_dir(cat, o.catalog, &err)) {
        fprintf(stderr, "drover solve: catalogue %s: %s\n", o.catalog, err.msg);
        goto done;
    }
    if (model_template_resolve(cat, o.tmpl, &t, &err)) {
        fprintf(stderr, "drover solve: %s\n", err.msg);
        goto done;
    }
    if (o.existing && load_layout(o.existing, &existing))
        goto done;
    if (o.exclude && load_layout(o.exclude, &excluded))
        goto done;
    if (o.services) {
        svc_copy = xstrdup(o.services);
        svcs = xcalloc(strlen(svc_copy) + 1, sizeof(char *));
        char *save = NULL;
        for (char *tok = strtok_r(svc_copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
            if (*tok)
                svcs[n_svcs++] = tok;
    }
    struct solver_request r = {
        .catalog = cat,
        .tmpl = t,
        .nodes = (unsigned)nodes,
        .services = svcs,
        .n_services = n_svcs,
        .provider = o.provider,
        .hardwaretype = o.hardwaretype,
        .imagetype = o.imagetype,
        .existing = existing,
        .excluded = excluded,
    };
    if (o.services && n_svcs == 0) {
        fprintf(stderr, "drover solve: --services: expected a comma-separated list\n");
        code = 2;
        goto done;
    }
    if (solver_solve(&r, &out, &err)) {
        fprintf(stderr, "drover solve: %s: %s\n", drv_strerror(err.code), err.msg);
        goto done;
    }
    if (o.json) {
        json_t *j = model_layout_to_json(out, o.per_node);
        json_dumpf(j, stdout, JSON_INDENT(2));
        putchar('\n');
        json_decref(j);
    } else {
        print_text(out, &r);
    }
    fflush(stdout);
    code = 0;
done:
    model_layout_free(out);
    model_layout_free(existing);
    model_layout_free(excluded);
    model_template_free(t);
    model_catalog_free(cat);
    free(svcs);
    free(svc_copy);
    return code;
}
