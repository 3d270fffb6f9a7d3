/*
 * api: the HTTP server. See api.h for the threads and docs/api.md for the
 * contract.
 *
 * One request:
 *
 *   loop: evhttp gencb -> parse path, route (404/405), bearer token (401),
 *         body JSON (400) -> store_submit
 *   pool: authenticate (401) -> role check (403) -> handler's queries
 *   loop: optional on_loop part (fleet views) -> reply -> free the call
 *
 * If the client goes away meanwhile, libevent detaches the request instead of
 * freeing it (the handler has not answered yet), and evhttp_send_reply frees
 * it; so the completion never touches freed memory.
 *
 * Connection limit (libevent 2.1 has none): every accepted connection passes
 * through our bufferevent callback (evhttp_set_bevcb), which counts it, takes
 * a reference on its bufferevent and queues it for a hook that runs on the
 * next loop turn, after evhttp has wired the connection. The hook finds the
 * evhttp_connection (the bufferevent's callback argument), and either sets a
 * close callback that uncounts it, or, beyond http.max_connections, writes a
 * canned 503 (plain HTTP) and frees the connection. The reference keeps the
 * bufferevent valid for the hook even if evhttp dropped the connection first
 * (its callbacks are then NULL, which the hook checks).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "api_int.h"
#include "config.h"
#include "coord.h"
#include "log.h"
#include "store.h"
#include "xalloc.h"

#define MODULE "api"

struct api {
    struct event_base *base;
    struct evhttp *http;
    struct store *store;
    struct coord_session *zk;
    struct coord_group *g_droverd, *g_workers;
    json_t *members, *workers; /* [{id, data}] as last seen */
    SSL_CTX *ssl;
    unsigned char key[32];
    int have_key;
    long max_connections;
    long active;
    /* accepted, waiting for the hook */
    struct bufferevent **pending;
    size_t npending, cap_pending;
    struct event *hook;
    /* metrics */
    unsigned long long by_status[600];
    unsigned long long refused;
};

/* ---- replies ------------------------------------------------------------ */

static const char *reason(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 201:
        return "Created";
    case 202:
        return "Accepted";
    case 204:
        return "No Content";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 409:
        return "Conflict";
    case 413:
        return "Payload Too Large";
    case 422:
        return "Unprocessable Entity";
    case 501:
        return "Not Implemented";
    case 503:
        return "Service Unavailable";
    default:
        return status >= 500 ? "Internal Server Error" : "OK";
    }
}

static void send_json(struct api *a, struct evhttp_request *req, int status, json_t *j,
                      const char *version)
{
    struct evbuffer *out = evbuffer_new();
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    if (j) {
        char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
        evbuffer_add_printf(out, "%s\n", s);
        free(s);
        evhttp_add_header(h, "Content-Type", "application/json");
    }
    if (version && *version)
        evhttp_add_header(h, "X-Drover-Version", version);
    if (status >= 0 && status < 600)
        a->by_status[status]++;
    evhttp_send_reply(req, status, reason(status), out);
    evbuffer_free(out);
}

static json_t *error_body(const char *code, const char *msg, const char *field)
{
    json_t *e = json_pack("{s:s, s:s}", "code", code, "message", msg);
    if (field && *field)
        json_object_set_new(e, "field", json_string(field));
    return json_pack("{s:o}", "error", e);
}

static void send_error(struct api *a, struct evhttp_request *req, int status, const char *code,
                       const char *msg, const char *field)
{
    json_t *j = error_body(code, msg, field);
    send_json(a, req, status, j, NULL);
    json_decref(j);
}

int call_fail(struct call *c, int status, const char *code, const char *field, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->msg, sizeof(c->msg), fmt, ap);
    va_end(ap);
    c->status = status;
    snprintf(c->code, sizeof(c->code), "%s", code);
    snprintf(c->field, sizeof(c->field), "%s", field ? field : "");
    return DRV_EINVAL;
}

