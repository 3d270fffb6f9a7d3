/*
 * Unit tests of src/worker/task.c: the plugin's task JSON has the shape of
 * docs/plugins.md (node key-values, the job's context, the action), and a
 * plugin's exit becomes the right outcome: success only with exit 0 and
 * "status": "ok"; each kind of failure with its reason; sensitive result
 * keys sealed, or dropped without a key.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "seal.h"
#include "worker_int.h"
#include "xalloc.h"

static json_t *item(const char *name, const char *service)
{
    return json_pack(
        "{s:i, s:s, s:s, s:i, s:i, s:s, s:s, s:s, s:s, s:s, s:s?, s:s, s:{s:s}, s:{s:s},"
        " s:{s:s}, s:b, s:i}",
        "v", 1, "job", "42", "phase", "f", "idx", 17, "attempt", 2, "task", "node-3/zk/install",
        "name", name, "tenant", "acme", "cluster", "7", "node", "node-3", "service", service,
        "plugin", "shell", "fields", "script", "zk/install.sh", "props", "ipaddress", "127.77.0.3",
        "nodeinfo", "flavor", "small", "cleanup", 0, "timeout_ms", 5000);
}

/* A queue item read as the worker reads it (taskmsg_item_decode); j stays the caller's. */
static struct taskmsg_item dec(json_t *j)
{
    struct taskmsg_item it;
    struct drv_err err;
    assert_int_equal(taskmsg_item_decode(j, &it, &err), 0);
    return it;
}

static json_t *task_of(json_t *j, const json_t *ctx, const json_t *nodes)
{
    struct taskmsg_item it = dec(j);
    json_t *t = worker__task_json(&it, ctx, nodes);
    taskmsg_item_clear(&it);
    return t;
}

static void test_task_json(void **state)
{
    json_t *ctx = json_pack("{s:s, s:{s:i}, s:{s:s, s:s}}", "clustername", "zk1", "cluster", "port",
                            2181, "provider", "name", "local", "password", "enc:v1:xx");
    json_t *it = item("install", "zk");
    json_t *t = task_of(it, ctx, NULL);
    assert_int_equal(json_integer_value(json_object_get(t, "format")), 2);
    assert_string_equal(json_string_value(json_object_get(t, "taskId")), "42.f17.2");
    assert_string_equal(json_string_value(json_object_get(t, "taskName")), "install");
    assert_string_equal(json_string_value(json_object_get(t, "nodeId")), "node-3");
    assert_int_equal(json_integer_value(json_object_get(t, "attempt")), 2);
    json_t *c = json_object_get(t, "config");
    assert_string_equal(json_string_value(json_object_get(c, "ipaddress")), "127.77.0.3");
    assert_string_equal(json_string_value(json_object_get(c, "flavor")), "small");
    assert_string_equal(json_string_value(json_object_get(c, "clustername")), "zk1");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(c, "cluster"), "port")),
                     2181);
    json_t *action = json_object_get(json_object_get(c, "service"), "action");
    assert_string_equal(json_string_value(json_object_get(action, "type")), "shell");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(action, "fields"), "script")),
        "zk/install.sh");
    /* Sealed values stay sealed here: the worker opens them just before the plugin. */
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(c, "provider"), "password")),
        "enc:v1:xx");
    assert_null(json_object_get(c, "nodes"));
    json_decref(t);
    json_decref(it);
    /* A provider task: the fields go to the provider, no service. */
    it = item("create", NULL);
    json_t *nodes = json_pack("{s:{}}", "node-1");
    t = task_of(it, ctx, nodes);
    c = json_object_get(t, "config");
    assert_null(json_object_get(c, "service"));
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(c, "provider"), "script")),
        "zk/install.sh");
    assert_non_null(json_object_get(json_object_get(c, "nodes"), "node-1"));
    json_decref(nodes);
    json_decref(t);
    json_decref(it);
    json_decref(ctx);
}

static bool provider_task; /* outcome() of a provider's task (confirm), not an automator's */

static json_t *outcome(bool exited, int code, const char *out, bool timed_out,
                       const struct worker__plugin *p, const unsigned char *key, int *rc)
{
    struct worker__proc_result r = {.exited = exited,
                                    .exit_code = code,
                                    .timed_out = timed_out,
                                    .out = (char *)out,
                                    .out_len = strlen(out),
                                    .err_tail = "some stderr",
                                    .end_ms = 99};
    if (!exited && !timed_out)
        r.signal = 9;
    json_t *rec = json_object();
    json_t *j = item(provider_task ? "confirm" : "install", provider_task ? NULL : "zk");
    struct taskmsg_item it = dec(j);
    *rc = worker__task_outcome(&r, 3000, p, key, &it, rec);
    taskmsg_item_clear(&it);
    json_decref(j);
    return rec;
}

