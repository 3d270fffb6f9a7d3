/*
 * Unit tests of the engine's state machines (src/engine/fsm.c): every
 * transition of the job diagram and of the task diagram, the invariants
 * J1-J3 and T1-T3 of the file note, and the task log and job state codecs
 * (tasklog.c) with their refusals.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"
#include "xalloc.h"

#define A_REC ENGINE_ACT_RECORD
#define A_FIN ENGINE_ACT_FINISH
#define A_WD ENGINE_ACT_WITHDRAW
#define A_RB ENGINE_ACT_BUILD_ROLLBACK
#define A_PLAN ENGINE_ACT_PLAN

struct jcase {
    enum engine_phase from;
    enum engine_job_event ev;
    size_t in_flight;
    bool plan_done, cancel, paused, rollback;
    enum engine_phase to;
    unsigned actions;
};

static const struct jcase jcases[] = {
    /* start */
    {ENGINE_PH_PENDING, ENGINE_EV_START, 0, 0, 0, 0, 1, ENGINE_PH_RUNNING, A_PLAN | A_REC},
    {ENGINE_PH_PENDING, ENGINE_EV_START, 0, 0, 0, 1, 1, ENGINE_PH_PAUSED, A_PLAN | A_REC},
    {ENGINE_PH_PENDING, ENGINE_EV_CANCEL, 0, 0, 1, 0, 1, ENGINE_PH_CANCELLED, A_REC | A_FIN},
    {ENGINE_PH_PENDING, ENGINE_EV_PROGRESS, 0, 0, 0, 0, 1, ENGINE_PH_PENDING, 0},
    /* running */
    {ENGINE_PH_RUNNING, ENGINE_EV_PROGRESS, 3, 0, 0, 0, 1, ENGINE_PH_RUNNING, 0},
    {ENGINE_PH_RUNNING, ENGINE_EV_PROGRESS, 0, 1, 0, 0, 1, ENGINE_PH_SUCCEEDED, A_REC | A_FIN},
    {ENGINE_PH_RUNNING, ENGINE_EV_PROGRESS, 1, 1, 0, 0, 1, ENGINE_PH_RUNNING, 0},
    {ENGINE_PH_RUNNING, ENGINE_EV_PAUSE, 2, 0, 0, 1, 1, ENGINE_PH_PAUSED, A_REC | A_WD},
    {ENGINE_PH_RUNNING, ENGINE_EV_RESUME, 2, 0, 0, 0, 1, ENGINE_PH_RUNNING, 0},
    {ENGINE_PH_RUNNING, ENGINE_EV_GAVE_UP, 2, 0, 0, 0, 1, ENGINE_PH_DRAINING, A_REC | A_WD},
    {ENGINE_PH_RUNNING, ENGINE_EV_GAVE_UP, 0, 0, 0, 0, 1, ENGINE_PH_ROLLING_BACK,
     A_REC | A_WD | A_RB},
    {ENGINE_PH_RUNNING, ENGINE_EV_GAVE_UP, 0, 0, 0, 0, 0, ENGINE_PH_FAILED, A_REC | A_WD | A_FIN},
    {ENGINE_PH_RUNNING, ENGINE_EV_CANCEL, 4, 0, 1, 0, 1, ENGINE_PH_DRAINING, A_REC | A_WD},
    {ENGINE_PH_RUNNING, ENGINE_EV_CANCEL, 0, 0, 1, 0, 0, ENGINE_PH_CANCELLED, A_REC | A_WD | A_FIN},
    {ENGINE_PH_RUNNING, ENGINE_EV_STALLED, 2, 0, 0, 0, 1, ENGINE_PH_DRAINING, A_REC | A_WD},
    {ENGINE_PH_RUNNING, ENGINE_EV_STALLED, 0, 0, 0, 0, 1, ENGINE_PH_ROLLING_BACK,
     A_REC | A_WD | A_RB},
    {ENGINE_PH_RUNNING, ENGINE_EV_STALLED, 0, 0, 0, 0, 0, ENGINE_PH_FAILED, A_REC | A_WD | A_FIN},
    /* paused */
    {ENGINE_PH_PAUSED, ENGINE_EV_STALLED, 1, 0, 0, 1, 1, ENGINE_PH_DRAINING, A_REC | A_WD},
    {ENGINE_PH_PAUSED, ENGINE_EV_RESUME, 1, 0, 0, 0, 1, ENGINE_PH_RUNNING, A_REC},
    {ENGINE_PH_PAUSED, ENGINE_EV_PAUSE, 1, 0, 0, 1, 1, ENGINE_PH_PAUSED, 0},
    {ENGINE_PH_PAUSED, ENGINE_EV_PROGRESS, 1, 0, 0, 1, 1, ENGINE_PH_PAUSED, 0},
    {ENGINE_PH_PAUSED, ENGINE_EV_PROGRESS, 0, 1, 0, 1, 1, ENGINE_PH_SUCCEEDED, A_REC | A_FIN},
    {ENGINE_PH_PAUSED, ENGINE_EV_CANCEL, 1, 0, 1, 1, 1, ENGINE_PH_DRAINING, A_REC | A_WD},
    {ENGINE_PH_PAUSED, ENGINE_EV_GAVE_UP, 1, 0, 0, 1, 1, ENGINE_PH_DRAINING, A_REC | A_WD},
    /* draining */
    {ENGINE_PH_DRAINING, ENGINE_EV_PROGRESS, 1, 0, 0, 0, 1, ENGINE_PH_DRAINING, 0},
    {ENGINE_PH_DRAINING, ENGINE_EV_PROGRESS, 0, 0, 0, 0, 1, ENGINE_PH_ROLLING_BACK, A_REC | A_RB},
    {ENGINE_PH_DRAINING, ENGINE_EV_PROGRESS, 0, 0, 1, 0, 1, ENGINE_PH_ROLLING_BACK, A_REC | A_RB},
    {ENGINE_PH_DRAINING, ENGINE_EV_PROGRESS, 0, 0, 0, 0, 0, ENGINE_PH_FAILED, A_REC | A_FIN},
    {ENGINE_PH_DRAINING, ENGINE_EV_PROGRESS, 0, 0, 1, 0, 0, ENGINE_PH_CANCELLED, A_REC | A_FIN},
    {ENGINE_PH_DRAINING, ENGINE_EV_GAVE_UP, 0, 0, 0, 0, 1, ENGINE_PH_ROLLING_BACK, A_REC | A_RB},
    {ENGINE_PH_DRAINING, ENGINE_EV_STALLED, 1, 0, 0, 0, 1, ENGINE_PH_DRAINING, 0},
    {ENGINE_PH_DRAINING, ENGINE_EV_STALLED, 0, 0, 0, 0, 1, ENGINE_PH_ROLLING_BACK, A_REC | A_RB},
    {ENGINE_PH_DRAINING, ENGINE_EV_PAUSE, 0, 0, 0, 0, 1, ENGINE_PH_DRAINING, 0},
    {ENGINE_PH_DRAINING, ENGINE_EV_RESUME, 0, 0, 0, 0, 1, ENGINE_PH_DRAINING, 0},
    /* rolling back */
    {ENGINE_PH_ROLLING_BACK, ENGINE_EV_PROGRESS, 2, 0, 0, 0, 1, ENGINE_PH_ROLLING_BACK, 0},
    {ENGINE_PH_ROLLING_BACK, ENGINE_EV_PROGRESS, 0, 1, 0, 0, 1, ENGINE_PH_ROLLED_BACK,
     A_REC | A_FIN},
    {ENGINE_PH_ROLLING_BACK, ENGINE_EV_PROGRESS, 0, 1, 1, 0, 1, ENGINE_PH_CANCELLED, A_REC | A_FIN},
    {ENGINE_PH_ROLLING_BACK, ENGINE_EV_GAVE_UP, 2, 0, 0, 0, 1, ENGINE_PH_RB_DRAINING, A_REC},
    {ENGINE_PH_ROLLING_BACK, ENGINE_EV_GAVE_UP, 0, 0, 0, 0, 1, ENGINE_PH_NEEDS_OPERATOR,
     A_REC | A_FIN},
    {ENGINE_PH_ROLLING_BACK, ENGINE_EV_STALLED, 2, 0, 0, 0, 1, ENGINE_PH_RB_DRAINING, A_REC | A_WD},
    {ENGINE_PH_ROLLING_BACK, ENGINE_EV_STALLED, 0, 0, 0, 0, 1, ENGINE_PH_NEEDS_OPERATOR,
     A_REC | A_FIN},
    {ENGINE_PH_RB_DRAINING, ENGINE_EV_STALLED, 1, 0, 0, 0, 1, ENGINE_PH_RB_DRAINING, 0},
    {ENGINE_PH_RB_DRAINING, ENGINE_EV_STALLED, 0, 0, 0, 0, 1, ENGINE_PH_NEEDS_OPERATOR,
     A_REC | A_FIN},
    {ENGINE_PH_ROLLING_BACK, ENGINE_EV_PAUSE, 2, 0, 0, 0, 1, ENGINE_PH_ROLLING_BACK, 0},
    {ENGINE_PH_ROLLING_BACK, ENGINE_EV_CANCEL, 2, 0, 1, 0, 1, ENGINE_PH_ROLLING_BACK, 0},
    {ENGINE_PH_RB_DRAINING, ENGINE_EV_PROGRESS, 1, 0, 0, 0, 1, ENGINE_PH_RB_DRAINING, 0},
    {ENGINE_PH_RB_DRAINING, ENGINE_EV_PROGRESS, 0, 0, 0, 0, 1, ENGINE_PH_NEEDS_OPERATOR,
     A_REC | A_FIN},
};

