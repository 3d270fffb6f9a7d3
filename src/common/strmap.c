/*
 * strmap: open addressing with linear probing (strmap.h). The table is a
 * power of two, kept at most 3/4 full counting tombstones; it doubles (or
 * is rebuilt at the same size when tombstones dominate).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "strmap.h"
#include "xalloc.h"

static char tomb; /* the key of a deleted slot */
#define TOMB (&tomb)

struct slot {
    char *key; /* NULL: empty, TOMB: deleted */
    void *value;
};

struct strmap {
    struct slot *s;
    size_t cap, n, used; /* used = n + tombstones */
};

static uint64_t hash(const char *k)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *k; k++)
        h = (h ^ (unsigned char)*k) * 1099511628211ULL;
    return h ^ (h >> 29);
}

struct strmap *strmap_new(void)
{
    struct strmap *m = xcalloc(1, sizeof(*m));
    m->cap = 16;
    m->s = xcalloc(m->cap, sizeof(*m->s));
    return m;
}

void strmap_free(struct strmap *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->cap; i++)
        if (m->s[i].key && m->s[i].key != TOMB)
            free(m->s[i].key);
    free(m->s);
    free(m);
}

static size_t find(const struct strmap *m, const char *key, bool *found)
{
    size_t mask = m->cap - 1, i = (size_t)hash(key) & mask, first_tomb = SIZE_MAX;
    for (;;) {
        struct slot *sl = &m->s[i];
        if (!sl->key) {
            *found = false;
            return first_tomb != SIZE_MAX ? first_tomb : i;
        }
        if (sl->key == TOMB) {
            if (first_tomb == SIZE_MAX)
                first_tomb = i;
        } else if (strcmp(sl->key, key) == 0) {
            *found = true;
            return i;
        }
        i = (i + 1) & mask;
    }
}

static void rehash(struct strmap *m, size_t cap)
{
    struct slot *old = m->s;
    size_t ocap = m->cap;
    m->s = xcalloc(cap, sizeof(*m->s));
    m->cap = cap;
    m->used = m->n;
    for (size_t i = 0; i < ocap; i++)
        if (old[i].key && old[i].key != TOMB) {
            bool found;
            size_t k = find(m, old[i].key, &found);
            m->s[k] = old[i];
        }
    free(old);
}

void *strmap_get(const struct strmap *m, const char *key)
{
    bool found;
    size_t i = find(m, key, &found);
    return found ? m->s[i].value : NULL;
}

void *strmap_put(struct strmap *m, const char *key, void *value)
{
    bool found;
    size_t i = find(m, key, &found);
    if (found) {
        void *old = m->s[i].value;
        m->s[i].value = value;
        return old;
    }
    if (m->s[i].key != TOMB)
        m->used++;
    m->s[i].key = xstrdup(key);
    m->s[i].value = value;
    m->n++;
    if (m->used * 4 >= m->cap * 3)
        rehash(m, m->n * 2 >= m->cap ? m->cap * 2 : m->cap);
    return NULL;
}

void *strmap_del(struct strmap *m, const char *key)
{
    bool found;
    size_t i = find(m, key, &found);
    if (!found)
        return NULL;
    void *v = m->s[i].value;
    free(m->s[i].key);
    m->s[i].key = TOMB;
    m->s[i].value = NULL;
    m->n--;
    return v;
}

size_t strmap_count(const struct strmap *m)
{
    return m->n;
}

bool strmap_next(const struct strmap *m, size_t *pos, const char **key, void **value)
{
    while (*pos < m->cap) {
        struct slot *sl = &m->s[(*pos)++];
        if (sl->key && sl->key != TOMB) {
            if (key)
                *key = sl->key;
            if (value)
                *value = sl->value;
            return true;
        }
    }
    return false;
}
