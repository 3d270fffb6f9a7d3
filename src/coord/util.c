/*
 * util: small pieces the coord files share. Loop thread only, no I/O.
 *
 * Hash table: intrusive (a struct coord__hnode inside the caller's entry),
 * chained, a power-of-two bucket count doubled when the load passes 1, so
 * add, delete and find cost O(1) on average. The caller compares keys: find
 * returns the nodes with the same hash one after the other.
 *
 * Names: coord__unique_prefix makes the prefix that sequential znodes and
 * queue puts carry so that a request whose answer was lost can be found
 * again. It is "<session id>-<random>-<counter>-": the random part is drawn
 * once per session object from the kernel, so two processes, or two
 * sessions, that ask before their first connection (session id still 0)
 * never make the same prefix.
 *
 * Backoff: retries after a lost answer or a failed start wait 100 ms
 * doubling to 5 s, drawn uniformly in [d/2, d] (jitter from the session's
 * generator, seeded from the same random value).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "coord_int.h"
#include "xalloc.h"

/* ---- hash table ------------------------------------------------------------- */

static void grow(struct coord__htab *t)
{
    size_t nb = t->nb ? t->nb * 2 : 16;
    struct coord__hnode **b = xcalloc(nb, sizeof(*b));
    for (size_t i = 0; i < t->nb; i++) {
        struct coord__hnode *e = t->b[i];
        while (e) {
            struct coord__hnode *next = e->next;
            size_t k = (size_t)(e->hash & (nb - 1));
            e->next = b[k];
            b[k] = e;
            e = next;
        }
    }
    free(t->b);
    t->b = b;
    t->nb = nb;
}

void coord__htab_add(struct coord__htab *t, struct coord__hnode *e, uint64_t hash)
{
    if (t->n + 1 > t->nb)
        grow(t);
    e->hash = hash;
    size_t k = (size_t)(hash & (t->nb - 1));
    e->next = t->b[k];
    t->b[k] = e;
    t->n++;
}

void coord__htab_del(struct coord__htab *t, struct coord__hnode *e)
{
    if (!t->nb)
        return;
    struct coord__hnode **pp = &t->b[e->hash & (t->nb - 1)];
    while (*pp && *pp != e)
        pp = &(*pp)->next;
    if (*pp) {
        *pp = e->next;
        e->next = NULL;
        t->n--;
    }
}

static struct coord__hnode *same_hash(struct coord__hnode *e, uint64_t hash)
{
    while (e && e->hash != hash)
        e = e->next;
    return e;
}

struct coord__hnode *coord__htab_find(const struct coord__htab *t, uint64_t hash)
{
    return t->nb ? same_hash(t->b[hash & (t->nb - 1)], hash) : NULL;
}

struct coord__hnode *coord__htab_next(const struct coord__hnode *e)
{
    return same_hash(e->next, e->hash);
}

struct coord__hnode **coord__htab_all(const struct coord__htab *t, size_t *n)
{
    struct coord__hnode **all = xcalloc(t->n ? t->n : 1, sizeof(*all));
    size_t k = 0;
    for (size_t i = 0; i < t->nb; i++)
        for (struct coord__hnode *e = t->b[i]; e; e = e->next)
            all[k++] = e;
    *n = k;
    return all;
}

void coord__htab_free(struct coord__htab *t)
{
    FREE_NULL(t->b);
    t->nb = t->n = 0;
}

uint64_t coord__hash_str(const char *s)
{
    return coord_hash64(s, strlen(s));
}

uint64_t coord__hash_ptr(const void *p)
{
    uint64_t h = (uint64_t)(uintptr_t)p;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return h;
}

/* ---- names and random ------------------------------------------------------------ */

uint64_t coord__random_seed(void)
{
    uint64_t v = 0;
    if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v)) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        v = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ ((uint64_t)getpid() << 40) ^
            (uint64_t)(uintptr_t)&v;
    }
    return v ? v : 0x9e3779b97f4a7c15ULL;
}

uint64_t coord__rand(struct coord_session *s)
{
    /* xorshift64* */
    uint64_t x = s->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    s->rng = x;
    return x * 0x2545f4914f6cdd1dULL;
}

void coord__unique_prefix(struct coord_session *s, char *buf, size_t n)
{
    const clientid_t *cid = s->zh ? zoo_client_id(s->zh) : NULL;
    snprintf(buf, n, "%016llx-%016llx-%llx-", (unsigned long long)(cid ? cid->client_id : 0),
             (unsigned long long)s->nonce, (unsigned long long)++s->uniq);
}

int coord__backoff_ms(struct coord_session *s, unsigned tries)
{
    long d = 100;
    for (unsigned i = 0; i < tries && d < 5000; i++)
        d *= 2;
    if (d > 5000)
        d = 5000;
    return (int)(d / 2 + (long)(coord__rand(s) % (uint64_t)(d / 2 + 1)));
}

/* ---- ZooKeeper codes ---------------------------------------------------------------- */

int coord__zrc(int zrc)
{
    switch (zrc) {
    case ZOK:
        return 0;
    case ZNONODE:
        return DRV_ENOENT;
    case ZNODEEXISTS:
        return DRV_EEXIST;
    case ZBADVERSION:
        return DRV_ECONFLICT;
    case ZNOAUTH:
    case ZAUTHFAILED:
        return DRV_EPERM;
    case ZCONNECTIONLOSS:
    case ZOPERATIONTIMEOUT:
    case ZINVALIDSTATE:
    case ZSESSIONEXPIRED:
    case ZCLOSING:
    case ZSESSIONMOVED:
        return DRV_EAGAIN;
    case ZBADARGUMENTS:
        return DRV_EINVAL;
    case COORD__ZTOOBIG:
        return DRV_ETOOBIG;
    default:
        return DRV_EZK;
    }
}

bool coord__zrc_unknown(int zrc)
{
    return zrc == ZCONNECTIONLOSS || zrc == ZOPERATIONTIMEOUT;
}

bool coord__zrc_session_gone(int zrc)
{
    return zrc == ZSESSIONEXPIRED || zrc == ZINVALIDSTATE || zrc == ZCLOSING;
}

/* ---- paths, stats, clocks ------------------------------------------------------------ */

int64_t coord__seq_of(const char *name)
{
    size_t n = strlen(name);
    if (n < 10)
        return -1;
    int64_t v = 0;
    for (size_t i = n - 10; i < n; i++) {
        if (name[i] < '0' || name[i] > '9')
            return -1;
        v = v * 10 + (name[i] - '0');
    }
    return v;
}

const char *coord__basename(const char *path)
{
    const char *p = strrchr(path, '/');
    return p ? p + 1 : path;
}

char *coord__parent(const char *path)
{
    const char *b = coord__basename(path);
    return b - path > 1 ? xstrndup(path, (size_t)(b - path - 1)) : xstrdup("/");
}

void coord__stat_of(const struct Stat *z, struct coord_stat *c)
{
    *c = (struct coord_stat){.czxid = z->czxid,
                             .mzxid = z->mzxid,
                             .pzxid = z->pzxid,
                             .ctime_ms = z->ctime,
                             .mtime_ms = z->mtime,
                             .version = z->version,
                             .cversion = z->cversion,
                             .ephemeral_owner = z->ephemeralOwner,
                             .data_length = z->dataLength,
                             .num_children = z->numChildren};
}