static void test_job_transitions(void **state)
{
    for (size_t i = 0; i < sizeof(jcases) / sizeof(jcases[0]); i++) {
        const struct jcase *c = &jcases[i];
        struct engine_job_facts f = {c->in_flight, c->plan_done, c->cancel, c->paused, c->rollback};
        struct engine_job_out o = engine_job_step(c->from, c->ev, &f);
        if (o.phase != c->to || o.actions != c->actions)
            fail_msg("case %zu: %s + event %d -> %s actions %#x, expected %s actions %#x", i,
                     engine_phase_name(c->from), c->ev, engine_phase_name(o.phase), o.actions,
                     engine_phase_name(c->to), c->actions);
    }
}

/* J1, J2, J3 over every phase, event and a grid of facts. */
static void test_job_invariants(void **state)
{
    for (int ph = 0; ph < ENGINE_PH_COUNT; ph++)
        for (int ev = ENGINE_EV_START; ev <= ENGINE_EV_STALLED; ev++)
            for (int bits = 0; bits < 32; bits++)
                for (size_t fl = 0; fl < 2; fl++) {
                    struct engine_job_facts f = {fl, bits & 1, bits & 2, bits & 4, bits & 8};
                    struct engine_job_out o = engine_job_step(ph, ev, &f);
                    if (engine_phase_final(ph))
                        assert_true(o.phase == (enum engine_phase)ph && o.actions == 0); /* J3 */
                    bool left_drain = (ph == ENGINE_PH_DRAINING || ph == ENGINE_PH_RB_DRAINING) &&
                                      o.phase != (enum engine_phase)ph;
                    if (left_drain)
                        assert_int_equal(fl, 0); /* J2 */
                    if (o.actions & ENGINE_ACT_FINISH)
                        assert_true(engine_phase_final(o.phase));
                    if (o.actions & ENGINE_ACT_BUILD_ROLLBACK) {
                        assert_int_equal(o.phase, ENGINE_PH_ROLLING_BACK);
                        assert_int_equal(fl, 0);
                    }
                }
    /* J1 */
    assert_true(engine_phase_dispatches(ENGINE_PH_RUNNING));
    assert_true(engine_phase_dispatches(ENGINE_PH_ROLLING_BACK));
    for (int ph = 0; ph < ENGINE_PH_COUNT; ph++)
        if (ph != ENGINE_PH_RUNNING && ph != ENGINE_PH_ROLLING_BACK)
            assert_false(engine_phase_dispatches(ph));
}

