/*
 * zkpath: the paths of Drover's ZooKeeper tree (zkpath.h has the contract,
 * docs/zookeeper-tree.md what each znode holds). Each function is one format
 * string; path_fmt does the writing and the truncation rule for all.
 * zkpath_classify reads them back: the path cut at its '/', then matched
 * against the same shapes, one table of kinds (zkpath.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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

char *zkpath_member(char *buf, size_t n, const char *group, const char *id)
{
    return path_fmt(buf, n, ZKPATH_ROOT "/members/%s/%s", group, id);
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

/* ---- the other direction ---- */

#define MAX_SEGS 8 /* below /drover: the deepest kind has 6 (pools/o/n/claims/host) */

struct segs {
    struct zkpath_name v[MAX_SEGS];
    const char *after[MAX_SEGS]; /* what follows segment i's '/', or NULL */
    size_t n;
};

/* path's segments below /drover (at most MAX_SEGS: the rest stays in after[]); false when
 * it is not below /drover or has an empty one. */
static bool split(const char *path, struct segs *sg)
{
    size_t rl = strlen(ZKPATH_ROOT);
    if (!path || strncmp(path, ZKPATH_ROOT, rl) != 0 || path[rl] != '/')
        return false;
    const char *p = path + rl + 1;
    sg->n = 0;
    while (sg->n < MAX_SEGS) {
        size_t len = strcspn(p, "/");
        if (len == 0)
            return false; /* "//", or a '/' at the end */
        sg->v[sg->n] = (struct zkpath_name){p, len};
        sg->after[sg->n] = p[len] == '/' ? p + len + 1 : NULL;
        sg->n++;
        if (!p[len])
            break;
        p += len + 1;
    }
    return true;
}

static bool seg_is(const struct segs *sg, size_t i, const char *s)
{
    return i < sg->n && sg->v[i].len == strlen(s) && memcmp(sg->v[i].s, s, sg->v[i].len) == 0;
}

/* A decimal number as the builders write it (%zu: no sign, no leading zero), from v's
 * character skip on. */
static bool number(struct zkpath_name v, size_t skip, size_t *k)
{
    if (v.len <= skip || v.len - skip > 18 || (v.s[skip] == '0' && v.len - skip > 1))
        return false;
    size_t x = 0;
    for (size_t i = skip; i < v.len; i++) {
        if (v.s[i] < '0' || v.s[i] > '9')
            return false;
        x = x * 10 + (size_t)(v.s[i] - '0');
    }
    *k = x;
    return true;
}

/* The kind kind of segments [0, last]: its names must fit, the rest is below. */
static enum zkpath_kind found(struct zkpath_class *out, const struct segs *sg, size_t last,
                              enum zkpath_kind kind)
{
    const struct zkpath_name *names[] = {&out->a, &out->b, &out->c};
    for (size_t i = 0; i < 3; i++)
        if (names[i]->s && (names[i]->len == 0 || names[i]->len >= ZKPATH_NAME_MAX)) {
            memset(out, 0, sizeof(*out));
            return ZKPATH_OTHER;
        }
    out->kind = kind;
    out->below = sg->after[last];
    return kind;
}

