/*
 * promtext: Prometheus text exposition (format 0.0.4) for the daemons'
 * /metrics: family headers, label values escaped, and histograms.
 *
 * A histogram has fixed bucket bounds (seconds, ascending; +Inf is implied)
 * and is observed on one thread (the loop); a histogram vector keeps one
 * histogram per label set ("route=\"...\",code=\"200\"", already escaped),
 * written in the order of its label sets so that a scrape is stable.
 *
 * Names follow Prometheus' conventions: base units in the name (_seconds),
 * _total for counters; a family's HELP and TYPE come once, before its
 * samples, and its samples are contiguous (promtool checks all of it).
 *
 * Ownership: a vector owns its histograms and label strings.
 */
#ifndef DROVER_PROMTEXT_H
#define DROVER_PROMTEXT_H

#include <stddef.h>
#include <stdint.h>

struct evbuffer;

/* Bucket bounds for durations from 1 ms to 5 min, and for 5 ms to 10 min. */
extern const double prom_buckets_fast[];
extern const size_t prom_buckets_fast_n;
extern const double prom_buckets_slow[];
extern const size_t prom_buckets_slow_n;

struct prom_histo {
    const double *bounds;
    size_t n;
    uint64_t *counts; /* n + 1: per bucket, not cumulative; the last is +Inf */
    uint64_t count;
    double sum;
};

void prom_histo_init(struct prom_histo *h, const double *bounds, size_t n);
void prom_histo_release(struct prom_histo *h);
void prom_histo_observe(struct prom_histo *h, double v);
/* The samples of h (name_bucket, name_sum, name_count) with labels ("" for none). */
void prom_histo_write(const struct prom_histo *h, struct evbuffer *out, const char *name,
                      const char *labels);

struct prom_hvec;
struct prom_hvec *prom_hvec_new(const double *bounds, size_t n);
void prom_hvec_free(struct prom_hvec *v);
/* The histogram for labels (made empty on first use). */
struct prom_histo *prom_hvec_get(struct prom_hvec *v, const char *labels);
/* HELP, TYPE and every label set's samples; with filter (a label text such as
   "tenant=\"acme\"") only the label sets that start with it. Nothing when none. */
void prom_hvec_write(const struct prom_hvec *v, struct evbuffer *out, const char *name,
                     const char *help, const char *filter);

/* "# HELP name help\n# TYPE name type\n". */
void prom_family(struct evbuffer *out, const char *name, const char *type, const char *help);
/* s escaped as a label value (\\, \", \n) into buf (always terminated); buf. */
const char *prom_label(const char *s, char *buf, size_t n);

#endif
