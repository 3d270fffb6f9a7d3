/*
 * lbnode: node directories, address claims and namespaced sshd processes of
 * the loopback provider (see lbnode.h for the layout).
 *
 * A node's life, as the files and processes show it:
 *
 *   (nothing) --claim--> CLAIMED --prepare--> PREPARED --start--> RUNNING
 *       ^                   |                     |                  |
 *       +------------------ destroy (any state) --+------------------+
 *
 *   CLAIMED   .addresses/<addr> holds the id; no directory yet
 *   PREPARED  the directory with keys and sshd_config; node.json without pids
 *   RUNNING   node.json names unshare's pid, sshd's pid (the namespace's PID 1)
 *             and the namespace
 *
 * Invariants:
 *   1. At most one claim file per address (O_EXCL), and a claim is taken only
 *      while nothing listens on the address; so two live nodes never share one.
 *   2. A claim is released only after every process of its node is gone.
 *   3. A process is killed only when it is verified to be the node's: its
 *      command line names the node's sshd_config, or it is in the namespace
 *      whose PID 1 is the node's sshd.
 *   4. Destroy is idempotent: from any state, including a crash half-way
 *      through create, it reaches (nothing).
 */
#include "lbnode.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "plugin.h"
#include "sshkey.h"
#include "xalloc.h"

#define MOD "loopback"

static bool path_ok(const char *s)
{
    if (!s || s[0] != '/' || strlen(s) > 400 || strstr(s, "/../") || strstr(s, "/./"))
        return false;
    for (const char *p = s; *p; p++) {
        char c = *p;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-' || c == '/'))
            return false;
    }
    return true;
}

int lb_conf_parse(json_t *provider, struct lb_conf *c, struct drv_err *err)
{
    memset(c, 0, sizeof(*c));
    const char *root = json_string_value(json_object_get(provider, "root"));
    const char *net = json_string_value(json_object_get(provider, "network"));
    const char *sshd = json_string_value(json_object_get(provider, "sshd"));
    const char *unshare = json_string_value(json_object_get(provider, "unshare"));
    if (!root)
        root = "/var/lib/drover/loopback";
    if (!path_ok(root) || strcmp(root, "/") == 0)
        return drv_err_set(err, DRV_EINVAL, 0,
                           "provider field \"root\": \"%s\" is not an absolute path of "
                           "[A-Za-z0-9_./-]",
                           root);
    snprintf(c->root, sizeof(c->root), "%s", root);
    size_t rl = strlen(c->root);
    while (rl > 1 && c->root[rl - 1] == '/')
        c->root[--rl] = '\0';
    if (!net)
        net = "127.77.0.0/16";
    char ip[32];
    int prefix = -1;
    struct in_addr a;
    if (sscanf(net, "%31[0-9.]/%d", ip, &prefix) != 2 || inet_pton(AF_INET, ip, &a) != 1 ||
        prefix < 8 || prefix > 30)
        return drv_err_set(err, DRV_EINVAL, 0,
                           "provider field \"network\": \"%s\" is not a.b.c.d/8..30", net);
    uint32_t base = ntohl(a.s_addr);
    uint32_t mask = prefix == 0 ? 0 : 0xffffffffu << (32 - prefix);
    if ((base >> 24) != 127)
        return drv_err_set(err, DRV_EINVAL, 0,
                           "provider field \"network\": \"%s\" is not inside 127.0.0.0/8", net);
    c->net_lo = (base & mask) + 1;
    c->net_hi = (base | ~mask) - 1;
    json_t *port = json_object_get(provider, "port");
    c->port = port ? (int)json_integer_value(port) : 22;
    if (c->port <= 0 || c->port > 65535)
        return drv_err_set(err, DRV_EINVAL, 0, "provider field \"port\": expected 1..65535");
    if (!sshd)
        sshd = "/usr/sbin/sshd";
    if (!unshare)
        unshare = "/usr/bin/unshare";
    if (!path_ok(sshd) || !path_ok(unshare))
        return drv_err_set(err, DRV_EINVAL, 0,
                           "provider fields \"sshd\" and \"unshare\": expected absolute paths");
    snprintf(c->sshd, sizeof(c->sshd), "%s", sshd);
    snprintf(c->unshare, sizeof(c->unshare), "%s", unshare);
    if (access(c->sshd, X_OK) != 0)
        return drv_err_set(err, DRV_ENOENT, errno,
                           "sshd \"%s\" is not installed (Debian package openssh-server)", c->sshd);
    if (access(c->unshare, X_OK) != 0)
        return drv_err_set(err, DRV_ENOENT, errno, "unshare \"%s\" is not installed (util-linux)",
                           c->unshare);
    return 0;
}

