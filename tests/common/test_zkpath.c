/*
 * Unit tests of zkpath (src/common/zkpath.c): each helper gives the path that
 * docs/zookeeper-tree.md gives, letter for letter (with the doc's own
 * placeholders where it writes the path out in full, so the doc is checked
 * too); a path that does not fit is never cut short; buf NULL gives a new
 * string. And the other direction: every kind of path a helper builds is
 * classified back (zkpath_classify) to that kind with the same names, from
 * which the helper builds the same path again; what lies below a kind says
 * so; anything else is ZKPATH_OTHER.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zkpath.h"

#ifndef DROVER_SOURCE_DIR
#define DROVER_SOURCE_DIR "."
#endif

static char *read_doc(void)
{
    FILE *f = fopen(DROVER_SOURCE_DIR "/docs/zookeeper-tree.md", "r");
    assert_non_null(f);
    static char doc[256 * 1024];
    size_t len = fread(doc, 1, sizeof(doc) - 1, f);
    fclose(f);
    doc[len] = '\0';
    return doc;
}

/* got is the path want; in_doc: the doc writes it out in full, in backquotes or a zkCli line. */
static void check(const char *got, const char *want, int in_doc, const char *doc)
{
    assert_non_null(got);
    assert_string_equal(got, want);
    if (in_doc && !strstr(doc, want))
        fail_msg("docs/zookeeper-tree.md does not give %s", want);
}

static void test_paths(void **state)
{
    const char *doc = read_doc();
    char b[256];
    size_t n = sizeof(b);
    check(ZKPATH_ROOT, "/drover", 1, doc);
    check(ZKPATH_MEMBERS_DROVERD, "/drover/members/droverd", 1, doc);
    check(ZKPATH_MEMBERS_WORKER, "/drover/members/worker", 0, doc);
    check(ZKPATH_QUEUES, "/drover/queues", 1, doc);
    check(ZKPATH_JOBS, "/drover/jobs", 1, doc);

    check(zkpath_control_group(b, n, "worker"), "/drover/control/worker", 0, doc);
    check(zkpath_control(b, n, "<group>", "<id>"), "/drover/control/<group>/<id>", 1, doc);
    check(zkpath_member(b, n, "<group>", "<id>"), "/drover/members/<group>/<id>", 1, doc);
    check(zkpath_election(b, n, "<duty>"), "/drover/elections/<duty>", 1, doc);
    check(zkpath_job_lock(b, n, "<job id>"), "/drover/locks/jobs/<job id>", 1, doc);

    check(zkpath_tenant_queues(b, n, "acme"), "/drover/queues/acme", 0, doc);
    check(zkpath_queue(b, n, "<tenant>", "<class>"), "/drover/queues/<tenant>/<class>", 1, doc);
    check(zkpath_queue(b, n, "acme", "ssh"), "/drover/queues/acme/ssh", 1, doc);
    check(zkpath_resources(b, n, "<tenant>"), "/drover/resources/<tenant>", 1, doc);
    check(zkpath_pool_claims(b, n, "lab"), "/drover/pools/lab/claims", 0, doc);
    /* ssh-pool names a tenant's pool "<tenant>/<pool>" (issue 20) */
    check(zkpath_pool_claim(b, n, "<tenant>/<pool>", "<address>:<port>"),
          "/drover/pools/<tenant>/<pool>/claims/<address>:<port>", 1, doc);
    check(zkpath_pool_released(b, n, "_operator/<pool>"), "/drover/pools/_operator/<pool>/released",
          1, doc);

    check(zkpath_job(b, n, "<job id>"), "/drover/jobs/<job id>", 1, doc);
    check(zkpath_job_sub(b, n, "42", "runs", NULL), "/drover/jobs/42/runs", 1, doc);
    check(zkpath_job_sub(b, n, "42", "log", "f0"), "/drover/jobs/42/log/f0", 1, doc);
    check(zkpath_job_control(b, n, "42"), "/drover/jobs/42/control", 0, doc);
    check(zkpath_job_state(b, n, "42"), "/drover/jobs/42/state", 1, doc);
    check(zkpath_job_ctx(b, n, "42"), "/drover/jobs/42/ctx", 0, doc);
    check(zkpath_job_ctx_part(b, n, "42", 3), "/drover/jobs/42/ctx/p3", 0, doc);
    check(zkpath_job_nodes(b, n, "42"), "/drover/jobs/42/nodes", 0, doc);
    check(zkpath_job_nodes_chunk(b, n, "42", 12), "/drover/jobs/42/nodes/n12", 0, doc);
    check(zkpath_job_log(b, n, "42"), "/drover/jobs/42/log", 0, doc);
    check(zkpath_job_log_chunk(b, n, "42", 'f', 0), "/drover/jobs/42/log/f0", 1, doc);
    check(zkpath_job_log_chunk(b, n, "42", 'r', 273), "/drover/jobs/42/log/r273", 0, doc);
    check(zkpath_job_runs(b, n, "42"), "/drover/jobs/42/runs", 1, doc);
    check(zkpath_job_run(b, n, "42", "f17.1.w-1.0000beef"),
          "/drover/jobs/42/runs/f17.1.w-1.0000beef", 0, doc);
}

