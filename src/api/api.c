/*
 * api: the API's request flow. See api.h for the threads, server.h for the
 * connections and docs/api.md for the contract.
 *
 * One request:
 *
 *   loop: head arrives (server.c) -> probes, /metrics -> path, query, route
 *         (400/404/405/501) -> bearer token's shape (401) -> Content-Length
 *         (413) -> token in the cache?
 *   pool: (not cached) verify the token (401); loop: cache it
 *   loop: role check (403) -> read the body -> parse it (400), on the parse
 *         workpool when larger than API_INLINE_BODY -> store_submit
 *   pool: handler's queries -> the reply serialised (sensitive values
 *         redacted)
 *   loop: optional on_loop part (fleet views) -> reply -> free the call
 *
 * So no body is read, let alone parsed, for a caller who may not make the
 * request, and a large one is never parsed on the loop.
 *
 * If the client goes away meanwhile, the server detaches the request
 * (r->conn is NULL) and the reply only frees it, so a completion never
 * touches freed memory.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "api_int.h"
#include "clock.h"
#include "coord.h"
#include "guard.h"
#include "handlers.h"
#include "http.h"
#include "log.h"
#include "server.h"
#include "store.h"
#include "ui.h"
#include "workpool.h"
#include "strmap.h"
#include "xalloc.h"
#include "zkpath.h"

#define MODULE "api"
#define API_INLINE_BODY 65536 /* bodies up to this size are parsed on the loop */

/* ---- HTTP-level errors --------------------------------------------------------- */

/* The error code of a status the HTTP layer produced itself. */
static const char *http_code(int status)
{
    switch (status) {
    case 408:
        return "timeout";
    case 413:
    case 414:
    case 431:
        return "too-large";
    case 417:
    case 501:
    case 505:
        return "not-implemented";
    case 503:
        return "unavailable";
    default:
        return "malformed";
    }
}

/* Answer r with an error and free nothing else (the request is freed by the reply). */
static void reply_error(struct api *a, struct api_req *r, int status, const char *code,
                        const char *msg, const char *extra)
{
    size_t len;
    char *body = api__error_text(code, msg, NULL, NULL, &len);
    if (status >= 0 && status < 600)
        a->by_status[status]++;
    api__server_reply(r, status, "application/json", extra, body, len, false);
}

/* ---- replies ------------------------------------------------------------------ */

static void admit_waiting(struct api *a);

/* The call's end: metrics, its admission slot, and the call itself. */
static void call_end(struct call *c, int status)
{
    struct api *a = c->api;
    if (status >= 0 && status < 600)
        a->by_status[status]++;
    api__observe(a, c->route, c->method, status, c->t0_us);
    if (c->admitted) {
        api__guard_release(a->guard, &c->who, c->is_heavy);
        if (c->is_heavy)
            admit_waiting(a);
    }
    api__call_free(c);
}

static void dispatch(struct call *c);

/* A streamed reply's output drained (or its connection died): the next chunk, or the end. */
static void stream_drained(void *arg)
{
    struct call *c = arg;
    if (!c->req->conn) {
        api__server_stream_end(c->req);
        c->req = NULL;
        call_end(c, 200);
        return;
    }
    dispatch(c); /* the handler again: the next part */
}

/*
 * A streamed reply (c->stream, docs/api.md "Jobs": the full read of a large job): the
 * handler's part in c->text, the head first; c->stream_last ends it. Loop thread.
 */
