/*
 * api: Drover's HTTP API (docs/api.md is the contract).
 *
 * One struct api per droverd: a strict HTTP/1.1 server on libevent
 * bufferevents (optionally TLS through OpenSSL; src/api/server.h), routing
 * under /v1, bearer-token authentication, roles and tenant isolation, and the
 * handlers. The program registers its probes (/healthz, /readyz) with
 * api_set_probe; /metrics is served here.
 *
 * Threads: everything here runs on the loop's thread except the database
 * work, which runs on store pool threads, and the parsing of large bodies,
 * which runs on a small workpool: a request's head is parsed and checked on
 * the loop, its token verified (from the cache on the loop, else on the
 * pool) and its role checked before any byte of its body is read; then the
 * body is read and parsed, the call handed to store_submit() for the
 * handler's queries, and answered from the completion on the loop.
 * Pool-thread code touches only its call and the read-only parts of struct
 * api (the secrets key, the options). The loop never blocks.
 *
 * Ownership: api_new's caller owns the api and frees it with api_free before
 * the store, the coord session and the event base.
 */
#ifndef DROVER_API_H
#define DROVER_API_H

#include <jansson.h>
#include <stdbool.h>

#include "config.h"
#include "error.h"

struct event_base;
struct store;
struct coord_session;
struct model_catcache;
struct api;

struct api_opts {
    const char *listen;      /* host:port */
    long max_body;           /* bytes; larger bodies get 413 */
    long max_headers;        /* bytes of request line and headers; more gets 431 */
    long max_connections;    /* beyond: the overflow lane (probes only), else 503 */
    long max_per_source;     /* connections from one address; beyond: as above */
    long header_timeout_ms;  /* for a request's head to arrive */
    long body_timeout_ms;    /* for its body to arrive */
    long timeout_ms;         /* a reply's write without progress; a query's time */
    const char *tls_cert;    /* PEM file, "" for plain HTTP */
    const char *tls_key;     /* PEM file */
    const char *secrets_key; /* file with 64 hex digits (mode 0600), "" for none */
    const char *node_id;
    long token_ttl_ms;       /* a new token's life unless the request says */
    long token_max_ttl_ms;   /* the longest life a request may ask for */
    long token_cache_ttl_ms; /* how long a verified token is trusted without the database */
    long heavy_threads;      /* threads that solve and plan (the heavy workpool) */
    long heavy_queue;        /* heavy work waiting for one of them beyond which 503 */
    long max_requests_per_user, max_requests_per_tenant; /* in progress; beyond: 429 */
    long max_heavy_per_user, max_heavy_per_tenant;       /* solving or planning at once */
    long max_heavy_waiting_per_tenant;                   /* beyond: 429 */
    /* The recommended worker count (docs/operations.md "Autoscaling"): */
    long scale_target_wait_ms; /* how long a task may wait in the queue (0: 10 s) */
    long scale_worker_slots;   /* tasks one worker runs at once (0: 4) */
    long scale_task_ms;        /* mean task time assumed before any was measured (0: 1 s) */
    const char *ui_dir; /* the dashboard's files, served under /ui/ (ui.h); "" or NULL: none */
    const char *bootstrap_token_file; /* for api_bootstrap (api_new does not read it) */
    const char *loopback_tenants;     /* tenants allowed the loopback provider: "a,b", "*" or "" */
    /* Quotas' defaults for a tenant the superadmin gave none (quota.c; 0: no limit): */
    long quota_clusters, quota_nodes, quota_jobs, quota_resource_versions, quota_resource_bytes;
    /* The catalogues this process parsed, by tenant and version, shared with the engine
       (model.h); borrowed; NULL: none kept, each request parses its own. */
    struct model_catcache *catalogs;
};

/*
 * What spans keys, after the load: api.max_heavy_per_tenant below api.heavy_threads
 * (one tenant never holds every heavy thread). 0 or DRV_EINVAL with err naming the key.
 */
int api_opts_check(const struct api_opts *o, struct drv_err *err);

/*
 * The keys of droverd's config file that fill a struct api_opts
 * (src/api/conf.c; docs/configuration.md), in two tables so that droverd
 * lists them where it always did: http.*, secrets.key_file, api.* and ui.dir;
 * then, after the store's and the engine's, autoscale.* (the recommended
 * worker count of handlers_fleet.c). The program sets node_id.
 */
extern const struct config_key api_config_keys[];
extern const struct config_key api_autoscale_config_keys[];

/* Listen and serve. zk may be NULL (no fleet views). NULL with err on failure. */
struct api *api_new(struct event_base *base, struct store *store, struct coord_session *zk,
                    const struct api_opts *o, struct drv_err *err);
void api_free(struct api *a);

/*
 * A probe: answered on the loop for GET and HEAD of path (other methods get
 * 405), without a token, even on a connection beyond the limits. fn returns
 * the status and sets *body (a new reference, sent as JSON). arg is borrowed.
 */
typedef int (*api_probe_fn)(json_t **body, void *arg);
void api_set_probe(struct api *a, const char *path, api_probe_fn fn, void *arg);

/*
 * More metrics from the program (its engine): fn appends Prometheus text to
 * out. tenants false: for /metrics, figures that name no tenant; true: for the
 * authenticated /v1/metrics, per-tenant figures, only tenant's when it is not
 * NULL (a superadmin's scrape passes NULL: every tenant). Loop thread.
 */
struct evbuffer;
typedef void (*api_metrics_fn)(struct evbuffer *out, bool tenants, const char *tenant, void *arg);
void api_set_metrics(struct api *a, api_metrics_fn fn, void *arg);

/*
 * Create the first superadmin and its token when the database has none, and
 * write the token to path (created exclusively, mode 0600). Blocking: for
 * start-up, after the migrations. Of several nodes starting together exactly
 * one creates it (advisory lock); *created says whether this call did.
 */
int api_bootstrap(const char *conninfo, const char *path, int *created, struct drv_err *err);

/*
 * reseal.c: the start-up migration of legacy sealed values (enc:v1, enc:j1)
 * in PostgreSQL to the placed format (src/common/seal.h), under the fleet
 * key, in one transaction. *n: how many values were sealed again (0 when
 * nothing was left). Blocking: for start-up, after the schema migrations.
 * DRV_ETLS/DRV_EINVAL when one does not open (nothing written; err names the
 * row and field), or a database error.
 */
int api_reseal_legacy(const char *conninfo, const unsigned char fleet[32], int *n,
                      struct drv_err *err);

/* ---- exposed for unit tests (pure functions) ---- */

/* Parse "drv_<16 hex>_<64 hex>" into id (17 bytes) and secret (65 bytes). */
int api_token_parse(const char *token, char id[17], char secret[65]);
/* Hex SHA-256 of salt bytes followed by the secret's text (out: 65 bytes). */
void api_token_hash(const unsigned char *salt, size_t salt_len, const char *secret, char out[65]);
/* Is a field name sensitive (password, secret, token, credential, private_key, api_key)? */
int api_field_sensitive(const char *name);
/* Replace every string that looks sealed ("enc:...") inside j by "********" (in place). */
void api_redact(json_t *j);

#endif
