/*
 * seal: AES-256-GCM sealing of secrets bound to their place (seal.h).
 *
 * No state: keys come from the caller. The associated data is built from the
 * place alone, so opener and sealer agree only when they name the same
 * tenant, entity and field. Buffers that held plaintext are wiped before
 * they are freed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>

#include "config.h"
#include "hex.h"
#include "seal.h"
#include "xalloc.h"

#define AAD_LABEL "drover-seal-v2"
#define KDF_SALT "drover-seal"
#define KDF_INFO "drover tenant key v2:"
#define KDF_ZK_INFO "drover worker zookeeper v1:"

int seal_key_load(const char *what, const char *path, unsigned char key[32], struct drv_err *err)
{
    char buf[130];
    int rc = config_read_secret(what, path, buf, sizeof(buf), err);
    if (rc != 0) {
        OPENSSL_cleanse(buf, sizeof(buf));
        return rc;
    }
    size_t got = 0;
    if (strlen(buf) != 64 || hex_decode(buf, key, 32, &got) != 0 || got != 32)
        rc = drv_err_set(err, DRV_EINVAL, 0,
                         "%s \"%s\": expected 64 hex digits (openssl rand -hex 32)", what, path);
    OPENSSL_cleanse(buf, sizeof(buf));
    return rc;
}

static void derive(const unsigned char fleet[32], const char *label, const char *tenant,
                   unsigned char out[32])
{
    size_t tl = strlen(tenant), il = strlen(label) + tl;
    unsigned char *info = xmalloc(il);
    memcpy(info, label, strlen(label));
    memcpy(info + strlen(label), tenant, tl);
    EVP_PKEY_CTX *pc = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, NULL);
    size_t outlen = 32;
    if (!pc || EVP_PKEY_derive_init(pc) <= 0 || EVP_PKEY_CTX_set_hkdf_md(pc, EVP_sha256()) <= 0 ||
        EVP_PKEY_CTX_set1_hkdf_salt(pc, (const unsigned char *)KDF_SALT, strlen(KDF_SALT)) <= 0 ||
        EVP_PKEY_CTX_set1_hkdf_key(pc, fleet, 32) <= 0 ||
        EVP_PKEY_CTX_add1_hkdf_info(pc, info, (int)il) <= 0 ||
        EVP_PKEY_derive(pc, out, &outlen) <= 0 || outlen != 32)
        abort(); /* OpenSSL without HKDF: nothing can be sealed safely */
    EVP_PKEY_CTX_free(pc);
    free(info);
}

void seal_tenant_key(const unsigned char fleet[32], const char *tenant, unsigned char out[32])
{
    derive(fleet, KDF_INFO, tenant, out);
}

void seal_worker_zk(const unsigned char fleet[32], const char *tenant, char *user, size_t un,
                    char password[65])
{
    unsigned char pw[32];
    derive(fleet, KDF_ZK_INFO, tenant, pw);
    hex_encode(pw, 32, password);
    OPENSSL_cleanse(pw, sizeof(pw));
    snprintf(user, un, "worker.%s", tenant);
}

bool seal_looks_sealed(const char *s)
{
    return s && strncmp(s, "enc:", 4) == 0;
}

bool seal_is_legacy(const char *s)
{
    return s && (strncmp(s, SEAL_LEGACY_TEXT, strlen(SEAL_LEGACY_TEXT)) == 0 ||
                 strncmp(s, SEAL_LEGACY_JSON, strlen(SEAL_LEGACY_JSON)) == 0);
}

void seal_wipe_free(char *s)
{
    if (s) {
        OPENSSL_cleanse(s, strlen(s));
        free(s);
    }
}

/* ---- the associated data ----------------------------------------------------------- */

static void aad_put(unsigned char **p, const char *s, size_t n)
{
    (*p)[0] = (unsigned char)(n >> 24);
    (*p)[1] = (unsigned char)(n >> 16);
    (*p)[2] = (unsigned char)(n >> 8);
    (*p)[3] = (unsigned char)n;
    memcpy(*p + 4, s, n);
    *p += 4 + n;
}

