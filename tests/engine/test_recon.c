/*
 * Unit tests of the reconciliation on resume (src/engine/recon.c): every row
 * of the decision table of its file note, for every phase, and the cases of
 * a run record's result merged again.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdbool.h>

#include "recon.h"

#define NONE ENGINE_RECON_NONE
#define PUT ENGINE_RECON_PUT
#define WD ENGINE_RECON_WITHDRAWN
#define LOST ENGINE_RECON_LOST

static enum engine_recon_action task(enum engine_phase ph, enum engine_task_state st, bool item,
                                     bool ended, bool open)
{
    struct engine_recon_facts f = {ph, (uint8_t)st, item, ended, open};
    return engine_recon_task(&f);
}

/* A 'q' task in a phase that dispatches: each row of the table. */
static void test_queued_dispatching(void **state)
{
    (void)state;
    enum engine_phase phs[] = {ENGINE_PH_RUNNING, ENGINE_PH_ROLLING_BACK};
    enum engine_task_state sts[] = {ENGINE_TS_QUEUED, ENGINE_TS_RUNNING};
    for (size_t i = 0; i < 2; i++)
        for (size_t k = 0; k < 2; k++) {
            enum engine_phase ph = phs[i];
            enum engine_task_state st = sts[k];
            /* in the queue, claimed or not: followed */
            assert_int_equal(task(ph, st, true, false, false), NONE);
            assert_int_equal(task(ph, st, true, false, true), NONE);
            assert_int_equal(task(ph, st, true, true, false), NONE);
            /* finished: run.c steps it from its record */
            assert_int_equal(task(ph, st, false, true, false), NONE);
            assert_int_equal(task(ph, st, false, true, true), NONE);
            /* a record without outcome, no item: its worker is gone */
            assert_int_equal(task(ph, st, false, false, true), LOST);
            /* nothing at all: the item was lost (a withdraw, a put never made) */
            assert_int_equal(task(ph, st, false, false, false), PUT);
        }
}

/* The same in the phases that do not dispatch: no put, the task goes back to pending. */
static void test_queued_not_dispatching(void **state)
{
    (void)state;
    enum engine_phase phs[] = {ENGINE_PH_PAUSED, ENGINE_PH_DRAINING, ENGINE_PH_RB_DRAINING,
                               ENGINE_PH_PENDING};
    for (size_t i = 0; i < sizeof(phs) / sizeof(phs[0]); i++) {
        enum engine_phase ph = phs[i];
        assert_int_equal(task(ph, ENGINE_TS_QUEUED, true, false, false), NONE);
        assert_int_equal(task(ph, ENGINE_TS_QUEUED, false, true, false), NONE);
        assert_int_equal(task(ph, ENGINE_TS_QUEUED, false, false, true), LOST);
        assert_int_equal(task(ph, ENGINE_TS_QUEUED, false, false, false), WD);
    }
}

/* A final phase is reconciled (rows, attempts, key-values) but nothing is stepped. */
static void test_final_phases(void **state)
{
    (void)state;
    for (int ph = ENGINE_PH_SUCCEEDED; ph < ENGINE_PH_COUNT; ph++) {
        assert_true(engine_phase_final((enum engine_phase)ph));
        assert_int_equal(task((enum engine_phase)ph, ENGINE_TS_QUEUED, false, false, false), NONE);
        assert_int_equal(task((enum engine_phase)ph, ENGINE_TS_QUEUED, false, false, true), NONE);
    }
}

/* Tasks not in flight are never acted on, whatever is there. */
static void test_not_in_flight(void **state)
{
    (void)state;
    enum engine_task_state sts[] = {ENGINE_TS_WAITING, ENGINE_TS_PENDING, ENGINE_TS_SUCCEEDED,
                                    ENGINE_TS_FAILED,  ENGINE_TS_SKIPPED, ENGINE_TS_CANCELLED};
    for (size_t k = 0; k < sizeof(sts) / sizeof(sts[0]); k++)
        for (int b = 0; b < 8; b++)
            assert_int_equal(task(ENGINE_PH_RUNNING, sts[k], b & 1, b & 2, b & 4), NONE);
}

static bool merge(enum engine_task_state st, bool current, bool ended, bool ok, bool create)
{
    struct engine_recon_run r = {(uint8_t)st, current, ended, ok, create};
    return engine_recon_merge(&r);
}

static void test_merge(void **state)
{
    (void)state;
    /* The log says succeeded and the record is that attempt's: its key-values again. */
    assert_true(merge(ENGINE_TS_SUCCEEDED, true, true, true, false));
    assert_true(merge(ENGINE_TS_SUCCEEDED, true, true, true, true));
    /* An older attempt's record, or one without outcome: never. */
    assert_false(merge(ENGINE_TS_SUCCEEDED, false, true, true, false));
    assert_false(merge(ENGINE_TS_SUCCEEDED, true, false, false, false));
    assert_false(merge(ENGINE_TS_SUCCEEDED, true, true, false, false));
    /* A create that failed for good: what it made (its provider-id) for the rollback. */
    assert_true(merge(ENGINE_TS_FAILED, true, true, false, true));
    assert_false(merge(ENGINE_TS_FAILED, true, true, false, false));
    assert_false(merge(ENGINE_TS_FAILED, false, true, false, true));
    /* In flight: run.c steps it and merges then. */
    assert_false(merge(ENGINE_TS_QUEUED, true, true, true, false));
    assert_false(merge(ENGINE_TS_RUNNING, true, true, false, true));
    assert_false(merge(ENGINE_TS_WAITING, true, true, true, false));
}

/* Two results of one node: a task and the task after it (its dependent), whose workers' wall
 * clocks differ, the second's an hour behind ("end" earlier). The merge order is the order
 * ZooKeeper wrote the outcomes (mzxid), so the dependent's key-values win again, as they did
 * under the last owner; sorting by "end" (the code before) put the dependent first. */
static void test_merge_order(void **state)
{
    (void)state;
    long end_first = 1700000000000L, end_second = end_first + 2000 - 3600000L; /* skewed */
    struct engine_recon_written w[] = {
        {"f-2-1", 5002, &end_second}, /* the dependent: written later, its clock behind */
        {"f-7-1", 4000, NULL},        /* another node's */
        {"f-1-1", 5001, &end_first},  /* the task it waited for */
        {"f-3-2", 5001, NULL},        /* the same zxid (one multi-op): by name */
    };
    engine_recon_merge_order(w, 4);
    assert_string_equal(w[0].name, "f-7-1");
    assert_string_equal(w[1].name, "f-1-1");
    assert_string_equal(w[2].name, "f-3-2");
    assert_string_equal(w[3].name, "f-2-1");
    assert_true(*(long *)w[3].data < *(long *)w[1].data); /* the wall clocks say otherwise */
    engine_recon_merge_order(w, 0);
    engine_recon_merge_order(NULL, 0);
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(engine_recon_name(NONE), "none");
    assert_string_equal(engine_recon_name(PUT), "put");
    assert_string_equal(engine_recon_name(WD), "withdrawn");
    assert_string_equal(engine_recon_name(LOST), "lost");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_queued_dispatching),
        cmocka_unit_test(test_queued_not_dispatching),
        cmocka_unit_test(test_final_phases),
        cmocka_unit_test(test_not_in_flight),
        cmocka_unit_test(test_merge),
        cmocka_unit_test(test_merge_order),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
