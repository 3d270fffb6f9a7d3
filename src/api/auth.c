/*
 * auth: bearer tokens, the first superadmin, and secrets at rest.
 *
 * Tokens: "drv_" + 16 hex digits of public id + "_" + 64 hex digits of
 * secret (32 random bytes). The database keeps the id, a random 16-byte salt
 * and SHA-256(salt || secret), never the token; checking compares hashes in
 * constant time.
 *
 * Secrets: sensitive values are sealed at their place under the tenant's
 * key (src/common/seal.h; seal.c decides what is sensitive). The API shows
 * "********" in place of anything that looks sealed.
 *
 * Pure functions, safe on any thread, except api_bootstrap (blocking, start-up).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "api.h"
#include "api_int.h"
#include "hex.h"
#include "seal.h"
#include "store.h"
#include "xalloc.h"

static int is_hex(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i]))
            return 0;
    return 1;
}

int api_token_parse(const char *token, char id[17], char secret[65])
{
    if (strlen(token) != 4 + 16 + 1 + 64 || strncmp(token, "drv_", 4) != 0 || token[20] != '_' ||
        !is_hex(token + 4, 16) || !is_hex(token + 21, 64))
        return DRV_EINVAL;
    memcpy(id, token + 4, 16);
    id[16] = '\0';
    memcpy(secret, token + 21, 64);
    secret[64] = '\0';
    return 0;
}

void api_token_hash(const unsigned char *salt, size_t salt_len, const char *secret, char out[65])
{
    unsigned char md[32];
    unsigned int n = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
    EVP_DigestUpdate(ctx, salt, salt_len);
    EVP_DigestUpdate(ctx, secret, strlen(secret));
    EVP_DigestFinal_ex(ctx, md, &n);
    EVP_MD_CTX_free(ctx);
    hex_encode(md, 32, out);
}

int api__token_new(PGconn *conn, const char *user_id, long expires_s, const char *label,
                   char token[90], json_t **row, struct drv_err *err)
{
    unsigned char idb[8], sec[32], salt[16];
    if (RAND_bytes(idb, sizeof(idb)) != 1 || RAND_bytes(sec, sizeof(sec)) != 1 ||
        RAND_bytes(salt, sizeof(salt)) != 1)
        return drv_err_set(err, DRV_ETLS, 0, "no random bytes from openssl");
    char id[17], secret[65], salt_hex[33], hash[65];
    hex_encode(idb, sizeof(idb), id);
    hex_encode(sec, sizeof(sec), secret);
    hex_encode(salt, sizeof(salt), salt_hex);
    api_token_hash(salt, sizeof(salt), secret, hash);
    char exp[24];
    snprintf(exp, sizeof(exp), "%ld", expires_s);
    json_t *r = NULL;
    int rc = store_token_insert(conn, id, user_id, salt_hex, hash, expires_s > 0 ? exp : NULL,
                                label, &r, err);
    if (row)
        *row = r;
    else
        json_decref(r);
    if (rc == 0)
        snprintf(token, 90, "drv_%s_%s", id, secret);
    OPENSSL_cleanse(sec, sizeof(sec));
    OPENSSL_cleanse(secret, sizeof(secret));
    return rc;
}

int api__token_check(PGconn *conn, const char *token, struct api_principal *who,
                     long long *expires_ms, struct drv_err *err)
{
    char id[17], secret[65];
    if (api_token_parse(token, id, secret) != 0)
        return drv_err_set(err, DRV_EPERM, 0, "malformed bearer token");
    json_t *row;
    int rc = store_token_lookup(conn, id, &row, err);
    if (rc == DRV_ENOENT)
        rc = drv_err_set(err, DRV_EPERM, 0, "unknown, revoked or expired token");
    if (rc)
        return rc;
    unsigned char salt[64];
    size_t nsalt = 0;
    char hash[65];
    const char *want = json_string_value(json_object_get(row, "hash"));
    if (hex_decode(json_string_value(json_object_get(row, "salt")), salt, sizeof(salt), &nsalt) !=
            0 ||
        !want || strlen(want) != 64) {
        json_decref(row);
        return drv_err_set(err, DRV_EPERM, 0, "unknown, revoked or expired token");
    }
    api_token_hash(salt, nsalt, secret, hash);
    OPENSSL_cleanse(secret, sizeof(secret));
    if (CRYPTO_memcmp(hash, want, 64) != 0) {
        json_decref(row);
        return drv_err_set(err, DRV_EPERM, 0, "unknown, revoked or expired token");
    }
    memset(who, 0, sizeof(*who));
    const char *role = json_string_value(json_object_get(row, "role"));
    who->role = strcmp(role, "superadmin") == 0 ? ROLE_SUPER
                : strcmp(role, "admin") == 0    ? ROLE_ADMIN
                                                : ROLE_USER;
    snprintf(who->user_id, sizeof(who->user_id), "%s",
             json_string_value(json_object_get(row, "user_id")));
    const char *tid = json_string_value(json_object_get(row, "tenant_id"));
    snprintf(who->tenant_id, sizeof(who->tenant_id), "%s", tid ? tid : "");
    snprintf(who->user, sizeof(who->user), "%s", json_string_value(json_object_get(row, "user")));
    snprintf(who->tenant, sizeof(who->tenant), "%s",
             json_string_value(json_object_get(row, "tenant")));
    who->heavy = (long)json_integer_value(json_object_get(row, "heavy"));
    if (expires_ms)
        *expires_ms = (long long)json_integer_value(json_object_get(row, "expires_ms"));
    json_decref(row);
    return 0;
}

int api_field_sensitive(const char *name)
{
    static const char *const words[] = {"password",    "secret",  "token", "credential",
                                        "private_key", "api_key", NULL};
    char low[128];
    size_t i;
    for (i = 0; name[i] && i < sizeof(low) - 1; i++)
        low[i] = (char)tolower((unsigned char)name[i]);
    low[i] = '\0';
    for (const char *const *w = words; *w; w++)
        if (strstr(low, *w))
            return 1;
    return 0;
}

static bool sealed_string(const json_t *v)
{
    return seal_looks_sealed(json_string_value(v));
}

void api_redact(json_t *j)
{
    const char *k;
    json_t *v;
    size_t i;
    if (json_is_object(j)) {
        json_object_foreach(j, k, v)
        {
            if (sealed_string(v))
                json_object_set_new(j, k, json_string(API_REDACTED));
            else
                api_redact(v);
        }
    } else if (json_is_array(j)) {
        json_array_foreach(j, i, v)
        {
            if (sealed_string(v))
                json_array_set_new(j, i, json_string(API_REDACTED));
            else
                api_redact(v);
        }
    }
}

int api__load_key(const char *path, unsigned char key[32], struct drv_err *err)
{
    return seal_key_load("secrets.key_file", path, key, err);
}

/* Arbitrary constant naming the bootstrap among advisory locks. */
#define BOOTSTRAP_LOCK_KEY "7301946286"

