/*
 * jobstart: a job's first start, from its rows to ACTIVE (the LOADING part of
 * job.c's diagram, when the state znode is absent; a resume is jobresume.c),
 * and the plan's build both share.
 *
 * First start: the plan is built on a thread from the rows just read
 * (engine__offload), then written to PostgreSQL (plan, inputs, snapshot, task
 * rows, the new nodes' rows), then the job's znodes are created in ZooKeeper
 * in multi-ops under the budget, the state znode last: a job whose state
 * znode exists was started whole.
 *
 * Everything here runs on the loop except the plan's build. Work that grows
 * with the cluster's size must stay linear: at 10,000 nodes a quadratic step
 * here held the loop past the session timeout (docs/threading.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <unistd.h>

#include "batch.h"
#include "commit.h"
#include "coord.h"
#include "engine_int.h"
#include "job_pg.h"
#include "log.h"
#include "model.h"
#include "nodes.h"
#include "planner.h"
#include "planner_model.h"
#include "seal.h"
#include "sshkey.h"
#include "store.h"
#include "strmap.h"
#include "taskmsg.h"
#include "xalloc.h"
#include "zkpath.h"

#define MOD "engine"
#define CTX_PART 3500

/* ---- planning --------------------------------------------------------------------------- */

static void build_run(void *arg)
{
    struct engine__build *b = arg;
    b->rc = engine__plan_build(&b->in, &b->out, &b->err);
}

/* The inputs of the plan: pinned ones on resume, else made from the rows just read. */
static json_t *make_inputs(struct ejob *j)
{
    const json_t *req = json_object_get(j->job, "request");
    const json_t *layout = json_object_get(j->cluster, "layout");
    json_t *start = json_null(), *target = json_null();
    bool create = strcmp(j->op, "create") == 0;
    if (create) {
        target = json_incref((json_t *)layout);
    } else {
        start = json_incref((json_t *)layout);
        json_t *t = json_object_get(json_object_get(req, "target"), "layout");
        if (t)
            target = json_incref(t);
    }
    json_t *subset = json_object_get(req, "services");
    const struct planner_api_op *api_op = planner_api_op(j->op);
    bool acts_on_subset = api_op && api_op->subset;
    /* The tenant's resources as they are now (null: none pushed): the job keeps this
       version to the end, whatever is pushed meanwhile (docs/worker.md "Resources"). */
    json_t *res = json_object_get(j->job, "resources");
    /* The catalogue by its version when every member reads it so (the rows are pinned once
       per version in catalogs), else its rows, as an older node reads them. */
    json_t *cat = !j->catset ? json_null()
                  : j->slim
                      ? json_pack("{s:I}", "version", (json_int_t)model_catset_version(j->catset))
                      : json_incref((json_t *)model_catset_rows(j->catset));
    return json_pack("{s:i, s:s, s:O, s:O, s:o, s:s, s:s?, s:o, s:o, s:O}", "format",
                     j->e->write_format, "op", j->op, "resources",
                     json_is_object(res) ? res : json_null(), "request", req ? req : json_null(),
                     "catalog", cat, "template", engine__row_str(j->cluster, "template"),
                     "provider", json_string_value(json_object_get(j->cluster, "provider")),
                     "start", start, "target", target, "subset",
                     acts_on_subset && json_is_array(subset) ? subset : json_null());
}