static void test_truncation(void **state)
{
    const char *want = "/drover/jobs/42/state"; /* 21 bytes */
    char b[64];
    /* Exactly enough room. */
    memset(b, 'x', sizeof(b));
    assert_ptr_equal(zkpath_job_state(b, 22, "42"), b);
    assert_string_equal(b, want);
    /* One byte short: nothing of it, never "/drover/jobs/42/stat". */
    memset(b, 'x', sizeof(b));
    assert_null(zkpath_job_state(b, 21, "42"));
    assert_string_equal(b, "");
    /* A cut could name another znode: "/drover/jobs/4" for job 42. */
    assert_null(zkpath_job(b, 15, "42"));
    assert_string_equal(b, "");
    assert_null(zkpath_job_sub(b, 20, "42", "runs", "f1.1.w.00000001"));
    assert_string_equal(b, "");
    /* No room at all: buf is not touched. */
    b[0] = 'x';
    assert_null(zkpath_job_state(b, 0, "42"));
    assert_int_equal(b[0], 'x');
}

static void test_new_string(void **state)
{
    char *s = zkpath_job_state(NULL, 0, "42");
    assert_string_equal(s, "/drover/jobs/42/state");
    free(s);
    /* Any length: a long name is whole. */
    char name[700];
    memset(name, 'a', sizeof(name) - 1);
    name[sizeof(name) - 1] = '\0';
    s = zkpath_job_run(NULL, 0, "42", name);
    assert_int_equal(strlen(s), strlen("/drover/jobs/42/runs/") + strlen(name));
    assert_string_equal(s + strlen("/drover/jobs/42/runs/"), name);
    free(s);
}

/* ---- the other direction ---- */

/* One path of each kind, made by its helper from these names. */
struct built {
    enum zkpath_kind kind;
    const char *a, *b, *c;
    char phase;
    size_t k;
};

static const struct built kinds[] = {
    {ZKPATH_CONTROL_GROUP, "worker", NULL, NULL, 0, 0},
    {ZKPATH_CONTROL, "droverd", "d-1", NULL, 0, 0},
    {ZKPATH_ELECTION, "janitor", NULL, NULL, 0, 0},
    {ZKPATH_JOB_LOCK, "42", NULL, NULL, 0, 0},
    {ZKPATH_MEMBER, "worker", "w-7", NULL, 0, 0},
    {ZKPATH_TENANT_QUEUES, "acme", NULL, NULL, 0, 0},
    {ZKPATH_QUEUE, "acme", "ssh", NULL, 0, 0},
    {ZKPATH_RESOURCES, "acme", NULL, NULL, 0, 0},
    {ZKPATH_POOL_CLAIMS, "acme", "rack-a", NULL, 0, 0},
    {ZKPATH_POOL_CLAIM, "_operator", "rack-s", "10.0.0.5:22", 0, 0},
    {ZKPATH_POOL_RELEASED, "_operator", "rack-s", NULL, 0, 0},
    {ZKPATH_JOB, "42", NULL, NULL, 0, 0},
    {ZKPATH_JOB_CONTROL, "42", NULL, NULL, 0, 0},
    {ZKPATH_JOB_STATE, "42", NULL, NULL, 0, 0},
    {ZKPATH_JOB_CTX, "42", NULL, NULL, 0, 0},
    {ZKPATH_JOB_CTX_PART, "42", NULL, NULL, 0, 0},
    {ZKPATH_JOB_CTX_PART, "42", NULL, NULL, 0, 17},
    {ZKPATH_JOB_NODES, "42", NULL, NULL, 0, 0},
    {ZKPATH_JOB_NODES_CHUNK, "42", NULL, NULL, 0, 625},
    {ZKPATH_JOB_LOG, "9007199254740993", NULL, NULL, 0, 0},
    {ZKPATH_JOB_LOG_CHUNK, "42", NULL, NULL, 'f', 0},
    {ZKPATH_JOB_LOG_CHUNK, "42", NULL, NULL, 'r', 273},
    {ZKPATH_JOB_RUNS, "42", NULL, NULL, 0, 0},
    {ZKPATH_JOB_RUN, "42", "f17.1.w-1.0000beef", NULL, 0, 0},
};

