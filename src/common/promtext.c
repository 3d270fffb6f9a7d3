/*
 * promtext: Prometheus text exposition helpers (promtext.h). No locking: each
 * daemon writes and observes on its loop thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "promtext.h"
#include "strmap.h"
#include "xalloc.h"

const double prom_buckets_fast[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                    0.5,   1,      2.5,   5,    10,    30,   60,  300};
const size_t prom_buckets_fast_n = sizeof(prom_buckets_fast) / sizeof(prom_buckets_fast[0]);
const double prom_buckets_slow[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
                                    2.5,   5,    10,    30,   60,  120,  300, 600};
const size_t prom_buckets_slow_n = sizeof(prom_buckets_slow) / sizeof(prom_buckets_slow[0]);

void prom_histo_init(struct prom_histo *h, const double *bounds, size_t n)
{
    h->bounds = bounds;
    h->n = n;
    h->counts = xcalloc(n + 1, sizeof(*h->counts));
    h->count = 0;
    h->sum = 0;
}

void prom_histo_release(struct prom_histo *h)
{
    free(h->counts);
    h->counts = NULL;
}

void prom_histo_observe(struct prom_histo *h, double v)
{
    if (v < 0)
        v = 0;
    size_t i = 0;
    while (i < h->n && v > h->bounds[i])
        i++;
    h->counts[i]++;
    h->count++;
    h->sum += v;
}

void prom_histo_write(const struct prom_histo *h, struct evbuffer *out, const char *name,
                      const char *labels)
{
    const char *sep = labels[0] ? "," : "";
    uint64_t cum = 0;
    for (size_t i = 0; i < h->n; i++) {
        cum += h->counts[i];
        evbuffer_add_printf(out, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, labels, sep, h->bounds[i],
                            (unsigned long long)cum);
    }
    cum += h->counts[h->n];
    evbuffer_add_printf(out, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, sep,
                        (unsigned long long)cum);
    const char *lo = labels[0] ? "{" : "", *lc = labels[0] ? "}" : "";
    evbuffer_add_printf(out, "%s_sum%s%s%s %.6f\n%s_count%s%s%s %llu\n", name, lo, labels, lc,
                        h->sum, name, lo, labels, lc, (unsigned long long)h->count);
}

struct prom_hvec {
    const double *bounds;
    size_t n;
    struct strmap *m; /* labels -> struct prom_histo */
};

struct prom_hvec *prom_hvec_new(const double *bounds, size_t n)
{
    struct prom_hvec *v = xcalloc(1, sizeof(*v));
    v->bounds = bounds;
    v->n = n;
    v->m = strmap_new();
    return v;
}

void prom_hvec_free(struct prom_hvec *v)
{
    if (!v)
        return;
    size_t pos = 0;
    const char *k;
    void *val;
    while (strmap_next(v->m, &pos, &k, &val)) {
        prom_histo_release(val);
        free(val);
    }
    strmap_free(v->m);
    free(v);
}

struct prom_histo *prom_hvec_get(struct prom_hvec *v, const char *labels)
{
    struct prom_histo *h = strmap_get(v->m, labels);
    if (!h) {
        h = xcalloc(1, sizeof(*h));
        prom_histo_init(h, v->bounds, v->n);
        strmap_put(v->m, labels, h);
    }
    return h;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void prom_hvec_write(const struct prom_hvec *v, struct evbuffer *out, const char *name,
                     const char *help, const char *filter)
{
    size_t n = strmap_count(v->m), k = 0, pos = 0;
    const char **keys = xcalloc(n + 1, sizeof(*keys));
    const char *key;
    void *val;
    size_t flen = filter ? strlen(filter) : 0;
    while (strmap_next(v->m, &pos, &key, &val))
        if (!filter || strncmp(key, filter, flen) == 0)
            keys[k++] = key;
    if (k > 0) {
        qsort(keys, k, sizeof(*keys), cmp_str);
        prom_family(out, name, "histogram", help);
        for (size_t i = 0; i < k; i++)
            prom_histo_write(strmap_get(v->m, keys[i]), out, name, keys[i]);
    }
    free(keys);
}

void prom_family(struct evbuffer *out, const char *name, const char *type, const char *help)
{
    evbuffer_add_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

const char *prom_label(const char *s, char *buf, size_t n)
{
    size_t o = 0;
    for (; s && *s && o + 3 < n; s++) {
        if (*s == '\\' || *s == '"') {
            buf[o++] = '\\';
            buf[o++] = *s;
        } else if (*s == '\n') {
            buf[o++] = '\\';
            buf[o++] = 'n';
        } else {
            buf[o++] = *s;
        }
    }
    buf[o] = '\0';
    return buf;
}
