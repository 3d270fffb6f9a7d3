/*
 * drover-worker: a stateless worker (the seeds' "provisioner").
 *
 * It joins the fleet as an ephemeral member znode under
 * /drover/members/worker, serves the task queues of one tenant and its
 * worker classes (src/worker: take, record the attempt, run the plugin,
 * complete with the outcome). It keeps no state of its own: a worker that
 * dies loses nothing (its claims on queue items vanish with its ZooKeeper
 * session and the items go back to the queue; its plugins die with it).
 *
 * SIGTERM/SIGINT, or an operator's `drover worker drain ID` (the API writes
 * /drover/control/worker/<id> naming this process, which watches it): stop
 * taking; running tasks have worker.grace to finish, then their plugins are
 * killed and their items handed back; then the member znode goes and the
 * process exits 0. A second signal leaves at once.
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
#include "fault.h"
#include "log.h"
#include "loopwatch.h"
#include "worker_conf.h"
#include "sdnotify.h"
#include "seal.h"
#include "worker.h"
#include "taskmsg.h"
#include "xalloc.h"
#include "zkpath.h"

#define MODULE "worker"

struct node {
    struct worker_conf conf;
    struct event_base *base;
    struct coord_session *zk;
    struct coord_member *member;
    struct coord_control *control;
    struct worker *worker;
    struct event *sig_term, *sig_int;
    json_t *member_data; /* what the member znode says; "draining" is added on the way out */
    struct worker_rejoin rejoin; /* worker.session_file (src/worker/rejoin.c) */
    bool stopping;
};

/* Each new session goes into worker.session_file, for the next start after a crash. */
static void on_zk_state(struct coord_session *s, enum coord_state st, void *arg)
{
    struct node *w = arg;
    if (st == COORD_CONNECTED)
        worker_rejoin_record(&w->rejoin, s);
}

static void leave(struct node *w)
{
    coord_member_leave(w->member);
    w->member = NULL;
    event_base_loopexit(w->base, NULL);
}

static void on_stopped(void *arg)
{
    leave(arg);
}

/* Tell the group this worker takes nothing more: the engine's watchdog then no longer counts
   it as serving its tenant and class (a job whose only worker drains says so at once). */
static void say_draining(struct node *w)
{
    if (!w->member || !w->member_data)
        return;
    json_object_set_new(w->member_data, "draining", json_true());
    char *json = json_dumps(w->member_data, JSON_COMPACT | JSON_SORT_KEYS);
    coord_member_update(w->member, json, NULL, NULL);
    free(json);
}

static void on_control(const char *want, const char *by, void *arg)
{
    struct node *w = arg;
    char q[200];
    if (strcmp(want, "drain") != 0 || w->stopping || !w->worker)
        return;
    log_info(MODULE, "event=draining by=%s running=%zu", log_quote(by, q, sizeof(q)),
             worker_running(w->worker));
    w->stopping = true;
    sdnotify("STOPPING=1");
    say_draining(w);
    worker_stop(w->worker, on_stopped, w);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    struct node *w = arg;
    sdnotify("STOPPING=1");
    log_info(MODULE, "event=stopping signal=%s running=%zu", sig == SIGTERM ? "TERM" : "INT",
             w->worker ? worker_running(w->worker) : (size_t)0);
    if (w->stopping || !w->worker) {
        leave(w);
        return;
    }
    w->stopping = true;
    say_draining(w);
    worker_stop(w->worker, on_stopped, w);
}

static void on_joined(int rc, void *arg)
{
    if (rc == 0) {
        log_info(MODULE, "event=joined group=worker");
        sdnotify("READY=1"); /* a Type=notify unit is up (conf/systemd) */
    } else
        log_error(MODULE, "event=join_failed group=worker error=%s", drv_strerror(rc));
}

