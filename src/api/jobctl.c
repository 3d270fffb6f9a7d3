/*
 * jobctl: the API's side of the engine, in ZooKeeper.
 *
 * A job recorded in PostgreSQL is announced as /drover/jobs/<id> (after the
 * commit, on the loop), so that the member the ring names for it takes it at
 * once. If ZooKeeper cannot be reached the request still succeeds: the job
 * is in the system of record, and every engine's janitor announces the open
 * jobs of its share of the ring that have no znode (engine/janitor.c).
 *
 * A user's pause, resume or cancel is recorded in jobs.control, then written
 * to /drover/jobs/<id>/control, which the owner watches. The owner reads
 * jobs.control too when it takes a job, so a request whose znode write
 * failed is not lost either.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api_int.h"
#include "coord.h"
#include "log.h"
#include "xalloc.h"
#include "zkpath.h"

#define MODULE "api"

static void replied(const struct coord_txn_result *r, void *arg)
{
    struct call *c = arg;
    /* DRV_ECONFLICT: it exists already (announced by the janitor, say): fine. */
    if (r->rc && r->rc != DRV_ECONFLICT)
        log_warn(MODULE, "event=job-announce-failed job=%s error=%s (the janitor announces it)",
                 json_string_value(json_object_get(c->loop_data, "id")), drv_strerror(r->rc));
    api__reply(c);
}

static int announce_on_loop(struct call *c)
{
    struct coord_session *zk = api__zk(c->api);
    const char *id = json_string_value(json_object_get(c->loop_data, "id"));
    if (!zk || !id)
        return 0;
    char path[96];
    zkpath_job(path, sizeof(path), id);
    json_t *d = json_pack("{s:i, s:O, s:O, s:O, s:O, s:I}", "v", 1, "tenant",
                          json_object_get(c->loop_data, "tenant"), "tenant_id",
                          json_object_get(c->loop_data, "tenant_id"), "cluster",
                          json_object_get(c->loop_data, "cluster"), "op",
                          json_object_get(c->loop_data, "op"), "created", (json_int_t)time(NULL));
    char *data = json_dumps(d, JSON_COMPACT);
    json_decref(d);
    struct coord_txn *t = coord_txn_new();
    coord_txn_create(t, path, data, 0);
    free(data);
    coord_txn_commit(zk, t, NULL, replied, c);
    return 1;
}

void api__announce(struct call *c, const char *job_id, const char *cluster_id, const char *op)
{
    json_decref(c->loop_data);
    c->loop_data = json_pack("{s:s, s:s, s:s, s:s, s:s}", "id", job_id, "tenant", c->who.tenant,
                             "tenant_id", c->who.tenant_id, "cluster", cluster_id, "op", op);
    c->on_loop = announce_on_loop;
}

/* ---- control ------------------------------------------------------------------------- */

struct control {
    struct call *c;
    char path[96];
};

static void control_written(int rc, void *arg)
{
    struct control *w = arg;
    if (rc)
        log_warn(MODULE,
                 "event=job-control-znode-failed path=%s error=%s (the owner reads "
                 "jobs.control when it takes the job)",
                 w->path, drv_strerror(rc));
    api__reply(w->c);
    free(w);
}

static int control_on_loop(struct call *c)
{
    struct coord_session *zk = api__zk(c->api);
    const char *id = json_string_value(json_object_get(c->loop_data, "id"));
    const char *want = json_string_value(json_object_get(c->loop_data, "want"));
    if (!zk || !id || !want)
        return 0;
    struct control *w = xcalloc(1, sizeof(*w));
    w->c = c;
    zkpath_job_control(w->path, sizeof(w->path), id);
    json_t *d =
        json_pack("{s:s, s:s, s:I}", "want", want, "by", c->who.user, "at", (json_int_t)time(NULL));
    char *data = json_dumps(d, JSON_COMPACT);
    json_decref(d);
    /* The announcement may be gone (the job ended meanwhile): then nothing to tell. */
    coord_upsert(zk, w->path, data, control_written, w);
    free(data);
    return 1;
}

void api__control(struct call *c, const char *job_id, const char *want)
{
    json_decref(c->loop_data);
    c->loop_data = json_pack("{s:s, s:s}", "id", job_id, "want", want);
    c->on_loop = control_on_loop;
}
