/*
 * seal: secrets at rest and in transit, bound to their place (invariants 6
 * and 8, docs/architecture.md; docs/security.md, "Sealed values").
 *
 * Keys. The fleet key (secrets.key_file: 64 hex digits, mode 0600) lives
 * only on droverd. Each tenant has its own key, derived from it:
 *   tenant key = HKDF-SHA256(ikm = fleet key, salt = "drover-seal",
 *                            info = "drover tenant key v2:" + tenant name)
 * A worker is given only its tenant's key (a file the operator derives with
 * `drover key derive`), never the fleet key.
 *
 * Format. A sealed value is "enc:v2:" + base64(nonce 12 || AES-256-GCM
 * ciphertext || tag 16) under the tenant key. The plaintext is one type byte
 * ('s': a string's text follows; 'j': the compact JSON of any other value)
 * and the bytes. The associated data is its place, struct seal_place:
 * the tenant, the entity's kind and name, and the field's path in the
 * entity, each as a 4-byte big-endian length and its bytes after the label
 * "drover-seal-v2". A value moved to another tenant (another key and another
 * tenant in the associated data), another entity or another field fails to
 * open with DRV_ETLS, and no message ever carries its text.
 *
 * The places (the opener computes them from where a value is, never from the
 * value):
 *   provider        <provider name>        provisioner.<path>
 *   clustertemplate <template name>        defaults.config.<path>
 *   partialtemplate <template name>        defaults.config.<path>
 *   cluster         <cluster name>         config.<path>, ssh.private_key
 *   node            <cluster name>/<node>  <result key>
 * A path joins object keys with "." and gives array indexes as "[i]".
 *
 * Legacy. "enc:v1:" (a string) and "enc:j1:" (JSON) are the format before:
 * one fleet-wide key, no place. Only droverd's start-up migration opens them
 * (seal_open_legacy, seal_migrate_tree) and seals them again in place.
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

#define SEAL_PREFIX "enc:v2:"
#define SEAL_LEGACY_TEXT "enc:v1:"
#define SEAL_LEGACY_JSON "enc:j1:"

/* Where a sealed value lives: its associated data. All four are non-NULL ("" allowed). */
struct seal_place {
    const char *tenant; /* the tenant's name */
    const char *kind;   /* "provider", "clustertemplate", "partialtemplate", "cluster", "node" */
    const char *name;   /* the entity's name; a node: "<cluster name>/<node id>" */
    const char *field;  /* the field's path in the entity: "provisioner.api_password" */
};

/* Read a key file (fleet or tenant key): DRV_EIO (cannot be read), DRV_EINVAL (readable by
 * others, not 64 hex digits). what names the setting in messages ("secrets.key_file"). */
int seal_key_load(const char *what, const char *path, unsigned char key[32], struct drv_err *err);

/* The tenant's key from the fleet key (HKDF-SHA256, above). Never fails. */
void seal_tenant_key(const unsigned char fleet[32], const char *tenant, unsigned char out[32]);

/*
 * The ZooKeeper digest credentials of the tenant's workers (docs/zookeeper-tree.md, "ACLs"):
 * user "worker.<tenant>" (into user, un bytes) and as password 64 hex digits and a NUL of
 * HKDF-SHA256(fleet key, salt "drover-seal", info "drover worker zookeeper v1:" + tenant).
 * droverd grants with them; `drover key worker-zk` gives them to the operator. Never fails.
 */
void seal_worker_zk(const unsigned char fleet[32], const char *tenant, char *user, size_t un,
                    char password[65]);

/* Seal any JSON value at its place under the tenant's key: "enc:v2:..." (new string). */
char *seal_value_at(const unsigned char tkey[32], const struct seal_place *at, const json_t *v);

/*
 * Open a value sealed at exactly this place (new reference in *out).
 * DRV_EINVAL: not "enc:v2:", malformed; DRV_ETLS: sealed for another tenant,
 * entity or field, or altered. err never carries the value's text.
 */
int seal_open_at(const unsigned char tkey[32], const struct seal_place *at, const char *sealed,
                 json_t **out, struct drv_err *err);

/* Does s look sealed ("enc:" and anything)? What the API refuses as input. */
bool seal_looks_sealed(const char *s);
/* Is s sealed in the legacy format ("enc:v1:" or "enc:j1:")? */
bool seal_is_legacy(const char *s);

/* Open a legacy value under the fleet key (new reference): DRV_EINVAL, DRV_ETLS. */
int seal_open_legacy(const unsigned char fleet[32], const char *sealed, json_t **out,
                     struct drv_err *err);

/*
 * Open in place every string that looks sealed inside j (objects and arrays
 * at any depth; j itself must be an object or array). Each one's place is
 * base with field = base->field + "." + its path inside j (base->field ""
 * means just its path). The first failure stops it: err names the path
 * ("provisioner.api_password"), never the value; a legacy or unknown format
 * is DRV_EINVAL.
 */
int seal_open_tree(const unsigned char tkey[32], const struct seal_place *base, json_t *j,
                   struct drv_err *err);

/*
 * The start-up migration: seal again, in place, every legacy value inside j
 * (as seal_open_tree finds them) at its place, under the tenant key derived
 * from fleet for base->tenant. *n gets the number re-sealed. A legacy value
 * that does not open under the fleet key stops it (DRV_ETLS, err names the
 * path); j is then left unchanged.
 */
int seal_migrate_tree(const unsigned char fleet[32], const struct seal_place *base, json_t *j,
                      int *n, struct drv_err *err);

/*
 * Move, in place, the sealed values inside j from one place to another: a
 * value at path p inside j that opens at from (field = from->field + p) is
 * sealed again at to (field = to->field + p); one that already opens at to
 * stays. Both places are of the tenant of tkey. One that opens at neither
 * stops it (DRV_ETLS, err names its path at to); j is then unchanged.
 */
int seal_rebind_tree(const unsigned char tkey[32], const struct seal_place *from,
                     const struct seal_place *to, json_t *j, struct drv_err *err);

/* Wipe s (strlen bytes) and free it. NULL is fine. */
void seal_wipe_free(char *s);

#endif
