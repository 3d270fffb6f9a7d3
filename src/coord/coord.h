/*
 * coord: Drover's ZooKeeper coordination layer, the one public header.
 *
 * What it gives droverd and drover-worker:
 *   - a session (struct coord_session) driven by a libevent event_base,
 *   - membership of a group (ephemeral znodes with JSON data) and group watches,
 *   - a consistent hash ring of members (pure code, no I/O),
 *   - locks with fencing tokens and lock-lost notification, leader election,
 *   - fenced multi-op writes (applied only while a lock is still held),
 *   - locking queues for tasks (put, take, complete, release, cheap stats).
 *
 * Threads (see docs/threading.md): every function here is called on the thread
 * that runs the session's event_base (the "loop thread"), except
 * coord_session_wait_connected(), which may block any thread before the loop
 * runs. Every callback is delivered on the loop thread, never on a ZooKeeper
 * thread, and never from inside the call that registered it.
 *
 * Paths: absolute znode paths below the session's chroot. Drover's tree lives
 * under /drover; docs/zookeeper-tree.md describes every znode. Every znode this
 * module writes holds small JSON.
 *
 * Ownership: objects returned by the _new, _join, _watch and _open functions
 * belong to the caller, who frees them with the matching _free, _leave or _close, before freeing
 * the session. Strings passed in are copied. Strings and arrays passed to callbacks live until the
 * callback returns, unless the callback says otherwise.
 *
 * Errors: functions return 0 or a negative DRV_E* code (error.h). ZooKeeper
 * failures are DRV_EZK with the ZOO rc in drv_err.lib_code where a struct
 * drv_err is taken; callbacks get the DRV_E* code only and the detail is logged.
 */
#ifndef DROVER_COORD_H
#define DROVER_COORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

struct event_base;

/* ------------------------------------------------------------------------ */
/* Session                                                                  */
/* ------------------------------------------------------------------------ */

/*
 * Session states, as reported to the owner:
 *
 *   CONNECTING --> CONNECTED <--> SUSPENDED
 *                     |               |
 *                     +---> EXPIRED <-+      (a new session follows at once:
 *                              |              EXPIRED -> CONNECTING -> CONNECTED)
 *   any ------------------> CLOSED           (coord_session_free)
 *
 * SUSPENDED: the connection is lost but the session may still live; locks are
 * kept, but a holder should not start new work until CONNECTED again. After a
 * third of the session timeout still SUSPENDED, every held lock reports
 * COORD_LOCK_LOST (and its znode is deleted once connected again): by then the
 * server may have expired the session without the client knowing, and another
 * process may hold the lock.
 * EXPIRED: everything ephemeral of the old session is gone. Before the owner
 * hears EXPIRED, every lock of the session has already reported
 * COORD_LOCK_LOST. Members re-join and watches re-arm by themselves once the
 * new session is CONNECTED.
 * AUTH_FAILED: the digest credentials were refused; the session is unusable.
 */
enum coord_state {
    COORD_CONNECTING = 0,
    COORD_CONNECTED,
    COORD_SUSPENDED,
    COORD_EXPIRED,
    COORD_AUTH_FAILED,
    COORD_CLOSED,
};

const char *coord_state_name(enum coord_state st);

struct coord_session;

typedef void (*coord_state_cb)(struct coord_session *s, enum coord_state st, void *arg);

struct coord_session_opts {
    const char *hosts;           /* "127.0.0.1:2181,127.0.0.1:2182" (required) */
    const char *chroot;          /* NULL or "/prefix"; the znode must already exist */
    const char *digest_user;     /* NULL, or digest credentials (with digest_password): */
    const char *digest_password; /*   nodes are then created with creator-all + world-read ACLs */
    int session_timeout_ms;      /* 0 means 10000; the server clamps it to its limits */
    coord_state_cb on_state;     /* NULL or called on every state change */
    void *arg;
};

/*
 * Start a session on base (which must outlive it). Never blocks: the
 * connection proceeds in ZooKeeper's threads. Returns NULL (err filled) when
 * the options are invalid or the client cannot be created.
 */
struct coord_session *coord_session_new(struct event_base *base, const struct coord_session_opts *o,
                                        struct drv_err *err);

/*
 * Block the calling thread until the session is connected for the first time,
 * or timeout_ms passes (DRV_ETIMEDOUT), or the credentials are refused
 * (DRV_EPERM). For start-up, before the loop runs; the owner still gets the
 * CONNECTED callback once the loop runs.
 */
int coord_session_wait_connected(struct coord_session *s, int timeout_ms, struct drv_err *err);

enum coord_state coord_session_state(const struct coord_session *s);

