/*
 * proc: run one plugin as a child process, on the worker's event loop.
 *
 * The promise (invariant 3, docs/architecture.md): when the worker decides a plugin must
 * stop (time limit, claim lost, SIGTERM past the grace) every process of the
 * plugin dies; a plugin never outlives its worker, even a worker killed
 * with SIGKILL, which can run no code of its own; and a plugin never runs
 * past its lease, even under a worker that is frozen (SIGSTOP, a stalled
 * loop) and so can neither notice its claim is lost nor kill anything.
 *
 * Processes:
 *
 *   worker (loop thread) --fork--> guard --fork--> plugin (execve)
 *                                    |               |
 *             process group leader --+---------------+-- one process group
 *
 *   1. The guard becomes the leader of a new process group, asks the kernel
 *      for SIGTERM when its parent (the worker) dies (PR_SET_PDEATHSIG), and
 *      checks the parent is still the worker (it may have died before).
 *   2. It forks the plugin, which resets its signals, drops to the plugin user
 *      when asked (run_as: setgroups, setgid, setuid, every capability cleared,
 *      and checks that setuid(0) then fails; sandbox.c says who) and execs. A drop or an exec that
 *      fails writes 'E' + errno on the status pipe (close-on-exec, so a
 *      successful exec just closes it there).
 *   3. The guard's own loop: poll the plugin's pidfd and the lease pipe,
 *      with the time left on the lease as the timeout (below).
 *   4. The plugin ends: the guard writes 'S' + its wait status on the status
 *      pipe, then SIGKILLs its own group (itself and whatever the plugin left
 *      behind).
 *   5. The lease runs out first: the guard writes 'L' on the status pipe and
 *      SIGKILLs its group; the worker reads lease_expired.
 *   6. When the worker dies, the guard's SIGTERM handler SIGKILLs the group.
 *   The guard runs between fork and _exit only async-signal-safe calls (and
 *   plain system calls: poll, pidfd_open), as a forked copy of a threaded
 *   process must.
 *
 * The lease (issue 22): the worker's claim on a task ends when its ZooKeeper
 * session can expire, and a frozen worker cannot act on that. So the guard,
 * a separate process with a loop of its own, holds the plugin to a lease
 * that only a running worker loop renews:
 *
 *   worker loop                              guard
 *   -----------                              -----
 *   spawn: lease_until = U0  --------------> until = U0
 *   every timeout/6: write U (8 bytes) ----> until = max(until, U)
 *                                            poll(pidfd, lease pipe,
 *                                                 until - now)
 *   (frozen: writes nothing)                 now >= until: 'L', SIGKILL group
 *
 *   guard:  WAITING --renewal--> WAITING
 *              |  \--plugin ended--> 'S', kill group, exit
 *              \--now >= until (monotonic)--> 'L', kill group, exit
 *
 * U is an absolute moment of CLOCK_BOOTTIME (clock_boot_ms), which is one
 * clock for every process of the host, so a renewal means the same whenever
 * the guard reads it: a renewal read late (the guard descheduled, or frozen
 * with the worker and thawed) extends nothing past the moment it names. The
 * worker computes U (worker.c): the moment the ZooKeeper server last showed
 * the session alive (coord_session_heard_ms) plus half the negotiated session
 * timeout. The server expires the session, and so lets the queue deliver the
 * item to another worker, no earlier than heard + timeout: the kill comes
 * half a timeout before that. The half absorbs the guard's scheduling and
 * the kill's delivery; ZooKeeper rounds expiry up to its tick, never down.
 * It is coord's own rule for a silent session (a claim is given up half a
 * timeout after the last answer), so a worker whose loop runs but whose
 * server went quiet sees its plugin killed about when coord reports the
 * claim lost.
 *
 * What holds when more than the worker stops:
 *   - the worker alone stopped (SIGSTOP to its pid or to its process group:
 *     the guard leads a group of its own, so it keeps running): the plugin
 *     dies at U, before the item can go to another worker
 *     (engine_worker_freeze, test_proc's frozen worker).
 *   - worker, guard and plugin all stopped (a cgroup freezer, a SIGSTOP to
 *     each): the plugin does nothing while stopped. When they are thawed the
 *     guard finds the lease run out at once (the clock went on) and kills
 *     the group, but the plugin may run for the few ms until the guard has
 *     been scheduled, maybe beside another worker's delivery. Not held for
 *     those ms; no test.
 *   - the guard and the plugin stopped (their group): the plugin does
 *     nothing; the worker's time limit kills it.
 *   - the whole host suspended (a VM paused, a laptop asleep): CLOCK_BOOTTIME
 *     goes on meanwhile (CLOCK_MONOTONIC would not), and every moment of the
 *     lease is on it, from coord's "heard" (coord_session_heard_ms) to the
 *     guard's poll: after the resume the worker's renewal names heard plus
 *     half a timeout, long past, and the guard kills the group. (Before issue
 *     33 the worker carried a monotonic "heard" over as a delay from now,
 *     which renewed the lease for half a session after a resume while the
 *     server had expired it.) The guard's poll wakes late by the suspension,
 *     but the worker's first renewal after the resume wakes it; the plugin
 *     may run until then, a sixth of the timeout at most, as with the whole
 *     group frozen (above). No host here can be suspended: test_proc's
 *     lease_after_suspend checks the arithmetic with a suspend modelled on
 *     the two clocks, and scripts/chaos's `suspend` fault freezes a worker
 *     with its plugins (guards too) past its session as a stand-in.
 *
 * The worker side, one state machine per proc, all on the loop thread:
 *
 *   RUNNING --guard exited (pidfd readable)--> DRAINING --out, err, status
 *      |                                          |         pipes at EOF,
 *      | time limit / kill / output too large     |         or 200 ms--> DONE
 *      +--> SIGKILL to the group --(still RUNNING until the guard exits)
 *   worker__proc_lease writes renewals while RUNNING; the guard's 'L' record
 *   sets lease_expired (the worker writes nothing more for that delivery).
 *
 * Reading: each of the worker's pipes is read level-triggered, at most
 * WORKER__PROC_READ_TURN bytes a turn of the loop, so a plugin flooding its
 * standard error (which has no limit of its own: only its tail is kept) gets
 * a slice of the loop and never all of it (issue 22, item 8).
 *
 * Invariants (proc_check, in debug builds):
 *   1. pgid > 0 and guard_fd >= 0 while RUNNING.
 *   2. out_len <= max_output, err_len <= stderr_tail.
 *   3. done runs exactly once, from finish(), in DONE; nothing is freed before.
 *   4. lease_fd >= 0 only while RUNNING with a lease, and then lease_until > 0
 *      (the latest renewal sent); lease_expired only with a lease.
 *
 * Cost: two forks per run (the guard is a copy-on-write child of the worker
 * that touches a few pages), five pipes and two pidfds; a renewal is an
 * 8-byte write every sixth of the session timeout.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <grp.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "check.h"
#include "clock.h"
#include "log.h"
#include "worker_int.h"
#include "xalloc.h"

#define MOD "worker"
#define DRAIN_MS 200

enum pstate { P_RUNNING, P_DRAINING, P_DONE };

struct worker__proc {
    struct event_base *base;
    enum pstate st;
    pid_t pgid;   /* the guard's pid = the group id */
    int guard_fd; /* pidfd of the guard */
    int in_fd, out_fd, err_fd, status_fd;
    int lease_fd;        /* the write end of the lease pipe, -1 without a lease */
    int64_t lease_until; /* the latest lease sent to the guard (0: none) */
    struct event *ev_guard, *ev_in, *ev_out, *ev_err, *ev_status, *ev_timer, *ev_drain;
    char *input;
    size_t input_len, input_off;
    size_t max_output, tail_cap;
    int timeout_ms;
    int64_t start_mono_ms; /* for r.elapsed_ms */
    struct worker__proc_result r;
    size_t out_cap;
    char *tail; /* ring buffer of the last tail_cap bytes */
    size_t tail_pos, tail_n;
    unsigned char status_buf[1 + sizeof(int)];
    size_t status_got;
    bool have_status;
    int wait_status;
    worker__proc_done_cb done;
    void *arg;
};

