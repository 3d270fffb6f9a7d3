/*
 * janitor: periodic duties, each member for its share of the ring (seed 003).
 *
 * Announcements: a job whose API node could not write /drover/jobs/<id>
 * (ZooKeeper down at that moment, or the node died between its commit and
 * the announcement) is still open in PostgreSQL. Every few seconds each
 * engine reads the open jobs and announces those that the ring gives it and
 * that have no znode. Two members never announce the same job in one view
 * of the ring, and an announcement that exists already is simply there
 * (the create fails harmlessly), so a job is announced once.
 *
 * Control requests: a pause, resume or cancel is written to jobs.control,
 * then to the job's control znode, which the owner watches; when the znode
 * write failed (ZooKeeper unreachable for a moment, the owner's session
 * surviving) nothing would tell the owner. The same scan reads jobs.control
 * of the jobs this node owns and applies it. PostgreSQL is written first, so
 * it is never older than the znode, except for a request that came after
 * the scan began: a job whose znode was read since then is left alone.
 *
 * Cost: one indexed query (jobs_open) per period per member; a create per
 * job found missing, which is none in a healthy fleet.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zookeeper/zookeeper.h>

#include "clock.h"
#include "coord.h"
#include "engine_int.h"
#include "log.h"
#include "store.h"
#include "strmap.h"
#include "xalloc.h"
#include "zkpath.h"

#define MOD "engine"

struct scan {
    struct engine *e;
    json_t *rows;
    int64_t t0; /* when the scan was asked for (monotonic ms) */
};

static int scan_work(PGconn *conn, void *arg, struct drv_err *err)
{
    struct scan *s = arg;
    return store_query_json(conn,
                            "SELECT j.id::text AS id, j.tenant_id::text AS tenant_id,"
                            " t.name AS tenant, j.cluster_id::text AS cluster, j.operation AS op,"
                            " j.control"
                            " FROM jobs j JOIN tenants t ON t.id = j.tenant_id"
                            " WHERE j.ended_at IS NULL AND j.status NOT IN ('succeeded',"
                            " 'rolled-back', 'cancelled', 'failed', 'needs-operator')"
                            " ORDER BY j.id LIMIT 10000",
                            0, NULL, &s->rows, err);
}

struct announce {
    struct engine *e;
    char id[32];
};

static void announced(const struct coord_txn_result *r, void *arg)
{
    struct announce *a = arg;
    if (r->rc == 0) {
        log_info(MOD, "event=job-announced-by-janitor job=%s", a->id);
    } else if (r->zrc == ZNONODE) {
        /* /drover/jobs is gone: a ZooKeeper rebuilt from nothing under a droverd that stayed
           up (coord/session.c, "Giving up"). Made again; the next scan announces. */
        log_warn(MOD, "event=jobs-path-missing job=%s", a->id);
        coord_ensure_path(a->e->zk, ZKPATH_JOBS, NULL, NULL);
    }
    free(a);
}

static void scanned(int rc, const struct drv_err *err, void *arg)
{
    struct scan *s = arg;
    struct engine *e = s->e;
    e->scanning = false;
    size_t i;
    json_t *row;
    json_array_foreach(s->rows, i, row)
    {
        const char *id = json_string_value(json_object_get(row, "id"));
        struct ejob *j = id ? strmap_get(e->jobs, id) : NULL;
        const char *want = json_string_value(json_object_get(row, "control"));
        if (j && want && j->own == EJ_ACTIVE && j->control_ms < s->t0 &&
            engine__control_apply(j, want))
            log_info(MOD, "event=job-control-from-db job=%s want=%s", id, want);
        if (!id || !engine__ring_mine(e, id) || engine__announced(e, id))
            continue;
        json_t *d =
            json_pack("{s:i, s:O, s:O, s:O, s:O, s:I}", "v", 1, "tenant",
                      json_object_get(row, "tenant"), "tenant_id",
                      json_object_get(row, "tenant_id"), "cluster", json_object_get(row, "cluster"),
                      "op", json_object_get(row, "op"), "created", (json_int_t)time(NULL));
        char *data = json_dumps(d, JSON_COMPACT);
        json_decref(d);
        char path[96];
        zkpath_job(path, sizeof(path), id);
        struct coord_txn *t = coord_txn_new();
        coord_txn_create(t, path, data, 0);
        free(data);
        struct announce *a = xcalloc(1, sizeof(*a));
        a->e = e;
        snprintf(a->id, sizeof(a->id), "%s", id);
        coord_txn_commit(e->zk, t, NULL, announced, a);
    }
    json_decref(s->rows);
    free(s);
}

void engine__janitor(struct engine *e)
{
    if (e->scanning || e->stopping || !e->have_ids || coord_session_state(e->zk) != COORD_CONNECTED)
        return;
    e->scanning = true;
    struct scan *s = xcalloc(1, sizeof(*s));
    s->e = e;
    s->t0 = clock_mono_ms();
    store_submit(e->db, scan_work, scanned, s);
}
