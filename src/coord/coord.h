/*
 * coord: Drover's ZooKeeper coordination layer, the one public header.
 *
 * What it gives droverd and drover-worker:
 *   - a session (struct coord_session) driven by a libevent event_base,
 *   - reads with the Stat, one-shot watches and re-arming watchers, sync,
 *   - membership of a group (ephemeral znodes with JSON data) and group watches,
 *   - a consistent hash ring of members (pure code, no I/O),
 *   - locks with fencing tokens and lock-lost notification, leader election,
 *   - fenced multi-op writes (applied only while a lock is still held),
 *   - locking queues for tasks (exactly-once and keyed puts, take, complete only by the
 *     holder, claim loss, transactions on a claim, find, holder, cancel, cheap stats).
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
 * Ownership: objects returned by the _new, _join, _watch* and _open functions
 * belong to the caller, who frees them with the matching _free, _leave or _close, before freeing
 * the session. A one-shot watch (coord_get_w, coord_children_w, coord_exists_w) belongs to coord:
 * it is freed once it fires or is cancelled. Strings passed in are copied. Strings and arrays
 * passed to callbacks live until the callback returns, unless the callback says otherwise.
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

#include "config.h"
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
 * SUSPENDED: the connection is lost, or silent (no answer for half the
 * timeout), but the session may still live; locks are kept, but a holder
 * should not start new work until CONNECTED again. Every held lock reports
 * COORD_LOCK_LOST (and every held queue claim on_lost; the znodes are deleted
 * once the same session is connected again) at the earlier of: a third of the
 * session timeout after the connection was lost, half of it after the issue
 * time of the last request the server answered. By then the server may soon
 * expire the session without the client knowing, and give the lock to another
 * process (it cannot before the whole timeout has passed since it last heard
 * from the client: tests coord_lock-partition, coord_lock-silent-partition).
 * EXPIRED: everything ephemeral of the old session is gone. Before the owner
 * hears EXPIRED, every lock of the session has already reported
 * COORD_LOCK_LOST, every one-shot watch COORD_EV_SESSION and every held claim
 * on_lost. A new session follows (its start is retried with backoff if it
 * fails: coord_session-restart-retry); members re-join and watchers read again
 * by themselves once it is CONNECTED.
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
    const char *digest_password; /*   nodes are then created with creator-all + readers' read */
    /* With credentials: digest ids ("user:base64(sha1(user:password))", coord_acl_digest_id)
       that may read every znode this session creates, comma-separated, at most 2 of up to 64
       characters (the
       operator's read-only identity). Never world read. NULL or "": the creator only. */
    const char *acl_readers;
    /*
     * Per-tenant worker identities (docs/zookeeper-tree.md, "ACLs"), with credentials only.
     * acl_owner: NULL (this session's own identity) or the digest id given all permissions on
     * every znode this session creates instead (a worker's: droverd's id, so that droverd
     * keeps everything). acl_tenant: NULL, or the one tenant this session works for (a
     * worker's): the tenant of the job paths it writes, granted with its own identity.
     * acl_tenant_id: NULL, or gives a tenant's worker digest id into id (n bytes), 0 or a
     * negative code (droverd's: derived from the fleet key). A znode of a tenant's queue,
     * resources or job context then also grants that tenant's workers what they need of it
     * (coord_acl_grant); without either, no tenant grants.
     */
    const char *acl_owner;
    const char *acl_tenant;
    int (*acl_tenant_id)(const char *tenant, char *id, size_t n, void *arg);
    void *acl_tenant_arg;
    /*
     * droverd's, with acl_tenant_id: the operator's ssh-pool pools and the tenants each is
     * granted to, "POOL:TENANT+TENANT,POOL:TENANT" (coord_acl_pool_grants_check). The
     * fix-up makes pools/_operator/<POOL>/claims and released and grants those tenants'
     * workers read on the pool, read and create on claims, create on released, read and
     * write on their own claims, delete nowhere (droverd's pool janitor deletes released
     * claims: coord_pool_janitor_new); no other tenant reaches it. NULL or "": none.
     */
    const char *acl_pool_grants;
    /*
     * droverd's, with acl_tenant_id and no chroot: the ZooKeeper quota (hard limits, znodes
     * and data bytes; 0: none) on each tenant's subtrees queues/<t> and pools/<t>, set when
     * the tenant is let in (coord_acl_tenant_add). ZooKeeper enforces them only with
     * -Dzookeeper.enforceQuota=true (docs/operations.md); a create or set that would pass
     * one fails there, the tenant's own, nobody else's.
     */
    long tenant_quota_znodes, tenant_quota_bytes;
    int session_timeout_ms;  /* 0 means 10000; the server clamps it to its limits */
    coord_state_cb on_state; /* NULL or called on every state change */
    void *arg;
    /*
     * Size budget of one request, in encoded bytes (0 means
     * COORD_DEFAULT_MAX_REQUEST_BYTES). A request over it is never sent: a
     * transaction fails with DRV_ETOOBIG, a queue put is split into several
     * multi-ops under it. ZooKeeper drops the connection of a client whose
     * request exceeds the server's jute.maxbuffer (1 MB by default), so keep
     * it well below that.
     */
    size_t max_request_bytes;
};

#define COORD_DEFAULT_MAX_REQUEST_BYTES (512 * 1024)
#define COORD_MIN_MAX_REQUEST_BYTES (16 * 1024) /* smaller budgets are raised to this */

/*
 * A program's ZooKeeper settings: the zookeeper.* keys of its config file
 * (coord_config_keys, src/coord/conf.c) fill session.hosts, session.chroot
 * ("" for none: pass NULL to coord_session_new), session.session_timeout_ms
 * and digest_file. The program reads the credentials from digest_file into
 * session.digest_user and digest_password.
 */
struct coord_conf {
    struct coord_session_opts session;
    const char *digest_file; /* "" or a file holding "user:password" (mode 0600) */
};
extern const struct config_key coord_config_keys[];

