/*
 * coord_int: what the files of src/coord share. Not a public header.
 *
 * Files: util.c (hash tables, names, random, backoff), registry.c (watch and
 * listener registries), zkops.c (issuing requests and the hand-off queue from
 * ZooKeeper's threads), session.c (states, handles, silence, free), watch.c
 * (reads, watches, watchers, sync), member.c, ring.c, lock.c, txn.c,
 * queue.c / queue_take.c / queue_home.c / queue_hold.c (queue_int.h), queue_find.c (what the
 * janitor and /metrics ask of a queue they do not consume), slots.c (a consumer's capacity,
 * assigned to by name: its slots and their offers), election.c (a
 * singleton duty's leader, on a lock), control.c (operators' requests to one
 * running process), acl.c (who may read and write what: the policy, tenants'
 * grants, the start-up fix-up), acl_pool.c (an operator's ssh-pool pools and the
 * tenants granted each), pool_free.c (droverd's half of giving a shared pool's
 * host back), conf.c (coord's configuration keys).
 *
 * Every ZooKeeper call goes through a struct coord__op: the loop thread fills
 * one, issues it with one of the coord__zk_* functions, and gets op->done(op)
 * back on the loop thread once ZooKeeper's completion thread has copied the
 * result into it and queued it (see zkops.c and docs/threading.md). The op
 * is freed right after done() returns. An issue never fails synchronously: an
 * immediate error is queued like any other result.
 *
 * Watches: every watch is set with the session's global watcher (watch=1).
 * Events reach the objects that registered the path with coord__watch_add.
 *
 * Session listeners hear LOST (the session expired: before the owner does),
 * SUSPECT (disconnected, or silent, long enough that the session may be gone)
 * and NEW_SESSION (a new session is connected: re-create ephemeral state).
 */
#ifndef DROVER_COORD_INT_H
#define DROVER_COORD_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <zookeeper/zookeeper.h>

#include "check.h"
#include "coord.h"

/* Path classes counted per session (coord_session_requests_by_path); the rest go in "". */
#define COORD__BY_PATH_MAX 48

struct event;
struct timer_closure;

#if !DRV_CHECKS
#define COORD__CHECK(fn, obj) ((void)sizeof((fn(obj), 0)))
#else
/* Checks-enabled builds (check.h) check an object's invariants at its transitions. */
#define COORD__CHECK(fn, obj) fn(obj)
#endif

/* An invariant of a check function: abort when broken (checks-enabled builds, check.h). */
#define COORD__ASSERT(cond)                                                                        \
    do {                                                                                           \
        if (!(cond))                                                                               \
            abort();                                                                               \
    } while (0)

#define COORD__CONTAINER_OF(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

/* ---- util.c: an intrusive chained hash table ----------------------------- */

struct coord__hnode {
    struct coord__hnode *next;
    uint64_t hash;
};

/* Empty when zeroed. Buckets double when the load passes 1: O(1) average per op. */
struct coord__htab {
    struct coord__hnode **b;
    size_t nb, n;
};

void coord__htab_add(struct coord__htab *t, struct coord__hnode *e, uint64_t hash);
void coord__htab_del(struct coord__htab *t, struct coord__hnode *e);
/* The first node with this hash, then the next ones (the caller compares keys). */
struct coord__hnode *coord__htab_find(const struct coord__htab *t, uint64_t hash);
struct coord__hnode *coord__htab_next(const struct coord__hnode *e);
/* Every node, in no order, into a new array (for walks that may delete). */
struct coord__hnode **coord__htab_all(const struct coord__htab *t, size_t *n);
void coord__htab_free(struct coord__htab *t);
uint64_t coord__hash_str(const char *s);
uint64_t coord__hash_ptr(const void *p);

/* ---- registry.c: watches and listeners, hashed ----------------------------- */

/*
 * LOST: the session expired. SUSPECT: the connection has been down for a third
 * of the session timeout, or no answer came for half of it, so the server may
 * expire the session before the client can hear of it: locks must be given up
 * now. NEW_SESSION: a new session is connected.
 */
enum coord__session_event { COORD__LOST = 1, COORD__SUSPECT, COORD__NEW_SESSION };

typedef void (*coord__watch_fn)(void *owner, int type, const char *path);

