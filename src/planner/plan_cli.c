/*
 * plan_cli: `drover plan`, Drover's dry run. It prints, offline, every task an
 * operation would run, before anything runs:
 *
 *   drover plan --catalog DIR --template NAME --nodes N --operation OP
 *               [--services a,b] [--existing LAYOUT.json] [--target LAYOUT.json]
 *               [--format json|dot|stages] [--output FILE]
 *
 * The starting layout is --existing (none for create). The target layout is
 * --target when given; else the solver's answer when the operation changes
 * the layout (create, expand, shrink, add-services: --nodes is the size after
 * it; for create, --services replaces the template's default services);
 * remove-services takes the services off every node of the existing
 * layout; the other operations keep the existing layout. --services is the
 * subset acted on (configure, start, stop, restart, upgrade) or the services
 * added or removed.
 *
 * This file is the CLI front and the one file of the planner that does I/O.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planner.h"
#include "planner_model.h"
#include "xalloc.h"

#ifdef DROVER_HAVE_SOLVER
#include "solver.h"
#endif

static void usage(FILE *f)
{
    fprintf(f, "usage: drover plan --catalog DIR --template NAME --operation OP [--nodes N]\n"
               "                   [--services a,b,...] [--existing LAYOUT.json]\n"
               "                   [--target LAYOUT.json] [--format json|dot|stages]\n"
               "                   [--output FILE]\n"
               "operations: create delete expand shrink add-services remove-services configure\n"
               "            configure-restart start stop restart upgrade\n");
}

static int load_layout(const char *path, struct model_layout **out, struct drv_err *err)
{
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    if (j == NULL)
        return drv_err_set(err, DRV_EINVAL, 0, "%s:%d: %s", path, je.line, je.text);
    int rc = model_layout_from_json(j, out, err);
    json_decref(j);
    if (rc)
        drv_err_prefix(err, "%s", path);
    return rc;
}

/* The existing layout without the given services (nodes keep their ids). */
static struct model_layout *without_services(const struct planner_input *in, char **svcs, size_t n)
{
    struct model_layout *l = model_layout_new();
    for (size_t i = 0; i < in->start.n_nodes; i++) {
        const struct planner_node *nd = &in->start.nodes[i];
        const char **keep = xcalloc(nd->n_services + 1, sizeof(*keep));
        size_t m = 0;
        for (size_t k = 0; k < nd->n_services; k++) {
            int drop = 0;
            for (size_t d = 0; d < n; d++)
                drop |= strcmp(nd->services[k], svcs[d]) == 0;
            if (!drop)
                keep[m++] = nd->services[k];
        }
        model_layout_add(l, keep, m, nd->hardwaretype, nd->imagetype, 1, nd->id);
        free(keep);
    }
    return l;
}

/* The existing layout with every node named, so that the target can keep the ids. */
static struct model_layout *named(const struct planner_input *in)
{
    struct model_layout *l = model_layout_new();
    for (size_t i = 0; i < in->start.n_nodes; i++) {
        const struct planner_node *nd = &in->start.nodes[i];
        model_layout_add(l, nd->services, nd->n_services, nd->hardwaretype, nd->imagetype, 1,
                         nd->id);
    }
    return l;
}

/*
 * The target layout from the solver. The solver gets the existing layout as
 * the user gave it (identical nodes grouped, which keeps its search small);
 * planner_input_from_model() then pairs its nodes with the named ones.
 */
