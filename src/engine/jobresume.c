/*
 * jobresume: a job another owner started, resumed from its task log (the
 * LOADING part of job.c's diagram, when the state znode is present; a first
 * start is jobstart.c).
 *
 * The plan is rebuilt from the inputs pinned in PostgreSQL and checked byte
 * for byte against the state's digest (a mismatch, an unreadable log or
 * missing inputs end the job once, saying why: engine__job_unresumable), the
 * task log chunks are read (the rollback plan's too when it has one), then
 * PostgreSQL and the queue are reconciled with them before the job goes on:
 *
 *   1. the run records listed and read; results of done tasks merged again
 *      into their nodes' key-values (before the rollback plan is rebuilt: a
 *      failed create's provider-id decides its delete);
 *   2. the queue's key record read for every task the log says queued;
 *   3. the records of those whose item is gone read again, and recon.c's pure
 *      engine_recon_task decides: none, lost, put again, or withdrawn;
 *   4. ACTIVE: the records nobody follows handed to the commit pipeline
 *      (attempt rows), the decisions carried out, every task row that is not
 *      waiting rewritten from the log; a final phase then makes its final
 *      write like any other.
 *
 * (docs/engine.md "Resuming after a failover", "Reconciliation on resume".)
 * Loop thread, but for the plan's build; linear in the job's size.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assign.h"
#include "commit.h"
#include "coord.h"
#include "engine_int.h"
#include "job_pg.h"
#include "log.h"
#include "nodes.h"
#include "planner.h"
#include "planner_model.h"
#include "recon.h"
#include "store.h"
#include "strmap.h"
#include "taskmsg.h"
#include "xalloc.h"
#include "zkpath.h"

#include <zookeeper/zookeeper.h>

#define MOD "engine"

/* ---- resuming a job another owner started ------------------------------------------------- */

/* Added to a read's failure count for a chunk that is there but cannot be decoded, or
   missing: no retry reads it better (the other failures, connection losses, may pass). */
#define CHUNK_CORRUPT (1 << 20)

struct chunk_read {
    struct ejob *j;
    struct eplan *p;
    size_t k;
    int *left;
    int *failed;
    void (*done)(struct ejob *j, int failed);
};

static void on_chunk(int rc, const char *data, int version, void *arg)
{
    struct chunk_read *c = arg;
    struct ejob *j = c->j;
    struct drv_err err;
    size_t first = c->k * ENGINE_LOG_CHUNK;
    size_t cnt = c->p->n - first < ENGINE_LOG_CHUNK ? c->p->n - first : ENGINE_LOG_CHUNK;
    if (rc == 0 && j->own == EJ_LOADING &&
        engine__log_decode(data, strlen(data), first, cnt, c->p->recs + first, &err) == 0) {
        c->p->chunk_ver[c->k] = version;
    } else if (rc == DRV_ENOENT && c->p->phase == 'r') {
        /* A rollback chunk is created when first written: until then all its tasks wait. */
    } else if (j->own == EJ_LOADING) {
        log_error(MOD, "event=task-log-unreadable job=%s chunk=%c%zu error=%s", j->id, c->p->phase,
                  c->k, rc ? drv_strerror(rc) : err.msg);
        /* Read but not decodable, or a forward chunk missing: it will not get better. */
        *c->failed += rc == 0 || rc == DRV_ENOENT ? CHUNK_CORRUPT : 1;
    }
    if (--*c->left == 0) {
        int failed = *c->failed;
        free(c->left);
        free(c->failed);
        c->done(j, failed);
    }
    free(c);
    engine__job_unref(j);
}

/* Read every chunk of p's task log into p->recs; done(j, failures) once all are in. */
static void read_chunks(struct ejob *j, struct eplan *p, void (*done)(struct ejob *, int))
{
    int *left = xcalloc(1, sizeof(int)), *failed = xcalloc(1, sizeof(int));
    *left = (int)p->n_chunks;
    if (p->n_chunks == 0) {
        free(left);
        free(failed);
        done(j, 0);
        return;
    }
    for (size_t k = 0; k < p->n_chunks; k++) {
        struct chunk_read *c = xcalloc(1, sizeof(*c));
        c->j = j;
        c->p = p;
        c->k = k;
        c->left = left;
        c->failed = failed;
        c->done = done;
        char path[256];
        zkpath_job_log_chunk(path, sizeof(path), j->id, p->phase, k);
        engine__job_ref(j);
        coord_get(j->e->zk, path, on_chunk, c);
    }
}

