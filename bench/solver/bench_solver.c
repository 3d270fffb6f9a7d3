/*
 * bench_solver: how fast the solver is, and how much memory it takes.
 *
 *   bench_solver [--catalog DIR] [--runs N] [--write-synthetic DIR]
 *
 * Cases (docs/solver.md has the figures):
 *   hadoop-1000      hadoop-distributed from the Coopr catalogue, 1,000 nodes
 *   synthetic-10000  the synthetic template below, 48 constrained services, 10,000 nodes
 *   synthetic-expand the same cluster expanded to 12,000 nodes, existing nodes kept
 *   hadoop-ids-*     a 10,000-node hadoop-distributed cluster given one entry per
 *                    node (each with an id), expanded to 11,000 / shrunk to 5,000
 *   unsat-hadoop     hadoop-distributed with a namenode quantity of 2..2 (it must
 *                    coexist with the 1..1 resource manager): no layout
 *   unsat-synthetic  the synthetic template with every worker and utility
 *                    service capped at 400 nodes: 10,000 nodes cannot be placed
 *
 * The synthetic template (--write-synthetic DIR writes its whole catalogue,
 * for `drover solve --catalog DIR --template synthetic-48`), on provider "p"
 * with hardware types h-small (cost 1), h-medium (2), h-large (4) and image
 * types i1, i2; 48 services, every one in some constraint:
 *   m0..m5   masters, one must-coexist group, each 1..1
 *   b0, b1   backup masters, must coexist, each 1..1, can't coexist with m0
 *   w0..w11  workers, four must-coexist groups of three, w0/w3/w6/w9 at least 2;
 *            can't coexist: m1-w0, m2-w3, b1-w6, m3-w9, w8-w11
 *   z0..z7   quorum services, each 3..5; can't coexist: z0-z1, z2-z3, z4-z5, z6-z7, z0-w0
 *   e0..e7   edge services, each 1..2; e0..e3 on h-large only, e4..e7 on i2 only;
 *            can't coexist: e_i with m_(i mod 6)
 *   u0..u11  utilities: u0..u3 on h-medium or h-large, u4..u7 on i1,
 *            u8..u11 at least 1; can't coexist: u0-u4, u8-e0, u1-u5-u9 (as a set)
 * Wall time is the best of --runs runs (default 5) of a whole solver_solve()
 * (catalogue already loaded); peak RSS is the process's, from getrusage().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "model.h"
#include "solver.h"
#include "xalloc.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, const struct drv_err *e)
{
    fprintf(stderr, "bench_solver: %s: %s\n", what, e->msg);
    exit(1);
}

static void put(struct model_catalog *c, enum model_kind k, json_t *j)
{
    struct drv_err err = {0};
    if (model_catalog_put_json(c, k, j, NULL, &err))
        die("synthetic catalogue", &err);
    json_decref(j);
}

static json_t *names(const char *prefix, int from, int to)
{
    json_t *a = json_array();
    for (int i = from; i <= to; i++) {
        char b[16];
        snprintf(b, sizeof(b), "%s%d", prefix, i);
        json_array_append_new(a, json_string(b));
    }
    return a;
}

static json_t *pairset(const char *a, const char *b)
{
    return json_pack("[s,s]", a, b);
}

static json_t *quant(int min, int max)
{
    json_t *q = json_object();
    if (min >= 0)
        json_object_set_new(q, "min", json_integer(min));
    if (max >= 0)
        json_object_set_new(q, "max", json_integer(max));
    return json_pack("{s:o}", "quantities", q);
}

/* worker_cap > 0: workers and utilities capped (the unsatisfiable variant). */
static json_t *synthetic_template(int worker_cap)
{
    json_t *all = json_array(), *must = json_array(), *cant = json_array(), *cons = json_object();
    const char *groups[][2] = {{"m", "5"}, {"b", "1"}, {"w", "11"},
                               {"z", "7"}, {"e", "7"}, {"u", "11"}};
    for (size_t g = 0; g < 6; g++)
        json_array_extend(all, names(groups[g][0], 0, atoi(groups[g][1])));
    json_array_append_new(must, names("m", 0, 5));
    json_array_append_new(must, names("b", 0, 1));
    for (int i = 0; i < 4; i++) {
        json_array_append_new(must, names("w", 3 * i, 3 * i + 2));
        char w[8];
        snprintf(w, sizeof(w), "w%d", 3 * i);
        json_object_set_new(cons, w, quant(2, worker_cap > 0 ? worker_cap : -1));
        if (worker_cap > 0)
            for (int k = 1; k < 3; k++) {
                snprintf(w, sizeof(w), "w%d", 3 * i + k);
                json_object_set_new(cons, w, quant(-1, worker_cap));
            }
    }
    for (int i = 0; i < 6; i++) {
        char m[8];
        snprintf(m, sizeof(m), "m%d", i);
        json_object_set_new(cons, m, quant(1, 1));
    }
    json_object_set_new(cons, "b0", quant(1, 1));
    json_object_set_new(cons, "b1", quant(1, 1));
    json_array_append_new(cant, pairset("m0", "b0"));
    json_array_append_new(cant, pairset("m1", "w0"));
    json_array_append_new(cant, pairset("m2", "w3"));
    json_array_append_new(cant, pairset("b1", "w6"));
    json_array_append_new(cant, pairset("m3", "w9"));
    json_array_append_new(cant, pairset("w8", "w11"));
    for (int i = 0; i < 8; i++) {
        char z[8], e[8], m[8];
        snprintf(z, sizeof(z), "z%d", i);
        json_object_set_new(cons, z, quant(3, 5));
        snprintf(e, sizeof(e), "e%d", i);
        json_t *q = quant(1, 2);
        if (i < 4)
            json_object_set_new(q, "hardwaretypes", json_pack("[s]", "h-large"));
        else
            json_object_set_new(q, "imagetypes", json_pack("[s]", "i2"));
        json_object_set_new(cons, e, q);
        snprintf(m, sizeof(m), "m%d", i % 6);
        json_array_append_new(cant, pairset(e, m));
    }
    for (int i = 0; i < 8; i += 2) {
        char a[8], b[8];
        snprintf(a, sizeof(a), "z%d", i);
        snprintf(b, sizeof(b), "z%d", i + 1);
        json_array_append_new(cant, pairset(a, b));
    }
    json_array_append_new(cant, pairset("z0", "w0"));
    for (int i = 0; i < 12; i++) {
        char u[8];
        snprintf(u, sizeof(u), "u%d", i);
        json_t *q = quant(i < 8 ? -1 : 1, worker_cap > 0 ? worker_cap : -1);
        if (i < 4)
            json_object_set_new(q, "hardwaretypes", json_pack("[s,s]", "h-medium", "h-large"));
        else if (i < 8)
            json_object_set_new(q, "imagetypes", json_pack("[s]", "i1"));
        json_object_set_new(cons, u, q);
    }
    json_array_append_new(cant, pairset("u0", "u4"));
    json_array_append_new(cant, pairset("u8", "e0"));
    json_array_append_new(cant, json_pack("[s,s,s]", "u1", "u5", "u9"));
    return json_pack("{s:s,s:s,s:{s:O,s:s,s:s,s:s},s:{s:o},s:{s:{s:o,s:o},s:o}}", "name",
                     worker_cap > 0 ? "synthetic-capped" : "synthetic-48", "description",
                     "48 constrained services (bench/solver/bench_solver.c)", "defaults",
                     "services", all, "provider", "p", "hardwaretype", "h-medium", "imagetype",
                     "i1", "compatibility", "services", all, "constraints", "layout", "mustcoexist",
                     must, "cantcoexist", cant, "services", cons);
}