static int run(struct node *w)
{
    struct drv_err err;
    drv_err_clear(&err);
    char q[600];
    /* With its tenant's identity (zookeeper.acl_owner names droverd's), what the worker
       creates grants droverd all and its tenant's workers what they need (docs/zookeeper-tree.md
       "ACLs"). */
    w->conf.prog.zk.session.acl_tenant = w->conf.worker.tenant;
    /* A restart after a crash: end the dead one's session first (rejoin.c). */
    if (worker_rejoin_open(w->conf.worker.session_file, &w->conf.prog.zk.session, &w->rejoin,
                           &err) != 0) {
        log_error(MODULE, "event=config_failed error=%s", log_quote(err.msg, q, sizeof(q)));
        return 1;
    }
    w->conf.prog.zk.session.on_state = on_zk_state;
    w->conf.prog.zk.session.arg = w;
    if (prog_zk_connect(w->base, &w->conf.prog, MODULE, &w->zk) != 0)
        return 1;
    worker_rejoin_record(&w->rejoin, w->zk);
    char host[256] = "";
    gethostname(host, sizeof(host) - 1);
    json_t *classes = json_array();
    for (const char *c = w->conf.worker.classes, *e; c && *c; c = e ? e + 1 : NULL) {
        e = strchr(c, ',');
        char *one = e ? xstrndup(c, (size_t)(e - c)) : xstrdup(c);
        json_array_append_new(classes, json_string(one));
        free(one);
    }
    time_t started = time(NULL);
    /* "slots": this worker takes tasks assigned to its slots (slot.c; worker.slots, off by
       default), and droverd assigns to a queue's workers only when each of them says so
       (DROVER_FAULT=worker-old-build: a build before slots, for the tests). */
    char *old_build = fault_arg("worker-old-build");
    json_t *data = json_pack(
        "{s:s, s:s, s:s, s:s, s:o, s:I, s:I, s:I, s:s, s:I, s:s, s:i}", "id", w->conf.prog.node_id,
        "kind", "worker", "tenant", w->conf.worker.tenant, "class", w->conf.worker.classes,
        "classes", classes, "concurrency", (json_int_t)w->conf.worker.concurrency, "capacity",
        (json_int_t)w->conf.worker.concurrency, "pid", (json_int_t)getpid(), "host", host,
        "started", (json_int_t)started, "version", DROVER_VERSION,
        /* the queue items' format it reads up to: droverd writes what every worker reads */
        "taskmsg", TASKMSG_ITEM_VERSION);
    if (!old_build && w->conf.worker.slots)
        json_object_set_new(data, "slots", json_integer(1));
    free(old_build);
    char *json = json_dumps(data, JSON_COMPACT | JSON_SORT_KEYS);
    w->member_data = data;
    w->member =
        coord_member_join(w->zk, ZKPATH_MEMBERS_WORKER, w->conf.prog.node_id, json, on_joined, w);
    free(json);
    unsigned char key[32];
    bool has_key = false;
    if (*w->conf.worker.fleet_key_file) {
        log_error(MODULE, "event=config_failed error=%s",
                  log_quote("secrets.key_file: a worker never holds the fleet key; give it its "
                            "tenant's key as secrets.tenant_key_file (drover key derive)",
                            q, sizeof(q)));
        return 1;
    }
    if (*w->conf.worker.secrets_key_file) {
        if (seal_key_load("secrets.tenant_key_file", w->conf.worker.secrets_key_file, key, &err) !=
            0) {
            log_error(MODULE, "event=config_failed error=%s", log_quote(err.msg, q, sizeof(q)));
            return 1;
        }
        has_key = true;
    }
    struct worker_opts wo = w->conf.worker;
    wo.id = w->conf.prog.node_id;
    wo.key = has_key ? key : NULL;
    wo.zk_hosts = w->conf.prog.zk.session.hosts;
    wo.zk_digest_file = w->conf.prog.zk.digest_file;
    wo.zk_acl_owner = w->conf.prog.zk.session.acl_owner;
    wo.zk_acl_readers = w->conf.prog.zk.session.acl_readers;
    wo.version = DROVER_VERSION;
    wo.hold_fd = w->rejoin.fd;
    w->worker = worker_new(w->base, w->zk, &wo, &err);
    explicit_bzero(key, sizeof(key));
    if (!w->worker) {
        log_error(MODULE, "event=worker_failed error=%s", log_quote(err.msg, q, sizeof(q)));
        return 1;
    }
    char inc[400];
    coord_control_incarnation(inc, sizeof(inc), host, (long long)getpid(), (long long)started);
    w->control = coord_control_watch(w->zk, "worker", w->conf.prog.node_id, inc, on_control, w);
    w->sig_term = evsignal_new(w->base, SIGTERM, on_signal, w);
    w->sig_int = evsignal_new(w->base, SIGINT, on_signal, w);
    event_add(w->sig_term, NULL);
    event_add(w->sig_int, NULL);
    log_info(MODULE, "event=serving node=%s tenant=%s class=%s", w->conf.prog.node_id,
             w->conf.worker.tenant, w->conf.worker.classes);
    event_base_dispatch(w->base);
    log_info(MODULE, "event=stopped node=%s", w->conf.prog.node_id);
    return 0;
}

