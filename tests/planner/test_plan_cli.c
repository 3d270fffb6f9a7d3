/* Unit tests for `drover plan` (planner_cli_main): exit codes and the three formats. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "planner.h"
#include "xalloc.h"

static char tmpdir[256];
static char catalog[1024];

static int setup(void **state)
{
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/drover-plan-cli-XXXXXX");
    if (mkdtemp(tmpdir) == NULL)
        return -1;
    const char *src = getenv("DROVER_SOURCE_DIR");
    snprintf(catalog, sizeof(catalog), "%s/../shared/fixtures/coopr-templates",
             src ? src : DROVER_SOURCE_DIR);
    return 0;
}

static int teardown(void **state)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static char *path(const char *name)
{
    return xasprintf("%s/%s", tmpdir, name);
}

static void write_file(const char *name, const char *text)
{
    char *p = path(name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    free(p);
}

static char *read_file(const char *name)
{
    char *p = path(name);
    FILE *f = fopen(p, "r");
    free(p);
    if (f == NULL)
        return NULL;
    char *buf = xmalloc(1 << 22);
    size_t n = fread(buf, 1, (1 << 22) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* Run `plan` with the arguments (NULL-terminated); $T in an argument becomes tmpdir. */
static int run(const char *first, ...)
{
    char *argv[32];
    int argc = 0;
    argv[argc++] = xstrdup("plan");
    va_list ap;
    va_start(ap, first);
    for (const char *a = first; a && argc < 31; a = va_arg(ap, const char *)) {
        if (strncmp(a, "$T/", 3) == 0)
            argv[argc++] = path(a + 3);
        else if (strcmp(a, "$C") == 0)
            argv[argc++] = xstrdup(catalog);
        else
            argv[argc++] = xstrdup(a);
    }
    va_end(ap);
    argv[argc] = NULL;
    int rc = planner_cli_main(argc, argv);
    for (int i = 0; i < argc; i++)
        free(argv[i]);
    return rc;
}

static const char *layout3 =
    "{\"nodes\": ["
    "{\"services\": [\"base\", \"hadoop-hdfs-namenode\", \"hadoop-yarn-resourcemanager\","
    " \"zookeeper-server\", \"hbase-master\"], \"hardwaretype\": \"standard-large\","
    " \"imagetype\": \"ubuntu12\"},"
    "{\"services\": [\"base\", \"hadoop-hdfs-datanode\", \"hadoop-yarn-nodemanager\","
    " \"hbase-regionserver\"], \"hardwaretype\": \"standard-large\","
    " \"imagetype\": \"ubuntu12\", \"count\": 2}]}";

static void test_usage_errors(void **state)
{
    assert_int_equal(run(NULL), 2);
    assert_int_equal(run("--catalog", "$C", "--template", "hadoop-distributed", NULL), 2);
    assert_int_equal(run("--catalog", "$C", "--template", "hadoop-distributed", "--operation",
                         "frobnicate", NULL),
                     2);
    assert_int_equal(run("--catalog", "$C", "--template", "hadoop-distributed", "--operation",
                         "create", "--nodes", "3", "--format", "xml", NULL),
                     2);
    assert_int_equal(
        run("--catalog", "$C", "--template", "hadoop-distributed", "--operation", "start", NULL),
        2); /* needs --existing */
    assert_int_equal(run("--bogus", NULL), 2);
    assert_int_equal(run("--help", NULL), 0);
}

static void test_create_with_target_formats(void **state)
{
    write_file("target.json", layout3);
    assert_int_equal(run("--catalog", "$C", "--template", "hadoop-distributed", "--operation",
                         "create", "--target", "$T/target.json", "--output", "$T/plan.json", NULL),
                     0);
    char *text = read_file("plan.json");
    assert_non_null(text);
    json_t *j = json_loads(text, 0, NULL);
    assert_non_null(j);
    struct planner_plan *p = NULL;
    struct drv_err err = {0};
    assert_int_equal(planner_plan_from_json(j, &p, &err), 0);
    assert_int_equal(p->op, PLANNER_OP_CREATE);
    assert_true(planner_find(p, "node-1/hadoop-hdfs-namenode/initialize") >= 0);
    assert_true(planner_find(p, "node-3/create") >= 0);
    assert_string_equal(p->tasks[planner_find(p, "node-1/create")].type, "rackspace");
    planner_plan_free(p);
    json_decref(j);
    free(text);

    assert_int_equal(run("--catalog", "$C", "--template", "hadoop-distributed", "--operation",
                         "create", "--target", "$T/target.json", "--format", "stages", "--output",
                         "$T/stages.txt", NULL),
                     0);
    text = read_file("stages.txt");
    assert_non_null(strstr(text, "stage 1 (3 tasks)"));
    free(text);
    assert_int_equal(run("--catalog", "$C", "--template", "hadoop-distributed", "--operation",
                         "create", "--target", "$T/target.json", "--format", "dot", "--output",
                         "$T/plan.dot", NULL),
                     0);
    text = read_file("plan.dot");
    assert_non_null(strstr(text, "digraph plan"));
    free(text);
}

