/*
 * poolzk: ssh-pool's claims in ZooKeeper, with the client's synchronous calls
 * (see poolzk.h for the znodes and why a plain create is the whole lock).
 */
#include "poolzk.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/sha.h>
#include <zookeeper/zookeeper.h>

#include "clock.h"
#include "log.h"
#include "plugin.h"
#include "xalloc.h"
#include "zkpath.h"

#define MAX_ACL 4 /* the owner, the creator, two readers */

struct poolzk {
    zhandle_t *zh;
    struct ACL acl_data[MAX_ACL];
    char ids[MAX_ACL][128];
    struct ACL_vector acl; /* every znode the plugin creates, but in a shared pool: */
    struct ACL claim_data[MAX_ACL], marker_data[MAX_ACL];
    struct ACL_vector claim_acl;  /* a claim: the creator reads, writes, admins (no children) */
    struct ACL_vector marker_acl; /* a release marker: the creator reads */
    char self[256]; /* this identity's digest id, "user:base64(sha1(user:password))", or "" */
};

/* An operator's shared pool ("_operator/<name>"): claims are given back through droverd. */
static bool shared(const char *pool)
{
    return strncmp(pool, "_operator/", 10) == 0;
}

/* v: z->acl with the creator's entry (ZOO_AUTH_IDS) given perms, into data. */
static void acl_variant(struct poolzk *z, struct ACL *data, int perms, struct ACL_vector *v)
{
    for (int i = 0; i < z->acl.count; i++) {
        data[i] = z->acl.data[i];
        if (strcmp(data[i].id.scheme, "auth") == 0 && data[i].perms != ZOO_PERM_ALL)
            data[i].perms = perms;
    }
    *v = (struct ACL_vector){.count = z->acl.count, .data = data};
}

static int zerr(struct drv_err *err, int rc, const char *what, const char *path)
{
    if (rc == ZNOAUTH)
        return drv_err_set(err, DRV_EZK, rc,
                           "zookeeper %s \"%s\": not authenticated (this tenant's workers "
                           "reach their own pools/<tenant>, which droverd makes when it lets the "
                           "tenant in, and an operator's pool only when droverd's "
                           "zookeeper.pool_grants grants it to the tenant)",
                           what, path);
    return drv_err_set(err, DRV_EZK, rc, "zookeeper %s \"%s\": %s", what, path, zerror(rc));
}

/* The ACL of every znode the plugin creates, as coord gives a tenant's pools
   (docs/zookeeper-tree.md "ACLs"): all for owner (droverd's digest id) when given, read,
   write, create and delete for the creating identity (all when no owner), read for each
   reader. ZooKeeper hides digest hashes from a reader without admin rights, so the plugin
   cannot copy a parent's ACL: the worker hands it the ids. */
static int build_acl(struct poolzk *z, const char *owner, const char *readers, struct drv_err *err)
{
    int n = 0;
    const int rwcd = ZOO_PERM_READ | ZOO_PERM_WRITE | ZOO_PERM_CREATE | ZOO_PERM_DELETE;
    bool has_owner = owner && *owner;
    if (has_owner) {
        if (strlen(owner) >= sizeof(z->ids[0]) || !strchr(owner, ':'))
            return drv_err_set(err, DRV_EINVAL, 0,
                               "the task's zookeeper.acl_owner: expected a digest id user:hash");
        snprintf(z->ids[n], sizeof(z->ids[n]), "%s", owner);
        z->acl_data[n++] =
            (struct ACL){.perms = ZOO_PERM_ALL, .id = {.scheme = "digest", .id = z->ids[0]}};
    }
    z->acl_data[n++] = (struct ACL){.perms = has_owner ? rwcd : ZOO_PERM_ALL, .id = ZOO_AUTH_IDS};
    const char *r = readers ? readers : "";
    while (*r) {
        while (*r == ' ' || *r == ',')
            r++;
        size_t len = strcspn(r, ",");
        while (len && r[len - 1] == ' ')
            len--;
        if (!len)
            break;
        if (n >= MAX_ACL || len >= sizeof(z->ids[0]) || !memchr(r, ':', len))
            return drv_err_set(err, DRV_EINVAL, 0,
                               "the task's zookeeper.acl_readers: expected at most %d digest ids "
                               "user:hash",
                               MAX_ACL - 2);
        snprintf(z->ids[n], sizeof(z->ids[n]), "%.*s", (int)len, r);
        z->acl_data[n] =
            (struct ACL){.perms = ZOO_PERM_READ, .id = {.scheme = "digest", .id = z->ids[n]}};
        n++;
        r += len;
        r += strcspn(r, ",");
    }
    z->acl = (struct ACL_vector){.count = n, .data = z->acl_data};
    /* Admin on its own claim: ZooKeeper then shows the claim's ACL with the creator's
       digest id in full, which is how poolzk_find knows a claim is this tenant's. */
    acl_variant(z, z->claim_data, ZOO_PERM_READ | ZOO_PERM_WRITE | ZOO_PERM_ADMIN, &z->claim_acl);
    acl_variant(z, z->marker_data, ZOO_PERM_READ, &z->marker_acl);
    return 0;
}