static int mkdirs(const char *path, mode_t mode, struct drv_err *err)
{
    char buf[1024];
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return drv_err_set(err, DRV_EIO, errno, "mkdir \"%s\": %s", buf, strerror(errno));
        *p = '/';
    }
    if (mkdir(buf, mode) != 0 && errno != EEXIST)
        return drv_err_set(err, DRV_EIO, errno, "mkdir \"%s\": %s", buf, strerror(errno));
    return 0;
}

int lb_lock(const struct lb_conf *c, struct drv_err *err)
{
    char path[600];
    if (mkdirs(c->root, 0755, err) != 0)
        return -1;
    snprintf(path, sizeof(path), "%s/.addresses", c->root);
    if (mkdirs(path, 0755, err) != 0)
        return -1;
    snprintf(path, sizeof(path), "%s/.lock", c->root);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        drv_err_set(err, DRV_EIO, errno, "%s: %s", path, strerror(errno));
        return -1;
    }
    while (flock(fd, LOCK_EX) != 0) {
        if (errno != EINTR) {
            drv_err_set(err, DRV_EIO, errno, "flock %s: %s", path, strerror(errno));
            close(fd);
            return -1;
        }
    }
    return fd;
}

void lb_unlock(int fd)
{
    if (fd >= 0)
        close(fd); /* releases the flock */
}

int lb_claim_find(const struct lb_conf *c, const char *id, char *addr)
{
    char dir[600];
    snprintf(dir, sizeof(dir), "%s/.addresses", c->root);
    DIR *d = opendir(dir);
    if (!d)
        return DRV_ENOENT;
    struct dirent *de;
    int rc = DRV_ENOENT;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.' || strlen(de->d_name) > 15)
            continue;
        char path[700];
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        char *who = plugin_read_file(path, 4096, NULL, NULL);
        if (who && strcmp(who, id) == 0) {
            snprintf(addr, 16, "%s", de->d_name);
            rc = 0;
        }
        free(who);
        if (rc == 0)
            break;
    }
    closedir(d);
    return rc;
}

bool lb_address_free(const char *addr, int port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
        return false;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    bool ok = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
    close(fd);
    return ok;
}

int lb_claim_new(const struct lb_conf *c, const char *id, char *addr, struct drv_err *err)
{
    for (uint32_t h = c->net_lo; h <= c->net_hi && h != 0; h++) {
        unsigned last = h & 0xff;
        if (last == 0 || last == 255 || h == 0x7f000001u)
            continue;
        struct in_addr a = {.s_addr = htonl(h)};
        char ip[16], path[700];
        inet_ntop(AF_INET, &a, ip, sizeof(ip));
        snprintf(path, sizeof(path), "%s/.addresses/%s", c->root, ip);
        if (access(path, F_OK) == 0 || !lb_address_free(ip, c->port))
            continue;
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0) {
            if (errno == EEXIST)
                continue;
            return drv_err_set(err, DRV_EIO, errno, "%s: %s", path, strerror(errno));
        }
        size_t len = strlen(id);
        bool ok = write(fd, id, len) == (ssize_t)len && fsync(fd) == 0;
        close(fd);
        if (!ok) {
            unlink(path);
            return drv_err_set(err, DRV_EIO, errno, "%s: %s", path, strerror(errno));
        }
        snprintf(addr, 16, "%s", ip);
        return 0;
    }
    return drv_err_set(err, DRV_EUNSAT, 0,
                       "no address of the provider's network has port %d free (does a server "
                       "listen on *:%d? then give the provider another \"port\")",
                       c->port, c->port);
}

void lb_claim_release(const struct lb_conf *c, const char *id)
{
    char addr[16];
    while (lb_claim_find(c, id, addr) == 0) {
        char path[700];
        snprintf(path, sizeof(path), "%s/.addresses/%s", c->root, addr);
        if (unlink(path) != 0)
            break;
        log_info(MOD, "event=address-released id=%s address=%s", id, addr);
    }
}