static void reply_stream(struct call *c)
{
    int status = c->status ? c->status : 200;
    char *text = c->text;
    size_t len = c->text_len;
    c->text = NULL;
    if (!c->stream_started) {
        if (status >= 400) { /* refused before any byte: an ordinary error reply */
            free(text);
            c->stream = false;
            api__reply(c);
            return;
        }
        char extra[64] = "";
        if (c->version[0])
            snprintf(extra, sizeof(extra), "X-Drover-Version: %s\r\n", c->version);
        c->stream_started = true;
        if (api__server_stream_begin(c->req, status, "application/json", extra[0] ? extra : NULL,
                                     stream_drained, c) != 0) {
            free(text);
            c->req = NULL;
            call_end(c, status);
            return;
        }
    } else if (status >= 400) { /* failed half-way: the client sees a cut reply */
        free(text);
        log_warn(MODULE, "event=stream-failed path=%s code=%s message=\"%s\"", c->path, c->code,
                 c->msg);
        api__server_stream_abort(c->req);
        c->req = NULL;
        call_end(c, 200);
        return;
    }
    if (api__server_stream_write(c->req, text, len) != 0 || c->stream_last) {
        api__server_stream_end(c->req);
        c->req = NULL;
        call_end(c, 200);
    }
}

void api__reply(struct call *c)
{
    struct api *a = c->api;
    if (c->stream) {
        reply_stream(c);
        return;
    }
    int status = c->status ? c->status : 200;
    if (log_get_level() <= LOG_DEBUG)
        log_debug(MODULE, "event=request method=%d path=%s status=%d user=%s tenant=%s source=%s",
                  c->method, c->path, status, c->who.user[0] ? c->who.user : "-",
                  c->who.tenant[0] ? c->who.tenant : "-", c->source);
    char extra[256] = "";
    char *body = NULL;
    size_t len = 0;
    const char *type = "application/json";
    if (status >= 400) {
        body = api__error_text(c->code, c->msg, c->field, c->err_detail, &len);
        if (status == 405 && c->allow[0])
            snprintf(extra, sizeof(extra), "Allow: %s\r\n", c->allow);
        if (status == 503 || status == 429)
            snprintf(extra, sizeof(extra), "Retry-After: 1\r\n");
    } else if (c->raw) {
        body = c->raw;
        c->raw = NULL;
        len = strlen(body);
        type = c->raw_type ? c->raw_type : "text/plain";
    } else if (c->text) {
        body = c->text;
        len = c->text_len;
        c->text = NULL;
    } else if (c->out) {
        body = api__call_serialise(c->out, &len);
    }
    if (c->version[0])
        snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra), "X-Drover-Version: %s\r\n",
                 c->version);
    if (c->etag[0] && status == 200) {
        snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra), "ETag: \"%s\"\r\n", c->etag);
        const char *inm = api__http_header(&c->req->head, "If-None-Match");
        char quoted[48];
        snprintf(quoted, sizeof(quoted), "\"%s\"", c->etag);
        if (inm && strcmp(inm, quoted) == 0) { /* the client has this summary */
            status = 304;
            free(body);
            body = NULL;
            len = 0;
        }
    }
    api__server_reply(c->req, status, type, extra[0] ? extra : NULL, body, len, false);
    c->req = NULL;
    (void)a;
    call_end(c, status);
}

/* ---- the pool part ------------------------------------------------------------ */

static void after_admission(struct call *c);

/* Heavy calls waiting for a slot: admit, oldest first, those whose user and tenant have one. */
static void admit_waiting(struct api *a)
{
    struct call **pp = &a->wait_head, *prev = NULL;
    while (*pp) {
        struct call *c = *pp;
        if (!api__guard_admit_waiting(a->guard, &c->who)) {
            prev = c;
            pp = &c->next_waiting;
            continue;
        }
        *pp = c->next_waiting;
        if (a->wait_tail == c)
            a->wait_tail = prev;
        c->next_waiting = NULL;
        c->admitted = true;
        after_admission(c);
    }
}

static int call_work(PGconn *conn, void *arg, struct drv_err *err)
{
    struct call *c = arg;
    int rc;
    rc = c->handler(conn, c, err);
    if (rc) { /* a failed write leaves nothing behind */
        store_rollback(conn);
        return rc;
    }
    /* Large replies are serialised here, not on the loop. */
    if (c->out && !c->on_loop && !c->raw && !c->heavy && !c->then && !c->stream) {
        c->text = api__call_serialise(c->out, &c->text_len);
        json_decref(c->out);
        c->out = NULL;
    }
    return 0;
}