/* The digest id ZooKeeper keeps for credentials "user:password": user:base64(sha1(cred)). */
static void self_id(const char *cred, char *out, size_t n)
{
    unsigned char md[SHA_DIGEST_LENGTH];
    SHA1((const unsigned char *)cred, strlen(cred), md);
    char b64[4 * ((SHA_DIGEST_LENGTH + 2) / 3) + 1];
    EVP_EncodeBlock((unsigned char *)b64, md, SHA_DIGEST_LENGTH);
    snprintf(out, n, "%.*s:%s", (int)(strchr(cred, ':') - cred), cred, b64);
}

static int read_digest(const char *path, char *out, size_t n, struct drv_err *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return drv_err_set(err, DRV_EIO, errno, "DROVER_ZK_DIGEST_FILE \"%s\": %s", path,
                           strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || (st.st_mode & 077)) {
        close(fd);
        return drv_err_set(err, DRV_EINVAL, 0,
                           "DROVER_ZK_DIGEST_FILE \"%s\": readable by others (chmod 600 it)", path);
    }
    ssize_t r = read(fd, out, n - 1);
    close(fd);
    if (r <= 0)
        return drv_err_set(err, DRV_EINVAL, 0, "DROVER_ZK_DIGEST_FILE \"%s\": empty", path);
    out[r] = '\0';
    out[strcspn(out, "\r\n")] = '\0';
    char *colon = strchr(out, ':');
    if (!colon || colon == out || !colon[1]) {
        explicit_bzero(out, n);
        return drv_err_set(err, DRV_EINVAL, 0,
                           "DROVER_ZK_DIGEST_FILE \"%s\": expected one line \"user:password\"",
                           path);
    }
    return 0;
}