static struct model_catalog *synthetic_catalog(void)
{
    struct model_catalog *c = model_catalog_new();
    put(c, MODEL_PROVIDER, json_pack("{s:s,s:s}", "name", "p", "providertype", "dummy"));
    const char *hw[] = {"h-small", "h-medium", "h-large"};
    for (int i = 0; i < 3; i++)
        put(c, MODEL_HARDWARETYPE,
            json_pack("{s:s,s:{s:{s:i}}}", "name", hw[i], "providermap", "p", "cost", 1 << i));
    put(c, MODEL_IMAGETYPE, json_pack("{s:s,s:{s:{}}}", "name", "i1", "providermap", "p"));
    put(c, MODEL_IMAGETYPE, json_pack("{s:s,s:{s:{}}}", "name", "i2", "providermap", "p"));
    json_t *t = synthetic_template(0);
    json_t *svcs = json_object_get(json_object_get(t, "compatibility"), "services");
    for (size_t i = 0; i < json_array_size(svcs); i++)
        put(c, MODEL_SERVICE, json_pack("{s:O}", "name", json_array_get(svcs, i)));
    put(c, MODEL_TEMPLATE, t);
    put(c, MODEL_TEMPLATE, synthetic_template(400));
    return c;
}

/* The synthetic catalogue as a directory that `drover solve --catalog` reads. */
static void write_catalog(const struct model_catalog *c, const char *dir)
{
    mkdir(dir, 0755);
    for (int k = 0; k < MODEL_KIND_COUNT; k++) {
        if (model_catalog_count(c, k) == 0)
            continue;
        char *sub = xasprintf("%s/%s", dir, model_kind_dir(k));
        mkdir(sub, 0755);
        for (size_t i = 0; i < model_catalog_count(c, k); i++) {
            const char *name = *(char *const *)model_catalog_at(c, k, i);
            char *path = xasprintf("%s/%s.json", sub, name);
            json_t *j = model_catalog_get_json(c, k, name);
            if (json_dump_file(j, path, JSON_INDENT(2)) != 0) {
                fprintf(stderr, "bench_solver: cannot write %s\n", path);
                exit(1);
            }
            json_decref(j);
            free(path);
        }
        free(sub);
    }
}

