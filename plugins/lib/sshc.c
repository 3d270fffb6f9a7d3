/*
 * sshc: libssh2 sessions for plugins (see sshc.h).
 *
 * Connection steps, each bounded by timeout_ms:
 *
 *   TCP connect (non-blocking connect + poll)
 *     -> handshake (host key type asked for first when known)
 *     -> host key check: SHA-256 fingerprint of the key blob == expected
 *     -> public key authentication from memory
 *     -> ready: exec channels, SFTP
 *
 * The session is blocking with libssh2_session_set_timeout() for the short
 * steps. An exec switches it to non-blocking while it drains stdout and stderr
 * alternately (a command that fills one stream while the other is read must
 * not stall until the window is full), waiting on the socket in the
 * directions libssh2 asks for, up to the exec's deadline.
 */
#include "sshc.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libssh2.h>
#include <libssh2_sftp.h>

#include "clock.h"
#include "xalloc.h"

struct sshc {
    int fd;
    LIBSSH2_SESSION *s;
    LIBSSH2_SFTP *sftp;
    int timeout_ms;
    char peer[300];
    char fp[SSHKEY_FP_LEN];
    char type[40];
};

/* strerror, lowercased at its start, for messages in the house style. */
static const char *lc_strerror(int e, char *buf, size_t n)
{
    snprintf(buf, n, "%s", strerror(e));
    if (buf[0] >= 'A' && buf[0] <= 'Z' && !(buf[1] >= 'A' && buf[1] <= 'Z'))
        buf[0] = (char)(buf[0] - 'A' + 'a');
    return buf;
}

static int ssh_err(struct sshc *c, struct drv_err *err, const char *what)
{
    char *msg = NULL;
    int len = 0;
    int code = libssh2_session_last_error(c->s, &msg, &len, 0);
    if (code == LIBSSH2_ERROR_TIMEOUT)
        return drv_err_set(err, DRV_ETIMEDOUT, code, "%s on %s: timed out", what, c->peer);
    return drv_err_set(err, DRV_ESSH, code, "%s on %s: %s", what, c->peer,
                       msg && *msg ? msg : "failed");
}

static const char *type_name(int t)
{
    switch (t) {
    case LIBSSH2_HOSTKEY_TYPE_RSA:
        return "ssh-rsa";
    case LIBSSH2_HOSTKEY_TYPE_DSS:
        return "ssh-dss";
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_256:
        return "ecdsa-sha2-nistp256";
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_384:
        return "ecdsa-sha2-nistp384";
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_521:
        return "ecdsa-sha2-nistp521";
    case LIBSSH2_HOSTKEY_TYPE_ED25519:
        return "ssh-ed25519";
    }
    return "unknown";
}

static int tcp_connect(struct sshc *c, const char *host, int port, int timeout_ms,
                       struct drv_err *err)
{
    char ps[16], eb[128];
    snprintf(ps, sizeof(ps), "%d", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *ai = NULL;
    int g = getaddrinfo(host, ps, &hints, &ai);
    if (g != 0)
        return drv_err_set(err, DRV_EAGAIN, g, "connect to %s: %s", c->peer, gai_strerror(g));
    int last = ECONNREFUSED;
    for (struct addrinfo *a = ai; a; a = a->ai_next) {
        int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) {
            last = errno;
            continue;
        }
        int rc = connect(fd, a->ai_addr, a->ai_addrlen);
        if (rc != 0 && errno == EINPROGRESS) {
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            int pr;
            do
                pr = poll(&p, 1, timeout_ms);
            while (pr < 0 && errno == EINTR);
            if (pr == 0) {
                close(fd);
                freeaddrinfo(ai);
                return drv_err_set(err, DRV_ETIMEDOUT, ETIMEDOUT,
                                   "connect to %s: timed out after %d ms", c->peer, timeout_ms);
            }
            int so = 0;
            socklen_t sl = sizeof(so);
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &sl);
            rc = so ? -1 : 0;
            errno = so;
        }
        if (rc == 0) {
            int fl = fcntl(fd, F_GETFL);
            fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
            c->fd = fd;
            freeaddrinfo(ai);
            return 0;
        }
        last = errno;
        close(fd);
    }
    freeaddrinfo(ai);
    return drv_err_set(err, DRV_EAGAIN, last, "connect to %s: %s", c->peer,
                       lc_strerror(last, eb, sizeof(eb)));
}