struct poolzk *poolzk_open(const char *hosts, const char *digest, const char *digest_file,
                           const char *acl_owner, const char *acl_readers, int64_t deadline_ms,
                           struct drv_err *err)
{
    if (!hosts || !*hosts) {
        drv_err_set(err, DRV_EINVAL, 0,
                    "DROVER_ZK_HOSTS is not set: ssh-pool keeps its claims in ZooKeeper");
        return NULL;
    }
    zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
    struct poolzk *z = xcalloc(1, sizeof(*z));
    z->acl = z->claim_acl = z->marker_acl = ZOO_OPEN_ACL_UNSAFE;
    z->zh = zookeeper_init2(hosts, NULL, 15000, NULL, NULL, 0, log_zk_callback);
    if (!z->zh) {
        drv_err_set(err, DRV_EZK, errno, "zookeeper \"%s\": %s", hosts, strerror(errno));
        free(z);
        return NULL;
    }
    while (zoo_state(z->zh) != ZOO_CONNECTED_STATE) {
        if (clock_mono_ms() >= deadline_ms) {
            drv_err_set(err, DRV_ETIMEDOUT, 0, "zookeeper \"%s\": not connected in time", hosts);
            poolzk_close(z);
            return NULL;
        }
        usleep(10000);
    }
    if ((digest && *digest) || (digest_file && *digest_file)) {
        char cred[400];
        if (digest && *digest) {
            snprintf(cred, sizeof(cred), "%s", digest);
            if (!strchr(cred, ':')) {
                explicit_bzero(cred, sizeof(cred));
                drv_err_set(err, DRV_EINVAL, 0,
                            "the task's zookeeper.digest: expected \"user:password\"");
                poolzk_close(z);
                return NULL;
            }
        } else if (read_digest(digest_file, cred, sizeof(cred), err) != 0) {
            poolzk_close(z);
            return NULL;
        }
        char user[200];
        snprintf(user, sizeof(user), "%.*s", (int)(strchr(cred, ':') - cred), cred);
        self_id(cred, z->self, sizeof(z->self));
        int rc = zoo_add_auth(z->zh, "digest", cred, (int)strlen(cred), NULL, NULL);
        explicit_bzero(cred, sizeof(cred));
        if (rc != ZOK) {
            zerr(err, rc, "add digest auth for", user);
            poolzk_close(z);
            return NULL;
        }
        if (build_acl(z, acl_owner, acl_readers, err) != 0) {
            poolzk_close(z);
            return NULL;
        }
    }
    return z;
}

void poolzk_close(struct poolzk *z)
{
    if (!z)
        return;
    if (z->zh)
        zookeeper_close(z->zh);
    free(z);
}

int poolzk_ensure(struct poolzk *z, const char *pool, struct drv_err *err)
{
    char dir[512], path[512];
    if (!zkpath_pool_claims(dir, sizeof(dir), pool))
        return drv_err_set(err, DRV_EINVAL, 0, "pool name \"%.60s...\" is too long", pool);
    /* Each ancestor that is missing: /drover, /drover/pools, /drover/pools/<tenant>, <pool>,
       then claims. Exists first: a create where this identity may not create is refused
       even when the znode is there (droverd makes pools/<tenant> and the operator's pools). */
    for (const char *sl = strchr(dir + 1, '/');; sl = strchr(sl + 1, '/')) {
        size_t len = sl ? (size_t)(sl - dir) : strlen(dir);
        memcpy(path, dir, len);
        path[len] = '\0';
        int rc = zoo_exists(z->zh, path, 0, NULL);
        if (rc == ZNONODE) {
            rc = zoo_create(z->zh, path, "{}", 2, &z->acl, 0, NULL, 0);
            if (rc == ZNODEEXISTS)
                rc = ZOK;
        }
        if (rc != ZOK)
            return zerr(err, rc, "create", path);
        if (!sl)
            return 0;
    }
}

int poolzk_claim(struct poolzk *z, const char *pool, const char *host, json_t *data,
                 struct drv_err *err)
{
    char path[600], legacy[300];
    /* A host claimed under the former layout, pools/<tenant>.<pool> (before the claims moved
       under pools/<tenant>/), stays claimed: exists needs no permission, so any identity sees
       it. The operator deletes such a znode once its node is gone (docs/zookeeper-tree.md). */
    snprintf(legacy, sizeof(legacy), "%s", pool);
    char *sl = strchr(legacy, '/');
    if (sl) {
        *sl = '.';
        zkpath_pool_claim(path, sizeof(path), legacy, host);
        int rc = zoo_exists(z->zh, path, 0, NULL);
        if (rc == ZOK)
            return DRV_EEXIST;
        if (rc != ZNONODE)
            return zerr(err, rc, "exists", path);
    }
    zkpath_pool_claim(path, sizeof(path), pool, host);
    char *s = json_dumps(data, JSON_COMPACT | JSON_SORT_KEYS);
    int rc = zoo_create(z->zh, path, s, (int)strlen(s), shared(pool) ? &z->claim_acl : &z->acl, 0,
                        NULL, 0);
    free(s);
    if (rc == ZNODEEXISTS)
        return DRV_EEXIST;
    if (rc != ZOK)
        return zerr(err, rc, "create", path);
    return 0;
}

