/* Test fixtures for the planner: see fixture.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "xalloc.h"

static json_t *name_list(const char *csv)
{
    json_t *a = json_array();
    char *dup = xstrdup(csv), *save = NULL;
    for (char *tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        json_array_append_new(a, json_string(tok));
    free(dup);
    return a;
}

void fx_service(struct model_catalog *c, const char *name, const char *actions,
                const char *install_requires, const char *runtime_requires,
                const char *runtime_uses, const char *provides)
{
    json_t *acts = json_object();
    char *dup = xstrdup(actions), *save = NULL;
    for (char *tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *strat = strchr(tok, ':');
        if (strat)
            *strat++ = '\0';
        char *run = xasprintf("recipe[%s::%s]", name, tok);
        json_t *a = json_pack("{s:s, s:{s:s}}", "type", "chef-solo", "fields", "run_list", run);
        free(run);
        if (strat && strcmp(strat, "one-by-one") == 0) {
            json_object_set_new(a, "strategy", json_string("one-by-one"));
        } else if (strat && strncmp(strat, "parallel=", 9) == 0) {
            json_object_set_new(
                a, "strategy",
                json_pack("{s:s, s:i}", "type", "parallel", "amount", atoi(strat + 9)));
        }
        json_object_set_new(acts, tok, a);
    }
    free(dup);
    json_t *j = json_pack("{s:s, s:s, s:{s:[], s:{s:o, s:[]}, s:o, s:{s:o, s:o}}, s:{s:o}}", "name",
                          name, "description", name, "dependencies", "conflicts", "install",
                          "requires", name_list(install_requires), "uses", "provides",
                          name_list(provides), "runtime", "requires", name_list(runtime_requires),
                          "uses", name_list(runtime_uses), "provisioner", "actions", acts);
    assert_non_null(j);
    struct drv_err err = {0};
    int rc = model_catalog_put_json(c, MODEL_SERVICE, j, NULL, &err);
    if (rc)
        fail_msg("service %s: %s", name, err.msg);
    json_decref(j);
}

void fx_node(struct model_layout *l, const char *id, const char *services)
{
    const char *v[64];
    size_t n = 0;
    char *dup = xstrdup(services), *save = NULL;
    for (char *tok = strtok_r(dup, ",", &save); tok && n < 64; tok = strtok_r(NULL, ",", &save))
        v[n++] = tok;
    model_layout_add(l, v, n, "standard-large", "ubuntu12", 1, id);
    free(dup);
}

int fx_plan_err(const struct model_catalog *c, enum planner_op op, const struct model_layout *start,
                const struct model_layout *target, const char *subset, struct planner_plan **out,
                struct drv_err *err)
{
    struct planner_input *in = NULL;
    int rc = planner_input_from_model(c, NULL, start, target, &in, err);
    if (rc)
        return rc;
    const char *v[64];
    size_t n = 0;
    char *dup = subset ? xstrdup(subset) : NULL, *save = NULL;
    for (char *tok = dup ? strtok_r(dup, ",", &save) : NULL; tok && n < 64;
         tok = strtok_r(NULL, ",", &save))
        v[n++] = tok;
    struct planner_request req = planner_input_request(in, op, v, n);
    req.provider = "rackspace";
    req.providertype = "rackspace";
    rc = planner_build(&req, out, err);
    free(dup);
    planner_input_free(in);
    return rc;
}

struct planner_plan *fx_plan(const struct model_catalog *c, enum planner_op op,
                             const struct model_layout *start, const struct model_layout *target,
                             const char *subset)
{
    struct planner_plan *p = NULL;
    struct drv_err err = {0};
    int rc = fx_plan_err(c, op, start, target, subset, &p, &err);
    if (rc)
        fail_msg("plan %s: %s", planner_op_name(op), err.msg);
    return p;
}

bool fx_has(const struct planner_plan *p, const char *id)
{
    return planner_find(p, id) >= 0;
}

const struct planner_task *fx_task(const struct planner_plan *p, const char *id)
{
    long i = planner_find(p, id);
    if (i < 0)
        fail_msg("no task \"%s\"", id);
    return &p->tasks[i];
}

bool fx_direct(const struct planner_plan *p, const char *a, const char *b)
{
    const struct planner_task *t = fx_task(p, a);
    long bi = planner_find(p, b);
    for (uint32_t k = 0; k < t->n_deps; k++)
        if ((long)t->deps[k] == bi)
            return true;
    return false;
}

bool fx_waits(const struct planner_plan *p, const char *a, const char *b)
{
    long ai = planner_find(p, a), bi = planner_find(p, b);
    if (ai < 0)
        fail_msg("no task \"%s\"", a);
    if (bi < 0)
        fail_msg("no task \"%s\"", b);
    unsigned char *seen = calloc(p->n_tasks, 1);
    uint32_t *stack = malloc(p->n_tasks * sizeof(*stack));
    size_t sp = 0;
    bool found = false;
    stack[sp++] = (uint32_t)ai;
    while (sp && !found) {
        uint32_t v = stack[--sp];
        const struct planner_task *t = &p->tasks[v];
        for (uint32_t k = 0; k < t->n_deps; k++) {
            uint32_t d = t->deps[k];
            if ((long)d == bi)
                found = true;
            if (!seen[d]) {
                seen[d] = 1;
                stack[sp++] = d;
            }
        }
    }
    free(seen);
    free(stack);
    return found;
}

size_t fx_count(const struct planner_plan *p, enum planner_action a)
{
    size_t n = 0;
    for (size_t i = 0; i < p->n_tasks; i++)
        n += p->tasks[i].action == a;
    return n;
}

size_t fx_edges(const struct planner_plan *p)
{
    size_t n = 0;
    for (size_t i = 0; i < p->n_tasks; i++)
        n += p->tasks[i].n_deps;
    return n;
}

void fx_check_stages(const struct planner_plan *p)
{
    struct planner_stages *st = NULL;
    struct drv_err err = {0};
    if (planner_stages(p, &st, &err))
        fail_msg("stages: %s", err.msg);
    long *stage_of = malloc((p->n_tasks + 1) * sizeof(*stage_of));
    for (size_t i = 0; i < p->n_tasks; i++)
        stage_of[i] = -1;
    for (size_t s = 0; s < st->n_stages; s++) {
        assert_true(st->start[s + 1] > st->start[s]); /* no empty stage */
        for (size_t k = st->start[s]; k < st->start[s + 1]; k++) {
            uint32_t t = st->tasks[k];
            assert_int_equal(stage_of[t], -1);
            stage_of[t] = (long)s;
            for (size_t j = st->start[s]; j < k; j++) {
                const char *a = p->tasks[st->tasks[j]].node, *b = p->tasks[t].node;
                if (strcmp(a, b) == 0)
                    fail_msg("stage %zu holds two tasks of node %s", s, a);
            }
        }
    }
    for (size_t i = 0; i < p->n_tasks; i++)
        assert_true((stage_of[i] >= 0) == (p->tasks[i].action != PLANNER_ACT_ANCHOR));
    /* Every task is in a later stage than every real task it waits for (through anchors). */
    for (size_t i = 0; i < p->n_tasks; i++) {
        if (p->tasks[i].action == PLANNER_ACT_ANCHOR)
            continue;
        uint32_t stack[4096];
        size_t sp = 0;
        for (uint32_t k = 0; k < p->tasks[i].n_deps; k++)
            stack[sp++] = p->tasks[i].deps[k];
        while (sp) {
            uint32_t d = stack[--sp];
            if (p->tasks[d].action == PLANNER_ACT_ANCHOR) {
                for (uint32_t k = 0; k < p->tasks[d].n_deps && sp < 4096; k++)
                    stack[sp++] = p->tasks[d].deps[k];
            } else {
                assert_true(stage_of[d] < stage_of[i]);
            }
        }
    }
    free(stage_of);
    planner_stages_free(st);
}