static int check_host_key(struct sshc *c, const struct sshc_opts *o, struct drv_err *err)
{
    size_t len = 0;
    int type = 0;
    const char *blob = libssh2_session_hostkey(c->s, &len, &type);
    if (!blob || len == 0)
        return ssh_err(c, err, "reading the host key");
    sshkey_fingerprint_blob((const unsigned char *)blob, len, c->fp);
    snprintf(c->type, sizeof(c->type), "%s", type_name(type));
    if (o->accept_any_host_key)
        return 0;
    if (!o->host_key || !*o->host_key)
        return drv_err_set(err, DRV_EPERM, 0, "no expected host key for %s (no trust on first use)",
                           c->peer);
    /* Not the key the host offered: whoever named the address (a tenant's pool host) would
       learn the fingerprint of any host the worker reaches (an oracle). */
    if (strcmp(c->fp, o->host_key) != 0)
        return drv_err_set(err, DRV_EPERM, 0, "host key of %s does not match the one expected (%s)",
                           c->peer, o->host_key);
    return 0;
}

/* a (network order, 16 bytes for v6) as IPv4 when it is one or an IPv4-mapped v6. */
static bool as_v4(int family, const unsigned char *a, struct in_addr *v4)
{
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (family == AF_INET) {
        memcpy(v4, a, 4);
        return true;
    }
    if (memcmp(a, mapped, 12) == 0) {
        memcpy(v4, a + 12, 4);
        return true;
    }
    return false;
}

/*
 * Whether a socket of this network namespace listens on exactly v4:port (not on the
 * wildcard), from /proc/net/tcp: a loopback node's sshd binds its own address
 * (lbnode.c's ListenAddress), the host's own services 127.0.0.1 or the wildcard. The
 * kernel prints the address as the u32 it holds (network order read as a host int) and
 * the port in host order. -1 when the table cannot be read.
 */
static int listens_exactly(struct in_addr v4, int port)
{
    FILE *f = fopen("/proc/net/tcp", "r");
    if (!f)
        return -1;
    char line[512];
    int found = 0;
    while (!found && fgets(line, sizeof(line), f)) {
        unsigned int addr, lport, st;
        if (sscanf(line, " %*u: %8X:%4X %*8X:%*4X %2X", &addr, &lport, &st) == 3)
            found = st == 0x0A && (uint32_t)addr == (uint32_t)v4.s_addr && (int)lport == port;
    }
    fclose(f);
    return found;
}

