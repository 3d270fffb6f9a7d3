/*
 * coord_lock_bench: the cost of many locks and watches on ONE session, as the
 * engine uses them (one lock per in-flight job, a watcher or two per job).
 * Not a test: it prints figures (docs/benchmarks.md has the command and the
 * latest ones).
 *
 *   scripts/with-stack --no-pg -- build-rel/bench/coord/coord_lock_bench [-n N ...]
 *
 * For each N (default 1,000 then 10,000), on one session:
 *   acquire  N locks on N directories, all asked at once, until every one is held
 *   handover a second session waits on all N (N predecessor watches on it); the
 *            first releases them all; until the second holds every one: each
 *            hand-over is a watch event dispatched among N registered watches
 *   release  all N released with coord_lock_release_done, until every done(0)
 *   watch    N one-shot exists-watches on absent znodes; a second session creates
 *            them; until every event has been delivered
 * Each phase reports wall time per event and this process's CPU time per event
 * (getrusage): coord's own cost, which must stay flat as N grows (hashed
 * registries), while a linear registry grows with N.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "coord.h"
#include "log.h"
#include "xalloc.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

static struct event_base *base;
static long acquired, acquired2, released, ensured, fired, created;

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    event_base_loopbreak(base);
}

static void run_until(long *counter, long want)
{
    struct event *tick = event_new(base, -1, EV_PERSIST, on_tick, NULL);
    struct timeval tv = {0, 2000};
    event_add(tick, &tv);
    double t0 = now();
    while (*counter < want) {
        event_base_loop(base, EVLOOP_ONCE);
        if (now() - t0 > 600) {
            fprintf(stderr, "coord_lock_bench: stuck at %ld of %ld\n", *counter, want);
            exit(1);
        }
    }
    event_free(tick);
}

static void on_lock(struct coord_lock *l, enum coord_lock_event ev, void *arg)
{
    if (ev == COORD_LOCK_ACQUIRED)
        (*(long *)arg)++;
    else
        fprintf(stderr, "lock event %d\n", ev);
}

static void on_count(int rc, void *arg)
{
    long *c = arg;
    if (rc)
        fprintf(stderr, "rc %d\n", rc);
    (*c)++;
}

static void on_exists(int rc, const struct coord_stat *st, void *arg)
{
}

static void on_event(enum coord_event ev, const char *path, void *arg)
{
    fired++;
}

static struct coord_session *session(void)
{
    const char *zk = getenv("DROVER_ZK");
    if (!zk) {
        fprintf(stderr, "coord_lock_bench: DROVER_ZK not set (run under scripts/with-stack)\n");
        exit(2);
    }
    struct coord_session_opts o = {.hosts = zk, .session_timeout_ms = 20000};
    struct drv_err err;
    struct coord_session *s = coord_session_new(base, &o, &err);
    if (!s || coord_session_wait_connected(s, 30000, &err) != 0) {
        fprintf(stderr, "coord_lock_bench: %s\n", err.msg);
        exit(1);
    }
    return s;
}

static void report(const char *phase, long n, double wall, double cpu_s)
{
    printf("%-8s n=%-6ld wall %8.1f us/event   coord cpu %6.1f us/event\n", phase, n,
           wall * 1e6 / (double)n, cpu_s * 1e6 / (double)n);
    fflush(stdout);
}

static void bench(struct coord_session *s, struct coord_session *s2, long n, int round)
{
    struct coord_lock **locks = xcalloc((size_t)n, sizeof(*locks));
    struct coord_lock **locks2 = xcalloc((size_t)n, sizeof(*locks2));
    char path[128];
    ensured = 0;
    for (long i = 0; i < n; i++) {
        snprintf(path, sizeof(path), "/bench/locks/r%d/l%ld", round, i);
        coord_ensure_path(s, path, on_count, &ensured);
    }
    run_until(&ensured, n);

    acquired = 0;
    double t0 = now(), c0 = cpu();
    for (long i = 0; i < n; i++) {
        snprintf(path, sizeof(path), "/bench/locks/r%d/l%ld", round, i);
        locks[i] = coord_lock_new(s, path, "{}", on_lock, &acquired);
        coord_lock_acquire(locks[i], -1);
    }
    run_until(&acquired, n);
    report("acquire", n, now() - t0, cpu() - c0);

    /* The second session queues behind every lock, then the first lets go of all. */
    acquired2 = 0;
    long waiting = 0;
    for (long i = 0; i < n; i++) {
        snprintf(path, sizeof(path), "/bench/locks/r%d/l%ld", round, i);
        locks2[i] = coord_lock_new(s2, path, "{}", on_lock, &acquired2);
        coord_lock_acquire(locks2[i], -1);
    }
    while (waiting < n) {
        waiting = 0;
        event_base_loop(base, EVLOOP_NONBLOCK);
        for (long i = 0; i < n; i++)
            waiting += coord_lock_waiting_on(locks2[i]) != NULL;
    }
    t0 = now();
    c0 = cpu();
    for (long i = 0; i < n; i++)
        coord_lock_free(locks[i]);
    run_until(&acquired2, n);
    report("handover", n, now() - t0, cpu() - c0);

    released = 0;
    t0 = now();
    c0 = cpu();
    for (long i = 0; i < n; i++)
        coord_lock_release_done(locks2[i], on_count, &released);
    run_until(&released, n);
    report("release", n, now() - t0, cpu() - c0);
    for (long i = 0; i < n; i++)
        coord_lock_free(locks2[i]);
    free(locks);
    free(locks2);

    /* One-shot watches on absent znodes, fired by another session's creates. */
    fired = 0;
    created = 0;
    long armed = 0;
    for (long i = 0; i < n; i++) {
        snprintf(path, sizeof(path), "/bench/watch/r%d/w%ld", round, i);
        coord_exists_w(s, path, on_exists, on_event, NULL);
    }
    snprintf(path, sizeof(path), "/bench/watch/r%d", round);
    coord_ensure_path(s2, path, on_count, &armed);
    /* The reads that set the watches come back before this one. */
    coord_sync(s, path, on_count, &armed);
    run_until(&armed, 2);
    t0 = now();
    c0 = cpu();
    for (long i = 0; i < n; i++) {
        snprintf(path, sizeof(path), "/bench/watch/r%d/w%ld", round, i);
        coord_ensure_path(s2, path, on_count, &created);
    }
    run_until(&fired, n);
    report("watch", n, now() - t0, cpu() - c0);
    run_until(&created, n);
}

int main(int argc, char **argv)
{
    long sizes[8] = {1000, 10000};
    int nsizes = 2;
    bool given = false;
    int c;
    while ((c = getopt(argc, argv, "n:")) != -1) {
        if (c == 'n' && (!given || nsizes < 8)) {
            if (!given)
                nsizes = 0;
            given = true;
            sizes[nsizes++] = atol(optarg);
        } else {
            fprintf(stderr, "usage: coord_lock_bench [-n N]...\n");
            return 2;
        }
    }
    log_init(LOG_WARN, 2);
    log_route_libraries();
    base = event_base_new();
    struct coord_session *s = session(), *s2 = session();
    for (int i = 0; i < nsizes; i++)
        bench(s, s2, sizes[i], i);
    coord_session_free(s2);
    coord_session_free(s);
    event_base_free(base);
    return 0;
}
