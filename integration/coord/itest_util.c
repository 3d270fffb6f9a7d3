/* itest_util: see itest.h. */
#include <arpa/inet.h>
#include <stdatomic.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "itest.h"
#include "xalloc.h"
#include "log.h"
#define THREADED 1 /* the synchronous calls of libzookeeper_mt */
#include <zookeeper/zookeeper.h>

static pid_t children[64];
static int n_children;
static char self[4096];

const char *it_zk(void)
{
    const char *zk = getenv("DROVER_ZK");
    CHECK(zk && *zk, "DROVER_ZK not set: run under scripts/with-stack");
    return zk;
}

struct coord_session *it_session(struct event_base *base, int timeout_ms)
{
    return it_session_at(base, it_zk(), timeout_ms);
}

struct coord_session *it_session_at(struct event_base *base, const char *hosts, int timeout_ms)
{
    struct drv_err err;
    struct coord_session_opts o = {.hosts = hosts, .session_timeout_ms = timeout_ms};
    struct coord_session *s = coord_session_new(base, &o, &err);
    CHECK(s, "%s", err.msg);
    CHECK(coord_session_wait_connected(s, 30000, &err) == 0, "%s", err.msg);
    return s;
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    event_base_loopbreak(arg);
}

bool it_run_until_fn(struct event_base *base, bool (*pred)(void *), void *arg, int timeout_ms)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    struct event *tick = event_new(base, -1, EV_PERSIST, on_tick, base);
    struct timeval tv = {0, 20000};
    event_add(tick, &tv);
    while (!pred(arg)) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        long ms = (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
        if (ms >= timeout_ms)
            break;
        event_base_loop(base, EVLOOP_ONCE);
    }
    event_free(tick);
    return pred(arg);
}

static bool flag_pred(void *arg)
{
    return *(volatile bool *)arg;
}

bool it_run_until(struct event_base *base, volatile bool *flag, int timeout_ms)
{
    return it_run_until_fn(base, flag_pred, (void *)flag, timeout_ms);
}

static bool never(void *arg)
{
    return false;
}

void it_run_for(struct event_base *base, int ms)
{
    it_run_until_fn(base, never, NULL, ms);
}

static void kill_children(void)
{
    for (int i = 0; i < n_children; i++)
        if (children[i] > 0) {
            kill(children[i], SIGKILL);
            waitpid(children[i], NULL, 0);
        }
}

void it_self_path(const char *argv0)
{
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n > 0)
        self[n] = '\0';
    else
        snprintf(self, sizeof(self), "%s", argv0);
    atexit(kill_children);
    signal(SIGPIPE, SIG_IGN);
}

const char *it_self(void)
{
    return self;
}

pid_t it_spawn(char *const argv[])
{
    CHECK(n_children < 64, "too many children");
    pid_t pid = fork();
    CHECK(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        execv(self, argv);
        _exit(127);
    }
    children[n_children++] = pid;
    return pid;
}

int it_wait(pid_t pid)
{
    int st = 0;
    CHECK(waitpid(pid, &st, 0) == pid, "waitpid: %s", strerror(errno));
    for (int i = 0; i < n_children; i++)
        if (children[i] == pid)
            children[i] = 0;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
}

/* ---- ZooKeeper servers --------------------------------------------------- */

static char *pid_file(int n)
{
    const char *dir = getenv("DROVER_STACK_DIR");
    CHECK(dir, "DROVER_STACK_DIR not set");
    return xasprintf("%s/pids/zk%d.pid", dir, n);
}

pid_t it_zk_pid(int n)
{
    char *f = pid_file(n);
    FILE *fp = fopen(f, "r");
    CHECK(fp, "cannot open \"%s\"", f);
    long pid = 0;
    CHECK(fscanf(fp, "%ld", &pid) == 1, "bad pid file \"%s\"", f);
    fclose(fp);
    free(f);
    return (pid_t)pid;
}

/* argv of server n, saved before it is killed so that it can be started again. */
static char *saved_cmd[8];
static size_t saved_len[8];

