/*
 * registry: which object hears which watch event and which session event.
 *
 * Every watch of a session is set with its one global watcher, so ZooKeeper
 * tells the session "event T on path P" once, and the registry routes it to
 * every registration of P that wants T. Listeners hear session events
 * (LOST, SUSPECT, NEW_SESSION). A session holds thousands of both (a lock
 * and a watcher or two per in-flight job), so:
 *
 *   - watches are in two hash tables: by path (dispatch: O(registrations of
 *     that path)) and by owner (remove all of an object's: O(its own));
 *   - listeners are in a list (a session event goes to all: O(n), and it is
 *     rare) and a hash table by owner (removal: O(1)).
 *
 * Re-entrancy: a callback may add or remove registrations, its own or
 * others'. Removal unlinks at once and marks the entry dead; if a dispatch
 * runs, the entry goes to a grave freed when the outermost dispatch ends, so
 * a dispatch that took a pointer to it sees the mark and skips it. A
 * dispatch works on a snapshot: entries added meanwhile hear the next event.
 *
 * Invariants: see struct coord__registry (coord_int.h); checked by
 * coord__registry_check in Debug builds after every change.
 */
#include <stdlib.h>
#include <string.h>

#include "coord_int.h"
#include "xalloc.h"

#define W_OF_PATH(n) COORD__CONTAINER_OF(n, struct coord__watch, by_path)
#define W_OF_OWNER(n) COORD__CONTAINER_OF(n, struct coord__watch, by_owner)
#define L_OF_OWNER(n) COORD__CONTAINER_OF(n, struct coord__listener, by_owner)

void coord__registry_check(const struct coord__registry *r)
{
    COORD__ASSERT(r->w_path.n == r->n_watches);
    COORD__ASSERT(r->w_owner.n == r->n_watches);
    COORD__ASSERT(r->l_owner.n == r->n_listeners);
    size_t n = 0;
    for (const struct coord__listener *l = r->l_head; l; l = l->next) {
        COORD__ASSERT(!l->dead);
        COORD__ASSERT(!l->next || l->next->prev == l);
        n++;
    }
    COORD__ASSERT(n == r->n_listeners);
    COORD__ASSERT(r->dispatching > 0 || (!r->w_grave && !r->l_grave));
}

static void bury(struct coord__registry *r)
{
    if (r->dispatching)
        return;
    while (r->w_grave) {
        struct coord__watch *w = r->w_grave;
        r->w_grave = w->grave;
        free(w->path);
        free(w);
    }
    while (r->l_grave) {
        struct coord__listener *l = r->l_grave;
        r->l_grave = l->grave;
        free(l);
    }
}

struct coord__watch *coord__reg_watch_add(struct coord__registry *r, const char *path,
                                          unsigned mask, void *owner, coord__watch_fn fn)
{
    uint64_t h = coord__hash_str(path);
    for (struct coord__hnode *n = coord__htab_find(&r->w_path, h); n; n = coord__htab_next(n)) {
        struct coord__watch *w = W_OF_PATH(n);
        if (w->owner == owner && w->fn == fn && strcmp(w->path, path) == 0)
            return w;
    }
    struct coord__watch *w = xcalloc(1, sizeof(*w));
    w->path = xstrdup(path);
    w->owner = owner;
    w->fn = fn;
    w->mask = mask;
    coord__htab_add(&r->w_path, &w->by_path, h);
    coord__htab_add(&r->w_owner, &w->by_owner, coord__hash_ptr(owner));
    r->n_watches++;
    COORD__CHECK(coord__registry_check, r);
    return w;
}

void coord__reg_watch_del(struct coord__registry *r, struct coord__watch *w)
{
    if (!w || w->dead)
        return;
    coord__htab_del(&r->w_path, &w->by_path);
    coord__htab_del(&r->w_owner, &w->by_owner);
    r->n_watches--;
    w->dead = true;
    w->grave = r->w_grave;
    r->w_grave = w;
    bury(r);
    COORD__CHECK(coord__registry_check, r);
}