void fx_check_roundtrip(const struct planner_plan *p)
{
    json_t *j = planner_plan_to_json(p);
    char *a = json_dumps(j, JSON_COMPACT);
    /* The direct writer gives the same bytes. */
    size_t len = 0;
    char *direct = planner_plan_to_json_text(p, &len);
    assert_string_equal(direct, a);
    assert_int_equal(len, strlen(a));
    free(direct);
    struct planner_plan *q = NULL;
    struct drv_err err = {0};
    json_t *parsed = json_loads(a, 0, NULL);
    assert_non_null(parsed);
    if (planner_plan_from_json(parsed, &q, &err))
        fail_msg("from json: %s", err.msg);
    json_t *j2 = planner_plan_to_json(q);
    char *b = json_dumps(j2, JSON_COMPACT);
    assert_string_equal(a, b);
    free(a);
    free(b);
    json_decref(j);
    json_decref(j2);
    json_decref(parsed);
    planner_plan_free(q);
}

enum planner_task_state *fx_run(const struct planner_plan *p, unsigned seed, const char *fail_id,
                                size_t resume_at)
{
    struct planner_exec *x = NULL;
    struct drv_err err = {0};
    if (planner_exec_new(p, NULL, &x, &err))
        fail_msg("exec: %s", err.msg);
    long fail = fail_id ? planner_find(p, fail_id) : -1;
    uint32_t *running = malloc((p->n_tasks + 1) * sizeof(*running));
    uint32_t *batch = malloc((p->n_tasks + 1) * sizeof(*batch));
    size_t n_running = 0, completions = 0;
    uint64_t r = 0x2545F4914F6CDD1DULL ^ seed;
    for (;;) {
        size_t got = planner_exec_next(x, batch, p->n_tasks + 1);
        const enum planner_task_state *st = planner_exec_states(x);
        for (size_t i = 0; i < got; i++) {
            const struct planner_task *t = &p->tasks[batch[i]];
            assert_int_not_equal(t->action, PLANNER_ACT_ANCHOR);
            for (uint32_t d = 0; d < t->n_deps; d++)
                assert_int_equal(st[t->deps[d]], PLANNER_TS_SUCCESS);
            running[n_running++] = batch[i];
        }
        /* Limits hold over everything in progress. */
        for (size_t a = 0; a < n_running; a++) {
            const struct planner_task *ta = &p->tasks[running[a]];
            unsigned same_group = 0;
            for (size_t b2 = 0; b2 < n_running; b2++) {
                const struct planner_task *tb = &p->tasks[running[b2]];
                if (b2 != a && strcmp(ta->node, tb->node) == 0)
                    fail_msg("node %s runs %s and %s", ta->node, ta->id, tb->id);
                if (ta->service && tb->service && strcmp(ta->service, tb->service) == 0 &&
                    ta->action == tb->action)
                    same_group++;
            }
            if (ta->strategy.type == PLANNER_STRAT_ONE_BY_ONE)
                assert_true(same_group <= 1);
            else if (ta->strategy.amount)
                assert_true(same_group <= ta->strategy.amount);
        }
        if (n_running == 0) {
            assert_true(planner_exec_finished(x));
            break;
        }
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        size_t pick = r % n_running;
        uint32_t t = running[pick];
        running[pick] = running[--n_running];
        assert_int_equal(planner_exec_done(x, t, (long)t != fail, &err), 0);
        assert_int_equal(planner_exec_done(x, t, 1, &err), DRV_EINVAL); /* not twice */
        if (++completions == resume_at) {
            /* Failover: a new helper from the states, the running tasks still running. */
            enum planner_task_state *copy = malloc((p->n_tasks + 1) * sizeof(*copy));
            memcpy(copy, planner_exec_states(x), p->n_tasks * sizeof(*copy));
            planner_exec_free(x);
            if (planner_exec_new(p, copy, &x, &err))
                fail_msg("exec resume: %s", err.msg);
            free(copy);
        }
    }
    enum planner_task_state *out = malloc((p->n_tasks + 1) * sizeof(*out));
    memcpy(out, planner_exec_states(x), p->n_tasks * sizeof(*out));
    for (size_t i = 0; i < p->n_tasks; i++)
        assert_true(out[i] == PLANNER_TS_SUCCESS || out[i] == PLANNER_TS_ERROR ||
                    out[i] == PLANNER_TS_FAILED_DEPS);
    planner_exec_free(x);
    free(running);
    free(batch);
    return out;
}
