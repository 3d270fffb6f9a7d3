/*
 * itest: helpers shared by the coord integration tests (one binary,
 * coord_itest, with one subcommand per test and helper process).
 *
 * The tests run under scripts/with-stack, which exports DROVER_ZK and tears
 * the servers down. Child processes a test starts are recorded here and
 * killed (by pid) at exit, whether the test passes or fails.
 */
#ifndef DROVER_COORD_ITEST_H
#define DROVER_COORD_ITEST_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

#include <event2/event.h>

#include "coord.h"

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                        \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

const char *it_zk(void);
/* A connected session on base, or exit. */
struct coord_session *it_session(struct event_base *base, int timeout_ms);
struct coord_session *it_session_at(struct event_base *base, const char *hosts, int timeout_ms);
/* Run base until *flag or timeout_ms; returns *flag. */
bool it_run_until(struct event_base *base, volatile bool *flag, int timeout_ms);
/* Run base until pred(arg) holds or timeout_ms; returns pred(arg). */
bool it_run_until_fn(struct event_base *base, bool (*pred)(void *), void *arg, int timeout_ms);
/* Run base for ms. */
void it_run_for(struct event_base *base, int ms);

/* Start argv[0]-style child: this binary with the given subcommand args; killed at exit. */
pid_t it_spawn(char *const argv[]);
/* Wait for a child started with it_spawn; returns its exit status or -signal. */
int it_wait(pid_t pid);
void it_self_path(const char *argv0);
const char *it_self(void);

/* ZooKeeper server n (1-based): its pid and a restart with the same command line. */
pid_t it_zk_pid(int n);
void it_zk_kill(int n);
void it_zk_start(int n);
/* Index (1-based) of the ensemble's leader, or 0. */
int it_zk_leader(void);
int it_zk_count(void);

/* Close the session of s from a second handle: s sees it expire. */
void it_expire(struct coord_session *s);
/* Read path through s (running base) until it holds want, or fail after timeout_ms. */
void it_read_until(struct event_base *base, struct coord_session *s, const char *path,
                   const char *want, int timeout_ms);
/* Wait (blocking, without running any loop) until path is gone on the server. */
void it_wait_gone(const char *path);

/* The lock test's counter znode /drover/itest/counter: {"count":N,"token":T}. */
void it_read_counter(struct event_base *base, struct coord_session *s, long *count, long *token);
void it_write_counter(struct event_base *base, struct coord_session *s, long count, long token);

/* Read path through s and check that it holds want. */
void it_read_check(struct event_base *base, struct coord_session *s, const char *path,
                   const char *want);
/* The rc of one read of path (0, DRV_EPERM, ...). */
int it_read_rc(struct event_base *base, struct coord_session *s, const char *path);

/* A callback's int answer (a coord rc callback's arg): it came (calls: how many times)
 * with rc. it_wait_rc runs base until it comes, or fails the test after ms; its rc. */
struct it_rc {
    bool done;
    int rc;
    int calls;
};
void it_on_rc(int rc, void *arg);
int it_wait_rc(struct event_base *base, struct it_rc *o, int ms);

/* A multi-op's answer (coord_txn_commit's arg): rc, failed_op, zrc, the first four
 * creates' names. it_wait_txn runs base until it comes, or fails after ms. */
struct it_txn {
    bool done;
    int rc, failed_op, zrc;
    char created[4][256];
};
void it_on_txn(const struct coord_txn_result *r, void *arg);
struct it_txn it_wait_txn(struct event_base *base, struct it_txn *o, int ms);

/* A take's answer (coord_queue_take's arg): rc, the item's id and JSON. it_take takes
 * one from q (waiting up to ms for an item), answered within 30 s or the test fails. */
struct it_take {
    bool done;
    int rc;
    char id[512];
    char json[256];
};
void it_on_take(struct coord_queue_item *it, int rc, void *arg);
struct it_take it_take_one(struct event_base *base, struct coord_queue *q, int ms);

/* A read's answer (coord_get's arg): rc, version, data. it_get reads path through s,
 * answered within 20 s or the test fails. */
struct it_got {
    bool done;
    int rc, version;
    char data[256];
};
void it_on_got(int rc, const char *data, int version, void *arg);
struct it_got it_get(struct event_base *base, struct coord_session *s, const char *path);

/* How many children path has, listed through s (answered within 20 s, or the test fails);
 * with must_exist the listing must succeed too, else a failed one counts 0. */
size_t it_children_count(struct event_base *base, struct coord_session *s, const char *path,
                         bool must_exist);

/* A queue at path opened through s (shards, consumer id, on_lost and its arg or NULL),
 * its open answered 0 within ms, or the test fails. */
struct coord_queue *it_queue_open(struct event_base *base, struct coord_session *s,
                                  const char *path, unsigned shards, const char *consumer,
                                  coord_lost_cb on_lost, void *lost_arg, int ms);
/* The queue's figures (coord_queue_stats), answered 0 within 20 s, or the test fails. */
struct coord_queue_stats it_queue_stats(struct event_base *base, struct coord_queue *q);

/* Start a child with its stdout on a pipe (*out_fd); read one line with a timeout. */
pid_t it_spawn_pipe(char *const argv[], int *out_fd);
bool it_read_line(int fd, char *buf, size_t n, int timeout_ms);

/*
 * A TCP proxy (threads of this process) to 127.0.0.1:target_port; returns its
 * "host:port". In blackhole mode requests still reach the server but replies
 * are swallowed; cut closes every proxied connection (the client sees a
 * connection loss) and ends the blackhole.
 */
char *it_proxy_start(int target_port);
void it_proxy_blackhole(bool on);
void it_proxy_cut(void);
/* While down, the proxy closes every new connection at once. */
void it_proxy_down(bool down);
int it_zk_port(int n);

/*
 * Proxies as objects, several per test. Modes: down (new connections are
 * closed at once), blackhole (replies swallowed), silent (nothing moves in
 * either direction and nothing is closed: a network that drops packets),
 * hold (replies wait in the socket buffers until released), swallow (from the
 * first reply to a request of one ZooKeeper op type on, that connection's
 * replies are dropped: 4 getData, 12 getChildren2, 14 multi; 0 turns it off
 * for new connections). cut_all closes every connection and ends the
 * blackhole.
 */
struct it_proxy;
struct it_proxy *it_proxy_new(int target_port);
const char *it_proxy_addr(const struct it_proxy *p);
void it_proxy_set_down(struct it_proxy *p, bool on);
void it_proxy_set_blackhole(struct it_proxy *p, bool on);
void it_proxy_set_silent(struct it_proxy *p, bool on);
void it_proxy_set_hold(struct it_proxy *p, bool on);
void it_proxy_set_swallow(struct it_proxy *p, int op);
void it_proxy_cut_all(struct it_proxy *p);
/* Client requests of op type op (14: multi) that went through p so far. */
int it_proxy_requests(struct it_proxy *p, int op);

/* A session whose connection is not awaited (it may not be connected yet). */
struct coord_session *it_session_nowait(struct event_base *base, const char *hosts, int timeout_ms,
                                        coord_state_cb on_state, void *arg);
/* Monotonic milliseconds. */
long it_now_ms(void);

/* Every test and helper subcommand of itest_list.h, defined in the file its group names. */
#define ITEST(name, fn) int fn(void);
#define ITEST_VARIANT(name, of, args)
#define ITEST_HELPER(name, fn, nargs) int fn(char **args);
#include "itest_list.h"
#undef ITEST
#undef ITEST_VARIANT
#undef ITEST_HELPER

#endif