char *call_query(struct call *c, const char *key)
{
    if (!c->query)
        return NULL;
    struct evkeyvalq q;
    TAILQ_INIT(&q);
    if (evhttp_parse_query_str(c->query, &q) != 0)
        return NULL;
    const char *v = evhttp_find_header(&q, key);
    char *r = v ? xstrdup(v) : NULL;
    evhttp_clear_headers(&q);
    return r;
}

const char *call_owner(const struct call *c)
{
    return c->who.role == ROLE_USER ? c->who.user_id : NULL;
}

static void call_free(struct call *c)
{
    free(c->path);
    free(c->query);
    free(c->raw);
    free(c->segbuf);
    json_decref(c->body);
    json_decref(c->out);
    json_decref(c->loop_data);
    free(c);
}

/* Map a handler's DRV code to a status when it did not set one itself. */
static void map_error(struct call *c, int rc, const struct drv_err *err)
{
    if (c->status >= 400)
        return;
    const char *msg = err && err->msg[0] ? err->msg : drv_strerror(rc);
    switch (rc) {
    case DRV_ENOENT:
        call_fail(c, 404, "not-found", NULL, "%s", msg);
        break;
    case DRV_EEXIST:
        call_fail(c, 409, "conflict", "name", "%s", msg);
        break;
    case DRV_ECONFLICT:
        call_fail(c, 409, "conflict", NULL, "%s", msg);
        break;
    case DRV_EAGAIN:
        call_fail(c, 503, "unavailable", NULL, "database unavailable, try again");
        break;
    case DRV_ETIMEDOUT:
        call_fail(c, 503, "unavailable", NULL, "the database took too long, try again");
        break;
    case DRV_EPERM:
        call_fail(c, 403, "forbidden", NULL, "%s", msg);
        break;
    case DRV_EINVAL:
        call_fail(c, 400, "invalid", NULL, "%s", msg);
        break;
    case DRV_EUNSAT:
        call_fail(c, 422, "unsatisfiable", NULL, "%s", msg);
        break;
    default: {
        char q[600];
        log_error(MODULE, "event=internal_error path=%s error=%s", c->path,
                  log_quote(msg, q, sizeof(q)));
        call_fail(c, 500, "internal", NULL, "internal error (see the server log)");
    }
    }
}

/* ---- the pool part ------------------------------------------------------ */

static int call_work(PGconn *conn, void *arg, struct drv_err *err)
{
    struct call *c = arg;
    int rc = api__token_check(conn, c->token, &c->who, err);
    if (rc == DRV_EPERM)
        return call_fail(c, 401, "unauthenticated", NULL, "%s", err->msg);
    if (rc)
        return rc;
    if (!(c->roles & c->who.role))
        return call_fail(c, 403, "forbidden", NULL, "role %s may not %s %s",
                         c->who.role == ROLE_SUPER   ? "superadmin"
                         : c->who.role == ROLE_ADMIN ? "admin"
                                                     : "user",
                         evhttp_request_get_command(c->req) == EVHTTP_REQ_GET ? "read" : "change",
                         c->path);
    rc = c->handler(conn, c, err);
    if (rc) /* a failed write leaves nothing behind */
        store_rollback(conn);
    return rc;
}

void api__reply(struct call *c)
{
    struct api *a = c->api;
    if (log_get_level() <= LOG_DEBUG)
        log_debug(MODULE, "event=request method=%d path=%s status=%d user=%s tenant=%s source=%s",
                  c->method, c->path, c->status ? c->status : 200,
                  c->who.user[0] ? c->who.user : "-", c->who.tenant[0] ? c->who.tenant : "-",
                  c->source);
    if (c->status >= 400) {
        send_error(a, c->req, c->status, c->code, c->msg, c->field);
    } else if (c->raw) {
        struct evbuffer *out = evbuffer_new();
        evbuffer_add(out, c->raw, strlen(c->raw));
        evhttp_add_header(evhttp_request_get_output_headers(c->req), "Content-Type",
                          c->raw_type ? c->raw_type : "text/plain");
        a->by_status[c->status]++;
        evhttp_send_reply(c->req, c->status, reason(c->status), out);
        evbuffer_free(out);
    } else {
        if (c->out)
            api_redact(c->out);
        send_json(a, c->req, c->status ? c->status : 200, c->out, c->version);
    }
    call_free(c);
}