static void proc_check(const struct worker__proc *p)
{
#if DRV_CHECKS
    if (p->st == P_RUNNING && (p->pgid <= 0 || p->guard_fd < 0))
        abort();
    if (p->r.out_len > p->max_output || p->tail_n > p->tail_cap)
        abort();
    if (p->lease_fd >= 0 && (p->st != P_RUNNING || p->lease_until <= 0))
        abort(); /* 4 */
    if (p->r.lease_expired && p->lease_until <= 0)
        abort(); /* 4 */
#else
    (void)p;
#endif
}

/* ---- the guard and the plugin (after fork: async-signal-safe only) ------------- */

static void guard_on_term(int sig)
{
    (void)sig;
    kill(0, SIGKILL); /* the whole group, the guard included */
}

static void write_record(int fd, char tag, int value)
{
    unsigned char b[1 + sizeof(int)];
    b[0] = (unsigned char)tag;
    memcpy(b + 1, &value, sizeof(int));
    ssize_t w = write(fd, b, sizeof(b));
    (void)w;
}

/*
 * Close every descriptor but 0-2 and keep[] (n <= 8): the guard is a copy of
 * the worker, and without this it and its plugin would hold the worker's
 * sockets (ZooKeeper, PostgreSQL, the API) and the pipes of the other runs,
 * whose plugins' end of output would then wait for this run to end. Sorted in
 * place; close_range between the kept ones (one system call per gap), a loop
 * where the kernel lacks it.
 */
