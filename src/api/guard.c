/*
 * guard: see guard.h.
 *
 * The cache is a jansson object keyed by the token's public id (its 16 hex
 * digits); each value is {"h": hex SHA-256 of the token, "until": monotonic
 * ms, "role", "user_id", "tenant_id", "user", "tenant"}. jansson's objects
 * are hash tables, which is all this needs; the loop is the only thread.
 */
#include "guard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "clock.h"
#include "hex.h"
#include "xalloc.h"

struct api_guard {
    long ttl_ms;
    struct api_guard_limits l;
    json_t *tokens;
    json_t *counts;
    struct api_guard_stats st;
};

static void sha_hex(const char *text, char out[65])
{
    unsigned char md[32];
    unsigned int n = 0;
    EVP_Digest(text, strlen(text), md, &n, EVP_sha256(), NULL);
    hex_encode(md, 32, out);
}

/* "drv_<16 hex>_..." -> the 16 hex digits, or false. */
static bool token_id(const char *token, char id[17])
{
    if (strncmp(token, "drv_", 4) != 0 || strlen(token) < 21 || token[20] != '_')
        return false;
    memcpy(id, token + 4, 16);
    id[16] = '\0';
    return true;
}

struct api_guard *api__guard_new(const struct api_guard_limits *l)
{
    struct api_guard *g = xcalloc(1, sizeof(*g));
    g->l = *l;
    g->ttl_ms = l->token_ttl_ms > 0 ? l->token_ttl_ms : 0;
    g->tokens = json_object();
    g->counts = json_object();
    return g;
}

void api__guard_free(struct api_guard *g)
{
    if (!g)
        return;
    json_decref(g->tokens);
    json_decref(g->counts);
    free(g);
}

void api__guard_stats(const struct api_guard *g, struct api_guard_stats *st)
{
    *st = g->st;
    st->tokens = (long)json_object_size(g->tokens);
}

bool api__guard_token_get(struct api_guard *g, const char *token, struct api_principal *who)
{
    char id[17], h[65];
    json_t *e = g->ttl_ms && token_id(token, id) ? json_object_get(g->tokens, id) : NULL;
    if (!e) {
        g->st.token_misses++;
        return false;
    }
    sha_hex(token, h);
    const char *want = json_string_value(json_object_get(e, "h"));
    if (json_integer_value(json_object_get(e, "until")) <= clock_mono_ms() || !want ||
        CRYPTO_memcmp(want, h, 64) != 0) {
        if (json_integer_value(json_object_get(e, "until")) <= clock_mono_ms())
            json_object_del(g->tokens, id);
        g->st.token_misses++;
        return false;
    }
    memset(who, 0, sizeof(*who));
    who->role = (enum api_role)json_integer_value(json_object_get(e, "role"));
    snprintf(who->user_id, sizeof(who->user_id), "%s",
             json_string_value(json_object_get(e, "user_id")));
    snprintf(who->tenant_id, sizeof(who->tenant_id), "%s",
             json_string_value(json_object_get(e, "tenant_id")));
    snprintf(who->user, sizeof(who->user), "%s", json_string_value(json_object_get(e, "user")));
    snprintf(who->tenant, sizeof(who->tenant), "%s",
             json_string_value(json_object_get(e, "tenant")));
    who->heavy = (long)json_integer_value(json_object_get(e, "heavy"));
    g->st.token_hits++;
    return true;
}

static void sweep(struct api_guard *g)
{
    long long now = clock_mono_ms();
    const char *k;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(g->tokens, tmp, k, v)
    {
        if (json_integer_value(json_object_get(v, "until")) <= now)
            json_object_del(g->tokens, k);
    }
    if (json_object_size(g->tokens) >= API_GUARD_MAX_TOKENS)
        json_object_clear(g->tokens);
}

void api__guard_token_put(struct api_guard *g, const char *token, const struct api_principal *who,
                          long long expires_ms)
{
    char id[17], h[65];
    if (!g->ttl_ms || !token_id(token, id))
        return;
    long long now = clock_mono_ms(), until = now + g->ttl_ms;
    if (expires_ms > 0) {
        long long left = expires_ms - clock_wall_ms();
        if (left <= 0)
            return;
        if (now + left < until)
            until = now + left;
    }
    if (json_object_size(g->tokens) >= API_GUARD_MAX_TOKENS)
        sweep(g);
    sha_hex(token, h);
    json_object_set_new(g->tokens, id,
                        json_pack("{s:s, s:I, s:i, s:s, s:s, s:s, s:s, s:I}", "h", h, "until",
                                  (json_int_t)until, "role", (int)who->role, "user_id",
                                  who->user_id, "tenant_id", who->tenant_id, "user", who->user,
                                  "tenant", who->tenant, "heavy", (json_int_t)who->heavy));
}