/* Event types a registration wants (bits 1 << ZOO_*_EVENT); COORD__WM_ANY for all. */
#define COORD__WM(type) (1u << (type))
#define COORD__WM_DATA                                                                             \
    (COORD__WM(ZOO_CREATED_EVENT) | COORD__WM(ZOO_DELETED_EVENT) | COORD__WM(ZOO_CHANGED_EVENT))
#define COORD__WM_CHILD (COORD__WM(ZOO_CHILD_EVENT) | COORD__WM(ZOO_DELETED_EVENT))
#define COORD__WM_ANY 0xffu

struct coord__watch {
    struct coord__hnode by_path, by_owner;
    char *path;
    void *owner;
    coord__watch_fn fn;
    unsigned mask;
    bool dead;
    struct coord__watch *grave; /* freed once no dispatch runs */
};

struct coord__listener {
    struct coord__hnode by_owner;
    struct coord__listener *prev, *next;
    void (*fn)(void *owner, enum coord__session_event ev);
    void *owner;
    bool dead;
    struct coord__listener *grave;
};

/*
 * Invariants (coord__registry_check):
 *   1. every live watch is in both tables, under the hash of its path and of
 *      its owner; n_watches counts them;
 *   2. every live listener is in the owner table and the list; n_listeners
 *      counts them;
 *   3. dead entries are in no table and no list, only in a grave, and graves
 *      are empty whenever no dispatch runs.
 */
struct coord__registry {
    struct coord__htab w_path, w_owner, l_owner;
    struct coord__listener *l_head, *l_tail;
    size_t n_watches, n_listeners;
    int dispatching;
    struct coord__watch *w_grave;
    struct coord__listener *l_grave;
};

void coord__registry_free(struct coord__registry *r);
void coord__registry_check(const struct coord__registry *r);
/* Adding (owner, fn, path) twice keeps one registration (the first one's mask). */
struct coord__watch *coord__reg_watch_add(struct coord__registry *r, const char *path,
                                          unsigned mask, void *owner, coord__watch_fn fn);
void coord__reg_watch_del(struct coord__registry *r, struct coord__watch *w);
void coord__reg_watch_remove(struct coord__registry *r, void *owner);
/* Call every registration of path that wants type; those added meanwhile are not called. */
void coord__reg_dispatch(struct coord__registry *r, int type, const char *path);
void coord__reg_listener_add(struct coord__registry *r, void *owner,
                             void (*fn)(void *owner, enum coord__session_event ev));
void coord__reg_listener_remove(struct coord__registry *r, void *owner);
void coord__reg_tell(struct coord__registry *r, enum coord__session_event ev);

/* ---- the session ---------------------------------------------------------- */

struct coord__op {
    struct coord__op *next; /* in the session's hand-off queue */
    struct coord_session *s;
    void (*done)(struct coord__op *op);
    void *owner;
    intptr_t tag;
    unsigned gen;      /* session generation at issue */
    unsigned need_gen; /* nonzero: send only while this generation lives (coord__op_bind) */
    bool counted;      /* a request counted in s->inflight */
    bool queued;       /* handed to the loop already (guarded by s->mu) */
    bool zombie;       /* refused at once: kept until its handle is closed */
    long issued_ms;    /* CLOCK_BOOTTIME moment it was handed to the client library */
    /* results, copied from ZooKeeper's buffers */
    int rc;
    bool has_stat;
    bool fault_point;  /* a read the test hook may fail (zkops.c fault_read_lost) */
    bool fault_answer; /* a write whose answer the test hook may lose (zkops.c answer_lost) */
    bool fault_hold;   /* a read whose answer the test hook may hold (zkops.c answer_held) */
    bool fault_held;   /* ... and did (guarded by s->mu) */
    bool in_lib;       /* in s->lib_ops: handed to the library, no answer yet (guarded by mu) */
    struct coord__op *lib_prev, *lib_next;
    struct Stat stat;
    char *value; /* get: data (NUL-terminated); create: the created path */
    int value_len;
    char **strv; /* children */
    int strc;
    /* multi: the ops, their results and the buffers for created paths */
    int nops;
    zoo_op_t *ops;
    zoo_op_result_t *results;
    char **bufs;
    char **strs; /* strings the ops point at, owned */
    int nstrs;
    size_t bytes; /* encoded size of the multi's ops so far */
    /* a watch event or a session event (done == NULL for these) */
    int ev_type;
    int ev_state;
    char *path; /* a copy of the path the op or event is about */
};

