/*
 * droverd: one orchestrator node.
 *
 * N equal droverd run behind a load balancer. Each one connects to ZooKeeper
 * (membership, job ownership) and PostgreSQL (the system of record), applies
 * the database schema at start-up, and serves the HTTP API.
 *
 * Threads: everything here runs on one libevent loop. The ZooKeeper client's
 * threads and the store's pool hand their results to the loop (docs/threading.md).
 *
 * Lifecycle:
 *
 *   start --> connecting --(zk connected, schema applied)--> serving
 *   serving --drain (API: /drover/control/droverd/<id>)--> draining: the
 *       member says "draining" (so every ring steps over it and the other
 *       members contend for its jobs), /readyz answers 503 (the load
 *       balancer stops sending), requests already accepted are served, the
 *       engine hands each job over (its lock released after its last write,
 *       so the next owner takes it at once)
 *   draining --every job handed over--> drained: the member says
 *       "drained": true, "owned": 0; the process keeps running
 *   draining, drained --undrain (API)--> serving: member data and /readyz
 *       back, the engine takes its share of the ring again
 *   serving, draining --SIGTERM/SIGINT--> stopping: drain, bounded by
 *       shutdown.grace; drained --SIGTERM/SIGINT--> leaving at once
 *   stopping --every job handed over, or shutdown.grace passed--> leaving:
 *       member znode deleted, session closed, HTTP closed, exit status 0
 *   stopping --a second SIGTERM/SIGINT--> leaving at once
 *
 *   serving --PostgreSQL unreachable for postgres.lost_after while another member
 *       serves and reaches it (pg_watch)--> draining by "postgres-lost": the
 *       same drain (the jobs move to a member that can write them; /readyz is
 *       503 already, PostgreSQL being down); --PostgreSQL answers again-->
 *       serving (pg_watch's undrain). An operator's drain meanwhile makes the
 *       drain the operator's: PostgreSQL's return no longer undoes it.
 *       Without a member that reaches PostgreSQL (the database itself down, a
 *       failover) nothing moves: every write waits and retries, as before.
 *
 * The member znode carries "draining", "drained" and "owned" (jobs whose lock
 * this node holds), refreshed once a second when they change (a count that
 * only moved, neither to nor from 0 and not draining: every 10 s), so that
 * `drover members` shows them and an operator knows when a drained node may
 * be stopped.
 *
 * Signals are libevent signal events, so handlers run on the loop like
 * everything else; SIGPIPE is ignored.
 */
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "api.h"
#include "clock.h"
#include "coord.h"
#include "engine.h"
#include "fault.h"
#include "seal.h"
#include "log.h"
#include "loopwatch.h"
#include "model.h"
#include "droverd_conf.h"
#include "sdnotify.h"
#include "store.h"
#include "xalloc.h"
#include "zkpath.h"

#define MODULE "droverd"
/* How often at most a member znode is written for its owned count alone (publish). */
#define OWNED_EVERY_MS 10000

struct node {
    struct droverd_conf conf;
    struct event_base *base;
    struct api *api;
    struct store *store;
    struct coord_session *zk;
    struct coord_member *member;
    struct coord_pool_janitor *pools; /* frees released claims of shared pools */
    struct coord_control *control;
    struct engine *engine;
    struct loopwatch *watch; /* the loop's lateness: loop-stalled, drover_loop_lag_seconds */
    /* The catalogues parsed, by tenant and version: the API's and the engine's (model.h) */
    struct model_catcache *catalogs;
    struct event *sig_term, *sig_int, *grace, *publish;
    int draining;         /* out of the ring, handing over (an operator's drain or a signal) */
    int pg_out;           /* draining because PostgreSQL was lost (pg_watch undoes it) */
    int64_t pg_bad_since; /* monotonic ms PostgreSQL was first seen unhealthy; 0: healthy */
    int drained;          /* draining and nothing owned any more */
    int stopping;         /* a signal came: leave once drained or at the grace */
    time_t started;
    char host[256];
    /* the fleet key, from which each tenant's workers' ZooKeeper id is derived (zk_worker_id) */
    unsigned char zk_key[32];
    bool zk_key_ok;
    /* what the member znode says now, to write it only when it changes */
    int pub_draining, pub_drained, pub_pg;
    size_t pub_owned;
    int64_t pub_ms; /* when it was last written (monotonic) */
    bool old_build; /* test hook: member data without "keeps_runs" (member_data) */
};