struct result {
    double best_ms;
    int rc;
    char msg[512];
    unsigned layouts;
};

static struct result run(const struct solver_request *r, int runs, struct model_layout **keep)
{
    struct result res = {.best_ms = 1e30};
    for (int i = 0; i < runs; i++) {
        struct model_layout *l = NULL;
        struct drv_err err = {0};
        double t0 = now();
        res.rc = solver_solve(r, &l, &err);
        double ms = (now() - t0) * 1e3;
        if (ms < res.best_ms)
            res.best_ms = ms;
        snprintf(res.msg, sizeof(res.msg), "%s", err.msg);
        res.layouts = l ? (unsigned)l->n_nodes : 0;
        if (keep && i == runs - 1)
            *keep = l;
        else
            model_layout_free(l);
    }
    return res;
}

static long peak_rss_kb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

static void report(const char *name, unsigned nodes, const struct result *r)
{
    if (r->rc == 0)
        printf("%-18s nodes=%-6u time_ms=%9.3f node_layouts=%u peak_rss_kb=%ld\n", name, nodes,
               r->best_ms, r->layouts, peak_rss_kb());
    else
        printf("%-18s nodes=%-6u time_ms=%9.3f no-layout peak_rss_kb=%ld reason=\"%s\"\n", name,
               nodes, r->best_ms, peak_rss_kb(), r->msg);
}

