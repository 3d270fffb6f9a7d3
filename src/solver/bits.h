/*
 * bits: a fixed-size bit set (SOLVER_MAX_SERVICES bits) for service and unit
 * sets inside the solver (internal). Bit i of a service set is the i-th
 * service in name order, so comparing sets by their lowest differing bit
 * compares their sorted name lists.
 */
#ifndef DROVER_SOLVER_BITS_H
#define DROVER_SOLVER_BITS_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define BITS_WORDS 4

struct bits {
    uint64_t w[BITS_WORDS];
};

static inline void bits_set(struct bits *b, int i)
{
    b->w[i >> 6] |= (uint64_t)1 << (i & 63);
}

static inline bool bits_has(const struct bits *b, int i)
{
    return (b->w[i >> 6] >> (i & 63)) & 1;
}

static inline struct bits bits_or(struct bits a, struct bits b)
{
    for (int k = 0; k < BITS_WORDS; k++)
        a.w[k] |= b.w[k];
    return a;
}

static inline struct bits bits_and(struct bits a, struct bits b)
{
    for (int k = 0; k < BITS_WORDS; k++)
        a.w[k] &= b.w[k];
    return a;
}

static inline struct bits bits_andnot(struct bits a, struct bits b)
{
    for (int k = 0; k < BITS_WORDS; k++)
        a.w[k] &= ~b.w[k];
    return a;
}

static inline bool bits_empty(const struct bits *a)
{
    for (int k = 0; k < BITS_WORDS; k++)
        if (a->w[k])
            return false;
    return true;
}

static inline bool bits_eq(const struct bits *a, const struct bits *b)
{
    return memcmp(a, b, sizeof(*a)) == 0;
}

/* a is a subset of b */
static inline bool bits_subset(const struct bits *a, const struct bits *b)
{
    for (int k = 0; k < BITS_WORDS; k++)
        if (a->w[k] & ~b->w[k])
            return false;
    return true;
}

static inline bool bits_intersects(const struct bits *a, const struct bits *b)
{
    for (int k = 0; k < BITS_WORDS; k++)
        if (a->w[k] & b->w[k])
            return true;
    return false;
}

static inline int bits_count(const struct bits *a)
{
    int n = 0;
    for (int k = 0; k < BITS_WORDS; k++)
        n += __builtin_popcountll(a->w[k]);
    return n;
}

/* The next set bit at or after i, or -1. */
static inline int bits_next(const struct bits *a, int i)
{
    if (i < 0)
        i = 0;
    for (int k = i >> 6; k < BITS_WORDS; k++) {
        uint64_t w = a->w[k];
        if (k == (i >> 6))
            w &= ~(uint64_t)0 << (i & 63);
        if (w)
            return k * 64 + __builtin_ctzll(w);
    }
    return -1;
}

#define BITS_FOREACH(i, b) for (int i = bits_next((b), 0); i >= 0; i = bits_next((b), i + 1))

/*
 * Order of sorted name lists of equal length: negative when a's list comes
 * first, that is when the lowest bit where they differ is a's.
 */
static inline int bits_name_cmp(const struct bits *a, const struct bits *b)
{
    for (int k = 0; k < BITS_WORDS; k++) {
        uint64_t d = a->w[k] ^ b->w[k];
        if (d) {
            uint64_t low = d & (~d + 1);
            return (a->w[k] & low) ? -1 : 1;
        }
    }
    return 0;
}

/* Total order for sorting and deduplication. */
static inline int bits_raw_cmp(const struct bits *a, const struct bits *b)
{
    for (int k = 0; k < BITS_WORDS; k++)
        if (a->w[k] != b->w[k])
            return a->w[k] < b->w[k] ? -1 : 1;
    return 0;
}

#endif