static int on_healthz(json_t **body, void *arg)
{
    struct node *n = arg;
    *body = json_pack("{s:s, s:s, s:I}", "status", "alive", "node", n->conf.prog.node_id,
                      "uptime_s", (json_int_t)(time(NULL) - n->started));
    return 200;
}

static int on_readyz(json_t **body, void *arg)
{
    struct node *n = arg;
    int zk_ok = coord_session_state(n->zk) == COORD_CONNECTED;
    int pg_ok = store_healthy(n->store);
    int ready = zk_ok && pg_ok && !n->draining;
    *body = json_pack("{s:s, s:s, s:{s:b, s:b, s:b}}", "status", ready ? "ready" : "unready",
                      "node", n->conf.prog.node_id, "checks", "zookeeper", zk_ok, "postgres", pg_ok,
                      "draining", n->draining);
    return ready ? 200 : 503;
}

static size_t owned_now(const struct node *n)
{
    struct engine_stats st;
    if (!n->engine)
        return 0;
    engine_get_stats(n->engine, &st);
    return st.owned;
}

/* The schema this node says it knows: its own, or DROVER_FAULT=member-schema:N's (a test
   stands in for an older node in the fleet's choices, docs/testing.md "Fault hooks"). */
static int member_schema(void)
{
    static int said;
    if (!said) {
        char *a = fault_arg("member-schema");
        said = a && atoi(a) > 0 ? atoi(a) : store_schema_version();
        if (a)
            log_warn(MODULE, "event=fault-armed fault=member-schema schema=%d", said);
        free(a);
    }
    return said;
}

static json_t *member_data_now(const struct node *n, size_t owned);

static json_t *member_data(const struct node *n, size_t owned)
{
    /* keeps_runs: this build keeps run records after their rows and merges them in the
       order they ended on resume (docs/engine.md): records are kept when every member says so. */
    /* postgres: this node reaches PostgreSQL (the others' engine_peers_serving). */
    /* Test hook (DROVER_FAULT=member-old-build, docs/testing.md "Fault hooks"): the member
       data of a build before "keeps_runs", so that a rolling upgrade's mixed ring can be
       made with one build (integration/engine/old_member.sh). */
    /* slots: this build assigns tasks to the workers' slots (docs/engine.md "Tasks to
       slots"), which happens only while every member says so: an older one resuming such a
       job would not know its key records. */
    if (n->old_build) {
        json_t *d = member_data_now(n, owned);
        json_object_del(d, "keeps_runs");
        json_object_del(d, "slots");
        return d;
    }
    return member_data_now(n, owned);
}

static json_t *member_data_now(const struct node *n, size_t owned)
{
    return json_pack("{s:s, s:s, s:s, s:I, s:I, s:s, s:i, s:i, s:b, s:b, s:I, s:b, s:b, s:i}", "id",
                     n->conf.prog.node_id, "kind", "droverd", "http", n->conf.api.listen, "pid",
                     (json_int_t)getpid(), "started", (json_int_t)n->started, "host", n->host,
                     "schema", member_schema(), "format", DROVER_FORMAT_VERSION, "draining",
                     n->draining, "drained", n->drained, "owned", (json_int_t)owned, "keeps_runs",
                     1, "postgres", store_healthy(n->store), "slots", 1);
}

