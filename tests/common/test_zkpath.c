/*
 * Unit tests of zkpath (src/common/zkpath.c): each helper gives the path that
 * docs/zookeeper-tree.md gives, letter for letter (with the doc's own
 * placeholders where it writes the path out in full, so the doc is checked
 * too); a path that does not fit is never cut short; buf NULL gives a new
 * string.
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paths),
        cmocka_unit_test(test_truncation),
        cmocka_unit_test(test_new_string),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
