/*
 * seal: AES-256-GCM sealing of secrets (seal.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "hex.h"
#include "seal.h"
#include "config.h"
#include "xalloc.h"

int seal_key_load(const char *path, unsigned char key[32], struct drv_err *err)
{
    char buf[130];
    int rc = config_read_secret("secrets.key_file", path, buf, sizeof(buf), err);
    if (rc != 0) {
        OPENSSL_cleanse(buf, sizeof(buf));
        return rc;
    }
    size_t got = 0;
    if (strlen(buf) != 64 || hex_decode(buf, key, 32, &got) != 0 || got != 32)
        rc = drv_err_set(err, DRV_EINVAL, 0,
                         "secrets.key_file \"%s\": expected 64 hex digits (openssl rand -hex 32)",
                         path);
    OPENSSL_cleanse(buf, sizeof(buf));
    return rc;
}

bool seal_is_sealed(const char *s)
{
    return s && (strncmp(s, SEAL_PREFIX, strlen(SEAL_PREFIX)) == 0 ||
                 strncmp(s, SEAL_JSON_PREFIX, strlen(SEAL_JSON_PREFIX)) == 0);
}

char *seal_text(const unsigned char key[32], const char *text)
{
    return seal_prefixed(key, SEAL_PREFIX, text, strlen(text));
}

char *seal_prefixed(const unsigned char key[32], const char *prefix, const char *text, size_t n)
{
    unsigned char *buf = xmalloc(12 + n + 16);
    if (RAND_bytes(buf, 12) != 1)
        abort();
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    int len = 0, fin = 0;
    EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, key, buf);
    EVP_EncryptUpdate(ctx, buf + 12, &len, (const unsigned char *)text, (int)n);
    EVP_EncryptFinal_ex(ctx, buf + 12 + len, &fin);
    EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, 16, buf + 12 + n);
    EVP_CIPHER_CTX_free(ctx);
    size_t total = 12 + n + 16;
    char *out = xmalloc(strlen(prefix) + 4 * ((total + 2) / 3) + 1);
    strcpy(out, prefix);
    EVP_EncodeBlock((unsigned char *)out + strlen(prefix), buf, (int)total);
    OPENSSL_cleanse(buf, total);
    free(buf);
    return out;
}

int seal_open(const unsigned char key[32], const char *enc, char **text, struct drv_err *err)
{
    return seal_open_prefixed(key, SEAL_PREFIX, enc, text, NULL, err);
}

int seal_open_prefixed(const unsigned char key[32], const char *prefix, const char *enc,
                       char **text, size_t *n_out, struct drv_err *err)
{
    *text = NULL;
    if (strncmp(enc, prefix, strlen(prefix)) != 0)
        return drv_err_set(err, DRV_EINVAL, 0, "not a sealed value");
    const char *b64 = enc + strlen(prefix);
    size_t blen = strlen(b64);
    if (blen % 4 || blen == 0)
        return drv_err_set(err, DRV_EINVAL, 0, "sealed value: bad base64");
    unsigned char *buf = xmalloc(blen);
    int n = EVP_DecodeBlock(buf, (const unsigned char *)b64, (int)blen);
    if (n > 0 && b64[blen - 1] == '=')
        n--;
    if (n > 0 && b64[blen - 2] == '=')
        n--;
    if (n < 28) {
        free(buf);
        return drv_err_set(err, DRV_EINVAL, 0, "sealed value: too short");
    }
    int clen = n - 28, len = 0, fin = 0;
    char *out = xmalloc((size_t)clen + 1);
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, key, buf);
    EVP_DecryptUpdate(ctx, (unsigned char *)out, &len, buf + 12, clen);
    EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, 16, buf + 12 + clen);
    int ok = EVP_DecryptFinal_ex(ctx, (unsigned char *)out + len, &fin) == 1;
    EVP_CIPHER_CTX_free(ctx);
    free(buf);
    if (!ok) {
        OPENSSL_cleanse(out, (size_t)clen);
        free(out);
        return drv_err_set(err, DRV_ETLS, 0, "sealed value: wrong key or corrupted");
    }
    out[clen] = '\0';
    *text = out;
    if (n_out)
        *n_out = (size_t)clen;
    return 0;
}

char *seal_value(const unsigned char key[32], const json_t *v)
{
    if (json_is_string(v))
        return seal_prefixed(key, SEAL_PREFIX, json_string_value(v), json_string_length(v));
    char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    char *out = seal_prefixed(key, SEAL_JSON_PREFIX, text, strlen(text));
    seal_wipe_free(text);
    return out;
}

int seal_open_value(const unsigned char key[32], const char *sealed, json_t **out,
                    struct drv_err *err)
{
    *out = NULL;
    bool is_json = strncmp(sealed, SEAL_JSON_PREFIX, strlen(SEAL_JSON_PREFIX)) == 0;
    char *text;
    size_t n;
    int rc =
        seal_open_prefixed(key, is_json ? SEAL_JSON_PREFIX : SEAL_PREFIX, sealed, &text, &n, err);
    if (rc)
        return rc;
    if (is_json) {
        json_error_t je;
        *out = json_loadb(text, n, JSON_DECODE_ANY, &je);
        if (!*out)
            rc = drv_err_set(err, DRV_EINVAL, 0, "sealed value: not JSON inside");
    } else {
        *out = json_stringn(text, n);
    }
    OPENSSL_cleanse(text, n);
    free(text);
    return rc;
}

void seal_wipe_free(char *s)
{
    if (s) {
        OPENSSL_cleanse(s, strlen(s));
        free(s);
    }
}

static int open_at(const unsigned char key[32], json_t *j, char *path, size_t plen,
                   struct drv_err *err)
{
    size_t len = strlen(path);
    if (json_is_object(j)) {
        const char *k;
        json_t *v;
        void *tmp;
        json_object_foreach_safe(j, tmp, k, v)
        {
            snprintf(path + len, plen - len, "%s%s", len ? "." : "", k);
            if (json_is_string(v) && seal_is_sealed(json_string_value(v))) {
                json_t *opened;
                int rc = seal_open_value(key, json_string_value(v), &opened, err);
                if (rc) {
                    drv_err_prefix(err, "%s", path);
                    return rc;
                }
                json_object_set_new(j, k, opened);
            } else {
                int rc = open_at(key, v, path, plen, err);
                if (rc)
                    return rc;
            }
            path[len] = '\0';
        }
    } else if (json_is_array(j)) {
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v)
        {
            snprintf(path + len, plen - len, "[%zu]", i);
            if (json_is_string(v) && seal_is_sealed(json_string_value(v))) {
                json_t *opened;
                int rc = seal_open_value(key, json_string_value(v), &opened, err);
                if (rc) {
                    drv_err_prefix(err, "%s", path);
                    return rc;
                }
                json_array_set_new(j, i, opened);
            } else {
                int rc = open_at(key, v, path, plen, err);
                if (rc)
                    return rc;
            }
            path[len] = '\0';
        }
    }
    return 0;
}

int seal_open_json(const unsigned char key[32], json_t *j, struct drv_err *err)
{
    char path[512] = "";
    return open_at(key, j, path, sizeof(path), err);
}