/* AAD_LABEL, then tenant, kind, name and field, each length-prefixed. Caller frees. */
static unsigned char *aad_of(const struct seal_place *at, size_t *len)
{
    const char *parts[] = {AAD_LABEL, at->tenant, at->kind, at->name, at->field};
    size_t n = 0;
    for (size_t i = 0; i < 5; i++)
        n += 4 + strlen(parts[i]);
    unsigned char *aad = xmalloc(n), *p = aad;
    for (size_t i = 0; i < 5; i++)
        aad_put(&p, parts[i], strlen(parts[i]));
    *len = n;
    return aad;
}

/* ---- AES-256-GCM over bytes -------------------------------------------------------- */

/* prefix + base64(nonce || ciphertext || tag) of n bytes of pt, with aad (may be NULL). */
static char *gcm_seal(const unsigned char key[32], const char *prefix, const unsigned char *aad,
                      size_t aad_len, const unsigned char *pt, size_t n)
{
    unsigned char *buf = xmalloc(12 + n + 16);
    if (RAND_bytes(buf, 12) != 1)
        abort();
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    int len = 0, fin = 0;
    EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, key, buf);
    if (aad)
        EVP_EncryptUpdate(ctx, NULL, &len, aad, (int)aad_len);
    EVP_EncryptUpdate(ctx, buf + 12, &len, pt, (int)n);
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

/* Open prefix + base64(...) into *pt (*n bytes, NUL-terminated): DRV_EINVAL, DRV_ETLS. */
static int gcm_open(const unsigned char key[32], const char *prefix, const unsigned char *aad,
                    size_t aad_len, const char *enc, unsigned char **pt, size_t *n_out,
                    struct drv_err *err)
{
    *pt = NULL;
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
        return drv_err_set(err, DRV_EINVAL, 0, "sealed value: malformed");
    }
    int clen = n - 28, len = 0, fin = 0;
    unsigned char *out = xmalloc((size_t)clen + 1);
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, key, buf);
    if (aad)
        EVP_DecryptUpdate(ctx, NULL, &len, aad, (int)aad_len);
    EVP_DecryptUpdate(ctx, out, &len, buf + 12, clen);
    EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, 16, buf + 12 + clen);
    int ok = EVP_DecryptFinal_ex(ctx, out + len, &fin) == 1;
    EVP_CIPHER_CTX_free(ctx);
    free(buf);
    if (!ok) {
        OPENSSL_cleanse(out, (size_t)clen);
        free(out);
        return drv_err_set(err, DRV_ETLS, 0,
                           "sealed value does not open here (sealed for another tenant, entity "
                           "or field, or altered)");
    }
    out[clen] = '\0';
    *pt = out;
    *n_out = (size_t)clen;
    return 0;
}

/* ---- values ------------------------------------------------------------------------ */

char *seal_value_at(const unsigned char tkey[32], const struct seal_place *at, const json_t *v)
{
    char *text = json_is_string(v) ? NULL : json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    size_t tl = text ? strlen(text) : json_string_length(v);
    unsigned char *pt = xmalloc(1 + tl);
    pt[0] = text ? 'j' : 's';
    memcpy(pt + 1, text ? text : json_string_value(v), tl);
    seal_wipe_free(text);
    size_t aad_len;
    unsigned char *aad = aad_of(at, &aad_len);
    char *out = gcm_seal(tkey, SEAL_PREFIX, aad, aad_len, pt, 1 + tl);
    free(aad);
    OPENSSL_cleanse(pt, 1 + tl);
    free(pt);
    return out;
}