int lb_node_load(struct lb_node *n, struct drv_err *err)
{
    char path[900];
    snprintf(path, sizeof(path), "%s/node.json", n->dir);
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    if (!j)
        return drv_err_set(err, access(path, F_OK) == 0 ? DRV_EINVAL : DRV_ENOENT, 0, "%s: %s",
                           path, je.text);
    const char *s;
    if ((s = json_string_value(json_object_get(j, "address"))))
        snprintf(n->address, sizeof(n->address), "%s", s);
    if ((s = json_string_value(json_object_get(j, "node"))))
        snprintf(n->node_id, sizeof(n->node_id), "%s", s);
    if ((s = json_string_value(json_object_get(j, "pidns"))))
        snprintf(n->pidns, sizeof(n->pidns), "%s", s);
    if ((s = json_string_value(json_object_get(j, "host_key"))))
        snprintf(n->host_key, sizeof(n->host_key), "%s", s);
    if ((s = json_string_value(json_object_get(j, "host_key_type"))))
        snprintf(n->host_key_type, sizeof(n->host_key_type), "%s", s);
    n->unshare_pid = (pid_t)json_integer_value(json_object_get(j, "unshare_pid"));
    n->port = (int)json_integer_value(json_object_get(j, "port"));
    n->init_pid = (pid_t)json_integer_value(json_object_get(j, "sshd_pid"));
    json_decref(j);
    return 0;
}

int lb_node_save(const struct lb_node *n, struct drv_err *err)
{
    json_t *j =
        json_pack("{s:s, s:s, s:i, s:s, s:s, s:s, s:I, s:I, s:s}", "provider-id", n->id, "address",
                  n->address, "port", n->port, "node", n->node_id, "host_key", n->host_key,
                  "host_key_type", n->host_key_type, "unshare_pid", (json_int_t)n->unshare_pid,
                  "sshd_pid", (json_int_t)n->init_pid, "pidns", n->pidns);
    char *s = json_dumps(j, JSON_INDENT(2) | JSON_SORT_KEYS);
    json_decref(j);
    char path[900];
    snprintf(path, sizeof(path), "%s/node.json", n->dir);
    int rc = plugin_write_file(path, s, strlen(s), 0644, err);
    free(s);
    return rc;
}

/* The command line of pid with NULs as spaces, or "" (buf of n bytes). */
static const char *cmdline_of(pid_t pid, char *buf, size_t n)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
    buf[0] = '\0';
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return buf;
    ssize_t r = read(fd, buf, n - 1);
    close(fd);
    if (r <= 0)
        return "";
    for (ssize_t i = 0; i < r; i++)
        if (buf[i] == '\0')
            buf[i] = ' ';
    buf[r] = '\0';
    return buf;
}

static bool pidns_of(pid_t pid, char *out, size_t n)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)pid);
    ssize_t r = readlink(path, out, n - 1);
    if (r <= 0)
        return false;
    out[r] = '\0';
    return true;
}

static bool is_zombie(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return true;
    ssize_t r = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (r <= 0)
        return true;
    buf[r] = '\0';
    const char *rp = strrchr(buf, ')');
    return rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X');
}

/* Is pid alive and is its command line about the node's sshd_config? */
static bool ours(const struct lb_node *n, pid_t pid)
{
    if (pid <= 1 || is_zombie(pid))
        return false;
    char want[900], buf[4096];
    snprintf(want, sizeof(want), "%s/ssh/sshd_config", n->dir);
    return strstr(cmdline_of(pid, buf, sizeof(buf)), want) != NULL;
}

bool lb_node_running(const struct lb_node *n)
{
    char ns[64];
    return ours(n, n->init_pid) && pidns_of(n->init_pid, ns, sizeof(ns)) &&
           strcmp(ns, n->pidns) == 0;
}

static int write_text(const char *path, const char *text, unsigned mode, struct drv_err *err)
{
    return plugin_write_file(path, text, strlen(text), mode, err);
}