struct coord_session {
    struct event_base *base;
    char *hosts;
    char *digest; /* "user:password" or NULL */
    int timeout_ms;
    size_t max_req;
    coord_state_cb on_state;
    void *arg;

    zhandle_t *zh;
    unsigned gen;           /* bumped for every handle started (items of older ones are stale) */
    unsigned renewals;      /* new sessions after an expiry: coord_session_generation() */
    enum coord_state state; /* as last reported, loop thread only */
    bool ever_connected;
    bool closing;

    /* Hand-off from ZooKeeper's threads: guarded by mu. */
    pthread_mutex_t mu;
    pthread_cond_t cond;
    struct coord__op *q_head, *q_tail;
    int zk_state; /* latest state seen by the watcher, for wait_connected */
    int efd;      /* eventfd: written when the queue turns non-empty */
    struct event *ev;

    /* Loop thread only. */
    struct coord__registry reg;
    uint64_t nonce;             /* random, per session object: in every name prefix */
    uint64_t rng;               /* xorshift state, seeded from the nonce */
    uint64_t uniq;              /* counter for unique name prefixes */
    long inflight;              /* requests issued and not yet done */
    uint64_t sent[COORD_REQ_N]; /* requests issued, by kind (coord_session_requests) */
    struct coord__by_path {
        char cls[COORD_PATH_CLASS_MAX]; /* coord_path_class of the path ("" for the rest) */
        enum coord_req kind;
        uint64_t n;
    } by_path[COORD__BY_PATH_MAX]; /* requests issued, by kind and path class */
    size_t n_by_path;
    struct event *suspect_timer;   /* runs while SUSPENDED */
    struct timer_closure *timers;  /* pending coord__timer closures */
    struct coord__commit **gather; /* guarded commits of this turn, sent together (txn.c) */
    size_t n_gather, cap_gather;
    struct coord__op *zombies; /* see issued() in zkops.c */
    /* Requests the client library took (issued() with ZOK) and has not answered yet, guarded
       by mu: what a closed handle did not answer is answered here (coord__ops_abandon). */
    struct coord__op *lib_ops;
    bool suspected;     /* SUSPECT was told during this suspension or silence */
    bool silent;        /* SUSPENDED because no answer came, not by the client */
    bool draining;      /* coord_session_free waits on cond for results (guarded by mu) */
    long last_ok_ms;    /* issue time (boot clock) of the latest request answered */
    bool probing;       /* a liveness probe is in flight */
    int stakes;         /* locks held and queues holding claims: what suspicion protects (probes) */
    struct event *tick; /* silence detector, every timeout/10 */
    struct event *restart_timer; /* a new handle could not start: retry */
    unsigned restart_tries;
    int cb_depth;      /* > 0 while coord runs callbacks: a free is deferred */
    bool free_pending; /* coord_session_free was called inside a callback */
    const struct ACL_vector *acl;
    struct ACL_vector acl_own; /* acl.c: creator-all + the readers' read, with credentials */
    /* Test hook (DROVER_FAULT=zk-read-lost:SUBSTRING, docs/testing.md): every other read
       (get, children, exists) whose path holds SUBSTRING fails with a connection loss, as if
       the connection had dropped while it was in flight. */
    char *fault_read;
    unsigned fault_reads;
    /* Test hook (DROVER_FAULT=zk-answer-lost:KIND:SUBSTRING[:N], docs/testing.md): the
       first request of KIND (create, set, delete, multi, or any of them) whose path (a
       multi: any of its ops' paths) holds SUBSTRING and that the server applied, and every
       N-th such after it (N 2 when not given), has its answer replaced by a connection loss
       before the caller sees it: the server's state is as the request made it, the caller
       hears ZCONNECTIONLOSS, as when the connection drops between apply and reply. */
    char *fault_answer;    /* SUBSTRING, or NULL */
    int fault_answer_kind; /* enum coord_req, or COORD_REQ_N for any write */
    unsigned fault_answer_every;
    unsigned fault_answers; /* applied matching answers seen (guarded by mu) */
    /* Test hook (DROVER_FAULT=zk-answer-held:SUBSTRING[:N], docs/testing.md): the first read
       (get, children, exists) whose path holds SUBSTRING, and every N-th such after it (N 2
       when not given), has its answer held back, as the client library holds a request it
       had not answered when its handle is closed under it (it never answers it): the caller
       hears nothing until coord closes the handle (a session expiry, coord_session_free). */
    /* DROVER_FAULT=zk-answer-closed:SUBSTRING[:N]: the same, and the held answer is given
       as the library gives a request still pending at its handle's close, ZCLOSING, also at
       an expiry's close (where coord's own answer would be ZSESSIONEXPIRED). */
    char *fault_hold;
    bool fault_hold_closing;
    unsigned fault_hold_every;
    unsigned fault_holds; /* matching answers seen (guarded by mu) */
    /* Test hook (DROVER_FAULT=zk-watch-lost:PATH[:N], docs/testing.md): the first watch event
       of exactly PATH, and every N-th such after it (N 1 when not given: all of them), is
       dropped before any watch hears it, as a watch the server or a reconnection lost. */
    char *fault_watch;
    unsigned fault_watch_every;
    unsigned fault_watches; /* matching events seen (loop thread) */
    /* acl.c: tenants' grants (coord_acl_grant), guarded by acl_mu. */
    pthread_mutex_t acl_mu;
    char *acl_tenant; /* a worker's own tenant, or NULL */
    char *acl_self;   /* this session's digest id, when it grants with it (acl_owner given) */
    int (*acl_tenant_id)(const char *tenant, char *id, size_t n, void *arg);
    void *acl_tenant_arg;
    long quota_znodes, quota_bytes; /* coord_session_opts.tenant_quota_*: droverd's */
    bool chrooted;
    struct coord__acl_grant *acl_grants; /* built ACLs, (tenant, perms), kept until free */
    struct coord__acl_bind *acl_binds;   /* job path -> tenant (coord_acl_bind) */
};