/*
 * acl.c: the digest id ZooKeeper stores for credentials, "user:" +
 * base64(sha1("user:password")), into out (n bytes). 0, or DRV_EINVAL when
 * out is too small.
 */
int coord_acl_digest_id(const char *user, const char *password, char *out, size_t n);

/*
 * acl.c: give every znode at and under root (a path below o's chroot) the
 * ACL a session with o's credentials and readers creates (creator-all for
 * o's digest identity, the tenant's grant of coord_acl_grant with
 * o->acl_tenant_id, the readers' read, no world), so that a tree written
 * before (world-readable) is closed. A job's tenant is read from its
 * announcement, a worker member's from its data; ZKPATH_MEMBERS_WORKER lets
 * the workers of each tenant of tenants (NULL-terminated, or NULL) join, as
 * coord_acl_tenant_add does; the operator's pools of o->acl_pool_grants are made
 * (pools/_operator/<pool>/claims and released) and granted. Workers' own znodes (members, claims,
 * run records) are left as they are unless world-readable. Blocking, its own handle: start-up only.
 * Nothing to do without credentials. *changed: znodes whose ACL was changed. DRV_EZK (lib_code the
 * ZooKeeper rc) naming the path on failure, or DRV_EINVAL for bad readers.
 */
int coord_acl_fixup(const struct coord_session_opts *o, const char *root,
                    const char *const *tenants, int *changed, struct drv_err *err);

/*
 * acl.c: check an acl_pool_grants value: comma-separated POOL:TENANT[+TENANT...], pool
 * and tenant names [A-Za-z0-9_.-] of up to 100 characters, a tenant not starting with
 * '_'. 0, or DRV_EINVAL naming the bad entry.
 */
int coord_acl_pool_grants_check(const char *grants, struct drv_err *err);

/*
 * pool_free.c: droverd's pool janitor, which deletes the released claims of the operator's
 * shared pools (docs/security.md "Pools of existing hosts"). No tenant may delete a claim
 * there (ZooKeeper checks a delete against the parent, so that right would reach every
 * tenant's claims): the ssh-pool plugin sets its claim's "state" to "released" and, in the
 * same multi-op, creates pools/_operator/<pool>/released/<address>:<port>-<sequence>.
 * For each pool of grants (acl_pool_grants' form) the janitor watches that directory
 * (listing it at once: markers left while no droverd ran are handled at start) and, for
 * each marker, deletes the claim it names only when the claim's own data says "released"
 * (its owner's write: only it and droverd may set it), at the version it read, with the
 * marker, in one multi-op; a marker whose claim is not released (forged by another
 * tenant) is deleted and logged (event=pool-release-forged) and the claim left as it is;
 * a marker whose claim is gone is deleted, and so is one whose name is not
 * "<host>-<10 digits>" (event=pool-marker-bad). Idempotent: any number of droverd may run
 * it (NONODE or BADVERSION from a racing node end or retry a marker harmlessly). Never
 * blocks the loop. Returns the caller's object, or NULL when grants names no pool
 * (nothing to watch; _free takes NULL). Loop thread; free before the session: requests
 * still in flight then finish without effect.
 */
struct coord_pool_janitor;
struct coord_pool_janitor *coord_pool_janitor_new(struct coord_session *s, const char *grants);
void coord_pool_janitor_free(struct coord_pool_janitor *j);

/*
 * acl.c: what a tenant's workers may do at path (ZOO_PERM_* bits, 0: nothing), and
 * which tenant: the path names it (queues/<t>/..., resources/<t>, pools/<t>/...), or it is a job's
 * (jobs/<id>/ctx, nodes, runs: job_tenant, NULL when unknown) or a worker's member
 * (members/worker/<id>: member_tenant). tenant receives the name (n bytes). The one
 * policy that creates and coord_acl_fixup apply (docs/zookeeper-tree.md, "ACLs").
 */
int coord_acl_grant(const char *path, const char *job_tenant, const char *member_tenant,
                    char *tenant, size_t n);

/*
 * acl.c: the znodes under job_path (ZKPATH_JOBS "/<id>") this session creates from now
 * on belong to tenant (its workers are granted what coord_acl_grant says); unbind when the
 * job is no longer this session's (binds are counted: the last unbind forgets it). Any
 * thread. Nothing to do without acl_tenant_id.
 */
void coord_acl_bind(struct coord_session *s, const char *job_path, const char *tenant);
void coord_acl_unbind(struct coord_session *s, const char *job_path);

/* Check what the table cannot: a chroot is "" or an absolute path below /, pool grants
   well formed. 0 or DRV_EINVAL. */
int coord_conf_check(const struct coord_conf *c, struct drv_err *err);

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

/*
 * The session timeout in ms, as the server negotiated it (the requested one
 * before the first connection). The server expires a session only after it
 * has heard nothing from the client for this long.
 */
int coord_session_timeout_ms(const struct coord_session *s);

/* The session's size budget (max_request_bytes as applied): no request over it is sent. */
size_t coord_session_max_request(const struct coord_session *s);

/*
 * When the server last showed the session alive, on the boot clock
 * (clock_boot_ms, CLOCK_BOOTTIME: it goes on while the host is suspended, as
 * the server's own clock does, so a host that slept finds this moment far
 * behind and its session's expiry near or past): the issue time of the latest request it answered,
 * or the moment of the latest connection. The server heard from this client after it, so it cannot
 * expire the session before heard + timeout: a process that must stop before its session can expire
 * (the worker's plugin lease, docs/worker.md) counts from here. coord probes a quiet session every
 * tenth of the timeout, so on a healthy session this trails now by about that much.
 */
int64_t coord_session_heard_ms(const struct coord_session *s);

/* How many times this object had to start a new session after an expiry. */
unsigned coord_session_generation(const struct coord_session *s);

/* The kinds of request coord sends (a multi-op is one request, whatever its ops). */
enum coord_req {
    COORD_REQ_CREATE,
    COORD_REQ_DELETE,
    COORD_REQ_EXISTS,
    COORD_REQ_GET,
    COORD_REQ_SET,
    COORD_REQ_CHILDREN,
    COORD_REQ_SYNC,
    COORD_REQ_MULTI,
    COORD_REQ_N
};