void engine__build_start(struct ejob *j, bool resuming, void (*done)(void *))
{
    struct engine__build *b = xcalloc(1, sizeof(*b));
    b->j = j;
    b->resuming = resuming;
    if (!resuming) /* decided once, by the first start (job_pg.h, struct engine__pg_start) */
        j->slim = j->e->slim_jobs;
    b->inputs = resuming ? json_incref(j->inputs) : make_inputs(j);
    b->in.set = j->catset;
    b->in.op = json_string_value(json_object_get(b->inputs, "op"));
    b->in.request = json_object_get(b->inputs, "request");
    b->in.catalog = json_object_get(b->inputs, "catalog");
    b->in.template_name = json_string_value(json_object_get(b->inputs, "template"));
    b->in.provider = json_string_value(json_object_get(b->inputs, "provider"));
    b->in.start = json_object_get(b->inputs, "start");
    b->in.target = json_object_get(b->inputs, "target");
    b->in.subset = json_object_get(b->inputs, "subset");
    /* Inputs pinned before formats were negotiated say 1. */
    json_int_t format = json_integer_value(json_object_get(b->inputs, "format"));
    b->in.format = format > 0 ? (int)format : 1;
    if (json_is_null(b->in.subset))
        b->in.subset = NULL;
    j->building = true;
    engine__job_ref(j);
    engine__offload(j->e, build_run, done, b);
}

void engine__build_free(struct engine__build *b)
{
    engine__plan_out_clear(&b->out);
    json_decref(b->inputs);
    free(b);
}

/* The job cannot even be planned: it fails at once, with the reason. */
static void fail_unplanned(struct ejob *j, const char *why)
{
    log_warn(MOD, "event=job-unplannable job=%s reason=\"%s\"", j->id, why);
    snprintf(j->st.error, sizeof(j->st.error), "no plan: %s", why);
    j->st.phase = ENGINE_PH_FAILED;
    engine__job_activate(j, false);
    engine__job_finish(j);
}

/* ---- a new job: plan, record the start, create the znodes -------------------------------- */

static void zk_init(struct ejob *j);

static void started_pg(int rc, const struct drv_err *err, void *arg)
{
    struct engine__pg_start *s = arg;
    struct ejob *j = s->j;
    if (rc == 0 && s->pin && j->catset)
        model_catset_set_pinned(j->catset); /* committed: the next start need not pin it */
    engine__pg_start_free(s);
    engine__commit_unhold(j);
    if (j->own == EJ_HANDING_OVER)
        engine__job_idle(j);
    if (j->own == EJ_LOADING) {
        if (rc == 0)
            zk_init(j);
        else if (rc == DRV_ECONFLICT)
            engine__job_lost(j, "fenced out in PostgreSQL at its start");
        else {
            log_warn(MOD, "event=job-start-failed job=%s error=\"%s\"", j->id, err->msg);
            engine__job_release(j);
        }
    }
    engine__job_unref(j);
}

json_t *engine__job_ctx_make(struct ejob *j)
{
    struct taskmsg_ctx c = {
        .clustername = engine__row_str(j->cluster, "name"),
        .template = engine__row_str(j->cluster, "template"),
        .cluster = engine__cluster_config(j),
        .provider = j->po.provider,
        .tenant = j->tenant,
        .job = j->id,
        .nodes_chunks = (int64_t)engine__nodes_chunks(j),
        /* The cluster's SSH key (its private part sealed): made by this job's start or an
         * earlier job's. */
        .ssh = j->ssh_new ? j->ssh_new
                          : json_object_get(json_object_get(j->cluster, "secrets"), "ssh"),
        .resources = json_object_get(j->inputs, "resources"), /* {"version", "sha256"}: pinned */
    };
    return taskmsg_ctx_encode(&c);
}

/* A cluster without a key gets one with its first job, when the fleet can seal it. */
static void make_cluster_key(struct ejob *j)
{
    if (json_is_object(json_object_get(json_object_get(j->cluster, "secrets"), "ssh")) ||
        !j->e->has_key)
        return;
    struct sshkey_pair kp;
    struct drv_err err;
    char comment[96];
    snprintf(comment, sizeof(comment), "drover-cluster-%s", j->cluster_id);
    if (sshkey_generate(comment, &kp, &err) != 0) {
        log_error(MOD, "event=cluster-key-failed job=%s error=\"%s\"", j->id, err.msg);
        return;
    }
    /* Sealed at its place (seal.h): the tenant's key, cluster/<name>, ssh.private_key. */
    unsigned char tkey[32];
    seal_tenant_key(j->e->key, j->tenant, tkey);
    struct seal_place at = {j->tenant, "cluster", engine__row_str(j->cluster, "name"),
                            "ssh.private_key"};
    json_t *pem = json_string(kp.private_pem);
    char *sealed = seal_value_at(tkey, &at, pem);
    json_decref(pem);
    OPENSSL_cleanse(tkey, sizeof(tkey));
    j->ssh_new = json_pack("{s:s, s:s}", "public_key", kp.public_line, "private_key", sealed);
    free(sealed);
    sshkey_pair_clear(&kp);
}