static const char *field(json_t *rec, const char *k)
{
    return json_string_value(json_object_get(rec, k));
}

static void test_outcomes(void **state)
{
    int rc;
    json_t *rec =
        outcome(true, 0, "{\"status\":\"ok\",\"result\":{\"ip\":\"1.2.3.4\"},\"message\":\"up\"}\n",
                false, NULL, NULL, &rc);
    assert_string_equal(field(rec, "status"), "ok");
    assert_string_equal(field(rec, "message"), "up");
    assert_string_equal(field(rec, "tail"), "some stderr");
    assert_string_equal(json_string_value(json_object_get(json_object_get(rec, "result"), "ip")),
                        "1.2.3.4");
    json_decref(rec);
    struct {
        bool exited;
        int code;
        const char *out;
        bool timed_out;
        const char *needle;
    } bad[] = {
        {true, 0, "", false, "plugin printed nothing"},
        {true, 0, "not json", false, "plugin printed invalid JSON"},
        {true, 0, "{\"status\":\"ok\"} trailing", false, "plugin printed invalid JSON"},
        {true, 0, "{\"result\":{}}", false, "no \"status\""},
        {true, 3, "{\"status\":\"ok\"}", false, "exit 3"},
        {true, 0, "{\"status\":\"failed\",\"message\":\"disk full\"}", false, "disk full"},
        {false, 0, "", true, "timed out after 3000 ms"},
        {false, 0, "", false, "killed by signal 9"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        rec = outcome(bad[i].exited, bad[i].code, bad[i].out, bad[i].timed_out, NULL, NULL, &rc);
        assert_string_equal(field(rec, "status"), "failed");
        if (!strstr(field(rec, "message"), bad[i].needle))
            fail_msg("case %zu: \"%s\" lacks \"%s\"", i, field(rec, "message"), bad[i].needle);
        json_decref(rec);
    }
}

static void test_sensitive_results(void **state)
{
    static const unsigned char key[32] = {7};
    struct worker__plugin p = {.fields = json_pack("{s:{s:b}}", "token", "sensitive", 1)};
    int rc;
    const char *out = "{\"status\":\"ok\",\"result\":{\"password\":\"pw\",\"token\":{\"t\":1},"
                      "\"host\":\"h\"},\"sensitive\":[\"password\"]}";
    json_t *rec = outcome(true, 0, out, false, &p, key, &rc);
    assert_int_equal(rc, 0);
    json_t *res = json_object_get(rec, "result");
    /* sealed at the task's node's place: node/<cluster id>/<node id>, the key */
    struct seal_place at = {"acme", "node", "7/node-3", "password"};
    json_t *back;
    struct drv_err err;
    assert_int_equal(
        seal_open_at(key, &at, json_string_value(json_object_get(res, "password")), &back, &err),
        0);
    assert_string_equal(json_string_value(back), "pw");
    json_decref(back);
    at.field = "token";
    assert_int_equal(
        seal_open_at(key, &at, json_string_value(json_object_get(res, "token")), &back, &err), 0);
    assert_int_equal(json_integer_value(json_object_get(back, "t")), 1);
    json_decref(back);
    assert_string_equal(json_string_value(json_object_get(res, "host")), "h");
    char *dump = json_dumps(rec, 0);
    assert_null(strstr(dump, "\"pw\""));
    free(dump);
    json_decref(rec);
    rec = outcome(true, 0, out, false, &p, NULL, &rc); /* no key: dropped, never in clear */
    assert_int_equal(rc, DRV_EPERM);
    res = json_object_get(rec, "result");
    assert_null(json_object_get(res, "password"));
    assert_null(json_object_get(res, "token"));
    assert_string_equal(json_string_value(json_object_get(res, "host")), "h");
    json_decref(rec);
    json_decref(p.fields);
}

static char *sealed_at(const unsigned char key[32], const char *kind, const char *name,
                       const char *field, const char *text)
{
    struct seal_place at = {"acme", kind, name, field};
    json_t *v = json_string(text);
    char *enc = seal_value_at(key, &at, v);
    json_decref(v);
    return enc;
}

/* The worker opens exactly the values sealed at their place (docs/security.md). */
static void test_task_open(void **state)
{
    static const unsigned char key[32] = {5};
    char *pw = sealed_at(key, "provider", "local", "provisioner.password", "prov-pw");
    char *db = sealed_at(key, "cluster", "zk1", "config.db.password", "db-pw");
    char *ssh = sealed_at(key, "cluster", "zk1", "ssh.private_key", "PEM");
    char *tok = sealed_at(key, "node", "7/node-3", "token", "node-tok");
    json_t *ctx =
        json_pack("{s:s, s:{s:{s:s}}, s:{s:s, s:s}, s:{s:s, s:s}}", "clustername", "zk1", "cluster",
                  "db", "password", db, "provider", "name", "local", "password", pw, "ssh",
                  "public_key", "ssh-ed25519 AAAA", "private_key", ssh);
    json_t *it = item("install", "zk");
    json_object_set_new(json_object_get(it, "props"), "token", json_string(tok));
    json_object_set_new(json_object_get(it, "fields"), "note", json_string(db));
    json_t *t = task_of(it, ctx, NULL);
    struct drv_err err;
    assert_int_equal(worker__task_open(key, t, &err), 0);
    json_t *c = json_object_get(t, "config");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(c, "provider"), "password")), "prov-pw");
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(c, "cluster"), "db"), "password")),
                        "db-pw");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(c, "ssh"), "private_key")), "PEM");
    assert_string_equal(json_string_value(json_object_get(c, "token")), "node-tok");
    /* an action field is not a place anything is sealed at: it stays sealed */
    json_t *fields =
        json_object_get(json_object_get(json_object_get(c, "service"), "action"), "fields");
    assert_string_equal(json_string_value(json_object_get(fields, "note")), db);
    json_decref(t);
    /* the provider's password copied into the cluster's config: refused, path named, no text */
    json_object_set_new(json_object_get(ctx, "cluster"), "admin_password", json_string(pw));
    t = task_of(it, ctx, NULL);
    assert_int_equal(worker__task_open(key, t, &err), DRV_ETLS);
    assert_non_null(strstr(err.msg, "config.admin_password"));
    assert_null(strstr(err.msg, "prov-pw"));
    json_decref(t);
    json_object_del(json_object_get(ctx, "cluster"), "admin_password");
    /* another tenant's task (its key opens nothing of acme's) */
    static const unsigned char other[32] = {6};
    t = task_of(it, ctx, NULL);
    assert_int_equal(worker__task_open(other, t, &err), DRV_ETLS);
    json_decref(t);
    json_decref(it);
    json_decref(ctx);
    free(pw);
    free(db);
    free(ssh);
    free(tok);
}