/* The path of kind x from its helper; the pools' take "<owner>/<name>". */
static char *build(const struct built *x, char *b, size_t n)
{
    char pool[512];
    snprintf(pool, sizeof(pool), "%s/%s", x->a, x->b ? x->b : "");
    switch (x->kind) {
    case ZKPATH_CONTROL_GROUP:
        return zkpath_control_group(b, n, x->a);
    case ZKPATH_CONTROL:
        return zkpath_control(b, n, x->a, x->b);
    case ZKPATH_ELECTION:
        return zkpath_election(b, n, x->a);
    case ZKPATH_JOB_LOCK:
        return zkpath_job_lock(b, n, x->a);
    case ZKPATH_MEMBER:
        return zkpath_member(b, n, x->a, x->b);
    case ZKPATH_TENANT_QUEUES:
        return zkpath_tenant_queues(b, n, x->a);
    case ZKPATH_QUEUE:
        return zkpath_queue(b, n, x->a, x->b);
    case ZKPATH_RESOURCES:
        return zkpath_resources(b, n, x->a);
    case ZKPATH_POOL_CLAIMS:
        return zkpath_pool_claims(b, n, pool);
    case ZKPATH_POOL_CLAIM:
        return zkpath_pool_claim(b, n, pool, x->c);
    case ZKPATH_POOL_RELEASED:
        return zkpath_pool_released(b, n, pool);
    case ZKPATH_JOB:
        return zkpath_job(b, n, x->a);
    case ZKPATH_JOB_CONTROL:
        return zkpath_job_control(b, n, x->a);
    case ZKPATH_JOB_STATE:
        return zkpath_job_state(b, n, x->a);
    case ZKPATH_JOB_CTX:
        return zkpath_job_ctx(b, n, x->a);
    case ZKPATH_JOB_CTX_PART:
        return zkpath_job_ctx_part(b, n, x->a, x->k);
    case ZKPATH_JOB_NODES:
        return zkpath_job_nodes(b, n, x->a);
    case ZKPATH_JOB_NODES_CHUNK:
        return zkpath_job_nodes_chunk(b, n, x->a, x->k);
    case ZKPATH_JOB_LOG:
        return zkpath_job_log(b, n, x->a);
    case ZKPATH_JOB_LOG_CHUNK:
        return zkpath_job_log_chunk(b, n, x->a, x->phase, x->k);
    case ZKPATH_JOB_RUNS:
        return zkpath_job_runs(b, n, x->a);
    case ZKPATH_JOB_RUN:
        return zkpath_job_run(b, n, x->a, x->b);
    default:
        fail_msg("no helper for kind %d", (int)x->kind);
        return NULL;
    }
}

static void name_is(struct zkpath_name v, const char *want, char *copy)
{
    if (!want) {
        assert_null(v.s);
        return;
    }
    assert_non_null(zkpath_name_copy(v, copy, ZKPATH_NAME_MAX));
    assert_string_equal(copy, want);
}

/* Every kind a helper builds: classified back to it, its names and numbers read, and
 * built again from what was read, the same path. */
static void test_classify_round_trip(void **state)
{
    char p[512], again[512], a[ZKPATH_NAME_MAX], bn[ZKPATH_NAME_MAX], c[ZKPATH_NAME_MAX];
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        assert_non_null(build(&kinds[i], p, sizeof(p)));
        struct zkpath_class cl;
        assert_int_equal(zkpath_classify(p, &cl), kinds[i].kind);
        assert_int_equal(cl.kind, kinds[i].kind);
        assert_null(cl.below);
        name_is(cl.a, kinds[i].a, a);
        name_is(cl.b, kinds[i].b, bn);
        name_is(cl.c, kinds[i].c, c);
        assert_int_equal(cl.k, kinds[i].k);
        assert_int_equal(cl.phase, kinds[i].phase);
        struct built read = {
            cl.kind, kinds[i].a ? a : NULL, kinds[i].b ? bn : NULL, kinds[i].c ? c : NULL, cl.phase,
            cl.k};
        assert_non_null(build(&read, again, sizeof(again)));
        assert_string_equal(again, p);
    }
    /* zkpath_job_sub names a child of a job: its kind when it has one. */
    struct zkpath_class cl;
    assert_int_equal(zkpath_classify(zkpath_job_sub(p, sizeof(p), "42", "runs", NULL), &cl),
                     ZKPATH_JOB_RUNS);
    assert_int_equal(zkpath_classify(zkpath_job_sub(p, sizeof(p), "42", "log", "f0"), &cl),
                     ZKPATH_JOB_LOG_CHUNK);
}