void it_zk_kill(int n)
{
    pid_t pid = it_zk_pid(n);
    char *p = xasprintf("/proc/%d/cmdline", (int)pid);
    int fd = open(p, O_RDONLY);
    CHECK(fd >= 0, "cannot open \"%s\"", p);
    char *buf = xmalloc(65536);
    ssize_t len = read(fd, buf, 65536);
    close(fd);
    CHECK(len > 0, "empty cmdline for zk%d", n);
    free(saved_cmd[n]);
    saved_cmd[n] = buf;
    saved_len[n] = (size_t)len;
    CHECK(kill(pid, SIGKILL) == 0, "kill zk%d: %s", n, strerror(errno));
    /* Not our child: wait until /proc says it is gone or a zombie. */
    for (int i = 0; i < 500; i++) {
        struct stat st;
        if (stat(p, &st) != 0)
            break;
        char sp[64];
        snprintf(sp, sizeof(sp), "/proc/%d/stat", (int)pid);
        FILE *fp = fopen(sp, "r");
        char state = 0;
        if (fp) {
            int r = fscanf(fp, "%*d %*s %c", &state);
            (void)r;
            fclose(fp);
        }
        if (state == 'Z' || !fp)
            break;
        usleep(20000);
    }
    free(p);
}

void it_zk_start(int n)
{
    CHECK(saved_cmd[n], "zk%d was not killed by this test", n);
    char *argv[128];
    int argc = 0;
    for (size_t i = 0; i < saved_len[n] && argc < 127; i += strlen(saved_cmd[n] + i) + 1)
        argv[argc++] = saved_cmd[n] + i;
    argv[argc] = NULL;
    const char *dir = getenv("DROVER_STACK_DIR");
    char *log = xasprintf("%s/zk%d/stdout.log", dir, n);
    pid_t pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) {
        setsid();
        int fd = open(log, O_WRONLY | O_APPEND | O_CREAT, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0)
            dup2(nul, 0);
        execvp(argv[0], argv);
        _exit(127);
    }
    free(log);
    char *f = pid_file(n);
    FILE *fp = fopen(f, "w");
    CHECK(fp, "cannot write \"%s\"", f);
    fprintf(fp, "%d\n", (int)pid);
    fclose(fp);
    free(f);
}

static int zk_port(int n)
{
    const char *ports = getenv("DROVER_ZK_PORTS");
    CHECK(ports, "DROVER_ZK_PORTS not set");
    const char *p = ports;
    for (int i = 1; i < n; i++) {
        p = strchr(p, ' ');
        if (!p)
            return 0;
        p++;
    }
    return atoi(p);
}

int it_zk_count(void)
{
    int n = 0;
    while (zk_port(n + 1) > 0)
        n++;
    return n;
}

static bool zk_mode(int n, const char *want)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)zk_port(n))};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bool ok = false;
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 && write(fd, "srvr", 4) == 4) {
        char buf[4096];
        size_t got = 0;
        ssize_t r;
        while (got < sizeof(buf) - 1 && (r = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0)
            got += (size_t)r;
        buf[got] = '\0';
        char m[64];
        snprintf(m, sizeof(m), "Mode: %s", want);
        ok = strstr(buf, m) != NULL;
    }
    close(fd);
    return ok;
}

int it_zk_leader(void)
{
    for (int n = 1; n <= it_zk_count(); n++)
        if (zk_mode(n, "leader"))
            return n;
    return 0;
}

void it_expire(struct coord_session *s)
{
    int64_t id;
    clientid_t cid;
    CHECK(coord_session_credentials(s, &id, cid.passwd) == 0, "no session to expire");
    cid.client_id = id;
    /*
     * Take the session over from a second handle and close it there. The
     * owner's client may reconnect (moving the session back) before the close
     * request is processed, so check from a fresh handle that the session is
     * really gone, and close it again until it is.
     */
    for (int attempt = 0; attempt < 20; attempt++) {
        zhandle_t *zh = zookeeper_init2(it_zk(), NULL, 10000, &cid, NULL, 0, log_zk_callback);
        CHECK(zh, "zookeeper_init2");
        int st = 0;
        for (int i = 0; i < 1500; i++) {
            st = zoo_state(zh);
            if (st == ZOO_CONNECTED_STATE || st == ZOO_EXPIRED_SESSION_STATE)
                break;
            usleep(10000);
        }
        zookeeper_close(zh);
        if (st == ZOO_EXPIRED_SESSION_STATE)
            return;
        CHECK(st == ZOO_CONNECTED_STATE, "second handle state %d", st);
        usleep(50000);
    }
    CHECK(false, "session 0x%llx would not end", (unsigned long long)id);
}

