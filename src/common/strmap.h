/*
 * strmap: a hash map from strings to pointers (open addressing, linear
 * probing, tombstones), for the sets a daemon keeps by name: jobs by id, run
 * records by znode name. O(1) expected per operation.
 *
 * Ownership: keys are copied; values are the caller's (the map never frees
 * them). Not thread-safe.
 */
#ifndef DROVER_STRMAP_H
#define DROVER_STRMAP_H

#include <stdbool.h>
#include <stddef.h>

struct strmap;

struct strmap *strmap_new(void);
void strmap_free(struct strmap *m);
/* The value under key, or NULL. */
void *strmap_get(const struct strmap *m, const char *key);
/* Set key to value (value must not be NULL); the old value is returned (NULL when new). */
void *strmap_put(struct strmap *m, const char *key, void *value);
/* Remove key; its value is returned (NULL when absent). */
void *strmap_del(struct strmap *m, const char *key);
size_t strmap_count(const struct strmap *m);

/*
 * Iterate: pos starts at 0; each call yields the next entry and returns
 * true, false at the end. The map must not change during an iteration,
 * except strmap_del of the entry just yielded.
 */
bool strmap_next(const struct strmap *m, size_t *pos, const char **key, void **value);

#endif
