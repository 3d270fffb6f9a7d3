/*
 * Fuzz target for the plan parser (planner_plan_from_json), the input the
 * engine reloads after a failover. Whatever it accepts must also export,
 * stage, roll back and read back without a fault.
 *
 * Built by drover_fuzz_target: always a ctest (fuzz_replay_plan_json) that
 * replays tests/planner/corpus/ and byte-level mutations of it; with
 * -DDROVER_FUZZ=ON and clang also a libFuzzer program (fuzz_plan_json).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planner.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *j = json_loadb((const char *)data, size, 0, NULL);
    if (j == NULL)
        return 0;
    struct planner_plan *p = NULL;
    struct drv_err err = {0};
    if (planner_plan_from_json(j, &p, &err) == 0) {
        size_t len = 0;
        char *text = planner_plan_to_json_text(p, &len);
        json_t *back = json_loadb(text, len, 0, NULL);
        struct planner_plan *q = NULL;
        if (back == NULL || planner_plan_from_json(back, &q, &err) != 0)
            abort(); /* what we write we must read */
        planner_plan_free(q);
        json_decref(back);
        free(text);
        struct planner_stages *st = NULL;
        if (planner_stages(p, &st, &err) == 0)
            planner_stages_free(st);
        enum planner_task_state *states = calloc(p->n_tasks + 1, sizeof(*states));
        for (size_t i = 0; i < p->n_tasks; i++)
            states[i] = (enum planner_task_state)((i * 7 + size) % PLANNER_TS_COUNT);
        free(planner_plan_to_dot(p, states));
        struct planner_plan *rb = NULL;
        if (planner_rollback(p, states, NULL, 0, &rb, &err) == 0)
            planner_plan_free(rb);
        /* Resume a run from those states and finish it: every task ends settled. */
        struct planner_exec *x = NULL;
        if (planner_exec_new(p, states, &x, &err) == 0) {
            uint32_t *batch = malloc((p->n_tasks + 1) * sizeof(*batch));
            for (size_t i = 0; i < p->n_tasks; i++)
                if (planner_exec_states(x)[i] == PLANNER_TS_IN_PROGRESS)
                    planner_exec_done(x, (uint32_t)i, (int)(i % 3), &err);
            for (size_t got; (got = planner_exec_next(x, batch, p->n_tasks + 1)) > 0;)
                for (size_t k = 0; k < got; k++)
                    if (planner_exec_done(x, batch[k], (int)((batch[k] + size) % 5), &err) != 0)
                        abort();
            if (!planner_exec_finished(x))
                abort();
            free(batch);
            planner_exec_free(x);
        }
        free(states);
        planner_plan_free(p);
    }
    json_decref(j);
    return 0;
}
