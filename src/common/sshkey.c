/*
 * sshkey: Ed25519 key pairs in OpenSSH's formats (see sshkey.h).
 *
 * OpenSSL makes the key (EVP_PKEY_ED25519) and gives its raw 32-byte seed and
 * public key; this file only encodes them. The encodings (PROTOCOL.key and
 * RFC 8709 in OpenSSH's sources):
 *
 *   public blob   string "ssh-ed25519", string pub[32]
 *   public line   "ssh-ed25519 " base64(blob) [" " comment]
 *   private key   "openssh-key-v1\0"
 *                 string cipher "none", string kdf "none", string kdfoptions ""
 *                 uint32 1 (keys), string public blob
 *                 string private section:
 *                     uint32 check, uint32 check (the same random value twice)
 *                     string "ssh-ed25519", string pub[32], string seed[32] || pub[32]
 *                     string comment
 *                     padding 1, 2, 3, ... up to a multiple of 8
 *                 base64, lines of 70, between the BEGIN and END lines
 *
 * ("string" is a uint32 big-endian length and the bytes.) Every buffer that
 * held secret bytes is wiped before it is freed: the encodings are built in
 * secret strbufs (wiped as they grow and on release), the rest with
 * OPENSSL_cleanse.
 */
#include "sshkey.h"

#include <stdint.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "strbuf.h"
#include "xalloc.h"

#define KEYTYPE "ssh-ed25519"

/* The encodings' pieces, on a strbuf; every buffer here is secret (STRBUF_INIT_SECRET). */
static void buf_u32(struct strbuf *b, uint32_t v)
{
    unsigned char x[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 8), (unsigned char)v};
    strbuf_add(b, x, 4);
}

static void buf_string(struct strbuf *b, const void *data, size_t len)
{
    buf_u32(b, (uint32_t)len);
    strbuf_add(b, data, len);
}

/* Base64 of len bytes, no newlines, NUL-terminated; owned by the caller. */
static char *b64(const unsigned char *data, size_t len)
{
    char *out = xmalloc(4 * ((len + 2) / 3) + 1);
    EVP_EncodeBlock((unsigned char *)out, data, (int)len);
    return out;
}

static int tls_err(struct drv_err *err, const char *what)
{
    unsigned long e = ERR_get_error();
    char detail[160] = "";
    if (e)
        ERR_error_string_n(e, detail, sizeof(detail));
    ERR_clear_error();
    return drv_err_set(err, DRV_ETLS, (int)e, "%s failed%s%s", what, e ? ": " : "", detail);
}

static void public_blob(struct strbuf *b, const unsigned char pub[32])
{
    buf_string(b, KEYTYPE, strlen(KEYTYPE));
    buf_string(b, pub, 32);
}

static char *private_pem(const unsigned char seed[32], const unsigned char pub[32],
                         const char *comment)
{
    struct strbuf body = STRBUF_INIT_SECRET, sec = STRBUF_INIT_SECRET, pb = STRBUF_INIT_SECRET;
    uint32_t check;
    RAND_bytes((unsigned char *)&check, sizeof(check));
    buf_u32(&sec, check);
    buf_u32(&sec, check);
    buf_string(&sec, KEYTYPE, strlen(KEYTYPE));
    buf_string(&sec, pub, 32);
    unsigned char both[64];
    memcpy(both, seed, 32);
    memcpy(both + 32, pub, 32);
    buf_string(&sec, both, 64);
    OPENSSL_cleanse(both, sizeof(both));
    buf_string(&sec, comment, strlen(comment));
    for (unsigned char pad = 1; sec.len % 8 != 0; pad++)
        strbuf_addch(&sec, pad);

    static const char magic[] = "openssh-key-v1"; /* with its NUL */
    strbuf_add(&body, magic, sizeof(magic));
    buf_string(&body, "none", 4);
    buf_string(&body, "none", 4);
    buf_string(&body, "", 0);
    buf_u32(&body, 1);
    public_blob(&pb, pub);
    buf_string(&body, pb.buf, pb.len);
    buf_string(&body, sec.buf, sec.len);
    strbuf_release(&sec);
    strbuf_release(&pb);

    char *enc = b64((const unsigned char *)body.buf, body.len);
    strbuf_release(&body);
    size_t elen = strlen(enc);
    static const char begin[] = "-----BEGIN OPENSSH PRIVATE KEY-----\n";
    static const char end[] = "-----END OPENSSH PRIVATE KEY-----\n";
    char *out = xmalloc(sizeof(begin) + elen + elen / 70 + 2 + sizeof(end));
    char *w = out;
    memcpy(w, begin, sizeof(begin) - 1);
    w += sizeof(begin) - 1;
    for (size_t i = 0; i < elen; i += 70) {
        size_t n = elen - i < 70 ? elen - i : 70;
        memcpy(w, enc + i, n);
        w += n;
        *w++ = '\n';
    }
    memcpy(w, end, sizeof(end)); /* with its NUL */
    OPENSSL_cleanse(enc, elen);
    free(enc);
    return out;
}

