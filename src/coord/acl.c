/*
 * acl: who may read what Drover writes to ZooKeeper (docs/zookeeper-tree.md,
 * "ACLs"; docs/security.md, "ZooKeeper ACLs").
 *
 * With digest credentials, every znode a session creates carries: all
 * permissions for the creating identity (scheme "auth"), and read for each
 * of the session's readers (coord_session_opts.acl_readers: the operator's
 * read-only identity that `drover zk` uses). Never world read. Without
 * credentials, nodes are open (tests and single-machine trials).
 *
 * coord_acl_fixup brings an existing tree to that form at droverd's start,
 * so an upgrade from world-readable znodes closes them: a synchronous walk
 * on its own short-lived handle (start-up only, any thread but a callback's).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/sha.h>
#include <zookeeper/zookeeper.h>

#include "coord.h"
#include "coord_int.h"
#include "log.h"
#include "xalloc.h"

#define MOD "coord"

int coord_acl_digest_id(const char *user, const char *password, char *out, size_t n)
{
    char *cred = xasprintf("%s:%s", user, password);
    unsigned char md[SHA_DIGEST_LENGTH];
    SHA1((const unsigned char *)cred, strlen(cred), md);
    explicit_bzero(cred, strlen(cred));
    free(cred);
    char b64[4 * ((SHA_DIGEST_LENGTH + 2) / 3) + 1];
    EVP_EncodeBlock((unsigned char *)b64, md, SHA_DIGEST_LENGTH);
    int w = snprintf(out, n, "%s:%s", user, b64);
    return w < 0 || (size_t)w >= n ? DRV_EINVAL : 0;
}

int coord__acl_build(struct coord_session *s, const char *readers, struct drv_err *err)
{
    size_t n = 0;
    char *list = xstrdup(readers ? readers : ""), *save = NULL;
    s->acl_own.data = xcalloc(1 + COORD_ACL_MAX_READERS, sizeof(struct ACL));
    s->acl_own.data[n++] = (struct ACL){.perms = ZOO_PERM_ALL, .id = {.scheme = "auth", .id = ""}};
    for (char *r = strtok_r(list, ",", &save); r; r = strtok_r(NULL, ",", &save)) {
        while (*r == ' ')
            r++;
        size_t len = strlen(r);
        while (len && r[len - 1] == ' ')
            r[--len] = '\0';
        if (!len)
            continue;
        if (n > COORD_ACL_MAX_READERS || len > COORD_ACL_MAX_ID || !strchr(r, ':')) {
            free(list);
            return drv_err_set(err, DRV_EINVAL, 0,
                               "acl readers: \"%s\": expected at most %d digest ids user:hash of "
                               "up to %d characters",
                               r, COORD_ACL_MAX_READERS, COORD_ACL_MAX_ID);
        }
        s->acl_own.data[n++] =
            (struct ACL){.perms = ZOO_PERM_READ, .id = {.scheme = "digest", .id = xstrdup(r)}};
    }
    free(list);
    s->acl_own.count = (int32_t)n;
    s->acl = &s->acl_own;
    return 0;
}

void coord__acl_free(struct coord_session *s)
{
    for (int32_t i = 1; i < s->acl_own.count; i++)
        free(s->acl_own.data[i].id.id);
    free(s->acl_own.data);
    s->acl_own.data = NULL;
    s->acl_own.count = 0;
}

/* ---- the start-up fix-up ------------------------------------------------------------ */

struct fixup {
    zhandle_t *zh;
    struct ACL_vector want;
    int changed, seen;
};

static bool same_acl(const struct ACL_vector *a, const struct ACL_vector *b)
{
    if (a->count != b->count)
        return false;
    for (int32_t i = 0; i < a->count; i++) {
        bool found = false;
        for (int32_t j = 0; j < b->count && !found; j++)
            found = a->data[i].perms == b->data[j].perms &&
                    strcmp(a->data[i].id.scheme, b->data[j].id.scheme) == 0 &&
                    strcmp(a->data[i].id.id, b->data[j].id.id) == 0;
        if (!found)
            return false;
    }
    return true;
}

