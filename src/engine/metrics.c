/*
 * metrics: what the engine shows on /metrics (docs/operations.md "Metrics").
 *
 * Observed on the loop as the engine works, kept in memory, lost on restart
 * (Prometheus' counters and histograms expect that):
 *   - per tenant and class, the jobs this node owns: task duration (the run
 *     record's start to its end, both the worker's clock) and queue wait (the
 *     item's put, the owner's clock, to the run's start, the worker's clock:
 *     the clocks must agree to within the bucket sizes);
 *   - takeovers: from the moment this node began to contend for a job's lock
 *     to the job resumed from the last owner's task log (failover: after a
 *     crash, contending begins when the dead member leaves the ring);
 *   - handovers: from the ring moving a job away to its lock released.
 * Tenants' figures go to the authenticated /v1/metrics only (api.md).
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <event2/buffer.h>

#include "clock.h"
#include "coord.h"
#include "engine_int.h"
#include "promtext.h"
#include "strmap.h"
#include "watchdog.h"

void engine__metrics_init(struct engine *e)
{
    e->h_task = prom_hvec_new(prom_buckets_slow, prom_buckets_slow_n);
    e->h_wait = prom_hvec_new(prom_buckets_slow, prom_buckets_slow_n);
    prom_histo_init(&e->h_takeover, prom_buckets_fast, prom_buckets_fast_n);
    prom_histo_init(&e->h_handover, prom_buckets_fast, prom_buckets_fast_n);
}

void engine__metrics_free(struct engine *e)
{
    prom_hvec_free(e->h_task);
    prom_hvec_free(e->h_wait);
    e->h_task = e->h_wait = NULL;
    prom_histo_release(&e->h_takeover);
    prom_histo_release(&e->h_handover);
}

static const char *labels_of(const struct ejob *j, char *buf, size_t n)
{
    char t[260], c[140];
    snprintf(buf, n, "tenant=\"%s\",class=\"%s\"", prom_label(j->tenant, t, sizeof(t)),
             prom_label(j->cls, c, sizeof(c)));
    return buf;
}

void engine__observe_start(struct ejob *j, const char *item_id, int64_t start_ms)
{
    int64_t put = coord_queue_item_time(item_id);
    if (put <= 0 || start_ms <= 0 || !j->e->h_wait)
        return;
    char l[420];
    prom_histo_observe(prom_hvec_get(j->e->h_wait, labels_of(j, l, sizeof(l))),
                       (double)(start_ms - put) / 1000.0);
}

void engine__observe_end(struct ejob *j, int64_t start_ms, int64_t end_ms)
{
    if (start_ms <= 0 || end_ms <= 0 || !j->e->h_task)
        return;
    char l[420];
    prom_histo_observe(prom_hvec_get(j->e->h_task, labels_of(j, l, sizeof(l))),
                       (double)(end_ms - start_ms) / 1000.0);
}

void engine__observe_takeover(struct ejob *j)
{
    j->e->stats.resumed++;
    if (j->t_contend)
        prom_histo_observe(&j->e->h_takeover, (double)(clock_mono_ms() - j->t_contend) / 1000.0);
}

void engine__observe_handover(struct ejob *j)
{
    if (j->t_handover)
        prom_histo_observe(&j->e->h_handover, (double)(clock_mono_ms() - j->t_handover) / 1000.0);
}

void engine_get_stats(const struct engine *e, struct engine_stats *st)
{
    *st = e->stats;
    st->owned = 0;
    size_t pos = 0;
    void *v;
    while (strmap_next(e->jobs, &pos, NULL, &v))
        st->owned +=
            ((struct ejob *)v)->own >= EJ_LOADING && ((struct ejob *)v)->own <= EJ_FINISHING;
}

/*
 * This node's unlabelled figures, in the order they are shown: a counter of struct
 * engine_stats (off: the field's offset there) or a histogram of struct engine's (off:
 * its offset in struct engine).
 */
struct node_metric {
    const char *name;
    const char *help;
    bool histogram;
    size_t off;
};

#define STAT(f) false, offsetof(struct engine_stats, f)
#define HISTO(f) true, offsetof(struct engine, f)