static void dispatch(struct call *c);
static void call_done(int rc, const struct drv_err *err, void *arg);

static void heavy_work(void *arg)
{
    struct call *c = arg;
    api_heavy_fn f = c->heavy;
    c->heavy = NULL;
    drv_err_clear(&c->heavy_err);
    c->heavy_rc = f(c, &c->heavy_err);
    if (c->heavy_rc == 0 && c->out && !c->on_loop && !c->raw && !c->heavy && !c->then) {
        c->text = api__call_serialise(c->out, &c->text_len);
        json_decref(c->out);
        c->out = NULL;
    }
}

static void heavy_done(void *arg, bool cancelled)
{
    struct call *c = arg;
    if (cancelled) {
        call_fail(c, 503, "unavailable", NULL, "the node is stopping");
        api__reply(c);
        return;
    }
    /* Solved (or planned): the heavy slot goes to the next waiting call now, not after this
       call's write and reply (a create's transaction, its announcement), so that a tenant's
       creates on one node overlap their writes with the next one's solve (docs/api.md "Fair
       use"). The request slot stays until the reply. */
    if (c->admitted && c->is_heavy) {
        api__guard_release_heavy(c->api->guard, &c->who);
        c->is_heavy = false;
        admit_waiting(c->api);
    }
    call_done(c->heavy_rc, &c->heavy_err, c);
}

static void call_done(int rc, const struct drv_err *err, void *arg)
{
    struct call *c = arg;
    if (rc) {
        api__call_map_error(c, rc, err);
    } else if (c->heavy) {
        if (workpool_submit(c->api->heavy_pool, heavy_work, heavy_done, c) == 0)
            return;
        call_fail(c, 503, "unavailable", NULL, "the node is busy solving and planning, try again");
    } else if (c->then) {
        c->handler = c->then;
        c->then = NULL;
        dispatch(c);
        return;
    } else if (c->on_loop && c->on_loop(c) != 0) {
        return; /* it replies later */
    }
    api__reply(c);
}

struct event_base *api__base(struct api *a)
{
    return a->base;
}

void api__dispatch(struct call *c)
{
    dispatch(c);
}

struct coord_session *api__zk(struct api *a)
{
    return a->zk;
}

struct api_guard *api__guard(struct api *a)
{
    return a->guard;
}

/* ---- the loop part ----------------------------------------------------------- */

static void dispatch(struct call *c)
{
    store_submit(c->api->store, call_work, call_done, c);
}

/* Reply with c's error (or, the client being gone, just free it). */
/* The dashboard's files (ui.c): no token, GET and HEAD, errors as JSON. */
static void serve_ui(struct api *a, struct api_req *r)
{
    struct api_ui_reply u;
    api_ui_answer(a->ui, r->head.method, r->head.path, api__http_header(&r->head, "If-None-Match"),
                  &u);
    if (u.status >= 400) {
        reply_error(a, r, u.status, u.code, u.msg, u.headers);
        return;
    }
    a->by_status[u.status]++;
    char *body = NULL;
    if (u.body) {
        body = xmalloc(u.len ? u.len : 1);
        memcpy(body, u.body, u.len);
    }
    api__server_reply(r, u.status, u.type, u.headers, body, u.len, false);
}

static void fail_call(struct call *c)
{
    api__reply(c);
}

static const struct api_probe *find_probe(struct api *a, const char *path)
{
    for (int i = 0; i < a->nprobes; i++)
        if (strcmp(a->probes[i].path, path) == 0)
            return &a->probes[i];
    return NULL;
}

/* docs/openapi.yaml as JSON, converted at build time (openapi_embed.py). */
extern const char api__openapi_json[];
extern const size_t api__openapi_json_len;

/*
 * /healthz, /readyz, /metrics and /v1/openapi.json: GET and HEAD only, no token (the API's
 * description holds nothing a client could not read in the source). 1 when path is one of them.
 */