static int fix(struct fixup *f, const char *path, struct drv_err *err)
{
    struct ACL_vector have = {0, NULL};
    struct Stat st;
    int rc = zoo_get_acl(f->zh, path, &have, &st);
    if (rc == ZNONODE)
        return 0; /* gone meanwhile: an ephemeral that left */
    if (rc != ZOK)
        return drv_err_set(err, DRV_EZK, rc, "get acl of \"%s\": %s", path, zerror(rc));
    f->seen++;
    if (!same_acl(&have, &f->want)) {
        rc = zoo_set_acl(f->zh, path, -1, &f->want);
        if (rc == ZOK)
            f->changed++;
        else if (rc != ZNONODE) {
            deallocate_ACL_vector(&have);
            return drv_err_set(err, DRV_EZK, rc, "set acl of \"%s\": %s", path, zerror(rc));
        }
    }
    deallocate_ACL_vector(&have);
    struct String_vector kids = {0, NULL};
    rc = zoo_get_children(f->zh, path, 0, &kids);
    if (rc == ZNONODE)
        return 0;
    if (rc != ZOK)
        return drv_err_set(err, DRV_EZK, rc, "list \"%s\": %s", path, zerror(rc));
    int out = 0;
    for (int32_t i = 0; i < kids.count && out == 0; i++) {
        char *child = xasprintf("%s/%s", path, kids.data[i]);
        out = fix(f, child, err);
        free(child);
    }
    deallocate_String_vector(&kids);
    return out;
}

int coord_acl_fixup(const struct coord_session_opts *o, const char *root, int *changed,
                    struct drv_err *err)
{
    *changed = 0;
    if (!o->digest_user)
        return 0; /* open tree: nothing to close */
    char *hosts = o->chroot ? xasprintf("%s%s", o->hosts, o->chroot) : xstrdup(o->hosts);
    zhandle_t *zh =
        zookeeper_init2(hosts, NULL, o->session_timeout_ms > 0 ? o->session_timeout_ms : 10000,
                        NULL, NULL, 0, log_zk_callback);
    free(hosts);
    if (!zh)
        return drv_err_set(err, DRV_EZK, errno, "acl fix-up: cannot start a zookeeper client");
    for (int i = 0; i < 300 && zoo_state(zh) != ZOO_CONNECTED_STATE; i++)
        usleep(50 * 1000);
    char *cred = xasprintf("%s:%s", o->digest_user, o->digest_password);
    int rc = zoo_state(zh) == ZOO_CONNECTED_STATE
                 ? zoo_add_auth(zh, "digest", cred, (int)strlen(cred), NULL, NULL)
                 : ZCONNECTIONLOSS;
    explicit_bzero(cred, strlen(cred));
    free(cred);
    if (rc != ZOK) {
        zookeeper_close(zh);
        return drv_err_set(err, DRV_EZK, rc, "acl fix-up: cannot connect to zookeeper: %s",
                           zerror(rc));
    }
    /* The creator's entry as the server stores it: digest user:base64(sha1(user:password)). */
    char self[COORD_ACL_MAX_ID + 1];
    struct coord_session tmp;
    memset(&tmp, 0, sizeof(tmp));
    struct fixup f = {.zh = zh};
    int out = coord_acl_digest_id(o->digest_user, o->digest_password, self, sizeof(self));
    if (out == 0)
        out = coord__acl_build(&tmp, o->acl_readers, err);
    if (out == 0) {
        f.want = tmp.acl_own;
        f.want.data[0] =
            (struct ACL){.perms = ZOO_PERM_ALL, .id = {.scheme = "digest", .id = self}};
        out = fix(&f, root, err);
        f.want.data[0].id.id = ""; /* not ours to free */
    }
    coord__acl_free(&tmp);
    zookeeper_close(zh);
    *changed = f.changed;
    if (out == 0)
        log_info(MOD, "event=acl-fixup root=%s znodes=%d changed=%d", root, f.seen, f.changed);
    return out;
}