/* ---- reconciliation on resume (recon.c decides; docs/engine.md) ------------------------------
 *
 * Between the task log and ACTIVE, a resuming owner makes PostgreSQL and the
 * queue agree with the log, whatever its last owner's death cut short:
 *
 *   1. the run records under runs/ are listed and read; the results of tasks
 *      the log says done are merged into the nodes' key-values again (before
 *      the rollback plan is rebuilt: a failed create's provider-id decides
 *      whether it has a delete);
 *   2. for each task of the current plan the log says 'q', the queue's key
 *      record of its current attempt is read, then the item it names: is it
 *      there? (A key record whose item is gone is stale: deleted, fenced, so
 *      that a put of the same key can go in again.)
 *   3. for those whose item is gone, the run records are listed and read
 *      again (after the queue: an outcome written meanwhile is seen), and
 *      engine_recon_task decides: nothing, put again, withdrawn, or lost;
 *   4. once ACTIVE: the records not to be followed are handed to the commit
 *      pipeline as seen (their attempt rows written, then deleted), the
 *      decisions carried out, and every task row not waiting, the rollback
 *      plan's rows and the key-values merged are written to PostgreSQL again
 *      (upserts and updates from the log: a replay changes nothing).
 *
 * The job then goes on, or, in a final phase, writes its end: the final
 * write waits for all of the above (commit.c, nothing_to_write).
 */

struct recon {
    struct ejob *j;
    json_t *runs;    /* run record name -> its data, as last read */
    json_t *written; /* run record name -> the zxid of its last write (its mzxid) */
    uint8_t *cand;   /* per task of cur: 'q' and its item is gone */
    size_t n_cand;   /* how many */
    bool confirm;    /* step 3: read only the candidates' records */
    int left;        /* reads in flight */
    int failed;      /* reads that failed */
    size_t merged;   /* results merged again */
    void (*done)(struct recon *r);
};

static void recon_free(struct recon *r)
{
    json_decref(r->runs);
    json_decref(r->written);
    free(r->cand);
    free(r);
}

/* A step's reads are all back: go on, or let the job go (it is taken again later). */
static void recon_step_done(struct recon *r)
{
    struct ejob *j = r->j;
    if (j->own != EJ_LOADING) {
        recon_free(r);
        return;
    }
    if (r->failed) {
        log_error(MOD, "event=job-resume-failed job=%s error=\"reconciliation reads failed\"",
                  j->id);
        recon_free(r);
        engine__job_release(j);
        return;
    }
    r->done(r);
}

struct recon_read {
    struct recon *r;
    char *name;
};

static void recon_run_read(int rc, const char *data, size_t len, const struct coord_stat *st,
                           void *arg)
{
    struct recon_read *x = arg;
    struct recon *r = x->r;
    struct ejob *j = r->j;
    if (rc == 0) {
        json_error_t je;
        json_t *d = json_loadb(data, len, 0, &je);
        if (d) {
            json_object_set_new(r->runs, x->name, d);
            json_object_set_new(r->written, x->name, json_integer(st ? st->mzxid : 0));
        }
    } else if (rc != DRV_ENOENT) {
        r->failed++;
    }
    free(x->name);
    free(x);
    if (--r->left == 0)
        recon_step_done(r);
    engine__job_unref(j);
}

/* Is the record named name one of a candidate's current attempt (step 3)? */
static bool recon_wanted(const struct recon *r, const char *name)
{
    char ph;
    uint32_t idx;
    unsigned att;
    const struct eplan *p = r->j->cur;
    return taskmsg_run_name_parse(name, &ph, &idx, &att) == 0 && ph == p->phase && idx < p->n &&
           r->cand[idx] && att == p->recs[idx].attempt;
}