/* Write the member znode when what it says changed (force: always). */
static void publish(struct node *n, int force)
{
    if (!n->member)
        return;
    size_t owned = owned_now(n);
    int pg = store_healthy(n->store);
    if (pg != n->pub_pg)
        force = 1;
    if (!force && owned == n->pub_owned && n->draining == n->pub_draining &&
        n->drained == n->pub_drained)
        return;
    /* A count that only moved (not to or from 0, not draining) waits up to OWNED_EVERY_MS:
       each write makes every droverd list and read the whole group again (coord's group
       watch), 12 requests, once a second on a busy node: 5 of a small job's. */
    int64_t now = clock_mono_ms();
    if (!force && n->draining == n->pub_draining && n->drained == n->pub_drained && !n->draining &&
        owned != 0 && n->pub_owned != 0 && now - n->pub_ms < OWNED_EVERY_MS)
        return;
    n->pub_ms = now;
    n->pub_owned = owned;
    n->pub_draining = n->draining;
    n->pub_drained = n->drained;
    n->pub_pg = pg;
    json_t *data = member_data(n, owned);
    char *json = json_dumps(data, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(data);
    coord_member_update(n->member, json, NULL, NULL);
    free(json);
}

static void drain(struct node *n, const char *why);
static void undrain(struct node *n, const char *why);

/*
 * Once a second: a droverd that reaches ZooKeeper but not PostgreSQL holds its jobs' locks
 * and can write none of them (a gray failure). After postgres.lost_after of it, while another
 * member serves and reaches PostgreSQL, it steps out of the ring (a drain): its jobs move
 * there. Writes in flight end by the store's bound on a silent connection (store.h); the
 * handover does not wait for what PostgreSQL lacks (engine__job_idle), and whatever this
 * node writes later is fenced by the new owner's token. PostgreSQL back: it serves again.
 */
static void pg_watch(struct node *n)
{
    if (!n->engine || n->stopping)
        return;
    int64_t now = clock_mono_ms();
    if (store_healthy(n->store)) {
        n->pg_bad_since = 0;
        if (n->pg_out) {
            n->pg_out = 0;
            log_info(MODULE, "event=postgres-back node=%s", n->conf.prog.node_id);
            undrain(n, "postgres-back");
        }
        return;
    }
    if (!n->pg_bad_since)
        n->pg_bad_since = now;
    if (n->pg_out || n->draining || n->conf.pg_lost_after_ms <= 0 ||
        now - n->pg_bad_since < n->conf.pg_lost_after_ms)
        return;
    size_t peers = engine_peers_serving(n->engine);
    if (peers == 0)
        return; /* nobody could write the jobs either: keep them, the writes retry */
    log_warn(MODULE, "event=postgres-lost node=%s for_ms=%lld peers=%zu owned=%zu",
             n->conf.prog.node_id, (long long)(now - n->pg_bad_since), peers, owned_now(n));
    n->pg_out = 1;
    drain(n, "postgres-lost");
}

static void on_publish(evutil_socket_t fd, short what, void *arg)
{
    pg_watch(arg);
    publish(arg, 0);
}

static void leave(struct node *n)
{
    /* The member znode goes now, not after the session timeout. */
    coord_member_leave(n->member);
    n->member = NULL;
    event_base_loopexit(n->base, NULL);
}

static void on_handed_over(void *arg)
{
    struct node *n = arg;
    n->drained = 1;
    log_info(MODULE, "event=drained node=%s", n->conf.prog.node_id);
    if (n->stopping) {
        leave(n);
        return;
    }
    publish(n, 1);
}

static void on_grace(evutil_socket_t fd, short what, void *arg)
{
    struct node *n = arg;
    log_warn(MODULE, "event=grace-over node=%s still_owned=%zu", n->conf.prog.node_id,
             owned_now(n));
    leave(n);
}

/* Out of every ring, jobs handed over; on_handed_over says when nothing is left. */
static void drain(struct node *n, const char *why)
{
    if (n->draining)
        return;
    log_info(MODULE, "event=draining node=%s by=%s owned=%zu", n->conf.prog.node_id, why,
             owned_now(n));
    n->draining = 1;
    n->drained = 0;
    publish(n, 1);
    engine_stop(n->engine, on_handed_over, n);
}

static void undrain(struct node *n, const char *why)
{
    if (!n->draining || n->stopping)
        return;
    log_info(MODULE, "event=undrained node=%s by=%s", n->conf.prog.node_id, why);
    n->draining = 0;
    n->drained = 0;
    engine_resume(n->engine);
    publish(n, 1);
}

static void on_control(const char *want, const char *by, void *arg)
{
    struct node *n = arg;
    char q[200];
    /* The operator's word replaces pg_watch's: its drain stays, its undrain is final. */
    if (strcmp(want, "drain") == 0) {
        n->pg_out = 0;
        drain(n, log_quote(by, q, sizeof(q)));
    } else if (strcmp(want, "undrain") == 0) {
        n->pg_out = 0;
        undrain(n, log_quote(by, q, sizeof(q)));
    } else
        log_warn(MODULE, "event=control-unknown node=%s want=%s", n->conf.prog.node_id,
                 log_quote(want, q, sizeof(q)));
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    struct node *n = arg;
    sdnotify("STOPPING=1");
    if (n->stopping || n->drained || !n->engine) {
        log_info(MODULE, "event=stopping signal=%s now=1", sig == SIGTERM ? "TERM" : "INT");
        leave(n);
        return;
    }
    log_info(MODULE, "event=stopping signal=%s grace_ms=%ld", sig == SIGTERM ? "TERM" : "INT",
             n->conf.shutdown_grace_ms);
    n->stopping = 1;
    n->grace = evtimer_new(n->base, on_grace, n);
    struct timeval tv = {n->conf.shutdown_grace_ms / 1000,
                         (n->conf.shutdown_grace_ms % 1000) * 1000};
    evtimer_add(n->grace, &tv);
    drain(n, "signal");
}

/* The loop's and the engine's figures on /metrics, the engine's on /v1/metrics (none before
   it starts). */
static void on_metrics(struct evbuffer *out, bool tenants, const char *tenant, void *arg)
{
    struct node *n = arg;
    if (!tenants && n->watch)
        loopwatch_write(n->watch, out);
    if (n->engine)
        engine_metrics(n->engine, out, tenants, tenant);
}

static int start_http(struct node *n, struct drv_err *err)
{
    struct api_opts o = n->conf.api;
    o.node_id = n->conf.prog.node_id;
    o.catalogs = n->catalogs;
    n->api = api_new(n->base, n->store, n->zk, &o, err);
    if (!n->api)
        return err->code ? err->code : DRV_EIO;
    api_set_probe(n->api, "/healthz", on_healthz, n);
    api_set_probe(n->api, "/readyz", on_readyz, n);
    api_set_metrics(n->api, on_metrics, n);
    return 0;
}

static void on_joined(int rc, void *arg)
{
    if (rc == 0) {
        log_info(MODULE, "event=joined group=droverd");
        /* The schema is in place and the node serves: a Type=notify unit is up. */
        sdnotify("READY=1");
    } else
        log_error(MODULE, "event=join_failed group=droverd error=%s", drv_strerror(rc));
}

/* ---- start: wait for PostgreSQL ------------------------------------------------------ */

/* Set by SIGTERM/SIGINT while the start waits for the database (before the loop's own
 * signal events exist). */
static volatile sig_atomic_t start_stop;

static void on_start_signal(int sig)
{
    (void)sig;
    start_stop = 1;
}

#define PG_WAIT_FIRST_MS 200
#define PG_WAIT_MAX_MS 5000
#define PG_WAIT_LOG_MS 10000

/*
 * The schema, applied once PostgreSQL answers. A node restarted while the
 * database is down (a crash, a failover, a host started before the database)
 * waits for it, instead of exiting and leaving its restart to a supervisor:
 * every failure to connect (DRV_EAGAIN) is retried with a doubling pause up to
 * 5 s, logged at the first attempt and then every 10 s (event=database-wait),
 * as long as the server does not answer or does not accept connections yet
 * (store_worth_waiting); any other failure (a refused login, an unknown
 * database, a newer schema, a migration's SQL error) ends the start. SIGTERM or SIGINT during the
 * wait ends it cleanly.
 *
 * Exactly one of: 0 (schema in place), 1 (failed: logged), 2 (stopped by a
 * signal while waiting: logged).
 */
static int start_schema(struct node *n, struct drv_err *err)
{
    struct sigaction sa = {.sa_handler = on_start_signal}, old_term, old_int;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, &old_term);
    sigaction(SIGINT, &sa, &old_int);
    char q[600];
    int pause_ms = PG_WAIT_FIRST_MS, rc = 0;
    long attempts = 0;
    int64_t first = clock_mono_ms(), logged = 0;
    for (;;) {
        int applied = 0;
        drv_err_clear(err);
        rc = store_migrate(n->conf.store.conninfo, n->conf.prog.node_id, &applied, err);
        attempts++;
        if (rc == 0) {
            if (attempts > 1)
                log_info(MODULE, "event=database-back attempts=%ld waited_ms=%lld", attempts,
                         (long long)(clock_mono_ms() - first));
            log_info(MODULE, "event=schema_ready version=%d applied=%d", store_schema_version(),
                     applied);
            break;
        }
        if (rc != DRV_EAGAIN || !store_worth_waiting(n->conf.store.conninfo)) {
            log_error(MODULE, "event=migrate_failed error=%s", log_quote(err->msg, q, sizeof(q)));
            rc = 1;
            break;
        }
        int64_t now = clock_mono_ms();
        if (attempts == 1 || now - logged >= PG_WAIT_LOG_MS) {
            log_warn(MODULE, "event=database-wait attempts=%ld waited_ms=%lld error=%s", attempts,
                     (long long)(now - first), log_quote(err->msg, q, sizeof(q)));
            sdnotify("STATUS=waiting for postgresql");
            logged = now;
        }
        /* nanosleep returns early on a signal: the flag is seen at once. */
        struct timespec ts = {pause_ms / 1000, (long)(pause_ms % 1000) * 1000000L};
        if (!start_stop)
            nanosleep(&ts, NULL);
        if (start_stop) {
            log_info(MODULE, "event=stopped-before-start reason=signal attempts=%ld", attempts);
            rc = 2;
            break;
        }
        pause_ms = pause_ms * 2 > PG_WAIT_MAX_MS ? PG_WAIT_MAX_MS : pause_ms * 2;
    }
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGINT, &old_int, NULL);
    return rc;
}

