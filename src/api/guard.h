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
 * Admission: how many requests each user and each tenant has in progress
 * (from the moment its caller is known to its reply), all of them and the
 * heavy ones (solve, plan) apart: a heavy slot is held from admission to
 * the end of the solving or planning, not through the write that follows
 * (api__guard_release_heavy). Beyond max_per_user or max_per_tenant a
 * request is refused (429); a heavy one beyond heavy_per_user or its
 * tenant's heavy quota (who->heavy, set by the superadmin, else
 * heavy_per_tenant; never above heavy_max) waits for a slot, at most heavy_wait_per_tenant of a
 * tenant at a time, and is refused beyond that. The caller keeps the queue
 * of waiting calls (api.c); the guard counts.
 *
 * Threads: the loop's thread only. Memory: at most API_GUARD_MAX_TOKENS
 * token entries; when full, expired ones go first, and if none has expired
 * the cache is emptied (the next requests pay one round trip each). The
 * counters hold an entry per user and tenant with something in progress.
 */
#ifndef DROVER_API_GUARD_H
#define DROVER_API_GUARD_H

#include <stdbool.h>

#include "api_int.h"

#define API_GUARD_MAX_TOKENS 10000

struct api_guard;

struct api_guard_limits {
    long token_ttl_ms; /* 0: no cache (every request verifies its token in the database) */
    long per_user, per_tenant;
    long heavy_per_user, heavy_per_tenant, heavy_wait_per_tenant;
    long heavy_max; /* a tenant's own heavy quota (who->heavy) is cut to this (heavy threads - 1) */
};

struct api_guard_stats {
    unsigned long long token_hits, token_misses;
    long tokens;                             /* entries now */
    long heavy_running, heavy_waiting;       /* admitted heavy calls, and waiting ones */
    unsigned long long refused, heavy_waits; /* 429s; heavy calls that had to wait */
};

struct api_guard *api__guard_new(const struct api_guard_limits *l);
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

enum api_admit { API_ADMIT_NOW, API_ADMIT_WAIT, API_ADMIT_REFUSE };
/*
 * Take a slot for who's request (heavy: it solves or plans). NOW: taken;
 * WAIT (heavy only): counted as waiting, call api__guard_admit_waiting when
 * a slot may be free; REFUSE: nothing taken, answer 429.
 */
enum api_admit api__guard_admit(struct api_guard *g, const struct api_principal *who, bool heavy);
/* For a waiting heavy call: true when it took its slot now (no longer waiting). */
bool api__guard_admit_waiting(struct api_guard *g, const struct api_principal *who);
/* Give back the slot api__guard_admit (or _admit_waiting) took. */
void api__guard_release(struct api_guard *g, const struct api_principal *who, bool heavy);
/*
 * A heavy call's solving or planning is over (its write, if any, is still to come): give
 * back its heavy slot only; it keeps its request slot, released by api__guard_release(g,
 * who, false) at its reply.
 */
void api__guard_release_heavy(struct api_guard *g, const struct api_principal *who);
/* A waiting call leaves without its slot (it is answered some other way). */
void api__guard_wait_abandon(struct api_guard *g, const struct api_principal *who);

#endif