static void recon_runs_listed(int rc, char *const *names, size_t n, void *arg)
{
    struct recon *r = arg;
    struct ejob *j = r->j;
    if (rc != 0 && rc != DRV_ENOENT)
        r->failed++;
    r->left = 1; /* the listing's own, dropped below */
    for (size_t i = 0; rc == 0 && j->own == EJ_LOADING && i < n; i++) {
        if (r->confirm && !recon_wanted(r, names[i]))
            continue;
        struct recon_read *x = xcalloc(1, sizeof(*x));
        x->r = r;
        x->name = xstrdup(names[i]);
        char *path = zkpath_job_run(NULL, 0, j->id, names[i]);
        r->left++;
        engine__job_ref(j);
        coord_get_w(j->e->zk, path, recon_run_read, NULL, x);
        free(path);
    }
    if (--r->left == 0)
        recon_step_done(r);
    engine__job_unref(j);
}

/* List runs/ and read the records (all, or in step 3 the candidates'), then r->done. */
static void recon_read_runs(struct recon *r, void (*done)(struct recon *))
{
    struct ejob *j = r->j;
    r->done = done;
    char path[256];
    zkpath_job_runs(path, sizeof(path), j->id);
    engine__job_ref(j);
    coord_children(j->e->zk, path, recon_runs_listed, r);
}

/* The record's plan (NULL: none this job has). */
static struct eplan *recon_plan(struct ejob *j, char phase)
{
    if (phase == 'f')
        return &j->fwd;
    return phase == 'r' && j->rb.plan ? &j->rb : NULL;
}

/* Step 1: the results of p's done tasks merged again where recon.c says so, in the order
   ZooKeeper wrote their outcomes (engine_recon_merge_order): records are kept after their
   rows (ENGINE_RUNS_KEEP), so two tasks of one node may both be here, and the later one's
   key-values must win, as they did. */
static void recon_merge(struct recon *r, struct eplan *p)
{
    size_t n = 0;
    struct engine_recon_written *refs = xcalloc(json_object_size(r->runs) + 1, sizeof(*refs));
    const char *key;
    json_t *val;
    json_object_foreach(r->runs, key, val)
    {
        refs[n].name = key;
        refs[n].data = val;
        refs[n++].mzxid = json_integer_value(json_object_get(r->written, key));
    }
    engine_recon_merge_order(refs, n);
    for (size_t i = 0; i < n; i++) {
        const char *name = refs[i].name;
        json_t *d = refs[i].data;
        char ph;
        uint32_t idx;
        unsigned att;
        struct taskmsg_run run;
        struct drv_err err;
        if (taskmsg_run_name_parse(name, &ph, &idx, &att) != 0 || ph != p->phase || idx >= p->n ||
            taskmsg_run_of(d, &run, &err) != 0)
            continue;
        const struct planner_task *t = &p->plan->tasks[idx];
        struct engine_recon_run rr = {
            .state = p->recs[idx].state,
            .current = att == p->recs[idx].attempt,
            .ended = run.ended,
            .ok = run.ok,
            .is_create = t->action == PLANNER_ACT_CREATE,
        };
        if (engine_recon_merge(&rr) && t->node) {
            engine__result_merge(r->j, t, run.result);
            r->merged++;
        }
        taskmsg_run_clear(&run);
    }
    free(refs);
}