/* The JSON value of type t ('s' or 'j') from n bytes of text: DRV_EINVAL. */
static int value_of(char t, const unsigned char *text, size_t n, json_t **out, struct drv_err *err)
{
    if (t == 'j')
        *out = json_loadb((const char *)text, n, JSON_DECODE_ANY, NULL);
    else if (t == 's')
        *out = json_stringn((const char *)text, n);
    else
        *out = NULL;
    return *out ? 0 : drv_err_set(err, DRV_EINVAL, 0, "sealed value: bad content");
}

int seal_open_at(const unsigned char tkey[32], const struct seal_place *at, const char *sealed,
                 json_t **out, struct drv_err *err)
{
    *out = NULL;
    if (seal_is_legacy(sealed))
        return drv_err_set(err, DRV_EINVAL, 0,
                           "sealed value in the old format (enc:v1), not migrated yet");
    size_t aad_len, n;
    unsigned char *aad = aad_of(at, &aad_len), *pt;
    int rc = gcm_open(tkey, SEAL_PREFIX, aad, aad_len, sealed, &pt, &n, err);
    free(aad);
    if (rc)
        return rc;
    rc = n < 1 ? drv_err_set(err, DRV_EINVAL, 0, "sealed value: empty")
               : value_of((char)pt[0], pt + 1, n - 1, out, err);
    OPENSSL_cleanse(pt, n);
    free(pt);
    return rc;
}

int seal_open_legacy(const unsigned char fleet[32], const char *sealed, json_t **out,
                     struct drv_err *err)
{
    *out = NULL;
    bool is_json = strncmp(sealed, SEAL_LEGACY_JSON, strlen(SEAL_LEGACY_JSON)) == 0;
    unsigned char *pt;
    size_t n;
    int rc = gcm_open(fleet, is_json ? SEAL_LEGACY_JSON : SEAL_LEGACY_TEXT, NULL, 0, sealed, &pt,
                      &n, err);
    if (rc)
        return rc;
    rc = value_of(is_json ? 'j' : 's', pt, n, out, err);
    OPENSSL_cleanse(pt, n);
    free(pt);
    return rc;
}

/* ---- trees ------------------------------------------------------------------------- */

/* What to do with one sealed-looking string: a replacement (new reference) or an error. */
typedef int (*seal__visit_fn)(const char *s, const struct seal_place *at, json_t **out,
                              struct drv_err *err, void *arg);

static int visit(json_t *j, const struct seal_place *base, char *path, size_t cap,
                 seal__visit_fn fn, void *arg, struct drv_err *err);

/* One member v of an object or array, at path: a sealed-looking string goes to fn (*nv: its
 * replacement, or NULL), anything else is visited. */
static int visit_member(json_t *v, const struct seal_place *base, char *path, size_t cap,
                        seal__visit_fn fn, void *arg, json_t **nv, struct drv_err *err)
{
    *nv = NULL;
    if (json_is_string(v) && seal_looks_sealed(json_string_value(v))) {
        struct seal_place at = *base;
        at.field = path;
        return fn(json_string_value(v), &at, nv, err, arg);
    }
    return visit(v, base, path, cap, fn, arg, err);
}

/* Visit every sealed-looking string inside j; path holds base->field's path so far. */
static int visit(json_t *j, const struct seal_place *base, char *path, size_t cap,
                 seal__visit_fn fn, void *arg, struct drv_err *err)
{
    size_t len = strlen(path);
    const char *k;
    json_t *v, *nv;
    void *tmp;
    size_t i;
    int rc = 0;
    if (json_is_object(j)) {
        json_object_foreach_safe(j, tmp, k, v)
        {
            snprintf(path + len, cap - len, "%s%s", len ? "." : "", k);
            rc = visit_member(v, base, path, cap, fn, arg, &nv, err);
            if (rc)
                return rc; /* path names the failing value for walk() */
            if (nv)
                json_object_set_new(j, k, nv);
            path[len] = '\0';
        }
    } else if (json_is_array(j)) {
        json_array_foreach(j, i, v)
        {
            snprintf(path + len, cap - len, "[%zu]", i);
            rc = visit_member(v, base, path, cap, fn, arg, &nv, err);
            if (rc)
                return rc;
            if (nv)
                json_array_set_new(j, i, nv);
            path[len] = '\0';
        }
    }
    return 0;
}

