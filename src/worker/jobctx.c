/*
 * jobctx: the job contexts and nodes maps this worker has read, cached per job
 * (worker_int.h has the contract).
 *
 * A task needs its job's context (jobs/<id>/ctx: the cluster's config, the
 * provider, the tenant; one znode, or a head {"parts": n} and ctx/p<i>) and,
 * when its plugin wants it, the job's nodes map (jobs/<id>/nodes/n<k>, 16
 * nodes a znode). Every task of a job shares them, so they are read once per
 * job and kept while the job's tasks come: one entry per job.
 *
 * An entry's life (loop thread):
 *
 *   worker__ctx_get (none) --> LOADING --all parts read--> READY --idle a minute,
 *        |                        |                          |   no task of the job
 *        |                        +--a read failed--> gone   |   (worker__ctxs_gc)--> gone
 *        |                            (ctx_ready says so once; the next get reads again)
 *   READY: worker__ctx_nodes older than the task's revision --> nodes LOADING
 *        --all chunks read--> nodes set (or left as they were when a read failed)
 *
 * Each completed read calls the owner's ctx_ready or nodes_ready once, with
 * the job's id; the owner (worker.c) then runs the tasks of that job that
 * wait. Nothing is called back after worker__ctxs_close.
 *
 * Invariants:
 *   1. At most one entry per job, and at most one read of its context and one
 *      of its nodes map in flight.
 *   2. An entry whose context read failed is removed right after ctx_ready.
 *   3. An entry is evicted only when READY, not loading its nodes, not in use
 *      (the owner's in_use) and idle for longer than CTX_IDLE_MS.
 *
 * Cost: one coord_get per context part and per nodes chunk, once per job (the
 * nodes again when a task carries a newer revision); lookups walk the list of
 * jobs this worker serves now (a few).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "clock.h"
#include "coord.h"
#include "log.h"
#include "taskmsg.h"
#include "worker_int.h"
#include "xalloc.h"
#include "zkpath.h"

#define MOD "worker"
#define CTX_IDLE_MS 60000

struct wctx {
    struct wctx *next;
    char job[24];
    json_t *ctx; /* NULL while loading */
    int64_t last_used;
    bool failed;
    json_t *nodes;     /* the job's nodes map (jobs/<id>/nodes), for plugins that want it */
    int64_t nodes_rev; /* its revision (the owner's); -1 before it is read */
    bool nodes_loading;
};

struct worker__ctxs {
    struct coord_session *zk;
    worker__ctx_ready_cb ctx_ready, nodes_ready;
    void *arg;
    struct wctx *list;
    bool closed;
};

struct worker__ctxs *worker__ctxs_new(struct coord_session *zk, worker__ctx_ready_cb ctx_ready,
                                      worker__ctx_ready_cb nodes_ready, void *arg)
{
    struct worker__ctxs *cs = xcalloc(1, sizeof(*cs));
    cs->zk = zk;
    cs->ctx_ready = ctx_ready;
    cs->nodes_ready = nodes_ready;
    cs->arg = arg;
    return cs;
}

static struct wctx *find(struct worker__ctxs *cs, const char *job)
{
    for (struct wctx *c = cs->list; c; c = c->next)
        if (strcmp(c->job, job) == 0)
            return c;
    return NULL;
}

static void entry_free(struct wctx *c)
{
    json_decref(c->ctx);
    json_decref(c->nodes);
    free(c);
}

/* ---- the context -------------------------------------------------------------------- */

struct ctx_read {
    struct worker__ctxs *cs;
    struct wctx *c;
    int parts, got;
    char **text;
    int rc;
};

static void ctx_read_end(struct ctx_read *cr)
{
    struct wctx *c = cr->c;
    struct worker__ctxs *cs = cr->cs;
    if (cr->rc == 0) {
        size_t total = 0;
        for (int i = 0; i < cr->parts; i++)
            total += strlen(cr->text[i]);
        char *all = xmalloc(total + 1);
        all[0] = '\0';
        for (int i = 0; i < cr->parts; i++)
            strcat(all, cr->text[i]);
        json_error_t je;
        c->ctx = json_loads(all, 0, &je);
        free(all);
        struct taskmsg_ctx d;
        struct drv_err err;
        if (taskmsg_ctx_decode(c->ctx, &d, &err) != 0) {
            log_error(MOD, "event=context-refused job=%s error=\"%s\"", c->job, err.msg);
            json_decref(c->ctx);
            c->ctx = NULL;
            cr->rc = DRV_EINVAL;
        }
    }
    if (cr->rc) {
        log_error(MOD, "event=context-unreadable job=%s error=%s", c->job, drv_strerror(cr->rc));
        c->failed = true;
    }
    for (int i = 0; i < cr->parts; i++)
        free(cr->text ? cr->text[i] : NULL);
    free(cr->text);
    free(cr);
    if (!cs->closed)
        cs->ctx_ready(c->job, cs->arg);
    if (c->failed) {
        /* Forget it: the next task of the job reads it again. */
        for (struct wctx **pp = &cs->list; *pp; pp = &(*pp)->next)
            if (*pp == c) {
                *pp = c->next;
                break;
            }
        entry_free(c);
    }
}

struct part_arg {
    struct ctx_read *cr;
    int i;
};

static void on_ctx_part(int rc, const char *data, int version, void *arg)
{
    struct part_arg *pa = arg;
    struct ctx_read *cr = pa->cr;
    if (rc)
        cr->rc = rc;
    else
        cr->text[pa->i] = xstrdup(data);
    free(pa);
    if (++cr->got == cr->parts)
        ctx_read_end(cr);
}