/* ---- the shared counter of the lock test ------------------------------------ */

struct rd {
    bool done;
    int rc;
    char data[256];
};

static void on_get(int rc, const char *data, int version, void *arg)
{
    struct rd *r = arg;
    r->rc = rc;
    snprintf(r->data, sizeof(r->data), "%s", data ? data : "");
    r->done = true;
}

void it_read_counter(struct event_base *base, struct coord_session *s, long *count, long *token)
{
    struct rd r = {0};
    coord_get(s, "/drover/itest/counter", on_get, &r);
    CHECK(it_run_until(base, &r.done, 30000) && r.rc == 0, "read counter rc %d", r.rc);
    CHECK(sscanf(r.data, "{\"count\":%ld,\"token\":%ld}", count, token) == 2, "bad counter %s",
          r.data);
}

static void on_written(const struct coord_txn_result *res, void *arg)
{
    struct rd *r = arg;
    r->rc = res->rc;
    r->done = true;
}

void it_write_counter(struct event_base *base, struct coord_session *s, long count, long token)
{
    struct rd e = {0};
    coord_ensure_path(s, "/drover/itest/counter", NULL, NULL);
    char json[128];
    snprintf(json, sizeof(json), "{\"count\":%ld,\"token\":%ld}", count, token);
    struct coord_txn *t = coord_txn_new();
    coord_txn_set(t, "/drover/itest/counter", json, -1);
    coord_txn_commit(s, t, NULL, on_written, &e);
    CHECK(it_run_until(base, &e.done, 30000) && e.rc == 0, "write counter rc %d", e.rc);
}

void it_read_check(struct event_base *base, struct coord_session *s, const char *path,
                   const char *want)
{
    struct rd r = {0};
    coord_get(s, path, on_get, &r);
    CHECK(it_run_until(base, &r.done, 30000) && r.rc == 0, "read %s rc %d", path, r.rc);
    CHECK(strcmp(r.data, want) == 0, "%s holds %s, want %s", path, r.data, want);
}

int it_read_rc(struct event_base *base, struct coord_session *s, const char *path)
{
    struct rd r = {0};
    coord_get(s, path, on_get, &r);
    CHECK(it_run_until(base, &r.done, 30000), "read %s", path);
    return r.rc;
}

void it_read_until(struct event_base *base, struct coord_session *s, const char *path,
                   const char *want, int timeout_ms)
{
    struct rd r = {0};
    for (int waited = 0;; waited += 20) {
        memset(&r, 0, sizeof(r));
        coord_get(s, path, on_get, &r);
        CHECK(it_run_until(base, &r.done, 30000), "read %s", path);
        if (r.rc == 0 && strcmp(r.data, want) == 0)
            return;
        CHECK(waited < timeout_ms, "%s: rc %d, holds %s, want %s", path, r.rc, r.data, want);
        it_run_for(base, 20);
    }
}

/* ---- child output ------------------------------------------------------------ */

pid_t it_spawn_pipe(char *const argv[], int *out_fd)
{
    int fds[2];
    CHECK(pipe(fds) == 0, "pipe");
    CHECK(n_children < 64, "too many children");
    pid_t pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], 1);
        close(fds[1]);
        execv(self, argv);
        _exit(127);
    }
    close(fds[1]);
    children[n_children++] = pid;
    *out_fd = fds[0];
    return pid;
}

bool it_read_line(int fd, char *buf, size_t n, int timeout_ms)
{
    size_t got = 0;
    while (got + 1 < n) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, timeout_ms);
        if (r <= 0)
            return false;
        ssize_t k = read(fd, buf + got, 1);
        if (k <= 0)
            return false;
        if (buf[got] == '\n') {
            buf[got] = '\0';
            return true;
        }
        got++;
    }
    buf[got] = '\0';
    return true;
}

/* ---- a TCP proxy that can drop, hold or swallow traffic ----------------------------- */

#include <pthread.h>

