/*
 * sandbox: who a plugin runs as and what it is given (issue 20, docs/security.md
 * "The host boundary").
 *
 * A plugin serves a tenant: its input is the tenant's (entities, resources, cluster
 * config), so whatever it runs must hold nothing of the fleet. The worker holds the
 * fleet's secrets (the secrets key, its ZooKeeper login, its API token) and reads its
 * config; a plugin gets none of them:
 *
 *   1. Identity. A worker that runs as root (or holds CAP_SETUID and CAP_SETGID, as
 *      the systemd unit gives it) starts every plugin as its tenant's own uid on this
 *      host (worker.plugin_uids: uidmap.c picks and records it), gid the same number, no
 *      supplementary groups: the plugin cannot read the worker's 0600 files or
 *      /proc/<worker>/environ, nor signal or trace the worker, nor any process or
 *      private file of another tenant's plugins. With worker.plugin_uids empty, every
 *      plugin runs as worker.plugin_user (created with useradd when missing and it can),
 *      shared by every tenant whose workers name it (event=plugins-share-uid). Only
 *      the plugins named in worker.privileged_plugins keep root: the loopback
 *      provider needs it (PID namespaces), and gives root on the host by design, so
 *      the operator names it per worker, hence per tenant. A worker that is not
 *      root and lacks those capabilities cannot switch users: its plugins run as
 *      itself, and it says so at start (event=plugins-not-isolated).
 *   2. Environment. An allow-list of the worker's (PATH, HOME, LANG, LC_*, TZ,
 *      TMPDIR, DROVER_LOG_LEVEL) plus the task's own DROVER_* variables: never
 *      DROVER_ZK_DIGEST_FILE, tokens, the database's settings or the key file's path.
 *      A plugin run as its tenant's uid gets the tenant's home (0700, its own) as HOME
 *      and TMPDIR, so its temporary files are out of every other tenant's reach
 *      whatever their modes.
 *   3. Operator settings. Provider fields that name host programs, host paths or
 *      address ranges (loopback's root, network, port, sshd, unshare) come from the
 *      worker's worker.provider_settings file, a JSON object of providertype to
 *      fields, written over config.provider of every provider task, after the fields
 *      the plugin's descriptor marks "host": true are dropped from it; droverd
 *      refuses them in a tenant's entity in the first place (src/api/hostfields.c).
 *   4. ZooKeeper. A plugin whose descriptor "wants" "zookeeper" (ssh-pool: its
 *      claims) gets the worker's connection string and login on standard input, as
 *      "zookeeper": {"hosts", "digest", "acl_owner", "acl_readers"}: in its memory
 *      only, never in a file it could leave behind or an environment another process
 *      could read. The ACL ids (droverd's, the operator's: public digest ids) let it
 *      give what it creates the ACL coord gives its tenant's pools.
 *
 * Threads: set up in worker_new, read on the loop thread; nothing changes after.
 */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "log.h"
#include "seal.h"
#include "worker_int.h"
#include "xalloc.h"

#define MOD "worker"

struct worker__sandbox {
    bool drop; /* run plugins as uid/gid */
    uid_t uid;
    gid_t gid;
    char *home;       /* the tenant's plugin home (HOME, TMPDIR: uidmap.c), or NULL */
    char *privileged; /* ",a,b," or NULL */
    json_t *settings; /* providertype -> fields (never NULL) */
    char *zk_hosts;
    char *zk_digest;                     /* "user:password" or NULL */
    char *zk_acl_owner, *zk_acl_readers; /* digest ids, or NULL */
};

/* Create the system user name with useradd (concurrent workers: the loser finds it). */
static void create_user(const char *name)
{
    pid_t pid = fork();
    if (pid == 0) {
        execl("/usr/sbin/useradd", "useradd", "--system", "--no-create-home", "--home-dir",
              "/nonexistent", "--shell", "/usr/sbin/nologin", name, (char *)NULL);
        _exit(127);
    }
    int st;
    if (pid > 0)
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
}