/*
 * Issue 32's attack, as a previous version's engine put it in an item: a hardware type's
 * providermap entry naming another tenant's machine and address. The plugin's config
 * keeps the provider's facts, at the top and in config.facts; the tenant's keys are gone.
 * The same from a version-2 item written by hand.
 */
static void test_task_facts(void **state)
{
    json_t *ctx = json_pack("{s:s}", "clustername", "c");
    json_t *j = item("delete", NULL);
    json_object_set_new(j, "props",
                        json_pack("{s:s, s:s}", "provider-id", "ct-own", "installed", "yes"));
    json_object_set_new(j, "nodeinfo",
                        json_pack("{s:s, s:s, s:{s:s}, s:s}", "cpus", "1", "provider-id",
                                  "ct-victim", "ipaddresses", "access_v4", "10.251.0.2",
                                  "hardwaretype", "small"));
    json_t *t = task_of(j, ctx, NULL);
    json_t *c = json_object_get(t, "config");
    assert_string_equal(json_string_value(json_object_get(c, "provider-id")), "ct-own");
    assert_null(json_object_get(c, "ipaddresses"));
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(c, "facts"), "provider-id")), "ct-own");
    assert_int_equal(json_object_size(json_object_get(c, "facts")), 1);
    assert_string_equal(json_string_value(json_object_get(c, "cpus")), "1");
    assert_string_equal(json_string_value(json_object_get(c, "installed")), "yes");
    assert_string_equal(json_string_value(json_object_get(c, "hardwaretype")), "small");
    json_decref(t);
    json_decref(j);
    j = json_pack("{s:i, s:s, s:s, s:i, s:i, s:s, s:s, s:s, s:s, s:s, s:s, s:{s:s}, s:{s:s},"
                  " s:{s:s}}",
                  "v", 2, "job", "42", "phase", "f", "idx", 1, "attempt", 1, "task", "node-1/x",
                  "name", "install", "tenant", "acme", "cluster", "7", "plugin", "shell", "node",
                  "node-1", "facts", "hostname", "10.0.0.5", "values", "hostname", "evil.example",
                  "entries", "ssh_port", "2222");
    t = task_of(j, ctx, NULL);
    c = json_object_get(t, "config");
    assert_string_equal(json_string_value(json_object_get(c, "hostname")), "10.0.0.5");
    assert_null(json_object_get(c, "ssh_port"));
    json_decref(t);
    json_decref(j);
    json_decref(ctx);
}