int lb_node_prepare(const struct lb_conf *c, struct lb_node *n, const char *pubkey,
                    struct drv_err *err)
{
    char p[1000];
    if (mkdirs(n->dir, 0755, err) != 0)
        return DRV_EIO;
    snprintf(p, sizeof(p), "%s/ssh", n->dir);
    if (mkdirs(p, 0700, err) != 0)
        return DRV_EIO;
    snprintf(p, sizeof(p), "%s/root", n->dir);
    if (mkdirs(p, 0755, err) != 0)
        return DRV_EIO;
    snprintf(p, sizeof(p), "%s/root/root", n->dir); /* root's HOME on the node */
    if (mkdirs(p, 0700, err) != 0)
        return DRV_EIO;
    if (mkdir("/run/sshd", 0755) != 0 && errno != EEXIST) /* sshd's privilege separation */
        return drv_err_set(err, DRV_EIO, errno, "mkdir /run/sshd: %s", strerror(errno));

    /* The host key is made once: a resumed create keeps the identity it reported. */
    snprintf(p, sizeof(p), "%s/ssh/host_ed25519_key.pub", n->dir);
    char *pub = plugin_read_file(p, 4096, NULL, NULL);
    if (!pub) {
        struct sshkey_pair kp;
        char comment[300];
        snprintf(comment, sizeof(comment), "drover-loopback-%s", n->id);
        if (sshkey_generate(comment, &kp, err) != 0)
            return DRV_ETLS;
        char kpath[1000];
        snprintf(kpath, sizeof(kpath), "%s/ssh/host_ed25519_key", n->dir);
        int rc = write_text(kpath, kp.private_pem, 0600, err);
        if (rc == 0) {
            char *line = xasprintf("%s\n", kp.public_line);
            rc = write_text(p, line, 0644, err);
            free(line);
        }
        pub = xstrdup(kp.public_line);
        sshkey_pair_clear(&kp);
        if (rc != 0) {
            free(pub);
            return rc;
        }
    }
    int rc =
        sshkey_fingerprint_line(pub, n->host_key, n->host_key_type, sizeof(n->host_key_type), err);
    free(pub);
    if (rc != 0)
        return rc;

    char *ak = xasprintf("%s\n", pubkey);
    snprintf(p, sizeof(p), "%s/ssh/authorized_keys", n->dir);
    rc = write_text(p, ak, 0600, err);
    free(ak);
    if (rc != 0)
        return rc;

    char *conf =
        xasprintf("# sshd of loopback node %s (written by Drover's loopback provider)\n"
                  "ListenAddress %s:%d\n"
                  "HostKey %s/ssh/host_ed25519_key\n"
                  "HostKeyAlgorithms ssh-ed25519\n"
                  "PidFile none\n"
                  "AuthorizedKeysFile %s/ssh/authorized_keys %s/root%%h/.ssh/authorized_keys\n"
                  "PubkeyAuthentication yes\n"
                  "PasswordAuthentication no\n"
                  "KbdInteractiveAuthentication no\n"
                  "PermitRootLogin prohibit-password\n"
                  "UsePAM no\n"
                  "StrictModes no\n"
                  "PermitUserEnvironment no\n"
                  "X11Forwarding no\n"
                  "AllowTcpForwarding no\n"
                  "PrintMotd no\n"
                  "MaxStartups 64:30:128\n"
                  "MaxSessions 32\n"
                  "Subsystem sftp internal-sftp\n"
                  /* HOME in the node's root, so that the login shell reads the node's
                     dotfiles, never the host's (/root/.bashrc). The first SetEnv that
                     applies wins: root's block first. */
                  "Match User root\n"
                  "  SetEnv DROVER_NODE_ROOT=%s/root DROVER_NODE_ID=%s HOME=%s/root/root\n"
                  "Match all\n"
                  "  SetEnv DROVER_NODE_ROOT=%s/root DROVER_NODE_ID=%s\n",
                  n->id, n->address, n->port, n->dir, n->dir, n->dir, n->dir, n->node_id, n->dir,
                  n->dir, n->node_id);
    snprintf(p, sizeof(p), "%s/ssh/sshd_config", n->dir);
    rc = write_text(p, conf, 0600, err);
    free(conf);
    if (rc != 0)
        return rc;
    (void)c;
    return lb_node_save(n, err);
}

/* The child of parent (the namespace's PID 1, seen from here), or 0. */
static pid_t child_of(pid_t parent)
{
    DIR *d = opendir("/proc");
    if (!d)
        return 0;
    struct dirent *de;
    pid_t found = 0;
    while (!found && (de = readdir(d))) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (*end || pid <= 0)
            continue;
        char path[64], buf[512];
        snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        ssize_t r = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (r <= 0)
            continue;
        buf[r] = '\0';
        const char *rp = strrchr(buf, ')');
        int ppid = 0;
        char st;
        if (rp && sscanf(rp + 1, " %c %d", &st, &ppid) == 2 && ppid == parent)
            found = (pid_t)pid;
    }
    closedir(d);
    return found;
}