static void on_ctx_head(int rc, const char *data, int version, void *arg)
{
    struct ctx_read *cr = arg;
    json_error_t je;
    json_t *h = rc == 0 ? json_loads(data, 0, &je) : NULL;
    json_int_t parts = json_integer_value(json_object_get(h, "parts"));
    if (rc == 0 && json_is_object(h) && json_object_get(h, "parts") && parts > 0 && parts < 4096 &&
        !cr->cs->closed) {
        cr->parts = (int)parts;
        cr->text = xcalloc((size_t)parts, sizeof(char *));
        for (int i = 0; i < cr->parts; i++) {
            struct part_arg *pa = xcalloc(1, sizeof(*pa));
            pa->cr = cr;
            pa->i = i;
            char *p = zkpath_job_ctx_part(NULL, 0, cr->c->job, (size_t)i);
            coord_get(cr->cs->zk, p, on_ctx_part, pa);
            free(p);
        }
        json_decref(h);
        return;
    }
    json_decref(h);
    cr->rc = rc;
    cr->parts = 1;
    cr->text = xcalloc(1, sizeof(char *));
    if (rc == 0)
        cr->text[0] = xstrdup(data);
    ctx_read_end(cr);
}

const json_t *worker__ctx_get(struct worker__ctxs *cs, const char *job)
{
    struct wctx *c = find(cs, job);
    if (c) {
        c->last_used = clock_mono_ms();
        return c->ctx; /* NULL: loading, ctx_ready follows */
    }
    c = xcalloc(1, sizeof(*c));
    c->nodes_rev = -1;
    snprintf(c->job, sizeof(c->job), "%s", job);
    c->last_used = clock_mono_ms();
    c->next = cs->list;
    cs->list = c;
    struct ctx_read *cr = xcalloc(1, sizeof(*cr));
    cr->cs = cs;
    cr->c = c;
    char *p = zkpath_job_ctx(NULL, 0, job);
    coord_get(cs->zk, p, on_ctx_head, cr);
    free(p);
    return NULL;
}

const json_t *worker__ctx_peek(struct worker__ctxs *cs, const char *job)
{
    struct wctx *c = find(cs, job);
    return c ? c->ctx : NULL;
}

/* ---- the nodes map ------------------------------------------------------------------ */

struct nodes_read {
    struct worker__ctxs *cs;
    char job[24];
    int64_t rev;
    int parts, got, rc;
    json_t *map;
};

static void on_nodes_chunk(int rc, const char *data, int version, void *arg)
{
    struct nodes_read *nr = arg;
    json_error_t je;
    json_t *part = rc == 0 ? json_loads(data, 0, &je) : NULL;
    if (json_is_object(part))
        json_object_update(nr->map, part);
    else
        nr->rc = rc ? rc : DRV_EINVAL;
    json_decref(part);
    if (++nr->got < nr->parts)
        return;
    struct worker__ctxs *cs = nr->cs;
    if (!cs->closed) {
        struct wctx *c = find(cs, nr->job);
        if (c) {
            c->nodes_loading = false;
            if (nr->rc == 0) {
                json_decref(c->nodes);
                c->nodes = json_incref(nr->map);
                c->nodes_rev = nr->rev;
            } else {
                log_error(MOD, "event=nodes-unreadable job=%s error=%s", nr->job,
                          drv_strerror(nr->rc));
            }
        }
        cs->nodes_ready(nr->job, cs->arg);
    }
    json_decref(nr->map);
    free(nr);
}

const json_t *worker__ctx_nodes(struct worker__ctxs *cs, const char *job)
{
    struct wctx *c = find(cs, job);
    return c ? c->nodes : NULL;
}

bool worker__ctx_nodes_fresh(struct worker__ctxs *cs, const char *job, int64_t rev)
{
    struct wctx *c = find(cs, job);
    return c && c->nodes && c->nodes_rev >= rev;
}

int worker__ctx_nodes_read(struct worker__ctxs *cs, const char *job, int64_t rev)
{
    struct wctx *c = find(cs, job);
    if (!c || !c->ctx)
        return DRV_ENOENT;
    if (c->nodes_loading)
        return 0; /* nodes_ready follows */
    json_int_t parts = json_integer_value(json_object_get(c->ctx, "nodes_chunks"));
    struct nodes_read *nr = xcalloc(1, sizeof(*nr));
    nr->cs = cs;
    snprintf(nr->job, sizeof(nr->job), "%s", job);
    nr->rev = rev;
    nr->map = json_object();
    nr->parts = parts > 0 ? (int)parts : 0;
    c->nodes_loading = true;
    if (nr->parts == 0) {
        nr->parts = 1;
        on_nodes_chunk(0, "{}", 0, nr);
        return 0;
    }
    for (int k = 0; k < nr->parts; k++) {
        char *p = zkpath_job_nodes_chunk(NULL, 0, job, (size_t)k);
        coord_get(cs->zk, p, on_nodes_chunk, nr);
        free(p);
    }
    return 0;
}

/* ---- eviction and release ----------------------------------------------------------- */

void worker__ctxs_gc(struct worker__ctxs *cs, bool (*in_use)(const char *job, void *arg), void *arg)
{
    int64_t now = clock_mono_ms();
    for (struct wctx **pp = &cs->list; *pp;) {
        struct wctx *c = *pp;
        if (c->ctx && !c->nodes_loading && now - c->last_used > CTX_IDLE_MS &&
            !in_use(c->job, arg)) {
            *pp = c->next;
            entry_free(c);
        } else {
            pp = &c->next;
        }
    }
}

void worker__ctxs_close(struct worker__ctxs *cs)
{
    if (cs)
        cs->closed = true;
}

void worker__ctxs_free(struct worker__ctxs *cs)
{
    if (!cs)
        return;
    while (cs->list) {
        struct wctx *c = cs->list;
        cs->list = c->next;
        entry_free(c);
    }
    free(cs);
}
