/* Unit tests for the config file parser (src/common/config.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "config.h"

struct sample {
    char *hosts;
    char *listen;
    char *level;
    long timeout_ms;
    long max_body;
    long workers;
    int tls;
};

static const struct config_key sample_keys[] = {
    {"zookeeper.hosts", CONFIG_STRING, offsetof(struct sample, hosts), 1, NULL, 0, 0, NULL,
     "ZooKeeper connection string"},
    {"http.listen", CONFIG_ADDR, offsetof(struct sample, listen), 0, "127.0.0.1:8080", 0, 0, NULL,
     "address to listen on"},
    {"log.level", CONFIG_ENUM, offsetof(struct sample, level), 0, "info", 0, 0,
     "debug|info|warn|error", "minimum level"},
    {"zookeeper.session_timeout", CONFIG_DURATION, offsetof(struct sample, timeout_ms), 0, "10s",
     1000, 60000, NULL, "session timeout"},
    {"http.max_body", CONFIG_SIZE, offsetof(struct sample, max_body), 0, "1m", 1, 1L << 30, NULL,
     "largest request body"},
    {"worker.count", CONFIG_INT, offsetof(struct sample, workers), 0, "4", 1, 64, NULL, "workers"},
    {"http.tls", CONFIG_BOOL, offsetof(struct sample, tls), 0, "false", 0, 0, NULL, "use TLS"},
    {NULL, 0, 0, 0, NULL, 0, 0, NULL, NULL},
};

static int load(const char *text, struct sample *s, struct drv_err *e)
{
    memset(s, 0, sizeof(*s));
    drv_err_clear(e);
    return config_load_string("t.conf", text, sample_keys, s, e);
}

static void test_good_file_and_defaults(void **state)
{
    struct sample s;
    struct drv_err e;
    int rc = load("# a comment\n\n  zookeeper.hosts = 127.0.0.1:2181,127.0.0.1:2182  \n"
                  "zookeeper.session_timeout=4s\n"
                  "http.max_body = 64k\nhttp.tls = yes\nlog.level = \"debug\"\n",
                  &s, &e);
    assert_int_equal(rc, 0);
    assert_string_equal(s.hosts, "127.0.0.1:2181,127.0.0.1:2182");
    assert_string_equal(s.listen, "127.0.0.1:8080"); /* default */
    assert_string_equal(s.level, "debug");
    assert_int_equal(s.timeout_ms, 4000);
    assert_int_equal(s.max_body, 65536);
    assert_int_equal(s.workers, 4);
    assert_int_equal(s.tls, 1);
    config_free(sample_keys, &s);
    assert_null(s.hosts);
}

/* Each bad file gives DRV_EINVAL and a message that names file, line, key and reason. */
static void test_bad_files(void **state)
{
    static const struct {
        const char *text;
        const char *msg;
    } cases[] = {
        {"zookeeper.hosts = a\nzookeeper.host = b\n", "t.conf:2: unknown key \"zookeeper.host\""},
        {"zookeeper.hosts = a\nhttp.listen = localhost\n",
         "t.conf:2: key \"http.listen\": expected host:port with a port in 1..65535, got "
         "\"localhost\""},
        {"zookeeper.hosts = a\nhttp.listen = h:99999\n", "t.conf:2: key \"http.listen\""},
        {"zookeeper.hosts = a\n\nzookeeper.session_timeout = 90s\n",
         "t.conf:3: key \"zookeeper.session_timeout\": duration 90s out of range 1000..60000"},
        {"zookeeper.hosts = a\nzookeeper.session_timeout = 1d\n", /* days parse */
         "t.conf:2: key \"zookeeper.session_timeout\": duration 1d out of range 1000..60000"},
        {"zookeeper.hosts = a\nzookeeper.session_timeout = soon\n",
         "t.conf:2: key \"zookeeper.session_timeout\": expected a duration"},
        {"zookeeper.hosts = a\nlog.level = loud\n",
         "t.conf:2: key \"log.level\": expected one of debug|info|warn|error, got \"loud\""},
        {"zookeeper.hosts = a\nhttp.tls = maybe\n", "t.conf:2: key \"http.tls\": expected true"},
        {"zookeeper.hosts = a\nworker.count = 0\n", "t.conf:2: key \"worker.count\": integer 0"},
        {"zookeeper.hosts = a\nworker.count = 4x\n", "expected an integer, got \"4x\""},
        {"zookeeper.hosts = a\nzookeeper.hosts = b\n",
         "t.conf:2: key \"zookeeper.hosts\": set twice"},
        {"zookeeper.hosts\n", "t.conf:1: expected \"key = value\""},
        {"= 3\n", "t.conf:1: empty key"},
        {"zookeeper.hosts = \"open\n", "t.conf:1: key \"zookeeper.hosts\": unterminated"},
        {"http.tls = true\n", "t.conf: required key \"zookeeper.hosts\" is missing"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct sample s;
        struct drv_err e;
        int rc = load(cases[i].text, &s, &e);
        if (rc != DRV_EINVAL || strstr(e.msg, cases[i].msg) == NULL)
            fail_msg("case %zu: rc=%d msg=\"%s\", want \"%s\"", i, rc, e.msg, cases[i].msg);
        config_free(sample_keys, &s);
    }
}

static void test_missing_file(void **state)
{
    struct sample s;
    struct drv_err e;
    memset(&s, 0, sizeof(s));
    int rc = config_load("/nonexistent/drover.conf", sample_keys, &s, &e);
    assert_int_equal(rc, DRV_EIO);
    assert_non_null(strstr(e.msg, "/nonexistent/drover.conf: cannot open"));
    config_free(sample_keys, &s);
}

static void test_split_addr(void **state)
{
    char host[64];
    int port;
    assert_int_equal(config_split_addr("127.0.0.1:8080", host, sizeof(host), &port), 0);
    assert_string_equal(host, "127.0.0.1");
    assert_int_equal(port, 8080);
    assert_int_equal(config_split_addr(":80", host, sizeof(host), &port), DRV_EINVAL);
    assert_int_equal(config_split_addr("h:", host, sizeof(host), &port), DRV_EINVAL);
    assert_int_equal(config_split_addr("h:0", host, sizeof(host), &port), DRV_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_file_and_defaults),
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_split_addr),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