/* Step 4, ACTIVE: records handed over, decisions carried out, PostgreSQL rewritten. */
static void recon_apply(struct recon *r)
{
    struct ejob *j = r->j;
    struct eplan *p = j->cur;
    /* The candidates' facts from their records. */
    uint8_t *ended = xcalloc(p->n + 1, 1), *open = xcalloc(p->n + 1, 1);
    const char *name;
    json_t *d;
    json_object_foreach(r->runs, name, d)
    {
        char ph;
        uint32_t idx;
        unsigned att;
        if (taskmsg_run_name_parse(name, &ph, &idx, &att) != 0 || ph != p->phase || idx >= p->n ||
            att != p->recs[idx].attempt)
            continue;
        json_t *st = json_object_get(d, "status");
        if (json_is_string(st))
            ended[idx] = 1;
        else
            open[idx] = 1;
    }
    enum engine_recon_action *act = xcalloc(p->n + 1, sizeof(*act));
    for (uint32_t i = 0; r->n_cand && i < p->n; i++) {
        if (!r->cand[i])
            continue;
        struct engine_recon_facts f = {j->st.phase, p->recs[i].state, false, ended[i], open[i]};
        act[i] = engine_recon_task(&f);
    }
    /* Records nobody will follow: seen as they are, so that the commit pipeline writes
       their attempt rows and then deletes them (a lost attempt's too). The others, of
       tasks in flight, are read and followed by run.c. */
    size_t handed = 0;
    json_object_foreach(r->runs, name, d)
    {
        char ph;
        uint32_t idx;
        unsigned att;
        if (taskmsg_run_name_parse(name, &ph, &idx, &att) != 0 || strmap_get(j->runs, name))
            continue;
        struct eplan *q = recon_plan(j, ph);
        bool in_flight =
            q == p && idx < p->n && att == p->recs[idx].attempt &&
            (p->recs[idx].state == ENGINE_TS_QUEUED || p->recs[idx].state == ENGINE_TS_RUNNING);
        if (in_flight && act[idx] != ENGINE_RECON_LOST)
            continue;
        struct erun *run = xcalloc(1, sizeof(*run));
        run->j = j;
        run->name = xstrdup(name);
        run->path = zkpath_job_run(NULL, 0, j->id, name);
        run->phase = ph;
        run->idx = idx;
        run->attempt = att;
        run->data = json_incref(d);
        run->started = true;
        run->ended = json_is_string(json_object_get(d, "status"));
        strmap_put(j->runs, name, run);
        handed++;
    }
    size_t n_put = 0, n_wd = 0, n_lost = 0;
    for (uint32_t i = 0; r->n_cand && i < p->n && p == j->cur; i++) {
        if (act[i] == ENGINE_RECON_NONE)
            continue;
        log_info(MOD, "event=task-reconciled job=%s task=%s attempt=%u action=%s", j->id,
                 p->plan->tasks[i].id, p->recs[i].attempt, engine_recon_name(act[i]));
        switch (act[i]) {
        case ENGINE_RECON_PUT:
            /* The same attempt again: its key is free; the put goes with its chunk. */
            engine__task_touch(p, i);
            engine__commit_retry(j, i);
            n_put++;
            break;
        case ENGINE_RECON_WITHDRAWN:
            engine__task_event(j, p, i, ENGINE_TEV_WITHDRAWN);
            n_wd++;
            break;
        case ENGINE_RECON_LOST:
            engine__task_event(j, p, i, ENGINE_TEV_FAIL);
            n_lost++;
            break;
        default:
            break;
        }
    }
    free(ended);
    free(open);
    free(act);
    /* PostgreSQL from the log: every task row that is not waiting, the rollback plan's rows
       (inserted if missing), the key-values merged (engine__result_merge queued them). */
    size_t rows = 0;
    struct eplan *plans[2] = {&j->fwd, &j->rb};
    for (int k = 0; k < 2; k++)
        for (uint32_t i = 0; plans[k]->plan && i < plans[k]->n; i++)
            if (plans[k]->recs[i].state != ENGINE_TS_WAITING &&
                plans[k]->plan->tasks[i].action != PLANNER_ACT_ANCHOR) {
                engine__task_pg_touch(plans[k], i); /* not its chunk: ZooKeeper has it */
                rows++;
            }
    if (j->rb.plan)
        engine__commit_rollback_rows(j);
    log_info(MOD,
             "event=job-reconciled job=%s phase=%s rows=%zu runs=%zu handed=%zu merged=%zu "
             "put=%zu withdrawn=%zu lost=%zu",
             j->id, engine_phase_name(j->st.phase), rows, json_object_size(r->runs), handed,
             r->merged, n_put, n_wd, n_lost);
}

static void resume_active(struct recon *r)
{
    struct ejob *j = r->j;
    engine__job_activate(j, true);
    recon_apply(r);
    engine__assign_resumed(j);
    recon_free(r);
    log_info(MOD, "event=job-resumed job=%s phase=%s node=%s done=%zu in_flight=%zu", j->id,
             engine_phase_name(j->st.phase), j->e->node_id, j->cur->done, j->cur->in_flight);
    engine__observe_takeover(j);
    /* The last owner decided the end but died before its final write: write it now (after
       what recon_apply queued: the final write waits for it). */
    if (engine_phase_final(j->st.phase))
        engine__job_finish(j);
    else
        engine__job_event(j, engine_resume_event(j->st.phase));
    engine__kick(j);
}