static void test_statuses(void **state)
{
    assert_string_equal(engine_phase_status(ENGINE_PH_DRAINING, false), "rolling-back");
    assert_string_equal(engine_phase_status(ENGINE_PH_FAILED, false), "failed");
    assert_string_equal(engine_phase_status(ENGINE_PH_DRAINING, true), "rolling-back");
    assert_string_equal(engine_phase_status(ENGINE_PH_RB_DRAINING, false), "rolling-back");
    assert_string_equal(engine_phase_status(ENGINE_PH_NEEDS_OPERATOR, false), "needs-operator");
    for (int ph = 0; ph < ENGINE_PH_COUNT; ph++)
        assert_int_equal(engine_phase_parse(engine_phase_name(ph)), ph);
    assert_int_equal(engine_phase_parse("nope"), -1);
    for (int s = 0; s < ENGINE_TS_COUNT; s++)
        assert_int_equal(engine_task_state_parse(engine_task_state_name(s)), s);
}

/* A resuming owner STARTs a job still pending (its first owner died between its znodes and
 * START: found by a 600 s chaos run), and PROGRESSes every other phase it resumes. */
static void test_resume_event(void **state)
{
    assert_int_equal(engine_resume_event(ENGINE_PH_PENDING), ENGINE_EV_START);
    for (int ph = 0; ph < ENGINE_PH_COUNT; ph++)
        if (ph != ENGINE_PH_PENDING)
            assert_int_equal(engine_resume_event(ph), ENGINE_EV_PROGRESS);
    struct engine_job_facts f = {.in_flight = 0};
    struct engine_job_out o =
        engine_job_step(ENGINE_PH_PENDING, engine_resume_event(ENGINE_PH_PENDING), &f);
    assert_int_equal(o.phase, ENGINE_PH_RUNNING);
}

