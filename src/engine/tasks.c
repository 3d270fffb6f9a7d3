/*
 * tasks: the in-memory task log of the plans a job runs (struct eplan, engine_int.h): each
 * task's record (state, attempt, failures) as the task log keeps it, the planner's
 * bookkeeping made from the records (which tasks are ready), and the marks of what the
 * commit pipeline is to write (a log chunk for ZooKeeper, a task row for PostgreSQL). The
 * phases change the records (run.c, jobresume.c, withdraw.c, commit_zk.c's dispatch); the
 * commit files write and clear the marks. Pure: no I/O. Loop thread.
 */
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"
#include "planner.h"
#include "xalloc.h"

int engine__plan_init(struct eplan *p, char phase, struct planner_plan *plan,
                      const struct engine_task_rec *recs, struct drv_err *err)
{
    memset(p, 0, sizeof(*p));
    p->phase = phase;
    p->plan = plan;
    p->owns_plan = phase == 'r';
    p->n = (uint32_t)plan->n_tasks;
    p->recs = xcalloc(p->n + 1, sizeof(*p->recs));
    if (recs)
        memcpy(p->recs, recs, p->n * sizeof(*p->recs));
    p->n_chunks = (p->n + ENGINE_LOG_CHUNK - 1) / ENGINE_LOG_CHUNK;
    p->chunk_ver = xcalloc(p->n_chunks + 1, sizeof(*p->chunk_ver));
    p->chunk_dirty = xcalloc(p->n_chunks + 1, 1);
    p->worker = xcalloc(p->n + 1, sizeof(char *));
    p->pg_dirty = xcalloc(p->n + 1, 1);
    p->t_start = xcalloc(p->n + 1, sizeof(int64_t));
    p->t_end = xcalloc(p->n + 1, sizeof(int64_t));
    for (size_t k = 0; k < p->n_chunks; k++)
        p->chunk_ver[k] = -1; /* not in ZooKeeper yet */
    /* Anchors never run: they are skipped, for people; the planner's bookkeeping
     * passes through them as their dependencies succeed. */
    for (uint32_t i = 0; i < p->n; i++)
        if (plan->tasks[i].action == PLANNER_ACT_ANCHOR)
            p->recs[i].state = ENGINE_TS_SKIPPED;
    return 0;
}

int engine__plan_exec(struct eplan *p, struct drv_err *err)
{
    enum planner_task_state *st = xcalloc(p->n + 1, sizeof(*st));
    p->in_flight = p->done = 0;
    p->gave_up = false;
    for (uint32_t i = 0; i < p->n; i++) {
        if (p->plan->tasks[i].action == PLANNER_ACT_ANCHOR) {
            st[i] = PLANNER_TS_WAITING; /* the planner decides when it is passed */
            continue;
        }
        switch ((enum engine_task_state)p->recs[i].state) {
        case ENGINE_TS_QUEUED:
        case ENGINE_TS_RUNNING:
            st[i] = PLANNER_TS_IN_PROGRESS;
            p->in_flight++;
            break;
        case ENGINE_TS_SUCCEEDED:
        case ENGINE_TS_SKIPPED:
            st[i] = PLANNER_TS_SUCCESS;
            p->done++;
            break;
        case ENGINE_TS_FAILED:
            st[i] = PLANNER_TS_ERROR;
            p->gave_up = true;
            break;
        default:
            st[i] = PLANNER_TS_WAITING;
            break;
        }
    }
    planner_exec_free(p->x);
    int rc = planner_exec_new(p->plan, st, &p->x, err);
    free(st);
    return rc;
}

void engine__plan_clear(struct eplan *p)
{
    planner_exec_free(p->x);
    if (p->owns_plan)
        planner_plan_free(p->plan);
    free(p->recs);
    free(p->chunk_ver);
    free(p->chunk_dirty);
    for (uint32_t i = 0; p->worker && i < p->n; i++)
        free(p->worker[i]);
    free(p->worker);
    free(p->pg_dirty);
    free(p->pg_list);
    free(p->t_start);
    free(p->t_end);
    memset(p, 0, sizeof(*p));
}

void engine__task_pg_touch(struct eplan *p, uint32_t idx)
{
    if (!p->pg_dirty[idx]) {
        p->pg_dirty[idx] = 1;
        XGROW(p->pg_list, p->cap_pg, p->n_pg + 1);
        p->pg_list[p->n_pg++] = idx;
    }
}

void engine__task_touch(struct eplan *p, uint32_t idx)
{
    p->chunk_dirty[idx / ENGINE_LOG_CHUNK] = 1;
    engine__task_pg_touch(p, idx);
}

bool engine__run_superseded(const struct ejob *j, const struct erun *run)
{
    const struct eplan *p = run->phase == 'f' ? &j->fwd : run->phase == 'r' ? &j->rb : NULL;
    if (!p || p != j->cur || run->idx >= p->n)
        return true;
    const struct engine_task_rec *t = &p->recs[run->idx];
    return t->attempt != run->attempt ||
           (t->state != ENGINE_TS_QUEUED && t->state != ENGINE_TS_RUNNING);
}
