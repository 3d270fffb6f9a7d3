/*
 * handlers_tokens: a caller's own API tokens (docs/api.md "Tokens"): create
 * one with an expiry, list the live ones, revoke one.
 *
 * Pool-thread code, after authentication; writes run in one transaction
 * with their audit entry. A revocation also drops the token from this
 * node's cache of verified tokens (guard.h) on the loop before the reply;
 * other nodes drop it within api.token_cache_ttl.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "guard.h"
#include "handlers.h"
#include "store.h"

#define LABEL_MAX 100

int api__h_token_new(PGconn *conn, struct call *c, struct drv_err *err)
{
    long ttl = c->opts->token_ttl_ms / 1000, max = c->opts->token_max_ttl_ms / 1000;
    json_t *je = c->body ? json_object_get(c->body, "expires_in") : NULL;
    json_t *jl = c->body ? json_object_get(c->body, "label") : NULL;
    if (je) {
        if (!json_is_integer(je) || json_integer_value(je) < 60 || json_integer_value(je) > max)
            return call_fail(c, 400, "invalid", "expires_in",
                             "field \"expires_in\": expected 60 to %ld seconds", max);
        ttl = (long)json_integer_value(je);
    }
    const char *label = "";
    if (jl) {
        label = json_string_value(jl);
        bool ok = label && strlen(label) <= LABEL_MAX;
        for (const char *p = label; ok && *p; p++)
            ok = (unsigned char)*p >= 0x20 && *p != 0x7f;
        if (!ok)
            return call_fail(c, 400, "invalid", "label",
                             "field \"label\": expected up to %d printable characters", LABEL_MAX);
    }
    char token[90];
    json_t *row = NULL;
    int rc = store_begin(conn, err);
    if (rc == 0)
        rc = api__token_new(conn, c->who.user_id, ttl, label, token, &row, err);
    if (rc == 0)
        rc = api__audit(conn, c, "token.create", "token",
                        json_string_value(json_object_get(row, "id")),
                        json_pack("{s:I}", "expires_in", (json_int_t)ttl), err);
    if (rc == 0)
        rc = store_commit(conn, err);
    if (rc) {
        json_decref(row);
        return rc;
    }
    json_object_set_new(row, "token", json_string(token));
    c->out = row;
    c->status = 201;
    return 0;
}

int api__h_token_list(PGconn *conn, struct call *c, struct drv_err *err)
{
    json_t *items;
    int rc = store_token_list(conn, c->who.user_id, &items, err);
    if (rc)
        return rc;
    size_t i;
    json_t *t;
    json_array_foreach(items, i, t)
    {
        const char *id = json_string_value(json_object_get(t, "id"));
        json_object_set_new(t, "current", json_boolean(id && strncmp(c->token + 4, id, 16) == 0));
    }
    c->out = json_pack("{s:o}", "items", items);
    c->status = 200;
    return 0;
}

static int forget_on_loop(struct call *c)
{
    api__guard_forget_token(api__guard(c->api), c->seg[2]);
    return 0;
}

int api__h_token_revoke(PGconn *conn, struct call *c, struct drv_err *err)
{
    /* A user revokes its own tokens, an admin any of its tenant's, a superadmin any. */
    const char *tenant = c->who.role == ROLE_ADMIN ? c->who.tenant_id : NULL;
    const char *user = c->who.role == ROLE_USER ? c->who.user_id : NULL;
    int rc = store_begin(conn, err);
    if (rc == 0)
        rc = store_token_revoke(conn, c->seg[2], tenant, user, err);
    if (rc == 0)
        rc = api__audit(conn, c, "token.revoke", "token", c->seg[2], NULL, err);
    if (rc == 0)
        rc = store_commit(conn, err);
    if (rc == 0) {
        c->status = 204;
        c->on_loop = forget_on_loop;
    }
    return rc;
}
