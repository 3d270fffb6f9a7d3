/*
 * uidmap: one host uid per tenant for its plugins (issue 32, docs/security.md "Plugins of
 * different tenants").
 *
 * Workers of several tenants may share a host. Plugins that all ran as one user
 * (drover-plugin) could reach each other through the kernel's same-user rules: ptrace,
 * /proc/<pid>/environ, mem and fd/0 (a plugin's standard input carries the task with its
 * opened secrets and the cluster's key), and each other's temporary files. Marking a
 * plugin not dumpable (PR_SET_DUMPABLE 0) before its exec does not hold: the kernel makes
 * a process dumpable again at every exec of a plain executable (begin_new_exec). So each
 * tenant's plugins run as a uid of their own, and the kernel refuses every one of those
 * accesses across uids (ptrace_may_access: the caller's uids and gids must all match the
 * target's, or it needs CAP_SYS_PTRACE, which no plugin has).
 *
 * The record. The uids come from the operator's range (worker.plugin_uids, "FIRST-LAST");
 * which tenant has which is recorded on the host, in the directory worker.plugin_homes,
 * shared by every worker of the host: <homes>/<tenant> is the tenant's plugins' home and
 * temporary directory (HOME, TMPDIR), mode 0700, and its owner IS the tenant's uid (its
 * group the same number). Nothing else is kept, so the record cannot disagree with what
 * it records. A worker, at its start:
 *
 *   1. makes <homes> (0711, its own) when missing; refuses one that another user owns or
 *      that others can write;
 *   2. takes an exclusive flock on <homes>/.lock (workers of several tenants start at
 *      once: two must never pick one uid);
 *   3. <homes>/<tenant> exists: its owner is the uid (refused when outside the range, a
 *      link, not a directory, or its group differs);
 *   4. else picks the lowest uid of the range that no entry of <homes> owns, that no
 *      account has (getpwuid) and that is not the worker's own, makes <homes>/.<tenant>.new
 *      (0700), gives it to the uid, and renames it to <homes>/<tenant> (a crash before the
 *      rename leaves only a .new, removed by the next pick), then fsyncs <homes>;
 *   5. unlocks.
 *
 * Invariants: (1) two entries of <homes> never share an owner (a pick skips every owner,
 * under the lock); (2) a tenant's uid never changes while its entry lives, so its synced
 * resources and files stay its own; (3) a uid in the range never belongs to an account.
 * A tenant deleted and made again under its name gets the same uid and home on this host
 * (the entry is by name): the operator removes <homes>/<tenant> when deleting a tenant
 * whose files must not pass on.
 *
 * Threads: worker_new only (start-up), before any plugin runs.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "worker_int.h"
#include "xalloc.h"

#define UID_TOP 2147483646UL /* below (uid_t)-1 and the signed limit some tools keep */

int worker__uid_range_parse(const char *s, uid_t *first, uid_t *last, struct drv_err *err)
{
    char *end;
    errno = 0;
    unsigned long a = strtoul(s, &end, 10), b = 0;
    bool ok = end != s && *end == '-' && errno == 0;
    if (ok) {
        const char *p = end + 1;
        b = strtoul(p, &end, 10);
        ok = end != p && *end == '\0' && errno == 0;
    }
    if (!ok || a < 1000 || b < a || b > UID_TOP)
        return drv_err_set(err, DRV_EINVAL, 0,
                           "worker.plugin_uids \"%s\": expected FIRST-LAST, 1000 <= FIRST <= "
                           "LAST <= %lu",
                           s, UID_TOP);
    *first = (uid_t)a;
    *last = (uid_t)b;
    return 0;
}

static int cmp_uid(const void *a, const void *b)
{
    uid_t x = *(const uid_t *)a, y = *(const uid_t *)b;
    return x < y ? -1 : x > y;
}

uid_t worker__uid_pick(uid_t first, uid_t last, uid_t *used, size_t n,
                       bool (*taken)(uid_t uid, void *arg), void *arg)
{
    if (n > 1) /* used may be NULL when n is 0, which qsort does not allow */
        qsort(used, n, sizeof(*used), cmp_uid);
    size_t i = 0;
    for (uid_t u = first;; u++) {
        while (i < n && used[i] < u)
            i++;
        bool free_ =
            !(i < n && used[i] == u) && u != 65534 && u != 65535 && !(taken && taken(u, arg));
        if (free_)
            return u;
        if (u == last)
            return (uid_t)-1;
    }
}

/* An account has the uid, or it is the worker's own. */
static bool account_has(uid_t uid, void *arg)
{
    (void)arg;
    return uid == geteuid() || getpwuid(uid) != NULL;
}

static bool good_tenant(const char *t)
{
    size_t n = strlen(t);
    if (!n || n > 63 || !((*t >= 'a' && *t <= 'z') || (*t >= '0' && *t <= '9')))
        return false;
    for (const char *p = t; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '_'))
            return false;
    return true;
}

/* Step 1: <homes> exists, is a directory of this process's user (or root), not writable
   by anyone else. */
static int homes_dir(const char *homes, struct drv_err *err)
{
    if (mkdir(homes, 0711) != 0 && errno != EEXIST)
        return drv_err_set(err, DRV_EIO, errno, "worker.plugin_homes \"%s\": %s", homes,
                           strerror(errno));
    struct stat st;
    if (lstat(homes, &st) != 0)
        return drv_err_set(err, DRV_EIO, errno, "worker.plugin_homes \"%s\": %s", homes,
                           strerror(errno));
    if (!S_ISDIR(st.st_mode) || (st.st_uid != geteuid() && st.st_uid != 0) || (st.st_mode & 022))
        return drv_err_set(err, DRV_EINVAL, 0,
                           "worker.plugin_homes \"%s\": must be a directory of the worker's user "
                           "or root that no one else can write (it records which uid each "
                           "tenant's plugins run as)",
                           homes);
    return 0;
}