int sshc_node_address(const char *host, int port, struct drv_err *err)
{
    unsigned char a[16];
    struct in_addr v4;
    int family = 0;
    if (host && inet_pton(AF_INET, host, a) == 1)
        family = AF_INET;
    else if (host && inet_pton(AF_INET6, host, a) == 1)
        family = AF_INET6;
    if (!family)
        return drv_err_set(err, DRV_EPERM, 0,
                           "refusing to connect to \"%.80s\": a node is reached at the address "
                           "its provider reported, not a name",
                           host ? host : "");
    bool is4 = as_v4(family, a, &v4);
    static const unsigned char any6[16], lo6[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    bool own = is4 ? (v4.s_addr == htonl(INADDR_ANY) || v4.s_addr == htonl(INADDR_LOOPBACK))
                   : (memcmp(a, any6, 16) == 0 || memcmp(a, lo6, 16) == 0);
    struct ifaddrs *ifs = NULL;
    if (!own && getifaddrs(&ifs) == 0) {
        for (struct ifaddrs *i = ifs; i && !own; i = i->ifa_next) {
            if (!i->ifa_addr)
                continue;
            if (i->ifa_addr->sa_family == AF_INET && is4)
                own = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr == v4.s_addr;
            else if (i->ifa_addr->sa_family == AF_INET6 && !is4)
                own = memcmp(&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, a, 16) == 0;
        }
        freeifaddrs(ifs);
    }
    if (own)
        return drv_err_set(err, DRV_EPERM, 0,
                           "refusing to connect to %s: an address of this host (the worker's), "
                           "never a node's",
                           host);
    /* The rest of 127.0.0.0/8 (and 0.0.0.0/8) reaches this host too: whatever listens on
       the wildcard (the host's sshd) answers on every one of them. Such an address is a
       node's only when something listens on exactly it: a loopback node's sshd. */
    uint32_t h4 = is4 ? ntohl(v4.s_addr) : 0;
    if (is4 && ((h4 >> 24) == 0 || (h4 >> 24) == 127)) {
        int p = port > 0 ? port : 22;
        int l = (h4 >> 24) == 127 ? listens_exactly(v4, p) : 0;
        if (l != 1)
            return drv_err_set(err, DRV_EPERM, 0,
                               "refusing to connect to %s: an address of this host (the worker's), "
                               "never a node's: no node listens on exactly %s:%d%s",
                               host, host, p, l < 0 ? " (/proc/net/tcp unreadable)" : "");
    }
    return 0;
}

struct sshc *sshc_connect(const struct sshc_opts *o, struct drv_err *err)
{
    static int inited;
    if (!inited) {
        libssh2_init(0);
        inited = 1;
    }
    if (!o->host || !*o->host) {
        drv_err_set(err, DRV_EINVAL, 0, "no host to connect to");
        return NULL;
    }
    if (o->user && o->accept_any_host_key) {
        drv_err_set(err, DRV_EINVAL, 0,
                    "refusing to authenticate to a host whose key is unchecked");
        return NULL;
    }
    if (o->nodes_only && sshc_node_address(o->host, o->port, err) != 0)
        return NULL;
    struct sshc *c = xcalloc(1, sizeof(*c));
    c->fd = -1;
    c->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 10000;
    int port = o->port > 0 ? o->port : 22;
    snprintf(c->peer, sizeof(c->peer), strchr(o->host, ':') ? "[%s]:%d" : "%s:%d", o->host, port);
    if (tcp_connect(c, o->host, port, c->timeout_ms, err) != 0)
        goto fail;
    c->s = libssh2_session_init();
    if (!c->s) {
        drv_err_set(err, DRV_ESSH, 0, "libssh2 session init failed");
        goto fail;
    }
    libssh2_session_set_timeout(c->s, c->timeout_ms);
    if (o->host_key_type && *o->host_key_type)
        libssh2_session_method_pref(c->s, LIBSSH2_METHOD_HOSTKEY, o->host_key_type);
    if (libssh2_session_handshake(c->s, c->fd) != 0) {
        ssh_err(c, err, "ssh handshake");
        if (o->host_key_type && *o->host_key_type && err)
            drv_err_prefix(err, "expecting a %s host key", o->host_key_type);
        goto fail;
    }
    if (check_host_key(c, o, err) != 0)
        goto fail;
    if (o->user) {
        if (!o->private_key || !*o->private_key) {
            drv_err_set(err, DRV_EINVAL, 0, "no private key to authenticate to %s", c->peer);
            goto fail;
        }
        const char *pub = o->public_key && *o->public_key ? o->public_key : NULL;
        int rc = libssh2_userauth_publickey_frommemory(c->s, o->user, strlen(o->user), pub,
                                                       pub ? strlen(pub) : 0, o->private_key,
                                                       strlen(o->private_key), NULL);
        if (rc != 0) {
            char *msg = NULL;
            libssh2_session_last_error(c->s, &msg, NULL, 0);
            if (rc == LIBSSH2_ERROR_TIMEOUT)
                drv_err_set(err, DRV_ETIMEDOUT, rc, "ssh authentication on %s: timed out", c->peer);
            else if (rc == LIBSSH2_ERROR_AUTHENTICATION_FAILED ||
                     rc == LIBSSH2_ERROR_PUBLICKEY_UNVERIFIED)
                drv_err_set(err, DRV_EPERM, rc, "ssh key authentication as %s on %s refused",
                            o->user, c->peer);
            else
                drv_err_set(err, DRV_ESSH, rc, "ssh key authentication as %s on %s: %s", o->user,
                            c->peer, msg && *msg ? msg : "failed");
            goto fail;
        }
    }
    return c;
fail:
    sshc_close(c);
    return NULL;
}

const char *sshc_host_key(const struct sshc *c)
{
    return c->fp;
}

const char *sshc_host_key_type(const struct sshc *c)
{
    return c->type;
}

const char *sshc_peer(const struct sshc *c)
{
    return c->peer;
}

void sshc_close(struct sshc *c)
{
    if (!c)
        return;
    if (c->sftp)
        libssh2_sftp_shutdown(c->sftp);
    if (c->s) {
        libssh2_session_set_timeout(c->s, 2000);
        libssh2_session_disconnect(c->s, "done");
        libssh2_session_free(c->s);
    }
    if (c->fd >= 0)
        close(c->fd);
    free(c);
}

void sshc_out_free(struct sshc_out *o)
{
    free(o->out);
    free(o->err);
    memset(o, 0, sizeof(*o));
}

/* A stream kept to its last cap bytes. */
struct tailbuf {
    char *p;
    size_t n, cap;
    bool cut;
};

static void tail_add(struct tailbuf *t, const char *d, size_t len)
{
    if (t->cap == 0) {
        t->cut = t->cut || len > 0;
        return;
    }
    if (len >= t->cap) {
        memcpy(t->p, d + len - t->cap, t->cap);
        t->cut = t->cut || t->n > 0 || len > t->cap;
        t->n = t->cap;
        return;
    }
    if (t->n + len > t->cap) {
        size_t drop = t->n + len - t->cap;
        memmove(t->p, t->p + drop, t->n - drop);
        t->n -= drop;
        t->cut = true;
    }
    memcpy(t->p + t->n, d, len);
    t->n += len;
}

static int wait_socket(struct sshc *c, int64_t deadline)
{
    int dir = libssh2_session_block_directions(c->s);
    struct pollfd p = {.fd = c->fd, .events = 0};
    if (dir & LIBSSH2_SESSION_BLOCK_INBOUND)
        p.events |= POLLIN;
    if (dir & LIBSSH2_SESSION_BLOCK_OUTBOUND)
        p.events |= POLLOUT;
    if (p.events == 0)
        p.events = POLLIN;
    int64_t left = deadline - clock_mono_ms();
    if (left <= 0)
        return -1;
    int pr = poll(&p, 1, left > 1000 ? 1000 : (int)left);
    return pr < 0 && errno != EINTR ? -1 : 0;
}

int sshc_exec(struct sshc *c, const char *cmd, const void *in, size_t in_len, size_t cap,
              int timeout_ms, struct sshc_out *out, struct drv_err *err)
{
    memset(out, 0, sizeof(*out));
    out->status = -1;
    if (timeout_ms <= 0)
        timeout_ms = c->timeout_ms;
    int64_t deadline = clock_mono_ms() + timeout_ms;
    /* What timed out, for the message: the command's first bytes. */
    char what[72];
    snprintf(what, sizeof(what), "%s", cmd);
    if (strlen(cmd) >= sizeof(what))
        memcpy(what + sizeof(what) - 4, "...", 4);
    for (char *p = what; *p; p++)
        if (*p == '\n' || *p == '\r' || *p == '"')
            *p = *p == '"' ? '\'' : ' ';
    LIBSSH2_CHANNEL *ch = libssh2_channel_open_session(c->s);
    if (!ch)
        return ssh_err(c, err, "opening a channel");
    if (libssh2_channel_exec(ch, cmd) != 0) {
        int rc = ssh_err(c, err, "starting a command");
        libssh2_channel_free(ch);
        return rc;
    }
    struct tailbuf o = {.p = xmalloc(cap + 1), .cap = cap};
    struct tailbuf e = {.p = xmalloc(cap + 1), .cap = cap};
    int rc = 0;
    libssh2_session_set_blocking(c->s, 0);
    size_t sent = 0;
    bool eof_sent = false;
    char buf[16384];
    for (;;) {
        bool progress = false, again = false;
        if (!eof_sent) {
            ssize_t w = in && sent < in_len
                            ? libssh2_channel_write(ch, (const char *)in + sent, in_len - sent)
                            : 0;
            if (w > 0) {
                sent += (size_t)w;
                progress = true;
            } else if (w == LIBSSH2_ERROR_EAGAIN) {
                again = true;
            } else if (w < 0) {
                rc = ssh_err(c, err, "writing a command's input");
                break;
            }
            if (!in || sent == in_len) {
                int r = libssh2_channel_send_eof(ch);
                if (r == 0)
                    eof_sent = true;
                else if (r == LIBSSH2_ERROR_EAGAIN)
                    again = true;
                else {
                    rc = ssh_err(c, err, "closing a command's input");
                    break;
                }
            }
        }
        for (int stream = 0; stream < 2; stream++) {
            ssize_t r = libssh2_channel_read_ex(ch, stream, buf, sizeof(buf));
            if (r > 0) {
                tail_add(stream ? &e : &o, buf, (size_t)r);
                progress = true;
            } else if (r == LIBSSH2_ERROR_EAGAIN) {
                again = true;
            } else if (r < 0) {
                rc = ssh_err(c, err, "reading a command's output");
                goto done;
            }
        }
        if (libssh2_channel_eof(ch) && !progress && eof_sent)
            break;
        if (!progress) {
            if (clock_mono_ms() >= deadline) {
                rc = drv_err_set(err, DRV_ETIMEDOUT, 0,
                                 "command \"%s\" on %s: timed out after %d ms "
                                 "(cluster config ssh.command_timeout)",
                                 what, c->peer, timeout_ms);
                break;
            }
            if (again && wait_socket(c, deadline) != 0 && clock_mono_ms() >= deadline) {
                rc = drv_err_set(err, DRV_ETIMEDOUT, 0,
                                 "command \"%s\" on %s: timed out after %d ms "
                                 "(cluster config ssh.command_timeout)",
                                 what, c->peer, timeout_ms);
                break;
            }
        }
    }
done:
    libssh2_session_set_blocking(c->s, 1);
    if (rc == 0) {
        libssh2_channel_close(ch);
        libssh2_channel_wait_closed(ch);
        char *sig = NULL;
        size_t siglen = 0;
        libssh2_channel_get_exit_signal(ch, &sig, &siglen, NULL, NULL, NULL, NULL);
        if (sig && siglen) {
            snprintf(out->signal, sizeof(out->signal), "%.*s", (int)siglen, sig);
            out->status = -1;
        } else {
            out->status = libssh2_channel_get_exit_status(ch);
        }
        free(sig); /* libssh2 allocates with the default allocator (malloc) */
    }
    libssh2_channel_free(ch);
    o.p[o.n] = '\0';
    e.p[e.n] = '\0';
    out->out = o.p;
    out->out_len = o.n;
    out->out_cut = o.cut;
    out->err = e.p;
    out->err_len = e.n;
    out->err_cut = e.cut;
    return rc;
}

static int sftp_ready(struct sshc *c, struct drv_err *err)
{
    if (c->sftp)
        return 0;
    c->sftp = libssh2_sftp_init(c->s);
    if (!c->sftp)
        return ssh_err(c, err, "starting sftp");
    return 0;
}

static int sftp_err(struct sshc *c, struct drv_err *err, const char *what, const char *path)
{
    unsigned long fx = c->sftp ? libssh2_sftp_last_error(c->sftp) : 0;
    char *msg = NULL;
    int code = libssh2_session_last_error(c->s, &msg, NULL, 0);
    if (code == LIBSSH2_ERROR_SFTP_PROTOCOL)
        return drv_err_set(err, DRV_ESSH, (int)fx, "sftp %s \"%s\" on %s: status %lu", what, path,
                           c->peer, fx);
    return drv_err_set(err, DRV_ESSH, code, "sftp %s \"%s\" on %s: %s", what, path, c->peer,
                       msg && *msg ? msg : "failed");
}

int sshc_mkdir(struct sshc *c, const char *path, unsigned mode, struct drv_err *err)
{
    if (sftp_ready(c, err) != 0)
        return DRV_ESSH;
    if (libssh2_sftp_mkdir(c->sftp, path, (long)mode) == 0)
        return 0;
    LIBSSH2_SFTP_ATTRIBUTES a;
    if (libssh2_sftp_stat(c->sftp, path, &a) == 0 && (a.flags & LIBSSH2_SFTP_ATTR_PERMISSIONS) &&
        LIBSSH2_SFTP_S_ISDIR(a.permissions))
        return 0;
    return sftp_err(c, err, "mkdir", path);
}

int sshc_put(struct sshc *c, const char *path, const void *data, size_t len, unsigned mode,
             struct drv_err *err)
{
    if (sftp_ready(c, err) != 0)
        return DRV_ESSH;
    LIBSSH2_SFTP_HANDLE *h = libssh2_sftp_open(
        c->sftp, path, LIBSSH2_FXF_WRITE | LIBSSH2_FXF_CREAT | LIBSSH2_FXF_TRUNC, (long)mode);
    if (!h)
        return sftp_err(c, err, "open", path);
    const char *p = data;
    size_t left = len;
    while (left > 0) {
        ssize_t w = libssh2_sftp_write(h, p, left);
        if (w <= 0) {
            int rc = sftp_err(c, err, "write", path);
            libssh2_sftp_close(h);
            return rc;
        }
        p += w;
        left -= (size_t)w;
    }
    /* The mode asked for at open is subject to the server's umask: set it. */
    LIBSSH2_SFTP_ATTRIBUTES a = {.flags = LIBSSH2_SFTP_ATTR_PERMISSIONS, .permissions = mode};
    libssh2_sftp_fsetstat(h, &a);
    if (libssh2_sftp_close(h) != 0)
        return sftp_err(c, err, "close", path);
    return 0;
}

int sshc_put_tree(struct sshc *c, const char *local, const char *remote, size_t *bytes,
                  struct drv_err *err)
{
    struct stat st;
    char eb[128];
    if (lstat(local, &st) != 0)
        return drv_err_set(err, errno == ENOENT ? DRV_ENOENT : DRV_EIO, errno, "%s: %s", local,
                           lc_strerror(errno, eb, sizeof(eb)));
    if (S_ISLNK(st.st_mode))
        return drv_err_set(err, DRV_EINVAL, 0, "%s: a symbolic link (refused)", local);
    if (S_ISREG(st.st_mode)) {
        if (st.st_size > (64 << 20))
            return drv_err_set(err, DRV_EINVAL, 0, "%s: larger than 64 MiB", local);
        int fd = open(local, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return drv_err_set(err, DRV_EIO, errno, "%s: %s", local,
                               lc_strerror(errno, eb, sizeof(eb)));
        size_t len = (size_t)st.st_size, got = 0;
        char *data = xmalloc(len + 1);
        while (got < len) {
            ssize_t r = read(fd, data + got, len - got);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                break;
            got += (size_t)r;
        }
        close(fd);
        if (got != len) {
            free(data);
            return drv_err_set(err, DRV_EIO, 0, "%s: short read", local);
        }
        int rc = sshc_put(c, remote, data, len, (st.st_mode & 0100) ? 0700 : 0600, err);
        free(data);
        if (rc == 0 && bytes)
            *bytes += len;
        return rc;
    }
    if (!S_ISDIR(st.st_mode))
        return drv_err_set(err, DRV_EINVAL, 0, "%s: not a file or directory", local);
    int rc = sshc_mkdir(c, remote, 0700, err);
    if (rc != 0)
        return rc;
    DIR *d = opendir(local);
    if (!d)
        return drv_err_set(err, DRV_EIO, errno, "%s: %s", local,
                           lc_strerror(errno, eb, sizeof(eb)));
    struct dirent *de;
    while (rc == 0 && (de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        char *l = xasprintf("%s/%s", local, de->d_name);
        char *r = xasprintf("%s/%s", remote, de->d_name);
        rc = sshc_put_tree(c, l, r, bytes, err);
        free(l);
        free(r);
    }
    closedir(d);
    return rc;
}

int sshc_host_key_parse(const char *in, char *fp, char *type, size_t type_len, struct drv_err *err)
{
    if (type && type_len)
        type[0] = '\0';
    if (!in)
        return drv_err_set(err, DRV_EINVAL, 0, "no host key");
    while (*in == ' ')
        in++;
    const char *sp = strchr(in, ' ');
    const char *fpart = in;
    if (sp && strncmp(sp + 1, "SHA256:", 7) == 0) {
        if (type && type_len)
            snprintf(type, type_len, "%.*s", (int)(sp - in), in);
        fpart = sp + 1;
    }
    if (strncmp(fpart, "SHA256:", 7) == 0) {
        size_t n = strcspn(fpart, " \r\n");
        if (n != 50)
            return drv_err_set(err, DRV_EINVAL, 0, "host key \"%.60s\": not a SHA256 fingerprint",
                               fpart);
        snprintf(fp, SSHKEY_FP_LEN, "%.*s", (int)n, fpart);
        return 0;
    }
    struct drv_err e2;
    if (sshkey_fingerprint_line(in, fp, type, type_len, &e2) != 0)
        return drv_err_set(err, DRV_EINVAL, 0,
                           "host key \"%.40s\": expected SHA256:... or a public key line", in);
    return 0;
}
