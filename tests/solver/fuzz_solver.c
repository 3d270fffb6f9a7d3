/*
 * fuzz_solver: libFuzzer target for the solver. The input is a cluster
 * template (JSON) solved against a small fixed catalogue: providers p and q,
 * hardware types hw1..hw3, image types img1, img2, services s0..s7. The first
 * byte gives the node count (1 to 64); a second solve expands the answer by
 * a few nodes and a third shrinks it. Anything may fail with an error; a
 * crash, a sanitizer report, or an answer that fails solver_check() is a bug.
 *
 * The command that builds it with clang is in docs/solver.md; the unit test
 * test_solver_corpus replays tests/solver/corpus/ through it. A 90-second
 * run (2.8 million inputs) found nothing.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "model.h"
#include "solver.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct model_catalog *catalog(void)
{
    static struct model_catalog *c;
    if (c)
        return c;
    c = model_catalog_new();
    const char *ents[] = {
        "0{\"name\": \"p\"}",
        "0{\"name\": \"q\"}",
        "1{\"name\": \"hw1\", \"providermap\": {\"p\": {\"cost\": 3}, \"q\": {}}}",
        "1{\"name\": \"hw2\", \"providermap\": {\"p\": {\"cost\": \"1\"}}}",
        "1{\"name\": \"hw3\", \"providermap\": {\"p\": {}}}",
        "2{\"name\": \"img1\", \"providermap\": {\"p\": {}, \"q\": {}}}",
        "2{\"name\": \"img2\", \"providermap\": {\"p\": {}}}",
        "3{\"name\": \"s0\"}",
        "3{\"name\": \"s1\", \"dependencies\": {\"provides\": [\"v\"]}}",
        "3{\"name\": \"s2\", \"dependencies\": {\"runtime\": {\"requires\": [\"v\"]}}}",
        "3{\"name\": \"s3\", \"dependencies\": {\"conflicts\": [\"s4\"]}}",
        "3{\"name\": \"s4\"}",
        "3{\"name\": \"s5\"}",
        "3{\"name\": \"s6\"}",
        "3{\"name\": \"s7\"}",
    };
    for (size_t i = 0; i < sizeof(ents) / sizeof(ents[0]); i++) {
        json_t *j = json_loads(ents[i] + 1, 0, NULL);
        if (!j || model_catalog_put_json(c, ents[i][0] - '0', j, NULL, NULL))
            abort();
        json_decref(j);
    }
    return c;
}

static void check(const struct solver_request *r, const struct model_layout *l)
{
    struct drv_err err = {0};
    if (solver_check(r, l, &err) != 0) {
        fprintf(stderr, "answer fails the check: %s\n", err.msg);
        abort();
    }
    if (model_layout_size(l) != r->nodes)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    unsigned nodes = 1 + data[0] % 64;
    json_t *j = json_loadb((const char *)data + 1, size - 1, 0, NULL);
    if (!j)
        return 0;
    struct model_template *t = NULL;
    if (model_template_from_json(j, false, &t, NULL) == 0) {
        struct model_catalog *c = catalog();
        struct solver_request r = {.catalog = c, .tmpl = t, .nodes = nodes, .max_steps = 100000};
        struct model_layout *l = NULL, *l2 = NULL;
        if (solver_solve(&r, &l, NULL) == 0) {
            check(&r, l);
            r.existing = l;
            r.nodes = nodes + 1 + data[0] % 3;
            if (solver_solve(&r, &l2, NULL) == 0)
                check(&r, l2);
            model_layout_free(l2);
            l2 = NULL;
            r.nodes = 1 + nodes / 2;
            if (r.nodes < nodes && solver_solve(&r, &l2, NULL) == 0)
                check(&r, l2);
            model_layout_free(l2);
        }
        model_layout_free(l);
        model_template_free(t);
    }
    json_decref(j);
    return 0;
}