static int solve(const struct model_catalog *c, const struct model_template *t,
                 const struct model_layout *existing, unsigned nodes, char **svcs, size_t n_svcs,
                 enum planner_op op, struct model_layout **out, struct drv_err *err)
{
#ifdef DROVER_HAVE_SOLVER
    struct solver_request req;
    memset(&req, 0, sizeof(req));
    req.catalog = c;
    req.tmpl = t;
    req.nodes = nodes;
    req.existing = existing;
    req.cmp_prefers_supersets = true;
    const char **all = NULL;
    size_t n_all = 0, cap = 0;
    if (op == PLANNER_OP_ADD_SERVICES) {
        /* The cluster's services after the operation: what it has, and the new ones. */
        for (size_t i = 0; existing && i < existing->n_nodes; i++)
            for (size_t k = 0; k < existing->nodes[i].n_services; k++) {
                const char *sv = existing->nodes[i].services[k];
                int dup = 0;
                for (size_t j = 0; j < n_all; j++)
                    dup |= strcmp(all[j], sv) == 0;
                if (!dup) {
                    XGROW(all, cap, n_all + 1);
                    all[n_all++] = sv;
                }
            }
        for (size_t k = 0; k < n_svcs; k++) {
            XGROW(all, cap, n_all + 1);
            all[n_all++] = svcs[k];
        }
        req.services = all;
        req.n_services = n_all;
    } else if (op == PLANNER_OP_CREATE && n_svcs > 0) {
        req.services = (const char *const *)svcs;
        req.n_services = n_svcs;
    }
    int rc = solver_solve(&req, out, err);
    free(all);
    if (rc < 0)
        drv_err_prefix(err, "solver");
    return rc;
#else
    (void)c, (void)t, (void)existing, (void)nodes, (void)svcs, (void)n_svcs, (void)out;
    return drv_err_set(err, DRV_EINVAL, 0,
                       "%s changes the layout and this build has no solver: pass --target",
                       planner_op_name(op));
#endif
}