/*
 * Requests of one kind this session object handed to the ZooKeeper client
 * since it was made, over every handle (refused ones not counted): what the
 * process costs the ensemble, for benchmarks and logs. Not counted: the
 * client's own pings, authentication and watch re-registration. Loop thread.
 */
uint64_t coord_session_requests(const struct coord_session *s, enum coord_req kind);
/* "create", "delete", "exists", "get", "set", "children", "sync", "multi"; "?" otherwise. Pure. */
const char *coord_req_name(enum coord_req kind);

/*
 * A path's class, for counting requests by what they are about: the path with
 * each component past the second that names an instance (it has a digit, a
 * '.', a '-', or is over 12 characters) written as "{}":
 * "/drover/jobs/j-12/runs/f3.1.w.9" -> "/drover/jobs/{}/runs/{}". At most
 * COORD_PATH_CLASS_MAX - 1 characters (cut there). NULL or "" gives "-". Pure.
 */
#define COORD_PATH_CLASS_MAX 64
void coord_path_class(const char *path, char out[COORD_PATH_CLASS_MAX]);

/*
 * The i-th (from 0) counter of requests by kind and path class (a multi-op's
 * class is its first op's path's) this session object issued, as
 * coord_session_requests counts them: returns false past the last. The first
 * 47 classes seen get their own counter, the rest share one whose class is
 * "" (other). *cls points into the session: valid until the next request.
 * For benchmarks: droverd's /metrics (drover_zk_requests_total). Loop thread.
 */
bool coord_session_requests_by_path(const struct coord_session *s, size_t i, enum coord_req *kind,
                                    const char **cls, uint64_t *n);

/*
 * Close the session: pending requests are sent first (so a member's leave or a
 * lock's release reaches the server), then the session is closed, so every
 * ephemeral znode disappears at once, not after the timeout. Blocks the loop
 * thread while requests are still in flight, for at most 2 s. Free every
 * object made on s before.
 *
 * May be called from inside one of s's own callbacks (any callback of an
 * object made on s, or on_state): the session is then closed and freed when
 * that callback returns; make no other call on s after this one. Callbacks
 * of requests still in flight run with DRV_EAGAIN before it is freed.
 */
void coord_session_free(struct coord_session *s);

/* Generic completion: rc is 0 or a negative DRV_E* code. */
typedef void (*coord_done_cb)(int rc, void *arg);

/*
 * Create path and its missing ancestors as persistent znodes holding "{}"
 * (one pipelined round trip). done may be NULL.
 */
void coord_ensure_path(struct coord_session *s, const char *path, coord_done_cb done, void *arg);

/*
 * acl.c: make a tenant's workers at home (droverd, when a tenant is created): its queue
 * directory ZKPATH_QUEUES "/<tenant>" exists with its grant, and ZKPATH_MEMBERS_WORKER
 * lets its workers' identity create their member znode (read and create, no delete, so
 * no tenant removes another's). done(rc) on the loop thread. Loop thread. Immediately
 * done(0) without acl_tenant_id.
 */
void coord_acl_tenant_add(struct coord_session *s, const char *tenant, coord_done_cb done,
                          void *arg);

/* Read a znode: cb gets rc, its data (NUL-terminated, valid during the call) and version. */
typedef void (*coord_get_cb)(int rc, const char *data, int version, void *arg);
void coord_get(struct coord_session *s, const char *path, coord_get_cb cb, void *arg);

/* List a znode's children: names valid during the call, unsorted. */
typedef void (*coord_children_cb)(int rc, char *const *names, size_t n, void *arg);
void coord_children(struct coord_session *s, const char *path, coord_children_cb cb, void *arg);

/* ------------------------------------------------------------------------ */
/* Reads with the Stat, watches                                             */
/* ------------------------------------------------------------------------ */

/* A znode's Stat, as ZooKeeper keeps it. */
struct coord_stat {
    int64_t czxid, mzxid, pzxid;
    int64_t ctime_ms, mtime_ms;
    int32_t version, cversion;
    int64_t ephemeral_owner; /* 0 for a persistent znode */
    int32_t data_length, num_children;
};

enum coord_event {
    COORD_EV_CREATED = 1,
    COORD_EV_DELETED,
    COORD_EV_CHANGED,
    COORD_EV_CHILD,
    COORD_EV_SESSION /* the watch died with the session (expiry) or could not be set: read again */
};

/* Strings and the Stat passed to these live during the call. */
typedef void (*coord_event_cb)(enum coord_event ev, const char *path, void *arg);
typedef void (*coord_data_cb)(int rc, const char *data, size_t len, const struct coord_stat *st,
                              void *arg);
typedef void (*coord_list_cb)(int rc, char *const *names, size_t n, const struct coord_stat *st,
                              void *arg);
typedef void (*coord_stat_cb)(int rc, const struct coord_stat *st, void *arg);

/*
 * One-shot reads with the Stat (NULL when rc != 0), optionally leaving a
 * one-shot watch, ZooKeeper's: on_event hears the first change after the read
 * (get and exists: CREATED, DELETED or CHANGED of the znode; children: CHILD
 * or DELETED), on the loop thread like every callback.
 *
 * With on_event NULL the read is a plain read and NULL is returned. Otherwise
 * the returned watch belongs to coord: on_event runs at most once, after the
 * read callback, and the watch is freed when it returns; or
 * coord_watch_cancel() comes first and on_event never runs. The read callback
 * always runs exactly once.
 *
 * rc DRV_ENOENT: the znode does not exist; the watch then fires
 * COORD_EV_CREATED when it is created (for get and children too: coord sets
 * an exists watch in their place). Another error: no watch could be set, and
 * on_event hears COORD_EV_SESSION right after the read callback. When the
 * session expires, every watch of it hears COORD_EV_SESSION (before the owner
 * hears COORD_EXPIRED). Watches survive a connection loss (the client sets
 * them again on the server).
 *
 * Cost: one read (two when absent for get/children); the registry that routes
 * events to watches is hashed by path, so an event costs O(1) however many
 * watches the session holds.
 */