/* The start's PostgreSQL part (job_pg.h): plan, inputs, snapshot, task rows, new nodes. */
static struct engine__pg_start *start_part_new(struct ejob *j)
{
    struct engine__pg_start *s = xcalloc(1, sizeof(*s));
    s->j = j;
    snprintf(s->id, sizeof(s->id), "%s", j->id);
    snprintf(s->tenant_id, sizeof(s->tenant_id), "%s", j->tenant_id);
    snprintf(s->cluster_id, sizeof(s->cluster_id), "%s", j->cluster_id);
    snprintf(s->node, sizeof(s->node), "%s", j->e->node_id);
    s->token = j->token;
    s->zk = j->zk;
    s->slim = j->slim;
    if (j->catset) {
        snprintf(s->catalog_version, sizeof(s->catalog_version), "%lld",
                 model_catset_version(j->catset));
        if (j->slim && !model_catset_pinned(j->catset))
            s->pin = json_dumps(model_catset_rows(j->catset), JSON_COMPACT);
    }
    snprintf(s->format, sizeof(s->format), "%d", j->st.format);
    s->status =
        xstrdup(engine_phase_status(j->st.paused ? ENGINE_PH_PAUSED : ENGINE_PH_RUNNING, false));
    s->phase = xstrdup(s->status);
    s->inputs = json_dumps(j->inputs, JSON_COMPACT);
    s->plan = xstrndup(j->po.text, j->po.len);
    s->sha = xstrdup(j->po.sha);
    s->snapshot = json_dumps(j->snapshot, JSON_COMPACT);
    s->target = json_dumps(j->po.target_layout, JSON_COMPACT);
    s->task_chunks = engine__pg_task_chunks(j->po.plan, &s->n_chunks);
    /* Nodes the target has and the cluster does not (a deleted row is made again: a failed
       create's recreate reuses its ids): rows to show while they are made. */
    struct strmap *have = strmap_new(); /* linear: 10,000 nodes on each side */
    size_t i;
    json_t *row;
    json_array_foreach(json_object_get(j->cluster, "nodes"), i, row)
    {
        const char *st = json_string_value(json_object_get(row, "status"));
        const char *id = json_string_value(json_object_get(row, "id"));
        if (id && !(st && strcmp(st, "deleted") == 0))
            strmap_put(have, id, (void *)1);
    }
    json_t *nodes = json_array();
    const char *nid;
    json_t *info;
    json_object_foreach(j->po.nodeinfo, nid, info)
    {
        if (!strmap_get(have, nid))
            json_array_append_new(nodes, json_pack("{s:s, s:O, s:O, s:O}", "id", nid, "hw",
                                                   json_object_get(info, "hardwaretype"), "img",
                                                   json_object_get(info, "imagetype"), "svc",
                                                   json_object_get(info, "services")));
    }
    strmap_free(have);
    s->new_nodes = json_dumps(nodes, JSON_COMPACT);
    json_decref(nodes);
    s->cluster_status = strcmp(j->op, "create") == 0   ? "creating"
                        : strcmp(j->op, "delete") == 0 ? "deleting"
                                                       : "updating";
    s->detail = xasprintf("{\"tasks\":%u,\"operation\":\"%s\",\"plan_sha\":\"%s\"}", j->fwd.n,
                          j->op, j->po.sha);
    s->ssh = j->ssh_new ? json_dumps(j->ssh_new, JSON_COMPACT) : NULL;
    return s;
}