/* The current ZooKeeper session id (0 before the first connection). */
int64_t coord_session_id(const struct coord_session *s);

/*
 * The current session id and password (16 bytes), for tests that take over the
 * session from a second client to force its expiry. Returns 0 or DRV_EAGAIN.
 */
int coord_session_credentials(const struct coord_session *s, int64_t *id, char passwd[16]);

/* How many times this object had to start a new session after an expiry. */
unsigned coord_session_generation(const struct coord_session *s);

/*
 * Close the session: pending requests are sent first (so a member's leave or a
 * lock's release reaches the server), then the session is closed, so every
 * ephemeral znode disappears at once, not after the timeout. Blocks the loop
 * thread for at most a round trip. Free every object made on s before.
 */
void coord_session_free(struct coord_session *s);

/* Generic completion: rc is 0 or a negative DRV_E* code. */
typedef void (*coord_done_cb)(int rc, void *arg);

/*
 * Create path and its missing ancestors as persistent znodes holding "{}"
 * (one pipelined round trip). done may be NULL.
 */
void coord_ensure_path(struct coord_session *s, const char *path, coord_done_cb done, void *arg);

/* Read a znode: cb gets rc, its data (NUL-terminated, valid during the call) and version. */
typedef void (*coord_get_cb)(int rc, const char *data, int version, void *arg);
void coord_get(struct coord_session *s, const char *path, coord_get_cb cb, void *arg);

/* List a znode's children: names valid during the call, unsorted. */
typedef void (*coord_children_cb)(int rc, char *const *names, size_t n, void *arg);
void coord_children(struct coord_session *s, const char *path, coord_children_cb cb, void *arg);

/* ------------------------------------------------------------------------ */
/* Membership                                                               */
/* ------------------------------------------------------------------------ */

struct coord_member;

/*
 * Join group (e.g. "/drover/members/droverd") as an ephemeral znode
 * group/<id> holding json (a JSON object, copied). The group path is created
 * when missing. done (may be NULL) hears the result of the first creation;
 * after an expiry the znode is re-created with the latest data by itself. A
 * znode left by an older session of the same id is replaced.
 */
struct coord_member *coord_member_join(struct coord_session *s, const char *group, const char *id,
                                       const char *json, coord_done_cb done, void *arg);

/* Replace the member's data (e.g. to mark it draining). done may be NULL. */
void coord_member_update(struct coord_member *m, const char *json, coord_done_cb done, void *arg);

/* The member's znode path (owned by m). */
const char *coord_member_path(const struct coord_member *m);

/*
 * Leave the group at once: the znode delete is sent now (before any later
 * close of the session) and m is freed. m must not be used afterwards.
 */
void coord_member_leave(struct coord_member *m);

struct coord_member_info {
    const char *id;   /* the znode name */
    const char *json; /* its data ("" when unreadable) */
};

/* members sorted by id; valid only during the call. */
typedef void (*coord_group_cb)(const struct coord_member_info *members, size_t n, void *arg);

struct coord_group;

/*
 * Watch group: cb gets the whole member list once at first and after every
 * change (joins, leaves, data changes), and again after a new session. The
 * group path is created when missing.
 */
struct coord_group *coord_group_watch(struct coord_session *s, const char *group, coord_group_cb cb,
                                      void *arg);
void coord_group_free(struct coord_group *g);

/* ------------------------------------------------------------------------ */
/* Hash ring (pure: no I/O, no threads)                                     */
/* ------------------------------------------------------------------------ */

#define COORD_RING_DEFAULT_POINTS 160

struct coord_ring;

/* points: virtual points per unit of weight (0 means COORD_RING_DEFAULT_POINTS). */
struct coord_ring *coord_ring_new(unsigned points);

/*
 * Add a member (id copied). weight >= 1 multiplies its points. A draining
 * member keeps its points, so no other key moves, but lookups skip it: its keys
 * go to the next member clockwise. Adding an id twice replaces it.
 */
void coord_ring_add(struct coord_ring *r, const char *id, unsigned weight, bool draining);
void coord_ring_remove(struct coord_ring *r, const char *id);

/*
 * Build the ring from a group's member list: weight from the member JSON's
 * "weight" (default 1), draining from "draining" (default false).
 */
struct coord_ring *coord_ring_from_members(const struct coord_member_info *m, size_t n,
                                           unsigned points);

/* The member id that owns key, or NULL when no member may take keys. Owned by r. */
const char *coord_ring_lookup(struct coord_ring *r, const char *key);
size_t coord_ring_size(const struct coord_ring *r);
void coord_ring_free(struct coord_ring *r);