static void close_others(int *keep, int n)
{
    for (int i = 1; i < n; i++)
        for (int k = i; k > 0 && keep[k - 1] > keep[k]; k--) {
            int t = keep[k];
            keep[k] = keep[k - 1];
            keep[k - 1] = t;
        }
    unsigned lo = 3;
    for (int i = 0; i <= n; i++) {
        if (i < n && keep[i] < 3)
            continue;
        unsigned hi = i < n ? (unsigned)keep[i] : ~0U; /* close [lo, hi) */
        if (hi > lo && close_range(lo, hi - 1, 0) != 0)
            for (unsigned fd = lo; fd < hi && fd < 65536; fd++)
                close((int)fd);
        if (i < n)
            lo = hi + 1;
    }
}

static void reset_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_DFL;
    for (int s = 1; s < NSIG; s++)
        if (s != SIGKILL && s != SIGSTOP)
            sigaction(s, &sa, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

/* ---- the lease's arithmetic (pure) --------------------------------------------------- */

int worker__lease_wait_ms(int64_t until_ms, int64_t now_ms)
{
    if (until_ms <= 0)
        return -1;
    if (now_ms >= until_ms)
        return 0;
    int64_t left = until_ms - now_ms;
    return left > INT32_MAX ? INT32_MAX : (int)left;
}

int64_t worker__lease_until(int64_t heard_boot_ms, int timeout_ms)
{
    return heard_boot_ms + timeout_ms / 2;
}

int64_t worker__lease_renewed(int64_t until_ms, int64_t v)
{
    return v > until_ms ? v : until_ms;
}

static void __attribute__((noreturn)) guard_end(int status_w, char tag, int value)
{
    write_record(status_w, tag, value);
    kill(0, SIGKILL); /* the whole group, the guard included */
    _exit(0);
}

/* The plugin has ended: report its wait status and end. Returns when it has not. */
static void guard_reap(pid_t child, int status_w)
{
    int st = 0;
    pid_t r;
    while ((r = waitpid(child, &st, WNOHANG)) < 0 && errno == EINTR)
        ;
    if (r == child)
        guard_end(status_w, 'S', st);
}

/*
 * Read the renewals waiting in the lease pipe (non-blocking) into *until. Each names an
 * absolute moment, so reading them late is never wrong. At EOF or an error *fd becomes -1
 * (poll ignores it): no renewal can come any more, the lease runs out at *until.
 */
static void guard_read_lease(int *fd, int64_t *until)
{
    while (*fd >= 0) {
        int64_t v[64];
        ssize_t got = read(*fd, v, sizeof(v));
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0 && errno == EAGAIN)
            return;
        if (got <= 0) {
            *fd = -1;
            return;
        }
        for (ssize_t i = 0; i < got / (ssize_t)sizeof(v[0]); i++)
            *until = worker__lease_renewed(*until, v[i]);
    }
}

/*
 * The guard's loop (steps 3 to 5 of the note above): until the plugin ends or the lease
 * runs out. lease_r is -1 without a lease.
 */
