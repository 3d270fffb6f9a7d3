/*
 * zkpath: the paths of Drover's ZooKeeper tree (zkpath.h has the contract,
 * docs/zookeeper-tree.md what each znode holds). Each function is one format
 * string; path_fmt does the writing and the truncation rule for all.
 */
#include <stdarg.h>
#include <stdio.h>

#include "xalloc.h"
#include "zkpath.h"

static char *path_fmt(char *buf, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static char *path_fmt(char *buf, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (!buf) {
        char *s = xvasprintf(fmt, ap);
        va_end(ap);
        return s;
    }
    int w = vsnprintf(buf, n, fmt, ap);
    va_end(ap);
    if (w >= 0 && (size_t)w < n)
        return buf;
    if (n > 0)
        buf[0] = '\0';
    return NULL;
}

char *zkpath_control_group(char *buf, size_t n, const char *group)
{
    return path_fmt(buf, n, ZKPATH_ROOT "/control/%s", group);
}

char *zkpath_control(char *buf, size_t n, const char *group, const char *id)
{
    return path_fmt(buf, n, ZKPATH_ROOT "/control/%s/%s", group, id);
}

char *zkpath_election(char *buf, size_t n, const char *duty)
{
    return path_fmt(buf, n, ZKPATH_ROOT "/elections/%s", duty);
}

char *zkpath_job_lock(char *buf, size_t n, const char *job)
{
    return path_fmt(buf, n, ZKPATH_ROOT "/locks/jobs/%s", job);
}

char *zkpath_tenant_queues(char *buf, size_t n, const char *tenant)
{
    return path_fmt(buf, n, ZKPATH_QUEUES "/%s", tenant);
}

char *zkpath_queue(char *buf, size_t n, const char *tenant, const char *cls)
{
    return path_fmt(buf, n, ZKPATH_QUEUES "/%s/%s", tenant, cls);
}

char *zkpath_resources(char *buf, size_t n, const char *tenant)
{
    return path_fmt(buf, n, ZKPATH_ROOT "/resources/%s", tenant);
}

char *zkpath_pool_claims(char *buf, size_t n, const char *pool)
{
    return path_fmt(buf, n, ZKPATH_ROOT "/pools/%s/claims", pool);
}

char *zkpath_pool_claim(char *buf, size_t n, const char *pool, const char *host)
{
    return path_fmt(buf, n, ZKPATH_ROOT "/pools/%s/claims/%s", pool, host);
}

char *zkpath_pool_released(char *buf, size_t n, const char *pool)
{
    return path_fmt(buf, n, ZKPATH_ROOT "/pools/%s/released", pool);
}

char *zkpath_job(char *buf, size_t n, const char *job)
{
    return path_fmt(buf, n, ZKPATH_JOBS "/%s", job);
}

char *zkpath_job_sub(char *buf, size_t n, const char *job, const char *child, const char *name)
{
    if (name)
        return path_fmt(buf, n, ZKPATH_JOBS "/%s/%s/%s", job, child, name);
    return path_fmt(buf, n, ZKPATH_JOBS "/%s/%s", job, child);
}

char *zkpath_job_control(char *buf, size_t n, const char *job)
{
    return path_fmt(buf, n, ZKPATH_JOBS "/%s/control", job);
}

char *zkpath_job_state(char *buf, size_t n, const char *job)
{
    return path_fmt(buf, n, ZKPATH_JOBS "/%s/state", job);
}

char *zkpath_job_ctx(char *buf, size_t n, const char *job)
{
    return path_fmt(buf, n, ZKPATH_JOBS "/%s/ctx", job);
}

char *zkpath_job_ctx_part(char *buf, size_t n, const char *job, size_t part)
{
    return path_fmt(buf, n, ZKPATH_JOBS "/%s/ctx/p%zu", job, part);
}

char *zkpath_job_nodes(char *buf, size_t n, const char *job)
{
    return path_fmt(buf, n, ZKPATH_JOBS "/%s/nodes", job);
}

char *zkpath_job_nodes_chunk(char *buf, size_t n, const char *job, size_t k)
{
    return path_fmt(buf, n, ZKPATH_JOBS "/%s/nodes/n%zu", job, k);
}

char *zkpath_job_log(char *buf, size_t n, const char *job)
{
    return path_fmt(buf, n, ZKPATH_JOBS "/%s/log", job);
}

char *zkpath_job_log_chunk(char *buf, size_t n, const char *job, char phase, size_t k)
{
    return path_fmt(buf, n, ZKPATH_JOBS "/%s/log/%c%zu", job, phase, k);
}

char *zkpath_job_runs(char *buf, size_t n, const char *job)
{
    return path_fmt(buf, n, ZKPATH_JOBS "/%s/runs", job);
}

char *zkpath_job_run(char *buf, size_t n, const char *job, const char *name)
{
    return path_fmt(buf, n, ZKPATH_JOBS "/%s/runs/%s", job, name);
}
