/*
 * strbuf: see strbuf.h for the contract and its three invariants.
 *
 * Growth doubles (from 64 bytes), so n appends cost O(n) copies in all. A
 * secret buffer grows by malloc + copy + wipe + free rather than realloc,
 * which could leave the old block's bytes in freed memory (invariant 3).
 */
#include "strbuf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

char strbuf_slopbuf[1];

static void too_big(void)
{
    fprintf(stderr, "fatal: strbuf size overflows size_t\n");
    abort();
}

static void wipe(struct strbuf *sb)
{
    if (sb->secret && sb->alloc)
        explicit_bzero(sb->buf, sb->alloc);
}

void strbuf_init(struct strbuf *sb, size_t hint)
{
    *sb = (struct strbuf)STRBUF_INIT;
    if (hint)
        strbuf_grow(sb, hint);
}

void strbuf_init_secret(struct strbuf *sb, size_t hint)
{
    *sb = (struct strbuf)STRBUF_INIT_SECRET;
    if (hint)
        strbuf_grow(sb, hint);
}

void strbuf_release(struct strbuf *sb)
{
    bool secret = sb->secret;
    if (sb->alloc) {
        wipe(sb);
        free(sb->buf);
    }
    if (secret)
        strbuf_init_secret(sb, 0);
    else
        strbuf_init(sb, 0);
}

char *strbuf_detach(struct strbuf *sb, size_t *len)
{
    if (len)
        *len = sb->len;
    strbuf_grow(sb, 0); /* an allocation of its own, even when empty */
    char *p = sb->buf;
    bool secret = sb->secret;
    *sb = (struct strbuf)STRBUF_INIT;
    sb->secret = secret;
    return p;
}

void strbuf_grow(struct strbuf *sb, size_t extra)
{
    if (extra > SIZE_MAX - 1 - sb->len)
        too_big();
    size_t need = sb->len + extra + 1;
    if (need <= sb->alloc)
        return;
    size_t cap = sb->alloc ? sb->alloc : 64;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    if (!sb->alloc) {
        sb->buf = xmalloc(cap);
        sb->buf[0] = '\0';
    } else if (sb->secret) {
        char *p = xmalloc(cap);
        memcpy(p, sb->buf, sb->len + 1);
        wipe(sb);
        free(sb->buf);
        sb->buf = p;
    } else {
        sb->buf = xrealloc(sb->buf, cap);
    }
    sb->alloc = cap;
}

void strbuf_reset(struct strbuf *sb)
{
    if (!sb->alloc)
        return;
    if (sb->secret)
        explicit_bzero(sb->buf, sb->len);
    sb->len = 0;
    sb->buf[0] = '\0';
}

void strbuf_setlen(struct strbuf *sb, size_t len)
{
    if (!sb->alloc && !len)
        return;
    if (len >= sb->alloc) {
        fprintf(stderr, "fatal: strbuf_setlen %zu past the room of %zu\n", len, sb->alloc);
        abort();
    }
    sb->len = len;
    sb->buf[len] = '\0';
}

void strbuf_add(struct strbuf *sb, const void *data, size_t len)
{
    if (!len)
        return;
    strbuf_grow(sb, len);
    memcpy(sb->buf + sb->len, data, len);
    sb->len += len;
    sb->buf[sb->len] = '\0';
}

void strbuf_addstr(struct strbuf *sb, const char *s)
{
    strbuf_add(sb, s, strlen(s));
}

void strbuf_addch(struct strbuf *sb, int c)
{
    strbuf_grow(sb, 1);
    sb->buf[sb->len++] = (char)c;
    sb->buf[sb->len] = '\0';
}

void strbuf_addf(struct strbuf *sb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    strbuf_vaddf(sb, fmt, ap);
    va_end(ap);
}

void strbuf_vaddf(struct strbuf *sb, const char *fmt, va_list ap)
{
    va_list cp;
    va_copy(cp, ap);
    int n = vsnprintf(sb->alloc ? sb->buf + sb->len : NULL, sb->alloc ? sb->alloc - sb->len : 0,
                      fmt, cp);
    va_end(cp);
    if (n < 0) {
        fprintf(stderr, "fatal: strbuf_vaddf: bad format \"%s\"\n", fmt);
        abort();
    }
    if ((size_t)n >= (sb->alloc ? sb->alloc - sb->len : 0)) {
        strbuf_grow(sb, (size_t)n);
        vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
    }
    sb->len += (size_t)n;
}
