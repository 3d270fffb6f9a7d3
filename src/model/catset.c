/*
 * catset: a tenant's catalogue at one version, parsed once and shared, and the small cache
 * of them that droverd's API and engine share (model.h has the contract; docs/schema.md,
 * version 9, says what a version is).
 *
 * A catset is frozen when made: its rows (the entities as stored) and the catalogue parsed
 * from them are never changed after model_catset_new, so any number of threads may read
 * them at once; only the reference count and the "pinned" flag move, atomically. The
 * cache is a short array kept in use order (most recent first) under one mutex: it holds
 * a few catalogues (one per tenant that creates, in practice), so a linear search is the
 * fastest there is, and the lock is held for that search only, never while a catalogue is
 * parsed or read from PostgreSQL.
 *
 * Any thread.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "xalloc.h"

struct model_catset {
    atomic_int refs;
    atomic_bool pinned;
    char tenant[24];
    long long version;
    json_t *rows;
    struct model_catalog *cat;
    size_t refused;
};

struct model_catset *model_catset_new(const char *tenant_id, long long version, json_t *rows,
                                      bool pinned)
{
    struct model_catset *s = xcalloc(1, sizeof(*s));
    atomic_init(&s->refs, 1);
    atomic_init(&s->pinned, pinned);
    snprintf(s->tenant, sizeof(s->tenant), "%s", tenant_id ? tenant_id : "");
    s->version = version;
    s->rows = json_is_array(rows) ? rows : (json_decref(rows), json_array());
    s->cat = model_catalog_new();
    size_t i;
    json_t *r;
    json_array_foreach(s->rows, i, r)
    {
        int k = model_kind_parse(json_string_value(json_object_get(r, "kind")));
        struct drv_err e;
        /* A row the codec refuses is left out (it was refused when stored too). */
        if (k < 0 || model_catalog_put_json(s->cat, (enum model_kind)k, json_object_get(r, "body"),
                                            NULL, &e) != 0)
            s->refused++;
    }
    return s;
}

struct model_catset *model_catset_ref(struct model_catset *s)
{
    if (s)
        atomic_fetch_add(&s->refs, 1);
    return s;
}

void model_catset_unref(struct model_catset *s)
{
    if (!s || atomic_fetch_sub(&s->refs, 1) != 1)
        return;
    model_catalog_free(s->cat);
    json_decref(s->rows);
    free(s);
}

const struct model_catalog *model_catset_catalog(const struct model_catset *s)
{
    return s->cat;
}

const json_t *model_catset_rows(const struct model_catset *s)
{
    return s->rows;
}

long long model_catset_version(const struct model_catset *s)
{
    return s->version;
}

const char *model_catset_tenant(const struct model_catset *s)
{
    return s->tenant;
}

size_t model_catset_refused(const struct model_catset *s)
{
    return s->refused;
}

bool model_catset_pinned(const struct model_catset *s)
{
    return atomic_load(&((struct model_catset *)s)->pinned);
}

void model_catset_set_pinned(struct model_catset *s)
{
    atomic_store(&s->pinned, true);
}

/* ---- the cache ------------------------------------------------------------------------- */

struct model_catcache {
    pthread_mutex_t mu;
    struct model_catset **v; /* most recently used first; one reference each */
    size_t n, cap;
    unsigned long long hits, misses;
};

struct model_catcache *model_catcache_new(size_t cap)
{
    struct model_catcache *c = xcalloc(1, sizeof(*c));
    pthread_mutex_init(&c->mu, NULL);
    c->cap = cap ? cap : 1;
    c->v = xcalloc(c->cap, sizeof(*c->v));
    return c;
}

void model_catcache_free(struct model_catcache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++)
        model_catset_unref(c->v[i]);
    free(c->v);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

struct model_catset *model_catcache_get(struct model_catcache *c, const char *tenant_id,
                                        long long version)
{
    if (!c)
        return NULL;
    struct model_catset *found = NULL;
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < c->n && !found; i++) {
        struct model_catset *s = c->v[i];
        if (s->version != version || strcmp(s->tenant, tenant_id) != 0)
            continue;
        found = model_catset_ref(s);
        memmove(&c->v[1], &c->v[0], i * sizeof(*c->v)); /* to the front */
        c->v[0] = s;
    }
    if (found)
        c->hits++;
    else
        c->misses++;
    pthread_mutex_unlock(&c->mu);
    return found;
}

void model_catcache_put(struct model_catcache *c, struct model_catset *s)
{
    if (!c || !s)
        return;
    struct model_catset *out = NULL;
    pthread_mutex_lock(&c->mu);
    size_t i = 0;
    while (i < c->n && (c->v[i]->version != s->version || strcmp(c->v[i]->tenant, s->tenant)))
        i++;
    if (i < c->n) { /* another thread parsed the same version meanwhile: keep the newer */
        out = c->v[i];
        if (model_catset_pinned(out))
            model_catset_set_pinned(s);
    } else if (c->n == c->cap) {
        i = c->n - 1; /* the least recently used goes */
        out = c->v[i];
    } else {
        i = c->n++;
    }
    memmove(&c->v[1], &c->v[0], i * sizeof(*c->v));
    c->v[0] = model_catset_ref(s);
    pthread_mutex_unlock(&c->mu);
    model_catset_unref(out);
}

void model_catcache_stats(struct model_catcache *c, unsigned long long *hits,
                          unsigned long long *misses)
{
    pthread_mutex_lock(&c->mu);
    *hits = c->hits;
    *misses = c->misses;
    pthread_mutex_unlock(&c->mu);
}