static void call_done(int rc, const struct drv_err *err, void *arg)
{
    struct call *c = arg;
    if (rc)
        map_error(c, rc, err);
    else if (c->on_loop && c->on_loop(c) != 0)
        return; /* it replies later */
    api__reply(c);
}

struct coord_session *api__zk(struct api *a)
{
    return a->zk;
}

/* ---- the loop part ------------------------------------------------------ */

static void split_path(struct call *c)
{
    c->nseg = 0;
    char *save = NULL;
    for (char *t = strtok_r(c->segbuf, "/", &save); t; t = strtok_r(NULL, "/", &save)) {
        if (c->nseg == CALL_MAX_SEGS) {
            c->nseg = CALL_MAX_SEGS + 1;
            return;
        }
        c->seg[c->nseg++] = t;
    }
}

static void on_request(struct evhttp_request *req, void *arg)
{
    struct api *a = arg;
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *p = uri ? evhttp_uri_get_path(uri) : NULL;
    char *path = p ? evhttp_uridecode(p, 0, NULL) : NULL;
    if (!path || strncmp(path, "/v1/", 4) != 0 || strlen(path) > 1024) {
        free(path);
        send_error(a, req, 404, "not-found", "no such path", NULL);
        return;
    }
    struct call *c = xcalloc(1, sizeof(*c));
    c->api = a;
    c->req = req;
    c->method = evhttp_request_get_command(req);
    c->path = path;
    const char *q = evhttp_uri_get_query(uri);
    c->query = q ? xstrdup(q) : NULL;
    c->key = a->have_key ? a->key : NULL;
    char *host = NULL;
    ev_uint16_t port = 0;
    evhttp_connection_get_peer(evhttp_request_get_connection(req), &host, &port);
    snprintf(c->source, sizeof(c->source), "%s", host ? host : "");
    c->segbuf = xstrdup(path);
    split_path(c);
    if (c->nseg > CALL_MAX_SEGS || api__route(c) != 0)
        goto fail;
    /* Authentication header: checked on the pool, shape checked here. */
    const char *auth = evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
    if (!auth || strncmp(auth, "Bearer ", 7) != 0 || strlen(auth + 7) >= sizeof(c->token)) {
        call_fail(c, 401, "unauthenticated", NULL, "missing bearer token (Authorization: Bearer)");
        goto fail;
    }
    snprintf(c->token, sizeof(c->token), "%s", auth + 7);
    if (c->method == EVHTTP_REQ_POST || c->method == EVHTTP_REQ_PUT) {
        struct evbuffer *in = evhttp_request_get_input_buffer(req);
        size_t n = evbuffer_get_length(in);
        if (n > 0) {
            json_error_t je;
            c->body = json_loadb((const char *)evbuffer_pullup(in, -1), n, 0, &je);
            if (!c->body) {
                call_fail(c, 400, "malformed", NULL, "body is not JSON: %s at line %d column %d",
                          je.text, je.line, je.column);
                goto fail;
            }
            if (!json_is_object(c->body)) {
                call_fail(c, 400, "malformed", NULL, "body must be a JSON object");
                goto fail;
            }
        }
    }
    store_submit(a->store, call_work, call_done, c);
    return;
fail:
    send_error(a, req, c->status, c->code, c->msg, c->field);
    call_free(c);
}

/* ---- connection limit --------------------------------------------------- */

static void on_conn_close(struct evhttp_connection *evcon, void *arg)
{
    struct api *a = arg;
    a->active--;
}