int poolzk_get(struct poolzk *z, const char *pool, const char *host, json_t **data, int *version,
               struct drv_err *err)
{
    char path[600], buf[8192];
    zkpath_pool_claim(path, sizeof(path), pool, host);
    int len = sizeof(buf) - 1;
    struct Stat st;
    int rc = zoo_get(z->zh, path, 0, buf, &len, &st);
    if (rc == ZNONODE)
        return DRV_ENOENT;
    if (rc != ZOK)
        return zerr(err, rc, "get", path);
    buf[len < 0 ? 0 : len] = '\0';
    json_t *j = json_loads(buf, 0, NULL);
    if (!json_is_object(j)) {
        json_decref(j);
        j = json_object();
    }
    *data = j;
    if (version)
        *version = st.version;
    return 0;
}

int poolzk_set(struct poolzk *z, const char *pool, const char *host, json_t *data, int version,
               struct drv_err *err)
{
    char path[600];
    zkpath_pool_claim(path, sizeof(path), pool, host);
    char *s = json_dumps(data, JSON_COMPACT | JSON_SORT_KEYS);
    int rc = zoo_set(z->zh, path, s, (int)strlen(s), version);
    free(s);
    if (rc != ZOK)
        return zerr(err, rc, "set", path);
    return 0;
}

/*
 * Whether the claim at path was made by this identity's tenant: in an operator's shared
 * pool any granted tenant may create a claim, with the data and the ACL it likes, so a
 * claim naming this tenant's node proves nothing by its data. ZooKeeper shows a digest id
 * in full only to a reader with admin rights on the znode (others see "user:x"), and a
 * claim gives its creator admin: so a claim whose ACL, as read here, grants this
 * identity's exact id write was made by this tenant's workers (or set so by droverd's
 * start-up check, which proves the creator the same way with its own admin rights).
 * In a tenant's own pool only that tenant's workers may create: the path proves it.
 */
static bool claim_ours(struct poolzk *z, const char *pool, const char *path)
{
    if (!shared(pool) || !z->self[0])
        return true;
    struct ACL_vector acl = {0, NULL};
    struct Stat st;
    if (zoo_get_acl(z->zh, path, &acl, &st) != ZOK)
        return false;
    bool ours = false;
    for (int i = 0; i < acl.count && !ours; i++)
        ours = (acl.data[i].perms & ZOO_PERM_WRITE) &&
               strcmp(acl.data[i].id.scheme, "digest") == 0 &&
               strcmp(acl.data[i].id.id, z->self) == 0;
    deallocate_ACL_vector(&acl);
    return ours;
}

int poolzk_find(struct poolzk *z, const char *pool, const char *tenant, const char *cluster,
                const char *node, char *host, size_t len, struct drv_err *err)
{
    char dir[512];
    zkpath_pool_claims(dir, sizeof(dir), pool);
    struct String_vector kids = {0};
    int rc = zoo_get_children(z->zh, dir, 0, &kids);
    if (rc == ZNONODE)
        return DRV_ENOENT;
    if (rc != ZOK)
        return zerr(err, rc, "list", dir);
    int found = DRV_ENOENT;
    char unproven[300] = "";
    for (int i = 0; i < kids.count && found == DRV_ENOENT; i++) {
        json_t *d = NULL;
        if (poolzk_get(z, pool, kids.data[i], &d, NULL, NULL) != 0)
            continue;
        const char *t = json_string_value(json_object_get(d, "tenant"));
        const char *c = json_string_value(json_object_get(d, "cluster"));
        const char *n = json_string_value(json_object_get(d, "node"));
        const char *st = json_string_value(json_object_get(d, "state"));
        if (t && c && n && strcmp(t, tenant) == 0 && strcmp(c, cluster) == 0 &&
            strcmp(n, node) == 0 && !(st && strcmp(st, "released") == 0)) {
            char path[600];
            zkpath_pool_claim(path, sizeof(path), pool, kids.data[i]);
            if (claim_ours(z, pool, path)) {
                snprintf(host, len, "%s", kids.data[i]);
                found = 0;
            } else {
                log_warn("ssh-pool", "event=claim-unproven pool=%s host=%s tenant=%s node=%s", pool,
                         kids.data[i], tenant, node);
                snprintf(unproven, sizeof(unproven), "%s", kids.data[i]);
            }
        }
        json_decref(d);
    }
    deallocate_String_vector(&kids);
    if (found == DRV_ENOENT && unproven[0])
        drv_err_set(err, DRV_EPERM, 0,
                    "the claim of host \"%s\" in pool \"%s\" names this node, but its ACL does not "
                    "show that this tenant's workers made it: another tenant's forgery, or a "
                    "claim made before claims were checked that no droverd has checked since "
                    "(each droverd does at its start); not adopted",
                    unproven, pool);
    return found;
}

