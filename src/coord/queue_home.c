/*
 * queue_home: which shards wake an idle consumer (its home shards), so that a put
 * wakes one consumer, or a bounded few, instead of every idle one (issue 37).
 *
 * The caller tells the queue who consumes it (coord_queue_set_peers: the worker
 * passes its peers of the same tenant and class, from the member group it watches
 * anyway); every consumer computes the same assignment from the same view, with
 * the hash ring's rules, so that a join or a leave moves only the shards of the
 * consumer that came or went:
 *   1. each consumer has one hashed home: the shard its id falls on in a ring of
 *      the shards (coord_hash64 of "<id>", COORD_RING_DEFAULT_POINTS a shard);
 *   2. a shard that no consumer's hashed home names is given to one consumer: the
 *      owner of "s<NN>" in the ring of the consumers (coord_ring_lookup);
 *   3. a consumer's homes are its hashed home and the shards rule 2 gives it.
 * So with W consumers and S shards every shard has at least one home; when W <= S
 * most have one; when W > S a shard has about W / S (its "home set"). Within a home
 * set of h consumers, the one of rank r (the set sorted by id) claims first the
 * names whose hash mod h is r, then the others: consumers woken together by one
 * listing do not race for the same names (queue order stays strict by priority;
 * within a priority, oldest first among a consumer's own names first).
 *
 * Rule 4 (the fallback): for each shard, the consumer after its homes in the sorted
 * view is its fallback: a change of the shard that an idle fallback sees makes it
 * list the shard STEAL_MS later (100 ms), and take what is still there: its homes
 * are busy (the steal). A look that finds nothing doubles the next one's delay (to
 * 3.2 s; the shard's watch fires for deletes too, each complete), one that finds
 * something resets it: work stealing with backoff. So a put costs its homes'
 * listings and at most one more, whatever the fleet's size.
 *
 * What wakes an idle consumer (queue_take.c, on_queue_event): a change of one of
 * its home shards (at once: it lists that shard and, when its home set has more
 * than one consumer, takes its own names only: the others were woken too), a
 * change of a shard it is the fallback of (STEAL_MS later, any name), a new view
 * that gives it a new home or has lost a consumer (it lists its homes again: the
 * shards of a consumer that left are taken over, with the claims that died with its
 * session or that it released as it stopped), coord_queue_rescan. With a view,
 * nobody watches the claims: every claim's create and delete would wake every idle
 * consumer that passed an item over (the herd again); a release by a live holder is
 * its own to take again (it lists on), a dead holder's claims come back with the
 * view's change (a holder that came back under the same id before its old session
 * expired changes no name of the view: the caller looks again, coord_queue_rescan,
 * once that session must be over; coord.h, coord_queue_set_peers). A change of any other shard is
 * marked (its watch is spent: the next round lists it) but wakes nobody but its
 * homes. With a view, a round covers only this consumer's shards (homes and those it
 * is the fallback of): puts spread over the shards, each has its own homes and
 * fallback, and a round over the others only raced their homes. A consumer woken,
 * or freed by a complete, goes on with a round over its shards not known empty (the
 * steal: the shards it is the fallback of, whose items wait while their homes are
 * busy), and rests again when a round finds nothing.
 *
 * Before any view (set_peers never called) every shard is a home: the behaviour of
 * a queue whose consumers do not say who they are (every idle consumer wakes).
 *
 * Invariants (home_check, DROVER_CHECKS):
 *   H1. without a view every shard is a home (and none a fallback);
 *   H2. rank < hsize, hsize >= 1; a home is never its own fallback.
 */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "queue_int.h"
#include "xalloc.h"

#define MOD "coord"

