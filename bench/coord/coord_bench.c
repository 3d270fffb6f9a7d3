/*
 * coord_bench: throughput of src/coord's locking queue against a real
 * ZooKeeper, next to raw asynchronous creates on the same server in the same
 * run. Not a test: it prints figures (docs/coord.md has the command and the
 * latest ones).
 *
 *   scripts/with-stack --no-pg -- build/bench/coord/coord_bench [-n ITEMS] [-b BATCH] [-w WINDOW]
 *
 * 1. raw: ITEMS zoo_acreate of small persistent-sequential znodes, WINDOW in
 *    flight, on one handle: the server's ceiling for single writes.
 * 2. queue, 1 and 4 consumers (separate processes, separate sessions): the
 *    producer puts ITEMS items in multi-ops of BATCH while the consumers take
 *    (WINDOW takes in flight each) and complete every item. The clock runs
 *    from the first put until the queue is empty (polled with stats).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#define THREADED 1 /* the synchronous calls of libzookeeper_mt */
#include <zookeeper/zookeeper.h>

#include "coord.h"
#include "log.h"
#include "xalloc.h"

static int n_items = 20000, batch = 100, window = 200;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static const char *zk(void)
{
    const char *z = getenv("DROVER_ZK");
    if (!z) {
        fprintf(stderr, "coord_bench: DROVER_ZK not set (run under scripts/with-stack)\n");
        exit(2);
    }
    return z;
}

/* The server's last zxid (four-letter word "srvr"): its growth counts transactions. */
static long long server_zxid(void)
{
    char host[256];
    snprintf(host, sizeof(host), "%s", zk());
    char *comma = strchr(host, ',');
    if (comma)
        *comma = '\0';
    char *colon = strrchr(host, ':');
    if (!colon)
        return -1;
    *colon = '\0';
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1))};
    inet_pton(AF_INET, host, &a.sin_addr);
    long long z = -1;
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 && write(fd, "srvr", 4) == 4) {
        char buf[4096];
        size_t got = 0;
        ssize_t r;
        while (got < sizeof(buf) - 1 && (r = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0)
            got += (size_t)r;
        buf[got] = '\0';
        const char *p = strstr(buf, "Zxid: ");
        if (p)
            z = strtoll(p + 6, NULL, 16);
    }
    close(fd);
    return z;
}

/* ---- raw creates -------------------------------------------------------- */

static atomic_int raw_done, raw_errors;

static void raw_created(int rc, const char *value, const void *data)
{
    if (rc != ZOK)
        atomic_fetch_add(&raw_errors, 1);
    atomic_fetch_add(&raw_done, 1);
}