/* Written straight to the socket of a connection beyond the limit. */
static void write_refusal(evutil_socket_t s)
{
    static const char body[] =
        "{\"error\":{\"code\":\"unavailable\",\"message\":\"too many connections\"}}\n";
    char buf[256];
    int n = snprintf(buf, sizeof(buf),
                     "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                     "Connection: close\r\nContent-Length: %zu\r\n\r\n%s",
                     sizeof(body) - 1, body);
    if (send(s, buf, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
        log_debug(MODULE, "event=refuse_write_failed errno=%d", errno);
}

static void on_hook(evutil_socket_t fd, short what, void *arg)
{
    struct api *a = arg;
    size_t n = a->npending;
    a->npending = 0;
    for (size_t i = 0; i < n; i++) {
        struct bufferevent *bev = a->pending[i];
        bufferevent_event_cb ecb = NULL;
        void *cbarg = NULL;
        bufferevent_getcb(bev, NULL, NULL, &ecb, &cbarg);
        if (!ecb || !cbarg) {
            /* evhttp already dropped it (it never had our close callback) */
            a->active--;
        } else if (a->active > a->max_connections) {
            a->refused++;
            a->active--;
            if (!a->ssl) {
                evutil_socket_t s = bufferevent_getfd(bev);
                if (s >= 0)
                    write_refusal(s);
            }
            log_warn(MODULE, "event=connection_refused active=%ld max=%ld", a->active,
                     a->max_connections);
            evhttp_connection_free((struct evhttp_connection *)cbarg);
        } else {
            evhttp_connection_set_closecb((struct evhttp_connection *)cbarg, on_conn_close, a);
        }
        bufferevent_decref(bev);
    }
}

static struct bufferevent *on_accept_bev(struct event_base *base, void *arg)
{
    struct api *a = arg;
    struct bufferevent *bev;
    if (a->ssl) {
        SSL *ssl = SSL_new(a->ssl);
        bev = bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING,
                                             BEV_OPT_CLOSE_ON_FREE);
    } else {
        bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    }
    a->active++;
    bufferevent_incref(bev);
    XGROW(a->pending, a->cap_pending, a->npending + 1);
    a->pending[a->npending++] = bev;
    event_active(a->hook, EV_TIMEOUT, 0);
    return bev;
}

/* ---- fleet views and metrics ---------------------------------------------- */

static void group_to_json(json_t **slot, const struct coord_member_info *m, size_t n)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *d = json_loads(m[i].json, 0, NULL);
        json_array_append_new(arr,
                              json_pack("{s:s, s:o}", "id", m[i].id, "data", d ? d : json_null()));
    }
    json_decref(*slot);
    *slot = arr;
}

static void on_droverd_group(const struct coord_member_info *m, size_t n, void *arg)
{
    struct api *a = arg;
    group_to_json(&a->members, m, n);
}

static void on_worker_group(const struct coord_member_info *m, size_t n, void *arg)
{
    struct api *a = arg;
    group_to_json(&a->workers, m, n);
}

json_t *api__members(struct api *a)
{
    return a->members;
}

json_t *api__workers(struct api *a)
{
    return a->workers;
}

static void on_metrics(struct evhttp_request *req, void *arg)
{
    struct api *a = arg;
    struct evbuffer *out = evbuffer_new();
    evbuffer_add_printf(out, "# HELP drover_http_requests_total API replies by status code.\n"
                             "# TYPE drover_http_requests_total counter\n");
    for (int s = 100; s < 600; s++)
        if (a->by_status[s])
            evbuffer_add_printf(out, "drover_http_requests_total{code=\"%d\"} %llu\n", s,
                                a->by_status[s]);
    evbuffer_add_printf(out,
                        "# HELP drover_http_connections Open HTTP connections.\n"
                        "# TYPE drover_http_connections gauge\n"
                        "drover_http_connections %ld\n"
                        "# HELP drover_http_connections_refused_total Connections closed at once "
                        "beyond http.max_connections.\n"
                        "# TYPE drover_http_connections_refused_total counter\n"
                        "drover_http_connections_refused_total %llu\n"
                        "# HELP drover_ring_members Orchestrator nodes in the ring.\n"
                        "# TYPE drover_ring_members gauge\n"
                        "drover_ring_members %zu\n"
                        "# HELP drover_workers Workers registered.\n"
                        "# TYPE drover_workers gauge\n"
                        "drover_workers %zu\n"
                        "# HELP drover_store_healthy 1 when PostgreSQL answered the last ping.\n"
                        "# TYPE drover_store_healthy gauge\n"
                        "drover_store_healthy %d\n"
                        "# HELP drover_zookeeper_connected 1 when the ZooKeeper session is up.\n"
                        "# TYPE drover_zookeeper_connected gauge\n"
                        "drover_zookeeper_connected %d\n",
                        a->active, a->refused, json_array_size(a->members),
                        json_array_size(a->workers), store_healthy(a->store),
                        a->zk ? coord_session_state(a->zk) == COORD_CONNECTED : 0);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                      "text/plain; version=0.0.4");
    a->by_status[200]++;
    evhttp_send_reply(req, 200, "OK", out);
    evbuffer_free(out);
}

