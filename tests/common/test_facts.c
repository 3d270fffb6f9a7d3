/*
 * Unit tests of facts (src/common/facts.c): the key classes, the split of a
 * node's key-values by writer, and the merge of a result that keeps a
 * tenant's value from standing in for a provider's fact (issue 32).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "facts.h"

static void test_classes(void **state)
{
    const char *facts[] = {"provider-id",       "hostname", "ipaddresses", "ssh_host_key",
                           "ssh_host_key_type", "ssh_user", "ssh_port"};
    for (size_t i = 0; i < sizeof(facts) / sizeof(facts[0]); i++) {
        assert_true(facts_is_fact(facts[i]));
        assert_true(facts_is_reserved(facts[i]));
    }
    const char *parts[] = {"cluster", "provider", "ssh", "service", "nodes", "facts"};
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
        assert_false(facts_is_fact(parts[i]));
        assert_true(facts_is_reserved(parts[i]));
    }
    const char *free_keys[] = {"flavor",    "image",       "cpus",        "memory", "sshuser",
                               "installed", "Provider-id", "provider_id", "",       "hostnames"};
    for (size_t i = 0; i < sizeof(free_keys) / sizeof(free_keys[0]); i++)
        assert_false(facts_is_reserved(free_keys[i]));
    assert_false(facts_is_reserved(NULL));
    json_t *o = json_pack("{s:s, s:s, s:s}", "flavor", "x", "ssh_port", "22", "cluster", "y");
    assert_string_equal(facts_first_reserved(o), "ssh_port");
    json_decref(o);
    o = json_pack("{s:s}", "flavor", "x");
    assert_null(facts_first_reserved(o));
    json_decref(o);
}

static void test_split_and_drop(void **state)
{
    json_t *flat = json_pack("{s:s, s:s, s:{s:s}, s:s}", "provider-id", "ct-1", "installed", "yes",
                             "ipaddresses", "access_v4", "10.0.0.2", "service", "stray");
    json_t *f, *v;
    facts_split(flat, &f, &v);
    assert_int_equal(json_object_size(f), 2);
    assert_non_null(json_object_get(f, "ipaddresses"));
    assert_int_equal(json_object_size(v), 1);
    assert_non_null(json_object_get(v, "installed"));
    assert_int_equal(json_object_size(flat), 4); /* unchanged */
    json_decref(f);
    json_decref(v);
    char first[64];
    assert_int_equal(facts_drop_reserved(flat, first, sizeof(first)), 3);
    assert_string_equal(first, "provider-id");
    assert_int_equal(json_object_size(flat), 1);
    assert_int_equal(facts_drop_reserved(flat, first, sizeof(first)), 0);
    assert_string_equal(first, "");
    json_decref(flat);
    facts_split(NULL, &f, &v);
    assert_int_equal(json_object_size(f) + json_object_size(v), 0);
    json_decref(f);
    json_decref(v);
}

/* A provider's result writes facts; a node's own result (a script's $DROVER_RESULT) that
   sets one is refused and changes nothing; null deletes; a part is nobody's. */
static void test_merge(void **state)
{
    json_t *props = json_object();
    json_t *made = json_pack("{s:s}", "provider-id", "ct-1");
    char first[64];
    assert_int_equal(facts_merge_result(props, made, true, first, sizeof(first)), 0);
    json_t *forged =
        json_pack("{s:s, s:{s:s}, s:s, s:s}", "provider-id", "ct-victim", "ipaddresses",
                  "access_v4", "127.0.0.1", "installed", "yes", "ssh_host_key", "SHA256:x");
    assert_int_equal(facts_merge_result(props, forged, false, first, sizeof(first)), 3);
    assert_string_equal(first, "provider-id");
    assert_string_equal(json_string_value(json_object_get(props, "provider-id")), "ct-1");
    assert_null(json_object_get(props, "ipaddresses"));
    assert_string_equal(json_string_value(json_object_get(props, "installed")), "yes");
    json_t *parts = json_pack("{s:{}}", "ssh");
    assert_int_equal(facts_merge_result(props, parts, true, first, sizeof(first)), 1);
    assert_string_equal(first, "ssh");
    json_t *gone = json_pack("{s:n, s:n}", "provider-id", "installed");
    assert_int_equal(facts_merge_result(props, gone, true, first, sizeof(first)), 0);
    assert_int_equal(json_object_size(props), 0);
    assert_int_equal(facts_merge_result(props, NULL, true, first, sizeof(first)), 0);
    json_decref(props);
    json_decref(made);
    json_decref(forged);
    json_decref(parts);
    json_decref(gone);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_classes),
        cmocka_unit_test(test_split_and_drop),
        cmocka_unit_test(test_merge),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