/* ---- zkops.c ----------------------------------------------------------------- */

struct coord__op *coord__op_new(struct coord_session *s, void (*done)(struct coord__op *),
                                void *owner);
void coord__op_free(struct coord__op *op);
/* Send op only on handle generation gen (else it fails at once with ZSESSIONEXPIRED). */
void coord__op_bind(struct coord__op *op, unsigned gen);

/* Internal create flag (with COORD_EPHEMERAL, COORD_SEQUENTIAL): a container znode. */
#define COORD__CONTAINER 4

/* A local rc (never ZooKeeper's): the request is over the size budget, not sent. */
#define COORD__ZTOOBIG (-1000)

/* acl.c: s->acl from the readers (a comma-separated list of digest ids); free it. */
#define COORD_ACL_MAX_READERS 2 /* each counts in every create's size budget (zkops.c) */
#define COORD_ACL_MAX_ID 64     /* "user:" + 28 base64 characters */
/* A tenant's worker id: "worker." + a tenant name of up to 63 + ":" + 28 base64. */
#define COORD_ACL_MAX_GRANT_ID 100
/* s->acl (and the grants' settings) from o; free it with coord__acl_free. */
int coord__acl_build(struct coord_session *s, const struct coord_session_opts *o,
                     struct drv_err *err);
void coord__acl_free(struct coord_session *s);
/* The ACL of a znode s creates at path: s->acl, or it with the path's tenant grant. The
   vector lives as long as s. Any thread. */
const struct ACL_vector *coord__acl_for(struct coord_session *s, const char *path);
/* The exact worker digest id of tenant into id (n bytes), when s can derive it
   (acl_tenant_id: droverd with the fleet key and credentials); false otherwise. Any thread. */
bool coord__acl_worker_id(struct coord_session *s, const char *tenant, char *id, size_t n);
/* True when s can derive tenants' worker ids (coord__acl_worker_id). */
bool coord__acl_can_derive(const struct coord_session *s);
/* True when an ACL (as coord__zk_get_acl gives it: op->strv of "perms scheme id") grants
   WRITE to digest id. */
bool coord__acl_strv_writer(char **strv, int strc, const char *id);

/* acl_pool.c: the operator's pools (acl_pool_grants). Names of up to COORD__POOL_NAME. */
#define COORD__POOL_NAME 128
#define COORD__POOL_MAX 64 /* pools, and tenants of one pool, taken from the list */
/* The tenants granted pool, into out (at most max, each once): their count. */
int coord__pool_grantees(const char *grants, const char *pool, char (*out)[COORD__POOL_NAME + 1],
                         int max);