static enum zkpath_kind job_kind(struct zkpath_class *out, const struct segs *sg)
{
    out->a = sg->v[1];
    if (sg->n == 2)
        return found(out, sg, 1, ZKPATH_JOB);
    if (seg_is(sg, 2, "control"))
        return found(out, sg, 2, ZKPATH_JOB_CONTROL);
    if (seg_is(sg, 2, "state"))
        return found(out, sg, 2, ZKPATH_JOB_STATE);
    if (seg_is(sg, 2, "ctx")) {
        if (sg->n > 3 && sg->v[3].s[0] == 'p' && number(sg->v[3], 1, &out->k))
            return found(out, sg, 3, ZKPATH_JOB_CTX_PART);
        return found(out, sg, 2, ZKPATH_JOB_CTX);
    }
    if (seg_is(sg, 2, "nodes")) {
        if (sg->n > 3 && sg->v[3].s[0] == 'n' && number(sg->v[3], 1, &out->k))
            return found(out, sg, 3, ZKPATH_JOB_NODES_CHUNK);
        return found(out, sg, 2, ZKPATH_JOB_NODES);
    }
    if (seg_is(sg, 2, "log")) {
        if (sg->n > 3 && (sg->v[3].s[0] == 'f' || sg->v[3].s[0] == 'r') &&
            number(sg->v[3], 1, &out->k)) {
            out->phase = sg->v[3].s[0];
            return found(out, sg, 3, ZKPATH_JOB_LOG_CHUNK);
        }
        return found(out, sg, 2, ZKPATH_JOB_LOG);
    }
    if (seg_is(sg, 2, "runs")) {
        if (sg->n == 3)
            return found(out, sg, 2, ZKPATH_JOB_RUNS);
        out->b = sg->v[3];
        return found(out, sg, 3, ZKPATH_JOB_RUN);
    }
    return found(out, sg, 1, ZKPATH_JOB); /* a child with no kind: below the job */
}

static enum zkpath_kind pool_kind(struct zkpath_class *out, const struct segs *sg)
{
    out->a = sg->v[1];
    if (sg->n == 2)
        return found(out, sg, 1, ZKPATH_TENANT_POOLS);
    out->b = sg->v[2];
    if (sg->n == 3)
        return found(out, sg, 2, ZKPATH_POOL);
    if (seg_is(sg, 3, "claims")) {
        if (sg->n == 4)
            return found(out, sg, 3, ZKPATH_POOL_CLAIMS);
        out->c = sg->v[4];
        return found(out, sg, 4, ZKPATH_POOL_CLAIM);
    }
    if (seg_is(sg, 3, "released"))
        return found(out, sg, 3, ZKPATH_POOL_RELEASED);
    return found(out, sg, 2, ZKPATH_POOL);
}

enum zkpath_kind zkpath_classify(const char *path, struct zkpath_class *out)
{
    memset(out, 0, sizeof(*out));
    struct segs sg;
    if (!split(path, &sg) || sg.n < 2)
        return ZKPATH_OTHER;
    if (seg_is(&sg, 0, "jobs"))
        return job_kind(out, &sg);
    if (seg_is(&sg, 0, "pools"))
        return pool_kind(out, &sg);
    out->a = sg.v[1];
    if (seg_is(&sg, 0, "queues")) {
        if (sg.n == 2)
            return found(out, &sg, 1, ZKPATH_TENANT_QUEUES);
        out->b = sg.v[2];
        return found(out, &sg, 2, ZKPATH_QUEUE);
    }
    if (seg_is(&sg, 0, "control")) {
        if (sg.n == 2)
            return found(out, &sg, 1, ZKPATH_CONTROL_GROUP);
        out->b = sg.v[2];
        return found(out, &sg, 2, ZKPATH_CONTROL);
    }
    if (seg_is(&sg, 0, "members") && sg.n > 2) {
        out->b = sg.v[2];
        return found(out, &sg, 2, ZKPATH_MEMBER);
    }
    if (seg_is(&sg, 0, "resources"))
        return found(out, &sg, 1, ZKPATH_RESOURCES);
    if (seg_is(&sg, 0, "elections"))
        return found(out, &sg, 1, ZKPATH_ELECTION);
    if (seg_is(&sg, 0, "locks") && seg_is(&sg, 1, "jobs") && sg.n > 2) {
        out->a = sg.v[2];
        return found(out, &sg, 2, ZKPATH_JOB_LOCK);
    }
    memset(out, 0, sizeof(*out));
    return ZKPATH_OTHER;
}

char *zkpath_name_copy(struct zkpath_name v, char *buf, size_t n)
{
    if (v.len >= n) {
        if (n > 0)
            buf[0] = '\0';
        return NULL;
    }
    memcpy(buf, v.s, v.len);
    buf[v.len] = '\0';
    return buf;
}
