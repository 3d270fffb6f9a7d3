/*
 * api_int: what the API's files share (server, auth, handlers). Not public.
 *
 * The files:
 *   the request flow:
 *     api.c        the API's request flow (api.h has the threads)
 *     server.c     the HTTP/1.1 connections (server.h); http_parse.c the strict parser
 *                  (http.h)
 *     guard.c      what the loop remembers about callers: verified tokens (guard.h)
 *     routes.c     the /v1 paths, their methods, handlers and roles, and the lookup
 *     call.c       one call's helpers: its error, query, owner filter, reply, release
 *     auth.c       bearer tokens, the first superadmin, secrets at rest
 *     conf.c       the API's configuration keys (api.h)
 *   the handlers (handlers.h), by resource:
 *     handlers_admin.c     who am I, version, audit log, tenants and users
 *     handlers_entities.c  the catalogue's entities of /v1/{kind}, import and export
 *     handlers_create.c    a cluster's create and its preview
 *     handlers_clusters.c  reading clusters, and their operations
 *     handlers_plan.c      an operation's plan before it runs (dry run), the revision
 *     handlers_jobs.c      jobs: list, get, plan, cancel, pause, resume, retry
 *     handlers_tasks.c     a large job's tasks a page at a time
 *     handlers_resources.c a tenant's plugin resources
 *     handlers_tokens.c    a caller's own API tokens
 *     handlers_fleet.c     the fleet views: members, workers, queues
 *     handlers_drain.c     an operator's drain and undrain of one member
 *     handlers_util.c      what the handler files share: name checks, audit, bodies
 *   what the handlers use:
 *     jobctl.c     the API's side of the engine in ZooKeeper (announcements, control)
 *     jobwait.c    long-polling a job's summary
 *     explain.c    why each waiting task of a job waits
 *     links.c      a cluster's links, their macros expanded
 *     quota.c      what one tenant may take of the shared fleet
 *     hostfields.c what a tenant's provider entity may not say (the host boundary)
 *     tenantvals.c what a tenant's entity may say of its nodes (reserved keys), and its sizes
 *     seal.c       sensitive values in bodies sealed at their place; reseal.c the
 *                  start-up migration of legacy sealed values
 *     metrics.c    /metrics, and the fleet data the group watches keep
 *     ui.c         the dashboard's static files under /ui/ (ui.h)
 */
#ifndef DROVER_API_INT_H
#define DROVER_API_INT_H

#include <jansson.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <stdbool.h>

#include <openssl/ssl.h>

#include "api.h"
#include "promtext.h"

#define API_REDACTED "********"

enum api_role { ROLE_SUPER = 1, ROLE_ADMIN = 2, ROLE_USER = 4 };

struct api_principal {
    enum api_role role;
    char user_id[24];
    char tenant_id[24]; /* "" for a superadmin */
    char user[128];
    char tenant[128];
    long heavy; /* the tenant's own heavy quota (tenants.quotas), 0: api.max_heavy_per_tenant */
};

struct api;
struct call;

/* A handler's database part: runs on a pool thread. Returns 0 with c->status
   and c->out set, or a DRV_E* code (mapped to a status) / call_fail(). */
typedef int (*api_handler)(PGconn *conn, struct call *c, struct drv_err *err);
/* Optional second part on the loop's thread, before the reply (fleet views). Return 0 to
   reply at once, 1 when it will call api__reply(c) itself later (asynchronous reads). */
typedef int (*api_loop_fn)(struct call *c);
/* A handler's compute part (solve, plan): runs on the heavy workpool, never on the store's
   pool, with no database connection; touches only c (and what c->work holds). Returns 0 with
   the reply set, or a DRV code / call_fail, like a handler. It may set c->then. */
typedef int (*api_heavy_fn)(struct call *c, struct drv_err *err);

#define CALL_MAX_SEGS 6

struct api_req;