/* A build is back on the loop: whether the job still wants it (else it is dropped). */
bool engine__build_landed(struct engine__build *b)
{
    struct ejob *j = b->j;
    j->building = false;
    if (j->own == EJ_HANDING_OVER)
        engine__job_idle(j);
    if (j->own == EJ_LOADING)
        return true;
    engine__build_free(b);
    engine__job_unref(j);
    return false;
}

static void start_built(void *arg)
{
    struct engine__build *b = arg;
    struct ejob *j = b->j;
    if (!engine__build_landed(b))
        return;
    if (b->rc) {
        fail_unplanned(j, b->err.msg);
        engine__build_free(b);
        engine__job_unref(j);
        return;
    }
    j->po = b->out;
    memset(&b->out, 0, sizeof(b->out));
    if (j->po.dropped)
        log_warn(MOD,
                 "event=reserved-key-dropped job=%s keys=%zu first=\"%s\" why=\"a providermap "
                 "entry is the tenant's and never names a provider's fact\"",
                 j->id, j->po.dropped, j->po.dropped_key);
    json_decref(j->inputs);
    j->inputs = json_incref(b->inputs);
    engine__build_free(b);
    struct drv_err err;
    if (engine__plan_init(&j->fwd, 'f', j->po.plan, NULL, &err) != 0 ||
        engine__plan_exec(&j->fwd, &err) != 0) {
        fail_unplanned(j, err.msg);
        engine__job_unref(j);
        return;
    }
    j->cur = &j->fwd;
    j->st.format = j->po.plan->format_version;
    j->st.tasks = j->fwd.n;
    snprintf(j->st.plan_sha, sizeof(j->st.plan_sha), "%s", j->po.sha);
    j->st.cancel = json_is_string(json_object_get(j->job, "control")) &&
                   strcmp(engine__row_str(j->job, "control"), "cancel") == 0;
    j->st.paused = strcmp(engine__row_str(j->job, "control"), "pause") == 0;
    j->snapshot = json_deep_copy(j->cluster);
    json_object_del(j->snapshot, "secrets");
    engine__nodes_init(j);
    if (engine__macros_check(j, &err) != 0) {
        fail_unplanned(j, err.msg);
        engine__job_unref(j);
        return;
    }
    make_cluster_key(j);
    j->ctx = engine__job_ctx_make(j);
    /* PostgreSQL first: the plan and its inputs are what a new owner rebuilds from. */
    struct engine__pg_start *s = start_part_new(j);
    engine__commit_hold(j);
    /* With the other jobs' parts of this turn (batch.c): one transaction for all. */
    engine__batch_pg_part(j->e, ENGINE__PG_START, s, started_pg);
    /* (started_pg keeps the reference) */
}

void engine__job_start_new(struct ejob *j)
{
    const char *status = engine__row_str(j->job, "status");
    if (strcmp(engine__row_str(j->job, "control"), "cancel") == 0 &&
        strcmp(status, "pending") == 0) {
        /* Cancelled before it started: nothing ran. */
        j->st.phase = ENGINE_PH_CANCELLED;
        j->st.cancel = true;
        engine__job_activate(j, false);
        engine__job_finish(j);
        return;
    }
    /* Pending, or running with no state in ZooKeeper (its last owner died between its
     * PostgreSQL start and its ZooKeeper start): nothing was dispatched; start over. */
    engine__build_start(j, j->inputs != NULL, start_built);
}

/* ---- the job's znodes ---------------------------------------------------------------------- */

struct init {
    struct ejob *j;
    struct coord_txn **txns; /* in order: everything, then the state znode last */
    size_t n, pos;
};

static void init_next(struct init *in);

/*
 * The answer of the start's last multi-op was lost (issue 33, finding A): it applied when
 * the state znode is there with this owner's token (a multi-op applies whole, and no one
 * else writes a state under this lock). Absent, it did not apply; unreadable or someone
 * else's, the outcome stays unknown. Both start again from the lock, as a refused start
 * does (the sweep deletes what is there). Resolved by a read: before, every such loss
 * swept a started job and began it again, and a hook that lost every other answer made
 * that a loop for ever (integration/engine/owner_answer_lost.sh).
 */