static const struct node_metric node_metrics[] = {
    {"drover_engine_jobs_taken_total", "Jobs whose lock this node acquired.", STAT(taken)},
    {"drover_engine_tasks_dispatched_total", "Task attempts this node put on the queues.",
     STAT(dispatched)},
    {"drover_engine_results_total", "Task outcomes this node consumed.", STAT(results)},
    {"drover_engine_jobs_finished_total", "Jobs this node brought to a final status.",
     STAT(finished)},
    {"drover_engine_failovers_total", "Jobs this node resumed from another owner's task log.",
     STAT(resumed)},
    {"drover_engine_jobs_past_deadline_total",
     "Jobs this node stalled because they ran past engine.job_deadline (then rolled back).",
     STAT(past_deadline)},
    {"drover_engine_failover_duration_seconds",
     "From contending for a job's lock to the job resumed here.", HISTO(h_takeover)},
    {"drover_engine_handovers_total", "Jobs this node released because the ring moved them.",
     STAT(handed_over)},
    {"drover_engine_handover_duration_seconds",
     "From the ring moving a job away to its lock released.", HISTO(h_handover)},
    {"drover_engine_pg_transactions_total",
     "PostgreSQL transactions this node sent for its jobs (batches of loads, starts, rounds, "
     "ends).",
     STAT(pg_txns)},
    {"drover_engine_pg_batches_total",
     "The PostgreSQL batches (transactions) this node sent for its jobs.", STAT(pg_batches)},
    {"drover_engine_pg_batch_jobs_total",
     "Jobs' parts (load, start, round, end) carried by the PostgreSQL batches.",
     STAT(pg_batch_jobs)},
    {"drover_engine_pg_shared_starts_total",
     "Jobs' loads and starts written in a transaction with other jobs' parts.",
     STAT(pg_shared_starts)},
    {"drover_engine_pg_shared_ends_total",
     "Jobs' final writes written in a transaction with other jobs' parts.", STAT(pg_shared_ends)},
    {"drover_engine_pg_held_total",
     "Jobs' parts held by another transaction's lock (a job row, a task or node row) and sent "
     "again shortly.",
     STAT(pg_held)},
    {"drover_engine_zk_multi_jobs_total",
     "Jobs carried by the rounds' ZooKeeper multi-ops (one carries one or more).",
     STAT(zk_multi_jobs)},
    {"drover_engine_zk_multis_total",
     "ZooKeeper multi-ops this node sent for its jobs (start, rounds, sweep).", STAT(zk_multis)},
    {"drover_engine_jobs_lost_total",
     "Jobs whose lock this node lost (session expired, or fenced out).", STAT(lost)},
};

void engine_metrics(const struct engine *e, struct evbuffer *out, bool tenants, const char *tenant)
{
    if (tenants) {
        char f[270], t[260];
        if (tenant)
            snprintf(f, sizeof(f), "tenant=\"%s\",", prom_label(tenant, t, sizeof(t)));
        prom_hvec_write(e->h_task, out, "drover_task_duration_seconds",
                        "Task attempts from start to end, for the jobs this node owned.",
                        tenant ? f : NULL);
        prom_hvec_write(e->h_wait, out, "drover_task_queue_wait_seconds",
                        "Task attempts from their put on the queue to their start, for the jobs "
                        "this node owned.",
                        tenant ? f : NULL);
        return;
    }
    struct engine_stats st;
    engine_get_stats(e, &st);
    char node[300];
    prom_label(e->node_id, node, sizeof(node));
    prom_family(out, "drover_engine_jobs_owned", "gauge", "Jobs whose lock this node holds.");
    evbuffer_add_printf(out, "drover_engine_jobs_owned{node=\"%s\"} %zu\n", node, st.owned);
    prom_family(out, "drover_engine_jobs_unserved", "gauge",
                "Jobs owned here with tasks queued and no live worker of their tenant and class.");
    evbuffer_add_printf(out, "drover_engine_jobs_unserved{node=\"%s\"} %zu\n", node,
                        engine__watchdog_unserved(e));
    for (size_t i = 0; i < sizeof(node_metrics) / sizeof(node_metrics[0]); i++) {
        const struct node_metric *m = &node_metrics[i];
        prom_family(out, m->name, m->histogram ? "histogram" : "counter", m->help);
        if (m->histogram)
            prom_histo_write((const struct prom_histo *)((const char *)e + m->off), out, m->name,
                             "");
        else
            evbuffer_add_printf(out, "%s %lu\n", m->name,
                                *(const unsigned long *)((const char *)&st + m->off));
    }
    /* What this node's session cost ZooKeeper, by kind and path class (benchmarks). */
    prom_family(out, "drover_zk_requests_total", "counter",
                "ZooKeeper requests this node's session issued, by kind and path class (ids as "
                "{}; a multi-op's class is its first op's path's).");
    enum coord_req kind;
    const char *cls;
    uint64_t n;
    for (size_t i = 0; coord_session_requests_by_path(e->zk, i, &kind, &cls, &n); i++) {
        char lc[COORD_PATH_CLASS_MAX * 2];
        evbuffer_add_printf(out, "drover_zk_requests_total{kind=\"%s\",path=\"%s\"} %llu\n",
                            kind == COORD_REQ_N ? "other" : coord_req_name(kind),
                            prom_label(*cls ? cls : "other", lc, sizeof(lc)),
                            (unsigned long long)n);
    }
}
