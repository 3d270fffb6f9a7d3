/*
 * Unit tests of jsoncheck: every verdict is compared with jansson's
 * (json_loadb with JSON_DECODE_ANY), the reference jsoncheck.h promises to
 * match: hand-picked edge cases (escapes, surrogates, UTF-8, number ranges,
 * depth), then 200,000 random mutations of valid documents.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsoncheck.h"

static bool jansson_ok(const char *t, size_t n)
{
    json_t *j = json_loadb(t, n, JSON_DECODE_ANY, NULL);
    json_decref(j);
    return j != NULL;
}

/* The verdict, and that it is jansson's (for a text without NUL bytes). */
static bool check(const char *t, size_t n)
{
    if (memchr(t, 0, n))
        return jsoncheck_valid(t, n);
    bool ours = jsoncheck_valid(t, n);
    if (ours != jansson_ok(t, n))
        fail_msg("jsoncheck says %s, jansson the opposite, for [%.*s]", ours ? "valid" : "invalid",
                 (int)n, t);
    return ours;
}

#define OK(t) assert_true(check(t, strlen(t)))
#define BAD(t) assert_false(check(t, strlen(t)))

static void test_cases(void **state)
{
    (void)state;
    OK("{}");
    OK(" [ ] ");
    OK("0");
    OK("-0");
    OK("\"\"");
    OK("true");
    OK("null");
    OK("{\"a\":[1,2.5e3,-0.1E-2,true,false,null,{\"b\":\"c\"}]}");
    OK("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\uD834\\uDD1E\"");
    OK("\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"");
    OK("9223372036854775807");
    OK("-9223372036854775808");
    OK("1e308");
    OK("1e-400"); /* underflows to 0: jansson takes it */
    BAD("");
    BAD("   ");
    BAD("{");
    BAD("[1,]");
    BAD("{\"a\":1,}");
    BAD("{\"a\" 1}");
    BAD("{1:2}");
    BAD("[1 2]");
    BAD("01");
    BAD("1.");
    BAD(".5");
    BAD("1e");
    BAD("-");
    BAD("+1");
    BAD("tru");
    BAD("truex");
    BAD("nul");
    BAD("{} {}");
    BAD("\"abc");
    BAD("\"a\tb\"");
    BAD("\"\\x\"");
    BAD("\"\\u00\"");
    BAD("\"\\u0000\"");
    BAD("\"\\uD834\"");
    BAD("\"\\uDD1E\"");
    BAD("\"\\uD834\\u0041\"");
    BAD("\"\xc0\xaf\"");         /* overlong */
    BAD("\"\xed\xa0\x80\"");     /* a surrogate in UTF-8 */
    BAD("\"\xf4\x90\x80\x80\""); /* past U+10FFFF */
    BAD("\"\xe2\x82\"");         /* cut short */
    BAD("\"\x80\"");
    BAD("9223372036854775808");
    BAD("-9223372036854775809");
    BAD("12345678901234567890");
    BAD("1e309");
    BAD("-1e400");
    /* A NUL byte is refused anywhere, also where jansson skips it. */
    assert_false(jsoncheck_valid("[1]\0", 4));
    assert_false(jsoncheck_valid("\"a\0b\"", 5));
    assert_false(jsoncheck_valid("[42\0]", 5));
    assert_true(jansson_ok("[42\0]", 5));
}

/* A value inside 2048 containers is one too deep, in both. */
static void test_depth(void **state)
{
    (void)state;
    for (int n = 2045; n <= 2050; n++) {
        char *t = malloc(2 * (size_t)n + 2);
        for (int i = 0; i < n; i++)
            t[i] = '[', t[n + 1 + i] = ']';
        t[n] = '1';
        check(t, 2 * (size_t)n + 1);
        t[n] = ' ';
        check(t, 2 * (size_t)n + 1);
        free(t);
    }
}

/* Random edits of valid documents: replaced, inserted and deleted bytes. */
static void test_mutations(void **state)
{
    (void)state;
    static const char *seeds[] = {
        "{\"job\":\"17\",\"phase\":\"f\",\"idx\":42,\"fields\":{\"a\":[1,-2.5e-3,true,null]}}",
        "[\"\\u00e9\\uD834\\uDD1E\",\"\xc3\xa9\",{\"\":{}},[[[]]],-0,9223372036854775807]",
        "\"x\\\\y\\\"z\"",
    };
    static const char alphabet[] =
        "{}[],:\"\\/-+.eE0123456789tfnrulsaubxD \t\n\x01\x80\xc3\xa9\xed";
    srand(11);
    size_t valid = 0;
    for (int k = 0; k < 200000; k++) {
        char buf[256];
        const char *seed = seeds[k % 3];
        size_t n = strlen(seed);
        memcpy(buf, seed, n);
        for (int e = 0, edits = 1 + rand() % 3; e < edits; e++) {
            size_t at = (size_t)rand() % (n + 1);
            char c = alphabet[rand() % (int)(sizeof(alphabet) - 1)];
            int op = rand() % 3;
            if (op == 0 && at < n) {
                buf[at] = c;
            } else if (op == 1 && n < sizeof(buf) - 1) {
                memmove(buf + at + 1, buf + at, n - at);
                buf[at] = c;
                n++;
            } else if (at < n) {
                memmove(buf + at, buf + at + 1, n - at - 1);
                n--;
            }
        }
        valid += check(buf, n);
    }
    /* Both verdicts were exercised. */
    assert_true(valid > 1000 && valid < 199000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases),
        cmocka_unit_test(test_depth),
        cmocka_unit_test(test_mutations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