void api__guard_forget_token(struct api_guard *g, const char *token_id_hex)
{
    json_object_del(g->tokens, token_id_hex);
}

static void forget_where(struct api_guard *g, const char *field, const char *value)
{
    const char *k;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(g->tokens, tmp, k, v)
    {
        const char *x = json_string_value(json_object_get(v, field));
        if (x && strcmp(x, value) == 0)
            json_object_del(g->tokens, k);
    }
}

void api__guard_forget_user(struct api_guard *g, const char *user_id)
{
    forget_where(g, "user_id", user_id);
}

void api__guard_forget_tenant(struct api_guard *g, const char *tenant_id)
{
    forget_where(g, "tenant_id", tenant_id);
}

/* ---- admission ------------------------------------------------------------------ */

static const char *key(char *buf, size_t n, char kind, char who, const char *id)
{
    snprintf(buf, n, "%c:%c:%s", kind, who, id && *id ? id : "-");
    return buf;
}

static long get(struct api_guard *g, char kind, char who, const char *id)
{
    char k[64];
    return (long)json_integer_value(json_object_get(g->counts, key(k, sizeof(k), kind, who, id)));
}

static void add(struct api_guard *g, char kind, char who, const char *id, int delta)
{
    char k[64];
    key(k, sizeof(k), kind, who, id);
    json_int_t v = json_integer_value(json_object_get(g->counts, k)) + delta;
    if (v <= 0)
        json_object_del(g->counts, k);
    else
        json_object_set_new(g->counts, k, json_integer(v));
}

static bool heavy_free(struct api_guard *g, const struct api_principal *who)
{
    long tenant = who->heavy > 0 ? who->heavy : g->l.heavy_per_tenant;
    if (g->l.heavy_max > 0 && tenant > g->l.heavy_max)
        tenant = g->l.heavy_max;
    return get(g, 'h', 'u', who->user_id) < g->l.heavy_per_user &&
           get(g, 'h', 't', who->tenant_id) < tenant;
}

static void take(struct api_guard *g, const struct api_principal *who, bool heavy)
{
    add(g, 'r', 'u', who->user_id, 1);
    add(g, 'r', 't', who->tenant_id, 1);
    if (heavy) {
        add(g, 'h', 'u', who->user_id, 1);
        add(g, 'h', 't', who->tenant_id, 1);
        g->st.heavy_running++;
    }
}

enum api_admit api__guard_admit(struct api_guard *g, const struct api_principal *who, bool heavy)
{
    if (get(g, 'r', 'u', who->user_id) >= g->l.per_user ||
        get(g, 'r', 't', who->tenant_id) >= g->l.per_tenant) {
        g->st.refused++;
        return API_ADMIT_REFUSE;
    }
    if (heavy && !heavy_free(g, who)) {
        if (get(g, 'w', 't', who->tenant_id) >= g->l.heavy_wait_per_tenant) {
            g->st.refused++;
            return API_ADMIT_REFUSE;
        }
        add(g, 'w', 't', who->tenant_id, 1);
        g->st.heavy_waiting++;
        g->st.heavy_waits++;
        return API_ADMIT_WAIT;
    }
    take(g, who, heavy);
    return API_ADMIT_NOW;
}

bool api__guard_admit_waiting(struct api_guard *g, const struct api_principal *who)
{
    if (!heavy_free(g, who))
        return false;
    api__guard_wait_abandon(g, who);
    take(g, who, true);
    return true;
}

void api__guard_wait_abandon(struct api_guard *g, const struct api_principal *who)
{
    add(g, 'w', 't', who->tenant_id, -1);
    g->st.heavy_waiting--;
}

void api__guard_release_heavy(struct api_guard *g, const struct api_principal *who)
{
    add(g, 'h', 'u', who->user_id, -1);
    add(g, 'h', 't', who->tenant_id, -1);
    g->st.heavy_running--;
}

void api__guard_release(struct api_guard *g, const struct api_principal *who, bool heavy)
{
    add(g, 'r', 'u', who->user_id, -1);
    add(g, 'r', 't', who->tenant_id, -1);
    if (heavy)
        api__guard_release_heavy(g, who);
}
