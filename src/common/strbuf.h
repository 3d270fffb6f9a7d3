/*
 * strbuf: a growable byte buffer, kept NUL-terminated, modelled on git's
 * strbuf.h; with a "secret" mark for buffers that hold keys or passwords.
 *
 * Invariants (for a struct made by STRBUF_INIT, STRBUF_INIT_SECRET or
 * strbuf_init and not yet released, or released since):
 *   1. buf is never NULL and buf[len] == '\0', so buf can be read as a C
 *      string at any time, even when nothing was added (the bytes may hold
 *      NULs of their own: strbuf_add takes any bytes);
 *   2. alloc == 0 means buf points at a shared, read-only empty string; any
 *      add allocates. Otherwise len < alloc and buf is the caller's to free
 *      only through strbuf_release or strbuf_detach;
 *   3. a secret buffer never leaves its bytes behind in freed memory: growing
 *      copies into a new block and wipes the old one (no realloc),
 *      strbuf_reset and strbuf_release wipe what was written (explicit_bzero,
 *      which the compiler may not remove). What strbuf_detach hands out is
 *      the caller's to wipe.
 * Other fields than buf and len are private.
 *
 * Ownership: the caller owns the struct (usually on the stack) and must call
 * strbuf_release (or strbuf_detach) when done. Strings and bytes passed in
 * are copied.
 *
 * Errors: none. Allocation failure aborts (xalloc.h), as does a size that
 * overflows size_t.
 *
 * Threads: a strbuf is a plain value; no locking, no global state.
 */
#ifndef DROVER_STRBUF_H
#define DROVER_STRBUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

struct strbuf {
    size_t alloc; /* bytes allocated at buf; 0 when buf is the shared empty string */
    size_t len;   /* bytes in use, not counting the NUL that always follows them */
    char *buf;
    bool secret; /* wipe on growth, reset and release */
};

/* The shared empty string of invariant 2: never written. */
extern char strbuf_slopbuf[];

/* (clang-format 14 would spread each over four lines) */
/* clang-format off */
#define STRBUF_INIT {.alloc = 0, .len = 0, .buf = strbuf_slopbuf, .secret = false}
#define STRBUF_INIT_SECRET {.alloc = 0, .len = 0, .buf = strbuf_slopbuf, .secret = true}
/* clang-format on */

/* An empty buffer with room for hint bytes (0: allocate on the first add). */
void strbuf_init(struct strbuf *sb, size_t hint);
/* The same, marked secret (invariant 3). */
void strbuf_init_secret(struct strbuf *sb, size_t hint);

/*
 * Free the bytes (wiped first when secret) and leave sb empty, as after
 * strbuf_init, keeping its secret mark: sb may be used again.
 */
void strbuf_release(struct strbuf *sb);

/*
 * Hand the bytes to the caller, who frees them with free() (and wipes them
 * first when sb was secret). Always a fresh allocation, "" when empty. *len
 * (when len is not NULL) gets the length. sb is left empty, as after
 * strbuf_release.
 */
char *strbuf_detach(struct strbuf *sb, size_t *len);

/* Make room for extra more bytes (and the NUL) without changing len. */
void strbuf_grow(struct strbuf *sb, size_t extra);

/* Empty the buffer, keeping its allocation (a secret one's bytes are wiped). */
void strbuf_reset(struct strbuf *sb);

/*
 * Set the length after writing at buf directly, within room made by
 * strbuf_grow: len < alloc (or len == 0), else it aborts. Writes the NUL.
 */
void strbuf_setlen(struct strbuf *sb, size_t len);

/* Append len bytes (any bytes, NULs too). */
void strbuf_add(struct strbuf *sb, const void *data, size_t len);
/* Append a C string. */
void strbuf_addstr(struct strbuf *sb, const char *s);
/* Append one byte. */
void strbuf_addch(struct strbuf *sb, int c);
/* Append printf's output. */
void strbuf_addf(struct strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void strbuf_vaddf(struct strbuf *sb, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

#endif
