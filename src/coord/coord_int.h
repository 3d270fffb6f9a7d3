/*
 * coord_int: what the files of src/coord share. Not a public header.
 *
 * Every ZooKeeper call goes through a struct coord__op: the loop thread fills
 * one, issues it with one of the coord__zk_* functions, and gets op->done(op)
 * back on the loop thread once ZooKeeper's completion thread has copied the
 * result into it and queued it (see session.c and docs/threading.md). The op
 * is freed right after done() returns. An issue never fails synchronously: an
 * immediate error is queued like any other result.
 *
 * Watches: every watch is set with the session's global watcher (watch=1).
 * Events reach the objects that registered the path with coord__watch_add.
 *
 * Session listeners hear LOST (the session expired: before the owner does),
 * SUSPECT (disconnected long enough that the session may be gone) and
 * NEW_SESSION (a new session is connected: re-create ephemeral state).
 */
#ifndef DROVER_COORD_INT_H
#define DROVER_COORD_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <zookeeper/zookeeper.h>

#include "coord.h"

struct event;
struct timer_closure;

struct coord__op {
    struct coord__op *next; /* in the session's hand-off queue */
    struct coord_session *s;
    void (*done)(struct coord__op *op);
    void *owner;
    intptr_t tag;
    unsigned gen; /* session generation at issue */
    bool counted; /* a request counted in s->inflight */
    bool queued;  /* handed to the loop already (guarded by s->mu) */
    bool zombie;  /* refused at once: kept until its handle is closed */
    /* results, copied from ZooKeeper's buffers */
    int rc;
    bool has_stat;
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
    /* a watch event or a session event (done == NULL for these) */
    int ev_type;
    int ev_state;
    char *path; /* a copy of the path the op or event is about */
};

/*
 * LOST: the session expired. SUSPECT: the connection has been down for a third
 * of the session timeout, so the server may expire the session before the
 * client can hear of it: locks must be given up now. NEW_SESSION: a new
 * session is connected.
 */
enum coord__session_event { COORD__LOST = 1, COORD__SUSPECT, COORD__NEW_SESSION };

struct coord__listener {
    void (*fn)(void *owner, enum coord__session_event ev);
    void *owner;
};

struct coord__watch {
    char *path;
    void (*fn)(void *owner, int type, const char *path);
    void *owner;
};

struct coord_session {
    struct event_base *base;
    char *hosts;
    char *digest; /* "user:password" or NULL */
    int timeout_ms;
    coord_state_cb on_state;
    void *arg;

    zhandle_t *zh;
    unsigned gen;           /* bumped for every new handle */
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
    struct coord__listener *listeners;
    size_t n_listeners, cap_listeners;
    struct coord__watch *watches;
    size_t n_watches, cap_watches;
    int dispatching; /* > 0 while iterating the arrays above: removals only mark */
    bool dirty;
    uint64_t uniq;                /* counter for per-session unique name prefixes */
    long inflight;                /* requests issued and not yet done */
    struct event *suspect_timer;  /* runs while SUSPENDED */
    struct timer_closure *timers; /* pending coord__timer closures */
    struct coord__op *zombies;    /* see issued() in session.c */
    bool suspected;               /* SUSPECT was told during this suspension */
    bool draining;                /* coord_session_free waits on cond for results (guarded by mu) */
    const struct ACL_vector *acl;
};

struct coord__op *coord__op_new(struct coord_session *s, void (*done)(struct coord__op *),
                                void *owner);
void coord__op_free(struct coord__op *op);

/* Internal create flag (with COORD_EPHEMERAL, COORD_SEQUENTIAL): a container znode. */
#define COORD__CONTAINER 4

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

/* Multi: reserve n ops, fill them with coord__mop_*, then coord__zk_multi. */
void coord__multi_init(struct coord__op *op, int n);
void coord__mop_create(struct coord__op *op, int i, const char *path, const char *data, int flags);
void coord__mop_delete(struct coord__op *op, int i, const char *path, int version);
void coord__mop_set(struct coord__op *op, int i, const char *path, const char *data, int version);
void coord__mop_check(struct coord__op *op, int i, const char *path, int version);
void coord__zk_multi(struct coord__op *op);

void coord__listener_add(struct coord_session *s, void *owner,
                         void (*fn)(void *owner, enum coord__session_event ev));
void coord__listener_remove(struct coord_session *s, void *owner);
void coord__watch_add(struct coord_session *s, const char *path, void *owner,
                      void (*fn)(void *owner, int type, const char *path));
void coord__watch_remove(struct coord_session *s, void *owner);

/* Run fn(owner) once after ms on the loop; returns the event to cancel with event_free. */
struct event *coord__timer(struct coord_session *s, int ms, void (*fn)(void *owner), void *owner);
void coord__timer_cancel(struct event *ev);

/* Delete path, retrying after connection losses until the server answers. */
void coord__delete_sure(struct coord_session *s, const char *path, int version);

/* A name prefix unique to this session and call: "<session id hex>-<counter hex>-". */
void coord__unique_prefix(struct coord_session *s, char *buf, size_t n);

/* Map a ZooKeeper rc to a DRV_E* code. */
int coord__zrc(int zrc);
/* Is rc a loss of connection after which the outcome is unknown? */
bool coord__zrc_unknown(int zrc);

/* Parse the 10-digit sequence suffix of a sequential znode name; -1 when none. */
int64_t coord__seq_of(const char *name);
const char *coord__basename(const char *path);

int64_t coord__now_ms(void);

#endif