struct coord_watch;
struct coord_watch *coord_get_w(struct coord_session *s, const char *path, coord_data_cb cb,
                                coord_event_cb on_event, void *arg);
struct coord_watch *coord_children_w(struct coord_session *s, const char *path, coord_list_cb cb,
                                     coord_event_cb on_event, void *arg);
struct coord_watch *coord_exists_w(struct coord_session *s, const char *path, coord_stat_cb cb,
                                   coord_event_cb on_event, void *arg);
/* on_event will not run. Safe from inside any callback; w must not have fired yet. */
void coord_watch_cancel(struct coord_watch *w);

/*
 * Re-arming watchers: cb hears the first read, then a new read after every
 * change (changes during a read in flight are coalesced into one more read),
 * and again after a new session. rc is 0 or DRV_ENOENT while the znode does
 * not exist (the watcher then waits for its creation); a read that fails for
 * another reason is retried with backoff (a permission error is told, then
 * retried). No callback after coord_watcher_free().
 */
struct coord_watcher;
struct coord_watcher *coord_watch_data(struct coord_session *s, const char *path, coord_data_cb cb,
                                       void *arg);
/* The same for a znode that is usually absent (a job's control znode): the first look is
 * an exists-watch, one request where coord_watch_data's get and exists are two; cb hears
 * DRV_ENOENT from it, or the data read once it exists. */
struct coord_watcher *coord_watch_data_absent(struct coord_session *s, const char *path,
                                              coord_data_cb cb, void *arg);
struct coord_watcher *coord_watch_children(struct coord_session *s, const char *path,
                                           coord_list_cb cb, void *arg);
void coord_watcher_free(struct coord_watcher *w);

/*
 * ZooKeeper's sync: done hears when the server this session talks to has
 * caught up with the leader up to this call, so a read issued after done sees
 * every write committed before the call (use it before a recovery listing).
 */
void coord_sync(struct coord_session *s, const char *path, coord_done_cb done, void *arg);

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

/*
 * Whether a member's data is its creator's word (coord_group_watch_checked). ZooKeeper
 * lets whoever may create in a group pick a new member's data and ACL, and keeps no
 * creator; but it shows a digest id in full only to a reader with ADMIN on the znode
 * (others see "user:x"), and only a tenant's workers and droverd know the tenant's
 * worker id (a hash of its password). So a member whose ACL, read by droverd (ALL on
 * every member a worker makes: its acl_owner), grants WRITE to the exact worker id of the
 * tenant its data names was made by that tenant's workers (or droverd).
 */
enum coord_member_proof {
    COORD_MEMBER_UNCHECKED = 0, /* no check: a plain watch, or no credentials (an open tree) */
    COORD_MEMBER_PROVEN,        /* its ACL holds the named tenant's exact worker id, WRITE */
    COORD_MEMBER_UNPROVEN,      /* anything else: forged, or made with droverd's credentials */
};

struct coord_member_info {
    const char *id;   /* the znode name */
    const char *json; /* its data ("" when unreadable) */
    enum coord_member_proof proof;
    int64_t czxid;   /* the znode's creation zxid (-1 unknown): a new incarnation differs */
    int64_t session; /* its ephemeralOwner: the member's session id (0 unknown) */
};

/* members sorted by id; valid only during the call. */
typedef void (*coord_group_cb)(const struct coord_member_info *members, size_t n, void *arg);

struct coord_group;

/*
 * Watch group: cb gets the whole member list once at first and after every
 * change (joins, leaves, data changes), and again after a new session. The
 * group path is created when missing. Cost: a join is one listing and one read of the
 * newcomer, a leave one listing, a member's data change one read of that member (each
 * member's data is read with a watch and kept until it fires); a new session reads all.
 */
struct coord_group *coord_group_watch(struct coord_session *s, const char *group, coord_group_cb cb,
                                      void *arg);
/*
 * The same, and each member's proof (enum coord_member_proof) against the tenant its data
 * names in field (e.g. "tenant"): its ACL is read (one request per member, again only when
 * the member's czxid or named tenant changed) when the session can derive tenants' worker
 * ids (coord_session_opts.acl_tenant_id: droverd with the fleet key and credentials);
 * otherwise every member is UNCHECKED. An ACL read that fails voids the refresh like a
 * failed data read.
 */
struct coord_group *coord_group_watch_checked(struct coord_session *s, const char *group,
                                              const char *field, coord_group_cb cb, void *arg);
/*
 * Read the group again whatever its watches said (a watch the server or a reconnection lost
 * tells nothing; docs/engine.md "Lost watches"): list it, and with reread read every
 * member's data too, not only the new ones'; the callback runs with the complete view as
 * after any refresh. One listing (plus one read per member with reread). A refresh in flight
 * is followed by this one.
 */
void coord_group_resync(struct coord_group *g, bool reread);
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

/*
 * Release, and tell when the contender znode is gone on the server, so that
 * the next contender may take the lock (a hand-over): done(0) once it is
 * deleted or known gone, also when the session had expired (an ephemeral
 * goes with its session) and when nothing was held; DRV_EAGAIN when it
 * cannot be known (the session is closing). done may be NULL. The lock's
 * own callback hears nothing more for this hold.
 */
void coord_lock_release_done(struct coord_lock *l, coord_done_cb done, void *arg);

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
 * The encoded size of t's ops in a multi-op, the figure checked against the
 * session's max_request_bytes (with the request's own framing and, when
 * fenced, the fence check on top). ACLs are counted at their largest, so it
 * is an upper bound of what is sent.
 */
size_t coord_txn_bytes(const struct coord_txn *t);
/*
 * What one op adds to coord_txn_bytes(), before it is built: a caller that fills a
 * transaction up to a budget (the engine's dispatch rounds) sums these, so that its
 * figure is coord's own (a create counts its ACL at its largest; a keyed queue put,
 * coord_txn_queue_put_bytes, two creates: the item and its key record). Pure.
 */