int lb_node_start(const struct lb_conf *c, struct lb_node *n, struct drv_err *err)
{
    char cfg[1000], logp[1000];
    snprintf(cfg, sizeof(cfg), "%s/ssh/sshd_config", n->dir);
    snprintf(logp, sizeof(logp), "%s/sshd.log", n->dir);
    pid_t pid = fork();
    if (pid < 0)
        return drv_err_set(err, DRV_EIO, errno, "fork: %s", strerror(errno));
    if (pid == 0) {
        /* A session of its own: the worker's kill of the plugin's group spares it. */
        setsid();
        int nul = open("/dev/null", O_RDWR);
        int lg = open(logp, O_WRONLY | O_CREAT | O_APPEND, 0600);
        dup2(nul, 0);
        dup2(nul, 1);
        dup2(lg >= 0 ? lg : nul, 2);
        /* Nothing of the plugin's (the worker's pipes above all) stays open. */
        if (close_range(3, ~0u, 0) != 0)
            for (int fd = 3; fd < 65536; fd++)
                close(fd);
        signal(SIGPIPE, SIG_DFL);
        execl(c->unshare, "unshare", "--pid", "--fork", "--mount-proc", "--kill-child", c->sshd,
              "-D", "-f", cfg, "-E", logp, (char *)NULL);
        _exit(127);
    }
    n->unshare_pid = pid;
    n->init_pid = 0;
    n->pidns[0] = '\0';
    /* unshare forks sshd at once; find it and its namespace. */
    int64_t until = clock_mono_ms() + 10000;
    while (clock_mono_ms() < until) {
        pid_t ch = child_of(pid);
        char ns[64], mine[64];
        if (ch > 0 && pidns_of(ch, ns, sizeof(ns)) && pidns_of(getpid(), mine, sizeof(mine)) &&
            strcmp(ns, mine) != 0) {
            n->init_pid = ch;
            snprintf(n->pidns, sizeof(n->pidns), "%s", ns);
            break;
        }
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid)
            return drv_err_set(err, DRV_EIO, 0, "unshare exited at once (status %d); see %s",
                               WIFEXITED(st) ? WEXITSTATUS(st) : -1, logp);
        usleep(10000);
    }
    if (!n->init_pid) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return drv_err_set(err, DRV_EIO, 0, "sshd of node \"%s\" did not start in its namespace",
                           n->id);
    }
    log_info(MOD, "event=sshd-started id=%s address=%s unshare_pid=%d sshd_pid=%d pidns=%s", n->id,
             n->address, (int)pid, (int)n->init_pid, n->pidns);
    return lb_node_save(n, err);
}

int lb_node_wait_listening(const struct lb_node *n, int64_t deadline_ms, struct drv_err *err)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)n->port)};
    inet_pton(AF_INET, n->address, &sa.sin_addr);
    /* Dead means not ours for a second on end, not at one look: under CI load one create
       failed "died: (no log)" 3 ms after sshd-started, with nothing in sshd's log (a look
       at /proc while unshare's child turned into sshd is the likely cause; not reproduced). */
    int64_t gone_since = 0;
    for (;;) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int rc = fd >= 0 ? connect(fd, (struct sockaddr *)&sa, sizeof(sa)) : -1;
        if (fd >= 0)
            close(fd);
        if (rc == 0)
            return 0;
        bool running = lb_node_running(n);
        if (running)
            gone_since = 0;
        else if (!gone_since)
            gone_since = clock_mono_ms();
        if (!running && clock_mono_ms() - gone_since >= 1000) {
            char logp[900];
            snprintf(logp, sizeof(logp), "%s/sshd.log", n->dir);
            char *log = plugin_read_file(logp, 1 << 20, NULL, NULL);
            const char *last = "";
            if (log) {
                size_t l = strlen(log);
                while (l > 0 && log[l - 1] == '\n')
                    log[--l] = '\0';
                const char *nl = strrchr(log, '\n');
                last = nl ? nl + 1 : log;
            }
            drv_err_set(err, DRV_EIO, 0, "sshd of node \"%s\" on %s:%d died: %s", n->id, n->address,
                        n->port, *last ? last : "(no log)");
            free(log);
            return DRV_EIO;
        }
        if (clock_mono_ms() >= deadline_ms)
            return drv_err_set(err, DRV_ETIMEDOUT, 0, "sshd of node \"%s\" not listening on %s:%d",
                               n->id, n->address, n->port);
        usleep(20000);
    }
}

