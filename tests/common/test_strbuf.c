/*
 * Unit tests of strbuf: against a reference (a plain array) through random
 * adds of every kind, the invariants (NUL-terminated, never NULL) at each
 * step, detach and reuse, and the secret mark: a secret buffer's bytes are
 * never in a block handed to free(). free is wrapped (-Wl,--wrap=free, see
 * CMakeLists.txt) to look for a marker in every block freed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"

#define MARKER "S3CR3T-M4RK3R"

void __real_free(void *p);
void __wrap_free(void *p);

static size_t frees_seen, frees_with_marker;

/* Every free() of this test and of libdrover_base: count the blocks that hold MARKER. */
void __wrap_free(void *p)
{
    if (p) {
        size_t n = malloc_usable_size(p);
        frees_seen++;
        if (memmem(p, n, MARKER, strlen(MARKER)))
            frees_with_marker++;
    }
    __real_free(p);
}

static void check(const struct strbuf *sb, const char *ref, size_t n)
{
    assert_non_null(sb->buf);
    assert_int_equal(sb->len, n);
    assert_memory_equal(sb->buf, ref, n);
    assert_int_equal(sb->buf[n], '\0');
}

static void test_empty(void **state)
{
    struct strbuf a = STRBUF_INIT, b;
    strbuf_init(&b, 0);
    check(&a, "", 0);
    check(&b, "", 0);
    strbuf_reset(&a); /* must not write the shared empty string */
    strbuf_release(&a);
    check(&a, "", 0);
    size_t len = 99;
    char *s = strbuf_detach(&b, &len);
    assert_string_equal(s, "");
    assert_int_equal(len, 0);
    free(s); /* a block of its own */
    check(&b, "", 0);
    strbuf_init(&b, 1000);
    check(&b, "", 0);
    assert_true(b.alloc >= 1001);
    strbuf_release(&b);
}

static void test_random(void **state)
{
    static char ref[1 << 20];
    size_t n = 0;
    struct strbuf sb = STRBUF_INIT;
    srand(19);
    for (int step = 0; step < 20000; step++) {
        char tmp[600];
        int op = rand() % 6;
        if (op == 0) { /* bytes, NULs too */
            size_t k = (size_t)(rand() % 300);
            for (size_t i = 0; i < k; i++)
                tmp[i] = (char)(rand() % 256);
            strbuf_add(&sb, tmp, k);
            memcpy(ref + n, tmp, k);
            n += k;
        } else if (op == 1) {
            size_t k = (size_t)(rand() % 200);
            memset(tmp, 'a' + rand() % 26, k);
            tmp[k] = '\0';
            strbuf_addstr(&sb, tmp);
            memcpy(ref + n, tmp, k);
            n += k;
        } else if (op == 2) {
            int c = rand() % 256;
            strbuf_addch(&sb, c);
            ref[n++] = (char)c;
        } else if (op == 3) { /* longer than any room left, at times */
            int w = rand() % 500;
            int k = snprintf(tmp, sizeof(tmp), "%*d|%s", w, step, "x");
            strbuf_addf(&sb, "%*d|%s", w, step, "x");
            memcpy(ref + n, tmp, (size_t)k);
            n += (size_t)k;
        } else if (op == 4 && rand() % 50 == 0) {
            size_t alloc = sb.alloc;
            strbuf_reset(&sb);
            assert_int_equal(sb.alloc, alloc); /* keeps its allocation */
            n = 0;
        } else if (op == 5 && rand() % 50 == 0) {
            size_t len;
            char *s = strbuf_detach(&sb, &len);
            assert_int_equal(len, n);
            assert_memory_equal(s, ref, n);
            assert_int_equal(s[n], '\0');
            free(s);
            n = 0;
        }
        if (n > sizeof(ref) - 2048) {
            strbuf_release(&sb);
            n = 0;
        }
        check(&sb, ref, n);
        assert_true(sb.alloc == 0 || sb.len < sb.alloc);
    }
    strbuf_release(&sb);
    check(&sb, "", 0);
}

static void test_grow_and_setlen(void **state)
{
    struct strbuf sb = STRBUF_INIT;
    strbuf_setlen(&sb, 0); /* nothing to write on the shared empty string */
    strbuf_addstr(&sb, "ab");
    strbuf_grow(&sb, 100);
    assert_true(sb.alloc >= 2 + 100 + 1);
    check(&sb, "ab", 2);
    memcpy(sb.buf + sb.len, "cdef", 4);
    strbuf_setlen(&sb, sb.len + 4);
    check(&sb, "abcdef", 6);
    strbuf_setlen(&sb, 1);
    check(&sb, "a", 1);
    strbuf_release(&sb);
}

static void test_addf_grows(void **state)
{
    struct strbuf sb = STRBUF_INIT;
    strbuf_addf(&sb, "%s", "");
    check(&sb, "", 0);
    char big[5000];
    memset(big, 'z', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    strbuf_addf(&sb, "<%s>", big);
    assert_int_equal(sb.len, sizeof(big) + 1);
    assert_int_equal(sb.buf[0], '<');
    assert_int_equal(sb.buf[sb.len - 1], '>');
    strbuf_addf(&sb, "%d", 42);
    assert_string_equal(sb.buf + sb.len - 2, "42");
    strbuf_release(&sb);
}

static void test_secret_never_freed_readable(void **state)
{
    /* The wrap sees markers: a plain buffer freed with one counts. */
    struct strbuf plain = STRBUF_INIT;
    strbuf_addstr(&plain, MARKER);
    size_t before = frees_with_marker;
    strbuf_release(&plain);
    assert_int_equal(frees_with_marker, before + 1);

    /* A secret one: through many growths, a reset, a release. */
    frees_seen = frees_with_marker = 0;
    struct strbuf sb = STRBUF_INIT_SECRET;
    strbuf_addstr(&sb, MARKER);
    for (int i = 0; i < 2000; i++)
        strbuf_addf(&sb, "%d " MARKER, i);
    assert_true(frees_seen > 5); /* it grew by copy and free, never by realloc */
    size_t len = sb.len;
    char *p = sb.buf;
    strbuf_reset(&sb);
    assert_ptr_equal(sb.buf, p);
    for (size_t i = 0; i < len; i++)
        assert_int_equal(p[i], 0);
    strbuf_addstr(&sb, MARKER);
    strbuf_release(&sb);
    assert_true(sb.secret); /* stays secret for its next use */
    strbuf_addstr(&sb, MARKER MARKER);
    strbuf_release(&sb);

    struct strbuf s2;
    strbuf_init_secret(&s2, 16);
    strbuf_add(&s2, MARKER, strlen(MARKER));
    strbuf_addch(&s2, '!');
    strbuf_release(&s2);
    assert_int_equal(frees_with_marker, 0);

    /* What detach hands out is the caller's to wipe. */
    strbuf_addstr(&s2, MARKER);
    char *d = strbuf_detach(&s2, NULL);
    assert_string_equal(d, MARKER);
    explicit_bzero(d, strlen(d));
    free(d);
    assert_int_equal(frees_with_marker, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_random),
        cmocka_unit_test(test_grow_and_setlen),
        cmocka_unit_test(test_addf_grows),
        cmocka_unit_test(test_secret_never_freed_readable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
