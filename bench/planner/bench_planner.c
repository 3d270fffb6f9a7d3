/*
 * bench_planner: plan create of hadoop-distributed at N nodes and print the
 * time of each step and the peak RSS of the process (getrusage). Run one size
 * per process so that the peak belongs to that size:
 *   build-release/bench/planner/bench_planner 1000
 *   build-release/bench/planner/bench_planner 10000
 * The layout is the solver's (or, in a build without the solver, the one the
 * template's constraints call for: one master node with namenode,
 * resourcemanager, zookeeper, hbase master and N - 1 workers with datanode,
 * nodemanager, regionserver, base everywhere). The solve is timed apart.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "planner.h"
#include "planner_model.h"
#ifdef DROVER_HAVE_SOLVER
#include "solver.h"
#endif

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static long peak_rss_kb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

int main(int argc, char **argv)
{
    unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 1000;
    if (n < 3) {
        fprintf(stderr, "usage: bench_planner NODES (at least 3)\n");
        return 2;
    }
    char dir[1024];
    const char *src = getenv("DROVER_SOURCE_DIR");
    snprintf(dir, sizeof(dir), "%s/../shared/fixtures/coopr-templates",
             src ? src : DROVER_SOURCE_DIR);
    struct drv_err err = {0};
    struct model_catalog *c = model_catalog_new();
    if (model_catalog_load_dir(c, dir, &err)) {
        fprintf(stderr, "error: %s\n", err.msg);
        return 1;
    }
    struct model_template *t = NULL;
    if (model_template_resolve(c, "hadoop-distributed", &t, &err)) {
        fprintf(stderr, "error: %s\n", err.msg);
        return 1;
    }
    static const char *master[] = {"base", "hadoop-hdfs-namenode", "hadoop-yarn-resourcemanager",
                                   "zookeeper-server", "hbase-master"};
    static const char *worker[] = {"base", "hadoop-hdfs-datanode", "hadoop-yarn-nodemanager",
                                   "hbase-regionserver"};
    struct model_layout *l = NULL;
    double ts = now_ms();
#ifdef DROVER_HAVE_SOLVER
    struct solver_request sr = {.catalog = c, .tmpl = t, .nodes = n, .cmp_prefers_supersets = true};
    if (solver_solve(&sr, &l, &err)) {
        fprintf(stderr, "error: solver: %s\n", err.msg);
        return 1;
    }
    const char *from = "solver";
#else
    l = model_layout_new();
    model_layout_add(l, master, 5, "standard-large", "ubuntu12", 1, NULL);
    model_layout_add(l, worker, 4, "standard-large", "ubuntu12", n - 1, NULL);
    const char *from = "fixed";
#endif
    double solve_ms = now_ms() - ts;
    (void)master, (void)worker;
    long rss0 = peak_rss_kb();

    double t0 = now_ms();
    struct planner_input *in = NULL;
    if (planner_input_from_model(c, t, NULL, l, &in, &err)) {
        fprintf(stderr, "error: %s\n", err.msg);
        return 1;
    }
    struct planner_request req = planner_input_request(in, PLANNER_OP_CREATE, NULL, 0);
    struct planner_plan *p = NULL;
    if (planner_build(&req, &p, &err)) {
        fprintf(stderr, "error: %s\n", err.msg);
        return 1;
    }
    double t1 = now_ms();
    long rss1 = peak_rss_kb();
    struct planner_stages *st = NULL;
    planner_stages(p, &st, &err);
    double t2 = now_ms();
    size_t json_len = 0;
    char *s = planner_plan_to_json_text(p, &json_len);
    double t3 = now_ms();
    /* Rollback of a create that failed at its very last task. */
    enum planner_task_state *states = calloc(p->n_tasks, sizeof(*states));
    for (size_t i = 0; i + 1 < p->n_tasks; i++)
        states[i] = PLANNER_TS_SUCCESS;
    double t4 = now_ms();
    struct planner_plan *rb = NULL;
    if (planner_rollback(p, states, in->services, in->n_services, &rb, &err)) {
        fprintf(stderr, "error: %s\n", err.msg);
        return 1;
    }
    double t5 = now_ms();
    long rss2 = peak_rss_kb();
    /* The same JSON through a jansson tree (planner_plan_to_json + json_dumps). */
    json_t *j = planner_plan_to_json(p);
    char *s2 = json_dumps(j, JSON_COMPACT);
    double t6 = now_ms();
    if (strcmp(s, s2) != 0) {
        fprintf(stderr, "error: the two JSON writers disagree\n");
        return 1;
    }
    /* Run the whole plan through planner_exec, finishing tasks first in, first out. */
    double t7 = now_ms();
    struct planner_exec *x = NULL;
    if (planner_exec_new(p, NULL, &x, &err)) {
        fprintf(stderr, "error: %s\n", err.msg);
        return 1;
    }
    uint32_t *fifo = malloc((p->n_tasks + 1) * sizeof(*fifo));
    size_t head = 0, tail = 0, dispatched = 0;
    for (;;) {
        size_t got = planner_exec_next(x, fifo + tail, p->n_tasks - tail);
        tail += got;
        dispatched += got;
        if (head == tail)
            break;
        planner_exec_done(x, fifo[head++], 1, &err);
    }
    double t8 = now_ms();
    int all_done = planner_exec_finished(x);
    planner_exec_free(x);
    free(fifo);
    /* Expand by 100 nodes: the adapter pairs the target's nodes with the existing ones. */
    double t9 = now_ms();
    struct model_layout *big = model_layout_new();
    for (size_t i = 0; i < l->n_nodes; i++) {
        const struct model_node_layout *e = &l->nodes[i];
        model_layout_add(big, (const char *const *)e->services, e->n_services, e->hardwaretype,
                         e->imagetype, e->count + (i + 1 == l->n_nodes ? 100 : 0), NULL);
    }
    struct planner_input *in2 = NULL;
    struct planner_plan *px = NULL;
    if (planner_input_from_model(c, t, l, big, &in2, &err)) {
        fprintf(stderr, "error: %s\n", err.msg);
        return 1;
    }
    struct planner_request req2 = planner_input_request(in2, PLANNER_OP_EXPAND, NULL, 0);
    if (planner_build(&req2, &px, &err)) {
        fprintf(stderr, "error: %s\n", err.msg);
        return 1;
    }
    double t10 = now_ms();
    size_t expand_tasks = px->n_tasks;
    planner_plan_free(px);
    planner_input_free(in2);
    model_layout_free(big);
    size_t edges = 0;
    for (size_t i = 0; i < p->n_tasks; i++)
        edges += p->tasks[i].n_deps;
    printf("nodes=%u layout=%s solve_ms=%.1f entries=%zu\n", n, from, solve_ms, l->n_nodes);
    printf("tasks=%zu edges=%zu stages=%zu\n", p->n_tasks, edges, st->n_stages);
    printf("plan_ms=%.1f stages_ms=%.1f json_text_ms=%.1f json_bytes=%zu rollback_ms=%.1f "
           "rollback_tasks=%zu json_tree_ms=%.1f\n",
           t1 - t0, t2 - t1, t3 - t2, json_len, t5 - t4, rb->n_tasks, t6 - t5);
    printf("exec_ms=%.1f dispatched=%zu finished=%d expand_by_100_ms=%.1f expand_tasks=%zu\n",
           t8 - t7, dispatched, all_done, t10 - t9, expand_tasks);
    printf("peak_rss_mb: before=%.1f after_plan=%.1f after_json_text_and_rollback=%.1f "
           "after_json_tree=%.1f\n",
           rss0 / 1024.0, rss1 / 1024.0, rss2 / 1024.0, peak_rss_kb() / 1024.0);
    free(s);
    free(s2);
    free(states);
    planner_plan_free(rb);
    json_decref(j);
    planner_stages_free(st);
    planner_plan_free(p);
    planner_input_free(in);
    model_layout_free(l);
    model_template_free(t);
    model_catalog_free(c);
    return 0;
}
