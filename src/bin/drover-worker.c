/*
 * drover-worker: a stateless worker (the seeds' "provisioner").
 *
 * It joins the fleet as an ephemeral member znode under
 * /drover/members/worker, serves the task queues of one tenant and worker
 * class, and leaves at once on SIGTERM. It keeps no state of its own: a
 * worker that dies loses nothing (its claims on queue items vanish with its
 * ZooKeeper session and the items go back to the queue).
 *
 * Threads: one libevent loop, as in droverd (docs/threading.md).
 */
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "coord.h"
#include "log.h"
#include "progconf.h"
#include "xalloc.h"

#define MODULE "worker"

struct worker {
    struct worker_conf conf;
    struct event_base *base;
    struct coord_session *zk;
    struct coord_member *member;
    struct event *sig_term, *sig_int;
};

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    struct worker *w = arg;
    log_info(MODULE, "event=stopping signal=%s", sig == SIGTERM ? "TERM" : "INT");
    coord_member_leave(w->member);
    w->member = NULL;
    event_base_loopexit(w->base, NULL);
}

static void on_joined(int rc, void *arg)
{
    if (rc == 0)
        log_info(MODULE, "event=joined group=worker");
    else
        log_error(MODULE, "event=join_failed group=worker error=%s", drv_strerror(rc));
}

static int run(struct worker *w)
{
    struct drv_err err;
    drv_err_clear(&err);
    char q[600];
    struct zk_digest digest;
    if (zk_digest_read(w->conf.common.zk_digest_file, &digest, &err) != 0) {
        log_error(MODULE, "event=config_failed error=%s", log_quote(err.msg, q, sizeof(q)));
        return 1;
    }
    struct coord_session_opts zo = {
        .hosts = w->conf.common.zk_hosts,
        .chroot = *w->conf.common.zk_chroot ? w->conf.common.zk_chroot : NULL,
        .digest_user = digest.user[0] ? digest.user : NULL,
        .digest_password = digest.user[0] ? digest.password : NULL,
        .session_timeout_ms = (int)w->conf.common.zk_session_ms,
    };
    w->zk = coord_session_new(w->base, &zo, &err);
    zk_digest_clear(&digest);
    if (!w->zk || coord_session_wait_connected(w->zk, 15000, &err) != 0) {
        log_error(MODULE, "event=zookeeper_failed error=%s", log_quote(err.msg, q, sizeof(q)));
        return 1;
    }
    char host[256] = "";
    gethostname(host, sizeof(host) - 1);
    json_t *data =
        json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:s, s:I}", "id", w->conf.common.node_id, "kind",
                  "worker", "tenant", w->conf.tenant, "class", w->conf.worker_class, "concurrency",
                  (json_int_t)w->conf.concurrency, "pid", (json_int_t)getpid(), "host", host,
                  "started", (json_int_t)time(NULL));
    char *json = json_dumps(data, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(data);
    w->member = coord_member_join(w->zk, "/drover/members/worker", w->conf.common.node_id, json,
                                  on_joined, w);
    free(json);
    w->sig_term = evsignal_new(w->base, SIGTERM, on_signal, w);
    w->sig_int = evsignal_new(w->base, SIGINT, on_signal, w);
    event_add(w->sig_term, NULL);
    event_add(w->sig_int, NULL);
    log_info(MODULE, "event=serving node=%s tenant=%s class=%s", w->conf.common.node_id,
             w->conf.tenant, w->conf.worker_class);
    event_base_dispatch(w->base);
    log_info(MODULE, "event=stopped node=%s", w->conf.common.node_id);
    return 0;
}

int main(int argc, char **argv)
{
    struct worker w;
    memset(&w, 0, sizeof(w));
    int rc = prog_start(argc, argv, "drover-worker", "worker", worker_conf_keys, &w.conf,
                        &w.conf.common);
    if (rc >= 0)
        return rc;
    w.base = event_base_new();
    rc = run(&w);
    if (w.sig_term)
        event_free(w.sig_term);
    if (w.sig_int)
        event_free(w.sig_int);
    coord_member_leave(w.member);
    coord_session_free(w.zk);
    event_base_free(w.base);
    config_free(worker_conf_keys, &w.conf);
    return rc;
}