/*
 * Issue 32's next tries: the facts through the tenant's other parts. A cluster's config, a
 * service action's fields and (for a provider task) the provider entity's fields that name
 * provider-id, ipaddresses, ssh_port or facts stay inside their own part (config.cluster,
 * config.service.action.fields, config.provider); config's top level and config.facts keep
 * the node's provider's facts only.
 */
static void test_task_tenant_parts(void **state)
{
    json_t *evil =
        json_pack("{s:s, s:{s:s}, s:i, s:{s:s}}", "provider-id", "ct-victim", "ipaddresses",
                  "access_v4", "127.0.0.1", "ssh_port", 22, "facts", "provider-id", "ct-victim");
    json_t *ctx = json_pack("{s:s, s:O, s:{s:s}}", "clustername", "c", "cluster", evil, "provider",
                            "name", "local");
    const char *names[] = {"install", "delete"};
    for (size_t i = 0; i < 2; i++) {
        json_t *j =
            json_pack("{s:i, s:s, s:s, s:i, s:i, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:O,"
                      " s:{s:s, s:{s:s}}}",
                      "v", 2, "job", "42", "phase", "f", "idx", 1, "attempt", 1, "task", "node-1/x",
                      "name", names[i], "tenant", "acme", "cluster", "7", "plugin", "shell", "node",
                      "node-1", "service", "app", "fields", evil, "facts", "provider-id", "ct-own",
                      "ipaddresses", "access_v4", "10.251.0.5");
        json_t *t = task_of(j, ctx, NULL);
        json_t *c = json_object_get(t, "config");
        json_t *f = json_object_get(c, "facts");
        assert_string_equal(json_string_value(json_object_get(c, "provider-id")), "ct-own");
        assert_string_equal(json_string_value(json_object_get(f, "provider-id")), "ct-own");
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(f, "ipaddresses"), "access_v4")),
            "10.251.0.5");
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(c, "ipaddresses"), "access_v4")),
            "10.251.0.5");
        assert_null(json_object_get(c, "ssh_port"));
        assert_null(json_object_get(f, "ssh_port"));
        assert_null(json_object_get(f, "facts"));
        assert_int_equal(json_object_size(f), 2);
        /* each where its writer put it */
        assert_true(json_equal(json_object_get(c, "cluster"), evil));
        json_t *own =
            i == 0 ? json_object_get(json_object_get(json_object_get(c, "service"), "action"),
                                     "fields")
                   : json_object_get(c, "provider");
        assert_string_equal(json_string_value(json_object_get(own, "provider-id")), "ct-victim");
        json_decref(t);
        json_decref(j);
    }
    json_decref(ctx);
    json_decref(evil);
}

/* A node's own result (a script's $DROVER_RESULT) naming a fact fails its task, with the
   key named, and nothing of it is kept; a provider's result may. */
static void test_result_reserved(void **state)
{
    int rc;
    const char *out = "{\"status\":\"ok\",\"result\":{\"installed\":\"yes\","
                      "\"ipaddresses\":{\"access_v4\":\"127.0.0.1\"}}}";
    json_t *rec = outcome(true, 0, out, false, NULL, NULL, &rc);
    assert_int_equal(rc, DRV_EINVAL);
    assert_string_equal(field(rec, "status"), "failed");
    assert_non_null(strstr(field(rec, "message"), "result key \"ipaddresses\" is reserved"));
    assert_null(json_object_get(rec, "result"));
    json_decref(rec);
    provider_task = true;
    rec = outcome(true, 0, out, false, NULL, NULL, &rc);
    provider_task = false;
    assert_int_equal(rc, 0);
    assert_string_equal(field(rec, "status"), "ok");
    assert_non_null(json_object_get(json_object_get(rec, "result"), "ipaddresses"));
    json_decref(rec);
    /* a part of the config, from anyone's task */
    rec =
        outcome(true, 0, "{\"status\":\"ok\",\"result\":{\"cluster\":{}}}", false, NULL, NULL, &rc);
    assert_int_equal(rc, DRV_EINVAL);
    assert_string_equal(field(rec, "status"), "failed");
    json_decref(rec);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_task_json),         cmocka_unit_test(test_outcomes),
        cmocka_unit_test(test_sensitive_results), cmocka_unit_test(test_task_open),
        cmocka_unit_test(test_task_facts),        cmocka_unit_test(test_result_reserved),
        cmocka_unit_test(test_task_tenant_parts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