static void recon_confirmed(struct recon *r)
{
    resume_active(r);
}

struct key_read {
    struct recon *r;
    uint32_t idx;
    char *key_path;  /* queues/<tenant>/<class>/keys/<key> */
    char *item_path; /* the item its record names */
    int version;     /* the key record's */
};

enum key_found { KEY_ITEM_THERE, KEY_ITEM_GONE, KEY_READ_FAILED };

static void key_read_end(struct key_read *x, enum key_found f)
{
    struct recon *r = x->r;
    struct ejob *j = r->j;
    if (f == KEY_ITEM_GONE) {
        r->cand[x->idx] = 1;
        r->n_cand++;
    } else if (f == KEY_READ_FAILED) {
        r->failed++; /* the job is let go and resumed again later */
    }
    free(x->key_path);
    free(x->item_path);
    free(x);
    if (--r->left == 0)
        recon_step_done(r);
    engine__job_unref(j);
}

static void recon_key_read(int rc, const char *data, int version, void *arg);

/*
 * The stale key record is gone (or was already): its task's item is gone, a candidate.
 * Already gone (ZNONODE on the delete: someone else removed it) is the state the delete
 * wanted; an answer lost (DRV_EAGAIN) is settled by reading the record again (gone: a
 * candidate; there: its item read and the delete sent again). Only a lock not held or a
 * record rewritten meanwhile (a new put's, ZBADVERSION) lets the job go: before, every
 * failure did, and the next owner built the plan again (issue 33 item 5).
 */
static void stale_key_deleted(const struct coord_txn_result *res, void *arg)
{
    struct key_read *x = arg;
    struct ejob *j = x->r->j;
    bool gone =
        res->rc == 0 || (res->rc == DRV_ECONFLICT && res->failed_op == 0 && res->zrc == ZNONODE);
    if (!gone)
        log_warn(MOD, "event=stale-key-delete-failed job=%s key=%s error=%s op=%d", j->id,
                 x->key_path, drv_strerror(res->rc), res->failed_op);
    if (res->rc == DRV_EAGAIN && j->own == EJ_LOADING) {
        free(x->item_path);
        x->item_path = NULL;
        coord_get(j->e->zk, x->key_path, recon_key_read, x);
        return;
    }
    key_read_end(x, gone ? KEY_ITEM_GONE : KEY_READ_FAILED);
}

/*
 * The item a key record names, read: there, nothing to do. Gone (deleted behind the queue's
 * back: an operator, a half-done clean-up), the key record is stale and would refuse the put
 * of the same key for ever: it is deleted, fenced by the job's lock and at the version read,
 * so that the task is a candidate like one whose key is gone too.
 */
static void recon_item_read(int rc, const char *data, int version, void *arg)
{
    struct key_read *x = arg;
    struct ejob *j = x->r->j;
    (void)data;
    (void)version;
    if (rc != DRV_ENOENT || j->own != EJ_LOADING || !j->lock) {
        key_read_end(x, rc == 0 ? KEY_ITEM_THERE : KEY_READ_FAILED);
        return;
    }
    log_warn(MOD, "event=stale-queue-key job=%s key=%s item=%s", j->id, x->key_path, x->item_path);
    /* Test hook (DROVER_FAULT=stop-before-stale-delete, docs/testing.md): the process stops
       itself once, here, between the read and the delete, so that a test can move the lock
       to another owner meanwhile; continued, it sends the delete as it would have
       (engine_stale_key_race: fenced by the lock it no longer holds, it must fail). */
    static bool stopped_once;
    const char *fault = getenv("DROVER_FAULT");
    if (fault && strcmp(fault, "stop-before-stale-delete") == 0 && !stopped_once) {
        stopped_once = true;
        log_warn(MOD, "event=fault-injected fault=stop-before-stale-delete job=%s key=%s", j->id,
                 x->key_path);
        raise(SIGSTOP);
    }
    struct coord_txn *t = coord_txn_new();
    coord_txn_delete(t, x->key_path, x->version);
    coord_txn_commit(j->e->zk, t, j->lock, stale_key_deleted, x);
}