static void __attribute__((noreturn))
guard_loop(pid_t child, int64_t until, int lease_r, int status_w)
{
    int cfd = pidfd_open(child, 0);
    struct pollfd fds[2] = {{.fd = cfd, .events = POLLIN}, {.fd = lease_r, .events = POLLIN}};
    for (;;) {
        int wait = worker__lease_wait_ms(until, clock_boot_ms());
        if (wait == 0) {
            /* Renewals this guard has not read yet (it was not scheduled, or stopped) count:
             * the worker sent them in time. */
            guard_read_lease(&fds[1].fd, &until);
            wait = worker__lease_wait_ms(until, clock_boot_ms());
        }
        if (wait == 0) {
            guard_reap(child, status_w); /* ended just now: say how, not 'L' */
            guard_end(status_w, 'L', 0);
        }
        if (cfd < 0 && (wait < 0 || wait > 50))
            wait = 50; /* no pidfd: look at the plugin with waitpid now and then */
        int n = poll(fds, 2, wait);
        if (n < 0 && errno != EINTR)
            guard_end(status_w, 'E', errno); /* cannot watch the lease: do not run unwatched */
        if (cfd < 0 || (n > 0 && fds[0].revents))
            guard_reap(child, status_w);
        if (n > 0 && fds[1].revents)
            guard_read_lease(&fds[1].fd, &until);
    }
}

/*
 * The plugin's side, after setuid: no capability left, ambient ones included (a worker
 * that is not root switches users with CAP_SETUID and CAP_SETGID, which would otherwise
 * pass to the plugin through execve). Plain system calls only.
 */
static int drop_caps(void)
{
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    memset(d, 0, sizeof(d));
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL)
        return -1;
    return (int)syscall(SYS_capset, &h, d);
}

static void __attribute__((noreturn))
guard_main(pid_t worker, const struct worker__proc_opts *o, int in_r, int out_w, int err_w,
           int status_w, int lease_r)
{
    reset_signals();
    int keep[] = {in_r, out_w, err_w, status_w, lease_r, o->hold_fd};
    int n = lease_r >= 0 ? 5 : 4;
    if (o->hold_fd > 2)
        keep[n++] = o->hold_fd; /* close-on-exec: held by the guard, never by the plugin */
    close_others(keep, n);
    setpgid(0, 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = guard_on_term;
    sigaction(SIGTERM, &sa, NULL);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != worker)
        guard_on_term(SIGTERM);
    pid_t child = fork();
    if (child < 0) {
        write_record(status_w, 'E', errno);
        _exit(127);
    }
    if (child == 0) {
        dup2(in_r, 0);
        dup2(out_w, 1);
        dup2(err_w, 2);
        if (in_r > 2)
            close(in_r);
        if (out_w > 2)
            close(out_w);
        if (err_w > 2)
            close(err_w);
        if (o->run_as && (setgroups(0, NULL) != 0 || setgid(o->gid) != 0 || setuid(o->uid) != 0 ||
                          drop_caps() != 0 || setuid(0) == 0)) {
            write_record(status_w, 'E', errno ? errno : EPERM);
            _exit(127);
        }
        if (o->cwd && chdir(o->cwd) != 0) {
            write_record(status_w, 'E', errno);
            _exit(127);
        }
        char *argv[] = {(char *)o->path, NULL};
        execve(o->path, argv, o->envp);
        write_record(status_w, 'E', errno);
        _exit(127);
    }
    close(in_r);
    close(out_w);
    close(err_w);
    guard_loop(child, o->lease_until_ms > 0 ? o->lease_until_ms : 0, lease_r, status_w);
}

/* ---- the worker side -------------------------------------------------------------- */

static void close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

static void free_event(struct event **ev)
{
    if (*ev) {
        event_free(*ev);
        *ev = NULL;
    }
}

static void proc_free(struct worker__proc *p)
{
    free_event(&p->ev_guard);
    free_event(&p->ev_in);
    free_event(&p->ev_out);
    free_event(&p->ev_err);
    free_event(&p->ev_status);
    free_event(&p->ev_timer);
    free_event(&p->ev_drain);
    close_fd(&p->guard_fd);
    close_fd(&p->in_fd);
    close_fd(&p->out_fd);
    close_fd(&p->err_fd);
    close_fd(&p->status_fd);
    close_fd(&p->lease_fd);
    if (p->input) {
        explicit_bzero(p->input, p->input_len);
        free(p->input);
    }
    free(p->r.out);
    free(p->r.err_tail);
    free(p->tail);
    free(p);
}