int main(int argc, char **argv)
{
    char def[1024];
    snprintf(def, sizeof(def), "%s/../shared/fixtures/coopr-templates", DROVER_SOURCE_DIR);
    const char *dir = def, *write = NULL;
    int runs = 5;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--catalog") == 0 && i + 1 < argc)
            dir = argv[++i];
        else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (strcmp(argv[i], "--write-synthetic") == 0 && i + 1 < argc)
            write = argv[++i];
        else {
            fprintf(stderr, "usage: bench_solver [--catalog DIR] [--runs N] "
                            "[--write-synthetic DIR]\n");
            return 2;
        }
    }
    if (runs < 1)
        runs = 1;
    setvbuf(stdout, NULL, _IOLBF, 0);
    struct drv_err err = {0};
    struct model_catalog *coopr = model_catalog_new();
    if (model_catalog_load_dir(coopr, dir, &err))
        die(dir, &err);
    struct model_catalog *syn = synthetic_catalog();
    if (write)
        write_catalog(syn, write);
    printf("bench_solver: best of %d runs, peak RSS is the process's so far\n", runs);

    struct model_template *h;
    if (model_template_resolve(coopr, "hadoop-distributed", &h, &err))
        die("hadoop-distributed", &err);
    struct solver_request r = {.catalog = coopr, .tmpl = h, .nodes = 1000};
    struct result res = run(&r, runs, NULL);
    report("hadoop-1000", 1000, &res);

    struct model_template *s;
    if (model_template_resolve(syn, "synthetic-48", &s, &err))
        die("synthetic-48", &err);
    struct model_layout *l = NULL;
    struct solver_request rs = {.catalog = syn, .tmpl = s, .nodes = 10000};
    res = run(&rs, runs, &l);
    report("synthetic-10000", 10000, &res);
    if (res.rc == 0 && solver_check(&rs, l, &err))
        die("synthetic-10000: the layout fails the check", &err);
    if (res.rc == 0 && getenv("BENCH_PRINT")) {
        json_t *j = model_layout_to_json(l, false);
        json_dumpf(j, stdout, JSON_INDENT(1) | JSON_COMPACT);
        putchar('\n');
        json_decref(j);
    }
    if (res.rc == 0) {
        rs.existing = l;
        rs.nodes = 12000;
        res = run(&rs, runs, NULL);
        report("synthetic-expand", 12000, &res);
    }
    model_layout_free(l);

    /* An existing 10,000-node hadoop cluster, one entry (with an id) per node. */
    {
        r.nodes = 10000;
        struct model_layout *base = NULL;
        res = run(&r, 1, &base);
        struct model_layout *per = model_layout_new();
        unsigned id = 0;
        for (size_t i = 0; i < base->n_nodes; i++)
            for (unsigned k = 0; k < base->nodes[i].count; k++) {
                char name[32];
                snprintf(name, sizeof(name), "node-%05u", id++);
                model_layout_add(per, (const char *const *)base->nodes[i].services,
                                 base->nodes[i].n_services, base->nodes[i].hardwaretype,
                                 base->nodes[i].imagetype, 1, name);
            }
        struct solver_request re = r;
        re.existing = per;
        re.nodes = 11000;
        res = run(&re, runs, NULL);
        report("hadoop-ids-expand", 11000, &res);
        re.nodes = 5000;
        res = run(&re, runs, NULL);
        report("hadoop-ids-shrink", 5000, &res);
        model_layout_free(per);
        model_layout_free(base);
        r.nodes = 1000;
    }

    /* hadoop with a namenode quantity 2..2. */
    for (size_t i = 0; i < h->n_svc_constraints; i++)
        if (strcmp(h->svc_constraints[i].service, "hadoop-hdfs-namenode") == 0)
            h->svc_constraints[i].qmin = h->svc_constraints[i].qmax = 2;
    r.nodes = 1000;
    res = run(&r, runs, NULL);
    report("unsat-hadoop", 1000, &res);

    struct model_template *sc;
    if (model_template_resolve(syn, "synthetic-capped", &sc, &err))
        die("synthetic-capped", &err);
    struct solver_request ru = {.catalog = syn, .tmpl = sc, .nodes = 10000};
    res = run(&ru, runs, NULL);
    report("unsat-synthetic", 10000, &res);

    model_template_free(sc);
    model_template_free(s);
    model_template_free(h);
    model_catalog_free(syn);
    model_catalog_free(coopr);
    return 0;
}