static int serve_probe(struct api *a, struct api_req *r)
{
    const struct api_probe *p = find_probe(a, r->head.path);
    bool metrics = strcmp(r->head.path, "/metrics") == 0;
    bool openapi = strcmp(r->head.path, "/v1/openapi.json") == 0;
    if (!p && !metrics && !openapi)
        return 0;
    if (r->head.method != API_M_GET && r->head.method != API_M_HEAD) {
        if (r->head.method == API_M_UNKNOWN)
            reply_error(a, r, 501, "not-implemented", "method not implemented", NULL);
        else
            reply_error(a, r, 405, "method-not-allowed", "only GET and HEAD are allowed here",
                        "Allow: GET, HEAD\r\n");
        return 1;
    }
    int64_t t0 = clock_mono_us();
    if (metrics) {
        api__metrics(a, r);
        api__observe(a, "/metrics", r->head.method, 200, t0);
        return 1;
    }
    if (openapi) {
        a->by_status[200]++;
        api__observe(a, "/v1/openapi.json", r->head.method, 200, t0);
        api__server_reply(r, 200, "application/json", NULL, xstrdup(api__openapi_json),
                          api__openapi_json_len, false);
        return 1;
    }
    json_t *body = NULL;
    int status = p->fn(&body, p->arg);
    size_t len = 0;
    char *text = body ? api__call_serialise(body, &len) : NULL;
    json_decref(body);
    if (status >= 0 && status < 600)
        a->by_status[status]++;
    api__observe(a, p->path, r->head.method, status, t0);
    api__server_reply(r, status, "application/json", NULL, text, len, false);
    return 1;
}

/* Parse c's body into c->body; 0, or call_fail 400. Any thread. */
static int parse_body(struct call *c)
{
    struct evbuffer *in = c->req->body;
    size_t n = evbuffer_get_length(in);
    json_error_t je;
    c->body = json_loadb((const char *)evbuffer_pullup(in, -1), n, 0, &je);
    if (!c->body)
        return call_fail(c, 400, "malformed", NULL, "body is not JSON: %s at line %d column %d",
                         je.text, je.line, je.column);
    if (!json_is_object(c->body))
        return call_fail(c, 400, "malformed", NULL, "body must be a JSON object");
    return api__refuse_sealed(c, c->body); /* only the API seals (seal.c) */
}

static void parse_work(void *arg)
{
    parse_body(arg);
}

static void parse_done(void *arg, bool cancelled)
{
    struct call *c = arg;
    if (cancelled || c->status >= 400)
        fail_call(c);
    else
        dispatch(c);
}

static void on_body(struct api_req *r, int status, void *arg)
{
    struct api *a = arg;
    struct call *c = r->user;
    if (status == 408) {
        call_fail(c, 408, "timeout", NULL, "the request body took too long to arrive");
        fail_call(c);
        return;
    }
    if (status != 0) { /* the client is gone */
        fail_call(c);
        return;
    }
    if (c->method != API_M_POST && c->method != API_M_PUT) {
        dispatch(c); /* a body on GET or DELETE is read and ignored */
        return;
    }
    if (evbuffer_get_length(r->body) > API_INLINE_BODY) {
        if (workpool_submit(a->parse_pool, parse_work, parse_done, c) != 0) {
            call_fail(c, 503, "unavailable", NULL, "too many large bodies at once, try again");
            fail_call(c);
        } else {
            a->parsed_off_loop++;
        }
        return;
    }
    if (parse_body(c) != 0)
        fail_call(c);
    else
        dispatch(c);
}

static const char *role_name(enum api_role r)
{
    return r == ROLE_SUPER ? "superadmin" : r == ROLE_ADMIN ? "admin" : "user";
}