/* The pools of grants, each once, into out (at most max): their count. */
int coord__pool_names(const char *grants, char (*out)[COORD__POOL_NAME + 1], int max);

/* pool_free.c: the host a release marker names ("<address>:<port>-<10 digits>", the
   sequential marker the ssh-pool plugin makes) into host (n bytes): 0, or DRV_EINVAL for
   any other name (a '/' or a character outside [A-Za-z0-9_.:-] included). Pure. */
int coord__pool_marker_host(const char *marker, char *host, size_t n);
/* pool_free.c: does a claim's data (JSON text, NULL or malformed: no) say "state":
   "released"? Its "tenant" and "state" into tenant and state ("" when absent). Pure. */
bool coord__pool_claim_released(const char *data, char *tenant, size_t tn, char *state, size_t sn);

/* Encoded sizes (jute) of ops, for the budget; ACLs counted at their largest. */
size_t coord__size_create(const char *path, const char *data);
size_t coord__size_create_len(size_t path_len, size_t data_len); /* the same, by lengths */
size_t coord__size_path_op(const char *path);                    /* delete, check */
size_t coord__size_set(const char *path, const char *data);
#define COORD__MULTI_FRAME 30 /* length, header, closing multi header, slack */

/* coord_ensure_path, with flags for the last component (e.g. COORD__CONTAINER). */
void coord__ensure_path(struct coord_session *s, const char *path, int last_flags,
                        coord_done_cb done, void *arg);

/* Issue op; the path (and data) are copied. */
void coord__zk_create(struct coord__op *op, const char *path, const char *data, int flags);
void coord__zk_delete(struct coord__op *op, const char *path, int version);
void coord__zk_exists(struct coord__op *op, const char *path, bool watch);
void coord__zk_get(struct coord__op *op, const char *path, bool watch);
void coord__zk_set(struct coord__op *op, const char *path, const char *data, int version);
void coord__zk_children(struct coord__op *op, const char *path, bool watch);
void coord__zk_sync(struct coord__op *op, const char *path);
/* ACL: read (op->strv: "<perms> <scheme> <id>" each), set at version (-1: any). */
void coord__zk_get_acl(struct coord__op *op, const char *path);
void coord__zk_set_acl(struct coord__op *op, const char *path, int version, struct ACL_vector *acl);

/* Multi: reserve n ops, fill them with coord__mop_*, then coord__zk_multi. */
void coord__multi_init(struct coord__op *op, int n);
void coord__mop_create(struct coord__op *op, int i, const char *path, const char *data, int flags);
void coord__mop_delete(struct coord__op *op, int i, const char *path, int version);
void coord__mop_set(struct coord__op *op, int i, const char *path, const char *data, int version);
void coord__mop_check(struct coord__op *op, int i, const char *path, int version);
/* Sent only when within the session's budget, else it fails with COORD__ZTOOBIG. */
void coord__zk_multi(struct coord__op *op);
/* Count one request issued by kind and path class (session.c). Loop thread. */
void coord__count_path(struct coord_session *s, enum coord_req kind, const char *path);
/* The index of the first failing op of a failed multi, or -1. */
int coord__multi_failed(const struct coord__op *op);

/* The hand-off queue: run what ZooKeeper's threads queued (eventfd callback). */
void coord__drain(struct coord_session *s);
/*
 * Answer, with rc, every request the client library took and did not answer (s->lib_ops),
 * once its handle is closed: zookeeper_close does not run the completions still queued in
 * the library (the multi-threaded client's completion thread stops first), so without this
 * their owners would wait for ever (a watcher's read, a member's create). Call after
 * zookeeper_close returned (no library thread left); the answers reach the loop like any.
 */
void coord__ops_abandon(struct coord_session *s, int rc);
/* Called by on_efd for each completion: liveness bookkeeping (session.c). */
void coord__answered(struct coord_session *s, const struct coord__op *op);
/* The global watcher, and the session event handler (session.c). */
void coord__watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx);
void coord__session_event(struct coord_session *s, int state);
/* After a callback run by coord returns: a deferred free happens here (session.c). */
void coord__callbacks_done(struct coord_session *s);

/* Run fn(owner) once after ms on the loop; returns the event to cancel with coord__timer_cancel. */
struct event *coord__timer(struct coord_session *s, int ms, void (*fn)(void *owner), void *owner);
void coord__timer_cancel(struct event *ev);
/* At close: run every pending timer now, so that what waits on one unwinds. */
void coord__fire_all_timers(struct coord_session *s);