static double bench_raw(void)
{
    zhandle_t *zh = zookeeper_init2(zk(), NULL, 10000, NULL, NULL, 0, log_zk_callback);
    zoo_set_servers_resolution_delay(zh, 30000); /* as coord's sessions do */
    while (zoo_state(zh) != ZOO_CONNECTED_STATE)
        usleep(1000);
    zoo_create(zh, "/bench", "{}", 2, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    zoo_create(zh, "/bench/raw", "{}", 2, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    const char *data = "{\"n\":1}";
    double t0 = now();
    int sent = 0;
    while (atomic_load(&raw_done) < n_items) {
        while (sent < n_items && sent - atomic_load(&raw_done) < window * 8) {
            zoo_acreate(zh, "/bench/raw/i-", data, (int)strlen(data), &ZOO_OPEN_ACL_UNSAFE,
                        ZOO_PERSISTENT_SEQUENTIAL, raw_created, NULL);
            sent++;
        }
        usleep(200);
    }
    double dt = now() - t0;
    zookeeper_close(zh);
    if (atomic_load(&raw_errors))
        fprintf(stderr, "raw: %d errors\n", atomic_load(&raw_errors));
    return n_items / dt;
}

/* ---- queue consumer (child process) ------------------------------------------------ */

struct consumer {
    struct coord_queue *q;
    int outstanding;
    long completed;
    volatile sig_atomic_t stop;
};

static struct consumer cons;

static void on_take(struct coord_queue_item *it, int rc, void *arg);

static void refill_takes(void)
{
    while (!cons.stop && cons.outstanding < window) {
        cons.outstanding++;
        coord_queue_take(cons.q, -1, on_take, NULL);
    }
}

static void on_complete(int rc, void *arg)
{
    if (rc == 0)
        cons.completed++;
    else
        fprintf(stderr, "consumer: complete rc %d\n", rc);
}

static void on_take(struct coord_queue_item *it, int rc, void *arg)
{
    cons.outstanding--;
    if (it) {
        coord_queue_complete(cons.q, it->id, on_complete, NULL);
        coord_queue_item_free(it);
    }
    refill_takes();
}

static void on_term(evutil_socket_t fd, short what, void *arg)
{
    cons.stop = 1;
    event_base_loopbreak(arg);
}

static void on_ready(int rc, void *arg)
{
    if (rc) {
        fprintf(stderr, "consumer: open rc %d\n", rc);
        exit(1);
    }
    refill_takes();
    /* Tell the parent we are ready. */
    int fd = *(int *)arg;
    if (write(fd, "r", 1) != 1)
        exit(1);
    close(fd);
}

static int consumer_main(const char *path, int id, int ready_fd)
{
    struct event_base *base = event_base_new();
    struct coord_session_opts o = {.hosts = zk(), .session_timeout_ms = 10000};
    struct drv_err err;
    struct coord_session *s = coord_session_new(base, &o, &err);
    if (!s || coord_session_wait_connected(s, 30000, &err) != 0) {
        fprintf(stderr, "consumer: %s\n", err.msg);
        return 1;
    }
    char cid[32];
    snprintf(cid, sizeof(cid), "bench-%d", id);
    struct coord_queue_opts qo = {.consumer_id = cid};
    cons.q = coord_queue_open(s, path, &qo, on_ready, &ready_fd);
    struct event *term = evsignal_new(base, SIGTERM, on_term, base);
    event_add(term, NULL);
    event_base_dispatch(base);
    event_free(term);
    coord_queue_close(cons.q);
    coord_session_free(s);
    event_base_free(base);
    fprintf(stderr, "consumer %d: completed %ld\n", id, cons.completed);
    return 0;
}

/* ---- queue producer and clock (parent) ----------------------------------------- */

struct producer {
    int puts_done;
    bool stats_done;
    struct coord_queue_stats st;
    int stats_rc;
};

static void on_put(int rc, void *arg)
{
    struct producer *p = arg;
    if (rc)
        fprintf(stderr, "put rc %d\n", rc);
    p->puts_done++;
}

static void on_stats(const struct coord_queue_stats *st, int rc, void *arg)
{
    struct producer *p = arg;
    p->stats_rc = rc;
    if (st)
        p->st = *st;
    p->stats_done = true;
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    event_base_loopbreak(arg);
}

static void run_once(struct event_base *base)
{
    event_base_loop(base, EVLOOP_ONCE);
}

static double bench_queue(struct event_base *base, struct coord_session *s, int consumers,
                          const char *path)
{
    pid_t pids[16];
    int ready[16];
    for (int i = 0; i < consumers; i++) {
        int fds[2];
        if (pipe(fds) != 0)
            exit(1);
        pids[i] = fork();
        if (pids[i] == 0) {
            close(fds[0]);
            _exit(consumer_main(path, i, fds[1]));
        }
        close(fds[1]);
        ready[i] = fds[0];
    }
    for (int i = 0; i < consumers; i++) {
        char c;
        if (read(ready[i], &c, 1) != 1) {
            fprintf(stderr, "consumer %d did not start\n", i);
            exit(1);
        }
        close(ready[i]);
    }
    struct producer p = {0};
    struct coord_queue *q = coord_queue_open(s, path, NULL, NULL, NULL);
    struct event *tick = event_new(base, -1, EV_PERSIST, on_tick, base);
    struct timeval tv = {0, 10000};
    event_add(tick, &tv);
    struct coord_queue_put_item *items = xcalloc((size_t)batch, sizeof(*items));
    char json[64];
    snprintf(json, sizeof(json), "{\"task\":\"bench\",\"attempt\":1}");
    for (int i = 0; i < batch; i++)
        items[i] = (struct coord_queue_put_item){json, i % 3};
    int nputs = n_items / batch;
    long long z0 = server_zxid();
    double t0 = now();
    for (int k = 0; k < nputs; k++)
        coord_queue_put(q, items, (size_t)batch, on_put, &p);
    double t_put = 0;
    for (;;) {
        run_once(base);
        if (p.puts_done < nputs)
            continue;
        if (!t_put) {
            t_put = now() - t0;
            fprintf(stderr, "queue %s: puts done after %.2f s\n", path, t_put);
        }
        p.stats_done = false;
        coord_queue_stats(q, on_stats, &p);
        while (!p.stats_done)
            run_once(base);
        if (p.stats_rc == 0 && p.st.length == 0)
            break;
    }
    double dt = now() - t0;
    long long z1 = server_zxid();
    if (z0 >= 0 && z1 >= z0)
        fprintf(stderr, "queue %s: %.3f transactions per item (zxid grew by %lld)\n", path,
                (double)(z1 - z0) / (nputs * batch), z1 - z0);
    event_free(tick);
    for (int i = 0; i < consumers; i++)
        kill(pids[i], SIGTERM);
    for (int i = 0; i < consumers; i++)
        waitpid(pids[i], NULL, 0);
    coord_queue_close(q);
    free(items);
    return (nputs * batch) / dt;
}

int main(int argc, char **argv)
{
    int c;
    while ((c = getopt(argc, argv, "n:b:w:")) != -1) {
        switch (c) {
        case 'n':
            n_items = atoi(optarg);
            break;
        case 'b':
            batch = atoi(optarg);
            break;
        case 'w':
            window = atoi(optarg);
            break;
        default:
            fprintf(stderr, "usage: coord_bench [-n ITEMS] [-b BATCH] [-w WINDOW]\n");
            return 2;
        }
    }
    if (batch < 1 || batch > COORD_QUEUE_MAX_BATCH || n_items < batch) {
        fprintf(stderr, "coord_bench: bad -n or -b\n");
        return 2;
    }
    log_init(LOG_WARN, 2);
    log_route_libraries();
    signal(SIGPIPE, SIG_IGN);

    double raw = bench_raw();
    struct event_base *base = event_base_new();
    struct coord_session_opts o = {.hosts = zk(), .session_timeout_ms = 10000};
    struct drv_err err;
    struct coord_session *s = coord_session_new(base, &o, &err);
    if (!s || coord_session_wait_connected(s, 30000, &err) != 0) {
        fprintf(stderr, "coord_bench: %s\n", err.msg);
        return 1;
    }
    double q1 = bench_queue(base, s, 1, "/drover/queues/bench/c1");
    double q4 = bench_queue(base, s, 4, "/drover/queues/bench/c4");
    coord_session_free(s);
    event_base_free(base);

    printf("items=%d batch=%d window=%d\n", n_items, batch, window);
    printf("raw async creates/s:               %8.0f\n", raw);
    printf("queue items/s, 1 consumer:          %8.0f  (%.2f x raw creates, %.1f x 680)\n", q1,
           q1 / raw, q1 / 680.0);
    printf("queue items/s, 4 consumers:         %8.0f  (%.2f x raw creates)\n", q4, q4 / raw);
    printf("znode writes per item: 4 (create item, create claim, delete claim, delete item)\n");
    printf("transactions per item: see the lines above (zxid growth); without batching 3\n");
    return 0;
}