/* A tenant's workers' digest id, derived from the fleet key (seal_worker_zk; the same
   credentials `drover key worker-zk` prints). Any thread: n->zk_key is set before the
   session starts and never changes. */
static int zk_worker_id(const char *tenant, char *id, size_t size, void *arg)
{
    struct node *n = arg;
    char user[128], pw[65];
    seal_worker_zk(n->zk_key, tenant, user, sizeof(user), pw);
    int rc = coord_acl_digest_id(user, pw, id, size);
    explicit_bzero(pw, sizeof(pw));
    return rc;
}

/* With credentials and the fleet key: grant each tenant's workers their own identity. */
static int zk_worker_ids(struct node *n, struct drv_err *err)
{
    char q[600];
    if (!*n->conf.prog.zk.digest_file || !*n->conf.api.secrets_key)
        return 0;
    if (seal_key_load("secrets.key_file", n->conf.api.secrets_key, n->zk_key, err) != 0) {
        log_error(MODULE, "event=config_failed error=%s", log_quote(err->msg, q, sizeof(q)));
        return 1;
    }
    n->zk_key_ok = true;
    n->conf.prog.zk.session.acl_tenant_id = zk_worker_id;
    n->conf.prog.zk.session.acl_tenant_arg = n;
    return 0;
}