int api_bootstrap(const char *conninfo, const char *path, int *created, struct drv_err *err)
{
    *created = 0;
    if (!path || !*path)
        return 0;
    PGconn *c = store_connect(conninfo, err);
    if (!c)
        return err ? err->code : DRV_EAGAIN;
    int exists = 0, fd = -1;
    char user_id[24], token[90] = "";
    int rc = store_begin(c, err);
    if (rc == 0)
        rc = store_exec(c, "SELECT pg_advisory_xact_lock(" BOOTSTRAP_LOCK_KEY ")", 0, NULL, NULL,
                        err);
    if (rc == 0)
        rc = store_superadmin_exists(c, &exists, err);
    if (rc == 0 && !exists) {
        rc = store_user_insert(c, NULL, "superadmin", "superadmin", user_id, err);
        if (rc == 0)
            rc = api__token_new(c, user_id, 0, "bootstrap", token, NULL, err);
        if (rc == 0)
            rc = store_audit(c, NULL, user_id, "droverd", "bootstrap", "user", user_id, "local",
                             NULL, err);
        if (rc == 0) {
            fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
            if (fd < 0)
                rc = drv_err_set(err, DRV_EIO, errno,
                                 "api.bootstrap_token_file \"%s\": %s (no superadmin exists yet:"
                                 " remove the stale file)",
                                 path, strerror(errno));
        }
        if (rc == 0) {
            size_t len = strlen(token);
            token[len] = '\n';
            if (write(fd, token, len + 1) != (ssize_t)(len + 1) || fsync(fd) != 0)
                rc = drv_err_set(err, DRV_EIO, errno, "api.bootstrap_token_file \"%s\": %s", path,
                                 strerror(errno));
        }
        if (fd >= 0)
            close(fd);
        if (rc == 0)
            rc = store_commit(c, err);
        if (rc != 0 && fd >= 0)
            unlink(path);
        if (rc == 0)
            *created = 1;
    } else if (rc == 0) {
        rc = store_commit(c, err);
    }
    if (rc)
        store_rollback(c);
    OPENSSL_cleanse(token, sizeof(token));
    PQfinish(c);
    return rc;
}