/*
 * The slot a key record names (assign.c: the attempt was written into a worker's slot), read:
 * holding that very attempt's key, it runs there (adopted: its outcome, or its worker's end,
 * ends it); anything else (freed, another task, gone with its worker's session) and the key
 * record is stale, as a key record whose item is gone: deleted, fenced, a candidate.
 */
static void recon_slot_read(int rc, const char *data, int version, void *arg)
{
    struct key_read *x = arg;
    struct ejob *j = x->r->j;
    if (rc != 0 && rc != DRV_ENOENT) {
        key_read_end(x, KEY_READ_FAILED);
        return;
    }
    const char *key = strrchr(x->key_path, '/') + 1;
    json_t *d = rc == 0 ? json_loads(data ? data : "", 0, NULL) : NULL;
    const char *held = json_string_value(json_object_get(d, "key"));
    if (held && strcmp(held, key) == 0 && j->own == EJ_LOADING) {
        struct eplan *p = j->cur;
        engine__assign_adopt(j, strrchr(x->item_path, '/') + 1, version, p->phase, x->idx,
                             p->recs[x->idx].attempt);
        json_decref(d);
        key_read_end(x, KEY_ITEM_THERE);
        return;
    }
    json_decref(d);
    recon_item_read(DRV_ENOENT, NULL, 0, x); /* stale: deleted like a gone item's */
}

static void recon_key_read(int rc, const char *data, int version, void *arg)
{
    struct key_read *x = arg;
    struct recon *r = x->r;
    if (rc != 0) {
        key_read_end(x, rc == DRV_ENOENT ? KEY_ITEM_GONE : KEY_READ_FAILED);
        return;
    }
    json_t *d = json_loads(data ? data : "", 0, NULL);
    const char *slot = json_string_value(json_object_get(d, "slot"));
    if (slot && !strchr(slot, '/') && *slot) {
        const char *keys = strstr(x->key_path, "/keys/");
        x->item_path = xasprintf("%.*s/slots/%s", (int)(keys - x->key_path), x->key_path, slot);
        x->version = version;
        json_decref(d);
        coord_get(r->j->e->zk, x->item_path, recon_slot_read, x);
        return;
    }
    const char *item = json_string_value(json_object_get(d, "item"));
    if (!item || strstr(item, "..")) {
        json_decref(d);
        key_read_end(x, KEY_READ_FAILED); /* not a record coord wrote: an operator must look */
        return;
    }
    const char *keys = strstr(x->key_path, "/keys/");
    x->item_path = xasprintf("%.*s/items/%s", (int)(keys - x->key_path), x->key_path, item);
    x->version = version;
    json_decref(d);
    coord_get(r->j->e->zk, x->item_path, recon_item_read, x);
}

static void recon_keys_read(struct recon *r)
{
    if (r->n_cand == 0) {
        resume_active(r);
        return;
    }
    r->confirm = true; /* step 3 */
    recon_read_runs(r, recon_confirmed);
}

/* Step 2: the queue's key record of each 'q' task's current attempt. */
static void recon_check_items(struct recon *r)
{
    struct ejob *j = r->j;
    struct eplan *p = j->cur;
    recon_merge(r, &j->rb); /* step 1 for the rollback plan (none: nothing) */
    r->cand = xcalloc(p->n + 1, 1);
    r->done = recon_keys_read;
    if (engine_phase_final(j->st.phase)) {
        resume_active(r); /* nothing is in flight in a final phase */
        return;
    }
    char *qpath = zkpath_queue(NULL, 0, j->tenant, j->cls);
    r->left = 1;
    for (uint32_t i = 0; i < p->n; i++) {
        if (p->recs[i].state != ENGINE_TS_QUEUED && p->recs[i].state != ENGINE_TS_RUNNING)
            continue;
        char key[80];
        taskmsg_key(key, sizeof(key), j->id, p->phase, i, p->recs[i].attempt);
        struct key_read *x = xcalloc(1, sizeof(*x));
        x->r = r;
        x->idx = i;
        x->key_path = xasprintf("%s/keys/%s", qpath, key);
        r->left++;
        engine__job_ref(j);
        coord_get(j->e->zk, x->key_path, recon_key_read, x);
    }
    free(qpath);
    if (--r->left == 0)
        recon_step_done(r);
}