size_t coord_txn_create_bytes(const char *path, const char *json);
size_t coord_txn_set_bytes(const char *path, const char *json);
size_t coord_txn_delete_bytes(const char *path);
/* The multi-op's own framing and a fence's check, on top of the ops (an upper bound). */
#define COORD_TXN_OVERHEAD 160

/*
 * Result of a commit. rc 0: every op applied. DRV_ECONFLICT: nothing applied
 * because the fence (lock) is gone (failed_op == -1; the lock has reported
 * COORD_LOCK_LOST: stop acting) or a check/version failed (failed_op is the
 * index of the first failing op, in the order added; zrc says why, e.g.
 * ZNODEEXISTS for a keyed queue put whose key is in the queue already).
 * DRV_ETOOBIG: over the size budget, nothing sent. Other codes: nothing
 * applied, or the outcome is unknown (DRV_EAGAIN after a connection loss).
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
 * gets a suffix unique to this commit, this session object and this process
 * ("<path><session>-<random>-<n>-" then ZooKeeper's 10-digit sequence), and
 * when the answer is lost the parents are searched for it (after a sync)
 * before the multi-op is sent again. A commit without sequential creates
 * (keyed queue puts, sets, checks, deletes, non-sequential creates) is never
 * sent again by coord: it reports DRV_EAGAIN when its answer is lost, and the
 * caller reads its znodes again to learn whether it applied (a versioned set
 * of its own record in the same commit tells).
 */
void coord_txn_commit(struct coord_session *s, struct coord_txn *t, struct coord_lock *fence,
                      coord_txn_cb cb, void *arg);

/*
 * The same without a fence, sent together with the other such commits (and the queue's
 * commits on claims) of this turn of the loop in one multi-op, within the size budget, on
 * the current handle generation: all applied, each hears its own success; an op failed,
 * nothing applied and each is sent again alone, hearing its own answer; no answer, each
 * hears DRV_EAGAIN (no sequential creates here: read to learn). A worker's outcomes of one
 * turn (slots) are one request.
 */
void coord_txn_commit_gathered(struct coord_session *s, struct coord_txn *t, coord_txn_cb cb,
                               void *arg);

/*
 * Create one sequential znode (COORD_EPHEMERAL may be added to flags), safely
 * across a connection loss as above. cb gets the created path (valid during
 * the call) or NULL with rc < 0.
 */
typedef void (*coord_create_cb)(int rc, const char *path, void *arg);
void coord_create_seq(struct coord_session *s, const char *path, const char *json, int flags,
                      coord_create_cb cb, void *arg);

/*
 * Put json at path, whatever is there: set it (any version) when the znode
 * exists, else create it (persistent; its parent must exist). A set that finds
 * no znode, or a create that finds one (another writer raced us), is tried
 * the other way, at most COORD_UPSERT_TRIES attempts in all. done (may be NULL)
 * gets exactly once 0, or the last attempt's error: DRV_ECONFLICT when every
 * attempt raced or the parent is missing, DRV_EAGAIN when an answer was lost
 * (read the znode to learn whether it applied), or a session error.
 */
#define COORD_UPSERT_TRIES 4
void coord_upsert(struct coord_session *s, const char *path, const char *json, coord_done_cb done,
                  void *arg);

/* ------------------------------------------------------------------------ */
/* Slots: a consumer's capacity, assigned to by name (issue 37)             */
/* ------------------------------------------------------------------------ */

/*
 * A consumer (a worker) of dir (a queue's directory) keeps n slots, ephemeral znodes of its
 * session, dir/slots/<consumer>.<session hex>.<i>, each free (data COORD_SLOT_FREE) or
 * holding one assignment a writer (droverd) put there (coord_slot_assignment). A free slot
 * is offered by an ephemeral dir/free/<slot>@<version>: a writer takes it by deleting the
 * offer and setting the slot at that version in one multi-op (so two writers racing for
 * one offer cannot both have it), and may set it again at the next versions (its next task,
 * or free) with no offer. docs/coord.md "Slots"; src/coord/slots.c has the state diagram.
 *
 * Guarantees (coord_slots-* tests): on_assigned hears each assignment once; an assignment
 * is the consumer's while its session lives, and on_lost is told (before the server can
 * expire the session: SUSPECT, as for locks and claims) when the session is suspected or
 * expired, or the slot is deleted, set free or set to another key under it, and the key
 * is never handed out again. The slots die with the session; after an expiry they are made
 * again under the new session's names. A consumer writes nothing per assignment: one
 * multi-op per session (the slots and their first offers), one create per offer after a
 * writer frees a slot, and, when no writer frees or reassigns a slot done with for
 * done_free_ms, one set that frees it (at the version read: a writer's set wins).
 */
#define COORD_SLOTS_MAX 256
#define COORD_SLOT_FREE "{\"v\":1}"

struct coord_slots;
/* Slot i's assignment key; json: the assignment's "task" (on_assigned), NULL (on_lost). */
typedef void (*coord_slot_cb)(struct coord_slots *sl, unsigned i, const char *key, const char *json,
                              void *arg);

struct coord_slots_opts {
    const char *consumer_id; /* no '/', '@' */
    unsigned n;              /* 1..COORD_SLOTS_MAX */
    coord_slot_cb on_assigned;
    coord_slot_cb on_lost; /* stop the assignment now (invariant 3) */
    void *arg;
    int done_free_ms; /* 0: 5000 */
};

struct coord_slots_counters {
    uint64_t assigned, lost, offers, freed_self;
};

struct coord_slots *coord_slots_open(struct coord_session *s, const char *dir,
                                     const struct coord_slots_opts *o);
/* Done with slot i's assignment key (its outcome is written): it waits for its writer. */
void coord_slots_done(struct coord_slots *sl, unsigned i, const char *key);
/* Offer free slots (on: the default) or withdraw every offer (off: a drain). */
void coord_slots_offer(struct coord_slots *sl, bool on);
/* Slot i's znode name under dir/slots (this session's), or NULL. */
const char *coord_slots_name(const struct coord_slots *sl, unsigned i);
struct coord_slots_counters coord_slots_counters(const struct coord_slots *sl);
/* No callback from now on; the slots go with the session (close it soon after). */
void coord_slots_close(struct coord_slots *sl);

