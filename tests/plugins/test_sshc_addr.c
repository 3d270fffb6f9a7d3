/*
 * Unit tests of sshc_node_address (plugins/lib/sshc.c): the ssh automator and
 * ssh-pool reach nodes only, never the worker's own host (issue 32): 127.0.0.1,
 * ::1, unspecified addresses, their IPv4-mapped forms, names, and every
 * address of this host's interfaces are refused with the address named; so is
 * the rest of 127.0.0.0/8 where nothing listens on exactly that address and
 * port (the host's wildcard sshd answers there: 127.0.0.2:22 was allowed before
 * the fix); a loopback node's address where its sshd listens, and a remote
 * one, are allowed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sshc.h"

static void test_refused(void **state)
{
    const char *bad[] = {
        "127.0.0.1",        "::1",    "0.0.0.0",    "::",         "::ffff:127.0.0.1", "localhost",
        "node.example",     "",       "127.0.0.1 ", "10.0.0.1/8", "127.0.0.2",        "127.77.0.3",
        "::ffff:127.0.0.2", "0.1.2.3"};
    struct drv_err err;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (sshc_node_address(bad[i], 22, &err) != DRV_EPERM)
            fail_msg("\"%s\" was allowed", bad[i]);
        assert_non_null(strstr(err.msg, "refusing to connect to"));
    }
    assert_int_equal(sshc_node_address(NULL, 22, &err), DRV_EPERM);
    assert_int_equal(sshc_node_address("127.0.0.1", 22, &err), DRV_EPERM);
    assert_non_null(strstr(err.msg, "an address of this host"));
}

/* Every address this host's interfaces have is refused. */
static void test_own_interfaces(void **state)
{
    struct ifaddrs *ifs;
    assert_int_equal(getifaddrs(&ifs), 0);
    size_t n = 0;
    for (struct ifaddrs *i = ifs; i; i = i->ifa_next) {
        char a[INET6_ADDRSTRLEN];
        if (!i->ifa_addr)
            continue;
        if (i->ifa_addr->sa_family == AF_INET)
            inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, a, sizeof(a));
        else if (i->ifa_addr->sa_family == AF_INET6 &&
                 !IN6_IS_ADDR_LINKLOCAL(&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr))
            inet_ntop(AF_INET6, &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, a, sizeof(a));
        else
            continue;
        struct drv_err err;
        if (sshc_node_address(a, 22, &err) != DRV_EPERM)
            fail_msg("this host's %s was allowed", a);
        n++;
    }
    freeifaddrs(ifs);
    assert_true(n >= 1); /* lo's 127.0.0.1 at least */
}

static void test_allowed(void **state)
{
    const char *good[] = {"192.0.2.1", "10.251.0.5", "2001:db8::5"};
    struct drv_err err;
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        if (sshc_node_address(good[i], 22, &err) != 0)
            fail_msg("\"%s\" was refused: %s", good[i], err.msg);
}

/* A loopback address other than 127.0.0.1 is a node's where a socket listens on exactly
   it and the port (a loopback node's sshd), and only on that port. */
static void test_loopback_node(void **state)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(s >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    inet_pton(AF_INET, "127.77.0.3", &a.sin_addr);
    assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
    struct drv_err err;
    socklen_t len = sizeof(a);
    assert_int_equal(getsockname(s, (struct sockaddr *)&a, &len), 0);
    int port = ntohs(a.sin_port);
    /* bound, not listening: no node there yet */
    assert_int_equal(sshc_node_address("127.77.0.3", port, &err), DRV_EPERM);
    assert_int_equal(listen(s, 1), 0);
    if (sshc_node_address("127.77.0.3", port, &err) != 0)
        fail_msg("a listener on 127.77.0.3:%d was refused: %s", port, err.msg);
    assert_int_equal(sshc_node_address("::ffff:127.77.0.3", port, &err), 0);
    assert_int_equal(sshc_node_address("127.77.0.3", port == 65535 ? 1 : port + 1, &err),
                     DRV_EPERM);
    assert_non_null(strstr(err.msg, "no node listens on exactly 127.77.0.3:"));
    assert_int_equal(sshc_node_address("127.77.0.4", port, &err), DRV_EPERM);
    close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_own_interfaces),
        cmocka_unit_test(test_allowed),
        cmocka_unit_test(test_loopback_node),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