static void init_state_read(int rc, const char *data, int version, void *arg)
{
    struct init *in = arg;
    struct ejob *j = in->j;
    (void)version;
    engine__commit_unhold(j);
    if (j->own == EJ_HANDING_OVER)
        engine__job_idle(j);
    if (j->own != EJ_LOADING) {
        free(in->txns);
        free(in);
        engine__job_unref(j);
        return;
    }
    json_t *st = rc == 0 ? json_loads(data, 0, NULL) : NULL;
    bool ours = st && json_integer_value(json_object_get(st, "token")) == j->token;
    json_decref(st);
    log_info(MOD, "event=job-init-resolved job=%s applied=%d rc=%s", j->id, ours, drv_strerror(rc));
    if (ours) {
        init_next(in);
    } else {
        free(in->txns);
        free(in);
        engine__job_wind_up(j, true); /* keeps the announcement, then releases */
    }
    engine__job_unref(j);
}

static void init_committed(const struct coord_txn_result *r, void *arg)
{
    struct init *in = arg;
    struct ejob *j = in->j;
    engine__commit_unhold(j);
    if (j->own == EJ_HANDING_OVER)
        engine__job_idle(j);
    if (j->own != EJ_LOADING) {
        for (size_t i = in->pos; i < in->n; i++)
            coord_txn_free(in->txns[i]);
        free(in->txns);
        free(in);
        engine__job_unref(j);
        return;
    }
    if (r->rc == 0) {
        init_next(in);
        engine__job_unref(j);
        return;
    }
    if (r->rc == DRV_EAGAIN && in->pos == in->n) {
        /* The last multi-op (the one with the state znode) may have applied with its answer
         * lost: the state znode tells (init_state_read); the reference goes with the read,
         * and a handover waits for it as for the multi-op. */
        engine__commit_hold(j);
        char *p = zkpath_job_state(NULL, 0, j->id);
        coord_sync(j->e->zk, p, NULL, NULL);
        coord_get(j->e->zk, p, init_state_read, in);
        free(p);
        return;
    }
    for (size_t i = in->pos; i < in->n; i++)
        coord_txn_free(in->txns[i]);
    free(in->txns);
    free(in);
    if (r->rc == DRV_ECONFLICT && r->failed_op < 0) {
        engine__job_lost(j, "lock lost while creating the job's znodes");
    } else {
        /* Left-overs of an earlier owner's start (znodes exist), or ZooKeeper trouble:
         * remove what is there and start again from the lock. */
        log_warn(MOD, "event=job-init-failed job=%s error=%s op=%d", j->id, drv_strerror(r->rc),
                 r->failed_op);
        engine__job_wind_up(j, true); /* keeps the announcement, then releases */
    }
    engine__job_unref(j);
}

static void init_next(struct init *in)
{
    struct ejob *j = in->j;
    if (in->pos == in->n) {
        free(in->txns);
        free(in);
        j->st_ver = 0;
        engine__job_activate(j, true);
        log_info(MOD, "event=job-started job=%s op=%s tasks=%u node=%s", j->id, j->op, j->fwd.n,
                 j->e->node_id);
        /* Test hook (DROVER_FAULT=crash-after-start): exit with the job's znodes made and
           its state still pending, before the START event's first write
           (integration/engine/start_crash.sh). */
        const char *fault = getenv("DROVER_FAULT");
        if (fault && strcmp(fault, "crash-after-start") == 0) {
            log_warn(MOD, "event=fault-injected fault=crash-after-start job=%s", j->id);
            _exit(70);
        }
        engine__job_event(j, ENGINE_EV_START);
        return;
    }
    engine__commit_hold(j);
    engine__job_ref(j);
    j->e->stats.zk_multis++;
    coord_txn_commit(j->e->zk, in->txns[in->pos++], j->lock, init_committed, in);
}

