/*
 * rejoin: a restarted worker serves again at once (docs/worker.md "Restarts").
 *
 * A worker's member znode (members/worker/<id>) and its queue claims are ephemerals of
 * its ZooKeeper session. After a crash (SIGKILL, OOM) they stay until the server
 * expires that session, a whole session timeout later; a worker with its tenant's own
 * identity may not delete them (no tenant deletes in members/worker), so the restarted
 * worker waited that long to rejoin, and the dead one's items waited too.
 *
 * With worker.session_file, the worker keeps "0x<session id> <password hex>" in that
 * file (0600) and holds an exclusive flock on it for its whole life; every plugin's
 * guard keeps the locked descriptor open until it has killed its plugin's group
 * (worker__proc_opts.hold_fd; close-on-exec, so no plugin ever has it). On start:
 *
 *   open, flock(LOCK_EX | LOCK_NB)
 *     busy  -> another live process has it: the previous worker is not proven dead
 *              (frozen, or a second worker given the same file), so nothing is touched;
 *              the worker runs without the file and waits for the old session to end
 *              (event=session-file-busy)
 *     taken -> the previous worker and every guard it started are dead, so every
 *              plugin it ran is dead: its session has no live holder. The session named
 *              in the file is re-attached with its id and password on a short-lived
 *              handle and closed (event=previous-session-closed), which is its expiry
 *              brought forward: its member znode and claims go at once, as they would
 *              have a timeout later.
 *   then, on each new session of the worker (coord_state_cb, CONNECTED): write its id
 *   and password to the file (worker_rejoin_record).
 *
 * Why this keeps the guarantees (docs/worker.md "Guarantees"): a session is closed only
 * when the lock proves that no process of its worker is alive, so no plugin of it can
 * run beside the next delivery of its items; two live workers never share a session
 * (re-attach is only to close), nor both hold the lock.
 *
 * Threads: worker_rejoin_open blocks (start-up, before the loop runs);
 * worker_rejoin_record on the loop thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zookeeper/zookeeper.h>

#include "clock.h"
#include "coord.h"
#include "log.h"
#include "worker.h"

#define MOD "worker"

/* "0x<16 hex> <32 hex>\n" into id and pw; false when the file says nothing usable. */
static bool parse(const char *buf, int64_t *id, char pw[16])
{
    unsigned long long v;
    char hex[33];
    if (sscanf(buf, "0x%llx %32s", &v, hex) != 2 || strlen(hex) != 32 || !v)
        return false;
    for (int i = 0; i < 16; i++) {
        unsigned b;
        if (sscanf(hex + 2 * i, "%2x", &b) != 1)
            return false;
        pw[i] = (char)b;
    }
    *id = (int64_t)v;
    return true;
}

/* Re-attach to session id and close it; log what happened. */
static void close_previous(const struct coord_session_opts *o, int64_t id, const char pw[16])
{
    clientid_t cid = {.client_id = id};
    memcpy(cid.passwd, pw, sizeof(cid.passwd));
    int timeout = o->session_timeout_ms > 0 ? o->session_timeout_ms : 10000;
    zhandle_t *zh = zookeeper_init2(o->hosts, NULL, timeout, &cid, NULL, 0, log_zk_callback);
    if (!zh) {
        log_warn(MOD, "event=previous-session-unknown session=0x%" PRIx64 " error=%s", id,
                 strerror(errno));
        return;
    }
    int64_t until = clock_mono_ms() + timeout + 5000;
    int st = zoo_state(zh);
    while (st != ZOO_CONNECTED_STATE && st != ZOO_EXPIRED_SESSION_STATE &&
           st != ZOO_AUTH_FAILED_STATE && clock_mono_ms() < until) {
        usleep(20 * 1000);
        st = zoo_state(zh);
    }
    const clientid_t *got = zoo_client_id(zh);
    if (st == ZOO_CONNECTED_STATE && got && got->client_id == id) {
        int rc = zookeeper_close(zh); /* closeSession: its ephemerals go now */
        log_info(MOD, "event=previous-session-closed session=0x%" PRIx64 " zrc=%d", id, rc);
        return;
    }
    log_info(MOD, "event=previous-session-gone session=0x%" PRIx64 " state=%d", id, st);
    zookeeper_close(zh);
}

int worker_rejoin_open(const char *path, const struct coord_session_opts *o,
                       struct worker_rejoin *r, struct drv_err *err)
{
    memset(r, 0, sizeof(*r));
    if (!path || !*path)
        return 0;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    struct stat st;
    if (fd < 0)
        return drv_err_set(err, DRV_EIO, errno, "worker.session_file \"%s\": %s", path,
                           strerror(errno));
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (st.st_mode & 077) ||
        st.st_uid != geteuid()) {
        close(fd);
        return drv_err_set(err, DRV_EINVAL, 0,
                           "worker.session_file \"%s\": must be a regular file of this user, "
                           "mode 0600",
                           path);
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        close(fd);
        if (e != EWOULDBLOCK)
            return drv_err_set(err, DRV_EIO, e, "worker.session_file \"%s\": lock: %s", path,
                               strerror(e));
        log_warn(MOD,
                 "event=session-file-busy path=%s reason=\"another live process holds it: the "
                 "previous session is left to expire\"",
                 path);
        return 0;
    }
    r->fd = fd;
    char buf[128];
    ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
    int64_t id;
    char pw[16];
    if (n > 0) {
        buf[n] = '\0';
        if (parse(buf, &id, pw))
            close_previous(o, id, pw);
        explicit_bzero(buf, sizeof(buf));
        explicit_bzero(pw, sizeof(pw));
    }
    return 0;
}

void worker_rejoin_record(struct worker_rejoin *r, const struct coord_session *s)
{
    int64_t id;
    char pw[16];
    if (r->fd <= 2 || coord_session_credentials(s, &id, pw) != 0 || id == r->recorded)
        return;
    char buf[128];
    int len = snprintf(buf, sizeof(buf), "0x%016" PRIx64 " ", id);
    for (int i = 0; i < 16; i++)
        len += snprintf(buf + len, sizeof(buf) - (size_t)len, "%02x", (unsigned char)pw[i]);
    buf[len++] = '\n';
    if (pwrite(r->fd, buf, (size_t)len, 0) == len && ftruncate(r->fd, len) == 0)
        r->recorded = id;
    else
        log_warn(MOD, "event=session-file-write-failed error=%s", strerror(errno));
    explicit_bzero(buf, sizeof(buf));
    explicit_bzero(pw, sizeof(pw));
}

void worker_rejoin_close(struct worker_rejoin *r)
{
    if (r->fd > 2)
        close(r->fd); /* the lock goes with the last guard's copy */
    r->fd = 0;
}
