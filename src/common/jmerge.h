/*
 * jmerge: RFC 7396 JSON merge patch, and the leaf-by-leaf difference of two
 * configurations, in one place (a create's config over the template's
 * defaults, `configure --merge`, the dry run's config diff).
 *
 * Merge rules (RFC 7396, docs/catalog.md "Configuration and macros"): a patch
 * that is an object is applied member by member to the target (a target that
 * is not an object counts as {}): a member whose value is null removes the
 * key, an object member is merged recursively, any other value (string,
 * number, boolean, array) replaces the target's whole value. A patch that is
 * not an object replaces the target.
 *
 * Ownership: inputs are borrowed; results are new references the caller owns.
 * Threads: no state; any thread.
 */
#ifndef DROVER_JMERGE_H
#define DROVER_JMERGE_H

#include <jansson.h>

/* target with patch applied (a new value; target and patch are not changed). target may be NULL. */
json_t *jmerge_patch(const json_t *target, const json_t *patch);

/*
 * What changed from a to b (either may be NULL: empty), leaf by leaf: an array of
 * {"key": "dotted.path", "old": v, "new": v} sorted by key; "old" is absent for a key
 * added, "new" for one removed. Objects are descended; anything else (arrays too) is
 * a leaf compared whole.
 */
json_t *jmerge_diff(const json_t *a, const json_t *b);

#endif