/*
 * One thread per proxied connection. Both directions are cut into ZooKeeper
 * frames (a 4-byte length, then the body), so that a reply can be told apart
 * by the op type of the request it answers: the client's frames after its
 * connect request start with xid and type, the server's with xid.
 */
struct it_proxy {
    int listen_fd, target_port;
    char *addr;
    atomic_int blackhole, cut_gen, down, silent, hold, swallow;
    atomic_int requests[32]; /* client requests seen, by op type (it_proxy_requests) */
};

struct fbuf {
    char *b;
    size_t n, cap;
};

struct pconn {
    struct it_proxy *p;
    int c, s, gen;
    struct fbuf up, down;
    bool up_first, down_first;
    bool dropping; /* a swallowed reply passed: every later one is dropped too */
    int32_t xid[4096];
    int32_t type[4096];
};

static bool fb_read(struct fbuf *f, int fd)
{
    if (f->cap - f->n < 65536) {
        f->cap = f->cap ? f->cap * 2 : 131072;
        f->b = xrealloc(f->b, f->cap);
    }
    ssize_t k = read(fd, f->b + f->n, f->cap - f->n);
    if (k <= 0)
        return false;
    f->n += (size_t)k;
    return true;
}

static uint32_t be32(const char *p)
{
    const unsigned char *u = (const unsigned char *)p;
    return (uint32_t)u[0] << 24 | (uint32_t)u[1] << 16 | (uint32_t)u[2] << 8 | u[3];
}

static bool write_all(int fd, const char *b, size_t n)
{
    while (n > 0) {
        ssize_t k = write(fd, b, n);
        if (k <= 0)
            return false;
        b += k;
        n -= (size_t)k;
    }
    return true;
}

/* Forward the complete frames of f to fd; down: server to client. */
static bool fb_forward(struct pconn *k, struct fbuf *f, int fd, bool down)
{
    size_t off = 0;
    bool ok = true;
    while (ok && f->n - off >= 4) {
        size_t len = be32(f->b + off) + 4;
        if (f->n - off < len)
            break;
        const char *body = f->b + off + 4;
        bool drop = false;
        if (!down && !k->up_first && len >= 12) {
            int32_t xid = (int32_t)be32(body);
            k->xid[(uint32_t)xid % 4096] = xid;
            int32_t type = (int32_t)be32(body + 4);
            k->type[(uint32_t)xid % 4096] = type;
            if (type >= 0 && type < 32)
                atomic_fetch_add(&k->p->requests[type], 1);
        } else if (down) {
            drop = atomic_load(&k->p->blackhole) != 0 || k->dropping;
            int sw = atomic_load(&k->p->swallow);
            if (sw && !k->down_first && len >= 8) {
                /*
                 * The client takes replies in order only: from the first
                 * swallowed one on, the connection answers nothing (as if it
                 * died right after the request reached the server).
                 */
                int32_t xid = (int32_t)be32(body);
                if (k->xid[(uint32_t)xid % 4096] == xid && k->type[(uint32_t)xid % 4096] == sw &&
                    xid > 0)
                    drop = k->dropping = true;
            }
        }
        if (down)
            k->down_first = false;
        else
            k->up_first = false;
        if (!drop)
            ok = write_all(fd, f->b + off, len);
        off += len;
    }
    if (off) {
        memmove(f->b, f->b + off, f->n - off);
        f->n -= off;
    }
    return ok;
}

static void *proxy_conn(void *arg)
{
    struct pconn *k = arg;
    struct it_proxy *p = k->p;
    k->s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)p->target_port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(k->s, (struct sockaddr *)&a, sizeof(a)) != 0)
        goto out;
    for (;;) {
        if (atomic_load(&p->cut_gen) != k->gen)
            break;
        if (atomic_load(&p->silent)) {
            /* A network that drops everything: no byte moves, nothing is closed. */
            usleep(20000);
            continue;
        }
        bool hold = atomic_load(&p->hold) != 0;
        struct pollfd f[2] = {{.fd = k->c, .events = POLLIN}, {.fd = k->s, .events = POLLIN}};
        if (hold)
            f[1].fd = -1;
        if (poll(f, 2, 50) < 0)
            break;
        if (f[0].revents && (!fb_read(&k->up, k->c) || !fb_forward(k, &k->up, k->s, false)))
            break;
        if (f[1].revents && !fb_read(&k->down, k->s))
            break;
        if (!hold && !fb_forward(k, &k->down, k->c, true))
            break;
    }
