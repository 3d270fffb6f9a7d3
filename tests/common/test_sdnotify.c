/*
 * test_sdnotify: the datagram reaches a socket named by $NOTIFY_SOCKET, as a
 * path and as an abstract name; no $NOTIFY_SOCKET sends nothing; a socket
 * nobody binds is an error, not a crash.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "sdnotify.h"

static int bind_dgram(const char *name, bool abstract)
{
    int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    size_t len = strlen(name);
    memcpy(sa.sun_path + (abstract ? 1 : 0), name, len);
    socklen_t salen =
        (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + (abstract ? 1 : 0));
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, salen), 0);
    return fd;
}

static void expect_datagram(int fd, const char *want)
{
    char buf[128];
    ssize_t n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
    assert_true(n > 0);
    buf[n] = '\0';
    assert_string_equal(buf, want);
}

static void test_path_socket(void **state)
{
    char path[64];
    snprintf(path, sizeof(path), "/tmp/drover-sdnotify-%d", (int)getpid());
    unlink(path);
    int fd = bind_dgram(path, false);
    setenv("NOTIFY_SOCKET", path, 1);
    assert_int_equal(sdnotify("READY=1"), 1);
    expect_datagram(fd, "READY=1");
    assert_int_equal(sdnotify("STOPPING=1"), 1);
    expect_datagram(fd, "STOPPING=1");
    close(fd);
    unlink(path);
    /* Nobody bound there any more. */
    assert_true(sdnotify("READY=1") < 0);
    unsetenv("NOTIFY_SOCKET");
    (void)state;
}

static void test_abstract_socket(void **state)
{
    char name[64], env[72];
    snprintf(name, sizeof(name), "drover-sdnotify-%d", (int)getpid());
    int fd = bind_dgram(name, true);
    snprintf(env, sizeof(env), "@%s", name);
    setenv("NOTIFY_SOCKET", env, 1);
    assert_int_equal(sdnotify("READY=1"), 1);
    expect_datagram(fd, "READY=1");
    close(fd);
    unsetenv("NOTIFY_SOCKET");
    (void)state;
}

static void test_no_socket(void **state)
{
    unsetenv("NOTIFY_SOCKET");
    assert_int_equal(sdnotify("READY=1"), 0);
    setenv("NOTIFY_SOCKET", "relative/path", 1);
    assert_int_equal(sdnotify("READY=1"), -EINVAL);
    unsetenv("NOTIFY_SOCKET");
    (void)state;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_path_socket),
        cmocka_unit_test(test_abstract_socket),
        cmocka_unit_test(test_no_socket),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