static void test_task_happy_path(void **state)
{
    struct engine_task_policy pol = {3, false};
    struct engine_task_rec t = {ENGINE_TS_WAITING, 0, 0};
    struct engine_task_out o = engine_task_step(&t, ENGINE_TEV_DISPATCH, &pol);
    assert_int_equal(o.state, ENGINE_TS_QUEUED);
    assert_int_equal(o.actions, ENGINE_TACT_PUT);
    assert_int_equal(t.attempt, 1);
    o = engine_task_step(&t, ENGINE_TEV_DISPATCH, &pol); /* T1: not twice */
    assert_int_equal(o.actions, 0);
    assert_int_equal(t.attempt, 1);
    o = engine_task_step(&t, ENGINE_TEV_STARTED, &pol);
    assert_int_equal(o.state, ENGINE_TS_RUNNING);
    o = engine_task_step(&t, ENGINE_TEV_OK, &pol);
    assert_int_equal(o.state, ENGINE_TS_SUCCEEDED);
    assert_int_equal(o.actions, ENGINE_TACT_EXEC_OK);
    /* Done stays done: late results and dispatches change nothing. */
    for (int ev = ENGINE_TEV_DISPATCH; ev <= ENGINE_TEV_LOST; ev++) {
        o = engine_task_step(&t, ev, &pol);
        assert_int_equal(o.state, ENGINE_TS_SUCCEEDED);
        assert_int_equal(o.actions, 0);
    }
}

static void test_task_retries(void **state)
{
    struct engine_task_policy pol = {3, false};
    struct engine_task_rec t = {ENGINE_TS_PENDING, 0, 0};
    engine_task_step(&t, ENGINE_TEV_DISPATCH, &pol);
    struct engine_task_out o = engine_task_step(&t, ENGINE_TEV_FAIL, &pol);
    assert_int_equal(o.state, ENGINE_TS_QUEUED);
    assert_int_equal(o.actions, ENGINE_TACT_PUT | ENGINE_TACT_AVOID_WORKER);
    assert_int_equal(t.attempt, 2);
    assert_int_equal(t.failures, 1);
    engine_task_step(&t, ENGINE_TEV_STARTED, &pol);
    o = engine_task_step(&t, ENGINE_TEV_FAIL, &pol);
    assert_int_equal(t.attempt, 3);
    o = engine_task_step(&t, ENGINE_TEV_FAIL, &pol); /* T2 */
    assert_int_equal(o.state, ENGINE_TS_FAILED);
    assert_int_equal(o.actions, ENGINE_TACT_EXEC_FAIL | ENGINE_TACT_GAVE_UP);
    assert_int_equal(t.failures, 3);
    assert_int_equal(t.attempt, 3);
}

static void test_task_create_cleanup(void **state)
{
    struct engine_task_policy pol = {2, true};
    struct engine_task_rec t = {ENGINE_TS_WAITING, 0, 0};
    struct engine_task_out o = engine_task_step(&t, ENGINE_TEV_DISPATCH, &pol);
    assert_false(o.actions & ENGINE_TACT_CLEANUP);
    o = engine_task_step(&t, ENGINE_TEV_FAIL, &pol); /* T3 */
    assert_true(o.actions & ENGINE_TACT_CLEANUP);
    assert_true(o.actions & ENGINE_TACT_PUT);
    /* Withdrawn (paused), then dispatched again: still cleans up. */
    o = engine_task_step(&t, ENGINE_TEV_WITHDRAWN, &pol);
    assert_int_equal(o.state, ENGINE_TS_PENDING);
    assert_int_equal(o.actions, ENGINE_TACT_EXEC_REQUEUE);
    o = engine_task_step(&t, ENGINE_TEV_DISPATCH, &pol);
    assert_true(o.actions & ENGINE_TACT_CLEANUP);
    assert_int_equal(t.attempt, 3);
}

