/*
 * Unit tests of the worker's process runner (src/worker/proc.c) with real
 * processes: exit codes, output capture and its limit, the stderr tail, the
 * time limit killing the whole process group, kill, an executable that cannot
 * run, the promise that a plugin never outlives its worker, even one
 * killed with SIGKILL, the lease that kills the plugin of a frozen worker, and
 * a stderr flood that must leave the loop its turns.
 */
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "clock.h"
#include "worker_int.h"
#include "xalloc.h"

static char *const env[] = {"PATH=/usr/bin:/bin", NULL};
static char tmpdir[256];

struct outcome {
    bool done;
    struct worker__proc_result r;
    char *out, *err;
};

static void on_done(const struct worker__proc_result *r, void *arg)
{
    struct outcome *o = arg;
    o->done = true;
    o->r = *r;
    o->out = xstrdup(r->out);
    o->err = xstrdup(r->err_tail);
    o->r.out = o->out;
    o->r.err_tail = o->err;
}

/* Write a shell script into tmpdir and return its path (owned by the caller). */
static char *script(const char *name, const char *body)
{
    char *p = xasprintf("%s/%s", tmpdir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fprintf(f, "#!/bin/sh\n%s\n", body);
    fclose(f);
    chmod(p, 0755);
    return p;
}

static struct outcome run(const char *path, const char *input, size_t max_out, size_t tail,
                          int timeout_ms, int kill_after_ms)
{
    struct event_base *base = event_base_new();
    struct outcome o = {0};
    struct worker__proc_opts opts = {
        .path = path,
        .envp = env,
        .input = input,
        .input_len = input ? strlen(input) : 0,
        .max_output = max_out,
        .stderr_tail = tail,
        .timeout_ms = timeout_ms,
    };
    struct drv_err err;
    struct worker__proc *p = worker__proc_start(base, &opts, on_done, &o, &err);
    assert_non_null(p);
    if (kill_after_ms > 0) {
        struct timespec ts = {kill_after_ms / 1000, (kill_after_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        worker__proc_kill(p);
    }
    while (!o.done)
        event_base_loop(base, EVLOOP_ONCE);
    event_base_free(base);
    return o;
}

static void outcome_free(struct outcome *o)
{
    free(o->out);
    free(o->err);
}

static void test_exit_and_output(void **state)
{
    char *p = script("echo.sh", "cat; echo; echo oops >&2; exit 3");
    struct outcome o = run(p, "{\"task\":1}", 1 << 20, 4096, 0, 0);
    assert_true(o.r.exited);
    assert_int_equal(o.r.exit_code, 3);
    assert_string_equal(o.out, "{\"task\":1}\n");
    assert_string_equal(o.err, "oops\n");
    assert_false(o.r.timed_out);
    assert_true(o.r.end_ms >= o.r.start_ms);
    assert_true(o.r.elapsed_ms >= 0);
    outcome_free(&o);
    free(p);
}

/* Neither the guard nor the plugin holds the worker's other descriptors: a pipe the
   worker made without close-on-exec (a socket, another run's pipe) is seen closed by
   its reader as soon as the worker closes its own end, while the plugin still runs;
   and the plugin has neither end. */
static void test_no_inherited_fds(void **state)
{
    int other[2];
    assert_int_equal(pipe(other), 0); /* no O_CLOEXEC: as a careless library would */
    char body[200];
    snprintf(body, sizeof(body),
             "for fd in %d %d; do [ -e /proc/$$/fd/$fd ] && echo \"fd $fd open\"; done; sleep 1; "
             "exit 0",
             other[0], other[1]);
    char *p = script("fds.sh", body);
    struct event_base *base = event_base_new();
    struct outcome o = {0};
    struct worker__proc_opts opts = {
        .path = p, .envp = env, .max_output = 4096, .stderr_tail = 4096};
    struct drv_err err;
    struct worker__proc *pr = worker__proc_start(base, &opts, on_done, &o, &err);
    assert_non_null(pr);
    close(other[1]);
    struct pollfd pfd = {other[0], POLLIN, 0};
    assert_int_equal(poll(&pfd, 1, 5000), 1); /* EOF: nobody else holds the write end */
    char c;
    assert_int_equal(read(other[0], &c, 1), 0);
    while (!o.done)
        event_base_loop(base, EVLOOP_ONCE);
    event_base_free(base);
    assert_true(o.r.exited);
    assert_int_equal(o.r.exit_code, 0);
    assert_string_equal(o.out, ""); /* neither end reached the plugin */
    close(other[0]);
    outcome_free(&o);
    free(p);
}

static void test_stderr_tail_and_output_limit(void **state)
{
    /* 100 lines on stderr, keep the last 16 bytes; 2 MB on stdout over a 1 KB limit. */
    char *p = script("noisy.sh", "i=0; while [ $i -lt 100 ]; do echo \"line $i\" >&2; "
                                 "i=$((i+1)); done; head -c 2000000 /dev/zero; sleep 30");
    struct outcome o = run(p, NULL, 1024, 16, 0, 0);
    assert_true(o.r.too_large);
    assert_int_equal(o.r.out_len, 1024);
    assert_int_equal(o.r.err_len, 16);
    assert_string_equal(o.err + 16 - 8, "line 99\n");
    assert_false(o.r.exited);
    outcome_free(&o);
    free(p);
}

/* Alive and not a zombie (a killed orphan waits for init to reap it). */
static bool alive(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *rp = strrchr(buf, ')');
    return rp && rp[1] == ' ' && rp[2] != 'Z' && rp[2] != 'X';
}

static pid_t read_pid(const char *file)
{
    FILE *f = fopen(file, "r");
    if (!f)
        return -1;
    int pid = -1;
    if (fscanf(f, "%d", &pid) != 1)
        pid = -1;
    fclose(f);
    return pid;
}

static void test_timeout_kills_group(void **state)
{
    /* A grandchild in the background must die with the plugin. */
    char *pidfile = xasprintf("%s/bg.pid", tmpdir);
    char *body = xasprintf("sleep 60 & echo $! > %s; wait", pidfile);
    char *p = script("slow.sh", body);
    struct outcome o = run(p, NULL, 1024, 64, 300, 0);
    assert_true(o.r.timed_out);
    assert_false(o.r.exited);
    /* The duration is the monotonic one (libevent's coarse clock may fire a few ms early). */
    assert_true(o.r.elapsed_ms >= 250);
    pid_t bg = read_pid(pidfile);
    assert_true(bg > 0);
    /* SIGKILL is delivered at once; the zombie is reaped by init shortly. */
    for (int i = 0; i < 100 && alive(bg); i++)
        usleep(10000);
    assert_false(alive(bg));
    char buf[128];
    worker__proc_describe(&o.r, 300, buf, sizeof(buf));
    assert_string_equal(buf, "timed out after 300 ms");
    outcome_free(&o);
    free(p);
    free(body);
    unlink(pidfile);
    free(pidfile);
}

static void test_kill(void **state)
{
    char *p = script("forever.sh", "sleep 60");
    struct outcome o = run(p, NULL, 1024, 64, 0, 100);
    assert_true(o.r.killed);
    assert_false(o.r.exited);
    outcome_free(&o);
    free(p);
}

static void test_cannot_run(void **state)
{
    char *p = xasprintf("%s/missing", tmpdir);
    struct outcome o = run(p, NULL, 1024, 64, 0, 0);
    assert_int_equal(o.r.spawn_errno, ENOENT);
    char buf[128];
    worker__proc_describe(&o.r, 0, buf, sizeof(buf));
    assert_non_null(strstr(buf, "cannot run the plugin"));
    outcome_free(&o);
    free(p);
}

static void test_large_input(void **state)
{
    /* More than a pipe's buffer: written as the plugin reads. */
    size_t n = 300000;
    char *in = xmalloc(n + 1);
    memset(in, 'x', n);
    in[n] = '\0';
    char *p = script("wc.sh", "wc -c");
    struct outcome o = run(p, in, 1024, 64, 0, 0);
    assert_true(o.r.exited);
    assert_int_equal(atol(o.out), (long)n);
    outcome_free(&o);
    free(p);
    free(in);
}

/*
 * The worker dies by SIGKILL while its plugin runs: the plugin and its
 * background child must die too. A forked "worker" starts the plugin and is
 * killed; the plugin wrote its pid and its child's.
 */
static void test_worker_death_kills_plugin(void **state)
{
    char *pidfile = xasprintf("%s/plugin.pids", tmpdir);
    unlink(pidfile);
    char *body = xasprintf("sleep 60 & echo $$ $! > %s; wait", pidfile);
    char *p = script("orphan.sh", body);
    pid_t w = fork();
    assert_true(w >= 0);
    if (w == 0) {
        struct event_base *base = event_base_new();
        struct outcome o = {0};
        struct worker__proc_opts opts = {.path = p, .envp = env, .max_output = 64};
        struct drv_err err;
        if (!worker__proc_start(base, &opts, on_done, &o, &err))
            _exit(1);
        event_base_dispatch(base);
        _exit(0);
    }
    pid_t plugin = -1, bg = -1;
    for (int i = 0; i < 500; i++) {
        FILE *f = fopen(pidfile, "r");
        if (f) {
            int a, b;
            if (fscanf(f, "%d %d", &a, &b) == 2)
                plugin = a, bg = b;
            fclose(f);
        }
        if (bg > 0)
            break;
        usleep(10000);
    }
    assert_true(plugin > 0 && bg > 0);
    assert_true(alive(plugin));
    kill(w, SIGKILL);
    waitpid(w, NULL, 0);
    bool gone = false;
    for (int i = 0; i < 300 && !gone; i++) {
        gone = !alive(plugin) && !alive(bg);
        if (!gone)
            usleep(10000);
    }
    assert_true(gone);
    free(p);
    free(body);
    unlink(pidfile);
    free(pidfile);
}

/* ---- the lease (issue 22: a frozen worker's plugin) ------------------------------------ */

static void test_lease_arithmetic(void **state)
{
    assert_int_equal(worker__lease_wait_ms(0, 1000), -1);   /* no lease: wait for events */
    assert_int_equal(worker__lease_wait_ms(1000, 1000), 0); /* run out: kill */
    assert_int_equal(worker__lease_wait_ms(1000, 5000), 0);
    assert_int_equal(worker__lease_wait_ms(1500, 1000), 500);
    assert_int_equal(worker__lease_wait_ms(INT64_MAX, 0), INT32_MAX);
    /* A renewal read late, or out of order, never shortens the lease. */
    assert_int_equal(worker__lease_renewed(2000, 3000), 3000);
    assert_int_equal(worker__lease_renewed(3000, 2000), 3000);
    assert_int_equal(worker__lease_renewed(0, 2000), 2000);
}

/*
 * Issue 33 item 3: a host suspended for two session timeouts. CLOCK_MONOTONIC stops while
 * suspended, CLOCK_BOOTTIME (and the ZooKeeper server's clock elsewhere) goes on. The
 * renewal after the resume must leave the plugin no time: the server expired the session
 * and another worker may run the task. The old formula (a monotonic "heard" carried over
 * as a delay from the boot clock's now) gave it half a timeout again.
 */
static void test_lease_after_suspend(void **state)
{
    const int timeout = 4000;
    int64_t mono0 = 1000000, boot0 = 5000000; /* the two clocks when the server last answered */
    int64_t heard_boot = boot0, heard_mono = mono0;
    int64_t suspended = 2 * timeout;
    int64_t mono1 = mono0 + 100, boot1 = boot0 + 100 + suspended; /* just after the resume */
    int64_t until = worker__lease_until(heard_boot, timeout);
    assert_int_equal(worker__lease_wait_ms(until, boot1), 0); /* run out: the guard kills */
    int64_t old = boot1 + (heard_mono + timeout / 2 - mono1);
    assert_true(worker__lease_wait_ms(old, boot1) > 0); /* the old formula: alive again */
    /* Not suspended: half a timeout after the last answer, as before. */
    assert_int_equal(worker__lease_wait_ms(until, boot0 + 100), timeout / 2 - 100);
}

/* Nobody renews: the guard kills the whole group when the lease runs out. */
static void test_lease_expires(void **state)
{
    char *pidfile = xasprintf("%s/lease-bg.pid", tmpdir);
    char *body = xasprintf("sleep 60 & echo $! > %s; wait", pidfile);
    char *p = script("unrenewed.sh", body);
    struct event_base *base = event_base_new();
    struct outcome o = {0};
    struct worker__proc_opts opts = {.path = p,
                                     .envp = env,
                                     .max_output = 64,
                                     .stderr_tail = 64,
                                     .lease_until_ms = clock_boot_ms() + 300};
    struct drv_err err;
    assert_non_null(worker__proc_start(base, &opts, on_done, &o, &err));
    while (!o.done)
        event_base_loop(base, EVLOOP_ONCE);
    event_base_free(base);
    assert_true(o.r.lease_expired);
    assert_false(o.r.exited);
    assert_false(o.r.killed);
    assert_false(o.r.timed_out);
    pid_t bg = read_pid(pidfile);
    assert_true(bg > 0);
    for (int i = 0; i < 100 && alive(bg); i++)
        usleep(10000);
    assert_false(alive(bg));
    char buf[128];
    worker__proc_describe(&o.r, 0, buf, sizeof(buf));
    assert_non_null(strstr(buf, "lease"));
    outcome_free(&o);
    free(p);
    free(body);
    unlink(pidfile);
    free(pidfile);
}

#define LEASE_MS 2000 /* generous: a fork under ASan on a busy machine is slow */
#define RENEW_MS 100

static void renew_lease(evutil_socket_t fd, short what, void *arg)
{
    worker__proc_lease(arg, clock_boot_ms() + LEASE_MS);
}

/* Renewed by a running loop, the plugin outlives the length of its lease and ends by itself. */
static void test_lease_renewed(void **state)
{
    char *p = script("renewed.sh", "sleep 3; echo fine");
    struct event_base *base = event_base_new();
    struct outcome o = {0};
    struct worker__proc_opts opts = {.path = p,
                                     .envp = env,
                                     .max_output = 64,
                                     .stderr_tail = 64,
                                     .lease_until_ms = clock_boot_ms() + LEASE_MS};
    struct drv_err err;
    struct worker__proc *proc = worker__proc_start(base, &opts, on_done, &o, &err);
    assert_non_null(proc);
    struct event *ev = event_new(base, -1, EV_PERSIST, renew_lease, proc);
    struct timeval tv = {0, RENEW_MS * 1000};
    event_add(ev, &tv);
    while (!o.done)
        event_base_loop(base, EVLOOP_ONCE);
    event_free(ev);
    event_base_free(base);
    assert_false(o.r.lease_expired);
    assert_true(o.r.exited);
    assert_int_equal(o.r.exit_code, 0);
    assert_string_equal(o.out, "fine\n");
    outcome_free(&o);
    free(p);
}

static void frozen_worker_done(const struct worker__proc_result *r, void *arg)
{
    _exit(r->lease_expired ? 42 : 43);
}

/*
 * The chaos run's case: a "worker" (a forked process with its own loop) renews its
 * plugin's lease, then is frozen with SIGSTOP. Its guard kills the plugin and its
 * background child while the worker is still stopped; woken, the worker's loop learns
 * the plugin ended by lease expiry (exit 42).
 */
static void test_frozen_worker_plugin_dies(void **state)
{
    char *pidfile = xasprintf("%s/frozen.pids", tmpdir);
    unlink(pidfile);
    char *body = xasprintf("sleep 60 & echo $$ $! > %s; wait", pidfile);
    char *p = script("frozen.sh", body);
    pid_t w = fork();
    assert_true(w >= 0);
    if (w == 0) {
        struct event_base *base = event_base_new();
        struct worker__proc_opts opts = {
            .path = p, .envp = env, .max_output = 64, .lease_until_ms = clock_boot_ms() + LEASE_MS};
        struct drv_err err;
        struct worker__proc *proc = worker__proc_start(base, &opts, frozen_worker_done, NULL, &err);
        if (!proc)
            _exit(1);
        struct event *ev = event_new(base, -1, EV_PERSIST, renew_lease, proc);
        struct timeval tv = {0, RENEW_MS * 1000};
        event_add(ev, &tv);
        event_base_dispatch(base);
        _exit(2);
    }
    pid_t plugin = -1, bg = -1;
    for (int i = 0; i < 500 && bg <= 0; i++) {
        FILE *f = fopen(pidfile, "r");
        if (f) {
            int a, b;
            if (fscanf(f, "%d %d", &a, &b) == 2)
                plugin = a, bg = b;
            fclose(f);
        }
        if (bg <= 0)
            usleep(10000);
    }
    kill(w, SIGSTOP);
    bool gone = false;
    for (int i = 0; i < 1000 && !gone && plugin > 0; i++) {
        gone = !alive(plugin) && !alive(bg);
        if (!gone)
            usleep(10000);
    }
    bool worker_stopped = true; /* still frozen when the plugin was seen gone */
    {
        char path[64], buf[512];
        snprintf(path, sizeof(path), "/proc/%d/stat", (int)w);
        FILE *f = fopen(path, "r");
        size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
        if (f)
            fclose(f);
        buf[n] = '\0';
        const char *rp = strrchr(buf, ')');
        worker_stopped = rp && rp[1] == ' ' && rp[2] == 'T';
    }
    kill(w, SIGCONT); /* before any assert: nothing stays stopped */
    int st = 0;
    waitpid(w, &st, 0);
    assert_true(plugin > 0 && bg > 0);
    assert_true(gone);
    assert_true(worker_stopped);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 42);
    free(p);
    free(body);
    unlink(pidfile);
    free(pidfile);
}

/* ---- a plugin flooding its standard error ---------------------------------------- */

#define FLOOD_BYTES (16 * 1024 * 1024)

/*
 * The flooding plugin is this test program itself, started with TEST_PROC_FLOOD in its
 * environment (see main): it makes its stderr pipe as large as it may (so that a reader
 * never runs dry) and writes FLOOD_BYTES into it as fast as it can.
 */
static int flood_main(void)
{
    fcntl(2, F_SETPIPE_SZ, 1 << 20); /* best effort: the unprivileged maximum */
    static char buf[1 << 16];
    memset(buf, 'e', sizeof(buf));
    for (size_t left = FLOOD_BYTES; left > 0;) {
        size_t n = left < sizeof(buf) ? left : sizeof(buf);
        ssize_t w = write(2, buf, n);
        if (w <= 0)
            return 1;
        left -= (size_t)w;
    }
    return 0;
}

struct turns {
    unsigned long n;
};

/* The other event: counts the turns, and pauses a little so that the flood refills the pipe
 * meanwhile (as the worker's other tasks and its ZooKeeper traffic would). */
static void count_turn(evutil_socket_t fd, short what, void *arg)
{
    ((struct turns *)arg)->n++;
    struct timespec ts = {0, 500000};
    nanosleep(&ts, NULL);
}

/*
 * Item 8 of issue 22: a plugin that floods its standard error must not starve the loop. A
 * second event, ready on every turn of the loop (a pipe holding a byte nobody reads),
 * counts the turns; the proc may read at most WORKER__PROC_READ_TURN bytes of the flood a
 * turn, so the turns are at least the bytes over that slice. A reader that drains the pipe
 * to EAGAIN takes whatever the flood put there while the rest of the loop ran (up to the
 * pipe's megabyte) and more as it comes, so it needs far fewer turns: the ratio shows it.
 */
static void test_stderr_flood_leaves_loop_turns(void **state)
{
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
    assert_true(len > 0);
    self[len] = '\0';
    char *const flood_env[] = {"PATH=/usr/bin:/bin", "TEST_PROC_FLOOD=1", NULL};
    struct event_base *base = event_base_new();
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    assert_int_equal(write(ready[1], "x", 1), 1);
    struct turns turns = {0};
    struct event *ev = event_new(base, ready[0], EV_READ | EV_PERSIST, count_turn, &turns);
    event_add(ev, NULL);
    struct outcome o = {0};
    struct worker__proc_opts opts = {
        .path = self, .envp = flood_env, .max_output = 1024, .stderr_tail = 64};
    struct drv_err err;
    assert_non_null(worker__proc_start(base, &opts, on_done, &o, &err));
    while (!o.done)
        event_base_loop(base, EVLOOP_ONCE);
    event_free(ev);
    event_base_free(base);
    close(ready[0]);
    close(ready[1]);
    assert_true(o.r.exited);
    assert_int_equal(o.r.exit_code, 0);
    assert_int_equal(o.r.err_total, FLOOD_BYTES);
    assert_int_equal(o.r.err_len, 64); /* the tail kept is still the last 64 bytes */
    unsigned long slices = FLOOD_BYTES / WORKER__PROC_READ_TURN;
    printf("stderr flood: %lu bytes in %lu turns of the loop (%lu bytes a turn at most)\n",
           (unsigned long)o.r.err_total, turns.n, (unsigned long)WORKER__PROC_READ_TURN);
    assert_true(turns.n >= slices);
    outcome_free(&o);
}

static int setup(void **state)
{
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/drover-test-proc-XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    signal(SIGPIPE, SIG_IGN);
    return 0;
}

static int teardown(void **state)
{
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    if (getenv("TEST_PROC_FLOOD"))
        return flood_main();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exit_and_output),
        cmocka_unit_test(test_stderr_tail_and_output_limit),
        cmocka_unit_test(test_no_inherited_fds),
        cmocka_unit_test(test_timeout_kills_group),
        cmocka_unit_test(test_kill),
        cmocka_unit_test(test_cannot_run),
        cmocka_unit_test(test_large_input),
        cmocka_unit_test(test_worker_death_kills_plugin),
        cmocka_unit_test(test_stderr_flood_leaves_loop_turns),
        cmocka_unit_test(test_lease_arithmetic),
        cmocka_unit_test(test_lease_after_suspend),
        cmocka_unit_test(test_lease_expires),
        cmocka_unit_test(test_lease_renewed),
        cmocka_unit_test(test_frozen_worker_plugin_dies),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
