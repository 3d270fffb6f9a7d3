/*
 * xalloc: allocation that cannot fail.
 *
 * Allocation failure is fatal (the process aborts with a message), so callers
 * never check for NULL. Everything returned is owned by the caller and freed
 * with free(). FREE_NULL frees and clears a pointer in one step.
 */
#ifndef DROVER_XALLOC_H
#define DROVER_XALLOC_H

#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>

void *xmalloc(size_t n);
void *xcalloc(size_t count, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* printf into a new string. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *xvasprintf(const char *fmt, va_list ap);

/* Grow *arr (element size sz) so that it holds at least need elements. */
#define XGROW(arr, cap, need)                                                                      \
    do {                                                                                           \
        if ((size_t)(need) > (size_t)(cap)) {                                                      \
            size_t xg_n_ = (cap) ? (size_t)(cap)*2 : 8;                                            \
            while (xg_n_ < (size_t)(need))                                                         \
                xg_n_ *= 2;                                                                        \
            (arr) = xrealloc((arr), xg_n_ * sizeof(*(arr)));                                       \
            (cap) = xg_n_;                                                                         \
        }                                                                                          \
    } while (0)

#define FREE_NULL(p)                                                                               \
    do {                                                                                           \
        free(p);                                                                                   \
        (p) = NULL;                                                                                \
    } while (0)

#endif
