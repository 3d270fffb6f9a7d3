/*
 * Unit tests for sshkey: the encodings, checked by decoding them again. That
 * OpenSSH and libssh2 accept the keys is checked against a real sshd by the
 * integration test plugins_sshkey. free() is wrapped (-Wl,--wrap=free, see
 * CMakeLists.txt) to check that no block freed while a key is made still holds
 * the raw private key encoding.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "sshkey.h"

/* The start of the raw private key encoding, which only the secret buffers hold. */
static const char magic[] = "openssh-key-v1\0\0\0\0\4none";

void __real_free(void *p);
void __wrap_free(void *p);

static bool watching;
static size_t frees_with_magic;

void __wrap_free(void *p)
{
    if (p && watching && memmem(p, malloc_usable_size(p), magic, sizeof(magic) - 1))
        frees_with_magic++;
    __real_free(p);
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Decode base64 ignoring newlines; returns the length. */
static size_t unb64(const char *in, size_t len, unsigned char *out)
{
    char *flat = malloc(len + 1);
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        if (in[i] != '\n')
            flat[n++] = in[i];
    int r = EVP_DecodeBlock(out, (unsigned char *)flat, (int)n);
    assert_true(r >= 0);
    size_t pad = (n >= 1 && flat[n - 1] == '=') + (n >= 2 && flat[n - 2] == '=');
    free(flat);
    return (size_t)r - pad;
}

static void test_public_line(void **state)
{
    struct sshkey_pair kp;
    struct drv_err err;
    assert_int_equal(sshkey_generate("cluster-7", &kp, &err), 0);
    assert_non_null(kp.public_line);
    assert_int_equal(strncmp(kp.public_line, "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI", 37), 0);
    const char *sp = strrchr(kp.public_line, ' ');
    assert_string_equal(sp + 1, "cluster-7");
    assert_null(strchr(kp.public_line, '\n'));
    char fp[SSHKEY_FP_LEN], type[32];
    assert_int_equal(sshkey_fingerprint_line(kp.public_line, fp, type, sizeof(type), &err), 0);
    assert_string_equal(type, "ssh-ed25519");
    assert_int_equal(strlen(fp), 50);
    assert_int_equal(strncmp(fp, "SHA256:", 7), 0);
    sshkey_pair_clear(&kp);
    assert_null(kp.public_line);
    assert_null(kp.private_pem);
}

static void test_private_key_layout(void **state)
{
    struct sshkey_pair kp;
    assert_int_equal(sshkey_generate("c", &kp, NULL), 0);
    const char *begin = "-----BEGIN OPENSSH PRIVATE KEY-----\n";
    const char *end = "-----END OPENSSH PRIVATE KEY-----\n";
    assert_int_equal(strncmp(kp.private_pem, begin, strlen(begin)), 0);
    size_t len = strlen(kp.private_pem);
    assert_string_equal(kp.private_pem + len - strlen(end), end);
    const char *body = kp.private_pem + strlen(begin);
    size_t blen = len - strlen(begin) - strlen(end);
    /* Lines of at most 70 characters, as ssh-keygen writes them. */
    for (const char *p = body; p < body + blen;) {
        const char *nl = memchr(p, '\n', (size_t)(body + blen - p));
        assert_non_null(nl);
        assert_true(nl - p <= 70);
        p = nl + 1;
    }
    unsigned char *raw = malloc(blen);
    size_t n = unb64(body, blen, raw);
    assert_memory_equal(raw, "openssh-key-v1\0", 15);
    size_t off = 15;
    assert_int_equal(be32(raw + off), 4); /* cipher "none" */
    assert_memory_equal(raw + off + 4, "none", 4);
    off += 8;
    assert_int_equal(be32(raw + off), 4); /* kdf "none" */
    off += 8;
    assert_int_equal(be32(raw + off), 0); /* kdf options */
    off += 4;
    assert_int_equal(be32(raw + off), 1); /* one key */
    off += 4;
    uint32_t publen = be32(raw + off);
    assert_int_equal(publen, 4 + 11 + 4 + 32);
    const unsigned char *pubblob = raw + off + 4;
    off += 4 + publen;
    uint32_t seclen = be32(raw + off);
    off += 4;
    assert_int_equal(off + seclen, n);
    assert_int_equal(seclen % 8, 0);
    const unsigned char *sec = raw + off;
    assert_int_equal(be32(sec), be32(sec + 4));    /* the check words */
    assert_memory_equal(sec + 8, pubblob, publen); /* type and public key again */
    assert_int_equal(be32(sec + 8 + publen), 64);
    /* The private half ends with the public key, as OpenSSH keeps it. */
    assert_memory_equal(sec + 8 + publen + 4 + 32, pubblob + 4 + 11 + 4, 32);
    /* The public blob is the one in the public line. */
    char fp1[SSHKEY_FP_LEN], fp2[SSHKEY_FP_LEN];
    sshkey_fingerprint_blob(pubblob, publen, fp1);
    assert_int_equal(sshkey_fingerprint_line(kp.public_line, fp2, NULL, 0, NULL), 0);
    assert_string_equal(fp1, fp2);
    free(raw);
    sshkey_pair_clear(&kp);
}

static void test_keys_differ(void **state)
{
    struct sshkey_pair a, b;
    assert_int_equal(sshkey_generate(NULL, &a, NULL), 0);
    assert_int_equal(sshkey_generate("", &b, NULL), 0);
    assert_string_not_equal(a.public_line, b.public_line);
    assert_string_not_equal(a.private_pem, b.private_pem);
    /* No comment: two fields only. */
    assert_ptr_equal(strchr(a.public_line, ' '), strrchr(a.public_line, ' '));
    sshkey_pair_clear(&a);
    sshkey_pair_clear(&b);
}

static void test_bad_input(void **state)
{
    struct sshkey_pair kp;
    struct drv_err err;
    assert_int_equal(sshkey_generate("two\nlines", &kp, &err), DRV_EINVAL);
    assert_null(kp.public_line);
    char fp[SSHKEY_FP_LEN];
    assert_int_equal(sshkey_fingerprint_line("garbage", fp, NULL, 0, &err), DRV_EINVAL);
    assert_int_equal(sshkey_fingerprint_line("ssh-rsa AAAAC3NzaC1lZDI1NTE5AAAAIDtNmo3jYs1QibCNgiIRp"
                                             "cQGit0Bqixdl0nM+FbDxz9L",
                                             fp, NULL, 0, &err),
                     DRV_EINVAL); /* type and blob disagree */
    /* A known key and the fingerprint ssh-keygen -l prints for it. */
    assert_int_equal(sshkey_fingerprint_line("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDtNmo3jYs1QibC"
                                             "NgiIRpcQGit0Bqixdl0nM+FbDxz9L mykey",
                                             fp, NULL, 0, &err),
                     0);
    assert_string_equal(fp, "SHA256:UUNnUEbavUs+w5IPvFFuGP98BRcvQQzN3W8x3I2igIA");
}

static void test_secrets_wiped(void **state)
{
    /* The wrap sees the magic in a block freed (the control). */
    watching = true;
    char *control = malloc(64);
    memcpy(control, magic, sizeof(magic));
    free(control);
    assert_int_equal(frees_with_magic, 1);
    frees_with_magic = 0;
    for (int i = 0; i < 20; i++) {
        struct sshkey_pair kp;
        assert_int_equal(
            sshkey_generate("a comment long enough to make the buffers grow", &kp, NULL), 0);
        sshkey_pair_clear(&kp);
    }
    watching = false;
    assert_int_equal(frees_with_magic, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_public_line),   cmocka_unit_test(test_private_key_layout),
        cmocka_unit_test(test_keys_differ),   cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_secrets_wiped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