static void finish(struct worker__proc *p)
{
    if (p->st == P_DONE)
        return;
    p->st = P_DONE;
    p->r.end_ms = clock_wall_ms();
    p->r.elapsed_ms = clock_mono_ms() - p->start_mono_ms;
    if (p->have_status) {
        if (WIFEXITED(p->wait_status)) {
            p->r.exited = true;
            p->r.exit_code = WEXITSTATUS(p->wait_status);
        } else if (WIFSIGNALED(p->wait_status)) {
            p->r.signal = WTERMSIG(p->wait_status);
        }
    } else if (!p->r.spawn_errno) {
        p->r.signal = SIGKILL; /* the group was killed before the guard could tell */
    }
    /* The stderr ring, in order. */
    p->r.err_tail = xmalloc(p->tail_n + 1);
    size_t start = (p->tail_pos + p->tail_cap - p->tail_n) % (p->tail_cap ? p->tail_cap : 1);
    for (size_t i = 0; i < p->tail_n; i++)
        p->r.err_tail[i] = p->tail[(start + i) % p->tail_cap];
    p->r.err_tail[p->tail_n] = '\0';
    p->r.err_len = p->tail_n;
    if (!p->r.out)
        p->r.out = xcalloc(1, 1);
    p->r.out[p->r.out_len] = '\0';
    p->done(&p->r, p->arg);
    proc_free(p);
}

static bool drained(const struct worker__proc *p)
{
    return p->out_fd < 0 && p->err_fd < 0 && p->status_fd < 0;
}

static void maybe_finish(struct worker__proc *p)
{
    if (p->st == P_DRAINING && drained(p))
        finish(p);
}

static void kill_group(struct worker__proc *p)
{
    /* The guard is a zombie at worst (reaped only in on_guard), so its pid
     * still names the group: never another process's. */
    if (p->pgid > 0 && p->st == P_RUNNING)
        kill(-p->pgid, SIGKILL);
}

static void on_drain_timeout(evutil_socket_t fd, short what, void *arg)
{
    /* A process that left the group (setsid) still holds a pipe: stop reading. */
    struct worker__proc *p = arg;
    finish(p);
}

static void on_guard(evutil_socket_t fd, short what, void *arg)
{
    struct worker__proc *p = arg;
    kill_group(p); /* leftovers of the plugin, while the guard's pid still names the group */
    int st;
    while (waitpid(p->pgid, &st, WNOHANG) < 0 && errno == EINTR)
        ;
    free_event(&p->ev_guard);
    close_fd(&p->guard_fd);
    close_fd(&p->lease_fd); /* nobody reads it any more */
    free_event(&p->ev_timer);
    p->st = P_DRAINING;
    proc_check(p);
    if (drained(p)) {
        finish(p);
        return;
    }
    p->ev_drain = evtimer_new(p->base, on_drain_timeout, p);
    struct timeval tv = {0, DRAIN_MS * 1000};
    evtimer_add(p->ev_drain, &tv);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    struct worker__proc *p = arg;
    p->r.timed_out = true;
    kill_group(p);
}

static void tail_append(struct worker__proc *p, const char *b, size_t n)
{
    p->r.err_total += n;
    if (p->tail_cap == 0)
        return;
    if (n > p->tail_cap) { /* only the last tail_cap bytes can stay */
        b += n - p->tail_cap;
        n = p->tail_cap;
    }
    for (size_t i = 0; i < n; i++) {
        p->tail[p->tail_pos] = b[i];
        p->tail_pos = (p->tail_pos + 1) % p->tail_cap;
        if (p->tail_n < p->tail_cap)
            p->tail_n++;
    }
}