struct call {
    struct api *api;
    struct api_req *req; /* the HTTP request (server.h); answered by api__reply */
    int method;          /* enum api_http_method */
    char *path;          /* as sent (still encoded), owned */
    char *segbuf;        /* the decoded segments that seg[] points into, owned */
    char *seg[CALL_MAX_SEGS];
    int nseg;
    json_t *query; /* decoded query parameters (object of strings) */
    json_t *body;  /* request body (object) or NULL */
    char source[64];
    char token[128];
    long long token_expires_ms;  /* from the token's row, 0: none */
    const struct api_opts *opts; /* read-only */
    api_handler handler;
    unsigned roles;
    struct api_principal who;
    const unsigned char *key; /* secrets key or NULL (read-only, shared) */
    /* result */
    int status;
    json_t *out; /* reply body */
    char *raw;   /* or a raw text body (owned) with raw_type */
    const char *raw_type;
    char *text; /* out serialised off the loop (owned), with its length */
    size_t text_len;
    char version[16]; /* X-Drover-Version */
    char allow[64];   /* Allow, with 405 */
    char code[32], field[128], msg[512];
    json_t *err_detail; /* more members of the error object ({"quota", "limit", "used"}) */
    const char *route;  /* the route's pattern (routes.c), for the metrics; NULL: none matched */
    int64_t t0_us;      /* when the request's head was in (monotonic) */
    api_loop_fn on_loop;
    json_t *loop_data;
    /* A handler in parts: after the handler's database part, c->heavy (when set) runs on the
       heavy pool, then c->then (when set) on the store's pool, each part setting the next. */
    api_heavy_fn heavy;
    api_handler then;
    void *work;                 /* state carried between the parts */
    void (*work_free)(void *w); /* frees work with the call */
    bool is_heavy;              /* the route solves or plans (admission counts it apart) */
    bool admitted;              /* holds a slot of its user's and tenant's limits */
    struct call *next_waiting;  /* in the queue of heavy calls waiting for a slot */
    int heavy_rc;
    struct drv_err heavy_err;
    /* A reply in parts (api.c reply_stream): each pass of the handler leaves one part in
       text; the handler runs again once it is written, until a pass sets stream_last. */
    bool stream, stream_started, stream_last;
    char etag[40]; /* when set: ETag on a 200, and 304 to a matching If-None-Match */
};

/* ---- the node's API state (api.c; metrics.c reads it) ---- */

#define MAX_PROBES 4

struct api_probe {
    char path[32];
    api_probe_fn fn;
    void *arg;
};

/* One per droverd. Loop-thread state, but for opts and key, which pool threads read (never
   written after api_new). */
struct api {
    struct event_base *base;
    struct api_opts opts;
    struct api_server *server;
    struct api_guard *guard;
    struct workpool *parse_pool, *heavy_pool;
    struct call *wait_head, *wait_tail; /* heavy calls waiting for a slot, oldest first */
    struct store *store;
    struct coord_session *zk;
    struct coord_group *g_droverd, *g_workers;
    json_t *members, *workers; /* [{id, data}] as last seen */
    SSL_CTX *ssl;
    unsigned char key[32];
    int have_key;
    long max_body;
    struct api_ui *ui; /* the dashboard's files (ui.h), NULL when there are none */
    struct api_probe probes[MAX_PROBES];
    int nprobes;
    /* metrics */
    unsigned long long by_status[600];
    unsigned long long refused_overflow; /* 503 in the overflow lane */
    unsigned long long parsed_off_loop;  /* bodies parsed on the parse pool */
    struct prom_hvec *h_req;             /* request durations by route, method and status */
    api_metrics_fn metrics_fn;           /* the program's own (api_set_metrics) */
    void *metrics_arg;
    struct strmap *qrates; /* "<tenant>/<class>" -> struct api_qrate (handlers_fleet.c) */
    /* Worker id -> its tenant, for pool threads (api__worker_tenant): a copy of what the
       worker group's watch last said, under worker_mu. */
    pthread_mutex_t worker_mu;
    json_t *worker_tenants;
};

/* metrics.c: one request's duration, by route pattern, method and status. Loop thread. */
void api__observe(struct api *a, const char *route, int method, int status, int64_t t0_us);
/*
 * The worker count a queue calls for (docs/operations.md "Autoscaling"):
 *   slots = arrival_per_s * mean_task_s + waiting * mean_task_s / target_wait_s
 *   workers = ceil(slots / slots_per_worker), at least 1 while anything is queued or running.
 * waiting: items nobody has claimed; running: claimed ones. Pure.
 */
int api__scale_workers(int64_t waiting, int64_t running, double arrival_per_s, double mean_task_s,
                       double target_wait_s, int slots_per_worker);
/* handlers_fleet.c: free the queues' rate samples. */
void api__qrates_free(struct api *a);

struct api_req;
/* metrics.c: answer /metrics; the group watches' callbacks. Loop thread. */
void api__metrics(struct api *a, struct api_req *r);
struct coord_member_info;
void api__on_droverd_group(const struct coord_member_info *m, size_t n, void *arg);
void api__on_worker_group(const struct coord_member_info *m, size_t n, void *arg);