/* What lies below a kind's path: that kind, and the rest. */
static void test_classify_below(void **state)
{
    struct zkpath_class cl;
    char a[ZKPATH_NAME_MAX], b[ZKPATH_NAME_MAX];
    assert_int_equal(zkpath_classify("/drover/queues/acme/default/claims/s01-i4", &cl),
                     ZKPATH_QUEUE);
    assert_string_equal(cl.below, "claims/s01-i4");
    assert_string_equal(zkpath_name_copy(cl.a, a, sizeof(a)), "acme");
    assert_string_equal(zkpath_name_copy(cl.b, b, sizeof(b)), "default");
    assert_int_equal(zkpath_classify("/drover/pools/acme/rack-a", &cl), ZKPATH_POOL);
    assert_null(cl.below);
    assert_int_equal(zkpath_classify("/drover/pools/acme", &cl), ZKPATH_TENANT_POOLS);
    assert_int_equal(zkpath_classify("/drover/pools/acme/rack-a/hosts", &cl), ZKPATH_POOL);
    assert_string_equal(cl.below, "hosts");
    assert_int_equal(zkpath_classify("/drover/pools/_operator/rack-s/released/m1", &cl),
                     ZKPATH_POOL_RELEASED);
    assert_string_equal(cl.below, "m1");
    assert_int_equal(zkpath_classify("/drover/jobs/42/ctx/px", &cl), ZKPATH_JOB_CTX);
    assert_string_equal(cl.below, "px");
    assert_int_equal(zkpath_classify("/drover/jobs/42/ctx/p01", &cl), ZKPATH_JOB_CTX);
    assert_int_equal(zkpath_classify("/drover/jobs/42/log/x3", &cl), ZKPATH_JOB_LOG);
    assert_int_equal(zkpath_classify("/drover/jobs/42/nodes/n", &cl), ZKPATH_JOB_NODES);
    assert_int_equal(zkpath_classify("/drover/jobs/42/runs/f0.1.w.1/x", &cl), ZKPATH_JOB_RUN);
    assert_string_equal(cl.below, "x");
    assert_int_equal(zkpath_classify("/drover/jobs/42/other/x", &cl), ZKPATH_JOB);
    assert_string_equal(cl.below, "other/x");
    assert_int_equal(zkpath_classify("/drover/resources/acme/v2", &cl), ZKPATH_RESOURCES);
    assert_string_equal(cl.below, "v2");
}

/* Not a kind: the fixed paths and parents, another tree, empty or over-long names. */
static void test_classify_other(void **state)
{
    static const char *const other[] = {
        "/drover",
        "/drover/queues",
        "/drover/jobs",
        "/drover/members",
        "/drover/members/worker",
        "/drover/locks/jobs",
        "/drover/locks/x/1",
        "/drover/unknown/a",
        "/droverx/queues/acme",
        "/drovers",
        "drover/jobs/42",
        "/drover/jobs//ctx",
        "/drover/queues/acme/",
        "",
        "/",
    };
    struct zkpath_class cl;
    for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
        assert_int_equal(zkpath_classify(other[i], &cl), ZKPATH_OTHER);
        assert_int_equal(cl.kind, ZKPATH_OTHER);
        assert_null(cl.below);
        assert_null(cl.a.s);
    }
    assert_int_equal(zkpath_classify(NULL, &cl), ZKPATH_OTHER);
    char p[600], name[ZKPATH_NAME_MAX + 1];
    memset(name, 't', sizeof(name) - 1);
    name[sizeof(name) - 1] = '\0';
    assert_int_equal(zkpath_classify(zkpath_queue(p, sizeof(p), name, "ssh"), &cl), ZKPATH_OTHER);
    name[ZKPATH_NAME_MAX - 1] = '\0';
    assert_int_equal(zkpath_classify(zkpath_queue(p, sizeof(p), name, "ssh"), &cl), ZKPATH_QUEUE);
    /* A name that does not fit the copy's buffer: none of it. */
    char small[4] = "xyz";
    assert_null(zkpath_name_copy(cl.a, small, sizeof(small)));
    assert_string_equal(small, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paths),          cmocka_unit_test(test_truncation),
        cmocka_unit_test(test_new_string),     cmocka_unit_test(test_classify_round_trip),
        cmocka_unit_test(test_classify_below), cmocka_unit_test(test_classify_other),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