/*
 * A claim of an operator's shared pool: "state": "released" at the version read, and the
 * marker released/<host>-<sequence> that tells droverd, in one multi-op (both or neither).
 * Sequential, so that no marker another tenant made first holds the name.
 */
static int release_shared(struct poolzk *z, const char *pool, const char *claim,
                          const char *released, const char *host, struct drv_err *err)
{
    json_t *data = NULL;
    int version = 0;
    int rc = poolzk_get(z, pool, host, &data, &version, err);
    if (rc == DRV_ENOENT)
        return 0;
    if (rc != 0)
        return rc;
    const char *st = json_string_value(json_object_get(data, "state"));
    if (st && strcmp(st, "released") == 0) {
        json_decref(data); /* released before: droverd deletes it (its marker was made then) */
        return 0;
    }
    json_object_set_new(data, "state", json_string("released"));
    char *s = json_dumps(data, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(data);
    char marker[700], made[700];
    snprintf(marker, sizeof(marker), "%s/%s-", released, host);
    zoo_op_t ops[2];
    zoo_op_result_t res[2];
    memset(res, 0, sizeof(res)); /* a lost connection fills in nothing */
    zoo_set_op_init(&ops[0], claim, s, (int)strlen(s), version, NULL);
    zoo_create_op_init(&ops[1], marker, "{}", 2, &z->marker_acl, ZOO_SEQUENCE, made, sizeof(made));
    rc = zoo_multi(z->zh, 2, ops, res);
    free(s);
    if (rc == ZOK) {
        log_info("ssh-pool", "event=claim-released pool=%s host=%s marker=%s", pool, host, made);
        return 0;
    }
    if (rc == ZNONODE && res[0].err == ZNONODE)
        return 0; /* gone meanwhile */
    int op = res[0].err != ZOK && res[0].err != ZRUNTIMEINCONSISTENCY ? 0 : 1;
    return zerr(err, res[op].err != ZOK ? res[op].err : rc, op ? "create" : "set",
                op ? marker : claim);
}

int poolzk_release(struct poolzk *z, const char *pool, const char *host, struct drv_err *err)
{
    char path[600];
    zkpath_pool_claim(path, sizeof(path), pool, host);
    if (shared(pool)) {
        char released[600];
        zkpath_pool_released(released, sizeof(released), pool);
        int rc = zoo_exists(z->zh, released, 0, NULL);
        if (rc == ZOK)
            return release_shared(z, pool, path, released, host, err);
        if (rc != ZNONODE)
            return zerr(err, rc, "exists", released);
        /* No released directory: no droverd grants this pool (an open tree, tests without
           credentials), so no janitor watches it; the delete below is the release. */
    }
    int rc = zoo_delete(z->zh, path, -1);
    if (rc != ZOK && rc != ZNONODE)
        return zerr(err, rc, "delete", path);
    return 0;
}
