/*
 * resbundle: a tenant's resources as one JSON document (docs/api.md
 * "Resources"): an object of relative paths to files, each either a base64
 * string (written mode 0600) or {"data": base64, "exec": true} (mode 0700);
 * directories 0700 (the plugin user owns them: docs/security.md).
 *
 * The API checks a push with resbundle_check and stores its canonical text
 * (resbundle_canonical: compact, keys sorted), whose SHA-256 is the version's
 * checksum. The worker verifies that checksum on what it fetched and writes the
 * files with resbundle_unpack. Pure but for resbundle_unpack (files) and
 * thread-safe: no global state.
 */
#ifndef DROVER_RESBUNDLE_H
#define DROVER_RESBUNDLE_H

#include <jansson.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"

#define RESBUNDLE_MAX_FILES 4096
#define RESBUNDLE_MAX_PATH 1024

/*
 * 0 when files is a well-formed bundle whose decoded content is at most max
 * bytes (*total receives it); else DRV_EINVAL (DRV_ETOOBIG past max) with err
 * naming the file: paths must be relative, without "", "." or ".." components,
 * backslashes or control characters, and no path may be a directory of another.
 */
int resbundle_check(const json_t *files, size_t max, size_t *total, struct drv_err *err);

/* The canonical text of a bundle (caller frees). */
char *resbundle_canonical(const json_t *files);

/* SHA-256 of n bytes as 64 lowercase hex digits and a NUL. */
void resbundle_sha256_hex(const void *data, size_t n, char out[65]);

/*
 * Write the checked bundle's files under dir, which must not exist (made 0700,
 * subdirectories too; files 0600, executables 0700), owned by uid:gid unless uid
 * is (uid_t)-1; no link is followed or made; each file is written and fsynced. On error what was
 * written stays: the caller removes dir (resbundle_rmtree).
 */
int resbundle_unpack(const json_t *files, const char *dir, uid_t uid, gid_t gid,
                     struct drv_err *err);

/* Remove dir and everything below it (no symlink is followed). 0 or a DRV code. */
int resbundle_rmtree(const char *dir);

#endif