/* The ring's hash (64-bit, stable across versions and machines). */
uint64_t coord_hash64(const void *data, size_t len);

/* ------------------------------------------------------------------------ */
/* Locks                                                                    */
/* ------------------------------------------------------------------------ */

enum coord_lock_event {
    COORD_LOCK_ACQUIRED = 1, /* held; coord_lock_token() is valid */
    COORD_LOCK_BUSY,         /* try-lock (timeout 0) found another holder */
    COORD_LOCK_TIMEDOUT,     /* the deadline passed before acquisition */
    COORD_LOCK_LOST,         /* it was held and is not any more: stop acting now */
    COORD_LOCK_ERROR,        /* acquisition failed (logged) */
};

struct coord_lock;
typedef void (*coord_lock_cb)(struct coord_lock *l, enum coord_lock_event ev, void *arg);

/*
 * A lock on dir (e.g. "/drover/locks/jobs/<job id>"). Contenders are
 * ephemeral-sequential children of dir holding holder_json; each waits only
 * for its predecessor. cb hears every event. Nothing happens until
 * coord_lock_acquire().
 */
struct coord_lock *coord_lock_new(struct coord_session *s, const char *dir, const char *holder_json,
                                  coord_lock_cb cb, void *arg);

/*
 * Start acquiring: timeout_ms 0 is a try-lock (BUSY when held elsewhere), < 0
 * waits forever, > 0 waits at most that long (TIMEDOUT). Exactly one of
 * ACQUIRED, BUSY, TIMEDOUT, ERROR follows. DRV_EAGAIN when already acquiring
 * or held.
 */
int coord_lock_acquire(struct coord_lock *l, int timeout_ms);

bool coord_lock_held(const struct coord_lock *l);

/*
 * The fencing token of the current hold: the creation zxid of this contender's
 * znode. It strictly increases from one holder to the next. 0 when not held.
 */
int64_t coord_lock_token(const struct coord_lock *l);

/* The contender znode's path while acquiring or held, else NULL. Owned by l. */
const char *coord_lock_node(const struct coord_lock *l);

/*
 * While waiting: the path of the one contender this one watches (its
 * predecessor), else NULL. For tests and diagnostics. Owned by l.
 */
const char *coord_lock_waiting_on(const struct coord_lock *l);

/* Give the lock up (or stop acquiring); no callback follows. It may be acquired again. */
void coord_lock_release(struct coord_lock *l);

/* Release and free. */
void coord_lock_free(struct coord_lock *l);

/*
 * Leader election for a singleton duty: contends on
 * /drover/elections/<name> for as long as it lives, re-contending after a
 * lost session. cb(true) when this process leads, cb(false) when it stops.
 */
struct coord_election;
typedef void (*coord_election_cb)(struct coord_election *e, bool leader, int64_t token, void *arg);
struct coord_election *coord_election_new(struct coord_session *s, const char *name,
                                          const char *holder_json, coord_election_cb cb, void *arg);
bool coord_election_leader(const struct coord_election *e);
void coord_election_free(struct coord_election *e);

/* ------------------------------------------------------------------------ */
/* Transactions and fenced writes                                           */
/* ------------------------------------------------------------------------ */

#define COORD_EPHEMERAL 1
#define COORD_SEQUENTIAL 2

struct coord_txn;

struct coord_txn *coord_txn_new(void);
/* version -1 checks existence only. */
void coord_txn_check(struct coord_txn *t, const char *path, int version);
void coord_txn_create(struct coord_txn *t, const char *path, const char *json, int flags);
void coord_txn_set(struct coord_txn *t, const char *path, const char *json, int version);
void coord_txn_delete(struct coord_txn *t, const char *path, int version);
size_t coord_txn_count(const struct coord_txn *t);
void coord_txn_free(struct coord_txn *t);

/*
 * Result of a commit. rc 0: every op applied. DRV_ECONFLICT: nothing applied
 * because the fence (lock) is gone (failed_op == -1; the lock has reported
 * COORD_LOCK_LOST: stop acting) or a check/version failed (failed_op is the
 * index of the first failing op, in the order added). Other codes: nothing
 * applied or the outcome is unknown (DRV_EAGAIN after a connection loss).
 * created[i] is the created path of op i when it was a create, else NULL.
 */
struct coord_txn_result {
    int rc;
    int failed_op;
    int zrc; /* ZooKeeper's rc of the failing op, 0 when none */
    char **created;
    size_t n;
};
typedef void (*coord_txn_cb)(const struct coord_txn_result *r, void *arg);

