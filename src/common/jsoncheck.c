/*
 * jsoncheck: one pass over the text, an explicit stack of open containers, no
 * allocation (jsoncheck.h says what is accepted).
 *
 * The scanner is a loop over one state, "a value is expected" or "a value has
 * ended": after a value, the innermost open container says what may follow
 * (',' or its closing bracket, or ':' after an object's key). Strings check
 * escapes, surrogate pairs and UTF-8 as jansson does; numbers check the RFC's
 * grammar, then jansson's ranges (an integer must fit in 64 bits, a real must
 * not overflow to infinity). Depth is counted per value as jansson counts it: a
 * value inside 2048 containers is one too deep.
 */
#include "jsoncheck.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 2048 /* jansson's JSON_PARSER_MAX_DEPTH */

struct scan {
    const unsigned char *p, *end;
};

static bool is_ws(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static void skip_ws(struct scan *s)
{
    while (s->p < s->end && is_ws(*s->p))
        s->p++;
}

static int hex4(const unsigned char *p)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned char c = p[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

/* One UTF-8 sequence of at least two bytes at s->p (its first byte >= 0x80). */
static bool utf8_seq(struct scan *s)
{
    unsigned char c = *s->p;
    size_t n;
    uint32_t v;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
        v = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        v = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        v = c & 0x07;
    } else {
        return false; /* a continuation byte, an overlong start or past U+10FFFF */
    }
    if ((size_t)(s->end - s->p) < n)
        return false;
    for (size_t i = 1; i < n; i++) {
        if ((s->p[i] & 0xC0) != 0x80)
            return false;
        v = (v << 6) | (s->p[i] & 0x3F);
    }
    if ((n == 3 && v < 0x800) || (n == 4 && v < 0x10000) || v > 0x10FFFF ||
        (v >= 0xD800 && v <= 0xDFFF))
        return false;
    s->p += n;
    return true;
}

/* A string, its opening quote at s->p. */
static bool string(struct scan *s)
{
    s->p++;
    while (s->p < s->end) {
        unsigned char c = *s->p;
        if (c == '"') {
            s->p++;
            return true;
        }
        if (c < 0x20)
            return false;
        if (c >= 0x80) {
            if (!utf8_seq(s))
                return false;
            continue;
        }
        if (c != '\\') {
            s->p++;
            continue;
        }
        if (s->end - s->p < 2)
            return false;
        c = s->p[1];
        if (c != 'u') {
            if (!strchr("\"\\/bfnrt", c) || c == 0)
                return false;
            s->p += 2;
            continue;
        }
        if (s->end - s->p < 6)
            return false;
        int v = hex4(s->p + 2);
        if (v <= 0 || (v >= 0xDC00 && v <= 0xDFFF))
            return false; /* \u0000, bad hex, or a low surrogate alone */
        s->p += 6;
        if (v >= 0xD800 && v <= 0xDBFF) {
            if (s->end - s->p < 6 || s->p[0] != '\\' || s->p[1] != 'u')
                return false;
            int lo = hex4(s->p + 2);
            if (lo < 0xDC00 || lo > 0xDFFF)
                return false;
            s->p += 6;
        }
    }
    return false;
}

static bool digit(const struct scan *s)
{
    return s->p < s->end && *s->p >= '0' && *s->p <= '9';
}

/* A number at s->p (a '-' or a digit). */
static bool number(struct scan *s)
{
    const unsigned char *start = s->p;
    bool neg = *s->p == '-', real = false;
    if (neg)
        s->p++;
    if (!digit(s))
        return false;
    if (*s->p == '0')
        s->p++;
    else
        while (digit(s))
            s->p++;
    const unsigned char *int_end = s->p;
    if (s->p < s->end && *s->p == '.') {
        real = true;
        s->p++;
        if (!digit(s))
            return false;
        while (digit(s))
            s->p++;
    }
    if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
        real = true;
        s->p++;
        if (s->p < s->end && (*s->p == '+' || *s->p == '-'))
            s->p++;
        if (!digit(s))
            return false;
        while (digit(s))
            s->p++;
    }
    size_t len = (size_t)(s->p - start);
    if (!real) {
        /* Fits in 64 bits: at most 19 digits, and 19 no more than the limit. */
        const unsigned char *d = start + neg;
        size_t nd = (size_t)(int_end - d);
        const char *lim = neg ? "9223372036854775808" : "9223372036854775807";
        return nd < 19 || (nd == 19 && memcmp(d, lim, 19) <= 0);
    }
    /* A real that strtod takes to infinity is refused (jansson: "real number overflow"). */
    char buf[128], *big = NULL, *text = buf;
    if (len >= sizeof(buf))
        text = big = malloc(len + 1);
    if (!text)
        return false;
    memcpy(text, start, len);
    text[len] = '\0';
    errno = 0;
    double v = strtod(text, NULL);
    bool ok = !(errno == ERANGE && isinf(v));
    free(big);
    return ok;
}

static bool literal(struct scan *s, const char *word, size_t n)
{
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0)
        return false;
    s->p += n;
    return true;
}

bool jsoncheck_valid(const char *text, size_t len)
{
    struct scan s = {(const unsigned char *)text, (const unsigned char *)text + len};
    char open[MAX_DEPTH + 1]; /* '[' or '{' per open container */
    size_t depth = 0;
    for (;;) {
        /* A value is expected (at depth containers). */
        skip_ws(&s);
        if (s.p == s.end || depth + 1 > MAX_DEPTH)
            return false;
        unsigned char c = *s.p;
        if (c == '[' || c == '{') {
            open[depth++] = (char)c;
            s.p++;
            skip_ws(&s);
            if (s.p < s.end && *s.p == (c == '[' ? ']' : '}')) {
                s.p++;
                depth--;
                goto ended;
            }
            if (c == '[')
                continue;
            goto key;
        }
        bool ok = c == '"'                             ? string(&s)
                  : c == '-' || (c >= '0' && c <= '9') ? number(&s)
                  : c == 't'                           ? literal(&s, "true", 4)
                  : c == 'f'                           ? literal(&s, "false", 5)
                  : c == 'n'                           ? literal(&s, "null", 4)
                                                       : false;
        if (!ok)
            return false;
    ended:
        /* A value has ended: what may follow is up to the innermost container. */
        skip_ws(&s);
        if (depth == 0)
            return s.p == s.end;
        if (s.p == s.end)
            return false;
        c = *s.p++;
        if (c == (open[depth - 1] == '[' ? ']' : '}')) {
            depth--;
            goto ended;
        }
        if (c != ',')
            return false;
        if (open[depth - 1] == '[')
            continue;
    key:
        /* An object's key, then ':'; its value is next. */
        skip_ws(&s);
        if (s.p == s.end || *s.p != '"' || !string(&s))
            return false;
        skip_ws(&s);
        if (s.p == s.end || *s.p != ':')
            return false;
        s.p++;
    }
}
