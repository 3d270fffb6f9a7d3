/*
 * Unit tests of sshc_node_address (plugins/lib/sshc.c): the ssh automator and
 * ssh-pool reach nodes only, never the worker's own host (issue 32): 127.0.0.1,
 * ::1, unspecified addresses, their IPv4-mapped forms, names, and every
 * address of this host's interfaces are refused with the address named; a
 * loopback node's address (127.77.0.3) and a remote one are allowed.
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

#include "sshc.h"

static void test_refused(void **state)
{
    const char *bad[] = {"127.0.0.1", "::1",          "0.0.0.0", "::",         "::ffff:127.0.0.1",
                         "localhost", "node.example", "",        "127.0.0.1 ", "10.0.0.1/8"};
    struct drv_err err;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (sshc_node_address(bad[i], &err) != DRV_EPERM)
            fail_msg("\"%s\" was allowed", bad[i]);
        assert_non_null(strstr(err.msg, "refusing to connect to"));
    }
    assert_int_equal(sshc_node_address(NULL, &err), DRV_EPERM);
    assert_int_equal(sshc_node_address("127.0.0.1", &err), DRV_EPERM);
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
        if (sshc_node_address(a, &err) != DRV_EPERM)
            fail_msg("this host's %s was allowed", a);
        n++;
    }
    freeifaddrs(ifs);
    assert_true(n >= 1); /* lo's 127.0.0.1 at least */
}

static void test_allowed(void **state)
{
    const char *good[] = {"127.77.0.3", "127.0.0.2", "192.0.2.1", "10.251.0.5", "2001:db8::5"};
    struct drv_err err;
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        if (sshc_node_address(good[i], &err) != 0)
            fail_msg("\"%s\" was refused: %s", good[i], err.msg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_own_interfaces),
        cmocka_unit_test(test_allowed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