/*
 * Commit t (taken over and freed) in one multi-op. With fence != NULL the ops
 * apply only if fence is still held: its contender znode must exist, checked
 * in the same multi-op, so a stale holder's writes fail. cb may be NULL.
 *
 * Sequential creates are safe across a connection loss: the name asked for
 * gets a suffix unique to this commit ("<path><session>-<n>-" then
 * ZooKeeper's 10-digit sequence), and when the answer is lost the parents
 * are searched for it before the multi-op is sent again. A commit without
 * sequential creates reports DRV_EAGAIN when its answer is lost: read the
 * znodes again to learn whether it applied.
 */
void coord_txn_commit(struct coord_session *s, struct coord_txn *t, struct coord_lock *fence,
                      coord_txn_cb cb, void *arg);

/*
 * Create one sequential znode (COORD_EPHEMERAL may be added to flags), safely
 * across a connection loss as above. cb gets the created path (valid during
 * the call) or NULL with rc < 0.
 */
typedef void (*coord_create_cb)(int rc, const char *path, void *arg);
void coord_create_seq(struct coord_session *s, const char *path, const char *json, int flags,
                      coord_create_cb cb, void *arg);

/* ------------------------------------------------------------------------ */
/* Locking queues                                                           */
/* ------------------------------------------------------------------------ */

#define COORD_QUEUE_DEFAULT_SHARDS 16
#define COORD_QUEUE_MAX_BATCH 1000
#define COORD_QUEUE_MAX_PRIORITY 9

struct coord_queue;

struct coord_queue_opts {
    unsigned shards;         /* 0 means COORD_QUEUE_DEFAULT_SHARDS; fixed for a queue's life */
    const char *consumer_id; /* written into claims; NULL means "pid-<pid>" */
};

/*
 * Open the queue at path (e.g. "/drover/queues/<tenant>/<class>"), creating
 * its znodes when missing. done (may be NULL) hears when it is ready; calls
 * made before are queued behind it.
 */
struct coord_queue *coord_queue_open(struct coord_session *s, const char *path,
                                     const struct coord_queue_opts *o, coord_done_cb done,
                                     void *arg);

struct coord_queue_put_item {
    const char *json; /* the item's data: a JSON value, small (a few KB) */
    int priority;     /* 0 (lowest) .. 9 (highest) */
};

/*
 * Put n items (1..COORD_QUEUE_MAX_BATCH) in one multi-op: all or none. Safe
 * across a connection loss (never duplicated). done may be NULL.
 */
int coord_queue_put(struct coord_queue *q, const struct coord_queue_put_item *items, size_t n,
                    coord_done_cb done, void *arg);

struct coord_queue_item {
    char *id;   /* "<shard>/<name>": pass to complete/release */
    char *json; /* the data put */
    int priority;
    int64_t ctime_ms; /* when it was put (server clock) */
};
void coord_queue_item_free(struct coord_queue_item *it);

/* item (owned by the callee, free it with coord_queue_item_free) or NULL with rc < 0. */
typedef void (*coord_take_cb)(struct coord_queue_item *item, int rc, void *arg);

/*
 * Claim the next unclaimed item: cb gets it, or DRV_ETIMEDOUT after timeout_ms
 * (< 0: wait forever). Several takes may be outstanding at once (pipelining).
 * The claim is ephemeral: if this session dies the item becomes available again.
 */
void coord_queue_take(struct coord_queue *q, int timeout_ms, coord_take_cb cb, void *arg);

/*
 * Done with an item: delete item and claim in one multi-op, applied only if
 * the claim still exists in this session (DRV_ECONFLICT otherwise: someone else
 * may now hold it). Completes asked for in one turn of the loop share one
 * multi-op. done may be NULL.
 */
void coord_queue_complete(struct coord_queue *q, const char *item_id, coord_done_cb done,
                          void *arg);

/* Give the item back to the queue (delete the claim). done may be NULL. */
void coord_queue_release(struct coord_queue *q, const char *item_id, coord_done_cb done, void *arg);

struct coord_queue_stats {
    int64_t length;        /* items in the queue, claimed ones included */
    int64_t claimed;       /* items claimed by a consumer */
    int64_t oldest_age_ms; /* age of the oldest item (0 when empty) */
};
typedef void (*coord_stats_cb)(const struct coord_queue_stats *st, int rc, void *arg);

/*
 * Read the queue's figures: shards + 1 small stat reads (no listing) for
 * length and claims, and for the age one stat read per non-empty shard of its
 * cached oldest item (a shard is listed again only when that item is gone).
 */
void coord_queue_stats(struct coord_queue *q, coord_stats_cb cb, void *arg);

/* Close: pending takes get DRV_EAGAIN; claims stay until released or the session ends. */
void coord_queue_close(struct coord_queue *q);

#endif