/* call.c: one call's helpers (api.c's request flow and the handlers). */
/* Set an explicit error on c; returns DRV_EINVAL so handlers can `return call_fail(...)`. */
int call_fail(struct call *c, int status, const char *code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Query parameter value (decoded, owned by caller) or NULL. */
char *call_query(struct call *c, const char *key);
/* The tenant or owner filters for the caller: owner is NULL for admins. */
const char *call_owner(const struct call *c);
/* Map a handler's DRV code (err's message, when it has one) to a status and error, unless
   the handler set one itself (c->status >= 400). */
void api__call_map_error(struct call *c, int rc, const struct drv_err *err);
/* out, redacted (api_redact), as JSON text with a newline; *len its length. Caller frees.
   Any thread. */
char *api__call_serialise(json_t *out, size_t *len);
/* Free c and everything it holds (its work through work_free). The request must be
   answered or detached already. */
void api__call_free(struct call *c);

/* auth.c */
/* Verify a bearer token: DRV_EPERM (err says why) unless it is well-formed, known, live,
   of a live user and tenant, and its secret matches. *expires_ms: its expiry (Unix ms, 0:
   none) when not NULL. */
int api__token_check(PGconn *conn, const char *token, struct api_principal *who,
                     long long *expires_ms, struct drv_err *err);
/* A new token for user_id, expiring after expires_s seconds (0: never), with a label.
   token receives it (shown once); *row (when not NULL) {id, label, created_at, expires_at}. */
int api__token_new(PGconn *conn, const char *user_id, long expires_s, const char *label,
                   char token[90], json_t **row, struct drv_err *err);
int api__load_key(const char *path, unsigned char key[32], struct drv_err *err);

/* jobwait.c: set "revision" (a hash of the summary) in job; out receives it too. */
void api__job_revision(json_t *job, char out[33]);
/* jobwait.c: after a summary in c->out: set its revision, and when the caller named that
   revision and asked to wait (seconds), hold the call until it changes (the handler runs
   again every step). Pool thread. */
int api__job_wait(struct call *c, const char *revision, long wait_s);
/* Run c's handler (again) on the store's pool. Loop thread. */
void api__dispatch(struct call *c);
struct event_base *api__base(struct api *a);

/* links.c: the template's links expanded against nodes (rows of GET /v1/clusters/{id}: id,
   services, properties): a new array of {label, url}, links whose macros cannot be resolved
   yet left out. Pure. */
json_t *api__links_expand(const json_t *links, const json_t *nodes);
/* links.c: set cluster's "links" (a cluster row with its "nodes") from the template version
   it was made from; an empty array when that version is gone. Pool thread. */
int api__cluster_links(PGconn *conn, const char *tenant_id, json_t *cluster, struct drv_err *err);

/* explain.c: add "why" to every task of a job (store_job_get's) that waits. */
void api__explain(json_t *job);
/*
 * explain.c: add "why" to each task of tasks (rows of one phase) that waits, from the compact
 * form: job_status as api__explain_status gives it for that phase; deps an object from the
 * decimal index of each dependency the tasks name to that task's {id, status} (a missing one
 * counts as done); busy_tasks the phase's queued and running tasks {id, node_id, service,
 * action, status}. Borrowed; only the tasks change. Pure, O(tasks + deps + busy).
 */
void api__explain_tasks(json_t *tasks, const char *job_status, const json_t *deps,
                        const json_t *busy_tasks);
/* The status a phase's tasks are explained under: the rollback's "rolling-back" is running;
   the forward plan of a job with a rollback is failed. */
const char *api__explain_status(const char *job_status, const char *phase, bool has_rollback);

/* jobctl.c: after the reply's database part, tell the engine through ZooKeeper: a new
   job's announcement, a user's pause/resume/cancel (c->on_loop is set). */
void api__announce(struct call *c, const char *job_id, const char *cluster_id, const char *op);
void api__control(struct call *c, const char *job_id, const char *want);

/* routes.c: resolve a route; 0 and c->handler/roles/is_heavy set, or 404/405/501 via
   call_fail (405 fills c->allow). */
int api__route(struct call *c);
/*
 * Each route of the table, in its order: its methods (API_M_* bits) and pattern
 * ("v1/clusters/{id}" written with a star). For the test that holds docs/openapi.yaml to
 * the router (test_openapi).
 */
void api__routes_each(void (*fn)(int methods, const char *pattern, void *arg), void *arg);
/* Send c's reply (its out, raw or error) and free c. Loop thread. */
void api__reply(struct call *c);
/* The cache of verified tokens (guard.h). Loop thread. */
struct api_guard *api__guard(struct api *a);
/* The ZooKeeper session (may be NULL). */
struct coord_session *api__zk(struct api *a);
/* Fleet data cached on the loop (api.c). */
json_t *api__members(struct api *a); /* borrowed array of {id, data} */
json_t *api__workers(struct api *a);
/* Any thread: the tenant of live worker id into out (true), or false when none is known. */
bool api__worker_tenant(struct api *a, const char *id, char *out, size_t n);

#endif
