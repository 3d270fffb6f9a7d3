/*
 * ring: a consistent hash ring of members (pure code: no I/O, no threads).
 *
 * Each member puts points * weight virtual points on a 64-bit circle, at
 * coord_hash64("<id>#<i>"). A key belongs to the first point at or after
 * coord_hash64(key), wrapping around. Equal hashes are ordered by member id,
 * so the ring depends only on the set of (id, weight), not on the order of
 * adds: every node computes the same owners from the same membership.
 *
 * When a member leaves, only the keys that fell on its points move (to the
 * next points clockwise); when one joins, it takes only the keys that now fall
 * on its points. A draining member keeps its points (so nothing else moves),
 * but lookups step past them: its keys go where they would go if it left.
 *
 * The sorted point array is rebuilt lazily on the first lookup after a change.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "coord.h"
#include "xalloc.h"

struct member {
    char *id;
    unsigned weight;
    bool draining;
};

struct point {
    uint64_t h;
    unsigned m; /* index into members */
};

struct coord_ring {
    unsigned points;
    struct member *members;
    size_t n, cap;
    struct point *pts;
    size_t npts;
    bool dirty;
};

uint64_t coord_hash64(const void *data, size_t len)
{
    /* FNV-1a, then MurmurHash3's 64-bit finaliser to spread the bits. */
    const unsigned char *p = data;
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

struct coord_ring *coord_ring_new(unsigned points)
{
    struct coord_ring *r = xcalloc(1, sizeof(*r));
    r->points = points ? points : COORD_RING_DEFAULT_POINTS;
    return r;
}

void coord_ring_remove(struct coord_ring *r, const char *id)
{
    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->members[i].id, id) == 0) {
            free(r->members[i].id);
            r->members[i] = r->members[--r->n];
            r->dirty = true;
            return;
        }
}

void coord_ring_add(struct coord_ring *r, const char *id, unsigned weight, bool draining)
{
    coord_ring_remove(r, id);
    XGROW(r->members, r->cap, r->n + 1);
    r->members[r->n++] =
        (struct member){.id = xstrdup(id), .weight = weight ? weight : 1, .draining = draining};
    r->dirty = true;
}

size_t coord_ring_size(const struct coord_ring *r)
{
    return r->n;
}

static const struct coord_ring *sort_ring;

static int cmp_point(const void *a, const void *b)
{
    const struct point *x = a, *y = b;
    if (x->h != y->h)
        return x->h < y->h ? -1 : 1;
    return strcmp(sort_ring->members[x->m].id, sort_ring->members[y->m].id);
}

static void build(struct coord_ring *r)
{
    size_t total = 0;
    for (size_t i = 0; i < r->n; i++)
        total += (size_t)r->points * r->members[i].weight;
    free(r->pts);
    r->pts = xcalloc(total ? total : 1, sizeof(*r->pts));
    r->npts = 0;
    for (size_t i = 0; i < r->n; i++) {
        size_t idlen = strlen(r->members[i].id);
        char *buf = xmalloc(idlen + 16);
        for (unsigned k = 0; k < r->points * r->members[i].weight; k++) {
            int len = snprintf(buf, idlen + 16, "%s#%u", r->members[i].id, k);
            r->pts[r->npts++] = (struct point){coord_hash64(buf, (size_t)len), (unsigned)i};
        }
        free(buf);
    }
    sort_ring = r; /* single-threaded use: see the file note */
    qsort(r->pts, r->npts, sizeof(*r->pts), cmp_point);
    sort_ring = NULL;
    r->dirty = false;
}

const char *coord_ring_lookup(struct coord_ring *r, const char *key)
{
    if (r->dirty)
        build(r);
    if (!r->npts)
        return NULL;
    uint64_t h = coord_hash64(key, strlen(key));
    size_t lo = 0, hi = r->npts;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->pts[mid].h < h)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t k = 0; k < r->npts; k++) {
        const struct member *m = &r->members[r->pts[(lo + k) % r->npts].m];
        if (!m->draining)
            return m->id;
    }
    return NULL;
}

struct coord_ring *coord_ring_from_members(const struct coord_member_info *m, size_t n,
                                           unsigned points)
{
    struct coord_ring *r = coord_ring_new(points);
    for (size_t i = 0; i < n; i++) {
        unsigned weight = 1;
        bool draining = false;
        json_t *j = json_loads(m[i].json ? m[i].json : "", 0, NULL);
        if (json_is_object(j)) {
            json_t *w = json_object_get(j, "weight");
            if (json_is_integer(w) && json_integer_value(w) >= 1 && json_integer_value(w) <= 100)
                weight = (unsigned)json_integer_value(w);
            draining = json_is_true(json_object_get(j, "draining"));
        }
        json_decref(j);
        coord_ring_add(r, m[i].id, weight, draining);
    }
    return r;
}

void coord_ring_free(struct coord_ring *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        free(r->members[i].id);
    free(r->members);
    free(r->pts);
    free(r);
}
