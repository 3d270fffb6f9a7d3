/*
 * queue_int: the locking queue's state, shared by its three files.
 *
 *   queue.c       open (with retries), puts (chunks, markers, keyed puts), stats, close
 *   queue_take.c  takes: listing a shard, claiming, delivering
 *   queue_home.c  the consumers' view (coord_queue_set_peers): home shards, which
 *                 wake an idle consumer, and the names each claims first
 *   queue_hold.c  held claims: complete, release, transactions on a claim, claim
 *                 loss (on_lost), find, holder, cancel
 *
 * Tree (docs/zookeeper-tree.md):
 *   <q>                       {"kind":"queue","format":1,"shards":S}
 *   <q>/items/sNN/<name>      the item's JSON
 *   <q>/claims/sNN-<name>     {"consumer":...,"session":"0x...","ms":...}   ephemeral
 *   <q>/keys/<key>            {"item":"sNN/<name>"}      keyed items only
 *   <q>/puts/m-<...>          {"items":N}                ephemeral, while a put is answered
 *
 * Item names: i<r>-<t>-k<key> (keyed) or i<r>-<t>-g<random>-<n>-<i> (put by
 * coord_queue_put), r = 9 - priority, t = the put's wall clock in ms as 11
 * hex digits. Sorted by name, a shard lists highest priority first, oldest
 * first within a priority; the oldest item of a shard is the smallest t.
 */
#ifndef DROVER_COORD_QUEUE_INT_H
#define DROVER_COORD_QUEUE_INT_H

#include "coord_int.h"

struct take {
    struct take *next;
    struct coord_queue *q;
    coord_take_cb cb;
    void *arg;
    struct event *timer;
};

struct deferred {
    struct deferred *next;
    void (*fn)(struct coord_queue *q, void *p);
    void *p;
};

enum qopen { Q_OPENING, Q_OPEN, Q_RETRY };

/* A claim this consumer holds (queue_hold.c). */
enum hstate { H_HELD, H_BUSY };
struct held {
    struct coord__hnode hn;
    char *id;     /* "sNN/<name>" */
    unsigned gen; /* the handle generation whose session created the claim */
    enum hstate st;
    int busy;      /* complete, release or transactions in flight */
    long since_ms; /* monotonic: when delivered */
    struct coord__watch *watch;
    struct held *fprev, *fnext; /* waiting for its claim watch */
    bool in_fifo;
};

struct fin;