int sshkey_generate(const char *comment, struct sshkey_pair *kp, struct drv_err *err)
{
    memset(kp, 0, sizeof(*kp));
    if (!comment)
        comment = "";
    if (strpbrk(comment, "\r\n"))
        return drv_err_set(err, DRV_EINVAL, 0, "ssh key comment holds a newline");

    EVP_PKEY *key = NULL;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, NULL);
    if (!ctx || EVP_PKEY_keygen_init(ctx) <= 0 || EVP_PKEY_keygen(ctx, &key) <= 0) {
        EVP_PKEY_CTX_free(ctx);
        return tls_err(err, "ed25519 key generation");
    }
    EVP_PKEY_CTX_free(ctx);
    unsigned char seed[32], pub[32];
    size_t sl = sizeof(seed), pl = sizeof(pub);
    if (EVP_PKEY_get_raw_private_key(key, seed, &sl) <= 0 ||
        EVP_PKEY_get_raw_public_key(key, pub, &pl) <= 0 || sl != 32 || pl != 32) {
        OPENSSL_cleanse(seed, sizeof(seed));
        EVP_PKEY_free(key);
        return tls_err(err, "ed25519 key export");
    }
    EVP_PKEY_free(key);

    struct strbuf pb = STRBUF_INIT_SECRET;
    public_blob(&pb, pub);
    char *enc = b64((const unsigned char *)pb.buf, pb.len);
    strbuf_release(&pb);
    kp->public_line =
        *comment ? xasprintf("%s %s %s", KEYTYPE, enc, comment) : xasprintf("%s %s", KEYTYPE, enc);
    free(enc);
    kp->private_pem = private_pem(seed, pub, comment);
    OPENSSL_cleanse(seed, sizeof(seed));
    return 0;
}

void sshkey_pair_clear(struct sshkey_pair *kp)
{
    if (kp->private_pem) {
        OPENSSL_cleanse(kp->private_pem, strlen(kp->private_pem));
        free(kp->private_pem);
    }
    free(kp->public_line);
    memset(kp, 0, sizeof(*kp));
}

int sshkey_fingerprint_blob(const unsigned char *blob, size_t len, char *out)
{
    unsigned char md[32];
    unsigned int mdlen = 0;
    EVP_Digest(blob, len, md, &mdlen, EVP_sha256(), NULL);
    char *enc = b64(md, mdlen);
    size_t n = strlen(enc);
    while (n > 0 && enc[n - 1] == '=')
        enc[--n] = '\0';
    snprintf(out, SSHKEY_FP_LEN, "SHA256:%s", enc);
    free(enc);
    return 0;
}

int sshkey_fingerprint_line(const char *line, char *out, char *type, size_t type_len,
                            struct drv_err *err)
{
    const char *p = line;
    while (*p == ' ' || *p == '\t')
        p++;
    const char *t = p;
    while (*p && *p != ' ' && *p != '\t')
        p++;
    size_t tlen = (size_t)(p - t);
    while (*p == ' ' || *p == '\t')
        p++;
    const char *d = p;
    while (*p && *p != ' ' && *p != '\t' && *p != '\r' && *p != '\n')
        p++;
    size_t dlen = (size_t)(p - d);
    if (tlen == 0 || tlen > 64 || dlen < 8 || dlen % 4 != 0 || dlen > 16384)
        return drv_err_set(err, DRV_EINVAL, 0, "not an ssh public key line");
    unsigned char *blob = xmalloc(dlen);
    int n = EVP_DecodeBlock(blob, (const unsigned char *)d, (int)dlen);
    if (n < 0) {
        free(blob);
        return drv_err_set(err, DRV_EINVAL, 0, "ssh public key: bad base64");
    }
    if (d[dlen - 1] == '=')
        n--;
    if (d[dlen - 2] == '=')
        n--;
    /* The blob starts with the type as an SSH string: it must match the line's. */
    uint32_t inner =
        n >= 4
            ? ((uint32_t)blob[0] << 24 | (uint32_t)blob[1] << 16 | (uint32_t)blob[2] << 8 | blob[3])
            : 0;
    if (n < 4 || inner != tlen || (size_t)n < 4 + tlen || memcmp(blob + 4, t, tlen) != 0) {
        free(blob);
        return drv_err_set(err, DRV_EINVAL, 0, "ssh public key: type and blob disagree");
    }
    sshkey_fingerprint_blob(blob, (size_t)n, out);
    free(blob);
    if (type && type_len) {
        size_t c = tlen < type_len - 1 ? tlen : type_len - 1;
        memcpy(type, t, c);
        type[c] = '\0';
    }
    return 0;
}