out:
    close(k->c);
    close(k->s);
    free(k->up.b);
    free(k->down.b);
    free(k);
    return NULL;
}

static void *proxy_main(void *arg)
{
    struct it_proxy *p = arg;
    for (;;) {
        int c = accept(p->listen_fd, NULL, NULL);
        if (c < 0)
            continue;
        if (atomic_load(&p->down)) {
            close(c);
            continue;
        }
        struct pconn *k = xcalloc(1, sizeof(*k));
        k->p = p;
        k->c = c;
        k->gen = atomic_load(&p->cut_gen);
        k->up_first = k->down_first = true;
        pthread_t t;
        pthread_create(&t, NULL, proxy_conn, k);
        pthread_detach(t);
    }
    return NULL;
}

struct it_proxy *it_proxy_new(int target_port)
{
    struct it_proxy *p = xcalloc(1, sizeof(*p));
    p->target_port = target_port;
    p->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(bind(p->listen_fd, (struct sockaddr *)&a, sizeof(a)) == 0, "bind");
    CHECK(listen(p->listen_fd, 64) == 0, "listen");
    socklen_t len = sizeof(a);
    getsockname(p->listen_fd, (struct sockaddr *)&a, &len);
    p->addr = xasprintf("127.0.0.1:%d", ntohs(a.sin_port));
    pthread_t t;
    pthread_create(&t, NULL, proxy_main, p);
    pthread_detach(t);
    return p;
}

const char *it_proxy_addr(const struct it_proxy *p)
{
    return p->addr;
}

void it_proxy_set_down(struct it_proxy *p, bool on)
{
    atomic_store(&p->down, on);
}

void it_proxy_set_blackhole(struct it_proxy *p, bool on)
{
    atomic_store(&p->blackhole, on);
}

void it_proxy_set_silent(struct it_proxy *p, bool on)
{
    atomic_store(&p->silent, on);
}

void it_proxy_set_hold(struct it_proxy *p, bool on)
{
    atomic_store(&p->hold, on);
}

int it_proxy_requests(struct it_proxy *p, int op)
{
    return op >= 0 && op < 32 ? atomic_load(&p->requests[op]) : 0;
}

void it_proxy_set_swallow(struct it_proxy *p, int op)
{
    atomic_store(&p->swallow, op);
}

void it_proxy_cut_all(struct it_proxy *p)
{
    atomic_fetch_add(&p->cut_gen, 1);
    atomic_store(&p->blackhole, 0);
}

/* The single proxy of the older tests. */
static struct it_proxy *the_proxy;

char *it_proxy_start(int target_port)
{
    the_proxy = it_proxy_new(target_port);
    return xstrdup(the_proxy->addr);
}

void it_proxy_blackhole(bool on)
{
    it_proxy_set_blackhole(the_proxy, on);
}

void it_proxy_down(bool down)
{
    it_proxy_set_down(the_proxy, down);
}

void it_proxy_cut(void)
{
    it_proxy_cut_all(the_proxy);
}

int it_zk_port(int n)
{
    return zk_port(n);
}

void it_wait_gone(const char *path)
{
    zhandle_t *zh = zookeeper_init2(it_zk(), NULL, 10000, NULL, NULL, 0, log_zk_callback);
    CHECK(zh, "zookeeper_init2");
    for (int i = 0; i < 1500 && zoo_state(zh) != ZOO_CONNECTED_STATE; i++)
        usleep(10000);
    int rc = ZOK;
    for (int i = 0; i < 3000; i++) {
        struct Stat st;
        rc = zoo_exists(zh, path, 0, &st);
        if (rc == ZNONODE)
            break;
        usleep(10000);
    }
    zookeeper_close(zh);
    CHECK(rc == ZNONODE, "%s is still there (rc %d)", path, rc);
}

struct coord_session *it_session_nowait(struct event_base *base, const char *hosts, int timeout_ms,
                                        coord_state_cb on_state, void *arg)
{
    struct drv_err err;
    struct coord_session_opts o = {
        .hosts = hosts, .session_timeout_ms = timeout_ms, .on_state = on_state, .arg = arg};
    struct coord_session *s = coord_session_new(base, &o, &err);
    CHECK(s, "%s", err.msg);
    return s;
}

