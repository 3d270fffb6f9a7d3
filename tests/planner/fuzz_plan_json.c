/*
 * Fuzz target for the plan parser (planner_plan_from_json), the input the
 * engine reloads after a failover. Whatever it accepts must also export,
 * stage, roll back and read back without a fault.
 *
 * Built two ways: with -DDROVER_FUZZ=ON and clang, a libFuzzer binary
 * (fuzz_plan_json CORPUS_DIR); always, a ctest (test_fuzz_plan_json_replay)
 * whose main() replays tests/planner/corpus/ and byte-level mutations of it.
 */
#include <dirent.h>
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

#ifndef DROVER_LIBFUZZER
static int replay(const char *path, unsigned long *runs)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return -1;
    static uint8_t buf[1 << 20];
    size_t n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    LLVMFuzzerTestOneInput(buf, n);
    (*runs)++;
    /* Deterministic mutations: flip, drop and duplicate bytes. */
    static uint8_t mut[(1 << 20) + 16];
    uint64_t x = 88172645463325252ULL ^ n;
    for (int k = 0; k < 300 && n > 0; k++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t pos = x % n, m = n;
        memcpy(mut, buf, n);
        switch (k % 3) {
        case 0:
            mut[pos] ^= (uint8_t)(1u << (x >> 32) % 8);
            break;
        case 1:
            memmove(mut + pos, mut + pos + 1, n - pos - 1);
            m = n - 1;
            break;
        default:
            memmove(mut + pos + 1, mut + pos, n - pos);
            m = n + 1;
            break;
        }
        LLVMFuzzerTestOneInput(mut, m);
        (*runs)++;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : DROVER_CORPUS_DIR;
    DIR *d = opendir(dir);
    if (d == NULL) {
        fprintf(stderr, "cannot open corpus \"%s\"\n", dir);
        return 1;
    }
    unsigned long runs = 0, files = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (replay(path, &runs) == 0)
            files++;
    }
    closedir(d);
    printf("replayed %lu files, %lu inputs\n", files, runs);
    return files > 0 ? 0 : 1;
}
#endif
