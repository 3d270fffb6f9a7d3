/*
 * sweep: remove a job's ZooKeeper subtree, then release its lock.
 *
 * After the final PostgreSQL write, nothing of the job may stay in
 * ZooKeeper (invariant 7, docs/architecture.md: the tree holds in-flight state only).
 * Recipe:
 *   1. list /drover/jobs/<id>, then each child (pipelined);
 *   2. delete the grandchildren (task log chunks, run records left over,
 *      context parts), then the children, then the announcement itself,
 *      in fenced multi-ops under the byte budget, one after the other;
 *   3. a multi-op refused because a child appeared or went meanwhile (a
 *      worker's late run record, say) starts the sweep again from 1;
 *   4. release the lock: the lock directory is a container znode, which
 *      the server removes once empty.
 * A delete refused (NOAUTH: a runs/ or child that does not let droverd
 * delete) is neither gone nor a race: the sweep waits (the commit pipeline's
 * backoff, up to 5 s), holding the lock, and starts again from 1, without
 * counting against MAX_SWEEPS (issue 33 item 6; engine_record_delete_refused).
 * With keep_root (a start that failed half-way: its leftovers go, so the
 * next attempt starts clean) the announcement and the API's control znode
 * stay.
 *
 * Known names first: an owner that created the subtree itself (jobstart.c,
 * subtree_made) knows every name in it: the context's parts, the nodes'
 * chunks, the log chunks it wrote, the run records it has listed and not
 * deleted. It sends their deletes, the root's last, without listing (the
 * listings were 7 of a small job's requests). A name it does not know (a
 * worker's late record, a user's control znode) makes the multi-op fail
 * whole (the parent is not empty), one it knows wrongly too (no node): then
 * the sweep lists, as above. The multi-op is fenced like the listing
 * sweep's, so nothing else changes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "commit.h"
#include "coord.h"
#include "engine_int.h"
#include "log.h"
#include "nodes.h"
#include "strmap.h"
#include "xalloc.h"
#include "zkpath.h"

#define MOD "engine"
#define MAX_SWEEPS 20

struct sweep {
    struct ejob *j;
    bool keep_root;
    bool known; /* the names are the owner's own, not listed: on failure, list */
    int listing;
    char **children;
    size_t n_children;
    char **dels; /* grandchildren first, then children, then the root */
    size_t n_dels, cap_dels, pos;
};

static void sweep_free(struct sweep *s)
{
    for (size_t i = 0; i < s->n_children; i++)
        free(s->children[i]);
    free(s->children);
    for (size_t i = 0; i < s->n_dels; i++)
        free(s->dels[i]);
    free(s->dels);
    free(s);
}

static void add_del(struct sweep *s, char *path)
{
    XGROW(s->dels, s->cap_dels, s->n_dels + 1);
    s->dels[s->n_dels++] = path;
}

static void sweep_start(struct ejob *j, bool keep_root);

/* After a refused sweep's wait (sweep_end): the same sweep again. */
static void sweep_again(evutil_socket_t fd, short what, void *arg)
{
    struct ejob *j = arg;
    (void)fd;
    (void)what;
    if (engine__job_alive(j)) /* (no reference held: job_free frees the timer) */
        sweep_start(j, j->sweep_keep_root);
}

static void sweep_end(struct sweep *s, int rc)
{
    struct ejob *j = s->j;
    bool keep = s->keep_root;
    sweep_free(s);
    if (!engine__job_alive(j)) {
        engine__job_unref(j);
        return;
    }
    if (rc == DRV_EPERM) {
        j->sweep_keep_root = keep;
        /* A delete refused (NOAUTH: a runs/ or a znode that does not let droverd delete):
         * another sweep at once would be refused alike. Wait (the commit pipeline's backoff,
         * up to 5 s), holding the lock, and try again; not counted against MAX_SWEEPS, and
         * nothing taken as gone that is still there. */
        log_warn(MOD, "event=job-sweep-refused job=%s error=%s", j->id, drv_strerror(rc));
        j->sweeps--;
        engine__commit_backoff(j, &j->sweep_ev, sweep_again);
    } else if (rc == 0 || j->sweeps >= MAX_SWEEPS) {
        if (rc)
            log_error(MOD, "event=job-sweep-failed job=%s error=%s", j->id, drv_strerror(rc));
        else
            log_info(MOD, "event=job-swept job=%s kept_announcement=%d", j->id, (int)keep);
        /* Gone from the list until a listing shows it again: a list a lost watch left stale
           would otherwise take the ended job again and again (the chaos run 2 of
           2026-11-28: five times a second for minutes). */
        if (rc == 0 && !keep)
            engine__ids_forget(j->e, j->id);
        engine__job_release(j);
    } else {
        sweep_start(j, keep);
    }
    engine__job_unref(j);
}

static void sweep_next(struct sweep *s);

