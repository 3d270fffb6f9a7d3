/*
 * Unit tests of hex: known values, random round trips, and what decoding
 * refuses (odd lengths, signs, spaces, "0x", too many bytes), which
 * sscanf("%2x") used to let through in api/auth.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "hex.h"

static void test_known(void **state)
{
    char out[64];
    hex_encode("", 0, out);
    assert_string_equal(out, "");
    static const unsigned char b[] = {0x00, 0x01, 0x7f, 0x80, 0xab, 0xff};
    hex_encode(b, sizeof(b), out);
    assert_string_equal(out, "00017f80abff");
    unsigned char back[8];
    size_t n = 99;
    assert_int_equal(hex_decode("00017f80abff", back, sizeof(back), &n), 0);
    assert_int_equal(n, sizeof(b));
    assert_memory_equal(back, b, sizeof(b));
    assert_int_equal(hex_decode("00017F80ABFF", back, sizeof(back), &n), 0); /* either case */
    assert_memory_equal(back, b, sizeof(b));
    assert_int_equal(hex_decode("", back, 0, &n), 0);
    assert_int_equal(n, 0);
}

static void test_round_trip(void **state)
{
    srand(19);
    for (int round = 0; round < 2000; round++) {
        unsigned char b[64], back[64];
        size_t len = (size_t)(rand() % 65);
        for (size_t i = 0; i < len; i++)
            b[i] = (unsigned char)(rand() % 256);
        char text[129];
        hex_encode(b, len, text);
        assert_int_equal(strlen(text), 2 * len);
        size_t n = 0;
        assert_int_equal(hex_decode(text, back, len, &n), 0);
        assert_int_equal(n, len);
        assert_memory_equal(back, b, len);
    }
}

static void test_refused(void **state)
{
    static const char *const bad[] = {
        "0", "abc", "0g", "g0", "+1", "-1", " f", "f ", "0x12", "1\n", "zz", "é0", "..", "1 2",
    };
    unsigned char out[16];
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        size_t n = 77;
        assert_int_equal(hex_decode(bad[i], out, sizeof(out), &n), DRV_EINVAL);
        assert_int_equal(n, 77); /* unchanged */
    }
    size_t n = 77;
    assert_int_equal(hex_decode("000102", out, 2, &n), DRV_EINVAL); /* 3 bytes, room for 2 */
    assert_int_equal(hex_decode("0001", out, 2, &n), 0);
    assert_int_equal(n, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
