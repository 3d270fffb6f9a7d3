/*
 * Unit tests for src/solver: the reference documents' examples, the Coopr
 * catalogue's hadoop-distributed at several sizes, changes to existing
 * clusters, excluded layouts, custom comparators and every error case.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "solver.h"

/* ---- fixtures -------------------------------------------------------------------- */

static struct model_catalog *coopr;

static int load_coopr(void **state)
{
    char dir[1024];
    snprintf(dir, sizeof(dir), "%s/../shared/fixtures/coopr-templates", DROVER_SOURCE_DIR);
    coopr = model_catalog_new();
    struct drv_err err = {0};
    if (model_catalog_load_dir(coopr, dir, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return -1;
    }
    return 0;
}

static int free_coopr(void **state)
{
    model_catalog_free(coopr);
    return 0;
}

static void put(struct model_catalog *c, enum model_kind k, const char *text)
{
    json_error_t jerr;
    json_t *j = json_loads(text, 0, &jerr);
    if (!j)
        fail_msg("bad test json: %s: %s", jerr.text, text);
    struct drv_err err = {0};
    if (model_catalog_put_json(c, k, j, NULL, &err))
        fail_msg("%s", err.msg);
    json_decref(j);
}

/* A small catalogue: provider p, hardware hw1 (cost 2) and hw2 (cost 1), images img1, img2. */
static struct model_catalog *small_catalog(void)
{
    struct model_catalog *c = model_catalog_new();
    put(c, MODEL_PROVIDER, "{\"name\": \"p\", \"providertype\": \"dummy\"}");
    put(c, MODEL_PROVIDER, "{\"name\": \"q\"}");
    put(c, MODEL_HARDWARETYPE, "{\"name\": \"hw1\", \"providermap\": {\"p\": {\"cost\": \"2\"}}}");
    put(c, MODEL_HARDWARETYPE, "{\"name\": \"hw2\", \"providermap\": {\"p\": {\"cost\": 1}}}");
    put(c, MODEL_IMAGETYPE, "{\"name\": \"img1\", \"providermap\": {\"p\": {}}}");
    put(c, MODEL_IMAGETYPE, "{\"name\": \"img2\", \"providermap\": {\"p\": {}}}");
    const char *svcs[] = {"s1", "s2", "s3", "s4", "s5", "base"};
    for (size_t i = 0; i < sizeof(svcs) / sizeof(svcs[0]); i++) {
        char buf[128];
        snprintf(buf, sizeof(buf), "{\"name\": \"%s\"}", svcs[i]);
        put(c, MODEL_SERVICE, buf);
    }
    put(c, MODEL_SERVICE,
        "{\"name\": \"needy\", \"dependencies\": {\"runtime\": {\"requires\": "
        "[\"virtual\"], \"uses\": [\"nothere\"]}}}");
    put(c, MODEL_SERVICE, "{\"name\": \"giver\", \"dependencies\": {\"provides\": [\"virtual\"]}}");
    put(c, MODEL_SERVICE,
        "{\"name\": \"grumpy\", \"dependencies\": {\"conflicts\": [\"virtual\"]}}");
    return c;
}

static struct model_template *tmpl_from(const char *text)
{
    json_t *j = json_loads(text, 0, NULL);
    assert_non_null(j);
    struct model_template *t;
    struct drv_err err = {0};
    if (model_template_from_json(j, false, &t, &err))
        fail_msg("%s", err.msg);
    json_decref(j);
    return t;
}

static char *layout_str(const struct model_layout *l)
{
    json_t *j = model_layout_to_json(l, false);
    char *s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    return s;
}

/* Solve and return the compact JSON of the layout (or NULL with err). */
static char *solve(const struct solver_request *r, struct drv_err *err)
{
    struct model_layout *l;
    int rc = solver_solve(r, &l, err);
    if (rc)
        return NULL;
    struct drv_err e2 = {0};
    if (solver_check(r, l, &e2))
        fail_msg("solver output fails the check: %s", e2.msg);
    char *s = layout_str(l);
    model_layout_free(l);
    return s;
}

static void expect_layout(const struct solver_request *r, const char *want)
{
    struct drv_err err = {0};
    char *got = solve(r, &err);
    if (!got)
        fail_msg("no layout: %s", err.msg);
    if (strcmp(got, want) != 0)
        fail_msg("got  %s\nwant %s", got, want);
    free(got);
}

static void expect_error(const struct solver_request *r, int code, const char *msg)
{
    struct drv_err err = {0};
    struct model_layout *l = NULL;
    int rc = solver_solve(r, &l, &err);
    if (rc == 0) {
        char *s = layout_str(l);
        fail_msg("expected an error, got %s", s);
    }
    assert_int_equal(rc, code);
    if (!strstr(err.msg, msg))
        fail_msg("got \"%s\", want \"%s\"", err.msg, msg);
}

/* ---- the reference documents' examples ------------------------------------------ */

static const char *three_services =
    "{\"name\": \"three\", \"defaults\": {\"services\": [\"s1\", \"s2\", \"s3\"], \"provider\": "
    "\"p\", \"hardwaretype\": \"hw1\", \"imagetype\": \"img1\"},"
    " \"compatibility\": {\"hardwaretypes\": [\"hw1\"], \"imagetypes\": [\"img1\"]},"
    " \"constraints\": {\"layout\": {\"mustcoexist\": [[\"s1\", \"s3\"]], \"cantcoexist\": "
    "[[\"s1\", \"s2\"], [\"s2\", \"s3\"]]}, \"services\": {\"s1\": {\"quantities\": {\"min\": 1, "
    "\"max\": 1}}, \"s2\": {\"quantities\": {\"min\": 1}}}}}";

static void test_three_services(void **state)
{
    struct model_catalog *c = small_catalog();
    struct model_template *t = tmpl_from(three_services);
    struct solver_request r = {.catalog = c, .tmpl = t, .nodes = 5};
    expect_layout(&r, "{\"nodes\":[{\"services\":[\"s1\",\"s3\"],\"hardwaretype\":\"hw1\","
                      "\"imagetype\":\"img1\",\"count\":1},{\"services\":[\"s2\"],\"hardwaretype\":"
                      "\"hw1\",\"imagetype\":\"img1\",\"count\":4}]}");
    r.nodes = 1; /* s1 and s2 need two nodes at least */
    expect_error(&r, DRV_EUNSAT, "no layout of 1 nodes meets the constraints");
    model_template_free(t);
    model_catalog_free(c);
}

/* Node layouts: s1 must go on hw1, s2 on img1; hw2 is cheaper. */
static void test_node_layouts(void **state)
{
    struct model_catalog *c = small_catalog();
    struct model_template *t = tmpl_from(
        "{\"name\": \"nl\", \"defaults\": {\"services\": [\"s1\", \"s2\", \"s3\"], \"provider\": "
        "\"p\"}, \"constraints\": {\"layout\": {\"mustcoexist\": [[\"s1\", \"s3\"]], "
        "\"cantcoexist\": [[\"s1\", \"s2\"], [\"s2\", \"s3\"]]}, \"services\": {\"s1\": "
        "{\"hardwaretypes\": [\"hw1\"], \"quantities\": {\"min\": 1, \"max\": 1}}, \"s2\": "
        "{\"imagetypes\": [\"img1\"]}}}}");
    struct solver_request r = {.catalog = c, .tmpl = t, .nodes = 3};
    expect_layout(&r, "{\"nodes\":[{\"services\":[\"s1\",\"s3\"],\"hardwaretype\":\"hw1\","
                      "\"imagetype\":\"img1\",\"count\":1},{\"services\":[\"s2\"],\"hardwaretype\":"
                      "\"hw2\",\"imagetype\":\"img1\",\"count\":2}]}");
    /* A forced image type that s2 refuses. */
    r.imagetype = "img2";
    expect_error(&r, DRV_EUNSAT, "service \"s2\" cannot be placed: no hardware and image type");
    /* A forced hardware type that s1 refuses. */
    r.imagetype = NULL;
    r.hardwaretype = "hw2";
    expect_error(&r, DRV_EUNSAT, "must coexist");
    model_template_free(t);
    model_catalog_free(c);
}

/* ---- hadoop-distributed ------------------------------------------------------------ */

static const char *const one_of_each[] = {"hadoop-hdfs-namenode", "hadoop-yarn-resourcemanager",
                                          "zookeeper-server", "hbase-master"};

static bool has(const struct model_node_layout *n, const char *s)
{
    for (size_t i = 0; i < n->n_services; i++)
        if (strcmp(n->services[i], s) == 0)
            return true;
    return false;
}

static void check_hadoop(const struct model_layout *l, unsigned nodes)
{
    assert_int_equal(model_layout_size(l), nodes);
    for (size_t k = 0; k < sizeof(one_of_each) / sizeof(one_of_each[0]); k++) {
        unsigned n = 0;
        for (size_t i = 0; i < l->n_nodes; i++)
            if (has(&l->nodes[i], one_of_each[k]))
                n += l->nodes[i].count;
        assert_int_equal(n, 1);
    }
    unsigned datanodes = 0;
    for (size_t i = 0; i < l->n_nodes; i++) {
        const struct model_node_layout *n = &l->nodes[i];
        assert_true(has(n, "base"));
        if (has(n, "hadoop-hdfs-datanode")) {
            datanodes += n->count;
            assert_true(has(n, "hadoop-yarn-nodemanager"));
            assert_true(has(n, "hbase-regionserver"));
        }
        assert_false(has(n, "hadoop-yarn-resourcemanager") && has(n, "hadoop-yarn-nodemanager"));
        assert_false(has(n, "hadoop-hdfs-namenode") && has(n, "hadoop-hdfs-datanode"));
        assert_false(has(n, "hbase-master") && has(n, "hbase-regionserver"));
        assert_string_equal(n->hardwaretype, "standard-large");
        assert_string_equal(n->imagetype, "ubuntu12");
    }
    assert_int_equal(datanodes, nodes - 1);
}

static struct model_template *hadoop(void)
{
    struct model_template *t;
    struct drv_err err = {0};
    if (model_template_resolve(coopr, "hadoop-distributed", &t, &err))
        fail_msg("%s", err.msg);
    return t;
}

static void test_hadoop_sizes(void **state)
{
    struct model_template *t = hadoop();
    unsigned sizes[] = {3, 5, 50, 1000};
    for (size_t i = 0; i < 4; i++) {
        struct solver_request r = {.catalog = coopr, .tmpl = t, .nodes = sizes[i]};
        struct model_layout *l;
        struct drv_err err = {0};
        if (solver_solve(&r, &l, &err))
            fail_msg("%u nodes: %s", sizes[i], err.msg);
        check_hadoop(l, sizes[i]);
        assert_int_equal(l->n_nodes, 2);
        assert_int_equal(solver_check(&r, l, &err), 0);
        /* Deterministic: byte for byte. */
        char *a = layout_str(l), *b = solve(&r, &err);
        assert_string_equal(a, b);
        free(a);
        free(b);
        model_layout_free(l);
    }
    struct solver_request r = {.catalog = coopr, .tmpl = t, .nodes = 2};
    expect_error(&r, DRV_EUNSAT,
                 "cluster size 2 is below the minimum 3 of template \"hadoop-distributed\"");
    r.nodes = 0;
    expect_error(&r, DRV_EINVAL, "at least one node");
    model_template_free(t);
}

/* Every template of the catalogue solves at its minimum size and at 10 nodes (within max). */
static void test_all_templates(void **state)
{
    for (size_t i = 0; i < model_catalog_count(coopr, MODEL_TEMPLATE); i++) {
        const struct model_template *raw = model_catalog_at(coopr, MODEL_TEMPLATE, i);
        struct model_template *t;
        assert_int_equal(model_template_resolve(coopr, raw->name, &t, NULL), 0);
        unsigned n = t->size_min > 0 ? (unsigned)t->size_min : 1;
        struct solver_request r = {.catalog = coopr, .tmpl = t, .nodes = n};
        struct drv_err err = {0};
        char *s = solve(&r, &err);
        if (strcmp(t->name, "coopr-standalone-docker") == 0) {
            /* The catalogue's one defect: its default service is named "coopr-standalone". */
            assert_null(s);
            assert_string_equal(err.msg, "unknown service \"coopr-standalone\"");
        } else if (!s) {
            fail_msg("%s at %u: %s", t->name, n, err.msg);
        }
        free(s);
        model_template_free(t);
    }
}

/* ---- changes to existing clusters ------------------------------------------------------ */

static struct model_layout *layout_of(const char *text)
{
    json_t *j = json_loads(text, 0, NULL);
    assert_non_null(j);
    struct model_layout *l;
    struct drv_err err = {0};
    if (model_layout_from_json(j, &l, &err))
        fail_msg("%s", err.msg);
    json_decref(j);
    return l;
}

static void test_expand(void **state)
{
    struct model_template *t = hadoop();
    struct solver_request r = {.catalog = coopr, .tmpl = t, .nodes = 5};
    struct model_layout *l;
    assert_int_equal(solver_solve(&r, &l, NULL), 0);
    /* The existing datanodes run on another hardware type: they keep it. */
    free(l->nodes[1].hardwaretype);
    l->nodes[1].hardwaretype = strdup("standard-xlarge");
    r.existing = l;
    r.nodes = 8;
    struct model_layout *e;
    struct drv_err err = {0};
    if (solver_solve(&r, &e, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(e->n_nodes, 3);
    assert_int_equal(model_layout_size(e), 8);
    assert_int_equal(e->nodes[0].count, 1);
    assert_true(has(&e->nodes[0], "hadoop-hdfs-namenode"));
    assert_int_equal(e->nodes[1].count, 4);
    assert_string_equal(e->nodes[1].hardwaretype, "standard-xlarge");
    assert_int_equal(e->nodes[2].count, 3);
    assert_true(has(&e->nodes[2], "hadoop-hdfs-datanode"));
    assert_string_equal(e->nodes[2].hardwaretype, "standard-large");
    assert_int_equal(solver_check(&r, e, &err), 0);
    model_layout_free(e);
    /* Same size, same services: the layout comes back unchanged. */
    r.nodes = 5;
    assert_int_equal(solver_solve(&r, &e, NULL), 0);
    char *a = layout_str(l), *b = layout_str(e);
    assert_string_equal(a, b);
    free(a);
    free(b);
    model_layout_free(e);
    model_layout_free(l);
    model_template_free(t);
}

static void test_shrink(void **state)
{
    struct model_template *t = hadoop();
    /* One entry per node, the namenode last: shrink must not drop it. */
    const char *dn = "{\"services\": [\"base\", \"hadoop-hdfs-datanode\", "
                     "\"hadoop-yarn-nodemanager\", \"hbase-regionserver\"], \"hardwaretype\": "
                     "\"standard-large\", \"imagetype\": \"ubuntu12\", \"id\": \"n%d\"}";
    char text[4096] = "{\"nodes\": [";
    for (int i = 1; i <= 4; i++) {
        char e[512];
        snprintf(e, sizeof(e), dn, i);
        strcat(text, e);
        strcat(text, ", ");
    }
    strcat(text,
           "{\"services\": [\"base\", \"hadoop-hdfs-namenode\", \"hadoop-yarn-resourcemanager\","
           " \"zookeeper-server\", \"hbase-master\"], \"hardwaretype\": \"standard-large\", "
           "\"imagetype\": \"ubuntu12\", \"id\": \"n5\"}]}");
    struct model_layout *l = layout_of(text);
    struct solver_request r = {.catalog = coopr, .tmpl = t, .nodes = 3, .existing = l};
    struct model_layout *s;
    struct drv_err err = {0};
    if (solver_solve(&r, &s, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(model_layout_size(s), 3);
    /* Newest datanodes go first; the namenode stays. */
    assert_string_equal(s->nodes[0].id, "n1");
    assert_string_equal(s->nodes[1].id, "n2");
    assert_string_equal(s->nodes[2].id, "n5");
    check_hadoop(s, 3);
    model_layout_free(s);
    /* Below the template's minimum. */
    r.nodes = 2;
    expect_error(&r, DRV_EUNSAT, "below the minimum 3");
    /* Shrink and change services at once. */
    r.nodes = 3;
    const char *fewer[] = {"base",
                           "hadoop-hdfs-namenode",
                           "hadoop-hdfs-datanode",
                           "hadoop-yarn-resourcemanager",
                           "hadoop-yarn-nodemanager",
                           "zookeeper-server"};
    r.services = fewer;
    r.n_services = 6;
    expect_error(&r, DRV_EINVAL, "shrink and a change of services at once");
    model_layout_free(l);
    model_template_free(t);
}

/* Shrink keeps quantities: a layout where only two nodes hold s2 (min 2) keeps them. */
static void test_shrink_keeps_minimum(void **state)
{
    struct model_catalog *c = small_catalog();
    struct model_template *t = tmpl_from(
        "{\"name\": \"t\", \"defaults\": {\"services\": [\"s1\", \"s2\"], \"provider\": \"p\"},"
        " \"constraints\": {\"layout\": {\"cantcoexist\": [[\"s1\", \"s2\"]]}, \"services\": "
        "{\"s2\": {\"quantities\": {\"min\": 2}}}}}");
    struct model_layout *l =
        layout_of("{\"nodes\": [{\"services\": [\"s2\"], \"hardwaretype\": \"hw2\", \"imagetype\": "
                  "\"img1\", \"count\": 2}, {\"services\": [\"s1\"], \"hardwaretype\": \"hw2\", "
                  "\"imagetype\": \"img1\", \"count\": 3}]}");
    struct solver_request r = {.catalog = c, .tmpl = t, .nodes = 3, .existing = l};
    expect_layout(&r, "{\"nodes\":[{\"services\":[\"s2\"],\"hardwaretype\":\"hw2\",\"imagetype\":"
                      "\"img1\",\"count\":2},{\"services\":[\"s1\"],\"hardwaretype\":\"hw2\","
                      "\"imagetype\":\"img1\",\"count\":1}]}");
    r.nodes = 2; /* s1 needs one node, s2 two */
    expect_error(&r, DRV_EUNSAT, "no 2 of the 5 existing nodes meet the constraints");
    model_layout_free(l);
    model_template_free(t);
    model_catalog_free(c);
}

static void test_add_and_remove_services(void **state)
{
    struct model_template *t = hadoop();
    const char *core[] = {"base",
                          "hadoop-hdfs-namenode",
                          "hadoop-hdfs-datanode",
                          "hadoop-yarn-resourcemanager",
                          "hadoop-yarn-nodemanager",
                          "zookeeper-server"};
    struct solver_request r = {
        .catalog = coopr, .tmpl = t, .nodes = 5, .services = core, .n_services = 6};
    struct model_layout *l;
    struct drv_err err = {0};
    if (solver_solve(&r, &l, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(l->n_nodes, 2);
    /* Add HBase: the master joins the namenode's node, region servers the datanodes. */
    const char *more[] = {"base",
                          "hadoop-hdfs-namenode",
                          "hadoop-hdfs-datanode",
                          "hadoop-yarn-resourcemanager",
                          "hadoop-yarn-nodemanager",
                          "zookeeper-server",
                          "hbase-master",
                          "hbase-regionserver"};
    r.existing = l;
    r.services = more;
    r.n_services = 8;
    struct model_layout *a;
    if (solver_solve(&r, &a, &err))
        fail_msg("%s", err.msg);
    check_hadoop(a, 5);
    assert_int_equal(a->n_nodes, 2);
    model_layout_free(a);
    /* Add and expand at once. */
    r.nodes = 7;
    if (solver_solve(&r, &a, &err))
        fail_msg("%s", err.msg);
    check_hadoop(a, 7);
    model_layout_free(a);
    /* Remove zookeeper-server: nothing else moves. */
    r.nodes = 5;
    r.services = core;
    r.n_services = 5;
    if (solver_solve(&r, &a, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(a->n_nodes, 2);
    assert_false(has(&a->nodes[0], "zookeeper-server"));
    assert_true(has(&a->nodes[0], "hadoop-hdfs-namenode"));
    assert_int_equal(a->nodes[1].count, 4);
    model_layout_free(a);
    model_layout_free(l);
    model_template_free(t);
}

/* Existing services never move: adding s2 (which can't coexist with s1) goes elsewhere. */
static void test_add_respects_existing(void **state)
{
    struct model_catalog *c = small_catalog();
    struct model_template *t = tmpl_from(
        "{\"name\": \"t\", \"defaults\": {\"services\": [\"s1\"], \"provider\": \"p\"},"
        " \"constraints\": {\"layout\": {\"cantcoexist\": [[\"s1\", \"s2\"]]}, \"services\": "
        "{\"s2\": {\"quantities\": {\"max\": 1}}}}}");
    struct model_layout *l =
        layout_of("{\"nodes\": [{\"services\": [\"s1\"], \"hardwaretype\": \"hw1\", \"imagetype\": "
                  "\"img2\", \"count\": 2}]}");
    const char *both[] = {"s1", "s2"};
    struct solver_request r = {
        .catalog = c, .tmpl = t, .nodes = 2, .existing = l, .services = both, .n_services = 2};
    /* No room: every node holds s1. */
    expect_error(&r, DRV_EUNSAT, "service \"s2\" needs at least 1 nodes, but only 0");
    r.nodes = 3;
    expect_layout(&r, "{\"nodes\":[{\"services\":[\"s1\"],\"hardwaretype\":\"hw1\",\"imagetype\":"
                      "\"img2\",\"count\":2},{\"services\":[\"s2\"],\"hardwaretype\":\"hw2\","
                      "\"imagetype\":\"img1\",\"count\":1}]}");
    model_layout_free(l);
    model_template_free(t);
    model_catalog_free(c);
}

/* ---- excluded layouts and comparators -------------------------------------------------- */

static void test_excluded(void **state)
{
    struct model_template *t = hadoop();
    struct model_layout *ex =
        layout_of("{\"nodes\": [{\"services\": [\"base\", \"hadoop-hdfs-datanode\", "
                  "\"hadoop-yarn-nodemanager\", \"hbase-regionserver\"], \"hardwaretype\": "
                  "\"standard-large\", \"imagetype\": \"ubuntu12\"}]}");
    struct solver_request r = {.catalog = coopr, .tmpl = t, .nodes = 4, .excluded = ex};
    struct model_layout *l;
    struct drv_err err = {0};
    if (solver_solve(&r, &l, &err))
        fail_msg("%s", err.msg);
    /* The worker layout moves to the next image type; the master keeps the preferred one. */
    assert_string_equal(l->nodes[0].imagetype, "ubuntu12");
    assert_string_equal(l->nodes[1].hardwaretype, "standard-large");
    assert_string_equal(l->nodes[1].imagetype, "centos6");
    model_layout_free(l);
    model_layout_free(ex);
    /* Exclude every pair of the single-service template: a clear error. */
    struct model_catalog *c = small_catalog();
    struct model_template *one =
        tmpl_from("{\"name\": \"one\", \"defaults\": {\"services\": [\"s1\"], \"provider\": \"p\"},"
                  " \"compatibility\": {\"hardwaretypes\": [\"hw1\"], \"imagetypes\": [\"img1\"]},"
                  " \"constraints\": {\"services\": {\"s1\": {\"quantities\": {\"min\": 1}}}}}");
    ex = layout_of("{\"nodes\": [{\"services\": [\"s1\"], \"hardwaretype\": \"hw1\", "
                   "\"imagetype\": \"img1\"}]}");
    struct solver_request r2 = {.catalog = c, .tmpl = one, .nodes = 2, .excluded = ex};
    expect_error(&r2, DRV_EUNSAT, "");
    model_layout_free(ex);
    model_template_free(one);
    model_catalog_free(c);
    model_template_free(t);
}

/* Prefer fewer services per node, then the default order. */
static int fewer_first(const struct solver_candidate *a, const struct solver_candidate *b,
                       void *arg)
{
    (*(int *)arg)++;
    if (a->n_services != b->n_services)
        return a->n_services < b->n_services ? -1 : 1;
    return solver_default_cmp(a, b, NULL);
}

static void test_custom_comparator(void **state)
{
    struct model_catalog *c = small_catalog();
    struct model_template *t = tmpl_from(
        "{\"name\": \"t\", \"defaults\": {\"services\": [\"s1\", \"s2\"], \"provider\": \"p\"},"
        " \"constraints\": {\"services\": {\"s1\": {\"quantities\": {\"min\": 1}}, \"s2\": "
        "{\"quantities\": {\"max\": 2}}}}}");
    struct solver_request r = {.catalog = c, .tmpl = t, .nodes = 4};
    expect_layout(&r, "{\"nodes\":[{\"services\":[\"s1\",\"s2\"],\"hardwaretype\":\"hw2\","
                      "\"imagetype\":\"img1\",\"count\":2},{\"services\":[\"s1\"],\"hardwaretype\":"
                      "\"hw2\",\"imagetype\":\"img1\",\"count\":2}]}");
    int calls = 0;
    r.cmp = fewer_first;
    r.cmp_arg = &calls;
    expect_layout(&r, "{\"nodes\":[{\"services\":[\"s1\"],\"hardwaretype\":\"hw2\",\"imagetype\":"
                      "\"img1\",\"count\":3},{\"services\":[\"s2\"],\"hardwaretype\":\"hw2\","
                      "\"imagetype\":\"img1\",\"count\":1}]}");
    assert_true(calls > 0);
    model_template_free(t);
    model_catalog_free(c);
}

/* ---- errors ------------------------------------------------------------------------------ */

static void test_request_errors(void **state)
{
    struct model_catalog *c = small_catalog();
    struct model_template *t = tmpl_from(
        "{\"name\": \"t\", \"defaults\": {\"services\": [\"s1\"], \"provider\": \"p\"},"
        " \"compatibility\": {\"services\": [\"s1\", \"s2\", \"needy\", \"giver\", \"grumpy\"],"
        " \"hardwaretypes\": [\"hw1\", \"hw2\"]}}");
    struct solver_request r = {.catalog = c, .tmpl = t, .nodes = 2};
    const char *s[4];
    r.services = s;

    s[0] = "nope";
    r.n_services = 1;
    expect_error(&r, DRV_EINVAL, "unknown service \"nope\"");
    s[0] = "s3";
    expect_error(&r, DRV_EINVAL, "service \"s3\" is not compatible with template \"t\"");
    s[0] = "needy";
    expect_error(&r, DRV_EINVAL,
                 "service \"needy\" requires \"virtual\" (runtime), which no service on the "
                 "cluster is or provides");
    s[1] = "giver"; /* provides it; "uses" does not pull anything in */
    r.n_services = 2;
    struct drv_err err = {0};
    char *ok = solve(&r, &err);
    if (!ok)
        fail_msg("%s", err.msg);
    free(ok);
    s[2] = "grumpy";
    r.n_services = 3;
    expect_error(&r, DRV_EINVAL, "services \"giver\" and \"grumpy\" conflict");

    r.services = NULL;
    r.provider = "nope";
    expect_error(&r, DRV_EINVAL, "unknown provider \"nope\"");
    r.provider = "q";
    expect_error(&r, DRV_EUNSAT,
                 "no hardware type of template \"t\" is available from "
                 "provider \"q\"");
    r.provider = NULL;
    r.hardwaretype = "hw9";
    expect_error(&r, DRV_EINVAL, "unknown hardware type \"hw9\"");
    r.hardwaretype = NULL;
    r.imagetype = "img9";
    expect_error(&r, DRV_EINVAL, "unknown image type \"img9\"");
    r.imagetype = NULL;

    struct model_template *np = tmpl_from("{\"name\": \"np\", \"defaults\": {\"services\": "
                                          "[\"s1\"]}}");
    r.tmpl = np;
    expect_error(&r, DRV_EINVAL, "no provider: template \"np\" has no default");
    model_template_free(np);
    struct model_template *ns = tmpl_from("{\"name\": \"ns\", \"defaults\": {\"provider\": "
                                          "\"p\"}}");
    r.tmpl = ns;
    expect_error(&r, DRV_EINVAL, "no services");
    model_template_free(ns);
    model_template_free(t);
    model_catalog_free(c);
}

static void test_unsat_errors(void **state)
{
    struct model_catalog *c = small_catalog();
    /* Must-coexist puts s1 with s2, but they can't coexist. */
    struct model_template *t = tmpl_from(
        "{\"name\": \"t\", \"defaults\": {\"services\": [\"s1\", \"s2\", \"s3\"], \"provider\": "
        "\"p\"}, \"constraints\": {\"layout\": {\"mustcoexist\": [[\"s1\", \"s2\"], [\"s2\", "
        "\"s3\"]], \"cantcoexist\": [[\"s1\", \"s3\"]]}}}");
    struct solver_request r = {.catalog = c, .tmpl = t, .nodes = 2};
    expect_error(&r, DRV_EUNSAT,
                 "cannot be placed: must-coexist constraints put \"s1\", \"s2\", \"s3\" on one "
                 "node, but they can't coexist");
    model_template_free(t);
    /* A can't-coexist group of three forbids only the whole set: pairs stay allowed. */
    t = tmpl_from("{\"name\": \"t\", \"defaults\": {\"services\": [\"s1\", \"s2\", \"s3\"], "
                  "\"provider\": \"p\"}, \"constraints\": {\"layout\": {\"cantcoexist\": "
                  "[[\"s1\", \"s2\", \"s3\"]]}}}");
    r.tmpl = t;
    r.nodes = 2;
    expect_layout(&r, "{\"nodes\":[{\"services\":[\"s1\",\"s2\"],\"hardwaretype\":\"hw2\","
                      "\"imagetype\":\"img1\",\"count\":1},{\"services\":[\"s1\",\"s3\"],"
                      "\"hardwaretype\":\"hw2\",\"imagetype\":\"img1\",\"count\":1}]}");
    model_template_free(t);
    /* Must-coexist services share their quantities. */
    t = tmpl_from("{\"name\": \"t\", \"defaults\": {\"services\": [\"s1\", \"s2\"], "
                  "\"provider\": \"p\"}, \"constraints\": {\"layout\": {\"mustcoexist\": "
                  "[[\"s1\", \"s2\"]]}, \"services\": {\"s1\": {\"quantities\": {\"min\": 2}}, "
                  "\"s2\": {\"quantities\": {\"max\": 1}}}}}");
    r.tmpl = t;
    r.nodes = 5;
    expect_error(&r, DRV_EUNSAT,
                 "service \"s1\" needs at least 2 nodes, but must-coexist constraints tie it to "
                 "\"s2\", which allows at most 1");
    model_template_free(t);
    /* Quantities that add up to more than the cluster. */
    t = tmpl_from("{\"name\": \"t\", \"defaults\": {\"services\": [\"s1\", \"s2\"], "
                  "\"provider\": \"p\"}, \"constraints\": {\"layout\": {\"cantcoexist\": "
                  "[[\"s1\", \"s2\"]]}, \"services\": {\"s1\": {\"quantities\": {\"min\": 3}}, "
                  "\"s2\": {\"quantities\": {\"min\": 3}}}}}");
    r.tmpl = t;
    r.nodes = 5;
    expect_error(&r, DRV_EUNSAT, "no layout of 5 nodes meets the constraints");
    r.nodes = 2;
    expect_error(&r, DRV_EUNSAT, "service \"s1\" needs at least 3 nodes, but only 2 of the 2");
    model_template_free(t);
    /* Every layout holds a capped service: the nodes cannot all be placed. */
    t = tmpl_from("{\"name\": \"t\", \"defaults\": {\"services\": [\"s1\"], \"provider\": "
                  "\"p\"}, \"constraints\": {\"services\": {\"s1\": {\"quantities\": {\"max\": "
                  "2}}}, \"size\": {\"max\": 10}}}");
    r.tmpl = t;
    r.nodes = 3;
    expect_error(&r, DRV_EUNSAT,
                 "3 new nodes, but every node must hold a service with a maximum and those "
                 "maxima allow at most 2 nodes");
    r.nodes = 11;
    expect_error(&r, DRV_EUNSAT, "cluster size 11 is above the maximum 10");
    model_template_free(t);
    model_catalog_free(c);
}

/* Free services go on every node; a service in no constraint still counts once. */
static void test_free_services(void **state)
{
    struct model_catalog *c = small_catalog();
    struct model_template *t =
        tmpl_from("{\"name\": \"t\", \"defaults\": {\"services\": [\"base\", \"s1\", \"s2\"], "
                  "\"provider\": \"p\", \"hardwaretype\": \"hw1\"}, \"constraints\": {\"layout\": "
                  "{\"cantcoexist\": [[\"s1\", \"s2\"]]}, \"services\": {\"s1\": {\"quantities\": "
                  "{\"max\": 1}}}}}");
    struct solver_request r = {.catalog = c, .tmpl = t, .nodes = 3};
    expect_layout(&r, "{\"nodes\":[{\"services\":[\"base\",\"s1\"],\"hardwaretype\":\"hw1\","
                      "\"imagetype\":\"img1\",\"count\":1},{\"services\":[\"base\",\"s2\"],"
                      "\"hardwaretype\":\"hw1\",\"imagetype\":\"img1\",\"count\":2}]}");
    model_template_free(t);
    model_catalog_free(c);
}

static void test_check(void **state)
{
    struct model_template *t = hadoop();
    struct solver_request r = {.catalog = coopr, .tmpl = t, .nodes = 4};
    struct model_layout *l =
        layout_of("{\"nodes\": [{\"services\": [\"base\", \"hadoop-hdfs-namenode\", "
                  "\"hadoop-hdfs-datanode\"], \"hardwaretype\": \"standard-large\", \"imagetype\": "
                  "\"ubuntu12\", \"count\": 4}]}");
    struct drv_err err = {0};
    assert_int_equal(solver_check(&r, l, &err), DRV_EUNSAT);
    assert_non_null(strstr(err.msg, "nodes[0]"));
    model_layout_free(l);
    model_template_free(t);
}

/* extends and includes */
static void test_template_resolution(void **state)
{
    struct model_catalog *c = small_catalog();
    put(c, MODEL_PARTIALTEMPLATE,
        "{\"name\": \"sensible\", \"compatibility\": {\"services\": [\"s3\"]}, \"constraints\": "
        "{\"services\": {\"s3\": {\"quantities\": {\"max\": 1}}}}}");
    put(c, MODEL_TEMPLATE,
        "{\"name\": \"parent\", \"defaults\": {\"services\": [\"s1\"], "
        "\"provider\": \"p\"}, \"compatibility\": {\"services\": [\"s1\", "
        "\"s2\"]}, \"constraints\": {\"size\": {\"min\": 2}}}");
    put(c, MODEL_TEMPLATE,
        "{\"name\": \"child\", \"extends\": {\"name\": \"parent\"}, "
        "\"includes\": [{\"name\": \"sensible\"}], \"defaults\": "
        "{\"services\": [\"s3\"]}}");
    put(c, MODEL_TEMPLATE, "{\"name\": \"loop\", \"extends\": \"loop\"}");
    put(c, MODEL_TEMPLATE, "{\"name\": \"orphan\", \"includes\": [\"missing\"]}");
    struct model_template *t;
    struct drv_err err = {0};
    if (model_template_resolve(c, "child", &t, &err))
        fail_msg("%s", err.msg);
    assert_null(t->extends);
    assert_int_equal(t->compat_services.n, 3);
    assert_int_equal(t->default_services.n, 2);
    assert_string_equal(t->default_provider, "p");
    assert_int_equal(t->size_min, 2);
    assert_int_equal(model_template_constraint(t, "s3")->qmax, 1);
    struct solver_request r = {.catalog = c, .tmpl = t, .nodes = 2};
    expect_layout(&r, "{\"nodes\":[{\"services\":[\"s1\",\"s3\"],\"hardwaretype\":\"hw2\","
                      "\"imagetype\":\"img1\",\"count\":1},{\"services\":[\"s1\"],\"hardwaretype\":"
                      "\"hw2\",\"imagetype\":\"img1\",\"count\":1}]}");
    model_template_free(t);
    assert_int_equal(model_template_resolve(c, "loop", &t, &err), DRV_ECYCLE);
    assert_int_equal(model_template_resolve(c, "orphan", &t, &err), DRV_ENOENT);
    assert_non_null(strstr(err.msg, "no partial template \"missing\""));
    assert_int_equal(model_template_resolve(c, "nope", &t, &err), DRV_ENOENT);
    model_catalog_free(c);
}

static void test_layout_codec(void **state)
{
    struct model_layout *l =
        layout_of("{\"nodes\": [{\"services\": [\"b\", \"a\", \"a\"], \"hardwaretype\": \"h\", "
                  "\"imagetype\": \"i\", \"count\": 2}, {\"id\": \"x\", \"services\": [], "
                  "\"hardwaretype\": \"h\", \"imagetype\": \"i\"}]}");
    assert_int_equal(model_layout_size(l), 3);
    json_t *j = model_layout_to_json(l, true);
    char *s = json_dumps(j, JSON_COMPACT);
    assert_string_equal(s, "{\"nodes\":[{\"services\":[\"a\",\"b\"],\"hardwaretype\":\"h\","
                           "\"imagetype\":\"i\"},{\"services\":[\"a\",\"b\"],\"hardwaretype\":"
                           "\"h\",\"imagetype\":\"i\"},{\"id\":\"x\",\"services\":[],"
                           "\"hardwaretype\":\"h\",\"imagetype\":\"i\"}]}");
    free(s);
    json_decref(j);
    model_layout_free(l);
    const char *bad[] = {
        "[]",
        "{\"nodes\": 3}",
        "{\"nodes\": [1]}",
        "{\"nodes\": [{\"services\": [], \"hardwaretype\": \"h\"}]}",
        "{\"nodes\": [{\"services\": [], \"hardwaretype\": \"h\", \"imagetype\": \"i\", "
        "\"count\": 0}]}",
        "{\"nodes\": [{\"services\": [], \"hardwaretype\": \"h\", \"imagetype\": \"i\", "
        "\"count\": 2, \"id\": \"x\"}]}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        json_t *b = json_loads(bad[i], 0, NULL);
        struct drv_err err = {0};
        assert_int_equal(model_layout_from_json(b, &l, &err), DRV_EINVAL);
        assert_non_null(strstr(err.msg, "layout"));
        json_decref(b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_three_services),
        cmocka_unit_test(test_node_layouts),
        cmocka_unit_test(test_hadoop_sizes),
        cmocka_unit_test(test_all_templates),
        cmocka_unit_test(test_expand),
        cmocka_unit_test(test_shrink),
        cmocka_unit_test(test_shrink_keeps_minimum),
        cmocka_unit_test(test_add_and_remove_services),
        cmocka_unit_test(test_add_respects_existing),
        cmocka_unit_test(test_excluded),
        cmocka_unit_test(test_custom_comparator),
        cmocka_unit_test(test_request_errors),
        cmocka_unit_test(test_unsat_errors),
        cmocka_unit_test(test_free_services),
        cmocka_unit_test(test_check),
        cmocka_unit_test(test_template_resolution),
        cmocka_unit_test(test_layout_codec),
    };
    return cmocka_run_group_tests(tests, load_coopr, free_coopr);
}