/* Step 4: every owner of an entry of <homes> (and .new leftovers removed). */
static uid_t *owners(const char *homes, int dfd, size_t *n)
{
    uid_t *v = NULL;
    size_t cap = 0;
    *n = 0;
    DIR *d = opendir(homes);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        const char *name = e->d_name;
        size_t len = strlen(name);
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || strcmp(name, ".lock") == 0)
            continue;
        if (name[0] == '.' && len > 4 && strcmp(name + len - 4, ".new") == 0) {
            unlinkat(dfd, name, AT_REMOVEDIR); /* a pick that died before its rename */
            continue;
        }
        struct stat st;
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        if (*n == cap)
            v = xrealloc(v, (cap = cap ? 2 * cap : 16) * sizeof(*v));
        v[(*n)++] = st.st_uid;
    }
    if (d)
        closedir(d);
    return v;
}

static int pick_new(const char *homes, int dfd, const char *tenant, uid_t first, uid_t last,
                    uid_t *uid, struct drv_err *err)
{
    size_t n;
    uid_t *used = owners(homes, dfd, &n);
    uid_t u = worker__uid_pick(first, last, used, n, account_has, NULL);
    free(used);
    if (u == (uid_t)-1)
        return drv_err_set(err, DRV_EINVAL, 0,
                           "worker.plugin_uids %u-%u: every uid is taken by a tenant of this "
                           "host (worker.plugin_homes \"%s\") or an account: widen the range",
                           (unsigned)first, (unsigned)last, homes);
    char *tmp = xasprintf(".%s.new", tenant);
    int rc = 0;
    unlinkat(dfd, tmp, AT_REMOVEDIR);
    /* The mode before the owner: once the directory is u's, changing its mode would take
       CAP_FOWNER, which the unit does not give (conf/systemd/drover-worker.service). */
    if (mkdirat(dfd, tmp, 0700) != 0 || fchmodat(dfd, tmp, 0700, 0) != 0 ||
        fchownat(dfd, tmp, u, u, AT_SYMLINK_NOFOLLOW) != 0 ||
        renameat(dfd, tmp, dfd, tenant) != 0) {
        rc = drv_err_set(err, DRV_EIO, errno,
                         "worker.plugin_homes \"%s\": cannot make %s's home for uid %u: %s", homes,
                         tenant, (unsigned)u, strerror(errno));
        unlinkat(dfd, tmp, AT_REMOVEDIR);
    }
    free(tmp);
    if (rc == 0) {
        int sfd = open(homes, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (sfd >= 0) {
            fsync(sfd);
            close(sfd);
        }
        *uid = u;
    }
    return rc;
}

int worker__uid_for_tenant(const char *homes, const char *tenant, uid_t first, uid_t last,
                           uid_t *uid, char **home, bool *made, struct drv_err *err)
{
    *made = false;
    if (!good_tenant(tenant))
        return drv_err_set(err, DRV_EINVAL, 0,
                           "worker.tenant \"%s\": not a tenant name ([a-z0-9][a-z0-9_-]{0,62})",
                           tenant);
    int rc = homes_dir(homes, err);
    if (rc)
        return rc;
    /* O_PATH: a worker of the host run as another user than the directory's (0711) can
       still look up its own tenant's entry. */
    int dfd = open(homes, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (dfd < 0)
        return drv_err_set(err, DRV_EIO, errno, "worker.plugin_homes \"%s\": %s", homes,
                           strerror(errno));
    /* Read-only and 0644: a worker of the host that runs as another user than the one that
       made the directory can still take the lock (flock needs no write access). */
    int lfd = openat(dfd, ".lock", O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (lfd < 0 || flock(lfd, LOCK_EX) != 0) {
        rc = drv_err_set(err, DRV_EIO, errno, "worker.plugin_homes \"%s\": lock: %s", homes,
                         strerror(errno));
        if (lfd >= 0)
            close(lfd);
        close(dfd);
        return rc;
    }
    struct stat st;
    if (fstatat(dfd, tenant, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (!S_ISDIR(st.st_mode) || st.st_uid < first || st.st_uid > last ||
            st.st_gid != st.st_uid || account_has(st.st_uid, NULL))
            rc = drv_err_set(err, DRV_EINVAL, 0,
                             "worker.plugin_homes \"%s/%s\": owned by %u:%u, expected a "
                             "directory of one uid of worker.plugin_uids %u-%u that no account "
                             "has (remove it, or give the range back)",
                             homes, tenant, (unsigned)st.st_uid, (unsigned)st.st_gid,
                             (unsigned)first, (unsigned)last);
        else
            *uid = st.st_uid;
    } else if (errno == ENOENT) {
        rc = pick_new(homes, dfd, tenant, first, last, uid, err);
        *made = rc == 0;
    } else {
        rc = drv_err_set(err, DRV_EIO, errno, "worker.plugin_homes \"%s/%s\": %s", homes, tenant,
                         strerror(errno));
    }
    flock(lfd, LOCK_UN);
    close(lfd);
    close(dfd);
    if (rc == 0)
        *home = xasprintf("%s/%s", homes, tenant);
    return rc;
}