static void home_check(const struct coord_queue *q)
{
    COORD__ASSERT(q->hsize >= 1 && q->rank < q->hsize);
    for (unsigned k = 0; k < q->shards; k++) {
        COORD__ASSERT(q->has_view || (q->home[k] && !q->fallback[k]));
        COORD__ASSERT(!(q->home[k] && q->fallback[k]));
    }
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Rule 1: the shard an id falls on (a ring of the shards, by the ring's hash). */
static unsigned hashed_home(const struct coord_queue *q, struct coord_ring *shards, const char *id)
{
    (void)q;
    const char *s = coord_ring_lookup(shards, id);
    return s ? (unsigned)atoi(s + 1) : 0;
}

/* The homes of me among ids[0..n) (sorted, unique, me among them). */
static void assign(struct coord_queue *q, char **ids, size_t n, const char *me)
{
    unsigned S = q->shards;
    struct coord_ring *shards = coord_ring_new(0);
    for (unsigned k = 0; k < S; k++) {
        char name[8];
        snprintf(name, sizeof(name), "s%02u", k);
        coord_ring_add(shards, name, 1, false);
    }
    struct coord_ring *cons = coord_ring_new(0);
    unsigned *hh = xcalloc(n, sizeof(*hh));
    bool *named = xcalloc(S, sizeof(*named));
    for (size_t i = 0; i < n; i++) {
        hh[i] = hashed_home(q, shards, ids[i]);
        named[hh[i]] = true;
        coord_ring_add(cons, ids[i], 1, false);
    }
    unsigned mine = 0;
    size_t my_i = 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(ids[i], me) == 0) {
            mine = hh[i];
            my_i = i;
        }
    for (unsigned k = 0; k < S; k++) {
        bool home = k == mine;
        if (!named[k]) {
            char name[8];
            snprintf(name, sizeof(name), "s%02u", k);
            const char *o = coord_ring_lookup(cons, name);
            home = o && strcmp(o, me) == 0;
        }
        q->home[k] = home;
    }
    /* My rank in the home set of my hashed home (ids are sorted: rank by id). */
    unsigned h = 0, r = 0;
    for (size_t i = 0; i < n; i++)
        if (hh[i] == mine) {
            if (i < my_i)
                r++;
            h++;
        }
    q->hsize = h ? h : 1;
    q->rank = r < q->hsize ? r : 0;
    q->hashed_home = mine;
    /* Rule 4, the fallback: for each shard, the first consumer after its homes in the sorted
       view (wrapping) that is not one of them: it looks STEAL_MS after a change that an idle
       home should have taken, and takes what is still there (the homes are busy). */
    for (unsigned k = 0; k < S; k++) {
        q->fallback[k] = false;
        if (q->home[k] || n < 2)
            continue;
        size_t last = n; /* the highest index of a home of k */
        for (size_t i = 0; i < n; i++) {
            bool hk = hh[i] == k;
            if (!named[k]) {
                char name[8];
                snprintf(name, sizeof(name), "s%02u", k);
                const char *o = coord_ring_lookup(cons, name);
                hk = o && strcmp(o, ids[i]) == 0;
            }
            if (hk)
                last = i;
        }
        if (last == n)
            continue;
        for (size_t d = 1; d < n; d++) {
            size_t i = (last + d) % n;
            bool hk = hh[i] == k;
            if (hk)
                continue;
            q->fallback[k] = i == my_i;
            break;
        }
    }
    free(hh);
    free(named);
    coord_ring_free(shards);
    coord_ring_free(cons);
}

void coord_queue_set_peers(struct coord_queue *q, const char *const *ids, size_t n)
{
    if (!q || q->dead)
        return;
    char **v = xcalloc(n + 1, sizeof(char *));
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (ids[i] && *ids[i])
            v[m++] = xstrdup(ids[i]);
    v[m++] = xstrdup(q->consumer);
    qsort(v, m, sizeof(char *), cmp_str);
    size_t u = 0;
    for (size_t i = 0; i < m; i++) {
        if (u && strcmp(v[u - 1], v[i]) == 0) {
            free(v[i]);
            continue;
        }
        v[u++] = v[i];
    }
    bool before[100];
    memcpy(before, q->home, sizeof(before));
    bool had = q->has_view;
    size_t old_n = q->n_peers;
    assign(q, v, u, q->consumer);
    q->has_view = true;
    q->n_peers = u;
    for (size_t i = 0; i < u; i++)
        free(v[i]);
    free(v);
    COORD__CHECK(home_check, q);
    /* A shard that is a home now and was not: list it (a consumer that left may have left
       items behind, with the claims that died with its session). */
    bool gained = false;
    for (unsigned k = 0; k < q->shards; k++)
        if (q->home[k] && (!before[k] || !had)) {
            gained = true;
            q->clean[k] = false;
        }
    /* A consumer left: its claims died with its session (or it released them as it
       stopped). Nobody watches the claims (a view replaces that watch: every claim change
       would wake every idle consumer), so every consumer lists its homes again, once. */
    if (had && u < old_n) {
        for (unsigned k = 0; k < q->shards; k++)
            if (q->home[k]) {
                gained = true;
                q->clean[k] = false;
            }
    }
    if (gained) {
        unsigned first = q->shards;
        for (unsigned k = 0; k < q->shards && first == q->shards; k++)
            if (q->home[k] && !q->clean[k])
                first = k;
        coord__q_wake(q, first, false);
    }
}

bool coord__q_mine(const struct coord_queue *q, unsigned k)
{
    return !q->has_view || q->home[k] || q->fallback[k];
}

bool coord__q_own_name(const struct coord_queue *q, const char *name)
{
    if (q->hsize <= 1)
        return true;
    return coord_hash64(name, strlen(name)) % q->hsize == q->rank;
}

void coord__q_home_init(struct coord_queue *q)
{
    for (unsigned k = 0; k < 100; k++)
        q->home[k] = true;
    q->hsize = 1;
    q->rank = 0;
    q->steal_look = -1;
}

bool coord_queue_is_home(const struct coord_queue *q, unsigned shard)
{
    return shard < q->shards && q->home[shard];
}