/* ---- life ------------------------------------------------------------------ */

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
    struct api *a = xcalloc(1, sizeof(*a));
    a->base = base;
    a->store = store;
    a->zk = zk;
    a->max_connections = o->max_connections;
    a->members = json_array();
    a->workers = json_array();
    if (o->secrets_key && *o->secrets_key) {
        if (api__load_key(o->secrets_key, a->key, err) != 0)
            goto fail;
        a->have_key = 1;
    }
    if (o->tls_cert && *o->tls_cert && tls_setup(a, o, err) != 0)
        goto fail;
    char host[256];
    int port;
    if (config_split_addr(o->listen, host, sizeof(host), &port) != 0) {
        drv_err_set(err, DRV_EINVAL, 0, "bad listen address \"%s\"", o->listen);
        goto fail;
    }
    /* No query may outlast the request's time limit. */
    store_set_query_timeout(o->timeout_ms);
    a->hook = event_new(base, -1, 0, on_hook, a);
    a->http = evhttp_new(base);
    evhttp_set_max_body_size(a->http, o->max_body);
    evhttp_set_max_headers_size(a->http, o->max_headers > 0 ? o->max_headers : 16384);
    evhttp_set_timeout(a->http, (int)((o->timeout_ms + 999) / 1000));
    evhttp_set_allowed_methods(a->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_PUT |
                                            EVHTTP_REQ_DELETE | EVHTTP_REQ_HEAD);
    evhttp_set_bevcb(a->http, on_accept_bev, a);
    evhttp_set_cb(a->http, "/metrics", on_metrics, a);
    evhttp_set_gencb(a->http, on_request, a);
    if (!evhttp_bind_socket_with_handle(a->http, host, (ev_uint16_t)port)) {
        drv_err_set(err, DRV_EIO, errno, "cannot listen on %s: %s", o->listen, strerror(errno));
        goto fail;
    }
    if (zk) {
        a->g_droverd = coord_group_watch(zk, "/drover/members/droverd", on_droverd_group, a);
        a->g_workers = coord_group_watch(zk, "/drover/members/worker", on_worker_group, a);
    }
    log_info(MODULE, "event=listening addr=%s tls=%s max_connections=%ld secrets_key=%s", o->listen,
             a->ssl ? "on" : "off", a->max_connections, a->have_key ? "yes" : "no");
    return a;
fail:
    api_free(a);
    return NULL;
}

struct evhttp *api_http(struct api *a)
{
    return a->http;
}

void api_free(struct api *a)
{
    if (!a)
        return;
    if (a->http)
        evhttp_free(a->http);
    for (size_t i = 0; i < a->npending; i++)
        bufferevent_decref(a->pending[i]);
    free(a->pending);
    if (a->hook)
        event_free(a->hook);
    coord_group_free(a->g_droverd);
    coord_group_free(a->g_workers);
    json_decref(a->members);
    json_decref(a->workers);
    if (a->ssl)
        SSL_CTX_free(a->ssl);
    OPENSSL_cleanse(a->key, sizeof(a->key));
    free(a);
}