/* The caller is known: check the role, take a slot of its limits, then read the body. */
static void after_auth(struct call *c)
{
    struct api *a = c->api;
    if (!(c->roles & c->who.role)) {
        call_fail(c, 403, "forbidden", NULL, "role %s may not %s %s", role_name(c->who.role),
                  c->method == API_M_GET || c->method == API_M_HEAD ? "read" : "change", c->path);
        fail_call(c);
        return;
    }
    switch (api__guard_admit(a->guard, &c->who, c->is_heavy)) {
    case API_ADMIT_REFUSE:
        call_fail(c, 429, "too-many-requests", NULL,
                  c->is_heavy ? "too many solving or planning requests of your tenant or user in "
                                "progress, try again"
                              : "too many requests of your tenant or user in progress, try again");
        fail_call(c);
        return;
    case API_ADMIT_WAIT:
        if (a->wait_tail)
            a->wait_tail->next_waiting = c;
        else
            a->wait_head = c;
        a->wait_tail = c;
        return;
    case API_ADMIT_NOW:
        c->admitted = true;
        break;
    }
    after_admission(c);
}

/* Admitted: read the body (or go on without one). */
static void after_admission(struct call *c)
{
    struct api_req *r = c->req;
    if (r->head.content_length > 0) {
        if (api__server_read_body(r) != 0)
            fail_call(c); /* the client is gone */
        return;
    }
    dispatch(c);
}

static int auth_work(PGconn *conn, void *arg, struct drv_err *err)
{
    struct call *c = arg;
    return api__token_check(conn, c->token, &c->who, &c->token_expires_ms, err);
}

static void auth_done(int rc, const struct drv_err *err, void *arg)
{
    struct call *c = arg;
    if (rc == DRV_EPERM) {
        call_fail(c, 401, "unauthenticated", NULL, "%s", err->msg);
        fail_call(c);
        return;
    }
    if (rc) {
        api__call_map_error(c, rc, err);
        fail_call(c);
        return;
    }
    api__guard_token_put(c->api->guard, c->token, &c->who, c->token_expires_ms);
    after_auth(c);
}

static void on_head(struct api_req *r, void *arg)
{
    struct api *a = arg;
    if (r->status) {
        reply_error(a, r, r->status, http_code(r->status), r->head.error, NULL);
        return;
    }
    if (r->overflow) {
        /* Beyond the connection limits: the probes and /metrics only. */
        if ((r->head.method == API_M_GET || r->head.method == API_M_HEAD) &&
            (find_probe(a, r->head.path) || strcmp(r->head.path, "/metrics") == 0)) {
            serve_probe(a, r);
            return;
        }
        a->refused_overflow++;
        reply_error(a, r, 503, "unavailable", "too many connections", "Retry-After: 1\r\n");
        return;
    }
    if (serve_probe(a, r))
        return;
    if (api_ui_path(r->head.path)) {
        serve_ui(a, r);
        return;
    }
    struct call *c = xcalloc(1, sizeof(*c));
    c->api = a;
    c->req = r;
    c->t0_us = clock_mono_us();
    c->opts = &a->opts;
    r->user = c;
    c->method = r->head.method;
    c->path = xstrdup(r->head.path);
    c->key = a->have_key ? a->key : NULL;
    snprintf(c->source, sizeof(c->source), "%s", r->source);
    char why[160];
    int st = api__http_split_path(r->head.path, &c->segbuf, c->seg, CALL_MAX_SEGS, &c->nseg, why);
    if (st == 0 && (c->nseg < 2 || strcmp(c->seg[0], "v1") != 0)) {
        st = 404;
        snprintf(why, sizeof(why), "no such path %s", c->path);
    }
    if (st == 0)
        st = api__http_parse_query(r->head.query, &c->query, why);
    if (st) {
        call_fail(c, st, st == 404 ? "not-found" : "malformed", NULL, "%s", why);
        fail_call(c);
        return;
    }
    if (api__route(c) != 0) {
        fail_call(c);
        return;
    }
    char id[17], secret[65];
    if (api__http_bearer(r->head.authorization, c->token, sizeof(c->token)) != 0) {
        call_fail(c, 401, "unauthenticated", NULL, "missing bearer token (Authorization: Bearer)");
        fail_call(c);
        return;
    }
    if (api_token_parse(c->token, id, secret) != 0) {
        call_fail(c, 401, "unauthenticated", NULL, "malformed bearer token");
        fail_call(c);
        return;
    }
    OPENSSL_cleanse(secret, sizeof(secret));
    if (r->head.content_length > a->max_body) {
        call_fail(c, 413, "too-large", NULL, "request body larger than %ld bytes", a->max_body);
        fail_call(c);
        return;
    }
    if (api__guard_token_get(a->guard, c->token, &c->who)) {
        after_auth(c);
        return;
    }
    store_submit(a->store, auth_work, auth_done, c);
}