/* For the writers (pure): an offer's name into its slot's name and version; a slot's name
   into its consumer, session and index; an assignment's data (a new string; task_json is
   the task as JSON text, put in whole). 0 or DRV_EINVAL. */
int coord_slot_offer_parse(const char *entry, char *slot, size_t n, int *version);
int coord_slot_parse(const char *name, char *consumer, size_t n, int64_t *session, unsigned *i);
char *coord_slot_assignment(const char *key, const char *by, const char *task_json);

/* ------------------------------------------------------------------------ */
/* Locking queues                                                           */
/* ------------------------------------------------------------------------ */

/*
 * Delivery guarantee. An item put (done(0), or a committed keyed put) is
 * delivered by coord_queue_take:
 *
 *   1. at least once: until a holder completes it, it is delivered again
 *      whenever its claim is gone (the holder released it, died, lost its
 *      session, was cut off past the threshold, or the claim was deleted).
 *      Tests: coord_queue, coord_queue-kill, coord_connloss, coord_restart,
 *      coord_queue-close-claims, coord_claim-lost.
 *   2. never to two live holders at the same time ("live": not yet told
 *      on_lost): a claim is one ephemeral znode per item, created in the same
 *      multi-op that checks the item, so while it exists nobody else can
 *      claim the item. A holder cut off from ZooKeeper is told on_lost before
 *      the server can expire its session, so before another consumer can
 *      claim: after a third of the timeout when the connection drops, half of
 *      it without an answer when the network goes silent; the server expires
 *      it only after the whole timeout. A claim removed by someone else (an
 *      operator deleting it, another client closing the session) is told as
 *      soon as this consumer learns of it: a watch on claims held for half a
 *      second, a failed complete, release or transaction, EXPIRED. A process
 *      paused for longer than the timeout hears it when it resumes. Tests:
 *      coord_queue-kill, coord_claim-lost, coord_lock-silent-partition (the
 *      same margin), coord_claim-late-release.
 *   3. completed (or released, or changed by coord_queue_txn_commit) only by
 *      the holder: these travel on the session that created the claim and
 *      only while this consumer holds it; a consumer whose session expired
 *      and came back cannot touch the item another consumer now holds
 *      (DRV_ECONFLICT, nothing changed). Tests: coord_claim-late-release,
 *      coord_claim-late-complete, coord_queue-txn.
 *
 * Puts are never applied twice: coord_queue_put recovers a lost answer by a
 * marker written in the same multi-op (coord_put-exactly-once,
 * coord_connloss); a keyed put fails while an item with its key is in the
 * queue (coord_queue-keyed).
 */

#define COORD_QUEUE_DEFAULT_SHARDS 16
#define COORD_QUEUE_MAX_BATCH 1000
#define COORD_QUEUE_MAX_PRIORITY 9
#define COORD_QUEUE_MAX_KEY 80

struct coord_queue;

/*
 * Claim loss: on_lost(q, item_id, lost_arg) runs once per held item whose
 * claim is gone or may be gone: the session was suspended past the lock
 * threshold (or silent past half the timeout), the session expired, or the
 * claim znode was deleted (noticed by a watch set on claims held for more
 * than half a second, or by a failed complete, release or transaction).
 * Stop working on the item. After on_lost, complete, release and
 * coord_queue_txn_commit on that item fail with DRV_ECONFLICT and change
 * nothing (until the item is delivered to this consumer again). A claim that
 * may still exist is deleted by coord as soon as the same session is
 * connected again, so that another consumer takes the item.
 */
typedef void (*coord_lost_cb)(struct coord_queue *q, const char *item_id, void *arg);

/*
 * A consumer's filter of keyed items: true means "not for me now": the item is
 * passed over (left for other consumers) as if it were claimed. key is the
 * caller's key of the put (coord_txn_queue_put). Called on the loop thread,
 * often: it must be cheap. When its answer may have changed, call
 * coord_queue_rescan.
 */
typedef bool (*coord_skip_cb)(const char *key, void *arg);

struct coord_queue_opts {
    unsigned shards;         /* 0 means COORD_QUEUE_DEFAULT_SHARDS; fixed for a queue's life */
    const char *consumer_id; /* written into claims; NULL means "pid-<pid>" */
    coord_lost_cb on_lost;   /* NULL or told of claims lost */
    void *lost_arg;
    coord_skip_cb skip; /* NULL or the filter above */
    void *skip_arg;
};

/*
 * Open the queue at path (e.g. "/drover/queues/<tenant>/<class>"), creating
 * its znodes when missing. done (may be NULL) hears the outcome of the first
 * attempt; calls made before it are queued behind it (and fail with
 * DRV_EAGAIN when it fails). A failed open is retried with backoff until it
 * works; calls made meanwhile wait for the next attempt.
 */
struct coord_queue *coord_queue_open(struct coord_session *s, const char *path,
                                     const struct coord_queue_opts *o, coord_done_cb done,
                                     void *arg);

/*
 * Is q open now: its first attempt or a retry after failures succeeded. done
 * above hears the first attempt only; a caller that must know when a queue
 * that failed to open has come good (the engine, before it dispatches) asks
 * this. Loop thread.
 */
bool coord_queue_is_open(const struct coord_queue *q);

struct coord_queue_put_item {
    const char *json; /* the item's data: a JSON value, small (a few KB) */
    int priority;     /* 0 (lowest) .. 9 (highest) */
};