/* The creates of the job's znodes, split under the budget; the state znode last. */
static void zk_init(struct ejob *j)
{
    struct engine *e = j->e;
    struct init *in = xcalloc(1, sizeof(*in));
    in->j = j;
    char path[256];
    size_t n_txns = 0, cap = 0;
    struct coord_txn *t = coord_txn_new();
    char *ctx = json_dumps(j->ctx, JSON_COMPACT);
    size_t len = strlen(ctx);
    zkpath_job_ctx(path, sizeof(path), j->id);
    if (len <= CTX_PART) {
        coord_txn_create(t, path, ctx, 0);
    } else {
        size_t parts = (len + CTX_PART - 1) / CTX_PART;
        char head[64];
        snprintf(head, sizeof(head), "{\"v\":1,\"parts\":%zu}", parts);
        coord_txn_create(t, path, head, 0);
        for (size_t i = 0; i < parts; i++) {
            char *part = xstrndup(ctx + i * CTX_PART, CTX_PART);
            zkpath_job_ctx_part(path, sizeof(path), j->id, i);
            coord_txn_create(t, path, part, 0);
            free(part);
        }
    }
    free(ctx);
    j->subtree_made = true; /* the sweep deletes what it knows (sweep.c) */
    j->ctx_parts = len <= CTX_PART ? 0 : (len + CTX_PART - 1) / CTX_PART;
    zkpath_job_runs(path, sizeof(path), j->id);
    coord_txn_create(t, path, "{}", 0);
    zkpath_job_nodes(path, sizeof(path), j->id);
    coord_txn_create(t, path, "{}", 0);
    for (size_t k = 0; k < engine__nodes_chunks(j); k++) {
        char *text = engine__nodes_chunk(j, k);
        if (coord_txn_bytes(t) + strlen(text) + 200 > e->budget) {
            XGROW(in->txns, cap, n_txns + 1);
            in->txns[n_txns++] = t;
            t = coord_txn_new();
        }
        zkpath_job_nodes_chunk(path, sizeof(path), j->id, k);
        coord_txn_create(t, path, text, 0);
        free(text);
        engine__nodes_clean(j, k);
    }
    zkpath_job_log(path, sizeof(path), j->id);
    coord_txn_create(t, path, "{}", 0);
    for (size_t k = 0; k < j->fwd.n_chunks; k++) {
        size_t first = k * ENGINE_LOG_CHUNK;
        size_t cnt = j->fwd.n - first < ENGINE_LOG_CHUNK ? j->fwd.n - first : ENGINE_LOG_CHUNK;
        char *text = engine__log_encode(j->fwd.recs, first, cnt, j->st.format);
        if (coord_txn_bytes(t) + strlen(text) + 200 > e->budget) {
            XGROW(in->txns, cap, n_txns + 1);
            in->txns[n_txns++] = t;
            t = coord_txn_new();
        }
        zkpath_job_log_chunk(path, sizeof(path), j->id, 'f', k);
        coord_txn_create(t, path, text, 0);
        free(text);
        j->fwd.chunk_ver[k] = 0;
    }
    /* The state last: in the creates' last multi-op when it fits (a small job's znodes are
     * one round trip, and a multi-op applies whole, so the state is never there without
     * the rest), else in a multi-op of its own after them. */
    char *st = engine__state_encode(&j->st, e->node_id, j->token);
    if (coord_txn_bytes(t) + strlen(st) + 200 > e->budget) {
        XGROW(in->txns, cap, n_txns + 1);
        in->txns[n_txns++] = t;
        t = coord_txn_new();
    }
    zkpath_job_state(path, sizeof(path), j->id);
    coord_txn_create(t, path, st, 0);
    free(st);
    XGROW(in->txns, cap, n_txns + 1);
    in->txns[n_txns++] = t;
    in->n = n_txns;
    init_next(in);
}