static void test_task_lost(void **state)
{
    struct engine_task_policy pol = {2, false};
    struct engine_task_rec t = {ENGINE_TS_WAITING, 0, 0};
    struct engine_task_out o = engine_task_step(&t, ENGINE_TEV_LOST, &pol);
    assert_int_equal(o.actions, 0); /* only one in flight can be lost */
    engine_task_step(&t, ENGINE_TEV_DISPATCH, &pol);
    engine_task_step(&t, ENGINE_TEV_STARTED, &pol);
    o = engine_task_step(&t, ENGINE_TEV_LOST, &pol); /* T4: again, no failure */
    assert_int_equal(o.state, ENGINE_TS_QUEUED);
    assert_int_equal(o.actions, ENGINE_TACT_PUT | ENGINE_TACT_AVOID_WORKER);
    assert_int_equal(t.attempt, 2);
    assert_int_equal(t.failures, 0);
    for (int i = 0; i < 5; i++) /* lost again and again: never gives up for that */
        o = engine_task_step(&t, ENGINE_TEV_LOST, &pol);
    assert_int_equal(o.state, ENGINE_TS_QUEUED);
    assert_int_equal(t.failures, 0);
    t.attempt = ENGINE_MAX_ATTEMPT; /* ... but for the attempts' bound */
    o = engine_task_step(&t, ENGINE_TEV_LOST, &pol);
    assert_int_equal(o.state, ENGINE_TS_FAILED);
    assert_true(o.actions & ENGINE_TACT_GAVE_UP);
    /* A create lost counts a failure, so its next attempt cleans up (T3). */
    struct engine_task_policy cpol = {3, true};
    t = (struct engine_task_rec){ENGINE_TS_RUNNING, 1, 0};
    o = engine_task_step(&t, ENGINE_TEV_LOST, &cpol);
    assert_int_equal(o.state, ENGINE_TS_QUEUED);
    assert_true(o.actions & ENGINE_TACT_CLEANUP);
    assert_int_equal(t.failures, 1);
}

static void test_task_withdraw_and_cancel(void **state)
{
    struct engine_task_policy pol = {3, false};
    struct engine_task_rec t = {ENGINE_TS_WAITING, 0, 0};
    struct engine_task_out o = engine_task_step(&t, ENGINE_TEV_WITHDRAWN, &pol);
    assert_int_equal(o.actions, 0); /* only a queued task can be withdrawn */
    o = engine_task_step(&t, ENGINE_TEV_CANCEL, &pol);
    assert_int_equal(o.state, ENGINE_TS_CANCELLED);
    t = (struct engine_task_rec){ENGINE_TS_RUNNING, 1, 0};
    o = engine_task_step(&t, ENGINE_TEV_CANCEL, &pol); /* running tasks finish */
    assert_int_equal(o.state, ENGINE_TS_RUNNING);
    /* Its item taken back unclaimed (the withdraw cancels only those): its worker is gone,
       the attempt is over (issue 22: it was left running for ever). */
    o = engine_task_step(&t, ENGINE_TEV_WITHDRAWN, &pol);
    assert_int_equal(o.state, ENGINE_TS_PENDING);
    assert_int_equal(o.actions, ENGINE_TACT_EXEC_REQUEUE);
    t = (struct engine_task_rec){ENGINE_TS_PENDING, ENGINE_MAX_ATTEMPT, 0};
    o = engine_task_step(&t, ENGINE_TEV_DISPATCH, &pol);
    assert_int_equal(o.state, ENGINE_TS_FAILED);
    assert_true(o.actions & ENGINE_TACT_GAVE_UP);
}