static int walk(json_t *j, const struct seal_place *base, seal__visit_fn fn, void *arg,
                struct drv_err *err)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s", base->field);
    int rc = visit(j, base, path, sizeof(path), fn, arg, err);
    if (rc)
        drv_err_prefix(err, "field \"%s\"", path);
    return rc;
}

static int open_one(const char *s, const struct seal_place *at, json_t **out, struct drv_err *err,
                    void *arg)
{
    return seal_open_at(arg, at, s, out, err);
}

int seal_open_tree(const unsigned char tkey[32], const struct seal_place *base, json_t *j,
                   struct drv_err *err)
{
    return walk(j, base, open_one, (void *)tkey, err);
}

struct migrate {
    const unsigned char *fleet;
    unsigned char tkey[32];
    int n;
};

static int migrate_one(const char *s, const struct seal_place *at, json_t **out,
                       struct drv_err *err, void *arg)
{
    struct migrate *m = arg;
    if (!seal_is_legacy(s))
        return 0; /* already in place (or not ours to judge here) */
    json_t *v;
    int rc = seal_open_legacy(m->fleet, s, &v, err);
    if (rc)
        return rc;
    char *enc = seal_value_at(m->tkey, at, v);
    json_decref(v);
    *out = json_string(enc);
    free(enc);
    m->n++;
    return 0;
}

int seal_migrate_tree(const unsigned char fleet[32], const struct seal_place *base, json_t *j,
                      int *n, struct drv_err *err)
{
    struct migrate m = {.fleet = fleet};
    seal_tenant_key(fleet, base->tenant, m.tkey);
    json_t *copy = json_deep_copy(j);
    int rc = walk(copy, base, migrate_one, &m, err);
    OPENSSL_cleanse(m.tkey, sizeof(m.tkey));
    *n = rc ? 0 : m.n;
    if (rc == 0 && m.n) {
        if (json_is_object(j))
            json_object_update(j, copy);
        else if (json_array_clear(j) == 0)
            json_array_extend(j, copy);
    }
    json_decref(copy);
    return rc;
}

struct rebind {
    const unsigned char *tkey;
    const struct seal_place *from;
    size_t to_len; /* strlen(to->field) */
};

static int rebind_one(const char *s, const struct seal_place *at, json_t **out, struct drv_err *err,
                      void *arg)
{
    struct rebind *r = arg;
    json_t *v;
    if (seal_open_at(r->tkey, at, s, &v, err) == 0) {
        json_decref(v); /* sealed here already */
        return 0;
    }
    const char *rel = at->field + r->to_len;
    rel += *rel == '.';
    const char *f = r->from->field;
    char *ffield = xasprintf("%s%s%s", f, *f && *rel && *rel != '[' ? "." : "", rel);
    struct seal_place from = *r->from;
    from.field = ffield;
    int rc = seal_open_at(r->tkey, &from, s, &v, err);
    free(ffield);
    if (rc)
        return rc;
    char *enc = seal_value_at(r->tkey, at, v);
    json_decref(v);
    *out = json_string(enc);
    free(enc);
    return 0;
}

int seal_rebind_tree(const unsigned char tkey[32], const struct seal_place *from,
                     const struct seal_place *to, json_t *j, struct drv_err *err)
{
    struct rebind r = {.tkey = tkey, .from = from, .to_len = strlen(to->field)};
    json_t *copy = json_deep_copy(j);
    int rc = walk(copy, to, rebind_one, &r, err);
    if (rc == 0) {
        if (json_is_object(j))
            json_object_update(j, copy);
        else if (json_array_clear(j) == 0)
            json_array_extend(j, copy);
    }
    json_decref(copy);
    return rc;
}
