/*
 * guard: what the loop remembers about callers. Not public (src/api only).
 *
 * The cache of verified tokens: a request whose token was verified on this
 * node less than api.token_cache_ttl ago is authenticated on the loop,
 * without a database round trip. An entry holds the SHA-256 of the whole
 * token (so only the same secret hits), the principal, and lives until the
 * TTL or the token's own expiry, whichever is first. A revocation, a user's
 * or a tenant's deletion on this node forgets the entries at once; on
 * another node they live at most the TTL: that is the bound on how long a
 * revoked token still works anywhere (docs/api.md "Tokens").
 *
 * Threads: the loop's thread only. Memory: at most API_GUARD_MAX_TOKENS
 * entries; when full, expired ones go first, and if none has expired the
 * cache is emptied (the next requests pay one round trip each).
 */
#ifndef DROVER_API_GUARD_H
#define DROVER_API_GUARD_H

#include <stdbool.h>

#include "api_int.h"

#define API_GUARD_MAX_TOKENS 10000

struct api_guard;

struct api_guard_stats {
    unsigned long long token_hits, token_misses;
    long tokens; /* entries now */
};

/* token_ttl_ms 0: no cache (every request verifies its token in the database). */
struct api_guard *api__guard_new(long token_ttl_ms);
void api__guard_free(struct api_guard *g);
void api__guard_stats(const struct api_guard *g, struct api_guard_stats *st);

/* true with *who filled when token is cached and still valid (counts a hit or a miss). */
bool api__guard_token_get(struct api_guard *g, const char *token, struct api_principal *who);
/* Remember a token just verified; expires_ms: the token's expiry (Unix ms), 0 for none. */
void api__guard_token_put(struct api_guard *g, const char *token, const struct api_principal *who,
                          long long expires_ms);
/* Forget a token by its public id, every token of a user, or of a tenant. */
void api__guard_forget_token(struct api_guard *g, const char *token_id);
void api__guard_forget_user(struct api_guard *g, const char *user_id);
void api__guard_forget_tenant(struct api_guard *g, const char *tenant_id);

#endif