static int resolve_user(struct worker__sandbox *s, const char *name, struct drv_err *err)
{
    struct passwd *pw = getpwnam(name);
    if (!pw) {
        create_user(name);
        pw = getpwnam(name);
    }
    if (!pw)
        return drv_err_set(err, DRV_EINVAL, 0,
                           "worker.plugin_user \"%s\": no such user, and useradd could not "
                           "create it",
                           name);
    if (pw->pw_uid == 0)
        return drv_err_set(err, DRV_EINVAL, 0,
                           "worker.plugin_user \"%s\": uid 0 gives plugins the host's privileges",
                           name);
    s->drop = true;
    s->uid = pw->pw_uid;
    s->gid = pw->pw_gid;
    return 0;
}

/* True when this process may switch users: root, or CAP_SETUID and CAP_SETGID (bits 7, 6)
   in its effective set (a systemd unit's AmbientCapabilities). */
static bool can_switch_users(void)
{
    if (geteuid() == 0)
        return true;
    FILE *f = fopen("/proc/self/status", "re");
    char line[256];
    unsigned long long eff = 0;
    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "CapEff: %llx", &eff) == 1)
            break;
    if (f)
        fclose(f);
    return (eff & (1ULL << 7)) && (eff & (1ULL << 6));
}

/* worker.plugin_uids: the tenant's own uid on this host, and its home (uidmap.c). */
static int tenant_uid(struct worker__sandbox *s, const struct worker *w,
                      const struct worker_opts *o, const char *range, struct drv_err *err)
{
    uid_t first, last, uid = 0;
    bool made = false;
    const char *homes =
        o->plugin_homes && *o->plugin_homes ? o->plugin_homes : "/var/lib/drover-worker/tenants";
    int rc = worker__uid_range_parse(range, &first, &last, err);
    if (rc == 0)
        rc = worker__uid_for_tenant(homes, w->tenant, first, last, &uid, &s->home, &made, err);
    if (rc)
        return rc;
    s->drop = true;
    s->uid = uid;
    s->gid = (gid_t)uid;
    log_info(MOD, "event=plugin-uid worker=%s tenant=%s uid=%u home=%s new=%s", w->id, w->tenant,
             (unsigned)uid, s->home, made ? "true" : "false");
    return 0;
}

static int read_digest(struct worker__sandbox *s, const char *path, struct drv_err *err)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return drv_err_set(err, DRV_EIO, errno, "zookeeper.digest_file \"%s\": %s", path,
                           strerror(errno));
    char line[512] = "";
    if (!fgets(line, sizeof(line), f))
        line[0] = '\0';
    fclose(f);
    line[strcspn(line, "\r\n")] = '\0';
    s->zk_digest = xstrdup(line);
    explicit_bzero(line, sizeof(line));
    return 0;
}

static int read_settings(struct worker__sandbox *s, const char *path, struct drv_err *err)
{
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    if (!j)
        return drv_err_set(err, DRV_EINVAL, 0, "worker.provider_settings \"%s\": %s (line %d)",
                           path, je.text, je.line);
    const char *k;
    json_t *v;
    bool ok = json_is_object(j);
    if (ok)
        json_object_foreach(j, k, v) ok = ok && json_is_object(v);
    if (!ok) {
        json_decref(j);
        return drv_err_set(err, DRV_EINVAL, 0,
                           "worker.provider_settings \"%s\": expected an object of providertype "
                           "to an object of provider fields",
                           path);
    }
    json_decref(s->settings);
    s->settings = j;
    return 0;
}

int worker__sandbox_new(struct worker *w, const struct worker_opts *o, struct drv_err *err)
{
    struct worker__sandbox *s = xcalloc(1, sizeof(*s));
    s->settings = json_object();
    w->sandbox = s;
    if (o->privileged_plugins && *o->privileged_plugins) {
        s->privileged = xasprintf(",%s,", o->privileged_plugins);
        for (char *p = s->privileged; *p; p++)
            if (*p == ' ')
                memmove(p, p + 1, strlen(p)), p--;
    }
    const char *user = o->plugin_user ? o->plugin_user : "";
    const char *range = o->plugin_uids ? o->plugin_uids : "";
    int rc = 0;
    if ((*range || *user) && !can_switch_users())
        log_warn(MOD,
                 "event=plugins-not-isolated worker=%s reason=\"neither root nor CAP_SETUID and "
                 "CAP_SETGID: plugins run as the worker's own user\"",
                 w->id);
    else if (*range)
        rc = tenant_uid(s, w, o, range, err);
    else if (*user) {
        rc = resolve_user(s, user, err);
        if (rc == 0)
            log_warn(MOD,
                     "event=plugins-share-uid worker=%s user=%s reason=\"worker.plugin_uids is "
                     "empty: the plugins of every tenant whose workers use this user can reach "
                     "each other\"",
                     w->id, user);
    }
    if (rc == 0 && o->provider_settings && *o->provider_settings)
        rc = read_settings(s, o->provider_settings, err);
    if (rc == 0 && o->zk_digest_file && *o->zk_digest_file)
        rc = read_digest(s, o->zk_digest_file, err);
    s->zk_hosts = xstrdup(o->zk_hosts ? o->zk_hosts : "");
    s->zk_acl_owner = o->zk_acl_owner && *o->zk_acl_owner ? xstrdup(o->zk_acl_owner) : NULL;
    s->zk_acl_readers = o->zk_acl_readers && *o->zk_acl_readers ? xstrdup(o->zk_acl_readers) : NULL;
    return rc;
}

