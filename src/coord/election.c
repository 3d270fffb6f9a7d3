/*
 * election: leader election for a singleton duty, on a lock.
 *
 * The duty's lock is /drover/elections/<name>; a contender holds it for as
 * long as it lives. When the lock is lost (session expired, cut off past the
 * threshold, the znode deleted) the leader hears cb(false) and the contender
 * contends again after a backoff, so leadership moves to the next contender
 * and may come back. The token passed with cb(true) is the lock's fencing
 * token.
 *
 *   CONTENDING --acquired--> LEADING --lost--> (backoff) CONTENDING
 */
#include <stdlib.h>

#include "coord_int.h"
#include "xalloc.h"
#include "zkpath.h"

struct coord_election {
    struct coord_session *s;
    struct coord_lock *lock;
    coord_election_cb cb;
    void *arg;
    bool leader;
    int refs;
    bool dead;
    unsigned tries;
};

static void election_unref(struct coord_election *e)
{
    if (--e->refs == 0)
        free(e);
}

static void election_again(void *owner)
{
    struct coord_election *e = owner;
    if (!e->dead)
        coord_lock_acquire(e->lock, -1);
    election_unref(e);
}

static void election_event(struct coord_lock *l, enum coord_lock_event ev, void *arg)
{
    struct coord_election *e = arg;
    if (ev == COORD_LOCK_ACQUIRED) {
        e->leader = true;
        e->tries = 0;
        e->cb(e, true, coord_lock_token(l), e->arg);
        return;
    }
    bool was = e->leader;
    e->leader = false;
    if (was)
        e->cb(e, false, 0, e->arg);
    /* Contend again (after a lost session, the new one is up by then or soon). */
    e->refs++;
    coord__timer(e->s, coord__backoff_ms(e->s, e->tries++), election_again, e);
}

struct coord_election *coord_election_new(struct coord_session *s, const char *name,
                                          const char *holder_json, coord_election_cb cb, void *arg)
{
    struct coord_election *e = xcalloc(1, sizeof(*e));
    char *dir = zkpath_election(NULL, 0, name);
    e->s = s;
    e->cb = cb;
    e->arg = arg;
    e->refs = 1;
    e->lock = coord_lock_new(s, dir, holder_json, election_event, e);
    free(dir);
    coord_lock_acquire(e->lock, -1);
    return e;
}

bool coord_election_leader(const struct coord_election *e)
{
    return e->leader;
}

void coord_election_free(struct coord_election *e)
{
    if (!e)
        return;
    e->dead = true;
    coord_lock_free(e->lock);
    election_unref(e);
}