static int run(int argc, char **argv, FILE **outp, struct drv_err *err)
{
    static const struct option opts[] = {
        {"catalog", required_argument, NULL, 'c'},
        {"template", required_argument, NULL, 't'},
        {"nodes", required_argument, NULL, 'n'},
        {"operation", required_argument, NULL, 'o'},
        {"services", required_argument, NULL, 's'},
        {"existing", required_argument, NULL, 'e'},
        {"target", required_argument, NULL, 'T'},
        {"format", required_argument, NULL, 'f'},
        {"output", required_argument, NULL, 'O'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *catalog = NULL, *tmpl_name = NULL, *op_name = NULL, *services = NULL;
    const char *existing_path = NULL, *target_path = NULL, *format = "json", *output = NULL;
    long nodes = -1;
    optind = 0; /* GNU: start over, the CLI may be called more than once */
    opterr = 0;
    for (int ch; (ch = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        switch (ch) {
        case 'c':
            catalog = optarg;
            break;
        case 't':
            tmpl_name = optarg;
            break;
        case 'n': {
            char *end;
            errno = 0;
            nodes = strtol(optarg, &end, 10);
            if (errno || *end || nodes < 1 || nodes > 10000000)
                return drv_err_set(err, 2, 0, "--nodes: expected 1 to 10000000, got \"%s\"",
                                   optarg);
            break;
        }
        case 'o':
            op_name = optarg;
            break;
        case 's':
            services = optarg;
            break;
        case 'e':
            existing_path = optarg;
            break;
        case 'T':
            target_path = optarg;
            break;
        case 'f':
            format = optarg;
            break;
        case 'O':
            output = optarg;
            break;
        case 'h':
            usage(stdout);
            return 1; /* not an error: caller returns 0 */
        default:
            return drv_err_set(err, 2, 0, "unknown option \"%s\"", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return drv_err_set(err, 2, 0, "unexpected argument \"%s\"", argv[optind]);
    if (!catalog || !tmpl_name || !op_name)
        return drv_err_set(err, 2, 0, "--catalog, --template and --operation are required");
    int op = planner_op_parse(op_name);
    if (op < 0 || op == PLANNER_OP_ROLLBACK)
        return drv_err_set(err, 2, 0, "unknown operation \"%s\"", op_name);
    if (strcmp(format, "json") && strcmp(format, "dot") && strcmp(format, "stages"))
        return drv_err_set(err, 2, 0, "unknown format \"%s\"", format);
    if (op != PLANNER_OP_CREATE && existing_path == NULL)
        return drv_err_set(err, 2, 0, "%s needs --existing", op_name);
    if ((op == PLANNER_OP_CREATE || op == PLANNER_OP_EXPAND || op == PLANNER_OP_SHRINK) &&
        nodes < 0 && target_path == NULL)
        return drv_err_set(err, 2, 0, "%s needs --nodes", op_name);
    if ((op == PLANNER_OP_ADD_SERVICES || op == PLANNER_OP_REMOVE_SERVICES) && services == NULL)
        return drv_err_set(err, 2, 0, "%s needs --services", op_name);

    /* From here on, errors are not usage errors. */
    int rc;
    char **svcs = NULL;
    size_t n_svcs = 0, cap = 0;
    if (services) {
        char *dup = xstrdup(services), *save = NULL;
        for (char *tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            XGROW(svcs, cap, n_svcs + 1);
            svcs[n_svcs++] = xstrdup(tok);
        }
        free(dup);
    }
    struct model_catalog *c = model_catalog_new();
    struct model_template *t = NULL;
    struct model_layout *existing = NULL, *target = NULL, *named_existing = NULL;
    struct planner_input *in0 = NULL, *in = NULL;
    struct planner_plan *plan = NULL;
    char *text = NULL;

    if ((rc = model_catalog_load_dir(c, catalog, err)) < 0)
        goto out;
    if ((rc = model_template_resolve(c, tmpl_name, &t, err)) < 0)
        goto out;
    if (existing_path && (rc = load_layout(existing_path, &existing, err)) < 0)
        goto out;
    /* Name the existing nodes first, so that the target keeps their ids. */
    if (existing) {
        if ((rc = planner_input_from_model(c, t, existing, NULL, &in0, err)) < 0)
            goto out;
        named_existing = named(in0);
    }
    if (target_path) {
        if ((rc = load_layout(target_path, &target, err)) < 0)
            goto out;
    } else if (op == PLANNER_OP_REMOVE_SERVICES) {
        target = without_services(in0, svcs, n_svcs);
    } else if (planner_op_changes_layout((enum planner_op)op)) {
        unsigned size = nodes > 0 ? (unsigned)nodes : (existing ? model_layout_size(existing) : 0);
        if ((rc = solve(c, t, existing, size, svcs, n_svcs, (enum planner_op)op, &target, err)) < 0)
            goto out;
    }
    if ((rc = planner_input_from_model(c, t, named_existing, target, &in, err)) < 0)
        goto out;
    int subset = !(op == PLANNER_OP_ADD_SERVICES || op == PLANNER_OP_REMOVE_SERVICES);
    struct planner_request req = planner_input_request(
        in, (enum planner_op)op, subset ? (const char *const *)svcs : NULL, subset ? n_svcs : 0);
    if ((rc = planner_build(&req, &plan, err)) < 0)
        goto out;

    if (strcmp(format, "dot") == 0) {
        text = planner_plan_to_dot(plan, NULL);
    } else if (strcmp(format, "stages") == 0) {
        struct planner_stages *st = NULL;
        if ((rc = planner_stages(plan, &st, err)) < 0)
            goto out;
        text = planner_stages_to_text(plan, st);
        planner_stages_free(st);
    } else {
        text = planner_plan_to_json_lines(plan, NULL); /* one task per line */
    }
    if (output) {
        *outp = fopen(output, "w");
        if (*outp == NULL) {
            rc = drv_err_set(err, DRV_EIO, errno, "cannot write \"%s\": %s", output,
                             strerror(errno));
            goto out;
        }
    }
    fputs(text, *outp);
    if (text[0] && text[strlen(text) - 1] != '\n')
        fputc('\n', *outp);
    if (output && fclose(*outp) != 0)
        rc = drv_err_set(err, DRV_EIO, errno, "cannot write \"%s\"", output);
    if (output)
        *outp = NULL;
out:
    free(text);
    planner_plan_free(plan);
    planner_input_free(in);
    planner_input_free(in0);
    model_layout_free(existing);
    model_layout_free(named_existing);
    model_layout_free(target);
    model_template_free(t);
    model_catalog_free(c);
    for (size_t i = 0; i < n_svcs; i++)
        free(svcs[i]);
    free(svcs);
    return rc < 0 ? rc : 0;
}

int planner_cli_main(int argc, char **argv)
{
    struct drv_err err = {0};
    FILE *out = stdout;
    int rc = run(argc, argv, &out, &err);
    if (rc == 1) /* --help */
        return 0;
    if (rc == 2) {
        fprintf(stderr, "drover plan: %s\n", err.msg);
        usage(stderr);
        return 2;
    }
    if (rc < 0) {
        fprintf(stderr, "drover plan: %s\n", err.msg);
        return 1;
    }
    return 0;
}