void worker__sandbox_free(struct worker__sandbox *s)
{
    if (!s)
        return;
    free(s->privileged);
    free(s->home);
    json_decref(s->settings);
    free(s->zk_hosts);
    free(s->zk_acl_owner);
    free(s->zk_acl_readers);
    if (s->zk_digest)
        seal_wipe_free(s->zk_digest);
    free(s);
}

static bool privileged(const struct worker__sandbox *s, const char *name)
{
    if (!s->privileged)
        return false;
    char *needle = xasprintf(",%s,", name);
    bool yes = strstr(s->privileged, needle) != NULL;
    free(needle);
    return yes;
}

void worker__sandbox_proc(const struct worker__sandbox *s, const struct worker__plugin *p,
                          struct worker__proc_opts *po)
{
    po->run_as = s->drop && !privileged(s, p->name);
    po->uid = s->uid;
    po->gid = s->gid;
}

bool worker__sandbox_owner(const struct worker__sandbox *s, uid_t *uid, gid_t *gid)
{
    if (!s || !s->drop)
        return false;
    *uid = s->uid;
    *gid = s->gid;
    return true;
}

void worker__sandbox_task(const struct worker__sandbox *s, const struct worker__plugin *p,
                          bool provider_task, json_t *task)
{
    json_t *config = json_object_get(task, "config");
    json_t *prov = json_object_get(config, "provider");
    if (provider_task && json_is_object(prov)) {
        /* A host field the task carries (droverd refuses them in a tenant's entity, so only
         * an older or forged entity could) is dropped: the operator's settings alone. */
        const char *f;
        json_t *d;
        json_object_foreach(p->fields, f, d) if (json_is_true(json_object_get(d, "host")))
            json_object_del(prov, f);
        const char *type = json_string_value(json_object_get(prov, "providertype"));
        json_t *set = type ? json_object_get(s->settings, type) : NULL;
        if (set)
            json_object_update(prov, set);
    }
    if (p->wants_zookeeper)
        json_object_set_new(task, "zookeeper",
                            json_pack("{s:s, s:s?, s:s?, s:s?}", "hosts", s->zk_hosts, "digest",
                                      s->zk_digest, "acl_owner", s->zk_acl_owner, "acl_readers",
                                      s->zk_acl_readers));
}

char **worker__sandbox_env(const struct worker__sandbox *s, const struct worker__plugin *p,
                           char **env)
{
    if (!s->drop || !s->home || privileged(s, p->name))
        return env;
    size_t n = 0, k = 0;
    while (env[n])
        n++;
    for (size_t i = 0; i < n; i++) {
        if (strncmp(env[i], "HOME=", 5) == 0 || strncmp(env[i], "TMPDIR=", 7) == 0)
            free(env[i]);
        else
            env[k++] = env[i];
    }
    env = xrealloc(env, (k + 3) * sizeof(char *));
    env[k++] = xasprintf("HOME=%s", s->home);
    env[k++] = xasprintf("TMPDIR=%s", s->home);
    env[k] = NULL;
    return env;
}

bool worker__sandbox_env_ok(const char *kv)
{
    static const char *const keep[] = {
        "PATH=", "HOME=", "LANG=", "TZ=", "TMPDIR=", "DROVER_LOG_LEVEL=", "LC_", NULL};
    for (size_t i = 0; keep[i]; i++)
        if (strncmp(kv, keep[i], strlen(keep[i])) == 0)
            return true;
    return false;
}