/* drover-worker(8) and drover-worker.conf(5) beyond the tables (progconf.h). */
static const char *const doc_description[] = {
    "drover-worker is a stateless worker of Drover, a cluster orchestrator. It serves the task "
    "queues of one tenant and its worker classes in ZooKeeper: it takes a task, records the "
    "attempt, runs the plugin the task names (a provider that makes machines, an automator that "
    "installs and runs services on them) as a child process with the task on its standard "
    "input, and completes the task with the plugin's result. Plugins are directories under "
    "worker.plugin_dir, each with its plugin.json; they run as their tenant's own "
    "unprivileged uid (worker.plugin_uids).",
    "Workers join and leave freely: one that dies loses its claims with its ZooKeeper session "
    "and its tasks run again elsewhere. Under systemd (drover-worker.service) it runs as the "
    "user drover, Type=notify: READY=1 once it has joined, STOPPING=1 when SIGTERM starts its "
    "drain.",
    NULL,
};
static const struct prog_doc_item doc_signals[] = {
    {"SIGTERM, SIGINT",
     "drain: take nothing new, let the running tasks finish within worker.grace, then kill "
     "the plugins still running and hand their tasks back to the queue (another worker takes "
     "them), leave and exit 0. A second signal leaves at once. drover worker drain asks the same "
     "from anywhere. This is how systemctl stop, restart and a package upgrade stop it."},
    {"SIGPIPE", "ignored"},
    {NULL, NULL},
};
static const struct prog_doc_item doc_files[] = {
    {"/etc/drover/drover-worker.conf", "the configuration (drover-worker.conf(5))"},
    {"/usr/lib/drover/plugins", "the plugins the packages ship (worker.plugin_dir)"},
    {"/var/lib/drover-worker", "resources synced from droverd (worker.state_dir)"},
    {NULL, NULL},
};
static const struct prog_doc doc = {
    .summary = "Drover worker",
    .description = doc_description,
    .signals = doc_signals,
    .files = doc_files,
    .conf_summary = "configuration of the Drover worker drover-worker",
    .conf_path = "/etc/drover/drover-worker.conf",
};

int main(int argc, char **argv)
{
    struct node w;
    memset(&w, 0, sizeof(w));
    int rc = prog_start(argc, argv, "drover-worker", "worker", &doc, worker_conf_keys(), &w.conf,
                        &w.conf.prog, NULL);
    if (rc >= 0)
        return rc;
    w.base = event_base_new();
    struct loopwatch *watch = loopwatch_new(w.base, "worker", LOOPWATCH_WARN_MS);
    rc = run(&w);
    if (w.sig_term)
        event_free(w.sig_term);
    if (w.sig_int)
        event_free(w.sig_int);
    coord_control_free(w.control);
    worker_free(w.worker);
    coord_member_leave(w.member);
    json_decref(w.member_data);
    coord_session_free(w.zk);
    worker_rejoin_close(&w.rejoin);
    loopwatch_free(watch);
    event_base_free(w.base);
    config_free(worker_conf_keys(), &w.conf);
    return rc;
}