struct coord_queue {
    struct coord_session *s;
    char *path;
    char *consumer;
    unsigned shards;
    int refs;
    bool dead;
    /* open */
    enum qopen open;
    bool told;
    coord_done_cb ready_cb;
    void *ready_arg;
    unsigned open_tries;
    struct deferred *deferred; /* calls waiting for the open, newest first */
    /* puts */
    unsigned rr;
    char **markers; /* answered puts' markers, to delete in one multi-op */
    size_t n_markers, cap_markers;
    bool markers_scheduled;
    /* takes (queue_take.c) */
    struct take *takes, *takes_tail;
    size_t n_takes;
    size_t claiming; /* claim attempts in flight */
    char **cache;
    size_t cache_n, cache_pos;
    unsigned cache_shard;
    unsigned shard;   /* the shard to list next */
    unsigned scanned; /* empty shards seen in a row */
    bool refilling;
    bool idle;             /* a whole round was empty: waiting for a watch */
    bool poked;            /* a watch fired during the round */
    bool fired[100];       /* per shard: its watch fired during the round, not listed since */
    bool clean[100];       /* per shard: listed with no item, its watch not fired since */
    bool pacing;           /* waiting SCAN_PACE_MS before the round's next listing */
    struct event *pace_ev; /* its timer */
    char **round_claimed;  /* "sNN-<name>" of claimed items passed over in this round */
    size_t n_round_claimed, cap_round_claimed;
    coord_skip_cb skip; /* the consumer's own filter (coord_queue_opts) */
    void *skip_arg;
    bool pump_scheduled;
    struct event *pump_ev;
    unsigned poke_shard;
    unsigned epoch; /* bumped when the session expires: older claim results are void */
    unsigned refill_tries;
    struct coord_queue_counters counters; /* coord_queue_counters */
    /* homes (queue_home.c) */
    bool home[100];              /* per shard: a change of it wakes this consumer when idle */
    bool fallback[100];          /* per shard: it looks STEAL_MS after a change its homes missed */
    bool steal_due[100];         /* per shard: that look is scheduled */
    struct event *steal_ev[100]; /* its timer */
    void *steal_arg[100];        /* and the timer's argument, freed when cancelled */
    int steal_backoff[100];      /* per shard: ms before the next look (0: STEAL_MS) */
    int steal_look;              /* the shard whose look is listing now, -1 when none */
    bool has_view;               /* coord_queue_set_peers was called */
    unsigned hsize, rank;        /* the home set of its hashed home, and its rank in it */
    unsigned hashed_home;
    size_t n_peers;
    bool claims_home; /* idle: an item of a home shard was passed over as claimed */
    bool own_only;    /* the listing of a home woken with its home set: its own names only */
    /* held claims (queue_hold.c) */
    coord_lost_cb on_lost;
    void *lost_arg;
    struct coord__htab held;
    bool staked; /* counted in the session's stakes (holds claims, open) */
    struct held *fifo_head, *fifo_tail;
    struct event *arm_ev;
    /* completes waiting for the end of this turn of the loop */
    struct fin **fins;
    size_t n_fins, cap_fins;
    bool flush_scheduled;
    struct event *flush_ev;
    /* stats */
    char **head;
};

/* queue.c */
void coord__q_unref(struct coord_queue *q);
struct coord__op *coord__q_op(struct coord_queue *q, void (*done)(struct coord__op *), void *owner);
char *coord__q_shard_path(const struct coord_queue *q, unsigned k);
/* Paths of an item id "sNN/<name>"; false when id is not one. key_path NULL when not keyed. */
bool coord__q_paths(const struct coord_queue *q, const char *id, char **item, char **claim,
                    char **key_path);
bool coord__q_name_ok(const char *name);
int64_t coord__q_name_time(const char *name);
int coord__q_cmp_item(const void *a, const void *b); /* char ** by queue order */
void coord__q_defer(struct coord_queue *q, void (*fn)(struct coord_queue *, void *), void *p);

/* queue_take.c */
void coord__q_pump(struct coord_queue *q);
void coord__q_take_lost(struct coord_queue *q); /* the session expired */
void coord__q_take_close(struct coord_queue *q);

/* queue_home.c */
void coord__q_home_init(struct coord_queue *q);
/* Whether a round of this consumer lists shard k: without a view every shard; with one, its
   homes and the shards it is the fallback of. */
bool coord__q_mine(const struct coord_queue *q, unsigned k);
/* Whether this consumer claims name first (its share of its home set's names). */
bool coord__q_own_name(const struct coord_queue *q, const char *name);

/* queue_take.c: list shard k soon, waking the consumer when idle: one, k alone (idle again at
   once unless it held something for it); else a round from k. */
void coord__q_wake(struct coord_queue *q, unsigned k, bool one);

/* queue_hold.c */
void coord__q_hold_add(struct coord_queue *q, const char *id, unsigned gen);
void coord__q_hold_session(struct coord_queue *q, enum coord__session_event ev);
void coord__q_hold_close(struct coord_queue *q);
void coord__q_hold_free(struct coord_queue *q);
/* Whether this consumer holds the item id "sNN/<name>" (delivered, not completed or released). */
bool coord__q_holds(struct coord_queue *q, const char *id);
/* Delete a claim this session made that nobody was given (not delivered). */
void coord__q_drop_claim(struct coord_queue *q, const char *id, unsigned gen);

#endif