void coord__reg_watch_remove(struct coord__registry *r, void *owner)
{
    uint64_t h = coord__hash_ptr(owner);
    struct coord__hnode *n = coord__htab_find(&r->w_owner, h);
    while (n) {
        struct coord__hnode *next = coord__htab_next(n);
        struct coord__watch *w = W_OF_OWNER(n);
        if (w->owner == owner)
            coord__reg_watch_del(r, w);
        n = next;
    }
}

void coord__reg_dispatch(struct coord__registry *r, int type, const char *path)
{
    uint64_t h = coord__hash_str(path);
    struct coord__watch *one[8], **hit = one;
    size_t n = 0, cap = 8;
    for (struct coord__hnode *k = coord__htab_find(&r->w_path, h); k; k = coord__htab_next(k)) {
        struct coord__watch *w = W_OF_PATH(k);
        if (!(w->mask & COORD__WM(type)) || strcmp(w->path, path) != 0)
            continue;
        if (n == cap) {
            cap *= 2;
            if (hit == one) {
                hit = xcalloc(cap, sizeof(*hit));
                memcpy(hit, one, sizeof(one));
            } else {
                hit = xrealloc(hit, cap * sizeof(*hit));
            }
        }
        hit[n++] = w;
    }
    r->dispatching++;
    for (size_t i = 0; i < n; i++)
        if (!hit[i]->dead)
            hit[i]->fn(hit[i]->owner, type, path);
    r->dispatching--;
    if (hit != one)
        free(hit);
    bury(r);
}

void coord__reg_listener_add(struct coord__registry *r, void *owner,
                             void (*fn)(void *owner, enum coord__session_event ev))
{
    struct coord__listener *l = xcalloc(1, sizeof(*l));
    l->fn = fn;
    l->owner = owner;
    l->prev = r->l_tail;
    if (r->l_tail)
        r->l_tail->next = l;
    else
        r->l_head = l;
    r->l_tail = l;
    coord__htab_add(&r->l_owner, &l->by_owner, coord__hash_ptr(owner));
    r->n_listeners++;
    COORD__CHECK(coord__registry_check, r);
}

static void listener_del(struct coord__registry *r, struct coord__listener *l)
{
    coord__htab_del(&r->l_owner, &l->by_owner);
    if (l->prev)
        l->prev->next = l->next;
    else
        r->l_head = l->next;
    if (l->next)
        l->next->prev = l->prev;
    else
        r->l_tail = l->prev;
    r->n_listeners--;
    l->dead = true;
    l->grave = r->l_grave;
    r->l_grave = l;
}

void coord__reg_listener_remove(struct coord__registry *r, void *owner)
{
    uint64_t h = coord__hash_ptr(owner);
    struct coord__hnode *n = coord__htab_find(&r->l_owner, h);
    while (n) {
        struct coord__hnode *next = coord__htab_next(n);
        struct coord__listener *l = L_OF_OWNER(n);
        if (l->owner == owner)
            listener_del(r, l);
        n = next;
    }
    bury(r);
    COORD__CHECK(coord__registry_check, r);
}

void coord__reg_tell(struct coord__registry *r, enum coord__session_event ev)
{
    size_t n = 0;
    struct coord__listener **all = xcalloc(r->n_listeners ? r->n_listeners : 1, sizeof(*all));
    for (struct coord__listener *l = r->l_head; l; l = l->next)
        all[n++] = l;
    r->dispatching++;
    for (size_t i = 0; i < n; i++)
        if (!all[i]->dead)
            all[i]->fn(all[i]->owner, ev);
    r->dispatching--;
    free(all);
    bury(r);
}

void coord__registry_free(struct coord__registry *r)
{
    size_t n;
    struct coord__hnode **all = coord__htab_all(&r->w_path, &n);
    for (size_t i = 0; i < n; i++) {
        struct coord__watch *w = W_OF_PATH(all[i]);
        free(w->path);
        free(w);
    }
    free(all);
    while (r->l_head) {
        struct coord__listener *l = r->l_head;
        r->l_head = l->next;
        free(l);
    }
    r->l_tail = NULL;
    coord__htab_free(&r->w_path);
    coord__htab_free(&r->w_owner);
    coord__htab_free(&r->l_owner);
    r->n_watches = r->n_listeners = 0;
    r->dispatching = 0;
    bury(r);
}