/*
 * Put n items (1..COORD_QUEUE_MAX_BATCH). done may be NULL.
 *
 * The items go in as few multi-ops as the session's size budget allows (one,
 * unless they are large), sent one after the other: each multi-op is all or
 * none; done(0) means every item is in; an error means the multi-ops before
 * the failing one are in (their items are delivered) and none after. Never
 * applied twice: each multi-op also creates an ephemeral marker, and when
 * the answer is lost the marker says whether it applied (items already
 * completed by consumers are not put again). Only when the session expired
 * before that could be learnt, and none of the items is left in the queue,
 * the outcome is unknown: DRV_EAGAIN.
 *
 * Returns DRV_EINVAL (bad n, json or priority) or DRV_ETOOBIG (one item
 * alone over the budget) at once, with nothing done.
 */
int coord_queue_put(struct coord_queue *q, const struct coord_queue_put_item *items, size_t n,
                    coord_done_cb done, void *arg);

/*
 * A keyed put inside a transaction (fenced by a lock, so that "task T was
 * dispatched" and "T is on the queue" are written together, by the current
 * owner only). key: 1..COORD_QUEUE_MAX_KEY characters of [A-Za-z0-9._:-],
 * unique per queue for the life of the item (the engine uses
 * "<job>.<task index>.<attempt>"); its shard is a pure function of the key.
 * The op creates the item and a key record <q>/keys/<key> (deleted with the
 * item), so the commit fails (DRV_ECONFLICT, failed_op = this op, zrc
 * ZNODEEXISTS) while an item with this key is in the queue: the put is
 * idempotent. After the commit, r->created[i] of this op is the item's path
 * (coord_queue_item_id() gives its id). Like every commit without sequential
 * creates, a lost answer gives DRV_EAGAIN (see coord_txn_commit).
 *
 * Returns DRV_EAGAIN when q has not finished opening, DRV_EINVAL for a bad
 * key, priority or JSON.
 */
int coord_txn_queue_put(struct coord_txn *t, struct coord_queue *q, const char *key,
                        const char *json, int priority);
/* What coord_txn_queue_put(t, q, key, json, priority) adds to coord_txn_bytes(t). */
size_t coord_txn_queue_put_bytes(const struct coord_queue *q, const char *key, const char *json);

/* The item id ("sNN/<name>") of an item path of q, into buf; DRV_EINVAL otherwise. */
int coord_queue_item_id(const struct coord_queue *q, const char *path, char *buf, size_t n);
/* When the item was put (Unix ms, the putter's clock, from its name), or -1 when id is not an
   item's id. Pure. */
int64_t coord_queue_item_time(const char *item_id);
/* The key of a keyed item (the key of its put, which the skip filter hears), from its id; NULL
   for an item put without a key or not an item's id. Points into item_id. Pure. */
const char *coord_queue_item_key(const char *item_id);

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
 * The claim is ephemeral: if this session dies the item becomes available
 * again. The takes of one turn share one claim multi-op, and each item's data
 * is read in that multi-op's round trip: its read is sent right behind the
 * multi-op, before the answer, and discarded when the claim fails (an item
 * claimed by someone else is never delivered). Cost per item: one read
 * request (ZooKeeper 3.8's C client has no multi-read) and a share of the
 * multi-op (coord_queue-pipelined). While takes wait and the shards it lists
 * hold nothing for it, a consumer waits 5 ms after each empty listing but a
 * round's last before the next (a shard whose watch fired is listed first;
 * one that was empty and whose watch has not fired is not listed), lists
 * the claims only when a shard has a name it may take, and sends nothing
 * once a round is empty with no watch fired during it (coord_queue-paced).
 */
void coord_queue_take(struct coord_queue *q, int timeout_ms, coord_take_cb cb, void *arg);

/*
 * Look at the whole queue again for the waiting takes, as if it had changed:
 * for a consumer whose skip filter now lets more through. Cheap when nothing
 * waits; a no-op on a closed queue.
 */
void coord_queue_rescan(struct coord_queue *q);

/*
 * Who consumes q, as the caller knows it (ids[0..n): the consumer_id of every
 * consumer of this queue; this one's own may be among them). From the view,
 * every consumer computes the same home shards (queue_home.c): an idle consumer
 * is woken only by a change of its home shards, so a put wakes its shard's
 * homes (one when there are no more consumers than shards, about W / S when W
 * consumers share S shards), not every idle consumer. Call it again whenever the
 * view changes: a consumer given a new home lists it (what a consumer that left
 * held comes back with its session's claims). A consumer that came back under
 * the same id before its old session expired changes no id: its old claims die
 * unseen, and the caller calls coord_queue_rescan once that session must be over
 * (the worker: worker.c, reclaim_cb). Without a view every shard is a
 * home (every idle consumer wakes on every put). Loop thread; ids copied.
 */
void coord_queue_set_peers(struct coord_queue *q, const char *const *ids, size_t n);
/* Whether a change of shard wakes this consumer at once when idle (a home of its view). */
bool coord_queue_is_home(const struct coord_queue *q, unsigned shard);

/*
 * What this consumer's takes have cost so far, for benchmarks and logs
 * (bench/engine BENCH_DEBUG): listings of a shard, those that left nothing to
 * claim, shards passed over without a listing (empty, their watch not fired
 * since), listings of the claims, claim multi-ops and those that failed (another
 * consumer was first), items delivered, rounds that ended idle and wake-ups from
 * idle. Loop thread; q not NULL.
 */
struct coord_queue_counters {
    uint64_t listings, listings_empty, skipped, claims_listings, claims, claims_failed, delivered,
        idles, wakes;
    uint64_t passed; /* watch events while idle of shards (or claims) that are not its homes */
    uint64_t steals; /* looks of an idle fallback at a shard its homes should have taken */
};
void coord_queue_counters(const struct coord_queue *q, struct coord_queue_counters *out);

/*
 * Done with an item: delete claim and item (and its key record) in one
 * multi-op on the session that created the claim, only while this consumer
 * holds it; DRV_ECONFLICT otherwise (not held, told lost, or the claim is
 * gone: someone else may hold it now), nothing changed. Completes asked for
 * in one turn of the loop share one multi-op. done may be NULL.
 */
void coord_queue_complete(struct coord_queue *q, const char *item_id, coord_done_cb done,
                          void *arg);

/* Give the item back (delete the claim), only by its holder as above. done may be NULL. */
void coord_queue_release(struct coord_queue *q, const char *item_id, coord_done_cb done, void *arg);