static void on_deleted(const struct coord_txn_result *r, void *arg)
{
    struct sweep *s = arg;
    struct ejob *j = s->j;
    if (!engine__job_alive(j)) {
        sweep_end(s, DRV_EAGAIN);
        return;
    }
    if (r->rc == DRV_ECONFLICT && r->failed_op < 0) {
        engine__job_lost(j, "lock lost while removing the job's znodes");
        sweep_end(s, DRV_ECONFLICT);
    } else if (r->rc && s->known) {
        /* A name not known or known wrongly: list, as an owner that did not make it. */
        log_info(MOD, "event=job-sweep-listing job=%s error=%s", j->id, drv_strerror(r->rc));
        bool keep = s->keep_root;
        sweep_free(s);
        sweep_start(j, keep);
        engine__job_unref(j);
    } else if (r->rc) {
        sweep_end(s, r->rc); /* a child came or went: list again */
    } else {
        sweep_next(s);
    }
}

static void sweep_next(struct sweep *s)
{
    struct ejob *j = s->j;
    if (s->pos == s->n_dels) {
        sweep_end(s, 0);
        return;
    }
    struct coord_txn *t = coord_txn_new();
    while (s->pos < s->n_dels && (coord_txn_count(t) == 0 || coord_txn_bytes(t) < j->e->budget / 2))
        coord_txn_delete(t, s->dels[s->pos++], -1);
    j->e->stats.zk_multis++;
    coord_txn_commit(j->e->zk, t, j->lock, on_deleted, s);
}

static void listed_done(struct sweep *s)
{
    if (--s->listing > 0)
        return;
    /* Grandchildren were added as listed; now the children, then the root. */
    for (size_t i = 0; i < s->n_children; i++) {
        if (s->keep_root && strcmp(s->children[i], "control") == 0)
            continue;
        add_del(s, zkpath_job_sub(NULL, 0, s->j->id, s->children[i], NULL));
    }
    if (!s->keep_root)
        add_del(s, zkpath_job(NULL, 0, s->j->id));
    sweep_next(s);
}

struct sub {
    struct sweep *s;
    char *child;
};

static void on_grandchildren(int rc, char *const *names, size_t n, void *arg)
{
    struct sub *sub = arg;
    struct sweep *s = sub->s;
    for (size_t i = 0; rc == 0 && i < n; i++)
        add_del(s, zkpath_job_sub(NULL, 0, s->j->id, sub->child, names[i]));
    free(sub->child);
    free(sub);
    listed_done(s);
}

static void on_children(int rc, char *const *names, size_t n, void *arg)
{
    struct sweep *s = arg;
    if (rc == DRV_ENOENT) {
        sweep_end(s, 0); /* already gone */
        return;
    }
    if (rc) {
        sweep_end(s, rc);
        return;
    }
    s->children = xcalloc(n + 1, sizeof(char *));
    s->listing = 1;
    for (size_t i = 0; i < n; i++) {
        s->children[s->n_children++] = xstrdup(names[i]);
        if (s->keep_root && strcmp(names[i], "control") == 0)
            continue;
        struct sub *sub = xcalloc(1, sizeof(*sub));
        sub->s = s;
        sub->child = xstrdup(names[i]);
        char *p = zkpath_job_sub(NULL, 0, s->j->id, names[i], NULL);
        s->listing++;
        coord_children(s->j->e->zk, p, on_grandchildren, sub);
        free(p);
    }
    listed_done(s);
}

static void sweep_start(struct ejob *j, bool keep_root)
{
    struct sweep *s = xcalloc(1, sizeof(*s));
    s->j = j;
    s->keep_root = keep_root;
    j->sweeps++;
    engine__job_ref(j);
    char *p = zkpath_job(NULL, 0, j->id);
    coord_children(j->e->zk, p, on_children, s);
    free(p);
}

/* The subtree by the names this owner made and saw, grandchildren first, the root last. */
static void sweep_known(struct ejob *j)
{
    struct sweep *s = xcalloc(1, sizeof(*s));
    s->j = j;
    s->known = true;
    j->sweeps++;
    engine__job_ref(j);
    for (size_t k = 0; k < j->ctx_parts; k++)
        add_del(s, zkpath_job_ctx_part(NULL, 0, j->id, k));
    for (size_t k = 0; k < engine__nodes_chunks(j); k++)
        add_del(s, zkpath_job_nodes_chunk(NULL, 0, j->id, k));
    const struct eplan *plans[] = {&j->fwd, &j->rb};
    for (size_t i = 0; i < 2; i++)
        for (size_t k = 0; plans[i]->chunk_ver && k < plans[i]->n_chunks; k++)
            if (plans[i]->chunk_ver[k] >= 0)
                add_del(s, zkpath_job_log_chunk(NULL, 0, j->id, plans[i]->phase, k));
    size_t pos = 0;
    const char *name;
    void *v;
    while (j->runs && strmap_next(j->runs, &pos, &name, &v))
        if (!((struct erun *)v)->deleted)
            add_del(s, zkpath_job_run(NULL, 0, j->id, name));
    add_del(s, zkpath_job_ctx(NULL, 0, j->id));
    add_del(s, zkpath_job_nodes(NULL, 0, j->id));
    add_del(s, zkpath_job_log(NULL, 0, j->id));
    add_del(s, zkpath_job_runs(NULL, 0, j->id));
    add_del(s, zkpath_job_state(NULL, 0, j->id));
    add_del(s, zkpath_job(NULL, 0, j->id));
    sweep_next(s);
}

void engine__job_sweep(struct ejob *j, bool keep_root)
{
    j->sweeps = 0;
    if (j->subtree_made && !keep_root && j->st_ver >= 0)
        sweep_known(j);
    else
        sweep_start(j, keep_root);
}
