/* Unit tests for the config file parser (src/common/config.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
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
    CONFIG_KEY("zookeeper.hosts", CONFIG_STRING, struct sample, hosts, .required = 1,
               .help = "ZooKeeper connection string"),
    CONFIG_KEY("http.listen", CONFIG_ADDR, struct sample, listen, .deflt = "127.0.0.1:8080",
               .help = "address to listen on"),
    CONFIG_KEY("log.level", CONFIG_ENUM, struct sample, level, .deflt = "info",
               .choices = "debug|info|warn|error", .help = "minimum level"),
    CONFIG_KEY("zookeeper.session_timeout", CONFIG_DURATION, struct sample, timeout_ms,
               .deflt = "10s", .min = 1000, .max = 60000, .help = "session timeout"),
    CONFIG_KEY("http.max_body", CONFIG_SIZE, struct sample, max_body, .deflt = "1m", .min = 1,
               .max = 1L << 30, .help = "largest request body"),
    CONFIG_KEY("worker.count", CONFIG_INT, struct sample, workers, .deflt = "4", .min = 1,
               .max = 64, .help = "workers"),
    CONFIG_KEY("http.tls", CONFIG_BOOL, struct sample, tls, .deflt = "false", .help = "use TLS"),
    CONFIG_END,
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

/* A module's options struct with fields of every C type a key can fill. */
struct typed {
    const char *name;
    int small;
    unsigned count;
    size_t budget;
    bool on;
    bool no_rollback;
};

static const struct config_key typed_keys[] = {
    CONFIG_KEY("t.name", CONFIG_STRING, struct typed, name, .deflt = "x", .help = "name"),
    CONFIG_KEY("t.small", CONFIG_DURATION, struct typed, small, .deflt = "2s", .min = 0,
               .max = 86400000, .help = "ms"),
    CONFIG_KEY("t.count", CONFIG_INT, struct typed, count, .deflt = "3", .min = 0, .max = 100000,
               .help = "count"),
    CONFIG_KEY("t.budget", CONFIG_SIZE, struct typed, budget, .deflt = "256k", .min = 1,
               .max = 1L << 30, .help = "bytes"),
    CONFIG_KEY("t.on", CONFIG_BOOL, struct typed, on, .deflt = "false", .help = "on"),
    CONFIG_KEY_NOT("t.rollback", struct typed, no_rollback, .deflt = "true", .help = "rollback"),
    CONFIG_END,
};

static void test_typed_fields(void **state)
{
    struct typed t;
    struct drv_err e;
    memset(&t, 0, sizeof(t));
    assert_int_equal(config_load_string("t.conf", "", typed_keys, &t, &e), 0);
    assert_string_equal(t.name, "x");
    assert_int_equal(t.small, 2000);
    assert_int_equal(t.count, 3);
    assert_int_equal(t.budget, 256 * 1024);
    assert_false(t.on);
    assert_false(t.no_rollback);
    config_free(typed_keys, &t);
    assert_null(t.name);

    memset(&t, 0, sizeof(t));
    assert_int_equal(config_load_string("t.conf",
                                        "t.name = y\nt.count = 100000\nt.budget = 1g\n"
                                        "t.on = yes\nt.rollback = off\n",
                                        typed_keys, &t, &e),
                     0);
    assert_string_equal(t.name, "y");
    assert_int_equal(t.count, 100000);
    assert_int_equal(t.budget, 1L << 30);
    assert_true(t.on);
    assert_true(t.no_rollback);
    config_free(typed_keys, &t);
}

/* A table whose keys cannot fill their fields is a programming error, refused at load. */
static void test_bad_tables(void **state)
{
    struct typed t;
    struct drv_err e;
    const struct config_key too_wide[] = {
        CONFIG_KEY("t.small", CONFIG_INT, struct typed, small, .deflt = "1", .min = 0,
                   .max = 1L << 40, .help = "int"),
        CONFIG_END,
    };
    const struct config_key negative[] = {
        CONFIG_KEY("t.count", CONFIG_INT, struct typed, count, .deflt = "1", .min = -1, .max = 9,
                   .help = "unsigned"),
        CONFIG_END,
    };
    const struct config_key text_in_bool[] = {
        CONFIG_KEY("t.on", CONFIG_STRING, struct typed, on, .deflt = "x", .help = "bool"),
        CONFIG_END,
    };
    const struct config_key no_store[] = {
        {.name = "t.name", .type = CONFIG_STRING, .help = "made by hand"},
        CONFIG_END,
    };
    const struct config_key *tables[] = {too_wide, negative, text_in_bool, no_store};
    for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
        memset(&t, 0, sizeof(t));
        int rc = config_load_string("t.conf", "", tables[i], &t, &e);
        if (rc != DRV_EINVAL || strstr(e.msg, "built-in key \"t.") == NULL)
            fail_msg("table %zu: rc=%d msg=\"%s\"", i, rc, e.msg);
    }
}

/* A program's table: the modules' tables one after the other, each over its part. */
struct program {
    long workers;
    struct typed mod;
};

static void test_compose(void **state)
{
    const struct config_key own[] = {
        CONFIG_KEY("p.workers", CONFIG_INT, struct program, workers, .deflt = "2", .min = 1,
                   .max = 9, .help = "workers"),
        CONFIG_END,
    };
    const struct config_part parts[] = {
        {own, 0},
        {typed_keys, offsetof(struct program, mod)},
    };
    struct config_key *keys = config_compose(parts, 2);
    assert_string_equal(keys[0].name, "p.workers");
    assert_string_equal(keys[1].name, "t.name");
    assert_null(keys[7].name);
    struct program p;
    struct drv_err e;
    memset(&p, 0, sizeof(p));
    assert_int_equal(config_load_string("p.conf", "t.count = 7\np.workers = 5\n", keys, &p, &e), 0);
    assert_int_equal(p.workers, 5);
    assert_int_equal(p.mod.count, 7);
    assert_string_equal(p.mod.name, "x");
    config_free(keys, &p);
    assert_null(p.mod.name);
    free(keys);
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

static void test_read_secret(void **state)
{
    char path[] = "/tmp/drover-secret-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "user:pw\nsecond line\n", 20), 20);
    close(fd);
    char buf[64];
    struct drv_err e;
    assert_int_equal(config_read_secret("a.file", path, buf, sizeof(buf), &e), 0);
    assert_string_equal(buf, "user:pw");
    assert_int_equal(config_read_secret("a.file", path, buf, 5, &e), 0); /* what fits */
    assert_string_equal(buf, "user");
    assert_int_equal(chmod(path, 0640), 0);
    assert_int_equal(config_read_secret("a.file", path, buf, sizeof(buf), &e), DRV_EINVAL);
    assert_non_null(strstr(e.msg, "a.file \""));
    assert_non_null(strstr(e.msg, "readable by others (chmod 600 it)"));
    unlink(path);
    assert_int_equal(config_read_secret("a.file", path, buf, sizeof(buf), &e), DRV_EIO);
    assert_non_null(strstr(e.msg, "No such file"));
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
        cmocka_unit_test(test_typed_fields),
        cmocka_unit_test(test_bad_tables),
        cmocka_unit_test(test_compose),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_read_secret),
        cmocka_unit_test(test_split_addr),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