/* A plan's task log chunks are read: whether the plan can go on (else the job is let go). */
static bool chunks_ready(struct ejob *j, struct eplan *p, int failed)
{
    if (j->own != EJ_LOADING)
        return false;
    struct drv_err err;
    if (failed >= CHUNK_CORRUPT) {
        engine__job_unresumable(j, p->phase == 'f' ? "the task log cannot be read"
                                                   : "the rollback's task log cannot be read");
        return false;
    }
    if (failed) {
        log_error(MOD, "event=job-resume-failed job=%s", j->id); /* tried again */
        engine__job_release(j);
        return false;
    }
    if (engine__plan_exec(p, &err) != 0) {
        engine__job_unresumable(j, err.msg);
        return false;
    }
    return true;
}

static struct recon *recon_of(struct ejob *j); /* the reconciliation under way */

static void rb_chunks_read(struct ejob *j, int failed)
{
    struct recon *r = recon_of(j);
    if (chunks_ready(j, &j->rb, failed))
        recon_check_items(r);
    else
        recon_free(r);
}

/* Step 1 for the forward plan done: the rollback plan (from the log and the key-values),
   its log, then step 2. */
static void recon_runs_read(struct recon *r)
{
    struct ejob *j = r->j;
    struct drv_err err;
    j->cur = &j->fwd;
    recon_merge(r, &j->fwd);
    engine__nodes_refresh(j); /* the confirms the log says succeeded */
    if (j->st.rb_tasks > 0 || engine_phase_rollback(j->st.phase)) {
        if (engine__job_rollback_plan(j, &err) != 0) {
            recon_free(r);
            engine__job_unresumable(j, err.msg);
            return;
        }
        j->cur = &j->rb;
        j->recon = r;
        read_chunks(j, &j->rb, rb_chunks_read);
        return;
    }
    recon_check_items(r);
}

static struct recon *recon_of(struct ejob *j)
{
    struct recon *r = j->recon;
    j->recon = NULL;
    return r;
}

static void fwd_chunks_read(struct ejob *j, int failed)
{
    if (!chunks_ready(j, &j->fwd, failed))
        return;
    struct recon *r = xcalloc(1, sizeof(*r));
    r->j = j;
    r->runs = json_object();
    r->written = json_object();
    recon_read_runs(r, recon_runs_read);
}

static void resume_built(void *arg)
{
    struct engine__build *b = arg;
    struct ejob *j = b->j;
    if (!engine__build_landed(b))
        return;
    if (b->rc || strcmp(b->out.sha, j->st.plan_sha) != 0) {
        /* Not the plan the job runs: a newer or older planner, inputs or a state that were
         * changed. Never guess, and never loop: the job ends, saying why. */
        char why[200];
        if (b->rc)
            snprintf(why, sizeof(why), "its plan cannot be made again: %s", b->err.msg);
        else
            snprintf(why, sizeof(why),
                     "the plan made again from its inputs differs from the one it runs "
                     "(digest %.12s, not %.12s): a changed planner or changed inputs",
                     b->out.sha, j->st.plan_sha);
        log_error(MOD, "event=job-plan-mismatch job=%s error=\"%s\"", j->id, why);
        engine__build_free(b);
        engine__job_unresumable(j, why);
        engine__job_unref(j);
        return;
    }
    j->po = b->out;
    memset(&b->out, 0, sizeof(b->out));
    engine__build_free(b);
    struct drv_err err;
    if (engine__plan_init(&j->fwd, 'f', j->po.plan, NULL, &err) != 0) {
        engine__job_release(j);
        engine__job_unref(j);
        return;
    }
    json_t *snap = json_object_get(j->job, "snapshot");
    j->snapshot = json_is_object(snap) ? json_incref(snap) : json_deep_copy(j->cluster);
    engine__nodes_init(j);
    j->ctx = engine__job_ctx_make(j);
    read_chunks(j, &j->fwd, fwd_chunks_read);
    engine__job_unref(j);
}

void engine__job_resume(struct ejob *j)
{
    if (!j->inputs) {
        engine__job_unresumable(j, "its pinned inputs are missing");
        return;
    }
    engine__build_start(j, true, resume_built);
}