long it_now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* ---- answers, queues ---- */

void it_on_rc(int rc, void *arg)
{
    struct it_rc *o = arg;
    o->rc = rc;
    o->calls++;
    o->done = true;
}

int it_wait_rc(struct event_base *base, struct it_rc *o, int ms)
{
    CHECK(it_run_until(base, &o->done, ms), "no answer within %d ms", ms);
    return o->rc;
}

struct coord_queue *it_queue_open(struct event_base *base, struct coord_session *s,
                                  const char *path, unsigned shards, const char *consumer,
                                  coord_lost_cb on_lost, void *lost_arg, int ms)
{
    struct it_rc o = {0};
    struct coord_queue_opts qo = {
        .shards = shards, .consumer_id = consumer, .on_lost = on_lost, .lost_arg = lost_arg};
    struct coord_queue *q = coord_queue_open(s, path, &qo, it_on_rc, &o);
    CHECK(it_wait_rc(base, &o, ms) == 0, "open %s rc %d", path, o.rc);
    return q;
}

struct stats_out {
    bool done;
    int rc;
    struct coord_queue_stats st;
};

static void on_stats(const struct coord_queue_stats *st, int rc, void *arg)
{
    struct stats_out *o = arg;
    o->rc = rc;
    if (st)
        o->st = *st;
    o->done = true;
}

struct coord_queue_stats it_queue_stats(struct event_base *base, struct coord_queue *q)
{
    struct stats_out o = {0};
    coord_queue_stats(q, on_stats, &o);
    CHECK(it_run_until(base, &o.done, 20000) && o.rc == 0, "stats rc %d", o.rc);
    return o.st;
}

void it_on_txn(const struct coord_txn_result *r, void *arg)
{
    struct it_txn *o = arg;
    o->rc = r->rc;
    o->failed_op = r->failed_op;
    o->zrc = r->zrc;
    for (size_t i = 0; i < r->n && i < 4; i++)
        snprintf(o->created[i], sizeof(o->created[i]), "%s",
                 r->created && r->created[i] ? r->created[i] : "");
    o->done = true;
}

struct it_txn it_wait_txn(struct event_base *base, struct it_txn *o, int ms)
{
    CHECK(it_run_until(base, &o->done, ms), "commit never answered");
    return *o;
}

void it_on_take(struct coord_queue_item *it, int rc, void *arg)
{
    struct it_take *o = arg;
    o->rc = rc;
    if (it) {
        snprintf(o->id, sizeof(o->id), "%s", it->id);
        snprintf(o->json, sizeof(o->json), "%s", it->json);
        coord_queue_item_free(it);
    }
    o->done = true;
}

struct it_take it_take_one(struct event_base *base, struct coord_queue *q, int ms)
{
    struct it_take o = {0};
    coord_queue_take(q, ms, it_on_take, &o);
    CHECK(it_run_until(base, &o.done, 30000), "take never answered");
    return o;
}

void it_on_got(int rc, const char *data, int version, void *arg)
{
    struct it_got *g = arg;
    g->rc = rc;
    g->version = version;
    snprintf(g->data, sizeof(g->data), "%s", rc == 0 && data ? data : "");
    g->done = true;
}

struct it_got it_get(struct event_base *base, struct coord_session *s, const char *path)
{
    struct it_got g = {0};
    coord_get(s, path, it_on_got, &g);
    CHECK(it_run_until(base, &g.done, 20000), "no answer to get %s", path);
    return g;
}

struct kids {
    bool done;
    int rc;
    size_t n;
};

static void on_kids(int rc, char *const *names, size_t n, void *arg)
{
    struct kids *k = arg;
    k->rc = rc;
    k->n = n;
    k->done = true;
}

size_t it_children_count(struct event_base *base, struct coord_session *s, const char *path,
                         bool must_exist)
{
    struct kids k = {0};
    coord_children(s, path, on_kids, &k);
    CHECK(it_run_until(base, &k.done, 20000) && (!must_exist || k.rc == 0), "list %s rc %d", path,
          k.rc);
    return k.rc == 0 ? k.n : 0;
}