static void test_operations_on_existing(void **state)
{
    write_file("existing.json", layout3);
    assert_int_equal(run("--catalog", "$C", "--template", "hadoop-distributed", "--operation",
                         "stop", "--services", "hadoop-hdfs-namenode", "--existing",
                         "$T/existing.json", "--output", "$T/stop.json", NULL),
                     0);
    char *text = read_file("stop.json");
    /* Stopping the namenode stops what requires it: datanodes are not among them,
     * the resourcemanager and hbase master are. */
    assert_non_null(strstr(text, "node-1/hadoop-yarn-resourcemanager/stop"));
    assert_non_null(strstr(text, "node-1/hbase-master/stop"));
    free(text);
    assert_int_equal(run("--catalog", "$C", "--template", "hadoop-distributed", "--operation",
                         "remove-services", "--services", "hbase-regionserver", "--existing",
                         "$T/existing.json", "--output", "$T/rm.json", NULL),
                     0);
    text = read_file("rm.json");
    assert_non_null(strstr(text, "node-2/hbase-regionserver/stop"));
    assert_null(strstr(text, "hbase-master/stop"));
    free(text);
    /* Errors that are not usage: a missing catalogue, a bad layout file. */
    assert_int_equal(run("--catalog", "/nonexistent", "--template", "x", "--operation", "delete",
                         "--existing", "$T/existing.json", NULL),
                     1);
    write_file("bad.json", "{\"nodes\": 3}");
    assert_int_equal(run("--catalog", "$C", "--template", "hadoop-distributed", "--operation",
                         "delete", "--existing", "$T/bad.json", NULL),
                     1);
}

/* Operations that change the layout call the solver (when the build has it). */
static void test_solver_operations(void **state)
{
#ifdef DROVER_HAVE_SOLVER
    assert_int_equal(run("--catalog", "$C", "--template", "hadoop-distributed", "--operation",
                         "create", "--nodes", "5", "--output", "$T/c5.json", NULL),
                     0);
    char *text = read_file("c5.json");
    assert_non_null(strstr(text, "\"node-5/create\""));
    assert_null(strstr(text, "\"node-6/create\""));
    free(text);
    write_file("existing.json", layout3);
    assert_int_equal(run("--catalog", "$C", "--template", "hadoop-distributed", "--operation",
                         "expand", "--nodes", "6", "--existing", "$T/existing.json", "--output",
                         "$T/x6.json", NULL),
                     0);
    text = read_file("x6.json");
    json_t *j = json_loads(text, 0, NULL);
    struct planner_plan *p = NULL;
    struct drv_err err = {0};
    assert_int_equal(planner_plan_from_json(j, &p, &err), 0);
    /* Only the three new nodes have tasks; the existing ones are left alone. */
    for (size_t i = 0; i < p->n_tasks; i++)
        if (p->tasks[i].node)
            assert_true(strcmp(p->tasks[i].node, "node-4") == 0 ||
                        strcmp(p->tasks[i].node, "node-5") == 0 ||
                        strcmp(p->tasks[i].node, "node-6") == 0);
    assert_true(planner_find(p, "node-6/hbase-regionserver/start") >= 0);
    planner_plan_free(p);
    json_decref(j);
    free(text);
    assert_int_equal(run("--catalog", "$C", "--template", "hadoop-distributed", "--operation",
                         "add-services", "--services", "hadoop-mapreduce-historyserver",
                         "--existing", "$T/existing.json", "--output", "$T/add.json", NULL),
                     0);
    text = read_file("add.json");
    assert_non_null(strstr(text, "\"node-1/hadoop-mapreduce-historyserver/install\""));
    assert_null(strstr(text, "hadoop-hdfs-namenode/install"));
    free(text);
    /* The solver's refusal is an error, not a usage error. */
    assert_int_equal(run("--catalog", "$C", "--template", "hadoop-distributed", "--operation",
                         "create", "--nodes", "1", NULL),
                     1);
#else
    assert_int_equal(run("--catalog", "$C", "--template", "hadoop-distributed", "--operation",
                         "create", "--nodes", "5", NULL),
                     1);
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_create_with_target_formats),
        cmocka_unit_test(test_operations_on_existing),
        cmocka_unit_test(test_solver_operations),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