/* The live tenants' names (NULL-terminated; free each and the array), or NULL. */
static char **tenant_names(struct node *n, struct drv_err *err)
{
    PGconn *conn = PQconnectdb(n->conf.store.conninfo);
    json_t *items = NULL;
    char **names = NULL;
    if (PQstatus(conn) != CONNECTION_OK)
        drv_err_set(err, DRV_EAGAIN, 0, "postgres: %s", PQerrorMessage(conn));
    else if (store_tenant_list(conn, &items, err) == 0) {
        names = xcalloc(json_array_size(items) + 1, sizeof(*names));
        size_t i, k = 0;
        json_t *t;
        json_array_foreach(items, i, t)
        {
            const char *name = json_string_value(json_object_get(t, "name"));
            if (name)
                names[k++] = xstrdup(name);
        }
        json_decref(items);
    }
    PQfinish(conn);
    return names;
}

/* With credentials: close a tree written before (world-readable) to the ACL this node's
   session creates, each tenant's workers' grants included (coord_acl_fixup;
   docs/zookeeper-tree.md "ACLs"). */
static int acl_fixup(struct node *n, struct drv_err *err)
{
    char q[600];
    struct zk_digest d;
    int changed = 0;
    char **tenants = NULL;
    int rc = zk_digest_read(n->conf.prog.zk.digest_file, &d, err);
    if (rc == 0 && d.user[0] && n->zk_key_ok && !(tenants = tenant_names(n, err)))
        rc = err->code ? err->code : DRV_EIO;
    if (rc == 0) {
        struct coord_session_opts o;
        prog_zk_opts(&n->conf.prog, &d, &o);
        rc = coord_acl_fixup(&o, ZKPATH_ROOT, (const char *const *)tenants, &changed, err);
    }
    for (size_t i = 0; tenants && tenants[i]; i++) {
        if (rc == 0)
            coord_acl_tenant_add(n->zk, tenants[i], NULL, NULL); /* their queue directory */
        free(tenants[i]);
    }
    free(tenants);
    zk_digest_clear(&d);
    if (rc)
        log_error(MODULE, "event=acl-fixup-failed error=%s", log_quote(err->msg, q, sizeof(q)));
    return rc ? 1 : 0;
}