/* Processes in namespace ns, into pids (at most max); how many. */
static size_t procs_in_ns(const char *ns, pid_t *pids, size_t max)
{
    DIR *d = opendir("/proc");
    if (!d)
        return 0;
    size_t k = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (*end || pid <= 0)
            continue;
        char cur[64];
        if (pidns_of((pid_t)pid, cur, sizeof(cur)) && strcmp(cur, ns) == 0 &&
            !is_zombie((pid_t)pid)) {
            if (k < max)
                pids[k] = (pid_t)pid;
            k++;
        }
    }
    closedir(d);
    return k;
}

/* Kill every live process whose command line names the node's sshd_config. */
static void kill_by_config(const struct lb_node *n)
{
    DIR *d = opendir("/proc");
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (*end || pid <= 1 || pid == getpid())
            continue;
        if (ours(n, (pid_t)pid)) {
            log_info(MOD, "event=kill id=%s pid=%ld why=sshd-config", n->id, pid);
            kill((pid_t)pid, SIGKILL);
        }
    }
    closedir(d);
}

static int rm_cb(const char *path, const struct stat *st, int flag, struct FTW *f)
{
    (void)st;
    (void)flag;
    (void)f;
    if (remove(path) != 0 && errno != ENOENT)
        return errno ? errno : EIO;
    return 0;
}

int lb_node_destroy(const struct lb_conf *c, const char *id, int64_t deadline_ms,
                    struct drv_err *err)
{
    struct lb_node n;
    memset(&n, 0, sizeof(n));
    snprintf(n.id, sizeof(n.id), "%s", id);
    snprintf(n.dir, sizeof(n.dir), "%s/%s", c->root, id);
    bool have = lb_node_load(&n, NULL) == 0;
    if (have && n.pidns[0] && lb_node_running(&n)) {
        /* PID 1 of the namespace: the kernel kills everything else in it. */
        log_info(MOD, "event=kill id=%s pid=%d why=namespace-init", id, (int)n.init_pid);
        kill(n.init_pid, SIGKILL);
    }
    kill_by_config(&n); /* unshare, or an sshd whose start was never recorded */
    for (;;) {
        pid_t left[16];
        size_t k = have && n.pidns[0] ? procs_in_ns(n.pidns, left, 16) : 0;
        char buf[64];
        bool init_left = have && ours(&n, n.init_pid) && pidns_of(n.init_pid, buf, sizeof(buf)) &&
                         strcmp(buf, n.pidns) == 0;
        if (k == 0 && !init_left)
            break;
        if (clock_mono_ms() >= deadline_ms)
            return drv_err_set(err, DRV_ETIMEDOUT, 0,
                               "node \"%s\": %zu process(es) still alive in %s (first pid %d)", id,
                               k, n.pidns, k ? (int)left[0] : (int)n.init_pid);
        usleep(20000);
    }
    struct stat st;
    if (lstat(n.dir, &st) == 0) {
        int r = nftw(n.dir, rm_cb, 32, FTW_DEPTH | FTW_PHYS);
        if (r != 0)
            return drv_err_set(err, DRV_EIO, r > 0 ? r : errno, "removing \"%s\": %s", n.dir,
                               strerror(r > 0 ? r : errno));
        log_info(MOD, "event=dir-removed id=%s dir=%s", id, n.dir);
    }
    char addr[16] = "";
    if (!n.address[0] && lb_claim_find(c, id, addr) == 0)
        snprintf(n.address, sizeof(n.address), "%s", addr);
    /* The address is free once no process of the node holds it (invariant 2). */
    while (n.address[0] && !lb_address_free(n.address, c->port)) {
        if (clock_mono_ms() >= deadline_ms)
            return drv_err_set(err, DRV_ETIMEDOUT, 0, "node \"%s\": %s:%d still in use", id,
                               n.address, c->port);
        usleep(20000);
    }
    lb_claim_release(c, id);
    return 0;
}
