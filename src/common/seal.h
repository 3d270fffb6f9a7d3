/*
 * seal: secrets at rest and in transit through ZooKeeper (invariant 6,
 * docs/architecture.md).
 *
 * A sealed string is "enc:v1:" + base64(nonce 12 || AES-256-GCM ciphertext ||
 * tag 16) of its text; any other sealed JSON value (an object, an array, a
 * number) is "enc:j1:" + the same of its compact JSON text; both under the
 * fleet's 32-byte key (secrets.key_file: 64 hex digits,
 * mode 0600, the same file on every droverd and worker). droverd seals what
 * it stores; the secret travels sealed through PostgreSQL and ZooKeeper; a
 * worker opens it just before a plugin's standard input and seals what a
 * plugin returns as sensitive. So a secret is in clear only in memory.
 *
 * Pure functions, any thread. Returned strings belong to the caller; wipe
 * and free them with seal_wipe_free().
 */
#ifndef DROVER_SEAL_H
#define DROVER_SEAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"

#define SEAL_PREFIX "enc:v1:"
#define SEAL_JSON_PREFIX "enc:j1:"

/* Read the key file: DRV_EIO (cannot be read), DRV_EINVAL (readable by others, not 64 hex digits).
 */
int seal_key_load(const char *path, unsigned char key[32], struct drv_err *err);

/* Seal text as "enc:v1:" (never fails). */
char *seal_text(const unsigned char key[32], const char *text);
/* Seal n bytes of text under a given prefix. */
char *seal_prefixed(const unsigned char key[32], const char *prefix, const char *text, size_t n);
/* Open an "enc:v1:" value into *text: DRV_EINVAL (not sealed, malformed), DRV_ETLS (wrong key). */
int seal_open(const unsigned char key[32], const char *enc, char **text, struct drv_err *err);
/* Open a value sealed under prefix; *n_out (may be NULL) gets its length. */
int seal_open_prefixed(const unsigned char key[32], const char *prefix, const char *enc,
                       char **text, size_t *n_out, struct drv_err *err);
/* Seal any JSON value: a string as "enc:v1:", anything else as "enc:j1:" (new string). */
char *seal_value(const unsigned char key[32], const json_t *v);
/* Open either form into the JSON value it was (new reference). */
int seal_open_value(const unsigned char key[32], const char *sealed, json_t **out,
                    struct drv_err *err);
/* Is s a sealed value (either form)? */
bool seal_is_sealed(const char *s);

/*
 * Open, in place, every sealed string anywhere in j (objects and arrays, at
 * any depth). The first failure stops it: DRV_EINVAL/DRV_ETLS, err names the
 * key path ("config.provider.api_password").
 */
int seal_open_json(const unsigned char key[32], json_t *j, struct drv_err *err);

/* Wipe s (strlen bytes) and free it. NULL is fine. */
void seal_wipe_free(char *s);

#endif