/* The one-off re-seal of legacy sealed values (src/api/reseal.c), before anything serves. */
static int reseal(struct node *n, struct drv_err *err)
{
    char q[600];
    unsigned char key[32];
    int count = 0;
    int rc = seal_key_load("secrets.key_file", n->conf.api.secrets_key, key, err);
    if (rc == 0)
        rc = api_reseal_legacy(n->conf.store.conninfo, key, &count, err);
    explicit_bzero(key, sizeof(key));
    if (rc) {
        log_error(MODULE, "event=reseal-failed error=%s", log_quote(err->msg, q, sizeof(q)));
        return 1;
    }
    if (count)
        log_info(MODULE, "event=sealed-values-migrated count=%d", count);
    return 0;
}

static int run(struct node *n)
{
    struct drv_err err;
    drv_err_clear(&err);
    char q[600];

    /* Schema first: a node that cannot reach the database is of no use, so it waits for
       it. Several nodes starting together serialise on an advisory lock in store_migrate. */
    int rc = start_schema(n, &err);
    if (rc == 2)
        return 0;
    if (rc)
        return 1;
    int created = 0;
    rc = api_bootstrap(n->conf.store.conninfo, n->conf.api.bootstrap_token_file, &created, &err);
    if (rc) {
        log_error(MODULE, "event=bootstrap_failed error=%s", log_quote(err.msg, q, sizeof(q)));
        return 1;
    }
    if (created)
        log_info(MODULE, "event=superadmin_created token_file=%s",
                 log_quote(n->conf.api.bootstrap_token_file, q, sizeof(q)));
    if (*n->conf.api.secrets_key && reseal(n, &err) != 0)
        return 1;

    n->store = store_new(n->base, n->conf.store.conninfo, n->conf.store.pool_size);
    store_start_health(n->store);
    /* A few catalogues: one per tenant creating at once, in practice (each is a few hundred
       KB parsed). */
    n->catalogs = model_catcache_new(32);

    if (zk_worker_ids(n, &err) != 0 ||
        prog_zk_connect(n->base, &n->conf.prog, MODULE, &n->zk) != 0 || acl_fixup(n, &err) != 0)
        return 1;
    json_t *data = member_data(n, 0);
    char *json = json_dumps(data, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(data);
    n->member =
        coord_member_join(n->zk, ZKPATH_MEMBERS_DROVERD, n->conf.prog.node_id, json, on_joined, n);
    free(json);
    if (start_http(n, &err) != 0) {
        log_error(MODULE, "event=listen_failed error=%s", log_quote(err.msg, q, sizeof(q)));
        return 1;
    }
    unsigned char key[32];
    bool has_key = false;
    if (*n->conf.api.secrets_key) {
        if (seal_key_load("secrets.key_file", n->conf.api.secrets_key, key, &err) != 0) {
            log_error(MODULE, "event=config_failed error=%s", log_quote(err.msg, q, sizeof(q)));
            return 1;
        }
        has_key = true;
    }
    struct engine_opts eo = n->conf.engine;
    eo.node_id = n->conf.prog.node_id;
    eo.key = has_key ? key : NULL;
    eo.catalogs = n->catalogs;
    n->engine = engine_new(n->base, n->zk, n->store, &eo, &err);
    explicit_bzero(key, sizeof(key));
    if (!n->engine) {
        log_error(MODULE, "event=engine_failed error=%s", log_quote(err.msg, q, sizeof(q)));
        return 1;
    }
    char inc[400];
    coord_control_incarnation(inc, sizeof(inc), n->host, (long long)getpid(),
                              (long long)n->started);
    n->control = coord_control_watch(n->zk, "droverd", n->conf.prog.node_id, inc, on_control, n);
    /* The operator's shared ssh-pool pools: no tenant may delete a claim there, so this
     * node deletes the ones their owners released (docs/security.md). */
    n->pools = coord_pool_janitor_new(n->zk, n->conf.prog.zk.session.acl_pool_grants);
    n->publish = event_new(n->base, -1, EV_PERSIST, on_publish, n);
    struct timeval one = {1, 0};
    event_add(n->publish, &one);
    n->sig_term = evsignal_new(n->base, SIGTERM, on_signal, n);
    n->sig_int = evsignal_new(n->base, SIGINT, on_signal, n);
    event_add(n->sig_term, NULL);
    event_add(n->sig_int, NULL);
    log_info(MODULE, "event=serving node=%s http=%s zookeeper=%s", n->conf.prog.node_id,
             n->conf.api.listen, log_quote(n->conf.prog.zk.session.hosts, q, sizeof(q)));
    event_base_dispatch(n->base);
    log_info(MODULE, "event=stopped node=%s", n->conf.prog.node_id);
    return 0;
}

static void node_release(struct node *n)
{
    /* The store's last completions first, while the engine and the API they report to
     * are still there. */
    store_quiesce(n->store);
    coord_control_free(n->control);
    coord_pool_janitor_free(n->pools);
    if (n->publish)
        event_free(n->publish);
    engine_free(n->engine);
    if (n->grace)
        event_free(n->grace);
    api_free(n->api);
    if (n->sig_term)
        event_free(n->sig_term);
    if (n->sig_int)
        event_free(n->sig_int);
    coord_member_leave(n->member);
    coord_session_free(n->zk);
    store_free(n->store);
    model_catcache_free(n->catalogs);
    loopwatch_free(n->watch);
    if (n->base)
        event_base_free(n->base);
    config_free(droverd_conf_keys(), &n->conf);
}

/* droverd(8) and droverd.conf(5) beyond the tables (progconf.h). */
static const char *const doc_description[] = {
    "droverd is one orchestrator node of Drover, a cluster orchestrator. Any number of equal "
    "nodes run behind a load balancer; each connects to the ZooKeeper ensemble (membership, "
    "job ownership through a hash ring and fenced locks, task queues) and to PostgreSQL (the "
    "system of record), applies the database schema when it starts, and serves the whole HTTP "
    "API, the Prometheus metrics and the web dashboard. The jobs the ring gives it are solved, "
    "planned and dispatched to the workers (drover-worker) through ZooKeeper.",
    "It keeps no state of its own: a node stopped, drained or killed hands its jobs to the "
    "others, which resume them from their task logs. GET /healthz answers 200 while the "
    "process lives, GET /readyz 200 while it is connected to ZooKeeper and PostgreSQL and not "
    "draining, for the load balancer.",
    "Under systemd (droverd.service) it runs as the user drover, Type=notify: READY=1 once it "
    "serves, STOPPING=1 when SIGTERM starts its drain. Logs are key=value lines on standard "
    "error (journalctl -u droverd).",
    NULL,
};
static const struct prog_doc_item doc_signals[] = {
    {"SIGTERM, SIGINT",
     "drain: leave the ring at once (the other nodes take its jobs, each after its write in "
     "flight), /readyz answers 503, then delete the member znode and exit 0; bounded by "
     "shutdown.grace, after which it exits anyway (its remaining jobs are resumed by others "
     "when its session ends). A second signal exits at once. drover node drain does the "
     "drain without the exit. This is how systemctl stop, restart and a package upgrade stop it."},
    {"SIGPIPE", "ignored"},
    {NULL, NULL},
};
static const struct prog_doc_item doc_files[] = {
    {"/etc/drover/droverd.conf", "the configuration (droverd.conf(5))"},
    {"/etc/drover/secrets.key",
     "the fleet key (secrets.key_file), mode 0600, the same on every node"},
    {"/usr/share/drover/catalog", "the shipped catalogue, for drover import"},
    {"/usr/share/drover/ui", "the web dashboard's files (ui.dir)"},
    {NULL, NULL},
};
static const struct prog_doc doc = {
    .summary = "Drover orchestrator node",
    .description = doc_description,
    .signals = doc_signals,
    .files = doc_files,
    .conf_summary = "configuration of the Drover orchestrator node droverd",
    .conf_path = "/etc/drover/droverd.conf",
};

int main(int argc, char **argv)
{
    struct node n;
    memset(&n, 0, sizeof(n));
    int rc = prog_start(argc, argv, "droverd", "droverd", &doc, droverd_conf_keys(), &n.conf,
                        &n.conf.prog, droverd_conf_check);
    if (rc >= 0)
        return rc;
    n.base = event_base_new();
    n.watch = loopwatch_new(n.base, MODULE, LOOPWATCH_WARN_MS);
    n.started = time(NULL);
    char *old_build = fault_arg("member-old-build");
    n.old_build = old_build != NULL;
    if (old_build)
        log_warn(MODULE, "event=fault-armed fault=member-old-build");
    free(old_build);
    gethostname(n.host, sizeof(n.host) - 1);
    rc = run(&n);
    node_release(&n);
    return rc;
}