/*
 * Delete path, retrying after connection losses (with backoff) until the
 * server answers. gen nonzero: only while that handle generation lives (an
 * ephemeral of an expired session is gone anyway; never delete what a later
 * session may own). done (may be NULL): 0 when deleted, already gone or the
 * generation ended; DRV_EAGAIN when the session closes first.
 */
void coord__delete_sure(struct coord_session *s, const char *path, int version);
void coord__delete_done(struct coord_session *s, const char *path, int version, unsigned gen,
                        coord_done_cb done, void *arg);

/* ---- util.c ------------------------------------------------------------------- */

/*
 * A name prefix unique to this session object, process and call:
 * "<session id hex>-<random hex>-<counter hex>-". The random part is drawn
 * once per session object, so two processes (or two sessions) that ask
 * before their first connection (session id 0) still differ.
 */
void coord__unique_prefix(struct coord_session *s, char *buf, size_t n);
uint64_t coord__rand(struct coord_session *s);
uint64_t coord__random_seed(void);
/*
 * Retry delay after `tries` failures: 100 ms doubling up to 5 s, with jitter
 * (a uniform draw in [d/2, d]), so that processes that failed together do not
 * retry together.
 */
int coord__backoff_ms(struct coord_session *s, unsigned tries);

/* Map a ZooKeeper rc to a DRV_E* code. */
int coord__zrc(int zrc);
/* Is rc a loss of connection after which the outcome is unknown? */
bool coord__zrc_unknown(int zrc);
/* Is rc the end of the session (expired, refused on an old handle, closing)? */
bool coord__zrc_session_gone(int zrc);

/* Parse the 10-digit sequence suffix of a sequential znode name; -1 when none. */
int64_t coord__seq_of(const char *name);
const char *coord__basename(const char *path);
/* The parent of path ("/" for a top-level znode), newly allocated. */
char *coord__parent(const char *path);
void coord__stat_of(const struct Stat *z, struct coord_stat *c);

/* ---- lock.c, for txn.c: the fence of a commit ---------------------------------- */

/* Is l held in attempt *attempt? Its node then. */
bool coord__lock_fence(struct coord_lock *l, unsigned *attempt, const char **node);
/* The fence check failed on the server in that attempt: l reports LOST. */
void coord__lock_fence_lost(struct coord_lock *l, unsigned attempt);
void coord__lock_ref(struct coord_lock *l);
void coord__lock_unref(struct coord_lock *l);

/* ---- txn.c, for the queue: commits guarded by ops of the caller ------------------- */

struct coord__commit;

/*
 * A commit whose multi-op starts with up to 3 guard ops (check or delete,
 * version -1) before t's ops, sent only on handle generation gen (0: any).
 * A failing guard op calls guard_failed(owner, index, zrc): true drops that
 * guard op and sends the commit again (a key record already gone), false
 * ends it with rc DRV_ECONFLICT, failed_op -1. When the answer is lost:
 * sequential creates are searched; else resolve (if set) decides, by calling
 * coord__commit_resend or coord__commit_finish; else DRV_EAGAIN.
 */
#define COORD__GUARD_CHECK 1
#define COORD__GUARD_DELETE 2
struct coord__guard {
    int n;
    int type[3];
    char *path[3];
    unsigned gen;
    bool (*guard_failed)(void *owner, int index, int zrc);
    void (*resolve)(struct coord__commit *c, void *owner);
    void *owner;
    bool lost; /* start as if sent and its answer lost (an earlier multi-op held it) */
};
void coord__commit_guarded(struct coord_session *s, struct coord_txn *t,
                           const struct coord__guard *g, coord_txn_cb cb, void *arg);
void coord__commit_resend(struct coord__commit *c);
void coord__commit_finish(struct coord__commit *c, int rc, int failed_op);
const struct coord_txn *coord__commit_txn(const struct coord__commit *c);
/* Encoded bytes of a multi of t plus n guard ops of these paths. */
size_t coord__txn_bytes_with(const struct coord_txn *t, int n, char *const *paths);
/* A keyed queue put as one txn op (two multi ops: key record, then item). */
void coord__txn_qput(struct coord_txn *t, const char *item, const char *key_path,
                     const char *key_json, const char *json);

#endif