void api_set_metrics(struct api *a, api_metrics_fn fn, void *arg)
{
    a->metrics_fn = fn;
    a->metrics_arg = arg;
}

void api_set_probe(struct api *a, const char *path, api_probe_fn fn, void *arg)
{
    if (a->nprobes == MAX_PROBES)
        abort();
    struct api_probe *p = &a->probes[a->nprobes++];
    snprintf(p->path, sizeof(p->path), "%s", path);
    p->fn = fn;
    p->arg = arg;
}

/* ---- life ------------------------------------------------------------------------ */

static int tls_setup(struct api *a, const struct api_opts *o, struct drv_err *err)
{
    a->ssl = SSL_CTX_new(TLS_server_method());
    SSL_CTX_set_min_proto_version(a->ssl, TLS1_2_VERSION);
    SSL_CTX_set_options(a->ssl, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
    if (SSL_CTX_use_certificate_chain_file(a->ssl, o->tls_cert) != 1 ||
        SSL_CTX_use_PrivateKey_file(a->ssl, o->tls_key, SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(a->ssl) != 1) {
        char e[256];
        ERR_error_string_n(ERR_get_error(), e, sizeof(e));
        return drv_err_set(err, DRV_ETLS, 0, "http.tls_cert/http.tls_key: %s", e);
    }
    return 0;
}

struct api *api_new(struct event_base *base, struct store *store, struct coord_session *zk,
                    const struct api_opts *o, struct drv_err *err)
{
    if (o->token_ttl_ms > o->token_max_ttl_ms) {
        drv_err_set(err, DRV_EINVAL, 0, "api.token_ttl is longer than api.token_max_ttl");
        return NULL;
    }
    struct api *a = xcalloc(1, sizeof(*a));
    a->base = base;
    a->store = store;
    a->zk = zk;
    a->opts = *o;
    a->max_body = o->max_body;
    struct api_guard_limits gl = {
        .token_ttl_ms = o->token_cache_ttl_ms,
        .per_user = o->max_requests_per_user > 0 ? o->max_requests_per_user : 32,
        .per_tenant = o->max_requests_per_tenant > 0 ? o->max_requests_per_tenant : 128,
        .heavy_per_user = o->max_heavy_per_user > 0 ? o->max_heavy_per_user : 2,
        .heavy_per_tenant = o->max_heavy_per_tenant > 0 ? o->max_heavy_per_tenant : 4,
        .heavy_max = (o->heavy_threads > 0 ? o->heavy_threads : 2) - 1,
        .heavy_wait_per_tenant =
            o->max_heavy_waiting_per_tenant > 0 ? o->max_heavy_waiting_per_tenant : 16,
    };
    a->guard = api__guard_new(&gl);
    struct workpool_opts po = {.name = "parse", .threads = 1, .max_queued = 64, .nice = 5};
    a->parse_pool = workpool_new(base, &po);
    /* Solving and planning: its own threads, below the loop's priority, never the store's. */
    struct workpool_opts ho = {.name = "heavy",
                               .threads = o->heavy_threads > 0 ? (int)o->heavy_threads : 2,
                               .max_queued = o->heavy_queue > 0 ? (int)o->heavy_queue : 32,
                               .nice = 10};
    a->heavy_pool = workpool_new(base, &ho);
    a->members = json_array();
    a->workers = json_array();
    pthread_mutex_init(&a->worker_mu, NULL);
    a->worker_tenants = json_object();
    a->h_req = prom_hvec_new(prom_buckets_fast, prom_buckets_fast_n);
    a->qrates = strmap_new();
    if (o->secrets_key && *o->secrets_key) {
        if (api__load_key(o->secrets_key, a->key, err) != 0)
            goto fail;
        a->have_key = 1;
    }
    if (o->tls_cert && *o->tls_cert && tls_setup(a, o, err) != 0)
        goto fail;
    if (o->ui_dir && *o->ui_dir) {
        /* A missing directory leaves the API as it is (the dashboard answers 404); a directory
           too large to serve from memory is a configuration error. */
        struct drv_err uerr;
        drv_err_clear(&uerr);
        a->ui = api_ui_load(o->ui_dir, &uerr);
        if (!a->ui && uerr.code != DRV_ENOENT) {
            *err = uerr;
            goto fail;
        }
        char q[300];
        if (!a->ui)
            log_warn(MODULE, "event=ui_missing error=%s", log_quote(uerr.msg, q, sizeof(q)));
        else
            log_info(MODULE, "event=ui_loaded dir=%s files=%zu", log_quote(o->ui_dir, q, sizeof(q)),
                     api_ui_count(a->ui));
    }
    /* No query may outlast the request's time limit. */
    store_set_query_timeout(o->timeout_ms);
    struct api_server_opts so = {
        .listen = o->listen,
        .ssl = a->ssl,
        .max_headers = o->max_headers > 0 ? o->max_headers : 16384,
        .max_connections = o->max_connections,
        .max_per_source = o->max_per_source > 0 ? o->max_per_source : o->max_connections,
        .header_timeout_ms = o->header_timeout_ms > 0 ? o->header_timeout_ms : 10000,
        .body_timeout_ms = o->body_timeout_ms > 0 ? o->body_timeout_ms : 30000,
        .timeout_ms = o->timeout_ms,
        .on_head = on_head,
        .on_body = on_body,
        .arg = a,
    };
    a->server = api__server_new(base, &so, err);
    if (!a->server)
        goto fail;
    if (zk) {
        a->g_droverd = coord_group_watch(zk, ZKPATH_MEMBERS_DROVERD, api__on_droverd_group, a);
        a->g_workers =
            coord_group_watch_checked(zk, ZKPATH_MEMBERS_WORKER, "tenant", api__on_worker_group, a);
    }
    log_info(MODULE,
             "event=listening addr=%s tls=%s max_connections=%ld max_per_source=%ld "
             "secrets_key=%s",
             o->listen, a->ssl ? "on" : "off", so.max_connections, so.max_per_source,
             a->have_key ? "yes" : "no");
    return a;
fail:
    api_free(a);
    return NULL;
}

void api_free(struct api *a)
{
    if (!a)
        return;
    api__server_free(a->server);  /* requests held by calls lose their connection */
    workpool_free(a->parse_pool); /* cancelled parses free their calls */
    workpool_free(a->heavy_pool);
    while (a->wait_head) { /* waiting calls: their connections are gone */
        struct call *c = a->wait_head;
        a->wait_head = c->next_waiting;
        api__guard_wait_abandon(a->guard, &c->who);
        api__reply(c);
    }
    api__guard_free(a->guard);
    api_ui_free(a->ui);
    coord_group_free(a->g_droverd);
    coord_group_free(a->g_workers);
    json_decref(a->members);
    json_decref(a->workers);
    json_decref(a->worker_tenants);
    pthread_mutex_destroy(&a->worker_mu);
    prom_hvec_free(a->h_req);
    api__qrates_free(a);
    if (a->ssl)
        SSL_CTX_free(a->ssl);
    OPENSSL_cleanse(a->key, sizeof(a->key));
    free(a);
}