static void on_readable(evutil_socket_t fd, short what, void *arg)
{
    struct worker__proc *p = arg;
    char buf[16384];
    /* At most WORKER__PROC_READ_TURN bytes a turn of the loop: the event is level-triggered,
     * so the rest is read on the next turn, after the other events had theirs. A plugin that
     * floods a pipe cannot hold the loop (and with it the worker's claims and leases). */
    for (size_t got = 0; got < WORKER__PROC_READ_TURN;) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n <= 0) {
            /* EOF (or an error: treated alike) */
            if (fd == p->out_fd) {
                free_event(&p->ev_out);
                close_fd(&p->out_fd);
            } else if (fd == p->err_fd) {
                free_event(&p->ev_err);
                close_fd(&p->err_fd);
            } else {
                free_event(&p->ev_status);
                close_fd(&p->status_fd);
            }
            maybe_finish(p);
            return;
        }
        got += (size_t)n;
        if (fd == p->out_fd) {
            size_t room = p->max_output - p->r.out_len;
            size_t take = (size_t)n < room ? (size_t)n : room;
            XGROW(p->r.out, p->out_cap, p->r.out_len + take + 1);
            memcpy(p->r.out + p->r.out_len, buf, take);
            p->r.out_len += take;
            if ((size_t)n > room && !p->r.too_large) {
                p->r.too_large = true;
                kill_group(p);
            }
        } else if (fd == p->err_fd) {
            tail_append(p, buf, (size_t)n);
        } else {
            for (ssize_t i = 0; i < n; i++) {
                p->status_buf[p->status_got++] = (unsigned char)buf[i];
                if (p->status_got == sizeof(p->status_buf)) {
                    int v;
                    memcpy(&v, p->status_buf + 1, sizeof(int));
                    if (p->status_buf[0] == 'E') {
                        p->r.spawn_errno = v ? v : EIO;
                    } else if (p->status_buf[0] == 'L') {
                        p->r.lease_expired = true;
                    } else {
                        p->have_status = true;
                        p->wait_status = v;
                    }
                    p->status_got = 0;
                }
            }
        }
        proc_check(p);
    }
}

static void on_writable(evutil_socket_t fd, short what, void *arg)
{
    struct worker__proc *p = arg;
    while (p->input_off < p->input_len) {
        ssize_t n = write(fd, p->input + p->input_off, p->input_len - p->input_off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n < 0)
            break; /* EPIPE: the plugin does not read its input; that is its business */
        p->input_off += (size_t)n;
    }
    free_event(&p->ev_in);
    close_fd(&p->in_fd);
    explicit_bzero(p->input, p->input_len);
}

