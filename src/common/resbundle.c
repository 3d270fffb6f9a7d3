/*
 * resbundle: check, hash and unpack a tenant's resources (resbundle.h).
 *
 * A path is checked component by component, so that unpacking can never
 * leave dir: no absolute path, no "..", no empty or "." component, no
 * backslash or control character. A path that is also the directory of
 * another path is refused (a file cannot be both). Unpacking opens each file
 * with O_EXCL | O_NOFOLLOW below a directory it made itself, so nothing
 * outside dir is ever written even if the bundle came from elsewhere.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/sha.h>

#include "hex.h"
#include "resbundle.h"
#include "xalloc.h"

static int path_ok(const char *p)
{
    size_t n = strlen(p);
    if (n == 0 || n > RESBUNDLE_MAX_PATH || p[0] == '/')
        return 0;
    for (const char *c = p; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f || *c == '\\')
            return 0;
    const char *s = p;
    for (;;) {
        const char *e = strchr(s, '/');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (len == 0 || (len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' && s[1] == '.'))
            return 0;
        if (!e)
            return 1;
        s = e + 1;
    }
}

static const char *data_of(const json_t *v, int *exec)
{
    *exec = 0;
    if (json_is_string(v))
        return json_string_value(v);
    if (!json_is_object(v))
        return NULL;
    const json_t *x = json_object_get(v, "exec");
    if (x && !json_is_boolean(x))
        return NULL;
    *exec = json_is_true(x);
    return json_string_value(json_object_get(v, "data"));
}

/* Decoded length of base64 text, or -1 when it is not base64. */
static long b64_len(const char *s)
{
    size_t n = strlen(s);
    if (n % 4)
        return -1;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool pad = c == '=' && i >= n - 2 && (i == n - 1 || s[n - 1] == '=');
        if (!pad && !(c >= 'A' && c <= 'Z') && !(c >= 'a' && c <= 'z') && !(c >= '0' && c <= '9') &&
            c != '+' && c != '/')
            return -1;
    }
    long len = (long)(n / 4 * 3);
    if (n && s[n - 1] == '=')
        len--;
    if (n > 1 && s[n - 2] == '=')
        len--;
    return len;
}

int resbundle_check(const json_t *files, size_t max, size_t *total, struct drv_err *err)
{
    *total = 0;
    if (!json_is_object(files))
        return drv_err_set(err, DRV_EINVAL, 0, "expected an object of paths to files");
    if (json_object_size(files) > RESBUNDLE_MAX_FILES)
        return drv_err_set(err, DRV_ETOOBIG, 0, "more than %d files", RESBUNDLE_MAX_FILES);
    const char *path;
    const json_t *v;
    json_object_foreach((json_t *)files, path, v)
    {
        if (!path_ok(path))
            return drv_err_set(err, DRV_EINVAL, 0,
                               "path \"%.200s\": must be relative, without \"..\", \".\" or "
                               "empty components",
                               path);
        int exec;
        const char *d = data_of(v, &exec);
        long len = d ? b64_len(d) : -1;
        if (len < 0)
            return drv_err_set(err, DRV_EINVAL, 0,
                               "path \"%.200s\": expected base64 or {\"data\": base64, "
                               "\"exec\": bool}",
                               path);
        *total += (size_t)len;
        if (*total > max)
            return drv_err_set(err, DRV_ETOOBIG, 0, "resources larger than %zu bytes", max);
        /* No parent directory of this path may be a file. */
        char *dir = xstrdup(path);
        for (char *s = strrchr(dir, '/'); s; s = strrchr(dir, '/')) {
            *s = '\0';
            if (json_object_get(files, dir)) {
                int rc = drv_err_set(err, DRV_EINVAL, 0,
                                     "path \"%.200s\": \"%.200s\" is a file, not a directory", path,
                                     dir);
                free(dir);
                return rc;
            }
        }
        free(dir);
    }
    return 0;
}

char *resbundle_canonical(const json_t *files)
{
    return json_dumps(files, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
}

void resbundle_sha256_hex(const void *data, size_t n, char out[65])
{
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256(data, n, md);
    hex_encode(md, SHA256_DIGEST_LENGTH, out);
}

/* Give path to uid:gid ((uid_t)-1: leave it), never following a link. */
static int own(const char *path, uid_t uid, gid_t gid, struct drv_err *err)
{
    if (uid != (uid_t)-1 && lchown(path, uid, gid) != 0)
        return drv_err_set(err, DRV_EIO, errno, "chown %s: %s", path, strerror(errno));
    return 0;
}

static int mkdirs(const char *dir, const char *rel, uid_t uid, gid_t gid, struct drv_err *err)
{
    char *p = xasprintf("%s/%s", dir, rel);
    size_t base = strlen(dir) + 1;
    for (char *s = strchr(p + base, '/'); s; s = strchr(s + 1, '/')) {
        *s = '\0';
        int rc = 0;
        if (mkdir(p, 0700) == 0)
            rc = own(p, uid, gid, err);
        else if (errno != EEXIST)
            rc = drv_err_set(err, DRV_EIO, errno, "mkdir %s: %s", p, strerror(errno));
        if (rc) {
            free(p);
            return rc;
        }
        *s = '/';
    }
    free(p);
    return 0;
}

int resbundle_unpack(const json_t *files, const char *dir, uid_t uid, gid_t gid,
                     struct drv_err *err)
{
    if (mkdir(dir, 0700) != 0)
        return drv_err_set(err, DRV_EIO, errno, "mkdir %s: %s", dir, strerror(errno));
    if (own(dir, uid, gid, err) != 0)
        return err->code;
    const char *path;
    const json_t *v;
    json_object_foreach((json_t *)files, path, v)
    {
        int exec;
        const char *d = data_of(v, &exec);
        long len = d && path_ok(path) ? b64_len(d) : -1;
        if (len < 0)
            return drv_err_set(err, DRV_EINVAL, 0, "path \"%.200s\": not a valid file", path);
        int rc = mkdirs(dir, path, uid, gid, err);
        if (rc)
            return rc;
        unsigned char *buf = xmalloc(strlen(d) / 4 * 3 + 1);
        if (*d && EVP_DecodeBlock(buf, (const unsigned char *)d, (int)strlen(d)) < 0) {
            free(buf);
            return drv_err_set(err, DRV_EINVAL, 0, "path \"%.200s\": bad base64", path);
        }
        char *full = xasprintf("%s/%s", dir, path);
        int fd =
            open(full, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, exec ? 0700 : 0600);
        rc = 0;
        if (fd < 0)
            rc = drv_err_set(err, DRV_EIO, errno, "open %s: %s", full, strerror(errno));
        else if (uid != (uid_t)-1 && fchown(fd, uid, gid) != 0)
            rc = drv_err_set(err, DRV_EIO, errno, "chown %s: %s", full, strerror(errno));
        for (long off = 0; rc == 0 && off < len;) {
            ssize_t w = write(fd, buf + off, (size_t)(len - off));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                rc = drv_err_set(err, DRV_EIO, errno, "write %s: %s", full, strerror(errno));
            else
                off += w;
        }
        if (rc == 0 && fsync(fd) != 0)
            rc = drv_err_set(err, DRV_EIO, errno, "fsync %s: %s", full, strerror(errno));
        if (fd >= 0)
            close(fd);
        free(full);
        free(buf);
        if (rc)
            return rc;
    }
    return 0;
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)st;
    (void)f;
    return flag == FTW_DP ? rmdir(p) : unlink(p);
}

int resbundle_rmtree(const char *dir)
{
    if (nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS) != 0 && errno != ENOENT)
        return DRV_EIO;
    return 0;
}
