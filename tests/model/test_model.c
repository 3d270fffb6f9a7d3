/* Unit tests for src/model: the catalogue loads, entities round-trip, bad input is named. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model.h"

static const char *catalog_dir(void)
{
    static char buf[1024];
    snprintf(buf, sizeof(buf), "%s/../shared/fixtures/coopr-templates", DROVER_SOURCE_DIR);
    return buf;
}

static void test_load_catalogue(void **state)
{
    struct model_catalog *c = model_catalog_new();
    struct drv_err err = {0};
    int rc = model_catalog_load_dir(c, catalog_dir(), &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(model_catalog_count(c, MODEL_PROVIDER), 8);
    assert_int_equal(model_catalog_count(c, MODEL_HARDWARETYPE), 5);
    assert_int_equal(model_catalog_count(c, MODEL_IMAGETYPE), 11);
    assert_int_equal(model_catalog_count(c, MODEL_SERVICE), 53);
    assert_int_equal(model_catalog_count(c, MODEL_TEMPLATE), 15);

    const struct model_service *nn = model_catalog_service(c, "hadoop-hdfs-namenode");
    assert_non_null(nn);
    assert_int_equal(nn->install_requires.n, 1);
    assert_string_equal(nn->install_requires.v[0], "base");
    assert_int_equal(nn->install_uses.n, 1);
    assert_string_equal(nn->runtime_uses.v[0], "kerberos-master");
    assert_string_equal(nn->provides.v[0], "hadoop-client");
    assert_int_equal(nn->n_actions, 5);
    const struct model_action *a = model_service_action(nn, "initialize");
    assert_non_null(a);
    assert_string_equal(a->type, "chef-solo");
    assert_non_null(json_object_get(a->fields, "run_list"));
    assert_null(model_service_action(nn, "nope"));

    const struct model_hardwaretype *hw = model_catalog_hardwaretype(c, "standard-large");
    const struct model_providermap_entry *pm = model_hardwaretype_provider(hw, "rackspace");
    assert_non_null(pm);
    assert_true(pm->has_cost);
    assert_true(pm->cost > 0.59 && pm->cost < 0.61);
    assert_null(model_hardwaretype_provider(hw, "nope"));

    const struct model_template *t = model_catalog_template(c, "hadoop-distributed", false);
    assert_non_null(t);
    assert_int_equal(t->n_mustcoexist, 2);
    assert_int_equal(t->n_cantcoexist, 3);
    assert_int_equal(t->size_min, 3);
    assert_int_equal(t->size_max, -1);
    const struct model_service_constraint *sc =
        model_template_constraint(t, "hadoop-hdfs-datanode");
    assert_non_null(sc);
    assert_int_equal(sc->qmin, 2);
    assert_int_equal(sc->qmax, -1);
    assert_string_equal(t->default_provider, "rackspace");
    assert_non_null(t->links);

    /* Every entity round-trips through JSON unchanged. */
    for (int k = 0; k < MODEL_KIND_COUNT; k++) {
        for (size_t i = 0; i < model_catalog_count(c, k); i++) {
            const char *name = *(char *const *)model_catalog_at(c, k, i);
            json_t *j = model_catalog_get_json(c, k, name);
            char *text = json_dumps(j, 0);
            rc = model_codec_roundtrip(k, text, strlen(text), &err);
            if (rc)
                fail_msg("%s %s: %s", model_kind_name(k), name, err.msg);
            free(text);
            json_decref(j);
        }
    }
    model_catalog_free(c);
}

static void expect_error(enum model_kind k, const char *text, const char *msg)
{
    struct drv_err err = {0};
    int rc = model_codec_roundtrip(k, text, strlen(text), &err);
    assert_int_equal(rc, DRV_EINVAL);
    if (!strstr(err.msg, msg))
        fail_msg("for %s: got \"%s\", want \"%s\"", text, err.msg, msg);
}

static void test_errors(void **state)
{
    expect_error(MODEL_SERVICE, "[]", "service: expected a JSON object");
    expect_error(MODEL_SERVICE, "{}", "service: field \"name\": expected a non-empty string");
    expect_error(MODEL_SERVICE, "{\"name\": 3}", "field \"name\"");
    expect_error(MODEL_SERVICE,
                 "{\"name\": \"s\", \"dependencies\": {\"install\": {\"requires\": [\"a\", 1]}}}",
                 "service \"s\": field \"dependencies.install.requires[1]\": expected a non-empty "
                 "string");
    expect_error(MODEL_SERVICE,
                 "{\"name\": \"s\", \"provisioner\": {\"actions\": {\"install\": {}}}}",
                 "field \"provisioner.actions.install.type\"");
    expect_error(MODEL_SERVICE,
                 "{\"name\": \"s\", \"provisioner\": {\"actions\": {\"install\": {\"type\": \"x\", "
                 "\"strategy\": \"fast\"}}}}",
                 "field \"provisioner.actions.install.strategy\": expected \"parallel\" or");
    expect_error(MODEL_TEMPLATE,
                 "{\"name\": \"t\", \"constraints\": {\"services\": {\"a\": {\"quantities\": "
                 "{\"min\": -1}}}}}",
                 "clustertemplate \"t\": field \"constraints.services.a.quantities.min\": expected "
                 "a non-negative integer");
    expect_error(MODEL_TEMPLATE,
                 "{\"name\": \"t\", \"constraints\": {\"layout\": {\"mustcoexist\": [\"a\"]}}}",
                 "field \"constraints.layout.mustcoexist[0]\"");
    expect_error(MODEL_TEMPLATE,
                 "{\"name\": \"t\", \"constraints\": {\"size\": {\"min\": 5, \"max\": 2}}}",
                 "field \"constraints.size.max\": expected a maximum not below the minimum");
    expect_error(MODEL_HARDWARETYPE, "{\"name\": \"h\", \"providermap\": {\"p\": 3}}",
                 "hardwaretype \"h\": field \"providermap.p\": expected an object");
    expect_error(MODEL_HARDWARETYPE,
                 "{\"name\": \"h\", \"providermap\": {\"p\": {\"cost\": \"cheap\"}}}",
                 "field \"providermap.p.cost\"");
    expect_error(MODEL_PROVIDER, "{\"name\": \"p\", \"provisioner\": []}",
                 "provider \"p\": field \"provisioner\": expected an object");
    expect_error(MODEL_PROVIDER, "{\"name\": \"p\"", "line 1");
}