/*
 * Commit t (taken over) only while this consumer holds item_id's claim,
 * checked in the same multi-op on the claim's session. r->rc DRV_ECONFLICT
 * with r->failed_op == -1: the claim is not ours (nothing applied; on_lost
 * follows if it was held). Otherwise as coord_txn_commit.
 */
void coord_queue_txn_commit(struct coord_queue *q, const char *item_id, struct coord_txn *t,
                            coord_txn_cb cb, void *arg);

/*
 * Complete item_id (claim, item and key record deleted) and apply t (taken
 * over; may be NULL) in ONE multi-op, only if the claim is ours: failed_op -1
 * = the claim is not ours; i = op i of t failed; nothing applied in either
 * case. When the answer is lost, coord resolves it once connected again: on
 * the same session (the usual case), after a sync, claim gone and item gone
 * mean it applied (only this session could delete them), claim still there
 * means it did not and it is sent again. If the session expired meanwhile:
 * item still there gives DRV_ECONFLICT (-1); item gone gives 0 when t is
 * NULL or empty, else DRV_EAGAIN (read your records: another consumer may
 * have completed it).
 */
void coord_queue_complete_txn(struct coord_queue *q, const char *item_id, struct coord_txn *t,
                              coord_txn_cb cb, void *arg);

/*
 * Where is the item put with key, and who holds it. rc 0: f->id is its id,
 * f->claim_json NULL when unclaimed, else the claim's JSON; f->ahead counts
 * the unclaimed items that come before it in its shard's order plus those of
 * a higher priority in the other shards (one listing per shard and one of the
 * claims: for diagnostics, not for a hot path). DRV_ENOENT: no such item.
 * Strings live during the call.
 */
struct coord_queue_found {
    const char *id;
    const char *claim_json;
    int64_t ahead;
};
typedef void (*coord_find_cb)(int rc, const struct coord_queue_found *f, void *arg);
void coord_queue_find(struct coord_queue *q, const char *key, coord_find_cb cb, void *arg);

/* Who holds item_id now: rc 0 and claim_json (NULL: unclaimed); DRV_ENOENT when the item is gone.
 */
typedef void (*coord_holder_cb)(int rc, const char *claim_json, void *arg);
void coord_queue_holder(struct coord_queue *q, const char *item_id, coord_holder_cb cb, void *arg);

/*
 * Delete an item nobody has claimed, atomically (one multi-op that creates
 * its claim, deletes the item and the claim: it fails if claimed). done: 0,
 * DRV_ECONFLICT when claimed, DRV_ENOENT when gone (completed or cancelled
 * before; after a lost answer also when this very call deleted it).
 */
void coord_queue_cancel(struct coord_queue *q, const char *item_id, coord_done_cb done, void *arg);

/*
 * The id of the item put with key (coord_txn_queue_put), from its key record: one
 * read, whatever the queue's length (coord_queue_find's diagnostics read every shard:
 * a find per item of a long queue is quadratic). rc 0 and item_id (lives during the
 * call); DRV_ENOENT when no item with this key is in the queue (the key record goes with
 * its item); DRV_EAGAIN when the queue is not open.
 */
typedef void (*coord_key_item_cb)(int rc, const char *item_id, void *arg);
void coord_queue_key_item(struct coord_queue *q, const char *key, coord_key_item_cb cb, void *arg);

struct coord_queue_stats {
    int64_t length;        /* items in the queue, claimed ones included */
    int64_t claimed;       /* items claimed by a consumer */
    int64_t oldest_age_ms; /* age of the oldest item (0 when empty) */
    /*
     * Counters since the queue was made, for rates: items put, claims taken
     * (a hand-back and a new claim count twice), items removed (completed or
     * cancelled). Derived from the shards' and claims' cversion (every child
     * create and delete bumps it: creates = (cversion + numChildren) / 2), so
     * they cost no write; they are the same on every reader, and restart at 0
     * when the queue is made again.
     */
    int64_t puts;
    int64_t takes;
    int64_t completes;
};
typedef void (*coord_stats_cb)(const struct coord_queue_stats *st, int rc, void *arg);

/*
 * Read the queue's figures: shards + 1 small stat reads (no listing) for
 * length and claims, and for the age one stat read per non-empty shard of its
 * cached oldest item (a shard is listed again only when that item is gone).
 */
void coord_queue_stats(struct coord_queue *q, coord_stats_cb cb, void *arg);

/*
 * Close: pending takes get DRV_EAGAIN; claims whose answers arrive later are
 * released; items delivered and still held stay claimed until the session
 * ends (complete or release them before closing). q must not be used after.
 */
void coord_queue_close(struct coord_queue *q);

/* ------------------------------------------------------------------------ */
/* Control requests to one process (control.c)                              */
/* ------------------------------------------------------------------------ */

/*
 * An operator's request to one member ("drain", "undrain") is the persistent
 * znode /drover/control/<group>/<id>, {"want":...,"by":...,"at":...,
 * "incarnation":...}, written by whichever droverd took the API call. The
 * member watches it and acts only on requests naming its own incarnation
 * (host, pid, start time), so a restarted process ignores its predecessor's.
 */
struct coord_control;
typedef void (*coord_control_cb)(const char *want, const char *by, void *arg);

/* "<host>/<pid>/<started>" into buf. */
void coord_control_incarnation(char *buf, size_t n, const char *host, long long pid,
                               long long started);
/* The same from a member znode's JSON ("host", "pid", "started"); DRV_EINVAL without a pid. */
int coord_control_incarnation_of(const char *member_json, char *buf, size_t n);

/*
 * Watch /drover/control/<group>/<id>: cb hears each new request for this
 * incarnation, once (on the loop). Free with coord_control_free before the
 * session.
 */
struct coord_control *coord_control_watch(struct coord_session *s, const char *group,
                                          const char *id, const char *incarnation,
                                          coord_control_cb cb, void *arg);
void coord_control_free(struct coord_control *c);

#endif