static void test_log_roundtrip(void **state)
{
    enum { N = 1100 };
    struct engine_task_rec *r = xcalloc(N, sizeof(*r));
    for (size_t i = 0; i < N; i++) {
        static const enum engine_task_state sts[] = {
            ENGINE_TS_WAITING,   ENGINE_TS_PENDING, ENGINE_TS_QUEUED,  ENGINE_TS_RUNNING,
            ENGINE_TS_SUCCEEDED, ENGINE_TS_FAILED,  ENGINE_TS_SKIPPED, ENGINE_TS_CANCELLED};
        r[i].state = (uint8_t)sts[i % 8];
        r[i].attempt = (uint8_t)(i % 62);
        r[i].failures = (uint8_t)(i % 5);
    }
    char *text = engine__log_encode(r, 512, 512, 1);
    assert_true(strlen(text) < 2048); /* invariant 7: a few KB at most */
    struct engine_task_rec back[512];
    struct drv_err err;
    assert_int_equal(engine__log_decode(text, strlen(text), 512, 512, back, &err), 0);
    for (size_t i = 0; i < 512; i++) {
        enum engine_task_state want = r[512 + i].state;
        if (want == ENGINE_TS_PENDING)
            want = ENGINE_TS_WAITING; /* derived, not written */
        if (want == ENGINE_TS_RUNNING)
            want = ENGINE_TS_QUEUED;
        assert_int_equal(back[i].state, want);
        assert_int_equal(back[i].attempt, r[512 + i].attempt);
        assert_int_equal(back[i].failures, r[512 + i].failures);
    }
    /* Wrong place, wrong size, a newer format, garbage: refused. */
    assert_int_equal(engine__log_decode(text, strlen(text), 0, 512, back, &err), DRV_EINVAL);
    assert_int_equal(engine__log_decode(text, strlen(text), 512, 500, back, &err), DRV_EINVAL);
    const char *newer = "{\"format\":99,\"first\":0,\"n\":1,\"s\":\"S\",\"a\":\"1\",\"f\":\"0\"}";
    assert_int_equal(engine__log_decode(newer, strlen(newer), 0, 1, back, &err), DRV_EINVAL);
    assert_non_null(strstr(err.msg, "format 99"));
    /* This build's format and the one before it are read (rolling upgrades, format.h). */
    char *mine = engine__log_encode(r, 0, 1, DROVER_FORMAT_VERSION);
    char *before = engine__log_encode(r, 0, 1, DROVER_FORMAT_MIN_READ);
    assert_int_equal(engine__log_decode(mine, strlen(mine), 0, 1, back, &err), 0);
    assert_int_equal(engine__log_decode(before, strlen(before), 0, 1, back, &err), 0);
    free(mine);
    free(before);
    char next[96];
    snprintf(next, sizeof(next),
             "{\"format\":%d,\"first\":0,\"n\":1,\"s\":\"S\",\"a\":\"1\",\"f\":\"0\"}",
             DROVER_FORMAT_VERSION + 1);
    assert_int_equal(engine__log_decode(next, strlen(next), 0, 1, back, &err), DRV_EINVAL);
    const char *bad = "{\"format\":1,\"first\":0,\"n\":1,\"s\":\"Z\",\"a\":\"1\",\"f\":\"0\"}";
    assert_int_equal(engine__log_decode(bad, strlen(bad), 0, 1, back, &err), DRV_EINVAL);
    assert_int_equal(engine__log_decode("[", 1, 0, 1, back, &err), DRV_EINVAL);
    free(text);
    free(r);
}

static void test_state_roundtrip(void **state)
{
    struct engine_state st = {.phase = ENGINE_PH_ROLLING_BACK,
                              .cancel = true,
                              .tasks = 140007,
                              .rb_tasks = 12,
                              .nodes_rev = 9};
    memset(st.plan_sha, 'a', 64);
    snprintf(st.error, sizeof(st.error), "task \"node-1/create\" failed: exit 3");
    char *text = engine__state_encode(&st, "droverd-2", 4294967302LL);
    struct engine_state back;
    struct drv_err err;
    assert_int_equal(engine__state_decode(text, strlen(text), &back, &err), 0);
    assert_int_equal(back.phase, ENGINE_PH_ROLLING_BACK);
    assert_true(back.cancel);
    assert_false(back.paused);
    assert_int_equal(back.tasks, 140007);
    assert_int_equal(back.rb_tasks, 12);
    assert_int_equal(back.nodes_rev, 9);
    assert_string_equal(back.plan_sha, st.plan_sha);
    assert_string_equal(back.error, st.error);
    assert_non_null(strstr(text, "\"owner\":\"droverd-2\""));
    free(text);
    const char *bad = "{\"format\":1,\"phase\":\"flying\",\"tasks\":1,\"plan_sha\":\"\"}";
    assert_int_equal(engine__state_decode(bad, strlen(bad), &back, &err), DRV_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_job_transitions),
        cmocka_unit_test(test_job_invariants),
        cmocka_unit_test(test_statuses),
        cmocka_unit_test(test_resume_event),
        cmocka_unit_test(test_task_happy_path),
        cmocka_unit_test(test_task_retries),
        cmocka_unit_test(test_task_create_cleanup),
        cmocka_unit_test(test_task_withdraw_and_cancel),
        cmocka_unit_test(test_task_lost),
        cmocka_unit_test(test_log_roundtrip),
        cmocka_unit_test(test_state_roundtrip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