static void test_strategy_and_extra(void **state)
{
    const char *text = "{\"name\": \"s\", \"x-custom\": [1], \"provisioner\": {\"actions\": {"
                       "\"install\": {\"type\": \"shell\", \"strategy\": {\"type\": \"parallel\", "
                       "\"amount\": 6}}, \"start\": {\"type\": \"shell\", \"strategy\": "
                       "\"one-by-one\"}}}}";
    json_t *j = json_loads(text, 0, NULL);
    struct model_service *s;
    assert_int_equal(model_service_from_json(j, &s, NULL), 0);
    const struct model_action *a = model_service_action(s, "install");
    assert_int_equal(a->strategy, MODEL_STRATEGY_PARALLEL);
    assert_int_equal(a->amount, 6);
    assert_int_equal(model_service_action(s, "start")->strategy, MODEL_STRATEGY_ONE_BY_ONE);
    json_t *back = model_service_to_json(s);
    assert_non_null(json_object_get(back, "x-custom"));
    json_decref(back);
    model_service_free(s);
    json_decref(j);
    assert_int_equal(model_codec_roundtrip(MODEL_SERVICE, text, strlen(text), NULL), 0);
}

static void test_catalog_put_remove(void **state)
{
    struct model_catalog *c = model_catalog_new();
    bool replaced = true;
    json_t *j = json_pack("{s:s,s:s}", "name", "b", "description", "one");
    assert_int_equal(model_catalog_put_json(c, MODEL_SERVICE, j, &replaced, NULL), 0);
    assert_false(replaced);
    json_decref(j);
    j = json_pack("{s:s}", "name", "a");
    assert_int_equal(model_catalog_put_json(c, MODEL_SERVICE, j, &replaced, NULL), 0);
    json_decref(j);
    j = json_pack("{s:s,s:s}", "name", "b", "description", "two");
    assert_int_equal(model_catalog_put_json(c, MODEL_SERVICE, j, &replaced, NULL), 0);
    assert_true(replaced);
    json_decref(j);
    assert_int_equal(model_catalog_count(c, MODEL_SERVICE), 2);
    assert_string_equal(((const struct model_service *)model_catalog_at(c, MODEL_SERVICE, 0))->name,
                        "a");
    assert_string_equal(model_catalog_service(c, "b")->description, "two");
    struct drv_err err;
    assert_int_equal(model_catalog_remove(c, MODEL_SERVICE, "zz", &err), DRV_ENOENT);
    assert_string_equal(err.msg, "no service \"zz\"");
    assert_int_equal(model_catalog_remove(c, MODEL_SERVICE, "a", NULL), 0);
    assert_null(model_catalog_service(c, "a"));
    assert_int_equal(model_kind_parse("services"), MODEL_SERVICE);
    assert_int_equal(model_kind_parse("nope"), -1);
    model_catalog_free(c);
}

static void test_load_errors(void **state)
{
    struct model_catalog *c = model_catalog_new();
    struct drv_err err;
    assert_int_equal(model_catalog_load_dir(c, "/nonexistent/dir", &err), DRV_ENOENT);
    char dir[] = "/tmp/drover-model-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof(path), "%s/services", dir);
    mkdir(path, 0700);
    snprintf(path, sizeof(path), "%s/services/bad.json", dir);
    FILE *f = fopen(path, "w");
    fputs("{\"name\": \"bad\", \"dependencies\": {\"provides\": \"x\"}}", f);
    fclose(f);
    assert_int_equal(model_catalog_load_dir(c, dir, &err), DRV_EINVAL);
    assert_string_equal(err.msg, "services/bad.json: service \"bad\": field "
                                 "\"dependencies.provides\": expected an array of strings");
    remove(path);
    snprintf(path, sizeof(path), "%s/services", dir);
    rmdir(path);
    rmdir(dir);
    model_catalog_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_catalogue),     cmocka_unit_test(test_errors),
        cmocka_unit_test(test_strategy_and_extra), cmocka_unit_test(test_catalog_put_remove),
        cmocka_unit_test(test_load_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