static void cloexec_nonblock(int fd, bool nonblock)
{
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    if (nonblock)
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

struct worker__proc *worker__proc_start(struct event_base *base, const struct worker__proc_opts *o,
                                        worker__proc_done_cb done, void *arg, struct drv_err *err)
{
    int in[2] = {-1, -1}, out[2] = {-1, -1}, errp[2] = {-1, -1}, status[2] = {-1, -1};
    int lease[2] = {-1, -1};
    bool leased = o->lease_until_ms > 0;
    /* The lease pipe is close-on-exec at both ends: the guard reads it, the plugin never
     * sees it. */
    if (pipe(in) || pipe(out) || pipe(errp) || pipe2(status, O_CLOEXEC) ||
        (leased && pipe2(lease, O_CLOEXEC | O_NONBLOCK))) {
        int e = errno;
        for (int i = 0; i < 2; i++) {
            if (lease[i] >= 0)
                close(lease[i]);
            if (in[i] >= 0)
                close(in[i]);
            if (out[i] >= 0)
                close(out[i]);
            if (errp[i] >= 0)
                close(errp[i]);
            if (status[i] >= 0)
                close(status[i]);
        }
        drv_err_set(err, DRV_EIO, e, "pipe: %s", strerror(e));
        return NULL;
    }
    /* The worker's ends never reach the child's exec. */
    cloexec_nonblock(in[1], true);
    cloexec_nonblock(out[0], true);
    cloexec_nonblock(errp[0], true);
    cloexec_nonblock(status[0], true);
    int64_t start = clock_wall_ms(), start_mono = clock_mono_ms();
    pid_t worker = getpid();
    pid_t g = fork();
    if (g < 0) {
        int e = errno;
        close(in[0]), close(in[1]), close(out[0]), close(out[1]);
        close(errp[0]), close(errp[1]), close(status[0]), close(status[1]);
        if (leased)
            close(lease[0]), close(lease[1]);
        drv_err_set(err, DRV_EIO, e, "fork: %s", strerror(e));
        return NULL;
    }
    if (g == 0) {
        close(in[1]);
        close(out[0]);
        close(errp[0]);
        close(status[0]);
        if (leased)
            close(lease[1]);
        guard_main(worker, o, in[0], out[1], errp[1], status[1], lease[0]);
    }
    /* Also here, so that the group exists before anyone signals it. */
    setpgid(g, g);
    close(in[0]);
    close(out[1]);
    close(errp[1]);
    close(status[1]);
    if (leased)
        close(lease[0]);

    struct worker__proc *p = xcalloc(1, sizeof(*p));
    p->lease_fd = lease[1];
    p->lease_until = leased ? o->lease_until_ms : 0;
    p->base = base;
    p->st = P_RUNNING;
    p->pgid = g;
    p->in_fd = in[1];
    p->out_fd = out[0];
    p->err_fd = errp[0];
    p->status_fd = status[0];
    p->guard_fd = pidfd_open(g, 0);
    p->max_output = o->max_output ? o->max_output : 1 << 20;
    p->tail_cap = o->stderr_tail;
    p->tail = xmalloc(p->tail_cap + 1);
    p->timeout_ms = o->timeout_ms;
    p->input_len = o->input ? o->input_len : 0;
    p->input = xmalloc(p->input_len + 1);
    if (p->input_len)
        memcpy(p->input, o->input, p->input_len);
    p->done = done;
    p->arg = arg;
    p->r.start_ms = start;
    p->start_mono_ms = start_mono;
    if (p->guard_fd < 0) {
        /* No pidfd (an old kernel): cannot wait on the loop. Refuse cleanly. */
        int e = errno;
        kill(-g, SIGKILL);
        waitpid(g, NULL, 0);
        proc_free(p);
        drv_err_set(err, DRV_EIO, e, "pidfd_open: %s", strerror(e));
        return NULL;
    }
    p->ev_guard = event_new(base, p->guard_fd, EV_READ, on_guard, p);
    event_add(p->ev_guard, NULL);
    p->ev_out = event_new(base, p->out_fd, EV_READ | EV_PERSIST, on_readable, p);
    p->ev_err = event_new(base, p->err_fd, EV_READ | EV_PERSIST, on_readable, p);
    p->ev_status = event_new(base, p->status_fd, EV_READ | EV_PERSIST, on_readable, p);
    event_add(p->ev_out, NULL);
    event_add(p->ev_err, NULL);
    event_add(p->ev_status, NULL);
    p->ev_in = event_new(base, p->in_fd, EV_WRITE | EV_PERSIST, on_writable, p);
    event_add(p->ev_in, NULL);
    if (o->timeout_ms > 0) {
        p->ev_timer = evtimer_new(base, on_timer, p);
        struct timeval tv = {o->timeout_ms / 1000, (o->timeout_ms % 1000) * 1000};
        evtimer_add(p->ev_timer, &tv);
    }
    proc_check(p);
    return p;
}

void worker__proc_kill(struct worker__proc *p)
{
    if (!p || p->st != P_RUNNING)
        return;
    p->r.killed = true;
    kill_group(p);
}

void worker__proc_lease(struct worker__proc *p, int64_t until_ms)
{
    if (!p || p->st != P_RUNNING || p->lease_fd < 0 || until_ms <= p->lease_until)
        return;
    /* 8 bytes: one atomic pipe write. EAGAIN (a full pipe: the guard is not reading) loses
     * this renewal only; the guard then kills at the lease it has, which is the point. */
    ssize_t w;
    while ((w = write(p->lease_fd, &until_ms, sizeof(until_ms))) < 0 && errno == EINTR)
        ;
    if (w == (ssize_t)sizeof(until_ms))
        p->lease_until = until_ms;
    proc_check(p);
}

pid_t worker__proc_pgid(const struct worker__proc *p)
{
    return p->pgid;
}

void worker__proc_describe(const struct worker__proc_result *r, int timeout_ms, char *buf, size_t n)
{
    if (r->spawn_errno)
        snprintf(buf, n, "cannot run the plugin: %s", strerror(r->spawn_errno));
    else if (r->timed_out)
        snprintf(buf, n, "timed out after %d ms", timeout_ms);
    else if (r->too_large)
        snprintf(buf, n, "output larger than the limit");
    else if (r->lease_expired)
        snprintf(buf, n, "killed by its guard: the worker did not renew the lease in time");
    else if (r->killed)
        snprintf(buf, n, "killed by the worker");
    else if (r->exited)
        snprintf(buf, n, "exit %d", r->exit_code);
    else
        snprintf(buf, n, "killed by signal %d", r->signal);
}
